//! S3-FIFO: a small FIFO that filters one-hit wonders in front of a main FIFO, plus a ghost FIFO.
//!
//! New keys enter the small queue; a key requested again while in it moves on to the main queue
//! when it reaches the small queue's end, others leave and are remembered in the ghost queue, and
//! a missed key found in the ghost queue goes straight to main. Main is a CLOCK with a 2-bit
//! counter. [`S3Fifo`] reproduces libCacheSim's `S3FIFO` (its current version) with the paper's
//! parameters, except for caches below 20 entries (see below).
//!
//! # Design
//!
//! Three queues over one slab (a key is in exactly one of them), with `c` the capacity:
//!
//! - **Sizes.** Small holds [`SMALL_RATIO`] (10 %) of `c`, `floor(0.1 c)` entries, main the rest;
//!   the ghost remembers `floor(0.9 c)` ([`GHOST_RATIO`]) keys without data.
//! - **Hits** increment the key's counter, capped at 3 ([`MAX_FREQ`], 2 bits).
//! - **Eviction**, while small + main is full: if main exceeds its share (or small is empty),
//!   main's oldest key is evicted if its counter is 0, or else re-inserted at main's head with the
//!   counter decremented (after capping at 3), and the next oldest is examined. Otherwise small's
//!   oldest key moves to main (counter reset to 0) if its counter reached [`MOVE_TO_MAIN`] (2), and
//!   the next one is examined, or else is evicted into the ghost (dropping the ghost's oldest when
//!   full), which ends the eviction.
//! - **Insertion.** A key found in the ghost leaves it and enters main; any other key enters small,
//!   except that until the first eviction a key arriving while small is full goes to main (the
//!   libCacheSim version: keys inserted while the cache fills up are kept a little longer).
//!
//! The threshold of 2 means a key must be requested twice while in small (three requests in all)
//! to be promoted on its own; a single re-request only saves it through the ghost. That is the
//! rule libCacheSim applies with `move-to-main-threshold=2`.
//!
//! Deliberate difference: with fewer than 20 entries, small holds one entry and libCacheSim then
//! refuses to insert anything (its "an object must be smaller than the small queue" check), so it
//! never hits. Here small holds at least one entry and works normally.
//!
//! # References
//!
//! 1. J. Yang, Y. Zhang, Z. Qiu, Y. Yue, K. V. Rashmi: "FIFO queues are all you need for cache
//!    eviction", SOSP 2023.
//! 2. 1a1a11a/libCacheSim: `cache/eviction/S3FIFO.c`.

use super::key_hash::{key_map, KeyMap};
use super::linked::{Links, List, Slab};
use super::{check_capacity, ReferenceError};
use crate::policy::Policy;

/// Share of the capacity given to the small queue.
pub const SMALL_RATIO: f64 = 0.1;
/// Ghost entries, as a share of the capacity.
pub const GHOST_RATIO: f64 = 0.9;
/// Counter value at which a key leaving small moves to main instead.
pub const MOVE_TO_MAIN: u8 = 2;
/// Counters saturate here (2 bits).
pub const MAX_FREQ: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queue {
    Small,
    Main,
    Ghost,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    freq: u8,
    queue: Queue,
}

/// S3-FIFO replacement. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct S3Fifo {
    capacity: usize,
    small_capacity: usize,
    main_capacity: usize,
    ghost_capacity: usize,
    /// False until the first eviction.
    has_evicted: bool,
    entries: Slab<Entry>,
    slots: KeyMap<u32>,
    links: Links,
    small: List,
    main: List,
    ghost: List,
}

impl S3Fifo {
    /// An empty S3-FIFO cache of `capacity` entries with the paper's 10 % / 90 % split.
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        // Truncating products, as libCacheSim computes them.
        let small_capacity = ((capacity as f64 * SMALL_RATIO) as usize).max(1);
        let ghost_capacity = (capacity as f64 * GHOST_RATIO) as usize;
        let slots = capacity + ghost_capacity + 1;
        Ok(Self {
            capacity,
            small_capacity,
            main_capacity: capacity.saturating_sub(small_capacity),
            ghost_capacity,
            has_evicted: false,
            entries: Slab::with_capacity(slots),
            slots: key_map(slots),
            links: Links::with_capacity(slots),
            small: List::new(),
            main: List::new(),
            ghost: List::new(),
        })
    }

    /// Keys currently cached (small and main; ghosts excluded).
    pub fn len(&self) -> usize {
        self.small.len() + self.main.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn list_mut(&mut self, queue: Queue) -> &mut List {
        match queue {
            Queue::Small => &mut self.small,
            Queue::Main => &mut self.main,
            Queue::Ghost => &mut self.ghost,
        }
    }

    /// Moves `slot` to the head of `to`, resetting its counter.
    fn relink(&mut self, slot: u32, to: Queue) {
        let from = self.entries[slot].queue;
        let mut list = *self.list_mut(from);
        self.links.unlink(&mut list, slot);
        *self.list_mut(from) = list;
        let mut list = *self.list_mut(to);
        self.links.push_newest(&mut list, slot);
        *self.list_mut(to) = list;
        let entry = &mut self.entries[slot];
        entry.queue = to;
        entry.freq = 0;
    }

    fn forget(&mut self, slot: u32) {
        let queue = self.entries[slot].queue;
        let mut list = *self.list_mut(queue);
        self.links.unlink(&mut list, slot);
        *self.list_mut(queue) = list;
        self.slots.remove(&self.entries[slot].key);
        self.entries.remove(slot);
    }

    fn evict(&mut self) {
        self.has_evicted = true;
        if self.main.len() > self.main_capacity || self.small.is_empty() {
            self.evict_main();
        } else {
            self.evict_small();
        }
    }

    fn evict_small(&mut self) {
        while let Some(slot) = self.small.oldest() {
            if self.entries[slot].freq >= MOVE_TO_MAIN {
                self.relink(slot, Queue::Main);
                continue;
            }
            if self.ghost_capacity == 0 {
                self.forget(slot);
            } else {
                if self.ghost.len() >= self.ghost_capacity {
                    if let Some(oldest) = self.ghost.oldest() {
                        self.forget(oldest);
                    }
                }
                self.relink(slot, Queue::Ghost);
            }
            return;
        }
    }

    fn evict_main(&mut self) {
        while let Some(slot) = self.main.oldest() {
            let freq = self.entries[slot].freq;
            if freq == 0 {
                self.forget(slot);
                return;
            }
            self.links.move_to_newest(&mut self.main, slot);
            self.entries[slot].freq = freq.min(MAX_FREQ) - 1;
        }
    }

    fn insert(&mut self, key: u64, queue: Queue) {
        let slot = self.entries.insert(Entry {
            key,
            freq: 0,
            queue,
        });
        self.slots.insert(key, slot);
        let mut list = *self.list_mut(queue);
        self.links.push_newest(&mut list, slot);
        *self.list_mut(queue) = list;
    }
}

impl Policy for S3Fifo {
    fn record(&mut self, key: u64) -> bool {
        let mut from_ghost = false;
        if let Some(&slot) = self.slots.get(&key) {
            let entry = &mut self.entries[slot];
            if entry.queue != Queue::Ghost {
                entry.freq = (entry.freq + 1).min(MAX_FREQ);
                return true;
            }
            self.forget(slot);
            from_ghost = true;
        }
        while self.len() >= self.capacity {
            self.evict();
        }
        let queue = if from_ghost || (!self.has_evicted && self.small.len() >= self.small_capacity)
        {
            Queue::Main
        } else {
            Queue::Small
        };
        self.insert(key, queue);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_in(s3: &S3Fifo, list: &List) -> Vec<u64> {
        s3.links
            .iter_from_newest(list)
            .map(|slot| s3.entries[slot].key)
            .collect()
    }

    /// A 20-entry cache: small holds 2, main 18, the ghost 18. Keys 100.. fill main first.
    fn filled() -> S3Fifo {
        let mut s3 = S3Fifo::new(20).unwrap();
        for k in [1, 2] {
            s3.record(k);
        }
        for k in 100..118 {
            s3.record(k);
        }
        assert_eq!(keys_in(&s3, &s3.small), vec![2, 1]);
        assert_eq!(s3.main.len(), 18);
        s3
    }

    #[test]
    fn new_sizes_follow_ten_and_ninety_percent() {
        let s3 = S3Fifo::new(250).unwrap();
        assert_eq!(
            (s3.small_capacity, s3.main_capacity, s3.ghost_capacity),
            (25, 225, 225)
        );
        let tiny = S3Fifo::new(12).unwrap();
        assert_eq!((tiny.small_capacity, tiny.main_capacity), (1, 11));
    }

    #[test]
    fn record_twice_reused_small_key_moves_to_main() {
        let mut s3 = filled();
        assert!(s3.record(1));
        assert!(s3.record(1));
        // 3 needs room: small's oldest, 1, has counter 2 and moves to main; then 2 goes to the
        // ghost, and main, now over its share, is not touched until the next eviction.
        assert!(!s3.record(3));
        assert_eq!(keys_in(&s3, &s3.small), vec![3]);
        assert_eq!(keys_in(&s3, &s3.ghost), vec![2]);
        assert_eq!(keys_in(&s3, &s3.main)[0], 1);
        assert_eq!(s3.entries[s3.slots[&1]].freq, 0);
        assert!(s3.record(1));
    }

    #[test]
    fn record_once_reused_small_key_goes_to_ghost_then_main() {
        let mut s3 = filled();
        assert!(s3.record(1));
        // 1 has counter 1 < 2: it is evicted to the ghost.
        assert!(!s3.record(3));
        assert_eq!(keys_in(&s3, &s3.ghost), vec![1]);
        // A ghost hit is a miss that inserts into main; small's oldest, 2, makes the room.
        assert!(!s3.record(1));
        assert_eq!(keys_in(&s3, &s3.ghost), vec![2]);
        assert_eq!(keys_in(&s3, &s3.main)[0], 1);
        assert_eq!(s3.main.len(), 19);
        // Main is now over its share of 18: the next miss evicts main's oldest, unused 100.
        assert!(!s3.record(4));
        assert!(!s3.slots.contains_key(&100));
        assert_eq!(s3.main.len(), 18);
    }

    #[test]
    fn record_main_key_with_counter_is_reinserted() {
        let mut s3 = filled();
        assert!(s3.record(1));
        assert!(s3.record(1));
        assert!(s3.record(100)); // main's oldest, now with counter 1
        assert!(!s3.record(3)); // 1 moves to main (19 entries), 2 goes to the ghost
                                // Main is over its share: 100 is re-inserted with its counter decremented, 101 goes.
        assert!(!s3.record(4));
        assert!(s3.slots.contains_key(&100));
        assert!(!s3.slots.contains_key(&101));
        assert_eq!(s3.entries[s3.slots[&100]].freq, 0);
        assert_eq!(keys_in(&s3, &s3.main)[0], 100);
    }

    #[test]
    fn record_tiny_cache_still_hits() {
        let mut s3 = S3Fifo::new(10).unwrap();
        assert!(!s3.record(1));
        assert!(s3.record(1));
    }
}
