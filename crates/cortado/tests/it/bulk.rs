//! `get_all_with`: the missed keys of one call load in one call of the loader, and coalesce
//! with single-key loads of the same keys in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use cortado::sync::Cache;

fn cache() -> Cache<u32, String> {
    Cache::builder()
        .max_capacity(1_000)
        .record_stats()
        .build()
        .unwrap()
}

fn rows(keys: &[u32]) -> HashMap<u32, String> {
    keys.iter().map(|&k| (k, format!("row {k}"))).collect()
}

#[test]
fn get_all_with_loads_only_missing_keys_in_one_call() {
    let cache = cache();
    cache.insert(1, "cached 1".into());
    cache.insert(2, "cached 2".into());
    let calls = Mutex::new(Vec::new());
    let got = cache.get_all_with([1, 2, 3, 4, 5, 3], |missing| {
        calls.lock().unwrap().push(missing.to_vec());
        rows(missing)
    });
    let mut called = calls.into_inner().unwrap();
    assert_eq!(called.len(), 1, "one call of the loader");
    called[0].sort_unstable();
    assert_eq!(called[0], vec![3, 4, 5]);
    assert_eq!(got.len(), 5);
    assert_eq!(got[&1], "cached 1");
    assert_eq!(got[&4], "row 4");
    assert_eq!(
        cache.get(&5).as_deref(),
        Some("row 5"),
        "loaded values are cached"
    );
    let stats = cache.stats();
    assert_eq!((stats.load_successes, stats.load_failures), (1, 0));
}

#[test]
fn get_all_with_key_left_out_by_loader_is_neither_cached_nor_returned() {
    let cache = cache();
    let got = cache.get_all_with([1, 2], |_| rows(&[1]));
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(cache.get(&2), None);
    assert_eq!(cache.loads_in_flight(), 0);
}

/// The cost it removes: 100 misses loaded one key at a time are 100 round trips to the store;
/// as one bulk load, one.
#[test]
fn get_all_with_hundred_misses_one_round_trip_where_get_with_takes_hundred() {
    let round_trips = AtomicUsize::new(0);
    let store = |keys: &[u32]| {
        round_trips.fetch_add(1, Ordering::SeqCst);
        rows(keys)
    };
    let one_by_one = cache();
    for key in 0..100 {
        one_by_one.get_with(key, || store(&[key]).remove(&key).unwrap());
    }
    assert_eq!(round_trips.swap(0, Ordering::SeqCst), 100);
    let bulk = cache();
    assert_eq!(bulk.get_all_with(0..100, store).len(), 100);
    assert_eq!(round_trips.load(Ordering::SeqCst), 1);
}

#[test]
fn get_all_with_waits_for_single_key_load_in_flight_instead_of_loading_it() {
    let cache = cache();
    let (started, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let single = {
        let (cache, started, release) = (cache.clone(), started.clone(), release.clone());
        std::thread::spawn(move || {
            cache.get_with(3, || {
                started.wait();
                release.wait();
                "single 3".to_string()
            })
        })
    };
    started.wait();
    let releaser = {
        let release = release.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            release.wait();
        })
    };
    let asked = Mutex::new(Vec::new());
    let got = cache.get_all_with([3, 4], |missing| {
        asked.lock().unwrap().extend_from_slice(missing);
        rows(missing)
    });
    releaser.join().unwrap();
    assert_eq!(single.join().unwrap(), "single 3");
    assert_eq!(
        asked.into_inner().unwrap(),
        vec![4],
        "key 3 was loading elsewhere"
    );
    assert_eq!(got[&3], "single 3");
    assert_eq!(got[&4], "row 4");
}

#[test]
fn get_with_waits_for_bulk_load_in_flight_instead_of_loading() {
    let cache = cache();
    let (started, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let bulk = {
        let (cache, started, release) = (cache.clone(), started.clone(), release.clone());
        std::thread::spawn(move || {
            cache.get_all_with([5, 6], |missing| {
                started.wait();
                release.wait();
                rows(missing)
            })
        })
    };
    started.wait();
    let single = {
        let cache = cache.clone();
        std::thread::spawn(move || cache.get_with(5, || "single 5".to_string()))
    };
    std::thread::sleep(Duration::from_millis(20));
    release.wait();
    assert_eq!(
        single.join().unwrap(),
        "row 5",
        "the single load waited for the bulk one"
    );
    assert_eq!(bulk.join().unwrap().len(), 2);
}

#[test]
fn get_all_with_panicking_loader_releases_every_key() {
    let cache = cache();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cache.get_all_with([1, 2, 3], |_| panic!("store down"))
    }));
    assert!(result.is_err());
    assert_eq!(cache.loads_in_flight(), 0);
    assert_eq!(cache.stats().load_failures, 1);
    assert_eq!(cache.get_with(1, || "after".to_string()), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_all_with_async_loads_missing_keys_in_one_call() {
    let cache: cortado::future::Cache<u32, String> = cortado::future::Cache::builder()
        .max_capacity(100)
        .build()
        .unwrap();
    cache.insert(1, "cached".into());
    let calls = Arc::new(AtomicUsize::new(0));
    let got = cache
        .get_all_with([1, 2, 3], |missing| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                rows(&missing)
            }
        })
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(got.len(), 3);
    assert_eq!(cache.get(&3).as_deref(), Some("row 3"));
}
