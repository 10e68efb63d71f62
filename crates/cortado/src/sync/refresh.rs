//! The concurrent caches' side of [refresh after write](crate::refresh): the registration of
//! a reload that a shard's read found due (through the shard's `RefreshTrigger`, which this
//! module arms), its run, and `refresh(key)`. The contract and the design are in the
//! [`refresh`](crate::refresh) module.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{read, Cache, Inner};
use crate::builder::{BoxFuture, RefreshSettings};
use crate::loader::{Outcome, Started};
use crate::shard::{hash_key, RefreshTrigger};

/// Refresh after write in a built cache.
pub(crate) struct Refresh<K, V> {
    pub(crate) settings: RefreshSettings<K, V>,
    /// The shards' trigger (the same for all), which `connect_refresh` arms.
    pub(crate) trigger: Arc<RefreshTrigger<K, V>>,
}

impl<K, V, S> Inner<K, V, S>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Arms the shards' refresh trigger, if any, with a weak handle of the cache (the cache
    /// holds the trigger) and the start of a reload, monomorphized here, where the cache's
    /// types are known to be `Send + 'static`.
    pub(super) fn connect_refresh(self: &Arc<Self>) {
        if let Some(refresh) = &self.refresh {
            let cache = Arc::downgrade(self);
            let _ = refresh.trigger.start.set(Box::new(move |key, value, hash| {
                cache
                    .upgrade()
                    .is_some_and(|cache| cache.start_reload(key, value, hash))
            }));
        }
    }

    /// Registers a reload of `key` (whose live value is `old`) as the key's load in flight,
    /// unless one is, and hands it to the spawner. Called under the shard's lock, which makes
    /// the registration the load's look at the cache: a write after it supersedes the reload.
    fn start_reload(self: Arc<Self>, key: &K, old: &V, hash: u64) -> bool {
        let Some(refresh) = &self.refresh else {
            return false;
        };
        let clone_key = refresh.settings.clone_key;
        // Counted before the look, as a loader's: see `Inner::loaders`.
        self.loaders.0.fetch_add(1, Ordering::Relaxed);
        let Some(started) = self.slot(hash).loading.start(key, clone_key) else {
            self.loaders.0.fetch_sub(1, Ordering::Relaxed);
            return false;
        };
        started.look();
        let reload = (refresh.settings.reload)(clone_key(key), old.clone());
        let spawn = refresh.settings.spawn.clone();
        let pending = Pending {
            key: clone_key(key),
            since: self.record_stats.then(Instant::now),
            cache: self,
            hash,
            started: Some(started),
        };
        spawn(Box::pin(pending.run(reload)));
        true
    }
}

/// A registered reload on its way to its run: if it is dropped before it ends (the spawner
/// dropped it, or the reloader panicked), the load is abandoned, so that the key can be
/// refreshed and loaded again, and counted as a failed load.
struct Pending<K: Hash + Eq, V: Clone, S: BuildHasher> {
    cache: Arc<Inner<K, V, S>>,
    key: K,
    hash: u64,
    /// When the reload was registered, if stats are recorded.
    since: Option<Instant>,
    started: Option<Started<K, V>>,
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Pending<K, V, S> {
    async fn run(mut self, reload: BoxFuture<Option<V>>) {
        let reloaded = reload.await;
        let cache = &self.cache;
        let guard = self
            .started
            .take()
            .expect("a reload runs once")
            .attach(&cache.slot(self.hash).loading);
        let clone_key = cache
            .refresh
            .as_ref()
            .expect("a reload belongs to a refreshing cache")
            .settings
            .clone_key;
        // A failure keeps the old value: the waiters (a `get_with` of the key, expired
        // meanwhile) retry and load it themselves.
        let outcome = reloaded.map_or(Outcome::Abandoned, Outcome::Value);
        cache.finish_load(self.hash, &self.key, guard, self.since, outcome, clone_key);
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Drop for Pending<K, V, S> {
    fn drop(&mut self) {
        if let Some(started) = self.started.take() {
            self.cache.record_load(self.since, false);
            drop(started.attach(&self.cache.slot(self.hash).loading));
        }
        // The load has ended (its value cached, or it was abandoned): see `Inner::loaders`.
        self.cache.loaders.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// Starts a reload of `key` in the background, as a read of an entry due for
    /// [refresh](crate::refresh) does, whatever the entry's age; true if one was started.
    /// Nothing happens if the key has no live entry, if a load or a reload of it is in flight,
    /// or if the cache was built without `refresh_after_write`.
    pub fn refresh<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let inner = &self.inner;
        let Some(refresh) = &inner.refresh else {
            return false;
        };
        let hash = hash_key(&inner.hasher, key);
        let slot = inner.slot(hash);
        let now = inner.now();
        let core = read(&slot.core);
        let Some(i) = core.live_slot(hash, key, now) else {
            return false;
        };
        let (key, value) = core.entry_at(i);
        refresh.trigger.start(key, value, hash)
    }
}
