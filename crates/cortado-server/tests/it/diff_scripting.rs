//! Scripts against `redis-server`: the same `EVAL`s on each, every reply compared frame by
//! frame (see `scripting.rs` for the concurrent patterns).

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::Frame;

#[test]
fn scripting_returns_of_every_type_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVAL", "return 1", "0"],
            &["EVAL", "return 3.99", "0"],
            &["EVAL", "return -3.99", "0"],
            &["EVAL", "return 'text'", "0"],
            &["EVAL", "return true", "0"],
            &["EVAL", "return false", "0"],
            &["EVAL", "return nil", "0"],
            &["EVAL", "return {1, 2, nil, 4}", "0"],
            &["EVAL", "return {1, 'x', {2, false, true}, {}}", "0"],
            &["EVAL", "return {ok = 'FINE'}", "0"],
            &["EVAL", "return {ok = 'a\\nb'}", "0"],
            &["EVAL", "return {err = 'MINE went wrong'}", "0"],
            &["EVAL", "return {err = 'E', ok = 'O'}", "0"],
            &["EVAL", "return {double = 1.5}", "0"],
            &["EVAL", "return redis.error_reply('X y')", "0"],
            &["EVAL", "return redis.error_reply('boom')", "0"],
            &["EVAL", "return redis.status_reply('Z')", "0"],
            &["EVAL", "return redis.sha1hex('')", "0"],
            &["EVAL", "return KEYS[1] .. ARGV[1] .. #ARGV", "1", "a", "b", "c"],
            &["EVAL", "return {KEYS, ARGV}", "2", "k1", "k2", "a1"],
            &["SET", "n", "12"],
            &[
                "EVAL",
                "return {redis.call('get', 'n'), redis.call('get', 'nokey'), redis.call('incr', 'n'), redis.call('ping'), redis.call('type', 'n')}",
                "0",
            ],
            &["EVAL", "return redis.call('type', 'n').ok", "0"],
            &["EVAL", "return redis.call('set', 'f', 1.5)", "0"],
            &["GET", "f"],
            &["EVAL", "return redis.call('incrby', 'n', 2^31)", "0"],
            &["EVAL", "redis.setresp(3) return redis.call('get', 'nokey')", "0"],
            &["EVAL", "redis.setresp(3) return {double = 2.5}", "0"],
            &["EVAL", "redis.setresp(3) return true", "0"],
            &["EVAL", "return {map = {a = 1}}", "0"],
            &["EVAL", "local t = {} t[1] = 'a' t[3] = 'c' return t", "0"],
        ],
    );
}

#[test]
fn scripting_keys_and_argv_changed_by_a_script_are_fresh_at_the_next_run() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let count = "local n = 0 for _ in pairs(KEYS) do n = n + 1 end \
        for _ in pairs(ARGV) do n = n + 1 end return {n, #KEYS, #ARGV, KEYS[1], ARGV[1]}";
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &[
                "EVAL",
                "KEYS.extra = 1 KEYS[7] = 'x' ARGV[1] = nil table.insert(ARGV, 'y') \
                 return {KEYS, ARGV}",
                "3",
                "k1",
                "k2",
                "k3",
                "a1",
                "a2",
            ],
            &["EVAL", count, "1", "only", "arg"],
            &["EVAL", count, "0"],
            &["EVAL", "KEYS[1] = 'changed' error('boom')", "1", "k"],
            &["EVAL", count, "1", "kept"],
            &["EVAL", "return {KEYS, {ARGV}}", "2", "k1", "k2", "a1"],
            &["EVAL", count, "0", "a"],
        ],
    );
}

#[test]
fn scripting_resp3_client_conversions_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert!(matches!(redis.call(&["HELLO", "3"]), Frame::Map(_)));
    assert!(matches!(ours.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVAL", "return nil", "0"],
            &["EVAL", "return false", "0"],
            &["EVAL", "return true", "0"],
            &["EVAL", "return {double = 1.5}", "0"],
            &["EVAL", "redis.setresp(3) return false", "0"],
            &["EVAL", "redis.setresp(3) return {double = 0.25}", "0"],
            &["SET", "s", "1"],
            &[
                "EVAL",
                "redis.setresp(3) local t = redis.call('get', 'nokey') return t == nil",
                "0",
            ],
            &["EVAL", "return redis.call('get', 'nokey')", "0"],
        ],
    );
}

#[test]
fn scripting_errors_and_pcall_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVAL", "return 1", "-1"],
            &["EVAL", "return 1", "2", "a"],
            &["EVAL", "return 1", "x"],
            &["EVAL"],
            &["EVAL", "return 'a' .. ", "0"],
            &["EVAL", "return error('boom')", "0"],
            &["EVAL", "local x = nil\nreturn x.y", "0"],
            &["EVAL", "error({err = 'CUSTOM thrown'})", "0"],
            &["EVAL", "return redis.call('nosuch')", "0"],
            &["EVAL", "return redis.call('get')", "0"],
            &["EVAL", "return redis.call()", "0"],
            &["EVAL", "return redis.call('get', {})", "0"],
            &["EVAL", "return redis.call('set', 'k', 'v', 'x')", "0"],
            &["EVAL", "\n\nredis.call('set', 'k', 'v', 'x')", "0"],
            &["EVAL", "return redis.pcall('set', 'k', 'v', 'x')", "0"],
            &["EVAL", "return redis.pcall('nosuch')", "0"],
            &[
                "EVAL",
                "local t = redis.pcall('incr', 'k') return {type(t), t['err']}",
                "0",
            ],
            &["SET", "k", "notanumber"],
            &["EVAL", "return redis.call('incr', KEYS[1])", "1", "k"],
            &["EVAL", "return redis.setresp(4)", "0"],
            &["EVAL", "return redis.set_repl(9)", "0"],
            &[
                "EVAL",
                "redis.set_repl(redis.REPL_ALL) redis.replicate_commands() return 1",
                "0",
            ],
            &[
                "EVAL",
                "redis.log(redis.LOG_WARNING, 'from a test') return 1",
                "0",
            ],
        ],
    );
}

#[test]
fn scripting_cache_commands_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    let upper = sha.to_ascii_uppercase();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVALSHA", sha, "0"],
            &["EVALSHA", "abc", "0"],
            &["EVALSHA", "abc", "x"],
            &["SCRIPT", "EXISTS", sha, "nope"],
            &["SCRIPT", "LOAD", "return 1"],
            &["SCRIPT", "EXISTS", sha, &upper, "nope"],
            &["EVALSHA", sha, "0"],
            &["EVALSHA", &upper, "0"],
            &["EVALSHA", sha, "x"],
            &["EVALSHA_RO", sha, "0"],
            &["SCRIPT", "LOAD", "return 'a' .."],
            &["SCRIPT", "FLUSH", "bad"],
            &["SCRIPT", "FLUSH", "ASYNC", "SYNC"],
            &["SCRIPT", "FLUSH"],
            &["SCRIPT", "EXISTS", sha],
            &["EVALSHA", sha, "0"],
            &["EVAL", "return 2", "0"],
            &[
                "SCRIPT",
                "EXISTS",
                "7f923f79fe76194c868d7e1d0820de36700eb649",
            ],
            &["EVALSHA", "7f923f79fe76194c868d7e1d0820de36700eb649", "0"],
            &["SCRIPT", "FLUSH", "sync"],
            &["SCRIPT", "NOSUCH"],
            &["SCRIPT", "LOAD"],
        ],
    );
}

#[test]
fn scripting_sandbox_and_refusals_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["EVAL", "x = 1 return 1", "0"],
            &["EVAL", "_G.x = 1 return 1", "0"],
            &["EVAL", "string.x = 1 return 1", "0"],
            &["EVAL", "redis.call = nil return 1", "0"],
            &["EVAL", "return y", "0"],
            &["EVAL", "return os.clock()", "0"],
            &["EVAL", "return io", "0"],
            &["EVAL", "return loadfile", "0"],
            &["EVAL", "return dofile", "0"],
            &["EVAL", "return require", "0"],
            &["EVAL", "return print", "0"],
            &["EVAL", "return debug", "0"],
            &["EVAL", "return type(loadstring)", "0"],
            &["EVAL", "return loadstring('return 1 + 2')()", "0"],
            &["EVAL", "return loadstring('y = 1')()", "0"],
            &["EVAL", "return loadstring('return os')()", "0"],
            &[
                "EVAL",
                "return {type(pcall), type(string.rep), type(_G), type(unpack)}",
                "0",
            ],
            &["EVAL", "local x = 5 return x", "0"],
            &["EVAL", "return redis.call('multi')", "0"],
            &["EVAL", "return redis.call('eval', 'return 1', '0')", "0"],
            &["EVAL", "return redis.call('subscribe', 'c')", "0"],
            &["EVAL", "return redis.call('watch', 'k')", "0"],
            &[
                "EVAL",
                "return redis.pcall('script', 'load', 'return 1')",
                "0",
            ],
            &["EVAL_RO", "return redis.call('set', 'k', 'v')", "1", "k"],
            &["EVAL_RO", "return redis.pcall('del', 'k')", "1", "k"],
            &["SET", "k", "v"],
            &["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"],
            &[
                "EVAL",
                "redis.call('select', 1) return redis.call('get', 'k')",
                "0",
            ],
            &["GET", "k"],
        ],
    );
}

#[test]
fn scripting_eval_inside_exec_matches_redis() {
    let Some(pair) = Pair::start(&["--notify-keyspace-events", "KEA"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["MULTI"],
            &["SET", "a", "1"],
            &["EVAL", "return redis.call('incr', KEYS[1])", "1", "a"],
            &["EVAL", "return redis.call('nosuch')", "0"],
            &["GET", "a"],
            &["EXEC"],
        ],
    );
    // The events of a script's commands reach a subscriber after the script, in order.
    let (mut redis_sub, mut ours_sub) = pair.clients();
    for sub in [&mut redis_sub, &mut ours_sub] {
        assert!(matches!(
            sub.call(&["PSUBSCRIBE", "__keyspace@0__:*"]),
            Frame::Array(_)
        ));
    }
    let script = "redis.call('set', KEYS[1], 'x') redis.call('del', KEYS[1]) redis.call('incr', KEYS[2]) return 1";
    assert_eq!(
        redis.call(&["EVAL", script, "2", "e1", "e2"]),
        ours.call(&["EVAL", script, "2", "e1", "e2"])
    );
    for _ in 0..3 {
        assert_eq!(redis_sub.read(), ours_sub.read());
    }
}

/// The RESP encoding of one command.
fn encoded(args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for arg in args {
        out.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    out
}

#[test]
fn scripting_pipelined_runs_of_scripts_among_other_commands_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let incr = "return redis.call('incr', KEYS[1])";
    let sha = String::from_utf8(cortado_server::lua::sha1_hex(incr.as_bytes()).to_vec()).unwrap();
    let mut pipeline = encoded(&["SCRIPT", "LOAD", incr]);
    // More scripts in a row than one hold runs, and other commands between runs.
    for i in 0..70 {
        pipeline.push_str(&encoded(&["EVALSHA", &sha, "1", "c"]));
        if i % 20 == 19 {
            pipeline.push_str(&encoded(&["GET", "c"]));
        }
    }
    let incr_s: &[&str] = &["EVAL", "return redis.call('incr', KEYS[1])", "1", "s"];
    let incrby_e: &[&str] = &["EVAL", "return redis.call('incrby', KEYS[1], 2)", "1", "e"];
    let before_inline: [&[&str]; 8] = [
        incr_s,
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "c"],
        &["SET", "s", "text"],
        incr_s,
        &["EVAL_RO", "return redis.call('del', KEYS[1])", "1", "c"],
        &["EVALSHA", "0000000000000000000000000000000000000000", "0"],
        &["EXISTS", "c", "s"],
        &["EVAL", "return {KEYS[1], ARGV[1]}", "1", "k", "a"],
    ];
    let after_inline: [&[&str]; 8] = [
        &["EVAL", "return redis.call('get', 'c')", "0"],
        // A RESP3 client subscribed to its own events: the scripts' events go before each
        // script's reply.
        &["HELLO", "3"],
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
        &["SUBSCRIBE", "__keyevent@0__:incrby"],
        incrby_e,
        incrby_e,
        incrby_e,
        &["EVALSHA", &sha, "1", "c"],
    ];
    for command in before_inline {
        pipeline.push_str(&encoded(command));
    }
    // An inline command between runs.
    pipeline.push_str("PING\r\n");
    for command in after_inline {
        pipeline.push_str(&encoded(command));
    }
    pipeline.push_str(&encoded(&["CONFIG", "SET", "notify-keyspace-events", ""]));
    let (want, got) = pair.exchange(pipeline.as_bytes());
    assert!(want.text().contains(":71\r\n"), "{}", want.text());
    assert_eq!(
        without_client_id(&got.text()),
        without_client_id(&want.text())
    );
}

/// `HELLO`'s reply without the connection's id, which differs between the servers.
fn without_client_id(text: &str) -> String {
    let field = "$2\r\nid\r\n:";
    match text.find(field) {
        Some(at) => {
            let rest = &text[at + field.len()..];
            let end = rest.find("\r\n").unwrap_or(rest.len());
            format!("{}{}", &text[..at + field.len()], &rest[end..])
        }
        None => text.to_owned(),
    }
}
