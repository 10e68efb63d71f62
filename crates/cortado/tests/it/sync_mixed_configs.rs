//! `sync::Cache` under real threads across many drawn configurations: each seed draws its own
//! (2 to 5 threads, 1 to 8 shards, one of the eviction policies, a weigher or not, time to live,
//! time to idle, negative caching, the scheduler thread, an unbounded start) and runs every kind
//! of read, write, load (failing, absent and panicking ones too), compute, `set_max_capacity`,
//! `retain`, `invalidate_all` and clock ticks at once. Once the threads are joined, the cache's
//! invariants must hold, every value written must be either held or heard exactly once by the
//! listener, and the stats must count what the listener heard.
//!
//! A failure names its seed and the configuration drawn; `SEEDS` is fixed, so it reproduces up
//! to thread scheduling.

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use crate::common::accounting::{
    assert_every_cause_heard, assert_stats_count_causes, with_timeout, Heard,
};
use crate::common::{all_policies, Rng};
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::sync::{Cache, Compute, Scheduler};
use cortado::time::ManualClock;

/// Seeds run; seed `i` uses policy `i % 7`, so each policy runs `SEEDS / 7` times (twice under
/// Miri, with fewer operations).
const SEEDS: u64 = if cfg!(miri) { 14 } else { 70 };
/// Operations per thread per seed.
const OPS: u64 = if cfg!(miri) { 30 } else { 2_500 };
/// A clock tick advances the clock by less than this many milliseconds: more under Miri, whose
/// few operations must still reach the lifetimes (40 to 300 ms).
const TICK_MS: u64 = if cfg!(miri) { 50 } else { 5 };
/// What the panicking loader panics with, kept out of the test's output.
const LOADER_PANIC: &str = "mixed configs: loader panic";

/// The names of [`Config::flags`].
const FLAGS: [&str; 6] = [
    "weighted",
    "ttl",
    "tti",
    "negative ttl",
    "scheduler",
    "unbounded",
];

/// One seed's cache settings.
struct Config {
    seed: u64,
    threads: u64,
    keys: u64,
    shards: usize,
    weighted: bool,
    policy: EvictionPolicy,
    ttl: bool,
    tti: bool,
    negative_ttl: bool,
    scheduler: bool,
    /// `None`: built unbounded (a `set_max_capacity` during the run may bound it).
    capacity: Option<u64>,
}

impl Config {
    fn draw(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xab_cdef);
        let mut coin = |odds: u64| rng.next_u64() % odds == 0;
        let (weighted, ttl, tti, negative_ttl) = (coin(2), coin(2), coin(2), coin(2));
        let (scheduler, unbounded) = (coin(3), coin(2));
        let threads = 2 + rng.next_u64() % 4;
        let keys = 8 + rng.next_u64() % 300;
        let shards = [1, 2, 4, 8][(rng.next_u64() % 4) as usize];
        let capacity = if weighted {
            Some(50 + rng.next_u64() % 2_000)
        } else if unbounded {
            None
        } else {
            Some(8 + rng.next_u64() % 200)
        };
        Self {
            seed,
            threads,
            keys,
            shards,
            weighted,
            policy: all_policies()[(seed % 7) as usize],
            ttl,
            tti,
            negative_ttl,
            scheduler,
            capacity,
        }
    }

    /// Its settings that are on or off, in the order of [`FLAGS`].
    fn flags(&self) -> [bool; 6] {
        [
            self.weighted,
            self.ttl,
            self.tti,
            self.negative_ttl,
            self.scheduler,
            self.capacity.is_none(),
        ]
    }

    fn build(&self, clock: &ManualClock, heard: &Arc<Mutex<Heard>>) -> Cache<u64, u64> {
        let mut builder = Cache::<u64, u64>::builder()
            .shards(self.shards)
            .eviction_policy(self.policy)
            .clock(clock.clone())
            .record_stats()
            .eviction_listener(Heard::recorder(heard));
        if let Some(capacity) = self.capacity {
            builder = builder.max_capacity(capacity);
        }
        if self.weighted {
            builder = builder.weigher(|_, v: &u64| weight(*v) as u32);
        }
        if self.ttl {
            builder = builder.time_to_live(Duration::from_millis(300));
        }
        if self.tti {
            builder = builder.time_to_idle(Duration::from_millis(120));
        }
        if self.negative_ttl {
            builder = builder.negative_ttl(Duration::from_millis(50));
        }
        if self.scheduler {
            builder = builder.scheduler(Scheduler::Thread);
        }
        builder.build().unwrap()
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} ({} threads, {} keys, {} shards, policy {}, weighted {}, ttl {}, tti {}, \
             negative ttl {}, scheduler {}, capacity {:?})",
            self.seed,
            self.threads,
            self.keys,
            self.shards,
            self.policy.name(),
            self.weighted,
            self.ttl,
            self.tti,
            self.negative_ttl,
            self.scheduler,
            self.capacity
        )
    }
}

/// A value's weight under the weigher (0 to 36).
fn weight(value: u64) -> u64 {
    value % 37
}

/// One worker's operations; returns every value it wrote, with its key.
fn work(
    cache: &Cache<u64, u64>,
    clock: &ManualClock,
    config: &Config,
    thread: u64,
    next_value: &AtomicU64,
    capacity: &AtomicU64,
) -> Vec<(u64, u64)> {
    let mut rng = Rng::new(config.seed * 100 + thread + 1);
    let mut written = Vec::new();
    let fresh = || next_value.fetch_add(1, Ordering::Relaxed);
    for _ in 0..OPS {
        let key = rng.next_u64() % config.keys;
        let r = rng.next_u64();
        let mut put = None;
        match r % 1000 {
            0..=299 | 970.. => {
                if let Some(v) = cache.get(&key) {
                    assert!(v > 0);
                }
            }
            300..=399 => {
                put = Some(fresh());
                cache.insert(key, put.unwrap());
            }
            400..=429 => {
                put = Some(fresh());
                cache.insert_with_ttl(key, put.unwrap(), Duration::from_millis(40));
            }
            430..=529 => {
                let init = || {
                    put = Some(fresh());
                    if r % 7 == 0 {
                        std::thread::yield_now();
                    }
                    put.unwrap()
                };
                let got = if r % 2 == 0 {
                    cache.get_with(key, init)
                } else {
                    cache.entry_by_ref(&key).or_insert_with(init)
                };
                assert!(put.is_none_or(|v| v == got));
            }
            530..=569 => {
                let got = cache.try_get_with(key, || {
                    if r % 3 == 0 {
                        return Err(r);
                    }
                    put = Some(fresh());
                    Ok(put.unwrap())
                });
                assert!(put.is_none_or(|v| got == Ok(v)));
            }
            570..=609 => {
                let got = cache.optionally_get_with(key, || {
                    if r % 3 != 0 {
                        put = Some(fresh());
                    }
                    put
                });
                assert!(put.is_none() || got == put);
            }
            610..=614 => {
                let loaded = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    cache.get_with(key, || -> u64 { panic!("{LOADER_PANIC}") })
                }));
                // Another thread's load or write may have supplied a value.
                if let Ok(v) = loaded {
                    assert!(v > 0);
                }
            }
            615..=674 => {
                let f = |current: Option<&u64>| match r % 3 {
                    0 if current.is_some() => Compute::Remove,
                    1 => Compute::Nop,
                    _ => {
                        put = Some(fresh());
                        Compute::Put(put.unwrap())
                    }
                };
                if r % 2 == 0 {
                    cache.entry(key).and_compute_with(f);
                } else {
                    cache.entry_by_ref(&key).and_compute_with(f);
                }
            }
            675..=699 => {
                cache.entry(key).and_upsert_with(|_| {
                    put = Some(fresh());
                    put.unwrap()
                });
            }
            700..=799 => drop(cache.remove(&key)),
            800..=859 => clock.advance(Duration::from_millis(r % TICK_MS)),
            860..=899 => cache.run_pending_tasks(),
            900..=909 => cache.retain(|k, _| *k % 7 != thread),
            910..=929 => {
                let max = match (r % 10, config.weighted) {
                    (0, _) => u64::MAX,
                    (_, true) => 1 + r % 2_500,
                    (_, false) => 1 + r % 250,
                };
                capacity.store(max, Ordering::Relaxed);
                cache.set_max_capacity(max);
            }
            930..=949 => {
                let _ = cache.peek(&key);
                let _ = cache.contains_key(&key);
            }
            950..=959 => {
                // No lock is held between steps: the loop may write to the cache.
                for (i, (k, v)) in cache.into_iter().enumerate().take(10) {
                    assert!(v > 0);
                    if i == 0 && r % 2 == 0 {
                        let _ = cache.remove(&k);
                    }
                }
            }
            960..=961 => cache.invalidate_all(),
            962..=969 => {
                let _ = (cache.hottest(3), cache.coldest(3), cache.stats());
                let _ = (cache.len(), cache.weighted_size());
            }
        }
        if let Some(v) = put {
            written.push((key, v));
        }
    }
    written
}

/// Runs one seed and checks the cache once its threads are done; every failure names `config`.
/// Returns how many values the listener heard of, by cause.
fn run(config: &Config) -> HashMap<RemovalCause, u64> {
    let clock = ManualClock::new();
    let heard: Arc<Mutex<Heard>> = Arc::default();
    let cache = config.build(&clock, &heard);
    let next_value = AtomicU64::new(1);
    let capacity = AtomicU64::new(config.capacity.unwrap_or(u64::MAX));
    let barrier = Barrier::new(config.threads as usize);
    let written: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..config.threads)
            .map(|t| {
                let (cache, clock, barrier) = (&cache, &clock, &barrier);
                let (next_value, capacity) = (&next_value, &capacity);
                scope.spawn(move || {
                    barrier.wait();
                    work(cache, clock, config, t, next_value, capacity)
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(written) => written,
                Err(panic) => {
                    eprintln!("{config}: a worker panicked");
                    std::panic::resume_unwind(panic)
                }
            })
            .collect()
    });
    // Only now: `validate` is sound once no thread reads the cache.
    let checked = |step: &str, check: &dyn Fn()| {
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(check)) {
            eprintln!("{config}: {step} failed");
            std::panic::resume_unwind(panic);
        }
    };
    checked("validate after the run", &|| cache.validate());
    let max = capacity.load(Ordering::Relaxed);
    cache.set_max_capacity(max);
    cache.run_pending_tasks();
    checked("validate after maintenance", &|| cache.validate());
    assert!(
        cache.weighted_size() <= max,
        "{config}: weighted size {} over the last capacity set, {max}",
        cache.weighted_size()
    );
    assert_eq!(cache.loads_in_flight(), 0, "{config}: loads left in flight");
    let present: HashMap<u64, u64> = cache.iter().map(|(k, v)| (v, k)).collect();
    let held: u64 = if config.weighted {
        present.keys().map(|&v| weight(v)).sum()
    } else {
        present.len() as u64
    };
    assert_eq!(held, cache.weighted_size(), "{config}: weighted size");
    let context = config.to_string();
    let by_cause = heard.lock().unwrap().account(&written, &present, &context);
    assert_stats_count_causes(&cache.stats(), &by_cause, &context);
    by_cause
}

#[test]
fn mixed_ops_on_drawn_configs_account_for_every_value() {
    let configs: Vec<Config> = (0..SEEDS).map(Config::draw).collect();
    // Each setting is drawn both ways several times over the fixed seeds (at least once each
    // way over Miri's fourteen).
    let times = if cfg!(miri) { 1 } else { 5 };
    for (i, name) in FLAGS.iter().enumerate() {
        let on = configs.iter().filter(|c| c.flags()[i]).count();
        assert!(
            (times..=configs.len() - times).contains(&on),
            "{name} drawn on in {on} of {} seeds",
            configs.len()
        );
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains(LOADER_PANIC) {
            hook(info);
        }
    }));
    let heard = with_timeout(Duration::from_secs(60), move || {
        let mut heard: HashMap<RemovalCause, u64> = HashMap::new();
        for config in &configs {
            for (cause, n) in run(config) {
                *heard.entry(cause).or_default() += n;
            }
        }
        heard
    });
    // The mix exercises every cause.
    assert_every_cause_heard(&heard);
}
