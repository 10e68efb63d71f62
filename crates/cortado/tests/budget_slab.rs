//! A cache that shares a budget grows its slab by an eighth, not by doubling: the budget's
//! capacity may count the slab's memory only once it is allocated.

use cortado::budget::Budget;
use cortado::policy::EvictionPolicy;
use cortado::unsync::Cache;

/// A weighted LRU cache of up to 1,000,000 weight units, in a budget or on its own, filled with
/// `entries` entries of weight 1 (far below the maximum, so nothing bounds the slab but growth).
fn filled(entries: u64, budget: Option<Budget>) -> Cache<u64, u64> {
    let builder = Cache::builder()
        .weigher(|_: &u64, _: &u64| 1)
        .eviction_policy(EvictionPolicy::lru());
    let builder = match budget {
        Some(budget) => builder.budget(budget),
        None => builder.max_capacity(1_000_000),
    };
    let mut cache = builder.build().expect("valid settings");
    for k in 0..entries {
        cache.insert(k, k);
    }
    assert_eq!(cache.len(), entries as usize);
    cache
}

#[test]
fn budget_member_slab_past_power_of_two_grows_an_eighth_not_double() {
    // 1,100 entries: a doubling slab has 2,048 slots, one growing by eighths at most 1,100 plus
    // an eighth.
    let alone = filled(1_100, None).memory_bytes();
    let shared = filled(1_100, Some(Budget::new(1_000_000))).memory_bytes();
    assert!(
        shared * 4 < alone * 3,
        "in a budget {shared} bytes, alone {alone}"
    );
}
