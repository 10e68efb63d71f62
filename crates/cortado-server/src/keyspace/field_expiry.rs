//! The timers of hash fields' lifetimes (`HEXPIRE`): one shard's, in order of expiry time, so
//! that what is due is found without looking at anything that is not.
//!
//! A timer names a field of a key of a database and the time it was given; it is a reminder,
//! not the truth, which the hash keeps (see [`super::hash::Hash::remove_expired`]). So a
//! change that takes a lifetime away or moves it (`HPERSIST`, `HSET`, `HDEL`, a new
//! `HEXPIRE`, the key's overwrite or eviction) need not find its timer: a timer that fires for
//! a field whose time is another, or for a key that is gone, removes nothing. What is cheap to
//! find is dropped at once (the timers of a removed key, of a flushed database).
//!
//! # Design
//!
//! An ordered set of `(time, database, key, field)`: the due timers are its first ones, taken
//! in O(log n) each, and a field's timer is found by its value for removal. The library's
//! timer wheel (`cortado::timer_wheel`) would spare the log factor but holds nodes by handle,
//! which the hash would then have to keep per field; fields with lifetimes are rare enough
//! that the set's simplicity wins (see `docs/decisions/0242-server-hash-field-expiry.md`).
//! Times are Unix milliseconds, as the commands speak them: a field is due once the shard's
//! clock is past its millisecond, as in Redis.
//!
//! Setting a shard's time removes the fields of at most [`FIELD_EXPIRY_BATCH`] due timers, as
//! the keys' expiry removes at most a batch of keys per hold of the lock, so that a burst of
//! fields expiring in one millisecond does not hold up the shard's other clients. While more
//! are due, a command removes the due fields of each key it uses before it uses it (a walk of
//! that hash's lifetimes), so none ever sees an expired field, and the cron's expiry cycle
//! takes the rest a batch per hold.

use std::collections::BTreeSet;

use super::{Shard, Value};
use crate::notify::class;

/// What one timer costs, beside the copy of its field (which the hash's weight counts): the
/// set's element (an expiry time, a database, two boxed slices: 48 bytes) in B-tree nodes
/// about half full (timers arrive in about increasing time, which leaves split nodes half
/// full), and the block of its copy of the key (24 bytes for keys up to 16 bytes; the hash
/// does not know its key's length). Decision 0242 measured 184 bytes per lifetime in all.
pub const TIMER_BYTES: usize = 96 + 24;

/// The most field timers one setting of a shard's time takes: as many as the keys' batch
/// (`EXPIRY_BATCH`), so that a burst of fields expiring together holds a shard no longer
/// than a burst of keys does.
pub const FIELD_EXPIRY_BATCH: usize = 256;

/// One field's timer: ordered by time first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timer {
    /// The field's expiry time, in Unix milliseconds.
    pub at: i64,
    /// The database of the key.
    pub db: u32,
    /// The hash's key.
    pub key: Box<[u8]>,
    /// The field.
    pub field: Box<[u8]>,
}

/// One shard's timers of fields. See the [module docs](self).
#[derive(Debug, Default)]
pub struct FieldTimers {
    timers: BTreeSet<Timer>,
    /// Whether the last [`take_due`](Self::take_due) left due timers behind (see
    /// [`behind`](Self::behind)).
    left_due: bool,
}

impl FieldTimers {
    /// Whether there is no timer: the test on every command's path.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }

    /// The number of timers.
    pub fn len(&self) -> usize {
        self.timers.len()
    }

    /// Sets a timer for `field` of `key` in `db` at `at` (Unix milliseconds).
    pub fn add(&mut self, db: usize, key: &[u8], field: &[u8], at: i64) {
        self.timers.insert(Timer {
            at,
            db: db as u32,
            key: key.into(),
            field: field.into(),
        });
    }

    /// Drops the timer for `field` of `key` in `db` at `at`, if there is one.
    pub fn remove(&mut self, db: usize, key: &[u8], field: &[u8], at: i64) {
        self.timers.remove(&Timer {
            at,
            db: db as u32,
            key: key.into(),
            field: field.into(),
        });
    }

    /// Whether a timer is due at `now_ms` (Unix milliseconds): one whose millisecond is past.
    #[inline]
    pub fn any_due(&self, now_ms: i64) -> bool {
        self.timers.first().is_some_and(|t| t.at < now_ms)
    }

    /// Takes the timers due at `now_ms`, in order of time, at most `max` of them.
    pub fn take_due(&mut self, now_ms: i64, max: usize) -> Vec<Timer> {
        let mut due = Vec::new();
        while due.len() < max && self.any_due(now_ms) {
            due.extend(self.timers.pop_first());
        }
        self.left_due = self.any_due(now_ms);
        due
    }

    /// Whether due timers may wait behind the last [`take_due`](Self::take_due)'s batch: a
    /// command then removes the due fields of each key it uses first. False once no timer is
    /// left (a flush or a removal took them), so a mark never outlives them.
    #[inline(always)]
    pub fn behind(&self) -> bool {
        self.left_due && !self.timers.is_empty()
    }

    /// Drops the timers of database `db` (flushed).
    pub fn forget_db(&mut self, db: usize) {
        self.timers.retain(|t| t.db != db as u32);
    }

    /// Moves the timers of database `a` to `b` and back (`SWAPDB`).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        let (a, b) = (a as u32, b as u32);
        if self.timers.iter().all(|t| t.db != a && t.db != b) {
            return;
        }
        self.timers = std::mem::take(&mut self.timers)
            .into_iter()
            .map(|mut t| {
                if t.db == a {
                    t.db = b;
                } else if t.db == b {
                    t.db = a;
                }
                t
            })
            .collect();
    }
}

impl Shard {
    /// Sets a timer for `field` of `key` in `db`, which a command just gave the expiry time
    /// `at` (Unix milliseconds).
    pub fn add_field_timer(&mut self, db: usize, key: &[u8], field: &[u8], at: i64) {
        self.field_timers.add(db, key, field, at);
    }

    /// Drops the timer of `field` of `key` in `db` at `at`, whose lifetime a command cleared.
    pub fn remove_field_timer(&mut self, db: usize, key: &[u8], field: &[u8], at: i64) {
        self.field_timers.remove(db, key, field, at);
    }

    /// Sets the timers of every field of `value` that has a lifetime, before it is written at
    /// `key` of `db` by a command that carries a whole value (`RENAME`, `COPY`, `MOVE`): a
    /// hash's lifetimes travel with it. Not done by [`Shard::set`] itself, whose every `SET`
    /// paid 18 instructions for the test (callgrind, decision 0242).
    pub fn add_field_timers(&mut self, db: usize, key: &[u8], value: &Value) {
        if let Value::Hash(hash) = value {
            for (field, at) in hash.lifetimes() {
                self.field_timers.add(db, key, field, at);
            }
        }
    }

    /// Drops the timers of the fields of `value`, just removed from `key` of `db`.
    #[cold]
    pub(super) fn remove_field_timers(&mut self, db: usize, key: &[u8], value: &Value) {
        if let Value::Hash(hash) = value {
            for (field, at) in hash.lifetimes() {
                self.field_timers.remove(db, key, field, at);
            }
        }
    }

    /// Removes the fields whose time is past the shard's, as its time is set: the first
    /// [`FIELD_EXPIRY_BATCH`] due timers' fields, leaving the timers [behind](FieldTimers::behind) if more are
    /// due, so that a command about to use a key first removes that key's due fields
    /// ([`expire_fields_of`](Self::expire_fields_of)). So no command ever sees an expired
    /// field, and no lock hold pays for more than a batch of a burst that expires together.
    /// Tells `hexpired` once per hash, and deletes a hash left empty (telling `del`), as Redis
    /// 7.4 does; a watched hash is changed, as by a write. Returns the number of fields
    /// removed.
    #[cold]
    #[inline(never)]
    pub(super) fn expire_due_fields(&mut self) -> usize {
        let now_ms = (self.now / 1_000_000) as i64;
        let mut due = self.field_timers.take_due(now_ms, FIELD_EXPIRY_BATCH);
        if due.is_empty() {
            return 0;
        }
        // One pass per hash, hashes in the order their first field fell due.
        due.sort_by(|a, b| (a.db, &a.key).cmp(&(b.db, &b.key)));
        let mut removed = 0;
        for group in due.chunk_by(|a, b| a.db == b.db && a.key == b.key) {
            let (db, key) = (group[0].db as usize, &*group[0].key);
            removed += self.remove_fields(db, key, |hash| {
                group
                    .iter()
                    .filter(|t| hash.remove_expired(&t.field, t.at))
                    .count()
            });
        }
        removed
    }

    /// Removes every due field of `key`'s hash in `db`, for a command about to use the key
    /// while due timers wait behind the last batch. Their timers stay, and will remove
    /// nothing.
    #[cold]
    #[inline(never)]
    pub(super) fn expire_fields_of(&mut self, db: usize, key: &[u8]) {
        // A look that leaves the key's place in the policy as it is, for keys without
        // lifetimes (every key not a hash, most hashes).
        let timed = self.dbs[db]
            .as_ref()
            .and_then(|cache| cache.peek(key))
            .and_then(Value::as_hash)
            .is_some_and(super::hash::Hash::has_lifetimes);
        if !timed {
            return;
        }
        let now_ms = (self.now / 1_000_000) as i64;
        self.remove_fields(db, key, |hash| hash.remove_all_expired(now_ms));
    }

    /// Removes the fields `remove` takes out of `key`'s hash in `db` (it returns how many),
    /// telling and counting them.
    fn remove_fields(
        &mut self,
        db: usize,
        key: &[u8],
        remove: impl FnOnce(&mut super::hash::Hash) -> usize,
    ) -> usize {
        let Some(cache) = self.dbs[db].as_mut() else {
            return 0;
        };
        let Some(mut value) = cache.get_mut(key) else {
            return 0;
        };
        let Some(hash) = value.as_hash_mut() else {
            return 0;
        };
        let gone = remove(hash);
        let emptied = hash.is_empty();
        drop(value);
        if gone == 0 {
            return 0;
        }
        self.expired_fields += gone as u64;
        self.watches.touch(db, key);
        self.notifications
            .key_event(class::HASH, "hexpired", db, key);
        if emptied {
            self.remove(db, key);
            self.notifications.key_event(class::GENERIC, "del", db, key);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_timers_take_due_only_past_milliseconds_in_time_order() {
        let mut timers = FieldTimers::default();
        timers.add(0, b"k", b"late", 30);
        timers.add(0, b"k", b"early", 10);
        timers.add(1, b"j", b"same", 20);
        assert!(!timers.any_due(10), "a field lives through its millisecond");
        assert!(timers.take_due(10, usize::MAX).is_empty());
        let due = timers.take_due(21, usize::MAX);
        let fields: Vec<&[u8]> = due.iter().map(|t| &*t.field).collect();
        assert_eq!(fields, vec![&b"early"[..], b"same"]);
        assert_eq!(timers.len(), 1);
        assert!(timers.any_due(31));
    }

    #[test]
    fn field_timers_take_due_at_most_max_earliest_first() {
        let mut timers = FieldTimers::default();
        for at in (0..10).rev() {
            timers.add(0, b"k", format!("f{at}").as_bytes(), at);
        }
        let due = timers.take_due(100, 4);
        let times: Vec<i64> = due.iter().map(|t| t.at).collect();
        assert_eq!(times, [0, 1, 2, 3]);
        assert!(timers.any_due(100));
        assert_eq!(timers.len(), 6);
    }

    #[test]
    fn field_timers_remove_drops_only_the_exact_timer() {
        let mut timers = FieldTimers::default();
        timers.add(0, b"k", b"f", 10);
        timers.remove(0, b"k", b"f", 11);
        timers.remove(1, b"k", b"f", 10);
        assert_eq!(timers.len(), 1, "another time or database is another timer");
        timers.remove(0, b"k", b"f", 10);
        assert!(timers.is_empty());
    }

    #[test]
    fn field_timers_swap_and_forget_databases() {
        let mut timers = FieldTimers::default();
        timers.add(0, b"a", b"f", 10);
        timers.add(1, b"b", b"f", 10);
        timers.add(2, b"c", b"f", 10);
        timers.swap_dbs(0, 1);
        let dbs: Vec<(u32, &[u8])> = timers.timers.iter().map(|t| (t.db, &*t.key)).collect();
        assert_eq!(dbs, vec![(0, &b"b"[..]), (1, b"a"), (2, b"c")]);
        timers.forget_db(1);
        assert_eq!(timers.len(), 2);
        assert!(timers.timers.iter().all(|t| t.db != 1));
    }
}

#[cfg(test)]
mod batch_tests {
    use std::time::Duration;

    use cortado::time::ManualClock;

    use super::FIELD_EXPIRY_BATCH;
    use crate::keyspace::hash::{Hash, HashLimits};
    use crate::keyspace::{Expire, Keyspace, TimeSource, Value};

    const HASHES: usize = 1_000;
    const START_MS: i64 = 1_700_000_000_000;

    /// One shard holding `HASHES` hashes, each of a field `a` that expires 10 ms after
    /// `START_MS` and a field `keep` without a lifetime; its clock moved past the lifetimes.
    fn keyspace_past_lifetimes() -> Keyspace {
        let clock = ManualClock::new();
        clock.set(Duration::from_millis(START_MS as u64));
        let keyspace = Keyspace::with_shards(1, TimeSource::Manual(clock.clone()), 1);
        let at = START_MS + 10;
        for i in 0..HASHES {
            let key = format!("h{i}");
            let mut hash = Hash::new();
            hash.insert(b"a", b"1", HashLimits::default());
            hash.insert(b"keep", b"2", HashLimits::default());
            assert!(hash.set_expire_time(b"a", at));
            let mut locked = keyspace.lock(key.as_bytes());
            let shard = locked.shard(key.as_bytes());
            shard.set(0, key.as_bytes(), Value::Hash(hash), Expire::Never);
            shard.add_field_timer(0, key.as_bytes(), b"a", at);
        }
        clock.set(Duration::from_millis(START_MS as u64 + 20));
        keyspace
    }

    fn fields(value: Option<&Value>) -> usize {
        value.and_then(Value::as_hash).map_or(0, Hash::len)
    }

    #[test]
    fn field_expiry_burst_one_lock_removes_one_batch_and_the_used_key_whole() {
        let keyspace = keyspace_past_lifetimes();
        // Timers are taken in (time, database, key) order: `h999` is last of the burst.
        let last = b"h999";
        let mut locked = keyspace.lock(last);
        let shard = locked.shard(last);
        // The command's first use of the shard reads its time, which takes a batch, then
        // the key's own due fields.
        assert_eq!(
            fields(shard.lookup_read(0, last)),
            1,
            "h999 saw its expired field"
        );
        assert!(shard.field_timers.behind());
        assert_eq!(shard.expired_fields, FIELD_EXPIRY_BATCH as u64 + 1);
        assert_eq!(
            fields(shard.peek(0, b"h998")),
            1,
            "h998 saw its expired field"
        );
        assert_eq!(shard.expired_fields, FIELD_EXPIRY_BATCH as u64 + 2);
        drop(locked);
        keyspace.expire_cycle();
        let mut locked = keyspace.lock(last);
        let shard = locked.shard(last);
        assert_eq!(shard.expired_fields, HASHES as u64);
        assert!(!shard.field_timers.behind());
        for i in 0..HASHES {
            let key = format!("h{i}");
            assert_eq!(fields(shard.peek(0, key.as_bytes())), 1, "{key}");
        }
    }

    #[test]
    fn field_expiry_burst_flushed_away_leaves_nothing_due() {
        let keyspace = keyspace_past_lifetimes();
        let key = b"h999";
        let mut locked = keyspace.lock(key);
        let shard = locked.shard(key);
        shard.lookup_read(0, key);
        assert!(shard.field_timers.behind());
        // The flush takes the waiting timers with the hashes.
        shard.flush(0);
        drop(locked);
        let mut locked = keyspace.lock(key);
        let shard = locked.shard(key);
        assert!(shard.lookup_read(0, key).is_none());
        assert!(
            !shard.field_timers.behind(),
            "no timer is left, none is due"
        );
        drop(locked);
        // Ends (a due mark left behind would keep the cycle locking the shard forever).
        keyspace.expire_cycle();
    }
}
