//! Behaviour of `unsync::Cache` through its public API, with a manual clock for expiry: the
//! scenarios checked on this front end only (its loading reads, memory estimate and eviction
//! edge cases). Those it shares with `sync::Cache` are in `front_ends.rs`.

use std::time::Duration;

use crate::common::front::{BuildLogged, Log};
use crate::common::{all_policies, key_clones, CountedKey};
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::time::ManualClock;
use cortado::unsync::Cache;

fn logging_cache(max: u64, clock: &ManualClock) -> (Cache<u32, u32>, Log) {
    Cache::builder()
        .max_capacity(max)
        .clock(clock.clone())
        .record_stats()
        .build_logged()
}

#[test]
#[cfg_attr(miri, ignore = "volume: two caches filled with 4,096 entries")]
fn memory_capacity_just_over_power_of_two_no_doubling_slack() {
    // 4,097 entries: plain doubling would give every per-slot array 8,192 places.
    let filled = |capacity: u64| {
        let mut cache = Cache::builder()
            .max_capacity(capacity)
            .eviction_policy(EvictionPolicy::lru())
            .build()
            .unwrap();
        // Fill, with a single eviction: no deleted table entries to make the table grow.
        for key in 0..=capacity {
            cache.insert(key, key);
        }
        cache.memory_bytes()
    };
    // 4,095 entries need at most 4,096 slots (one over, before an eviction): no slack either way.
    let (small, large) = (filled(4_095), filled(4_097));
    // One more unit of capacity costs about one entry, not a doubling of the slab.
    assert!(large <= small + small / 16, "{small} -> {large}");
}

#[test]
fn invalidate_all_and_set_max_capacity_report_expired_entries_as_expired() {
    for shrink in [false, true] {
        let clock = ManualClock::new();
        let (mut cache, log) = Cache::builder()
            .max_capacity(100)
            .clock(clock.clone())
            .time_to_live(Duration::from_secs(1))
            .build_logged();
        cache.insert(1, 10);
        clock.advance(Duration::from_secs(2));
        if shrink {
            cache.set_max_capacity(0);
        } else {
            cache.invalidate_all();
        }
        assert_eq!(
            *log.lock().unwrap(),
            vec![(1, 10, RemovalCause::Expired)],
            "shrink {shrink}"
        );
    }
}

/// Under every policy, an entry heavier than the whole capacity is evicted at once, alone,
/// whether it is new or replaces a lighter value: the entries a policy would push out to make
/// room for it stay.
#[test]
fn heavier_than_capacity_insert_or_update_evicts_only_itself() {
    for policy in all_policies() {
        for update in [false, true] {
            let (mut cache, log) = Cache::builder()
                .max_capacity(100)
                .weigher(|_: &u32, v: &u32| *v)
                .eviction_policy(policy)
                .build_logged();
            for k in 0..10 {
                cache.insert(k, 10);
            }
            for k in 0..10 {
                cache.get(&k);
            }
            log.lock().unwrap().clear();
            let key = if update { 5 } else { 99 };
            cache.insert(key, 101);
            let mut expected = vec![(key, 101, RemovalCause::Size)];
            if update {
                expected.insert(0, (5, 10, RemovalCause::Replaced));
            }
            assert_eq!(
                *log.lock().unwrap(),
                expected,
                "{}, update {update}",
                policy.name()
            );
            assert_eq!(cache.len(), if update { 9 } else { 10 });
            cache.validate();
        }
    }
}

/// The entry inserted last is spared only by the eviction of its own insertion: a shrink that
/// comes later evicts the coldest entry, even if that is the one inserted last.
#[test]
fn set_max_capacity_after_insert_evicts_coldest_even_if_inserted_last() {
    for policy in [
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru().samples(64),
        EvictionPolicy::redis_lfu().samples(64),
    ] {
        let (mut cache, log) = Cache::builder()
            .max_capacity(3)
            .eviction_policy(policy.with_seed(7))
            .build_logged();
        for k in 0..3 {
            cache.insert(k, k);
        }
        // 0 and 1 are used again: 2 is the least recently and least frequently used.
        cache.get(&0);
        cache.get(&1);
        assert_eq!(cache.coldest(1), vec![&2], "{}", policy.name());
        cache.set_max_capacity(2);
        assert_eq!(
            *log.lock().unwrap(),
            vec![(2, 2, RemovalCause::Size)],
            "{}",
            policy.name()
        );
        cache.validate();
    }
}

/// A weighed replacement that overflows the capacity evicts the least used entry, not the
/// frequently used entry it replaces because the entry inserted before it is spared.
#[test]
fn lfu_weighted_update_after_insert_evicts_least_used_entry() {
    let (mut cache, log) = Cache::builder()
        .max_capacity(3)
        .weigher(|_: &u32, v: &u32| *v)
        .eviction_policy(EvictionPolicy::lfu())
        .build_logged();
    cache.insert(0, 1);
    for _ in 0..3 {
        cache.get(&0);
    }
    cache.insert(1, 1); // used once: the least used
    cache.insert(0, 3); // 4 units: one entry must go
    assert_eq!(
        *log.lock().unwrap(),
        vec![(0, 1, RemovalCause::Replaced), (1, 1, RemovalCause::Size)]
    );
    assert_eq!(cache.get(&0), Some(&3));
    cache.validate();
}

#[test]
#[cfg_attr(miri, ignore = "volume: 12,000 requests on 4,096 entries")]
fn set_max_capacity_shrink_to_unsampled_size_keeps_keys_read_while_sampling() {
    // At 4,096 entries the adaptive policy's miniatures sample half the keys, and the reads of
    // the others wait on their entries; shrunk to 1,024, the miniatures replay every key and
    // no read waits. The reads that waited must still count in the shrink's evictions.
    // A fixed seed and hasher: with some random ones an unread key whose sketch count collides
    // up to 5 sits near probation's end, where every candidate read 8 times (aged to 4) loses
    // to it, and about 440 keys were kept (2 seeds in 40).
    type Hasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
    let mut cache: Cache<u32, u32, Hasher> = Cache::builder()
        .max_capacity(4_096)
        .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(3))
        .hasher(Hasher::default())
        .build()
        .unwrap();
    for key in 0..4_096 {
        cache.insert(key, key);
    }
    for _ in 0..8 {
        for key in 0..1_024 {
            assert_eq!(cache.get(&key), Some(&key));
        }
    }
    cache.set_max_capacity(1_024);
    let kept = (0..1_024).filter(|key| cache.contains_key(key)).count();
    assert!(kept > 1_000, "{kept} of the 1,024 keys read 8 times kept");
}

#[test]
#[cfg_attr(miri, ignore = "volume: caches of 40,000 entries")]
fn set_max_capacity_shrink_full_deferring_cache_keeps_keys_read_since_full() {
    // The static policy defers every read, and the adaptive one at 40,000 entries (still
    // sampling at 10,000) those of the keys its miniatures do not replay. A full cache's
    // quarter of its keys, read 8 times each, must outlive the unread keys when it shrinks to
    // a quarter: the reads waiting on entries count before the shrink's evictions, which go
    // far past the queue ends that a single insert's fold looks at.
    type Hasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
    for policy in [
        EvictionPolicy::tiny_lfu_static(),
        EvictionPolicy::tiny_lfu(),
    ] {
        let capacity = 40_000u32;
        let mut cache: Cache<u32, u32, Hasher> = Cache::builder()
            .max_capacity(u64::from(capacity))
            .eviction_policy(policy.with_seed(3))
            .hasher(Hasher::default())
            .build()
            .unwrap();
        for key in 0..2 * capacity {
            cache.insert(key, key);
        }
        let read: Vec<u32> = (0..2 * capacity)
            .filter(|key| cache.contains_key(key))
            .step_by(4)
            .collect();
        assert_eq!(read.len(), capacity as usize / 4);
        for _ in 0..8 {
            for key in &read {
                assert_eq!(cache.get(key), Some(key));
            }
        }
        cache.set_max_capacity(u64::from(capacity / 4));
        let kept = read.iter().filter(|key| cache.contains_key(key)).count();
        assert!(
            kept > read.len() * 95 / 100,
            "{}: {kept} of the {} keys read 8 times kept",
            policy.name(),
            read.len()
        );
        cache.validate();
    }
}

#[test]
fn get_or_insert_with_miss_loads_once_then_hits_counted() {
    let clock = ManualClock::new();
    let (mut cache, log) = logging_cache(10, &clock);
    let mut loads = 0;
    for _ in 0..3 {
        let got = cache.get_or_insert_with(1, || {
            loads += 1;
            10
        });
        assert_eq!(got, Some(&10));
    }
    assert_eq!(loads, 1);
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (2, 1));
    assert_eq!((stats.load_successes, stats.load_failures), (1, 0));
    assert_eq!(cache.get(&1), Some(&10));
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn get_or_insert_with_expired_entry_reloads_and_reports_expired() {
    let clock = ManualClock::new();
    let (mut cache, log) = logging_cache(10, &clock);
    cache.insert_with_ttl(1, 10, Duration::from_secs(5));
    clock.advance(Duration::from_secs(5));
    assert_eq!(cache.get_or_insert_with(1, || 11), Some(&11));
    assert_eq!(*log.lock().unwrap(), [(1, 10, RemovalCause::Expired)]);
    assert_eq!(cache.stats().load_successes, 1);
}

#[test]
fn try_get_or_insert_with_error_inserts_nothing_and_counts_failure() {
    let clock = ManualClock::new();
    let (mut cache, _log) = logging_cache(10, &clock);
    assert_eq!(cache.try_get_or_insert_with(1, || Err("down")), Err("down"));
    assert_eq!(cache.len(), 0);
    assert_eq!(
        cache.try_get_or_insert_with(1, || Ok::<_, &str>(10)),
        Ok(Some(&10))
    );
    assert_eq!(
        cache.try_get_or_insert_with(1, || Err("not called")),
        Ok(Some(&10))
    );
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (1, 2));
    assert_eq!((stats.load_successes, stats.load_failures), (1, 1));
}

#[test]
fn get_or_insert_with_heavier_than_capacity_returns_none_and_reports_size() {
    let (mut cache, log) = Cache::builder()
        .max_capacity(10)
        .weigher(|_: &u32, v: &u32| *v)
        .build_logged();
    assert_eq!(cache.get_or_insert_with(1, || 11), None);
    assert_eq!(*log.lock().unwrap(), [(1, 11, RemovalCause::Size)]);
    assert_eq!(cache.get_or_insert_with(1, || 4), Some(&4));
}

#[test]
fn get_or_insert_with_by_ref_makes_owned_key_only_on_miss() {
    let key = CountedKey(1);
    let mut cache = Cache::new(10);
    let before = key_clones();
    assert_eq!(
        cache.get_or_insert_with_by_ref(&key, || "one"),
        Some(&"one")
    );
    assert_eq!(key_clones(), before + 1, "a miss makes the owned key");
    for _ in 0..3 {
        assert_eq!(
            cache.get_or_insert_with_by_ref(&key, || "two"),
            Some(&"one")
        );
    }
    assert_eq!(key_clones(), before + 1, "hits clone nothing");
    assert_eq!(
        cache.try_get_or_insert_with_by_ref(&CountedKey(2), || Err("down")),
        Err("down")
    );
    assert_eq!(key_clones(), before + 1, "a failed load makes no key");
    let mut strings = Cache::<String, usize>::new(10);
    assert_eq!(strings.get_or_insert_with_by_ref("abc", || 3), Some(&3));
    assert_eq!(strings.get("abc"), Some(&3));
}

#[test]
fn debug_shows_sizes_not_internals() {
    let mut cache = Cache::new(10);
    cache.insert(1, 1);
    cache.insert(2, 2);
    let shown = format!("{cache:?}");
    assert_eq!(
        shown,
        "Cache { len: 2, weighted_size: 2, max_capacity: 10, .. }"
    );
}

#[test]
fn get_or_insert_with_stats_match_sync_get_with_panicking_loader_included() {
    let mut unsync: Cache<u32, u32> = Cache::builder()
        .max_capacity(10)
        .record_stats()
        .build()
        .unwrap();
    let sync: cortado::sync::Cache<u32, u32> = cortado::sync::Cache::builder()
        .max_capacity(10)
        .record_stats()
        .build()
        .unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        unsync
            .get_or_insert_with(3, || panic!("loader failed (expected by the test)"))
            .copied()
    }));
    assert!(panicked.is_err());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sync.get_with(3, || panic!("loader failed (expected by the test)"))
    }));
    assert!(panicked.is_err());
    assert_eq!(unsync.get_or_insert_with(1, || 10), Some(&10));
    assert_eq!(sync.get_with(1, || 10), 10);
    assert_eq!(unsync.get_or_insert_with(1, || 11), Some(&10));
    assert_eq!(sync.get_with(1, || 11), 10);
    assert_eq!(
        unsync.try_get_or_insert_with(2, || Err("down")),
        Err("down")
    );
    assert_eq!(*sync.try_get_with(2, || Err("down")).unwrap_err(), "down");
    assert_eq!(unsync.get_or_insert_with(3, || 30), Some(&30));
    assert_eq!(sync.get_with(3, || 30), 30);
    let counts =
        |s: cortado::stats::CacheStats| (s.hits, s.misses, s.load_successes, s.load_failures);
    assert_eq!(counts(sync.stats()), (1, 4, 2, 2));
    assert_eq!(counts(unsync.stats()), counts(sync.stats()));
    unsync.validate();
}

#[test]
fn get_or_insert_with_dates_the_entry_after_its_loader() {
    let clock = ManualClock::new();
    let mut cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(10)
        .clock(clock.clone())
        .time_to_live(Duration::from_secs(30))
        .build()
        .unwrap();
    let slow = || {
        clock.advance(Duration::from_secs(20));
        10
    };
    assert_eq!(cache.get_or_insert_with(1, slow), Some(&10));
    // Written at 20 s, when the loader returned: it lives until 50 s, not 30 s.
    clock.advance(Duration::from_secs(15));
    assert_eq!(cache.get(&1), Some(&10));
    clock.advance(Duration::from_secs(15));
    assert_eq!(cache.get(&1), None);
}

#[test]
fn get_or_insert_with_counts_load_time_of_successes_and_failures() {
    let pause = Duration::from_millis(2);
    let mut cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(10)
        .record_stats()
        .build()
        .unwrap();
    let loaded = cache.get_or_insert_with(1, || {
        std::thread::sleep(pause);
        10
    });
    assert_eq!(loaded, Some(&10));
    assert!(cache.stats().load_time() >= pause);
    let failed = cache.try_get_or_insert_with(2, || {
        std::thread::sleep(pause);
        Err(())
    });
    assert_eq!(failed, Err(()));
    assert!(cache.stats().load_time() >= 2 * pause);
    cache.get_or_insert_with(1, || unreachable!());
    assert!(cache.stats().load_time() < Duration::from_secs(60));
}

#[test]
fn get_or_insert_with_weighted_tiny_lfu_may_turn_away_entry_lighter_than_window() {
    for policy in [
        EvictionPolicy::tiny_lfu(),
        EvictionPolicy::tiny_lfu_static(),
    ] {
        let (mut cache, log) = Cache::builder()
            .max_capacity(2)
            .eviction_policy(policy)
            .weigher(|_: &u32, v: &u32| *v)
            .build_logged();
        assert_eq!(cache.window_capacity(), Some(1));
        for key in 1..=3 {
            cache.insert(key, 1);
        }
        // 1 went to make room; 2 is in the main space, 3 in the window.
        assert_eq!(*log.lock().unwrap(), [(1, 1, RemovalCause::Size)]);
        cache.remove(&3);
        cache.insert(2, 2);
        for _ in 0..4 {
            assert_eq!(cache.get(&2), Some(&2));
        }
        log.lock().unwrap().clear();
        // Weight 1 fits the window, but the main space holds the whole capacity: the new
        // entry duels the frequent entry at once, and loses.
        let name = policy.name();
        assert_eq!(cache.get_or_insert_with(4, || 1), None, "{name}");
        assert_eq!(*log.lock().unwrap(), [(4, 1, RemovalCause::Size)], "{name}");
        assert_eq!(cache.get(&2), Some(&2));
        cache.validate();
    }
}

#[test]
fn get_mut_change_through_guard_seen_by_reads_and_counted_as_hit() {
    let clock = ManualClock::new();
    let (mut cache, log) = logging_cache(10, &clock);
    cache.insert(1, 10);
    {
        let mut value = cache.get_mut(&1).unwrap();
        assert_eq!(*value, 10);
        *value += 5;
    }
    assert_eq!(cache.peek(&1), Some(&15));
    assert_eq!(cache.get(&1), Some(&15));
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (2, 0));
    // A change in place replaces nothing.
    assert_eq!(stats.replacements, 0);
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn get_mut_missing_key_returns_none_and_counts_miss() {
    let clock = ManualClock::new();
    let (mut cache, _log) = logging_cache(10, &clock);
    cache.insert(1, 10);
    assert!(cache.get_mut(&2).is_none());
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (0, 1));
}

#[test]
fn get_mut_expired_entry_returns_none_and_counts_miss() {
    let clock = ManualClock::new();
    let (mut cache, _log) = logging_cache(10, &clock);
    cache.insert_with_ttl(1, 10, Duration::from_secs(5));
    clock.advance(Duration::from_secs(5));
    assert!(cache.get_mut(&1).is_none());
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (0, 1));
}

/// For expiry a change through `get_mut` is a read: it moves the idle deadline, as `get`
/// does, and leaves the time to live counting from the insert.
#[test]
fn get_mut_extends_time_to_idle_but_not_time_to_live() {
    let clock = ManualClock::new();
    let mut cache = Cache::builder()
        .max_capacity(10)
        .clock(clock.clone())
        .time_to_idle(Duration::from_secs(10))
        .time_to_live(Duration::from_secs(30))
        .build()
        .unwrap();
    cache.insert(1, 0);
    for second in [8, 16, 24] {
        clock.advance(Duration::from_secs(8));
        *cache.get_mut(&1).expect("read within the idle time") += 1;
        assert_eq!(cache.peek(&1), Some(&(second / 8)));
    }
    clock.advance(Duration::from_secs(6));
    assert_eq!(
        cache.peek(&1),
        None,
        "a change is no write: lived 30 s from the insert"
    );
}

/// Under LRU the entry changed last is the last to go: a use, weighed or not, whose weight
/// changed or not.
#[test]
fn get_mut_counts_as_use_for_eviction_order() {
    for (weighted, new_value) in [(false, 11), (true, 10), (true, 11)] {
        let mut cache = Cache::builder()
            .max_capacity(100)
            .eviction_policy(EvictionPolicy::lru());
        if weighted {
            cache = cache.weigher(|_: &u32, v: &u32| *v);
        }
        let mut cache = cache.build().unwrap();
        for key in 1..=3 {
            cache.insert(key, 10);
        }
        *cache.get_mut(&1).unwrap() = new_value;
        let order: Vec<u32> = cache.coldest(3).into_iter().copied().collect();
        assert_eq!(order, [2, 3, 1], "weighted {weighted}, value {new_value}");
        cache.validate();
    }
}

/// A value grown through `get_mut` makes room once the guard drops, as a replacing insert of
/// its new weight would: under LRU the coldest entries go, heard as evicted for size.
#[test]
fn get_mut_heavier_value_evicts_coldest_to_fit_after_drop() {
    let (mut cache, log) = Cache::builder()
        .max_capacity(100)
        .weigher(|_: &u32, v: &u32| *v)
        .eviction_policy(EvictionPolicy::lru())
        .build_logged();
    for key in 0..10 {
        cache.insert(key, 10);
    }
    *cache.get_mut(&9).unwrap() = 30;
    assert_eq!(
        *log.lock().unwrap(),
        [(0, 10, RemovalCause::Size), (1, 10, RemovalCause::Size)]
    );
    assert_eq!(cache.weighted_size(), 100);
    assert_eq!(cache.peek(&9), Some(&30));
    cache.validate();
}

/// A cache of weight 100 under `policy`, holding keys 0 to 9, each weighing 10 and read once.
fn ten_read_entries_weighing_ten(policy: EvictionPolicy) -> (Cache<u32, u32>, Log) {
    let (mut cache, log) = Cache::builder()
        .max_capacity(100)
        .weigher(|_: &u32, v: &u32| *v)
        .eviction_policy(policy)
        .build_logged();
    for key in 0..10 {
        cache.insert(key, 10);
    }
    for key in 0..10 {
        cache.get(&key);
    }
    (cache, log)
}

/// Under every policy a grown value leaves the cache within its capacity, weighing exactly
/// what it holds, and what left was heard as evicted for size.
#[test]
fn get_mut_heavier_value_every_policy_keeps_bound_and_exact_weight() {
    for policy in all_policies() {
        let (mut cache, log) = ten_read_entries_weighing_ten(policy);
        *cache.get_mut(&5).unwrap() = 35;
        let name = policy.name();
        cache.validate();
        let held: u64 = cache.iter().map(|(_, v)| u64::from(*v)).sum();
        assert_eq!(cache.weighted_size(), held, "{name}");
        assert!(held <= 100, "{name}: {held}");
        let log = log.lock().unwrap();
        assert!(
            log.iter().all(|e| e.2 == RemovalCause::Size),
            "{name}: {log:?}"
        );
        assert_eq!(log.len() + cache.len(), 10, "{name}");
        assert!(!log.is_empty(), "{name}: 125 cannot fit 100");
    }
}

/// A value grown heavier than the whole capacity goes alone, heard as evicted for size, as
/// an insert of it would (`heavier_than_capacity_insert_or_update_evicts_only_itself`).
#[test]
fn get_mut_heavier_than_capacity_evicts_only_itself_with_size() {
    for policy in all_policies() {
        let (mut cache, log) = ten_read_entries_weighing_ten(policy);
        *cache.get_mut(&5).unwrap() = 101;
        let name = policy.name();
        assert_eq!(
            *log.lock().unwrap(),
            [(5, 101, RemovalCause::Size)],
            "{name}"
        );
        assert_eq!((cache.len(), cache.weighted_size()), (9, 90), "{name}");
        cache.validate();
    }
}

#[test]
fn get_mut_lighter_value_frees_weight_for_later_inserts() {
    let (mut cache, log) = Cache::builder()
        .max_capacity(30)
        .weigher(|_: &u32, v: &u32| *v)
        .eviction_policy(EvictionPolicy::lru())
        .build_logged();
    for key in 1..=3 {
        cache.insert(key, 10);
    }
    *cache.get_mut(&1).unwrap() = 4;
    assert_eq!(cache.weighted_size(), 24);
    cache.validate();
    cache.insert(4, 6);
    assert!(log.lock().unwrap().is_empty(), "30 fits 30");
    assert_eq!(cache.weighted_size(), 30);
}

/// The guard dropped after the entry's deadline: it leaves as expired, not evicted for size
/// (nor kept).
#[test]
fn get_mut_entry_expiring_while_held_reported_expired_on_drop() {
    let clock = ManualClock::new();
    let (mut cache, log) = Cache::builder()
        .max_capacity(100)
        .weigher(|_: &u32, v: &u32| *v)
        .clock(clock.clone())
        .build_logged();
    cache.insert_with_ttl(1, 10, Duration::from_secs(5));
    cache.insert(2, 10);
    {
        let mut value = cache.get_mut(&1).unwrap();
        clock.advance(Duration::from_secs(5));
        *value = 95;
    }
    assert_eq!(*log.lock().unwrap(), [(1, 95, RemovalCause::Expired)]);
    assert_eq!(cache.weighted_size(), 10);
    cache.validate();
}

/// Weighs a value as itself, panicking on 13.
fn weigh_unlucky(_: &u32, v: &u32) -> u32 {
    assert_ne!(*v, 13, "unlucky weight");
    *v
}

/// A weigher that panics on the changed value: the entry, whose weight is unknown, is removed
/// (heard as explicit), and the panic reaches the code that dropped the guard.
#[test]
fn get_mut_weigher_panic_on_drop_removes_entry_and_reaches_caller() {
    let (mut cache, log) = Cache::builder()
        .max_capacity(100)
        .weigher(weigh_unlucky)
        .build_logged();
    cache.insert(1, 10);
    cache.insert(2, 10);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        *cache.get_mut(&1).unwrap() = 13;
    }));
    let panic = outcome.expect_err("the weigher's panic reaches the caller");
    let message = panic.downcast_ref::<String>().map_or("", String::as_str);
    assert!(message.contains("unlucky weight"), "{message}");
    cache.validate();
    assert_eq!(*log.lock().unwrap(), [(1, 13, RemovalCause::Explicit)]);
    assert_eq!((cache.peek(&1), cache.weighted_size()), (None, 10));
    cache.insert(1, 5);
    assert_eq!(cache.get(&1), Some(&5));
    cache.validate();
}

/// A guard dropped by a panic while it is held does not call the weigher (its panic would
/// abort): a weighed entry is removed, heard of at the next operation that reports removals.
#[test]
fn get_mut_panic_while_held_removes_weighed_entry_unweighed() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let (mut cache, log) = Cache::builder()
        .max_capacity(100)
        .weigher(move |_: &u32, v: &u32| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *v
        })
        .build_logged();
    cache.insert(1, 10);
    cache.insert(2, 10);
    let before = calls.load(std::sync::atomic::Ordering::Relaxed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut value = cache.get_mut(&1).unwrap();
        *value = 20;
        panic!("the change failed");
    }));
    assert!(outcome.is_err());
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), before);
    cache.validate();
    assert_eq!((cache.peek(&1), cache.weighted_size()), (None, 10));
    cache.run_pending_tasks();
    assert_eq!(*log.lock().unwrap(), [(1, 20, RemovalCause::Explicit)]);
}

#[test]
fn get_mut_panic_while_held_unweighed_keeps_value_as_left() {
    let clock = ManualClock::new();
    let (mut cache, log) = logging_cache(10, &clock);
    cache.insert(1, 10);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut value = cache.get_mut(&1).unwrap();
        *value = 20;
        panic!("the change failed");
    }));
    assert!(outcome.is_err());
    cache.validate();
    assert_eq!(cache.peek(&1), Some(&20));
    cache.run_pending_tasks();
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn get_mut_listener_panic_on_drop_reaches_caller_after_evictions_counted() {
    // The guard's drop evicts, then tells a listener that panics: the panic reaches the code
    // that dropped the guard, with the cache within its capacity and every eviction counted.
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = heard.clone();
    let mut cache = Cache::builder()
        .max_capacity(100)
        .weigher(|_: &u32, v: &u32| *v)
        .record_stats()
        .eviction_listener(move |k: &u32, v: &u32, cause| {
            sink.lock().unwrap().push((*k, *v, cause));
            panic!("listener");
        })
        .build()
        .unwrap();
    for k in 0..10 {
        cache.insert(k, 10);
    }
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        *cache.get_mut(&3).unwrap() = 40;
    }));
    assert!(dropped.is_err(), "the listener's panic reaches the caller");
    cache.validate();
    assert!(cache.weighted_size() <= 100);
    let heard = heard.lock().unwrap();
    assert!(!heard.is_empty());
    let evicted: u64 = heard.iter().map(|e| u64::from(e.1)).sum();
    assert_eq!(cache.stats().eviction_weight, evicted);
    assert_eq!(cache.weighted_size(), 130 - evicted);
}

#[test]
fn for_loop_over_reference_visits_each_live_entry_once() {
    let clock = ManualClock::new();
    let (mut cache, _log) = logging_cache(100, &clock);
    for key in 0..20 {
        if key % 4 == 0 {
            cache.insert_with_ttl(key, key * 10, Duration::from_secs(1));
        } else {
            cache.insert(key, key * 10);
        }
    }
    clock.advance(Duration::from_secs(1));
    let mut seen = Vec::new();
    for (key, value) in &cache {
        seen.push((*key, *value));
    }
    seen.sort_unstable();
    let live: Vec<(u32, u32)> = (0..20)
        .filter(|k| k % 4 != 0)
        .map(|k| (k, k * 10))
        .collect();
    assert_eq!(
        seen, live,
        "the expired keys are skipped, the others seen once"
    );
    let mut named: cortado::unsync::Iter<'_, u32, u32> = cache.iter();
    assert_eq!(named.by_ref().count(), live.len());
    assert_eq!(named.next(), None, "fused");
}
