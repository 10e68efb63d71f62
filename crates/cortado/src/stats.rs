//! Cache statistics: hits, misses, loads, and removals by cause.

use std::time::Duration;

use crate::notification::RemovalCause;

/// A snapshot of a cache's counters since it was built (all zero unless stats are recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found a live entry.
    pub hits: u64,
    /// Lookups that found nothing (or only an expired entry).
    pub misses: u64,
    /// Entries evicted to respect the capacity.
    pub evictions_size: u64,
    /// Entries removed because they expired.
    pub evictions_expired: u64,
    /// The total weight of the entries evicted (for size or expiry; each entry weighs 1
    /// without a weigher), as Caffeine's `evictionWeight`.
    pub eviction_weight: u64,
    /// Entries removed by the user (`remove`, `retain`, `invalidate_all`).
    pub removals_explicit: u64,
    /// Values replaced by an insert of the same key.
    pub replacements: u64,
    /// Loader calls that produced a value.
    pub load_successes: u64,
    /// Loader calls that failed or produced nothing.
    pub load_failures: u64,
    /// Time spent in loaders, in nanoseconds.
    pub load_nanos: u64,
}

impl CacheStats {
    /// Hits over lookups, 1.0 when there were none.
    pub fn hit_ratio(&self) -> f64 {
        let requests = self.hits + self.misses;
        if requests == 0 {
            1.0
        } else {
            self.hits as f64 / requests as f64
        }
    }

    /// Misses over lookups, 0.0 when there were none.
    pub fn miss_ratio(&self) -> f64 {
        // Divided, not `1.0 - hit_ratio()`, which can be an ulp off (7 hits, 3 misses: 0.3 and
        // 0.30000000000000004).
        let requests = self.hits + self.misses;
        if requests == 0 {
            0.0
        } else {
            self.misses as f64 / requests as f64
        }
    }

    /// Entries removed by eviction (size or expiry).
    pub fn evictions(&self) -> u64 {
        self.evictions_size + self.evictions_expired
    }

    /// Total time spent loading.
    pub fn load_time(&self) -> Duration {
        Duration::from_nanos(self.load_nanos)
    }

    /// Adds one removal of the given cause.
    pub(crate) fn record_removal(&mut self, cause: RemovalCause) {
        match cause {
            RemovalCause::Size => self.evictions_size += 1,
            RemovalCause::Expired => self.evictions_expired += 1,
            RemovalCause::Explicit => self.removals_explicit += 1,
            RemovalCause::Replaced => self.replacements += 1,
        }
    }

    /// Field-wise sum, for merging shards.
    pub fn merge(&self, other: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits + other.hits,
            misses: self.misses + other.misses,
            evictions_size: self.evictions_size + other.evictions_size,
            evictions_expired: self.evictions_expired + other.evictions_expired,
            eviction_weight: self.eviction_weight + other.eviction_weight,
            removals_explicit: self.removals_explicit + other.removals_explicit,
            replacements: self.replacements + other.replacements,
            load_successes: self.load_successes + other.load_successes,
            load_failures: self.load_failures + other.load_failures,
            load_nanos: self.load_nanos + other.load_nanos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_ratio_no_requests_is_one() {
        assert_eq!(CacheStats::default().hit_ratio(), 1.0);
    }

    #[test]
    fn hit_ratio_counts_hits_over_lookups() {
        let s = CacheStats {
            hits: 3,
            misses: 1,
            ..CacheStats::default()
        };
        assert_eq!(s.hit_ratio(), 0.75);
        assert_eq!(s.miss_ratio(), 0.25);
    }

    #[test]
    fn miss_ratio_three_misses_in_ten_lookups_is_exactly_three_tenths() {
        // Misses over lookups, as documented (and as Caffeine's `missRate`): `1.0 - 0.7` is
        // 0.30000000000000004, one ulp off `3.0 / 10.0`.
        let s = CacheStats {
            hits: 7,
            misses: 3,
            ..CacheStats::default()
        };
        assert_eq!(s.miss_ratio(), 3.0 / 10.0);
        assert_eq!(s.hit_ratio(), 7.0 / 10.0);
    }

    #[test]
    fn miss_ratio_no_requests_is_zero() {
        assert_eq!(CacheStats::default().miss_ratio(), 0.0);
    }
}
