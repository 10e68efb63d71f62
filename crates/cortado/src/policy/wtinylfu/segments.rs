//! The queues, bounds and ghost of one W-TinyLFU cache: the window, probation and protected
//! [`Deque`]s over one node array, their weights and bounds, and the eviction that moves entries
//! between them. The real policy and its miniatures (see [`Experts`](super::experts::Experts))
//! both run this code.

use super::mode::Mode;
use crate::policy::admission::Admission;
use crate::policy::deque::{impl_linked, Deque, NIL};
use crate::policy::ghost::Ghost;
use crate::sketch::MAX_COUNT;

/// Share of the main space that protected may hold: less than Caffeine's 80%, so that a key
/// no longer reused leaves probation sooner (see `docs/decisions/0100-protected-share.md`).
pub const PROTECTED_SHARE: f64 = 0.65;
/// Most entries moved between queues by one operation while bounds change, so that a large
/// mode change never stalls one call (see `docs/decisions/0104-lazy-mode-change.md`).
pub const QUEUE_TRANSFER_LIMIT: usize = 1_000;
/// Rejected candidates remembered, as a share of the capacity in entries: all of it, which
/// did better than half on the reference traces (see `docs/decisions/0101-ghost-admission.md`).
pub const GHOST_SHARE: f64 = 1.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Queue {
    None,
    Window,
    Probation,
    Protected,
}

/// 16 bytes: the links, the key's hash folded to 32 bits (what the sketch, the ghost and the
/// experts key on), and two tags. Weights live apart, only in weighted caches.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    prev: u32,
    next: u32,
    hash: u32,
    pub(super) queue: Queue,
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
/// its miniature copies in [`Experts`](super::experts::Experts) share this code and consult one
/// sketch.
#[derive(Debug, Clone)]
pub(crate) struct Segments {
    pub(super) nodes: Vec<Node>,
    /// Entry weights by index, only in weighted caches (otherwise every weight is 1).
    weights: Vec<u32>,
    weighted: bool,
    pub(super) window: Deque,
    pub(super) probation: Deque,
    pub(super) protected: Deque,
    maximum: u64,
    window_max: u64,
    /// The heaviest entry the window keeps as its newest, past `window_max`: the window bound
    /// of the whole capacity that this policy's maximum is a share of
    /// ([`set_allowance`](Self::set_allowance)), so that a shard judges at once only the
    /// entries the whole cache, unsharded, would; `window_max` itself otherwise.
    window_keep: u64,
    /// The whole capacity this policy's maximum is a share of (the maximum, unless shared).
    shared_maximum: u64,
    /// The entry inserted last: the one the window may keep past its bound (`window_keep`).
    /// Not cleared when it is removed: only window entries are compared with it, and its slot
    /// joins the window again only through an insert, which sets it.
    newest: u32,
    pub(super) protected_max: u64,
    weighted_size: u64,
    window_weight: u64,
    pub(super) protected_weight: u64,
    pub(super) mode: Mode,
    ghost: Ghost,
    /// Evictions done by [`evict_one`](Self::evict_one), for tests.
    #[cfg(test)]
    pub(super) single_duels: u64,
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
            window_keep: 0,
            shared_maximum: 0,
            newest: NIL,
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
    pub(crate) fn size_ghost(&mut self, entries: usize, exact: bool) {
        self.ghost
            .set_capacity((entries as f64 * GHOST_SHARE) as usize, exact);
    }

    /// Resets the bounds for a new capacity (eviction happens on the next `evict`).
    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.set_allowance(maximum, maximum);
    }

    /// Resets the bounds for a maximum that is a share of a capacity of `shared` split with
    /// other policies (eviction happens on the next `evict`): the bounds are the maximum's, but
    /// the window keeps its newest entry up to the window bound of `shared` (`window_keep`).
    pub(crate) fn set_allowance(&mut self, maximum: u64, shared: u64) {
        self.maximum = maximum;
        self.shared_maximum = shared.max(maximum);
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
        let shared_main = (self.shared_maximum as f64 * (1.0 - self.mode.window)) as u64;
        let shared_window = self.shared_maximum - shared_main.min(self.shared_maximum);
        self.window_keep = shared_window.clamp(self.window_max, self.maximum);
        self.demote_from_protected();
    }

    /// Whether the window entry `i` stays in the window, past its bound if need be, rather than
    /// be judged by its own insert's eviction: it is the entry inserted last, no heavier than
    /// `window_keep`, and the maximum is a share of a larger capacity (whose unshared window
    /// would have held it; `SHARED`, which [`evict_general`](Self::evict_general) checks once).
    /// It leaves the window with a later insert.
    #[inline]
    fn keeps_in_window<const SHARED: bool>(&self, i: u32) -> bool {
        SHARED && i == self.newest && self.weight(i) <= self.window_keep
    }

    /// The window's entry nearest its eviction end that is not kept there
    /// ([`keeps_in_window`](Self::keeps_in_window)).
    #[inline]
    fn window_front_unkept<const SHARED: bool>(&self) -> Option<u32> {
        let front = self.window.front()?;
        if !self.keeps_in_window::<SHARED>(front) {
            return Some(front);
        }
        let next = self.nodes[front as usize].next;
        (next != NIL).then_some(next)
    }

    /// Grows the node array so that `i` is a valid index.
    #[inline]
    fn ensure_node(&mut self, i: u32) {
        if i as usize >= self.nodes.len() {
            // By an eighth, not doubling: a cache reserves its nodes with its slab, so this
            // grows the miniatures', which hold about their capacity and would keep up to
            // twice its nodes.
            let len = (i as usize + 1)
                .max(self.nodes.len() + self.nodes.len() / 8)
                .max(16);
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
        self.newest = i;
        let node = &mut self.nodes[i as usize];
        debug_assert_eq!(node.queue, Queue::None, "node {i} inserted twice");
        *node = Node {
            queue: Queue::Window,
            returning,
            hash,
            ..EMPTY
        };
        if weight > self.window_keep {
            self.window.push_front(&mut self.nodes, i);
        } else {
            self.window.push_back(&mut self.nodes, i);
        }
    }

    /// The entry at the eviction end of `queue`.
    #[inline]
    pub(super) fn front(&self, queue: Queue) -> Option<u32> {
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
    /// returns its hash (see [`WTinyLfu::access_batch`](super::WTinyLfu::access_batch)).
    #[inline]
    pub(super) fn prefetch_neighbours(&self, i: u32) -> u32 {
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

    /// Demotes protected's overflow, if any (the test inline: most promotions find protected
    /// within its bound and skip the call; see `docs/decisions/0105-hot-path-inlining.md`).
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
    pub(super) fn evict_general(&mut self, admission: &mut Admission, evicted: &mut Vec<u32>) {
        // Only a share of a larger capacity keeps its newest entry in the window: checked once
        // here, so that the loops of a cache that shares nothing have no step for it.
        if self.window_keep > self.window_max {
            self.evict_window_then_main::<true>(admission, evicted);
        } else {
            self.evict_window_then_main::<false>(admission, evicted);
        }
    }

    /// [`evict_general`](Self::evict_general) for a maximum that is (`SHARED`) or is not a
    /// share of a larger capacity.
    fn evict_window_then_main<const SHARED: bool>(
        &mut self,
        admission: &mut Admission,
        evicted: &mut Vec<u32>,
    ) {
        let candidate = self.evict_from_window::<SHARED>();
        self.evict_from_main::<SHARED>(candidate, admission, evicted);
    }

    /// The steady state of an unweighted cache, one insert over the maximum with the window
    /// one over its own: the window's oldest entry moves to probation and duels probation's
    /// oldest, as [`evict_from_window`](Self::evict_from_window) and
    /// [`evict_from_main`](Self::evict_from_main) would do it, without their loops. False,
    /// having changed nothing, in any other state.
    ///
    /// The duel comes first: a candidate that loses leaves from the window directly. Moved to
    /// probation's MRU end and unlinked from there at once, as the general path does it, it
    /// left every queue as this does, after two more list updates, and losing is the common
    /// case (see `docs/decisions/0103-single-duel-eviction.md`).
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
    fn evict_from_window<const SHARED: bool>(&mut self) -> u32 {
        let mut first = NIL;
        for _ in 0..QUEUE_TRANSFER_LIMIT {
            if self.window_weight <= self.window_max {
                break;
            }
            let Some(i) = self.window_front_unkept::<SHARED>() else {
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
    fn evict_from_main<const SHARED: bool>(
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
                candidate = self.window_front_unkept::<SHARED>().unwrap_or(NIL);
                candidate_queue = Queue::Window;
            } else if candidate_queue == Queue::Window
                && candidate != NIL
                && self.keeps_in_window::<SHARED>(candidate)
            {
                // Walking the window, the candidates pass over the entry it keeps.
                candidate = self.nodes[candidate as usize].next;
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
    /// are 0 to 15, and each is looked up once (see `docs/decisions/0105-hot-path-inlining.md`).
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

    /// Heap bytes of the ghost.
    #[cfg(test)]
    pub(crate) fn ghost_bytes(&self) -> usize {
        self.ghost.memory_bytes()
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

#[cfg(test)]
mod tests {
    use super::super::mode::STATIC_MODE;
    use super::*;
    use crate::random::mix64;

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
        let mut admission = Admission::new(Some(6), 1);
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
        p.size_ghost(10, false);
        let mut admission = Admission::new(Some(7), 1);
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
