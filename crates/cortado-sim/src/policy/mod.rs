//! Policies the simulator replays: Cortado's own (the library's code) and reference policies.

pub mod reference;

/// A cache replacement policy driven one request at a time.
///
/// Every request is a lookup of `key`; on a miss the policy decides whether and how to admit the
/// key, evicting as it must to stay within its capacity (in entries).
pub trait Policy: Send {
    /// Replays one request; `true` when it was a hit.
    fn record(&mut self, key: u64) -> bool;
}
