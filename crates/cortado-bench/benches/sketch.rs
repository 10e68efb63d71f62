//! `FrequencySketch`: the cost of one admission-sketch update plus one estimate, the pair a
//! W-TinyLFU cache pays on every access.
//!
//! Each criterion iteration is one `increment` + `frequency` on the next key of a pre-generated
//! stream of 2^20 keys, so the reported time is nanoseconds per pair (target: at most 25 ns).
//!
//! # Design
//!
//! - **`prehashed/*`**: the key is already a well-mixed `u64`, as in the cache (which hashes once
//!   for its table and reuses the hash). Zipf(0.99) over 1M keys concentrates on a few cache lines
//!   of the table; uniform keys touch a random line each time. Three sketch sizes: capacity 1k
//!   (8 KiB of counters, in L1), 100k (1 MiB, in L2) and 1M (8 MiB, beyond L2).
//! - **`hashed/*`**: the same pair on the Zipf stream at capacity 100k, including hashing a short
//!   key (a `u64`, or an 8-byte `String`) with hashbrown's default hasher (foldhash, what Cortado's
//!   tables use) or std's default (SipHash-1-3). `hash_only/*` times the hashing alone, so the
//!   sketch's share is the difference.
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use cortado::sketch::FrequencySketch;
use cortado_bench::workload::{short_strings, uniform_keys, zipf_keys, STREAM_LEN, STREAM_MASK};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use hashbrown::DefaultHashBuilder;

const SEED: u64 = 0x5eed;
/// Distinct keys in the Zipf stream.
const ZIPF_KEYS: u64 = 1_000_000;
const ZIPF_S: f64 = 0.99;
/// Sketch sizes: 8 KiB, 1 MiB and 8 MiB of counters.
const CAPACITIES: [usize; 3] = [1_000, 100_000, 1_000_000];
/// The capacity of the `hashed` variants (a 100k-entry cache).
const HASHED_CAPACITY: usize = 100_000;

fn prehashed(c: &mut Criterion) {
    let streams = [
        ("zipf", zipf_keys(ZIPF_KEYS, STREAM_LEN, ZIPF_S, SEED)),
        ("uniform", uniform_keys(STREAM_LEN, SEED)),
    ];
    let mut group = c.benchmark_group("sketch/prehashed");
    for (name, keys) in &streams {
        for capacity in CAPACITIES {
            let mut sketch = FrequencySketch::with_seed(capacity, SEED);
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(*name, capacity), |b| {
                b.iter(|| {
                    let hash = keys[i & STREAM_MASK];
                    i = i.wrapping_add(1);
                    sketch.increment(hash);
                    sketch.frequency(hash)
                });
            });
        }
    }
    group.finish();
}

/// One increment + frequency pair on `keys` hashed by `hasher`.
fn bench_hashed<K: Hash, S: BuildHasher>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    keys: &[K],
    hasher: &S,
) {
    let mut sketch = FrequencySketch::with_seed(HASHED_CAPACITY, SEED);
    let mut i = 0usize;
    group.bench_function(name, |b| {
        b.iter(|| {
            let hash = hasher.hash_one(&keys[i & STREAM_MASK]);
            i = i.wrapping_add(1);
            sketch.increment(hash);
            sketch.frequency(hash)
        });
    });
}

/// Hashing alone, to subtract from [`bench_hashed`].
fn bench_hash_only<K: Hash, S: BuildHasher>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    keys: &[K],
    hasher: &S,
) {
    let mut i = 0usize;
    group.bench_function(name, |b| {
        b.iter(|| {
            let hash = hasher.hash_one(&keys[i & STREAM_MASK]);
            i = i.wrapping_add(1);
            hash
        });
    });
}

fn hashed(c: &mut Criterion) {
    let keys = zipf_keys(ZIPF_KEYS, STREAM_LEN, ZIPF_S, SEED);
    let strings = short_strings(&keys);
    let (fold, sip) = (DefaultHashBuilder::default(), RandomState::new());
    let mut group = c.benchmark_group("sketch/hashed");
    bench_hashed(&mut group, "u64_foldhash", &keys, &fold);
    bench_hashed(&mut group, "u64_siphash", &keys, &sip);
    bench_hashed(&mut group, "str8_foldhash", &strings, &fold);
    bench_hashed(&mut group, "str8_siphash", &strings, &sip);
    group.finish();
    let mut group = c.benchmark_group("sketch/hash_only");
    bench_hash_only(&mut group, "u64_foldhash", &keys, &fold);
    bench_hash_only(&mut group, "u64_siphash", &keys, &sip);
    bench_hash_only(&mut group, "str8_foldhash", &strings, &fold);
    bench_hash_only(&mut group, "str8_siphash", &strings, &sip);
    group.finish();
}

fn config() -> Criterion {
    // Short runs: the machine is shared, and each group compares within itself.
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = prehashed, hashed
}
criterion_main!(benches);
