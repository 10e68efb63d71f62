//! CLOCK: FIFO with one reference bit per entry, which buys a referenced entry a second chance.
//!
//! A hit sets the entry's bit; on a miss with the cache full, the hand clears set bits as it sweeps
//! and evicts the first entry whose bit is already clear, whose slot the new key then takes.
//!
//! # Design
//!
//! The cache is a ring of `capacity` slots in insertion order with a hand at the oldest slot. This
//! is the same policy as a FIFO queue that re-inserts a referenced tail entry at the head with its
//! bit cleared (libCacheSim's `Clock` with `n-bit-counter=1`, `init-freq=0`), without moving any
//! key: skipping a slot is the re-insertion. New keys start with a clear bit, so a one-hit wonder
//! is evicted on the hand's first pass.
//!
//! # References
//!
//! 1. F. J. Corbató: "A Paging Experiment with the Multics System", MIT Project MAC, 1968.

use super::key_hash::{key_map, KeyMap};
use super::{check_capacity, ReferenceError};
use crate::policy::{presize, Policy};

/// CLOCK (second chance) replacement. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Clock {
    capacity: usize,
    keys: Vec<u64>,
    referenced: Vec<bool>,
    slots: KeyMap<u32>,
    hand: usize,
}

impl Clock {
    /// An empty CLOCK cache of `capacity` entries.
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        Ok(Self {
            capacity,
            keys: Vec::with_capacity(presize(capacity)),
            referenced: Vec::with_capacity(presize(capacity)),
            slots: key_map(capacity),
            hand: 0,
        })
    }

    /// Keys currently cached.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Policy for Clock {
    fn record(&mut self, key: u64) -> bool {
        if let Some(&slot) = self.slots.get(&key) {
            self.referenced[slot as usize] = true;
            return true;
        }
        if self.keys.len() < self.capacity {
            self.slots.insert(key, self.keys.len() as u32);
            self.keys.push(key);
            self.referenced.push(false);
            return false;
        }
        while self.referenced[self.hand] {
            self.referenced[self.hand] = false;
            self.hand = (self.hand + 1) % self.capacity;
        }
        self.slots.remove(&self.keys[self.hand]);
        self.slots.insert(key, self.hand as u32);
        self.keys[self.hand] = key;
        self.hand = (self.hand + 1) % self.capacity;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_referenced_entry_gets_second_chance() {
        let mut clock = Clock::new(3).unwrap();
        for k in [1, 2, 3] {
            assert!(!clock.record(k));
        }
        assert!(clock.record(1));
        // The hand clears 1's bit and evicts 2, the oldest unreferenced entry.
        assert!(!clock.record(4));
        assert!(clock.record(1));
        assert!(clock.record(3));
        assert!(!clock.record(2));
        assert_eq!(clock.len(), 3);
    }

    #[test]
    fn record_second_chance_spent_then_evicted() {
        let mut clock = Clock::new(2).unwrap();
        clock.record(1);
        clock.record(2);
        clock.record(1); // bit set on 1
        clock.record(3); // clears 1, evicts 2; ring: [1, 3], hand back at 1
        clock.record(4); // 1's bit is clear now: 1 goes
        assert!(!clock.record(1));
    }
}
