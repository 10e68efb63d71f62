//! LIRS: keeps the keys with the shortest reuse distance (LIR) and gives the others (HIR) a small
//! probation area, judging reuse by distance in a recency stack rather than by recency alone.
//!
//! [`Lirs`] keeps 99 % of its capacity for LIR keys and 1 % (at least one entry) for resident HIR
//! keys; it reproduces libCacheSim's `LIRS`, including the places where that implementation
//! departs from the paper (listed below).
//!
//! # Design
//!
//! Three LRU lists: the stack **S** (LIR keys, and HIR keys, resident or not, more recent than
//! the oldest LIR key), the queue **Q** (resident HIR keys, the eviction candidates), and **NH**
//! (the non-resident HIR keys of S, in the order they lost residency). With `c` the capacity,
//! Q holds `max(1, floor(0.01 c))` keys ([`HIR_RATIO`]) and the LIR set the rest.
//!
//! - **LIR hit**: the key moves to the top of S; *pruning* then pops HIR keys off the bottom of S
//!   until an LIR key is there.
//! - **Resident HIR hit, key in S**: its reuse distance beats the bottom LIR key's, so it becomes
//!   LIR and leaves Q; the bottom LIR key is *demoted* to the top of Q (the oldest of Q is evicted
//!   first if Q is full) and S is pruned.
//! - **Resident HIR hit, key not in S**: it goes to the top of S and Q as HIR.
//! - **Miss, key a non-resident HIR in S**: it becomes LIR (resident) and the bottom LIR key is
//!   demoted.
//! - **Miss, new key**: while the LIR set is not full it becomes LIR; afterwards the oldest of Q
//!   is evicted if Q is full (its S entry, if any, turns non-resident and joins NH), and the key
//!   enters S and Q as resident HIR.
//! - **Stack limit**: after each request, while S holds more than `2c` keys, the oldest
//!   non-resident HIR key (the oldest of NH) leaves S.
//!
//! libCacheSim compatibility, beyond the 1 % and the `2c` bound:
//!
//! - A resident HIR hit on a key that is not in S also demotes the bottom LIR key to Q (the paper
//!   leaves the LIR set alone). The LIR set is then one short, so the next new key becomes LIR
//!   directly.
//! - That demotion may evict the accessed key itself from Q (when Q holds one entry, i.e. caches
//!   under 200 entries). Its S entry still says "resident", so its next request is a hit that
//!   makes it LIR, unless pruning drops that entry first: then the key is lost, and a cache
//!   that could hold every key of the trace misses it. Until then the cache holds one key more
//!   than its capacity (a 2-entry cache can beat OPT: 5 hits on `2 0 2 0 1 2 0 1`, where no
//!   2-entry cache gets more than 4; and on `0 1 0 1 0 0 0 1` it gets 5 hits, the paper's LIRS
//!   6). Marking the lost key non-resident would fix both, but moves 5 of the reference
//!   table's 23 LIRS cells under 200 entries by up to 0.08 points away from libCacheSim, whose
//!   figures this module reproduces. This module keeps the S entry's flags
//!   and the Q membership separate, as libCacheSim does, so such keys behave the same.
//! - A key's S entry and Q entry are separate records: a miss on a non-resident HIR key in S
//!   makes it LIR without putting it into Q.
//!
//! Memory: one slot per key in S, Q or NH (S is bounded by `2c` after each request): key, flags,
//! 24 bytes of links, a hash-map entry.
//!
//! # References
//!
//! 1. S. Jiang, X. Zhang: "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy to
//!    Improve Buffer Cache Performance", SIGMETRICS 2002.
//! 2. 1a1a11a/libCacheSim: `cache/eviction/LIRS.c`.

use super::key_hash::{key_map, KeyMap};
use super::linked::{Links, List, Slab};
use super::{check_capacity, ReferenceError};
use crate::policy::Policy;

/// Share of the capacity for resident HIR keys (at least one entry).
pub const HIR_RATIO: f64 = 0.01;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    in_s: bool,
    in_q: bool,
    in_nh: bool,
    /// The S entry's status: LIR (otherwise HIR).
    lir: bool,
    /// The S entry's status: resident (otherwise a non-resident HIR key).
    resident: bool,
}

/// LIRS replacement. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Lirs {
    capacity: usize,
    lir_limit: usize,
    hir_limit: usize,
    lir_count: usize,
    entries: Slab<Entry>,
    slots: KeyMap<u32>,
    s_links: Links,
    q_links: Links,
    nh_links: Links,
    s: List,
    q: List,
    nh: List,
}

impl Lirs {
    /// An empty LIRS cache of `capacity` entries (at least 2: one LIR and one HIR entry).
    pub fn new(capacity: usize) -> Result<Self, ReferenceError> {
        check_capacity(capacity)?;
        if capacity < 2 {
            return Err(ReferenceError::CapacityTooSmall {
                policy: "lirs",
                min: 2,
            });
        }
        let hir_limit = ((HIR_RATIO * capacity as f64) as usize).max(1);
        let slots = capacity.saturating_mul(3);
        Ok(Self {
            capacity,
            lir_limit: capacity - hir_limit,
            hir_limit,
            lir_count: 0,
            entries: Slab::with_capacity(slots),
            slots: key_map(slots),
            s_links: Links::with_capacity(slots),
            q_links: Links::with_capacity(slots),
            nh_links: Links::with_capacity(slots),
            s: List::new(),
            q: List::new(),
            nh: List::new(),
        })
    }

    /// Keys currently cached (LIR and resident HIR).
    pub fn len(&self) -> usize {
        self.lir_count + self.q.len()
    }

    /// Whether no key is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity in entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keys that would hit but are not counted in [`len`](Self::len): S entries still marked
    /// resident after libCacheSim's LIR demotion evicted them from a one-entry Q (see the module
    /// docs). Always 0 with 200 entries or more. O(|S|), for tests and diagnostics.
    pub fn untracked_residents(&self) -> usize {
        self.s_links
            .iter_from_newest(&self.s)
            .filter(|&slot| {
                let e = self.entries[slot];
                !e.lir && e.resident && !e.in_q
            })
            .count()
    }

    /// Frees `slot` once it is in no list.
    fn release_if_unused(&mut self, slot: u32) {
        let e = self.entries[slot];
        if !(e.in_s || e.in_q || e.in_nh) {
            self.slots.remove(&e.key);
            self.entries.remove(slot);
        }
    }

    fn slot_for(&mut self, key: u64) -> u32 {
        if let Some(&slot) = self.slots.get(&key) {
            return slot;
        }
        let slot = self.entries.insert(Entry {
            key,
            in_s: false,
            in_q: false,
            in_nh: false,
            lir: false,
            resident: false,
        });
        self.slots.insert(key, slot);
        slot
    }

    fn push_s(&mut self, slot: u32, lir: bool) {
        self.s_links.push_newest(&mut self.s, slot);
        let e = &mut self.entries[slot];
        e.in_s = true;
        e.lir = lir;
        e.resident = true;
    }

    fn push_q(&mut self, slot: u32) {
        self.q_links.push_newest(&mut self.q, slot);
        self.entries[slot].in_q = true;
    }

    fn leave_s(&mut self, slot: u32) {
        self.s_links.unlink(&mut self.s, slot);
        self.entries[slot].in_s = false;
    }

    fn leave_nh(&mut self, slot: u32) {
        if self.entries[slot].in_nh {
            self.nh_links.unlink(&mut self.nh, slot);
            self.entries[slot].in_nh = false;
        }
    }

    /// Pops HIR keys off the bottom of S until an LIR key (or the top) is there.
    fn prune(&mut self) {
        while let (Some(oldest), Some(newest)) = (self.s.oldest(), self.s.newest()) {
            if oldest == newest || self.entries[oldest].lir {
                break;
            }
            if !self.entries[oldest].resident {
                self.leave_nh(oldest);
            }
            self.leave_s(oldest);
            self.release_if_unused(oldest);
        }
    }

    /// Evicts the oldest resident HIR key.
    fn evict_hir(&mut self) {
        let Some(slot) = self.q.oldest() else {
            return;
        };
        self.q_links.unlink(&mut self.q, slot);
        self.entries[slot].in_q = false;
        if self.entries[slot].in_s {
            self.entries[slot].resident = false;
            if self.entries[slot].in_nh {
                self.nh_links.move_to_newest(&mut self.nh, slot);
            } else {
                self.nh_links.push_newest(&mut self.nh, slot);
                self.entries[slot].in_nh = true;
            }
        }
        self.release_if_unused(slot);
    }

    /// Demotes the bottom of S (an LIR key) to the top of Q, then prunes.
    fn demote_lir(&mut self) {
        let Some(slot) = self.s.oldest() else {
            return;
        };
        // libCacheSim decrements the LIR count whatever the bottom entry's status.
        self.lir_count -= 1;
        let key = self.entries[slot].key;
        self.leave_s(slot);
        while self.q.len() >= self.hir_limit {
            self.evict_hir();
        }
        // Evicting from Q may have released the slot (a resident HIR bottom, tiny caches only).
        let slot = self.slot_for(key);
        if self.entries[slot].in_q {
            // Unreachable in practice (the bottom of S is LIR, hence not in Q); keep one Q entry.
            self.q_links.move_to_newest(&mut self.q, slot);
        } else {
            self.push_q(slot);
        }
        self.prune();
    }

    fn make_room_in_lir(&mut self) {
        while self.lir_count >= self.lir_limit && !self.s.is_empty() {
            self.demote_lir();
        }
    }

    /// The S stack bound: drops the oldest non-resident HIR keys while S exceeds `2c`.
    fn limit_stack(&mut self) {
        while self.s.len() > 2 * self.capacity {
            let Some(slot) = self.nh.oldest() else {
                break;
            };
            self.leave_nh(slot);
            if self.entries[slot].in_s {
                self.leave_s(slot);
            }
            self.release_if_unused(slot);
        }
    }

    fn access(&mut self, key: u64) -> bool {
        let existing = self.slots.get(&key).copied();
        if let Some(slot) = existing {
            let e = self.entries[slot];
            if e.in_s {
                self.s_links.move_to_newest(&mut self.s, slot);
            }
            if e.in_q {
                self.q_links.move_to_newest(&mut self.q, slot);
            }
            if e.in_s && e.lir {
                self.prune();
                return true;
            }
            if e.in_s && e.resident {
                if e.in_q {
                    self.q_links.unlink(&mut self.q, slot);
                    self.entries[slot].in_q = false;
                }
                self.make_room_in_lir();
                self.entries[slot].lir = true;
                self.lir_count += 1;
                return true;
            }
            if e.in_s {
                // Non-resident HIR key in S: a miss, and it comes back as LIR.
                self.make_room_in_lir();
                self.leave_nh(slot);
                self.entries[slot].lir = true;
                self.entries[slot].resident = true;
                self.lir_count += 1;
                return false;
            }
            if e.in_q {
                // Resident HIR key outside S (libCacheSim demotes an LIR key here too).
                self.make_room_in_lir();
                let slot = self.slot_for(key);
                self.push_s(slot, false);
                return true;
            }
        }
        // A key in neither S nor Q.
        if self.lir_count < self.lir_limit {
            let slot = self.slot_for(key);
            self.push_s(slot, true);
            self.lir_count += 1;
            return false;
        }
        while self.q.len() >= self.hir_limit {
            self.evict_hir();
        }
        let slot = self.slot_for(key);
        if self.entries[slot].in_s {
            // Unreachable: a key in S was handled above.
            self.s_links.move_to_newest(&mut self.s, slot);
            self.entries[slot].lir = false;
            self.entries[slot].resident = true;
        } else {
            self.push_s(slot, false);
        }
        self.push_q(slot);
        false
    }
}

impl Policy for Lirs {
    fn record(&mut self, key: u64) -> bool {
        let hit = self.access(key);
        self.limit_stack();
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (key, lir, resident) of S from the top, and the keys of Q from the top.
    fn state(lirs: &Lirs) -> (Vec<(u64, bool, bool)>, Vec<u64>) {
        let s = lirs
            .s_links
            .iter_from_newest(&lirs.s)
            .map(|slot| {
                let e = lirs.entries[slot];
                (e.key, e.lir, e.resident)
            })
            .collect();
        let q = lirs
            .q_links
            .iter_from_newest(&lirs.q)
            .map(|slot| lirs.entries[slot].key)
            .collect();
        (s, q)
    }

    /// Capacity 3: LIR set of 2, Q of 1.
    fn warmed() -> Lirs {
        let mut lirs = Lirs::new(3).unwrap();
        for k in [1, 2, 3] {
            assert!(!lirs.record(k));
        }
        lirs
    }

    #[test]
    fn record_fill_first_keys_are_lir_then_hir() {
        let lirs = warmed();
        let (s, q) = state(&lirs);
        assert_eq!(s, vec![(3, false, true), (2, true, true), (1, true, true)]);
        assert_eq!(q, vec![3]);
    }

    #[test]
    fn record_new_key_evicts_q_and_leaves_non_resident_in_s() {
        let mut lirs = warmed();
        assert!(!lirs.record(4));
        let (s, q) = state(&lirs);
        assert_eq!(
            s,
            vec![
                (4, false, true),
                (3, false, false),
                (2, true, true),
                (1, true, true)
            ]
        );
        assert_eq!(q, vec![4]);
        assert_eq!(lirs.len(), 3);
    }

    #[test]
    fn record_non_resident_hir_in_s_becomes_lir_and_demotes_bottom() {
        let mut lirs = warmed();
        lirs.record(4);
        // 3 is non-resident in S: a miss; 3 becomes LIR, the bottom LIR key 1 is demoted to Q
        // (evicting 4 from Q, whose S entry turns non-resident), and S is pruned down to 2.
        assert!(!lirs.record(3));
        let (s, q) = state(&lirs);
        assert_eq!(s, vec![(3, true, true), (4, false, false), (2, true, true)]);
        assert_eq!(q, vec![1]);
        assert!(lirs.record(1)); // resident HIR in Q
        assert!(!lirs.record(4)); // non-resident
    }

    #[test]
    fn record_lir_hit_prunes_hir_from_bottom() {
        let mut lirs = warmed();
        lirs.record(4); // S: 4h 3n 2L 1L
        assert!(lirs.record(1)); // S: 1L 4h 3n 2L
        assert!(lirs.record(2)); // 2L to the top; 3 and 4 are now at the bottom and pruned
        let (s, q) = state(&lirs);
        assert_eq!(s, vec![(2, true, true), (1, true, true)]);
        assert_eq!(q, vec![4]);
        assert!(lirs.record(4)); // still resident in Q
    }

    #[test]
    fn record_resident_hir_in_s_becomes_lir() {
        let mut lirs = warmed();
        // 3 is resident HIR in S: a hit that makes it LIR; 1 (bottom LIR) is demoted to Q.
        assert!(lirs.record(3));
        let (s, q) = state(&lirs);
        assert_eq!(s, vec![(3, true, true), (2, true, true)]);
        assert_eq!(q, vec![1]);
    }

    #[test]
    fn record_q_hit_outside_s_with_one_entry_q_keeps_untracked_resident() {
        let mut lirs = warmed();
        assert!(lirs.record(1));
        assert!(lirs.record(2)); // prunes 3 (resident HIR) off S; 3 stays in Q
        assert_eq!(
            state(&lirs),
            (vec![(2, true, true), (1, true, true)], vec![3])
        );
        // libCacheSim's quirk: the hit on 3 demotes 1, whose move to the one-entry Q evicts 3
        // itself, yet 3's new S entry says resident.
        assert!(lirs.record(3));
        assert_eq!(
            state(&lirs),
            (vec![(3, false, true), (2, true, true)], vec![1])
        );
        assert_eq!((lirs.len(), lirs.untracked_residents()), (2, 1));
        // So 3 hits again, and becomes LIR.
        assert!(lirs.record(3));
        assert_eq!(
            state(&lirs),
            (vec![(3, true, true), (2, true, true)], vec![1])
        );
        assert_eq!((lirs.len(), lirs.untracked_residents()), (3, 0));
    }

    #[test]
    fn new_capacity_below_two_is_error() {
        assert!(matches!(
            Lirs::new(1),
            Err(ReferenceError::CapacityTooSmall { .. })
        ));
    }
}
