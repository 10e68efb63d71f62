//! `Scheduler::Tokio` (feature `tokio`): a task on the building runtime expires entries when
//! nobody touches the cache, stops with the last handle, and is refused outside a runtime.
#![cfg(feature = "tokio")]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common;
use cortado::builder::BuildError;
use cortado::notification::RemovalCause;
use cortado::sync::{Cache, Scheduler};

const LIMIT: Duration = Duration::from_secs(20);

fn expiring_cache(
    ttl: Duration,
) -> (
    Cache<u32, u32>,
    tokio::sync::mpsc::UnboundedReceiver<(u32, RemovalCause)>,
) {
    let (heard, hear) = tokio::sync::mpsc::unbounded_channel();
    let cache = Cache::builder()
        .max_capacity(100)
        .time_to_live(ttl)
        .scheduler(Scheduler::Tokio)
        .eviction_listener(move |k: &u32, _: &u32, cause| {
            let _ = heard.send((*k, cause));
        })
        .build()
        .unwrap();
    (cache, hear)
}

async fn expires_without_traffic() {
    let ttl = Duration::from_millis(100);
    let (cache, mut hear) = expiring_cache(ttl);
    let inserted = Instant::now();
    for key in 0..3 {
        cache.insert(key, key);
    }
    let mut expired = Vec::new();
    for _ in 0..3 {
        let event = tokio::time::timeout(common::paced(LIMIT), hear.recv())
            .await
            .expect("expired by the scheduler task")
            .expect("listener alive");
        expired.push(event);
    }
    common::assert_expired_by_scheduler(expired, inserted, ttl, cache.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_tokio_multi_thread_expires_entries_without_traffic() {
    expires_without_traffic().await;
}

#[tokio::test(flavor = "current_thread")]
async fn scheduler_tokio_current_thread_expires_entries_while_caller_awaits() {
    expires_without_traffic().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_tokio_insert_due_sooner_wakes_sleeping_task() {
    // The task first sleeps towards an hour-long deadline (capped at MAX_PARK, 1 s); a
    // 50 ms entry written meanwhile must wake it before then.
    let (cache, mut hear) = expiring_cache(Duration::from_secs(3_600));
    cache.insert(1, 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let written = Instant::now();
    cache.insert_with_ttl(2, 2, Duration::from_millis(50));
    let event = tokio::time::timeout(common::paced(LIMIT), hear.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, (2, RemovalCause::Expired));
    assert!(
        written.elapsed() < Duration::from_millis(900),
        "woken early, not at MAX_PARK"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_tokio_stops_when_last_handle_dropped() {
    let (cache, _hear) = expiring_cache(Duration::from_secs(3_600));
    cache.insert(1, 1);
    let alive = cache.scheduler_alive().expect("a scheduler task");
    assert!(alive.load(Ordering::SeqCst));
    let clone = cache.clone();
    drop(cache);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(alive.load(Ordering::SeqCst), "a handle is left");
    drop(clone);
    tokio::time::timeout(common::paced(LIMIT), async {
        while alive.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the task ends after the last handle");
}

#[test]
fn scheduler_tokio_outside_runtime_is_typed_error() {
    let built = Cache::<u32, u32>::builder()
        .max_capacity(10)
        .scheduler(Scheduler::Tokio)
        .build();
    assert_eq!(built.err(), Some(BuildError::NoTokioRuntime));
}

#[test]
fn scheduler_tokio_runtime_without_time_driver_is_typed_error() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let built = runtime.block_on(async {
        Cache::<u32, u32>::builder()
            .max_capacity(10)
            .scheduler(Scheduler::Tokio)
            .build()
    });
    assert_eq!(built.err(), Some(BuildError::NoTokioTimeDriver));
    // The check leaves the runtime usable.
    assert_eq!(runtime.block_on(async { 7 }), 7);
}

#[test]
fn scheduler_tokio_cache_outliving_runtime_expires_on_users_operations() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let ttl = common::paced(Duration::from_millis(50));
    let (cache, mut hear) = runtime.block_on(async { expiring_cache(ttl) });
    let alive = cache.scheduler_alive().expect("a scheduler task");
    drop(runtime);
    assert!(
        !alive.load(Ordering::SeqCst),
        "the task ended with its runtime"
    );
    // The cache works on, without its task: inserts (which would wake it) do not fail, and an
    // expired entry is removed by the operations of its users.
    cache.insert(1, 1);
    cache.insert(2, 2);
    std::thread::sleep(common::paced(Duration::from_millis(80)));
    assert_eq!(cache.get(&1), None, "an expired entry is never returned");
    assert_eq!(hear.try_recv().ok(), None, "nobody expired it yet");
    cache.run_pending_tasks();
    let mut heard = vec![hear.try_recv().unwrap(), hear.try_recv().unwrap()];
    heard.sort_unstable_by_key(|&(key, _)| key);
    assert_eq!(
        heard,
        [(1, RemovalCause::Expired), (2, RemovalCause::Expired)]
    );
    assert!(cache.is_empty());
}
