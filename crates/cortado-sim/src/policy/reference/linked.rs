//! Doubly linked lists threaded through `u32` slot indices, and the slab of slots they link.
//!
//! A [`Slab`] hands out slot indices and recycles freed ones; a [`Links`] stores, per slot, the
//! neighbours of that slot in whichever [`List`] holds it, so several disjoint lists (ARC's T1, T2,
//! B1, B2) can share one `Links`, and a slot that sits in several lists at once (LIRS's stack S and
//! queue Q) uses one `Links` per list.
//!
//! # Design
//!
//! Index lists in `Vec`s instead of pointers: no `unsafe`, no per-request allocation once the
//! vectors reach their peak size, and 8 bytes of links per slot and list. A list has a *newest* end
//! (where insertions go; the head of a libCacheSim queue) and an *oldest* end (where eviction
//! looks; the tail). [`NIL`] marks "no slot". Membership is not tracked here: a policy remembers
//! which list a slot is in, and calling [`Links::unlink`] for a slot that is not in the list
//! corrupts it (checked by `debug_assert!`s).
//!
//! # References
//!
//! 1. arthurprs/quick-cache: the "linked slab" of `u32` indices.

/// The absent slot.
pub const NIL: u32 = u32::MAX;

/// The two ends and the length of one list; the links themselves live in a [`Links`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List {
    newest: u32,
    oldest: u32,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        Self::new()
    }
}

impl List {
    /// An empty list.
    pub const fn new() -> Self {
        Self {
            newest: NIL,
            oldest: NIL,
            len: 0,
        }
    }

    /// Number of slots in the list.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list holds no slot.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most recently inserted (or moved) slot.
    #[inline]
    pub fn newest(&self) -> Option<u32> {
        (self.newest != NIL).then_some(self.newest)
    }

    /// The slot at the eviction end.
    #[inline]
    pub fn oldest(&self) -> Option<u32> {
        (self.oldest != NIL).then_some(self.oldest)
    }
}

/// Per-slot neighbour indices for the lists that use it.
#[derive(Debug, Default, Clone)]
pub struct Links {
    /// `[newer, older]` per slot: both in one 8-byte cell, so an unlink touches one cache line per
    /// slot involved.
    cells: Vec<[u32; 2]>,
}

const NEWER: usize = 0;
const OLDER: usize = 1;

impl Links {
    /// Links with room for `slots` slots (at most [`crate::policy::PRESIZE_LIMIT`]) before they
    /// grow.
    pub fn with_capacity(slots: usize) -> Self {
        Self {
            cells: Vec::with_capacity(crate::policy::presize(slots)),
        }
    }

    #[inline]
    fn ensure(&mut self, slot: u32) {
        let needed = slot as usize + 1;
        if needed > self.cells.len() {
            self.cells.resize(needed, [NIL, NIL]);
        }
    }

    /// The neighbour of `slot` on the newest side, or [`NIL`].
    #[inline]
    pub fn newer(&self, slot: u32) -> u32 {
        self.cells[slot as usize][NEWER]
    }

    /// The neighbour of `slot` on the oldest side, or [`NIL`].
    #[inline]
    pub fn older(&self, slot: u32) -> u32 {
        self.cells[slot as usize][OLDER]
    }

    /// Inserts `slot` (in no list of these links) at the newest end of `list`.
    #[inline]
    pub fn push_newest(&mut self, list: &mut List, slot: u32) {
        self.ensure(slot);
        self.cells[slot as usize] = [NIL, list.newest];
        if list.newest == NIL {
            list.oldest = slot;
        } else {
            self.cells[list.newest as usize][NEWER] = slot;
        }
        list.newest = slot;
        list.len += 1;
    }

    /// Removes `slot`, which must be in `list`.
    #[inline]
    pub fn unlink(&mut self, list: &mut List, slot: u32) {
        debug_assert!(list.len > 0);
        let [newer, older] = self.cells[slot as usize];
        if newer == NIL {
            debug_assert_eq!(list.newest, slot);
            list.newest = older;
        } else {
            self.cells[newer as usize][OLDER] = older;
        }
        if older == NIL {
            debug_assert_eq!(list.oldest, slot);
            list.oldest = newer;
        } else {
            self.cells[older as usize][NEWER] = newer;
        }
        self.cells[slot as usize] = [NIL, NIL];
        list.len -= 1;
    }

    /// Moves `slot`, which must be in `list`, to its newest end.
    #[inline]
    pub fn move_to_newest(&mut self, list: &mut List, slot: u32) {
        if list.newest != slot {
            self.unlink(list, slot);
            self.push_newest(list, slot);
        }
    }

    /// Removes and returns the oldest slot of `list`.
    #[inline]
    pub fn pop_oldest(&mut self, list: &mut List) -> Option<u32> {
        let slot = list.oldest()?;
        self.unlink(list, slot);
        Some(slot)
    }

    /// The slots of `list` from newest to oldest (for tests and invariant checks).
    pub fn iter_from_newest<'a>(&'a self, list: &List) -> impl Iterator<Item = u32> + 'a {
        let mut at = list.newest;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let slot = at;
                at = self.cells[slot as usize][OLDER];
                slot
            })
        })
    }
}

/// A vector of entries whose freed slots are reused.
#[derive(Debug, Clone)]
pub struct Slab<T> {
    entries: Vec<T>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    /// An empty slab with room for `capacity` entries (at most
    /// [`crate::policy::PRESIZE_LIMIT`]) before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Vec::with_capacity(crate::policy::presize(capacity)),
            free: Vec::new(),
        }
    }

    /// Stores `value` in a free slot (a recycled one first) and returns the slot.
    #[inline]
    pub fn insert(&mut self, value: T) -> u32 {
        if let Some(slot) = self.free.pop() {
            self.entries[slot as usize] = value;
            slot
        } else {
            let slot = self.entries.len();
            debug_assert!(slot < NIL as usize);
            self.entries.push(value);
            slot as u32
        }
    }

    /// Marks `slot` free; its value stays until the slot is reused.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;

    #[inline]
    fn index(&self, slot: u32) -> &T {
        &self.entries[slot as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, slot: u32) -> &mut T {
        &mut self.entries[slot as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(links: &Links, list: &List) -> Vec<u32> {
        links.iter_from_newest(list).collect()
    }

    #[test]
    fn push_newest_three_slots_newest_first() {
        let mut links = Links::default();
        let mut list = List::new();
        for slot in [4, 0, 9] {
            links.push_newest(&mut list, slot);
        }
        assert_eq!(order(&links, &list), vec![9, 0, 4]);
        assert_eq!(list.oldest(), Some(4));
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn unlink_middle_and_ends_keeps_rest_linked() {
        let mut links = Links::default();
        let mut list = List::new();
        for slot in 0..5 {
            links.push_newest(&mut list, slot);
        }
        links.unlink(&mut list, 2);
        assert_eq!(order(&links, &list), vec![4, 3, 1, 0]);
        links.unlink(&mut list, 4);
        links.unlink(&mut list, 0);
        assert_eq!(order(&links, &list), vec![3, 1]);
        assert_eq!(links.newer(1), 3);
        assert_eq!(links.older(1), NIL);
        assert_eq!((list.newest(), list.oldest()), (Some(3), Some(1)));
    }

    #[test]
    fn move_to_newest_oldest_slot_becomes_newest() {
        let mut links = Links::default();
        let mut list = List::new();
        for slot in 0..3 {
            links.push_newest(&mut list, slot);
        }
        links.move_to_newest(&mut list, 0);
        assert_eq!(order(&links, &list), vec![0, 2, 1]);
        assert_eq!(links.pop_oldest(&mut list), Some(1));
        assert_eq!(links.pop_oldest(&mut list), Some(2));
        assert_eq!(links.pop_oldest(&mut list), Some(0));
        assert_eq!(links.pop_oldest(&mut list), None);
        assert!(list.is_empty());
    }

    #[test]
    fn shared_links_two_lists_stay_disjoint() {
        let mut links = Links::default();
        let (mut a, mut b) = (List::new(), List::new());
        links.push_newest(&mut a, 0);
        links.push_newest(&mut b, 1);
        links.push_newest(&mut a, 2);
        links.unlink(&mut a, 0);
        links.push_newest(&mut b, 0);
        assert_eq!(order(&links, &a), vec![2]);
        assert_eq!(order(&links, &b), vec![0, 1]);
    }

    #[test]
    fn slab_removed_slot_is_reused() {
        let mut slab = Slab::with_capacity(2);
        let a = slab.insert('a');
        let b = slab.insert('b');
        slab.remove(a);
        assert_eq!(slab.len(), 1);
        let c = slab.insert('c');
        assert_eq!(c, a);
        assert_eq!((slab[b], slab[c]), ('b', 'c'));
    }
}
