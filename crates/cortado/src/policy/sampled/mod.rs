//! Redis's sampled eviction: approximated LRU and LFU that evict the best of a small pool of
//! randomly sampled candidates, and plain random eviction.
//!
//! No entry is kept in any order: a use only stamps the entry (LRU) or bumps its logarithmic
//! counter (LFU), and each eviction samples a few resident entries, merges them into a pool of the
//! best candidates seen so far and evicts the best one.
//!
//! # Design
//!
//! - **Sampling.** Resident slab indices sit in a dense array, each index remembering its
//!   position, so removal is a swap with the last element and a sample is a uniform position:
//!   O(1) with no list to maintain on the hot path. Each eviction round draws
//!   [`DEFAULT_SAMPLES`] (5, Redis's `maxmemory-samples`) positions with replacement. Redis
//!   samples runs of neighbouring hash-table buckets from a random start (and `allkeys-random`
//!   takes a random non-empty bucket, then a random key of its chain); independent uniform
//!   draws are what that approximates. The approximation is not exact: in Redis a key's chance
//!   of being drawn depends on where it sits in the table (a key sharing its bucket, or behind
//!   occupied buckets, is drawn less often), so some keys outlive others for reasons that have
//!   nothing to do with their use. Replayed against redis-server, the two agree within a point
//!   on skewed streams, while on a loop the unevenness lets Redis hit more (see
//!   `docs/decisions/0130-sampled-uniform-draws.md`).
//! - **The pool.** [`POOL_SIZE`] (16, Redis's `EVPOOL_SIZE`) candidates kept in ascending
//!   score, the best last. A score is the idle time (LRU) or 255 minus the decayed counter (LFU),
//!   computed when the entry is sampled and not refreshed afterwards, as in Redis: an entry used
//!   after it entered the pool can still be evicted. A sample enters if the pool has room or if
//!   it beats the worst candidate, which then drops out; a tie ranks below the candidates already
//!   there. Each round evicts the pool's best.
//! - **Two departures from Redis.** Redis leaves deleted keys in the pool and skips them when
//!   they come up; here a removed entry leaves the pool at once (a scan of 16 slots), so a pool
//!   entry always names a resident entry, even after its slab slot is reused. And a sample
//!   already in the pool replaces its old candidate instead of taking a second slot.
//! - **The newest entry.** Redis evicts before it executes each command, so a write that takes
//!   the memory over the limit is paid for before the next command, and the key just written is
//!   a candidate then. Here eviction runs right after the insert, and the entry just inserted
//!   is not sampled in that eviction, unless it is the only entry left (letting it be sampled
//!   as Redis does made almost no difference: see `docs/decisions/0131-sampled-newest-entry.md`).
//! - **The clock.** Redis stamps keys with a 24-bit clock in seconds (LRU) and a 16-bit clock in
//!   minutes (LFU decay). A policy here has no wall clock: by default its clock ticks once per
//!   insert, read and update, so idle times and decay periods count requests. Replaying a trace,
//!   that is Redis at a constant request rate. A server can feed its own time instead
//!   (`set_time`), and then idle times and periods are in its units. Ticks are 64-bit and never
//!   wrap.
//! - **The LFU counter.** 8 bits, [`LFU_INIT`] (5) for a new entry, so a newcomer is not the
//!   first victim. A use first applies decay, then increments with probability
//!   1 / ((c − 5) · f + 1), where f is the log factor ([`DEFAULT_LFU_LOG_FACTOR`], 10), certain
//!   below 6, saturating at 255. Going from c to c + 1 takes (c − 5) · f + 1 uses on average, so
//!   with f = 10 about 100 uses reach 9 or 10, 1,000 reach 19, 100,000 reach about 147 and
//!   some 312,000 saturate it.
//! - **Decay.** A counter loses one per decay period elapsed since the entry's last use,
//!   counted in whole periods (period boundaries crossed, like Redis's minutes). Sampling reads
//!   the decayed value without storing it; a use stores it. Redis's default period is one minute,
//!   which means nothing in requests; the default here is *auto*: a new period starts once
//!   [`AUTO_DECAY_TICKS_PER_ENTRY`] (10) ticks per resident entry have passed, so decay keeps
//!   the same pace relative to the cache's turnover at any size. Short periods lose the hot set
//!   of frequency-skewed traces (`2_pools`, `multi2`); without decay, stale favourites crowd out
//!   recency-skewed ones (`sprite`, `orm-busy`); see `docs/decisions/0132-lfu-auto-decay.md`. A
//!   period of 0 never decays (Redis's `lfu-decay-time 0`).
//! - **Weights.** Each round evicts one candidate, until the weighted size fits.
//! - **Random** draws a uniform resident entry (not the newest) and needs no pool, clock or
//!   counter.
//! - **TTL** ranks by deadline, nearest first (Redis's `volatile-ttl`: the score is the
//!   largest deadline less this one), and entries without one last. The shard tells the policy
//!   an entry's deadline whenever it changes; uses do not stamp anything. Redis's `volatile-*`
//!   policies sample only entries with a lifetime: here the cache keeps the others out of the
//!   policy altogether (the builder's `evict_only_expiring`), so any rule serves them.
//! - **Memory.** 16 bytes per slot for the node (stamp, weight, counter), 8 for the dense set
//!   (position and member), and the pool inline (256 bytes).
//!
//! # References
//!
//! 1. S. Sanfilippo: Redis `src/evict.c` (`evictionPoolPopulate`, `performEvictions`,
//!    `LFULogIncr`, `LFUDecrAndReturn`) and `src/db.c` (`updateLFU`).
//! 2. S. Sanfilippo: "Random notes on improving the Redis LRU algorithm", 2016.
//! 3. Redis documentation: "Key eviction" (the LFU counter's growth with the log factor).

use super::deque::NIL;
use crate::random::{random_seed, SmallRng};

/// Candidates the eviction pool holds (Redis's `EVPOOL_SIZE`).
pub const POOL_SIZE: usize = 16;
/// Entries sampled per eviction round by default (Redis's `maxmemory-samples`).
pub const DEFAULT_SAMPLES: u32 = 5;
/// The most entries one round may sample: Redis 8's bound on `maxmemory-samples` (older
/// versions took any positive count); it keeps the cost of one eviction bounded.
pub const MAX_SAMPLES: u32 = 64;
/// A new entry's LFU counter (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT: u8 = 5;
/// How much harder each LFU increment gets by default (Redis's `lfu-log-factor`).
pub const DEFAULT_LFU_LOG_FACTOR: u32 = 10;
/// With the automatic decay period, a period lasts this many ticks per resident entry.
pub const AUTO_DECAY_TICKS_PER_ENTRY: u64 = 10;

/// How a sampled policy ranks candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Rule {
    /// Longest idle first.
    Lru,
    /// Lowest decayed logarithmic counter first.
    Lfu,
    /// Any resident entry, uniformly.
    Random,
    /// Nearest deadline first (Redis's `volatile-ttl`); entries without one last.
    Ttl,
}

/// When LFU counters decay, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Decay {
    /// Never.
    Never,
    /// Every this many ticks (at least one).
    Every(u64),
    /// A new period every [`AUTO_DECAY_TICKS_PER_ENTRY`] ticks per resident entry.
    Auto,
}

/// The parameters of a sampled policy, checked by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Config {
    pub(crate) rule: Rule,
    pub(crate) samples: u32,
    pub(crate) log_factor: u32,
    pub(crate) decay: Decay,
}

/// A set of slab indices that can be sampled uniformly: members in a dense array, each index's
/// position beside it, removal by swapping in the last member.
#[derive(Debug, Clone, Default)]
pub(crate) struct DenseSet {
    members: Vec<u32>,
    /// Position in `members` by slab index, `NIL` when absent.
    positions: Vec<u32>,
}

impl DenseSet {
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn contains(&self, i: u32) -> bool {
        self.positions.get(i as usize).is_some_and(|&p| p != NIL)
    }

    pub(crate) fn reserve(&mut self, slots: usize) {
        if slots > self.positions.len() {
            self.positions.reserve_exact(slots - self.positions.len());
            self.positions.resize(slots, NIL);
        }
        self.members
            .reserve_exact(slots.saturating_sub(self.members.len()));
    }

    pub(crate) fn insert(&mut self, i: u32) {
        if i as usize >= self.positions.len() {
            let len = (i as usize + 1).max(self.positions.len() * 2).max(16);
            self.positions.resize(len, NIL);
        }
        debug_assert_eq!(self.positions[i as usize], NIL, "index {i} inserted twice");
        self.positions[i as usize] = self.members.len() as u32;
        self.members.push(i);
    }

    pub(crate) fn remove(&mut self, i: u32) {
        let at = self.positions[i as usize];
        debug_assert_ne!(at, NIL, "index {i} is not a member");
        self.positions[i as usize] = NIL;
        let last = self.members.pop().expect("a member to remove");
        if last != i {
            self.members[at as usize] = last;
            self.positions[last as usize] = at;
        }
    }

    /// A uniformly drawn member.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut SmallRng) -> Option<u32> {
        if self.members.is_empty() {
            return None;
        }
        // The high half of a 64x64-bit product: uniform over the length without a division.
        let at = (u128::from(rng.next_u64()) * self.members.len() as u128) >> 64;
        Some(self.members[at as usize])
    }

    pub(crate) fn members(&self) -> &[u32] {
        &self.members
    }

    pub(crate) fn clear(&mut self) {
        self.members.clear();
        self.positions.clear();
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        (self.members.capacity() + self.positions.capacity()) * std::mem::size_of::<u32>()
    }

    /// Panics unless members and positions agree.
    pub(crate) fn validate(&self) {
        for (at, &i) in self.members.iter().enumerate() {
            assert_eq!(
                self.positions[i as usize], at as u32,
                "member {i} at position {at} has a wrong position"
            );
        }
        let placed = self.positions.iter().filter(|&&p| p != NIL).count();
        assert_eq!(placed, self.members.len(), "positions of non-members");
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Candidate {
    /// Higher is a better victim.
    score: u64,
    index: u32,
}

/// Redis's eviction pool: up to [`POOL_SIZE`] candidates in ascending score.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    entries: [Candidate; POOL_SIZE],
    len: usize,
}

impl Pool {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn position(&self, index: u32) -> Option<usize> {
        self.entries[..self.len]
            .iter()
            .position(|c| c.index == index)
    }

    pub(crate) fn contains(&self, index: u32) -> bool {
        self.position(index).is_some()
    }

    fn remove_at(&mut self, at: usize) {
        self.entries.copy_within(at + 1..self.len, at);
        self.len -= 1;
    }

    /// Drops `index` if it is a candidate.
    pub(crate) fn remove(&mut self, index: u32) {
        if let Some(at) = self.position(index) {
            self.remove_at(at);
        }
    }

    /// Offers a sampled entry: it enters if there is room or it beats the worst candidate.
    pub(crate) fn offer(&mut self, index: u32, score: u64) {
        self.remove(index);
        let candidate = Candidate { score, index };
        // Below every candidate whose score is at least as high.
        let at = self.entries[..self.len]
            .iter()
            .position(|c| c.score >= score)
            .unwrap_or(self.len);
        if self.len < POOL_SIZE {
            self.entries.copy_within(at..self.len, at + 1);
            self.entries[at] = candidate;
            self.len += 1;
        } else if at > 0 {
            // Full: the worst drops out and the ones below the newcomer move down.
            self.entries.copy_within(1..at, 0);
            self.entries[at - 1] = candidate;
        }
    }

    /// Takes the best candidate out.
    pub(crate) fn pop_best(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.entries[self.len].index)
    }

    /// Candidate indices from the best to the worst.
    pub(crate) fn best_first(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries[..self.len].iter().rev().map(|c| c.index)
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Panics unless scores ascend and no index appears twice.
    pub(crate) fn validate(&self) {
        let live = &self.entries[..self.len];
        assert!(
            live.windows(2).all(|w| w[0].score <= w[1].score),
            "pool scores not ascending: {live:?}"
        );
        let mut indices: Vec<u32> = live.iter().map(|c| c.index).collect();
        indices.sort_unstable();
        indices.dedup();
        assert_eq!(indices.len(), self.len, "pool holds an index twice");
    }
}

/// A [`Rule::Ttl`] entry's stamp when it has no deadline: it ranks last.
const NO_DEADLINE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    /// LRU: the tick of the last use. LFU: the decay period of the last use. TTL: the deadline.
    stamp: u64,
    weight: u32,
    /// LFU's logarithmic counter as of the last use.
    counter: u8,
}

const EMPTY: Node = Node {
    stamp: 0,
    weight: 0,
    counter: 0,
};

/// A sampled policy: Redis's approximated LRU or LFU, or random eviction.
#[derive(Debug, Clone)]
pub(crate) struct Sampled {
    config: Config,
    nodes: Vec<Node>,
    resident: DenseSet,
    pool: Pool,
    rng: SmallRng,
    maximum: u64,
    weighted_size: u64,
    /// The clock: ticks per request unless `fed`.
    now: u64,
    /// Time comes from `set_time` rather than from counting requests.
    fed: bool,
    /// With [`Decay::Auto`]: the current period and the tick at which the next one starts.
    period: u64,
    period_end: u64,
    /// The entry inserted last, not a candidate in the eviction that follows.
    newest: u32,
}

impl Sampled {
    pub(crate) fn new(maximum: u64, config: Config, seed: Option<u64>) -> Self {
        Self {
            config,
            nodes: Vec::new(),
            resident: DenseSet::default(),
            pool: Pool::default(),
            rng: SmallRng::new(seed.unwrap_or_else(random_seed)),
            maximum,
            weighted_size: 0,
            now: 0,
            fed: false,
            period: 0,
            period_end: 0,
            newest: NIL,
        }
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.maximum
    }

    /// Moves the maximum without forgetting the newest entry: the bound a shared budget
    /// gives (see [`Policy::set_allowance`](crate::policy::Policy::set_allowance)) moves inside
    /// a write, before the eviction that is still the newest entry's own.
    pub(crate) fn set_allowance(&mut self, maximum: u64) {
        self.maximum = maximum;
    }

    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.maximum = maximum;
        // The eviction that follows is not the newest entry's own.
        self.newest = NIL;
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.weighted_size
    }

    pub(crate) fn reserve(&mut self, entries: usize) {
        if entries > self.nodes.len() {
            self.nodes.reserve_exact(entries - self.nodes.len());
            self.nodes.resize(entries, EMPTY);
        }
        self.resident.reserve(entries);
    }

    /// Feeds the clock from outside (a server's time, in any unit; it must not go backwards):
    /// from now on the policy stops counting requests. Decay periods are then in that unit.
    #[allow(dead_code)] // for the server, which will feed its time
    pub(crate) fn set_time(&mut self, now: u64) {
        self.fed = true;
        self.advance_to(now.max(self.now));
    }

    fn advance_to(&mut self, now: u64) {
        self.now = now;
        if self.config.decay == Decay::Auto && now >= self.period_end {
            let length = (self.resident.len() as u64).max(1) * AUTO_DECAY_TICKS_PER_ENTRY;
            let periods = (now - self.period_end) / length + 1;
            self.period += periods;
            self.period_end += periods * length;
        }
    }

    /// One request on the request-counting clock.
    #[inline]
    fn tick(&mut self) {
        if !self.fed {
            self.advance_to(self.now + 1);
        }
    }

    /// The current LFU decay period.
    fn current_period(&self) -> u64 {
        match self.config.decay {
            Decay::Never => 0,
            Decay::Every(length) => self.now / length,
            Decay::Auto => self.period,
        }
    }

    /// An entry's LFU counter with the decay due since its last use.
    fn decayed_counter(&self, i: u32) -> u8 {
        let node = &self.nodes[i as usize];
        let elapsed = self.current_period().saturating_sub(node.stamp);
        node.counter
            .saturating_sub(u8::try_from(elapsed).unwrap_or(u8::MAX))
    }

    /// How good a victim the entry is: higher goes first.
    fn score(&self, i: u32) -> u64 {
        match self.config.rule {
            Rule::Lru => self.now - self.nodes[i as usize].stamp,
            Rule::Lfu => u64::from(u8::MAX - self.decayed_counter(i)),
            Rule::Random => 0,
            Rule::Ttl => u64::MAX - self.nodes[i as usize].stamp,
        }
    }

    /// Stamps a use: a fresh tick (LRU) or a decayed and incremented counter (LFU).
    fn stamp(&mut self, i: u32) {
        match self.config.rule {
            Rule::Lru => self.nodes[i as usize].stamp = self.now,
            Rule::Lfu => {
                let counter = self.decayed_counter(i);
                let counter = log_increment(counter, self.config.log_factor, &mut self.rng);
                let period = self.current_period();
                let node = &mut self.nodes[i as usize];
                node.counter = counter;
                node.stamp = period;
            }
            Rule::Random | Rule::Ttl => {}
        }
    }

    pub(crate) fn insert(&mut self, i: u32, weight: u32) {
        if i as usize >= self.nodes.len() {
            let len = (i as usize + 1).max(self.nodes.len() * 2).max(16);
            self.nodes.resize(len, EMPTY);
        }
        self.tick();
        let stamp = match self.config.rule {
            Rule::Lru => self.now,
            Rule::Lfu => self.current_period(),
            Rule::Random => 0,
            // No deadline until the shard tells one.
            Rule::Ttl => NO_DEADLINE,
        };
        self.nodes[i as usize] = Node {
            stamp,
            weight,
            counter: LFU_INIT,
        };
        self.resident.insert(i);
        self.weighted_size += u64::from(weight);
        self.newest = i;
    }

    #[inline]
    pub(crate) fn access(&mut self, i: u32) {
        if !matches!(self.config.rule, Rule::Random | Rule::Ttl) {
            self.tick();
            self.stamp(i);
        }
    }

    /// Whether entries are ranked by deadline ([`Rule::Ttl`]).
    pub(crate) fn orders_by_deadline(&self) -> bool {
        self.config.rule == Rule::Ttl
    }

    /// Slot `i`'s deadline, which ranks it under [`Rule::Ttl`] (no-op under the others).
    pub(crate) fn set_deadline(&mut self, i: u32, deadline: Option<u64>) {
        if self.config.rule == Rule::Ttl {
            self.nodes[i as usize].stamp = deadline.unwrap_or(NO_DEADLINE);
            // A candidate's score was taken when it was sampled; a new deadline ranks it anew.
            self.pool.remove(i);
        }
    }

    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        let node = &mut self.nodes[i as usize];
        self.weighted_size = self.weighted_size - u64::from(node.weight) + u64::from(weight);
        node.weight = weight;
        self.access(i);
        // The eviction that follows (a heavier weight) is not the newest entry's own.
        self.newest = NIL;
    }

    pub(crate) fn remove(&mut self, i: u32) {
        self.resident.remove(i);
        self.pool.remove(i);
        self.weighted_size -= u64::from(self.nodes[i as usize].weight);
        self.nodes[i as usize] = EMPTY;
        if self.newest == i {
            self.newest = NIL;
        }
    }

    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        while self.weighted_size > self.maximum {
            let Some(victim) = self.victim() else {
                break;
            };
            self.remove(victim);
            evicted.push(victim);
        }
        self.newest = NIL;
    }

    /// The next entry to evict: the pool's best after one sampling round (or a uniform draw for
    /// random), never the newest entry unless it is alone.
    fn victim(&mut self) -> Option<u32> {
        match self.resident.len() {
            0 => return None,
            1 => return self.resident.members().first().copied(),
            _ => {}
        }
        loop {
            if self.config.rule == Rule::Random {
                let i = self.resident.sample(&mut self.rng)?;
                if i != self.newest {
                    return Some(i);
                }
                continue;
            }
            self.populate();
            if let Some(i) = self.pool.pop_best() {
                return Some(i);
            }
        }
    }

    /// One sampling round into the pool.
    fn populate(&mut self) {
        for _ in 0..self.config.samples {
            let Some(i) = self.resident.sample(&mut self.rng) else {
                return;
            };
            if i != self.newest {
                self.pool.offer(i, self.score(i));
            }
        }
    }

    /// Indices from the most likely to be evicted to the least: the pool's candidates best
    /// first, then the others by current score (random: in no meaningful order).
    pub(crate) fn coldest(&self) -> Vec<u32> {
        let mut rest: Vec<(u64, u32)> = self
            .resident
            .members()
            .iter()
            .filter(|&&i| !self.pool.contains(i))
            .map(|&i| (self.score(i), i))
            .collect();
        rest.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        self.pool
            .best_first()
            .chain(rest.into_iter().map(|(_, i)| i))
            .collect()
    }

    /// An entry's LFU counter decayed to now, under the LFU rule; `None` under the others.
    pub(crate) fn frequency(&self, i: u32) -> Option<u64> {
        (self.config.rule == Rule::Lfu).then(|| u64::from(self.decayed_counter(i)))
    }

    /// An entry's LFU counter, decayed to now.
    #[cfg(test)]
    pub(crate) fn counter(&self, i: u32) -> u8 {
        self.decayed_counter(i)
    }

    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.resident.clear();
        self.pool.clear();
        self.weighted_size = 0;
        self.newest = NIL;
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].weight
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.resident.memory_bytes()
    }

    /// Panics unless the dense set, the weights and the pool agree; returns every resident index.
    pub(crate) fn validate(&self) -> Vec<u32> {
        self.resident.validate();
        self.pool.validate();
        let members = self.resident.members();
        let weight: u64 = members
            .iter()
            .map(|&i| u64::from(self.nodes[i as usize].weight))
            .sum();
        assert_eq!(weight, self.weighted_size, "weighted size");
        for i in self.pool.best_first() {
            assert!(self.resident.contains(i), "pool names absent index {i}");
        }
        if self.config.rule == Rule::Random {
            assert_eq!(self.pool.len(), 0, "random eviction uses no pool");
        }
        let now = self.now;
        let period = self.current_period();
        for &i in members {
            let stamp = self.nodes[i as usize].stamp;
            match self.config.rule {
                Rule::Lru => assert!(stamp <= now, "index {i} used in the future"),
                Rule::Lfu => assert!(stamp <= period, "index {i} used in a future period"),
                Rule::Random | Rule::Ttl => {}
            }
        }
        members.to_vec()
    }
}

/// Redis's logarithmic increment: certain up to [`LFU_INIT`], then with probability
/// 1 / ((counter − [`LFU_INIT`]) · `factor` + 1); saturates at 255.
fn log_increment(counter: u8, factor: u32, rng: &mut SmallRng) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = counter.saturating_sub(LFU_INIT);
    if base == 0 {
        return counter + 1;
    }
    let odds = f64::from(base) * f64::from(factor) + 1.0;
    // 53 random bits as a fraction in [0, 1).
    let draw = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    if draw * odds < 1.0 {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests;
