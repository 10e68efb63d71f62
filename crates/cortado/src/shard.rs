//! The single-threaded cache core that every front end wraps: entries, index, policy, timers.
//!
//! A shard maps keys to values within a maximum weight, evicting through its [`Policy`] and
//! expiring through a [`TimerWheel`]; it is not thread-safe and takes the key's hash and the
//! current time from its caller.
//!
//! # Design
//!
//! Entries live in a slab (`Vec` of slots, freed slots reused through a free list) and are named
//! everywhere by their `u32` slab index: the hash table stores indices (hashbrown's `HashTable`,
//! rehashing from the keys), the policy and the timer wheel keep parallel node arrays indexed the
//! same way. Nothing holds a pointer, so moving a slot's neighbours never invalidates anything and
//! the whole core is safe code.
//!
//! - **Expiry.** An entry's deadline is filed in the timer wheel; a read checks it first, so an
//!   expired entry is never returned even before [`Shard::advance`] removes it. When reads can move
//!   deadlines (a time-to-idle or a custom [`Expiry`](crate::expiry::Expiry)), each slot keeps its
//!   current deadline in an atomic (8 bytes) that reads update under a shared borrow, and with a
//!   time-to-idle also the deadline set by writes (another 8), so reads extend the idle deadline
//!   without passing the write deadline; the wheel then holds a lower bound and re-files an entry
//!   that turns out not to be due. A custom expiry's read may also bring a deadline forward (or
//!   give an entry its first), as may a time-to-idle read in the concurrent cache whose clock
//!   was read just before a concurrent write's: the reader, holding only a shared borrow, lists
//!   the slot and keeps the earliest such deadline in an atomic, which
//!   [`Shard::next_expiration`] reports (and the scheduler, if any, is woken by), and the next
//!   [`Shard::advance`] files those slots again before expiring; an exclusive read files it at
//!   once. The wheel exists only once some entry has a deadline.
//! - **Heavier than the capacity.** An entry whose weight alone exceeds the maximum is removed
//!   (as evicted for size) as soon as it is written, under every policy, instead of the entries
//!   an LRU would push out before reaching it.
//! - **Deferred reads.** Most reads (and value replacements, which count as reads) are not told
//!   to the policy when they happen: the reader counts them in a byte of the entry's slot
//!   (which it has just loaded) and the policy applies them when the entry reaches the eviction
//!   end of its queue, as CLOCK does (see [`Deferral`] for which reads, and the measurements).
//!   This is what lets readers of the concurrent cache skip the read buffer's shared counter
//!   and the policy's cache misses.
//! - **Eviction** runs inside every insert that can grow the weighted size (a new key, or a weighed
//!   replacement), so after each operation the weighted size is within the maximum. Removed entries
//!   are queued with their [`RemovalCause`] for the front end, which calls the user's listener
//!   outside of the shard (and outside of any lock).
//! - **Memory.** Per entry, without expiry: the slot (`K` + `V` + 8 bytes of tag and padding for
//!   `u64` keys and values), the policy node (16 bytes for W-TinyLFU), the table (4 bytes + 1
//!   control byte per bucket, a power of two of buckets at a load factor of at most 7/8), plus the
//!   admission sketch (8 bytes per unit of capacity, rounded up to a power of two) and ghost (about
//!   2 bytes per unit). Expiry adds the wheel's 12 bytes per slot and 4 per entry with a deadline in
//!   its bucket's array (plus the arrays' spare room; see [`timer_wheel`](crate::timer_wheel)),
//!   about 11 KiB of bucket array headers per shard, and deadlines that reads move another 8 or 16
//!   (above; plus the shard's short list of slots whose deadlines reads brought forward). The slab
//!   and the per-slot arrays double as they grow up to 1,024 slots (in a shared budget, not at
//!   all), then grow by an eighth, and stop at the shard's maximum (unweighted caches), so a capacity just over a power of two
//!   costs no spare half, nor an unbounded shard's slab a spare third. The sketch's and the
//!   ghost's power-of-two rounding, and hashbrown's table (which doubles once deleted entries use
//!   up its spare room while it is more than half full), still make the cost swing with the
//!   capacity (measured bytes per entry: `docs/decisions/0011-shard-memory-per-entry.md`).
//!
//! The layout of the fields and what is inlined on the read and write paths were chosen by
//! instruction and cache-miss counts: `docs/decisions/0012-shard-field-layout.md`,
//! `0013-shard-read-path-instructions.md` and `0014-shard-write-path-instructions.md`.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use hashbrown::HashTable;

use crate::budget::{Budget, Member};
use crate::expiry::ExpiryRules;
use crate::notification::RemovalCause;
use crate::policy::{Deferral, EvictionPolicy, Policy, MAX_DEFERRED};
use crate::read_buffer::ReadBuffer;
use crate::stats::CacheStats;
use crate::timer_wheel::TimerWheel;

mod access_times;
mod deadlines;
mod eviction;
mod insert;
mod invariants;
mod lifetimes;
mod pins;
mod refresh_times;

use deadlines::MovedDeadlines;
use eviction::Fold;
pub(crate) use refresh_times::RefreshTrigger;

/// Computes an entry's weight.
pub(crate) type Weigher<K, V> = Arc<dyn Fn(&K, &V) -> u32 + Send + Sync>;

/// No deadline (in `read_deadlines` and `write_deadlines`); a real one stops a nanosecond
/// before it (see `expiry`).
const NO_DEADLINE: u64 = u64::MAX;
/// The most entries a cache counting entries may hold: slots are named by `u32` indices, one
/// value short of `u32::MAX` (the builder's limit, and `set_max_capacity`'s).
pub(crate) const MAX_ENTRIES: u64 = u32::MAX as u64 - 1;

/// Wakes whoever runs the cache's maintenance in the background (the concurrent cache's
/// scheduler) by a deadline that a read under a shared borrow brought forward: such a read
/// cannot file it in the wheel, and no front end sees it. A trait here, implemented above, so
/// that the core does not name its front ends.
pub(crate) trait Alarm: Send + Sync + std::fmt::Debug {
    /// Makes sure maintenance runs by `deadline` (cache clock).
    fn wake_by(&self, deadline: u64);
}

/// Everything a shard is built from, shared by the front ends' builders.
pub(crate) struct ShardConfig<K, V> {
    /// Maximum total weight; `None` for an unbounded cache.
    pub(crate) max_capacity: Option<u64>,
    pub(crate) initial_capacity: usize,
    pub(crate) policy: EvictionPolicy,
    pub(crate) weigher: Option<Weigher<K, V>>,
    pub(crate) rules: ExpiryRules<K, V>,
    pub(crate) record_stats: bool,
    /// Whether removed entries are queued for a listener.
    pub(crate) notify: bool,
    /// Whether only evictions (for size, or expiry) are queued, not removals or replacements.
    pub(crate) notify_only_evictions: bool,
    /// Whether an adaptive policy takes its mode from another shard (see
    /// [`adopt_policy_mode`](Shard::adopt_policy_mode)) instead of choosing it.
    pub(crate) follower: bool,
    /// The concurrent cache's scheduler, to wake when a read brings an expiration forward.
    pub(crate) alarm: Option<Arc<dyn Alarm>>,
    /// The most expired entries one write removes (`usize::MAX`: all).
    pub(crate) expiry_batch: usize,
    /// The weight budget the shard shares with others (with a weigher only); its maximum is
    /// then its allowance, `max_capacity` the allowance it asks for when it joins (`None`: an
    /// equal share).
    pub(crate) budget: Option<Budget>,
    /// Whether only entries with a deadline may be evicted for size (see `pins`).
    pub(crate) evicts_only_expiring: bool,
    /// Refresh after write: when each entry becomes due for a reload is kept, and a read of an
    /// entry due for one starts it through the trigger.
    pub(crate) refresh: Option<Arc<RefreshTrigger<K, V>>>,
    /// Whether each entry's last access time is kept ([`Shard::idle_time_of`]).
    pub(crate) access_times: bool,
}

impl<K, V> ShardConfig<K, V> {
    /// At most `max_capacity` entries (`None`: unbounded) under `policy`, and nothing else: no
    /// weigher, no expiry, no stats, no listener.
    pub(crate) fn plain(max_capacity: Option<u64>, policy: EvictionPolicy) -> Self {
        Self {
            max_capacity,
            initial_capacity: 0,
            policy,
            weigher: None,
            rules: ExpiryRules {
                ttl: None,
                tti: None,
                custom: None,
                jitter: None,
            },
            record_stats: false,
            notify: false,
            notify_only_evictions: false,
            follower: false,
            alarm: None,
            expiry_batch: usize::MAX,
            budget: None,
            evicts_only_expiring: false,
            refresh: None,
            access_times: false,
        }
    }
}

impl<K, V> Clone for ShardConfig<K, V> {
    fn clone(&self) -> Self {
        Self {
            max_capacity: self.max_capacity,
            initial_capacity: self.initial_capacity,
            policy: self.policy,
            weigher: self.weigher.clone(),
            rules: self.rules.clone(),
            record_stats: self.record_stats,
            notify: self.notify,
            notify_only_evictions: self.notify_only_evictions,
            follower: self.follower,
            alarm: self.alarm.clone(),
            expiry_batch: self.expiry_batch,
            budget: self.budget.clone(),
            evicts_only_expiring: self.evicts_only_expiring,
            refresh: self.refresh.clone(),
            access_times: self.access_times,
        }
    }
}

struct Entry<K, V> {
    key: K,
    value: V,
    /// Reads not yet told to the policy (see [`Shard::defer_read`]), at most [`MAX_DEFERRED`];
    /// atomic because readers sharing the shard count them.
    reads: AtomicU8,
    /// Lets `Option<Entry>` keep its tag here instead of in a word of its own (an atomic has
    /// no spare values): 24 bytes per slot for `u64` keys and values, not 32.
    _live: Live,
}

#[derive(Clone, Copy)]
#[repr(u8)]
enum Live {
    Yes = 1,
}

impl<K, V> Entry<K, V> {
    fn new(key: K, value: V) -> Self {
        Self {
            key,
            value,
            reads: AtomicU8::new(0),
            _live: Live::Yes,
        }
    }
}

/// The hash every part of the cache uses for `key`: the user's hasher's output, spread.
///
/// The shard is chosen from high bits, the table's tags are its top bits and the policy keeps
/// a 32-bit fold, so all 64 bits must be well mixed. Fast hashers do not promise that: an
/// identity hasher leaves the high bits of small integers zero, and with some process seeds
/// hashbrown's default hasher sent 300 sequential `u64` keys to only 2 of 4 shards (the other
/// two sat empty). One SplitMix64 finalizer (two multiplies) fixes both.
#[inline]
pub(crate) fn hash_key<Q: Hash + ?Sized, S: BuildHasher>(hasher: &S, key: &Q) -> u64 {
    crate::random::mix64(hasher.hash_one(key))
}

/// A live entry found by [`Shard::get_shared`]: its slot and value, and its count of deferred
/// reads for [`Shard::defer_read`].
pub(crate) struct Hit<'a, V> {
    pub(crate) slot: u32,
    pub(crate) value: &'a V,
    reads: &'a AtomicU8,
}

impl<'a, V> Hit<'a, V> {
    #[inline]
    fn new<K>(slot: u32, entry: &'a Entry<K, V>) -> Self {
        Self {
            slot,
            value: &entry.value,
            reads: &entry.reads,
        }
    }
}

/// What a read of the concurrent cache loads from its shard, on one cache line: the table,
/// the slab's pointer and length, and two flags that let the common read skip the fields
/// elsewhere (the wheel, the read deadlines, the policy's [`Deferral`]).
///
/// Spread over the shard, these took five cache lines per read, which with many shards kept
/// falling out of the L1 cache between reads (decision 0012). The alignment also keeps the
/// shard off the cache line of its lock's word, which other cores write whenever they take the
/// lock.
#[repr(C, align(64))]
struct Index<K, V> {
    table: HashTable<u32>,
    slots: Vec<Option<Entry<K, V>>>,
    /// Whether an entry may have a deadline: the wheel exists, or reads move deadlines (the
    /// read deadlines were sized). Never reset: a shard that was timed once only takes the
    /// longer path. One test on every read, for the two it stands for.
    timed: bool,
    /// Whether the shard's copy of the policy's [`Deferral`] is `Always` (with W-TinyLFU, the
    /// case of every shard but the concurrent cache's leader once it is half full; the other
    /// policies, and an unbounded shard's LRU, never defer), so that [`Shard::defer_read`]
    /// need not read the deferral. Set with that copy, in [`evict_to_fit`](Shard::evict_to_fit).
    defers_all: bool,
}

/// The single-threaded core. See the [module docs](self).
///
/// `repr(C)`, in the order a write reads the fields: the [`Index`] (a read's line), then the
/// fields every insert reads, then the policy, then what only expiry, statistics and rare
/// calls use, so that an insert touches few cache lines (decision 0012).
#[repr(C)]
pub(crate) struct Shard<K, V, S> {
    index: Index<K, V>,
    free: Vec<u32>,
    scratch: Vec<u32>,
    /// Removed entries waiting for the front end's listener.
    pub(crate) pending: Vec<(K, V, RemovalCause)>,
    /// The policy's current [`Deferral`], copied here so that readers sharing the shard need
    /// not lock the policy to consult it.
    deferral: Deferral,
    weigher: Option<Weigher<K, V>>,
    rules: ExpiryRules<K, V>,
    hasher: S,
    record_stats: bool,
    notify: bool,
    /// Whether only evictions are queued for the listener ([`ShardConfig`]'s).
    notify_only_evictions: bool,
    /// The cache has been full at least once.
    full: bool,
    /// Whether the policy has ever had reads replayed (a [`Deferral`] other than `Always`), so
    /// that the concurrent cache's read buffer may hold some; a shard whose reads are all
    /// deferred never drains it, sparing each write the buffer's cache line.
    buffers_reads: bool,
    /// The mode code last adopted from another shard (see
    /// [`adopt_policy_mode`](Self::adopt_policy_mode)), kept here so that a follower compares
    /// without touching its policy's cache lines on every write.
    adopted_mode: Option<u8>,
    /// Behind its own lock so that readers, holding only the shard's read lock, can replay
    /// their buffered reads into it (see [`drain_reads`](Self::drain_reads)).
    policy: Mutex<Policy>,
    /// When reads move deadlines: the slots whose deadlines reads moved before the wheel's; see
    /// [`moved_earlier`](Self::moved_earlier).
    moved: Option<Box<MovedDeadlines>>,
    wheel: Option<TimerWheel>,
    /// Read deadlines by slot, kept only when reads move deadlines; atomic so that readers
    /// sharing the shard can move them.
    read_deadlines: Vec<AtomicU64>,
    /// Write deadlines by slot, kept only with a time to idle.
    write_deadlines: Vec<u64>,
    stats: CacheStats,
    /// An unbounded shard runs LRU in place of the configured policy (nothing is evicted); this
    /// is that policy and whether it follows another shard's mode, for the first
    /// [`set_max_capacity`](Self::set_max_capacity) that bounds the shard.
    bounded_policy: Option<(EvictionPolicy, bool)>,
    /// The most expired entries one write removes ([`ShardConfig::expiry_batch`]).
    expiry_batch: usize,
    /// The shard's place in a weight budget shared with other shards or caches, whose
    /// allowance is the policy's maximum (see [`budget`](crate::budget) and `fit`). Boxed: a
    /// pointer keeps the shards of caches without a budget as small as before it.
    budget: Option<Box<Member>>,
    /// The entries kept out of the policy, in a bounded shard that evicts only entries with a
    /// deadline (see `pins`).
    pins: Option<Box<pins::Pins>>,
    /// Whether writes record when their entry is due for a reload (with `refresh`).
    keeps_refresh_times: bool,
    /// Whether reads and writes record their time in `access_times`.
    keeps_access_times: bool,
    /// The time of each slot's last use in whole seconds, by slot (see `access_times`).
    access_times: Vec<u32>,
    /// Whether the policy ranks entries by deadline, which it is told at each change
    /// ([`tell_policy_deadline`](Self::tell_policy_deadline)).
    orders_by_deadline: bool,
    /// When a read must look closer at each slot's entry: the earlier of its reload's due
    /// time (its last write plus `refresh_after`) and its deadline; kept only for refresh
    /// after write (see `refresh_times`).
    refresh_checks: Vec<u64>,
    /// The due times later than their slot's deadline, which `refresh_checks` hides.
    late_refreshes: std::collections::HashMap<u32, u64>,
    /// Starts the reload of an entry a read finds due ([`ShardConfig::refresh`]).
    refresh: Option<Arc<RefreshTrigger<K, V>>>,
    /// `refresh`'s interval in nanoseconds, which a write adds to its time.
    refresh_after: u64,
}

impl<K, V, S> std::fmt::Debug for Shard<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_sizes(&mut f.debug_struct("Shard"))
            .finish_non_exhaustive()
    }
}

impl<K, V, S> Shard<K, V, S> {
    /// Adds the entry count, weighted size and maximum to a `Debug` output (the last two as
    /// `locked` while another thread holds the policy).
    pub(crate) fn debug_sizes<'a, 'f, 'g>(
        &self,
        out: &'a mut std::fmt::DebugStruct<'f, 'g>,
    ) -> &'a mut std::fmt::DebugStruct<'f, 'g> {
        out.field("len", &self.index.table.len());
        let policy = match self.policy.try_lock() {
            Ok(policy) => Some(policy),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        match policy {
            Some(policy) => out
                .field("weighted_size", &policy.weighted_size())
                .field("max_capacity", &policy.maximum()),
            None => out
                .field("weighted_size", &format_args!("locked"))
                .field("max_capacity", &format_args!("locked")),
        }
    }
}

impl<K, V, S> Shard<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    pub(crate) fn new(config: &ShardConfig<K, V>, hasher: S) -> Self {
        let member = config.budget.as_ref().map(|budget| {
            Box::new(match config.max_capacity {
                Some(wanted) => budget.join(wanted),
                None => budget.join_equal(),
            })
        });
        let max_capacity = member
            .as_deref()
            .map(Member::allowance)
            .or(config.max_capacity);
        let mut policy = match max_capacity {
            Some(maximum) => Policy::new(
                config.policy,
                maximum,
                config.weigher.is_some(),
                config.follower,
            ),
            // Unbounded: nothing is ever evicted, so nothing is kept per entry.
            None => Policy::unbounded(),
        };
        if let Some(member) = &member {
            policy.set_allowance(member.allowance(), member.capacity());
        }
        let mut shard = Self {
            index: Index {
                table: HashTable::with_capacity(config.initial_capacity),
                slots: Vec::with_capacity(config.initial_capacity),
                // Refresh after write checks entries' ages where reads check deadlines.
                timed: config.refresh.is_some(),
                defers_all: false,
            },
            free: Vec::new(),
            policy: Mutex::new(policy),
            hasher,
            weigher: config.weigher.clone(),
            rules: config.rules.clone(),
            wheel: None,
            read_deadlines: Vec::new(),
            write_deadlines: Vec::new(),
            moved: config.rules.reads_matter().then(|| {
                Box::new(MovedDeadlines {
                    slots: Mutex::new(Vec::new()),
                    earliest: AtomicU64::new(NO_DEADLINE),
                    alarm: config.alarm.clone(),
                })
            }),
            stats: CacheStats::default(),
            record_stats: config.record_stats,
            notify: config.notify,
            notify_only_evictions: config.notify_only_evictions,
            pending: Vec::new(),
            scratch: Vec::new(),
            deferral: Deferral::Never,
            full: false,
            buffers_reads: false,
            adopted_mode: None,
            bounded_policy: max_capacity
                .is_none()
                .then_some((config.policy, config.follower)),
            expiry_batch: config.expiry_batch,
            pins: (config.evicts_only_expiring && max_capacity.is_some())
                .then(|| Box::new(pins::Pins::new(max_capacity.unwrap_or(u64::MAX)))),
            budget: member,
            keeps_refresh_times: config.refresh.is_some(),
            orders_by_deadline: config.policy.orders_by_deadline(),
            keeps_access_times: config.access_times,
            access_times: Vec::new(),
            refresh_checks: Vec::new(),
            late_refreshes: std::collections::HashMap::new(),
            refresh_after: config.refresh.as_ref().map_or(u64::MAX, |r| r.after),
            refresh: config.refresh.clone(),
        };
        shard.policy_mut().reserve(config.initial_capacity);
        shard
    }

    /// The policy, for a caller that holds the shard exclusively (no locking).
    #[inline]
    fn policy_mut(&mut self) -> &mut Policy {
        self.policy
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The policy, for a caller that shares the shard (locks the policy).
    fn policy(&self) -> MutexGuard<'_, Policy> {
        self.policy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The hash of a key, as the front ends must compute it.
    #[inline]
    pub(crate) fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        hash_key(&self.hasher, key)
    }

    #[inline]
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slots = &self.index.slots;
        self.index
            .table
            .find(hash, |&i| match &slots[i as usize] {
                Some(entry) => entry.key.borrow() == key,
                None => false,
            })
            .copied()
    }

    #[inline]
    fn entry(&self, i: u32) -> &Entry<K, V> {
        self.index.slots[i as usize]
            .as_ref()
            .expect("index names a live slot")
    }

    /// Looks `key` up without changing the policy: the slot and value of a live entry. A read
    /// that moves the entry's deadline (time to idle, custom expiry) does so here, atomically,
    /// so it works under a shared borrow; the policy learns of the read later, from the read
    /// buffer, through [`drain_reads`](Self::drain_reads) or [`record_reads`](Self::record_reads).
    #[inline]
    pub(crate) fn get_shared<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<Hit<'_, V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(hash, key)?;
        if self.index.timed {
            if !self.read_deadlines.is_empty() {
                let hit = self.get_shared_and_move_deadline(i, now);
                if hit.is_some() && self.refresh_due(i, now) {
                    self.start_refresh(i, hash);
                }
                return hit;
            }
            // A refreshing shard's check time is the earlier of the reload's due time and the
            // deadline: one compare for both (`refresh_times`).
            if let Some(check) = self.refresh_check_at(i) {
                if check <= now && !self.live_past_check(i, hash, now) {
                    return None;
                }
                // A return of its own: past the call, the compiler indexed the slab again in
                // the tail that every read shares (6 instructions per hit on replay A; decision
                // 0017).
                return Some(Hit::new(i, self.entry(i)));
            }
            if self.is_expired(i, now) {
                // Left for `advance`, which removes it and queues the notification.
                return None;
            }
        }
        Some(Hit::new(i, self.entry(i)))
    }

    /// Counts the read that found `hit` on its entry, if the policy lets this read wait until the
    /// entry nears eviction ([`Deferral`]); false when the policy must be told now (or, in the
    /// concurrent cache, through the read buffer). The count saturates at [`MAX_DEFERRED`] and is a
    /// plain load and store, not a locked increment: two readers racing may count one read between
    /// them, which only makes the policy's view of a hot key a little older.
    #[inline]
    pub(crate) fn defer_read(&self, hit: &Hit<'_, V>, hash: u64) -> bool {
        self.defer_read_on(hit.reads, hash)
    }

    /// [`defer_read`](Self::defer_read) of the live slot `i`.
    #[inline]
    fn defer_read_at(&self, i: u32, hash: u64) -> bool {
        self.defer_read_on(&self.entry(i).reads, hash)
    }

    /// [`defer_read`](Self::defer_read) on an entry's count of deferred reads. A read takes the
    /// count from the look-up that found the entry instead of indexing the slab again, which the
    /// compiler does not merge with the first (decision 0013).
    #[inline]
    fn defer_read_on(&self, reads: &AtomicU8, hash: u64) -> bool {
        if !self.index.defers_all && !self.deferral.defers(hash) {
            return false;
        }
        let count = reads.load(Ordering::Relaxed);
        if count < MAX_DEFERRED {
            reads.store(count + 1, Ordering::Relaxed);
        }
        true
    }

    /// Takes the deferred read count of the entry at `i`, for a caller that shares the shard.
    fn take_deferred(slots: &[Option<Entry<K, V>>], i: u32) -> u8 {
        match slots.get(i as usize) {
            Some(Some(entry)) => entry.reads.swap(0, Ordering::Relaxed),
            _ => 0,
        }
    }

    /// [`take_deferred`](Self::take_deferred) for a caller that holds the shard exclusively: a
    /// plain load and store, where the shared version needs a locked instruction, most of the
    /// fold's time (decision 0013).
    fn take_deferred_mut(slots: &mut [Option<Entry<K, V>>], i: u32) -> u8 {
        match slots.get_mut(i as usize) {
            Some(Some(entry)) => std::mem::take(entry.reads.get_mut()),
            _ => 0,
        }
    }

    /// Replays the buffered reads into the policy while the shard is shared, unless another
    /// reader is doing it: the policy's own lock is tried, never waited for. Writers drain
    /// under the write lock instead ([`record_reads`](Self::record_reads)). An empty buffer
    /// returns at once: the shards whose reads are all deferred never fill theirs, yet their
    /// readers come here every 32nd read, and the mutex round trip cost two locked
    /// instructions each time.
    pub(crate) fn drain_reads(&self, reads: &ReadBuffer) {
        if reads.is_drained() {
            return;
        }
        let mut policy = match self.policy.try_lock() {
            Ok(policy) => policy,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        let pins = self.pins.as_deref();
        reads.drain(|batch| Self::replay(&self.index.slots, pins, &mut policy, batch));
    }

    /// Tells the policy that the slots in `batch` were read (those that still hold entries).
    pub(crate) fn record_reads(&mut self, batch: &[u32]) {
        let Self {
            index: Index { slots, .. },
            policy,
            pins,
            ..
        } = self;
        let policy = policy.get_mut().unwrap_or_else(PoisonError::into_inner);
        Self::replay(slots, pins.as_deref(), policy, batch);
    }

    /// Hands the policy the reads in `batch` (at most one read buffer's worth) whose slots still
    /// hold entries.
    fn replay(
        slots: &[Option<Entry<K, V>>],
        pins: Option<&pins::Pins>,
        policy: &mut Policy,
        batch: &[u32],
    ) {
        let mut live = [0u32; crate::read_buffer::CAPACITY];
        let mut len = 0;
        for &i in batch {
            if slots.get(i as usize).is_some_and(Option::is_some)
                && pins.is_none_or(|p| p.weight(i).is_none())
            {
                live[len] = i;
                len += 1;
            }
        }
        policy.access_batch(&live[..len]);
    }

    /// The live value of `key`, recording the access with the policy and the expiry rules.
    pub(crate) fn get<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.get_slot(hash, key, now)?;
        Some(&self.entry(i).value)
    }

    /// [`get`](Self::get), returning the slot: a caller that goes on to insert on a miss cannot
    /// hold a borrowed value across the two.
    pub(crate) fn get_slot<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.get_slot_unrecorded(hash, key, now)?;
        self.record_use(i, hash);
        Some(i)
    }

    /// [`get_slot`](Self::get_slot) up to the policy, which the caller tells of the use later
    /// ([`record_use`](Self::record_use), [`record_mutation`](Self::record_mutation)): the
    /// stats and the expiry rules count it here.
    #[inline]
    pub(crate) fn get_slot_unrecorded<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let Some(hit) = self.get_shared(hash, key, now) else {
            self.record_miss();
            return None;
        };
        let i = hit.slot;
        self.record_access_time(i, now);
        if self.moved_deadline().is_some() {
            // Exclusive here: the read's earlier deadline goes into the wheel at once.
            self.reschedule();
        }
        if self.record_stats {
            self.stats.hits += 1;
        }
        Some(i)
    }

    /// Tells the policy of a read of the live slot `i` (whose key hashes to `hash`), or counts
    /// it on the entry if the policy lets it wait ([`defer_read_at`](Self::defer_read_at)).
    #[inline]
    pub(crate) fn record_use(&mut self, i: u32, hash: u64) {
        if !self.defer_read_at(i, hash) && !self.is_pinned(i) {
            self.policy_mut().access(i);
        }
    }

    /// The value in the live slot `i`, to change in place; the caller then weighs it again
    /// ([`weigh`](Self::weigh), [`record_mutation`](Self::record_mutation)).
    pub(crate) fn value_mut(&mut self, i: u32) -> &mut V {
        &mut self.index.slots[i as usize]
            .as_mut()
            .expect("index names a live slot")
            .value
    }

    /// The weigher's weight for the live slot `i`'s entry as it is now (`None` without a
    /// weigher). The weigher may panic; nothing has changed then.
    pub(crate) fn weigh(&self, i: u32) -> Option<u32> {
        let weigher = self.weigher.as_ref()?;
        let entry = self.entry(i);
        Some(weigher(&entry.key, &entry.value))
    }

    /// A use of the live slot `i` (its key hashing to `hash`) whose value changed in place and
    /// now weighs `weight` ([`weigh`](Self::weigh)'s). With its weight unchanged it is told as a
    /// read ([`record_use`](Self::record_use)). A new weight reaches the policy as a weighed
    /// replacement's does (counting the use); then, as around an insert, expired entries leave
    /// (as expired, not evicted for size: this one too, should it have expired since it was
    /// read), an entry heavier than the capacity goes, and eviction fits the rest.
    pub(crate) fn record_mutation(&mut self, i: u32, hash: u64, weight: u32, now: u64) {
        if weight == self.weight_of_slot(i) {
            return self.record_use(i, hash);
        }
        self.set_weight_of_slot(i, weight);
        self.advance(now);
        if self.value_in(i).is_some() {
            self.fit(i, weight, Fold::Needed);
        }
    }

    /// The value in slot `i`, if the slot still holds an entry (an insert's slot may have been
    /// freed by the eviction that followed it).
    pub(crate) fn value_in(&self, i: u32) -> Option<&V> {
        self.index
            .slots
            .get(i as usize)?
            .as_ref()
            .map(|entry| &entry.value)
    }

    /// Counts a loader's call, if stats are recorded (for the single-threaded front end; the
    /// concurrent one counts loads outside its shards).
    pub(crate) fn record_load(&mut self, success: bool, nanos: u64) {
        if self.record_stats {
            if success {
                self.stats.load_successes += 1;
            } else {
                self.stats.load_failures += 1;
            }
            self.stats.load_nanos += nanos;
        }
    }

    /// Whether stats are recorded (so a loader's time is worth reading the clock for).
    pub(crate) fn records_stats(&self) -> bool {
        self.record_stats
    }

    #[inline]
    fn record_miss(&mut self) {
        if self.record_stats {
            self.stats.misses += 1;
        }
    }

    /// The live value of `key`, with no effect on the policy, expiry or stats.
    pub(crate) fn peek<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(hash, key)?;
        (!self.is_expired(i, now)).then(|| &self.entry(i).value)
    }

    /// The slot of `key`'s live entry, with no effect on the policy, expiry or stats.
    pub(crate) fn live_slot<Q>(&self, hash: u64, key: &Q, now: u64) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(hash, key)?;
        (!self.is_expired(i, now)).then_some(i)
    }

    /// The key and value in the live slot `i`.
    pub(crate) fn entry_at(&self, i: u32) -> (&K, &V) {
        let entry = self.entry(i);
        (&entry.key, &entry.value)
    }

    /// Counts the removal of an entry (its key and value given) and queues it for the listener.
    pub(crate) fn notify_removal(&mut self, key: K, value: V, cause: RemovalCause) {
        if self.record_stats {
            self.stats.record_removal(cause);
        }
        if self.notify && (!self.notify_only_evictions || cause.was_evicted()) {
            self.pending.push((key, value, cause));
        }
    }

    /// Removes `key`, returning the live entry. An expired entry is removed as expired (and
    /// queued for the listener) and `None` is returned.
    pub(crate) fn remove<Q>(&mut self, hash: u64, key: &Q, now: u64) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(hash, key)?;
        if self.is_expired(i, now) {
            self.remove_index(i, RemovalCause::Expired);
            return None;
        }
        self.forget_slot(i);
        let entry = self.detach(i);
        if self.record_stats {
            self.stats.record_removal(RemovalCause::Explicit);
        }
        Some((entry.key, entry.value))
    }

    /// Keeps the live entries for which `keep` is true; removes the rest (expired ones as
    /// expired).
    pub(crate) fn retain(&mut self, now: u64, mut keep: impl FnMut(&K, &V) -> bool) {
        for i in 0..self.index.slots.len() as u32 {
            let Some(entry) = &self.index.slots[i as usize] else {
                continue;
            };
            if self.is_expired(i, now) {
                self.remove_index(i, RemovalCause::Expired);
            } else if !keep(&entry.key, &entry.value) {
                self.remove_index(i, RemovalCause::Explicit);
            }
        }
    }

    /// Removes every entry (each as explicitly removed).
    pub(crate) fn clear(&mut self) {
        if self.notify || self.record_stats {
            for entry in std::mem::take(&mut self.index.slots).into_iter().flatten() {
                self.notify_removal(entry.key, entry.value, RemovalCause::Explicit);
            }
        }
        self.index.slots.clear();
        self.index.table.clear();
        self.free.clear();
        self.read_deadlines.clear();
        self.write_deadlines.clear();
        self.late_refreshes.clear();
        self.policy_mut().clear();
        if let Some(pins) = &mut self.pins {
            let base = pins.base();
            **pins = pins::Pins::new(base);
            self.policy_mut().set_maximum(base);
        }
        if let Some(wheel) = &mut self.wheel {
            wheel.clear();
        }
        // Empty again: the reads deferred while it refills are folded when it is next full.
        self.full = false;
    }

    /// The live entries, in slab order.
    pub(crate) fn iter(&self, now: u64) -> Iter<'_, K, V, S> {
        Iter {
            shard: self,
            slots: self.index.slots.iter().enumerate(),
            now,
        }
    }

    /// Up to `n` live keys, from the most likely to be evicted (`coldest`) or the least.
    pub(crate) fn keys_by_eviction_order(&self, n: usize, now: u64, coldest: bool) -> Vec<&K> {
        let order = {
            let mut policy = self.policy();
            // Deferred reads count: a key just read is not the coldest.
            policy.fold_all(|i| Self::take_deferred(&self.index.slots, i));
            if policy.is_unbounded() {
                self.live_slots()
            } else {
                policy.coldest()
            }
        };
        let live = |&i: &u32| (!self.is_expired(i, now)).then(|| &self.entry(i).key);
        if coldest {
            order.iter().filter_map(live).take(n).collect()
        } else {
            order.iter().rev().filter_map(live).take(n).collect()
        }
    }

    /// The shard's member id in its weight budget, if it shares one.
    pub(crate) fn budget_member(&self) -> Option<usize> {
        self.budget.as_deref().map(Member::id)
    }

    /// Whether the capacity counts entries (no weigher).
    pub(crate) fn counts_entries(&self) -> bool {
        self.weigher.is_none()
    }

    /// Changes the maximum weight, evicting at once if the cache is now over it. Counting
    /// entries (no weigher), a maximum of `u32::MAX` or more is taken as `u32::MAX - 1`, the
    /// most slots a shard can name (and the builder's limit).
    ///
    /// A full cache shrunk below its weighted size first applies the reads waiting on all its
    /// entries: the evictions go far past the queue ends that
    /// [`evict_to_fit`](Self::evict_to_fit)'s fold looks at, and would take read entries as if
    /// unread (a quarter of the keys read 8 times kept, shrinking a full cache to a quarter, as
    /// many as of the unread ones).
    pub(crate) fn set_max_capacity(&mut self, maximum: u64) {
        if let Some(member) = &self.budget {
            // The budget's, which the shard's allowance follows.
            member.set_capacity(maximum);
            return self.settle_budget();
        }
        let maximum = if self.weigher.is_none() {
            maximum.min(MAX_ENTRIES)
        } else {
            maximum
        };
        if maximum != u64::MAX {
            if let Some((config, follower)) = self.bounded_policy.take() {
                self.bound_policy(config, follower, maximum);
            }
        }
        let maximum = self.policy_maximum(maximum);
        let Self {
            policy,
            index: Index { slots, .. },
            full,
            ..
        } = self;
        let policy = policy.get_mut().unwrap_or_else(PoisonError::into_inner);
        policy.set_maximum(maximum);
        if *full && policy.weighted_size() > maximum {
            policy.fold_all(|i| Self::take_deferred_mut(slots, i));
        }
        self.evict_to_fit(Fold::Needed);
    }

    /// Replaces the policy of an unbounded shard, which keeps no order, with the configured
    /// policy bounded by `maximum`, holding the entries in slab order (the caller evicts).
    /// Out of line: it happens at most once in a shard's life.
    #[cold]
    fn bound_policy(&mut self, config: EvictionPolicy, follower: bool, maximum: u64) {
        let order = self.live_slots();
        let mut policy = Policy::new(config, maximum, self.weigher.is_some(), follower);
        policy.reserve(self.index.slots.capacity());
        for &i in &order {
            let weight = self.weigh(i).unwrap_or(1);
            policy.insert(i, hash_key(&self.hasher, &self.entry(i).key), weight);
            if policy.orders_by_deadline() {
                policy.set_deadline(i, self.deadline(i));
            }
        }
        *self.policy_mut() = policy;
        self.adopted_mode = None;
    }

    /// The slots holding an entry, in slab order.
    fn live_slots(&self) -> Vec<u32> {
        (0..self.index.slots.len() as u32)
            .filter(|&i| self.index.slots[i as usize].is_some())
            .collect()
    }

    /// Entries held, including expired ones not yet removed.
    pub(crate) fn len(&self) -> usize {
        self.index.table.len()
    }

    /// The entries live at `now`, those [`iter`](Self::iter) yields: the table's count while no
    /// entry has had a deadline, otherwise each entry's deadline is checked (expired entries
    /// stay in the table until the timer wheel reaches them).
    pub(crate) fn live_len(&self, now: u64) -> usize {
        if self.wheel.is_none() {
            return self.len();
        }
        self.iter(now).count()
    }

    /// Whether any entry is live at `now`: [`live_len`](Self::live_len) is not 0, found by
    /// stopping at the first live entry.
    pub(crate) fn has_live(&self, now: u64) -> bool {
        if self.wheel.is_none() {
            return self.len() > 0;
        }
        self.len() > 0 && self.iter(now).next().is_some()
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.policy().weighted_size() + self.unevictable_weight()
    }

    /// The weight of the entries kept out of the policy (see `pins`).
    pub(crate) fn unevictable_weight(&self) -> u64 {
        self.pins.as_ref().map_or(0, |p| p.total())
    }

    /// The maximum weight; in a shard that shares a budget, the budget's capacity (the shard's
    /// own maximum is its allowance, which moves).
    pub(crate) fn max_capacity(&self) -> u64 {
        match &self.budget {
            Some(member) => member.capacity(),
            None => self.policy().maximum(),
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        self.stats
    }

    /// The adaptive policy's current mode, to share with follower shards.
    pub(crate) fn policy_mode(&mut self) -> Option<u8> {
        self.policy_mut().mode_code()
    }

    /// Switches a follower's adaptive policy to the mode another shard chose, unless it is the
    /// mode adopted last.
    pub(crate) fn adopt_policy_mode(&mut self, mode: u8) {
        if self.adopted_mode != Some(mode) {
            self.adopted_mode = Some(mode);
            self.policy_mut().adopt_mode(mode);
        }
    }

    /// Whether reads may wait in a read buffer for this shard (see `buffers_reads`).
    pub(crate) fn buffers_reads(&self) -> bool {
        self.buffers_reads
    }

    /// The admission window's current bound, for W-TinyLFU.
    pub(crate) fn window_maximum(&self) -> Option<u64> {
        self.policy().window_maximum()
    }

    /// Heap bytes of the shard's own structures (not of what keys and values point to).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.index.slots.capacity() * std::mem::size_of::<Option<Entry<K, V>>>()
            + self.index.table.allocation_size()
            + self.free.capacity() * 4
            + self.read_deadlines.capacity() * 8
            + self.write_deadlines.capacity() * 8
            + self.refresh_checks_bytes()
            + self.access_times.capacity() * 4
            + self.policy().memory_bytes()
            + self.wheel.as_ref().map_or(0, TimerWheel::memory_bytes)
            + self.pins.as_ref().map_or(0, |p| p.memory_bytes())
    }
}

/// The live entries of a shard at one instant, in slab order ([`Shard::iter`]).
pub(crate) struct Iter<'a, K, V, S> {
    shard: &'a Shard<K, V, S>,
    slots: std::iter::Enumerate<std::slice::Iter<'a, Option<Entry<K, V>>>>,
    now: u64,
}

impl<'a, K: Hash + Eq, V, S: BuildHasher> Iterator for Iter<'a, K, V, S> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        let (shard, now) = (self.shard, self.now);
        self.slots.find_map(|(i, slot)| {
            let entry = slot.as_ref()?;
            (!shard.is_expired(i as u32, now)).then_some((&entry.key, &entry.value))
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.slots.size_hint().1)
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> std::iter::FusedIterator for Iter<'_, K, V, S> {}

impl<K, V, S> Clone for Iter<'_, K, V, S> {
    fn clone(&self) -> Self {
        Self {
            slots: self.slots.clone(),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests;
