//! `pacer`: what `Scheduler::Thread` costs while entries keep coming due: a writer inserts at a
//! steady rate into a `sync::Cache` with a time to live, and the table gives the CPU time of the
//! `cortado-pacer` thread alone (from `/proc/self/task/*/schedstat`, so Linux only) and how late the
//! listener heard of expirations.
//!
//! ```text
//! cargo run --release -p cortado-bench --bin pacer [SECONDS]
//! ```
//!
//! Every key is written once, so each write brings a new deadline: a pacer that woke for every
//! deadline would wake at the write rate. Lateness is the time from an entry's deadline to its
//! listener call; a reader would never see the entry after its deadline either way.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cortado::notification::RemovalCause;
use cortado::sync::{Cache, Scheduler};

/// Writes per second.
const RATE: u64 = 3_600;

fn main() -> ExitCode {
    let seconds = match std::env::args().nth(1).map(|s| s.parse::<u64>()) {
        None => 3,
        Some(Ok(s)) if s > 0 => s,
        Some(_) => {
            eprintln!("usage: pacer [SECONDS]");
            return ExitCode::FAILURE;
        }
    };
    println!("| time to live | writes | pacer CPU, % of a core | listener late: median / max |");
    println!("| ---: | ---: | ---: | ---: |");
    for ttl in [Duration::from_millis(50), Duration::from_millis(500)] {
        let Some(row) = run(ttl, Duration::from_secs(seconds)) else {
            eprintln!("pacer: needs Linux's /proc/self/task/*/schedstat for a thread's CPU time");
            return ExitCode::FAILURE;
        };
        println!(
            "| {} ms | {} | {:.2} | {:.1} / {:.1} ms |",
            ttl.as_millis(),
            row.writes,
            row.cpu_percent,
            row.late_median.as_secs_f64() * 1e3,
            row.late_max.as_secs_f64() * 1e3,
        );
    }
    ExitCode::SUCCESS
}

struct Row {
    writes: u64,
    cpu_percent: f64,
    late_median: Duration,
    late_max: Duration,
}

fn run(ttl: Duration, span: Duration) -> Option<Row> {
    let lateness = Arc::new(Mutex::new(Vec::new()));
    let heard = lateness.clone();
    let cache: Cache<u64, Instant> = Cache::builder()
        .max_capacity(1_000_000)
        .time_to_live(ttl)
        .scheduler(Scheduler::Thread)
        .eviction_listener(move |_, written: &Instant, cause| {
            if cause == RemovalCause::Expired {
                let late = written.elapsed().saturating_sub(ttl);
                heard.lock().unwrap().push(late);
            }
        })
        .build()
        .expect("a valid cache");
    let started = Instant::now();
    // The new thread names itself once it runs.
    let cpu_before = (0..1_000).find_map(|_| {
        pacer_cpu_nanos().or_else(|| {
            std::thread::sleep(Duration::from_millis(1));
            None
        })
    })?;
    let mut writes = 0u64;
    while started.elapsed() < span {
        let due = started + Duration::from_nanos(writes * 1_000_000_000 / RATE);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        cache.insert(writes, Instant::now());
        writes += 1;
    }
    // Let the last entries come due and go.
    std::thread::sleep(ttl + Duration::from_millis(100));
    let cpu = pacer_cpu_nanos()?.saturating_sub(cpu_before);
    let elapsed = started.elapsed().as_secs_f64();
    // The next run must not find this pacer still ending.
    let alive = cache.scheduler_alive();
    drop(cache);
    while alive
        .as_ref()
        .is_some_and(|alive| alive.load(Ordering::SeqCst))
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut late = std::mem::take(&mut *lateness.lock().unwrap());
    late.sort_unstable();
    Some(Row {
        writes,
        cpu_percent: cpu as f64 / 1e9 / elapsed * 100.0,
        late_median: late.get(late.len() / 2).copied().unwrap_or_default(),
        late_max: late.last().copied().unwrap_or_default(),
    })
}

/// Nanoseconds the `cortado-pacer` thread has run on a CPU (`/proc/self/task/*/schedstat`).
fn pacer_cpu_nanos() -> Option<u64> {
    // A task may end while this reads (the previous run's pacer): skip what cannot be read.
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .map(|task| task.path())
        .filter(|path| {
            std::fs::read_to_string(path.join("comm"))
                .is_ok_and(|comm| comm.trim() == "cortado-pacer")
        })
        .find_map(|path| {
            let schedstat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            schedstat.split_whitespace().next()?.parse().ok()
        })
}
