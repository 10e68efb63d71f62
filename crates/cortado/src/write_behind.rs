//! Write-behind: writes acknowledged at once and flushed to a backing store in batches by a
//! background writer, with a bounded queue, retries, a flush at shutdown, and a listener for
//! the writes that finally failed, so that none is lost silently.
//!
//! A [`WriteBehind`] sits beside a cache: the application writes the cache, then hands the
//! same write to [`put`](WriteBehind::put) or [`delete`](WriteBehind::delete), which return
//! once it is queued. A thread of its own takes up to `batch_size` queued writes at a time
//! (waiting up to `max_delay` for a batch to fill), keeps the last write of each key, and calls
//! the flush function with the batch. A flush that fails is retried `retries` times, waiting
//! `backoff` before the first retry and twice as long before each next one (up to
//! `max_backoff`); a batch that still fails goes to the failure listener with the last error.
//! [`flush`](WriteBehind::flush) waits until every write queued before it has been flushed or
//! reported; dropping the `WriteBehind` (or [`shutdown`](WriteBehind::shutdown)) flushes what
//! is queued and stops the thread.
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//! use cortado::write_behind::{Write, WriteBehind};
//!
//! let store = Arc::new(Mutex::new(HashMap::new()));
//! let target = store.clone();
//! let writer = WriteBehind::builder()
//!     .batch_size(100)
//!     .build(
//!         move |batch: &[(u32, Write<String>)]| {
//!             let mut store = target.lock().unwrap();
//!             for (key, write) in batch {
//!                 match write {
//!                     Write::Put(value) => store.insert(*key, value.clone()),
//!                     Write::Delete => store.remove(key),
//!                 };
//!             }
//!             Ok::<(), String>(())
//!         },
//!         |failed, failure| eprintln!("{} writes lost: {failure}", failed.len()),
//!     )
//!     .unwrap();
//! writer.put(1, "one".to_string());
//! writer.flush();
//! assert_eq!(store.lock().unwrap()[&1], "one");
//! ```
//!
//! # Design
//!
//! - **Bounded queue, back-pressure.** A `std::sync::mpsc::sync_channel` of `queue_capacity`
//!   writes: when the store falls behind, `put` blocks until the writer takes from the queue
//!   (or [`try_put`](WriteBehind::try_put) hands the write back), so memory never grows
//!   without bound. The default, 10,000, holds a few batches while one is retried.
//! - **Batches** of at most `batch_size` (default 100: one round trip carries many writes; a
//!   batch that fails is retried whole), closed after `max_delay` (default 10 ms: a write
//!   reaches the store soon after a quiet period). Of several writes to one key in a batch
//!   only the last is flushed, in the position of the key's first write.
//! - **Retries** with exponential back-off (default 3 retries from 100 ms, at most 10 s):
//!   a transient outage is ridden out, a long one does not keep the queue blocked for ever.
//!   While a batch is retried, writes wait in the queue (and `put` blocks once it is full).
//! - **Nothing lost silently.** Every queued write is flushed or handed to the failure
//!   listener, also at shutdown; the listener is a required argument. A flush function that
//!   panics counts as a failed attempt.
//!
//! The cache and the store can disagree while writes are queued, and for good when a write
//! finally fails: the listener is where to invalidate the cache's entry, or to log.
//!
//! # References
//!
//! 1. B. Manes: Caffeine's write-behind example (`examples/write-behind`), batching with
//!    RxJava buffers.
//! 2. Oracle Coherence: "Write-Behind Caching" (a queue, a delay, coalesced writes).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One write for the backing store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write<V> {
    /// Store this value.
    Put(V),
    /// Delete the key.
    Delete,
}

/// Why a batch finally failed: the flush function's last error, or its panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushFailure<E> {
    /// The flush function returned this error on the last attempt.
    Error(E),
    /// The flush function panicked on the last attempt.
    Panicked,
}

impl<E: fmt::Display> fmt::Display for FlushFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error(error) => error.fmt(f),
            Self::Panicked => f.write_str("the flush function panicked"),
        }
    }
}

/// Why [`WriteBehindBuilder::build`] refused its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBehindError {
    /// `queue_capacity` and `batch_size` must be at least 1.
    ZeroSize,
    /// The writer thread could not be started.
    Spawn(String),
}

impl fmt::Display for WriteBehindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroSize => f.write_str("queue_capacity and batch_size must be at least 1"),
            Self::Spawn(error) => write!(f, "the write-behind thread did not start: {error}"),
        }
    }
}

impl std::error::Error for WriteBehindError {}

/// What the queue carries.
enum Message<K, V> {
    Write(K, Write<V>),
    /// Flush everything queued before, then signal.
    Flush(SyncSender<()>),
}

/// Settings of a [`WriteBehind`]; see the [module docs](self) for the defaults.
#[derive(Debug, Clone)]
pub struct WriteBehindBuilder {
    queue_capacity: usize,
    batch_size: usize,
    max_delay: Duration,
    retries: u32,
    backoff: Duration,
    max_backoff: Duration,
}

impl Default for WriteBehindBuilder {
    fn default() -> Self {
        Self {
            queue_capacity: 10_000,
            batch_size: 100,
            max_delay: Duration::from_millis(10),
            retries: 3,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl WriteBehindBuilder {
    /// The most writes queued; a `put` beyond it waits.
    pub fn queue_capacity(mut self, writes: usize) -> Self {
        self.queue_capacity = writes;
        self
    }

    /// The most writes in one call of the flush function.
    pub fn batch_size(mut self, writes: usize) -> Self {
        self.batch_size = writes;
        self
    }

    /// How long a batch waits to fill after its first write.
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Retries of a failed batch, the wait before the first, and the longest wait (each
    /// retry waits twice as long as the one before).
    pub fn retries(mut self, retries: u32, backoff: Duration, max_backoff: Duration) -> Self {
        self.retries = retries;
        self.backoff = backoff;
        self.max_backoff = max_backoff;
        self
    }

    /// Starts the writer thread: `flush` writes a batch to the store, `on_failure` hears of
    /// each batch that failed every attempt, with the last error.
    pub fn build<K, V, E>(
        self,
        flush: impl FnMut(&[(K, Write<V>)]) -> Result<(), E> + Send + 'static,
        on_failure: impl FnMut(&[(K, Write<V>)], &FlushFailure<E>) + Send + 'static,
    ) -> Result<WriteBehind<K, V>, WriteBehindError>
    where
        K: Hash + Eq + Clone + Send + 'static,
        V: Send + 'static,
        E: Send + 'static,
    {
        if self.queue_capacity == 0 || self.batch_size == 0 {
            return Err(WriteBehindError::ZeroSize);
        }
        let (sender, queue) = mpsc::sync_channel(self.queue_capacity);
        let mut writer = Writer {
            settings: self,
            flush,
            on_failure,
        };
        let worker = std::thread::Builder::new()
            .name("cortado-write-behind".into())
            .spawn(move || writer.run(&queue))
            .map_err(|error| WriteBehindError::Spawn(error.to_string()))?;
        Ok(WriteBehind {
            sender: Some(sender),
            worker: Some(worker),
        })
    }
}

/// Writes queued for a backing store and flushed by a background thread. See the
/// [module docs](self).
pub struct WriteBehind<K, V> {
    sender: Option<SyncSender<Message<K, V>>>,
    worker: Option<JoinHandle<()>>,
}

impl<K, V> fmt::Debug for WriteBehind<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBehind").finish_non_exhaustive()
    }
}

impl WriteBehind<(), ()> {
    /// The settings, at their defaults.
    pub fn builder() -> WriteBehindBuilder {
        WriteBehindBuilder::default()
    }
}

impl<K, V> WriteBehind<K, V> {
    fn send(&self, message: Message<K, V>) {
        if let Some(sender) = &self.sender {
            // The writer ends only when this handle is dropped, or when the flush function
            // panicked out of its loop, which `catch_unwind` prevents.
            let _ = sender.send(message);
        }
    }

    /// Queues `value` for `key`, waiting while the queue is full.
    pub fn put(&self, key: K, value: V) {
        self.send(Message::Write(key, Write::Put(value)));
    }

    /// Queues the deletion of `key`, waiting while the queue is full.
    pub fn delete(&self, key: K) {
        self.send(Message::Write(key, Write::Delete));
    }

    /// Queues `value` for `key` if the queue has room; otherwise hands them back.
    pub fn try_put(&self, key: K, value: V) -> Result<(), (K, V)> {
        let Some(sender) = &self.sender else {
            return Err((key, value));
        };
        match sender.try_send(Message::Write(key, Write::Put(value))) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(Message::Write(key, Write::Put(value))))
            | Err(TrySendError::Disconnected(Message::Write(key, Write::Put(value)))) => {
                Err((key, value))
            }
            Err(_) => unreachable!("a put comes back as sent"),
        }
    }

    /// Waits until every write queued before this call has been flushed or reported failed.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        self.send(Message::Flush(done));
        let _ = wait.recv();
    }

    /// Flushes what is queued and stops the writer thread (as dropping does).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // Closing the queue lets the writer drain it and end.
        drop(self.sender.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl<K, V> Drop for WriteBehind<K, V> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread's state.
struct Writer<F, L> {
    settings: WriteBehindBuilder,
    flush: F,
    on_failure: L,
}

impl<F, L> Writer<F, L> {
    fn run<K, V, E>(&mut self, queue: &mpsc::Receiver<Message<K, V>>)
    where
        K: Hash + Eq + Clone,
        F: FnMut(&[(K, Write<V>)]) -> Result<(), E>,
        L: FnMut(&[(K, Write<V>)], &FlushFailure<E>),
    {
        let mut batch = Batch::default();
        let mut open = true;
        while open {
            // The first write of a batch: wait as long as it takes.
            let mut deadline: Option<Instant> = None;
            while batch.len() < self.settings.batch_size {
                let message = match deadline {
                    None => queue.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(deadline) => {
                        queue.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    }
                };
                match message {
                    Ok(Message::Write(key, write)) => {
                        batch.push(key, write);
                        deadline.get_or_insert_with(|| Instant::now() + self.settings.max_delay);
                    }
                    Ok(Message::Flush(done)) => {
                        self.write(&mut batch);
                        let _ = done.send(());
                        deadline = None;
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        open = false;
                        break;
                    }
                }
            }
            self.write(&mut batch);
        }
    }

    /// Flushes `batch` with retries, reports it if every attempt failed, and empties it.
    fn write<K, V, E>(&mut self, batch: &mut Batch<K, V>)
    where
        K: Hash + Eq + Clone,
        F: FnMut(&[(K, Write<V>)]) -> Result<(), E>,
        L: FnMut(&[(K, Write<V>)], &FlushFailure<E>),
    {
        if batch.writes.is_empty() {
            return;
        }
        let mut wait = self.settings.backoff;
        let mut attempt = 0;
        let error = loop {
            let flush = &mut self.flush;
            let result = match catch_unwind(AssertUnwindSafe(|| flush(&batch.writes))) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(FlushFailure::Error(error)),
                Err(_) => Err(FlushFailure::Panicked),
            };
            match result {
                Ok(()) => break None,
                Err(error) if attempt == self.settings.retries => break Some(error),
                Err(_) => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(self.settings.max_backoff);
                    attempt += 1;
                }
            }
        };
        if let Some(error) = error {
            let on_failure = &mut self.on_failure;
            let _ = catch_unwind(AssertUnwindSafe(|| on_failure(&batch.writes, &error)));
        }
        batch.clear();
    }
}

/// A batch: writes in order, at most one per key (the last).
struct Batch<K, V> {
    writes: Vec<(K, Write<V>)>,
    positions: HashMap<K, usize>,
}

impl<K, V> Default for Batch<K, V> {
    fn default() -> Self {
        Self {
            writes: Vec::new(),
            positions: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, V> Batch<K, V> {
    /// Keys in the batch (writes to a key already in it replace its write).
    fn len(&self) -> usize {
        self.writes.len()
    }

    fn push(&mut self, key: K, write: Write<V>) {
        match self.positions.get(&key) {
            Some(&at) => self.writes[at].1 = write,
            None => {
                self.positions.insert(key.clone(), self.writes.len());
                self.writes.push((key, write));
            }
        }
    }

    fn clear(&mut self) {
        self.writes.clear();
        self.positions.clear();
    }
}

#[cfg(test)]
mod tests;
