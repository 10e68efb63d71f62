//! Cortado's own eviction policies, replayed through the library's real cache code.
//!
//! [`Library`] is a [`Policy`] over a `cortado::unsync::Cache<u64, ()>` built with the named
//! [`EvictionPolicy`] ([`LIBRARY_POLICIES`]), a fixed policy seed and a fixed hasher, so the same
//! trace always gives the same hit count, and that count is the one an application would see.
//!
//! # Design
//!
//! - **The library, not a copy.** Each request is `get(&key)`, and on a miss `insert(key, ())`:
//!   exactly what an application does on a cache-aside read. Everything on that path (the hash
//!   table, the slab, the policy, the sketch, the adaptive mode's miniature caches) is the
//!   library's, so a change to the library shows up here with no porting, and the speed measured
//!   here is the library's.
//! - **Deterministic.** A cache normally draws a random policy seed (sketch hashing, random
//!   admission) and hashes with a randomly keyed hasher; here the seed is fixed
//!   ([`crate::policy::DEFAULT_SEED`] unless `--seed` says otherwise) and the hasher is
//!   [`MixState`], a keyless bijective mix of the `u64` key (SplitMix64's finalizer). The
//!   library spreads every hash again with the same finalizer before its table, shards and
//!   sketch use it, so any deterministic hasher would do; this one is cheap and keeps sequential
//!   block numbers (the ARC traces) well apart on its own.
//! - **One line per policy.** [`LIBRARY_POLICIES`] maps a name to a constructor of the library's
//!   [`EvictionPolicy`]; [`crate::policy::POLICIES`] and [`crate::policy::build`] read it, so a
//!   new library policy is one line here.
//! - **Pre-sized.** The cache reserves its capacity up front (up to
//!   [`crate::policy::PRESIZE_LIMIT`] entries), so the replay measures steady-state requests
//!   rather than table growth; this changes no eviction decision.
//!
//! # References
//!
//! 1. G. L. Steele, D. Lea, C. H. Flood: "Fast splittable pseudorandom number generators",
//!    OOPSLA 2014 (the SplitMix64 finalizer).
//! 2. B. Manes: the Caffeine simulator's adapters, which replay the library's own cache the same
//!    way.

use std::hash::{BuildHasher, Hasher};

use cortado::builder::BuildError;
use cortado::policy::EvictionPolicy;
use cortado::unsync::Cache;

use super::Policy;
use crate::gen::mix64;

/// A library policy's name and the constructor of its [`EvictionPolicy`].
pub type LibraryPolicy = (&'static str, fn() -> EvictionPolicy);

/// The library's policies by name, in the order reports list them.
pub const LIBRARY_POLICIES: &[LibraryPolicy] = &[
    ("wtinylfu", EvictionPolicy::tiny_lfu),
    ("wtinylfu-static", EvictionPolicy::tiny_lfu_static),
    ("lru", EvictionPolicy::lru),
    ("lfu", EvictionPolicy::lfu),
    ("redis-lru", EvictionPolicy::redis_lru),
    ("redis-lfu", EvictionPolicy::redis_lfu),
    ("random", EvictionPolicy::random),
];

/// The library policy named `name` (exact, lowercase), without a seed.
pub fn eviction_policy(name: &str) -> Option<EvictionPolicy> {
    LIBRARY_POLICIES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, make)| make())
}

/// XORed into the key before mixing, so that key 0 does not hash to 0.
const MIX_OFFSET: u64 = 0x6a09_e667_f3bc_c909;

/// A keyless [`BuildHasher`] for `u64` keys: SplitMix64's finalizer. See the [module docs](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct MixState;

impl BuildHasher for MixState {
    type Hasher = MixHasher;

    #[inline]
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

/// The [`Hasher`] of [`MixState`]: one `u64` is mixed whole; other input is folded in 8 bytes at
/// a time.
#[derive(Debug, Clone, Copy)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; keeps the hasher total for any other key type.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, key: u64) {
        self.0 = mix64(self.0 ^ key ^ MIX_OFFSET);
    }
}

/// A library cache replayed as a [`Policy`]. See the [module docs](self).
pub struct Library {
    cache: Cache<u64, (), MixState>,
}

impl Library {
    /// A cache of `capacity` entries with `policy` (seed it with
    /// [`EvictionPolicy::with_seed`] for reproducible runs).
    pub fn new(policy: EvictionPolicy, capacity: usize) -> Result<Library, BuildError> {
        let cache = Cache::builder()
            .max_capacity(capacity as u64)
            .initial_capacity(super::presize(capacity))
            .eviction_policy(policy)
            .hasher(MixState)
            .build()?;
        Ok(Library { cache })
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("len", &self.cache.len())
            .field("max_capacity", &self.cache.max_capacity())
            .finish()
    }
}

impl Policy for Library {
    #[inline]
    fn record(&mut self, key: u64) -> bool {
        if self.cache.get(&key).is_some() {
            return true;
        }
        self.cache.insert(key, ());
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn hits(policy: &mut Library, keys: &[u64]) -> usize {
        keys.iter().filter(|&&k| policy.record(k)).count()
    }

    #[test]
    fn library_lru_matches_hand_count() {
        // Capacity 2: a b a c b a -> hit on the second a only (c evicts b, b evicts a, a misses).
        let mut lru = Library::new(EvictionPolicy::lru(), 2).unwrap();
        let got: Vec<bool> = [1, 2, 1, 3, 2, 1].iter().map(|&k| lru.record(k)).collect();
        assert_eq!(got, [false, false, true, false, false, false]);
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn library_policies_never_exceed_capacity() {
        let keys: Vec<u64> = (0..5_000u64).map(|i| mix64(i) % 300).collect();
        for (name, make) in LIBRARY_POLICIES {
            let mut policy = Library::new(make().with_seed(7), 50).unwrap();
            for &k in &keys {
                policy.record(k);
                assert!(policy.len() <= 50, "{name}: {} entries", policy.len());
            }
        }
    }

    #[test]
    fn library_same_seed_same_hits() {
        let keys: Vec<u64> = (0..20_000u64).map(|i| mix64(i) % 2_000).collect();
        for (name, make) in LIBRARY_POLICIES {
            let a = hits(&mut Library::new(make().with_seed(3), 100).unwrap(), &keys);
            let b = hits(&mut Library::new(make().with_seed(3), 100).unwrap(), &keys);
            assert_eq!(a, b, "{name}");
        }
    }

    #[test]
    fn eviction_policy_known_and_unknown_names() {
        assert_eq!(eviction_policy("lru"), Some(EvictionPolicy::lru()));
        assert_eq!(
            eviction_policy("wtinylfu"),
            Some(EvictionPolicy::tiny_lfu())
        );
        assert_eq!(eviction_policy("arc"), None);
    }

    #[test]
    fn mix_hasher_sequential_keys_spread_over_low_and_high_bits() {
        let hash = |k: u64| MixState.hash_one(k);
        let low: HashSet<u64> = (0..1024u64).map(|k| hash(k) & 1023).collect();
        let high: HashSet<u64> = (0..1024u64).map(|k| hash(k) >> 54).collect();
        // 1024 balls in 1024 bins fill about 632 of them when the hash is uniform.
        assert!(low.len() > 580, "{}", low.len());
        assert!(high.len() > 580, "{}", high.len());
        assert_ne!(hash(0), 0);
    }
}
