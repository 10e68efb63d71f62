use super::build::default_shards;
use super::*;

/// Entries due 1 ms apart: a pacer that woke for every deadline ran a round for nearly
/// every entry (177 rounds in 119 ms); paced, rounds are at least `PACE` (10 ms) apart,
/// however loaded the machine.
fn assert_deadlines_a_millisecond_apart_rounds_paced(scheduler: Scheduler) {
    use std::sync::mpsc;
    let (heard, hear) = mpsc::channel();
    let heard = std::sync::Mutex::new(heard);
    let cache: Cache<u32, u32> = Cache::builder()
        .max_capacity(1_000)
        .scheduler(scheduler)
        .eviction_listener(move |k: &u32, _: &u32, _| {
            heard.lock().unwrap().send(*k).unwrap();
        })
        .build()
        .unwrap();
    let pacer = cache.inner.pacer.as_ref().expect("a pacer");
    let started = std::time::Instant::now();
    let rounds_before = pacer.rounds();
    for key in 0..100 {
        cache.insert_with_ttl(key, key, Duration::from_millis(20 + u64::from(key)));
    }
    for _ in 0..100 {
        hear.recv_timeout(Duration::from_secs(30))
            .expect("expired by the pacer");
    }
    let elapsed = started.elapsed();
    let rounds = pacer.rounds() - rounds_before;
    let most = (elapsed.as_nanos() / crate::scheduler::PACE.as_nanos()) as usize + 1;
    assert!(
        rounds <= most,
        "{rounds} rounds in {elapsed:?}, at most {most} at one per {:?}",
        crate::scheduler::PACE
    );
}

#[test]
fn scheduler_thread_deadlines_a_millisecond_apart_rounds_at_least_pace_apart() {
    assert_deadlines_a_millisecond_apart_rounds_paced(Scheduler::Thread);
}

#[cfg(feature = "tokio")]
#[test]
fn scheduler_tokio_deadlines_a_millisecond_apart_rounds_at_least_pace_apart() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    assert_deadlines_a_millisecond_apart_rounds_paced(Scheduler::Tokio);
}

#[test]
fn share_splits_capacity_exactly_and_evenly() {
    for shards in [1usize, 2, 8, 64] {
        for capacity in [0u64, 1, 63, 64, 65, 1_000, 1 << 40] {
            let shares: Vec<u64> = (0..shards).map(|i| share(capacity, shards, i)).collect();
            assert_eq!(shares.iter().sum::<u64>(), capacity);
            let (min, max) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(max - min <= 1, "{capacity} over {shards}: {shares:?}");
        }
    }
}

#[test]
fn default_shards_power_of_two_with_large_enough_shares() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let most = (cpus * SHARDS_PER_CPU).next_power_of_two();
    assert_eq!(default_shards(None, false), most);
    for capacity in [0u64, 255, 256, 511, 512, 4_096, 1 << 20, 1 << 40] {
        let n = default_shards(Some(capacity), false);
        assert!(n.is_power_of_two() && n <= most);
        assert!(n == 1 || capacity / n as u64 >= MIN_SHARD_CAPACITY);
        // No fewer shards than the capacity allows.
        assert!(n == most || capacity / (2 * n as u64) < MIN_SHARD_CAPACITY);
    }
}

/// A cache of 4,000 entries in 4 shards with this policy.
fn four_shards(policy: crate::policy::EvictionPolicy) -> Cache<u64, u64> {
    Cache::<u64, u64>::builder()
        .max_capacity(4_000)
        .shards(4)
        .eviction_policy(policy)
        .build()
        .unwrap()
}

fn shards_of(
    cache: &Cache<u64, u64>,
) -> Vec<crate::shard_lock::WriteGuard<'_, Shard<u64, u64, DefaultHashBuilder>>> {
    cache
        .inner
        .slots
        .iter()
        .map(|slot| write(&slot.core))
        .collect()
}

/// Keys requested twice, 150 requests apart: a workload the adaptive policy meets by
/// leaving its start mode for a larger window.
fn short_reuse(cache: &Cache<u64, u64>, n: u64) {
    for t in 0..n {
        for key in std::iter::once(t).chain((t >= 150).then(|| t - 150)) {
            if cache.get(&key).is_none() {
                cache.insert(key, key);
            }
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "long stream: the leader's climber decides over 200,000 requests"
)]
fn maintain_leader_mode_change_adopted_by_every_follower() {
    let cache = four_shards(crate::policy::EvictionPolicy::tiny_lfu());
    let start = shards_of(&cache)[0].policy_mode();
    short_reuse(&cache, 200_000);
    cache.run_pending_tasks();
    let mut shards = shards_of(&cache);
    let (leader, window) = (shards[0].policy_mode(), shards[0].window_maximum());
    assert_ne!(leader, start, "the leader never left its start mode");
    for (i, shard) in shards.iter_mut().enumerate().skip(1) {
        assert_eq!(shard.policy_mode(), leader, "shard {i}");
        assert_eq!(shard.window_maximum(), window, "shard {i}");
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "volume: 750 adaptive inserts fill the leader shard before its reads are buffered"
)]
fn maintain_buffered_reads_drained_by_next_write_to_shard() {
    let adaptive = four_shards(crate::policy::EvictionPolicy::tiny_lfu());
    let lru = four_shards(crate::policy::EvictionPolicy::lru());
    // Shard 0 leads the adaptive cache; its 1,000-entry miniatures sample every key, so
    // each of its reads is buffered, as every read of an LRU shard is.
    for (cache, shard) in [(&adaptive, 0), (&lru, 1)] {
        let inner = &cache.inner;
        let of_shard = |key: &u64| inner.shard_of(hash_key(&inner.hasher, key)) == shard;
        for key in (0..3_000).filter(of_shard) {
            cache.insert(key, key);
        }
        // Fewer reads than make a reader drain (every 32nd).
        for key in (0..3_000).filter(of_shard).take(10) {
            assert_eq!(cache.get(&key), Some(key));
        }
        let reads = &inner.slots[shard].reads;
        assert!(
            !reads.is_drained(),
            "shard {shard}: reads were not buffered"
        );
        let key = (10_000..).find(of_shard).unwrap();
        cache.insert(key, key);
        assert!(
            reads.is_drained(),
            "shard {shard}: the write left reads buffered"
        );
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "long stream: the leader's miniatures start at half full"
)]
fn buffers_reads_only_where_policy_replays_reads() {
    let tiny_lfu = four_shards(crate::policy::EvictionPolicy::tiny_lfu());
    let lru = four_shards(crate::policy::EvictionPolicy::lru());
    for cache in [&tiny_lfu, &lru] {
        for key in 0..3_000 {
            cache.insert(key, key);
        }
    }
    // Shard 0 leads: its miniatures sample reads, which must reach it in order; the
    // followers defer every read, so their buffers stay empty and are never drained.
    let buffers: Vec<bool> = shards_of(&tiny_lfu)
        .iter()
        .map(|s| s.buffers_reads())
        .collect();
    assert_eq!(buffers, [true, false, false, false]);
    assert!(shards_of(&lru).iter().all(|s| s.buffers_reads()));
}

#[test]
fn default_shards_weighted_fewer_for_larger_shares() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let weighted = (cpus * WEIGHTED_SHARDS_PER_CPU).next_power_of_two();
    assert_eq!(default_shards(Some(1 << 40), true), weighted);
    assert!(weighted < default_shards(Some(1 << 40), false));
    // Small capacities are bounded by the share, weighted or not.
    assert_eq!(default_shards(Some(1_024), true), 4.min(weighted));
}

/// With a weigher the capacity is a weight (a cache of 1 MiB or 64 GiB counted in bytes),
/// whose eighth in keys would hold memory far past the bound (and past the `MAX_ENTRIES`
/// slots a counting shard can name): the absent keys' LRU keeps an unbounded shard's 1,024.
#[test]
fn negatives_weighted_capacity_counts_at_most_unbounded_default() {
    for max in [1u64 << 20, 64u64 << 30, u64::MAX] {
        let cache: Cache<u64, u64> = Cache::builder()
            .max_capacity(max)
            .weigher(|_, _| 1)
            .shards(1)
            .negative_ttl(Duration::from_secs(60))
            .build()
            .unwrap();
        let negatives = cache.inner.slots[0].negatives.as_ref().unwrap();
        let bound = lock(negatives).max_capacity();
        assert_eq!(bound, NEGATIVES_UNBOUNDED, "{max}: {bound} absent keys");
    }
}
