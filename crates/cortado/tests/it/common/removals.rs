//! The removal model that `unsync_model` and `sync_model` run their caches against: every value
//! ever inserted (each a unique id, with its weight) is at any time either held or reported to
//! the listener exactly once, with the cause that fits what happened to it; the stats count
//! exactly what the listener heard, and hits, misses and loads exactly what the calls saw.
//!
//! Each test drives its own cache: [`Model::apply`] runs the operations every cache shares
//! ([`SharedOp`], through [`UnderModel`]), and for its own operations the test tells the model
//! what it called and what came back. The model computes what should have, and [`Model::check`]
//! compares the rest after each operation.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cortado::builder::CacheBuilder;
use cortado::expiry::Expiry;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::stats::CacheStats;
use cortado::time::ManualClock;
use proptest::prelude::*;

/// A second of the manual clock, in nanoseconds.
pub const SEC: u64 = 1_000_000_000;

/// A value: its unique id and its weight.
pub type Value = (u32, u8);

/// The capacity the model's caches start with.
const CAPACITY: u64 = 10;

/// The custom expiry: a new value lives 5 to 8 s by its weight, a replacement keeps the
/// deadline it replaces, and a read leaves at most 4 s.
struct ByWeight;

impl Expiry<u8, Value> for ByWeight {
    fn expire_after_create(&self, _: &u8, v: &Value) -> Option<Duration> {
        Some(Duration::from_secs(5 + u64::from(v.1 % 4)))
    }

    fn expire_after_read(&self, _: &u8, _: &Value, current: Option<Duration>) -> Option<Duration> {
        current.map(|c| c.min(Duration::from_secs(4)))
    }
}

/// The settings a model's cache is built with.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// A time to live of 30 s (ignored under `custom`).
    pub ttl: bool,
    /// A time to idle of 12 s (ignored under `custom`).
    pub tti: bool,
    /// [`ByWeight`]'s lifetimes.
    pub custom: bool,
    /// Values weigh their weight (else 1).
    pub weighted: bool,
}

/// The operations every cache under the model takes; a test adds its own beside them.
#[derive(Debug, Clone)]
pub enum SharedOp {
    Get(u8),
    Peek(u8),
    Insert(u8, u8),
    InsertTtl(u8, u8, u8),
    Remove(u8),
    Advance(u8),
    AdvanceNanos(u8),
    Retain(u8),
    Resize(u8),
    InvalidateAll,
    RunPending,
}

/// The sum of [`shared_op`]'s weights: a test that mixes in its own operations gives the shared
/// ones this weight, so each keeps its odds against the test's own.
pub const SHARED_WEIGHT: u32 = 24;

/// Draws a [`SharedOp`] over keys 0..24, weights 0..14 and lifetimes of 0..20 s (one of 0 s is
/// expired as it is written).
pub fn shared_op() -> impl Strategy<Value = SharedOp> {
    prop_oneof![
        5 => any::<u8>().prop_map(|k| SharedOp::Get(k % 24)),
        2 => any::<u8>().prop_map(|k| SharedOp::Peek(k % 24)),
        6 => (any::<u8>(), 0..14u8).prop_map(|(k, w)| SharedOp::Insert(k % 24, w)),
        2 => (any::<u8>(), 0..14u8, 0..20u8)
            .prop_map(|(k, w, t)| SharedOp::InsertTtl(k % 24, w, t)),
        2 => any::<u8>().prop_map(|k| SharedOp::Remove(k % 24)),
        2 => (1..10u8).prop_map(SharedOp::Advance),
        1 => any::<u8>().prop_map(SharedOp::AdvanceNanos),
        1 => (2..5u8).prop_map(SharedOp::Retain),
        1 => (0..30u8).prop_map(SharedOp::Resize),
        1 => Just(SharedOp::InvalidateAll),
        1 => Just(SharedOp::RunPending),
    ]
}

/// What the model asks of a cache: the shared operations, values named by their ids, and the
/// state [`Model::check`] compares. Implemented by both front ends.
pub trait UnderModel {
    fn get_id(&mut self, k: u8) -> Option<u32>;
    fn peek_id(&self, k: u8) -> Option<u32>;
    fn holds(&self, k: u8) -> bool;
    fn put(&mut self, k: u8, v: Value, ttl: Option<Duration>);
    fn remove_id(&mut self, k: u8) -> Option<u32>;
    /// Keeps the keys that are not multiples of `m`.
    fn retain_non_multiples(&mut self, m: u8);
    fn resize(&mut self, max: u64);
    fn clear(&mut self);
    fn maintain(&mut self);
    fn validate(&self);
    /// The stats, `len`, `weighted_size` and the ids `iter` yields.
    fn state(&self) -> (CacheStats, usize, u64, Vec<u32>);
}

/// Implements [`UnderModel`] for a front end whose calls take `&self` or `&mut self` alike.
macro_rules! under_model {
    ($cache:ty) => {
        impl UnderModel for $cache {
            fn get_id(&mut self, k: u8) -> Option<u32> {
                self.get(&k).map(|v| v.0)
            }
            fn peek_id(&self, k: u8) -> Option<u32> {
                self.peek(&k).map(|v| v.0)
            }
            fn holds(&self, k: u8) -> bool {
                self.contains_key(&k)
            }
            fn put(&mut self, k: u8, v: Value, ttl: Option<Duration>) {
                match ttl {
                    Some(ttl) => self.insert_with_ttl(k, v, ttl),
                    None => self.insert(k, v),
                }
            }
            fn remove_id(&mut self, k: u8) -> Option<u32> {
                self.remove(&k).map(|v| v.0)
            }
            fn retain_non_multiples(&mut self, m: u8) {
                self.retain(|k, _| k % m != 0);
            }
            fn resize(&mut self, max: u64) {
                self.set_max_capacity(max);
            }
            fn clear(&mut self) {
                self.invalidate_all();
            }
            fn maintain(&mut self) {
                self.run_pending_tasks();
            }
            fn validate(&self) {
                <$cache>::validate(self);
            }
            fn state(&self) -> (CacheStats, usize, u64, Vec<u32>) {
                let held = self.iter().map(|(_, v)| v.0).collect();
                (self.stats(), self.len(), self.weighted_size(), held)
            }
        }
    };
}

under_model!(cortado::unsync::Cache<u8, Value>);
under_model!(cortado::sync::Cache<u8, Value>);

/// One value ever written.
struct Written {
    key: u8,
    weight: u8,
    /// When it expires, reads included.
    deadline: u64,
    /// When its write makes it expire (a read under time to idle moves `deadline` up to here).
    write_deadline: u64,
    reported: Option<RemovalCause>,
}

/// See the [module docs](self).
pub struct Model {
    settings: Settings,
    written: Vec<Written>,
    /// The id held under each key, expired or not, until it is reported.
    current: HashMap<u8, u32>,
    now: u64,
    max: u64,
    hits: u64,
    misses: u64,
    loads: u64,
    load_failures: u64,
    counts: HashMap<RemovalCause, u64>,
    /// The weight of the values reported evicted (for size or expiry).
    evicted_weight: u64,
    reports: Arc<Mutex<Vec<(u8, u32, RemovalCause)>>>,
    clock: ManualClock,
    /// Whether the operation under way may remove values explicitly.
    explicit: bool,
    /// The id the operation under way replaced.
    replaced: Option<u32>,
}

impl Model {
    /// A model, and `builder` set up for it: the model's capacity, `policy`, a manual clock,
    /// stats, a listener that reports to the model, and the lifetimes and weigher `settings`
    /// ask for.
    pub fn new<S, F>(
        builder: CacheBuilder<u8, Value, S, F>,
        policy: EvictionPolicy,
        settings: Settings,
    ) -> (Self, CacheBuilder<u8, Value, S, F>) {
        let settings = Settings {
            ttl: settings.ttl && !settings.custom,
            tti: settings.tti && !settings.custom,
            ..settings
        };
        let reports: Arc<Mutex<Vec<(u8, u32, RemovalCause)>>> = Arc::default();
        let sink = reports.clone();
        let clock = ManualClock::new();
        let mut builder = builder
            .max_capacity(CAPACITY)
            .eviction_policy(policy)
            .clock(clock.clone())
            .record_stats()
            .eviction_listener(move |k: &u8, v: &Value, cause| {
                sink.lock().unwrap().push((*k, v.0, cause))
            });
        if settings.weighted {
            builder = builder.weigher(|_: &u8, v: &Value| u32::from(v.1));
        }
        if settings.custom {
            builder = builder.expire_after(ByWeight);
        }
        if settings.ttl {
            builder = builder.time_to_live(Duration::from_secs(30));
        }
        if settings.tti {
            builder = builder.time_to_idle(Duration::from_secs(12));
        }
        let model = Self {
            settings,
            written: Vec::new(),
            current: HashMap::new(),
            now: 0,
            max: CAPACITY,
            hits: 0,
            misses: 0,
            loads: 0,
            load_failures: 0,
            counts: HashMap::new(),
            evicted_weight: 0,
            reports,
            clock,
            explicit: false,
            replaced: None,
        };
        (model, builder)
    }

    /// The id the next write gets.
    pub fn next_id(&self) -> u32 {
        self.written.len() as u32
    }

    /// The live id under `k`: what a read or removal should return.
    pub fn expect(&self, k: u8) -> Option<u32> {
        self.current.get(&k).copied().filter(|&id| self.live(id))
    }

    fn live(&self, id: u32) -> bool {
        self.written[id as usize].deadline > self.now
    }

    fn idle(&self) -> u64 {
        if self.settings.tti {
            self.now + 12 * SEC
        } else {
            u64::MAX
        }
    }

    /// A `get` of `k` returned `got`.
    pub fn read(&mut self, k: u8, got: Option<u32>) {
        assert_eq!(got, self.expect(k), "get {k}");
        match got {
            Some(id) => self.hit(id),
            None => self.misses += 1,
        }
    }

    /// A `get_mut` of `k` returned `got`, whose weight the caller then set to `w` in place: a
    /// read (for expiry too), of a value that now weighs `w`.
    pub fn mutated(&mut self, k: u8, got: Option<u32>, w: u8) {
        self.read(k, got);
        if let Some(id) = got {
            self.written[id as usize].weight = w;
        }
    }

    fn hit(&mut self, id: u32) {
        let (custom, idle, now) = (self.settings.custom, self.idle(), self.now);
        let entry = &mut self.written[id as usize];
        entry.deadline = if custom {
            now + (entry.deadline - now).min(4 * SEC)
        } else {
            entry.write_deadline.min(idle)
        };
        self.hits += 1;
    }

    /// A `peek` of `k` returned `got` and `contains_key` said `contains`.
    pub fn peeked(&self, k: u8, got: Option<u32>, contains: bool) {
        let expected = self.expect(k);
        assert_eq!(got, expected, "peek {k}");
        assert_eq!(contains, expected.is_some(), "contains_key {k}");
    }

    /// A write of `k` with weight `w` (and a lifetime of `ttl` seconds, if given) is about to
    /// be made; returns the id of its value.
    pub fn write(&mut self, k: u8, w: u8, ttl: Option<u8>) -> u32 {
        let id = self.next_id();
        let deadline = match ttl {
            Some(t) => self.now + u64::from(t) * SEC,
            None if self.settings.custom => match self.expect(k) {
                Some(old) => self.written[old as usize].deadline,
                None => self.now + (5 + u64::from(w % 4)) * SEC,
            },
            None if self.settings.ttl => self.now + 30 * SEC,
            None => u64::MAX,
        };
        self.written.push(Written {
            key: k,
            weight: w,
            deadline: deadline.min(self.idle()),
            write_deadline: deadline,
            reported: None,
        });
        self.replaced = self.current.insert(k, id);
        id
    }

    /// A `get_with(k, ..)` (or `get_or_insert_with`) whose loader would make a value of weight
    /// `w` returned the value of id `got`.
    pub fn loaded(&mut self, k: u8, w: u8, got: u32) {
        match self.expect(k) {
            Some(held) => {
                assert_eq!(got, held, "get_with {k}");
                self.hit(held);
            }
            None => {
                assert_eq!(got, self.next_id(), "get_with {k} loads");
                self.misses += 1;
                self.loads += 1;
                self.write(k, w, None);
            }
        }
    }

    /// A loader call for `k` whose loader would fail saw the live value `got` (`None`: it
    /// ran the loader, which failed).
    pub fn load_failed(&mut self, k: u8, got: Option<u32>) {
        assert_eq!(got, self.expect(k), "failing load of {k}");
        match got {
            Some(id) => self.hit(id),
            None => {
                self.misses += 1;
                self.load_failures += 1;
            }
        }
    }

    /// A `remove` of `k` returned `got`.
    pub fn removed(&mut self, k: u8, got: Option<u32>) {
        assert_eq!(got, self.expect(k), "remove {k}");
        self.explicit = true;
    }

    /// The operation under way may remove values explicitly (`retain`, `invalidate_all`).
    pub fn explicit(&mut self) {
        self.explicit = true;
    }

    /// The capacity became `max`.
    pub fn resize(&mut self, max: u64) {
        self.max = max;
    }

    /// Moves the cache's clock and the model's by `nanos`.
    pub fn advance(&mut self, nanos: u64) {
        self.now += nanos;
        self.clock.advance(Duration::from_nanos(nanos));
    }

    /// Runs `op` on `cache`, telling the model what it called and what came back.
    pub fn apply(&mut self, cache: &mut impl UnderModel, op: &SharedOp) {
        match *op {
            SharedOp::Get(k) => self.read(k, cache.get_id(k)),
            SharedOp::Peek(k) => self.peeked(k, cache.peek_id(k), cache.holds(k)),
            SharedOp::Insert(k, w) => {
                let id = self.write(k, w, None);
                cache.put(k, (id, w), None);
            }
            SharedOp::InsertTtl(k, w, t) => {
                let id = self.write(k, w, Some(t));
                cache.put(k, (id, w), Some(Duration::from_secs(u64::from(t))));
            }
            SharedOp::Remove(k) => self.removed(k, cache.remove_id(k)),
            SharedOp::Advance(s) => self.advance(u64::from(s) * SEC),
            SharedOp::AdvanceNanos(b) => self.advance((1u64 << (b % 45)) + u64::from(b)),
            SharedOp::Retain(m) => {
                self.explicit();
                cache.retain_non_multiples(m);
            }
            SharedOp::Resize(n) => {
                self.resize(u64::from(n));
                cache.resize(u64::from(n));
            }
            SharedOp::InvalidateAll => {
                self.explicit();
                cache.clear();
            }
            SharedOp::RunPending => cache.maintain(),
        }
    }

    /// After operation `op`: validates `cache`, takes the listener's reports and checks each
    /// cause, then the cache's stats, `len`, `weighted_size` and the ids its `iter` yields.
    pub fn check(&mut self, op: &impl Debug, cache: &impl UnderModel) {
        cache.validate();
        let (stats, len, weighted_size, mut held) = cache.state();
        let reports = std::mem::take(&mut *self.reports.lock().unwrap());
        for (k, id, cause) in reports {
            let alive = self.live(id);
            let entry = &mut self.written[id as usize];
            assert_eq!(entry.key, k, "id {id} reported under another key");
            assert_eq!(
                entry.reported, None,
                "id {id} reported twice: {op:?}, {cause:?}"
            );
            entry.reported = Some(cause);
            *self.counts.entry(cause).or_default() += 1;
            if cause.was_evicted() {
                self.evicted_weight += if self.settings.weighted {
                    u64::from(entry.weight)
                } else {
                    1
                };
            }
            match cause {
                RemovalCause::Expired => assert!(!alive, "id {id} expired early: {op:?}"),
                RemovalCause::Size => assert!(alive, "expired id {id} reported Size: {op:?}"),
                RemovalCause::Explicit => {
                    assert!(self.explicit && alive, "id {id} Explicit by {op:?}")
                }
                RemovalCause::Replaced => {
                    assert!(alive, "expired id {id} reported Replaced: {op:?}");
                    assert_eq!(self.replaced, Some(id), "id {id} Replaced by {op:?}")
                }
            }
            if self.current.get(&k) == Some(&id) {
                self.current.remove(&k);
            }
        }
        // The replaced value is gone, reported by now.
        if let Some(old) = self.replaced.take() {
            assert!(
                self.written[old as usize].reported.is_some(),
                "replaced id {old} never reported"
            );
        }
        self.explicit = false;
        let count = |c| self.counts.get(&c).copied().unwrap_or(0);
        assert_eq!(stats.hits, self.hits, "hits after {op:?}");
        assert_eq!(stats.misses, self.misses, "misses after {op:?}");
        assert_eq!(stats.load_successes, self.loads, "loads after {op:?}");
        assert_eq!(
            stats.load_failures, self.load_failures,
            "load failures after {op:?}"
        );
        assert_eq!(stats.evictions_size, count(RemovalCause::Size), "{op:?}");
        assert_eq!(
            stats.evictions_expired,
            count(RemovalCause::Expired),
            "{op:?}"
        );
        assert_eq!(
            stats.removals_explicit,
            count(RemovalCause::Explicit),
            "{op:?}"
        );
        assert_eq!(stats.replacements, count(RemovalCause::Replaced), "{op:?}");
        assert_eq!(stats.eviction_weight, self.evicted_weight, "{op:?}");
        // Unreported values are exactly those held (their weights are the weighted size).
        let weighted = self.settings.weighted;
        let weight: u64 = self
            .current
            .values()
            .map(|&id| {
                if weighted {
                    u64::from(self.written[id as usize].weight)
                } else {
                    1
                }
            })
            .sum();
        assert_eq!(weighted_size, weight, "weighted size after {op:?}");
        assert!(weight <= self.max);
        held.sort_unstable();
        let mut expected: Vec<u32> = self
            .current
            .values()
            .copied()
            .filter(|&id| self.live(id))
            .collect();
        expected.sort_unstable();
        assert_eq!(held, expected, "iter after {op:?}");
        // `len` counts what `iter` yields: not the expired values held until maintenance.
        assert_eq!(len, expected.len(), "len after {op:?}");
    }

    /// At the end, after a last `run_pending_tasks`: every expired value was reported.
    pub fn finish(&self) {
        for (id, entry) in self.written.iter().enumerate() {
            assert!(
                entry.reported.is_some() || entry.deadline > self.now,
                "expired id {id} never reported"
            );
        }
    }
}
