//! Cortado's concurrent cache beside its peers (`quick_cache`, `moka`, `mini-moka`, and `lru`
//! behind a `Mutex`), measured in one run of the `peers` binary: throughput, hit ratio and heap
//! bytes per entry.
//!
//! Every cache is reached through one small trait, [`ConcurrentCache`], with one tiny adapter
//! per crate; the three measurements ([`throughput`], [`hit_ratio`], [`memory`]) are generic over
//! it, and [`Peer`] names the adapters and dispatches to them.
//!
//! # Design
//!
//! - **One trait, three operations.** `get`, `insert` and `sync_maintenance` are all a
//!   measurement needs: a get miss followed by an insert is the cache-aside pattern, and
//!   `sync_maintenance` runs whatever a crate defers (moka's `run_pending_tasks`, mini-moka's
//!   `sync`) so a replay or a memory reading sees the cache as it would settle.
//! - **Static dispatch.** The throughput loop calls the adapter millions of times per second;
//!   [`Peer::visit`] turns a run-time name into a monomorphized call, so no cache pays for a
//!   virtual call the others do not.
//! - **Same hashing.** Every crate here accepts a `BuildHasher`, so all of them hash with foldhash
//!   under one fixed seed ([`CacheSpec::seed`]): the hash function is not part of any
//!   difference, and runs repeat. Cortado's W-TinyLFU seed is fixed too.
//! - **Each crate's defaults otherwise** (shard counts, policies), as a user would build them,
//!   and one exception beside them: `quick_cache_same_shards`, quick_cache with Cortado's shard
//!   count (16 per CPU against its own 4), because shards alone change the 2-thread rates.
//!
//! # References
//!
//! 1. quick-cache (A. Prada), moka and mini-moka (moka-rs), lru (J. Jeffery): crates.io.
//! 2. B. Manes: Caffeine's simulator and JMH benchmarks (the same three measurements).

pub mod args;
pub mod cortado_sync;
pub mod hit_ratio;
pub mod lru_mutex;
pub mod memory;
pub mod mini_moka_sync;
pub mod moka_sync;
pub mod quick_cache_sync;
pub mod report;
pub mod throughput;

use std::fmt;
use std::time::Duration;

pub use cortado_sync::{CortadoSync, CortadoSyncRefresh, CortadoSyncTtl};
pub use lru_mutex::LruMutex;
pub use mini_moka_sync::MiniMokaSync;
pub use moka_sync::MokaSync;
pub use quick_cache_sync::{QuickCacheSameShards, QuickCacheSync};

/// The seed of every hasher and of Cortado's policy in a run.
pub const SEED: u64 = 0x00c0_47ad_0be7_c4ed;

/// What to build: the same for every crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    /// Maximum entries.
    pub capacity: u64,
    /// Time to live of every entry, if any.
    pub ttl: Option<Duration>,
    /// Seed of the hasher (and of Cortado's policy).
    pub seed: u64,
}

impl CacheSpec {
    /// `capacity` entries, no expiry, the run's [`SEED`].
    pub fn new(capacity: u64) -> Self {
        CacheSpec {
            capacity,
            ttl: None,
            seed: SEED,
        }
    }

    /// The same with every entry living `ttl`.
    pub fn with_ttl(self, ttl: Duration) -> Self {
        CacheSpec {
            ttl: Some(ttl),
            ..self
        }
    }
}

/// Why a cache could not be built for a [`CacheSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildFailure {
    /// The crate has no time to live (`quick_cache`, `lru`).
    NoTtl,
    /// The crate rejected the spec.
    Rejected(String),
}

impl fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildFailure::NoTtl => f.write_str("the crate has no time to live"),
            BuildFailure::Rejected(why) => write!(f, "the crate rejected the spec: {why}"),
        }
    }
}

impl std::error::Error for BuildFailure {}

/// A thread-safe cache as the measurements see it.
pub trait ConcurrentCache<K, V>: Send + Sync + Sized {
    /// The name printed in the tables.
    const NAME: &'static str;

    /// Builds the cache for `spec`.
    fn build(spec: &CacheSpec) -> Result<Self, BuildFailure>;

    /// The value of `key`, if present; counts as a use.
    fn get(&self, key: &K) -> Option<V>;

    /// Inserts or replaces the value of `key`, evicting as the crate does.
    fn insert(&self, key: K, value: V);

    /// Runs the maintenance the crate defers (buffered reads and writes, expiry, eviction).
    fn sync_maintenance(&self);

    /// Entries held now (after [`sync_maintenance`](Self::sync_maintenance) for an exact count).
    fn entries(&self) -> u64;
}

/// A generic operation over one adapter type, for [`Peer::visit`].
pub trait PeerVisitor {
    /// What the operation returns.
    type Output;

    /// Runs the operation with adapter `C`.
    fn visit<C: ConcurrentCache<u64, u64>>(self) -> Self::Output;
}

/// The caches compared, in table order (Cortado first, the reference `quick_cache` second).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// `cortado::sync::Cache`.
    Cortado,
    /// `cortado::sync::Cache` with refresh after write configured, never due.
    CortadoRefresh,
    /// `cortado::sync::Cache` with a time to live that no run reaches.
    CortadoTtl,
    /// `quick_cache::sync::Cache`.
    QuickCache,
    /// `quick_cache::sync::Cache` with Cortado's shard count.
    QuickCacheSameShards,
    /// `moka::sync::Cache`.
    Moka,
    /// `mini_moka::sync::Cache`.
    MiniMoka,
    /// `Mutex<lru::LruCache>`.
    LruMutex,
}

impl Peer {
    /// Every cache, in table order.
    pub const ALL: [Peer; 8] = [
        Peer::Cortado,
        Peer::CortadoTtl,
        Peer::CortadoRefresh,
        Peer::QuickCache,
        Peer::QuickCacheSameShards,
        Peer::Moka,
        Peer::MiniMoka,
        Peer::LruMutex,
    ];

    /// Runs `visitor` with this cache's adapter type.
    pub fn visit<V: PeerVisitor>(self, visitor: V) -> V::Output {
        match self {
            Peer::Cortado => visitor.visit::<CortadoSync>(),
            Peer::CortadoRefresh => visitor.visit::<CortadoSyncRefresh>(),
            Peer::CortadoTtl => visitor.visit::<CortadoSyncTtl>(),
            Peer::QuickCache => visitor.visit::<QuickCacheSync>(),
            Peer::QuickCacheSameShards => visitor.visit::<QuickCacheSameShards>(),
            Peer::Moka => visitor.visit::<MokaSync>(),
            Peer::MiniMoka => visitor.visit::<MiniMokaSync>(),
            Peer::LruMutex => visitor.visit::<LruMutex>(),
        }
    }

    /// The name in tables and on the command line.
    pub fn name(self) -> &'static str {
        struct Name;
        impl PeerVisitor for Name {
            type Output = &'static str;
            fn visit<C: ConcurrentCache<u64, u64>>(self) -> &'static str {
                C::NAME
            }
        }
        self.visit(Name)
    }

    /// The cache called `name`, if any.
    pub fn from_name(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|peer| peer.name() == name)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Semantics;

    impl PeerVisitor for Semantics {
        type Output = ();

        fn visit<C: ConcurrentCache<u64, u64>>(self) {
            let cache = C::build(&CacheSpec::new(100)).expect("every cache takes a plain spec");
            assert_eq!(cache.get(&1), None, "{}: empty cache hit", C::NAME);
            cache.insert(1, 10);
            cache.insert(2, 20);
            cache.insert(1, 11);
            cache.sync_maintenance();
            assert_eq!(cache.get(&1), Some(11), "{}: replaced value", C::NAME);
            assert_eq!(cache.get(&2), Some(20), "{}: second key", C::NAME);
            assert_eq!(cache.get(&3), None, "{}: absent key", C::NAME);
            assert_eq!(cache.entries(), 2, "{}: entries after replace", C::NAME);
        }
    }

    struct Bounded;

    impl PeerVisitor for Bounded {
        type Output = ();

        fn visit<C: ConcurrentCache<u64, u64>>(self) {
            let cache = C::build(&CacheSpec::new(64)).expect("valid spec");
            for key in 0..1_000 {
                cache.insert(key, key);
                cache.sync_maintenance();
            }
            let held = cache.entries();
            // quick_cache's bound is approximate (it rounds shard capacities); 25% slack.
            assert!(held <= 80, "{}: holds {held} of capacity 64", C::NAME);
            assert!(held > 0, "{}: holds nothing", C::NAME);
        }
    }

    struct Ttl;

    impl PeerVisitor for Ttl {
        type Output = Result<(), BuildFailure>;

        fn visit<C: ConcurrentCache<u64, u64>>(self) -> Result<(), BuildFailure> {
            let spec = CacheSpec::new(100).with_ttl(Duration::from_secs(3600));
            let cache = C::build(&spec)?;
            cache.insert(7, 70);
            assert_eq!(
                cache.get(&7),
                Some(70),
                "{}: an hour has not passed",
                C::NAME
            );
            Ok(())
        }
    }

    #[test]
    fn every_adapter_get_after_insert_returns_latest_value() {
        for peer in Peer::ALL {
            peer.visit(Semantics);
        }
    }

    #[test]
    fn every_adapter_many_inserts_stays_near_capacity() {
        for peer in Peer::ALL {
            peer.visit(Bounded);
        }
    }

    #[test]
    fn ttl_spec_builds_exactly_for_crates_with_expiry() {
        for peer in Peer::ALL {
            let expected_ttl = matches!(
                peer,
                Peer::Cortado
                    | Peer::CortadoTtl
                    | Peer::CortadoRefresh
                    | Peer::Moka
                    | Peer::MiniMoka
            );
            match peer.visit(Ttl) {
                Ok(()) => assert!(expected_ttl, "{peer} built with a TTL"),
                Err(BuildFailure::NoTtl) => assert!(!expected_ttl, "{peer} refused a TTL"),
                Err(other) => panic!("{peer}: {other}"),
            }
        }
    }

    #[test]
    fn peer_names_round_trip_and_are_unique() {
        for peer in Peer::ALL {
            assert_eq!(Peer::from_name(peer.name()), Some(peer));
        }
        assert_eq!(Peer::from_name("caffeine"), None);
    }
}
