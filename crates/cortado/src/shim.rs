//! The synchronization primitives of the concurrent building blocks ([`read_buffer`],
//! [`loader`] and [`shard_lock`]), named in one place so that a model checker can replace them.
//!
//! Every build uses `std`'s primitives from here; the test-only `model_check` module compiles
//! those three files a second time next to a shim of the same shape backed by `shuttle`.
//!
//! # Design
//!
//! `read_buffer.rs`, `loader.rs` and `shard_lock.rs` import their atomics, mutexes and threads as `super::shim::*`,
//! that is from the shim *beside* them, never as `crate::shim`. The crate declares them at its
//! root, next to this module; `model_check` declares them again (`#[path]`) next to its own
//! shuttle-backed `shim`. So the very same source, tests included, is model checked in the
//! ordinary `cargo test`, with no feature or `cfg` flag to remember and no copy to keep in step.
//! The tests of those files run their bodies through `model`, which here runs them once
//! and under `model_check` explores many thread interleavings.
//!
//! [`block_on`] is the one piece of executor the blocking front end needs: its loaders are
//! written once, as futures (see [`sync`](crate::sync)), and a blocked thread simply parks until
//! the loader it waits for wakes it.
//!
//! [`read_buffer`]: crate::read_buffer
//! [`loader`]: crate::loader
//! [`shard_lock`]: crate::shard_lock

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

pub(crate) use std::sync::{Arc, Mutex, MutexGuard};
pub(crate) use std::thread;

/// Atomics, as `std::sync::atomic`.
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on this thread, parking while it is pending.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            // A spurious unpark only costs another poll.
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Whether test bodies run under a model checker (the twin's is `true`): tests that loop to
/// meet interleavings by chance loop less there.
#[cfg(test)]
pub(crate) const EXPLORES_SCHEDULES: bool = false;

/// Runs a test body once (the model-checked twin explores many schedules instead).
#[cfg(test)]
pub(crate) fn model(body: impl Fn() + Send + Sync + 'static) {
    body();
}

/// [`model`] for a body that spawns threads (the twin also runs it under a second scheduler).
#[cfg(test)]
pub(crate) fn model_threads(body: impl Fn() + Send + Sync + 'static) {
    body();
}
