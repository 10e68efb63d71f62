//! The hill climber that sizes W-TinyLFU's admission window from the observed hit rate.
//!
//! Every sample period it compares the hit rate with the previous period's and proposes a window
//! adjustment: keep going in the direction that helped, turn around when the hit rate fell.
//!
//! # Design
//!
//! Recency-skewed workloads want a large window (an LRU), frequency-skewed ones a tiny window and a
//! big frequency-filtered main space; the right split changes as the workload does. The climber is
//! Caffeine's simple hill climbing:
//!
//! - a sample lasts [`SAMPLE_FACTOR`] x capacity requests (hits + misses), long enough for the hit
//!   rate to be meaningful and the same period as the sketch's aging;
//! - the first step is [`STEP_PERCENT`] (6.25%) of the capacity, shrinking the window; each later
//!   step keeps the sign when the hit rate did not drop and flips it when it did, and its size
//!   decays by [`STEP_DECAY`] (0.98) per sample so the climber settles;
//! - a hit-rate change of at least [`RESTART_THRESHOLD`] (5 points) means the workload changed:
//!   the step is reset to its full size.
//!
//! # References
//!
//! 1. G. Einziger, O. Eytan, R. Friedman, B. Manes: "Adaptive Software Cache Management",
//!    Middleware 2018.
//! 2. B. Manes: Caffeine's `BoundedLocalCache.climb()`.

/// A sample lasts this many times the capacity, in requests.
pub const SAMPLE_FACTOR: u64 = 10;
/// Initial and restart step, as a fraction of capacity.
pub const STEP_PERCENT: f64 = 0.0625;
/// Each sample multiplies the step by this.
pub const STEP_DECAY: f64 = 0.98;
/// A hit-rate change this large restarts the step at full size.
pub const RESTART_THRESHOLD: f64 = 0.05;

/// Hit-rate sampling and the step state.
#[derive(Debug, Clone)]
pub(crate) struct HillClimber {
    hits: u64,
    misses: u64,
    sample_size: u64,
    previous_hit_rate: f64,
    step: f64,
    capacity: u64,
}

impl HillClimber {
    pub(crate) fn new(capacity: u64) -> Self {
        let mut climber = Self {
            hits: 0,
            misses: 0,
            sample_size: 0,
            previous_hit_rate: 0.0,
            step: 0.0,
            capacity: 0,
        };
        climber.set_capacity(capacity);
        climber
    }

    pub(crate) fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
        self.sample_size = capacity.saturating_mul(SAMPLE_FACTOR).max(SAMPLE_FACTOR);
        self.step = -STEP_PERCENT * capacity as f64;
    }

    #[inline]
    pub(crate) fn record_hit(&mut self) {
        self.hits += 1;
    }

    #[inline]
    pub(crate) fn record_miss(&mut self) {
        self.misses += 1;
    }

    /// Forgets the current sample (used until the sketch holds meaningful counts).
    pub(crate) fn reset_sample(&mut self) {
        self.hits = 0;
        self.misses = 0;
        self.previous_hit_rate = 0.0;
    }

    /// When a sample is complete, the window change it calls for (positive: grow the window);
    /// otherwise `None`.
    #[inline]
    pub(crate) fn adjustment(&mut self) -> Option<i64> {
        let requests = self.hits + self.misses;
        if requests < self.sample_size {
            return None;
        }
        let hit_rate = self.hits as f64 / requests as f64;
        let change = hit_rate - self.previous_hit_rate;
        let amount = if change >= 0.0 { self.step } else { -self.step };
        self.step = if change.abs() >= RESTART_THRESHOLD {
            STEP_PERCENT * self.capacity as f64 * amount.signum()
        } else {
            STEP_DECAY * amount
        };
        self.previous_hit_rate = hit_rate;
        self.hits = 0;
        self.misses = 0;
        Some(amount as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_sample(c: &mut HillClimber, hits: u64, misses: u64) -> Option<i64> {
        for _ in 0..hits {
            c.record_hit();
        }
        for _ in 0..misses {
            c.record_miss();
        }
        c.adjustment()
    }

    #[test]
    fn adjustment_before_sample_complete_is_none() {
        let mut c = HillClimber::new(100);
        assert_eq!(run_sample(&mut c, 10, 10), None);
    }

    #[test]
    fn adjustment_first_sample_shrinks_window() {
        let mut c = HillClimber::new(1000);
        assert_eq!(run_sample(&mut c, 5_000, 5_000), Some(-62));
    }

    #[test]
    fn adjustment_hit_rate_drop_reverses_direction() {
        let mut c = HillClimber::new(1000);
        run_sample(&mut c, 5_000, 5_000); // 50%: restart-sized step, shrinking
        let next = run_sample(&mut c, 4_900, 5_100).unwrap(); // 49%: worse, turn around
        assert!(next > 0, "next = {next}");
        assert_eq!(next, 62);
        // A small change decays the following step by 0.98.
        let decayed = run_sample(&mut c, 4_950, 5_050).unwrap();
        assert_eq!(decayed, (0.98 * 62.5) as i64);
    }

    #[test]
    fn adjustment_large_change_restarts_full_step() {
        let mut c = HillClimber::new(1000);
        for _ in 0..20 {
            run_sample(&mut c, 5_000, 5_000);
        }
        // After many quiet samples the step has decayed; a jump restores it.
        let jump = run_sample(&mut c, 9_000, 1_000).unwrap();
        let after = run_sample(&mut c, 9_000, 1_000).unwrap();
        assert!(jump.abs() < 62);
        assert_eq!(after.abs(), 62);
    }
}
