//! Op-sequence property tests of `sync::Cache` (one thread) against simple models, validating
//! every invariant of every shard after each operation, loaders and the entry API included.

use std::collections::HashMap;
use std::time::Duration;

use cortado::policy::EvictionPolicy;
use cortado::sync::{Cache, Compute};
use cortado::time::ManualClock;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    Insert(u8, u16),
    InsertTtl(u8, u16, u8),
    GetWith(u8, u16),
    Increment(u8),
    Remove(u8),
    Advance(u8),
    Retain(u8),
    Resize(u8),
    InvalidateAll,
    RunPending,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(|k| Op::Get(k % 40)),
        6 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k % 40, v)),
        1 => (any::<u8>(), any::<u16>(), 1..20u8).prop_map(|(k, v, t)| Op::InsertTtl(k % 40, v, t)),
        2 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::GetWith(k % 40, v)),
        1 => any::<u8>().prop_map(|k| Op::Increment(k % 40)),
        2 => any::<u8>().prop_map(|k| Op::Remove(k % 40)),
        1 => (1..10u8).prop_map(Op::Advance),
        1 => (2..5u8).prop_map(Op::Retain),
        1 => (1..30u8).prop_map(Op::Resize),
        1 => Just(Op::InvalidateAll),
        1 => Just(Op::RunPending),
    ]
}

/// One shard of LRU must match a `Vec` in use order exactly, although reads reach the policy
/// through the read buffer.
fn check_lru(ops: &[Op]) {
    let cache = Cache::builder()
        .max_capacity(8)
        .shards(1)
        .eviction_policy(EvictionPolicy::lru())
        .build()
        .unwrap();
    let mut order: Vec<(u8, u16)> = Vec::new(); // least recent first
    let mut max = 8usize;
    let touch = |order: &mut Vec<(u8, u16)>, k: u8| {
        order.iter().position(|e| e.0 == k).map(|at| {
            let e = order.remove(at);
            order.push(e);
            e.1
        })
    };
    let put = |order: &mut Vec<(u8, u16)>, k: u8, v: u16, max: usize| {
        order.retain(|e| e.0 != k);
        order.push((k, v));
        while order.len() > max {
            order.remove(0);
        }
    };
    for op in ops {
        match *op {
            Op::Get(k) => {
                let expected = touch(&mut order, k);
                assert_eq!(cache.get(&k), expected);
            }
            Op::Insert(k, v) | Op::InsertTtl(k, v, _) => {
                // (no clock moves in this test, so a lifetime changes nothing)
                put(&mut order, k, v, max);
                cache.insert(k, v);
            }
            Op::GetWith(k, v) => {
                let expected = touch(&mut order, k).unwrap_or_else(|| {
                    put(&mut order, k, v, max);
                    v
                });
                assert_eq!(cache.get_with(k, || v), expected);
            }
            Op::Increment(k) => {
                let current = order.iter().find(|e| e.0 == k).map(|e| e.1);
                let next = current.map_or(0, |v| v.wrapping_add(1));
                put(&mut order, k, next, max);
                let held = cache
                    .entry(k)
                    .and_compute_with(|v| Compute::Put(v.map_or(0, |v| v.wrapping_add(1))));
                assert_eq!(held, (max > 0).then_some(next));
            }
            Op::Remove(k) => {
                let expected = order
                    .iter()
                    .position(|e| e.0 == k)
                    .map(|at| order.remove(at).1);
                assert_eq!(cache.remove(&k), expected);
            }
            Op::Retain(m) => {
                order.retain(|e| e.0 % m != 0);
                cache.retain(|k, _| k % m != 0);
            }
            Op::Resize(n) => {
                max = n as usize;
                while order.len() > max {
                    order.remove(0);
                }
                cache.set_max_capacity(u64::from(n));
            }
            Op::InvalidateAll => {
                order.clear();
                cache.invalidate_all();
            }
            Op::Advance(_) | Op::RunPending => cache.run_pending_tasks(),
        }
        cache.validate();
        let expected: Vec<u8> = order.iter().map(|e| e.0).collect();
        assert_eq!(cache.coldest(usize::MAX), expected);
    }
}

/// W-TinyLFU with expiry over `shards` shards: what may be present is not fixed, but what is
/// returned must be the latest value written, never expired, never removed, and the cache never
/// over capacity. With `idle`, entries also expire 10 s after their last read or write.
fn check_tiny_lfu_with_expiry(ops: &[Op], shards: usize, idle: bool) {
    let clock = ManualClock::new();
    let mut builder = Cache::builder()
        .max_capacity(10)
        .shards(shards)
        .time_to_live(Duration::from_secs(30))
        .clock(clock.clone());
    if idle {
        builder = builder.time_to_idle(Duration::from_secs(10));
    }
    let cache = builder.build().unwrap();
    let idle_for = |now: u64| if idle { now + 10 } else { u64::MAX };
    // key -> (value, deadline in seconds, idle deadline)
    let mut model: HashMap<u8, (u16, u64, u64)> = HashMap::new();
    let live = |model: &HashMap<u8, (u16, u64, u64)>, k: u8, now: u64| {
        model
            .get(&k)
            .filter(|e| e.1 > now && e.2 > now)
            .map(|e| e.0)
    };
    let mut now = 0u64;
    let mut max = 10u64;
    for op in ops {
        match *op {
            Op::Get(k) => {
                let got = cache.get(&k);
                match (got, model.get_mut(&k)) {
                    (Some(v), Some((expected, deadline, idle_deadline))) => {
                        assert_eq!(v, *expected, "stale value");
                        assert!(
                            *deadline > now && *idle_deadline > now,
                            "expired value returned"
                        );
                        *idle_deadline = idle_for(now);
                    }
                    (Some(v), None) => panic!("value {v} for absent key {k}"),
                    (None, _) => {}
                }
            }
            Op::Insert(k, v) => {
                cache.insert(k, v);
                model.insert(k, (v, now + 30, idle_for(now)));
            }
            Op::InsertTtl(k, v, t) => {
                cache.insert_with_ttl(k, v, Duration::from_secs(u64::from(t)));
                model.insert(k, (v, now + u64::from(t), idle_for(now)));
            }
            Op::GetWith(k, v) => {
                let mut loaded = false;
                let got = cache.get_with(k, || {
                    loaded = true;
                    v
                });
                if loaded {
                    assert_eq!(got, v);
                    model.insert(k, (v, now + 30, idle_for(now)));
                } else {
                    assert_eq!(Some(got), live(&model, k, now), "a hit on a stale value");
                    model.get_mut(&k).unwrap().2 = idle_for(now);
                }
            }
            Op::Increment(k) => {
                let mut seen = None;
                let held = cache.entry(k).and_compute_with(|current| {
                    seen = Some(current.copied());
                    Compute::Put(current.map_or(0, |v| v.wrapping_add(1)))
                });
                let seen = seen.expect("the closure ran");
                if let Some(v) = seen {
                    assert_eq!(Some(v), live(&model, k, now), "computed from a stale value");
                }
                let next = seen.map_or(0, |v| v.wrapping_add(1));
                assert!(held.is_none() || held == Some(next));
                model.insert(k, (next, now + 30, idle_for(now)));
            }
            Op::Remove(k) => {
                let got = cache.remove(&k);
                let expected = live(&model, k, now);
                model.remove(&k);
                if got.is_some() {
                    assert_eq!(got, expected);
                }
            }
            Op::Advance(s) => {
                now += u64::from(s);
                clock.advance(Duration::from_secs(u64::from(s)));
            }
            Op::Retain(m) => {
                cache.retain(|k, _| k % m != 0);
                model.retain(|k, _| k % m != 0);
            }
            Op::Resize(n) => {
                // At least one unit per shard.
                max = u64::from(n).max(shards as u64);
                cache.set_max_capacity(max);
            }
            Op::InvalidateAll => {
                cache.invalidate_all();
                model.clear();
                assert!(cache.is_empty());
            }
            Op::RunPending => {
                cache.run_pending_tasks();
                assert!(cache
                    .iter()
                    .all(|(k, _)| model.get(&k).is_some_and(|e| e.1 > now)));
            }
        }
        cache.validate();
        assert!(cache.weighted_size() <= max);
        assert_eq!(cache.max_capacity(), max);
        for (k, v) in cache.iter() {
            let (expected, deadline, idle_deadline) = model[&k];
            assert_eq!(v, expected);
            assert!(deadline > now && idle_deadline > now);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 192 }))]

    #[test]
    fn lru_one_shard_random_ops_match_model(ops in prop::collection::vec(op(), 1..200)) {
        check_lru(&ops);
    }

    #[test]
    fn tiny_lfu_sharded_with_expiry_never_stale_expired_or_over(
        ops in prop::collection::vec(op(), 1..300),
        shards in prop::sample::select(vec![1usize, 2, 4]),
    ) {
        check_tiny_lfu_with_expiry(&ops, shards, false);
    }

    #[test]
    fn tiny_lfu_sharded_with_idle_expiry_never_stale_expired_or_over(
        ops in prop::collection::vec(op(), 1..300),
        shards in prop::sample::select(vec![1usize, 2, 4]),
    ) {
        check_tiny_lfu_with_expiry(&ops, shards, true);
    }
}

#[derive(Debug, Clone)]
enum ROp {
    Get(u8),
    Peek(u8),
    Insert(u8, u8),
    InsertTtl(u8, u8, u8),
    Remove(u8),
    Advance(u8),
    AdvanceNanos(u8),
    Retain(u8),
    Resize(u8),
    InvalidateAll,
    RunPending,
    GetWith(u8, u8),
    Compute(u8, u8),
    ComputeRemove(u8),
}

fn removal_op() -> impl Strategy<Value = ROp> {
    prop_oneof![
        5 => any::<u8>().prop_map(|k| ROp::Get(k % 24)),
        2 => any::<u8>().prop_map(|k| ROp::Peek(k % 24)),
        6 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::Insert(k % 24, w)),
        2 => (any::<u8>(), 0..14u8, 1..20u8).prop_map(|(k, w, t)| ROp::InsertTtl(k % 24, w, t)),
        2 => any::<u8>().prop_map(|k| ROp::Remove(k % 24)),
        2 => (1..10u8).prop_map(ROp::Advance),
        1 => any::<u8>().prop_map(ROp::AdvanceNanos),
        1 => (2..5u8).prop_map(ROp::Retain),
        1 => (0..30u8).prop_map(ROp::Resize),
        1 => Just(ROp::InvalidateAll),
        1 => Just(ROp::RunPending),
        3 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::GetWith(k % 24, w)),
        1 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::Compute(k % 24, w)),
        1 => any::<u8>().prop_map(|k| ROp::ComputeRemove(k % 24)),
    ]
}

/// A custom expiry for [`check_removals`]: a new value lives 5 to 8 s by its weight, a
/// replacement keeps the deadline it replaces, and a read leaves at most 4 s.
struct ByWeight;

impl cortado::expiry::Expiry<u8, (u32, u8)> for ByWeight {
    fn expire_after_create(&self, _: &u8, v: &(u32, u8)) -> Option<Duration> {
        Some(Duration::from_secs(5 + u64::from(v.1 % 4)))
    }

    fn expire_after_read(
        &self,
        _: &u8,
        _: &(u32, u8),
        current: Option<Duration>,
    ) -> Option<Duration> {
        current.map(|c| c.min(Duration::from_secs(4)))
    }
}

/// As `unsync_model`'s test of the same name, over `shards` shards, with loaders and the entry API:
/// every value ever inserted (each a unique id, with its weight) is at any time either held or
/// reported to the listener exactly once, with the cause that fits what happened to it; the
/// stats count exactly what the listener heard, and hits and misses exactly what `get` saw.
fn check_removals(
    ops: &[ROp],
    shards: usize,
    policy: EvictionPolicy,
    ttl: bool,
    tti: bool,
    custom: bool,
    weighted: bool,
) {
    use cortado::notification::RemovalCause;
    use std::sync::{Arc, Mutex};

    type Reports = Arc<Mutex<Vec<(u8, u32, RemovalCause)>>>;
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    let clock = ManualClock::new();
    let mut builder = Cache::builder()
        .max_capacity(10)
        .shards(shards)
        .eviction_policy(policy)
        .clock(clock.clone())
        .record_stats()
        .eviction_listener(move |k: &u8, v: &(u32, u8), cause| {
            sink.lock().unwrap().push((*k, v.0, cause))
        });
    let (ttl, tti) = (ttl && !custom, tti && !custom);
    if weighted {
        builder = builder.weigher(|_: &u8, v: &(u32, u8)| u32::from(v.1));
    }
    if custom {
        builder = builder.expire_after(ByWeight);
    }
    if ttl {
        builder = builder.time_to_live(Duration::from_secs(30));
    }
    if tti {
        builder = builder.time_to_idle(Duration::from_secs(12));
    }
    let weight_of = |w: u8| if weighted { u64::from(w) } else { 1 };
    let idle = |now: u64| if tti { now + 12 * SEC } else { u64::MAX };
    let cache = builder.build().unwrap();
    // id -> (key, weight, deadline in seconds, reported cause, write deadline)
    let mut ids: Vec<(u8, u8, u64, Option<RemovalCause>, u64)> = Vec::new();
    let mut current: HashMap<u8, u32> = HashMap::new();
    const SEC: u64 = 1_000_000_000;
    let mut now = 0u64;
    let mut max = 10u64;
    let (mut hits, mut misses, mut loads) = (0u64, 0u64, 0u64);
    let mut counts: HashMap<RemovalCause, u64> = HashMap::new();
    let live = |ids: &Vec<(u8, u8, u64, Option<RemovalCause>, u64)>, id: u32, now: u64| {
        ids[id as usize].2 > now
    };
    for op in ops.iter().chain(std::iter::once(&ROp::RunPending)) {
        let mut explicit_ok = false;
        let mut replaced_id = None;
        // What the model expects `get`/`remove` to return.
        let expect = |current: &HashMap<u8, u32>, ids: &Vec<_>, k: u8| {
            current.get(&k).copied().filter(|&id| live(ids, id, now))
        };
        match *op {
            ROp::Get(k) => {
                let expected = expect(&current, &ids, k);
                let got = cache.get(&k).map(|v| v.0);
                assert_eq!(got, expected, "get {k}");
                if let Some(id) = got {
                    let entry = &mut ids[id as usize];
                    if custom {
                        entry.2 = now + (entry.2 - now).min(4 * SEC);
                    } else {
                        entry.2 = entry.4.min(idle(now));
                    }
                    hits += 1;
                } else {
                    misses += 1;
                }
            }
            ROp::Peek(k) => {
                let expected = expect(&current, &ids, k);
                assert_eq!(cache.peek(&k).map(|v| v.0), expected, "peek {k}");
                assert_eq!(cache.contains_key(&k), expected.is_some());
            }
            ROp::Insert(k, w) | ROp::InsertTtl(k, w, _) => {
                let id = ids.len() as u32;
                let old_live = current.get(&k).copied().filter(|&old| live(&ids, old, now));
                let deadline = match *op {
                    ROp::InsertTtl(_, _, t) => now + u64::from(t) * SEC,
                    _ if custom => old_live.map_or(now + (5 + u64::from(w % 4)) * SEC, |old| {
                        ids[old as usize].2
                    }),
                    _ if ttl => now + 30 * SEC,
                    _ => u64::MAX,
                };
                ids.push((k, w, deadline.min(idle(now)), None, deadline));
                replaced_id = current.insert(k, id);
                match *op {
                    ROp::InsertTtl(_, _, t) => {
                        cache.insert_with_ttl(k, (id, w), Duration::from_secs(u64::from(t)))
                    }
                    _ => cache.insert(k, (id, w)),
                }
            }
            ROp::Remove(k) => {
                let expected = expect(&current, &ids, k);
                let got = cache.remove(&k).map(|v| v.0);
                assert_eq!(got, expected, "remove {k}");
                explicit_ok = true;
            }
            ROp::Advance(s) => {
                now += u64::from(s) * SEC;
                clock.advance(Duration::from_secs(u64::from(s)));
            }
            ROp::AdvanceNanos(b) => {
                let by = (1u64 << (b % 45)) + u64::from(b);
                now += by;
                clock.advance(Duration::from_nanos(by));
            }
            ROp::Retain(m) => {
                cache.retain(|k, _| k % m != 0);
                explicit_ok = true;
            }
            ROp::Resize(n) => {
                max = u64::from(n);
                cache.set_max_capacity(max);
            }
            ROp::InvalidateAll => {
                cache.invalidate_all();
                explicit_ok = true;
            }
            ROp::RunPending => cache.run_pending_tasks(),
            ROp::GetWith(k, w) => {
                let expected = expect(&current, &ids, k);
                let id = ids.len() as u32;
                let got = cache.get_with(k, || (id, w)).0;
                if let Some(held) = expected {
                    assert_eq!(got, held, "get_with {k}");
                    let entry = &mut ids[held as usize];
                    if custom {
                        entry.2 = now + (entry.2 - now).min(4 * SEC);
                    } else {
                        entry.2 = entry.4.min(idle(now));
                    }
                    hits += 1;
                } else {
                    assert_eq!(got, id, "get_with {k} loads");
                    misses += 1;
                    loads += 1;
                    let deadline = if custom {
                        now + (5 + u64::from(w % 4)) * SEC
                    } else if ttl {
                        now + 30 * SEC
                    } else {
                        u64::MAX
                    };
                    ids.push((k, w, deadline.min(idle(now)), None, deadline));
                    replaced_id = current.insert(k, id);
                }
            }
            ROp::Compute(k, w) => {
                let id = ids.len() as u32;
                let old_live = current.get(&k).copied().filter(|&old| live(&ids, old, now));
                let deadline = match () {
                    _ if custom => old_live.map_or(now + (5 + u64::from(w % 4)) * SEC, |old| {
                        ids[old as usize].2
                    }),
                    _ if ttl => now + 30 * SEC,
                    _ => u64::MAX,
                };
                ids.push((k, w, deadline.min(idle(now)), None, deadline));
                replaced_id = current.insert(k, id);
                let mut seen = None;
                let held = cache.entry(k).and_compute_with(|v| {
                    seen = Some(v.map(|v| v.0));
                    Compute::Put((id, w))
                });
                assert_eq!(seen, Some(old_live), "compute {k} saw");
                assert!(held.is_none_or(|v| v.0 == id));
            }
            ROp::ComputeRemove(k) => {
                let held = cache.entry(k).and_compute_with(|_| Compute::Remove);
                assert_eq!(held, None);
                explicit_ok = true;
            }
        }
        for (k, id, cause) in std::mem::take(&mut *reports.lock().unwrap()) {
            let entry = &mut ids[id as usize];
            assert_eq!(entry.0, k, "id {id} reported under another key");
            assert_eq!(entry.3, None, "id {id} reported twice: {op:?}, {cause:?}");
            entry.3 = Some(cause);
            *counts.entry(cause).or_default() += 1;
            let alive = entry.2 > now;
            match cause {
                RemovalCause::Expired => assert!(!alive, "id {id} expired early: {op:?}"),
                RemovalCause::Size => assert!(alive, "expired id {id} reported Size: {op:?}"),
                RemovalCause::Explicit => {
                    assert!(explicit_ok && alive, "id {id} Explicit by {op:?}")
                }
                RemovalCause::Replaced => {
                    assert!(alive, "expired id {id} reported Replaced: {op:?}");
                    assert_eq!(replaced_id, Some(id), "id {id} Replaced by {op:?}")
                }
            }
            if current.get(&k) == Some(&id) {
                current.remove(&k);
            }
        }
        // The replaced value is gone, reported by now.
        if let Some(old) = replaced_id {
            assert!(
                ids[old as usize].3.is_some(),
                "replaced id {old} never reported"
            );
        }
        cache.validate();
        let stats = cache.stats();
        let count = |c| counts.get(&c).copied().unwrap_or(0);
        assert_eq!(stats.hits, hits, "hits after {op:?}");
        assert_eq!(stats.misses, misses, "misses after {op:?}");
        assert_eq!(stats.load_successes, loads, "loads after {op:?}");
        assert_eq!(stats.load_failures, 0, "load failures after {op:?}");
        assert_eq!(stats.evictions_size, count(RemovalCause::Size), "{op:?}");
        assert_eq!(
            stats.evictions_expired,
            count(RemovalCause::Expired),
            "{op:?}"
        );
        assert_eq!(
            stats.removals_explicit,
            count(RemovalCause::Explicit),
            "{op:?}"
        );
        assert_eq!(stats.replacements, count(RemovalCause::Replaced), "{op:?}");
        // Unreported values are exactly those held.
        assert_eq!(cache.len(), current.len(), "held after {op:?}");
        let weight: u64 = current
            .values()
            .map(|&id| weight_of(ids[id as usize].1))
            .sum();
        assert_eq!(cache.weighted_size(), weight, "weighted size after {op:?}");
        assert!(weight <= max);
        let mut seen: Vec<u32> = cache.iter().map(|(_, v)| v.0).collect();
        seen.sort_unstable();
        let mut expected: Vec<u32> = current
            .values()
            .copied()
            .filter(|&id| live(&ids, id, now))
            .collect();
        expected.sort_unstable();
        assert_eq!(seen, expected, "iter after {op:?}");
    }
    for (id, entry) in ids.iter().enumerate() {
        assert!(
            entry.3.is_some() || entry.2 > now,
            "expired id {id} never reported"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 192 }))]

    #[test]
    fn removals_sharded_each_value_reported_once_and_counted(
        ops in prop::collection::vec(removal_op(), 1..300),
        shards in prop::sample::select(vec![1usize, 2]),
        which in 0..7usize,
        ttl in any::<bool>(),
        tti in any::<bool>(),
        custom in any::<bool>(),
        weighted in any::<bool>(),
    ) {
        let policy = [
            EvictionPolicy::tiny_lfu(),
            EvictionPolicy::tiny_lfu_static(),
            EvictionPolicy::lru(),
            EvictionPolicy::lfu(),
            EvictionPolicy::redis_lru(),
            EvictionPolicy::redis_lfu(),
            EvictionPolicy::random(),
        ][which];
        check_removals(&ops, shards, policy, ttl, tti, custom, weighted);
    }
}
