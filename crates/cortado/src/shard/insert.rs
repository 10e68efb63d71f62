//! The shard's write path: [`Shard::insert`] and its two cases, a key the shard holds
//! ([`Shard::replace_existing`]) and a new one ([`Shard::insert_new`]), and the slab's growth.
//! How they are split and inlined: `docs/decisions/0014-shard-write-path-instructions.md`.

use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use super::deadlines::Born;
use super::eviction::Fold;
use super::{hash_key, Entry, Index, Shard};
use crate::notification::RemovalCause;

/// The slab's size past which it grows by an eighth instead of doubling: past it, the spare
/// room of a doubling (a third of an unbounded shard's slab on average) is worth more than the
/// copies of a slower growth (each slot moved about eight times instead of about once: about
/// 100 instructions per new entry of a server's `SET`, decision 0011); below it, both are a
/// few KiB.
const GROW_BY_EIGHTHS_FROM: usize = 1024;

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// Inserts or replaces; `ttl` overrides the configured lifetime for this entry. Evicts to fit.
    /// Returns the entry's slot, which that eviction, or a lifetime of zero, may have freed (see
    /// [`value_in`](Self::value_in)).
    #[inline]
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        now: u64,
        ttl: Option<Duration>,
    ) -> u32 {
        self.insert_with_before_write(hash, key, value, now, ttl, None::<fn(&K)>)
    }

    /// [`insert`](Self::insert), calling `before_write` (if any) with the key once the user's
    /// callbacks (the weigher, the expiry rules) have run and before anything changes: what
    /// the caller does there (superseding a load of the key) is then never done for a write
    /// that one of them stopped by panicking. Two cases, inlined here (decision 0014):
    /// [`replace_existing`](Self::replace_existing) and [`insert_new`](Self::insert_new).
    pub(crate) fn insert_with_before_write(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        now: u64,
        ttl: Option<Duration>,
        before_write: Option<impl FnOnce(&K)>,
    ) -> u32 {
        let weight = self.weigher.as_ref().map_or(1, |weigh| weigh(&key, &value));
        if let Some(i) = self.find(hash, &key) {
            return self.replace_existing(i, hash, key, value, weight, now, ttl, before_write);
        }
        self.insert_new(hash, key, value, weight, now, ttl, before_write)
    }

    /// [`insert_with_before_write`](Self::insert_with_before_write) of a key held in the live
    /// slot `i`: the value is replaced in place (an expired one is reported as expired, a live
    /// one as replaced), and the policy hears of it as a read, or with a weigher as a new
    /// weight, which may then need evicting for.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace_existing(
        &mut self,
        i: u32,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: u64,
        ttl: Option<Duration>,
        before_write: Option<impl FnOnce(&K)>,
    ) -> u32 {
        // With no wheel no entry has a deadline, and with no rule or lifetime this write gives
        // none: the common untimed replacement skips the deadline logic.
        let timed = self.wheel.is_some() || ttl.is_some() || self.rules.is_active();
        let (expired, deadlines) = if timed {
            let expired = self.is_expired(i, now);
            let current = (!expired).then(|| self.deadline(i));
            // An expired value's timer may still be in the wheel: the write replaces it (with
            // none, if it gives no lifetime), or the wheel would expire the new value.
            let deadlines =
                (expired || self.rules.is_active() || ttl.is_some() || current.flatten().is_some())
                    .then(|| self.rules.on_write(&key, &value, now, ttl, current));
            (expired, deadlines)
        } else {
            (false, None)
        };
        if let Some(before_write) = before_write {
            before_write(&key);
        }
        if expired {
            self.count_evicted_weight(i);
        }
        let slot = self.index.slots[i as usize].as_mut().expect("live slot");
        let old = std::mem::replace(&mut slot.value, value);
        // A replacement counts as a read, deferred like one; a weighed entry's new weight must
        // reach the policy now.
        if self.weigher.is_some() || !self.defer_read_at(i, hash) {
            self.set_weight_of_slot(i, weight);
        }
        let born = self.set_write_deadlines(i, deadlines, now);
        if self.pins.is_some() {
            self.sync_pin(i, hash);
        }
        self.tell_policy_deadline(i);
        let cause = if expired {
            RemovalCause::Expired
        } else {
            RemovalCause::Replaced
        };
        self.notify_removal(key, old, cause);
        if born == Born::Expired {
            // The weighted size is back below what it was: nothing to evict.
            self.expire_at_once(i);
            return i;
        }
        if self.weigher.is_none() {
            if self.pins.is_some() {
                self.fit_after_pin();
                return i;
            }
            // The weighted size did not change: there is nothing to evict. Nor can the deferral
            // that eviction refreshes have changed: the policy sizes itself (and starts
            // sampling) only on an insert of a new key or a new maximum.
            debug_assert!({
                let deferral = self.deferral;
                deferral == self.policy_mut().deferral()
            });
            return i;
        }
        self.refit(i, weight);
        i
    }

    /// [`fit`](Self::fit) after a weighed replacement. Out of line, so that the insert of a new
    /// key is the one path with `fit` inlined into it (decision 0014).
    #[inline(never)]
    pub(super) fn refit(&mut self, i: u32, weight: u32) {
        self.fit(i, weight, Fold::Needed);
    }

    /// [`insert_with_before_write`](Self::insert_with_before_write) of a key the shard does not
    /// hold: a new slot, filed in the table, the policy and (with a deadline) the wheel, then
    /// eviction to fit.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_new(
        &mut self,
        hash: u64,
        key: K,
        value: V,
        weight: u32,
        now: u64,
        ttl: Option<Duration>,
        before_write: Option<impl FnOnce(&K)>,
    ) -> u32 {
        let deadlines = (self.rules.is_active() || ttl.is_some())
            .then(|| self.rules.on_write(&key, &value, now, ttl, None));
        if let Some(before_write) = before_write {
            before_write(&key);
        }
        let i = self.allocate(Entry::new(key, value));
        let Self {
            index: Index { table, slots, .. },
            hasher,
            ..
        } = self;
        table.insert_unique(hash, i, |&j| match &slots[j as usize] {
            Some(entry) => hash_key(hasher, &entry.key),
            None => unreachable!("the table names only live slots"),
        });
        let fold = self.fold_before_insert();
        self.policy_mut().insert(i, hash, weight);
        let born = self.set_write_deadlines(i, deadlines, now);
        if self.pins.is_some() {
            self.sync_pin(i, hash);
        }
        self.tell_policy_deadline(i);
        if born == Born::Expired {
            self.expire_at_once(i);
            self.evict_to_fit(fold);
            return i;
        }
        self.fit(i, weight, fold);
        i
    }

    /// Makes room for more slots: doubling, as `Vec` would, up to [`GROW_BY_EIGHTHS_FROM`]
    /// slots, then by an eighth, but never past the most slots the shard is expected to use,
    /// and the policy's per-slot arrays to match: plain doubling left a shard whose share was
    /// just over a power of two with nearly half its slot memory unused, and an unbounded
    /// shard a third on average (decision 0011). Unweighted, the most is the maximum plus the
    /// entry being inserted before eviction; weighted, the maximum over the entries' mean
    /// weight so far, plus an eighth for the mean to move (lighter entries later only mean
    /// growing again).
    ///
    /// A shard that shares a budget grows by an eighth from the start: the budget's capacity
    /// may be what a server's memory leaves for keys, which counts a step of the slab (and the
    /// policy's structures) only once it is allocated, so a doubling sized by the share before
    /// it keeps slots the share cannot fill once it is counted (a server's shards kept a third
    /// of their slots empty; see `docs/decisions/0223-server-wtinylfu-memory.md`).
    pub(super) fn grow(&mut self) {
        let len = self.index.slots.len();
        let step = if self.budget.is_some() || len >= GROW_BY_EIGHTHS_FROM {
            (len / 8).max(16)
        } else {
            len.max(16)
        };
        let mut target = len.saturating_add(step);
        let maximum = self.policy_mut().maximum();
        let bound = if self.weigher.is_none() {
            usize::try_from(maximum)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        } else {
            let held = (len - self.free.len()).max(1) as u64;
            let mean = (self.policy_mut().weighted_size() / held).max(1);
            let entries = maximum / mean;
            usize::try_from(entries.saturating_add(entries / 8).saturating_add(16))
                .unwrap_or(usize::MAX)
        };
        if bound > len {
            target = target.min(bound);
        }
        self.index.slots.reserve_exact(target - len);
        self.policy_mut().reserve(target);
        if let Some(wheel) = &mut self.wheel {
            wheel.reserve(target);
        }
    }

    pub(super) fn allocate(&mut self, entry: Entry<K, V>) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.index.slots[i as usize] = Some(entry);
                i
            }
            None => {
                let i = u32::try_from(self.index.slots.len())
                    .ok()
                    .filter(|&i| i < u32::MAX)
                    .expect("a shard holds fewer than 2^32 - 1 entries");
                if self.index.slots.len() == self.index.slots.capacity() {
                    self.grow();
                }
                self.index.slots.push(Some(entry));
                i
            }
        }
    }
}
