//! A global allocator that forwards to the system allocator and, once switched on, keeps a
//! running total of the heap bytes currently allocated.
//!
//! The `peers` binary installs it as its `#[global_allocator]` and switches it on only in the
//! child process that measures one cache's memory, so the throughput runs pay one relaxed load
//! of a flag per allocation and nothing else.
//!
//! # Design
//!
//! - **Current bytes, not a peak.** A cache's footprint is what it holds once built and filled;
//!   the transient peak while a hash table doubles is a different question. The total is an
//!   `AtomicIsize` because blocks allocated before counting started may be freed after, which
//!   takes the total below its starting point: callers take differences of two readings.
//! - **Requested sizes.** The total counts the sizes callers asked for (`Layout::size`), not the
//!   allocator's rounded-up size classes: the same figure for every cache, and the one the
//!   caches' own docs quote.
//! - **The one `unsafe` module of the crate.** `GlobalAlloc` is an `unsafe trait`; each method
//!   only forwards to [`System`] with the caller's own arguments, so the caller's guarantees are
//!   exactly the ones `System` needs. Nothing else in the crate may use `unsafe` (`lib.rs` denies
//!   it and allows it here alone).
//!
//! # References
//!
//! 1. The `std::alloc::GlobalAlloc` documentation (the contract forwarded here).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Whether allocations are being counted.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Heap bytes allocated minus bytes freed while counting was on.
static CURRENT: AtomicIsize = AtomicIsize::new(0);

/// The system allocator with a byte counter; install it with `#[global_allocator]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingAlloc;

/// Starts counting (from this point on, every allocation and free moves the total).
pub fn start_counting() {
    COUNTING.store(true, Ordering::SeqCst);
}

/// Heap bytes allocated minus bytes freed since [`start_counting`]; only differences of two
/// readings mean anything, and only when this allocator is the global one.
pub fn current_bytes() -> isize {
    CURRENT.load(Ordering::SeqCst)
}

#[inline]
fn record(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        CURRENT.fetch_add(delta, Ordering::Relaxed);
    }
}

// Layout sizes never exceed `isize::MAX` (a `Layout` invariant), so the casts are lossless.
// SAFETY: every method forwards to `System` with the arguments it was given, so the caller's
// obligations under `GlobalAlloc` are passed on unchanged; the counter has no effect on memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller guarantees `layout` has a non-zero size, as `System` requires.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: 1. the caller guarantees `ptr` came from this allocator with `layout`;
        // 2. this allocator got every block from `System`, so `System` may free it.
        unsafe { System.dealloc(ptr, layout) };
        record(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: 1. the caller guarantees `ptr` came from this allocator with `layout`, and
        // that `new_size` is non-zero and fits a `Layout` of the same alignment; 2. the block
        // came from `System`, so `System` may resize it.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            record(new_size as isize - layout.size() as isize);
        }
        new
    }
}
