//! Maps whose entries expire a generation at a time: [`RotatingMap`] keeps N buckets and drops the
//! oldest on every [`rotate`](RotatingMap::rotate), and [`TimeCacheMap`] rotates one on a timer.
//!
//! An entry lives through exactly N - 1 rotations after its last insert and is handed to the expiry
//! callback by the N-th, so a [`TimeCacheMap`] entry with expiration T is present for at least T
//! and gone once T·(1 + 1/(N - 1)) has passed (plus under N ns of rounding, which matters only
//! for an expiration of a few nanoseconds; see *The schedule* below).
//!
//! # Design
//!
//! Per-entry deadlines need a timestamp per entry and a priority queue or a [timer
//! wheel](crate::timer_wheel) to find what is due. Storm tracks pending tuples where only a coarse
//! bound matters, so Nathan Marz's `RotatingMap` stores no time at all: entries sit in N hash maps
//! ("buckets", newest first), an insert goes into the newest, and a rotation drops the oldest whole
//! bucket and opens a new empty one. Expiring a generation is O(1) plus handing out its entries.
//!
//! - **The window.** Rotate every I = T / (N - 1). An entry inserted between rotations j and j + 1
//!   is in the newest bucket; rotation j + N drops it. Its lifetime is therefore in
//!   ((N - 1)·I, N·I] = (T, T + I] = (T, T·(1 + 1/(N - 1))]: at least T when inserted just before a
//!   rotation, T + I when inserted right after one. More buckets narrow the window, but every
//!   lookup may probe all of them. [`DEFAULT_BUCKETS`] = 3 (Storm's default) allows 50% overshoot.
//! - **A key lives in one bucket.** `insert` puts the key in the newest bucket and removes it from
//!   the others, so re-inserting resets the lifetime, `len` is a plain sum and no stale duplicate
//!   can come back. The price: an insert probes all N buckets, and `get`, `remove` and
//!   `contains_key` probe up to N (newest first, so recently written keys are found early). The key
//!   is hashed once per operation: the buckets are `hashbrown::HashTable`s sharing one hasher.
//!   `len` is O(N).
//! - **Reads do not refresh.** As in Storm, only `insert` moves an entry to the newest bucket;
//!   `get` leaves its age alone, so reading a pending item never postpones its timeout.
//!   [`RotatingMap::touch`] refreshes explicitly. Nor do the bulk operations that Storm lacks and
//!   a Rust map has, [`RotatingMap::iter_mut`] and [`retain`](RotatingMap::retain) (also on
//!   [`TimeCacheMap`]): they change or drop entries where they are, and dropping is removal, not
//!   expiry, so the callback does not see it.
//! - **The schedule follows a [`Clock`], not the thread.** Rotation k of a [`TimeCacheMap`] is due
//!   at `origin + k·I` on its clock. Every operation first performs the rotations that are due
//!   (under the map's lock), and the cleaner thread does the same when nobody touches the map,
//!   waking when the next rotation is due (at least once per I, but sleeping at least
//!   [`MIN_CLEANER_SLEEP`] = 1 ms so a tiny I cannot make it spin). So callers observe the window
//!   above exactly, however late the thread is scheduled: the thread only decides when callbacks
//!   run and memory is freed. I is rounded up to whole nanoseconds, I = ⌈T / (N - 1)⌉, so the
//!   lower bound never drops below T; the upper bound may exceed T·N/(N - 1) by less than N ns.
//!   After a long pause (a clock jump, a suspended machine) the overdue rotations run at once, at
//!   most N of them doing work.
//! - **Callbacks run outside the lock.** Expired entries are taken out under the lock and passed to
//!   the callback (or dropped) after it is released, so a callback, or a `Drop` of `K` or `V`, may
//!   use the map without deadlocking and a slow callback does not block readers. Consequences: the
//!   callback runs on whichever thread performed the rotation (usually the cleaner, sometimes a
//!   caller whose operation found a rotation overdue), batches from different threads are not
//!   ordered, hence `Fn + Send + Sync`.
//! - **Shutdown.** The cleaner waits on a `Condvar` with a stop flag. Dropping the map sets the flag
//!   and joins the thread, so it returns as soon as a callback in progress finishes, never a whole
//!   interval later. If the callback itself drops the last handle (on the cleaner thread), the map
//!   does not join itself; the thread ends when the callback returns. Entries still in the map when
//!   it is dropped are dropped without the callback, as in Storm. A callback that panics still
//!   gets the rest of the batch, and the first panic is raised again afterwards (in Storm the
//!   rest is lost); on the cleaner thread that ends the thread, and operations still expire
//!   entries on schedule.
//!
//! Memory: each entry is one `(K, V)` slot plus one control byte in a table kept at most 7/8 full
//! (so about `(size_of::<(K, V)>() + 1) · 8/7` bytes, up to twice that just after a table grows),
//! plus a table header of a few words per bucket. A [`TimeCacheMap`] adds one thread.
//!
//! # References
//!
//! 1. N. Marz: `RotatingMap` and `TimeCacheMap` in Apache Storm (`backtype.storm.utils`, later
//!    `org.apache.storm.utils`).
//! 2. G. Varghese, T. Lauck: "Hashed and Hierarchical Timing Wheels: Data Structures for the
//!    Efficient Implementation of a Timer Facility", SOSP 1987 (a rotating map is a wheel of N
//!    slots where every insert lands in the current slot).

use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::iter::FusedIterator;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use hashbrown::hash_table::{self, Entry, HashTable};
use hashbrown::DefaultHashBuilder;

/// The bound of the maps' look-ups (hashbrown's): any `Q` that a key borrows as already has
/// it; implement it for a look-up type of your own that a key does not borrow as.
pub use hashbrown::Equivalent;

use crate::time::{duration_nanos, Clock};

/// The fewest buckets: with one, a rotation would drop an entry inserted an instant before.
pub const MIN_BUCKETS: usize = 2;
/// The most buckets; every lookup may probe all of them, so far fewer is the useful range.
pub const MAX_BUCKETS: usize = 1 << 16;
/// Storm's default bucket count: entries live between T and 1.5·T.
pub const DEFAULT_BUCKETS: usize = 3;

/// The shortest sleep of a [`TimeCacheMap`]'s cleaner thread. Callers see exact expiry anyway
/// (operations catch up on due rotations), so this only delays callbacks for sub-millisecond
/// intervals.
pub const MIN_CLEANER_SLEEP: Duration = Duration::from_millis(1);

/// The name of a [`TimeCacheMap`]'s cleaner thread.
const CLEANER_NAME: &str = "cortado-time-cache";

/// A setting that cannot work, reported by the constructors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RotatingError {
    /// The bucket count must be between [`MIN_BUCKETS`] and [`MAX_BUCKETS`].
    InvalidBucketCount {
        /// The count asked for.
        requested: usize,
    },
    /// A [`TimeCacheMap`] needs a positive expiration.
    ZeroExpiration,
    /// The operating system refused to start the cleaner thread.
    CleanerSpawn {
        /// Why, as reported by `std::thread::Builder::spawn`.
        kind: std::io::ErrorKind,
    },
}

impl fmt::Display for RotatingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidBucketCount { requested } => write!(
                f,
                "bucket count {requested} is not between {MIN_BUCKETS} and {MAX_BUCKETS}"
            ),
            Self::ZeroExpiration => write!(f, "the expiration must be positive"),
            Self::CleanerSpawn { kind } => write!(f, "cannot start the cleaner thread: {kind}"),
        }
    }
}

impl std::error::Error for RotatingError {}

fn check_buckets(buckets: usize) -> Result<(), RotatingError> {
    if (MIN_BUCKETS..=MAX_BUCKETS).contains(&buckets) {
        Ok(())
    } else {
        Err(RotatingError::InvalidBucketCount { requested: buckets })
    }
}

type Callback<K, V> = Box<dyn FnMut(K, V) + Send>;

/// A map split into N generations; [`rotate`](Self::rotate) expires the oldest. See the
/// [module docs](self).
///
/// ```
/// use cortado::rotating::RotatingMap;
///
/// let mut map = RotatingMap::new(3)?;
/// map.insert("a", 1);
/// map.rotate();
/// map.rotate();
/// assert_eq!(map.get("a"), Some(&1)); // survived N - 1 = 2 rotations
/// assert_eq!(map.rotate(), 1); // the third expires it
/// assert!(map.is_empty());
/// # Ok::<(), cortado::rotating::RotatingError>(())
/// ```
pub struct RotatingMap<K, V, S = DefaultHashBuilder> {
    newest: HashTable<(K, V)>,
    /// The other N - 1 buckets, newest first.
    older: VecDeque<HashTable<(K, V)>>,
    hasher: S,
    // The mutex only makes the map `Sync` for any `Send` callback: it is reached through
    // `&mut self` with `get_mut`, never locked.
    on_expire: Option<Mutex<Callback<K, V>>>,
}

impl<K, V> RotatingMap<K, V, DefaultHashBuilder> {
    /// An empty map of `buckets` generations whose expired entries are dropped.
    pub fn new(buckets: usize) -> Result<Self, RotatingError> {
        Self::with_hasher(buckets, DefaultHashBuilder::default())
    }

    /// An empty map of `buckets` generations that hands each expired entry to `on_expire`.
    pub fn with_callback(
        buckets: usize,
        on_expire: impl FnMut(K, V) + Send + 'static,
    ) -> Result<Self, RotatingError> {
        Self::with_hasher_and_callback(buckets, DefaultHashBuilder::default(), on_expire)
    }
}

impl<K, V, S> RotatingMap<K, V, S> {
    /// An empty map of `buckets` generations hashing with `hasher`; expired entries are dropped.
    pub fn with_hasher(buckets: usize, hasher: S) -> Result<Self, RotatingError> {
        check_buckets(buckets)?;
        Ok(Self {
            newest: HashTable::new(),
            older: (1..buckets).map(|_| HashTable::new()).collect(),
            hasher,
            on_expire: None,
        })
    }

    /// An empty map of `buckets` generations hashing with `hasher`, handing each expired entry to
    /// `on_expire`.
    pub fn with_hasher_and_callback(
        buckets: usize,
        hasher: S,
        on_expire: impl FnMut(K, V) + Send + 'static,
    ) -> Result<Self, RotatingError> {
        let mut map = Self::with_hasher(buckets, hasher)?;
        map.on_expire = Some(Mutex::new(Box::new(on_expire)));
        Ok(map)
    }

    /// The number of buckets N: an entry survives N - 1 rotations.
    pub fn bucket_count(&self) -> usize {
        1 + self.older.len()
    }

    /// The number of entries, over all buckets (O(N)).
    pub fn len(&self) -> usize {
        self.buckets().map(HashTable::len).sum()
    }

    /// Whether no bucket holds an entry.
    pub fn is_empty(&self) -> bool {
        self.buckets().all(HashTable::is_empty)
    }

    /// The map's hasher.
    pub fn hasher(&self) -> &S {
        &self.hasher
    }

    /// Every entry, newest bucket first, in arbitrary order within a bucket.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.buckets()
            .flat_map(HashTable::iter)
            .map(|(k, v)| (k, v))
    }

    /// Every entry with its value mutable, newest bucket first; changing a value leaves its age
    /// alone.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> + '_ {
        self.buckets_mut()
            .flat_map(HashTable::iter_mut)
            .map(|(k, v)| (&*k, v))
    }

    /// Keeps only the entries for which `keep` returns `true` (it may change their values, not
    /// their ages), in one pass over every bucket; the others are dropped without the expiry
    /// callback (like `remove`, this is not expiry).
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        for bucket in self.buckets_mut() {
            bucket.retain(|(k, v)| keep(k, v));
        }
    }

    /// [`retain`](Self::retain), handing back the entries not kept instead of dropping them.
    fn take_unless(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) -> Vec<(K, V)> {
        let mut taken = Vec::new();
        for bucket in self.buckets_mut() {
            taken.extend(bucket.extract_if(|(k, v)| !keep(k, v)));
        }
        taken
    }

    /// Drops every entry without calling the expiry callback (like `remove`, this is not expiry).
    pub fn clear(&mut self) {
        self.newest.clear();
        self.older.iter_mut().for_each(HashTable::clear);
    }

    /// Drops the oldest bucket, passes its entries to the callback (if any) and opens a new empty
    /// newest bucket. Returns how many entries expired.
    pub fn rotate(&mut self) -> usize {
        let expired = self.rotate_take();
        let count = expired.len();
        if let Some(on_expire) = &mut self.on_expire {
            let on_expire = on_expire.get_mut().unwrap_or_else(PoisonError::into_inner);
            expire_each(expired, on_expire);
        }
        count
    }

    /// Rotates like [`rotate`](Self::rotate) but hands the expired entries to the caller instead
    /// of the callback, e.g. to process them after releasing a lock.
    pub fn rotate_take(&mut self) -> Expired<K, V> {
        self.older.push_front(std::mem::take(&mut self.newest));
        // There are N >= 2 buckets, so after the push the deque is never empty.
        let oldest = self.older.pop_back().unwrap_or_default();
        Expired {
            entries: oldest.into_iter(),
        }
    }

    fn buckets(&self) -> impl Iterator<Item = &HashTable<(K, V)>> + '_ {
        std::iter::once(&self.newest).chain(&self.older)
    }

    fn buckets_mut(&mut self) -> impl Iterator<Item = &mut HashTable<(K, V)>> + '_ {
        std::iter::once(&mut self.newest).chain(&mut self.older)
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> RotatingMap<K, V, S> {
    /// Inserts into the newest bucket, removing the key from the older ones, so the entry's
    /// lifetime starts over. Returns the previous value, whichever bucket held it.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.insert_entry(key, value).map(|(_, v)| v)
    }

    /// Inserts like [`insert`](Self::insert); returns the previous value with the key the map
    /// did not keep (the one given if the key was in the newest bucket, the stored one otherwise),
    /// so a caller holding a lock can drop both after releasing it.
    fn insert_entry(&mut self, key: K, value: V) -> Option<(K, V)> {
        let hash = self.hasher.hash_one(&key);
        let hasher = &self.hasher;
        let rehash = |(k, _): &(K, V)| hasher.hash_one(k);
        match self.newest.entry(hash, |(k, _)| *k == key, rehash) {
            Entry::Occupied(mut slot) => {
                Some((key, std::mem::replace(&mut slot.get_mut().1, value)))
            }
            Entry::Vacant(slot) => {
                // A key lives in at most one bucket, so stop at the first hit.
                let previous = self.older.iter_mut().find_map(|bucket| {
                    let entry = bucket.find_entry(hash, |(k, _)| *k == key).ok()?;
                    Some(entry.remove().0)
                });
                slot.insert((key, value));
                previous
            }
        }
    }

    /// The value of `key`, without refreshing it (see [`touch`](Self::touch)).
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.buckets()
            .find_map(|bucket| bucket.find(hash, |(k, _)| key.equivalent(k)))
            .map(|(_, v)| v)
    }

    /// The value of `key`, mutably, without refreshing it.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.buckets_mut()
            .find_map(|bucket| bucket.find_mut(hash, |(k, _)| key.equivalent(k)))
            .map(|(_, v)| v)
    }

    /// Whether `key` is in any bucket.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Removes `key` and returns its value; the expiry callback is not called.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        self.remove_entry(key).map(|(_, v)| v)
    }

    /// Removes `key` and returns the stored key and value; the expiry callback is not called.
    pub fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.buckets_mut().find_map(|bucket| {
            let entry = bucket.find_entry(hash, |(k, _)| key.equivalent(k)).ok()?;
            Some(entry.remove().0)
        })
    }

    /// How many rotations `key` has survived since its last insert or touch: 0 in the newest
    /// bucket, N - 1 in the oldest (the next rotation expires it).
    pub fn age<Q>(&self, key: &Q) -> Option<usize>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.buckets()
            .position(|bucket| bucket.find(hash, |(k, _)| key.equivalent(k)).is_some())
    }

    /// Moves `key` to the newest bucket, restarting its lifetime as an insert would. Returns
    /// whether the key was present.
    pub fn touch<Q>(&mut self, key: &Q) -> bool
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        if self.newest.find(hash, |(k, _)| key.equivalent(k)).is_some() {
            return true;
        }
        let moved = self.older.iter_mut().find_map(|bucket| {
            let entry = bucket.find_entry(hash, |(k, _)| key.equivalent(k)).ok()?;
            Some(entry.remove().0)
        });
        match moved {
            Some(entry) => {
                let hasher = &self.hasher;
                self.newest
                    .insert_unique(hash, entry, |(k, _)| hasher.hash_one(k));
                true
            }
            None => false,
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug, S> fmt::Debug for RotatingMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Entries<'a, K, V, S>(&'a RotatingMap<K, V, S>);
        impl<K: fmt::Debug, V: fmt::Debug, S> fmt::Debug for Entries<'_, K, V, S> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map().entries(self.0.iter()).finish()
            }
        }
        f.debug_struct("RotatingMap")
            .field("buckets", &self.bucket_count())
            .field("entries", &Entries(self))
            .finish_non_exhaustive()
    }
}

/// The entries of one expired bucket, in arbitrary order; from [`RotatingMap::rotate_take`].
pub struct Expired<K, V> {
    entries: hash_table::IntoIter<(K, V)>,
}

impl<K, V> Iterator for Expired<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<K, V> ExactSizeIterator for Expired<K, V> {}

impl<K, V> FusedIterator for Expired<K, V> {}

impl<K, V> fmt::Debug for Expired<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expired")
            .field("remaining", &self.len())
            .finish()
    }
}

type SharedCallback<K, V> = Box<dyn Fn(K, V) + Send + Sync>;

/// A thread-safe [`RotatingMap`] that a background thread rotates so entries expire after a
/// duration. See the [module docs](self).
///
/// ```
/// use std::time::Duration;
/// use cortado::rotating::TimeCacheMap;
/// use cortado::time::ManualClock;
///
/// let clock = ManualClock::new();
/// let map = TimeCacheMap::builder(Duration::from_secs(60))
///     .buckets(3) // rotate every 30 s: entries live 60 to 90 s
///     .clock(clock.clone())
///     .build()?;
/// map.insert("session", 7);
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(map.get("session"), Some(7));
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(map.get("session"), None);
/// # Ok::<(), cortado::rotating::RotatingError>(())
/// ```
pub struct TimeCacheMap<K, V, S = DefaultHashBuilder> {
    shared: Arc<Shared<K, V, S>>,
    cleaner: Option<JoinHandle<()>>,
}

/// What the map's handle and its cleaner thread share.
struct Shared<K, V, S> {
    state: Mutex<State<K, V, S>>,
    clock: Clock,
    /// Clock time of creation: rotation k is due at `origin + k * interval`.
    origin: u64,
    /// Nanoseconds between rotations, at least 1.
    interval: u64,
    buckets: usize,
    expiration: Duration,
    on_expire: Option<SharedCallback<K, V>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

struct State<K, V, S> {
    map: RotatingMap<K, V, S>,
    /// Rotations performed since `origin`.
    rotations: u64,
}

impl<K, V> TimeCacheMap<K, V, DefaultHashBuilder>
where
    K: Hash + Eq + Send + 'static,
    V: Send + 'static,
{
    /// A map whose entries expire between `expiration` and 1.5 x `expiration` after their last
    /// insert ([`DEFAULT_BUCKETS`], the system clock, no callback).
    pub fn new(expiration: Duration) -> Result<Self, RotatingError> {
        Self::builder(expiration).build()
    }
}

impl<K, V> TimeCacheMap<K, V, DefaultHashBuilder> {
    /// Configures a map whose entries live at least `expiration`.
    pub fn builder(expiration: Duration) -> TimeCacheMapBuilder<K, V> {
        TimeCacheMapBuilder {
            expiration,
            buckets: DEFAULT_BUCKETS,
            clock: Clock::system(),
            hasher: DefaultHashBuilder::default(),
            on_expire: None,
        }
    }
}

impl<K, V, S> TimeCacheMap<K, V, S> {
    /// The minimum lifetime T asked for.
    pub fn expiration(&self) -> Duration {
        self.shared.expiration
    }

    /// The number of buckets N.
    pub fn bucket_count(&self) -> usize {
        self.shared.buckets
    }

    /// The time between rotations, ⌈T / (N - 1)⌉; entries live at most N times this.
    pub fn rotation_interval(&self) -> Duration {
        Duration::from_nanos(self.shared.interval)
    }
}

impl<K, V, S> TimeCacheMap<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    /// Inserts into the newest bucket, so the entry lives at least the expiration from now.
    /// Returns the previous value.
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        // The key not kept is dropped here, outside the lock.
        let replaced = self.shared.with_map(|map| map.insert_entry(key, value)).0;
        replaced.map(|(_, v)| v)
    }

    /// A clone of the value of `key`, without refreshing it.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        Q: Hash + Equivalent<K> + ?Sized,
        V: Clone,
    {
        self.shared.with_map(|map| map.get(key).cloned()).0
    }

    /// Whether `key` is present.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        self.shared.with_map(|map| map.contains_key(key)).0
    }

    /// Removes `key` and returns its value; the expiry callback is not called.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        // The stored key is dropped here, outside the lock.
        let removed = self.shared.with_map(|map| map.remove_entry(key)).0;
        removed.map(|(_, v)| v)
    }

    /// Restarts the lifetime of `key` as an insert would; returns whether it was present.
    pub fn touch<Q>(&self, key: &Q) -> bool
    where
        Q: Hash + Equivalent<K> + ?Sized,
    {
        self.shared.with_map(|map| map.touch(key)).0
    }

    /// The number of entries that have not expired.
    pub fn len(&self) -> usize {
        self.shared.with_map(|map| map.len()).0
    }

    /// Whether no entry is present.
    pub fn is_empty(&self) -> bool {
        self.shared.with_map(|map| map.is_empty()).0
    }

    /// Keeps only the entries for which `keep` returns `true` (it may change their values, not
    /// their ages); the others are dropped without the expiry callback, after the lock is
    /// released. `keep` runs under the map's lock, so it must not use the map.
    pub fn retain(&self, keep: impl FnMut(&K, &mut V) -> bool) {
        let taken = self.shared.with_map(|map| map.take_unless(keep)).0;
        // Dropped here, outside the lock.
        drop(taken);
    }

    /// Drops every entry without calling the expiry callback.
    pub fn clear(&self) {
        let taken = self.shared.with_map(|map| {
            (0..map.bucket_count())
                .map(|_| map.rotate_take())
                .collect::<Vec<_>>()
        });
        // Dropped here, outside the lock.
        drop(taken);
    }

    /// Performs the rotations due by now and runs the callback on what they expire; returns how
    /// many entries expired. The cleaner thread does this on its own; with a manual clock, call it
    /// to expire right after moving the clock.
    pub fn tick(&self) -> usize {
        self.shared.with_map(|_| ()).1
    }
}

impl<K, V, S> fmt::Debug for TimeCacheMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("TimeCacheMap")
            .field("expiration", &self.shared.expiration)
            .field("buckets", &state.map.bucket_count())
            .field("len", &state.map.len())
            .finish_non_exhaustive()
    }
}

impl<K, V, S> Drop for TimeCacheMap<K, V, S> {
    fn drop(&mut self) {
        *self
            .shared
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(cleaner) = self.cleaner.take() {
            // The callback may drop the last handle on the cleaner thread: never join oneself.
            if cleaner.thread().id() != std::thread::current().id() {
                // A panicking callback already reported itself on that thread.
                let _ = cleaner.join();
            }
        }
    }
}

/// Passes every entry to `on_expire`, even past a call that panics: the first panic is raised
/// again once all have been passed, as a cache's removal listener does.
fn expire_each<K, V>(entries: impl Iterator<Item = (K, V)>, mut on_expire: impl FnMut(K, V)) {
    let mut panic = None;
    for (k, v) in entries {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| on_expire(k, v))) {
            panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = panic {
        resume_unwind(payload);
    }
}

impl<K, V, S> Shared<K, V, S> {
    fn lock(&self) -> MutexGuard<'_, State<K, V, S>> {
        // The map stays structurally valid if a `Hash` or `Eq` panicked mid-operation.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `op` after the rotations due by now, then the callback on what they expired, outside
    /// the lock. Returns `op`'s result and the number of expired entries. If `op` panics (a
    /// `retain` predicate, a value's `Clone`, a key's `Hash`), the expired entries still reach
    /// the callback before its panic does; a callback's panic is then dropped for `op`'s.
    fn with_map<R>(&self, op: impl FnOnce(&mut RotatingMap<K, V, S>) -> R) -> (R, usize) {
        let mut expired = Vec::new();
        let result = {
            let mut state = self.lock();
            let due = self.clock.now_nanos().saturating_sub(self.origin) / self.interval;
            if due > state.rotations {
                // After N rotations every bucket is empty; more would only count.
                let work = (due - state.rotations).min(self.buckets as u64);
                for _ in 0..work {
                    let batch = state.map.rotate_take();
                    if batch.len() > 0 {
                        expired.push(batch);
                    }
                }
                state.rotations = due;
            }
            // Caught, so that the entries already taken out of the map are not lost with the
            // unwinding; the guard is dropped normally and the map stays valid (see `lock`).
            catch_unwind(AssertUnwindSafe(|| op(&mut state.map)))
        };
        let count = expired.iter().map(Expired::len).sum();
        let expire = || {
            if let Some(on_expire) = &self.on_expire {
                expire_each(expired.into_iter().flatten(), on_expire);
            }
        };
        match result {
            Ok(result) => {
                expire();
                (result, count)
            }
            Err(payload) => {
                let _ = catch_unwind(AssertUnwindSafe(expire));
                resume_unwind(payload)
            }
        }
    }

    /// How long the cleaner may sleep: until the next rotation is due, at most one interval, at
    /// least [`MIN_CLEANER_SLEEP`].
    fn until_next_rotation(&self) -> Duration {
        let rotations = self.lock().rotations;
        let next = rotations
            .checked_add(1)
            .and_then(|k| k.checked_mul(self.interval))
            .and_then(|offset| self.origin.checked_add(offset));
        let wait = match next {
            Some(next) => next
                .saturating_sub(self.clock.now_nanos())
                .min(self.interval),
            // The schedule runs past the clock's range (~584 years); just keep waking.
            None => self.interval,
        };
        Duration::from_nanos(wait).max(MIN_CLEANER_SLEEP)
    }

    fn run_cleaner(&self) {
        // Nothing is due before one interval, and not reading the clock first keeps a manual
        // clock's tests free of races with this thread.
        let mut wait = Duration::from_nanos(self.interval).max(MIN_CLEANER_SLEEP);
        loop {
            let stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            let (stop, _) = self
                .wake
                .wait_timeout_while(stop, wait, |stop| !*stop)
                .unwrap_or_else(PoisonError::into_inner);
            if *stop {
                return;
            }
            drop(stop);
            self.with_map(|_| ());
            wait = self.until_next_rotation();
        }
    }
}

/// Configures a [`TimeCacheMap`]: bucket count, clock, expiry callback and hasher.
pub struct TimeCacheMapBuilder<K, V, S = DefaultHashBuilder> {
    expiration: Duration,
    buckets: usize,
    clock: Clock,
    hasher: S,
    on_expire: Option<SharedCallback<K, V>>,
}

impl<K, V, S> TimeCacheMapBuilder<K, V, S> {
    /// The number of buckets N (default [`DEFAULT_BUCKETS`]): entries live between T and
    /// T·(1 + 1/(N - 1)).
    pub fn buckets(mut self, buckets: usize) -> Self {
        self.buckets = buckets;
        self
    }

    /// The clock the rotation schedule follows (default: the system clock). A
    /// [`ManualClock`](crate::time::ManualClock) makes expiry deterministic in tests.
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Called with each expired entry, outside the map's lock, on the thread that performed the
    /// rotation (usually the cleaner). Not called for `remove`, `clear`, or on drop.
    pub fn on_expire(mut self, on_expire: impl Fn(K, V) + Send + Sync + 'static) -> Self {
        self.on_expire = Some(Box::new(on_expire));
        self
    }

    /// Hashes keys with `hasher` instead of the default.
    pub fn hasher<S2>(self, hasher: S2) -> TimeCacheMapBuilder<K, V, S2> {
        TimeCacheMapBuilder {
            expiration: self.expiration,
            buckets: self.buckets,
            clock: self.clock,
            hasher,
            on_expire: self.on_expire,
        }
    }

    /// Checks the settings and starts the cleaner thread.
    pub fn build(self) -> Result<TimeCacheMap<K, V, S>, RotatingError>
    where
        K: Hash + Eq + Send + 'static,
        V: Send + 'static,
        S: BuildHasher + Send + 'static,
    {
        if self.expiration.is_zero() {
            return Err(RotatingError::ZeroExpiration);
        }
        let map = RotatingMap::with_hasher(self.buckets, self.hasher)?;
        let gaps = (self.buckets - 1) as u64;
        let shared = Arc::new(Shared {
            state: Mutex::new(State { map, rotations: 0 }),
            origin: self.clock.now_nanos(),
            clock: self.clock,
            interval: duration_nanos(self.expiration).div_ceil(gaps),
            buckets: self.buckets,
            expiration: self.expiration,
            on_expire: self.on_expire,
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let cleaner = std::thread::Builder::new()
            .name(CLEANER_NAME.into())
            .spawn(move || for_thread.run_cleaner())
            .map_err(|e| RotatingError::CleanerSpawn { kind: e.kind() })?;
        Ok(TimeCacheMap {
            shared,
            cleaner: Some(cleaner),
        })
    }
}

impl<K, V, S> fmt::Debug for TimeCacheMapBuilder<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeCacheMapBuilder")
            .field("expiration", &self.expiration)
            .field("buckets", &self.buckets)
            .field("clock", &self.clock)
            .field("on_expire", &self.on_expire.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
