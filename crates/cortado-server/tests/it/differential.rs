//! The same commands sent to `redis-server` and to the server, replies compared.
//!
//! This is how the server learns Redis's behaviour: each case is a sequence of commands run
//! on fresh servers, and every reply must be the same frame. Skipped, with a note, where
//! `redis-server` is not installed (CI installs it).

use crate::common::{Frame, RawClient, RealRedis, TestServer};

/// Runs `commands` on both servers (each on a fresh connection after `FLUSHALL`) and asserts
/// that every reply matches.
pub fn same_replies(commands: &[&[&str]]) {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let server = TestServer::start();
    compare(&mut redis.raw(), &mut server.raw(), commands);
}

/// Runs `commands` on two open connections and asserts the replies match.
pub fn compare(expected: &mut RawClient, actual: &mut RawClient, commands: &[&[&str]]) {
    for client in [&mut *expected, &mut *actual] {
        assert_eq!(client.call(&["FLUSHALL"]), Frame::Simple("OK".into()));
    }
    for command in commands {
        let want = expected.call(command);
        let got = actual.call(command);
        assert_eq!(got, want, "replies differ for {command:?}");
    }
}

#[test]
fn strings_basic_replies_match_redis() {
    same_replies(&[
        &["SET", "k", "v"],
        &["GET", "k"],
        &["GET", "missing"],
        &["SET", "k", "v2", "NX"],
        &["SET", "k", "v3", "XX", "GET"],
        &["SET", "k", "v", "EX", "0"],
        &["SET", "k", "v", "EX", "1", "PX", "1"],
        &["SET", "k", "v", "KEEPTTL", "EX", "1"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "EX", "abc"],
        &["SET", "k", "v", "EXAT", "9223372036854776"],
        &["INCR", "n"],
        &["INCRBY", "n", "10"],
        &["DECRBY", "n", "-9223372036854775808"],
        &["INCRBY", "n", "9223372036854775807"],
        &["INCR", "k"],
        &["INCRBYFLOAT", "f", "10.5"],
        &["INCRBYFLOAT", "f", "0.1"],
        &["INCRBYFLOAT", "g", "0.1"],
        &["INCRBYFLOAT", "g", "0.2"],
        &["APPEND", "k", "123"],
        &["STRLEN", "k"],
        &["GETRANGE", "k", "0", "-100"],
        &["GETRANGE", "k", "-1", "-3"],
        &["SETRANGE", "k", "10", "xyz"],
        &["GET", "k"],
        &["SETBIT", "b", "7", "1"],
        &["GETBIT", "b", "7"],
        &["BITCOUNT", "b"],
        &["MSET", "a", "1", "b", "2"],
        &["MGET", "a", "b", "c"],
        &["MSETNX", "a", "1", "z", "2"],
        &["GETDEL", "a"],
        &["GET", "a"],
        &["GET"],
        &["MSET", "a"],
    ]);
}
