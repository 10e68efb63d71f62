//! Building a concurrent cache: the shard count, each shard's share of the capacity, the
//! builder's settings that only the concurrent caches have, and [`Inner::build`].

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::Mutex;
use std::time::Duration;

use super::{
    Cache, Inner, Padded, Slot, MAX_SHARDS, MIN_SHARD_CAPACITY, NEGATIVES_UNBOUNDED, NO_MODE,
    SHARDS_PER_CPU, WEIGHTED_SHARDS_PER_CPU,
};
use crate::budget::Budget;
use crate::builder::{BuildError, CacheBuilder, Concurrent, Synchronized};
use crate::loader::Loading;
use crate::policy::EvictionPolicy;
use crate::read_buffer::ReadBuffer;
use crate::scheduler::{PacerHandle, Scheduler};
use crate::shard::{Shard, ShardConfig};
use crate::shard_lock::{reader_slots, ShardLock};

/// The default number of shards for a capacity, counted in entries or (`weighted`) in weight.
pub(super) fn default_shards(max_capacity: Option<u64>, weighted: bool) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let per_cpu = if weighted {
        WEIGHTED_SHARDS_PER_CPU
    } else {
        SHARDS_PER_CPU
    };
    let wanted = (cpus * per_cpu).next_power_of_two().min(MAX_SHARDS);
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

/// Shard `i`'s share of `capacity` over `shards`: the shares add up to `capacity`.
pub(super) fn share(capacity: u64, shards: usize, i: usize) -> u64 {
    let n = shards as u64;
    capacity / n + u64::from((i as u64) < capacity % n)
}

/// How many absent keys (`negative_ttl`) a shard of this capacity remembers: an eighth of it, at
/// least 16. It counts keys: with a weigher the capacity is a weight (bytes, say), whose eighth in
/// keys would hold far more memory than the bound allows (a 1 MiB shard kept 131,072 absent keys,
/// 8 MB), so a weighted shard keeps at most as many as an unbounded one.
pub(super) fn negatives_capacity(share: Option<u64>, weighted: bool) -> u64 {
    share.map_or(NEGATIVES_UNBOUNDED, |m| {
        let eighth = (m / 8).max(16);
        if weighted {
            eighth.min(NEGATIVES_UNBOUNDED)
        } else {
            eighth
        }
    })
}

impl<K, V, S, F: Concurrent> CacheBuilder<K, V, S, F> {
    /// The number of shards (a power of two, at most the capacity); by default chosen from the
    /// CPU count and the capacity (see [`sync`](crate::sync#capacity)).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Caches the absence of a key for `ttl` when an `optionally_get_with` loader finds
    /// nothing, so repeated lookups of missing keys do not reach the backing store (cache
    /// penetration). An insert of the key ends it early, and a write to the key while the load
    /// is in flight (as for a loaded value, see [`Cache::get_with`]) keeps it from being cached.
    /// Each shard remembers the most recent absent keys, up to an eighth of its capacity (at
    /// least 16); with a weigher, whose capacity is no count of keys, up to 1,024. They are not
    /// part of the weighted size.
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = Some(ttl);
        self
    }

    /// Who runs maintenance besides the cache's users: with [`Scheduler::Thread`] a background
    /// thread removes expired entries (and calls the listener) when they are due (within
    /// 10 ms: its rounds are at least that far apart; with a clock that does not follow the
    /// wall clock, such as a [`ManualClock`](crate::time::ManualClock) moved by hand, within
    /// 1 s of the move), even when nobody touches the cache; with `Scheduler::Tokio` (feature
    /// `tokio`) a task on the current tokio runtime does.
    /// Either ends when the last handle of the cache is dropped. A round in progress at that
    /// moment finishes first: its listener calls may come after the handle's `drop` has
    /// returned, and the cache's entries are then dropped on the pacer's thread or task.
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = scheduler;
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
        let config = builder.shard_config()?;
        let shards = match builder.shards {
            Some(n) if n == 0 || n > MAX_SHARDS || !n.is_power_of_two() => {
                return Err(BuildError::InvalidShardCount { requested: n })
            }
            Some(n) => {
                if let Some(capacity) = config.max_capacity.filter(|&c| c > 0 && c < n as u64) {
                    return Err(BuildError::CapacityBelowShards {
                        capacity,
                        shards: n,
                    });
                }
                n
            }
            None => default_shards(builder.max_capacity, builder.weigher.is_some()),
        };
        let pacer = PacerHandle::for_scheduler(builder.scheduler)?;
        // With a weigher the shards share the capacity (see `crate::budget`); each joins with
        // its share, in order, so that shard `i` is the budget's member `i`. One shard has
        // nobody to share with: it is then exactly the single-threaded cache's core.
        let budget = config
            .weigher
            .as_ref()
            .and(config.max_capacity)
            .filter(|_| shards > 1)
            .map(Budget::new);
        let per_shard = |i: usize| -> ShardConfig<K, V> {
            let mut config = config.clone();
            // A custom expiry's read can bring an expiration forward under the read lock.
            config.alarm = pacer.as_ref().map(PacerHandle::alarm);
            config.max_capacity = config.max_capacity.map(|max| share(max, shards, i));
            config.initial_capacity = config.initial_capacity.div_ceil(shards);
            // Shard 0 sees a hash-sampled share of the traffic: its adaptive policy chooses the
            // mode and the others adopt it (see `maintain`).
            config.follower = i > 0;
            config.budget = budget.clone();
            config
        };
        let negatives = |i: usize| {
            builder.negative_ttl.map(|_| {
                let max = negatives_capacity(per_shard(i).max_capacity, builder.weigher.is_some());
                let config = ShardConfig::<K, ()>::plain(Some(max), EvictionPolicy::lru());
                Mutex::new(Shard::new(&config, builder.hasher.clone()))
            })
        };
        let slots = (0..shards)
            .map(|i| Slot {
                core: ShardLock::new(
                    {
                        let shard = Shard::new(&per_shard(i), builder.hasher.clone());
                        debug_assert!(shard.budget_member().is_none_or(|id| id == i));
                        shard
                    },
                    reader_slots(),
                ),
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
            uses_time: AtomicBool::new(
                config.rules.is_active()
                    || builder.negative_ttl.is_some()
                    || builder.refresh.is_some(),
            ),
            hasher: builder.hasher,
            clock: builder.clock,
            listener: builder.listener,
            record_stats: config.record_stats,
            negative_ttl: builder.negative_ttl,
            load_successes: AtomicU64::new(0),
            load_failures: AtomicU64::new(0),
            load_nanos: AtomicU64::new(0),
            loaders: Padded(AtomicUsize::new(0)),
            policy_mode: AtomicU8::new(NO_MODE),
            capacity_target: AtomicU64::new(config.max_capacity.unwrap_or(u64::MAX)),
            works_after_writes: pacer.is_some() || budget.is_some(),
            pacer,
            budget,
            refresh: builder
                .refresh
                .zip(config.refresh)
                .map(|(settings, trigger)| Box::new(super::refresh::Refresh { settings, trigger })),
        })
    }
}
