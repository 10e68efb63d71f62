//! TTL jitter against a cache avalanche: 100,000 entries written in one burst with one time to
//! live expire in one instant, and every reader of them then reaches the backing store at
//! once; with `time_to_live_jitter(0.1)` their expirations spread over the last tenth of the
//! time to live.
//!
//! The cache's timer wheel decides when each entry expires: the clock is moved by hand one
//! second at a time, maintenance expires what is due, and the listener counts the expirations
//! of each second.
//!
//! ```text
//! cargo run --release -p cortado --example ttl_jitter
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cortado::notification::RemovalCause;
use cortado::sync::Cache;
use cortado::time::ManualClock;

const BURST: u64 = 100_000;
const TTL: Duration = Duration::from_secs(100);

/// Expirations in each second from 85 s to 100 s after a burst of [`BURST`] inserts.
fn expirations_per_second(jitter: Option<f64>) -> Vec<(u64, u64)> {
    let clock = ManualClock::new();
    let expired = Arc::new(AtomicU64::new(0));
    let counter = expired.clone();
    // Unbounded: no entry leaves by eviction (a bounded, sharded cache evicts a few from its
    // fullest shards), so each of the burst expires.
    let mut builder = Cache::builder()
        .clock(clock.clone())
        .time_to_live(TTL)
        .eviction_listener(move |_: &u64, _: &u64, cause| {
            if cause == RemovalCause::Expired {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
    if let Some(fraction) = jitter {
        builder = builder.time_to_live_jitter(fraction);
    }
    let cache = builder.build().expect("a valid configuration");
    for key in 0..BURST {
        cache.insert(key, key);
    }
    clock.advance(Duration::from_secs(85));
    cache.run_pending_tasks();
    let mut histogram = Vec::new();
    for second in 86..=100 {
        clock.advance(Duration::from_secs(1));
        cache.run_pending_tasks();
        histogram.push((second, expired.swap(0, Ordering::Relaxed)));
    }
    assert_eq!(cache.len(), 0, "every entry expired by the time to live");
    histogram
}

fn main() {
    let plain = expirations_per_second(None);
    let jittered = expirations_per_second(Some(0.1));
    println!("expirations in each second after a burst of {BURST} inserts (time to live 100 s)");
    println!("{:>8} {:>12} {:>14}", "second", "no jitter", "jitter 0.1");
    for ((second, a), (_, b)) in plain.iter().zip(&jittered) {
        println!("{second:>8} {a:>12} {b:>14}");
    }
    let peak = |h: &[(u64, u64)]| h.iter().map(|&(_, n)| n).max().unwrap_or(0);
    // Without jitter the whole burst expires in its last second; with it, no second takes
    // more than about a tenth of it (uniform over ten seconds: 10,000 each, give or take).
    assert_eq!(peak(&plain), BURST);
    assert!(
        peak(&jittered) < BURST / 8,
        "jittered peak {}",
        peak(&jittered)
    );
    assert!(jittered.iter().filter(|&&(_, n)| n > 0).count() >= 10);
    let total: u64 = jittered.iter().map(|&(_, n)| n).sum();
    assert_eq!(total, BURST);
    println!(
        "peak per second: {} without jitter, {} with",
        peak(&plain),
        peak(&jittered)
    );
}

#[test]
fn ttl_jitter_example_runs() {
    main();
}
