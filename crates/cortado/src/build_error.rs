//! Why `build()` refused a cache's settings (re-exported as `cortado::builder::BuildError`).
//!
//! In a module of its own so that the parts that check settings (the builder, the scheduler)
//! and the front ends that build can all name it without naming each other.

use std::fmt;

use crate::policy::PolicyError;
use crate::shard::MAX_ENTRIES;

/// A setting that cannot work, reported by `build()`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// `expire_after` was combined with `time_to_live` or `time_to_idle`; a custom
    /// [`Expiry`](crate::expiry::Expiry) decides every deadline by itself.
    ExpiryConflict,
    /// A weigher needs `max_capacity` (the total weight it bounds), or a shared
    /// [`Budget`](crate::budget::Budget).
    WeigherWithoutCapacity,
    /// A [`Budget`](crate::budget::Budget) bounds a total weight: it needs a weigher.
    BudgetWithoutWeigher,
    /// A cache built with a [`Budget`](crate::budget::Budget) takes its capacity from it, so
    /// `max_capacity` cannot be set too.
    BudgetAndCapacity,
    /// Counting entries (no weigher), the capacity must be below `u32::MAX`: slots are named by
    /// `u32` indices.
    CapacityTooLarge {
        /// The capacity asked for.
        requested: u64,
    },
    /// The space reserved up front is more entries than a cache can hold (`u32::MAX - 1`; a
    /// counting cache reserves at most its capacity anyway).
    InitialCapacityTooLarge {
        /// The entries asked for.
        requested: usize,
    },
    /// The number of shards must be a power of two between 1 and 2^16.
    InvalidShardCount {
        /// The count asked for.
        requested: usize,
    },
    /// Each shard gets its share of the capacity, so a capacity (other than zero) below the
    /// shard count would leave shards that can hold nothing.
    CapacityBelowShards {
        /// The capacity asked for.
        capacity: u64,
        /// The shard count asked for.
        shards: usize,
    },
    /// A parameter of the [`EvictionPolicy`](crate::policy::EvictionPolicy) is out of range.
    InvalidPolicy(PolicyError),
    /// [`time_to_live_jitter`](crate::builder::CacheBuilder::time_to_live_jitter) needs a
    /// time to live and a fraction from 0 to 1.
    InvalidJitter,
    /// [`Scheduler::Tokio`](crate::sync::Scheduler::Tokio) was asked for, but `build()` was
    /// not called from within a tokio runtime.
    #[cfg(feature = "tokio")]
    NoTokioRuntime,
    /// [`Scheduler::Tokio`](crate::sync::Scheduler::Tokio) was asked for on a runtime built
    /// without its time driver (`enable_time` or `enable_all`), which the task needs to wait
    /// for the next deadline.
    ///
    /// Tokio offers no way to ask a runtime for its time driver, so `build()` makes a timer and
    /// catches the panic that tokio raises without one: its message still reaches the panic
    /// hook (stderr by default). Under `panic = "abort"` that test cannot be made; the driver is
    /// then assumed, and a runtime without it aborts the process at the task's first timed
    /// wait (the first time an entry has a deadline, which may be long after `build()`).
    #[cfg(feature = "tokio")]
    NoTokioTimeDriver,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExpiryConflict => {
                write!(
                    f,
                    "expire_after cannot be combined with time_to_live or time_to_idle"
                )
            }
            Self::WeigherWithoutCapacity => write!(f, "a weigher needs max_capacity or a budget"),
            Self::BudgetWithoutWeigher => write!(f, "a budget needs a weigher"),
            Self::BudgetAndCapacity => write!(
                f,
                "a cache with a budget takes its capacity from the budget: max_capacity cannot \
                 be set too"
            ),
            Self::CapacityTooLarge { requested } => write!(
                f,
                "max_capacity {requested} is too large: at most {MAX_ENTRIES} entries"
            ),
            Self::InitialCapacityTooLarge { requested } => write!(
                f,
                "initial_capacity {requested} is too large: at most {MAX_ENTRIES} entries"
            ),
            Self::InvalidShardCount { requested } => write!(
                f,
                "shard count {requested} is not a power of two between 1 and 65536"
            ),
            Self::CapacityBelowShards { capacity, shards } => write!(
                f,
                "max_capacity {capacity} leaves some of the {shards} shards no room: ask for \
                 {} shards or fewer (or leave the count to the builder), or a capacity of at \
                 least {shards}",
                1u64 << (63 - (*capacity).max(1).leading_zeros())
            ),
            Self::InvalidPolicy(error) => write!(f, "invalid eviction policy: {error}"),
            Self::InvalidJitter => {
                f.write_str("time_to_live_jitter needs a time_to_live and a fraction from 0 to 1")
            }
            #[cfg(feature = "tokio")]
            Self::NoTokioRuntime => write!(
                f,
                "Scheduler::Tokio needs build() to be called within a tokio runtime"
            ),
            #[cfg(feature = "tokio")]
            Self::NoTokioTimeDriver => write!(
                f,
                "Scheduler::Tokio needs a runtime with its time driver (enable_time or enable_all \
                 on the runtime builder)"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidPolicy(error) => Some(error),
            _ => None,
        }
    }
}
