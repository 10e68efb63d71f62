//! Publish/subscribe against `redis-server`: confirmations over RESP2 and RESP3, messages and
//! pattern messages, the subscribed mode's refusals, `PUBSUB`'s counts, `CLIENT LIST`'s and
//! `INFO`'s figures; and the slow subscriber closed at the hard output limit while the others
//! go on.

use std::time::{Duration, Instant};

use crate::common::compare::Pair;
use crate::common::{Frame, RawClient, TestServer};

/// The frames a command brings back (a `SUBSCRIBE` of N channels brings N): everything read
/// before the reply of a `PING` sent after it.
pub fn frames(client: &mut RawClient, args: &[&str]) -> Vec<Frame> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.send_command(&bytes);
    client.send_command(&[b"PING", b"end-of-reply"]);
    let mut out = Vec::new();
    loop {
        let frame = client.read().expect("a reply");
        let end = match &frame {
            Frame::Bulk(b) => b == b"end-of-reply",
            Frame::Array(items) => items.get(1) == Some(&Frame::bulk("end-of-reply")),
            _ => false,
        };
        if end {
            return out;
        }
        out.push(frame);
    }
}

/// Runs each step (a connection's index and a command) on both servers, comparing the frames
/// each brings back (for `HELLO`, which names each server, only their number); `clients`
/// connections each.
pub fn same_frames(pair: &Pair, clients: usize, hello3: bool, steps: &[(usize, &[&str])]) {
    let mut redis: Vec<RawClient> = (0..clients).map(|_| pair.redis.raw()).collect();
    let mut ours: Vec<RawClient> = (0..clients).map(|_| pair.server.raw()).collect();
    if hello3 {
        for client in redis.iter_mut().chain(ours.iter_mut()) {
            assert!(matches!(client.call(&["HELLO", "3"]), Frame::Map(_)));
        }
    }
    let mut differing = Vec::new();
    for &(i, args) in steps {
        let want = frames(&mut redis[i], args);
        let got = frames(&mut ours[i], args);
        let same = if args[0] == "HELLO" {
            want.len() == got.len()
        } else {
            want == got
        };
        if !same {
            differing.push(format!(
                "client {i} {args:?}\n  redis:   {want:?}\n  cortado: {got:?}"
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "replies differ:\n{}",
        differing.join("\n")
    );
}

/// What both protocols run: subscriptions of every kind, messages to a subscriber from another
/// client and to itself, counts, and unsubscribing from all.
const SESSION: &[(usize, &[&str])] = &[
    (0, &["UNSUBSCRIBE"]),
    (0, &["PUNSUBSCRIBE"]),
    (0, &["SUNSUBSCRIBE"]),
    (0, &["SUBSCRIBE", "a", "b", "a"]),
    (0, &["PSUBSCRIBE", "p*", "p*", "q?"]),
    (0, &["SSUBSCRIBE", "s1", "s2"]),
    (1, &["PUBLISH", "a", "hello"]),
    (1, &["PUBLISH", "pa", "to a pattern"]),
    (1, &["PUBLISH", "nobody", "x"]),
    (1, &["SPUBLISH", "s1", "shard"]),
    (1, &["SPUBLISH", "a", "not a shard channel"]),
    (1, &["PUBSUB", "NUMSUB", "a", "b", "c"]),
    (1, &["PUBSUB", "NUMSUB"]),
    (1, &["PUBSUB", "SHARDNUMSUB", "s1", "s3"]),
    (1, &["PUBSUB", "NUMPAT"]),
    (1, &["PUBSUB", "CHANNELS", "b*"]),
    (1, &["PUBSUB", "SHARDCHANNELS", "s1"]),
    (1, &["PUBSUB", "CHANNELS", "a", "b"]),
    (1, &["PUBSUB", "NUMPAT", "x"]),
    (1, &["PUBSUB", "FOO"]),
    (1, &["PUBSUB", "HELP"]),
    (1, &["PUBLISH", "a"]),
    (0, &["PING"]),
    (0, &["PING", "hi"]),
    (0, &["UNSUBSCRIBE", "b", "zz"]),
    (0, &["PUNSUBSCRIBE", "p*"]),
    (0, &["PUNSUBSCRIBE"]),
    // Unsubscribing from all walks a hash table in Redis: one channel left keeps it
    // deterministic.
    (0, &["SUNSUBSCRIBE", "s2"]),
    (0, &["SUNSUBSCRIBE"]),
    (0, &["UNSUBSCRIBE"]),
    (0, &["PING"]),
    (0, &["SUBSCRIBE", "c"]),
    (1, &["PSUBSCRIBE", "c*"]),
    (1, &["PUBLISH", "c", "both"]),
    (0, &["RESET"]),
    (1, &["PUBLISH", "c", "after reset"]),
    (1, &["PUBSUB", "NUMSUB", "c"]),
    (0, &["SUBSCRIBE"]),
];

#[test]
fn pubsub_session_over_resp2_matches_redis() {
    let Some(pair) = Pair::start(&[]) else { return };
    same_frames(&pair, 2, false, SESSION);
}

#[test]
fn pubsub_session_over_resp3_matches_redis() {
    let Some(pair) = Pair::start(&[]) else { return };
    same_frames(&pair, 2, true, SESSION);
}

#[test]
fn resp3_subscriber_gets_its_own_message_before_the_reply() {
    let Some(pair) = Pair::start(&[]) else { return };
    same_frames(
        &pair,
        1,
        true,
        &[
            (0, &["SUBSCRIBE", "me"]),
            (0, &["PSUBSCRIBE", "m*"]),
            (0, &["PUBLISH", "me", "hi"]),
            (0, &["SET", "k", "v"]),
            (0, &["GET", "k"]),
            (0, &["HELLO", "2"]),
            (0, &["GET", "k"]),
            (0, &["PING"]),
        ],
    );
}

#[test]
fn resp2_subscriber_may_send_only_subscription_commands() {
    let Some(pair) = Pair::start(&[]) else { return };
    same_frames(
        &pair,
        1,
        false,
        &[
            (0, &["SUBSCRIBE", "a"]),
            (0, &["GET", "k"]),
            (0, &["SET", "k", "v"]),
            (0, &["CLIENT", "LIST"]),
            (0, &["HELLO", "3"]),
            (0, &["PUBLISH", "a", "x"]),
            (0, &["NOSUCH"]),
            (0, &["GET"]),
            (0, &["PING", "a", "b"]),
            (0, &["SSUBSCRIBE", "s"]),
            (0, &["RESET"]),
            (0, &["GET", "k"]),
        ],
    );
}

#[test]
fn unsubscribe_from_all_confirms_each_channel_counting_down() {
    let server = TestServer::start();
    let mut sub = server.raw();
    frames(&mut sub, &["SUBSCRIBE", "a", "b", "c"]);
    frames(&mut sub, &["PSUBSCRIBE", "p1", "p2"]);
    let left = frames(&mut sub, &["UNSUBSCRIBE"]);
    let mut names = Vec::new();
    for (i, frame) in left.iter().enumerate() {
        let Frame::Array(parts) = frame else {
            panic!("{frame:?}")
        };
        assert_eq!(parts[0], Frame::bulk("unsubscribe"));
        names.push(parts[1].text());
        // The patterns still count.
        assert_eq!(parts[2], Frame::Int(4 - i as i64));
    }
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
    let left = frames(&mut sub, &["PUNSUBSCRIBE"]);
    let in_order = |kind: &str, name: &str, n| {
        Frame::Array(vec![Frame::bulk(kind), Frame::bulk(name), Frame::Int(n)])
    };
    assert_eq!(
        left,
        [
            in_order("punsubscribe", "p1", 1),
            in_order("punsubscribe", "p2", 0)
        ]
    );
    // Out of subscribed mode: a plain reply again.
    assert_eq!(sub.call(&["PING"]), Frame::Simple("PONG".into()));
}

#[test]
fn client_list_and_info_count_subscriptions() {
    let server = TestServer::start();
    let mut sub = server.raw();
    sub.call(&["HELLO", "3"]);
    frames(&mut sub, &["SUBSCRIBE", "a", "b"]);
    frames(&mut sub, &["PSUBSCRIBE", "x*"]);
    frames(&mut sub, &["SSUBSCRIBE", "s"]);
    let line = sub.call(&["CLIENT", "INFO"]).text();
    assert!(line.contains(" flags=P "), "{line}");
    assert!(line.contains(" sub=2 psub=1 ssub=1 "), "{line}");
    let mut other = server.raw();
    let info = other.call(&["INFO", "stats"]).text();
    for field in [
        "pubsub_channels:2",
        "pubsub_patterns:1",
        "pubsubshard_channels:1",
    ] {
        assert!(info.contains(field), "{field} in {info}");
    }
    let pubsub = other.call(&["CLIENT", "LIST", "TYPE", "pubsub"]).text();
    assert_eq!(pubsub.lines().count(), 1, "{pubsub}");
    // Gone with the connection.
    drop(sub);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let info = other.call(&["INFO", "stats"]).text();
        if info.contains("pubsub_channels:0") && info.contains("pubsub_patterns:0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "subscriptions outlived the client"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn slow_subscriber_over_hard_limit_is_closed_and_others_unaffected() {
    // 2 MB hard limit, no soft limit; the slow subscriber never reads.
    let server = TestServer::with_args(&["--client-output-buffer-limit", "pubsub 2mb 0 0"]);
    let mut slow = server.raw();
    let mut fast = server.raw();
    frames(&mut slow, &["SUBSCRIBE", "news"]);
    frames(&mut fast, &["SUBSCRIBE", "news"]);
    let mut publisher = server.raw();
    let payload = "x".repeat(64 * 1024);
    // 40 MB in all, far past what the slow client's socket buffers and the limit hold.
    let messages = 640;
    // In lockstep with the fast subscriber, which so never has more than one message waiting.
    for _ in 0..messages {
        let n = publisher.call(&["PUBLISH", "news", &payload]).int();
        assert!((1..=2).contains(&n), "{n}");
        match fast.read() {
            Some(Frame::Array(parts)) if parts.len() == 3 => {}
            other => panic!("the fast subscriber got {other:?}"),
        }
    }
    assert_eq!(
        frames(&mut fast, &["PING"]),
        vec![Frame::Array(vec![Frame::bulk("pong"), Frame::bulk("")])]
    );
    // The slow one was closed: what it can still read ends early, and it is gone from the
    // registry and the client list.
    let deadline = Instant::now() + Duration::from_secs(10);
    while publisher
        .call(&["PUBSUB", "NUMSUB", "news"])
        .eq(&Frame::Array(vec![Frame::bulk("news"), Frame::Int(2)]))
    {
        assert!(
            Instant::now() < deadline,
            "the slow subscriber was not closed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut read = 0;
    while let Some(frame) = slow.read() {
        assert!(matches!(frame, Frame::Array(_)), "{frame:?}");
        read += 1;
    }
    assert!(
        read < messages,
        "the slow subscriber read all {read} messages"
    );
    assert_eq!(publisher.call(&["PUBLISH", "news", "still here"]).int(), 1);
    let listed = publisher.call(&["CLIENT", "LIST"]).text();
    assert_eq!(listed.lines().count(), 2, "{listed}");
}

#[test]
fn slow_subscriber_over_soft_limit_for_its_seconds_is_closed() {
    // No hard limit; 256 KB soft limit held for 1 s. The subscriber never reads.
    let server = TestServer::with_args(&["--client-output-buffer-limit", "pubsub 0 256kb 1"]);
    let mut slow = server.raw();
    frames(&mut slow, &["SUBSCRIBE", "news"]);
    let mut publisher = server.raw();
    let payload = "x".repeat(16 * 1024);
    let start = Instant::now();
    let mut closed_after = None;
    // Keep it over the soft limit (its socket buffers fill first) for longer than 1 s.
    while start.elapsed() < Duration::from_secs(10) {
        publisher.call(&["PUBLISH", "news", &payload]);
        let numsub = publisher.call(&["PUBSUB", "NUMSUB", "news"]);
        if numsub == Frame::Array(vec![Frame::bulk("news"), Frame::Int(0)]) {
            closed_after = Some(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let closed_after = closed_after.expect("the slow subscriber was never closed");
    assert!(
        closed_after >= Duration::from_secs(1),
        "closed after {closed_after:?}, before its soft-limit seconds"
    );
}
