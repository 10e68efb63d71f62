//! TinyLFU admission: a newcomer replaces the eviction victim only if it has been seen more often.
//!
//! [`Admission::admit`] compares the sketch frequencies of a candidate and a victim; it answers
//! `true` when the candidate should stay and the victim go.
//!
//! # Design
//!
//! A candidate wins when its estimated frequency is strictly higher than the victim's: ties go to
//! the incumbent, which keeps one-hit wonders out. A pure comparison can be gamed, though: an
//! attacker who keeps one hot victim in place (or who floods the sketch so that every victim looks
//! hot) would lock newcomers out forever. So a *warm* candidate, one with frequency of at least
//! [`WARM_FREQUENCY`] (6), that loses is still admitted with probability 1/[`RANDOM_ADMIT_ODDS`]
//! (1/128); cold one-hit wonders are never let in by chance.
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. B. Manes: "Caffeine: HashDoS protection of the admission policy" (the warm-candidate rule).

use crate::random::{random_seed, SmallRng};
use crate::sketch::FrequencySketch;

/// Candidates at least this frequent may be admitted by chance after losing.
pub const WARM_FREQUENCY: u8 = 6;
/// A losing warm candidate is admitted once in this many comparisons (a power of two).
pub const RANDOM_ADMIT_ODDS: u64 = 128;

/// The frequency sketch plus the admission rule.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    pub(crate) sketch: FrequencySketch,
    rng: SmallRng,
    /// The sketch is sized lazily, when the cache first gets half full.
    sized: bool,
}

impl Admission {
    pub(crate) fn new(seed: Option<u64>) -> Self {
        let seed = seed.unwrap_or_else(random_seed);
        Self {
            sketch: FrequencySketch::with_seed(0, seed),
            rng: SmallRng::new(seed.rotate_left(17)),
            sized: false,
        }
    }

    /// Sizes the sketch for `entries` entries (grows only).
    pub(crate) fn ensure_capacity(&mut self, entries: usize) {
        self.sketch.ensure_capacity(entries);
        self.sized = true;
    }

    pub(crate) fn is_sized(&self) -> bool {
        self.sized
    }

    #[inline]
    pub(crate) fn record(&mut self, hash: u64) {
        self.sketch.increment(hash);
    }

    /// Whether the candidate should replace the victim.
    #[inline]
    pub(crate) fn admit(&mut self, candidate: u64, victim: u64) -> bool {
        let victim_freq = self.sketch.frequency(victim);
        let candidate_freq = self.sketch.frequency(candidate);
        if candidate_freq > victim_freq {
            true
        } else if candidate_freq >= WARM_FREQUENCY {
            self.rng.next_u64() & (RANDOM_ADMIT_ODDS - 1) == 0
        } else {
            false
        }
    }

    pub(crate) fn clear(&mut self) {
        self.sketch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission() -> Admission {
        let mut a = Admission::new(Some(1));
        a.ensure_capacity(1024);
        a
    }

    #[test]
    fn admit_more_frequent_candidate_wins() {
        let mut a = admission();
        a.record(1);
        a.record(1);
        a.record(2);
        assert!(a.admit(1, 2));
        assert!(!a.admit(2, 1));
    }

    #[test]
    fn admit_tie_keeps_victim() {
        let mut a = admission();
        a.record(1);
        a.record(2);
        assert!(!a.admit(1, 2));
    }

    #[test]
    fn admit_cold_loser_never_admitted() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        a.record(1);
        assert!((0..10_000).all(|_| !a.admit(1, 2)));
    }

    #[test]
    fn admit_warm_loser_admitted_about_one_in_128() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        for _ in 0..WARM_FREQUENCY {
            a.record(1);
        }
        let wins = (0..128_000).filter(|_| a.admit(1, 2)).count();
        assert!((700..1300).contains(&wins), "wins = {wins}");
    }
}
