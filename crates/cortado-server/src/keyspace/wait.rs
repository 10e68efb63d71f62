//! Blocked clients: which clients wait for which keys (`BLPOP`, `BZPOPMIN`, ...), in the
//! order they came, and the keys a write made worth looking at.
//!
//! A blocking command that finds nothing to take registers a [`Waiter`] on its keys while it
//! still holds their shards, and a write tells [`Waits::signal`] of every key it changes, under
//! the key's shard, so no push can slip between a waiter's look and its registration. Once
//! the writing command has released its shards, the server serves the signalled keys
//! (`cmd::blocking`): for each, its waiters in order, first come first served, while the key
//! has something to give. Like the watch registry ([`super::watch`]), it costs a write one
//! relaxed load (the count of waiters, 0 unless a client waits) and nothing more.
//!
//! # Design
//!
//! - **Registry.** One map from `(database, key)` to a queue of waiters under one mutex,
//!   taken only while some client waits: to register, to signal a waited-for key, to serve,
//!   and to leave.
//! - **One outcome per waiter.** A waiter's state (waiting, served with its reply, or
//!   cancelled) is under its own mutex: the server serving it and the client timing out (or
//!   closing) settle it once, whoever comes first, so a client never both times out and
//!   loses an element. A served waiter's reply is encoded for its protocol by the server
//!   that served it and sent by the waiter's connection, woken through `wake`.
//! - **What a waiter takes** is the command layer's business: the keyspace keeps it as an
//!   opaque `task` (the core names no front end).
//!
//! See `docs/decisions/0241-server-zsets-lists.md`.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a waiter is.
#[derive(Debug)]
pub enum State {
    /// Blocked.
    Waiting,
    /// Served: its reply, encoded, to send.
    Served(Vec<u8>),
    /// Timed out, unblocked or gone: nobody may serve it.
    Cancelled,
}

/// One blocked client. See the [module docs](self).
pub struct Waiter {
    /// Its client's id (`CLIENT UNBLOCK` finds it by that).
    pub owner: u64,
    /// The database of its keys.
    pub db: usize,
    /// The keys it waits for, in the order the command named them.
    pub keys: Vec<Vec<u8>>,
    /// What it takes when served, for the command layer.
    pub task: Box<dyn Any + Send + Sync>,
    state: Mutex<State>,
    wake: Box<dyn Fn() + Send + Sync>,
    registered: AtomicBool,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("db", &self.db)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl Waiter {
    /// A waiter of client `owner` for `keys` of `db`, taking `task`, woken by `wake` once
    /// served.
    pub fn new(
        owner: u64,
        db: usize,
        keys: Vec<Vec<u8>>,
        task: Box<dyn Any + Send + Sync>,
        wake: Box<dyn Fn() + Send + Sync>,
    ) -> Arc<Self> {
        Arc::new(Self {
            owner,
            db,
            keys,
            task,
            state: Mutex::new(State::Waiting),
            wake,
            registered: AtomicBool::new(false),
        })
    }

    /// Its state, locked: see the [module docs](self).
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes its connection.
    pub fn wake(&self) {
        (self.wake)();
    }
}

#[derive(Default)]
struct Inner {
    queues: HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>,
    /// Keys signalled since the last serving, each once.
    ready: Vec<(usize, Vec<u8>)>,
}

/// Every blocked client. See the [module docs](self).
#[derive(Default)]
pub struct Waits {
    /// Registered waiters: 0 lets a write skip the registry.
    count: AtomicUsize,
    /// Whether `ready` holds keys, for a look without the lock after every command.
    has_ready: AtomicBool,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Waits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Waits({})", self.count())
    }
}

impl Waits {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the registry that `key` of `db` changed. The caller holds the key's shard.
    #[inline]
    pub fn signal(&self, db: usize, key: &[u8]) {
        // Relaxed: registering and writing a key both hold its shard, whose mutex orders them.
        if self.count.load(Ordering::Relaxed) != 0 {
            self.signal_waited(db, key);
        }
    }

    #[cold]
    fn signal_waited(&self, db: usize, key: &[u8]) {
        let mut inner = self.inner();
        let id = (db, key.to_vec());
        if inner.queues.contains_key(&id) && !inner.ready.contains(&id) {
            inner.ready.push(id);
            self.has_ready.store(true, Ordering::Release);
        }
    }

    /// Tells the registry that every key of `db` may have changed (`SWAPDB` gave it another
    /// database's keys): each key a client waits for in `db` is served as if written. The
    /// caller holds every shard.
    pub fn signal_db(&self, db: usize) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut inner = self.inner();
        let Inner { queues, ready } = &mut *inner;
        for id in queues.keys().filter(|(d, _)| *d == db) {
            if !ready.contains(id) {
                ready.push(id.clone());
            }
        }
        if !ready.is_empty() {
            self.has_ready.store(true, Ordering::Release);
        }
    }

    /// Whether a signalled key waits to be served.
    #[inline]
    pub fn has_ready(&self) -> bool {
        self.has_ready.load(Ordering::Relaxed)
    }

    /// The keys signalled since the last call.
    pub fn take_ready(&self) -> Vec<(usize, Vec<u8>)> {
        let mut inner = self.inner();
        self.has_ready.store(false, Ordering::Relaxed);
        std::mem::take(&mut inner.ready)
    }

    /// Registers `waiter` behind those already waiting for each of its keys. The caller holds
    /// the shards of its keys.
    pub fn register(&self, waiter: &Arc<Waiter>) {
        let mut inner = self.inner();
        for key in &waiter.keys {
            inner
                .queues
                .entry((waiter.db, key.clone()))
                .or_default()
                .push_back(waiter.clone());
        }
        waiter.registered.store(true, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes `waiter` out of every queue (once; later calls do nothing).
    pub fn remove(&self, waiter: &Arc<Waiter>) {
        if !waiter.registered.swap(false, Ordering::Relaxed) {
            return;
        }
        let mut inner = self.inner();
        for key in &waiter.keys {
            let id = (waiter.db, key.clone());
            if let Some(queue) = inner.queues.get_mut(&id) {
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                if queue.is_empty() {
                    inner.queues.remove(&id);
                }
            }
        }
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// The first waiter for `key` of `db`.
    pub fn first(&self, db: usize, key: &[u8]) -> Option<Arc<Waiter>> {
        let inner = self.inner();
        inner.queues.get(&(db, key.to_vec()))?.front().cloned()
    }

    /// The waiter of client `owner`, if it is blocked.
    pub fn of_owner(&self, owner: u64) -> Option<Arc<Waiter>> {
        let inner = self.inner();
        inner
            .queues
            .values()
            .flat_map(|queue| queue.iter())
            .find(|w| w.owner == owner)
            .cloned()
    }

    /// The number of blocked clients (`INFO`'s `blocked_clients`).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(keys: &[&str]) -> Arc<Waiter> {
        Waiter::new(
            7,
            0,
            keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            Box::new(()),
            Box::new(|| {}),
        )
    }

    #[test]
    fn waits_first_come_first_served_per_key() {
        let waits = Waits::default();
        let (a, b) = (waiter(&["k", "j"]), waiter(&["k"]));
        waits.register(&a);
        waits.register(&b);
        assert_eq!(waits.count(), 2);
        assert!(Arc::ptr_eq(&waits.first(0, b"k").unwrap(), &a));
        waits.remove(&a);
        waits.remove(&a);
        assert_eq!(waits.count(), 1);
        assert!(Arc::ptr_eq(&waits.first(0, b"k").unwrap(), &b));
        assert!(waits.first(0, b"j").is_none(), "an emptied queue goes");
        assert!(Arc::ptr_eq(&waits.of_owner(7).unwrap(), &b));
        waits.remove(&b);
        assert!(waits.of_owner(7).is_none());
    }

    #[test]
    fn signal_only_waited_keys_once() {
        let waits = Waits::default();
        waits.signal(0, b"k");
        assert!(!waits.has_ready(), "nobody waits: nothing recorded");
        let a = waiter(&["k"]);
        waits.register(&a);
        waits.signal(0, b"other");
        waits.signal(1, b"k");
        assert!(!waits.has_ready());
        waits.signal(0, b"k");
        waits.signal(0, b"k");
        assert!(waits.has_ready());
        assert_eq!(waits.take_ready(), vec![(0, b"k".to_vec())]);
        assert!(!waits.has_ready());
    }
}
