//! `maxmemory`: the keyspace's caches bounded, together, by the memory the server may use, and
//! evicting by the policy `maxmemory-policy` names.
//!
//! Under `noeviction` (or with no `maxmemory`) every cache is unbounded, as before, and the
//! command table refuses writes flagged `denyoom` while the server uses more than `maxmemory`
//! ([`Keyspace::refuses_writes`]). Under any other policy every cache (each shard's, each
//! database's) weighs its entries in bytes and shares one [`Budget`], whose capacity is what
//! `maxmemory` leaves for keys once everything else the server holds is counted: a write that
//! takes a cache past its share evicts, by the cache's own policy, before the write returns.
//!
//! # Design
//!
//! - **What is counted.** `used_memory` is what the allocator handed out (usable sizes,
//!   [`crate::sys`]). An entry weighs what it costs: its key's and value's heap blocks (rounded
//!   as the allocator rounds them), the cache's slot, index and policy node for it
//!   ([`ENTRY_WEIGHT`]). Everything else (client buffers, tables' spare room, the policies'
//!   sketches) is the *overhead*: `used_memory` minus the weights held. Every cron tick
//!   (10 ms) [`Keyspace::fit_memory`] sets the budget's capacity to `maxmemory` minus the
//!   overhead, and the caches that now owe evict to fit at once: so a write that left the
//!   server above the limit is paid for within a tick even if no other write comes, and the
//!   keys' share shrinks as client buffers grow. Weights that miss a byte here and there only
//!   move bytes into the overhead, which the next tick counts: the limit holds either way.
//! - **Bounded passes.** A write evicts what it needs, within the write: its own weight's
//!   worth, whatever its size. What is owed beyond that (a smaller `maxmemory`, client buffers
//!   that grew, a large value that borrowed from other shards' share) the cron evicts shard by
//!   shard, each pass for at most the time `maxmemory-eviction-tenacity` allows (Redis's
//!   scale: 500 µs at the default 10) and at least one shard, the next pass going on where it
//!   stopped: one lock hold evicts one shard's debt, never the whole keyspace's.
//! - **One policy code.** The policies are the library's: Redis's sampled LRU and LFU (pool of
//!   16, `maxmemory-samples` draws, the 8-bit logarithmic counter with `lfu-log-factor`) and
//!   random, and W-TinyLFU (`allkeys-wtinylfu`), the same code the library and the simulator
//!   run. A policy's clock counts requests, not seconds (see the library's `sampled` module):
//!   `lfu-decay-time` 0 still means counters never decay; any other value leaves the decay
//!   period to the library's automatic one, which follows the cache's turnover.
//! - **One keyspace's minimums.** The caches [split](cortado::builder::CacheBuilder::split_minimums)
//!   W-TinyLFU's fixed minimums (the sketch's smallest table and aging floor) among the shards:
//!   each of 32 shards keeping a whole cache's 32 KiB sketch spent 1 MB before the first key,
//!   more than a limit of a few MB leaves for keys. Caches that split them also size the sketch
//!   and ghost to their entries rather than to a power of two, and grow their slabs by an
//!   eighth: each step is then sized by a share that counted the steps before it (see
//!   `docs/decisions/0223-server-wtinylfu-memory.md`).
//! - **Switching.** `CONFIG SET maxmemory` or `maxmemory-policy` rebuilds every cache under
//!   the new bounds ([`Keyspace::set_eviction`]), moving the entries across coldest first
//!   ([`cortado::unsync::Cache::drain`]) so that what was recent stays recent: no key is lost
//!   but those the new bounds evict. It holds every shard for the move, O(keys) once.
//! - **volatile-\*.** As in Redis, only keys with a lifetime may be evicted: the caches are
//!   built to [evict only expiring entries](cortado::builder::CacheBuilder::evict_only_expiring),
//!   so the policy sees only those, while the others' weight still counts. When keys without a
//!   lifetime fill the room on their own, the cron marks the keyspace overfull and writes get
//!   `-OOM`, as Redis refuses them when it finds nothing to evict. `volatile-ttl` is the
//!   library's sampled policy ranked by deadline (the pool of 16, the nearest deadline first).

use std::sync::atomic::Ordering;

use cortado::budget::Budget;
use cortado::policy::EvictionPolicy;

use super::{Cache, CompactBytes, Keyspace, Value, ENTRY_BYTES, EXPIRY_BATCH};
use crate::config::Settings;

/// What one entry costs beside its key's and value's heap blocks: the cache's slot, index and
/// control byte (64 bytes), and the policy's node for it (at most 16 bytes: W-TinyLFU's
/// links and segment, the sampled policies' dense position and stamp).
pub const ENTRY_WEIGHT: usize = ENTRY_BYTES + 16;

/// How the keyspace's caches are bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// The policy that evicts, or `None` for `noeviction`.
    pub policy: Option<EvictionPolicy>,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: u64,
    /// Whether the policy is one of the `volatile-*` ones.
    pub volatile: bool,
    /// `maxmemory-eviction-tenacity`: how long one pass of evictions may run
    /// ([`time_limit`](Self::time_limit)).
    pub tenacity: u32,
}

impl Eviction {
    /// The bounds `maxmemory` and `maxmemory-policy` (and its parameters) ask for.
    pub fn from_settings(settings: &Settings) -> Self {
        let name = settings.maxmemory_policy.as_str();
        let samples = settings.maxmemory_samples;
        let policy = match name.split_once('-').map_or(name, |(_, kind)| kind) {
            "lru" => Some(EvictionPolicy::redis_lru().samples(samples)),
            "ttl" => Some(EvictionPolicy::redis_ttl().samples(samples)),
            "lfu" => {
                let lfu = EvictionPolicy::redis_lfu()
                    .samples(samples)
                    .lfu_log_factor(settings.lfu_log_factor);
                // `lfu-decay-time 0`: counters never decay; any other period is the library's.
                Some(if settings.lfu_decay_time == 0 {
                    lfu.lfu_decay_period(0)
                } else {
                    lfu
                })
            }
            "random" => Some(EvictionPolicy::random()),
            "wtinylfu" => Some(EvictionPolicy::tiny_lfu()),
            _ => None,
        };
        let policy = policy.filter(|_| settings.maxmemory > 0);
        Self {
            policy,
            maxmemory: settings.maxmemory,
            volatile: name.starts_with("volatile-"),
            tenacity: settings.maxmemory_eviction_tenacity,
        }
    }

    /// How long one pass of evictions outside a write may run, as Redis bounds its eviction
    /// loop: 50 µs per step of tenacity up to 10 (500 µs, the default), then 15% more per
    /// step (about 2 minutes at 99), and no limit at 100.
    pub fn time_limit(&self) -> Option<std::time::Duration> {
        let micros = match self.tenacity {
            0..=10 => 50.0 * f64::from(self.tenacity),
            100.. => return None,
            t => 500.0 * 1.15f64.powi(t as i32 - 10),
        };
        Some(std::time::Duration::from_micros(micros as u64))
    }

    /// No limit: every cache unbounded.
    pub fn none() -> Self {
        Self {
            policy: None,
            maxmemory: 0,
            volatile: false,
            tenacity: 10,
        }
    }
}

/// What an entry weighs: see the [module docs](self).
pub fn weigh(key: &CompactBytes, value: &Value) -> u32 {
    let bytes = ENTRY_WEIGHT + block_bytes(key.heap_bytes()) + block_bytes(value.heap_bytes());
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// The usable size the C library gives a request of `n` bytes (glibc's: 8 bytes of header,
/// 16-byte steps, 24 at least); 0 for no block.
pub fn block_bytes(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ((n + 8 + 15) & !15).max(32) - 8
    }
}

/// A new cache for one database of one shard, bounded as `bound` says; under W-TinyLFU, the
/// cache `leads` the choice of mode or follows the leader's.
pub(super) fn build_cache(
    clock: &cortado::time::ManualClock,
    bound: Option<&Bound>,
    leads: bool,
    listener: impl Fn(&CompactBytes, &Value, cortado::notification::RemovalCause)
        + Send
        + Sync
        + 'static,
) -> Cache {
    let builder = Cache::builder()
        .clock(clock.clone())
        .record_stats()
        .record_access_times()
        .expiry_batch(EXPIRY_BATCH)
        .eviction_listener(listener)
        .listen_only_to_evictions();
    let built = match bound {
        None => builder.build(),
        Some(bound) => {
            let builder = builder
                .weigher(weigh)
                .eviction_policy(bound.policy)
                .budget(bound.budget.clone())
                .split_minimums(bound.shards);
            let builder = if bound.volatile {
                builder.evict_only_expiring()
            } else {
                builder
            };
            if leads {
                builder.build()
            } else {
                builder.follow_policy_mode().build()
            }
        }
    };
    built.expect("the keyspace's cache settings are valid")
}

/// The bounds a shard builds its caches with, under an evicting policy.
#[derive(Clone)]
pub(super) struct Bound {
    pub policy: EvictionPolicy,
    pub budget: Budget,
    /// Only keys with a lifetime may be evicted (`volatile-*`).
    pub volatile: bool,
    /// The number of shards, which split the policies' fixed minimums.
    pub shards: usize,
}

impl Keyspace {
    /// The bounds in force.
    pub fn eviction(&self) -> Eviction {
        self.eviction
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone()
    }

    /// Bounds the caches as `eviction` says, rebuilding them if that changes how they evict
    /// (see the [module docs](self)); a change of `maxmemory` alone only moves the budget.
    pub fn set_eviction(&self, eviction: Eviction, used_memory: u64) {
        let mut current = self.eviction.lock().unwrap_or_else(|p| p.into_inner());
        self.maxmemory.store(eviction.maxmemory, Ordering::Relaxed);
        self.evicts
            .store(eviction.policy.is_some(), Ordering::Relaxed);
        if current.0 == eviction {
            return;
        }
        let same_caches =
            current.0.policy == eviction.policy && current.0.volatile == eviction.volatile;
        current.0 = eviction.clone();
        if same_caches {
            drop(current);
            return self.fit_memory(used_memory);
        }
        // The room the keys had at the last tick, if it was under the new limit: caches refilled
        // within the whole limit size their slabs for keys the next tick evicts.
        let room = self
            .keys_room
            .load(Ordering::Relaxed)
            .min(eviction.maxmemory);
        let bound = eviction.policy.map(|policy| Bound {
            policy,
            budget: Budget::new(room),
            volatile: eviction.volatile,
            shards: self.shards.len(),
        });
        current.1 = bound.as_ref().map(|b| b.budget.clone());
        let mut locked = self.lock_all();
        let mut shards = locked.shards();
        // Every new cache joins the budget before any is filled, so that each fills within an
        // equal share: one filled while it held the whole budget would size its slab for it.
        let fresh: Vec<Vec<Option<Box<Cache>>>> = shards
            .iter()
            .map(|(_, shard)| {
                let build = |(db, old): (usize, &Option<Box<Cache>>)| {
                    old.as_ref().map(|_| {
                        let listener =
                            crate::notify::removal_listener(db, shard.notifications.clone());
                        Box::new(build_cache(
                            &shard.clock,
                            bound.as_ref(),
                            shard.leads,
                            listener,
                        ))
                    })
                };
                shard.dbs.iter().enumerate().map(build).collect()
            })
            .collect();
        for ((_, shard), fresh) in shards.iter_mut().zip(fresh) {
            shard.bound = bound.clone();
            for (slot, new) in shard.dbs.iter_mut().zip(fresh) {
                let (Some(old), Some(mut new)) = (slot.as_mut(), new) else {
                    continue;
                };
                for (key, value, ttl) in old.drain() {
                    match ttl {
                        Some(ttl) => new.insert_with_ttl(key, value, ttl),
                        None => new.insert(key, value),
                    }
                }
                let old = slot.replace(new).expect("a cache was there");
                shard.retired = shard.retired.merge(&old.stats());
            }
        }
        drop(locked);
        drop(current);
        self.fit_memory(used_memory);
    }

    /// Sets the budget's capacity to what `maxmemory` leaves once the server's other memory
    /// is counted, and has the caches that owe evict now (see the [module docs](self)).
    pub fn fit_memory(&self, used_memory: u64) {
        let (eviction, budget) = {
            let current = self.eviction.lock().unwrap_or_else(|p| p.into_inner());
            (current.0.clone(), current.1.clone())
        };
        let Some(budget) = budget else {
            return;
        };
        let held = self.share_policy_mode();
        let overhead = used_memory.saturating_sub(held);
        let capacity = eviction.maxmemory.saturating_sub(overhead);
        self.keys_room.store(capacity, Ordering::Relaxed);
        if budget.capacity() != capacity {
            budget.set_capacity(capacity);
        }
        if budget.owed() > 0 {
            self.evict_owed(eviction.time_limit());
        }
        // Under `volatile-*`, keys without a lifetime are never evicted and can hold more
        // than the keys' room on their own. (Keys that may go but have not yet, the cron's
        // passes being bounded, do not make the keyspace overfull.)
        let overfull = eviction.volatile
            && self.sum(|shard| shard.databases().map(|(_, c)| c.unevictable_weight()).sum())
                > capacity;
        self.overfull.store(overfull, Ordering::Relaxed);
    }

    /// Has the caches that owe the budget evict, shard after shard from where the last pass
    /// stopped, until `limit` has passed (at least one shard a pass): what a write or a
    /// smaller limit left over the keys' room goes within a pass, or over the next ticks, as
    /// Redis's `maxmemory-eviction-tenacity` spreads its evictions over its event loop.
    fn evict_owed(&self, limit: Option<std::time::Duration>) {
        let started = std::time::Instant::now();
        let now = self.time.now_nanos();
        let shards = self.shards.len();
        let first = self.evict_from.load(Ordering::Relaxed) % shards;
        for step in 0..shards {
            let i = (first + step) % shards;
            let mut shard = self.lock_shard(i, now);
            for slot in shard.dbs.iter_mut().flatten() {
                slot.run_pending_tasks();
            }
            drop(shard);
            if limit.is_some_and(|limit| started.elapsed() >= limit) {
                self.evict_from.store(i + 1, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Has every shard's caches adopt the W-TinyLFU mode shard 0's chose (database by
    /// database: the shards split each database's keys, so its workload), and returns the
    /// weight the caches hold. Shard 0's caches alone run the miniatures that choose the mode,
    /// as the library's sharded cache does: one set of miniatures for the keyspace, not one
    /// per shard, which at 32 shards would cost as much memory as the keys of a small limit.
    fn share_policy_mode(&self) -> u64 {
        let now = self.time.now_nanos();
        let mut held = 0;
        let mut modes = Vec::new();
        for i in 0..self.shards.len() {
            let mut shard = self.lock_shard(i, now);
            if i == 0 {
                modes = shard
                    .dbs
                    .iter_mut()
                    .map(|c| c.as_deref_mut().and_then(Cache::policy_mode))
                    .collect();
            }
            for (db, slot) in shard.dbs.iter_mut().enumerate() {
                let Some(cache) = slot else {
                    continue;
                };
                if let Some(Some(mode)) = modes.get(db) {
                    cache.adopt_policy_mode(*mode);
                }
                held += cache.weighted_size();
            }
        }
        held
    }

    /// Whether a write that may grow memory is refused (`-OOM`): the server uses more than
    /// `maxmemory` and cannot evict its way under it (`noeviction`, or nothing left that the
    /// policy may evict).
    pub fn refuses_writes(&self, used_memory: u64) -> bool {
        let limit = self.maxmemory.load(Ordering::Relaxed);
        limit != 0
            && used_memory > limit
            && (!self.evicts.load(Ordering::Relaxed)
                || self.keys_room.load(Ordering::Relaxed) == 0
                || self.overfull.load(Ordering::Relaxed))
    }

    /// Keys evicted for memory since the start.
    pub fn evicted_keys(&self) -> u64 {
        self.cache_stat(|stats| stats.evictions_size)
    }
}

#[cfg(test)]
mod tests {
    use cortado::policy::EvictionPolicy;
    use cortado::time::ManualClock;

    use super::Eviction;
    use crate::keyspace::{CompactBytes, Expire, Keyspace, TimeSource, Value};

    const SHARDS: usize = 4;

    fn lens(keyspace: &Keyspace) -> Vec<usize> {
        (0..SHARDS)
            .map(|i| keyspace.lock_shard(i, 0).len(0))
            .collect()
    }

    #[test]
    fn evict_owed_tenacity_zero_one_shard_a_pass_hundred_every_shard() {
        for (tenacity, shards_evicting) in [(0, 1), (100, SHARDS)] {
            let keyspace = Keyspace::with_shards(1, TimeSource::Manual(ManualClock::new()), SHARDS);
            let mut eviction = Eviction {
                policy: Some(EvictionPolicy::redis_lru()),
                maxmemory: 1 << 30,
                volatile: false,
                tenacity,
            };
            keyspace.set_eviction(eviction.clone(), 0);
            for i in 0..4_000 {
                let key = format!("key:{i}");
                let value = Value::Str(CompactBytes::new(&[b'v'; 100]));
                let mut locked = keyspace.lock(key.as_bytes());
                locked
                    .shard(key.as_bytes())
                    .set(0, key.as_bytes(), value, Expire::Never);
            }
            let before = lens(&keyspace);
            eviction.maxmemory = 100_000;
            keyspace.set_eviction(eviction.clone(), 0);
            let after = lens(&keyspace);
            let evicting = before.iter().zip(&after).filter(|(b, a)| a < b).count();
            assert_eq!(
                evicting, shards_evicting,
                "tenacity {tenacity}: {before:?} -> {after:?}"
            );
            // The passes that follow go on where the last stopped, until every shard fits.
            for _ in 0..SHARDS {
                keyspace.fit_memory(0);
            }
            let fitted = lens(&keyspace);
            assert!(
                fitted.iter().zip(&before).all(|(f, b)| f < b),
                "tenacity {tenacity}: {before:?} -> {fitted:?}"
            );
        }
    }

    #[test]
    fn time_limit_follows_redis_tenacity_scale() {
        let limit = |tenacity| {
            Eviction {
                tenacity,
                ..Eviction::none()
            }
            .time_limit()
        };
        let micros = |n| Some(std::time::Duration::from_micros(n));
        assert_eq!(limit(0), micros(0));
        assert_eq!(limit(10), micros(500));
        assert_eq!(limit(11), micros(575));
        assert!(limit(99).unwrap() > std::time::Duration::from_secs(60));
        assert_eq!(limit(100), None);
    }

    #[test]
    fn hash_grown_in_place_is_weighed_again() {
        let keyspace = Keyspace::with_shards(1, TimeSource::Manual(ManualClock::new()), SHARDS);
        keyspace.set_eviction(
            Eviction {
                policy: Some(EvictionPolicy::redis_lru()),
                maxmemory: 1 << 30,
                volatile: false,
                tenacity: 10,
            },
            0,
        );
        let weight = |keyspace: &Keyspace| -> u64 {
            (0..SHARDS)
                .map(|i| {
                    let shard = keyspace.lock_shard(i, 0);
                    shard.db_ref(0).map_or(0, |c| c.weighted_size())
                })
                .sum()
        };
        let key = &b"h"[..];
        let mut locked = keyspace.lock(key);
        let shard = locked.shard(key);
        shard.set(0, key, Value::Hash(Default::default()), Expire::Never);
        drop(locked);
        let small = weight(&keyspace);
        for table in [false, true] {
            let before = weight(&keyspace);
            let mut locked = keyspace.lock(key);
            let mut value = locked.shard(key).lookup_mut(0, key).expect("the hash");
            let limits = crate::keyspace::hash::HashLimits::default();
            let hash = value.as_hash_mut().expect("a hash");
            let fields = if table { 1000 } else { 10 };
            for i in 0..fields {
                hash.insert(format!("field:{i}").as_bytes(), &[b'v'; 20], limits);
            }
            assert_eq!(
                hash.encoding(),
                if table { "hashtable" } else { "listpack" }
            );
            drop(value);
            drop(locked);
            let after = weight(&keyspace);
            assert!(
                after >= before + fields * 20,
                "weight {before} -> {after} after {fields} fields of 20 bytes"
            );
        }
        assert!(small > 0);
    }
}
