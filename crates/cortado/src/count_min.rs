//! A Count-Min sketch that estimates how often each key occurred in a stream, and a top-k
//! heavy-hitter tracker built on it.
//!
//! [`CountMin::estimate`] never returns less than a key's true count (unless the counter type
//! saturated first); with probability at least `1 - delta` it over-counts by at most
//! `epsilon * N`, where `N` is the sum of everything added.
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
//! - **Stream form.** [`Dimensions::from_stream`] takes the parameters of the Go counter this
//!   module replaces (seed 002): an expected stream length `n`, an error range and an error rate,
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
    /// stream_length`, `delta = error_rate` (the constructor of seed 002).
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

    /// Whether no key has been added yet (or since [`clear`](Self::clear)).
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
mod tests {
    use super::*;
    use crate::random::SmallRng;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// `count` draws from a Zipf(1) distribution over keys `0..keys`, from a fixed seed.
    fn zipf_stream(keys: usize, count: usize, seed: u64) -> Vec<u64> {
        let mut cumulative = Vec::with_capacity(keys);
        let mut sum = 0.0;
        for rank in 1..=keys {
            sum += 1.0 / rank as f64;
            cumulative.push(sum);
        }
        let mut rng = SmallRng::new(seed);
        (0..count)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * sum;
                cumulative.partition_point(|&c| c < u) as u64
            })
            .collect()
    }

    /// Adds `ops` to a sketch and to an exact model; checks the estimate bounds for every key.
    fn check_never_under<C: Counter>(
        width: usize,
        depth: usize,
        seed: u64,
        conservative: bool,
        ops: &[(u16, u64)],
    ) -> Result<(), TestCaseError> {
        let dims = Dimensions::new(width, depth).expect("valid test dimensions");
        let mut sketch =
            CountMin::<C>::with_seed(dims, seed).with_conservative_update(conservative);
        let mut truth: HashMap<u16, u64> = HashMap::new();
        for &(key, n) in ops {
            let returned = sketch.add(&key, n);
            prop_assert_eq!(returned, sketch.estimate(&key));
            *truth.entry(key).or_default() += n;
        }
        let total: u64 = ops.iter().map(|&(_, n)| n).sum();
        prop_assert_eq!(sketch.total(), total);
        let cap = C::MAX.to_u64();
        for (key, count) in truth {
            let estimate = sketch.estimate(&key);
            prop_assert!(
                estimate >= count.min(cap),
                "key {key}: {estimate} < {count}"
            );
            prop_assert!(estimate <= total.min(cap));
        }
        Ok(())
    }

    fn ops() -> impl Strategy<Value = Vec<(u16, u64)>> {
        prop::collection::vec((0u16..64, 0u64..400), 0..200)
    }

    proptest! {
        #[test]
        fn estimate_random_streams_never_below_true_count(
            width in 1usize..32,
            depth in 1usize..5,
            seed: u64,
            conservative: bool,
            ops in ops(),
        ) {
            check_never_under::<u8>(width, depth, seed, conservative, &ops)?;
            check_never_under::<u16>(width, depth, seed, conservative, &ops)?;
            check_never_under::<u32>(width, depth, seed, conservative, &ops)?;
            check_never_under::<u64>(width, depth, seed, conservative, &ops)?;
        }

        #[test]
        fn merge_random_streams_never_below_combined_count(
            width in 1usize..32,
            depth in 1usize..5,
            seed: u64,
            conservative: (bool, bool),
            left in ops(),
            right in ops(),
        ) {
            let dims = Dimensions::new(width, depth).expect("valid test dimensions");
            let sketch = |conservative| {
                CountMin::<u16>::with_seed(dims, seed).with_conservative_update(conservative)
            };
            let (mut merged, mut other, mut plain) =
                (sketch(conservative.0), sketch(conservative.1), sketch(false));
            let mut truth: HashMap<u16, u64> = HashMap::new();
            for &(key, n) in &left {
                merged.add(&key, n);
                *truth.entry(key).or_default() += n;
            }
            for &(key, n) in &right {
                other.add(&key, n);
                *truth.entry(key).or_default() += n;
            }
            for &(key, n) in left.iter().chain(&right) {
                plain.add(&key, n);
            }
            merged.merge(&other).expect("same dimensions and seed");
            prop_assert_eq!(merged.total(), plain.total());
            for key in 0u16..64 {
                let count = truth.get(&key).copied().unwrap_or(0).min(u64::from(u16::MAX));
                let estimate = merged.estimate(&key);
                prop_assert!(estimate >= count, "key {}: {} < {}", key, estimate, count);
                prop_assert!(estimate <= plain.estimate(&key));
            }
        }

        #[test]
        fn conservative_update_never_above_plain_estimate(
            width in 1usize..32,
            depth in 1usize..5,
            seed: u64,
            ops in ops(),
        ) {
            let dims = Dimensions::new(width, depth).expect("valid test dimensions");
            let mut plain = CountMin::<u32>::with_seed(dims, seed);
            let mut conservative = CountMin::<u32>::with_seed(dims, seed).with_conservative_update(true);
            for &(key, n) in &ops {
                plain.add(&key, n);
                conservative.add(&key, n);
            }
            for key in 0u16..64 {
                prop_assert!(conservative.estimate(&key) <= plain.estimate(&key));
            }
        }

        #[test]
        fn decay_any_factor_floors_every_estimate(
            seed: u64,
            factor in 0.0f64..=1.0,
            ops in ops(),
        ) {
            let dims = Dimensions::new(16, 3).expect("valid test dimensions");
            let mut sketch = CountMin::<u16>::with_seed(dims, seed);
            for &(key, n) in &ops {
                sketch.add(&key, n);
            }
            let before: Vec<u64> = (0u16..64).map(|k| sketch.estimate(&k)).collect();
            let total = sketch.total();
            sketch.decay(factor).expect("factor in [0, 1]");
            for (key, old) in (0u16..64).zip(before) {
                prop_assert_eq!(sketch.estimate(&key), (old as f64 * factor).floor() as u64);
            }
            prop_assert_eq!(sketch.total(), (total as f64 * factor).floor() as u64);
        }

        #[test]
        fn decay_half_halves_every_estimate_rounding_down(seed: u64, ops in ops()) {
            let dims = Dimensions::new(16, 3).expect("valid test dimensions");
            let mut sketch = CountMin::<u64>::with_seed(dims, seed);
            for &(key, n) in &ops {
                sketch.add(&key, n);
            }
            // A count far above 2^53, where an f64 product would not be exact.
            sketch.add(&u16::MAX, (1 << 60) + 3);
            let before: Vec<u64> = (0u16..64).chain([u16::MAX]).map(|k| sketch.estimate(&k)).collect();
            let total = sketch.total();
            sketch.decay(0.5).expect("0.5 is a valid factor");
            for (key, old) in (0u16..64).chain([u16::MAX]).zip(before) {
                prop_assert_eq!(sketch.estimate(&key), old / 2);
            }
            prop_assert_eq!(sketch.total(), total / 2);
        }
    }

    #[test]
    fn estimate_zipf_stream_within_epsilon_n_for_all_but_delta_of_keys() {
        let dims = Dimensions::from_error(0.001, 0.01).expect("valid parameters");
        let stream = zipf_stream(10_000, 100_000, 42);
        let mut truth = vec![0u64; 10_000];
        for conservative in [false, true] {
            let mut sketch =
                CountMin::<u32>::with_seed(dims, 7).with_conservative_update(conservative);
            truth.fill(0);
            for &key in &stream {
                sketch.increment(&key);
                truth[key as usize] += 1;
            }
            let bound = dims.epsilon() * sketch.total() as f64;
            let over = (0..10_000u64)
                .filter(|&k| sketch.estimate(&k) as f64 > truth[k as usize] as f64 + bound)
                .count();
            assert!(
                (over as f64) / 10_000.0 <= dims.delta(),
                "conservative {conservative}: {over} of 10,000 keys over epsilon*N = {bound}"
            );
        }
    }

    #[test]
    fn merge_halves_of_a_stream_equals_sketch_of_whole_stream() {
        let dims = Dimensions::from_error(0.01, 0.01).expect("valid parameters");
        let stream = zipf_stream(1_000, 20_000, 5);
        let (first, second) = stream.split_at(8_000);
        let fill = |keys: &[u64]| {
            let mut sketch = CountMin::<u32>::with_seed(dims, 3);
            for key in keys {
                sketch.increment(key);
            }
            sketch
        };
        let mut merged = fill(first);
        merged
            .merge(&fill(second))
            .expect("same dimensions and seed");
        let whole = fill(&stream);
        assert_eq!(merged.counters, whole.counters);
        assert_eq!(merged.total(), 20_000);
    }

    #[test]
    fn merge_incompatible_sketch_is_error_and_changes_nothing() {
        let dims = Dimensions::new(64, 3).expect("valid dimensions");
        let mut sketch = CountMin::<u32>::with_seed(dims, 1);
        sketch.add("k", 5);
        let mut other_seed = CountMin::<u32>::with_seed(dims, 2);
        other_seed.add("k", 5);
        let mut other_width = CountMin::<u32>::with_seed(Dimensions::new(65, 3).unwrap(), 1);
        other_width.add("k", 5);
        let mut other_depth = CountMin::<u32>::with_seed(Dimensions::new(64, 4).unwrap(), 1);
        other_depth.add("k", 5);
        for other in [&other_seed, &other_width, &other_depth] {
            assert!(!sketch.is_compatible(other));
            assert_eq!(sketch.merge(other), Err(CountMinError::Incompatible));
            assert_eq!((sketch.estimate("k"), sketch.total()), (5, 5));
        }
        assert!(CountMinError::Incompatible.to_string().contains("merged"));
    }

    #[test]
    fn merge_u8_counters_saturate_at_255() {
        let dims = Dimensions::new(64, 4).expect("valid dimensions");
        let mut a = CountMin::<u8>::with_seed(dims, 1);
        let mut b = CountMin::<u8>::with_seed(dims, 1);
        a.add("hot", 200);
        b.add("hot", 100);
        a.merge(&b).expect("compatible");
        assert_eq!(a.estimate("hot"), 255);
        assert_eq!(a.total(), 300);
    }

    #[test]
    fn add_u8_counter_saturates_at_255() {
        let dims = Dimensions::new(64, 4).expect("valid dimensions");
        let mut sketch = CountMin::<u8>::with_seed(dims, 1);
        assert_eq!(sketch.add("hot", 200), 200);
        assert_eq!(sketch.add("hot", 100), 255);
        assert_eq!(sketch.increment("hot"), 255);
        assert_eq!(sketch.add("hot", u64::MAX), 255);
        assert_eq!(sketch.estimate("hot"), 255);
        // The total is a u64 and saturates only there.
        assert_eq!(sketch.total(), u64::MAX);
    }

    #[test]
    fn add_u8_conservative_saturates_at_255() {
        let dims = Dimensions::new(64, 4).expect("valid dimensions");
        let mut sketch = CountMin::<u8>::with_seed(dims, 1).with_conservative_update(true);
        sketch.add("hot", 250);
        assert_eq!(sketch.add("hot", 10), 255);
        assert_eq!(sketch.estimate("hot"), 255);
    }

    #[test]
    fn decay_zero_clears_everything() {
        let dims = Dimensions::new(32, 3).expect("valid dimensions");
        let mut sketch = CountMin::<u32>::with_seed(dims, 5);
        for k in 0..100u32 {
            sketch.add(&k, u64::from(k) + 1);
        }
        sketch.decay(0.0).expect("0 is a valid factor");
        assert_eq!(sketch.total(), 0);
        assert!((0..100u32).all(|k| sketch.estimate(&k) == 0));
    }

    #[test]
    fn decay_one_leaves_counts_alone() {
        let dims = Dimensions::new(32, 3).expect("valid dimensions");
        let mut sketch = CountMin::<u64>::with_seed(dims, 5);
        sketch.add("k", u64::MAX - 1);
        sketch.decay(1.0).expect("1 is a valid factor");
        assert_eq!(sketch.estimate("k"), u64::MAX - 1);
    }

    #[test]
    fn decay_factor_outside_unit_interval_is_error_and_changes_nothing() {
        let dims = Dimensions::new(32, 3).expect("valid dimensions");
        let mut sketch = CountMin::<u32>::with_seed(dims, 5);
        sketch.add("k", 10);
        for factor in [-0.1, 1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match sketch.decay(factor) {
                Err(CountMinError::InvalidDecayFactor(_)) => {}
                other => panic!("factor {factor}: {other:?}"),
            }
        }
        assert_eq!(sketch.estimate("k"), 10);
        assert_eq!(sketch.total(), 10);
    }

    #[test]
    fn clear_forgets_counts_and_total() {
        let mut sketch = CountMin::<u16>::new(Dimensions::new(8, 2).expect("valid dimensions"));
        sketch.add("a", 5);
        sketch.clear();
        assert_eq!(sketch.estimate("a"), 0);
        assert_eq!(sketch.total(), 0);
    }

    #[test]
    fn from_error_known_parameters_give_expected_shape_and_memory() {
        // e / 0.001 = 2718.28 -> 2719; ln(100) = 4.605 -> 5.
        let dims = Dimensions::from_error(0.001, 0.01).expect("valid parameters");
        assert_eq!((dims.width(), dims.depth()), (2719, 5));
        assert_eq!(CountMin::<u8>::new(dims).memory_bytes(), 2719 * 5);
        assert_eq!(CountMin::<u32>::new(dims).memory_bytes(), 2719 * 5 * 4);
        assert!(dims.epsilon() <= 0.001 && dims.delta() <= 0.01);
        // e / 0.1 = 27.18 -> 28; ln(2) = 0.69 -> 1.
        let dims = Dimensions::from_error(0.1, 0.5).expect("valid parameters");
        assert_eq!((dims.width(), dims.depth()), (28, 1));
    }

    #[test]
    fn from_stream_maps_range_over_length_to_epsilon() {
        // One million items, within 100 counts, 99% of the time: epsilon = 1e-4, delta = 0.01;
        // e / 1e-4 = 27182.8 -> 27183, ln(100) = 4.6 -> 5.
        let dims = Dimensions::from_stream(1_000_000, 100, 0.01).expect("valid parameters");
        assert_eq!((dims.width(), dims.depth()), (27_183, 5));
        assert_eq!(
            dims,
            Dimensions::from_error(1e-4, 0.01).expect("valid parameters")
        );
        // 1,000 items within 10, 0.1% failures: e / 0.01 = 271.8 -> 272, ln(1000) = 6.9 -> 7.
        let dims = Dimensions::from_stream(1_000, 10, 0.001).expect("valid parameters");
        assert_eq!((dims.width(), dims.depth()), (272, 7));
    }

    #[test]
    fn from_error_bad_parameters_are_typed_errors() {
        use CountMinError::*;
        for epsilon in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert!(matches!(
                Dimensions::from_error(epsilon, 0.01),
                Err(InvalidEpsilon(_))
            ));
        }
        for delta in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert!(matches!(
                Dimensions::from_error(0.01, delta),
                Err(InvalidDelta(_))
            ));
        }
        assert_eq!(Dimensions::from_error(1e-300, 0.01), Err(TooLarge));
        assert_eq!(
            Dimensions::from_error(0.01, 1e-300),
            Ok(Dimensions::new(272, 691).unwrap())
        );
    }

    #[test]
    fn from_stream_bad_parameters_are_typed_errors() {
        use CountMinError::*;
        assert_eq!(Dimensions::from_stream(0, 1, 0.01), Err(ZeroStreamLength));
        assert_eq!(Dimensions::from_stream(100, 0, 0.01), Err(ZeroErrorRange));
        assert_eq!(
            Dimensions::from_stream(100, 100, 0.01),
            Err(ErrorRangeTooWide {
                error_range: 100,
                stream_length: 100
            })
        );
        assert_eq!(
            Dimensions::from_stream(100, 10, 1.5),
            Err(InvalidDelta(1.5))
        );
    }

    #[test]
    fn from_stream_range_just_below_huge_length_gives_widest_epsilon() {
        // Valid (the range is below the length) although both round to 2^64 as f64: epsilon is
        // just below 1, so e / epsilon rounds up to 3 columns.
        for (stream_length, error_range) in [(u64::MAX, u64::MAX - 1), ((1 << 53) + 1, 1 << 53)] {
            assert_eq!(
                Dimensions::from_stream(stream_length, error_range, 0.01).map(|d| d.width()),
                Ok(3),
                "{error_range} of {stream_length}"
            );
        }
    }

    #[test]
    fn dimensions_new_zero_or_huge_is_error() {
        use CountMinError::*;
        assert_eq!(Dimensions::new(0, 3), Err(ZeroWidth));
        assert_eq!(Dimensions::new(3, 0), Err(ZeroDepth));
        assert_eq!(Dimensions::new(usize::MAX, 2), Err(TooLarge));
        assert_eq!(Dimensions::new(1 << 31, 2).map(|d| d.depth()), Ok(2));
    }

    #[test]
    fn error_display_names_the_parameter() {
        assert!(CountMinError::InvalidEpsilon(2.0)
            .to_string()
            .contains("epsilon"));
        assert!(CountMinError::ZeroK.to_string().contains("k"));
    }

    #[test]
    fn estimate_str_and_string_are_the_same_key() {
        let mut sketch = CountMin::<u32>::with_seed(Dimensions::new(512, 4).unwrap(), 3);
        sketch.add("latte", 4);
        sketch.add(&String::from("latte"), 2);
        assert_eq!(sketch.estimate(&String::from("latte")), 6);
    }

    #[test]
    fn with_seed_same_seed_same_counts_other_seed_other_rows() {
        let dims = Dimensions::new(1 << 12, 4).unwrap();
        let a = CountMin::<u32>::with_seed(dims, 1);
        let b = CountMin::<u32>::with_seed(dims, 1);
        let c = CountMin::<u32>::with_seed(dims, 2);
        let same = (0..1000u64)
            .filter(|k| a.index(a.hash(k), 0) == c.index(c.hash(k), 0))
            .count();
        // 4,096 columns: independent seeds agree by chance about 1/4096 of the time.
        assert!(same < 10, "same = {same}");
        assert!((0..1000u64).all(|k| a.index(a.hash(&k), 2) == b.index(b.hash(&k), 2)));
    }

    #[test]
    fn index_rows_of_one_key_are_uncorrelated() {
        // If rows reused one column (or moved in lockstep), keys colliding in row 0 would collide
        // in row 1 too; independent rows make that about 1/width as likely.
        let dims = Dimensions::new(64, 2).unwrap();
        let sketch = CountMin::<u32>::with_seed(dims, 11);
        let columns: Vec<(usize, usize)> = (0..2000u64)
            .map(|k| {
                let h = sketch.hash(&k);
                (sketch.index(h, 0), sketch.index(h, 1) - 64)
            })
            .collect();
        let (mut both, mut first) = (0usize, 0usize);
        for i in 0..columns.len() {
            for j in i + 1..columns.len() {
                if columns[i].0 == columns[j].0 {
                    first += 1;
                    both += usize::from(columns[i].1 == columns[j].1);
                }
            }
        }
        // About 31,000 pairs share a row-0 column; about 490 should share row 1 as well.
        let rate = both as f64 / first as f64;
        assert!(
            rate < 2.0 / 64.0,
            "{both} of {first} row-0 collisions repeat in row 1"
        );
    }

    fn tracker(k: usize, seed: u64) -> TopK<u64> {
        let dims = Dimensions::from_error(0.001, 0.01).unwrap();
        TopK::new(k, CountMin::with_seed(dims, seed)).unwrap()
    }

    #[test]
    fn top_skewed_stream_reports_heavy_hitters_in_order() {
        // Five heavy keys with 5,000 .. 1,000 occurrences among 20,000 adds over 5,000 light keys.
        let mut stream: Vec<u64> = Vec::new();
        for (key, count) in [
            (1u64, 5_000),
            (2, 4_000),
            (3, 3_000),
            (4, 2_000),
            (5, 1_000),
        ] {
            stream.extend(std::iter::repeat_n(key, count));
        }
        let mut rng = SmallRng::new(3);
        stream.extend((0..20_000).map(|_| 100 + rng.next_u64() % 5_000));
        // Fisher-Yates, so heavy and light keys interleave.
        for i in (1..stream.len()).rev() {
            stream.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let mut top = tracker(5, 9);
        for &key in &stream {
            top.increment(key);
        }
        top.validate();
        let reported = top.top();
        let keys: Vec<u64> = reported.iter().map(|&(&k, _)| k).collect();
        assert_eq!(keys, [1, 2, 3, 4, 5]);
        let slack = top.sketch().error_bound();
        for ((_, estimate), truth) in reported.iter().zip([5_000, 4_000, 3_000, 2_000, 1_000]) {
            assert!(*estimate >= truth && *estimate <= truth + slack);
        }
    }

    #[test]
    fn top_key_above_kth_by_epsilon_n_missed_only_when_two_lighter_keys_over_counted() {
        // 3 x 1 counters (epsilon = e / 3, delta = 1 / e), k = 2. Key 0 occurs 100 times, then
        // keys 1..=9 once each: N = 109, the 2nd largest count is 1 and 100 > 1 + epsilon * N =
        // 99.8. Key 0 is missed far more often than delta (a light key shares its only counter
        // with probability 1/3, and two of nine do 86% of the time), but only that way.
        let dims = Dimensions::new(3, 1).unwrap();
        let slack = dims.epsilon() * 109.0;
        let (seeds, mut missed) = (1_000u64, 0u64);
        for seed in 0..seeds {
            let mut top = TopK::new(2, CountMin::<u32>::with_seed(dims, seed)).unwrap();
            top.add(0u64, 100);
            for key in 1..=9u64 {
                top.add(key, 1);
            }
            if !top.contains(&0) {
                missed += 1;
                let over_counted = top
                    .top()
                    .iter()
                    .filter(|&&(_, estimate)| estimate as f64 > 1.0 + slack)
                    .count();
                assert!(over_counted >= 2, "seed {seed}: {:?}", top.top());
            }
        }
        let rate = missed as f64 / seeds as f64;
        assert!(rate > 0.8 && rate < 0.92, "missed in {rate} of seeds");
    }

    #[test]
    fn top_k_above_distinct_keys_reports_all_keys() {
        let mut top = tracker(10, 1);
        for (key, n) in [(7u64, 3u64), (8, 1), (9, 2)] {
            top.add(key, n);
        }
        assert_eq!(top.len(), 3);
        assert_eq!(top.top(), [(&7, 3), (&9, 2), (&8, 1)]);
        assert!(top.contains(&8) && !top.contains(&10));
    }

    thread_local! {
        static CLONES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A key that counts its clones on its thread (`ToOwned` of a `Clone` type clones).
    #[derive(PartialEq, Eq, Hash)]
    struct CountedKey(u64);

    impl Clone for CountedKey {
        fn clone(&self) -> Self {
            CLONES.with(|n| n.set(n.get() + 1));
            Self(self.0)
        }
    }

    #[test]
    fn add_by_ref_untracked_key_makes_no_owned_key() {
        let sketch = CountMin::<u32>::with_seed(Dimensions::new(1_024, 4).unwrap(), 5);
        let mut top = TopK::new(2, sketch).unwrap();
        let clones = || CLONES.with(std::cell::Cell::get);
        top.add_by_ref(&CountedKey(1), 10);
        top.add_by_ref(&CountedKey(2), 5);
        assert_eq!(clones(), 2, "each key joining the heap is made once");
        for key in 3..100 {
            top.add_by_ref(&CountedKey(key), 1);
        }
        top.add_by_ref(&CountedKey(1), 1);
        assert_eq!(clones(), 2, "light and already tracked keys are not made");
        top.add_by_ref(&CountedKey(3), 9);
        assert_eq!(
            clones(),
            3,
            "a key that displaces the least frequent is made"
        );
        let keys: Vec<u64> = top.top().iter().map(|(k, _)| k.0).collect();
        assert_eq!(keys, [1, 3]);
        top.validate();
        let mut words: TopK<String> =
            TopK::new(1, CountMin::new(Dimensions::new(64, 2).unwrap())).unwrap();
        words.add_by_ref("cache", 2);
        assert_eq!(words.top(), [(&"cache".to_string(), 2)]);
    }

    /// Keys that hash alike when their first field is equal: distinct keys sharing a sketch hash.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Colliding(u64, u64);

    impl std::hash::Hash for Colliding {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            self.0.hash(state);
        }
    }

    #[test]
    fn add_and_add_by_ref_keep_keys_sharing_a_hash_apart() {
        for by_ref in [false, true] {
            let sketch = CountMin::<u32>::with_seed(Dimensions::new(64, 2).unwrap(), 9);
            let mut top = TopK::new(3, sketch).unwrap();
            let mut add = |key: Colliding, n| {
                if by_ref {
                    top.add_by_ref(&key, n)
                } else {
                    top.add(key, n)
                }
            };
            // The two keys share every counter, so each estimate is their sum.
            assert_eq!(add(Colliding(1, 1), 5), 5);
            assert_eq!(add(Colliding(1, 2), 1), 6);
            assert_eq!(add(Colliding(1, 1), 1), 7);
            let mut tracked: Vec<(u64, u64)> = top.top().iter().map(|(k, _)| (k.0, k.1)).collect();
            tracked.sort_unstable();
            assert_eq!(tracked, [(1, 1), (1, 2)], "by_ref {by_ref}");
            let estimate =
                |key: &Colliding| top.heap.iter().find(|t| t.key == *key).map(|t| t.estimate);
            assert_eq!(estimate(&Colliding(1, 1)), Some(7));
            assert_eq!(estimate(&Colliding(1, 2)), Some(6));
            top.validate();
        }
    }

    /// A tracker of `k` keys over a 272 x 5 sketch with seed 4, fed `stream`.
    fn fed(k: usize, stream: &[(u64, u64)]) -> TopK<u64> {
        let dims = Dimensions::from_error(0.01, 0.01).unwrap();
        let mut top = TopK::new(k, CountMin::with_seed(dims, 4)).unwrap();
        for &(key, n) in stream {
            top.add(key, n);
        }
        top
    }

    #[test]
    fn merge_halves_of_a_stream_reports_heavy_hitters_of_whole() {
        // Heavy keys 1..=5 with 500 .. 100 occurrences, light keys 100.. once each, interleaved
        // and split in two uneven halves.
        let mut rng = SmallRng::new(8);
        let mut stream: Vec<(u64, u64)> = (1..=5u64)
            .flat_map(|key| std::iter::repeat_n((key, 1), 600 - 100 * key as usize))
            .chain((100..2_100).map(|key| (key, 1)))
            .collect();
        for i in (1..stream.len()).rev() {
            stream.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let (left, right) = stream.split_at(1_000);
        let mut merged = fed(5, left);
        merged.merge(&fed(5, right)).unwrap();
        merged.validate();
        let whole = fed(5, &stream);
        let keys: Vec<u64> = merged.top().iter().map(|&(&k, _)| k).collect();
        assert_eq!(keys, [1, 2, 3, 4, 5]);
        for (key, estimate) in merged.top() {
            assert_eq!(estimate, whole.estimate(key), "key {key}");
        }
    }

    #[test]
    fn merge_key_tracked_only_by_other_replaces_lighter_key() {
        let mut top = fed(2, &[(1, 10), (2, 3)]);
        top.merge(&fed(2, &[(3, 8), (1, 2)])).unwrap();
        top.validate();
        assert_eq!(top.top(), [(&1, 12), (&3, 8)]);
        assert!(!top.contains(&2));
        assert_eq!(top.sketch().total(), 23);
    }

    #[test]
    fn merge_into_larger_k_keeps_own_k() {
        let mut top = fed(3, &[(1, 1)]);
        top.merge(&fed(1, &[(2, 5)])).unwrap();
        top.validate();
        assert_eq!((top.k(), top.len()), (3, 2));
        let mut small = fed(1, &[(1, 1)]);
        small.merge(&fed(3, &[(2, 5), (3, 4), (4, 3)])).unwrap();
        small.validate();
        assert_eq!(small.top(), [(&2, 5)]);
    }

    #[test]
    fn merge_top_incompatible_sketch_is_error_and_changes_nothing() {
        let mut top = fed(2, &[(1, 10)]);
        let dims = Dimensions::from_error(0.01, 0.01).unwrap();
        let mut other = TopK::new(2, CountMin::with_seed(dims, 5)).unwrap();
        other.add(2, 20);
        assert_eq!(top.merge(&other), Err(CountMinError::Incompatible));
        assert_eq!(top.top(), [(&1, 10)]);
        assert_eq!(top.sketch().total(), 10);
    }

    #[test]
    fn add_expelling_returns_key_pushed_out_and_none_otherwise() {
        let mut top = tracker(2, 3);
        assert_eq!(top.add_expelling(1, 5), (5, None), "room left");
        assert_eq!(top.add_expelling(2, 2), (2, None), "room left");
        assert_eq!(top.add_expelling(3, 2), (2, None), "a tie does not get in");
        assert_eq!(top.add_expelling(3, 1), (3, Some(2)), "beats the smallest");
        assert_eq!(top.add_expelling(3, 1), (4, None), "already tracked");
        assert_eq!(top.add_expelling(4, 1), (1, None), "too light");
        assert_eq!(top.top(), [(&1, 5), (&3, 4)]);
        top.validate();
    }

    #[test]
    fn new_k_zero_is_error() {
        let sketch = CountMin::<u32>::new(Dimensions::new(8, 2).unwrap());
        assert!(matches!(
            TopK::<u64>::new(0, sketch),
            Err(CountMinError::ZeroK)
        ));
    }

    #[test]
    fn clear_forgets_tracked_keys() {
        let mut top = tracker(3, 1);
        top.add(1, 10);
        top.clear();
        assert!(top.is_empty() && top.top().is_empty());
        assert_eq!(top.estimate(&1u64), 0);
    }

    proptest! {
        #[test]
        fn merge_random_streams_keep_every_tracked_key_above_threshold(
            k in 1usize..6,
            other_k in 1usize..6,
            width in 1usize..24,
            seed: u64,
            left in prop::collection::vec((0u64..30, 1u64..20), 0..150),
            right in prop::collection::vec((0u64..30, 1u64..20), 0..150),
        ) {
            let dims = Dimensions::new(width, 2).unwrap();
            let sketch = CountMin::<u32>::with_seed(dims, seed);
            let mut top = TopK::new(k, sketch.clone()).unwrap();
            let mut other = TopK::new(other_k, sketch).unwrap();
            let mut truth: HashMap<u64, u64> = HashMap::new();
            for &(key, n) in &left {
                top.add(key, n);
                *truth.entry(key).or_default() += n;
            }
            for &(key, n) in &right {
                other.add(key, n);
                *truth.entry(key).or_default() += n;
            }
            let smallest = |t: &TopK<u64>| if t.len() < t.k() { 0 } else { t.heap[0].estimate };
            let missed_bound = smallest(&top) + smallest(&other);
            let was_tracked: Vec<u64> =
                top.heap.iter().chain(&other.heap).map(|t| t.key).collect();
            top.merge(&other).unwrap();
            top.validate();
            let reported = top.top();
            prop_assert!(reported.windows(2).all(|w| w[0].1 >= w[1].1));
            for &(key, estimate) in &reported {
                prop_assert!(estimate >= truth[key]);
                prop_assert_eq!(estimate, top.estimate(key));
            }
            let threshold = if reported.len() < k { 0 } else { reported[k - 1].1 };
            for (key, &count) in &truth {
                if count > threshold && !top.contains(key) {
                    prop_assert!(!was_tracked.contains(key),
                        "tracked key {} with count {} above {} dropped", key, count, threshold);
                    prop_assert!(count <= missed_bound,
                        "untracked key {} with count {} above a + b = {}", key, count, missed_bound);
                }
            }
        }

        #[test]
        fn top_random_streams_report_every_key_above_threshold(
            k in 1usize..8,
            width in 1usize..24,
            seed: u64,
            conservative: bool,
            ops in prop::collection::vec((0u64..40, 1u64..20), 0..300),
        ) {
            let dims = Dimensions::new(width, 2).unwrap();
            let sketch = CountMin::<u16>::with_seed(dims, seed).with_conservative_update(conservative);
            let mut top = TopK::new(k, sketch.clone()).unwrap();
            // The same stream, alternately added by reference: it must track the same keys.
            let mut by_ref = TopK::new(k, sketch).unwrap();
            let mut truth: HashMap<u64, u64> = HashMap::new();
            for (i, &(key, n)) in ops.iter().enumerate() {
                let before: Vec<u64> = top.heap.iter().map(|t| t.key).collect();
                let (estimate, expelled) = top.add_expelling(key, n);
                let mut after: Vec<u64> = top.heap.iter().map(|t| t.key).collect();
                // Tracked before, plus the key, less what was expelled, is what is tracked now.
                let mut expected = before.clone();
                if !expected.contains(&key) && after.contains(&key) {
                    expected.push(key);
                }
                if let Some(gone) = expelled {
                    prop_assert!(before.contains(&gone) && gone != key && !after.contains(&gone));
                    expected.retain(|&k| k != gone);
                } else {
                    prop_assert!(after.len() > before.len() || after.iter().all(|k| before.contains(k)));
                }
                expected.sort_unstable();
                after.sort_unstable();
                prop_assert_eq!(after, expected);
                prop_assert_eq!(estimate, top.estimate(&key));
                if i % 2 == 0 {
                    by_ref.add_by_ref(&key, n);
                } else {
                    by_ref.add(key, n);
                }
                *truth.entry(key).or_default() += n;
                top.validate();
            }
            by_ref.validate();
            prop_assert_eq!(by_ref.heap.iter().map(|t| (t.key, t.estimate)).collect::<Vec<_>>(),
                top.heap.iter().map(|t| (t.key, t.estimate)).collect::<Vec<_>>());
            let reported = top.top();
            prop_assert!(reported.windows(2).all(|w| w[0].1 >= w[1].1));
            for &(key, estimate) in &reported {
                prop_assert!(estimate >= truth[key]);
            }
            if reported.len() < k {
                prop_assert_eq!(reported.len(), truth.len());
            } else {
                let threshold = reported.last().map_or(0, |&(_, e)| e);
                for (key, &count) in &truth {
                    prop_assert!(count <= threshold || top.contains(key),
                        "key {} with count {} above threshold {} not reported", key, count, threshold);
                }
            }
        }
    }
}
