//! The shard's invariant check, [`Shard::validate`], for tests and fuzzing: every structure
//! that names a slot must agree with the others.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use super::{Deferral, Shard, NO_DEADLINE};

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// Panics if any invariant is broken: the table, the slab, the free list, the policy and the
    /// timer wheel must all agree, and the weighted size must fit the maximum.
    pub(crate) fn validate(&self) {
        let live: Vec<u32> = (0..self.index.slots.len() as u32)
            .filter(|&i| self.index.slots[i as usize].is_some())
            .collect();
        assert_eq!(
            live.len(),
            self.index.table.len(),
            "table and slab disagree on length"
        );
        for &i in &live {
            let key = &self.entry(i).key;
            assert_eq!(
                self.find(self.hash(key), key),
                Some(i),
                "table misses slot {i}"
            );
        }
        let mut free = self.free.clone();
        free.sort_unstable();
        free.dedup();
        assert_eq!(free.len(), self.free.len(), "free list has duplicates");
        assert!(
            free.iter().all(|&i| self.index.slots[i as usize].is_none()),
            "free list names a live slot"
        );
        assert_eq!(
            free.len() + live.len(),
            self.index.slots.len(),
            "slots leaked"
        );
        let pins = self.pins.as_deref();
        let pinned_weight = |i: u32| pins.and_then(|p| p.weight(i));
        let members: Vec<u32> = live
            .iter()
            .copied()
            .filter(|&i| pinned_weight(i).is_none())
            .collect();
        if let Some(pins) = pins {
            let pinned: u64 = live.iter().filter_map(|&i| pinned_weight(i)).sum();
            assert_eq!(pinned, pins.total(), "pinned weights");
            for &i in &live {
                assert_eq!(
                    pinned_weight(i).is_some(),
                    self.deadline(i).is_none(),
                    "slot {i}: pinned exactly when it has no deadline"
                );
            }
        }
        let policy = self.policy();
        let mut in_policy = policy.validate();
        in_policy.sort_unstable();
        if policy.is_unbounded() {
            // It counts entries and names none.
            assert_eq!(policy.weighted_size(), live.len() as u64, "unbounded count");
        } else {
            assert_eq!(in_policy, members, "policy and slab disagree");
        }
        let weights: u64 = members
            .iter()
            .map(|&i| u64::from(policy.weight_of(i)))
            .sum();
        assert_eq!(weights, policy.weighted_size(), "weights");
        if let Some(weigher) = &self.weigher {
            for &i in &live {
                let entry = self.entry(i);
                let held = pinned_weight(i).unwrap_or_else(|| u64::from(policy.weight_of(i)));
                assert_eq!(u64::from(weigher(&entry.key, &entry.value)), held);
            }
        }
        assert!(
            policy.weighted_size() <= policy.maximum(),
            "over capacity: {} > {}",
            policy.weighted_size(),
            policy.maximum()
        );
        if let Some(member) = &self.budget {
            let pinned = pins.map_or(0, |p| p.total());
            assert_eq!(
                policy.maximum(),
                member.allowance().saturating_sub(pinned),
                "maximum is not the allowance less the pinned weight"
            );
        }
        drop(policy);
        // The read path's flags stand for the fields they let it skip.
        assert!(
            self.index.timed || (self.wheel.is_none() && self.read_deadlines.is_empty()),
            "a deadline is kept but the shard is not timed"
        );
        // A read finds a refreshing shard's check times by one bounds test
        // (`refresh_check_at`), and each is the earlier of the slot's due time and the wheel's
        // deadline for it, the due time kept aside when it is the later.
        if self.keeps_refresh_times {
            assert!(self.index.timed, "a refreshing shard is not timed");
            let live_end = self.index.slots.iter().rposition(Option::is_some);
            assert!(
                live_end.is_none_or(|i| i < self.refresh_checks.len()),
                "a live slot has no refresh check time"
            );
            for (i, slot) in self.index.slots.iter().enumerate() {
                if slot.is_none() {
                    continue;
                }
                let i = i as u32;
                let check = self.refresh_checks[i as usize];
                let deadline = self.wheel.as_ref().and_then(|w| w.deadline(i));
                let deadline = deadline.unwrap_or(u64::MAX);
                match self.late_refreshes.get(&i) {
                    Some(&due) => assert!(
                        check == deadline && due > deadline,
                        "slot {i}: due {due} kept aside, check {check}, deadline {deadline}"
                    ),
                    None => assert!(
                        check <= deadline,
                        "slot {i}: check {check} after the deadline {deadline}"
                    ),
                }
            }
        } else {
            assert!(
                self.refresh_checks.is_empty() && self.late_refreshes.is_empty(),
                "check times kept without refresh"
            );
        }
        assert_eq!(
            self.index.defers_all,
            self.deferral == Deferral::Always,
            "defers_all differs from the deferral {:?}",
            self.deferral
        );
        if let Some(wheel) = &self.wheel {
            wheel.validate();
            for (i, _) in wheel.iter() {
                assert!(
                    self.index.slots[i as usize].is_some(),
                    "timer for freed slot {i}"
                );
            }
            let (rescheduled, earliest) = match &self.moved {
                Some(moved) => (
                    moved
                        .slots
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone(),
                    moved.earliest.load(Ordering::Relaxed),
                ),
                None => (Vec::new(), NO_DEADLINE),
            };
            for &i in &live {
                let timer = wheel.deadline(i);
                match self.deadline(i) {
                    // Reads may have moved the deadline later, or removed it, since scheduling;
                    // one that moved it earlier left the slot for `advance` to schedule again.
                    Some(deadline) if !self.read_deadlines.is_empty() => assert!(
                        timer.is_some_and(|t| t <= deadline)
                            || (rescheduled.contains(&i) && earliest <= deadline),
                        "slot {i}: timer {timer:?} after deadline {deadline}"
                    ),
                    deadline if self.read_deadlines.is_empty() => {
                        assert_eq!(timer, deadline, "slot {i}: timer and deadline differ")
                    }
                    _ => {}
                }
            }
        }
    }
}
