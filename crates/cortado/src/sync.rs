//! A thread-safe cache: shards of the single-threaded core, each behind a read-write lock, with
//! reads that never take a write lock.
//!
//! `Cache` is `Send + Sync` and a cheap `Clone` (a shared handle); `get` returns a clone of the
//! value, so put large values in an `Arc`.
//!
//! # Design
//!
//! - **Shards.** Keys are spread over a power-of-two number of [`Shard`]s by bits 40..56 of their
//!   hash (the table itself uses the low bits and the top seven), each with `capacity / shards`
//!   of the capacity. The default count is the smallest power of two at least four times the
//!   number of CPUs, lowered so that every shard holds at least [`MIN_SHARD_CAPACITY`] (256)
//!   entries. Each shard has its own policy and sketch: nothing is shared between shards, so
//!   nothing contends. An entry heavier than a shard's share of the capacity is not kept.
//! - **Reads** take the shard's read lock, look the key up and clone the value; the hit is
//!   recorded in the shard's lossy [`ReadBuffer`] and replayed into the policy under the write
//!   lock by the next writer, or by a reader that finds the lock free (`try_write`, never
//!   waiting). Time-to-idle deadlines move at the read itself (an atomic per entry).
//! - **Writes** take the write lock and do the maintenance there: replay buffered reads, expire
//!   due entries, insert, evict to fit. So after every write the shard is within its capacity:
//!   **the cache never holds more than its capacity** (the bound has no slack), and
//!   [`run_pending_tasks`](Cache::run_pending_tasks) only adds the removal of expired entries
//!   and of buffered reads.
//! - **Listener** calls happen after the lock is released, on the thread that caused them.
//! - **Loaders** (`get_with` and friends) coalesce concurrent misses per key (see
//!   [`loader`](crate::loader)).
//!
//! # Memory
//!
//! Per entry as in [`unsync`](crate::unsync) (the same core), plus per shard a 64-slot read
//! buffer and the lock: about 512 bytes per shard.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use hashbrown::DefaultHashBuilder;

use crate::builder::{BuildError, CacheBuilder};
use crate::loader::{Loading, Outcome, Role};
use crate::notification::{Listener, RemovalCause};
use crate::read_buffer::ReadBuffer;
use crate::shard::{Shard, ShardConfig};
use crate::stats::CacheStats;
use crate::time::{duration_nanos, Clock};

/// The fewest entries a shard gets when the shard count is chosen automatically.
pub const MIN_SHARD_CAPACITY: u64 = 256;
/// The most shards a cache may have.
pub const MAX_SHARDS: usize = 1 << 16;

/// Builds the [`sync::Cache`](Cache) (marker for [`CacheBuilder`]).
#[derive(Debug)]
pub enum Synchronized {}

/// One shard with its read buffer, counters and loads in flight; aligned to keep shards on
/// separate cache lines.
#[repr(align(128))]
struct Slot<K, V, S> {
    core: RwLock<Shard<K, V, S>>,
    reads: ReadBuffer,
    hits: AtomicU64,
    misses: AtomicU64,
    loading: Loading<K, V>,
    /// Keys whose absence is cached (`negative_ttl`), as a small cache of its own.
    negatives: Option<Mutex<Shard<K, (), S>>>,
}

pub(crate) struct Inner<K, V, S> {
    slots: Box<[Slot<K, V, S>]>,
    shard_mask: usize,
    hasher: S,
    clock: Clock,
    listener: Option<Listener<K, V>>,
    /// Whether time is read at all: only once some entry can have a deadline.
    uses_time: AtomicBool,
    record_stats: bool,
    negative_ttl: Option<Duration>,
    load_successes: AtomicU64,
    load_failures: AtomicU64,
    load_nanos: AtomicU64,
    pub(crate) pacer: Option<crate::scheduler::PacerHandle>,
}

/// A thread-safe bounded cache. See the [module docs](self).
pub struct Cache<K, V, S = DefaultHashBuilder> {
    pub(crate) inner: Arc<Inner<K, V, S>>,
}

impl<K, V, S> Clone for Cache<K, V, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K, V, S> std::fmt::Debug for Cache<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("shards", &self.inner.slots.len())
            .finish_non_exhaustive()
    }
}

impl<K, V, S> Drop for Inner<K, V, S> {
    fn drop(&mut self) {
        if let Some(pacer) = &self.pacer {
            pacer.stop();
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
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

/// The default number of shards for a capacity.
fn default_shards(max_capacity: Option<u64>) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let wanted = (cpus * 4).next_power_of_two();
    let by_capacity = match max_capacity {
        Some(max) => {
            let fit = (max / MIN_SHARD_CAPACITY).max(1);
            // The largest power of two not above `fit`.
            1usize << (63 - fit.leading_zeros()).min(16)
        }
        None => wanted,
    };
    wanted.min(by_capacity).max(1)
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
    /// If `max_capacity` is too large for the shard count; use the [builder](Self::builder) to
    /// get an error instead.
    pub fn new(max_capacity: u64) -> Self {
        Self::builder()
            .max_capacity(max_capacity)
            .build()
            .expect("a valid capacity")
    }

    /// A builder for every setting.
    pub fn builder() -> CacheBuilder<K, V, DefaultHashBuilder, Synchronized> {
        CacheBuilder::default()
    }
}

impl<K, V, S, F> CacheBuilder<K, V, S, F> {
    /// The number of shards (a power of two); by default chosen from the CPU count and the
    /// capacity. Only the concurrent caches have shards.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Caches the absence of a key for `ttl` when an `optionally_get_with` loader finds
    /// nothing, so repeated lookups of missing keys do not reach the backing store (cache
    /// penetration). An insert of the key ends it early.
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = Some(ttl);
        self
    }

    /// Runs maintenance on a background thread when the next entry is due, so expired entries
    /// are removed (and their listener called) even when nobody touches the cache. The thread
    /// ends when the last handle of the cache is dropped.
    pub fn scheduler_thread(mut self) -> Self {
        self.scheduler = true;
        self
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher + Clone> CacheBuilder<K, V, S, Synchronized> {
    /// Builds the cache, or says which setting cannot work.
    pub fn build(self) -> Result<Cache<K, V, S>, BuildError>
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
        S: Send + Sync + 'static,
    {
        Ok(Cache::from_inner(Inner::build(self)?))
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher + Clone> Inner<K, V, S> {
    pub(crate) fn build<F>(builder: CacheBuilder<K, V, S, F>) -> Result<Self, BuildError> {
        let shards = match builder.shards {
            Some(n) if n == 0 || n > MAX_SHARDS || !n.is_power_of_two() => {
                return Err(BuildError::InvalidShardCount { requested: n })
            }
            Some(n) => n,
            None => default_shards(builder.max_capacity),
        };
        let config = builder.shard_config()?;
        let per_shard = |i: usize| -> ShardConfig<K, V> {
            let mut config = config.clone();
            config.max_capacity = config.max_capacity.map(|max| {
                let n = shards as u64;
                max / n + u64::from((i as u64) < max % n)
            });
            config.initial_capacity = config.initial_capacity.div_ceil(shards);
            config
        };
        let negatives = |i: usize| {
            builder.negative_ttl.map(|_| {
                let max = per_shard(i).max_capacity.map_or(1024, |m| (m / 8).max(16));
                let config = ShardConfig::<K, ()> {
                    max_capacity: Some(max),
                    initial_capacity: 0,
                    policy: crate::policy::EvictionPolicy::lru(),
                    weigher: None,
                    rules: crate::expiry::ExpiryRules {
                        ttl: None,
                        tti: None,
                        custom: None,
                    },
                    record_stats: false,
                    notify: false,
                };
                Mutex::new(Shard::new(&config, builder.hasher.clone()))
            })
        };
        let slots = (0..shards)
            .map(|i| Slot {
                core: RwLock::new(Shard::new(&per_shard(i), builder.hasher.clone())),
                reads: ReadBuffer::default(),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                loading: Loading::default(),
                negatives: negatives(i),
            })
            .collect();
        Ok(Self {
            slots,
            shard_mask: shards - 1,
            uses_time: AtomicBool::new(config.rules.is_active() || builder.negative_ttl.is_some()),
            hasher: builder.hasher,
            clock: builder.clock,
            listener: builder.listener,
            record_stats: config.record_stats,
            negative_ttl: builder.negative_ttl,
            load_successes: AtomicU64::new(0),
            load_failures: AtomicU64::new(0),
            load_nanos: AtomicU64::new(0),
            pacer: builder.scheduler.then(crate::scheduler::PacerHandle::new),
        })
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Inner<K, V, S> {
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        if self.uses_time.load(Ordering::Relaxed) {
            self.clock.now_nanos()
        } else {
            0
        }
    }

    #[inline]
    fn slot(&self, hash: u64) -> &Slot<K, V, S> {
        &self.slots[(hash >> 40) as usize & self.shard_mask]
    }

    fn notify(&self, pending: Vec<(K, V, RemovalCause)>) {
        if let Some(listener) = &self.listener {
            for (key, value, cause) in pending {
                listener(&key, &value, cause);
            }
        }
    }

    /// Replays buffered reads and expires due entries; the caller holds the write lock.
    fn maintain(&self, slot: &Slot<K, V, S>, core: &mut Shard<K, V, S>, now: u64) {
        slot.reads.drain(|i| core.record_read(i));
        core.advance(now);
    }

    /// Runs `f` under the shard's write lock after maintenance, then notifies the listener.
    fn with_write<R>(&self, hash: u64, f: impl FnOnce(&mut Shard<K, V, S>, u64) -> R) -> R {
        let slot = self.slot(hash);
        let now = self.now();
        let mut core = write(&slot.core);
        self.maintain(slot, &mut core, now);
        let result = f(&mut core, now);
        let pending = std::mem::take(&mut core.pending);
        let next = core.next_expiration();
        drop(core);
        self.notify(pending);
        if let (Some(pacer), Some(next)) = (&self.pacer, next) {
            pacer.wake_by(next);
        }
        result
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let slot = self.slot(hash);
        let now = self.now();
        let core = read(&slot.core);
        let Some((i, value)) = core.get_shared(hash, key, now) else {
            drop(core);
            if self.record_stats {
                slot.misses.fetch_add(1, Ordering::Relaxed);
            }
            return None;
        };
        let value = value.clone();
        drop(core);
        if self.record_stats {
            slot.hits.fetch_add(1, Ordering::Relaxed);
        }
        if slot.reads.record(i) {
            if let Ok(mut core) = slot.core.try_write() {
                self.maintain(slot, &mut core, now);
                let pending = std::mem::take(&mut core.pending);
                drop(core);
                self.notify(pending);
            }
        }
        Some(value)
    }

    pub(crate) fn insert_with(&self, key: K, value: V, ttl: Option<Duration>) {
        if ttl.is_some() {
            self.uses_time.store(true, Ordering::Relaxed);
        }
        let hash = self.hasher.hash_one(&key);
        if let Some(negatives) = &self.slot(hash).negatives {
            let mut negatives = negatives.lock().unwrap_or_else(PoisonError::into_inner);
            negatives.remove(hash, &key, 0);
        }
        self.with_write(hash, |core, now| core.insert(hash, key, value, now, ttl));
    }

    pub(crate) fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let (key, value) = self.with_write(hash, |core, now| core.remove(hash, key, now))?;
        if let Some(listener) = &self.listener {
            listener(&key, &value, RemovalCause::Explicit);
        }
        Some(value)
    }

    pub(crate) fn run_pending_tasks(&self) {
        let now = self.now();
        for slot in self.slots.iter() {
            let mut core = write(&slot.core);
            self.maintain(slot, &mut core, now);
            let pending = std::mem::take(&mut core.pending);
            drop(core);
            self.notify(pending);
        }
    }

    /// The earliest time any shard may have an entry to expire.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|slot| read(&slot.core).next_expiration())
            .min()
    }

    fn record_load(&self, started: Instant, success: bool) {
        if !self.record_stats {
            return;
        }
        let counter = if success {
            &self.load_successes
        } else {
            &self.load_failures
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.load_nanos
            .fetch_add(duration_nanos(started.elapsed()), Ordering::Relaxed);
    }

    /// Whether the absence of `key` is cached.
    fn is_negative(&self, hash: u64, key: &K) -> bool {
        let Some(negatives) = &self.slot(hash).negatives else {
            return false;
        };
        let now = self.now();
        let mut negatives = negatives.lock().unwrap_or_else(PoisonError::into_inner);
        negatives.advance(now);
        negatives.peek(hash, key, now).is_some()
    }

    fn cache_absence(&self, hash: u64, key: K) {
        if let (Some(negatives), Some(ttl)) = (&self.slot(hash).negatives, self.negative_ttl) {
            let now = self.now();
            let mut negatives = negatives.lock().unwrap_or_else(PoisonError::into_inner);
            negatives.insert(hash, key, (), now, Some(ttl));
        }
    }
}

/// The shared loader protocol of the blocking and async front ends: what to do after a miss.
pub(crate) enum Step<'a, K: Hash + Eq + Clone, V: Clone> {
    /// The value is (now) cached.
    Hit(V),
    /// Run the loader, then call [`Inner::finish_load`].
    Load(crate::loader::LoadGuard<'a, K, V>),
    /// Wait for another caller's load.
    Wait(Arc<crate::loader::Waiter<V>>),
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Inner<K, V, S> {
    /// Looks `key` up; on a miss, joins or starts its load.
    pub(crate) fn begin_load(&self, key: &K) -> Step<'_, K, V> {
        if let Some(value) = self.get(key) {
            return Step::Hit(value);
        }
        let hash = self.hasher.hash_one(key);
        match self.slot(hash).loading.join(key) {
            Role::Wait(waiter) => Step::Wait(waiter),
            Role::Load(guard) => {
                // A load may have finished between the miss and the join.
                let hash = self.hasher.hash_one(key);
                let now = self.now();
                let cached = read(&self.slot(hash).core).peek(hash, key, now).cloned();
                match cached {
                    Some(value) => {
                        guard.complete(Outcome::Value(value.clone()));
                        Step::Hit(value)
                    }
                    None => Step::Load(guard),
                }
            }
        }
    }

    /// Whether the absence of `key` is cached (then loaders are not run).
    pub(crate) fn absent(&self, key: &K) -> bool {
        self.negative_ttl.is_some() && self.is_negative(self.hasher.hash_one(key), key)
    }

    /// Caches the loader's result and hands it to the waiters.
    pub(crate) fn finish_load(
        &self,
        key: &K,
        guard: crate::loader::LoadGuard<'_, K, V>,
        started: Instant,
        outcome: Outcome<V>,
    ) {
        match &outcome {
            Outcome::Value(value) => {
                self.record_load(started, true);
                self.insert_with(key.clone(), value.clone(), None);
            }
            Outcome::Absent => {
                self.record_load(started, false);
                self.cache_absence(self.hasher.hash_one(key), key.clone());
            }
            Outcome::Failed(_) | Outcome::Abandoned => self.record_load(started, false),
        }
        guard.complete(outcome);
    }
}

impl<K, V, S> Cache<K, V, S>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Wraps a built core and starts its scheduler thread, if any.
    pub(crate) fn from_inner(inner: Inner<K, V, S>) -> Self {
        let cache = Self {
            inner: Arc::new(inner),
        };
        if let Some(pacer) = &cache.inner.pacer {
            pacer.spawn(Arc::downgrade(&cache.inner));
        }
        cache
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// A clone of the value of `key` if present and not expired; counts as a use.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inner.get(key)
    }

    /// A clone of the value of `key` if present and not expired, with no effect on eviction,
    /// expiry or stats.
    pub fn peek<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.inner.hasher.hash_one(key);
        let now = self.inner.now();
        read(&self.inner.slot(hash).core)
            .peek(hash, key, now)
            .cloned()
    }

    /// Whether `key` is present and not expired (no effect on eviction).
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.inner.hasher.hash_one(key);
        let now = self.inner.now();
        read(&self.inner.slot(hash).core)
            .peek(hash, key, now)
            .is_some()
    }

    /// Inserts or replaces the value of `key`, then evicts to fit the capacity.
    pub fn insert(&self, key: K, value: V) {
        self.inner.insert_with(key, value, None);
    }

    /// Inserts or replaces with a lifetime of its own, overriding the cache's time to live.
    pub fn insert_with_ttl(&self, key: K, value: V, ttl: Duration) {
        self.inner.insert_with(key, value, Some(ttl));
    }

    /// Removes `key` and returns its value if it was present and not expired.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inner.remove(key)
    }

    /// Entries held, including expired ones not yet removed.
    pub fn len(&self) -> usize {
        self.inner.slots.iter().map(|s| read(&s.core).len()).sum()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total weight of the entries (their count without a weigher).
    pub fn weighted_size(&self) -> u64 {
        self.inner
            .slots
            .iter()
            .map(|s| read(&s.core).weighted_size())
            .sum()
    }

    /// The capacity (total weight with a weigher); `u64::MAX` when unbounded.
    pub fn max_capacity(&self) -> u64 {
        self.inner
            .slots
            .iter()
            .map(|s| read(&s.core).max_capacity())
            .fold(0u64, u64::saturating_add)
    }

    /// The number of shards.
    pub fn shard_count(&self) -> usize {
        self.inner.slots.len()
    }

    /// A snapshot of the live entries, taken one shard at a time.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_
    where
        K: Clone,
    {
        let now = self.inner.now();
        self.inner.slots.iter().flat_map(move |slot| {
            read(&slot.core)
                .iter(now)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        })
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&self, mut keep: impl FnMut(&K, &V) -> bool) {
        let now = self.inner.now();
        for slot in self.inner.slots.iter() {
            let mut core = write(&slot.core);
            self.inner.maintain(slot, &mut core, now);
            core.retain(now, &mut keep);
            let pending = std::mem::take(&mut core.pending);
            drop(core);
            self.inner.notify(pending);
        }
    }

    /// Removes every entry.
    pub fn invalidate_all(&self) {
        for slot in self.inner.slots.iter() {
            let mut core = write(&slot.core);
            slot.reads.drain(|_| {});
            core.clear();
            let pending = std::mem::take(&mut core.pending);
            drop(core);
            self.inner.notify(pending);
        }
    }

    /// Changes the capacity (split over the shards); shrinking evicts at once.
    pub fn set_max_capacity(&self, max_capacity: u64) {
        let n = self.inner.slots.len() as u64;
        for (i, slot) in self.inner.slots.iter().enumerate() {
            let share = max_capacity / n + u64::from((i as u64) < max_capacity % n);
            let mut core = write(&slot.core);
            core.set_max_capacity(share);
            let pending = std::mem::take(&mut core.pending);
            drop(core);
            self.inner.notify(pending);
        }
    }

    /// Replays buffered reads and removes expired entries now (otherwise done on writes, or by
    /// the scheduler thread).
    pub fn run_pending_tasks(&self) {
        self.inner.run_pending_tasks();
    }

    /// The counters since the cache was built; all zero unless built with `record_stats`.
    pub fn stats(&self) -> CacheStats {
        let inner = &self.inner;
        let mut stats = CacheStats {
            load_successes: inner.load_successes.load(Ordering::Relaxed),
            load_failures: inner.load_failures.load(Ordering::Relaxed),
            load_nanos: inner.load_nanos.load(Ordering::Relaxed),
            ..CacheStats::default()
        };
        for slot in inner.slots.iter() {
            stats = stats.merge(&read(&slot.core).stats());
            stats.hits += slot.hits.load(Ordering::Relaxed);
            stats.misses += slot.misses.load(Ordering::Relaxed);
        }
        stats
    }

    fn keys_by_order(&self, n: usize, coldest: bool) -> Vec<K>
    where
        K: Clone,
    {
        let now = self.inner.now();
        let per_shard: Vec<Vec<K>> = self
            .inner
            .slots
            .iter()
            .map(|slot| {
                read(&slot.core)
                    .keys_by_eviction_order(n, now, coldest)
                    .into_iter()
                    .cloned()
                    .collect()
            })
            .collect();
        // Shards evict independently: interleave their orders.
        let mut keys = Vec::with_capacity(n);
        for rank in 0.. {
            let before = keys.len();
            for shard in &per_shard {
                if keys.len() == n {
                    return keys;
                }
                if let Some(key) = shard.get(rank) {
                    keys.push(key.clone());
                }
            }
            if keys.len() == before {
                break;
            }
        }
        keys
    }

    /// Up to `n` keys, the least likely to be evicted first (shards interleaved).
    pub fn hottest(&self, n: usize) -> Vec<K>
    where
        K: Clone,
    {
        self.keys_by_order(n, false)
    }

    /// Up to `n` keys, the next to be evicted first (shards interleaved).
    pub fn coldest(&self, n: usize) -> Vec<K>
    where
        K: Clone,
    {
        self.keys_by_order(n, true)
    }

    /// Heap bytes used by the cache's own structures (not by what keys and values own).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Inner<K, V, S>>()
            + self
                .inner
                .slots
                .iter()
                .map(|s| std::mem::size_of::<Slot<K, V, S>>() + read(&s.core).memory_bytes())
                .sum::<usize>()
    }

    /// Panics if an internal invariant of any shard is broken. For tests and fuzzing.
    #[doc(hidden)]
    pub fn validate(&self) {
        for slot in self.inner.slots.iter() {
            read(&slot.core).validate();
        }
    }

    /// Whether the scheduler thread is still running (for tests).
    #[doc(hidden)]
    pub fn scheduler_alive(&self) -> Option<Arc<AtomicBool>> {
        self.inner.pacer.as_ref().map(|p| p.alive())
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The value of `key`; on a miss, exactly one caller per key runs `init` and caches its
    /// value while concurrent callers for the key wait for it. If `init` panics, the panic
    /// reaches its caller and the waiters retry.
    pub fn get_with(&self, key: K, init: impl FnOnce() -> V) -> V {
        let mut init = Some(init);
        loop {
            match self.inner.begin_load(&key) {
                Step::Hit(value) => return value,
                Step::Wait(waiter) => {
                    if let Outcome::Value(value) = waiter.wait() {
                        return value;
                    }
                }
                Step::Load(guard) => {
                    let started = Instant::now();
                    let init = init.take().expect("a caller loads at most once");
                    let value = init();
                    self.inner
                        .finish_load(&key, guard, started, Outcome::Value(value.clone()));
                    return value;
                }
            }
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may fail: its error goes to the
    /// caller and to every waiter, and nothing is cached.
    pub fn try_get_with<E>(&self, key: K, init: impl FnOnce() -> Result<V, E>) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        let mut init = Some(init);
        loop {
            match self.inner.begin_load(&key) {
                Step::Hit(value) => return Ok(value),
                Step::Wait(waiter) => match waiter.wait() {
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
                    let init = init.take().expect("a caller loads at most once");
                    return match init() {
                        Ok(value) => {
                            self.inner.finish_load(
                                &key,
                                guard,
                                started,
                                Outcome::Value(value.clone()),
                            );
                            Ok(value)
                        }
                        Err(error) => {
                            let error = Arc::new(error);
                            self.inner.finish_load(
                                &key,
                                guard,
                                started,
                                Outcome::Failed(error.clone()),
                            );
                            Err(error)
                        }
                    };
                }
            }
        }
    }

    /// Like [`get_with`](Self::get_with) with a loader that may find nothing: `None` is not
    /// cached, unless the cache was built with a
    /// [`negative_ttl`](CacheBuilder::negative_ttl), which caches the absence for that long.
    pub fn optionally_get_with(&self, key: K, init: impl FnOnce() -> Option<V>) -> Option<V> {
        let mut init = Some(init);
        loop {
            if self.inner.absent(&key) {
                return self.get(&key);
            }
            match self.inner.begin_load(&key) {
                Step::Hit(value) => return Some(value),
                Step::Wait(waiter) => match waiter.wait() {
                    Outcome::Value(value) => return Some(value),
                    Outcome::Absent => return None,
                    Outcome::Failed(_) | Outcome::Abandoned => {}
                },
                Step::Load(guard) => {
                    let started = Instant::now();
                    let init = init.take().expect("a caller loads at most once");
                    let found = init();
                    let outcome = match &found {
                        Some(value) => Outcome::Value(value.clone()),
                        None => Outcome::Absent,
                    };
                    self.inner.finish_load(&key, guard, started, outcome);
                    return found;
                }
            }
        }
    }

    /// The entry of `key`, for compound operations.
    pub fn entry(&self, key: K) -> Entry<'_, K, V, S> {
        Entry { cache: self, key }
    }
}

/// One key of a [`Cache`], for compound operations (see [`Cache::entry`]).
#[derive(Debug)]
pub struct Entry<'a, K, V, S> {
    cache: &'a Cache<K, V, S>,
    key: K,
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Entry<'_, K, V, S> {
    /// The value, loading it with `init` on a miss (coalesced like
    /// [`Cache::get_with`]).
    pub fn or_insert_with(self, init: impl FnOnce() -> V) -> V {
        self.cache.get_with(self.key, init)
    }

    /// Atomically reads the live value (if any), asks `f` what to do, and does it; returns the
    /// value now held. `f` runs under the shard's write lock: it must not use the cache.
    pub fn and_compute_with(self, f: impl FnOnce(Option<&V>) -> Compute<V>) -> Option<V> {
        let inner = &self.cache.inner;
        let hash = inner.hasher.hash_one(&self.key);
        let key = self.key;
        let (result, removed) =
            inner.with_write(hash, |core, now| match f(core.peek(hash, &key, now)) {
                Compute::Put(value) => {
                    core.insert(hash, key, value.clone(), now, None);
                    (Some(value), None)
                }
                Compute::Remove => (None, core.remove(hash, &key, now)),
                Compute::Nop => (core.peek(hash, &key, now).cloned(), None),
            });
        if let (Some((key, value)), Some(listener)) = (removed, &inner.listener) {
            listener(&key, &value, RemovalCause::Explicit);
        }
        result
    }
}
