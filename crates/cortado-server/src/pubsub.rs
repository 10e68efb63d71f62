//! Publish/subscribe: which clients listen to which channels and patterns, and the delivery
//! of messages to them.
//!
//! [`PubSub`] maps channels (`SUBSCRIBE`), shard channels (`SSUBSCRIBE`, a namespace of its
//! own as in Redis, though a server without cluster has one shard) and glob patterns
//! (`PSUBSCRIBE`) to their subscribers; a connection keeps its own side in [`Subscriptions`].
//! [`PubSub::publish`] encodes a message once per protocol and leaves it in each subscriber's
//! inbox (see [`crate::client`]), where a subscriber over the hard `client-output-buffer-limit
//! pubsub` is closed instead; the soft limit is checked by the subscriber's connection as it
//! takes its inbox, so no subscriber makes the server hold its messages without bound.
//!
//! # Design
//!
//! - **No lock shared by every `PUBLISH`.** Channels are spread over [`CHANNEL_SHARDS`]
//!   read-write locks by hash, so publishers of different channels never wait for each other
//!   and publishers of one channel only share its read lock; `SUBSCRIBE` takes one shard's
//!   write lock. Patterns sit behind one read-write lock that `PUBLISH` skips while none is
//!   subscribed (one atomic load).
//! - **A message is encoded once**, as a RESP2 array, and copied once more with `>` in front for
//!   RESP3 subscribers, if there are any; each subscriber's inbox holds a reference to the same
//!   bytes.
//! - **The publisher's own messages** (a RESP3 client subscribed to what it publishes) go
//!   straight into its output, before the command's reply, as Redis orders them.
//! - Subscribers of a channel are a vector (Redis 7.0 keeps a list): publishing walks it,
//!   unsubscribing searches it.
//!
//! The measurements (instructions per `PUBLISH` against Redis's) are in
//! `docs/decisions/0220-server-pubsub.md`.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use cortado::DefaultHashBuilder;

use crate::client::{flag, Client, ClientInfo};
use crate::glob::glob_match;
use crate::protocol::Reply;

/// Locks the channels are spread over: more than the cores of a large machine, so that two
/// publishers of different channels rarely share one; few enough that `PUBSUB CHANNELS`
/// walks them at once.
pub const CHANNEL_SHARDS: usize = 64;

/// The two channel namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// `SUBSCRIBE` / `PUBLISH`.
    Plain,
    /// `SSUBSCRIBE` / `SPUBLISH`.
    Shard,
}

type Subscribers = Vec<Arc<ClientInfo>>;

/// One namespace's channels. See the [module docs](self).
struct Channels {
    shards: Box<[RwLock<HashMap<Bytes, Subscribers, DefaultHashBuilder>>]>,
    hasher: DefaultHashBuilder,
    /// Channels with at least one subscriber.
    count: AtomicUsize,
}

impl Channels {
    fn new() -> Self {
        Self {
            shards: (0..CHANNEL_SHARDS)
                .map(|_| RwLock::new(HashMap::default()))
                .collect(),
            hasher: DefaultHashBuilder::default(),
            count: AtomicUsize::new(0),
        }
    }

    fn shard(&self, channel: &[u8]) -> &RwLock<HashMap<Bytes, Subscribers, DefaultHashBuilder>> {
        &self.shards[self.hasher.hash_one(channel) as usize % CHANNEL_SHARDS]
    }

    fn add(&self, channel: &Bytes, client: &Arc<ClientInfo>) {
        let mut map = write(self.shard(channel));
        let subscribers = map.entry(channel.clone()).or_insert_with(|| {
            self.count.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        });
        subscribers.push(client.clone());
    }

    fn remove(&self, channel: &[u8], id: u64) {
        let mut map = write(self.shard(channel));
        if let Some(subscribers) = map.get_mut(channel) {
            subscribers.retain(|c| c.id != id);
            if subscribers.is_empty() {
                map.remove(channel);
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    fn subscribers(&self, channel: &[u8]) -> usize {
        read(self.shard(channel)).get(channel).map_or(0, Vec::len)
    }

    fn names(&self, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            for name in read(shard).keys() {
                if pattern.is_none_or(|p| glob_match(p, name, false)) {
                    out.push(name.clone());
                }
            }
        }
        out
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// Every subscription of the server. See the [module docs](self).
pub struct PubSub {
    channels: Channels,
    shard_channels: Channels,
    patterns: RwLock<HashMap<Bytes, Subscribers, DefaultHashBuilder>>,
    /// Patterns with at least one subscriber, read by every `PUBLISH` without the lock.
    pattern_count: AtomicUsize,
    /// The hard `client-output-buffer-limit pubsub`, copied from the settings at each change.
    hard_limit: AtomicU64,
}

impl Default for PubSub {
    fn default() -> Self {
        Self {
            channels: Channels::new(),
            shard_channels: Channels::new(),
            patterns: RwLock::new(HashMap::default()),
            pattern_count: AtomicUsize::new(0),
            hard_limit: AtomicU64::new(0),
        }
    }
}

/// A client's own subscriptions, kept by its connection.
#[derive(Debug, Default)]
pub struct Subscriptions {
    channels: HashSet<Bytes, DefaultHashBuilder>,
    /// In the order subscribed, as Redis lists them.
    patterns: Vec<Bytes>,
    shard_channels: HashSet<Bytes, DefaultHashBuilder>,
}

impl Subscriptions {
    /// Channels and patterns: the count `SUBSCRIBE`'s and `PSUBSCRIBE`'s replies give.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Shard channels: the count `SSUBSCRIBE`'s replies give.
    pub fn shard_count(&self) -> usize {
        self.shard_channels.len()
    }

    /// Whether the client is subscribed to anything.
    pub fn is_empty(&self) -> bool {
        self.count() + self.shard_count() == 0
    }
}

/// Figures of a client's subscriptions that `CLIENT LIST` shows.
#[derive(Debug, Default)]
pub struct Counts {
    /// `sub=`.
    pub channels: AtomicUsize,
    /// `psub=`.
    pub patterns: AtomicUsize,
    /// `ssub=`.
    pub shard_channels: AtomicUsize,
}

/// The publisher, when it may be among the subscribers: its messages go to `out` (encoded for
/// `resp3` or not) instead of its inbox.
pub struct Publisher<'a> {
    /// The publishing client's id.
    pub id: u64,
    /// Whether it speaks RESP3.
    pub resp3: bool,
    /// Where its own messages go.
    pub out: &'a mut Vec<u8>,
}

impl Publisher<'_> {
    /// The same publisher, for one more call.
    pub fn reborrow(&mut self) -> Publisher<'_> {
        Publisher {
            id: self.id,
            resp3: self.resp3,
            out: &mut *self.out,
        }
    }
}

/// One message, encoded for each protocol as first needed.
struct Message {
    resp2: Bytes,
    resp3: Option<Bytes>,
}

impl Message {
    fn new(parts: &[&[u8]]) -> Self {
        let mut reply = Reply::new();
        reply.array(parts.len());
        for part in parts {
            reply.bulk(part);
        }
        Self {
            resp2: Bytes::copy_from_slice(reply.bytes()),
            resp3: None,
        }
    }

    fn encoded(&mut self, resp3: bool) -> &Bytes {
        if !resp3 {
            return &self.resp2;
        }
        self.resp3.get_or_insert_with(|| {
            let mut bytes = self.resp2.to_vec();
            bytes[0] = b'>';
            Bytes::from(bytes)
        })
    }

    fn send(&mut self, to: &ClientInfo, hard_limit: u64, publisher: &mut Option<Publisher<'_>>) {
        let resp3 = to.resp.load(Ordering::Relaxed) == 3;
        match publisher {
            Some(me) if me.id == to.id => {
                let bytes = self.encoded(me.resp3);
                me.out.extend_from_slice(bytes);
            }
            _ => {
                to.deliver(self.encoded(resp3).clone(), hard_limit);
            }
        }
    }
}

impl PubSub {
    /// Takes the hard output limit of subscribers from new settings.
    pub fn configure(&self, hard_limit: u64) {
        self.hard_limit.store(hard_limit, Ordering::Relaxed);
    }

    fn namespace(&self, namespace: Namespace) -> &Channels {
        match namespace {
            Namespace::Plain => &self.channels,
            Namespace::Shard => &self.shard_channels,
        }
    }

    /// Sends `message` to the subscribers of `channel` in `namespace` (and, for a plain
    /// channel, of the patterns matching it); returns how many receptions there were (a client
    /// subscribed to the channel and to a matching pattern counts twice, as in Redis).
    pub fn publish(
        &self,
        namespace: Namespace,
        channel: &[u8],
        message: &[u8],
        mut publisher: Option<Publisher<'_>>,
    ) -> usize {
        let hard = self.hard_limit.load(Ordering::Relaxed);
        let mut receivers = 0;
        let kind: &[u8] = match namespace {
            Namespace::Plain => b"message",
            Namespace::Shard => b"smessage",
        };
        {
            let map = read(self.namespace(namespace).shard(channel));
            if let Some(subscribers) = map.get(channel) {
                let mut encoded = Message::new(&[kind, channel, message]);
                for to in subscribers {
                    encoded.send(to, hard, &mut publisher);
                }
                receivers += subscribers.len();
            }
        }
        if namespace == Namespace::Plain && self.pattern_count.load(Ordering::Relaxed) > 0 {
            let patterns = read(&self.patterns);
            for (pattern, subscribers) in patterns.iter() {
                if !glob_match(pattern, channel, false) {
                    continue;
                }
                let mut encoded = Message::new(&[b"pmessage", pattern, channel, message]);
                for to in subscribers {
                    encoded.send(to, hard, &mut publisher);
                }
                receivers += subscribers.len();
            }
        }
        receivers
    }

    /// Subscribes `client` to `channel`; false if it already was.
    pub fn subscribe(&self, namespace: Namespace, client: &mut Client, channel: &[u8]) -> bool {
        let channel = Bytes::copy_from_slice(channel);
        let mine = match namespace {
            Namespace::Plain => &mut client.subscriptions.channels,
            Namespace::Shard => &mut client.subscriptions.shard_channels,
        };
        if mine.contains(&channel) {
            return false;
        }
        mine.insert(channel.clone());
        self.namespace(namespace).add(&channel, &client.info);
        sync_counts(client);
        true
    }

    /// Unsubscribes `client` from `channel`; false if it was not subscribed.
    pub fn unsubscribe(&self, namespace: Namespace, client: &mut Client, channel: &[u8]) -> bool {
        let mine = match namespace {
            Namespace::Plain => &mut client.subscriptions.channels,
            Namespace::Shard => &mut client.subscriptions.shard_channels,
        };
        if !mine.remove(channel) {
            return false;
        }
        self.namespace(namespace).remove(channel, client.id);
        sync_counts(client);
        true
    }

    /// Subscribes `client` to `pattern`; false if it already was.
    pub fn psubscribe(&self, client: &mut Client, pattern: &[u8]) -> bool {
        if client.subscriptions.patterns.iter().any(|p| p == pattern) {
            return false;
        }
        let pattern = Bytes::copy_from_slice(pattern);
        client.subscriptions.patterns.push(pattern.clone());
        {
            let mut patterns = write(&self.patterns);
            let subscribers = patterns.entry(pattern).or_default();
            subscribers.push(client.info.clone());
            self.pattern_count.store(patterns.len(), Ordering::Relaxed);
        }
        sync_counts(client);
        true
    }

    /// Unsubscribes `client` from `pattern`; false if it was not subscribed.
    pub fn punsubscribe(&self, client: &mut Client, pattern: &[u8]) -> bool {
        let mine = &mut client.subscriptions.patterns;
        let Some(at) = mine.iter().position(|p| p == pattern) else {
            return false;
        };
        mine.remove(at);
        {
            let mut patterns = write(&self.patterns);
            if let Some(subscribers) = patterns.get_mut(pattern) {
                subscribers.retain(|c| c.id != client.id);
                if subscribers.is_empty() {
                    patterns.remove(pattern);
                }
            }
            self.pattern_count.store(patterns.len(), Ordering::Relaxed);
        }
        sync_counts(client);
        true
    }

    /// The channels of `namespace` `client` is subscribed to.
    pub fn channels_of(client: &Client, namespace: Namespace) -> Vec<Bytes> {
        match namespace {
            Namespace::Plain => client.subscriptions.channels.iter().cloned().collect(),
            Namespace::Shard => client
                .subscriptions
                .shard_channels
                .iter()
                .cloned()
                .collect(),
        }
    }

    /// The patterns `client` is subscribed to, in the order subscribed.
    pub fn patterns_of(client: &Client) -> Vec<Bytes> {
        client.subscriptions.patterns.clone()
    }

    /// Drops every subscription of `client`, without replies (`RESET`, a closed connection).
    pub fn unsubscribe_all(&self, client: &mut Client) {
        for namespace in [Namespace::Plain, Namespace::Shard] {
            for channel in Self::channels_of(client, namespace) {
                self.unsubscribe(namespace, client, &channel);
            }
        }
        for pattern in Self::patterns_of(client) {
            self.punsubscribe(client, &pattern);
        }
    }

    /// The channels of `namespace` with a subscriber, those matching `pattern` if given.
    pub fn channel_names(&self, namespace: Namespace, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.namespace(namespace).names(pattern)
    }

    /// The number of subscribers of `channel` in `namespace` (patterns not counted).
    pub fn subscribers(&self, namespace: Namespace, channel: &[u8]) -> usize {
        self.namespace(namespace).subscribers(channel)
    }

    /// Channels of `namespace` with at least one subscriber (`INFO`'s `pubsub_channels`).
    pub fn channel_count(&self, namespace: Namespace) -> usize {
        self.namespace(namespace).count.load(Ordering::Relaxed)
    }

    /// Patterns with at least one subscriber (`PUBSUB NUMPAT`, `INFO`'s `pubsub_patterns`).
    pub fn pattern_count(&self) -> usize {
        self.pattern_count.load(Ordering::Relaxed)
    }
}

/// Copies `client`'s counts to its shared info and sets or clears its subscriber flag.
fn sync_counts(client: &Client) {
    let s = &client.subscriptions;
    let counts = &client.info.subscriptions;
    counts.channels.store(s.channels.len(), Ordering::Relaxed);
    counts.patterns.store(s.patterns.len(), Ordering::Relaxed);
    counts
        .shard_channels
        .store(s.shard_channels.len(), Ordering::Relaxed);
    client.info.set_flag(flag::PUBSUB, !s.is_empty());
}
