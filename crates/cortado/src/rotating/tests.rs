use super::*;
use crate::time::ManualClock;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{OnceLock, Weak};
use std::time::Instant;

type Log<K, V> = Arc<Mutex<Vec<(K, V)>>>;

/// A callback that records what it is given, and the shared record.
fn recorder<K: Send + 'static, V: Send + 'static>() -> (Log<K, V>, impl Fn(K, V) + Send + Sync) {
    let log: Log<K, V> = Arc::default();
    let sink = Arc::clone(&log);
    (log, move |k, v| sink.lock().unwrap().push((k, v)))
}

fn sorted<T: Ord + Clone>(log: &Mutex<Vec<T>>) -> Vec<T> {
    let mut items = log.lock().unwrap().clone();
    items.sort();
    items
}

// ---- RotatingMap ----

#[test]
fn new_bucket_count_out_of_range_returns_error() {
    for n in [0, 1, MAX_BUCKETS + 1] {
        let err = RotatingMap::<u32, u32>::new(n).unwrap_err();
        assert_eq!(err, RotatingError::InvalidBucketCount { requested: n });
        assert!(err.to_string().contains(&n.to_string()));
    }
    assert_eq!(RotatingMap::<u32, u32>::new(2).unwrap().bucket_count(), 2);
}

#[test]
fn insert_key_in_older_bucket_moves_it_to_newest() {
    let mut map = RotatingMap::new(3).unwrap();
    assert_eq!(map.insert(1, "a"), None);
    map.rotate();
    map.rotate();
    assert_eq!(map.age(&1), Some(2));
    assert_eq!(map.insert(1, "b"), Some("a"));
    assert_eq!(map.age(&1), Some(0));
    assert_eq!(map.len(), 1);
    // Only one copy: the next rotation (which drops the old bucket) keeps the new value.
    assert_eq!(map.rotate(), 0);
    assert_eq!(map.get(&1), Some(&"b"));
}

#[test]
fn insert_key_in_newest_bucket_replaces_value() {
    let mut map = RotatingMap::new(2).unwrap();
    map.insert("k", 1);
    assert_eq!(map.insert("k", 2), Some(1));
    assert_eq!(map.len(), 1);
    assert_eq!(map.get("k"), Some(&2));
}

#[test]
fn rotate_passes_exactly_oldest_bucket_to_callback() {
    let (log, callback) = recorder();
    let mut map = RotatingMap::with_callback(3, callback).unwrap();
    map.insert(1, 10);
    map.insert(2, 20);
    map.rotate();
    map.insert(3, 30);
    map.rotate();
    map.insert(4, 40);
    // Buckets, newest first: {4}, {3}, {1, 2}.
    assert_eq!(map.rotate(), 2);
    assert_eq!(sorted(&log), vec![(1, 10), (2, 20)]);
    assert_eq!(map.rotate(), 1);
    assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30)]);
    assert_eq!(map.len(), 1);
    assert_eq!(map.get(&4), Some(&40));
}

#[test]
fn rotate_callback_panic_still_passes_rest_then_raises() {
    let (log, record) = recorder();
    let mut calls = 0;
    let mut map = RotatingMap::with_callback(2, move |k: u32, v: u32| {
        record(k, v);
        calls += 1;
        assert!(calls > 1, "the callback fails on the first entry");
    })
    .unwrap();
    for k in 1..=4 {
        map.insert(k, k * 10);
    }
    map.rotate();
    let rotated = std::panic::catch_unwind(AssertUnwindSafe(|| map.rotate()));
    assert!(rotated.is_err(), "the callback's panic reaches the caller");
    assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30), (4, 40)]);
    assert!(map.is_empty());
}

#[test]
fn entry_survives_n_minus_one_rotations_and_expires_on_nth() {
    for n in 2..=6 {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(n, callback).unwrap();
        map.insert("k", n);
        for survived in 1..n {
            assert_eq!(map.rotate(), 0, "n = {n}");
            assert_eq!(map.get("k"), Some(&n), "n = {n} after {survived} rotations");
            assert_eq!(map.age("k"), Some(survived));
        }
        assert_eq!(map.rotate(), 1, "n = {n}");
        assert_eq!(map.get("k"), None);
        assert_eq!(*log.lock().unwrap(), vec![("k", n)]);
    }
}

#[test]
fn reinsert_resets_lifetime() {
    let mut map = RotatingMap::new(3).unwrap();
    map.insert(7, ());
    map.rotate();
    map.rotate();
    map.insert(7, ());
    map.rotate();
    map.rotate();
    assert!(map.contains_key(&7), "re-inserted two rotations ago");
    map.rotate();
    assert!(!map.contains_key(&7));
}

#[test]
fn get_does_not_refresh_but_touch_does() {
    let mut map = RotatingMap::new(2).unwrap();
    map.insert(1, 1);
    map.insert(2, 2);
    map.rotate();
    assert_eq!(map.get(&1), Some(&1));
    *map.get_mut(&1).unwrap() += 10;
    assert!(map.touch(&2));
    assert!(!map.touch(&3));
    map.rotate();
    assert_eq!(map.get(&1), None, "a read must not extend the lifetime");
    assert_eq!(map.get(&2), Some(&2), "touch restarts the lifetime");
    assert!(map.touch(&2), "already newest is still present");
    assert_eq!(map.age(&2), Some(0));
}

#[test]
fn len_counts_entries_across_buckets() {
    let mut map = RotatingMap::new(4).unwrap();
    assert!(map.is_empty());
    for round in 0..4u32 {
        for k in 0..=round {
            map.insert(round * 100 + k, ());
        }
        map.rotate();
    }
    // Rounds 1, 2, 3 remain (2 + 3 + 4 entries); round 0 expired.
    assert_eq!(map.len(), 9);
    assert!(!map.is_empty());
    let mut keys: Vec<u32> = map.iter().map(|(k, _)| *k).collect();
    keys.sort_unstable();
    assert_eq!(keys, vec![100, 101, 200, 201, 202, 300, 301, 302, 303]);
}

#[test]
fn remove_finds_key_in_any_bucket_without_callback() {
    let (log, callback) = recorder();
    let mut map = RotatingMap::with_callback(3, callback).unwrap();
    map.insert(String::from("old"), 1);
    map.rotate();
    map.insert(String::from("new"), 2);
    assert_eq!(map.remove("old"), Some(1));
    assert_eq!(map.remove_entry("new"), Some((String::from("new"), 2)));
    assert_eq!(map.remove("new"), None);
    assert!(map.is_empty());
    for _ in 0..3 {
        map.rotate();
    }
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn clear_drops_everything_without_callback() {
    let (log, callback) = recorder();
    let mut map = RotatingMap::with_callback(2, callback).unwrap();
    map.insert(1, 1);
    map.rotate();
    map.insert(2, 2);
    map.clear();
    assert!(map.is_empty());
    assert_eq!(map.rotate() + map.rotate(), 0);
    assert!(log.lock().unwrap().is_empty());
}

/// A map of three buckets holding, newest first, {3, 4}, {2} and {0, 1}, each value ten times
/// its key, recording what expires.
fn three_generations() -> (Log<u32, u32>, RotatingMap<u32, u32>) {
    let (log, callback) = recorder();
    let mut map = RotatingMap::with_callback(3, callback).unwrap();
    for (key, rotate_after) in [(0, false), (1, true), (2, true), (3, false), (4, false)] {
        map.insert(key, key * 10);
        if rotate_after {
            map.rotate();
        }
    }
    (log, map)
}

#[test]
fn retain_drops_rejected_entries_in_every_bucket_without_callback() {
    let (log, mut map) = three_generations();
    map.retain(|&k, v| {
        *v += 1;
        k % 2 == 0
    });
    let mut left: Vec<(u32, u32, usize)> = map
        .iter()
        .map(|(&k, &v)| (k, v, map.age(&k).unwrap()))
        .collect();
    left.sort_unstable();
    assert_eq!(left, [(0, 1, 2), (2, 21, 1), (4, 41, 0)], "ages unchanged");
    assert!(log.lock().unwrap().is_empty(), "dropping is not expiry");
    assert_eq!(map.rotate(), 1);
    assert_eq!(*log.lock().unwrap(), [(0, 1)]);
}

#[test]
fn iter_mut_changes_values_in_place_and_keeps_ages() {
    let (_, mut map) = three_generations();
    for (&k, v) in map.iter_mut() {
        *v = k + 100;
    }
    let ages: Vec<Option<usize>> = (0..5).map(|k| map.age(&k)).collect();
    assert_eq!(ages, [Some(2), Some(2), Some(1), Some(0), Some(0)]);
    assert!((0..5).all(|k| map.get(&k) == Some(&(k + 100))));
    assert_eq!(map.iter_mut().count(), 5);
}

#[test]
fn rotate_take_returns_entries_and_bypasses_callback() {
    let (log, callback) = recorder();
    let mut map = RotatingMap::with_callback(2, callback).unwrap();
    map.insert(1, 'a');
    map.insert(2, 'b');
    assert_eq!(map.rotate_take().len(), 0);
    let mut expired: Vec<_> = map.rotate_take().collect();
    expired.sort_unstable();
    assert_eq!(expired, vec![(1, 'a'), (2, 'b')]);
    assert!(log.lock().unwrap().is_empty());
    assert!(map.is_empty());
}

#[test]
fn maps_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RotatingMap<String, Vec<u8>>>();
    assert_send_sync::<TimeCacheMap<String, Vec<u8>>>();
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, u32),
    Remove(u8),
    Get(u8),
    Touch(u8),
    Rotate,
    /// Keeps the keys whose bit is set in the mask, adding one to their values.
    Retain(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..12u8, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (0..12u8).prop_map(Op::Remove),
        1 => (0..12u8).prop_map(Op::Get),
        1 => (0..12u8).prop_map(Op::Touch),
        2 => Just(Op::Rotate),
        1 => any::<u16>().prop_map(Op::Retain),
    ]
}

proptest! {
    #![proptest_config(crate::proptest_config(256))]

    /// The model: key -> (value, rotations done when last inserted or touched); an entry is
    /// alive while fewer than N rotations have happened since.
    #[test]
    fn random_ops_match_epoch_model(n in 2..6usize, ops in prop::collection::vec(op(), 0..80)) {
        let (log, callback) = recorder();
        let mut map = RotatingMap::with_callback(n, callback).unwrap();
        let mut model: HashMap<u8, (u32, usize)> = HashMap::new();
        let mut rotations = 0usize;
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    let expected = model.insert(k, (v, rotations)).map(|(v, _)| v);
                    prop_assert_eq!(map.insert(k, v), expected);
                }
                Op::Remove(k) => {
                    prop_assert_eq!(map.remove(&k), model.remove(&k).map(|(v, _)| v));
                }
                Op::Get(k) => {
                    prop_assert_eq!(map.get(&k).copied(), model.get(&k).map(|&(v, _)| v));
                }
                Op::Touch(k) => {
                    let present = match model.get_mut(&k) {
                        Some(entry) => { entry.1 = rotations; true }
                        None => false,
                    };
                    prop_assert_eq!(map.touch(&k), present);
                }
                Op::Retain(mask) => {
                    let kept = |k: u8| mask >> k & 1 == 1;
                    model.retain(|&k, _| kept(k));
                    model.values_mut().for_each(|(v, _)| *v = v.wrapping_add(1));
                    log.lock().unwrap().clear();
                    map.retain(|&k, v| {
                        *v = v.wrapping_add(1);
                        kept(k)
                    });
                    prop_assert!(log.lock().unwrap().is_empty(), "dropping is not expiry");
                }
                Op::Rotate => {
                    rotations += 1;
                    let mut expected: Vec<(u8, u32)> = model
                        .iter()
                        .filter(|(_, &(_, epoch))| rotations - epoch >= n)
                        .map(|(&k, &(v, _))| (k, v))
                        .collect();
                    expected.sort_unstable();
                    model.retain(|_, &mut (_, epoch)| rotations - epoch < n);
                    log.lock().unwrap().clear();
                    prop_assert_eq!(map.rotate(), expected.len());
                    prop_assert_eq!(sorted(&log), expected);
                }
            }
            prop_assert_eq!(map.len(), model.len());
            for k in 0..12u8 {
                prop_assert_eq!(map.get(&k).copied(), model.get(&k).map(|&(v, _)| v));
                prop_assert_eq!(map.age(&k), model.get(&k).map(|&(_, epoch)| rotations - epoch));
            }
        }
    }
}

// ---- TimeCacheMap, deterministic (manual clock) ----

const HOUR: Duration = Duration::from_secs(3600);
const NS: Duration = Duration::from_nanos(1);

/// T = 2 h, N = 3, so I = 1 h and entries live (2 h, 3 h]. The cleaner's first wake-up is an
/// hour of wall time away, so only the test moves the map.
fn manual_map() -> (ManualClock, Log<u32, u32>, TimeCacheMap<u32, u32>) {
    let clock = ManualClock::new();
    let (log, callback) = recorder();
    let map = TimeCacheMap::builder(2 * HOUR)
        .buckets(3)
        .clock(clock.clone())
        .on_expire(callback)
        .build()
        .unwrap();
    (clock, log, map)
}

#[test]
fn time_cache_callback_panic_still_passes_every_batch_then_raises() {
    let clock = ManualClock::new();
    let (log, record) = recorder();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let map = TimeCacheMap::builder(2 * HOUR)
        .buckets(3)
        .clock(clock.clone())
        .on_expire(move |k: u32, v: u32| {
            record(k, v);
            let first = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
            assert!(!first, "the callback fails on the first entry");
        })
        .build()
        .unwrap();
    map.insert(1, 10);
    map.insert(2, 20);
    clock.set(HOUR);
    map.insert(3, 30);
    // Two batches due at once: {1, 2}, then {3}; the failure is in the first.
    clock.set(4 * HOUR);
    let ticked = std::panic::catch_unwind(AssertUnwindSafe(|| map.tick()));
    assert!(ticked.is_err(), "the callback's panic reaches the caller");
    assert_eq!(sorted(&log), vec![(1, 10), (2, 20), (3, 30)]);
    assert!(map.is_empty());
}

/// A value whose `Clone` panics.
#[derive(Debug)]
struct PanickyClone(u32);

impl Clone for PanickyClone {
    fn clone(&self) -> Self {
        panic!("clone of {}", self.0)
    }
}

#[test]
fn time_cache_operation_panics_expired_entries_still_reach_callback() {
    // The rotations an operation does first take entries out of the map; before, a panic in
    // the operation itself (a `retain` predicate, a value's `Clone`) dropped them unheard.
    for operation in ["retain", "get"] {
        let clock = ManualClock::new();
        let (log, record) = recorder();
        let map = TimeCacheMap::builder(2 * HOUR)
            .buckets(3)
            .clock(clock.clone())
            .on_expire(move |k: u32, v: PanickyClone| record(k, v.0))
            .build()
            .unwrap();
        map.insert(1, PanickyClone(10));
        clock.set(HOUR + HOUR / 2);
        map.insert(2, PanickyClone(20));
        // Two rotations due: the second expires key 1; key 2 stays.
        clock.set(3 * HOUR + HOUR / 2);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| match operation {
            "retain" => map.retain(|_, _| panic!("the predicate panics")),
            _ => drop(map.get(&2)),
        }));
        assert!(
            outcome.is_err(),
            "{operation}: the panic reaches the caller"
        );
        assert_eq!(sorted(&log), vec![(1, 10)], "{operation}");
        assert!(map.contains_key(&2) && !map.contains_key(&1), "{operation}");
    }
}

#[test]
fn time_cache_builder_bad_settings_return_error() {
    let err = TimeCacheMap::<u32, u32>::builder(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err, RotatingError::ZeroExpiration);
    let err = TimeCacheMap::<u32, u32>::builder(HOUR)
        .buckets(1)
        .build()
        .unwrap_err();
    assert_eq!(err, RotatingError::InvalidBucketCount { requested: 1 });
}

#[test]
fn time_cache_entry_inserted_at_rotation_lives_until_upper_bound() {
    let (clock, log, map) = manual_map();
    assert_eq!(map.rotation_interval(), HOUR);
    map.insert(1, 10);
    clock.set(3 * HOUR - NS);
    assert_eq!(map.tick(), 0);
    assert_eq!(map.get(&1), Some(10), "just under T * (1 + 1/(N-1)) = 3 h");
    assert!(log.lock().unwrap().is_empty());
    clock.set(3 * HOUR);
    assert_eq!(map.tick(), 1);
    assert_eq!(map.get(&1), None);
    assert_eq!(*log.lock().unwrap(), vec![(1, 10)]);
}

#[test]
fn time_cache_entry_inserted_before_rotation_lives_exactly_expiration() {
    let (clock, log, map) = manual_map();
    let inserted = HOUR - NS; // the last instant before rotation 1
    clock.set(inserted);
    map.insert(1, 10);
    clock.set(inserted + 2 * HOUR);
    assert!(map.contains_key(&1), "age exactly T must still be present");
    clock.set(inserted + 2 * HOUR + NS);
    assert!(!map.contains_key(&1), "rotation 3 is due at 3 h");
    assert_eq!(*log.lock().unwrap(), vec![(1, 10)]);
}

#[test]
fn time_cache_every_operation_catches_up_without_tick() {
    let (clock, log, map) = manual_map();
    map.insert(1, 10);
    map.insert(2, 20);
    clock.set(10 * HOUR);
    // An insert after a long pause must land in a fresh generation, not an overdue one.
    map.insert(3, 30);
    assert_eq!(map.len(), 1);
    assert_eq!(sorted(&log), vec![(1, 10), (2, 20)]);
    clock.set(12 * HOUR);
    assert_eq!(
        map.get(&3),
        Some(30),
        "inserted at 10 h, rotation 10 just done"
    );
    clock.set(13 * HOUR);
    assert_eq!(map.tick(), 1);
    assert_eq!(map.tick(), 0);
}

#[test]
fn time_cache_reinsert_resets_lifetime_but_get_does_not() {
    let (clock, _log, map) = manual_map();
    map.insert(1, 10);
    map.insert(2, 20);
    clock.set(HOUR + HOUR / 2);
    assert_eq!(map.insert(1, 11), Some(10));
    assert_eq!(map.get(&2), Some(20));
    clock.set(3 * HOUR);
    assert_eq!(map.get(&1), Some(11));
    assert_eq!(map.get(&2), None, "get must not have refreshed");
    clock.set(4 * HOUR - NS);
    assert_eq!(map.get(&1), Some(11));
    clock.set(4 * HOUR);
    assert_eq!(map.get(&1), None);
}

#[test]
fn time_cache_touch_remove_and_clear_behave() {
    let (clock, log, map) = manual_map();
    map.insert(1, 10);
    map.insert(2, 20);
    map.insert(3, 30);
    clock.set(2 * HOUR);
    assert!(map.touch(&1));
    assert_eq!(map.remove(&2), Some(20));
    clock.set(3 * HOUR);
    assert_eq!(map.len(), 1, "3 expired, 1 touched at 2 h");
    assert_eq!(*log.lock().unwrap(), vec![(3, 30)]);
    map.clear();
    assert!(map.is_empty());
    clock.set(10 * HOUR);
    assert_eq!(map.tick(), 0);
    assert_eq!(
        *log.lock().unwrap(),
        vec![(3, 30)],
        "remove and clear are not expiry"
    );
}

#[test]
fn time_cache_retain_drops_rejected_entries_without_callback() {
    let (clock, log, map) = manual_map();
    for key in 0..6 {
        map.insert(key, key * 10);
    }
    clock.set(HOUR);
    map.insert(6, 60);
    map.retain(|&k, v| {
        *v += 1;
        k % 3 == 0
    });
    assert_eq!(
        (map.len(), map.get(&0), map.get(&3)),
        (3, Some(1), Some(31))
    );
    assert_eq!(map.get(&6), Some(61));
    clock.set(3 * HOUR);
    assert_eq!(
        map.tick(),
        2,
        "the survivors inserted at 0 expire on schedule"
    );
    assert_eq!(sorted(&log), [(0, 1), (3, 31)]);
}

#[test]
fn time_cache_callback_using_map_does_not_deadlock() {
    let clock = ManualClock::new();
    let slot: Arc<OnceLock<Weak<TimeCacheMap<u32, u32>>>> = Arc::default();
    let in_callback = Arc::clone(&slot);
    let map = Arc::new(
        TimeCacheMap::builder(2 * HOUR)
            .clock(clock.clone())
            .on_expire(move |k, v| {
                if let Some(map) = in_callback.get().and_then(Weak::upgrade) {
                    // Re-arm with a bumped value; would deadlock if called under the lock.
                    map.insert(k, v + 1);
                }
            })
            .build()
            .unwrap(),
    );
    slot.set(Arc::downgrade(&map)).unwrap();
    map.insert(1, 0);
    clock.set(3 * HOUR);
    assert_eq!(map.tick(), 1);
    assert_eq!(map.get(&1), Some(1));
    clock.set(6 * HOUR - NS);
    assert_eq!(
        map.get(&1),
        Some(1),
        "re-inserted at 3 h, so alive until 6 h"
    );
    clock.set(6 * HOUR);
    assert_eq!(map.tick(), 1);
    assert_eq!(map.get(&1), Some(2));
}

#[test]
fn time_cache_key_drop_using_map_does_not_deadlock() {
    type Hook = Arc<OnceLock<Weak<TimeCacheMap<Key, u32>>>>;
    /// A key whose `Drop` reads the map, as the module docs allow.
    struct Key(u32, Hook);
    impl PartialEq for Key {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }
    impl Eq for Key {}
    impl Hash for Key {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            self.0.hash(state);
        }
    }
    impl Drop for Key {
        fn drop(&mut self) {
            if let Some(map) = self.1.get().and_then(Weak::upgrade) {
                map.len();
            }
        }
    }

    let clock = ManualClock::new();
    let hook: Hook = Arc::default();
    let map = Arc::new(
        TimeCacheMap::builder(2 * HOUR)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    hook.set(Arc::downgrade(&map)).unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let worker = Arc::clone(&map);
    // On a thread of its own: a deadlock there fails the test instead of hanging it.
    std::thread::spawn(move || {
        let key = |k| Key(k, Arc::clone(&hook));
        worker.insert(key(1), 1);
        done_tx.send("insert, new").unwrap();
        // The given key or the stored one is dropped: in the newest bucket, then an older one.
        worker.insert(key(1), 2);
        done_tx.send("insert, key in the newest bucket").unwrap();
        clock.set(HOUR);
        worker.insert(key(1), 3);
        done_tx.send("insert, key in an older bucket").unwrap();
        worker.remove(&Key(1, Hook::default()));
        done_tx.send("remove").unwrap();
        worker.insert(key(2), 2);
        worker.retain(|_, _| false);
        done_tx.send("retain").unwrap();
    });
    let mut finished = Vec::new();
    while let Ok(step) = done_rx.recv_timeout(Duration::from_secs(5)) {
        finished.push(step);
    }
    assert_eq!(
        finished,
        [
            "insert, new",
            "insert, key in the newest bucket",
            "insert, key in an older bucket",
            "remove",
            "retain"
        ]
    );
}

proptest! {
    #![proptest_config(crate::proptest_config(256))]

    /// For any T and N, an entry inserted at any time is present at age T and at age
    /// (N - 1)·I, gone at age N·I, where I = ⌈T / (N - 1)⌉ lies within the stated bounds.
    #[test]
    fn time_cache_lifetime_window_holds(
        expiration in 1..1_000_000u64,
        n in 2..6usize,
        inserted in 0..3_000_000u64,
    ) {
        let clock = ManualClock::new();
        let map: TimeCacheMap<u8, ()> = TimeCacheMap::builder(Duration::from_nanos(expiration))
            .buckets(n)
            .clock(clock.clone())
            .build()
            .unwrap();
        let interval = duration_nanos(map.rotation_interval());
        let gaps = n as u64 - 1;
        prop_assert!(gaps * interval >= expiration);
        prop_assert!(n as u64 * interval < expiration * n as u64 / gaps + n as u64);
        clock.set(Duration::from_nanos(inserted));
        map.insert(0, ());
        let at = |age: u64| clock.set(Duration::from_nanos(inserted + age));
        at(expiration);
        prop_assert!(map.contains_key(&0));
        // Gone exactly when the generation's N-th rotation is due.
        let dies = (inserted / interval + n as u64) * interval;
        at(dies - inserted - 1);
        prop_assert!(map.contains_key(&0));
        prop_assert!(dies - inserted > gaps * interval);
        prop_assert!(dies - inserted <= n as u64 * interval);
        at(dies - inserted);
        prop_assert!(!map.contains_key(&0));
    }
}

// ---- TimeCacheMap, real thread ----

fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

#[test]
fn cleaner_thread_expires_untouched_entry() {
    let log: Log<(u32, u32), Option<String>> = Arc::default();
    let sink = Arc::clone(&log);
    let map = TimeCacheMap::builder(Duration::from_millis(50))
        .buckets(3)
        .on_expire(move |k, v| {
            let thread = std::thread::current().name().map(String::from);
            sink.lock().unwrap().push(((k, v), thread));
        })
        .build()
        .unwrap();
    let before = Instant::now();
    map.insert(1, 10);
    // Watch only the callback: touching the map would expire the entry on this thread.
    assert!(poll_until(Duration::from_secs(5), || !log
        .lock()
        .unwrap()
        .is_empty()));
    assert!(
        before.elapsed() >= Duration::from_millis(50),
        "expired before T"
    );
    let expired = log.lock().unwrap().clone();
    assert_eq!(expired, vec![((1, 10), Some(CLEANER_NAME.to_string()))]);
    assert!(map.is_empty());
}

#[test]
fn drop_stops_and_joins_cleaner_promptly() {
    let token = Arc::new(());
    let held = Arc::clone(&token);
    let map: TimeCacheMap<u32, u32> = TimeCacheMap::builder(Duration::from_secs(600))
        .on_expire(move |_, _| drop(Arc::clone(&held)))
        .build()
        .unwrap();
    map.insert(1, 1);
    assert_eq!(Arc::strong_count(&token), 2);
    let start = Instant::now();
    drop(map);
    // The cleaner was sleeping a 300 s interval; drop must wake it, not wait.
    assert!(start.elapsed() < Duration::from_secs(10));
    // Joined: the thread's handle on the shared state, hence the callback, is gone.
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn drop_of_last_handle_inside_callback_does_not_join_itself() {
    let token = Arc::new(());
    let held = Arc::clone(&token);
    let slot: Arc<OnceLock<Weak<TimeCacheMap<u32, u32>>>> = Arc::default();
    let in_callback = Arc::clone(&slot);
    let (holding_tx, holding_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let (result_tx, result_rx) = mpsc::channel();
    let map = Arc::new(
        TimeCacheMap::builder(Duration::from_millis(20))
            .buckets(2)
            .on_expire(move |_, _| {
                let _keep = &held;
                let Some(map) = in_callback.get().and_then(Weak::upgrade) else {
                    return;
                };
                holding_tx.send(()).unwrap();
                go_rx.lock().unwrap().recv().unwrap();
                let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    drop(map);
                }));
                result_tx.send(dropped.is_ok()).unwrap();
            })
            .build()
            .unwrap(),
    );
    slot.set(Arc::downgrade(&map)).unwrap();
    map.insert(1, 1);
    holding_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    drop(map);
    go_tx.send(()).unwrap();
    assert_eq!(result_rx.recv_timeout(Duration::from_secs(5)), Ok(true));
    // The thread then sees the stop flag and ends, freeing the callback.
    assert!(poll_until(Duration::from_secs(5), || Arc::strong_count(
        &token
    ) == 1));
}
