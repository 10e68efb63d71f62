//! A Count-Min sketch that estimates how often each key occurred in a stream, and a top-k
//! heavy-hitter tracker built on it.
//!
//! [`CountMin::estimate`] never returns less than a key's true count (unless the counter type
//! saturated first); with probability at least `1 - delta` it over-counts by at most
//! `epsilon * N`, where `N` is the sum of everything added.
//!
//! [`CountMin`] and [`TopK`] take the **key itself** (any `Hash` type, or a borrowed form of it)
//! and hash it once with their own seeded SipHash, as [`BloomFilter`](crate::bloom::BloomFilter)
//! does. The cache's [`FrequencySketch`](crate::sketch::FrequencySketch) differs: it takes a
//! 64-bit hash that the caller computed, and has 4-bit counters that age.
//!
//! ```
//! use cortado::count_min::{CountMin, Dimensions, TopK};
//! # fn main() -> Result<(), cortado::count_min::CountMinError> {
//! // +/- 0.1% of the stream, 99% of the time: 2,719 x 5 counters.
//! let mut sketch = CountMin::<u32>::new(Dimensions::from_error(0.001, 0.01)?);
//! sketch.add("espresso", 3);
//! sketch.increment("espresso");
//! assert!(sketch.estimate("espresso") >= 4);
//!
//! let mut top = TopK::new(2, CountMin::<u32>::new(Dimensions::from_error(0.001, 0.01)?))?;
//! for word in ["a", "b", "a", "c", "a", "b"] {
//!     top.increment(word);
//! }
//! assert_eq!(top.top()[0], (&"a", 3));
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! - **Sizing.** `width = ceil(e / epsilon)` and `depth = ceil(ln(1 / delta))`
//!   ([`Dimensions::from_error`]). In one row the counters a key shares with other keys hold
//!   `N / width = epsilon * N / e` in expectation, so by Markov's inequality that row over-counts
//!   by more than `epsilon * N` with probability at most `1 / e`; the estimate is the minimum over
//!   `depth` independent rows, which is off by that much only if every row is, with probability at
//!   most `e^-depth <= delta`.
//! - **Stream form.** [`Dimensions::from_stream`] takes the parameters that some counters are
//!   configured with: an expected stream length `n`, an error range and an error rate,
//!   read as "estimates are within `error_range` counts of the truth with probability
//!   `1 - error_rate` over a stream of `n` items", i.e. `epsilon = error_range / n` and
//!   `delta = error_rate`. A million items counted to within 100, 99% of the time, gives
//!   `27,183 x 5` counters.
//! - **Exact width.** A row maps the 64-bit hash onto `0..width` with a multiply-high (Lemire's
//!   "fastrange"), which costs the same as a power-of-two mask, so the width is never rounded up
//!   and memory stays at exactly `width * depth` counters.
//! - **Counters.** [`Counter`] is implemented for `u8`, `u16`, `u32` and `u64`; pick the narrowest
//!   type that holds the counts you care about. Adds saturate: a counter that wrapped around would
//!   report a hot key as cold and break the never-under-count guarantee, while a saturated one
//!   only stops telling large counts apart. Memory is `width * depth * size_of::<C>()`: for
//!   `epsilon = 0.001, delta = 0.01` that is 13.6 KB with `u8` and 54.4 KB with `u32`.
//! - **One hash per key.** A key is hashed once with SipHash-1-3 keyed by a per-instance seed
//!   (random by default, fixed with [`CountMin::with_seed`] for reproducible runs), so nobody can
//!   pick keys that collide with a victim. Row `i` uses the SplitMix64 output
//!   `mix64(hash + (i + 1) * gamma)`. Plain Kirsch-Mitzenmacher double hashing
//!   (`h1 + i * h2 mod width`) would be cheaper, but two keys that share a column in one row then
//!   share one in every row with probability `1 / width` (when their `h2` agree) instead of
//!   `width^-(depth - 1)`, and the `delta` bound assumes independent rows; one multiply-xorshift
//!   mix per row costs a few nanoseconds.
//! - **Conservative update** (optional, [`CountMin::with_conservative_update`]): an add raises only
//!   the key's counters that are below `estimate + n`, and only up to that value. Estimates are
//!   still never below the truth and never above the plain sketch's, and on skewed streams they
//!   are usually much tighter (reference 2). It is off by default because it reads every row before
//!   writing, roughly doubling the cost of an add.
//! - **Merging.** Counting is addition, so two sketches that put every key on the same counters
//!   (the same [`Dimensions`] and seed, see [`CountMin::is_compatible`]) merge by adding counter
//!   to counter ([`CountMin::merge`], Redis's `CMS.MERGE`): with plain update the result is
//!   exactly the sketch of both streams, and the never-under-count guarantee and the `epsilon * N`
//!   bound hold for the combined stream and total. With conservative update on either side the
//!   sum is still never below the truth (every counter of a key holds at least that key's count
//!   on its side) and never above the plain sketch of both streams. Sketches with different
//!   shapes or seeds would add unrelated counters, so merging them is a
//!   [`CountMinError::Incompatible`], never a silent wrong answer; a sketch built with
//!   [`CountMin::new`] has a random seed, so build the parts with [`CountMin::with_seed`] and one
//!   shared seed (or [`CountMin::seed`] of the first), in the same build (the key hash is the
//!   standard library's SipHash, which Rust may change between releases).
//! - **Decay.** [`CountMin::decay`] scales every counter (and the total) by a factor in `[0, 1]`,
//!   rounding down, so a long-running sketch can favour recent counts. The guarantees then hold
//!   for the true counts scaled the same way.
//! - **Top-k.** [`TopK`] keeps the `k` keys with the largest estimates in a min-heap of
//!   `(key, hash, estimate)` entries, plus a hash table from key to heap position so an add to a
//!   tracked key is a lookup and a sift rather than a scan. The table is keyed by the sketch's own
//!   hash, so each add hashes the key once. [`TopK::add_by_ref`] makes an owned key only when
//!   the key joins the heap (a `String` per heavy hitter, not per add); [`TopK::add_expelling`]
//!   hands back the key a joining one displaced, as Redis's `TOPK.ADD` does, so keys entering and
//!   leaving the top can be followed without diffing [`TopK::top`]. See [`TopK`] for what it
//!   guarantees.
//! - **Merging top-k.** [`TopK::merge`] merges the sketches and keeps the `k` keys with the
//!   largest merged estimates among those either side tracked. That is all a tracker can do: a
//!   key neither side tracked left no trace but its counters, so a key just below the cut on both
//!   sides can be heavy in the union and still be missed. What it keeps is bounded: such a key's
//!   combined count is at most the sum of the two smallest tracked estimates (of the trackers that
//!   were full), and it joins as soon as an add lifts its estimate above the smallest tracked one.
//!
//! # References
//!
//! 1. G. Cormode, S. Muthukrishnan: "An Improved Data Stream Summary: The Count-Min Sketch and its
//!    Applications", Journal of Algorithms, 2005.
//! 2. C. Estan, G. Varghese: "New Directions in Traffic Measurement and Accounting", SIGCOMM 2002
//!    (conservative update).
//! 3. M. Charikar, K. Chen, M. Farach-Colton: "Finding Frequent Items in Data Streams", ICALP 2002
//!    (a heap of candidates next to a sketch).
//! 4. D. Lemire: "Fast Random Integer Generation in an Interval", ACM TOMACS, 2019 (multiply-high
//!    range reduction).
//! 5. G. Steele, D. Lea, C. Flood: "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014
//!    (SplitMix64).
//! 6. Seed 002: a Go count-min counter built from (stream size, error range, error rate).

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;

use hashbrown::HashTable;

use crate::random::{keyed_hash, mix64, random_seed};

/// The SplitMix64 increment (2^64 divided by the golden ratio): row `i` mixes
/// `hash + (i + 1) * ROW_GAMMA`.
const ROW_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The most counters (`width * depth`) a sketch may have: 2^32, i.e. 4 GiB of `u8` counters or
/// 32 GiB of `u64` ones. Anything larger is a mistyped epsilon, better reported than allocated.
pub const MAX_COUNTERS: u64 = 1 << 32;

/// Why a sketch or tracker could not be built, or a decay factor was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum CountMinError {
    /// `epsilon` was not in the open interval (0, 1), or was NaN.
    InvalidEpsilon(f64),
    /// `delta` (the error rate) was not in the open interval (0, 1), or was NaN.
    InvalidDelta(f64),
    /// The expected stream length was zero.
    ZeroStreamLength,
    /// The error range was zero: no sketch counts every key exactly.
    ZeroErrorRange,
    /// The error range was not smaller than the stream length, so it bounds nothing.
    ErrorRangeTooWide {
        /// The requested error range.
        error_range: u64,
        /// The expected stream length.
        stream_length: u64,
    },
    /// An explicit width of zero.
    ZeroWidth,
    /// An explicit depth of zero.
    ZeroDepth,
    /// The sketch would need more than [`MAX_COUNTERS`] counters (or more than the address space).
    TooLarge,
    /// A decay factor outside `[0, 1]`, or NaN.
    InvalidDecayFactor(f64),
    /// A top-k tracker for zero keys.
    ZeroK,
    /// A merge of sketches whose dimensions or seeds differ.
    Incompatible,
}

impl fmt::Display for CountMinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidEpsilon(e) => write!(f, "epsilon must be in (0, 1), got {e}"),
            Self::InvalidDelta(d) => write!(f, "delta (error rate) must be in (0, 1), got {d}"),
            Self::ZeroStreamLength => f.write_str("the expected stream length must be positive"),
            Self::ZeroErrorRange => f.write_str("the error range must be positive"),
            Self::ErrorRangeTooWide {
                error_range,
                stream_length,
            } => write!(
                f,
                "the error range ({error_range}) must be smaller than the stream length ({stream_length})"
            ),
            Self::ZeroWidth => f.write_str("the sketch width must be positive"),
            Self::ZeroDepth => f.write_str("the sketch depth must be positive"),
            Self::TooLarge => write!(f, "the sketch would need more than {MAX_COUNTERS} counters"),
            Self::InvalidDecayFactor(x) => write!(f, "decay factor must be in [0, 1], got {x}"),
            Self::ZeroK => f.write_str("a top-k tracker needs k >= 1"),
            Self::Incompatible => f.write_str(
                "Count-Min sketches with different dimensions or seeds cannot be merged",
            ),
        }
    }
}

impl std::error::Error for CountMinError {}

/// The shape of a sketch: `depth` rows of `width` counters, validated.
///
/// Build it from the error you can accept ([`from_error`](Self::from_error)), from a stream
/// description ([`from_stream`](Self::from_stream)), or explicitly ([`new`](Self::new)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dimensions {
    width: usize,
    depth: usize,
}

impl Dimensions {
    /// `width = ceil(e / epsilon)`, `depth = ceil(ln(1 / delta))`: estimates exceed the truth by
    /// more than `epsilon * N` with probability at most `delta`.
    pub fn from_error(epsilon: f64, delta: f64) -> Result<Self, CountMinError> {
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(CountMinError::InvalidEpsilon(epsilon));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(CountMinError::InvalidDelta(delta));
        }
        let width = (std::f64::consts::E / epsilon).ceil();
        // -ln(delta) rather than ln(1 / delta): 1 / delta overflows for subnormal deltas.
        let depth = (-delta.ln()).ceil().max(1.0);
        if width * depth > MAX_COUNTERS as f64 {
            return Err(CountMinError::TooLarge);
        }
        Self::new(width as usize, depth as usize)
    }

    /// Sized so that, over a stream of `stream_length` items, estimates are within `error_range`
    /// counts of the truth with probability `1 - error_rate`: `epsilon = error_range /
    /// stream_length`, `delta = error_rate`.
    pub fn from_stream(
        stream_length: u64,
        error_range: u64,
        error_rate: f64,
    ) -> Result<Self, CountMinError> {
        if stream_length == 0 {
            return Err(CountMinError::ZeroStreamLength);
        }
        if error_range == 0 {
            return Err(CountMinError::ZeroErrorRange);
        }
        if error_range >= stream_length {
            return Err(CountMinError::ErrorRangeTooWide {
                error_range,
                stream_length,
            });
        }
        // Both round to 53 bits: a range just below a huge length can come out as 1.0, so keep
        // the ratio below 1 (the largest f64 under it), as the exact one is.
        let epsilon = (error_range as f64 / stream_length as f64).min(1.0 - f64::EPSILON / 2.0);
        Self::from_error(epsilon, error_rate)
    }

    /// Exactly `width` counters in each of `depth` rows.
    pub fn new(width: usize, depth: usize) -> Result<Self, CountMinError> {
        if width == 0 {
            return Err(CountMinError::ZeroWidth);
        }
        if depth == 0 {
            return Err(CountMinError::ZeroDepth);
        }
        let counters = (width as u128) * (depth as u128);
        // Also keep the byte size of u64 counters addressable on 32-bit targets.
        let limit = (MAX_COUNTERS as u128).min(isize::MAX as u128 / 8);
        if counters > limit {
            return Err(CountMinError::TooLarge);
        }
        Ok(Self { width, depth })
    }

    /// Counters per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of rows.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The relative error this width guarantees: `e / width`.
    pub fn epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// The failure probability this depth guarantees: `e^-depth`.
    pub fn delta(&self) -> f64 {
        (-(self.depth as f64)).exp()
    }

    /// `width * depth`.
    fn counters(&self) -> usize {
        self.width * self.depth
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An unsigned integer usable as a Count-Min counter: `u8`, `u16`, `u32` or `u64`.
///
/// The trait is sealed: the sketch relies on these being plain unsigned integers.
pub trait Counter:
    sealed::Sealed + Copy + Ord + Default + fmt::Debug + Send + Sync + 'static
{
    /// The value at which adds stop.
    const MAX: Self;
    /// `value`, or [`MAX`](Self::MAX) if it does not fit.
    fn from_u64_saturating(value: u64) -> Self;
    /// The counter as a `u64` (lossless).
    fn to_u64(self) -> u64;
    /// `self + other`, or [`MAX`](Self::MAX) on overflow.
    fn saturating_add(self, other: Self) -> Self;
}

macro_rules! impl_counter {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}

        impl Counter for $t {
            const MAX: Self = <$t>::MAX;

            #[inline]
            fn from_u64_saturating(value: u64) -> Self {
                <$t>::try_from(value).unwrap_or(<$t>::MAX)
            }

            #[inline]
            fn to_u64(self) -> u64 {
                u64::from(self)
            }

            #[inline]
            fn saturating_add(self, other: Self) -> Self {
                <$t>::saturating_add(self, other)
            }
        }
    )*};
}

impl_counter!(u8, u16, u32, u64);

/// Maps a uniform 64-bit value onto `0..n` (multiply-high, reference 4).
#[inline]
fn reduce(x: u64, n: usize) -> usize {
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// `floor(value * factor)` for a factor in `[0, 1]`, never above `value`.
fn scale(value: u64, factor: f64) -> u64 {
    // f64 carries 53 bits: above 2^53 the product is rounded, so clamp to stay monotone.
    ((value as f64 * factor).floor() as u64).min(value)
}

/// A Count-Min sketch with counters of type `C`. See the [module docs](self).
#[derive(Clone)]
pub struct CountMin<C: Counter = u32> {
    /// `depth` rows of `width` counters, row after row.
    counters: Box<[C]>,
    dimensions: Dimensions,
    /// Sum of all adds (saturating), scaled by decay.
    total: u64,
    seed: u64,
    conservative: bool,
}

impl<C: Counter> fmt::Debug for CountMin<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountMin")
            .field("width", &self.dimensions.width)
            .field("depth", &self.dimensions.depth)
            .field("total", &self.total)
            .field("conservative", &self.conservative)
            .finish_non_exhaustive()
    }
}

impl<C: Counter> CountMin<C> {
    /// An empty sketch of the given shape, with a random seed.
    pub fn new(dimensions: Dimensions) -> Self {
        Self::with_seed(dimensions, random_seed())
    }

    /// An empty sketch whose hashing is keyed by `seed`: the same seed and the same adds give the
    /// same estimates (within one build of the standard library, whose SipHash it uses).
    pub fn with_seed(dimensions: Dimensions, seed: u64) -> Self {
        Self {
            counters: vec![C::default(); dimensions.counters()].into_boxed_slice(),
            dimensions,
            total: 0,
            seed,
            conservative: false,
        }
    }

    /// Switches conservative update on or off (see the [module docs](self)); it applies to later
    /// adds, and counts already made stay valid either way.
    #[must_use]
    pub fn with_conservative_update(mut self, enabled: bool) -> Self {
        self.conservative = enabled;
        self
    }

    /// Whether adds use conservative update.
    pub fn conservative_update(&self) -> bool {
        self.conservative
    }

    /// Counts `n` more occurrences of `key` and returns its new estimate.
    ///
    /// Keys of different types that hash alike (`String` and `str`) count as the same key.
    #[inline]
    pub fn add<Q: Hash + ?Sized>(&mut self, key: &Q, n: u64) -> u64 {
        let hash = self.hash(key);
        self.add_hash(hash, n)
    }

    /// Counts one more occurrence of `key` and returns its new estimate.
    #[inline]
    pub fn increment<Q: Hash + ?Sized>(&mut self, key: &Q) -> u64 {
        self.add(key, 1)
    }

    /// The estimated count of `key`: at least its true count (or [`Counter::MAX`] if that is
    /// smaller), and at most `epsilon * total` above it with probability `1 - delta`.
    #[inline]
    pub fn estimate<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.estimate_hash(self.hash(key))
    }

    /// Multiplies every counter and the total by `factor`, rounding down: 0 clears the sketch, 1
    /// leaves it alone, 0.5 halves it exactly. Afterwards each estimate is
    /// `floor(old_estimate * factor)`.
    ///
    /// The product is computed in `f64`, so `u64` counters above 2^53 are scaled to within one
    /// part in 2^53 (except for the exact halving). A factor outside `[0, 1]` (or NaN) is refused
    /// and changes nothing.
    pub fn decay(&mut self, factor: f64) -> Result<(), CountMinError> {
        if !(0.0..=1.0).contains(&factor) {
            return Err(CountMinError::InvalidDecayFactor(factor));
        }
        if factor == 0.0 {
            self.clear();
        } else if factor == 0.5 {
            for c in self.counters.iter_mut() {
                *c = C::from_u64_saturating(c.to_u64() >> 1);
            }
            self.total >>= 1;
        } else if factor < 1.0 {
            for c in self.counters.iter_mut() {
                *c = C::from_u64_saturating(scale(c.to_u64(), factor));
            }
            self.total = scale(self.total, factor);
        }
        Ok(())
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.counters.fill(C::default());
        self.total = 0;
    }

    /// The seed keying this sketch's hash: sketches built by [`with_seed`](Self::with_seed) with it
    /// and the same dimensions can be merged with this one.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether `other` puts every key on the same counters (same dimensions and seed), so that
    /// [`merge`](Self::merge) accepts it.
    pub fn is_compatible(&self, other: &Self) -> bool {
        self.dimensions == other.dimensions && self.seed == other.seed
    }

    /// Adds every count of `other` to this sketch, counter by counter (saturating), and its total
    /// to this total: afterwards estimates bound the counts of both streams (see Merging in the
    /// [module docs](self)). This sketch keeps its update rule. Fails, changing nothing, unless
    /// [`is_compatible`](Self::is_compatible).
    ///
    /// ```
    /// use cortado::count_min::{CountMin, CountMinError, Dimensions};
    /// # fn main() -> Result<(), CountMinError> {
    /// let dims = Dimensions::from_error(0.001, 0.01)?;
    /// let mut monday = CountMin::<u32>::new(dims);
    /// let mut tuesday = CountMin::<u32>::with_seed(dims, monday.seed());
    /// monday.add("espresso", 3);
    /// tuesday.add("espresso", 4);
    /// monday.merge(&tuesday)?;
    /// assert!(monday.estimate("espresso") >= 7);
    /// assert_eq!(monday.total(), 7);
    /// // A sketch with its own random seed counts keys elsewhere.
    /// assert_eq!(monday.merge(&CountMin::new(dims)), Err(CountMinError::Incompatible));
    /// # Ok(())
    /// # }
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), CountMinError> {
        if !self.is_compatible(other) {
            return Err(CountMinError::Incompatible);
        }
        for (counter, &theirs) in self.counters.iter_mut().zip(other.counters.iter()) {
            *counter = counter.saturating_add(theirs);
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }

    /// The sum of all adds (saturating at `u64::MAX`), scaled by any decay since: the `N` of the
    /// error bound.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The over-count that estimates stay within with probability `1 - delta`:
    /// `ceil(epsilon * total)`.
    pub fn error_bound(&self) -> u64 {
        (self.dimensions.epsilon() * self.total as f64).ceil() as u64
    }

    /// Counters per row.
    pub fn width(&self) -> usize {
        self.dimensions.width
    }

    /// Number of rows.
    pub fn depth(&self) -> usize {
        self.dimensions.depth
    }

    /// The shape this sketch was built with.
    pub fn dimensions(&self) -> Dimensions {
        self.dimensions
    }

    /// Heap bytes used by the counters: `width * depth * size_of::<C>()`.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val::<[C]>(&self.counters)
    }

    #[inline]
    fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        keyed_hash(self.seed, key)
    }

    /// The position of `hash`'s counter in `row`.
    #[inline]
    fn index(&self, hash: u64, row: usize) -> usize {
        let width = self.dimensions.width;
        let mixed = mix64(hash.wrapping_add((row as u64 + 1).wrapping_mul(ROW_GAMMA)));
        row * width + reduce(mixed, width)
    }

    fn add_hash(&mut self, hash: u64, n: u64) -> u64 {
        self.total = self.total.saturating_add(n);
        if self.conservative {
            let target = C::from_u64_saturating(self.estimate_hash(hash).saturating_add(n));
            for row in 0..self.dimensions.depth {
                let i = self.index(hash, row);
                let counter = &mut self.counters[i];
                *counter = (*counter).max(target);
            }
            // Every counter is now at least `target` and the smallest was raised to it.
            target.to_u64()
        } else {
            let step = C::from_u64_saturating(n);
            let mut min = C::MAX;
            for row in 0..self.dimensions.depth {
                let i = self.index(hash, row);
                let counter = &mut self.counters[i];
                *counter = counter.saturating_add(step);
                min = min.min(*counter);
            }
            min.to_u64()
        }
    }

    #[inline]
    fn estimate_hash(&self, hash: u64) -> u64 {
        (0..self.dimensions.depth)
            .map(|row| self.counters[self.index(hash, row)])
            .min()
            .unwrap_or_default()
            .to_u64()
    }
}

/// Where a key that joins [`TopK`]'s tracked keys goes.
#[derive(Clone, Copy)]
enum Place {
    /// At the end of the heap, which has room.
    Append,
    /// In place of the least frequent tracked key.
    ReplaceMin,
}

/// Marks the heap entry being sifted, whose final position is not known yet.
const MOVING: usize = usize::MAX;

/// A tracked key with its sketch hash and the estimate it had after its latest add.
#[derive(Clone)]
struct Tracked<K> {
    key: K,
    hash: u64,
    estimate: u64,
}

/// The `k` most frequent keys of a stream, found with a [`CountMin`] sketch and a min-heap.
///
/// Each add updates the sketch and, if the key's new estimate beats the smallest tracked one (or
/// fewer than `k` keys are tracked), keeps the key with that estimate. Because the sketch never
/// under-counts and the smallest tracked estimate only grows:
///
/// - a key whose true count exceeds the smallest estimate in [`top`](Self::top) is always in it,
///   and while fewer than `k` keys are tracked every key seen is;
/// - each reported estimate is at least the key's true count and, with probability `1 - delta`,
///   at most `epsilon * N` above it;
/// - hence a key whose true count exceeds the k-th largest true count by more than `epsilon * N`
///   is reported unless two or more keys whose counts are at most the k-th largest were
///   over-counted by more than `epsilon * N` (they took its place). Each key is over-counted that
///   much with probability at most `delta`, but every distinct key of the stream is a chance:
///   with `D` distinct keys the guarantee holds with probability at least `1 - D * delta` (a union
///   bound), so size `delta` for the number of keys, not for one. With 3 x 1 counters, one key of
///   100 and nine of 1 (so `D = 10`), the heavy key is missed for 87% of seeds, not the
///   `delta = 37%` a single key's bound would suggest.
///
/// Keys whose counts are within `epsilon * N` of the k-th may be reported or not, and ties are
/// reported in no particular order. Memory is the sketch plus `k` tracked keys. After a
/// [`merge`](Self::merge) the first guarantee is weaker for keys neither side tracked; see there.
#[derive(Clone)]
pub struct TopK<K, C: Counter = u32> {
    sketch: CountMin<C>,
    k: usize,
    /// A min-heap on `estimate`.
    heap: Vec<Tracked<K>>,
    /// The heap position of every tracked key, hashed by the key's sketch hash.
    positions: HashTable<usize>,
}

impl<K, C: Counter> fmt::Debug for TopK<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TopK")
            .field("k", &self.k)
            .field("tracked", &self.heap.len())
            .field("sketch", &self.sketch)
            .finish()
    }
}

impl<K: Hash + Eq, C: Counter> TopK<K, C> {
    /// A tracker of the `k` most frequent keys, counting with `sketch` (whose shape, seed and update
    /// rule it keeps; counts already in it only raise estimates). Fails if `k` is zero.
    pub fn new(k: usize, sketch: CountMin<C>) -> Result<Self, CountMinError> {
        if k == 0 {
            return Err(CountMinError::ZeroK);
        }
        Ok(Self {
            sketch,
            k,
            heap: Vec::new(),
            positions: HashTable::new(),
        })
    }

    /// Counts `n` more occurrences of `key` and returns its new estimate.
    pub fn add(&mut self, key: K, n: u64) -> u64 {
        self.add_expelling(key, n).0
    }

    /// [`add`](Self::add), also returning the tracked key that `key` pushed out of the top `k`,
    /// if it did (Redis's `TOPK.ADD`): with it a caller can follow keys entering and leaving the
    /// heavy hitters as they happen, without comparing [`top`](Self::top) before and after. A key
    /// joins only by beating the smallest tracked estimate, so a tie expels nothing.
    ///
    /// ```
    /// use cortado::count_min::{CountMin, CountMinError, Dimensions, TopK};
    /// # fn main() -> Result<(), CountMinError> {
    /// let mut top = TopK::new(2, CountMin::<u32>::new(Dimensions::from_error(0.001, 0.01)?))?;
    /// assert_eq!(top.add_expelling("a", 3), (3, None));
    /// assert_eq!(top.add_expelling("b", 1), (1, None));
    /// assert_eq!(top.add_expelling("c", 1), (1, None)); // ties "b": not in
    /// assert_eq!(top.add_expelling("c", 1), (2, Some("b")));
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_expelling(&mut self, key: K, n: u64) -> (u64, Option<K>) {
        let hash = self.sketch.hash(&key);
        let (estimate, place) = self.count(hash, &key, n);
        let expelled = place.and_then(|place| self.track(place, key, hash, estimate));
        (estimate, expelled)
    }

    /// [`add`](Self::add) by a borrowed form of the key (`&str` for a `String` key), which is made
    /// into an owned key only when it joins the tracked keys: most adds of a long-tailed stream
    /// do not.
    pub fn add_by_ref<Q>(&mut self, key: &Q, n: u64) -> u64
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        let hash = self.sketch.hash(key);
        let (estimate, place) = self.count(hash, key, n);
        if let Some(place) = place {
            // The key pushed out, if any, is dropped here.
            self.track(place, key.to_owned(), hash, estimate);
        }
        estimate
    }

    /// Adds `n` to the sketch for the key with this hash and moves the key up the heap if it is
    /// tracked; returns its new estimate, and where it goes if it joins the tracked keys.
    fn count<Q>(&mut self, hash: u64, key: &Q, n: u64) -> (u64, Option<Place>)
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let estimate = self.sketch.add_hash(hash, n);
        let Self {
            heap, positions, k, ..
        } = self;
        let place = if let Some(&pos) = positions.find(hash, |&i| heap[i].key.borrow() == key) {
            heap[pos].estimate = estimate;
            sift(heap, positions, pos);
            None
        } else if n == 0 {
            // An add of 0 counts nothing, so it does not make a key a heavy hitter, even one
            // whose estimate other keys' counts inflate.
            None
        } else if heap.len() < *k {
            Some(Place::Append)
        } else if estimate > heap[0].estimate {
            Some(Place::ReplaceMin)
        } else {
            None
        };
        (estimate, place)
    }

    /// Starts tracking `key` at `place` (see [`count`](Self::count)); returns the key it replaced.
    fn track(&mut self, place: Place, key: K, hash: u64, estimate: u64) -> Option<K> {
        let Self {
            heap, positions, ..
        } = self;
        let tracked = Tracked {
            key,
            hash,
            estimate,
        };
        let (pos, replaced) = match place {
            Place::Append => {
                heap.push(tracked);
                (heap.len() - 1, None)
            }
            Place::ReplaceMin => {
                if let Ok(entry) = positions.find_entry(heap[0].hash, |&i| i == 0) {
                    entry.remove();
                }
                (0, Some(std::mem::replace(&mut heap[0], tracked).key))
            }
        };
        positions.insert_unique(hash, pos, |&i| heap[i].hash);
        sift(heap, positions, pos);
        replaced
    }

    /// Counts one more occurrence of `key` and returns its new estimate.
    pub fn increment(&mut self, key: K) -> u64 {
        self.add(key, 1)
    }

    /// The sketch's current estimate for `key`, tracked or not.
    pub fn estimate<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.sketch.estimate(key)
    }

    /// Whether `key` is among the tracked top keys.
    pub fn contains<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.sketch.hash(key);
        self.positions
            .find(hash, |&i| self.heap[i].key.borrow() == key)
            .is_some()
    }

    /// The tracked keys (at most `k`) with their estimates, largest first.
    ///
    /// An estimate is the one the key had after its latest add: later adds of colliding keys can
    /// only have loosened the sketch's current estimate, so this one is the tighter of the two.
    pub fn top(&self) -> Vec<(&K, u64)> {
        let mut out: Vec<(&K, u64)> = self.heap.iter().map(|t| (&t.key, t.estimate)).collect();
        out.sort_by_key(|&(_, estimate)| std::cmp::Reverse(estimate));
        out
    }

    /// The number of keys reported.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The number of keys tracked now (at most `k`).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no key is tracked: none has been added with a count above zero yet (or since
    /// [`clear`](Self::clear)).
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The underlying sketch.
    pub fn sketch(&self) -> &CountMin<C> {
        &self.sketch
    }

    /// Forgets every count and every tracked key.
    pub fn clear(&mut self) {
        self.sketch.clear();
        self.heap.clear();
        self.positions.clear();
    }

    /// Merges `other`'s counts into this tracker's sketch ([`CountMin::merge`]) and keeps, of the
    /// keys either tracker tracked, the `k` (this tracker's `k`) with the largest merged estimates,
    /// each reported with that estimate. Fails, changing nothing, if the sketches are not
    /// [compatible](CountMin::is_compatible).
    ///
    /// Every reported estimate is still at least the key's count over both streams, and a key
    /// either side tracked is kept if its combined count exceeds the smallest reported estimate.
    /// A key that neither side tracked is not considered (the trackers do not know it): it may be
    /// missed although its combined count exceeds the smallest reported estimate, but that count
    /// is at most `a + b`, where `a` and `b` are the smallest estimates of this tracker and of
    /// `other` before the merge (0 for one that tracked fewer than its `k` keys, having then
    /// tracked every key it saw), if both were filled by adds alone (each earlier merge adds its
    /// own such bound). Its next add, which raises its estimate to at least that
    /// count, brings it in if that beats the smallest tracked estimate.
    ///
    /// ```
    /// use cortado::count_min::{CountMin, CountMinError, Dimensions, TopK};
    /// # fn main() -> Result<(), CountMinError> {
    /// let sketch = CountMin::<u32>::new(Dimensions::from_error(0.001, 0.01)?);
    /// let mut east = TopK::new(2, sketch.clone())?;
    /// let mut west = TopK::new(2, sketch)?; // same seed: the sketches merge
    /// east.add("mocha", 5);
    /// east.add("latte", 3);
    /// west.add("latte", 4);
    /// west.add("ristretto", 1);
    /// east.merge(&west)?;
    /// assert_eq!(east.top(), [(&"latte", 7), (&"mocha", 5)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), CountMinError>
    where
        K: Clone,
    {
        self.sketch.merge(&other.sketch)?;
        // The seeds agree, so a key has the same hash on both sides.
        let joining: Vec<Tracked<K>> = other
            .heap
            .iter()
            .filter(|t| {
                self.positions
                    .find(t.hash, |&i| self.heap[i].key == t.key)
                    .is_none()
            })
            .cloned()
            .collect();
        let mut candidates = std::mem::take(&mut self.heap);
        candidates.extend(joining);
        for tracked in &mut candidates {
            tracked.estimate = self.sketch.estimate_hash(tracked.hash);
        }
        // Largest first to keep the best k; then smallest first, which is a valid min-heap.
        candidates.sort_by_key(|t| std::cmp::Reverse(t.estimate));
        candidates.truncate(self.k);
        candidates.reverse();
        self.positions.clear();
        for (pos, tracked) in candidates.iter().enumerate() {
            self.positions
                .insert_unique(tracked.hash, pos, |&i| candidates[i].hash);
        }
        self.heap = candidates;
        Ok(())
    }

    /// Checks the heap order and that `positions` maps every tracked key to its slot.
    #[cfg(test)]
    fn validate(&self) {
        assert_eq!(self.positions.len(), self.heap.len());
        assert!(self.heap.len() <= self.k);
        for (i, t) in self.heap.iter().enumerate() {
            assert!(self.positions.find(t.hash, |&p| p == i).is_some());
            if i > 0 {
                assert!(self.heap[(i - 1) / 2].estimate <= t.estimate);
            }
        }
    }
}

/// Points the position entry of the key with `hash` from heap slot `from` to slot `to`.
///
/// Positions are unique (the sifted entry is parked at [`MOVING`]), so matching on the position
/// alone finds the right entry without comparing keys.
fn retarget(positions: &mut HashTable<usize>, hash: u64, from: usize, to: usize) {
    if let Some(slot) = positions.find_mut(hash, |&p| p == from) {
        *slot = to;
    }
}

/// Restores the heap order after the estimate at `pos` changed, keeping `positions` in step.
fn sift<K>(heap: &mut [Tracked<K>], positions: &mut HashTable<usize>, mut pos: usize) {
    let hash = heap[pos].hash;
    retarget(positions, hash, pos, MOVING);
    while pos > 0 {
        let parent = (pos - 1) / 2;
        if heap[pos].estimate >= heap[parent].estimate {
            break;
        }
        heap.swap(pos, parent);
        retarget(positions, heap[pos].hash, parent, pos);
        pos = parent;
    }
    loop {
        let left = 2 * pos + 1;
        if left >= heap.len() {
            break;
        }
        let right = left + 1;
        let child = if right < heap.len() && heap[right].estimate < heap[left].estimate {
            right
        } else {
            left
        };
        if heap[child].estimate >= heap[pos].estimate {
            break;
        }
        heap.swap(pos, child);
        retarget(positions, heap[pos].hash, child, pos);
        pos = child;
    }
    retarget(positions, hash, MOVING, pos);
}

#[cfg(test)]
mod tests;
