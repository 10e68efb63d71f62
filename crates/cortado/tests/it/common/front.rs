//! Adapters that let one test body run on both `unsync::Cache` and `sync::Cache` (the
//! differences between the two front ends a shared test must paper over), and the removal log
//! and expiry rule those tests share with `unsync_behaviour.rs` and `sync_behaviour.rs`.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cortado::builder::{CacheBuilder, Unsynchronized};
use cortado::expiry::Expiry;
use cortado::notification::RemovalCause;
use cortado::sync::Synchronized;

/// What a listener saw removed, in order: key, value and cause.
pub type Log = Arc<Mutex<Vec<(u32, u32, RemovalCause)>>>;

/// `.shards(n)` on a sync builder; nothing on an unsync one, which has no shards.
pub trait ShardsIfSync {
    fn shards_if_sync(self, shards: usize) -> Self;
}

impl<K, V, S> ShardsIfSync for CacheBuilder<K, V, S, Unsynchronized> {
    fn shards_if_sync(self, _shards: usize) -> Self {
        self
    }
}

impl<K, V, S> ShardsIfSync for CacheBuilder<K, V, S, Synchronized> {
    fn shards_if_sync(self, shards: usize) -> Self {
        self.shards(shards)
    }
}

/// Builds the cache with a listener that logs every removal.
pub trait BuildLogged {
    type Cache;
    fn build_logged(self) -> (Self::Cache, Log);
}

fn with_log<S, F>(builder: CacheBuilder<u32, u32, S, F>) -> (CacheBuilder<u32, u32, S, F>, Log) {
    let log: Log = Arc::default();
    let sink = log.clone();
    let builder = builder.eviction_listener(move |k: &u32, v: &u32, cause| {
        sink.lock().unwrap().push((*k, *v, cause))
    });
    (builder, log)
}

impl<S: BuildHasher> BuildLogged for CacheBuilder<u32, u32, S, Unsynchronized> {
    type Cache = cortado::unsync::Cache<u32, u32, S>;
    fn build_logged(self) -> (Self::Cache, Log) {
        let (builder, log) = with_log(self);
        (builder.build().unwrap(), log)
    }
}

impl<S: BuildHasher + Clone + Send + Sync + 'static> BuildLogged
    for CacheBuilder<u32, u32, S, Synchronized>
{
    type Cache = cortado::sync::Cache<u32, u32, S>;
    fn build_logged(self) -> (Self::Cache, Log) {
        let (builder, log) = with_log(self);
        (builder.build().unwrap(), log)
    }
}

/// The unsync front end: reads return references.
pub mod unsync {
    pub use cortado::unsync::Cache;

    /// The shard counts a test tries where sharding matters (the unsync cache has one core).
    pub const SHARD_COUNTS: &[usize] = &[1];

    /// How many of the 50 hot keys must outlive the scan in
    /// `scan_of_one_off_keys_does_not_flush_hot_set`.
    pub const HOT_KEYS_KEPT_AFTER_SCAN: usize = 48;

    /// What a read returned, owned.
    pub fn got<V: Clone>(value: Option<&V>) -> Option<V> {
        value.cloned()
    }

    /// The keys `hottest` or `coldest` returned, owned.
    pub fn keys<K: Clone>(keys: Vec<&K>) -> Vec<K> {
        keys.into_iter().cloned().collect()
    }

    /// The loading read: `get_or_insert_with`.
    pub fn load(cache: &mut Cache<u32, u32>, key: u32, init: impl FnOnce() -> u32) {
        cache.get_or_insert_with(key, init);
    }
}

/// The sync front end: reads return clones.
pub mod sync {
    pub use cortado::sync::Cache;

    /// The shard counts a test tries where sharding matters.
    pub const SHARD_COUNTS: &[usize] = &[1, 4];

    /// How many of the 50 hot keys must outlive the scan in
    /// `scan_of_one_off_keys_does_not_flush_hot_set`: the random hasher's seed varies the count.
    pub const HOT_KEYS_KEPT_AFTER_SCAN: usize = 45;

    /// What a read returned.
    pub fn got<V>(value: Option<V>) -> Option<V> {
        value
    }

    /// The keys `hottest` or `coldest` returned.
    pub fn keys<K>(keys: Vec<K>) -> Vec<K> {
        keys
    }

    /// The loading read: `get_with` (`&mut` only to match the unsync adapter).
    pub fn load(cache: &mut Cache<u32, u32>, key: u32, init: impl FnOnce() -> u32) {
        cache.get_with(key, init);
    }
}

/// Entries get `create` to live; a read leaves them one second, whatever they had.
pub struct OneSecondAfterRead {
    pub create: Option<Duration>,
}

impl Expiry<u32, u32> for OneSecondAfterRead {
    fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
        self.create
    }
    fn expire_after_read(&self, _: &u32, _: &u32, _: Option<Duration>) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }
}
