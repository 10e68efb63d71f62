//! The server's one module of `unsafe` code: its interfaces to the system.
//!
//! - [`CountingAllocator`], the global allocator the binary installs so that `INFO`'s
//!   `used_memory` is the bytes allocated, as Redis reports it (`unsafe` because
//!   `GlobalAlloc` is an unsafe trait: each method passes the call on to the system allocator
//!   unchanged).
//! - [`add_long_double`], a call into `csrc/long_double.c` for the sums Redis computes in C's
//!   `long double`, a type Rust does not have.
//!
//! Neither is reachable by Miri (foreign code and a process-wide allocator); both are covered
//! by the tests of the modules that use them, natively.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
pub(crate) static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes it has handed out.
pub struct CountingAllocator;

// SAFETY: every call is passed unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the counting beside it touches no memory of the caller's.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` is valid for `alloc`, as `GlobalAlloc::alloc` requires.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`, and `new_size` is valid, as
        // `GlobalAlloc::realloc` requires of the caller.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[inline]
fn count(delta: isize) {
    if delta >= 0 {
        let now = ALLOCATED.fetch_add(delta as usize, Ordering::Relaxed) + delta as usize;
        if now > PEAK.load(Ordering::Relaxed) {
            PEAK.store(now, Ordering::Relaxed);
        }
    } else {
        ALLOCATED.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
    }
}

extern "C" {
    fn cortado_add_long_double(
        a: *const u8,
        alen: usize,
        b: *const u8,
        blen: usize,
        out: *mut u8,
        outlen: usize,
    ) -> std::ffi::c_long;
}

/// Adds the decimal numbers `a` and `b` in C's `long double` and writes the sum into `out` as
/// Redis prints it; returns the text's length, or the C function's negative error code (-1:
/// a number does not parse, -2: the sum is not finite, -3: `out` is too small).
pub fn add_long_double(a: &[u8], b: &[u8], out: &mut [u8]) -> i64 {
    // SAFETY: the C function reads `alen` bytes from `a` and `blen` from `b`, both valid for
    // those lengths as slices are, and writes at most `outlen` bytes (its terminating zero
    // included) into `out`, which is valid for writes of that length; it keeps no pointer.
    let n = unsafe {
        cortado_add_long_double(
            a.as_ptr(),
            a.len(),
            b.as_ptr(),
            b.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    };
    // `c_long` is 32 bits on some platforms.
    #[allow(clippy::useless_conversion)]
    i64::from(n)
}
