//! Sessions that expire: a cache with a time to live, a per-entry lifetime, an eviction listener
//! that hears every removal with its cause, and a scheduler thread that expires entries on time
//! even though nobody touches the cache.
//!
//! ```text
//! cargo run --release -p cortado --example expiry_listener
//! ```

use std::sync::mpsc;
use std::time::{Duration, Instant};

use cortado::notification::RemovalCause;
use cortado::sync::{Cache, Scheduler};

fn main() {
    let (removals, heard) = mpsc::channel();
    let cache: Cache<String, u32> = Cache::builder()
        .max_capacity(100)
        .time_to_live(Duration::from_secs(1))
        .eviction_listener(move |key: &String, _: &u32, cause| {
            // The listener runs on the thread that removed the entry: keep it short.
            let _ = removals.send((key.clone(), cause));
        })
        .scheduler(Scheduler::Thread)
        .build()
        .expect("a valid configuration");

    let start = Instant::now();
    cache.insert("alice".into(), 1);
    cache.insert("bob".into(), 2);
    cache.insert("alice".into(), 10); // a new session for alice
    assert_eq!(cache.remove("bob"), Some(2)); // bob logs out
    cache.insert_with_ttl("guest".into(), 3, Duration::from_millis(50));

    // Only the scheduler thread touches the cache from here on.
    let mut log = Vec::new();
    while log.len() < 4 {
        let (key, cause) = heard
            .recv_timeout(Duration::from_secs(5))
            .expect("every removal is reported");
        println!("{:>4} ms  {key:<6} {cause:?}", start.elapsed().as_millis());
        log.push((key, cause));
    }
    // The first two were heard on this thread, during the calls; the expirations come from
    // the scheduler thread (guest's first, unless that thread was kept waiting for a second).
    log[2..].sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        log,
        [
            ("alice".to_string(), RemovalCause::Replaced),
            ("bob".to_string(), RemovalCause::Explicit),
            ("alice".to_string(), RemovalCause::Expired),
            ("guest".to_string(), RemovalCause::Expired),
        ]
    );
    // Expired on time (the scheduler's rounds are at least 10 ms apart), not by a later call.
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(cache.is_empty());
}

#[test]
fn expiry_listener_example_runs() {
    main();
}
