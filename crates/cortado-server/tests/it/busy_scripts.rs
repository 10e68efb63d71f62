//! Scripts that run past `busy-reply-threshold`: other clients get `-BUSY`, `SCRIPT KILL`
//! stops a script that wrote nothing, `SHUTDOWN NOSAVE` stops the server; the replies
//! compared with redis-server 7.0 where they are deterministic.

use std::time::{Duration, Instant};

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::{Frame, RawClient, TestServer};

const ENDLESS: &str = "while true do end";
const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// Sends `script` (no keys) on `client` without reading its reply.
fn start_script(client: &mut RawClient, script: &str) {
    client.send_command(&[b"EVAL", script.as_bytes(), b"0"]);
    // The script's command must be read before the other client's.
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn busy_script_other_client_gets_busy_and_script_kill_ends_it() {
    let server = TestServer::with_args(&["--busy-reply-threshold", "100"]);
    let mut runner = server.raw();
    let mut other = server.raw();
    assert_eq!(other.call(&["SET", "k", "v"]), Frame::Simple("OK".into()));
    let started = Instant::now();
    start_script(&mut runner, ENDLESS);
    assert_eq!(other.call(&["GET", "k"]), Frame::Error(BUSY.into()));
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "BUSY before the threshold"
    );
    assert_eq!(other.call(&["PING"]), Frame::Error(BUSY.into()));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Frame::Simple("OK".into()));
    let sha = "694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7";
    assert_eq!(
        runner.read(),
        Some(Frame::Error(format!(
            "ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1."
        )))
    );
    assert_eq!(other.call(&["GET", "k"]), Frame::Bulk(b"v".to_vec()));
    assert_eq!(runner.call(&["INCR", "n"]), Frame::Int(1));
    assert_eq!(
        other.call(&["SCRIPT", "KILL"]),
        Frame::Error("NOTBUSY No scripts in execution right now.".into())
    );
}

#[test]
fn busy_script_in_a_pipelined_run_gets_killed_and_the_run_goes_on() {
    // The endless script runs under the hold its pipelined run keeps; the other client's
    // commands still get `-BUSY`, `SCRIPT KILL` still stops it, and the next script of the
    // run (under the same hold) and the other client then run.
    let server = TestServer::with_args(&["--busy-reply-threshold", "100"]);
    let mut runner = server.raw();
    let mut other = server.raw();
    assert_eq!(other.call(&["SET", "k", "v"]), Frame::Simple("OK".into()));
    let mut pipeline = Vec::new();
    for script in [
        "return redis.call('incr', 'n')",
        ENDLESS,
        "return redis.call('incr', 'n')",
    ] {
        pipeline.extend_from_slice(
            format!(
                "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
                script.len()
            )
            .as_bytes(),
        );
    }
    runner.send(&pipeline);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(other.call(&["GET", "k"]), Frame::Error(BUSY.into()));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Frame::Simple("OK".into()));
    assert_eq!(runner.read(), Some(Frame::Int(1)));
    assert!(matches!(runner.read(), Some(Frame::Error(e)) if e.starts_with("ERR Script killed")));
    assert_eq!(runner.read(), Some(Frame::Int(2)));
    assert_eq!(other.call(&["GET", "n"]), Frame::Bulk(b"2".to_vec()));
}

#[test]
fn busy_script_under_threshold_makes_others_wait_not_fail() {
    let server = TestServer::with_args(&["--busy-reply-threshold", "5000"]);
    let mut runner = server.raw();
    let mut other = server.raw();
    // About 0.3 s of work, well under the threshold.
    let script = "local t = redis.call('time') local s = t[1] * 1e6 + t[2] \
        while true do local u = redis.call('time') \
        if u[1] * 1e6 + u[2] - s > 300000 then return 'done' end end";
    start_script(&mut runner, script);
    assert_eq!(other.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(runner.read(), Some(Frame::Bulk(b"done".to_vec())));
}

#[test]
fn busy_script_pcall_does_not_catch_the_kill() {
    let server = TestServer::with_args(&["--busy-reply-threshold", "50"]);
    let mut runner = server.raw();
    let mut other = server.raw();
    start_script(
        &mut runner,
        "while true do pcall(function() while true do end end) end",
    );
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Frame::Simple("OK".into()));
    match runner.read() {
        Some(Frame::Error(text)) => assert!(
            text.starts_with("ERR Script killed by user with SCRIPT KILL..."),
            "{text}"
        ),
        other => panic!("expected the kill error, got {other:?}"),
    }
}

#[test]
fn busy_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server() {
    let server = TestServer::with_args(&["--busy-reply-threshold", "50"]);
    let mut runner = server.raw();
    let mut other = server.raw();
    start_script(&mut runner, "redis.call('set', 'x', 1) while true do end");
    assert_eq!(
        other.call(&["SCRIPT", "KILL"]),
        Frame::Error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.".into())
    );
    assert_eq!(other.call(&["SHUTDOWN"]), Frame::Error(BUSY.into()));
    other.send_command(&[b"SHUTDOWN", b"NOSAVE"]);
    assert_eq!(other.read(), None, "SHUTDOWN NOSAVE closes the connection");
    // The script was stopped and the server stops: its client is closed too.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.server.is_shutting_down() {
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = runner.read();
}

#[test]
fn busy_replies_match_redis() {
    let Some(pair) = Pair::start(&["--busy-reply-threshold", "100"]) else {
        return;
    };
    let (mut redis_runner, mut ours_runner) = pair.clients();
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["CONFIG", "GET", "busy-reply-threshold"],
            &["CONFIG", "GET", "lua-time-limit"],
            &["SCRIPT", "KILL"],
            &["SET", "k", "v"],
        ],
    );
    start_script(&mut redis_runner, ENDLESS);
    start_script(&mut ours_runner, ENDLESS);
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["GET", "k"],
            &["PING"],
            &["EXEC"],
            &["MULTI"],
            &["GET", "k"],
            &["EXEC"],
            &["CONFIG", "SET", "busy-reply-threshold", "200"],
            &["SHUTDOWN"],
            &["SHUTDOWN", "SAVE"],
            &["SCRIPT", "KILL"],
        ],
    );
    assert_eq!(redis_runner.read(), ours_runner.read());
    assert_same_replies(&mut redis, &mut ours, &[&["GET", "k"], &["SCRIPT", "KILL"]]);
    start_script(
        &mut redis_runner,
        "redis.call('incr', 'n') while true do end",
    );
    start_script(
        &mut ours_runner,
        "redis.call('incr', 'n') while true do end",
    );
    assert_same_replies(&mut redis, &mut ours, &[&["SCRIPT", "KILL"], &["GET", "n"]]);
}

#[test]
fn busy_function_replies_match_redis() {
    let Some(pair) = Pair::start(&["--busy-reply-threshold", "100"]) else {
        return;
    };
    let (mut redis_runner, mut ours_runner) = pair.clients();
    let (mut redis, mut ours) = pair.clients();
    let spin = "#!lua name=spin\nredis.register_function('spin', function() while true do end end)";
    assert_same_replies(&mut redis, &mut ours, &[&["FUNCTION", "LOAD", spin]]);
    for runner in [&mut redis_runner, &mut ours_runner] {
        runner.send_command(&[b"FCALL", b"spin", b"0"]);
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_same_replies(&mut redis, &mut ours, &[&["GET", "x"], &["SCRIPT", "KILL"]]);
    let Frame::Array(stats) = ours.call(&["FUNCTION", "STATS"]) else {
        panic!("FUNCTION STATS is a map")
    };
    let Frame::Array(running) = &stats[1] else {
        panic!("a running function: {stats:?}")
    };
    assert_eq!(running[1], Frame::Bulk(b"spin".to_vec()));
    assert_eq!(
        running[3],
        Frame::Array(vec![
            Frame::Bulk(b"FCALL".to_vec()),
            Frame::Bulk(b"spin".to_vec()),
            Frame::Bulk(b"0".to_vec())
        ])
    );
    assert_same_replies(&mut redis, &mut ours, &[&["FUNCTION", "KILL"]]);
    assert_eq!(redis_runner.read(), ours_runner.read());
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[&["FUNCTION", "STATS"], &["FUNCTION", "KILL"]],
    );
}

#[test]
fn function_load_that_never_ends_times_out_as_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["FUNCTION", "LOAD", "#!lua name=loop\nwhile true do end"],
            &["PING"],
            &["FUNCTION", "LIST"],
        ],
    );
}

#[test]
fn busy_script_with_clients_hammering_every_one_gets_busy_then_service() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let server = TestServer::with_args(&["--busy-reply-threshold", "50"]);
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let mut c = server.raw();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut busy, mut served) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    match c.call(&["INCR", "hits"]) {
                        Frame::Int(_) => served += 1,
                        Frame::Error(e) if e == BUSY => busy += 1,
                        other => panic!("unexpected reply {other:?}"),
                    }
                }
                (busy, served)
            })
        })
        .collect();
    let mut runner = server.raw();
    let mut killer = server.raw();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(30));
        runner.send_command(&[b"EVAL", ENDLESS.as_bytes(), b"0"]);
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(killer.call(&["SCRIPT", "KILL"]), Frame::Simple("OK".into()));
        assert!(matches!(runner.read(), Some(Frame::Error(e)) if e.contains("Script killed")));
    }
    std::thread::sleep(Duration::from_millis(30));
    stop.store(true, Ordering::Relaxed);
    let (mut busy, mut served) = (0, 0);
    for w in workers {
        let (b, s) = w.join().expect("no client hung or failed");
        busy += b;
        served += s;
    }
    assert!(busy > 0, "some commands were refused as BUSY");
    assert!(served > 0, "commands were served between the scripts");
    assert_eq!(
        runner.call(&["GET", "hits"]),
        Frame::Bulk(served.to_string().into_bytes())
    );
}
