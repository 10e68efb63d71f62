//! Refresh after write: an entry older than the refresh interval is reloaded in the background
//! at its next read, which returns the current value at once.
//!
//! A read of an entry written at least `after` ago starts one reload of its key (never two at
//! once for the same key) and returns the value it found; the reloaded value replaces it when
//! it arrives, unless the key was written or removed meanwhile, and a reload that fails or
//! panics leaves the old value in place and counts as a failed load in the
//! [statistics](crate::stats::CacheStats::load_failures) (a success as a load success). A hot
//! key thus never expires in front of its readers: combined with a longer
//! [`time_to_live`](crate::builder::CacheBuilder::time_to_live), the entries read often are
//! reloaded before they expire, and only the ones nobody reads expire (the stampede that a
//! hot key's expiry causes, and the latency of the reader that has to load, do not happen).
//! Configured on the concurrent caches' builders:
//! [`sync`](crate::builder::CacheBuilder::refresh_after_write) (a reloader run on a thread of
//! its own) and [`future`](crate::builder::CacheBuilder::refresh_after_write_async) (a future
//! handed to the caller's spawner); [`sync::Cache::refresh`](crate::sync::Cache::refresh)
//! starts one explicitly.
//!
//! ```
//! use std::time::Duration;
//! let cache = cortado::sync::Cache::builder()
//!     .max_capacity(1_000)
//!     .time_to_live(Duration::from_secs(60))
//!     .refresh_after_write(Duration::from_secs(10), |key: &u32, _old: &String| {
//!         Ok::<_, std::io::Error>(format!("fresh {key}"))
//!     })
//!     .build()
//!     .unwrap();
//! cache.insert(1, "one".to_string());
//! assert_eq!(cache.get(&1).as_deref(), Some("one"));
//! ```
//!
//! # Design
//!
//! - **Check times.** With the setting, each shard keeps, per slot, the earlier of when the
//!   entry is due for a reload (its last write plus the interval) and its deadline (8 bytes
//!   per slot, in an array beside the slab; none without it). A read of a refreshing cache
//!   compares this one time instead of the deadline, under the shard's read lock, and only
//!   once it has passed looks at which of the two it was: a hit costs what a hit of a cache
//!   with a lifetime costs. A read of a cache with neither expiry nor refresh tests nothing
//!   new, one with expiry a flag. Due times after their deadline (an interval longer than a
//!   lifetime) are kept aside in a map by slot. Measurements:
//!   `docs/decisions/0017-refresh-after-write.md`, `0019-refresh-due-times.md` and
//!   `0020-refresh-check-folds-deadline.md`. A refreshing cache reads
//!   the clock on every operation, as a cache with a time to live does (the processor's
//!   counter: see the `time` module and `docs/decisions/0018-clock-source.md`).
//! - **One reload per key.** A reload is a load in the shard's map of loads in flight (the
//!   `loader` module), registered by the reader that found the entry due, under the shard's
//!   read lock, then run elsewhere: a second due read finds it there and starts nothing, and
//!   a `get_with` that misses the key meanwhile (it expired) waits for the reload instead of
//!   loading again. It is the same protocol as the loaders': the registration is the load's
//!   look at the cache, so any write to the key after it (an insert, a removal, a compute,
//!   `invalidate_all`) supersedes the reload, whose value is then not cached (the listener
//!   hears of it as replaced or removed by that write, as for a superseded load). An entry
//!   evicted or expired while its reload runs gets the reloaded value, as a load would.
//! - **Where the reload runs.** The registered load moves, with a handle of the cache, into a
//!   future: the blocking front end runs it on a new thread (`cortado-refresh`), the async one
//!   hands it to the spawner given to the builder (`tokio::spawn`, say), so that reloads use
//!   the caller's runtime and this crate stays runtime-agnostic. If the thread cannot be
//!   started or the future is dropped unpolled, the load is abandoned and the key can be
//!   refreshed again. The reloader and the spawner are called by the reader that found the
//!   entry due, under the shard's read lock: they must only start the work, never wait for
//!   it or use the cache.
//! - **Failures** keep the old value, which stays until it expires or the next due read tries
//!   again (immediately: there is no back-off, as in Caffeine).
//!
//! # References
//!
//! 1. B. Manes: Caffeine's `refreshAfterWrite` (`BoundedLocalCache.refreshIfNeeded`), whose
//!    semantics these follow: the old value served during the reload, a reload discarded when
//!    the entry was written meanwhile, one reload per key.
//! 2. moka issue #467 (refresh after write asked for).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::builder::{Asynchronous, CacheBuilder, RefreshSettings, Synchronized};

impl<K, V, S> CacheBuilder<K, V, S, Synchronized>
where
    K: Clone + Send + 'static,
    V: Send + 'static,
{
    /// Reloads an entry with `reload(key, old value)` when it is read `after` or longer after
    /// its last write, on a thread of its own, while the read returns the old value; see
    /// [`refresh`](crate::refresh) for the contract. An `Err` keeps the old value (it counts as
    /// a failed load). Without a longer time to live, an entry nobody reads is kept as it is.
    ///
    /// `reload` runs on the reload's thread, and may use the cache, except to load or compute
    /// its own key.
    pub fn refresh_after_write<E>(
        mut self,
        after: Duration,
        reload: impl Fn(&K, &V) -> Result<V, E> + Send + Sync + 'static,
    ) -> Self {
        let reload = Arc::new(reload);
        self.refresh = Some(RefreshSettings {
            after,
            reload: Arc::new(move |key: K, old: V| {
                let reload = reload.clone();
                Box::pin(async move { reload(&key, &old).ok() })
            }),
            spawn: Arc::new(|job| {
                // A thread that cannot start drops `job`, which abandons the reload.
                let _ = std::thread::Builder::new()
                    .name("cortado-refresh".into())
                    .spawn(move || crate::shim::block_on(job));
            }),
            clone_key: K::clone,
        });
        self
    }
}

impl<K, V, S> CacheBuilder<K, V, S, Asynchronous>
where
    K: Clone + Send + 'static,
    V: Send + 'static,
{
    /// Reloads an entry with the future `reload(key, old value)` when it is read `after` or
    /// longer after its last write, while the read returns the old value; see
    /// [`refresh`](crate::refresh) for the contract. The reload runs as the future that `spawn`
    /// is given, which must run it on the caller's runtime (`|job| { tokio::spawn(job); }`);
    /// an `Err` keeps the old value (it counts as a failed load).
    ///
    /// `reload` and `spawn` are called under a shard's read lock: they must only build and
    /// schedule the work (an `async` block, a spawn), never run it or use the cache. The
    /// future may use the cache, except to load or compute its own key.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let cache = cortado::future::Cache::builder()
    ///     .max_capacity(1_000)
    ///     .refresh_after_write_async(
    ///         Duration::from_secs(10),
    ///         |key: u32, _old: String| async move {
    ///             Ok::<_, std::io::Error>(format!("fresh {key}"))
    ///         },
    ///         |job| {
    ///             tokio::spawn(job);
    ///         },
    ///     )
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, "one".to_string());
    /// assert_eq!(cache.get(&1).as_deref(), Some("one"));
    /// # }
    /// ```
    pub fn refresh_after_write_async<E, F>(
        mut self,
        after: Duration,
        reload: impl Fn(K, V) -> F + Send + Sync + 'static,
        spawn: impl Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = Result<V, E>> + Send + 'static,
    {
        self.refresh = Some(RefreshSettings {
            after,
            reload: Arc::new(move |key: K, old: V| {
                let reload = reload(key, old);
                Box::pin(async move { reload.await.ok() })
            }),
            spawn: Arc::new(spawn),
            clone_key: K::clone,
        });
        self
    }
}
