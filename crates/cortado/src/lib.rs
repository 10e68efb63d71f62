//! Cortado: an embeddable cache with W-TinyLFU eviction, and the structures it is built from.
//!
//! A cache holds at most its configured capacity (entries, or total weight with a weigher) and
//! never returns an expired value. It keeps the entries most likely to be used again: new keys
//! enter a small recency window, and leave it for the main space only if the admission sketch
//! says they are used more often than the entry they would replace.
//!
//! # Which cache
//!
//! - [`unsync::Cache`]: one thread, `&mut self`, no locking.
//! - [`sync::Cache`]: `Send + Sync`, a cheap `Clone` handle over shards of the same core; reads
//!   take a shard's read lock (and at most try its write lock, to remove expired entries);
//!   loaders (`get_with`, `try_get_with`, `optionally_get_with`) run once per key however many
//!   threads miss it at once.
//! - [`future::Cache`]: the same core with `async` loaders, for any runtime.
//!
//! All three share one builder ([`builder::CacheBuilder`]): `max_capacity`, `weigher`,
//! `time_to_live`, `time_to_idle`, `expire_after` (per entry), `eviction_listener` (with a
//! [`notification::RemovalCause`]), `record_stats`, `clock`, `hasher` and `eviction_policy`;
//! a setting that cannot work is a [`builder::BuildError`] from `build()`, never a panic.
//!
//! A panic in a callback (the weigher, the expiry rules, a loader, the listener, a value's
//! `Clone`) reaches the caller and leaves the cache consistent, so the caches are
//! `UnwindSafe`; a write whose weigher or expiry rule panics leaves the entry it would have
//! replaced, and a listener call that panics does not keep the operation's other removals from
//! being reported. A key whose `Hash` or `Eq` panics gets what `std::collections::HashMap` gives
//! it: no undefined behaviour (the crate's one `unsafe` module, the concurrent shards' lock,
//! does not rely on them), but a cache that may disagree with itself.
//!
//! ```
//! use std::time::Duration;
//! use cortado::sync::Cache;
//!
//! let cache: Cache<String, u64> = Cache::builder()
//!     .max_capacity(10_000)
//!     .time_to_live(Duration::from_secs(60))
//!     .build()
//!     .unwrap();
//! assert_eq!(cache.get_with("answer".to_string(), || 42), 42);
//! assert_eq!(cache.get("answer"), Some(42));
//! ```
//!
//! # Coming from moka
//!
//! [`sync::Cache`] and [`future::Cache`] keep moka's names: the settings `max_capacity`,
//! `initial_capacity`, `weigher`, `time_to_live`, `time_to_idle`, `expire_after` and
//! `eviction_listener`; the loaders `get_with`, `try_get_with` (errors as `Arc<E>`) and
//! `optionally_get_with`; on `entry(k)` and `entry_by_ref(&k)`, `or_insert_with`, `or_insert`,
//! `or_default`, `or_try_insert_with`, `or_optionally_insert_with`, `and_compute_with`,
//! `and_try_compute_with` and `and_upsert_with`; `insert`, `get`, `remove`, `contains_key`,
//! `invalidate_all`, `iter`, `weighted_size` and `run_pending_tasks`; the four removal causes. What
//! differs:
//!
//! | moka | cortado |
//! | --- | --- |
//! | `invalidate(&k)` | `remove(&k)` |
//! | `invalidate_entries_if(pred)` | `retain(keep)`: keeps what `keep` accepts, at once |
//! | `entry_count()`, `policy().max_capacity()` | `len()`, `max_capacity()` |
//! | keys need `Hash + Eq` (moka keeps them in an `Arc`) | the loaders (`get_with` and its variants), `entry`, `entry_by_ref` and `iter` also need `K: Clone` |
//! | `entry(k)` and `entry_by_ref(&q)` return an `OwnedKeyEntrySelector` and a `RefKeyEntrySelector` | they return an `Entry` and a `RefEntry`, with the same methods |
//! | `iter()` yields `(Arc<K>, V)`; `for (k, v) in &cache` | `iter()` yields `(K, V)`, a snapshot of one shard at a time; `for (k, v) in &cache` too |
//! | `entry(k).or_insert_with(..)` and the others return an `Entry<K, V>` | they return the value (the computes: the value held after, or written for `and_upsert_with`) |
//! | `eviction_listener(\|k: Arc<K>, v: V, cause\| ..)` | `eviction_listener(\|k: &K, v: &V, cause\| ..)` |
//! | `Expiry` methods take the time of the event | they take the key, the value and (on update and read) the current lifetime |
//! | `entry(k).and_compute_with(\|entry\| Op::Put(v))`, a `CompResult` | `entry(k).and_compute_with(\|value\| Compute::Put(v))`, the value held after |
//! | `future::Cache`: `get`, `insert`, `remove`, `run_pending_tasks` are `async` | only the loaders and the `entry(k)` and `entry_by_ref(&q)` methods are `async` (they may wait for a load); the rest is synchronous (a shard's short critical section) |
//! | `future` `and_compute_with` takes an async closure | the closure is synchronous (it runs under a shard's lock); the call is `async` |
//! | `expire_after` combines with `time_to_live` and `time_to_idle` | `expire_after` alone decides: with either of the others, `build()` returns `BuildError::ExpiryConflict` |
//! | `and_compute_with`'s closure may read other keys | the compute, `retain` and the weigher and expiry callbacks run under a shard's lock and must not use the cache (see [Callbacks](crate::sync#callbacks)) |
//!
//! Beside them: `insert_with_ttl` (a lifetime for one entry), `peek` (a read that is not a
//! use), `negative_ttl` (a loader's `None` cached for a while), `stats()`, and
//! `hottest(n)`/`coldest(n)` (on `sync::Cache`; from a `future::Cache`, through `as_sync()`).
//! [`unsync::Cache`] also has `get_mut` (a value changed in place, re-weighed when done), as the
//! `lru` crate and quick_cache do.
//!
//! ```
//! use cortado::notification::RemovalCause;
//! use cortado::sync::{Cache, Compute};
//!
//! let cache = Cache::builder()
//!     .max_capacity(100)
//!     .eviction_listener(|_: &u32, _: &String, cause| {
//!         assert_eq!(cause, RemovalCause::Explicit);
//!     })
//!     .build()
//!     .unwrap();
//! cache.insert(1, "one".to_string());
//! cache.entry(2).and_compute_with(|old| match old {
//!     Some(_) => Compute::Nop,
//!     None => Compute::Put("two".to_string()),
//! });
//! assert_eq!(cache.remove(&1).as_deref(), Some("one"));
//! cache.retain(|key, _| *key != 2);
//! assert!(cache.is_empty());
//! ```
//!
//! # Design
//!
//! Entries live in a slab and are named by `u32` indices everywhere (table, policy lists, timer
//! wheel), so the core is safe code; the one `unsafe` module is the read-write lock of the
//! concurrent cache's shards, whose readers write only their own thread's counter (see
//! [`sync`]'s design), checked under a model checker and under Miri, which also runs the
//! library's other tests. The default policy is an adaptive W-TinyLFU ([`policy`]): miniature
//! copies of the cache try seven window and admission modes, and two admission margins (and in
//! small caches two aging periods of the frequency sketch), on a sample of the keys and the cache
//! follows the best. On the simulator's 84 reference cells it averages 42.40% against 40.22% for
//! Caffeine 2.6.2, 40.51% for S3-FIFO and 42.32% for the best reference policy of each cell (see
//! `docs/hit-ratios-84.md`). Heap cost with `u64` keys and values is about 61 bytes per entry
//! without expiry and 78 with a time to live, at a capacity of 1,000,000 (how it varies with the
//! capacity: `docs/decisions/0011-shard-memory-per-entry.md`). Measurements behind the design's
//! choices are in `docs/decisions/`, one file per decision.
//!
//! # Features
//!
//! - `tokio`: [`sync::Scheduler::Tokio`](crate::sync::Scheduler), expiry run by a task on the
//!   tokio runtime instead of a thread.
//!
//! The standalone structures are public so they can be used on their own: the admission
//! [`sketch`] (a 4-bit Count-Min sketch with aging), a general [`count_min`] sketch with top-k,
//! a [`bloom`] filter, the hierarchical [`timer_wheel`], and Storm's [`rotating`] map.

// Allowed in one module only: `shard_lock`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bloom;
pub mod budget;
mod build_error;
pub mod builder;
pub mod count_min;
pub mod expiry;
pub mod future;
mod loader;
// shuttle's schedulers do not run under Miri.
#[cfg(all(test, not(miri)))]
mod model_check;
// Reads the source files, which Miri's isolation forbids.
#[cfg(all(test, not(miri)))]
mod module_graph;
pub mod notification;
pub mod policy;
mod random;
mod read_buffer;
pub mod refresh;
pub mod rotating;
mod scheduler;
mod shard;
mod shard_lock;
mod shim;
pub mod sketch;
pub mod stats;
pub mod sync;
pub mod time;
pub mod timer_wheel;
pub mod unsync;
pub mod write_behind;

/// The hasher every cache uses unless given another (`hasher(...)` on the builders): hashbrown's
/// default, re-exported so that the caches' and builders' types can be written out without a
/// dependency on hashbrown.
pub use hashbrown::DefaultHashBuilder;

/// Proptest's settings for the library's tests: `cases` cases, but only a few under Miri, which
/// interprets every instruction, and there no regression file either (Miri's isolation forbids
/// file access).
#[cfg(test)]
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(4),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        }
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
