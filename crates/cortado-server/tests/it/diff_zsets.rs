//! Differential tests of the sorted-set commands (see `differential.rs`).

use crate::differential::{same_replies, Diff};

#[test]
fn zadd_options_and_errors_match_redis() {
    same_replies(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZADD", "z", "NX", "XX", "1", "a"],
        &["ZADD", "z", "GT", "LT", "1", "a"],
        &["ZADD", "z", "NX", "GT", "1", "a"],
        &["ZADD", "z", "INCR", "1", "a", "2", "b"],
        &["ZADD", "z", "1"],
        &["ZADD", "z", "1", "a", "2"],
        &["ZADD", "z", "nan", "a"],
        &["ZADD", "z", "abc", "a"],
        &["ZADD", "z", "", "a"],
        &["ZADD", "z", " 1", "a"],
        &["ZADD", "z", "1e400", "a"],
        &["ZADD", "z", "XX", "5", "a", "5", "new"],
        &["ZADD", "z", "NX", "9", "a", "9", "new"],
        &["ZADD", "z", "CH", "GT", "1", "a", "10", "b", "7", "d"],
        &["ZADD", "z", "CH", "LT", "100", "a", "0", "b"],
        &["ZADD", "z", "INCR", "2.5", "a"],
        &["ZADD", "z", "INCR", "XX", "1", "missing"],
        &["ZADD", "z", "INCR", "GT", "-1", "a"],
        &["ZADD", "z", "inf", "i", "-inf", "j", "+inf", "k"],
        &["ZINCRBY", "z", "-inf", "i"],
        &["ZINCRBY", "z", "1", "new2"],
        &["ZINCRBY", "z", "x", "new2"],
        &["ZADD", "none", "XX", "1", "a"],
        &["ZADD", "none", "XX", "INCR", "1", "a"],
        &["EXISTS", "none"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZSCORE", "z", "a"],
        &["ZSCORE", "z", "nope"],
        &["ZMSCORE", "z", "a", "nope", "b"],
        &["ZMSCORE", "none", "a", "b"],
        &["ZCARD", "z"],
        &["ZCARD", "none"],
        &["SET", "s", "x"],
        &["ZADD", "s", "1", "a"],
        &["ZSCORE", "s", "a"],
        &["ZCARD", "s"],
        &["ZRANGE", "s", "0", "1"],
        &["TYPE", "z"],
        &["OBJECT", "ENCODING", "z"],
    ]);
}

#[test]
fn zrange_forms_and_edges_match_redis() {
    let mut commands: Vec<Vec<&str>> = vec![
        vec![
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
        ],
        vec![
            "ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e",
        ],
    ];
    let ranks = [
        ("0", "-1"),
        ("-2", "-1"),
        ("-100", "100"),
        ("3", "1"),
        ("5", "10"),
        ("-1", "-2"),
        ("2", "2"),
    ];
    for (a, b) in ranks {
        commands.push(vec!["ZRANGE", "z", a, b]);
        commands.push(vec!["ZRANGE", "z", a, b, "REV", "WITHSCORES"]);
        commands.push(vec!["ZREVRANGE", "z", a, b, "WITHSCORES"]);
        commands.push(vec!["ZREMRANGEBYRANK", "none", a, b]);
    }
    let scores = [
        ("-inf", "+inf"),
        ("(1", "(4"),
        ("2", "2"),
        ("(2", "2"),
        ("4", "2"),
        ("", "3"),
        ("(", "+inf"),
        ("abc", "1"),
        ("nan", "1"),
        ("1", "(x"),
    ];
    for (a, b) in scores {
        commands.push(vec!["ZRANGE", "z", a, b, "BYSCORE"]);
        commands.push(vec!["ZRANGE", "z", b, a, "BYSCORE", "REV", "WITHSCORES"]);
        commands.push(vec!["ZRANGEBYSCORE", "z", a, b, "LIMIT", "1", "2"]);
        commands.push(vec![
            "ZREVRANGEBYSCORE",
            "z",
            b,
            a,
            "WITHSCORES",
            "LIMIT",
            "0",
            "-1",
        ]);
        commands.push(vec!["ZCOUNT", "z", a, b]);
    }
    let lexes = [
        ("-", "+"),
        ("[b", "(d"),
        ("(b", "[d"),
        ("+", "-"),
        ("[c", "[c"),
        ("(c", "[c"),
        ("b", "[c"),
        ("[a", "+x"),
    ];
    for (a, b) in lexes {
        commands.push(vec!["ZRANGE", "l", a, b, "BYLEX"]);
        commands.push(vec![
            "ZRANGE", "l", b, a, "BYLEX", "REV", "LIMIT", "1", "10",
        ]);
        commands.push(vec!["ZRANGEBYLEX", "l", a, b]);
        commands.push(vec!["ZREVRANGEBYLEX", "l", b, a, "LIMIT", "0", "2"]);
        commands.push(vec!["ZLEXCOUNT", "l", a, b]);
    }
    commands.extend([
        vec!["ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"],
        vec!["ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"],
        vec!["ZRANGE", "l", "-", "+", "BYLEX", "WITHSCORES"],
        vec!["ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"],
        vec!["ZRANGE", "z", "0", "-1", "REV", "REV"],
        vec!["ZRANGE", "z", "0", "-1", "LIMIT", "1"],
        vec!["ZRANGE", "z", "0", "10", "BYSCORE", "LIMIT", "-1", "2"],
        vec!["ZRANGE", "z", "0", "10", "BYSCORE", "LIMIT", "1", "0"],
        vec!["ZRANGE", "z", "0", "10", "BYSCORE", "LIMIT", "10", "1"],
        vec!["ZRANGE", "z", "0", "10", "BYSCORE", "LIMIT", "x", "1"],
        vec!["ZRANGE", "z", "a", "b"],
        vec!["ZRANGEBYSCORE", "z", "0", "10", "REV"],
        vec!["ZRANGEBYLEX", "l", "-", "+", "WITHSCORES"],
        vec!["ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"],
        vec!["ZRANGE", "none", "0", "-1"],
        vec!["ZRANGESTORE", "dst", "z", "1", "3"],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec!["ZRANGESTORE", "dst", "z", "(1", "3", "BYSCORE", "REV"],
        vec![
            "ZRANGESTORE",
            "dst",
            "z",
            "3",
            "(1",
            "BYSCORE",
            "REV",
            "LIMIT",
            "0",
            "1",
        ],
        vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        vec!["ZRANGESTORE", "dst", "z", "0", "-1", "WITHSCORES"],
        vec!["ZRANGESTORE", "dst", "none", "0", "-1"],
        vec!["EXISTS", "dst"],
        vec!["ZRANK", "z", "c"],
        vec!["ZREVRANK", "z", "c"],
        vec!["ZRANK", "z", "nope"],
        vec!["ZRANK", "none", "a"],
        vec!["ZREMRANGEBYSCORE", "z", "(1", "2"],
        vec!["ZREMRANGEBYLEX", "l", "[b", "(d"],
        vec!["ZREMRANGEBYRANK", "z", "-1", "-1"],
        vec!["ZREMRANGEBYSCORE", "z", "x", "2"],
        vec!["ZREMRANGEBYLEX", "l", "b", "c"],
        vec!["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        vec!["ZRANGE", "l", "0", "-1"],
        vec!["ZREMRANGEBYRANK", "z", "0", "-1"],
        vec!["EXISTS", "z"],
    ]);
    let refs: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    same_replies(&refs);
}

#[test]
fn zset_pops_and_random_members_match_redis() {
    same_replies(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
        &["ZPOPMIN", "z"],
        &["ZPOPMAX", "z", "2"],
        &["ZPOPMIN", "z", "0"],
        &["ZPOPMIN", "z", "-1"],
        &["ZPOPMIN", "z", "x"],
        &["ZPOPMIN", "z", "1", "2"],
        &["ZPOPMIN", "none"],
        &["ZPOPMIN", "none", "3"],
        &["ZPOPMAX", "z", "10"],
        &["EXISTS", "z"],
        &["ZADD", "a", "1", "x", "2", "y"],
        &["ZADD", "b", "5", "p"],
        &["ZMPOP", "3", "none", "a", "b", "MAX", "COUNT", "5"],
        &["ZMPOP", "2", "a", "b", "MIN"],
        &["ZMPOP", "1", "none", "MIN"],
        &["ZMPOP", "0", "a", "MIN"],
        &["ZMPOP", "x", "a", "MIN"],
        &["ZMPOP", "1", "a", "FOO"],
        &["ZMPOP", "1", "a", "MIN", "COUNT", "0"],
        &["ZMPOP", "1", "a", "MIN", "COUNT"],
        &["ZMPOP", "1", "a", "MIN", "COUNT", "1", "COUNT", "1"],
        &["ZMPOP", "5", "a", "MIN"],
        &["SET", "s", "v"],
        &["ZMPOP", "2", "s", "b", "MIN"],
        &["ZMPOP", "2", "b", "s", "MIN"],
        &["ZADD", "one", "7", "m"],
        &["ZRANDMEMBER", "one"],
        &["ZRANDMEMBER", "one", "-3", "WITHSCORES"],
        &["ZRANDMEMBER", "one", "5", "WITHSCORES"],
        &["ZRANDMEMBER", "one", "0"],
        &["ZRANDMEMBER", "none"],
        &["ZRANDMEMBER", "none", "3"],
        &["ZRANDMEMBER", "one", "1", "foo"],
        &["ZRANDMEMBER", "one", "-9223372036854775808"],
        &["ZRANDMEMBER", "one", "9223372036854775807", "WITHSCORES"],
        &["ZRANDMEMBER", "s"],
        &["ZSCAN", "one", "0"],
        &["ZSCAN", "one", "0", "MATCH", "x*"],
        &["ZSCAN", "one", "0", "COUNT", "0"],
        &["ZSCAN", "none", "0"],
        &["ZSCAN", "one", "abc"],
    ]);
}

#[test]
fn zset_algebra_matches_redis() {
    same_replies(&[
        &["ZADD", "a", "1", "x", "2", "y", "3", "z"],
        &["ZADD", "b", "10", "y", "20", "z", "30", "w"],
        &["ZADD", "c", "inf", "x", "-inf", "z"],
        &["ZUNION", "2", "a", "b", "WITHSCORES"],
        &[
            "ZUNION",
            "2",
            "a",
            "b",
            "WEIGHTS",
            "2",
            "0.5",
            "AGGREGATE",
            "MAX",
            "WITHSCORES",
        ],
        &[
            "ZUNION",
            "3",
            "a",
            "b",
            "c",
            "AGGREGATE",
            "MIN",
            "WITHSCORES",
        ],
        &["ZUNION", "2", "a", "c", "WEIGHTS", "0", "1", "WITHSCORES"],
        &["ZINTER", "2", "a", "b", "WITHSCORES"],
        &["ZINTER", "2", "a", "none"],
        &["ZINTER", "3", "a", "b", "c", "WITHSCORES"],
        &["ZDIFF", "2", "a", "b", "WITHSCORES"],
        &["ZDIFF", "2", "a", "b", "WEIGHTS", "1", "1"],
        &["ZINTERCARD", "2", "a", "b"],
        &["ZINTERCARD", "2", "a", "b", "LIMIT", "1"],
        &["ZINTERCARD", "2", "a", "b", "LIMIT", "-1"],
        &["ZINTERCARD", "0", "a"],
        &["ZINTERCARD", "2", "a", "b", "WITHSCORES"],
        &["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZINTERSTORE", "d", "2", "a", "b", "AGGREGATE", "SUM"],
        &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        &["ZDIFFSTORE", "d", "2", "a", "a"],
        &["EXISTS", "d"],
        &["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"],
        &["ZUNIONSTORE", "d", "0", "a"],
        &["ZUNIONSTORE", "d", "3", "a", "b"],
        &["ZUNIONSTORE", "d", "x", "a"],
        &["ZUNION", "2", "a", "b", "WEIGHTS", "1"],
        &["ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"],
        &["ZUNION", "2", "a", "b", "AGGREGATE", "AVG"],
        &["SET", "s", "v"],
        &["ZUNION", "2", "a", "s", "FOO"],
        &["ZINTERSTORE", "s", "1", "a"],
        &["TYPE", "s"],
    ]);
}

#[test]
fn zset_resp3_replies_match_redis() {
    let Some(mut diff) = Diff::start_resp3() else {
        return;
    };
    diff.run(&[
        &["ZADD", "z", "1.5", "a", "2", "b", "3", "c"],
        &["ZADD", "z", "INCR", "1", "a"],
        &["ZINCRBY", "z", "1", "b"],
        &["ZSCORE", "z", "a"],
        &["ZMSCORE", "z", "a", "nope"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "z", "0", "-1"],
        &["ZRANGEBYSCORE", "z", "-inf", "inf", "WITHSCORES"],
        &["ZUNION", "1", "z", "WITHSCORES"],
        &["ZPOPMIN", "z"],
        &["ZPOPMIN", "z", "1"],
        &["ZPOPMAX", "none"],
        &["ZMPOP", "1", "z", "MAX"],
        &["ZMPOP", "1", "z", "MAX"],
        &["ZADD", "one", "1", "m"],
        &["ZRANDMEMBER", "one", "1", "WITHSCORES"],
        &["ZSCAN", "one", "0"],
    ]);
}

#[test]
fn zset_large_sets_match_redis() {
    // Past 128 entries and with a long member: the tree form, compared on the same replies.
    let Some(mut diff) = Diff::start() else {
        return;
    };
    let members: Vec<String> = (0..300).map(|i| format!("m{i:03}")).collect();
    let scores: Vec<String> = (0..300).map(|i| ((i * 37) % 101).to_string()).collect();
    let mut zadd: Vec<&str> = vec!["ZADD", "big"];
    for (m, s) in members.iter().zip(&scores) {
        zadd.push(s);
        zadd.push(m);
    }
    diff.check(&zadd);
    let long = "x".repeat(65);
    diff.run(&[
        &["OBJECT", "ENCODING", "big"],
        &["ZADD", "long", "1", &long],
        &["OBJECT", "ENCODING", "long"],
        &["ZCARD", "big"],
        &["ZRANGE", "big", "100", "120", "WITHSCORES"],
        &["ZRANGE", "big", "0", "10", "REV", "WITHSCORES"],
        &[
            "ZRANGEBYSCORE",
            "big",
            "(50",
            "60",
            "WITHSCORES",
            "LIMIT",
            "3",
            "7",
        ],
        &["ZREVRANGEBYSCORE", "big", "60", "(50", "LIMIT", "3", "7"],
        &["ZCOUNT", "big", "10", "(20"],
        &["ZRANK", "big", "m150"],
        &["ZREVRANK", "big", "m150"],
        &["ZREM", "big", "m000", "m001", "m002", "nope"],
        &["ZREMRANGEBYSCORE", "big", "90", "95"],
        &["ZREMRANGEBYRANK", "big", "10", "20"],
        &["ZCARD", "big"],
        &["ZPOPMIN", "big", "3"],
        &["ZPOPMAX", "big", "3"],
        &["ZRANGE", "big", "0", "-1", "WITHSCORES"],
        &["ZUNIONSTORE", "u", "2", "big", "long"],
        &["OBJECT", "ENCODING", "u"],
        &["ZRANGESTORE", "small", "big", "0", "9"],
        &["OBJECT", "ENCODING", "small"],
        &["ZINTERCARD", "2", "big", "u"],
    ]);
}

#[test]
fn zset_listpack_limits_from_config_match_redis() {
    same_replies(&[
        &["CONFIG", "SET", "zset-max-listpack-entries", "2"],
        &["ZADD", "two", "1", "a", "2", "b"],
        &["OBJECT", "ENCODING", "two"],
        &["ZADD", "two", "3", "c"],
        &["OBJECT", "ENCODING", "two"],
        &["ZADD", "three", "1", "a", "2", "b", "3", "c"],
        &["OBJECT", "ENCODING", "three"],
        &["ZUNIONSTORE", "u", "1", "two"],
        &["OBJECT", "ENCODING", "u"],
        &["ZRANGESTORE", "r", "three", "0", "1"],
        &["OBJECT", "ENCODING", "r"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "0"],
        &["ZADD", "zero", "1", "a"],
        &["OBJECT", "ENCODING", "zero"],
        &[
            "CONFIG",
            "SET",
            "zset-max-listpack-entries",
            "128",
            "zset-max-listpack-value",
            "3",
        ],
        &["ZADD", "short", "1", "abc"],
        &["OBJECT", "ENCODING", "short"],
        &["ZADD", "short", "2", "abcd"],
        &["OBJECT", "ENCODING", "short"],
        &["ZINCRBY", "long", "1", "abcd"],
        &["OBJECT", "ENCODING", "long"],
        &["ZRANGE", "short", "0", "-1", "WITHSCORES"],
        &["CONFIG", "SET", "zset-max-listpack-value", "64"],
    ]);
}
