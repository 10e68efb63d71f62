//! Op-sequence property tests of `sync::Cache` (one thread) against simple models, validating
//! every invariant of every shard after each operation, loaders and the entry API included.

use std::time::Duration;

use crate::common;
use crate::common::all_policies;
use crate::common::expiry::{self, ExpiryModel};
use crate::common::removals::{shared_op, Model, Settings, SharedOp, SHARED_WEIGHT};
use cortado::policy::EvictionPolicy;
use cortado::sync::{Cache, Compute};
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
        1 => (any::<u8>(), any::<u16>(), 0..20u8).prop_map(|(k, v, t)| Op::InsertTtl(k % 40, v, t)),
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

/// W-TinyLFU with expiry over `shards` shards, against the [expiry model](common::expiry): what
/// is returned must be the latest value written, never expired, never removed, and the cache
/// never over capacity. With `idle`, entries also expire 10 s after their last read or write.
fn check_tiny_lfu_with_expiry(ops: &[Op], shards: usize, idle: bool) {
    let mut model = ExpiryModel::new(idle);
    let mut builder = Cache::builder()
        .max_capacity(10)
        .shards(shards)
        .time_to_live(Duration::from_secs(expiry::TTL))
        .clock(model.clock());
    if idle {
        builder = builder.time_to_idle(Duration::from_secs(expiry::TTI));
    }
    let cache = builder.build().unwrap();
    let mut max = 10u64;
    for op in ops {
        match *op {
            Op::Get(k) => model.read(k, cache.get(&k)),
            Op::Insert(k, v) => {
                cache.insert(k, v);
                model.insert(k, v);
            }
            Op::InsertTtl(k, v, t) => {
                cache.insert_with_ttl(k, v, Duration::from_secs(u64::from(t)));
                model.insert_with_ttl(k, v, u64::from(t));
            }
            Op::GetWith(k, v) => {
                let mut loaded = false;
                let got = cache.get_with(k, || {
                    loaded = true;
                    v
                });
                if loaded {
                    assert_eq!(got, v);
                    model.insert(k, v);
                } else {
                    assert_eq!(Some(got), model.live(k), "a hit on a stale value");
                    model.hit(k);
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
                    assert_eq!(Some(v), model.live(k), "computed from a stale value");
                }
                let next = seen.map_or(0, |v| v.wrapping_add(1));
                assert!(held.is_none() || held == Some(next));
                model.insert(k, next);
            }
            Op::Remove(k) => model.removed(k, cache.remove(&k)),
            Op::Advance(s) => model.advance(s),
            Op::Retain(m) => {
                cache.retain(|k, _| k % m != 0);
                model.retain_non_multiples(m);
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
                model.check_pending_run(cache.iter().map(|(k, _)| k));
            }
        }
        cache.validate();
        assert!(cache.weighted_size() <= max);
        assert_eq!(cache.max_capacity(), max);
        model.check_held(cache.iter());
    }
}

proptest! {
    #![proptest_config(common::proptest_config(192))]

    #[test]
    fn lru_one_shard_random_ops_match_model(ops in prop::collection::vec(op(), common::ops(200))) {
        check_lru(&ops);
    }

    #[test]
    fn tiny_lfu_sharded_with_expiry_never_stale_expired_or_over(
        ops in prop::collection::vec(op(), common::ops(300)),
        shards in prop::sample::select(vec![1usize, 2, 4]),
    ) {
        check_tiny_lfu_with_expiry(&ops, shards, false);
    }

    #[test]
    fn tiny_lfu_sharded_with_idle_expiry_never_stale_expired_or_over(
        ops in prop::collection::vec(op(), common::ops(300)),
        shards in prop::sample::select(vec![1usize, 2, 4]),
    ) {
        check_tiny_lfu_with_expiry(&ops, shards, true);
    }
}

#[derive(Debug, Clone)]
enum ROp {
    Shared(SharedOp),
    GetWith(u8, u8),
    Compute(u8, u8),
    ComputeRemove(u8),
    ComputeNop(u8),
    Upsert(u8, u8),
    /// A loader that fails (`try_get_with`) or finds nothing (`optionally_get_with`).
    LoadNothing(u8, bool),
}

fn removal_op() -> impl Strategy<Value = ROp> {
    prop_oneof![
        SHARED_WEIGHT => shared_op().prop_map(ROp::Shared),
        3 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::GetWith(k % 24, w)),
        1 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::Compute(k % 24, w)),
        1 => any::<u8>().prop_map(|k| ROp::ComputeRemove(k % 24)),
        1 => any::<u8>().prop_map(|k| ROp::ComputeNop(k % 24)),
        1 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::Upsert(k % 24, w)),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(k, failing)| ROp::LoadNothing(k % 24, failing)),
    ]
}

/// As `unsync_model`'s test of the same name, over `shards` shards, with loaders and the entry
/// API: runs `ops` against the [removal model](common::removals), which checks every report,
/// count and read after each.
fn check_removals(ops: &[ROp], shards: usize, policy: EvictionPolicy, settings: Settings) {
    let (mut model, builder) = Model::new(Cache::builder().shards(shards), policy, settings);
    let mut cache = builder.build().unwrap();
    for op in ops
        .iter()
        .chain(std::iter::once(&ROp::Shared(SharedOp::RunPending)))
    {
        match *op {
            ROp::Shared(ref shared) => model.apply(&mut cache, shared),
            ROp::GetWith(k, w) => {
                let id = model.next_id();
                let got = cache.get_with(k, || (id, w)).0;
                model.loaded(k, w, got);
            }
            ROp::Compute(k, w) => {
                let old_live = model.expect(k);
                let id = model.write(k, w, None);
                let mut seen = None;
                let held = cache.entry(k).and_compute_with(|v| {
                    seen = Some(v.map(|v| v.0));
                    Compute::Put((id, w))
                });
                assert_eq!(seen, Some(old_live), "compute {k} saw");
                assert!(held.is_none_or(|v| v.0 == id));
            }
            ROp::ComputeRemove(k) => {
                model.explicit();
                let held = cache.entry(k).and_compute_with(|_| Compute::Remove);
                assert_eq!(held, None);
            }
            ROp::ComputeNop(k) => {
                let live = model.expect(k);
                let held = cache.entry(k).and_compute_with(|v| {
                    assert_eq!(v.map(|v| v.0), live, "compute {k} saw");
                    Compute::Nop
                });
                assert_eq!(held.map(|v| v.0), live);
            }
            ROp::Upsert(k, w) => {
                let old_live = model.expect(k);
                let id = model.write(k, w, None);
                let written = cache.entry(k).and_upsert_with(|v| {
                    assert_eq!(v.map(|v| v.0), old_live, "upsert {k} saw");
                    (id, w)
                });
                assert_eq!(written.0, id);
            }
            ROp::LoadNothing(k, failing) => {
                let got = if failing {
                    cache.try_get_with(k, || Err("down")).ok().map(|v| v.0)
                } else {
                    cache.optionally_get_with(k, || None).map(|v| v.0)
                };
                model.load_failed(k, got);
            }
        }
        model.check(op, &cache);
    }
    model.finish();
}

proptest! {
    #![proptest_config(common::proptest_config(192))]

    #[test]
    fn removals_sharded_each_value_reported_once_and_counted(
        ops in prop::collection::vec(removal_op(), common::ops(300)),
        shards in prop::sample::select(vec![1usize, 2]),
        which in 0..7usize,
        ttl in any::<bool>(),
        tti in any::<bool>(),
        custom in any::<bool>(),
        weighted in any::<bool>(),
    ) {
        let policy = all_policies()[which];
        check_removals(&ops, shards, policy, Settings { ttl, tti, custom, weighted });
    }
}
