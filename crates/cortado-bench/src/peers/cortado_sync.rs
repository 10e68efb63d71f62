//! `cortado::sync::Cache` with its default W-TinyLFU policy (adaptive window), the policy's
//! seed and the hasher fixed.
//!
//! Cortado evicts inside every insert, so the capacity holds without maintenance;
//! `sync_maintenance` calls `run_pending_tasks` anyway, which replays buffered reads into the
//! policy, so the strict replay treats every crate alike.

use cortado::policy::EvictionPolicy;
use cortado::sync::Cache;
use foldhash::fast::FixedState;

use super::{BuildFailure, CacheSpec, ConcurrentCache};

/// The adapter; see the [module docs](self).
pub struct CortadoSync(Cache<u64, u64, FixedState>);

impl ConcurrentCache<u64, u64> for CortadoSync {
    const NAME: &'static str = "cortado";

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        let mut builder = Cache::<u64, u64>::builder()
            .max_capacity(spec.capacity)
            .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(spec.seed))
            .hasher(FixedState::with_seed(spec.seed));
        if let Some(ttl) = spec.ttl {
            builder = builder.time_to_live(ttl);
        }
        builder
            .build()
            .map(CortadoSync)
            .map_err(|error| BuildFailure::Rejected(error.to_string()))
    }

    #[inline]
    fn get(&self, key: &u64) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.0.insert(key, value);
    }

    fn sync_maintenance(&self) {
        self.0.run_pending_tasks();
    }

    fn entries(&self) -> u64 {
        self.0.len() as u64
    }
}
