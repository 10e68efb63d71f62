//! Policies the simulator replays: Cortado's own (the library's code) and reference policies.
//!
//! [`build`] makes any of them by name ([`POLICIES`]) for a capacity in entries; every replay
//! drives the result through the one-method [`Policy`] trait, so a report never knows which family
//! a policy comes from.
//!
//! # Design
//!
//! Two families behind one registry. [`library`] wraps the library's `unsync::Cache` itself, so a
//! hit ratio measured here is the hit ratio users get; [`reference`](mod@reference) holds independent
//! implementations of published algorithms, matched against libCacheSim. Names are unique across
//! both families (a test checks it), lowercase, and [`build`] accepts them in any case. The name
//! list is assembled at compile time from the two families' tables, so adding a policy to a
//! family adds it here with no second list to keep in sync.

pub mod library;
pub mod reference;

use std::fmt;

use cortado::builder::BuildError;
use cortado::policy::EvictionPolicy;

pub use library::{Library, LibraryPolicy, LIBRARY_POLICIES};
pub use reference::{ReferenceError, REFERENCE_POLICIES};

/// A cache replacement policy driven one request at a time.
///
/// Every request is a lookup of `key`; on a miss the policy decides whether and how to admit the
/// key, evicting as it must to stay within its capacity (in entries).
pub trait Policy: Send {
    /// Replays one request; `true` when it was a hit.
    fn record(&mut self, key: u64) -> bool;
}

/// Every policy name [`build`] accepts: the library's first, then the reference policies.
pub const POLICIES: &[&str] = &ALL_NAMES;

const ALL_NAMES: [&str; LIBRARY_POLICIES.len() + REFERENCE_POLICIES.len()] =
    concat_names(LIBRARY_POLICIES, REFERENCE_POLICIES);

/// The library table's names followed by `reference`; `N` must be the total length.
const fn concat_names<const N: usize>(
    library: &[LibraryPolicy],
    reference: &[&'static str],
) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < library.len() {
        out[i] = library[i].0;
        i += 1;
    }
    let mut j = 0;
    while j < reference.len() {
        out[i + j] = reference[j];
        j += 1;
    }
    out
}

/// The seed of the library policies' randomness when none is given: runs are reproducible.
pub const DEFAULT_SEED: u64 = 0x00c0_47ad_05ee_d5ed;

/// The most entries a policy reserves room for up front; beyond it, its tables grow as keys
/// arrive. Reserving the whole capacity made `--sizes 1000000000` allocate tens of gigabytes
/// (and abort) for a trace of a few keys; the largest cache of the reference table (P12 at 25%)
/// is 788,328 entries, well below.
pub const PRESIZE_LIMIT: usize = 1 << 22;

/// The entries to reserve for a capacity of `capacity`: see [`PRESIZE_LIMIT`].
pub fn presize(capacity: usize) -> usize {
    capacity.min(PRESIZE_LIMIT)
}

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    /// No policy has this name.
    UnknownPolicy {
        /// The name asked for.
        name: String,
    },
    /// A reference policy rejected its arguments.
    Reference(ReferenceError),
    /// The library's cache builder rejected its arguments.
    Library(BuildError),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownPolicy { name } => write!(
                f,
                "unknown policy `{name}` (valid names: {})",
                POLICIES.join(", ")
            ),
            PolicyError::Reference(error) => error.fmt(f),
            PolicyError::Library(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for PolicyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PolicyError::UnknownPolicy { .. } => None,
            PolicyError::Reference(error) => Some(error),
            PolicyError::Library(error) => Some(error),
        }
    }
}

impl From<BuildError> for PolicyError {
    fn from(error: BuildError) -> Self {
        PolicyError::Library(error)
    }
}

impl From<ReferenceError> for PolicyError {
    fn from(error: ReferenceError) -> Self {
        PolicyError::Reference(error)
    }
}

/// The canonical (`'static`, lowercase) spelling of a policy name, matched case-insensitively.
pub fn canonical(name: &str) -> Result<&'static str, PolicyError> {
    POLICIES
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(name))
        .ok_or_else(|| PolicyError::UnknownPolicy {
            name: name.to_owned(),
        })
}

/// Builds policy `name` with `capacity` entries and the [`DEFAULT_SEED`].
///
/// `keys` is the whole request sequence: only the offline optima (`opt`, `opt-bypass`) read it,
/// and must then be replayed with exactly that sequence.
pub fn build(name: &str, capacity: usize, keys: &[u64]) -> Result<Box<dyn Policy>, PolicyError> {
    build_tuned(name, capacity, keys, DEFAULT_SEED, &RedisTuning::default())
}

/// Redis's tunables for `redis-lru` and `redis-lfu`; `None` keeps the library's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedisTuning {
    /// Entries sampled per eviction round (`maxmemory-samples`; `redis-lru` and `redis-lfu`).
    pub samples: Option<u32>,
    /// How much harder each counter increment gets (`lfu-log-factor`; `redis-lfu`).
    pub lfu_log_factor: Option<u32>,
    /// Requests per counter decay period, 0 for no decay (`redis-lfu`; see
    /// [`EvictionPolicy::lfu_decay_period`](cortado::policy::EvictionPolicy::lfu_decay_period)).
    pub lfu_decay_period: Option<u64>,
}

impl RedisTuning {
    /// `policy` with the tunables that are set. The library's other policies ignore them.
    pub fn apply(&self, mut policy: EvictionPolicy) -> EvictionPolicy {
        if let Some(samples) = self.samples {
            policy = policy.samples(samples);
        }
        if let Some(factor) = self.lfu_log_factor {
            policy = policy.lfu_log_factor(factor);
        }
        if let Some(period) = self.lfu_decay_period {
            policy = policy.lfu_decay_period(period);
        }
        policy
    }
}

/// [`build`] with the seed of the library policies' randomness and Redis's tunables (reference
/// policies use neither).
pub fn build_tuned(
    name: &str,
    capacity: usize,
    keys: &[u64],
    seed: u64,
    redis: &RedisTuning,
) -> Result<Box<dyn Policy>, PolicyError> {
    let name = canonical(name)?;
    if let Some(policy) = library::eviction_policy(name) {
        let policy = redis.apply(policy).with_seed(seed);
        return Ok(Box::new(Library::new(policy, capacity)?));
    }
    Ok(reference::reference(name, capacity, keys)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(policy: &mut dyn Policy, keys: &[u64]) -> usize {
        keys.iter().filter(|&&k| policy.record(k)).count()
    }

    #[test]
    fn policies_names_unique_and_lowercase() {
        let mut names = POLICIES.to_vec();
        assert_eq!(
            names.len(),
            LIBRARY_POLICIES.len() + REFERENCE_POLICIES.len()
        );
        assert!(names
            .iter()
            .all(|n| *n == n.to_lowercase() && !n.is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), POLICIES.len(), "duplicate policy name");
    }

    #[test]
    fn build_every_name_replays() {
        let keys: Vec<u64> = (0..200).map(|i| i % 17).collect();
        for name in POLICIES {
            let mut policy = build(name, 20, &keys).unwrap();
            // 17 distinct keys fit in 20 entries: every policy misses each key once only, except
            // those that may decline an admission (opt-bypass never needs to).
            let got = hits(&mut *policy, &keys);
            assert!(got <= 200 - 17, "{name}: {got}");
            assert!(got >= 150, "{name}: {got}");
        }
    }

    #[test]
    fn build_tuned_redis_tunables_reach_the_library_policy() {
        // A Zipf-like stream with a long tail: the tunables change redis-lfu's choices.
        let keys: Vec<u64> = (0..20_000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % (1 + (i % 997)))
            .collect();
        let tuning = RedisTuning {
            samples: Some(2),
            lfu_log_factor: Some(0),
            lfu_decay_period: Some(0),
        };
        for name in ["redis-lfu", "redis-lru"] {
            let mut tuned = build_tuned(name, 50, &keys, DEFAULT_SEED, &tuning).unwrap();
            let direct = library::eviction_policy(name)
                .unwrap()
                .samples(2)
                .lfu_log_factor(0)
                .lfu_decay_period(0)
                .with_seed(DEFAULT_SEED);
            let mut direct = Library::new(direct, 50).unwrap();
            let mut default = build(name, 50, &keys).unwrap();
            let tuned = hits(&mut *tuned, &keys);
            assert_eq!(tuned, hits(&mut direct, &keys), "{name}");
            assert_ne!(
                tuned,
                hits(&mut *default, &keys),
                "{name}: the tuning changed nothing"
            );
        }
        // Other policies ignore them.
        let mut tuned = build_tuned("wtinylfu", 50, &keys, DEFAULT_SEED, &tuning).unwrap();
        let mut default = build("wtinylfu", 50, &keys).unwrap();
        assert_eq!(hits(&mut *tuned, &keys), hits(&mut *default, &keys));
    }

    #[test]
    fn build_unknown_name_error_lists_valid_names() {
        let err = build("lrru", 10, &[]).err().unwrap();
        assert_eq!(
            err,
            PolicyError::UnknownPolicy {
                name: "lrru".into()
            }
        );
        let message = err.to_string();
        assert!(message.contains("`lrru`"), "{message}");
        for name in POLICIES {
            assert!(message.contains(name), "{message}");
        }
    }

    #[test]
    fn build_name_case_insensitive() {
        assert_eq!(canonical("WTinyLFU").unwrap(), "wtinylfu");
        assert_eq!(canonical("ARC").unwrap(), "arc");
        assert!(build("LRU", 10, &[]).is_ok());
    }

    #[test]
    fn build_zero_capacity_reference_policy_fails() {
        assert_eq!(
            build("arc", 0, &[]).err().unwrap(),
            PolicyError::Reference(ReferenceError::ZeroCapacity)
        );
    }
}
