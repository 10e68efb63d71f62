//! Differential tests of the list commands (see `differential.rs`).

use crate::differential::{same_replies, Diff};

#[test]
fn list_pushes_pops_and_errors_match_redis() {
    same_replies(&[
        &["RPUSH", "l", "a", "b", "c"],
        &["LPUSH", "l", "x", "y"],
        &["LRANGE", "l", "0", "-1"],
        &["LPUSHX", "none", "a"],
        &["RPUSHX", "l", "z"],
        &["EXISTS", "none"],
        &["LPOP", "l"],
        &["RPOP", "l", "2"],
        &["LPOP", "l", "0"],
        &["LPOP", "l", "x"],
        &["LPOP", "l", "-1"],
        &["LPOP", "l", "1", "2"],
        &["LPOP", "none"],
        &["LPOP", "none", "2"],
        &["RPOP", "l", "100"],
        &["EXISTS", "l"],
        &["SET", "s", "v"],
        &["LPUSH", "s", "a"],
        &["LPOP", "s"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "1"],
        &["LLEN", "none"],
        &["TYPE", "l"],
        &["RPUSH", "l", "a"],
        &["TYPE", "l"],
        &["OBJECT", "ENCODING", "l"],
    ]);
}

#[test]
fn list_indexes_and_ranges_match_redis() {
    let mut commands: Vec<Vec<&str>> = vec![vec!["RPUSH", "l", "a", "b", "c", "d", "e", "b"]];
    for (a, b) in [
        ("0", "-1"),
        ("-2", "-1"),
        ("-100", "100"),
        ("3", "1"),
        ("6", "10"),
        ("-1", "-2"),
        ("2", "2"),
        ("x", "1"),
    ] {
        commands.push(vec!["LRANGE", "l", a, b]);
        commands.push(vec!["LRANGE", "none", a, b]);
    }
    for i in ["0", "5", "-1", "-6", "-7", "6", "x"] {
        commands.push(vec!["LINDEX", "l", i]);
    }
    commands.extend([
        vec!["LINDEX", "none", "x"],
        vec!["LSET", "l", "1", "B"],
        vec!["LSET", "l", "-1", "Z"],
        vec!["LSET", "l", "6", "x"],
        vec!["LSET", "l", "x", "x"],
        vec!["LSET", "none", "0", "x"],
        vec!["LINSERT", "l", "BEFORE", "c", "c0"],
        vec!["LINSERT", "l", "after", "Z", "end"],
        vec!["LINSERT", "l", "AFTER", "nope", "x"],
        vec!["LINSERT", "l", "MIDDLE", "c", "x"],
        vec!["LINSERT", "none", "BEFORE", "a", "b"],
        vec!["LRANGE", "l", "0", "-1"],
        vec!["RPUSH", "r", "a", "b", "a", "c", "a", "b", "a"],
        vec!["LPOS", "r", "a"],
        vec!["LPOS", "r", "a", "RANK", "2"],
        vec!["LPOS", "r", "a", "RANK", "-1"],
        vec!["LPOS", "r", "a", "RANK", "-2", "COUNT", "2"],
        vec!["LPOS", "r", "a", "COUNT", "0"],
        vec!["LPOS", "r", "a", "COUNT", "0", "MAXLEN", "3"],
        vec!["LPOS", "r", "a", "RANK", "-1", "MAXLEN", "2"],
        vec!["LPOS", "r", "z"],
        vec!["LPOS", "r", "z", "COUNT", "2"],
        vec!["LPOS", "r", "a", "RANK", "0"],
        vec!["LPOS", "r", "a", "RANK", "x"],
        vec!["LPOS", "r", "a", "COUNT", "-1"],
        vec!["LPOS", "r", "a", "MAXLEN", "-1"],
        vec!["LPOS", "r", "a", "COUNT"],
        vec!["LPOS", "r", "a", "FOO", "1"],
        vec!["LPOS", "none", "a"],
        vec!["LPOS", "none", "a", "COUNT", "1"],
        vec!["LREM", "r", "2", "a"],
        vec!["LRANGE", "r", "0", "-1"],
        vec!["LREM", "r", "-1", "a"],
        vec!["LRANGE", "r", "0", "-1"],
        vec!["LREM", "r", "0", "b"],
        vec!["LREM", "r", "x", "b"],
        vec!["LREM", "none", "0", "b"],
        vec!["LRANGE", "r", "0", "-1"],
        vec!["LREM", "r", "0", "a"],
        vec!["LREM", "r", "0", "c"],
        vec!["EXISTS", "r"],
        vec!["RPUSH", "t", "1", "2", "3", "4", "5"],
        vec!["LTRIM", "t", "1", "-2"],
        vec!["LRANGE", "t", "0", "-1"],
        vec!["LTRIM", "t", "-100", "100"],
        vec!["LTRIM", "t", "x", "1"],
        vec!["LTRIM", "none", "0", "1"],
        vec!["LTRIM", "t", "2", "1"],
        vec!["EXISTS", "t"],
    ]);
    let refs: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    same_replies(&refs);
}

#[test]
fn list_moves_and_multi_pops_match_redis() {
    same_replies(&[
        &["RPUSH", "a", "1", "2", "3"],
        &["LMOVE", "a", "b", "LEFT", "RIGHT"],
        &["LMOVE", "a", "b", "right", "left"],
        &["LMOVE", "a", "a", "LEFT", "RIGHT"],
        &["LRANGE", "a", "0", "-1"],
        &["LRANGE", "b", "0", "-1"],
        &["RPOPLPUSH", "a", "b"],
        &["EXISTS", "a"],
        &["RPOPLPUSH", "a", "b"],
        &["LMOVE", "none", "b", "LEFT", "LEFT"],
        &["LMOVE", "b", "c", "UP", "LEFT"],
        &["SET", "s", "v"],
        &["LMOVE", "b", "s", "LEFT", "LEFT"],
        &["LMOVE", "s", "b", "LEFT", "LEFT"],
        &["LRANGE", "b", "0", "-1"],
        &["LMPOP", "3", "none", "b", "c", "LEFT", "COUNT", "2"],
        &["LMPOP", "1", "b", "RIGHT"],
        &["LMPOP", "1", "b", "RIGHT"],
        &["LMPOP", "1", "none", "LEFT"],
        &["LMPOP", "0", "b", "LEFT"],
        &["LMPOP", "1", "b", "UP"],
        &["LMPOP", "1", "b", "LEFT", "COUNT", "0"],
        &["LMPOP", "2", "s", "b", "LEFT"],
        &["LMPOP", "9", "b", "LEFT"],
    ]);
}

#[test]
fn list_long_elements_and_many_chunks_match_redis() {
    let Some(mut diff) = Diff::start() else {
        return;
    };
    let big = "v".repeat(9000);
    let values: Vec<String> = (0..2000).map(|i| format!("value-{i}")).collect();
    let mut rpush: Vec<&str> = vec!["RPUSH", "l"];
    rpush.extend(values.iter().map(String::as_str));
    diff.check(&rpush);
    diff.run(&[
        &["LPUSH", "l", &big],
        &["RPUSH", "l", &big],
        &["LLEN", "l"],
        &["LINDEX", "l", "1000"],
        &["LINDEX", "l", "-1000"],
        &["LRANGE", "l", "995", "1005"],
        &["LSET", "l", "1000", &big],
        &["LINSERT", "l", "BEFORE", "value-500", "x"],
        &["LPOS", "l", "value-1999"],
        &["LREM", "l", "0", &big],
        &["LTRIM", "l", "100", "-100"],
        &["LLEN", "l"],
        &["LRANGE", "l", "0", "3"],
        &["LRANGE", "l", "-3", "-1"],
        &["RPOP", "l", "5"],
        &["LPOP", "l", "5"],
    ]);
}

#[test]
fn sort_on_lists_and_sorted_sets_matches_redis() {
    same_replies(&[
        &["RPUSH", "l", "3", "1", "2", "10", "-5", "2.5"],
        &["SORT", "l"],
        &["SORT", "l", "DESC"],
        &["SORT", "l", "ALPHA"],
        &["SORT", "l", "ALPHA", "DESC", "LIMIT", "1", "2"],
        &["SORT", "l", "LIMIT", "0", "0"],
        &["SORT", "l", "LIMIT", "-1", "3"],
        &["SORT", "l", "LIMIT", "4", "-1"],
        &["SORT", "l", "LIMIT", "10", "5"],
        &["SORT", "l", "BY", "nosort"],
        &["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "3"],
        &[
            "MSET", "w_3", "1", "w_1", "9", "w_2", "5", "w_10", "2", "w_-5", "7",
        ],
        &["MSET", "o_3", "three", "o_1", "one", "o_2", "two"],
        &["SORT", "l", "BY", "w_*"],
        &["SORT", "l", "BY", "w_*", "GET", "#", "GET", "o_*"],
        &[
            "SORT", "l", "BY", "w_*", "ALPHA", "DESC", "GET", "o_*", "GET", "#",
        ],
        &["SORT", "l", "GET", "o_*", "LIMIT", "0", "3"],
        &["SORT", "l", "GET", "o_*->f"],
        &["SORT", "l", "GET", "nostar"],
        &["SORT", "l", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["SORT", "l", "GET", "o_*", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["SORT", "none", "STORE", "dst"],
        &["EXISTS", "dst"],
        &["SORT", "none"],
        &["RPUSH", "bad", "1", "x"],
        &["SORT", "bad"],
        &["SORT", "bad", "ALPHA"],
        &["SORT", "l", "LIMIT", "1"],
        &["SORT", "l", "FOO"],
        &["SORT", "l", "LIMIT", "x", "1"],
        &["SORT_RO", "l", "STORE", "dst"],
        &["SORT_RO", "l", "DESC"],
        &["ZADD", "z", "1", "c", "2", "a", "3", "b"],
        &["SORT", "z", "ALPHA"],
        &["SORT", "z", "BY", "nosort"],
        &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "0", "2"],
        &["SORT", "z"],
        &["ZADD", "n", "1", "30", "2", "10", "3", "20"],
        &["SORT", "n"],
        &["SET", "s", "v"],
        &["SORT", "s"],
    ]);
}

#[test]
fn sort_on_sets_and_by_hash_fields_matches_redis() {
    same_replies(&[
        &["SADD", "set", "3", "1", "2", "10", "-5"],
        &["SORT", "set"],
        &["SORT", "set", "DESC", "LIMIT", "1", "2"],
        &["SADD", "words", "pear", "apple", "fig"],
        &["SORT", "words", "ALPHA"],
        // Unsorted and stored: sorted as strings, whatever the set's layout.
        &["SORT", "words", "BY", "nosort", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["SORT", "set", "BY", "nosort", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["HSET", "h_3", "w", "1", "name", "three"],
        &["HSET", "h_1", "w", "9", "name", "one"],
        &["HSET", "h_2", "w", "5"],
        &[
            "SORT",
            "set",
            "BY",
            "h_*->w",
            "GET",
            "#",
            "GET",
            "h_*->name",
        ],
        &["SORT", "set", "BY", "h_*->missing", "GET", "h_*->w"],
        &["SORT", "set", "GET", "h_*"],
    ]);
}
