//! Redis 7 functions and `#!lua` script flags against `redis-server`: the same commands on
//! each, every reply compared frame by frame; `FUNCTION DUMP` payloads restored across.

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::Frame;

const LIB: &str = "#!lua name=mylib\nredis.register_function{function_name='getter', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes', 'allow-oom'}, description='reads a key'}";
const WRITER: &str = "#!lua name=w\nredis.register_function('setter', function(keys, args) return redis.call('set', keys[1], args[1]) end)";

#[test]
fn functions_load_call_list_delete_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", "REPLACE", LIB],
            &["FUNCTION", "LOAD", WRITER],
            &["SET", "k", "v"],
            &["FCALL", "getter", "1", "k"],
            &["FCALL_RO", "getter", "1", "k"],
            &["FCALL", "setter", "1", "k", "v2"],
            &["FCALL_RO", "setter", "1", "k", "v3"],
            &["GET", "k"],
            &["FCALL", "nosuch", "0"],
            &["FCALL", "getter", "-1"],
            &["FCALL", "getter", "5", "k"],
            // One library each: Redis lists them in its hash table's order.
            &["FUNCTION", "LIST", "LIBRARYNAME", "w"],
            &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "zz"],
            &["FUNCTION", "LIST", "LIBRARYNAME"],
            &["FUNCTION", "LIST", "bogus"],
            &["FUNCTION", "STATS"],
            &["FUNCTION", "KILL"],
            &["FUNCTION", "DELETE", "nosuch"],
            &["FUNCTION", "DELETE", "w"],
            &["FCALL", "setter", "1", "k", "v"],
            &["FUNCTION", "FLUSH", "bogus"],
            &["FUNCTION", "FLUSH", "ASYNC", "x"],
            &["FUNCTION", "FLUSH"],
            &["FUNCTION", "LIST"],
            &["FUNCTION", "RESTORE", "garbage"],
            &["FUNCTION", "RESTORE", "garbage", "BOGUS"],
        ],
    );
}

#[test]
fn functions_load_errors_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let cases = [
        "return 1",
        "#!lua",
        "#!lua name=",
        "#!lua name=a b=c",
        "#!py name=x",
        "#!lua name=bad-name!\nredis.register_function('f', function() return 1 end)",
        "#!lua name=nofuncs\nreturn 1",
        "#!lua name=x2\nredis.register_function('g')",
        "#!lua name=x3\nredis.register_function('g', 5)",
        "#!lua name=x4\nredis.register_function{function_name='g', callback=function() end, flags={'bogus'}}",
        "#!lua name=x5\nredis.register_function{function_name='g', callback=function() end, bogus=1}",
        "#!lua name=x6\nredis.register_function{callback=function() end}",
        "#!lua name=x7\nredis.register_function('bad name', function() end)",
        "#!lua name=x8\nredis.call('ping')",
        "#!lua name=x9\nsyntax error here",
        "#!lua name=x10\nredis.register_function('g', function() end) redis.register_function('g', function() end)",
        "#!lua name=x11\nlocal x = KEYS",
        "#!lua name=x12\nredis.register_function{function_name='g', callback=function() end, flags='no-writes'}",
        "#!lua name=x13\nredis.register_function('g', function() end, 'extra')",
        "#!lua name=x15\nredis.register_function{function_name='g', callback=5}",
        "#!lua name=x17\nredis.register_function{'g', function() end}",
        "#!lua name=one\nredis.register_function('same', function() return 1 end)",
        "#!lua name=two\nredis.register_function('same', function() return 2 end)",
        "#!lua name=e1\nredis.register_function('e1', function(keys, args) return redis.call('nosuch') end)",
        "#!lua name=e2\nredis.register_function('e2', function(keys, args) error('boom') end)",
        "#!lua name=e3\nlocal function inner() redis.call('set', 'x') end\nredis.register_function('e3', function(keys, args) inner() end)",
        "#!lua name=e4\nredis.register_function('e4', function(keys, args) return KEYS end)",
    ];
    let mut commands: Vec<Vec<&str>> = cases
        .iter()
        .map(|code| vec!["FUNCTION", "LOAD", *code])
        .collect();
    for f in ["e1", "e2", "e3", "e4", "same"] {
        commands.push(vec!["FCALL", f, "0"]);
    }
    let commands: Vec<&[&str]> = commands.iter().map(|c| c.as_slice()).collect();
    assert_same_replies(&mut redis, &mut ours, &commands);
}

#[test]
fn eval_shebang_flags_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &[
                "EVAL",
                "#!lua flags=no-writes\nreturn redis.call('set','x','1')",
                "0",
            ],
            &["EVAL", "#!lua\nreturn redis.call('set','x','1')", "0"],
            &["EVAL", "#!lua flags=bogus\nreturn 1", "0"],
            &["EVAL", "#!py\nreturn 1", "0"],
            &["EVAL", "#!lua name=x\nreturn 1", "0"],
            &["EVAL_RO", "#!lua\nreturn 1", "0"],
            &["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"],
            &["EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", "0"],
            &["EVAL", "#!lua\nreturn KEYS[1]", "1", "k"],
            &["EVAL", "#!lua\nerror('at two')", "0"],
            &["SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 2"],
            &[
                "EVALSHA_RO",
                "ae33f9227913b24d053a555637f98260b23bd3a3",
                "0",
            ],
        ],
    );
}

#[test]
fn functions_maxmemory_flags_match_redis() {
    let Some(pair) = Pair::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVAL", "#!lua\nreturn 1", "0"],
            &[
                "EVAL",
                "#!lua flags=allow-oom\nreturn redis.call('set', 'a', 1)",
                "0",
            ],
            &["EVAL", "#!lua flags=no-writes\nreturn 1", "0"],
            &["EVAL", "return redis.call('set', 'b', 1)", "0"],
        ],
    );
}

#[test]
fn function_dump_restores_across_redis_and_cortado() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_eq!(
        redis.call(&["FUNCTION", "LOAD", LIB]),
        Frame::Bulk(b"mylib".to_vec())
    );
    assert_eq!(
        ours.call(&["FUNCTION", "LOAD", WRITER]),
        Frame::Bulk(b"w".to_vec())
    );
    let Frame::Bulk(from_redis) = redis.call(&["FUNCTION", "DUMP"]) else {
        panic!("a payload from redis")
    };
    let Frame::Bulk(from_ours) = ours.call(&["FUNCTION", "DUMP"]) else {
        panic!("a payload from cortado")
    };
    let restore = |client: &mut crate::common::RawClient, payload: &[u8], policy: &[u8]| {
        let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", payload];
        if !policy.is_empty() {
            args.push(policy);
        }
        client.send_command(&args);
        client.read().expect("a reply")
    };
    assert_eq!(
        restore(&mut ours, &from_redis, b""),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        restore(&mut redis, &from_ours, b""),
        Frame::Simple("OK".into())
    );
    // Both now hold both libraries: the same listing, and APPEND collides on each.
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[&["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "mylib"]],
    );
    assert_eq!(
        restore(&mut redis, &from_ours, b"APPEND"),
        restore(&mut ours, &from_ours, b"APPEND")
    );
    assert_eq!(
        restore(&mut redis, &from_ours, b"REPLACE"),
        restore(&mut ours, &from_ours, b"REPLACE")
    );
    assert_eq!(
        restore(&mut redis, &from_ours, b"FLUSH"),
        restore(&mut ours, &from_ours, b"FLUSH")
    );
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "w"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "mylib"],
            &["FUNCTION", "STATS"],
        ],
    );
}

#[test]
fn scripts_and_functions_get_binary_and_text_arguments_intact() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let echo = "#!lua name=echo\nredis.register_function('echo', function(keys, args) return {keys, args} end)";
    assert_same_replies(&mut redis, &mut ours, &[&["FUNCTION", "LOAD", echo]]);
    let binary: &[u8] = b"k\xff\x00\xfe";
    let commands: [&[&[u8]]; 4] = [
        &[
            b"EVAL",
            b"return {KEYS, ARGV}",
            b"2",
            binary,
            b"text",
            b"caf\xc3\xa9",
            binary,
        ],
        &[b"EVAL", b"return {KEYS, ARGV}", b"1", b"plain", b"a", b"b"],
        &[b"FCALL", b"echo", b"1", binary, b"caf\xc3\xa9"],
        &[b"FCALL", b"echo", b"0", b"x", binary],
    ];
    for command in commands {
        redis.send_command(command);
        ours.send_command(command);
        assert_eq!(redis.read(), ours.read(), "{command:?}");
    }
}
