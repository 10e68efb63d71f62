//! A cache used from thread-local destructors as its thread ends: once the cache's own thread
//! locals are gone it must still work, since a panic there aborts the process. The order in
//! which a thread's locals are destroyed is not specified, so two holders are set, one before
//! the cache's first use on the thread and one after it: whichever the order, one of them uses
//! the cache after the cache's locals are gone. A file of its own, so that a regression aborts
//! this test binary only.

use std::cell::RefCell;
use std::sync::mpsc::{self, Sender};
use std::thread;
use std::time::Duration;

use cortado::sync::{Cache, Compute};

/// Inserts, loads and computes keys `base + 1`, `base + 2` and `base + 5` when dropped, and
/// sends `base` with what it read.
struct UsesCacheOnDrop {
    cache: Cache<u32, u32>,
    base: u32,
    sent: Sender<(u32, Option<u32>)>,
}

impl Drop for UsesCacheOnDrop {
    fn drop(&mut self) {
        let base = self.base;
        self.cache.insert(base + 1, 10);
        let loaded = self.cache.get_with(base + 2, || 20);
        self.cache
            .entry(base + 5)
            .and_compute_with(|_| Compute::Put(50));
        let read = self.cache.get(&(base + 1)).map(|value| value + loaded);
        let _ = self.sent.send((base, read));
    }
}

thread_local! {
    static BEFORE: RefCell<Option<UsesCacheOnDrop>> = const { RefCell::new(None) };
    static AFTER: RefCell<Option<UsesCacheOnDrop>> = const { RefCell::new(None) };
}

#[test]
fn cache_used_from_thread_local_destructors_works() {
    let cache: Cache<u32, u32> = Cache::new(1_000);
    let (sent, received) = mpsc::channel();
    let inner = cache.clone();
    thread::spawn(move || {
        let holder = |base| UsesCacheOnDrop {
            cache: inner.clone(),
            base,
            sent: sent.clone(),
        };
        BEFORE.with(|slot| *slot.borrow_mut() = Some(holder(100)));
        inner.insert(0, 0);
        assert_eq!(inner.get(&0), Some(0));
        assert_eq!(inner.get_with(3, || 30), 30);
        inner.entry(4).and_compute_with(|_| Compute::Put(40));
        AFTER.with(|slot| *slot.borrow_mut() = Some(holder(200)));
    })
    .join()
    .expect("the thread ends normally");
    let mut heard: Vec<(u32, Option<u32>)> = (0..2)
        .map(|_| received.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    heard.sort_unstable();
    assert_eq!(heard, [(100, Some(30)), (200, Some(30))]);
    for base in [100, 200] {
        assert_eq!(cache.get(&(base + 2)), Some(20));
        assert_eq!(cache.get(&(base + 5)), Some(50));
    }
}
