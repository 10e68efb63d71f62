//! Bulk loads: `get_all_with` loads every key of one call that the cache misses in one call
//! of its loader (one round trip to the backing store), coalescing with the single-key loads
//! in flight for the same keys.
//!
//! # Design
//!
//! Each missed key is [joined](crate::loader::Loading::join) as a single-key loader would be:
//! the keys whose load this call starts are looked up again (a load may have just ended) and
//! the rest go to the loader together; keys already loading elsewhere are waited for. The
//! call never waits while it holds loads of its own, so two bulk calls with overlapping keys
//! cannot wait for each other: it runs its loader and caches (or abandons) its loads first,
//! then waits for the others. A key whose awaited load failed or was abandoned is tried again
//! in a next round, which may call the loader again with those keys. A key the loader leaves
//! out of its map is not cached and not in the result (its waiters retry on their own), as in
//! Caffeine's `getAll`. The loader's call counts as one load (a success when it returns, a
//! failure when it panics); a panic releases every load of the call, as a single loader's
//! does.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::loading::Running;
use super::{read, Cache, Inner};
use crate::loader::{LoadGuard, OnDrop, Outcome, Role, Wait};
use crate::shard::hash_key;
use crate::shim::block_on;

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Inner<K, V, S> {
    /// See the [module docs](self). `load` gets the keys to load and returns what it found.
    pub(crate) async fn load_all<F: Future<Output = HashMap<K, V>>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        mut load: impl FnMut(Vec<K>) -> F,
    ) -> HashMap<K, V> {
        let mut found = HashMap::new();
        let mut missed = Vec::new();
        let mut seen = HashSet::new();
        for key in keys {
            if !seen.insert(key.clone()) {
                continue;
            }
            match self.get(&key) {
                Some(value) => {
                    found.insert(key, value);
                }
                None => missed.push(key),
            }
        }
        while !missed.is_empty() {
            let mut own: Vec<(K, LoadGuard<'_, K, V>)> = Vec::new();
            let mut waits: Vec<(K, Wait<V>)> = Vec::new();
            for key in std::mem::take(&mut missed) {
                let hash = hash_key(&self.hasher, &key);
                let slot = self.slot(hash);
                match slot.loading.join(&key) {
                    Role::Wait(wait) => {
                        if Running::includes(wait.id()) {
                            panic!("a loader asked the cache for its own key: it would wait for itself");
                        }
                        waits.push((key, wait));
                    }
                    Role::Load(guard) => {
                        // Counted before the look, as a single loader's: see `Inner::loaders`.
                        self.loaders.0.fetch_add(1, Ordering::Relaxed);
                        let peeked = {
                            let now = self.now();
                            let core = read(&slot.core);
                            guard.look();
                            core.peek(hash, &key, now).cloned()
                        };
                        match peeked {
                            Some(value) => {
                                guard.complete(Outcome::Value(value.clone()));
                                self.loaders.0.fetch_sub(1, Ordering::Relaxed);
                                found.insert(key, value);
                            }
                            None => own.push((key, guard)),
                        }
                    }
                }
            }
            if !own.is_empty() {
                self.load_batch(own, &mut load, &mut found).await;
            }
            for (key, wait) in waits {
                match wait.await {
                    Outcome::Value(value) => {
                        found.insert(key, value);
                    }
                    // Failed, abandoned or absent elsewhere: this call tries it itself.
                    _ => missed.push(key),
                }
            }
        }
        found
    }

    /// Runs `load` once for the keys of `own`, caches what it returns, releases every load.
    async fn load_batch<F: Future<Output = HashMap<K, V>>>(
        &self,
        own: Vec<(K, LoadGuard<'_, K, V>)>,
        load: &mut impl FnMut(Vec<K>) -> F,
        found: &mut HashMap<K, V>,
    ) {
        let count = own.len();
        // However the batch ends, its loads are over once their guards are dropped or done.
        let _counted = OnDrop(Some(|| {
            self.loaders.0.fetch_sub(count, Ordering::Relaxed);
        }));
        let started = self.record_stats.then(Instant::now);
        let unfinished = OnDrop(Some(|| self.record_load(started, false)));
        let keys = own.iter().map(|(key, _)| key.clone()).collect();
        // Each poll is marked as every key's load: the loader must not ask for them.
        let ids: Vec<usize> = own.iter().map(|(_, guard)| guard.id()).collect();
        let mut batch = std::pin::pin!(load(keys));
        let mut loaded = std::future::poll_fn(|cx| {
            let _running: Vec<Running> = ids.iter().map(|&id| Running::enter(id)).collect();
            batch.as_mut().poll(cx)
        })
        .await;
        unfinished.disarm();
        self.record_load(started, true);
        for (key, guard) in own {
            let hash = hash_key(&self.hasher, &key);
            match loaded.remove(&key) {
                Some(value) => {
                    self.finish_load(
                        hash,
                        &key,
                        guard,
                        None,
                        Outcome::Value(value.clone()),
                        K::clone,
                    );
                    found.insert(key, value);
                }
                None => guard.complete(Outcome::Abandoned),
            }
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher> Cache<K, V, S> {
    /// The values of `keys`: those the cache holds, and the rest from one call of
    /// `load(missing keys)`, which returns what it found (a key it leaves out is not cached,
    /// and not in the result). Keys being loaded by another caller (`get_with`, another
    /// `get_all_with`) are waited for instead of loaded again, and a concurrent `get_with` of
    /// a key this call loads waits for this call. One round trip to the backing store for
    /// the whole miss, instead of one per key.
    ///
    /// A key whose load elsewhere failed is loaded by this call, in a second call of `load`.
    /// Writes to a key while it loads win over the loaded value, as for
    /// [`get_with`](Self::get_with) (the value is still returned).
    ///
    /// # Panics
    ///
    /// If `load` panics (after releasing the waiters of its keys), or if it loads one of its
    /// own keys from this cache, which could only wait for itself.
    pub fn get_all_with(
        &self,
        keys: impl IntoIterator<Item = K>,
        mut load: impl FnMut(&[K]) -> HashMap<K, V>,
    ) -> HashMap<K, V> {
        block_on(
            self.inner
                .load_all(keys, |missing| std::future::ready(load(&missing))),
        )
    }
}
