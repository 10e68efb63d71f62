//! Behaviour both `unsync::Cache` and `sync::Cache` share, through their public API with a
//! manual clock for expiry: each scenario is written once and run on each front end, as
//! `unsync::<name>` and `sync::<name>`. What one front end alone has stays in
//! `unsync_behaviour.rs` or `sync_behaviour.rs`.

use std::time::Duration;

use crate::common::front::{BuildLogged, Log, OneSecondAfterRead, ShardsIfSync};
use crate::common::{new_keys_gone_after_reads, Rng, Zipf};
use cortado::builder::BuildError;
use cortado::expiry::Expiry;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::stats::CacheStats;
use cortado::time::ManualClock;

/// Lifetimes in seconds from the value; 0 never expires.
struct ValueSeconds;

impl Expiry<u32, u64> for ValueSeconds {
    fn expire_after_create(&self, _: &u32, value: &u64) -> Option<Duration> {
        (*value > 0).then(|| Duration::from_secs(*value))
    }
    fn expire_after_update(&self, _: &u32, value: &u64, _: Option<Duration>) -> Option<Duration> {
        (*value > 0).then(|| Duration::from_secs(*value))
    }
}

struct NoExpiry;

/// A new entry lives as long as a `Duration` can say; a read leaves it at most 10 s.
struct LongestUntilRead;

impl Expiry<u32, u32> for LongestUntilRead {
    fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
        Some(Duration::MAX)
    }
    fn expire_after_read(&self, _: &u32, _: &u32, current: Option<Duration>) -> Option<Duration> {
        current.map(|left| left.min(Duration::from_secs(10)))
    }
}

impl Expiry<u32, u32> for NoExpiry {
    fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
        None
    }
}

/// Writes the tests given once per front end, in `mod unsync` and `mod sync`; in each, `Cache`,
/// `got`, `keys` and the other adapters of `common::front` are that front end's.
macro_rules! both_front_ends {
    ($($test:item)*) => {
        mod unsync {
            use super::*;
            use crate::common::front::unsync::*;
            $($test)*
        }

        // `let mut cache` is for the unsync cache, whose reads take `&mut self`.
        #[allow(unused_mut)]
        mod sync {
            use super::*;
            use crate::common::front::sync::*;
            $($test)*
        }
    };
}

both_front_ends! {
    fn logging_cache(max: u64, shards: usize, clock: &ManualClock) -> (Cache<u32, u32>, Log) {
        Cache::builder()
            .max_capacity(max)
            .shards_if_sync(shards)
            .clock(clock.clone())
            .record_stats()
            .build_logged()
    }

    fn hit_ratio(cache: &mut Cache<u64, ()>, keys: impl Iterator<Item = u64>) -> f64 {
        let (mut hits, mut total) = (0u64, 0u64);
        for key in keys {
            total += 1;
            if cache.get(&key).is_some() {
                hits += 1;
            } else {
                cache.insert(key, ());
            }
        }
        hits as f64 / total as f64
    }

    #[test]
    fn get_after_insert_returns_value() {
        let mut cache = Cache::new(10);
        cache.insert("a".to_string(), 1);
        assert_eq!(got(cache.get("a")), Some(1));
        assert_eq!(got(cache.peek("a")), Some(1));
        assert!(cache.contains_key("a"));
        assert_eq!(got(cache.get("b")), None);
        cache.validate();
    }

    #[test]
    fn insert_many_stays_within_capacity() {
        for policy in [
            EvictionPolicy::tiny_lfu(),
            EvictionPolicy::tiny_lfu_static(),
            EvictionPolicy::lru(),
            EvictionPolicy::lfu(),
        ] {
            for &shards in SHARD_COUNTS {
                let mut cache = Cache::builder()
                    .max_capacity(50)
                    .shards_if_sync(shards)
                    .eviction_policy(policy)
                    .build()
                    .unwrap();
                // Under Miri, where each insert is slow, one lap of 200 keys: enough that every
                // shard's share is filled whatever the keys' random hashes (a shard short of 13
                // of them is a 1e-12 event; with 120 keys it was 3e-5).
                let (keys, inserts) = if cfg!(miri) { (200, 200) } else { (300, 5_000u64) };
                for i in 0..inserts {
                    cache.insert(i % keys, i);
                    assert!(cache.len() <= 50, "{} over capacity", policy.name());
                }
                cache.validate();
                // The keys fill every shard's share.
                assert_eq!(cache.len(), 50, "{} with {shards} shards", policy.name());
            }
        }
    }

    #[test]
    fn insert_existing_key_replaces_and_notifies_replaced() {
        let clock = ManualClock::new();
        let (mut cache, log) = logging_cache(10, 1, &clock);
        cache.insert(1, 10);
        cache.insert(1, 11);
        assert_eq!(got(cache.get(&1)), Some(11));
        assert_eq!(cache.len(), 1);
        assert_eq!(*log.lock().unwrap(), vec![(1, 10, RemovalCause::Replaced)]);
        assert_eq!(cache.stats().replacements, 1);
    }

    #[test]
    fn remove_returns_value_and_notifies_explicit() {
        let clock = ManualClock::new();
        let (mut cache, log) = logging_cache(10, 1, &clock);
        cache.insert(1, 10);
        assert_eq!(cache.remove(&1), Some(10));
        assert_eq!(cache.remove(&1), None);
        assert_eq!(*log.lock().unwrap(), vec![(1, 10, RemovalCause::Explicit)]);
        assert_eq!(cache.stats().removals_explicit, 1);
    }

    #[test]
    fn eviction_notifies_size_with_evicted_entry() {
        let clock = ManualClock::new();
        let (mut cache, log) = logging_cache(3, 1, &clock);
        for i in 0..4 {
            cache.insert(i, i * 10);
        }
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1);
        let (k, v, cause) = log[0];
        assert_eq!((v, cause), (k * 10, RemovalCause::Size));
        assert!(!cache.contains_key(&k));
        assert_eq!(cache.stats().evictions_size, 1);
    }

    #[test]
    fn time_to_live_expired_entry_never_returned() {
        let clock = ManualClock::new();
        let (mut cache, log) = Cache::builder()
            .max_capacity(100)
            .time_to_live(Duration::from_secs(10))
            .clock(clock.clone())
            .build_logged();
        cache.insert(1, 1);
        clock.advance(Duration::from_secs(9));
        assert_eq!(got(cache.get(&1)), Some(1), "reads do not extend a time to live");
        clock.advance(Duration::from_secs(1));
        // Due now: invisible at once, before any maintenance.
        assert_eq!(got(cache.get(&1)), None);
        assert_eq!(got(cache.peek(&1)), None);
        assert!(cache.iter().next().is_none());
        assert!(log.lock().unwrap().is_empty());
        cache.run_pending_tasks();
        assert_eq!(*log.lock().unwrap(), vec![(1, 1, RemovalCause::Expired)]);
        assert_eq!(cache.len(), 0);
        cache.validate();
    }

    #[test]
    fn time_to_live_update_restarts_lifetime() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(100)
            .time_to_live(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 1);
        clock.advance(Duration::from_secs(8));
        cache.insert(1, 2);
        clock.advance(Duration::from_secs(8));
        assert_eq!(got(cache.get(&1)), Some(2));
        clock.advance(Duration::from_secs(2));
        assert_eq!(got(cache.get(&1)), None);
    }

    #[test]
    fn len_expired_not_yet_removed_not_counted_as_iter_skips_them() {
        let clock = ManualClock::new();
        let (mut cache, log) = Cache::builder()
            .max_capacity(100)
            .shards_if_sync(4)
            .time_to_idle(Duration::from_secs(5))
            .time_to_live(Duration::from_secs(10))
            .clock(clock.clone())
            .build_logged();
        for key in 0..6 {
            cache.insert(key, key);
        }
        clock.advance(Duration::from_secs(4));
        for key in 0..3 {
            assert_eq!(got(cache.get(&key)), Some(key), "read at 4 s: idle until 9 s");
        }
        clock.advance(Duration::from_secs(2)); // t = 6: keys 3-5 idle for 6 s
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.len(), cache.iter().count());
        clock.advance(Duration::from_secs(4)); // t = 10: the time to live of all
        assert_eq!(cache.len(), 0);
        assert!(cache.is_empty());
        assert!(cache.iter().next().is_none());
        assert!(log.lock().unwrap().is_empty(), "nothing removed yet");
        cache.run_pending_tasks();
        assert_eq!(log.lock().unwrap().len(), 6);
        assert_eq!(cache.len(), 0);
        cache.validate();
    }

    #[test]
    fn time_to_idle_reads_extend_until_time_to_live() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(100)
            .time_to_idle(Duration::from_secs(5))
            .time_to_live(Duration::from_secs(12))
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 1);
        cache.insert(2, 2);
        for _ in 0..2 {
            clock.advance(Duration::from_secs(4));
            assert_eq!(got(cache.get(&1)), Some(1));
        }
        // Key 2 was idle for 8 s.
        assert_eq!(got(cache.get(&2)), None);
        clock.advance(Duration::from_secs(3)); // t = 11: idle 3 s
        assert_eq!(got(cache.get(&1)), Some(1));
        clock.advance(Duration::from_secs(1)); // t = 12: time to live reached
        assert_eq!(got(cache.get(&1)), None);
        cache.run_pending_tasks();
        assert!(cache.is_empty());
        cache.validate();
    }

    #[test]
    fn peek_does_not_extend_time_to_idle() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(10)
            .time_to_idle(Duration::from_secs(5))
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 1);
        clock.advance(Duration::from_secs(4));
        assert_eq!(got(cache.peek(&1)), Some(1));
        clock.advance(Duration::from_secs(1));
        assert_eq!(got(cache.get(&1)), None);
    }

    #[test]
    fn expire_after_per_entry_lifetimes() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(10)
            .expire_after(ValueSeconds)
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 2);
        cache.insert(2, 5);
        cache.insert(3, 0); // never expires
        clock.advance(Duration::from_secs(3));
        assert_eq!(got(cache.get(&1)), None);
        assert_eq!(got(cache.get(&2)), Some(5));
        cache.insert(2, 1); // update: 1 s from now
        clock.advance(Duration::from_secs(1));
        assert_eq!(got(cache.get(&2)), None);
        clock.advance(Duration::from_secs(10_000));
        assert_eq!(got(cache.get(&3)), Some(0));
        cache.run_pending_tasks();
        assert_eq!(cache.len(), 1);
        cache.validate();
    }

    #[test]
    fn expire_after_read_shortening_deadline_expires_in_maintenance() {
        // An hour from the insert, a second from the read; and a first deadline from the read.
        for create in [Some(Duration::from_secs(3_600)), None] {
            // A roomy cache under the default policy, and a full one-shard LRU.
            for (max, policy) in [(100, EvictionPolicy::default()), (2, EvictionPolicy::lru())] {
                let clock = ManualClock::new();
                let (mut cache, log) = Cache::builder()
                    .max_capacity(max)
                    .shards_if_sync(1)
                    .eviction_policy(policy)
                    .clock(clock.clone())
                    .expire_after(OneSecondAfterRead { create })
                    .build_logged();
                let name = policy.name();
                cache.insert(1, 10);
                assert_eq!(got(cache.get(&1)), Some(10), "{name}, create {create:?}");
                cache.validate();
                clock.advance(Duration::from_secs(2));
                cache.run_pending_tasks();
                assert_eq!(
                    *log.lock().unwrap(),
                    vec![(1, 10, RemovalCause::Expired)],
                    "{name}, create {create:?}"
                );
                assert!(cache.is_empty());
                assert_eq!(cache.len(), 0);
                cache.validate();
            }
        }
    }

    /// A lifetime that saturates the clock's range is still a deadline: a read is told the
    /// time left (`current` is `None` only without one), so it can shorten it.
    #[test]
    fn expire_after_read_of_longest_lifetime_can_shorten_it() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(10)
            .expire_after(LongestUntilRead)
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(got(cache.get(&1)), Some(1));
        clock.advance(Duration::from_secs(11));
        assert_eq!(got(cache.get(&1)), None, "10 s after the read");
        cache.run_pending_tasks();
        assert!(cache.is_empty());
        cache.validate();
    }

    #[test]
    fn insert_with_ttl_overrides_cache_lifetime() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(10)
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 1);
        cache.insert_with_ttl(2, 2, Duration::from_millis(1500));
        clock.advance(Duration::from_secs(2));
        assert_eq!(got(cache.get(&1)), Some(1));
        assert_eq!(got(cache.get(&2)), None);
        cache.validate();
    }

    #[test]
    fn zero_lifetime_write_full_cache_expires_it_and_evicts_nobody() {
        // A write whose lifetime is zero is expired the moment it is made (`get` already said
        // so): it leaves as `Expired`, not `Size`, and takes no live entry's place. Before,
        // the eviction after the write took the coldest live key, and the dead entry stayed
        // until the next write; with a weigher, an entry losing admission was reported `Size`.
        for weighted in [false, true] {
            let clock = ManualClock::new();
            let builder = Cache::builder()
                .max_capacity(if weighted { 100 } else { 10 })
                .shards_if_sync(1)
                .expire_after(ValueSeconds)
                .clock(clock.clone())
                .record_stats();
            let builder = if weighted {
                builder.weigher(|_: &u32, _: &u64| 10)
            } else {
                builder
            };
            let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let heard = log.clone();
            let mut cache = builder
                .eviction_listener(move |k: &u32, v: &u64, cause| {
                    heard.lock().unwrap().push((*k, *v, cause));
                })
                .build()
                .unwrap();
            for key in 1..=10 {
                cache.insert(key, 3_600);
            }
            for _ in 0..4 {
                for key in 1..=10 {
                    assert!(cache.get(&key).is_some());
                }
            }
            cache.run_pending_tasks();
            // `ValueSeconds` reads 0 as "never expires": a zero lifetime comes from the write.
            cache.insert_with_ttl(100, 7, Duration::ZERO);
            assert_eq!(got(cache.peek(&100)), None);
            // A replacement given a zero lifetime goes too, after the old value's `Replaced`.
            cache.insert_with_ttl(1, 8, Duration::ZERO);
            cache.run_pending_tasks();
            assert_eq!(
                *log.lock().unwrap(),
                vec![
                    (100, 7, RemovalCause::Expired),
                    (1, 3_600, RemovalCause::Replaced),
                    (1, 8, RemovalCause::Expired),
                ],
                "weighted: {weighted}"
            );
            assert_eq!(cache.len(), 9);
            let stats = cache.stats();
            assert_eq!((stats.evictions_size, stats.evictions_expired), (0, 2));
            assert_eq!(stats.replacements, 1);
            cache.validate();
        }
    }

    #[test]
    fn insert_with_ttl_time_to_idle_still_applies_and_plain_insert_restores_ttl() {
        let clock = ManualClock::new();
        let mut cache = Cache::builder()
            .max_capacity(10)
            .time_to_live(Duration::from_secs(100))
            .time_to_idle(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap();
        // Its own lifetime (60 s) is later than the idle deadline (10 s): idle wins.
        cache.insert_with_ttl(1, 1, Duration::from_secs(60));
        // Read every 8 s, it lives until its own 60 s, not the cache's 100.
        cache.insert_with_ttl(2, 2, Duration::from_secs(60));
        // Replaced by a plain insert, the cache's 100 s apply again.
        cache.insert_with_ttl(3, 3, Duration::from_secs(5));
        cache.insert(3, 30);
        for _ in 0..7 {
            clock.advance(Duration::from_secs(8));
            cache.get(&2);
            cache.get(&3);
        }
        // At 56 s: key 1 idled out at 10 s; 2 and 3 are alive.
        assert_eq!(got(cache.peek(&1)), None);
        assert_eq!(got(cache.peek(&2)), Some(2));
        assert_eq!(got(cache.peek(&3)), Some(30));
        clock.advance(Duration::from_secs(6));
        cache.get(&3);
        // At 62 s: key 2's own 60 s are over; key 3 lives on.
        assert_eq!(got(cache.peek(&2)), None);
        assert_eq!(got(cache.peek(&3)), Some(30));
        cache.validate();
    }

    #[test]
    fn zero_lifetime_write_capacity_zero_is_expired_not_size() {
        let clock = ManualClock::new();
        let (mut cache, log) = Cache::builder()
            .max_capacity(0)
            .shards_if_sync(1)
            .clock(clock.clone())
            .build_logged();
        cache.insert_with_ttl(7, 7, Duration::ZERO);
        cache.insert(8, 8);
        assert_eq!(
            *log.lock().unwrap(),
            vec![(7, 7, RemovalCause::Expired), (8, 8, RemovalCause::Size)]
        );
        cache.validate();
    }

    #[test]
    fn build_conflicting_settings_is_typed_error() {
        let err = Cache::<u32, u32>::builder()
            .max_capacity(10)
            .time_to_live(Duration::from_secs(1))
            .expire_after(NoExpiry)
            .build()
            .unwrap_err();
        assert_eq!(err, BuildError::ExpiryConflict);
        let err = Cache::<u32, u32>::builder()
            .weigher(|_, _| 1)
            .build()
            .unwrap_err();
        assert_eq!(err, BuildError::WeigherWithoutCapacity);
        let err = Cache::<u32, u32>::builder()
            .max_capacity(u64::MAX)
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::CapacityTooLarge { .. }));
        assert!(!err.to_string().is_empty());
    }

    #[test]
    fn weigher_bounds_total_weight() {
        let mut cache = Cache::builder()
            .max_capacity(100)
            .weigher(|_: &u32, v: &String| v.len() as u32)
            .build()
            .unwrap();
        let mut rng = Rng::new(3);
        for i in 0..if cfg!(miri) { 150 } else { 2_000u32 } {
            let len = (rng.next_u64() % 30) as usize;
            cache.insert(i % 200, "x".repeat(len));
            assert!(cache.weighted_size() <= 100);
        }
        cache.validate();
        let total: u64 = cache.iter().map(|(_, v)| v.len() as u64).sum();
        assert_eq!(total, cache.weighted_size());
        // An entry heavier than the whole cache is never kept.
        cache.insert(9_999, "y".repeat(101));
        assert!(!cache.contains_key(&9_999));
        cache.validate();
    }

    #[test]
    fn set_max_capacity_shrinks_by_evicting() {
        let clock = ManualClock::new();
        let (mut cache, log) = logging_cache(100, 1, &clock);
        for i in 0..100 {
            cache.insert(i, i);
        }
        cache.set_max_capacity(10);
        assert_eq!(cache.len(), 10);
        assert_eq!(log.lock().unwrap().len(), 90);
        assert!(log.lock().unwrap().iter().all(|e| e.2 == RemovalCause::Size));
        cache.validate();
    }

    #[test]
    fn retain_and_invalidate_all_remove_explicitly() {
        let clock = ManualClock::new();
        let (mut cache, log) = logging_cache(100, 4, &clock);
        for i in 0..10 {
            cache.insert(i, i);
        }
        cache.retain(|k, _| k % 2 == 0);
        assert_eq!(cache.len(), 5);
        assert!(cache.iter().all(|(k, _)| k % 2 == 0));
        cache.invalidate_all();
        assert!(cache.is_empty());
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 10);
        assert!(log.iter().all(|e| e.2 == RemovalCause::Explicit));
        cache.validate();
    }

    #[test]
    fn stats_count_hits_and_misses() {
        let clock = ManualClock::new();
        let (mut cache, _) = logging_cache(10, 1, &clock);
        cache.insert(1, 1);
        cache.get(&1);
        cache.get(&1);
        cache.get(&2);
        // Neither a peek nor a presence check counts.
        cache.peek(&1);
        cache.contains_key(&3);
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (2, 1));
        assert!((stats.hit_ratio() - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn stats_eviction_weight_sums_weights_evicted_for_size_and_expiry() {
        let clock = ManualClock::new();
        let (mut cache, log) = Cache::builder()
            .max_capacity(100)
            .weigher(|_: &u32, v: &u32| *v)
            .time_to_live(Duration::from_secs(10))
            .shards_if_sync(1)
            .clock(clock.clone())
            .record_stats()
            .build_logged();
        cache.insert(1, 30);
        clock.advance(Duration::from_secs(5));
        cache.insert(2, 60);
        cache.insert(3, 40); // 130 > 100: a size eviction
        cache.insert(4, 101); // heavier than the cache: evicted at once
        clock.advance(Duration::from_secs(5));
        // Key 1 expired: replaced (if still held) or gone; either way its 30 was evicted.
        cache.insert(1, 10);
        cache.insert(5, 5);
        cache.insert(5, 6); // a replacement: not an eviction
        cache.remove(&5); // explicit: not an eviction
        clock.advance(Duration::from_secs(10));
        cache.run_pending_tasks();
        let log = log.lock().unwrap();
        let evicted: u64 = log
            .iter()
            .filter(|e| e.2.was_evicted())
            .map(|e| u64::from(e.1))
            .sum();
        assert!(log.iter().any(|e| e.2 == RemovalCause::Size));
        assert!(log.iter().any(|e| e.2 == RemovalCause::Expired));
        let stats = cache.stats();
        assert_eq!(stats.evictions(), log.iter().filter(|e| e.2.was_evicted()).count() as u64);
        assert_eq!(stats.eviction_weight, evicted);
        // Everything written but 5 was evicted by now: 30 + 60 + 40 + 101 + 10.
        assert_eq!(evicted, 241);
        assert!(cache.is_empty());
    }

    #[test]
    fn stats_not_recorded_stay_zero() {
        let mut cache = Cache::new(10);
        cache.insert(1, 1);
        cache.get(&1);
        load(&mut cache, 2, || 2);
        assert_eq!(cache.stats(), CacheStats::default());
    }

    #[test]
    fn hottest_and_coldest_follow_lru_order() {
        let mut cache = Cache::builder()
            .max_capacity(10)
            .shards_if_sync(1)
            .eviction_policy(EvictionPolicy::lru())
            .build()
            .unwrap();
        for i in 0..5 {
            cache.insert(i, i);
        }
        // In the sync cache the read goes through the read buffer; the order must reflect it
        // all the same.
        cache.get(&0);
        assert_eq!(keys(cache.coldest(2)), vec![1, 2]);
        assert_eq!(keys(cache.hottest(2)), vec![0, 4]);
    }

    #[test]
    fn hottest_tiny_lfu_prefers_frequent_keys() {
        let mut cache = Cache::builder()
            .max_capacity(100)
            .shards_if_sync(1)
            .build()
            .unwrap();
        for i in 0..100u32 {
            cache.insert(i, i);
        }
        for _ in 0..5 {
            cache.get(&7);
        }
        assert_eq!(keys(cache.hottest(1)), vec![7]);
        assert_ne!(keys(cache.coldest(1)), vec![7]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: hit ratios over a loop")]
    fn loop_longer_than_capacity_tiny_lfu_beats_lru() {
        let keys = || (0..400_000u64).map(|i| i % 1_011);
        let mut lru = Cache::builder()
            .max_capacity(500)
            .eviction_policy(EvictionPolicy::lru())
            .build()
            .unwrap();
        assert_eq!(hit_ratio(&mut lru, keys()), 0.0);
        let mut tiny_lfu = Cache::builder()
            .max_capacity(500)
            .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(1))
            .build()
            .unwrap();
        let ratio = hit_ratio(&mut tiny_lfu, keys());
        // The optimum is 500/1011 = 49%.
        assert!(ratio > 0.35, "W-TinyLFU hit ratio on a loop: {ratio}");
        tiny_lfu.validate();
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: a scan past a hot set")]
    fn scan_of_one_off_keys_does_not_flush_hot_set() {
        let zipf = Zipf::new(10_000, 0.99);
        let mut rng = Rng::new(42);
        // One shard in the sync cache: small shards each adapt their window on their own, and
        // during a long scan that can cost a shard of 500 entries a good part of its hot set.
        let mut cache = Cache::builder()
            .max_capacity(1_000)
            .shards_if_sync(1)
            .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(2))
            .record_stats()
            .build()
            .unwrap();
        let warm: Vec<u64> = (0..200_000).map(|_| zipf.sample(&mut rng)).collect();
        hit_ratio(&mut cache, warm.iter().copied());
        let hot: Vec<u64> = (0..50).collect();
        let hot_before = hot.iter().filter(|k| cache.contains_key(*k)).count();
        // A scan of 100,000 keys never seen before and never seen again.
        hit_ratio(&mut cache, 1_000_000..1_100_000u64);
        let hot_after = hot.iter().filter(|k| cache.contains_key(*k)).count();
        assert_eq!(hot_before, 50);
        // An LRU keeps none of them.
        assert!(
            hot_after >= HOT_KEYS_KEPT_AFTER_SCAN,
            "hot keys left after the scan: {hot_after}"
        );
        let after_scan = hit_ratio(&mut cache, warm.iter().take(50_000).copied());
        assert!(after_scan > 0.5, "hit ratio after the scan: {after_scan}");
        cache.validate();
    }

    #[test]
    fn set_max_capacity_unbounded_cache_evicts_with_configured_policy() {
        // Built unbounded with LFU, then bounded: the key read five times must outlive the two
        // keys written after it, as in a cache built with the capacity (LRU would evict it).
        let mut cache = Cache::<u32, u32>::builder()
            .shards_if_sync(1)
            .eviction_policy(EvictionPolicy::lfu())
            .build()
            .unwrap();
        cache.set_max_capacity(2);
        cache.insert(1, 1);
        for _ in 0..5 {
            cache.get(&1);
        }
        cache.insert(2, 2);
        cache.insert(3, 3);
        assert!(cache.contains_key(&1), "the LFU's most used key was evicted");
        cache.validate();
        // The default policy is W-TinyLFU, whose window appears once the cache is bounded, also
        // when it already holds more entries than its new capacity.
        let (keys, capacity) = if cfg!(miri) { (200, 50) } else { (5_000, 1_000) };
        let mut cache = Cache::<u32, u32>::builder().shards_if_sync(4).build().unwrap();
        for key in 0..keys {
            cache.insert(key, key);
        }
        cache.set_max_capacity(capacity);
        assert!(cache.window_capacity().is_some());
        assert_eq!(cache.len(), capacity as usize);
        cache.validate();
    }

    /// A new key enters the admission window and is not judged by frequency before it leaves
    /// it: reads of the window's entries, deferred until they near eviction, came before the
    /// insert, so folding them must not move those entries behind the new one. With a window of
    /// one entry (a 1% window below 150 entries), each key inserted after a read of the
    /// previous one was turned away by the very insert that brought it (50 of 100 here).
    #[test]
    fn insert_new_key_after_read_of_window_entry_keeps_new_key() {
        let mut cache: Cache<u64, u64> = Cache::builder()
            .max_capacity(10)
            .shards_if_sync(1)
            .eviction_policy(EvictionPolicy::tiny_lfu_static().with_seed(7))
            .build()
            .unwrap();
        assert_eq!(cache.window_capacity(), Some(1));
        let turned_away = new_keys_gone_after_reads(|key, insert| {
            if insert {
                cache.insert(key, key);
            }
            cache.get(&key).is_some()
        });
        assert_eq!(turned_away, [] as [u64; 0], "gone right after their insert");
    }
}
