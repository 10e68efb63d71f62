//! The shard's deadlines: when each entry expires, the timer wheel that files them, the reads
//! that move them (a time to idle, a custom expiry) and [`Shard::advance`], which removes the
//! entries that are due. See the [shard's design](super) (*Expiry*).

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{Alarm, Hit, Shard, NO_DEADLINE};
use crate::expiry::Deadlines;
use crate::notification::RemovalCause;
use crate::timer_wheel::TimerWheel;

/// Whether a written entry's deadline has passed already (a lifetime of zero).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Born {
    Live,
    Expired,
}

/// Slots whose deadline a read under a shared borrow moved before the one the wheel holds, for
/// [`Shard::advance`] to file again.
#[derive(Debug)]
pub(super) struct MovedDeadlines {
    pub(super) slots: Mutex<Vec<u32>>,
    /// The earliest of their deadlines ([`NO_DEADLINE`] when there are none), so that
    /// [`Shard::next_expiration`] knows of them.
    pub(super) earliest: AtomicU64,
    /// Wakes the scheduler, if the cache has one, by a deadline a read brought forward.
    pub(super) alarm: Option<Arc<dyn Alarm>>,
}

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// When slot `i` expires. With reads that move deadlines, the wheel holds a lower bound and
    /// the truth is in `read_deadlines` (and `write_deadlines`).
    #[inline]
    pub(super) fn deadline(&self, i: u32) -> Option<u64> {
        if self.read_deadlines.is_empty() {
            return self.wheel.as_ref().and_then(|wheel| wheel.deadline(i));
        }
        let stored = |d: u64| (d != NO_DEADLINE).then_some(d);
        let read = stored(self.read_deadlines[i as usize].load(Ordering::Relaxed));
        let write = self
            .write_deadlines
            .get(i as usize)
            .copied()
            .and_then(stored);
        self.rules.effective(Deadlines { write, read })
    }

    #[inline]
    pub(super) fn is_expired(&self, i: u32, now: u64) -> bool {
        self.deadline(i).is_some_and(|deadline| deadline <= now)
    }

    /// Gives the live slot `i` the wheel deadline `deadline` (`None`: none), and folds it into
    /// a refreshing shard's check time.
    pub(super) fn schedule(&mut self, i: u32, deadline: Option<u64>) {
        self.fold_deadline(i, deadline);
        match (deadline, &mut self.wheel) {
            (Some(deadline), Some(wheel)) => wheel.schedule(i, deadline),
            (Some(deadline), None) => {
                let mut wheel = TimerWheel::new();
                wheel.reserve(self.index.slots.capacity());
                wheel.schedule(i, deadline);
                self.wheel = Some(wheel);
                self.index.timed = true;
            }
            (None, Some(wheel)) => {
                wheel.cancel(i);
            }
            (None, None) => {}
        }
    }

    /// Tells a policy that ranks entries by deadline slot `i`'s, after it may have changed
    /// (a pinned entry is not in the policy). Every write passes here: the flag test inline,
    /// the rest out of line.
    #[inline(always)]
    pub(super) fn tell_policy_deadline(&mut self, i: u32) {
        if self.orders_by_deadline {
            self.set_policy_deadline(i);
        }
    }

    #[inline(never)]
    fn set_policy_deadline(&mut self, i: u32) {
        if !self.is_pinned(i) {
            let deadline = self.deadline(i);
            self.policy_mut().set_deadline(i, deadline);
        }
    }

    pub(super) fn set_deadlines(&mut self, i: u32, deadlines: Deadlines) {
        self.schedule(i, self.rules.effective(deadlines));
        if !self.rules.reads_matter() {
            return;
        }
        let at = i as usize;
        if at >= self.read_deadlines.len() {
            // Sized like the slab (see `grow`), not doubled on their own.
            let len = self.index.slots.capacity().max(at + 1);
            self.read_deadlines
                .reserve_exact(len - self.read_deadlines.len());
            self.read_deadlines
                .resize_with(len, || AtomicU64::new(NO_DEADLINE));
            self.index.timed = true;
            if self.rules.tti.is_some() {
                self.write_deadlines
                    .reserve_exact(len - self.write_deadlines.len());
                self.write_deadlines.resize(len, NO_DEADLINE);
            }
        }
        let read = deadlines.read.unwrap_or(NO_DEADLINE);
        self.read_deadlines[at].store(read, Ordering::Relaxed);
        if self.rules.tti.is_some() {
            self.write_deadlines[at] = deadlines.write.unwrap_or(NO_DEADLINE);
        }
    }

    /// [`get_shared`](Self::get_shared) when reads move deadlines (a time to idle, a custom
    /// expiry). Out of line, and called last, so that reads of caches without expiry do not pay
    /// for the update (and its call to [`moved_earlier`](Self::moved_earlier); decision 0013).
    #[inline(never)]
    pub(super) fn get_shared_and_move_deadline(&self, i: u32, now: u64) -> Option<Hit<'_, V>> {
        let deadline = self.deadline(i);
        if deadline.is_some_and(|d| d <= now) {
            return None;
        }
        let entry = self.entry(i);
        if let Some(read) = self.rules.on_read(&entry.key, &entry.value, now, deadline) {
            let read = read.unwrap_or(NO_DEADLINE);
            let stored = &self.read_deadlines[i as usize];
            let scheduled = self.wheel.as_ref().and_then(|wheel| wheel.deadline(i));
            let scheduled = scheduled.unwrap_or(NO_DEADLINE);
            // Every exclusive borrow leaves the wheel at or before the read deadline, so one
            // already before it was listed by the read that moved it there.
            let listed = stored.load(Ordering::Relaxed) < scheduled;
            stored.store(read, Ordering::Relaxed);
            if read < scheduled {
                self.moved_earlier(i, read, listed);
            }
        }
        Some(Hit::new(i, entry))
    }

    /// Notes that a read moved slot `i`'s deadline to `deadline`, before the wheel's (or gave
    /// it one): the wheel holds a lower bound of each deadline, which a custom expiry's read can
    /// break, and so can a time-to-idle read in the concurrent cache whose clock was read just
    /// before a concurrent write's; only [`advance`](Self::advance), holding the shard
    /// exclusively, can move the slot in it. Rare, so a mutex serves.
    ///
    /// `listed`: an earlier read already listed the slot (a read-only stream of shortening
    /// reads would otherwise grow the list by a slot per read until the next write).
    #[cold]
    pub(super) fn moved_earlier(&self, i: u32, deadline: u64, listed: bool) {
        let Some(moved) = &self.moved else {
            return;
        };
        if !listed {
            moved
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(i);
        }
        moved.earliest.fetch_min(deadline, Ordering::Relaxed);
        if let Some(alarm) = &moved.alarm {
            alarm.wake_by(deadline);
        }
    }

    /// Whether some entry's deadline has passed (removing it needs the write lock).
    pub(crate) fn expiry_due(&self, now: u64) -> bool {
        self.next_expiration().is_some_and(|next| next <= now)
    }

    /// Removes the live slot `i`'s entry, just written with a lifetime of zero, as expired. Out
    /// of line: inlined, it cost every insert instructions though it rarely runs (decision
    /// 0014).
    #[cold]
    #[inline(never)]
    pub(super) fn expire_at_once(&mut self, i: u32) {
        self.remove_index(i, RemovalCause::Expired);
    }

    /// Gives the live slot `i` the deadlines a write at `now` computed, if any, and says
    /// whether the entry is born [expired](Born::Expired) (a lifetime of zero), so that the
    /// caller removes it as expired instead of keeping it, or evicting a live one to make room
    /// for it. The test for none is inlined: as a call, it cost every insert instructions
    /// (decision 0014). Every write of a value comes here: it also records the write's time,
    /// for refresh after write.
    #[inline(always)]
    pub(super) fn set_write_deadlines(
        &mut self,
        i: u32,
        deadlines: Option<Deadlines>,
        now: u64,
    ) -> Born {
        self.record_write_time(i, now);
        self.record_access_time(i, now);
        match deadlines {
            None => Born::Live,
            Some(deadlines) => self.set_some_write_deadlines(i, deadlines, now),
        }
    }

    /// [`set_write_deadlines`](Self::set_write_deadlines) when the write computed deadlines.
    pub(super) fn set_some_write_deadlines(
        &mut self,
        i: u32,
        deadlines: Deadlines,
        now: u64,
    ) -> Born {
        self.set_deadlines(i, deadlines);
        let due = self.rules.effective(deadlines);
        if due.is_some_and(|deadline| deadline <= now) {
            Born::Expired
        } else {
            Born::Live
        }
    }

    /// Removes every entry whose deadline is at or before `now`. Every write calls it; a shard
    /// with no deadline anywhere (not [`Index::timed`]) returns here, inline, without the call
    /// to the loop below and its register saves (decision 0014), and without reading the
    /// wheel's cache line.
    #[inline]
    pub(crate) fn advance(&mut self, now: u64) {
        // Untimed, there is no wheel, and no read has moved a deadline (that needs the read
        // deadlines, which set `timed`).
        if !self.index.timed {
            return;
        }
        self.advance_timed(now);
    }

    /// [`advance`](Self::advance) for a shard that has a wheel or lists moved deadlines: at most
    /// the write's batch of removals ([`ShardConfig::expiry_batch`](super::ShardConfig)).
    #[inline(never)]
    pub(super) fn advance_timed(&mut self, now: u64) {
        self.expire_due(now, self.expiry_batch);
    }

    /// Removes up to `max` entries whose deadline is at or before `now`; returns true when none
    /// is left. The others stay in the wheel at their deadlines, so reads still see them as
    /// expired.
    pub(crate) fn expire_due(&mut self, now: u64, max: usize) -> bool {
        if !self.index.timed {
            return true;
        }
        if self.moved_deadline().is_some() {
            self.reschedule();
        }
        let Some(wheel) = &mut self.wheel else {
            return true;
        };
        let mut due = std::mem::take(&mut self.scratch);
        let done = if max == usize::MAX {
            wheel.advance(now, &mut due);
            true
        } else {
            wheel.advance_bounded(now, &mut due, max)
        };
        for i in due.drain(..) {
            // A read may have moved the deadline since it was scheduled (the wheel no longer
            // knows the slot: only the read deadlines can say so).
            let deadline = if self.read_deadlines.is_empty() {
                Some(now)
            } else {
                self.deadline(i)
            };
            match deadline {
                // Out of the wheel now: a refreshing shard's check time must not keep the
                // deadline it had there.
                None => self.fold_deadline(i, None),
                Some(deadline) if deadline > now => self.schedule(i, Some(deadline)),
                Some(_) => self.remove_index(i, RemovalCause::Expired),
            }
        }
        self.scratch = due;
        done
    }

    /// The earliest deadline that reads moved before the wheel's since the last
    /// [`advance`](Self::advance), if any.
    #[inline]
    pub(crate) fn moved_deadline(&self) -> Option<u64> {
        let earliest = self.moved.as_ref()?.earliest.load(Ordering::Relaxed);
        (earliest != NO_DEADLINE).then_some(earliest)
    }

    /// Puts the slots whose deadlines reads moved earlier back in the wheel at their deadlines
    /// (passed ones expire in the wheel's next advance).
    pub(super) fn reschedule(&mut self) {
        let Some(moved) = &mut self.moved else {
            return;
        };
        *moved.earliest.get_mut() = NO_DEADLINE;
        let slots = std::mem::take(
            moved
                .slots
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for &i in &slots {
            // The slot may have been emptied, or reused, since: its deadline now is what counts.
            if self
                .index
                .slots
                .get(i as usize)
                .is_some_and(Option::is_some)
            {
                self.schedule(i, self.deadline(i));
            }
        }
    }

    /// When the next entry may expire (a lower bound), if any has a deadline.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        let wheel = self.wheel.as_ref().and_then(TimerWheel::next_expiration);
        match (wheel, self.moved_deadline()) {
            (Some(next), Some(moved)) => Some(next.min(moved)),
            (next, moved) => next.or(moved),
        }
    }
}
