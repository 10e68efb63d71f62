//! `quick_cache::sync::Cache` with unit weights and the crate's default shard count; it has no
//! time to live, and needs no maintenance (eviction happens inside `insert`).

use foldhash::fast::FixedState;
use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::UnitWeighter;

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
