//! Window TinyLFU: an LRU admission window in front of a segmented-LRU main space guarded by TinyLFU.
//!
//! New entries enter the window; an entry pushed out of the window competes with the main space's
//! eviction victim, and the more frequently seen of the two stays.
//!
//! # Design
//!
//! - **Window** (LRU, [`INITIAL_WINDOW`] = 1% of the capacity at start): absorbs bursts, so an entry
//!   that is reused soon after its first access gets hits before frequency decides its fate.
//! - **Main** (the rest) is a segmented LRU: *probation* holds entries admitted from the window;
//!   a hit in probation promotes to *protected*, which may hold up to [`PROTECTED_SHARE`] (80%) of
//!   the main space; the overflow of protected is demoted back to probation's MRU end.
//! - **Eviction.** When over capacity, window entries past the window's maximum move to probation
//!   as candidates; then each candidate duels the probation LRU victim through
//!   [`Admission`](super::admission) and the loser is evicted. Once candidates run out the victims
//!   come from probation, then protected, then the window.
//! - **Adaptive window.** A [`HillClimber`] moves capacity between the window and protected
//!   according to the hit rate, at most [`QUEUE_TRANSFER_LIMIT`] entries per step so a large
//!   adjustment never stalls one operation.
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
//! 3. B. Manes: Caffeine's `BoundedLocalCache` (eviction and climbing).

use super::admission::Admission;
use super::climber::HillClimber;
use super::deque::{impl_linked, Deque, NIL};

/// Initial share of the capacity given to the window.
pub const INITIAL_WINDOW: f64 = 0.01;
/// Share of the main space that protected may hold.
pub const PROTECTED_SHARE: f64 = 0.80;
/// Most entries moved between queues by one window adjustment.
pub const QUEUE_TRANSFER_LIMIT: usize = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    None,
    Window,
    Probation,
    Protected,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    prev: u32,
    next: u32,
    weight: u32,
    queue: Queue,
    hash: u64,
}
impl_linked!(Node);

const EMPTY: Node = Node {
    prev: NIL,
    next: NIL,
    weight: 0,
    queue: Queue::None,
    hash: 0,
};

/// The W-TinyLFU policy. See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct WTinyLfu {
    nodes: Vec<Node>,
    window: Deque,
    probation: Deque,
    protected: Deque,
    admission: Admission,
    climber: Option<HillClimber>,
    /// Whether entries carry weights; if not, the sketch is sized by the capacity.
    weighted: bool,
    maximum: u64,
    window_max: u64,
    protected_max: u64,
    weighted_size: u64,
    window_weight: u64,
    protected_weight: u64,
    /// Window change still to apply (moves are capped per step).
    pending_adjustment: i64,
}

impl WTinyLfu {
    pub(crate) fn new(maximum: u64, adaptive: bool, weighted: bool, seed: Option<u64>) -> Self {
        let mut policy = Self {
            nodes: Vec::new(),
            window: Deque::default(),
            probation: Deque::default(),
            protected: Deque::default(),
            admission: Admission::new(seed),
            climber: adaptive.then(|| HillClimber::new(maximum)),
            weighted,
            maximum: 0,
            window_max: 0,
            protected_max: 0,
            weighted_size: 0,
            window_weight: 0,
            protected_weight: 0,
            pending_adjustment: 0,
        };
        policy.set_maximum(maximum);
        policy
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.maximum
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.weighted_size
    }

    /// Resets the queue bounds for a new capacity (eviction happens on the next `evict`).
    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.maximum = maximum;
        let main = (maximum as f64 * (1.0 - INITIAL_WINDOW)) as u64;
        self.window_max = maximum - main;
        self.protected_max = (main as f64 * PROTECTED_SHARE) as u64;
        if let Some(climber) = &mut self.climber {
            climber.set_capacity(maximum);
        }
        self.pending_adjustment = 0;
    }

    /// Grows the node array so that `i` is a valid index.
    #[inline]
    fn ensure_node(&mut self, i: u32) {
        if i as usize >= self.nodes.len() {
            let len = (i as usize + 1).max(self.nodes.len() * 2).max(16);
            self.nodes.resize(len, EMPTY);
        }
    }

    /// Reserves node storage for `entries` entries.
    pub(crate) fn reserve(&mut self, entries: usize) {
        if entries > self.nodes.len() {
            self.nodes.resize(entries, EMPTY);
        }
    }

    pub(crate) fn insert(&mut self, i: u32, hash: u64, weight: u32) {
        self.ensure_node(i);
        self.weighted_size += u64::from(weight);
        self.window_weight += u64::from(weight);
        let node = &mut self.nodes[i as usize];
        debug_assert_eq!(node.queue, Queue::None, "node {i} inserted twice");
        *node = Node {
            queue: Queue::Window,
            weight,
            hash,
            ..EMPTY
        };
        if u64::from(weight) > self.window_max {
            self.window.push_front(&mut self.nodes, i);
        } else {
            self.window.push_back(&mut self.nodes, i);
        }
        if !self.admission.is_sized() && self.weighted_size >= self.maximum / 2 {
            // Counting entries, the capacity is known; with weights, the entry count so far.
            let entries = if self.weighted {
                self.window.len() + self.probation.len() + self.protected.len()
            } else {
                self.maximum as usize
            };
            self.admission.ensure_capacity(entries);
        }
        self.admission.record(hash);
        if let Some(climber) = &mut self.climber {
            climber.record_miss();
        }
        self.climb();
    }

    pub(crate) fn access(&mut self, i: u32) {
        let node = self.nodes[i as usize];
        self.admission.record(node.hash);
        match node.queue {
            Queue::Window => self.window.move_to_back(&mut self.nodes, i),
            Queue::Probation => self.promote(i),
            Queue::Protected => self.protected.move_to_back(&mut self.nodes, i),
            Queue::None => debug_assert!(false, "access to absent node {i}"),
        }
        if let Some(climber) = &mut self.climber {
            climber.record_hit();
        }
        self.climb();
    }

    /// Moves a probation entry to protected, demoting protected's overflow.
    fn promote(&mut self, i: u32) {
        self.probation.unlink(&mut self.nodes, i);
        self.protected.push_back(&mut self.nodes, i);
        let node = &mut self.nodes[i as usize];
        node.queue = Queue::Protected;
        self.protected_weight += u64::from(node.weight);
        self.demote_from_protected();
    }

    fn demote_from_protected(&mut self) {
        while self.protected_weight > self.protected_max {
            let Some(i) = self.protected.front() else {
                break;
            };
            self.protected.unlink(&mut self.nodes, i);
            self.probation.push_back(&mut self.nodes, i);
            let node = &mut self.nodes[i as usize];
            node.queue = Queue::Probation;
            self.protected_weight -= u64::from(node.weight);
        }
    }

    /// A value was replaced: the entry counts as used and may change weight.
    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        let node = &mut self.nodes[i as usize];
        let old = u64::from(node.weight);
        let new = u64::from(weight);
        node.weight = weight;
        self.weighted_size = self.weighted_size - old + new;
        match node.queue {
            Queue::Window => self.window_weight = self.window_weight - old + new,
            Queue::Protected => self.protected_weight = self.protected_weight - old + new,
            _ => {}
        }
        self.access(i);
    }

    pub(crate) fn remove(&mut self, i: u32) {
        let node = self.nodes[i as usize];
        let weight = u64::from(node.weight);
        match node.queue {
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
        self.nodes[i as usize] = EMPTY;
    }

    /// Evicts until the weighted size fits the maximum, pushing each victim's index.
    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        if self.weighted_size <= self.maximum {
            return;
        }
        let candidate = self.evict_from_window();
        self.evict_from_main(candidate, evicted);
    }

    /// Moves the window's overflow to probation; returns the first moved entry.
    fn evict_from_window(&mut self) -> u32 {
        let mut first = NIL;
        while self.window_weight > self.window_max {
            let Some(i) = self.window.front() else {
                break;
            };
            self.window.unlink(&mut self.nodes, i);
            self.probation.push_back(&mut self.nodes, i);
            let node = &mut self.nodes[i as usize];
            node.queue = Queue::Probation;
            self.window_weight -= u64::from(node.weight);
            if first == NIL {
                first = i;
            }
        }
        first
    }

    /// Candidates (from `candidate` towards probation's MRU end, then the window) duel the
    /// victims (probation's LRU end, then protected, then the window) until the size fits.
    fn evict_from_main(&mut self, mut candidate: u32, evicted: &mut Vec<u32>) {
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
            if victim == NIL {
                evict = candidate;
                candidate = self.nodes[candidate as usize].next;
            } else if candidate == NIL {
                evict = victim;
                victim = self.nodes[victim as usize].next;
            } else if candidate == victim {
                evict = candidate;
                victim = self.nodes[victim as usize].next;
                candidate = NIL;
            } else if u64::from(self.nodes[candidate as usize].weight) > self.maximum {
                evict = candidate;
                candidate = self.nodes[candidate as usize].next;
            } else {
                let (c, v) = (self.nodes[candidate as usize], self.nodes[victim as usize]);
                if self.admission.admit(c.hash, v.hash) {
                    evict = victim;
                    victim = v.next;
                    candidate = c.next;
                } else {
                    evict = candidate;
                    candidate = c.next;
                }
            }
            // Advancing past `evict` above keeps both cursors valid after its removal, except
            // when one cursor had moved onto the other's node; recheck that case.
            if victim == evict {
                victim = self.nodes[evict as usize].next;
            }
            if candidate == evict {
                candidate = self.nodes[evict as usize].next;
            }
            self.remove(evict);
            evicted.push(evict);
        }
    }

    /// Applies the climber's decision, a bounded number of moves at a time.
    #[inline]
    fn climb(&mut self) {
        let Some(climber) = &mut self.climber else {
            return;
        };
        if !self.admission.is_sized() {
            climber.reset_sample();
            return;
        }
        if let Some(amount) = climber.adjustment() {
            self.pending_adjustment = amount;
        }
        if self.pending_adjustment > 0 {
            self.increase_window();
        } else if self.pending_adjustment < 0 {
            self.decrease_window();
        }
    }

    /// Moves capacity (and LRU entries) from the main space to the window.
    fn increase_window(&mut self) {
        if self.protected_max == 0 {
            self.pending_adjustment = 0;
            return;
        }
        let mut quota = (self.pending_adjustment as u64).min(self.protected_max);
        self.protected_max -= quota;
        self.window_max += quota;
        self.demote_from_protected();
        for _ in 0..QUEUE_TRANSFER_LIMIT {
            let mut from_probation = true;
            let mut candidate = self.probation.front();
            if candidate.is_none_or(|c| quota < u64::from(self.nodes[c as usize].weight)) {
                candidate = self.protected.front();
                from_probation = false;
            }
            let Some(i) = candidate else {
                break;
            };
            let weight = u64::from(self.nodes[i as usize].weight);
            if quota < weight {
                break;
            }
            quota -= weight;
            if from_probation {
                self.probation.unlink(&mut self.nodes, i);
            } else {
                self.protected.unlink(&mut self.nodes, i);
                self.protected_weight -= weight;
            }
            self.window.push_back(&mut self.nodes, i);
            self.nodes[i as usize].queue = Queue::Window;
            self.window_weight += weight;
        }
        // Whatever could not move yet stays pending for the next operation.
        self.protected_max += quota;
        self.window_max -= quota;
        self.pending_adjustment = quota as i64;
    }

    /// Moves capacity (and LRU entries) from the window to the main space.
    fn decrease_window(&mut self) {
        if self.window_max <= 1 {
            self.pending_adjustment = 0;
            return;
        }
        let mut quota = self
            .pending_adjustment
            .unsigned_abs()
            .min(self.window_max - 1);
        self.protected_max += quota;
        self.window_max -= quota;
        for _ in 0..QUEUE_TRANSFER_LIMIT {
            let Some(i) = self.window.front() else {
                break;
            };
            let weight = u64::from(self.nodes[i as usize].weight);
            if quota < weight {
                break;
            }
            quota -= weight;
            self.window.unlink(&mut self.nodes, i);
            self.probation.push_back(&mut self.nodes, i);
            self.nodes[i as usize].queue = Queue::Probation;
            self.window_weight -= weight;
        }
        self.protected_max -= quota;
        self.window_max += quota;
        self.pending_adjustment = -(quota as i64);
    }

    /// The current window bound, for introspection and tests.
    pub(crate) fn window_maximum(&self) -> u64 {
        self.window_max
    }

    /// Indices from most to least likely to be evicted: probation, window, then protected,
    /// each from its LRU end, stably ordered by sketch frequency.
    pub(crate) fn coldest(&self) -> Vec<u32> {
        let mut order: Vec<u32> = self
            .probation
            .iter(&self.nodes)
            .chain(self.window.iter(&self.nodes))
            .chain(self.protected.iter(&self.nodes))
            .collect();
        order.sort_by_key(|&i| self.admission.sketch.frequency(self.nodes[i as usize].hash));
        order
    }

    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.window.clear();
        self.probation.clear();
        self.protected.clear();
        self.admission.clear();
        self.weighted_size = 0;
        self.window_weight = 0;
        self.protected_weight = 0;
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].weight
    }

    /// Heap bytes of the policy's own structures.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.admission.sketch.memory_bytes()
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
                weight += u64::from(self.nodes[i as usize].weight);
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
    use super::*;
    use crate::random::mix64;

    /// Replays keys through the policy with a key -> index map, like a cache does.
    fn replay(policy: &mut WTinyLfu, keys: impl IntoIterator<Item = u64>) -> (u64, u64) {
        let mut map = std::collections::HashMap::new();
        let mut owner = std::collections::HashMap::new();
        let mut free: Vec<u32> = Vec::new();
        let mut next = 0u32;
        let (mut hits, mut total) = (0, 0);
        let mut evicted = Vec::new();
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
            policy.evict(&mut evicted);
            for i in evicted.drain(..) {
                map.remove(&owner.remove(&i).unwrap());
                free.push(i);
            }
            assert!(policy.weighted_size() <= policy.maximum());
        }
        (hits, total)
    }

    #[test]
    fn evict_over_capacity_keeps_bound_and_validates() {
        let mut p = WTinyLfu::new(100, true, false, Some(1));
        replay(&mut p, (0..10_000u64).map(|i| mix64(i) % 500));
        assert_eq!(p.weighted_size(), 100);
        assert_eq!(p.validate().len(), 100);
    }

    #[test]
    fn loop_longer_than_capacity_gets_hits() {
        // LRU gets nothing on a loop of 1,000 keys through 500 slots; frequency keeps a stable set.
        let mut p = WTinyLfu::new(500, true, false, Some(2));
        let (hits, total) = replay(&mut p, (0..200_000u64).map(|i| i % 1000));
        let ratio = hits as f64 / total as f64;
        assert!(ratio > 0.40, "hit ratio {ratio}");
    }

    #[test]
    fn remove_then_insert_reuses_index() {
        let mut p = WTinyLfu::new(10, false, true, Some(3));
        p.insert(0, 1, 1);
        p.remove(0);
        p.insert(0, 2, 1);
        assert_eq!(p.validate(), vec![0]);
    }

    #[test]
    fn insert_heavier_than_maximum_evicted_at_once() {
        let mut p = WTinyLfu::new(10, false, true, Some(4));
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
    fn climber_short_reuse_grows_window_and_hits() {
        let mut adaptive = WTinyLfu::new(1000, true, false, Some(5));
        let (hits, total) = replay(&mut adaptive, short_reuse(200_000));
        adaptive.validate();
        assert!(
            adaptive.window_maximum() > 300,
            "window {}",
            adaptive.window_maximum()
        );
        let mut fixed = WTinyLfu::new(1000, false, false, Some(5));
        let (fixed_hits, _) = replay(&mut fixed, short_reuse(200_000));
        assert!(
            hits as f64 / total as f64 > 0.15 && hits > 4 * fixed_hits,
            "adaptive {hits}, static {fixed_hits} of {total}"
        );
    }
}
