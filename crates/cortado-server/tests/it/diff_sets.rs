//! Differential tests of the set commands (see `differential.rs`). Sets of integers reply in
//! increasing order on both servers, so their replies are compared exactly; the order of a
//! hash table's members is each server's own, so those are compared in any order.

use crate::diff_hashes::{check_unordered, seeds, Rng};
use crate::differential::{same_replies, Diff};

#[test]
fn set_basic_replies_match_redis() {
    same_replies(&[
        &["SADD", "s", "3", "1", "2", "1"],
        &["SMEMBERS", "s"],
        &["OBJECT", "ENCODING", "s"],
        &["SCARD", "s"],
        &["SCARD", "nokey"],
        &["SISMEMBER", "s", "2"],
        &["SISMEMBER", "s", "02"],
        &["SISMEMBER", "nokey", "2"],
        &["SMISMEMBER", "s", "1", "9", "3"],
        &["SMISMEMBER", "nokey", "1"],
        &["SMEMBERS", "nokey"],
        &["SREM", "s", "1", "1", "9"],
        &["SREM", "nokey", "1"],
        &["SMEMBERS", "s"],
        &["SADD", "s", "-5", "70000", "-9223372036854775808"],
        &["SMEMBERS", "s"],
        &["SREM", "s", "2", "3", "-5", "70000", "-9223372036854775808"],
        &["EXISTS", "s"],
        &["SADD", "t", "b"],
        &["OBJECT", "ENCODING", "t"],
        &["TYPE", "t"],
        &["SADD", "i", "1", "x"],
        &["OBJECT", "ENCODING", "i"],
        &["SADD", "s"],
        &["SREM", "s"],
        &["SISMEMBER", "s"],
        &["SMISMEMBER", "s"],
        &["SCARD"],
    ]);
}

#[test]
fn set_errors_and_other_types_match_redis() {
    same_replies(&[
        &["SET", "str", "v"],
        &["SADD", "str", "a"],
        &["SREM", "str", "a"],
        &["SISMEMBER", "str", "a"],
        &["SMISMEMBER", "str", "a"],
        &["SMEMBERS", "str"],
        &["SCARD", "str"],
        &["SPOP", "str"],
        &["SPOP", "str", "0"],
        &["SRANDMEMBER", "str"],
        &["SRANDMEMBER", "str", "3"],
        &["SSCAN", "str", "0"],
        &["SINTER", "str"],
        &["SUNION", "str"],
        &["SDIFF", "str"],
        &["SADD", "s", "1"],
        &["SINTER", "s", "str"],
        &["SINTER", "nokey", "str"],
        &["SINTER", "str", "nokey"],
        &["SUNION", "s", "nokey", "str"],
        &["SDIFF", "nokey", "str"],
        &["SINTERSTORE", "d", "s", "str"],
        &["SUNIONSTORE", "d", "str"],
        &["SDIFFSTORE", "d", "s", "str"],
        &["SINTERCARD", "2", "s", "str"],
        &["SMOVE", "str", "s", "1"],
        &["SMOVE", "s", "str", "1"],
        &["SMOVE", "s", "str", "9"],
        &["SMOVE", "nokey", "str", "1"],
        &["SPOP", "s", "-1"],
        &["SPOP", "s", "x"],
        &["SPOP", "s", "1", "2"],
        &["SPOP", "nokey", "-1"],
        &["SRANDMEMBER", "s", "x"],
        &["SRANDMEMBER", "s", "1", "2"],
        &["SRANDMEMBER", "s", "-9223372036854775808"],
        &["SINTERCARD", "0", "s"],
        &["SINTERCARD", "-1", "s"],
        &["SINTERCARD", "x", "s"],
        &["SINTERCARD", "3", "s"],
        &["SINTERCARD", "1", "s", "LIMIT"],
        &["SINTERCARD", "1", "s", "LIMIT", "-1"],
        &["SINTERCARD", "1", "s", "LIMIT", "x"],
        &["SINTERCARD", "1", "s", "FOO", "1"],
        &["SSCAN", "s", "x"],
        &["SSCAN", "s", "0", "COUNT", "0"],
        &["SSCAN", "s", "0", "MATCH"],
        &["SSCAN", "nokey", "0", "COUNT", "0"],
        &["GET", "s"],
    ]);
}

#[test]
fn set_pops_picks_and_moves_match_redis() {
    same_replies(&[
        &["SADD", "s", "1", "2", "3"],
        &["SRANDMEMBER", "s", "3"],
        &["SRANDMEMBER", "s", "10"],
        &["SRANDMEMBER", "s", "0"],
        &["SRANDMEMBER", "nokey"],
        &["SRANDMEMBER", "nokey", "5"],
        &["SRANDMEMBER", "nokey", "-5"],
        &["SADD", "one", "x"],
        &["SRANDMEMBER", "one"],
        &["SRANDMEMBER", "one", "-3"],
        &["SPOP", "one"],
        &["EXISTS", "one"],
        &["SPOP", "nokey"],
        &["SPOP", "nokey", "3"],
        &["SPOP", "s", "0"],
        &["SPOP", "s", "3"],
        &["EXISTS", "s"],
        &["SADD", "a", "1", "2"],
        &["SMOVE", "a", "b", "1"],
        &["SMOVE", "a", "b", "1"],
        &["SMEMBERS", "b"],
        &["SMOVE", "a", "a", "2"],
        &["SMOVE", "a", "a", "9"],
        &["SMOVE", "a", "b", "2"],
        &["EXISTS", "a"],
        &["SMEMBERS", "b"],
        &["SSCAN", "b", "0"],
        &["SSCAN", "b", "0", "MATCH", "[1]"],
        &["SADD", "c", "x"],
        &["SMOVE", "c", "b", "x"],
        &["OBJECT", "ENCODING", "b"],
    ]);
}

#[test]
fn set_algebra_matches_redis() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[
        &["SADD", "a", "1", "2", "3", "4"],
        &["SADD", "b", "3", "4", "5"],
        &["SADD", "c", "4", "x"],
        &["SINTER", "a", "b"],
        &["SUNION", "a", "b"],
        &["SDIFF", "a", "b"],
        &["SDIFF", "b", "a", "nokey"],
        &["SINTER", "a", "nokey"],
        &["SDIFF", "nokey", "a"],
        &["SINTERCARD", "2", "a", "b"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "0"],
        &["SINTERCARD", "1", "nokey"],
        &["SINTERSTORE", "d", "a", "b"],
        &["OBJECT", "ENCODING", "d"],
        &["SMEMBERS", "d"],
        &["SUNIONSTORE", "d", "a", "b"],
        &["SMEMBERS", "d"],
        &["SDIFFSTORE", "d", "a", "b"],
        &["SMEMBERS", "d"],
        &["SDIFFSTORE", "d", "a", "a"],
        &["EXISTS", "d"],
        &["SET", "d", "string"],
        &["SUNIONSTORE", "d", "a"],
        &["TYPE", "d"],
        &["EXPIRE", "d", "100"],
        &["SUNIONSTORE", "d", "a", "nokey"],
        &["TTL", "d"],
        &["SUNIONSTORE", "u", "a", "c"],
        &["OBJECT", "ENCODING", "u"],
        &["SINTERSTORE", "u", "a", "nokey"],
        &["EXISTS", "u"],
        &["SINTER", "a"],
        &["SUNION", "nokey"],
    ]);
    for args in [
        &["SINTER", "a", "c"][..],
        &["SUNION", "a", "c", "b"],
        &["SDIFF", "c", "a"],
        &["SMEMBERS", "c"],
    ] {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        check_unordered(&mut d, &bytes, false);
    }
}

#[test]
fn set_encoding_switches_where_redis_does() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[
        &["CONFIG", "SET", "set-max-intset-entries", "3"],
        &["SADD", "s", "1", "2", "3"],
        &["OBJECT", "ENCODING", "s"],
        &["SADD", "s", "4"],
        &["OBJECT", "ENCODING", "s"],
        &["SREM", "s", "4", "3"],
        &["OBJECT", "ENCODING", "s"],
        &["SADD", "t", "1", "2", "3", "4"],
        &["OBJECT", "ENCODING", "t"],
        &["SADD", "u", "1"],
        &["SUNIONSTORE", "v", "u", "t"],
        &["OBJECT", "ENCODING", "v"],
        &["SADD", "w", "007"],
        &["OBJECT", "ENCODING", "w"],
        &["SMISMEMBER", "w", "7", "007"],
        &["COPY", "u", "ucopy"],
        &["OBJECT", "ENCODING", "ucopy"],
        &["SMEMBERS", "ucopy"],
    ]);
}

#[test]
fn large_set_replies_and_whole_sscan_match_redis() {
    let Some(mut d) = Diff::start() else { return };
    let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"big".to_vec()];
    args.extend((0..2000).map(|i| format!("member:{i}").into_bytes()));
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    d.check_raw(&refs);
    d.run(&[
        &["SCARD", "big"],
        &["SREM", "big", "member:5", "member:6", "nope"],
        &["SISMEMBER", "big", "member:7"],
        &["SADD", "ints", "5"],
    ]);
    check_unordered(&mut d, &[b"SMEMBERS", b"big"], false);
    check_unordered(&mut d, &[b"SUNION", b"big", b"ints"], false);
    let mut seen: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for (side, client) in [&mut d.expected, &mut d.actual].into_iter().enumerate() {
        let mut cursor = "0".to_string();
        loop {
            let reply = client.call(&["SSCAN", "big", &cursor, "COUNT", "33"]);
            let crate::common::Frame::Array(parts) = reply else {
                panic!("SSCAN: {reply:?}")
            };
            let (next, members) = crate::differential::scan_step(&parts).expect("a scan step");
            seen[side].extend(members);
            if next == 0 {
                break;
            }
            cursor = next.to_string();
        }
        seen[side].sort();
        seen[side].dedup();
    }
    assert_eq!(seen[0].len(), 1998);
    assert_eq!(seen[0], seen[1], "a whole SSCAN saw different members");
}

#[test]
fn set_resp3_replies_match_redis() {
    let Some(mut d) = Diff::start_resp3() else {
        return;
    };
    d.run(&[
        &["SADD", "s", "1", "2"],
        &["SMEMBERS", "s"],
        &["SMEMBERS", "nokey"],
        &["SINTER", "s", "s"],
        &["SUNION", "s", "nokey"],
        &["SDIFF", "s", "nokey"],
        &["SRANDMEMBER", "s", "5"],
        &["SRANDMEMBER", "s", "0"],
        &["SRANDMEMBER", "nokey", "2"],
        &["SADD", "one", "x"],
        &["SRANDMEMBER", "one", "-2"],
        &["SMISMEMBER", "s", "1", "5"],
        &["SSCAN", "s", "0"],
        &["SPOP", "s", "0"],
        &["SPOP", "nokey", "2"],
        &["SPOP", "s", "5"],
    ]);
}

const SET_KEYS: &[&str] = &["s1", "s2", "s3", "str"];
const MEMBERS: &[&str] = &["1", "2", "3", "-7", "40000", "x", "y", "", "007"];

#[test]
fn generated_set_sequences_match_redis() {
    for seed in 0..seeds() {
        let Some(mut d) = Diff::start() else { return };
        d.run(&[
            &["CONFIG", "SET", "set-max-intset-entries", "4"],
            &["SET", "str", "v"],
        ]);
        let mut rng = Rng::new(seed + 100);
        for _ in 0..300 {
            let key = rng.pick(SET_KEYS);
            let other = rng.pick(SET_KEYS);
            let mut args: Vec<&str> = Vec::new();
            let mut order_free = false;
            match rng.below(13) {
                0..=2 => {
                    args.extend(["SADD", key]);
                    for _ in 0..1 + rng.below(3) {
                        args.push(rng.pick(MEMBERS));
                    }
                }
                3 => args.extend(["SREM", key, rng.pick(MEMBERS), rng.pick(MEMBERS)]),
                4 => args.extend(["SISMEMBER", key, rng.pick(MEMBERS)]),
                5 => args.extend(["SMISMEMBER", key, rng.pick(MEMBERS), rng.pick(MEMBERS)]),
                6 => args.extend(["SCARD", key]),
                7 => args.extend(["SMOVE", key, other, rng.pick(MEMBERS)]),
                8 => {
                    args.extend([["SINTER", "SUNION", "SDIFF"][rng.below(3)], key, other]);
                    order_free = true;
                }
                9 => {
                    let command = ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"][rng.below(3)];
                    args.extend([command, rng.pick(SET_KEYS), key, other]);
                }
                10 => {
                    args.extend(["SMEMBERS", key]);
                    order_free = true;
                }
                11 => args.extend(["OBJECT", "ENCODING", key]),
                _ => args.extend(["SINTERCARD", "2", key, other, "LIMIT", "2"]),
            }
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            if order_free {
                check_unordered(&mut d, &bytes, false);
            } else {
                d.check_raw(&bytes);
            }
        }
    }
}

#[test]
fn generic_commands_on_hashes_and_sets_match_redis() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[
        &["HSET", "h", "a", "1"],
        &["SADD", "s", "1", "x"],
        &["SADD", "i", "1", "2"],
        &["TYPE", "h"],
        &["TYPE", "s"],
        &["OBJECT", "ENCODING", "i"],
        &["OBJECT", "REFCOUNT", "h"],
        &["OBJECT", "REFCOUNT", "s"],
        &["MEMORY", "USAGE", "h"],
        &["MEMORY", "USAGE", "s"],
        &["EXISTS", "h", "s", "i"],
        &["RENAME", "h", "h2"],
        &["HGET", "h2", "a"],
        &["COPY", "h2", "h3", "DB", "1"],
        &["MOVE", "s", "2"],
        &["SELECT", "2"],
        &["SCARD", "s"],
        &["TYPE", "s"],
        &["SELECT", "1"],
        &["HGETALL", "h3"],
        &["SELECT", "0"],
        &["EXPIRE", "i", "100"],
        &["SADD", "i", "3"],
        &["TTL", "i"],
        &["HSET", "h2", "b", "2"],
        &["EXPIRE", "h2", "100"],
        &["HDEL", "h2", "a"],
        &["TTL", "h2"],
        &["SINTERSTORE", "i", "i", "i"],
        &["TTL", "i"],
        &["DEL", "h2", "i"],
        &["UNLINK", "h3"],
        &["DBSIZE"],
    ]);
    d.run(&[
        &["HSET", "h", "a", "1"],
        &["SADD", "s", "1"],
        &["SET", "k", "v"],
    ]);
    for kind in ["hash", "set", "string"] {
        d.scan_all(&["TYPE", kind]);
    }
}
