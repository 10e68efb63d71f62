//! `quick_cache::sync::Cache` with unit weights: [`QuickCacheSync`] with the crate's default
//! shard count (4 per CPU), the reference of the ratios; [`QuickCacheSameShards`] with as many
//! shards as Cortado's cache of the same capacity has (16 per CPU), so that a reader can tell
//! how much of a ratio is the shard count. Neither has a time to live, and neither needs
//! maintenance (eviction happens inside `insert`).

use foldhash::fast::FixedState;
use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::{OptionsBuilder, UnitWeighter};

use super::{BuildFailure, CacheSpec, ConcurrentCache};

/// The adapter; see the [module docs](self). `CORTADO_SHARDS` picks the shard count.
pub struct QuickCache<const CORTADO_SHARDS: bool>(Cache<u64, u64, UnitWeighter, FixedState>);

/// quick_cache with its default shard count.
pub type QuickCacheSync = QuickCache<false>;

/// quick_cache with as many shards as Cortado's cache of the same capacity.
pub type QuickCacheSameShards = QuickCache<true>;

impl<const CORTADO_SHARDS: bool> ConcurrentCache<u64, u64> for QuickCache<CORTADO_SHARDS> {
    const NAME: &'static str = if CORTADO_SHARDS {
        "quick_cache_same_shards"
    } else {
        "quick_cache"
    };

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        if spec.ttl.is_some() {
            return Err(BuildFailure::NoTtl);
        }
        let items = usize::try_from(spec.capacity)
            .map_err(|_| BuildFailure::Rejected("capacity exceeds usize".to_owned()))?;
        // What `Cache::with(items, capacity, ..)` builds, with the shard count when asked.
        let mut options = OptionsBuilder::new();
        options
            .estimated_items_capacity(items)
            .weight_capacity(spec.capacity);
        if CORTADO_SHARDS {
            let cortado = cortado::sync::Cache::<u64, u64>::builder()
                .max_capacity(spec.capacity)
                .build()
                .map_err(|error| BuildFailure::Rejected(error.to_string()))?;
            options.shards(cortado.shard_count());
        }
        let options = options
            .build()
            .map_err(|error| BuildFailure::Rejected(format!("{error:?}")))?;
        Ok(QuickCache(Cache::with_options(
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
