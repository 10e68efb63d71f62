//! When a read must look closer at an entry for refresh after write (`refresh_after_write`,
//! see [`crate::refresh`]): kept only by refreshing shards, where a read compares one time
//! with its own, and starts a reload through the [`RefreshTrigger`] when the entry is due.
//!
//! # Design
//!
//! Per slot, the *check time*: the earlier of when the entry is due for a reload (its last
//! write plus the interval) and the deadline the wheel holds for it. A hit of a refreshing
//! shard compares only this time, not also the wheel's deadline, so it costs what a hit of a
//! shard with only a lifetime costs (a bounds test, a load and a compare); once the time
//! passes, an out-of-line path tells an expired entry from one due for a reload. A write
//! stores its due time, and every change of the wheel's deadline for a live slot passes
//! through [`Shard::fold_deadline`], which keeps the check time the earlier of the two.
//!
//! - **8 bytes per slot**, in an array beside the slab that grows with it; a shard that does
//!   not refresh keeps it empty, so its bounds test is also the "does this shard refresh" test.
//! - **A due time after the deadline** (a refresh interval longer than the entry's lifetime)
//!   would be lost under the check time, and a lifetime the entry is later given without a
//!   write (the server's `EXPIRE`, a time to idle moving the wheel's lower bound) would need
//!   it back: such due times are kept in a small map by slot, empty when refresh comes first,
//!   as it does when the interval is shorter than the lifetime (the setting's purpose).
//!
//! Measurements: `docs/decisions/0019-refresh-due-times.md` and
//! `docs/decisions/0020-refresh-check-folds-deadline.md`.

use std::hash::{BuildHasher, Hash};
use std::sync::OnceLock;

use super::Shard;

/// Starts a reload of a live entry (its key, value and hash) in the background; true if it
/// did (none of the key was in flight).
pub(crate) type StartReload<K, V> = Box<dyn Fn(&K, &V, u64) -> bool + Send + Sync>;

/// What the shards of a refreshing cache share: the interval, and how to start a reload,
/// which the front end sets once the cache exists (a trait object set late, so that the core
/// does not name its front ends).
pub(crate) struct RefreshTrigger<K, V> {
    /// The age, in nanoseconds, from which a read starts a reload.
    pub(crate) after: u64,
    pub(crate) start: OnceLock<StartReload<K, V>>,
}

impl<K, V> RefreshTrigger<K, V> {
    pub(crate) fn new(after: u64) -> Self {
        Self {
            after,
            start: OnceLock::new(),
        }
    }

    /// Starts a reload of (`key`, `value`); false if none was started.
    pub(crate) fn start(&self, key: &K, value: &V, hash: u64) -> bool {
        self.start
            .get()
            .is_some_and(|start| start(key, value, hash))
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> Shard<K, V, S> {
    /// Whether the live slot `i`, read at `now`, is due for a reload (false unless the shard
    /// refreshes): a bounds test, a load and a compare in line, the due time out of line only
    /// once the check time has passed.
    #[inline(always)]
    pub(super) fn refresh_due(&self, i: u32, now: u64) -> bool {
        self.refresh_check_at(i)
            .is_some_and(|check| check <= now && self.due_past_check(i) <= now)
    }

    /// Whether the live slot `i` of a refreshing shard, whose check time a read at `now` found
    /// passed, is still live (not expired); if so, starts its reload when it is due. Out of
    /// line, and returning a flag rather than the hit, so that the read path keeps its hit in
    /// registers: it runs once per interval or lifetime of an entry, not per read.
    #[cold]
    #[inline(never)]
    pub(super) fn live_past_check(&self, i: u32, hash: u64, now: u64) -> bool {
        if self.is_expired(i, now) {
            // Left for `advance`, which removes it and queues the notification.
            return false;
        }
        if self.due_past_check(i) <= now {
            self.start_refresh(i, hash);
        }
        true
    }

    /// Starts a reload of the live slot `i` (its key hashing to `hash`), which a read found
    /// [due](Self::refresh_due). Out of line: it is rare.
    #[inline(never)]
    pub(super) fn start_refresh(&self, i: u32, hash: u64) {
        if let Some(refresh) = &self.refresh {
            let (key, value) = self.entry_at(i);
            refresh.start(key, value, hash);
        }
    }
}

impl<K, V, S> Shard<K, V, S> {
    /// Records that the live slot `i` was written at `now`, if the shard refreshes entries:
    /// it is due for a reload one interval later. The write's deadline, if any, is folded in
    /// next ([`fold_deadline`](Self::fold_deadline), from `schedule`).
    #[inline(always)]
    pub(super) fn record_write_time(&mut self, i: u32, now: u64) {
        if self.keeps_refresh_times {
            let due = now.saturating_add(self.refresh_after);
            match self.refresh_checks.get_mut(i as usize) {
                Some(check) => *check = due,
                None => self.grow_refresh_checks(i, due),
            }
            if !self.late_refreshes.is_empty() {
                self.late_refreshes.remove(&i);
            }
        }
    }

    /// Grows the check times to hold slot `i`, and gives it `due`. As long as the slab's
    /// capacity, so that it grows as rarely as the slab does (to its length, it grew at every
    /// new slot while the cache filled).
    #[cold]
    #[inline(never)]
    fn grow_refresh_checks(&mut self, i: u32, due: u64) {
        let i = i as usize;
        let len = self.index.slots.capacity().max(i + 1);
        self.refresh_checks.resize(len, u64::MAX);
        self.refresh_checks[i] = due;
    }

    /// Keeps the live slot `i`'s check time the earlier of its due time and `deadline`, the
    /// one the wheel now holds for it (`None`: none). Every change of the wheel's deadline for
    /// a live slot comes here.
    ///
    /// In line, the common case: no due time is kept aside (so each check time is its slot's
    /// due time) and this one is not after the deadline, which leaves it as it is.
    #[inline(always)]
    pub(super) fn fold_deadline(&mut self, i: u32, deadline: Option<u64>) {
        if self.keeps_refresh_times {
            let deadline = deadline.unwrap_or(u64::MAX);
            let unchanged = self.late_refreshes.is_empty()
                && self
                    .refresh_checks
                    .get(i as usize)
                    .is_some_and(|&check| check <= deadline);
            if !unchanged {
                self.fold_deadline_into_check(i, deadline);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn fold_deadline_into_check(&mut self, i: u32, deadline: u64) {
        let Some(check) = self.refresh_checks.get_mut(i as usize) else {
            return;
        };
        let due = if self.late_refreshes.is_empty() {
            *check
        } else {
            self.late_refreshes.remove(&i).unwrap_or(*check)
        };
        *check = due.min(deadline);
        if due > deadline {
            self.late_refreshes.insert(i, due);
        }
    }

    /// When the live slot `i`, whose check time is its due time unless that is kept aside,
    /// becomes due for a reload. Out of line: a read asks only once the check time passed.
    #[cold]
    #[inline(never)]
    fn due_past_check(&self, i: u32) -> u64 {
        match self.late_refreshes.get(&i) {
            Some(&due) => due,
            None => self.refresh_checks[i as usize],
        }
    }

    /// When the live slot `i` must next be looked at closer (the earlier of its due time and
    /// its deadline); `None` unless the shard refreshes. One bounds test says both: the check
    /// times are empty unless the shard refreshes, and a write of a live slot stores its time,
    /// so a refreshing shard never finds it out of bounds.
    #[inline(always)]
    pub(crate) fn refresh_check_at(&self, i: u32) -> Option<u64> {
        self.refresh_checks.get(i as usize).copied()
    }

    /// When the live slot `i` becomes due for a reload; `None` unless the shard refreshes.
    #[cfg(test)]
    pub(crate) fn refresh_at(&self, i: u32) -> Option<u64> {
        self.refresh_check_at(i)?;
        Some(self.due_past_check(i))
    }

    /// Drops what the check times keep for slots at or past `len`, after the slab shrank to
    /// it (live slots are all below it).
    pub(super) fn shrink_refresh_checks(&mut self, len: usize) {
        self.refresh_checks.truncate(len);
        self.refresh_checks.shrink_to_fit();
        self.late_refreshes.retain(|&i, _| (i as usize) < len);
        self.late_refreshes.shrink_to_fit();
    }

    /// Heap bytes of the check times and the due times kept aside.
    pub(super) fn refresh_checks_bytes(&self) -> usize {
        self.refresh_checks.capacity() * 8
            + self.late_refreshes.capacity() * (std::mem::size_of::<(u32, u64)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::StartReload;
    use crate::policy::EvictionPolicy;
    use crate::shard::{RefreshTrigger, Shard, ShardConfig};

    /// A shard refreshing 100 ns after each write, or not refreshing.
    fn shard(refreshes: bool) -> Shard<u32, u32, hashbrown::DefaultHashBuilder> {
        let mut config = ShardConfig::plain(Some(100), EvictionPolicy::lru());
        config.refresh = refreshes.then(|| Arc::new(RefreshTrigger::new(100)));
        Shard::new(&config, hashbrown::DefaultHashBuilder::default())
    }

    #[test]
    fn refresh_at_kept_follows_inserts_and_replacements() {
        let mut shard = shard(true);
        let (h1, h2) = (shard.hash(&1), shard.hash(&2));
        let a = shard.insert(h1, 1, 10, 5, None);
        let b = shard.insert(h2, 2, 20, 7, None);
        assert_eq!(shard.refresh_at(a), Some(105));
        assert_eq!(shard.refresh_at(b), Some(107));
        // A read does not move it; a replacement does.
        assert_eq!(shard.get(h1, &1, 9), Some(&10));
        assert_eq!(shard.refresh_at(a), Some(105));
        shard.insert(h1, 1, 11, 12, None);
        assert_eq!(shard.refresh_at(a), Some(112));
    }

    #[test]
    fn refresh_due_at_interval_after_write_true() {
        let mut shard = shard(true);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, None);
        assert!(!shard.refresh_due(i, 104));
        assert!(shard.refresh_due(i, 105));
        assert!(shard.refresh_due(i, 1_000));
    }

    #[test]
    fn refresh_at_near_end_of_time_saturates() {
        let mut shard = shard(true);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, u64::MAX - 50, None);
        assert_eq!(shard.refresh_at(i), Some(u64::MAX));
        assert!(!shard.refresh_due(i, u64::MAX - 1));
    }

    #[test]
    fn refresh_at_after_removals_and_shrink_kept_for_live_slots() {
        let mut shard = shard(true);
        let keys: Vec<u32> = (0..50).collect();
        for &k in &keys {
            let h = shard.hash(&k);
            shard.insert(h, k, k, 10, None);
        }
        for &k in &keys[10..] {
            let h = shard.hash(&k);
            shard.remove(h, &k, 20);
        }
        shard.shrink_to_fit();
        shard.validate();
        for &k in &keys[..10] {
            let h = shard.hash(&k);
            let i = shard.find(h, &k).expect("kept");
            assert_eq!(shard.refresh_at(i), Some(110));
        }
        let h = shard.hash(&99);
        let i = shard.insert(h, 99, 99, 30, None);
        assert_eq!(shard.refresh_at(i), Some(130));
        shard.validate();
    }

    /// The keys whose reloads a shard started, in order.
    type Started = Arc<Mutex<Vec<u32>>>;

    /// A shard refreshing 100 ns after each write with the lifetimes `rules` gives, and the
    /// keys whose reloads it started.
    fn refreshing_with(
        rules: impl FnOnce(&mut ShardConfig<u32, u32>),
    ) -> (Shard<u32, u32, hashbrown::DefaultHashBuilder>, Started) {
        let mut config = ShardConfig::plain(Some(100), EvictionPolicy::lru());
        rules(&mut config);
        let trigger = Arc::new(RefreshTrigger::new(100));
        let started = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&started);
        let start: StartReload<u32, u32> = Box::new(move |&key, _, _| {
            log.lock().unwrap().push(key);
            true
        });
        assert!(trigger.start.set(start).is_ok());
        config.refresh = Some(trigger);
        (
            Shard::new(&config, hashbrown::DefaultHashBuilder::default()),
            started,
        )
    }

    #[test]
    fn refresh_check_lifetime_shorter_than_interval_keeps_due_aside() {
        let (mut shard, started) = refreshing_with(|_| {});
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, Some(Duration::from_nanos(50)));
        assert_eq!(shard.refresh_check_at(i), Some(55));
        assert_eq!(shard.refresh_at(i), Some(105));
        shard.validate();
        // A longer lifetime given without a write: the due time comes back from aside.
        assert!(shard.set_expires_after(h, &1, 10, Some(Duration::from_nanos(200))));
        assert_eq!(shard.refresh_check_at(i), Some(105));
        assert_eq!(shard.refresh_at(i), Some(105));
        shard.validate();
        assert_eq!(shard.get(h, &1, 104), Some(&10));
        assert!(started.lock().unwrap().is_empty());
        assert_eq!(shard.get(h, &1, 105), Some(&10));
        assert_eq!(*started.lock().unwrap(), [1]);
        // A lifetime removed: only the due time is left to check.
        assert!(shard.set_expires_after(h, &1, 106, None));
        assert_eq!(shard.refresh_check_at(i), Some(105));
        shard.validate();
    }

    #[test]
    fn get_past_deadline_before_due_is_expired_without_reload() {
        let (mut shard, started) = refreshing_with(|config| config.rules.ttl = Some(30));
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 0, None);
        assert_eq!(shard.refresh_check_at(i), Some(30));
        assert_eq!(shard.get(h, &1, 29), Some(&10));
        assert_eq!(shard.get(h, &1, 30), None);
        assert!(started.lock().unwrap().is_empty());
        shard.advance(30);
        assert_eq!(shard.len(), 0);
        shard.validate();
    }

    #[test]
    fn get_past_due_before_deadline_starts_one_reload_per_read() {
        let (mut shard, started) = refreshing_with(|config| config.rules.ttl = Some(1_000));
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 0, None);
        assert_eq!(shard.refresh_check_at(i), Some(100));
        assert_eq!(shard.get(h, &1, 99), Some(&10));
        assert!(started.lock().unwrap().is_empty());
        assert_eq!(shard.get(h, &1, 100), Some(&10));
        assert_eq!(shard.get(h, &1, 999), Some(&10));
        // Each read past the due time asks; the front end's trigger keeps one in flight.
        assert_eq!(*started.lock().unwrap(), [1, 1]);
        assert_eq!(shard.get(h, &1, 1_000), None);
        shard.validate();
    }

    #[test]
    fn refresh_check_time_to_idle_follows_wheel_lower_bound() {
        let (mut shard, started) = refreshing_with(|config| config.rules.tti = Some(50));
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 0, None);
        // The wheel's 50 comes first; the due time 100 waits aside.
        assert_eq!(shard.refresh_check_at(i), Some(50));
        shard.validate();
        assert_eq!(shard.get(h, &1, 40), Some(&10));
        shard.advance(60);
        shard.validate();
        assert_eq!(shard.refresh_check_at(i), Some(90));
        assert_eq!(shard.get(h, &1, 85), Some(&10));
        shard.advance(95);
        // Idle until 135 now: the due time is the earlier again.
        assert_eq!(shard.refresh_check_at(i), Some(100));
        shard.validate();
        assert!(started.lock().unwrap().is_empty());
        assert_eq!(shard.get(h, &1, 100), Some(&10));
        assert_eq!(*started.lock().unwrap(), [1]);
    }

    #[test]
    fn refresh_check_slot_reused_drops_due_kept_aside() {
        let (mut shard, _) = refreshing_with(|_| {});
        let h1 = shard.hash(&1);
        let i = shard.insert(h1, 1, 10, 0, Some(Duration::from_nanos(20)));
        assert_eq!(shard.refresh_at(i), Some(100));
        shard.remove(h1, &1, 5);
        let h2 = shard.hash(&2);
        let j = shard.insert(h2, 2, 20, 10, None);
        assert_eq!(j, i, "the freed slot is reused");
        assert_eq!(shard.refresh_check_at(j), Some(110));
        assert_eq!(shard.refresh_at(j), Some(110));
        shard.validate();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, Option<u8>),
        SetLifetime(u8, Option<u8>),
        Get(u8),
        Remove(u8),
        Tick(u8),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let key = 0..12u8;
        let lifetime = proptest::option::of(0..250u8);
        prop_oneof![
            3 => (key.clone(), lifetime.clone()).prop_map(|(k, t)| Op::Insert(k, t)),
            2 => (key.clone(), lifetime).prop_map(|(k, t)| Op::SetLifetime(k, t)),
            4 => key.clone().prop_map(Op::Get),
            1 => key.prop_map(Op::Remove),
            2 => (1..80u8).prop_map(Op::Tick),
        ]
    }

    proptest::proptest! {
        /// Reads of a refreshing shard with explicit lifetimes, given and changed in any
        /// order, against a model of each key's due time and deadline: a read sees the value
        /// exactly while its deadline is ahead, and asks for a reload exactly when its due
        /// time has passed.
        #[test]
        fn refresh_check_op_sequences_match_model(ops in proptest::collection::vec(op(), 1..120)) {
            let (mut shard, started) = refreshing_with(|_| {});
            // key -> (value, due, deadline)
            let mut model: std::collections::HashMap<u32, (u32, u64, Option<u64>)> =
                std::collections::HashMap::new();
            let mut now = 1u64;
            for (n, op) in ops.iter().enumerate() {
                let value = n as u32;
                match *op {
                    Op::Insert(k, ttl) => {
                        let k = u32::from(k);
                        let lifetime = ttl.map(|t| Duration::from_nanos(u64::from(t)));
                        shard.insert(shard.hash(&k), k, value, now, lifetime);
                        let deadline = ttl.map(|t| now + u64::from(t));
                        if deadline.is_some_and(|d| d <= now) {
                            model.remove(&k);
                        } else {
                            model.insert(k, (value, now + 100, deadline));
                        }
                    }
                    Op::SetLifetime(k, ttl) => {
                        let k = u32::from(k);
                        let lifetime = ttl.map(|t| Duration::from_nanos(u64::from(t)));
                        let live = model.get(&k).is_some_and(|e| e.2.is_none_or(|d| d > now));
                        let changed = shard.set_expires_after(shard.hash(&k), &k, now, lifetime);
                        proptest::prop_assert_eq!(changed, live);
                        if live {
                            let deadline = ttl.map(|t| now + u64::from(t));
                            if deadline.is_some_and(|d| d <= now) {
                                model.remove(&k);
                            } else {
                                model.get_mut(&k).unwrap().2 = deadline;
                            }
                        }
                    }
                    Op::Get(k) => {
                        let k = u32::from(k);
                        let before = started.lock().unwrap().len();
                        let got = shard.get(shard.hash(&k), &k, now).copied();
                        let entry = model.get(&k).filter(|e| e.2.is_none_or(|d| d > now));
                        proptest::prop_assert_eq!(got, entry.map(|e| e.0));
                        let asked = started.lock().unwrap().len() > before;
                        proptest::prop_assert_eq!(asked, entry.is_some_and(|e| e.1 <= now));
                    }
                    Op::Remove(k) => {
                        let k = u32::from(k);
                        shard.remove(shard.hash(&k), &k, now);
                        model.remove(&k);
                    }
                    Op::Tick(dt) => {
                        now += u64::from(dt);
                        shard.advance(now);
                        model.retain(|_, e| e.2.is_none_or(|d| d > now));
                    }
                }
                shard.validate();
            }
        }
    }

    #[test]
    fn refresh_at_not_kept_is_none() {
        let mut shard = shard(false);
        let h = shard.hash(&1);
        let i = shard.insert(h, 1, 10, 5, None);
        assert_eq!(shard.refresh_at(i), None);
    }
}
