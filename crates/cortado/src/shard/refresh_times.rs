//! When each entry becomes due for a reload, kept only when the cache refreshes entries after
//! a write (`refresh_after_write`, see [`crate::refresh`]): a read compares it with the time
//! it already holds, and starts a reload through the [`RefreshTrigger`] when it is due.
//!
//! 8 bytes per slot, in an array beside the slab that grows with it; a cache without the
//! setting keeps it empty and pays one flag test per write. A write stores its time plus the
//! interval, not its time, so that a read's check is one load and one compare (decision 0019).
//! The check sits behind the shard's `timed` flag (which the setting sets), beside the
//! deadline check, so that reads of caches with neither expiry nor refresh pay nothing for it.

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
    /// Whether the live slot `i`, read at `now`, is due for a reload (false unless the shard
    /// refreshes): a bounds test, a load and a compare, in line (a call per hit was about half
    /// of what the setting cost a timed cache's read: decisions 0018, 0019).
    #[inline(always)]
    pub(super) fn refresh_due(&self, i: u32, now: u64) -> bool {
        self.refresh_at(i).is_some_and(|due| due <= now)
    }

    /// Starts a reload of the live slot `i` (its key hashing to `hash`), which a read found
    /// [due](Self::refresh_due). Out of line: it is rare, and the reads of timed caches
    /// without the setting keep their code as it was, but for a bounds test of an empty array.
    #[inline(never)]
    pub(super) fn start_refresh(&self, i: u32, hash: u64) {
        if let Some(refresh) = &self.refresh {
            let (key, value) = self.entry_at(i);
            refresh.start(key, value, hash);
        }
    }
}

impl<K, V, S> Shard<K, V, S> {
    /// Records that the live slot `i` was written at `now`, if the shard refreshes entries:
    /// it is due for a reload one interval later.
    #[inline(always)]
    pub(super) fn record_write_time(&mut self, i: u32, now: u64) {
        if self.keeps_refresh_times {
            let due = now.saturating_add(self.refresh_after);
            match self.refresh_times.get_mut(i as usize) {
                Some(at) => *at = due,
                None => self.grow_refresh_times(i, due),
            }
        }
    }

    /// Grows the due times to hold slot `i`, and gives it `due`. As long as the slab's
    /// capacity, so that it grows as rarely as the slab does (to its length, it grew at every
    /// new slot while the cache filled).
    #[cold]
    #[inline(never)]
    fn grow_refresh_times(&mut self, i: u32, due: u64) {
        let i = i as usize;
        let len = self.index.slots.capacity().max(i + 1);
        self.refresh_times.resize(len, u64::MAX);
        self.refresh_times[i] = due;
    }

    /// When the live slot `i` becomes due for a reload; `None` unless the shard refreshes. One
    /// bounds test says both: the due times are empty unless the shard refreshes, and a write
    /// of a live slot stores its time, so a refreshing shard never finds it out of bounds.
    #[inline(always)]
    pub(crate) fn refresh_at(&self, i: u32) -> Option<u64> {
        self.refresh_times.get(i as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::EvictionPolicy;
    use std::sync::Arc;

    use crate::shard::{RefreshTrigger, Shard, ShardConfig};

    /// A shard refreshing 100 ns after each write, or not refreshing.
    fn shard(refreshes: bool) -> Shard<u32, u32, hashbrown::DefaultHashBuilder> {
        let mut config = ShardConfig::plain(Some(100), EvictionPolicy::lru());
        config.refresh = refreshes.then(|| Arc::new(RefreshTrigger::new(100)));
        Shard::new(&config, hashbrown::DefaultHashBuilder::default())
    }

    #[test]
    fn refresh_at_kept_follows_inserts_and_replacements() {
        let mut shard = shard(true);
        let (h1, h2) = (shard.hash(&1), shard.hash(&2));
        let a = shard.insert(h1, 1, 10, 5, None);
        let b = shard.insert(h2, 2, 20, 7, None);
        assert_eq!(shard.refresh_at(a), Some(105));
        assert_eq!(shard.refresh_at(b), Some(107));
        // A read does not move it; a replacement does.
        assert_eq!(shard.get(h1, &1, 9), Some(&10));
        assert_eq!(shard.refresh_at(a), Some(105));
        shard.insert(h1, 1, 11, 12, None);
        assert_eq!(shard.refresh_at(a), Some(112));
    }

    #[test]
    fn refresh_due_at_interval_after_write_true() {
        let mut shard = shard(true);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, None);
        assert!(!shard.refresh_due(i, 104));
        assert!(shard.refresh_due(i, 105));
        assert!(shard.refresh_due(i, 1_000));
    }

    #[test]
    fn refresh_at_near_end_of_time_saturates() {
        let mut shard = shard(true);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, u64::MAX - 50, None);
        assert_eq!(shard.refresh_at(i), Some(u64::MAX));
        assert!(!shard.refresh_due(i, u64::MAX - 1));
    }

    #[test]
    fn refresh_at_after_removals_and_shrink_kept_for_live_slots() {
        let mut shard = shard(true);
        let keys: Vec<u32> = (0..50).collect();
        for &k in &keys {
            let h = shard.hash(&k);
            shard.insert(h, k, k, 10, None);
        }
        for &k in &keys[10..] {
            let h = shard.hash(&k);
            shard.remove(h, &k, 20);
        }
        shard.shrink_to_fit();
        shard.validate();
        for &k in &keys[..10] {
            let h = shard.hash(&k);
            let i = shard.find(h, &k).expect("kept");
            assert_eq!(shard.refresh_at(i), Some(110));
        }
        let h = shard.hash(&99);
        let i = shard.insert(h, 99, 99, 30, None);
        assert_eq!(shard.refresh_at(i), Some(130));
        shard.validate();
    }

    #[test]
    fn refresh_at_not_kept_is_none() {
        let mut shard = shard(false);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, None);
        assert_eq!(shard.refresh_at(i), None);
    }
}
