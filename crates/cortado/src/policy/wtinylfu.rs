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
//!   a hit in probation promotes to *protected*, which may hold up to [`PROTECTED_SHARE`] (65%) of
//!   the main space; the overflow of protected is demoted back to probation's MRU end. Caffeine
//!   gives protected 80%. A smaller share leaves more of the main space to probation, where a
//!   key that was hot once but is no longer reused is evicted sooner. Measured on the
//!   simulator's 84 reference cells (seeds default, 1 and 2), 65% against 80%: mean 42.20 /
//!   42.17 / 42.18% against 42.19 / 42.16 / 42.17%, cells within a point of the best reference
//!   74 / 74 / 74 against 73 / 74 / 74, worst cell -2.41 / -2.93 / -2.56 against -2.71 / -2.94
//!   / -2.90; a drifting Zipf stream (`cortado-sim gen --dist drift+zipf:0.99 --keys 100000
//!   --requests 1000000`, the peer benchmark's seed) gained 0.5, 0.9 and 0.1 points at 1,000,
//!   10,000 and 50,000 entries. 50% did better on that stream (another 0.05-0.3 points) but
//!   worse on the cells (mean 42.15 / 42.10 / 42.10%), as did a twin miniature choosing between
//!   50% and 80% per workload (42.17 / 42.12 / 42.12%).
//! - **Eviction.** When over capacity, window entries past the window's maximum move to probation
//!   as candidates; then each candidate duels the probation LRU victim through
//!   [`Admission`](super::admission) and the loser is evicted. Once candidates run out the victims
//!   come from probation, then protected, then the window. The steady state of an unweighted
//!   cache, one entry over with the window one over its own bound, is a single duel, which
//!   `Segments::evict_one` does without the general loops (2% of the instructions of the peer
//!   benchmark's workload A, replayed by its `replay` binary).
//! - **Returning candidates.** Rejected candidates are remembered in a [`Ghost`] of [`GHOST_SHARE`]
//!   (all of) the capacity; one that comes back while remembered has a short reuse distance and is
//!   admitted without a duel. On the simulator's 84 reference cells a ghost of half the capacity
//!   raised the mean hit ratio of a fixed 10% window from 40.86% to 41.38%. With the adaptive modes
//!   (before the adaptive aging period), a ghost of the whole capacity instead of half raised the
//!   mean from 42.20 / 42.17 / 42.18% to 42.28 / 42.25 / 42.26% (seeds default, 1 and 2) and the
//!   cells within a point of the best reference from 74 to 78 / 76 / 76; the large traces
//!   (`cloudphysics-io`, `p3` and `multi2` at 10-25% of their keys) gained up to 1.9 points, while
//!   small caches lost up to 1.5 (`cpp` at 5%). 0.75 and 1.25 did worse on the mean or the worst
//!   cell (42.23 / 42.21 / 42.21%; worst -3.08 / -3.45 / -4.06), and 2 lost 4.4 points on `gli` at
//!   25%. The cost: a second byte per entry.
//! - **Modes.** A [`Mode`] sets the window's share of the capacity and how lenient and how strict
//!   admission is (the margin a candidate must win by).
//!   [`EvictionPolicy::tiny_lfu`](super::EvictionPolicy::tiny_lfu) lets [`Experts`] pick the mode
//!   from miniature copies of the cache; the static variant keeps [`STATIC_MODE`] (a 1% window).
//!   A mode change moves the bounds at once and lets entries follow lazily: the window's overflow
//!   becomes admission candidates on the next eviction and protected's overflow is demoted, at
//!   most [`QUEUE_TRANSFER_LIMIT`] entries at the change and at each later promotion, so a large
//!   change never stalls one call. An overflow past that limit (the step from the segmented LRU
//!   to LRU in a cache of over about 1,550 entries) waits for promotions: demoting it at every
//!   eviction as well cost the 84 reference cells 0.003 points (`p3` at 190,636 entries 0.19),
//!   since the entries it keeps protected are the frequent ones.
//! - **Weights.** Every bound is in weight units; an entry heavier than the whole capacity is
//!   evicted at once, one heavier than the window enters at the window's LRU end so it is judged
//!   right away.
//!
//! # References
//!
//! 1. G. Einziger, R. Friedman, B. Manes: "TinyLFU: A Highly Efficient Cache Admission Policy",
//!    ACM Transactions on Storage, 2017.
//! 2. G. Einziger, O. Eytan, R. Friedman, B. Manes: "Adaptive Software Cache Management",
//!    Middleware 2018.
//! 3. B. Manes: Caffeine's `BoundedLocalCache` (eviction).

use super::admission::Admission;
use super::deque::{impl_linked, Deque, NIL};
use super::experts::{mode_of, Experts, MODES, START_MARGIN, START_MODE};
use super::ghost::Ghost;
use super::Deferral;
use crate::sketch::MAX_COUNT;

/// Share of the main space that protected may hold.
pub const PROTECTED_SHARE: f64 = 0.65;
/// Most deferred reads of one entry counted at once (a sketch counter's ceiling).
pub const MAX_DEFERRED: u8 = 15;
/// Most entries moved between queues by one operation while bounds change.
pub const QUEUE_TRANSFER_LIMIT: usize = 1_000;
/// Rejected candidates remembered, as a share of the capacity in entries.
pub const GHOST_SHARE: f64 = 1.0;

/// How the policy splits its capacity and admits candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mode {
    /// The window's share of the capacity, in [0, 1].
    pub(crate) window: f64,
    /// Candidates at least this frequent are admitted without a duel (0: never).
    pub(crate) lenient: u8,
    /// Whether returning candidates (in the ghost) are admitted without a duel.
    pub(crate) ghost: bool,
    /// How many more times than the victim a candidate must have been seen to win a duel,
    /// less one (0: any more often wins).
    pub(crate) margin: u8,
}

/// The static policy's mode: Caffeine's 1% window and strict admission.
pub(crate) const STATIC_MODE: Mode = Mode {
    window: 0.01,
    lenient: 0,
    ghost: true,
    margin: 0,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    None,
    Window,
    Probation,
    Protected,
}

/// 16 bytes: the links, the key's hash folded to 32 bits (what the sketch, the ghost and the
/// experts key on), and two tags. Weights live apart, only in weighted caches.
#[derive(Debug, Clone, Copy)]
struct Node {
    prev: u32,
    next: u32,
    hash: u32,
    queue: Queue,
    /// Turned away recently (found in the ghost when inserted).
    returning: bool,
}
impl_linked!(Node);

const EMPTY: Node = Node {
    prev: NIL,
    next: NIL,
    hash: 0,
    queue: Queue::None,
    returning: false,
};

/// Folds a 64-bit key hash into the 32 bits a node keeps. Two keys collide with probability
/// 2^-32, and a collision only merges their frequency counts.
#[inline]
pub(crate) fn fold_hash(hash: u64) -> u32 {
    (hash ^ (hash >> 32)) as u32
}

/// The queues, bounds and ghost of one W-TinyLFU cache, without the sketch: the real policy and
/// its miniature copies in [`Experts`] share this code and consult one sketch.
#[derive(Debug, Clone)]
pub(crate) struct Segments {
    nodes: Vec<Node>,
    /// Entry weights by index, only in weighted caches (otherwise every weight is 1).
    weights: Vec<u32>,
    weighted: bool,
    window: Deque,
    probation: Deque,
    protected: Deque,
    maximum: u64,
    window_max: u64,
    protected_max: u64,
    weighted_size: u64,
    window_weight: u64,
    protected_weight: u64,
    pub(super) mode: Mode,
    ghost: Ghost,
    /// Evictions done by [`evict_one`](Self::evict_one), for tests.
    #[cfg(test)]
    single_duels: u64,
}

impl Segments {
    pub(crate) fn new(maximum: u64, mode: Mode, weighted: bool) -> Self {
        let mut segments = Self {
            nodes: Vec::new(),
            weights: Vec::new(),
            weighted,
            window: Deque::default(),
            probation: Deque::default(),
            protected: Deque::default(),
            maximum: 0,
            window_max: 0,
            protected_max: 0,
            weighted_size: 0,
            window_weight: 0,
            protected_weight: 0,
            mode,
            ghost: Ghost::default(),
            #[cfg(test)]
            single_duels: 0,
        };
        segments.set_maximum(maximum);
        segments
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.maximum
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.weighted_size
    }

    pub(crate) fn len(&self) -> usize {
        self.window.len() + self.probation.len() + self.protected.len()
    }

    /// Sizes the ghost for a cache of `entries` entries.
    pub(crate) fn size_ghost(&mut self, entries: usize) {
        self.ghost
            .set_capacity((entries as f64 * GHOST_SHARE) as usize);
    }

    /// Resets the bounds for a new capacity (eviction happens on the next `evict`).
    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.maximum = maximum;
        self.apply_mode();
    }

    /// Switches to `mode`: the bounds move now, entries follow lazily.
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        self.apply_mode();
    }

    fn apply_mode(&mut self) {
        let main = (self.maximum as f64 * (1.0 - self.mode.window)) as u64;
        self.window_max = self.maximum - main.min(self.maximum);
        self.protected_max = (main as f64 * PROTECTED_SHARE) as u64;
        self.demote_from_protected();
    }

    /// Grows the node array so that `i` is a valid index.
    #[inline]
    fn ensure_node(&mut self, i: u32) {
        if i as usize >= self.nodes.len() {
            let len = (i as usize + 1).max(self.nodes.len() * 2).max(16);
            self.resize_nodes(len);
        }
    }

    fn resize_nodes(&mut self, len: usize) {
        self.nodes
            .reserve_exact(len.saturating_sub(self.nodes.len()));
        self.nodes.resize(len, EMPTY);
        if self.weighted {
            self.weights
                .reserve_exact(len.saturating_sub(self.weights.len()));
            self.weights.resize(len, 0);
        }
    }

    /// Reserves node storage for `entries` entries.
    pub(crate) fn reserve(&mut self, entries: usize) {
        if entries > self.nodes.len() {
            self.resize_nodes(entries);
        }
    }

    /// The weight of the entry at `i`.
    #[inline]
    fn weight(&self, i: u32) -> u64 {
        if self.weighted {
            u64::from(self.weights[i as usize])
        } else {
            1
        }
    }

    /// Inserts the entry at `i` with its folded hash (see [`fold_hash`]) and weight (1 unless
    /// the cache is weighted).
    pub(crate) fn insert(&mut self, i: u32, hash: u32, weight: u32) {
        self.ensure_node(i);
        if self.weighted {
            self.weights[i as usize] = weight;
        }
        let weight = self.weight(i);
        self.weighted_size += weight;
        self.window_weight += weight;
        let returning = self.ghost.contains(u64::from(hash));
        let node = &mut self.nodes[i as usize];
        debug_assert_eq!(node.queue, Queue::None, "node {i} inserted twice");
        *node = Node {
            queue: Queue::Window,
            returning,
            hash,
            ..EMPTY
        };
        if weight > self.window_max {
            self.window.push_front(&mut self.nodes, i);
        } else {
            self.window.push_back(&mut self.nodes, i);
        }
    }

    /// The entry at the eviction end of `queue`.
    #[inline]
    fn front(&self, queue: Queue) -> Option<u32> {
        match queue {
            Queue::Window => self.window.front(),
            Queue::Probation => self.probation.front(),
            Queue::Protected => self.protected.front(),
            Queue::None => None,
        }
    }

    /// The folded hash of the entry at `i` (or of the last one there, after its removal).
    #[inline]
    pub(crate) fn hash_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].hash
    }

    /// Loads the list neighbours of node `i`, which moving it to a queue's end rewrites, and
    /// returns its hash (see [`WTinyLfu::access_batch`]).
    #[inline]
    fn prefetch_neighbours(&self, i: u32) -> u32 {
        let node = self.nodes[i as usize];
        for j in [node.prev, node.next] {
            if let Some(neighbour) = self.nodes.get(j as usize) {
                std::hint::black_box(neighbour.hash);
            }
        }
        node.hash
    }

    pub(crate) fn access(&mut self, i: u32) {
        match self.nodes[i as usize].queue {
            Queue::Window => self.window.move_to_back(&mut self.nodes, i),
            Queue::Probation => self.promote(i),
            Queue::Protected => self.protected.move_to_back(&mut self.nodes, i),
            Queue::None => debug_assert!(false, "access to absent node {i}"),
        }
    }

    /// Moves a probation entry to protected, demoting protected's overflow.
    fn promote(&mut self, i: u32) {
        self.probation.unlink(&mut self.nodes, i);
        self.protected.push_back(&mut self.nodes, i);
        self.nodes[i as usize].queue = Queue::Protected;
        self.protected_weight += self.weight(i);
        self.demote_from_protected();
    }

    /// Demotes protected's overflow, if any (the test inline: two promotions in three of the
    /// peer benchmark's workload A find protected within its bound, and skip the call).
    #[inline]
    fn demote_from_protected(&mut self) {
        if self.protected_weight > self.protected_max {
            self.demote_overflow();
        }
    }

    #[inline(never)]
    fn demote_overflow(&mut self) {
        for _ in 0..QUEUE_TRANSFER_LIMIT {
            if self.protected_weight <= self.protected_max {
                break;
            }
            let Some(i) = self.protected.front() else {
                break;
            };
            self.protected.unlink(&mut self.nodes, i);
            self.probation.push_back(&mut self.nodes, i);
            self.nodes[i as usize].queue = Queue::Probation;
            self.protected_weight -= self.weight(i);
        }
    }

    /// A value was replaced: the entry may change weight (the caller records the use).
    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        if self.weighted {
            let old = u64::from(self.weights[i as usize]);
            let new = u64::from(weight);
            self.weights[i as usize] = weight;
            self.weighted_size = self.weighted_size - old + new;
            match self.nodes[i as usize].queue {
                Queue::Window => self.window_weight = self.window_weight - old + new,
                Queue::Protected => self.protected_weight = self.protected_weight - old + new,
                _ => {}
            }
        }
        self.access(i);
    }

    pub(crate) fn remove(&mut self, i: u32) {
        let weight = self.weight(i);
        match self.nodes[i as usize].queue {
            Queue::Window => {
                self.window.unlink(&mut self.nodes, i);
                self.window_weight -= weight;
            }
            Queue::Probation => self.probation.unlink(&mut self.nodes, i),
            Queue::Protected => {
                self.protected.unlink(&mut self.nodes, i);
                self.protected_weight -= weight;
            }
            Queue::None => {
                debug_assert!(false, "removal of absent node {i}");
                return;
            }
        }
        self.weighted_size -= weight;
        // The hash stays until the slot is reused (the experts' index looks it up).
        self.nodes[i as usize].queue = Queue::None;
    }

    /// Evicts until the weighted size fits the maximum, pushing each victim's index.
    pub(crate) fn evict(&mut self, admission: &mut Admission, evicted: &mut Vec<u32>) {
        if self.weighted_size > self.maximum && !self.evict_one(admission, evicted) {
            self.evict_general(admission, evicted);
        }
    }

    /// The eviction of any state: the window's overflow moves to probation, then candidates
    /// duel victims until the size fits ([`evict`](Self::evict) without
    /// [`evict_one`](Self::evict_one)'s shortcut; the tests compare the two).
    fn evict_general(&mut self, admission: &mut Admission, evicted: &mut Vec<u32>) {
        let candidate = self.evict_from_window();
        self.evict_from_main(candidate, admission, evicted);
    }

    /// The steady state of an unweighted cache, one insert over the maximum with the window
    /// one over its own: the window's oldest entry moves to probation and duels probation's
    /// oldest, as [`evict_from_window`](Self::evict_from_window) and
    /// [`evict_from_main`](Self::evict_from_main) would do it, without their loops. False,
    /// having changed nothing, in any other state.
    ///
    /// The duel comes first: a candidate that loses leaves from the window directly. Moved to
    /// probation's MRU end and unlinked from there at once, as the general path does it, it
    /// left every queue as this does, after two more list updates (the common case: 89% of
    /// the duels of the peer benchmark's workload A).
    fn evict_one(&mut self, admission: &mut Admission, evicted: &mut Vec<u32>) -> bool {
        if self.weighted
            || self.maximum == 0
            || self.weighted_size != self.maximum + 1
            || self.window_weight != self.window_max + 1
        {
            return false;
        }
        let (Some(candidate), Some(victim)) = (self.window.front(), self.probation.front()) else {
            return false;
        };
        if self.duel(admission, candidate, victim) {
            self.window_to_probation(candidate);
            self.discard(victim, false, evicted);
        } else {
            self.discard(candidate, true, evicted);
        }
        #[cfg(test)]
        {
            self.single_duels += 1;
        }
        true
    }

    /// Moves the window's overflow to probation; returns the first moved entry.
    fn evict_from_window(&mut self) -> u32 {
        let mut first = NIL;
        for _ in 0..QUEUE_TRANSFER_LIMIT {
            if self.window_weight <= self.window_max {
                break;
            }
            let Some(i) = self.window.front() else {
                break;
            };
            self.window_to_probation(i);
            if first == NIL {
                first = i;
            }
        }
        first
    }

    /// Whether `candidate` wins its duel against `victim` under the current mode.
    #[inline(always)]
    fn duel(&self, admission: &mut Admission, candidate: u32, victim: u32) -> bool {
        let (c, v) = (self.nodes[candidate as usize], self.nodes[victim as usize]);
        admission.admit(
            u64::from(c.hash),
            u64::from(v.hash),
            c.returning && self.mode.ghost,
            self.mode.lenient,
            self.mode.margin,
        )
    }

    /// Moves the window entry `i` to probation's MRU end, as a candidate.
    #[inline(always)]
    fn window_to_probation(&mut self, i: u32) {
        self.window.unlink(&mut self.nodes, i);
        self.probation.push_back(&mut self.nodes, i);
        self.nodes[i as usize].queue = Queue::Probation;
        self.window_weight -= self.weight(i);
    }

    /// Evicts the entry at `i`, remembering it in the ghost if it was a candidate turned away.
    #[inline(always)]
    fn discard(&mut self, i: u32, rejected: bool, evicted: &mut Vec<u32>) {
        if rejected {
            self.ghost.insert(u64::from(self.nodes[i as usize].hash));
        }
        self.remove(i);
        evicted.push(i);
    }

    /// Candidates (from `candidate` towards probation's MRU end, then the window) duel the
    /// victims (probation's LRU end, then protected, then the window) until the size fits.
    fn evict_from_main(
        &mut self,
        mut candidate: u32,
        admission: &mut Admission,
        evicted: &mut Vec<u32>,
    ) {
        let mut victim_queue = Queue::Probation;
        let mut candidate_queue = Queue::Probation;
        let mut victim = self.probation.front().unwrap_or(NIL);
        while self.weighted_size > self.maximum {
            if candidate == NIL && candidate_queue == Queue::Probation {
                candidate = self.window.front().unwrap_or(NIL);
                candidate_queue = Queue::Window;
            }
            if candidate == NIL && victim == NIL {
                match victim_queue {
                    Queue::Probation => {
                        victim = self.protected.front().unwrap_or(NIL);
                        victim_queue = Queue::Protected;
                        continue;
                    }
                    Queue::Protected => {
                        victim = self.window.front().unwrap_or(NIL);
                        victim_queue = Queue::Window;
                        continue;
                    }
                    _ => break,
                }
            }
            let evict;
            let mut rejected = false;
            if victim == NIL {
                evict = candidate;
                candidate = self.nodes[candidate as usize].next;
                rejected = true;
            } else if candidate == NIL {
                evict = victim;
                victim = self.nodes[victim as usize].next;
            } else if candidate == victim {
                evict = candidate;
                victim = self.nodes[victim as usize].next;
                candidate = NIL;
            } else if self.weight(candidate) > self.maximum {
                evict = candidate;
                candidate = self.nodes[candidate as usize].next;
            } else {
                let (c_next, v_next) = (
                    self.nodes[candidate as usize].next,
                    self.nodes[victim as usize].next,
                );
                if self.duel(admission, candidate, victim) {
                    evict = victim;
                    victim = v_next;
                } else {
                    evict = candidate;
                    rejected = true;
                }
                candidate = c_next;
            }
            // Advancing past `evict` above keeps both cursors valid after its removal, except
            // when one cursor had moved onto the other's node; recheck that case.
            if victim == evict {
                victim = self.nodes[evict as usize].next;
            }
            if candidate == evict {
                candidate = self.nodes[evict as usize].next;
            }
            self.discard(evict, rejected, evicted);
        }
    }

    /// The current window bound, for introspection and tests.
    pub(crate) fn window_maximum(&self) -> u64 {
        self.window_max
    }

    /// Indices from most to least likely to be evicted: probation, window, then protected,
    /// each from its LRU end, stably ordered by sketch frequency. A counting sort: frequencies
    /// are 0 to 15, and each is looked up once (as a comparison sort's key, it was looked up at
    /// every comparison, most of the cost of a shard's first fill).
    pub(crate) fn coldest(&self, admission: &Admission) -> Vec<u32> {
        let keyed: Vec<(u8, u32)> = self
            .probation
            .iter(&self.nodes)
            .chain(self.window.iter(&self.nodes))
            .chain(self.protected.iter(&self.nodes))
            .map(|i| {
                let hash = u64::from(self.nodes[i as usize].hash);
                (admission.sketch.frequency(hash), i)
            })
            .collect();
        let mut starts = [0usize; MAX_COUNT as usize + 2];
        for &(frequency, _) in &keyed {
            starts[usize::from(frequency) + 1] += 1;
        }
        for f in 1..starts.len() {
            starts[f] += starts[f - 1];
        }
        let mut order = vec![NIL; keyed.len()];
        for (frequency, i) in keyed {
            let at = &mut starts[usize::from(frequency)];
            order[*at] = i;
            *at += 1;
        }
        order
    }

    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.window.clear();
        self.probation.clear();
        self.protected.clear();
        self.ghost.clear();
        self.weighted_size = 0;
        self.window_weight = 0;
        self.protected_weight = 0;
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.weight(i) as u32
    }

    /// Heap bytes of the nodes, the weights and the ghost.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.weights.capacity() * 4
            + self.ghost.memory_bytes()
    }

    /// Panics unless the queues, tags and weights agree; returns every linked index.
    pub(crate) fn validate(&self) -> Vec<u32> {
        let mut all = Vec::new();
        let mut sum = |deque: &Deque, queue: Queue| {
            let members = deque.validate(&self.nodes);
            let mut weight = 0;
            for &i in &members {
                assert_eq!(
                    self.nodes[i as usize].queue, queue,
                    "node {i} in wrong queue"
                );
                weight += self.weight(i);
            }
            all.extend_from_slice(&members);
            weight
        };
        let window = sum(&self.window, Queue::Window);
        let probation = sum(&self.probation, Queue::Probation);
        let protected = sum(&self.protected, Queue::Protected);
        assert_eq!(window, self.window_weight, "window weight");
        assert_eq!(protected, self.protected_weight, "protected weight");
        assert_eq!(
            window + probation + protected,
            self.weighted_size,
            "weighted size"
        );
        assert!(
            self.window_max + self.protected_max <= self.maximum,
            "window and protected bounds exceed the maximum"
        );
        let tagged = self.nodes.iter().filter(|n| n.queue != Queue::None).count();
        assert_eq!(tagged, all.len(), "tagged nodes outside every queue");
        all
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
    ) -> Self {
        let mode = match adaptation {
            Adaptation::Static => STATIC_MODE,
            Adaptation::Lead | Adaptation::Follow => mode_of(START_MODE, START_MARGIN),
        };
        Self {
            segments: Segments::new(maximum, mode, weighted),
            admission: Admission::new(seed),
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
        self.segments.size_ghost(entries);
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

    /// Inline, so that [`access_batch`](Self::access_batch) keeps it inlined now that
    /// [`consult_experts`](Self::consult_experts) is small (out of line it cost workload B
    /// 0.1% more instructions).
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
        let mut budget = super::FOLD_LIMIT;
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
    /// test the option here, inline, and skip the call, whose register saves had cost every
    /// insert about 16 instructions.
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
        let mut fast = WTinyLfu::new(300, Adaptation::Lead, false, Some(4));
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
        let mut p = WTinyLfu::new(u64::from(maximum), Adaptation::Static, false, Some(3));
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
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(3));
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
        assert_eq!(moved, crate::policy::FOLD_LIMIT);
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
        let mut p = WTinyLfu::new(100_000, Adaptation::Lead, false, Some(1));
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
        let leader = WTinyLfu::new(100, Adaptation::Lead, false, Some(7));
        let code = leader.mode_code().unwrap();
        assert_eq!(code, START_MODE as u8 | (START_MARGIN << 4));
        let mut follower = WTinyLfu::new(100, Adaptation::Follow, false, Some(7));
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
            let mut p = WTinyLfu::new(100, Adaptation::Static, false, Some(8));
            p.admission.set_fast_aging(fast);
            let (hits, total) = replay(&mut p, shifting_hot_sets());
            hits as f64 / total as f64
        };
        let (slow, fast) = (ratio(false), ratio(true));
        assert!(fast > slow + 0.01, "fast {fast}, slow {slow}");
        let mut adaptive = WTinyLfu::new(100, Adaptation::Lead, false, Some(8));
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
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(8));
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
        let mut fast = WTinyLfu::new(50, Adaptation::Static, false, Some(9));
        fast.admission.set_fast_aging(true);
        assert_eq!(replay(&mut fast, loop_keys()).0, 0);
        let mut adaptive = WTinyLfu::new(50, Adaptation::Lead, false, Some(9));
        let (hits, total) = replay(&mut adaptive, loop_keys());
        assert!(!adaptive.admission.fast_aging());
        assert!(hits as f64 / total as f64 > 0.04, "{hits} of {total}");
    }

    #[test]
    fn evict_over_capacity_keeps_bound_and_validates() {
        let mut p = WTinyLfu::new(100, Adaptation::Lead, false, Some(1));
        let requests = if cfg!(miri) { 200 } else { 10_000 };
        replay(&mut p, (0..requests).map(|i| mix64(i) % 500));
        assert_eq!(p.weighted_size(), 100);
        assert_eq!(p.validate().len(), 100);
    }

    #[test]
    #[cfg_attr(miri, ignore = "long stream: a hit ratio over 200,000 requests")]
    fn loop_longer_than_capacity_gets_hits() {
        // LRU gets nothing on a loop of 1,000 keys through 500 slots; frequency keeps a stable set.
        let mut p = WTinyLfu::new(500, Adaptation::Lead, false, Some(2));
        let (hits, total) = replay(&mut p, (0..200_000u64).map(|i| i % 1000));
        let ratio = hits as f64 / total as f64;
        assert!(ratio > 0.40, "hit ratio {ratio}");
    }

    #[test]
    fn remove_then_insert_reuses_index() {
        let mut p = WTinyLfu::new(10, Adaptation::Static, true, Some(3));
        p.insert(0, 1, 1);
        p.remove(0);
        p.insert(0, 2, 1);
        assert_eq!(p.validate(), vec![0]);
    }

    #[test]
    fn insert_heavier_than_maximum_evicted_at_once() {
        let mut p = WTinyLfu::new(10, Adaptation::Static, true, Some(4));
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
        let mut adaptive = WTinyLfu::new(1000, Adaptation::Lead, false, Some(5));
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

    #[test]
    fn set_mode_shrinking_window_moves_overflow_lazily() {
        let mut p = Segments::new(
            100,
            Mode {
                window: 0.5,
                ..STATIC_MODE
            },
            false,
        );
        let mut admission = Admission::new(Some(6));
        admission.ensure_capacity(100);
        let mut evicted = Vec::new();
        // Past the capacity, so the window holds exactly its half.
        for i in 0..150u32 {
            p.insert(i, fold_hash(mix64(u64::from(i))), 1);
            p.evict(&mut admission, &mut evicted);
            for j in evicted.drain(..) {
                assert!(j < i, "evicted {j} at {i}");
            }
        }
        assert_eq!(p.window_maximum(), 50);
        assert_eq!(p.window.len(), 50);
        p.set_mode(STATIC_MODE);
        assert_eq!(p.window_maximum(), 1);
        // Nothing moved yet; the next insertion's eviction moves the window's overflow.
        assert_eq!(p.window.len(), 50);
        p.insert(150, fold_hash(mix64(150)), 1);
        p.evict(&mut admission, &mut evicted);
        assert_eq!(p.window.len(), 1);
        assert_eq!(p.weighted_size(), 100);
        p.validate();
    }

    #[test]
    fn evict_returning_candidate_admitted_over_hot_victim() {
        let mut p = Segments::new(10, STATIC_MODE, false);
        p.size_ghost(10);
        let mut admission = Admission::new(Some(7));
        admission.ensure_capacity(10);
        let mut evicted = Vec::new();
        for i in 0..10u32 {
            let hash = fold_hash(mix64(u64::from(i)));
            for _ in 0..10 {
                admission.record(u64::from(hash));
            }
            p.insert(i, hash, 1);
            p.evict(&mut admission, &mut evicted);
        }
        // A cold newcomer loses to the hot residents and is remembered as rejected...
        let cold = fold_hash(mix64(1_000));
        admission.record(u64::from(cold));
        p.insert(10, cold, 1);
        p.evict(&mut admission, &mut evicted);
        p.insert(11, fold_hash(mix64(1_001)), 1);
        p.evict(&mut admission, &mut evicted);
        assert!(evicted.contains(&10), "evicted {evicted:?}");
        // ...so when it comes back it is admitted without a duel.
        evicted.clear();
        p.insert(10, cold, 1);
        p.insert(12, fold_hash(mix64(1_002)), 1);
        p.evict(&mut admission, &mut evicted);
        assert!(!evicted.contains(&10), "evicted {evicted:?}");
        p.validate();
    }
}
