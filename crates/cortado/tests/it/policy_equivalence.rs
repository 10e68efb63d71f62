//! Op-sequence property tests of the policies other than W-TinyLFU through both front ends: a
//! one-shard `sync::Cache` decides exactly as an `unsync::Cache` with the same seed (reads reach
//! the policy in order through the read buffer on one thread), so both must evict the same
//! entries for the same causes, hold the same entries in the same eviction order, stay within
//! the capacity and validate after every operation.

use std::sync::{Arc, Mutex};

use crate::common;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    Insert(u8, u32),
    Remove(u8),
    Retain(u8),
    Resize(u64),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(|k| Op::Get(k % 40)),
        6 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k % 40, v)),
        2 => any::<u8>().prop_map(|k| Op::Remove(k % 40)),
        1 => (2..5u8).prop_map(Op::Retain),
        1 => prop_oneof![0..30u64, Just(u64::MAX), Just(u64::from(u32::MAX))].prop_map(Op::Resize),
        1 => Just(Op::Clear),
    ]
}

/// Mostly small weights, sometimes 0 or huge.
fn weight(value: u32) -> u32 {
    match value % 16 {
        0 => 0,
        1 => u32::MAX,
        2 => value,
        w => w % 5 + 1,
    }
}

type Log = Arc<Mutex<Vec<(u8, u32, RemovalCause)>>>;

fn policies() -> impl Strategy<Value = EvictionPolicy> {
    prop::sample::select(vec![
        EvictionPolicy::lru(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::redis_lfu(),
        EvictionPolicy::redis_lfu()
            .samples(1)
            .lfu_decay_period(3)
            .lfu_log_factor(0),
        EvictionPolicy::random(),
    ])
}

/// Keys hash the same way in both caches (the default hasher is randomly seeded, and W-TinyLFU's
/// sketch, ghost and miniatures key on the hash).
type Fixed = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

fn check(ops: &[Op], policy: EvictionPolicy, weighted: bool, max: u64) {
    let unsync_log: Log = Arc::default();
    let sync_log: Log = Arc::default();
    let sink = unsync_log.clone();
    let mut builder = cortado::unsync::Cache::builder()
        .max_capacity(max)
        .eviction_policy(policy)
        .hasher(Fixed::default())
        .eviction_listener(move |k: &u8, v: &u32, c| sink.lock().unwrap().push((*k, *v, c)));
    if weighted {
        builder = builder.weigher(|_: &u8, v: &u32| weight(*v));
    }
    let mut unsync = builder.build().unwrap();
    let sink = sync_log.clone();
    let mut builder = cortado::sync::Cache::builder()
        .max_capacity(max)
        .shards(1)
        .eviction_policy(policy)
        .hasher(Fixed::default())
        .eviction_listener(move |k: &u8, v: &u32, c| sink.lock().unwrap().push((*k, *v, c)));
    if weighted {
        builder = builder.weigher(|_: &u8, v: &u32| weight(*v));
    }
    let sync = builder.build().unwrap();
    let mut limit = max;
    for op in ops {
        match *op {
            Op::Get(k) => assert_eq!(unsync.get(&k).copied(), sync.get(&k), "{op:?}"),
            Op::Insert(k, v) => {
                unsync.insert(k, v);
                sync.insert(k, v);
            }
            Op::Remove(k) => assert_eq!(unsync.remove(&k), sync.remove(&k), "{op:?}"),
            Op::Retain(m) => {
                unsync.retain(|k, _| k % m != 0);
                sync.retain(|k, _| k % m != 0);
            }
            Op::Resize(n) => {
                limit = if weighted {
                    n
                } else {
                    n.min(u64::from(u32::MAX) - 1)
                };
                unsync.set_max_capacity(n);
                sync.set_max_capacity(n);
            }
            Op::Clear => {
                unsync.invalidate_all();
                sync.invalidate_all();
            }
        }
        unsync.run_pending_tasks();
        sync.run_pending_tasks();
        unsync.validate();
        sync.validate();
        let a = std::mem::take(&mut *unsync_log.lock().unwrap());
        let b = std::mem::take(&mut *sync_log.lock().unwrap());
        assert_eq!(a, b, "removals after {op:?}");
        assert!(
            unsync.weighted_size() <= limit,
            "unsync over capacity after {op:?}"
        );
        assert!(
            sync.weighted_size() <= limit,
            "sync over capacity after {op:?}"
        );
        assert_eq!(unsync.weighted_size(), sync.weighted_size(), "after {op:?}");
        let a: Vec<u8> = unsync.coldest(usize::MAX).into_iter().copied().collect();
        assert_eq!(a, sync.coldest(usize::MAX), "eviction order after {op:?}");
    }
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn one_shard_sync_random_ops_match_unsync(
        seed in any::<u64>(),
        policy in policies(),
        weighted in any::<bool>(),
        max in prop_oneof![0..20u64, Just(1u64), Just(u64::from(u32::MAX) - 1)],
        ops in prop::collection::vec(op(), common::ops(200)),
    ) {
        check(&ops, policy.with_seed(seed), weighted, max);
    }
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn tiny_lfu_one_shard_sync_random_ops_match_unsync(
        seed in any::<u64>(),
        adaptive in any::<bool>(),
        weighted in any::<bool>(),
        max in prop_oneof![0..20u64, Just(1u64), Just(u64::from(u32::MAX) - 1)],
        ops in prop::collection::vec(op(), common::ops(300)),
    ) {
        let policy = if adaptive {
            EvictionPolicy::tiny_lfu()
        } else {
            EvictionPolicy::tiny_lfu_static()
        };
        check(&ops, policy.with_seed(seed), weighted, max);
    }
}
