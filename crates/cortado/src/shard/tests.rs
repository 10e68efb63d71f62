use std::time::Duration;

use super::*;

#[test]
fn clear_full_shard_resets_first_fill_flag() {
    let config = ShardConfig::plain(Some(4), EvictionPolicy::default());
    let mut shard = Shard::new(&config, hashbrown::DefaultHashBuilder::default());
    for key in 0..4 {
        shard.insert(shard.hash(&key), key, key, 0, None);
    }
    assert!(shard.full);
    shard.clear();
    assert!(
        !shard.full,
        "an emptied shard must fold its deferred reads when next full"
    );
}

/// Lives a day from its write, an hour from each read.
struct HourAfterRead;

impl crate::expiry::Expiry<u64, u64> for HourAfterRead {
    fn expire_after_create(&self, _: &u64, _: &u64) -> Option<Duration> {
        Some(Duration::from_secs(86_400))
    }

    fn expire_after_read(&self, _: &u64, _: &u64, _: Option<Duration>) -> Option<Duration> {
        Some(Duration::from_secs(3_600))
    }
}

#[test]
fn get_shared_repeated_shortening_reads_list_slot_once() {
    let mut config = ShardConfig::plain(Some(4), EvictionPolicy::default());
    config.rules.custom = Some(Arc::new(HourAfterRead));
    let mut shard = Shard::new(&config, hashbrown::DefaultHashBuilder::default());
    shard.insert(shard.hash(&1), 1, 1, 0, None);
    // Shared reads, as the concurrent cache's readers do, with no write in between: each
    // brings the deadline before the wheel's day.
    for now in 1..=1_000 {
        assert!(shard.get_shared(shard.hash(&1), &1, now).is_some());
    }
    let listed = shard.moved.as_ref().unwrap().slots.lock().unwrap().len();
    assert_eq!(listed, 1, "one slot listed once, not once per read");
    assert_eq!(shard.next_expiration(), Some(1 + 3_600_000_000_000));
    // The last read's deadline is the one that counts.
    let hour = 3_600_000_000_000;
    shard.advance(hour);
    shard.validate();
    assert!(shard.peek(shard.hash(&1), &1, hour).is_some());
    shard.advance(1_000 + hour);
    assert_eq!(shard.len(), 0);
}

#[test]
fn insert_over_expired_entry_not_yet_advanced_counts_eviction_weight() {
    let mut config = ShardConfig::plain(Some(100), EvictionPolicy::default());
    config.weigher = Some(Arc::new(|_: &u64, v: &u64| *v as u32));
    config.rules.ttl = Some(10);
    config.record_stats = true;
    let mut shard = Shard::new(&config, hashbrown::DefaultHashBuilder::default());
    shard.insert(shard.hash(&1), 1, 7, 0, None);
    // Due at 10, but the wheel was not advanced: the write finds it expired.
    shard.insert(shard.hash(&1), 1, 3, 10, None);
    let stats = shard.stats();
    assert_eq!((stats.evictions_expired, stats.eviction_weight), (1, 7));
    assert_eq!(shard.weighted_size(), 3);
    shard.validate();
}

#[test]
fn insert_without_lifetime_over_expired_entry_not_yet_advanced_keeps_new_value() {
    // No rule gives lifetimes: only the first write's explicit one put a timer in the wheel.
    let config = ShardConfig::plain(Some(100), EvictionPolicy::default());
    let mut shard: Shard<u64, u64, _> =
        Shard::new(&config, hashbrown::DefaultHashBuilder::default());
    let h = shard.hash(&1);
    shard.insert(h, 1, 7, 0, Some(Duration::from_nanos(10)));
    // Due at 10, not yet advanced: the write replaces the expired value with one that has no
    // lifetime, and the old timer must not expire it.
    shard.insert(h, 1, 3, 20, None);
    shard.advance(21);
    assert_eq!(shard.get(h, &1, 22), Some(&3));
    assert_eq!(shard.expires_after(h, &1, 22), Some(None));
    shard.validate();
}

#[test]
fn slot_u64_entry_tag_in_niche_24_bytes() {
    // Key, value, the deferred-read count and the tag share three words.
    assert_eq!(std::mem::size_of::<Option<Entry<u64, u64>>>(), 24);
}
