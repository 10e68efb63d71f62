//! The blocking commands with several clients: timeouts, service in blocking order, pushes
//! from other clients, `MULTI` and scripts, disconnects, and pipelines behind a blocked
//! command. Replies and errors against `redis-server` are in `diff_lists.rs` and
//! `diff_zsets.rs`.

use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Frame, RawClient, TestServer};

fn bulk(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

fn array(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

fn send(client: &mut RawClient, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.send_command(&args);
}

/// Waits until the server counts `n` blocked clients (so the order of blocking is known).
fn wait_blocked(client: &mut RawClient, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let info = client.call(&["INFO", "clients"]).text();
        let blocked = info
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .expect("INFO clients has blocked_clients");
        if blocked == n {
            return;
        }
        assert!(Instant::now() < deadline, "{blocked} blocked, not {n}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn blpop_timeout_replies_nil_after_its_time() {
    let server = TestServer::start();
    let mut a = server.raw();
    let started = Instant::now();
    assert_eq!(a.call(&["BLPOP", "l", "0.2"]), Frame::Null);
    assert!(started.elapsed() >= Duration::from_millis(190));
    let mut b = server.raw();
    wait_blocked(&mut b, 0);
}

#[test]
fn blpop_push_from_another_client_serves_waiter() {
    let server = TestServer::start();
    let (mut a, mut b) = (server.raw(), server.raw());
    send(&mut a, &["BLPOP", "l", "other", "0"]);
    wait_blocked(&mut b, 1);
    assert_eq!(b.call(&["RPUSH", "l", "x", "y"]), Frame::Int(2));
    assert_eq!(a.read().unwrap(), array(&["l", "x"]));
    assert_eq!(b.call(&["LRANGE", "l", "0", "-1"]), array(&["y"]));
    wait_blocked(&mut b, 0);
}

#[test]
fn swapdb_filling_waited_key_serves_waiter_as_redis() {
    let server = TestServer::start();
    let (mut a, mut b, mut c) = (server.raw(), server.raw(), server.raw());
    assert_eq!(a.call(&["SELECT", "1"]), Frame::Simple("OK".into()));
    send(&mut a, &["BLPOP", "k", "0"]);
    assert_eq!(c.call(&["SELECT", "1"]), Frame::Simple("OK".into()));
    send(&mut c, &["BLPOP", "missing", "0"]);
    wait_blocked(&mut b, 2);
    assert_eq!(b.call(&["RPUSH", "k", "x", "y"]), Frame::Int(2));
    assert_eq!(
        b.call(&["SET", "missing", "string"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(b.call(&["SWAPDB", "0", "1"]), Frame::Simple("OK".into()));
    assert_eq!(a.read().unwrap(), array(&["k", "x"]));
    // A waited key that the swap filled with another type leaves its waiter blocked.
    wait_blocked(&mut b, 1);
    assert_eq!(b.call(&["SELECT", "1"]), Frame::Simple("OK".into()));
    assert_eq!(b.call(&["LRANGE", "k", "0", "-1"]), array(&["y"]));
    let id = blocked_client_id(&mut b, 1);
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id]), Frame::Int(1));
    assert_eq!(c.read().unwrap(), Frame::Null);
}

/// The id of the first client `CLIENT LIST` shows blocked (flag `b`, as Redis shows it),
/// checking that `blocked` are.
fn blocked_client_id(client: &mut RawClient, blocked: usize) -> String {
    let list = client.call(&["CLIENT", "LIST"]).text();
    let ids: Vec<&str> = list
        .lines()
        .filter(|l| l.split(' ').any(|f| f == "flags=b"))
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .collect();
    assert_eq!(ids.len(), blocked, "{list}");
    ids[0].to_string()
}

#[test]
fn blpop_several_waiters_served_in_blocking_order() {
    let server = TestServer::start();
    let mut pusher = server.raw();
    let mut waiters: Vec<RawClient> = Vec::new();
    for i in 0..3 {
        let mut w = server.raw();
        send(&mut w, &["BRPOP", "q", "0"]);
        wait_blocked(&mut pusher, i + 1);
        waiters.push(w);
    }
    assert_eq!(pusher.call(&["LPUSH", "q", "1", "2"]), Frame::Int(2));
    assert_eq!(waiters[0].read().unwrap(), array(&["q", "1"]));
    assert_eq!(waiters[1].read().unwrap(), array(&["q", "2"]));
    wait_blocked(&mut pusher, 1);
    pusher.call(&["RPUSH", "q", "3"]);
    assert_eq!(waiters[2].read().unwrap(), array(&["q", "3"]));
    assert_eq!(pusher.call(&["EXISTS", "q"]), Frame::Int(0));
}

#[test]
fn blpop_disconnected_waiter_leaves_no_trace() {
    let server = TestServer::start();
    let mut b = server.raw();
    {
        let mut a = server.raw();
        send(&mut a, &["BLPOP", "l", "0"]);
        wait_blocked(&mut b, 1);
    }
    wait_blocked(&mut b, 0);
    b.call(&["RPUSH", "l", "x"]);
    assert_eq!(b.call(&["LLEN", "l"]), Frame::Int(1));
}

#[test]
fn blocking_inside_multi_and_scripts_does_not_block() {
    let server = TestServer::start();
    let mut a = server.raw();
    a.call(&["MULTI"]);
    a.call(&["BLPOP", "l", "0"]);
    a.call(&["BLMOVE", "l", "m", "LEFT", "LEFT", "0"]);
    a.call(&["BZPOPMIN", "z", "0"]);
    assert_eq!(
        a.call(&["EXEC"]),
        Frame::Array(vec![Frame::Null, Frame::Null, Frame::Null])
    );
    assert_eq!(
        a.call(&[
            "EVAL",
            "return redis.call('BLMPOP', '0', '1', KEYS[1], 'LEFT')",
            "1",
            "l"
        ]),
        Frame::Null
    );
}

#[test]
fn push_inside_multi_serves_waiter_after_exec() {
    let server = TestServer::start();
    let (mut a, mut b) = (server.raw(), server.raw());
    send(&mut a, &["BLPOP", "l", "0"]);
    wait_blocked(&mut b, 1);
    b.call(&["MULTI"]);
    b.call(&["RPUSH", "l", "a"]);
    b.call(&["LPUSH", "l", "b"]);
    assert_eq!(
        b.call(&["EXEC"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(2)])
    );
    assert_eq!(a.read().unwrap(), array(&["l", "b"]));
    assert_eq!(b.call(&["LRANGE", "l", "0", "-1"]), array(&["a"]));
}

#[test]
fn blmove_served_element_wakes_waiter_on_destination() {
    let server = TestServer::start();
    let (mut a, mut b, mut c) = (server.raw(), server.raw(), server.raw());
    send(&mut a, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]);
    wait_blocked(&mut c, 1);
    send(&mut b, &["BRPOP", "dst", "0"]);
    wait_blocked(&mut c, 2);
    c.call(&["RPUSH", "src", "x"]);
    assert_eq!(a.read().unwrap(), bulk("x"));
    assert_eq!(b.read().unwrap(), array(&["dst", "x"]));
    assert_eq!(c.call(&["EXISTS", "src", "dst"]), Frame::Int(0));
}

#[test]
fn bzpopmin_and_bzmpop_served_by_zadd() {
    let server = TestServer::start();
    let (mut a, mut b, mut c) = (server.raw(), server.raw(), server.raw());
    send(&mut a, &["BZPOPMIN", "z", "0"]);
    wait_blocked(&mut c, 1);
    send(&mut b, &["BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"]);
    wait_blocked(&mut c, 2);
    c.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(a.read().unwrap(), array(&["z", "a", "1"]));
    assert_eq!(
        b.read().unwrap(),
        Frame::Array(vec![
            bulk("z"),
            Frame::Array(vec![array(&["c", "3"]), array(&["b", "2"])])
        ])
    );
}

#[test]
fn pipeline_behind_blocked_command_runs_after_it() {
    let server = TestServer::start();
    let (mut a, mut b) = (server.raw(), server.raw());
    let mut both = Vec::new();
    for cmd in [&[&b"BLPOP"[..], b"l", b"0"][..], &[b"PING"]] {
        both.extend_from_slice(format!("*{}\r\n", cmd.len()).as_bytes());
        for arg in cmd {
            both.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            both.extend_from_slice(arg);
            both.extend_from_slice(b"\r\n");
        }
    }
    a.send(&both);
    wait_blocked(&mut b, 1);
    b.call(&["RPUSH", "l", "x"]);
    assert_eq!(a.read().unwrap(), array(&["l", "x"]));
    assert_eq!(a.read().unwrap(), Frame::Simple("PONG".into()));
}

#[test]
fn blocking_timeout_zero_waits_for_ever_until_served() {
    let server = TestServer::start();
    let (mut a, mut b) = (server.raw(), server.raw());
    send(&mut a, &["BRPOPLPUSH", "l", "m", "0"]);
    wait_blocked(&mut b, 1);
    thread::sleep(Duration::from_millis(300));
    wait_blocked(&mut b, 1);
    b.call(&["RPUSH", "l", "x"]);
    assert_eq!(a.read().unwrap(), bulk("x"));
    assert_eq!(b.call(&["LRANGE", "m", "0", "-1"]), array(&["x"]));
}

#[test]
fn client_unblock_ends_wait_as_timeout_or_error() {
    let server = TestServer::start();
    let (mut a, mut b) = (server.raw(), server.raw());
    let Frame::Int(id) = a.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    let id = id.to_string();
    send(&mut a, &["BLPOP", "l", "0"]);
    wait_blocked(&mut b, 1);
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id]), Frame::Int(1));
    assert_eq!(a.read().unwrap(), Frame::Null);
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id]), Frame::Int(0));
    send(&mut a, &["BZPOPMAX", "z", "0"]);
    wait_blocked(&mut b, 1);
    assert_eq!(
        b.call(&["CLIENT", "UNBLOCK", &id, "FOO"]),
        Frame::Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into())
    );
    assert_eq!(b.call(&["CLIENT", "UNBLOCK", &id, "ERROR"]), Frame::Int(1));
    assert_eq!(
        a.read().unwrap(),
        Frame::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into())
    );
    // Unblocked, the element pushed later stays.
    b.call(&["ZADD", "z", "1", "m"]);
    assert_eq!(b.call(&["ZCARD", "z"]), Frame::Int(1));
}
