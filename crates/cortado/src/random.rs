//! Seeds and a small pseudo-random generator for the places that need cheap randomness.
//!
//! Sketches key their hashes with a per-instance seed so nobody can precompute colliding keys, and
//! admission admits a losing warm candidate with a small probability. Neither needs cryptographic
//! quality, but both must differ between processes, so seeds come from the standard library's
//! randomly keyed `RandomState`.

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::hash::{BuildHasher, Hash, Hasher};

/// A fresh 64-bit seed, different in every call and every process.
pub(crate) fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}

/// Mixes 64 bits into 64 well-distributed bits (the SplitMix64 finalizer).
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A 64-bit hash of `key` keyed by `seed`, for sketches and filters that take keys of any type.
///
/// This is SipHash-1-3 (the standard library's `DefaultHasher`) over the seed followed by the key:
/// without the seed, nobody can predict which keys share a hash, and the output is uniform enough
/// for the independence arguments of Count-Min and Bloom sizing.
#[inline]
pub(crate) fn keyed_hash<Q: Hash + ?Sized>(seed: u64, key: &Q) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write_u64(seed);
    key.hash(&mut hasher);
    hasher.finish()
}

/// A xorshift64* generator: a few instructions per draw, never zero state.
#[derive(Debug, Clone)]
pub(crate) struct SmallRng(u64);

impl SmallRng {
    /// A generator started from `seed` (any value, zero included).
    pub(crate) fn new(seed: u64) -> Self {
        Self(mix64(seed) | 1)
    }

    /// The next 64 pseudo-random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_seed_two_calls_differ() {
        assert_ne!(random_seed(), random_seed());
    }

    #[test]
    fn keyed_hash_depends_on_seed_and_key() {
        assert_eq!(keyed_hash(1, "key"), keyed_hash(1, &String::from("key")));
        assert_ne!(keyed_hash(1, "key"), keyed_hash(2, "key"));
        assert_ne!(keyed_hash(1, "key"), keyed_hash(1, "kez"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 128,000 draws")]
    fn small_rng_low_bits_roughly_uniform() {
        let mut rng = SmallRng::new(7);
        let hits = (0..128_000).filter(|_| rng.next_u64() & 127 == 0).count();
        assert!((800..1200).contains(&hits), "hits = {hits}");
    }
}
