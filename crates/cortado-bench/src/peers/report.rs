//! The `peers` binary's results: what was measured ([`Report`]), rendered as Markdown tables
//! with the goals checked, or as JSON.
//!
//! # Design
//!
//! - **Ratios in the same run.** The machine is shared, so absolute rates move between runs;
//!   every throughput table has a twin of ratios against `quick_cache` measured in the same run
//!   (the median of per-round ratios, each round running every cache once), and the goals are
//!   judged on ratios.
//! - **Failures are cells, not aborts.** A cache that cannot be built for a cell (no TTL) or a
//!   child that fails shows as `n/a` or `error`, and the rest of the report stands.
//! - **JSON from records**: [`Report::json`] maps each cell to a record of strings and
//!   numbers (`null` where a cell has none) and serde writes them, as `cortado-sim`'s reports
//!   do; the numbers are exact, the Markdown rounds.

use std::fmt::Write as _;

use serde::Serialize;

use super::memory::{Footprint, Scenario};
use super::throughput::{median, Measurement};
use super::Peer;

/// The throughput of one cache in one cell (workload, threads, read share).
#[derive(Clone, Debug)]
pub struct ThroughputCell {
    /// The cache.
    pub peer: Peer,
    /// Workload label (`A`, `B`).
    pub workload: &'static str,
    /// Distinct keys of the workload.
    pub keys: u64,
    /// Capacity of the cache.
    pub capacity: u64,
    /// Threads sharing the cache.
    pub threads: usize,
    /// Share of reads, in percent.
    pub read_percent: u32,
    /// The measurement, or why there is none.
    pub result: Result<Measurement, String>,
}

impl ThroughputCell {
    fn column(&self) -> String {
        format!("{} t{} r{}", self.workload, self.threads, self.read_percent)
    }

    fn median(&self, clock: Clock) -> Option<f64> {
        let measured = self.result.as_ref().ok()?;
        match clock {
            Clock::Wall => Some(measured.median_mops()),
            Clock::Unqueued => measured.median_mops_unqueued(),
        }
    }

    fn runs(&self, clock: Clock) -> &[f64] {
        match (&self.result, clock) {
            (Ok(m), Clock::Wall) => &m.mops,
            (Ok(m), Clock::Unqueued) => &m.mops_unqueued,
            (Err(_), _) => &[],
        }
    }
}

/// Which of the two throughput figures (see `throughput`'s module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    /// Operations over the wall-clock span of a pass.
    Wall,
    /// Operations over the span with each thread's run-queue wait taken off its end.
    Unqueued,
}

impl Clock {
    fn describe(self) -> &'static str {
        match self {
            Clock::Wall => "wall clock",
            Clock::Unqueued => "run-queue waits excluded",
        }
    }
}

/// One hit ratio of one cache (or `opt`) on one stream at one capacity.
#[derive(Clone, Debug)]
pub struct HitCell {
    /// The stream, as `cortado_sim` names it (`zipf:0.99`, ...).
    pub stream: String,
    /// The seed the stream was drawn with.
    pub stream_seed: u64,
    /// Capacity, in entries.
    pub capacity: u64,
    /// A cache's name, or `opt`.
    pub cache: String,
    /// Hits over requests, or why there is none.
    pub result: Result<f64, String>,
}

/// One cache's memory in one scenario.
#[derive(Clone, Debug)]
pub struct MemoryCell {
    /// The cache.
    pub peer: Peer,
    /// With or without a TTL.
    pub scenario: Scenario,
    /// The footprint, `None` when the crate has no TTL, or why the child failed.
    pub result: Result<Option<Footprint>, String>,
}

/// Everything one run measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Lines describing the run (command, sizes, machine load), printed first.
    pub context: Vec<String>,
    /// Throughput cells, in run order.
    pub throughput: Vec<ThroughputCell>,
    /// Hit-ratio cells, in run order.
    pub hit: Vec<HitCell>,
    /// Memory cells, in run order.
    pub memory: Vec<MemoryCell>,
}

/// The reference of the throughput ratios.
const REFERENCE: Peer = Peer::QuickCache;
/// The goal's thread count.
const GOAL_THREADS: usize = 2;
/// Heap goals, bytes per entry: without expiry, and with a TTL.
const HEAP_GOAL_NO_EXPIRY: f64 = 64.0;
const HEAP_GOAL_TTL: f64 = 80.0;
/// Cortado's throughput goal against moka.
const MOKA_FACTOR_GOAL: f64 = 5.0;

impl Report {
    /// The whole report as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for line in &self.context {
            let _ = writeln!(out, "{line}  ");
        }
        if !self.throughput.is_empty() {
            out.push_str(&self.throughput_markdown());
        }
        if !self.hit.is_empty() {
            out.push_str(&self.hit_markdown());
        }
        if !self.memory.is_empty() {
            out.push_str(&self.memory_markdown());
        }
        out.push_str(&self.goals_markdown());
        out
    }

    fn columns(&self) -> Vec<String> {
        let mut columns: Vec<String> = Vec::new();
        for cell in &self.throughput {
            let column = cell.column();
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        columns
    }

    fn throughput_cell(&self, peer: Peer, column: &str) -> Option<&ThroughputCell> {
        self.throughput
            .iter()
            .find(|c| c.peer == peer && c.column() == column)
    }

    fn peers_in(&self, peers: impl Iterator<Item = Peer>) -> Vec<Peer> {
        let present: Vec<Peer> = peers.collect();
        Peer::ALL
            .into_iter()
            .filter(|p| present.contains(p))
            .collect()
    }

    fn throughput_markdown(&self) -> String {
        let columns = self.columns();
        let peers = self.peers_in(self.throughput.iter().map(|c| c.peer));
        let mut out = String::new();
        let header = |out: &mut String, title: &str| {
            let _ = writeln!(out, "\n### {title}\n");
            let _ = writeln!(out, "| cache | {} |", columns.join(" | "));
            let _ = writeln!(out, "| --- |{}", " ---: |".repeat(columns.len()));
        };
        for clock in [Clock::Wall, Clock::Unqueued] {
            if !self.throughput.iter().any(|c| c.median(clock).is_some()) {
                continue;
            }
            header(
                &mut out,
                &format!(
                    "Throughput, Mops/s, {} (median of the runs; min-max in brackets)",
                    clock.describe()
                ),
            );
            for &peer in &peers {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|column| match self.throughput_cell(peer, column) {
                        Some(cell) => match cell.median(clock) {
                            Some(median) => {
                                let runs = cell.runs(clock);
                                let min = runs.iter().copied().fold(f64::INFINITY, f64::min);
                                let max = runs.iter().copied().fold(0.0, f64::max);
                                format!("{median:.2} [{min:.2}-{max:.2}]")
                            }
                            None => "error".to_owned(),
                        },
                        None => "-".to_owned(),
                    })
                    .collect();
                let _ = writeln!(out, "| {peer} | {} |", cells.join(" | "));
            }
            if peers.contains(&REFERENCE) {
                header(
                    &mut out,
                    &format!("Throughput ratio to quick_cache, {}", clock.describe()),
                );
                for &peer in &peers {
                    let cells: Vec<String> = columns
                        .iter()
                        .map(|column| match self.ratio(peer, REFERENCE, column, clock) {
                            Some(r) => format!("{r:.2}x"),
                            None => "-".to_owned(),
                        })
                        .collect();
                    let _ = writeln!(out, "| {peer} | {} |", cells.join(" | "));
                }
            }
        }
        header(&mut out, "Hit ratio of the gets during the throughput runs");
        for &peer in &peers {
            let cells: Vec<String> = columns
                .iter()
                .map(|column| match self.throughput_cell(peer, column) {
                    Some(ThroughputCell { result: Ok(m), .. }) => format!("{:.4}", m.hit_ratio),
                    _ => "-".to_owned(),
                })
                .collect();
            let _ = writeln!(out, "| {peer} | {} |", cells.join(" | "));
        }
        out
    }

    /// Throughput of `peer` over that of `reference` in `column`: the median of the ratios
    /// of passes run in the same round (see `throughput`'s rounds), or, when the passes do not
    /// pair up, the ratio of the medians.
    fn ratio(&self, peer: Peer, reference: Peer, column: &str, clock: Clock) -> Option<f64> {
        let mine = self.throughput_cell(peer, column)?;
        let theirs = self.throughput_cell(reference, column)?;
        let (a, b) = (mine.runs(clock), theirs.runs(clock));
        if !a.is_empty() && a.len() == b.len() && b.iter().all(|&x| x > 0.0) {
            let paired: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
            return Some(median(&paired));
        }
        let (mine, theirs) = (mine.median(clock)?, theirs.median(clock)?);
        (theirs > 0.0).then(|| mine / theirs)
    }

    fn streams(&self) -> Vec<&str> {
        let mut streams: Vec<&str> = Vec::new();
        for cell in &self.hit {
            if !streams.contains(&cell.stream.as_str()) {
                streams.push(&cell.stream);
            }
        }
        streams
    }

    /// The stream seeds of the hit-ratio cells, in run order.
    fn stream_seeds(&self) -> Vec<u64> {
        let mut seeds: Vec<u64> = Vec::new();
        for cell in &self.hit {
            if !seeds.contains(&cell.stream_seed) {
                seeds.push(cell.stream_seed);
            }
        }
        seeds
    }

    /// The hit ratio of `cache` on `stream` at `capacity` drawn with `seed`, if measured.
    fn hit_at(&self, stream: &str, seed: u64, capacity: u64, cache: &str) -> Option<f64> {
        self.hit
            .iter()
            .find(|c| {
                c.stream == stream
                    && c.stream_seed == seed
                    && c.capacity == capacity
                    && c.cache == cache
            })
            .and_then(|c| c.result.as_ref().ok().copied())
    }

    /// The mean over the stream seeds, if every seed has a measurement.
    fn hit_mean(&self, stream: &str, capacity: u64, cache: &str) -> Option<f64> {
        let seeds = self.stream_seeds();
        let mut sum = 0.0;
        for &seed in &seeds {
            sum += self.hit_at(stream, seed, capacity, cache)?;
        }
        (!seeds.is_empty()).then(|| sum / seeds.len() as f64)
    }

    fn hit_markdown(&self) -> String {
        let mut out = String::new();
        let seeds = self.stream_seeds().len();
        let drawn = if seeds > 1 {
            format!("mean of {seeds} draws of the stream; ")
        } else {
            String::new()
        };
        for stream in self.streams() {
            let cells: Vec<&HitCell> = self.hit.iter().filter(|c| c.stream == stream).collect();
            let mut capacities: Vec<u64> = cells.iter().map(|c| c.capacity).collect();
            capacities.sort_unstable();
            capacities.dedup();
            let mut caches: Vec<&str> = Vec::new();
            for cell in &cells {
                if !caches.contains(&cell.cache.as_str()) {
                    caches.push(&cell.cache);
                }
            }
            let _ = writeln!(
                out,
                "\n### Hit ratio, `{stream}` (strict replay; {drawn}best cache in bold)\n"
            );
            let heads: Vec<String> = capacities.iter().map(|c| format!("cap {c}")).collect();
            let _ = writeln!(out, "| cache | {} |", heads.join(" | "));
            let _ = writeln!(out, "| --- |{}", " ---: |".repeat(capacities.len()));
            let find = |cache: &str, capacity: u64| self.hit_mean(stream, capacity, cache);
            let best = |capacity: u64| {
                caches
                    .iter()
                    .filter(|&&c| c != "opt")
                    .filter_map(|&c| find(c, capacity))
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            for &cache in &caches {
                let row: Vec<String> = capacities
                    .iter()
                    .map(|&capacity| match find(cache, capacity) {
                        Some(h) if cache != "opt" && h == best(capacity) => {
                            format!("**{:.2}%**", h * 100.0)
                        }
                        Some(h) => format!("{:.2}%", h * 100.0),
                        None => "error".to_owned(),
                    })
                    .collect();
                let _ = writeln!(out, "| {cache} | {} |", row.join(" | "));
            }
        }
        out
    }

    fn memory_markdown(&self) -> String {
        let mut out = String::new();
        let capacity = self
            .memory
            .iter()
            .find_map(|c| c.result.as_ref().ok().copied().flatten())
            .map_or(0, |f| f.capacity);
        let _ = writeln!(
            out,
            "\n### Heap bytes per entry (u64 -> u64, capacity {capacity}; bytes / capacity; \
             entries held in brackets)\n"
        );
        let mut heads = Vec::new();
        for scenario in Scenario::ALL {
            let name = scenario.name();
            heads.push(format!("{name} empty (MiB)"));
            heads.push(format!("{name} full"));
            heads.push(format!("{name} evicting"));
        }
        let _ = writeln!(out, "| cache | {} |", heads.join(" | "));
        let _ = writeln!(out, "| --- |{}", " ---: |".repeat(heads.len()));
        for peer in self.peers_in(self.memory.iter().map(|c| c.peer)) {
            let mut row = Vec::new();
            for scenario in Scenario::ALL {
                let cell = self
                    .memory
                    .iter()
                    .find(|c| c.peer == peer && c.scenario == scenario);
                match cell.map(|c| &c.result) {
                    Some(Ok(Some(f))) => {
                        row.push(format!("{:.2}", f.empty as f64 / (1 << 20) as f64));
                        row.push(format!("{:.1} [{}]", f.full_per_entry(), f.full_entries));
                        row.push(format!(
                            "{:.1} [{}]",
                            f.evicting_per_entry(),
                            f.evicting_entries
                        ));
                    }
                    Some(Ok(None)) => row.extend(["n/a"; 3].map(String::from)),
                    Some(Err(_)) => row.extend(["error"; 3].map(String::from)),
                    None => row.extend(["-"; 3].map(String::from)),
                }
            }
            let _ = writeln!(out, "| {peer} | {} |", row.join(" | "));
        }
        for cell in &self.memory {
            if let Err(error) = &cell.result {
                let _ = writeln!(out, "\n{} {}: {error}", cell.peer, cell.scenario.name());
            }
        }
        out
    }

    /// Each goal of the spec with the measured value and whether it is met (`None`: not
    /// measured in this run).
    pub fn goals(&self) -> Vec<(String, String, Option<bool>)> {
        let mut goals = Vec::new();
        let columns: Vec<String> = self
            .columns()
            .into_iter()
            .filter(|c| c.contains(&format!(" t{GOAL_THREADS} ")))
            .collect();
        for column in &columns {
            for clock in [Clock::Wall, Clock::Unqueued] {
                for (reference, factor) in [(REFERENCE, 1.0), (Peer::Moka, MOKA_FACTOR_GOAL)] {
                    let Some(ratio) = self.ratio(Peer::Cortado, reference, column, clock) else {
                        continue;
                    };
                    goals.push((
                        format!(
                            "throughput {column} >= {factor:.1}x {reference} ({})",
                            clock.describe()
                        ),
                        format!("{ratio:.2}x"),
                        Some(ratio >= factor),
                    ));
                }
            }
        }
        for scenario in Scenario::ALL {
            let limit = match scenario {
                Scenario::NoExpiry => HEAP_GOAL_NO_EXPIRY,
                Scenario::Ttl => HEAP_GOAL_TTL,
            };
            let cell = self
                .memory
                .iter()
                .find(|c| c.peer == Peer::Cortado && c.scenario == scenario);
            if let Some(Ok(Some(f))) = cell.map(|c| &c.result) {
                let worst = f.full_per_entry().max(f.evicting_per_entry());
                goals.push((
                    format!(
                        "heap {} <= {limit} B/entry (full and evicting)",
                        scenario.name()
                    ),
                    format!(
                        "{:.1} full, {:.1} evicting",
                        f.full_per_entry(),
                        f.evicting_per_entry()
                    ),
                    Some(worst <= limit),
                ));
            }
        }
        for stream in self.streams() {
            if !(stream.starts_with("drift") || stream.starts_with("scan")) {
                continue;
            }
            let mut capacities: Vec<u64> = self
                .hit
                .iter()
                .filter(|c| c.stream == stream)
                .map(|c| c.capacity)
                .collect();
            capacities.sort_unstable();
            capacities.dedup();
            for capacity in capacities {
                if let Some(goal) = self.hit_goal(stream, capacity) {
                    goals.push(goal);
                }
            }
        }
        goals
    }

    /// Whether Cortado's hit ratio is above every peer's on `stream` at `capacity`: on the
    /// means, with the margin over the best other cache per draw of the stream; met only when
    /// it is ahead on every draw, since one draw's margin can be that draw's luck.
    fn hit_goal(&self, stream: &str, capacity: u64) -> Option<(String, String, Option<bool>)> {
        let best_peer = |hit: &dyn Fn(&str) -> Option<f64>| {
            Peer::ALL
                .into_iter()
                .filter(|&p| p != Peer::Cortado)
                .filter_map(|p| hit(p.name()).map(|h| (p, h)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        };
        let mine = self.hit_mean(stream, capacity, Peer::Cortado.name())?;
        let (peer, theirs) = best_peer(&|name| self.hit_mean(stream, capacity, name))?;
        let margins: Vec<f64> = self
            .stream_seeds()
            .into_iter()
            .filter_map(|seed| {
                let mine = self.hit_at(stream, seed, capacity, Peer::Cortado.name())?;
                let (_, theirs) = best_peer(&|name| self.hit_at(stream, seed, capacity, name))?;
                Some(mine - theirs)
            })
            .collect();
        let ahead = margins.iter().filter(|&&m| m > 0.0).count();
        let mut measured = format!(
            "{:.2}% vs {peer} {:.2}% ({:+.2} points)",
            mine * 100.0,
            theirs * 100.0,
            (mine - theirs) * 100.0
        );
        if margins.len() > 1 {
            let low = margins.iter().copied().fold(f64::INFINITY, f64::min);
            let high = margins.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let _ = write!(
                measured,
                ", means of {n} draws; per draw {:+.2} to {:+.2} points, ahead on {ahead} of {n}",
                low * 100.0,
                high * 100.0,
                n = margins.len()
            );
        }
        Some((
            format!("hit ratio {stream} cap {capacity} above every peer"),
            measured,
            Some(!margins.is_empty() && ahead == margins.len()),
        ))
    }

    fn goals_markdown(&self) -> String {
        let goals = self.goals();
        if goals.is_empty() {
            return String::new();
        }
        let mut out = String::from("\n### Goals (cortado, ratios from this run)\n\n");
        out.push_str("| goal | measured | met |\n| --- | --- | --- |\n");
        for (goal, measured, met) in goals {
            let met = match met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "-",
            };
            let _ = writeln!(out, "| {goal} | {measured} | {met} |");
        }
        out
    }

    /// The whole report as one JSON object: `context` (the lines), then one record per cell
    /// in `throughput`, `hit_ratio` and `memory`.
    pub fn json(&self) -> String {
        let report = JsonReport {
            context: &self.context,
            throughput: self.throughput.iter().map(ThroughputRecord::from).collect(),
            hit_ratio: self.hit.iter().map(HitRecord::from).collect(),
            memory: self.memory.iter().map(MemoryRecord::from).collect(),
        };
        let mut out = serde_json::to_string_pretty(&report).expect("a report serializes");
        out.push('\n');
        out
    }
}

/// What [`Report::json`] writes.
#[derive(Serialize)]
struct JsonReport<'a> {
    context: &'a [String],
    throughput: Vec<ThroughputRecord<'a>>,
    hit_ratio: Vec<HitRecord<'a>>,
    memory: Vec<MemoryRecord<'a>>,
}

/// A [`ThroughputCell`] in the JSON: the measurement's fields are `null` (the runs empty) and
/// `error` says why when there is none.
#[derive(Serialize)]
struct ThroughputRecord<'a> {
    cache: &'static str,
    workload: &'static str,
    keys: u64,
    capacity: u64,
    threads: usize,
    read_percent: u32,
    median_mops: Option<f64>,
    mops: &'a [f64],
    median_mops_unqueued: Option<f64>,
    mops_unqueued: &'a [f64],
    hit_ratio: Option<f64>,
    error: Option<&'a str>,
}

impl<'a> From<&'a ThroughputCell> for ThroughputRecord<'a> {
    fn from(cell: &'a ThroughputCell) -> Self {
        Self {
            cache: cell.peer.name(),
            workload: cell.workload,
            keys: cell.keys,
            capacity: cell.capacity,
            threads: cell.threads,
            read_percent: cell.read_percent,
            median_mops: cell.median(Clock::Wall),
            mops: cell.runs(Clock::Wall),
            median_mops_unqueued: cell.median(Clock::Unqueued),
            mops_unqueued: cell.runs(Clock::Unqueued),
            hit_ratio: cell.result.as_ref().ok().map(|m| m.hit_ratio),
            error: cell.result.as_ref().err().map(String::as_str),
        }
    }
}

/// A [`HitCell`] in the JSON (`hit_ratio` is `null` when there is none).
#[derive(Serialize)]
struct HitRecord<'a> {
    cache: &'a str,
    stream: &'a str,
    stream_seed: u64,
    capacity: u64,
    hit_ratio: Option<f64>,
}

impl<'a> From<&'a HitCell> for HitRecord<'a> {
    fn from(cell: &'a HitCell) -> Self {
        Self {
            cache: &cell.cache,
            stream: &cell.stream,
            stream_seed: cell.stream_seed,
            capacity: cell.capacity,
            hit_ratio: cell.result.as_ref().ok().copied(),
        }
    }
}

/// A [`MemoryCell`] in the JSON: the cache and scenario, then the footprint's fields, or
/// `"unsupported": true`, or the `error`.
#[derive(Serialize)]
struct MemoryRecord<'a> {
    cache: &'static str,
    scenario: &'static str,
    #[serde(flatten)]
    result: MemoryResult<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum MemoryResult<'a> {
    Footprint {
        capacity: u64,
        empty_bytes: i64,
        full_bytes: i64,
        full_entries: u64,
        evicting_bytes: i64,
        evicting_entries: u64,
        full_per_entry: f64,
        evicting_per_entry: f64,
    },
    Unsupported {
        unsupported: bool,
    },
    Error {
        error: &'a str,
    },
}

impl<'a> From<&'a MemoryCell> for MemoryRecord<'a> {
    fn from(cell: &'a MemoryCell) -> Self {
        let result = match &cell.result {
            Ok(Some(f)) => MemoryResult::Footprint {
                capacity: f.capacity,
                empty_bytes: f.empty,
                full_bytes: f.full,
                full_entries: f.full_entries,
                evicting_bytes: f.evicting,
                evicting_entries: f.evicting_entries,
                full_per_entry: f.full_per_entry(),
                evicting_per_entry: f.evicting_per_entry(),
            },
            Ok(None) => MemoryResult::Unsupported { unsupported: true },
            Err(e) => MemoryResult::Error { error: e },
        };
        Self {
            cache: cell.peer.name(),
            scenario: cell.scenario.name(),
            result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(peer: Peer, mops: f64) -> ThroughputCell {
        ThroughputCell {
            peer,
            workload: "A",
            keys: 10,
            capacity: 5,
            threads: 2,
            read_percent: 100,
            result: Ok(Measurement {
                mops: vec![mops],
                mops_unqueued: vec![mops * 2.0],
                hit_ratio: 0.5,
            }),
        }
    }

    #[test]
    fn goals_throughput_ratio_compares_medians() {
        let report = Report {
            throughput: vec![
                cell(Peer::Cortado, 30.0),
                cell(Peer::QuickCache, 20.0),
                cell(Peer::Moka, 10.0),
            ],
            ..Report::default()
        };
        let goals = report.goals();
        // Wall clock against quick_cache, then moka; then the same without run-queue waits
        // (doubled for every cache in `cell`, so the ratios are unchanged).
        let ratios: Vec<(&str, Option<bool>)> = goals.iter().map(|g| (g.1.as_str(), g.2)).collect();
        assert_eq!(
            ratios,
            [
                ("1.50x", Some(true)),
                ("3.00x", Some(false)),
                ("1.50x", Some(true)),
                ("3.00x", Some(false)),
            ]
        );
    }

    #[test]
    fn ratio_pairs_passes_of_the_same_round() {
        let with = |peer, mops: Vec<f64>| ThroughputCell {
            result: Ok(Measurement {
                mops_unqueued: mops.clone(),
                mops,
                hit_ratio: 0.5,
            }),
            ..cell(peer, 0.0)
        };
        let report = Report {
            throughput: vec![
                with(Peer::Cortado, vec![10.0, 40.0, 30.0]),
                with(Peer::QuickCache, vec![5.0, 40.0, 10.0]),
            ],
            ..Report::default()
        };
        // Per-round ratios 2, 1, 3: their median is 2; the ratio of medians would be 3.
        let ratio = report.ratio(Peer::Cortado, Peer::QuickCache, "A t2 r100", Clock::Wall);
        assert_eq!(ratio, Some(2.0));
    }

    #[test]
    fn goals_hit_ratio_names_the_best_peer() {
        let hit = |cache: &str, h: f64| HitCell {
            stream: "drift+zipf:0.99".into(),
            stream_seed: 1,
            capacity: 100,
            cache: cache.into(),
            result: Ok(h),
        };
        let report = Report {
            hit: vec![
                hit("cortado", 0.40),
                hit("moka", 0.45),
                hit("lru_mutex", 0.30),
                hit("opt", 0.60),
            ],
            ..Report::default()
        };
        let goals = report.goals();
        assert_eq!(goals.len(), 1);
        assert!(goals[0].1.contains("moka 45.00%"), "{}", goals[0].1);
        assert_eq!(goals[0].2, Some(false));
    }

    #[test]
    fn goals_hit_ratio_several_draws_met_only_if_ahead_on_every_draw() {
        let hit = |seed: u64, cache: &str, h: f64| HitCell {
            stream: "scan+zipf:0.99".into(),
            stream_seed: seed,
            capacity: 100,
            cache: cache.into(),
            result: Ok(h),
        };
        // Ahead on the means (0.55 against 0.50) but behind on the second draw.
        let report = Report {
            hit: vec![
                hit(1, "cortado", 0.70),
                hit(1, "quick_cache", 0.50),
                hit(2, "cortado", 0.40),
                hit(2, "quick_cache", 0.50),
            ],
            ..Report::default()
        };
        let goals = report.goals();
        assert_eq!(goals.len(), 1);
        assert!(
            goals[0].1.starts_with("55.00% vs quick_cache 50.00%"),
            "{}",
            goals[0].1
        );
        assert!(goals[0]
            .1
            .contains("per draw -10.00 to +20.00 points, ahead on 1 of 2"));
        assert_eq!(goals[0].2, Some(false));
        assert!(report.hit_markdown().contains("| cortado | **55.00%** |"));
    }

    #[test]
    fn json_has_a_record_per_cell_with_nulls_and_errors() {
        let error = "child \"moka\" failed:\n\\ exit 1";
        let footprint = Footprint {
            capacity: 4,
            empty: 100,
            full: 300,
            full_entries: 4,
            evicting: 340,
            evicting_entries: 4,
        };
        let memory = |scenario, result| MemoryCell {
            peer: Peer::Cortado,
            scenario,
            result,
        };
        let report = Report {
            context: vec!["run \"quick\"".into()],
            throughput: vec![
                cell(Peer::Cortado, 2.5),
                ThroughputCell {
                    result: Err(error.into()),
                    ..cell(Peer::Moka, 0.0)
                },
            ],
            hit: vec![
                HitCell {
                    stream: "zipf:0.99".into(),
                    stream_seed: 7,
                    capacity: 100,
                    cache: "opt".into(),
                    result: Ok(0.625),
                },
                HitCell {
                    stream: "zipf:0.99".into(),
                    stream_seed: 7,
                    capacity: 100,
                    cache: "moka".into(),
                    result: Err(error.into()),
                },
            ],
            memory: vec![
                memory(Scenario::NoExpiry, Ok(Some(footprint))),
                memory(Scenario::Ttl, Ok(None)),
                memory(Scenario::Ttl, Err(error.into())),
            ],
        };
        let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(json["context"], serde_json::json!(["run \"quick\""]));
        let throughput = json["throughput"].as_array().unwrap();
        assert_eq!(throughput.len(), 2);
        assert_eq!(throughput[0]["cache"], "cortado");
        assert_eq!(throughput[0]["workload"], "A");
        assert_eq!(throughput[0]["threads"], 2);
        assert_eq!(throughput[0]["read_percent"], 100);
        assert_eq!(throughput[0]["median_mops"], 2.5);
        assert_eq!(throughput[0]["mops"], serde_json::json!([2.5]));
        assert_eq!(throughput[0]["error"], serde_json::Value::Null);
        assert_eq!(throughput[1]["cache"], "moka");
        assert_eq!(throughput[1]["median_mops"], serde_json::Value::Null);
        assert_eq!(throughput[1]["mops"], serde_json::json!([]));
        assert_eq!(throughput[1]["hit_ratio"], serde_json::Value::Null);
        assert_eq!(throughput[1]["error"], error);
        let hit = json["hit_ratio"].as_array().unwrap();
        assert_eq!(hit[0]["cache"], "opt");
        assert_eq!(hit[0]["stream_seed"], 7);
        assert_eq!(hit[0]["hit_ratio"], 0.625);
        assert_eq!(hit[1]["hit_ratio"], serde_json::Value::Null);
        let memory = json["memory"].as_array().unwrap();
        assert_eq!(memory[0]["scenario"], "no-expiry");
        assert_eq!(memory[0]["full_bytes"], 300);
        assert_eq!(memory[0]["full_per_entry"], 75.0);
        assert_eq!(memory[0]["evicting_per_entry"], 85.0);
        assert_eq!(memory[1]["unsupported"], true);
        assert_eq!(memory[2]["error"], error);
        assert_eq!(memory[2].as_object().unwrap().len(), 3, "{}", memory[2]);
    }
}
