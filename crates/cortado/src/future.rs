//! The async front end: the same sharded core as [`sync`], with loaders that take
//! futures and wait without blocking the executor.
//!
//! Runtime-agnostic: waiting uses wakers only, and the cache spawns nothing and sets no timer
//! (unless a [`Scheduler`] is asked for). Plain operations such as `get`
//! and `insert` are synchronous because they never wait for anything but a shard's short critical
//! section; [`Entry::and_compute_with`] is `async` because it waits for a load of its key in
//! flight. If a loading future is dropped (its caller cancelled), the callers waiting for it are
//! woken and retry.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let cache = cortado::future::Cache::new(1_000);
//! let value = cache.get_with(1, async { "loaded" }).await;
//! assert_eq!(value, "loaded");
//! assert_eq!(cache.get(&1), Some("loaded"));
//! # }
//! ```
//!
//! # Design
//!
//! A thin layer: a [`future::Cache`](Cache) is a [`sync::Cache`] handle, and
//! its loaders await the very futures that the blocking loaders drive to completion with a
//! thread-parking executor (see the [`sync`] design). Everything else is
//! [`as_sync`](Cache::as_sync) away, or forwarded.
//!
//! Never mix the blocking loaders and `and_compute_with` of [`as_sync`](Cache::as_sync) with
//! async loaders for the same key on a single-threaded runtime: a blocked thread cannot run the
//! task it waits for.

use std::borrow::Borrow;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::time::Duration;

use hashbrown::DefaultHashBuilder;

pub use crate::builder::Asynchronous;
use crate::builder::{BuildError, CacheBuilder};
use crate::stats::CacheStats;
use crate::sync::{self, Inner};

/// The same as [`sync::Compute`], [`sync::Iter`] and [`sync::Scheduler`], here so that async
/// code needs only this module.
pub use crate::sync::{Compute, Iter, Scheduler};

/// A thread-safe cache with async loaders. See the [module docs](self).
pub struct Cache<K, V, S = DefaultHashBuilder> {
    cache: sync::Cache<K, V, S>,
}

impl<K, V, S> Clone for Cache<K, V, S> {
    fn clone(&self) -> Self {
        Self {
            cache: self.cache.clone(),
        }
    }
}

impl<K, V, S> std::fmt::Debug for Cache<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cache.fmt(f)
    }
}

impl<K, V> Cache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// A cache of at most `max_capacity` entries with the default settings.
    ///
    /// # Panics
    ///
    /// If `max_capacity` is `u32::MAX` or more; use the [builder](Self::builder) to get an error.
    pub fn new(max_capacity: u64) -> Self {
        Self::builder()
            .max_capacity(max_capacity)
            .build()
            .expect("max_capacity below u32::MAX")
    }

    /// A builder for every setting.
    pub fn builder() -> CacheBuilder<K, V, DefaultHashBuilder, Asynchronous> {
        CacheBuilder::default()
    }
}

impl<K, V, S> CacheBuilder<K, V, S, Asynchronous>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Clone + Send + Sync + 'static,
{
    /// Builds the cache, or says which setting cannot work.
    pub fn build(self) -> Result<Cache<K, V, S>, BuildError> {
        Ok(Cache {
            cache: sync::Cache::from_inner(Inner::build(self)?),
        })
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The blocking view of the same cache (shares every entry): every other operation.
    pub fn as_sync(&self) -> &sync::Cache<K, V, S> {
        &self.cache
    }

    fn inner(&self) -> &Inner<K, V, S> {
        &self.cache.inner
    }

    /// A clone of the value of `key` if present and not expired; counts as a use.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.get(key)
    }

    /// A clone of the value of `key` if present and not expired, with no effect on eviction,
    /// expiry or stats.
    pub fn peek<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.peek(key)
    }

    /// Whether `key` is present and not expired (no effect on eviction).
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.contains_key(key)
    }

    /// Inserts or replaces the value of `key`, then evicts to fit the capacity.
    pub fn insert(&self, key: K, value: V) {
        self.cache.insert(key, value);
    }

    /// Inserts or replaces with a lifetime of its own; see
    /// [`sync::Cache::insert_with_ttl`](crate::sync::Cache::insert_with_ttl).
    pub fn insert_with_ttl(&self, key: K, value: V, ttl: Duration) {
        self.cache.insert_with_ttl(key, value, ttl);
    }

    /// Removes `key` and returns its value if it was present and not expired.
    #[doc(alias = "invalidate")]
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.remove(key)
    }

    /// Removes every entry.
    pub fn invalidate_all(&self) {
        self.cache.invalidate_all();
    }

    /// Keeps only the entries for which `keep` returns true (see [`sync::Cache::retain`]).
    pub fn retain(&self, keep: impl FnMut(&K, &V) -> bool) {
        self.cache.retain(keep);
    }

    /// A snapshot of the live entries, taken one shard at a time (see [`sync::Cache::iter`]).
    pub fn iter(&self) -> Iter<'_, K, V, S>
    where
        K: Clone,
    {
        self.cache.iter()
    }

    /// The capacity (total weight with a weigher); `u64::MAX` when unbounded.
    pub fn max_capacity(&self) -> u64 {
        self.cache.max_capacity()
    }

    /// The live entries, as [`sync::Cache::len`](crate::sync::Cache::len) counts them (not
    /// the expired ones that maintenance has yet to remove).
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// Total weight of the entries (their count without a weigher).
    pub fn weighted_size(&self) -> u64 {
        self.cache.weighted_size()
    }

    /// Replays buffered reads and removes expired entries now.
    pub fn run_pending_tasks(&self) {
        self.cache.run_pending_tasks();
    }

    /// The counters since the cache was built; all zero unless built with `record_stats`.
    pub fn stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Starts a reload of `key` on the cache's spawner (see
    /// [`sync::Cache::refresh`](crate::sync::Cache::refresh)); true if one was started.
    pub fn refresh<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.refresh(key)
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The values of `keys`, the missing ones from one awaited call of `load(missing keys)`;
    /// see [`sync::Cache::get_all_with`](crate::sync::Cache::get_all_with).
    pub async fn get_all_with<F>(
        &self,
        keys: impl IntoIterator<Item = K>,
        load: impl FnMut(Vec<K>) -> F,
    ) -> std::collections::HashMap<K, V>
    where
        F: Future<Output = std::collections::HashMap<K, V>>,
    {
        self.inner().load_all(keys, load).await
    }

    /// The value of `key`; on a miss exactly one caller per key awaits `init` and caches its
    /// value while concurrent callers wait (without blocking their thread). If the loading
    /// future panics or is dropped, the waiters retry (one of them loads). A write to the key
    /// while the load is in flight wins over its value, as in [`sync::Cache::get_with`].
    pub async fn get_with(&self, key: K, init: impl Future<Output = V>) -> V {
        match self.inner().get(&key) {
            Some(value) => value,
            None => self.inner().load_value(&key, init).await,
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may fail: its error goes to the
    /// caller and to every waiter that called `try_get_with` with the same error type `E` (as
    /// in moka), and nothing is cached. Other waiters retry, and one of them loads.
    pub async fn try_get_with<E>(
        &self,
        key: K,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        match self.inner().get(&key) {
            Some(value) => Ok(value),
            None => self.inner().load_result(&key, init).await,
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may find nothing; `None` is cached
    /// only with a [`negative_ttl`](CacheBuilder::negative_ttl).
    pub async fn optionally_get_with(
        &self,
        key: K,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V> {
        if let Some(value) = self.inner().get(&key) {
            return Some(value);
        }
        if self.inner().known_absent(&key) {
            return None;
        }
        self.inner().load_option(&key, init).await
    }

    /// [`get_with`](Self::get_with) for a key given by reference (a `&str` for a `String`
    /// key), made into an owned key only on a miss: a hit allocates nothing.
    pub async fn get_with_by_ref<Q>(&self, key: &Q, init: impl Future<Output = V>) -> V
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        match self.inner().get(key) {
            Some(value) => value,
            None => {
                let key = key.to_owned();
                self.inner().load_value(&key, init).await
            }
        }
    }

    /// [`try_get_with`](Self::try_get_with) for a key given by reference, made into an owned
    /// key only on a miss.
    pub async fn try_get_with_by_ref<Q, E>(
        &self,
        key: &Q,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
        E: Send + Sync + 'static,
    {
        match self.inner().get(key) {
            Some(value) => Ok(value),
            None => {
                let key = key.to_owned();
                self.inner().load_result(&key, init).await
            }
        }
    }

    /// [`optionally_get_with`](Self::optionally_get_with) for a key given by reference, made
    /// into an owned key only on a miss that is not a cached absence.
    pub async fn optionally_get_with_by_ref<Q>(
        &self,
        key: &Q,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        if let Some(value) = self.inner().get(key) {
            return Some(value);
        }
        if self.inner().known_absent(key) {
            return None;
        }
        let key = key.to_owned();
        self.inner().load_option(&key, init).await
    }

    /// The entry of `key`, for compound operations.
    pub fn entry(&self, key: K) -> Entry<'_, K, V, S> {
        Entry { cache: self, key }
    }

    /// The entry of a key given by reference; see [`sync::Cache::entry_by_ref`].
    pub fn entry_by_ref<'a, Q>(&'a self, key: &'a Q) -> RefEntry<'a, K, Q, V, S>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        RefEntry { cache: self, key }
    }
}

/// One key of a [`Cache`], for compound operations (see [`Cache::entry`]).
#[derive(Debug)]
#[must_use = "an entry does nothing until one of its methods is called"]
pub struct Entry<'a, K, V, S> {
    cache: &'a Cache<K, V, S>,
    key: K,
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Entry<'_, K, V, S> {
    /// The value, awaiting `init` on a miss (coalesced like [`Cache::get_with`]).
    pub async fn or_insert_with(self, init: impl Future<Output = V>) -> V {
        self.cache.get_with(self.key, init).await
    }

    /// The value, or `value` inserted on a miss (as [`sync::Entry::or_insert`]).
    pub async fn or_insert(self, value: V) -> V {
        self.cache.get_with(self.key, async { value }).await
    }

    /// The value, or `V::default()` inserted on a miss.
    pub async fn or_default(self) -> V
    where
        V: Default,
    {
        self.cache.get_with(self.key, async { V::default() }).await
    }

    /// The value, awaiting a loader that may fail on a miss (as [`Cache::try_get_with`]).
    pub async fn or_try_insert_with<E>(
        self,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        self.cache.try_get_with(self.key, init).await
    }

    /// The value, awaiting a loader that may find nothing on a miss (as
    /// [`Cache::optionally_get_with`]).
    pub async fn or_optionally_insert_with(
        self,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V> {
        self.cache.optionally_get_with(self.key, init).await
    }

    /// Atomically replaces the value with `f(current)`, or inserts `f(None)`, and returns the
    /// value written; see [`sync::Entry::and_upsert_with`].
    pub async fn and_upsert_with(self, f: impl FnOnce(Option<&V>) -> V) -> V {
        self.cache.inner().upsert(self.key, f).await
    }

    /// [`and_compute_with`](Self::and_compute_with) with an `f` that may fail: on `Err` nothing
    /// is written and the error is returned.
    pub async fn and_try_compute_with<E>(
        self,
        f: impl FnOnce(Option<&V>) -> Result<Compute<V>, E>,
    ) -> Result<Option<V>, E> {
        self.cache.inner().try_compute(self.key, f).await
    }

    /// Atomically reads the live value, asks `f` what to do, and does it; see
    /// [`sync::Entry::and_compute_with`]. The call is `async` because it first awaits a load of
    /// the key in flight (`f` then sees the loaded value); `f` itself is synchronous: it runs
    /// under a shard's lock, and must not use the cache (release builds deadlock if it does;
    /// see [`sync::Entry::and_compute_with`]).
    ///
    /// # Panics
    ///
    /// If `f` panics (nothing is written), or if awaited from the loader of the same key,
    /// which could only wait for itself.
    pub async fn and_compute_with(self, f: impl FnOnce(Option<&V>) -> Compute<V>) -> Option<V> {
        self.cache.inner().compute(self.key, f, true).await
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
    pub async fn or_insert_with(self, init: impl Future<Output = V>) -> V {
        self.cache.get_with_by_ref(self.key, init).await
    }

    /// See [`Entry::or_insert`].
    pub async fn or_insert(self, value: V) -> V {
        self.cache.get_with_by_ref(self.key, async { value }).await
    }

    /// See [`Entry::or_default`].
    pub async fn or_default(self) -> V
    where
        V: Default,
    {
        self.cache
            .get_with_by_ref(self.key, async { V::default() })
            .await
    }

    /// See [`Entry::or_try_insert_with`].
    pub async fn or_try_insert_with<E>(
        self,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        self.cache.try_get_with_by_ref(self.key, init).await
    }

    /// See [`Entry::or_optionally_insert_with`].
    pub async fn or_optionally_insert_with(
        self,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V> {
        self.cache.optionally_get_with_by_ref(self.key, init).await
    }

    /// See [`Entry::and_upsert_with`].
    pub async fn and_upsert_with(self, f: impl FnOnce(Option<&V>) -> V) -> V {
        self.cache
            .entry(self.key.to_owned())
            .and_upsert_with(f)
            .await
    }

    /// See [`Entry::and_try_compute_with`].
    pub async fn and_try_compute_with<E>(
        self,
        f: impl FnOnce(Option<&V>) -> Result<Compute<V>, E>,
    ) -> Result<Option<V>, E> {
        self.cache
            .entry(self.key.to_owned())
            .and_try_compute_with(f)
            .await
    }

    /// See [`Entry::and_compute_with`] (its rules and panics are this one's).
    pub async fn and_compute_with(self, f: impl FnOnce(Option<&V>) -> Compute<V>) -> Option<V> {
        self.cache
            .entry(self.key.to_owned())
            .and_compute_with(f)
            .await
    }
}

impl<'a, K, V, S> IntoIterator for &'a Cache<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher,
{
    type Item = (K, V);
    type IntoIter = Iter<'a, K, V, S>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
