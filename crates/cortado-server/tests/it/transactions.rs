//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, rule by rule, and under
//! concurrent clients (the counter and check-and-set patterns). The same scripts against
//! `redis-server` are in `diff_transactions.rs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use crate::common::{Frame, RawClient, TestServer};

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

/// Every command reaches its shards through the transaction's hold inside `EXEC` (a
/// command that locked on its own would wait for `EXEC` forever).
#[test]
fn exec_key_and_server_commands_run_inside_without_locking_again() {
    let server = server();
    let mut c = server.raw();
    c.call(&["SET", "k", "v"]);
    let inside: &[&[&str]] = &[
        &["OBJECT", "IDLETIME", "k"],
        &["OBJECT", "ENCODING", "k"],
        &["OBJECT", "FREQ", "k"],
        &["MEMORY", "USAGE", "k"],
        &["TYPE", "k"],
        &["TTL", "k"],
        &["TOUCH", "k"],
        &["EXISTS", "k"],
        &["COPY", "k", "k2"],
        &["RENAME", "k2", "k3"],
        &["KEYS", "*"],
        &["SCAN", "0"],
        &["RANDOMKEY"],
        &["DBSIZE"],
        &["INFO", "everything"],
    ];
    assert_eq!(c.call(&["MULTI"]), ok());
    for command in inside {
        assert_eq!(c.call(command), queued(), "{command:?}");
    }
    let Frame::Array(replies) = c.call(&["EXEC"]) else {
        panic!("EXEC replies an array")
    };
    assert_eq!(replies.len(), inside.len());
    // Whole seconds: a second's boundary may fall between the SET and the EXEC.
    assert!(
        matches!(replies[0], Frame::Int(0..=1)),
        "OBJECT IDLETIME {:?}",
        replies[0]
    );
    assert_eq!(replies[13], Frame::Int(2), "DBSIZE");
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
fn watch_then_disconnect_registry_forgets_keys() {
    let server = server();
    let mut a = server.raw();
    expect(&mut a, &[(&["WATCH", "k", "j"], ok()), (&["MULTI"], ok())]);
    assert_eq!(server.server.keyspace.watches().count(), 2);
    drop(a);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.server.keyspace.watches().count() != 0 {
        assert!(std::time::Instant::now() < deadline, "watches kept");
        thread::sleep(Duration::from_millis(10));
    }
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
            (&["INFO"], queued()),
            (&["CONFIG", "RESETSTAT"], queued()),
            (&["KEYS", "*"], queued()),
            (&["FLUSHALL"], queued()),
        ],
    );
    let Frame::Array(replies) = c.call(&["EXEC"]) else {
        panic!("EXEC replies an array");
    };
    assert_eq!(replies.len(), 9);
    assert!(
        replies.iter().all(|r| !matches!(r, Frame::Error(_))),
        "{replies:?}"
    );
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
    // Inside EXEC the transaction still shows, as in Redis 7.0.
    assert!(
        during.contains(" flags=x ") && during.contains(" multi=3 "),
        "{during}"
    );
    let after = info(&mut c);
    assert!(
        after.contains(" flags=N ") && after.contains(" multi=-1 "),
        "{after}"
    );
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
