//! Time sources for expiry: the system's monotonic clock, or a manual clock that tests move by hand.
//!
//! Caches read time only when some expiry is configured, as nanoseconds since an arbitrary origin.
//!
//! # Design
//!
//! A cache with a lifetime or a refresh reads the clock on every operation, so the read must be
//! cheap. The system clock is the processor's time-stamp counter, scaled to nanoseconds, through
//! the `quanta` crate (which moka uses too): about 11 ns a read where `Instant::now` through
//! the kernel's vDSO takes about 36 ns (`docs/decisions/0018-clock-source.md`). `quanta` uses
//! the counter only where the processor says it is invariant (same rate on every core, in every
//! power state) and falls back to the operating system's monotonic clock elsewhere. Its rate is
//! calibrated against that clock at the first read (under a millisecond); the calibration's
//! error, measured at about 0.002%, makes an hour's lifetime end within a tenth of a second of
//! the hour. Under Miri, which cannot run the counter's instruction, the clock is `Instant`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Where a cache reads the time from. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<ManualClock>,
}

impl Clock {
    /// The system's monotonic clock (the time-stamp counter where it is invariant: see the
    /// [module docs](self)).
    pub fn system() -> Self {
        Self { manual: None }
    }

    /// Nanoseconds since this clock's origin.
    #[inline]
    pub fn now_nanos(&self) -> u64 {
        match &self.manual {
            Some(manual) => manual.now_nanos(),
            None => system_nanos(),
        }
    }
}

impl From<ManualClock> for Clock {
    fn from(manual: ManualClock) -> Self {
        Self {
            manual: Some(manual),
        }
    }
}

/// A clock that moves only when told to; clones share the same time. For tests and simulations.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by`, stopping at `u64::MAX` nanoseconds.
    pub fn advance(&self, by: Duration) {
        let by = duration_nanos(by);
        // `fetch_add` would wrap around, moving the clock backwards. A plain compare-exchange
        // loop rather than `fetch_update`, which newer toolchains deprecate in favour of
        // `try_update`, a method our minimum Rust (1.85) lacks.
        let mut now = self.nanos.load(Ordering::SeqCst);
        while let Err(actual) = self.nanos.compare_exchange_weak(
            now,
            now.saturating_add(by),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            now = actual;
        }
    }

    /// Sets the clock to `at` after its origin; may move it backwards.
    pub fn set(&self, at: Duration) {
        self.nanos.store(duration_nanos(at), Ordering::SeqCst);
    }

    /// Nanoseconds since the origin.
    pub fn now_nanos(&self) -> u64 {
        self.nanos.load(Ordering::SeqCst)
    }
}

/// Nanoseconds since the first read of the system clock.
#[cfg(not(miri))]
#[inline]
fn system_nanos() -> u64 {
    // The clock's raw reading is the counter itself; scaling only the difference from the
    // origin keeps the read to the counter, a subtraction and a multiply-shift.
    static CLOCK: OnceLock<(quanta::Clock, u64)> = OnceLock::new();
    let (clock, origin) = CLOCK.get_or_init(|| {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        (clock, origin)
    });
    clock.delta_as_nanos(*origin, clock.raw())
}

/// Nanoseconds since the first read of the system clock.
#[cfg(miri)]
fn system_nanos() -> u64 {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(std::time::Instant::now);
    duration_nanos(origin.elapsed())
}

/// A duration in nanoseconds, saturating at `u64::MAX` (about 584 years).
#[inline]
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_time() {
        let a = ManualClock::new();
        let clock = Clock::from(a.clone());
        a.advance(Duration::from_secs(2));
        assert_eq!(clock.now_nanos(), 2_000_000_000);
        a.set(Duration::from_millis(1));
        assert_eq!(clock.now_nanos(), 1_000_000);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let clock = Clock::system();
        let t0 = clock.now_nanos();
        std::thread::sleep(Duration::from_millis(2));
        assert!(clock.now_nanos() >= t0 + 1_000_000);
    }

    #[test]
    fn system_clock_keeps_the_operating_system_clock_rate() {
        let clock = Clock::system();
        // Each read of the clock is bracketed by two of the OS clock, so however the thread is
        // preempted, the interval the clock measures lies between the shortest and the longest
        // interval the brackets allow, give or take the rate error (about 0.002%: 1 us in 50 ms).
        let read = || {
            let before = std::time::Instant::now();
            let nanos = clock.now_nanos();
            (before, nanos, std::time::Instant::now())
        };
        let (before0, t0, after0) = read();
        std::thread::sleep(Duration::from_millis(50));
        let (before1, t1, after1) = read();
        let shortest = duration_nanos(before1 - after0);
        let longest = duration_nanos(after1 - before0);
        let slack = 20_000;
        assert!(
            (shortest.saturating_sub(slack)..=longest + slack).contains(&(t1 - t0)),
            "the clock measured {} ns where the OS clock allows {shortest} to {longest} ns",
            t1 - t0
        );
    }

    #[test]
    fn manual_clock_advance_past_u64_max_saturates() {
        let clock = ManualClock::new();
        clock.set(Duration::from_secs(5));
        clock.advance(Duration::MAX);
        assert_eq!(
            clock.now_nanos(),
            u64::MAX,
            "moved forward, not wrapped around"
        );
    }

    #[test]
    fn manual_clock_advance_from_two_threads_loses_no_step() {
        let clock = ManualClock::new();
        let steps: u64 = if cfg!(miri) { 50 } else { 10_000 };
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    for _ in 0..steps {
                        clock.advance(Duration::from_nanos(3));
                    }
                });
            }
        });
        assert_eq!(clock.now_nanos(), 2 * steps * 3);
    }

    #[test]
    fn duration_nanos_huge_saturates() {
        assert_eq!(duration_nanos(Duration::MAX), u64::MAX);
    }
}
