//! Time sources for expiry: the system's monotonic clock, or a manual clock that tests move by hand.
//!
//! Caches read time only when some expiry is configured, as nanoseconds since an arbitrary origin.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Where a cache reads the time from. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<ManualClock>,
}

impl Clock {
    /// The system's monotonic clock (`Instant`).
    pub fn system() -> Self {
        Self { manual: None }
    }

    /// Nanoseconds since this clock's origin.
    #[inline]
    pub fn now_nanos(&self) -> u64 {
        match &self.manual {
            Some(manual) => manual.now_nanos(),
            None => {
                static ORIGIN: OnceLock<Instant> = OnceLock::new();
                let origin = *ORIGIN.get_or_init(Instant::now);
                duration_nanos(origin.elapsed())
            }
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
