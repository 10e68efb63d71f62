//! The builder shared by the cache front ends: capacity, weights, expiry, listener, stats, clock,
//! hasher and policy, checked once in `build()`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::budget::Budget;
pub use crate::build_error::BuildError;
use crate::expiry::{Expiry, ExpiryRules, Jitter};
use crate::notification::{Listener, RemovalCause};
use crate::policy::EvictionPolicy;
use crate::scheduler::Scheduler;
use crate::shard::{RefreshTrigger, ShardConfig, Weigher, MAX_ENTRIES};
use crate::time::{duration_nanos, Clock};

/// Builds the [`unsync::Cache`](crate::unsync::Cache) (marker for [`CacheBuilder`]).
#[derive(Debug)]
pub enum Unsynchronized {}

/// Builds the [`sync::Cache`](crate::sync::Cache) (marker for [`CacheBuilder`]; also
/// `cortado::sync::Synchronized`).
#[derive(Debug)]
pub enum Synchronized {}

/// Builds the [`future::Cache`](crate::future::Cache) (marker for [`CacheBuilder`]; also
/// `cortado::future::Asynchronous`).
#[derive(Debug)]
pub enum Asynchronous {}

/// The front ends built on the sharded concurrent core ([`sync`](crate::sync) and
/// [`future`](crate::future)): only their builders have shards, a scheduler and a time to
/// live for cached absences (`negative_ttl`).
pub trait Concurrent: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Synchronized {}
    impl Sealed for super::Asynchronous {}
}

impl Concurrent for Synchronized {}
impl Concurrent for Asynchronous {}

/// Configures a cache; `F` names the front end that `build()` makes.
///
/// ```
/// use std::time::Duration;
/// let mut cache = cortado::unsync::Cache::builder()
///     .max_capacity(10_000)
///     .time_to_live(Duration::from_secs(60))
///     .build()
///     .unwrap();
/// cache.insert("k", 1);
/// assert_eq!(cache.get("k"), Some(&1));
/// ```
pub struct CacheBuilder<K, V, S, F> {
    pub(crate) max_capacity: Option<u64>,
    pub(crate) initial_capacity: usize,
    pub(crate) weigher: Option<Weigher<K, V>>,
    pub(crate) ttl: Option<Duration>,
    pub(crate) tti: Option<Duration>,
    pub(crate) expiry: Option<Arc<dyn Expiry<K, V>>>,
    pub(crate) listener: Option<Listener<K, V>>,
    pub(crate) record_stats: bool,
    pub(crate) clock: Clock,
    pub(crate) policy: EvictionPolicy,
    pub(crate) shards: Option<usize>,
    pub(crate) negative_ttl: Option<Duration>,
    pub(crate) scheduler: Scheduler,
    pub(crate) expiry_batch: Option<usize>,
    pub(crate) hasher: S,
    pub(crate) budget: Option<Budget>,
    /// Whether the adaptive policy takes its mode from another cache (unsync only).
    pub(crate) follows_mode: bool,
    /// Whether only entries with a deadline may be evicted for size (unsync only).
    pub(crate) evicts_only_expiring: bool,
    /// Whether the listener hears only evictions (unsync only).
    pub(crate) listens_only_to_evictions: bool,
    /// How many caches split the policy's fixed minimums (unsync only; 1: none).
    pub(crate) minimums_divisor: u32,
    /// Whether each entry's last access time is kept (unsync only).
    pub(crate) records_access_times: bool,
    /// `refresh_after_write` (on the concurrent caches' builders, in [`crate::refresh`]).
    pub(crate) refresh: Option<RefreshSettings<K, V>>,
    /// `time_to_live_jitter`: the largest share of the time to live taken off an entry's.
    pub(crate) ttl_jitter: Option<f64>,
    front: PhantomData<fn() -> F>,
}

/// The hasher shows by its type alone: its state may hold the random seed that keeps keys from
/// being chosen to collide, which has no place in logs.
impl<K, V, S, F> fmt::Debug for CacheBuilder<K, V, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheBuilder")
            .field("max_capacity", &self.max_capacity)
            .field("weigher", &self.weigher.is_some())
            .field("ttl", &self.ttl)
            .field("tti", &self.tti)
            .field("expiry", &self.expiry.is_some())
            .field("listener", &self.listener.is_some())
            .field("record_stats", &self.record_stats)
            .field("policy", &self.policy)
            .field("hasher", &std::any::type_name::<S>())
            .finish_non_exhaustive()
    }
}

impl<K, V, S: Default, F> Default for CacheBuilder<K, V, S, F> {
    fn default() -> Self {
        Self {
            max_capacity: None,
            initial_capacity: 0,
            weigher: None,
            ttl: None,
            tti: None,
            expiry: None,
            listener: None,
            record_stats: false,
            clock: Clock::system(),
            policy: EvictionPolicy::default(),
            shards: None,
            negative_ttl: None,
            scheduler: Scheduler::None,
            expiry_batch: None,
            hasher: S::default(),
            budget: None,
            follows_mode: false,
            evicts_only_expiring: false,
            listens_only_to_evictions: false,
            minimums_divisor: 1,
            records_access_times: false,
            refresh: None,
            ttl_jitter: None,
            front: PhantomData,
        }
    }
}

impl<K, V, S, F> CacheBuilder<K, V, S, F> {
    /// The most entries the cache holds, or with a [`weigher`](Self::weigher) the most total
    /// weight. Without it the cache is unbounded. The concurrent caches split it over their
    /// shards, which with a weigher lend each other room for heavy entries (see
    /// [`sync`](crate::sync#capacity)).
    pub fn max_capacity(mut self, max: u64) -> Self {
        self.max_capacity = Some(max);
        self
    }

    /// Space reserved up front, in entries: at most the capacity (with a weigher, at most as
    /// many entries as the capacity has units of weight, a weight of at least 1 each), and below
    /// `u32::MAX` in any case (`build()` reports more as [`BuildError::InitialCapacityTooLarge`]).
    /// A hint: a cache whose entries weigh 0 still grows past it.
    pub fn initial_capacity(mut self, entries: usize) -> Self {
        self.initial_capacity = entries;
        self
    }

    /// Gives each entry a weight; the capacity then bounds the total weight. An entry heavier
    /// than the capacity is evicted at once (cause `Size`); any lighter one can be kept, also
    /// in a `sync` or `future` cache, whose shards lend each other room for an entry heavier
    /// than a shard's share (see [Capacity](crate::sync#capacity)). Under W-TinyLFU, once the
    /// cache is full, a new entry heavier than the admission window (3% of the capacity at
    /// first under the default adaptive policy, which then moves it, 1% under the static one;
    /// `window_capacity()` tells) leaves the window at once and must win admission against the
    /// main space's victims, which a key seen for the first time usually loses: it is then
    /// evicted as soon as it is inserted (cause `Size`), as any candidate that loses admission
    /// is. Until the cache is full, it is kept.
    ///
    /// The weigher runs under a shard's lock and must not use the cache it weighs for: in a
    /// `sync` or `future` cache that use panics in builds with debug assertions, but in release
    /// builds it deadlocks (checking there cost every operation about 4% more instructions:
    /// see [Callbacks](crate::sync#callbacks)).
    pub fn weigher(mut self, weigher: impl Fn(&K, &V) -> u32 + Send + Sync + 'static) -> Self {
        self.weigher = Some(Arc::new(weigher));
        self
    }

    /// Entries expire this long after they were inserted or last replaced.
    pub fn time_to_live(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Takes up to `fraction` of the [time to live](Self::time_to_live) off each entry's
    /// lifetime, at random (uniformly, drawn at each write): entries written together then
    /// expire spread over the last `fraction` of the time to live instead of all at once, and
    /// their reloads do not all reach the backing store in the same instant (a cache
    /// avalanche). No entry lives longer than the time to live. `fraction` is from 0 to 1
    /// (`build()` reports anything else, or a jitter without a time to live, as
    /// [`BuildError::InvalidJitter`]); it applies to the cache's time to live only, not to
    /// `insert_with_ttl`'s lifetimes, a time to idle or an `expire_after`.
    ///
    /// # Design
    ///
    /// The draw is the shard's own counter through a SplitMix64 finalizer, seeded at random
    /// per shard: one relaxed increment on the write path, under the shard's lock, and no
    /// state per entry. Lifetimes are only shortened, so the time to live stays a bound on
    /// staleness. The distribution with and without, on the timer wheel: the `ttl_jitter`
    /// example.
    pub fn time_to_live_jitter(mut self, fraction: f64) -> Self {
        self.ttl_jitter = Some(fraction);
        self
    }

    /// Entries expire this long after they were last read or written.
    pub fn time_to_idle(mut self, tti: Duration) -> Self {
        self.tti = Some(tti);
        self
    }

    /// Each entry's lifetime comes from `expiry` (not combinable with time to live or idle).
    ///
    /// Its methods run under a shard's lock and must not use the cache they decide for: in a
    /// `sync` or `future` cache that use panics in builds with debug assertions, but in release
    /// builds it deadlocks (see [Callbacks](crate::sync#callbacks)).
    pub fn expire_after(mut self, expiry: impl Expiry<K, V> + 'static) -> Self {
        self.expiry = Some(Arc::new(expiry));
        self
    }

    /// Called with every removed entry and why it was removed. It runs on the thread that caused
    /// the removal, after the cache's bookkeeping (outside any lock). If it panics, the cache is
    /// left consistent, the other removals of the same operation are still reported, and the
    /// first panic then reaches the operation's caller (on a scheduler's thread or task, it is
    /// dropped there and the scheduler goes on).
    pub fn eviction_listener(
        mut self,
        listener: impl Fn(&K, &V, RemovalCause) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }

    /// Counts hits, misses, loads and removals (see [`CacheStats`](crate::stats::CacheStats)).
    pub fn record_stats(mut self) -> Self {
        self.record_stats = true;
        self
    }

    /// Reads time from `clock` (a [`ManualClock`](crate::time::ManualClock) in tests).
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Bounds the expired entries that one write removes to `entries` (at least 1).
    ///
    /// Without it, the write that finds entries expired removes all of them, which after a
    /// burst of entries that expire together (a million written in one second with one time
    /// to live) takes that write milliseconds. With it, each write removes at most `entries`
    /// and leaves the others for the writes after it, or for
    /// [`unsync::Cache::remove_expired`](crate::unsync::Cache::remove_expired) in a loop of
    /// the caller's; meanwhile they read as absent, as every expired entry does, but still
    /// take their room in the capacity. `run_pending_tasks` removes them all, as does a
    /// capacity change.
    pub fn expiry_batch(mut self, entries: usize) -> Self {
        self.expiry_batch = Some(entries.max(1));
        self
    }

    /// The eviction policy (W-TinyLFU by default).
    pub fn eviction_policy(mut self, policy: EvictionPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Hashes keys with `hasher` instead of the default (foldhash, randomly seeded).
    pub fn hasher<S2>(self, hasher: S2) -> CacheBuilder<K, V, S2, F> {
        CacheBuilder {
            max_capacity: self.max_capacity,
            initial_capacity: self.initial_capacity,
            weigher: self.weigher,
            ttl: self.ttl,
            tti: self.tti,
            expiry: self.expiry,
            listener: self.listener,
            record_stats: self.record_stats,
            clock: self.clock,
            policy: self.policy,
            shards: self.shards,
            negative_ttl: self.negative_ttl,
            scheduler: self.scheduler,
            expiry_batch: self.expiry_batch,
            hasher,
            budget: self.budget,
            follows_mode: self.follows_mode,
            evicts_only_expiring: self.evicts_only_expiring,
            listens_only_to_evictions: self.listens_only_to_evictions,
            minimums_divisor: self.minimums_divisor,
            records_access_times: self.records_access_times,
            refresh: self.refresh,
            ttl_jitter: self.ttl_jitter,
            front: PhantomData,
        }
    }

    /// Checks the settings and derives the shard configuration.
    pub(crate) fn shard_config(&self) -> Result<ShardConfig<K, V>, BuildError> {
        if self.expiry.is_some() && (self.ttl.is_some() || self.tti.is_some()) {
            return Err(BuildError::ExpiryConflict);
        }
        if self.budget.is_some() {
            if self.weigher.is_none() {
                return Err(BuildError::BudgetWithoutWeigher);
            }
            if self.max_capacity.is_some() {
                return Err(BuildError::BudgetAndCapacity);
            }
        } else if self.weigher.is_some() && self.max_capacity.is_none() {
            return Err(BuildError::WeigherWithoutCapacity);
        }
        self.policy.check().map_err(BuildError::InvalidPolicy)?;
        if let Some(fraction) = self.ttl_jitter {
            if !(0.0..=1.0).contains(&fraction) || self.ttl.is_none() {
                return Err(BuildError::InvalidJitter);
            }
        }
        if let Some(max) = self.max_capacity {
            if self.weigher.is_none() && max > MAX_ENTRIES {
                return Err(BuildError::CapacityTooLarge { requested: max });
            }
        }
        // Entries weigh at least 1 but for the odd zero, so the capacity bounds the space
        // worth reserving with a weigher too: reserving `u32::MAX` slots for a cache of
        // weight 10 aborted the process on the allocation.
        let initial_capacity = match self.max_capacity {
            Some(max) => self
                .initial_capacity
                .min(usize::try_from(max).unwrap_or(usize::MAX)),
            None => self.initial_capacity,
        };
        if initial_capacity as u64 > MAX_ENTRIES {
            return Err(BuildError::InitialCapacityTooLarge {
                requested: self.initial_capacity,
            });
        }
        let mut policy = self.policy;
        policy.minimums_divisor = self.minimums_divisor;
        Ok(ShardConfig {
            max_capacity: self.max_capacity,
            initial_capacity,
            policy,
            weigher: self.weigher.clone(),
            rules: ExpiryRules {
                ttl: self.ttl.map(duration_nanos),
                tti: self.tti.map(duration_nanos),
                custom: self.expiry.clone(),
                jitter: self
                    .ttl
                    .zip(self.ttl_jitter)
                    .map(|(ttl, fraction)| Box::new(Jitter::new(duration_nanos(ttl), fraction))),
            },
            record_stats: self.record_stats,
            notify: self.listener.is_some(),
            notify_only_evictions: self.listens_only_to_evictions,
            follower: self.follows_mode,
            alarm: None,
            expiry_batch: self.expiry_batch.unwrap_or(usize::MAX),
            budget: self.budget.clone(),
            evicts_only_expiring: self.evicts_only_expiring,
            refresh: self
                .refresh
                .as_ref()
                .map(|refresh| Arc::new(RefreshTrigger::new(duration_nanos(refresh.after)))),
            access_times: self.records_access_times,
        })
    }
}

/// A future that can move to another thread.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The reloader, type-erased: the key and the old value in, the new value out (`None`: the
/// reload failed).
pub(crate) type Reload<K, V> = Arc<dyn Fn(K, V) -> BoxFuture<Option<V>> + Send + Sync>;

/// Runs a reload somewhere else than the reader's thread.
pub(crate) type Spawn = Arc<dyn Fn(BoxFuture<()>) + Send + Sync>;

/// What `refresh_after_write` configured (the methods are in [`crate::refresh`]).
pub(crate) struct RefreshSettings<K, V> {
    /// The age at which a read starts a reload.
    pub(crate) after: Duration,
    pub(crate) reload: Reload<K, V>,
    pub(crate) spawn: Spawn,
    /// `K::clone`, captured where `K: Clone` is known: the cache's read path does not ask it.
    pub(crate) clone_key: fn(&K) -> K,
}

impl<K, V> Clone for RefreshSettings<K, V> {
    fn clone(&self) -> Self {
        Self {
            after: self.after,
            reload: self.reload.clone(),
            spawn: self.spawn.clone(),
            clone_key: self.clone_key,
        }
    }
}
