//! TinyLFU in front of one LRU list: a missed key replaces the LRU victim only if it is more frequent.
//!
//! Every request counts its key in a frequency sketch; a hit refreshes the key's recency; a miss
//! with the cache full admits the key (evicting the LRU victim) only when the key's estimated
//! frequency is strictly higher than the victim's, and otherwise leaves the cache untouched.
//!
//! # Design
//!
//! This is the design moka 0.12 ships: TinyLFU admission, no admission window, one LRU. It is a
//! reference point for W-TinyLFU: the window exists because this design shuts out keys that
//! recur at short distance but have not built up a count yet (bursty or recency-heavy traces).
//!
//! The sketch is Cortado's own [`FrequencySketch`] (4-bit Count-Min, depth 4, aging after
//! `10 x capacity` increments), sized to the capacity and keyed with the fixed [`SKETCH_SEED`] so
//! every replay gives the same hit ratio. The candidate's count includes the current request
//! (the sketch is incremented before the comparison). Ties go to the victim, and there is no
//! random admission of warm losers: that defence against hash flooding does not matter for trace
//! replay and would make results depend on a random stream.
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. moka-rs/moka 0.12: `sync_base/base_cache.rs` (admission against the LRU victim).

use cortado::sketch::FrequencySketch;

use super::key_hash::{key_map, KeyMap};
use super::linked::{Links, List, Slab};
use super::{check_capacity, ReferenceError};
use crate::policy::Policy;

/// The sketch's fixed seed: replays are reproducible.
pub const SKETCH_SEED: u64 = 0x5eed_c0de_ca11_ab1e;

/// TinyLFU admission over an LRU cache. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct TinyLfuLru {
    capacity: usize,
    sketch: FrequencySketch,
    keys: Slab<u64>,
    slots: KeyMap<u32>,
    links: Links,
    lru: List,
}

impl TinyLfuLru {
    /// An empty cache of `capacity` entries with a sketch sized for it.
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        Ok(Self {
            capacity,
            sketch: FrequencySketch::with_seed(capacity, SKETCH_SEED),
            keys: Slab::with_capacity(capacity),
            slots: key_map(capacity),
            links: Links::with_capacity(capacity),
            lru: List::new(),
        })
    }

    /// Keys currently cached.
    pub fn len(&self) -> usize {
        self.lru.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn insert(&mut self, key: u64) {
        let slot = self.keys.insert(key);
        self.slots.insert(key, slot);
        self.links.push_newest(&mut self.lru, slot);
    }
}

impl Policy for TinyLfuLru {
    fn record(&mut self, key: u64) -> bool {
        self.sketch.increment(key);
        if let Some(&slot) = self.slots.get(&key) {
            self.links.move_to_newest(&mut self.lru, slot);
            return true;
        }
        if self.lru.len() < self.capacity {
            self.insert(key);
            return false;
        }
        let Some(victim) = self.lru.oldest() else {
            return false;
        };
        let victim_key = self.keys[victim];
        if self.sketch.frequency(key) > self.sketch.frequency(victim_key) {
            self.links.unlink(&mut self.lru, victim);
            self.slots.remove(&victim_key);
            self.keys.remove(victim);
            self.insert(key);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_cold_candidate_is_rejected() {
        let mut cache = TinyLfuLru::new(2).unwrap();
        for k in [1, 2, 1, 2] {
            cache.record(k);
        }
        // 3 has been seen once, the victim 1 twice: 3 stays out.
        assert!(!cache.record(3));
        assert!(cache.record(1));
        assert!(cache.record(2));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn record_tie_keeps_victim() {
        let mut cache = TinyLfuLru::new(2).unwrap();
        cache.record(1);
        cache.record(2);
        // 3 and the LRU victim 1 have both been seen once: the tie goes to the victim.
        assert!(!cache.record(3));
        assert!(cache.record(1));
        assert!(cache.record(2));
    }

    #[test]
    fn record_frequent_candidate_replaces_lru_victim() {
        let mut cache = TinyLfuLru::new(2).unwrap();
        cache.record(1);
        cache.record(2);
        assert!(!cache.record(3)); // tie (1 vs 1): rejected
        assert!(!cache.record(3)); // 2 vs 1: admitted, evicting 1 (LRU)
        assert!(cache.record(3));
        assert!(cache.record(2));
        assert!(!cache.record(1));
    }
}
