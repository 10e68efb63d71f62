//! A Bloom filter: a set that answers "possibly present" or "definitely absent" in about 9.6 bits
//! per expected item at a 1% false-positive rate.
//!
//! [`BloomFilter::contains`] never returns `false` for an inserted key; for a key never inserted it
//! returns `true` with about the target probability, as long as no more than the expected number
//! of items were inserted (for a filter of one or two expected items, whose few bits the sizing
//! formulas misjudge, up to about twice it).
//!
//! The filter takes the **key itself** (any `Hash` type) and hashes it with its own seeded
//! SipHash, as [`CountMin`](crate::count_min::CountMin) does; the cache's
//! [`FrequencySketch`](crate::sketch::FrequencySketch) instead takes a 64-bit hash that the
//! caller computed.
//!
//! ```
//! use cortado::bloom::BloomFilter;
//! # fn main() -> Result<(), cortado::bloom::BloomError> {
//! // Keys that exist in the backing store; a lookup for anything else is refused up front.
//! let mut known = BloomFilter::new(10_000, 0.01)?;
//! known.insert("user:42");
//! assert!(known.contains("user:42"));
//! assert!(known.bits() / 10_000 == 9 && known.hashes() == 7);
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! - **Why a cache wants one.** Cache penetration is a stream of lookups for keys that exist
//!   nowhere: each misses the cache, goes to the backing store, finds nothing, and (with nothing to
//!   cache) does the same next time. A filter of the keys that do exist answers "definitely absent"
//!   for most of them without touching the store, at the cost of the false-positive rate.
//! - **Sizing.** For `n` expected items and a target false-positive rate `p`, the filter has
//!   `m = ceil(-n ln p / (ln 2)^2)` bits and `k = round((m / n) ln 2) = round(log2(1 / p))` hash
//!   probes, the optimum at which half the bits are set after `n` inserts. That is 9.59 bits
//!   (1.2 bytes) and 7 probes per item at 1%, 14.4 bits and 10 probes at 0.1%. Above about 35%
//!   that is one probe, and `m = ceil(-n / ln(1 - p))` instead: the bits at which a single probe
//!   has rate `p` (the formula above would let 90% become 99%). `m` is used exactly,
//!   not rounded to a power of two: probes map a 64-bit value onto `0..m` with a multiply-high
//!   (Lemire's "fastrange"), as cheap as a mask.
//! - **Plain, not blocked.** A cache-line-blocked filter touches one line per lookup but, because
//!   blocks fill unevenly, needs roughly 10-20% more bits for the same rate. The plain layout keeps
//!   the textbook rate, and its weakness (k scattered cache lines) mostly spares the case a
//!   penetration guard sees most: a lookup of an absent key stops at the first zero bit, and with
//!   half the bits zero that is after two probes on average.
//! - **One hash per key.** A key is hashed once with SipHash-1-3 keyed by a per-instance seed, so
//!   an attacker cannot choose keys that all pass the filter. Probe `i` is the SplitMix64 output
//!   `mix64(hash + i * gamma)` mapped onto `0..m`: a few multiplies per probe, and the probes
//!   behave like `k` independent hashes. Double hashing (`x += y; y += i` on the 64-bit hash,
//!   then mapped) did not: the mapping keeps the high bits, where the `y += i` terms vanish, and
//!   a key whose step `y / 2^64` lies near a fraction of small denominator probed only a few
//!   distinct bits, which raised the false-positive rate (see
//!   `docs/decisions/0141-bloom-probe-hashing.md`).
//! - **Beyond `n`.** Nothing stops more inserts, but the rate climbs as
//!   `(1 - e^(-k N / m))^k`; [`BloomFilter::estimated_fpr`] reports it from the bits actually set
//!   and [`BloomFilter::len_estimate`] estimates how many distinct keys went in.
//! - **Union and intersection.** Two filters that put every key on the same bits (the same `m`,
//!   `k` and seed, see [`BloomFilter::is_compatible`]) combine word by word:
//!   [`union`](BloomFilter::union) ORs them into exactly the filter that every key of both would
//!   have built, so shards or nodes can fill filters apart and combine them.
//!   [`intersect`](BloomFilter::intersect) ANDs them: it still holds every key inserted into both,
//!   but bits set by different keys on each side survive too, so its rate is at least that of a
//!   filter built from the common keys alone. Filters that differ in any of the three would mix
//!   unrelated bit positions and answer nonsense, so combining them is a
//!   [`BloomError::Incompatible`], never a silent wrong answer. Filters built with
//!   [`BloomFilter::new`] each get a random seed and are never compatible: build the parts with
//!   [`with_seed`](BloomFilter::with_seed) and one shared seed (or [`seed`](BloomFilter::seed)
//!   of the first). The key hash is the standard library's SipHash, which Rust does not promise
//!   to keep across releases: combine filters filled by the same build, not ones kept from
//!   another.
//!
//! # References
//!
//! 1. B. H. Bloom: "Space/Time Trade-offs in Hash Coding with Allowable Errors", CACM, 1970.
//! 2. A. Kirsch, M. Mitzenmacher: "Less Hashing, Same Performance: Building a Better Bloom Filter",
//!    Random Structures & Algorithms, 2008.
//! 3. P. C. Dillinger, P. Manolios: "Bloom Filters in Probabilistic Verification", FMCAD 2004
//!    (enhanced double hashing, no longer used: see One hash per key).
//! 4. F. Putze, P. Sanders, J. Singler: "Cache-, Hash- and Space-Efficient Bloom Filters", WEA 2007
//!    (the blocked layout, not used here).
//! 5. S. J. Swamidass, P. Baldi: "Mathematical Correction for Fingerprint Similarity Measures to
//!    Improve Chemical Retrieval", J. Chem. Inf. Model., 2007 (the cardinality estimate).
//! 6. D. Lemire: "Fast Random Integer Generation in an Interval", ACM TOMACS, 2019.

use std::fmt;
use std::hash::Hash;

use crate::random::{keyed_hash, mix64, random_seed};

/// The most bits a filter may have: 2^40, i.e. 128 GiB. Anything larger is a mistyped rate.
pub const MAX_BITS: u64 = 1 << 40;

/// The SplitMix64 increment: probe `i` (from 1) mixes `hash + i * PROBE_GAMMA`.
const PROBE_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Why a filter could not be built.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum BloomError {
    /// Zero expected items.
    ZeroItems,
    /// A false-positive rate outside the open interval (0, 1), or NaN.
    InvalidFalsePositiveRate(f64),
    /// The filter would need more than [`MAX_BITS`] bits (or more than the address space).
    TooLarge,
    /// [`union`](BloomFilter::union) or [`intersect`](BloomFilter::intersect) of filters whose
    /// bit count, probe count or seed differ.
    Incompatible,
}

impl fmt::Display for BloomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroItems => f.write_str("a Bloom filter needs at least one expected item"),
            Self::InvalidFalsePositiveRate(p) => {
                write!(f, "false-positive rate must be in (0, 1), got {p}")
            }
            Self::TooLarge => write!(f, "the filter would need more than {MAX_BITS} bits"),
            Self::Incompatible => f.write_str(
                "Bloom filters with different bit counts, probe counts or seeds cannot be combined",
            ),
        }
    }
}

impl std::error::Error for BloomError {}

/// A Bloom filter over keys of any `Hash` type. See the [module docs](self).
///
/// Keys of different types that hash alike (`String` and `str`) are the same key; keys that
/// compare equal but hash differently (`5u32` and `5u64`) are not.
///
/// Two filters are equal (`==`) when they have the same bits, probes and seed and the same bits
/// set, so they answer every `contains` alike: filled with the same keys in any order, or one
/// the [`union`](Self::union) of parts that the other was filled with whole.
#[derive(Clone, PartialEq, Eq)]
pub struct BloomFilter {
    words: Box<[u64]>,
    /// `m`: probes land in `0..bits`; the tail of the last word stays zero.
    bits: u64,
    /// `k`: probes per key.
    hashes: u32,
    seed: u64,
}

impl fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("bits", &self.bits)
            .field("hashes", &self.hashes)
            .finish_non_exhaustive()
    }
}

impl BloomFilter {
    /// An empty filter for `expected_items` keys at `false_positive_rate`, with a random seed.
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self, BloomError> {
        Self::with_seed(expected_items, false_positive_rate, random_seed())
    }

    /// An empty filter whose hashing is keyed by `seed` (reproducible runs).
    pub fn with_seed(
        expected_items: usize,
        false_positive_rate: f64,
        seed: u64,
    ) -> Result<Self, BloomError> {
        let (bits, hashes) = optimal_size(expected_items, false_positive_rate)?;
        let words = usize::try_from(bits.div_ceil(64)).map_err(|_| BloomError::TooLarge)?;
        if words > isize::MAX as usize / 8 {
            return Err(BloomError::TooLarge);
        }
        Ok(Self {
            words: vec![0; words].into_boxed_slice(),
            bits,
            hashes,
            seed,
        })
    }

    /// Adds `key`; returns `true` if it was new, `false` if the filter already (probably) held it,
    /// i.e. what `!contains(key)` would have said just before.
    pub fn insert<Q: Hash + ?Sized>(&mut self, key: &Q) -> bool {
        let mut new = false;
        for bit in self.probes(key) {
            let (word, mask) = (bit / 64, 1u64 << (bit % 64));
            new |= self.words[word] & mask == 0;
            self.words[word] |= mask;
        }
        new
    }

    /// `false` if `key` was certainly never inserted; `true` if it was, or by a false positive.
    pub fn contains<Q: Hash + ?Sized>(&self, key: &Q) -> bool {
        self.probes(key)
            .all(|bit| self.words[bit / 64] & (1u64 << (bit % 64)) != 0)
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Whether no key was inserted (since [`clear`](Self::clear)): every insert sets at least one
    /// bit, so this is whether none is set. A scan of the bit array, O(m / 64).
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&word| word == 0)
    }

    /// The number of distinct keys inserted, estimated from the bits set:
    /// `-(m / k) ln(1 - set / m)`. Infinite once every bit is set.
    pub fn len_estimate(&self) -> f64 {
        let m = self.bits as f64;
        // Written as `ln(m / (m - set))`, which is `+0.0` for an empty filter (the negated
        // logarithm gave `-0.0`).
        (m / f64::from(self.hashes)) * (m / (m - self.set_bits() as f64)).ln()
    }

    /// The false-positive rate the filter has now, `(set / m)^k`: close to the target after the
    /// expected number of inserts, lower before, higher after.
    pub fn estimated_fpr(&self) -> f64 {
        (self.set_bits() as f64 / self.bits as f64).powf(f64::from(self.hashes))
    }

    /// `m`, the number of bits probes land in.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// `k`, the number of bits probed per key.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// The seed keying this filter's hash: filters built by [`with_seed`](Self::with_seed) with it
    /// and the same sizing can be combined with this one.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether `other` puts every key on the same bits (same `m`, `k` and seed), so that
    /// [`union`](Self::union) and [`intersect`](Self::intersect) accept it.
    pub fn is_compatible(&self, other: &Self) -> bool {
        self.bits == other.bits && self.hashes == other.hashes && self.seed == other.seed
    }

    /// Adds every key of `other`: afterwards this filter is the one every key inserted into
    /// either would have built. Fails, changing nothing, unless [`is_compatible`](Self::is_compatible).
    ///
    /// ```
    /// use cortado::bloom::{BloomError, BloomFilter};
    /// # fn main() -> Result<(), BloomError> {
    /// let mut east = BloomFilter::new(1_000, 0.01)?;
    /// let mut west = BloomFilter::with_seed(1_000, 0.01, east.seed())?;
    /// east.insert("user:1");
    /// west.insert("user:2");
    /// east.union(&west)?;
    /// assert!(east.contains("user:1") && east.contains("user:2"));
    /// // A filter with its own random seed puts keys on other bits.
    /// let other = BloomFilter::new(1_000, 0.01)?;
    /// assert_eq!(east.union(&other), Err(BloomError::Incompatible));
    /// # Ok(())
    /// # }
    /// ```
    pub fn union(&mut self, other: &Self) -> Result<(), BloomError> {
        self.combine(other, |a, b| a | b)
    }

    /// Keeps only the bits set in both: afterwards `contains` is `true` for every key inserted into
    /// both (and by false positive for others, at least as often as a filter of those keys alone
    /// would say so). Fails, changing nothing, unless [`is_compatible`](Self::is_compatible).
    pub fn intersect(&mut self, other: &Self) -> Result<(), BloomError> {
        self.combine(other, |a, b| a & b)
    }

    fn combine(&mut self, other: &Self, op: impl Fn(u64, u64) -> u64) -> Result<(), BloomError> {
        if !self.is_compatible(other) {
            return Err(BloomError::Incompatible);
        }
        for (word, &theirs) in self.words.iter_mut().zip(other.words.iter()) {
            *word = op(*word, theirs);
        }
        Ok(())
    }

    /// Heap bytes used by the bit array (`m` rounded up to whole 64-bit words).
    pub fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn set_bits(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The `k` bit positions of `key`, from one keyed hash.
    #[inline]
    fn probes<Q: Hash + ?Sized>(&self, key: &Q) -> impl Iterator<Item = usize> {
        let hash = keyed_hash(self.seed, key);
        let bits = self.bits;
        // One SplitMix64 output per probe, as the Count-Min rows have (see One hash per key).
        (1..=u64::from(self.hashes)).map(move |i| {
            let probe = mix64(hash.wrapping_add(i.wrapping_mul(PROBE_GAMMA)));
            ((u128::from(probe) * u128::from(bits)) >> 64) as usize
        })
    }
}

/// `(m, k)` for `n` items at rate `p`: `m = ceil(-n ln p / (ln 2)^2)`, `k = round(m / n ln 2)`,
/// and, when that gives one probe, the least `m` with `1 - (1 - 1/m)^n <= p`.
fn optimal_size(n: usize, p: f64) -> Result<(u64, u32), BloomError> {
    if n == 0 {
        return Err(BloomError::ZeroItems);
    }
    if !(p > 0.0 && p < 1.0) {
        return Err(BloomError::InvalidFalsePositiveRate(p));
    }
    let ln2 = std::f64::consts::LN_2;
    let mut m = (-(n as f64) * p.ln() / (ln2 * ln2)).ceil().max(1.0);
    let k = (m / n as f64 * ln2).round().max(1.0);
    if k == 1.0 {
        // The formula assumes the optimal (here fractional) probe count. One probe's rate after
        // `n` inserts is exactly `1 - (1 - 1/m)^n`, so `m >= 1 / (1 - (1 - p)^(1/n))`. The
        // usual `-n / ln(1 - p)` is its limit for large `n`; for one item at `p = 0.7` it gave
        // a single bit, which every key then finds set.
        let root = ((-p).ln_1p() / n as f64).exp_m1();
        m = m.max((-1.0 / root).ceil());
    }
    if m > MAX_BITS as f64 {
        return Err(BloomError::TooLarge);
    }
    Ok((m as u64, k as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn optimal_size_one_probe_few_items_meets_rate_exactly() {
        // One item at 70%: `-n / ln(1 - p)` gave 1 bit, which every key then found set.
        assert_eq!(optimal_size(1, 0.7), Ok((2, 1)));
        for (n, p) in [(1, 0.7), (2, 0.9), (3, 0.65), (10, 0.8), (1_000, 0.75)] {
            let (m, k) = optimal_size(n, p).unwrap();
            assert_eq!(k, 1, "n {n}, p {p}");
            let rate = |m: u64| 1.0 - (1.0 - 1.0 / m as f64).powi(n as i32);
            assert!(rate(m) <= p, "n {n}, p {p}: {m} bits give {}", rate(m));
            assert!(
                rate(m - 1) > p || m == 1,
                "n {n}, p {p}: {} bits would do",
                m - 1
            );
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 100,000 lookups")]
    fn contains_one_item_high_rate_filter_misses_some_keys() {
        let mut filter = BloomFilter::with_seed(1, 0.7, 5).unwrap();
        filter.insert(&0u64);
        let present = (1..=100_000u64).filter(|k| filter.contains(k)).count();
        assert!(present <= 75_000, "{present} of 100,000 absent keys found");
    }

    /// The share of 100,000 never-inserted keys reported present after inserting 10,000 keys.
    fn measured_fpr(p: f64, seed: u64) -> f64 {
        let mut filter = BloomFilter::with_seed(10_000, p, seed).unwrap();
        for key in 0..10_000u64 {
            filter.insert(&key);
        }
        let false_positives = (1_000_000..1_100_000u64)
            .filter(|k| filter.contains(k))
            .count();
        false_positives as f64 / 100_000.0
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 100,000 lookups")]
    fn contains_absent_keys_at_one_percent_within_target() {
        let rate = measured_fpr(0.01, 17);
        assert!(rate <= 0.015 && rate > 0.001, "measured {rate}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 100,000 lookups")]
    fn contains_absent_keys_at_tenth_percent_within_target() {
        let rate = measured_fpr(0.001, 17);
        assert!(rate <= 0.0015 && rate > 0.0001, "measured {rate}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 300,000 lookups")]
    fn contains_absent_keys_at_high_rates_within_target() {
        // Above 50% the optimal probe count is below one and is rounded up to a single probe.
        let measured: Vec<(f64, f64)> = [0.7, 0.8, 0.9]
            .into_iter()
            .map(|p| (p, measured_fpr(p, 17)))
            .collect();
        assert!(
            measured.iter().all(|&(p, rate)| rate <= p + 0.01),
            "(target, measured): {measured:?}"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: needs half a million lookups")]
    fn contains_absent_keys_in_small_filters_near_target() {
        // 10 items at 0.1%: 144 bits, 10 probes. Independent probes give 1.11 times the target
        // here (the rate of a filter this small varies with how many distinct bits its keys
        // set); double hashing mapped by the high bits gave 3.4 times.
        let (seeds, queries) = (200u64, 2_500u64);
        let mut false_positives = 0;
        for seed in 0..seeds {
            let mut filter = BloomFilter::with_seed(10, 0.001, seed).unwrap();
            for key in 0..10u64 {
                filter.insert(&key);
            }
            false_positives += (1_000_000..1_000_000 + queries)
                .filter(|k| filter.contains(k))
                .count();
        }
        let rate = false_positives as f64 / (seeds * queries) as f64;
        assert!(rate <= 0.0015, "measured {rate}, target 0.001");
    }

    #[test]
    fn new_known_rates_give_textbook_sizes() {
        // 1%: -ln(0.01) / ln(2)^2 = 9.585 bits per item, log2(100) = 6.64 -> 7 probes.
        let filter = BloomFilter::with_seed(10_000, 0.01, 1).unwrap();
        assert_eq!((filter.bits(), filter.hashes()), (95_851, 7));
        assert_eq!(filter.memory_bytes(), 95_851usize.div_ceil(64) * 8);
        // 0.1%: 14.378 bits per item, log2(1000) = 9.97 -> 10 probes.
        let filter = BloomFilter::with_seed(10_000, 0.001, 1).unwrap();
        assert_eq!((filter.bits(), filter.hashes()), (143_776, 10));
        // 50%: 1.44 bits per item, one probe.
        let filter = BloomFilter::with_seed(100, 0.5, 1).unwrap();
        assert_eq!((filter.bits(), filter.hashes()), (145, 1));
    }

    #[test]
    fn new_bad_parameters_are_typed_errors() {
        assert_eq!(
            BloomFilter::new(0, 0.01).unwrap_err(),
            BloomError::ZeroItems
        );
        for p in [0.0, 1.0, -0.1, 1.5] {
            assert_eq!(
                BloomFilter::new(10, p).unwrap_err(),
                BloomError::InvalidFalsePositiveRate(p)
            );
        }
        assert!(matches!(
            BloomFilter::new(10, f64::NAN),
            Err(BloomError::InvalidFalsePositiveRate(_))
        ));
        assert_eq!(
            BloomFilter::new(usize::MAX, 1e-300).unwrap_err(),
            BloomError::TooLarge
        );
        assert!(BloomError::ZeroItems.to_string().contains("expected item"));
    }

    #[test]
    fn insert_reports_new_then_known() {
        let mut filter = BloomFilter::with_seed(1_000, 0.01, 3).unwrap();
        assert!(filter.insert("a"));
        assert!(!filter.insert("a"));
        assert!(filter.insert(&String::from("b")));
        assert!(filter.contains("b"));
    }

    #[test]
    fn clear_empties_the_filter() {
        let mut filter = BloomFilter::with_seed(100, 0.01, 3).unwrap();
        for k in 0..100u32 {
            filter.insert(&k);
        }
        filter.clear();
        assert!((0..100u32).all(|k| !filter.contains(&k)));
        assert_eq!(filter.len_estimate(), 0.0);
    }

    #[test]
    fn len_estimate_empty_is_positive_zero_full_is_infinite() {
        let mut filter = BloomFilter::with_seed(10, 0.5, 3).unwrap();
        assert!(filter.len_estimate().is_sign_positive() && filter.len_estimate() == 0.0);
        let inserts = if cfg!(miri) { 500 } else { 10_000u32 };
        for k in 0..inserts {
            filter.insert(&k);
        }
        assert_eq!(filter.set_bits(), filter.bits());
        assert_eq!(filter.len_estimate(), f64::INFINITY);
    }

    #[test]
    fn is_empty_new_true_after_insert_false_after_clear_true() {
        let mut filter = BloomFilter::with_seed(100, 0.01, 3).unwrap();
        assert!(filter.is_empty());
        filter.insert("a");
        assert!(!filter.is_empty());
        filter.clear();
        assert!(filter.is_empty());
        // A one-bit filter: the only bit is the last bit of its only word.
        let mut tiny = BloomFilter::with_seed(1, 0.9, 1).unwrap();
        tiny.insert(&7u8);
        assert!(!tiny.is_empty());
    }

    #[test]
    fn eq_same_keys_any_order_equal_other_keys_or_seed_not() {
        let forward = filled(0..100);
        let backward = filled((0..100).rev());
        assert_eq!(forward, backward);
        assert_ne!(forward, filled(0..101));
        let mut other_seed = BloomFilter::with_seed(1_000, 0.01, 12).unwrap();
        let mut empty = BloomFilter::with_seed(1_000, 0.01, 11).unwrap();
        assert_ne!(other_seed, empty, "empty, but hashing keys elsewhere");
        for key in 0..100u64 {
            other_seed.insert(&key);
            empty.insert(&key);
        }
        assert_eq!(empty, forward);
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 10,000 keys")]
    fn len_estimate_and_fpr_track_inserted_keys() {
        let mut filter = BloomFilter::with_seed(10_000, 0.01, 5).unwrap();
        for k in 0..10_000u64 {
            filter.insert(&k);
        }
        let n = filter.len_estimate();
        assert!((9_700.0..10_300.0).contains(&n), "estimated {n} keys");
        let fpr = filter.estimated_fpr();
        assert!((0.008..0.012).contains(&fpr), "estimated rate {fpr}");
    }

    #[test]
    fn probes_stay_in_range_for_tiny_filters() {
        // The smallest filter: one item at 90% takes 2 bits (1 bit would answer 100%).
        let filter = BloomFilter::with_seed(1, 0.9, 1).unwrap();
        assert_eq!(filter.bits(), 2);
        assert!((0..100u64).all(|k| filter.probes(&k).all(|b| b < 2)));
        assert!((0..100u64).any(|k| filter.probes(&k).any(|b| b == 1)));
    }

    /// A filter of 1,000 expected keys at 1% (seed 11) holding `keys`.
    fn filled(keys: impl IntoIterator<Item = u64>) -> BloomFilter {
        let mut filter = BloomFilter::with_seed(1_000, 0.01, 11).unwrap();
        for key in keys {
            filter.insert(&key);
        }
        filter
    }

    #[test]
    fn union_of_two_halves_is_filter_of_all_keys() {
        let mut left = filled(0..500);
        let right = filled(500..1_000);
        left.union(&right).unwrap();
        assert_eq!(left.words, filled(0..1_000).words);
        assert!((0..1_000u64).all(|k| left.contains(&k)));
    }

    #[test]
    fn intersect_keeps_common_keys_and_drops_most_others() {
        let mut left = filled(0..700);
        let right = filled(300..1_000);
        left.intersect(&right).unwrap();
        assert!((300..700u64).all(|k| left.contains(&k)));
        // The 600 one-sided keys are now absent except by false positive: the AND keeps their
        // bits only where the other side's keys set them too.
        let survivors = (0..300u64)
            .chain(700..1_000)
            .filter(|k| left.contains(k))
            .count();
        assert!(
            survivors < 10,
            "{survivors} of 600 one-sided keys still reported"
        );
        // Never fewer bits than the filter of the common keys alone.
        let common = filled(300..700);
        assert!(left
            .words
            .iter()
            .zip(common.words.iter())
            .all(|(l, c)| l & c == *c));
    }

    #[test]
    fn union_or_intersect_incompatible_filters_is_error_and_changes_nothing() {
        let base = filled(0..100);
        let other_seed = BloomFilter::with_seed(1_000, 0.01, 12).unwrap();
        let other_size = BloomFilter::with_seed(2_000, 0.01, 11).unwrap();
        // Same bit count, one more probe per key.
        let other_probes = BloomFilter {
            hashes: base.hashes + 1,
            ..base.clone()
        };
        for other in [&other_seed, &other_size, &other_probes] {
            assert!(!base.is_compatible(other));
            let mut target = base.clone();
            assert_eq!(target.union(other), Err(BloomError::Incompatible));
            assert_eq!(target.intersect(other), Err(BloomError::Incompatible));
            assert_eq!(target.words, base.words);
        }
        assert!(BloomError::Incompatible
            .to_string()
            .contains("cannot be combined"));
    }

    #[test]
    fn new_filters_are_incompatible_until_seed_is_shared() {
        let first = BloomFilter::new(100, 0.01).unwrap();
        let second = BloomFilter::new(100, 0.01).unwrap();
        assert!(!first.is_compatible(&second), "random seeds differ");
        let third = BloomFilter::with_seed(100, 0.01, first.seed()).unwrap();
        assert!(first.is_compatible(&third));
    }

    proptest! {
        #![proptest_config(crate::proptest_config(256))]

        #[test]
        fn contains_inserted_keys_always_true(
            n in 1usize..300,
            p in 0.0001f64..0.5,
            seed: u64,
            keys in prop::collection::vec(any::<u64>(), 0..300),
            words in prop::collection::vec(".{0,12}", 0..50),
        ) {
            let mut filter = BloomFilter::with_seed(n, p, seed).unwrap();
            for k in &keys {
                filter.insert(k);
            }
            for w in &words {
                filter.insert(w.as_str());
            }
            prop_assert!(keys.iter().all(|k| filter.contains(k)));
            prop_assert!(words.iter().all(|w| filter.contains(w)));
        }
    }
}
