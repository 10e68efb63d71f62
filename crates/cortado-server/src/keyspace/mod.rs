//! The databases: every key of every database, in shards of the `cortado` library's cache, each
//! behind its own lock.
//!
//! A command locks the shards of the keys it names ([`Keyspace::lock`], [`Keyspace::lock_keys`])
//! or all of them ([`Keyspace::lock_all`]) and holds them for its whole length, so each command
//! is atomic and isolated, and time stands still while it runs: every shard it holds reads the
//! same instant, set when it was locked. Commands reach these locks through [`access::Shards`],
//! which inside `EXEC` lends the transaction's lock of every shard instead; [`watch`] tells
//! `WATCH`ers of writes to their keys.
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
//! - **Deadlock freedom.** Shards are always locked in increasing index order (a `SCAN` step,
//!   which takes shards as it reaches them, takes only ones past those it holds), so no two
//!   commands wait for each other.
//! - **Time.** Expiry deadlines are Unix times (as `EXPIREAT` and `PEXPIRETIME` speak them).
//!   Each shard's caches share one [`ManualClock`] reading Unix nanoseconds, which is set to
//!   the command's time: never backwards, so a wall clock stepped back delays expiry rather
//!   than reordering it. A command that locks several shards reads the time once, as it locks
//!   them, so they all agree. A command on one shard reads it when it first needs it: to write
//!   a lifetime, to answer one, or to use a database that holds a key with one. A `GET` or a
//!   `SET` on a database without lifetimes thus never reads the clock, a measurable part of
//!   its cost (see `docs/decisions/0210-server-get-set-path.md`).
//! - **Expiry.** Lazy: a read never returns an expired key (the library checks the deadline).
//!   Active: [`Keyspace::expire_cycle`] asks each shard's timer wheel for what is due, a shard
//!   at a time, so an expiry storm is spread over many short lock holds. A key written with a
//!   time already past is removed at once; Redis keeps it until its expiry cycle or a lookup
//!   finds it, and counts it meanwhile in `DBSIZE` (a difference of timing, not of contents).
//! - **Far expiry times.** Redis takes expiry times up to `i64::MAX` milliseconds; the library's
//!   deadlines are `u64` nanoseconds, which end in the year 2554. A key given an expiry time past
//!   [`FAR_NANOS`] (the year 2262) keeps the library's deadline for it (saturated if need be) and
//!   the time asked for in its shard's `far` map, which `PTTL` and `PEXPIRETIME` then read: rare
//!   enough that a map beside the caches costs nothing on the common path (one test of an empty
//!   vector), exact where a client asks.
//! - **Scans.** A `SCAN` cursor names a shard and a position in that shard's cache (see
//!   [`Keyspace::scan`]); the library keeps an entry at one position for as long as it stays,
//!   so a scan sees every key present from its start to its end, whatever is written meanwhile.
//!   One call locks the shards it walks in increasing order and holds them to its end, so its
//!   reply, like every command's, is one instant's.
//! - **Notifications.** Each database's cache tells its removals to a listener, which records
//!   `expired` and `evicted` keys for keyspace notifications; a write records `new` keys and a
//!   read `keymiss`es. All of it only when asked for, published once the shards are released
//!   (see [`crate::notify`]).
//! - **Random keys.** [`Keyspace::random_key`] picks a shard with probability proportional to
//!   its number of keys, then one of its keys at random (the library's `random_entry`), so every
//!   key is about equally likely, as in Redis.

pub mod access;
pub mod eviction;
pub mod field_expiry;
pub mod hash;
pub mod list;
mod locked;
pub mod set;
pub mod table;
pub mod value;
pub mod wait;
pub mod watch;
pub mod zset;

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cortado::time::ManualClock;
use cortado::unsync;
use cortado::DefaultHashBuilder;

use crate::notify::{class, Notifications};
pub use eviction::Eviction;
use locked::Guards;
pub use locked::Locked;

pub use value::{CompactBytes, Kind, Value, Written};

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

    /// Unix time in nanoseconds as of the cron's last tick ([`tick_coarse_clock`], every
    /// 10 ms), for what needs a time but not an exact one (keys' last access times, in whole
    /// seconds): a load, where reading the system's clock is a call. A manual clock's is exact.
    #[inline]
    pub fn coarse_nanos(&self) -> u64 {
        match self {
            TimeSource::System => match COARSE_NANOS.load(Ordering::Relaxed) {
                0 => self.now_nanos(),
                ticked => ticked,
            },
            TimeSource::Manual(clock) => clock.now_nanos(),
        }
    }
}

/// The system's Unix time in nanoseconds at the cron's last tick (0 before the first).
static COARSE_NANOS: AtomicU64 = AtomicU64::new(0);

/// Reads the system's clock into [`TimeSource::coarse_nanos`]; the cron calls it every tick.
pub fn tick_coarse_clock() {
    COARSE_NANOS.store(TimeSource::System.now_nanos(), Ordering::Relaxed);
}

/// The most expired keys removed under one hold of a shard's lock, by active expiry or by a
/// write: about 30 µs of removals, so that a client waiting for the shard meanwhile is not
/// held up by a burst of keys that expire together.
const EXPIRY_BATCH: usize = 256;

/// Lifetimes each shard samples per database for `INFO`'s `avg_ttl`: 256 over 32 shards, a
/// standard error of a few percent of the spread, for a few thousand slots looked at.
pub const AVG_TTL_SAMPLES: usize = 8;

/// Room below which an emptied cache is not worth shrinking (its structures' fixed part).
const SHRINK_FLOOR: usize = 64 * 1024;

/// What one entry costs the cache beside the heap its key and value own: the slot (key and
/// value, 24 bytes each, and 8 of flags), the table's index and control byte (about 8 at its
/// load factor) and the last access time (4, for `OBJECT IDLETIME`); a cache without a
/// capacity keeps nothing else per entry.
const ENTRY_BYTES: usize = 24 + 24 + 8 + 8 + 4;
/// What a deadline adds: the timer wheel's node (12) and its place in a bucket (4).
const TIMER_BYTES: usize = 16;

/// When a written key expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expire {
    /// Never (a plain `SET` clears any lifetime).
    Never,
    /// At this Unix time in milliseconds.
    AtMillis(i64),
    /// Keeps the key's current lifetime, if it has one (`SET ... KEEPTTL`).
    Keep,
}

/// Expiry times, as Unix nanoseconds, from which the library's deadline no longer says the
/// time exactly (2^63 ns: the year 2262; the library's own limit is 2^64 - 2 ns, in 2554).
pub const FAR_NANOS: u64 = 1 << 63;

/// A value borrowed from a cache to change in place, keeping its lifetime.
pub type ValueMut<'a> = unsync::RefMut<'a, CompactBytes, Value, DefaultHashBuilder>;

/// One shard: a cache per database and the clock they share.
pub struct Shard {
    /// Boxed: a cache is 1,216 bytes, and 16 databases of 32 shards held 622 KB of empty
    /// slots in place, most of an empty server's memory.
    dbs: Box<[Option<Box<Cache>>]>,
    /// Per database, the expiry times (Unix milliseconds) of keys whose time is past
    /// [`FAR_NANOS`]; empty until some key has one. See the [module docs](self).
    far: Vec<HashMap<CompactBytes, i64>>,
    clock: ManualClock,
    /// The clock's reading, in Unix nanoseconds.
    now: u64,
    /// The statistics of the caches dropped since the start (flushed, or emptied by expiry),
    /// so that counters such as `expired_keys` do not go backwards.
    retired: cortado::stats::CacheStats,
    /// Whether `now` is the time of the command holding the shard; if not, it is read when the
    /// command first needs it (see [`Keyspace::lock`]).
    current: bool,
    /// Where the time is read.
    source: TimeSource,
    /// How new caches are bounded (`None`: unbounded), as [`eviction`] set it.
    bound: Option<eviction::Bound>,
    /// Whether this shard's caches choose the W-TinyLFU mode for the others (shard 0).
    leads: bool,
    /// Lookups by reading commands that found their key, and that did not.
    pub hits: u64,
    /// See `hits`.
    pub misses: u64,
    /// The keyspace's notification classes (`new`, `keymiss`, and the caches' `expired` and
    /// `evicted` are told from here).
    notifications: Arc<Notifications>,
    /// The keyspace's watched keys, which a field's expiry changes as a write does.
    watches: Arc<watch::Watches>,
    /// The timers of hash fields' lifetimes, every database's (see [`field_expiry`]).
    field_timers: field_expiry::FieldTimers,
    /// Hash fields removed because their lifetime ended (`INFO`'s `expired_subkeys`).
    pub expired_fields: u64,
}

impl Shard {
    fn new(
        databases: usize,
        source: TimeSource,
        leads: bool,
        notifications: Arc<Notifications>,
        watches: Arc<watch::Watches>,
    ) -> Self {
        Self {
            dbs: (0..databases).map(|_| None).collect(),
            far: Vec::new(),
            clock: ManualClock::new(),
            now: 0,
            retired: cortado::stats::CacheStats::default(),
            current: false,
            source,
            bound: None,
            leads,
            hits: 0,
            misses: 0,
            notifications,
            watches,
            field_timers: field_expiry::FieldTimers::default(),
            expired_fields: 0,
        }
    }

    /// Sets the shard's time to `nanos` for the command that holds it (never backwards).
    fn set_time(&mut self, nanos: u64) {
        if nanos > self.now {
            self.now = nanos;
            self.clock.set(Duration::from_nanos(nanos));
        }
        self.current = true;
        if !self.field_timers.is_empty() {
            self.expire_due_fields();
        }
    }

    /// The command's time, in Unix nanoseconds, read now if it was not yet.
    #[inline]
    fn time(&mut self) -> u64 {
        if !self.current {
            let now = self.source.now_nanos();
            self.set_time(now);
        }
        self.now
    }

    /// Makes the time current before `db`'s cache is used, if the cache holds an entry with a
    /// deadline: without one, no answer depends on the time (a read finds nothing expired, a
    /// write without a lifetime sets no deadline), so a shard of keys without lifetimes is
    /// served without reading the clock. Such a cache gets the cron's coarse time instead, a
    /// load, which its keys' access times (`OBJECT IDLETIME`, whole seconds) need.
    #[inline(always)]
    fn sync(&mut self, db: usize) {
        if self.current {
            return;
        }
        if !self.field_timers.is_empty()
            || self.dbs[db]
                .as_ref()
                .is_some_and(|c| c.len_with_deadline() > 0)
        {
            self.time();
        } else {
            let coarse = self.source.coarse_nanos();
            if coarse > self.now {
                self.move_clock_to(coarse);
            }
        }
    }

    /// [`sync`](Self::sync) for a command about to use `key` in `db`, which must not see a
    /// field whose time has passed: while due field timers wait behind a batch, the key's due
    /// fields go first. A flag test in line.
    #[inline(always)]
    fn sync_key(&mut self, db: usize, key: &[u8]) {
        self.sync(db);
        if self.field_timers.behind() {
            self.expire_fields_of(db, key);
        }
    }

    /// Moves the caches' clock to the coarse time `nanos`, later than the shard's: once per
    /// cron tick on a busy shard, so out of line.
    #[inline(never)]
    fn move_clock_to(&mut self, nanos: u64) {
        self.now = nanos;
        self.clock.set(Duration::from_nanos(nanos));
    }

    /// The shard's time: the command's, or later if another command that held the shard read a
    /// later time.
    pub fn now_millis(&mut self) -> i64 {
        (self.time() / 1_000_000) as i64
    }

    /// Database `db`'s cache, if it ever held a key, with the shard's time current.
    pub fn db(&mut self, db: usize) -> Option<&mut Cache> {
        self.time();
        self.dbs[db].as_deref_mut()
    }

    /// Database `db`'s cache, read-only: for a caller that holds several shards, whose time
    /// was read when they were locked (a lone shard's may not be current, see [`Shard::db`]).
    pub fn db_ref(&self, db: usize) -> Option<&Cache> {
        self.dbs[db].as_deref()
    }

    /// Database `db`'s cache, built if it was never written.
    #[inline]
    pub fn db_mut(&mut self, db: usize) -> &mut Cache {
        if self.dbs[db].is_none() {
            self.build_db(db);
        }
        self.dbs[db].as_deref_mut().expect("built above")
    }

    /// Builds database `db`'s cache: once in its life, or after a flush.
    #[cold]
    #[inline(never)]
    fn build_db(&mut self, db: usize) {
        let listener = crate::notify::removal_listener(db, self.notifications.clone());
        self.dbs[db] = Some(Box::new(eviction::build_cache(
            &self.clock,
            self.bound.as_ref(),
            self.leads,
            listener,
        )));
    }

    /// The value of `key` in `db`, for a reading command: counted as a keyspace hit or miss.
    #[inline]
    pub fn lookup_read(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        self.sync_key(db, key);
        self.expire_if_due(db, key);
        let found = self.dbs[db].as_mut().and_then(|cache| cache.get(key));
        if found.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
            self.notifications
                .key_event(class::KEY_MISS, "keymiss", db, key);
        }
        found
    }

    /// The value of `key` in `db`, for a reading command that does not count as a use (Redis's
    /// `LOOKUP_NOTOUCH`: `EXISTS`, `TYPE`, `TTL`, `OBJECT`): counted as a hit or miss only.
    pub fn lookup_read_untouched(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        self.sync_key(db, key);
        self.expire_if_due(db, key);
        let found = self.dbs[db].as_ref().and_then(|cache| cache.peek(key));
        if found.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
            self.notifications
                .key_event(class::KEY_MISS, "keymiss", db, key);
        }
        found
    }

    /// The value of `key` in `db`, for a command that will write it: not counted as a hit or
    /// miss, as Redis counts only reads.
    pub fn lookup_write(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        self.sync_key(db, key);
        self.dbs[db].as_mut()?.get(key)
    }

    /// The value of `key` in `db` to change in place (its lifetime stays), for a command that
    /// writes it: one lookup for the read and the write. Not counted as a hit or miss.
    pub fn lookup_mut(&mut self, db: usize, key: &[u8]) -> Option<ValueMut<'_>> {
        self.sync_key(db, key);
        self.dbs[db].as_mut()?.get_mut(key)
    }

    /// Whether `key` is live in `db`, with no effect on eviction or statistics.
    pub fn contains(&mut self, db: usize, key: &[u8]) -> bool {
        self.sync_key(db, key);
        self.expire_if_due(db, key);
        self.dbs[db].as_ref().is_some_and(|c| c.contains_key(key))
    }

    /// With `expired` events asked for, removes `key` from `db` if it is there but expired, so
    /// that a read finding it tells `expired` at once (before its `keymiss`), as Redis does,
    /// rather than at the next expiry cycle. A lookup more per read, only then.
    #[inline]
    fn expire_if_due(&mut self, db: usize, key: &[u8]) {
        if self.notifications.wants(class::EXPIRED) {
            self.expire_now(db, key);
        }
    }

    #[cold]
    fn expire_now(&mut self, db: usize, key: &[u8]) {
        if let Some(cache) = self.dbs[db].as_mut() {
            if !cache.contains_key(key) {
                // Not live: removing it takes it only if it is there, expired, which the
                // caches' listener hears.
                cache.remove(key);
            }
        }
    }

    /// The value of `key` in `db` with no effect on eviction or statistics.
    pub fn peek(&mut self, db: usize, key: &[u8]) -> Option<&Value> {
        self.sync_key(db, key);
        self.dbs[db].as_ref()?.peek(key)
    }

    /// Writes `key` in `db` with the lifetime `expire` says. An expiry time not after the
    /// shard's time deletes the key instead (counted as expired), as Redis does. A key that was
    /// not live is told as `new` (after the write, so after the `expired` of a key it replaces).
    #[inline]
    pub fn set(&mut self, db: usize, key: &[u8], value: Value, expire: Expire) {
        if self.notifications.wants(class::NEW) && !self.contains(db, key) {
            self.write(db, key, value, expire);
            self.notifications.key_event(class::NEW, "new", db, key);
        } else {
            self.write(db, key, value, expire);
        }
    }

    #[inline]
    fn write(&mut self, db: usize, key: &[u8], value: Value, expire: Expire) {
        let now = match expire {
            Expire::AtMillis(_) => self.time(),
            Expire::Never | Expire::Keep => {
                self.sync(db);
                self.now
            }
        };
        if !self.far.is_empty() && expire != Expire::Keep {
            self.forget_far(db, key);
        }
        match expire {
            Expire::Never => self.db_mut(db).insert(CompactBytes::new(key), value),
            Expire::AtMillis(at) => match lifetime(now, at) {
                Some(ttl) => {
                    self.db_mut(db)
                        .insert_with_ttl(CompactBytes::new(key), value, ttl);
                    self.remember_far(db, key, at);
                }
                None => {
                    // Written and expired at once (a zero lifetime), so counted as an expired
                    // key: Redis writes it, then counts it expired when it is found.
                    self.db_mut(db)
                        .insert_with_ttl(CompactBytes::new(key), value, Duration::ZERO);
                }
            },
            Expire::Keep => {
                let cache = self.db_mut(db);
                if let Some(mut old) = cache.get_mut(key) {
                    *old = value;
                    return;
                }
                cache.insert(CompactBytes::new(key), value);
            }
        }
    }

    /// Records the far expiry time `at` of `key`, if it is one (see [`FAR_NANOS`]).
    fn remember_far(&mut self, db: usize, key: &[u8], at: i64) {
        if deadline_nanos(at) < u128::from(FAR_NANOS) {
            return;
        }
        if self.far.is_empty() {
            self.far = (0..self.dbs.len()).map(|_| HashMap::new()).collect();
        }
        self.far[db].insert(CompactBytes::new(key), at);
    }

    /// Drops what `far` holds for `key` (it was removed, or written with another lifetime).
    #[cold]
    fn forget_far(&mut self, db: usize, key: &[u8]) {
        self.far[db].remove(key);
    }

    /// Removes `key` from `db`, returning its value if it was live.
    pub fn remove(&mut self, db: usize, key: &[u8]) -> Option<Value> {
        self.sync(db);
        if !self.far.is_empty() {
            self.forget_far(db, key);
        }
        let removed = self.dbs[db].as_mut()?.remove(key);
        if matches!(&removed, Some(Value::Hash(h)) if h.has_lifetimes()) {
            self.remove_field_timers(db, key, removed.as_ref().expect("matched"));
        }
        removed
    }

    /// When `key` expires, as a Unix time in milliseconds: `None` if it is not live in `db`,
    /// `Some(None)` if it never expires.
    pub fn expire_time(&mut self, db: usize, key: &[u8]) -> Option<Option<i64>> {
        self.sync(db);
        let left = self.dbs[db].as_ref()?.expires_after(key)?;
        Some(left.map(|left| {
            let deadline = u128::from(self.now) + left.as_nanos();
            if deadline >= u128::from(FAR_NANOS) {
                if let Some(&at) = self.far.get(db).and_then(|far| far.get(key)) {
                    return at;
                }
            }
            i64::try_from(deadline / 1_000_000).map_or(i64::MAX, |ms| ms - 1)
        }))
    }

    /// Gives the live `key` in `db` the expiry time `at` (Unix milliseconds; one not after the
    /// shard's time deletes the key) or none; false if the key is not live.
    pub fn set_expire_time(&mut self, db: usize, key: &[u8], at: Option<i64>) -> bool {
        let now = self.time();
        if !self.far.is_empty() {
            self.forget_far(db, key);
        }
        let Some(cache) = self.dbs[db].as_mut() else {
            return false;
        };
        match at.map(|at| (at, lifetime(now, at))) {
            None => cache.set_expires_after(key, None),
            Some((at, Some(ttl))) => {
                let live = cache.set_expires_after(key, Some(ttl));
                if live {
                    self.remember_far(db, key, at);
                }
                live
            }
            Some((_, None)) => cache.remove(key).is_some(),
        }
    }

    /// The bytes `key` and its value take in `db`: the cache's slot and index entries for it,
    /// and what the key and value hold on the heap; `None` if missing.
    pub fn memory_usage(&mut self, db: usize, key: &[u8]) -> Option<usize> {
        self.sync(db);
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

    /// How often the eviction policy counts `key` in `db` as used: `None` if it is missing,
    /// `Some(None)` if the policy counts no uses.
    pub fn frequency(&mut self, db: usize, key: &[u8]) -> Option<Option<u64>> {
        self.sync(db);
        let cache = self.dbs[db].as_ref()?;
        cache.contains_key(key).then(|| cache.frequency(key))
    }

    /// How long `key` in `db` has gone without a read or write, in whole seconds; `None` if
    /// it is missing.
    pub fn idle_time(&mut self, db: usize, key: &[u8]) -> Option<std::time::Duration> {
        self.sync(db);
        self.dbs[db].as_ref()?.idle_time(key)
    }

    /// Keys of `db` with an expiry time.
    pub fn expiring(&self, db: usize) -> usize {
        self.dbs[db].as_ref().map_or(0, |c| c.len_with_deadline())
    }

    /// For `INFO`'s `avg_ttl`: the keys of `db` with an expiry time, and the mean lifetime
    /// left, in milliseconds, of [`AVG_TTL_SAMPLES`] of them drawn at random (`(0, 0)` when
    /// none was found).
    pub fn ttl_sample(&self, db: usize) -> (u64, u64) {
        let Some(cache) = self.dbs[db].as_deref() else {
            return (0, 0);
        };
        let sample = cache.sample_times_to_live(AVG_TTL_SAMPLES);
        if sample.is_empty() {
            return (0, 0);
        }
        let mean = sample
            .iter()
            .map(|left| left.as_millis() as u64)
            .sum::<u64>()
            / sample.len() as u64;
        (cache.len_with_deadline() as u64, mean)
    }

    /// The number of keys in `db`, as Redis's `DBSIZE` counts them: expired keys the expiry
    /// cycle has yet to remove included (it runs every 10 ms), so the count is kept, not
    /// computed.
    pub fn len(&self, db: usize) -> usize {
        self.dbs[db]
            .as_ref()
            .map_or(0, |c| c.len_including_expired())
    }

    /// A counter of the caches' statistics, summed over this shard's caches, the dropped ones
    /// included.
    pub fn cache_stat(&self, counter: impl Fn(&cortado::stats::CacheStats) -> u64) -> u64 {
        counter(&self.retired)
            + self
                .databases()
                .map(|(_, c)| counter(&c.stats()))
                .sum::<u64>()
    }

    /// Drops every key of `db`.
    pub fn flush(&mut self, db: usize) -> Option<Cache> {
        if let Some(far) = self.far.get_mut(db) {
            far.clear();
        }
        if !self.field_timers.is_empty() {
            self.field_timers.forget_db(db);
        }
        let cache = self.dbs[db].take()?;
        self.retired = self.retired.merge(&cache.stats());
        Some(*cache)
    }

    /// Swaps databases `a` and `b`.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
        if !self.far.is_empty() {
            self.far.swap(a, b);
        }
        if !self.field_timers.is_empty() {
            self.field_timers.swap_dbs(a, b);
        }
    }

    /// The caches of every database that was ever written, with their index.
    pub fn databases(&self) -> impl Iterator<Item = (usize, &Cache)> {
        self.dbs
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_deref().map(|c| (i, c)))
    }

    /// Removes up to [`EXPIRY_BATCH`] due keys of each database, then drops the caches left
    /// empty, which gives their memory back (a burst of keys that expired together leaves
    /// nothing behind); returns the keys removed and whether due keys (or fields) remain.
    fn expire_batch(&mut self) -> (u64, bool) {
        let mut removed = 0;
        // Fields due behind the batch the lock's time setting took call for another hold.
        let mut done = !self.field_timers.behind();
        for (db, slot) in self.dbs.iter_mut().enumerate() {
            let Some(cache) = slot else {
                continue;
            };
            let before = cache.len_including_expired();
            let finished = cache.remove_expired(EXPIRY_BATCH);
            done &= finished;
            let gone = before - cache.len_including_expired();
            removed += gone as u64;
            if cache.len_including_expired() == 0 {
                if let Some(cache) = slot.take() {
                    self.retired = self.retired.merge(&cache.stats());
                }
                if let Some(far) = self.far.get_mut(db) {
                    far.clear();
                }
            } else if finished
                && gone > 0
                && cache.memory_bytes()
                    > 4 * ENTRY_BYTES * cache.len_including_expired() + SHRINK_FLOOR
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
    let nanos = deadline_nanos(at) - u128::from(now);
    Some(Duration::from_nanos(
        u64::try_from(nanos).unwrap_or(u64::MAX),
    ))
}

/// The library's deadline, in Unix nanoseconds, for a key that expires at the Unix millisecond
/// `at` (not negative): the start of the next millisecond.
fn deadline_nanos(at: i64) -> u128 {
    (at.max(0) as u128 + 1) * 1_000_000
}

/// The index of an entry of `sizes` picked at random in proportion to its size; `None` if all
/// are 0.
fn pick_weighted(sizes: &[usize]) -> Option<usize> {
    let total: usize = sizes.iter().sum();
    if total == 0 {
        return None;
    }
    let mut pick = (random_u64() % total as u64) as usize;
    sizes.iter().position(|&n| {
        if pick < n {
            return true;
        }
        pick -= n;
        false
    })
}

/// A random number from a generator of the calling thread (xorshift64*, seeded from the
/// standard library's random hasher keys): for picking keys, not for secrets.
pub(crate) fn random_u64() -> u64 {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1,
        );
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// Every database. See the [module docs](self).
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    notifications: Arc<Notifications>,
    watches: Arc<watch::Watches>,
    waits: wait::Waits,
    hasher: DefaultHashBuilder,
    databases: usize,
    time: TimeSource,
    /// Keys removed by active expiry (the library counts those it expires lazily too; see
    /// [`Keyspace::expired_keys`]).
    expire_cycles: AtomicU64,
    /// The bounds in force and, under an evicting policy, the caches' shared budget.
    eviction: Mutex<(Eviction, Option<cortado::budget::Budget>)>,
    /// `maxmemory`, for a look without the lock.
    maxmemory: AtomicU64,
    /// Whether a policy evicts, for a look without the lock.
    evicts: AtomicBool,
    /// The bytes the keys may take, as last computed by [`Keyspace::fit_memory`].
    keys_room: AtomicU64,
    /// Whether keys that may not be evicted hold more than `keys_room` (`volatile-*`).
    overfull: AtomicBool,
    /// The shard where the cron's next eviction pass starts, after one that ran out of time.
    evict_from: std::sync::atomic::AtomicUsize,
    /// How many holders of every shard may keep them long: see
    /// [`Keyspace::begin_long_hold`].
    long_holds: std::sync::atomic::AtomicUsize,
}

/// How many times a command waiting for a shard a long holder (a script) has yields its
/// thread and tries again before it waits off the runtime's worker.
const CONTENDED_YIELDS: u32 = 8;

/// Runs `f`, which may block, with the current tokio worker's other tasks handed to another
/// thread first (on a multi-threaded runtime; elsewhere, as it is), so the runtime goes on
/// serving other connections meanwhile.
pub fn off_the_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
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
        let notifications = Arc::new(Notifications::default());
        let watches = Arc::new(watch::Watches::default());
        Self {
            shards: (0..shards)
                .map(|i| {
                    Mutex::new(Shard::new(
                        databases,
                        time.clone(),
                        i == 0,
                        notifications.clone(),
                        watches.clone(),
                    ))
                })
                .collect(),
            notifications,
            watches,
            waits: wait::Waits::default(),
            hasher: DefaultHashBuilder::default(),
            databases,
            time,
            expire_cycles: AtomicU64::new(0),
            eviction: Mutex::new((Eviction::none(), None)),
            maxmemory: AtomicU64::new(0),
            evicts: AtomicBool::new(false),
            keys_room: AtomicU64::new(u64::MAX),
            overfull: AtomicBool::new(false),
            evict_from: std::sync::atomic::AtomicUsize::new(0),
            long_holds: std::sync::atomic::AtomicUsize::new(0),
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

    /// The keyspace notifications asked for (see [`crate::notify`]).
    pub fn notifications(&self) -> &Notifications {
        &self.notifications
    }

    /// The keys clients watch (see [`watch`]).
    pub fn watches(&self) -> &watch::Watches {
        &self.watches
    }

    /// The clients blocked on keys (see [`wait`]).
    pub fn waits(&self) -> &wait::Waits {
        &self.waits
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
        let mut guard = self.acquire(i);
        guard.set_time(now);
        guard
    }

    /// Locks shard `i`; a wait for a holder that may keep every shard long (a script: see
    /// [`Keyspace::begin_long_hold`]) happens off the runtime's worker thread.
    #[inline(always)]
    fn acquire(&self, i: usize) -> MutexGuard<'_, Shard> {
        match self.shards[i].try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => self.acquire_contended(i),
        }
    }

    #[cold]
    #[inline(never)]
    fn acquire_contended(&self, i: usize) -> MutexGuard<'_, Shard> {
        let lock = || {
            self.shards[i]
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if self.long_holds.load(Ordering::SeqCst) != 0 {
            // Most holds of every shard are short scripts: a few yields see most of them
            // end without handing the worker's other tasks to another thread.
            for _ in 0..CONTENDED_YIELDS {
                std::thread::yield_now();
                match self.shards[i].try_lock() {
                    Ok(guard) => return guard,
                    Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                        return poisoned.into_inner()
                    }
                    Err(std::sync::TryLockError::WouldBlock) => {}
                }
            }
            off_the_runtime(lock)
        } else {
            lock()
        }
    }

    /// Says that a holder of every shard may keep them long (a script is about to lock them
    /// or runs), until [`end_long_hold`](Self::end_long_hold): a command that then waits for
    /// a shard waits off the runtime's worker thread, so the runtime goes on serving the other
    /// connections (`SCRIPT KILL` among them). Counted, so that a script ending does not
    /// clear the word for one already waiting to lock every shard.
    pub fn begin_long_hold(&self) {
        self.long_holds.fetch_add(1, Ordering::SeqCst);
    }

    /// Ends what [`begin_long_hold`](Self::begin_long_hold) began.
    pub fn end_long_hold(&self) {
        self.long_holds.fetch_sub(1, Ordering::SeqCst);
    }

    /// Locks the shard of `key`. Its time is read when the command first needs it, which a
    /// command on keys without lifetimes never does (see the [module docs](self)).
    #[inline]
    pub fn lock(&self, key: &[u8]) -> Locked<'_> {
        let i = self.shard_of(key);
        let mut guard = self.acquire(i);
        guard.current = false;
        Locked {
            guards: Guards::One(i, guard),
            keyspace: self,
            now: 0,
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
        self.lock_indices(0..self.shards.len())
    }

    fn lock_indices(&self, indices: impl IntoIterator<Item = usize>) -> Locked<'_> {
        let now = self.time.now_nanos();
        Locked {
            guards: Guards::Many(
                indices
                    .into_iter()
                    .map(|i| (i, self.lock_shard(i, now)))
                    .collect(),
            ),
            keyspace: self,
            now,
        }
    }

    /// Locks nothing yet: shards are locked as [`Locked::scan`] reaches them.
    pub fn lock_none(&self) -> Locked<'_> {
        Locked {
            guards: Guards::Many(Vec::new()),
            keyspace: self,
            now: self.time.now_nanos(),
        }
    }

    /// One step of `SCAN` over database `db` (see [`Locked::scan`]), locking the shards it
    /// walks as it reaches them and holding them to its end.
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        visit: impl FnMut(&CompactBytes, &Value) -> bool,
    ) -> u64 {
        self.lock_none().scan(db, cursor, count, visit)
    }

    /// A key of `db` picked at random, each about equally likely; `None` if `db` is empty.
    ///
    /// The shards' sizes are read one shard at a time, a shard is picked in proportion to its
    /// size and locked, and the library picks one of its keys. Should that shard have lost all
    /// its keys meanwhile (or hold only expired ones), every shard is locked and the pick
    /// made again among them all.
    pub fn random_key(&self, db: usize) -> Option<CompactBytes> {
        let now = self.time.now_nanos();
        let sizes: Vec<usize> = (0..self.shards.len())
            .map(|i| self.lock_shard(i, now).len(db))
            .collect();
        let i = pick_weighted(&sizes)?;
        let shard = self.lock_shard(i, now);
        if let Some((key, _)) = shard.db_ref(db).and_then(Cache::random_entry) {
            return Some(key.clone());
        }
        drop(shard);
        self.lock_all().random_key(db)
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
        self.cache_stat(|stats| stats.evictions_expired)
    }

    /// A counter of the caches' statistics, summed over every cache, the dropped ones
    /// included.
    pub fn cache_stat(&self, counter: impl Fn(&cortado::stats::CacheStats) -> u64) -> u64 {
        self.sum(|shard| shard.cache_stat(&counter))
    }

    /// The number of keys in `db`, at one instant: every shard is locked (a sum taken a shard
    /// at a time could count a key that `RENAME` moves between two shards twice, or not at all).
    pub fn dbsize(&self, db: usize) -> u64 {
        let mut locked = self.lock_all();
        locked
            .shards()
            .into_iter()
            .map(|(_, shard)| shard.len(db) as u64)
            .sum()
    }

    /// The number of keys in `db` with an expiry time.
    pub fn expiring(&self, db: usize) -> u64 {
        self.sum(|shard| shard.expiring(db) as u64)
    }
}
