//! A panic in user code that a cache calls while it works on a shard (the weigher, the expiry
//! rules, a value's `Clone`, a `retain` predicate, an `and_compute_with` closure, a loader, the
//! listener) reaches the caller and leaves a consistent cache: `validate()` passes right after
//! it (the table, the slots, the policy and the timers agree, and the capacity holds), the
//! cache goes on working, and every value it held is reported to the listener once, by the
//! time it is emptied. A panicking write that has changed nothing yet leaves the old entry in
//! place.
//!
//! Keys whose `Hash` or `Eq` panic are left out, as `std::collections::HashMap` leaves them
//! out: the cache has no `unsafe` code, so nothing worse than a cache that disagrees with
//! itself can follow, but it may.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use crate::common::all_policies;
use cortado::builder::CacheBuilder;
use cortado::expiry::Expiry;
use cortado::notification::RemovalCause;
use cortado::policy::EvictionPolicy;
use cortado::sync::Compute;
use cortado::time::ManualClock;
use proptest::prelude::*;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// Panics, naming `site`, when the traps are armed on this thread and `fires`.
fn trap(fires: bool, site: &str) {
    if fires && ARMED.with(Cell::get) {
        panic!("trap in {site}");
    }
}

/// Runs `op` with the traps armed; whether it panicked.
fn armed<R>(op: impl FnOnce() -> R) -> bool {
    quiet_traps();
    ARMED.with(|a| a.set(true));
    let outcome = catch_unwind(AssertUnwindSafe(op));
    ARMED.with(|a| a.set(false));
    outcome.is_err()
}

/// Keeps the traps' panics (thousands, by design) out of the test output; other panics are
/// reported as usual.
fn quiet_traps() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let trapped = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|message| message.starts_with("trap in "));
            if !trapped {
                report(info);
            }
        }));
    });
}

/// A value whose clone panics when armed, for multiples of 9. The second field is an id of
/// its own (clones share it), so the listener's reports can be matched with what was held;
/// two values are equal when their first fields are.
#[derive(Debug)]
struct Val(u8, u32);

impl Clone for Val {
    fn clone(&self) -> Self {
        trap(self.0 % 9 == 0, "Val::clone");
        Val(self.0, self.1)
    }
}

impl PartialEq for Val {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

/// A new value `v` with a fresh id.
fn val(v: u8) -> Val {
    static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    Val(
        v,
        NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}

thread_local! {
    /// The ids of the values the listeners of this thread's caches were told of, in order.
    static REPORTED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Weighs 1 to 4; panics when armed for multiples of 5.
fn weigh(_: &u8, v: &Val) -> u32 {
    trap(v.0 % 5 == 0, "the weigher");
    u32::from(v.0 % 4) + 1
}

/// Lifetimes of 1 to 6 s; each callback panics when armed for its own values.
struct Traps;

impl Expiry<u8, Val> for Traps {
    fn expire_after_create(&self, _: &u8, v: &Val) -> Option<Duration> {
        trap(v.0 % 7 == 1, "expire_after_create");
        Some(Duration::from_secs(u64::from(v.0 % 6) + 1))
    }

    fn expire_after_update(&self, _: &u8, v: &Val, _: Option<Duration>) -> Option<Duration> {
        trap(v.0 % 7 == 2, "expire_after_update");
        Some(Duration::from_secs(u64::from(v.0 % 6) + 1))
    }

    fn expire_after_read(&self, _: &u8, v: &Val, current: Option<Duration>) -> Option<Duration> {
        trap(v.0 % 7 == 3, "expire_after_read");
        current.map(|c| c.min(Duration::from_secs(3)))
    }
}

type Heard = Arc<Mutex<Vec<(u8, RemovalCause)>>>;

/// The builder every test starts from: capacity 40, and the traps in every callback the
/// settings ask for (the listener's panics for keys that are multiples of 11).
fn trapped<S, F>(
    builder: CacheBuilder<u8, Val, S, F>,
    policy: EvictionPolicy,
    weighted: bool,
    expiring: bool,
    clock: &ManualClock,
) -> (CacheBuilder<u8, Val, S, F>, Heard) {
    let heard: Heard = Arc::default();
    let sink = heard.clone();
    let mut builder = builder
        .max_capacity(40)
        .eviction_policy(policy)
        .clock(clock.clone())
        .eviction_listener(move |k: &u8, v: &Val, cause| {
            sink.lock().unwrap().push((*k, cause));
            REPORTED.with(|reported| reported.borrow_mut().push(v.1));
            trap(k % 11 == 0, "the listener");
        });
    if weighted {
        builder = builder.weigher(weigh);
    }
    if expiring {
        builder = builder.expire_after(Traps);
    }
    (builder, heard)
}

#[derive(Clone, Debug)]
enum Op {
    Get(u8),
    Peek(u8),
    Insert(u8, u8),
    InsertTtl(u8, u8, u8),
    Remove(u8),
    Load(u8, u8),
    Compute(u8, u8),
    /// The unsync cache's `get_mut`, changing the value's first field in place (a `get` on the
    /// sync cache, which has none).
    GetMut(u8, u8),
    Retain(u8),
    Iter,
    Resize(u8),
    InvalidateAll,
    RunPending,
    Advance(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..24u8).prop_map(Op::Get),
        1 => (0..24u8).prop_map(Op::Peek),
        6 => (0..24u8, any::<u8>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (0..24u8, any::<u8>(), 1..8u8).prop_map(|(k, v, t)| Op::InsertTtl(k, v, t)),
        2 => (0..24u8).prop_map(Op::Remove),
        3 => (0..24u8, any::<u8>()).prop_map(|(k, v)| Op::Load(k, v)),
        2 => (0..24u8, any::<u8>()).prop_map(|(k, v)| Op::Compute(k, v)),
        2 => (0..24u8, any::<u8>()).prop_map(|(k, v)| Op::GetMut(k, v)),
        1 => (2..6u8).prop_map(Op::Retain),
        1 => Just(Op::Iter),
        1 => (0..60u8).prop_map(Op::Resize),
        1 => Just(Op::InvalidateAll),
        1 => Just(Op::RunPending),
        2 => (1..4u8).prop_map(Op::Advance),
    ]
}

/// What the driver needs of a front end.
trait Front {
    fn run(&mut self, op: &Op, clock: &ManualClock);
    fn validate(&self);
    /// With the traps disarmed: the cache still stores and returns a value.
    fn still_works(&mut self);
    /// The ids of the values held.
    fn held(&self) -> Vec<u32>;
    /// With the traps disarmed: removes every entry, and reports what is still to report.
    fn empty(&mut self);
}

/// Whether a loader or compute closure panics for this value (when armed).
fn loader_fires(v: u8) -> bool {
    v % 13 == 0
}

/// Runs `$op` on the cache `$cache`: the operations both front ends spell alike, then the
/// arms given for the loading ones (`Load`, `Compute`), which differ.
macro_rules! run_op {
    ($cache:ident, $op:expr, $clock:ident, { $($own:tt)* }) => {
        match *$op {
            Op::Get(k) => drop($cache.get(&k)),
            Op::Peek(k) => drop($cache.peek(&k)),
            Op::Insert(k, v) => $cache.insert(k, val(v)),
            Op::InsertTtl(k, v, t) => {
                $cache.insert_with_ttl(k, val(v), Duration::from_secs(t.into()));
            }
            Op::Remove(k) => drop($cache.remove(&k)),
            Op::Retain(m) => $cache.retain(|k, _| {
                trap(k % 7 == 6, "the retain predicate");
                k % m != 0
            }),
            Op::Iter => drop($cache.iter().count()),
            Op::Resize(c) => $cache.set_max_capacity(c.into()),
            Op::InvalidateAll => $cache.invalidate_all(),
            Op::RunPending => $cache.run_pending_tasks(),
            Op::Advance(s) => $clock.advance(Duration::from_secs(s.into())),
            $($own)*
        }
    };
}

/// The `Front` methods both front ends spell alike.
macro_rules! front_methods {
    () => {
        fn held(&self) -> Vec<u32> {
            self.iter().map(|(_, v)| v.1).collect()
        }

        fn empty(&mut self) {
            self.invalidate_all();
            self.run_pending_tasks();
        }
    };
}

impl Front for cortado::unsync::Cache<u8, Val> {
    fn run(&mut self, op: &Op, clock: &ManualClock) {
        run_op!(self, op, clock, {
            Op::Load(k, v) => drop(self.get_or_insert_with(k, || {
                trap(loader_fires(v), "the loader");
                val(v)
            })),
            Op::Compute(k, v) => {
                let _ = self.try_get_or_insert_with(k, || {
                    trap(loader_fires(v), "the fallible loader");
                    if v % 2 == 0 {
                        Ok(val(v))
                    } else {
                        Err("refused")
                    }
                });
            }
            Op::GetMut(k, v) => {
                if let Some(mut value) = self.get_mut(&k) {
                    // The id stays: the listener must still hear of this value once.
                    value.0 = v;
                    // A panic while the guard is held.
                    trap(v % 17 == 0, "the get_mut change");
                }
            }
        })
    }

    fn validate(&self) {
        cortado::unsync::Cache::validate(self);
    }

    fn still_works(&mut self) {
        self.set_max_capacity(200);
        self.insert(250, val(1));
        assert_eq!(self.get(&250), Some(&val(1)));
        self.validate();
    }

    front_methods!();
}

impl Front for cortado::sync::Cache<u8, Val> {
    fn run(&mut self, op: &Op, clock: &ManualClock) {
        run_op!(self, op, clock, {
            Op::Load(k, v) => drop(self.get_with(k, || {
                trap(loader_fires(v), "the loader");
                val(v)
            })),
            Op::Compute(k, v) => drop(self.entry(k).and_compute_with(|old| {
                trap(loader_fires(v), "the compute closure");
                match (old, v % 3) {
                    (_, 0) => Compute::Put(val(v)),
                    (Some(_), 1) => Compute::Remove,
                    _ => Compute::Nop,
                }
            })),
            Op::GetMut(k, _) => drop(self.get(&k)),
        })
    }

    fn validate(&self) {
        // The bound holds after maintenance (in between, the excess the docs allow).
        self.run_pending_tasks();
        cortado::sync::Cache::validate(self);
    }

    fn still_works(&mut self) {
        self.set_max_capacity(200);
        self.insert(250, val(1));
        assert_eq!(self.get(&250), Some(val(1)));
        self.validate();
    }

    front_methods!();
}

/// Runs `ops` armed, one at a time, validating after each (the tests below show that every
/// trap fires). Then empties the cache and checks the listener's reports: none twice, and
/// every value the cache was seen to hold among them, so a panic lost no report.
fn drive(cache: &mut impl Front, ops: &[Op], clock: &ManualClock) {
    REPORTED.with(|reported| reported.borrow_mut().clear());
    let mut held = std::collections::HashSet::new();
    for op in ops {
        armed(|| cache.run(op, clock));
        cache.validate();
        held.extend(cache.held());
    }
    cache.still_works();
    held.extend(cache.held());
    cache.empty();
    let reported = REPORTED.with(|reported| std::mem::take(&mut *reported.borrow_mut()));
    let mut once = std::collections::HashSet::new();
    for id in &reported {
        assert!(once.insert(*id), "value {id} reported twice");
    }
    let mut lost: Vec<u32> = held.difference(&once).copied().collect();
    lost.sort_unstable();
    assert!(lost.is_empty(), "held, never reported: {lost:?}");
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    #[test]
    fn unsync_panicking_callbacks_leave_cache_consistent(
        ops in prop::collection::vec(op(), common::ops(200)),
        which in 0..7usize,
        weighted in any::<bool>(),
        expiring in any::<bool>(),
    ) {
        let clock = ManualClock::new();
        let (builder, _) = trapped(
            cortado::unsync::Cache::builder(), all_policies()[which], weighted, expiring, &clock,
        );
        drive(&mut builder.build().unwrap(), &ops, &clock);
    }

    #[test]
    fn sync_panicking_callbacks_leave_cache_consistent(
        ops in prop::collection::vec(op(), common::ops(200)),
        which in 0..7usize,
        weighted in any::<bool>(),
        expiring in any::<bool>(),
        shards in prop::sample::select(vec![1usize, 4]),
    ) {
        let clock = ManualClock::new();
        let (builder, _) = trapped(
            cortado::sync::Cache::builder(), all_policies()[which], weighted, expiring, &clock,
        );
        drive(&mut builder.shards(shards).build().unwrap(), &ops, &clock);
    }
}

type UnsyncCache = cortado::unsync::Cache<u8, Val>;
type SyncCache = cortado::sync::Cache<u8, Val>;

/// Both front ends, built with every trap (W-TinyLFU, weigher and expiry), each with what its
/// listener heard.
fn both() -> ((UnsyncCache, Heard), (SyncCache, Heard)) {
    let clock = ManualClock::new();
    let policy = EvictionPolicy::tiny_lfu();
    let (builder, unsync_heard) = trapped(
        cortado::unsync::Cache::builder(),
        policy,
        true,
        true,
        &clock,
    );
    let unsync = builder.build().unwrap();
    let (builder, sync_heard) =
        trapped(cortado::sync::Cache::builder(), policy, true, true, &clock);
    (
        (unsync, unsync_heard),
        (builder.build().unwrap(), sync_heard),
    )
}

#[test]
fn write_callback_panic_on_replacement_keeps_old_value() {
    // 5 trips the weigher, 9 expire_after_update; 4 trips nothing.
    for new in [5, 9] {
        let ((mut unsync, _), (sync, _)) = both();
        unsync.insert(1, val(4));
        sync.insert(1, val(4));
        assert!(armed(|| unsync.insert(1, val(new))), "unsync with {new}");
        assert!(armed(|| sync.insert(1, val(new))), "sync with {new}");
        assert_eq!(unsync.get(&1), Some(&val(4)));
        assert_eq!(sync.get(&1), Some(val(4)));
        unsync.validate();
        sync.validate();
    }
}

#[test]
fn write_callback_panic_on_new_key_inserts_nothing() {
    // 5 trips the weigher, 8 expire_after_create.
    for new in [5, 8] {
        let ((mut unsync, _), (sync, _)) = both();
        unsync.insert(1, val(4));
        sync.insert(1, val(4));
        assert!(armed(|| unsync.insert(2, val(new))), "unsync with {new}");
        assert!(armed(|| sync.insert(2, val(new))), "sync with {new}");
        assert!(!unsync.contains_key(&2) && !sync.contains_key(&2));
        assert_eq!((unsync.len(), sync.len()), (1, 1));
        unsync.validate();
        sync.validate();
    }
}

#[test]
fn read_callback_panic_keeps_entry() {
    // 17 trips expire_after_read; 18 is a value whose clone panics (sync reads clone).
    let ((mut unsync, _), (sync, _)) = both();
    unsync.insert(1, val(17));
    sync.insert(1, val(17));
    sync.insert(2, val(18));
    assert!(armed(|| unsync.get(&1).is_some()));
    assert!(armed(|| sync.get(&1).is_some()));
    assert!(armed(|| sync.get(&2).is_some()));
    assert!(unsync.contains_key(&1));
    assert!(sync.contains_key(&1) && sync.contains_key(&2));
    unsync.validate();
    sync.validate();
}

#[test]
fn get_mut_weigher_or_change_panic_removes_entry_and_reports_it() {
    // 5 trips the weigher when the guard drops; 17 the change, while the guard is held.
    for new in [5, 17] {
        let ((mut unsync, heard), _) = both();
        unsync.insert(1, val(4));
        unsync.insert(2, val(4));
        let clock = ManualClock::new();
        assert!(armed(|| Front::run(
            &mut unsync,
            &Op::GetMut(1, new),
            &clock
        )));
        Front::validate(&unsync);
        assert!(!unsync.contains_key(&1) && unsync.contains_key(&2), "{new}");
        unsync.run_pending_tasks();
        assert_eq!(
            *heard.lock().unwrap(),
            vec![(1, RemovalCause::Explicit)],
            "{new}"
        );
    }
}

#[test]
fn retain_and_loader_panics_leave_cache_consistent() {
    let ((mut unsync, _), (sync, _)) = both();
    for k in 0..10 {
        unsync.insert(k, val(4));
        sync.insert(k, val(4));
    }
    // The predicate panics at key 6, whenever the walk reaches it.
    let op = Op::Retain(2);
    let clock = ManualClock::new();
    assert!(armed(|| Front::run(&mut unsync, &op, &clock)));
    assert!(armed(|| Front::run(&mut sync.clone(), &op, &clock)));
    Front::validate(&unsync);
    Front::validate(&sync);
    assert!(unsync.contains_key(&6) && sync.contains_key(&6));
    // A loader that panics inserts nothing.
    let op = Op::Load(20, 13);
    assert!(armed(|| Front::run(&mut unsync, &op, &clock)));
    assert!(armed(|| Front::run(&mut sync.clone(), &op, &clock)));
    assert!(!unsync.contains_key(&20) && !sync.contains_key(&20));
    Front::validate(&unsync);
    Front::validate(&sync);
}

#[test]
fn listener_panic_still_hears_every_removal_then_panics() {
    let ((mut unsync, unsync_heard), (sync, sync_heard)) = both();
    for k in 0..15 {
        unsync.insert(k, val(4));
        sync.insert(k, val(4));
    }
    // The calls for keys 0 and 11 panic; all fifteen are still heard, then a panic goes on.
    assert!(armed(|| unsync.invalidate_all()));
    assert!(armed(|| sync.invalidate_all()));
    for heard in [&unsync_heard, &sync_heard] {
        let mut keys: Vec<u8> = heard.lock().unwrap().iter().map(|&(k, _)| k).collect();
        keys.sort_unstable();
        assert_eq!(keys, (0..15).collect::<Vec<u8>>());
        heard.lock().unwrap().clear();
    }
    // The report of a removal itself is made too, then the panic goes on.
    unsync.insert(11, val(4));
    sync.insert(11, val(4));
    assert!(armed(|| unsync.remove(&11)));
    assert!(armed(|| sync.remove(&11)));
    for heard in [&unsync_heard, &sync_heard] {
        assert_eq!(*heard.lock().unwrap(), vec![(11, RemovalCause::Explicit)]);
    }
    assert!(!unsync.contains_key(&11) && !sync.contains_key(&11));
    Front::validate(&unsync);
    Front::validate(&sync);
}

#[test]
fn compute_closure_panic_keeps_entry() {
    let (_, (sync, _)) = both();
    sync.insert(1, val(4));
    assert!(armed(|| sync.entry(1).and_compute_with(
        |_| -> Compute<Val> {
            trap(true, "the compute closure");
            Compute::Remove
        }
    )));
    assert_eq!(sync.get(&1), Some(val(4)));
    sync.validate();
}

fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>(_: &T) {}

#[test]
fn caches_unwind_safe_without_assert_wrapper() {
    let sync = cortado::sync::Cache::<String, Arc<Vec<u8>>>::builder()
        .max_capacity(10)
        .weigher(|_, v: &Arc<Vec<u8>>| v.len() as u32)
        .eviction_listener(|_, _, _| {})
        .build()
        .unwrap();
    unwind_safe(&sync);
    unwind_safe(&cortado::future::Cache::<String, u64>::new(10));
    unwind_safe(&cortado::unsync::Cache::<String, u64>::new(10));
    sync.insert("a".into(), Arc::new(vec![1, 2]));
    // The handle goes into catch_unwind as it is, no AssertUnwindSafe.
    quiet_traps();
    ARMED.with(|a| a.set(true));
    let caught = catch_unwind(|| {
        sync.get_with("b".to_string(), || {
            trap(true, "a loader");
            Arc::new(vec![])
        })
    });
    ARMED.with(|a| a.set(false));
    assert!(caught.is_err());
    assert_eq!(sync.get("a").as_deref(), Some(&vec![1, 2]));
    assert!(!sync.contains_key("b"));
    sync.validate();
}

/// A sync cache of 4 shards (capacity 400) whose listener records each removal, then panics
/// (when armed) on every call.
fn sharded_with_panicking_listener() -> (SyncCache, Heard) {
    let heard: Heard = Arc::default();
    let sink = heard.clone();
    let cache = cortado::sync::Cache::builder()
        .max_capacity(400)
        .shards(4)
        .eviction_listener(move |k: &u8, _: &Val, cause| {
            sink.lock().unwrap().push((*k, cause));
            trap(true, "the listener");
        })
        .build()
        .unwrap();
    (cache, heard)
}

fn heard_keys(heard: &Heard) -> Vec<u8> {
    let mut keys: Vec<u8> = heard.lock().unwrap().drain(..).map(|(k, _)| k).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn sync_listener_panic_in_whole_cache_operation_still_reaches_every_shard() {
    let (sync, heard) = sharded_with_panicking_listener();
    let fill = || (0..40).for_each(|k| sync.insert(k, val(4)));
    fill();
    // Forty keys over four shards: every shard has some, and each shard's first report panics.
    assert!(armed(|| sync.invalidate_all()));
    assert!(
        sync.is_empty(),
        "invalidate_all left {} entries",
        sync.len()
    );
    assert_eq!(heard_keys(&heard), (0..40).collect::<Vec<u8>>());
    fill();
    assert!(armed(|| sync.retain(|k, _| k % 2 == 0)));
    assert_eq!(sync.len(), 20, "retain stopped at a shard");
    assert_eq!(
        heard_keys(&heard),
        (0..40).filter(|k| k % 2 == 1).collect::<Vec<u8>>()
    );
    fill();
    assert!(armed(|| sync.set_max_capacity(8)));
    assert_eq!(
        sync.max_capacity(),
        8,
        "set_max_capacity stopped at a shard"
    );
    assert!(sync.weighted_size() <= 8);
    sync.validate();
}

#[test]
fn sync_remove_value_clone_panic_still_reports_removal() {
    let (_, (sync, heard)) = both();
    // val(9)'s clone panics: `remove` clones the value it returns.
    sync.insert(1, val(9));
    assert!(armed(|| sync.remove(&1)));
    assert!(!sync.contains_key(&1));
    assert_eq!(*heard.lock().unwrap(), vec![(1, RemovalCause::Explicit)]);
    sync.validate();
}

#[test]
fn sync_loaded_value_clone_panic_counts_failed_load() {
    let clock = ManualClock::new();
    let (builder, _) = trapped(
        cortado::sync::Cache::builder(),
        EvictionPolicy::tiny_lfu(),
        false,
        false,
        &clock,
    );
    let sync = builder.record_stats().build().unwrap();
    // The loader returns, then the cache's clone of val(9) (for the waiters) panics.
    assert!(armed(|| sync.get_with(1, || val(9))));
    let stats = sync.stats();
    assert_eq!(
        stats.load_successes + stats.load_failures,
        1,
        "the run was not counted"
    );
    assert_eq!(sync.loads_in_flight(), 0);
    assert!(!sync.contains_key(&1));
    sync.validate();
}

#[test]
fn sync_insert_weigher_panic_during_load_keeps_loaded_value() {
    // While key 1's loader runs, a write of val(5) to key 1 (an insert, then a compute's `Put`)
    // panics in the weigher: it changed nothing, so the load ends as if it had not been tried.
    // The writes run inside the loader of key 2, where a compute does not wait for key 1's load
    // (from key 1's own loader it would panic before the weigher).
    let writes: [fn(&SyncCache); 2] = [
        |cache| cache.insert(1, val(5)),
        |cache| {
            cache.entry(1).and_compute_with(|_| Compute::Put(val(5)));
        },
    ];
    for write in writes {
        let (_, (sync, heard)) = both();
        let (started, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let (loaded, other) = std::thread::scope(|s| {
            let loader = s.spawn(|| {
                sync.get_with(1, || {
                    started.wait();
                    release.wait();
                    val(4)
                })
            });
            started.wait();
            let other = sync.get_with(2, || {
                assert!(armed(|| write(&sync)));
                val(6)
            });
            release.wait();
            (loader.join().unwrap(), other)
        });
        assert_eq!((loaded, other), (val(4), val(6)));
        assert_eq!(
            sync.get(&1),
            Some(val(4)),
            "the loaded value was not cached"
        );
        assert!(
            heard.lock().unwrap().is_empty(),
            "{:?}",
            heard.lock().unwrap()
        );
        sync.validate();
    }
}

#[test]
fn sync_listener_panic_on_scheduler_thread_keeps_scheduler_running() {
    quiet_traps();
    let heard: Heard = Arc::default();
    let sink = heard.clone();
    let cache = cortado::sync::Cache::builder()
        .max_capacity(10)
        .time_to_live(Duration::from_millis(20))
        .scheduler(cortado::sync::Scheduler::Thread)
        .eviction_listener(move |k: &u8, _: &Val, cause| {
            sink.lock().unwrap().push((*k, cause));
            // The scheduler's thread is not armed: this listener always panics.
            let site = "the listener";
            panic!("trap in {site}");
        })
        .build()
        .unwrap();
    let alive = cache.scheduler_alive().expect("a scheduler thread");
    // Nobody touches the cache: only the scheduler can expire these, one after the other.
    for key in [1, 2] {
        cache.insert(key, val(4));
        let deadline = std::time::Instant::now() + common::paced(Duration::from_secs(5));
        while !heard
            .lock()
            .unwrap()
            .contains(&(key, RemovalCause::Expired))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "key {key} was not expired by the scheduler (alive: {})",
                alive.load(std::sync::atomic::Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(alive.load(std::sync::atomic::Ordering::SeqCst));
}
