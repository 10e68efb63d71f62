//! The optional maintenance thread: it sleeps until the next entry is due, then expires what is
//! due, so expired entries leave (and their listener runs) even when nobody touches the cache.
//!
//! The thread holds only a weak reference to the cache and ends as soon as the last handle is
//! dropped.
//!
//! # Design
//!
//! Like Caffeine's `Pacer`: the thread parks until the earliest deadline any shard reports (at
//! most [`MAX_PARK`], 1 s, so a clock that does not follow the wall clock, or a deadline missed
//! by a race, is caught up promptly). A write whose entry is due before the planned wake-up
//! unparks it early; the check is one atomic load per write.

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
    pub(crate) fn spawn<K, V, S>(&self, cache: Weak<Inner<K, V, S>>)
    where
        K: Hash + Eq + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
        S: BuildHasher + Send + Sync + 'static,
    {
        let shared = self.shared.clone();
        shared.alive.store(true, Ordering::SeqCst);
        let handle = std::thread::Builder::new()
            .name("cortado-pacer".into())
            .spawn(move || {
                run(&shared, &cache);
                shared.alive.store(false, Ordering::SeqCst);
            })
            .expect("spawn the cache's maintenance thread");
        let _ = self.shared.thread.set(handle.thread().clone());
    }

    /// Makes sure the thread wakes by `deadline` (cache clock).
    #[inline]
    pub(crate) fn wake_by(&self, deadline: u64) {
        if deadline < self.shared.planned.load(Ordering::Relaxed) {
            self.shared.planned.store(deadline, Ordering::Relaxed);
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
        shared.planned.store(IDLE, Ordering::Relaxed);
        inner.run_pending_tasks();
        let next = inner.next_expiration();
        let now = inner.now();
        drop(inner);
        match next {
            Some(next) => {
                shared.planned.fetch_min(next, Ordering::Relaxed);
                let wait = Duration::from_nanos(next.saturating_sub(now)).min(MAX_PARK);
                std::thread::park_timeout(wait);
            }
            None => std::thread::park(),
        }
    }
}
