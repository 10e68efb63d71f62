//! The shards' lock as the front end takes it, and, in builds with debug assertions, the check
//! that a callback run under it does not use its own cache (see [Callbacks](super#callbacks)).

#[cfg(debug_assertions)]
use std::cell::RefCell;

use crate::shard_lock::{ReadGuard, ShardLock, WriteGuard};

// A panic under a shard's lock (a user's weigher, expiry or hasher) leaves the shard consistent
// at every such call site (they run before any change); the shards' lock does not poison, and
// the poison of the other mutexes is ignored for the same reason.
pub(super) fn read<T>(lock: &ShardLock<T>) -> ReadGuard<'_, T> {
    Holding::refuse_reentry(lock);
    lock.read()
}

pub(super) fn write<T>(lock: &ShardLock<T>) -> WriteGuard<'_, T> {
    Holding::refuse_reentry(lock);
    lock.write()
}

#[cfg(debug_assertions)]
thread_local! {
    /// The address ranges of the shards of the caches whose shard this thread holds (for
    /// writing, or shared around an `expire_after_read`) while it runs an operation's code and
    /// the user's callbacks in it, innermost last: a compute of one cache may use another, whose
    /// callback may not use the first. Reached with `try_with`, as `sync::loading`'s `RUNNING`
    /// is: a cache used from another local's destructor, after this one's, checks nothing.
    static HOLDING: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// In builds with debug assertions, marks this thread as working under a lock of a cache's
/// shard until dropped (also when a callback panics), so that a callback that uses
/// the cache it was called from (a compute reading another key, a weigher calling `get`)
/// panics with the reason. On its own shard such a use would wait for itself forever; on
/// another, it may deadlock with a thread doing the same the other way round, and only does
/// so when the keys meet: the check makes the mistake show in every test run. Release builds
/// check nothing: checking there cost every operation instructions
/// (`docs/decisions/0007-reentry-check-in-debug-builds-only.md`).
pub(super) struct Holding;

impl Holding {
    #[inline]
    pub(super) fn enter<T>(_shards: &[T]) -> Self {
        #[cfg(debug_assertions)]
        let _ = HOLDING.try_with(|holding| {
            let range = _shards.as_ptr_range();
            holding
                .borrow_mut()
                .push((range.start as usize, range.end as usize));
        });
        Self
    }

    /// Panics if `_lock` is one of the shards of a cache this thread works under.
    #[inline]
    pub(super) fn refuse_reentry<T>(_lock: &ShardLock<T>) {
        #[cfg(debug_assertions)]
        {
            let at = std::ptr::from_ref(_lock) as usize;
            let held = HOLDING.try_with(|holding| {
                holding
                    .borrow()
                    .iter()
                    .any(|&(start, end)| (start..end).contains(&at))
            });
            assert!(
                !held.unwrap_or(false),
                "a callback (a compute, `retain`, a weigher or an expiry rule) used the cache it \
                 was called from, under the lock of one of its shards: callbacks must not use \
                 their cache"
            );
        }
    }
}

impl Drop for Holding {
    #[inline]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        let _ = HOLDING.try_with(|holding| holding.borrow_mut().pop());
    }
}
