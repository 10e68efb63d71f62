//! Keyspace notifications: what happened to a key, published as pub/sub messages when
//! `notify-keyspace-events` asks for its class.
//!
//! An event (`set` on key `k` of database 0) is published as `set` on channel
//! `__keyspace@0__:k` (class `K`) and as `k` on channel `__keyevent@0__:set` (class `E`), in
//! that order, as Redis does. Commands report their own events ([`crate::cmd::Ctx::notify`]);
//! the keyspace reports `new` keys and `keymiss` lookups; the caches' removal listener reports
//! `expired` (actively or lazily) and `evicted` keys.
//!
//! # Design
//!
//! - **Events wait in a buffer of the thread that caused them**, and are published once the
//!   command (or the active expiry batch) has released the shards it held: publishing takes
//!   the registry's and the subscribers' locks, which are then never taken under a shard's, and
//!   a shard is not held longer for the subscribers' sake. A command runs on one thread from
//!   start to end (it never waits), so its buffer holds its events in the order they happened,
//!   the caches' removals included, whichever shards they came from.
//! - **Nothing is recorded unless asked for**: each report first reads the classes (one atomic
//!   load), so a server without notifications, the default, copies no key.
//! - **Expired keys a command finds** are removed then, as Redis removes them: by the caches
//!   on a write, and, while `expired` events are asked for, by the keyspace on a read (one more
//!   lookup per read, only then), so `expired` comes before the read's `keymiss`. A key
//!   written with an expiry time already past is removed as it is written, so its `expired`
//!   comes before the command's `set`, where Redis tells it after.
//! - Redis 7.0 shows `KEAn` as `AKE` (`n` is not part of `A`, and not written after it), so
//!   the configuration's canonical value, which this server keeps, loses `n` there; name the
//!   classes without `A` to have both.
//!
//! See `docs/decisions/0220-server-pubsub.md`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use cortado::notification::RemovalCause;

use crate::keyspace::{CompactBytes, Value};
use crate::pubsub::{Namespace, PubSub, Publisher};

/// The messages a client's own command published to itself, each with the place in its reply
/// it belongs at (see [`KeyEvent::at`]).
#[derive(Debug)]
pub struct OwnMessages {
    /// The client's id.
    pub id: u64,
    /// Whether it speaks RESP3.
    pub resp3: bool,
    /// The messages of each event in order, with the event's place.
    pub messages: Vec<(Option<usize>, Vec<u8>)>,
}

/// Event classes, one bit per letter of `notify-keyspace-events`.
pub mod class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (`DEL`, `EXPIRE`, `RENAME`, ...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: keys removed because they expired.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: keys evicted for memory.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: lookups of a missing key.
    pub const KEY_MISS: u32 = 1 << 11;
    /// `d`: module key types.
    pub const MODULE: u32 = 1 << 12;
    /// `n`: new keys.
    pub const NEW: u32 = 1 << 13;

    /// Every class with its letter.
    pub const LETTERS: &[(u32, char)] = &[
        (KEYSPACE, 'K'),
        (KEYEVENT, 'E'),
        (GENERIC, 'g'),
        (STRING, '$'),
        (LIST, 'l'),
        (SET, 's'),
        (HASH, 'h'),
        (ZSET, 'z'),
        (EXPIRED, 'x'),
        (EVICTED, 'e'),
        (STREAM, 't'),
        (KEY_MISS, 'm'),
        (MODULE, 'd'),
        (NEW, 'n'),
    ];

    /// What `A` stands for.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The classes a `notify-keyspace-events` value names (`A` for all but `m` and `n`); unknown
/// letters are ignored (the configuration refuses them first).
pub fn parse_classes(letters: &str) -> u32 {
    letters.chars().fold(0, |on, c| {
        if c == 'A' {
            return on | class::ALL;
        }
        on | class::LETTERS
            .iter()
            .find(|(_, l)| *l == c)
            .map_or(0, |(bit, _)| *bit)
    })
}

/// One event, waiting to be published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEvent {
    /// The key's database.
    pub db: usize,
    /// What happened (`set`, `del`, `expired`, ...).
    pub event: &'static str,
    /// The key.
    pub key: Vec<u8>,
    /// For an event a command reported, the length its reply had then: a RESP3 client
    /// subscribed to its own events gets them there, before or after the reply as Redis
    /// sends them. `None` for the keyspace's events.
    pub at: Option<usize>,
}

thread_local! {
    /// The events of the command running on this thread. See the [module docs](self).
    static PENDING: RefCell<Vec<KeyEvent>> = const { RefCell::new(Vec::new()) };
}

/// Which classes are published, shared by the keyspace, its caches' listeners and the
/// commands. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Notifications {
    classes: AtomicU32,
}

impl Notifications {
    /// Takes `notify-keyspace-events`'s new value.
    pub fn configure(&self, letters: &str) {
        self.classes
            .store(parse_classes(letters), Ordering::Relaxed);
    }

    /// Whether events of `class` are published: that class, and `K` or `E`.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let on = self.classes.load(Ordering::Relaxed);
        on & class != 0 && on & (class::KEYSPACE | class::KEYEVENT) != 0
    }

    /// Records `event` on `key` of `db`, if its class is published.
    #[inline]
    pub fn key_event(&self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        if self.wants(class) {
            record(event, db, key, None);
        }
    }

    /// [`key_event`](Self::key_event) from a command whose reply was `at` bytes long then.
    #[inline]
    pub fn key_event_at(&self, class: u32, event: &'static str, db: usize, key: &[u8], at: usize) {
        if self.wants(class) {
            record(event, db, key, Some(at));
        }
    }

    /// Publishes the events the calling thread recorded (see [`take_pending`]) on `pubsub`;
    /// `own` is the client whose command caused them, whose own messages are kept there
    /// rather than sent to its inbox.
    pub fn publish(&self, pubsub: &PubSub, mut own: Option<&mut OwnMessages>) {
        let events = take_pending();
        let on = self.classes.load(Ordering::Relaxed);
        for event in events {
            let mut out = Vec::new();
            let mut publisher = own.as_ref().map(|own| Publisher {
                id: own.id,
                resp3: own.resp3,
                out: &mut out,
            });
            if on & class::KEYSPACE != 0 {
                let channel = format!("__keyspace@{}__:", event.db).into_bytes();
                let channel = [channel, event.key.clone()].concat();
                pubsub.publish(
                    Namespace::Plain,
                    &channel,
                    event.event.as_bytes(),
                    publisher.as_mut().map(Publisher::reborrow),
                );
            }
            if on & class::KEYEVENT != 0 {
                let channel = format!("__keyevent@{}__:{}", event.db, event.event);
                pubsub.publish(
                    Namespace::Plain,
                    channel.as_bytes(),
                    &event.key,
                    publisher.as_mut().map(Publisher::reborrow),
                );
            }
            if let Some(own) = own.as_mut().filter(|_| !out.is_empty()) {
                own.messages.push((event.at, out));
            }
        }
    }
}

#[cold]
fn record(event: &'static str, db: usize, key: &[u8], at: Option<usize>) {
    PENDING.with(|pending| {
        pending.borrow_mut().push(KeyEvent {
            db,
            event,
            key: key.to_vec(),
            at,
        })
    });
}

/// Whether the calling thread has events waiting to be published.
#[inline(always)]
pub fn has_pending() -> bool {
    PENDING.with(|pending| !pending.borrow().is_empty())
}

/// The number of events the calling thread recorded and has not published.
pub fn pending_count() -> usize {
    PENDING.with(|pending| pending.borrow().len())
}

/// Places the events recorded after the first `first` at `at` of the reply: a script's
/// commands wrote their replies elsewhere, and their messages go before the script's reply.
pub fn place_pending_from(first: usize, at: usize) {
    PENDING.with(|pending| {
        for event in pending.borrow_mut().iter_mut().skip(first) {
            event.at = Some(at);
        }
    });
}

/// Takes the events the calling thread recorded, oldest first.
pub fn take_pending() -> Vec<KeyEvent> {
    PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut()))
}

/// The removal listener of database `db`'s caches: records `expired` for a key whose deadline
/// passed and `evicted` for one the policy removed for room; explicit removals and
/// replacements are the commands' to report.
pub fn removal_listener(
    db: usize,
    notifications: Arc<Notifications>,
) -> impl Fn(&CompactBytes, &Value, RemovalCause) + Send + Sync + 'static {
    move |key, _value, cause| match cause {
        RemovalCause::Expired => {
            notifications.key_event(class::EXPIRED, "expired", db, key.as_slice())
        }
        RemovalCause::Size => {
            notifications.key_event(class::EVICTED, "evicted", db, key.as_slice())
        }
        RemovalCause::Explicit | RemovalCause::Replaced => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_classes_reads_redis_letters() {
        assert_eq!(parse_classes(""), 0);
        assert_eq!(
            parse_classes("AKE"),
            class::ALL | class::KEYSPACE | class::KEYEVENT
        );
        assert_eq!(parse_classes("Ex"), class::KEYEVENT | class::EXPIRED);
        assert_eq!(parse_classes("K$gmn") & class::NEW, class::NEW);
        assert_eq!(parse_classes("A") & (class::KEY_MISS | class::NEW), 0);
    }

    #[test]
    fn key_event_records_only_wanted_classes_with_k_or_e() {
        let n = Notifications::default();
        take_pending();
        n.configure("g$");
        n.key_event(class::GENERIC, "del", 0, b"k");
        assert!(!has_pending(), "no K nor E: nothing published");
        n.configure("Kg");
        n.key_event(class::STRING, "set", 0, b"k");
        assert!(!has_pending(), "class not asked for");
        n.key_event(class::GENERIC, "del", 3, b"k");
        assert_eq!(
            take_pending(),
            [KeyEvent {
                db: 3,
                event: "del",
                key: b"k".to_vec(),
                at: None
            }]
        );
    }

    #[test]
    fn removal_listener_reports_expired_and_evicted_only() {
        take_pending();
        let n = Arc::new(Notifications::default());
        n.configure("Exe");
        let listener = removal_listener(2, n.clone());
        let key = CompactBytes::new(b"k");
        let value = Value::string(b"v");
        for cause in [
            RemovalCause::Explicit,
            RemovalCause::Replaced,
            RemovalCause::Expired,
            RemovalCause::Size,
        ] {
            listener(&key, &value, cause);
        }
        let events: Vec<_> = take_pending()
            .into_iter()
            .map(|e| (e.db, e.event))
            .collect();
        assert_eq!(events, [(2, "expired"), (2, "evicted")]);
    }

    #[test]
    fn size_eviction_of_a_bounded_cache_reaches_the_listener_as_evicted() {
        // The keyspace's caches have no bound yet (maxmemory comes later): this is the path
        // an eviction for memory takes, through the library's listener.
        take_pending();
        let n = Arc::new(Notifications::default());
        n.configure("KEe");
        let mut cache = cortado::unsync::Cache::<CompactBytes, Value>::builder()
            .max_capacity(1)
            .eviction_listener(removal_listener(0, n.clone()))
            .build()
            .unwrap();
        cache.insert(CompactBytes::new(b"a"), Value::string(b"1"));
        cache.insert(CompactBytes::new(b"b"), Value::string(b"2"));
        let events = take_pending();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].event, "evicted");
        assert!(events[0].key == b"a" || events[0].key == b"b");
        assert_eq!(cache.len(), 1);
    }
}
