//! `quick_cache::sync::Cache` with unit weights: [`QuickCacheSync`] with the crate's default
//! shard count (4 per CPU), the reference of the ratios; [`QuickCacheSameShards`] with as many
//! shards as Cortado's cache of the same capacity has (16 per CPU), so that a reader can tell
//! how much of a ratio is the shard count. Neither has a time to live, and neither needs
//! maintenance (eviction happens inside `insert`).

use foldhash::fast::FixedState;
use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::{OptionsBuilder, UnitWeighter};

use super::{BuildFailure, CacheSpec, ConcurrentCache};

/// The adapter; see the [module docs](self).
pub struct QuickCacheSync(Cache<u64, u64, UnitWeighter, FixedState>);

impl ConcurrentCache<u64, u64> for QuickCacheSync {
    const NAME: &'static str = "quick_cache";

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        if spec.ttl.is_some() {
            return Err(BuildFailure::NoTtl);
        }
        let items = usize::try_from(spec.capacity)
            .map_err(|_| BuildFailure::Rejected("capacity exceeds usize".to_owned()))?;
        Ok(QuickCacheSync(Cache::with(
            items,
            spec.capacity,
            UnitWeighter,
            FixedState::with_seed(spec.seed),
            DefaultLifecycle::default(),
        )))
    }

    #[inline]
    fn get(&self, key: &u64) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.0.insert(key, value);
    }

    fn sync_maintenance(&self) {}

    fn entries(&self) -> u64 {
        self.0.len() as u64
    }
}

/// The adapter with Cortado's shard count; see the [module docs](self).
pub struct QuickCacheSameShards(Cache<u64, u64, UnitWeighter, FixedState>);

impl ConcurrentCache<u64, u64> for QuickCacheSameShards {
    const NAME: &'static str = "quick_cache_same_shards";

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        if spec.ttl.is_some() {
            return Err(BuildFailure::NoTtl);
        }
        let items = usize::try_from(spec.capacity)
            .map_err(|_| BuildFailure::Rejected("capacity exceeds usize".to_owned()))?;
        let shards = cortado::sync::Cache::<u64, u64>::builder()
            .max_capacity(spec.capacity)
            .build()
            .map_err(|error| BuildFailure::Rejected(error.to_string()))?
            .shard_count();
        let options = OptionsBuilder::new()
            .estimated_items_capacity(items)
            .weight_capacity(spec.capacity)
            .shards(shards)
            .build()
            .map_err(|error| BuildFailure::Rejected(format!("{error:?}")))?;
        Ok(QuickCacheSameShards(Cache::with_options(
            options,
            UnitWeighter,
            FixedState::with_seed(spec.seed),
            DefaultLifecycle::default(),
        )))
    }

    #[inline]
    fn get(&self, key: &u64) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.0.insert(key, value);
    }

    fn sync_maintenance(&self) {}

    fn entries(&self) -> u64 {
        self.0.len() as u64
    }
}
