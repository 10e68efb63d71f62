//! `maxmemory`: the built binary (whose counting allocator makes `used_memory` real) kept under
//! its limit by every evicting policy, `noeviction`'s `-OOM`, policies switched at run time
//! without losing keys, hot keys kept over cold ones, and `used_memory` checked against the C
//! library's own count of the heap.

use std::time::{Duration, Instant};

use crate::common::binary::ServerProcess;
use crate::common::{Frame, RawClient, TestServer};

/// The value written by [`fill`]: 100 bytes, as `redis-benchmark -d 100` writes.
const VALUE: &[u8] = &[b'v'; 100];

/// Writes keys `key:{from..to}` with [`VALUE`], pipelined in batches of 1,000; returns the
/// error replies.
fn fill(client: &mut RawClient, from: usize, to: usize, ttl: Option<&str>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut at = from;
    while at < to {
        let end = (at + 1_000).min(to);
        for i in at..end {
            let key = format!("key:{i}");
            match ttl {
                Some(seconds) => {
                    client.send_command(&[b"SET", key.as_bytes(), VALUE, b"EX", seconds.as_bytes()])
                }
                None => client.send_command(&[b"SET", key.as_bytes(), VALUE]),
            }
        }
        for _ in at..end {
            match client.read().expect("a reply") {
                Frame::Simple(_) => {}
                Frame::Error(e) => errors.push(e),
                other => panic!("unexpected reply {other:?}"),
            }
        }
        at = end;
    }
    errors
}

/// An `INFO` field as a number.
fn info_field(client: &mut RawClient, section: &str, field: &str) -> u64 {
    let Frame::Bulk(text) = client.call(&["INFO", section]) else {
        panic!("INFO replies a bulk string")
    };
    let text = String::from_utf8(text).unwrap();
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{field} in INFO {section}"))
        .trim()
        .parse()
        .unwrap()
}

fn dbsize(client: &mut RawClient) -> u64 {
    match client.call(&["DBSIZE"]) {
        Frame::Int(n) => n as u64,
        other => panic!("DBSIZE replied {other:?}"),
    }
}

/// Waits up to a second for the cron's memory pass to bring `used_memory` under `limit`.
fn used_memory_settles_under(client: &mut RawClient, limit: u64) -> u64 {
    let started = Instant::now();
    loop {
        let used = info_field(client, "memory", "used_memory");
        if used <= limit || started.elapsed() > Duration::from_secs(1) {
            return used;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn maxmemory_every_evicting_policy_keeps_used_memory_under_limit() {
    let limit: u64 = 8 << 20;
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "allkeys-wtinylfu",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "volatile-wtinylfu",
    ] {
        let server = ServerProcess::start(&["--maxmemory", "8mb", "--maxmemory-policy", policy]);
        let mut client = server.raw();
        let errors = fill(&mut client, 0, 120_000, Some("100000"));
        assert!(errors.is_empty(), "{policy}: {errors:?}");
        let used = used_memory_settles_under(&mut client, limit);
        assert!(
            used <= limit,
            "{policy}: used_memory {used} > maxmemory {limit}"
        );
        // The cron may still be evicting: read the two figures between the same two readings
        // of the eviction count, so that none moved in between.
        let (held, evicted) = loop {
            let before = info_field(&mut client, "stats", "evicted_keys");
            let held = dbsize(&mut client);
            if info_field(&mut client, "stats", "evicted_keys") == before {
                break (held, before);
            }
        };
        assert!(held > 20_000, "{policy}: only {held} keys in 8 MB");
        assert_eq!(
            held + evicted,
            120_000,
            "{policy}: held {held} + evicted {evicted}"
        );
        assert_eq!(
            client.call(&["CONFIG", "GET", "maxmemory-policy"]),
            Frame::Array(vec![Frame::bulk("maxmemory-policy"), Frame::bulk(policy)])
        );
    }
}

#[test]
fn maxmemory_noeviction_over_limit_refuses_denyoom_allows_reads_and_deletes() {
    let server = ServerProcess::start(&["--maxmemory", "4mb"]);
    let mut client = server.raw();
    let errors = fill(&mut client, 0, 60_000, None);
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert!(!errors.is_empty(), "60,000 keys of 100 bytes fit in 4 MB?");
    assert!(errors.iter().all(|e| e == oom), "{:?}", &errors[..3]);
    assert_eq!(info_field(&mut client, "stats", "evicted_keys"), 0);
    assert_eq!(client.call(&["SET", "new", "v"]), Frame::Error(oom.into()));
    assert_eq!(
        client.call(&["APPEND", "key:1", "x"]),
        Frame::Error(oom.into())
    );
    assert_eq!(client.call(&["GET", "key:1"]), Frame::Bulk(VALUE.to_vec()));
    assert_eq!(client.call(&["EXPIRE", "key:1", "100"]), Frame::Int(1));
    assert_eq!(client.call(&["DEL", "key:1"]), Frame::Int(1));
    // Deleting enough brings the server under the limit, and writes work again.
    let Frame::Int(n) = client.call(&["DBSIZE"]) else {
        panic!("DBSIZE")
    };
    for i in 0..n {
        client.send_command(&[b"DEL", format!("key:{i}").as_bytes()]);
    }
    for _ in 0..n {
        client.read().expect("a reply");
    }
    assert_eq!(
        client.call(&["SET", "new", "v"]),
        Frame::Simple("OK".into())
    );
}

#[test]
fn maxmemory_config_set_policy_keeps_every_key_value_and_lifetime() {
    let server =
        ServerProcess::start(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut client = server.raw();
    assert!(fill(&mut client, 0, 5_000, None).is_empty());
    assert!(fill(&mut client, 5_000, 10_000, Some("1000")).is_empty());
    for policy in [
        "allkeys-wtinylfu",
        "allkeys-lfu",
        "noeviction",
        "allkeys-random",
    ] {
        assert_eq!(
            client.call(&["CONFIG", "SET", "maxmemory-policy", policy]),
            Frame::Simple("OK".into())
        );
        assert_eq!(dbsize(&mut client), 10_000, "{policy}");
        assert_eq!(client.call(&["GET", "key:1"]), Frame::Bulk(VALUE.to_vec()));
        assert_eq!(client.call(&["TTL", "key:1"]), Frame::Int(-1));
        let Frame::Int(ttl) = client.call(&["TTL", "key:9999"]) else {
            panic!("TTL")
        };
        assert!((990..=1000).contains(&ttl), "{policy}: ttl {ttl}");
    }
    assert_eq!(info_field(&mut client, "stats", "evicted_keys"), 0);
    // Lowering the limit evicts down to it.
    assert_eq!(
        client.call(&["CONFIG", "SET", "maxmemory", "2mb"]),
        Frame::Simple("OK".into())
    );
    let used = used_memory_settles_under(&mut client, 2 << 20);
    assert!(used <= 2 << 20, "used_memory {used}");
    assert!(dbsize(&mut client) < 10_000);
}

#[test]
fn maxmemory_lru_lfu_wtinylfu_keep_hot_keys_over_a_stream_of_cold_ones() {
    for policy in ["allkeys-lru", "allkeys-lfu", "allkeys-wtinylfu"] {
        let server = ServerProcess::start(&["--maxmemory", "6mb", "--maxmemory-policy", policy]);
        let mut client = server.raw();
        let hot: Vec<String> = (0..200).map(|i| format!("hot:{i}")).collect();
        for key in &hot {
            client.call(&["SET", key, "hot"]);
        }
        // Cold keys, each written once, several times what fits; the hot ones read between.
        for round in 0..40 {
            let from = 100_000 + round * 2_500;
            assert!(fill(&mut client, from, from + 2_500, None).is_empty());
            for key in &hot {
                client.send_command(&[b"GET", key.as_bytes()]);
            }
            for _ in &hot {
                client.read().expect("a reply");
            }
        }
        let kept = hot
            .iter()
            .filter(|key| client.call(&["EXISTS", key]) == Frame::Int(1))
            .count();
        assert!(info_field(&mut client, "stats", "evicted_keys") > 30_000);
        assert!(kept >= 190, "{policy} kept {kept} of 200 hot keys");
    }
}

#[test]
fn used_memory_agrees_with_heap_in_use_at_a_million_keys() {
    let server = ServerProcess::start(&[]);
    let mut client = server.raw();
    assert!(fill(&mut client, 0, 1_000_000, None).is_empty());
    let Frame::Bulk(stats) = client.call(&["MEMORY", "MALLOC-STATS"]) else {
        panic!("MEMORY MALLOC-STATS replies a bulk string")
    };
    let stats = String::from_utf8(stats).unwrap();
    let field = |name: &str| -> Option<f64> {
        let prefix = format!("{name}:");
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.trim().parse().unwrap())
    };
    let used = field("used_memory").unwrap();
    let Some(heap) = field("heap_in_use") else {
        return; // not glibc: the C library does not say
    };
    // The C library counts 8 bytes of header per block, which `used_memory` (usable sizes)
    // leaves out, as Redis's does: about a block per key here.
    let headers = 8.0 * 1_000_000.0;
    let gap = (heap - headers - used).abs() / heap;
    assert!(
        gap < 0.03,
        "used_memory {used} vs heap in use {heap} less headers: {:.1}% apart",
        gap * 100.0
    );
}

#[test]
fn object_freq_counts_uses_under_lfu_and_wtinylfu_errors_otherwise() {
    let server =
        ServerProcess::start(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lfu"]);
    let mut client = server.raw();
    client.call(&["SET", "hot", "v"]);
    client.call(&["SET", "cold", "v"]);
    assert_eq!(
        client.call(&["OBJECT", "FREQ", "cold"]),
        Frame::Int(5),
        "LFU_INIT"
    );
    for _ in 0..20 {
        client.call(&["GET", "hot"]);
    }
    let Frame::Int(hot) = client.call(&["OBJECT", "FREQ", "hot"]) else {
        panic!("OBJECT FREQ replies an integer")
    };
    assert!(hot > 5, "{hot}");
    assert_eq!(client.call(&["OBJECT", "FREQ", "missing"]), Frame::Null);
    client.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-wtinylfu"]);
    for _ in 0..3 {
        client.call(&["GET", "hot"]);
    }
    let Frame::Int(sketch) = client.call(&["OBJECT", "FREQ", "hot"]) else {
        panic!("OBJECT FREQ replies an integer")
    };
    assert!((1..=15).contains(&sketch), "{sketch}");
    client.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let Frame::Error(e) = client.call(&["OBJECT", "FREQ", "hot"]) else {
        panic!("an error under LRU")
    };
    assert!(
        e.starts_with("ERR An LFU maxmemory policy is not selected"),
        "{e}"
    );
}

#[test]
fn object_idletime_counts_seconds_since_last_use_untouched_by_inspection() {
    let server = TestServer::with_manual_clock(&[]);
    let mut client = server.raw();
    let idle = |client: &mut RawClient, key: &str| client.call(&["OBJECT", "IDLETIME", key]);
    client.call(&["SET", "read", "v"]);
    client.call(&["SET", "left", "v"]);
    server.advance(Duration::from_secs(10));
    client.call(&["GET", "read"]);
    server.advance(Duration::from_secs(5));
    assert_eq!(idle(&mut client, "read"), Frame::Int(5));
    assert_eq!(idle(&mut client, "left"), Frame::Int(15));
    // Looking at a key is not a use.
    for inspect in ["TYPE", "EXISTS", "TTL"] {
        client.call(&[inspect, "left"]);
    }
    client.call(&["OBJECT", "ENCODING", "left"]);
    assert_eq!(idle(&mut client, "left"), Frame::Int(15));
    client.call(&["TOUCH", "read"]);
    assert_eq!(idle(&mut client, "read"), Frame::Int(0));
    assert_eq!(idle(&mut client, "missing"), Frame::Null);
    client.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
    let Frame::Error(e) = idle(&mut client, "read") else {
        panic!("an error under LFU")
    };
    assert!(
        e.starts_with("ERR An LFU maxmemory policy is selected"),
        "{e}"
    );
    assert_eq!(idle(&mut client, "missing"), Frame::Null);
}

#[test]
fn maxmemory_volatile_policies_evict_only_keys_with_a_lifetime_then_refuse_writes() {
    for policy in ["volatile-lru", "volatile-wtinylfu", "volatile-random"] {
        let server = ServerProcess::start(&["--maxmemory", "6mb", "--maxmemory-policy", policy]);
        let mut client = server.raw();
        // 10,000 keys without a lifetime (about 2 MB), then ten times as many with one.
        assert!(fill(&mut client, 0, 10_000, None).is_empty());
        assert!(fill(&mut client, 10_000, 110_000, Some("100000")).is_empty());
        let used = used_memory_settles_under(&mut client, 6 << 20);
        assert!(used <= 6 << 20, "{policy}: used_memory {used}");
        let evicted = info_field(&mut client, "stats", "evicted_keys");
        assert!(evicted > 50_000, "{policy}: evicted {evicted}");
        for i in (0..10_000).step_by(97) {
            let key = format!("key:{i}");
            assert_eq!(
                client.call(&["EXISTS", &key]),
                Frame::Int(1),
                "{policy}: {key}"
            );
        }
        // Keys without a lifetime alone past the limit: nothing may go, so writes are refused.
        let errors = fill(&mut client, 200_000, 260_000, None);
        let oom = "OOM command not allowed when used memory > 'maxmemory'.";
        assert!(!errors.is_empty(), "{policy}: no OOM");
        assert!(
            errors.iter().all(|e| e == oom),
            "{policy}: {:?}",
            &errors[..1]
        );
        assert_eq!(client.call(&["GET", "key:0"]), Frame::Bulk(VALUE.to_vec()));
    }
}

/// How many of keys `key:{from..to}` exist (one `EXISTS` per thousand).
fn existing(client: &mut RawClient, from: usize, to: usize) -> i64 {
    let mut total = 0;
    for start in (from..to).step_by(1_000) {
        let keys: Vec<String> = (start..(start + 1_000).min(to))
            .map(|i| format!("key:{i}"))
            .collect();
        let mut args = vec!["EXISTS"];
        args.extend(keys.iter().map(String::as_str));
        let Frame::Int(n) = client.call(&args) else {
            panic!("EXISTS replies an integer")
        };
        total += n;
    }
    total
}

#[test]
fn maxmemory_volatile_ttl_evicts_nearest_deadline_first_not_oldest() {
    let server =
        ServerProcess::start(&["--maxmemory", "6mb", "--maxmemory-policy", "volatile-ttl"]);
    let mut client = server.raw();
    // Old keys with a far deadline, then many more with a near one: LRU would evict the old
    // ones first, volatile-ttl the near ones.
    assert!(fill(&mut client, 0, 10_000, Some("100000")).is_empty());
    assert!(fill(&mut client, 10_000, 110_000, Some("1000")).is_empty());
    let used = used_memory_settles_under(&mut client, 6 << 20);
    assert!(used <= 6 << 20, "used_memory {used}");
    assert!(info_field(&mut client, "stats", "evicted_keys") > 50_000);
    let far = existing(&mut client, 0, 10_000);
    assert!(far >= 9_000, "{far} of 10,000 far-deadline keys left");
}

#[test]
fn maxmemory_eviction_publishes_evicted_events() {
    let server = ServerProcess::start(&[
        "--maxmemory",
        "4mb",
        "--maxmemory-policy",
        "allkeys-lru",
        "--notify-keyspace-events",
        "Ee",
    ]);
    let mut subscriber = server.raw();
    subscriber.call(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    // The subscriber reads while the keys are written: unread, its messages would count
    // against maxmemory (as in Redis) and could leave the keys no room on a loaded machine.
    let reader = std::thread::spawn(move || {
        let mut keys = Vec::new();
        while keys.len() < 100 {
            let Some(Frame::Array(message)) = subscriber.read() else {
                panic!("a message")
            };
            assert_eq!(message[0], Frame::bulk("message"));
            assert_eq!(message[1], Frame::bulk("__keyevent@0__:evicted"));
            let Frame::Bulk(key) = &message[2] else {
                panic!("a key")
            };
            keys.push(key.clone());
        }
        keys
    });
    let mut client = server.raw();
    // About 6 MB of keys into 4: thousands of evictions.
    let errors = fill(&mut client, 0, 30_000, None);
    assert!(
        errors.is_empty(),
        "{} errors, the first {:?}; INFO memory {:?}",
        errors.len(),
        errors.first(),
        client.call(&["INFO", "memory"])
    );
    let evicted = info_field(&mut client, "stats", "evicted_keys");
    assert!(evicted >= 100, "{evicted} evicted");
    for key in reader.join().expect("the subscriber read 100 messages") {
        assert!(key.starts_with(b"key:"), "{key:?}");
    }
}

#[test]
fn maxmemory_hashes_and_sets_grown_in_place_are_evicted_to_fit() {
    // Each key is made small and grown one field or member at a time (about 40 KB a key,
    // 24 MB in all), in place: the keys' weights and the cron's reading of used_memory must
    // follow. (That the weight itself is taken again is the unit test
    // `hash_grown_in_place_is_weighed_again`.)
    let limit: u64 = 8 << 20;
    let server = ServerProcess::start(&["--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut client = server.raw();
    let value = "v".repeat(40);
    for key in 0..300 {
        let (hash, set) = (format!("hash:{key}"), format!("set:{key}"));
        let mut commands = Vec::new();
        for i in 0..500 {
            let (field, member) = (format!("field:{i}"), format!("member:{key}:{i}:{value}"));
            commands.push(vec!["HSET".to_string(), hash.clone(), field, value.clone()]);
            commands.push(vec!["SADD".to_string(), set.clone(), member]);
        }
        for command in &commands {
            let args: Vec<&[u8]> = command.iter().map(String::as_bytes).collect();
            client.send_command(&args);
        }
        for _ in &commands {
            let reply = client.read().expect("a reply");
            assert!(!matches!(reply, Frame::Error(_)), "{reply:?}");
        }
    }
    let used = used_memory_settles_under(&mut client, limit);
    assert!(used <= limit, "used_memory {used} > maxmemory {limit}");
    let evicted = info_field(&mut client, "stats", "evicted_keys");
    assert!(evicted > 300, "only {evicted} keys evicted");
    assert!(dbsize(&mut client) > 20, "keys are still held");
}
