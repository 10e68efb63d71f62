//! The server's one module of `unsafe` code: its interfaces to the system.
//!
//! - [`CountingAllocator`], the global allocator the binary installs so that `INFO`'s
//!   `used_memory` is the bytes allocated, as Redis reports it: the usable size of each block
//!   (what `malloc_usable_size` says, rounding included), which `maxmemory` limits (`unsafe`
//!   because `GlobalAlloc` is an unsafe trait: each method passes the call on to the system
//!   allocator unchanged).
//! - [`heap_in_use`], the C library's own count of the heap in use (`mallinfo2`), which tests
//!   and `MEMORY MALLOC-STATS` set beside `used_memory`.
//! - [`add_long_double`], a call into `csrc/long_double.c` for the sums Redis computes in C's
//!   `long double`, a type Rust does not have.
//!
//! The allocator's tests call it directly (not installed), so they run under Miri, which checks
//! every block (`.ci/miri`); Miri cannot run foreign code, so `add_long_double` is covered by
//! the tests of `INCRBYFLOAT`, natively.

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
            // SAFETY: `ptr` is a live block just allocated by `System` for `layout`.
            count(unsafe { usable_size(ptr, layout.size()) } as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            // SAFETY: as in `alloc`.
            count(unsafe { usable_size(ptr, layout.size()) } as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block allocated by `System` (through this allocator) with
        // `layout`, read before it is freed.
        let size = unsafe { usable_size(ptr, layout.size()) };
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(size as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a live block allocated by `System` with `layout`.
        let old = unsafe { usable_size(ptr, layout.size()) };
        // SAFETY: `ptr` was allocated by `System` with `layout`, and `new_size` is valid, as
        // `GlobalAlloc::realloc` requires of the caller.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // SAFETY: `new` is a live block just returned by `System` for `new_size` bytes.
            count(unsafe { usable_size(new, new_size) } as isize - old as isize);
        }
        new
    }
}

/// The usable size of the live block `ptr` of `size` requested bytes: what the C library
/// rounded it up to, where it says (glibc), else `size`.
///
/// # Safety
///
/// `ptr` must be a live block from the system allocator.
#[inline]
unsafe fn usable_size(ptr: *mut u8, size: usize) -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    {
        // SAFETY: `ptr` is a live block of the C library's allocator, as the caller promises.
        unsafe { malloc_usable_size(ptr.cast()) }.max(size)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
    {
        let _ = ptr;
        size
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
extern "C" {
    fn malloc_usable_size(ptr: *mut std::ffi::c_void) -> usize;
    fn mallinfo2() -> MallInfo2;
}

/// glibc's `struct mallinfo2` (the whole layout; two fields are read).
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
#[repr(C)]
#[allow(dead_code)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

/// The bytes of heap the C library counts in use (its small blocks and its mapped ones, block
/// headers included), or `None` where it does not say (not glibc).
pub fn heap_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    {
        // SAFETY: `mallinfo2` takes no argument and returns a plain struct by value.
        let info = unsafe { mallinfo2() };
        Some((info.uordblks + info.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
    {
        None
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

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;

    /// Allocates, grows, shrinks and frees through the allocator (called directly, not
    /// installed), checking the bytes it counts and that the memory is usable throughout.
    fn churn(rounds: usize) {
        for round in 0..rounds {
            let layout = Layout::from_size_align(16 + round, 8).unwrap();
            // SAFETY: the layout has a non-zero size; every pointer is checked for null before
            // use, written within its size, and freed once with the layout it has at that time.
            unsafe {
                let p = CountingAllocator.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert!((0..layout.size()).all(|i| *p.add(i) == 0));
                p.write_bytes(7, layout.size());
                let grown = CountingAllocator.realloc(p, layout, 4 * layout.size());
                assert!(!grown.is_null());
                assert!((0..layout.size()).all(|i| *grown.add(i) == 7));
                let big = Layout::from_size_align(4 * layout.size(), 8).unwrap();
                let shrunk = CountingAllocator.realloc(grown, big, 8);
                assert!(!shrunk.is_null());
                assert_eq!(*shrunk, 7);
                CountingAllocator.dealloc(shrunk, Layout::from_size_align(8, 8).unwrap());
                let q = CountingAllocator.alloc(layout);
                assert!(!q.is_null());
                q.write_bytes(1, layout.size());
                CountingAllocator.dealloc(q, layout);
            }
        }
    }

    #[test]
    fn counting_allocator_balanced_calls_count_back_to_start() {
        // The test binary's own allocations go to the default allocator, so only these
        // calls move the counters; every call here is balanced.
        let before = ALLOCATED.load(Ordering::Relaxed);
        let layout = Layout::from_size_align(1_000, 8).unwrap();
        // SAFETY: a non-zero size, checked for null, freed once with its layout.
        let p = unsafe { CountingAllocator.alloc(layout) };
        assert!(!p.is_null());
        // SAFETY: `p` is live, from the system allocator.
        let usable = unsafe { usable_size(p, 1_000) };
        assert!((1_000..1_100).contains(&usable), "{usable}");
        assert_eq!(ALLOCATED.load(Ordering::Relaxed), before + usable);
        assert!(PEAK.load(Ordering::Relaxed) >= before + usable);
        // SAFETY: `p` came from this allocator with `layout`.
        unsafe { CountingAllocator.dealloc(p, layout) };
        assert_eq!(ALLOCATED.load(Ordering::Relaxed), before);

        let threads: Vec<_> = (0..2).map(|_| thread::spawn(|| churn(20))).collect();
        churn(20);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(ALLOCATED.load(Ordering::Relaxed), before);
    }
}
