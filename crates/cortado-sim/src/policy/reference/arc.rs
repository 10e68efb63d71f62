//! ARC: an adaptive split between a recency list and a frequency list, steered by ghost hits.
//!
//! Keys seen once live in T1, keys seen at least twice in T2; the keys last evicted from each are
//! remembered (without data) in ghost lists B1 and B2, and a hit on a ghost moves the target size
//! `p` of T1 towards the list that would have kept it. [`Arc`] follows the paper's pseudocode the
//! way libCacheSim's `ARC` does, and matches its published hit ratios.
//!
//! # Design
//!
//! Four LRU lists share one slab and one set of links (a key is in exactly one of them). With `c`
//! the capacity, on a request for `x`:
//!
//! - **Case I, `x` in T1 or T2**: a hit; `x` moves to the MRU end of T2.
//! - **Case II, `x` in B1**: `p = min(p + max(|B2| / |B1|, 1), c)`, then REPLACE, then `x` enters
//!   T2. **Case III, `x` in B2**: `p = max(p - max(|B1| / |B2|, 1), 0)`, REPLACE, `x` enters T2.
//! - **Case IV, `x` nowhere**: if `|T1| + |B1| = c`, drop the LRU of B1 and REPLACE, or, when B1 is
//!   empty, drop the LRU of T1 outright; otherwise, when the directory holds `2c` keys, drop the
//!   LRU of B2, then REPLACE. `x` enters T1.
//! - **REPLACE**: if T1 is non-empty and `|T1| > p`, or `|T1| = p` and `x` was in B2, or T2 is
//!   empty, T1's LRU moves to B1; otherwise T2's LRU moves to B2.
//!
//! Replacement only happens when the cache is full (every key that missed is admitted), which is
//! always the case once a ghost exists. libCacheSim-compatible details: `p` and the ratios are
//! floating point (`f64`), as in the reference implementation the libCacheSim authors checked
//! theirs against; the ghost ratio is taken before `x` leaves its ghost list; and REPLACE falls
//! back to T1 when T2 is empty.
//!
//! Memory: one slot per directory key (at most `2c`): key, list tag, 8 bytes of links, a hash-map
//! entry.
//!
//! # References
//!
//! 1. N. Megiddo, D. S. Modha: "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003.
//! 2. 1a1a11a/libCacheSim: `cache/eviction/ARC.c` (the reference this module matches).

use super::key_hash::{key_map, KeyMap};
use super::linked::{Links, List, Slab};
use super::{check_capacity, ReferenceError};
use crate::policy::Policy;

/// Which of the four lists a key is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    T1,
    T2,
    B1,
    B2,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    list: Where,
}

/// Adaptive Replacement Cache. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Arc {
    capacity: usize,
    /// Target size of T1.
    p: f64,
    entries: Slab<Entry>,
    slots: KeyMap<u32>,
    links: Links,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
}

impl Arc {
    /// An empty ARC cache of `capacity` entries (it also remembers up to `capacity` ghost keys).
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        let directory = capacity.saturating_mul(2).saturating_add(1);
        Ok(Self {
            capacity,
            p: 0.0,
            entries: Slab::with_capacity(directory),
            slots: key_map(directory),
            links: Links::with_capacity(directory),
            t1: List::new(),
            t2: List::new(),
            b1: List::new(),
            b2: List::new(),
        })
    }

    /// Keys currently cached (T1 and T2; ghosts excluded).
    pub fn len(&self) -> usize {
        self.t1.len() + self.t2.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The current target size of T1.
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    fn list_mut(&mut self, which: Where) -> &mut List {
        match which {
            Where::T1 => &mut self.t1,
            Where::T2 => &mut self.t2,
            Where::B1 => &mut self.b1,
            Where::B2 => &mut self.b2,
        }
    }

    /// Moves `slot` from its list to the MRU end of `to`.
    fn relink(&mut self, slot: u32, to: Where) {
        let from = self.entries[slot].list;
        let mut list = *self.list_mut(from);
        self.links.unlink(&mut list, slot);
        *self.list_mut(from) = list;
        let mut list = *self.list_mut(to);
        self.links.push_newest(&mut list, slot);
        *self.list_mut(to) = list;
        self.entries[slot].list = to;
    }

    /// Forgets the LRU key of `which` entirely.
    fn drop_lru(&mut self, which: Where) {
        let mut list = *self.list_mut(which);
        if let Some(slot) = self.links.pop_oldest(&mut list) {
            self.slots.remove(&self.entries[slot].key);
            self.entries.remove(slot);
        }
        *self.list_mut(which) = list;
    }

    /// The paper's REPLACE: demotes the LRU of T1 or T2 to its ghost list.
    fn replace(&mut self, hit_in_b2: bool) {
        let t1 = self.t1.len() as f64;
        let from_t1 = (!self.t1.is_empty() && (t1 > self.p || (t1 == self.p && hit_in_b2)))
            || self.t2.is_empty();
        let (from, to) = if from_t1 {
            (self.t1.oldest(), Where::B1)
        } else {
            (self.t2.oldest(), Where::B2)
        };
        if let Some(slot) = from {
            self.relink(slot, to);
        }
    }

    /// Case IV: makes room for a key that is in no list.
    fn evict_for_new_key(&mut self) {
        let c = self.capacity;
        if self.t1.len() + self.b1.len() >= c {
            if self.b1.is_empty() {
                self.drop_lru(Where::T1);
            } else {
                self.drop_lru(Where::B1);
                self.replace(false);
            }
        } else {
            if self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len() >= 2 * c {
                self.drop_lru(Where::B2);
            }
            self.replace(false);
        }
    }

    fn insert(&mut self, key: u64, list: Where) {
        let slot = self.entries.insert(Entry { key, list });
        self.slots.insert(key, slot);
        let mut l = *self.list_mut(list);
        self.links.push_newest(&mut l, slot);
        *self.list_mut(list) = l;
    }
}

impl Policy for Arc {
    fn record(&mut self, key: u64) -> bool {
        let c = self.capacity as f64;
        let Some(&slot) = self.slots.get(&key) else {
            if self.len() >= self.capacity {
                self.evict_for_new_key();
            }
            self.insert(key, Where::T1);
            return false;
        };
        let hit_in_b2 = match self.entries[slot].list {
            Where::T1 | Where::T2 => {
                self.relink(slot, Where::T2);
                return true;
            }
            Where::B1 => {
                let delta = (self.b2.len() as f64 / self.b1.len() as f64).max(1.0);
                self.p = (self.p + delta).min(c);
                false
            }
            Where::B2 => {
                let delta = (self.b1.len() as f64 / self.b2.len() as f64).max(1.0);
                self.p = (self.p - delta).max(0.0);
                true
            }
        };
        // Leave the ghost list first: REPLACE must not see `key` as a ghost.
        let from = self.entries[slot].list;
        let mut list = *self.list_mut(from);
        self.links.unlink(&mut list, slot);
        *self.list_mut(from) = list;
        self.slots.remove(&key);
        self.entries.remove(slot);
        if self.len() >= self.capacity {
            self.replace(hit_in_b2);
        }
        self.insert(key, Where::T2);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(arc: &Arc, list: &List) -> Vec<u64> {
        arc.links
            .iter_from_newest(list)
            .map(|s| arc.entries[s].key)
            .collect()
    }

    #[test]
    fn record_second_access_promotes_to_t2() {
        let mut arc = Arc::new(4).unwrap();
        for k in [1, 2, 3] {
            assert!(!arc.record(k));
        }
        assert!(arc.record(2));
        assert_eq!(keys_of(&arc, &arc.t1), vec![3, 1]);
        assert_eq!(keys_of(&arc, &arc.t2), vec![2]);
    }

    #[test]
    fn record_ghost_hits_adapt_target_both_ways() {
        // c = 2, worked by hand from the pseudocode.
        let mut arc = Arc::new(2).unwrap();
        arc.record(1);
        arc.record(2); // T1 = [2, 1]
        assert!(arc.record(1)); // T1 = [2], T2 = [1]
        assert!(!arc.record(3)); // case IV-B: |T1| = 1 > p = 0, so 2 goes to B1; T1 = [3]
        assert_eq!(keys_of(&arc, &arc.b1), vec![2]);
        assert!(!arc.record(2)); // case II: p = 1; |T1| = 1 = p, not from B2, so 1 (T2) -> B2
        assert_eq!(arc.target_t1(), 1.0);
        assert_eq!(keys_of(&arc, &arc.t1), vec![3]);
        assert_eq!(keys_of(&arc, &arc.t2), vec![2]);
        assert_eq!(keys_of(&arc, &arc.b2), vec![1]);
        assert!(!arc.record(1)); // case III: p = 0; |T1| = 1 > 0, so 3 -> B1; T2 = [1, 2]
        assert_eq!(arc.target_t1(), 0.0);
        assert_eq!(keys_of(&arc, &arc.t1), Vec::<u64>::new());
        assert_eq!(keys_of(&arc, &arc.t2), vec![1, 2]);
        assert_eq!(keys_of(&arc, &arc.b1), vec![3]);
        assert!(arc.record(2));
        assert!(arc.record(1));
    }

    #[test]
    fn record_case_four_a_full_t1_drops_lru_without_ghost() {
        let mut arc = Arc::new(2).unwrap();
        for k in [1, 2, 3] {
            arc.record(k);
        }
        // |T1| + |B1| = c and B1 empty: 1 is dropped, not remembered.
        assert_eq!(keys_of(&arc, &arc.t1), vec![3, 2]);
        assert!(arc.b1.is_empty());
        assert!(!arc.record(1));
        assert_eq!(arc.target_t1(), 0.0);
    }

    #[test]
    fn record_scan_never_exceeds_directory_of_two_c() {
        let mut arc = Arc::new(3).unwrap();
        for round in 0..4u64 {
            for k in 0..10u64 {
                arc.record(k * (round % 2 + 1));
                assert!(arc.len() <= 3);
                assert!(arc.len() + arc.b1.len() + arc.b2.len() <= 6);
                assert!(arc.t1.len() + arc.b1.len() <= 3);
            }
        }
    }
}
