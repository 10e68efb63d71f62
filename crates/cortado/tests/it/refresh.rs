//! Refresh after write (`refresh_after_write`, `refresh_after_write_async`, `refresh`): a due
//! read returns the old value and starts one reload; the reload's value replaces it unless the
//! key was written or removed meanwhile; a failed or panicking reload keeps the old value.
//!
//! The reloaders here block on a gate the test opens, so the test sees the cache while the
//! reload is in flight; the clock is a `ManualClock`, so an entry is due exactly when the test
//! says.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cortado::sync::Cache;
use cortado::time::ManualClock;

const SECOND: Duration = Duration::from_secs(1);

/// A gate that reloads wait at until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// Waits (up to 10 s) for `done`, which a background reload makes true.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

struct Fixture {
    cache: Cache<u32, String>,
    clock: ManualClock,
    gate: Arc<Gate>,
    reloads: Arc<AtomicUsize>,
}

/// A cache refreshing after 10 s whose reloader counts its calls, waits at the gate, then
/// returns `reloaded(key)`, fails with `Err` for key 13, and panics for key 66.
fn fixture() -> Fixture {
    let clock = ManualClock::new();
    let gate = Arc::new(Gate::default());
    let reloads = Arc::new(AtomicUsize::new(0));
    let (g, r) = (gate.clone(), reloads.clone());
    let cache = Cache::builder()
        .max_capacity(100)
        .clock(clock.clone())
        .record_stats()
        .refresh_after_write(10 * SECOND, move |key: &u32, old: &String| {
            r.fetch_add(1, Ordering::SeqCst);
            g.wait();
            match key {
                13 => Err("backing store down"),
                66 => panic!("reloader panicked"),
                _ => Ok(format!("{old} reloaded")),
            }
        })
        .build()
        .unwrap();
    Fixture {
        cache,
        clock,
        gate,
        reloads,
    }
}

#[test]
fn refresh_read_before_interval_starts_no_reload() {
    let f = fixture();
    f.cache.insert(1, "v".into());
    f.clock.advance(9 * SECOND);
    assert_eq!(f.cache.get(&1).as_deref(), Some("v"));
    f.gate.open();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(f.reloads.load(Ordering::SeqCst), 0);
    assert_eq!(f.cache.loads_in_flight(), 0);
}

#[test]
fn refresh_due_read_returns_old_value_then_reload_replaces_it() {
    let f = fixture();
    f.cache.insert(1, "v".into());
    f.clock.advance(10 * SECOND);
    // Due: the read returns the current value at once, the reload waits at the gate.
    assert_eq!(f.cache.get(&1).as_deref(), Some("v"));
    eventually("the reload started", || {
        f.reloads.load(Ordering::SeqCst) == 1
    });
    assert_eq!(f.cache.get(&1).as_deref(), Some("v"));
    f.gate.open();
    eventually("the reloaded value is cached", || {
        f.cache.get(&1).as_deref() == Some("v reloaded")
    });
    assert_eq!(f.cache.stats().load_successes, 1);
    // Written again by the reload: not due until 10 s after it.
    assert_eq!(f.reloads.load(Ordering::SeqCst), 1);
}

#[test]
fn refresh_many_due_reads_start_one_reload_per_key() {
    let f = fixture();
    f.cache.insert(1, "a".into());
    f.cache.insert(2, "b".into());
    f.clock.advance(11 * SECOND);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let cache = f.cache.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    assert_eq!(cache.get(&1).as_deref(), Some("a"));
                    assert_eq!(cache.get(&2).as_deref(), Some("b"));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    eventually("both reloads started", || {
        f.reloads.load(Ordering::SeqCst) == 2
    });
    assert_eq!(f.cache.loads_in_flight(), 2);
    f.gate.open();
    eventually("both reloads ended", || f.cache.loads_in_flight() == 0);
    assert_eq!(f.reloads.load(Ordering::SeqCst), 2);
    assert_eq!(f.cache.get(&1).as_deref(), Some("a reloaded"));
}

#[test]
fn refresh_insert_during_reload_wins_over_reloaded_value() {
    let f = fixture();
    f.cache.insert(1, "v".into());
    f.clock.advance(10 * SECOND);
    f.cache.get(&1);
    eventually("the reload started", || {
        f.reloads.load(Ordering::SeqCst) == 1
    });
    f.cache.insert(1, "written".into());
    f.gate.open();
    eventually("the reload ended", || f.cache.loads_in_flight() == 0);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(f.cache.get(&1).as_deref(), Some("written"));
}

#[test]
fn refresh_remove_during_reload_keeps_key_absent() {
    let f = fixture();
    f.cache.insert(1, "v".into());
    f.clock.advance(10 * SECOND);
    f.cache.get(&1);
    eventually("the reload started", || {
        f.reloads.load(Ordering::SeqCst) == 1
    });
    assert_eq!(f.cache.remove(&1).as_deref(), Some("v"));
    f.gate.open();
    // The superseded load leaves the map at once; wait for the reloader's return instead.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(f.cache.get(&1), None);
}

#[test]
fn refresh_failed_reload_keeps_old_value_and_counts_failure() {
    let f = fixture();
    f.cache.insert(13, "old".into());
    f.clock.advance(10 * SECOND);
    f.gate.open();
    assert_eq!(f.cache.get(&13).as_deref(), Some("old"));
    eventually("the failure is counted", || {
        f.cache.stats().load_failures == 1
    });
    eventually("the reload ended", || f.cache.loads_in_flight() == 0);
    assert_eq!(f.cache.get(&13).as_deref(), Some("old"));
    assert_eq!(f.cache.stats().load_successes, 0);
}

#[test]
fn refresh_panicking_reload_keeps_old_value_and_key_refreshable() {
    let f = fixture();
    f.cache.insert(66, "old".into());
    f.clock.advance(10 * SECOND);
    f.gate.open();
    assert_eq!(f.cache.get(&66).as_deref(), Some("old"));
    eventually("the failure is counted", || {
        f.cache.stats().load_failures == 1
    });
    eventually("the load was abandoned", || f.cache.loads_in_flight() == 0);
    assert_eq!(f.cache.get(&66).as_deref(), Some("old"));
    // The key was released: the next due read reloads again.
    eventually("a second reload ran", || {
        f.cache.get(&66);
        f.reloads.load(Ordering::SeqCst) >= 2
    });
    f.cache.validate();
}

#[test]
fn refresh_explicit_reloads_whatever_the_age_once_at_a_time() {
    let f = fixture();
    f.cache.insert(1, "v".into());
    assert!(f.cache.refresh(&1));
    assert!(!f.cache.refresh(&1), "one reload per key");
    assert!(!f.cache.refresh(&2), "nothing to reload");
    f.gate.open();
    eventually("the reloaded value is cached", || {
        f.cache.get(&1).as_deref() == Some("v reloaded")
    });
    let plain: Cache<u32, String> = Cache::builder().max_capacity(10).build().unwrap();
    plain.insert(1, "v".into());
    assert!(!plain.refresh(&1), "built without refresh_after_write");
}

/// The failure that refresh prevents: a hot key read every second with a time to live of
/// 10 s misses every 10 s, and its reader waits for the backing store (here: counts as a
/// miss and runs the loader on its own thread). With a refresh after 5 s the reads never miss
/// after the first: the reloads run in the background before the entry expires.
#[test]
fn refresh_hot_key_with_ttl_never_misses_where_ttl_alone_does() {
    fn run(refresh: bool) -> (u64, usize) {
        let clock = ManualClock::new();
        let mut builder = Cache::builder()
            .max_capacity(100)
            .clock(clock.clone())
            .time_to_live(10 * SECOND)
            .record_stats();
        if refresh {
            builder =
                builder.refresh_after_write(5 * SECOND, |_: &u32, old: &u64| Ok::<_, ()>(old + 1));
        }
        let cache: Cache<u32, u64> = builder.build().unwrap();
        let loads_on_read_path = AtomicUsize::new(0);
        for _ in 0..60 {
            cache.get_with(1, || {
                loads_on_read_path.fetch_add(1, Ordering::SeqCst);
                0
            });
            // Lets a background reload land before the clock moves on.
            eventually("no reload in flight", || cache.loads_in_flight() == 0);
            clock.advance(SECOND);
        }
        (cache.stats().misses, loads_on_read_path.into_inner())
    }
    let (misses, loads) = run(false);
    assert_eq!(
        (misses, loads),
        (6, 6),
        "without refresh: a miss every 10 s"
    );
    let (misses, loads) = run(true);
    assert_eq!(
        (misses, loads),
        (1, 1),
        "with refresh: only the first read misses"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_async_due_read_returns_old_value_then_task_reloads() {
    let clock = ManualClock::new();
    let gate = Arc::new(tokio::sync::Notify::new());
    let reloads = Arc::new(AtomicUsize::new(0));
    let (g, r) = (gate.clone(), reloads.clone());
    let cache: cortado::future::Cache<u32, String> = cortado::future::Cache::builder()
        .max_capacity(100)
        .clock(clock.clone())
        .refresh_after_write_async(
            10 * SECOND,
            move |_key: u32, old: String| {
                let (g, r) = (g.clone(), r.clone());
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    g.notified().await;
                    Ok::<_, ()>(format!("{old} reloaded"))
                }
            },
            |job| {
                tokio::spawn(job);
            },
        )
        .build()
        .unwrap();
    cache.insert(1, "v".into());
    clock.advance(10 * SECOND);
    assert_eq!(cache.get(&1).as_deref(), Some("v"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloads.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(cache.get(&1).as_deref(), Some("v"));
    assert_eq!(reloads.load(Ordering::SeqCst), 1, "one reload per key");
    gate.notify_one();
    while cache.get(&1).as_deref() != Some("v reloaded") {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn refresh_spawner_dropping_job_abandons_reload() {
    let clock = ManualClock::new();
    let cache: cortado::future::Cache<u32, u32> = cortado::future::Cache::builder()
        .max_capacity(10)
        .clock(clock.clone())
        .record_stats()
        .refresh_after_write_async(SECOND, |_, old| async move { Ok::<_, ()>(old + 1) }, drop)
        .build()
        .unwrap();
    cache.insert(1, 1);
    clock.advance(SECOND);
    assert_eq!(cache.get(&1), Some(1));
    assert_eq!(
        cache.as_sync().loads_in_flight(),
        0,
        "the dropped reload left"
    );
    assert_eq!(cache.stats().load_failures, 1);
    // The key can be loaded and refreshed again.
    assert!(cache.refresh(&1));
}
