//! [`Locked`]: the shards one command holds, from [`Keyspace::lock`] and its kin, and what a
//! command reaches through them.

use std::sync::MutexGuard;

use super::{pick_weighted, CompactBytes, Keyspace, Shard, Value};

/// The shards a command holds, in increasing index order.
pub struct Locked<'a> {
    pub(super) guards: Guards<'a>,
    pub(super) keyspace: &'a Keyspace,
    /// The command's time, in Unix nanoseconds, for shards locked later ([`Locked::scan`]); 0
    /// for a lock of one shard, whose time is read when needed.
    pub(super) now: u64,
}

/// One shard (most commands) without a vector's allocation, or several.
pub(super) enum Guards<'a> {
    One(usize, MutexGuard<'a, Shard>),
    Many(Vec<(usize, MutexGuard<'a, Shard>)>),
}

impl<'a> Locked<'a> {
    /// The shard holding `key`, which must be among those locked.
    #[inline]
    pub fn shard(&mut self, key: &[u8]) -> &mut Shard {
        match &mut self.guards {
            Guards::One(j, guard) => {
                // Not hashed again in release builds: the one shard is the key's.
                debug_assert_eq!(*j, self.keyspace.shard_of(key), "the key's shard is locked");
                guard
            }
            Guards::Many(guards) => {
                let i = self.keyspace.shard_of(key);
                let at = guards
                    .binary_search_by_key(&i, |(j, _)| *j)
                    .expect("the key's shard is locked");
                &mut guards[at].1
            }
        }
    }

    /// The shard of index `i`, locked now if it is not held yet, which is allowed only past
    /// every shard held (so shards are still locked in increasing order).
    fn shard_at(&mut self, i: usize) -> &mut Shard {
        if matches!(&self.guards, Guards::One(j, _) if *j != i) {
            let Guards::One(j, guard) =
                std::mem::replace(&mut self.guards, Guards::Many(Vec::new()))
            else {
                unreachable!("matched above")
            };
            self.guards = Guards::Many(vec![(j, guard)]);
        }
        match &mut self.guards {
            Guards::One(_, guard) => guard,
            Guards::Many(guards) => {
                let at = match guards.binary_search_by_key(&i, |(j, _)| *j) {
                    Ok(at) => at,
                    Err(at) => {
                        assert_eq!(at, guards.len(), "shards are locked in increasing order");
                        assert_ne!(self.now, 0, "a lock that read its time takes more shards");
                        guards.push((i, self.keyspace.lock_shard(i, self.now)));
                        at
                    }
                };
                &mut guards[at].1
            }
        }
    }

    /// One step of `SCAN` over database `db` from `cursor` (0 to start): visits the live keys
    /// at the next positions, at most `count` keys and no more than ten times `count`
    /// positions (Redis bounds a step the same way), and returns the cursor to continue from,
    /// or 0 once every shard was walked. `visit` returns whether it read the key as a command's
    /// lookup does (`SCAN ... TYPE` does, for each key that passed `MATCH`): each such key is
    /// counted as a keyspace hit, as Redis counts it. Shards not yet held are locked as the step reaches
    /// them (so it must hold none past the cursor's, or all of them).
    ///
    /// A cursor is a shard's index in its low bits (as many as it takes to name every shard;
    /// the number of shards is a power of two) and a position in that shard's cache in the
    /// bits above: `position << bits | shard`. Positions come from the library's
    /// [`scan`](cortado::unsync::Cache::scan), which keeps an entry at its position for as
    /// long as it stays, so a scan continued to 0 visits every key present from its start to
    /// its end at least once (exactly once, unless `SWAPDB` or `FLUSHDB` intervene), whatever
    /// is written meanwhile and however much the shards grow. A shard walked to its end costs
    /// one position of the bound, so a step over many empty shards stays short too. A cursor
    /// no step returned is taken at its word: its shard from its low bits, and a position past
    /// a shard's end ends that shard.
    pub fn scan(
        &mut self,
        db: usize,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&CompactBytes, &Value) -> bool,
    ) -> u64 {
        let shards = self.keyspace.shards.len();
        let bits = shards.trailing_zeros();
        let encode = |shard: usize, at: usize| ((at as u64) << bits) | shard as u64;
        let mut shard = (cursor & (shards as u64 - 1)) as usize;
        let mut at = usize::try_from(cursor >> bits).unwrap_or(usize::MAX);
        let count = count.max(1);
        let mut found = 0;
        let mut budget = count.saturating_mul(10);
        loop {
            let locked = self.shard_at(shard);
            let mut read = 0;
            let mut next = None;
            if let Some(cache) = locked.db_ref(db) {
                next = Some(at);
                while let Some(from) = next.filter(|_| found < count && budget > 0) {
                    let step = (count - found).min(budget);
                    next = cache.scan(from, step, |key, value| {
                        found += 1;
                        read += u64::from(visit(key, value));
                    });
                    budget -= step;
                }
            }
            locked.hits += read;
            if let Some(at) = next {
                return encode(shard, at);
            }
            shard += 1;
            at = 0;
            if shard == shards {
                return 0;
            }
            budget = budget.saturating_sub(1);
            if found >= count || budget == 0 {
                return encode(shard, 0);
            }
        }
    }

    /// A key of `db` among the locked shards, picked at random (each about equally likely); see
    /// [`Keyspace::random_key`].
    pub fn random_key(&mut self, db: usize) -> Option<CompactBytes> {
        let shards = self.shards();
        let sizes: Vec<usize> = shards.iter().map(|(_, shard)| shard.len(db)).collect();
        let first = pick_weighted(&sizes)?;
        // The pick's shard may hold only expired keys: then the next shard with a live one.
        (first..shards.len()).chain(0..first).find_map(|i| {
            let (key, _) = shards[i].1.db_ref(db)?.random_entry()?;
            Some(key.clone())
        })
    }

    /// Every locked shard with its index, in index order.
    pub fn shards(&mut self) -> Vec<(usize, &mut Shard)> {
        match &mut self.guards {
            Guards::One(i, guard) => vec![(*i, &mut **guard)],
            Guards::Many(guards) => guards.iter_mut().map(|(i, g)| (*i, &mut **g)).collect(),
        }
    }

    /// The keyspace the shards belong to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.keyspace
    }

    /// Reads the time again for every shard held, as locking them would: a hold kept from one
    /// command to the next gives each its own time.
    pub fn refresh_time(&mut self) {
        let now = self.keyspace.time.now_nanos();
        self.now = now;
        match &mut self.guards {
            Guards::One(_, guard) => guard.set_time(now),
            Guards::Many(guards) => guards.iter_mut().for_each(|(_, g)| g.set_time(now)),
        }
    }
}
