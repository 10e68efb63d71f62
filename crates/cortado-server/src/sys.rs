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
//! - [`LendSlot`], which lends a closure that borrows the caller's stack to code further down
//!   the same thread's stack that can only be `'static` (the Lua engine's permanent
//!   `redis.call`, which reaches the running script's command context through it; `unsafe`
//!   because the borrow's lifetime is erased while it is lent).
//!
//! The allocator's and the slot's tests call them directly, so they run under Miri, which
//! checks every block and borrow (`.ci/miri`); Miri cannot run foreign code, so
//! `add_long_double` is covered by the tests of `INCRBYFLOAT`, natively.

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

/// A place where a closure borrowing the stack is lent, for the length of a call, to code
/// further down the same thread's stack, which takes it back out to call it.
///
/// A `LendSlot` is neither `Send` nor `Sync`: it is used from one thread (as a
/// `thread_local!`), so whatever finds a closure in it runs inside the [`lend`](Self::lend)
/// that put it there, on the same stack.
///
/// # Design
///
/// The slot holds a pointer to the lent closure with its lifetime erased, set by
/// [`lend`](Self::lend) and put back as it was when `lend` returns or unwinds (a guard's
/// `Drop`), so it never outlives the borrow. [`with`](Self::with) takes the pointer out for
/// the length of its call (so a nested `with` finds nothing: no two `&mut` to one closure) and
/// hands it on with a lifetime no longer than that call. `Lua::scope`, which does the same for
/// one run through Lua's own objects, cost about 10,000 instructions a script (see
/// `docs/decisions/0233-server-script-path.md`).
pub struct LendSlot<A, R> {
    lent: std::cell::Cell<Option<Erased<A, R>>>,
}

/// A lent closure, its lifetime erased.
type Erased<A, R> = std::ptr::NonNull<dyn FnMut(A) -> R>;

impl<A, R> Default for LendSlot<A, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A, R> LendSlot<A, R> {
    /// An empty slot.
    pub const fn new() -> Self {
        Self {
            lent: std::cell::Cell::new(None),
        }
    }

    /// Runs `body` with `f` lent: a [`with`](Self::with) inside `body` (on this thread, the
    /// slot not being `Send`) calls it.
    pub fn lend<'f, T>(&self, f: &mut (dyn FnMut(A) -> R + 'f), body: impl FnOnce() -> T) -> T {
        let ptr: std::ptr::NonNull<dyn FnMut(A) -> R + 'f> = std::ptr::NonNull::from(f);
        // SAFETY: only the lifetime bound of the trait object changes (the two pointer types
        // have the same layout). The erased pointer is read only by `with`, which runs inside
        // this call (the slot is neither `Send` nor `Sync`, so only this thread reaches it) and
        // before `_restore` below takes it out again, while `f`'s borrow is held by this frame.
        let erased: Erased<A, R> = unsafe { std::mem::transmute(ptr) };
        let _restore = Restore {
            slot: &self.lent,
            previous: self.lent.replace(Some(erased)),
        };
        body()
    }

    /// Calls `g` with the lent closure, `None` if none is lent (or it is being called: a
    /// nested call finds the slot empty).
    pub fn with<T>(
        &self,
        g: impl for<'x> FnOnce(&'x mut (dyn FnMut(A) -> R + 'x)) -> T,
    ) -> Option<T> {
        let ptr = self.lent.take()?;
        let _restore = Restore {
            slot: &self.lent,
            previous: Some(ptr),
        };
        // SAFETY: a pointer in the slot was put there by a `lend` still running on this
        // thread's stack (it takes it out before it returns), from a `&mut` that `lend` holds
        // for its whole length, so the closure is alive and nothing else reaches it: the slot
        // is empty while `g` runs, and `g`, higher-ranked over `'x`, cannot keep the reference
        // (nor the closure's borrows, which only live inside it) past this call.
        let f: &mut (dyn FnMut(A) -> R + '_) = unsafe { &mut *ptr.as_ptr() };
        Some(g(f))
    }
}

/// Puts a slot back as it was when dropped.
struct Restore<'s, A, R> {
    slot: &'s std::cell::Cell<Option<Erased<A, R>>>,
    previous: Option<Erased<A, R>>,
}

impl<A, R> Drop for Restore<'_, A, R> {
    fn drop(&mut self) {
        self.slot.set(self.previous.take());
    }
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

    #[test]
    fn lend_slot_with_inside_lend_calls_the_closure_on_borrowed_locals() {
        let slot = LendSlot::<u32, u32>::new();
        let mut total = 0;
        let mut add = |n: u32| {
            total += n;
            total
        };
        let seen = slot.lend(&mut add, || {
            let first = slot.with(|f| f(2));
            let second = slot.with(|f| f(3));
            (first, second)
        });
        assert_eq!(seen, (Some(2), Some(5)));
        assert_eq!(total, 5);
    }

    #[test]
    fn lend_slot_outside_lend_finds_nothing() {
        let slot = LendSlot::<(), ()>::new();
        assert_eq!(slot.with(|f| f(())), None);
        let mut nothing = |()| {};
        slot.lend(&mut nothing, || {});
        assert_eq!(slot.with(|f| f(())), None, "emptied when lend returned");
    }

    #[test]
    fn lend_slot_nested_with_finds_the_slot_empty() {
        let slot = LendSlot::<u8, u8>::new();
        let mut double = |n: u8| n * 2;
        let inner = slot.lend(&mut double, || slot.with(|f| (f(4), slot.with(|g| g(1)))));
        assert_eq!(inner, Some((8, None)));
    }

    #[test]
    fn lend_slot_nested_lend_gives_the_outer_closure_back() {
        let slot = LendSlot::<u8, &'static str>::new();
        let mut outer = |_| "outer";
        let mut inner = |_| "inner";
        let seen = slot.lend(&mut outer, || {
            let nested = slot.lend(&mut inner, || slot.with(|f| f(0)));
            let from_with = slot.with(|f| {
                slot.lend(&mut |_| "deep", || slot.with(|g| g(0)))
                    .map(|d| (f(0), d))
            });
            (nested, slot.with(|f| f(0)), from_with)
        });
        assert_eq!(
            seen,
            (Some("inner"), Some("outer"), Some(Some(("outer", "deep"))))
        );
        assert_eq!(slot.with(|f| f(0)), None);
    }

    #[test]
    fn lend_slot_unwinding_body_empties_the_slot() {
        let slot = LendSlot::<(), u8>::new();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut seven = |()| 7;
            slot.lend(&mut seven, || {
                assert_eq!(slot.with(|f| f(())), Some(7));
                panic!("the body unwinds");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(slot.with(|f| f(())), None);
    }
}
