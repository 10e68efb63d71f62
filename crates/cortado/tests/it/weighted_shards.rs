//! Weighted caches that share a capacity: a `sync::Cache`'s shards keep any entry up to the
//! cache's capacity whatever their count, and `unsync::Cache`s built with one
//! [`Budget`](cortado::budget::Budget) hold at most its capacity between them once they have
//! settled what they owe.

use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex};

use crate::common;
use cortado::budget::Budget;
use cortado::builder::BuildError;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use proptest::prelude::*;

/// Keys hash alike in every run (the default hasher is randomly seeded).
type Fixed = BuildHasherDefault<DefaultHasher>;

type Log = Arc<Mutex<Vec<(u32, u32, RemovalCause)>>>;

/// A cache of `capacity` whose entries weigh their value, over `shards` shards.
fn weighted(
    capacity: u64,
    shards: usize,
    policy: EvictionPolicy,
    log: &Log,
) -> cortado::sync::Cache<u32, u32, Fixed> {
    let sink = log.clone();
    cortado::sync::Cache::builder()
        .max_capacity(capacity)
        .shards(shards)
        .weigher(|_, value: &u32| *value)
        .eviction_policy(policy.with_seed(7))
        .hasher(Fixed::default())
        .eviction_listener(move |k: &u32, v: &u32, cause| {
            sink.lock().unwrap().push((*k, *v, cause))
        })
        .build()
        .unwrap()
}

#[test]
fn sync_64_shards_empty_cache_keeps_entry_of_whole_capacity_every_policy() {
    for policy in common::all_policies() {
        let log = Log::default();
        // Shares of 1,000.
        let cache = weighted(64_000, 64, policy, &log);
        cache.insert(1, 64_000);
        assert_eq!(cache.get(&1), Some(64_000), "{}", policy.name());
        assert_eq!(cache.weighted_size(), 64_000);
        cache.insert(2, 64_001);
        assert!(
            !cache.contains_key(&2),
            "{}: heavier than the capacity",
            policy.name()
        );
        assert_eq!(*log.lock().unwrap(), vec![(2, 64_001, RemovalCause::Size)]);
        cache.validate();
        // Light entries take the room back, shard by shard, within the capacity.
        for key in 10..1_000 {
            cache.insert(key, 100);
            assert!(
                cache.weighted_size() <= cache.max_capacity(),
                "{}",
                policy.name()
            );
        }
        assert!(!cache.contains_key(&1), "{}", policy.name());
        cache.validate();
    }
}

#[test]
fn sync_64_shards_full_cache_keeps_entry_of_whole_capacity_where_policy_keeps_new_entries() {
    // These policies never evict the entry just written to make room for it (W-TinyLFU judges
    // one heavier than its window at once, sharded or not: see the next test).
    let policies = [
        EvictionPolicy::lru(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::redis_lfu(),
        EvictionPolicy::random(),
    ];
    for policy in policies {
        let log = Log::default();
        let cache = weighted(64_000, 64, policy, &log);
        for key in 0..2_000 {
            cache.insert(key, 100);
        }
        assert!(cache.weighted_size() > 60_000, "{}: full", policy.name());
        cache.insert(10_000, 64_000);
        assert_eq!(cache.get(&10_000), Some(64_000), "{}", policy.name());
        assert_eq!(cache.weighted_size(), 64_000, "{}", policy.name());
        cache.validate();
    }
}

#[test]
fn sync_64_shards_full_tiny_lfu_keeps_entry_heavier_than_share_within_window() {
    // Shares of 1,000 and an adaptive window that starts at 3% (1,920): an entry of 1,500 is
    // kept as a one-shard cache keeps it, in its window, and not judged at once.
    for shards in [1, 64] {
        let log = Log::default();
        let cache = weighted(64_000, shards, EvictionPolicy::tiny_lfu(), &log);
        for key in 0..2_000 {
            cache.insert(key, 100);
        }
        cache.insert(10_000, 1_500);
        assert_eq!(cache.get(&10_000), Some(1_500), "{shards} shards");
        assert!(cache.weighted_size() <= 64_000);
        cache.validate();
    }
}

/// The values of 1 to 16 KiB a new user wrote into a byte-weighted cache of 1 MiB under
/// `policy`: how many of 1,000 are found right after their insert, and the lightest of those not
/// found.
fn found_after_insert(policy: EvictionPolicy, shards: Option<usize>) -> (usize, Option<usize>) {
    let mut builder = cortado::sync::Cache::<u32, Vec<u8>>::builder()
        .max_capacity(1 << 20)
        .weigher(|_, value: &Vec<u8>| value.len() as u32)
        .eviction_policy(policy.with_seed(3))
        .hasher(Fixed::default());
    if let Some(shards) = shards {
        builder = builder.shards(shards);
    }
    let cache = builder.build().unwrap();
    let mut rng = common::Rng::new(12_345);
    let (mut found, mut lost) = (0, Vec::new());
    let values = if cfg!(miri) { 150 } else { 1_000 };
    for key in 0..values {
        let len = 1024 + (rng.next_u64() % (15 * 1024 + 1)) as usize;
        cache.insert(key, vec![0; len]);
        if cache.contains_key(&key) {
            found += 1;
        } else {
            lost.push(len);
        }
        assert!(cache.weighted_size() <= cache.max_capacity());
    }
    cache.validate();
    (found * 1_000 / values as usize, lost.into_iter().min())
}

#[test]
fn sync_weighted_values_1_to_16_kib_found_after_insert_on_any_shard_count() {
    // Before the shards shared the capacity, on the default policy: 95 to 214 of 1,000 on the
    // default 8 shards of 2 CPUs, 162 on 64, against all 1,000 on one shard.
    let counts = [
        Some(1),
        None,
        Some(2),
        Some(8),
        Some(16),
        Some(64),
        Some(128),
    ];
    for shards in counts {
        let (found, lightest_lost) = found_after_insert(EvictionPolicy::tiny_lfu(), shards);
        assert_eq!(
            found, 1_000,
            "{shards:?} shards (lightest lost {lightest_lost:?})"
        );
    }
    // The static policy's window is 1% of the capacity (10,486 bytes): a sharded cache judges
    // at once only the values heavier than that, as one unsharded cache would, and keeps the
    // others as they are written (an unsharded one can lose those too: its eviction may take
    // the window's only entry as a candidate).
    for shards in [None, Some(2), Some(8), Some(64)] {
        let (found, lightest_lost) = found_after_insert(EvictionPolicy::tiny_lfu_static(), shards);
        let len = lightest_lost.expect("values over the window judged");
        assert!(
            len > (1 << 20) / 100,
            "{shards:?} shards lost a value of {len} bytes"
        );
        assert!(found >= 600, "{shards:?} shards: {found} of 1,000 found");
    }
}

/// An unsync cache of `u32` values weighing themselves, in `budget`.
fn member(budget: &Budget, log: &Log) -> cortado::unsync::Cache<u32, u32, Fixed> {
    let sink = log.clone();
    cortado::unsync::Cache::builder()
        .weigher(|_, value: &u32| *value)
        .budget(budget.clone())
        // It keeps any new entry, as a full W-TinyLFU keeps only those within its window.
        .eviction_policy(EvictionPolicy::lru())
        .hasher(Fixed::default())
        .eviction_listener(move |k: &u32, v: &u32, cause| {
            sink.lock().unwrap().push((*k, *v, cause))
        })
        .build()
        .unwrap()
}

#[test]
fn unsync_budget_without_weigher_or_with_capacity_is_typed_error() {
    let budget = Budget::new(10);
    let unweighted = cortado::unsync::Cache::<u32, u32>::builder()
        .budget(budget.clone())
        .build();
    assert_eq!(unweighted.err(), Some(BuildError::BudgetWithoutWeigher));
    let both = cortado::unsync::Cache::<u32, u32>::builder()
        .weigher(|_, v| *v)
        .max_capacity(10)
        .budget(budget)
        .build();
    assert_eq!(both.err(), Some(BuildError::BudgetAndCapacity));
}

#[test]
fn unsync_budget_members_share_capacity_heavy_entry_kept_in_any() {
    let budget = Budget::new(1_000);
    let log = Log::default();
    let mut caches: Vec<_> = (0..4).map(|_| member(&budget, &log)).collect();
    assert_eq!(budget.members(), 4);
    for (i, cache) in caches.iter_mut().enumerate() {
        for key in 0..100 {
            cache.insert(key, 10 + i as u32);
        }
    }
    let total = |caches: &[cortado::unsync::Cache<u32, u32, Fixed>]| -> u64 {
        caches.iter().map(|c| c.weighted_size()).sum()
    };
    assert!(total(&caches) <= 1_000 + budget.owed());
    // One entry of the whole capacity, in the last cache: the others owe it their room.
    caches[3].insert(1_000, 1_000);
    assert_eq!(caches[3].get(&1_000), Some(&1_000));
    assert!(budget.owed() > 0);
    for cache in &mut caches[..3] {
        cache.run_pending_tasks();
        assert!(cache.is_empty());
    }
    assert_eq!(budget.owed(), 0);
    assert_eq!(total(&caches), 1_000);
    budget.validate();
    // Dropping a member gives its loan back to the members that lent it, and its own share
    // to whoever draws it first.
    drop(caches.pop());
    assert_eq!(budget.members(), 3);
    assert_eq!(budget.unallotted(), 250);
    for cache in &mut caches {
        cache.run_pending_tasks();
    }
    budget.validate();
    caches[0].insert(1, 900);
    assert_eq!(caches[0].get(&1), Some(&900));
    budget.validate();
    let heard = log.lock().unwrap();
    assert!(heard
        .iter()
        .all(|&(_, _, cause)| cause == RemovalCause::Size));
}

#[test]
fn unsync_budget_members_light_entries_replaced_keep_their_shares() {
    // Entries lighter than every share never borrow, so no member's room moves: each still
    // holds about its share after many replacements that shrink it (when unused room went back
    // to the budget, one of four members of a sync cache fell to 2 units of 1,000).
    let budget = Budget::new(1_000);
    let log = Log::default();
    let mut caches: Vec<_> = (0..4).map(|_| member(&budget, &log)).collect();
    let mut rng = common::Rng::new(99);
    let rounds = if cfg!(miri) { 500 } else { 20_000 };
    for _ in 0..rounds {
        let cache = &mut caches[(rng.next_u64() % 4) as usize];
        cache.insert(
            (rng.next_u64() % 1_000) as u32,
            1 + (rng.next_u64() % 40) as u32,
        );
    }
    for (i, cache) in caches.iter_mut().enumerate() {
        for key in 10_000..10_100 {
            cache.insert(key, 10);
        }
        assert!(
            (240..=250).contains(&cache.weighted_size()),
            "member {i} holds {}",
            cache.weighted_size()
        );
    }
    budget.validate();
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, u32, u32),
    Remove(usize, u32),
    Settle(usize),
    SetCapacity(u64),
    Clear(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let cache = 0..3usize;
    let key = 0..20u32;
    let weight = prop_oneof![6 => 0u32..30, 2 => 30u32..200, 1 => 200u32..400];
    prop_oneof![
        8 => (cache.clone(), key.clone(), weight).prop_map(|(c, k, w)| Op::Insert(c, k, w)),
        2 => (cache.clone(), key).prop_map(|(c, k)| Op::Remove(c, k)),
        2 => cache.clone().prop_map(Op::Settle),
        1 => (50u64..400).prop_map(Op::SetCapacity),
        1 => cache.prop_map(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    /// Three members of one budget: after every operation they hold at most the capacity plus
    /// what is owed, every removal is heard once, and once each has settled, the capacity holds.
    #[test]
    fn unsync_budget_members_random_ops_hold_capacity_once_settled(
        ops in prop::collection::vec(op(), common::ops(200)),
        policy in prop::sample::select(common::all_policies().to_vec()),
    ) {
        let budget = Budget::new(300);
        let log = Log::default();
        let build = || {
            let sink = log.clone();
            cortado::unsync::Cache::builder()
                .weigher(|_, value: &u32| *value)
                .budget(budget.clone())
                .eviction_policy(policy.with_seed(5))
                .hasher(Fixed::default())
                .eviction_listener(move |k: &u32, v: &u32, cause| {
                    sink.lock().unwrap().push((*k, *v, cause))
                })
                .build()
                .unwrap()
        };
        let mut caches = [build(), build(), build()];
        // What each cache holds, by the writes less the removals heard.
        let mut model: Vec<std::collections::HashMap<u32, u32>> = vec![Default::default(); 3];
        for op in &ops {
            match *op {
                Op::Insert(c, k, w) => {
                    caches[c].insert(k, w);
                    model[c].insert(k, w);
                }
                Op::Remove(c, k) => {
                    // The live value; the listener hears it removed (below).
                    let live = caches[c].remove(&k);
                    prop_assert_eq!(live, model[c].get(&k).copied(), "{:?}", op);
                }
                Op::Settle(c) => caches[c].run_pending_tasks(),
                Op::SetCapacity(n) => caches[0].set_max_capacity(n),
                Op::Clear(c) => caches[c].invalidate_all(),
            }
            for (key, value, cause) in log.lock().unwrap().drain(..) {
                if cause == RemovalCause::Replaced {
                    continue;
                }
                // The listener cannot tell the caches apart: the removal left the cache
                // written to, or one that settled, and matches what that cache held.
                let holder = (0..3)
                    .find(|&c| model[c].get(&key) == Some(&value) && !caches[c].contains_key(&key));
                let holder = holder.unwrap_or_else(|| {
                    panic!("{cause:?} of {key} ({value}) held by nobody, after {op:?}")
                });
                model[holder].remove(&key);
            }
            for (c, cache) in caches.iter().enumerate() {
                cache.validate();
                let held: std::collections::HashMap<u32, u32> =
                    cache.iter().map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(&held, &model[c], "cache {} after {:?}", c, op);
            }
            budget.validate();
            let total: u64 = caches.iter().map(|c| c.weighted_size()).sum();
            prop_assert!(
                total <= budget.capacity() + budget.owed(),
                "{} held, capacity {} owed {} after {:?}", total, budget.capacity(), budget.owed(), op
            );
        }
        for cache in &mut caches {
            cache.run_pending_tasks();
        }
        let total: u64 = caches.iter().map(|c| c.weighted_size()).sum();
        prop_assert_eq!(budget.owed(), 0);
        prop_assert!(total <= budget.capacity(), "{} held once settled", total);
    }
}
