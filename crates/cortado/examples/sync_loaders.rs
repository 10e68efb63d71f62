//! A concurrent cache in front of a slow backend: eight threads ask for the same twenty keys at
//! once, and each key is loaded exactly once. A failing load is shared by the callers that were
//! waiting for it, and is not cached.
//!
//! ```text
//! cargo run --release -p cortado --example sync_loaders
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use cortado::sync::Cache;

/// A slow, sometimes failing backend that counts its calls.
#[derive(Default)]
struct Backend {
    calls: AtomicU64,
}

impl Backend {
    fn fetch(&self, id: u64) -> Result<Arc<String>, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(20));
        if id == 13 {
            return Err(format!("user {id}: backend timed out"));
        }
        Ok(Arc::new(format!("user {id}")))
    }
}

fn main() {
    // Big values go in an `Arc`: `get` returns a clone of the value.
    let cache: Cache<u64, Arc<String>> = Cache::builder()
        .max_capacity(1_000)
        .record_stats()
        .build()
        .expect("a valid configuration");
    let backend = Arc::new(Backend::default());

    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (cache, backend) = (cache.clone(), Arc::clone(&backend));
            thread::spawn(move || {
                let mut failures = 0;
                for id in 0..20 {
                    match cache.try_get_with(id, || backend.fetch(id)) {
                        Ok(user) => assert_eq!(*user, format!("user {id}")),
                        Err(error) => {
                            assert_eq!(*error, "user 13: backend timed out");
                            failures += 1;
                        }
                    }
                }
                failures
            })
        })
        .collect();
    let failures: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();

    let calls = backend.calls.load(Ordering::Relaxed);
    let stats = cache.stats();
    println!("8 threads x 20 keys: {calls} backend calls, {failures} failed lookups");
    println!(
        "hits {} / misses {} / loads {} ok, {} failed",
        stats.hits, stats.misses, stats.load_successes, stats.load_failures
    );
    // Most calls count a miss here: the threads usually ask together, and all but one wait for
    // that one's load (a thread that falls behind finds the value and counts a hit). Each good
    // key was loaded once, however many threads missed it together. Key 13 fails: its error
    // reached the threads waiting on that load, and a thread that came later loaded again,
    // since errors are not cached.
    assert_eq!(stats.load_successes, 19);
    assert!(failures >= 1 && stats.load_failures >= 1 && stats.load_failures <= failures);
    assert_eq!(calls, stats.load_successes + stats.load_failures);
    assert_eq!(cache.len(), 19);
    assert!(!cache.contains_key(&13));
}

#[test]
fn sync_loaders_example_runs() {
    main();
}
