//! The databases: every key of every database, in shards of the `cortado` library's cache, each
//! behind its own lock.
//!
//! A command locks the shards of the keys it names ([`Keyspace::lock`], [`Keyspace::lock_keys`])
//! or all of them ([`Keyspace::lock_all`]) and holds them for its whole length, so each command
//! is atomic and isolated, and time stands still while it runs: every shard it holds reads the
//! same instant, set when it was locked.
//!
//! # Design
//!
//! - **Shards.** A key's shard comes from its hash alone, not its database, so `MOVE` and `COPY
//!   ... DB` stay within one shard. Each shard holds one [`cortado::unsync::Cache`] per database
//!   (built on first write), so `SWAPDB` swaps two caches in each shard, `FLUSHDB` drops one,
//!   and `DBSIZE`, `SCAN` and `RANDOMKEY` see one database only. The shard count is a power of
//!   two, 16 per CPU: enough that two threads rarely want the same lock (a `GET` holds it for
//!   well under a microsecond), few enough that locking them all (`FLUSHALL`, `KEYS`, a
//!   transaction) stays cheap.
//! - **Deadlock freedom.** Shards are always locked in increasing index order and never one
//!   more after a command started, so no two commands wait for each other.
//! - **Time.** Expiry deadlines are Unix times (as `EXPIREAT` and `PEXPIRETIME` speak them).
//!   Each shard's caches share one [`ManualClock`] reading Unix nanoseconds, which the locker
//!   sets to the command's time: never backwards, so a wall clock stepped back delays expiry
//!   rather than reordering it.
//! - **Expiry.** Lazy: a read never returns an expired key (the library checks the deadline).
//!   Active: [`Keyspace::expire_cycle`] asks each shard's timer wheel for what is due, a shard
//!   at a time, so an expiry storm is spread over many short lock holds.

pub mod value;

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cortado::time::ManualClock;
use cortado::unsync;
use cortado::DefaultHashBuilder;

pub use value::{CompactBytes, Kind, Value};

/// One database's share of a shard.
pub type Cache = unsync::Cache<CompactBytes, Value>;

/// Where the server reads the time: the system's clock, or one that tests move by hand.
#[derive(Debug, Clone, Default)]
pub enum TimeSource {
    /// Unix time from the operating system.
    #[default]
    System,
    /// A manual clock holding Unix time in nanoseconds.
    Manual(ManualClock),
}

impl TimeSource {
    /// Unix time in nanoseconds.
    pub fn now_nanos(&self) -> u64 {
        match self {
            TimeSource::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            TimeSource::Manual(clock) => clock.now_nanos(),
        }
    }

    /// Unix time in milliseconds.
    pub fn now_millis(&self) -> u64 {
        self.now_nanos() / 1_000_000
    }
}

/// The most expired keys removed under one hold of a shard's lock, by active expiry or by a
/// write: about 30 µs of removals, so that a client waiting for the shard meanwhile is not
/// held up by a burst of keys that expire together.
const EXPIRY_BATCH: usize = 256;

/// Room below which an emptied cache is not worth shrinking (its structures' fixed part).
const SHRINK_FLOOR: usize = 64 * 1024;

/// What one entry costs the cache beside the heap its key and value own: the slot (key and
/// value, 24 bytes each, and 8 of flags) and the table's index and control byte (about 8 at
/// its load factor); a cache without a capacity keeps nothing else per entry.
const ENTRY_BYTES: usize = 24 + 24 + 8 + 8;
/// What a deadline adds: the timer wheel's node (12) and its place in a bucket (4).
const TIMER_BYTES: usize = 16;

/// When a written key expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expire {
    /// Never (a plain `SET` clears any lifetime).
    Never,
    /// At this Unix time in milliseconds.
    AtMillis(i64),
    /// Keeps the key's current lifetime (`KEEPTTL`, and in-place changes such as `INCR`).
    Keep,
}

/// One shard: a cache per database and the clock they share.
pub struct Shard {
    dbs: Box<[Option<Cache>]>,
    clock: ManualClock,
    /// The clock's reading, in Unix nanoseconds.
    now: u64,
    /// The statistics of the caches dropped since the start (flushed, or emptied by expiry),
    /// so that counters such as `expired_keys` do not go backwards.
    retired: cortado::stats::CacheStats,
    /// Lookups by reading commands that found their key, and that did not.
    pub hits: u64,
    /// See `hits`.
    pub misses: u64,
}

impl Shard {
    fn new(databases: usize) -> Self {
        Self {
            dbs: (0..databases).map(|_| None).collect(),
            clock: ManualClock::new(),
            now: 0,
            retired: cortado::stats::CacheStats::default(),
            hits: 0,
            misses: 0,
        }
    }

    fn set_time(&mut self, nanos: u64) {
        if nanos > self.now {
            self.now = nanos;
            self.clock.set(Duration::from_nanos(nanos));
        }
    }

    /// The shard's time: the command's, or later if another command that held the shard read a
    /// later time.
    pub fn now_millis(&self) -> i64 {
        (self.now / 1_000_000) as i64
    }

    /// Database `db`'s cache, if it ever held a key.
    pub fn db(&mut self, db: usize) -> Option<&mut Cache> {
        self.dbs[db].as_mut()
    }

    /// Database `db`'s cache, read-only.
    pub fn db_ref(&self, db: usize) -> Option<&Cache> {
        self.dbs[db].as_ref()
    }

    /// Database `db`'s cache, built if it was never written.
    pub fn db_mut(&mut self, db: usize) -> &mut Cache {
        let clock = self.clock.clone();
        self.dbs[db].get_or_insert_with(|| {
            Cache::builder()
                .clock(clock)
                .record_stats()
                .expiry_batch(EXPIRY_BATCH)
                .build()
                .expect("an unbounded cache with default settings builds")
        })
    }

    /// The value of `key` in `db`, for a reading command: counted as a keyspace hit or miss.
    pub fn lookup_read(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        let found = self.dbs[db].as_mut().and_then(|cache| cache.get(key));
        if found.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        found
    }

    /// The value of `key` in `db`, for a command that will write it: not counted as a hit or
    /// miss, as Redis counts only reads.
    pub fn lookup_write(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        self.dbs[db].as_mut()?.get(key)
    }

    /// Whether `key` is live in `db`, with no effect on eviction or statistics.
    pub fn contains(&self, db: usize, key: &[u8]) -> bool {
        self.dbs[db].as_ref().is_some_and(|c| c.contains_key(key))
    }

    /// The value of `key` in `db` with no effect on eviction or statistics.
    pub fn peek(&self, db: usize, key: &[u8]) -> Option<&Value> {
        self.dbs[db].as_ref()?.peek(key)
    }

    /// Writes `key` in `db` with the lifetime `expire` says. An expiry time not after the
    /// shard's time deletes the key instead, as Redis does.
    pub fn set(&mut self, db: usize, key: &[u8], value: Value, expire: Expire) {
        let now = self.now;
        let cache = self.db_mut(db);
        match expire {
            Expire::Never => cache.insert(CompactBytes::new(key), value),
            Expire::AtMillis(at) => match lifetime(now, at) {
                Some(ttl) => cache.insert_with_ttl(CompactBytes::new(key), value, ttl),
                None => {
                    cache.remove(key);
                }
            },
            Expire::Keep => {
                if let Some(mut old) = cache.get_mut(key) {
                    *old = value;
                    return;
                }
                cache.insert(CompactBytes::new(key), value);
            }
        }
    }

    /// Removes `key` from `db`, returning its value if it was live.
    pub fn remove(&mut self, db: usize, key: &[u8]) -> Option<Value> {
        self.dbs[db].as_mut()?.remove(key)
    }

    /// When `key` expires, as a Unix time in milliseconds: `None` if it is not live in `db`,
    /// `Some(None)` if it never expires.
    pub fn expire_time(&self, db: usize, key: &[u8]) -> Option<Option<i64>> {
        let left = self.dbs[db].as_ref()?.expires_after(key)?;
        Some(left.map(|left| {
            let deadline = u128::from(self.now) + left.as_nanos();
            i64::try_from(deadline / 1_000_000).map_or(i64::MAX, |ms| ms - 1)
        }))
    }

    /// Gives the live `key` in `db` the expiry time `at` (Unix milliseconds; one not after the
    /// shard's time deletes the key) or none; false if the key is not live.
    pub fn set_expire_time(&mut self, db: usize, key: &[u8], at: Option<i64>) -> bool {
        let now = self.now;
        let Some(cache) = self.dbs[db].as_mut() else {
            return false;
        };
        match at.map(|at| lifetime(now, at)) {
            None => cache.set_expires_after(key, None),
            Some(Some(ttl)) => cache.set_expires_after(key, Some(ttl)),
            Some(None) => cache.remove(key).is_some(),
        }
    }

    /// The bytes `key` and its value take in `db`: the cache's slot and index entries for it,
    /// and what the key and value hold on the heap; `None` if missing.
    pub fn memory_usage(&self, db: usize, key: &[u8]) -> Option<usize> {
        let cache = self.dbs[db].as_ref()?;
        let value = cache.peek(key)?;
        let timed = matches!(cache.expires_after(key), Some(Some(_)));
        Some(
            ENTRY_BYTES
                + if timed { TIMER_BYTES } else { 0 }
                + CompactBytes::new(key).heap_bytes()
                + value.heap_bytes(),
        )
    }

    /// Keys of `db` with an expiry time.
    pub fn expiring(&self, db: usize) -> usize {
        self.dbs[db].as_ref().map_or(0, |c| c.len_with_deadline())
    }

    /// The number of keys in `db`.
    pub fn len(&self, db: usize) -> usize {
        self.dbs[db].as_ref().map_or(0, |c| c.len())
    }

    /// Drops every key of `db`.
    pub fn flush(&mut self, db: usize) -> Option<Cache> {
        let cache = self.dbs[db].take()?;
        self.retired = self.retired.merge(&cache.stats());
        Some(cache)
    }

    /// Swaps databases `a` and `b`.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
    }

    /// The caches of every database that was ever written, with their index.
    pub fn databases(&self) -> impl Iterator<Item = (usize, &Cache)> {
        self.dbs
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
    }

    /// Removes what is due in every database of the shard.
    /// Removes up to [`EXPIRY_BATCH`] due keys of each database, then drops the caches left
    /// empty, which gives their memory back (a burst of keys that expired together leaves
    /// nothing behind); returns the keys removed and whether due keys remain.
    fn expire_batch(&mut self) -> (u64, bool) {
        let mut removed = 0;
        let mut done = true;
        for slot in self.dbs.iter_mut() {
            let Some(cache) = slot else {
                continue;
            };
            let before = cache.len();
            let finished = cache.remove_expired(EXPIRY_BATCH);
            done &= finished;
            let gone = before - cache.len();
            removed += gone as u64;
            if cache.is_empty() {
                if let Some(cache) = slot.take() {
                    self.retired = self.retired.merge(&cache.stats());
                }
            } else if finished
                && gone > 0
                && cache.memory_bytes() > 4 * ENTRY_BYTES * cache.len() + SHRINK_FLOOR
            {
                // A burst of expirations left most of the cache's room empty.
                cache.shrink_to_fit();
            }
        }
        (removed, done)
    }
}

/// The lifetime from `now` (Unix nanoseconds) of a key that expires at the Unix millisecond
/// `at`, or `None` if `at` is not after `now`'s millisecond. Redis keeps a key through its
/// expiry millisecond and deletes it once the clock is past it, so the library's deadline is
/// the start of the next millisecond.
fn lifetime(now: u64, at: i64) -> Option<Duration> {
    let now_ms = (now / 1_000_000) as i64;
    if at <= now_ms {
        return None;
    }
    let deadline = (at as u128 + 1) * 1_000_000;
    let nanos = deadline - u128::from(now);
    Some(Duration::from_nanos(
        u64::try_from(nanos).unwrap_or(u64::MAX),
    ))
}

/// Every database. See the [module docs](self).
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    hasher: DefaultHashBuilder,
    databases: usize,
    time: TimeSource,
    /// Keys removed by active expiry (the library counts those it expires lazily too; see
    /// [`Keyspace::expired_keys`]).
    expire_cycles: AtomicU64,
}

/// The shards a command holds, in increasing index order.
pub struct Locked<'a> {
    guards: Guards<'a>,
    keyspace: &'a Keyspace,
}

/// One shard (most commands) without a vector's allocation, or several.
enum Guards<'a> {
    One(usize, MutexGuard<'a, Shard>),
    Many(Vec<(usize, MutexGuard<'a, Shard>)>),
}

impl Keyspace {
    /// An empty keyspace of `databases` databases, reading time from `time`.
    pub fn new(databases: usize, time: TimeSource) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards = (cpus * 16).next_power_of_two().clamp(16, 1024);
        Self::with_shards(databases, time, shards)
    }

    /// [`new`](Self::new) with `shards` shards (a power of two).
    pub fn with_shards(databases: usize, time: TimeSource, shards: usize) -> Self {
        assert!(shards.is_power_of_two(), "a power of two of shards");
        Self {
            shards: (0..shards)
                .map(|_| Mutex::new(Shard::new(databases)))
                .collect(),
            hasher: DefaultHashBuilder::default(),
            databases,
            time,
            expire_cycles: AtomicU64::new(0),
        }
    }

    /// The number of databases.
    pub fn databases(&self) -> usize {
        self.databases
    }

    /// The number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Where the keyspace reads the time.
    pub fn time(&self) -> &TimeSource {
        &self.time
    }

    /// The shard `key` lives in.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        // High bits: the caches' tables use the low ones of their own hash.
        (self.hasher.hash_one(key) >> 48) as usize & (self.shards.len() - 1)
    }

    fn lock_shard(&self, i: usize, now: u64) -> MutexGuard<'_, Shard> {
        let mut guard = self.shards[i]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.set_time(now);
        guard
    }

    /// Locks the shard of `key`.
    pub fn lock(&self, key: &[u8]) -> Locked<'_> {
        let now = self.time.now_nanos();
        let i = self.shard_of(key);
        Locked {
            guards: Guards::One(i, self.lock_shard(i, now)),
            keyspace: self,
        }
    }

    /// Locks the shards of all `keys`.
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Locked<'_> {
        let mut indices: Vec<usize> = keys.into_iter().map(|k| self.shard_of(k)).collect();
        indices.sort_unstable();
        indices.dedup();
        self.lock_indices(indices)
    }

    /// Locks every shard.
    pub fn lock_all(&self) -> Locked<'_> {
        self.lock_indices((0..self.shards.len()).collect())
    }

    fn lock_indices(&self, indices: Vec<usize>) -> Locked<'_> {
        let now = self.time.now_nanos();
        Locked {
            guards: Guards::Many(
                indices
                    .into_iter()
                    .map(|i| (i, self.lock_shard(i, now)))
                    .collect(),
            ),
            keyspace: self,
        }
    }

    /// Removes the due keys of every shard; returns how many went.
    pub fn expire_cycle(&self) -> u64 {
        let mut removed = 0;
        // A batch per lock hold, one shard after another: a client waiting for a shard in the
        // middle of a burst waits for one batch, not for the shard's whole burst.
        let mut busy: Vec<usize> = (0..self.shards.len()).collect();
        while !busy.is_empty() {
            busy.retain(|&i| {
                let now = self.time.now_nanos();
                let (batch, done) = self.lock_shard(i, now).expire_batch();
                removed += batch;
                !done
            });
        }
        self.expire_cycles.fetch_add(1, Ordering::Relaxed);
        removed
    }

    /// Sums a figure over the shards, locking one at a time (so the sum is not a snapshot of one
    /// instant, as Redis's `INFO` is not either).
    pub fn sum(&self, figure: impl Fn(&Shard) -> u64) -> u64 {
        let now = self.time.now_nanos();
        (0..self.shards.len())
            .map(|i| figure(&self.lock_shard(i, now)))
            .sum()
    }

    /// Keys removed because they expired, lazily or actively.
    pub fn expired_keys(&self) -> u64 {
        self.sum(|shard| {
            shard.retired.evictions_expired
                + shard
                    .databases()
                    .map(|(_, c)| c.stats().evictions_expired)
                    .sum::<u64>()
        })
    }

    /// The number of keys in `db`.
    pub fn dbsize(&self, db: usize) -> u64 {
        self.sum(|shard| shard.len(db) as u64)
    }

    /// The number of keys in `db` with an expiry time.
    pub fn expiring(&self, db: usize) -> u64 {
        self.sum(|shard| shard.expiring(db) as u64)
    }
}

impl<'a> Locked<'a> {
    /// The shard holding `key`, which must be among those locked.
    #[inline]
    pub fn shard(&mut self, key: &[u8]) -> &mut Shard {
        let i = self.keyspace.shard_of(key);
        match &mut self.guards {
            Guards::One(j, guard) => {
                assert_eq!(*j, i, "the key's shard is locked");
                guard
            }
            Guards::Many(guards) => {
                let at = guards
                    .binary_search_by_key(&i, |(j, _)| *j)
                    .expect("the key's shard is locked");
                &mut guards[at].1
            }
        }
    }

    /// Every locked shard with its index, in index order.
    pub fn shards(&mut self) -> Vec<(usize, &mut Shard)> {
        match &mut self.guards {
            Guards::One(i, guard) => vec![(*i, &mut **guard)],
            Guards::Many(guards) => guards.iter_mut().map(|(i, g)| (*i, &mut **g)).collect(),
        }
    }

    /// The keyspace the shards belong to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.keyspace
    }
}
