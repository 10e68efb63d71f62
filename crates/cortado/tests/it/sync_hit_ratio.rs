//! Admission must not lose accuracy under concurrency: the hit ratio of a Zipf stream replayed
//! through `sync::Cache` by two threads stays within half a point of the single-threaded replay.

use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;

use crate::common::{Rng, Zipf};
use cortado::policy::EvictionPolicy;
use cortado::sync::Cache;

/// SipHash with fixed keys: the same shards and sketch positions in every run.
type Fixed = BuildHasherDefault<DefaultHasher>;

const REQUESTS: usize = 400_000;
const KEYS: usize = 50_000;
const CAPACITY: u64 = 5_000;

fn stream() -> Vec<u64> {
    let zipf = Zipf::new(KEYS, 0.9);
    let mut rng = Rng::new(2024);
    (0..REQUESTS).map(|_| zipf.sample(&mut rng)).collect()
}

fn cache(shards: usize) -> Cache<u64, u64, Fixed> {
    Cache::builder()
        .max_capacity(CAPACITY)
        .shards(shards)
        .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(7))
        .hasher(Fixed::default())
        .build()
        .unwrap()
}

/// Get-then-insert of `keys` split round-robin over `threads`; the hit ratio in percent.
fn replay(cache: &Cache<u64, u64, Fixed>, keys: &[u64], threads: usize) -> f64 {
    let hits: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut hits = 0;
                    for &key in keys.iter().skip(t).step_by(threads) {
                        if cache.get(&key).is_some() {
                            hits += 1;
                        } else {
                            cache.insert(key, key);
                        }
                    }
                    hits
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    cache.run_pending_tasks();
    cache.validate();
    assert!(cache.weighted_size() <= CAPACITY);
    100.0 * hits as f64 / keys.len() as f64
}

/// The same replay through the single-threaded cache, with the same seed and hasher.
fn replay_unsync(keys: &[u64]) -> f64 {
    let mut cache = cortado::unsync::Cache::builder()
        .max_capacity(CAPACITY)
        .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(7))
        .hasher(Fixed::default())
        .build()
        .unwrap();
    let mut hits = 0;
    for &key in keys {
        if cache.get(&key).is_some() {
            hits += 1;
        } else {
            cache.insert(key, key);
        }
    }
    100.0 * hits as f64 / keys.len() as f64
}

fn check(shards: usize) {
    let keys = stream();
    let one = replay(&cache(shards), &keys, 1);
    let two = replay(&cache(shards), &keys, 2);
    println!("{shards} shard(s): 1 thread {one:.4}%, 2 threads {two:.4}%");
    // A sanity floor: W-TinyLFU on this stream hits far more than a random cache would.
    assert!(one > 30.0, "single-threaded hit ratio {one:.2}%");
    assert!(
        (one - two).abs() <= 0.5,
        "{shards} shard(s): 2 threads {two:.2}% vs 1 thread {one:.2}%"
    );
}

#[test]
#[cfg_attr(miri, ignore = "long stream: a hit ratio")]
fn two_threads_one_shard_hit_ratio_within_half_point() {
    check(1);
}

#[test]
#[cfg_attr(miri, ignore = "long stream: a hit ratio")]
fn two_threads_eight_shards_hit_ratio_within_half_point() {
    check(8);
}

#[test]
#[cfg_attr(miri, ignore = "long stream: a hit ratio")]
fn two_threads_thirty_two_shards_hit_ratio_within_half_point() {
    check(32);
}

/// The baseline of the checks above is itself a `sync::Cache` replay, so a loss that hits one
/// and two threads alike (buffered reads dropped, by writers or by readers) would pass them: on
/// one thread, one shard must decide exactly as the unsync cache (see `read_buffer`).
#[test]
#[cfg_attr(miri, ignore = "long stream: a hit ratio")]
fn one_thread_one_shard_hit_ratio_equals_unsync() {
    let keys = stream();
    let sync = replay(&cache(1), &keys, 1);
    let unsync = replay_unsync(&keys);
    assert_eq!(
        sync, unsync,
        "1 shard, 1 thread {sync:.4}% vs unsync {unsync:.4}%"
    );
}
