//! The natural alternative to a timer wheel, as a benchmark baseline: an ordered map of
//! `(deadline, id)` beside a hash map from id to deadline.
//!
//! [`DeadlineIndex`] has the same contract as `cortado::timer_wheel::TimerWheel` for the
//! operations the benchmarks use (`schedule` replaces an id's deadline, `cancel` says whether it
//! was scheduled, `advance` hands back every id due at or before `now`), so the two do the same
//! work; a unit test checks that they expire the same ids.
//!
//! # Design
//!
//! - **Why two maps.** Expiry needs the earliest deadline (the `BTreeMap`, ordered by
//!   `(deadline, id)` so equal deadlines stay distinct) and cancelling needs an id's deadline to
//!   find its entry (the `HashMap`). Each operation is O(log n) plus a hash lookup.
//! - **Expiry in bulk.** [`DeadlineIndex::advance`] cuts the due prefix off the tree with one
//!   `split_off` and then removes those ids from the hash map. Popping the first entry and
//!   removing its id one timer at a time is the more obvious code, but measured about 2x slower
//!   on a million timers: the hash removals of a cut-off batch do not depend on each other, so
//!   their cache misses overlap. The baseline should be the alternative at its best.
//! - **A fast hasher.** The id map uses hashbrown's default hasher (foldhash), as Cortado's own
//!   tables do; with std's SipHash the baseline would lose a few nanoseconds per operation for a
//!   reason that has nothing to do with the data structure.
//!
//! # References
//!
//! 1. G. Varghese, T. Lauck: "Hashed and Hierarchical Timing Wheels", SOSP 1987 (scheme 2, the
//!    ordered list of timers, is what this baseline is).

use std::collections::{BTreeMap, HashMap};

use hashbrown::DefaultHashBuilder;

/// Timers keyed by `u32` ids in a `BTreeMap` ordered by deadline. See the [module docs](self).
#[derive(Debug, Default, Clone)]
pub struct DeadlineIndex {
    by_deadline: BTreeMap<(u64, u32), ()>,
    by_id: HashMap<u32, u64, DefaultHashBuilder>,
}

impl DeadlineIndex {
    /// An empty index whose id map has room for `ids` timers without growing.
    pub fn with_capacity(ids: usize) -> Self {
        Self {
            by_deadline: BTreeMap::new(),
            by_id: HashMap::with_capacity_and_hasher(ids, DefaultHashBuilder::default()),
        }
    }

    /// Number of scheduled timers.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Schedules `id` at `deadline`, replacing its previous deadline if it had one.
    pub fn schedule(&mut self, id: u32, deadline: u64) {
        if let Some(old) = self.by_id.insert(id, deadline) {
            self.by_deadline.remove(&(old, id));
        }
        self.by_deadline.insert((deadline, id), ());
    }

    /// Cancels the timer of `id`; returns whether it was scheduled.
    pub fn cancel(&mut self, id: u32) -> bool {
        match self.by_id.remove(&id) {
            Some(deadline) => {
                self.by_deadline.remove(&(deadline, id));
                true
            }
            None => false,
        }
    }

    /// Pushes onto `expired` every id whose deadline is at or before `now`, earliest first, and
    /// removes them.
    pub fn advance(&mut self, now: u64, expired: &mut Vec<u32>) {
        let due = match now.checked_add(1) {
            Some(after) => {
                let later = self.by_deadline.split_off(&(after, 0));
                std::mem::replace(&mut self.by_deadline, later)
            }
            None => std::mem::take(&mut self.by_deadline),
        };
        for (_, id) in due.into_keys() {
            self.by_id.remove(&id);
            expired.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortado::timer_wheel::TimerWheel;
    use cortado_sim::gen::SplitMix64;

    #[test]
    fn advance_expires_exactly_due_ids_in_order() {
        let mut index = DeadlineIndex::with_capacity(4);
        index.schedule(1, 30);
        index.schedule(2, 10);
        index.schedule(3, 20);
        index.schedule(3, 40); // replaces 20
        let mut expired = Vec::new();
        index.advance(30, &mut expired);
        assert_eq!(expired, [2, 1]);
        assert_eq!(index.len(), 1);
        assert!(!index.cancel(1));
        assert!(index.cancel(3));
        assert!(index.is_empty());
    }

    #[test]
    fn random_ops_match_timer_wheel() {
        // The benchmark compares the two, so they must do the same work: same ids expire at
        // every step.
        let mut rng = SplitMix64::new(42);
        let mut index = DeadlineIndex::default();
        let mut wheel = TimerWheel::new();
        let (mut now, mut from_index, mut from_wheel) = (0u64, Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let id = (rng.next_u64() % 500) as u32;
            match rng.next_u64() % 4 {
                0 | 1 => {
                    let deadline = now + rng.next_u64() % 5_000_000_000;
                    index.schedule(id, deadline);
                    wheel.schedule(id, deadline);
                }
                2 => assert_eq!(index.cancel(id), wheel.cancel(id)),
                _ => {
                    now += rng.next_u64() % 100_000_000;
                    index.advance(now, &mut from_index);
                    wheel.advance(now, &mut from_wheel);
                    from_wheel.sort_unstable();
                    from_index.sort_unstable();
                    assert_eq!(from_index, from_wheel);
                    from_index.clear();
                    from_wheel.clear();
                }
            }
            assert_eq!(index.len(), wheel.len());
        }
    }
}
