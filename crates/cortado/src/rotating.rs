//! Maps whose entries expire a generation at a time: [`RotatingMap`] keeps N buckets and drops the
//! oldest on every [`rotate`](RotatingMap::rotate), and [`TimeCacheMap`] rotates one on a timer.
//!
//! An entry lives through exactly N - 1 rotations after its last insert and is handed to the expiry
//! callback by the N-th, so a [`TimeCacheMap`] entry with expiration T is present for at least T
//! and gone once T·(1 + 1/(N - 1)) has passed.
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
use hashbrown::{DefaultHashBuilder, Equivalent};

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
    /// the lock. Returns `op`'s result and the number of expired entries.
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
            op(&mut state.map)
        };
        let count = expired.iter().map(Expired::len).sum();
        if let Some(on_expire) = &self.on_expire {
            expire_each(expired.into_iter().flatten(), on_expire);
        }
        (result, count)
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
mod tests {
    use super::*;
    use crate::time::ManualClock;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::sync::mpsc;
    use std::sync::{OnceLock, Weak};
    use std::time::Instant;

    type Log<K, V> = Arc<Mutex<Vec<(K, V)>>>;

    /// A callback that records what it is given, and the shared record.
    fn recorder<K: Send + 'static, V: Send + 'static>() -> (Log<K, V>, impl Fn(K, V) + Send + Sync)
    {
        let log: Log<K, V> = Arc::default();
        let sink = Arc::clone(&log);
        (log, move |k, v| sink.lock().unwrap().push((k, v)))
    }

    fn sorted<T: Ord + Clone>(log: &Mutex<Vec<T>>) -> Vec<T> {
        let mut items = log.lock().unwrap().clone();
        items.sort();
        items
    }

    // ---- RotatingMap ----

    #[test]
    fn new_bucket_count_out_of_range_returns_error() {
        for n in [0, 1, MAX_BUCKETS + 1] {
            let err = RotatingMap::<u32, u32>::new(n).unwrap_err();
            assert_eq!(err, RotatingError::InvalidBucketCount { requested: n });
            assert!(err.to_string().contains(&n.to_string()));
        }
        assert_eq!(RotatingMap::<u32, u32>::new(2).unwrap().bucket_count(), 2);
    }

    #[test]
    fn insert_key_in_older_bucket_moves_it_to_newest() {
        let mut map = RotatingMap::new(3).unwrap();
        assert_eq!(map.insert(1, "a"), None);
        map.rotate();
        map.rotate();
        assert_eq!(map.age(&1), Some(2));
        assert_eq!(map.insert(1, "b"), Some("a"));
        assert_eq!(map.age(&1), Some(0));
        assert_eq!(map.len(), 1);
        // Only one copy: the next rotation (which drops the old bucket) keeps the new value.
        assert_eq!(map.rotate(), 0);
        assert_eq!(map.get(&1), Some(&"b"));
    }

    #[test]
    fn insert_key_in_newest_bucket_replaces_value() {
        let mut map = RotatingMap::new(2).unwrap();
        map.insert("k", 1);
        assert_eq!(map.insert("k", 2), Some(1));
        assert_eq!(map.len(), 1);
        assert_eq!(map.get("k"), Some(&2));
    }

    #[test]
    fn rotate_passes_exactly_oldest_bucket_to_callback() {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(3, callback).unwrap();
        map.insert(1, 10);
        map.insert(2, 20);
        map.rotate();
        map.insert(3, 30);
        map.rotate();
        map.insert(4, 40);
        // Buckets, newest first: {4}, {3}, {1, 2}.
        assert_eq!(map.rotate(), 2);
        assert_eq!(sorted(&log), vec![(1, 10), (2, 20)]);
        assert_eq!(map.rotate(), 1);
        assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30)]);
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(&4), Some(&40));
    }

    #[test]
    fn rotate_callback_panic_still_passes_rest_then_raises() {
        let (log, record) = recorder();
        let mut calls = 0;
        let mut map = RotatingMap::with_callback(2, move |k: u32, v: u32| {
            record(k, v);
            calls += 1;
            assert!(calls > 1, "the callback fails on the first entry");
        })
        .unwrap();
        for k in 1..=4 {
            map.insert(k, k * 10);
        }
        map.rotate();
        let rotated = std::panic::catch_unwind(AssertUnwindSafe(|| map.rotate()));
        assert!(rotated.is_err(), "the callback's panic reaches the caller");
        assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30), (4, 40)]);
        assert!(map.is_empty());
    }

    #[test]
    fn entry_survives_n_minus_one_rotations_and_expires_on_nth() {
        for n in 2..=6 {
            let (log, callback) = recorder();
            let mut map = RotatingMap::with_callback(n, callback).unwrap();
            map.insert("k", n);
            for survived in 1..n {
                assert_eq!(map.rotate(), 0, "n = {n}");
                assert_eq!(map.get("k"), Some(&n), "n = {n} after {survived} rotations");
                assert_eq!(map.age("k"), Some(survived));
            }
            assert_eq!(map.rotate(), 1, "n = {n}");
            assert_eq!(map.get("k"), None);
            assert_eq!(*log.lock().unwrap(), vec![("k", n)]);
        }
    }

    #[test]
    fn reinsert_resets_lifetime() {
        let mut map = RotatingMap::new(3).unwrap();
        map.insert(7, ());
        map.rotate();
        map.rotate();
        map.insert(7, ());
        map.rotate();
        map.rotate();
        assert!(map.contains_key(&7), "re-inserted two rotations ago");
        map.rotate();
        assert!(!map.contains_key(&7));
    }

    #[test]
    fn get_does_not_refresh_but_touch_does() {
        let mut map = RotatingMap::new(2).unwrap();
        map.insert(1, 1);
        map.insert(2, 2);
        map.rotate();
        assert_eq!(map.get(&1), Some(&1));
        *map.get_mut(&1).unwrap() += 10;
        assert!(map.touch(&2));
        assert!(!map.touch(&3));
        map.rotate();
        assert_eq!(map.get(&1), None, "a read must not extend the lifetime");
        assert_eq!(map.get(&2), Some(&2), "touch restarts the lifetime");
        assert!(map.touch(&2), "already newest is still present");
        assert_eq!(map.age(&2), Some(0));
    }

    #[test]
    fn len_counts_entries_across_buckets() {
        let mut map = RotatingMap::new(4).unwrap();
        assert!(map.is_empty());
        for round in 0..4u32 {
            for k in 0..=round {
                map.insert(round * 100 + k, ());
            }
            map.rotate();
        }
        // Rounds 1, 2, 3 remain (2 + 3 + 4 entries); round 0 expired.
        assert_eq!(map.len(), 9);
        assert!(!map.is_empty());
        let mut keys: Vec<u32> = map.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        assert_eq!(keys, vec![100, 101, 200, 201, 202, 300, 301, 302, 303]);
    }

    #[test]
    fn remove_finds_key_in_any_bucket_without_callback() {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(3, callback).unwrap();
        map.insert(String::from("old"), 1);
        map.rotate();
        map.insert(String::from("new"), 2);
        assert_eq!(map.remove("old"), Some(1));
        assert_eq!(map.remove_entry("new"), Some((String::from("new"), 2)));
        assert_eq!(map.remove("new"), None);
        assert!(map.is_empty());
        for _ in 0..3 {
            map.rotate();
        }
        assert!(log.lock().unwrap().is_empty());
    }

    #[test]
    fn clear_drops_everything_without_callback() {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(2, callback).unwrap();
        map.insert(1, 1);
        map.rotate();
        map.insert(2, 2);
        map.clear();
        assert!(map.is_empty());
        assert_eq!(map.rotate() + map.rotate(), 0);
        assert!(log.lock().unwrap().is_empty());
    }

    /// A map of three buckets holding, newest first, {3, 4}, {2} and {0, 1}, each value ten times
    /// its key, recording what expires.
    fn three_generations() -> (Log<u32, u32>, RotatingMap<u32, u32>) {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(3, callback).unwrap();
        for (key, rotate_after) in [(0, false), (1, true), (2, true), (3, false), (4, false)] {
            map.insert(key, key * 10);
            if rotate_after {
                map.rotate();
            }
        }
        (log, map)
    }

    #[test]
    fn retain_drops_rejected_entries_in_every_bucket_without_callback() {
        let (log, mut map) = three_generations();
        map.retain(|&k, v| {
            *v += 1;
            k % 2 == 0
        });
        let mut left: Vec<(u32, u32, usize)> = map
            .iter()
            .map(|(&k, &v)| (k, v, map.age(&k).unwrap()))
            .collect();
        left.sort_unstable();
        assert_eq!(left, [(0, 1, 2), (2, 21, 1), (4, 41, 0)], "ages unchanged");
        assert!(log.lock().unwrap().is_empty(), "dropping is not expiry");
        assert_eq!(map.rotate(), 1);
        assert_eq!(*log.lock().unwrap(), [(0, 1)]);
    }

    #[test]
    fn iter_mut_changes_values_in_place_and_keeps_ages() {
        let (_, mut map) = three_generations();
        for (&k, v) in map.iter_mut() {
            *v = k + 100;
        }
        let ages: Vec<Option<usize>> = (0..5).map(|k| map.age(&k)).collect();
        assert_eq!(ages, [Some(2), Some(2), Some(1), Some(0), Some(0)]);
        assert!((0..5).all(|k| map.get(&k) == Some(&(k + 100))));
        assert_eq!(map.iter_mut().count(), 5);
    }

    #[test]
    fn rotate_take_returns_entries_and_bypasses_callback() {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(2, callback).unwrap();
        map.insert(1, 'a');
        map.insert(2, 'b');
        assert_eq!(map.rotate_take().len(), 0);
        let mut expired: Vec<_> = map.rotate_take().collect();
        expired.sort_unstable();
        assert_eq!(expired, vec![(1, 'a'), (2, 'b')]);
        assert!(log.lock().unwrap().is_empty());
        assert!(map.is_empty());
    }

    #[test]
    fn maps_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<RotatingMap<String, Vec<u8>>>();
        assert_send_sync::<TimeCacheMap<String, Vec<u8>>>();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u32),
        Remove(u8),
        Get(u8),
        Touch(u8),
        Rotate,
        /// Keeps the keys whose bit is set in the mask, adding one to their values.
        Retain(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..12u8, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => (0..12u8).prop_map(Op::Remove),
            1 => (0..12u8).prop_map(Op::Get),
            1 => (0..12u8).prop_map(Op::Touch),
            2 => Just(Op::Rotate),
            1 => any::<u16>().prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// The model: key -> (value, rotations done when last inserted or touched); an entry is
        /// alive while fewer than N rotations have happened since.
        #[test]
        fn random_ops_match_epoch_model(n in 2..6usize, ops in prop::collection::vec(op(), 0..80)) {
            let (log, callback) = recorder();
            let mut map = RotatingMap::with_callback(n, callback).unwrap();
            let mut model: HashMap<u8, (u32, usize)> = HashMap::new();
            let mut rotations = 0usize;
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let expected = model.insert(k, (v, rotations)).map(|(v, _)| v);
                        prop_assert_eq!(map.insert(k, v), expected);
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(map.remove(&k), model.remove(&k).map(|(v, _)| v));
                    }
                    Op::Get(k) => {
                        prop_assert_eq!(map.get(&k).copied(), model.get(&k).map(|&(v, _)| v));
                    }
                    Op::Touch(k) => {
                        let present = match model.get_mut(&k) {
                            Some(entry) => { entry.1 = rotations; true }
                            None => false,
                        };
                        prop_assert_eq!(map.touch(&k), present);
                    }
                    Op::Retain(mask) => {
                        let kept = |k: u8| mask >> k & 1 == 1;
                        model.retain(|&k, _| kept(k));
                        model.values_mut().for_each(|(v, _)| *v = v.wrapping_add(1));
                        log.lock().unwrap().clear();
                        map.retain(|&k, v| {
                            *v = v.wrapping_add(1);
                            kept(k)
                        });
                        prop_assert!(log.lock().unwrap().is_empty(), "dropping is not expiry");
                    }
                    Op::Rotate => {
                        rotations += 1;
                        let mut expected: Vec<(u8, u32)> = model
                            .iter()
                            .filter(|(_, &(_, epoch))| rotations - epoch >= n)
                            .map(|(&k, &(v, _))| (k, v))
                            .collect();
                        expected.sort_unstable();
                        model.retain(|_, &mut (_, epoch)| rotations - epoch < n);
                        log.lock().unwrap().clear();
                        prop_assert_eq!(map.rotate(), expected.len());
                        prop_assert_eq!(sorted(&log), expected);
                    }
                }
                prop_assert_eq!(map.len(), model.len());
                for k in 0..12u8 {
                    prop_assert_eq!(map.get(&k).copied(), model.get(&k).map(|&(v, _)| v));
                    prop_assert_eq!(map.age(&k), model.get(&k).map(|&(_, epoch)| rotations - epoch));
                }
            }
        }
    }

    // ---- TimeCacheMap, deterministic (manual clock) ----

    const HOUR: Duration = Duration::from_secs(3600);
    const NS: Duration = Duration::from_nanos(1);

    /// T = 2 h, N = 3, so I = 1 h and entries live (2 h, 3 h]. The cleaner's first wake-up is an
    /// hour of wall time away, so only the test moves the map.
    fn manual_map() -> (ManualClock, Log<u32, u32>, TimeCacheMap<u32, u32>) {
        let clock = ManualClock::new();
        let (log, callback) = recorder();
        let map = TimeCacheMap::builder(2 * HOUR)
            .buckets(3)
            .clock(clock.clone())
            .on_expire(callback)
            .build()
            .unwrap();
        (clock, log, map)
    }

    #[test]
    fn time_cache_callback_panic_still_passes_every_batch_then_raises() {
        let clock = ManualClock::new();
        let (log, record) = recorder();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let map = TimeCacheMap::builder(2 * HOUR)
            .buckets(3)
            .clock(clock.clone())
            .on_expire(move |k: u32, v: u32| {
                record(k, v);
                let first = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
                assert!(!first, "the callback fails on the first entry");
            })
            .build()
            .unwrap();
        map.insert(1, 10);
        map.insert(2, 20);
        clock.set(HOUR);
        map.insert(3, 30);
        // Two batches due at once: {1, 2}, then {3}; the failure is in the first.
        clock.set(4 * HOUR);
        let ticked = std::panic::catch_unwind(AssertUnwindSafe(|| map.tick()));
        assert!(ticked.is_err(), "the callback's panic reaches the caller");
        assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30)]);
        assert!(map.is_empty());
    }

    #[test]
    fn time_cache_builder_bad_settings_return_error() {
        let err = TimeCacheMap::<u32, u32>::builder(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err, RotatingError::ZeroExpiration);
        let err = TimeCacheMap::<u32, u32>::builder(HOUR)
            .buckets(1)
            .build()
            .unwrap_err();
        assert_eq!(err, RotatingError::InvalidBucketCount { requested: 1 });
    }

    #[test]
    fn time_cache_entry_inserted_at_rotation_lives_until_upper_bound() {
        let (clock, log, map) = manual_map();
        assert_eq!(map.rotation_interval(), HOUR);
        map.insert(1, 10);
        clock.set(3 * HOUR - NS);
        assert_eq!(map.tick(), 0);
        assert_eq!(map.get(&1), Some(10), "just under T * (1 + 1/(N-1)) = 3 h");
        assert!(log.lock().unwrap().is_empty());
        clock.set(3 * HOUR);
        assert_eq!(map.tick(), 1);
        assert_eq!(map.get(&1), None);
        assert_eq!(*log.lock().unwrap(), vec![(1, 10)]);
    }

    #[test]
    fn time_cache_entry_inserted_before_rotation_lives_exactly_expiration() {
        let (clock, log, map) = manual_map();
        let inserted = HOUR - NS; // the last instant before rotation 1
        clock.set(inserted);
        map.insert(1, 10);
        clock.set(inserted + 2 * HOUR);
        assert!(map.contains_key(&1), "age exactly T must still be present");
        clock.set(inserted + 2 * HOUR + NS);
        assert!(!map.contains_key(&1), "rotation 3 is due at 3 h");
        assert_eq!(*log.lock().unwrap(), vec![(1, 10)]);
    }

    #[test]
    fn time_cache_every_operation_catches_up_without_tick() {
        let (clock, log, map) = manual_map();
        map.insert(1, 10);
        map.insert(2, 20);
        clock.set(10 * HOUR);
        // An insert after a long pause must land in a fresh generation, not an overdue one.
        map.insert(3, 30);
        assert_eq!(map.len(), 1);
        assert_eq!(sorted(&log), vec![(1, 10), (2, 20)]);
        clock.set(12 * HOUR);
        assert_eq!(
            map.get(&3),
            Some(30),
            "inserted at 10 h, rotation 10 just done"
        );
        clock.set(13 * HOUR);
        assert_eq!(map.tick(), 1);
        assert_eq!(map.tick(), 0);
    }

    #[test]
    fn time_cache_reinsert_resets_lifetime_but_get_does_not() {
        let (clock, _log, map) = manual_map();
        map.insert(1, 10);
        map.insert(2, 20);
        clock.set(HOUR + HOUR / 2);
        assert_eq!(map.insert(1, 11), Some(10));
        assert_eq!(map.get(&2), Some(20));
        clock.set(3 * HOUR);
        assert_eq!(map.get(&1), Some(11));
        assert_eq!(map.get(&2), None, "get must not have refreshed");
        clock.set(4 * HOUR - NS);
        assert_eq!(map.get(&1), Some(11));
        clock.set(4 * HOUR);
        assert_eq!(map.get(&1), None);
    }

    #[test]
    fn time_cache_touch_remove_and_clear_behave() {
        let (clock, log, map) = manual_map();
        map.insert(1, 10);
        map.insert(2, 20);
        map.insert(3, 30);
        clock.set(2 * HOUR);
        assert!(map.touch(&1));
        assert_eq!(map.remove(&2), Some(20));
        clock.set(3 * HOUR);
        assert_eq!(map.len(), 1, "3 expired, 1 touched at 2 h");
        assert_eq!(*log.lock().unwrap(), vec![(3, 30)]);
        map.clear();
        assert!(map.is_empty());
        clock.set(10 * HOUR);
        assert_eq!(map.tick(), 0);
        assert_eq!(
            *log.lock().unwrap(),
            vec![(3, 30)],
            "remove and clear are not expiry"
        );
    }

    #[test]
    fn time_cache_retain_drops_rejected_entries_without_callback() {
        let (clock, log, map) = manual_map();
        for key in 0..6 {
            map.insert(key, key * 10);
        }
        clock.set(HOUR);
        map.insert(6, 60);
        map.retain(|&k, v| {
            *v += 1;
            k % 3 == 0
        });
        assert_eq!(
            (map.len(), map.get(&0), map.get(&3)),
            (3, Some(1), Some(31))
        );
        assert_eq!(map.get(&6), Some(61));
        clock.set(3 * HOUR);
        assert_eq!(
            map.tick(),
            2,
            "the survivors inserted at 0 expire on schedule"
        );
        assert_eq!(sorted(&log), [(0, 1), (3, 31)]);
    }

    #[test]
    fn time_cache_callback_using_map_does_not_deadlock() {
        let clock = ManualClock::new();
        let slot: Arc<OnceLock<Weak<TimeCacheMap<u32, u32>>>> = Arc::default();
        let in_callback = Arc::clone(&slot);
        let map = Arc::new(
            TimeCacheMap::builder(2 * HOUR)
                .clock(clock.clone())
                .on_expire(move |k, v| {
                    if let Some(map) = in_callback.get().and_then(Weak::upgrade) {
                        // Re-arm with a bumped value; would deadlock if called under the lock.
                        map.insert(k, v + 1);
                    }
                })
                .build()
                .unwrap(),
        );
        slot.set(Arc::downgrade(&map)).unwrap();
        map.insert(1, 0);
        clock.set(3 * HOUR);
        assert_eq!(map.tick(), 1);
        assert_eq!(map.get(&1), Some(1));
        clock.set(6 * HOUR - NS);
        assert_eq!(
            map.get(&1),
            Some(1),
            "re-inserted at 3 h, so alive until 6 h"
        );
        clock.set(6 * HOUR);
        assert_eq!(map.tick(), 1);
        assert_eq!(map.get(&1), Some(2));
    }

    #[test]
    fn time_cache_key_drop_using_map_does_not_deadlock() {
        type Hook = Arc<OnceLock<Weak<TimeCacheMap<Key, u32>>>>;
        /// A key whose `Drop` reads the map, as the module docs allow.
        struct Key(u32, Hook);
        impl PartialEq for Key {
            fn eq(&self, other: &Self) -> bool {
                self.0 == other.0
            }
        }
        impl Eq for Key {}
        impl Hash for Key {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.hash(state);
            }
        }
        impl Drop for Key {
            fn drop(&mut self) {
                if let Some(map) = self.1.get().and_then(Weak::upgrade) {
                    map.len();
                }
            }
        }

        let clock = ManualClock::new();
        let hook: Hook = Arc::default();
        let map = Arc::new(
            TimeCacheMap::builder(2 * HOUR)
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        hook.set(Arc::downgrade(&map)).unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        let worker = Arc::clone(&map);
        // On a thread of its own: a deadlock there fails the test instead of hanging it.
        std::thread::spawn(move || {
            let key = |k| Key(k, Arc::clone(&hook));
            worker.insert(key(1), 1);
            done_tx.send("insert, new").unwrap();
            // The given key or the stored one is dropped: in the newest bucket, then an older one.
            worker.insert(key(1), 2);
            done_tx.send("insert, key in the newest bucket").unwrap();
            clock.set(HOUR);
            worker.insert(key(1), 3);
            done_tx.send("insert, key in an older bucket").unwrap();
            worker.remove(&Key(1, Hook::default()));
            done_tx.send("remove").unwrap();
            worker.insert(key(2), 2);
            worker.retain(|_, _| false);
            done_tx.send("retain").unwrap();
        });
        let mut finished = Vec::new();
        while let Ok(step) = done_rx.recv_timeout(Duration::from_secs(5)) {
            finished.push(step);
        }
        assert_eq!(
            finished,
            [
                "insert, new",
                "insert, key in the newest bucket",
                "insert, key in an older bucket",
                "remove",
                "retain"
            ]
        );
    }

    proptest! {
        /// For any T and N, an entry inserted at any time is present at age T and at age
        /// (N - 1)·I, gone at age N·I, where I = ⌈T / (N - 1)⌉ lies within the stated bounds.
        #[test]
        fn time_cache_lifetime_window_holds(
            expiration in 1..1_000_000u64,
            n in 2..6usize,
            inserted in 0..3_000_000u64,
        ) {
            let clock = ManualClock::new();
            let map: TimeCacheMap<u8, ()> = TimeCacheMap::builder(Duration::from_nanos(expiration))
                .buckets(n)
                .clock(clock.clone())
                .build()
                .unwrap();
            let interval = duration_nanos(map.rotation_interval());
            let gaps = n as u64 - 1;
            prop_assert!(gaps * interval >= expiration);
            prop_assert!(n as u64 * interval < expiration * n as u64 / gaps + n as u64);
            clock.set(Duration::from_nanos(inserted));
            map.insert(0, ());
            let at = |age: u64| clock.set(Duration::from_nanos(inserted + age));
            at(expiration);
            prop_assert!(map.contains_key(&0));
            // Gone exactly when the generation's N-th rotation is due.
            let dies = (inserted / interval + n as u64) * interval;
            at(dies - inserted - 1);
            prop_assert!(map.contains_key(&0));
            prop_assert!(dies - inserted > gaps * interval);
            prop_assert!(dies - inserted <= n as u64 * interval);
            at(dies - inserted);
            prop_assert!(!map.contains_key(&0));
        }
    }

    // ---- TimeCacheMap, real thread ----

    fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        done()
    }

    #[test]
    fn cleaner_thread_expires_untouched_entry() {
        let log: Log<(u32, u32), Option<String>> = Arc::default();
        let sink = Arc::clone(&log);
        let map = TimeCacheMap::builder(Duration::from_millis(50))
            .buckets(3)
            .on_expire(move |k, v| {
                let thread = std::thread::current().name().map(String::from);
                sink.lock().unwrap().push(((k, v), thread));
            })
            .build()
            .unwrap();
        let before = Instant::now();
        map.insert(1, 10);
        // Watch only the callback: touching the map would expire the entry on this thread.
        assert!(poll_until(Duration::from_secs(5), || !log
            .lock()
            .unwrap()
            .is_empty()));
        assert!(
            before.elapsed() >= Duration::from_millis(50),
            "expired before T"
        );
        let expired = log.lock().unwrap().clone();
        assert_eq!(expired, vec![((1, 10), Some(CLEANER_NAME.to_string()))]);
        assert!(map.is_empty());
    }

    #[test]
    fn drop_stops_and_joins_cleaner_promptly() {
        let token = Arc::new(());
        let held = Arc::clone(&token);
        let map: TimeCacheMap<u32, u32> = TimeCacheMap::builder(Duration::from_secs(600))
            .on_expire(move |_, _| drop(Arc::clone(&held)))
            .build()
            .unwrap();
        map.insert(1, 1);
        assert_eq!(Arc::strong_count(&token), 2);
        let start = Instant::now();
        drop(map);
        // The cleaner was sleeping a 300 s interval; drop must wake it, not wait.
        assert!(start.elapsed() < Duration::from_secs(10));
        // Joined: the thread's handle on the shared state, hence the callback, is gone.
        assert_eq!(Arc::strong_count(&token), 1);
    }

    #[test]
    fn drop_of_last_handle_inside_callback_does_not_join_itself() {
        let token = Arc::new(());
        let held = Arc::clone(&token);
        let slot: Arc<OnceLock<Weak<TimeCacheMap<u32, u32>>>> = Arc::default();
        let in_callback = Arc::clone(&slot);
        let (holding_tx, holding_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let go_rx = Mutex::new(go_rx);
        let (result_tx, result_rx) = mpsc::channel();
        let map = Arc::new(
            TimeCacheMap::builder(Duration::from_millis(20))
                .buckets(2)
                .on_expire(move |_, _| {
                    let _keep = &held;
                    let Some(map) = in_callback.get().and_then(Weak::upgrade) else {
                        return;
                    };
                    holding_tx.send(()).unwrap();
                    go_rx.lock().unwrap().recv().unwrap();
                    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        drop(map);
                    }));
                    result_tx.send(dropped.is_ok()).unwrap();
                })
                .build()
                .unwrap(),
        );
        slot.set(Arc::downgrade(&map)).unwrap();
        map.insert(1, 1);
        holding_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        drop(map);
        go_tx.send(()).unwrap();
        assert_eq!(result_rx.recv_timeout(Duration::from_secs(5)), Ok(true));
        // The thread then sees the stop flag and ends, freeing the callback.
        assert!(poll_until(Duration::from_secs(5), || Arc::strong_count(
            &token
        ) == 1));
    }
}
