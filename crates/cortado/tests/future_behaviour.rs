//! `future::Cache` on tokio's multi-thread runtime: loaders coalesce across tasks, errors and
//! absence reach every waiter, and a cancelled or panicking loader releases its waiters.
//!
//! Every test runs under `tokio::time::timeout`, so a waiter that is never woken fails the test
//! instead of hanging it.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cortado::future::Cache;
use cortado::sync::Compute;
use cortado::time::ManualClock;
use tokio::sync::{Barrier, Notify};

const LIMIT: Duration = Duration::from_secs(20);

/// Spawns a `get_with(1)` whose loader, if it runs, signals `started`, waits for `release`
/// and returns `value`.
fn spawn_paused_load(
    cache: &Cache<u32, u64>,
    started: &Arc<Notify>,
    release: &Arc<Notify>,
    value: u64,
) -> tokio::task::JoinHandle<u64> {
    let (cache, started, release) = (cache.clone(), started.clone(), release.clone());
    tokio::spawn(async move {
        cache
            .get_with(1, async {
                started.notify_one();
                release.notified().await;
                value
            })
            .await
    })
}

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("timed out: a waiter was never woken")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_with_coalesces_across_tasks() {
    within(async {
        const TASKS: usize = 16;
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(100)
            .record_stats()
            .build()
            .unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (cache, calls, barrier) = (cache.clone(), calls.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    cache
                        .get_with(1, async {
                            calls.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            7
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(cache.get(&1), Some(7));
        assert_eq!(cache.stats().load_successes, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_loader_releases_waiter_which_loads() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let started = Arc::new(Notify::new());
        // The first caller's loader never finishes; its caller gives up after 200 ms.
        let first = {
            let (cache, started) = (cache.clone(), started.clone());
            tokio::spawn(async move {
                tokio::time::timeout(
                    Duration::from_millis(200),
                    cache.get_with(1, async {
                        started.notify_one();
                        std::future::pending::<u64>().await
                    }),
                )
                .await
            })
        };
        started.notified().await;
        assert_eq!(cache.as_sync().loads_in_flight(), 1);
        // This caller joins the load in flight, so its own loader runs only once that load is
        // dropped.
        let loads = Arc::new(AtomicUsize::new(0));
        let counted = loads.clone();
        let second = cache.get_with(1, async move {
            counted.fetch_add(1, Ordering::SeqCst);
            2
        });
        assert_eq!(second.await, 2);
        assert!(
            first.await.unwrap().is_err(),
            "the first caller was cancelled"
        );
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert_eq!(cache.get(&1), Some(2));
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_loading_task_releases_every_waiter() {
    within(async {
        const WAITERS: usize = 5;
        let cache: Cache<u32, u64> = Cache::new(100);
        let started = Arc::new(Notify::new());
        let loader = {
            let (cache, started) = (cache.clone(), started.clone());
            tokio::spawn(async move {
                cache
                    .get_with(1, async {
                        started.notify_one();
                        std::future::pending::<u64>().await
                    })
                    .await
            })
        };
        started.notified().await;
        let loads = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..WAITERS)
            .map(|i| {
                let (cache, loads) = (cache.clone(), loads.clone());
                tokio::spawn(async move {
                    cache
                        .get_with(1, async move {
                            loads.fetch_add(1, Ordering::SeqCst);
                            10 + i as u64
                        })
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        loader.abort();
        assert!(loader.await.unwrap_err().is_cancelled());
        let results: Vec<u64> = futures_join(waiters).await;
        // One waiter loads after the abort; the others share its value.
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
    })
    .await;
}

async fn futures_join<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(task.await.unwrap());
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_loader_task_releases_waiters() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let started = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        let loader = {
            let (cache, started, release) = (cache.clone(), started.clone(), release.clone());
            tokio::spawn(async move {
                cache
                    .get_with(1, async {
                        started.notify_one();
                        release.notified().await;
                        panic!("loader failed (expected by the test)")
                    })
                    .await
            })
        };
        started.notified().await;
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.get_with(1, async { 3 }).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        release.notify_one();
        assert!(loader.await.unwrap_err().is_panic());
        assert_eq!(waiter.await.unwrap(), 3);
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn try_get_with_error_reaches_every_task_and_is_not_cached() {
    within(async {
        const TASKS: usize = 8;
        let cache: Cache<u32, u64> = Cache::new(100);
        let calls = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (cache, calls, barrier) = (cache.clone(), calls.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    cache
                        .try_get_with(1, async {
                            calls.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            Err::<u64, _>("down".to_string())
                        })
                        .await
                })
            })
            .collect();
        let results = futures_join(tasks).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let first = results[0].clone().unwrap_err();
        assert!(results
            .iter()
            .all(|r| Arc::ptr_eq(r.as_ref().unwrap_err(), &first)));
        assert!(!cache.contains_key(&1));
        assert_eq!(
            cache.try_get_with(1, async { Ok::<_, String>(4) }).await,
            Ok(4)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optionally_get_with_negative_ttl_caches_absence() {
    within(async {
        let clock = ManualClock::new();
        let cache: Cache<u32, u64> = Cache::builder()
            .max_capacity(100)
            .negative_ttl(Duration::from_secs(5))
            .clock(clock.clone())
            .build()
            .unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let lookup = || {
            let calls = calls.clone();
            cache.optionally_get_with(1, async move {
                calls.fetch_add(1, Ordering::SeqCst);
                None
            })
        };
        assert_eq!(lookup().await, None);
        assert_eq!(lookup().await, None);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        clock.advance(Duration::from_secs(5));
        assert_eq!(lookup().await, None);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        cache.insert(1, 9);
        assert_eq!(lookup().await, Some(9));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entry_api_and_shared_sync_view() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        assert_eq!(cache.entry(1).or_insert_with(async { 5 }).await, 5);
        assert_eq!(cache.entry(1).or_insert_with(async { 6 }).await, 5);
        let held = cache
            .entry(1)
            .and_compute_with(|v| Compute::Put(v.copied().unwrap_or(0) * 10))
            .await;
        assert_eq!(held, Some(50));
        assert_eq!(cache.as_sync().get(&1), Some(50));
        cache.as_sync().insert(2, 2);
        assert_eq!(cache.get(&2), Some(2));
        assert_eq!(cache.len(), 2);
        cache.invalidate_all();
        assert!(cache.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn single_threaded_runtime_waiters_are_woken() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (a, b) = tokio::join!(
            cache.get_with(1, async {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                1
            }),
            cache.get_with(1, async { 2 }),
        );
        assert_eq!((a, b), (1, 1), "the second caller waited for the first");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waiter_does_not_disturb_the_load() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let started = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        let loader = spawn_paused_load(&cache, &started, &release, 5);
        started.notified().await;
        let gave_up = tokio::time::timeout(
            Duration::from_millis(50),
            cache.get_with(1, async { unreachable!("a load is in flight") }),
        )
        .await;
        assert!(gave_up.is_err(), "the waiter was cancelled");
        release.notify_one();
        assert_eq!(loader.await.unwrap(), 5);
        assert_eq!(cache.get(&1), Some(5));
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
    })
    .await;
}

/// A minimal executor with no runtime behind it: polls on the calling thread and parks until
/// the future's waker unparks it.
fn plain_block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn get_with_without_tokio_coalesces_and_wakes_waiters() {
    // Two plain threads, no runtime: the second caller waits for the first caller's load and
    // is woken through its own waker when the value is stored.
    let cache: Cache<u32, u64> = Cache::new(100);
    let loads = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(std::sync::Barrier::new(2));
    let loader = {
        let (cache, loads, started) = (cache.clone(), loads.clone(), started.clone());
        std::thread::spawn(move || {
            plain_block_on(cache.get_with(7, async {
                loads.fetch_add(1, Ordering::SeqCst);
                started.wait();
                std::thread::sleep(Duration::from_millis(50));
                70
            }))
        })
    };
    started.wait();
    let waited = plain_block_on(cache.get_with(7, async {
        loads.fetch_add(1, Ordering::SeqCst);
        71
    }));
    assert_eq!(loader.join().unwrap(), 70);
    assert_eq!(waited, 70, "the waiter got the first load's value");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

/// A waiter that gives up (its future dropped: a timeout, a `select!`) takes its waker with it,
/// so a load that never ends does not keep alive every task that stopped waiting for it; one
/// still waiting keeps its own and is woken.
#[test]
fn dropped_waiters_release_their_wakers() {
    struct Counted {
        live: Arc<AtomicUsize>,
        woken: Arc<AtomicUsize>,
    }
    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.woken.fetch_add(1, Ordering::SeqCst);
        }
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let (live, woken) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let new_waker = || {
        live.fetch_add(1, Ordering::SeqCst);
        std::task::Waker::from(Arc::new(Counted {
            live: live.clone(),
            woken: woken.clone(),
        }))
    };
    let cache: Cache<u32, u64> = Cache::new(100);
    let (release, released) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let loader_waker = new_waker();
    let mut cx = std::task::Context::from_waker(&loader_waker);
    let (gate, count) = (release.clone(), released.clone());
    let mut loader = Box::pin(cache.get_with(1, async move {
        gate.notified().await;
        count.fetch_add(1, Ordering::SeqCst);
        7
    }));
    assert!(loader.as_mut().poll(&mut cx).is_pending());
    for _ in 0..100 {
        let waker = new_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let mut waiter = Box::pin(cache.get_with(1, async { 1 }));
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        drop(waiter);
    }
    assert_eq!(
        live.load(Ordering::SeqCst),
        1,
        "dropped waiters' wakers kept"
    );
    let kept_waker = new_waker();
    let mut kept_cx = std::task::Context::from_waker(&kept_waker);
    let mut kept = Box::pin(cache.get_with(1, async { 1 }));
    assert!(kept.as_mut().poll(&mut kept_cx).is_pending());
    release.notify_one();
    assert_eq!(loader.as_mut().poll(&mut cx), std::task::Poll::Ready(7));
    // The loader's waker, by the gate, and the one waiter still waiting.
    assert_eq!(woken.load(Ordering::SeqCst), 2);
    assert_eq!(kept.as_mut().poll(&mut kept_cx), std::task::Poll::Ready(7));
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn insert_during_load_wins_and_waiter_gets_loaded_value() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let loader = spawn_paused_load(&cache, &started, &release, 10);
        started.notified().await;
        let waiter = spawn_paused_load(&cache, &started, &release, 10);
        tokio::task::yield_now().await; // the waiter joins the load
        cache.insert(1, 20);
        release.notify_one();
        assert_eq!(loader.await.unwrap(), 10);
        assert_eq!(waiter.await.unwrap(), 10, "the waiter shares the load");
        assert_eq!(
            cache.get(&1),
            Some(20),
            "the insert came after the load began"
        );
    })
    .await;
}

/// A key that is not `Clone`: `sync::Cache` takes it for every operation but the loaders, and so
/// must `future::Cache` (it once asked `K: Clone` even of `get` and `insert`, which then did not
/// compile).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Unclonable(u32);

#[test]
fn plain_operations_key_not_clone_available() {
    let cache: Cache<Unclonable, u64> = Cache::new(100);
    cache.insert(Unclonable(1), 1);
    cache.insert_with_ttl(Unclonable(2), 2, Duration::from_secs(60));
    assert_eq!(cache.get(&Unclonable(1)), Some(1));
    assert!(cache.contains_key(&Unclonable(2)));
    assert_eq!(cache.remove(&Unclonable(2)), Some(2));
    cache.run_pending_tasks();
    assert_eq!((cache.len(), cache.weighted_size()), (1, 1));
    assert_eq!(cache.as_sync().peek(&Unclonable(1)), Some(1));
    assert_eq!(cache.stats().hits, 0, "stats are off by default");
    cache.invalidate_all();
    assert!(cache.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_with_by_ref_spawned_str_lookup_loads_then_hits() {
    // The future is `Send` (spawned) and takes `&str` for a `String` key; coalescing is the
    // owned loaders' path, tested above.
    let cache: Cache<String, u32> = Cache::builder()
        .max_capacity(10)
        .record_stats()
        .build()
        .unwrap();
    let spawned = cache.clone();
    let task = tokio::spawn(async move { spawned.get_with_by_ref("k", async { 5 }).await });
    assert_eq!(task.await.unwrap(), 5);
    assert_eq!(
        cache
            .get_with_by_ref("k", async { unreachable!("cached") })
            .await,
        5
    );
    assert_eq!(
        cache
            .try_get_with_by_ref("k", async { Err::<u32, ()>(()) })
            .await,
        Ok(5)
    );
    assert_eq!(
        cache
            .optionally_get_with_by_ref("absent", async { None })
            .await,
        None
    );
    assert!(!cache.contains_key("absent"));
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses, stats.load_successes), (2, 2, 1));
}

#[tokio::test(flavor = "current_thread")]
async fn entry_or_insert_inserts_on_miss_keeps_value_on_hit() {
    let cache: Cache<u32, u32> = Cache::builder().max_capacity(10).build().unwrap();
    assert_eq!(cache.entry(1).or_insert(10).await, 10);
    assert_eq!(cache.entry(1).or_insert(20).await, 10);
    assert_eq!(cache.get(&1), Some(10));
}

/// A loader that asks for its own key, by awaiting it or through the blocking view, panics
/// instead of waiting for itself forever; the key stays loadable, and loading other keys from a
/// loader is fine.
#[tokio::test(flavor = "current_thread")]
async fn loader_asking_for_own_key_panics_instead_of_hanging() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let awaiting = {
            let cache = cache.clone();
            tokio::spawn(async move {
                let inner = cache.clone();
                cache
                    .get_with(1, async move { inner.get_with(1, async { 2 }).await + 1 })
                    .await
            })
        };
        assert!(awaiting.await.unwrap_err().is_panic(), "awaited own key");
        let blocking = {
            let cache = cache.clone();
            tokio::spawn(async move {
                let inner = cache.clone();
                cache
                    .get_with(1, async move { inner.as_sync().get_with(1, || 2) + 1 })
                    .await
            })
        };
        assert!(
            blocking.await.unwrap_err().is_panic(),
            "blocking on own key"
        );
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
        let inner = cache.clone();
        let value = cache
            .get_with(1, async move { inner.get_with(2, async { 2 }).await + 1 })
            .await;
        assert_eq!((value, cache.get(&2)), (3, Some(2)));
    })
    .await;
}

/// Another task on the loader's thread that waits for the same key is a waiter, not a
/// recursion: the mark covers only the loader's own polls.
#[tokio::test(flavor = "current_thread")]
async fn waiter_task_on_loader_thread_waits_without_panic() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let loader = spawn_paused_load(&cache, &started, &release, 7);
        started.notified().await;
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.get_with(1, async { 8 }).await })
        };
        tokio::task::yield_now().await;
        release.notify_one();
        assert_eq!(loader.await.unwrap(), 7);
        assert_eq!(waiter.await.unwrap(), 7);
    })
    .await;
}

/// The plain operations moka users reach for work on the async handle itself.
#[tokio::test(flavor = "current_thread")]
async fn peek_iter_retain_and_max_capacity_on_async_handle() {
    let cache: Cache<u32, u64> = Cache::builder()
        .max_capacity(100)
        .record_stats()
        .build()
        .unwrap();
    for key in 0..6 {
        cache.insert(key, u64::from(key) * 10);
    }
    assert_eq!(cache.peek(&3), Some(30));
    assert_eq!(cache.peek(&9), None);
    assert_eq!((cache.stats().hits, cache.stats().misses), (0, 0));
    cache.retain(|key, _| key % 2 == 0);
    let mut held: Vec<(u32, u64)> = cache.iter().collect();
    held.sort_unstable();
    assert_eq!(held, vec![(0, 0), (2, 20), (4, 40)]);
    assert_eq!(cache.max_capacity(), 100);
}

/// On a single-threaded runtime, a compute of a key whose load is in flight awaits the load
/// (it does not block the thread the loader needs) and sees its value.
#[tokio::test(flavor = "current_thread")]
async fn compute_during_load_awaits_it_and_sees_loaded_value() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let load = spawn_paused_load(&cache, &started, &release, 10);
        started.notified().await;
        let compute = tokio::spawn({
            let cache = cache.clone();
            async move {
                let mut seen = None;
                let held = cache
                    .entry(1)
                    .and_compute_with(|v| {
                        seen = Some(v.copied());
                        Compute::Put(v.map_or(1, |v| v + 1))
                    })
                    .await;
                (seen, held)
            }
        });
        tokio::task::yield_now().await;
        assert!(!compute.is_finished(), "the compute waits for the load");
        release.notify_one();
        assert_eq!(load.await.unwrap(), 10);
        assert_eq!(compute.await.unwrap(), (Some(Some(10)), Some(11)));
        assert_eq!(cache.get(&1), Some(11));
    })
    .await;
}

/// The entry's upsert waits for a load of its key like the compute it is made of, and the
/// fallible and optional loaders cache only values.
#[tokio::test(flavor = "current_thread")]
async fn entry_upsert_awaits_load_and_fallible_loaders_cache_only_values() {
    within(async {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let load = spawn_paused_load(&cache, &started, &release, 10);
        started.notified().await;
        let upsert = tokio::spawn({
            let cache = cache.clone();
            async move {
                cache
                    .entry(1)
                    .and_upsert_with(|v| v.map_or(1, |v| v + 1))
                    .await
            }
        });
        tokio::task::yield_now().await;
        assert!(!upsert.is_finished(), "the upsert waits for the load");
        release.notify_one();
        assert_eq!(load.await.unwrap(), 10);
        assert_eq!(upsert.await.unwrap(), 11);

        let failed = cache
            .entry(1)
            .and_try_compute_with(|_| Err::<Compute<u64>, _>("bad"))
            .await;
        assert_eq!(failed, Err("bad"));
        assert_eq!(cache.get(&1), Some(11));
        let failed = cache
            .entry(2)
            .or_try_insert_with(async { Err("down") })
            .await;
        assert_eq!(failed.map_err(|e| *e), Err("down"));
        assert_eq!(
            cache
                .entry(3)
                .or_optionally_insert_with(async { None })
                .await,
            None
        );
        assert_eq!(
            (cache.contains_key(&2), cache.contains_key(&3)),
            (false, false)
        );
        assert_eq!(cache.entry(4).or_default().await, 0);
        assert_eq!(cache.get(&4), Some(0));
    })
    .await;
}
