//! SIEVE: one FIFO queue with a visited bit and a hand that sifts out unvisited entries.
//!
//! A hit only sets the entry's visited bit; entries never move. On a miss with the cache full, the
//! hand walks from where it stopped towards the newest end, clearing visited bits, and evicts the
//! first unvisited entry; new keys enter at the newest end, unvisited.
//!
//! # Design
//!
//! Unlike CLOCK, whose hand leaves the new key behind it, SIEVE inserts at the head while its hand
//! keeps its place between head and tail: entries that survived a pass stay in the old part of the
//! queue, and new entries are examined, and mostly evicted, quickly (lazy promotion, quick demotion).
//! When the hand passes the newest entry it wraps to the oldest. After an eviction the hand rests
//! on the evicted entry's newer neighbour, exactly as libCacheSim's `Sieve` does.
//!
//! Memory: a slot holds the key and a bit, plus 8 bytes of links and a hash-map entry.
//!
//! # References
//!
//! 1. Y. Zhang, J. Yang, Y. Yue, Y. Vigfusson, K. V. Rashmi: "SIEVE is Simpler than LRU: an
//!    Efficient Turn-Key Eviction Algorithm for Web Caches", NSDI 2024.

use super::key_hash::{key_map, KeyMap};
use super::linked::{Links, List, Slab, NIL};
use super::{check_capacity, ReferenceError};
use crate::policy::Policy;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    visited: bool,
}

/// SIEVE replacement. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Sieve {
    capacity: usize,
    entries: Slab<Entry>,
    slots: KeyMap<u32>,
    links: Links,
    queue: List,
    /// The next entry to examine, or [`NIL`] to start from the oldest.
    hand: u32,
}

impl Sieve {
    /// An empty SIEVE cache of `capacity` entries.
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        Ok(Self {
            capacity,
            entries: Slab::with_capacity(capacity),
            slots: key_map(capacity),
            links: Links::with_capacity(capacity),
            queue: List::new(),
            hand: NIL,
        })
    }

    /// Keys currently cached.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn evict(&mut self) {
        let oldest = self.queue.oldest().unwrap_or(NIL);
        let mut at = if self.hand == NIL { oldest } else { self.hand };
        while self.entries[at].visited {
            self.entries[at].visited = false;
            at = match self.links.newer(at) {
                NIL => oldest,
                newer => newer,
            };
        }
        self.hand = self.links.newer(at);
        self.links.unlink(&mut self.queue, at);
        self.slots.remove(&self.entries[at].key);
        self.entries.remove(at);
    }
}

impl Policy for Sieve {
    fn record(&mut self, key: u64) -> bool {
        if let Some(&slot) = self.slots.get(&key) {
            self.entries[slot].visited = true;
            return true;
        }
        if self.queue.len() == self.capacity {
            self.evict();
        }
        let slot = self.entries.insert(Entry {
            key,
            visited: false,
        });
        self.slots.insert(key, slot);
        self.links.push_newest(&mut self.queue, slot);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(sieve: &Sieve) -> Vec<u64> {
        sieve
            .links
            .iter_from_newest(&sieve.queue)
            .map(|s| sieve.entries[s].key)
            .collect()
    }

    #[test]
    fn record_paper_example_evicts_unvisited_and_keeps_hand() {
        // A walk-through in the style of the paper's illustration, keys A..I as 1..9, 7 entries.
        // Queue (newest first) G F E D C B A with A, B and G visited; the hand starts at the tail.
        let mut sieve = Sieve::new(7).unwrap();
        for k in 1..=7 {
            sieve.record(k);
        }
        for k in [1, 2, 7] {
            assert!(sieve.record(k));
        }
        // H arrives: the hand clears A and B, evicts C and stops at D.
        assert!(!sieve.record(8));
        assert_eq!(cached(&sieve), vec![8, 7, 6, 5, 4, 2, 1]);
        assert!(!sieve.entries[sieve.slots[&1]].visited);
        // D is visited, then I arrives: the hand clears D and evicts E; the hand moves on to F.
        assert!(sieve.record(4));
        assert!(!sieve.record(9));
        assert_eq!(cached(&sieve), vec![9, 8, 7, 6, 4, 2, 1]);
        assert_eq!(sieve.entries[sieve.hand].key, 6);
    }

    #[test]
    fn record_all_visited_wraps_and_evicts_oldest() {
        let mut sieve = Sieve::new(3).unwrap();
        for k in [1, 2, 3, 1, 2, 3] {
            sieve.record(k);
        }
        // Every bit is set: a full pass clears them all and the hand wraps to the oldest, 1.
        assert!(!sieve.record(4));
        assert_eq!(cached(&sieve), vec![4, 3, 2]);
    }
}
