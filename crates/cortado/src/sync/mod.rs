//! A thread-safe cache: shards of the single-threaded core, each behind a read-write lock, with
//! reads that share their shard and never take its write lock.
//!
//! [`Cache`] is `Send + Sync` and a cheap `Clone` (a shared handle); `get` returns a clone of the
//! value, so put large values in an `Arc`. Loaders ([`get_with`](Cache::get_with) and friends)
//! run once per key however many threads miss it at the same time.
//!
//! ```
//! use std::time::Duration;
//! let cache = cortado::sync::Cache::builder()
//!     .max_capacity(10_000)
//!     .time_to_live(Duration::from_secs(60))
//!     .build()
//!     .unwrap();
//! let handle = cache.clone();
//! std::thread::spawn(move || handle.insert(1, "one")).join().unwrap();
//! assert_eq!(cache.get(&1), Some("one"));
//! assert_eq!(cache.get_with(2, || "two"), "two");
//! ```
//!
//! # Capacity
//!
//! - **The bound has no slack.** Every write evicts inside its shard's lock, so each shard holds
//!   at most its share and the cache at most its capacity: `weighted_size() <= max_capacity()`
//!   holds between any two operations, not only after
//!   [`run_pending_tasks`](Cache::run_pending_tasks). Two transient excesses: while
//!   [`set_max_capacity`](Cache::set_max_capacity) shrinks the cache, shards it has not reached
//!   yet keep their old share until it returns (at most the old capacity minus the new one);
//!   and, with a weigher, while a write of an entry heavier than its shard's share is in flight
//!   (at most that entry's weight minus the share; see *Shares*).
//! - **Weights of 0.** With a weigher, the capacity bounds the total weight only: entries that
//!   weigh 0 take none of it, and any number of them is kept (up to the `u32::MAX - 1` a shard
//!   can hold).
//! - **Shares.** Shard `i` of `n` gets `capacity / n`, plus one if `i < capacity % n`, so the
//!   shares add up to exactly the capacity (also after `set_max_capacity`). With a weigher the
//!   shards share one [`Budget`]: a shard written an entry heavier than
//!   its share borrows the difference from the others, which the same write then visits, one
//!   at a time, to evict what they owe; the loan goes back to them once the entry has left. So
//!   any entry up to the whole capacity is kept whatever the shard count, as by one unsharded
//!   cache (once the cache is full, W-TinyLFU judges an entry heavier than its window at once,
//!   sharded or not: see the weigher's docs).
//! - **The cost of sharding.** Keys spread unevenly may fill one shard, which then evicts while
//!   others have room. The default shard count keeps shares of at least [`MIN_SHARD_CAPACITY`]
//!   (256) units (a smaller cache is one shard), and grows with the CPU count (see *Shards*
//!   below). A capacity below an explicit shard count is a
//!   [`BuildError`](crate::builder::BuildError); shrinking below the shard count with
//!   `set_max_capacity` leaves some shards unable to hold anything.
//!
//! # Callbacks
//!
//! The weigher, the expiry rules, a `retain` predicate and the closures of the `entry` computes run
//! under a shard's lock, and so do the value's `Clone` in `get` and `peek`, the key's and the
//! value's in the iterators, and the key's when a loaded value is cached: they must be quick and
//! must not use the cache they were called from. On their own shard that use would wait for itself
//! forever (a read from `expire_after_read` or a `Clone`, which run under a shared lock, once a
//! writer waits for that lock); on another, it deadlocks when a thread does the same the other way
//! round. Built with debug assertions (as tests are), the cache panics at such a use from any of
//! these callbacks, whichever shard it touches, and also from the callback of another cache that
//! one of its callbacks used, so the mistake shows at once; release builds do not check. The
//! eviction listener and the loaders run outside the locks and may use the cache, except that a
//! loader may not load or compute its own key (it would wait for itself: that panics in every
//! build, except in a thread-local destructor that runs after the cache's own thread locals are
//! gone, where it hangs).
//!
//! # Design
//!
//! - **Shards.** Keys are spread over a power-of-two number of shards (each the `shard` module's
//!   single-threaded core) by bits 40..56 of their hash (the table itself uses the low bits and the
//!   top seven). The default count is the smallest power of two at least [`SHARDS_PER_CPU`] (16)
//!   times the number of CPUs, lowered so that every shard holds at least [`MIN_SHARD_CAPACITY`]
//!   units; with a weigher, [`WEIGHTED_SHARDS_PER_CPU`] (4) per CPU, since an entry heavier than
//!   its shard's share costs a visit to the others (see [Capacity](self#capacity)). So many shards because of
//!   skew, not of CPU count alone: under Zipf(0.99) the shard of the hottest keys takes a large
//!   share of all operations, and even a read lock writes the lock's word, so threads on that
//!   shard trade its cache line (measurements: `docs/decisions/0001-default-shard-count.md`).
//!   Each shard has its own policy, sketch and timer wheel, so shards never contend. One thing is
//!   shared: the adaptive W-TinyLFU's mode. Only shard 0 runs the miniature caches that choose it
//!   (see [`policy`](crate::policy)) and publishes its choice in an atomic, which the other shards
//!   adopt at their next maintenance, so a sharded cache pays for one set of miniatures and all
//!   shards agree. A follower compares that code with the one it adopted last, kept in its own
//!   fields, and a shard whose reads have always been deferred never drains its read buffer, so
//!   maintenance reads neither the policy's fields nor the buffer's line
//!   (`docs/decisions/0005-one-policy-mode-for-all-shards.md`).
//! - **The lock** of each shard is the `shard_lock` module's, not `std`'s `RwLock`: a reader
//!   counts itself on a cache line of its own thread's (one counter per CPU in each lock), so
//!   threads reading one shard do not trade the lock word's line on every read; a writer sets a
//!   bit, then waits for the counts to drain, and releases the lock with a plain store, not a
//!   locked instruction, while waiters look again rather than sleep to be woken. Each write reads
//!   every counter's line once. It is the crate's one `unsafe` module, run under Miri and model
//!   checked with shuttle (measurements: `docs/decisions/0002-per-cpu-reader-counters.md`,
//!   `0003-unlock-with-plain-store.md`, `0004-claimed-reader-slot.md`).
//! - **Reads** take the shard's read lock, look the key up and clone the value. Most hits are
//!   only counted in a byte of the entry's slot, which the policy applies when the entry nears
//!   eviction (deferred reads, see the `shard` module); the rest (the keys the miniatures
//!   sample) are recorded in the shard's lossy read buffer (the `read_buffer` module:
//!   BP-Wrapper, as in Caffeine) and replayed into the policy by the next writer, or every 32nd
//!   read (recorded in that buffer, or deferred by that thread) by the reader itself: still
//!   under the read lock, it replays the batch if it wins a `try_lock` of the policy's own mutex
//!   (never waiting), so readers never block each other or take the write lock. Only when an
//!   entry's deadline has passed does that reader try the write lock instead (`try_write`), to
//!   remove it; `try_write` gives up at once if a writer holds the shard or any reader is in
//!   flight, as `std`'s does. A read still waits while a writer holds its shard, and while one
//!   has claimed it and waits for the reads in flight to end (so that readers cannot starve
//!   writers); both waits last one short critical section.
//!   Time-to-idle deadlines move at the read itself (an atomic per entry). A read that finds its
//!   entry expired reports a miss and leaves the removal to maintenance.
//! - **Writes** take the write lock and do the maintenance there, amortized on the calling
//!   thread: replay buffered reads (so the policy sees reads and writes in order), expire due
//!   entries, write, evict to fit.
//! - **Listener** calls happen after the lock is released, on the thread that caused them.
//! - **Loaders** coalesce concurrent misses per key (the `loader` module); the protocol
//!   is written once, as a future, which the async front end awaits and the blocking one drives
//!   with a thread-parking executor. A write to a key whose load is in flight does not wait for
//!   it, as Caffeine's would: it marks the load superseded, and the loaded value is then handed
//!   to the callers but not cached. A compute (`and_compute_with`), which reads the value it
//!   replaces, does wait, as Caffeine's does, except inside a loader.
//! - **Scheduler.** With [`Scheduler::Thread`], a background thread removes entries when they
//!   are due, in rounds at least 10 ms apart (the `scheduler` module, after Caffeine's
//!   `Pacer`, which batches within about a second); with `Scheduler::Tokio`
//!   (feature `tokio`), a task on the runtime that builds the cache does; by default, no thread
//!   or task is started.
//! - **`unsafe`** only in the shards' lock (above); the rest of the front end, like the core, is
//!   safe code. The lock-free pieces (the read buffer, the loaders' coalescing, the lock) are
//!   model checked with shuttle; under Miri in CI the lock's tests run over eight seeds, and the
//!   library's other tests once, at smaller sizes.
//!
//! # Memory
//!
//! Per entry as in [`unsync`](crate::unsync) (the same core). The admission sketches of the shards
//! add up to about one sized for the whole capacity, but each is rounded up to a power of two and
//! is at least 4,096 entries (32 KiB), so many small shards cost more; shard 0 also holds the
//! adaptive policy's miniatures (at most about 0.7 MiB). Per shard, fixed: the core's own fields,
//! the lock, the 64-slot read buffer, counters and an empty map of loads in flight, padded to 128
//! bytes: 2,944 bytes (2.9 KiB) for `u64` keys and values (`size_of` of the shard's slot), and
//! the lock's reader counters, 128 bytes each, one per CPU rounded up to a power of two, at most
//! 32 (so 256 bytes on 2 CPUs, 4 KiB from 32 CPUs on). An empty cache of 1,000,000 in 32 shards
//! on 2 CPUs is 32 x (2,944 + 256 + the 32 KiB sketch) plus 256 bytes by `memory_bytes()`;
//! plus the timer wheel's 11 KiB of bucket array headers once entries expire.
//! With a `negative_ttl`, each shard also keeps an LRU of absent keys (an eighth of its capacity,
//! at least 16; with a weigher at most 1,024, and with no bound 1,024).
//!
//! Each shard keeps the whole cache's sketch minimums (a table of 4,096 entries, aging at most
//! every 10,000 increments; see [`policy`](crate::policy)), so a sharded cache whose shards hold
//! fewer than 1,000 entries ages more slowly, in requests, than one unsharded cache of the same
//! capacity: dividing the minimums among the shards lost more hit ratio than it gained
//! (`docs/decisions/0006-sketch-minimums-per-shard.md`).
//!
//! # References
//!
//! 1. X. Ding, S. Jiang, X. Zhang: "BP-Wrapper: A System Framework Making Any Replacement
//!    Algorithms (Almost) Lock Contention Free", ICDE 2009.
//! 2. B. Manes: Caffeine's `BoundedLocalCache` (read buffers drained under `tryLock`).
//! 3. A. Prada: quick-cache (shards of a single-threaded core behind read-write locks).

mod build;
mod bulk;
mod iter;
mod loading;
mod reentry;
mod refresh;
mod writes_and_loads;

use std::borrow::Borrow;
use std::cell::Cell;
use std::hash::{BuildHasher, Hash};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::shard_lock::{ReadGuard, ShardLock, WriteGuard};
use std::time::{Duration, Instant};

use hashbrown::DefaultHashBuilder;

use crate::budget::Budget;
use crate::builder::CacheBuilder;
pub use crate::builder::Synchronized;
use crate::loader::Loading;
use crate::notification::{Hearing, Listener, RemovalCause};
use crate::read_buffer::{ReadBuffer, DRAIN_EVERY};
pub use crate::scheduler::Scheduler;
use crate::scheduler::{Maintained, PacerHandle};
use crate::shard::{hash_key, Shard};
use crate::stats::CacheStats;
use crate::time::{duration_nanos, Clock};

use build::{negatives_capacity, share};
pub use iter::Iter;
pub use loading::{Compute, Entry, RefEntry};
use reentry::{read, write, Holding};

/// Absent keys a shard remembers for `negative_ttl` when its capacity does not count entries
/// (unbounded, or weighed).
const NEGATIVES_UNBOUNDED: u64 = 1024;

/// Shards per CPU when the shard count is chosen automatically (see [Shards](self#design)):
/// enough that the shard of the hottest keys under skew is not one lock word shared by every
/// thread.
pub const SHARDS_PER_CPU: usize = 16;
/// Shards per CPU for a cache with a weigher: fewer, because a write of an entry heavier than
/// its shard's share visits the other shards to borrow room (see [Capacity](self#capacity)),
/// and the gain of more shards was measured on unit weights.
pub const WEIGHTED_SHARDS_PER_CPU: usize = 4;
/// The fewest units of capacity a shard gets when the shard count is chosen automatically,
/// unless the whole capacity is smaller (the cache then has one shard): smaller shares cost
/// small caches hit ratio.
pub const MIN_SHARD_CAPACITY: u64 = 256;
/// The most shards a cache may have.
pub const MAX_SHARDS: usize = 1 << 16;

/// No mode published yet.
const NO_MODE: u8 = u8::MAX;

/// A value alone on its cache lines (two, for the adjacent-line prefetcher).
#[repr(align(128))]
struct Padded<T>(T);

/// Entries removed under a lock, waiting for the listener.
type Removed<K, V> = Vec<(K, V, RemovalCause)>;

/// One shard with its read buffer, counters and loads in flight; aligned to keep shards on
/// separate cache lines.
#[repr(align(128))]
struct Slot<K, V, S> {
    core: ShardLock<Shard<K, V, S>>,
    reads: ReadBuffer,
    hits: AtomicU64,
    misses: AtomicU64,
    loading: Loading<K, V>,
    /// Keys whose absence is cached (`negative_ttl`), as a small LRU cache of its own.
    negatives: Option<Mutex<Shard<K, (), S>>>,
}

/// The shared state behind every handle of a [`Cache`] (and of a
/// [`future::Cache`](crate::future::Cache)).
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
    /// Loaders running (from just before a loader's look at the cache until its value is
    /// cached): a write checks it before looking for a load of its key to supersede, which it
    /// nearly never has to. Read under the shard's lock, which orders it: a loader counted after
    /// a writer's check looks at the cache after its write. On a line of its own: each load
    /// writes it twice, and the fields beside it are read by every operation.
    loaders: Padded<AtomicUsize>,
    /// The mode shard 0's adaptive policy chose, for the other shards (`NO_MODE` before any).
    policy_mode: AtomicU8,
    /// The capacity the latest [`set_max_capacity`](Cache::set_max_capacity) asked for. Each
    /// call stores it first, then gives every shard its share of the value it reads under that
    /// shard's lock, so calls that overlap leave every shard with the share of the one that
    /// stored last (with the shares of different calls, the total would be neither's).
    capacity_target: AtomicU64,
    pacer: Option<PacerHandle>,
    /// With a weigher, the capacity the shards share (shard `i` is member `i`): a shard that
    /// must keep an entry heavier than its allowance borrows from the others, which the writer
    /// then visits to give it back ([`collect_owed`](Self::collect_owed)).
    budget: Option<Budget>,
    /// Whether a write has work after its shard's lock is released: with a pacer or a budget
    /// ([`finish_write`](Self::finish_write)).
    works_after_writes: bool,
    /// Refresh after write, if configured. Boxed: the fields beside it keep the layout they
    /// had before it (decision 0017).
    refresh: Option<Box<refresh::Refresh<K, V>>>,
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

// A panic in a callback (a weigher, the expiry rules, a loader, the listener, a value's
// `Clone`) reaches the caller and leaves every shard consistent: the callbacks run before a
// shard changes, or after its bookkeeping (tests/it/panic_safety.rs). Only the type-erased
// callbacks keep the compiler from seeing that for itself.
impl<K, V, S> std::panic::UnwindSafe for Cache<K, V, S>
where
    K: std::panic::RefUnwindSafe,
    V: std::panic::RefUnwindSafe,
    S: std::panic::RefUnwindSafe,
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Counts a read deferred on its entry (not recorded in a read buffer) by this thread; true
/// every [`DRAIN_EVERY`] of them, when the reader should do what a drain does besides
/// replaying (remove expired entries, drain the reads that were recorded) on the shard it
/// read. The count is the thread's own: a per-shard counter, even written with a plain store,
/// made two threads reading the same shard trade its cache line on every read
/// (`docs/decisions/0008-deferred-read-count-per-thread.md`).
#[inline]
fn deferred_read_tick() -> bool {
    thread_local! {
        static DEFERRED_READS: Cell<u32> = const { Cell::new(0) };
    }
    // `try_with`: where thread locals are emulated, this one is gone in other locals'
    // destructors, which may use the cache (`with` would panic there, and abort).
    DEFERRED_READS
        .try_with(|count| {
            let n = count.get().wrapping_add(1);
            count.set(n);
            n & (DRAIN_EVERY - 1) == 0
        })
        .unwrap_or(false)
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
    /// If `max_capacity` is `u32::MAX` or more; use the [builder](Self::builder) to get an error
    /// instead.
    pub fn new(max_capacity: u64) -> Self {
        Self::builder()
            .max_capacity(max_capacity)
            .build()
            .expect("max_capacity below u32::MAX")
    }

    /// A builder for every setting.
    pub fn builder() -> CacheBuilder<K, V, DefaultHashBuilder, Synchronized> {
        CacheBuilder::default()
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

    /// The shard that owns keys with this hash (bits 40 and up; see [Shards](self#design)).
    #[inline]
    fn shard_of(&self, hash: u64) -> usize {
        (hash >> 40) as usize & self.shard_mask
    }

    #[inline]
    fn slot(&self, hash: u64) -> &Slot<K, V, S> {
        &self.slots[self.shard_of(hash)]
    }

    /// Tells the listener of every removal in `removed`; if a call panics, the others are
    /// still made and the first panic then reaches the caller.
    #[inline(always)]
    fn notify(&self, removed: Removed<K, V>) {
        // Without a listener, a write pays for this test only: the reporting stays out of line.
        if self.listener.is_some() {
            self.report(removed);
        }
    }

    #[inline(never)]
    fn report(&self, removed: Removed<K, V>) {
        let mut hearing = Hearing::default();
        self.hear(&mut hearing, removed);
        hearing.finish();
    }

    /// Tells the listener of every removal in `removed`, keeping a panic in `hearing`.
    fn hear(&self, hearing: &mut Hearing, removed: Removed<K, V>) {
        if let Some(listener) = &self.listener {
            for (key, value, cause) in removed {
                hearing.hear(listener, &key, &value, cause);
            }
        }
    }

    /// Replays buffered reads, expires due entries and shares the adaptive policy's mode: shard
    /// 0 publishes the mode it chose, the others adopt it. The caller holds the write lock.
    #[inline(always)]
    fn maintain(&self, slot: &Slot<K, V, S>, core: &mut Shard<K, V, S>, now: u64) {
        if core.buffers_reads() {
            slot.reads.drain(|batch| core.record_reads(batch));
        }
        core.advance(now);
        if std::ptr::eq(slot, &self.slots[0]) {
            // Stored only when it changes: the word shares a cache line with the fields every
            // operation reads, and a store would take that line from the other cores.
            if let Some(mode) = core.policy_mode() {
                if self.policy_mode.load(Ordering::Relaxed) != mode {
                    self.policy_mode.store(mode, Ordering::Relaxed);
                }
            }
        } else {
            let chosen = self.policy_mode.load(Ordering::Relaxed);
            if chosen != NO_MODE {
                core.adopt_policy_mode(chosen);
            }
        }
    }

    /// Runs `f` on the shard of `hash` under its write lock, after maintenance; returns its
    /// result and the removed entries, for the caller to [`notify`](Self::notify) once it is
    /// ready to run the listener.
    fn write<R>(
        &self,
        hash: u64,
        f: impl FnOnce(&mut Shard<K, V, S>, u64) -> R,
    ) -> (R, Removed<K, V>) {
        let slot = self.slot(hash);
        let now = self.now();
        let mut core = write(&slot.core);
        let holding = Holding::enter(&self.slots);
        self.maintain(slot, &mut core, now);
        let result = f(&mut core, now);
        let removed = std::mem::take(&mut core.pending);
        if self.works_after_writes {
            return self.finish_write(core, holding, result, removed);
        }
        drop(holding);
        drop(core);
        (result, removed)
    }

    /// The end of [`write`](Self::write) in a cache with a pacer or a weight budget: wakes the
    /// pacer for the shard's next expiration, and once the lock is released, collects what the
    /// other shards owe the budget. One flag keeps caches with neither on the plain path.
    fn finish_write<R>(
        &self,
        core: WriteGuard<'_, Shard<K, V, S>>,
        holding: Holding,
        result: R,
        mut removed: Removed<K, V>,
    ) -> (R, Removed<K, V>) {
        let next = self.pacer.as_ref().and_then(|_| core.next_expiration());
        drop(holding);
        drop(core);
        if let (Some(pacer), Some(next)) = (&self.pacer, next) {
            pacer.wake_by(next);
        }
        if let Some(budget) = &self.budget {
            if budget.owed() != 0 {
                self.collect_owed(budget, &mut removed);
            }
        }
        (result, removed)
    }

    /// Visits the shards that owe weight to the budget (lent to a shard for an entry heavier
    /// than its allowance), one at a time and holding no other, so that each gives it up now,
    /// evicting to fit (into `removed`): the write that borrowed returns with the capacity
    /// holding again.
    #[cold]
    #[inline(never)]
    fn collect_owed(&self, budget: &Budget, removed: &mut Removed<K, V>) {
        let now = self.now();
        for i in budget.owing_members() {
            let slot = &self.slots[i];
            let mut core = write(&slot.core);
            let holding = Holding::enter(&self.slots);
            self.maintain(slot, &mut core, now);
            core.settle_budget();
            removed.append(&mut core.pending);
            drop(holding);
            drop(core);
        }
    }

    /// Runs `f` on every shard in turn, under its write lock after maintenance, notifying the
    /// listener after each. A listener panic waits until every shard has been done.
    fn each_shard(&self, mut f: impl FnMut(usize, &mut Shard<K, V, S>, u64)) {
        let now = self.now();
        let mut hearing = Hearing::default();
        for (i, slot) in self.slots.iter().enumerate() {
            let mut core = write(&slot.core);
            let holding = Holding::enter(&self.slots);
            self.maintain(slot, &mut core, now);
            f(i, &mut core, now);
            let removed = std::mem::take(&mut core.pending);
            drop(holding);
            drop(core);
            self.hear(&mut hearing, removed);
        }
        hearing.finish();
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = hash_key(&self.hasher, key);
        let slot = self.slot(hash);
        let now = self.now();
        let core = read(&slot.core);
        // A custom expiry's `expire_after_read` runs in `get_shared`, under the shared lock. Kept
        // out of release builds, and the look-up left in the `let`-`else`: binding its result
        // first, to end the mark before the `else`, cost reads instructions even with no mark
        // (docs/decisions/0007-reentry-check-in-debug-builds-only.md).
        #[cfg(debug_assertions)]
        let holding = Holding::enter(&self.slots);
        let Some(hit) = core.get_shared(hash, key, now) else {
            drop(core);
            if self.record_stats {
                slot.misses.fetch_add(1, Ordering::Relaxed);
            }
            return None;
        };
        let value = hit.value.clone();
        // The value's `Clone` ran under the shared lock too.
        #[cfg(debug_assertions)]
        drop(holding);
        let act = if core.defer_read(&hit, hash) {
            deferred_read_tick()
        } else {
            slot.reads.record(hit.slot)
        };
        if act {
            self.after_reads(slot, core, now);
        }
        if self.record_stats {
            slot.hits.fetch_add(1, Ordering::Relaxed);
        }
        Some(value)
    }

    /// Every 32nd read: replays the shard's buffered reads, or removes its expired entries.
    /// Out of line, so that the common read keeps fewer registers to save.
    #[inline(never)]
    fn after_reads(&self, slot: &Slot<K, V, S>, core: ReadGuard<'_, Shard<K, V, S>>, now: u64) {
        if core.expiry_due(now) {
            // Removing expired entries needs the write lock: do the full maintenance.
            drop(core);
            if let Some(mut core) = slot.core.try_write() {
                self.maintain(slot, &mut core, now);
                let removed = std::mem::take(&mut core.pending);
                drop(core);
                self.notify(removed);
            }
        } else {
            core.drain_reads(&slot.reads);
        }
    }

    /// The live value of `key`, with no effect on the policy or the stats.
    fn peek<Q>(&self, hash: u64, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.now();
        let core = read(&self.slot(hash).core);
        // The value's `Clone` runs under the shared lock: checked as the callbacks are.
        let holding = Holding::enter(&self.slots);
        let value = core.peek(hash, key, now).cloned();
        drop(holding);
        value
    }

    pub(crate) fn insert(&self, key: K, value: V, ttl: Option<Duration>) {
        if ttl.is_some() {
            self.uses_time.store(true, Ordering::Relaxed);
        }
        let hash = hash_key(&self.hasher, &key);
        let ((), removed) = self.write(hash, |core, now| {
            core.insert_with_before_write(hash, key, value, now, ttl, self.write_hook(hash));
        });
        self.notify(removed);
    }

    pub(crate) fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = hash_key(&self.hasher, key);
        let (removed_live, mut removed) = self.write(hash, |core, now| {
            self.supersede(hash, key, RemovalCause::Explicit);
            core.remove(hash, key, now)
        });
        // Maintenance (or the key itself, expired) may have removed entries even on a miss.
        // A panicking clone of the value waits until the removals have been reported.
        let value = removed_live.map(|(key, value)| {
            let returned = catch_unwind(AssertUnwindSafe(|| value.clone()));
            removed.push((key, value, RemovalCause::Explicit));
            returned
        });
        self.notify(removed);
        value.map(|returned| returned.unwrap_or_else(|panic| resume_unwind(panic)))
    }

    pub(crate) fn run_pending_tasks(&self) {
        self.each_shard(|_, core, _| core.settle_budget());
    }

    /// The earliest time any shard may have an entry to expire.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|slot| read(&slot.core).next_expiration())
            .min()
    }

    fn record_load(&self, started: Option<Instant>, success: bool) {
        let Some(started) = started else {
            return;
        };
        let counter = if success {
            &self.load_successes
        } else {
            &self.load_failures
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.load_nanos
            .fetch_add(duration_nanos(started.elapsed()), Ordering::Relaxed);
    }
}

impl<K, V, S> Maintained for Inner<K, V, S>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    fn run_pending_tasks(&self) {
        Inner::run_pending_tasks(self);
    }

    fn next_expiration(&self) -> Option<u64> {
        Inner::next_expiration(self)
    }

    fn now(&self) -> u64 {
        Inner::now(self)
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
        cache.inner.connect_refresh();
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
        self.inner.peek(hash_key(&self.inner.hasher, key), key)
    }

    /// Whether `key` is present and not expired (no effect on eviction).
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let inner = &self.inner;
        let hash = hash_key(&inner.hasher, key);
        let now = inner.now();
        read(&inner.slot(hash).core).peek(hash, key, now).is_some()
    }

    /// Inserts or replaces the value of `key`, then evicts to fit the capacity.
    pub fn insert(&self, key: K, value: V) {
        self.inner.insert(key, value, None);
    }

    /// Inserts or replaces with a lifetime of its own, as
    /// [`unsync::Cache::insert_with_ttl`](crate::unsync::Cache::insert_with_ttl) does: it
    /// overrides the cache's time to live, or its `expire_after` policy (which is not asked), but
    /// not its time to idle; a later plain `insert` gives the key the cache's lifetime again; a
    /// lifetime of zero expires the entry as it is written (`Expired`, evicting nobody).
    pub fn insert_with_ttl(&self, key: K, value: V, ttl: Duration) {
        self.inner.insert(key, value, Some(ttl));
    }

    /// Removes `key` and returns its value if it was present and not expired.
    #[doc(alias = "invalidate")]
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inner.remove(key)
    }

    /// The live entries: those [`iter`](Self::iter) yields, so not the expired ones that
    /// maintenance has yet to remove. Without expiry, a count per shard; with it, linear in
    /// the entries held (each one's deadline is checked;
    /// `docs/decisions/0016-len-counts-live-entries.md`).
    pub fn len(&self) -> usize {
        let now = self.inner.now();
        self.inner
            .slots
            .iter()
            .map(|s| read(&s.core).live_len(now))
            .sum()
    }

    /// Whether no entry is live (`len() == 0`), found by stopping at the first live entry.
    pub fn is_empty(&self) -> bool {
        let now = self.inner.now();
        !self.inner.slots.iter().any(|s| read(&s.core).has_live(now))
    }

    /// Total weight of the entries (their count without a weigher); at most
    /// [`max_capacity`](Self::max_capacity) (see [Capacity](self#capacity)).
    pub fn weighted_size(&self) -> u64 {
        self.inner
            .slots
            .iter()
            .map(|s| read(&s.core).weighted_size())
            .sum()
    }

    /// The capacity (total weight with a weigher); `u64::MAX` when unbounded.
    pub fn max_capacity(&self) -> u64 {
        if let Some(budget) = &self.inner.budget {
            return budget.capacity();
        }
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

    /// A snapshot of the live entries, taken one shard at a time: each shard's entries that
    /// are live when the iterator reaches it are cloned under its read lock.
    pub fn iter(&self) -> Iter<'_, K, V, S>
    where
        K: Clone,
    {
        Iter {
            inner: &self.inner,
            slots: self.inner.slots.iter(),
            shard: Vec::new().into_iter(),
        }
    }

    /// Keeps only the entries for which `keep` returns true. `keep` runs under a shard's write
    /// lock: it must not use the cache (see [Callbacks](self#callbacks)).
    pub fn retain(&self, mut keep: impl FnMut(&K, &V) -> bool) {
        self.inner
            .each_shard(|_, core, now| core.retain(now, &mut keep));
    }

    /// Removes every entry (and every cached absence).
    pub fn invalidate_all(&self) {
        self.inner.each_shard(|i, core, _| {
            core.clear();
            self.inner.supersede_all(i);
        });
        for slot in self.inner.slots.iter() {
            if let Some(negatives) = &slot.negatives {
                lock(negatives).clear();
            }
        }
    }

    /// Changes the capacity (split over the shards); shrinking evicts at once. While it runs,
    /// shards not yet reached keep their old share (see [Capacity](self#capacity)). Counting
    /// entries (no weigher), the capacity is at most `u32::MAX - 1`, the builder's limit. Of
    /// calls that overlap, the last to record its capacity (each does so before it visits a
    /// shard) wins: once all have returned, the capacity is the one it asked for. With a
    /// `negative_ttl`, the absent keys each shard remembers follow its new share, as at build
    /// time (a capacity at the limit, `u64::MAX` say, counts as none).
    pub fn set_max_capacity(&self, max_capacity: u64) {
        let inner = &self.inner;
        let counts_entries = read(&inner.slots[0].core).counts_entries();
        let max_capacity = if counts_entries {
            max_capacity.min(crate::shard::MAX_ENTRIES)
        } else {
            max_capacity
        };
        let limit = if counts_entries {
            crate::shard::MAX_ENTRIES
        } else {
            u64::MAX
        };
        let n = inner.slots.len();
        if let Some(budget) = &inner.budget {
            // The shards share the budget: each gives up its part of a smaller one now.
            budget.set_capacity(max_capacity);
            inner.each_shard(|i, core, _| {
                core.settle_budget();
                if let Some(negatives) = &inner.slots[i].negatives {
                    let share = share(budget.capacity(), n, i);
                    lock(negatives).set_max_capacity(negatives_capacity(Some(share), true));
                }
            });
            return;
        }
        inner.capacity_target.store(max_capacity, Ordering::SeqCst);
        inner.each_shard(|i, core, _| {
            // Read under the shard's lock: a call that stored after this one has reached this
            // shard, or will reach it after this call and set its own share.
            let target = inner.capacity_target.load(Ordering::SeqCst);
            let share = share(target, n, i);
            core.set_max_capacity(share);
            if let Some(negatives) = &inner.slots[i].negatives {
                let bounded = (target < limit).then_some(share);
                lock(negatives).set_max_capacity(negatives_capacity(bounded, !counts_entries));
            }
        });
    }

    /// Replays buffered reads and removes expired entries now (otherwise done on writes, now
    /// and then on reads, or by the [scheduler](Scheduler)).
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
        let mut per_shard: Vec<Vec<K>> = Vec::with_capacity(self.inner.slots.len());
        // Under the write lock, after replaying buffered reads, so the order reflects them.
        self.inner.each_shard(|_, core, now| {
            per_shard.push(
                core.keys_by_eviction_order(n, now, coldest)
                    .into_iter()
                    .cloned()
                    .collect(),
            );
        });
        // Shards evict independently: interleave their orders.
        let mut keys = Vec::with_capacity(n.min(per_shard.iter().map(Vec::len).sum()));
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

    /// The admission windows' current bound summed over the shards (W-TinyLFU only), for
    /// introspection: shard 0 chooses the adaptive policy's mode and the others follow it.
    pub fn window_capacity(&self) -> Option<u64> {
        self.inner
            .slots
            .iter()
            .map(|s| read(&s.core).window_maximum())
            .sum()
    }

    /// Heap bytes used by the cache's own structures (not by what keys and values own).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Inner<K, V, S>>()
            + self
                .inner
                .slots
                .iter()
                .map(|s| {
                    std::mem::size_of::<Slot<K, V, S>>()
                        + s.core.memory_bytes()
                        + read(&s.core).memory_bytes()
                        + s.negatives.as_ref().map_or(0, |n| lock(n).memory_bytes())
                })
                .sum::<usize>()
    }

    /// Panics if an internal invariant of any shard is broken, or a key sits in the wrong
    /// shard. For tests and fuzzing, once the threads that read the cache are done: a
    /// time-to-idle read stores its new deadline a moment before it lists the slot for the
    /// wheel, and a check that falls in between reports a broken invariant.
    #[doc(hidden)]
    pub fn validate(&self) {
        let inner = &self.inner;
        if let Some(budget) = &inner.budget {
            budget.validate();
        }
        for (i, slot) in inner.slots.iter().enumerate() {
            let core = read(&slot.core);
            core.validate();
            for (key, _) in core.iter(0) {
                let home = inner.shard_of(hash_key(&inner.hasher, key));
                assert_eq!(home, i, "a key in shard {i} belongs to shard {home}");
            }
        }
    }

    /// Loads that a miss of their key can still join, over every shard (for tests). A load
    /// that a write overtook leaves the count at once, though its loader may still run.
    #[doc(hidden)]
    pub fn loads_in_flight(&self) -> usize {
        self.inner.slots.iter().map(|s| s.loading.len()).sum()
    }

    /// Whether the scheduler thread is still running (for tests); `None` without one.
    #[doc(hidden)]
    pub fn scheduler_alive(&self) -> Option<Arc<AtomicBool>> {
        self.inner.pacer.as_ref().map(PacerHandle::alive)
    }
}

#[cfg(test)]
mod tests;
