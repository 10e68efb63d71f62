//! FIFO: evicts the key that entered the cache first, whatever happened to it since.
//!
//! A hit changes nothing; a miss inserts the key, evicting the oldest one when the cache is full.
//!
//! # Design
//!
//! A ring (`VecDeque`) in insertion order plus a set for lookups. It is the baseline that S3-FIFO,
//! SIEVE and CLOCK improve on by adding one bit or a small queue, and it matches libCacheSim's
//! `FIFO` exactly.
//!
//! # References
//!
//! 1. L. A. Belady: "A study of replacement algorithms for a virtual-storage computer", IBM Systems
//!    Journal, 1966 (FIFO among the policies compared).

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasherDefault;

use super::key_hash::KeyHasher;
use super::{check_capacity, ReferenceError};
use crate::policy::{presize, Policy};

/// First-in, first-out replacement. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Fifo {
    capacity: usize,
    order: VecDeque<u64>,
    resident: HashSet<u64, BuildHasherDefault<KeyHasher>>,
}

impl Fifo {
    /// An empty FIFO cache of `capacity` entries.
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        Ok(Self {
            capacity,
            order: VecDeque::with_capacity(presize(capacity)),
            resident: HashSet::with_capacity_and_hasher(
                presize(capacity),
                BuildHasherDefault::default(),
            ),
        })
    }

    /// Keys currently cached.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Policy for Fifo {
    fn record(&mut self, key: u64) -> bool {
        if self.resident.contains(&key) {
            return true;
        }
        if self.order.len() == self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.resident.remove(&oldest);
            }
        }
        self.order.push_back(key);
        self.resident.insert(key);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(policy: &mut Fifo, keys: &[u64]) -> Vec<bool> {
        keys.iter().map(|&k| policy.record(k)).collect()
    }

    #[test]
    fn record_hit_does_not_refresh_position() {
        let mut fifo = Fifo::new(2).unwrap();
        // 1 is hit but still evicted first when 3 arrives, unlike LRU.
        let got = hits(&mut fifo, &[1, 2, 1, 3, 1, 2]);
        assert_eq!(got, vec![false, false, true, false, false, false]);
        assert_eq!(fifo.len(), 2);
    }

    #[test]
    fn new_zero_capacity_is_error() {
        assert_eq!(Fifo::new(0).unwrap_err(), ReferenceError::ZeroCapacity);
    }
}
