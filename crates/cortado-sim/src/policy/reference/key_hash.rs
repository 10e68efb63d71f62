//! A fast, fixed hash for the `u64` keys of a trace, and the hash map type the policies index with.
//!
//! [`KeyMap`] maps a key to a slot index; every policy looks each request up in one, so the hash is
//! on the hot path of every replay.
//!
//! # Design
//!
//! The standard library's SipHash costs more than the rest of a FIFO or SIEVE step. Trace keys are
//! not adversarial (the simulator replays files, it does not face attackers), so a fixed folded
//! multiply is enough: the 128-bit product of the key and an odd constant, high half XOR low half.
//! It spreads sequential block numbers and keys that share their low bits (aligned addresses) over
//! both the bucket bits and the 7 tag bits that the `std` (hashbrown) table reads from the top.
//!
//! # References
//!
//! 1. O. Peters: foldhash, the folded-multiply hash that hashbrown ships by default.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// An odd 64-bit constant (the golden ratio's fraction, 2^64 / phi).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
/// XORed in first so that key 0 does not hash to 0.
const OFFSET: u64 = 0x2d35_8dcc_aa6c_78a5;

/// A [`Hasher`] for one `u64` key (a folded multiply). Other inputs fall back to FNV-1a.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; FNV-1a keeps the hasher total for any other key type.
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }

    #[inline]
    fn write_u64(&mut self, key: u64) {
        let product = u128::from(key ^ OFFSET) * u128::from(MULTIPLIER);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// A hash map from trace keys, with [`KeyHasher`].
pub type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// An empty [`KeyMap`] with room for `capacity` keys (at most [`crate::policy::PRESIZE_LIMIT`]).
pub fn key_map<V>(capacity: usize) -> KeyMap<V> {
    HashMap::with_capacity_and_hasher(
        crate::policy::presize(capacity),
        BuildHasherDefault::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(key: u64) -> u64 {
        BuildHasherDefault::<KeyHasher>::default().hash_one(key)
    }

    #[test]
    fn hash_aligned_keys_top_bits_differ() {
        // Keys that share their low 20 bits must still spread over the 7 tag bits at the top.
        let tags: std::collections::HashSet<u64> =
            (0..256u64).map(|i| hash(i << 20) >> 57).collect();
        assert!(tags.len() > 64, "only {} distinct tags", tags.len());
    }

    #[test]
    fn hash_sequential_keys_low_bits_differ() {
        let buckets: std::collections::HashSet<u64> =
            (0..1024u64).map(|i| hash(i) & 1023).collect();
        assert!(
            buckets.len() > 550,
            "only {} distinct buckets",
            buckets.len()
        );
    }

    #[test]
    fn key_map_insert_then_get_finds_value() {
        let mut map = key_map(4);
        map.insert(7u64, 1u32);
        map.insert(u64::MAX, 2);
        assert_eq!(map.get(&7), Some(&1));
        assert_eq!(map.get(&u64::MAX), Some(&2));
        assert_eq!(map.get(&8), None);
    }
}
