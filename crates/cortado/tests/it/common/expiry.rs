//! The expiry model that `unsync_model` and `sync_model` run their W-TinyLFU caches against: a
//! time to live of 30 s, and with `idle` a time to idle of 10 s. What the cache holds is not
//! fixed, but what it returns must be the latest value written, never expired and never
//! removed. Each test calls its cache, tells the model what it called and what came back, and
//! the model checks it; [`ExpiryModel::check_held`] compares what the cache's `iter` yields.

use std::collections::HashMap;
use std::time::Duration;

use cortado::time::ManualClock;

/// The time to live of a plain write, in seconds.
pub const TTL: u64 = 30;

/// The time to idle, in seconds, when the model has one.
pub const TTI: u64 = 10;

/// See the [module docs](self).
pub struct ExpiryModel {
    /// key -> (value, deadline in seconds, idle deadline)
    entries: HashMap<u8, (u16, u64, u64)>,
    now: u64,
    idle: bool,
    clock: ManualClock,
}

impl ExpiryModel {
    /// A model at time 0, with a time to idle if `idle`; build the cache with [`Self::clock`].
    pub fn new(idle: bool) -> Self {
        Self {
            entries: HashMap::new(),
            now: 0,
            idle,
            clock: ManualClock::new(),
        }
    }

    /// The clock that the model moves, for the cache's builder.
    pub fn clock(&self) -> ManualClock {
        self.clock.clone()
    }

    /// When an entry read or written now goes idle.
    fn idle_for(&self) -> u64 {
        if self.idle {
            self.now + TTI
        } else {
            u64::MAX
        }
    }

    /// The live value under `k`: what a read should return.
    pub fn live(&self, k: u8) -> Option<u16> {
        let now = self.now;
        self.entries
            .get(&k)
            .filter(|e| e.1 > now && e.2 > now)
            .map(|e| e.0)
    }

    /// A read of `k` returned `got`: the latest value written, never an expired one, nor one
    /// under an absent key. A hit moves its idle deadline; returns the entry's value, to set.
    fn checked_read(&mut self, k: u8, got: Option<u16>) -> Option<&mut u16> {
        let (now, idle_for) = (self.now, self.idle_for());
        match (got, self.entries.get_mut(&k)) {
            (Some(v), Some((expected, deadline, idle_deadline))) => {
                assert_eq!(v, *expected, "stale value");
                assert!(
                    *deadline > now && *idle_deadline > now,
                    "expired value returned"
                );
                *idle_deadline = idle_for;
                Some(expected)
            }
            (Some(v), None) => panic!("value {v} for absent key {k}"),
            (None, _) => None,
        }
    }

    /// A `get` of `k` returned `got`.
    pub fn read(&mut self, k: u8, got: Option<u16>) {
        self.checked_read(k, got);
    }

    /// A `get_mut` of `k` returned `got`, and the caller set the value to `v`: a read for
    /// expiry (the idle deadline moves, the write deadline stays) that changes the value.
    pub fn read_then_set(&mut self, k: u8, got: Option<u16>, v: u16) {
        if let Some(value) = self.checked_read(k, got) {
            *value = v;
        }
    }

    /// A hit on `k` that the caller checked against [`Self::live`]: its idle deadline moves.
    pub fn hit(&mut self, k: u8) {
        let idle_for = self.idle_for();
        self.entries.get_mut(&k).unwrap().2 = idle_for;
    }

    /// A write of `v` under `k` with the time to live.
    pub fn insert(&mut self, k: u8, v: u16) {
        self.insert_with_ttl(k, v, TTL);
    }

    /// A write of `v` under `k` with a lifetime of `ttl` seconds.
    pub fn insert_with_ttl(&mut self, k: u8, v: u16, ttl: u64) {
        let entry = (v, self.now + ttl, self.idle_for());
        self.entries.insert(k, entry);
    }

    /// A `remove` of `k` returned `got`: if anything, the live value.
    pub fn removed(&mut self, k: u8, got: Option<u16>) {
        let expected = self.live(k);
        self.entries.remove(&k);
        if got.is_some() {
            assert_eq!(got, expected);
        }
    }

    /// Moves the cache's clock and the model's by `s` seconds.
    pub fn advance(&mut self, s: u8) {
        self.now += u64::from(s);
        self.clock.advance(Duration::from_secs(u64::from(s)));
    }

    /// A `retain` kept the keys that are not multiples of `m`.
    pub fn retain_non_multiples(&mut self, m: u8) {
        self.entries.retain(|k, _| k % m != 0);
    }

    /// An `invalidate_all`.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// After `run_pending_tasks`: every key still held (`keys`) was written and is not past its
    /// write deadline.
    pub fn check_pending_run(&self, mut keys: impl Iterator<Item = u8>) {
        assert!(keys.all(|k| self.entries.get(&k).is_some_and(|e| e.1 > self.now)));
    }

    /// What the cache's `iter` yields (`held`) is each the latest value written, alive.
    pub fn check_held(&self, held: impl Iterator<Item = (u8, u16)>) {
        for (k, v) in held {
            let (expected, deadline, idle_deadline) = self.entries[&k];
            assert_eq!(v, expected);
            assert!(deadline > self.now && idle_deadline > self.now);
        }
    }
}
