use super::*;
use crate::random::SmallRng;
use proptest::prelude::*;
use std::collections::HashMap;

/// `count` draws from a Zipf(1) distribution over keys `0..keys`, from a fixed seed.
fn zipf_stream(keys: usize, count: usize, seed: u64) -> Vec<u64> {
    let mut cumulative = Vec::with_capacity(keys);
    let mut sum = 0.0;
    for rank in 1..=keys {
        sum += 1.0 / rank as f64;
        cumulative.push(sum);
    }
    let mut rng = SmallRng::new(seed);
    (0..count)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * sum;
            cumulative.partition_point(|&c| c < u) as u64
        })
        .collect()
}

/// Adds `ops` to a sketch and to an exact model; checks the estimate bounds for every key.
fn check_never_under<C: Counter>(
    width: usize,
    depth: usize,
    seed: u64,
    conservative: bool,
    ops: &[(u16, u64)],
) -> Result<(), TestCaseError> {
    let dims = Dimensions::new(width, depth).expect("valid test dimensions");
    let mut sketch = CountMin::<C>::with_seed(dims, seed).with_conservative_update(conservative);
    let mut truth: HashMap<u16, u64> = HashMap::new();
    for &(key, n) in ops {
        let returned = sketch.add(&key, n);
        prop_assert_eq!(returned, sketch.estimate(&key));
        *truth.entry(key).or_default() += n;
    }
    let total: u64 = ops.iter().map(|&(_, n)| n).sum();
    prop_assert_eq!(sketch.total(), total);
    let cap = C::MAX.to_u64();
    for (key, count) in truth {
        let estimate = sketch.estimate(&key);
        prop_assert!(
            estimate >= count.min(cap),
            "key {key}: {estimate} < {count}"
        );
        prop_assert!(estimate <= total.min(cap));
    }
    Ok(())
}

fn ops() -> impl Strategy<Value = Vec<(u16, u64)>> {
    prop::collection::vec((0u16..64, 0u64..400), 0..200)
}

proptest! {
    #![proptest_config(crate::proptest_config(256))]

    #[test]
    fn estimate_random_streams_never_below_true_count(
        width in 1usize..32,
        depth in 1usize..5,
        seed: u64,
        conservative: bool,
        ops in ops(),
    ) {
        check_never_under::<u8>(width, depth, seed, conservative, &ops)?;
        check_never_under::<u16>(width, depth, seed, conservative, &ops)?;
        check_never_under::<u32>(width, depth, seed, conservative, &ops)?;
        check_never_under::<u64>(width, depth, seed, conservative, &ops)?;
    }

    #[test]
    fn merge_random_streams_never_below_combined_count(
        width in 1usize..32,
        depth in 1usize..5,
        seed: u64,
        conservative: (bool, bool),
        left in ops(),
        right in ops(),
    ) {
        let dims = Dimensions::new(width, depth).expect("valid test dimensions");
        let sketch = |conservative| {
            CountMin::<u16>::with_seed(dims, seed).with_conservative_update(conservative)
        };
        let (mut merged, mut other, mut plain) =
            (sketch(conservative.0), sketch(conservative.1), sketch(false));
        let mut truth: HashMap<u16, u64> = HashMap::new();
        for &(key, n) in &left {
            merged.add(&key, n);
            *truth.entry(key).or_default() += n;
        }
        for &(key, n) in &right {
            other.add(&key, n);
            *truth.entry(key).or_default() += n;
        }
        for &(key, n) in left.iter().chain(&right) {
            plain.add(&key, n);
        }
        merged.merge(&other).expect("same dimensions and seed");
        prop_assert_eq!(merged.total(), plain.total());
        for key in 0u16..64 {
            let count = truth.get(&key).copied().unwrap_or(0).min(u64::from(u16::MAX));
            let estimate = merged.estimate(&key);
            prop_assert!(estimate >= count, "key {}: {} < {}", key, estimate, count);
            prop_assert!(estimate <= plain.estimate(&key));
        }
    }

    #[test]
    fn conservative_update_never_above_plain_estimate(
        width in 1usize..32,
        depth in 1usize..5,
        seed: u64,
        ops in ops(),
    ) {
        let dims = Dimensions::new(width, depth).expect("valid test dimensions");
        let mut plain = CountMin::<u32>::with_seed(dims, seed);
        let mut conservative = CountMin::<u32>::with_seed(dims, seed).with_conservative_update(true);
        for &(key, n) in &ops {
            plain.add(&key, n);
            conservative.add(&key, n);
        }
        for key in 0u16..64 {
            prop_assert!(conservative.estimate(&key) <= plain.estimate(&key));
        }
    }

    #[test]
    fn decay_any_factor_floors_every_estimate(
        seed: u64,
        factor in 0.0f64..=1.0,
        ops in ops(),
    ) {
        let dims = Dimensions::new(16, 3).expect("valid test dimensions");
        let mut sketch = CountMin::<u16>::with_seed(dims, seed);
        for &(key, n) in &ops {
            sketch.add(&key, n);
        }
        let before: Vec<u64> = (0u16..64).map(|k| sketch.estimate(&k)).collect();
        let total = sketch.total();
        sketch.decay(factor).expect("factor in [0, 1]");
        for (key, old) in (0u16..64).zip(before) {
            prop_assert_eq!(sketch.estimate(&key), (old as f64 * factor).floor() as u64);
        }
        prop_assert_eq!(sketch.total(), (total as f64 * factor).floor() as u64);
    }

    #[test]
    fn decay_half_halves_every_estimate_rounding_down(seed: u64, ops in ops()) {
        let dims = Dimensions::new(16, 3).expect("valid test dimensions");
        let mut sketch = CountMin::<u64>::with_seed(dims, seed);
        for &(key, n) in &ops {
            sketch.add(&key, n);
        }
        // A count far above 2^53, where an f64 product would not be exact.
        sketch.add(&u16::MAX, (1 << 60) + 3);
        let before: Vec<u64> = (0u16..64).chain([u16::MAX]).map(|k| sketch.estimate(&k)).collect();
        let total = sketch.total();
        sketch.decay(0.5).expect("0.5 is a valid factor");
        for (key, old) in (0u16..64).chain([u16::MAX]).zip(before) {
            prop_assert_eq!(sketch.estimate(&key), old / 2);
        }
        prop_assert_eq!(sketch.total(), total / 2);
    }
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 100,000 adds")]
fn estimate_zipf_stream_within_epsilon_n_for_all_but_delta_of_keys() {
    let dims = Dimensions::from_error(0.001, 0.01).expect("valid parameters");
    let stream = zipf_stream(10_000, 100_000, 42);
    let mut truth = vec![0u64; 10_000];
    for conservative in [false, true] {
        let mut sketch = CountMin::<u32>::with_seed(dims, 7).with_conservative_update(conservative);
        truth.fill(0);
        for &key in &stream {
            sketch.increment(&key);
            truth[key as usize] += 1;
        }
        let bound = dims.epsilon() * sketch.total() as f64;
        let over = (0..10_000u64)
            .filter(|&k| sketch.estimate(&k) as f64 > truth[k as usize] as f64 + bound)
            .count();
        assert!(
            (over as f64) / 10_000.0 <= dims.delta(),
            "conservative {conservative}: {over} of 10,000 keys over epsilon*N = {bound}"
        );
    }
}

#[test]
fn merge_halves_of_a_stream_equals_sketch_of_whole_stream() {
    let dims = Dimensions::from_error(0.01, 0.01).expect("valid parameters");
    let n = if cfg!(miri) { 2_000 } else { 20_000 };
    let stream = zipf_stream(1_000, n, 5);
    let (first, second) = stream.split_at(n * 2 / 5);
    let fill = |keys: &[u64]| {
        let mut sketch = CountMin::<u32>::with_seed(dims, 3);
        for key in keys {
            sketch.increment(key);
        }
        sketch
    };
    let mut merged = fill(first);
    merged
        .merge(&fill(second))
        .expect("same dimensions and seed");
    let whole = fill(&stream);
    assert_eq!(merged.counters, whole.counters);
    assert_eq!(merged.total(), n as u64);
}

#[test]
fn merge_incompatible_sketch_is_error_and_changes_nothing() {
    let dims = Dimensions::new(64, 3).expect("valid dimensions");
    let mut sketch = CountMin::<u32>::with_seed(dims, 1);
    sketch.add("k", 5);
    let mut other_seed = CountMin::<u32>::with_seed(dims, 2);
    other_seed.add("k", 5);
    let mut other_width = CountMin::<u32>::with_seed(Dimensions::new(65, 3).unwrap(), 1);
    other_width.add("k", 5);
    let mut other_depth = CountMin::<u32>::with_seed(Dimensions::new(64, 4).unwrap(), 1);
    other_depth.add("k", 5);
    for other in [&other_seed, &other_width, &other_depth] {
        assert!(!sketch.is_compatible(other));
        assert_eq!(sketch.merge(other), Err(CountMinError::Incompatible));
        assert_eq!((sketch.estimate("k"), sketch.total()), (5, 5));
    }
    assert!(CountMinError::Incompatible.to_string().contains("merged"));
}

#[test]
fn merge_u8_counters_saturate_at_255() {
    let dims = Dimensions::new(64, 4).expect("valid dimensions");
    let mut a = CountMin::<u8>::with_seed(dims, 1);
    let mut b = CountMin::<u8>::with_seed(dims, 1);
    a.add("hot", 200);
    b.add("hot", 100);
    a.merge(&b).expect("compatible");
    assert_eq!(a.estimate("hot"), 255);
    assert_eq!(a.total(), 300);
}

#[test]
fn add_u8_counter_saturates_at_255() {
    let dims = Dimensions::new(64, 4).expect("valid dimensions");
    let mut sketch = CountMin::<u8>::with_seed(dims, 1);
    assert_eq!(sketch.add("hot", 200), 200);
    assert_eq!(sketch.add("hot", 100), 255);
    assert_eq!(sketch.increment("hot"), 255);
    assert_eq!(sketch.add("hot", u64::MAX), 255);
    assert_eq!(sketch.estimate("hot"), 255);
    // The total is a u64 and saturates only there.
    assert_eq!(sketch.total(), u64::MAX);
}

#[test]
fn add_u8_conservative_saturates_at_255() {
    let dims = Dimensions::new(64, 4).expect("valid dimensions");
    let mut sketch = CountMin::<u8>::with_seed(dims, 1).with_conservative_update(true);
    sketch.add("hot", 250);
    assert_eq!(sketch.add("hot", 10), 255);
    assert_eq!(sketch.estimate("hot"), 255);
}

#[test]
fn decay_zero_clears_everything() {
    let dims = Dimensions::new(32, 3).expect("valid dimensions");
    let mut sketch = CountMin::<u32>::with_seed(dims, 5);
    for k in 0..100u32 {
        sketch.add(&k, u64::from(k) + 1);
    }
    sketch.decay(0.0).expect("0 is a valid factor");
    assert_eq!(sketch.total(), 0);
    assert!((0..100u32).all(|k| sketch.estimate(&k) == 0));
}

#[test]
fn decay_one_leaves_counts_alone() {
    let dims = Dimensions::new(32, 3).expect("valid dimensions");
    let mut sketch = CountMin::<u64>::with_seed(dims, 5);
    sketch.add("k", u64::MAX - 1);
    sketch.decay(1.0).expect("1 is a valid factor");
    assert_eq!(sketch.estimate("k"), u64::MAX - 1);
}

#[test]
fn decay_factor_outside_unit_interval_is_error_and_changes_nothing() {
    let dims = Dimensions::new(32, 3).expect("valid dimensions");
    let mut sketch = CountMin::<u32>::with_seed(dims, 5);
    sketch.add("k", 10);
    for factor in [-0.1, 1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        match sketch.decay(factor) {
            Err(CountMinError::InvalidDecayFactor(_)) => {}
            other => panic!("factor {factor}: {other:?}"),
        }
    }
    assert_eq!(sketch.estimate("k"), 10);
    assert_eq!(sketch.total(), 10);
}

#[test]
fn clear_forgets_counts_and_total() {
    let mut sketch = CountMin::<u16>::new(Dimensions::new(8, 2).expect("valid dimensions"));
    sketch.add("a", 5);
    sketch.clear();
    assert_eq!(sketch.estimate("a"), 0);
    assert_eq!(sketch.total(), 0);
}

#[test]
fn from_error_known_parameters_give_expected_shape_and_memory() {
    // e / 0.001 = 2718.28 -> 2719; ln(100) = 4.605 -> 5.
    let dims = Dimensions::from_error(0.001, 0.01).expect("valid parameters");
    assert_eq!((dims.width(), dims.depth()), (2719, 5));
    assert_eq!(CountMin::<u8>::new(dims).memory_bytes(), 2719 * 5);
    assert_eq!(CountMin::<u32>::new(dims).memory_bytes(), 2719 * 5 * 4);
    assert!(dims.epsilon() <= 0.001 && dims.delta() <= 0.01);
    // e / 0.1 = 27.18 -> 28; ln(2) = 0.69 -> 1.
    let dims = Dimensions::from_error(0.1, 0.5).expect("valid parameters");
    assert_eq!((dims.width(), dims.depth()), (28, 1));
}

#[test]
fn from_stream_maps_range_over_length_to_epsilon() {
    // One million items, within 100 counts, 99% of the time: epsilon = 1e-4, delta = 0.01;
    // e / 1e-4 = 27182.8 -> 27183, ln(100) = 4.6 -> 5.
    let dims = Dimensions::from_stream(1_000_000, 100, 0.01).expect("valid parameters");
    assert_eq!((dims.width(), dims.depth()), (27_183, 5));
    assert_eq!(
        dims,
        Dimensions::from_error(1e-4, 0.01).expect("valid parameters")
    );
    // 1,000 items within 10, 0.1% failures: e / 0.01 = 271.8 -> 272, ln(1000) = 6.9 -> 7.
    let dims = Dimensions::from_stream(1_000, 10, 0.001).expect("valid parameters");
    assert_eq!((dims.width(), dims.depth()), (272, 7));
}

#[test]
fn from_error_bad_parameters_are_typed_errors() {
    use CountMinError::*;
    for epsilon in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
        assert!(matches!(
            Dimensions::from_error(epsilon, 0.01),
            Err(InvalidEpsilon(_))
        ));
    }
    for delta in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
        assert!(matches!(
            Dimensions::from_error(0.01, delta),
            Err(InvalidDelta(_))
        ));
    }
    assert_eq!(Dimensions::from_error(1e-300, 0.01), Err(TooLarge));
    assert_eq!(
        Dimensions::from_error(0.01, 1e-300),
        Ok(Dimensions::new(272, 691).unwrap())
    );
}

#[test]
fn from_stream_bad_parameters_are_typed_errors() {
    use CountMinError::*;
    assert_eq!(Dimensions::from_stream(0, 1, 0.01), Err(ZeroStreamLength));
    assert_eq!(Dimensions::from_stream(100, 0, 0.01), Err(ZeroErrorRange));
    assert_eq!(
        Dimensions::from_stream(100, 100, 0.01),
        Err(ErrorRangeTooWide {
            error_range: 100,
            stream_length: 100
        })
    );
    assert_eq!(
        Dimensions::from_stream(100, 10, 1.5),
        Err(InvalidDelta(1.5))
    );
}

#[test]
fn from_stream_range_just_below_huge_length_gives_widest_epsilon() {
    // Valid (the range is below the length) although both round to 2^64 as f64: epsilon is
    // just below 1, so e / epsilon rounds up to 3 columns.
    for (stream_length, error_range) in [(u64::MAX, u64::MAX - 1), ((1 << 53) + 1, 1 << 53)] {
        assert_eq!(
            Dimensions::from_stream(stream_length, error_range, 0.01).map(|d| d.width()),
            Ok(3),
            "{error_range} of {stream_length}"
        );
    }
}

#[test]
fn dimensions_new_zero_or_huge_is_error() {
    use CountMinError::*;
    assert_eq!(Dimensions::new(0, 3), Err(ZeroWidth));
    assert_eq!(Dimensions::new(3, 0), Err(ZeroDepth));
    assert_eq!(Dimensions::new(usize::MAX, 2), Err(TooLarge));
    assert_eq!(Dimensions::new(1 << 31, 2).map(|d| d.depth()), Ok(2));
}

#[test]
fn error_display_names_the_parameter() {
    assert!(CountMinError::InvalidEpsilon(2.0)
        .to_string()
        .contains("epsilon"));
    assert!(CountMinError::ZeroK.to_string().contains("k"));
}

#[test]
fn estimate_str_and_string_are_the_same_key() {
    let mut sketch = CountMin::<u32>::with_seed(Dimensions::new(512, 4).unwrap(), 3);
    sketch.add("latte", 4);
    sketch.add(&String::from("latte"), 2);
    assert_eq!(sketch.estimate(&String::from("latte")), 6);
}

#[test]
fn with_seed_same_seed_same_counts_other_seed_other_rows() {
    let dims = Dimensions::new(1 << 12, 4).unwrap();
    let a = CountMin::<u32>::with_seed(dims, 1);
    let b = CountMin::<u32>::with_seed(dims, 1);
    let c = CountMin::<u32>::with_seed(dims, 2);
    let same = (0..1000u64)
        .filter(|k| a.index(a.hash(k), 0) == c.index(c.hash(k), 0))
        .count();
    // 4,096 columns: independent seeds agree by chance about 1/4096 of the time.
    assert!(same < 10, "same = {same}");
    assert!((0..1000u64).all(|k| a.index(a.hash(&k), 2) == b.index(b.hash(&k), 2)));
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 2,000,000 pairs")]
fn index_rows_of_one_key_are_uncorrelated() {
    // If rows reused one column (or moved in lockstep), keys colliding in row 0 would collide
    // in row 1 too; independent rows make that about 1/width as likely.
    let dims = Dimensions::new(64, 2).unwrap();
    let sketch = CountMin::<u32>::with_seed(dims, 11);
    let columns: Vec<(usize, usize)> = (0..2000u64)
        .map(|k| {
            let h = sketch.hash(&k);
            (sketch.index(h, 0), sketch.index(h, 1) - 64)
        })
        .collect();
    let (mut both, mut first) = (0usize, 0usize);
    for i in 0..columns.len() {
        for j in i + 1..columns.len() {
            if columns[i].0 == columns[j].0 {
                first += 1;
                both += usize::from(columns[i].1 == columns[j].1);
            }
        }
    }
    // About 31,000 pairs share a row-0 column; about 490 should share row 1 as well.
    let rate = both as f64 / first as f64;
    assert!(
        rate < 2.0 / 64.0,
        "{both} of {first} row-0 collisions repeat in row 1"
    );
}

fn tracker(k: usize, seed: u64) -> TopK<u64> {
    let dims = Dimensions::from_error(0.001, 0.01).unwrap();
    TopK::new(k, CountMin::with_seed(dims, seed)).unwrap()
}

#[test]
fn top_skewed_stream_reports_heavy_hitters_in_order() {
    // Five heavy keys with 5,000 .. 1,000 occurrences among 20,000 adds over 5,000 light keys
    // (a tenth of each under Miri).
    let scale = if cfg!(miri) { 10 } else { 1 };
    let heavy = [5_000u64, 4_000, 3_000, 2_000, 1_000].map(|count| count / scale);
    let mut stream: Vec<u64> = Vec::new();
    for (key, count) in (1u64..).zip(heavy) {
        stream.extend(std::iter::repeat_n(key, count as usize));
    }
    let mut rng = SmallRng::new(3);
    stream.extend((0..20_000 / scale).map(|_| 100 + rng.next_u64() % 5_000));
    // Fisher-Yates, so heavy and light keys interleave.
    for i in (1..stream.len()).rev() {
        stream.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut top = tracker(5, 9);
    for &key in &stream {
        top.increment(key);
    }
    top.validate();
    let reported = top.top();
    let keys: Vec<u64> = reported.iter().map(|&(&k, _)| k).collect();
    assert_eq!(keys, [1, 2, 3, 4, 5]);
    let slack = top.sketch().error_bound();
    for ((_, estimate), truth) in reported.iter().zip(heavy) {
        assert!(*estimate >= truth && *estimate <= truth + slack);
    }
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 1,000 seeds")]
fn top_key_above_kth_by_epsilon_n_missed_only_when_two_lighter_keys_over_counted() {
    // 3 x 1 counters (epsilon = e / 3, delta = 1 / e), k = 2. Key 0 occurs 100 times, then
    // keys 1..=9 once each: N = 109, the 2nd largest count is 1 and 100 > 1 + epsilon * N =
    // 99.8. Key 0 is missed far more often than delta (a light key shares its only counter
    // with probability 1/3, and two of nine do 86% of the time), but only that way.
    let dims = Dimensions::new(3, 1).unwrap();
    let slack = dims.epsilon() * 109.0;
    let (seeds, mut missed) = (1_000u64, 0u64);
    for seed in 0..seeds {
        let mut top = TopK::new(2, CountMin::<u32>::with_seed(dims, seed)).unwrap();
        top.add(0u64, 100);
        for key in 1..=9u64 {
            top.add(key, 1);
        }
        if !top.contains(&0) {
            missed += 1;
            let over_counted = top
                .top()
                .iter()
                .filter(|&&(_, estimate)| estimate as f64 > 1.0 + slack)
                .count();
            assert!(over_counted >= 2, "seed {seed}: {:?}", top.top());
        }
    }
    let rate = missed as f64 / seeds as f64;
    assert!(rate > 0.8 && rate < 0.92, "missed in {rate} of seeds");
}

#[test]
fn top_k_above_distinct_keys_reports_all_keys() {
    let mut top = tracker(10, 1);
    for (key, n) in [(7u64, 3u64), (8, 1), (9, 2)] {
        top.add(key, n);
    }
    assert_eq!(top.len(), 3);
    assert_eq!(top.top(), [(&7, 3), (&9, 2), (&8, 1)]);
    assert!(top.contains(&8) && !top.contains(&10));
}

#[test]
fn add_zero_of_unseen_key_leaves_it_untracked() {
    let mut top = tracker(10, 1);
    assert_eq!(top.add(5u64, 0), 0);
    assert_eq!(top.add_by_ref(&6u64, 0), 0);
    assert_eq!(top.len(), 0);
    top.add(7, 2);
    assert_eq!(top.add(7, 0), 2);
    assert_eq!(top.top(), [(&7, 2)]);
}

#[test]
fn add_zero_of_untracked_key_with_inflated_estimate_leaves_it_untracked() {
    // One counter: every key's estimate is the total, so an untracked key's is that too.
    let dims = Dimensions::new(1, 1).expect("valid test dimensions");
    let tracker = |k| -> TopK<u64> { TopK::new(k, CountMin::with_seed(dims, 1)).unwrap() };
    // Room in the heap: an add of 0 does not append.
    let mut top = tracker(10);
    top.add(7u64, 3);
    assert_eq!(top.add(8, 0), 3);
    assert_eq!(top.add_by_ref(&9u64, 0), 3);
    assert_eq!(top.top(), [(&7, 3)]);
    // A full heap whose smallest estimate is stale: an add of 0 does not replace it either.
    let mut top = tracker(2);
    top.add(7u64, 3);
    top.add(8, 1);
    assert_eq!(top.add_expelling(9, 0), (4, None));
    assert!(top.contains(&7) && top.contains(&8) && !top.contains(&9));
}

thread_local! {
    static CLONES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A key that counts its clones on its thread (`ToOwned` of a `Clone` type clones).
#[derive(PartialEq, Eq, Hash)]
struct CountedKey(u64);

impl Clone for CountedKey {
    fn clone(&self) -> Self {
        CLONES.with(|n| n.set(n.get() + 1));
        Self(self.0)
    }
}

#[test]
fn add_by_ref_untracked_key_makes_no_owned_key() {
    let sketch = CountMin::<u32>::with_seed(Dimensions::new(1_024, 4).unwrap(), 5);
    let mut top = TopK::new(2, sketch).unwrap();
    let clones = || CLONES.with(std::cell::Cell::get);
    top.add_by_ref(&CountedKey(1), 10);
    top.add_by_ref(&CountedKey(2), 5);
    assert_eq!(clones(), 2, "each key joining the heap is made once");
    for key in 3..100 {
        top.add_by_ref(&CountedKey(key), 1);
    }
    top.add_by_ref(&CountedKey(1), 1);
    assert_eq!(clones(), 2, "light and already tracked keys are not made");
    top.add_by_ref(&CountedKey(3), 9);
    assert_eq!(
        clones(),
        3,
        "a key that displaces the least frequent is made"
    );
    let keys: Vec<u64> = top.top().iter().map(|(k, _)| k.0).collect();
    assert_eq!(keys, [1, 3]);
    top.validate();
    let mut words: TopK<String> =
        TopK::new(1, CountMin::new(Dimensions::new(64, 2).unwrap())).unwrap();
    words.add_by_ref("cache", 2);
    assert_eq!(words.top(), [(&"cache".to_string(), 2)]);
}

/// Keys that hash alike when their first field is equal: distinct keys sharing a sketch hash.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Colliding(u64, u64);

impl std::hash::Hash for Colliding {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

#[test]
fn add_and_add_by_ref_keep_keys_sharing_a_hash_apart() {
    for by_ref in [false, true] {
        let sketch = CountMin::<u32>::with_seed(Dimensions::new(64, 2).unwrap(), 9);
        let mut top = TopK::new(3, sketch).unwrap();
        let mut add = |key: Colliding, n| {
            if by_ref {
                top.add_by_ref(&key, n)
            } else {
                top.add(key, n)
            }
        };
        // The two keys share every counter, so each estimate is their sum.
        assert_eq!(add(Colliding(1, 1), 5), 5);
        assert_eq!(add(Colliding(1, 2), 1), 6);
        assert_eq!(add(Colliding(1, 1), 1), 7);
        let mut tracked: Vec<(u64, u64)> = top.top().iter().map(|(k, _)| (k.0, k.1)).collect();
        tracked.sort_unstable();
        assert_eq!(tracked, [(1, 1), (1, 2)], "by_ref {by_ref}");
        let estimate =
            |key: &Colliding| top.heap.iter().find(|t| t.key == *key).map(|t| t.estimate);
        assert_eq!(estimate(&Colliding(1, 1)), Some(7));
        assert_eq!(estimate(&Colliding(1, 2)), Some(6));
        top.validate();
    }
}

/// A tracker of `k` keys over a 272 x 5 sketch with seed 4, fed `stream`.
fn fed(k: usize, stream: &[(u64, u64)]) -> TopK<u64> {
    let dims = Dimensions::from_error(0.01, 0.01).unwrap();
    let mut top = TopK::new(k, CountMin::with_seed(dims, 4)).unwrap();
    for &(key, n) in stream {
        top.add(key, n);
    }
    top
}

#[test]
fn merge_halves_of_a_stream_reports_heavy_hitters_of_whole() {
    // Heavy keys 1..=5 with 500 .. 100 occurrences, light keys 100.. once each, interleaved
    // and split in two uneven halves.
    let mut rng = SmallRng::new(8);
    let mut stream: Vec<(u64, u64)> = (1..=5u64)
        .flat_map(|key| std::iter::repeat_n((key, 1), 600 - 100 * key as usize))
        .chain((100..2_100).map(|key| (key, 1)))
        .collect();
    for i in (1..stream.len()).rev() {
        stream.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let (left, right) = stream.split_at(1_000);
    let mut merged = fed(5, left);
    merged.merge(&fed(5, right)).unwrap();
    merged.validate();
    let whole = fed(5, &stream);
    let keys: Vec<u64> = merged.top().iter().map(|&(&k, _)| k).collect();
    assert_eq!(keys, [1, 2, 3, 4, 5]);
    for (key, estimate) in merged.top() {
        assert_eq!(estimate, whole.estimate(key), "key {key}");
    }
}

#[test]
fn merge_key_tracked_only_by_other_replaces_lighter_key() {
    let mut top = fed(2, &[(1, 10), (2, 3)]);
    top.merge(&fed(2, &[(3, 8), (1, 2)])).unwrap();
    top.validate();
    assert_eq!(top.top(), [(&1, 12), (&3, 8)]);
    assert!(!top.contains(&2));
    assert_eq!(top.sketch().total(), 23);
}

#[test]
fn merge_into_larger_k_keeps_own_k() {
    let mut top = fed(3, &[(1, 1)]);
    top.merge(&fed(1, &[(2, 5)])).unwrap();
    top.validate();
    assert_eq!((top.k(), top.len()), (3, 2));
    let mut small = fed(1, &[(1, 1)]);
    small.merge(&fed(3, &[(2, 5), (3, 4), (4, 3)])).unwrap();
    small.validate();
    assert_eq!(small.top(), [(&2, 5)]);
}

#[test]
fn merge_top_incompatible_sketch_is_error_and_changes_nothing() {
    let mut top = fed(2, &[(1, 10)]);
    let dims = Dimensions::from_error(0.01, 0.01).unwrap();
    let mut other = TopK::new(2, CountMin::with_seed(dims, 5)).unwrap();
    other.add(2, 20);
    assert_eq!(top.merge(&other), Err(CountMinError::Incompatible));
    assert_eq!(top.top(), [(&1, 10)]);
    assert_eq!(top.sketch().total(), 10);
}

#[test]
fn add_expelling_returns_key_pushed_out_and_none_otherwise() {
    let mut top = tracker(2, 3);
    assert_eq!(top.add_expelling(1, 5), (5, None), "room left");
    assert_eq!(top.add_expelling(2, 2), (2, None), "room left");
    assert_eq!(top.add_expelling(3, 2), (2, None), "a tie does not get in");
    assert_eq!(top.add_expelling(3, 1), (3, Some(2)), "beats the smallest");
    assert_eq!(top.add_expelling(3, 1), (4, None), "already tracked");
    assert_eq!(top.add_expelling(4, 1), (1, None), "too light");
    assert_eq!(top.top(), [(&1, 5), (&3, 4)]);
    top.validate();
}

#[test]
fn new_k_zero_is_error() {
    let sketch = CountMin::<u32>::new(Dimensions::new(8, 2).unwrap());
    assert!(matches!(
        TopK::<u64>::new(0, sketch),
        Err(CountMinError::ZeroK)
    ));
}

#[test]
fn clear_forgets_tracked_keys() {
    let mut top = tracker(3, 1);
    top.add(1, 10);
    top.clear();
    assert!(top.is_empty() && top.top().is_empty());
    assert_eq!(top.estimate(&1u64), 0);
}

proptest! {
    #![proptest_config(crate::proptest_config(256))]

    #[test]
    fn merge_random_streams_keep_every_tracked_key_above_threshold(
        k in 1usize..6,
        other_k in 1usize..6,
        width in 1usize..24,
        seed: u64,
        left in prop::collection::vec((0u64..30, 1u64..20), 0..150),
        right in prop::collection::vec((0u64..30, 1u64..20), 0..150),
    ) {
        let dims = Dimensions::new(width, 2).unwrap();
        let sketch = CountMin::<u32>::with_seed(dims, seed);
        let mut top = TopK::new(k, sketch.clone()).unwrap();
        let mut other = TopK::new(other_k, sketch).unwrap();
        let mut truth: HashMap<u64, u64> = HashMap::new();
        for &(key, n) in &left {
            top.add(key, n);
            *truth.entry(key).or_default() += n;
        }
        for &(key, n) in &right {
            other.add(key, n);
            *truth.entry(key).or_default() += n;
        }
        let smallest = |t: &TopK<u64>| if t.len() < t.k() { 0 } else { t.heap[0].estimate };
        let missed_bound = smallest(&top) + smallest(&other);
        let was_tracked: Vec<u64> =
            top.heap.iter().chain(&other.heap).map(|t| t.key).collect();
        top.merge(&other).unwrap();
        top.validate();
        let reported = top.top();
        prop_assert!(reported.windows(2).all(|w| w[0].1 >= w[1].1));
        for &(key, estimate) in &reported {
            prop_assert!(estimate >= truth[key]);
            prop_assert_eq!(estimate, top.estimate(key));
        }
        let threshold = if reported.len() < k { 0 } else { reported[k - 1].1 };
        for (key, &count) in &truth {
            if count > threshold && !top.contains(key) {
                prop_assert!(!was_tracked.contains(key),
                    "tracked key {} with count {} above {} dropped", key, count, threshold);
                prop_assert!(count <= missed_bound,
                    "untracked key {} with count {} above a + b = {}", key, count, missed_bound);
            }
        }
    }

    #[test]
    fn top_random_streams_report_every_key_above_threshold(
        k in 1usize..8,
        width in 1usize..24,
        seed: u64,
        conservative: bool,
        ops in prop::collection::vec((0u64..40, 1u64..20), 0..300),
    ) {
        let dims = Dimensions::new(width, 2).unwrap();
        let sketch = CountMin::<u16>::with_seed(dims, seed).with_conservative_update(conservative);
        let mut top = TopK::new(k, sketch.clone()).unwrap();
        // The same stream, alternately added by reference: it must track the same keys.
        let mut by_ref = TopK::new(k, sketch).unwrap();
        let mut truth: HashMap<u64, u64> = HashMap::new();
        for (i, &(key, n)) in ops.iter().enumerate() {
            let before: Vec<u64> = top.heap.iter().map(|t| t.key).collect();
            let (estimate, expelled) = top.add_expelling(key, n);
            let mut after: Vec<u64> = top.heap.iter().map(|t| t.key).collect();
            // Tracked before, plus the key, less what was expelled, is what is tracked now.
            let mut expected = before.clone();
            if !expected.contains(&key) && after.contains(&key) {
                expected.push(key);
            }
            if let Some(gone) = expelled {
                prop_assert!(before.contains(&gone) && gone != key && !after.contains(&gone));
                expected.retain(|&k| k != gone);
            } else {
                prop_assert!(after.len() > before.len() || after.iter().all(|k| before.contains(k)));
            }
            expected.sort_unstable();
            after.sort_unstable();
            prop_assert_eq!(after, expected);
            prop_assert_eq!(estimate, top.estimate(&key));
            if i % 2 == 0 {
                by_ref.add_by_ref(&key, n);
            } else {
                by_ref.add(key, n);
            }
            *truth.entry(key).or_default() += n;
            top.validate();
        }
        by_ref.validate();
        prop_assert_eq!(by_ref.heap.iter().map(|t| (t.key, t.estimate)).collect::<Vec<_>>(),
            top.heap.iter().map(|t| (t.key, t.estimate)).collect::<Vec<_>>());
        let reported = top.top();
        prop_assert!(reported.windows(2).all(|w| w[0].1 >= w[1].1));
        for &(key, estimate) in &reported {
            prop_assert!(estimate >= truth[key]);
        }
        if reported.len() < k {
            prop_assert_eq!(reported.len(), truth.len());
        } else {
            let threshold = reported.last().map_or(0, |&(_, e)| e);
            for (key, &count) in &truth {
                prop_assert!(count <= threshold || top.contains(key),
                    "key {} with count {} above threshold {} not reported", key, count, threshold);
            }
        }
    }
}
