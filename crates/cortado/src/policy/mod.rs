//! Eviction policies: who stays when the cache is full. One implementation serves the caches, the
//! server and the simulator.
//!
//! A policy sees entries only as slab indices with a hash and a weight, through the events
//! insert, access, update and remove, and answers which indices to evict to fit its maximum.
//!
//! # Design
//!
//! Each policy keeps its own node array indexed by the shard's slab index, with `u32` links, so
//! the cache's entries stay plain data and there are no pointers to keep valid. The policies are
//! an enum rather than trait objects: the cache dispatches with one predictable branch and the
//! compiler can inline each policy's hot path.
//!
//! - [`EvictionPolicy::tiny_lfu`] (the default): W-TinyLFU. New entries enter an LRU window;
//!   one leaving it enters the main space (a segmented LRU) only if the frequency sketch has seen
//!   it more often than the main space's eviction victim, or if it was turned away recently and
//!   came back. The window's share of the capacity and how lenient or strict admission is adapt
//!   to the workload: miniature copies of the cache (on a hash sample of the keys for large
//!   caches) replay the requests under seven candidate modes, an eighth that tries the other
//!   admission margin and, in caches of under 1,000 entries, a ninth that tries the other
//!   aging period of the sketch; the cache follows the copies that hit most. On the simulator's
//!   84 reference cells (21 real traces at 1%, 5%, 10% and 25% of their keys) its mean hit ratio
//!   is above Caffeine 2.6.2's, S3-FIFO's and LRU's, and above the mean of the best reference
//!   policy of each cell taken separately: `docs/hit-ratios-84.md` has the table, and
//!   `docs/decisions/0106-default-policy.md` the figures as first written here.
//! - [`EvictionPolicy::tiny_lfu_static`]: the same with the window fixed at 1% and no miniatures
//!   (a lower mean on the same cells), for small caches where eight or nine miniature copies cost
//!   too much memory.
//! - [`EvictionPolicy::lru`]: least recently used.
//! - [`EvictionPolicy::lfu`]: least frequently used, ties broken by recency.
//! - [`EvictionPolicy::redis_lru`], [`EvictionPolicy::redis_lfu`]: Redis's approximations, which
//!   evict the best of a pool of randomly sampled entries ([`sampled`]).
//! - [`EvictionPolicy::random`]: a uniformly random entry.

mod admission;
mod deque;
mod ghost;
mod lfu;
mod lru;
pub mod sampled;
mod unbounded;
mod wtinylfu;

use std::fmt;

use lfu::Lfu;
use lru::Lru;
use sampled::{Decay, Rule, Sampled, DEFAULT_LFU_LOG_FACTOR, DEFAULT_SAMPLES, MAX_SAMPLES};
use unbounded::Unbounded;
use wtinylfu::{Adaptation, WTinyLfu};
pub(crate) use wtinylfu::{Deferral, MAX_DEFERRED};

/// Which eviction policy a cache uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EvictionPolicy {
    kind: Kind,
    seed: Option<u64>,
    samples: u32,
    lfu_log_factor: u32,
    /// `None`: automatic.
    lfu_decay_period: Option<u64>,
    /// The number of caches the policy's fixed minimums are split among (set by the unsync
    /// builder's `split_minimums`; 1 otherwise).
    pub(crate) minimums_divisor: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    TinyLfu,
    TinyLfuStatic,
    Lru,
    Lfu,
    RedisLru,
    RedisLfu,
    RedisTtl,
    Random,
}

/// A policy parameter out of range, reported by [`EvictionPolicy::check`] and by the cache
/// builders' `build()`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    /// [`EvictionPolicy::samples`] must be between 1 and [`MAX_SAMPLES`].
    SamplesOutOfRange {
        /// The count asked for.
        requested: u32,
    },
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SamplesOutOfRange { requested } => write!(
                f,
                "{requested} samples per eviction: must be between 1 and {MAX_SAMPLES}"
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

impl Default for EvictionPolicy {
    fn default() -> Self {
        Self::tiny_lfu()
    }
}

impl EvictionPolicy {
    const fn of(kind: Kind) -> Self {
        Self {
            kind,
            seed: None,
            samples: DEFAULT_SAMPLES,
            lfu_log_factor: DEFAULT_LFU_LOG_FACTOR,
            lfu_decay_period: None,
            minimums_divisor: 1,
        }
    }

    /// W-TinyLFU with a window that adapts to the workload (the default).
    pub fn tiny_lfu() -> Self {
        Self::of(Kind::TinyLfu)
    }

    /// W-TinyLFU with the window fixed at 1% of the capacity.
    pub fn tiny_lfu_static() -> Self {
        Self::of(Kind::TinyLfuStatic)
    }

    /// Least recently used.
    pub fn lru() -> Self {
        Self::of(Kind::Lru)
    }

    /// Least frequently used; among equally used entries the least recently used goes first.
    pub fn lfu() -> Self {
        Self::of(Kind::Lfu)
    }

    /// Redis's approximated LRU (`allkeys-lru`): each eviction samples a few entries into a pool
    /// of 16 candidates and evicts the one idle longest. Idle time counts requests. See
    /// [`sampled`].
    pub fn redis_lru() -> Self {
        Self::of(Kind::RedisLru)
    }

    /// Redis's approximated LFU (`allkeys-lfu`): the pool of sampled candidates ranked by an
    /// 8-bit logarithmic use counter that decays while an entry is not used. See [`sampled`].
    pub fn redis_lfu() -> Self {
        Self::of(Kind::RedisLfu)
    }

    /// Redis's `volatile-ttl`: the pool of sampled candidates ranked by deadline, the nearest
    /// evicted first, and entries without one last. Uses do not matter; a deadline counts as of
    /// the entry's last write or lifetime change. See [`sampled`].
    pub fn redis_ttl() -> Self {
        Self::of(Kind::RedisTtl)
    }

    /// A uniformly random entry (Redis's `allkeys-random`).
    pub fn random() -> Self {
        Self::of(Kind::Random)
    }

    /// Entries sampled per eviction round by `redis-lru` and `redis-lfu` (Redis's
    /// `maxmemory-samples`): 1 to [`MAX_SAMPLES`], default [`DEFAULT_SAMPLES`] (5). More samples
    /// come closer to exact LRU or LFU and cost more per eviction. Other policies do not use
    /// it, but [`check`](Self::check) (and so `build()`) refuses a value out of range whatever
    /// the policy.
    pub fn samples(mut self, samples: u32) -> Self {
        self.samples = samples;
        self
    }

    /// How much harder each increment of `redis-lfu`'s counter gets (Redis's `lfu-log-factor`,
    /// default [`DEFAULT_LFU_LOG_FACTOR`], 10): at counter c > 5 a use increments with
    /// probability 1 / ((c - 5) * factor + 1). 0 counts every use until the counter saturates at
    /// 255. Other policies ignore it.
    pub fn lfu_log_factor(mut self, factor: u32) -> Self {
        self.lfu_log_factor = factor;
        self
    }

    /// `redis-lfu`'s decay period, in requests (insertions, reads and updates): a counter loses
    /// one for each period boundary (every multiple of `requests` on the cache's request clock)
    /// passed since the entry's last use, so an entry idle for one request just across a
    /// boundary loses one. Redis counts minute boundaries the same way but divides their number
    /// by its `lfu-decay-time`; for a period of one they agree. 0 never decays. By
    /// default a period lasts [`AUTO_DECAY_TICKS_PER_ENTRY`](sampled::AUTO_DECAY_TICKS_PER_ENTRY)
    /// (10) requests per entry the cache holds. Other policies ignore it.
    pub fn lfu_decay_period(mut self, requests: u64) -> Self {
        self.lfu_decay_period = Some(requests);
        self
    }

    /// Checks the parameters (the cache builders call this in `build()`).
    pub fn check(&self) -> Result<(), PolicyError> {
        if !(1..=MAX_SAMPLES).contains(&self.samples) {
            return Err(PolicyError::SamplesOutOfRange {
                requested: self.samples,
            });
        }
        Ok(())
    }

    /// Fixes the seed of the policy's randomness (sketch hashing, random admission, sampling),
    /// for reproducible experiments. By default every cache draws a random seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The policy's short name: `tiny-lfu`, `tiny-lfu-static`, `lru`, `lfu`, `redis-lru`,
    /// `redis-lfu`, `redis-ttl` or `random`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::TinyLfu => "tiny-lfu",
            Kind::TinyLfuStatic => "tiny-lfu-static",
            Kind::Lru => "lru",
            Kind::Lfu => "lfu",
            Kind::RedisLru => "redis-lru",
            Kind::RedisLfu => "redis-lfu",
            Kind::RedisTtl => "redis-ttl",
            Kind::Random => "random",
        }
    }

    /// Whether the policy ranks entries by deadline ([`redis_ttl`](Self::redis_ttl)).
    pub(crate) fn orders_by_deadline(&self) -> bool {
        self.kind == Kind::RedisTtl
    }

    /// The sampled policy's parameters, with the rule for its kind.
    fn sampled_config(&self, rule: Rule) -> sampled::Config {
        sampled::Config {
            rule,
            // Out-of-range counts are rejected by `check`; clamping keeps an unchecked policy sane.
            samples: self.samples.clamp(1, MAX_SAMPLES),
            log_factor: self.lfu_log_factor,
            decay: match self.lfu_decay_period {
                None => Decay::Auto,
                Some(0) => Decay::Never,
                Some(period) => Decay::Every(period),
            },
        }
    }
}

/// A policy instance; the shard forwards its events here.
#[derive(Debug, Clone)]
pub(crate) enum Policy {
    TinyLfu(WTinyLfu),
    Lru(Lru),
    Lfu(Lfu),
    Sampled(Sampled),
    /// No capacity: nothing to evict, nothing kept per entry.
    Unbounded(Unbounded),
}

/// Calls `$body` on the policy inside, or evaluates `$unbounded` for [`Policy::Unbounded`].
macro_rules! dispatch {
    ($self:expr, $p:ident => $body:expr, unbounded => $unbounded:expr) => {
        match $self {
            Policy::TinyLfu($p) => $body,
            Policy::Lru($p) => $body,
            Policy::Lfu($p) => $body,
            Policy::Sampled($p) => $body,
            Policy::Unbounded(_) => $unbounded,
        }
    };
}

impl Policy {
    /// `follower`: an adaptive policy adopts modes chosen elsewhere instead of choosing them.
    pub(crate) fn new(
        config: EvictionPolicy,
        maximum: u64,
        weighted: bool,
        follower: bool,
    ) -> Self {
        match config.kind {
            Kind::TinyLfu => {
                let adaptation = if follower {
                    Adaptation::Follow
                } else {
                    Adaptation::Lead
                };
                Self::TinyLfu(WTinyLfu::new(
                    maximum,
                    adaptation,
                    weighted,
                    config.seed,
                    config.minimums_divisor,
                ))
            }
            Kind::TinyLfuStatic => Self::TinyLfu(WTinyLfu::new(
                maximum,
                Adaptation::Static,
                weighted,
                config.seed,
                config.minimums_divisor,
            )),
            Kind::Lru => Self::Lru(Lru::new(maximum)),
            Kind::Lfu => Self::Lfu(Lfu::new(maximum)),
            Kind::RedisLru => Self::sampled(maximum, config, Rule::Lru),
            Kind::RedisLfu => Self::sampled(maximum, config, Rule::Lfu),
            Kind::RedisTtl => Self::sampled(maximum, config, Rule::Ttl),
            Kind::Random => Self::sampled(maximum, config, Rule::Random),
        }
    }

    fn sampled(maximum: u64, config: EvictionPolicy, rule: Rule) -> Self {
        Self::Sampled(Sampled::new(
            maximum,
            config.sampled_config(rule),
            config.seed,
        ))
    }

    /// The policy of a cache without a capacity.
    pub(crate) fn unbounded() -> Self {
        Self::Unbounded(Unbounded::default())
    }

    /// Whether this is the [unbounded](Self::unbounded) policy, which keeps no order.
    pub(crate) fn is_unbounded(&self) -> bool {
        matches!(self, Policy::Unbounded(_))
    }

    #[inline]
    pub(crate) fn insert(&mut self, i: u32, hash: u64, weight: u32) {
        match self {
            Policy::TinyLfu(p) => p.insert(i, hash, weight),
            Policy::Lru(p) => p.insert(i, weight),
            Policy::Lfu(p) => p.insert(i, weight),
            Policy::Sampled(p) => p.insert(i, weight),
            Policy::Unbounded(p) => p.insert(),
        }
    }

    #[inline]
    pub(crate) fn access(&mut self, i: u32) {
        dispatch!(self, p => p.access(i), unbounded => {})
    }

    /// Several reads in a row, as the read buffer replays them.
    pub(crate) fn access_batch(&mut self, batch: &[u32]) {
        match self {
            Self::TinyLfu(p) => p.access_batch(batch),
            _ => batch.iter().for_each(|&i| self.access(i)),
        }
    }

    #[inline]
    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        dispatch!(self, p => p.update(i, weight), unbounded => {})
    }

    #[inline]
    pub(crate) fn remove(&mut self, i: u32) {
        match self {
            Policy::Unbounded(p) => p.remove(),
            _ => dispatch!(self, p => p.remove(i), unbounded => {}),
        }
    }

    #[inline]
    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        dispatch!(self, p => p.evict(evicted), unbounded => {})
    }

    pub(crate) fn maximum(&self) -> u64 {
        dispatch!(self, p => p.maximum(), unbounded => u64::MAX)
    }

    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        dispatch!(self, p => p.set_maximum(maximum), unbounded => {})
    }

    /// Moves the maximum to `allowance`, this policy's share of a capacity of `shared` split
    /// with others (a [`Budget`](crate::budget::Budget)'s), inside a write: cheaper than
    /// [`set_maximum`](Self::set_maximum) (no sizing of the sketch), and the entry just
    /// written is still the newest. W-TinyLFU's window keeps its newest entry up to the window
    /// bound of `shared`, so that a share judges at once only what the whole capacity would.
    pub(crate) fn set_allowance(&mut self, allowance: u64, shared: u64) {
        match self {
            Policy::TinyLfu(p) => p.set_allowance(allowance, shared),
            Policy::Lru(p) => p.set_maximum(allowance),
            Policy::Lfu(p) => p.set_allowance(allowance),
            Policy::Sampled(p) => p.set_allowance(allowance),
            // A shard with a budget is bounded by its allowance from the start.
            Policy::Unbounded(_) => {}
        }
    }

    #[inline]
    pub(crate) fn weighted_size(&self) -> u64 {
        match self {
            Policy::Unbounded(p) => p.weighted_size(),
            _ => dispatch!(self, p => p.weighted_size(), unbounded => 0),
        }
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        dispatch!(self, p => p.weight_of(i), unbounded => 1)
    }

    pub(crate) fn reserve(&mut self, entries: usize) {
        dispatch!(self, p => p.reserve(entries), unbounded => {})
    }

    /// Every entry, from the most likely to be evicted to the least (none for the unbounded
    /// policy, which keeps no order).
    /// Whether the policy ranks entries by deadline ([`EvictionPolicy::redis_ttl`]): the shard
    /// then tells it each entry's with [`set_deadline`](Self::set_deadline).
    pub(crate) fn orders_by_deadline(&self) -> bool {
        matches!(self, Policy::Sampled(p) if p.orders_by_deadline())
    }

    /// Slot `i`'s deadline, for a policy that [orders by it](Self::orders_by_deadline).
    pub(crate) fn set_deadline(&mut self, i: u32, deadline: Option<u64>) {
        if let Policy::Sampled(p) = self {
            p.set_deadline(i, deadline);
        }
    }

    pub(crate) fn coldest(&self) -> Vec<u32> {
        dispatch!(self, p => p.coldest(), unbounded => Vec::new())
    }

    pub(crate) fn clear(&mut self) {
        match self {
            Policy::Unbounded(p) => p.clear(),
            _ => dispatch!(self, p => p.clear(), unbounded => {}),
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        dispatch!(self, p => p.memory_bytes(), unbounded => 0)
    }

    /// Which reads a cache whose readers share the policy may count on the entry instead of
    /// replaying (see [`Deferral`]).
    pub(crate) fn deferral(&self) -> Deferral {
        match self {
            Policy::TinyLfu(p) => p.deferral(),
            // LRU's order is the order of the reads (the simulator checks it against the
            // reference LRU exactly), and the others need each read when it happens.
            Policy::Lru(_) | Policy::Lfu(_) | Policy::Sampled(_) | Policy::Unbounded(_) => {
                Deferral::Never
            }
        }
    }

    /// Applies deferred reads to the entries at the eviction ends of the queues: each such entry
    /// with reads (`take` returns and clears an entry's count) is treated as read now and moves
    /// away from the end, until the ends hold unread entries or
    /// [`FOLD_LIMIT`](wtinylfu::FOLD_LIMIT) entries moved.
    /// Call before [`evict`](Self::evict).
    pub(crate) fn fold_deferred(&mut self, take: impl FnMut(u32) -> u8) {
        if let Policy::TinyLfu(p) = self {
            p.fold_deferred(take);
        }
    }

    /// Applies every entry's deferred reads (before the order of all entries is read out).
    pub(crate) fn fold_all(&mut self, take: impl FnMut(u32) -> u8) {
        if let Policy::TinyLfu(p) = self {
            p.fold_all(take);
        }
    }

    /// The adaptive policy's current mode, as a code for [`adopt_mode`](Self::adopt_mode), if
    /// the policy adapts.
    pub(crate) fn mode_code(&self) -> Option<u8> {
        match self {
            Policy::TinyLfu(p) => p.mode_code(),
            _ => None,
        }
    }

    /// How often the policy counts slot `i` (key hash `hash`) as used: the LFU counter or
    /// count, or W-TinyLFU's sketch estimate; `None` for policies that count no uses.
    pub(crate) fn frequency(&self, i: u32, hash: u64) -> Option<u64> {
        match self {
            Policy::TinyLfu(p) => Some(p.frequency(hash)),
            Policy::Lfu(p) => Some(p.frequency(i)),
            Policy::Sampled(p) => p.frequency(i),
            Policy::Lru(_) | Policy::Unbounded(_) => None,
        }
    }

    /// Switches an adaptive policy to a mode chosen elsewhere (its [code](Self::mode_code)).
    pub(crate) fn adopt_mode(&mut self, code: u8) {
        if let Policy::TinyLfu(p) = self {
            p.adopt_mode(code);
        }
    }

    /// The admission window's current bound, for W-TinyLFU.
    pub(crate) fn window_maximum(&self) -> Option<u64> {
        match self {
            Policy::TinyLfu(p) => Some(p.window_maximum()),
            _ => None,
        }
    }

    /// Panics if an invariant is broken; returns every index the policy holds (none for the
    /// unbounded policy, which only counts them).
    pub(crate) fn validate(&self) -> Vec<u32> {
        dispatch!(self, p => p.validate(), unbounded => Vec::new())
    }
}
