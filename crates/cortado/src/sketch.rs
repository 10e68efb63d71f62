//! A probabilistic multiset that estimates how often each key was seen recently, for TinyLFU admission.
//!
//! [`FrequencySketch::frequency`] never under-counts a key's increments since the last aging, up to
//! the counter limit of 15; it may over-count when keys collide in all four of their counters.
//!
//! The sketch takes a **64-bit hash of the key, not the key**: the caller hashes once and passes
//! the same hash to [`increment`](FrequencySketch::increment),
//! [`frequency`](FrequencySketch::frequency) and the others, as a cache does with the hash it
//! already computed for its table. Two keys with the same hash are one key to the sketch. The
//! standalone [`CountMin`](crate::count_min::CountMin) and
//! [`BloomFilter`](crate::bloom::BloomFilter) differ: they take the key itself (any `Hash`
//! type) and hash it with their own seeded SipHash.
//!
//! ```
//! use std::hash::BuildHasher;
//!
//! use cortado::sketch::FrequencySketch;
//!
//! let hasher = std::collections::hash_map::RandomState::new();
//! let mut sketch = FrequencySketch::new(1_000);
//! let espresso = hasher.hash_one("espresso");
//! sketch.increment(espresso);
//! sketch.increment(espresso);
//! assert_eq!(sketch.frequency(espresso), 2);
//! assert_eq!(sketch.frequency(hasher.hash_one("ristretto")), 0);
//! ```
//!
//! # Design
//!
//! This is a 4-bit Count-Min sketch laid out the way Caffeine's `FrequencySketch` is. Admission only
//! needs to compare two frequencies, and the comparison stops mattering beyond a handful of hits, so
//! four bits per counter ([`MAX_COUNT`] = 15) are enough and sixteen counters fit in one `u64`.
//!
//! - **Depth 4, one cache line per key.** The table is an array of 64-byte blocks (eight `u64`
//!   words). A key hashes to one block; each of its four counters lives in its own pair of words in
//!   that block, at a position chosen by another 8 bits of the hash. A lookup therefore touches one
//!   cache line instead of four. The blocks are aligned to 64 bytes: a plain `u64` array is
//!   aligned to 16 by the allocator (large ones come from `mmap` at a page plus 16), and then
//!   every block straddled two lines (see `docs/decisions/0123-sketch-block-alignment.md`). The
//!   price: the table is zeroed when allocated (about half a millisecond per MiB, paid by the
//!   insert that sizes it) instead of arriving as zeroed pages.
//! - **Width.** The table holds `next_power_of_two(capacity)` words, i.e. 16 counters per cached
//!   entry, at least one block: 8 to 16 bytes per entry of the cache; a key's block is the low
//!   bits of its mixed hash's high half. A sketch made [exact](FrequencySketch::with_seed_exact)
//!   holds `capacity` words rounded up to whole blocks instead, and picks the block by scaling
//!   the high half to the number of blocks (a multiply and a shift, Lemire's fast range): a
//!   cache whose memory is counted against its entries (a server's) pays the rounding in
//!   entries, while a cache counted in entries keeps the extra counters, which cost collisions
//!   when removed (see `docs/decisions/0223-server-wtinylfu-memory.md`).
//! - **Resizing keeps the counts.** A key's counters sit at the same places within its block
//!   whatever the width, and the keys of a new block come from the old blocks it overlaps (in the
//!   hash range, or in the low bits both widths keep); so each new block takes, counter by
//!   counter, the largest of those. No key's count goes down; a key may gain what its new
//!   neighbours had, as in a narrower table, and the next agings wear that off. A cache can then
//!   follow its size as it changes without losing what it has seen.
//! - **Aging.** Once the running count of successful increments reaches [`SAMPLE_FACTOR`] x
//!   capacity, every counter is halved (a shift and a mask per word), so the sketch reflects
//!   recent popularity and a formerly hot key fades out. The running count is halved too, less
//!   the odd counters' lost halves, as in the paper and in Caffeine: it keeps standing for the
//!   counts still held, so after the first aging the next ones come after fewer new increments
//!   (about 0.6 x the period over distinct keys, measured with `with_seed(1_000, 1)`).
//! - **Keyed hash.** The caller passes a 64-bit hash of the key (see above); the sketch mixes it
//!   with a random per-instance seed before choosing the block and counters, so an attacker who
//!   knows the cache's hash function still cannot precompute keys that share counters with a
//!   victim.
//! - **Plain update.** Every one of a key's four counters is incremented. Conservative update (only
//!   the smallest ones) lowers over-counting, but with 16 counters per entry there is little of it
//!   to lower (see `docs/decisions/0124-sketch-plain-update.md`).
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. G. Cormode, S. Muthukrishnan: "An Improved Data Stream Summary: The Count-Min Sketch and its
//!    Applications", Journal of Algorithms, 2005.
//! 3. B. Manes: Caffeine's `FrequencySketch` (the block layout).

use crate::random::{mix64, random_seed};

/// The largest value a 4-bit counter holds.
pub const MAX_COUNT: u8 = 15;
/// Aging happens after `SAMPLE_FACTOR * capacity` successful increments.
pub const SAMPLE_FACTOR: usize = 10;

/// Words per 64-byte block.
const BLOCK_WORDS: usize = 8;
/// One block of counters, aligned to a cache line (see [Design](self#design)).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(64))]
struct Block([u64; BLOCK_WORDS]);
/// Keeps the low three bits of each nibble after a right shift by one: halves sixteen counters.
const RESET_MASK: u64 = 0x7777_7777_7777_7777;
/// The low bit of every nibble: counts the odd counters whose half is lost when halving.
const ONE_MASK: u64 = 0x1111_1111_1111_1111;

/// A 4-bit, depth-4 Count-Min sketch with periodic aging, fed 64-bit key hashes that the caller
/// computes (unlike [`CountMin`](crate::count_min::CountMin), which takes keys). See the
/// [module docs](self).
#[derive(Clone)]
pub struct FrequencySketch {
    table: Box<[Block]>,
    /// The running count of successful increments: since the start, or since the last aging,
    /// which halves it (less the halves that odd counters lose).
    size: usize,
    /// Aging threshold.
    sample_size: usize,
    seed: u64,
    /// Sized to the capacity (fast range), not to a power of two (a mask).
    exact: bool,
}

impl std::fmt::Debug for FrequencySketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrequencySketch")
            .field("words", &(self.table.len() * BLOCK_WORDS))
            .field("size", &self.size)
            .field("sample_size", &self.sample_size)
            .finish_non_exhaustive()
    }
}

impl FrequencySketch {
    /// A sketch sized for a cache of `capacity` entries, with a random seed.
    pub fn new(capacity: usize) -> Self {
        Self::with_seed(capacity, random_seed())
    }

    /// A sketch sized for `capacity` entries whose hashing is keyed by `seed` (reproducible runs).
    pub fn with_seed(capacity: usize, seed: u64) -> Self {
        Self::empty(seed, false).sized(capacity)
    }

    /// A sketch of `capacity` words rounded up to whole blocks, not to a power of two, and kept
    /// so when resized (see *Width* in the [module docs](self)).
    pub fn with_seed_exact(capacity: usize, seed: u64) -> Self {
        Self::empty(seed, true).sized(capacity)
    }

    fn empty(seed: u64, exact: bool) -> Self {
        Self {
            table: Box::new([]),
            size: 0,
            sample_size: 0,
            seed,
            exact,
        }
    }

    fn sized(mut self, capacity: usize) -> Self {
        self.ensure_capacity(capacity);
        self
    }

    /// Resizes for a cache of `capacity` entries if that needs a bigger table, keeping the
    /// counts (see [`resize`](Self::resize)). The aging period becomes `SAMPLE_FACTOR` x
    /// `capacity` either way (replacing one set by [`set_sample_size`](Self::set_sample_size)),
    /// so a smaller capacity ages sooner; if the running count of increments is already past
    /// it, the next increment ages the sketch, once.
    pub fn ensure_capacity(&mut self, capacity: usize) {
        if self.blocks_for(capacity) > self.table.len() {
            self.resize(capacity);
        } else {
            self.set_period_for(capacity);
        }
    }

    /// Sizes the table for a cache of `capacity` entries, larger or smaller, keeping every
    /// key's count (a key may gain its new neighbours' counts: see *Resizing* in the
    /// [module docs](self)); the aging period becomes `SAMPLE_FACTOR` x `capacity`, as with
    /// [`ensure_capacity`](Self::ensure_capacity).
    pub fn resize(&mut self, capacity: usize) {
        self.set_period_for(capacity);
        let blocks = self.blocks_for(capacity);
        if blocks == self.table.len() {
            return;
        }
        let old = std::mem::replace(
            &mut self.table,
            vec![Block::default(); blocks].into_boxed_slice(),
        );
        if old.is_empty() {
            return;
        }
        if !self.exact {
            // Masks: a key's block is its hash's low bits, so new block `c` holds the keys of
            // the old blocks equal to it in the bits both widths keep.
            let (new_mask, old_mask) = (blocks - 1, old.len() - 1);
            let shared = new_mask & old_mask;
            for (c, block) in self.table.iter_mut().enumerate() {
                let first = c & shared;
                for from in old.iter().skip(first).step_by(shared + 1) {
                    for (word, &other) in block.0.iter_mut().zip(&from.0) {
                        *word = nibble_max(*word, other);
                    }
                }
            }
            return;
        }
        // New block `c` holds the hashes `x` (the high halves) with `x * blocks >> 32 == c`,
        // the range from `ceil(c * 2^32 / blocks)`; the old blocks of its first and last hash
        // bound those it overlaps.
        let first_hash = |c: usize| ((c as u128) << 32).div_ceil(blocks as u128) as u64;
        let old_block = |x: u64| ((u128::from(x) * old.len() as u128) >> 32) as usize;
        for (c, block) in self.table.iter_mut().enumerate() {
            let last = first_hash(c + 1).saturating_sub(1).min(u64::from(u32::MAX));
            for from in &old[old_block(first_hash(c))..=old_block(last)] {
                for (word, &other) in block.0.iter_mut().zip(&from.0) {
                    *word = nibble_max(*word, other);
                }
            }
        }
    }

    /// Blocks for a cache of `capacity` entries: a word per entry (rounded up to a power of two
    /// unless exact), at least one block, at most 2^30 words (8 GiB, the most a sketch may
    /// take).
    fn blocks_for(&self, capacity: usize) -> usize {
        let words = capacity.clamp(1, 1 << 30);
        let words = if self.exact {
            words
        } else {
            words.next_power_of_two()
        };
        words.div_ceil(BLOCK_WORDS)
    }

    /// Ages every `SAMPLE_FACTOR` x `capacity` increments.
    fn set_period_for(&mut self, capacity: usize) {
        let capacity = capacity.clamp(1, 1 << 30);
        self.sample_size = capacity.saturating_mul(SAMPLE_FACTOR).max(SAMPLE_FACTOR);
        self.size = self.size.min(self.sample_size);
    }

    /// Ages (halves every counter) when the running count of successful increments reaches
    /// `increments` instead of the default `SAMPLE_FACTOR` x capacity (see *Aging* in the
    /// [module docs](self): an aging halves the count too, so later agings come after about
    /// 0.6 x the period). A longer period remembers more history; a shorter one follows a
    /// changing workload faster. If the running count is already past the new period, the next
    /// increment ages the sketch, once.
    pub fn set_sample_size(&mut self, increments: usize) {
        self.sample_size = increments.max(1);
        // Past the new period, halving the count once must end it (or the next increments
        // would halve every counter again and again).
        self.size = self.size.min(self.sample_size);
    }

    /// The running count of successful increments at which all counters are halved.
    pub fn sample_size(&self) -> usize {
        self.sample_size
    }

    /// Heap bytes used by the counters.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.table)
    }

    /// The index of the key's block, and for each depth i the word (2i or 2i + 1 within the
    /// block) and the counter's bit shift in it.
    #[inline]
    fn positions(&self, hash: u64) -> (usize, [(usize, u32); 4]) {
        let h = mix64(hash ^ self.seed);
        let block = self.block_of(h);
        let counter_hash = h as u32;
        let mut out = [(0, 0); 4];
        for (i, slot) in out.iter_mut().enumerate() {
            let byte = counter_hash >> (i * 8);
            // Depth i owns words 2i and 2i+1 of the block; one bit picks the word, four the nibble.
            *slot = ((i << 1) + (byte & 1) as usize, ((byte >> 1) & 15) << 2);
        }
        (block, out)
    }

    /// The block that the mixed hash `h` selects: its high half's low bits, or, exact, its high
    /// half scaled to the number of blocks.
    #[inline]
    fn block_of(&self, h: u64) -> usize {
        let blocks = self.table.len() as u64;
        let block = if self.exact {
            ((h >> 32) * blocks) >> 32
        } else {
            (h >> 32) & (blocks - 1)
        };
        block as usize
    }

    /// Loads the block of the key with this hash, so that a following
    /// [`increment`](Self::increment) or [`frequency`](Self::frequency) finds it in the CPU
    /// cache. Issuing several of these back to back overlaps their cache misses.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let block = self.block_of(mix64(hash ^ self.seed));
        std::hint::black_box(self.table[block].0[0]);
    }

    /// Counts one more occurrence of the key with this hash (the key's 64-bit hash, computed by
    /// the caller: see the [module docs](self)).
    #[inline]
    pub fn increment(&mut self, hash: u64) {
        let (words, positions) = self.block_mut(hash);
        // Branch-free: a hot key's counters sit at 15, which made "is it saturated?" branches
        // mispredict on skewed workloads.
        let mut added = 0u64;
        for (word, shift) in positions {
            let below_max = u64::from((words[word] >> shift) & 0xf != 0xf);
            words[word] += below_max << shift;
            added |= below_max;
        }
        self.count_increments(added as usize);
    }

    /// Counts `count` more occurrences of the key with this hash at once: the counters end where
    /// `count` calls of [`increment`](Self::increment) would leave them, in one visit to the
    /// key's block. The only difference is that an aging due in the middle happens after them.
    #[inline]
    pub fn increment_by(&mut self, hash: u64, count: u8) {
        let (words, positions) = self.block_mut(hash);
        let count = u64::from(count.min(MAX_COUNT));
        // One increment counts while any of the four counters is below the ceiling, so
        // `count` of them count up to the headroom of the lowest counter.
        let mut counted = 0;
        for (word, shift) in positions {
            let value = (words[word] >> shift) & 0xf;
            let added = count.min(u64::from(MAX_COUNT) - value);
            words[word] += added << shift;
            counted = counted.max(added);
        }
        self.count_increments(counted as usize);
    }

    /// The key's block, and its four counters' (word, shift) in it.
    #[inline]
    fn block_mut(&mut self, hash: u64) -> (&mut [u64; BLOCK_WORDS], [(usize, u32); 4]) {
        let (block, positions) = self.positions(hash);
        let words = &mut self.table[block].0;
        (words, positions)
    }

    /// Adds `increments` successful increments to the period, aging at its end.
    #[inline]
    fn count_increments(&mut self, increments: usize) {
        self.size += increments;
        if self.size >= self.sample_size {
            self.age();
        }
    }

    /// The estimated number of occurrences (0..=15) of the key with this hash.
    #[inline]
    pub fn frequency(&self, hash: u64) -> u8 {
        let (block, positions) = self.positions(hash);
        let words = &self.table[block].0;
        positions
            .iter()
            .map(|&(word, shift)| ((words[word] >> shift) & 0xf) as u8)
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter and the running count (aging). Called automatically when the count
    /// reaches `sample_size`.
    ///
    /// Out of line and cold: inlined into `increment` and `increment_by`, its loop made them
    /// save and restore more registers on every call, for a pass that comes once per
    /// `sample_size` increments (see `docs/decisions/0105-hot-path-inlining.md`).
    #[cold]
    #[inline(never)]
    pub fn age(&mut self) {
        let mut odd = 0usize;
        for word in self.table.iter_mut().flat_map(|block| block.0.iter_mut()) {
            odd += (*word & ONE_MASK).count_ones() as usize;
            *word = (*word >> 1) & RESET_MASK;
        }
        self.size = self.size.saturating_sub(odd >> 2) >> 1;
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.table.fill(Block::default());
        self.size = 0;
    }
}

/// The larger of each pair of 4-bit counters of `a` and `b`: the even and the odd counters
/// apart, each in an 8-bit lane whose high bit is free to take the comparison's borrow.
fn nibble_max(a: u64, b: u64) -> u64 {
    const LOW: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let lane_max = |x: u64, y: u64| {
        // A lane's high bit stays set where x >= y (x - y borrows nothing from it).
        let x_at_least_y = ((x | HIGH_BITS) - y) & HIGH_BITS;
        let mask = (x_at_least_y >> 7) * 0xff;
        (x & mask) | (y & !mask)
    };
    lane_max(a & LOW, b & LOW) | lane_max(a >> 4 & LOW, b >> 4 & LOW) << 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequency_unseen_key_is_zero() {
        let sketch = FrequencySketch::with_seed(64, 1);
        assert_eq!(sketch.frequency(42), 0);
    }

    #[test]
    fn increment_by_matches_repeated_increments() {
        // Small tables so that keys share counters and some saturate.
        let mut one_by_one = FrequencySketch::with_seed(64, 3);
        let mut batched = FrequencySketch::with_seed(64, 3);
        one_by_one.set_sample_size(usize::MAX);
        batched.set_sample_size(usize::MAX);
        let mut rng = crate::random::SmallRng::new(9);
        for _ in 0..if cfg!(miri) { 200 } else { 2_000 } {
            let hash = rng.next_u64() % 300;
            let count = (rng.next_u64() % 20) as u8;
            for _ in 0..count.min(MAX_COUNT) {
                one_by_one.increment(hash);
            }
            batched.increment_by(hash, count);
            assert_eq!(
                batched.size, one_by_one.size,
                "size after {count} of {hash}"
            );
        }
        assert_eq!(batched.table, one_by_one.table);
    }

    #[test]
    fn increment_by_past_sample_size_ages() {
        let mut sketch = FrequencySketch::with_seed(64, 1);
        sketch.set_sample_size(20);
        sketch.increment_by(5, 15);
        assert_eq!(sketch.frequency(5), 15);
        sketch.increment_by(6, 15);
        // 30 counted increments passed the period of 20: both halved.
        assert_eq!((sketch.frequency(5), sketch.frequency(6)), (7, 7));
    }

    #[test]
    fn increment_repeated_saturates_at_fifteen() {
        let mut sketch = FrequencySketch::with_seed(1024, 1);
        for expected in 1..=20u8 {
            sketch.increment(7);
            assert_eq!(sketch.frequency(7), expected.min(MAX_COUNT));
        }
    }

    #[test]
    fn frequency_many_keys_never_below_true_count() {
        let mut sketch = FrequencySketch::with_seed(512, 3);
        let mut truth = std::collections::HashMap::new();
        // 2,000 increments stays under the aging threshold of 5,120.
        for i in 0..2_000u64 {
            let key = mix64(i % 300);
            sketch.increment(key);
            *truth.entry(key).or_insert(0u8) += 1;
        }
        for (key, count) in truth {
            assert!(sketch.frequency(key) >= count.min(MAX_COUNT));
        }
    }

    #[test]
    fn age_after_sample_size_halves_counts() {
        let mut sketch = FrequencySketch::with_seed(16, 9);
        for _ in 0..8 {
            sketch.increment(1);
        }
        assert_eq!(sketch.frequency(1), 8);
        // Fill up to the threshold with other keys; the threshold increment triggers the halving.
        let mut k = 100u64;
        while sketch.size != 0 && sketch.size < sketch.sample_size() - 1 {
            sketch.increment(mix64(k));
            k += 1;
        }
        let before = sketch.frequency(1);
        sketch.increment(mix64(k + 1));
        let after = sketch.frequency(1);
        assert!(
            after <= before / 2 + 1 && after >= before / 2,
            "before {before}, after {after}"
        );
        assert!(sketch.size < sketch.sample_size() / 2 + 1);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "long stream: 30,000 increments into a period of 40,960"
    )]
    fn ensure_capacity_smaller_past_new_period_halves_counts_once() {
        // 30,000 increments into a period of 40,960, then a capacity whose period is 160: the
        // count of increments stayed above the new period, so every increment after it halved
        // all the counters again (15 fell to 0 in five increments).
        let mut sketch = FrequencySketch::with_seed(4_096, 7);
        for _ in 0..15 {
            sketch.increment(1);
        }
        for k in 0..30_000u64 {
            sketch.increment(mix64(k / 2 + 2));
        }
        assert_eq!(sketch.frequency(1), 15);
        sketch.ensure_capacity(16);
        for k in 0..5u64 {
            sketch.increment(mix64(k + 100_000));
        }
        assert_eq!(sketch.frequency(1), 7);
    }

    #[test]
    fn with_seed_exact_capacity_not_power_of_two_one_word_per_entry() {
        for (capacity, blocks, rounded) in [
            (1, 1, 1),
            (100, 13, 16),
            (4_096, 512, 512),
            (5_000, 625, 1_024),
        ] {
            let sketch = FrequencySketch::with_seed_exact(capacity, 3);
            assert_eq!(sketch.memory_bytes(), blocks * 64, "capacity {capacity}");
            let sketch = FrequencySketch::with_seed(capacity, 3);
            assert_eq!(sketch.memory_bytes(), rounded * 64, "capacity {capacity}");
        }
    }

    /// Counts 2,000 keys 0 to 6 times each in `sketch`; the keys and the counts it reads.
    fn counted_keys(sketch: &mut FrequencySketch) -> (Vec<u64>, Vec<u8>) {
        let keys: Vec<u64> = (0..2_000u64).map(mix64).collect();
        for (n, &key) in keys.iter().enumerate() {
            for _ in 0..n % 7 {
                sketch.increment(key);
            }
        }
        let counts = keys.iter().map(|&k| sketch.frequency(k)).collect();
        (keys, counts)
    }

    #[test]
    fn resize_power_of_two_smaller_or_larger_keeps_every_count() {
        let mut sketch = FrequencySketch::with_seed(1_024, 9);
        let (keys, before) = counted_keys(&mut sketch);
        for capacity in [2_048, 256, 4_096] {
            sketch.resize(capacity);
            assert_eq!(sketch.memory_bytes(), capacity * 8);
            for (&key, &count) in keys.iter().zip(&before) {
                assert!(sketch.frequency(key) >= count, "capacity {capacity}");
            }
        }
    }

    #[test]
    fn resize_exact_smaller_or_larger_keeps_every_count() {
        let mut sketch = FrequencySketch::with_seed_exact(1_000, 9);
        let (keys, before) = counted_keys(&mut sketch);
        let unseen_at_zero = |sketch: &FrequencySketch| {
            (10_000..11_000u64)
                .filter(|&k| sketch.frequency(mix64(k)) == 0)
                .count()
        };
        for capacity in [1_300, 700, 333, 4_000] {
            sketch.resize(capacity);
            assert_eq!(sketch.memory_bytes(), capacity.div_ceil(8) * 64);
            for (&key, &count) in keys.iter().zip(&before) {
                assert!(
                    sketch.frequency(key) >= count,
                    "capacity {capacity}: {} < {count}",
                    sketch.frequency(key)
                );
            }
            // Not every key took on its neighbours' counts: grown from the sized table, unseen
            // keys still read 0.
            if capacity == 1_300 {
                let unseen = unseen_at_zero(&sketch);
                assert!(unseen > 800, "unseen keys at 0: {unseen}");
            }
        }
    }

    #[test]
    fn nibble_max_every_pair_of_counters() {
        let scalar = |a: u64, b: u64| {
            (0..16).fold(0u64, |out, i| {
                let shift = i * 4;
                out | ((a >> shift & 0xf).max(b >> shift & 0xf) << shift)
            })
        };
        for x in 0..16u64 {
            for y in 0..16u64 {
                let (a, b) = (x * ONE_MASK, y * ONE_MASK);
                assert_eq!(nibble_max(a, b), scalar(a, b), "{x} {y}");
            }
        }
        for k in 0..1_000u64 {
            let (a, b) = (mix64(k), mix64(k + 1_000_000));
            assert_eq!(nibble_max(a, b), scalar(a, b));
        }
    }

    #[test]
    fn age_halves_each_counter_exactly() {
        let mut sketch = FrequencySketch::with_seed(64, 5);
        for _ in 0..13 {
            sketch.increment(11);
        }
        sketch.age();
        assert_eq!(sketch.frequency(11), 6);
    }

    #[test]
    fn seeds_differ_positions_differ() {
        let a = FrequencySketch::with_seed(1 << 16, 1);
        let b = FrequencySketch::with_seed(1 << 16, 2);
        let same = (0..1000u64)
            .filter(|&k| a.positions(k).0 == b.positions(k).0)
            .count();
        // 8,192 blocks: two independent seeds agree on a block by chance about 1/8192 of the time.
        assert!(same < 10, "same = {same}");
    }

    #[test]
    fn with_seed_any_capacity_blocks_64_aligned() {
        assert_eq!(std::mem::align_of::<Block>(), 64);
        for capacity in [1, 100, 4096, 100_000] {
            let sketch = FrequencySketch::with_seed(capacity, 5);
            assert_eq!(
                sketch.table.as_ptr() as usize % 64,
                0,
                "capacity {capacity}"
            );
            assert_eq!(std::mem::size_of::<Block>(), 64);
        }
    }

    #[test]
    fn positions_one_block_four_distinct_word_pairs() {
        let sketch = FrequencySketch::with_seed(1 << 12, 4);
        for k in 0..1000u64 {
            let (block, pos) = sketch.positions(k);
            assert!(block < sketch.table.len());
            for (i, (word, shift)) in pos.iter().enumerate() {
                assert!(
                    *word == 2 * i || *word == 2 * i + 1,
                    "depth {i} word {word}"
                );
                assert!(*shift < 64 && shift % 4 == 0);
            }
        }
    }
}
