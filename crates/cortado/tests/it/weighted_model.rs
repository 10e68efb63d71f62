//! Weighted caches against a model: after every operation the entries held are the model's
//! (inserts, replacements and removals, less what the listener heard evicted), the weighted size
//! is the sum of the weigher over them and fits the capacity; a replaced value is heard as
//! `Replaced`, and nothing is evicted for size while the model's total fits (one shard).
//! `GetMut` changes a held value, and so its weight, in place through the unsync cache's
//! `get_mut` (nothing is replaced); the sync cache, which has none, puts over a held value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::common;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::sync::Compute;
use proptest::prelude::*;

type Log = Arc<Mutex<Vec<(u8, u32, RemovalCause)>>>;

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, u32),
    Remove(u8),
    Get(u8),
    SetMax(u64),
    Put(u8, u32),
    Del(u8),
    Upsert(u8, u32),
    GetWith(u8, u32),
    Retain(u32),
    GetMut(u8, u32),
}

fn weight() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..40, 1 => Just(0u32), 1 => Just(u32::MAX), 1 => 90u32..130]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..10;
    prop_oneof![
        6 => (k.clone(), weight()).prop_map(|(k, w)| Op::Insert(k, w)),
        1 => k.clone().prop_map(Op::Remove),
        2 => k.clone().prop_map(Op::Get),
        1 => prop_oneof![0u64..150, Just(u64::MAX), Just(u64::MAX - 1)].prop_map(Op::SetMax),
        2 => (k.clone(), weight()).prop_map(|(k, w)| Op::Put(k, w)),
        1 => k.clone().prop_map(Op::Del),
        2 => (k.clone(), weight()).prop_map(|(k, w)| Op::Upsert(k, w)),
        2 => (k.clone(), weight()).prop_map(|(k, w)| Op::GetWith(k, w)),
        1 => (0u32..40).prop_map(Op::Retain),
        2 => (k.clone(), weight()).prop_map(|(k, w)| Op::GetMut(k, w)),
    ]
}

fn policies() -> Vec<EvictionPolicy> {
    vec![
        EvictionPolicy::tiny_lfu(),
        EvictionPolicy::tiny_lfu_static(),
        EvictionPolicy::lru(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::random(),
        EvictionPolicy::redis_lfu(),
    ]
}

/// Applies removals heard by the listener to the model, checking each names a held value.
fn hear(model: &mut HashMap<u8, u32>, log: &Log, op: &Op, replaced: Option<(u8, u32)>) {
    let events: Vec<_> = std::mem::take(&mut *log.lock().unwrap());
    let mut replaced = replaced;
    for (k, v, cause) in events {
        match cause {
            RemovalCause::Replaced => {
                assert_eq!(
                    replaced.take(),
                    Some((k, v)),
                    "unexpected Replaced after {op:?}"
                );
            }
            RemovalCause::Size => {
                assert_eq!(
                    model.get(&k),
                    Some(&v),
                    "Size for unheld {k}={v} after {op:?}"
                );
                model.remove(&k);
            }
            RemovalCause::Explicit => {
                assert_eq!(model.get(&k), Some(&v), "Explicit for unheld after {op:?}");
                model.remove(&k);
            }
            other => panic!("unexpected cause {other:?} after {op:?}"),
        }
    }
    assert_eq!(replaced, None, "missing Replaced after {op:?}");
}

fn check_unsync(ops: &[Op], policy: EvictionPolicy, max: u64) {
    let log = Log::default();
    let l = log.clone();
    let mut c: cortado::unsync::Cache<u8, u32> = cortado::unsync::Cache::builder()
        .max_capacity(max)
        .eviction_policy(policy)
        .weigher(|_, v: &u32| *v)
        .eviction_listener(move |k, v, cause| l.lock().unwrap().push((*k, *v, cause)))
        .build()
        .unwrap();
    let mut model: HashMap<u8, u32> = HashMap::new();
    for op in ops {
        let mut replaced = None;
        match *op {
            Op::Insert(k, w) | Op::Put(k, w) | Op::Upsert(k, w) => {
                replaced = model.insert(k, w).map(|old| (k, old));
                c.insert(k, w);
            }
            Op::GetWith(k, w) => {
                model.entry(k).or_insert(w);
                c.get_or_insert_with(k, || w);
            }
            Op::Remove(k) | Op::Del(k) => {
                assert_eq!(c.remove(&k), model.get(&k).copied());
                let _ = std::mem::take(&mut *log.lock().unwrap());
                model.remove(&k);
            }
            Op::Get(k) => {
                assert_eq!(c.get(&k).copied(), model.get(&k).copied(), "{op:?}");
            }
            Op::GetMut(k, w) => {
                let held = model.get(&k).copied();
                if held.is_some() {
                    model.insert(k, w);
                }
                let got = c.get_mut(&k).map(|mut v| std::mem::replace(&mut *v, w));
                assert_eq!(got, held, "{op:?}");
            }
            Op::SetMax(m) => c.set_max_capacity(m),
            Op::Retain(t) => {
                c.retain(|_, v| *v < t);
                model.retain(|_, v| *v < t);
                let _ = std::mem::take(&mut *log.lock().unwrap());
            }
        }
        no_size_eviction_while_it_fits(&model, &log, c.max_capacity(), op);
        hear(&mut model, &log, op, replaced);
        c.validate();
        let held = c.iter().map(|(k, v)| (*k, *v)).collect();
        check_held(held, &model, c.weighted_size(), c.max_capacity(), op);
    }
}

fn check_sync(ops: &[Op], policy: EvictionPolicy, max: u64, shards: Option<usize>) {
    let log = Log::default();
    let l = log.clone();
    let mut b = cortado::sync::Cache::builder()
        .max_capacity(max)
        .eviction_policy(policy)
        .weigher(|_, v: &u32| *v)
        .eviction_listener(move |k: &u8, v: &u32, cause| l.lock().unwrap().push((*k, *v, cause)));
    if let Some(n) = shards {
        b = b.shards(n);
    }
    let c: cortado::sync::Cache<u8, u32> = b.build().unwrap();
    let mut model: HashMap<u8, u32> = HashMap::new();
    for op in ops {
        let mut replaced = None;
        match *op {
            Op::Insert(k, w) | Op::Put(k, w) | Op::Upsert(k, w) => {
                replaced = model.insert(k, w).map(|old| (k, old));
                match op {
                    Op::Insert(..) => c.insert(k, w),
                    Op::Put(..) => {
                        c.entry(k).and_compute_with(|_| Compute::Put(w));
                    }
                    _ => assert_eq!(c.entry(k).and_upsert_with(|_| w), w),
                }
            }
            Op::GetWith(k, w) => {
                let want = *model.entry(k).or_insert(w);
                assert_eq!(c.get_with(k, || w), want, "{op:?}");
            }
            Op::Remove(k) => {
                assert_eq!(c.remove(&k), model.get(&k).copied());
                let _ = std::mem::take(&mut *log.lock().unwrap());
                model.remove(&k);
            }
            Op::Del(k) => {
                c.entry(k).and_compute_with(|_| Compute::Remove);
                hear(&mut model, &log, op, None);
                model.remove(&k);
            }
            Op::Get(k) => {
                assert_eq!(c.get(&k), model.get(&k).copied(), "{op:?}");
            }
            Op::GetMut(k, w) => {
                if let Some(old) = model.get(&k).copied() {
                    replaced = Some((k, old));
                    model.insert(k, w);
                }
                c.entry(k).and_compute_with(|held| match held {
                    Some(_) => Compute::Put(w),
                    None => Compute::Nop,
                });
            }
            Op::SetMax(m) => c.set_max_capacity(m),
            Op::Retain(t) => {
                c.retain(|_, v| *v < t);
                model.retain(|_, v| *v < t);
                let _ = std::mem::take(&mut *log.lock().unwrap());
            }
        }
        if shards == Some(1) {
            no_size_eviction_while_it_fits(&model, &log, c.max_capacity(), op);
        }
        hear(&mut model, &log, op, replaced);
        assert!(
            c.weighted_size() <= c.max_capacity(),
            "bound before maintenance after {op:?}"
        );
        c.run_pending_tasks();
        hear(&mut model, &log, op, None);
        c.validate();
        check_held(
            c.iter().collect(),
            &model,
            c.weighted_size(),
            c.max_capacity(),
            op,
        );
    }
}

/// Nothing was evicted for size by `op` if what the model holds fits `max` (one shard).
fn no_size_eviction_while_it_fits(model: &HashMap<u8, u32>, log: &Log, max: u64, op: &Op) {
    let fits: u64 = model.values().map(|&v| u64::from(v)).sum();
    if fits <= max {
        let sizes: Vec<_> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.2 == RemovalCause::Size)
            .cloned()
            .collect();
        assert!(
            sizes.is_empty(),
            "evicted {sizes:?} though {fits} fits after {op:?}"
        );
    }
}

/// The cache holds exactly the model's entries, weighs their sum and fits `max`.
fn check_held(
    mut held: Vec<(u8, u32)>,
    model: &HashMap<u8, u32>,
    weighted_size: u64,
    max: u64,
    op: &Op,
) {
    held.sort();
    let mut want: Vec<(u8, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
    want.sort();
    assert_eq!(held, want, "contents after {op:?}");
    let sum: u64 = want.iter().map(|&(_, v)| u64::from(v)).sum();
    assert_eq!(weighted_size, sum, "weighted_size after {op:?}");
    assert!(weighted_size <= max, "bound after {op:?}");
}

proptest! {
    #![proptest_config(common::proptest_config(128))]

    #[test]
    fn unsync_weighted_ops_match_model(ops in prop::collection::vec(op(), common::ops(60)), p in 0usize..7, max in 0u64..150) {
        check_unsync(&ops, policies()[p], max);
    }

    #[test]
    fn sync_one_shard_weighted_ops_match_model(ops in prop::collection::vec(op(), common::ops(60)), p in 0usize..7, max in 1u64..150) {
        check_sync(&ops, policies()[p], max, Some(1));
    }

    #[test]
    fn sync_four_shards_weighted_ops_match_model(ops in prop::collection::vec(op(), common::ops(60)), p in 0usize..7, max in 4u64..150) {
        check_sync(&ops, policies()[p], max, Some(4));
    }

    #[test]
    fn sync_default_shards_weighted_ops_match_model(ops in prop::collection::vec(op(), common::ops(60)), p in 0usize..7, max in 0u64..2000) {
        check_sync(&ops, policies()[p], max, None);
    }
}
