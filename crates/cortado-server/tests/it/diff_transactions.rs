//! Transactions against `redis-server`: the same scripts over two connections to each, every
//! reply compared (see `transactions.rs` for the rules alone and the concurrent patterns).

use std::thread;
use std::time::Duration;

use crate::common::{Frame, RawClient, RealRedis, TestServer};

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
            On(0, &["SET", "w", "1"]),
            On(0, &["WATCH", "w"]),
            On(0, &["EXEC", "x"]),
            On(1, &["SET", "w", "2"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "w"]),
            On(0, &["EXEC"]),
            On(0, &["DISCARD", "x"]),
            On(0, &["WATCH"]),
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
            On(0, &["WATCH", "b"]),
            On(0, &["MULTI"]),
            On(0, &["SET", "b", "3"]),
            On(0, &["RESET"]),
            On(0, &["EXEC"]),
            On(1, &["SET", "b", "4"]),
            On(0, &["MULTI"]),
            On(0, &["GET", "b"]),
            On(0, &["EXEC"]),
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
