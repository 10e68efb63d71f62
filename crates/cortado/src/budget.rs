//! A weight capacity shared by several caches, or by the shards of one concurrent cache.
//!
//! Each member cache holds at most its *allowance*, and the allowances with what is not allotted
//! add up to the [`Budget`]'s capacity, so the members together hold at most the capacity. A
//! member that must keep an entry heavier than its allowance borrows the difference, and the
//! other members give it back at their next write (or at once, when one caller can reach them
//! all, as [`sync::Cache`](crate::sync::Cache) does): any entry up to the whole capacity can be
//! kept, in whichever member its key falls.
//!
//! ```
//! use cortado::budget::Budget;
//! use cortado::unsync::Cache;
//!
//! // Two caches (say two threads' shards of a keyspace) sharing 1,000 units of weight.
//! let budget = Budget::new(1_000);
//! let build = || {
//!     Cache::<u32, Vec<u8>>::builder()
//!         .weigher(|_, value: &Vec<u8>| value.len() as u32)
//!         .budget(budget.clone())
//!         .build()
//!         .unwrap()
//! };
//! let (mut a, mut b) = (build(), build());
//! a.insert(1, vec![0; 600]);
//! // Heavier than what `b` holds: `b` borrows 300, which `a` owes until it next writes...
//! b.insert(2, vec![0; 700]);
//! assert!(b.contains_key(&2));
//! assert_eq!(budget.owed(), 300);
//! // ...or runs its pending tasks: it gives the 300 back, evicting its entry.
//! a.run_pending_tasks();
//! assert_eq!(budget.owed(), 0);
//! assert!(a.weighted_size() + b.weighted_size() <= budget.capacity());
//! ```
//!
//! # Design
//!
//! - **Allowances, not a shared size.** A member evicts against its own allowance, as an
//!   unshared cache evicts against its capacity, so its writes touch the budget only when they
//!   overflow the allowance and something is unallotted, or an entry does not fit the allowance
//!   at all: a full cache in its steady state evicts its own entries without reading more than
//!   two of the budget's atomics (mirrors of the unallotted weight and of what is owed), which
//!   only change when allowances move.
//! - **Drawing.** A member over its allowance first takes what it lacks from the unallotted
//!   weight (freed by returned loans, a member that left, or a larger capacity).
//! - **Borrowing.** If the entry just written is heavier than the allowance (and no heavier than
//!   the capacity), the member raises its allowance to the entry's weight, then evicts its other
//!   entries to fit it. The difference is assigned as *owed* to the other members in turn (a
//!   rotating cursor, so that over many loans each member gives about as often), each up to its
//!   allowance. A member that owes gives it up from its allowance at its next write or
//!   [`run_pending_tasks`](crate::unsync::Cache::run_pending_tasks), evicting to fit the
//!   smaller allowance. Until then the members may hold more than the capacity, by at most
//!   [`owed`](Budget::owed).
//! - **Returning.** Once a member's size fits its allowance without the loan (the heavy entry was
//!   evicted, removed or replaced), it gives the loan back to the members that lent (first
//!   cancelling what they still owe, then as a *credit* they take at their next write), so
//!   that every allowance comes back to what it was: a member never gives up room it merely
//!   does not use, which would let the allowances drift apart under light entries (one shard of
//!   four was seen at 2 units of 1,000 when unused room went back to the unallotted weight).
//! - **One lock.** Allowances move under one mutex, taken only by the steps above (never by a
//!   write that fits its allowance); each member's allowance is also its policy's maximum, which
//!   only the member itself changes.
//!
//! Invariant: the allowances and credits plus the unallotted weight, minus what is owed, equal
//! the capacity; no member owes more than its allowance.
//!
//! Measurements and the alternative tried: `docs/decisions/0015-shared-weight-budget.md`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A weight capacity shared by several caches: see the [module docs](self). A cheap `Clone`
/// (a shared handle).
#[derive(Clone)]
pub struct Budget {
    shared: Arc<Shared>,
}

struct Shared {
    /// A copy of [`State::capacity`], for a look without the lock.
    capacity: AtomicU64,
    /// A copy of [`State::unallotted`], for a look without the lock.
    unallotted: AtomicU64,
    /// A copy of the total [`Account::owed`], for a look without the lock.
    owed: AtomicU64,
    /// A copy of the total [`Account::credit`], for a look without the lock.
    credit: AtomicU64,
    state: Mutex<State>,
}

struct State {
    capacity: u64,
    unallotted: u64,
    /// Indexed by member id; `None` for an id free for the next member.
    accounts: Vec<Option<Account>>,
    /// The member asked first to give back the next loan.
    cursor: usize,
}

/// One member's allowance and what moves it at its next settling; never both `owed` and
/// `credit` (they cancel).
#[derive(Clone, Copy, Debug, Default)]
struct Account {
    allowance: u64,
    /// What the member must give up from its allowance at its next settling.
    owed: u64,
    /// What the member takes into its allowance at its next settling (a loan given back).
    credit: u64,
    /// What the member has lent (owed or given up) and not had back: where a returned loan goes.
    lent: u64,
}

impl Account {
    /// The allowance once settled.
    fn settled(&self) -> u64 {
        self.allowance + self.credit - self.owed
    }

    /// Takes `amount` (at most [`settled`](Self::settled)) from the allowance to be.
    fn take(&mut self, amount: u64) {
        let cancelled = self.credit.min(amount);
        self.credit -= cancelled;
        self.owed += amount - cancelled;
    }

    /// Adds `amount` to the allowance to be.
    fn add(&mut self, amount: u64) {
        let cancelled = self.owed.min(amount);
        self.owed -= cancelled;
        self.credit += amount - cancelled;
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Budget")
            .field("capacity", &state.capacity)
            .field("unallotted", &state.unallotted)
            .field("owed", &self.owed())
            .field("members", &state.accounts.iter().flatten().count())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every step leaves the state consistent before anything that can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the state's totals to the lock-free copies.
    fn publish(&self, state: &State) {
        self.capacity.store(state.capacity, Ordering::Relaxed);
        self.unallotted.store(state.unallotted, Ordering::Relaxed);
        let owed = state.accounts.iter().flatten().map(|a| a.owed).sum();
        self.owed.store(owed, Ordering::Relaxed);
        let credit = state.accounts.iter().flatten().map(|a| a.credit).sum();
        self.credit.store(credit, Ordering::Relaxed);
    }

    /// See [`Budget::set_capacity`].
    fn set_capacity(&self, capacity: u64) {
        let mut state = self.lock();
        if capacity >= state.capacity {
            let grown = capacity - state.capacity;
            state.give_back(grown);
        } else {
            let shrunk = state.capacity - capacity;
            let taken = shrunk.min(state.unallotted);
            state.unallotted -= taken;
            let left = state.assign_owed_in_proportion(shrunk - taken);
            debug_assert_eq!(left, 0, "the allowances cover the capacity");
        }
        state.capacity = capacity;
        self.publish(&state);
    }
}

impl State {
    /// Takes `amount` back into the budget: first cancelling what members owe, then as
    /// unallotted weight.
    fn give_back(&mut self, mut amount: u64) {
        for account in self.accounts.iter_mut().flatten() {
            if amount == 0 {
                return;
            }
            let cancelled = account.owed.min(amount);
            account.owed -= cancelled;
            amount -= cancelled;
        }
        self.unallotted += amount;
    }

    /// Takes back `amount` of a loan: to the members that lent, as far as they have not had it
    /// back (in member order), and the rest as [`give_back`](Self::give_back) does.
    fn return_loan(&mut self, mut amount: u64) {
        for account in self.accounts.iter_mut().flatten() {
            let returned = account.lent.min(amount);
            account.lent -= returned;
            account.add(returned);
            amount -= returned;
        }
        self.give_back(amount);
    }

    /// Assigns `amount` as owed to the members, each in proportion to what it does not owe yet
    /// (rounded up, then any remainder in turn); returns what could not be assigned.
    fn assign_owed_in_proportion(&mut self, amount: u64) -> u64 {
        let spare: u64 = self.accounts.iter().flatten().map(Account::settled).sum();
        let mut left = amount;
        if spare > 0 {
            for account in self.accounts.iter_mut().flatten() {
                let free = account.settled();
                let part = (u128::from(amount) * u128::from(free)).div_ceil(u128::from(spare));
                let part = (part as u64).min(free).min(left);
                account.take(part);
                left -= part;
            }
        }
        self.lend(left, None)
    }

    /// Assigns `amount` as owed to the members other than `except`, in turn from the cursor,
    /// each up to what it does not owe yet, and counts it as lent (to `except`); returns what
    /// could not be assigned.
    fn lend(&mut self, mut amount: u64, except: Option<usize>) -> u64 {
        let (n, start) = (self.accounts.len(), self.cursor);
        for k in 0..n {
            if amount == 0 {
                break;
            }
            let id = (start + k) % n;
            if Some(id) == except {
                continue;
            }
            if let Some(account) = &mut self.accounts[id] {
                let assigned = account.settled().min(amount);
                if assigned > 0 {
                    account.take(assigned);
                    account.lent += assigned;
                    amount -= assigned;
                    self.cursor = (id + 1) % n;
                }
            }
        }
        amount
    }
}

impl Budget {
    /// A budget of `capacity` units of weight, all unallotted until members draw them.
    pub fn new(capacity: u64) -> Self {
        Self {
            shared: Arc::new(Shared {
                capacity: AtomicU64::new(capacity),
                unallotted: AtomicU64::new(capacity),
                owed: AtomicU64::new(0),
                credit: AtomicU64::new(0),
                state: Mutex::new(State {
                    capacity,
                    unallotted: capacity,
                    accounts: Vec::new(),
                    cursor: 0,
                }),
            }),
        }
    }

    /// The total weight the members may hold.
    pub fn capacity(&self) -> u64 {
        self.shared.capacity.load(Ordering::Relaxed)
    }

    /// Changes the capacity. Growing it cancels what members owe, then adds to the unallotted
    /// weight; shrinking takes from the unallotted weight, then assigns the rest as owed to the
    /// members, each in proportion to its allowance, which they give up (evicting) at their next
    /// write or `run_pending_tasks`.
    pub fn set_capacity(&self, capacity: u64) {
        self.shared.set_capacity(capacity);
    }

    /// Weight the members still have to give up from their allowances (lent to a member for an
    /// entry heavier than its allowance, or taken by a smaller capacity): the members hold at
    /// most the capacity plus this. Each member gives its part at its next write or
    /// `run_pending_tasks`.
    pub fn owed(&self) -> u64 {
        self.shared.owed.load(Ordering::Relaxed)
    }

    /// Weight no member's allowance holds.
    pub fn unallotted(&self) -> u64 {
        self.shared.unallotted.load(Ordering::Relaxed)
    }

    /// The members (caches built with this budget and not yet dropped).
    pub fn members(&self) -> usize {
        self.shared.lock().accounts.iter().flatten().count()
    }

    /// A new member, with an allowance of `wanted` (at most the capacity): taken from the
    /// unallotted weight, and what that lacks owed by the other members.
    pub(crate) fn join(&self, wanted: u64) -> Member {
        let mut state = self.shared.lock();
        Self::join_locked(&self.shared, &mut state, wanted)
    }

    /// A new member with an equal share: the capacity over the members it makes (see
    /// [`join`](Self::join)).
    pub(crate) fn join_equal(&self) -> Member {
        let mut state = self.shared.lock();
        let members = state.accounts.iter().flatten().count() as u64;
        let wanted = state.capacity / (members + 1);
        Self::join_locked(&self.shared, &mut state, wanted)
    }

    fn join_locked(shared: &Arc<Shared>, state: &mut State, wanted: u64) -> Member {
        let wanted = wanted.min(state.capacity);
        let drawn = wanted.min(state.unallotted);
        state.unallotted -= drawn;
        let allowance = wanted - state.assign_owed_in_proportion(wanted - drawn);
        let account = Some(Account {
            allowance,
            ..Account::default()
        });
        let id = match state.accounts.iter().position(Option::is_none) {
            Some(id) => {
                state.accounts[id] = account;
                id
            }
            None => {
                state.accounts.push(account);
                state.accounts.len() - 1
            }
        };
        shared.publish(state);
        Member {
            shared: shared.clone(),
            id,
            allowance,
            loan: 0,
        }
    }

    /// The ids of the members that owe something.
    pub(crate) fn owing_members(&self) -> Vec<usize> {
        let state = self.shared.lock();
        let accounts = state.accounts.iter().enumerate();
        accounts
            .filter_map(|(id, account)| account.filter(|a| a.owed > 0).map(|_| id))
            .collect()
    }

    /// Panics unless the invariant holds (see the [module docs](self)).
    #[doc(hidden)]
    pub fn validate(&self) {
        let state = self.shared.lock();
        let (mut allowances, mut owed) = (0u128, 0u128);
        for account in state.accounts.iter().flatten() {
            assert!(
                account.owed <= account.allowance,
                "{account:?} owes too much"
            );
            assert!(
                account.owed == 0 || account.credit == 0,
                "{account:?} owes and has credit"
            );
            allowances += u128::from(account.allowance + account.credit);
            owed += u128::from(account.owed);
        }
        assert_eq!(
            allowances + u128::from(state.unallotted) - owed,
            u128::from(state.capacity),
            "allowances and credits {allowances} + unallotted {} - owed {owed} != capacity {}",
            state.unallotted,
            state.capacity
        );
        assert_eq!(
            self.shared.unallotted.load(Ordering::Relaxed),
            state.unallotted
        );
        assert_eq!(u128::from(self.owed()), owed);
    }
}

/// One member's place in a [`Budget`]: held by the shard whose allowance it is, which keeps it
/// equal to its policy's maximum.
pub(crate) struct Member {
    shared: Arc<Shared>,
    id: usize,
    /// The member's allowance (the account's, which only this member changes).
    allowance: u64,
    /// The part of the allowance borrowed for a heavy entry and not yet returned.
    loan: u64,
}

impl fmt::Debug for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("id", &self.id)
            .field("allowance", &self.allowance)
            .field("loan", &self.loan)
            .finish()
    }
}

impl Member {
    /// The member's id, unique among the budget's members while it lives (the concurrent cache's
    /// shards join in order, so shard `i` is member `i` of its own budget).
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    pub(crate) fn allowance(&self) -> u64 {
        self.allowance
    }

    /// Sets the budget's capacity (see [`Budget::set_capacity`]).
    pub(crate) fn set_capacity(&self, capacity: u64) {
        self.shared.set_capacity(capacity);
    }

    /// The budget's capacity.
    pub(crate) fn capacity(&self) -> u64 {
        self.shared.capacity.load(Ordering::Relaxed)
    }

    /// Gives up what this member owes and takes its credit, if any; returns the new allowance
    /// (to evict to).
    #[inline]
    pub(crate) fn settle(&mut self) -> u64 {
        let shared = &self.shared;
        if shared.owed.load(Ordering::Relaxed) != 0 || shared.credit.load(Ordering::Relaxed) != 0 {
            self.settle_locked();
        }
        self.allowance
    }

    #[cold]
    fn settle_locked(&mut self) {
        let mut state = self.shared.lock();
        let Some(account) = &mut state.accounts[self.id] else {
            return;
        };
        account.allowance = account.settled();
        account.owed = 0;
        account.credit = 0;
        self.allowance = account.allowance;
        self.loan = self.loan.min(self.allowance);
        self.shared.publish(&state);
    }

    /// After a write left this member holding `size` against its allowance, `weight` of it the
    /// entry just written: draws what it lacks from the unallotted weight and, if the entry alone
    /// is heavier than the allowance and no heavier than the capacity, borrows the rest of the
    /// entry's weight. Returns the new allowance.
    pub(crate) fn fit(&mut self, size: u64, weight: u64) -> u64 {
        if size <= self.allowance {
            return self.allowance;
        }
        let can_draw = self.shared.unallotted.load(Ordering::Relaxed) != 0;
        if !can_draw && weight <= self.allowance {
            // The steady state of a full member: it evicts its own entries.
            return self.allowance;
        }
        let mut state = self.shared.lock();
        let drawn = (size - self.allowance).min(state.unallotted);
        state.unallotted -= drawn;
        let mut allowance = self.allowance + drawn;
        if weight > allowance && weight <= state.capacity {
            let wanted = weight - allowance;
            let left = state.lend(wanted, Some(self.id));
            allowance += wanted - left;
            self.loan += wanted - left;
        }
        if let Some(account) = &mut state.accounts[self.id] {
            account.allowance = allowance;
        }
        self.allowance = allowance;
        self.shared.publish(&state);
        allowance
    }

    /// After an eviction left this member holding `size`: gives its loan back to the members
    /// that lent it once the rest of its allowance holds `size` (the heavy entry is gone).
    /// Room it merely does not use it keeps. Returns the new allowance.
    #[inline]
    pub(crate) fn return_unused_loan(&mut self, size: u64) -> u64 {
        if self.loan != 0 && self.allowance.saturating_sub(size) >= self.loan {
            self.return_loan();
        }
        self.allowance
    }

    /// Gives the loan back (no more than the member does not owe).
    #[cold]
    fn return_loan(&mut self) {
        let mut state = self.shared.lock();
        let Some(account) = &mut state.accounts[self.id] else {
            return;
        };
        let amount = self.loan.min(account.allowance - account.owed);
        account.allowance -= amount;
        self.allowance = account.allowance;
        self.loan = 0;
        state.return_loan(amount);
        self.shared.publish(&state);
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if let Some(account) = state.accounts[self.id].take() {
            // What it owed it would have given up anyway; its loan goes to its lenders.
            let kept = account.settled();
            let loan = self.loan.min(kept);
            state.return_loan(loan);
            state.give_back(kept - loan);
        }
        self.shared.publish(&state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_beyond_unallotted_owed_by_the_others_drop_gives_back() {
        let budget = Budget::new(100);
        let mut a = budget.join(60);
        let b = budget.join(60);
        assert_eq!((a.allowance(), b.allowance()), (60, 60));
        assert_eq!((budget.unallotted(), budget.owed()), (0, 20));
        budget.validate();
        assert_eq!(a.settle(), 40);
        drop(b);
        assert_eq!(budget.unallotted(), 60);
        assert_eq!(budget.members(), 1);
        budget.validate();
    }

    #[test]
    fn join_equal_beyond_unallotted_owed_by_the_others() {
        let budget = Budget::new(90);
        let mut a = budget.join_equal();
        assert_eq!(a.allowance(), 90);
        let b = budget.join_equal();
        let c = budget.join_equal();
        assert_eq!((b.allowance(), c.allowance()), (45, 30));
        budget.validate();
        // `a` gave 45 to `b`, then `a` and `b` 15 each to `c`.
        assert_eq!(budget.owing_members(), vec![0, 1]);
        assert_eq!(a.settle(), 30);
        assert_eq!(budget.owed(), 15);
    }

    #[test]
    fn fit_over_allowance_draws_unallotted_first() {
        let budget = Budget::new(100);
        let mut a = budget.join(10);
        assert_eq!(a.fit(30, 5), 30);
        assert_eq!(budget.unallotted(), 70);
        assert_eq!(budget.owed(), 0);
        budget.validate();
    }

    #[test]
    fn fit_entry_heavier_than_allowance_borrows_from_others_in_turn() {
        let budget = Budget::new(100);
        let mut members: Vec<Member> = (0..4).map(|_| budget.join(25)).collect();
        // Member 0 holds 20 and writes an entry of 70: it borrows 45, owed by 1 (25), 2 (20).
        assert_eq!(members[0].fit(90, 70), 70);
        assert_eq!(budget.owed(), 45);
        assert_eq!(budget.owing_members(), vec![1, 2]);
        budget.validate();
        assert_eq!(members[1].settle(), 0);
        assert_eq!(members[2].settle(), 5);
        assert_eq!(members[3].settle(), 25);
        assert_eq!(budget.owed(), 0);
        budget.validate();
        // The next loan starts with the member after the last one that gave.
        assert_eq!(members[1].fit(10, 10), 10);
        assert_eq!(budget.owing_members(), vec![3]);
        budget.validate();
    }

    #[test]
    fn fit_entry_heavier_than_capacity_borrows_nothing() {
        let budget = Budget::new(100);
        let mut a = budget.join(50);
        let _b = budget.join(50);
        assert_eq!(a.fit(150, 101), 50);
        assert_eq!(budget.owed(), 0);
        budget.validate();
    }

    #[test]
    fn return_unused_loan_before_others_paid_cancels_what_they_owe() {
        let budget = Budget::new(100);
        let mut a = budget.join(50);
        let mut b = budget.join(50);
        assert_eq!(a.fit(80, 80), 80);
        assert_eq!(budget.owed(), 30);
        // Not while the loan is needed.
        assert_eq!(a.return_unused_loan(60), 80);
        // The heavy entry left: the loan goes back, and `b` owes nothing any more.
        assert_eq!(a.return_unused_loan(50), 50);
        assert_eq!(budget.owed(), 0);
        assert_eq!(b.settle(), 50);
        budget.validate();
    }

    #[test]
    fn return_unused_loan_after_others_paid_credits_the_lenders() {
        let budget = Budget::new(90);
        let mut members: Vec<Member> = (0..3).map(|_| budget.join(30)).collect();
        // Member 0 borrows 40: 30 from member 1, 10 from member 2, who pay.
        assert_eq!(members[0].fit(70, 70), 70);
        assert_eq!(members[1].settle(), 0);
        assert_eq!(members[2].settle(), 20);
        budget.validate();
        assert_eq!(members[0].return_unused_loan(30), 30);
        // Each lender has its room back at its next settling, nobody else.
        assert_eq!((budget.unallotted(), budget.owed()), (0, 0));
        budget.validate();
        assert_eq!(members[1].settle(), 30);
        assert_eq!(members[2].settle(), 30);
        budget.validate();
    }

    #[test]
    fn return_unused_loan_keeps_room_merely_unused() {
        let budget = Budget::new(160);
        let mut a = budget.join(80);
        assert_eq!(a.return_unused_loan(0), 80);
        assert_eq!(budget.unallotted(), 80);
        budget.validate();
    }

    #[test]
    fn set_capacity_shrink_owed_in_proportion_grow_cancels_owed() {
        let budget = Budget::new(100);
        let mut a = budget.join(75);
        let mut b = budget.join(25);
        budget.set_capacity(60);
        assert_eq!(budget.owed(), 40);
        budget.validate();
        assert_eq!(a.settle(), 45);
        budget.set_capacity(70);
        // 10 of `b`'s 10 owed cancelled.
        assert_eq!(budget.owed(), 0);
        assert_eq!(b.settle(), 25);
        budget.set_capacity(100);
        assert_eq!(budget.unallotted(), 30);
        budget.validate();
    }

    #[test]
    fn drop_owing_member_gives_back_only_what_it_did_not_owe() {
        let budget = Budget::new(100);
        let mut a = budget.join(50);
        let b = budget.join(50);
        a.fit(90, 90);
        assert_eq!(budget.owed(), 40);
        drop(b);
        // `b`'s 10 not owed are unallotted, and its 40 owed are no longer anybody's.
        assert_eq!(budget.owed(), 0);
        assert_eq!(budget.unallotted(), 10);
        budget.validate();
    }
}
