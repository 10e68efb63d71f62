//! The optional maintenance thread or tokio task ("pacer"): it sleeps until the next entry is
//! due, then expires what is due, so expired entries leave (and their listener runs) even when
//! nobody touches the cache.
//!
//! The pacer holds only a weak reference to the cache and ends as soon as the last handle is
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
//! **Pacing.** Rounds are at least [`PACE`] (10 ms) apart, in real time, so an entry's
//! listener runs at most that long after its deadline (readers never see it past the deadline
//! either way). A round takes every shard's lock twice, and without the pace a cache whose
//! writes each bring a new deadline woke the pacer at its write rate; paced, the pacer stays
//! below 1% of a core (measurements: `docs/decisions/0009-pacer-pace.md`). Caffeine's `Pacer`
//! batches wake-ups within about a second instead; 10 ms keeps listeners close to the deadline.
//! The pace is kept with the runner's own clock (`std::time::Instant` for the thread, tokio's
//! for the task, which its timers follow), not the cache's, which may be a manual clock that
//! never moves. A paused tokio clock (tests) jumps to each timer while the runtime idles, so
//! there the task keeps a core busy whenever some entry has a deadline, as it did before the
//! pace.
//!
//! The thread never blocks the cache's users beyond the usual maintenance of one shard at a time,
//! and it is stopped by the cache's `Drop` (a flag plus an unpark). A listener that panics on it
//! does not stop it: the round reports its other removals, the panic's message goes to the
//! panic hook, and the next round comes as planned.
//!
//! The tokio task (feature `tokio`) runs the same rounds; it waits with `tokio::time::timeout`
//! on a `Notify` instead of parking, and a notification sent while it is not waiting is kept for
//! its next wait, as an unpark is kept by the park token. A round is short, synchronous work
//! (one shard's lock at a time), so it runs on the runtime's worker directly.
//!
//! # References
//!
//! 1. B. Manes: Caffeine's `Pacer` and `Scheduler` (scheduled cleanup of expired entries).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::Thread;
use std::time::Duration;

use crate::build_error::BuildError;
use crate::shard::Alarm;

/// The longest the thread sleeps while some entry has a deadline: how late it notices a deadline
/// that a clock not following the wall clock (a manual one) jumped past.
pub const MAX_PARK: Duration = Duration::from_secs(1);

/// The shortest time between two rounds of the pacer: listeners at most this late, for under
/// 1% of a core (see the [module docs](self)).
pub(crate) const PACE: Duration = Duration::from_millis(10);

/// Nothing is planned.
const IDLE: u64 = u64::MAX;

/// Who runs the cache's maintenance besides the threads that use it (see
/// [`CacheBuilder::scheduler`](crate::builder::CacheBuilder::scheduler)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheduler {
    /// Nobody: expired entries are removed by the next write on their shard, by a read that
    /// finds them due when it replays the read buffer (every 32nd read), or by
    /// [`run_pending_tasks`](crate::sync::Cache::run_pending_tasks) (the default).
    #[default]
    None,
    /// A dedicated thread (named `cortado-pacer`) that wakes when the next entry is due, or
    /// 10 ms after its previous round if that is later: a listener hears of an expiration at
    /// most 10 ms after the deadline, and a stream of deadlines costs the thread under 1% of
    /// a core. While any entry has a deadline it sleeps by the wall clock, at most 1 s at a
    /// time, so with a cache clock that does not follow the wall clock (a
    /// [`ManualClock`](crate::time::ManualClock) moved by hand) it notices a deadline that a
    /// move passed within that second.
    Thread,
    /// A task on the tokio runtime that `build()` is called from (`build()` returns
    /// [`BuildError::NoTokioRuntime`] outside of one), which needs its time driver
    /// (`enable_time` or `enable_all`; [`BuildError::NoTokioTimeDriver`] otherwise). The task
    /// runs the maintenance, and so the eviction listener, on the runtime's threads. It lives
    /// as long as that runtime: a cache that outlives it (kept in a `static` and built in a
    /// `#[tokio::test]`, say) goes on without a scheduler, its expired entries removed only by
    /// its users' operations, as with [`Scheduler::None`].
    #[cfg(feature = "tokio")]
    Tokio,
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    /// When the pacer plans to wake, in the cache's clock.
    planned: AtomicU64,
    waker: OnceLock<Waker>,
    alive: Arc<AtomicBool>,
    /// Rounds run so far.
    #[cfg(test)]
    rounds: std::sync::atomic::AtomicUsize,
}

impl Shared {
    fn wake_by(&self, deadline: u64) {
        if deadline < self.planned.load(Ordering::SeqCst) {
            self.planned.fetch_min(deadline, Ordering::SeqCst);
            if let Some(waker) = self.waker.get() {
                waker.wake();
            }
        }
    }
}

/// What a shard needs when a read brings an expiration forward, where no front end sees it:
/// the pacer woken by the deadline, as [`PacerHandle::wake_by`] does.
impl Alarm for Shared {
    fn wake_by(&self, deadline: u64) {
        Shared::wake_by(self, deadline);
    }
}

/// The cache a pacer maintains, as the pacer sees it: implemented by the concurrent cache's
/// shared state, which this module does not name (dependencies point down).
pub(crate) trait Maintained: Send + Sync + 'static {
    /// Replays buffered reads and removes the expired entries of every shard, calling the
    /// listener.
    fn run_pending_tasks(&self);
    /// The earliest time any shard may have an entry to expire (cache clock).
    fn next_expiration(&self) -> Option<u64>;
    /// The cache's clock.
    fn now(&self) -> u64;
}

/// How to wake the pacer early.
#[derive(Debug)]
enum Waker {
    Thread(Thread),
    #[cfg(feature = "tokio")]
    Task(Arc<tokio::sync::Notify>),
}

impl Waker {
    fn wake(&self) {
        match self {
            Self::Thread(thread) => thread.unpark(),
            // A notification with nobody waiting is kept for the next wait, as a park token is.
            #[cfg(feature = "tokio")]
            Self::Task(notify) => notify.notify_one(),
        }
    }
}

/// Where the pacer runs.
#[derive(Debug)]
enum Runner {
    Thread,
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Handle),
}

/// The cache's side of the pacer.
#[derive(Debug)]
pub(crate) struct PacerHandle {
    shared: Arc<Shared>,
    runner: Runner,
}

/// Whether `runtime` has the time driver the task waits with. Tokio offers no query: making a
/// timer without the driver panics at once, so the probe makes one and catches that panic,
/// whose message still reaches the panic hook (stderr by default). Without the probe, the task
/// died at its first wait and the cache went on without its scheduler.
#[cfg(all(feature = "tokio", panic = "unwind"))]
fn has_time_driver(runtime: &tokio::runtime::Handle) -> bool {
    let _entered = runtime.enter();
    std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok()
}

/// Under `panic = "abort"` the probe's panic would end the process, so the driver is assumed:
/// a runtime without it aborts at the task's first wait instead (see
/// [`BuildError::NoTokioTimeDriver`]).
#[cfg(all(feature = "tokio", not(panic = "unwind")))]
fn has_time_driver(_: &tokio::runtime::Handle) -> bool {
    true
}

/// Clears the `alive` flag however the pacer ends.
struct Alive(Arc<AtomicBool>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl PacerHandle {
    /// The pacer that `scheduler` asks for, if any, or why it cannot run here.
    pub(crate) fn for_scheduler(scheduler: Scheduler) -> Result<Option<Self>, BuildError> {
        let runner = match scheduler {
            Scheduler::None => return Ok(None),
            Scheduler::Thread => Runner::Thread,
            #[cfg(feature = "tokio")]
            Scheduler::Tokio => {
                let runtime = tokio::runtime::Handle::try_current()
                    .map_err(|_| BuildError::NoTokioRuntime)?;
                if !has_time_driver(&runtime) {
                    return Err(BuildError::NoTokioTimeDriver);
                }
                Runner::Tokio(runtime)
            }
        };
        Ok(Some(Self {
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                planned: AtomicU64::new(IDLE),
                waker: OnceLock::new(),
                alive: Arc::new(AtomicBool::new(false)),
                #[cfg(test)]
                rounds: std::sync::atomic::AtomicUsize::new(0),
            }),
            runner,
        }))
    }

    /// Starts the pacer for the cache behind `cache`.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread.
    pub(crate) fn spawn<C: Maintained>(&self, cache: Weak<C>) {
        let shared = self.shared.clone();
        shared.alive.store(true, Ordering::SeqCst);
        let alive = Alive(shared.alive.clone());
        match &self.runner {
            Runner::Thread => {
                let handle = std::thread::Builder::new()
                    .name("cortado-pacer".into())
                    .spawn(move || {
                        let _alive = alive;
                        let mut next_round = std::time::Instant::now();
                        loop {
                            let now = std::time::Instant::now();
                            if now < next_round && !shared.stop.load(Ordering::SeqCst) {
                                std::thread::park_timeout(next_round - now);
                                continue;
                            }
                            let Some(wait) = step(&shared, &cache) else {
                                break;
                            };
                            next_round = std::time::Instant::now() + PACE;
                            match wait {
                                Some(wait) => std::thread::park_timeout(wait),
                                None => std::thread::park(),
                            }
                        }
                    })
                    .expect("spawn the cache's maintenance thread");
                let _ = self
                    .shared
                    .waker
                    .set(Waker::Thread(handle.thread().clone()));
            }
            #[cfg(feature = "tokio")]
            Runner::Tokio(runtime) => {
                let notify = Arc::new(tokio::sync::Notify::new());
                let _ = self.shared.waker.set(Waker::Task(notify.clone()));
                runtime.spawn(async move {
                    let _alive = alive;
                    let mut next_round = tokio::time::Instant::now();
                    loop {
                        let now = tokio::time::Instant::now();
                        if now < next_round && !shared.stop.load(Ordering::SeqCst) {
                            let _ = tokio::time::timeout(next_round - now, notify.notified()).await;
                            continue;
                        }
                        let Some(wait) = step(&shared, &cache) else {
                            break;
                        };
                        next_round = tokio::time::Instant::now() + PACE;
                        match wait {
                            Some(wait) => {
                                let _ = tokio::time::timeout(wait, notify.notified()).await;
                            }
                            None => notify.notified().await,
                        }
                    }
                });
            }
        }
    }

    /// Makes sure the pacer wakes by `deadline` (cache clock).
    #[inline]
    pub(crate) fn wake_by(&self, deadline: u64) {
        self.shared.wake_by(deadline);
    }

    /// A handle that only wakes the pacer, for a shard to keep.
    pub(crate) fn alarm(&self) -> Arc<dyn Alarm> {
        self.shared.clone()
    }

    /// Asks the pacer to end.
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(waker) = self.shared.waker.get() {
            waker.wake();
        }
    }

    /// A flag that is true while the pacer runs.
    pub(crate) fn alive(&self) -> Arc<AtomicBool> {
        self.shared.alive.clone()
    }

    /// The rounds the pacer has run.
    #[cfg(test)]
    pub(crate) fn rounds(&self) -> usize {
        self.shared.rounds.load(Ordering::SeqCst)
    }
}

/// One round of the pacer: expires what is due and says how long to wait before the next
/// round (`Some(None)`: until woken), or `None` when the pacer should end.
fn step<C: Maintained>(shared: &Shared, cache: &Weak<C>) -> Option<Option<Duration>> {
    if shared.stop.load(Ordering::SeqCst) {
        return None;
    }
    // Never wait holding the cache: the last handle may go meanwhile.
    let inner = cache.upgrade()?;
    shared.planned.store(IDLE, Ordering::SeqCst);
    #[cfg(test)]
    shared.rounds.fetch_add(1, Ordering::SeqCst);
    // A listener that panics here has had every removal of the round reported, and its
    // message has gone to the panic hook; the pacer goes on, as the cache's users would.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.run_pending_tasks()));
    let next = inner.next_expiration();
    let now = inner.now();
    drop(inner);
    Some(next.map(|next| {
        shared.planned.fetch_min(next, Ordering::SeqCst);
        Duration::from_nanos(next.saturating_sub(now)).min(MAX_PARK)
    }))
}
