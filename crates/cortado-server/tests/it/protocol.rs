//! The protocol on raw bytes: framing, pipelining, inline commands, malformed and hostile
//! input, and the limits of redis.conf, compared with `redis-server` where its answer is
//! deterministic.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::binary::ServerProcess;
use crate::common::compare::{exchange, read_until_quiet, Exchange, Pair};
use crate::common::{Frame, RawClient, TestServer};

/// Sends each input on a fresh connection to both servers; every answer (bytes and whether
/// the connection was closed) must be the same.
fn assert_same_exchanges(pair: &Pair, inputs: &[&[u8]]) {
    let mut differing = Vec::new();
    for input in inputs {
        let (want, got) = pair.exchange(input);
        if want != got {
            let shown = |bytes: &[u8]| {
                let text = String::from_utf8_lossy(bytes);
                text.chars().take(200).collect::<String>()
            };
            differing.push(format!(
                "{:?}\n  redis:   {:?} closed={}\n  cortado: {:?} closed={}",
                shown(input),
                shown(&want.received),
                want.closed,
                shown(&got.received),
                got.closed
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "answers differ:\n{}",
        differing.join("\n")
    );
}

#[test]
fn malformed_frames_get_redis_errors_and_close() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    assert_same_exchanges(
        &pair,
        &[
            // Negative, malformed and overflowing lengths.
            b"*1\r\n$-1\r\n",
            b"*1\r\n$-5\r\n",
            b"*-1\r\nPING\r\n",
            b"*-100\r\nPING\r\n",
            b"*0\r\nPING\r\n",
            b"*3000000000\r\n",
            b"*2147483648\r\n",
            b"*9223372036854775808\r\n",
            b"*1\r\n$536870913\r\n",
            b"*1\r\n$9223372036854775807\r\n",
            b"*+1\r\n",
            b"*01\r\n",
            b"*  1\r\n",
            b"*1 \r\n",
            b"*x\r\n",
            b"*1\r\nx\r\n",
            b"*1\r\n:1\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$+4\r\nPING\r\n",
            b"*1\n$4\r\nPING\r\n",
            b"*1\r\n$4\nPING\r\n",
            b"*1\r\r\n$4\r\nPING\r\n",
            // Redis skips the two bytes after a bulk without looking at them.
            b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n",
            // Replies before the error are sent, then the error, then the close.
            b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$-1\r\nPING\r\n",
            // Empty commands are ignored.
            b"\r\n\r\nPING\r\n",
            b" \r\n",
            b"*1\r\n$0\r\n\r\n",
            b"*2\r\n$0\r\n\r\n$1\r\na\r\n",
        ],
    );
}

#[test]
fn inline_commands_follow_redis_quoting() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    assert_same_exchanges(
        &pair,
        &[
            b"PING\r\n",
            b"PING\n",
            b"PING\r\r\n",
            b"   PING   \r\n",
            b"\tPING\t\r\n",
            b"ECHO \"a b\"\r\n",
            b"ECHO 'a b'\r\n",
            b"ECHO \"\\x41\\x4\" \r\n",
            b"ECHO \"\\x4g\"\r\n",
            b"ECHO \"\\xff\\x00\"\r\n",
            b"ECHO \"a\\\\b\"\r\n",
            b"ECHO 'a\\\\b'\r\n",
            b"ECHO 'a\\'b'\r\n",
            b"ECHO \"a\\'b\"\r\n",
            b"ECHO \"\\n\\r\\t\\b\\a\\q\"\r\n",
            b"ECHO \"\" \r\n",
            b"ECHO ''\r\n",
            b"ECHO a\"b\"\r\n",
            b"ECHO \"a\" \"b\"\r\n",
            b"ECHO \"a\"\tb\r\n",
            // Unbalanced quotes: a protocol error, and the connection closes.
            b"ECHO a'b\r\n",
            b"ECHO \"a\r\n",
            b"ECHO \"a\\\"\r\n",
            b"ECHO \"\\\"\r\n",
            b"ECHO \"a\"b\r\n",
            b"ECHO 'a'b\n",
            b"PING\r\nECHO \"x\r\nPING\r\n",
            // Unknown commands and wrong arity, inline.
            b"FOO bar baz\r\n",
            b"foo \"a b\" c\r\n",
            b"GET\r\n",
            b"ping a b c\r\n",
        ],
    );
}

#[test]
fn unknown_command_errors_quote_bytes_as_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let long = format!("*2\r\n$3\r\nFOO\r\n$300\r\n{}\r\n", "a".repeat(300));
    let many = format!("FOO {}\r\n", "ab ".repeat(100));
    let binary = {
        let mut b = b"*2\r\n$3\r\nFOO\r\n$300\r\n".to_vec();
        b.extend(std::iter::repeat_n(0xff, 300));
        b.extend_from_slice(b"\r\n");
        b
    };
    let name = format!("{}\r\n", "F".repeat(200));
    assert_same_exchanges(
        &pair,
        &[
            long.as_bytes(),
            many.as_bytes(),
            &binary,
            name.as_bytes(),
            // C's printf stops at a zero byte, and so does Redis's message.
            b"*2\r\n$3\r\nF\x00O\r\n$3\r\na\x00b\r\n",
            b"*2\r\n$6\r\nCLIENT\r\n$3\r\na\x00b\r\n",
            b"*2\r\n$6\r\nclient\r\n$3\r\nfoo\r\n",
            b"*1\r\n$6\r\nconfig\r\n",
        ],
    );
}

#[test]
fn command_split_at_every_byte_is_answered_once_whole() {
    let server = TestServer::start();
    let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nECHO \"in line\"\r\n";
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_nodelay(true).unwrap();
    for byte in input {
        stream.write_all(&[*byte]).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    }
    let answer = read_until_quiet(&mut stream, Duration::from_millis(300));
    assert_eq!(
        answer.text(),
        "+OK\r\n$5\r\nva\r\nl\r\n$7\r\nin line\r\n",
        "closed={}",
        answer.closed
    );
}

/// A counter of `INFO stats`.
fn stat(client: &mut RawClient, field: &str) -> i64 {
    let info = client.call(&["INFO", "stats"]).text();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn pipeline_replies_are_written_together() {
    let server = TestServer::start();
    let mut observer = server.raw();
    let mut client = server.raw();
    let writes_before = stat(&mut observer, "total_writes_processed");
    let mut pipeline = Vec::new();
    for i in 0..200 {
        pipeline.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n$3\r\n{i:03}\r\n").as_bytes());
    }
    client.send(&pipeline);
    for i in 0..200 {
        assert_eq!(client.read(), Some(Frame::bulk(&format!("{i:03}"))));
    }
    // The observer's INFO is one write; the 200 replies took a write per read of the
    // pipeline (a few), not one each.
    let writes = stat(&mut observer, "total_writes_processed") - writes_before;
    assert!(
        writes <= 6,
        "{writes} writes for a pipeline of 200 commands"
    );
}

#[test]
fn client_that_disconnects_mid_frame_leaves_others_untouched() {
    let server = TestServer::start();
    let mut other = server.raw();
    assert_eq!(other.call(&["SET", "a", "1"]), Frame::Simple("OK".into()));
    let mut quitter = TcpStream::connect(server.addr).unwrap();
    quitter
        .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$10\r\n01234")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    drop(quitter);
    // And one that leaves mid-header, mid-inline.
    for partial in [&b"*2\r\n$3\r\nGE"[..], b"ECHO \"unfinished"] {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(partial).unwrap();
        drop(s);
    }
    assert_eq!(other.call(&["GET", "a"]), Frame::bulk("1"));
    assert_eq!(other.call(&["EXISTS", "b"]), Frame::Int(0));
    let started = Instant::now();
    while server.server.clients.len() > 1 {
        assert!(started.elapsed() < Duration::from_secs(5), "clients left");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn binary_arguments_round_trip() {
    let server = TestServer::start();
    let mut client = server.raw();
    let all: Vec<u8> = (0..=255u8).collect();
    let mut key = b"k\r\n\x00".to_vec();
    key.extend_from_slice(&all);
    let value: Vec<u8> = all.iter().rev().copied().cycle().take(100_000).collect();
    client.send_command(&[b"SET", &key, &value]);
    assert_eq!(client.read(), Some(Frame::Simple("OK".into())));
    client.send_command(&[b"GET", &key]);
    assert_eq!(client.read(), Some(Frame::Bulk(value)));
    client.send_command(&[b"ECHO", b"\r\n*1\r\n$4\r\nPING\r\n"]);
    assert_eq!(
        client.read(),
        Some(Frame::Bulk(b"\r\n*1\r\n$4\r\nPING\r\n".to_vec()))
    );
}

#[test]
fn unauthenticated_limits_match_redis() {
    let Some(pair) = Pair::start(&["--requirepass", "secret"]) else {
        return;
    };
    let big = format!("*2\r\n$4\r\nAUTH\r\n$16385\r\n{}\r\n", "x".repeat(16385));
    let fits = format!("*2\r\n$4\r\nAUTH\r\n$16384\r\n{}\r\n", "x".repeat(16384));
    assert_same_exchanges(
        &pair,
        &[
            b"*11\r\n",
            b"*10\r\n$3\r\nFOO\r\n",
            b"*1\r\n$16385\r\n",
            big.as_bytes(),
            fits.as_bytes(),
            // Once authenticated, the limits are the usual ones.
            b"*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*12\r\n$4\r\nECHO\r\n",
            b"*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n",
            // Unknown commands and arity are checked before authentication, as in Redis.
            b"FOO\r\nGET\r\nGET k\r\nPING\r\nQUIT\r\n",
        ],
    );
}

#[test]
fn proto_max_bulk_len_and_query_buffer_limit_match_redis() {
    let Some(pair) = Pair::start(&[
        "--proto-max-bulk-len",
        "1mb",
        "--client-query-buffer-limit",
        "1mb",
    ]) else {
        return;
    };
    // A bulk of exactly proto-max-bulk-len is allowed, but with its header it passes the
    // query buffer limit: closed without a reply, as in Redis.
    let whole = format!(
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n{}\r\n",
        "v".repeat(1 << 20)
    );
    let under_limit = format!(
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n{}",
        "v".repeat((1 << 20) - 100)
    );
    let inline = format!("ECHO {}\r\n", "x".repeat(70_000));
    assert_same_exchanges(
        &pair,
        &[
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n",
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n",
            inline.as_bytes(),
        ],
    );
    let (want, got) = pair.exchange(whole.as_bytes());
    assert_eq!(got, want);
    assert_eq!(
        got,
        Exchange {
            received: Vec::new(),
            closed: true
        }
    );
    // Just under the limit waits for the rest, in both.
    let (want, got) = pair.exchange(under_limit.as_bytes());
    assert_eq!(got, want);
    assert!(!got.closed);
}

#[test]
fn maxclients_refuses_the_next_connection_as_redis() {
    let Some(pair) = Pair::start(&["--maxclients", "2"]) else {
        return;
    };
    // Each server may still count the connection that found it ready: both limits fill with
    // clients that were served before the third is tried.
    let served = |addr| served_client(addr, Duration::from_secs(5));
    let (_r1, mut c1) = (served(pair.redis.addr), served(pair.server.addr));
    let (_r2, c2) = (served(pair.redis.addr), served(pair.server.addr));
    let (want, got) = pair.exchange(b"PING\r\n");
    assert_eq!(got, want);
    assert_eq!(got.text(), "-ERR max number of clients reached\r\n");
    assert!(got.closed);
    drop(c2);
    // Once one leaves, a new client is served again.
    let started = Instant::now();
    loop {
        let answer = exchange(pair.server.addr, b"PING\r\n");
        if answer.text() == "+PONG\r\n" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{answer:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(stat(&mut c1, "rejected_connections") >= 1);
}

/// A connection to `addr` that has answered PING, retried while the server refuses it for
/// being at `maxclients` (a closed connection leaves its count a moment later).
fn served_client(addr: std::net::SocketAddr, patience: Duration) -> RawClient {
    let started = Instant::now();
    loop {
        let mut client = RawClient::connect(addr);
        match client.call(&["PING"]) {
            Frame::Simple(pong) if pong == "PONG" => return client,
            other => assert!(started.elapsed() < patience, "{addr}: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn timeout_closes_idle_clients_only() {
    let server = TestServer::with_args(&["--timeout", "1"]);
    let mut idle = server.raw();
    let mut busy = server.raw();
    assert_eq!(idle.call(&["PING"]), Frame::Simple("PONG".into()));
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        assert_eq!(busy.call(&["PING"]), Frame::Simple("PONG".into()));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(idle.is_closed(), "the idle client was not closed");
    assert_eq!(busy.call(&["PING"]), Frame::Simple("PONG".into()));
    // A monitor idles without being closed, as in Redis.
    let mut monitor = server.raw();
    assert_eq!(monitor.call(&["MONITOR"]), Frame::Simple("OK".into()));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(server.raw().call(&["PING"]), Frame::Simple("PONG".into()));
    let line = monitor.read().expect("the monitor is open");
    assert!(line.text().ends_with("\"PING\""), "{line:?}");
}

#[test]
fn output_buffer_hard_limit_closes_the_client_as_redis() {
    let Some(pair) = Pair::start(&["--client-output-buffer-limit", "normal 1mb 0 0"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let value = "v".repeat(2 << 20);
    for client in [&mut redis, &mut ours] {
        assert_eq!(
            client.call(&["SET", "big", &value]),
            Frame::Simple("OK".into())
        );
        assert_eq!(
            client.call(&["SET", "small", "x"]),
            Frame::Simple("OK".into())
        );
        // One reply over the hard limit: closed without it.
        client.send_command(&[b"GET", b"big"]);
        assert_eq!(client.read(), None, "a reply over the hard limit was sent");
    }
    // A client that pipelines without reading is closed once its replies pass the limit;
    // one that reads as it goes is not.
    for addr in [pair.redis.addr, pair.server.addr] {
        let mut reader = RawClient::connect(addr);
        for _ in 0..100 {
            assert_eq!(reader.call(&["GET", "small"]), Frame::bulk("x"));
        }
        let mut stream = TcpStream::connect(addr).unwrap();
        let mut pipeline = Vec::new();
        for _ in 0..20_000 {
            pipeline.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$5\r\nsmall\r\n");
            pipeline.extend_from_slice(b"*2\r\n$4\r\nECHO\r\n$1000\r\n");
            pipeline.extend(std::iter::repeat_n(b'e', 1000));
            pipeline.extend_from_slice(b"\r\n");
        }
        // The server may close before taking everything.
        let _ = stream.write_all(&pipeline);
        std::thread::sleep(Duration::from_millis(300));
        let answer = read_until_quiet(&mut stream, Duration::from_millis(500));
        assert!(answer.closed, "{addr}: not closed");
        assert!(
            answer.received.len() < 20_000 * 1017,
            "{addr}: every reply arrived"
        );
    }
}

#[test]
fn output_buffer_soft_limit_closes_after_its_seconds() {
    let server = TestServer::with_args(&["--client-output-buffer-limit", "normal 0 100kb 1"]);
    let mut client = server.raw();
    let value = "v".repeat(200 * 1024);
    assert_eq!(
        client.call(&["SET", "big", &value]),
        Frame::Simple("OK".into())
    );
    // Over the soft limit only for an instant: served.
    assert_eq!(
        client.call(&["GET", "big"]),
        Frame::Bulk(value.into_bytes())
    );
    // Kept over it (nothing read) for longer than a second: closed at the next reply.
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let request = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(200);
    stream.write_all(&request).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = stream.write_all(b"PING\r\n");
    std::thread::sleep(Duration::from_millis(200));
    let answer = read_until_quiet(&mut stream, Duration::from_millis(500));
    assert!(
        answer.closed,
        "not closed after {} bytes",
        answer.received.len()
    );
    assert!(answer.received.len() < 200 * 200 * 1024);
}

/// `used_memory` of a process's `INFO memory`.
fn used_memory(client: &mut RawClient) -> i64 {
    let info = client.call(&["INFO", "memory"]).text();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .expect("used_memory")
        .trim()
        .parse()
        .unwrap()
}

/// Lengths a client only claims take no memory: the binary counts every allocation, and
/// claims of 2^31 arguments and of a 512 MB argument (Redis allocates the latter) leave
/// `used_memory` where it was, give or take the bytes actually sent.
#[test]
fn huge_claimed_lengths_allocate_nothing() {
    let server = ServerProcess::start(&["--loglevel", "warning"]);
    let mut observer = server.raw();
    let before = used_memory(&mut observer);
    let mut claimers = Vec::new();
    for claim in [
        &b"*2147483647\r\n"[..],
        b"*2147483647\r\n$3\r\nSET\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n0123456789",
    ] {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(claim).unwrap();
        claimers.push(stream);
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = used_memory(&mut observer);
    assert!(
        after - before < 512 * 1024,
        "used_memory grew by {} bytes for claims alone",
        after - before
    );
    // The claims wait for their bytes; the server answers the others meanwhile.
    for stream in &mut claimers {
        let answer = read_until_quiet(stream, Duration::from_millis(100));
        assert_eq!(
            answer,
            Exchange {
                received: Vec::new(),
                closed: false
            }
        );
    }
    assert_eq!(observer.call(&["PING"]), Frame::Simple("PONG".into()));
}
