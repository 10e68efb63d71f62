//! Miss coalescing for loaders: on a miss, one caller per key runs the loader and every concurrent
//! caller for that key waits for its outcome (stampede protection).
//!
//! The loader's outcome (a value, an error, "nothing") is handed to every waiter; if the loader
//! panics or its future is dropped, waiters are released with [`Outcome::Abandoned`] and retry, so
//! a key is never left locked.
//!
//! # Design
//!
//! Each shard keeps a map from key to the [`Waiter`] of the load in flight ([`Loading`]). The
//! first caller to [`join`](Loading::join) a key inserts a waiter and gets a [`LoadGuard`]; later
//! callers get a [`Wait`] future on the same waiter. Completing the guard removes the map entry
//! and then publishes the outcome; dropping it uncompleted (a panic unwinding, a cancelled future)
//! publishes [`Outcome::Abandoned`] the same way, so no path leaves waiters behind. Removing the
//! entry first means a caller that arrives after the outcome is published starts a fresh load
//! rather than reading a stale one. A [superseded](Loading::supersede) load leaves the map at
//! once, for the same reason: a caller after the write that superseded it loads afresh.
//!
//! Waiting is a future for both front ends: a waiter is a mutex over the outcome and the wakers
//! to call, and the blocking front end drives the same future with a thread-parking
//! [`block_on`](crate::shim::block_on). The map and the waiters only ever hold the lock for a few
//! instructions (and a clone of the outcome); wakers are called after it is released. A
//! [supersession](Loading::supersede) wakes the waiters too (a compute waiting for the load then
//! goes on), after the waiter's lock but under the map's and the shard's: a waker only schedules
//! its task (as tokio's, async-std's, smol's and the blocking front end's do), it does not poll
//! it on the spot. A waker that panics does not keep the others from being woken; its panic
//! reaches the caller that completed or superseded the load, after them.
//!
//! The module is model checked with shuttle (`model_check`): its tests run over many
//! interleavings, checking that one caller loads at a time and that every waiter is released.

use std::any::Any;
use std::future::Future;
use std::hash::Hash;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use hashbrown::HashMap;

use super::shim::{Arc, Mutex, MutexGuard};
use crate::notification::RemovalCause;

/// Runs its closure when dropped, unless [disarmed](Self::disarm) first: what must happen
/// however a loader run ends, a panic and a dropped future included.
pub(crate) struct OnDrop<F: FnMut()>(pub(crate) Option<F>);

impl<F: FnMut()> OnDrop<F> {
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = &mut self.0 {
            f();
        }
    }
}

/// How a load ended.
pub(crate) enum Outcome<V> {
    /// The loader produced this value (now cached).
    Value(V),
    /// The loader produced nothing (`optionally_get_with`).
    Absent,
    /// The loader failed with this error (an `Arc<E>` behind `Any`).
    Failed(Arc<dyn Any + Send + Sync>),
    /// The loader panicked or was cancelled: waiters should retry.
    Abandoned,
}

impl<V: Clone> Clone for Outcome<V> {
    fn clone(&self) -> Self {
        match self {
            Self::Value(v) => Self::Value(v.clone()),
            Self::Absent => Self::Absent,
            Self::Failed(e) => Self::Failed(e.clone()),
            Self::Abandoned => Self::Abandoned,
        }
    }
}

impl<V> std::fmt::Debug for Outcome<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Value(_) => "Value",
            Self::Absent => "Absent",
            Self::Failed(_) => "Failed",
            Self::Abandoned => "Abandoned",
        })
    }
}

struct State<V> {
    outcome: Option<Outcome<V>>,
    /// The waker of each pending [`Wait`], by the number it registered under: a `Wait` dropped
    /// before the outcome (a timeout, a `select!`) takes its waker out, so that a load that
    /// never ends does not hold on to every task that gave up on it.
    wakers: Vec<(u64, Waker)>,
    /// The number the next registration gets.
    next_registration: u64,
    /// How the first write to the key while the load ran (an insert, a removal) would have
    /// removed the loaded value: it is then handed to the callers and reported to the listener
    /// with that cause, but not cached (see [`Loading::supersede`]).
    superseded: Option<RemovalCause>,
    /// Whether the loader has had its second look at the cache ([`LoadGuard::look`]).
    looked: bool,
}

/// The meeting point of one load and its waiters.
pub(crate) struct Waiter<V> {
    state: Mutex<State<V>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only a panicking `Clone` of a value can poison these locks, and it leaves them consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<V: Clone> Waiter<V> {
    fn new() -> Self {
        Self {
            state: Mutex::new(State {
                outcome: None,
                wakers: Vec::new(),
                next_registration: 0,
                superseded: None,
                looked: false,
            }),
        }
    }

    fn complete(&self, outcome: Outcome<V>) {
        let wakers = {
            let mut state = lock(&self.state);
            state.outcome = Some(outcome);
            std::mem::take(&mut state.wakers)
        };
        wake_all(wakers);
    }
}

impl<V> Waiter<V> {
    /// Marks the load superseded by a write with `cause`, unless its loader has not looked at
    /// the cache yet (the look sees the write); whether it did.
    ///
    /// Its waiters are woken: a compute waiting for the load ([`Loading::looked`]) then goes on,
    /// since the load has as good as ended; a caller waiting for its outcome goes back to wait.
    fn supersede(&self, cause: RemovalCause) -> bool {
        let wakers = {
            let mut state = lock(&self.state);
            if !state.looked {
                return false;
            }
            let first = state.superseded.is_none();
            state.superseded.get_or_insert(cause);
            if first {
                std::mem::take(&mut state.wakers)
            } else {
                Vec::new()
            }
        };
        wake_all(wakers);
        true
    }
}

/// Wakes every waker, even when one panics: the panic would otherwise drop the rest unwoken
/// and leave their waiters pending for good. The first panic is raised again once all are
/// woken, unless this thread is already unwinding (a loader's panic dropping its guard), where
/// a second panic would abort the process; it is then dropped.
fn wake_all(wakers: Vec<(u64, Waker)>) {
    let mut first_panic = None;
    for (_, waker) in wakers {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
            first_panic.get_or_insert(panic);
        }
    }
    if let Some(panic) = first_panic {
        if !std::thread::panicking() {
            resume_unwind(panic);
        }
    }
}

/// Waits for another caller's load; resolves to its outcome.
pub(crate) struct Wait<V> {
    waiter: Arc<Waiter<V>>,
    /// The number its waker is registered under, once polled.
    registration: Option<u64>,
    /// Waits only until the load ends or is superseded, for a compute, which needs no outcome
    /// (it resolves to [`Outcome::Abandoned`], and clones no value).
    until_superseded: bool,
}

impl<V> Wait<V> {
    fn new(waiter: Arc<Waiter<V>>) -> Self {
        Self {
            waiter,
            registration: None,
            until_superseded: false,
        }
    }

    /// Names the load waited for (the same as its [`LoadGuard::id`]).
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.waiter) as usize
    }
}

impl<V: Clone> Future for Wait<V> {
    type Output = Outcome<V>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<V>> {
        let this = self.get_mut();
        let mut state = lock(&this.waiter.state);
        if this.until_superseded && (state.outcome.is_some() || state.superseded.is_some()) {
            if let Some(at) = this
                .registration
                .take()
                .and_then(|id| state.wakers.iter().position(|(r, _)| *r == id))
            {
                state.wakers.swap_remove(at);
            }
            return Poll::Ready(Outcome::Abandoned);
        }
        if let Some(outcome) = &state.outcome {
            // Completing took every registration out.
            this.registration = None;
            return Poll::Ready(outcome.clone());
        }
        let registered = this
            .registration
            .and_then(|id| state.wakers.iter_mut().find(|(r, _)| *r == id));
        match registered {
            Some((_, waker)) => {
                if !waker.will_wake(cx.waker()) {
                    waker.clone_from(cx.waker());
                }
            }
            None => {
                let id = state.next_registration;
                state.next_registration += 1;
                state.wakers.push((id, cx.waker().clone()));
                this.registration = Some(id);
            }
        }
        Poll::Pending
    }
}

impl<V> Drop for Wait<V> {
    fn drop(&mut self) {
        if let Some(id) = self.registration {
            let mut state = lock(&self.waiter.state);
            if let Some(at) = state.wakers.iter().position(|(r, _)| *r == id) {
                state.wakers.swap_remove(at);
            }
        }
    }
}

/// What a caller that missed should do.
pub(crate) enum Role<'a, K: Hash + Eq, V: Clone> {
    /// Run the loader, then complete the guard.
    Load(LoadGuard<'a, K, V>),
    /// Wait for another caller's load.
    Wait(Wait<V>),
}

/// The loads in flight of one shard.
pub(crate) struct Loading<K, V> {
    in_flight: Mutex<HashMap<K, Arc<Waiter<V>>>>,
}

impl<K, V> Default for Loading<K, V> {
    fn default() -> Self {
        Self {
            in_flight: Mutex::new(HashMap::new()),
        }
    }
}

impl<K, V> Loading<K, V> {
    /// Loads in flight.
    pub(crate) fn len(&self) -> usize {
        lock(&self.in_flight).len()
    }

    /// Supersedes every load in flight (see [`supersede`](Self::supersede)).
    pub(crate) fn supersede_all(&self, cause: RemovalCause) {
        lock(&self.in_flight).retain(|_, waiter| !waiter.supersede(cause));
    }
}

impl<K: Hash + Eq, V> Loading<K, V> {
    /// Marks the load of `key` in flight, if any, as superseded: a write to the key came after
    /// the loader's look at the cache, so its value must not be cached over the write. The write
    /// is taken to come after the load ended, so the loaded value is reported as removed by it,
    /// with `cause` (`Replaced` by an insert, `Explicit` for a removal), and the load leaves the
    /// map: its waiters so far still get its outcome, but a caller after the write loads afresh.
    ///
    /// The caller holds the lock of the shard that the loader's look at the cache and its
    /// caching also take, so a load either sees the write or is marked before it caches. A
    /// load is in the map from its join, before its look ([`LoadGuard::look`]): a write before
    /// the look is seen by it and leaves the load alone.
    pub(crate) fn supersede<Q>(&self, key: &Q, cause: RemovalCause)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut in_flight = lock(&self.in_flight);
        if in_flight
            .get(key)
            .is_some_and(|waiter| waiter.supersede(cause))
        {
            in_flight.remove(key);
        }
    }
}

impl<K: Hash + Eq, V: Clone> Loading<K, V> {
    /// The load of `key` in flight that a write would [supersede](Self::supersede) (its loader
    /// has looked at the cache), to wait for: a compound write that reads the key must come
    /// after that load, not in the middle of it. Called under the shard's lock.
    pub(crate) fn looked<Q>(&self, key: &Q) -> Option<Wait<V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let in_flight = lock(&self.in_flight);
        let waiter = in_flight.get(key)?;
        let looked = lock(&waiter.state).looked;
        looked.then(|| {
            let mut wait = Wait::new(waiter.clone());
            wait.until_superseded = true;
            wait
        })
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Loading<K, V> {
    /// Joins the load of `key` in flight, or starts one.
    ///
    /// The key is cloned before the map is locked: a `Clone` is the user's code, and the map's
    /// lock is taken under a shard's lock by every write that watches loads.
    pub(crate) fn join(&self, key: &K) -> Role<'_, K, V> {
        match self.register(key, K::clone) {
            Ok(started) => Role::Load(started.attach(self)),
            Err(waiter) => Role::Wait(Wait::new(waiter)),
        }
    }
}

impl<K: Hash + Eq, V: Clone> Loading<K, V> {
    /// Starts a load of `key` to be run elsewhere (a background refresh), or `None` if one is
    /// in flight: the caller does not wait for it. `clone` clones the key (callers that cannot
    /// name `K: Clone` pass the cache's own). The load is in the map until the
    /// [`Started`] is [attached](Started::attach) to this map and its guard completed or
    /// dropped: whoever holds it must attach it, also when the run is given up.
    pub(crate) fn start(&self, key: &K, clone: impl Fn(&K) -> K) -> Option<Started<K, V>> {
        self.register(key, clone).ok()
    }

    /// Puts a new load of `key` in the map, or hands back the waiter of the one in flight.
    fn register(&self, key: &K, clone: impl Fn(&K) -> K) -> Result<Started<K, V>, Arc<Waiter<V>>> {
        if let Some(waiter) = lock(&self.in_flight).get(key) {
            return Err(waiter.clone());
        }
        // A load to start, unless another caller starts it while the key is cloned.
        let (in_map, in_guard) = (clone(key), clone(key));
        let mut in_flight = lock(&self.in_flight);
        if let Some(waiter) = in_flight.get(key) {
            return Err(waiter.clone());
        }
        let waiter = Arc::new(Waiter::new());
        in_flight.insert(in_map, waiter.clone());
        Ok(Started {
            key: in_guard,
            waiter,
        })
    }
}

/// A load in the map whose [`LoadGuard`] is not made yet: it can move to another thread or
/// task, which [attaches](Self::attach) it to the map it came from.
pub(crate) struct Started<K, V> {
    key: K,
    waiter: Arc<Waiter<V>>,
}

impl<K: Hash + Eq, V: Clone> Started<K, V> {
    /// The guard of this load, which must be `loading`, the map that started it.
    pub(crate) fn attach(self, loading: &Loading<K, V>) -> LoadGuard<'_, K, V> {
        LoadGuard {
            loading,
            key: self.key,
            waiter: self.waiter,
            done: false,
        }
    }

    /// [`LoadGuard::look`], before the guard is made.
    pub(crate) fn look(&self) {
        lock(&self.waiter.state).looked = true;
    }
}

/// Held by the caller that runs the loader; see the [module docs](self).
pub(crate) struct LoadGuard<'a, K: Hash + Eq, V: Clone> {
    loading: &'a Loading<K, V>,
    key: K,
    waiter: Arc<Waiter<V>>,
    done: bool,
}

impl<K: Hash + Eq, V: Clone> LoadGuard<'_, K, V> {
    /// Names this load while it is in flight.
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.waiter) as usize
    }

    /// The cause of the first write to the key that [superseded](Loading::supersede) this load,
    /// if any so far.
    pub(crate) fn superseded(&self) -> Option<RemovalCause> {
        lock(&self.waiter.state).superseded
    }

    /// Records the loader's second look at the cache, which calls it under the shard's lock:
    /// from then on a write to the key [supersedes](Loading::supersede) the load.
    pub(crate) fn look(&self) {
        lock(&self.waiter.state).looked = true;
    }

    /// Publishes the outcome to every waiter and ends the load.
    pub(crate) fn complete(mut self, outcome: Outcome<V>) {
        self.finish(outcome);
    }

    fn finish(&mut self, outcome: Outcome<V>) {
        self.done = true;
        {
            let mut in_flight = lock(&self.loading.in_flight);
            if in_flight
                .get(&self.key)
                .is_some_and(|w| Arc::ptr_eq(w, &self.waiter))
            {
                in_flight.remove(&self.key);
            }
        }
        self.waiter.complete(outcome);
    }
}

impl<K: Hash + Eq, V: Clone> Drop for LoadGuard<'_, K, V> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Outcome::Abandoned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::shim::{
        atomic::AtomicU32, atomic::Ordering, block_on, model, model_threads, thread,
    };
    use super::*;

    #[test]
    fn join_second_caller_waits_for_first() {
        model(|| {
            let loading = Loading::<u32, u32>::default();
            let Role::Load(guard) = loading.join(&1) else {
                panic!("first caller must load");
            };
            let Role::Wait(wait) = loading.join(&1) else {
                panic!("second caller must wait");
            };
            assert!(
                matches!(loading.join(&2), Role::Load(_)),
                "keys are independent"
            );
            assert_eq!(wait.id(), guard.id());
            guard.complete(Outcome::Value(7));
            assert!(matches!(block_on(wait), Outcome::Value(7)));
            assert_eq!(loading.len(), 0);
            assert!(matches!(loading.join(&1), Role::Load(_)));
        });
    }

    #[test]
    fn looked_names_load_only_after_its_look_and_until_it_ends() {
        model_threads(|| {
            let loading = Arc::new(Loading::<u32, u32>::default());
            assert!(loading.looked(&1).is_none(), "nothing in flight");
            let Role::Load(guard) = loading.join(&1) else {
                panic!("first caller must load");
            };
            assert!(
                loading.looked(&1).is_none(),
                "a write before the look is seen by it"
            );
            guard.look();
            let wait = loading
                .looked(&1)
                .expect("a load past its look is waited for");
            assert_eq!(wait.id(), guard.id());
            assert!(loading.looked(&2).is_none(), "keys are independent");
            guard.complete(Outcome::Value(7));
            assert!(
                matches!(block_on(wait), Outcome::Abandoned),
                "a compute's wait clones no outcome"
            );
            assert!(
                loading.looked(&1).is_none(),
                "an ended load is not waited for"
            );
            // A wait also ends when a write supersedes the load, which leaves the map.
            let Role::Load(guard) = loading.join(&1) else {
                panic!("a caller after the end loads afresh");
            };
            guard.look();
            let wait = loading.looked(&1).expect("in flight, past its look");
            let Role::Wait(outcome) = loading.join(&1) else {
                panic!("a second caller waits");
            };
            loading.supersede(&1, RemovalCause::Replaced);
            assert!(matches!(block_on(wait), Outcome::Abandoned));
            assert!(loading.looked(&1).is_none());
            guard.complete(Outcome::Value(9));
            assert!(
                matches!(block_on(outcome), Outcome::Value(9)),
                "a caller that joined before the write still gets the outcome"
            );
            // A load on another thread, and a compute that looks for it at any point.
            let loader = {
                let loading = loading.clone();
                thread::spawn(move || {
                    let Role::Load(guard) = loading.join(&1) else {
                        panic!("the only caller loads");
                    };
                    guard.look();
                    guard.complete(Outcome::Value(8));
                })
            };
            if let Some(wait) = loading.looked(&1) {
                assert!(matches!(block_on(wait), Outcome::Abandoned));
            }
            loader.join().unwrap();
        });
    }

    #[test]
    fn supersede_marks_only_that_keys_load_in_flight() {
        model(|| {
            let loading = Loading::<u32, u32>::default();
            loading.supersede(&1, RemovalCause::Explicit); // nothing in flight: a no-op
            let (Role::Load(one), Role::Load(two)) = (loading.join(&1), loading.join(&2)) else {
                panic!("first callers must load");
            };
            loading.supersede(&1, RemovalCause::Explicit);
            assert_eq!(
                one.superseded(),
                None,
                "a write before the look is seen by it"
            );
            let Role::Wait(_) = loading.join(&1) else {
                panic!("a load not superseded stays joinable");
            };
            one.look();
            two.look();
            loading.supersede(&1, RemovalCause::Replaced);
            loading.supersede(&1, RemovalCause::Explicit);
            loading.supersede(&3, RemovalCause::Explicit);
            assert_eq!(
                one.superseded(),
                Some(RemovalCause::Replaced),
                "the first write's"
            );
            assert_eq!(two.superseded(), None);
            let Role::Load(again) = loading.join(&1) else {
                panic!("a caller after the write loads afresh");
            };
            one.complete(Outcome::Value(1));
            assert_eq!(loading.len(), 2, "the superseded load leaves the new one");
            assert_eq!(again.superseded(), None, "a new load starts afresh");
            again.look();
            loading.supersede_all(RemovalCause::Explicit);
            assert_eq!(again.superseded(), Some(RemovalCause::Explicit));
            assert_eq!(two.superseded(), Some(RemovalCause::Explicit));
            assert_eq!(loading.len(), 0);
            drop((again, two));
        });
    }

    /// A background refresh: a load started under the "shard lock" (a mutex over the cached
    /// value) by one thread and run by another, racing a write of the key and a reader that
    /// tries to start a second refresh. The write comes after the start, so it must win: the
    /// reload caches its value only if no write superseded it, which it checks under the same
    /// lock; and the key is free once every load of it has ended.
    #[test]
    fn started_load_run_elsewhere_racing_write_never_overwrites_it() {
        model_threads(|| {
            let loading = Arc::new(Loading::<u32, u32>::default());
            let shard = Arc::new(Mutex::new(1u32));
            let started = {
                let _shard = lock(&shard);
                let started = loading.start(&1, u32::clone).expect("nothing in flight");
                started.look();
                started
            };
            let reload = {
                let (loading, shard) = (loading.clone(), shard.clone());
                thread::spawn(move || {
                    let guard = started.attach(&loading);
                    let mut cached = lock(&shard);
                    if guard.superseded().is_none() {
                        *cached = 2;
                    }
                    drop(cached);
                    guard.complete(Outcome::Value(2));
                })
            };
            let second = {
                let loading = loading.clone();
                thread::spawn(move || {
                    // A second due read: starts nothing while the first is in flight.
                    if let Some(again) = loading.start(&1, u32::clone) {
                        drop(again.attach(&loading));
                        true
                    } else {
                        false
                    }
                })
            };
            {
                let mut cached = lock(&shard);
                *cached = 3;
                loading.supersede(&1, RemovalCause::Replaced);
            }
            reload.join().unwrap();
            second.join().unwrap();
            assert_eq!(*lock(&shard), 3, "the reload overwrote a later write");
            assert_eq!(loading.len(), 0, "a load left in flight");
        });
    }

    #[test]
    fn guard_dropped_uncompleted_abandons() {
        model(|| {
            let loading = Loading::<u32, u32>::default();
            let Role::Load(guard) = loading.join(&1) else {
                panic!("first caller must load");
            };
            let Role::Wait(wait) = loading.join(&1) else {
                panic!("second caller must wait");
            };
            drop(guard);
            assert!(matches!(block_on(wait), Outcome::Abandoned));
            assert_eq!(loading.len(), 0);
        });
    }

    /// `callers` threads want key 1 through the protocol of the front ends (a loader first
    /// checks the cache, here an atomic, and caches before completing; waiters retry after an
    /// abandoned load); the first `abandon` loads are dropped instead of completed (a panic, a
    /// cancellation). Checks that loads never overlap and that every caller ends with the
    /// value; returns the number of loads.
    fn coalesce(callers: u32, abandon: u32) -> u32 {
        let loading = Arc::new(Loading::<u32, u32>::default());
        let loading_now = Arc::new(AtomicU32::new(0));
        let loads = Arc::new(AtomicU32::new(0));
        let cached = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..callers)
            .map(|_| {
                let (loading, loading_now, loads, cached) = (
                    loading.clone(),
                    loading_now.clone(),
                    loads.clone(),
                    cached.clone(),
                );
                thread::spawn(move || loop {
                    match loading.join(&1) {
                        Role::Load(guard) => {
                            let hit = cached.load(Ordering::SeqCst);
                            if hit != 0 {
                                guard.complete(Outcome::Value(hit));
                                return Some(hit);
                            }
                            assert_eq!(loading_now.fetch_add(1, Ordering::SeqCst), 0, "overlap");
                            let n = loads.fetch_add(1, Ordering::SeqCst);
                            loading_now.fetch_sub(1, Ordering::SeqCst);
                            if n < abandon {
                                drop(guard);
                                return None;
                            }
                            cached.store(42, Ordering::SeqCst);
                            guard.complete(Outcome::Value(42));
                            return Some(42);
                        }
                        Role::Wait(wait) => match block_on(wait) {
                            Outcome::Value(v) => return Some(v),
                            Outcome::Abandoned => continue,
                            other => panic!("unexpected outcome {other:?}"),
                        },
                    }
                })
            })
            .collect();
        let results: Vec<Option<u32>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        // Callers whose load was abandoned give up (as a panicking loader's caller would);
        // everyone else gets the value.
        let gave_up = results.iter().filter(|r| r.is_none()).count() as u32;
        assert_eq!(gave_up, abandon.min(callers));
        assert!(results.iter().flatten().all(|&v| v == 42));
        assert_eq!(loading.len(), 0, "a load left in flight");
        loads.load(Ordering::SeqCst)
    }

    #[test]
    fn concurrent_callers_coalesce_and_are_all_released() {
        model_threads(|| {
            assert_eq!(coalesce(3, 0), 1);
        });
    }

    #[test]
    fn abandoned_load_releases_waiters_and_one_retries() {
        model_threads(|| {
            assert_eq!(coalesce(3, 1), 2);
        });
    }

    #[test]
    fn every_load_abandoned_still_releases_everyone() {
        model_threads(|| {
            assert_eq!(coalesce(2, 2), 2);
        });
    }

    /// Waiters that give up or move to another task while the load completes: one is polled
    /// once and dropped (a timeout), another is polled once with a waker that goes nowhere and
    /// then waits under its own (a `select!` in a loop, a future moved to another task). The
    /// second must be released through its new waker.
    #[test]
    fn wait_repolled_with_new_waker_racing_completion_is_released() {
        model_threads(|| {
            let loading = Arc::new(Loading::<u32, u32>::default());
            let Role::Load(guard) = loading.join(&1) else {
                panic!("first caller must load");
            };
            let (Role::Wait(gives_up), Role::Wait(moves)) = (loading.join(&1), loading.join(&1))
            else {
                panic!("a load is in flight");
            };
            let poll_once = |mut wait: Wait<u32>| {
                let mut cx = Context::from_waker(Waker::noop());
                let _ = Pin::new(&mut wait).poll(&mut cx);
                wait
            };
            let giver = thread::spawn(move || drop(poll_once(gives_up)));
            let mover = thread::spawn(move || block_on(poll_once(moves)));
            guard.complete(Outcome::Value(3));
            giver.join().unwrap();
            assert!(matches!(mover.join().unwrap(), Outcome::Value(3)));
        });
    }

    #[test]
    fn waiters_joined_before_completion_share_one_load() {
        model_threads(|| {
            let loading = Arc::new(Loading::<u32, u32>::default());
            let Role::Load(guard) = loading.join(&1) else {
                panic!("first caller must load");
            };
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let Role::Wait(wait) = loading.join(&1) else {
                        panic!("a load is in flight");
                    };
                    thread::spawn(move || block_on(wait))
                })
                .collect();
            guard.complete(Outcome::Value(5));
            for waiter in waiters {
                assert!(matches!(waiter.join().unwrap(), Outcome::Value(5)));
            }
        });
    }

    /// Counts its wakes; panics on them instead when `panics`.
    struct TestWaker {
        woken: std::sync::atomic::AtomicUsize,
        panics: bool,
    }

    impl std::task::Wake for TestWaker {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            if self.panics {
                panic!("waker panics");
            }
            self.woken
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn test_wakers() -> (Vec<std::sync::Arc<TestWaker>>, Vec<(u64, Waker)>) {
        let made: Vec<_> = [false, true, false]
            .into_iter()
            .map(|panics| {
                std::sync::Arc::new(TestWaker {
                    woken: std::sync::atomic::AtomicUsize::new(0),
                    panics,
                })
            })
            .collect();
        let wakers = made
            .iter()
            .enumerate()
            .map(|(i, w)| (i as u64, Waker::from(w.clone())))
            .collect();
        (made, wakers)
    }

    fn woken(made: &[std::sync::Arc<TestWaker>]) -> Vec<usize> {
        made.iter()
            .map(|w| w.woken.load(std::sync::atomic::Ordering::Relaxed))
            .collect()
    }

    #[test]
    fn wake_all_waker_panics_rest_woken_then_panic_raised() {
        let (made, wakers) = test_wakers();
        let result = catch_unwind(AssertUnwindSafe(|| wake_all(wakers)));
        let panic = result.expect_err("the waker's panic reaches the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"waker panics"));
        assert_eq!(
            woken(&made),
            [1, 0, 1],
            "the waker after the panicking one is woken"
        );
    }

    #[test]
    fn wake_all_while_unwinding_waker_panic_dropped() {
        struct WakesOnDrop(Vec<(u64, Waker)>);
        impl Drop for WakesOnDrop {
            fn drop(&mut self) {
                wake_all(std::mem::take(&mut self.0));
            }
        }
        let (made, wakers) = test_wakers();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _guard = WakesOnDrop(wakers);
            panic!("loader panics");
        }));
        // A second panic while unwinding would have aborted the test process.
        let panic = result.expect_err("the loader's panic unwinds");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"loader panics"));
        assert_eq!(woken(&made), [1, 0, 1]);
    }
}
