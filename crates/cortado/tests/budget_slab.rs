//! How a shard's slab grows: by doubling while small, then by an eighth past 1,024 slots; in a
//! shared budget by an eighth from the start, as the budget's capacity may count the slab's
//! memory only once it is allocated.

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
    // 600 entries: a doubling slab has 1,024 slots, one growing by eighths at most 600 plus
    // an eighth.
    let alone = filled(600, None).memory_bytes();
    let shared = filled(600, Some(Budget::new(1_000_000))).memory_bytes();
    assert!(
        shared * 4 < alone * 3,
        "in a budget {shared} bytes, alone {alone}"
    );
}

#[test]
fn slab_past_1024_slots_grows_an_eighth_not_double() {
    // 1,100 entries: doubling would have 2,048 slots; by eighths past 1,024, at most 1,152 plus
    // an eighth. The bytes per entry stay near those of 1,024 entries in 1,024 slots.
    let full = filled(1_024, None).memory_bytes() as f64 / 1_024.0;
    let past = filled(1_100, None).memory_bytes() as f64 / 1_100.0;
    assert!(
        past < full * 1.25,
        "{past:.1} bytes an entry at 1,100 entries, {full:.1} at 1,024"
    );
}
