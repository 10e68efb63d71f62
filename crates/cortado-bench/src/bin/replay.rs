//! `replay`: one thread's stream of a `peers` throughput workload, replayed twice (fill, then
//! the measured pass) through one cache, single-threaded and cache-aside (a miss inserts).
//! Made to run under an instruction counter, where `peers`' timed rounds would take too long:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release -p cortado-bench --bin replay
//! valgrind --tool=callgrind --callgrind-out-file=cortado-A.out target/release/replay cortado A
//! callgrind_annotate --inclusive=yes cortado-A.out | grep 'replay::run '
//! ```
//!
//! `replay::run` is the cache's share: building it and the two passes (generating the stream
//! comes before it); `replay::measure` is the second pass alone, the steady state that `peers`
//! times (`--collect-atstart=no --toggle-collect='replay::measure*'`). The bench profile
//! inlines the caches into the passes, so per-function figures need `--tree=calling` on the
//! caches' own symbols, when they survive.
//!
//! Arguments: the cache (`cortado`, `quick_cache`, `moka`, `mini_moka`, `lru_mutex`; or
//! `cortado_ttl`, Cortado with a time to live that is never reached; `cortado_refresh`, Cortado
//! with a refresh after write that is never due; or
//! `cortado_weighted` and `cortado_heavy`, Cortado with weights of 1 to 16 and a capacity of 8.5
//! times the workload's, the second with one value in 512 weighing a quarter of it), the
//! workload (`A`: 1,000,000 keys into 100,000; `B`: 100,000 into 100,000; as in `peers`), and
//! the operations per pass (default 600,000), and the share of reads in percent (default 100;
//! the rest are unconditional inserts, as in `peers`' r75 cells). It prints the hit ratio of
//! each pass's reads and the measured pass's rate, which under an instruction counter means
//! nothing.
//!
//! Instruction counts do not drift with the machine's load the way times do, and the project's
//! virtual machines have no hardware counters for `perf stat`; they show where work can be
//! saved, not how fast the cache is (memory stalls are invisible to them).

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use cortado_bench::peers::cortado_sync::{
    CortadoSync, CortadoSyncHeavy, CortadoSyncRefresh, CortadoSyncTtl, CortadoSyncWeighted,
};
use cortado_bench::peers::lru_mutex::LruMutex;
use cortado_bench::peers::mini_moka_sync::MiniMokaSync;
use cortado_bench::peers::moka_sync::MokaSync;
use cortado_bench::peers::quick_cache_sync::QuickCacheSync;
use cortado_bench::peers::throughput::{self, ThreadStream, Workload};
use cortado_bench::peers::{CacheSpec, ConcurrentCache, SEED};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: replay cortado|cortado_weighted|cortado_heavy|cortado_ttl|cortado_refresh|quick_cache|moka|mini_moka|lru_mutex \
         A|B [OPS [READ_PERCENT]]";
    let (Some(cache), Some(workload)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::FAILURE;
    };
    let workload = match workload.as_str() {
        "A" => Workload {
            name: "A",
            keys: 1_000_000,
            capacity: 100_000,
        },
        "B" => Workload {
            name: "B",
            keys: 100_000,
            capacity: 100_000,
        },
        other => {
            eprintln!("unknown workload {other:?}; {usage}");
            return ExitCode::FAILURE;
        }
    };
    let ops = match args.get(2).map(|s| s.parse::<usize>()) {
        None => 600_000,
        Some(Ok(ops)) if ops > 0 => ops,
        Some(_) => {
            eprintln!("OPS must be a positive integer; {usage}");
            return ExitCode::FAILURE;
        }
    };
    let read_percent = match args.get(3).map(|s| s.parse::<u32>()) {
        None => 100,
        Some(Ok(percent)) if percent <= 100 => percent,
        Some(_) => {
            eprintln!("READ_PERCENT must be an integer from 0 to 100; {usage}");
            return ExitCode::FAILURE;
        }
    };
    let stream = throughput::streams(workload, 1, ops, read_percent, SEED).remove(0);
    let spec = CacheSpec::new(workload.capacity);
    let result = match cache.as_str() {
        "cortado" => run::<CortadoSync>(&spec, &stream),
        "cortado_weighted" => run::<CortadoSyncWeighted>(&spec, &stream),
        "cortado_heavy" => run::<CortadoSyncHeavy>(&spec, &stream),
        "cortado_refresh" => run::<CortadoSyncRefresh>(&spec, &stream),
        "cortado_ttl" => run::<CortadoSyncTtl>(&spec, &stream),
        "quick_cache" => run::<QuickCacheSync>(&spec, &stream),
        "moka" => run::<MokaSync>(&spec, &stream),
        "mini_moka" => run::<MiniMokaSync>(&spec, &stream),
        "lru_mutex" => run::<LruMutex>(&spec, &stream),
        other => Err(format!("unknown cache {other:?}; {usage}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run<C: ConcurrentCache<u64, u64>>(
    spec: &CacheSpec,
    stream: &ThreadStream,
) -> Result<(), String> {
    let cache = C::build(spec).map_err(|failure| format!("{}: {failure:?}", C::NAME))?;
    let fill = fill(&cache, stream);
    let started = Instant::now();
    let measured = measure(&cache, stream);
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}: hit ratio {fill:.4} filling, {measured:.4} measured; {:.2} Mops/s",
        C::NAME,
        stream.len() as f64 / seconds / 1e6
    );
    Ok(())
}

/// The first pass, which fills the cache. Kept out of line, as is [`measure`], so that an
/// instruction counter can count the passes apart.
#[inline(never)]
fn fill<C: ConcurrentCache<u64, u64>>(cache: &C, stream: &ThreadStream) -> f64 {
    pass(cache, stream)
}

/// The second pass, over a full cache: the steady state the `peers` timings measure (they fill
/// the cache from keys of their own, then run an untimed pass of the stream before the timed
/// one; here the first pass of the stream does both). Counted alone by `callgrind
/// --toggle-collect='replay::measure*'`.
#[inline(never)]
fn measure<C: ConcurrentCache<u64, u64>>(cache: &C, stream: &ThreadStream) -> f64 {
    // `black_box` keeps the body apart from `fill`'s, which the compiler would merge with it.
    pass(cache, black_box(stream))
}

/// One pass: gets, inserting on a miss, and the stream's unconditional inserts; the hit ratio
/// of the gets.
fn pass<C: ConcurrentCache<u64, u64>>(cache: &C, stream: &ThreadStream) -> f64 {
    let (mut hits, mut reads) = (0u64, 0u64);
    for (i, &key) in stream.keys().iter().enumerate() {
        if stream.is_write(i) {
            cache.insert(key, key);
            continue;
        }
        reads += 1;
        match black_box(cache.get(&key)) {
            Some(_) => hits += 1,
            None => cache.insert(key, key),
        }
    }
    hits as f64 / reads.max(1) as f64
}
