//! Connection and server commands against `redis-server`: PING, ECHO, SELECT, HELLO, RESET,
//! QUIT, CLIENT, SLOWLOG, TIME, LASTSAVE, DEBUG, FUNCTION FLUSH, MONITOR; and `redis-cli`
//! used interactively.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::{program_available, Frame, RawClient, TestServer};

/// Both servers, with DEBUG allowed on redis-server as it is here by default.
fn pair() -> Option<Pair> {
    Pair::start(&["--enable-debug-command", "yes"])
}

#[test]
fn connection_commands_match_redis() {
    let Some(pair) = pair() else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["PING"],
            &["PING", "hello"],
            &["PING", ""],
            &["PING", "a", "b"],
            &["ping"],
            &["ECHO"],
            &["ECHO", ""],
            &["ECHO", "a", "b"],
            &["SELECT", "15"],
            &["SELECT", "16"],
            &["SELECT", "-1"],
            &["SELECT", "abc"],
            &["SELECT", "01"],
            &["SELECT", "0"],
            &["AUTH", "x"],
            &["AUTH", "a", "b"],
            &["AUTH", "default", "x"],
            &["AUTH", "a", "b", "c"],
            &["HELLO", "1"],
            &["HELLO", "4"],
            &["HELLO", "abc"],
            &["HELLO", "3.0"],
            &["HELLO", "2", "FOO"],
            &["HELLO", "2", "AUTH", "default"],
            &["HELLO", "2", "AUTH", "default", "x", "FOO"],
            &["HELLO", "2", "SETNAME"],
            &["HELLO", "2", "SETNAME", "a b"],
            &["HELLO", "2", "AUTH", "nobody", "x"],
            &["CLIENT", "GETNAME"],
            &["CLIENT", "SETNAME", "first"],
            &["CLIENT", "GETNAME"],
            &["CLIENT", "SETNAME", ""],
            &["CLIENT", "GETNAME"],
            &["CLIENT", "SETNAME", "a b"],
            &["CLIENT", "SETNAME", "a\nb"],
            &["CLIENT", "SETNAME", "é"],
            &["CLIENT", "SETNAME", "a", "b"],
            &["CLIENT", "REPLY", "foo"],
            &["CLIENT", "REPLY"],
            &["CLIENT", "NO-EVICT", "foo"],
            &["CLIENT", "NO-EVICT", "on"],
            &["CLIENT", "NO-EVICT", "OFF"],
            &["CLIENT", "NO-EVICT"],
            &["CLIENT", "KILL", "1.2.3.4:5"],
            &["CLIENT", "KILL", "ID", "0"],
            &["CLIENT", "KILL", "ID", "abc"],
            &["CLIENT", "KILL", "ID", "99999"],
            &["CLIENT", "KILL", "ADDR", "1.2.3.4:5"],
            &["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
            &["CLIENT", "KILL", "FOO", "bar"],
            &["CLIENT", "KILL", "ID"],
            &["CLIENT", "KILL", "ID", "1", "ADDR"],
            &["CLIENT", "KILL", "SKIPME", "maybe"],
            &["CLIENT", "KILL", "TYPE", "foo"],
            &["CLIENT", "KILL", "TYPE", "master"],
            &[
                "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes", "ID", "99999",
            ],
            &["CLIENT", "KILL", "USER", "nobody"],
            &["CLIENT", "KILL", "USER", "default", "ID", "99999"],
            &["CLIENT", "KILL", "MAXAGE", "abc"],
            &["CLIENT", "LIST", "TYPE", "foo"],
            &["CLIENT", "LIST", "TYPE", "master"],
            &["CLIENT", "LIST", "TYPE", "pubsub"],
            &["CLIENT", "LIST", "ID"],
            &["CLIENT", "LIST", "ID", "abc"],
            &["CLIENT", "LIST", "ID", "0"],
            &["CLIENT", "LIST", "ID", "99999", "99998"],
            &["CLIENT", "LIST", "TYPE", "normal", "ID", "5"],
            &["CLIENT", "LIST", "FOO"],
            &["CLIENT", "ID", "x"],
            &["CLIENT", "INFO", "x"],
            &["CLIENT", "HELP", "x"],
            &["CLIENT", "FOO"],
            &["CLIENT"],
            &["SLOWLOG", "GET", "-2"],
            &["SLOWLOG", "GET", "abc"],
            &["SLOWLOG", "GET", "1", "2"],
            &["SLOWLOG", "LEN", "x"],
            &["SLOWLOG", "RESET"],
            &["SLOWLOG", "LEN"],
            &["SLOWLOG", "GET"],
            &["SLOWLOG", "HELP"],
            &["SLOWLOG", "FOO"],
            &["SHUTDOWN", "ABORT"],
            &["SHUTDOWN", "FOO"],
            &["SHUTDOWN", "NOSAVE", "ABORT"],
            &["LASTSAVE", "x"],
            &["TIME", "x"],
            &["FUNCTION", "FLUSH"],
            &["FUNCTION", "FLUSH", "ASYNC"],
            &["FUNCTION", "FLUSH", "sync"],
            &["FUNCTION", "FLUSH", "FOO"],
            &["FUNCTION", "FLUSH", "ASYNC", "SYNC"],
            &["FUNCTION", "FOO"],
            &["DEBUG", "LOG", "hello"],
            &["DEBUG", "LOG"],
            &["DEBUG", "LOG", "a", "b"],
            &["DEBUG", "SLEEP", "0"],
            &["DEBUG", "SLEEP", "abc"],
            &["DEBUG", "SLEEP", "-1"],
            &["DEBUG", "SLEEP", "0.01", "x"],
            &["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
            &["DEBUG", "SET-ACTIVE-EXPIRE", "x"],
            &["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
            &["DEBUG", "FOO"],
            &["DEBUG"],
            &["DEBUG", "HELP", "x"],
            &["MONITOR", "x"],
            &["RESET", "x"],
            // QUIT takes (and ignores) arguments, and closes.
            &["QUIT", "x"],
        ],
    );
}

#[test]
fn debug_is_refused_as_redis_when_not_enabled() {
    let Some(pair) = Pair::start(&["--enable-debug-command", "no"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[&["DEBUG", "SLEEP", "0"], &["DEBUG", "FOO"], &["DEBUG"]],
    );
    // `local` allows a loopback client.
    let Some(pair) = Pair::start(&["--enable-debug-command", "local"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(&mut redis, &mut ours, &[&["DEBUG", "SLEEP", "0"]]);
}

/// `CLIENT REPLY OFF`, `SKIP` and `ON` drop replies as Redis does (compared on raw bytes,
/// as the dropped replies are not there to read).
#[test]
fn client_reply_modes_match_redis() {
    let Some(pair) = pair() else {
        return;
    };
    for input in [
        &b"CLIENT REPLY OFF\r\nPING\r\nGET\r\nCLIENT REPLY ON\r\nPING\r\n"[..],
        b"CLIENT REPLY SKIP\r\nPING a\r\nPING b\r\n",
        b"CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nPING a\r\nPING b\r\n",
        b"CLIENT REPLY OFF\r\nCLIENT REPLY SKIP\r\nPING a\r\nCLIENT REPLY ON\r\nPING b\r\n",
        b"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING c\r\n",
        // (QUIT under CLIENT REPLY OFF: Redis 7.0 never closes the connection, as nothing
        // is left to write; Cortado closes it.)
    ] {
        let (want, got) = pair.exchange(input);
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(input));
    }
}

/// HELLO's map (id aside), the switch to RESP3 replies, and RESET's return to a new
/// connection's state.
#[test]
fn hello_and_reset_match_redis() {
    let Some(pair) = pair() else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    for client in [&mut redis, &mut ours] {
        let id = client.call(&["CLIENT", "ID"]);
        let Frame::Map(fields) = client.call(&["HELLO", "3", "SETNAME", "named"]) else {
            panic!("HELLO 3")
        };
        let expected = vec![
            (Frame::bulk("server"), Frame::bulk("redis")),
            (Frame::bulk("version"), Frame::bulk("7.0.15")),
            (Frame::bulk("proto"), Frame::Int(3)),
            (Frame::bulk("id"), id),
            (Frame::bulk("mode"), Frame::bulk("standalone")),
            (Frame::bulk("role"), Frame::bulk("master")),
            (Frame::bulk("modules"), Frame::Array(vec![])),
        ];
        assert_eq!(fields, expected);
    }
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["CLIENT", "GETNAME"],
            &["GET", "nosuchkey"],
            &["CONFIG", "GET", "timeout"],
            &["COMMAND", "INFO", "nosuch"],
            &["SELECT", "3"],
            &["CLIENT", "NO-EVICT", "on"],
            &["HELLO", "4"],
            &["RESET"],
            &["CLIENT", "GETNAME"],
            &["GET", "nosuchkey"],
            &["CONFIG", "GET", "timeout"],
            &["HELLO", "2", "SETNAME", "x y"],
        ],
    );
    let infos: Vec<String> = [&mut redis, &mut ours]
        .into_iter()
        .map(|c| c.call(&["CLIENT", "INFO"]).text())
        .collect();
    for info in &infos {
        assert!(
            info.contains(" db=0 ") && info.contains(" resp=2") && info.contains(" name= "),
            "{info}"
        );
    }
}

/// The field names of a `CLIENT LIST` line.
fn field_names(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|f| f.split('=').next().unwrap_or(f).to_owned())
        .collect()
}

/// `CLIENT LIST` and `CLIENT INFO` lines have Redis's fields in Redis's order, and the values
/// this connection can know.
#[test]
fn client_list_lines_have_redis_fields() {
    let Some(pair) = pair() else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let mut lines = Vec::new();
    for client in [&mut redis, &mut ours] {
        client.call(&["CLIENT", "SETNAME", "lister"]);
        client.call(&["SELECT", "2"]);
        let id = client.call(&["CLIENT", "ID"]).int();
        let info = client.call(&["CLIENT", "INFO"]).text();
        let list = client
            .call(&["CLIENT", "LIST", "ID", &id.to_string()])
            .text();
        assert_eq!(field_names(&info), field_names(&list));
        assert!(
            list.contains(" name=lister ") && list.contains(" cmd=client|list "),
            "{list}"
        );
        for expected in [
            format!("id={id} "),
            " name=lister ".to_owned(),
            " db=2 ".to_owned(),
            " cmd=client|info ".to_owned(),
            " flags=N ".to_owned(),
            " user=default ".to_owned(),
        ] {
            assert!(info.contains(&expected), "{expected:?} in {info}");
        }
        lines.push(info);
    }
    assert_eq!(field_names(&lines[1]), field_names(&lines[0]));
}

/// CLIENT KILL closes other clients by id, address (both forms) and type, skipping the
/// caller unless told not to, and the killed connections see the close.
#[test]
fn client_kill_closes_the_chosen_clients() {
    let server = TestServer::start();
    let mut admin = server.raw();
    let mut victims: Vec<RawClient> = (0..4).map(|_| server.raw()).collect();
    let ids: Vec<i64> = victims
        .iter_mut()
        .map(|v| v.call(&["CLIENT", "ID"]).int())
        .collect();
    let addr_of = |client: &RawClient| client.stream.local_addr().unwrap().to_string();
    assert_eq!(
        admin.call(&["CLIENT", "KILL", "ID", &ids[0].to_string()]),
        Frame::Int(1)
    );
    assert!(victims[0].is_closed());
    let addr = addr_of(&victims[1]);
    assert_eq!(
        admin.call(&["CLIENT", "KILL", &addr]),
        Frame::Simple("OK".into())
    );
    assert!(victims[1].is_closed());
    let addr = addr_of(&victims[2]);
    assert_eq!(
        admin.call(&["CLIENT", "KILL", "ADDR", &addr]),
        Frame::Int(1)
    );
    assert!(victims[2].is_closed());
    // TYPE normal kills every normal client but the caller.
    assert_eq!(
        admin.call(&["CLIENT", "KILL", "TYPE", "normal"]),
        Frame::Int(1)
    );
    assert!(victims[3].is_closed());
    assert_eq!(admin.call(&["PING"]), Frame::Simple("PONG".into()));
    // SKIPME no: the caller goes too, after its reply.
    admin.send(b"CLIENT KILL TYPE normal SKIPME no\r\n");
    assert_eq!(admin.read(), Some(Frame::Int(1)));
    assert!(admin.is_closed());
}

/// SLOWLOG records commands as Redis does: id, time, duration, the arguments (at most 32,
/// each at most 128 bytes, with Redis's notes), address and name; LEN, RESET and the
/// length limit.
#[test]
fn slowlog_entries_match_redis() {
    let Some(pair) = pair() else {
        return;
    };
    let long = "x".repeat(200);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut entries = Vec::new();
    for addr in [pair.redis.addr, pair.server.addr] {
        let mut client = RawClient::connect(addr);
        client.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        client.call(&["SLOWLOG", "RESET"]);
        client.call(&["CLIENT", "SETNAME", "slow"]);
        client.call(&["ECHO", &long]);
        let mut command = vec!["PING"];
        command.extend(many.iter().map(String::as_str));
        client.call(&command);
        client.call(&["DEBUG", "SLEEP", "0.02"]);
        let Frame::Array(list) = client.call(&["SLOWLOG", "GET", "-1"]) else {
            panic!("SLOWLOG GET")
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut shown = Vec::new();
        for entry in &list {
            let Frame::Array(fields) = entry else {
                panic!("{entry:?}")
            };
            assert_eq!(fields.len(), 6);
            assert!((now - fields[1].int()).abs() <= 2, "{entry:?}");
            assert!(fields[2].int() >= 0);
            assert_eq!(
                fields[4].text(),
                client.stream.local_addr().unwrap().to_string()
            );
            shown.push((fields[3].clone(), fields[5].clone()));
        }
        // DEBUG SLEEP 0.02 took at least 20 ms.
        let sleep = list
            .iter()
            .find_map(|e| match e {
                Frame::Array(f) if matches!(&f[3], Frame::Array(a) if a[0] == Frame::bulk("DEBUG")) => {
                    Some(f[2].int())
                }
                _ => None,
            })
            .expect("the DEBUG SLEEP entry");
        assert!(sleep >= 20_000, "{sleep} us");
        assert_eq!(
            client.call(&["SLOWLOG", "LEN"]),
            Frame::Int(list.len() as i64 + 1)
        );
        client.call(&["CONFIG", "SET", "slowlog-max-len", "2"]);
        assert_eq!(client.call(&["SLOWLOG", "LEN"]), Frame::Int(2));
        assert_eq!(
            client.call(&["SLOWLOG", "RESET"]),
            Frame::Simple("OK".into())
        );
        entries.push(shown);
    }
    assert_eq!(entries[1], entries[0]);
}

#[test]
fn time_and_lastsave_are_the_clock() {
    let server = TestServer::start();
    let mut client = server.raw();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let Frame::Array(parts) = client.call(&["TIME"]) else {
        panic!("TIME")
    };
    let seconds: u64 = parts[0].text().parse().unwrap();
    let micros: u64 = parts[1].text().parse().unwrap();
    assert!(seconds.abs_diff(now.as_secs()) <= 1);
    assert!(micros < 1_000_000);
    let lastsave = client.call(&["LASTSAVE"]).int() as u64;
    assert!(lastsave <= seconds && seconds - lastsave < 60);
}

/// The text of the MONITOR lines of `commands` as one client runs them, with the time and
/// address taken out.
fn monitor_lines(addr: std::net::SocketAddr, commands: &[&[&str]]) -> Vec<String> {
    let mut monitor = RawClient::connect(addr);
    assert_eq!(monitor.call(&["MONITOR"]), Frame::Simple("OK".into()));
    let mut client = RawClient::connect(addr);
    let client_addr = client.stream.local_addr().unwrap().to_string();
    for command in commands {
        client.call(command);
    }
    client.call(&["ECHO", "end"]);
    let mut lines = Vec::new();
    loop {
        let line = monitor.read().expect("a monitor line").text();
        // "+1700000000.123456 [0 127.0.0.1:5000] ..." without the time and address.
        let (time, rest) = line.split_once(' ').expect("a time");
        assert!(
            time.contains('.') && time.split('.').nth(1).unwrap().len() == 6,
            "{line}"
        );
        let rest = rest.replacen(&format!(" {client_addr}]"), " addr]", 1);
        if rest.ends_with("\"ECHO\" \"end\"") {
            return lines;
        }
        lines.push(rest);
    }
}

/// MONITOR's lines as Redis writes them: quoting, the database, redacted passwords, and
/// which commands it leaves out (admin ones, refused ones).
#[test]
fn monitor_lines_match_redis() {
    let Some(pair) = pair() else {
        return;
    };
    let commands: &[&[&str]] = &[
        &["SET", "k", "a\"b\\c\n\r\t\x07\x08\x01 é"],
        &["GET"],
        &["FOO", "x"],
        &["AUTH", "pw"],
        &["AUTH", "user", "pw"],
        &["HELLO", "2", "AUTH", "default", "pw"],
        &["HELLO", "3"],
        &["HELLO", "2"],
        &["CLIENT", "LIST"],
        &["CLIENT", "ID"],
        &["CONFIG", "GET", "maxmemory"],
        &["INFO", "server"],
        &["SELECT", "3"],
        &["ECHO", "in three"],
        &["SLOWLOG", "LEN"],
        &["DEBUG", "LOG", "x"],
        &["INCR", "k"],
        &["SELECT", "0"],
    ];
    let want = monitor_lines(pair.redis.addr, commands);
    let got = monitor_lines(pair.server.addr, commands);
    assert_eq!(got, want);
}

/// A monitor that does not read is closed once what waits for it passes the pubsub class's
/// hard limit, and the server goes on serving the others.
#[test]
fn slow_monitor_is_bounded() {
    let server = TestServer::with_args(&["--client-output-buffer-limit", "pubsub 256kb 0 0"]);
    let mut monitor = RawClient::connect(server.addr);
    assert_eq!(monitor.call(&["MONITOR"]), Frame::Simple("OK".into()));
    // The monitor reads nothing from here on.
    let mut client = server.raw();
    let value = "v".repeat(10_000);
    for _ in 0..2_000 {
        assert_eq!(
            client.call(&["SET", "k", &value]),
            Frame::Simple("OK".into())
        );
    }
    let started = std::time::Instant::now();
    while server.server.clients.len() > 1 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the monitor was not closed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
}

/// `redis-cli` used as a person uses it (a terminal session, which sends `COMMAND DOCS` at
/// start for its hints) works against the server.
#[test]
fn redis_cli_interactive_session_works() {
    if !program_available("redis-cli", "--version") || !program_available("script", "--version") {
        eprintln!("note: redis-cli or script is missing; the interactive test is skipped");
        return;
    }
    let server = TestServer::start();
    let mut monitor = server.raw();
    assert_eq!(monitor.call(&["MONITOR"]), Frame::Simple("OK".into()));
    let cli = format!("redis-cli -p {}", server.addr.port());
    let mut child = Command::new("script")
        .args(["-qec", &cli, "/dev/null"])
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        stdin
            .write_all(b"set greeting \"hello world\"\nget greeting\nhello 3\nincr n\nquit\n")
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("OK"), "{text}");
    assert!(text.contains("\"hello world\""), "{text}");
    assert!(text.contains("(integer) 1"), "{text}");
    assert!(text.contains("\"proto\""), "{text}");
    // Its first command was COMMAND DOCS.
    let first = monitor.read().expect("a monitor line").text();
    assert!(first.ends_with("\"COMMAND\" \"DOCS\""), "{first}");
}
