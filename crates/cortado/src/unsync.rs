//! A single-threaded cache: one shard of the cache core, with a clock and a listener.
//!
//! Use it where one thread owns the cache (or wraps it in its own lock); `get` takes `&mut self`
//! because a hit is recorded: told to the policy, or (most W-TinyLFU hits) counted on the entry
//! for the policy to apply when the entry nears eviction. [`Cache::get_or_insert_with`] looks up
//! and, on a miss, computes and inserts in one call; [`Cache::get_mut`] lends the value to change
//! in place (as the `lru` crate's and quick_cache's do), weighing it again when done.
//!
//! ```
//! let mut cache = cortado::unsync::Cache::new(2);
//! cache.insert(1, "one");
//! cache.insert(2, "two");
//! cache.get(&1);
//! cache.insert(3, "three");
//! assert_eq!(cache.len(), 2);
//! ```

use std::borrow::Borrow;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hash};
use std::ops::{Deref, DerefMut};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use hashbrown::DefaultHashBuilder;

use crate::budget::Budget;
use crate::builder::{BuildError, CacheBuilder, Unsynchronized};
use crate::loader::OnDrop;
use crate::notification::{Hearing, Listener, RemovalCause};
use crate::shard::{self, Shard};
use crate::stats::CacheStats;
use crate::time::{duration_nanos, Clock};

/// A single-threaded bounded cache. See the [module docs](self).
pub struct Cache<K, V, S = DefaultHashBuilder> {
    shard: Shard<K, V, S>,
    clock: Clock,
    listener: Option<Listener<K, V>>,
    /// Whether time is read at all: only once some entry can have a deadline.
    uses_time: bool,
    /// Whether the listener hears explicit removals (see
    /// [`listen_only_to_evictions`](CacheBuilder::listen_only_to_evictions)).
    hears_removals: bool,
}

// As for `sync::Cache`: a panicking callback leaves the cache consistent
// (tests/it/panic_safety.rs); only the type-erased callbacks hide it from the compiler.
impl<K, V, S> std::panic::UnwindSafe for Cache<K, V, S>
where
    K: std::panic::UnwindSafe,
    V: std::panic::UnwindSafe,
    S: std::panic::UnwindSafe,
{
}

impl<K, V, S> std::panic::RefUnwindSafe for Cache<K, V, S>
where
    K: std::panic::RefUnwindSafe,
    V: std::panic::RefUnwindSafe,
    S: std::panic::RefUnwindSafe,
{
}

impl<K, V, S> std::fmt::Debug for Cache<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shard
            .debug_sizes(&mut f.debug_struct("Cache"))
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V> Cache<K, V> {
    /// A cache of at most `max_capacity` entries with the default settings.
    ///
    /// # Panics
    ///
    /// If `max_capacity` is `u32::MAX` or more; use the [builder](Self::builder) to get an error
    /// instead.
    pub fn new(max_capacity: u64) -> Self {
        Self::builder()
            .max_capacity(max_capacity)
            .build()
            .expect("max_capacity below u32::MAX")
    }

    /// A builder for every setting.
    pub fn builder() -> CacheBuilder<K, V, DefaultHashBuilder, Unsynchronized> {
        CacheBuilder::default()
    }
}

impl<K, V, S> CacheBuilder<K, V, S, Unsynchronized> {
    /// Shares `budget`'s capacity with the other caches built with it, in place of a
    /// `max_capacity` of its own (needs a [`weigher`](Self::weigher)): the caches together hold
    /// at most the budget's capacity, however their entries fall, and one of them can keep any
    /// entry up to that capacity, borrowing room from the others (see [`budget`](crate::budget)).
    /// The cache joins with an equal share (the capacity over the members it makes), which the
    /// others give up at their next write or [`run_pending_tasks`](Cache::run_pending_tasks).
    /// Its [`max_capacity`](Cache::max_capacity) is then the budget's, and
    /// [`set_max_capacity`](Cache::set_max_capacity) changes the budget's for every member.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Under the adaptive W-TinyLFU policy, runs none of the miniature caches that choose its
    /// mode: the cache keeps the starting mode until told another with
    /// [`adopt_policy_mode`](Cache::adopt_policy_mode). For caches that split one keyspace
    /// (shards), which then pay for one set of miniatures: one cache leads, and the others take
    /// its [`policy_mode`](Cache::policy_mode) now and then, as
    /// [`sync::Cache`](crate::sync::Cache)'s shards do.
    pub fn follow_policy_mode(mut self) -> Self {
        self.follows_mode = true;
        self
    }

    /// Splits the fixed minimums of the W-TinyLFU policy among `caches` caches that split one
    /// keyspace (shards whose memory is counted together, such as a server's): the admission
    /// sketch's smallest table (4,096 entries, 32 KiB) and its longest aging floor (10,000
    /// increments) become that share of them, so the caches together cost and age as one
    /// cache would. 0 and 1 leave the minimums whole.
    ///
    /// Without it, each of 32 small shards keeps a 32 KiB sketch and ages only after 10,000
    /// of its own increments, 32 times more requests than one cache. [`sync::Cache`]'s shards
    /// keep the whole minimums: there they bought more hit ratio than their memory would have
    /// (`docs/decisions/0006-sketch-minimums-per-shard.md`).
    ///
    /// [`sync::Cache`]: crate::sync::Cache
    pub fn split_minimums(mut self, caches: usize) -> Self {
        self.minimums_divisor = u32::try_from(caches.max(1)).unwrap_or(u32::MAX);
        self
    }

    /// Keeps each entry's last access time (a read or write; not a `peek`), in whole seconds
    /// of the cache's clock, for [`idle_time`](Cache::idle_time): 4 bytes per entry, and a
    /// flag test per read and write without it.
    pub fn record_access_times(mut self) -> Self {
        self.records_access_times = true;
        self
    }

    /// Evicts for size only entries that have a deadline (Redis's `volatile-*` policies): the
    /// policy sees only those, and an entry without one is never evicted for size, though its
    /// weight counts against the capacity. When such entries alone fill the capacity, the
    /// cache evicts every entry it may and stays over its capacity. Only a bounded cache
    /// (`max_capacity` or a [`budget`](Self::budget)) evicts at all.
    pub fn evict_only_expiring(mut self) -> Self {
        self.evicts_only_expiring = true;
        self
    }

    /// Has the [`eviction_listener`](Self::eviction_listener) hear only entries evicted for
    /// size or expired ([`RemovalCause::was_evicted`]), not those the caller removed or
    /// replaced (Caffeine's `evictionListener`, beside its `removalListener`): a cache whose
    /// writes often replace values then pays nothing to hand each old value to a listener
    /// that would ignore it.
    pub fn listen_only_to_evictions(mut self) -> Self {
        self.listens_only_to_evictions = true;
        self
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> CacheBuilder<K, V, S, Unsynchronized> {
    /// Builds the cache, or says which setting cannot work.
    pub fn build(self) -> Result<Cache<K, V, S>, BuildError> {
        let config = self.shard_config()?;
        Ok(Cache {
            uses_time: config.rules.is_active() || config.access_times,
            shard: Shard::new(&config, self.hasher),
            clock: self.clock,
            hears_removals: !self.listens_only_to_evictions,
            listener: self.listener,
        })
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> Cache<K, V, S> {
    #[inline]
    fn now(&self) -> u64 {
        if self.uses_time {
            self.clock.now_nanos()
        } else {
            0
        }
    }

    /// Tells the listener of every pending removal; if a call panics, the others are still
    /// made and the first panic then reaches the caller.
    fn notify(&mut self) {
        let mut hearing = Hearing::default();
        self.hear_pending(&mut hearing);
        hearing.finish();
    }

    #[inline]
    fn hear_pending(&mut self, hearing: &mut Hearing) {
        // Most writes remove nothing: no drain to build and drop then.
        if self.shard.pending.is_empty() {
            return;
        }
        if let Some(listener) = &self.listener {
            for (key, value, cause) in self.shard.pending.drain(..) {
                hearing.hear(listener, &key, &value, cause);
            }
        }
    }

    /// The value of `key` if present and not expired; counts as a use for eviction and for
    /// time-to-idle.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.now();
        let hash = self.shard.hash(key);
        self.shard.get(hash, key, now)
    }

    /// The value of `key` if present and not expired, to change in place through the returned
    /// guard, which derefs to it. A use and a hit (or a miss) as [`get`](Self::get) counts
    /// them, time to idle and [`expire_after_read`](crate::expiry::Expiry::expire_after_read)
    /// included; the policy hears of the use when the guard is dropped.
    ///
    /// With a weigher, dropping the guard weighs the entry again. A new weight reaches the
    /// policy as a replacing [`insert`](Self::insert)'s does, and the cache evicts as after one,
    /// so that the capacity holds once the guard is gone: an entry now heavier than the whole
    /// capacity leaves at once, heard by the listener as [`RemovalCause::Size`]. The value is
    /// not replaced, so no [`RemovalCause::Replaced`] is heard. Leaking the guard
    /// (`std::mem::forget`) leaves the entry at its old weight, until its next write.
    ///
    /// For expiry the change is a read, not a write: `expire_after_update` is not asked, and a
    /// time to live still counts from the last insert. The entry is not written anew (as in
    /// the `lru` crate, whose `get_mut` is a use); its deadline is settled at the lookup, as a
    /// read's, so dropping the guard calls no expiry rule (one more callback that could panic
    /// in `drop`). To give the changed value a fresh lifetime, [`insert`](Self::insert) it.
    ///
    /// # Panics
    ///
    /// When the weigher panics on the changed value, the entry's weight is unknown: the entry
    /// is removed (heard as [`RemovalCause::Explicit`]) and the panic reaches the code that
    /// dropped the guard. A guard dropped while its thread panics (say the change itself
    /// panicked, leaving the value half changed) does not call the weigher, whose panic would
    /// abort the process: with a weigher the entry is removed too, and the listener hears of
    /// it at the next operation that reports removals (a write, a `remove`,
    /// [`run_pending_tasks`](Self::run_pending_tasks)); without one the value stays as left.
    ///
    /// ```
    /// let mut cache = cortado::unsync::Cache::builder()
    ///     .max_capacity(16)
    ///     .weigher(|_: &u32, v: &String| v.len() as u32)
    ///     .build()
    ///     .unwrap();
    /// cache.insert(1, "one".to_string());
    /// if let Some(mut value) = cache.get_mut(&1) {
    ///     value.push_str(" and one");
    /// }
    /// assert_eq!(cache.peek(&1).map(String::as_str), Some("one and one"));
    /// assert_eq!(cache.weighted_size(), 11);
    /// // Too heavy for the whole capacity once changed: it is evicted when the guard drops.
    /// cache.get_mut(&1).unwrap().push_str(" and more");
    /// assert!(cache.is_empty());
    /// ```
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<RefMut<'_, K, V, S>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.now();
        let hash = self.shard.hash(key);
        let slot = self.shard.get_slot_unrecorded(hash, key, now)?;
        Some(RefMut {
            cache: self,
            slot,
            hash,
        })
    }

    /// The value of `key` if present and not expired, with no effect on eviction, expiry or
    /// stats.
    pub fn peek<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard.peek(self.shard.hash(key), key, self.now())
    }

    /// Whether `key` is present and not expired (no effect on eviction).
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.peek(key).is_some()
    }

    /// The value of `key`, first inserting `init()`'s if the key is absent or expired: the
    /// single-threaded counterpart of [`sync::Cache::get_with`](crate::sync::Cache::get_with),
    /// for the match-then-insert that the borrow checker rejects when written by hand.
    ///
    /// A hit counts as [`get`](Self::get) does; a miss counts as a miss and a load, then inserts
    /// as [`insert`](Self::insert) does. `None` when the eviction that follows the insert takes
    /// the new entry itself, which the listener hears of with [`RemovalCause::Size`]: always for
    /// an entry heavier than the whole capacity or a cache of capacity 0 (with a weigher, an
    /// entry of weight 0 fits even there and is kept), and at times under W-TinyLFU with a
    /// weigher, whose admission may judge a new entry at once: one heavier than the window
    /// leaves it straight away, and a lighter one duels too when the entries moved out of the
    /// window do not make enough room. Also `None` when the cache gives the new entry a lifetime
    /// of zero, which expires it as it is written (`Expired`). If `init` panics, the panic
    /// reaches the caller, nothing is inserted and a failed load is counted, as
    /// [`sync::Cache::get_with`](crate::sync::Cache::get_with) does.
    ///
    /// ```
    /// let mut cache = cortado::unsync::Cache::new(100);
    /// let mut loads = 0;
    /// for _ in 0..3 {
    ///     let value = cache.get_or_insert_with(7, || {
    ///         loads += 1;
    ///         "seven".to_string()
    ///     });
    ///     assert_eq!(value.map(String::as_str), Some("seven"));
    /// }
    /// assert_eq!(loads, 1);
    /// ```
    pub fn get_or_insert_with(&mut self, key: K, init: impl FnOnce() -> V) -> Option<&V> {
        match self.try_get_or_insert_with(key, || Ok::<V, Infallible>(init())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`get_or_insert_with`](Self::get_or_insert_with) looked up by a borrowed form of the key
    /// (`&str` for a `String` key), which is made into an owned key only on a miss.
    pub fn get_or_insert_with_by_ref<Q>(&mut self, key: &Q, init: impl FnOnce() -> V) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        match self.try_get_or_insert_with_by_ref(key, || Ok::<V, Infallible>(init())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`try_get_or_insert_with`](Self::try_get_or_insert_with) looked up by a borrowed form of
    /// the key, which is made into an owned key only when the loader succeeds.
    pub fn try_get_or_insert_with_by_ref<Q, E>(
        &mut self,
        key: &Q,
        init: impl FnOnce() -> Result<V, E>,
    ) -> Result<Option<&V>, E>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        let now = self.now();
        let hash = self.shard.hash(key);
        if let Some(i) = self.shard.get_slot(hash, key, now) {
            return Ok(self.shard.value_in(i));
        }
        self.load(hash, || key.to_owned(), init)
    }

    /// [`get_or_insert_with`](Self::get_or_insert_with) with a loader that may fail: its error
    /// is returned and nothing is inserted (the miss and a failed load are counted).
    pub fn try_get_or_insert_with<E>(
        &mut self,
        key: K,
        init: impl FnOnce() -> Result<V, E>,
    ) -> Result<Option<&V>, E> {
        let now = self.now();
        let hash = self.shard.hash(&key);
        if let Some(i) = self.shard.get_slot(hash, &key, now) {
            return Ok(self.shard.value_in(i));
        }
        self.load(hash, || key, init)
    }

    /// Runs `init` for the missing key and inserts its value under `key()`, made only on
    /// success; the time is read again after it, since a loader may take long. A loader that
    /// panics counts as a failed load, as in the concurrent cache.
    fn load<E>(
        &mut self,
        hash: u64,
        key: impl FnOnce() -> K,
        init: impl FnOnce() -> Result<V, E>,
    ) -> Result<Option<&V>, E> {
        let started = self.shard.records_stats().then(Instant::now);
        let record = |shard: &mut Shard<K, V, S>, success: bool| {
            if let Some(started) = started {
                shard.record_load(success, duration_nanos(started.elapsed()));
            }
        };
        let shard = &mut self.shard;
        let unfinished = OnDrop(Some(|| record(shard, false)));
        let value = init();
        unfinished.disarm();
        record(&mut self.shard, value.is_ok());
        let value = value?;
        let now = self.now();
        self.shard.advance(now);
        let i = self.shard.insert(hash, key(), value, now, None);
        self.notify();
        Ok(self.shard.value_in(i))
    }

    /// Inserts or replaces the value of `key`, then evicts to fit the capacity.
    pub fn insert(&mut self, key: K, value: V) {
        self.write(key, value, None);
    }

    /// Inserts or replaces the value of `key` with its own lifetime, overriding the cache's
    /// time to live for this entry, or its `expire_after` policy (which is not asked). A time to
    /// idle still applies: the entry expires at the earlier of the two. A later plain `insert`
    /// of the key gives it the cache's lifetime again (under `expire_after`, what its
    /// `expire_after_update` returns: by default the lifetime left). A lifetime of zero expires
    /// the entry as it is written: the listener hears of it as `Expired`, and no entry is
    /// evicted to make room for it.
    pub fn insert_with_ttl(&mut self, key: K, value: V, ttl: Duration) {
        self.uses_time = true;
        self.write(key, value, Some(ttl));
    }

    fn write(&mut self, key: K, value: V, ttl: Option<Duration>) {
        let now = self.now();
        self.shard.advance(now);
        let hash = self.shard.hash(&key);
        self.shard.insert(hash, key, value, now, ttl);
        self.notify();
    }

    /// Removes `key` and returns its value if it was present and not expired.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.now();
        let hash = self.shard.hash(key);
        let removed = self.shard.remove(hash, key, now);
        let mut hearing = Hearing::default();
        self.hear_pending(&mut hearing);
        if let (Some(listener), Some((key, value)), true) =
            (&self.listener, &removed, self.hears_removals)
        {
            hearing.hear(listener, key, value, RemovalCause::Explicit);
        }
        hearing.finish();
        removed.map(|(_, value)| value)
    }

    /// The live entries: those [`iter`](Self::iter) yields, so not the expired ones that
    /// [`run_pending_tasks`](Self::run_pending_tasks) has yet to remove. Without expiry, a
    /// count; with it, linear in the entries held (each one's deadline is checked;
    /// `docs/decisions/0016-len-counts-live-entries.md`).
    pub fn len(&self) -> usize {
        self.shard.live_len(self.now())
    }

    /// The entries held, counting the expired ones not yet removed: a count kept as entries
    /// come and go, so it costs nothing however many entries have a deadline (where
    /// [`len`](Self::len) checks each one). What a server reports as its size, as Redis's
    /// `DBSIZE` does, between expiry passes.
    pub fn len_including_expired(&self) -> usize {
        self.shard.len()
    }

    /// Whether no entry is live (`len() == 0`), found by stopping at the first live entry.
    pub fn is_empty(&self) -> bool {
        !self.shard.has_live(self.now())
    }

    /// Total weight of the entries (their count without a weigher).
    pub fn weighted_size(&self) -> u64 {
        self.shard.weighted_size()
    }

    /// The weight of the entries the cache may not evict for size: those without a deadline
    /// in a cache built to [evict only expiring entries](CacheBuilder::evict_only_expiring);
    /// 0 in any other.
    pub fn unevictable_weight(&self) -> u64 {
        self.shard.unevictable_weight()
    }

    /// The capacity (total weight with a weigher); `u64::MAX` when unbounded.
    pub fn max_capacity(&self) -> u64 {
        self.shard.max_capacity()
    }

    /// The entries live when `iter` is called, in no particular order (the iterator borrows
    /// the cache, so nothing changes while it runs; a clock moved meanwhile is not consulted).
    pub fn iter(&self) -> Iter<'_, K, V, S> {
        Iter(self.shard.iter(self.now()))
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, keep: impl FnMut(&K, &V) -> bool) {
        let now = self.now();
        self.shard.retain(now, keep);
        self.notify();
    }

    /// Removes every entry (those already expired as expired, as the concurrent cache does).
    pub fn invalidate_all(&mut self) {
        let now = self.now();
        self.shard.expire_due(now, usize::MAX);
        self.shard.clear();
        self.notify();
    }

    /// Changes the capacity; shrinking evicts at once (after removing the expired entries, so
    /// that none of them is reported as evicted for size). Counting entries (no weigher), it is
    /// at most `u32::MAX - 1`, the builder's limit.
    pub fn set_max_capacity(&mut self, max_capacity: u64) {
        let now = self.now();
        self.shard.expire_due(now, usize::MAX);
        self.shard.set_max_capacity(max_capacity);
        self.notify();
    }

    /// Removes expired entries now (otherwise done on writes), all of them whatever the
    /// [`expiry_batch`](crate::builder::CacheBuilder::expiry_batch), and, in a cache that
    /// shares a [`Budget`], gives up what it owes the budget (evicting to fit).
    pub fn run_pending_tasks(&mut self) {
        let now = self.now();
        self.shard.expire_due(now, usize::MAX);
        self.shard.settle_budget();
        self.notify();
    }

    /// The counters since the cache was built; all zero unless built with `record_stats`.
    pub fn stats(&self) -> CacheStats {
        self.shard.stats()
    }

    /// Up to `n` keys, the least likely to be evicted first.
    pub fn hottest(&self, n: usize) -> Vec<&K> {
        self.shard.keys_by_eviction_order(n, self.now(), false)
    }

    /// Up to `n` keys, the next to be evicted first.
    pub fn coldest(&self, n: usize) -> Vec<&K> {
        self.shard.keys_by_eviction_order(n, self.now(), true)
    }

    /// The admission window's current size bound (W-TinyLFU only), for introspection.
    pub fn window_capacity(&self) -> Option<u64> {
        self.shard.window_maximum()
    }

    /// Heap bytes used by the cache's own structures (not by what keys and values own).
    pub fn memory_bytes(&self) -> usize {
        self.shard.memory_bytes()
    }

    /// The lifetime left to `key`: `None` if it is absent or expired, `Some(None)` if it has
    /// no deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut cache = cortado::unsync::Cache::new(10);
    /// cache.insert_with_ttl("session", 1, Duration::from_secs(60));
    /// cache.insert("config", 2);
    /// assert!(cache.expires_after("session").flatten().is_some());
    /// assert_eq!(cache.expires_after("config"), Some(None));
    /// assert_eq!(cache.expires_after("absent"), None);
    /// ```
    pub fn expires_after<Q>(&self, key: &Q) -> Option<Option<Duration>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard
            .expires_after(self.shard.hash(key), key, self.now())
    }

    /// How long the live `key` has gone without a read or write, in whole seconds, if the
    /// cache [records access times](CacheBuilder::record_access_times); `None` if it does
    /// not, or if the key is absent or expired.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cortado::time::ManualClock;
    /// let clock = ManualClock::new();
    /// let mut cache = cortado::unsync::Cache::builder()
    ///     .max_capacity(10)
    ///     .clock(clock.clone())
    ///     .record_access_times()
    ///     .build()
    ///     .unwrap();
    /// cache.insert("a", 1);
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(cache.idle_time("a"), Some(Duration::from_secs(30)));
    /// cache.get("a");
    /// assert_eq!(cache.idle_time("a"), Some(Duration::ZERO));
    /// ```
    pub fn idle_time<Q>(&self, key: &Q) -> Option<Duration>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard.idle_time(self.shard.hash(key), key, self.now())
    }

    /// Gives the live `key` a new lifetime from now (`Some`), as
    /// [`insert_with_ttl`](Self::insert_with_ttl) would but keeping its value and its standing
    /// with the eviction policy, or takes its deadline away (`None`: it stays until evicted or
    /// removed, or until its next write gives it the cache's lifetime again; with a time to
    /// idle, its next read starts one). Returns false, changing nothing, if the key is absent
    /// or expired. A lifetime of zero expires the entry at once (`RemovalCause::Expired`).
    pub fn set_expires_after<Q>(&mut self, key: &Q, ttl: Option<Duration>) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if ttl.is_some() {
            self.uses_time = true;
        }
        let now = self.now();
        let hash = self.shard.hash(key);
        let found = self.shard.set_expires_after(hash, key, now, ttl);
        self.notify();
        found
    }

    /// Removes up to `max` expired entries (the listener hears of them as expired) and returns
    /// true when none is left, so that a caller holding the cache in its own lock can remove a
    /// burst of expirations a batch at a time, releasing the lock in between.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cortado::time::ManualClock;
    /// let clock = ManualClock::new();
    /// let mut cache = cortado::unsync::Cache::builder().clock(clock.clone()).build().unwrap();
    /// for i in 0..10 {
    ///     cache.insert_with_ttl(i, i, Duration::from_secs(1));
    /// }
    /// clock.advance(Duration::from_secs(1));
    /// let mut batches = 1;
    /// while !cache.remove_expired(4) {
    ///     batches += 1;
    /// }
    /// assert_eq!((batches, cache.len()), (3, 0));
    /// ```
    pub fn remove_expired(&mut self, max: usize) -> bool {
        let now = self.now();
        let done = self.shard.expire_due(now, max);
        self.notify();
        done
    }

    /// Gives back the memory that removed entries left behind: room for entries after the
    /// last one held, and the index's spare room. Entries keep their place, so a
    /// [`scan`](Self::scan) in progress is not disturbed; a cache with a capacity keeps its
    /// policy's per-entry arrays, which it fills again as it refills.
    ///
    /// ```
    /// let mut cache = cortado::unsync::Cache::builder().build().unwrap();
    /// cache.insert(0, 0);
    /// for i in 1..10_000 {
    ///     cache.insert(i, i);
    /// }
    /// let full = cache.memory_bytes();
    /// for i in 1..10_000 {
    ///     cache.remove(&i);
    /// }
    /// cache.shrink_to_fit();
    /// assert!(cache.memory_bytes() < full / 100);
    /// assert_eq!(cache.get(&0), Some(&0));
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.shard.shrink_to_fit();
    }

    /// Entries that have a deadline, counting expired ones not yet removed.
    pub fn len_with_deadline(&self) -> usize {
        self.shard.timed_len()
    }

    /// Up to `count` lifetimes left of entries that have a deadline, drawn at random (an entry
    /// may come twice), looking at no more than 16 x `count` entries, so that fewer come back
    /// when few entries have one: an estimate of their spread without visiting every entry,
    /// such as Redis's `avg_ttl`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut cache = cortado::unsync::Cache::new(100);
    /// cache.insert_with_ttl("a", 1, Duration::from_secs(60));
    /// let sample = cache.sample_times_to_live(8);
    /// assert!(!sample.is_empty());
    /// assert!(sample.iter().all(|left| *left <= Duration::from_secs(60)));
    /// ```
    pub fn sample_times_to_live(&self, count: usize) -> Vec<Duration> {
        self.shard
            .sample_lifetimes(crate::random::random_seed(), count, self.now())
            .into_iter()
            .map(Duration::from_nanos)
            .collect()
    }

    /// Visits the live entries stored at positions `cursor..` (0 to start), looking at no more
    /// than `count` positions, and returns the cursor to continue from, or `None` once the end
    /// is reached.
    ///
    /// Entries keep their position for as long as they stay in the cache, so a scan continued
    /// until `None` visits every entry that was in the cache for the whole scan exactly once,
    /// whatever is inserted or removed between the calls; entries inserted meanwhile may or may
    /// not be visited.
    ///
    /// ```
    /// let mut cache = cortado::unsync::Cache::new(100);
    /// for i in 0..50 {
    ///     cache.insert(i, i);
    /// }
    /// let (mut cursor, mut seen) = (Some(0), Vec::new());
    /// while let Some(at) = cursor {
    ///     cursor = cache.scan(at, 8, |k, _| seen.push(*k));
    ///     cache.remove(&(seen.len() as i32 + 100)); // writes between calls are fine
    /// }
    /// seen.sort();
    /// assert_eq!(seen, (0..50).collect::<Vec<_>>());
    /// ```
    pub fn scan(&self, cursor: usize, count: usize, visit: impl FnMut(&K, &V)) -> Option<usize> {
        self.shard.scan(cursor, count, self.now(), visit)
    }

    /// How often the eviction policy counts `key` as used, for policies that count uses: the
    /// logarithmic counter of [`redis_lfu`](crate::policy::EvictionPolicy::redis_lfu) (decayed
    /// to now), the count of [`lfu`](crate::policy::EvictionPolicy::lfu), or W-TinyLFU's
    /// frequency sketch estimate (0 to 15, aged). `None` if `key` is absent or expired, or if
    /// the policy counts no uses (LRU, random, an unbounded cache).
    pub fn frequency<Q>(&self, key: &Q) -> Option<u64>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.shard.hash(key);
        self.shard.frequency(hash, key, self.now())
    }

    /// The adaptive W-TinyLFU policy's current mode, as an opaque code for
    /// [`adopt_policy_mode`](Self::adopt_policy_mode) of caches built to
    /// [follow](CacheBuilder::follow_policy_mode); `None` under other policies.
    pub fn policy_mode(&mut self) -> Option<u8> {
        self.shard.policy_mode()
    }

    /// Switches the adaptive policy to `mode`, a code another cache's
    /// [`policy_mode`](Self::policy_mode) gave (a code already adopted is ignored).
    pub fn adopt_policy_mode(&mut self, mode: u8) {
        self.shard.adopt_policy_mode(mode);
    }

    /// Moves every live entry out of the cache, in the order its policy would evict them (the
    /// coldest first; insertion order in a cache that keeps no order), each with the lifetime it
    /// has left. Drained entries are not removals: the listener and the statistics do not see
    /// them; expired entries met on the way are removed as expired.
    ///
    /// Refilling another cache in this order carries the entries' recency over, which is how a
    /// cache changes its eviction policy or capacity settings without losing what it holds.
    /// Dropping the iterator before its end drains the rest silently.
    ///
    /// ```
    /// use cortado::policy::EvictionPolicy;
    /// use cortado::unsync::Cache;
    ///
    /// let mut lru = Cache::builder()
    ///     .max_capacity(3)
    ///     .eviction_policy(EvictionPolicy::lru())
    ///     .build()
    ///     .unwrap();
    /// for i in 0..3 {
    ///     lru.insert(i, i);
    /// }
    /// lru.get(&0);
    /// let mut tiny_lfu = Cache::new(3);
    /// for (key, value, ttl) in lru.drain() {
    ///     match ttl {
    ///         Some(ttl) => tiny_lfu.insert_with_ttl(key, value, ttl),
    ///         None => tiny_lfu.insert(key, value),
    ///     }
    /// }
    /// assert!(lru.is_empty());
    /// assert_eq!(tiny_lfu.len(), 3);
    /// ```
    pub fn drain(&mut self) -> Drain<'_, K, V, S> {
        let order = self.shard.slots_by_eviction_order();
        Drain {
            now: self.now(),
            cache: self,
            order: order.into_iter(),
        }
    }

    /// A live entry picked at random (each about equally likely), or `None` if there is none.
    pub fn random_entry(&self) -> Option<(&K, &V)> {
        self.shard
            .random_entry(crate::random::random_seed(), self.now())
    }

    /// Panics if an internal invariant is broken. For tests and fuzzing.
    #[doc(hidden)]
    pub fn validate(&self) {
        self.shard.validate();
    }
}

/// The entries of a [`Cache`], moved out coldest first: see [`Cache::drain`].
pub struct Drain<'a, K: Hash + Eq, V, S: BuildHasher = DefaultHashBuilder> {
    cache: &'a mut Cache<K, V, S>,
    order: std::vec::IntoIter<u32>,
    now: u64,
}

impl<K: Hash + Eq, V, S: BuildHasher> Iterator for Drain<'_, K, V, S> {
    /// A key, its value and the lifetime it has left (`None`: it never expires).
    type Item = (K, V, Option<Duration>);

    fn next(&mut self) -> Option<Self::Item> {
        for i in self.order.by_ref() {
            if let Some((key, value, deadline)) = self.cache.shard.take_slot(i, self.now) {
                let left = deadline.map(|d| Duration::from_nanos(d.saturating_sub(self.now)));
                return Some((key, value, left));
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.order.len()))
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> Drop for Drain<'_, K, V, S> {
    fn drop(&mut self) {
        for _ in self.by_ref() {}
        self.cache.notify();
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> std::fmt::Debug for Drain<'_, K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drain")
            .field("left", &self.order.len())
            .finish_non_exhaustive()
    }
}

/// A value in a [`Cache`], borrowed to change in place: see [`Cache::get_mut`]. Derefs to the
/// value; dropping it tells the policy of the use and, with a weigher, weighs the entry again.
pub struct RefMut<'a, K: Hash + Eq, V, S: BuildHasher = DefaultHashBuilder> {
    cache: &'a mut Cache<K, V, S>,
    /// The entry's slot, live while the guard is.
    slot: u32,
    /// Its key's hash, for the policy's deferral of the use.
    hash: u64,
}

impl<K: Hash + Eq, V, S: BuildHasher> Deref for RefMut<'_, K, V, S> {
    type Target = V;

    fn deref(&self) -> &V {
        self.cache
            .shard
            .value_in(self.slot)
            .expect("a guard's slot is live")
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> DerefMut for RefMut<'_, K, V, S> {
    fn deref_mut(&mut self) -> &mut V {
        self.cache.shard.value_mut(self.slot)
    }
}

impl<K: Hash + Eq, V: std::fmt::Debug, S: BuildHasher> std::fmt::Debug for RefMut<'_, K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RefMut").field(&**self).finish()
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> Drop for RefMut<'_, K, V, S> {
    fn drop(&mut self) {
        let Self { cache, slot, hash } = self;
        let weighed = if cache.shard.counts_entries() {
            Ok(None)
        } else if std::thread::panicking() {
            // The value may be half changed, and a panicking weigher would abort: the entry
            // goes unweighed, heard of at the next operation that reports removals.
            cache.shard.remove_index(*slot, RemovalCause::Explicit);
            return;
        } else {
            catch_unwind(AssertUnwindSafe(|| cache.shard.weigh(*slot)))
        };
        match weighed {
            Ok(None) => cache.shard.record_use(*slot, *hash),
            Ok(Some(weight)) => {
                let now = cache.now();
                cache.shard.record_mutation(*slot, *hash, weight, now);
                cache.notify();
            }
            Err(panic) => {
                // Nothing changed yet, but the entry's weight is unknown: it goes, and the
                // weigher's panic, the first, is the one passed on.
                cache.shard.remove_index(*slot, RemovalCause::Explicit);
                cache.hear_pending(&mut Hearing::default());
                resume_unwind(panic);
            }
        }
    }
}

/// An iterator over the live entries of a [`Cache`], in no particular order: see
/// [`Cache::iter`].
#[must_use = "iterators are lazy and do nothing unless consumed"]
pub struct Iter<'a, K, V, S = DefaultHashBuilder>(shard::Iter<'a, K, V, S>);

impl<'a, K: Hash + Eq, V, S: BuildHasher> Iterator for Iter<'a, K, V, S> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> std::iter::FusedIterator for Iter<'_, K, V, S> {}

impl<K, V, S> Clone for Iter<'_, K, V, S> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K, V, S> std::fmt::Debug for Iter<'_, K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

impl<'a, K: Hash + Eq, V, S: BuildHasher> IntoIterator for &'a Cache<K, V, S> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V, S>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
#[path = "unsync/lifetimes_tests.rs"]
mod lifetimes_tests;
