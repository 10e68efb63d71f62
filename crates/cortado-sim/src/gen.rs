//! Synthetic key streams for users without traces, and for benchmarks: Zipf, loop, Zipf with
//! scans, Zipf with drifting popularity, and phases that alternate between frequency and recency.
//!
//! [`keys`] returns a lazy, deterministic stream of exactly `requests` keys for a [`Dist`], a
//! key-space size and a seed; [`write_keys`] writes any key stream in the `keys` trace format
//! (one unsigned decimal per line), which [`crate::trace`] reads back.
//!
//! # Design
//!
//! The distributions, over `n` = `keys` distinct keys (parsed from `--dist`):
//!
//! - **`zipf:S`**: independent draws; the key of popularity rank `r` (1 = most popular) has
//!   probability `r^-S / H(n, S)`, where `H(n, S) = sum over i in 1..=n of i^-S`. `S = 0` is
//!   uniform; `S` around 0.7 to 1.0 resembles web and key-value traffic.
//! - **`loop`**: `0, 1, ..., n - 1, 0, 1, ...`: the keys themselves, in order, like the shared
//!   `loop` trace. LRU gets no hit unless it holds all `n` keys.
//! - **`scan+zipf:S`**: the Zipf stream in phases of `n` requests, each followed by a scan of
//!   [`SCAN_DIVISOR`]-th of `n` (`n / 4`, at least 1) fresh keys, each requested once and never
//!   again. So a fifth of all requests are one-off scan keys, in bursts long enough to flush an
//!   LRU cache of up to a quarter of the key space: the case frequency-based admission is for.
//! - **`drift+zipf:S`**: Zipf whose ranking slides. Every [`drift_period`] (`n / 5`, at least 1)
//!   requests, every key moves [`drift_step`] (`n / 100`, at least 1) ranks down and as many
//!   brand-new keys take the top ranks; keys pushed past rank `n` are never requested again. So
//!   about 5 % of the ranking turns over per `n` requests: yesterday's hot keys cool down
//!   gradually, and a policy must forget old frequencies to keep up.
//! - **`alternate:L`**: phases of `L` requests, each over keys never seen before, that take
//!   turns. The first is a loop over `n` keys, which only frequency-based admission gets hits
//!   from once `n` exceeds the cache; the second requests every key twice, the second time
//!   [`reuse_gap`] (`n / 5`, at least 1) first requests later, which only a cache that keeps
//!   recent keys long enough (LRU, a large admission window) gets hits from. It tests how
//!   quickly an adaptive policy follows a change of workload, and whether it is fooled by
//!   workloads that change back and forth.
//!
//! Keys other than `loop`'s are scattered over the whole `u64` range: the key of internal id
//! `i` is `mix(i ^ salt)`, where `mix` is SplitMix64's finalizer (a bijection of `u64`) and
//! `salt` comes from the seed. Distinct ids therefore give distinct keys (scan keys never collide
//! with Zipf keys), yet key order says nothing about popularity, so no policy or hash table can
//! exploit it.
//!
//! Sampling uses rejection-inversion (Hörmann and Derflinger): exact for any `n` and `S >= 0`,
//! O(1) time per sample (about 1.1 tries on average), and O(1) memory, where a CDF table would
//! cost 8 bytes per key. Randomness is SplitMix64: 8 bytes of state, and a given seed always
//! gives the same stream. (The sampler uses `f64` `ln`/`exp`, whose last bit may differ between
//! platforms' math libraries, so streams are reproducible per platform, and almost always
//! across platforms.)
//!
//! # References
//!
//! 1. W. Hörmann, G. Derflinger: "Rejection-inversion to generate variates from monotone
//!    discrete distributions", ACM TOMACS 6(3), 1996.
//! 2. G. L. Steele, D. Lea, C. H. Flood: "Fast splittable pseudorandom number generators",
//!    OOPSLA 2014 (SplitMix64).
//! 3. L. Breslau et al.: "Web Caching and Zipf-like Distributions: Evidence and Implications",
//!    INFOCOM 1999.

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

/// One scan of `n / SCAN_DIVISOR` fresh keys follows every `n` Zipf requests in `scan+zipf`.
pub const SCAN_DIVISOR: u64 = 4;
/// `drift+zipf` shifts its ranking every `n / DRIFT_PERIOD_DIVISOR` requests ...
pub const DRIFT_PERIOD_DIVISOR: u64 = 5;
/// ... by `n / DRIFT_STEP_DIVISOR` ranks: 5 % of the ranking per `n` requests.
pub const DRIFT_STEP_DIVISOR: u64 = 100;
/// An `alternate` recency phase requests each key again `n / REUSE_GAP_DIVISOR` first
/// requests later.
pub const REUSE_GAP_DIVISOR: u64 = 5;

/// Length of a `scan+zipf` scan for `n` keys.
pub fn scan_length(n: u64) -> u64 {
    (n / SCAN_DIVISOR).max(1)
}

/// Requests between two ranking shifts of `drift+zipf` for `n` keys.
pub fn drift_period(n: u64) -> u64 {
    (n / DRIFT_PERIOD_DIVISOR).max(1)
}

/// Ranks the `drift+zipf` ranking moves per shift for `n` keys.
pub fn drift_step(n: u64) -> u64 {
    (n / DRIFT_STEP_DIVISOR).max(1)
}

/// First requests between a key's two requests in an `alternate` recency phase, for `n` keys.
pub fn reuse_gap(n: u64) -> u64 {
    (n / REUSE_GAP_DIVISOR).max(1)
}

/// A key distribution, as written for `--dist`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// `zipf:S`: independent Zipf draws with exponent `s`.
    Zipf {
        /// The Zipf exponent, finite and non-negative.
        s: f64,
    },
    /// `loop`: the keys `0..n` in order, repeated.
    Loop,
    /// `scan+zipf:S`: Zipf phases of `n` requests, each followed by a scan of fresh keys.
    ScanZipf {
        /// The Zipf exponent, finite and non-negative.
        s: f64,
    },
    /// `drift+zipf:S`: Zipf whose ranking shifts over time.
    DriftZipf {
        /// The Zipf exponent, finite and non-negative.
        s: f64,
    },
    /// `alternate:L`: phases of `phase` requests over fresh keys, a loop and then keys
    /// requested twice a short distance apart, in turn.
    Alternate {
        /// Requests per phase, at least 1.
        phase: u64,
    },
}

impl Dist {
    /// The Zipf exponent, if the distribution has one.
    pub fn exponent(self) -> Option<f64> {
        match self {
            Dist::Zipf { s } | Dist::ScanZipf { s } | Dist::DriftZipf { s } => Some(s),
            Dist::Loop | Dist::Alternate { .. } => None,
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Zipf { s } => write!(f, "zipf:{s}"),
            Dist::Loop => f.write_str("loop"),
            Dist::ScanZipf { s } => write!(f, "scan+zipf:{s}"),
            Dist::DriftZipf { s } => write!(f, "drift+zipf:{s}"),
            Dist::Alternate { phase } => write!(f, "alternate:{phase}"),
        }
    }
}

impl FromStr for Dist {
    type Err = GenError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| GenError::BadDist {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        if text == "loop" {
            return Ok(Dist::Loop);
        }
        const EXPECTED: &str = "expected zipf:S, loop, scan+zipf:S, drift+zipf:S or alternate:L";
        let (kind, exponent) = text.split_once(':').ok_or_else(|| bad(EXPECTED))?;
        if kind == "alternate" {
            return match exponent.parse::<u64>() {
                Ok(phase) if phase > 0 => Ok(Dist::Alternate { phase }),
                _ => Err(bad(
                    "the phase length L must be a whole number of requests, at least 1",
                )),
            };
        }
        let make: fn(f64) -> Dist = match kind {
            "zipf" => |s| Dist::Zipf { s },
            "scan+zipf" => |s| Dist::ScanZipf { s },
            "drift+zipf" => |s| Dist::DriftZipf { s },
            _ => return Err(bad(EXPECTED)),
        };
        let s: f64 = exponent
            .parse()
            .map_err(|_| bad("the exponent S is not a number"))?;
        check_exponent(s).map_err(|_| bad("the exponent S must be finite and >= 0"))?;
        Ok(make(s))
    }
}

/// Why a generator could not be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GenError {
    /// A `--dist` value that does not parse.
    BadDist {
        /// The text given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A Zipf exponent that is negative, infinite or NaN.
    BadExponent {
        /// The exponent given.
        s: f64,
    },
    /// A key space of zero keys.
    NoKeys,
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenError::BadDist { text, reason } => {
                write!(f, "invalid distribution `{text}`: {reason}")
            }
            GenError::BadExponent { s } => {
                write!(f, "invalid Zipf exponent {s}: it must be finite and >= 0")
            }
            GenError::NoKeys => f.write_str("the key space must hold at least one key"),
        }
    }
}

impl std::error::Error for GenError {}

fn check_exponent(s: f64) -> Result<(), GenError> {
    if s.is_finite() && s >= 0.0 {
        Ok(())
    } else {
        Err(GenError::BadExponent { s })
    }
}

/// SplitMix64's output function: a bijection of `u64` that scatters nearby inputs.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The SplitMix64 pseudo-random generator: 8 bytes of state, period 2^64.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// Golden-ratio increment (2^64 / phi, odd).
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// A generator seeded with `seed` (every seed is fine, including 0).
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix64(self.state)
    }

    /// A uniform `f64` in `[0, 1)`, from the top 53 bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A Zipf sampler over ranks `1..=n` by rejection-inversion; see the [module docs](self).
///
/// It integrates the hat function `h(x) = x^-s` over `[k - 1/2, k + 1/2]` for each rank `k`:
/// a uniform point in the total area is mapped back through the inverse integral, rounded to a
/// rank, and accepted if it falls under that rank's true mass (almost always).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    s: f64,
    /// `H(3/2) - 1`: the left end of the sampled area (rank 1's area is made exact by it).
    area_first: f64,
    /// `H(n + 1/2)`: the right end of the sampled area.
    area_last: f64,
    /// Ranks whose rounding distance is below this are accepted without the exact test.
    squeeze: f64,
}

impl Zipf {
    /// A sampler over `n` ranks with exponent `s`.
    pub fn new(n: u64, s: f64) -> Result<Zipf, GenError> {
        if n == 0 {
            return Err(GenError::NoKeys);
        }
        check_exponent(s)?;
        let mut zipf = Zipf {
            n,
            s,
            area_first: 0.0,
            area_last: 0.0,
            squeeze: 0.0,
        };
        zipf.area_first = zipf.integral(1.5) - 1.0;
        zipf.area_last = zipf.integral(n as f64 + 0.5);
        zipf.squeeze = 2.0 - zipf.integral_inverse(zipf.integral(2.5) - zipf.hat(2.0));
        Ok(zipf)
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent.
    pub fn exponent(&self) -> f64 {
        self.s
    }

    /// Draws a rank in `1..=n`; rank `k` has probability `k^-s / H(n, s)`.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        loop {
            let u = self.area_last + rng.next_f64() * (self.area_first - self.area_last);
            let x = self.integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n as f64);
            if k - x <= self.squeeze || u >= self.integral(k + 0.5) - self.hat(k) {
                return k as u64;
            }
        }
    }

    /// `h(x) = x^-s`.
    fn hat(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)`, an antiderivative of `h` (`ln x` when `s = 1`), written
    /// to stay accurate as `s` approaches 1.
    fn integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.s) * log_x) * log_x
    }

    /// The inverse of [`Self::integral`].
    fn integral_inverse(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * y).exp()
    }
}

/// `(e^x - 1) / x`, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + x * 0.25))
    }
}

/// `ln(1 + x) / x`, continuous at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - x * 0.25))
    }
}

/// A lazy, deterministic stream of synthetic keys; built by [`keys`].
#[derive(Clone, Debug)]
pub struct Keys {
    dist: Dist,
    n: u64,
    /// Requests still to produce.
    left: u64,
    /// Requests produced so far.
    position: u64,
    rng: SplitMix64,
    /// `None` for `loop`.
    zipf: Option<Zipf>,
    /// XORed into ids before mixing, so each seed has its own key set.
    salt: u64,
    /// `scan+zipf`: fresh keys scanned so far.
    scanned: u64,
}

/// A stream of `requests` keys drawn from `dist` over `keys` distinct keys, determined by `seed`.
///
/// Fails for an empty key space or an exponent that is negative or not finite.
pub fn keys(dist: Dist, keys: u64, requests: u64, seed: u64) -> Result<Keys, GenError> {
    if keys == 0 {
        return Err(GenError::NoKeys);
    }
    let zipf = match dist.exponent() {
        Some(s) => Some(Zipf::new(keys, s)?),
        None => None,
    };
    // Separate streams for the salt and the draws, so the salt is not the first draw.
    let salt = mix64(seed ^ 0x5ca1_ab1e_0ddb_a11c);
    Ok(Keys {
        dist,
        n: keys,
        left: requests,
        position: 0,
        rng: SplitMix64::new(seed),
        zipf,
        salt,
        scanned: 0,
    })
}

impl Keys {
    /// The key of internal id `id`.
    #[inline]
    fn key(&self, id: u64) -> u64 {
        mix64(id ^ self.salt)
    }

    /// A 0-based Zipf rank.
    #[inline]
    fn rank(&mut self) -> u64 {
        match &self.zipf {
            Some(zipf) => zipf.sample(&mut self.rng) - 1,
            None => 0,
        }
    }
}

impl Iterator for Keys {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let position = self.position;
        self.position += 1;
        let n = self.n;
        let key = match self.dist {
            Dist::Loop => position % n,
            Dist::Zipf { .. } => {
                let rank = self.rank();
                self.key(rank)
            }
            Dist::ScanZipf { .. } => {
                if position % n.saturating_add(scan_length(n)) < n {
                    let rank = self.rank();
                    self.key(rank)
                } else {
                    // Ids n, n + 1, ... are used by scans only.
                    let id = n + self.scanned;
                    self.scanned += 1;
                    self.key(id)
                }
            }
            Dist::DriftZipf { .. } => {
                // After e shifts, rank r is held by id r - e * step: each id's rank grows by
                // `step` per shift, and new ids (wrapping below 0) enter at the top.
                let shift = (position / drift_period(n)).wrapping_mul(drift_step(n));
                let rank = self.rank();
                self.key(rank.wrapping_sub(shift))
            }
            Dist::Alternate { phase } => {
                let (index, offset) = (position / phase, position % phase);
                // A phase uses at most max(n, phase) ids; each phase starts past the last.
                let first = index.wrapping_mul(n.max(phase));
                let local = if index % 2 == 0 {
                    offset % n
                } else {
                    // First requests 0, 1, ...; from the gap on, each first request of t is
                    // followed by the second request of t - gap.
                    let gap = reuse_gap(n);
                    match offset.checked_sub(gap) {
                        None => offset,
                        Some(after) if after % 2 == 0 => gap + after / 2,
                        Some(after) => after / 2,
                    }
                };
                self.key(first.wrapping_add(local))
            }
        };
        Some(key)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.left) {
            Ok(left) => (left, Some(left)),
            Err(_) => (usize::MAX, None),
        }
    }
}

impl std::iter::FusedIterator for Keys {}

/// Writes `keys` in the `keys` trace format (one unsigned decimal per line) and returns how
/// many were written. Buffers internally, so `out` may be an unbuffered `File`.
pub fn write_keys<W: Write>(out: W, keys: impl IntoIterator<Item = u64>) -> io::Result<u64> {
    /// Flush threshold of the output buffer.
    const FLUSH: usize = 64 * 1024;
    let mut out = out;
    let mut buf = Vec::with_capacity(FLUSH + 32);
    let mut count = 0;
    for key in keys {
        push_decimal(&mut buf, key);
        buf.push(b'\n');
        count += 1;
        if buf.len() >= FLUSH {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()?;
    Ok(count)
}

/// Appends `value` in decimal.
fn push_decimal(buf: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Format, Reader};
    use std::collections::{HashMap, HashSet};

    /// `H(n, s)` by direct summation: independent of the sampler's integrals.
    fn harmonic(n: u64, s: f64) -> f64 {
        (1..=n).map(|i| (i as f64).powf(-s)).sum()
    }

    fn counts(stream: impl Iterator<Item = u64>) -> HashMap<u64, u64> {
        let mut counts = HashMap::new();
        for key in stream {
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }

    #[test]
    fn dist_parse_valid_names_round_trip() {
        for (text, dist) in [
            ("zipf:0.99", Dist::Zipf { s: 0.99 }),
            ("zipf:0", Dist::Zipf { s: 0.0 }),
            ("loop", Dist::Loop),
            ("scan+zipf:1.2", Dist::ScanZipf { s: 1.2 }),
            ("drift+zipf:0.8", Dist::DriftZipf { s: 0.8 }),
            ("alternate:20000", Dist::Alternate { phase: 20_000 }),
        ] {
            assert_eq!(text.parse::<Dist>(), Ok(dist), "{text}");
            assert_eq!(dist.to_string().parse::<Dist>(), Ok(dist));
        }
    }

    #[test]
    fn dist_parse_invalid_text_errors() {
        for text in [
            "",
            "zipf",
            "zipf:",
            "zipf:abc",
            "zipf:-1",
            "zipf:inf",
            "zipf:NaN",
            "uniform",
            "loop:1",
            "scan+zipf",
            "Zipf:1",
            "drift:0.9",
            "alternate",
            "alternate:0",
            "alternate:-5",
            "alternate:1.5",
        ] {
            let err = text.parse::<Dist>().unwrap_err();
            assert!(matches!(err, GenError::BadDist { .. }), "{text}: {err}");
            assert!(err.to_string().contains(&format!("`{text}`")), "{err}");
        }
    }

    #[test]
    fn keys_zero_keys_or_bad_exponent_errors() {
        assert_eq!(keys(Dist::Loop, 0, 10, 1).unwrap_err(), GenError::NoKeys);
        let err = keys(Dist::Zipf { s: -0.5 }, 10, 10, 1).unwrap_err();
        assert!(matches!(err, GenError::BadExponent { .. }), "{err}");
        let err = keys(Dist::ScanZipf { s: f64::NAN }, 10, 10, 1).unwrap_err();
        assert!(matches!(err, GenError::BadExponent { .. }), "{err}");
    }

    #[test]
    fn loop_yields_keys_in_order_cyclically() {
        let stream: Vec<u64> = keys(Dist::Loop, 3, 8, 42).unwrap().collect();
        assert_eq!(stream, vec![0, 1, 2, 0, 1, 2, 0, 1]);
    }

    #[test]
    fn alternate_loop_phase_then_pairs_gap_apart_on_fresh_keys() {
        // n = 10 keys, gap 2, phases of 12 requests.
        let stream: Vec<u64> = keys(Dist::Alternate { phase: 12 }, 10, 36, 3)
            .unwrap()
            .collect();
        let (first, rest) = stream.split_at(12);
        let (second, third) = rest.split_at(12);
        // A loop over 10 keys: the 11th request repeats the 1st.
        assert_eq!(first[10..], first[..2]);
        assert_eq!(first[..10].iter().collect::<HashSet<_>>().len(), 10);
        // Ids 0 1 2 0 3 1 4 2 5 3 6 4: each key's second request comes two first requests on.
        let ids = [0, 1, 2, 0, 3, 1, 4, 2, 5, 3, 6, 4];
        for (i, &a) in ids.iter().enumerate() {
            for (j, &b) in ids.iter().enumerate() {
                assert_eq!(second[i] == second[j], a == b, "{i} {j}");
            }
        }
        // Every phase has keys of its own; the third is a loop again.
        let seen: HashSet<u64> = first.iter().chain(second).copied().collect();
        assert!(third.iter().all(|key| !seen.contains(key)));
        assert_eq!(third[10..], third[..2]);
    }

    #[test]
    fn keys_same_seed_same_stream_other_seed_differs() {
        for dist in ["zipf:0.9", "scan+zipf:0.9", "drift+zipf:0.9"] {
            let dist: Dist = dist.parse().unwrap();
            let a: Vec<u64> = keys(dist, 1000, 5000, 7).unwrap().collect();
            let b: Vec<u64> = keys(dist, 1000, 5000, 7).unwrap().collect();
            let c: Vec<u64> = keys(dist, 1000, 5000, 8).unwrap().collect();
            assert_eq!(a.len(), 5000);
            assert_eq!(a, b, "{dist}");
            assert_ne!(a, c, "{dist}");
        }
    }

    #[test]
    fn scan_zipf_largest_key_space_generates_without_overflow() {
        // A phase of n = u64::MAX Zipf requests is never followed by a scan in practice;
        // `n + n / 4` overflowed (a panic in debug builds) before the first key.
        let stream: Vec<u64> = keys(Dist::ScanZipf { s: 1.0 }, u64::MAX, 5, 1)
            .unwrap()
            .collect();
        let zipf: Vec<u64> = keys(Dist::Zipf { s: 1.0 }, u64::MAX, 5, 1)
            .unwrap()
            .collect();
        assert_eq!(stream, zipf);
    }

    #[test]
    fn keys_exact_request_count_and_size_hint() {
        let mut stream = keys(Dist::Zipf { s: 1.0 }, 10, 4, 0).unwrap();
        assert_eq!(stream.size_hint(), (4, Some(4)));
        assert_eq!(stream.by_ref().count(), 4);
        assert_eq!(stream.next(), None);
    }

    #[test]
    fn zipf_top_ranks_share_matches_harmonic_number() {
        let (n, s, draws) = (1000, 0.99, 200_000);
        let counts = counts(keys(Dist::Zipf { s }, n, draws, 3).unwrap());
        assert!(counts.len() as u64 <= n);
        let mut by_count: Vec<u64> = counts.values().copied().collect();
        by_count.sort_unstable_by(|a, b| b.cmp(a));
        let h = harmonic(n, s);
        // Ranks 1..=5: expected share k^-s / H; the standard error is below 0.001 here.
        for (k, &count) in by_count.iter().take(5).enumerate() {
            let want = ((k + 1) as f64).powf(-s) / h;
            let got = count as f64 / draws as f64;
            assert!(
                (got - want).abs() < 0.004,
                "rank {}: {got} vs {want}",
                k + 1
            );
        }
    }

    #[test]
    fn zipf_sampler_rank_frequencies_match_pmf() {
        // Per-rank check (ranks are known to the sampler) for several exponents, including
        // s = 1 where the integral switches to its logarithmic limit, and s = 0 (uniform).
        for s in [0.0, 0.5, 1.0, 1.5] {
            let n = 20;
            let zipf = Zipf::new(n, s).unwrap();
            let mut rng = SplitMix64::new(11);
            let draws = 100_000;
            let mut hist = vec![0u64; n as usize + 1];
            for _ in 0..draws {
                hist[zipf.sample(&mut rng) as usize] += 1;
            }
            assert_eq!(hist[0], 0);
            let h = harmonic(n, s);
            for k in 1..=n {
                let want = (k as f64).powf(-s) / h;
                let got = hist[k as usize] as f64 / draws as f64;
                assert!(
                    (got - want).abs() < 0.006,
                    "s {s} rank {k}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn zipf_single_key_always_rank_one() {
        let zipf = Zipf::new(1, 0.99).unwrap();
        let mut rng = SplitMix64::new(5);
        assert!((0..1000).all(|_| zipf.sample(&mut rng) == 1));
    }

    #[test]
    fn zipf_keys_scattered_not_ranks() {
        let stream: Vec<u64> = keys(Dist::Zipf { s: 1.0 }, 100, 1000, 1).unwrap().collect();
        assert!(stream.iter().filter(|&&k| k < 1000).count() < 5);
    }

    #[test]
    fn scan_keys_never_repeat_and_never_meet_zipf_keys() {
        let n = 400;
        let scan = scan_length(n);
        let cycles = 5;
        let stream: Vec<u64> = keys(Dist::ScanZipf { s: 0.9 }, n, cycles * (n + scan), 9)
            .unwrap()
            .collect();
        let (mut zipf_keys, mut scan_keys) = (HashSet::new(), Vec::new());
        for (i, &key) in stream.iter().enumerate() {
            if (i as u64) % (n + scan) < n {
                zipf_keys.insert(key);
            } else {
                scan_keys.push(key);
            }
        }
        assert_eq!(scan_keys.len() as u64, cycles * scan);
        let distinct: HashSet<u64> = scan_keys.iter().copied().collect();
        assert_eq!(distinct.len(), scan_keys.len(), "a scan key repeated");
        assert!(distinct.is_disjoint(&zipf_keys));
        assert!(zipf_keys.len() as u64 <= n);
    }

    #[test]
    fn drift_hot_keys_cool_down_and_new_keys_appear() {
        let n = 1000;
        // 25 n requests = 125 periods; the last period is 124 shifts of 10 ranks = 1240 ranks
        // after the first, so every key of the first period has left the key space by then.
        let requests = 25 * n;
        let stream: Vec<u64> = keys(Dist::DriftZipf { s: 1.0 }, n, requests, 4)
            .unwrap()
            .collect();
        let window = drift_period(n) as usize;
        let early = counts(stream[..window].iter().copied());
        let late = counts(stream[stream.len() - window..].iter().copied());
        let hottest = *early.iter().max_by_key(|(_, &c)| c).unwrap().0;
        assert!(early[&hottest] > 10, "{}", early[&hottest]);
        assert_eq!(late.get(&hottest), None);
        assert!(late.keys().all(|k| !early.contains_key(k)));
        let all: HashSet<u64> = stream.iter().copied().collect();
        assert!(all.len() as u64 > 3 * n / 2, "{} distinct", all.len());
    }

    #[test]
    fn drift_next_period_top_key_is_new_and_old_top_cools() {
        // After one shift, ranks 1..=step belong to keys never seen before, and the old rank 1
        // holds rank 1 + step.
        let (n, s) = (10_000, 1.2);
        let period = drift_period(n) as usize;
        let stream: Vec<u64> = keys(Dist::DriftZipf { s }, n, 2 * period as u64, 6)
            .unwrap()
            .collect();
        let first = counts(stream[..period].iter().copied());
        let second = counts(stream[period..].iter().copied());
        let hottest = |c: &HashMap<u64, u64>| *c.iter().max_by_key(|(_, &c)| c).unwrap().0;
        let (old_top, new_top) = (hottest(&first), hottest(&second));
        assert!(
            !first.contains_key(&new_top),
            "the new top key was already requested"
        );
        let h = harmonic(n, s);
        let share = |c: &HashMap<u64, u64>, key| *c.get(&key).unwrap_or(&0) as f64 / period as f64;
        assert!((share(&first, old_top) - 1.0 / h).abs() < 0.03);
        assert!((share(&second, new_top) - 1.0 / h).abs() < 0.03);
        let cooled = (1.0 + drift_step(n) as f64).powf(-s) / h;
        assert!((share(&second, old_top) - cooled).abs() < 0.005);
    }

    #[test]
    fn write_keys_round_trips_through_keys_reader() {
        let original: Vec<u64> = [0, 9, 10, 1234567890, u64::MAX]
            .into_iter()
            .chain(keys(Dist::Zipf { s: 0.7 }, 1 << 40, 100_000, 2).unwrap())
            .collect();
        let mut out = Vec::new();
        assert_eq!(
            write_keys(&mut out, original.iter().copied()).unwrap(),
            100_005
        );
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("0\n9\n10\n1234567890\n18446744073709551615\n"));
        let back: Result<Vec<u64>, _> =
            Reader::new(std::io::Cursor::new(out), Format::Keys, "generated")
                .unwrap()
                .collect();
        assert_eq!(back.unwrap(), original);
    }
}
