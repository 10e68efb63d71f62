//! Expiry with a manual clock: remaining times to the millisecond, keys kept through their
//! expiry millisecond and gone after it on every path that reads or writes them, conditions
//! on relative times, lifetimes carried by `RENAME`, `COPY` and `MOVE`, and active expiry
//! removing keys nobody reads.

use std::time::{Duration, Instant};

use crate::common::{Frame, RawClient, TestServer};

/// The manual clock's start, in Unix milliseconds (see `TestServer::with_manual_clock`).
const START_MS: i64 = 1_700_000_000_000;

fn ok() -> Frame {
    Frame::Simple("OK".into())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn ttl_counts_down_with_the_clock_and_rounds_to_nearest_second() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["SET", "k", "v", "EX", "100"]), ok());
    assert_eq!(c.call(&["TTL", "k"]), Frame::Int(100));
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(100_000));
    assert_eq!(
        c.call(&["PEXPIRETIME", "k"]),
        Frame::Int(START_MS + 100_000)
    );
    assert_eq!(
        c.call(&["EXPIRETIME", "k"]),
        Frame::Int(START_MS / 1000 + 100)
    );
    server.advance(ms(40_400));
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(59_600));
    assert_eq!(c.call(&["TTL", "k"]), Frame::Int(60), "59.6 s rounds up");
    server.advance(ms(200));
    assert_eq!(c.call(&["TTL", "k"]), Frame::Int(59), "59.4 s rounds down");
    server.advance(ms(59_399));
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(1));
    assert_eq!(c.call(&["TTL", "k"]), Frame::Int(0));
    server.advance(ms(1));
    // Its expiry millisecond: still there, with nothing left.
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(0));
    assert_eq!(c.call(&["GET", "k"]), Frame::bulk("v"));
    server.advance(ms(1));
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(-2));
    assert_eq!(c.call(&["TTL", "k"]), Frame::Int(-2));
    assert_eq!(c.call(&["EXPIRETIME", "k"]), Frame::Int(-2));
}

#[test]
fn expire_conditions_compare_relative_times_exactly() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    c.call(&["SET", "k", "v"]);
    assert_eq!(c.call(&["EXPIRE", "k", "100"]), Frame::Int(1));
    // The same relative time a millisecond later is later.
    server.advance(ms(1));
    assert_eq!(c.call(&["EXPIRE", "k", "100", "LT"]), Frame::Int(0));
    assert_eq!(c.call(&["EXPIRE", "k", "100", "GT"]), Frame::Int(1));
    assert_eq!(c.call(&["PTTL", "k"]), Frame::Int(100_000));
    // Equal is neither greater nor less.
    assert_eq!(c.call(&["PEXPIRE", "k", "100000", "GT"]), Frame::Int(0));
    assert_eq!(c.call(&["PEXPIRE", "k", "100000", "LT"]), Frame::Int(0));
    assert_eq!(c.call(&["PEXPIRE", "k", "99999", "LT"]), Frame::Int(1));
    let at = START_MS + 1 + 99_999;
    assert_eq!(c.call(&["PEXPIRETIME", "k"]), Frame::Int(at));
    assert_eq!(
        c.call(&["PEXPIREAT", "k", &(at - 1).to_string(), "GT"]),
        Frame::Int(0)
    );
    assert_eq!(
        c.call(&["PEXPIREAT", "k", &(at + 1).to_string(), "GT"]),
        Frame::Int(1)
    );
    // A time now or past deletes the key (reply 1), even through LT.
    assert_eq!(
        c.call(&["PEXPIREAT", "k", &(START_MS + 1).to_string(), "LT"]),
        Frame::Int(1)
    );
    assert_eq!(c.call(&["EXISTS", "k"]), Frame::Int(0));
}

#[test]
fn lifetimes_move_with_rename_copy_move_and_stay_through_in_place_changes() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    c.call(&["SET", "k", "5", "PX", "5000"]);
    let at = Frame::Int(START_MS + 5000);
    server.advance(ms(1000));
    for command in [
        &["INCR", "k"][..],
        &["INCRBYFLOAT", "k", "0.5"],
        &["APPEND", "k", "x"],
        &["SETRANGE", "k", "0", "y"],
        &["SETBIT", "k", "1", "1"],
        &["SET", "k", "w", "KEEPTTL"],
        &["GETEX", "k"],
    ] {
        c.call(command);
        assert_eq!(c.call(&["PEXPIRETIME", "k"]), at, "after {command:?}");
    }
    assert_eq!(c.call(&["RENAME", "k", "r"]), ok());
    assert_eq!(c.call(&["PEXPIRETIME", "r"]), at);
    assert_eq!(c.call(&["COPY", "r", "c", "DB", "3"]), Frame::Int(1));
    assert_eq!(c.call(&["MOVE", "r", "2"]), Frame::Int(1));
    for db in ["2", "3"] {
        c.call(&["SELECT", db]);
        let key = if db == "2" { "r" } else { "c" };
        assert_eq!(c.call(&["PEXPIRETIME", key]), at);
    }
    // Through the expiry millisecond, then gone in both databases.
    server.advance(ms(4000));
    assert_eq!(c.call(&["EXISTS", "c"]), Frame::Int(1));
    server.advance(ms(1));
    assert_eq!(c.call(&["EXISTS", "c"]), Frame::Int(0));
    c.call(&["SELECT", "2"]);
    assert_eq!(c.call(&["GET", "r"]), Frame::Null);
    // A plain SET, GETSET and SETEX's successor clear or replace it.
    c.call(&["SET", "p", "v", "EX", "10"]);
    c.call(&["GETSET", "p", "w"]);
    assert_eq!(c.call(&["TTL", "p"]), Frame::Int(-1));
    c.call(&["SETEX", "p", "10", "v"]);
    c.call(&["SET", "p", "w"]);
    assert_eq!(c.call(&["TTL", "p"]), Frame::Int(-1));
}

/// Writes `k` to expire at the clock's next millisecond and moves the clock past it.
fn expired_key(server: &TestServer, c: &mut RawClient, value: &str) {
    assert_eq!(c.call(&["SET", "k", value, "PX", "1"]), ok());
    server.advance(ms(2));
}

#[test]
fn expired_key_is_absent_to_every_command() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    let checks: &[(&[&str], Frame)] = &[
        (&["GET", "k"], Frame::Null),
        (&["EXISTS", "k"], Frame::Int(0)),
        (&["TYPE", "k"], Frame::Simple("none".into())),
        (&["STRLEN", "k"], Frame::Int(0)),
        (&["GETRANGE", "k", "0", "-1"], Frame::bulk("")),
        (&["GETBIT", "k", "0"], Frame::Int(0)),
        (&["BITCOUNT", "k"], Frame::Int(0)),
        (&["MGET", "k"], Frame::Array(vec![Frame::Null])),
        (&["TTL", "k"], Frame::Int(-2)),
        (&["PTTL", "k"], Frame::Int(-2)),
        (&["EXPIRETIME", "k"], Frame::Int(-2)),
        (&["PERSIST", "k"], Frame::Int(0)),
        (&["EXPIRE", "k", "100"], Frame::Int(0)),
        (&["TOUCH", "k"], Frame::Int(0)),
        (&["DEL", "k"], Frame::Int(0)),
        (&["GETDEL", "k"], Frame::Null),
        (&["GETEX", "k", "PERSIST"], Frame::Null),
        (&["KEYS", "*"], Frame::Array(vec![])),
        (&["RANDOMKEY"], Frame::Null),
        (&["OBJECT", "ENCODING", "k"], Frame::Null),
        (&["MEMORY", "USAGE", "k"], Frame::Null),
        (
            &["RENAME", "k", "x"],
            Frame::Error("ERR no such key".into()),
        ),
        (&["COPY", "k", "x"], Frame::Int(0)),
        (&["MOVE", "k", "1"], Frame::Int(0)),
        (&["LCS", "k", "k"], Frame::bulk("")),
        (&["SCAN", "0", "COUNT", "1000"], scan_done(&[])),
        // Writes start from nothing, without the old lifetime.
        (&["INCR", "k"], Frame::Int(1)),
        (&["APPEND", "k", "ab"], Frame::Int(2)),
        (&["SETRANGE", "k", "1", "x"], Frame::Int(2)),
        (&["SETBIT", "k", "0", "1"], Frame::Int(0)),
        (&["INCRBYFLOAT", "k", "1.5"], Frame::bulk("1.5")),
        (&["SET", "k", "new", "NX"], ok()),
        (&["SET", "k", "new", "XX"], Frame::Null),
        (&["SET", "k", "new", "GET"], Frame::Null),
        (&["SET", "k", "new", "KEEPTTL"], ok()),
        (&["SETNX", "k", "new"], Frame::Int(1)),
        (&["GETSET", "k", "new"], Frame::Null),
        (&["MSETNX", "k", "new"], Frame::Int(1)),
    ];
    for (command, reply) in checks {
        expired_key(&server, &mut c, "7");
        assert_eq!(&c.call(command), reply, "{command:?}");
        if c.call(&["EXISTS", "k"]) == Frame::Int(1) {
            assert_eq!(c.call(&["TTL", "k"]), Frame::Int(-1), "{command:?}");
        }
        c.call(&["DEL", "k", "x"]);
    }
}

fn scan_done(keys: &[&str]) -> Frame {
    Frame::Array(vec![
        Frame::bulk("0"),
        Frame::Array(keys.iter().map(|k| Frame::bulk(k)).collect()),
    ])
}

#[test]
fn active_expiry_removes_keys_nobody_reads() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    for db in ["0", "1"] {
        c.call(&["SELECT", db]);
        for i in 0..500 {
            c.call(&["SET", &format!("k{i}"), "v", "PX", "1000"]);
        }
        c.call(&["SET", "stays", "v"]);
    }
    assert_eq!(c.call(&["DBSIZE"]), Frame::Int(501));
    server.advance(ms(1001));
    // The expiry thread runs every 10 ms; give it a bounded while.
    let started = Instant::now();
    loop {
        let sizes: Vec<Frame> = ["0", "1"]
            .iter()
            .map(|db| {
                c.call(&["SELECT", db]);
                c.call(&["DBSIZE"])
            })
            .collect();
        if sizes == [Frame::Int(1), Frame::Int(1)] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "not reclaimed: {sizes:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let info = c.call(&["INFO", "stats"]).text();
    assert!(info.contains("expired_keys:1000\r\n"), "{info}");
}

#[test]
fn scan_and_randomkey_skip_expired_keys() {
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    for i in 0..100 {
        c.call(&["SET", &format!("gone{i}"), "v", "PX", "10"]);
    }
    c.call(&["SET", "stays", "v"]);
    server.advance(ms(11));
    for _ in 0..50 {
        assert_eq!(c.call(&["RANDOMKEY"]), Frame::bulk("stays"));
    }
    let mut cursor = "0".to_string();
    let mut keys = Vec::new();
    loop {
        let Frame::Array(reply) = c.call(&["SCAN", &cursor]) else {
            panic!("SCAN's reply")
        };
        let Frame::Array(found) = &reply[1] else {
            panic!("keys")
        };
        keys.extend(found.iter().map(Frame::text));
        cursor = reply[0].text();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(keys, ["stays"]);
}

#[test]
fn lifetimes_count_from_the_current_time_after_commands_that_did_not_read_it() {
    // Commands on keys without lifetimes leave the shard's time unread: a lifetime written
    // or asked for afterwards must still count from now.
    let server = TestServer::with_manual_clock(&[]);
    let mut c = server.raw();
    c.call(&["SET", "k", "v"]);
    c.call(&["GET", "k"]);
    server.advance(Duration::from_secs(1000));
    c.call(&["GET", "k"]);
    assert_eq!(c.call(&["SET", "k", "v", "PX", "500"]), ok());
    assert_eq!(
        c.call(&["PEXPIRETIME", "k"]),
        Frame::Int(START_MS + 1_000_000 + 500)
    );
    server.advance(ms(1000));
    assert_eq!(c.call(&["SET", "j", "v"]), ok());
    assert_eq!(c.call(&["EXPIRE", "j", "5"]), Frame::Int(1));
    assert_eq!(
        c.call(&["PEXPIRETIME", "j"]),
        Frame::Int(START_MS + 1_001_000 + 5000)
    );
    // The same key in another database of the same shard: only the timed one expires.
    c.call(&["SELECT", "1"]);
    c.call(&["SET", "j", "w", "PX", "10"]);
    server.advance(ms(11));
    assert_eq!(c.call(&["GET", "j"]), Frame::Null);
    c.call(&["SELECT", "0"]);
    assert_eq!(c.call(&["GET", "j"]), Frame::bulk("v"));
    assert_eq!(c.call(&["GET", "k"]), Frame::Null, "expired 511 ms ago");
}
