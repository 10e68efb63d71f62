//! The replay engine: loads traces, turns sizes into capacities, and replays every
//! trace x policy x size cell, in parallel, into hit counts.
//!
//! [`load_traces`] reads each trace once into memory ([`Trace`]); [`grid`] lays out the cells
//! with capacities resolved by [`Size::entries`]; [`run`] replays them on a rayon pool and
//! returns one [`Outcome`] per cell, in cell order, each with its hits and the wall time of its
//! replay loop.
//!
//! # Design
//!
//! - **Load once, share read-only.** A trace is a `Vec<u64>` (8 bytes per request) that every
//!   cell of that trace borrows; replays never re-read or copy it. Cells are independent, so
//!   they run on a rayon pool of `--threads` threads (all cores by default; 1 for timing runs,
//!   so that cells do not compete for caches and memory bandwidth).
//! - **Longest first.** Cells are started in decreasing trace length: a 13M-request trace
//!   started last would leave every other thread idle at the end of the run.
//! - **Sizes as the reference table defines them.** A percentage is of the trace's distinct keys,
//!   rounded half away from zero and never below [`MIN_PERCENT_ENTRIES`] (10) entries, which
//!   reproduces the `size` column of `shared/reference/hit-ratios.csv` (651.5 gives 652 there).
//!   A size that resolves to the capacity of an earlier one on the same trace is dropped: it
//!   would replay the same cell twice.
//! - **Fail before replaying.** Every policy x capacity pair is built once on an empty sequence
//!   before the run, so a capacity a policy rejects ends the run at once, not after an hour.
//! - **Timing covers the replay loop only**: not loading, not building the policy (OPT's
//!   precomputation is a pass over the trace of its own). The progress bar is advanced once per
//!   [`CHUNK`] requests, one atomic add per 64K requests, invisible in the timing. Both the wall
//!   time and, on Linux, the thread's CPU time are kept: on a shared machine the wall time
//!   also counts the time other processes held the core.
//!
//! # References
//!
//! 1. `../shared/reference/README.md` (from the repository root): the size rule and the
//!    replay rule (look up, insert on a miss, count cold misses, no warm-up).
//! 2. B. Manes: the Caffeine simulator, which also replays each policy on its own thread.

use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::policy::reference::key_hash::KeyHasher;
use crate::policy::{self, Policy, PolicyError, RedisTuning};
use crate::trace::{self, Format, TraceError};

/// A percentage size never gives fewer entries than this.
pub const MIN_PERCENT_ENTRIES: usize = 10;

/// Requests replayed between two progress-bar updates.
pub const CHUNK: usize = 1 << 16;

/// A cache size as written for `--sizes`: an entry count (`1000`) or a percentage of the trace's
/// distinct keys (`1%`, `0.5%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Size {
    /// A fixed number of entries, at least 1.
    Entries(usize),
    /// A percentage of the distinct keys, in `(0, 100]`.
    Percent(f64),
}

impl Size {
    /// The capacity in entries for a trace of `distinct` keys: see the [module docs](self).
    pub fn entries(self, distinct: usize) -> usize {
        match self {
            Size::Entries(n) => n,
            Size::Percent(p) => {
                // `p` is the decimal the user wrote only to within an ulp, and the product and
                // the quotient round again, so an exact half (0.7% of 5,500 is 38.5) can come
                // out a few ulps below it. A count times a short decimal is never that close to
                // a half otherwise, so a nudge of a few ulps up restores the half.
                let exact = distinct as f64 * p / 100.0 * (1.0 + 8.0 * f64::EPSILON);
                (exact.round() as usize).max(MIN_PERCENT_ENTRIES)
            }
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Entries(n) => write!(f, "{n}"),
            Size::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A `--sizes` element that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid size `{}`: {} (expected an entry count like 1000 or a percentage of the \
             distinct keys like 5%)",
            self.text, self.reason
        )
    }
}

impl std::error::Error for SizeError {}

impl FromStr for Size {
    type Err = SizeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason| SizeError {
            text: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        if let Some(number) = trimmed.strip_suffix('%') {
            let all_digits = !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && number.bytes().filter(|&b| b == b'.').count() <= 1
                && number != ".";
            if !all_digits {
                return Err(bad("the percentage is not a plain decimal number"));
            }
            let p: f64 = number
                .parse()
                .map_err(|_| bad("the percentage is not a number"))?;
            if p <= 0.0 || p > 100.0 {
                return Err(bad("a percentage must be above 0 and at most 100"));
            }
            Ok(Size::Percent(p))
        } else {
            if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("not a whole number of entries"));
            }
            match trimmed.parse::<usize>() {
                Ok(0) => Err(bad("a cache needs at least 1 entry")),
                Ok(n) => Ok(Size::Entries(n)),
                Err(_) => Err(bad("too many entries")),
            }
        }
    }
}

/// Parses a comma-separated `--sizes` list.
pub fn parse_sizes(text: &str) -> Result<Vec<Size>, SizeError> {
    text.split(',').map(str::parse).collect()
}

/// One trace in memory.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Its name, as [`trace::name`] gives it (`p3` for `p3.arc.gz`).
    pub name: String,
    /// The file it was read from.
    pub path: PathBuf,
    /// The key of every request, in order.
    pub keys: Vec<u64>,
    /// How many different keys it has.
    pub distinct: usize,
}

impl Trace {
    /// Reads a trace file (format from the name unless given) and counts its distinct keys.
    pub fn load(path: &Path, format: Option<Format>) -> Result<Trace, TraceError> {
        let keys = trace::load(path, format)?;
        Ok(Trace::from_keys(trace::name(path), path.to_owned(), keys))
    }

    /// A trace from keys already in memory.
    pub fn from_keys(name: String, path: PathBuf, keys: Vec<u64>) -> Trace {
        // Sized for a quarter of the requests being distinct (P12 has 24 %): growing a set of
        // millions of keys step by step costs more than the replay of a fast policy.
        let mut seen: HashSet<u64, BuildHasherDefault<KeyHasher>> =
            HashSet::with_capacity_and_hasher(keys.len() / 4, BuildHasherDefault::default());
        seen.extend(keys.iter().copied());
        Trace {
            name,
            path,
            distinct: seen.len(),
            keys,
        }
    }

    /// Requests in the trace.
    pub fn requests(&self) -> u64 {
        self.keys.len() as u64
    }
}

/// One replay: a trace (index into the traces given to [`run`]), a policy and a capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Index of the trace.
    pub trace: usize,
    /// The policy's canonical name.
    pub policy: &'static str,
    /// The capacity in entries.
    pub size: usize,
    /// The size as the user wrote it (`1%`), if it was a percentage.
    pub percent: Option<f64>,
}

/// The result of one [`Cell`].
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Index of the trace.
    pub trace: usize,
    /// The trace's name.
    pub trace_name: String,
    /// The policy's canonical name.
    pub policy: &'static str,
    /// The capacity in entries.
    pub size: usize,
    /// The size as a percentage of distinct keys, if it was given that way.
    pub percent: Option<f64>,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
    /// Wall time of the replay loop, in seconds.
    pub seconds: f64,
    /// CPU time of the replay loop's thread, in seconds, where the platform tells it (Linux).
    pub cpu_seconds: Option<f64>,
}

impl Outcome {
    /// Hits per request, in `[0, 1]` (0 for an empty trace).
    pub fn hit_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.hits as f64 / self.requests as f64
        }
    }

    /// Requests replayed per second of the replay loop.
    pub fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// Requests replayed per CPU second of the replay loop's thread, if known.
    pub fn requests_per_cpu_second(&self) -> Option<f64> {
        self.cpu_seconds
            .map(|cpu| self.requests as f64 / cpu.max(1e-9))
    }
}

/// The cells of every trace x policy x size, trace-major, then policy, then size; sizes that
/// resolve to an earlier size's capacity on the same trace are dropped.
pub fn grid(traces: &[Trace], policies: &[&'static str], sizes: &[Size]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (t, trace) in traces.iter().enumerate() {
        let mut resolved: Vec<(usize, Option<f64>)> = Vec::new();
        for size in sizes {
            let entries = size.entries(trace.distinct);
            if resolved.iter().all(|&(e, _)| e != entries) {
                let percent = match *size {
                    Size::Percent(p) => Some(p),
                    Size::Entries(_) => None,
                };
                resolved.push((entries, percent));
            }
        }
        for &policy in policies {
            for &(size, percent) in &resolved {
                cells.push(Cell {
                    trace: t,
                    policy,
                    size,
                    percent,
                });
            }
        }
    }
    cells
}

/// How to run the replays.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Threads of the rayon pool; `None` for one per core.
    pub threads: Option<usize>,
    /// Seed of the library policies; `None` for [`policy::DEFAULT_SEED`].
    pub seed: Option<u64>,
    /// Redis's tunables for the library's `redis-lru` and `redis-lfu`.
    pub redis: RedisTuning,
    /// Whether to draw progress bars on stderr.
    pub progress: bool,
}

impl RunOptions {
    /// Runs `work` on a pool of the configured size.
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> Result<T, ReplayError> {
        let mut builder = rayon::ThreadPoolBuilder::new();
        if let Some(threads) = self.threads {
            builder = builder.num_threads(threads);
        }
        let pool = builder
            .build()
            .map_err(|error| ReplayError::Threads(error.to_string()))?;
        Ok(pool.install(work))
    }

    /// Builds a cell's policy with these options' seed and tunables.
    fn build(
        &self,
        name: &str,
        capacity: usize,
        keys: &[u64],
    ) -> Result<Box<dyn Policy>, PolicyError> {
        let seed = self.seed.unwrap_or(policy::DEFAULT_SEED);
        policy::build_tuned(name, capacity, keys, seed, &self.redis)
    }
}

/// Why a replay could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReplayError {
    /// A trace could not be read.
    Trace(TraceError),
    /// A policy rejected a capacity.
    Policy {
        /// The policy.
        policy: &'static str,
        /// The capacity asked for.
        size: usize,
        /// Why.
        source: PolicyError,
    },
    /// The thread pool could not be started.
    Threads(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Trace(error) => error.fmt(f),
            ReplayError::Policy {
                policy,
                size,
                source,
            } => write!(f, "policy {policy} at size {size}: {source}"),
            ReplayError::Threads(reason) => write!(f, "cannot start the thread pool: {reason}"),
        }
    }
}

impl std::error::Error for ReplayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReplayError::Trace(error) => Some(error),
            ReplayError::Policy { source, .. } => Some(source),
            ReplayError::Threads(_) => None,
        }
    }
}

impl From<TraceError> for ReplayError {
    fn from(error: TraceError) -> Self {
        ReplayError::Trace(error)
    }
}

/// Loads every trace once, in parallel on the current rayon pool, in the order given. Traces
/// that share a name are named by their paths instead.
pub fn load_traces(
    paths: &[PathBuf],
    format: Option<Format>,
    options: &RunOptions,
) -> Result<Vec<Trace>, ReplayError> {
    let bar = bar(options.progress, paths.len() as u64, "loading traces");
    let traces = paths
        .par_iter()
        .map(|path| {
            let trace = Trace::load(path, format);
            bar.inc(1);
            trace
        })
        .collect::<Result<Vec<_>, _>>();
    bar.finish_and_clear();
    let mut traces = traces?;
    distinguish_names(&mut traces);
    Ok(traces)
}

/// Names traces that share a name (`a/x.lirs`, `b/x.lirs`) by their paths, so that every
/// report and output record tells them apart.
fn distinguish_names(traces: &mut [Trace]) {
    let mut seen: HashSet<&str> = HashSet::new();
    let shared: HashSet<String> = traces
        .iter()
        .filter(|t| !seen.insert(t.name.as_str()))
        .map(|t| t.name.clone())
        .collect();
    for trace in traces.iter_mut().filter(|t| shared.contains(&t.name)) {
        trace.name = trace.path.display().to_string();
    }
}

/// Replays every cell on the current rayon pool; outcomes come back in cell order.
pub fn run(
    traces: &[Trace],
    cells: &[Cell],
    options: &RunOptions,
) -> Result<Vec<Outcome>, ReplayError> {
    check_capacities(cells, options)?;
    let total = cells.iter().map(|c| traces[c.trace].requests()).sum();
    let bar = bar(options.progress, total, "replaying");
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(traces[cells[i].trace].keys.len()));
    let mut outcomes = order
        .par_iter()
        .map(|&i| replay_cell(traces, &cells[i], options, &bar).map(|outcome| (i, outcome)))
        .collect::<Result<Vec<_>, _>>()?;
    bar.finish_and_clear();
    outcomes.sort_by_key(|&(i, _)| i);
    Ok(outcomes.into_iter().map(|(_, outcome)| outcome).collect())
}

/// Builds each distinct policy x capacity once on an empty sequence.
fn check_capacities(cells: &[Cell], options: &RunOptions) -> Result<(), ReplayError> {
    let mut checked = HashSet::new();
    for cell in cells {
        if checked.insert((cell.policy, cell.size)) {
            options
                .build(cell.policy, cell.size, &[])
                .map_err(|source| ReplayError::Policy {
                    policy: cell.policy,
                    size: cell.size,
                    source,
                })?;
        }
    }
    Ok(())
}

fn replay_cell(
    traces: &[Trace],
    cell: &Cell,
    options: &RunOptions,
    bar: &ProgressBar,
) -> Result<Outcome, ReplayError> {
    let trace = &traces[cell.trace];
    let mut policy = options
        .build(cell.policy, cell.size, &trace.keys)
        .map_err(|source| ReplayError::Policy {
            policy: cell.policy,
            size: cell.size,
            source,
        })?;
    let cpu_start = thread_cpu_seconds();
    let start = Instant::now();
    let mut hits = 0u64;
    for chunk in trace.keys.chunks(CHUNK) {
        for &key in chunk {
            hits += u64::from(policy.record(key));
        }
        bar.inc(chunk.len() as u64);
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = cpu_start.and_then(|s| Some(thread_cpu_seconds()? - s));
    Ok(Outcome {
        trace: cell.trace,
        trace_name: trace.name.clone(),
        policy: cell.policy,
        size: cell.size,
        percent: cell.percent,
        requests: trace.requests(),
        hits,
        seconds,
        cpu_seconds,
    })
}

/// CPU time of the calling thread so far, from `/proc/thread-self/schedstat` (its first field,
/// nanoseconds on a CPU); `None` where that file does not exist.
///
/// On a machine shared with other work the wall time of a replay measures the neighbours too;
/// the thread's CPU time does not (caches and memory bandwidth are still shared).
pub fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanos as f64 / 1e9)
}

/// A progress bar on stderr, or a hidden one.
fn bar(shown: bool, total: u64, message: &'static str) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total).with_message(message);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} (eta {eta})",
    ) {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(keys: &[u64]) -> Trace {
        Trace::from_keys("t".into(), PathBuf::from("t.keys"), keys.to_vec())
    }

    #[test]
    fn size_percent_of_thousand_distinct_gives_ten() {
        assert_eq!("1%".parse::<Size>().unwrap().entries(1_000), 10);
        assert_eq!("5%".parse::<Size>().unwrap().entries(1_000), 50);
    }

    #[test]
    fn size_percent_rounds_half_away_from_zero() {
        // Cells of the reference table: multi1 (2,606 keys) at 25% is 651.5 -> 652; sprite
        // (7,075) at 10% is 707.5 -> 708; 2_pools (9,939) at 5% is 496.95 -> 497, at 1% 99.39
        // -> 99.
        let pct = |p: &str, n| p.parse::<Size>().unwrap().entries(n);
        assert_eq!(pct("25%", 2_606), 652);
        assert_eq!(pct("10%", 7_075), 708);
        assert_eq!(pct("5%", 9_939), 497);
        assert_eq!(pct("1%", 9_939), 99);
        assert_eq!(pct("25%", 3_153_310), 788_328);
        assert_eq!(pct("25%", 2_529), 632);
    }

    #[test]
    fn size_fractional_percent_exact_half_rounds_up() {
        // 0.7% of 5,500 keys is exactly 38.5 and 2.3% of 1,500 is 34.5, but 0.7 and 2.3 are not
        // exact in binary: the products came out just below the half.
        let pct = |p: &str, n| p.parse::<Size>().unwrap().entries(n);
        assert_eq!(pct("0.7%", 5_500), 39);
        assert_eq!(pct("2.3%", 1_500), 35);
        assert_eq!(pct("33.3%", 1_500), 500);
        // Just off the half, either way, still rounds to the nearest.
        assert_eq!(pct("0.7%", 5_499), 38);
        assert_eq!(pct("0.7%", 5_501), 39);
    }

    #[test]
    fn size_percent_never_below_ten() {
        // loop: 1,011 distinct keys, 1% is 10.11 -> 10; cs: 1,409 -> 14; tiny traces -> 10.
        assert_eq!(Size::Percent(1.0).entries(1_011), 10);
        assert_eq!(Size::Percent(1.0).entries(1_409), 14);
        assert_eq!(Size::Percent(1.0).entries(5), MIN_PERCENT_ENTRIES);
        assert_eq!(Size::Percent(0.01).entries(0), MIN_PERCENT_ENTRIES);
    }

    #[test]
    fn size_entries_kept_as_given_even_below_ten() {
        assert_eq!("3".parse::<Size>().unwrap(), Size::Entries(3));
        assert_eq!(Size::Entries(3).entries(1_000_000), 3);
    }

    #[test]
    fn parse_sizes_mixed_list() {
        assert_eq!(
            parse_sizes("1%,0.5%,1000, 25%").unwrap(),
            vec![
                Size::Percent(1.0),
                Size::Percent(0.5),
                Size::Entries(1000),
                Size::Percent(25.0)
            ]
        );
    }

    #[test]
    fn parse_sizes_garbage_rejected() {
        for bad in [
            "",
            "x",
            "1%%",
            "%",
            "-5",
            "-1%",
            "0",
            "0%",
            "101%",
            "1e3",
            "1.5",
            "10,",
            "NaN%",
            "inf%",
            "1.2.3%",
            "+3",
            "99999999999999999999999",
        ] {
            let err = parse_sizes(bad).err();
            assert!(err.is_some(), "{bad:?} parsed");
        }
        let message = parse_sizes("1%,abc").unwrap_err().to_string();
        assert!(message.contains("`abc`"), "{message}");
    }

    #[test]
    fn grid_duplicate_capacities_dropped() {
        let keys: Vec<u64> = (0..100).collect();
        let traces = [trace(&keys)];
        // 1% and 5% of 100 keys both give the minimum, 10 entries, as does the count 10.
        let sizes = parse_sizes("1%,5%,10,20%").unwrap();
        let cells = grid(&traces, &["lru"], &sizes);
        let got: Vec<usize> = cells.iter().map(|c| c.size).collect();
        assert_eq!(got, [10, 20]);
        assert_eq!(cells[0].percent, Some(1.0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn thread_cpu_seconds_grows_while_spinning() {
        let before = thread_cpu_seconds().unwrap();
        let start = Instant::now();
        let mut x = 1u64;
        while start.elapsed().as_millis() < 60 {
            x = std::hint::black_box(x.wrapping_mul(3));
        }
        let spent = thread_cpu_seconds().unwrap() - before;
        // At least a share of the 60 ms, even on a busy machine; never more than the wall time.
        assert!(spent > 0.001 && spent < 1.0, "{spent}");
    }

    #[test]
    fn trace_from_keys_counts_distinct() {
        assert_eq!(trace(&[5, 1, 5, 2, 1, 9]).distinct, 4);
        assert_eq!(trace(&[]).distinct, 0);
    }

    #[test]
    fn run_lru_hand_counted_hits() {
        // 1 2 3 1 2 4 1 2 3 4, hand-counted:
        // size 2: no request finds its key among the two most recent distinct keys -> 0 hits.
        // size 3: 1 2 3 | 1 hit | 2 hit | 4 (evicts 3) | 1 hit | 2 hit | 3 (evicts 4) | 4 miss
        //         -> 4 hits.
        let traces = [trace(&[1, 2, 3, 1, 2, 4, 1, 2, 3, 4])];
        let sizes = [Size::Entries(2), Size::Entries(3)];
        let cells = grid(&traces, &["lru"], &sizes);
        let out = run(&traces, &cells, &RunOptions::default()).unwrap();
        let hits: Vec<u64> = out.iter().map(|o| o.hits).collect();
        assert_eq!(hits, [0, 4]);
        assert!(out.iter().all(|o| o.requests == 10));
    }

    #[test]
    fn run_outcomes_in_cell_order_across_traces() {
        let small = trace(&[1, 1, 1]);
        let big = trace(&(0..1000).map(|i| i % 7).collect::<Vec<_>>());
        let traces = [small, big];
        let cells = grid(&traces, &["lru", "fifo"], &[Size::Entries(10)]);
        let out = run(&traces, &cells, &RunOptions::default()).unwrap();
        let order: Vec<(usize, &str)> = out.iter().map(|o| (o.trace, o.policy)).collect();
        assert_eq!(order, [(0, "lru"), (0, "fifo"), (1, "lru"), (1, "fifo")]);
        assert_eq!(out[0].hits, 2);
        assert_eq!(out[3].hits, 1000 - 7);
    }

    #[test]
    fn run_rejected_capacity_fails_before_replaying() {
        let traces = [trace(&[1, 2, 3])];
        let cells = vec![Cell {
            trace: 0,
            policy: "arc",
            size: 0,
            percent: None,
        }];
        let err = run(&traces, &cells, &RunOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::Policy {
                    policy: "arc",
                    size: 0,
                    ..
                }
            ),
            "{err}"
        );
    }
}
