//! Reference policies: exact, fast implementations of the published algorithms Cortado is
//! measured against, from the offline optimum down to FIFO.
//!
//! [`reference()`] builds one by name (see [`REFERENCE_POLICIES`]); each is also a public type with
//! its own constructor. Capacities count entries (every object has size 1), every replay starts
//! empty, and every request counts, cold misses included.
//!
//! # Design
//!
//! The point of these policies is comparison, so they aim at *exactness* against libCacheSim, the
//! simulator behind the published hit ratios of ARC, LIRS, S3-FIFO, SIEVE and Belady: where
//! libCacheSim's implementation departs from a paper, the module of the policy says so and follows
//! libCacheSim, so that a difference between Cortado and a reference is the algorithm's, not the
//! simulator's. On the project's 21 reference traces at 4 sizes each, `opt`, `arc`, `lirs` and
//! `sieve` reproduce libCacheSim 0.3.5's published hit ratios in all 84 cells (to the table's two
//! decimals), and `s3fifo` in all but the three tiny-cache cells its module explains. `fifo`,
//! `clock`, `opt-bypass` and `tinylfu-lru` have no published counterpart in that table.
//!
//! They must also be fast: the biggest trace has 13 million requests and every policy is replayed
//! at several sizes. ARC, LIRS, S3-FIFO, SIEVE and TinyLFU-LRU keep their entries in `Vec`s
//! linked by `u32` indices ([`linked`]), FIFO and CLOCK in a ring of keys, and all of them look
//! keys up with a cheap fixed hash ([`key_hash`]); OPT needs no lookup, only arrays indexed by
//! request position and a heap. None allocates per request once warmed up, except OPT's heap,
//! which keeps the positions hits consumed until they surface.
//!
//! # References
//!
//! 1. 1a1a11a/libCacheSim (`libCacheSim/cache/eviction/`): the implementations matched here.
//! 2. The paper of each policy, cited in its module.

pub mod arc;
pub mod clock;
pub mod fifo;
pub mod key_hash;
pub mod linked;
pub mod lirs;
pub mod opt;
pub mod s3fifo;
pub mod sieve;
pub mod tinylfu_lru;

pub use arc::Arc;
pub use clock::Clock;
pub use fifo::Fifo;
pub use lirs::Lirs;
pub use opt::Opt;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;
pub use tinylfu_lru::TinyLfuLru;

use super::Policy;

/// Names accepted by [`reference()`], in the order reports list them.
pub const REFERENCE_POLICIES: &[&str] = &[
    "opt",
    "opt-bypass",
    "arc",
    "lirs",
    "s3fifo",
    "sieve",
    "clock",
    "fifo",
    "tinylfu-lru",
];

/// Why a reference policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceError {
    /// No reference policy has this name.
    UnknownPolicy {
        /// The name asked for.
        name: String,
    },
    /// A capacity of zero entries.
    ZeroCapacity,
    /// The policy needs more entries than asked for.
    CapacityTooSmall {
        /// The policy's name.
        policy: &'static str,
        /// Its smallest capacity.
        min: usize,
    },
    /// More entries than `u32` slot indices can address.
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: usize,
    },
    /// OPT indexes requests with `u32` positions.
    TraceTooLong {
        /// Requests in the sequence.
        len: usize,
        /// The most OPT accepts.
        max: usize,
    },
}

impl std::fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownPolicy { name } => write!(
                f,
                "unknown reference policy {name:?}; valid names: {}",
                REFERENCE_POLICIES.join(", ")
            ),
            Self::ZeroCapacity => write!(f, "capacity must be at least one entry"),
            Self::CapacityTooSmall { policy, min } => {
                write!(f, "{policy} needs a capacity of at least {min} entries")
            }
            Self::CapacityTooLarge { capacity } => write!(
                f,
                "capacity {capacity} exceeds the {MAX_CAPACITY} entries a reference policy holds"
            ),
            Self::TraceTooLong { len, max } => write!(
                f,
                "OPT handles at most {max} requests, the sequence has {len}"
            ),
        }
    }
}

impl std::error::Error for ReferenceError {}

/// The largest capacity: slots of ghosts and stacks (up to 3x the capacity) must fit in `u32`.
pub const MAX_CAPACITY: usize = (u32::MAX / 4) as usize;

/// Rejects capacities the policies cannot hold.
pub(crate) fn check_capacity(capacity: usize) -> Result<(), ReferenceError> {
    if capacity == 0 {
        Err(ReferenceError::ZeroCapacity)
    } else if capacity > MAX_CAPACITY {
        Err(ReferenceError::CapacityTooLarge { capacity })
    } else {
        Ok(())
    }
}

/// Builds the reference policy `name` with `capacity` entries. `keys` is the whole request
/// sequence: only `opt` and `opt-bypass` read it (they must then be replayed with exactly that
/// sequence); the others ignore it.
pub fn reference(
    name: &str,
    capacity: usize,
    keys: &[u64],
) -> Result<Box<dyn Policy>, ReferenceError> {
    Ok(match name {
        "opt" => Box::new(Opt::new(keys, capacity)?),
        "opt-bypass" => Box::new(Opt::with_bypass(keys, capacity)?),
        "arc" => Box::new(Arc::new(capacity)?),
        "lirs" => Box::new(Lirs::new(capacity)?),
        "s3fifo" => Box::new(S3Fifo::new(capacity)?),
        "sieve" => Box::new(Sieve::new(capacity)?),
        "clock" => Box::new(Clock::new(capacity)?),
        "fifo" => Box::new(Fifo::new(capacity)?),
        "tinylfu-lru" => Box::new(TinyLfuLru::new(capacity)?),
        _ => {
            return Err(ReferenceError::UnknownPolicy {
                name: name.to_owned(),
            })
        }
    })
}

#[cfg(test)]
mod tests;
