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
    build_seeded(name, capacity, keys, DEFAULT_SEED)
}

/// [`build`] with the seed of the library policies' randomness (reference policies have none).
pub fn build_seeded(
    name: &str,
    capacity: usize,
    keys: &[u64],
    seed: u64,
) -> Result<Box<dyn Policy>, PolicyError> {
    let name = canonical(name)?;
    if let Some(policy) = library::eviction_policy(name) {
        return Ok(Box::new(Library::new(policy.with_seed(seed), capacity)?));
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
