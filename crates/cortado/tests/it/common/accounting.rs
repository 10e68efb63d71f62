//! Accounting for every value a multi-threaded test wrote: each value (unique, with its key) must
//! at the end be either held under its key or heard exactly once by the eviction listener, and
//! the stats must count exactly what the listener heard. Also the timeout guard those tests run
//! under, so a hung waiter fails instead of stalling CI.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use cortado::notification::RemovalCause;
use cortado::stats::CacheStats;

/// Runs `body` on its own thread and fails if it takes longer than `limit` (a hung waiter;
/// [`paced`](super::paced) under Miri).
pub fn with_timeout<T: Send + 'static>(
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let limit = super::paced(limit);
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(body));
        let _ = done.send(outcome);
    });
    match result.recv_timeout(limit) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("timed out after {limit:?}: a caller was never released"),
    }
}

/// What the listener heard about each value.
#[derive(Default)]
pub struct Heard {
    pub causes: HashMap<u64, Vec<RemovalCause>>,
}

impl Heard {
    /// A listener that records each removed value's causes in `heard`.
    pub fn recorder(heard: &Arc<Mutex<Heard>>) -> impl Fn(&u64, &u64, RemovalCause) + Send + Sync {
        let sink = heard.clone();
        move |_, v, cause| {
            sink.lock()
                .unwrap()
                .causes
                .entry(*v)
                .or_default()
                .push(cause);
        }
    }

    /// Checks that each value `written` (as `(key, value)`, every value unique) is either in
    /// `present` (value to key) under its own key and never heard of, or absent and heard of
    /// exactly once, and that nothing else was heard of; returns how many were heard of by
    /// cause. `context` starts every failure's message.
    pub fn account(
        &self,
        written: &[(u64, u64)],
        present: &HashMap<u64, u64>,
        context: &str,
    ) -> HashMap<RemovalCause, u64> {
        let mut by_cause = HashMap::new();
        for &(key, value) in written {
            let reported = self.causes.get(&value).map_or(&[][..], Vec::as_slice);
            match (present.get(&value), reported) {
                (Some(&k), []) => assert_eq!(k, key, "{context}: value {value} under another key"),
                (None, [cause]) => *by_cause.entry(*cause).or_default() += 1,
                (at, causes) => panic!(
                    "{context}: value {value} of key {key}: present under {at:?}, heard {causes:?}"
                ),
            }
        }
        assert_eq!(
            self.causes.len() + present.len(),
            written.len(),
            "{context}: the listener heard of a value never written, or the cache holds one"
        );
        by_cause
    }
}

/// Checks that the removal counters of `stats` match what the listener heard (`by_cause`, as
/// [`Heard::account`] returns it). `context` starts every failure's message.
pub fn assert_stats_count_causes(
    stats: &CacheStats,
    by_cause: &HashMap<RemovalCause, u64>,
    context: &str,
) {
    let heard = |cause| by_cause.get(&cause).copied().unwrap_or(0);
    let counted = [
        (RemovalCause::Size, stats.evictions_size),
        (RemovalCause::Expired, stats.evictions_expired),
        (RemovalCause::Replaced, stats.replacements),
        (RemovalCause::Explicit, stats.removals_explicit),
    ];
    for (cause, count) in counted {
        assert_eq!(
            count,
            heard(cause),
            "{context}: stats count {count} {cause:?} removals, the listener heard {} \
             (heard {by_cause:?}, stats {stats:?})",
            heard(cause)
        );
    }
}

/// Checks that the listener heard of at least one removal of every cause (`by_cause`, as
/// [`Heard::account`] returns it): that a mix of operations exercised them all.
pub fn assert_every_cause_heard(by_cause: &HashMap<RemovalCause, u64>) {
    for cause in [
        RemovalCause::Explicit,
        RemovalCause::Replaced,
        RemovalCause::Expired,
        RemovalCause::Size,
    ] {
        assert!(
            by_cause.get(&cause).is_some_and(|&n| n > 0),
            "no {cause:?} in {by_cause:?}"
        );
    }
}
