//! `moka::sync::Cache` (TinyLFU admission in front of an LRU), which applies reads and writes
//! to its policy lazily from buffers; `sync_maintenance` is its `run_pending_tasks`.

use std::time::Duration;

use foldhash::fast::FixedState;
use moka::sync::Cache;

use super::{BuildFailure, CacheSpec, ConcurrentCache};

/// moka panics on a time to live above 1,000 years; refuse such specs instead.
const MAX_TTL: Duration = Duration::from_secs(1_000 * 365 * 24 * 3600);

/// The adapter; see the [module docs](self).
pub struct MokaSync(Cache<u64, u64, FixedState>);

impl ConcurrentCache<u64, u64> for MokaSync {
    const NAME: &'static str = "moka";

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        let mut builder = Cache::builder().max_capacity(spec.capacity);
        if let Some(ttl) = spec.ttl {
            if ttl > MAX_TTL {
                return Err(BuildFailure::Rejected(
                    "moka's TTL limit is 1,000 years".into(),
                ));
            }
            builder = builder.time_to_live(ttl);
        }
        Ok(MokaSync(
            builder.build_with_hasher(FixedState::with_seed(spec.seed)),
        ))
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
        self.0.entry_count()
    }
}
