//! Model checking of the concurrent building blocks: the read buffer, the loader's miss
//! coalescing and the shards' lock, with their own tests run under `shuttle` over many thread
//! interleavings.
//!
//! Test-only; it runs as part of the ordinary `cargo test -p cortado` (about a second), so CI needs
//! no extra step. Run it alone with `cargo test -p cortado --lib model_check`.
//!
//! # Design
//!
//! The three files are compiled a second time here, with `#[path]`, beside a `shim` module that has
//! the shape of [`crate::shim`] but hands out shuttle's mutexes, atomics, threads and executor
//! (see the [shim's design](crate::shim)). Their test functions, written once, run each body
//! through `shim::model`, which here means [`ITERATIONS`] random schedules, each a different
//! interleaving at every atomic operation and lock; bodies that spawn threads go through
//! `shim::model_threads`, which adds as many schedules of the PCT scheduler. shuttle reports a deadlock (a waiter never
//! released), a panic or a failed assertion together with the schedule that caused it.
//!
//! shuttle explores interleavings under sequential consistency: it cannot find a bug that needs a
//! weaker memory order. The read buffer's slots carry self-contained values (an index, published
//! by nothing else), so its relaxed orderings are sound by construction; the loader synchronizes
//! through mutexes only. The shards' lock does depend on its orderings (sequential consistency
//! between a reader's count and a writer's bit, and for the value's publication): its tests also
//! run under Miri, whose weak-memory emulation reports the data race that a relaxed release of a
//! read, or a relaxed unlock, causes (tried).
//!
//! Not under Miri itself: shuttle's schedulers do not run there.
//!
//! # References
//!
//! 1. Amazon Web Services: shuttle, a library for testing concurrent Rust code (randomized
//!    schedulers, after PCT: S. Burckhardt et al., "A Randomized Scheduler with Probabilistic
//!    Guarantees of Finding Bugs", ASPLOS 2010).

/// Schedules explored per test and scheduler.
pub(crate) const ITERATIONS: usize = 1_000;
/// Preemption points per schedule of the PCT scheduler.
pub(crate) const PCT_DEPTH: usize = 3;

/// The shuttle-backed twin of [`crate::shim`].
mod shim {
    pub(crate) use shuttle::future::block_on;
    pub(crate) use shuttle::sync::{Arc, Mutex, MutexGuard};
    pub(crate) use shuttle::thread;

    /// Atomics, as `shuttle::sync::atomic`.
    pub(crate) mod atomic {
        pub(crate) use shuttle::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    }

    /// Test bodies run under the model checker.
    pub(crate) const EXPLORES_SCHEDULES: bool = true;

    /// Runs a test body under [`ITERATIONS`](super::ITERATIONS) random schedules.
    pub(crate) fn model(body: impl Fn() + Send + Sync + 'static) {
        shuttle::check_random(body, super::ITERATIONS);
    }

    /// [`model`], then as many schedules of the PCT scheduler (which refuses a body that spawns
    /// no thread), which preempts at a few chosen points: it found in a fraction of a second a
    /// read buffer bug that a million random schedules missed.
    pub(crate) fn model_threads(body: impl Fn() + Send + Sync + 'static) {
        let body = std::sync::Arc::new(body);
        let random = body.clone();
        model(move || random());
        shuttle::check_pct(move || body(), super::ITERATIONS, super::PCT_DEPTH);
    }
}

// Loaded twice on purpose (see the design above); only their tests are used here.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "read_buffer.rs"]
mod read_buffer;

#[allow(dead_code, clippy::duplicate_mod)]
#[path = "loader.rs"]
mod loader;

#[allow(dead_code, clippy::duplicate_mod)]
#[path = "shard_lock.rs"]
mod shard_lock;
