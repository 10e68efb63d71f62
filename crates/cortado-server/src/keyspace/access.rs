//! How a command reaches the shards: it locks those it needs, or, inside `EXEC`, it uses the
//! shards the transaction holds.
//!
//! Handlers take their shards from [`Shards`] (`ctx.shards.lock(key)`), never from the
//! [`Keyspace`] directly, so the same handler runs alone or inside a transaction: alone it
//! locks, inside `EXEC` it borrows the transaction's [`Locked`] of every shard, which stays
//! held from the first queued command to the last.
//!
//! # Design
//!
//! The transaction's lock sits in a `RefCell` so that a handler borrows it through a shared
//! reference to [`Shards`], leaving the rest of its context (the reply, the client) free to
//! borrow mutably at the same time. A handler takes one lock at a time, as it must outside a
//! transaction too (a second lock of a held shard would deadlock there), so the cell's borrow
//! never fails. Alone, a lock costs one test of the empty cell more than the keyspace's own
//! (see `docs/decisions/0230-server-transactions.md`).

use std::cell::{RefCell, RefMut};
use std::ops::{Deref, DerefMut};

use super::{CompactBytes, Keyspace, Locked, Shard, Value};

/// The shards as a command reaches them. See the [module docs](self).
pub struct Shards<'a> {
    keyspace: &'a Keyspace,
    held: Option<RefCell<Locked<'a>>>,
}

/// Shards a command holds: locked for it, or borrowed from its transaction.
pub enum Lock<'s, 'a> {
    /// Locked for this command, released when dropped.
    Own(Locked<'a>),
    /// The transaction's, kept when dropped.
    Held(RefMut<'s, Locked<'a>>),
}

impl<'a> Deref for Lock<'_, 'a> {
    type Target = Locked<'a>;

    #[inline]
    fn deref(&self) -> &Locked<'a> {
        match self {
            Lock::Own(locked) => locked,
            Lock::Held(locked) => locked,
        }
    }
}

impl DerefMut for Lock<'_, '_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Lock::Own(locked) => locked,
            Lock::Held(locked) => locked,
        }
    }
}

impl<'a> Shards<'a> {
    /// Shards each command locks for itself.
    #[inline]
    pub fn new(keyspace: &'a Keyspace) -> Self {
        Self {
            keyspace,
            held: None,
        }
    }

    /// Shards a transaction holds (all of them), lent to each of its commands.
    pub fn holding(locked: Locked<'a>) -> Self {
        Self {
            keyspace: locked.keyspace(),
            held: Some(RefCell::new(locked)),
        }
    }

    /// Whether a transaction holds the shards.
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// The shards held, given back (`None` if each command locks its own).
    pub fn into_held(self) -> Option<Locked<'a>> {
        self.held.map(RefCell::into_inner)
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.keyspace
    }

    #[inline]
    fn held(&self) -> Option<Lock<'_, 'a>> {
        self.held.as_ref().map(|held| Lock::Held(held.borrow_mut()))
    }

    /// The shard of `key` (see [`Keyspace::lock`]).
    #[inline]
    pub fn lock(&self, key: &[u8]) -> Lock<'_, 'a> {
        match self.held() {
            Some(held) => held,
            None => Lock::Own(self.keyspace.lock(key)),
        }
    }

    /// The shards of all `keys` (see [`Keyspace::lock_keys`]).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Lock<'_, 'a> {
        match self.held() {
            Some(held) => held,
            None => Lock::Own(self.keyspace.lock_keys(keys)),
        }
    }

    /// Every shard (see [`Keyspace::lock_all`]).
    pub fn lock_all(&self) -> Lock<'_, 'a> {
        match self.held() {
            Some(held) => held,
            None => Lock::Own(self.keyspace.lock_all()),
        }
    }

    /// One step of `SCAN` (see [`Keyspace::scan`]).
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        visit: impl FnMut(&CompactBytes, &Value) -> bool,
    ) -> u64 {
        match self.held() {
            Some(mut held) => held.scan(db, cursor, count, visit),
            None => self.keyspace.scan(db, cursor, count, visit),
        }
    }

    /// A random key of `db` (see [`Keyspace::random_key`]).
    pub fn random_key(&self, db: usize) -> Option<CompactBytes> {
        match self.held() {
            Some(mut held) => held.random_key(db),
            None => self.keyspace.random_key(db),
        }
    }

    /// Sums a figure over the shards (see [`Keyspace::sum`]).
    pub fn sum(&self, figure: impl Fn(&Shard) -> u64) -> u64 {
        match self.held() {
            Some(mut held) => held.shards().into_iter().map(|(_, s)| figure(s)).sum(),
            None => self.keyspace.sum(figure),
        }
    }

    /// A counter of the caches' statistics (see [`Keyspace::cache_stat`]).
    pub fn cache_stat(&self, counter: impl Fn(&cortado::stats::CacheStats) -> u64) -> u64 {
        self.sum(|shard| shard.cache_stat(&counter))
    }

    /// The number of keys in `db` (see [`Keyspace::dbsize`]).
    pub fn dbsize(&self, db: usize) -> u64 {
        if self.is_held() {
            self.sum(|shard| shard.len(db) as u64)
        } else {
            self.keyspace.dbsize(db)
        }
    }

    /// The number of keys in `db` with an expiry time.
    pub fn expiring(&self, db: usize) -> u64 {
        self.sum(|shard| shard.expiring(db) as u64)
    }

    /// `INFO`'s `avg_ttl` for `db`: the mean lifetime left, in milliseconds, of keys with an
    /// expiry time, estimated from a sample of each shard's weighed by the shard's count of
    /// them (Redis estimates it from its expiry cycle's samples); 0 with none.
    pub fn avg_ttl_millis(&self, db: usize) -> u64 {
        let counted = std::cell::Cell::new(0u64);
        let weighed = self.sum(|shard| {
            let (keys, mean) = shard.ttl_sample(db);
            counted.set(counted.get() + keys);
            keys.saturating_mul(mean)
        });
        weighed.checked_div(counted.get()).unwrap_or(0)
    }
}
