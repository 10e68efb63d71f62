//! Per-command latency histograms, for `INFO latencystats` (Redis 7.0's `latency-tracking`,
//! on by default): each command's calls counted by how long they ran, and read back as the
//! percentiles `latency-tracking-info-percentiles` names.
//!
//! # Design
//!
//! - **Buckets.** Log-linear over nanoseconds: below 16 ns one bucket per value, then 8 per
//!   power of two, so a bucket spans at most an eighth of its values (12.5%; Redis's
//!   HdrHistogram keeps two significant digits), up to 2^40 ns (18 minutes), beyond which
//!   every call goes in the last. 312 buckets.
//! - **Counting.** A command's buckets are [`Striped`] counters, as the other statistics are
//!   (one cache line per thread's stripe, so the cores do not trade the line of a hot
//!   command's busiest bucket), made at the command's first call: a histogram for every
//!   entry of the table would be megabytes for commands never called.
//! - **Reading.** A percentile is the upper bound of the bucket where the running count
//!   reaches it, as HdrHistogram reports the highest value equivalent to it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::stats::Striped;

/// Values below this many nanoseconds have a bucket each.
const EXACT: u64 = 16;
/// Buckets per power of two above [`EXACT`] (a power of two).
const PER_OCTAVE: usize = 8;
/// The largest power of two with buckets of its own; longer calls share the last.
const TOP_OCTAVE: u32 = 40;
/// Every bucket: the exact ones, then `PER_OCTAVE` for each power of two from 2^4 to 2^40.
pub const BUCKETS: usize = EXACT as usize + (TOP_OCTAVE as usize - 3) * PER_OCTAVE;

/// The bucket of a call of `nanos` nanoseconds.
#[inline]
pub fn bucket(nanos: u64) -> usize {
    if nanos < EXACT {
        return nanos as usize;
    }
    let octave = 63 - nanos.leading_zeros();
    if octave > TOP_OCTAVE {
        return BUCKETS - 1;
    }
    let step = (nanos >> (octave - 3)) as usize & (PER_OCTAVE - 1);
    EXACT as usize + (octave as usize - 4) * PER_OCTAVE + step
}

/// The largest value in bucket `b`, in nanoseconds.
pub fn upper_bound(b: usize) -> u64 {
    if b < EXACT as usize {
        return b as u64;
    }
    let octave = ((b - EXACT as usize) / PER_OCTAVE + 4) as u32;
    let step = ((b - EXACT as usize) % PER_OCTAVE) as u64;
    ((PER_OCTAVE as u64 + step + 1) << (octave - 3)) - 1
}

/// Every command's histogram. See the [module docs](self).
pub struct Latencies {
    per_command: Box<[OnceLock<Striped>]>,
    enabled: AtomicBool,
}

impl Latencies {
    /// Histograms for a command table of `commands` entries, tracking on.
    pub fn new(commands: usize) -> Self {
        Self {
            per_command: (0..commands).map(|_| OnceLock::new()).collect(),
            enabled: AtomicBool::new(true),
        }
    }

    /// `latency-tracking`: whether calls are counted from now on.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Counts a call of command `id` that ran for `nanos` nanoseconds, in the caller's
    /// [`stripe`](Striped::stripe).
    #[inline]
    pub fn record(&self, stripe: usize, id: usize, nanos: u64) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        if let Some(histogram) = self.per_command.get(id) {
            histogram
                .get_or_init(|| Striped::new(BUCKETS))
                .add_at(stripe, bucket(nanos), 1);
        }
    }

    /// Command `id`'s latency at each of `percentiles` (0 to 100), in nanoseconds; `None` if
    /// it has no call counted since the last reset.
    pub fn percentiles(&self, id: usize, percentiles: &[f64]) -> Option<Vec<u64>> {
        let histogram = self.per_command.get(id)?.get()?;
        let counts: Vec<u64> = (0..BUCKETS).map(|b| histogram.get(b)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        Some(
            percentiles
                .iter()
                .map(|p| {
                    // The count that reaches the percentile: at least the first call.
                    let rank = ((p / 100.0 * total as f64).ceil() as u64).clamp(1, total);
                    let mut seen = 0;
                    let at = counts
                        .iter()
                        .position(|&n| {
                            seen += n;
                            seen >= rank
                        })
                        .unwrap_or(BUCKETS - 1);
                    upper_bound(at)
                })
                .collect(),
        )
    }

    /// `CONFIG RESETSTAT`: every histogram starts again from zero.
    pub fn reset(&self) {
        for histogram in self.per_command.iter().filter_map(OnceLock::get) {
            histogram.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_holds_its_values_within_an_eighth() {
        let mut last = 0;
        for nanos in (0..1u64 << 20).chain([1 << 39, (1 << 40) - 1, 1 << 40, u64::MAX]) {
            let b = bucket(nanos);
            assert!(b < BUCKETS, "{nanos}");
            assert!(b >= last || nanos > 1 << 20, "buckets ascend with values");
            last = b;
            if b < BUCKETS - 1 {
                let upper = upper_bound(b);
                assert!(upper >= nanos, "{nanos} above its bucket's bound {upper}");
                assert!(
                    upper - nanos <= nanos / 8,
                    "{nanos} in a bucket up to {upper}"
                );
            }
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_report_the_bucket_reaching_the_rank() {
        let latencies = Latencies::new(2);
        assert_eq!(latencies.percentiles(0, &[50.0]), None);
        for nanos in 1..=100u64 {
            latencies.record(0, 0, nanos * 1_000);
        }
        let [p50, p99, p100] = latencies.percentiles(0, &[50.0, 99.0, 100.0]).unwrap()[..] else {
            panic!("three percentiles")
        };
        assert!((50_000..=50_000 + 50_000 / 8).contains(&p50), "{p50}");
        assert!((99_000..=99_000 + 99_000 / 8).contains(&p99), "{p99}");
        assert!((100_000..=100_000 + 100_000 / 8).contains(&p100), "{p100}");
        assert_eq!(latencies.percentiles(1, &[50.0]), None);
        latencies.reset();
        assert_eq!(latencies.percentiles(0, &[50.0]), None);
        latencies.set_enabled(false);
        latencies.record(0, 0, 5);
        assert_eq!(latencies.percentiles(0, &[50.0]), None);
    }
}
