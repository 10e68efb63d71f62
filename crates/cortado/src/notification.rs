//! Removal notifications: why an entry left the cache, and the listener that hears about it.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
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

/// What a run of listener calls owes its caller: the first panic, passed on once every removal
/// of the run has been heard, so that one panicking call does not silence the others.
#[derive(Default)]
pub(crate) struct Hearing {
    panic: Option<Box<dyn Any + Send>>,
}

impl Hearing {
    /// Tells `listener` of one removal; a panic is kept for [`finish`](Self::finish).
    pub(crate) fn hear<K, V>(
        &mut self,
        listener: &Listener<K, V>,
        key: &K,
        value: &V,
        cause: RemovalCause,
    ) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| listener(key, value, cause))) {
            self.panic.get_or_insert(panic);
        }
    }

    /// Resumes the first panic a call raised, if any.
    pub(crate) fn finish(self) {
        if let Some(panic) = self.panic {
            resume_unwind(panic);
        }
    }
}
