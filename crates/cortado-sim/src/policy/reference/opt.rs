//! OPT (Belady's MIN): the offline optimum, which evicts the cached key needed again farthest away.
//!
//! [`Opt`] is built from the whole request sequence and must then be replayed with exactly that
//! sequence, in order; it panics on a request past the end or (with high probability) on a key
//! that differs from the one it was built with. Two variants: [`Opt::new`] admits every missed key,
//! like every demand-paging policy, and [`Opt::with_bypass`] may also decline to cache a key whose
//! next use is farther than every cached key's, the true ceiling for policies with admission
//! control.
//!
//! # Design
//!
//! Construction walks the sequence backwards once to find, for every request, the position of
//! the next request for the same key (or "never"). During the replay a cached key is represented
//! by the position of its next use, which is unique among cached keys, so:
//!
//! - a request at position `i` hits exactly when some cached key's next use is `i`, which a bitmap
//!   over positions answers in O(1) (1 bit per request);
//! - the farthest next use comes from a max-heap of positions; entries consumed by hits are left
//!   in the heap and skipped when they surface (their bit is clear), so a hit costs one push;
//! - keys never requested again are only counted: evicting any of them is equally good, and they
//!   go first.
//!
//! Memory: 4 bytes of next-use position, 1 byte of key fingerprint and 1 bit per request, plus a
//! heap of at most `capacity + hits` positions. Positions are `u32`, so a sequence is limited to
//! `u32::MAX - 1` requests.
//!
//! libCacheSim compatibility: libCacheSim's `Belady` always admits (its eviction runs before the
//! insertion and picks the farthest next use among the keys already cached), so [`Opt::new`], not
//! [`Opt::with_bypass`], is the policy its `Belady` column measures (and matches). On a long cyclic scan over more keys than
//! entries the difference is one slot: MIN keeps `c - 1` keys and churns the last slot, MIN with
//! bypass keeps `c` (libCacheSim's `loop` cells show the `c - 1`).
//!
//! # References
//!
//! 1. L. A. Belady: "A study of replacement algorithms for a virtual-storage computer", IBM Systems
//!    Journal, 1966.
//! 2. R. L. Mattson, J. Gecsei, D. R. Slutz, I. L. Traiger: "Evaluation techniques for storage
//!    hierarchies", IBM Systems Journal, 1970 (MIN's optimality for demand paging).
//! 3. 1a1a11a/libCacheSim: `cache/eviction/Belady.c`.

use std::collections::BinaryHeap;

use super::key_hash::{key_map, KeyHasher};
use super::{check_capacity, ReferenceError};
use crate::policy::{presize, Policy};
use std::hash::Hasher;

/// Marks "never requested again".
const NEVER: u32 = u32::MAX;

/// Belady's offline optimum. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Opt {
    capacity: usize,
    bypass: bool,
    /// For each request, the position of the next request for the same key, or [`NEVER`].
    next_use: Box<[u32]>,
    /// One byte of each request's key hash, to catch a replay of a different sequence.
    fingerprint: Box<[u8]>,
    /// Bit `i` is set when a cached key's next use is position `i`.
    awaited: Box<[u64]>,
    /// Next-use positions of cached keys, farthest first; may hold consumed positions.
    heap: BinaryHeap<u32>,
    /// Cached keys that are never requested again.
    dead: usize,
    len: usize,
    position: usize,
}

impl Opt {
    /// MIN over `keys` with `capacity` entries: every missed key is admitted (libCacheSim's
    /// `Belady`).
    pub fn new(keys: &[u64], capacity: usize) -> Result<Self, ReferenceError> {
        Self::build(keys, capacity, false)
    }

    /// MIN with bypass: a missed key whose next use is farther than every cached key's (or never
    /// comes) is not admitted. The upper bound for any policy, admission filters included.
    pub fn with_bypass(keys: &[u64], capacity: usize) -> Result<Self, ReferenceError> {
        Self::build(keys, capacity, true)
    }

    fn build(keys: &[u64], capacity: usize, bypass: bool) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        if keys.len() >= NEVER as usize {
            return Err(ReferenceError::TraceTooLong {
                len: keys.len(),
                max: NEVER as usize - 1,
            });
        }
        let mut next_use = vec![NEVER; keys.len()].into_boxed_slice();
        let mut fingerprint = vec![0u8; keys.len()].into_boxed_slice();
        let mut last_seen = key_map::<u32>(1024);
        for (i, &key) in keys.iter().enumerate().rev() {
            let position = i as u32;
            if let Some(next) = last_seen.insert(key, position) {
                next_use[i] = next;
            }
            fingerprint[i] = key_fingerprint(key);
        }
        Ok(Self {
            capacity,
            bypass,
            next_use,
            fingerprint,
            awaited: vec![0; keys.len().div_ceil(64)].into_boxed_slice(),
            heap: BinaryHeap::with_capacity(presize(capacity) + 1),
            dead: 0,
            len: 0,
            position: 0,
        })
    }

    /// Keys currently cached.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn is_awaited(&self, position: u32) -> bool {
        self.awaited[position as usize / 64] & (1 << (position % 64)) != 0
    }

    #[inline]
    fn set_awaited(&mut self, position: u32, on: bool) {
        let word = &mut self.awaited[position as usize / 64];
        let bit = 1u64 << (position % 64);
        if on {
            *word |= bit;
        } else {
            *word &= !bit;
        }
    }

    /// Caches a key whose next use is `next`.
    #[inline]
    fn hold(&mut self, next: u32) {
        if next == NEVER {
            self.dead += 1;
        } else {
            self.set_awaited(next, true);
            self.heap.push(next);
        }
        self.len += 1;
    }

    /// The farthest next use among cached keys ([`NEVER`] if a dead key is cached), after
    /// discarding consumed heap entries.
    #[inline]
    fn farthest(&mut self) -> Option<u32> {
        if self.dead > 0 {
            return Some(NEVER);
        }
        while let Some(&top) = self.heap.peek() {
            if self.is_awaited(top) {
                return Some(top);
            }
            self.heap.pop();
        }
        None
    }

    /// Evicts the cached key with the farthest next use.
    #[inline]
    fn evict_farthest(&mut self) {
        match self.farthest() {
            Some(NEVER) => self.dead -= 1,
            Some(position) => {
                self.heap.pop();
                self.set_awaited(position, false);
            }
            None => return,
        }
        self.len -= 1;
    }
}

/// The top byte of the key's hash.
fn key_fingerprint(key: u64) -> u8 {
    let mut hasher = KeyHasher::default();
    hasher.write_u64(key);
    (hasher.finish() >> 56) as u8
}

impl Policy for Opt {
    /// # Panics
    ///
    /// If the replay runs past the sequence OPT was built from, or `key` is not that sequence's
    /// next key (detected with probability 255/256 per request).
    fn record(&mut self, key: u64) -> bool {
        let i = self.position;
        assert!(
            i < self.next_use.len(),
            "OPT replayed past the {} requests it was built from",
            self.next_use.len()
        );
        assert!(
            self.fingerprint[i] == key_fingerprint(key),
            "OPT replayed with a different sequence than it was built from (request {i})"
        );
        self.position += 1;
        let position = i as u32;
        let next = self.next_use[i];
        if self.is_awaited(position) {
            // The heap entry for `position` is now consumed; it is skipped when it surfaces.
            self.set_awaited(position, false);
            self.len -= 1;
            self.hold(next);
            return true;
        }
        if self.len >= self.capacity {
            if self.bypass {
                let farthest = self.farthest().unwrap_or(NEVER);
                if next == NEVER || next >= farthest {
                    return false;
                }
            }
            self.evict_farthest();
        }
        self.hold(next);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(opt: &mut Opt, keys: &[u64]) -> Vec<bool> {
        keys.iter().map(|&k| opt.record(k)).collect()
    }

    #[test]
    fn record_evicts_farthest_next_use() {
        // c = 2. At the miss on 3 (position 2) the cache holds 1 (next at 4) and 2 (next at 3):
        // 1 is farther, so it goes; 2 then hits, 1 misses and evicts 3 (never again), 2 hits.
        let keys = [1, 2, 3, 2, 1, 2];
        let mut opt = Opt::new(&keys, 2).unwrap();
        assert_eq!(
            hits(&mut opt, &keys),
            vec![false, false, false, true, false, true]
        );
        assert_eq!(opt.len(), 2);
    }

    #[test]
    fn record_classic_example_counts_optimal_faults() {
        // The textbook reference string with 3 frames: MIN takes 9 faults on these 20 requests.
        let keys = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        let mut opt = Opt::new(&keys, 3).unwrap();
        let misses = hits(&mut opt, &keys).iter().filter(|&&h| !h).count();
        assert_eq!(misses, 9);
    }

    #[test]
    fn record_cyclic_scan_bypass_beats_demand_paging() {
        // Keys 0..5 cycled 4 times, 3 entries. With bypass, 0, 1 and 2 stay and hit in each of the
        // 3 later cycles: 9 hits. Without, the newcomer must take a slot (worked by hand): the
        // later cycles hit {0, 1, 4}, {0, 3, 4} and {2, 3}, 8 hits.
        let keys: Vec<u64> = (0..4).flat_map(|_| 0..5u64).collect();
        let mut min = Opt::new(&keys, 3).unwrap();
        let mut bypass = Opt::with_bypass(&keys, 3).unwrap();
        let min_hits = hits(&mut min, &keys).iter().filter(|&&h| h).count();
        let bypass_hits = hits(&mut bypass, &keys).iter().filter(|&&h| h).count();
        assert_eq!(bypass_hits, 9);
        assert_eq!(min_hits, 8);
    }

    #[test]
    fn record_bypass_never_reused_key_is_not_cached() {
        let keys = [1, 2, 9, 1, 2];
        let mut opt = Opt::with_bypass(&keys, 2).unwrap();
        assert_eq!(hits(&mut opt, &keys), vec![false, false, false, true, true]);
    }

    #[test]
    #[should_panic(expected = "different sequence")]
    fn record_other_sequence_panics() {
        let keys: Vec<u64> = (0..64).collect();
        let mut opt = Opt::new(&keys, 4).unwrap();
        for k in 1000..1064u64 {
            opt.record(k);
        }
    }

    #[test]
    #[should_panic(expected = "past the")]
    fn record_past_end_panics() {
        let mut opt = Opt::new(&[1, 2], 4).unwrap();
        for k in [1, 2, 1] {
            opt.record(k);
        }
    }

    #[test]
    fn new_zero_capacity_is_error() {
        assert_eq!(Opt::new(&[1], 0).unwrap_err(), ReferenceError::ZeroCapacity);
    }
}
