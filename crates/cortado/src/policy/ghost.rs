//! A memory of the admission candidates that W-TinyLFU recently turned away.
//!
//! [`Ghost::insert`] remembers a rejected key's hash; [`Ghost::contains`] tells, with a small
//! false-positive rate and no false negatives within its span, whether a key was rejected among
//! the last `capacity / 2` rejections (and possibly up to `capacity`).
//!
//! # Design
//!
//! A key that comes back soon after being turned away has shown a short reuse distance, the one
//! kind of reuse that frequency counting over a long period undervalues; S3-FIFO admits exactly
//! such keys through its ghost queue. W-TinyLFU uses this memory the same way: a returning
//! candidate is admitted without a frequency duel (see [`Admission`](super::admission)).
//!
//! Exact ghosts (a FIFO of hashes plus a hash set) cost about 24 bytes per remembered key. This
//! one is two generations of a blocked Bloom filter: inserts go to the current generation, and
//! when it has taken half the capacity, the older generation is cleared and becomes current.
//! A lookup checks both, so a key is remembered for between `capacity / 2` and `capacity`
//! rejections. Keys cannot be removed; a returning key simply ages out.
//!
//! - [`BITS_PER_KEY`] (16) bits per remembered key and [`PROBES`] (7) probes, all inside one
//!   64-byte block ([`BLOCK_WORDS`] words) so a lookup touches one cache line per generation.
//!   The two generations' blocks for a key sit side by side in one 128-byte aligned pair, so a
//!   lookup reads two adjacent lines (which the adjacent-line prefetchers of many CPUs fetch
//!   together) rather than two anywhere.
//!   A false positive admits a cold key, which measurably costs hit ratio; fewer bits per key
//!   cost more of it (see `docs/decisions/0102-ghost-filter-bits.md`).
//! - The filter's blocks are rounded up to a power of two and a key's block is its hash's low
//!   bits, unless it is [exact](Ghost::set_capacity): then they are as many as the bits need
//!   and the block is the hash's low half scaled to their number (Lemire's fast range), for a
//!   cache whose memory is counted against its entries (see the sketch's *Width*).
//! - W-TinyLFU remembers as many keys as it holds entries
//!   ([`GHOST_SHARE`](super::wtinylfu::segments::GHOST_SHARE)), so the filter costs two bytes
//!   per cache entry.
//!
//! # References
//!
//! 1. J. Yang, Y. Zhang, Z. Qiu, Y. Yue, K. V. Rashmi: "FIFO queues are all you need for cache
//!    eviction", SOSP 2023 (the ghost queue of S3-FIFO).
//! 2. F. Putze, P. Sanders, J. Singler: "Cache-, Hash- and Space-Efficient Bloom Filters", 2007.

use crate::random::mix64;

/// Filter bits per remembered key.
pub const BITS_PER_KEY: usize = 16;
/// Bits set per key, all in one block.
pub const PROBES: u32 = 7;
/// Words per block: 512 bits, one cache line.
pub const BLOCK_WORDS: usize = 8;
/// Separates the ghost's hashing from the sketch's and the table's.
const SALT: u64 = 0x6a09_e667_f3bc_c909;

/// See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub(crate) struct Ghost {
    /// Block `b` of generation `g` is `pairs[b].0[g]`.
    pairs: Box<[Pair]>,
    current: usize,
    /// Keys inserted into the current generation.
    inserted: usize,
    /// Keys a generation takes before the older one is dropped.
    generation_capacity: usize,
    /// Blocks as many as the bits need (fast range), not a power of two (a mask).
    exact: bool,
}

/// Both generations' blocks for the same keys, on one aligned pair of cache lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(128))]
struct Pair([[u64; BLOCK_WORDS]; 2]);

impl Ghost {
    /// Sizes the filter to remember `capacity` keys, forgetting everything; `exact`: with no
    /// more blocks than the bits need (see the [module docs](self)).
    pub(crate) fn set_capacity(&mut self, capacity: usize, exact: bool) {
        let generation_capacity = capacity.div_ceil(2);
        let blocks = (generation_capacity * BITS_PER_KEY)
            .div_ceil(64 * BLOCK_WORDS)
            .max(1);
        let blocks = if exact {
            blocks
        } else {
            blocks.next_power_of_two()
        };
        self.exact = exact;
        self.pairs = vec![Pair::default(); blocks].into_boxed_slice();
        self.current = 0;
        self.inserted = 0;
        self.generation_capacity = generation_capacity;
    }

    /// The key's block (the hash's low bits, or, exact, its low half scaled to the number of
    /// blocks) and the bit positions (0..512) inside it.
    #[inline]
    fn probes(&self, hash: u64) -> (usize, u64) {
        let h = mix64(hash ^ SALT);
        let blocks = self.pairs.len() as u64;
        let block = if self.exact {
            ((h & 0xffff_ffff) * blocks) >> 32
        } else {
            h & (blocks - 1)
        };
        (block as usize, mix64(h))
    }

    #[inline]
    fn bit(bits: u64, probe: u32) -> (usize, u64) {
        let position = (bits >> (probe * 9)) & 511;
        ((position >> 6) as usize, 1u64 << (position & 63))
    }

    /// Remembers a rejected key.
    pub(crate) fn insert(&mut self, hash: u64) {
        if self.generation_capacity == 0 {
            return;
        }
        if self.inserted >= self.generation_capacity {
            self.current ^= 1;
            let current = self.current;
            for pair in self.pairs.iter_mut() {
                pair.0[current] = [0; BLOCK_WORDS];
            }
            self.inserted = 0;
        }
        let (block, bits) = self.probes(hash);
        let words = &mut self.pairs[block].0[self.current];
        for probe in 0..PROBES {
            let (word, mask) = Self::bit(bits, probe);
            words[word] |= mask;
        }
        self.inserted += 1;
    }

    /// Whether the key was (probably) rejected recently.
    #[inline]
    pub(crate) fn contains(&self, hash: u64) -> bool {
        if self.generation_capacity == 0 {
            return false;
        }
        let (block, bits) = self.probes(hash);
        self.pairs[block].0.iter().any(|words| {
            (0..PROBES).all(|probe| {
                let (word, mask) = Self::bit(bits, probe);
                words[word] & mask != 0
            })
        })
    }

    pub(crate) fn clear(&mut self) {
        self.pairs.fill(Pair::default());
        self.inserted = 0;
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_recent_insert_is_true() {
        let mut ghost = Ghost::default();
        ghost.set_capacity(1000, false);
        for key in 0..1000u64 {
            ghost.insert(mix64(key));
        }
        // The last half is always remembered; with no rotation yet past the first, all are.
        assert!((500..1000u64).all(|key| ghost.contains(mix64(key))));
    }

    #[test]
    fn contains_after_two_generations_forgets_oldest() {
        let mut ghost = Ghost::default();
        ghost.set_capacity(100, false);
        for key in 0..50u64 {
            ghost.insert(mix64(key));
        }
        for key in 1000..1100u64 {
            ghost.insert(mix64(key));
        }
        let remembered = (0..50u64).filter(|&k| ghost.contains(mix64(k))).count();
        assert!(
            remembered <= 2,
            "remembered {remembered} of the oldest generation"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: a filter's false positive rate")]
    fn contains_absent_keys_false_positive_rate_small() {
        let mut ghost = Ghost::default();
        ghost.set_capacity(10_000, false);
        for key in 0..10_000u64 {
            ghost.insert(mix64(key));
        }
        let false_positives = (1_000_000..1_100_000u64)
            .filter(|&k| ghost.contains(mix64(k)))
            .count();
        // Two full generations at 16 bits per key in 512-bit blocks: well under 0.5%.
        assert!(false_positives < 500, "false positives: {false_positives}");
    }

    #[test]
    fn set_capacity_pairs_aligned_to_two_cache_lines() {
        assert_eq!(std::mem::align_of::<Pair>(), 128);
        let mut ghost = Ghost::default();
        ghost.set_capacity(5_000, false);
        assert_eq!(ghost.pairs.as_ptr() as usize % 128, 0);
        assert_eq!(std::mem::size_of::<Pair>(), 128);
        // 2,500 keys a generation at 16 bits: 40,000 bits, rounded up to 128 blocks of 512, or
        // exact to 79.
        assert_eq!(ghost.memory_bytes(), 2 * 128 * 64);
        ghost.set_capacity(5_000, true);
        assert_eq!(ghost.memory_bytes(), 2 * 79 * 64);
    }

    #[test]
    fn contains_without_capacity_is_false() {
        let mut ghost = Ghost::default();
        ghost.insert(7);
        assert!(!ghost.contains(7));
    }
}
