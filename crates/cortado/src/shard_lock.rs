//! The read-write lock of each shard of the concurrent cache: readers count themselves on a
//! cache line of their own thread's, so threads that read one shard trade no cache line.
//!
//! [`ShardLock`] hands out shared [`ReadGuard`]s and exclusive [`WriteGuard`]s, as
//! `std::sync::RwLock` does, but without poisoning; a writer keeps new readers out and waits for
//! those in flight, and [`try_write`](ShardLock::try_write), as `std`'s, waits for nobody.
//!
//! # Design
//!
//! Even a shared lock writes the lock's word, and under Zipf-skewed traffic the shard of the
//! hottest keys takes a large share of all reads: with `std`'s `RwLock`, two threads reading it
//! moved that word's line between their cores on nearly every read. Here each lock keeps
//! [`reader_slots`] counters, one per CPU, each on a 128-byte line of its own, and a thread
//! counts its reads in the counter its index (handed out at its first read) falls on
//! (measurements: `docs/decisions/0002-per-cpu-reader-counters.md`):
//!
//! - **A reader** adds one to its counter, then reads the lock's state; if no writer holds the
//!   lock, it is in, and it subtracts one when done. Threads whose indices share a counter only
//!   share its line; the count stays right.
//! - **A writer** sets the state's writer bit with one compare-and-swap, then waits until every
//!   counter reads zero. Both sides use sequentially consistent operations on the counters and
//!   the state, so a reader and a writer cannot both miss each other (Dekker's pattern): either
//!   the writer sees the reader's count, or the reader sees the writer's bit and backs out.
//!   The other accesses to them are sequentially consistent too, where on x86 that costs
//!   nothing (a load, or a locked instruction that any ordering needs).
//! - **Unlocking** is a plain release store of zero, not a locked instruction, which would wait
//!   for the stores the write left in flight (`docs/decisions/0003-unlock-with-plain-store.md`).
//!   That leaves no room for a waiting bit: a waiter that set one between the writer's last look
//!   and its store would sleep through the release. So nobody sleeps to be woken. **A waiter**,
//!   a reader that backs out or a writer that finds the bit set, looks again after [`SPINS`]
//!   spins, then [`YIELDS`] yields, then sleeps of [`FIRST_NAP`] doubling up to [`MAX_NAP`], so
//!   one that waited out a long write notices the release at most a millisecond late. A writer
//!   waiting for the readers in flight spins, then yields, but never sleeps: new readers wait on
//!   it, and those in flight hold the shard for a look-up and a clone.
//!
//!   The release store is the one access that is not sequentially consistent, and it mixes with
//!   the others on the state. C++20 still rules out a reader entering under a writer: a
//!   reader's load that reads a zero written before a writer's compare-and-swap precedes that
//!   swap in the single order of sequentially consistent operations, so the writer's later look
//!   at the counter sees the reader's count. Miri's weak-memory emulation broke that rule where
//!   such accesses mixed (rust-lang/miri#5104); the nightly that CI pins (see `.ci/miri`) has
//!   the fix.
//!
//! A read costs two locked instructions, on a line its core keeps; a write costs one, plus a
//! read of every counter's line. Ending a read with a plain store instead (a reader slot per
//! thread, or a claimed counter) was tried and not kept
//! (`docs/decisions/0004-claimed-reader-slot.md`).
//!
//! # References
//!
//! 1. W. C. Hsieh, W. E. Weihl: "Scalable Reader-Writer Locks for Parallel Systems", IPPS 1992
//!    (per-processor reader counts).
//! 2. D. Dice, A. Kogan: "BRAVO: Biased Locking for Reader-Writer Locks", USENIX ATC 2019.

// The one module with `unsafe`: the guards' access to the value (see each block).
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use super::shim::atomic::{AtomicU32, Ordering};
use super::shim::thread;

/// [`ShardLock::state`] while a writer holds the lock (or is waiting for the readers in flight).
const WRITER: u32 = 1;
/// Looks a waiting thread takes between spins before it starts to yield: a short critical
/// section (a look-up, a clone) ends within them.
const SPINS: u32 = 100;
/// Looks a waiting thread takes between yields before it starts to sleep: a write that
/// evicts may take longer than the spins.
const YIELDS: u32 = 20;
/// The first sleep between looks, short enough to catch a write ending soon after the yields;
/// each sleep doubles it, up to [`MAX_NAP`].
const FIRST_NAP: Duration = Duration::from_micros(10);
/// The longest sleep between looks: how late a thread that waited that long may notice the lock
/// came free.
const MAX_NAP: Duration = Duration::from_millis(1);

/// A counter alone on its cache lines (two, for the adjacent-line prefetcher).
#[repr(align(128))]
struct Padded(AtomicU32);

/// A read-write lock with reader counters on lines of their own; see the [module docs](self).
pub(crate) struct ShardLock<T> {
    /// [`WRITER`], or zero.
    state: AtomicU32,
    /// One counter per slot; a power of two of them.
    readers: Box<[Padded]>,
    value: UnsafeCell<T>,
}

// SAFETY: as `std::sync::RwLock`: the lock hands `&mut T` to one thread at a time, so `T` must
// be `Send` for the lock to be, and `&T` to several at once, so also `Sync` for it to be shared.
unsafe impl<T: Send> Send for ShardLock<T> {}
// SAFETY: see above.
unsafe impl<T: Send + Sync> Sync for ShardLock<T> {}

impl<T> ShardLock<T> {
    /// A lock with `slots` reader counters (rounded up to a power of two).
    pub(crate) fn new(value: T, slots: usize) -> Self {
        let slots = slots.next_power_of_two();
        Self {
            state: AtomicU32::new(0),
            readers: (0..slots).map(|_| Padded(AtomicU32::new(0))).collect(),
            value: UnsafeCell::new(value),
        }
    }

    /// Heap bytes of the reader counters.
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.readers)
    }

    /// Shared access, counted in this thread's counter; waits while a writer holds the lock.
    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_, T> {
        self.read_as(thread_slot())
    }

    /// Shared access, counted in counter `slot` (modulo their number).
    #[inline]
    pub(crate) fn read_as(&self, slot: usize) -> ReadGuard<'_, T> {
        let counter = &self.readers[slot & (self.readers.len() - 1)].0;
        loop {
            // The guards are the crate's own and never leaked, so a count cannot reach 2^32
            // (and wrap to zero under its readers). Checked in debug builds only: in release
            // builds the check cost every read instructions (decision 0002).
            let before = counter.fetch_add(1, Ordering::SeqCst);
            debug_assert!(before < u32::MAX, "a reader count wrapped");
            if self.state.load(Ordering::SeqCst) & WRITER == 0 {
                return ReadGuard {
                    lock: self,
                    counter,
                    _not_send: PhantomData,
                };
            }
            counter.fetch_sub(1, Ordering::SeqCst);
            self.wait_while_written();
        }
    }

    /// Waits until no writer holds the lock (it may be taken again by the time this returns).
    #[cold]
    #[inline(never)]
    fn wait_while_written(&self) {
        let mut backoff = Backoff::default();
        while self.state.load(Ordering::SeqCst) & WRITER != 0 {
            backoff.wait();
        }
    }

    /// Exclusive access; waits for the writer holding the lock and the readers in flight.
    #[inline]
    pub(crate) fn write(&self) -> WriteGuard<'_, T> {
        if self
            .state
            .compare_exchange(0, WRITER, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            self.write_contended();
        }
        self.wait_for_readers();
        WriteGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    #[cold]
    #[inline(never)]
    fn write_contended(&self) {
        loop {
            self.wait_while_written();
            if self
                .state
                .compare_exchange(0, WRITER, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Exclusive access if nobody holds the lock, without waiting: `None` while a writer holds
    /// it or a reader is in flight (perhaps this very thread, whose read it would wait for
    /// forever).
    pub(crate) fn try_write(&self) -> Option<WriteGuard<'_, T>> {
        self.state
            .compare_exchange(0, WRITER, Ordering::SeqCst, Ordering::SeqCst)
            .ok()?;
        if self
            .readers
            .iter()
            .any(|counter| counter.0.load(Ordering::SeqCst) != 0)
        {
            // Readers that saw the bit meanwhile back out and wait for it to clear.
            self.unlock_write();
            return None;
        }
        Some(WriteGuard {
            lock: self,
            _not_send: PhantomData,
        })
    }

    /// With the writer bit set: waits until every counter reads zero.
    #[inline]
    fn wait_for_readers(&self) {
        for counter in self.readers.iter() {
            let mut backoff = Backoff::default();
            while counter.0.load(Ordering::SeqCst) != 0 {
                // Never asleep: new readers wait on this writer, and those in flight leave soon.
                if !backoff.spin() {
                    thread::yield_now();
                }
            }
        }
    }

    /// A plain store: nobody sleeps on the lock to be woken (see the module docs).
    #[inline]
    fn unlock_write(&self) {
        self.state.store(0, Ordering::Release);
    }
}

/// How a thread waits for a lock's state or a counter to change: spinning, then yielding, then
/// sleeping ever longer, up to [`MAX_NAP`].
#[derive(Default)]
struct Backoff {
    looks: u32,
    /// The last sleep; zero before the first.
    nap: Duration,
}

impl Backoff {
    /// Spins once, unless this wait has spun [`SPINS`] times already (then false).
    fn spin(&mut self) -> bool {
        let spun = self.looks < SPINS;
        if spun {
            self.looks += 1;
            std::hint::spin_loop();
        }
        spun
    }

    /// Waits a little longer than the last time.
    fn wait(&mut self) {
        if self.spin() {
            return;
        }
        if self.looks < SPINS + YIELDS {
            self.looks += 1;
            thread::yield_now();
        } else {
            self.nap = (self.nap * 2).clamp(FIRST_NAP, MAX_NAP);
            thread::sleep(self.nap);
        }
    }
}

/// Shared access to a [`ShardLock`]'s value; not `Send`, as `std`'s guards are not.
pub(crate) struct ReadGuard<'a, T> {
    lock: &'a ShardLock<T>,
    counter: &'a AtomicU32,
    _not_send: PhantomData<*const ()>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard's count, made before it saw no writer bit, keeps every writer
        // waiting (and so every `&mut T`) until the guard is dropped.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Exclusive access to a [`ShardLock`]'s value.
pub(crate) struct WriteGuard<'a, T> {
    lock: &'a ShardLock<T>,
    _not_send: PhantomData<*const ()>,
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the writer bit, held by this guard alone, and the counters it saw at zero keep
        // every other guard out until this one is dropped.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.unlock_write();
    }
}

/// The reader counters each lock gets: one per CPU, as a power of two, at most 32 (a thread
/// shares its counter with the threads whose index is equal modulo that).
pub(crate) fn reader_slots() -> usize {
    static SLOTS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SLOTS.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        cpus.next_power_of_two().min(32)
    })
}

/// Indices handed to threads, in the order of their first read.
static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

std::thread_local! {
    /// This thread's index, or `usize::MAX` before its first read.
    static THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// This thread's index. The thread local has no destructor, so it stays readable from other
/// thread locals' destructors (a cache used from one); were it ever gone, counter 0 would do,
/// shared with other threads.
#[inline]
fn thread_slot() -> usize {
    THREAD
        .try_with(|slot| {
            let mut index = slot.get();
            if index == usize::MAX {
                index = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                slot.set(index);
            }
            index
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::shim::{model, model_threads, thread, Arc, EXPLORES_SCHEDULES};
    use super::*;

    /// Rounds per thread: the model checker explores schedules instead, and Miri is slow.
    const ROUNDS: u64 = if EXPLORES_SCHEDULES || cfg!(miri) {
        3
    } else {
        1_000
    };

    /// [`model_threads`], and outside the model checker with a deadline, so that a lost wake-up
    /// fails the test instead of hanging it (the model checker reports those as deadlocks).
    fn threads(body: impl Fn() + Send + Sync + 'static) {
        if EXPLORES_SCHEDULES {
            model_threads(body);
            return;
        }
        let (done, finished) = std::sync::mpsc::channel();
        let runner = std::thread::spawn(move || {
            model_threads(body);
            let _ = done.send(());
        });
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            finished.recv_timeout(Duration::from_secs(60))
        {
            panic!("the test's threads hung for a minute: a lost wake-up or a deadlock");
        }
        if let Err(panic) = runner.join() {
            std::panic::resume_unwind(panic);
        }
    }

    /// A writer sets both halves in two steps, with a chance for another thread to run in
    /// between; a reader checks that it never sees them differ.
    fn write_pair(lock: &ShardLock<(u64, u64)>, value: u64) {
        let mut pair = lock.write();
        pair.0 = value;
        thread::yield_now();
        pair.1 = value;
    }

    fn read_pair(lock: &ShardLock<(u64, u64)>, slot: usize) -> u64 {
        let pair = lock.read_as(slot);
        let first = pair.0;
        thread::yield_now();
        assert_eq!(first, pair.1, "a reader saw a write half done");
        first
    }

    #[test]
    fn write_with_readers_and_writers_excludes_them() {
        threads(|| {
            let lock = Arc::new(ShardLock::new((0, 0), 2));
            let threads: Vec<_> = (0..4)
                .map(|t| {
                    let lock = lock.clone();
                    thread::spawn(move || {
                        for round in 1..=ROUNDS {
                            if t % 2 == 0 {
                                write_pair(&lock, round);
                            } else {
                                // Slots 1 and 3 share a counter of the two.
                                read_pair(&lock, t);
                            }
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            let pair = lock.read_as(0);
            assert_eq!(pair.0, ROUNDS);
            assert_eq!(pair.1, ROUNDS);
        });
    }

    #[test]
    fn write_counts_every_increment_of_every_writer() {
        threads(|| {
            let lock = Arc::new(ShardLock::new(0u64, 4));
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let lock = lock.clone();
                    thread::spawn(move || {
                        for _ in 0..ROUNDS {
                            let mut count = lock.write();
                            let seen = *count;
                            thread::yield_now();
                            *count = seen + 1;
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            assert_eq!(*lock.read_as(0), 3 * ROUNDS);
        });
    }

    #[test]
    fn read_while_read_in_any_slot_shares() {
        model(|| {
            let lock = ShardLock::new(5, 2);
            let first = lock.read_as(0);
            let same_slot = lock.read_as(0);
            let other_slot = lock.read_as(1);
            assert_eq!(*first + *same_slot + *other_slot, 15);
            // Dropped in another order than taken: every count returns to zero.
            drop(first);
            drop(other_slot);
            drop(same_slot);
            assert!(lock
                .readers
                .iter()
                .all(|counter| counter.0.load(Ordering::SeqCst) == 0));
            *lock.try_write().expect("no reader is left") = 6;
            assert_eq!(*lock.read_as(1), 6);
        });
    }

    #[test]
    fn try_write_while_written_none_after_release_some() {
        model(|| {
            let lock = ShardLock::new(1, 2);
            let mut guard = lock.write();
            assert!(lock.try_write().is_none(), "a second writer got in");
            *guard = 2;
            drop(guard);
            let mut guard = lock.try_write().expect("the lock is free");
            *guard += 1;
            drop(guard);
            assert_eq!(*lock.read(), 3);
        });
    }

    #[test]
    fn write_while_read_elsewhere_waits_for_the_reader() {
        threads(|| {
            let lock = Arc::new(ShardLock::new(0u64, 2));
            let reader = lock.read_as(0);
            let writer = {
                let lock = lock.clone();
                thread::spawn(move || *lock.write() = 1)
            };
            // However long the reader holds on, the value stays as it saw it.
            for _ in 0..3 {
                thread::yield_now();
                assert_eq!(*reader, 0, "a writer got in while a reader held the lock");
            }
            drop(reader);
            writer.join().unwrap();
            assert_eq!(*lock.read_as(1), 1);
        });
    }

    #[test]
    fn read_while_written_waits_then_sees_the_write() {
        threads(|| {
            let lock = Arc::new(ShardLock::new((0, 0), 2));
            let guard = lock.write();
            let reader = {
                let lock = lock.clone();
                thread::spawn(move || read_pair(&lock, 1))
            };
            let mut guard = guard;
            guard.0 = 7;
            thread::yield_now();
            guard.1 = 7;
            drop(guard);
            assert_eq!(reader.join().unwrap(), 7);
        });
    }

    #[test]
    fn try_write_while_read_elsewhere_none_until_the_reader_ends() {
        threads(|| {
            let lock = Arc::new(ShardLock::new(0u64, 2));
            let reader = lock.read_as(0);
            let writer = {
                let lock = lock.clone();
                thread::spawn(move || {
                    if let Some(mut value) = lock.try_write() {
                        *value = 1;
                    }
                })
            };
            for _ in 0..3 {
                thread::yield_now();
                assert_eq!(*reader, 0, "try_write got in while a reader held the lock");
            }
            drop(reader);
            writer.join().unwrap();
            assert!(lock.try_write().is_some(), "no reader is left");
        });
    }

    #[test]
    fn try_write_while_this_thread_reads_none_at_once() {
        // `std`'s `try_write` fails at once here; waiting would wait for this very read.
        threads(|| {
            let lock = Arc::new(ShardLock::new(0u64, 2));
            let reader = lock.read_as(1);
            assert!(lock.try_write().is_none());
            drop(reader);
            // A thread for the model checker's second scheduler, which wants one.
            let writer_lock = lock.clone();
            thread::spawn(move || *writer_lock.write() = 2)
                .join()
                .unwrap();
            assert_eq!(
                *lock.read_as(1),
                2,
                "the failed try left the writer bit set"
            );
        });
    }

    /// A write long enough to send its waiters to sleep: a reader and a writer waiting on it
    /// still get in once it ends (nobody wakes them; they look again), and each sees it whole.
    #[test]
    fn write_held_past_the_spins_waiters_get_in_after_release() {
        threads(|| {
            let lock = Arc::new(ShardLock::new((0u64, 0u64), 2));
            let mut guard = lock.write();
            let waiters: Vec<_> = (0..2)
                .map(|t| {
                    let lock = lock.clone();
                    thread::spawn(move || {
                        if t == 0 {
                            read_pair(&lock, 1)
                        } else {
                            let mut pair = lock.write();
                            assert_eq!(pair.0, 9, "the waiting writer got in before the release");
                            *pair = (10, 10);
                            10
                        }
                    })
                })
                .collect();
            // Past the spins and yields of both waiters, well into their sleeps (under the
            // model checker, a chance for them to run).
            thread::sleep(Duration::from_millis(20));
            *guard = (9, 9);
            drop(guard);
            for waiter in waiters {
                let seen = waiter.join().unwrap();
                assert!(seen == 9 || seen == 10, "saw {seen}");
            }
            assert_eq!(*lock.read_as(0), (10, 10));
        });
    }

    /// Real threads and no yields: exclusion checked on the hardware's own interleavings too.
    #[test]
    fn write_with_spinning_readers_on_real_threads_excludes_them() {
        if EXPLORES_SCHEDULES || cfg!(miri) {
            return;
        }
        use std::sync::atomic::AtomicBool;
        let lock = std::sync::Arc::new(ShardLock::new((0u64, 0u64), 2));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|slot| {
                let (lock, stop) = (lock.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let pair = lock.read_as(slot);
                        let first = std::hint::black_box(pair.0);
                        for _ in 0..50 {
                            std::hint::spin_loop();
                        }
                        assert_eq!(first, std::hint::black_box(pair.1), "a torn read");
                    }
                })
            })
            .collect();
        for round in 1..=20_000u64 {
            let mut pair = lock.write();
            pair.0 = round;
            for _ in 0..50 {
                std::hint::spin_loop();
            }
            pair.1 = round;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
    }
}
