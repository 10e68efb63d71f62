//! `cortado::unsync::Cache<u64, u64>` beside the `lru` crate's `LruCache` on the same Zipf(0.99)
//! key stream, at the same capacity, in the same criterion group.
//!
//! One operation is a `get`, followed by an `insert` of the key when the get missed (the usual
//! cache-aside pattern); each criterion iteration is one operation, so the reported time is
//! nanoseconds per operation.
//!
//! # Design
//!
//! - **`zipf_1m_keys_cap_100k`**: 1M distinct keys into 100k entries, so there are misses,
//!   admissions and evictions on the hot path. W-TinyLFU does more work per miss than LRU (the
//!   sketch, the admission duel) and gets a higher hit ratio for it; the hit ratios are printed
//!   to stderr when the group starts, to read beside the times.
//! - **`zipf_100k_keys_cap_100k`**: every key fits, so after warm-up almost every operation is a
//!   hit: the read path alone.
//! - **`cortado`** is the default configuration (W-TinyLFU with the adaptive window) with the
//!   policy's seed fixed, so every run admits the same keys.
//! - **`cortado_lru`** is Cortado's cache with its LRU policy instead of W-TinyLFU: the same slab,
//!   table and hashing, so the gap to `cortado` is the cost of the policy (the sketch, the
//!   segmented queues, the adaptive mode's miniatures), and the gap to `lru` the cost of the
//!   cache's core.
//! - **Steady state.** Each cache is built and warmed with one pass over the 2^20-request stream
//!   before timing, and keeps its state across criterion's samples; the stream then repeats.
//! - Every cache hashes with foldhash (hashbrown's default hasher) under one fixed seed, so the
//!   hash function is not part of the difference, and with the policy's seed fixed too every run
//!   sees the same hits and misses. (With the default random seeds, W-TinyLFU's hit ratio on
//!   the first stream moves between runs by about a percentage point.)
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.

use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::time::Duration;

use cortado::policy::EvictionPolicy;
use cortado::unsync::Cache;
use cortado_bench::workload::{zipf_keys, STREAM_LEN, STREAM_MASK};
use criterion::{criterion_group, criterion_main, Criterion};
use foldhash::fast::FixedState;
use lru::LruCache;

const SEED: u64 = 0xcace;
const ZIPF_S: f64 = 0.99;
const CAPACITY: usize = 100_000;

/// The cache-aside operation both caches run; returns whether it hit.
trait CacheAside {
    fn cache_aside(&mut self, key: u64) -> bool;
}

impl<S: BuildHasher> CacheAside for Cache<u64, u64, S> {
    #[inline]
    fn cache_aside(&mut self, key: u64) -> bool {
        if self.get(&key).is_some() {
            return true;
        }
        self.insert(key, key);
        false
    }
}

impl<S: BuildHasher> CacheAside for LruCache<u64, u64, S> {
    #[inline]
    fn cache_aside(&mut self, key: u64) -> bool {
        if self.get(&key).is_some() {
            return true;
        }
        self.put(key, key);
        false
    }
}

/// Runs `keys` once through `cache`; returns the hit ratio.
fn pass(cache: &mut impl CacheAside, keys: &[u64]) -> f64 {
    let hits = keys.iter().filter(|&&k| cache.cache_aside(k)).count();
    hits as f64 / keys.len() as f64
}

fn bench_group(c: &mut Criterion, name: &str, distinct_keys: u64) {
    let keys = zipf_keys(distinct_keys, STREAM_LEN, ZIPF_S, SEED);
    let mut cortado = Cache::<u64, u64>::builder()
        .max_capacity(CAPACITY as u64)
        .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(SEED))
        .hasher(FixedState::with_seed(SEED))
        .build()
        .expect("valid capacity");
    let mut cortado_lru = Cache::<u64, u64>::builder()
        .max_capacity(CAPACITY as u64)
        .eviction_policy(EvictionPolicy::lru())
        .hasher(FixedState::with_seed(SEED))
        .build()
        .expect("valid capacity");
    let capacity = NonZeroUsize::new(CAPACITY).expect("non-zero");
    let mut lru = LruCache::<u64, u64, _>::with_hasher(capacity, FixedState::with_seed(SEED));
    // Warm each, then measure one more pass's hit ratio for the record.
    pass(&mut cortado, &keys);
    pass(&mut cortado_lru, &keys);
    pass(&mut lru, &keys);
    eprintln!(
        "{name}: hit ratio over one warm pass: cortado {:.4}, cortado_lru {:.4}, lru {:.4}",
        pass(&mut cortado, &keys),
        pass(&mut cortado_lru, &keys),
        pass(&mut lru, &keys)
    );

    let mut group = c.benchmark_group(format!("unsync_cache/{name}"));
    let mut i = 0usize;
    group.bench_function("cortado", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            cortado.cache_aside(key)
        });
    });
    let mut i = 0usize;
    group.bench_function("cortado_lru", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            cortado_lru.cache_aside(key)
        });
    });
    let mut i = 0usize;
    group.bench_function("lru", |b| {
        b.iter(|| {
            let key = keys[i & STREAM_MASK];
            i = i.wrapping_add(1);
            lru.cache_aside(key)
        });
    });
    group.finish();
}

fn zipf_misses(c: &mut Criterion) {
    bench_group(c, "zipf_1m_keys_cap_100k", 1_000_000);
}

fn zipf_hits(c: &mut Criterion) {
    bench_group(c, "zipf_100k_keys_cap_100k", 100_000);
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
    targets = zipf_misses, zipf_hits
}
criterion_main!(benches);
