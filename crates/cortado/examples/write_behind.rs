//! Write-behind: the application writes the cache and returns at once; a background writer
//! flushes the writes to a slow, sometimes failing store in batches, retrying failures, and
//! reports the batches that failed every retry (here: the store rejects key 13), so that no
//! write is lost silently. Dropping the writer flushes what is still queued.
//!
//! ```text
//! cargo run --release -p cortado --example write_behind
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cortado::sync::Cache;
use cortado::write_behind::{Write, WriteBehind};

fn main() {
    let store = Arc::new(Mutex::new(HashMap::new()));
    let round_trips = Arc::new(AtomicU64::new(0));
    let lost = Arc::new(Mutex::new(Vec::new()));
    let cache: Cache<u64, String> = Cache::builder().max_capacity(10_000).build().unwrap();
    let writer = {
        let (store, round_trips, lost, cache) = (
            store.clone(),
            round_trips.clone(),
            lost.clone(),
            cache.clone(),
        );
        WriteBehind::builder()
            .queue_capacity(1_000)
            .batch_size(100)
            .retries(2, Duration::from_millis(5), Duration::from_millis(20))
            .build(
                move |batch: &[(u64, Write<String>)]| {
                    round_trips.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(2)); // one slow round trip
                    if batch.iter().any(|(key, _)| *key == 13) {
                        return Err("constraint violated by key 13");
                    }
                    let mut store = store.lock().unwrap();
                    for (key, write) in batch {
                        match write {
                            Write::Put(value) => store.insert(*key, value.clone()),
                            Write::Delete => store.remove(key),
                        };
                    }
                    Ok(())
                },
                move |batch: &[(u64, Write<String>)], failure| {
                    eprintln!("{} writes failed for good: {failure}", batch.len());
                    // The store did not take them: the cache must not claim it holds them.
                    for (key, _) in batch {
                        cache.remove(key);
                    }
                    lost.lock()
                        .unwrap()
                        .extend(batch.iter().map(|(key, _)| *key));
                },
            )
            .expect("a valid configuration")
    };
    for id in 0..1_000u64 {
        let value = format!("order {id}");
        cache.insert(id, value.clone());
        writer.put(id, value); // returns once queued
    }
    for id in (0..1_000u64).step_by(100) {
        cache.remove(&id);
        writer.delete(id);
    }
    drop(writer); // flushes the queue, then stops the thread
    let store = store.lock().unwrap();
    let lost = lost.lock().unwrap();
    println!(
        "1,010 writes in {} round trips; {} keys in the store, {} writes reported failed",
        round_trips.load(Ordering::Relaxed),
        store.len(),
        lost.len()
    );
    // Nothing lost silently: every key is in the store as in the cache, or was reported.
    for id in 0..1_000u64 {
        assert_eq!(
            store.get(&id).cloned(),
            cache.get(&id),
            "key {id}: the store and the cache disagree"
        );
        assert!(store.contains_key(&id) || id % 100 == 0 || lost.contains(&id));
    }
    assert!(lost.contains(&13));
    assert!(round_trips.load(Ordering::Relaxed) < 100, "batched");
}

#[test]
fn write_behind_example_runs() {
    main();
}
