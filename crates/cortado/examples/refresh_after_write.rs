//! Refresh after write against the stampede of a hot key's expiry: with a time to live alone, a
//! hot key read by many threads expires, and the readers that come then all miss and wait for
//! the backing store (once, coalesced, but every one of them waits). With
//! `refresh_after_write` shorter than the time to live, the first read after the interval
//! returns the current value and starts a reload in the background: no reader waits.
//!
//! ```text
//! cargo run --release -p cortado --example refresh_after_write
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use cortado::sync::Cache;
use cortado::time::ManualClock;

/// Loads on the readers' path (a reader waited for the store) and in all, over 60 simulated
/// seconds of 4 threads reading one hot key (one manual clock second per round).
fn run(refresh: bool) -> (u64, u64) {
    let clock = ManualClock::new();
    let loads = Arc::new(AtomicU64::new(0));
    let store = {
        let loads = loads.clone();
        move |version: u64| {
            loads.fetch_add(1, Ordering::Relaxed);
            thread::sleep(Duration::from_millis(30)); // a slow backing store
            version + 1
        }
    };
    let mut builder = Cache::builder()
        .max_capacity(100)
        .clock(clock.clone())
        .time_to_live(Duration::from_secs(10));
    if refresh {
        let store = store.clone();
        builder = builder
            .refresh_after_write(Duration::from_secs(5), move |_: &&str, old: &u64| {
                Ok::<_, ()>(store(*old))
            });
    }
    let cache: Cache<&str, u64> = builder.build().expect("a valid configuration");
    let waited = Arc::new(AtomicU64::new(0));
    for _ in 0..60 {
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (cache, store, waited) = (cache.clone(), store.clone(), waited.clone());
                thread::spawn(move || {
                    cache.get_with("hot", || {
                        waited.fetch_add(1, Ordering::Relaxed);
                        store(0)
                    })
                })
            })
            .collect();
        for reader in readers {
            reader.join().expect("reader");
        }
        // Lets a background reload land before the clock moves on.
        while cache.loads_in_flight() > 0 {
            thread::sleep(Duration::from_millis(1));
        }
        clock.advance(Duration::from_secs(1));
    }
    (
        waited.load(Ordering::Relaxed),
        loads.load(Ordering::Relaxed),
    )
}

fn main() {
    let (ttl_waited, ttl_loads) = run(false);
    let (refresh_waited, refresh_loads) = run(true);
    println!("hot key read by 4 threads for 60 s, time to live 10 s, a 30 ms store:");
    println!("  time to live alone:     {ttl_loads} loads, {ttl_waited} with readers waiting");
    println!(
        "  with refresh after 5 s: {refresh_loads} loads, {refresh_waited} with readers waiting"
    );
    // Time to live alone: a load every 10 s, each on the readers' path. With refresh: the
    // first load, then a background reload every 5 s, each before the entry expires.
    assert_eq!((ttl_waited, ttl_loads), (6, 6));
    assert_eq!((refresh_waited, refresh_loads), (1, 12));
}

#[test]
fn refresh_after_write_example_runs() {
    main();
}
