//! Each entry's last access time, kept only when the cache is built to record them
//! (`record_access_times` on the unsync builder), for [`idle_time`](Shard::idle_time): what a
//! server's `OBJECT IDLETIME` reports.
//!
//! 4 bytes per slot, whole seconds of the cache's clock (a `u32` lasts 136 years), in an array
//! beside the slab that grows with the slots used; a cache without the setting keeps it empty
//! and pays one flag test per read and write. Reads record here only on the exclusive path
//! (the unsync cache's): the concurrent caches' shared reads would need an atomic per slot.

use std::time::Duration;

use super::Shard;

/// Nanoseconds in a second: the unit the times are kept in.
const NANOS_PER_SECOND: u64 = 1_000_000_000;

impl<K, V, S> Shard<K, V, S> {
    /// Records that the live slot `i` was used at `now`, if access times are kept: inline,
    /// as it runs on every read and write when they are (a division by a constant, a bounds
    /// check and a store), with the array's growth out of line.
    #[inline(always)]
    pub(super) fn record_access_time(&mut self, i: u32, now: u64) {
        if self.keeps_access_times {
            // Whole seconds fit a `u32` until 2106 on a Unix clock; a wrap only misreports.
            let seconds = (now / NANOS_PER_SECOND) as u32;
            match self.access_times.get_mut(i as usize) {
                Some(time) => *time = seconds,
                None => self.grow_access_times(i, seconds),
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_access_times(&mut self, i: u32, seconds: u32) {
        let i = i as usize;
        // At least as long as the slab, with room as the slab's, so that it grows as rarely
        // as the slab does and without a spare doubling of its own.
        let len = self.index.slots.len().max(i + 1);
        let room = self.index.slots.capacity().max(len);
        self.access_times
            .reserve_exact(room.saturating_sub(self.access_times.len()));
        self.access_times.resize(len, 0);
        self.access_times[i] = seconds;
    }

    /// How long the live slot `i` has gone unused at `now`, in whole seconds; `None` unless
    /// access times are kept.
    pub(crate) fn idle_time_of(&self, i: u32, now: u64) -> Option<Duration> {
        let used = *self.access_times.get(i as usize)?;
        let now = (now / NANOS_PER_SECOND) as u32;
        Some(Duration::from_secs(u64::from(now.wrapping_sub(used))))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::policy::EvictionPolicy;
    use crate::shard::{Shard, ShardConfig};

    const SECOND: u64 = 1_000_000_000;

    fn shard(access_times: bool) -> Shard<u32, u32, hashbrown::DefaultHashBuilder> {
        let mut config = ShardConfig::plain(Some(100), EvictionPolicy::lru());
        config.access_times = access_times;
        Shard::new(&config, hashbrown::DefaultHashBuilder::default())
    }

    #[test]
    fn idle_time_kept_restarts_at_reads_and_writes_not_peeks() {
        let mut shard = shard(true);
        let (h1, h2) = (shard.hash(&1), shard.hash(&2));
        let a = shard.insert(h1, 1, 10, 5 * SECOND, None);
        let b = shard.insert(h2, 2, 20, 7 * SECOND, None);
        assert_eq!(
            shard.idle_time_of(a, 9 * SECOND),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            shard.idle_time_of(b, 9 * SECOND),
            Some(Duration::from_secs(2))
        );
        assert_eq!(shard.get(h1, &1, 12 * SECOND), Some(&10));
        assert_eq!(
            shard.idle_time_of(a, 15 * SECOND),
            Some(Duration::from_secs(3))
        );
        shard.insert(h2, 2, 21, 14 * SECOND, None);
        assert_eq!(
            shard.idle_time_of(b, 15 * SECOND),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn idle_time_not_kept_is_none() {
        let mut shard = shard(false);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5 * SECOND, None);
        assert_eq!(shard.get(h, &1, 6 * SECOND), Some(&10));
        assert_eq!(shard.idle_time_of(i, 7 * SECOND), None);
    }
}
