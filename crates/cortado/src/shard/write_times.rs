//! Each entry's last write time, kept only when the cache refreshes entries after a write
//! (`refresh_after_write`, see [`crate::refresh`]): a read compares it with the refresh
//! interval, and starts a reload through the [`RefreshTrigger`] when it is due.
//!
//! 8 bytes per slot, in an array beside the slab that grows with the slots written; a cache
//! without the setting keeps it empty and pays one flag test per write. The check on a read
//! sits behind the shard's `timed` flag (which the setting sets), beside the deadline check,
//! so that reads of caches with neither expiry nor refresh pay nothing for it.

use std::hash::{BuildHasher, Hash};
use std::sync::OnceLock;

use super::Shard;

/// Starts a reload of a live entry (its key, value and hash) in the background; true if it
/// did (none of the key was in flight).
pub(crate) type StartReload<K, V> = Box<dyn Fn(&K, &V, u64) -> bool + Send + Sync>;

/// What the shards of a refreshing cache share: the interval, and how to start a reload,
/// which the front end sets once the cache exists (a trait object set late, so that the core
/// does not name its front ends).
pub(crate) struct RefreshTrigger<K, V> {
    /// The age, in nanoseconds, from which a read starts a reload.
    pub(crate) after: u64,
    pub(crate) start: OnceLock<StartReload<K, V>>,
}

impl<K, V> RefreshTrigger<K, V> {
    pub(crate) fn new(after: u64) -> Self {
        Self {
            after,
            start: OnceLock::new(),
        }
    }

    /// Starts a reload of (`key`, `value`); false if none was started.
    pub(crate) fn start(&self, key: &K, value: &V, hash: u64) -> bool {
        self.start
            .get()
            .is_some_and(|start| start(key, value, hash))
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> Shard<K, V, S> {
    /// Whether the shard refreshes entries after write (and keeps their write times).
    #[inline]
    pub(super) fn refreshes(&self) -> bool {
        self.keeps_write_times
    }

    /// Whether the live slot `i`, read at `now`, is due for a reload: a load and a compare,
    /// in line (a call per hit was about half of what the setting cost a timed cache's read:
    /// decision 0018).
    #[inline(always)]
    pub(super) fn refresh_due(&self, i: u32, now: u64) -> bool {
        self.written_at(i)
            .is_some_and(|written| now.saturating_sub(written) >= self.refresh_after)
    }

    /// Starts a reload of the live slot `i` (its key hashing to `hash`), which a read found
    /// [due](Self::refresh_due). Out of line: it is rare, and the reads of timed caches
    /// without the setting keep their code as it was, but for a flag test.
    #[inline(never)]
    pub(super) fn start_refresh(&self, i: u32, hash: u64) {
        if let Some(refresh) = &self.refresh {
            let (key, value) = self.entry_at(i);
            refresh.start(key, value, hash);
        }
    }
}

impl<K, V, S> Shard<K, V, S> {
    /// Records that the live slot `i` was written at `now`, if write times are kept.
    #[inline(always)]
    pub(super) fn record_write_time(&mut self, i: u32, now: u64) {
        if self.keeps_write_times {
            self.set_write_time(i, now);
        }
    }

    #[inline(never)]
    fn set_write_time(&mut self, i: u32, now: u64) {
        let i = i as usize;
        if i >= self.write_times.len() {
            // As long as the slab's capacity, so that it grows as rarely as the slab does (to
            // its length, it grew at every new slot while the cache filled).
            let len = self.index.slots.capacity().max(i + 1);
            self.write_times.resize(len, 0);
        }
        self.write_times[i] = now;
    }

    /// When the live slot `i` was last written; `None` unless write times are kept.
    #[inline]
    pub(crate) fn written_at(&self, i: u32) -> Option<u64> {
        self.write_times.get(i as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::EvictionPolicy;
    use std::sync::Arc;

    use crate::shard::{RefreshTrigger, Shard, ShardConfig};

    fn shard(write_times: bool) -> Shard<u32, u32, hashbrown::DefaultHashBuilder> {
        let mut config = ShardConfig::plain(Some(100), EvictionPolicy::lru());
        config.refresh = write_times.then(|| Arc::new(RefreshTrigger::new(u64::MAX)));
        Shard::new(&config, hashbrown::DefaultHashBuilder::default())
    }

    #[test]
    fn written_at_kept_follows_inserts_and_replacements() {
        let mut shard = shard(true);
        let (h1, h2) = (shard.hash(&1), shard.hash(&2));
        let a = shard.insert(h1, 1, 10, 5, None);
        let b = shard.insert(h2, 2, 20, 7, None);
        assert_eq!(shard.written_at(a), Some(5));
        assert_eq!(shard.written_at(b), Some(7));
        // A read does not move it; a replacement does.
        assert_eq!(shard.get(h1, &1, 9), Some(&10));
        assert_eq!(shard.written_at(a), Some(5));
        shard.insert(h1, 1, 11, 12, None);
        assert_eq!(shard.written_at(a), Some(12));
    }

    #[test]
    fn written_at_not_kept_is_none() {
        let mut shard = shard(false);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, None);
        assert_eq!(shard.written_at(i), None);
    }
}
