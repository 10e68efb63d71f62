//! The server end to end through the `redis` crate, over RESP2 and RESP3.

use std::time::Duration;

use redis::Commands;

use crate::common::{Frame, TestServer};

#[test]
fn redis_crate_set_get_over_resp2_and_resp3() {
    let server = TestServer::start();
    for mut con in [server.redis(), server.redis3()] {
        let _: () = con.set("greeting", "hello").unwrap();
        let value: String = con.get("greeting").unwrap();
        assert_eq!(value, "hello");
        let missing: Option<String> = con.get("missing").unwrap();
        assert_eq!(missing, None);
        let n: i64 = con.incr("counter", 5).unwrap();
        assert!(n == 5 || n == 10);
    }
}

#[test]
fn pipeline_replies_arrive_in_order() {
    let server = TestServer::start();
    let mut con = server.redis();
    let mut pipe = redis::pipe();
    for i in 0..100 {
        pipe.set(format!("k{i}"), i).ignore().get(format!("k{i}"));
    }
    let values: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(values, (0..100).collect::<Vec<_>>());
}

#[test]
fn expiry_with_manual_clock_is_exact_to_the_millisecond() {
    let server = TestServer::with_manual_clock(&[]);
    let mut client = server.raw();
    assert_eq!(
        client.call(&["SET", "k", "v", "PX", "1000"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(client.call(&["PTTL", "k"]), Frame::Int(1000));
    server.advance(Duration::from_millis(1000));
    // Redis keeps a key through its expiry millisecond.
    assert_eq!(client.call(&["GET", "k"]), Frame::bulk("v"));
    server.advance(Duration::from_millis(1));
    assert_eq!(client.call(&["GET", "k"]), Frame::Null);
    assert_eq!(client.call(&["TTL", "k"]), Frame::Int(-2));
}

#[test]
fn unknown_command_error_keeps_the_connection() {
    let server = TestServer::start();
    let mut client = server.raw();
    assert_eq!(
        client.call(&["FOO", "a", "b"]),
        Frame::Error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ".into())
    );
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
}

#[test]
fn protocol_error_closes_only_that_connection() {
    let server = TestServer::start();
    let mut other = server.raw();
    let mut bad = server.raw();
    bad.send(b"*1\r\nx\r\n");
    assert_eq!(
        bad.read(),
        Some(Frame::Error(
            "ERR Protocol error: expected '$', got 'x'".into()
        ))
    );
    assert!(bad.is_closed());
    assert_eq!(other.call(&["PING"]), Frame::Simple("PONG".into()));
}
