//! TinyLFU admission: a newcomer replaces the eviction victim only if it has been seen more often.
//!
//! [`Admission::admit`] compares the sketch frequencies of a candidate and a victim; it answers
//! `true` when the candidate should stay and the victim go.
//!
//! # Design
//!
//! A candidate wins when its estimated frequency is strictly higher than the victim's: ties go to
//! the incumbent, which keeps one-hit wonders out. Two rules come before the duel:
//!
//! - A *returning* candidate, one turned away recently (it is in the [`Ghost`](super::ghost)),
//!   is admitted outright: it has just shown a short reuse distance.
//! - In a *lenient* mode (chosen by the adaptive policy for recency-heavy workloads), a candidate
//!   seen at least `lenient` times in the sketch's period is admitted outright, the way S3-FIFO
//!   promotes any object used twice.
//!
//! With a *margin* of 1 (the adaptive policy chooses it, see
//! [`Experts`](super::wtinylfu::experts)), a candidate must have been seen at least two more
//! times than a victim that was seen at all. On a loop or a scan every key is seen as often as
//! every other, but the victim, the least recently used, has not yet had this round's request
//! while the candidate just had it: it wins by exactly one, and the cache swaps a key it will
//! reuse soon for one it will reuse last, round after round. A victim never seen stays exempt:
//! there one count is the whole difference between a newcomer seen twice and a one-hit wonder
//! (see `docs/decisions/0117-admission-margin.md`).
//!
//! A pure comparison can be gamed: an attacker who keeps one hot victim in place (or who floods
//! the sketch so that every victim looks hot) would lock newcomers out forever. So a *warm*
//! candidate, one with frequency of at least [`WARM_FREQUENCY`] (6), that loses is still admitted
//! with probability 1/[`RANDOM_ADMIT_ODDS`] (1/128); cold one-hit wonders are never let in by
//! chance. A tie is a loss of that kind only at the counters' ceiling (15), where a flooded
//! victim and a truly hot candidate meet. Below it, a tie is what a loop looks like (every key
//! seen as often as every other), and admitting by chance there only swaps a key the cache
//! will reuse for one it has just used. Caffeine's rule lets ties in too; this one did better
//! on loops, and dropping the chance altogether cost a stale main space its refresh (see
//! `docs/decisions/0120-random-admission.md`).
//!
//! The sketch covers at least [`MIN_SKETCH_ENTRIES`] (4,096) entries and ages at most once per
//! 10 x [`MIN_SAMPLE_ENTRIES`] (10,000) increments. A small cache still sees many distinct keys
//! between two agings; a table sized to the cache alone made their counters collide, and a period
//! of 10 x capacity was shorter than the loops such caches are asked to hold. They cost 32 KiB per
//! small cache (see `docs/decisions/0121-sketch-minimums.md`).
//! Caches that split one keyspace and count their memory together (a server's shards) may split
//! both minimums among them (`split_minimums` on the unsync builder), so that together they
//! cost and age as one cache.
//! The period's floor is a default, not a rule: for a cache of under 1,000 entries the adaptive
//! policy may switch to Caffeine's 10 x capacity ([`Admission::set_fast_aging`]) when a
//! miniature shows that newly hot keys are being kept out (see
//! [`Experts`](super::wtinylfu::experts)).
//!
//! No doorkeeper. The TinyLFU paper puts a Bloom filter in front of the sketch, so that a key's
//! first occurrence only sets bits and one-hit wonders never reach the counters; the filter is
//! cleared at each aging. A key seen twice before an aging keeps one count through it without a
//! doorkeeper and none with it, and with 16 counters per entry the table has few collisions for
//! the filter to save (see `docs/decisions/0122-no-doorkeeper.md`).
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. B. Manes: "Caffeine: HashDoS protection of the admission policy" (the warm-candidate rule).
//! 3. J. Yang et al.: "FIFO queues are all you need for cache eviction", SOSP 2023 (ghost
//!    admission and promotion after two uses).

use crate::random::{random_seed, SmallRng};
use crate::sketch::{FrequencySketch, SAMPLE_FACTOR};

/// Candidates at least this frequent may be admitted by chance after losing: cold one-hit
/// wonders never are.
pub const WARM_FREQUENCY: u8 = 6;
/// The counters' ceiling: a tie here may be a flooded victim, so it counts as a loss.
const MAX_FREQUENCY: u8 = 15;
/// A losing warm candidate is admitted once in this many comparisons (a power of two).
pub const RANDOM_ADMIT_ODDS: u64 = 128;
/// The sketch's table covers at least this many entries, so that the many distinct keys a small
/// cache sees between two agings do not share counters.
pub const MIN_SKETCH_ENTRIES: usize = 4_096;
/// The sketch ages at most every `SAMPLE_FACTOR` x this many increments, so that loops longer
/// than a small cache keep their counts.
pub const MIN_SAMPLE_ENTRIES: usize = 1_000;

/// The frequency sketch plus the admission rules.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    pub(crate) sketch: FrequencySketch,
    rng: SmallRng,
    /// The sketch is sized lazily, when the cache first gets half full.
    sized: bool,
    /// The sketch's aging period in increments, slow and fast (see [`Self::set_fast_aging`]).
    periods: [usize; 2],
    fast_aging: bool,
    /// [`MIN_SKETCH_ENTRIES`] and [`MIN_SAMPLE_ENTRIES`] over the number of caches that split
    /// them (see [`Self::new`]).
    min_sketch_entries: usize,
    min_sample_entries: usize,
    /// The entries the sketch was last sized for (0: not yet).
    sized_entries: usize,
    /// The sketch (and the policy's ghost) sized to the entries, not to a power of two.
    exact: bool,
}

impl Admission {
    /// Admission for one of `minimums_divisor` caches that split one keyspace (1: a cache of
    /// its own), whose minimums are that share of the whole cache's: together they cost and
    /// age as one cache's would. Such caches count their memory together, against their
    /// entries, so their sketch is [exact](FrequencySketch::with_seed_exact).
    pub(crate) fn new(seed: Option<u64>, minimums_divisor: u32) -> Self {
        let seed = seed.unwrap_or_else(random_seed);
        let divisor = minimums_divisor.max(1) as usize;
        let min_sketch_entries = (MIN_SKETCH_ENTRIES / divisor).max(1);
        let min_sample_entries = (MIN_SAMPLE_ENTRIES / divisor).max(1);
        // The minimum table from the start: counts gathered while the cache fills are kept
        // when it is sized (see `FrequencySketch::resize`).
        let exact = divisor > 1;
        let mut sketch = if exact {
            FrequencySketch::with_seed_exact(min_sketch_entries, seed)
        } else {
            FrequencySketch::with_seed(min_sketch_entries, seed)
        };
        sketch.set_sample_size(min_sample_entries * SAMPLE_FACTOR);
        Self {
            sketch,
            rng: SmallRng::new(seed.rotate_left(17)),
            sized: false,
            periods: [min_sample_entries * SAMPLE_FACTOR; 2],
            fast_aging: false,
            min_sketch_entries,
            min_sample_entries,
            sized_entries: 0,
            exact,
        }
    }

    /// Sizes the sketch for a cache of `entries` entries, larger or smaller, keeping the counts,
    /// except when the first sizing grows the minimum table: the counts of a fill, crowded into
    /// it, would make every key of the larger table look seen.
    pub(crate) fn ensure_capacity(&mut self, entries: usize) {
        let first = self.sized_entries == 0;
        let before = self.sketch.memory_bytes();
        self.sized_entries = entries;
        self.sketch.resize(entries.max(self.min_sketch_entries));
        if first && self.sketch.memory_bytes() > before {
            self.sketch.clear();
        }
        self.periods = [
            entries
                .max(self.min_sample_entries)
                .saturating_mul(SAMPLE_FACTOR),
            entries.max(1).saturating_mul(SAMPLE_FACTOR),
        ];
        self.sketch
            .set_sample_size(self.periods[usize::from(self.fast_aging)]);
        self.sized = true;
    }

    /// Whether the sketch ages after [`SAMPLE_FACTOR`] x the capacity's increments instead of
    /// after as many times the larger of the capacity and [`MIN_SAMPLE_ENTRIES`] (or its
    /// share).
    pub(crate) fn fast_aging(&self) -> bool {
        self.fast_aging
    }

    /// Whether the two aging periods differ (the capacity is below [`MIN_SAMPLE_ENTRIES`], or
    /// its share).
    pub(crate) fn has_aging_choice(&self) -> bool {
        self.sized && self.periods[0] != self.periods[1]
    }

    /// Chooses the aging period; the counts stay.
    pub(crate) fn set_fast_aging(&mut self, fast: bool) {
        self.fast_aging = fast;
        if self.sized {
            self.sketch.set_sample_size(self.periods[usize::from(fast)]);
        }
    }

    /// Whether the sketch, and the policy's ghost, are sized to the entries rather than to a
    /// power of two (caches that split their minimums: see [`Self::new`]).
    pub(crate) fn exact(&self) -> bool {
        self.exact
    }

    /// The entries the sketch was last sized for (0 before it was).
    pub(crate) fn sized_entries(&self) -> usize {
        self.sized_entries
    }

    pub(crate) fn is_sized(&self) -> bool {
        self.sized
    }

    /// Leaves the sketch as it is (counts included) until the next
    /// [`ensure_capacity`](Self::ensure_capacity), for a cache whose new capacity it is not yet
    /// half full of.
    pub(crate) fn defer_sizing(&mut self) {
        self.sized = false;
    }

    #[inline]
    pub(crate) fn record(&mut self, hash: u64) {
        self.sketch.increment(hash);
    }

    /// [`record`](Self::record)s `count` times at once.
    #[inline]
    pub(crate) fn record_many(&mut self, hash: u64, count: u8) {
        self.sketch.increment_by(hash, count);
    }

    /// Whether the candidate should replace the victim. `returning`: the candidate was turned
    /// away recently; `lenient`: candidates at least this frequent are admitted (0: never);
    /// `margin`: how many counts more than a victim seen at all the candidate needs beyond one.
    /// Always inlined: out of line, every duel saved and restored registers around it (see
    /// `docs/decisions/0105-hot-path-inlining.md`).
    #[inline(always)]
    pub(crate) fn admit(
        &mut self,
        candidate: u64,
        victim: u64,
        returning: bool,
        lenient: u8,
        margin: u8,
    ) -> bool {
        if returning {
            return true;
        }
        let candidate_freq = self.sketch.frequency(candidate);
        if lenient > 0 && candidate_freq >= lenient {
            return true;
        }
        let victim_freq = self.sketch.frequency(victim);
        let margin = if victim_freq == 0 { 0 } else { margin };
        if candidate_freq > victim_freq + margin {
            true
        } else if candidate_freq >= WARM_FREQUENCY
            && (candidate_freq < victim_freq || candidate_freq >= MAX_FREQUENCY)
        {
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

    /// Draws behind a "never admitted": fewer under Miri, where each is slow.
    const TRIALS: u32 = if cfg!(miri) { 1_000 } else { 10_000 };

    fn admission() -> Admission {
        let mut a = Admission::new(Some(1), 1);
        a.ensure_capacity(1024);
        a
    }

    #[test]
    fn admit_more_frequent_candidate_wins() {
        let mut a = admission();
        a.record(1);
        a.record(1);
        a.record(2);
        assert!(a.admit(1, 2, false, 0, 0));
        assert!(!a.admit(2, 1, false, 0, 0));
    }

    #[test]
    fn admit_tie_keeps_victim() {
        let mut a = admission();
        a.record(1);
        a.record(2);
        assert!(!a.admit(1, 2, false, 0, 0));
    }

    #[test]
    fn admit_cold_loser_never_admitted() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        a.record(1);
        assert!((0..TRIALS).all(|_| !a.admit(1, 2, false, 0, 0)));
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 100,000 draws")]
    fn admit_warm_loser_admitted_about_one_in_128() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        for _ in 0..WARM_FREQUENCY {
            a.record(1);
        }
        let wins = (0..128_000).filter(|_| a.admit(1, 2, false, 0, 0)).count();
        assert!((700..1300).contains(&wins), "wins = {wins}");
    }

    #[test]
    fn admit_warm_tie_below_ceiling_never_admitted() {
        let mut a = admission();
        for _ in 0..10 {
            a.record(1);
            a.record(2);
        }
        assert!((0..TRIALS).all(|_| !a.admit(1, 2, false, 0, 0)));
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistical: 100,000 draws")]
    fn admit_saturated_tie_admitted_about_one_in_128() {
        let mut a = admission();
        for _ in 0..20 {
            a.record(1);
            a.record(2);
        }
        let wins = (0..128_000).filter(|_| a.admit(1, 2, false, 0, 0)).count();
        assert!((700..1300).contains(&wins), "wins = {wins}");
    }

    #[test]
    fn admit_margin_one_candidate_needs_two_more() {
        let mut a = admission();
        a.record(2);
        a.record(1);
        a.record(1);
        assert!(a.admit(1, 2, false, 0, 0));
        assert!(!a.admit(1, 2, false, 0, 1));
        a.record(1);
        assert!(a.admit(1, 2, false, 0, 1));
    }

    #[test]
    fn admit_margin_unseen_victim_one_more_suffices() {
        let mut a = admission();
        a.record(1);
        assert!(a.admit(1, 2, false, 0, 1));
    }

    #[test]
    fn admit_returning_candidate_beats_hot_victim() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        assert!(a.admit(1, 2, true, 0, 0));
    }

    #[test]
    fn admit_lenient_threshold_admits_twice_seen_candidate() {
        let mut a = admission();
        for _ in 0..15 {
            a.record(2);
        }
        a.record(1);
        assert!(!a.admit(1, 2, false, 2, 0));
        a.record(1);
        assert!(a.admit(1, 2, false, 2, 0));
    }

    #[test]
    fn ensure_capacity_small_cache_gets_minimum_table_and_period() {
        let mut a = Admission::new(Some(1), 1);
        a.ensure_capacity(10);
        assert_eq!(a.sketch.memory_bytes(), MIN_SKETCH_ENTRIES * 8);
        assert_eq!(a.sketch.sample_size(), MIN_SAMPLE_ENTRIES * SAMPLE_FACTOR);
    }

    #[test]
    fn set_fast_aging_small_cache_ages_after_ten_times_capacity() {
        let mut a = Admission::new(Some(1), 1);
        a.ensure_capacity(50);
        assert!(a.has_aging_choice());
        assert_eq!(a.sketch.sample_size(), MIN_SAMPLE_ENTRIES * SAMPLE_FACTOR);
        a.set_fast_aging(true);
        assert_eq!(a.sketch.sample_size(), 50 * SAMPLE_FACTOR);
        a.set_fast_aging(false);
        assert_eq!(a.sketch.sample_size(), MIN_SAMPLE_ENTRIES * SAMPLE_FACTOR);
    }

    #[test]
    fn set_fast_aging_past_fast_period_halves_counts_once() {
        let mut a = Admission::new(Some(1), 1);
        a.ensure_capacity(50);
        for _ in 0..15 {
            a.record(1);
        }
        // 4,000 increments into the slow period of 10,000 (eight fast periods' worth), of keys
        // seen twice each.
        for k in 0..4_000u64 {
            a.record(crate::random::mix64(k / 2 + 2));
        }
        assert_eq!(a.sketch.frequency(1), 15);
        a.set_fast_aging(true);
        // The fast period is over: the next increments age the sketch, once.
        for k in 0..5u64 {
            a.record(crate::random::mix64(k + 10_000));
        }
        assert_eq!(a.sketch.frequency(1), 7);
    }

    #[test]
    fn set_fast_aging_before_sizing_applies_once_sized() {
        let mut a = Admission::new(Some(1), 1);
        a.set_fast_aging(true);
        assert!(!a.has_aging_choice());
        a.ensure_capacity(50);
        assert_eq!(a.sketch.sample_size(), 50 * SAMPLE_FACTOR);
    }

    #[test]
    fn ensure_capacity_first_growth_forgets_fill_later_resizes_keep_counts() {
        // One of two caches that split their minimums: an exact sketch.
        let mut a = Admission::new(Some(1), 2);
        assert!(a.exact());
        for _ in 0..5 {
            a.record(1);
        }
        // The fill's counts, crowded into the minimum table, are not carried into a larger one.
        a.ensure_capacity(2 * MIN_SKETCH_ENTRIES);
        assert_eq!(a.sketch.frequency(1), 0);
        assert_eq!(a.sized_entries(), 2 * MIN_SKETCH_ENTRIES);
        for _ in 0..5 {
            a.record(1);
        }
        // Once sized, a resize either way keeps them.
        a.ensure_capacity(MIN_SKETCH_ENTRIES + 100);
        assert_eq!(
            a.sketch.memory_bytes(),
            (MIN_SKETCH_ENTRIES + 100).div_ceil(8) * 64
        );
        assert!(a.sketch.frequency(1) >= 5);
        a.ensure_capacity(3 * MIN_SKETCH_ENTRIES);
        assert!(a.sketch.frequency(1) >= 5);
    }

    #[test]
    fn ensure_capacity_min_sample_entries_or_more_has_no_aging_choice() {
        let mut a = Admission::new(Some(1), 1);
        a.ensure_capacity(MIN_SAMPLE_ENTRIES);
        assert!(!a.has_aging_choice());
        a.set_fast_aging(true);
        assert_eq!(a.sketch.sample_size(), MIN_SAMPLE_ENTRIES * SAMPLE_FACTOR);
    }
}
