//! Differential tests of the keyspace and expiry commands (see `differential.rs`).

use crate::differential::{same_replies, Diff};

#[test]
fn del_exists_touch_type_match_redis() {
    same_replies(&[
        &["MSET", "a", "1", "b", "2", "c", "3"],
        &["DEL", "a", "b", "nokey", "a"],
        &["UNLINK", "c", "nokey"],
        &["DEL", "a"],
        &["SET", "s", "v"],
        &["EXISTS", "s", "s", "nokey"],
        &["EXISTS", "nokey"],
        &["TOUCH", "s", "s", "nokey"],
        &["TYPE", "s"],
        &["TYPE", "nokey"],
        &["TYPE"],
        &["TYPE", "a", "b"],
        &["DEL"],
        &["UNLINK"],
        &["EXISTS"],
        &["TOUCH"],
    ]);
}

#[test]
fn keys_patterns_follow_redis_glob() {
    let Some(mut d) = Diff::start() else { return };
    let keys = [
        "",
        "a",
        "b",
        "ab",
        "abc",
        "h*llo",
        "hello",
        "hallo",
        "hxllo",
        "h[llo",
        "h\\llo",
        "user:1:name",
        "user:22:name",
        "user::name",
        "x?",
        "-",
        "]",
        "^",
        "A",
        "Z",
        "_",
    ];
    for key in keys {
        d.check(&["SET", key, "v"]);
    }
    for pattern in [
        "*",
        "**",
        "?",
        "??",
        "*?",
        "a*",
        "*b*",
        "h?llo",
        "h*llo",
        "h[ae]llo",
        "h[^e]llo",
        "h[a-b]llo",
        "h[b-a]llo",
        "h\\*llo",
        "h\\[llo",
        "h[\\]llo",
        "h\\\\llo",
        "[",
        "[^",
        "[]",
        "[^]",
        "[a-",
        "a[",
        "[a-]",
        "[]-a]",
        "user:*:name",
        "user:?:name",
        "user:*",
        "*:name",
        "x\\?",
        "\\",
        "[Z-a]",
        "[\\",
        "",
        "[-]",
        "[^a-z]",
        "*[A-Z]*",
        "a**b*c",
    ] {
        d.check(&["KEYS", pattern]);
        d.scan_all(&["MATCH", pattern]);
    }
    d.check_raw(&[b"SET", b"\xe9t\xe9", b"v"]);
    d.check_raw(&[b"SET", b"\x00", b"v"]);
    for pattern in [
        &b"[a-\xff]"[..],
        b"\xe9*",
        b"[\x80-\xff]*",
        b"?t?",
        b"[\x00-a]",
    ] {
        d.check_raw(&[b"KEYS", pattern]);
    }
    d.check(&["KEYS"]);
    d.check(&["KEYS", "a", "b"]);
}

#[test]
fn rename_and_renamenx_match_redis() {
    same_replies(&[
        &["SET", "k", "v"],
        &["RENAME", "k", "k"],
        &["RENAMENX", "k", "k"],
        &["RENAME", "nokey", "k"],
        &["RENAMENX", "nokey", "k"],
        &["RENAME", "nokey", "nokey"],
        &["RENAME", "k", "k2"],
        &["GET", "k"],
        &["GET", "k2"],
        &["SET", "k", "v"],
        &["RENAMENX", "k", "k2"],
        &["RENAMENX", "k", "k3"],
        &["SET", "t", "v", "EX", "100"],
        &["RENAME", "t", "t2"],
        &["TTL", "t2"],
        &["SET", "u", "plain"],
        &["RENAME", "u", "t2"],
        &["TTL", "t2"],
        &["GET", "t2"],
        &["SET", "far", "v", "PXAT", "9223372036854775807"],
        &["RENAME", "far", "far2"],
        &["PEXPIRETIME", "far2"],
        &["RENAME", "k"],
        &["RENAMENX", "k", "a", "b"],
    ]);
}

#[test]
fn copy_and_move_across_databases_match_redis() {
    same_replies(&[
        &["SET", "k", "v"],
        &["COPY", "k", "k"],
        &["COPY", "k", "k2"],
        &["COPY", "k", "k2"],
        &["COPY", "k", "k2", "REPLACE"],
        &["COPY", "k", "k2", "replace", "REPLACE"],
        &["COPY", "k", "k2", "DB", "1"],
        &["COPY", "k", "k2", "DB", "1"],
        &["COPY", "k", "k2", "DB", "16"],
        &["COPY", "k", "k2", "DB", "-1"],
        &["COPY", "k", "k2", "DB", "abc"],
        &["COPY", "k", "k2", "DB", "4294967296"],
        &["COPY", "k", "k2", "DB"],
        &["COPY", "k", "k2", "foo"],
        &["COPY", "nokey", "k2"],
        &["COPY", "nokey", "nokey"],
        &["COPY", "k", "k", "DB", "0"],
        &["COPY", "k", "k", "DB", "1"],
        &["COPY", "k", "k", "DB", "1", "REPLACE"],
        &["COPY", "k", "kk", "DB", "2", "DB", "3"],
        &["SELECT", "3"],
        &["GET", "kk"],
        &["SELECT", "2"],
        &["EXISTS", "kk"],
        &["SELECT", "0"],
        &["SET", "t", "v", "EX", "100"],
        &["COPY", "t", "t2"],
        &["TTL", "t2"],
        &["COPY", "t", "t3", "DB", "5"],
        &["MOVE", "k", "0"],
        &["MOVE", "k", "1"],
        &["MOVE", "k", "1"],
        &["SET", "k", "again"],
        &["MOVE", "k", "1"],
        &["MOVE", "nokey", "1"],
        &["MOVE", "k", "16"],
        &["MOVE", "k", "-1"],
        &["MOVE", "k", "abc"],
        &["MOVE", "k", "4294967296"],
        &["MOVE", "t", "2"],
        &["EXISTS", "t"],
        &["SELECT", "1"],
        &["KEYS", "*"],
        &["GET", "k"],
        &["GET", "k2"],
        &["SELECT", "2"],
        &["TTL", "t"],
        &["MOVE", "t", "5"],
        &["SELECT", "5"],
        &["KEYS", "*"],
        &["TTL", "t3"],
        &["SELECT", "0"],
        &["MOVE", "k"],
        &["COPY", "k"],
    ]);
}

#[test]
fn scan_options_and_cursors_parse_as_redis() {
    let Some(mut d) = Diff::start() else { return };
    d.run(&[
        &["SCAN", "0"],
        &["MSET", "a", "1", "b", "2", "", "empty"],
        &["SCAN", "0", "COUNT", "0"],
        &["SCAN", "0", "COUNT", "-1"],
        &["SCAN", "0", "COUNT", "abc"],
        &["SCAN", "0", "COUNT"],
        &["SCAN", "0", "MATCH"],
        &["SCAN", "0", "TYPE"],
        &["SCAN", "0", "foo", "bar"],
        &["SCAN", "0", "COUNT", "10", "foo"],
        &["SCAN", "abc"],
        &["SCAN", "0x1"],
        &["SCAN", " 0"],
        &["SCAN", "0 "],
        &["SCAN", "1.5"],
        &["SCAN", "18446744073709551616"],
        &["SCAN", "-18446744073709551616"],
        &["SCAN", "+"],
        &["SCAN", "-"],
        &["SCAN"],
    ]);
    // Cursors Redis accepts: each is a step (of whatever keys) on both.
    for cursor in [
        "",
        "+0",
        "-0",
        "00",
        "18446744073709551615",
        "-1",
        "123456789",
    ] {
        d.check(&["SCAN", cursor]);
    }
    for options in [
        &[][..],
        &["COUNT", "1"],
        &["COUNT", "1000"],
        &["MATCH", "*"],
        &["MATCH", "?"],
        &["MATCH", "[ab]", "COUNT", "1"],
        &["TYPE", "string"],
        &["TYPE", "STRING"],
        &["TYPE", "list"],
        &["TYPE", "nosuchtype"],
        &["MATCH", "a", "MATCH", "b"],
        &["COUNT", "1", "COUNT", "5", "TYPE", "string", "MATCH", "*"],
    ] {
        d.scan_all(options);
    }
}

#[test]
fn scan_sees_every_key_of_a_larger_database_like_redis() {
    let Some(mut d) = Diff::start() else { return };
    for i in 0..2000 {
        let key = format!("key:{i}");
        d.both(&[b"SET", key.as_bytes(), b"v"]);
    }
    d.check(&["DBSIZE"]);
    d.scan_all(&[]);
    d.scan_all(&["COUNT", "3"]);
    d.scan_all(&["COUNT", "500", "MATCH", "key:1*"]);
    d.check(&["SELECT", "1"]);
    d.scan_all(&[]);
    d.check(&["SET", "other-db", "v"]);
    d.scan_all(&[]);
    d.check(&["KEYS", "*"]);
}

#[test]
fn randomkey_answers_like_redis() {
    let Some(mut d) = Diff::start() else { return };
    d.check(&["RANDOMKEY"]);
    d.check(&["SET", "only", "v"]);
    for _ in 0..5 {
        let (expected, actual) = d.check(&["RANDOMKEY"]);
        assert_eq!(expected, actual, "a database of one key has one random key");
    }
    d.check(&["RANDOMKEY", "extra"]);
    for i in 0..50 {
        d.check(&["SET", &format!("k{i}"), "v"]);
    }
    for _ in 0..20 {
        // Each side's key must be one of its own.
        let (expected, actual) = d.check(&["RANDOMKEY"]);
        for key in [expected, actual] {
            let key = key.text();
            assert!(key == "only" || key.starts_with('k'), "{key}");
        }
    }
    d.check(&["FLUSHDB"]);
    d.check(&["RANDOMKEY"]);
    // Keys that have all expired are not returned.
    d.check(&["SET", "gone", "v", "PXAT", "1"]);
    d.check(&["RANDOMKEY"]);
}

#[test]
fn expire_family_conditions_match_redis() {
    same_replies(&[
        &["SET", "k", "v"],
        &["EXPIRE", "k", "100"],
        &["TTL", "k"],
        &["EXPIRE", "k", "100", "NX"],
        &["EXPIRE", "k", "200", "XX"],
        &["EXPIRE", "k", "50", "GT"],
        &["EXPIRE", "k", "500", "GT"],
        &["EXPIRE", "k", "1000", "LT"],
        &["EXPIRE", "k", "10", "LT"],
        &["TTL", "k"],
        // GT and LT compare times each server computed from its own clock: the numbers stay
        // seconds away from the key's, so the outcome does not hang on a millisecond.
        &["EXPIRE", "k", "10", "NX", "XX"],
        &["EXPIRE", "k", "10", "GT", "LT"],
        &["EXPIRE", "k", "10", "NX", "GT"],
        &["EXPIRE", "k", "5", "XX", "GT"],
        &["EXPIRE", "k", "10", "foo"],
        &["EXPIRE", "k", "5", "gt", "GT"],
        &["EXPIRE", "k", "20", "gt", "XX"],
        &["TTL", "k"],
        &["EXPIRE", "k", "abc", "foo"],
        &["EXPIRE", "k", "abc", "NX", "XX"],
        &["EXPIRE", "k", "abc"],
        &["EXPIRE", "k", "1.5"],
        &["EXPIRE", "k", ""],
        &["EXPIRE", "nokey", "10"],
        &["EXPIRE", "nokey", "abc"],
        &["EXPIRE", "nokey", "9223372036854775807"],
        &["PERSIST", "k"],
        &["PERSIST", "k"],
        &["PERSIST", "nokey"],
        &["EXPIRE", "k", "10", "XX"],
        &["EXPIRE", "k", "10", "GT"],
        &["EXPIRE", "k", "10", "LT"],
        &["TTL", "k"],
        &["PERSIST", "k"],
        &["EXPIRE", "k", "100", "LT"],
        &["TTL", "k"],
        &["PERSIST", "k"],
        &["EXPIRE", "k", "100", "GT"],
        &["TTL", "k"],
        &["EXPIRE", "k"],
        &["PERSIST"],
        &["PERSIST", "k", "x"],
    ]);
}

#[test]
fn expire_times_past_zero_and_overflowing_match_redis() {
    same_replies(&[
        &["SET", "k", "v"],
        &["EXPIRE", "k", "9223372036854775807"],
        &["EXPIRE", "k", "9223372036854775"],
        &["EXPIRE", "k", "9223372036854776"],
        &["EXPIRE", "k", "-9223372036854775808"],
        &["EXPIRE", "k", "-9223372036854776"],
        &["PEXPIRE", "k", "9223372036854775807"],
        &["EXPIREAT", "k", "9223372036854775807"],
        &["EXPIREAT", "k", "9223372036854776"],
        &["EXISTS", "k"],
        &["PEXPIREAT", "k", "9223372036854775807"],
        &["PTTL", "k"],
        &["TTL", "k"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIREAT", "k", "9223372036854775806"],
        &["PEXPIRETIME", "k"],
        &["EXPIREAT", "k", "9223372036854775"],
        &["PEXPIRETIME", "k"],
        &["EXPIRETIME", "k"],
        &["EXPIREAT", "k", "99999999999"],
        &["TTL", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIRETIME", "k"],
        &["EXPIREAT", "k", "17000000000", "GT"],
        &["EXPIREAT", "k", "17000000000", "LT"],
        &["EXPIRETIME", "k"],
        &["PERSIST", "k"],
        &["PTTL", "k"],
        &["EXPIRETIME", "k"],
        &["PEXPIRETIME", "k"],
        &["TTL", "nokey"],
        &["PTTL", "nokey"],
        &["EXPIRETIME", "nokey"],
        &["PEXPIRETIME", "nokey"],
        // Zero, negative and past times delete the key and reply 1.
        &["EXPIRE", "k", "0"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-1"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIRE", "k", "-9223372036854775808"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIREAT", "k", "1"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["PEXPIREAT", "k", "0"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-9223372036854775"],
        &["EXISTS", "k"],
        // With conditions: GT refuses a past time on a key without one, LT takes it.
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-1", "GT"],
        &["EXISTS", "k"],
        &["EXPIRE", "k", "-1", "LT"],
        &["EXISTS", "k"],
        &["SET", "k", "v"],
        &["EXPIRE", "k", "-1", "NX"],
        &["EXISTS", "k"],
        &["SET", "k", "v", "EX", "100"],
        &["EXPIRE", "k", "-1", "XX"],
        &["EXISTS", "k"],
        &["SET", "k", "v", "EX", "100"],
        &["EXPIRE", "k", "-1", "GT"],
        &["TTL", "k"],
    ]);
}

#[test]
fn far_expiry_times_survive_every_move_like_redis() {
    same_replies(&[
        &["SET", "k", "v", "PXAT", "9000000000000000000"],
        &["PEXPIRETIME", "k"],
        &["COPY", "k", "c"],
        &["PEXPIRETIME", "c"],
        &["MOVE", "c", "1"],
        &["SELECT", "1"],
        &["PEXPIRETIME", "c"],
        &["SELECT", "0"],
        &["SWAPDB", "0", "1"],
        &["PEXPIRETIME", "c"],
        &["PEXPIRETIME", "k"],
        &["SWAPDB", "0", "1"],
        &["SET", "k", "v2", "KEEPTTL"],
        &["PEXPIRETIME", "k"],
        &["INCRBYFLOAT", "k2", "1"],
        &["PEXPIREAT", "k2", "9000000000000000001"],
        &["PEXPIRETIME", "k2"],
        &["EXPIRE", "k2", "100"],
        &["EXPIRETIME", "k2"],
        &["PEXPIREAT", "k2", "9000000000000000002"],
        &["PERSIST", "k2"],
        &["PEXPIRETIME", "k2"],
        &["GETEX", "k2", "PXAT", "9000000000000000003"],
        &["PEXPIRETIME", "k2"],
        &["SET", "k2", "plain"],
        &["PEXPIRETIME", "k2"],
        &["DEL", "k"],
        &["SET", "k", "v"],
        &["PEXPIRETIME", "k"],
        &["FLUSHDB"],
        &["SET", "k", "v"],
        &["PEXPIRETIME", "k"],
    ]);
}

#[test]
fn expired_keys_count_past_times_as_redis_does() {
    // SET with a past time writes a key that is expired at once (counted), while EXPIRE and
    // GETEX with one delete it (not counted).
    let Some(mut d) = Diff::start() else { return };
    let expired = |d: &mut Diff| {
        let field = |info: String| -> i64 {
            info.lines()
                .find_map(|l| l.strip_prefix("expired_keys:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("expired_keys")
        };
        let (expected, actual) = d.both(&[b"INFO", b"stats"]);
        (field(expected.text()), field(actual.text()))
    };
    let cases: &[&[&[&str]]] = &[
        &[&["SET", "k", "v"], &["EXPIRE", "k", "-1"]],
        &[&["SET", "k", "v", "PXAT", "1"], &["GET", "k"]],
        &[
            &["SET", "k", "v"],
            &["SET", "k", "w", "EXAT", "1", "GET"],
            &["GET", "k"],
        ],
        &[
            &["SET", "k", "v", "EX", "100"],
            &["GETEX", "k", "EXAT", "1"],
        ],
        &[&["SET", "k", "v"], &["PEXPIREAT", "k", "1"]],
        &[
            &["SET", "k", "v"],
            &["GETEX", "k", "PXAT", "1"],
            &["GET", "k"],
        ],
    ];
    for case in cases {
        let before = expired(&mut d);
        d.run(case);
        let after = expired(&mut d);
        assert_eq!(
            after.1 - before.1,
            after.0 - before.0,
            "expired_keys moved differently after {case:?}"
        );
    }
}
