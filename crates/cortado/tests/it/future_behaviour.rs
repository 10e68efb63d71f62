//! `future::Cache` on tokio's multi-thread runtime: loaders coalesce across tasks, errors and
//! absence reach every waiter, and a cancelled or panicking loader releases its waiters.
//!
//! Every test runs under `tokio::time::timeout`, so a waiter that is never woken fails the test
//! instead of hanging it.

use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use crate::common::{key_clones, CountedKey};
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
    tokio::time::timeout(common::paced(LIMIT), future)
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
                            tokio::time::sleep(common::paced(Duration::from_millis(100))).await;
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
        let arrived = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (cache, calls, arrived, barrier) = (
                    cache.clone(),
                    calls.clone(),
                    arrived.clone(),
                    barrier.clone(),
                );
                tokio::spawn(async move {
                    barrier.wait().await;
                    arrived.fetch_add(1, Ordering::SeqCst);
                    cache
                        .try_get_with(1, async {
                            calls.fetch_add(1, Ordering::SeqCst);
                            // An error is not cached: a task that came after it would load
                            // again. So the load lasts until every task has joined it (under
                            // Miri, a fixed 100 ms was sometimes too short for the last one).
                            while arrived.load(Ordering::SeqCst) < TASKS {
                                tokio::task::yield_now().await;
                            }
                            tokio::time::sleep(common::paced(Duration::from_millis(100))).await;
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

/// Wakers that count how many of them are alive (a waker and its clones count once) and how
/// often they were woken: a waiter list that keeps the wakers of tasks that gave up shows as
/// wakers still alive.
#[derive(Default)]
struct Wakers {
    live: Arc<AtomicUsize>,
    woken: Arc<AtomicUsize>,
}

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

impl Wakers {
    fn new_waker(&self) -> std::task::Waker {
        self.live.fetch_add(1, Ordering::SeqCst);
        std::task::Waker::from(Arc::new(Counted {
            live: self.live.clone(),
            woken: self.woken.clone(),
        }))
    }

    fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    fn woken(&self) -> usize {
        self.woken.load(Ordering::SeqCst)
    }
}

/// Polls `future` once with `waker`.
fn poll_once<F: Future + ?Sized>(
    future: std::pin::Pin<&mut F>,
    waker: &std::task::Waker,
) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(waker))
}

/// A load of key 1 started and pending on `wakers`' first waker, with the sender that ends it
/// with its value.
fn pending_load<'a>(
    cache: &'a Cache<u32, u64>,
    wakers: &Wakers,
) -> (
    std::pin::Pin<Box<impl Future<Output = u64> + 'a>>,
    std::task::Waker,
    futures::channel::oneshot::Sender<u64>,
) {
    let (release, released) = futures::channel::oneshot::channel::<u64>();
    let loader_waker = wakers.new_waker();
    let mut loader = Box::pin(cache.get_with(1, async { released.await.unwrap() }));
    assert!(poll_once(loader.as_mut(), &loader_waker).is_pending());
    (loader, loader_waker, release)
}

/// A waiter that gives up (its future dropped: a timeout, a `select!`) takes its waker with it,
/// so a load that never ends does not keep alive every task that stopped waiting for it; one
/// still waiting keeps its own and is woken.
#[test]
fn dropped_waiters_release_their_wakers() {
    let wakers = Wakers::default();
    let cache: Cache<u32, u64> = Cache::new(100);
    let (release, released) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let loader_waker = wakers.new_waker();
    let (gate, count) = (release.clone(), released.clone());
    let mut loader = Box::pin(cache.get_with(1, async move {
        gate.notified().await;
        count.fetch_add(1, Ordering::SeqCst);
        7
    }));
    assert!(poll_once(loader.as_mut(), &loader_waker).is_pending());
    for _ in 0..100 {
        let waker = wakers.new_waker();
        let mut waiter = Box::pin(cache.get_with(1, async { 1 }));
        assert!(poll_once(waiter.as_mut(), &waker).is_pending());
        drop(waiter);
    }
    assert_eq!(wakers.live(), 1, "dropped waiters' wakers kept");
    let kept_waker = wakers.new_waker();
    let mut kept = Box::pin(cache.get_with(1, async { 1 }));
    assert!(poll_once(kept.as_mut(), &kept_waker).is_pending());
    release.notify_one();
    assert_eq!(
        poll_once(loader.as_mut(), &loader_waker),
        std::task::Poll::Ready(7)
    );
    // The loader's waker, by the gate, and the one waiter still waiting.
    assert_eq!(wakers.woken(), 2);
    assert_eq!(
        poll_once(kept.as_mut(), &kept_waker),
        std::task::Poll::Ready(7)
    );
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
    let mut looped = Vec::new();
    for entry in &cache {
        looped.push(entry);
    }
    looped.sort_unstable();
    assert_eq!(looped, held);
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

// ---------------------------------------------------------------------------------------------
// Cancellation at every await point, wakers of waiters that go away, and executors other than
// tokio's. The loader's only await point is its `init`: the join, the second look at the cache
// and the caching after `init` are synchronous, so a loader cancelled "after `init` but before
// caching" cannot happen.
// ---------------------------------------------------------------------------------------------

/// Callers of one key, each cancelled once its own loader runs (the loader of the moment is
/// dropped): every time, the others are woken and one takes over, until the last one's loader
/// ends and its value is cached. A caller dropped before its first poll has done nothing.
#[test]
fn get_with_loaders_cancelled_in_turn_last_waiter_loads() {
    const CALLERS: usize = 4;
    let wakers = Wakers::default();
    let cache: Cache<u32, u64> = Cache::builder()
        .max_capacity(100)
        .record_stats()
        .build()
        .unwrap();
    drop(cache.get_with(1, async { unreachable!("never polled") }));
    assert_eq!(cache.as_sync().loads_in_flight(), 0);
    assert_eq!(
        cache.stats().misses,
        0,
        "an unpolled call does not even look"
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let mut callers: Vec<_> = (0..CALLERS)
        .map(|i| {
            let runs = runs.clone();
            let future = Box::pin(cache.get_with(1, async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if i + 1 < CALLERS {
                    std::future::pending::<()>().await;
                }
                10 + i as u64
            }));
            (Some(future), wakers.new_waker())
        })
        .collect();
    for (future, waker) in &mut callers {
        assert!(poll_once(future.as_mut().unwrap().as_mut(), waker).is_pending());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one loader, the rest wait");
    for loader in 0..CALLERS - 1 {
        let woken = wakers.woken();
        callers[loader].0 = None; // cancelled in its `init`
        assert_eq!(
            wakers.woken() - woken,
            CALLERS - 1 - loader,
            "every remaining caller is woken"
        );
        if loader + 2 == CALLERS {
            break;
        }
        // The first one polled takes over; the others wait for it.
        for (future, waker) in &mut callers[loader + 1..] {
            assert!(poll_once(future.as_mut().unwrap().as_mut(), waker).is_pending());
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            loader + 2,
            "the next one took over"
        );
        assert_eq!(cache.as_sync().loads_in_flight(), 1);
    }
    let (last, waker) = callers.last_mut().unwrap();
    assert_eq!(
        poll_once(last.as_mut().unwrap().as_mut(), waker),
        std::task::Poll::Ready(13)
    );
    assert_eq!(runs.load(Ordering::SeqCst), CALLERS);
    assert_eq!(cache.get(&1), Some(13));
    assert_eq!(cache.as_sync().loads_in_flight(), 0);
    let stats = cache.stats();
    assert_eq!(
        (stats.load_successes, stats.load_failures),
        (1, CALLERS as u64 - 1)
    );
}

/// A waiter polled again with another waker (a `select!` in a loop, a combinator that moves it
/// between tasks) keeps one registration, with the newest waker: the list does not grow, and the
/// task woken is the one that polled last. After a write supersedes the load (which wakes the
/// waiters), a waiter registers again and still gets the load's value.
#[test]
fn waiter_repolled_with_new_wakers_keeps_one_registration() {
    let wakers = Wakers::default();
    let cache: Cache<u32, u64> = Cache::new(100);
    let (mut loader, loader_waker, release) = pending_load(&cache, &wakers);
    let mut waiter = Box::pin(cache.get_with(1, async { unreachable!("a load is in flight") }));
    for _ in 0..50 {
        assert!(poll_once(waiter.as_mut(), &wakers.new_waker()).is_pending());
    }
    let newest = Wakers::default();
    assert!(poll_once(waiter.as_mut(), &newest.new_waker()).is_pending());
    assert_eq!(
        (wakers.live(), newest.live()),
        (1, 1),
        "the loader's waker and the waiter's newest"
    );
    cache.insert(1, 5); // supersedes the load: the waiter is woken and takes its waker out
    assert_eq!(
        (wakers.woken(), newest.woken()),
        (0, 1),
        "the newest waker is woken"
    );
    assert_eq!(newest.live(), 0);
    let last_waker = wakers.new_waker();
    assert!(poll_once(waiter.as_mut(), &last_waker).is_pending());
    assert_eq!(wakers.live(), 2);
    release.send(9).unwrap();
    assert_eq!(
        poll_once(loader.as_mut(), &loader_waker),
        std::task::Poll::Ready(9)
    );
    assert_eq!(
        wakers.woken(),
        2,
        "the loader's waker by the channel, the waiter's by the load"
    );
    assert_eq!(
        poll_once(waiter.as_mut(), &last_waker),
        std::task::Poll::Ready(9),
        "a waiter that joined before the write gets the loaded value"
    );
    assert_eq!(
        cache.get(&1),
        Some(5),
        "the insert came after the load began"
    );
}

/// A compute and an upsert waiting for a load of their key, cancelled while they wait: they
/// write nothing, leave no waker behind and do not disturb the load, whose value is cached.
#[test]
fn compute_cancelled_while_waiting_for_load_writes_nothing() {
    let wakers = Wakers::default();
    let cache: Cache<u32, u64> = Cache::new(100);
    let (mut loader, loader_waker, release) = pending_load(&cache, &wakers);
    let ran = Arc::new(AtomicUsize::new(0));
    let (compute_ran, upsert_ran) = (ran.clone(), ran.clone());
    let mut compute = Box::pin(cache.entry(1).and_compute_with(move |_| {
        compute_ran.fetch_add(1, Ordering::SeqCst);
        Compute::Put(98)
    }));
    let mut upsert = Box::pin(cache.entry(1).and_upsert_with(move |_| {
        upsert_ran.fetch_add(1, Ordering::SeqCst);
        99
    }));
    assert!(poll_once(compute.as_mut(), &wakers.new_waker()).is_pending());
    assert!(poll_once(upsert.as_mut(), &wakers.new_waker()).is_pending());
    assert_eq!(wakers.live(), 3);
    drop((compute, upsert));
    assert_eq!(wakers.live(), 1, "a cancelled compute's waker was kept");
    release.send(7).unwrap();
    assert_eq!(
        poll_once(loader.as_mut(), &loader_waker),
        std::task::Poll::Ready(7)
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "cancelled before `f` ran");
    assert_eq!(cache.get(&1), Some(7), "the load was not superseded");
    assert_eq!(cache.as_sync().loads_in_flight(), 0);
}

/// A loader whose `init` panics while it is dropped (its caller cancelled) still releases the
/// waiters: the panic reaches whoever dropped it, and a waiter loads.
#[test]
fn loader_init_panicking_on_drop_still_releases_waiters() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("init dropped (expected by the test)");
        }
    }
    let wakers = Wakers::default();
    let cache: Cache<u32, u64> = Cache::new(100);
    let (loader_waker, waiter_waker) = (wakers.new_waker(), wakers.new_waker());
    let mut loader = Box::pin(cache.get_with(1, async {
        let _bomb = PanicOnDrop;
        std::future::pending::<u64>().await
    }));
    assert!(poll_once(loader.as_mut(), &loader_waker).is_pending());
    let mut waiter = Box::pin(cache.get_with(1, async { 3 }));
    assert!(poll_once(waiter.as_mut(), &waiter_waker).is_pending());
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(loader)));
    assert!(
        dropped.is_err(),
        "the panic reaches the caller that dropped it"
    );
    assert_eq!(wakers.woken(), 1, "the waiter is woken");
    assert_eq!(
        poll_once(waiter.as_mut(), &waiter_waker),
        std::task::Poll::Ready(3)
    );
    assert_eq!(cache.as_sync().loads_in_flight(), 0);
}

/// Pending once (waking itself at once), then ready: a point where another task can run,
/// for any executor.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Polls its future until it is ready, or gives up (drops it) once it has been pending
/// `polls` times: a cancellation at whatever await point the future had reached. Each poll
/// after the first comes only when the future's waker is called.
struct GiveUpAfter<F> {
    future: Option<std::pin::Pin<Box<F>>>,
    polls: u32,
}

fn give_up_after<F: Future>(polls: u32, future: F) -> GiveUpAfter<F> {
    GiveUpAfter {
        future: Some(Box::pin(future)),
        polls,
    }
}

impl<F: Future> Future for GiveUpAfter<F> {
    type Output = Option<F::Output>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<F::Output>> {
        let future = self.future.as_mut().expect("polled after it ended");
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            self.future = None;
            return std::task::Poll::Ready(Some(output));
        }
        self.polls = self.polls.saturating_sub(1);
        if self.polls == 0 {
            self.future = None;
            return std::task::Poll::Ready(None);
        }
        std::task::Poll::Pending
    }
}

/// The value every caller loads or writes for `key`: whatever path a caller took, it must end
/// with this.
fn value_of(key: u32) -> u64 {
    u64::from(key) * 1_000 + 7
}

/// One task's share of a stress test: `ops` random operations on `keys` keys of `cache`, among
/// them loaders that yield, loaders and computes cancelled after a few polls, failing loaders,
/// inserts, removals and computes that supersede loads in flight, and a rare `invalidate_all`.
/// Every value seen must be the key's [`value_of`]; a waiter never woken hangs the task.
async fn churn(cache: Cache<u32, u64>, seed: u64, keys: u32, ops: usize) {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..ops {
        let r = next();
        let key = (r % u64::from(keys)) as u32;
        let want = value_of(key);
        let yields = (r >> 8) % 3;
        let init = async move {
            for _ in 0..yields {
                YieldNow(false).await;
            }
            want
        };
        let polls = 1 + ((r >> 12) % 3) as u32;
        match (r >> 16) % 16 {
            0..=5 => assert_eq!(cache.get_with(key, init).await, want),
            6 | 7 => {
                if let Some(got) = give_up_after(polls, cache.get_with(key, init)).await {
                    assert_eq!(got, want);
                }
            }
            8 => {
                let fails = (r >> 20) % 2 == 0;
                let loaded = cache.try_get_with(key, async move {
                    let value = init.await;
                    if fails {
                        Err(key)
                    } else {
                        Ok(value)
                    }
                });
                match loaded.await {
                    Ok(got) => assert_eq!(got, want),
                    Err(error) => assert_eq!(*error, key),
                }
            }
            9 => {
                let loaded = cache.optionally_get_with(key, async move { Some(init.await) });
                assert_eq!(loaded.await, Some(want));
            }
            10 | 11 => cache.insert(key, want),
            12 => {
                let compute = cache.entry(key).and_compute_with(move |held| {
                    assert!(held.is_none_or(|&v| v == want), "{held:?} for {key}");
                    if r % 2 == 0 {
                        Compute::Put(want)
                    } else {
                        Compute::Remove
                    }
                });
                if let Some(Some(held)) = give_up_after(polls, compute).await {
                    assert_eq!(held, want);
                }
            }
            13 => {
                let upsert = cache.entry(key).and_upsert_with(move |held| {
                    assert!(held.is_none_or(|&v| v == want), "{held:?} for {key}");
                    want
                });
                assert_eq!(upsert.await, want);
            }
            14 => assert!(cache.remove(&key).is_none_or(|v| v == want)),
            _ if r % 64 == 0 => cache.invalidate_all(),
            _ => assert!(cache.get(&key).is_none_or(|v| v == want)),
        }
    }
}

/// Many tasks on few keys of a multi-threaded runtime: waiters register their wakers while
/// loads end, are cancelled or are superseded, on every worker. A lost wake-up leaves a task
/// pending, which the timeout turns into a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_with_stress_many_tasks_no_lost_wakeup() {
    within(async {
        // Fewer and shorter tasks under Miri.
        let (tasks, ops) = if cfg!(miri) { (8, 100) } else { (48, 2_000) };
        let cache: Cache<u32, u64> = Cache::new(1_000);
        let tasks: Vec<_> = (0..tasks)
            .map(|seed| tokio::spawn(churn(cache.clone(), seed, 8, ops)))
            .collect();
        futures_join(tasks).await;
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
        for (key, value) in cache.iter() {
            assert_eq!(value, value_of(key));
        }
    })
    .await;
}

/// Runs `body` on a thread of its own and fails if it takes longer than [`LIMIT`]: the timeout
/// of the tests that run no tokio runtime.
fn finishes_within<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = done.send(outcome);
    });
    let limit = common::paced(LIMIT);
    match result.recv_timeout(limit) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("timed out after {limit:?}: a waiter was never woken"),
    }
}

/// The same stress on `async-executor`, run by two threads: no tokio anywhere.
#[test]
fn get_with_stress_on_async_executor_no_lost_wakeup() {
    finishes_within(|| {
        let (tasks, ops) = if cfg!(miri) { (8, 100) } else { (24, 1_000) };
        let executor = Arc::new(async_executor::Executor::new());
        let (stop, stopped) = futures::channel::oneshot::channel::<()>();
        let helper = {
            let executor = executor.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(executor.run(async {
                    let _ = stopped.await;
                }))
            })
        };
        let cache: Cache<u32, u64> = Cache::new(1_000);
        let tasks: Vec<_> = (0..tasks)
            .map(|seed| executor.spawn(churn(cache.clone(), seed, 8, ops)))
            .collect();
        futures::executor::block_on(executor.run(async {
            for task in tasks {
                task.await;
            }
        }));
        stop.send(()).unwrap();
        helper.join().unwrap();
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
    });
}

/// On `futures`' single-threaded `LocalPool`, with no runtime behind it: tasks wait for a load
/// through their task wakers, a cancelled waiter leaves the load alone, and when the loading
/// task is aborted a waiter takes over and the others get its value. The loaders need not be
/// `Send` here.
#[test]
fn local_pool_aborted_loader_waiter_takes_over() {
    use futures::future::abortable;
    use futures::task::LocalSpawnExt;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    finishes_within(|| {
        let mut pool = futures::executor::LocalPool::new();
        let spawner = pool.spawner();
        let cache: Cache<u32, u64> = Cache::new(100);
        let runs = Rc::new(Cell::new(0));
        let results = Rc::new(RefCell::new(Vec::new()));
        let load = {
            let (cache, runs) = (cache.clone(), runs.clone());
            async move {
                cache
                    .get_with(1, async move {
                        runs.set(runs.get() + 1);
                        std::future::pending::<u64>().await
                    })
                    .await
            }
        };
        // Boxed, here and below: `Abortable` takes `&self` over the future it wraps, which
        // Stacked Borrows (Miri) rejects when that future points into itself, as an `async`
        // block does (rust-lang/rust#63818); a box keeps the future out of that reference.
        let (load, abort_load) = abortable(Box::pin(load));
        spawner
            .spawn_local(async move { assert!(load.await.is_err(), "aborted") })
            .unwrap();
        let mut abort_waiters = Vec::new();
        for i in 0..4u64 {
            let (cache, runs, results) = (cache.clone(), runs.clone(), results.clone());
            let (wait, abort) = abortable(Box::pin(async move {
                let value = cache
                    .get_with(1, async move {
                        runs.set(runs.get() + 1);
                        YieldNow(false).await;
                        20 + i
                    })
                    .await;
                results.borrow_mut().push(value);
            }));
            spawner
                .spawn_local(async move {
                    let _ = wait.await;
                })
                .unwrap();
            abort_waiters.push(abort);
        }
        pool.run_until_stalled();
        assert_eq!((runs.get(), results.borrow().len()), (1, 0));
        abort_waiters[0].abort();
        pool.run_until_stalled();
        assert_eq!((runs.get(), results.borrow().len()), (1, 0));
        assert_eq!(cache.as_sync().loads_in_flight(), 1);
        abort_load.abort();
        pool.run_until_stalled();
        assert_eq!(runs.get(), 2, "one waiter took over");
        let results = results.borrow();
        assert_eq!(results.len(), 3);
        assert!(results.iter().all(|&v| v == results[0]), "{results:?}");
        assert_eq!(cache.get(&1), Some(results[0]));
        assert_eq!(cache.as_sync().loads_in_flight(), 0);
    });
}

/// Waiters on a `LocalPool` on one thread, the loader under `futures::executor::block_on` on
/// another: the loader's completion wakes the pool's tasks across threads.
#[test]
fn local_pool_waiters_woken_by_loader_on_other_thread() {
    use futures::task::LocalSpawnExt;

    finishes_within(|| {
        let cache: Cache<u32, u64> = Cache::new(100);
        let (started, has_started) = std::sync::mpsc::channel();
        let (release, released) = futures::channel::oneshot::channel::<u64>();
        let loader = {
            let cache = cache.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(cache.get_with(1, async move {
                    started.send(()).unwrap();
                    released.await.unwrap()
                }))
            })
        };
        has_started.recv().unwrap();
        let mut pool = futures::executor::LocalPool::new();
        let results = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        for _ in 0..8 {
            let (cache, results) = (cache.clone(), results.clone());
            pool.spawner()
                .spawn_local(async move {
                    let value = cache.get_with(1, async { unreachable!("loading") }).await;
                    results.borrow_mut().push(value);
                })
                .unwrap();
        }
        pool.run_until_stalled();
        assert!(results.borrow().is_empty(), "the waiters wait");
        release.send(5).unwrap();
        pool.run(); // parks until the loader's thread wakes the tasks
        assert_eq!(*results.borrow(), vec![5; 8]);
        assert_eq!(loader.join().unwrap(), 5);
    });
}

fn assert_send<T: Send>(_: &T) {}

/// Every future of the async front end is `Send` when the key, the value and the loader are
/// (so it can be `tokio::spawn`ed), also for a loader that is not `Sync`. Checked for any such
/// `K` and `V` when this compiles; the test constructs them for one.
fn futures_send_for<K, V>(cache: &Cache<K, V>, key: K, value: V)
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Default + Send + Sync + 'static,
{
    let not_sync = std::cell::Cell::new(0u8);
    let init = {
        let value = value.clone();
        async move {
            not_sync.set(1);
            YieldNow(false).await;
            value
        }
    };
    assert_send(&cache.get_with(key.clone(), init));
    let v = value.clone();
    assert_send(&cache.try_get_with(key.clone(), async move { Ok::<_, String>(v) }));
    let v = value.clone();
    assert_send(&cache.optionally_get_with(key.clone(), async move { Some(v) }));
    let v = value.clone();
    assert_send(&cache.entry(key.clone()).or_insert_with(async move { v }));
    assert_send(&cache.entry(key.clone()).or_insert(value.clone()));
    assert_send(&cache.entry(key.clone()).or_default());
    let v = value.clone();
    assert_send(
        &cache
            .entry(key.clone())
            .or_try_insert_with(async move { Ok::<_, ()>(v) }),
    );
    assert_send(
        &cache
            .entry(key.clone())
            .or_optionally_insert_with(async { None }),
    );
    let v = value.clone();
    assert_send(&cache.entry(key.clone()).and_upsert_with(move |_| v));
    assert_send(&cache.entry(key.clone()).and_compute_with(|_| Compute::Nop));
    assert_send(
        &cache
            .entry(key)
            .and_try_compute_with(|_| Err::<Compute<V>, String>(String::new())),
    );
}

#[test]
fn loader_futures_send_when_key_value_and_init_send() {
    let cache: Cache<String, Arc<str>> = Cache::new(10);
    futures_send_for(&cache, "k".to_string(), Arc::from("v"));
    assert_send(&cache.get_with_by_ref("k", async { Arc::from("v") }));
    assert_send(&cache.try_get_with_by_ref("k", async { Err::<Arc<str>, u8>(1) }));
    assert_send(&cache.optionally_get_with_by_ref("k", async { None }));
    assert_eq!(cache.as_sync().loads_in_flight(), 0, "nothing was polled");
}

#[tokio::test]
async fn entry_by_ref_str_for_string_key_loads_once_and_computes() {
    within(async {
        let cache: Cache<String, u64> = Cache::builder()
            .max_capacity(10)
            .record_stats()
            .build()
            .unwrap();
        assert_eq!(cache.entry_by_ref("a").or_insert_with(async { 1 }).await, 1);
        assert_eq!(cache.entry_by_ref("a").or_insert(2).await, 1);
        assert_eq!(cache.entry_by_ref("a").or_default().await, 1);
        let failed = cache
            .entry_by_ref("b")
            .or_try_insert_with(async { Err::<u64, _>("down") })
            .await;
        assert_eq!(failed.unwrap_err().as_ref(), &"down");
        assert_eq!(
            cache
                .entry_by_ref("b")
                .or_optionally_insert_with(async { None })
                .await,
            None
        );
        assert_eq!(
            cache
                .entry_by_ref("a")
                .and_upsert_with(|v| v.map_or(0, |v| v + 1))
                .await,
            2
        );
        assert_eq!(
            cache
                .entry_by_ref("b")
                .and_compute_with(|_| Compute::Put(5))
                .await,
            Some(5)
        );
        assert_eq!(
            cache
                .entry_by_ref("a")
                .and_try_compute_with(|_| Ok::<_, ()>(Compute::Remove))
                .await,
            Ok(None)
        );
        assert_eq!((cache.get("a"), cache.get("b")), (None, Some(5)));
        let stats = cache.stats();
        // The error and the loader that found nothing both count as failed loads.
        assert_eq!((stats.load_successes, stats.load_failures), (1, 2));
    })
    .await;
}

#[tokio::test]
async fn entry_by_ref_hit_makes_no_owned_key() {
    within(async {
        let cache: Cache<CountedKey, u32> = Cache::new(10);
        let key = CountedKey(1);
        assert_eq!(cache.entry_by_ref(&key).or_insert(7).await, 7);
        let clones = key_clones();
        assert!(clones >= 1, "a miss makes the owned key the load needs");
        assert_eq!(cache.entry_by_ref(&key).or_insert(8).await, 7);
        assert_eq!(cache.entry_by_ref(&key).or_default().await, 7);
        assert_eq!(
            cache
                .entry_by_ref(&key)
                .or_insert_with(async { unreachable!() })
                .await,
            7
        );
        assert_eq!(
            cache
                .entry_by_ref(&key)
                .or_try_insert_with(async { Err::<u32, ()>(()) })
                .await,
            Ok(7)
        );
        assert_eq!(
            cache
                .entry_by_ref(&key)
                .or_optionally_insert_with(async { None })
                .await,
            Some(7)
        );
        assert_eq!(key_clones(), clones, "hits clone nothing");
    })
    .await;
}
