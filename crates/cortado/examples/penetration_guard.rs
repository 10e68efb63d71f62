//! A penetration guard: lookups of keys that do not exist (a scan of random ids, a bug, an
//! attack) miss the cache every time and each one reaches the backing store, which a cache
//! cannot absorb by caching values alone (cache penetration).
//!
//! Two remedies, combined: a [`BloomFilter`] of every id the store holds answers "cannot
//! exist" for most absent ids without touching the store (no false negatives, so a real id
//! always gets through), and `negative_ttl` caches the absence of the few absent ids that
//! pass the filter (its false positives), so that each reaches the store once per
//! `negative_ttl`.
//!
//! ```text
//! cargo run --release -p cortado --example penetration_guard
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cortado::bloom::BloomFilter;
use cortado::sync::Cache;

/// The backing store: ids 0, 10, 20, ... up to 100,000, counting its lookups.
struct Store {
    rows: HashMap<u64, String>,
    lookups: AtomicU64,
}

impl Store {
    fn new() -> Self {
        let rows = (0..10_000u64).map(|i| (i * 10, format!("row {}", i * 10)));
        Self {
            rows: rows.collect(),
            lookups: AtomicU64::new(0),
        }
    }

    fn find(&self, id: u64) -> Option<String> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        self.rows.get(&id).cloned()
    }
}

/// A cache in front of the store, with or without the Bloom filter of its ids.
struct Guarded<'a> {
    store: &'a Store,
    cache: Cache<u64, String>,
    ids: Option<BloomFilter>,
}

impl<'a> Guarded<'a> {
    fn new(store: &'a Store, guard: bool, negative_ttl: bool) -> Self {
        let ids = guard.then(|| {
            // 1% false positives for the store's ids: about 9.6 bits per id.
            let mut ids = BloomFilter::new(store.rows.len(), 0.01).expect("valid sizing");
            for id in store.rows.keys() {
                ids.insert(id);
            }
            ids
        });
        // Each shard remembers absent keys up to an eighth of its capacity: 12,500 in all
        // here, room for the 2,000 absent ids asked for (with 20,000, some shards overflowed
        // and forgot absences before they were asked again).
        let mut builder = Cache::builder().max_capacity(100_000);
        if negative_ttl {
            builder = builder.negative_ttl(Duration::from_secs(60));
        }
        let cache = builder.build().expect("a valid configuration");
        Self { store, cache, ids }
    }

    fn get(&self, id: u64) -> Option<String> {
        if self.ids.as_ref().is_some_and(|ids| !ids.contains(&id)) {
            return None; // cannot exist: the store is not asked
        }
        self.cache.optionally_get_with(id, || self.store.find(id))
    }
}

/// Store lookups for 100,000 lookups of ids that do not exist (2,000 distinct ones, each asked
/// 50 times) and 10,000 of ids that do (each once), checking every answer.
fn run(guard: bool, negative_ttl: bool) -> u64 {
    let store = Store::new();
    let guarded = Guarded::new(&store, guard, negative_ttl);
    for round in 0..100u64 {
        for i in 0..1_000u64 {
            // Odd ids never exist.
            assert_eq!(guarded.get(i * 10 + 1 + round % 2 * 2), None);
        }
        for i in 0..100u64 {
            let id = (round * 100 + i) * 10;
            assert_eq!(guarded.get(id), Some(format!("row {id}")));
        }
    }
    store.lookups.load(Ordering::Relaxed)
}

fn main() {
    let unguarded = run(false, false);
    let plain = run(false, true);
    let guarded = run(true, true);
    println!("store lookups for 100,000 lookups of absent ids and 10,000 of present ones:");
    println!("  no guard:                        {unguarded}");
    println!("  negative_ttl alone:              {plain}");
    println!("  Bloom filter, then negative_ttl: {guarded}");
    // Unguarded, every lookup of an absent id reaches the store. With negative_ttl, each of
    // the 2,000 distinct absent ids reaches it once, then the cached absence answers. With
    // the filter in front, only its false positives among them do (about 1% of 2,000).
    // Every present id is loaded once in all three.
    assert_eq!(unguarded, 100_000 + 10_000);
    assert_eq!(plain, 2_000 + 10_000);
    assert!(guarded < 10_000 + 100, "guarded: {guarded}");
    assert!(guarded >= 10_000, "every present id is loaded once");
}

#[test]
fn penetration_guard_example_runs() {
    main();
}
