//! Operations per second of a cache shared by 1 or more threads, each replaying its own
//! pre-generated Zipf stream of gets and inserts, started together by a barrier.
//!
//! [`streams`] builds the per-thread operations for a [`Workload`] and a read share;
//! [`Throughput`] runs them against one cache ([`Peer::visit`](super::Peer::visit)) and returns
//! every run's rate and the hit ratio of the gets.
//!
//! # Design
//!
//! - **Operations.** A read is a `get`; when it misses, the thread inserts the key (cache-aside),
//!   so a workload with more keys than capacity inserts and evicts on the read path. With a read
//!   share below 100%, the other operations are unconditional inserts of a key from the same
//!   stream. Which operation comes when is drawn in advance (a bitset per thread), so the loop
//!   does no random number generation.
//! - **One key set, separate draws.** All threads draw Zipf ranks from their own SplitMix64 seed
//!   and map rank `r` to `mix64(r ^ salt)` with one shared salt (the construction of
//!   `cortado_sim::gen`, whose streams have a salt per seed): the threads agree on which keys
//!   are hot without replaying the same sequence in lockstep.
//! - **Warm start.** Each measurement builds its cache fresh and fills it with the `capacity`
//!   most popular keys, coldest first; one untimed pass over the streams then lets each policy
//!   learn the workload before the [`Throughput::runs`] timed passes.
//! - **Timing.** A pass is timed from the first thread leaving the barrier to the last thread
//!   finishing; the rate is all threads' operations over that span. The median of the passes is
//!   reported, because the machine is shared and a pass can lose its core for a while.
//! - **Rounds.** The `peers` binary measures one timed pass per cache per round and takes the
//!   caches in turn, starting each round with the next cache (odd rounds in reverse order, so
//!   that a cache does not always follow the same one), so that a slow phase of the machine
//!   falls on every cache alike; its ratios are the median of the per-round ratios. Run
//!   one cache after another, a slow phase lasting one cache's passes once showed quick_cache at
//!   a third of its rate in one cell, and cortado at 2.78x of it.
//! - **Run-queue time.** On a shared machine a thread also waits, ready but not running, for a
//!   core. Linux reports that wait per thread (`/proc/thread-self/schedstat`, second field), so
//!   a second rate leaves it out: all threads' operations over the span from the first start to
//!   the latest thread's end less that thread's own run-queue wait. Time blocked on a lock still
//!   counts (a blocked thread is not on the run queue), so contention is still measured; what
//!   goes is the time other processes held the cores. With no waits the two rates are equal: a
//!   sum of per-thread rates would not be, since it credits a thread that finished early with
//!   its own short span (two threads with no waits, done after 50 and 90 ms, counted 1.4x the
//!   wall-clock rate). Where the file is missing the second rate is absent.
//!
//! # References
//!
//! 1. B. Manes: Caffeine's `GetPutBenchmark` (pre-generated Zipf keys per thread, a fixed
//!    read/write mix).

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use cortado_sim::gen::{mix64, SplitMix64, Zipf};

use super::{BuildFailure, CacheSpec, ConcurrentCache, PeerVisitor};

/// The Zipf exponent of every throughput workload.
pub const ZIPF_S: f64 = 0.99;

/// Distinct keys and capacity of one throughput workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The label in tables (`A`, `B`).
    pub name: &'static str,
    /// Distinct keys the streams draw from.
    pub keys: u64,
    /// Capacity of the cache, in entries.
    pub capacity: u64,
}

/// One thread's pre-generated operations.
#[derive(Clone, Debug)]
pub struct ThreadStream {
    keys: Vec<u64>,
    /// Bit `i` set: operation `i` is an unconditional insert; empty when all are reads.
    writes: Vec<u64>,
}

impl ThreadStream {
    /// Number of operations.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are no operations.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether operation `i` is an unconditional insert.
    #[inline]
    pub fn is_write(&self, i: usize) -> bool {
        self.writes
            .get(i >> 6)
            .is_some_and(|word| (word >> (i & 63)) & 1 == 1)
    }

    /// The operations' keys.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }
}

/// The key of popularity rank `rank` (0 = hottest) under `salt`.
#[inline]
pub fn key_of_rank(rank: u64, salt: u64) -> u64 {
    mix64(rank ^ salt)
}

/// The salt every thread of a run shares, from the run's seed.
pub fn salt(seed: u64) -> u64 {
    mix64(seed ^ 0x7a1f_5a17)
}

/// `threads` streams of `ops` operations each over `workload`'s keys, `read_percent` of them
/// reads (the rest inserts), drawn from `seed`.
///
/// # Panics
///
/// If the workload has no keys or `read_percent` exceeds 100: the binary passes constants.
pub fn streams(
    workload: Workload,
    threads: usize,
    ops: usize,
    read_percent: u32,
    seed: u64,
) -> Vec<ThreadStream> {
    assert!(read_percent <= 100, "a read share is a percentage");
    let zipf = Zipf::new(workload.keys, ZIPF_S).expect("a workload has keys");
    let salt = salt(seed);
    (0..threads as u64)
        .map(|thread| {
            let mut rng = SplitMix64::new(mix64(seed.wrapping_add(thread + 1)));
            let keys = (0..ops)
                .map(|_| key_of_rank(zipf.sample(&mut rng) - 1, salt))
                .collect();
            let mut writes = Vec::new();
            if read_percent < 100 {
                writes = vec![0u64; ops.div_ceil(64)];
                let threshold = f64::from(100 - read_percent) / 100.0;
                for i in 0..ops {
                    if rng.next_f64() < threshold {
                        writes[i >> 6] |= 1 << (i & 63);
                    }
                }
            }
            ThreadStream { keys, writes }
        })
        .collect()
}

/// What [`Throughput`] measured for one cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Millions of operations per second (all threads together), one per timed pass.
    pub mops: Vec<f64>,
    /// The same leaving out each thread's run-queue wait (see the [module docs](self)); empty
    /// where the kernel does not report it.
    pub mops_unqueued: Vec<f64>,
    /// Gets that hit over all gets, across the timed passes.
    pub hit_ratio: f64,
}

impl Measurement {
    /// The median of [`mops`](Self::mops) (the mean of the middle two for an even count).
    pub fn median_mops(&self) -> f64 {
        median(&self.mops)
    }

    /// The median of [`mops_unqueued`](Self::mops_unqueued), if measured.
    pub fn median_mops_unqueued(&self) -> Option<f64> {
        (!self.mops_unqueued.is_empty()).then(|| median(&self.mops_unqueued))
    }

    /// Appends the passes of `other` (a later round of the same cell); the hit ratio becomes
    /// the mean over all passes (every pass replays the same operations).
    pub fn absorb(&mut self, other: Measurement) {
        let (before, added) = (self.mops.len() as f64, other.mops.len() as f64);
        if before + added > 0.0 {
            self.hit_ratio = (self.hit_ratio * before + other.hit_ratio * added) / (before + added);
        }
        self.mops.extend(other.mops);
        self.mops_unqueued.extend(other.mops_unqueued);
    }
}

/// The median of `values`; 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A throughput measurement of one cache, run by [`Peer::visit`](super::Peer::visit).
#[derive(Clone, Copy, Debug)]
pub struct Throughput<'a> {
    /// The workload the streams were drawn for (its capacity sizes the cache).
    pub workload: Workload,
    /// One stream per thread.
    pub streams: &'a [ThreadStream],
    /// Timed passes.
    pub runs: usize,
    /// The salt the streams were drawn with, for the warm fill.
    pub salt: u64,
}

impl PeerVisitor for Throughput<'_> {
    type Output = Result<Measurement, BuildFailure>;

    fn visit<C: ConcurrentCache<u64, u64>>(self) -> Self::Output {
        let cache = C::build(&CacheSpec::new(self.workload.capacity))?;
        let hottest = self.workload.capacity.min(self.workload.keys);
        for rank in (0..hottest).rev() {
            let key = key_of_rank(rank, self.salt);
            cache.insert(key, key);
        }
        cache.sync_maintenance();
        pass(&cache, self.streams);
        let (mut hits, mut reads) = (0, 0);
        let mut mops = Vec::with_capacity(self.runs);
        let mut mops_unqueued = Vec::with_capacity(self.runs);
        for _ in 0..self.runs {
            let outcome = pass(&cache, self.streams);
            hits += outcome.hits;
            reads += outcome.reads;
            mops.push(outcome.ops as f64 / outcome.seconds / 1e6);
            if let Some(rate) = outcome.unqueued_ops_per_second {
                mops_unqueued.push(rate / 1e6);
            }
        }
        Ok(Measurement {
            mops,
            mops_unqueued,
            hit_ratio: if reads == 0 {
                0.0
            } else {
                hits as f64 / reads as f64
            },
        })
    }
}

/// One timed pass over every thread's stream.
struct PassOutcome {
    ops: u64,
    seconds: f64,
    /// Operations per second over the span less run-queue waits ([`unqueued_rate`]).
    unqueued_ops_per_second: Option<f64>,
    hits: u64,
    reads: u64,
}

/// What one thread reports after its part of a pass.
struct ThreadOutcome {
    start: Instant,
    end: Instant,
    /// Nanoseconds spent waiting for a core during the replay.
    queued_ns: Option<u64>,
    ops: u64,
    hits: u64,
    reads: u64,
}

fn pass<C: ConcurrentCache<u64, u64>>(cache: &C, streams: &[ThreadStream]) -> PassOutcome {
    let barrier = Barrier::new(streams.len());
    let threads: Vec<ThreadOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .map(|stream| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    // The waits are read inside the timed span, so that a wait during a read
                    // of them is not taken off a span that does not hold it.
                    let start = Instant::now();
                    let queued_before = run_queue_wait_ns();
                    let (hits, reads) = replay(cache, stream);
                    let queued_after = run_queue_wait_ns();
                    let end = Instant::now();
                    let queued_ns = match (queued_before, queued_after) {
                        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
                        _ => None,
                    };
                    ThreadOutcome {
                        start,
                        end,
                        queued_ns,
                        ops: stream.len() as u64,
                        hits,
                        reads,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a benchmark thread panicked"))
            .collect()
    });
    let start = threads.iter().map(|t| t.start).min();
    let end = threads.iter().map(|t| t.end).max();
    let seconds = match (start, end) {
        (Some(start), Some(end)) => end.duration_since(start).as_secs_f64(),
        _ => 0.0,
    };
    let unqueued_ops_per_second = unqueued_rate(&threads);
    PassOutcome {
        ops: threads.iter().map(|t| t.ops).sum(),
        seconds: seconds.max(f64::MIN_POSITIVE),
        unqueued_ops_per_second,
        hits: threads.iter().map(|t| t.hits).sum(),
        reads: threads.iter().map(|t| t.reads).sum(),
    }
}

/// All threads' operations per second over the pass's span with run-queue waits left out: from
/// the first thread's start to the latest end, each thread's end moved back by its own wait;
/// `None` if a thread's wait is unknown (or there are no threads).
fn unqueued_rate(threads: &[ThreadOutcome]) -> Option<f64> {
    let first = threads.iter().map(|t| t.start).min()?;
    let mut span_ns = 0.0f64;
    for t in threads {
        let ran_ns = t.end.duration_since(first).as_nanos() as f64 - t.queued_ns? as f64;
        span_ns = span_ns.max(ran_ns);
    }
    let ops: u64 = threads.iter().map(|t| t.ops).sum();
    Some(ops as f64 / span_ns.max(1.0) * 1e9)
}

/// This thread's total wait on a run queue so far, in nanoseconds (Linux), if reported.
fn run_queue_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Runs one thread's operations; returns (hits, reads).
#[inline(never)]
fn replay<C: ConcurrentCache<u64, u64>>(cache: &C, stream: &ThreadStream) -> (u64, u64) {
    let (mut hits, mut reads) = (0, 0);
    for (i, &key) in stream.keys.iter().enumerate() {
        if stream.is_write(i) {
            cache.insert(key, key);
        } else {
            reads += 1;
            match black_box(cache.get(&key)) {
                Some(_) => hits += 1,
                None => cache.insert(key, key),
            }
        }
    }
    (hits, reads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::Peer;
    use std::time::Duration;

    const TINY: Workload = Workload {
        name: "tiny",
        keys: 1_000,
        capacity: 100,
    };

    #[test]
    fn streams_read_share_matches_request() {
        let streams = streams(TINY, 2, 20_000, 75, 1);
        for stream in &streams {
            let writes = (0..stream.len()).filter(|&i| stream.is_write(i)).count();
            let share = writes as f64 / stream.len() as f64;
            assert!((share - 0.25).abs() < 0.02, "write share {share}");
        }
    }

    #[test]
    fn streams_all_reads_has_no_writes() {
        let streams = streams(TINY, 1, 1_000, 100, 1);
        assert!((0..1_000).all(|i| !streams[0].is_write(i)));
    }

    #[test]
    fn streams_threads_share_hot_keys_but_not_order() {
        let streams = streams(TINY, 2, 5_000, 100, 3);
        let hottest = key_of_rank(0, salt(3));
        for stream in &streams {
            // Rank 1 of Zipf(0.99) over 1,000 keys has probability about 1/7.5.
            let count = stream.keys().iter().filter(|&&k| k == hottest).count();
            assert!(count > 400, "hottest key drawn {count} times of 5,000");
        }
        assert_ne!(streams[0].keys(), streams[1].keys());
    }

    #[test]
    fn median_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    fn outcome(start: Instant, start_ms: u64, end_ms: u64, queued_ms: u64) -> ThreadOutcome {
        ThreadOutcome {
            start: start + Duration::from_millis(start_ms),
            end: start + Duration::from_millis(end_ms),
            queued_ns: Some(queued_ms * 1_000_000),
            ops: 1_000_000,
            hits: 0,
            reads: 0,
        }
    }

    #[test]
    fn unqueued_rate_no_waits_uneven_finish_equals_wall_rate() {
        // Done after 50 and 100 ms with no waits: 2M operations in 100 ms, not 1M / 50 ms +
        // 1M / 100 ms.
        let t0 = Instant::now();
        let threads = [outcome(t0, 0, 50, 0), outcome(t0, 0, 100, 0)];
        let rate = unqueued_rate(&threads).expect("waits known");
        assert!((rate - 20e6).abs() < 1.0, "{rate}");
    }

    #[test]
    fn unqueued_rate_waits_shorten_each_threads_own_end() {
        // The second thread waited 40 of its 100 ms: the span is the first's 80 ms; a late
        // start counts from the first thread's start.
        let t0 = Instant::now();
        let threads = [outcome(t0, 0, 80, 0), outcome(t0, 10, 100, 40)];
        let rate = unqueued_rate(&threads).expect("waits known");
        assert!((rate - 25e6).abs() < 1.0, "{rate}");
        let unknown = ThreadOutcome {
            queued_ns: None,
            ..outcome(t0, 0, 80, 0)
        };
        assert_eq!(unqueued_rate(&[unknown, outcome(t0, 0, 80, 0)]), None);
    }

    #[test]
    fn throughput_all_keys_fit_every_cache_mostly_hits() {
        // 100 keys into capacity 100, warmed with all of them: every get should hit, save
        // quick_cache's approximate bound and moka's admission of the warm fill.
        let workload = Workload {
            name: "fit",
            keys: 100,
            capacity: 100,
        };
        let streams = streams(workload, 2, 2_000, 100, 5);
        for peer in Peer::ALL {
            let measured = peer
                .visit(Throughput {
                    workload,
                    streams: &streams,
                    runs: 2,
                    salt: salt(5),
                })
                .expect("plain spec builds");
            assert_eq!(measured.mops.len(), 2);
            if run_queue_wait_ns().is_some() {
                assert_eq!(measured.mops_unqueued.len(), 2);
                // Leaving out waits can only shorten the span.
                for (unqueued, wall) in measured.mops_unqueued.iter().zip(&measured.mops) {
                    assert!(unqueued >= &(wall * 0.99), "{peer}: {unqueued} < {wall}");
                }
            }
            assert!(measured.mops.iter().all(|&m| m > 0.0));
            assert!(measured.hit_ratio > 0.9, "{peer}: {}", measured.hit_ratio);
        }
    }
}
