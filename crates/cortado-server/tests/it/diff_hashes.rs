//! Differential tests of the hash commands (see `differential.rs`), and the comparison of
//! replies whose order Redis leaves unspecified, which `diff_sets.rs` shares.

use crate::common::Frame;
use crate::differential::{same_replies, show, Diff};

/// A frame with the elements of its arrays, sets and maps sorted (pairs kept together when
/// `pairs`: a RESP2 `HGETALL`), for replies whose order is unspecified.
pub fn unordered(frame: &Frame, pairs: bool) -> Frame {
    let key = |f: &Frame| format!("{f:?}");
    match frame {
        Frame::Array(items) | Frame::Set(items) => {
            let mut items = items.clone();
            if pairs {
                let mut chunks: Vec<Vec<Frame>> = items.chunks(2).map(<[Frame]>::to_vec).collect();
                chunks.sort_by_key(|c| format!("{c:?}"));
                items = chunks.concat();
            } else {
                items.sort_by_key(key);
            }
            match frame {
                Frame::Set(_) => Frame::Set(items),
                _ => Frame::Array(items),
            }
        }
        Frame::Map(entries) => {
            let mut entries = entries.clone();
            entries.sort_by_key(|(k, _)| key(k));
            Frame::Map(entries)
        }
        other => other.clone(),
    }
}

/// Sends `args` to both servers and compares the replies in any order (`pairs`: as field and
/// value pairs), and the hit and miss counters.
pub fn check_unordered(d: &mut Diff, args: &[&[u8]], pairs: bool) {
    let (expected, actual) = d.both(args);
    assert_eq!(
        unordered(&actual, pairs),
        unordered(&expected, pairs),
        "replies differ for {}",
        show(args)
    );
    d.check_stats();
}

#[test]
fn hash_basic_replies_match_redis() {
    same_replies(&[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["HSET", "h", "a", "10", "d", "4"],
        &["HGET", "h", "a"],
        &["HGET", "h", "missing"],
        &["HGET", "nokey", "a"],
        &["HMGET", "h", "a", "x", "d"],
        &["HMGET", "nokey", "a", "b"],
        &["HLEN", "h"],
        &["HLEN", "nokey"],
        &["HEXISTS", "h", "b"],
        &["HEXISTS", "h", "zz"],
        &["HSTRLEN", "h", "a"],
        &["HSTRLEN", "h", "zz"],
        &["HKEYS", "h"],
        &["HVALS", "h"],
        &["HGETALL", "h"],
        &["HGETALL", "nokey"],
        &["HKEYS", "nokey"],
        &["HSETNX", "h", "a", "x"],
        &["HSETNX", "h", "e", "5"],
        &["HSETNX", "new", "f", "v"],
        &["HMSET", "h", "f", "6", "a", "1"],
        &["HGETALL", "h"],
        &["HDEL", "h", "a", "a", "zz", "b"],
        &["HDEL", "nokey", "a"],
        &["HGETALL", "h"],
        &["HDEL", "new", "f"],
        &["EXISTS", "new"],
        &["TYPE", "h"],
        &["OBJECT", "ENCODING", "h"],
        &["HSET", "h", "", ""],
        &["HGET", "h", ""],
        &["HSET", "h"],
        &["HSET", "h", "a"],
        &["HSET", "h", "a", "1", "b"],
        &["HMSET", "h", "a", "1", "b"],
        &["HGET", "h"],
        &["HDEL", "h"],
    ]);
}

#[test]
fn hash_counters_and_errors_match_redis() {
    same_replies(&[
        &["HINCRBY", "h", "n", "5"],
        &["HINCRBY", "h", "n", "-10"],
        &["HINCRBY", "h", "n", "x"],
        &["HINCRBY", "h", "n", "1.5"],
        &[
            "HSET",
            "h",
            "big",
            "9223372036854775807",
            "s",
            "abc",
            "sp",
            " 1",
            "e",
            "",
        ],
        &["HINCRBY", "h", "big", "1"],
        &["HINCRBY", "h", "big", "0"],
        &["HINCRBY", "h", "n", "-9223372036854775808"],
        &["HINCRBY", "h", "n", "-9223372036854775808"],
        &["HINCRBY", "h", "s", "1"],
        &["HINCRBY", "h", "sp", "1"],
        &["HINCRBY", "h", "e", "1"],
        &["HINCRBYFLOAT", "h", "f", "1.5"],
        &["HINCRBYFLOAT", "h", "f", "0.1"],
        &["HINCRBYFLOAT", "h", "f", "-1.6"],
        &["HINCRBYFLOAT", "h", "f", "1e308"],
        &["HINCRBYFLOAT", "h", "f", "1e308"],
        &["HINCRBYFLOAT", "h", "f", "inf"],
        &["HINCRBYFLOAT", "h", "f", "-inf"],
        &["HINCRBYFLOAT", "h", "f", "nan"],
        &["HINCRBYFLOAT", "h", "f", "abc"],
        &["HINCRBYFLOAT", "h", "f", ""],
        &["HINCRBYFLOAT", "h", "s", "1"],
        &["HINCRBYFLOAT", "h", "sp", "1"],
        &["HINCRBYFLOAT", "h", "big", "1"],
        &["HINCRBYFLOAT", "h", "n", "2.5e3"],
        &["OBJECT", "ENCODING", "h"],
        &["HGET", "h", "f"],
        &["HINCRBYFLOAT", "nokey", "f", "inf"],
        &["EXISTS", "nokey"],
        // Every command on a key of another type.
        &["SET", "str", "v"],
        &["HSET", "str", "a", "1"],
        &["HSETNX", "str", "a", "1"],
        &["HMSET", "str", "a", "1"],
        &["HGET", "str", "a"],
        &["HMGET", "str", "a"],
        &["HDEL", "str", "a"],
        &["HEXISTS", "str", "a"],
        &["HLEN", "str"],
        &["HSTRLEN", "str", "a"],
        &["HKEYS", "str"],
        &["HVALS", "str"],
        &["HGETALL", "str"],
        &["HINCRBY", "str", "a", "1"],
        &["HINCRBY", "str", "a", "x"],
        &["HINCRBYFLOAT", "str", "a", "1"],
        &["HRANDFIELD", "str"],
        &["HRANDFIELD", "str", "2"],
        &["HSCAN", "str", "0"],
        &["GET", "h"],
        &["INCR", "h"],
    ]);
}

#[test]
fn hrandfield_and_hscan_replies_match_redis() {
    same_replies(&[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        // All of the hash (in its order), or none: deterministic.
        &["HRANDFIELD", "h", "3"],
        &["HRANDFIELD", "h", "10", "WITHVALUES"],
        &["HRANDFIELD", "h", "0"],
        &["HRANDFIELD", "h", "0", "WITHVALUES"],
        &["HRANDFIELD", "nokey"],
        &["HRANDFIELD", "nokey", "5"],
        &["HRANDFIELD", "nokey", "-5", "WITHVALUES"],
        &["HRANDFIELD", "h", "x"],
        &["HRANDFIELD", "h", "1", "WITHVALUE"],
        &["HRANDFIELD", "h", "1", "WITHVALUES", "x"],
        &["HRANDFIELD", "h", "-9223372036854775808"],
        &["HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES"],
        &["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
        &["HRANDFIELD", "nokey", "x"],
        &["HSET", "one", "f", "v"],
        &["HRANDFIELD", "one"],
        &["HRANDFIELD", "one", "-3"],
        &["HRANDFIELD", "one", "-2", "WITHVALUES"],
        &["HSCAN", "h", "0"],
        &["HSCAN", "h", "0", "MATCH", "[ab]"],
        &["HSCAN", "h", "0", "COUNT", "1"],
        &["HSCAN", "h", "0", "COUNT", "0"],
        &["HSCAN", "h", "0", "COUNT"],
        &["HSCAN", "h", "0", "TYPE", "hash"],
        &["HSCAN", "h", "x"],
        &["HSCAN", "nokey", "0", "COUNT", "0"],
        &["HSCAN", "nokey", "x"],
        &["HSCAN", "h", "-1"],
    ]);
}

#[test]
fn hash_encoding_switches_where_redis_does() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[
        &["CONFIG", "SET", "hash-max-ziplist-entries", "4"],
        &["CONFIG", "GET", "hash-max-listpack-entries"],
        &["CONFIG", "SET", "hash-max-listpack-value", "8"],
        &["HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"],
        &["OBJECT", "ENCODING", "h"],
        &["HSET", "h", "a", "11"],
        &["OBJECT", "ENCODING", "h"],
        &["HSET", "h", "e", "5"],
        &["OBJECT", "ENCODING", "h"],
        &["HDEL", "h", "a", "b", "c"],
        &["OBJECT", "ENCODING", "h"],
        &["HSET", "v", "f", "12345678"],
        &["OBJECT", "ENCODING", "v"],
        &["HSET", "v", "g", "123456789"],
        &["OBJECT", "ENCODING", "v"],
        &["HSET", "w", "123456789", "x"],
        &["OBJECT", "ENCODING", "w"],
        &["HSETNX", "x", "f", "123456789"],
        &["OBJECT", "ENCODING", "x"],
        &["COPY", "h", "hcopy"],
        &["OBJECT", "ENCODING", "hcopy"],
    ]);
    for key in ["h", "hcopy", "v"] {
        for command in ["HGETALL", "HKEYS", "HVALS"] {
            check_unordered(
                &mut d,
                &[command.as_bytes(), key.as_bytes()],
                command == "HGETALL",
            );
        }
    }
}

#[test]
fn large_hash_replies_and_whole_hscan_match_redis() {
    let Some(mut d) = Diff::start() else { return };
    let mut args: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"big".to_vec()];
    for i in 0..1000 {
        args.push(format!("field:{i}").into_bytes());
        args.push(format!("value:{}", i * 7).into_bytes());
    }
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    d.check_raw(&refs);
    d.run(&[
        &["OBJECT", "ENCODING", "big"],
        &["HLEN", "big"],
        &["HGET", "big", "field:500"],
        &["HDEL", "big", "field:1", "field:2", "nope"],
        &["HINCRBY", "big", "field:3", "1"],
        &["HSTRLEN", "big", "field:999"],
    ]);
    for command in ["HGETALL", "HKEYS", "HVALS"] {
        check_unordered(&mut d, &[command.as_bytes(), b"big"], command == "HGETALL");
    }
    // A whole HSCAN on each server sees the same fields and values.
    let mut seen: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for (side, client) in [&mut d.expected, &mut d.actual].into_iter().enumerate() {
        let mut cursor = "0".to_string();
        loop {
            let reply = client.call(&["HSCAN", "big", &cursor, "COUNT", "17", "MATCH", "*1*"]);
            let Frame::Array(parts) = reply else {
                panic!("HSCAN: {reply:?}")
            };
            let [Frame::Bulk(next), Frame::Array(items)] = &parts[..] else {
                panic!("HSCAN: {parts:?}")
            };
            for pair in items.chunks(2) {
                seen[side].push(format!("{pair:?}").into_bytes());
            }
            cursor = String::from_utf8(next.clone()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        seen[side].sort();
        seen[side].dedup();
    }
    assert!(seen[0].len() > 100);
    assert_eq!(seen[0], seen[1], "a whole HSCAN saw different fields");
}

#[test]
fn hash_resp3_replies_match_redis() {
    let Some(mut d) = Diff::start_resp3() else {
        return;
    };
    d.run(&[
        &["HSET", "h", "a", "1", "b", "2"],
        &["HGETALL", "h"],
        &["HGETALL", "nokey"],
        &["HRANDFIELD", "h", "5", "WITHVALUES"],
        &["HRANDFIELD", "h", "2"],
        &["HRANDFIELD", "h", "0", "WITHVALUES"],
        &["HRANDFIELD", "nokey", "-3", "WITHVALUES"],
        &["HRANDFIELD", "nokey"],
        &["HSET", "one", "f", "v"],
        &["HRANDFIELD", "one", "-2", "WITHVALUES"],
        &["HSCAN", "h", "0"],
        &["HMGET", "h", "a", "zz"],
        &["HKEYS", "h"],
    ]);
}

/// A xorshift generator: the same seed, the same sequence.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The seeds the generated tests run: `CORTADO_DIFF_SEEDS=n` for n of them (default 4).
pub fn seeds() -> u64 {
    std::env::var("CORTADO_DIFF_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
}

const HASH_KEYS: &[&str] = &["h1", "h2", "str"];
const FIELDS: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "",
    "long field name over eight",
];
const HASH_VALUES: &[&str] = &[
    "1",
    "-5",
    "0",
    "x",
    "3.5",
    "",
    "9223372036854775807",
    "a longer value",
];

#[test]
fn generated_hash_sequences_match_redis() {
    for seed in 0..seeds() {
        let Some(mut d) = Diff::start() else { return };
        d.run(&[
            &["CONFIG", "SET", "hash-max-listpack-entries", "5"],
            &["CONFIG", "SET", "hash-max-listpack-value", "8"],
            &["SET", "str", "v"],
        ]);
        let mut rng = Rng::new(seed + 1);
        for _ in 0..300 {
            let key = rng.pick(HASH_KEYS);
            let mut args: Vec<&str> = Vec::new();
            let mut pairs = false;
            let mut order_free = false;
            match rng.below(14) {
                0..=2 => {
                    args.extend([if rng.below(4) == 0 { "HMSET" } else { "HSET" }, key]);
                    for _ in 0..1 + rng.below(3) {
                        args.extend([rng.pick(FIELDS), rng.pick(HASH_VALUES)]);
                    }
                }
                3 => args.extend(["HSETNX", key, rng.pick(FIELDS), rng.pick(HASH_VALUES)]),
                4 => args.extend(["HGET", key, rng.pick(FIELDS)]),
                5 => args.extend(["HMGET", key, rng.pick(FIELDS), rng.pick(FIELDS)]),
                6 => args.extend(["HDEL", key, rng.pick(FIELDS), rng.pick(FIELDS)]),
                7 => args.extend(["HINCRBY", key, rng.pick(FIELDS), rng.pick(HASH_VALUES)]),
                8 => args.extend(["HINCRBYFLOAT", key, rng.pick(FIELDS), rng.pick(HASH_VALUES)]),
                9 => args.extend([
                    ["HLEN", "HEXISTS", "HSTRLEN"][rng.below(3)],
                    key,
                    rng.pick(FIELDS),
                ]),
                10 => {
                    args.extend([["HGETALL", "HKEYS", "HVALS"][rng.below(3)], key]);
                    pairs = args[0] == "HGETALL";
                    order_free = true;
                }
                11 => args.extend(["OBJECT", "ENCODING", key]),
                12 => args.extend(["HRANDFIELD", key, "100", "WITHVALUES"]),
                _ => args.extend(["DEL", key]),
            }
            if args[0] == "HLEN" {
                args.pop();
            }
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            if order_free || args[0] == "HRANDFIELD" {
                check_unordered(&mut d, &bytes, pairs || args[0] == "HRANDFIELD");
            } else {
                d.check_raw(&bytes);
            }
        }
    }
}

#[test]
fn hash_and_set_replies_inside_scripts_match_redis() {
    same_replies(&[
        &["HSET", "h", "a", "1", "b", "2"],
        &["SADD", "s", "1", "2"],
        &["EVAL", "return redis.call('HGETALL', KEYS[1])", "1", "h"],
        &["EVAL", "return redis.call('SMEMBERS', KEYS[1])", "1", "s"],
        &[
            "EVAL",
            "return redis.call('HRANDFIELD', KEYS[1], 5, 'WITHVALUES')",
            "1",
            "h",
        ],
        &[
            "EVAL",
            "redis.setresp(3); return redis.call('HGETALL', KEYS[1])",
            "1",
            "h",
        ],
        &[
            "EVAL",
            "redis.setresp(3); return redis.call('SMEMBERS', KEYS[1])",
            "1",
            "s",
        ],
        &["EVAL", "return redis.pcall('HGETALL', 'nokey')", "0"],
        &["EVAL", "return redis.pcall('SADD', KEYS[1], 'x')", "1", "h"],
    ]);
}

#[test]
fn hash_and_set_commands_inside_multi_match_redis() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[&["HSET", "h", "a", "1"], &["SADD", "s", "1", "2"]]);
    // The hit counters are read with INFO, which a transaction would queue: compared after.
    for command in [
        &["MULTI"][..],
        &["HSET", "h", "c", "3"],
        &["SREM", "s", "1", "2"],
        &["SUNIONSTORE", "u", "s", "nokey"],
        &["HGETALL", "h"],
        &["SADD", "h", "x"],
        &["EXEC"],
    ] {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        let (expected, actual) = d.both(&args);
        assert_eq!(actual, expected, "{command:?}");
    }
    d.check_stats();
    d.run(&[&["EXISTS", "s", "u"], &["HLEN", "h"]]);
}
