//! `peers`: `cortado::sync::Cache` beside `quick_cache` (with its default shard count and with Cortado's), `moka`, `mini-moka` and `lru` behind a
//! `Mutex`, in one run: throughput, hit ratio and heap bytes per entry, printed as Markdown
//! tables (see `cortado_bench::peers` and the crate's README).
//!
//! ```text
//! cargo run --release -p cortado-bench --bin peers                 # everything (~5 min)
//! cargo run --release -p cortado-bench --bin peers -- --quick      # smoke run (~20 s)
//! cargo run --release -p cortado-bench --bin peers -- --only hit --json hit.json
//! ```
//!
//! # Design
//!
//! Sizes (full / `--quick`): throughput workload A is 1,000,000 keys into capacity 100,000
//! (100,000 / 10,000), B is 100,000 keys into 100,000 (10,000 / 10,000), 1,000,000 (100,000)
//! operations per thread per pass; hit ratios replay 1,000,000 (100,000) requests over 100,000
//! (10,000) keys at 1%, 10% and 50% of the keys; memory fills 1,000,000 (100,000) entries. The
//! counting allocator is this binary's global allocator, switched on only in memory children.

use std::process::ExitCode;
use std::time::Instant;

use cortado_bench::counting_alloc::CountingAlloc;
use cortado_bench::peers::args::{self, Command, RunArgs, Section};
use cortado_bench::peers::hit_ratio::{self, Replay};
use cortado_bench::peers::memory::{self, Scenario};
use cortado_bench::peers::report::{HitCell, MemoryCell, Report, ThroughputCell};
use cortado_bench::peers::throughput::{self, Measurement, Throughput, Workload};
use cortado_bench::peers::SEED;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// The read shares of the throughput cells, in percent.
const READ_PERCENTS: [u32; 2] = [100, 75];

/// Every size the run depends on.
struct Sizes {
    workloads: [Workload; 2],
    ops_per_thread: usize,
    hit_keys: u64,
    hit_requests: u64,
    memory_entries: u64,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        let scale = if quick { 10 } else { 1 };
        Sizes {
            workloads: [
                Workload {
                    name: "A",
                    keys: 1_000_000 / scale,
                    capacity: 100_000 / scale,
                },
                Workload {
                    name: "B",
                    keys: 100_000 / scale,
                    capacity: 100_000 / scale,
                },
            ],
            ops_per_thread: if quick { 100_000 } else { 1_000_000 },
            hit_keys: 100_000 / scale,
            hit_requests: 1_000_000 / scale,
            memory_entries: 1_000_000 / scale,
        }
    }

    fn hit_capacities(&self) -> [u64; 3] {
        [self.hit_keys / 100, self.hit_keys / 10, self.hit_keys / 2]
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(Command::Help) => {
            println!("{}", args::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::MemoryChild {
            peer,
            scenario,
            entries,
        }) => match memory::child_main(peer, scenario, entries) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("peers: {error}");
                ExitCode::FAILURE
            }
        },
        Ok(Command::Run(run)) => run_benchmark(&run),
        Err(error) => {
            eprintln!("peers: {error}\n{}", args::USAGE);
            ExitCode::from(2)
        }
    }
}

fn run_benchmark(run: &RunArgs) -> ExitCode {
    let mut sizes = Sizes::new(run.quick);
    if let Some(ops) = run.ops_per_thread {
        sizes.ops_per_thread = ops;
    }
    let mut report = Report::default();
    report.context.push(format!(
        "`peers {}`: {} CPUs, load average at start {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    ));
    let started = Instant::now();
    for &section in &run.sections {
        let section_start = Instant::now();
        match section {
            Section::Throughput => throughput_section(run, &sizes, &mut report),
            Section::HitRatio => hit_section(run, &sizes, &mut report),
            Section::Memory => memory_section(run, &sizes, &mut report),
        }
        report.context.push(format!(
            "{}: {:.0} s, load average after {}",
            section.name(),
            section_start.elapsed().as_secs_f64(),
            load_average()
        ));
    }
    report
        .context
        .push(format!("total {:.0} s", started.elapsed().as_secs_f64()));
    println!("{}", report.markdown());
    if let Some(path) = &run.json {
        if let Err(error) = std::fs::write(path, report.json()) {
            eprintln!("peers: could not write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn throughput_section(run: &RunArgs, sizes: &Sizes, report: &mut Report) {
    report.context.push(format!(
        "throughput: Zipf({}), {} ops per thread per pass; {} rounds, each cache once per round \
         (fresh, warm-filled, 1 untimed + 1 timed pass); rates: median pass, ratios: median \
         of the rounds' ratios",
        throughput::ZIPF_S,
        sizes.ops_per_thread,
        run.runs
    ));
    for workload in sizes.workloads {
        for &threads in &run.threads {
            for read_percent in READ_PERCENTS {
                let streams = throughput::streams(
                    workload,
                    threads,
                    sizes.ops_per_thread,
                    read_percent,
                    SEED,
                );
                // One timed pass per cache per round, the caches in turn and each round
                // starting with the next one, so that a slow phase of the machine is shared;
                // odd rounds go through the list backwards, so that a cache does not always
                // follow the same one (whose drop and allocations it might inherit).
                let peers = &run.peers;
                let mut results: Vec<Option<Result<Measurement, String>>> = vec![None; peers.len()];
                for round in 0..run.runs {
                    for turn in 0..peers.len() {
                        let step = if round % 2 == 0 {
                            turn
                        } else {
                            peers.len() - 1 - turn
                        };
                        let k = (round + step) % peers.len();
                        if matches!(results[k], Some(Err(_))) {
                            continue;
                        }
                        let peer = peers[k];
                        eprintln!(
                            "throughput {} t{threads} r{read_percent} round {}: {peer}",
                            workload.name,
                            round + 1
                        );
                        let measured = peer
                            .visit(Throughput {
                                workload,
                                streams: &streams,
                                runs: 1,
                                salt: throughput::salt(SEED),
                            })
                            .map_err(|e| e.to_string());
                        match (&mut results[k], measured) {
                            (Some(Ok(so_far)), Ok(more)) => so_far.absorb(more),
                            (slot, measured) => *slot = Some(measured),
                        }
                    }
                }
                for (&peer, result) in peers.iter().zip(results) {
                    report.throughput.push(ThroughputCell {
                        peer,
                        workload: workload.name,
                        keys: workload.keys,
                        capacity: workload.capacity,
                        threads,
                        read_percent,
                        result: result.unwrap_or_else(|| Err("not run".to_owned())),
                    });
                }
            }
        }
    }
}

fn hit_section(run: &RunArgs, sizes: &Sizes, report: &mut Report) {
    report.context.push(format!(
        "hit ratio: {} requests over {} keys, get then insert + maintenance on a miss, seed {:#x}, \
         stream seeds {}",
        sizes.hit_requests,
        sizes.hit_keys,
        run.seed,
        run.stream_seeds
            .iter()
            .map(|s| format!("{s:#x}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for &stream_seed in &run.stream_seeds {
        hit_replays(run, sizes, stream_seed, report);
    }
}

/// Every stream drawn with `stream_seed`, replayed into every cache at every capacity.
fn hit_replays(run: &RunArgs, sizes: &Sizes, stream_seed: u64, report: &mut Report) {
    for dist in hit_ratio::STREAMS {
        let keys = hit_ratio::stream(dist, sizes.hit_keys, sizes.hit_requests, stream_seed);
        for capacity in sizes.hit_capacities() {
            eprintln!("hit ratio {dist} cap {capacity} stream seed {stream_seed:#x}");
            for &peer in &run.peers {
                let result = peer
                    .visit(Replay {
                        keys: &keys,
                        capacity,
                        seed: run.seed,
                    })
                    .map_err(|e| e.to_string());
                report.hit.push(HitCell {
                    stream: dist.to_string(),
                    stream_seed,
                    capacity,
                    cache: peer.name().to_owned(),
                    result,
                });
            }
            report.hit.push(HitCell {
                stream: dist.to_string(),
                stream_seed,
                capacity,
                cache: "opt".to_owned(),
                result: Ok(hit_ratio::optimal(&keys, capacity)),
            });
        }
    }
}

fn memory_section(run: &RunArgs, sizes: &Sizes, report: &mut Report) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("peers: cannot find this binary to re-run it: {error}");
            return;
        }
    };
    for &peer in &run.peers {
        for scenario in Scenario::ALL {
            eprintln!("memory {peer} {}", scenario.name());
            let result = memory::measure_in_child(&exe, peer, scenario, sizes.memory_entries)
                .map_err(|e| e.to_string());
            report.memory.push(MemoryCell {
                peer,
                scenario,
                result,
            });
        }
    }
}

/// The 1, 5 and 15 minute load averages, or `?` where `/proc/loadavg` is missing.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "?".to_owned())
}
