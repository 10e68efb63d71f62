//! Hit ratio of a strict single-threaded replay: every request is a `get`, every miss an
//! `insert` followed by the crate's synchronous maintenance.
//!
//! [`Replay`] runs one key stream through one cache ([`Peer::visit`](super::Peer::visit));
//! [`optimal`] gives Belady's offline optimum for the same stream, from the simulator, as the
//! ceiling to read the others against.
//!
//! # Design
//!
//! - **Strict.** moka and mini-moka apply reads and writes to their policy from buffers, later;
//!   a replay that never drains them measures the buffering, not the policy (and lets the cache
//!   overshoot its capacity). Calling each crate's maintenance after every insert gives every
//!   policy its full information. Cortado evicts inside `insert` and needs none, but gets the
//!   same call (its `run_pending_tasks` replays buffered reads), so every cache is treated alike.
//!   `quick_cache` and `lru` have nothing to drain.
//! - **Streams** are `cortado_sim::gen`'s: `zipf`, `scan+zipf` (Zipf with bursts of one-off
//!   keys), `loop` (a cyclic scan of all keys) and `drift+zipf` (Zipf whose hot set slides),
//!   all generated once and replayed identically into every cache.
//! - Each crate's default policy and shard count, as a user would build it; at small
//!   capacities this means fewer, smaller shards for the sharded caches.
//!
//! # References
//!
//! 1. L. A. Belady: "A study of replacement algorithms for a virtual-storage computer",
//!    IBM Systems Journal 5(2), 1966 (OPT).

use cortado_sim::gen::{self, Dist};

use super::{BuildFailure, CacheSpec, ConcurrentCache, PeerVisitor};

/// The streams of the hit-ratio tables, in order.
pub const STREAMS: [Dist; 4] = [
    Dist::Zipf { s: 0.99 },
    Dist::ScanZipf { s: 0.99 },
    Dist::Loop,
    Dist::DriftZipf { s: 0.99 },
];

/// The default seed of the hit-ratio streams (`--stream-seed` replaces it).
pub const STREAM_SEED: u64 = 0x05ee_d0f7_ab1e;

/// `requests` keys of `dist` over `keys` distinct keys, drawn with `seed`.
///
/// # Panics
///
/// If `keys` is zero: the binary passes constants.
pub fn stream(dist: Dist, keys: u64, requests: u64, seed: u64) -> Vec<u64> {
    gen::keys(dist, keys, requests, seed)
        .expect("the binary's streams have keys and valid exponents")
        .collect()
}

/// One strict replay of `keys` into a fresh cache of `capacity` entries.
#[derive(Clone, Copy, Debug)]
pub struct Replay<'a> {
    /// The request stream.
    pub keys: &'a [u64],
    /// Capacity of the cache, in entries.
    pub capacity: u64,
    /// The seed of the cache's hasher (and of Cortado's policy).
    pub seed: u64,
}

impl PeerVisitor for Replay<'_> {
    type Output = Result<f64, BuildFailure>;

    fn visit<C: ConcurrentCache<u64, u64>>(self) -> Self::Output {
        let cache = C::build(&CacheSpec {
            seed: self.seed,
            ..CacheSpec::new(self.capacity)
        })?;
        let mut hits = 0u64;
        for &key in self.keys {
            if cache.get(&key).is_some() {
                hits += 1;
            } else {
                cache.insert(key, key);
                cache.sync_maintenance();
            }
        }
        Ok(ratio(hits, self.keys.len()))
    }
}

/// Belady's optimum (every miss admitted) on `keys` at `capacity`, from the simulator.
///
/// # Panics
///
/// If the simulator refuses the stream (more than `u32::MAX - 1` requests).
pub fn optimal(keys: &[u64], capacity: u64) -> f64 {
    let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
    let mut opt = cortado_sim::policy::build("opt", capacity, keys)
        .expect("the simulator builds opt for the binary's streams");
    let hits = keys.iter().filter(|&&key| opt.record(key)).count() as u64;
    ratio(hits, keys.len())
}

fn ratio(hits: u64, requests: usize) -> f64 {
    if requests == 0 {
        0.0
    } else {
        hits as f64 / requests as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{ConcurrentCache, Peer, SEED};

    #[test]
    fn replay_loop_smaller_than_capacity_misses_only_first_pass() {
        // 50 keys cycled 10 times into 100 entries: 50 cold misses, then all hits, whatever
        // the policy.
        let keys = stream(Dist::Loop, 50, 500, STREAM_SEED);
        for peer in Peer::ALL {
            let hit = peer
                .visit(Replay {
                    keys: &keys,
                    capacity: 100,
                    seed: SEED,
                })
                .expect("plain spec builds");
            assert!((hit - 0.9).abs() < 1e-9, "{peer}: {hit}");
        }
    }

    /// The most entries a cache holds after any maintenance of a strict replay.
    struct MostHeld<'a> {
        keys: &'a [u64],
        capacity: u64,
    }

    impl PeerVisitor for MostHeld<'_> {
        type Output = u64;

        fn visit<C: ConcurrentCache<u64, u64>>(self) -> u64 {
            let cache = C::build(&CacheSpec::new(self.capacity)).expect("plain spec builds");
            let mut most = 0;
            for &key in self.keys {
                if cache.get(&key).is_none() {
                    cache.insert(key, key);
                    cache.sync_maintenance();
                    most = most.max(cache.entries());
                }
            }
            most
        }
    }

    #[test]
    fn replay_every_cache_holds_at_most_its_capacity() {
        // A cache that held more than asked would buy hit ratio with it; every get of the
        // replay follows a maintenance, so the count after each one is what the gets see.
        for dist in [
            Dist::Zipf { s: 0.99 },
            Dist::ScanZipf { s: 0.99 },
            Dist::Loop,
        ] {
            let keys = stream(dist, 4_000, 40_000, STREAM_SEED);
            for capacity in [40, 400, 2_000] {
                for peer in Peer::ALL {
                    let most = peer.visit(MostHeld {
                        keys: &keys,
                        capacity,
                    });
                    assert!(most <= capacity, "{peer} {dist} held {most} of {capacity}");
                }
            }
        }
    }

    #[test]
    fn replay_never_beats_optimal() {
        let keys = stream(Dist::Zipf { s: 0.99 }, 2_000, 20_000, STREAM_SEED);
        let ceiling = optimal(&keys, 200);
        for peer in Peer::ALL {
            let hit = peer
                .visit(Replay {
                    keys: &keys,
                    capacity: 200,
                    seed: SEED,
                })
                .expect("plain spec builds");
            // No cache holds more than its capacity (the test above), so none may pass MIN; an
            // admission filter could in principle (MIN admits every miss), but only by what MIN
            // with bypass adds, under 0.01 points on the binary's streams.
            assert!(hit <= ceiling, "{peer}: {hit} above OPT {ceiling}");
            assert!(hit > 0.2, "{peer}: {hit} is implausibly low for Zipf(0.99)");
        }
    }
}
