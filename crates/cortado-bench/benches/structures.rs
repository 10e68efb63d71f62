//! The standalone sketches: `CountMin<u32>` (add, estimate), `TopK` (increment) and
//! `BloomFilter` (insert, contains), one operation per criterion iteration on `u64` keys.
//!
//! Both structures hash the key themselves (SipHash-1-3 keyed per instance), so every time here
//! includes hashing one `u64`.
//!
//! # Design
//!
//! - **`count_min/*`**: a sketch of epsilon 0.001 and delta 0.01 (2,719 x 5 `u32` counters,
//!   54 KB), fed Zipf(0.99) over 1M keys. `add` and `estimate` alone, then the pair.
//! - **`top_k/increment`**: the same sketch tracking the top 100 keys; a Zipf stream keeps the
//!   heap busy at the boundary.
//! - **`bloom/*`**: a filter for 2^20 keys at a 1% false-positive rate (1.2 MiB, 7 probes).
//!   `insert` of uniform keys; `contains_present` after all of them were inserted (all 7 probes
//!   run); `contains_absent` on keys never inserted (stops at the first clear bit, about two
//!   probes).

use std::time::Duration;

use cortado::bloom::BloomFilter;
use cortado::count_min::{CountMin, Dimensions, TopK};
use cortado_bench::workload::{uniform_keys, zipf_keys, STREAM_LEN, STREAM_MASK};
use criterion::{criterion_group, criterion_main, Criterion};

const SEED: u64 = 0x5eed;

fn sketch() -> CountMin<u32> {
    let dimensions = Dimensions::from_error(0.001, 0.01).expect("valid error bounds");
    CountMin::with_seed(dimensions, SEED)
}

fn count_min(c: &mut Criterion) {
    let keys = zipf_keys(1_000_000, STREAM_LEN, 0.99, SEED);
    let mut group = c.benchmark_group("count_min");
    let mut cm = sketch();
    let mut i = 0usize;
    group.bench_function("add", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            cm.add(&key, 1)
        });
    });
    let mut cm = sketch();
    for key in &keys {
        cm.add(key, 1);
    }
    let mut i = 0usize;
    group.bench_function("estimate", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            cm.estimate(&key)
        });
    });
    let mut cm = sketch();
    let mut i = 0usize;
    group.bench_function("add+estimate", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            cm.add(&key, 1);
            cm.estimate(&key)
        });
    });
    group.finish();

    let mut group = c.benchmark_group("top_k");
    let mut top = TopK::new(100, sketch()).expect("k is positive");
    let mut i = 0usize;
    group.bench_function("increment", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            top.increment(key)
        });
    });
    group.finish();
}

fn bloom(c: &mut Criterion) {
    let present = uniform_keys(STREAM_LEN, SEED);
    let absent = uniform_keys(STREAM_LEN, SEED + 1);
    let filter = || BloomFilter::with_seed(STREAM_LEN, 0.01, SEED).expect("valid bloom sizing");
    let mut group = c.benchmark_group("bloom");
    let mut bloom = filter();
    let mut i = 0usize;
    group.bench_function("insert", |b| {
        b.iter(|| {
            let key = present[i & STREAM_MASK];
            i = i.wrapping_add(1);
            bloom.insert(&key)
        });
    });
    let mut full = filter();
    for key in &present {
        full.insert(key);
    }
    let mut i = 0usize;
    group.bench_function("contains_present", |b| {
        b.iter(|| {
            let key = present[i & STREAM_MASK];
            i = i.wrapping_add(1);
            full.contains(&key)
        });
    });
    let mut i = 0usize;
    group.bench_function("contains_absent", |b| {
        b.iter(|| {
            let key = absent[i & STREAM_MASK];
            i = i.wrapping_add(1);
            full.contains(&key)
        });
    });
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
    targets = count_min, bloom
}
criterion_main!(benches);
