//! Bulk loads: a page that needs 50 users, of which the cache holds some, asks the store for
//! the missing ones in one query (`get_all_with`) instead of one query per user, and a
//! concurrent single-key load of one of them is shared, not repeated.
//!
//! ```text
//! cargo run --release -p cortado --example bulk_loads
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use cortado::sync::Cache;

/// A store that counts its queries.
#[derive(Default)]
struct Store {
    queries: AtomicU64,
}

impl Store {
    fn users(&self, ids: &[u64]) -> HashMap<u64, String> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        ids.iter().map(|&id| (id, format!("user {id}"))).collect()
    }
}

fn main() {
    let store = Store::default();
    let cache: Cache<u64, String> = Cache::builder()
        .max_capacity(1_000)
        .build()
        .expect("a valid configuration");
    // Half of the page is cached already.
    for id in (0..50).step_by(2) {
        cache.insert(id, format!("user {id}"));
    }
    // One key at a time: one query per missing user.
    let one_by_one: Cache<u64, String> = Cache::builder().max_capacity(1_000).build().unwrap();
    for id in 0..50 {
        one_by_one.get_with(id, || store.users(&[id]).remove(&id).expect("present"));
    }
    let single_queries = store.queries.swap(0, Ordering::Relaxed);
    // In bulk: the 25 missing users in one query.
    let page = cache.get_all_with(0..50, |missing| store.users(missing));
    let bulk_queries = store.queries.load(Ordering::Relaxed);
    println!("50 users, 25 cached: {single_queries} queries one by one (none cached), {bulk_queries} in bulk");
    assert_eq!(page.len(), 50);
    assert_eq!(single_queries, 50);
    assert_eq!(bulk_queries, 1);
    // The next page view finds all of them cached.
    let again = cache.get_all_with(0..50, |missing| store.users(missing));
    assert_eq!(again, page);
    assert_eq!(store.queries.load(Ordering::Relaxed), 1);
}

#[test]
fn bulk_loads_example_runs() {
    main();
}
