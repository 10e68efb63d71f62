//! Picks W-TinyLFU's mode by replaying a sample of the requests through miniature copies of the
//! cache, one per candidate mode, and following the copy that hits most.
//!
//! [`Experts::record`] is told of every request; now and then it returns the mode the real
//! cache should switch to.
//!
//! # Design
//!
//! No single window size suits every workload: loops and scans want a tiny window behind strict
//! frequency admission, bursty recency-heavy traffic wants a large window and lenient admission,
//! and a workload's needs change over time. Caffeine's hill climber nudges the window by the
//! change in hit rate between long sample periods; on the simulator's reference traces it moved
//! slowly and often the wrong way (mean 40.90% against 41.38% for the best fixed window on the
//! same base policy). Measuring beats guessing: each candidate [`MODES`] entry runs a miniature
//! W-TinyLFU ([`Segments`], the very code of the real cache) over the same requests, so their hit
//! counts compare the modes on identical traffic.
//!
//! - **Sampling.** A miniature holds at most [`MINI_ENTRIES`] (2,048) entries. For a larger cache
//!   it replays only the keys whose hash falls in a 1/R slice, with R the power of two that
//!   brings the capacity down to that size: spatial sampling (SHARDS) keeps every request of a
//!   sampled key, so reuse distances and frequencies scale down faithfully. The miniatures read
//!   the real cache's frequency sketch (a sampled key's count is its true count) and keep only
//!   their queues, an index by hash and a ghost: about 40 bytes per miniature entry, so at most
//!   about 500 KiB per cache, and a small fraction of a large cache's memory. A cache of up to
//!   2,048 entries pays for six full copies; choose the static policy where that matters.
//! - **Modes** ([`MODES`]), ordered from frequency-biased to recency-biased: a 1% window with
//!   strict admission and no ghost, windows of 3% and 10% with ghost admission, 20% and 35%
//!   windows with lenient admission (thresholds 3 and 2), and a 100% window (plain LRU). The set
//!   was chosen greedily on the reference traces: each member added the most to the per-cell best.
//! - **Decisions.** Every [`PERIOD_FACTOR`] (4) x the miniature capacity sampled requests, each
//!   copy's score decays by [`SCORE_DECAY`] (0.9) and adds its hits of the period. When another
//!   copy leads, strictly, the real cache moves one mode towards it. Moving a step at a time
//!   keeps a brief lead (a phase of a cyclic workload) from flushing the main space, which a
//!   jump to the LRU end does. The cache starts in the 3% mode ([`START_MODE`]).
//! - **Warm-up.** The miniatures start when the cache is half full, so their first period
//!   ([`WARM_UP_PERIODS`]) mostly measures how fast each mode fills up, where the lenient modes
//!   lead, not how it evicts; its hits are discarded. On a short trace (ps, 10,448 requests at 308
//!   entries) that early lead used to walk the cache to the 35% window and back. Measured on the 84
//!   reference cells (`cortado-sim --trace <the 21 traces> --sizes 1%,5%,10%,25% --policies
//!   wtinylfu --seed N`, seeds 1 to 3): discarding the first period raised the mean by 0.06-0.08
//!   points and the cells within a point of the best reference by 2; decay 0.9 instead of 0.8
//!   added 0.01-0.02 points and 0-2 cells; requiring a strict lead over the current mode (ties
//!   used to move towards the lower mode) changed the mean by -0.01 and took a drifting-Zipf
//!   stream (`cortado-sim gen --dist drift+zipf:0.99 --keys 100000 --requests 1000000`) at
//!   capacity 50,000 from 82.9% to 84.8%.
//!
//! # References
//!
//! 1. C. Waldspurger, T. Saemundsson, I. Ahmad, N. Park: "Cache Modeling and Optimization using
//!    Miniature Simulations", USENIX ATC 2017.
//! 2. C. Waldspurger, N. Park, A. Garthwaite, I. Ahmad: "Efficient MRC Construction with SHARDS",
//!    USENIX FAST 2015.
//! 3. G. Einziger, O. Eytan, R. Friedman, B. Manes: "Adaptive Software Cache Management",
//!    Middleware 2018 (hill climbing and miniature simulation for W-TinyLFU).

use hashbrown::HashTable;

use super::admission::Admission;
use super::wtinylfu::{Mode, Segments};
use crate::random::mix64;

/// The modes the experts choose from, from frequency-biased to recency-biased.
pub(crate) const MODES: [Mode; 6] = [
    Mode {
        window: 0.01,
        lenient: 0,
        ghost: false,
    },
    Mode {
        window: 0.03,
        lenient: 0,
        ghost: true,
    },
    Mode {
        window: 0.10,
        lenient: 0,
        ghost: true,
    },
    Mode {
        window: 0.20,
        lenient: 3,
        ghost: true,
    },
    Mode {
        window: 0.35,
        lenient: 2,
        ghost: true,
    },
    Mode {
        window: 1.00,
        lenient: 0,
        ghost: true,
    },
];
/// The mode a cache starts in (a 3% window).
pub const START_MODE: usize = 1;
/// The most entries a miniature holds.
pub const MINI_ENTRIES: u64 = 2_048;
/// A decision every this many times the miniature capacity, in sampled requests.
pub const PERIOD_FACTOR: u64 = 4;
/// Each period's scores keep this share of the previous ones.
pub const SCORE_DECAY: f64 = 0.9;
/// Periods whose hits are discarded before the first decision.
pub const WARM_UP_PERIODS: u64 = 1;
/// Separates the sampling hash from the sketch's, the table's and the shards'.
const SAMPLE_SALT: u64 = 0xbb67_ae85_84ca_a73b;

/// One miniature cache: its queues and an index from key hash to node.
#[derive(Debug, Clone)]
struct Mini {
    segments: Segments,
    index: HashTable<u32>,
    free: Vec<u32>,
    next: u32,
    hits: u64,
    score: f64,
}

impl Mini {
    fn new(maximum: u64, entries: usize, weighted: bool, mode: Mode) -> Self {
        let mut segments = Segments::new(maximum, mode, weighted);
        segments.size_ghost(entries);
        Self {
            segments,
            index: HashTable::new(),
            free: Vec::new(),
            next: 0,
            hits: 0,
            score: 0.0,
        }
    }

    fn record(
        &mut self,
        hash: u32,
        weight: u32,
        admission: &mut Admission,
        evicted: &mut Vec<u32>,
    ) {
        let Self {
            segments, index, ..
        } = self;
        let found = index
            .find(mix64(u64::from(hash)), |&i| segments.hash_of(i) == hash)
            .copied();
        if let Some(i) = found {
            self.hits += 1;
            self.segments.access(i);
            return;
        }
        let i = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        self.segments.insert(i, hash, weight);
        let Self {
            segments, index, ..
        } = self;
        index.insert_unique(mix64(u64::from(hash)), i, |&j| {
            mix64(u64::from(segments.hash_of(j)))
        });
        segments.evict(admission, evicted);
        for j in evicted.drain(..) {
            // A removed node keeps its hash until reused, so the index entry can be found.
            let hash = mix64(u64::from(segments.hash_of(j)));
            if let Ok(entry) = index.find_entry(hash, |&k| k == j) {
                entry.remove();
            }
            self.free.push(j);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.segments.memory_bytes() + self.index.capacity() * 5 + self.free.capacity() * 4
    }
}

/// Whether the miniatures replay requests for the key with this (folded) hash, under a sample
/// mask of `rate - 1` (`0`: every key).
#[inline]
pub(crate) fn sampled(hash: u32, sample_mask: u64) -> bool {
    mix64(u64::from(hash) ^ SAMPLE_SALT) & sample_mask == 0
}

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct Experts {
    minis: Vec<Mini>,
    /// Keys whose sampling hash has these bits clear are replayed (1/R of them).
    sample_mask: u64,
    /// Sampled requests per decision.
    period: u64,
    requests: u64,
    /// Decision periods ended so far.
    periods: u64,
    current: usize,
    scratch: Vec<u32>,
}

impl Experts {
    /// Experts for a cache of `maximum` weight holding about `entries` entries, now in the mode
    /// at `current` in [`MODES`].
    pub(crate) fn new(maximum: u64, entries: usize, weighted: bool, current: usize) -> Self {
        let rate = (entries as u64)
            .div_ceil(MINI_ENTRIES)
            .max(1)
            .next_power_of_two();
        let mini_entries = (entries as u64 / rate).max(1);
        let minis = MODES
            .iter()
            .map(|&mode| {
                Mini::new(
                    (maximum / rate).max(1),
                    mini_entries as usize,
                    weighted,
                    mode,
                )
            })
            .collect();
        Self {
            minis,
            sample_mask: rate - 1,
            period: PERIOD_FACTOR * mini_entries,
            requests: 0,
            periods: 0,
            current,
            scratch: Vec::new(),
        }
    }

    /// The mask [`sampled`] takes for this cache's keys.
    pub(crate) fn sample_mask(&self) -> u64 {
        self.sample_mask
    }

    /// Replays one request if its key is sampled; returns the index in [`MODES`] of a newly
    /// chosen mode.
    #[inline]
    pub(crate) fn record(
        &mut self,
        hash: u32,
        weight: u32,
        admission: &mut Admission,
    ) -> Option<usize> {
        if !sampled(hash, self.sample_mask) {
            return None;
        }
        for mini in &mut self.minis {
            mini.record(hash, weight, admission, &mut self.scratch);
        }
        self.requests += 1;
        if self.requests < self.period {
            return None;
        }
        self.requests = 0;
        self.decide()
    }

    /// Ends a period: updates the scores and steps towards the leader.
    fn decide(&mut self) -> Option<usize> {
        self.periods += 1;
        let warming = self.periods <= WARM_UP_PERIODS;
        for mini in &mut self.minis {
            if !warming {
                mini.score = mini.score * SCORE_DECAY + mini.hits as f64;
            }
            mini.hits = 0;
        }
        if warming {
            return None;
        }
        let mut leader = 0;
        for k in 1..self.minis.len() {
            if self.minis[k].score > self.minis[leader].score {
                leader = k;
            }
        }
        // A tie with the current mode is no reason to move.
        if self.minis[leader].score <= self.minis[self.current].score {
            return None;
        }
        self.current = if leader > self.current {
            self.current + 1
        } else {
            self.current - 1
        };
        Some(self.current)
    }

    /// Empties the miniatures; they warm up again before the next decision.
    pub(crate) fn clear(&mut self) {
        for mini in &mut self.minis {
            mini.segments.clear();
            mini.index.clear();
            mini.free.clear();
            mini.next = 0;
            mini.hits = 0;
            mini.score = 0.0;
        }
        self.requests = 0;
        self.periods = 0;
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.minis.iter().map(Mini::memory_bytes).sum()
    }

    /// Panics unless every miniature's queues and index agree.
    pub(crate) fn validate(&self) {
        for mini in &self.minis {
            let members = mini.segments.validate();
            assert_eq!(members.len(), mini.index.len(), "miniature index size");
            assert!(mini.segments.weighted_size() <= mini.segments.maximum());
        }
    }
}
