//! `lru::LruCache` behind a `std::sync::Mutex`: the baseline every concurrent cache must beat.
//! A get moves the entry to the front, so reads take the lock exclusively too. No time to
//! live, no maintenance.

use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard, PoisonError};

use foldhash::fast::FixedState;
use lru::LruCache;

use super::{BuildFailure, CacheSpec, ConcurrentCache};

/// The adapter; see the [module docs](self).
pub struct LruMutex(Mutex<LruCache<u64, u64, FixedState>>);

impl LruMutex {
    fn lock(&self) -> MutexGuard<'_, LruCache<u64, u64, FixedState>> {
        // Nothing here panics under the lock, and a map is usable after one anyway.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConcurrentCache<u64, u64> for LruMutex {
    const NAME: &'static str = "lru_mutex";

    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
        if spec.ttl.is_some() {
            return Err(BuildFailure::NoTtl);
        }
        let capacity = usize::try_from(spec.capacity)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| BuildFailure::Rejected("capacity must be 1..=usize::MAX".into()))?;
        let hasher = FixedState::with_seed(spec.seed);
        Ok(LruMutex(Mutex::new(LruCache::with_hasher(
            capacity, hasher,
        ))))
    }

    #[inline]
    fn get(&self, key: &u64) -> Option<u64> {
        self.lock().get(key).copied()
    }

    #[inline]
    fn insert(&self, key: u64, value: u64) {
        self.lock().put(key, value);
    }

    fn sync_maintenance(&self) {}

    fn entries(&self) -> u64 {
        self.lock().len() as u64
    }
}
