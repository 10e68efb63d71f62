//! Entries kept out of the eviction policy: in a cache built to evict only entries that
//! expire ([`CacheBuilder::evict_only_expiring`](crate::builder::CacheBuilder)), an entry
//! without a deadline is *pinned*: the policy never sees it, so it is never evicted for size,
//! while its weight still counts against the capacity.
//!
//! The policy holds exactly the live entries with a deadline; its maximum is the shard's (its
//! capacity, or its allowance in a budget) less the pinned weight, so that evicting to the
//! policy's maximum fits the whole shard. When the pinned weight alone exceeds the shard's
//! maximum, the policy evicts everything it holds and the shard stays over: there is nothing
//! it may evict (as Redis's `volatile-*` policies, which then refuse writes).
//!
//! An entry moves in or out whenever its deadline appears or goes (a write with or without a
//! lifetime, a lifetime set or cleared): [`Shard::sync_pin`] after each such change. Reads of
//! a pinned entry are not told to the policy.

use std::hash::{BuildHasher, Hash};

use super::eviction::Fold;
use super::Shard;

/// A slot whose entry is in the policy (or a free slot), in [`Pins::weights`].
const IN_POLICY: u64 = u64::MAX;

/// The pinned entries of a shard.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    /// Per slot, the weight of a pinned entry, or [`IN_POLICY`].
    weights: Vec<u64>,
    /// Their total.
    total: u64,
    /// The shard's maximum before the pinned weight is taken off it.
    base: u64,
}

impl Pins {
    pub(crate) fn new(base: u64) -> Self {
        Self {
            base,
            ..Self::default()
        }
    }

    /// The weight of slot `i` if it is pinned.
    #[inline]
    pub(crate) fn weight(&self, i: u32) -> Option<u64> {
        self.weights
            .get(i as usize)
            .copied()
            .filter(|&w| w != IN_POLICY)
    }

    /// The shard's maximum, before the pinned weight is taken off it.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The total pinned weight.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The slots pinned, in slab order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.weights.len() as u32).filter(|&i| self.weight(i).is_some())
    }

    fn set(&mut self, i: u32, weight: Option<u64>) {
        let at = i as usize;
        if at >= self.weights.len() {
            self.weights.resize(at + 1, IN_POLICY);
        }
        if let Some(old) = self.weight(i) {
            self.total -= old;
        }
        self.weights[at] = weight.unwrap_or(IN_POLICY);
        self.total += weight.unwrap_or(0);
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.weights.capacity() * 8
    }
}

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// Whether the live slot `i` is pinned.
    #[inline]
    pub(crate) fn is_pinned(&self, i: u32) -> bool {
        self.pins.as_ref().is_some_and(|p| p.weight(i).is_some())
    }

    /// After slot `i`'s deadline may have changed: into the policy if it now has a deadline,
    /// out (pinned) if it has none.
    pub(super) fn sync_pin(&mut self, i: u32, hash: u64) {
        let Some(pins) = &self.pins else {
            return;
        };
        let timed = self.deadline(i).is_some();
        match (timed, pins.weight(i)) {
            (true, Some(weight)) => {
                self.pins.as_mut().expect("checked").set(i, None);
                let weight = u32::try_from(weight).expect("a weigher's u32");
                self.policy_mut().insert(i, hash, weight);
                self.follow_pins();
            }
            (false, None) => {
                let weight = self.policy_mut().weight_of(i);
                self.policy_mut().remove(i);
                self.pins
                    .as_mut()
                    .expect("checked")
                    .set(i, Some(u64::from(weight)));
                self.follow_pins();
            }
            _ => {}
        }
    }

    /// Evicts if the policy holds more than its maximum after [`sync_pin`](Self::sync_pin)
    /// moved an entry, for a caller that evicts no other way: past the shard's maximum, the
    /// pinned weight alone leaves the policy a maximum of 0, and a move either way can leave
    /// it holding more than that.
    pub(super) fn fit_after_pin(&mut self) {
        if self.pins.is_none() {
            return;
        }
        let policy = self.policy_mut();
        if policy.weighted_size() > policy.maximum() {
            self.evict_to_fit(Fold::Needed);
        }
    }

    /// Takes slot `i` out of the pins or the policy, as its entry leaves the shard.
    pub(super) fn forget_slot(&mut self, i: u32) {
        if self.is_pinned(i) {
            self.pins.as_mut().expect("pinned").set(i, None);
            self.follow_pins();
        } else {
            self.policy_mut().remove(i);
        }
    }

    /// The weight of the live slot `i`'s entry, pinned or not.
    pub(super) fn weight_of_slot(&mut self, i: u32) -> u32 {
        match self.pins.as_ref().and_then(|p| p.weight(i)) {
            Some(weight) => weight as u32,
            None => self.policy_mut().weight_of(i),
        }
    }

    /// Gives the live slot `i`'s entry a new weight, pinned or not.
    pub(super) fn set_weight_of_slot(&mut self, i: u32, weight: u32) {
        if self.is_pinned(i) {
            self.pins
                .as_mut()
                .expect("pinned")
                .set(i, Some(u64::from(weight)));
            self.follow_pins();
        } else {
            self.policy_mut().update(i, weight);
        }
    }

    /// The weight held: the policy's and the pinned entries'.
    pub(super) fn held_weight(&mut self) -> u64 {
        let pinned = self.pins.as_ref().map_or(0, |p| p.total());
        self.policy_mut().weighted_size() + pinned
    }

    /// What to take off a maximum of `base` for the policy, recording `base` as the shard's.
    pub(super) fn policy_maximum(&mut self, base: u64) -> u64 {
        match &mut self.pins {
            Some(pins) => {
                pins.base = base;
                base.saturating_sub(pins.total)
            }
            None => base,
        }
    }

    /// Sets the policy's maximum to the shard's less the pinned weight, after the latter
    /// moved: as a budget moves an allowance, without resizing the policy's structures, since
    /// pins move with every write.
    fn follow_pins(&mut self) {
        if let Some(pins) = &self.pins {
            let maximum = pins.base.saturating_sub(pins.total);
            let shared = self.budget.as_ref().map_or(pins.base, |m| m.capacity());
            self.policy_mut().set_allowance(maximum, shared);
        }
    }
}
