//! The shard's eviction: fitting a written entry's weight, applying the reads deferred on
//! entries before the policy judges them, and taking the policy's victims out of the table, the
//! wheel and the slab. See the [shard's design](super) (*Deferred reads*, *Eviction*).

use std::hash::{BuildHasher, Hash};
use std::sync::PoisonError;

use super::{hash_key, Entry, Index, Shard};
use crate::notification::RemovalCause;
use crate::policy::{Deferral, Policy};

/// Whether the deferred reads at the policy's queue ends still need applying before an
/// eviction ([`Shard::evict_to_fit`]), or an insert has just applied them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fold {
    Needed,
    Done,
}

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// After the live slot `i`'s entry was written with `weight`: removes it if it can never
    /// fit, then evicts to fit the maximum ([`evict_to_fit`](Self::evict_to_fit)). Inlined,
    /// as `evict_to_fit` is.
    #[inline(always)]
    pub(super) fn fit(&mut self, i: u32, weight: u32, fold: Fold) {
        if self.weigher.is_some() {
            if self.budget.is_some() {
                return self.fit_in_budget(i, weight, fold);
            }
            if u64::from(weight) > self.policy_mut().maximum() && !self.is_pinned(i) {
                // It could never fit: it goes at once, rather than the entries a policy would
                // evict to make room for it (LRU's would empty the cache before reaching it).
                // Unweighted, only a cache of capacity 0 gets here, and its eviction empties it.
                self.remove_index(i, RemovalCause::Size);
            }
        }
        self.evict_to_fit(fold);
    }

    /// [`fit`](Self::fit) in a shard that shares a weight budget: first gives up what it owes,
    /// draws what it lacks, or borrows for an entry heavier than its allowance (see
    /// [`budget`](crate::budget)); an entry heavier than the whole budget goes at once. After the
    /// eviction, a loan no longer needed goes back. Out of line: only weighted shards get here.
    #[inline(never)]
    fn fit_in_budget(&mut self, i: u32, weight: u32, fold: Fold) {
        let size = self.held_weight();
        let member = self.budget.as_mut().expect("a shard in a budget");
        member.settle();
        let allowance = member.fit(size, u64::from(weight));
        self.follow_allowance(false);
        if u64::from(weight) > allowance {
            self.remove_index(i, RemovalCause::Size);
        }
        self.evict_to_fit(fold);
        self.return_unused_loan();
    }

    /// Gives up what the shard owes its budget, if anything, evicting to fit, and returns a loan
    /// it no longer needs (for maintenance: writes do both in [`fit`](Self::fit)).
    pub(crate) fn settle_budget(&mut self) {
        let Some(member) = &mut self.budget else {
            return;
        };
        member.settle();
        self.follow_allowance(true);
        let Self {
            policy,
            index: Index { slots, .. },
            full,
            ..
        } = self;
        let policy = policy.get_mut().unwrap_or_else(PoisonError::into_inner);
        if *full && policy.weighted_size() > policy.maximum() {
            // As a smaller capacity does (see `set_max_capacity`): the reads waiting on every
            // entry count before evictions that go far past the queue ends.
            policy.fold_all(|i| Self::take_deferred_mut(slots, i));
        }
        self.evict_to_fit(Fold::Needed);
        self.return_unused_loan();
    }

    /// Gives the shard's loan back to its budget once it is no longer needed (the heavy entry
    /// it was for has gone).
    fn return_unused_loan(&mut self) {
        let size = self.held_weight();
        if let Some(member) = &mut self.budget {
            member.return_unused_loan(size);
            self.follow_allowance(false);
        }
    }

    /// Makes the policy's maximum the shard's allowance in its budget, if it moved (or
    /// `always`, after the budget's capacity moved, which the policy's window follows).
    fn follow_allowance(&mut self, always: bool) {
        let Some(member) = &self.budget else {
            return;
        };
        let (allowance, capacity) = (member.allowance(), member.capacity());
        let allowance = self.policy_maximum(allowance);
        let policy = self
            .policy
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if always || policy.maximum() != allowance {
            policy.set_allowance(allowance, capacity);
        }
    }

    /// Switches to the policy's new deferral. When no fold comes any more (a full cache shrunk
    /// to where the miniatures replay every key), the reads waiting on entries count now,
    /// before the evictions. Out of line: it happens a few times in a cache's life.
    #[cold]
    pub(super) fn change_deferral(
        policy: &mut Policy,
        slots: &mut [Option<Entry<K, V>>],
        deferral: &mut Deferral,
        now_deferral: Deferral,
        full: bool,
    ) {
        if now_deferral == Deferral::Never && full {
            policy.fold_all(|i| Self::take_deferred_mut(slots, i));
        }
        *deferral = now_deferral;
    }

    /// Applies the deferred reads at the policy's queue ends before a new entry joins the
    /// window of a full shard. Those reads came before the insert: folded after it (by
    /// [`evict_to_fit`](Self::evict_to_fit)), they moved the window's read entries behind the
    /// new one, which then left the window first and was judged by frequency on its own insert
    /// (with a window of one entry, every key inserted after a read of the previous one was
    /// turned away).
    ///
    /// [`Fold::Done`] if it folded: the eviction that follows the insert then need not look at
    /// the queue ends again, since an insert only appends to the window (a mode change it
    /// brings about moves protected's oldest entries to probation's back), and folding twice
    /// cost instructions (decision 0014).
    pub(super) fn fold_before_insert(&mut self) -> Fold {
        if !self.full || self.deferral == Deferral::Never {
            return Fold::Needed;
        }
        let Self {
            policy,
            index: Index { slots, .. },
            ..
        } = self;
        let policy = policy.get_mut().unwrap_or_else(PoisonError::into_inner);
        policy.fold_deferred(|i| Self::take_deferred_mut(slots, i));
        Fold::Done
    }

    /// Evicts with the policy until the weighted size fits the maximum, first applying the
    /// deferred reads of the entries the policy is about to look at, unless `fold` says an
    /// insert just did ([`fold_before_insert`](Self::fold_before_insert)).
    pub(super) fn evict_to_fit(&mut self, fold: Fold) {
        let Self {
            policy,
            index: Index {
                slots, defers_all, ..
            },
            deferral,
            full,
            buffers_reads,
            ..
        } = self;
        let policy = policy.get_mut().unwrap_or_else(PoisonError::into_inner);
        // Inserts can change it (the adaptive policy starts sampling once it is half full), and
        // so can a new capacity.
        let now_deferral = policy.deferral();
        if now_deferral != *deferral {
            Self::change_deferral(policy, slots, deferral, now_deferral, *full);
            *defers_all = *deferral == Deferral::Always;
        }
        *buffers_reads |= *deferral != Deferral::Always;
        if !*full && policy.weighted_size() >= policy.maximum() {
            *full = true;
            // Full for the first time: the reads deferred while filling reach the sketch now,
            // before admission compares anyone (once per shard, like a table resize).
            policy.fold_all(|i| Self::take_deferred_mut(slots, i));
        }
        if policy.weighted_size() <= policy.maximum() {
            return;
        }
        if *deferral != Deferral::Never && fold == Fold::Needed {
            policy.fold_deferred(|i| Self::take_deferred_mut(slots, i));
        }
        let mut victims = std::mem::take(&mut self.scratch);
        let before = policy.weighted_size();
        policy.evict(&mut victims);
        if self.record_stats {
            self.stats.eviction_weight += before - policy.weighted_size();
        }
        for i in victims.drain(..) {
            let entry = self.detach_inline(i);
            self.notify_removal(entry.key, entry.value, RemovalCause::Size);
        }
        self.scratch = victims;
    }

    /// Takes slot `i` out of the table, the wheel and the slab (the policy must already have
    /// dropped it).
    pub(super) fn detach(&mut self, i: u32) -> Entry<K, V> {
        self.detach_inline(i)
    }

    /// [`detach`](Self::detach), inlined into the eviction loop that every insert of a full
    /// cache runs: out of line, its call, register saves and the copy of the entry out through
    /// memory cost instructions (decision 0014).
    #[inline(always)]
    pub(super) fn detach_inline(&mut self, i: u32) -> Entry<K, V> {
        let entry = self.index.slots[i as usize].take().expect("live slot");
        let hash = hash_key(&self.hasher, &entry.key);
        match self.index.table.find_entry(hash, |&j| j == i) {
            Ok(found) => {
                found.remove();
            }
            Err(_) => unreachable!("a live slot is in the table"),
        }
        if self.index.timed {
            if let Some(wheel) = &mut self.wheel {
                wheel.cancel(i);
            }
        }
        self.free.push(i);
        entry
    }

    /// Removes the live slot `i`'s entry, queueing it for the listener with `cause`.
    pub(crate) fn remove_index(&mut self, i: u32, cause: RemovalCause) {
        if cause.was_evicted() {
            self.count_evicted_weight(i);
        }
        self.forget_slot(i);
        let entry = self.detach(i);
        self.notify_removal(entry.key, entry.value, cause);
    }

    /// Adds the weight of slot `i`'s entry, still in the policy, to the evicted weight (when
    /// stats are recorded). Size evictions in bulk count theirs in
    /// [`evict_to_fit`](Self::evict_to_fit).
    pub(super) fn count_evicted_weight(&mut self, i: u32) {
        if self.record_stats {
            self.stats.eviction_weight += u64::from(self.weight_of_slot(i));
        }
    }
}
