//! What a write must do about the loads in flight and the cached absences of its key: a load
//! that has looked at the cache is [superseded](crate::loader::Loading::supersede) (its value is
//! then not cached), and an absence cached by `negative_ttl` is forgotten. See `get_with`'s docs
//! for the contract, and the [`loading`](super::loading) module for the loaders' side.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;

use super::{lock, read, Inner};
use crate::loader::LoadGuard;
use crate::notification::RemovalCause;

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Inner<K, V, S> {
    /// Whether the absence of `key` is cached (`negative_ttl`).
    pub(super) fn is_absent<Q>(&self, hash: u64, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let Some(negatives) = &self.slot(hash).negatives else {
            return false;
        };
        let now = self.now();
        let mut negatives = lock(negatives);
        negatives.advance(now);
        negatives.peek(hash, key, now).is_some()
    }

    /// Remembers that the loader of `load` found nothing for `key`, unless a value was
    /// inserted meanwhile or a write [superseded](crate::loader::Loading::supersede) the load
    /// (a removal after an insert, `invalidate_all`: the absence would outlive it). The checks
    /// and the caching hold the shard's read lock, and a writer forgets the absence and marks
    /// the load while it holds the write lock (both take the absences' lock second), so either
    /// the checks see the write or the writer comes after and forgets the absence.
    pub(super) fn cache_absence(&self, hash: u64, key: K, load: &LoadGuard<'_, K, V>) {
        let slot = self.slot(hash);
        if let (Some(negatives), Some(ttl)) = (&slot.negatives, self.negative_ttl) {
            let now = self.now();
            let core = read(&slot.core);
            if core.peek(hash, &key, now).is_none() && load.superseded().is_none() {
                lock(negatives).insert(hash, key, (), now, Some(ttl));
            }
        }
    }

    /// What a write of a value under the shard's write lock must do before it changes anything
    /// ([`written`](Self::written), for [`Shard::insert_with_before_write`]), if anything: only
    /// while a load is in flight or absences are cached.
    #[inline]
    pub(super) fn write_hook(&self, hash: u64) -> Option<impl FnOnce(&K) + '_> {
        let watched = self.negative_ttl.is_some() || self.loaders.0.load(Ordering::Relaxed) != 0;
        watched.then_some(move |key: &K| self.written(hash, key))
    }

    /// What every write of a value to `key` does under the shard's write lock, besides the
    /// write: the key's cached absence is forgotten (see `cache_absence`) and its load in flight
    /// [superseded](crate::loader::Loading::supersede).
    pub(super) fn written<Q>(&self, hash: u64, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.forget_absence(hash, key);
        self.supersede(hash, key, RemovalCause::Replaced);
    }

    /// [Supersedes](crate::loader::Loading::supersede) the load of `key` in flight, if any;
    /// called under the shard's write lock.
    pub(super) fn supersede<Q>(&self, hash: u64, key: &Q, cause: RemovalCause)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.loaders.0.load(Ordering::Relaxed) != 0 {
            self.slot(hash).loading.supersede(key, cause);
        }
    }

    /// [`supersede`](Self::supersede) for every load in flight of shard `i`, which an
    /// `invalidate_all` empties; called under the shard's write lock.
    pub(super) fn supersede_all(&self, i: usize) {
        if self.loaders.0.load(Ordering::Relaxed) != 0 {
            self.slots[i].loading.supersede_all(RemovalCause::Explicit);
        }
    }

    pub(super) fn forget_absence<Q>(&self, hash: u64, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        // Checked on `Inner` first: the slot's `negatives` field is on a cache line that
        // inserts otherwise never touch.
        if self.negative_ttl.is_none() {
            return;
        }
        if let Some(negatives) = &self.slot(hash).negatives {
            lock(negatives).remove(hash, key, 0);
        }
    }
}
