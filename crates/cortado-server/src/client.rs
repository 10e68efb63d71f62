//! Clients: each connection's own state, and the registry `CLIENT LIST`, `CLIENT KILL` and
//! `INFO clients` read.
//!
//! A connection owns its [`Client`] (the selected database, the protocol version, whether it
//! authenticated) and shares a [`ClientInfo`] with the registry: the figures other clients may
//! read (`CLIENT LIST`), the flag that asks it to close (`CLIENT KILL`), and its inbox, where
//! other connections leave what it must send without being asked (`MONITOR`'s lines, pub/sub
//! messages).
//!
//! # Design
//!
//! The inbox is a queue under the client's own mutex, so a sender contends only with the
//! receiving connection, never with the server as a whole. A sender checks the bytes the
//! client has waiting (queued and unwritten) against a hard limit and closes a client that
//! is over it, so a client that does not read cannot make the server hold its messages
//! without bound.
//!
//! One wake-up serves the inbox, `CLIENT KILL` and the server's stop: a flag and the waker
//! of the connection's task, which the connection registers each time it waits; a
//! `Notify` or a `watch` receiver would cost each waiting connection two locked waiter-list
//! updates per request. Measurements: `docs/decisions/0201-server-connection-loop.md`.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;

/// Whether replies are sent (`CLIENT REPLY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Every reply.
    #[default]
    On,
    /// None.
    Off,
    /// None for the next command.
    Skip,
    /// The command after `CLIENT REPLY SKIP`: its reply is dropped, then replies resume.
    Skipping,
}

/// What a connection knows of its client. See the [module docs](self).
#[derive(Debug)]
pub struct Client {
    /// The client's id (`CLIENT ID`).
    pub id: u64,
    /// The selected database.
    pub db: usize,
    /// The protocol version: 2 or 3.
    pub resp: u8,
    /// Whether the client may run commands (it authenticated, or no password is set).
    pub authenticated: bool,
    /// Shared with the registry.
    pub info: Arc<ClientInfo>,
    /// Close once the replies so far are written (`QUIT`, a protocol error).
    pub close_after_reply: bool,
    /// `CLIENT REPLY`.
    pub reply_mode: ReplyMode,
    /// Set by `SHUTDOWN`: the server stops after this reply.
    pub shutdown: bool,
    /// Positions of the running command's arguments that `MONITOR` and the slow log must not
    /// show (passwords), as Redis redacts them.
    pub redacted: Vec<usize>,
    /// The channels and patterns it is subscribed to.
    pub subscriptions: crate::pubsub::Subscriptions,
    /// Its `MULTI` queue and `WATCH`ed keys.
    pub transaction: crate::cmd::transactions::Transaction,
    /// Set while a blocking command waits (`BLPOP`): the connection runs nothing else.
    pub blocked: Option<Blocked>,
}

/// A client blocked by a command (see [`crate::cmd::blocking`]).
#[derive(Debug)]
pub struct Blocked {
    /// Its place in the keyspace's registry.
    pub waiter: Arc<crate::keyspace::wait::Waiter>,
    /// When it times out; `None`: never.
    pub deadline: Option<Instant>,
}

impl Client {
    /// A new client of the registry's, authenticated if no password is required.
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Self {
        Self {
            id: info.id,
            db: 0,
            resp: 2,
            authenticated,
            info,
            close_after_reply: false,
            reply_mode: ReplyMode::On,
            shutdown: false,
            redacted: Vec::new(),
            subscriptions: Default::default(),
            transaction: Default::default(),
            blocked: None,
        }
    }

    /// Selects database `db`.
    pub fn select(&mut self, db: usize) {
        self.db = db;
        self.info.db.store(db, Ordering::Relaxed);
    }
}

/// Flags of [`ClientInfo::flags`], as `CLIENT LIST` shows them.
pub mod flag {
    /// `O`: a monitor.
    pub const MONITOR: u8 = 1;
    /// `x`: in a transaction.
    pub const MULTI: u8 = 2;
    /// `P`: subscribed.
    pub const PUBSUB: u8 = 4;
    /// `e`: its keys are not evicted (`CLIENT NO-EVICT on`).
    pub const NO_EVICT: u8 = 8;
    /// `b`: blocked in a command (`BLPOP`, ...).
    pub const BLOCKED: u8 = 16;
}

/// What other clients may see of a client, and its kill switch.
#[derive(Debug)]
pub struct ClientInfo {
    /// The client's id.
    pub id: u64,
    /// The peer's address.
    pub addr: SocketAddr,
    /// The server's address the client connected to.
    pub laddr: SocketAddr,
    /// The socket's file descriptor (`fd=`), or -1.
    pub fd: i64,
    /// When the client connected.
    pub created: Instant,
    /// `CLIENT SETNAME`'s name.
    pub name: Mutex<Option<String>>,
    /// The selected database.
    pub db: AtomicUsize,
    /// Milliseconds after `created` of the last command.
    pub last_interaction: AtomicU64,
    /// The command-table id of the last command, plus one (0: none yet).
    pub last_command: AtomicUsize,
    /// Protocol version.
    pub resp: AtomicU8,
    /// [`flag`]s.
    pub flags: AtomicU8,
    /// Commands queued by `MULTI`, or -1 outside a transaction (`multi=`).
    pub queued: AtomicI64,
    /// Bytes in the query buffer.
    pub query_buffer: AtomicUsize,
    /// Bytes waiting in the output buffer.
    pub output_buffer: AtomicUsize,
    /// How many channels and patterns it is subscribed to.
    pub subscriptions: crate::pubsub::Counts,
    /// Set by `CLIENT KILL` and by senders finding the client over its output limit.
    killed: AtomicBool,
    /// Set when the connection has something to look at: it was killed, its inbox has
    /// something, or the server is stopping.
    woken: AtomicBool,
    /// The connection's task, while it waits.
    waker: Mutex<Option<Waker>>,
    inbox: Mutex<Inbox>,
}

/// What other connections left for a client to send. See the [module docs](self).
#[derive(Debug, Default)]
struct Inbox {
    items: VecDeque<Bytes>,
    bytes: usize,
}

impl ClientInfo {
    /// Asks the client's connection to close.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Wakes the connection to look at what changed (its inbox, its kill flag, the server's
    /// stop). A connection already woken and yet to look is not woken again: whoever raised
    /// the flag woke it, and it looks at everything once it runs (a subscriber sent a burst of
    /// messages takes the waker's lock once, not per message).
    pub fn wake(&self) {
        if self.woken.swap(true, Ordering::SeqCst) {
            return;
        }
        let waker = self.waker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ready once [`wake`](Self::wake) was called since the last time it was ready; registers
    /// the task to be woken otherwise.
    pub fn poll_woken(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.woken.swap(false, Ordering::SeqCst) {
            return Poll::Ready(());
        }
        {
            let mut slot = self.waker.lock().unwrap_or_else(|p| p.into_inner());
            match &*slot {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        // A wake between the first look and the registration is seen here.
        if self.woken.swap(false, Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Whether the client was asked to close.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Leaves `bytes` for the client to send. With `hard_limit` non-zero, a client whose
    /// waiting bytes (in its inbox and its output buffer) would pass it is killed instead, as
    /// Redis closes a client over its `client-output-buffer-limit`; `false` then, or if the
    /// client was killed already.
    pub fn deliver(&self, bytes: Bytes, hard_limit: u64) -> bool {
        if self.is_killed() {
            return false;
        }
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        let waiting = inbox.bytes + bytes.len() + self.output_buffer.load(Ordering::Relaxed);
        if hard_limit > 0 && waiting as u64 > hard_limit {
            drop(inbox);
            tracing::warn!(
                id = self.id,
                "client closed for overcoming of output buffer limits"
            );
            self.kill();
            return false;
        }
        inbox.bytes += bytes.len();
        inbox.items.push_back(bytes);
        drop(inbox);
        self.wake();
        true
    }

    /// Moves everything in the inbox to `out`, in the order it came.
    pub fn take_inbox(&self, mut out: impl FnMut(&[u8])) {
        let items = {
            let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
            inbox.bytes = 0;
            std::mem::take(&mut inbox.items)
        };
        for item in &items {
            out(item);
        }
    }

    /// Sets or clears flag `f`.
    pub fn set_flag(&self, f: u8, on: bool) {
        if on {
            self.flags.fetch_or(f, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!f, Ordering::Relaxed);
        }
    }

    /// Whether flag `f` is set.
    pub fn has_flag(&self, f: u8) -> bool {
        self.flags.load(Ordering::Relaxed) & f != 0
    }

    /// Records a command of id `command` now.
    #[inline]
    pub fn touch(&self, command: usize) {
        let ms = self.created.elapsed().as_millis() as u64;
        self.last_interaction.store(ms, Ordering::Relaxed);
        self.last_command.store(command + 1, Ordering::Relaxed);
    }

    /// Seconds since the last command.
    pub fn idle_seconds(&self) -> u64 {
        let now = self.created.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_interaction.load(Ordering::Relaxed)) / 1000
    }

    /// The client's name, or empty.
    pub fn name(&self) -> String {
        self.name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_default()
    }
}

/// Every connected client, by id.
#[derive(Debug, Default)]
pub struct Clients {
    map: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
}

impl Clients {
    /// Registers a new connection and returns its shared info, or `None` when `maxclients`
    /// are connected already.
    pub fn register(
        &self,
        addr: SocketAddr,
        laddr: SocketAddr,
        fd: i64,
        maxclients: u64,
    ) -> Option<Arc<ClientInfo>> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() as u64 >= maxclients {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            name: Mutex::new(None),
            db: AtomicUsize::new(0),
            last_interaction: AtomicU64::new(0),
            last_command: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            flags: AtomicU8::new(0),
            queued: AtomicI64::new(-1),
            query_buffer: AtomicUsize::new(0),
            output_buffer: AtomicUsize::new(0),
            subscriptions: Default::default(),
            killed: AtomicBool::new(false),
            woken: AtomicBool::new(false),
            waker: Mutex::new(None),
            inbox: Mutex::new(Inbox::default()),
        });
        map.insert(id, info.clone());
        Some(info)
    }

    /// Removes a closed connection.
    pub fn unregister(&self, id: u64) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Wakes every client's connection (the server is stopping).
    pub fn wake_all(&self) {
        for client in self.map.lock().unwrap_or_else(|p| p.into_inner()).values() {
            client.wake();
        }
    }

    /// Every client, by id, but those killed and not yet gone (Redis frees a killed client
    /// at once, so `CLIENT LIST` and `CLIENT KILL` no longer see it).
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|c| !c.is_killed())
            .cloned()
            .collect()
    }

    /// The client of id `id`, unless it was killed.
    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .filter(|c| !c.is_killed())
            .cloned()
    }

    /// The number of connected clients.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
