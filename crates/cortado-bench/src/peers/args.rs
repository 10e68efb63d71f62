//! The `peers` binary's command line, parsed into a [`Command`] or a typed [`ArgsError`].
//!
//! # Format
//!
//! ```text
//! peers [--quick] [--only throughput|hit|memory[,...]] [--threads 1,2] [--runs 5]
//!       [--ops OPS_PER_THREAD] [--caches cortado,quick_cache,...] [--seed N]
//!       [--stream-seeds N,...] [--json FILE]
//! peers --memory-child CACHE SCENARIO ENTRIES
//! ```
//!
//! # Design
//!
//! Hand-written, since the binary has a handful of flags and the bench crate keeps its
//! dependencies to the caches it measures. Lists are comma-separated; a repeated flag replaces
//! the earlier value, except `--only`, whose lists add up.

use std::fmt;
use std::path::PathBuf;

use super::hit_ratio::STREAM_SEED;

/// The hit-ratio streams' seeds unless `--stream-seeds` says otherwise: the first is the one the
/// tables of earlier runs used alone.
pub const DEFAULT_STREAM_SEEDS: [u64; 5] = [STREAM_SEED, 1, 2, 3, 4];
use super::memory::{Scenario, CHILD_FLAG};
use super::{Peer, SEED};

/// A measurement the binary can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Section {
    /// Throughput of workloads A and B.
    Throughput,
    /// Strict single-threaded hit-ratio replays.
    HitRatio,
    /// Heap bytes per entry, in child processes.
    Memory,
}

impl Section {
    /// Every section, in the order they run.
    pub const ALL: [Section; 3] = [Section::Throughput, Section::HitRatio, Section::Memory];

    /// The name after `--only`.
    pub fn name(self) -> &'static str {
        match self {
            Section::Throughput => "throughput",
            Section::HitRatio => "hit",
            Section::Memory => "memory",
        }
    }
}

/// A parsed benchmark run (without `--memory-child`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Smaller sizes for a smoke run.
    pub quick: bool,
    /// The sections to run, in [`Section::ALL`] order.
    pub sections: Vec<Section>,
    /// Thread counts of the throughput runs.
    pub threads: Vec<usize>,
    /// Timed passes per throughput cell (the median is reported).
    pub runs: usize,
    /// Operations per thread per throughput pass; `None` for the default of the size.
    pub ops_per_thread: Option<usize>,
    /// The caches to measure, in [`Peer::ALL`] order.
    pub peers: Vec<Peer>,
    /// The seed of the hit-ratio replays' hashers and of Cortado's policy there (the
    /// streams keep theirs): the replays are deterministic, so this is how to see how much of a
    /// margin is one seed's luck.
    pub seed: u64,
    /// The seeds the hit-ratio streams are drawn with, one replay of every stream each: the
    /// other half of a margin's luck. The tables show means, and a hit-ratio goal is met only
    /// when Cortado is ahead on every one.
    pub stream_seeds: Vec<u64>,
    /// Where to write the results as JSON, if anywhere.
    pub json: Option<PathBuf>,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            quick: false,
            sections: Section::ALL.to_vec(),
            threads: vec![1, 2],
            runs: 5,
            ops_per_thread: None,
            peers: Peer::ALL.to_vec(),
            seed: SEED,
            stream_seeds: DEFAULT_STREAM_SEEDS.to_vec(),
            json: None,
        }
    }
}

/// What the binary was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Run the benchmark.
    Run(RunArgs),
    /// Measure one cache's memory and print a footprint line (the child side).
    MemoryChild {
        /// The cache.
        peer: Peer,
        /// With or without a TTL.
        scenario: Scenario,
        /// Capacity, and entries inserted per phase.
        entries: u64,
    },
    /// Print the usage.
    Help,
}

/// Why the command line was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// A flag this binary does not have.
    UnknownFlag(String),
    /// A flag given without its value.
    MissingValue(&'static str),
    /// A value that does not parse, or is out of range, for its flag.
    BadValue {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
    },
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::UnknownFlag(flag) => write!(f, "unknown argument `{flag}`"),
            ArgsError::MissingValue(flag) => write!(f, "`{flag}` needs a value"),
            ArgsError::BadValue { flag, value } => write!(f, "bad value `{value}` for `{flag}`"),
        }
    }
}

impl std::error::Error for ArgsError {}

/// The usage text.
pub const USAGE: &str = "\
usage: peers [--quick] [--only throughput|hit|memory[,...]] [--threads 1,2] [--runs 5]
             [--ops OPS_PER_THREAD]
             [--caches cortado,quick_cache,quick_cache_same_shards,moka,mini_moka,lru_mutex]
             [--seed N] [--stream-seeds N,...] [--json FILE]
       peers --memory-child CACHE no-expiry|ttl-1h ENTRIES";

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, ArgsError> {
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return parse_child(&args[1..]);
    }
    let mut run = RunArgs::default();
    let mut only: Vec<Section> = Vec::new();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut value = |name: &'static str| {
            rest.next()
                .map(String::as_str)
                .ok_or(ArgsError::MissingValue(name))
        };
        match flag.as_str() {
            "--help" | "-h" => return Ok(Command::Help),
            "--quick" => run.quick = true,
            "--only" => {
                let text = value("--only")?;
                for name in text.split(',') {
                    let section = Section::ALL
                        .into_iter()
                        .find(|s| s.name() == name)
                        .ok_or_else(|| bad("--only", text))?;
                    only.push(section);
                }
            }
            "--threads" => {
                let text = value("--threads")?;
                run.threads = list(text, "--threads", |t| t.parse().ok().filter(|&n| n > 0))?;
            }
            "--runs" => run.runs = positive(value("--runs")?, "--runs")?,
            "--ops" => run.ops_per_thread = Some(positive(value("--ops")?, "--ops")?),
            "--caches" => {
                let text = value("--caches")?;
                let named = list(text, "--caches", Peer::from_name)?;
                run.peers = Peer::ALL
                    .into_iter()
                    .filter(|p| named.contains(p))
                    .collect();
            }
            "--seed" => {
                let text = value("--seed")?;
                run.seed = text.parse().map_err(|_| bad("--seed", text))?;
            }
            "--stream-seeds" => {
                let text = value("--stream-seeds")?;
                run.stream_seeds = list(text, "--stream-seeds", |t| t.parse().ok())?;
            }
            "--json" => run.json = Some(PathBuf::from(value("--json")?)),
            other => return Err(ArgsError::UnknownFlag(other.to_owned())),
        }
    }
    if !only.is_empty() {
        run.sections = Section::ALL
            .into_iter()
            .filter(|s| only.contains(s))
            .collect();
    }
    Ok(Command::Run(run))
}

fn parse_child(args: &[String]) -> Result<Command, ArgsError> {
    let [peer, scenario, entries] = args else {
        return Err(ArgsError::MissingValue(CHILD_FLAG));
    };
    Ok(Command::MemoryChild {
        peer: Peer::from_name(peer).ok_or_else(|| bad(CHILD_FLAG, peer))?,
        scenario: Scenario::from_name(scenario).ok_or_else(|| bad(CHILD_FLAG, scenario))?,
        entries: positive::<u64>(entries, CHILD_FLAG)?,
    })
}

fn bad(flag: &'static str, value: &str) -> ArgsError {
    ArgsError::BadValue {
        flag,
        value: value.to_owned(),
    }
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(
    text: &str,
    flag: &'static str,
) -> Result<T, ArgsError> {
    text.parse()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| bad(flag, text))
}

fn list<T>(
    text: &str,
    flag: &'static str,
    item: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, ArgsError> {
    text.split(',')
        .map(|part| item(part.trim()).ok_or_else(|| bad(flag, text)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parse_no_arguments_runs_everything_with_defaults() {
        assert_eq!(parse(&[]), Ok(Command::Run(RunArgs::default())));
    }

    #[test]
    fn parse_flags_set_their_fields() {
        let parsed = parse(&args(
            "--quick --only memory,throughput --threads 2,4 --runs 3 --ops 1000 \
             --caches moka,cortado --seed 7 --stream-seeds 9,10 --json out.json",
        ));
        let expected = RunArgs {
            quick: true,
            sections: vec![Section::Throughput, Section::Memory],
            threads: vec![2, 4],
            runs: 3,
            ops_per_thread: Some(1000),
            peers: vec![Peer::Cortado, Peer::Moka],
            seed: 7,
            stream_seeds: vec![9, 10],
            json: Some(PathBuf::from("out.json")),
        };
        assert_eq!(parsed, Ok(Command::Run(expected)));
    }

    #[test]
    fn parse_bad_values_are_typed_errors() {
        assert_eq!(parse(&args("--threads 0")), Err(bad("--threads", "0")));
        assert_eq!(
            parse(&args("--runs")),
            Err(ArgsError::MissingValue("--runs"))
        );
        assert_eq!(parse(&args("--only speed")), Err(bad("--only", "speed")));
        assert_eq!(parse(&args("--seed -1")), Err(bad("--seed", "-1")));
        assert_eq!(
            parse(&args("--stream-seeds 1,x")),
            Err(bad("--stream-seeds", "1,x"))
        );
        assert_eq!(
            parse(&args("--caches redis")),
            Err(bad("--caches", "redis"))
        );
        assert_eq!(
            parse(&args("--fast")),
            Err(ArgsError::UnknownFlag("--fast".into()))
        );
    }

    #[test]
    fn parse_memory_child_needs_three_valid_values() {
        assert_eq!(
            parse(&args("--memory-child moka ttl-1h 1000")),
            Ok(Command::MemoryChild {
                peer: Peer::Moka,
                scenario: Scenario::Ttl,
                entries: 1000
            })
        );
        assert!(parse(&args("--memory-child moka ttl-1h")).is_err());
        assert!(parse(&args("--memory-child moka forever 10")).is_err());
        assert!(parse(&args("--memory-child moka ttl-1h 0")).is_err());
    }
}
