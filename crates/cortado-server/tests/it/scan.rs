//! `SCAN`'s guarantee, in process: a whole scan returns every key present from its start to
//! its end, whatever is written meanwhile (new keys that grow the shards, deletions,
//! overwrites, other databases), and `RANDOMKEY` picks keys about evenly across shards.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use crate::common::{Frame, RawClient, TestServer};

/// Walks a whole `SCAN` with `options`, calling `between` after every step; returns how many
/// times each key was returned.
fn scan_counts(
    c: &mut RawClient,
    options: &[&str],
    mut between: impl FnMut(),
) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    let mut cursor = "0".to_string();
    for step in 0.. {
        assert!(step < 1_000_000, "SCAN did not end");
        let mut args = vec!["SCAN", cursor.as_str()];
        args.extend_from_slice(options);
        let Frame::Array(reply) = c.call(&args) else {
            panic!("a SCAN reply")
        };
        let Frame::Array(keys) = &reply[1] else {
            panic!("keys")
        };
        for key in keys {
            *seen.entry(key.text()).or_insert(0) += 1;
        }
        cursor = reply[0].text();
        if cursor == "0" {
            break;
        }
        between();
    }
    seen
}

#[test]
fn scan_returns_every_staying_key_once_across_concurrent_writes_and_growth() {
    let server = TestServer::start();
    let mut setup = server.raw();
    let mut pipeline = Vec::new();
    for i in 0..3000 {
        pipeline.extend(crate::common::resp::encode_command(&[
            b"SET",
            format!("stay:{i}").as_bytes(),
            b"v",
        ]));
        pipeline.extend(crate::common::resp::encode_command(&[
            b"SET",
            format!("churn:{i}").as_bytes(),
            b"v",
        ]));
    }
    setup.send(&pipeline);
    for _ in 0..6000 {
        setup.read().expect("a reply");
    }
    let stop = Arc::new(AtomicBool::new(false));
    // The writer's rounds so far: each scan step waits until the writer has done as many, so
    // the writes interleave with the walk however the machine schedules the two threads.
    let rounds = Arc::new(AtomicU64::new(0));
    let writer = {
        let stop = stop.clone();
        let rounds = rounds.clone();
        let mut c = server.raw();
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Growth, deletions and re-insertions, overwrites of the staying keys, and
                // writes to another database.
                c.call(&["SET", &format!("new:{n}"), "v"]);
                c.call(&["DEL", &format!("churn:{}", n % 3000)]);
                c.call(&["SET", &format!("churn:{}", (n * 7) % 3000), "back"]);
                c.call(&["SET", &format!("stay:{}", n % 3000), &n.to_string()]);
                if n % 16 == 0 {
                    c.call(&["SELECT", "1"]);
                    c.call(&["SET", &format!("other:{n}"), "v"]);
                    c.call(&["SELECT", "0"]);
                }
                n += 1;
                rounds.store(n, Ordering::Relaxed);
            }
            n
        })
    };
    let mut c = server.raw();
    let mut steps = 0;
    let seen = scan_counts(&mut c, &["COUNT", "20"], || {
        steps += 1;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while rounds.load(Ordering::Relaxed) < steps && std::time::Instant::now() < deadline {
            thread::yield_now();
        }
    });
    let seen_matching = scan_counts(&mut c, &["MATCH", "stay:*", "TYPE", "string"], || {});
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 100, "the writer ran alongside ({writes} rounds)");
    assert!(steps > 100, "many steps ({steps})");
    for i in 0..3000 {
        let key = format!("stay:{i}");
        assert_eq!(seen.get(&key), Some(&1), "{key}");
        assert_eq!(seen_matching.get(&key), Some(&1), "{key} with MATCH");
    }
    assert!(
        seen.keys().all(|k| !k.starts_with("other:")),
        "another database's key"
    );
    assert!(seen_matching.keys().all(|k| k.starts_with("stay:")));
}

#[test]
fn scan_steps_return_at_most_count_keys() {
    let server = TestServer::start();
    let mut c = server.raw();
    for i in 0..500 {
        c.call(&["SET", &format!("k{i}"), "v"]);
    }
    for count in ["1", "7", "50"] {
        let mut cursor = "0".to_string();
        let mut total = 0;
        loop {
            let Frame::Array(reply) = c.call(&["SCAN", &cursor, "COUNT", count]) else {
                panic!("SCAN")
            };
            let Frame::Array(keys) = &reply[1] else {
                panic!("keys")
            };
            assert!(keys.len() <= count.parse().unwrap(), "{} keys", keys.len());
            total += keys.len();
            cursor = reply[0].text();
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(total, 500, "COUNT {count}");
    }
}

#[test]
fn randomkey_picks_keys_about_evenly_across_shards() {
    let server = TestServer::start();
    let mut c = server.raw();
    let keys = 64;
    for i in 0..keys {
        c.call(&["SET", &format!("k{i}"), "v"]);
    }
    let draws = 20_000;
    let mut counts: HashMap<String, u32> = HashMap::new();
    for _ in 0..draws {
        *counts.entry(c.call(&["RANDOMKEY"]).text()).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), keys, "every key drawn");
    // 312.5 expected each, a standard deviation of about 17.5.
    for (key, n) in &counts {
        assert!((220..=410).contains(n), "{key}: {n} of {draws}");
    }
}
