//! Heap bytes per entry of each cache, `u64` keys and values, each measured in a fresh child
//! process with a counting global allocator.
//!
//! The parent calls [`measure_in_child`], which runs the `peers` binary again as
//! `peers --memory-child CACHE SCENARIO ENTRIES`; the child ([`child_main`]) builds one cache,
//! fills it, and prints one [`Footprint`] line that the parent parses.
//!
//! # Design
//!
//! - **A process per cache.** Allocator state, thread-locals and lazily built statics left by
//!   one crate must not be charged to the next, and a child's heap starts clean.
//! - **Three readings**, as differences from the heap before the cache is built: *empty* (what
//!   the builder allocates up front, such as a sketch or a pre-sized table); *full*, after
//!   `ENTRIES` distinct inserts into a cache of capacity `ENTRIES`; *evicting*, after `ENTRIES`
//!   more distinct inserts (so every crate has evicted as many entries as it holds, and any
//!   per-entry bookkeeping of evicted keys, such as ghost entries, shows). Maintenance runs
//!   before each reading, so deferred writes are applied and buffers drained.
//! - **Per entry** means bytes divided by `ENTRIES` (the capacity); the entries actually held
//!   are reported beside it, since some crates hold fewer than their capacity.
//! - **Scenarios**: no expiry, and a time to live of one hour (long enough that nothing expires
//!   during the measurement), which costs the crates that support it their per-entry deadline
//!   bookkeeping. `quick_cache` and `lru` have no TTL: reported as unsupported.
//! - Keys are `mix64(i)`: distinct, and scattered like hashed keys.
//!
//! # References
//!
//! 1. quick-cache's README (its stated per-entry overhead).

use std::fmt;
use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use cortado_sim::gen::mix64;

use super::{BuildFailure, CacheSpec, ConcurrentCache, Peer, PeerVisitor};
use crate::counting_alloc;

/// The time to live of the [`Scenario::Ttl`] scenario: one hour.
pub const TTL: Duration = Duration::from_secs(3_600);

/// The first argument of a child's command line.
pub const CHILD_FLAG: &str = "--memory-child";

/// Whether entries expire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// No expiry configured.
    NoExpiry,
    /// A time to live of [`TTL`] on every entry.
    Ttl,
}

impl Scenario {
    /// Both scenarios, in table order.
    pub const ALL: [Scenario; 2] = [Scenario::NoExpiry, Scenario::Ttl];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::NoExpiry => "no-expiry",
            Scenario::Ttl => "ttl-1h",
        }
    }

    /// The scenario called `name`, if any.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    fn spec(self, capacity: u64) -> CacheSpec {
        match self {
            Scenario::NoExpiry => CacheSpec::new(capacity),
            Scenario::Ttl => CacheSpec::new(capacity).with_ttl(TTL),
        }
    }
}

/// Heap bytes held by one cache at three moments (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Entries inserted to fill the cache, which is also its capacity.
    pub capacity: u64,
    /// Bytes right after building.
    pub empty: i64,
    /// Bytes after `capacity` distinct inserts.
    pub full: i64,
    /// Entries held then.
    pub full_entries: u64,
    /// Bytes after `capacity` more distinct inserts.
    pub evicting: i64,
    /// Entries held then.
    pub evicting_entries: u64,
}

impl Footprint {
    /// Bytes per unit of capacity when full.
    pub fn full_per_entry(&self) -> f64 {
        self.full as f64 / self.capacity.max(1) as f64
    }

    /// Bytes per unit of capacity after evicting.
    pub fn evicting_per_entry(&self) -> f64 {
        self.evicting as f64 / self.capacity.max(1) as f64
    }
}

impl fmt::Display for Footprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "footprint capacity={} empty={} full={} full_entries={} evicting={} evicting_entries={}",
            self.capacity,
            self.empty,
            self.full,
            self.full_entries,
            self.evicting,
            self.evicting_entries
        )
    }
}

impl FromStr for Footprint {
    type Err = MemoryError;

    fn from_str(line: &str) -> Result<Self, MemoryError> {
        let bad = || MemoryError::BadOutput(line.to_owned());
        let mut fields = line.split_whitespace();
        if fields.next() != Some("footprint") {
            return Err(bad());
        }
        let mut value = |name: &str| -> Result<i64, MemoryError> {
            let field = fields.next().ok_or_else(bad)?;
            let (key, number) = field.split_once('=').ok_or_else(bad)?;
            if key != name {
                return Err(bad());
            }
            number.parse().map_err(|_| bad())
        };
        let unsigned = |v: i64| u64::try_from(v).map_err(|_| bad());
        let footprint = Footprint {
            capacity: unsigned(value("capacity")?)?,
            empty: value("empty")?,
            full: value("full")?,
            full_entries: unsigned(value("full_entries")?)?,
            evicting: value("evicting")?,
            evicting_entries: unsigned(value("evicting_entries")?)?,
        };
        if fields.next().is_some() {
            return Err(bad());
        }
        Ok(footprint)
    }
}

/// The line a child prints when its cache has no time to live.
pub const UNSUPPORTED: &str = "unsupported";

/// Why a memory measurement failed.
#[derive(Debug)]
pub enum MemoryError {
    /// The child could not be started.
    Spawn(std::io::Error),
    /// The child exited unsuccessfully.
    Child {
        /// Its exit status, as text.
        status: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The child printed something other than a footprint line.
    BadOutput(String),
    /// The cache could not be built.
    Build(BuildFailure),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::Spawn(error) => write!(f, "could not start the child: {error}"),
            MemoryError::Child { status, stderr } => {
                write!(f, "the child failed ({status}): {}", stderr.trim())
            }
            MemoryError::BadOutput(line) => write!(f, "unexpected child output: {line:?}"),
            MemoryError::Build(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::Spawn(error) => Some(error),
            MemoryError::Build(error) => Some(error),
            _ => None,
        }
    }
}

/// Measures `peer` under `scenario` with `entries` of capacity in a child process of `exe`
/// (the `peers` binary); `Ok(None)` when the crate has no TTL.
pub fn measure_in_child(
    exe: &Path,
    peer: Peer,
    scenario: Scenario,
    entries: u64,
) -> Result<Option<Footprint>, MemoryError> {
    let output = Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(peer.name())
        .arg(scenario.name())
        .arg(entries.to_string())
        .output()
        .map_err(MemoryError::Spawn)?;
    if !output.status.success() {
        return Err(MemoryError::Child {
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.trim();
    if line == UNSUPPORTED {
        return Ok(None);
    }
    line.parse().map(Some)
}

/// The child's work: counts this process's heap while `peer` is built and filled, and returns
/// the line to print. Meaningful only in a process whose global allocator is
/// [`CountingAlloc`](counting_alloc::CountingAlloc).
pub fn child_main(peer: Peer, scenario: Scenario, entries: u64) -> Result<String, MemoryError> {
    counting_alloc::start_counting();
    match peer.visit(Fill { scenario, entries }) {
        Ok(footprint) => Ok(footprint.to_string()),
        Err(BuildFailure::NoTtl) => Ok(UNSUPPORTED.to_owned()),
        Err(other) => Err(MemoryError::Build(other)),
    }
}

/// Builds and fills one cache, reading the heap counter between steps.
struct Fill {
    scenario: Scenario,
    entries: u64,
}

impl PeerVisitor for Fill {
    type Output = Result<Footprint, BuildFailure>;

    fn visit<C: ConcurrentCache<u64, u64>>(self) -> Self::Output {
        let heap = || counting_alloc::current_bytes() as i64;
        let before = heap();
        let cache = C::build(&self.scenario.spec(self.entries))?;
        let empty = heap() - before;
        for i in 0..self.entries {
            cache.insert(mix64(i), i);
        }
        settle(&cache);
        let full = heap() - before;
        let full_entries = cache.entries();
        for i in self.entries..2 * self.entries {
            cache.insert(mix64(i), i);
        }
        settle(&cache);
        let evicting = heap() - before;
        let evicting_entries = cache.entries();
        drop(cache);
        Ok(Footprint {
            capacity: self.entries,
            empty,
            full,
            full_entries,
            evicting,
            evicting_entries,
        })
    }
}

/// Runs maintenance until the entry count stops changing (a bounded number of times): some
/// crates drain only a batch of deferred writes per call.
fn settle<C: ConcurrentCache<u64, u64>>(cache: &C) {
    let mut entries = cache.entries();
    for _ in 0..16 {
        cache.sync_maintenance();
        let now = cache.entries();
        if now == entries {
            return;
        }
        entries = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_line_round_trips() {
        let footprint = Footprint {
            capacity: 1_000,
            empty: 8_192,
            full: 64_000,
            full_entries: 1_000,
            evicting: -5,
            evicting_entries: 998,
        };
        assert_eq!(
            footprint.to_string().parse::<Footprint>().ok(),
            Some(footprint)
        );
    }

    #[test]
    fn footprint_line_with_missing_or_extra_field_is_rejected() {
        for line in [
            "footprint capacity=1 empty=2 full=3 full_entries=4 evicting=5",
            "footprint capacity=1 empty=2 full=3 full_entries=4 evicting=5 evicting_entries=6 x=7",
            "footprint capacity=1 empty=2 full=3 full_entries=-4 evicting=5 evicting_entries=6",
            "capacity=1 empty=2 full=3 full_entries=4 evicting=5 evicting_entries=6",
        ] {
            assert!(line.parse::<Footprint>().is_err(), "{line}");
        }
    }

    #[test]
    fn scenario_names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(Scenario::from_name(scenario.name()), Some(scenario));
        }
    }
}
