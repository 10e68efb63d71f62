//! The async front end: the same sharded core as [`sync`](crate::sync), with loaders that take
//! futures and wait without blocking the executor.
//!
//! Runtime-agnostic (waiting uses wakers, no timer or spawn is needed); plain operations such as
//! `get` and `insert` are synchronous because they never wait for anything but a shard's short
//! critical section.
//!
//! ```
//! # async fn demo() {
//! let cache = cortado::future::Cache::new(1_000);
//! let value = cache.get_with(1, async { "loaded" }).await;
//! assert_eq!(value, "loaded");
//! assert_eq!(cache.get(&1), Some("loaded"));
//! # }
//! ```

use std::borrow::Borrow;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hashbrown::DefaultHashBuilder;

use crate::builder::{BuildError, CacheBuilder};
use crate::loader::{Outcome, Waiter};
use crate::stats::CacheStats;
use crate::sync::{self, Inner, Step};

/// Builds the [`future::Cache`](Cache) (marker for [`CacheBuilder`]).
#[derive(Debug)]
pub enum Asynchronous {}

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
    /// If `max_capacity` is too large; use the [builder](Self::builder) to get an error.
    pub fn new(max_capacity: u64) -> Self {
        Self::builder()
            .max_capacity(max_capacity)
            .build()
            .expect("a valid capacity")
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

/// Waits for another caller's load.
struct WaitFor<V>(Arc<Waiter<V>>);

impl<V: Clone> Future for WaitFor<V> {
    type Output = Outcome<V>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<V>> {
        self.0.poll_wait(cx)
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The blocking view of the same cache (shares every entry).
    pub fn as_sync(&self) -> &sync::Cache<K, V, S> {
        &self.cache
    }

    /// A clone of the value of `key` if present and not expired; counts as a use.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cache.get(key)
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

    /// Inserts or replaces with a lifetime of its own.
    pub fn insert_with_ttl(&self, key: K, value: V, ttl: Duration) {
        self.cache.insert_with_ttl(key, value, ttl);
    }

    /// Removes `key` and returns its value if it was present and not expired.
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

    /// Entries held, including expired ones not yet removed.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// Replays buffered reads and removes expired entries now.
    pub fn run_pending_tasks(&self) {
        self.cache.run_pending_tasks();
    }

    /// The counters since the cache was built; all zero unless built with `record_stats`.
    pub fn stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The value of `key`; on a miss exactly one caller per key awaits `init` and caches its
    /// value while concurrent callers wait (without blocking their thread). If the loading
    /// future panics or is dropped, the waiters retry.
    pub async fn get_with(&self, key: K, init: impl Future<Output = V>) -> V {
        let mut init = Some(init);
        loop {
            match self.cache.inner.begin_load(&key) {
                Step::Hit(value) => return value,
                Step::Wait(waiter) => {
                    if let Outcome::Value(value) = WaitFor(waiter).await {
                        return value;
                    }
                }
                Step::Load(guard) => {
                    let started = Instant::now();
                    let value = init.take().expect("a caller loads at most once").await;
                    let outcome = Outcome::Value(value.clone());
                    self.cache.inner.finish_load(&key, guard, started, outcome);
                    return value;
                }
            }
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may fail: the error goes to the
    /// caller and every waiter, and nothing is cached.
    pub async fn try_get_with<E>(
        &self,
        key: K,
        init: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        let mut init = Some(init);
        loop {
            match self.cache.inner.begin_load(&key) {
                Step::Hit(value) => return Ok(value),
                Step::Wait(waiter) => match WaitFor(waiter).await {
                    Outcome::Value(value) => return Ok(value),
                    Outcome::Failed(error) => {
                        if let Ok(error) = error.downcast::<E>() {
                            return Err(error);
                        }
                    }
                    Outcome::Absent | Outcome::Abandoned => {}
                },
                Step::Load(guard) => {
                    let started = Instant::now();
                    let result = init.take().expect("a caller loads at most once").await;
                    let (outcome, result) = match result {
                        Ok(value) => (Outcome::Value(value.clone()), Ok(value)),
                        Err(error) => {
                            let error = Arc::new(error);
                            (Outcome::Failed(error.clone()), Err(error))
                        }
                    };
                    self.cache.inner.finish_load(&key, guard, started, outcome);
                    return result;
                }
            }
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may find nothing; `None` is cached
    /// only with a [`negative_ttl`](CacheBuilder::negative_ttl).
    pub async fn optionally_get_with(
        &self,
        key: K,
        init: impl Future<Output = Option<V>>,
    ) -> Option<V> {
        let mut init = Some(init);
        loop {
            if self.cache.inner.absent(&key) {
                return self.get(&key);
            }
            match self.cache.inner.begin_load(&key) {
                Step::Hit(value) => return Some(value),
                Step::Wait(waiter) => match WaitFor(waiter).await {
                    Outcome::Value(value) => return Some(value),
                    Outcome::Absent => return None,
                    Outcome::Failed(_) | Outcome::Abandoned => {}
                },
                Step::Load(guard) => {
                    let started = Instant::now();
                    let found = init.take().expect("a caller loads at most once").await;
                    let outcome = match &found {
                        Some(value) => Outcome::Value(value.clone()),
                        None => Outcome::Absent,
                    };
                    self.cache.inner.finish_load(&key, guard, started, outcome);
                    return found;
                }
            }
        }
    }
}
