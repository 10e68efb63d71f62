//! One entry's lifetime read and changed in place, and the slab walked by position: what a
//! front end needs for per-key expiry commands and for scans that resume.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use std::sync::PoisonError;

use super::deadlines::Born;
use super::{hash_key, Shard};
use crate::expiry::Deadlines;
use crate::notification::RemovalCause;

/// Slots a sample of lifetimes looks at per lifetime asked for ([`Shard::sample_lifetimes`]):
/// enough to find most when one entry in a few has a deadline, bounded when almost none has.
pub(crate) const LIFETIME_PROBES: usize = 16;
impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// The lifetime left to `key`'s live entry at `now`: `None` if absent or expired,
    /// `Some(None)` if it has no deadline.
    pub(crate) fn expires_after<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<Option<Duration>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.live_slot(hash, key, now)?;
        Some(
            self.deadline(i)
                .map(|deadline| Duration::from_nanos(deadline.saturating_sub(now))),
        )
    }

    /// How long `key`'s live entry has gone unused at `now` (see `access_times`); `None` if
    /// absent, expired, or access times are not kept.
    pub(crate) fn idle_time<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<Duration>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.live_slot(hash, key, now)?;
        self.idle_time_of(i, now)
    }

    /// Gives `key`'s live entry the lifetime `ttl` from `now`, as a write with that lifetime
    /// would (a time to idle still applies), or no deadline (`None`), leaving its value and
    /// its place in the policy as they are; false if absent or expired. A lifetime of zero
    /// expires the entry at once.
    pub(crate) fn set_expires_after<Q>(
        &mut self,
        hash: u64,
        key: &Q,
        now: u64,
        ttl: Option<Duration>,
    ) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let Some(i) = self.find(hash, key) else {
            return false;
        };
        if self.is_expired(i, now) {
            return false;
        }
        let deadlines = match ttl {
            Some(ttl) => {
                let entry = self.entry(i);
                let current = Some(self.deadline(i));
                self.rules
                    .on_write(&entry.key, &entry.value, now, Some(ttl), current)
            }
            None => Deadlines {
                write: None,
                read: None,
            },
        };
        if self.set_some_write_deadlines(i, deadlines, now) == Born::Expired {
            self.expire_at_once(i);
        } else {
            if self.pins.is_some() {
                let hash = hash_key(&self.hasher, &self.entry(i).key);
                self.sync_pin(i, hash);
            }
            self.tell_policy_deadline(i);
            self.fit_after_pin();
        }
        true
    }

    /// Gives back the memory removed entries left behind: the slots after the last entry (and
    /// what the table, the wheel and the deadlines keep for them), and the table's spare room.
    /// Slots keep their numbers, so a scan in progress is not disturbed; the policy of a
    /// bounded shard keeps its per-slot arrays, which it fills again as the shard does.
    pub(crate) fn shrink_to_fit(&mut self) {
        let slots = &mut self.index.slots;
        let len = slots.len() - slots.iter().rev().take_while(|s| s.is_none()).count();
        slots.truncate(len);
        slots.shrink_to_fit();
        self.free.retain(|&i| (i as usize) < len);
        self.free.shrink_to_fit();
        let (hasher, slots) = (&self.hasher, &self.index.slots);
        self.index
            .table
            .shrink_to(0, |&i| match &slots[i as usize] {
                Some(entry) => super::hash_key(hasher, &entry.key),
                None => unreachable!("the table names only live slots"),
            });
        self.read_deadlines.truncate(len);
        self.read_deadlines.shrink_to_fit();
        self.write_deadlines.truncate(len);
        self.write_deadlines.shrink_to_fit();
        // Live slots are all below `len`, so a refreshing shard keeps every check time it reads.
        self.shrink_refresh_checks(len);
        if let Some(wheel) = &mut self.wheel {
            wheel.shrink_ids(len);
        }
        self.scratch = Vec::new();
        self.pending.shrink_to_fit();
    }

    /// Entries that have a deadline (expired ones not yet removed included).
    pub(crate) fn timed_len(&self) -> usize {
        self.wheel.as_ref().map_or(0, |wheel| wheel.len())
    }

    /// Up to `count` lifetimes left at `now`, in nanoseconds, of live entries with a deadline
    /// at slots drawn from `seed` (a slot may come twice), looking at no more than
    /// [`LIFETIME_PROBES`] x `count` slots: fewer come back when few entries have a deadline.
    pub(crate) fn sample_lifetimes(&self, seed: u64, count: usize, now: u64) -> Vec<u64> {
        let slots = self.index.slots.len() as u64;
        let mut lifetimes = Vec::with_capacity(count);
        if slots == 0 || self.timed_len() == 0 {
            return lifetimes;
        }
        for k in 0..count.saturating_mul(LIFETIME_PROBES) as u64 {
            if lifetimes.len() == count {
                break;
            }
            let i = (crate::random::mix64(seed.wrapping_add(k)) % slots) as u32;
            if self.index.slots[i as usize].is_none() {
                continue;
            }
            if let Some(deadline) = self.deadline(i).filter(|&d| d > now) {
                lifetimes.push(deadline - now);
            }
        }
        lifetimes
    }

    /// Calls `visit` with each live entry in slots `from..`, looking at no more than `count`
    /// slots; returns the slot to resume from, or `None` once past the last. An entry keeps its
    /// slot for as long as it is in the cache, so a scan resumed this way sees every entry that
    /// stays in the cache from its start to its end exactly once, whatever else is written.
    pub(crate) fn scan(
        &self,
        from: usize,
        count: usize,
        now: u64,
        mut visit: impl FnMut(&K, &V),
    ) -> Option<usize> {
        let slots = &self.index.slots;
        let end = from.saturating_add(count.max(1)).min(slots.len());
        let start = from.min(end);
        for (i, slot) in slots[start..end].iter().enumerate() {
            if let Some(entry) = slot {
                if !self.is_expired((start + i) as u32, now) {
                    visit(&entry.key, &entry.value);
                }
            }
        }
        (end < slots.len()).then_some(end)
    }

    /// A live entry picked at random from `seed`: a few random slots are tried, then, for a
    /// sparse slab, the first live entry from a random slot on (wrapping). `None` only when
    /// no entry is live.
    pub(crate) fn random_entry(&self, seed: u64, now: u64) -> Option<(&K, &V)> {
        let slots = &self.index.slots;
        if slots.is_empty() {
            return None;
        }
        let mut rng = crate::random::SmallRng::new(seed);
        let live = |i: usize| {
            slots[i]
                .as_ref()
                .filter(|_| !self.is_expired(i as u32, now))
                .map(|entry| (&entry.key, &entry.value))
        };
        // Enough tries that a slab at least an eighth full misses all of them less than once
        // in a thousand calls ((7/8)^52).
        for _ in 0..52 {
            let i = (rng.next_u64() % slots.len() as u64) as usize;
            if let Some(found) = live(i) {
                return Some(found);
            }
        }
        let start = (rng.next_u64() % slots.len() as u64) as usize;
        (start..slots.len()).chain(0..start).find_map(live)
    }

    /// How often the policy counts `key`'s live entry as used (see `Policy::frequency`), its
    /// reads not yet told to the policy included; `None` if absent, or if the policy counts
    /// no uses.
    pub(crate) fn frequency<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<u64>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.live_slot(hash, key, now)?;
        let deferred = self
            .entry(i)
            .reads
            .load(std::sync::atomic::Ordering::Relaxed);
        let counted = self.policy().frequency(i, hash)?;
        Some(counted + u64::from(deferred))
    }

    /// The live slots in the order the policy would evict them, the coldest first (slab order
    /// when the policy keeps no order), with the reads deferred on them applied first.
    pub(crate) fn slots_by_eviction_order(&mut self) -> Vec<u32> {
        let policy = self
            .policy
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let slots = &mut self.index.slots;
        policy.fold_all(|i| Self::take_deferred_mut(slots, i));
        if policy.is_unbounded() {
            return self.live_slots();
        }
        let mut order = policy.coldest();
        if let Some(pins) = &self.pins {
            // Never evicted, so after every entry the policy may evict.
            order.extend(
                pins.slots()
                    .filter(|&i| self.index.slots[i as usize].is_some()),
            );
        }
        order
    }

    /// Takes slot `i`'s live entry out of the cache with its deadline, neither counted nor
    /// told to the listener as a removal (it moves elsewhere); an expired entry is removed as
    /// expired instead, and a free slot gives `None`.
    pub(crate) fn take_slot(&mut self, i: u32, now: u64) -> Option<(K, V, Option<u64>)> {
        self.index.slots.get(i as usize)?.as_ref()?;
        if self.is_expired(i, now) {
            self.remove_index(i, RemovalCause::Expired);
            return None;
        }
        let deadline = self.deadline(i);
        self.forget_slot(i);
        let entry = self.detach(i);
        Some((entry.key, entry.value, deadline))
    }
}
