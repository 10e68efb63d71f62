//! Op-sequence property tests of `unsync::Cache` with the sampled policies (`redis-lru`,
//! `redis-lfu`, `redis-ttl`, `random`), validating every invariant after each operation.
//!
//! Sampled eviction picks its victims at random, so the model cannot say which entry goes; it
//! checks everything else: the cache holds exactly the model's entries minus those reported
//! evicted, evictions happen only on inserts and shrinks, only as many as needed to fit, and
//! never take the entry just inserted unless it alone is too heavy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::common;
use cortado::builder::BuildError;
use cortado::notification::RemovalCause;
use cortado::policy::{EvictionPolicy, PolicyError};
use cortado::unsync::Cache;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    Insert(u8, u16),
    Remove(u8),
    Retain(u8),
    Resize(u8),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(|k| Op::Get(k % 40)),
        6 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k % 40, v)),
        2 => any::<u8>().prop_map(|k| Op::Remove(k % 40)),
        1 => (2..5u8).prop_map(Op::Retain),
        1 => (1..30u8).prop_map(Op::Resize),
        1 => Just(Op::Clear),
    ]
}

/// Weights from 1 to 4, so a shrunken cache may hold a single entry or none.
fn weight(value: u16) -> u32 {
    u32::from(value % 4) + 1
}

type Log = Arc<Mutex<Vec<(u8, u16, RemovalCause)>>>;

fn check(ops: &[Op], policy: EvictionPolicy) {
    let log: Log = Arc::default();
    let sink = log.clone();
    let mut max = 16u64;
    let mut cache = Cache::builder()
        .max_capacity(max)
        .weigher(|_: &u8, v: &u16| weight(*v))
        .eviction_policy(policy)
        .eviction_listener(move |k: &u8, v: &u16, cause| sink.lock().unwrap().push((*k, *v, cause)))
        .build()
        .unwrap();
    let mut model: HashMap<u8, u16> = HashMap::new();
    for op in ops {
        let mut inserted = None;
        match *op {
            Op::Get(k) => assert_eq!(cache.get(&k).copied(), model.get(&k).copied()),
            Op::Insert(k, v) => {
                if model.insert(k, v).is_none() {
                    inserted = Some((k, v));
                }
                cache.insert(k, v);
            }
            Op::Remove(k) => assert_eq!(cache.remove(&k), model.remove(&k)),
            Op::Retain(m) => {
                cache.retain(|k, _| k % m != 0);
                model.retain(|k, _| k % m != 0);
            }
            Op::Resize(n) => {
                max = u64::from(n);
                cache.set_max_capacity(max);
            }
            Op::Clear => {
                cache.invalidate_all();
                model.clear();
            }
        }
        let mut heaviest_evicted = None;
        for (k, v, cause) in log.lock().unwrap().drain(..) {
            if cause != RemovalCause::Size {
                continue;
            }
            assert!(
                matches!(op, Op::Insert(..) | Op::Resize(_)),
                "eviction of {k} during {op:?}"
            );
            assert_eq!(
                model.remove(&k),
                Some(v),
                "evicted {k}={v} not in the model"
            );
            heaviest_evicted = heaviest_evicted.max(Some(weight(v)));
        }
        cache.validate();
        let mut held: Vec<(u8, u16)> = cache.iter().map(|(k, v)| (*k, *v)).collect();
        held.sort_unstable();
        let mut expected: Vec<(u8, u16)> = model.iter().map(|(k, v)| (*k, *v)).collect();
        expected.sort_unstable();
        assert_eq!(held, expected, "after {op:?}");
        let size = cache.weighted_size();
        assert!(size <= max, "over capacity: {size} > {max}");
        if let Some(w) = heaviest_evicted {
            assert!(size + u64::from(w) > max, "evicted more than needed");
        }
        if let Some((k, v)) = inserted {
            if u64::from(weight(v)) <= max {
                assert!(cache.contains_key(&k), "{k} evicted by its own insertion");
            }
        }
        assert_eq!(cache.coldest(usize::MAX).len(), cache.len());
    }
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn redis_lru_random_ops_match_model(seed in any::<u64>(), ops in prop::collection::vec(op(), common::ops(200))) {
        check(&ops, EvictionPolicy::redis_lru().with_seed(seed));
    }

    #[test]
    fn redis_lfu_random_ops_match_model(seed in any::<u64>(), ops in prop::collection::vec(op(), common::ops(200))) {
        check(&ops, EvictionPolicy::redis_lfu().with_seed(seed));
    }

    #[test]
    fn redis_lfu_short_decay_few_samples_match_model(seed in any::<u64>(), ops in prop::collection::vec(op(), common::ops(200))) {
        let policy = EvictionPolicy::redis_lfu().samples(1).lfu_decay_period(3).lfu_log_factor(0);
        check(&ops, policy.with_seed(seed));
    }

    #[test]
    fn redis_ttl_random_ops_match_model(seed in any::<u64>(), ops in prop::collection::vec(op(), common::ops(200))) {
        check(&ops, EvictionPolicy::redis_ttl().with_seed(seed));
    }

    #[test]
    fn random_random_ops_match_model(seed in any::<u64>(), ops in prop::collection::vec(op(), common::ops(200))) {
        check(&ops, EvictionPolicy::random().with_seed(seed));
    }
}

#[test]
fn build_rejects_sample_counts_out_of_range() {
    for samples in [0, 65] {
        let policy = EvictionPolicy::redis_lru().samples(samples);
        assert_eq!(
            policy.check(),
            Err(PolicyError::SamplesOutOfRange { requested: samples })
        );
        let built = Cache::<u8, u8>::builder()
            .max_capacity(10)
            .eviction_policy(policy)
            .build();
        let Err(err) = built else {
            panic!("{samples} samples accepted");
        };
        assert_eq!(
            err,
            BuildError::InvalidPolicy(PolicyError::SamplesOutOfRange { requested: samples })
        );
        assert!(err.to_string().contains(&samples.to_string()), "{err}");
    }
    assert!(EvictionPolicy::redis_lfu().samples(64).check().is_ok());
}

#[test]
fn sampled_policy_names() {
    assert_eq!(EvictionPolicy::redis_lru().name(), "redis-lru");
    assert_eq!(EvictionPolicy::redis_lfu().name(), "redis-lfu");
    assert_eq!(EvictionPolicy::redis_ttl().name(), "redis-ttl");
    assert_eq!(EvictionPolicy::random().name(), "random");
}
