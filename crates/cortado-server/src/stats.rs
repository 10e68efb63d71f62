//! The server's counters (`INFO stats`, `commandstats`, `errorstats`), written by every
//! connection at once.
//!
//! # Design
//!
//! A counter bumped by every command on one shared atomic would bounce that cache line between
//! the cores on every command. So each counter has one cell per stripe, a thread adds to the
//! stripe it was assigned when it first counted, stripes are a cache line apart, and a reader
//! (`INFO`) sums the stripes. `CONFIG RESETSTAT` records the sums as a baseline that reads
//! subtract, instead of writing into the stripes that other threads own.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counters of the server as a whole, each an index into [`Stats::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    /// Commands run (`total_commands_processed`).
    Commands,
    /// Connections accepted (`total_connections_received`).
    Connections,
    /// Connections refused at `maxclients` (`rejected_connections`).
    RejectedConnections,
    /// Bytes read from clients (`total_net_input_bytes`).
    NetInput,
    /// Bytes written to clients (`total_net_output_bytes`).
    NetOutput,
    /// Error replies sent (`total_error_replies`).
    ErrorReplies,
    /// Keys evicted (`evicted_keys`).
    EvictedKeys,
    /// Reads from client sockets that returned data (`total_reads_processed`).
    ReadsProcessed,
    /// Writes to client sockets (`total_writes_processed`).
    WritesProcessed,
}

const SERVER_COUNTERS: usize = 9;

/// Per command: calls, microseconds, calls refused before running, calls that failed.
pub const PER_COMMAND: usize = 4;

/// One command's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandFigures {
    /// Calls that ran.
    pub calls: u64,
    /// Microseconds spent in them.
    pub usec: u64,
    /// Calls refused before running (arity, authentication, ...).
    pub rejected: u64,
    /// Calls that ran and replied with an error.
    pub failed: u64,
}

/// Counters in stripes. See the [module docs](self).
pub struct Striped {
    cells: Box<[AtomicU64]>,
    /// Cells per stripe, a multiple of a cache line's eight.
    width: usize,
    stripes: usize,
    baseline: Mutex<Vec<u64>>,
}

/// Cache line size in counters.
const LINE: usize = 8;

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

impl Striped {
    /// `count` counters, all zero.
    pub fn new(count: usize) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stripes = (2 * cpus).next_power_of_two();
        let width = count.div_ceil(LINE) * LINE + LINE;
        Self {
            cells: (0..width * stripes).map(|_| AtomicU64::new(0)).collect(),
            width,
            stripes,
            baseline: Mutex::new(vec![0; count]),
        }
    }

    /// The calling thread's stripe, for several [`add_at`](Self::add_at)s.
    #[inline]
    pub fn stripe(&self) -> usize {
        let stripe = STRIPE.with(|s| {
            let mut stripe = s.get();
            if stripe == usize::MAX {
                stripe = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed);
                s.set(stripe);
            }
            stripe
        });
        stripe & (self.stripes - 1)
    }

    /// Adds `n` to counter `i`.
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        self.add_at(self.stripe(), i, n);
    }

    /// [`add`](Self::add) in the [`stripe`](Self::stripe) the caller looked up.
    #[inline]
    pub fn add_at(&self, stripe: usize, i: usize, n: u64) {
        let cell = &self.cells[stripe * self.width + i];
        cell.fetch_add(n, Ordering::Relaxed);
    }

    fn raw(&self, i: usize) -> u64 {
        (0..self.stripes)
            .map(|s| self.cells[s * self.width + i].load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }

    /// Counter `i`'s value since the last [`reset`](Self::reset).
    pub fn get(&self, i: usize) -> u64 {
        let base = self.baseline.lock().unwrap_or_else(|p| p.into_inner())[i];
        self.raw(i).wrapping_sub(base)
    }

    /// Starts every counter again from zero.
    pub fn reset(&self) {
        let mut base = self.baseline.lock().unwrap_or_else(|p| p.into_inner());
        for (i, b) in base.iter_mut().enumerate() {
            *b = self.raw(i);
        }
    }
}

/// Everything `INFO` counts.
pub struct Stats {
    /// The server's counters, indexed by [`Counter`].
    pub counters: Striped,
    /// [`PER_COMMAND`] counters per entry of the command table.
    pub commands: Striped,
    /// Error replies by their code (`errorstat_ERR`), counted only on errors.
    pub errors: Mutex<BTreeMap<String, u64>>,
    /// The `instantaneous_*` rates.
    pub rates: Rates,
    /// Every command's latency histogram (`latencystats`).
    pub latencies: crate::latency::Latencies,
}

/// The counters `INFO` shows a recent rate of.
#[derive(Debug, Clone, Copy)]
pub enum Rate {
    /// Commands per second (`instantaneous_ops_per_sec`).
    Commands = 0,
    /// Bytes read per second (`instantaneous_input_kbps`, in KiB).
    NetInput = 1,
    /// Bytes written per second (`instantaneous_output_kbps`, in KiB).
    NetOutput = 2,
}

/// Samples kept per rate: with a sample each 100 ms, the rates are over the last 1.6 s, as
/// Redis's `STATS_METRIC_SAMPLES`.
const RATE_SAMPLES: usize = 16;

/// Recent rates, as Redis's `trackInstantaneousMetric`: the background thread samples the
/// counters every 100 ms, and a rate is the mean of the last `RATE_SAMPLES` per-second
/// figures.
#[derive(Debug, Default)]
pub struct Rates {
    inner: Mutex<RateSamples>,
}

#[derive(Debug, Default)]
struct RateSamples {
    last_at: Option<std::time::Instant>,
    last: [u64; 3],
    per_second: [[u64; RATE_SAMPLES]; 3],
    next: usize,
}

impl Rates {
    /// Takes a sample of `stats`' counters.
    pub fn sample(&self, stats: &Stats) {
        let now = std::time::Instant::now();
        let readings = [
            stats.get(Counter::Commands),
            stats.get(Counter::NetInput),
            stats.get(Counter::NetOutput),
        ];
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last_at) = inner.last_at {
            let ms = now.duration_since(last_at).as_millis() as u64;
            let next = inner.next;
            for (i, reading) in readings.iter().enumerate() {
                let delta = reading.saturating_sub(inner.last[i]);
                inner.per_second[i][next] = (delta * 1000).checked_div(ms).unwrap_or(0);
            }
            inner.next = (next + 1) % RATE_SAMPLES;
        }
        inner.last_at = Some(now);
        inner.last = readings;
    }

    /// The mean rate per second over the samples kept.
    pub fn per_second(&self, rate: Rate) -> f64 {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let sum: u64 = inner.per_second[rate as usize].iter().sum();
        sum as f64 / RATE_SAMPLES as f64
    }
}

impl Stats {
    /// Counters for a command table of `commands` entries.
    pub fn new(commands: usize) -> Self {
        Self {
            counters: Striped::new(SERVER_COUNTERS),
            commands: Striped::new(commands * PER_COMMAND),
            errors: Mutex::new(BTreeMap::new()),
            rates: Rates::default(),
            latencies: crate::latency::Latencies::new(commands),
        }
    }

    /// Adds `n` to a server counter.
    #[inline]
    pub fn add(&self, counter: Counter, n: u64) {
        self.counters.add(counter as usize, n);
    }

    /// A server counter's value.
    pub fn get(&self, counter: Counter) -> u64 {
        self.counters.get(counter as usize)
    }

    /// Counts a call of command `id` that ran for `usec` microseconds, and whether it failed.
    #[inline]
    pub fn record_call(&self, id: usize, nanos: u64, failed: bool) {
        let base = id * PER_COMMAND;
        // One look-up of the thread's stripe for every counter of the call.
        let stripe = self.commands.stripe();
        self.commands.add_at(stripe, base, 1);
        self.commands.add_at(stripe, base + 1, nanos / 1_000);
        if failed {
            self.commands.add_at(stripe, base + 3, 1);
        }
        self.latencies.record(stripe, id, nanos);
    }

    /// Counts a call of command `id` refused before it ran.
    pub fn record_rejected(&self, id: usize) {
        self.commands.add(id * PER_COMMAND + 2, 1);
    }

    /// Command `id`'s figures.
    pub fn command(&self, id: usize) -> CommandFigures {
        let base = id * PER_COMMAND;
        CommandFigures {
            calls: self.commands.get(base),
            usec: self.commands.get(base + 1),
            rejected: self.commands.get(base + 2),
            failed: self.commands.get(base + 3),
        }
    }

    /// Counts `n` error replies of code `code`.
    pub fn record_errors(&self, code: &str, n: u64) {
        self.add(Counter::ErrorReplies, n);
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        // Redis stops tracking new codes past 128, so a client cannot grow the table.
        if errors.len() < 128 || errors.contains_key(code) {
            *errors.entry(code.to_owned()).or_insert(0) += n;
        }
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        self.counters.reset();
        self.commands.reset();
        self.latencies.reset();
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_sums_every_thread_and_resets_to_zero() {
        let striped = std::sync::Arc::new(Striped::new(3));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let striped = striped.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        striped.add(1, 2);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(striped.get(1), 8000);
        assert_eq!(striped.get(0), 0);
        striped.reset();
        assert_eq!(striped.get(1), 0);
        striped.add(1, 5);
        assert_eq!(striped.get(1), 5);
    }

    #[test]
    fn stats_error_codes_are_bounded() {
        let stats = Stats::new(1);
        for i in 0..200 {
            stats.record_errors(&format!("E{i}"), 1);
        }
        stats.record_errors("E0", 1);
        let errors = stats.errors.lock().unwrap();
        assert_eq!(errors.len(), 128);
        assert_eq!(errors["E0"], 2);
        assert_eq!(stats.get(Counter::ErrorReplies), 201);
    }
}
