//! Removal notifications: why an entry left the cache, and the listener that hears about it.

use std::sync::Arc;

/// Why an entry was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemovalCause {
    /// The user removed it (`remove`, `retain`, `invalidate_all`).
    Explicit,
    /// An insert of the same key replaced its value.
    Replaced,
    /// Its deadline passed.
    Expired,
    /// The policy evicted it to respect the capacity.
    Size,
}

impl RemovalCause {
    /// Whether the cache removed the entry on its own (expiry or size).
    pub fn was_evicted(&self) -> bool {
        matches!(self, Self::Expired | Self::Size)
    }
}

/// A listener called with each removed entry, after the cache's own bookkeeping is done.
pub(crate) type Listener<K, V> = Arc<dyn Fn(&K, &V, RemovalCause) + Send + Sync>;
