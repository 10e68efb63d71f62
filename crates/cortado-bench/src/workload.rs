//! Deterministic key streams, short string keys, timer deadlines and cancel orders for the
//! benchmarks.
//!
//! Every function is a pure function of its arguments and seed: the same call gives the same
//! vector on every run, so Cortado and its peers are measured on identical input.
//!
//! # Design
//!
//! - **Keys.** Zipf streams come from `cortado_sim::gen` (rejection-inversion, keys scattered
//!   over the whole `u64` range, so key order says nothing about popularity). Uniform streams are
//!   raw SplitMix64 outputs: effectively all distinct.
//! - **Short strings.** [`short_strings`] renders the low 32 bits of each key as 8 hex digits:
//!   an 8-byte `String`, the kind of short key (an id, a session token prefix) whose hashing cost
//!   is comparable to the sketch's own work.
//! - **Deadlines.** [`log_uniform_deadlines`] spreads deadlines evenly over orders of magnitude
//!   (as many between 1 s and 10 s as between 1 h and 10 h), the shape of mixed cache TTLs;
//!   [`uniform_deadlines`] spreads them evenly over a window, the shape of a steady stream of
//!   expirations.
//!
//! # References
//!
//! 1. G. L. Steele, D. Lea, C. H. Flood: "Fast splittable pseudorandom number generators",
//!    OOPSLA 2014 (SplitMix64).
//! 2. D. Knuth: TAOCP vol. 2, 3.4.2 (the Fisher-Yates shuffle in [`shuffled_ids`]).

use cortado_sim::gen::{self, Dist, SplitMix64};

/// Length of every pre-generated key stream: 2^20 keys (8 MiB of `u64`).
pub const STREAM_LEN: usize = 1 << 20;
/// `index & STREAM_MASK` wraps an index into a stream of [`STREAM_LEN`] keys.
pub const STREAM_MASK: usize = STREAM_LEN - 1;

/// One second in nanoseconds (the timer wheel's unit).
pub const SECOND_NS: u64 = 1_000_000_000;

/// `requests` keys drawn from Zipf(`s`) over `keys` distinct keys.
///
/// # Panics
///
/// If `keys` is zero or `s` is negative or not finite: the benchmarks pass constants.
pub fn zipf_keys(keys: u64, requests: usize, s: f64, seed: u64) -> Vec<u64> {
    gen::keys(Dist::Zipf { s }, keys, requests as u64, seed)
        .expect("benchmark Zipf parameters are valid")
        .collect()
}

/// `requests` uniformly random `u64` keys (all distinct in practice).
pub fn uniform_keys(requests: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..requests).map(|_| rng.next_u64()).collect()
}

/// Each key's low 32 bits as an 8-character lowercase hex `String`.
pub fn short_strings(keys: &[u64]) -> Vec<String> {
    keys.iter().map(|&k| format!("{:08x}", k as u32)).collect()
}

/// `n` deadlines in nanoseconds, log-uniform in `[min_ns, max_ns)`.
///
/// # Panics
///
/// If `min_ns` is zero or not below `max_ns`.
pub fn log_uniform_deadlines(n: usize, min_ns: u64, max_ns: u64, seed: u64) -> Vec<u64> {
    assert!(0 < min_ns && min_ns < max_ns, "need 0 < min_ns < max_ns");
    let mut rng = SplitMix64::new(seed);
    let (low, high) = ((min_ns as f64).ln(), (max_ns as f64).ln());
    (0..n)
        .map(|_| {
            let d = (low + rng.next_f64() * (high - low)).exp() as u64;
            // Rounding at the ends of the f64 range must not leave the interval.
            d.clamp(min_ns, max_ns - 1)
        })
        .collect()
}

/// `n` deadlines in nanoseconds, uniform in `[1, span_ns]`.
///
/// # Panics
///
/// If `span_ns` is zero.
pub fn uniform_deadlines(n: usize, span_ns: u64, seed: u64) -> Vec<u64> {
    assert!(span_ns > 0, "need a positive span");
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| 1 + rng.next_u64() % span_ns).collect()
}

/// The ids `0..n` in a random order.
///
/// # Panics
///
/// If `n` exceeds `u32::MAX`.
pub fn shuffled_ids(n: usize, seed: u64) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..u32::try_from(n).expect("n fits in u32")).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..ids.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        ids.swap(i, j);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn zipf_keys_same_seed_same_stream() {
        let a = zipf_keys(1000, 5000, 0.99, 7);
        assert_eq!(a.len(), 5000);
        assert_eq!(a, zipf_keys(1000, 5000, 0.99, 7));
        assert_ne!(a, zipf_keys(1000, 5000, 0.99, 8));
    }

    #[test]
    fn zipf_keys_skewed_stream_repeats_keys() {
        // At s = 0.99 over 1000 keys, 5000 draws cannot all be distinct, and stay within 1000.
        let distinct: HashSet<u64> = zipf_keys(1000, 5000, 0.99, 1).into_iter().collect();
        assert!(distinct.len() <= 1000);
        assert!(distinct.len() < 900, "{} distinct", distinct.len());
    }

    #[test]
    fn short_strings_are_eight_bytes() {
        let strings = short_strings(&uniform_keys(100, 3));
        assert!(strings.iter().all(|s| s.len() == 8));
        assert_eq!(short_strings(&[0x1234_5678_9abc_def0])[0], "9abcdef0");
    }

    #[test]
    fn log_uniform_deadlines_stay_in_range_and_cover_decades() {
        let (min, max) = (SECOND_NS, 10_000 * SECOND_NS);
        let deadlines = log_uniform_deadlines(10_000, min, max, 5);
        assert!(deadlines.iter().all(|&d| (min..max).contains(&d)));
        // Four decades, so about a quarter of the deadlines fall in each.
        for decade in 0..4 {
            let low = min * 10u64.pow(decade);
            let count = deadlines
                .iter()
                .filter(|&&d| (low..low * 10).contains(&d))
                .count();
            assert!((2000..3000).contains(&count), "decade {decade}: {count}");
        }
    }

    #[test]
    fn uniform_deadlines_stay_in_range() {
        let deadlines = uniform_deadlines(10_000, 1000, 9);
        assert!(deadlines.iter().all(|&d| (1..=1000).contains(&d)));
        assert!(deadlines.iter().any(|&d| d > 900) && deadlines.iter().any(|&d| d <= 100));
    }

    #[test]
    fn shuffled_ids_is_a_permutation_out_of_order() {
        let ids = shuffled_ids(1000, 11);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
        assert_ne!(ids, sorted);
    }
}
