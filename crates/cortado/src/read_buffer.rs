//! A lossy buffer of reads that lets readers share a shard while the policy learns of every hit
//! later, in a batch, under the policy's own lock.
//!
//! [`ReadBuffer::record`] never blocks and never allocates; a read may be lost when the buffer is
//! overwritten before it is drained, which only makes the policy's view slightly stale.
//!
//! # Design
//!
//! This is the BP-Wrapper idea that Caffeine uses: a policy that reorders lists on every hit would
//! need the write lock on every read, so reads are recorded in a small ring instead and replayed in
//! a batch: by a reader that still holds only the shard's read lock and wins a `try_lock` of the
//! policy's mutex, or by the next writer, under the write lock. The ring has [`CAPACITY`] (64)
//! slots of one `AtomicU64` each; a reader claims a position with one `fetch_add` and stores its
//! claim number beside the slot index plus one (zero marks an empty slot). Every [`DRAIN_EVERY`]
//! (32) reads the reader that claimed the position is asked to try a drain (`try_lock`, never
//! waiting), so the ring is emptied about twice per lap and few reads are lost even when readers
//! outpace writers. A drain visits only the positions claimed since the previous one (it
//! remembers where it stopped) and empties each whose slot holds that very claim. It skips a
//! claim whose slot a later lap has overwritten (that read is lost; the later one is left for its
//! own drain), and stops at a claim whose reader has not stored yet, to resume there next time,
//! unless the ring has lapped it since. Without the claim numbers, a drain that readers lapped
//! mid-way lost up to a lap more than the ring's overflow; emptying all 64 slots on every drain
//! was slow; and the batch goes to the policy in one call so that W-TinyLFU can touch all of its
//! sketch blocks and list neighbours before changing any, which overlaps their cache misses
//! (measurements: `docs/decisions/0010-read-buffer-claims-and-batches.md`). A replayed index
//! may name a slot that was freed or reused meanwhile; the shard ignores free slots, and a
//! reused one gets a hit it did not earn, which is harmless.
//!
//! Each slot holds a self-contained value that publishes nothing else, so relaxed atomics suffice:
//! a drain returns each recorded value at most once (the exchange of its exact claim and index)
//! and never a value nobody recorded.
//! The tests check this under shuttle's model checker too (`model_check`). On one thread nothing is
//! lost and the order is kept (every write to a shard whose reads can be buffered drains first, and
//! a drain comes every 32 reads), so a one-shard `sync::Cache` decides exactly as the unsync one.
//! With more threads the loss moves the hit ratio little (`tests/it/sync_hit_ratio.rs` checks 2
//! threads; the figures are in decision 0010).
//!
//! # References
//!
//! 1. X. Ding, S. Jiang, X. Zhang: "BP-Wrapper: A System Framework Making Any Replacement
//!    Algorithms (Almost) Lock Contention Free", ICDE 2009.

use super::shim::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots in the ring (a power of two): two drains' worth, so a drain every 32 reads empties it
/// about twice per lap.
pub(crate) const CAPACITY: usize = 64;
/// A drain is suggested every this many reads (a power of two, below `CAPACITY`): half a lap,
/// so few reads are lost even when readers outpace writers.
pub(crate) const DRAIN_EVERY: u32 = 32;

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct ReadBuffer {
    /// Each: the claim that wrote it (high half) and the slot index plus one (low half); zero
    /// when empty.
    slots: [AtomicU64; CAPACITY],
    claims: AtomicU32,
    /// Claims up to here have been drained (written only by the one drainer at a time).
    drained: AtomicU32,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        Self {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            claims: AtomicU32::new(0),
            drained: AtomicU32::new(0),
        }
    }
}

impl ReadBuffer {
    /// A buffer whose counters start at `claim`, to test the claims' wrap around `u32::MAX`.
    #[cfg(test)]
    fn starting_at(claim: u32) -> Self {
        let buffer = Self::default();
        buffer.claims.store(claim, Ordering::Relaxed);
        buffer.drained.store(claim, Ordering::Relaxed);
        buffer
    }

    /// Whether every claimed position has been drained (a racing reader may claim one right
    /// after; its own drain picks it up).
    #[inline]
    pub(crate) fn is_drained(&self) -> bool {
        self.claims.load(Ordering::Relaxed) == self.drained.load(Ordering::Relaxed)
    }

    /// Records a read of slot `index`; true when the caller should try to drain.
    #[inline]
    pub(crate) fn record(&self, index: u32) -> bool {
        let claim = self.claims.fetch_add(1, Ordering::Relaxed);
        let entry = (u64::from(claim) << 32) | u64::from(index.wrapping_add(1));
        self.slots[claim as usize & (CAPACITY - 1)].store(entry, Ordering::Relaxed);
        claim & (DRAIN_EVERY - 1) == DRAIN_EVERY - 1
    }

    /// Empties the positions claimed since the last drain (at most one lap) and hands the
    /// recorded indices, in claim order, to `apply` as one batch. Callers must not drain
    /// concurrently: a reader drains holding the policy's mutex, a writer holding the shard's
    /// write lock, and either excludes the other.
    pub(crate) fn drain(&self, apply: impl FnOnce(&[u32])) {
        let end = self.claims.load(Ordering::Relaxed);
        let start = self.drained.load(Ordering::Relaxed);
        // Claims wrap around u32; a gap over one lap means older reads were overwritten.
        let pending = end.wrapping_sub(start).min(CAPACITY as u32);
        if pending == 0 {
            // Every write drains: most find nothing, and the batch below is worth not clearing.
            return;
        }
        let first = end.wrapping_sub(pending);
        let mut batch = [0u32; CAPACITY];
        let mut len = 0;
        let mut stop = end;
        for k in 0..pending {
            let claim = first.wrapping_add(k);
            let slot = &self.slots[claim as usize & (CAPACITY - 1)];
            let entry = slot.load(Ordering::Relaxed);
            // How many claims after this one the read in the slot was claimed (wrapping).
            let ahead = ((entry >> 32) as u32).wrapping_sub(claim) as i32;
            if entry == 0 || ahead < 0 {
                // Claimed, but the reader has not stored yet: resume here next time, unless
                // the ring has lapped this claim since (its read is lost either way).
                let lapped = self.claims.load(Ordering::Relaxed).wrapping_sub(claim);
                if lapped as usize <= CAPACITY {
                    stop = claim;
                    break;
                }
                continue;
            }
            // A later lap overwrote this claim's read (`ahead > 0`), now or before the
            // exchange: lost; the later read stays for its own drain.
            if ahead == 0
                && slot
                    .compare_exchange(entry, 0, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                batch[len] = (entry as u32).wrapping_sub(1);
                len += 1;
            }
        }
        self.drained.store(stop, Ordering::Relaxed);
        if len > 0 {
            apply(&batch[..len]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::shim::{model, model_threads, thread, Arc};
    use super::*;

    fn drained(buffer: &ReadBuffer) -> Vec<u32> {
        let mut seen = Vec::new();
        buffer.drain(|batch| seen.extend_from_slice(batch));
        seen
    }

    #[test]
    fn drain_returns_recorded_indices_once() {
        model(|| {
            let buffer = ReadBuffer::default();
            for i in 0..10 {
                buffer.record(i);
            }
            assert_eq!(drained(&buffer), (0..10).collect::<Vec<_>>());
            assert!(drained(&buffer).is_empty(), "drained twice");
        });
    }

    #[test]
    fn is_drained_after_record_false_after_drain_true() {
        model(|| {
            let buffer = ReadBuffer::default();
            assert!(buffer.is_drained());
            buffer.record(7);
            assert!(!buffer.is_drained());
            assert_eq!(drained(&buffer), vec![7]);
            assert!(buffer.is_drained());
        });
    }

    #[test]
    fn record_every_32nd_read_asks_for_drain() {
        model(|| {
            let buffer = ReadBuffer::default();
            let asks: Vec<u32> = (0..100).filter(|&i| buffer.record(i)).collect();
            assert_eq!(asks, vec![31, 63, 95]);
        });
    }

    #[test]
    fn record_overflow_keeps_latest_lap() {
        model(|| {
            let buffer = ReadBuffer::default();
            for i in 0..(CAPACITY as u32 + 5) {
                buffer.record(i);
            }
            let seen = drained(&buffer);
            assert_eq!(seen.len(), CAPACITY);
            assert!(seen.contains(&(CAPACITY as u32 + 4)));
            assert!(!seen.contains(&0));
        });
    }

    #[test]
    fn record_index_max_survives_the_offset() {
        model(|| {
            let buffer = ReadBuffer::default();
            buffer.record(u32::MAX - 1);
            assert_eq!(drained(&buffer), vec![u32::MAX - 1]);
        });
    }

    /// Two readers record distinct indices while a third thread drains; a final drain collects
    /// the rest. Returns everything drained, sorted.
    /// Two readers record `per_reader` reads each while a third thread drains; then a final
    /// drain. The claims start at `start`. Sorted indices drained.
    fn record_while_draining(start: u32, per_reader: u32) -> Vec<u32> {
        let buffer = Arc::new(ReadBuffer::starting_at(start));
        let readers: Vec<_> = (0..2u32)
            .map(|r| {
                let buffer = buffer.clone();
                thread::spawn(move || {
                    for j in 0..per_reader {
                        buffer.record(r * 1_000 + j);
                    }
                })
            })
            .collect();
        let drainer = {
            let buffer = buffer.clone();
            thread::spawn(move || drained(&buffer))
        };
        for reader in readers {
            reader.join().unwrap();
        }
        let mut seen = drainer.join().unwrap();
        seen.extend(drained(&buffer));
        assert!(buffer.is_drained(), "a final drain leaves nothing");
        seen.sort_unstable();
        seen
    }

    #[test]
    fn concurrent_record_and_drain_below_capacity_lose_nothing() {
        model_threads(|| {
            // From the first claim, and across the claims' wrap around `u32::MAX`.
            for start in [0, u32::MAX - 2] {
                let seen = record_while_draining(start, 3);
                assert_eq!(seen, vec![0, 1, 2, 1_000, 1_001, 1_002], "start {start}");
            }
        });
    }

    #[test]
    fn concurrent_record_and_drain_past_capacity_never_duplicate_or_invent() {
        model_threads(|| {
            let per_reader = CAPACITY as u32 / 2 + 8;
            for start in [0, u32::MAX - 20] {
                let seen = record_while_draining(start, per_reader);
                let mut unique = seen.clone();
                unique.dedup();
                assert_eq!(unique.len(), seen.len(), "an index drained twice: {seen:?}");
                assert!(
                    seen.iter()
                        .all(|&i| i % 1_000 < per_reader && i / 1_000 < 2),
                    "drained an index never recorded: {seen:?}"
                );
                // The ring holds CAPACITY reads, so at most the overflow can be lost.
                assert!(
                    seen.len() >= CAPACITY,
                    "lost more than the overflow (start {start}): {seen:?}"
                );
            }
        });
    }

    // Claims wrapping around `u32::MAX`.

    #[test]
    fn drain_across_claim_wrap_returns_indices_once_in_order() {
        model(|| {
            for start in [
                u32::MAX - 4,
                u32::MAX,
                u32::MAX - 63,
                u32::MAX - 64,
                0u32.wrapping_sub(100),
            ] {
                let buffer = ReadBuffer::starting_at(start);
                for i in 0..10 {
                    buffer.record(i);
                }
                assert!(!buffer.is_drained());
                assert_eq!(
                    drained(&buffer),
                    (0..10).collect::<Vec<_>>(),
                    "start {start}"
                );
                assert!(drained(&buffer).is_empty(), "drained twice (start {start})");
                assert!(buffer.is_drained());
                // A second lap over the wrap.
                for i in 100..150 {
                    buffer.record(i);
                }
                assert_eq!(
                    drained(&buffer),
                    (100..150).collect::<Vec<_>>(),
                    "start {start}"
                );
            }
        });
    }

    #[test]
    fn drain_overflow_across_claim_wrap_keeps_latest_lap() {
        model(|| {
            for start in [u32::MAX - 30, u32::MAX - 64, u32::MAX] {
                let buffer = ReadBuffer::starting_at(start);
                for i in 0..(CAPACITY as u32 + 5) {
                    buffer.record(i);
                }
                let seen = drained(&buffer);
                assert_eq!(
                    seen,
                    (5..CAPACITY as u32 + 5).collect::<Vec<_>>(),
                    "start {start}"
                );
                assert!(buffer.is_drained());
            }
        });
    }

    /// A claim not yet stored stops the drain (across the wrap) until it is stored, and is
    /// skipped once the ring has lapped it.
    #[test]
    fn drain_unstored_claim_stops_until_stored_or_lapped() {
        model(|| {
            let start = u32::MAX - 2;
            let buffer = ReadBuffer::starting_at(start);
            buffer.record(0); // claim MAX-2
            buffer.record(1); // claim MAX-1
                              // A reader claims MAX and has not stored yet.
            let slow = buffer.claims.fetch_add(1, Ordering::Relaxed);
            assert_eq!(slow, u32::MAX);
            buffer.record(3); // claim 0
            buffer.record(4); // claim 1
            assert_eq!(drained(&buffer), vec![0, 1], "stops at the unstored claim");
            assert_eq!(drained(&buffer), Vec::<u32>::new(), "still unstored");
            // The slow reader stores now.
            let entry = (u64::from(slow) << 32) | 3;
            buffer.slots[slow as usize & (CAPACITY - 1)].store(entry, Ordering::Relaxed);
            assert_eq!(drained(&buffer), vec![2, 3, 4]);
            assert!(buffer.is_drained());

            // Another slow claim, then the ring laps it: the drain skips it.
            let slow = buffer.claims.fetch_add(1, Ordering::Relaxed);
            for i in 0..CAPACITY as u32 {
                buffer.record(100 + i);
            }
            let seen = drained(&buffer);
            assert_eq!(seen, (100..100 + CAPACITY as u32).collect::<Vec<_>>());
            assert!(buffer.is_drained());
            // Its late store is never drained (its read is lost), nor taken for a later claim.
            let entry = (u64::from(slow) << 32) | 7;
            buffer.slots[slow as usize & (CAPACITY - 1)].store(entry, Ordering::Relaxed);
            for i in 0..3 {
                buffer.record(500 + i);
            }
            assert_eq!(drained(&buffer), vec![500, 501, 502]);
        });
    }

    /// A slow claim that the ring has lapped, whose late store then overwrites the later lap's
    /// read: never drained (neither value), and the drain neither stops forever nor invents.
    #[test]
    fn drain_late_store_over_later_lap_is_never_drained() {
        model(|| {
            let buffer = ReadBuffer::starting_at(u32::MAX - 10);
            let slow = buffer.claims.fetch_add(1, Ordering::Relaxed);
            for i in 0..CAPACITY as u32 {
                buffer.record(100 + i); // the last one laps `slow`'s slot
            }
            // The slow reader stores over the later lap's read.
            let entry = (u64::from(slow) << 32) | 8;
            buffer.slots[slow as usize & (CAPACITY - 1)].store(entry, Ordering::Relaxed);
            let seen = drained(&buffer);
            assert!(
                !seen.contains(&7),
                "the lapped claim's read drained: {seen:?}"
            );
            assert_eq!(
                seen,
                (100..100 + CAPACITY as u32 - 1).collect::<Vec<_>>(),
                "{seen:?}"
            );
            // The later lap's claim has its slot overwritten by an older claim: the drain waits
            // for it until lapped (as for a claim not stored), then moves on.
            for i in 0..(CAPACITY as u32 + 1) {
                buffer.record(1000 + i);
            }
            let seen = drained(&buffer);
            assert_eq!(seen, (1001..1001 + CAPACITY as u32).collect::<Vec<_>>());
            assert!(buffer.is_drained());
        });
    }

    /// A claim whose slot still holds an undrained read of the previous lap has not been
    /// stored yet: the drain stops there (it is not lapped), and takes it once stored.
    #[test]
    fn drain_stale_entry_of_earlier_lap_stops_until_stored() {
        model(|| {
            for start in [0, u32::MAX - 30] {
                let buffer = ReadBuffer::starting_at(start);
                for i in 0..CAPACITY as u32 {
                    buffer.record(i); // a full lap, not drained
                }
                let slow = buffer.claims.fetch_add(1, Ordering::Relaxed);
                for i in 0..3 {
                    buffer.record(200 + i);
                }
                let seen = drained(&buffer);
                assert_eq!(
                    seen,
                    (4..CAPACITY as u32).collect::<Vec<_>>(),
                    "start {start}"
                );
                let entry = (u64::from(slow) << 32) | 101;
                buffer.slots[slow as usize & (CAPACITY - 1)].store(entry, Ordering::Relaxed);
                assert_eq!(drained(&buffer), vec![100, 200, 201, 202], "start {start}");
                assert!(buffer.is_drained());
            }
        });
    }
}
