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
//! slowly and often the wrong way (see `docs/decisions/0110-miniature-experts.md`). Measuring
//! beats guessing: each candidate [`MODES`] entry runs a miniature W-TinyLFU ([`Segments`], the
//! very code of the real cache) over the same requests, so their hit counts compare the modes on
//! identical traffic.
//!
//! - **Sampling.** A miniature holds at most [`MINI_ENTRIES`] (2,048) entries. For a larger cache
//!   it replays only the keys whose hash falls in a 1/R slice, with R the power of two that brings
//!   the capacity down to that size: spatial sampling (SHARDS) keeps every request of a sampled
//!   key, so reuse distances and frequencies scale down faithfully. The miniatures read the real
//!   cache's frequency sketch (a sampled key's count is its true count) and keep only their
//!   queues, an index by hash and a ghost: about 43 bytes per miniature entry, so at most about
//!   680 KiB per cache, and a small fraction of a large cache's memory. A cache of up to 2,048
//!   entries pays for eight full copies (nine and a second sketch below 1,000 entries, see
//!   *Aging period*); choose the static policy where that matters. The size trades accuracy for
//!   work: smaller miniatures cost hit ratio, larger ones gained little (see
//!   `docs/decisions/0111-miniature-size.md`).
//! - **Modes** ([`MODES`]), ordered from frequency-biased to recency-biased: a 1% window with
//!   strict admission and no ghost, windows of 3% and 10% with ghost admission, 20% and 35%
//!   windows with lenient admission (thresholds 3 and 2), a segmented LRU (a 1% window and every
//!   candidate admitted: only the main space's split into probation and protected remains), and a
//!   100% window (plain LRU). The first six were chosen greedily on the reference traces: each
//!   member added the most to the per-cell best. The segmented LRU is for workloads whose hot set
//!   slides, where a key's old count is a liability, yet a key read twice is still worth keeping;
//!   its place in the order matters, since the cache moves a step at a time (see
//!   `docs/decisions/0112-mode-table.md`).
//! - **Decisions.** Every [`PERIOD_FACTOR`] (4) x the miniature capacity sampled requests
//!   ([`SAMPLED_PERIOD_FACTOR`], 3, when the miniatures replay a sample of the keys), each copy
//!   adds its hits of the period to two scores: a short memory, decayed by [`SCORE_DECAY`]
//!   (0.9) per period, and a long one, decayed by [`SLOW_DECAY`] (0.99). The real cache moves
//!   one mode towards the copy that leads, strictly, by the short memory, unless following the
//!   long memory's leader would have paid clearly more (see below). Moving a step at a time
//!   keeps a brief lead (a phase of a cyclic workload) from flushing the main space, which a
//!   jump to the LRU end does. Only a leader far ahead, by more than [`JUMP_SIGNIFICANCE`] (10)
//!   times the square root of the current mode's score, is joined at once: a lead that size is
//!   no phase's blip, and stepping towards it would spend periods in modes that all trail. The
//!   cache starts in the 3% mode ([`START_MODE`](super::mode::START_MODE)). The rules, thresholds
//!   and periods measured are in `docs/decisions/0113-mode-decision-rule.md`.
//!
//!   **Two memories.** A short memory follows a workload that changes, but is fooled by one whose
//!   modes take turns: on `zigzag` (passes over 2,000 keys, alternately up and down) LRU hits only
//!   at each turn and the strict 1% mode hits evenly in between, so the short memory's leader flips
//!   with the phase, always a little late, and the cache walks between the two ends. A long memory
//!   averages such turns out, but an old lead takes it some seventy periods to halve. So each
//!   memory's leader at the end of a period is credited with the hits its miniature makes in the
//!   next one, decayed by [`RULE_DECAY`] (0.95): what following that memory would have earned. The
//!   long memory leads once its credit exceeds the short one's by [`TWIN_SIGNIFICANCE`] times the
//!   square root of the latter, the margin twin's test of chance (see
//!   `docs/decisions/0114-two-memories.md`).
//!
//!   **Sampled caches decide a third sooner.** Shorter periods lose on small caches, whose
//!   miniatures replay every request, but not on caches over [`MINI_ENTRIES`], which replay a
//!   sample: their periods span as many requests (the miniature capacity times the sampling
//!   rate is the capacity), yet the traces of the large cells are short for their capacity, so
//!   4 periods' worth left them few decisions. A shard of a sharded cache decides by its own
//!   sampling rate alone (see `docs/decisions/0115-sampled-decision-period.md`).
//!
//!   What the miniatures can resolve sets the limit of any such rule: where several modes hit
//!   within about 1% of one another, the miniatures' leader among them changes from period to
//!   period, so a rule that found the best of them sooner would follow noise elsewhere too. The
//!   rules tried for such a workload are in `docs/decisions/0116-miniature-resolution-limit.md`.
//! - **Admission margin.** Whether a candidate must beat the victim by two counts instead of
//!   one (see [`Admission`]) is a second, independent choice: it pays on loops, scans and
//!   zigzags, where every key is seen equally often, and costs on workloads whose keys are seen
//!   a few times each. An eighth miniature, the *twin*, runs the current mode with the other
//!   margin. Its hits minus the current mode's accumulate in a lead that decays like the
//!   scores. When the lead is clearly positive (above [`TWIN_SIGNIFICANCE`] times the square
//!   root of the current mode's score), the cache takes the twin's margin, the twin and the
//!   current mode's miniature trade places, and the lead changes sign. A mode step resets the
//!   lead and gives the twin the new mode's score, since the twin then starts over in the new
//!   mode. Switching margins moves no entry, so unlike a mode it may flip at once. The cache
//!   starts with the margin ([`START_MARGIN`](super::mode::START_MARGIN)). See
//!   `docs/decisions/0117-admission-margin.md`.
//! - **Aging period.** A cache below [`MIN_SAMPLE_ENTRIES`] (1,000) entries has a second
//!   choice: whether its sketch ages every 10 x its capacity in increments (Caffeine's period)
//!   or every 10 x 1,000 (the floor [`Admission`] keeps so that loops longer than a small cache
//!   keep their counts). Neither suits every workload. The long period holds a stable subset of
//!   a long loop, but a hot key's count outlives its popularity by thousands of requests, and
//!   ties go to the incumbent, so newly hot keys are kept out of a small cache. Such a cache
//!   replays every request (no sampling), so the experts keep a second sketch at the other
//!   period, fed the same requests, and a ninth miniature, the *aging twin*, running the current
//!   mode and margin over it. Its lead is weighed like the margin twin's; when it is
//!   significant, the cache's admission and the twin's trade places (each sketch keeps its
//!   counts and period) and so do the two miniatures. After a mode step or a margin switch the
//!   aging twin follows the current mode and starts over. Followers in a concurrent cache adopt
//!   the period with the mode. Cost: a second sketch (32 KiB) and increment per request, in
//!   caches of under 1,000 entries only (see `docs/decisions/0118-sketch-aging-period-twin.md`).
//!
//!   The twin's sketch also counts the reads the cache deferred before the experts existed,
//!   which reach the cache's sketch when it first fills ([`Experts::record_deferred`]).
//! - **Warm-up.** The miniatures start when the cache is half full, so their first period
//!   ([`WARM_UP_PERIODS`]) mostly measures how fast each mode fills up, where the lenient modes
//!   lead, not how it evicts; its hits are discarded (see
//!   `docs/decisions/0119-experts-warm-up.md`).
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

use super::mode::{mode_of, Mode, MODES};
use super::segments::Segments;
use crate::policy::admission::Admission;
#[cfg(doc)]
use crate::policy::admission::MIN_SAMPLE_ENTRIES;
use crate::random::mix64;

/// The most entries a miniature holds: fewer lost hit ratio, more gained little for the work
/// (see `docs/decisions/0111-miniature-size.md`).
pub const MINI_ENTRIES: u64 = 2_048;
/// A decision every this many times the miniature capacity, in sampled requests: shorter and
/// longer periods did worse on the reference traces (see
/// `docs/decisions/0113-mode-decision-rule.md`).
pub const PERIOD_FACTOR: u64 = 4;
/// [`PERIOD_FACTOR`] for miniatures that replay a sample of the keys (a cache over
/// [`MINI_ENTRIES`] entries), whose large caches' traces left them few decisions (see
/// `docs/decisions/0115-sampled-decision-period.md`).
pub const SAMPLED_PERIOD_FACTOR: u64 = 3;
/// Each period's scores keep this share of the previous ones: the short memory, which follows a
/// changing workload.
pub const SCORE_DECAY: f64 = 0.9;
/// The long memory's decay: each period's slow scores keep this share of the previous ones, so
/// that modes taking turns average out (see `docs/decisions/0114-two-memories.md`).
pub const SLOW_DECAY: f64 = 0.99;
/// The decay of what following each memory's leader would have hit (see
/// `docs/decisions/0114-two-memories.md`).
pub const RULE_DECAY: f64 = 0.95;
/// Periods whose hits are discarded before the first decision: the first measures how fast
/// each mode fills up, not how it evicts (see `docs/decisions/0119-experts-warm-up.md`).
pub const WARM_UP_PERIODS: u64 = 1;
/// The twin takes over only when its lead exceeds this many times the square root of the
/// current mode's score: a hit count's standard deviation is about its square root, so a lead
/// smaller than half of that is as likely noise as a difference.
pub const TWIN_SIGNIFICANCE: f64 = 0.5;
/// The cache moves straight to the leading mode, instead of one step towards it, when the
/// leader's score exceeds the current mode's by this many times the square root of the latter:
/// a lead that size is no phase's blip (see `docs/decisions/0113-mode-decision-rule.md`).
pub const JUMP_SIGNIFICANCE: f64 = 10.0;
/// Where [`Experts`] keeps the twin among its miniatures: after one per mode.
const TWIN: usize = MODES.len();
/// Where [`Experts`] keeps the aging twin, when there is one: after the twin.
const AGED: usize = TWIN + 1;
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
    /// Hits, each period's decayed by [`SCORE_DECAY`].
    score: f64,
    /// Hits, each period's decayed by [`SLOW_DECAY`].
    slow_score: f64,
}

impl Mini {
    /// A miniature of `maximum` weight holding about `entries` entries; `exact`: its ghost
    /// sized as the cache's is (see `Ghost::set_capacity`).
    fn new(maximum: u64, entries: usize, weighted: bool, mode: Mode, exact: bool) -> Self {
        let mut segments = Segments::new(maximum, mode, weighted);
        segments.size_ghost(entries, exact);
        // Room for the entries it will hold, and the one inserted before an eviction.
        segments.reserve(entries + 1);
        Self {
            segments,
            index: HashTable::with_capacity(entries + 1),
            free: Vec::new(),
            next: 0,
            hits: 0,
            score: 0.0,
            slow_score: 0.0,
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

    /// The short memory's score, or with `slow` the long one's.
    fn memory(&self, slow: bool) -> f64 {
        if slow {
            self.slow_score
        } else {
            self.score
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
    /// One miniature per mode in [`MODES`], all with the current margin, then the twin (at
    /// [`TWIN`]): the current mode with the other margin.
    minis: Vec<Mini>,
    /// The admission margin in force (0 or 1).
    margin: u8,
    /// The twin's decayed lead over the current mode, in hits.
    margin_lead: f64,
    /// For a cache below [`MIN_SAMPLE_ENTRIES`] entries
    /// (whose every request is replayed): admission over a sketch aging at the other period,
    /// which the aging twin (at [`AGED`]) runs on.
    alt: Option<Admission>,
    /// The aging twin's decayed lead over the current mode, in hits.
    aging_lead: f64,
    /// What following the leader by [`Mini::score`] (0) or by [`Mini::slow_score`] (1) would
    /// have hit, each period's decayed by [`RULE_DECAY`].
    rule_rewards: [f64; 2],
    /// The two leaders at the end of the last period.
    rule_leaders: [usize; 2],
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
    pub(crate) fn new(
        maximum: u64,
        entries: usize,
        weighted: bool,
        current: usize,
        margin: u8,
        admission: &Admission,
    ) -> Self {
        let rate = (entries as u64)
            .div_ceil(MINI_ENTRIES)
            .max(1)
            .next_power_of_two();
        let mini_entries = (entries as u64 / rate).max(1);
        let mini = |mode| {
            Mini::new(
                (maximum / rate).max(1),
                mini_entries as usize,
                weighted,
                mode,
                admission.exact(),
            )
        };
        let alt = (rate == 1 && admission.has_aging_choice()).then(|| {
            let mut alt = admission.clone();
            alt.set_fast_aging(!admission.fast_aging());
            alt
        });
        let mut minis: Vec<Mini> = (0..MODES.len())
            .map(|k| mini(mode_of(k, margin)))
            .chain(std::iter::once(mini(mode_of(current, margin ^ 1))))
            .collect();
        if alt.is_some() {
            minis.push(mini(mode_of(current, margin)));
        }
        Self {
            minis,
            margin,
            margin_lead: 0.0,
            alt,
            aging_lead: 0.0,
            rule_rewards: [0.0; 2],
            rule_leaders: [current; 2],
            sample_mask: rate - 1,
            period: if rate > 1 {
                SAMPLED_PERIOD_FACTOR
            } else {
                PERIOD_FACTOR
            } * mini_entries,
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

    /// Replays one request if its key is sampled; returns the index in [`MODES`] and the
    /// margin of a newly chosen mode.
    #[inline]
    pub(crate) fn record(
        &mut self,
        hash: u32,
        weight: u32,
        admission: &mut Admission,
    ) -> Option<(usize, u8)> {
        if !sampled(hash, self.sample_mask) {
            return None;
        }
        let Self {
            minis,
            alt,
            scratch,
            ..
        } = self;
        if let Some(alt) = alt.as_mut() {
            alt.record(u64::from(hash));
        }
        for (k, mini) in minis.iter_mut().enumerate() {
            let admission = match alt.as_mut() {
                Some(alt) if k == AGED => alt,
                _ => &mut *admission,
            };
            mini.record(hash, weight, admission, scratch);
        }
        self.requests += 1;
        if self.requests < self.period {
            return None;
        }
        self.requests = 0;
        self.decide(admission)
    }

    /// Counts reads the cache deferred (and the miniatures never saw) in the aging twin's
    /// sketch too, as the cache counts them in its own: reads deferred before the experts
    /// existed reach the sketches when the cache first fills.
    #[inline]
    pub(crate) fn record_deferred(&mut self, hash: u64, reads: u8) {
        if let Some(alt) = &mut self.alt {
            alt.record_many(hash, reads);
        }
    }

    /// The aging twin's count of a key, if there is an aging twin.
    #[cfg(test)]
    pub(crate) fn alt_frequency(&self, hash: u64) -> Option<u8> {
        self.alt.as_ref().map(|alt| alt.sketch.frequency(hash))
    }

    /// Ends a period: updates the scores and steps towards the leader.
    fn decide(&mut self, admission: &mut Admission) -> Option<(usize, u8)> {
        self.periods += 1;
        let warming = self.periods <= WARM_UP_PERIODS;
        let current_hits = self.minis[self.current].hits as f64;
        let margin_delta = self.minis[TWIN].hits as f64 - current_hits;
        let aging_delta = self.minis.get(AGED).map(|m| m.hits as f64 - current_hits);
        if !warming {
            for (reward, &leader) in self.rule_rewards.iter_mut().zip(&self.rule_leaders) {
                *reward = *reward * RULE_DECAY + self.minis[leader].hits as f64;
            }
        }
        for mini in &mut self.minis {
            if !warming {
                mini.score = mini.score * SCORE_DECAY + mini.hits as f64;
                mini.slow_score = mini.slow_score * SLOW_DECAY + mini.hits as f64;
            }
            mini.hits = 0;
        }
        if warming {
            return None;
        }
        let mut changed = self.weigh_margin(margin_delta);
        if let Some(delta) = aging_delta.filter(|_| !changed) {
            changed = self.weigh_aging(delta, admission);
        }
        let (leader, slow) = self.leader();
        let current = self.minis[self.current].memory(slow);
        let lead = self.minis[leader].memory(slow) - current;
        // A tie with the current mode is no reason to move.
        if lead > 0.0 {
            self.current = if lead > JUMP_SIGNIFICANCE * current.max(0.0).sqrt() {
                leader
            } else if leader > self.current {
                self.current + 1
            } else {
                self.current - 1
            };
            // The twin follows, and must earn a lead in its new mode afresh; should it take
            // over, the mode's score carries on.
            self.restart_twin(TWIN, mode_of(self.current, self.margin ^ 1));
            self.margin_lead = 0.0;
            self.follow_with_aging_twin();
            changed = true;
        }
        changed.then_some((self.current, self.margin))
    }

    /// Finds each memory's leading mode, and returns the one to follow and whether it is the
    /// long memory's: only while following that one has paid clearly more.
    fn leader(&mut self) -> (usize, bool) {
        for (rule, leader) in self.rule_leaders.iter_mut().enumerate() {
            let slow = rule == 1;
            *leader = (0..MODES.len()).fold(0, |best, k| {
                if self.minis[k].memory(slow) > self.minis[best].memory(slow) {
                    k
                } else {
                    best
                }
            });
        }
        let [fast, slow] = self.rule_rewards;
        let use_slow = slow > fast + TWIN_SIGNIFICANCE * fast.max(0.0).sqrt();
        (self.rule_leaders[usize::from(use_slow)], use_slow)
    }

    /// Adds a period's `delta` to the twin's lead; switches to the twin's margin if it leads
    /// by more than chance would (see [`TWIN_SIGNIFICANCE`]).
    fn weigh_margin(&mut self, delta: f64) -> bool {
        self.margin_lead = self.margin_lead * SCORE_DECAY + delta;
        let noise = self.minis[self.current].score.max(0.0).sqrt();
        if self.margin_lead <= TWIN_SIGNIFICANCE * noise {
            return false;
        }
        // The twin becomes the current mode's miniature, and the miniature it replaces the
        // twin, now measuring the margin just left.
        self.minis.swap(TWIN, self.current);
        self.margin ^= 1;
        self.margin_lead = -self.margin_lead;
        for (k, mini) in self.minis[..TWIN].iter_mut().enumerate() {
            mini.segments.set_mode(mode_of(k, self.margin));
        }
        self.follow_with_aging_twin();
        true
    }

    /// Adds a period's `delta` to the aging twin's lead; if it leads by more than chance would,
    /// the cache's sketch and the twin's trade places (each keeps its period and counts).
    fn weigh_aging(&mut self, delta: f64, admission: &mut Admission) -> bool {
        self.aging_lead = self.aging_lead * SCORE_DECAY + delta;
        let noise = self.minis[self.current].score.max(0.0).sqrt();
        let Some(alt) = self.alt.as_mut() else {
            return false;
        };
        if self.aging_lead <= TWIN_SIGNIFICANCE * noise {
            return false;
        }
        // The sizing the cache may be waiting for (see `WTinyLfu::set_maximum`) stays its own.
        let sized = admission.is_sized();
        std::mem::swap(admission, alt);
        if !sized {
            admission.defer_sizing();
        }
        self.minis.swap(AGED, self.current);
        self.aging_lead = -self.aging_lead;
        true
    }

    /// Puts the aging twin beside the current mode and margin after either changed: it starts
    /// over from the current mode's score.
    fn follow_with_aging_twin(&mut self) {
        if self.minis.len() > AGED {
            self.restart_twin(AGED, mode_of(self.current, self.margin));
            self.aging_lead = 0.0;
        }
    }

    /// Moves the twin at `twin` to `mode`, carrying the current mode's scores (both memories).
    fn restart_twin(&mut self, twin: usize, mode: Mode) {
        let (score, slow_score) = {
            let current = &self.minis[self.current];
            (current.score, current.slow_score)
        };
        let twin = &mut self.minis[twin];
        twin.segments.set_mode(mode);
        twin.score = score;
        twin.slow_score = slow_score;
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
            mini.slow_score = 0.0;
        }
        self.requests = 0;
        self.periods = 0;
        self.margin_lead = 0.0;
        self.aging_lead = 0.0;
        self.rule_rewards = [0.0; 2];
        self.rule_leaders = [self.current; 2];
        if let Some(alt) = &mut self.alt {
            alt.clear();
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.minis.iter().map(Mini::memory_bytes).sum::<usize>()
            + self.alt.as_ref().map_or(0, |alt| alt.sketch.memory_bytes())
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

#[cfg(test)]
mod tests {
    use super::super::mode::START_MODE;
    use super::*;

    /// Admission sized for a cache of `entries` entries.
    fn sized(entries: usize) -> Admission {
        let mut admission = Admission::new(Some(1), 1);
        admission.ensure_capacity(entries);
        admission
    }

    /// Experts for a 100-entry cache in the start mode, past their warm-up, and the cache's
    /// admission.
    fn warmed() -> (Experts, Admission) {
        let admission = sized(100);
        let mut experts = Experts::new(100, 100, false, START_MODE, 1, &admission);
        experts.periods = WARM_UP_PERIODS;
        (experts, admission)
    }

    /// [`warmed`] experts whose period gave every mode's miniature `modes` hits and the twin
    /// `twin`.
    fn warmed_with_hits(modes: u64, twin: u64) -> (Experts, Admission) {
        let (mut experts, admission) = warmed();
        for mini in &mut experts.minis[..TWIN] {
            mini.hits = modes;
        }
        experts.minis[TWIN].hits = twin;
        (experts, admission)
    }

    #[test]
    fn decide_twin_ahead_takes_its_margin_and_keeps_mode() {
        // Every miniature ties, so the mode stays; the twin (margin 0) hit more.
        let (mut experts, mut admission) = warmed_with_hits(40, 50);
        assert_eq!(experts.decide(&mut admission), Some((START_MODE, 0)));
        assert_eq!(experts.margin, 0);
        // The twin's record now stands for the current mode, and the old one is the twin.
        assert_eq!(experts.minis[START_MODE].score, 50.0);
        assert_eq!(experts.minis[TWIN].score, 40.0);
        // Having just switched, the twin (back at margin 1) trails by the lead it lost.
        assert!(experts.margin_lead < 0.0);
    }

    #[test]
    fn decide_twin_ahead_by_chance_keeps_margin() {
        // A lead of 3 hits is below half the square root of 100.
        let (mut experts, mut admission) = warmed_with_hits(100, 103);
        assert_eq!(experts.decide(&mut admission), None);
        assert_eq!(experts.margin, 1);
        assert_eq!(experts.margin_lead, 3.0);
    }

    #[test]
    fn decide_twin_behind_keeps_margin() {
        let (mut experts, mut admission) = warmed_with_hits(40, 30);
        assert_eq!(experts.decide(&mut admission), None);
        assert_eq!(experts.margin, 1);
    }

    #[test]
    fn decide_mode_step_moves_twin_and_resets_lead() {
        let (mut experts, mut admission) = warmed();
        experts.margin_lead = -25.0;
        // A lead of 90 hits over 100: below ten times the square root of 100, so one step.
        experts.minis[START_MODE].hits = 100;
        experts.minis[START_MODE + 2].hits = 190;
        experts.minis[TWIN].hits = 0;
        assert_eq!(experts.decide(&mut admission), Some((START_MODE + 1, 1)));
        assert_eq!(experts.margin_lead, 0.0);
        // The twin now stands beside the new mode and carries its score.
        assert_eq!(
            experts.minis[TWIN].score,
            experts.minis[START_MODE + 1].score
        );
    }

    #[test]
    fn decide_leader_far_ahead_jumps_to_it() {
        let (mut experts, mut admission) = warmed();
        // A lead of 101 hits over 100 exceeds ten times the square root of 100.
        experts.minis[START_MODE].hits = 100;
        experts.minis[START_MODE + 3].hits = 201;
        experts.minis[TWIN].hits = 0;
        assert_eq!(experts.decide(&mut admission), Some((START_MODE + 3, 1)));
        assert_eq!(
            experts.minis[TWIN].score,
            experts.minis[START_MODE + 3].score
        );
    }

    #[test]
    fn modes_segmented_lru_admits_every_candidate() {
        let slru = MODES.iter().position(|m| m.lenient == 1).unwrap();
        let mut admission = sized(100);
        for _ in 0..15 {
            admission.record(2);
        }
        admission.record(1);
        // A candidate seen once beats a victim seen fifteen times, under any margin.
        for margin in [0, 1] {
            let mode = mode_of(slru, margin);
            assert!(admission.admit(1, 2, false, mode.lenient, mode.margin));
        }
        // The strict mode turns it away.
        let strict = mode_of(0, 0);
        assert!(!admission.admit(1, 2, false, strict.lenient, strict.margin));
    }

    #[test]
    fn decide_while_warming_changes_nothing() {
        let mut admission = sized(100);
        let mut experts = Experts::new(100, 100, false, START_MODE, 1, &admission);
        experts.minis[TWIN].hits = 50;
        experts.minis[0].hits = 90;
        assert_eq!(experts.decide(&mut admission), None);
        assert_eq!((experts.margin, experts.current), (1, START_MODE));
    }

    #[test]
    fn new_small_cache_has_aging_twin_on_other_period() {
        let admission = sized(100);
        let experts = Experts::new(100, 100, false, START_MODE, 1, &admission);
        assert_eq!(experts.minis.len(), AGED + 1);
        let alt = experts.alt.as_ref().unwrap();
        assert!(alt.fast_aging() && !admission.fast_aging());
        assert!(alt.sketch.sample_size() < admission.sketch.sample_size());
    }

    #[test]
    fn new_cache_of_min_sample_entries_has_no_aging_twin() {
        let entries = crate::policy::admission::MIN_SAMPLE_ENTRIES;
        let admission = sized(entries);
        let experts = Experts::new(entries as u64, entries, false, START_MODE, 1, &admission);
        assert!(experts.alt.is_none());
        assert_eq!(experts.minis.len(), AGED);
    }

    #[test]
    fn new_sampled_cache_decides_every_three_miniature_capacities() {
        // 100,000 entries: a 1/64 sample into miniatures of 1,562 entries.
        let experts = Experts::new(100_000, 100_000, false, START_MODE, 1, &sized(100_000));
        assert_eq!(experts.sample_mask, 63);
        assert_eq!(experts.period, SAMPLED_PERIOD_FACTOR * 1_562);
        // Up to MINI_ENTRIES the miniatures replay every key, and keep the longer period.
        let entries = MINI_ENTRIES as usize;
        let experts = Experts::new(MINI_ENTRIES, entries, false, START_MODE, 1, &sized(entries));
        assert_eq!(experts.sample_mask, 0);
        assert_eq!(experts.period, PERIOD_FACTOR * MINI_ENTRIES);
    }

    #[test]
    fn decide_aging_twin_ahead_swaps_sketches() {
        let (mut experts, mut admission) = warmed_with_hits(40, 40);
        admission.record(7);
        experts.minis[AGED].hits = 60;
        assert_eq!(experts.decide(&mut admission), Some((START_MODE, 1)));
        // The cache now ages fast, with the twin's counts; the twin keeps the cache's.
        assert!(admission.fast_aging());
        let alt = experts.alt.as_ref().unwrap();
        assert!(!alt.fast_aging());
        assert_eq!(
            (admission.sketch.frequency(7), alt.sketch.frequency(7)),
            (0, 1)
        );
        assert_eq!(experts.minis[START_MODE].score, 60.0);
        assert!(experts.aging_lead < 0.0);
    }

    #[test]
    fn decide_aging_twin_ahead_by_chance_keeps_period() {
        let (mut experts, mut admission) = warmed_with_hits(100, 100);
        experts.minis[AGED].hits = 103;
        assert_eq!(experts.decide(&mut admission), None);
        assert!(!admission.fast_aging());
        assert_eq!(experts.aging_lead, 3.0);
    }

    #[test]
    fn decide_margin_switch_moves_aging_twin_to_new_margin() {
        let (mut experts, mut admission) = warmed_with_hits(40, 50);
        experts.aging_lead = 5.0;
        experts.minis[AGED].hits = 45;
        assert_eq!(experts.decide(&mut admission), Some((START_MODE, 0)));
        assert_eq!(experts.minis[AGED].segments.mode, mode_of(START_MODE, 0));
        assert_eq!(experts.aging_lead, 0.0);
        assert!(!admission.fast_aging());
    }

    /// Runs `periods` decisions in which mode 0 hits 30 times every period and the LRU end
    /// 220 times every 12th period, 20 otherwise, as LRU does when a zigzag turns: on average
    /// the LRU end hits more (36.7 per period), but by the time of its next burst the short
    /// memory has forgotten the last one. The other modes hit 20 times.
    fn bursts(experts: &mut Experts, admission: &mut Admission, periods: usize) -> Vec<usize> {
        let lru = MODES.len() - 1;
        let mut path = Vec::new();
        for p in 0..periods {
            for (k, mini) in experts.minis.iter_mut().enumerate() {
                mini.hits = match k {
                    0 => 30,
                    k if k == lru && p % 12 == 11 => 220,
                    _ => 20,
                };
            }
            // The twins hit as the current mode does: no reason to switch margin or period.
            let current = experts.minis[experts.current].hits;
            experts.minis[TWIN].hits = current;
            if let Some(aged) = experts.minis.get_mut(AGED) {
                aged.hits = current;
            }
            experts.decide(admission);
            path.push(experts.current);
        }
        path
    }

    #[test]
    fn decide_bursty_leader_long_memory_takes_over_and_cache_settles() {
        let (mut experts, mut admission) = warmed();
        let path = bursts(&mut experts, &mut admission, 300);
        // Following the short memory's leader would have stepped towards mode 0 between bursts
        // and back after each (5, 4, 3, 4, 5): it was at the wrong end for every burst.
        let [fast, slow] = experts.rule_rewards;
        assert!(
            slow > fast + TWIN_SIGNIFICANCE * fast.sqrt(),
            "{fast} {slow}"
        );
        assert!(
            path[250..].iter().all(|&m| m == MODES.len() - 1),
            "{path:?}"
        );
    }

    #[test]
    fn decide_steady_leader_short_memory_kept() {
        let (mut experts, mut admission) = warmed();
        for _ in 0..50 {
            for (k, mini) in experts.minis.iter_mut().enumerate() {
                mini.hits = if k == 4 { 90 } else { 40 };
            }
            experts.decide(&mut admission);
        }
        // Both memories name mode 4 and the cache walks there, one mode per period.
        assert_eq!(experts.rule_leaders, [4, 4]);
        assert_eq!(experts.current, 4);
        let [fast, slow] = experts.rule_rewards;
        assert!(slow <= fast + TWIN_SIGNIFICANCE * fast.sqrt());
    }
}
