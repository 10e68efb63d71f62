//! Loaders and compound operations of the concurrent caches: `get_with` and its variants, and the
//! [`Entry`] API.
//!
//! On a miss, exactly one caller per key runs its loader; concurrent callers for the key wait and
//! share its outcome, and retry if it panics or is cancelled.
//!
//! # Design
//!
//! The protocol ([`Inner::load`]) is written once, as a future over the shard's
//! [`Loading`](crate::loader::Loading) map: join the key's load or start it; a loader first looks
//! the key up again (a load may have finished between the caller's miss and its join, leaving a
//! value, or for `optionally_get_with` with a negative time to live, a cached absence), then runs
//! `init`, caches the result, and only then releases the waiters, so a caller arriving after the
//! release finds the value cached. A write to the key after that look and before the value is
//! cached (while `init` runs, or after it) marks the load
//! [superseded](crate::loader::Loading::supersede), and its result is then not cached: the write
//! is the later event, as in Caffeine, where the write waits for the load. A compute
//! ([`Entry::and_compute_with`]) reads the value it replaces, so it does wait: it finds the
//! key's load under the shard's lock ([`Loading::looked`](crate::loader::Loading::looked)),
//! waits for it outside the lock, and looks again. The listener runs
//! after the release, so a listener that reads the cache cannot wait on the very load that is
//! calling it. The three variants differ only in two conversions: the loader's result into the
//! [`Outcome`] handed to waiters, and an outcome into a waiter's result (or a retry). The async
//! front end awaits the future; the blocking one drives it with `shim::block_on`, which parks
//! the waiting thread.
//!
//! A loader that asks the cache for its own key would wait for itself forever, blocking or
//! awaiting. A thread-local list of the loads whose loader this thread is polling turns that
//! into a panic (which, like any loader panic, releases the waiters). The mark covers each poll
//! of the loader, not the time between polls, so another task on the same thread that waits
//! for the load is not mistaken for it. Only the loader's own code is seen: a loader that
//! waits for another task or thread that asks for the key, or two loads that wait for each
//! other, still hang.
//!
//! Each call counts one hit or one miss (its first lookup), whatever the retries, and each loader
//! run counts one load success or failure: a loader that panics, or whose future is dropped
//! before it ends, counts as a failure.

use std::any::Any;
use std::borrow::Borrow;
use std::cell::RefCell;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{read, Cache, Inner};
use crate::loader::{LoadGuard, OnDrop, Outcome, Role};
use crate::notification::RemovalCause;
use crate::shard::{hash_key, Shard};
use crate::shim::block_on;

thread_local! {
    /// The loads (by [`LoadGuard::id`]) whose loader this thread is running, innermost last.
    /// Reached with `try_with`: once the thread's locals are being destroyed, a cache used from
    /// another local's destructor marks nothing, where `with` would panic there, which aborts.
    static RUNNING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Marks a load as run by this thread until dropped (also when the loader panics).
pub(super) struct Running(usize);

impl Running {
    pub(super) fn enter(id: usize) -> Self {
        let _ = RUNNING.try_with(|running| running.borrow_mut().push(id));
        Self(id)
    }

    pub(super) fn includes(id: usize) -> bool {
        RUNNING
            .try_with(|running| running.borrow().contains(&id))
            .unwrap_or(false)
    }

    /// Whether this thread is polling a loader.
    fn any() -> bool {
        RUNNING
            .try_with(|running| !running.borrow().is_empty())
            .unwrap_or(false)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = RUNNING.try_with(|running| {
            let mut running = running.borrow_mut();
            if let Some(at) = running.iter().rposition(|&id| id == self.0) {
                running.remove(at);
            }
        });
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Inner<K, V, S> {
    /// Caches the loader's outcome, releases the waiters, then notifies the listener.
    pub(super) fn finish_load(
        &self,
        hash: u64,
        key: &K,
        guard: LoadGuard<'_, K, V>,
        started: Option<Instant>,
        outcome: Outcome<V>,
        clone: impl Fn(&K) -> K,
    ) {
        let mut removed = Vec::new();
        match &outcome {
            Outcome::Value(value) => {
                self.record_load(started, true);
                let value = value.clone();
                removed = self
                    .write(hash, |core, now| {
                        match guard.superseded() {
                            None => {
                                // Under the shard's lock (see `cache_absence`); the load in
                                // flight for the key is this one.
                                self.forget_absence(hash, key);
                                core.insert(hash, clone(key), value, now, None);
                            }
                            // A write since the loader's look: the value was as good as
                            // cached, then replaced or removed by it.
                            Some(cause) => core.notify_removal(clone(key), value, cause),
                        }
                    })
                    .1;
            }
            Outcome::Absent => {
                self.record_load(started, false);
                self.cache_absence(hash, clone(key), &guard);
            }
            Outcome::Failed(_) | Outcome::Abandoned => self.record_load(started, false),
        }
        guard.complete(outcome);
        self.notify(removed);
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Inner<K, V, S> {
    /// The loader protocol after a miss: see the [module docs](self). `publish` turns the
    /// loader's result into the outcome for the cache and the waiters; `accept` turns an outcome
    /// into a waiter's result, `None` to retry. `absence_counts`: a cached absence (with a
    /// negative time to live) found by the loader's second look is an outcome too.
    async fn load<T>(
        &self,
        key: &K,
        init: impl Future<Output = T>,
        publish: impl Fn(&T) -> Outcome<V>,
        accept: impl Fn(Outcome<V>) -> Option<T>,
        absence_counts: bool,
    ) -> T {
        let hash = hash_key(&self.hasher, key);
        let slot = self.slot(hash);
        let mut init = Some(init);
        loop {
            match slot.loading.join(key) {
                Role::Wait(wait) => {
                    if Running::includes(wait.id()) {
                        panic!(
                            "a loader asked the cache for its own key: it would wait for itself"
                        );
                    }
                    if let Some(result) = accept(wait.await) {
                        return result;
                    }
                }
                Role::Load(guard) => {
                    // Counted before the look at the cache: see `Inner::loaders`.
                    self.loaders.0.fetch_add(1, Ordering::Relaxed);
                    let _counted = OnDrop(Some(|| {
                        self.loaders.0.fetch_sub(1, Ordering::Relaxed);
                    }));
                    // A write supersedes the load only after this look (under the shard's
                    // lock): the look sees the writes before it.
                    let peeked = {
                        let now = self.now();
                        let core = read(&slot.core);
                        guard.look();
                        core.peek(hash, key, now).cloned()
                    };
                    let found = match peeked {
                        Some(value) => Some(Outcome::Value(value)),
                        None if absence_counts && self.is_absent(hash, key) => {
                            Some(Outcome::Absent)
                        }
                        None => None,
                    };
                    if let Some(outcome) = found {
                        guard.complete(outcome.clone());
                        if let Some(result) = accept(outcome) {
                            return result;
                        }
                        continue;
                    }
                    let started = self.record_stats.then(Instant::now);
                    let init = init.take().expect("a caller runs its loader at most once");
                    // A panic or a cancellation here drops `guard` (waiters get `Abandoned`)
                    // and `unfinished`, which counts the run as a failed load.
                    let unfinished = OnDrop(Some(|| self.record_load(started, false)));
                    // Each poll of the loader is marked as this load's: a call for the same
                    // key made from inside it (blocking or awaited) would wait for itself.
                    let id = guard.id();
                    let mut init = std::pin::pin!(init);
                    let result = std::future::poll_fn(|cx| {
                        let _running = Running::enter(id);
                        init.as_mut().poll(cx)
                    })
                    .await;
                    // `publish` clones the value: a panic there is a failed load too.
                    let outcome = publish(&result);
                    unfinished.disarm();
                    self.finish_load(hash, key, guard, started, outcome, K::clone);
                    return result;
                }
            }
        }
    }

    pub(crate) async fn load_value(&self, key: &K, init: impl Future<Output = V>) -> V {
        let publish = |value: &V| Outcome::Value(value.clone());
        let accept = |outcome| match outcome {
            Outcome::Value(value) => Some(value),
            // Another flavour's failure or absence: this caller must load a value itself.
            _ => None,
        };
        self.load(key, init, publish, accept, false).await
    }

    pub(crate) async fn load_result<E: Send + Sync + 'static>(
        &self,
        key: &K,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>> {
        let init = async { init.await.map_err(Arc::new) };
        let publish = |result: &Result<V, Arc<E>>| match result {
            Ok(value) => Outcome::Value(value.clone()),
            Err(error) => Outcome::Failed(error.clone() as Arc<dyn Any + Send + Sync>),
        };
        let accept = |outcome| match outcome {
            Outcome::Value(value) => Some(Ok(value)),
            // An error of another type came from another caller's loader: load our own.
            Outcome::Failed(error) => error.downcast::<E>().ok().map(Err),
            Outcome::Absent | Outcome::Abandoned => None,
        };
        self.load(key, init, publish, accept, false).await
    }

    pub(crate) async fn load_option(
        &self,
        key: &K,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V> {
        let publish = |found: &Option<V>| match found {
            Some(value) => Outcome::Value(value.clone()),
            None => Outcome::Absent,
        };
        let accept = |outcome| match outcome {
            Outcome::Value(value) => Some(Some(value)),
            Outcome::Absent => Some(None),
            Outcome::Failed(_) | Outcome::Abandoned => None,
        };
        let absence_counts = self.negative_ttl.is_some();
        self.load(key, init, publish, accept, absence_counts).await
    }

    /// Whether an `optionally_get_with` that just missed should return `None` at once.
    pub(crate) fn known_absent<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.negative_ttl.is_some() && self.is_absent(hash_key(&self.hasher, key), key)
    }

    /// See [`Entry::and_compute_with`]: waits for the key's load in flight, if its loader has
    /// looked at the cache, then runs `f` under the shard's write lock. Returns a clone of the
    /// value held afterwards if `held` is asked for (else `None`, cloning nothing).
    pub(crate) async fn compute(
        &self,
        key: K,
        f: impl FnOnce(Option<&V>) -> Compute<V>,
        held: bool,
    ) -> Option<V> {
        let hash = hash_key(&self.hasher, &key);
        let slot = self.slot(hash);
        let mut f = Some(f);
        loop {
            let (step, mut removed) = self.write(hash, |core, now| {
                // A load that has looked is the earlier event: `f` must see its value. One
                // that has not looked yet will see this write instead. Inside the loader of
                // another key the compute does not wait, and supersedes the load instead:
                // two loaders computing each other's keys would wait for each other forever.
                if self.loaders.0.load(Ordering::Relaxed) != 0 {
                    if let Some(wait) = slot.loading.looked(&key) {
                        if Running::includes(wait.id()) || !Running::any() {
                            return Err(wait);
                        }
                    }
                }
                let f = f
                    .take()
                    .expect("`f` runs once, when no load is to be waited for");
                let after = |core: &Shard<K, V, S>| {
                    held.then(|| core.peek(hash, &key, now).cloned()).flatten()
                };
                Ok(match f(core.peek(hash, &key, now)) {
                    Compute::Put(value) => {
                        let hook = self.write_hook(hash);
                        core.insert_with_before_write(hash, key.clone(), value, now, None, hook);
                        (after(core), None)
                    }
                    Compute::Remove => {
                        self.supersede(hash, &key, RemovalCause::Explicit);
                        (None, core.remove(hash, &key, now))
                    }
                    Compute::Nop => (after(core), None),
                })
            });
            match step {
                Err(wait) => {
                    // Maintenance may have removed entries before the wait.
                    self.notify(removed);
                    if Running::includes(wait.id()) {
                        panic!("a loader computed its own key: it would wait for itself");
                    }
                    // The load ended or was superseded by a write: look again.
                    wait.await;
                }
                Ok((held, removed_live)) => {
                    if let Some((key, value)) = removed_live {
                        removed.push((key, value, RemovalCause::Explicit));
                    }
                    self.notify(removed);
                    return held;
                }
            }
        }
    }

    /// [`compute`](Self::compute) putting `f(current)`; returns the value written (even if it
    /// was evicted at once).
    pub(crate) async fn upsert(&self, key: K, f: impl FnOnce(Option<&V>) -> V) -> V {
        let mut written = None;
        let put = |current: Option<&V>| {
            let value = f(current);
            written = Some(value.clone());
            Compute::Put(value)
        };
        self.compute(key, put, false).await;
        written.expect("`compute` runs `f` once unless it panics")
    }

    /// [`compute`](Self::compute) with an `f` that may fail: an `Err` writes nothing.
    pub(crate) async fn try_compute<E>(
        &self,
        key: K,
        f: impl FnOnce(Option<&V>) -> Result<Compute<V>, E>,
    ) -> Result<Option<V>, E> {
        let mut error = None;
        let held = self
            .compute(
                key,
                |current| {
                    f(current).unwrap_or_else(|e| {
                        error = Some(e);
                        Compute::Nop
                    })
                },
                true,
            )
            .await;
        error.map_or(Ok(held), Err)
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The value of `key`; on a miss, exactly one caller per key runs `init` and caches its
    /// value while concurrent callers for the key wait for it (blocking their thread). If `init`
    /// panics, the panic reaches its caller and the waiters retry (one of them loads).
    ///
    /// A write to the key (`insert`, `remove`, `invalidate_all`) at any time while the load is
    /// in flight wins over the loaded value, not only while `init` runs. A write before the
    /// loader's first look at the cache is seen by that look (an inserted value is returned and
    /// `init` is not called); one after it, up to the moment the loaded value would be cached,
    /// keeps that value out of the cache: it is still returned to the caller and the waiters
    /// that joined before the write, as if the load had ended just before the write (Caffeine
    /// behaves the same, by making the write wait for the load); a caller that misses after the
    /// write loads afresh. The listener hears of it as removed by the first such write
    /// (`Replaced` by an insert, `Explicit` by a removal). [`Entry::and_compute_with`], which
    /// reads the value it replaces, does wait for the load.
    ///
    /// # Panics
    ///
    /// If `init` panics (after releasing the waiters), or if `init` itself loads the same key
    /// from this cache, which could only wait for itself.
    pub fn get_with(&self, key: K, init: impl FnOnce() -> V) -> V {
        match self.inner.get(&key) {
            Some(value) => value,
            None => block_on(self.inner.load_value(&key, async { init() })),
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may fail: its error goes to the
    /// caller and to every waiter that called `try_get_with` with the same error type `E` (as
    /// in moka), and nothing is cached. Other waiters retry, and one of them loads.
    pub fn try_get_with<E>(&self, key: K, init: impl FnOnce() -> Result<V, E>) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        match self.inner.get(&key) {
            Some(value) => Ok(value),
            None => block_on(self.inner.load_result(&key, async { init() })),
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may find nothing: `None` is not
    /// cached, unless the cache was built with a
    /// [`negative_ttl`](crate::builder::CacheBuilder::negative_ttl), which caches the absence
    /// for that long (an insert of the key ends it).
    pub fn optionally_get_with(&self, key: K, init: impl FnOnce() -> Option<V>) -> Option<V> {
        if let Some(value) = self.inner.get(&key) {
            return Some(value);
        }
        if self.inner.known_absent(&key) {
            return None;
        }
        block_on(self.inner.load_option(&key, async { init() }))
    }

    /// [`get_with`](Self::get_with) for a key given by reference (a `&str` for a `String`
    /// key), made into an owned key only on a miss: a hit allocates nothing.
    pub fn get_with_by_ref<Q>(&self, key: &Q, init: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        match self.inner.get(key) {
            Some(value) => value,
            None => block_on(self.inner.load_value(&key.to_owned(), async { init() })),
        }
    }

    /// [`try_get_with`](Self::try_get_with) for a key given by reference, made into an owned
    /// key only on a miss.
    pub fn try_get_with_by_ref<Q, E>(
        &self,
        key: &Q,
        init: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, Arc<E>>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
        E: Send + Sync + 'static,
    {
        match self.inner.get(key) {
            Some(value) => Ok(value),
            None => block_on(self.inner.load_result(&key.to_owned(), async { init() })),
        }
    }

    /// [`optionally_get_with`](Self::optionally_get_with) for a key given by reference, made
    /// into an owned key only on a miss that is not a cached absence.
    pub fn optionally_get_with_by_ref<Q>(
        &self,
        key: &Q,
        init: impl FnOnce() -> Option<V>,
    ) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        if let Some(value) = self.inner.get(key) {
            return Some(value);
        }
        if self.inner.known_absent(key) {
            return None;
        }
        block_on(self.inner.load_option(&key.to_owned(), async { init() }))
    }

    /// The entry of `key`, for compound operations.
    pub fn entry(&self, key: K) -> Entry<'_, K, V, S> {
        Entry { cache: self, key }
    }

    /// The entry of a key given by reference (a `&str` for a `String` key, say): the
    /// `or_insert` family clones it into a `K` only on a miss, as the `*_by_ref` loaders do.
    ///
    /// ```
    /// use cortado::sync::Cache;
    ///
    /// let sizes: Cache<String, usize> = Cache::new(1_000);
    /// let name = "cortado";
    /// // `or_insert_with` makes a `String` of the key only on a miss, as here; the computes
    /// // (`and_upsert_with` here) always make one.
    /// assert_eq!(sizes.entry_by_ref(name).or_insert_with(|| name.len()), 7);
    /// assert_eq!(sizes.entry_by_ref(name).and_upsert_with(|n| n.map_or(0, |n| n + 1)), 8);
    /// ```
    pub fn entry_by_ref<'a, Q>(&'a self, key: &'a Q) -> RefEntry<'a, K, Q, V, S>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        RefEntry { cache: self, key }
    }
}

/// What [`Entry::and_compute_with`] should do with the current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compute<V> {
    /// Insert or replace with this value.
    Put(V),
    /// Remove the entry.
    Remove,
    /// Leave it as it is.
    Nop,
}

/// One key of a [`Cache`], for compound operations (see [`Cache::entry`]).
#[derive(Debug)]
#[must_use = "an entry does nothing until one of its methods is called"]
pub struct Entry<'a, K, V, S> {
    cache: &'a Cache<K, V, S>,
    key: K,
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Entry<'_, K, V, S> {
    /// The value, loading it with `init` on a miss (coalesced like [`Cache::get_with`]).
    pub fn or_insert_with(self, init: impl FnOnce() -> V) -> V {
        self.cache.get_with(self.key, init)
    }

    /// The value, or `value` inserted on a miss.
    pub fn or_insert(self, value: V) -> V {
        self.cache.get_with(self.key, || value)
    }

    /// The value, or `V::default()` inserted on a miss.
    pub fn or_default(self) -> V
    where
        V: Default,
    {
        self.cache.get_with(self.key, V::default)
    }

    /// The value, loading it with a loader that may fail on a miss (as
    /// [`Cache::try_get_with`]: the error reaches the waiters as `Arc<E>`, nothing is cached).
    pub fn or_try_insert_with<E>(self, init: impl FnOnce() -> Result<V, E>) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        self.cache.try_get_with(self.key, init)
    }

    /// The value, loading it with a loader that may find nothing on a miss (as
    /// [`Cache::optionally_get_with`]).
    pub fn or_optionally_insert_with(self, init: impl FnOnce() -> Option<V>) -> Option<V> {
        self.cache.optionally_get_with(self.key, init)
    }

    /// Atomically replaces the value with `f(current)`, or inserts `f(None)` if there is none,
    /// and returns the value written. A read-modify-write such as a counter:
    /// `entry(k).and_upsert_with(|n| n.map_or(1, |n| n + 1))`. Waits for a load of the key
    /// like [`and_compute_with`](Self::and_compute_with), whose rules and panics it shares.
    pub fn and_upsert_with(self, f: impl FnOnce(Option<&V>) -> V) -> V {
        block_on(self.cache.inner.upsert(self.key, f))
    }

    /// [`and_compute_with`](Self::and_compute_with) with an `f` that may fail: on `Err` nothing
    /// is written and the error is returned; on `Ok` the result is that of `and_compute_with`.
    pub fn and_try_compute_with<E>(
        self,
        f: impl FnOnce(Option<&V>) -> Result<Compute<V>, E>,
    ) -> Result<Option<V>, E> {
        block_on(self.cache.inner.try_compute(self.key, f))
    }

    /// Atomically reads the live value (if any), asks `f` what to do, and does it: no other
    /// write to the key can come in between. Returns the value held afterwards (`None` when
    /// removed, or when a new value was evicted at once, e.g. heavier than the capacity).
    ///
    /// `f` runs under the shard's write lock: it must be quick and must not use the cache. If
    /// it does, builds with debug assertions panic, but release builds deadlock: they do not
    /// check (see [Callbacks](super#callbacks)). A
    /// load of the key in flight ([`Cache::get_with`] and its variants) comes first: the call
    /// waits for it (blocking the thread), and `f` sees the loaded value, as in Caffeine,
    /// where a compute waits for the load of its key. The wait ends early if an `insert`,
    /// `remove` or `invalidate_all` supersedes the load meanwhile; `f` then sees that write.
    /// Two kinds of load are not waited for: one whose loader has not yet looked at the cache
    /// (that look sees the compute's result), and any load when the compute runs inside a
    /// loader (of another key: two loaders computing each other's keys would otherwise wait for
    /// each other forever), which a `Put` or `Remove` then supersedes, as an `insert` would.
    ///
    /// # Panics
    ///
    /// If `f` panics (nothing is written), or if called from the loader of the same key,
    /// which could only wait for itself.
    pub fn and_compute_with(self, f: impl FnOnce(Option<&V>) -> Compute<V>) -> Option<V> {
        block_on(self.cache.inner.compute(self.key, f, true))
    }
}

/// One key of a [`Cache`], given by reference, for compound operations (see
/// [`Cache::entry_by_ref`]): the same operations as [`Entry`]. The `or_insert` family clones
/// the key only on a miss; the computes clone it first, since they may write.
#[derive(Debug)]
#[must_use = "an entry does nothing until one of its methods is called"]
pub struct RefEntry<'a, K, Q: ?Sized, V, S> {
    cache: &'a Cache<K, V, S>,
    key: &'a Q,
}

impl<K, Q, V, S> RefEntry<'_, K, Q, V, S>
where
    K: Borrow<Q> + Hash + Eq + Clone,
    Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    V: Clone,
    S: BuildHasher,
{
    /// See [`Entry::or_insert_with`].
    pub fn or_insert_with(self, init: impl FnOnce() -> V) -> V {
        self.cache.get_with_by_ref(self.key, init)
    }

    /// See [`Entry::or_insert`].
    pub fn or_insert(self, value: V) -> V {
        self.cache.get_with_by_ref(self.key, || value)
    }

    /// See [`Entry::or_default`].
    pub fn or_default(self) -> V
    where
        V: Default,
    {
        self.cache.get_with_by_ref(self.key, V::default)
    }

    /// See [`Entry::or_try_insert_with`].
    pub fn or_try_insert_with<E>(self, init: impl FnOnce() -> Result<V, E>) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        self.cache.try_get_with_by_ref(self.key, init)
    }

    /// See [`Entry::or_optionally_insert_with`].
    pub fn or_optionally_insert_with(self, init: impl FnOnce() -> Option<V>) -> Option<V> {
        self.cache.optionally_get_with_by_ref(self.key, init)
    }

    /// See [`Entry::and_upsert_with`].
    pub fn and_upsert_with(self, f: impl FnOnce(Option<&V>) -> V) -> V {
        self.cache.entry(self.key.to_owned()).and_upsert_with(f)
    }

    /// See [`Entry::and_try_compute_with`].
    pub fn and_try_compute_with<E>(
        self,
        f: impl FnOnce(Option<&V>) -> Result<Compute<V>, E>,
    ) -> Result<Option<V>, E> {
        self.cache
            .entry(self.key.to_owned())
            .and_try_compute_with(f)
    }

    /// See [`Entry::and_compute_with`] (its rules and panics are this one's).
    pub fn and_compute_with(self, f: impl FnOnce(Option<&V>) -> Compute<V>) -> Option<V> {
        self.cache.entry(self.key.to_owned()).and_compute_with(f)
    }
}
