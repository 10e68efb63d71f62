//! Hash field lifetimes (Redis 7.4's `HEXPIRE` family; `redis-server` here is 7.0, so these
//! are checked against Redis 7.4's documented replies rather than a running server): a field
//! is gone for every command once its millisecond is past, removed by the expiry cycle with
//! `hexpired` events, the last one deleting its key; `HSET` clears a lifetime; conditions,
//! errors, and lifetimes carried by `RENAME`/`COPY`.

use std::time::{Duration, Instant};

use crate::common::{Frame, RawClient, TestServer};

fn ints(frame: Frame) -> Vec<i64> {
    let Frame::Array(items) = frame else {
        panic!("an array: {frame:?}")
    };
    items.iter().map(Frame::int).collect()
}

fn error(frame: Frame) -> String {
    let Frame::Error(text) = frame else {
        panic!("an error: {frame:?}")
    };
    text
}

/// With the clock held still, a field lives through its expiry millisecond and is gone for
/// every reading command the millisecond after, without waiting for the expiry cycle.
#[test]
fn hash_field_past_its_millisecond_is_invisible_to_every_command() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["HSET", "h", "a", "1", "b", "2"]).int(), 2);
    assert_eq!(
        ints(c.call(&["HPEXPIRE", "h", "100", "FIELDS", "1", "a"])),
        [1]
    );
    assert_eq!(
        ints(c.call(&["HPTTL", "h", "FIELDS", "2", "a", "b"])),
        [100, -1]
    );
    assert_eq!(c.call(&["OBJECT", "ENCODING", "h"]).text(), "hashtable");
    server.advance(Duration::from_millis(100));
    assert_eq!(
        c.call(&["HGET", "h", "a"]).text(),
        "1",
        "alive through its millisecond"
    );
    assert_eq!(ints(c.call(&["HPTTL", "h", "FIELDS", "1", "a"])), [0]);
    server.advance(Duration::from_millis(1));
    assert_eq!(c.call(&["HGET", "h", "a"]), Frame::Null);
    assert_eq!(c.call(&["HEXISTS", "h", "a"]).int(), 0);
    assert_eq!(c.call(&["HLEN", "h"]).int(), 1);
    assert_eq!(
        c.call(&["HKEYS", "h"]),
        Frame::Array(vec![Frame::bulk("b")])
    );
    assert_eq!(
        c.call(&["HSCAN", "h", "0"]),
        Frame::Array(vec![
            Frame::bulk("0"),
            Frame::Array(vec![Frame::bulk("b"), Frame::bulk("2")])
        ])
    );
    for _ in 0..20 {
        assert_eq!(c.call(&["HRANDFIELD", "h"]).text(), "b");
    }
    assert_eq!(ints(c.call(&["HTTL", "h", "FIELDS", "1", "a"])), [-2]);
    assert_eq!(server.server.keyspace.sum(|s| s.expired_fields), 1);
    let stats = c.call(&["INFO", "stats"]).text();
    assert!(stats.contains("\r\nexpired_subkeys:1\r\n"), "{stats}");
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), Frame::Simple("OK".into()));
    let stats = c.call(&["INFO", "stats"]).text();
    assert!(stats.contains("\r\nexpired_subkeys:0\r\n"), "{stats}");
    // Its last lifetime gone, the hash is a plain table again (no deadline table).
    assert_eq!(c.call(&["HDEL", "h", "b"]).int(), 1);
    assert_eq!(c.call(&["EXISTS", "h"]).int(), 0);
}

/// A subscriber hears `hexpired` once per hash per cycle, and `del` when the last field went,
/// within tens of milliseconds of the deadline with no client reading the hash.
/// A field's expiry changes its hash as a write does: a transaction watching that hash fails,
/// one watching another hash goes through.
#[test]
fn hash_field_expiry_fails_exec_watching_its_hash_only() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    for key in ["h", "other"] {
        assert_eq!(c.call(&["HSET", key, "a", "1", "b", "2"]).int(), 2);
    }
    assert_eq!(
        ints(c.call(&["HPEXPIRE", "h", "100", "FIELDS", "1", "a"])),
        [1]
    );
    for (watched, aborted) in [("other", false), ("h", true)] {
        assert_eq!(c.call(&["WATCH", watched]), Frame::Simple("OK".into()));
        if aborted {
            server.advance(Duration::from_millis(101));
        }
        assert_eq!(c.call(&["MULTI"]), Frame::Simple("OK".into()));
        assert_eq!(
            c.call(&["HGET", watched, "b"]),
            Frame::Simple("QUEUED".into())
        );
        let reply = c.call(&["EXEC"]);
        if aborted {
            assert_eq!(reply, Frame::Null, "watching {watched}");
        } else {
            assert_eq!(
                reply,
                Frame::Array(vec![Frame::bulk("2")]),
                "watching {watched}"
            );
        }
    }
    assert_eq!(c.call(&["HLEN", "h"]).int(), 1);
}

#[test]
fn hash_fields_expire_actively_with_hexpired_and_del_events() {
    let server = TestServer::start();
    let mut c = server.raw();
    c.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = server.raw();
    sub.call(&["PSUBSCRIBE", "__keyspace@0__:h*"]);
    c.call(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    c.call(&["HSET", "h2", "x", "1"]);
    let start = Instant::now();
    assert_eq!(
        ints(c.call(&["HPEXPIRE", "h", "50", "FIELDS", "2", "a", "b"])),
        [1, 1]
    );
    assert_eq!(
        ints(c.call(&["HPEXPIRE", "h", "100", "FIELDS", "1", "c"])),
        [1]
    );
    assert_eq!(
        ints(c.call(&["HPEXPIRE", "h2", "50", "FIELDS", "1", "x"])),
        [1]
    );
    let mut heard = Vec::new();
    while heard.len() < 10 {
        let Some(Frame::Array(parts)) = sub.read() else {
            panic!("subscriber closed")
        };
        heard.push((parts[2].text(), parts[3].text(), start.elapsed()));
    }
    let of = |key: &str| -> Vec<(String, Duration)> {
        heard
            .iter()
            .filter(|(channel, _, _)| channel == &format!("__keyspace@0__:{key}"))
            .map(|(_, event, at)| (event.clone(), *at))
            .collect()
    };
    let events = |key: &str| -> Vec<String> { of(key).into_iter().map(|(e, _)| e).collect() };
    assert_eq!(
        events("h"),
        ["hset", "hexpire", "hexpire", "hexpired", "hexpired", "del"],
        "h's two fields at 50 ms in one event, its last at 100 ms, then its key"
    );
    assert_eq!(events("h2"), ["hset", "hexpire", "hexpired", "del"]);
    let h = of("h");
    for (at, deadline) in [(h[3].1, 50), (h[4].1, 100), (h[5].1, 100)] {
        assert!(
            at >= Duration::from_millis(deadline) && at < Duration::from_millis(deadline + 60),
            "an event at {at:?} for a deadline of {deadline} ms"
        );
    }
    assert_eq!(c.call(&["EXISTS", "h", "h2"]).int(), 0);
}

/// `HSET` clears a field's lifetime (Redis 7.4), `HINCRBY` keeps it, `HPERSIST` clears it;
/// a field whose lifetime was cleared outlives its old deadline.
#[test]
fn hash_field_hset_clears_lifetime_and_hincrby_keeps_it() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    c.call(&["HSET", "h", "a", "1", "n", "5", "p", "x", "keep", "y"]);
    assert_eq!(
        ints(c.call(&["HEXPIRE", "h", "10", "FIELDS", "3", "a", "n", "p"])),
        [1, 1, 1]
    );
    c.call(&["HSET", "h", "a", "2"]);
    assert_eq!(c.call(&["HINCRBY", "h", "n", "1"]).int(), 6);
    assert_eq!(
        ints(c.call(&["HPERSIST", "h", "FIELDS", "3", "p", "p", "zz"])),
        [1, -1, -2]
    );
    assert_eq!(
        ints(c.call(&["HTTL", "h", "FIELDS", "4", "a", "n", "p", "keep"])),
        [-1, 10, -1, -1]
    );
    server.advance(Duration::from_millis(10_001));
    assert_eq!(c.call(&["HGET", "h", "a"]).text(), "2");
    assert_eq!(
        c.call(&["HGET", "h", "n"]),
        Frame::Null,
        "kept its lifetime"
    );
    assert_eq!(c.call(&["HLEN", "h"]).int(), 3);
}

/// `NX`, `XX`, `GT`, `LT` as Redis 7.4 documents them (no lifetime counts as forever), a time
/// not in the future deletes the field (2), the last field's deletion deletes the key, and
/// `HEXPIRETIME`/`HPEXPIRETIME` give the Unix time.
#[test]
fn hash_field_expire_conditions_and_past_times_reply_as_redis_7_4() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    let now_s = 1_700_000_000i64;
    c.call(&["HSET", "h", "a", "1", "b", "2"]);
    let hexpire = |c: &mut RawClient, args: &[&str]| {
        let mut all = vec!["HEXPIRE", "h"];
        all.extend_from_slice(args);
        ints(c.call(&all))
    };
    assert_eq!(
        hexpire(&mut c, &["100", "XX", "FIELDS", "2", "a", "zz"]),
        [0, -2]
    );
    assert_eq!(hexpire(&mut c, &["100", "GT", "FIELDS", "1", "a"]), [0]);
    assert_eq!(hexpire(&mut c, &["100", "NX", "FIELDS", "1", "a"]), [1]);
    assert_eq!(hexpire(&mut c, &["200", "NX", "FIELDS", "1", "a"]), [0]);
    assert_eq!(hexpire(&mut c, &["50", "GT", "FIELDS", "1", "a"]), [0]);
    assert_eq!(hexpire(&mut c, &["200", "GT", "FIELDS", "1", "a"]), [1]);
    assert_eq!(hexpire(&mut c, &["300", "LT", "FIELDS", "1", "a"]), [0]);
    assert_eq!(
        hexpire(&mut c, &["150", "lt", "FIELDS", "2", "a", "b"]),
        [1, 1]
    );
    assert_eq!(hexpire(&mut c, &["120", "XX", "FIELDS", "1", "a"]), [1]);
    assert_eq!(
        ints(c.call(&["HEXPIRETIME", "h", "FIELDS", "2", "a", "b"])),
        [now_s + 120, now_s + 150]
    );
    assert_eq!(
        ints(c.call(&["HPEXPIRETIME", "h", "FIELDS", "1", "a"])),
        [(now_s + 120) * 1000]
    );
    let past = (now_s * 1000).to_string();
    assert_eq!(
        ints(c.call(&["HPEXPIREAT", "h", &past, "FIELDS", "1", "a"])),
        [2]
    );
    assert_eq!(c.call(&["HLEN", "h"]).int(), 1);
    assert_eq!(hexpire(&mut c, &["0", "FIELDS", "2", "b", "b"]), [2, -2]);
    assert_eq!(
        c.call(&["EXISTS", "h"]).int(),
        0,
        "the last field took the key"
    );
    assert_eq!(hexpire(&mut c, &["10", "FIELDS", "2", "a", "b"]), [-2, -2]);
    assert_eq!(
        ints(c.call(&["HTTL", "nokey", "FIELDS", "1", "a"])),
        [-2],
        "a missing key: -2 per field"
    );
    assert_eq!(
        ints(c.call(&["HPERSIST", "nokey", "FIELDS", "1", "a"])),
        [-2]
    );
}

/// Redis 7.4's errors, in its order of checks.
#[test]
fn hash_field_expire_errors_are_redis_7_4s() {
    let server = TestServer::start();
    let mut c = server.raw();
    c.call(&["HSET", "h", "a", "1"]);
    c.call(&["SET", "s", "x"]);
    let fields_missing = "ERR Mandatory argument FIELDS is missing or not at the right position";
    let count = "ERR Parameter `numFields` should be greater than 0";
    let mismatch = "ERR The `numfields` parameter must match the number of arguments";
    let cases: &[(&[&str], &str)] = &[
        (&["HEXPIRE", "s", "10", "FIELDS", "1", "a"], "WRONGTYPE"),
        (&["HTTL", "s", "FIELDS", "1", "a"], "WRONGTYPE"),
        (&["HPERSIST", "s", "FIELDS", "1", "a"], "WRONGTYPE"),
        (
            &["HEXPIRE", "h", "x", "FIELDS", "1", "a"],
            "ERR value is not an integer",
        ),
        (
            &["HEXPIRE", "h", "-1", "FIELDS", "1", "a"],
            "ERR invalid expire time, must be >= 0",
        ),
        (
            &["HEXPIRE", "h", "281474976710", "FIELDS", "1", "a"],
            "ERR invalid expire time in 'hexpire' command",
        ),
        (
            &["HPEXPIREAT", "h", "281474976710656", "FIELDS", "1", "a"],
            "ERR invalid expire time in 'hpexpireat' command",
        ),
        (
            &["HEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "a"],
            "ERR invalid expire time in 'hexpire' command",
        ),
        (
            &["HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "a"],
            fields_missing,
        ),
        (&["HEXPIRE", "h", "10", "FIELD", "1", "a"], fields_missing),
        (&["HEXPIRE", "h", "10", "1", "FIELDS", "a"], fields_missing),
        (&["HEXPIRE", "h", "10", "FIELDS", "0", "a"], count),
        (&["HEXPIRE", "h", "10", "FIELDS", "x", "a"], count),
        (&["HEXPIRE", "h", "10", "FIELDS", "2", "a"], mismatch),
        (&["HEXPIRE", "h", "10", "FIELDS", "1", "a", "b"], mismatch),
        (&["HTTL", "h", "FIELDS", "2", "a"], mismatch),
        (&["HTTL", "h", "FIELDS", "-1", "a"], count),
        (&["HPERSIST", "h", "XX", "1", "a"], fields_missing),
        (
            &["HEXPIRE", "h", "10", "FIELDS", "1"],
            "ERR wrong number of arguments",
        ),
        (
            &["HTTL", "h", "FIELDS", "1"],
            "ERR wrong number of arguments",
        ),
    ];
    for (args, want) in cases {
        let got = error(c.call(args));
        assert!(got.starts_with(want), "{args:?}: {got}, want {want}");
    }
    assert_eq!(
        c.call(&["HGET", "h", "a"]).text(),
        "1",
        "errors change nothing"
    );
}

/// `RENAME` and `COPY` carry field lifetimes (the copy's fields expire too); a deleted hash's
/// timers are dropped, and a new hash at the same key keeps its fields when the old time comes;
/// lifetimes weigh in `MEMORY USAGE`.
#[test]
fn hash_field_lifetimes_follow_rename_and_copy_and_leave_with_the_key() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    c.call(&["HSET", "h", "a", "1", "b", "2"]);
    let plain = c.call(&["MEMORY", "USAGE", "h"]).int();
    c.call(&["HPEXPIRE", "h", "100", "FIELDS", "1", "a"]);
    let timed = c.call(&["MEMORY", "USAGE", "h"]).int();
    assert!(timed > plain, "a lifetime weighs: {plain} -> {timed}");
    c.call(&["RENAME", "h", "r"]);
    c.call(&["COPY", "r", "c"]);
    assert_eq!(ints(c.call(&["HPTTL", "r", "FIELDS", "1", "a"])), [100]);
    assert_eq!(ints(c.call(&["HPTTL", "c", "FIELDS", "1", "a"])), [100]);
    c.call(&["COPY", "c", "m"]);
    assert_eq!(c.call(&["MOVE", "m", "1"]).int(), 1);
    c.call(&["SELECT", "1"]);
    assert_eq!(ints(c.call(&["HPTTL", "m", "FIELDS", "1", "a"])), [100]);
    c.call(&["SELECT", "0"]);
    c.call(&["HSET", "old", "a", "1"]);
    c.call(&["HPEXPIRE", "old", "100", "FIELDS", "1", "a"]);
    c.call(&["DEL", "old"]);
    c.call(&["HSET", "old", "a", "new"]);
    server.advance(Duration::from_millis(101));
    assert_eq!(
        c.call(&["HGETALL", "r"]),
        Frame::Array(vec![Frame::bulk("b"), Frame::bulk("2")])
    );
    assert_eq!(
        c.call(&["HGETALL", "c"]),
        Frame::Array(vec![Frame::bulk("b"), Frame::bulk("2")])
    );
    assert_eq!(c.call(&["HGET", "old", "a"]).text(), "new");
    c.call(&["SELECT", "1"]);
    assert_eq!(
        c.call(&["HKEYS", "m"]),
        Frame::Array(vec![Frame::bulk("b")])
    );
    assert_eq!(server.server.keyspace.sum(|s| s.expired_fields), 3);
}
