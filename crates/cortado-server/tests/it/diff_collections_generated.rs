//! Generated differential tests of lists and sorted sets: random command sequences from a
//! seeded generator over a few keys (one of them a string, for `WRONGTYPE`), every reply
//! compared with `redis-server`'s (see `differential.rs`). Arguments come from small sets
//! holding the edge cases: negative and out-of-range indexes, inverted ranges, exclusive and
//! infinite scores, lexical bounds, bad numbers and options. Lexical ranges run on a key
//! whose members all have score 0 only: on mixed scores their result is unspecified.
//!
//! `CORTADO_DIFF_SEEDS=n` runs n seeds instead of the default.

use crate::diff_generated::Rng;
use crate::differential::{show, Diff};

const ZKEYS: &[&str] = &["z1", "z2", "s"];
const MEMBERS: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "e",
    "",
    "a member longer than twenty-two bytes",
];
const SCORES: &[&str] = &[
    "0", "1", "-1", "1.5", "2", "10", "-inf", "+inf", "3e2", "abc", "nan",
];
const BOUNDS: &[&str] = &[
    "-inf", "+inf", "0", "(0", "1", "(1.5", "2", "(10", "x", "(", "",
];
const LEX: &[&str] = &["-", "+", "[a", "(a", "[c", "(c", "[", "(", "a", "[e"];
const INDEXES: &[&str] = &["0", "1", "2", "-1", "-2", "-100", "100", "x"];
const LKEYS: &[&str] = &["l1", "l2", "s"];
const ELEMENTS: &[&str] = &[
    "a",
    "b",
    "c",
    "",
    "an element longer than twenty-two bytes",
    "1",
];

fn zset_command(rng: &mut Rng) -> Vec<String> {
    let key = rng.pick(ZKEYS).to_string();
    let mut c: Vec<String> = Vec::new();
    let s = |rng: &mut Rng| rng.pick(SCORES).to_string();
    let m = |rng: &mut Rng| rng.pick(MEMBERS).to_string();
    let b = |rng: &mut Rng| rng.pick(BOUNDS).to_string();
    let i = |rng: &mut Rng| rng.pick(INDEXES).to_string();
    match rng.below(18) {
        0..=3 => {
            c.extend(["ZADD".into(), key]);
            for flag in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                if rng.chance(12) {
                    c.push(flag.into());
                }
            }
            for _ in 0..1 + rng.below(3) {
                c.extend([s(rng), m(rng)]);
            }
        }
        4 => c.extend(["ZINCRBY".into(), key, s(rng), m(rng)]),
        5 => c.extend(["ZREM".into(), key, m(rng), m(rng)]),
        6 => c.extend(["ZSCORE".into(), key, m(rng)]),
        7 => c.extend(["ZMSCORE".into(), key, m(rng), m(rng)]),
        8 => {
            c.extend(["ZRANGE".into(), key]);
            match rng.below(3) {
                0 => c.extend([i(rng), i(rng)]),
                _ => c.extend([b(rng), b(rng), "BYSCORE".into()]),
            }
            if rng.chance(40) {
                c.push("REV".into());
            }
            if rng.chance(30) {
                c.extend(["LIMIT".into(), i(rng), i(rng)]);
            }
            if rng.chance(50) {
                c.push("WITHSCORES".into());
            }
        }
        9 => c.extend([
            rng.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]).to_string(),
            key,
            b(rng),
            b(rng),
            "WITHSCORES".into(),
        ]),
        10 => c.extend(["ZCOUNT".into(), key, b(rng), b(rng)]),
        11 => c.extend([rng.pick(&["ZRANK", "ZREVRANK"]).to_string(), key, m(rng)]),
        12 => {
            c.extend([rng.pick(&["ZPOPMIN", "ZPOPMAX"]).to_string(), key]);
            if rng.chance(50) {
                c.push(i(rng));
            }
        }
        13 => c.extend([
            rng.pick(&["ZREMRANGEBYSCORE", "ZREMRANGEBYRANK"])
                .to_string(),
            key,
            i(rng),
            i(rng),
        ]),
        14 => c.extend([
            rng.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"])
                .to_string(),
            rng.pick(ZKEYS).to_string(),
            "2".into(),
            key,
            rng.pick(ZKEYS).to_string(),
        ]),
        15 => c.extend([
            "ZMPOP".into(),
            "2".into(),
            key,
            rng.pick(ZKEYS).to_string(),
            rng.pick(&["MIN", "MAX"]).to_string(),
            "COUNT".into(),
            rng.pick(&["1", "2", "10"]).to_string(),
        ]),
        16 => {
            // Lexical commands on a set of one score.
            match rng.below(4) {
                0 => c.extend(["ZADD".into(), "lz".into(), "0".into(), m(rng)]),
                1 => c.extend([
                    "ZRANGEBYLEX".into(),
                    "lz".into(),
                    rng.pick(LEX).to_string(),
                    rng.pick(LEX).to_string(),
                ]),
                2 => c.extend([
                    "ZLEXCOUNT".into(),
                    "lz".into(),
                    rng.pick(LEX).to_string(),
                    rng.pick(LEX).to_string(),
                ]),
                _ => c.extend([
                    "ZREMRANGEBYLEX".into(),
                    "lz".into(),
                    rng.pick(LEX).to_string(),
                    rng.pick(LEX).to_string(),
                ]),
            }
        }
        _ => c.extend([rng.pick(&["ZCARD", "TYPE", "OBJECT"]).to_string(), key]),
    }
    if c[0] == "OBJECT" {
        c.insert(1, "ENCODING".into());
    }
    c
}

fn list_command(rng: &mut Rng) -> Vec<String> {
    let key = rng.pick(LKEYS).to_string();
    let mut c: Vec<String> = Vec::new();
    let e = |rng: &mut Rng| rng.pick(ELEMENTS).to_string();
    let i = |rng: &mut Rng| rng.pick(INDEXES).to_string();
    match rng.below(16) {
        0..=3 => {
            c.extend([
                rng.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"])
                    .to_string(),
                key,
            ]);
            for _ in 0..1 + rng.below(4) {
                c.push(e(rng));
            }
        }
        4 | 5 => {
            c.extend([rng.pick(&["LPOP", "RPOP"]).to_string(), key]);
            if rng.chance(50) {
                c.push(rng.pick(&["0", "1", "3", "-1", "x"]).to_string());
            }
        }
        6 => c.extend(["LRANGE".into(), key, i(rng), i(rng)]),
        7 => c.extend(["LINDEX".into(), key, i(rng)]),
        8 => c.extend(["LSET".into(), key, i(rng), e(rng)]),
        9 => c.extend([
            "LINSERT".into(),
            key,
            rng.pick(&["BEFORE", "AFTER", "X"]).to_string(),
            e(rng),
            e(rng),
        ]),
        10 => c.extend(["LREM".into(), key, i(rng), e(rng)]),
        11 => c.extend(["LTRIM".into(), key, i(rng), i(rng)]),
        12 => {
            c.extend(["LPOS".into(), key, e(rng)]);
            for opt in ["RANK", "COUNT", "MAXLEN"] {
                if rng.chance(30) {
                    c.extend([opt.into(), i(rng)]);
                }
            }
        }
        13 => c.extend([
            "LMOVE".into(),
            key,
            rng.pick(LKEYS).to_string(),
            rng.pick(&["LEFT", "RIGHT"]).to_string(),
            rng.pick(&["LEFT", "RIGHT"]).to_string(),
        ]),
        14 => c.extend([
            "LMPOP".into(),
            "2".into(),
            key,
            rng.pick(LKEYS).to_string(),
            rng.pick(&["LEFT", "RIGHT"]).to_string(),
            "COUNT".into(),
            rng.pick(&["1", "2", "10"]).to_string(),
        ]),
        _ => c.extend([rng.pick(&["LLEN", "TYPE", "EXISTS"]).to_string(), key]),
    }
    c
}

fn run_seed(seed: u64, steps: usize, resp3: bool, command: fn(&mut Rng) -> Vec<String>) {
    let diff = if resp3 {
        Diff::start_resp3()
    } else {
        Diff::start()
    };
    let Some(mut diff) = diff else { return };
    diff.check(&["SET", "s", "a string"]);
    let mut rng = Rng::new(seed);
    for step in 0..steps {
        let args = command(&mut rng);
        let args: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            diff.check_raw(&args);
        }));
        if let Err(panic) = result {
            eprintln!("seed {seed}, step {step}: {}", show(&args));
            std::panic::resume_unwind(panic);
        }
    }
}

fn seeds() -> u64 {
    std::env::var("CORTADO_DIFF_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

#[test]
fn generated_zset_sequences_reply_as_redis() {
    for seed in 1..=seeds() {
        run_seed(seed, 400, seed % 2 == 0, zset_command);
    }
}

#[test]
fn generated_list_sequences_reply_as_redis() {
    for seed in 1..=seeds() {
        run_seed(seed, 400, seed % 2 == 0, list_command);
    }
}
