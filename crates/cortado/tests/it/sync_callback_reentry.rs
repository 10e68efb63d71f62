//! A callback that the concurrent cache runs under a shard's lock (a compute, a `retain`
//! predicate, a weigher, an expiry rule, a value's `Clone`) must not use the same cache: on the same shard it
//! would wait for itself forever. In builds with debug assertions (these tests') it panics
//! instead, with the reason, whichever shard it uses, and the cache goes on working.

#![cfg(debug_assertions)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::common;
use cortado::expiry::Expiry;
use cortado::sync::{Cache, Compute};

const REASON: &str = "callbacks must not use their cache";

/// A way for a callback to reach the cache it belongs to, set once the cache is built. The
/// cache holds the callback, which holds this: a test ends the cycle with [`forget`], or Miri
/// reports the cache as leaked.
type Handle<V> = Arc<Mutex<Option<Cache<u32, V>>>>;

/// The cache in `handle`, if set.
fn reach<V: Clone + Send + Sync + 'static>(handle: &Handle<V>) -> Option<Cache<u32, V>> {
    handle.lock().unwrap().clone()
}

/// Sets the cache that `handle` reaches, once the cache is built.
fn attach<V>(handle: &Handle<V>, cache: &Cache<u32, V>) {
    *handle.lock().unwrap() = Some(cache.clone());
}

/// Ends the cycle between a cache and its callback's handle.
fn forget<V>(handle: &Handle<V>) {
    handle.lock().unwrap().take();
}

/// Runs `op` on a thread of its own and returns its panic message; fails if `op` returned, or
/// if it has not ended within 10 s (it waits for itself).
fn panic_message(op: impl FnOnce() + Send + 'static) -> String {
    let (done, ended) = mpsc::channel();
    thread::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(op));
        let _ = done.send(outcome.err().map(|payload| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        }));
    });
    match ended.recv_timeout(common::paced(Duration::from_secs(10))) {
        Ok(Some(message)) => message,
        Ok(None) => panic!("the callback's use of its cache did not panic"),
        Err(_) => panic!("the callback's use of its cache still waits after 10 s"),
    }
}

/// A one-shard cache (every key on the lock the callback runs under) holding keys 0 to 9.
fn one_shard() -> Cache<u32, u32> {
    let cache = Cache::builder()
        .max_capacity(100)
        .shards(1)
        .build()
        .unwrap();
    for key in 0..10 {
        cache.insert(key, key);
    }
    cache
}

/// The cache answers and holds what it held, bar `changed`, after the panic.
fn still_works(cache: &Cache<u32, u32>) {
    cache.validate();
    cache.insert(50, 50);
    assert_eq!(cache.get(&50), Some(50));
    for key in 0..10 {
        assert_eq!(cache.get(&key), Some(key));
    }
}

#[test]
fn compute_closure_reading_own_shard_panics_instead_of_waiting() {
    let cache = one_shard();
    let inner = cache.clone();
    let message = panic_message(move || {
        inner.entry(20).and_compute_with(|_| {
            let _ = inner.get(&1);
            Compute::Nop
        });
    });
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&20));
    still_works(&cache);
}

#[test]
fn retain_predicate_inserting_panics_instead_of_waiting() {
    let cache = one_shard();
    let inner = cache.clone();
    let message = panic_message(move || {
        inner.retain(|_, _| {
            inner.insert(30, 30);
            true
        });
    });
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&30));
    still_works(&cache);
}

#[test]
fn weigher_reading_its_cache_panics_instead_of_waiting() {
    let handle: Handle<u32> = Arc::default();
    let seen = Arc::clone(&handle);
    let cache = Cache::builder()
        .max_capacity(100)
        .shards(1)
        .weigher(move |_: &u32, value: &u32| {
            if *value == 40 {
                let _ = reach(&seen).map(|cache| cache.get(&0));
            }
            1
        })
        .build()
        .unwrap();
    attach(&handle, &cache);
    for key in 0..10 {
        cache.insert(key, key);
    }
    let inner = cache.clone();
    let message = panic_message(move || inner.insert(40, 40));
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&40));
    still_works(&cache);
    forget(&handle);
}

/// Lives an hour (under Miri, whose clock runs at least at the host's pace, one second is too
/// short for the test); a read of key 70 inserts key 60 into the cache in `handle`.
struct InsertOnRead {
    handle: Handle<u32>,
}

impl Expiry<u32, u32> for InsertOnRead {
    fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
        Some(Duration::from_secs(3600))
    }

    fn expire_after_read(&self, key: &u32, _: &u32, current: Option<Duration>) -> Option<Duration> {
        if *key == 70 {
            if let Some(cache) = reach(&self.handle) {
                cache.insert(60, 60);
            }
        }
        current
    }
}

#[test]
fn expire_after_read_writing_own_shard_panics_instead_of_waiting() {
    let handle: Handle<u32> = Arc::default();
    let cache = Cache::builder()
        .max_capacity(100)
        .shards(1)
        .expire_after(InsertOnRead {
            handle: Arc::clone(&handle),
        })
        .build()
        .unwrap();
    attach(&handle, &cache);
    for key in (0..10).chain([70]) {
        cache.insert(key, key);
    }
    let inner = cache.clone();
    let message = panic_message(move || {
        let _ = inner.get(&70);
    });
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&60));
    still_works(&cache);
    forget(&handle);
}

#[test]
fn future_compute_closure_writing_own_shard_panics_instead_of_waiting() {
    let cache: cortado::future::Cache<u32, u32> = cortado::future::Cache::builder()
        .max_capacity(100)
        .shards(1)
        .build()
        .unwrap();
    cache.insert(1, 1);
    let inner = cache.clone();
    let message = panic_message(move || {
        futures::executor::block_on(inner.entry(2).and_compute_with(|_| {
            inner.insert(3, 3);
            Compute::Put(2)
        }));
    });
    assert!(message.contains(REASON), "{message}");
    assert_eq!(cache.get(&1), Some(1));
    assert_eq!(cache.get(&2), None);
    assert_eq!(cache.get(&3), None);
}

#[test]
fn compute_closure_reading_other_shards_panics_every_time() {
    let cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(1_000)
        .shards(8)
        .build()
        .unwrap();
    for key in 0..100 {
        cache.insert(key, key);
    }
    // Whichever shard the key read is on, the use is refused, not only on key 500's.
    for key in 0..100 {
        let inner = cache.clone();
        let message = panic_message(move || {
            inner
                .entry(500)
                .and_compute_with(|_| Compute::Put(inner.get(&key).unwrap_or(0)));
        });
        assert!(message.contains(REASON), "{message}");
    }
    assert!(!cache.contains_key(&500));
    cache.validate();
}

#[test]
fn compute_closure_using_another_cache_is_allowed() {
    let (cache, other) = (one_shard(), one_shard());
    let value = cache
        .entry(20)
        .and_compute_with(|_| Compute::Put(other.get(&7).unwrap() * 3));
    assert_eq!(value, Some(21));
    assert_eq!(cache.get(&20), Some(21));
}

#[test]
fn compute_closure_of_another_cache_using_the_first_panics_instead_of_waiting() {
    let (cache, other) = (one_shard(), one_shard());
    let (inner, other_inner) = (cache.clone(), other.clone());
    let message = panic_message(move || {
        inner.entry(20).and_compute_with(|_| {
            other_inner.entry(21).and_compute_with(|_| {
                let _ = inner.get(&1);
                Compute::Put(21)
            });
            Compute::Put(20)
        });
    });
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&20));
    assert!(!other.contains_key(&21));
    still_works(&cache);
    other.validate();
    assert_eq!(other.get(&7), Some(7));
}

#[test]
fn compute_closure_using_first_cache_after_another_still_panics() {
    let (cache, other) = (one_shard(), one_shard());
    let (inner, other_inner) = (cache.clone(), other.clone());
    // The other cache's operation ends its own mark only: the first cache's stays.
    let message = panic_message(move || {
        inner.entry(20).and_compute_with(|_| {
            assert_eq!(other_inner.get(&7), Some(7));
            other_inner.insert(22, 22);
            let _ = inner.get(&1);
            Compute::Put(20)
        });
    });
    assert!(message.contains(REASON), "{message}");
    assert!(!cache.contains_key(&20));
    assert_eq!(other.get(&22), Some(22));
    still_works(&cache);
}

#[test]
fn refused_use_caught_on_same_thread_leaves_caches_usable() {
    let (cache, other) = (one_shard(), one_shard());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        cache.entry(20).and_compute_with(|_| {
            other.entry(21).and_compute_with(|_| {
                let _ = cache.get(&1);
                Compute::Put(21)
            });
            Compute::Put(20)
        });
    }));
    assert!(outcome.is_err());
    // On the thread that caught the panic, neither cache is marked as held any more.
    still_works(&cache);
    other.validate();
    let value = cache
        .entry(23)
        .and_compute_with(|_| Compute::Put(other.get(&7).unwrap()));
    assert_eq!(value, Some(7));
    assert!(!other.contains_key(&21));
}

/// A value whose `Clone` reads the cache it sits in, through a handle set after the build.
#[derive(Debug)]
struct ReadsOnClone(u32, Handle<ReadsOnClone>);

impl Clone for ReadsOnClone {
    fn clone(&self) -> Self {
        if let Some(cache) = reach(&self.1) {
            let _ = cache.contains_key(&1);
        }
        Self(self.0, self.1.clone())
    }
}

#[test]
fn value_clone_reading_its_cache_panics_in_get_peek_and_iter() {
    let handle: Handle<ReadsOnClone> = Arc::default();
    let cache: Cache<u32, ReadsOnClone> = Cache::builder()
        .max_capacity(100)
        .shards(1)
        .build()
        .unwrap();
    for key in 0..10 {
        cache.insert(key, ReadsOnClone(key, handle.clone()));
    }
    attach(&handle, &cache);
    for op in 0..3 {
        let cache = cache.clone();
        let message = panic_message(move || match op {
            0 => drop(cache.get(&3)),
            1 => drop(cache.peek(&3)),
            _ => drop(cache.iter().count()),
        });
        assert!(message.contains(REASON), "op {op}: {message}");
    }
    // No mark is left behind, and the cache still answers (its `Clone` reads the cache
    // again, so only the key is looked at).
    cache.validate();
    assert!(cache.contains_key(&3));
    assert_eq!(cache.len(), 10);
    // The values hold the cache: dropping them ends the cycle.
    cache.invalidate_all();
}
