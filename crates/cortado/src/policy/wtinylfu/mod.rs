//! Window TinyLFU: an LRU admission window in front of a segmented-LRU main space guarded by TinyLFU.
//!
//! New entries enter the window; an entry pushed out of the window competes with the main space's
//! eviction victim, and the more frequently seen of the two stays.
//!
//! # Design
//!
//! - **Window** (LRU): absorbs bursts, so an entry that is reused soon after its first access
//!   gets hits before frequency decides its fate.
//! - **Main** (the rest) is a segmented LRU: *probation* holds entries admitted from the window;
//!   a hit in probation promotes to *protected*, which may hold up to
//!   [`PROTECTED_SHARE`](segments::PROTECTED_SHARE) (65%) of the main space; the overflow of
//!   protected is demoted back to probation's MRU end. Caffeine gives protected 80%; a smaller
//!   share leaves more of the main space to probation, where a key that was hot once but is no
//!   longer reused is evicted sooner (see `docs/decisions/0100-protected-share.md`).
//! - **Eviction.** When over capacity, window entries past the window's maximum move to probation
//!   as candidates; then each candidate duels the probation LRU victim through
//!   [`Admission`](super::admission) and the loser is evicted. Once candidates run out the victims
//!   come from probation, then protected, then the window. The steady state of an unweighted
//!   cache, one entry over with the window one over its own bound, is a single duel, which
//!   `Segments::evict_one` does without the general loops (see
//!   `docs/decisions/0103-single-duel-eviction.md`).
//! - **Returning candidates.** Rejected candidates are remembered in a
//!   [`Ghost`](super::ghost::Ghost) of [`GHOST_SHARE`](segments::GHOST_SHARE) (all of) the
//!   capacity; one that comes back while remembered has a short reuse distance and is admitted
//!   without a duel. The whole capacity rather than half did better on the reference traces' mean,
//!   for a second byte per entry (see `docs/decisions/0101-ghost-admission.md`).
//! - **Modes.** A [`Mode`](mode::Mode) sets the window's share of the capacity and how lenient
//!   and how strict admission is (the margin a candidate must win by).
//!   [`EvictionPolicy::tiny_lfu`](super::EvictionPolicy::tiny_lfu) lets [`Experts`] pick the mode
//!   from miniature copies of the cache; the static variant keeps [`STATIC_MODE`] (a 1% window).
//!   A mode change moves the bounds at once and lets entries follow lazily: the window's overflow
//!   becomes admission candidates on the next eviction and protected's overflow is demoted, at
//!   most [`QUEUE_TRANSFER_LIMIT`](segments::QUEUE_TRANSFER_LIMIT) entries at the change and at
//!   each later promotion, so a large change never stalls one call. An overflow past that limit
//!   (the step from the segmented LRU to LRU in a cache of over about 1,550 entries) waits for
//!   promotions, since the entries it keeps protected are the frequent ones (see
//!   `docs/decisions/0104-lazy-mode-change.md`).
//! - **Weights.** Every bound is in weight units; an entry heavier than the whole capacity is
//!   evicted at once, one heavier than the window enters at the window's LRU end so it is judged
//!   right away.
//! - **Deferred reads.** A cache whose readers share the policy may count a read on the entry and
//!   tell the policy only when the entry nears eviction ([`Deferral`], [`MAX_DEFERRED`]).
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. G. Einziger, O. Eytan, R. Friedman, B. Manes: "Adaptive Software Cache Management",
//!    Middleware 2018.
//! 3. B. Manes: Caffeine's `BoundedLocalCache` (eviction).

pub(super) mod experts;
pub(super) mod mode;
pub(super) mod segments;

use self::experts::Experts;
use self::mode::{mode_of, MODES, START_MARGIN, START_MODE, STATIC_MODE};
use self::segments::{fold_hash, Queue, Segments};
use super::admission::Admission;

/// A shared budget's share sizes the sketch, ghost and experts again once the entries it holds
/// are more than 1/`SIZE_SLACK` away from those they were sized for: closer, a shard's share
/// moving by little would restart the experts often.
const SIZE_SLACK: usize = 8;

/// Most deferred reads of one entry counted at once (a sketch counter's ceiling).
pub const MAX_DEFERRED: u8 = 15;

/// Most entries one [`Policy::fold_deferred`](super::Policy::fold_deferred) moves; past it, an
/// entry with deferred reads may be evicted as if unread (the bound keeps one insert's work
/// small when nearly every entry has been read since it was last looked at).
pub(crate) const FOLD_LIMIT: usize = 64;

/// Which reads may be deferred: counted on the entry by the reader (a byte in its slot, no
/// lock, no shared counter) and applied to the policy only when the entry reaches the eviction
/// end of its queue ([`Policy::fold_deferred`](super::Policy::fold_deferred)), as CLOCK does;
/// every deferred read is also applied when the cache first becomes full, before admission
/// compares anyone. W-TinyLFU defers every read except those of the keys its adaptive
/// miniatures sample: those are told to the policy at once (the single-threaded cache) or
/// replayed through the read buffer in order (the concurrent one), since the miniatures
/// simulate each read when it happens. Window reads are deferred like the others.
///
/// Deferral keeps concurrent readers off the read buffer for a hit ratio cost of hundredths of
/// a point: the measurements are in `docs/decisions/0107-read-deferral.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deferral {
    /// Every read is replayed.
    Never,
    /// Every read may be deferred.
    Always,
    /// Reads of keys the adaptive policy's miniatures sample are replayed (the miniatures
    /// simulate each read when it happens), the others may be deferred.
    Unsampled {
        /// The miniatures' sample mask (see `experts::sampled`).
        mask: u64,
    },
}

impl Deferral {
    /// Whether a read of the key with this hash may be deferred.
    #[inline]
    pub(crate) fn defers(self, hash: u64) -> bool {
        match self {
            Deferral::Never => false,
            Deferral::Always => true,
            Deferral::Unsampled { mask } => !experts::sampled(fold_hash(hash), mask),
        }
    }
}

/// How a W-TinyLFU policy chooses its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adaptation {
    /// Always [`STATIC_MODE`].
    Static,
    /// Chooses with its own [`Experts`].
    Lead,
    /// Adopts the modes another policy chooses (the shards of a concurrent cache).
    Follow,
}

/// The W-TinyLFU policy. See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct WTinyLfu {
    segments: Segments,
    admission: Admission,
    adaptation: Adaptation,
    /// The index in [`MODES`] of the mode in force, when adaptive.
    mode_index: u8,
    /// Created once the cache is half full (the sketch exists from the start, at its minimum
    /// size, and grows then); only a leading policy has them.
    experts: Option<Box<Experts>>,
    /// Whether entries carry weights; if not, the capacity counts entries.
    weighted: bool,
}

impl WTinyLfu {
    pub(crate) fn new(
        maximum: u64,
        adaptation: Adaptation,
        weighted: bool,
        seed: Option<u64>,
        minimums_divisor: u32,
    ) -> Self {
        let mode = match adaptation {
            Adaptation::Static => STATIC_MODE,
            Adaptation::Lead | Adaptation::Follow => mode_of(START_MODE, START_MARGIN),
        };
        Self {
            segments: Segments::new(maximum, mode, weighted),
            admission: Admission::new(seed, minimums_divisor),
            adaptation,
            mode_index: START_MODE as u8,
            experts: None,
            weighted,
        }
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.segments.maximum()
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.segments.weighted_size()
    }

    /// Resets the bounds for a new capacity (eviction happens on the next `evict`). The
    /// sketch, ghost and experts are sized for it when the cache is half full of it: at once
    /// if it already is, else later, as for a new cache (growing one a thousandfold must not
    /// allocate the new capacity's sketch while it holds a thousandth of it).
    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.segments.set_maximum(maximum);
        if self.admission.is_sized() {
            if self.segments.weighted_size() >= maximum / 2 {
                self.size_for_capacity();
            } else {
                self.admission.defer_sizing();
            }
        }
    }

    /// Moves the bounds to `maximum`, a share of a capacity of `shared` split with other
    /// policies. The sketch, ghost and experts are sized again, as
    /// [`set_maximum`](Self::set_maximum) sizes them, only once the entries the share holds are
    /// more than 1/[`SIZE_SLACK`] away from those they were sized for: a shared budget moves a
    /// shard's share often, by little (see `Segments::set_allowance`), but a shard that grows
    /// into its budget must not keep a small sketch, and one whose share shrank as the memory
    /// beside its entries was counted (a server's) must not keep structures for entries it no
    /// longer holds.
    pub(crate) fn set_allowance(&mut self, maximum: u64, shared: u64) {
        self.segments.set_allowance(maximum, shared);
        if !self.admission.is_sized() {
            return;
        }
        let sized = self.admission.sized_entries();
        if self.entries_estimate().abs_diff(sized) <= sized / SIZE_SLACK {
            return;
        }
        if self.segments.weighted_size() >= maximum / 2 {
            self.size_for_capacity();
        } else {
            self.admission.defer_sizing();
        }
    }

    pub(crate) fn reserve(&mut self, entries: usize) {
        self.segments.reserve(entries);
    }

    /// The capacity in entries: the maximum, or with weights an estimate from the entries held.
    fn entries_estimate(&self) -> usize {
        if self.weighted {
            let held = self.segments.len().max(1);
            let average = (self.segments.weighted_size() / held as u64).max(1);
            // No more than a shard's slots, however large the maximum.
            (self.segments.maximum() / average)
                .max(held as u64)
                .min(u64::from(u32::MAX)) as usize
        } else {
            self.segments.maximum() as usize
        }
    }

    /// Sizes the sketch, the ghost and the experts for the capacity.
    fn size_for_capacity(&mut self) {
        let entries = self.entries_estimate();
        self.admission.ensure_capacity(entries);
        self.segments.size_ghost(entries, self.admission.exact());
        if self.adaptation == Adaptation::Lead {
            let experts = Experts::new(
                self.segments.maximum(),
                entries,
                self.weighted,
                self.mode_index as usize,
                self.segments.mode.margin,
                &self.admission,
            );
            self.experts = Some(Box::new(experts));
        }
    }

    pub(crate) fn insert(&mut self, i: u32, hash: u64, weight: u32) {
        let hash = fold_hash(hash);
        self.segments.insert(i, hash, weight);
        if !self.admission.is_sized() && self.segments.weighted_size() >= self.maximum() / 2 {
            self.size_for_capacity();
        }
        self.admission.record(u64::from(hash));
        self.consult_experts(hash, weight);
    }

    /// Inline, so that [`access_batch`](Self::access_batch) keeps it inlined (see
    /// `docs/decisions/0105-hot-path-inlining.md`).
    #[inline]
    pub(crate) fn access(&mut self, i: u32) {
        let hash = self.segments.hash_of(i);
        self.admission.record(u64::from(hash));
        self.segments.access(i);
        self.consult_experts(hash, self.segments.weight_of(i));
    }

    /// Replays a batch of reads. The first pass touches each read's sketch block so that the
    /// cache misses overlap instead of stalling one increment at a time: the sketch is sized to
    /// the capacity (8 bytes per entry), far larger than the CPU caches for big caches, and
    /// its increments were the largest single cost of a hit in the peer benchmark.
    pub(crate) fn access_batch(&mut self, batch: &[u32]) {
        for &i in batch {
            let hash = self.segments.prefetch_neighbours(i);
            self.admission.sketch.prefetch(u64::from(hash));
        }
        for &i in batch {
            self.access(i);
        }
    }

    /// See [`Policy::deferral`](super::Policy::deferral): reads of the keys the miniatures
    /// sample are replayed, since the miniatures need them in order; with no miniatures (a
    /// static or following policy, or before the cache is half full) every read may wait.
    pub(crate) fn deferral(&self) -> Deferral {
        match &self.experts {
            Some(experts) if experts.sample_mask() == 0 => Deferral::Never,
            Some(experts) => Deferral::Unsampled {
                mask: experts.sample_mask(),
            },
            None => Deferral::Always,
        }
    }

    /// See [`Policy::fold_deferred`](super::Policy::fold_deferred). An entry's deferred reads
    /// are counted in the sketch (at most [`MAX_DEFERRED`] of them, the counters' ceiling) and
    /// it moves as one read would move it: window and protected entries to their queue's back,
    /// a probation entry to protected. Protected's end goes first, so that entries demoted by
    /// the promotions come from behind it.
    ///
    /// Only a probation fold can change another queue's end (its promotion may demote
    /// protected's end), so only then are the ends looked at again.
    pub(crate) fn fold_deferred(&mut self, mut take: impl FnMut(u32) -> u8) {
        let mut budget = FOLD_LIMIT;
        loop {
            let mut promoted = false;
            for queue in [Queue::Protected, Queue::Probation, Queue::Window] {
                while budget > 0 {
                    let Some(i) = self.segments.front(queue) else {
                        break;
                    };
                    let reads = take(i);
                    if reads == 0 {
                        break;
                    }
                    budget -= 1;
                    self.fold(i, reads);
                    promoted |= queue == Queue::Probation;
                }
            }
            if !promoted || budget == 0 {
                return;
            }
        }
    }

    /// Applies every entry's deferred reads, from the coldest entry to the hottest.
    pub(crate) fn fold_all(&mut self, mut take: impl FnMut(u32) -> u8) {
        for i in self.segments.coldest(&self.admission) {
            let reads = take(i);
            if reads > 0 {
                self.fold(i, reads);
            }
        }
    }

    /// Applies `reads` deferred reads of the entry at `i`.
    fn fold(&mut self, i: u32, reads: u8) {
        let hash = u64::from(self.segments.hash_of(i));
        let reads = reads.min(MAX_DEFERRED);
        self.admission.record_many(hash, reads);
        if let Some(experts) = &mut self.experts {
            experts.record_deferred(hash, reads);
        }
        self.segments.access(i);
    }

    /// A value was replaced: the entry counts as used and may change weight.
    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        let hash = self.segments.hash_of(i);
        self.admission.record(u64::from(hash));
        self.segments.update(i, weight);
        self.consult_experts(hash, weight);
    }

    /// Replays the request in the miniatures, if this policy has them, and follows the mode
    /// they choose. Only a leading policy has them (shard 0 of a concurrent cache): the others
    /// test the option here, inline, and skip the call and its register saves (see
    /// `docs/decisions/0105-hot-path-inlining.md`).
    #[inline]
    fn consult_experts(&mut self, hash: u32, weight: u32) {
        if self.experts.is_some() {
            self.consult_experts_now(hash, weight);
        }
    }

    #[inline(never)]
    fn consult_experts_now(&mut self, hash: u32, weight: u32) {
        if let Some(experts) = &mut self.experts {
            if let Some((index, margin)) = experts.record(hash, weight, &mut self.admission) {
                self.mode_index = index as u8;
                self.segments.set_mode(mode_of(index, margin));
            }
        }
    }

    pub(crate) fn remove(&mut self, i: u32) {
        self.segments.remove(i);
    }

    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        self.segments.evict(&mut self.admission, evicted);
    }

    /// The current window bound, for introspection and tests.
    pub(crate) fn window_maximum(&self) -> u64 {
        self.segments.window_maximum()
    }

    /// The mode in force, if the policy adapts, as a code for [`adopt_mode`](Self::adopt_mode):
    /// its index in [`MODES`], plus 16 times its margin, plus 32 if the sketch ages fast (see
    /// [`Admission::set_fast_aging`]).
    pub(crate) fn mode_code(&self) -> Option<u8> {
        (self.adaptation != Adaptation::Static).then_some(
            self.mode_index
                | (self.segments.mode.margin << 4)
                | (u8::from(self.admission.fast_aging()) << 5),
        )
    }

    /// Switches a following policy to the mode with this [code](Self::mode_code).
    pub(crate) fn adopt_mode(&mut self, code: u8) {
        let (index, margin, fast) = (code & 15, code >> 4 & 1, code >> 5 & 1 == 1);
        if self.adaptation == Adaptation::Follow && (index as usize) < MODES.len() && code < 64 {
            self.mode_index = index;
            self.segments.set_mode(mode_of(index as usize, margin));
            self.admission.set_fast_aging(fast);
        }
    }

    pub(crate) fn coldest(&self) -> Vec<u32> {
        self.segments.coldest(&self.admission)
    }

    pub(crate) fn clear(&mut self) {
        self.segments.clear();
        self.admission.clear();
        if let Some(experts) = &mut self.experts {
            experts.clear();
        }
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.segments.weight_of(i)
    }

    /// The sketch's estimate of how often the key of `hash` was seen lately.
    pub(crate) fn frequency(&self, hash: u64) -> u64 {
        u64::from(self.admission.sketch.frequency(u64::from(fold_hash(hash))))
    }

    /// Heap bytes of the policy's own structures.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.segments.memory_bytes()
            + self.admission.sketch.memory_bytes()
            + self.experts.as_ref().map_or(0, |e| e.memory_bytes())
    }

    /// Panics unless the queues, tags and weights agree; returns every linked index.
    pub(crate) fn validate(&self) -> Vec<u32> {
        if let Some(experts) = &self.experts {
            experts.validate();
        }
        self.segments.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ghost::Ghost;
    use crate::random::mix64;

    /// Replays keys through the policy with a key -> index map, like a cache does.
    fn replay(policy: &mut WTinyLfu, keys: impl IntoIterator<Item = u64>) -> (u64, u64) {
        let (hits, total, _) = replay_with(policy, keys, |p, evicted| p.evict(evicted));
        (hits, total)
    }

    /// Replays `keys` through `policy`, evicting after each insert with `evict`; returns the
    /// hits, the requests and every evicted index in order.
    fn replay_with(
        policy: &mut WTinyLfu,
        keys: impl IntoIterator<Item = u64>,
        mut evict: impl FnMut(&mut WTinyLfu, &mut Vec<u32>),
    ) -> (u64, u64, Vec<u32>) {
        let mut map = std::collections::HashMap::new();
        let mut owner = std::collections::HashMap::new();
        let mut free: Vec<u32> = Vec::new();
        let mut next = 0u32;
        let (mut hits, mut total) = (0, 0);
        let mut evicted = Vec::new();
        let mut log = Vec::new();
        for key in keys {
            total += 1;
            if let Some(&i) = map.get(&key) {
                hits += 1;
                policy.access(i);
                continue;
            }
            let i = free.pop().unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            map.insert(key, i);
            owner.insert(i, key);
            policy.insert(i, mix64(key), 1);
            evict(policy, &mut evicted);
            for i in evicted.drain(..) {
                map.remove(&owner.remove(&i).unwrap());
                free.push(i);
                log.push(i);
            }
            assert!(policy.weighted_size() <= policy.maximum());
        }
        (hits, total, log)
    }

    #[test]
    fn set_allowance_share_shrinks_an_eighth_sketch_follows_entries() {
        // Weighted entries of 10 in a share of 80,000, one of two caches that split their
        // minimums (so sized exactly): sized at half full for 8,000 entries.
        let mut policy = WTinyLfu::new(80_000, Adaptation::Static, true, Some(3), 2);
        for i in 0..4_000u32 {
            policy.insert(i, mix64(u64::from(i)), 10);
        }
        assert_eq!(policy.admission.sized_entries(), 8_000);
        // A share 15% smaller: the sketch is sized for its 6,800 entries, counts kept.
        for _ in 0..3 {
            policy.access(7);
        }
        let hash = u64::from(policy.segments.hash_of(7));
        let count = policy.admission.sketch.frequency(hash);
        assert!(count >= 3);
        policy.set_allowance(68_000, 68_000);
        assert_eq!(policy.admission.sized_entries(), 6_800);
        assert_eq!(policy.admission.sketch.memory_bytes(), 6_800 / 8 * 64);
        assert!(policy.admission.sketch.frequency(hash) >= count);
        let mut ghost = Ghost::default();
        ghost.set_capacity(6_800, true);
        assert_eq!(policy.segments.ghost_bytes(), ghost.memory_bytes());
        // A move of less than an eighth leaves it.
        policy.set_allowance(64_000, 64_000);
        assert_eq!(policy.admission.sized_entries(), 6_800);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "long stream: 200,000 requests, so that both paths get their turn"
    )]
    fn evict_one_same_victims_as_general_path() {
        // Skewed keys with a scan now and then, through an adaptive policy, so that the window
        // and protected bounds move and both paths get their turn.
        let mut rng = crate::random::SmallRng::new(11);
        let keys: Vec<u64> = (0..200_000u64)
            .map(|t| {
                if t % 20_000 < 2_000 {
                    1_000_000 + t
                } else {
                    let r = rng.next_u64() % 5_000;
                    r * r / 5_000
                }
            })
            .collect();
        let mut fast = WTinyLfu::new(300, Adaptation::Lead, false, Some(4), 1);
        let mut general = fast.clone();
        let (_, _, a) = replay_with(&mut fast, keys.iter().copied(), |p, evicted| {
            p.evict(evicted)
        });
        let (_, _, b) = replay_with(&mut general, keys, |p, evicted| {
            if p.weighted_size() > p.maximum() {
                p.segments.evict_general(&mut p.admission, evicted);
            }
        });
        fast.validate();
        general.validate();
        assert_eq!(fast.coldest(), general.coldest(), "queues differ");
        assert!(a.len() > 100_000, "{} evictions", a.len());
        // Most evictions take the single duel, some the general path, in the fast copy only.
        let single = fast.segments.single_duels;
        assert!(
            single > a.len() as u64 / 2 && single < a.len() as u64,
            "{single}"
        );
        assert_eq!(general.segments.single_duels, 0);
        assert_eq!(a, b);
        assert_eq!(fast.mode_code(), general.mode_code());
    }

    /// A static policy of `maximum` entries holding indices `0..=maximum` inserted in order,
    /// so that the oldest have left the window for the main space.
    fn full_static(maximum: u32) -> WTinyLfu {
        let mut p = WTinyLfu::new(u64::from(maximum), Adaptation::Static, false, Some(3), 1);
        let mut evicted = Vec::new();
        for i in 0..=maximum {
            p.insert(i, mix64(u64::from(i)), 1);
            p.evict(&mut evicted);
        }
        p
    }

    #[test]
    fn coldest_orders_by_frequency_then_queue_order() {
        let mut p = full_static(50);
        // Give some entries extra counts, a few of them the same number.
        let queued: Vec<u32> = p
            .segments
            .probation
            .iter(&p.segments.nodes)
            .chain(p.segments.window.iter(&p.segments.nodes))
            .chain(p.segments.protected.iter(&p.segments.nodes))
            .collect();
        for (k, &i) in queued.iter().enumerate().step_by(3) {
            let hash = u64::from(p.segments.hash_of(i));
            p.admission.record_many(hash, (k % 4 + 1) as u8);
        }
        let frequency = |i: u32| {
            p.admission
                .sketch
                .frequency(u64::from(p.segments.hash_of(i)))
        };
        let mut expected = queued.clone();
        expected.sort_by_key(|&i| frequency(i));
        let order = p.segments.coldest(&p.admission);
        assert_eq!(order, expected);
        assert!(order.windows(2).any(|w| frequency(w[0]) < frequency(w[1])));
    }

    #[test]
    fn fold_deferred_read_entry_at_probation_end_promoted_and_counted() {
        let mut p = full_static(20);
        let head = p.segments.front(Queue::Probation).unwrap();
        let hash = u64::from(p.segments.hash_of(head));
        let before = p.admission.sketch.frequency(hash);
        let mut pending = 3;
        // `take` semantics: the count is handed over once.
        p.fold_deferred(|i| {
            if i == head {
                std::mem::take(&mut pending)
            } else {
                0
            }
        });
        assert_eq!(p.segments.nodes[head as usize].queue, Queue::Protected);
        assert_eq!(p.admission.sketch.frequency(hash), before + 3);
        assert_ne!(p.segments.front(Queue::Probation), Some(head));
        p.validate();
    }

    #[test]
    fn fold_deferred_promotion_exposes_read_protected_end_folds_it() {
        let mut p = full_static(20);
        let probation = p.segments.probation.validate(&p.segments.nodes);
        // Fill protected (12 of the 19 main entries) behind probation's end.
        for &i in &probation[1..=12] {
            p.access(i);
        }
        assert_eq!(p.segments.protected_weight, p.segments.protected_max);
        let protected = p.segments.protected.validate(&p.segments.nodes);
        // Folding probation's end promotes it and demotes protected's unread end, which leaves
        // a read entry at protected's end: a second look must fold it.
        let (promoted, exposed) = (probation[0], protected[1]);
        let mut pending = std::collections::HashMap::from([(promoted, 2u8), (exposed, 2u8)]);
        p.fold_deferred(|i| pending.remove(&i).unwrap_or(0));
        assert!(pending.is_empty(), "reads left unfolded: {pending:?}");
        let after = p.segments.protected.validate(&p.segments.nodes);
        assert_eq!(after.last(), Some(&exposed));
        assert_ne!(after.first(), Some(&exposed));
        p.validate();
    }

    #[test]
    fn fold_all_counts_in_aging_twin_sketch_too() {
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(3), 1);
        let mut evicted = Vec::new();
        for i in 0..=100 {
            p.insert(i, mix64(u64::from(i)), 1);
            p.evict(&mut evicted);
        }
        let read = p
            .segments
            .front(Queue::Protected)
            .or(p.segments.front(Queue::Probation));
        let read = read.unwrap();
        let hash = u64::from(p.segments.hash_of(read));
        let experts = p.experts.as_ref().unwrap();
        let (before, alt_before) = (
            p.admission.sketch.frequency(hash),
            experts.alt_frequency(hash),
        );
        p.fold_all(|i| if i == read { 3 } else { 0 });
        assert_eq!(p.admission.sketch.frequency(hash), before + 3);
        let alt_after = p.experts.as_ref().unwrap().alt_frequency(hash);
        assert_eq!(alt_after, alt_before.map(|count| count + 3));
        assert!(alt_after.is_some());
    }

    #[test]
    fn fold_deferred_every_entry_read_moves_at_most_fold_limit() {
        let mut p = full_static(1_000);
        let mut moved = 0;
        p.fold_deferred(|_| {
            moved += 1;
            1
        });
        assert_eq!(moved, FOLD_LIMIT);
        p.validate();
    }

    #[test]
    fn fold_deferred_unread_ends_changes_nothing() {
        let mut p = full_static(50);
        let order = p.segments.coldest(&p.admission);
        p.fold_deferred(|_| 0);
        assert_eq!(p.segments.coldest(&p.admission), order);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "long stream: miniatures start at half of 100,000 entries"
    )]
    fn deferral_static_always_adaptive_sampled_once_sized() {
        assert_eq!(full_static(20).deferral(), Deferral::Always);
        let mut p = WTinyLfu::new(100_000, Adaptation::Lead, false, Some(1), 1);
        assert_eq!(
            p.deferral(),
            Deferral::Always,
            "no miniatures before half full"
        );
        for i in 0..50_000 {
            p.insert(i, mix64(u64::from(i)), 1);
        }
        let Deferral::Unsampled { mask } = p.deferral() else {
            panic!("a large adaptive cache samples: {:?}", p.deferral());
        };
        // Sampled keys are the ones the miniatures replay: never deferred.
        let sampled = (0..10_000u64)
            .filter(|&k| !p.deferral().defers(mix64(k)))
            .count();
        assert!(
            mask > 0 && sampled > 0 && sampled < 10_000,
            "{sampled} sampled"
        );
    }

    #[test]
    fn adopt_mode_code_carries_index_margin_and_aging() {
        let leader = WTinyLfu::new(100, Adaptation::Lead, false, Some(7), 1);
        let code = leader.mode_code().unwrap();
        assert_eq!(code, START_MODE as u8 | (START_MARGIN << 4));
        let mut follower = WTinyLfu::new(100, Adaptation::Follow, false, Some(7), 1);
        follower.size_for_capacity();
        let slow = follower.admission.sketch.sample_size();
        follower.adopt_mode(4);
        assert_eq!(follower.segments.mode, mode_of(4, 0));
        follower.adopt_mode(2 | 1 << 4);
        assert_eq!(follower.segments.mode, mode_of(2, 1));
        assert_eq!(follower.mode_code(), Some(2 | 1 << 4));
        follower.adopt_mode(2 | 1 << 4 | 1 << 5);
        assert!(follower.admission.fast_aging());
        assert!(follower.admission.sketch.sample_size() < slow);
        assert_eq!(follower.mode_code(), Some(2 | 1 << 4 | 1 << 5));
        // Codes naming no mode, or bits the experts never set, change nothing.
        follower.adopt_mode(MODES.len() as u8);
        follower.adopt_mode(1 | 1 << 6);
        assert_eq!(follower.segments.mode, mode_of(2, 1));
        assert!(follower.admission.fast_aging());
    }

    /// Hot sets of 90 keys that give way to new ones every 2,000 requests, every second request
    /// a one-hit wonder. A hot key recurs about every 180 requests, after the ghost has
    /// forgotten it, so it must win its duel; the old set's counts outlast it under the slow
    /// aging period (ties go to the victim) and shut the new set out until the next aging.
    fn shifting_hot_sets() -> impl Iterator<Item = u64> {
        (0..120_000u64).map(|j| {
            if j % 2 == 0 {
                1 << 40 | j
            } else {
                j / 2_000 * 1_000 + mix64(j) % 90
            }
        })
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: the climber decides over many samples")]
    fn adaptive_small_cache_shifting_hot_sets_takes_fast_aging() {
        let ratio = |fast| {
            let mut p = WTinyLfu::new(100, Adaptation::Static, false, Some(8), 1);
            p.admission.set_fast_aging(fast);
            let (hits, total) = replay(&mut p, shifting_hot_sets());
            hits as f64 / total as f64
        };
        let (slow, fast) = (ratio(false), ratio(true));
        assert!(fast > slow + 0.01, "fast {fast}, slow {slow}");
        let mut adaptive = WTinyLfu::new(100, Adaptation::Lead, false, Some(8), 1);
        replay(&mut adaptive, shifting_hot_sets());
        adaptive.validate();
        assert!(adaptive.admission.fast_aging());
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: the aging twin must win first")]
    fn set_maximum_grown_aging_switch_before_half_full_still_sizes_sketch() {
        // Full at 100 entries, then grown a thousandfold: the sizing waits until the cache is
        // half full of the new capacity. Meanwhile the miniatures (still those of 100 entries)
        // replay the shifting hot sets, where the aging twin wins and the sketches trade places.
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(8), 1);
        let mut map = std::collections::HashMap::new();
        let mut owner = std::collections::HashMap::new();
        let mut free: Vec<u32> = Vec::new();
        let mut next = 0u32;
        let mut evicted = Vec::new();
        let mut request = |p: &mut WTinyLfu, key: u64| {
            if let Some(&i) = map.get(&key) {
                p.access(i);
                return;
            }
            let i = free.pop().unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            map.insert(key, i);
            owner.insert(i, key);
            p.insert(i, mix64(key), 1);
            p.evict(&mut evicted);
            for j in evicted.drain(..) {
                map.remove(&owner.remove(&j).unwrap());
                free.push(j);
            }
        };
        let mut keys = shifting_hot_sets();
        for key in keys.by_ref().take(1_000) {
            request(&mut p, key);
        }
        assert!(p.admission.is_sized() && !p.admission.fast_aging());
        let maximum = 200_000;
        p.set_maximum(maximum);
        assert!(!p.admission.is_sized(), "sizing deferred");
        for key in keys {
            request(&mut p, key);
        }
        assert!(p.admission.fast_aging(), "the aging twin took over");
        assert!(p.weighted_size() < maximum / 2);
        assert!(!p.admission.is_sized(), "sized before half full");
        // Half full of the new capacity: the sketch is sized for it now.
        for key in (1 << 50..).take((maximum / 2) as usize) {
            request(&mut p, key);
        }
        assert!(p.admission.is_sized());
        assert_eq!(
            p.admission.sketch.sample_size(),
            maximum as usize * crate::sketch::SAMPLE_FACTOR
        );
        p.validate();
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: the climber decides over many samples")]
    fn adaptive_small_cache_long_loop_keeps_slow_aging() {
        // A loop of 1,000 keys through 50 slots: fast aging (every 500 increments) forgets
        // every count before its key comes round again, and the cache hits nothing.
        let loop_keys = || (0..200_000u64).map(|i| i % 1_000);
        let mut fast = WTinyLfu::new(50, Adaptation::Static, false, Some(9), 1);
        fast.admission.set_fast_aging(true);
        assert_eq!(replay(&mut fast, loop_keys()).0, 0);
        let mut adaptive = WTinyLfu::new(50, Adaptation::Lead, false, Some(9), 1);
        let (hits, total) = replay(&mut adaptive, loop_keys());
        assert!(!adaptive.admission.fast_aging());
        assert!(hits as f64 / total as f64 > 0.04, "{hits} of {total}");
    }

    #[test]
    fn evict_over_capacity_keeps_bound_and_validates() {
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(1), 1);
        let requests = if cfg!(miri) { 200 } else { 10_000 };
        replay(&mut p, (0..requests).map(|i| mix64(i) % 500));
        assert_eq!(p.weighted_size(), 100);
        assert_eq!(p.validate().len(), 100);
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: a hit ratio over 200,000 requests")]
    fn loop_longer_than_capacity_gets_hits() {
        // LRU gets nothing on a loop of 1,000 keys through 500 slots; frequency keeps a stable set.
        let mut p = WTinyLfu::new(500, Adaptation::Lead, false, Some(2), 1);
        let (hits, total) = replay(&mut p, (0..200_000u64).map(|i| i % 1000));
        let ratio = hits as f64 / total as f64;
        assert!(ratio > 0.40, "hit ratio {ratio}");
    }

    #[test]
    fn remove_then_insert_reuses_index() {
        let mut p = WTinyLfu::new(10, Adaptation::Static, true, Some(3), 1);
        p.insert(0, 1, 1);
        p.remove(0);
        p.insert(0, 2, 1);
        assert_eq!(p.validate(), vec![0]);
    }

    #[test]
    fn insert_heavier_than_maximum_evicted_at_once() {
        let mut p = WTinyLfu::new(10, Adaptation::Static, true, Some(4), 1);
        p.insert(0, 1, 3);
        p.insert(1, 2, 11);
        let mut evicted = Vec::new();
        p.evict(&mut evicted);
        assert_eq!(evicted, vec![1]);
        assert_eq!(p.weighted_size(), 3);
    }

    /// Every key is requested twice, 150 first-requests apart (about 300 distinct keys between
    /// the two uses): only a window of a few hundred entries catches the second use.
    fn short_reuse(n: u64) -> impl Iterator<Item = u64> {
        (0..n).flat_map(|t| std::iter::once(t).chain((t >= 150).then(|| t - 150)))
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: the climber decides over many samples")]
    fn adaptive_short_reuse_grows_window_and_hits() {
        let mut adaptive = WTinyLfu::new(1000, Adaptation::Lead, false, Some(5), 1);
        let (hits, total) = replay(&mut adaptive, short_reuse(200_000));
        adaptive.validate();
        assert!(
            adaptive.window_maximum() >= 300,
            "window {}",
            adaptive.window_maximum()
        );
        // Every second request can hit; a 1% window catches almost none of them.
        assert!(
            hits as f64 / total as f64 > 0.45,
            "adaptive hit ratio {}",
            hits as f64 / total as f64
        );
    }
}
