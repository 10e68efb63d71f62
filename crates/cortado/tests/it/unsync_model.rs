//! Op-sequence property tests of `unsync::Cache` against simple models, validating every invariant
//! after each operation.

use std::collections::HashMap;
use std::time::Duration;

use crate::common;
use crate::common::all_policies;
use crate::common::expiry::{self, ExpiryModel};
use crate::common::removals::{shared_op, Model, Settings, SharedOp, SHARED_WEIGHT};
use cortado::policy::EvictionPolicy;
use cortado::unsync::Cache;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    /// `get_mut` of the key, setting the value.
    GetMut(u8, u16),
    Insert(u8, u16),
    InsertTtl(u8, u16, u8),
    Remove(u8),
    Advance(u8),
    Retain(u8),
    Resize(u8),
    RunPending,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(|k| Op::Get(k % 40)),
        3 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::GetMut(k % 40, v)),
        6 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k % 40, v)),
        1 => (any::<u8>(), any::<u16>(), 0..20u8).prop_map(|(k, v, t)| Op::InsertTtl(k % 40, v, t)),
        2 => any::<u8>().prop_map(|k| Op::Remove(k % 40)),
        1 => (1..10u8).prop_map(Op::Advance),
        1 => (2..5u8).prop_map(Op::Retain),
        1 => (1..30u8).prop_map(Op::Resize),
        1 => Just(Op::RunPending),
    ]
}

/// LRU must match a `Vec` in use order exactly.
fn check_lru(ops: &[Op]) {
    let mut cache = Cache::builder()
        .max_capacity(8)
        .eviction_policy(EvictionPolicy::lru())
        .build()
        .unwrap();
    let mut order: Vec<(u8, u16)> = Vec::new(); // least recent first
    let mut max = 8usize;
    for op in ops {
        match *op {
            Op::Get(k) => {
                let expected = order.iter().position(|e| e.0 == k).map(|at| {
                    let e = order.remove(at);
                    order.push(e);
                    e.1
                });
                assert_eq!(cache.get(&k).copied(), expected);
            }
            Op::GetMut(k, v) => {
                let expected = order.iter().position(|e| e.0 == k).map(|at| {
                    let e = order.remove(at);
                    order.push((k, v));
                    e.1
                });
                assert_eq!(get_mut_set(&mut cache, k, v), expected);
            }
            Op::Insert(k, v) | Op::InsertTtl(k, v, _) => {
                // (no clock moves in this test, so a lifetime changes nothing)
                order.retain(|e| e.0 != k);
                order.push((k, v));
                while order.len() > max {
                    order.remove(0);
                }
                cache.insert(k, v);
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
            Op::Advance(_) | Op::RunPending => cache.run_pending_tasks(),
        }
        cache.validate();
        let coldest: Vec<u8> = cache.coldest(usize::MAX).into_iter().copied().collect();
        let expected: Vec<u8> = order.iter().map(|e| e.0).collect();
        assert_eq!(coldest, expected);
    }
}

/// The classic LFU cache, naively: evict the least used key, the least recently used among
/// equals, before inserting a new key; get and put both count as uses.
#[derive(Default)]
struct NaiveLfu {
    entries: HashMap<u8, (u16, u64, u64)>, // value, uses, last use tick
    tick: u64,
}

/// A use of `k` by a naive model: the tick advances, and a held entry counts the use and
/// remembers the tick; its value, if held.
fn use_entry(entries: &mut HashMap<u8, (u16, u64, u64)>, tick: &mut u64, k: u8) -> Option<u16> {
    *tick += 1;
    let e = entries.get_mut(&k)?;
    e.1 += 1;
    e.2 = *tick;
    Some(e.0)
}

/// A `get_mut` of `k` that sets its value to `v`: the value it found.
fn get_mut_set<S: std::hash::BuildHasher>(
    cache: &mut Cache<u8, u16, S>,
    k: u8,
    v: u16,
) -> Option<u16> {
    cache
        .get_mut(&k)
        .map(|mut value| std::mem::replace(&mut *value, v))
}

impl NaiveLfu {
    fn touch(&mut self, k: u8) -> Option<u16> {
        use_entry(&mut self.entries, &mut self.tick, k)
    }

    fn victim(&self, spare: Option<u8>) -> Option<u8> {
        self.entries
            .iter()
            .filter(|(k, _)| Some(**k) != spare)
            .min_by_key(|(_, e)| (e.1, e.2))
            .map(|(k, _)| *k)
    }

    fn put(&mut self, k: u8, v: u16, max: usize) {
        if self.touch(k).is_some() {
            self.entries.get_mut(&k).unwrap().0 = v;
            return;
        }
        self.entries.insert(k, (v, 1, self.tick));
        while self.entries.len() > max {
            let victim = self.victim(Some(k)).unwrap_or(k);
            self.entries.remove(&victim);
        }
    }
}

fn check_lfu(ops: &[Op]) {
    let mut cache = Cache::builder()
        .max_capacity(6)
        .eviction_policy(EvictionPolicy::lfu())
        .build()
        .unwrap();
    let mut model = NaiveLfu::default();
    for op in ops {
        match *op {
            Op::Get(k) => assert_eq!(cache.get(&k).copied(), model.touch(k)),
            Op::GetMut(k, v) => {
                let expected = model.touch(k);
                if expected.is_some() {
                    model.entries.get_mut(&k).unwrap().0 = v;
                }
                assert_eq!(get_mut_set(&mut cache, k, v), expected);
            }
            Op::Insert(k, v) | Op::InsertTtl(k, v, _) => {
                model.put(k, v, 6);
                cache.insert(k, v);
            }
            Op::Remove(k) => {
                assert_eq!(cache.remove(&k), model.entries.remove(&k).map(|e| e.0));
            }
            _ => {}
        }
        cache.validate();
        let mut keys: Vec<u8> = cache.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let mut expected: Vec<u8> = model.entries.keys().copied().collect();
        expected.sort_unstable();
        assert_eq!(keys, expected);
        if let Some(victim) = model.victim(None) {
            assert_eq!(cache.coldest(1), vec![&victim]);
        }
    }
}

/// Weighted LFU and LRU, naively: `rank` orders the entries (lowest goes first); an entry
/// heavier than the capacity goes alone at once; otherwise a new key's insertion evicts the
/// lowest others until the total fits (the new key last), and a heavier replacement or a
/// shrink evicts the lowest of all.
#[derive(Default)]
struct NaiveWeighted {
    entries: HashMap<u8, (u16, u64, u64)>, // value, uses, last use tick
    tick: u64,
    max: u64,
    lfu: bool,
}

fn weight_of(v: u16) -> u64 {
    u64::from(v % 5)
}

impl NaiveWeighted {
    fn size(&self) -> u64 {
        self.entries.values().map(|e| weight_of(e.0)).sum()
    }

    fn touch(&mut self, k: u8) -> Option<u16> {
        use_entry(&mut self.entries, &mut self.tick, k)
    }

    fn evict(&mut self, spare: Option<u8>, evicted: &mut Vec<u8>) {
        while self.size() > self.max {
            let lfu = self.lfu;
            let victim = self
                .entries
                .iter()
                .filter(|(k, _)| Some(**k) != spare)
                .min_by_key(|(_, e)| if lfu { (e.1, e.2) } else { (0, e.2) })
                .map(|(k, _)| *k)
                .or(spare)
                .unwrap();
            self.entries.remove(&victim);
            evicted.push(victim);
        }
    }

    fn put(&mut self, k: u8, v: u16, evicted: &mut Vec<u8>) {
        let new = self.touch(k).is_none();
        if new {
            self.entries.insert(k, (v, 1, self.tick));
        } else {
            self.entries.get_mut(&k).unwrap().0 = v;
        }
        if weight_of(v) > self.max {
            self.entries.remove(&k);
            evicted.push(k);
            return;
        }
        self.evict(new.then_some(k), evicted);
    }
}

fn check_weighted(ops: &[Op], lfu: bool) {
    let evictions = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = evictions.clone();
    let mut cache = Cache::builder()
        .max_capacity(10)
        .weigher(|_: &u8, v: &u16| u32::from(v % 5))
        .eviction_policy(if lfu {
            EvictionPolicy::lfu()
        } else {
            EvictionPolicy::lru()
        })
        .eviction_listener(move |k: &u8, _: &u16, cause| {
            if cause == cortado::notification::RemovalCause::Size {
                sink.lock().unwrap().push(*k);
            }
        })
        .build()
        .unwrap();
    let mut model = NaiveWeighted {
        max: 10,
        lfu,
        ..NaiveWeighted::default()
    };
    for op in ops {
        let mut expected = Vec::new();
        match *op {
            Op::Get(k) => assert_eq!(cache.get(&k).copied(), model.touch(k)),
            Op::GetMut(k, v) => {
                // As a replacement: one use, then the new weight's evictions.
                let held = model.entries.get(&k).map(|e| e.0);
                if held.is_some() {
                    model.put(k, v, &mut expected);
                } else {
                    model.touch(k);
                }
                assert_eq!(get_mut_set(&mut cache, k, v), held);
            }
            Op::Insert(k, v) | Op::InsertTtl(k, v, _) => {
                model.put(k, v, &mut expected);
                cache.insert(k, v);
            }
            Op::Remove(k) => {
                assert_eq!(cache.remove(&k), model.entries.remove(&k).map(|e| e.0));
            }
            Op::Retain(m) => {
                model.entries.retain(|k, _| k % m != 0);
                cache.retain(|k, _| k % m != 0);
            }
            Op::Resize(n) => {
                model.max = u64::from(n);
                model.evict(None, &mut expected);
                cache.set_max_capacity(u64::from(n));
            }
            Op::Advance(_) | Op::RunPending => cache.run_pending_tasks(),
        }
        cache.validate();
        assert_eq!(
            std::mem::take(&mut *evictions.lock().unwrap()),
            expected,
            "evicted by {op:?}"
        );
        assert_eq!(cache.weighted_size(), model.size());
        let mut keys: Vec<u8> = cache.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let mut held: Vec<u8> = model.entries.keys().copied().collect();
        held.sort_unstable();
        assert_eq!(keys, held);
    }
}

/// W-TinyLFU with expiry, against the [expiry model](common::expiry): what is returned must be
/// the latest value written, never expired, never removed, and the cache never over capacity.
/// With `idle`, entries also expire 10 s after their last `get` or write.
fn check_tiny_lfu_with_expiry(ops: &[Op], policy: EvictionPolicy, idle: bool) {
    let mut model = ExpiryModel::new(idle);
    let mut builder = Cache::builder()
        .max_capacity(10)
        .time_to_live(Duration::from_secs(expiry::TTL))
        .eviction_policy(policy)
        .clock(model.clock());
    if idle {
        builder = builder.time_to_idle(Duration::from_secs(expiry::TTI));
    }
    let mut cache = builder.build().unwrap();
    let mut max = 10u64;
    for op in ops {
        match *op {
            Op::Get(k) => model.read(k, cache.get(&k).copied()),
            Op::GetMut(k, v) => model.read_then_set(k, get_mut_set(&mut cache, k, v), v),
            Op::Insert(k, v) => {
                cache.insert(k, v);
                model.insert(k, v);
            }
            Op::InsertTtl(k, v, t) => {
                cache.insert_with_ttl(k, v, Duration::from_secs(u64::from(t)));
                model.insert_with_ttl(k, v, u64::from(t));
            }
            Op::Remove(k) => model.removed(k, cache.remove(&k)),
            Op::Advance(s) => model.advance(s),
            Op::Retain(m) => {
                cache.retain(|k, _| k % m != 0);
                model.retain_non_multiples(m);
            }
            Op::Resize(n) => {
                max = u64::from(n);
                cache.set_max_capacity(max);
            }
            Op::RunPending => {
                cache.run_pending_tasks();
                model.check_pending_run(cache.iter().map(|(k, _)| *k));
            }
        }
        cache.validate();
        assert!(cache.weighted_size() <= max);
        model.check_held(cache.iter().map(|(k, v)| (*k, *v)));
    }
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn lru_random_ops_match_model(ops in prop::collection::vec(op(), common::ops(200))) {
        check_lru(&ops);
    }

    #[test]
    fn lfu_random_ops_match_naive_lfu(ops in prop::collection::vec(op(), common::ops(200))) {
        check_lfu(&ops);
    }

    #[test]
    fn lfu_weighted_random_ops_match_naive_lfu(ops in prop::collection::vec(op(), common::ops(200))) {
        check_weighted(&ops, true);
    }

    #[test]
    fn lru_weighted_random_ops_match_naive_lru(ops in prop::collection::vec(op(), common::ops(200))) {
        check_weighted(&ops, false);
    }

    #[test]
    fn tiny_lfu_with_expiry_never_stale_expired_or_over(ops in prop::collection::vec(op(), common::ops(300))) {
        check_tiny_lfu_with_expiry(&ops, EvictionPolicy::tiny_lfu(), false);
    }

    #[test]
    fn tiny_lfu_with_idle_expiry_never_stale_expired_or_over(ops in prop::collection::vec(op(), common::ops(300))) {
        check_tiny_lfu_with_expiry(&ops, EvictionPolicy::tiny_lfu(), true);
    }

    #[test]
    fn tiny_lfu_static_with_expiry_never_stale_expired_or_over(ops in prop::collection::vec(op(), common::ops(300))) {
        check_tiny_lfu_with_expiry(&ops, EvictionPolicy::tiny_lfu_static(), false);
    }
}

#[derive(Debug, Clone)]
enum ROp {
    Shared(SharedOp),
    /// `get_mut` of the key, setting the value's weight in place (its id stays).
    GetMut(u8, u8),
    GetOrInsert(u8, u8),
    GetOrInsertByRef(u8, u8),
    TryGetOrInsertFailing(u8, bool),
}

fn removal_op() -> impl Strategy<Value = ROp> {
    prop_oneof![
        SHARED_WEIGHT => shared_op().prop_map(ROp::Shared),
        3 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::GetMut(k % 24, w)),
        2 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::GetOrInsert(k % 24, w)),
        1 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| ROp::GetOrInsertByRef(k % 24, w)),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(k, by_ref)| ROp::TryGetOrInsertFailing(k % 24, by_ref)),
    ]
}

/// Runs `ops` against the [removal model](common::removals), which checks every report, count
/// and read after each.
fn check_removals(ops: &[ROp], policy: EvictionPolicy, settings: Settings) {
    let (mut model, builder) = Model::new(Cache::builder(), policy, settings);
    let mut cache = builder.build().unwrap();
    for op in ops
        .iter()
        .chain(std::iter::once(&ROp::Shared(SharedOp::RunPending)))
    {
        match *op {
            ROp::Shared(ref shared) => model.apply(&mut cache, shared),
            ROp::GetMut(k, w) => {
                let got = cache.get_mut(&k).map(|mut value| {
                    value.1 = w;
                    value.0
                });
                model.mutated(k, got, w);
            }
            ROp::GetOrInsert(k, w) | ROp::GetOrInsertByRef(k, w) => {
                let id = model.next_id();
                let got = if matches!(op, ROp::GetOrInsert(..)) {
                    cache.get_or_insert_with(k, || (id, w)).map(|v| v.0)
                } else {
                    cache.get_or_insert_with_by_ref(&k, || (id, w)).map(|v| v.0)
                };
                // `None` only for a new value not kept, which the model then sees reported.
                model.loaded(k, w, got.unwrap_or(id));
                if got.is_none() {
                    assert!(cache.iter().all(|(_, v)| v.0 != id), "{op:?} kept {id}");
                }
            }
            ROp::TryGetOrInsertFailing(k, by_ref) => {
                let got = if by_ref {
                    cache.try_get_or_insert_with_by_ref(&k, || Err("down"))
                } else {
                    cache.try_get_or_insert_with(k, || Err("down"))
                };
                model.load_failed(k, got.ok().map(|v| v.expect("a hit").0));
            }
        }
        model.check(op, &cache);
    }
    model.finish();
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn removals_random_ops_each_value_reported_once_and_counted(
        ops in prop::collection::vec(removal_op(), common::ops(300)),
        which in 0..7usize,
        ttl in any::<bool>(),
        tti in any::<bool>(),
        custom in any::<bool>(),
        weighted in any::<bool>(),
    ) {
        let policy = all_policies()[which];
        check_removals(&ops, policy, Settings { ttl, tti, custom, weighted });
    }
}
