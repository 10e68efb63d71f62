//! No eviction: the policy of a cache built without a capacity.
//!
//! It counts entries and keeps nothing per entry, so an unbounded cache pays no policy memory
//! (an LRU node is 16 bytes an entry) and no list update per read. It has no order either: a
//! capacity set later builds the configured policy from the entries in slab order, and
//! `hottest`/`coldest` list them in that order.

/// See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub(crate) struct Unbounded {
    len: u64,
}

impl Unbounded {
    pub(crate) fn insert(&mut self) {
        self.len += 1;
    }

    pub(crate) fn remove(&mut self) {
        self.len -= 1;
    }

    /// The number of entries: each weighs 1, as an unbounded cache has no weigher.
    pub(crate) fn weighted_size(&self) -> u64 {
        self.len
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}
