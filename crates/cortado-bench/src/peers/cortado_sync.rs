//! `cortado::sync::Cache` with its default W-TinyLFU policy (adaptive window), the policy's
//! seed and the hasher fixed; the same with a time to live that is never reached
//! ([`CortadoSyncTtl`], the cost of reading the clock and checking deadlines) and with refresh
//! after write configured but never due ([`CortadoSyncRefresh`], the cost of the setting on
//! hits); and two weighted variants for
//! `replay` ([`CortadoSyncWeighted`], [`CortadoSyncHeavy`]), which the peers have no
//! counterpart of.
//!
//! Cortado evicts inside every insert, so the capacity holds without maintenance;
//! `sync_maintenance` calls `run_pending_tasks` anyway, which replays buffered reads into the
//! policy, so the strict replay treats every crate alike.

use std::time::Duration;

use cortado::policy::EvictionPolicy;
use cortado::sync::Cache;
use cortado_sim::gen::mix64;
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

/// Average weight of a [`CortadoSyncWeighted`] entry, times two: weights are 1 to 16.
const DOUBLE_AVERAGE_WEIGHT: u64 = 17;

/// The weight of `value` (which `replay` makes the key itself): 1 to 16, from its hash, or for
/// one value in 512 with `heavy`, `heavy`.
fn weight_of(value: u64, heavy: Option<u32>) -> u32 {
    let h = mix64(value ^ 0x005e_ed0f_3e16);
    match heavy {
        Some(heavy) if h >> 55 == 0 => heavy,
        _ => 1 + (h % 16) as u32,
    }
}

/// A weighted `cortado::sync::Cache`: entries weigh 1 to 16 (8.5 on average), and the
/// capacity is the spec's times 8.5, so it holds about as many entries as the unweighted one.
/// Default shard count (with a weigher). Only `replay` names it.
pub struct CortadoSyncWeighted(Cache<u64, u64, WeightedState>);

/// [`CortadoSyncWeighted`] where one value in 512 weighs a quarter of the capacity: heavier
/// than a shard's share under the default shard count from 8 shards up (2 CPUs), which the
/// shards must make room for between them. Only `replay` names it.
pub struct CortadoSyncHeavy(Cache<u64, u64, WeightedState>);

/// The weighted adapters' hasher: [`FixedState`] under a type of its own, so that their cache
/// is a type of its own too. Had they shared [`CortadoSync`]'s, its `get` and `insert` would
/// have three callers in `replay`, and the compiler stopped inlining them into the passes:
/// `cortado` A r75 counted about 4% more instructions (docs/decisions/0015).
#[derive(Clone, Default)]
pub struct WeightedState(FixedState);

impl std::hash::BuildHasher for WeightedState {
    type Hasher = <FixedState as std::hash::BuildHasher>::Hasher;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

fn build_weighted(
    spec: &CacheSpec,
    heavy: bool,
) -> Result<Cache<u64, u64, WeightedState>, BuildFailure> {
    let capacity = spec.capacity * DOUBLE_AVERAGE_WEIGHT / 2;
    let heavy = heavy.then(|| u32::try_from(capacity / 4).unwrap_or(u32::MAX));
    let mut builder = Cache::<u64, u64>::builder()
        .max_capacity(capacity)
        .weigher(move |_, &value| weight_of(value, heavy))
        .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(spec.seed))
        .hasher(WeightedState(FixedState::with_seed(spec.seed)));
    if let Some(ttl) = spec.ttl {
        builder = builder.time_to_live(ttl);
    }
    builder
        .build()
        .map_err(|error| BuildFailure::Rejected(error.to_string()))
}

macro_rules! weighted_adapter {
    ($adapter:ident, $name:literal, $heavy:literal) => {
        impl ConcurrentCache<u64, u64> for $adapter {
            const NAME: &'static str = $name;

            fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
                build_weighted(spec, $heavy).map($adapter)
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
    };
}

weighted_adapter!(CortadoSyncWeighted, "cortado_weighted", false);
weighted_adapter!(CortadoSyncHeavy, "cortado_heavy", true);

/// An hour: longer than any run, so that the timed adapters pay for checking lifetimes and
/// ages without ever reaching one.
const NEVER_DUE: Duration = Duration::from_secs(3600);

/// A timed [`CortadoSync`]: `$adapter` named `$name`, under a hasher type of its own (for the
/// reason [`WeightedState`] has one), built by `$configure` from the plain builder and the
/// spec, which it names as the closure-like `|builder, spec|` says.
macro_rules! timed_adapter {
    ($(#[$doc:meta])* $adapter:ident, $state:ident, $name:literal,
     |$builder:ident, $spec:ident| $configure:expr) => {
        $(#[$doc])*
        pub struct $adapter(Cache<u64, u64, $state>);

        #[doc = concat!("[`", stringify!($adapter), "`]'s hasher: [`FixedState`] under a type of its own.")]
        #[derive(Clone, Default)]
        pub struct $state(FixedState);

        impl std::hash::BuildHasher for $state {
            type Hasher = <FixedState as std::hash::BuildHasher>::Hasher;

            #[inline]
            fn build_hasher(&self) -> Self::Hasher {
                self.0.build_hasher()
            }
        }

        impl ConcurrentCache<u64, u64> for $adapter {
            const NAME: &'static str = $name;

            fn build(spec: &CacheSpec) -> Result<Self, BuildFailure> {
                let $builder = Cache::<u64, u64>::builder()
                    .max_capacity(spec.capacity)
                    .eviction_policy(EvictionPolicy::tiny_lfu().with_seed(spec.seed))
                    .hasher($state(FixedState::with_seed(spec.seed)));
                let $spec = spec;
                $configure
                    .build()
                    .map($adapter)
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
    };
}

timed_adapter!(
    /// [`CortadoSync`] with a time to live of an hour (or the spec's), which no run reaches:
    /// each operation reads the clock and each hit checks a deadline, the cost of any timed
    /// cache (the `peers` row `cortado_ttl`; docs/decisions/0018).
    CortadoSyncTtl,
    TtlState,
    "cortado_ttl",
    |builder, spec| builder.time_to_live(spec.ttl.unwrap_or(NEVER_DUE))
);

timed_adapter!(
    /// [`CortadoSyncTtl`] with `refresh_after_write` of an hour too, which no run reaches:
    /// each hit checks its entry's age and starts nothing, the cost that the setting adds to a
    /// timed cache's read (the `peers` row `cortado_refresh` beside `cortado_ttl`;
    /// docs/decisions/0017 and 0018).
    CortadoSyncRefresh,
    RefreshState,
    "cortado_refresh",
    |builder, spec| builder
        .time_to_live(spec.ttl.unwrap_or(NEVER_DUE))
        .refresh_after_write(NEVER_DUE, |_, &old| Ok::<u64, ()>(old))
);
