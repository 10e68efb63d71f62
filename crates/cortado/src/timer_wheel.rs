//! A hierarchical timer wheel that expires `u32` ids at exact `u64` nanosecond deadlines.
//!
//! Scheduling, rescheduling and cancelling take amortized constant time, and [`TimerWheel::advance`] hands
//! back exactly the ids whose deadline is at or before the time it is given (never one early,
//! never a due one left behind), at an amortized cost bounded by the number of levels per timer.
//! [`TimerWheel::next_expiration`] tells when to advance next: a lower bound on the earliest
//! deadline (a bucket's start), not the deadline itself.
//!
//! # Design
//!
//! Time is `u64` nanoseconds from the cache clock's origin. The wheel keeps its own time `t`, the
//! latest time it was advanced to, and files every timer with deadline `d > t` by the highest bit
//! in which `d` and `t` differ: that bit names a level, and the bits of `d` within that level's
//! range name the bucket. So a level holds only timers that agree with `t` on every higher bit and
//! are later than `t` in this level's bits: every bucket of level `l` is earlier than every bucket
//! of level `l + 1`, and within a level the bucket index orders time. The earliest timers are
//! therefore in the lowest non-empty bucket of the lowest non-empty level, found with one 64-bit
//! occupancy mask per level. Filing a future deadline is one table lookup by that bit (the
//! shift, mask and first bucket of its level).
//!
//! - **Caffeine's levels.** Bucket spans are powers of two of nanoseconds, so filing a timer is a
//!   shift and a mask. Caffeine picks spans just above a second, a minute, an hour and a day:
//!   64 buckets of 2^30 ns (1.07 s), 64 of 2^36 ns (1.14 min), 32 of 2^42 ns (1.22 h) and 4 of
//!   2^47 ns (1.63 d). The buckets of each level together span one bucket of the next, and the
//!   four levels cover 2^49 ns (6.5 d). The fifth level is a single bucket of 2^49 ns: the
//!   overflow, holding every timer beyond the current 6.5-day turn of the wheel (up to
//!   `u64::MAX`); it is re-examined when time crosses into the next turn, so a timer parked there
//!   costs one visit per 6.5 days.
//! - **Exactness: five fine levels below.** Caffeine expires a whole 1.07 s bucket at once, up to
//!   a second late. Here the first bucket is itself split by five more levels of 64 buckets,
//!   spanning 2^24 ns (16.8 ms), 2^18 ns (262 µs), 2^12 ns (4.1 µs), 2^6 ns (64 ns) and 1 ns. A
//!   bucket of the finest level holds timers of a single deadline, so the structure alone says
//!   which timers are due: nothing is ever sorted or scanned for due entries, and no timer is
//!   visited twice at one level.
//! - **Buckets are arrays of ids.** Each bucket is a `Vec<u32>`, and each id's node records its
//!   index there, so cancelling moves the bucket's last id into the hole: O(1), no search. The
//!   bucket itself is not stored: it is the one the deadline names at the wheel's time, which
//!   every filed timer satisfies between calls. Arrays rather than linked lists because of
//!   `advance`: with ids unrelated to deadlines (a cache reuses slab slots through a free list),
//!   each timer's node is a cache miss, and a list makes every miss wait for the previous one,
//!   as the next link is in the node. Walking an array, the addresses are known up front:
//!   `advance` reads the deadlines of 64 ids at a time (`BATCH`) before filing any of them, so
//!   those misses overlap. Cancel pays for it: it reads the bucket's last id and rewrites that
//!   id's node (see `docs/decisions/0140-timer-wheel-bucket-arrays.md`).
//! - **The cascade.** [`advance`](TimerWheel::advance) repeatedly takes the earliest non-empty
//!   bucket while it starts at or before `now`. When the whole bucket is due, its ids are handed
//!   back without reading a deadline. Otherwise its due timers are handed back and the rest,
//!   inside the bucket's span and after `now`, are filed again relative to the new time, which
//!   always puts them in a strictly lower level. The overflow bucket is taken only when every
//!   level is empty, and is filed again relative to `now` at once.
//! - **Cost.** `schedule` and `cancel` are O(1), amortized over the arrays' growing and shrinking
//!   (a leading-zeros count, a table lookup, an array push or a swap with the last id). Each timer
//!   is visited at most once per level on its way down: at most 10 visits from the overflow, 7 from
//!   a deadline a few minutes away, and fewer when `advance` is called sparsely, because a bucket
//!   that is due as a whole is handed back without descending further. On top of that, each
//!   `advance` pays O(levels) to find the earliest bucket, so many tiny steps over a crowded second
//!   cost O(timers + steps), not O(timers x steps), and a jump of days costs O(timers touched),
//!   never O(elapsed time). An overflow timer costs one visit each time the wheel turns (every 6.5
//!   days).
//! - **Deadlines at or before `t`** (in the past when scheduled, or after time went backwards) go
//!   to a separate due list, handed back whole by the next `advance` with `now >= t`. An `advance`
//!   to an earlier time than `t` moves nothing in the wheel (every timer there is after `t`) and
//!   scans only the due list (O(its length), only while the clock is behind the wheel), keeping the
//!   entries still after that `now`.
//! - **Memory: 12 bytes per slot plus 4 per scheduled timer.** Timers are `u32` ids indexing the
//!   caller's slab; the wheel keeps a parallel node array grown to the largest id scheduled,
//!   12 bytes a slot (the `u64` deadline stored as two `u32`s to avoid alignment padding, and the
//!   `u32` index in its bucket, `u32::MAX` when not scheduled), and each scheduled id takes
//!   4 bytes in its bucket's array. So a slot with a timer costs 16 bytes, as the linked lists'
//!   node did, plus the arrays' spare room: up to as much again while an array grows by
//!   doubling, and an array shrinks by half when cancels leave it under a quarter full. An
//!   emptied array is kept for its bucket's next use (the fine levels empty and refill every few
//!   milliseconds, and freeing every emptied array slowed `advance`) while the room so kept stays
//!   within the wheel's number of timers, or 4,096 ids for a small wheel, each array within a
//!   64th of that; others are freed, so a burst that is over leaves nothing behind. Fixed: 486
//!   array headers of 24 bytes (about 11 KiB).
//!
//! # References
//!
//! 1. G. Varghese, T. Lauck: "Hashed and Hierarchical Timing Wheels: Data Structures for the
//!    Efficient Implementation of a Timer Facility", SOSP 1987.
//! 2. B. Manes: Caffeine's `TimerWheel` (the bucket counts and spans of the coarse levels).

/// Ids must be below this value, so that an index in a bucket never equals `u32::MAX`, the mark
/// of an unscheduled id.
pub const ID_LIMIT: u32 = u32::MAX;

/// Levels filed by bit position (the fine levels and Caffeine's four), not counting the overflow.
const LEVELS: usize = 9;

/// Bucket span of each level as a power of two of nanoseconds; level `l` covers the deadline bits
/// `SPAN_BITS[l]..SPAN_BITS[l + 1]`, so it has `2^(SPAN_BITS[l + 1] - SPAN_BITS[l])` buckets.
const SPAN_BITS: [u32; LEVELS + 1] = [
    0,  // 1 ns      x 64, fine
    6,  // 64 ns     x 64, fine
    12, // 4.1 µs    x 64, fine
    18, // 262 µs    x 64, fine
    24, // 16.8 ms   x 64, fine
    30, // 1.07 s    x 64, Caffeine's first level
    36, // 1.14 min  x 64
    42, // 1.22 h    x 32
    47, // 1.63 d    x 4
    49, // 6.5 d     x 1: the overflow (a turn of the wheel)
];

/// Bits of time covered by the levels: deadlines differing from the wheel's time above them
/// overflow.
const HORIZON_BITS: u32 = SPAN_BITS[LEVELS];

/// Index of each level's first bucket among all buckets; the last entry is the overflow bucket.
const OFFSET: [usize; LEVELS + 1] = {
    let mut offset = [0; LEVELS + 1];
    let mut l = 0;
    while l < LEVELS {
        offset[l + 1] = offset[l] + (1 << (SPAN_BITS[l + 1] - SPAN_BITS[l]));
        l += 1;
    }
    offset
};

/// The overflow bucket: deadlines beyond the current turn of the wheel.
const OVERFLOW: usize = OFFSET[LEVELS];
/// The due list: deadlines at or before the wheel's time.
const DUE: usize = OVERFLOW + 1;
/// All buckets: 5 x 64 fine, 64 + 64 + 32 + 4 coarse, the overflow and the due list (486).
const BUCKETS_TOTAL: usize = DUE + 1;

/// Where a deadline goes when the highest bit in which it differs from the wheel's time is a
/// given bit: bucket `offset + (deadline >> shift & mask)`. For the overflow's bits the mask is
/// zero, so one lookup and no branch files any future deadline.
#[derive(Debug, Clone, Copy)]
struct Filing {
    offset: u16,
    shift: u8,
    mask: u8,
}

const FILING: [Filing; 64] = {
    let mut table = [Filing {
        offset: OVERFLOW as u16,
        shift: 0,
        mask: 0,
    }; 64];
    let mut l = 0;
    while l < LEVELS {
        let mut bit = SPAN_BITS[l];
        while bit < SPAN_BITS[l + 1] {
            table[bit as usize] = Filing {
                offset: OFFSET[l] as u16,
                shift: SPAN_BITS[l] as u8,
                mask: ((1u32 << (SPAN_BITS[l + 1] - SPAN_BITS[l])) - 1) as u8,
            };
            bit += 1;
        }
        l += 1;
    }
    table
};

/// The level of each levelled bucket (those before the overflow).
const LEVEL_OF_BUCKET: [u8; OVERFLOW] = {
    let mut table = [0; OVERFLOW];
    let mut l = 0;
    while l < LEVELS {
        let mut b = OFFSET[l];
        while b < OFFSET[l + 1] {
            table[b] = l as u8;
            b += 1;
        }
        l += 1;
    }
    table
};

/// `Node::pos` of an id that is not scheduled.
const NIL: u32 = u32::MAX;

/// Timers of a bucket whose deadlines are read together before any is filed again, so that the
/// reads (cache misses when ids are unrelated to deadlines) overlap.
const BATCH: usize = 64;

/// Room, in ids, that empty buckets may keep in their arrays for their next use even when the
/// wheel holds fewer timers than that (16 KiB).
const IDLE_FLOOR: usize = 4096;

/// A slot of the node array: 12 bytes (the deadline is split so the node needs no 8-byte
/// alignment padding). The bucket is not stored: it is the one the deadline names at the wheel's
/// time.
#[derive(Debug, Clone, Copy)]
struct Node {
    deadline: [u32; 2],
    /// The id's index in its bucket's array, `NIL` when not scheduled.
    pos: u32,
}

impl Node {
    #[inline]
    fn new(deadline: u64, pos: u32) -> Self {
        Self {
            deadline: [deadline as u32, (deadline >> 32) as u32],
            pos,
        }
    }

    #[inline]
    fn deadline(&self) -> u64 {
        u64::from(self.deadline[0]) | u64::from(self.deadline[1]) << 32
    }

    #[inline]
    fn is_scheduled(&self) -> bool {
        self.pos != NIL
    }
}

const _: () = assert!(std::mem::size_of::<Node>() == 12);

const UNSCHEDULED: Node = Node {
    deadline: [0; 2],
    pos: NIL,
};

/// The earliest bucket to process: a level and index, or the overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Earliest {
    Level { level: usize, index: usize },
    Overflow,
}

/// Timers keyed by `u32` ids, expired exactly at their `u64` nanosecond deadlines. See the
/// [module docs](self).
#[derive(Clone)]
pub struct TimerWheel {
    nodes: Vec<Node>,
    buckets: Box<[Vec<u32>]>,
    /// Bit `i` of `occupied[l]` is set when bucket `i` of level `l` is non-empty.
    occupied: [u64; LEVELS],
    /// The latest time advanced to; never decreases.
    time: u64,
    len: usize,
    /// At most the earliest deadline in the due list, when it is non-empty.
    due_min: u64,
    /// Room, in ids, held by the arrays of empty buckets.
    idle: usize,
    /// Node visits and bucket takes in `advance`, to check its cost.
    #[cfg(test)]
    work: u64,
}

impl std::fmt::Debug for TimerWheel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerWheel")
            .field("len", &self.len)
            .field("time", &self.time)
            .field("next_expiration", &self.next_expiration())
            .finish_non_exhaustive()
    }
}

impl Default for TimerWheel {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerWheel {
    /// An empty wheel at time zero.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            buckets: (0..BUCKETS_TOTAL).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            time: 0,
            len: 0,
            due_min: u64::MAX,
            idle: 0,
            #[cfg(test)]
            work: 0,
        }
    }

    /// Number of scheduled timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The latest time the wheel was advanced to (it never moves backwards).
    pub fn now(&self) -> u64 {
        self.time
    }

    /// Makes room for ids below `ids` without growing again, and without the spare room of a
    /// doubling: a cache sizes the wheel like its slab. A hint: room that cannot be had (more
    /// than memory, or than `usize` can count) is not reserved, and the wheel grows as ids come.
    pub fn reserve(&mut self, ids: usize) {
        // `try_`: `Vec::reserve_exact` panics on a size overflow and aborts when memory runs out.
        let _ = self
            .nodes
            .try_reserve_exact(ids.saturating_sub(self.nodes.len()));
    }

    /// Schedules `id` to expire at `deadline`, replacing its previous deadline if it had one. A
    /// deadline at or before the current time expires on the next [`advance`](Self::advance)
    /// that reaches it.
    ///
    /// # Panics
    ///
    /// If `id >= ID_LIMIT`.
    pub fn schedule(&mut self, id: u32, deadline: u64) {
        assert!(
            id < ID_LIMIT,
            "timer id {id} is not below the wheel's limit {ID_LIMIT}"
        );
        let at = id as usize;
        if at >= self.nodes.len() {
            self.nodes.resize(at + 1, UNSCHEDULED);
        } else if self.nodes[at].is_scheduled() {
            self.unlink(id);
            self.len -= 1;
        }
        self.file(id, deadline);
        self.len += 1;
    }

    /// Cancels the timer of `id`; returns whether it was scheduled.
    pub fn cancel(&mut self, id: u32) -> bool {
        if self.deadline(id).is_none() {
            return false;
        }
        self.unlink(id);
        self.len -= 1;
        self.trim_idle();
        true
    }

    /// The deadline of `id`, if it is scheduled.
    pub fn deadline(&self, id: u32) -> Option<u64> {
        self.nodes
            .get(id as usize)
            .filter(|node| node.is_scheduled())
            .map(Node::deadline)
    }

    /// Moves time to `now` and pushes onto `expired` every id whose deadline is at or before
    /// `now`, removing them from the wheel; ids come in no particular order. An earlier `now`
    /// than [`now`](Self::now) leaves the wheel's time where it is and expires only timers
    /// scheduled at or before that `now`.
    pub fn advance(&mut self, now: u64, expired: &mut Vec<u32>) {
        if !self.buckets[DUE].is_empty() {
            self.expire_due(now, expired);
        }
        if now <= self.time {
            self.trim_idle();
            return;
        }
        while let Some((earliest, start)) = self.earliest() {
            if start > now {
                break;
            }
            #[cfg(test)]
            {
                self.work += 1;
            }
            let (bucket, whole) = match earliest {
                Earliest::Level { level, index } => {
                    // Timers left in the bucket are after `now` and inside its span, so filing
                    // them against a time in that span sends them to a lower level.
                    let end = start + ((1u64 << SPAN_BITS[level]) - 1);
                    self.time = now.min(end);
                    self.occupied[level] &= !(1u64 << index);
                    (OFFSET[level] + index, end <= now)
                }
                Earliest::Overflow => {
                    // Every level is empty, so time can jump straight to `now`.
                    self.time = now;
                    (OVERFLOW, false)
                }
            };
            self.drain(bucket, whole, now, expired);
        }
        self.time = now;
        self.trim_idle();
    }

    /// [`advance`](Self::advance), handing back at most `limit` ids: the due timers beyond
    /// them stay scheduled at their deadlines ([`deadline`](Self::deadline) still reports them)
    /// and come first in the next call. Returns true when no due timer is left behind.
    ///
    /// This bounds the work of whoever removes what expires (a cache's removals cost far more
    /// than the wheel's filing): a burst of timers due at once is handed out in batches.
    pub fn advance_bounded(&mut self, now: u64, expired: &mut Vec<u32>, limit: usize) -> bool {
        let end = expired.len().saturating_add(limit);
        if !self.buckets[DUE].is_empty() && now >= self.time {
            // Every timer of the due list is due: hand them back from the end, which leaves
            // the positions of the others as they are.
            while expired.len() < end {
                let Some(id) = self.buckets[DUE].pop() else {
                    break;
                };
                self.nodes[id as usize].pos = NIL;
                self.len -= 1;
                expired.push(id);
            }
            if self.buckets[DUE].is_empty() {
                self.due_min = u64::MAX;
                self.emptied(DUE);
            } else {
                return false;
            }
        }
        self.advance(now, expired);
        if expired.len() <= end {
            return true;
        }
        // Park the rest in the due list: each is at or before the wheel's time now.
        for id in expired.drain(end..).collect::<Vec<_>>() {
            let deadline = self.nodes[id as usize].deadline();
            self.file(id, deadline);
            self.len += 1;
        }
        false
    }

    /// Empties `bucket`, handing back its ids that are due at `now` (all of them if `whole`)
    /// and filing the others again at the wheel's time.
    fn drain(&mut self, bucket: usize, whole: bool, now: u64, expired: &mut Vec<u32>) {
        let mut ids = std::mem::take(&mut self.buckets[bucket]);
        #[cfg(test)]
        {
            self.work += ids.len() as u64;
        }
        if whole {
            // The whole span is due: no deadline needs reading.
            for &id in &ids {
                self.nodes[id as usize].pos = NIL;
            }
            self.len -= ids.len();
            expired.extend_from_slice(&ids);
        } else {
            for batch in ids.chunks(BATCH) {
                let mut deadlines = [0u64; BATCH];
                for (deadline, &id) in deadlines.iter_mut().zip(batch) {
                    *deadline = self.nodes[id as usize].deadline();
                }
                for (&id, &deadline) in batch.iter().zip(&deadlines) {
                    if deadline <= now {
                        self.nodes[id as usize].pos = NIL;
                        self.len -= 1;
                        expired.push(id);
                    } else {
                        self.file(id, deadline);
                    }
                }
            }
        }
        // The overflow and the due list may have refilled; a levelled bucket never does.
        if self.buckets[bucket].is_empty() {
            ids.clear();
            self.buckets[bucket] = ids;
            self.emptied(bucket);
        }
    }

    /// A lower bound on the earliest scheduled deadline, for sleeping until then: no timer is
    /// due before the returned time, but none need be due at it. `None` when nothing is
    /// scheduled.
    ///
    /// It is the start of the bucket that holds the earliest timers, not their deadline: early
    /// by up to that bucket's span, which is under 64 ns for a deadline close to the wheel's
    /// time but up to 1.63 days for one days away, and up to a turn of the wheel (6.5 days) for
    /// one in the overflow. It is the earliest deadline itself once those timers have reached the
    /// finest level (one deadline per bucket). With overdue timers (at or before the wheel's
    /// time) it is at or before the earliest of them. So an [`advance`](Self::advance) to this
    /// time may hand back nothing; it files the bucket's timers a level finer, and the next call
    /// returns a later, closer bound (a timer takes at most one such step per level).
    pub fn next_expiration(&self) -> Option<u64> {
        if !self.buckets[DUE].is_empty() {
            return Some(self.due_min);
        }
        self.earliest().map(|(_, start)| start)
    }

    /// Forgets ids at or above `ids`, none of which may be scheduled, and gives back the room
    /// their nodes took (a cache whose slab shrank calls it with the slab's new length).
    pub fn shrink_ids(&mut self, ids: usize) {
        debug_assert!(
            self.nodes.iter().skip(ids).all(|node| !node.is_scheduled()),
            "a scheduled id at or above {ids}"
        );
        self.nodes.truncate(ids);
        self.nodes.shrink_to_fit();
        self.trim_idle();
    }

    /// Cancels every timer; the wheel keeps its time.
    pub fn clear(&mut self) {
        self.nodes.clear();
        // Not `fill`, which would keep each array's allocation.
        for ids in self.buckets.iter_mut() {
            *ids = Vec::new();
        }
        self.occupied = [0; LEVELS];
        self.len = 0;
        self.due_min = u64::MAX;
        self.idle = 0;
    }

    /// The scheduled `(id, deadline)` pairs, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.is_scheduled())
            .map(|(id, node)| (id as u32, node.deadline()))
    }

    /// Heap bytes held: 12 per slot of the node array, 4 per id of room in the bucket arrays
    /// (filled or spare), and the 486 fixed array headers.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.buckets.len() * std::mem::size_of::<Vec<u32>>()
            + self
                .buckets
                .iter()
                .map(|ids| ids.capacity() * std::mem::size_of::<u32>())
                .sum::<usize>()
    }

    /// Panics if any invariant is broken: every id's node names its position in its bucket, every
    /// node in the bucket its deadline names, occupancy masks, the count and the idle room
    /// matching the arrays.
    #[doc(hidden)]
    pub fn validate(&self) {
        let mut seen = vec![false; self.nodes.len()];
        let mut total = 0;
        for (bucket, ids) in self.buckets.iter().enumerate() {
            for (pos, &id) in ids.iter().enumerate() {
                let node = self.nodes[id as usize];
                assert!(!seen[id as usize], "id {id} filed twice");
                seen[id as usize] = true;
                assert_eq!(node.pos as usize, pos, "id {id}: position");
                assert_eq!(
                    self.bucket_for(node.deadline()),
                    bucket,
                    "id {id} (deadline {}) filed in the wrong bucket at time {}",
                    node.deadline(),
                    self.time
                );
                if bucket == DUE {
                    assert!(
                        self.due_min <= node.deadline(),
                        "due_min above a due deadline"
                    );
                }
            }
            if bucket < OVERFLOW {
                let level = LEVEL_OF_BUCKET[bucket] as usize;
                let bit = self.occupied[level] >> (bucket - OFFSET[level]) & 1;
                assert_eq!(bit == 1, !ids.is_empty(), "bucket {bucket}: occupancy bit");
            }
            total += ids.len();
        }
        assert_eq!(total, self.len, "count of filed ids");
        let idle: usize = self
            .buckets
            .iter()
            .filter(|ids| ids.is_empty())
            .map(Vec::capacity)
            .sum();
        assert_eq!(idle, self.idle, "room held by empty buckets");
        assert!(
            self.idle <= self.len.max(IDLE_FLOOR),
            "idle room {} above the budget for {} timers",
            self.idle,
            self.len
        );
        for (id, node) in self.nodes.iter().enumerate() {
            if !seen[id] {
                assert!(
                    !node.is_scheduled(),
                    "id {id} has a position but is in no bucket"
                );
            }
        }
        for (level, &mask) in self.occupied.iter().enumerate() {
            let buckets = OFFSET[level + 1] - OFFSET[level];
            assert_eq!(mask >> (buckets - 1) >> 1, 0, "level {level}: stray bits");
        }
    }

    /// The bucket for `deadline` at the wheel's current time.
    #[inline]
    fn bucket_for(&self, deadline: u64) -> usize {
        if deadline <= self.time {
            return DUE;
        }
        // Below 64: the deadline differs from the time.
        let bit = 63 - (deadline ^ self.time).leading_zeros() as usize;
        let filing = FILING[bit & 63];
        usize::from(filing.offset)
            + ((deadline >> filing.shift) as usize & usize::from(filing.mask))
    }

    /// The earliest non-empty bucket and the time it starts (at or before all its deadlines),
    /// ignoring the due list.
    #[inline]
    fn earliest(&self) -> Option<(Earliest, u64)> {
        for (level, &mask) in self.occupied.iter().enumerate() {
            if mask != 0 {
                let index = mask.trailing_zeros();
                let above = SPAN_BITS[level + 1];
                let start = (self.time >> above << above) | (u64::from(index) << SPAN_BITS[level]);
                return Some((
                    Earliest::Level {
                        level,
                        index: index as usize,
                    },
                    start,
                ));
            }
        }
        if self.buckets[OVERFLOW].is_empty() {
            return None;
        }
        // The next turn of the wheel; the overflow is empty in the last turn, as every later
        // deadline there agrees with the time on the high bits.
        let start = ((self.time >> HORIZON_BITS) + 1).saturating_mul(1 << HORIZON_BITS);
        Some((Earliest::Overflow, start))
    }

    /// Hands back the due-list timers at or before `now`; the others stay in the due list, as
    /// they are still before the wheel's time.
    fn expire_due(&mut self, now: u64, expired: &mut Vec<u32>) {
        self.due_min = u64::MAX;
        self.drain(DUE, now >= self.time, now, expired);
    }

    /// Files `id` at `deadline` in the bucket that deadline names.
    #[inline]
    fn file(&mut self, id: u32, deadline: u64) {
        let bucket = self.bucket_for(deadline);
        if bucket < OVERFLOW {
            let level = LEVEL_OF_BUCKET[bucket] as usize;
            self.occupied[level] |= 1u64 << (bucket - OFFSET[level]);
        } else if bucket == DUE {
            self.due_min = self.due_min.min(deadline);
        }
        let ids = &mut self.buckets[bucket];
        if ids.is_empty() {
            self.idle -= ids.capacity();
        }
        self.nodes[id as usize] = Node::new(deadline, ids.len() as u32);
        ids.push(id);
    }

    /// Keeps the array of `bucket`, just emptied, for the bucket's next use while the room held
    /// idle stays within the budget; frees it otherwise.
    fn emptied(&mut self, bucket: usize) {
        let room = self.buckets[bucket].capacity();
        let budget = self.len.max(IDLE_FLOOR);
        // One array may take a 64th of the budget, a level's share: arrays sized for a burst
        // that is over do not crowd out the ones that refill at every cascade.
        if room <= budget / 64 && self.idle + room <= budget {
            self.idle += room;
        } else {
            self.buckets[bucket] = Vec::new();
        }
    }

    /// Frees the arrays of every empty bucket once the room they hold is above the budget, which
    /// shrinks as timers leave: a burst that is over leaves nothing behind. Amortized O(1): the
    /// scan follows the building of more than [`IDLE_FLOOR`] ids of room.
    fn trim_idle(&mut self) {
        if self.idle > self.len.max(IDLE_FLOOR) {
            for ids in self.buckets.iter_mut().filter(|ids| ids.is_empty()) {
                *ids = Vec::new();
            }
            self.idle = 0;
        }
    }

    /// Takes a scheduled `id` out of its bucket, clearing the bucket's occupancy bit if it was the
    /// last one.
    fn unlink(&mut self, id: u32) {
        let node = self.nodes[id as usize];
        let (bucket, pos) = (self.bucket_for(node.deadline()), node.pos);
        let ids = &mut self.buckets[bucket];
        // Move the last id into the hole; the hole itself is only written, never read.
        let last = ids.pop().expect("a scheduled id's bucket holds it");
        if last != id {
            ids[pos as usize] = last;
            self.nodes[last as usize].pos = pos;
        }
        if ids.is_empty() {
            self.emptied(bucket);
            if bucket < OVERFLOW {
                let level = LEVEL_OF_BUCKET[bucket] as usize;
                self.occupied[level] &= !(1u64 << (bucket - OFFSET[level]));
            }
        } else if ids.len() < ids.capacity() / 4 {
            // An array stays within four times its contents, at O(1) amortized cost.
            ids.shrink_to(ids.capacity() / 2);
        }
        self.nodes[id as usize].pos = NIL;
    }
}

#[cfg(test)]
mod tests;
