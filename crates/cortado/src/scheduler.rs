//! The optional maintenance thread ("pacer"): it sleeps until the next entry is due, then expires
//! what is due, so expired entries leave (and their listener runs) even when nobody touches the
//! cache.
//!
//! The thread holds only a weak reference to the cache and ends as soon as the last handle is
//! dropped.
//!
//! # Design
//!
//! Like Caffeine's `Pacer`: the thread parks until the earliest deadline any shard reports, and
//! at most [`MAX_PARK`] (1 s), so a clock that does not follow the wall clock (a
//! [`ManualClock`](crate::time::ManualClock)) is still caught up promptly. `planned` holds the
//! time the thread means to wake; a write whose entry is due earlier lowers it and unparks the
//! thread (one atomic load per write when it is not earlier). The thread resets `planned` before
//! it looks at the shards, so a write racing with that look either is seen by it or finds
//! `planned` reset and unparks; an unpark before the park is kept by the thread's park token, so
//! no wake-up is lost.
//!
//! The thread never blocks the cache's users beyond the usual maintenance of one shard at a time,
//! and it is stopped by the cache's `Drop` (a flag plus an unpark). Should a listener panic on
//! it, the thread ends and the cache goes on with maintenance on the calling threads.
//!
//! # References
//!
//! 1. B. Manes: Caffeine's `Pacer` and `Scheduler` (scheduled cleanup of expired entries).

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::Thread;
use std::time::Duration;

use crate::sync::Inner;

/// The longest the thread sleeps while some entry has a deadline.
pub const MAX_PARK: Duration = Duration::from_secs(1);

/// Nothing is planned.
const IDLE: u64 = u64::MAX;

/// Who runs the cache's maintenance besides the threads that use it (see
/// [`CacheBuilder::scheduler`](crate::builder::CacheBuilder::scheduler)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheduler {
    /// Nobody: expired entries are removed by the next write or
    /// [`run_pending_tasks`](crate::sync::Cache::run_pending_tasks) on their shard (the default).
    #[default]
    None,
    /// A dedicated thread (named `cortado-pacer`) that wakes when the next entry is due.
    Thread,
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    /// When the thread plans to wake, in the cache's clock.
    planned: AtomicU64,
    thread: OnceLock<Thread>,
    alive: Arc<AtomicBool>,
}

/// The cache's side of the maintenance thread.
#[derive(Debug)]
pub(crate) struct PacerHandle {
    shared: Arc<Shared>,
}

/// Clears the `alive` flag however the thread ends.
struct Alive(Arc<AtomicBool>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl PacerHandle {
    pub(crate) fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                planned: AtomicU64::new(IDLE),
                thread: OnceLock::new(),
                alive: Arc::new(AtomicBool::new(false)),
            }),
        }
    }

    /// Starts the thread for the cache behind `cache`.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread.
    pub(crate) fn spawn<K, V, S>(&self, cache: Weak<Inner<K, V, S>>)
    where
        K: Hash + Eq + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
        S: BuildHasher + Send + Sync + 'static,
    {
        let shared = self.shared.clone();
        shared.alive.store(true, Ordering::SeqCst);
        let alive = Alive(shared.alive.clone());
        let handle = std::thread::Builder::new()
            .name("cortado-pacer".into())
            .spawn(move || {
                let _alive = alive;
                run(&shared, &cache);
            })
            .expect("spawn the cache's maintenance thread");
        let _ = self.shared.thread.set(handle.thread().clone());
    }

    /// Makes sure the thread wakes by `deadline` (cache clock).
    #[inline]
    pub(crate) fn wake_by(&self, deadline: u64) {
        if deadline < self.shared.planned.load(Ordering::SeqCst) {
            self.shared.planned.fetch_min(deadline, Ordering::SeqCst);
            if let Some(thread) = self.shared.thread.get() {
                thread.unpark();
            }
        }
    }

    /// Asks the thread to end.
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.shared.thread.get() {
            thread.unpark();
        }
    }

    /// A flag that is true while the thread runs.
    pub(crate) fn alive(&self) -> Arc<AtomicBool> {
        self.shared.alive.clone()
    }
}

fn run<K, V, S>(shared: &Shared, cache: &Weak<Inner<K, V, S>>)
where
    K: Hash + Eq,
    V: Clone,
    S: BuildHasher,
{
    while !shared.stop.load(Ordering::SeqCst) {
        let Some(inner) = cache.upgrade() else {
            return;
        };
        shared.planned.store(IDLE, Ordering::SeqCst);
        inner.run_pending_tasks();
        let next = inner.next_expiration();
        let now = inner.now();
        // Never sleep holding the cache: the last handle may go meanwhile.
        drop(inner);
        match next {
            Some(next) => {
                shared.planned.fetch_min(next, Ordering::SeqCst);
                let wait = Duration::from_nanos(next.saturating_sub(now)).min(MAX_PARK);
                std::thread::park_timeout(wait);
            }
            None => std::thread::park(),
        }
    }
}
