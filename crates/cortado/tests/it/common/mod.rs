//! Workload generators and checks shared by the integration tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use cortado::notification::RemovalCause;

pub mod accounting;
pub mod expiry;
pub mod front;
pub mod removals;

/// Proptest's settings: `cases` cases, but only four under Miri, which interprets every
/// instruction, and there no regression file either (Miri's isolation forbids file access).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(4),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        }
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}

/// How many operations a generated op sequence holds: 1 to `native`, or at most 24 under Miri,
/// where an adaptive W-TinyLFU operation and the `validate()` after it take over a second.
pub fn ops(native: usize) -> std::ops::Range<usize> {
    1..if cfg!(miri) { native.min(24) } else { native }
}

/// A span of real time a test waits for or sets: `native`, or a hundred times that under Miri.
/// Miri's clock runs at least at the host's pace (about 1.7x it on our two-core machines) while
/// it interprets code a hundred or more times slower, so a lifetime that must outlast a few
/// operations, or a limit after which a thread is called hung, must grow there. A thread that
/// really hangs still fails at once under Miri, which skips its clock ahead when every other
/// thread is blocked.
pub fn paced(native: Duration) -> Duration {
    if cfg!(miri) {
        native * 100
    } else {
        native
    }
}

/// Every eviction policy, with its default settings.
pub fn all_policies() -> [cortado::policy::EvictionPolicy; 7] {
    use cortado::policy::EvictionPolicy;
    [
        EvictionPolicy::tiny_lfu(),
        EvictionPolicy::tiny_lfu_static(),
        EvictionPolicy::lru(),
        EvictionPolicy::lfu(),
        EvictionPolicy::redis_lru(),
        EvictionPolicy::redis_lfu(),
        EvictionPolicy::random(),
    ]
}

/// The scenario of the `insert_new_key_after_read_of_window_entry_keeps_new_key` tests, on a
/// cache of 10 entries with a one-entry window: `touch(key, insert)` inserts `key` (valued
/// `key`) when told to, then reads it and says whether it was there. Keys 0..10 are inserted
/// and read four times over, then keys 100..200 each inserted and read once; returns those
/// gone right after their insert.
pub fn new_keys_gone_after_reads(mut touch: impl FnMut(u64, bool) -> bool) -> Vec<u64> {
    for round in 0..4 {
        for key in 0..10u64 {
            touch(key, round == 0);
        }
    }
    (100..200u64).filter(|&key| !touch(key, true)).collect()
}

thread_local! {
    static KEY_CLONES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A key that counts its clones on its thread (`ToOwned` of a `Clone` type clones): a lookup by
/// reference should make an owned key only on a miss.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CountedKey(pub u32);

impl Clone for CountedKey {
    fn clone(&self) -> Self {
        KEY_CLONES.with(|n| n.set(n.get() + 1));
        Self(self.0)
    }
}

/// How many times this thread has cloned a [`CountedKey`].
pub fn key_clones() -> usize {
    KEY_CLONES.with(std::cell::Cell::get)
}

/// What a scheduler must have done to keys `0..3`, inserted at `inserted` with lifetime `ttl`
/// and then left alone: reported each as expired exactly once (`expired`, in any order), not
/// before its time, and removed them (`len`, the cache's length afterwards).
pub fn assert_expired_by_scheduler(
    mut expired: Vec<(u32, RemovalCause)>,
    inserted: Instant,
    ttl: Duration,
    len: usize,
) {
    expired.sort_unstable_by_key(|e| e.0);
    assert_eq!(
        expired,
        vec![
            (0, RemovalCause::Expired),
            (1, RemovalCause::Expired),
            (2, RemovalCause::Expired)
        ]
    );
    assert!(inserted.elapsed() >= ttl, "never early");
    assert_eq!(len, 0, "removed, not only invisible");
}

/// A xorshift64* generator, so tests need no extra dependency and stay reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf(s) over `0..n` by inverse CDF (binary search over the cumulative weights).
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for k in 1..=n {
            sum += 1.0 / (k as f64).powf(s);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Self { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        self.cdf.partition_point(|&c| c < u) as u64
    }
}
