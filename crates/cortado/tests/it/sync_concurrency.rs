//! `sync::Cache` under real threads: a mixed-operation stress test that accounts for every value
//! through the listener, the capacity bound watched while writers run, loader coalescing (once per
//! key, errors to every waiter, panics, negative caching) and the scheduler thread.
//!
//! Every test that could hang on a regression (a waiter never released) runs under a timeout
//! guard, so it fails instead of stalling CI.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::accounting::{
    assert_every_cause_heard, assert_stats_count_causes, with_timeout, Heard,
};
use crate::common::Rng;
use cortado::notification::RemovalCause;
use cortado::sync::{Cache, Compute, Scheduler};
use cortado::time::ManualClock;

const LIMIT: Duration = Duration::from_secs(20);

/// Waits until `arrived` reaches `n`, then a little longer, so that every caller that passed the
/// barrier has joined the load in flight. The wait is paced: under Miri, which interprets the
/// last caller's steps from `arrived` to the load a hundred or more times slower, 50 ms is not
/// always enough (a fixed sleep like it let a late task load a second time in
/// `future_behaviour`), and Miri skips its clock ahead once every caller waits.
fn wait_for_arrivals(arrived: &AtomicUsize, n: usize) {
    while arrived.load(Ordering::SeqCst) < n {
        std::thread::yield_now();
    }
    std::thread::sleep(common::paced(Duration::from_millis(50)));
}

#[test]
fn stress_mixed_ops_every_value_present_or_reported_once() {
    with_timeout(LIMIT, || {
        const THREADS: u64 = 4;
        const OPS: u64 = if cfg!(miri) { 150 } else { 15_000 };
        const KEYS: u64 = 300;
        const CAPACITY: u64 = 96;
        let clock = ManualClock::new();
        let heard: Arc<Mutex<Heard>> = Arc::default();
        let cache: Cache<u64, u64> = Cache::builder()
            .max_capacity(CAPACITY)
            .shards(4)
            .time_to_live(Duration::from_millis(300))
            .time_to_idle(Duration::from_millis(120))
            .clock(clock.clone())
            .eviction_listener(Heard::recorder(&heard))
            .record_stats()
            .build()
            .unwrap();
        let next_value = AtomicU64::new(1);
        let stop = AtomicBool::new(false);
        let barrier = Barrier::new(THREADS as usize + 1);
        // Every value written, with its key.
        let written: Vec<(u64, u64)> = std::thread::scope(|scope| {
            let monitor = scope.spawn(|| {
                barrier.wait();
                // Checks before it looks at `stop`, so it checks at least once: on two busy
                // cores it may not run again until the workers are done (it once made no check
                // at all, 1 run in 700, and a count of checks asserted positive failed).
                loop {
                    // No `set_max_capacity` here, so the bound has no slack at any moment.
                    assert!(cache.weighted_size() <= CAPACITY, "over capacity mid-run");
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::yield_now();
                }
            });
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (cache, clock, next_value, barrier) =
                        (&cache, &clock, &next_value, &barrier);
                    scope.spawn(move || {
                        let mut rng = Rng::new(t + 1);
                        let mut written = Vec::new();
                        let fresh = || next_value.fetch_add(1, Ordering::Relaxed);
                        barrier.wait();
                        for _ in 0..OPS {
                            let key = rng.next_u64() % KEYS;
                            match rng.next_u64() % 100 {
                                0..=39 => {
                                    if let Some(v) = cache.get(&key) {
                                        assert!(v > 0);
                                    }
                                }
                                40..=59 => {
                                    let v = fresh();
                                    written.push((key, v));
                                    cache.insert(key, v);
                                }
                                60..=64 => {
                                    let v = fresh();
                                    written.push((key, v));
                                    cache.insert_with_ttl(key, v, Duration::from_millis(40));
                                }
                                65..=74 => {
                                    let mut loaded = None;
                                    let got = cache.get_with(key, || {
                                        let v = fresh();
                                        loaded = Some(v);
                                        v
                                    });
                                    if let Some(v) = loaded {
                                        written.push((key, v));
                                        assert_eq!(got, v);
                                    }
                                }
                                75..=79 => {
                                    let mut put = None;
                                    cache.entry(key).and_compute_with(|current| {
                                        if current.is_some() && key % 2 == 0 {
                                            Compute::Remove
                                        } else {
                                            let v = fresh();
                                            put = Some(v);
                                            Compute::Put(v)
                                        }
                                    });
                                    if let Some(v) = put {
                                        written.push((key, v));
                                    }
                                }
                                80..=89 => {
                                    cache.remove(&key);
                                }
                                90..=94 => clock.advance(Duration::from_millis(3)),
                                95..=97 => cache.run_pending_tasks(),
                                98 => cache.retain(|k, _| *k % 7 != t),
                                _ => {
                                    if rng.next_u64() % 20 == 0 {
                                        cache.invalidate_all();
                                    }
                                }
                            }
                        }
                        written
                    })
                })
                .collect();
            let written = workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect();
            stop.store(true, Ordering::Relaxed);
            monitor.join().unwrap();
            written
        });
        cache.run_pending_tasks();
        cache.validate();
        assert!(cache.weighted_size() <= CAPACITY);
        assert_eq!(cache.loads_in_flight(), 0);
        let present: HashMap<u64, u64> = cache.iter().map(|(k, v)| (v, k)).collect();
        let by_cause = heard.lock().unwrap().account(&written, &present, "stress");
        // The mix exercises every cause.
        assert_every_cause_heard(&by_cause);
        assert_stats_count_causes(&cache.stats(), &by_cause, "stress");
    });
}

#[test]
fn concurrent_weighted_writers_never_exceed_capacity() {
    with_timeout(LIMIT, || {
        const CAPACITY: u64 = 1_000;
        let cache: Cache<u64, u32> = Cache::builder()
            .max_capacity(CAPACITY)
            .shards(4)
            .weigher(|_, v: &u32| *v)
            .build()
            .unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let monitor = scope.spawn(|| {
                let mut worst = 0;
                while !stop.load(Ordering::Relaxed) {
                    worst = worst.max(cache.weighted_size());
                }
                worst
            });
            let writers: Vec<_> = (0..4u64)
                .map(|t| {
                    let cache = &cache;
                    scope.spawn(move || {
                        let mut rng = Rng::new(t + 10);
                        for _ in 0..if cfg!(miri) { 150 } else { 20_000 } {
                            let key = rng.next_u64() % 5_000;
                            cache.insert(key, 1 + (rng.next_u64() % 40) as u32);
                            if key % 3 == 0 {
                                cache.get(&(key + 1));
                            }
                        }
                    })
                })
                .collect();
            for writer in writers {
                writer.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            let worst = monitor.join().unwrap();
            assert!(worst <= CAPACITY, "weighted size reached {worst}");
        });
        cache.validate();
        let total: u64 = cache.iter().map(|(_, v)| u64::from(v)).sum();
        assert_eq!(total, cache.weighted_size());
    });
}

#[test]
fn get_with_concurrent_callers_run_init_once() {
    with_timeout(LIMIT, || {
        const CALLERS: usize = 8;
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(100)
            .record_stats()
            .build()
            .unwrap();
        let calls = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let barrier = Barrier::new(CALLERS);
        let results: Vec<u64> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..CALLERS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        arrived.fetch_add(1, Ordering::SeqCst);
                        cache.get_with(7, || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            wait_for_arrivals(&arrived, CALLERS);
                            42
                        })
                    })
                })
                .collect();
            callers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(results, vec![42; CALLERS]);
        assert_eq!(cache.get(&7), Some(42));
        assert_eq!(cache.loads_in_flight(), 0);
        let stats = cache.stats();
        assert_eq!((stats.load_successes, stats.load_failures), (1, 0));
        // One lookup per call, plus the final `get`.
        assert_eq!(stats.hits + stats.misses, CALLERS as u64 + 1);
    });
}

#[test]
fn get_with_many_keys_loads_each_key_once() {
    with_timeout(LIMIT, || {
        let cache: Cache<u64, u64> = Cache::builder().max_capacity(10_000).build().unwrap();
        // Under Miri fewer calls over fewer keys, so that every key is still requested.
        let (keys, calls_per_thread) = if cfg!(miri) { (40, 150) } else { (200, 5_000) };
        let calls: Vec<AtomicUsize> = (0..keys).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let (cache, calls) = (&cache, &calls);
                scope.spawn(move || {
                    let mut rng = Rng::new(t + 100);
                    for _ in 0..calls_per_thread {
                        let key = rng.next_u64() % keys;
                        let got = cache.get_with(key, || {
                            calls[key as usize].fetch_add(1, Ordering::SeqCst);
                            key * 3
                        });
                        assert_eq!(got, key * 3);
                    }
                });
            }
        });
        // Nothing is ever evicted or removed, so each key is loaded exactly once.
        assert!(calls.iter().all(|c| c.load(Ordering::SeqCst) == 1));
    });
}

#[test]
fn try_get_with_error_reaches_every_waiter_and_is_not_cached() {
    with_timeout(LIMIT, || {
        const CALLERS: usize = 6;
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(100)
            .record_stats()
            .build()
            .unwrap();
        let calls = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let barrier = Barrier::new(CALLERS);
        let results: Vec<Result<u64, Arc<String>>> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..CALLERS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        arrived.fetch_add(1, Ordering::SeqCst);
                        cache.try_get_with(1, || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            wait_for_arrivals(&arrived, CALLERS);
                            Err("backend down".to_string())
                        })
                    })
                })
                .collect();
            callers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let first = results[0].clone().unwrap_err();
        assert_eq!(*first, "backend down");
        for result in &results {
            assert!(
                Arc::ptr_eq(result.as_ref().unwrap_err(), &first),
                "one error, shared"
            );
        }
        assert!(!cache.contains_key(&1), "an error is not cached");
        assert_eq!(cache.stats().load_failures, 1);
        // The next call loads again.
        assert_eq!(cache.try_get_with(1, || Ok::<_, String>(5)), Ok(5));
        assert_eq!(cache.get(&1), Some(5));
    });
}

#[test]
fn try_get_with_other_error_type_waiter_loads_itself() {
    with_timeout(LIMIT, || {
        let cache: Cache<u32, u64> = Cache::new(100);
        let started = Barrier::new(2);
        let (release, released) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let cache = &cache;
            let started = &started;
            let loader = scope.spawn(move || {
                cache.try_get_with(1, || {
                    started.wait();
                    released.recv().unwrap();
                    Err(7u8)
                })
            });
            started.wait();
            let waiter = scope.spawn(move || cache.try_get_with(1, || Err::<u64, _>("mine")));
            std::thread::sleep(Duration::from_millis(50));
            release.send(()).unwrap();
            assert_eq!(*loader.join().unwrap().unwrap_err(), 7u8);
            // It could not take a `u8` error as its own: it ran its loader.
            assert_eq!(*waiter.join().unwrap().unwrap_err(), "mine");
        });
    });
}

#[test]
fn panicking_loader_releases_waiters_and_one_of_them_loads() {
    with_timeout(LIMIT, || {
        const CALLERS: usize = 6;
        let cache: Cache<u32, u64> = Cache::new(100);
        let calls = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let barrier = Barrier::new(CALLERS);
        let results: Vec<Result<u64, ()>> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..CALLERS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        arrived.fetch_add(1, Ordering::SeqCst);
                        std::panic::catch_unwind(AssertUnwindSafe(|| {
                            cache.get_with(3, || {
                                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                                    wait_for_arrivals(&arrived, CALLERS);
                                    panic!("loader failed (expected by the test)");
                                }
                                99
                            })
                        }))
                        .map_err(|_| ())
                    })
                })
                .collect();
            callers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the panic, then one retry");
        assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
        assert!(results.iter().flatten().all(|&v| v == 99));
        assert_eq!(cache.get(&3), Some(99));
        assert_eq!(cache.loads_in_flight(), 0, "the key is not left locked");
    });
}

#[test]
fn panicking_loader_alone_leaves_key_loadable() {
    let cache: Cache<u32, u64> = Cache::new(100);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        cache.get_with(1, || panic!("loader failed (expected by the test)"))
    }));
    assert!(result.is_err());
    assert_eq!(cache.loads_in_flight(), 0);
    assert_eq!(cache.get_with(1, || 4), 4);
}

#[test]
fn recursive_load_of_same_key_panics_instead_of_deadlocking() {
    with_timeout(LIMIT, || {
        let cache: Cache<u32, u64> = Cache::new(100);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            cache.get_with(1, || cache.get_with(1, || 2) + 1)
        }));
        assert!(result.is_err());
        assert_eq!(cache.loads_in_flight(), 0);
        // A loader may load other keys.
        assert_eq!(cache.get_with(1, || cache.get_with(2, || 2) + 1), 3);
        assert_eq!(cache.get(&2), Some(2));
    });
}

#[test]
fn optionally_get_with_none_is_not_cached_without_negative_ttl() {
    let cache: Cache<u32, u64> = Cache::new(100);
    let calls = AtomicUsize::new(0);
    for _ in 0..3 {
        let got = cache.optionally_get_with(1, || {
            calls.fetch_add(1, Ordering::SeqCst);
            None
        });
        assert_eq!(got, None);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(cache.is_empty());
    assert_eq!(cache.optionally_get_with(1, || Some(8)), Some(8));
    assert_eq!(cache.get(&1), Some(8));
}

#[test]
fn negative_ttl_caches_absence_until_it_expires_or_an_insert() {
    let clock = ManualClock::new();
    let cache: Cache<u32, u64> = Cache::builder()
        .max_capacity(100)
        .negative_ttl(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    let calls = AtomicUsize::new(0);
    let lookup = || {
        cache.optionally_get_with(1, || {
            calls.fetch_add(1, Ordering::SeqCst);
            None
        })
    };
    assert_eq!(lookup(), None);
    clock.advance(Duration::from_secs(4));
    assert_eq!(lookup(), None);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the absence is cached for 5 s"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(lookup(), None);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "after 5 s the loader runs again"
    );
    assert!(cache.is_empty(), "absence takes no room in the cache");
    // An insert ends the cached absence at once.
    cache.insert(1, 10);
    assert_eq!(lookup(), Some(10));
    cache.remove(&1);
    assert_eq!(lookup(), None);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // So does invalidate_all.
    cache.invalidate_all();
    assert_eq!(lookup(), None);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // get_with ignores cached absence: it needs a value.
    assert_eq!(cache.get_with(1, || 11), 11);
}

#[test]
fn negative_ttl_absence_found_during_an_insert_is_not_cached() {
    let cache: Cache<u32, u64> = Cache::builder()
        .max_capacity(100)
        .negative_ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    // The loader finds nothing, but the key is inserted before the load ends: the absence
    // must not be cached over the value, or outlive it once it is removed.
    let found = cache.optionally_get_with(1, || {
        cache.insert(1, 10);
        None
    });
    assert_eq!(found, None);
    assert_eq!(cache.get(&1), Some(10));
    cache.remove(&1);
    assert_eq!(cache.optionally_get_with(1, || Some(11)), Some(11));
}

#[test]
fn optionally_get_with_absence_reaches_waiters() {
    with_timeout(LIMIT, || {
        const CALLERS: usize = 4;
        let cache: Cache<u32, u64> = Cache::new(100);
        let calls = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let barrier = Barrier::new(CALLERS);
        let results: Vec<Option<u64>> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..CALLERS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        arrived.fetch_add(1, Ordering::SeqCst);
                        cache.optionally_get_with(1, || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            wait_for_arrivals(&arrived, CALLERS);
                            None
                        })
                    })
                })
                .collect();
            callers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(results, vec![None; CALLERS]);
    });
}

#[test]
fn listener_may_use_the_cache_during_a_load() {
    with_timeout(LIMIT, || {
        // The load of key 2 evicts key 1; the listener then loads key 2 itself. It runs after
        // the load's waiters are released, so it does not wait for the load that triggers it.
        let slot: Arc<Mutex<Option<Cache<u32, u64>>>> = Arc::default();
        let seen = Arc::new(AtomicUsize::new(0));
        let (handle, counter) = (slot.clone(), seen.clone());
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(1)
            .shards(1)
            .eviction_listener(move |_, _, _| {
                let cache = handle.lock().unwrap().clone();
                if let Some(cache) = cache {
                    if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                        cache.get_with(2, || 0);
                    }
                }
            })
            .build()
            .unwrap();
        *slot.lock().unwrap() = Some(cache.clone());
        cache.insert(1, 1);
        assert_eq!(cache.get_with(2, || 2), 2);
        assert!(seen.load(Ordering::SeqCst) >= 1);
        slot.lock().unwrap().take();
    });
}

/// A cache with a maintenance thread whose listener reports each removal on the channel.
fn paced_cache(ttl: Duration) -> (Cache<u32, u32>, mpsc::Receiver<(u32, RemovalCause)>) {
    let (heard, hear) = mpsc::channel();
    let heard = Mutex::new(heard);
    let cache = Cache::builder()
        .max_capacity(100)
        .time_to_live(ttl)
        .scheduler(Scheduler::Thread)
        .eviction_listener(move |k: &u32, _: &u32, cause| {
            heard.lock().unwrap().send((*k, cause)).unwrap();
        })
        .build()
        .unwrap();
    (cache, hear)
}

#[test]
fn scheduler_thread_expires_entries_without_traffic() {
    with_timeout(LIMIT, || {
        let ttl = Duration::from_millis(100);
        let (cache, hear) = paced_cache(ttl);
        let inserted = Instant::now();
        for key in 0..3 {
            cache.insert(key, key);
        }
        let expired: Vec<(u32, RemovalCause)> = (0..3)
            .map(|_| {
                hear.recv_timeout(common::paced(Duration::from_secs(10)))
                    .expect("expired by the scheduler")
            })
            .collect();
        common::assert_expired_by_scheduler(expired, inserted, ttl, cache.len());
    });
}

#[test]
fn scheduler_thread_stops_when_last_handle_dropped() {
    with_timeout(LIMIT, || {
        let cache: Cache<u32, u32> = Cache::builder()
            .max_capacity(100)
            .time_to_live(Duration::from_secs(3_600))
            .scheduler(Scheduler::Thread)
            .build()
            .unwrap();
        cache.insert(1, 1);
        let alive = cache.scheduler_alive().expect("a scheduler thread");
        assert!(alive.load(Ordering::SeqCst));
        let clone = cache.clone();
        drop(cache);
        std::thread::sleep(Duration::from_millis(20));
        assert!(alive.load(Ordering::SeqCst), "a handle is left");
        drop(clone);
        while alive.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
    });
}

#[test]
fn no_scheduler_by_default() {
    let cache: Cache<u32, u32> = Cache::new(10);
    assert!(cache.scheduler_alive().is_none());
}

/// A value whose clone waits until another thread clones one too.
struct Rendezvous(Arc<Barrier>);

impl Clone for Rendezvous {
    fn clone(&self) -> Self {
        self.0.wait();
        Self(self.0.clone())
    }
}

#[test]
fn get_concurrent_readers_share_the_shard() {
    // `get` clones the value while it holds the shard's lock. Both clones must be in progress
    // at once to pass the barrier, so this hangs (and times out) if reads are exclusive.
    with_timeout(LIMIT, || {
        let cache: Cache<u32, Rendezvous> =
            Cache::builder().max_capacity(10).shards(1).build().unwrap();
        cache.insert(1, Rendezvous(Arc::new(Barrier::new(2))));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let cache = cache.clone();
                std::thread::spawn(move || cache.get(&1).is_some())
            })
            .collect();
        for reader in readers {
            assert!(reader.join().unwrap());
        }
    });
}

#[test]
fn scheduler_thread_insert_due_sooner_wakes_sleeping_thread() {
    // The thread first sleeps towards an hour-long deadline (capped at MAX_PARK, 1 s); a
    // 50 ms entry written meanwhile must wake it well before then.
    with_timeout(LIMIT, || {
        let (cache, hear) = paced_cache(Duration::from_secs(3_600));
        cache.insert(1, 1);
        std::thread::sleep(Duration::from_millis(20));
        let written = Instant::now();
        cache.insert_with_ttl(2, 2, Duration::from_millis(50));
        let event = hear
            .recv_timeout(common::paced(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(event, (2, RemovalCause::Expired));
        assert!(
            written.elapsed() < Duration::from_millis(900),
            "woken early, not at MAX_PARK"
        );
    });
}

/// An expiry under which a read leaves the entry 100 ms to live, whatever it had.
struct ShortOnRead;

impl cortado::expiry::Expiry<u32, u32> for ShortOnRead {
    fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
        Some(Duration::from_secs(3_600))
    }

    fn expire_after_read(&self, _: &u32, _: &u32, _: Option<Duration>) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }
}

#[test]
fn scheduler_thread_read_shortening_deadline_expires_entry_promptly() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(100)
        .expire_after(ShortOnRead)
        .scheduler(Scheduler::Thread)
        .eviction_listener(move |k: &u32, _: &u32, cause| {
            let _ = tx.lock().unwrap().send((*k, cause));
        })
        .build()
        .unwrap();
    cache.insert(1, 1);
    // The hour from the insert becomes 100 ms: the sleeping scheduler must hear of it.
    assert_eq!(cache.get(&1), Some(1));
    assert_eq!(
        rx.recv_timeout(common::paced(Duration::from_secs(5))).ok(),
        Some((1, RemovalCause::Expired))
    );
    assert_eq!(cache.len(), 0);
}

#[test]
fn panicking_loader_counts_one_load_failure() {
    let cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(100)
        .record_stats()
        .build()
        .unwrap();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        cache.get_with(1, || panic!("the loader fails"))
    }));
    assert!(outcome.is_err());
    let stats = cache.stats();
    assert_eq!(
        (stats.misses, stats.load_successes, stats.load_failures),
        (1, 0, 1)
    );
    assert_eq!(cache.get_with(1, || 7), 7);
    assert_eq!(cache.stats().load_successes, 1);
}

// A key whose `Hash` pauses the thread at a chosen call, to force a caller to join a load only
// after that load has finished.
thread_local! {
    static PAUSE_AT_HASH: std::cell::RefCell<Option<(usize, Arc<Barrier>)>> =
        const { std::cell::RefCell::new(None) };
    static HASHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[derive(Clone, PartialEq, Eq, Debug)]
struct PausingKey(u32);

impl std::hash::Hash for PausingKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let n = HASHES.with(|h| {
            h.set(h.get() + 1);
            h.get()
        });
        let pause = PAUSE_AT_HASH.with(|p| {
            let mut p = p.borrow_mut();
            match p.as_ref() {
                Some((at, _)) if *at == n => p.take().map(|(_, barrier)| barrier),
                _ => None,
            }
        });
        if let Some(barrier) = pause {
            barrier.wait(); // paused
            barrier.wait(); // released
        }
        self.0.hash(state);
    }
}

/// Caller A loads `None` (cached as an absence); caller B misses and checks for a cached
/// absence before A finishes, and joins only after: like a value, the absence A left must be
/// found by B's second look, without B's loader running.
#[test]
fn optionally_get_with_late_joiner_finds_absence_just_cached() {
    let calls = with_timeout(LIMIT, || {
        let cache: Cache<PausingKey, u32> = Cache::builder()
            .max_capacity(100)
            .shards(1)
            .negative_ttl(Duration::from_secs(60))
            .build()
            .unwrap();
        let calls = AtomicUsize::new(0);
        let (finish_a, pause_b) = (Barrier::new(2), Arc::new(Barrier::new(2)));
        std::thread::scope(|s| {
            let a = s.spawn(|| {
                cache.optionally_get_with(PausingKey(1), || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    finish_a.wait();
                    None
                })
            });
            while cache.loads_in_flight() == 0 {
                std::thread::yield_now();
            }
            let b = s.spawn(|| {
                // Hashes: the lookup, the absence check, then the join of the load.
                PAUSE_AT_HASH.with(|p| *p.borrow_mut() = Some((3, pause_b.clone())));
                cache.optionally_get_with(PausingKey(1), || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Some(6)
                })
            });
            pause_b.wait(); // B has missed and found no absence yet
            finish_a.wait();
            assert_eq!(a.join().unwrap(), None);
            pause_b.wait();
            assert_eq!(b.join().unwrap(), None, "B must find the absence A cached");
        });
        calls.load(Ordering::SeqCst)
    });
    assert_eq!(calls, 1);
}

/// Spawns a `get_with(1)` whose loader waits at `started`, then at `release`, and returns 10.
fn spawn_paused_load<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    cache: &'s Cache<u32, u32>,
    started: &'s Barrier,
    release: &'s Barrier,
) -> std::thread::ScopedJoinHandle<'s, u32> {
    s.spawn(move || {
        cache.get_with(1, || {
            started.wait();
            release.wait();
            10
        })
    })
}

/// A cache of 100 entries with stats, whose listener logs the causes with which the value 10
/// (what `spawn_paused_load`'s loader returns) is removed.
fn hearing_loaded_value() -> (Cache<u32, u32>, Arc<Mutex<Vec<RemovalCause>>>) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let cache = Cache::builder()
        .max_capacity(100)
        .record_stats()
        .eviction_listener(move |_, v: &u32, cause| {
            if *v == 10 {
                log.lock().unwrap().push(cause);
            }
        })
        .build()
        .unwrap();
    (cache, heard)
}

/// Runs `get_with(1)` with a loader that returns 10, doing `write` on the cache while the loader
/// runs; returns what `get_with` returned, the value then cached for key 1, what the listener
/// heard of the loaded value, and the load successes counted.
fn write_during_load(
    write: impl FnOnce(&Cache<u32, u32>) + Send + 'static,
) -> (u32, Option<u32>, Vec<RemovalCause>, u64) {
    with_timeout(LIMIT, move || {
        let (cache, heard) = hearing_loaded_value();
        let (started, release) = (Barrier::new(2), Barrier::new(2));
        let loaded = std::thread::scope(|s| {
            let loader = spawn_paused_load(s, &cache, &started, &release);
            started.wait();
            write(&cache);
            release.wait();
            loader.join().unwrap()
        });
        let held = cache.get(&1);
        let heard = heard.lock().unwrap().clone();
        (loaded, held, heard, cache.stats().load_successes)
    })
}

#[test]
fn write_during_load_wins_over_loaded_value() {
    use RemovalCause::{Explicit, Replaced};
    type Case = (
        &'static str,
        fn(&Cache<u32, u32>),
        Option<u32>,
        &'static [RemovalCause],
    );
    let cases: [Case; 7] = [
        ("no write", |_| {}, Some(10), &[]),
        ("insert of another key", |c| c.insert(2, 2), Some(10), &[]),
        (
            "remove of another key",
            |c| {
                c.remove(&2);
            },
            Some(10),
            &[],
        ),
        ("insert", |c| c.insert(1, 20), Some(20), &[Replaced]),
        (
            "remove",
            |c| {
                c.remove(&1);
            },
            None,
            &[Explicit],
        ),
        ("invalidate_all", |c| c.invalidate_all(), None, &[Explicit]),
        (
            "insert, then remove",
            |c| {
                c.insert(1, 20);
                c.remove(&1);
            },
            None,
            &[Replaced],
        ),
    ];
    for (write, run, cached, causes) in cases {
        let (loaded, held, heard, successes) = write_during_load(run);
        assert_eq!(loaded, 10, "{write}: the caller gets its loader's value");
        assert_eq!(held, cached, "{write}: the value cached afterwards");
        assert_eq!(
            heard, causes,
            "{write}: what the listener heard of the loaded value"
        );
        assert_eq!(successes, 1, "{write}: the load still counts as a success");
    }
}

/// A compute of a key whose load is in flight (past the loader's look) waits for the load and
/// sees its value, as in Caffeine: a read-modify-write cannot lose the loaded value. Its result
/// is what stays cached, and a `Put` or `Remove` reports the loaded value as replaced or
/// removed, once, since it really was cached in between.
#[test]
fn compute_during_load_waits_for_it_and_sees_loaded_value() {
    use RemovalCause::{Explicit, Replaced};
    type Case = (
        &'static str,
        fn(Option<&u32>) -> Compute<u32>,
        Option<u32>,
        &'static [RemovalCause],
    );
    let cases: [Case; 3] = [
        (
            "Put",
            |v| Compute::Put(v.map_or(1, |v| v + 1)),
            Some(11),
            &[Replaced],
        ),
        ("Remove", |_| Compute::Remove, None, &[Explicit]),
        ("Nop", |_| Compute::Nop, Some(10), &[]),
    ];
    for (op, f, cached, causes) in cases {
        let (loaded, seen, held, after, heard) = with_timeout(LIMIT, move || {
            let (cache, heard) = hearing_loaded_value();
            let (started, release) = (Barrier::new(2), Barrier::new(2));
            let (seen, held, loaded) = std::thread::scope(|s| {
                let loader = spawn_paused_load(s, &cache, &started, &release);
                started.wait();
                let cache = &cache;
                let (entered, computing) = mpsc::channel();
                let writer = s.spawn(move || {
                    let mut seen = None;
                    let held = cache.entry(1).and_compute_with(|v| {
                        seen = Some(v.copied());
                        f(v)
                    });
                    entered.send(()).unwrap();
                    (seen, held)
                });
                assert!(
                    computing.recv_timeout(Duration::from_millis(200)).is_err(),
                    "{op}: the compute must wait for the load in flight"
                );
                release.wait();
                let loaded = loader.join().unwrap();
                let (seen, held) = writer.join().unwrap();
                (seen, held, loaded)
            });
            // A caller after a removal loads afresh.
            let after = cache.get_with(1, || 20);
            let heard = heard.lock().unwrap().clone();
            (loaded, seen, held, after, heard)
        });
        assert_eq!(loaded, 10, "{op}: the loader's caller gets its value");
        assert_eq!(seen, Some(Some(10)), "{op}: `f` sees the loaded value");
        assert_eq!(held, cached, "{op}: the value held after the compute");
        assert_eq!(
            after,
            cached.unwrap_or(20),
            "{op}: what a later caller gets"
        );
        assert_eq!(
            heard, causes,
            "{op}: what the listener heard of the loaded value"
        );
    }
}

/// A compute of its own key from inside a loader could only wait for itself: it panics, and
/// the panic releases the load like any loader panic.
#[test]
fn compute_own_key_inside_loader_panics_instead_of_hanging() {
    let cache: Cache<u32, u32> = Cache::new(100);
    let outcome = with_timeout(LIMIT, {
        let cache = cache.clone();
        move || {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                cache.get_with(1, || {
                    cache.entry(1).and_compute_with(|_| Compute::Put(5));
                    10
                })
            }))
        }
    });
    let panic = outcome.expect_err("the compute must panic");
    let message = panic.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(
        message.contains("its own key"),
        "unexpected panic: {message:?}"
    );
    assert_eq!(cache.get_with(1, || 7), 7, "the key is not left locked");
    // A compute of another key from inside a loader does not wait.
    assert_eq!(
        cache.get_with(2, || {
            cache.entry(3).and_compute_with(|_| Compute::Put(3));
            2
        }),
        2
    );
    assert_eq!(cache.get(&3), Some(3));
}

// A key whose `Clone` runs a hook set for the thread, once: a loader clones its key when it
// joins the load (before it locks the shard's map of loads in flight), after its miss and
// before its second look at the cache.
thread_local! {
    static ON_CLONE: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { std::cell::RefCell::new(None) };
}

#[derive(PartialEq, Eq, Hash, Debug)]
struct HookedKey(u32);

impl Clone for HookedKey {
    fn clone(&self) -> Self {
        if let Some(hook) = ON_CLONE.with(|h| h.borrow_mut().take()) {
            hook();
        }
        Self(self.0)
    }
}

/// A removal that holds the shard's lock while a caller joins the load (before the loader's
/// second look at the cache), and ends before that look, comes before the load (the loader
/// runs after the removal returned): the loaded value is cached, and the listener hears
/// nothing of it. (The key is cloned before the load enters the map, so the removal runs
/// before the join; a removal between the join and the look is left alone by the unit test
/// `supersede_marks_only_that_keys_load_in_flight`.)
#[test]
fn remove_before_loaders_look_leaves_loaded_value_cached() {
    let (loaded, held, heard) = with_timeout(LIMIT, || {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        let cache: Cache<HookedKey, u32> = Cache::builder()
            .max_capacity(100)
            .eviction_listener(move |_, v: &u32, cause| log.lock().unwrap().push((*v, cause)))
            .build()
            .unwrap();
        let (other_started, release_other) = (Barrier::new(2), Barrier::new(2));
        let (start_write, write_started) = mpsc::channel::<()>();
        let (locked, under_lock) = mpsc::channel::<()>();
        let loaded = std::thread::scope(|s| {
            // Another key's load in flight, so that writers look for a load to supersede.
            let other = s.spawn(|| {
                cache.get_with(HookedKey(2), || {
                    other_started.wait();
                    release_other.wait();
                    2
                })
            });
            other_started.wait();
            let cache = &cache;
            let writer = s.spawn(move || {
                write_started.recv().unwrap();
                cache.entry(HookedKey(1)).and_compute_with(move |_| {
                    locked.send(()).unwrap();
                    Compute::Remove
                })
            });
            // While joining the load of key 1 (its key's clone, before the load enters the
            // map), the loader lets the removal take the shard's lock; its second look at the
            // cache then waits for the removal to end.
            ON_CLONE.with(|h| {
                *h.borrow_mut() = Some(Box::new(move || {
                    start_write.send(()).unwrap();
                    under_lock.recv().unwrap();
                }));
            });
            let loaded = cache.get_with(HookedKey(1), || 10);
            assert_eq!(writer.join().unwrap(), None);
            release_other.wait();
            assert_eq!(other.join().unwrap(), 2);
            loaded
        });
        let held = cache.get(&HookedKey(1));
        let heard = heard.lock().unwrap().clone();
        (loaded, held, heard)
    });
    assert_eq!(loaded, 10);
    assert_eq!(held, Some(10), "the removal ended before the loader looked");
    assert_eq!(heard, vec![], "nothing was removed after the load");
}

/// A write while the loader finds nothing that leaves the key absent (`invalidate_all`, an
/// insert then a removal) wins over the absence as over a loaded value: it is not cached, so
/// the next `optionally_get_with` loads again.
#[test]
fn negative_ttl_absence_found_during_a_removing_write_is_not_cached() {
    type Case = (&'static str, fn(&Cache<u32, u64>));
    let cases: [Case; 2] = [
        ("invalidate_all", |c| c.invalidate_all()),
        ("insert, then remove", |c| {
            c.insert(1, 10);
            c.remove(&1);
        }),
    ];
    for (write, run) in cases {
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(100)
            .negative_ttl(Duration::from_secs(60))
            .build()
            .unwrap();
        let found = cache.optionally_get_with(1, || {
            run(&cache);
            None
        });
        assert_eq!(found, None, "{write}: the caller gets its loader's answer");
        assert_eq!(
            cache.optionally_get_with(1, || Some(11)),
            Some(11),
            "{write}: no absence is cached over the write"
        );
    }
}

/// A caller that misses after a removal superseded a load in flight comes after the removal,
/// which comes after that load: it must not get the superseded value (loaded before the
/// removal), but load afresh, as it would if the write had waited for the load.
#[test]
fn get_with_after_removal_during_load_loads_afresh() {
    type Case = (&'static str, fn(&Cache<u32, u32>));
    let cases: [Case; 2] = [
        ("remove", |c| {
            c.remove(&1);
        }),
        ("invalidate_all", |c| c.invalidate_all()),
    ];
    for (write, run) in cases {
        let (late, held) = with_timeout(LIMIT, move || {
            let cache: Cache<u32, u32> = Cache::new(100);
            let (started, release) = (Barrier::new(2), Barrier::new(2));
            std::thread::scope(|s| {
                let loader = spawn_paused_load(s, &cache, &started, &release);
                started.wait();
                run(&cache);
                let (done, late) = mpsc::channel();
                let cache = &cache;
                s.spawn(move || done.send(cache.get_with(1, || 20)).unwrap());
                // Released early if the late caller loads by itself, as it should; else
                // (joined to the superseded load) after a while.
                let early = late.recv_timeout(Duration::from_millis(200)).ok();
                release.wait();
                assert_eq!(loader.join().unwrap(), 10);
                let late = early.unwrap_or_else(|| late.recv().unwrap());
                (late, cache.get(&1))
            })
        });
        assert_eq!(late, 20, "{write}: the late caller's own load");
        assert_eq!(held, Some(20), "{write}: the late load is cached");
    }
}

/// Loads racing writes on two keys, with one writer. Values are unique and numbered in the
/// order they are made (a loader numbers its value once it runs, after its look at the cache),
/// so the writer can check exactly that no load outlives a write: right after its insert the
/// key holds that value (no loaded value cached over it), and right after a removal the key
/// holds, and `get_with` returns, only values loaded after it (no value loaded before it, cached
/// or shared by a superseded load). Every value is then present or reported once, and the stats
/// agree with the listener.
#[test]
fn stress_loads_racing_writes_never_outlive_a_write() {
    with_timeout(LIMIT, || {
        const KEYS: u64 = 2;
        const WRITES: u64 = 2_000;
        let heard: Arc<Mutex<Heard>> = Arc::default();
        let cache: Cache<u64, u64> = Cache::builder()
            .max_capacity(100)
            .eviction_listener(Heard::recorder(&heard))
            .record_stats()
            .build()
            .unwrap();
        let next = AtomicU64::new(1);
        let stop = AtomicBool::new(false);
        let fresh = || next.fetch_add(1, Ordering::SeqCst);
        let load = |made: &mut Vec<u64>| {
            let v = fresh();
            made.push(v);
            std::thread::yield_now(); // a write may come now
            v
        };
        let (made, inserted): (Vec<u64>, usize) = std::thread::scope(|s| {
            let loaders: Vec<_> = (0..2)
                .map(|t| {
                    let (cache, stop) = (&cache, &stop);
                    s.spawn(move || {
                        let mut rng = Rng::new(t + 1);
                        let mut made = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            cache.get_with(rng.next_u64() % KEYS, || load(&mut made));
                            // Between calls too: a loader that finds the value cached would
                            // otherwise spin through its whole time slice, and on one busy core
                            // the writer got so little time that the test took 17s (of the 20s
                            // limit) with two other busy processes on its core, and timed out
                            // with three.
                            std::thread::yield_now();
                        }
                        made
                    })
                })
                .collect();
            let mut rng = Rng::new(99);
            let mut made = Vec::new();
            let mut inserted = 0;
            // On a loaded machine each yield can cost the writer a time slice of every other
            // busy thread on its core: it stops early rather than run into the limit.
            let budget = Instant::now() + LIMIT / 4;
            for _ in 0..WRITES {
                if Instant::now() > budget {
                    break;
                }
                let key = rng.next_u64() % KEYS;
                let op = rng.next_u64() % 5;
                if op < 2 {
                    let v = fresh();
                    made.push(v);
                    inserted += 1;
                    if op == 0 {
                        cache.insert(key, v);
                    } else {
                        cache.entry(key).and_compute_with(|_| Compute::Put(v));
                    }
                    std::thread::yield_now();
                    assert_eq!(cache.get(&key), Some(v), "a load outlived an insert");
                } else {
                    let before = fresh();
                    match op {
                        2 => drop(cache.remove(&key)),
                        3 => drop(cache.entry(key).and_compute_with(|_| Compute::Remove)),
                        _ => cache.invalidate_all(),
                    }
                    if let Some(v) = cache.get(&key) {
                        assert!(v > before, "{v} loaded before a removal is cached");
                    }
                    let v = cache.get_with(key, || load(&mut made));
                    assert!(v > before, "{v} loaded before a removal is returned");
                }
            }
            stop.store(true, Ordering::Relaxed);
            for loader in loaders {
                made.extend(loader.join().unwrap());
            }
            (made, inserted)
        });
        assert_eq!(cache.loads_in_flight(), 0);
        let present: HashMap<u64, u64> = cache.iter().map(|(k, v)| (v, k)).collect();
        let heard = heard.lock().unwrap();
        let (mut replaced, mut explicit) = (0, 0);
        for value in &made {
            let reported = heard.causes.get(value).map_or(&[][..], Vec::as_slice);
            match (present.contains_key(value), reported) {
                (true, []) => {}
                (false, [RemovalCause::Replaced]) => replaced += 1,
                (false, [RemovalCause::Explicit]) => explicit += 1,
                (at, causes) => panic!("value {value}: present {at}, heard {causes:?}"),
            }
        }
        assert_eq!(heard.causes.len() + present.len(), made.len());
        let stats = cache.stats();
        assert_eq!(
            (stats.replacements, stats.removals_explicit),
            (replaced, explicit)
        );
        assert_eq!(stats.load_successes, (made.len() - inserted) as u64);
    });
}

/// A compute waiting for a load goes on once a write supersedes that load (the load has then
/// as good as ended, and a caller after the write does not wait either): it sees the write.
#[test]
fn compute_waiting_for_load_goes_on_when_a_write_supersedes_it() {
    let (outcome, loaded) = with_timeout(LIMIT, || {
        let cache: Cache<u32, u32> = Cache::new(100);
        let (started, release) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            let loader = spawn_paused_load(s, &cache, &started, &release);
            started.wait();
            let (sent, computed) = mpsc::channel();
            let cache = &cache;
            s.spawn(move || {
                let held = cache
                    .entry(1)
                    .and_compute_with(|v| Compute::Put(v.map_or(0, |v| v + 1)));
                sent.send(held).unwrap();
            });
            assert!(
                computed.recv_timeout(Duration::from_millis(200)).is_err(),
                "the compute waits for the load"
            );
            cache.insert(1, 20);
            let outcome = computed.recv_timeout(common::paced(Duration::from_secs(5)));
            release.wait();
            (outcome, loader.join().unwrap())
        })
    });
    assert_eq!(loaded, 10);
    assert_eq!(
        outcome,
        Ok(Some(21)),
        "the compute saw the insert, without the load"
    );
}

/// Two loaders that compute each other's keys do not wait for each other: inside a loader a
/// compute does not wait for another key's load, and supersedes it instead.
#[test]
fn loaders_computing_each_others_key_do_not_hang() {
    let (a, b, cache) = with_timeout(LIMIT, || {
        let cache: Cache<u32, u32> = Cache::new(100);
        let both_looked = Barrier::new(2);
        let (a, b) = std::thread::scope(|s| {
            let spawn = |mine: u32, other: u32| {
                let (cache, both_looked) = (&cache, &both_looked);
                s.spawn(move || {
                    cache.get_with(mine, || {
                        both_looked.wait();
                        cache
                            .entry(other)
                            .and_compute_with(|_| Compute::Put(other * 100));
                        mine
                    })
                })
            };
            let (a, b) = (spawn(1, 2), spawn(2, 1));
            (a.join().unwrap(), b.join().unwrap())
        });
        (a, b, cache)
    });
    assert_eq!((a, b), (1, 2), "each caller gets its loader's value");
    // Each compute came after the other key's look: its `Put` wins over that load.
    assert_eq!((cache.get(&1), cache.get(&2)), (Some(100), Some(200)));
}
