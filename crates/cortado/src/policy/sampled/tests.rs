use super::*;

fn config(rule: Rule) -> Config {
    Config {
        rule,
        samples: DEFAULT_SAMPLES,
        log_factor: DEFAULT_LFU_LOG_FACTOR,
        decay: Decay::Auto,
    }
}

fn policy(rule: Rule, maximum: u64) -> Sampled {
    Sampled::new(maximum, config(rule), Some(42))
}

#[test]
fn pool_offer_keeps_best_sixteen_ascending() {
    let mut pool = Pool::default();
    // Scores 0..32 in a scrambled order; index = score.
    for k in 0..32u32 {
        let score = (k * 7) % 32;
        pool.offer(score, u64::from(score));
        pool.validate();
    }
    let kept: Vec<u32> = pool.best_first().collect();
    assert_eq!(kept, (16..32).rev().collect::<Vec<u32>>());
    assert_eq!(pool.pop_best(), Some(31));
    assert_eq!(pool.len(), 15);
}

#[test]
fn pool_full_rejects_sample_no_better_than_worst() {
    let mut pool = Pool::default();
    for i in 0..POOL_SIZE as u32 {
        pool.offer(i, 10 + u64::from(i));
    }
    pool.offer(100, 10); // ties the worst: not better
    pool.offer(101, 3);
    assert!(!pool.contains(100) && !pool.contains(101));
    pool.offer(102, 11); // beats the worst (10), which drops out
    assert!(pool.contains(102) && !pool.contains(0));
    assert_eq!(pool.len(), POOL_SIZE);
    pool.validate();
}

#[test]
fn pool_tie_ranks_below_existing_candidates() {
    let mut pool = Pool::default();
    pool.offer(1, 5);
    pool.offer(2, 5);
    assert_eq!(pool.best_first().collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn pool_offer_same_index_replaces_its_candidate() {
    let mut pool = Pool::default();
    pool.offer(7, 50);
    pool.offer(8, 10);
    pool.offer(7, 1);
    assert_eq!(pool.len(), 2);
    assert_eq!(pool.best_first().collect::<Vec<_>>(), vec![8, 7]);
}

#[test]
fn dense_set_remove_moves_last_member_into_the_gap() {
    let mut set = DenseSet::default();
    for i in [4, 9, 2, 7] {
        set.insert(i);
    }
    set.remove(9);
    assert_eq!(set.members(), &[4, 7, 2]);
    set.remove(2); // the last member: nothing moves
    assert_eq!(set.members(), &[4, 7]);
    assert!(!set.contains(9) && !set.contains(2) && set.contains(7));
    set.validate();
    set.insert(9);
    assert_eq!(set.members(), &[4, 7, 9]);
    set.validate();
}

#[test]
fn dense_set_sample_reaches_every_member() {
    let mut set = DenseSet::default();
    for i in 0..10 {
        set.insert(i);
    }
    let mut rng = SmallRng::new(1);
    let mut seen = [0u32; 10];
    for _ in 0..10_000 {
        seen[set.sample(&mut rng).unwrap() as usize] += 1;
    }
    // 1,000 expected per member; 800 is more than six standard deviations below.
    assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
}

#[test]
fn remove_pooled_entry_leaves_pool_and_reused_slot_is_no_candidate() {
    let mut p = policy(Rule::Lru, 100);
    for i in 0..40 {
        p.insert(i, 1);
    }
    for _ in 0..10 {
        p.populate();
    }
    let pooled: Vec<u32> = p.pool.best_first().collect();
    assert!(pooled.len() >= 10, "{pooled:?}");
    for &i in &pooled {
        p.remove(i);
        p.validate();
    }
    assert_eq!(p.pool.len(), 0);
    // Reusing the slots makes fresh entries; none of them inherits an old candidacy.
    for &i in &pooled {
        p.insert(i, 1);
        assert!(!p.pool.contains(i));
    }
    p.validate();
}

#[test]
fn evicted_entry_never_evicted_twice() {
    let mut p = policy(Rule::Lru, 10);
    let mut evicted = Vec::new();
    for i in 0..200 {
        p.insert(i, 1);
        p.evict(&mut evicted);
        p.validate();
    }
    let mut unique = evicted.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), evicted.len());
    assert_eq!(evicted.len(), 190);
}

#[test]
fn lfu_new_entry_counter_starts_at_init() {
    let mut p = policy(Rule::Lfu, 100);
    p.insert(3, 1);
    assert_eq!(p.counter(3), LFU_INIT);
}

#[test]
fn log_increment_certain_up_to_init() {
    let mut rng = SmallRng::new(9);
    for c in 0..=LFU_INIT {
        assert_eq!(log_increment(c, 10, &mut rng), c + 1);
    }
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 212,000 draws")]
fn log_increment_probability_matches_formula() {
    // At 15 the odds are 1 / ((15 - 5) * 10 + 1) = 1/101: 202,000 trials give 2,000
    // increments on average, with a standard deviation of about 44.
    let mut rng = SmallRng::new(11);
    let hits = (0..202_000)
        .filter(|_| log_increment(15, 10, &mut rng) == 16)
        .count();
    assert!((1_800..2_200).contains(&hits), "hits = {hits}");
    // At 6 with factor 1, one in two.
    let hits = (0..10_000)
        .filter(|_| log_increment(6, 1, &mut rng) == 7)
        .count();
    assert!((4_700..5_300).contains(&hits), "hits = {hits}");
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 200 runs of 1,000 reads")]
fn lfu_counter_grows_logarithmically() {
    // Reaching 5 + n takes sum_{b<n} (10b + 1) = 5n(n - 1) + n uses on average: 64 for 9,
    // 105 for 10, 924 for 19, 1,065 for 20. One run spreads over several values (each step
    // is geometric), so average 200 runs.
    let runs = 200;
    let (mut at_100, mut at_1000) = (0u32, 0u32);
    for seed in 0..runs {
        let mut p = Sampled::new(
            100,
            Config {
                decay: Decay::Never,
                ..config(Rule::Lfu)
            },
            Some(seed),
        );
        p.insert(0, 1);
        for _ in 0..100 {
            p.access(0);
        }
        at_100 += u32::from(p.counter(0));
        for _ in 100..1_000 {
            p.access(0);
        }
        at_1000 += u32::from(p.counter(0));
    }
    let (at_100, at_1000) = (
        f64::from(at_100) / runs as f64,
        f64::from(at_1000) / runs as f64,
    );
    assert!((9.0..11.0).contains(&at_100), "after 100 uses: {at_100}");
    assert!(
        (18.5..20.5).contains(&at_1000),
        "after 1,000 uses: {at_1000}"
    );
}

#[test]
fn log_increment_saturates_at_255() {
    let mut rng = SmallRng::new(3);
    // Factor 0 makes every increment certain.
    let mut c = 0;
    for _ in 0..300 {
        c = log_increment(c, 0, &mut rng);
    }
    assert_eq!(c, 255);
}

#[test]
fn lfu_decay_subtracts_elapsed_periods() {
    let mut p = Sampled::new(
        100,
        Config {
            decay: Decay::Every(10),
            ..config(Rule::Lfu)
        },
        Some(1),
    );
    p.insert(0, 1); // tick 1, period 0
    p.insert(1, 1); // tick 2
    for _ in 0..33 {
        p.access(1); // ticks 3..=35: period 3
    }
    assert_eq!(p.counter(0), LFU_INIT - 3);
    for _ in 0..30 {
        p.access(1); // tick 65: period 6
    }
    assert_eq!(p.counter(0), 0);
    // A use stores the decayed value, then increments it (certain below LFU_INIT).
    p.access(0);
    assert_eq!(p.counter(0), 1);
    p.validate();
}

#[test]
fn lfu_decay_never_keeps_counters() {
    let mut p = Sampled::new(
        100,
        Config {
            decay: Decay::Never,
            ..config(Rule::Lfu)
        },
        Some(1),
    );
    p.insert(0, 1);
    p.insert(1, 1);
    for _ in 0..10_000 {
        p.access(1);
    }
    assert_eq!(p.counter(0), LFU_INIT);
}

#[test]
fn lfu_auto_decay_period_follows_resident_count() {
    let mut p = policy(Rule::Lfu, 1_000);
    for i in 0..100 {
        p.insert(i, 1);
    }
    assert_eq!(p.counter(99), LFU_INIT);
    // 100 residents: periods of 1,000 ticks; 3,500 more cross three or four boundaries.
    for _ in 0..3_500 {
        p.access(0);
    }
    let lost = LFU_INIT - p.counter(99);
    assert!((3..=4).contains(&lost), "lost {lost}");
}

#[test]
fn lfu_evicts_rarely_used_entries_first() {
    let mut p = Sampled::new(
        100,
        Config {
            decay: Decay::Never,
            ..config(Rule::Lfu)
        },
        Some(8),
    );
    for i in 0..100 {
        p.insert(i, 1);
    }
    for _ in 0..20 {
        for i in 0..50 {
            p.access(i);
        }
    }
    let mut evicted = Vec::new();
    for i in 100..150 {
        p.insert(i, 1);
        p.evict(&mut evicted);
    }
    // Entries used 20 times sit at 7 or more, the others at 5 (new ones too).
    let hot = evicted.iter().filter(|&&i| i < 50).count();
    assert_eq!(hot, 0, "evicted {evicted:?}");
}

/// Capacity 1,000; the first half is used again after everything was inserted, then 200
/// inserts each evict one entry. Returns how many victims come from the untouched half.
fn untouched_victims(rule: Rule) -> usize {
    let mut p = policy(rule, 1_000);
    for i in 0..1_000 {
        p.insert(i, 1);
    }
    for i in 0..500 {
        p.access(i);
    }
    let mut evicted = Vec::new();
    for i in 1_000..1_200 {
        p.insert(i, 1);
        p.evict(&mut evicted);
    }
    assert_eq!(evicted.len(), 200);
    evicted
        .iter()
        .filter(|&&i| (500..1_000).contains(&i))
        .count()
}

#[test]
fn lru_evicts_untouched_half_far_more_often() {
    // A victim comes from the touched half only if a whole round of five samples missed the
    // untouched half (1 in 32) and the pool held nothing older: far below 10%.
    let untouched = untouched_victims(Rule::Lru);
    assert!(untouched >= 190, "{untouched} of 200");
}

#[test]
fn random_evicts_from_both_halves() {
    // The contrast to the test above: uniform victims fall in either half about equally.
    let untouched = untouched_victims(Rule::Random);
    assert!((70..=130).contains(&untouched), "{untouched} of 200");
}

#[test]
fn newest_entry_survives_its_own_insertion() {
    for rule in [Rule::Lru, Rule::Lfu, Rule::Random] {
        let mut p = policy(rule, 1);
        let mut evicted = Vec::new();
        for i in 0..50 {
            p.insert(i, 1);
            p.evict(&mut evicted);
        }
        assert_eq!(evicted, (0..49).collect::<Vec<u32>>(), "{rule:?}");
    }
}

#[test]
fn newest_entry_evicted_when_alone_and_too_heavy() {
    let mut p = policy(Rule::Lru, 5);
    let mut evicted = Vec::new();
    p.insert(0, 2);
    p.insert(1, 9);
    p.evict(&mut evicted);
    assert_eq!(evicted, vec![0, 1]);
    assert_eq!(p.weighted_size(), 0);
}

#[test]
fn evict_weighted_until_fits() {
    let mut p = policy(Rule::Lfu, 10);
    let mut evicted = Vec::new();
    for i in 0..5 {
        p.insert(i, 2);
    }
    p.insert(5, 7);
    p.evict(&mut evicted);
    // 17 units: four entries of 2 must go to fit 10 with the newcomer of 7.
    assert_eq!(evicted.len(), 4, "{evicted:?}");
    assert!(!evicted.contains(&5));
    assert_eq!(p.weighted_size(), 9);
    p.validate();
}

#[test]
fn set_time_feeds_idle_time() {
    // Many samples per round so that entry 1 is surely among them.
    let mut p = Sampled::new(
        2,
        Config {
            samples: MAX_SAMPLES,
            ..config(Rule::Lru)
        },
        Some(2),
    );
    p.set_time(100);
    p.insert(0, 1);
    p.set_time(500);
    p.insert(1, 1);
    p.set_time(600);
    p.access(0); // fed time does not tick: 0 was used at 600, 1 at 500
    p.insert(2, 1);
    let mut evicted = Vec::new();
    p.evict(&mut evicted);
    assert_eq!(evicted, vec![1]);
    assert_eq!(p.now, 600);
}

#[test]
fn coldest_lru_orders_by_last_use() {
    let mut p = policy(Rule::Lru, 10);
    for i in 0..5 {
        p.insert(i, 1);
    }
    p.access(2);
    p.access(0);
    assert_eq!(p.coldest(), vec![1, 3, 4, 2, 0]);
}

#[test]
fn coldest_puts_pool_candidates_first() {
    let mut p = policy(Rule::Lru, 100);
    for i in 0..50 {
        p.insert(i, 1);
    }
    p.populate();
    let pooled: Vec<u32> = p.pool.best_first().collect();
    let coldest = p.coldest();
    assert_eq!(coldest.len(), 50);
    assert_eq!(&coldest[..pooled.len()], &pooled[..]);
}

#[test]
fn node_takes_16_bytes() {
    // The module docs state the memory per entry.
    assert_eq!(std::mem::size_of::<Node>(), 16);
}

#[test]
fn clear_forgets_everything() {
    let mut p = policy(Rule::Lfu, 3);
    let mut evicted = Vec::new();
    for i in 0..6 {
        p.insert(i, 1);
        p.evict(&mut evicted);
    }
    p.clear();
    assert_eq!(p.weighted_size(), 0);
    assert!(p.validate().is_empty());
    p.insert(4, 1);
    assert_eq!(p.validate(), vec![4]);
}
