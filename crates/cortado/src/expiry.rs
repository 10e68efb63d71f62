//! When entries expire: after write, after access, or per entry through an [`Expiry`].
//!
//! A cache computes each entry's deadline from these rules on create, update and read; an entry
//! whose deadline has passed is never returned, even before maintenance removes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::time::duration_nanos;

/// Per-entry expiry, as Caffeine's `Expiry`: each method returns how long the entry may live from
/// now, or `None` for no expiry.
///
/// `current` is the time the entry had left before this event (`None` if it had no deadline).
/// The defaults keep the current deadline on update and read.
///
/// The methods run under the lock of the entry's shard (a shared one for `expire_after_read`
/// in a `sync` cache): they must be quick and must not use the cache (see
/// [Callbacks](crate::sync#callbacks)).
pub trait Expiry<K, V>: Send + Sync {
    /// Lifetime of a newly inserted entry.
    fn expire_after_create(&self, key: &K, value: &V) -> Option<Duration>;

    /// Lifetime after the value was replaced.
    fn expire_after_update(
        &self,
        key: &K,
        value: &V,
        current: Option<Duration>,
    ) -> Option<Duration> {
        let _ = (key, value);
        current
    }

    /// Lifetime after the entry was read.
    fn expire_after_read(&self, key: &K, value: &V, current: Option<Duration>) -> Option<Duration> {
        let _ = (key, value);
        current
    }
}

/// The expiry rules of one cache, in nanoseconds.
pub(crate) struct ExpiryRules<K, V> {
    pub(crate) ttl: Option<u64>,
    pub(crate) tti: Option<u64>,
    pub(crate) custom: Option<Arc<dyn Expiry<K, V>>>,
    /// Takes a random share off the time to live of each write (`time_to_live_jitter`).
    /// Boxed: the rules stay as small as before it for the caches without one.
    pub(crate) jitter: Option<Box<Jitter>>,
}

/// Draws how much of the time to live to take off an entry's lifetime: uniform in
/// `0..=max_nanos`, from a counter of draws through a SplitMix64 finalizer (see
/// `time_to_live_jitter`'s design).
#[derive(Debug)]
pub(crate) struct Jitter {
    max_nanos: u64,
    draws: AtomicU64,
}

impl Jitter {
    /// Up to `fraction` (from 0 to 1) of `ttl` nanoseconds, seeded at random.
    pub(crate) fn new(ttl: u64, fraction: f64) -> Self {
        Self {
            max_nanos: (ttl as f64 * fraction) as u64,
            draws: AtomicU64::new(crate::random::random_seed()),
        }
    }

    /// The lifetime of one write: `ttl` less a draw.
    fn lifetime(&self, ttl: u64) -> u64 {
        let draw = crate::random::mix64(self.draws.fetch_add(1, Ordering::Relaxed));
        let cut = match self.max_nanos.checked_add(1) {
            Some(span) => draw % span,
            None => draw,
        };
        ttl - cut.min(ttl)
    }
}

/// Each clone draws from a seed of its own (each shard's rules are a clone).
impl Clone for Jitter {
    fn clone(&self) -> Self {
        Self {
            max_nanos: self.max_nanos,
            draws: AtomicU64::new(crate::random::random_seed()),
        }
    }
}

impl<K, V> Clone for ExpiryRules<K, V> {
    fn clone(&self) -> Self {
        Self {
            ttl: self.ttl,
            tti: self.tti,
            custom: self.custom.clone(),
            jitter: self.jitter.clone(),
        }
    }
}

impl<K, V> std::fmt::Debug for ExpiryRules<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpiryRules")
            .field("ttl", &self.ttl)
            .field("tti", &self.tti)
            .field("custom", &self.custom.is_some())
            .finish()
    }
}

/// Deadlines of one entry, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadlines {
    /// Set by writes only (time to live, or an explicit lifetime); reads cannot extend it.
    pub(crate) write: Option<u64>,
    /// Moved by reads: with a time to idle the last use plus the idle time; with a custom
    /// [`Expiry`] the entry's whole deadline.
    pub(crate) read: Option<u64>,
}

/// The latest deadline an entry can have: `u64::MAX` itself is how a shard stores "no deadline".
const LATEST_DEADLINE: u64 = u64::MAX - 1;

/// The deadline `nanos` after `now`, saturating at [`LATEST_DEADLINE`]: a lifetime past the
/// clock's range is still a deadline (an `Expiry`'s read is told the time left, not `None`).
#[inline]
fn after(now: u64, nanos: u64) -> u64 {
    now.saturating_add(nanos).min(LATEST_DEADLINE)
}

fn min_deadline(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn remaining(now: u64, deadline: Option<u64>) -> Option<Duration> {
    deadline.map(|d| Duration::from_nanos(d.saturating_sub(now)))
}

impl<K, V> ExpiryRules<K, V> {
    /// Whether any rule can give an entry a deadline (explicit lifetimes aside).
    pub(crate) fn is_active(&self) -> bool {
        self.ttl.is_some() || self.tti.is_some() || self.custom.is_some()
    }

    /// The time to live of one write, less the jitter's draw, if any.
    #[inline]
    fn lifetime(&self, ttl: u64) -> u64 {
        match &self.jitter {
            Some(jitter) => jitter.lifetime(ttl),
            None => ttl,
        }
    }

    /// Whether reads can move deadlines.
    pub(crate) fn reads_matter(&self) -> bool {
        self.tti.is_some() || self.custom.is_some()
    }

    /// When an entry with these deadlines expires.
    #[inline]
    pub(crate) fn effective(&self, deadlines: Deadlines) -> Option<u64> {
        if self.custom.is_some() {
            deadlines.read
        } else {
            min_deadline(deadlines.write, deadlines.read)
        }
    }

    /// Deadlines after a write. `explicit` overrides the time to live (or the custom rule) for
    /// this entry; `current` is the entry's effective deadline before an update (`None` for a
    /// new entry).
    pub(crate) fn on_write(
        &self,
        key: &K,
        value: &V,
        now: u64,
        explicit: Option<Duration>,
        current: Option<Option<u64>>,
    ) -> Deadlines {
        let explicit = explicit.map(|d| after(now, duration_nanos(d)));
        if let Some(custom) = &self.custom {
            if explicit.is_some() {
                // The caller's lifetime wins: the callback's answer would be thrown away (a
                // put with a duration in Caffeine does not ask its `Expiry` either).
                return Deadlines {
                    write: None,
                    read: explicit,
                };
            }
            let lifetime = match current {
                None => custom.expire_after_create(key, value),
                Some(current) => custom.expire_after_update(key, value, remaining(now, current)),
            };
            return Deadlines {
                write: None,
                read: lifetime.map(|d| after(now, duration_nanos(d))),
            };
        }
        Deadlines {
            write: explicit.or(self.ttl.map(|ttl| after(now, self.lifetime(ttl)))),
            read: self.tti.map(|tti| after(now, tti)),
        }
    }

    /// The read deadline after a read, given the effective deadline before it; `None` when
    /// reads do not move deadlines.
    #[inline]
    pub(crate) fn on_read(
        &self,
        key: &K,
        value: &V,
        now: u64,
        effective: Option<u64>,
    ) -> Option<Option<u64>> {
        if let Some(custom) = &self.custom {
            let lifetime = custom.expire_after_read(key, value, remaining(now, effective));
            return Some(lifetime.map(|d| after(now, duration_nanos(d))));
        }
        self.tti.map(|tti| Some(after(now, tti)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ttl: Option<u64>, tti: Option<u64>) -> ExpiryRules<u32, u32> {
        ExpiryRules {
            ttl,
            tti,
            custom: None,
            jitter: None,
        }
    }

    #[test]
    fn on_write_ttl_and_tti_takes_earlier() {
        let r = rules(Some(100), Some(30));
        let d = r.on_write(&1, &1, 1000, None, None);
        assert_eq!(r.effective(d), Some(1030));
        assert_eq!(d.write, Some(1100));
    }

    #[test]
    fn on_read_tti_never_extends_past_write_deadline() {
        let r = rules(Some(100), Some(30));
        let mut d = r.on_write(&1, &1, 1000, None, None);
        d.read = r.on_read(&1, &1, 1020, r.effective(d)).unwrap();
        assert_eq!(r.effective(d), Some(1050));
        d.read = r.on_read(&1, &1, 1090, r.effective(d)).unwrap();
        assert_eq!(r.effective(d), Some(1100));
    }

    #[test]
    fn on_read_ttl_only_does_not_move() {
        let r = rules(Some(100), None);
        let d = r.on_write(&1, &1, 0, None, None);
        assert_eq!(r.on_read(&1, &1, 50, r.effective(d)), None);
    }

    #[test]
    fn on_write_jitter_spreads_lifetimes_within_the_fraction() {
        let mut r = rules(Some(1_000_000), None);
        r.jitter = Some(Box::new(Jitter::new(1_000_000, 0.1)));
        let lifetimes: Vec<u64> = (0..10_000)
            .map(|_| r.effective(r.on_write(&1, &1, 0, None, None)).unwrap())
            .collect();
        assert!(lifetimes
            .iter()
            .all(|&l| (900_000..=1_000_000).contains(&l)));
        // Uniform over the last tenth: each hundredth of it (1,000 ns) gets about 1%.
        let mut buckets = [0u32; 100];
        for l in &lifetimes {
            buckets[((1_000_000 - l) / 1_000).min(99) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&b| (40..=200).contains(&b)),
            "{buckets:?}"
        );
        // An explicit lifetime is not jittered.
        let d = r.on_write(&1, &1, 0, Some(Duration::from_nanos(7)), None);
        assert_eq!(r.effective(d), Some(7));
    }

    #[test]
    fn on_write_explicit_overrides_ttl() {
        let r = rules(Some(100), None);
        let d = r.on_write(&1, &1, 0, Some(Duration::from_nanos(7)), None);
        assert_eq!(r.effective(d), Some(7));
    }

    struct ByValue;
    impl Expiry<u32, u32> for ByValue {
        fn expire_after_create(&self, _: &u32, value: &u32) -> Option<Duration> {
            (*value > 0).then(|| Duration::from_nanos(u64::from(*value)))
        }
        fn expire_after_read(
            &self,
            _: &u32,
            _: &u32,
            current: Option<Duration>,
        ) -> Option<Duration> {
            current.map(|c| c * 2)
        }
    }

    struct Unasked;
    impl Expiry<u32, u32> for Unasked {
        fn expire_after_create(&self, _: &u32, _: &u32) -> Option<Duration> {
            panic!("an explicit lifetime asks no callback")
        }
        fn expire_after_update(&self, _: &u32, _: &u32, _: Option<Duration>) -> Option<Duration> {
            panic!("an explicit lifetime asks no callback")
        }
    }

    #[test]
    fn on_write_explicit_with_custom_expiry_asks_no_callback() {
        let r = ExpiryRules::<u32, u32> {
            ttl: None,
            tti: None,
            jitter: None,
            custom: Some(Arc::new(Unasked)),
        };
        let ttl = Some(Duration::from_nanos(7));
        assert_eq!(r.effective(r.on_write(&1, &1, 10, ttl, None)), Some(17));
        assert_eq!(
            r.effective(r.on_write(&1, &1, 10, ttl, Some(None))),
            Some(17)
        );
    }

    #[test]
    fn custom_expiry_create_and_read_follow_callbacks() {
        let r = ExpiryRules::<u32, u32> {
            ttl: None,
            tti: None,
            jitter: None,
            custom: Some(Arc::new(ByValue)),
        };
        assert_eq!(r.effective(r.on_write(&1, &0, 10, None, None)), None);
        let d = r.on_write(&1, &5, 10, None, None);
        assert_eq!(r.effective(d), Some(15));
        // 3 ns left at time 12, doubled to 6 from then.
        assert_eq!(r.on_read(&1, &5, 12, r.effective(d)), Some(Some(18)));
    }
}
