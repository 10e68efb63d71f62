//! Tests of `unsync::Cache`'s lifetime, scan and random-entry API (`expires_after`,
//! `set_expires_after`, `len_with_deadline`, `scan`, `random_entry`, `remove_expired`), which
//! the shard's `lifetimes` module implements.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Cache;
use crate::notification::RemovalCause;
use crate::random::SmallRng;
use crate::time::ManualClock;

/// An unbounded cache (as the server's) on a manual clock started at one second.
fn cache() -> (Cache<u32, u32>, ManualClock) {
    let clock = ManualClock::new();
    clock.set(Duration::from_secs(1));
    let cache = Cache::builder().clock(clock.clone()).build().unwrap();
    (cache, clock)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn expires_after_absent_none_untimed_some_none_timed_counts_down() {
    let (mut cache, clock) = cache();
    assert_eq!(cache.expires_after(&1), None);
    cache.insert(1, 10);
    assert_eq!(cache.expires_after(&1), Some(None));
    cache.insert_with_ttl(2, 20, secs(60));
    assert_eq!(cache.expires_after(&2), Some(Some(secs(60))));
    clock.advance(secs(45));
    assert_eq!(cache.expires_after(&2), Some(Some(secs(15))));
    clock.advance(secs(15) - Duration::from_nanos(1));
    assert_eq!(cache.expires_after(&2), Some(Some(Duration::from_nanos(1))));
    clock.advance(Duration::from_nanos(1));
    assert_eq!(cache.expires_after(&2), None, "due: as absent");
    assert_eq!(cache.expires_after(&1), Some(None));
    cache.validate();
}

#[test]
fn set_expires_after_changes_lifetime_keeps_value() {
    let (mut cache, clock) = cache();
    assert!(!cache.set_expires_after(&1, Some(secs(5))), "absent");
    assert_eq!(cache.len(), 0);
    cache.insert(1, 10);
    assert_eq!(cache.len_with_deadline(), 0);
    assert!(cache.set_expires_after(&1, Some(secs(5))));
    assert_eq!(cache.expires_after(&1), Some(Some(secs(5))));
    assert_eq!(cache.len_with_deadline(), 1);
    assert_eq!(cache.peek(&1), Some(&10));
    // Longer, then none at all.
    assert!(cache.set_expires_after(&1, Some(secs(500))));
    assert_eq!(cache.expires_after(&1), Some(Some(secs(500))));
    assert!(cache.set_expires_after(&1, None));
    assert_eq!(cache.expires_after(&1), Some(None));
    assert_eq!(cache.len_with_deadline(), 0);
    clock.advance(secs(10_000));
    assert_eq!(cache.peek(&1), Some(&10), "no deadline: stays");
    // An expired entry is not given a new lifetime.
    cache.insert_with_ttl(2, 20, secs(1));
    clock.advance(secs(1));
    assert!(!cache.set_expires_after(&2, Some(secs(60))));
    assert!(!cache.set_expires_after(&2, None));
    assert_eq!(cache.peek(&2), None);
    cache.validate();
}

#[test]
fn set_expires_after_zero_expires_at_once_heard_as_expired() {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let mut cache: Cache<u32, u32> = Cache::builder()
        .clock(ManualClock::new())
        .eviction_listener(move |k: &u32, v: &u32, cause| {
            sink.lock().unwrap().push((*k, *v, cause));
        })
        .build()
        .unwrap();
    cache.insert(1, 10);
    assert!(cache.set_expires_after(&1, Some(Duration::ZERO)));
    assert_eq!(cache.len(), 0);
    assert_eq!(cache.len_with_deadline(), 0);
    assert_eq!(*heard.lock().unwrap(), [(1, 10, RemovalCause::Expired)]);
    cache.validate();
}

#[test]
fn set_expires_after_time_to_idle_still_applies() {
    let clock = ManualClock::new();
    let mut cache: Cache<u32, u32> = Cache::builder()
        .clock(clock.clone())
        .time_to_idle(secs(10))
        .build()
        .unwrap();
    cache.insert(1, 10);
    assert!(cache.set_expires_after(&1, Some(secs(100))));
    assert_eq!(cache.expires_after(&1), Some(Some(secs(10))), "idle first");
    assert!(cache.set_expires_after(&1, Some(secs(3))));
    assert_eq!(
        cache.expires_after(&1),
        Some(Some(secs(3))),
        "lifetime first"
    );
    clock.advance(secs(3));
    assert_eq!(cache.get(&1), None);
    cache.validate();
}

/// What the model holds of a key: its value and its deadline (nanoseconds), if any.
type Model = HashMap<u32, (u32, Option<u64>)>;

fn live(model: &Model, now: u64) -> impl Iterator<Item = (&u32, &(u32, Option<u64>))> {
    model
        .iter()
        .filter(move |(_, (_, deadline))| deadline.is_none_or(|d| d > now))
}

#[test]
fn lifetimes_agree_with_model_under_random_ops() {
    let (seeds, ops) = if cfg!(miri) { (2, 300) } else { (20, 3_000) };
    for seed in 0..seeds {
        let (mut cache, clock) = cache();
        let mut model: Model = HashMap::new();
        let mut rng = SmallRng::new(seed);
        let ttls = [0, 1, 500, 1_000_000, 1_000_000_000, 60_000_000_000];
        for _ in 0..ops {
            let key = (rng.next_u64() % 40) as u32;
            let ttl = Duration::from_nanos(ttls[(rng.next_u64() % ttls.len() as u64) as usize]);
            let now = clock.now_nanos();
            match rng.next_u64() % 8 {
                0 => {
                    cache.insert(key, key);
                    model.insert(key, (key, None));
                }
                1 => {
                    cache.insert_with_ttl(key, key + 1, ttl);
                    if ttl.is_zero() {
                        model.remove(&key);
                    } else {
                        let deadline = now + ttl.as_nanos() as u64;
                        model.insert(key, (key + 1, Some(deadline)));
                    }
                }
                2 => {
                    let present = live(&model, now).any(|(k, _)| *k == key);
                    let changed = cache.set_expires_after(&key, Some(ttl));
                    assert_eq!(changed, present);
                    if present {
                        if ttl.is_zero() {
                            model.remove(&key);
                        } else {
                            model.get_mut(&key).unwrap().1 = Some(now + ttl.as_nanos() as u64);
                        }
                    }
                }
                3 => {
                    let present = live(&model, now).any(|(k, _)| *k == key);
                    assert_eq!(cache.set_expires_after(&key, None), present);
                    if present {
                        model.get_mut(&key).unwrap().1 = None;
                    }
                }
                4 => {
                    let removed = cache.remove(&key);
                    let expected = live(&model, now)
                        .find(|(k, _)| **k == key)
                        .map(|(_, v)| v.0);
                    assert_eq!(removed, expected);
                    model.remove(&key);
                }
                5 => {
                    let expected = live(&model, now)
                        .find(|(k, _)| **k == key)
                        .map(|(_, v)| v.0);
                    assert_eq!(cache.get(&key).copied(), expected);
                }
                6 => clock.advance(Duration::from_nanos(rng.next_u64() % 2_000_000)),
                _ => {
                    cache.run_pending_tasks();
                    model.retain(|_, (_, d)| d.is_none_or(|d| d > now));
                    let timed = model.values().filter(|(_, d)| d.is_some()).count();
                    assert_eq!(cache.len(), model.len(), "seed {seed}");
                    assert_eq!(cache.len_with_deadline(), timed, "seed {seed}");
                }
            }
            cache.validate();
            let now = clock.now_nanos();
            for key in 0..40 {
                let expected = live(&model, now)
                    .find(|(k, _)| **k == key)
                    .map(|(_, (_, d))| d.map(|d| Duration::from_nanos(d - now)));
                assert_eq!(cache.expires_after(&key), expected, "seed {seed} key {key}");
            }
        }
    }
}

#[test]
fn scan_visits_each_entry_once_and_none_expired() {
    let (mut cache, clock) = cache();
    for i in 0..100 {
        if i % 10 == 0 {
            cache.insert_with_ttl(i, i, secs(5));
        } else {
            cache.insert(i, i);
        }
    }
    clock.advance(secs(5));
    for count in [0, 1, 7, 100, 1_000] {
        let (mut cursor, mut seen) = (Some(0), Vec::new());
        let mut steps = 0;
        while let Some(at) = cursor {
            cursor = cache.scan(at, count, |k, v| {
                assert_eq!(k, v);
                seen.push(*k);
            });
            steps += 1;
        }
        seen.sort_unstable();
        let expected: Vec<u32> = (0..100).filter(|i| i % 10 != 0).collect();
        assert_eq!(seen, expected, "count {count}");
        // A count of 0 is taken as 1: one position a step.
        if count <= 1 {
            assert!(steps >= 90, "count {count}: {steps} steps");
        }
    }
    // A cursor past the end ends the scan.
    assert_eq!(
        cache.scan(usize::MAX, 10, |_, _| panic!("nothing there")),
        None
    );
    assert_eq!(
        cache.scan(100_000, 10, |_, _| panic!("nothing there")),
        None
    );
    cache.validate();
}

#[test]
fn scan_interleaved_with_writes_and_growth_sees_stayers_exactly_once() {
    for seed in 0..if cfg!(miri) { 3 } else { 30 } {
        let (mut cache, clock) = cache();
        let mut rng = SmallRng::new(seed);
        for i in 0..50 {
            cache.insert(i, i);
        }
        // Keys in the cache for the whole scan so far, and keys ever removed.
        let mut stayers: HashSet<u32> = (0..50).collect();
        let mut visited: HashMap<u32, u32> = HashMap::new();
        let mut next_key = 50;
        let mut cursor = Some(0);
        let bytes_before = cache.memory_bytes();
        let mut step = 0;
        while let Some(at) = cursor {
            let count = 1 + (rng.next_u64() % 8) as usize;
            cursor = cache.scan(at, count, |k, _| {
                *visited.entry(*k).or_default() += 1;
            });
            step += 1;
            if step == 2 {
                // A burst that makes the slab (and the table) grow mid-scan.
                for _ in 0..300 {
                    cache.insert(next_key, next_key);
                    next_key += 1;
                }
            }
            // Between steps: removals, reinsertions and enough inserts to grow the slab.
            for _ in 0..(rng.next_u64() % 6) {
                let key = (rng.next_u64() % next_key as u64) as u32;
                match rng.next_u64() % 4 {
                    0 => {
                        cache.remove(&key);
                        stayers.remove(&key);
                    }
                    1 => cache.insert_with_ttl(key, key, Duration::from_nanos(1)),
                    _ => {
                        cache.insert(next_key, next_key);
                        next_key += 1;
                    }
                }
                if !cache.contains_key(&key) {
                    stayers.remove(&key);
                }
            }
            clock.advance(Duration::from_nanos(1));
            for key in stayers.clone() {
                if !cache.contains_key(&key) {
                    stayers.remove(&key);
                }
            }
            cache.validate();
        }
        for key in &stayers {
            assert_eq!(visited.get(key), Some(&1), "seed {seed}: key {key}");
        }
        assert!(
            visited.values().all(|&n| n == 1),
            "seed {seed}: a key seen twice"
        );
        assert!(
            cache.memory_bytes() > bytes_before,
            "seed {seed}: no growth"
        );
    }
}

#[test]
fn random_entry_none_when_empty_or_all_expired() {
    let (mut cache, clock) = cache();
    assert!(cache.random_entry().is_none());
    cache.insert_with_ttl(1, 1, secs(1));
    cache.insert_with_ttl(2, 2, secs(1));
    assert!(cache.random_entry().is_some());
    clock.advance(secs(1));
    assert!(cache.random_entry().is_none(), "only expired entries");
    cache.insert(3, 3);
    assert_eq!(cache.random_entry(), Some((&3, &3)));
    cache.validate();
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 40,000 draws")]
fn random_entry_about_uniform_over_live_entries() {
    let (mut cache, _clock) = cache();
    for i in 0..20 {
        cache.insert(i, i);
    }
    let mut counts = [0u32; 20];
    for _ in 0..40_000 {
        let (k, v) = cache.random_entry().unwrap();
        assert_eq!(k, v);
        counts[*k as usize] += 1;
    }
    // 2,000 expected each; a standard deviation is about 44.
    for (key, n) in counts.iter().enumerate() {
        assert!((1_700..=2_300).contains(n), "key {key}: {n} of 40,000");
    }
}

#[test]
fn random_entry_sparse_slab_finds_every_live_entry() {
    let (mut cache, _clock) = cache();
    let (slots, draws) = if cfg!(miri) {
        (2_000, 200)
    } else {
        (10_000, 2_000)
    };
    let every = slots / 5;
    for i in 0..slots {
        cache.insert(i, i);
    }
    // Five live entries left in all those slots: the random tries mostly miss.
    for i in 0..slots {
        if i % every != 0 {
            cache.remove(&i);
        }
    }
    cache.validate();
    let mut seen = HashSet::new();
    for _ in 0..draws {
        let (k, _) = cache.random_entry().expect("live entries remain");
        assert_eq!(k % every, 0);
        seen.insert(*k);
    }
    assert_eq!(seen.len(), 5);
}

#[test]
fn len_including_expired_expired_not_removed_counted_until_removal() {
    let (mut cache, clock) = cache();
    cache.insert(1, 10);
    cache.insert_with_ttl(2, 20, secs(1));
    cache.insert_with_ttl(3, 30, secs(1));
    clock.advance(secs(2));
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.len_including_expired(), 3);
    assert!(!cache.is_empty());
    cache.remove(&1);
    assert!(cache.is_empty(), "only expired entries are held");
    assert_eq!(cache.len_including_expired(), 2);
    cache.run_pending_tasks();
    assert_eq!(cache.len_including_expired(), 0);
}

#[test]
fn drain_lru_cache_yields_coldest_first_and_empties_it() {
    let mut cache = Cache::builder()
        .max_capacity(4)
        .eviction_policy(crate::policy::EvictionPolicy::lru())
        .build()
        .unwrap();
    for i in 0..4u32 {
        cache.insert(i, i * 10);
    }
    cache.get(&1);
    cache.get(&0);
    let drained: Vec<(u32, u32, Option<Duration>)> = cache.drain().collect();
    assert_eq!(
        drained,
        vec![(2, 20, None), (3, 30, None), (1, 10, None), (0, 0, None)]
    );
    assert!(cache.is_empty());
    assert_eq!(cache.weighted_size(), 0);
    cache.insert(9, 90);
    assert_eq!(cache.get(&9), Some(&90), "usable after draining");
    cache.validate();
}

#[test]
fn drain_timed_entries_keep_lifetime_left_expired_removed_as_expired() {
    let clock = ManualClock::new();
    clock.set(secs(1));
    let removed = Arc::new(Mutex::new(Vec::new()));
    let heard = removed.clone();
    let mut cache = Cache::builder()
        .clock(clock.clone())
        .record_stats()
        .eviction_listener(move |k: &u32, _v: &u32, cause| heard.lock().unwrap().push((*k, cause)))
        .build()
        .unwrap();
    cache.insert_with_ttl(1, 10, secs(10));
    cache.insert_with_ttl(2, 20, secs(60));
    cache.insert(3, 30);
    clock.advance(secs(15));
    let mut drained: Vec<_> = cache.drain().collect();
    drained.sort();
    assert_eq!(drained, vec![(2, 20, Some(secs(45))), (3, 30, None)]);
    assert_eq!(*removed.lock().unwrap(), vec![(1, RemovalCause::Expired)]);
    assert_eq!(cache.stats().evictions_expired, 1);
    assert_eq!(cache.len_with_deadline(), 0);
    cache.validate();
}

#[test]
fn drain_dropped_early_empties_cache_silently() {
    let removed = Arc::new(Mutex::new(0));
    let heard = removed.clone();
    let mut cache = Cache::builder()
        .max_capacity(100)
        .eviction_listener(move |_: &u32, _: &u32, _| *heard.lock().unwrap() += 1)
        .build()
        .unwrap();
    for i in 0..50 {
        cache.insert(i, i);
    }
    let first: Vec<_> = cache.drain().take(5).collect();
    assert_eq!(first.len(), 5);
    assert!(cache.is_empty());
    assert_eq!(
        *removed.lock().unwrap(),
        0,
        "drained entries are not removals"
    );
    cache.validate();
}

#[test]
fn follow_policy_mode_runs_no_miniatures_adopts_leaders_mode() {
    let build = |follows: bool| {
        let builder = Cache::<u32, u32>::builder().max_capacity(2_000);
        let builder = if follows {
            builder.follow_policy_mode()
        } else {
            builder
        };
        builder.build().unwrap()
    };
    let (mut leader, mut follower) = (build(false), build(true));
    for i in 0..4_000 {
        leader.insert(i % 3_000, i);
        follower.insert(i % 3_000, i);
    }
    assert!(
        follower.memory_bytes() * 2 < leader.memory_bytes(),
        "follower {} leader {}",
        follower.memory_bytes(),
        leader.memory_bytes()
    );
    let start = follower
        .policy_mode()
        .expect("adaptive W-TinyLFU has a mode");
    let window = follower.window_capacity();
    let other = if start == 0 { 1 } else { 0 };
    follower.adopt_policy_mode(other);
    assert_eq!(follower.policy_mode(), Some(other));
    assert_ne!(
        follower.window_capacity(),
        window,
        "the window follows the mode"
    );
    let leads = leader.policy_mode().unwrap();
    follower.adopt_policy_mode(leads);
    assert_eq!(follower.policy_mode(), Some(leads));
    follower.validate();
}

#[test]
fn frequency_counts_uses_under_counting_policies_none_otherwise() {
    use crate::policy::EvictionPolicy;
    let build = |policy| {
        Cache::<u32, u32>::builder()
            .max_capacity(1_000)
            .eviction_policy(policy)
            .build()
            .unwrap()
    };
    for policy in [
        EvictionPolicy::tiny_lfu(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lfu(),
    ] {
        let mut cache = build(policy);
        cache.insert(1, 1);
        cache.insert(2, 2);
        for _ in 0..5 {
            cache.get(&1);
        }
        let (hot, cold) = (cache.frequency(&1).unwrap(), cache.frequency(&2).unwrap());
        assert!(hot > cold, "{policy:?}: {hot} vs {cold}");
        assert_eq!(cache.frequency(&3), None, "absent");
    }
    for policy in [
        EvictionPolicy::lru(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::random(),
    ] {
        let mut cache = build(policy);
        cache.insert(1, 1);
        assert_eq!(cache.frequency(&1), None, "{policy:?}");
    }
    let mut unbounded: Cache<u32, u32> = Cache::builder().build().unwrap();
    unbounded.insert(1, 1);
    assert_eq!(unbounded.frequency(&1), None);
}

/// A bounded cache of weighted entries that evicts only entries with a deadline.
fn expiring_only(policy: crate::policy::EvictionPolicy, clock: &ManualClock) -> Cache<u32, u32> {
    Cache::builder()
        .max_capacity(100)
        .weigher(|_: &u32, v: &u32| *v % 7 + 1)
        .eviction_policy(policy)
        .evict_only_expiring()
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn every_policy() -> Vec<crate::policy::EvictionPolicy> {
    use crate::policy::EvictionPolicy;
    vec![
        EvictionPolicy::tiny_lfu(),
        EvictionPolicy::tiny_lfu_static(),
        EvictionPolicy::lru(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::redis_lfu(),
        EvictionPolicy::random(),
    ]
}

#[test]
fn evict_only_expiring_keeps_untimed_entries_evicts_timed_ones() {
    for policy in every_policy() {
        let clock = ManualClock::new();
        let mut cache = expiring_only(policy, &clock);
        for i in 0..10 {
            cache.insert(i, 6); // weight 7 each: 70 untimed
        }
        for i in 100..200 {
            cache.insert_with_ttl(i, 6, secs(100));
        }
        for i in 0..10 {
            assert!(cache.contains_key(&i), "{policy:?}: untimed {i} evicted");
        }
        assert_eq!(cache.unevictable_weight(), 70, "{policy:?}");
        assert!(cache.weighted_size() <= 100, "{policy:?}");
        assert!(cache.stats().evictions_size > 0 || cache.len() < 110);
        // Untimed entries alone past the capacity: every timed one goes, and it stays over.
        for i in 10..20 {
            cache.insert(i, 6);
        }
        assert_eq!(cache.len_with_deadline(), 0, "{policy:?}");
        assert_eq!(cache.len(), 20, "{policy:?}");
        assert_eq!(cache.weighted_size(), 140);
        assert_eq!(cache.unevictable_weight(), 140);
        // A lifetime makes an entry evictable; clearing it pins it again.
        assert!(cache.set_expires_after(&0, Some(secs(10))));
        cache.insert(300, 0);
        assert!(
            !cache.contains_key(&0),
            "{policy:?}: now timed, so evictable"
        );
        cache.validate();
    }
}

#[test]
fn evict_only_expiring_random_operations_keep_invariants() {
    for (round, policy) in every_policy().into_iter().enumerate() {
        let clock = ManualClock::new();
        clock.set(secs(1));
        let mut cache = expiring_only(policy, &clock);
        let mut rng = SmallRng::new(round as u64 + 7);
        for step in 0..4_000 {
            let key = (rng.next_u64() % 64) as u32;
            let value = (rng.next_u64() % 50) as u32;
            match rng.next_u64() % 8 {
                0 | 1 => cache.insert(key, value),
                2 | 3 => cache.insert_with_ttl(key, value, secs(1 + rng.next_u64() % 20)),
                4 => {
                    cache.get(&key);
                }
                5 => {
                    let ttl = (rng.next_u64() % 2 == 0).then(|| secs(rng.next_u64() % 20));
                    cache.set_expires_after(&key, ttl);
                }
                6 => {
                    cache.remove(&key);
                }
                _ => clock.advance(secs(1)),
            }
            if step % 7 == 0 {
                cache.validate();
            }
        }
        cache.validate();
        let drained: Vec<_> = cache.drain().collect();
        assert!(cache.is_empty());
        assert!(drained.len() <= 64);
        cache.validate();
    }
}

#[test]
fn listen_only_to_evictions_hears_expired_and_size_not_removed_or_replaced() {
    let clock = ManualClock::new();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let mut cache = Cache::builder()
        .max_capacity(2)
        .clock(clock.clone())
        .eviction_policy(crate::policy::EvictionPolicy::lru())
        .eviction_listener(move |k: &u32, _: &u32, cause| log.lock().unwrap().push((*k, cause)))
        .listen_only_to_evictions()
        .record_stats()
        .build()
        .unwrap();
    cache.insert(1, 1);
    cache.insert(1, 2); // replaced: not heard
    cache.remove(&1); // removed: not heard
    cache.insert_with_ttl(2, 2, secs(1));
    cache.insert(3, 3);
    cache.insert(4, 4); // evicts 2 (LRU) for size
    cache.insert_with_ttl(5, 5, secs(1));
    clock.advance(secs(2));
    cache.run_pending_tasks(); // 5 expires
    cache.retain(|_, _| false); // removed: not heard
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 3, "{heard:?}");
    assert!(
        heard.iter().all(|(_, cause)| cause.was_evicted()),
        "{heard:?}"
    );
    assert!(heard.contains(&(5, RemovalCause::Expired)), "{heard:?}");
    assert_eq!(cache.stats().replacements, 1, "counted though not heard");
}

#[test]
fn split_minimums_small_cache_smaller_sketch_ages_sooner() {
    use crate::policy::EvictionPolicy;
    let build = |caches: usize| {
        Cache::<u32, u32>::builder()
            .max_capacity(100)
            .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(1))
            .split_minimums(caches)
            .build()
            .unwrap()
    };
    let (mut whole, mut split) = (build(1), build(32));
    for cache in [&mut whole, &mut split] {
        cache.insert(0, 0);
        for _ in 0..9 {
            cache.get(&0);
        }
        // 2,000 increments: past a 32nd of the whole minimum aging period (10,000), within it.
        for i in 1..2_000 {
            cache.insert(i, i);
        }
        cache.validate();
    }
    // The whole minimum table: 4,096 entries of 8 bytes.
    let sketch = 4_096 * 8;
    assert!(
        split.memory_bytes() + sketch - sketch / 32 <= whole.memory_bytes(),
        "split {} whole {}",
        split.memory_bytes(),
        whole.memory_bytes()
    );
    let (whole_count, split_count) = (whole.frequency(&0).unwrap(), split.frequency(&0).unwrap());
    assert!(whole_count >= 10, "no aging yet: {whole_count}");
    assert!(split_count <= 5, "aged at least once: {split_count}");
}

#[test]
fn redis_ttl_evicts_nearest_deadline_first_entries_without_one_last() {
    use crate::policy::EvictionPolicy;
    let mut cache = Cache::<u32, u32>::builder()
        .max_capacity(10)
        .eviction_policy(EvictionPolicy::redis_ttl().samples(64).with_seed(3))
        .build()
        .unwrap();
    let secs = Duration::from_secs;
    // Key 0 has no deadline; keys 1..10 expire sooner the higher they are.
    cache.insert(0, 0);
    for i in 1..10 {
        cache.insert_with_ttl(i, i, secs(1_000 - u64::from(i)));
    }
    cache.insert_with_ttl(10, 10, secs(5_000));
    assert!(!cache.contains_key(&9), "the nearest deadline goes first");
    // A lifetime changed later ranks by its new deadline.
    assert!(cache.set_expires_after(&2, Some(secs(1))));
    cache.insert_with_ttl(11, 11, secs(5_000));
    assert!(
        !cache.contains_key(&2),
        "key 2's new deadline is the nearest"
    );
    for i in 12..21 {
        cache.insert_with_ttl(i, i, secs(5_000));
    }
    assert!(
        cache.contains_key(&0),
        "an entry without a deadline goes last"
    );
    cache.validate();
}
