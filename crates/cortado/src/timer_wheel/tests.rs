//! Tests of the timer wheel: against a model of deadlines under random operations, and case by
//! case (exact deadlines, cascades, clocks going back, bursts in bounded advances, the memory
//! its arrays take).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const SECOND: u64 = 1_000_000_000;
const DAY: u64 = 86_400 * SECOND;

fn advance(wheel: &mut TimerWheel, now: u64) -> Vec<u32> {
    let mut expired = Vec::new();
    wheel.advance(now, &mut expired);
    wheel.validate();
    expired.sort_unstable();
    expired
}

#[test]
fn advance_bounded_hands_out_a_burst_in_batches() {
    let mut wheel = TimerWheel::new();
    for id in 0..1000 {
        wheel.schedule(id, 5 * SECOND);
    }
    wheel.schedule(1000, 9 * SECOND);
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let mut batch = Vec::new();
        let done = wheel.advance_bounded(6 * SECOND, &mut batch, 64);
        wheel.validate();
        calls += 1;
        assert!(batch.len() <= 64);
        // Those left behind are still due at their deadline.
        for id in 0..1000 {
            if !seen.contains(&id) && !batch.contains(&id) {
                assert_eq!(wheel.deadline(id), Some(5 * SECOND));
            }
        }
        seen.extend(batch);
        if done {
            break;
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    assert_eq!(calls, 1000usize.div_ceil(64));
    assert_eq!(wheel.deadline(1000), Some(9 * SECOND));
}

#[test]
fn reserve_more_than_usize_counts_is_ignored() {
    // `Vec::reserve_exact` panicked with "capacity overflow".
    let mut wheel = TimerWheel::new();
    wheel.reserve(usize::MAX);
    wheel.schedule(3, SECOND);
    assert_eq!(advance(&mut wheel, 2 * SECOND), [3]);
}

#[test]
fn levels_match_caffeine_bucket_counts_and_spans() {
    // Caffeine's coarse levels: 64, 64, 32, 4 buckets and the single overflow bucket, with
    // spans just above a second, a minute, an hour, a day, and four days of those.
    let counts: Vec<usize> = (5..LEVELS).map(|l| OFFSET[l + 1] - OFFSET[l]).collect();
    assert_eq!(counts, [64, 64, 32, 4]);
    assert_eq!(
        BUCKETS_TOTAL - OVERFLOW,
        2,
        "one overflow bucket and the due list"
    );
    let spans: Vec<f64> = SPAN_BITS[5..]
        .iter()
        .map(|&bits| (1u64 << bits) as f64 / SECOND as f64)
        .collect();
    let expected = [
        1.07,
        1.14 * 60.0,
        1.22 * 3600.0,
        1.63 * 86_400.0,
        6.5 * 86_400.0,
    ];
    for (span, want) in spans.iter().zip(expected) {
        assert!(
            (span / want - 1.0).abs() < 0.01,
            "span {span} s, expected {want} s"
        );
    }
    // Each coarse level covers exactly one bucket of the next.
    for l in 5..LEVELS - 1 {
        let buckets = OFFSET[l + 1] - OFFSET[l];
        assert_eq!(buckets << SPAN_BITS[l], 1 << SPAN_BITS[l + 1]);
    }
    // The fine levels split the first coarse bucket down to single nanoseconds.
    assert_eq!(SPAN_BITS[0], 0);
    assert_eq!(OFFSET[5], 5 * 64);
    assert_eq!(BUCKETS_TOTAL, 486);
}

#[test]
fn advance_exactly_to_deadline_expires_entry() {
    let mut wheel = TimerWheel::new();
    let deadline = 3 * SECOND + 123_456_789;
    wheel.schedule(7, deadline);
    assert_eq!(advance(&mut wheel, deadline), [7]);
    assert!(wheel.is_empty());
    assert_eq!(wheel.deadline(7), None);
}

#[test]
fn next_expiration_far_deadline_lower_bound_tightens_per_level() {
    let mut wheel = TimerWheel::new();
    // Three days and a few nanoseconds ahead: filed in the 1.63-day bucket that starts 1.37
    // days before it.
    let deadline = 3 * 86_400 * SECOND + 123_456_789;
    wheel.schedule(7, deadline);
    let mut bounds = Vec::new();
    while let Some(bound) = wheel.next_expiration() {
        assert!(bound <= deadline, "bound {bound} after the deadline");
        assert!(bounds.last().is_none_or(|&last| bound > last), "{bounds:?}");
        bounds.push(bound);
        let expired = advance(&mut wheel, bound);
        assert_eq!(expired.is_empty(), bound < deadline, "at {bound}");
    }
    // The first bound was a bucket's start, over a day early; each advance to a bound filed
    // the timer at least a level finer, down to its own nanosecond.
    assert!(deadline - bounds[0] > 86_400 * SECOND, "{bounds:?}");
    assert_eq!(bounds.last(), Some(&deadline));
    assert!(bounds.len() <= LEVELS, "{bounds:?}");
}

#[test]
fn advance_one_nano_before_deadline_keeps_entry() {
    let mut wheel = TimerWheel::new();
    let deadline = 3 * SECOND + 123_456_789;
    wheel.schedule(7, deadline);
    assert!(advance(&mut wheel, deadline - 1).is_empty());
    assert_eq!(wheel.deadline(7), Some(deadline));
    assert_eq!(
        wheel.next_expiration(),
        Some(deadline),
        "exact at the finest level"
    );
    assert_eq!(advance(&mut wheel, deadline), [7]);
}

#[test]
fn advance_in_steps_expires_each_entry_at_its_own_nanosecond() {
    let mut wheel = TimerWheel::new();
    // Deadlines inside one coarse bucket, a few nanoseconds apart.
    let base = 5 * SECOND;
    let ids = if cfg!(miri) { 10 } else { 50 };
    for id in 0..ids {
        wheel.schedule(id, base + u64::from(id) * 3);
    }
    for step in 0..u64::from(ids) * 3 {
        let now = base + step;
        let expired = advance(&mut wheel, now);
        let want: Vec<u32> = (0..ids)
            .filter(|&id| base + u64::from(id) * 3 == now)
            .collect();
        assert_eq!(expired, want, "at {now}");
    }
    assert!(wheel.is_empty());
}

#[test]
fn schedule_past_deadline_expires_on_next_advance() {
    let mut wheel = TimerWheel::new();
    advance(&mut wheel, 10 * SECOND);
    wheel.schedule(1, SECOND);
    wheel.schedule(2, 10 * SECOND);
    assert_eq!(wheel.next_expiration(), Some(SECOND));
    assert_eq!(advance(&mut wheel, 10 * SECOND), [1, 2]);
}

#[test]
fn advance_backwards_expires_nothing() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(1, 20 * SECOND);
    wheel.schedule(2, 30 * SECOND);
    assert!(advance(&mut wheel, 15 * SECOND).is_empty());
    assert!(advance(&mut wheel, 5 * SECOND).is_empty());
    assert!(advance(&mut wheel, 0).is_empty());
    assert_eq!(wheel.now(), 15 * SECOND, "time does not move backwards");
    assert_eq!(advance(&mut wheel, 20 * SECOND), [1]);
    assert_eq!(advance(&mut wheel, 30 * SECOND), [2]);
}

#[test]
fn advance_backwards_expires_only_past_deadlines_at_or_before_now() {
    let mut wheel = TimerWheel::new();
    advance(&mut wheel, 100);
    // Both are in the past for the wheel, but the caller's clock went back to 40.
    wheel.schedule(1, 30);
    wheel.schedule(2, 50);
    assert_eq!(advance(&mut wheel, 40), [1]);
    assert_eq!(wheel.deadline(2), Some(50));
    assert!(advance(&mut wheel, 49).is_empty());
    assert_eq!(advance(&mut wheel, 50), [2]);
}

#[test]
fn schedule_beyond_horizon_cascades_when_due() {
    let mut wheel = TimerWheel::new();
    let deadline = 30 * DAY + 17;
    wheel.schedule(1, deadline);
    // Day by day: every turn of the wheel re-examines the overflow, none expires early.
    for day in 1..30 {
        assert!(advance(&mut wheel, day * DAY).is_empty(), "day {day}");
    }
    assert!(advance(&mut wheel, deadline - 1).is_empty());
    assert_eq!(advance(&mut wheel, deadline), [1]);
}

#[test]
fn schedule_beyond_horizon_expires_on_one_big_jump() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(1, 400 * DAY);
    wheel.schedule(2, 401 * DAY);
    assert_eq!(advance(&mut wheel, 400 * DAY), [1]);
    assert!(advance(&mut wheel, 401 * DAY - 1).is_empty());
    assert_eq!(advance(&mut wheel, 401 * DAY), [2]);
}

#[test]
fn schedule_u64_max_expires_only_at_u64_max() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(1, u64::MAX);
    wheel.schedule(2, u64::MAX - 1);
    assert!(advance(&mut wheel, u64::MAX / 2).is_empty());
    assert!(advance(&mut wheel, u64::MAX - 2).is_empty());
    assert_eq!(advance(&mut wheel, u64::MAX - 1), [2]);
    assert_eq!(advance(&mut wheel, u64::MAX), [1]);
    // At the end of time everything is due.
    wheel.schedule(3, u64::MAX);
    assert_eq!(advance(&mut wheel, u64::MAX), [3]);
}

#[test]
fn schedule_twice_keeps_latest_deadline() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(1, 10 * SECOND);
    wheel.schedule(1, 2 * DAY);
    assert_eq!(wheel.len(), 1);
    assert_eq!(wheel.deadline(1), Some(2 * DAY));
    assert!(advance(&mut wheel, DAY).is_empty());
    wheel.schedule(1, DAY + 5);
    assert_eq!(advance(&mut wheel, DAY + 5), [1]);
    assert!(advance(&mut wheel, 3 * DAY).is_empty());
}

#[test]
fn cancel_unknown_id_returns_false() {
    let mut wheel = TimerWheel::new();
    assert!(!wheel.cancel(3));
    assert!(!wheel.cancel(ID_LIMIT));
    assert!(!wheel.cancel(u32::MAX));
    wheel.schedule(3, SECOND);
    assert!(wheel.cancel(3));
    assert!(!wheel.cancel(3), "already cancelled");
    wheel.validate();
}

#[test]
fn cancel_scheduled_entry_never_expires() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(1, SECOND);
    wheel.schedule(2, SECOND);
    assert!(wheel.cancel(1));
    wheel.validate();
    assert_eq!(advance(&mut wheel, 2 * SECOND), [2]);
    assert_eq!(wheel.next_expiration(), None);
}

#[test]
#[should_panic(expected = "limit")]
fn schedule_reserved_id_panics() {
    TimerWheel::new().schedule(ID_LIMIT, 1);
}

#[test]
fn clear_cancels_everything_and_keeps_time() {
    let mut wheel = TimerWheel::new();
    advance(&mut wheel, SECOND);
    for id in 0..100u32 {
        wheel.schedule(id, u64::from(id) * DAY / 7);
    }
    wheel.clear();
    wheel.validate();
    assert!(wheel.is_empty());
    assert_eq!(wheel.iter().count(), 0);
    assert_eq!(wheel.next_expiration(), None);
    assert_eq!(wheel.now(), SECOND);
    assert!(advance(&mut wheel, u64::MAX).is_empty());
}

#[test]
fn iter_lists_scheduled_pairs() {
    let mut wheel = TimerWheel::new();
    wheel.schedule(4, 40);
    wheel.schedule(1, u64::MAX);
    wheel.schedule(9, 90);
    wheel.cancel(9);
    assert_eq!(wheel.iter().collect::<Vec<_>>(), [(1, u64::MAX), (4, 40)]);
}

#[test]
fn memory_bytes_counts_twelve_per_slot_and_four_per_timer() {
    let mut wheel = TimerWheel::new();
    let empty = wheel.memory_bytes();
    wheel.schedule(999, SECOND);
    let slots = wheel.memory_bytes() - empty;
    assert!((1000 * 12..=1000 * 12 + 64).contains(&slots), "{slots}");
    // A thousand timers in one bucket: 4 bytes each, up to twice that while it grows.
    for id in 0..1000u32 {
        wheel.schedule(id, SECOND);
    }
    let filed = wheel.memory_bytes() - empty - slots;
    assert!((999 * 4..=2 * 1000 * 4).contains(&filed), "{filed}");
}

/// Heap bytes beyond the node array and the fixed array headers.
fn array_bytes(wheel: &TimerWheel) -> usize {
    wheel.memory_bytes()
        - wheel.nodes.capacity() * std::mem::size_of::<Node>()
        - BUCKETS_TOTAL * std::mem::size_of::<Vec<u32>>()
}

#[test]
#[cfg_attr(
    miri,
    ignore = "volume: 100,000 timers, so that arrays grow and shrink"
)]
fn cancel_everything_frees_bucket_arrays() {
    let mut wheel = TimerWheel::new();
    let timers = 100_000u32;
    for id in 0..timers {
        wheel.schedule(id, 5 * SECOND + u64::from(id % 7));
    }
    assert!(array_bytes(&wheel) >= timers as usize * 4);
    for id in (0..timers).rev().step_by(2).chain((0..timers).step_by(2)) {
        assert!(wheel.cancel(id));
        if id % 10_007 == 0 {
            // Cancels shrink an array that falls under a quarter full.
            assert!(array_bytes(&wheel) <= 4 * 4 * wheel.len() + IDLE_FLOOR * 4);
        }
    }
    wheel.validate();
    assert!(
        array_bytes(&wheel) <= IDLE_FLOOR * 4,
        "{}",
        array_bytes(&wheel)
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "volume: 100,000 timers, so that arrays grow and shrink"
)]
fn advance_past_a_burst_frees_its_arrays() {
    let mut wheel = TimerWheel::new();
    let timers = 100_000u32;
    // Spread over 10 minutes, so they cascade through three levels of arrays.
    for id in 0..timers {
        wheel.schedule(id, u64::from(id) * 6_000_017 + 1);
    }
    let (mut now, mut expired) = (0, Vec::new());
    while !wheel.is_empty() {
        now += SECOND / 10;
        wheel.advance(now, &mut expired);
        // Empty arrays keep at most as much room as there are timers left (or the floor).
        assert!(wheel.idle <= wheel.len().max(IDLE_FLOOR));
    }
    wheel.validate();
    assert_eq!(expired.len(), timers as usize);
    assert!(
        array_bytes(&wheel) <= IDLE_FLOOR * 4,
        "{}",
        array_bytes(&wheel)
    );
}

#[test]
#[cfg_attr(miri, ignore = "volume: 92,000 timers, so that arrays grow and shrink")]
fn advance_past_burst_after_arrays_kept_frees_idle_room() {
    let mut wheel = TimerWheel::new();
    // A big far-away bucket keeps the wheel's count (and so the idle budget) high while 63
    // one-second buckets of 512 ids each expire and keep their arrays for reuse.
    let far = 1u64 << 40;
    let big = 60_000u32;
    for id in 0..big {
        wheel.schedule(id, far);
    }
    let mut id = big;
    for second in 1..64u64 {
        for _ in 0..512 {
            wheel.schedule(id, (second << 30) + 1);
            id += 1;
        }
    }
    let mut expired = Vec::new();
    wheel.advance(64 << 30, &mut expired);
    assert_eq!(expired.len(), 63 * 512);
    assert!(wheel.idle <= wheel.len().max(IDLE_FLOOR));
    // The far bucket expires too: the burst is over, so its room must not stay behind.
    wheel.advance(far << 1, &mut expired);
    wheel.validate();
    assert!(wheel.is_empty());
    assert!(
        wheel.idle <= wheel.len().max(IDLE_FLOOR),
        "{} ids of idle room with {} timers",
        wheel.idle,
        wheel.len()
    );
    assert!(
        array_bytes(&wheel) <= IDLE_FLOOR * 4,
        "{}",
        array_bytes(&wheel)
    );
}

#[test]
fn next_expiration_bounds_earliest_deadline_from_below() {
    let mut wheel = TimerWheel::new();
    assert_eq!(wheel.next_expiration(), None);
    let deadline = 5 * 60 * SECOND + 1;
    wheel.schedule(1, deadline);
    let mut now = 0;
    // Following the bound like the background scheduler does reaches the deadline in a few
    // wake-ups (one per level), never after it.
    for _ in 0..LEVELS + 1 {
        let next = wheel.next_expiration().expect("scheduled");
        assert!(next <= deadline && next > now);
        now = next;
        if !advance(&mut wheel, now).is_empty() {
            break;
        }
    }
    assert_eq!(now, deadline);
    assert!(wheel.is_empty());
}

#[test]
#[cfg_attr(miri, ignore = "volume: 100,000 timers in one bucket")]
fn advance_small_steps_over_crowded_second_does_linear_work() {
    let mut wheel = TimerWheel::new();
    let timers = 100_000u32;
    let base = 7 * SECOND + 1_000;
    // All in one coarse bucket, 20 ns apart: they span the 2 ms that is advanced over.
    for id in 0..timers {
        wheel.schedule(id, base + u64::from(id) * 20);
    }
    let mut expired = Vec::new();
    let mut count = 0;
    let mut now = base - 1_000;
    let steps = 2_001;
    for _ in 0..steps {
        now += 1_000;
        expired.clear();
        wheel.advance(now, &mut expired);
        count += expired.len();
        assert!(expired.iter().all(|&id| base + u64::from(id) * 20 <= now));
        if let Some(next) = wheel.next_expiration() {
            assert!(next > now, "a due timer was left behind at {now}");
        }
    }
    wheel.validate();
    assert_eq!(count, timers as usize);
    // Each timer is visited at most once per level; each step finds its bucket in O(1).
    let bound = (LEVELS as u64 + 1) * (u64::from(timers) + steps);
    assert!(
        wheel.work <= bound,
        "{} node visits, bound {bound}",
        wheel.work
    );
}

#[test]
fn advance_jump_of_years_does_work_bounded_by_timers() {
    let mut wheel = TimerWheel::new();
    let timers = 1_000u32;
    for id in 0..timers {
        // From seconds to decades away.
        wheel.schedule(id, 2 * (u64::from(id) + 1).pow(3) * SECOND);
    }
    let expired = advance(&mut wheel, 20 * 365 * DAY).len();
    assert!(expired > 0 && expired < timers as usize);
    advance(&mut wheel, u64::MAX);
    assert!(wheel.is_empty());
    let bound = (LEVELS as u64 + 2) * u64::from(timers) + 10;
    assert!(
        wheel.work <= bound,
        "{} node visits, bound {bound}",
        wheel.work
    );
}

/// When a deadline is scheduled, relative to the current time.
#[derive(Debug, Clone)]
enum When {
    Past(u64),
    Now,
    Near(u64),
    Far(u64),
    Max,
}

#[derive(Debug, Clone)]
enum Op {
    Schedule(u32, When),
    /// Schedules `count` ids from the first one (wrapping), `spread` nanoseconds apart from
    /// the deadline `When` names: many timers in one bucket.
    Burst(u32, u32, When, u64),
    Cancel(u32),
    Forward(u64),
    /// Forward, then `advance_bounded` with this limit until it is done.
    ForwardBounded(u64, usize),
    Backward(u64),
    ToMax,
}

fn op(ids: u32) -> impl Strategy<Value = Op> {
    let id = 0..ids;
    let when = || {
        prop_oneof![
            2 => (0..1u64 << 34).prop_map(When::Past),
            1 => Just(When::Now),
            6 => (1..1u64 << 32).prop_map(When::Near),
            3 => (1..1u64 << 56).prop_map(When::Far),
            1 => Just(When::Max),
        ]
    };
    prop_oneof![
        8 => (id.clone(), when()).prop_map(|(id, when)| Op::Schedule(id, when)),
        1 => (id.clone(), 1..ids, when(), 0..1u64 << 20)
            .prop_map(|(id, count, when, spread)| Op::Burst(id, count, when, spread)),
        2 => id.prop_map(Op::Cancel),
        3 => (0..1u64 << 12).prop_map(Op::Forward),
        3 => (0..1u64 << 31).prop_map(Op::Forward),
        2 => (0..1u64 << 52).prop_map(Op::Forward),
        3 => (0..1u64 << 31, 1..8usize).prop_map(|(by, limit)| Op::ForwardBounded(by, limit)),
        1 => (0..1u64 << 34).prop_map(Op::Backward),
        1 => Just(Op::ToMax),
    ]
}

fn check_against(wheel: &TimerWheel, model: &BTreeMap<u32, u64>, ids: u32) {
    wheel.validate();
    assert_eq!(wheel.len(), model.len());
    for id in 0..ids {
        assert_eq!(wheel.deadline(id), model.get(&id).copied(), "id {id}");
    }
    assert!(wheel.iter().eq(model.iter().map(|(&id, &d)| (id, d))));
    let earliest = model.values().min().copied();
    match (wheel.next_expiration(), earliest) {
        (None, None) => {}
        (Some(next), Some(earliest)) => assert!(next <= earliest, "{next} > {earliest}"),
        (next, earliest) => panic!("next_expiration {next:?}, earliest {earliest:?}"),
    }
}

/// Applies `ops` to a wheel and to a `BTreeMap` of deadlines, comparing every expiry and the
/// whole state after each op.
fn run_against_model(ops: Vec<Op>, ids: u32) {
    let mut wheel = TimerWheel::new();
    let mut model = BTreeMap::new();
    let mut now = 0u64;
    // Most runs start away from zero, so backward steps and past deadlines have room.
    if ops.len() % 3 != 0 {
        now = 3 * DAY + 12_345;
        assert!(advance(&mut wheel, now).is_empty());
    }
    let deadline = |when: &When, now: u64| match *when {
        When::Past(by) => now.saturating_sub(by),
        When::Now => now,
        When::Near(by) | When::Far(by) => now.saturating_add(by),
        When::Max => u64::MAX,
    };
    for op in ops {
        let advance_to = match op {
            Op::Schedule(id, when) => {
                wheel.schedule(id, deadline(&when, now));
                model.insert(id, deadline(&when, now));
                None
            }
            Op::Burst(first, count, when, spread) => {
                for k in 0..count {
                    let id = (first + k) % ids;
                    let at = deadline(&when, now).saturating_add(u64::from(k) * spread);
                    wheel.schedule(id, at);
                    model.insert(id, at);
                }
                None
            }
            Op::Cancel(id) => {
                assert_eq!(wheel.cancel(id), model.remove(&id).is_some());
                None
            }
            Op::Forward(by) => Some(now.saturating_add(by)),
            Op::ForwardBounded(by, limit) => {
                now = now.saturating_add(by);
                let due: Vec<u32> = model
                    .iter()
                    .filter(|&(_, &d)| d <= now)
                    .map(|(&id, _)| id)
                    .collect();
                let mut all = Vec::new();
                loop {
                    let mut batch = Vec::new();
                    let done = wheel.advance_bounded(now, &mut batch, limit);
                    wheel.validate();
                    assert!(
                        batch.len() <= limit,
                        "{} ids over a limit of {limit}",
                        batch.len()
                    );
                    for &id in &batch {
                        assert!(model.remove(&id).is_some_and(|d| d <= now), "id {id}");
                    }
                    // What is left behind still reads as scheduled at its deadline.
                    check_against(&wheel, &model, ids);
                    all.extend(batch);
                    if done {
                        break;
                    }
                }
                all.sort_unstable();
                assert_eq!(all, due, "bounded advance to {now}");
                None
            }
            Op::Backward(by) => Some(now.saturating_sub(by)),
            Op::ToMax => Some(u64::MAX),
        };
        if let Some(to) = advance_to {
            now = to;
            let expired = advance(&mut wheel, now);
            let due: Vec<u32> = model
                .iter()
                .filter(|&(_, &d)| d <= now)
                .map(|(&id, _)| id)
                .collect();
            model.retain(|_, &mut d| d > now);
            assert_eq!(expired, due, "advance to {now}");
        }
        check_against(&wheel, &model, ids);
    }
}

proptest! {
    #![proptest_config(crate::proptest_config(512))]

    #[test]
    fn random_ops_match_deadline_model(
        ops in prop::collection::vec(op(24), 1..if cfg!(miri) { 30 } else { 120 })
    ) {
        run_against_model(ops, 24);
    }
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]

    /// Buckets of hundreds of ids: several `BATCH`es per bucket, arrays growing, shrinking
    /// and kept or freed.
    #[test]
    fn random_ops_on_many_ids_match_deadline_model(
        ops in prop::collection::vec(op(600), 1..if cfg!(miri) { 15 } else { 60 })
    ) {
        run_against_model(ops, 600);
    }
}
