//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, alone, against
//! `redis-server` (scripts over two connections each), and under concurrent clients (the
//! counter and check-and-set patterns).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use crate::common::{Frame, RawClient, RealRedis, TestServer};

fn ok() -> Frame {
    Frame::Simple("OK".into())
}

fn queued() -> Frame {
    Frame::Simple("QUEUED".into())
}

fn bulk(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

fn error(text: &str) -> Frame {
    Frame::Error(text.into())
}

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A server whose `DEBUG` runs for any client (some tests stretch a transaction with
/// `DEBUG SLEEP`).
fn server() -> TestServer {
    TestServer::with_args(&["--enable-debug-command", "yes"])
}

/// Runs `commands` on `client`, asserting each reply.
fn expect(client: &mut RawClient, steps: &[(&[&str], Frame)]) {
    for (args, want) in steps {
        assert_eq!(&client.call(args), want, "reply to {args:?}");
    }
}

#[test]
fn exec_queued_commands_replies_each_in_order() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["SET", "k", "1"], queued()),
            (&["INCR", "k"], queued()),
            (&["GET", "k"], queued()),
            (
                &["EXEC"],
                Frame::Array(vec![ok(), Frame::Int(2), bulk("2")]),
            ),
            (&["GET", "k"], bulk("2")),
        ],
    );
}

#[test]
fn multi_nested_errors_and_transaction_continues() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["MULTI"], error("ERR MULTI calls can not be nested")),
            (&["SET", "k", "v"], queued()),
            (&["EXEC"], Frame::Array(vec![ok()])),
        ],
    );
}

#[test]
fn exec_and_discard_without_multi_error() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["EXEC"], error("ERR EXEC without MULTI")),
            (&["DISCARD"], error("ERR DISCARD without MULTI")),
        ],
    );
}

#[test]
fn discard_queued_commands_are_dropped() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["SET", "k", "v"], queued()),
            (&["DISCARD"], ok()),
            (&["GET", "k"], Frame::Null),
            (&["EXEC"], error("ERR EXEC without MULTI")),
        ],
    );
}

#[test]
fn watch_inside_multi_refused_and_transaction_still_runs() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (
                &["WATCH", "k"],
                error("ERR WATCH inside MULTI is not allowed"),
            ),
            (&["SET", "k", "v"], queued()),
            (&["EXEC"], Frame::Array(vec![ok()])),
        ],
    );
}

#[test]
fn multi_refused_commands_make_exec_abort() {
    let server = server();
    let mut c = server.raw();
    for refused in [
        &["NOSUCH", "a"][..],
        &["SET", "k"][..],
        &["SHUTDOWN"][..],
        &["CONFIG", "NOSUCH"][..],
    ] {
        assert_eq!(c.call(&["MULTI"]), ok());
        assert_eq!(c.call(&["SET", "k", "v"]), queued());
        assert!(
            matches!(c.call(refused), Frame::Error(_)),
            "{refused:?} refused"
        );
        assert_eq!(c.call(&["EXEC"]), error(EXECABORT), "after {refused:?}");
        assert_eq!(c.call(&["GET", "k"]), Frame::Null, "nothing ran");
    }
}

#[test]
fn exec_refused_itself_discards_with_its_reason() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["SET", "k", "v"], queued()),
            (
                &["EXEC", "extra"],
                error("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"),
            ),
            (&["EXEC"], error("ERR EXEC without MULTI")),
        ],
    );
}

#[test]
fn exec_runtime_error_runs_the_rest() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["SET", "s", "text"], ok()),
            (&["MULTI"], ok()),
            (&["INCR", "s"], queued()),
            (&["SET", "k", "v"], queued()),
            (
                &["EXEC"],
                Frame::Array(vec![
                    error("ERR value is not an integer or out of range"),
                    ok(),
                ]),
            ),
            (&["GET", "k"], bulk("v")),
        ],
    );
}

#[test]
fn exec_select_inside_multi_reaches_other_database() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["SELECT", "3"], queued()),
            (&["SET", "k", "in3"], queued()),
            (&["EXEC"], Frame::Array(vec![ok(), ok()])),
            (&["GET", "k"], bulk("in3")),
            (&["SELECT", "0"], ok()),
            (&["GET", "k"], Frame::Null),
        ],
    );
}

#[test]
fn watch_write_by_other_client_exec_returns_null() {
    let server = server();
    let (mut a, mut b) = (server.raw(), server.raw());
    expect(&mut a, &[(&["WATCH", "k"], ok()), (&["MULTI"], ok())]);
    assert_eq!(b.call(&["SET", "k", "other"]), ok());
    expect(
        &mut a,
        &[
            (&["SET", "k", "mine"], queued()),
            (&["EXEC"], Frame::Null),
            (&["GET", "k"], bulk("other")),
        ],
    );
}

#[test]
fn watch_write_by_self_before_multi_exec_returns_null() {
    let server = server();
    let mut a = server.raw();
    expect(
        &mut a,
        &[
            (&["WATCH", "k"], ok()),
            (&["SET", "k", "1"], ok()),
            (&["MULTI"], ok()),
            (&["GET", "k"], queued()),
            (&["EXEC"], Frame::Null),
        ],
    );
}

#[test]
fn watch_changes_to_other_keys_exec_runs() {
    let server = server();
    let (mut a, mut b) = (server.raw(), server.raw());
    expect(
        &mut a,
        &[(&["SET", "k", "1"], ok()), (&["WATCH", "k"], ok())],
    );
    // Other keys, the same key in another database, a write that changes nothing.
    expect(
        &mut b,
        &[
            (&["SET", "other", "1"], ok()),
            (&["DEL", "missing"], Frame::Int(0)),
            (&["SET", "k", "x", "NX"], Frame::Null),
            (&["SELECT", "1"], ok()),
            (&["SET", "k", "elsewhere"], ok()),
            (&["FLUSHDB"], ok()),
        ],
    );
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["GET", "k"], queued()),
            (&["EXEC"], Frame::Array(vec![bulk("1")])),
        ],
    );
}

#[test]
fn unwatch_then_write_exec_runs() {
    let server = server();
    let (mut a, mut b) = (server.raw(), server.raw());
    expect(&mut a, &[(&["WATCH", "k"], ok()), (&["UNWATCH"], ok())]);
    assert_eq!(b.call(&["SET", "k", "1"]), ok());
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["GET", "k"], queued()),
            (&["EXEC"], Frame::Array(vec![bulk("1")])),
        ],
    );
    assert_eq!(server.server.keyspace.watches().count(), 0);
}

#[test]
fn watch_each_kind_of_change_exec_returns_null() {
    let server = server();
    // The watched key, and what another client does to it.
    let changes: &[(&str, &[&[&str]])] = &[
        ("k", &[&["DEL", "k"]]),
        ("k", &[&["SET", "src", "x"], &["RENAME", "src", "k"]]),
        (
            "k",
            &[&["SET", "src", "x"], &["COPY", "src", "k", "REPLACE"]],
        ),
        ("k", &[&["MOVE", "k", "1"]]),
        (
            "m",
            &[&["SELECT", "1"], &["SET", "m", "x"], &["MOVE", "m", "0"]],
        ),
        ("k", &[&["FLUSHALL"]]),
        ("k", &[&["FLUSHDB"]]),
        (
            "k",
            &[&["SELECT", "1"], &["SET", "k", "x"], &["SWAPDB", "0", "1"]],
        ),
        ("k", &[&["EXPIRE", "k", "100"]]),
        ("k", &[&["APPEND", "k", "x"]]),
        ("k", &[&["GETDEL", "k"]]),
        ("n", &[&["INCRBYFLOAT", "n", "1.5"]]),
    ];
    for (watched, change) in changes {
        let (mut a, mut b) = (server.raw(), server.raw());
        assert_eq!(a.call(&["FLUSHALL"]), ok());
        assert_eq!(a.call(&["SET", "k", "1"]), ok());
        assert_eq!(a.call(&["SET", "n", "1"]), ok());
        assert_eq!(a.call(&["WATCH", watched]), ok());
        for command in *change {
            assert!(
                !matches!(b.call(command), Frame::Error(_)),
                "{command:?} runs"
            );
        }
        assert_eq!(a.call(&["MULTI"]), ok());
        assert_eq!(a.call(&["PING"]), queued());
        assert_eq!(a.call(&["EXEC"]), Frame::Null, "after {change:?}");
    }
}

#[test]
fn watch_missing_key_survives_flushall_exec_runs() {
    let server = server();
    let (mut a, mut b) = (server.raw(), server.raw());
    assert_eq!(a.call(&["WATCH", "missing"]), ok());
    expect(
        &mut b,
        &[(&["SET", "other", "1"], ok()), (&["FLUSHALL"], ok())],
    );
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["PING"], queued()),
            (&["EXEC"], Frame::Array(vec![Frame::Simple("PONG".into())])),
        ],
    );
}

#[test]
fn watch_key_expires_before_exec_returns_null() {
    let server = TestServer::with_manual_clock(&[]);
    let mut a = server.raw();
    expect(
        &mut a,
        &[
            (&["SET", "k", "v", "PX", "100"], ok()),
            (&["WATCH", "k"], ok()),
        ],
    );
    server.advance(Duration::from_millis(200));
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["PING"], queued()),
            (&["EXEC"], Frame::Null),
        ],
    );
}

#[test]
fn watch_key_expired_before_watch_exec_runs() {
    let server = TestServer::with_manual_clock(&[]);
    let mut a = server.raw();
    assert_eq!(a.call(&["SET", "k", "v", "PX", "100"]), ok());
    server.advance(Duration::from_millis(200));
    assert_eq!(a.call(&["WATCH", "k"]), ok());
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["PING"], queued()),
            (&["EXEC"], Frame::Array(vec![Frame::Simple("PONG".into())])),
        ],
    );
}

#[test]
fn watch_key_evicted_exec_returns_null() {
    let server = TestServer::with_args(&["--maxmemory-policy", "allkeys-lru"]);
    let mut a = server.raw();
    expect(
        &mut a,
        &[(&["SET", "k", "v"], ok()), (&["WATCH", "k"], ok())],
    );
    // Every key goes once the room for keys is tiny.
    let mut b = server.raw();
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "1"]), ok());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while b.call(&["EXISTS", "k"]) != Frame::Int(0) {
        assert!(std::time::Instant::now() < deadline, "k was not evicted");
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "0"]), ok());
    expect(
        &mut a,
        &[
            (&["MULTI"], ok()),
            (&["PING"], queued()),
            (&["EXEC"], Frame::Null),
        ],
    );
}

#[test]
fn exec_time_frozen_key_outlives_its_deadline_inside() {
    let server = server();
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["SET", "k", "v", "PX", "5"], queued()),
            (&["DEBUG", "SLEEP", "0.05"], queued()),
            (&["GET", "k"], queued()),
            (&["EXISTS", "k"], queued()),
            (
                &["EXEC"],
                Frame::Array(vec![ok(), ok(), bulk("v"), Frame::Int(1)]),
            ),
            (&["GET", "k"], Frame::Null),
        ],
    );
}

#[test]
fn multi_under_oom_refuses_every_command_but_exec_discard() {
    let server = server();
    let mut c = server.raw();
    let oom = || error("OOM command not allowed when used memory > 'maxmemory'.");
    expect(
        &mut c,
        &[
            (&["CONFIG", "SET", "maxmemory", "1"], ok()),
            (&["MULTI"], ok()),
            (&["GET", "k"], oom()),
            (&["EXEC"], error(EXECABORT)),
            (&["MULTI"], ok()),
            (&["DISCARD"], ok()),
            (&["CONFIG", "SET", "maxmemory", "0"], ok()),
        ],
    );
}

#[test]
fn exec_with_denyoom_command_under_oom_aborts_with_reason() {
    let server = server();
    let (mut a, mut b) = (server.raw(), server.raw());
    expect(
        &mut a,
        &[(&["MULTI"], ok()), (&["SET", "k", "v"], queued())],
    );
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "1"]), ok());
    assert_eq!(
        a.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "0"]), ok());
    assert_eq!(a.call(&["GET", "k"]), Frame::Null);
    // A transaction of reads runs over the limit.
    expect(&mut a, &[(&["MULTI"], ok()), (&["GET", "k"], queued())]);
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "1"]), ok());
    assert_eq!(a.call(&["EXEC"]), Frame::Array(vec![Frame::Null]));
    assert_eq!(b.call(&["CONFIG", "SET", "maxmemory", "0"]), ok());
}

#[test]
fn exec_config_set_maxmemory_inside_applies_after() {
    let server = TestServer::with_args(&["--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.raw();
    expect(
        &mut c,
        &[
            (&["MULTI"], ok()),
            (&["CONFIG", "SET", "maxmemory", "100mb"], queued()),
            (&["DBSIZE"], queued()),
            (&["INFO", "keyspace"], queued()),
            (&["SCAN", "0"], queued()),
            (&["RANDOMKEY"], queued()),
        ],
    );
    let Frame::Array(replies) = c.call(&["EXEC"]) else {
        panic!("EXEC replies an array");
    };
    assert_eq!(replies.len(), 5);
    assert_eq!(replies[1], Frame::Int(0));
    assert_eq!(
        server.server.keyspace.eviction().maxmemory,
        100 * 1024 * 1024
    );
}

#[test]
fn exec_resp3_null_on_changed_watch_is_underscore() {
    let server = server();
    let mut b = server.raw();
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let read_some = |s: &mut TcpStream, want: &[u8]| {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(want) {
            let n = s.read(&mut buf).expect("a reply");
            assert!(n > 0, "closed");
            got.extend_from_slice(&buf[..n]);
        }
        got
    };
    s.write_all(b"HELLO 3\r\n").unwrap();
    read_some(&mut s, b"modules\r\n*0\r\n");
    s.write_all(b"WATCH k\r\nMULTI\r\n").unwrap();
    read_some(&mut s, b"+OK\r\n+OK\r\n");
    assert_eq!(b.call(&["SET", "k", "1"]), ok());
    s.write_all(b"GET k\r\nEXEC\r\n").unwrap();
    assert_eq!(read_some(&mut s, b"_\r\n"), b"+QUEUED\r\n_\r\n");
}

#[test]
fn client_info_in_multi_shows_flag_and_queue_length() {
    let server = server();
    let mut c = server.raw();
    let info = |c: &mut RawClient| match c.call(&["CLIENT", "INFO"]) {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT INFO: {other:?}"),
    };
    let before = info(&mut c);
    assert!(
        before.contains(" flags=N ") && before.contains(" multi=-1 "),
        "{before}"
    );
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "k", "v"]), queued());
    assert_eq!(c.call(&["SET", "k", "v"]), queued());
    let Frame::Array(replies) = ({
        assert_eq!(c.call(&["CLIENT", "INFO"]), queued());
        c.call(&["EXEC"])
    }) else {
        panic!("EXEC replies an array");
    };
    let during = match &replies[2] {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => String::from_utf8(b.clone()).unwrap(),
        other => panic!("CLIENT INFO: {other:?}"),
    };
    // Inside EXEC the transaction is over, as in Redis.
    assert!(during.contains(" multi=-1 "), "{during}");
    let mut other = server.raw();
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["PING"]), queued());
    let Frame::Bulk(list) = other.call(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST");
    };
    let list = String::from_utf8(list).unwrap();
    assert!(
        list.lines()
            .any(|l| l.contains(" flags=x ") && l.contains(" multi=1 ")),
        "{list}"
    );
}

#[test]
fn exec_commands_count_each_in_commandstats() {
    let server = server();
    let mut c = server.raw();
    for args in [
        &["SET", "s", "x"][..],
        &["CONFIG", "RESETSTAT"],
        &["MULTI"],
        &["INCR", "s"],
        &["SET", "a", "1"],
        &["EXEC"],
    ] {
        c.call(args);
    }
    let Frame::Bulk(text) = c.call(&["INFO", "commandstats"]) else {
        panic!("INFO");
    };
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("cmdstat_incr:calls=1,"), "{text}");
    assert!(
        text.contains("rejected_calls=0,failed_calls=1\r\n"),
        "{text}"
    );
    let exec = text
        .lines()
        .find(|l| l.starts_with("cmdstat_exec:"))
        .unwrap();
    assert!(exec.starts_with("cmdstat_exec:calls=1,") && exec.ends_with("failed_calls=0"));
}

// ---- Differential: the same scripts on redis-server and on the server. ----

/// One step of a script: a command on connection `n`, or a pause.
enum Step<'a> {
    On(usize, &'a [&'a str]),
    Sleep(u64),
}
use Step::{On, Sleep};

/// Runs `steps` on two connections to `redis-server` (with `redis_args`) and two to the
/// server (with `server_args`), `HELLO 3` first if `resp3`; every reply must be the same.
fn same_script(server_args: &[&str], redis_args: &[&str], resp3: bool, steps: &[Step<'_>]) {
    let Some(redis) = RealRedis::start_with(redis_args) else {
        return;
    };
    let server = TestServer::with_args(server_args);
    let mut clients = [[redis.raw(), redis.raw()], [server.raw(), server.raw()]];
    if resp3 {
        for side in clients.iter_mut() {
            for c in side.iter_mut() {
                assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
            }
        }
    }
    let mut history = Vec::new();
    for step in steps {
        match step {
            Sleep(ms) => thread::sleep(Duration::from_millis(*ms)),
            On(n, args) => {
                history.push(format!("{n}: {args:?}"));
                let expected = clients[0][*n].call(args);
                let actual = clients[1][*n].call(args);
                assert_eq!(
                    expected,
                    actual,
                    "replies differ after:\n{}",
                    history.join("\n")
                );
            }
        }
    }
}

#[test]
fn transactions_queued_errors_match_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            On(0, &["MULTI"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "a", "1"]),
            On(0, &["WATCH", "a"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["NOSUCH", "x", "y"]),
            On(0, &["SET", "a"]),
            On(0, &["GET", "a"]),
            On(0, &["SHUTDOWN", "NOSAVE"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "a"]),
            On(0, &["EXEC"]),
            On(0, &["DISCARD"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "b", "2"]),
            On(0, &["EXEC", "now"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["CLIENT", "NOSUCH"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["MONITOR"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "b"]),
            On(0, &["DISCARD"]),
            On(0, &["GET", "b"]),
            On(0, &["UNWATCH"]),
        ],
    );
}

#[test]
fn transactions_runtime_errors_and_select_match_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            On(0, &["SET", "s", "text"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "s"]),
            On(0, &["INCRBYFLOAT", "s", "1"]),
            On(0, &["APPEND", "s", "+"]),
            On(0, &["SELECT", "2"]),
            On(0, &["SET", "s", "in2"]),
            On(0, &["SELECT", "99"]),
            On(0, &["GET", "s"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "s"]),
            On(0, &["SELECT", "0"]),
            On(0, &["GET", "s"]),
            On(0, &["MULTI"]),
            On(0, &["UNWATCH"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["EXEC"]),
        ],
    );
}

#[test]
fn transactions_watch_other_client_match_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            On(0, &["SET", "k", "1"]),
            On(0, &["WATCH", "k", "k", "j"]),
            On(1, &["SET", "j", "x"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "k"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "k"]),
            On(0, &["WATCH", "k"]),
            On(1, &["SET", "other", "x"]),
            On(1, &["GET", "k"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "k"]),
            On(0, &["EXEC"]),
            On(0, &["WATCH", "k"]),
            On(0, &["UNWATCH"]),
            On(1, &["SET", "k", "5"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "k"]),
            On(0, &["EXEC"]),
            On(0, &["WATCH", "k"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "k"]),
            On(0, &["DISCARD"]),
            On(1, &["SET", "k", "9"]),
            On(0, &["MULTI"]),
            On(0, &["INCR", "k"]),
            On(0, &["EXEC"]),
        ],
    );
}

#[test]
fn transactions_watch_expiry_match_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            // Live at WATCH, expires before EXEC: EXEC fails.
            On(0, &["SET", "k", "v", "PX", "30"]),
            On(0, &["WATCH", "k"]),
            Sleep(80),
            On(0, &["MULTI"]),
            On(0, &["SET", "x", "1"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "x"]),
            // Expired before WATCH: EXEC runs.
            On(0, &["SET", "e", "v", "PX", "10"]),
            Sleep(40),
            On(0, &["WATCH", "e"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "x", "2"]),
            On(0, &["EXEC"]),
            // A lifetime set on a watched key is a change.
            On(0, &["SET", "t", "v"]),
            On(0, &["WATCH", "t"]),
            On(1, &["PEXPIRE", "t", "100000"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "x", "3"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "x"]),
        ],
    );
}

#[test]
fn transactions_watch_stale_keys_match_redis() {
    // Keys already expired at WATCH (kept by turning active expiry off): removing them is no
    // change, as in Redis 7.0; DISCARD forgets a change seen before it.
    let debug = ["--enable-debug-command", "yes"];
    same_script(
        &debug,
        &debug,
        false,
        &[
            On(0, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
            On(0, &["SET", "x", "foo", "PX", "1"]),
            On(0, &["SET", "y", "foo", "PX", "1"]),
            On(0, &["SET", "z", "foo", "PX", "1"]),
            Sleep(30),
            On(0, &["WATCH", "x"]),
            On(1, &["DEL", "x"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["WATCH", "y"]),
            On(1, &["FLUSHDB"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["SET", "z", "foo", "PX", "1"]),
            Sleep(30),
            On(0, &["WATCH", "z"]),
            On(1, &["SWAPDB", "0", "1"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["SET", "k", "1"]),
            On(0, &["WATCH", "k"]),
            On(1, &["SET", "k", "2"]),
            On(0, &["MULTI"]),
            On(0, &["DISCARD"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]),
        ],
    );
}

#[test]
fn transactions_watch_flush_and_swap_match_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            On(0, &["SET", "k", "1"]),
            On(0, &["WATCH", "k", "missing"]),
            On(1, &["FLUSHALL"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["WATCH", "missing"]),
            On(1, &["SET", "other", "1"]),
            On(1, &["FLUSHALL"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(0, &["SET", "k", "1"]),
            On(0, &["WATCH", "k"]),
            On(1, &["FLUSHDB"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            // SWAPDB: a watched key missing in both databases is untouched; one present in
            // the other database is changed.
            On(0, &["WATCH", "q"]),
            On(1, &["SWAPDB", "0", "1"]),
            On(0, &["MULTI"]),
            On(0, &["PING"]),
            On(0, &["EXEC"]),
            On(1, &["SELECT", "1"]),
            On(1, &["SET", "q", "in1"]),
            On(0, &["WATCH", "q"]),
            On(1, &["SWAPDB", "0", "1"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "q"]),
            On(0, &["EXEC"]),
            On(0, &["SET", "src", "x"]),
            On(0, &["WATCH", "dst"]),
            On(1, &["SELECT", "0"]),
            On(1, &["RENAME", "src", "dst"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "dst"]),
            On(0, &["EXEC"]),
        ],
    );
}

#[test]
fn transactions_resp3_match_redis() {
    same_script(
        &[],
        &[],
        true,
        &[
            On(0, &["SET", "k", "1"]),
            On(0, &["WATCH", "k"]),
            On(1, &["SET", "k", "2"]),
            On(0, &["MULTI"]),
            On(0, &["INCRBYFLOAT", "k", "0.5"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["INCRBYFLOAT", "k", "0.5"]),
            On(0, &["GET", "nosuch"]),
            On(0, &["SET", "k"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["INCRBYFLOAT", "k", "0.5"]),
            On(0, &["GET", "nosuch"]),
            On(0, &["EXEC"]),
        ],
    );
}

#[test]
fn transactions_resp3_own_events_inside_exec_match_redis() {
    // A RESP3 client subscribed to its own keyspace events gets them inside EXEC's reply,
    // where Redis 7.0 writes them.
    same_script(
        &[],
        &[],
        true,
        &[
            On(1, &["CONFIG", "SET", "notify-keyspace-events", "E$"]),
            On(0, &["SUBSCRIBE", "__keyevent@0__:set"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "a", "1"]),
            On(0, &["GET", "a"]),
            On(0, &["SET", "b", "2"]),
            On(0, &["EXEC"]),
            On(0, &["PING"]),
            On(0, &["PING"]),
            On(0, &["PING"]),
        ],
    );
}

#[test]
fn transactions_oom_and_frozen_time_match_redis() {
    same_script(
        &["--enable-debug-command", "yes"],
        &["--enable-debug-command", "yes"],
        false,
        &[
            On(0, &["MULTI"]),
            On(0, &["SET", "k", "v", "PX", "5"]),
            On(0, &["DEBUG", "SLEEP", "0.05"]),
            On(0, &["GET", "k"]),
            On(0, &["EXISTS", "k"]),
            On(0, &["EXEC"]),
            On(0, &["GET", "k"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "k", "v"]),
            On(1, &["CONFIG", "SET", "maxmemory", "1"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "k"]),
            On(0, &["EXEC"]),
            On(0, &["MULTI"]),
            On(0, &["DISCARD"]),
            On(1, &["CONFIG", "SET", "maxmemory", "0"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "k"]),
            On(1, &["CONFIG", "SET", "maxmemory", "1"]),
            On(0, &["EXEC"]),
            On(1, &["CONFIG", "SET", "maxmemory", "0"]),
        ],
    );
}

#[test]
fn transactions_command_info_matches_redis() {
    same_script(
        &[],
        &[],
        false,
        &[
            On(
                0,
                &[
                    "COMMAND", "INFO", "multi", "exec", "discard", "watch", "unwatch",
                ],
            ),
            On(0, &["COMMAND", "GETKEYS", "WATCH", "a", "b"]),
        ],
    );
}

/// Reads pub/sub messages until `n` have come, or a second passes.
fn messages(c: &mut RawClient, n: usize) -> Vec<Frame> {
    (0..n).filter_map(|_| c.read()).collect()
}

#[test]
fn transactions_keyspace_events_after_exec_match_redis() {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let server = TestServer::start();
    let mut seen = Vec::new();
    for addr in [redis.addr, server.addr] {
        let mut sub = RawClient::connect(addr);
        let mut c = RawClient::connect(addr);
        c.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        sub.call(&["PSUBSCRIBE", "__key*@0__:*"]);
        for args in [
            &["MULTI"][..],
            &["SET", "a", "1"],
            &["INCR", "a"],
            &["DEL", "a"],
            &["SET", "b", "1"],
        ] {
            c.call(args);
        }
        let exec = c.call(&["EXEC"]);
        seen.push((exec, messages(&mut sub, 8)));
    }
    assert_eq!(seen[0], seen[1]);
}

// ---- The seed's patterns under concurrent clients. ----

const CLIENTS: usize = 8;
const ROUNDS: usize = 250;

/// Runs `work` on `CLIENTS` connections at once, each its own thread.
fn on_clients(server: &TestServer, work: impl Fn(&mut RawClient, usize) + Send + Sync + 'static) {
    let work = std::sync::Arc::new(work);
    let threads: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let mut client = server.raw();
            let work = work.clone();
            thread::spawn(move || work(&mut client, i))
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
}

#[test]
fn counters_concurrent_increments_none_lost() {
    let server = TestServer::start();
    on_clients(&server, |c, _| {
        for _ in 0..ROUNDS {
            assert!(matches!(c.call(&["INCR", "n"]), Frame::Int(_)));
            assert!(matches!(c.call(&["DECRBY", "d", "3"]), Frame::Int(_)));
            assert!(matches!(
                c.call(&["INCRBYFLOAT", "f", "0.5"]),
                Frame::Bulk(_)
            ));
        }
    });
    let mut c = server.raw();
    let total = (CLIENTS * ROUNDS) as i64;
    assert_eq!(c.call(&["GET", "n"]), bulk(&total.to_string()));
    assert_eq!(c.call(&["GET", "d"]), bulk(&(-3 * total).to_string()));
    assert_eq!(c.call(&["GET", "f"]), bulk(&(total / 2).to_string()));
}

#[test]
fn counters_in_transactions_across_shards_stay_equal() {
    let server = TestServer::start();
    on_clients(&server, |c, i| {
        for _ in 0..ROUNDS {
            if i % 2 == 0 {
                assert_eq!(c.call(&["MULTI"]), ok());
                assert_eq!(c.call(&["INCR", "left"]), queued());
                assert_eq!(c.call(&["INCR", "right"]), queued());
                assert!(matches!(c.call(&["EXEC"]), Frame::Array(_)));
            } else {
                // Never half a transaction: both counters move together.
                let Frame::Array(values) = c.call(&["MGET", "left", "right"]) else {
                    panic!("MGET");
                };
                assert_eq!(values[0], values[1]);
            }
        }
    });
    let mut c = server.raw();
    let total = (CLIENTS / 2 * ROUNDS).to_string();
    assert_eq!(c.call(&["GET", "left"]), bulk(&total));
}

#[test]
fn check_and_set_with_watch_under_contention_no_lost_update() {
    let server = TestServer::start();
    let retries = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = retries.clone();
    on_clients(&server, move |c, _| {
        for _ in 0..ROUNDS / 5 {
            loop {
                assert_eq!(c.call(&["WATCH", "cas"]), ok());
                let current = match c.call(&["GET", "cas"]) {
                    Frame::Bulk(b) => String::from_utf8(b).unwrap().parse::<i64>().unwrap(),
                    Frame::Null => 0,
                    other => panic!("GET: {other:?}"),
                };
                assert_eq!(c.call(&["MULTI"]), ok());
                let next = (current + 1).to_string();
                assert_eq!(c.call(&["SET", "cas", &next]), queued());
                match c.call(&["EXEC"]) {
                    Frame::Array(_) => break,
                    Frame::Null => {
                        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    other => panic!("EXEC: {other:?}"),
                }
            }
        }
    });
    let mut c = server.raw();
    let total = (CLIENTS * (ROUNDS / 5)).to_string();
    assert_eq!(c.call(&["GET", "cas"]), bulk(&total));
    eprintln!(
        "check-and-set: {} retries",
        retries.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert_eq!(server.server.keyspace.watches().count(), 0);
}

/// `INFO commandstats` and `errorstats` as `name: calls, rejected, failed` lines and
/// `errorstat_*` lines, without the times.
fn counts(c: &mut RawClient) -> Vec<String> {
    let mut lines = Vec::new();
    for section in ["commandstats", "errorstats"] {
        let Frame::Bulk(text) = c.call(&["INFO", section]) else {
            panic!("INFO {section}");
        };
        for line in String::from_utf8(text).unwrap().lines() {
            if let Some((name, fields)) = line.split_once(':') {
                let kept: Vec<&str> = fields
                    .split(',')
                    .filter(|f| !f.starts_with("usec"))
                    .collect();
                if !name.starts_with("cmdstat_info") && !name.starts_with("cmdstat_config") {
                    lines.push(format!("{name}:{}", kept.join(",")));
                }
            }
        }
    }
    lines.sort();
    lines
}

#[test]
fn transactions_refusals_counted_as_redis_counts_them() {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let server = TestServer::start();
    let mut seen = Vec::new();
    for addr in [redis.addr, server.addr] {
        let mut c = RawClient::connect(addr);
        for args in [
            &["CONFIG", "RESETSTAT"][..],
            &["SET", "s", "x"],
            &["MULTI"],
            &["SET", "k"],
            &["NOSUCH"],
            &["GET", "k"],
            &["EXEC"],
            &["MULTI"],
            &["WATCH", "x"],
            &["MULTI"],
            &["INCR", "s"],
            &["SET", "k", "v"],
            &["EXEC"],
            &["MULTI"],
            &["EXEC", "x"],
            &["DISCARD"],
        ] {
            c.call(args);
        }
        seen.push(counts(&mut c));
    }
    assert!(
        seen[0]
            .iter()
            .any(|l| l.starts_with("cmdstat_set:") && l.contains("rejected_calls=1")),
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[0], seen[1]);
}
