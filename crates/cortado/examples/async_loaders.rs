//! The async cache on tokio: a hundred tasks look up ten records, each loaded once by an async
//! loader while the other tasks wait without blocking their threads; lookups of a record that
//! does not exist reach the database once, since its absence is cached for a while.
//!
//! ```text
//! cargo run --release -p cortado --example async_loaders
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cortado::future::Cache;

/// A database that answers after 10 ms and has records 0 to 9 only.
#[derive(Default)]
struct Database {
    queries: AtomicU64,
}

impl Database {
    async fn find(&self, id: u64) -> Option<Arc<str>> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(10)).await;
        (id < 10).then(|| Arc::from(format!("record {id}")))
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cache: Cache<u64, Arc<str>> = Cache::builder()
        .max_capacity(10_000)
        .time_to_live(Duration::from_secs(300))
        // `None` from an `optionally_get_with` loader is remembered for 30 s.
        .negative_ttl(Duration::from_secs(30))
        .build()
        .expect("a valid configuration");
    let database = Arc::new(Database::default());

    let tasks: Vec<_> = (0..100u64)
        .map(|task| {
            let (cache, database) = (cache.clone(), Arc::clone(&database));
            tokio::spawn(async move {
                let id = task % 10;
                let record = cache.get_with(id, async { database.find(id).await.unwrap() });
                assert_eq!(&*record.await, format!("record {id}"));
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let loads = database.queries.load(Ordering::Relaxed);
    println!("100 tasks, 10 records: {loads} database queries");
    assert_eq!(loads, 10);

    // A missing record: the first lookup asks the database, the next ones find the cached
    // absence.
    for _ in 0..5 {
        let missing = cache.optionally_get_with(404, database.find(404)).await;
        assert!(missing.is_none());
    }
    let loads = database.queries.load(Ordering::Relaxed);
    println!(
        "5 lookups of a missing record: {} database query",
        loads - 10
    );
    assert_eq!(loads, 11);

    // Reads and writes that never wait for a load are plain calls.
    cache.insert(404, Arc::from("record 404, created since"));
    assert_eq!(
        cache.get(&404).as_deref(),
        Some("record 404, created since")
    );
}

#[test]
fn async_loaders_example_runs() {
    main();
}
