//! `CONFIG` against `redis-server`: every directive of Redis 7.0 with its value, `CONFIG SET`'s
//! checks and errors, all-or-nothing changes, and `CONFIG REWRITE`.

use std::collections::BTreeMap;

use crate::common::binary::ServerProcess;
use crate::common::compare::{assert_same_replies, Pair};
use crate::common::{Frame, RawClient};

/// `CONFIG GET <patterns>` as a map.
fn config_get(client: &mut RawClient, patterns: &[&str]) -> BTreeMap<String, String> {
    let mut command = vec!["CONFIG", "GET"];
    command.extend_from_slice(patterns);
    let Frame::Array(flat) = client.call(&command) else {
        panic!("CONFIG GET {patterns:?}")
    };
    flat.chunks(2)
        .map(|pair| (pair[0].text(), pair[1].text()))
        .collect()
}

/// Directives whose value here differs from redis-server's in this comparison, and why.
const DIFFERENT: &[&str] = &[
    // Each server's own port.
    "port",
    // Cortado's default is `yes` (test harnesses send DEBUG).
    "enable-debug-command",
];

/// `CONFIG GET *` names every directive Redis 7.0 has, aliases included, with the same
/// values, given the same settings.
#[test]
fn config_get_all_matches_redis() {
    let Some(pair) = Pair::start(&["--protected-mode", "no", "--bind", "127.0.0.1"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let want = config_get(&mut redis, &["*"]);
    let got = config_get(&mut ours, &["*"]);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    let differing: Vec<String> = want
        .iter()
        .filter(|(name, value)| !DIFFERENT.contains(&name.as_str()) && got[*name] != **value)
        .map(|(name, value)| format!("{name}: redis {value:?}, cortado {:?}", got[name]))
        .collect();
    assert!(differing.is_empty(), "{}", differing.join("\n"));
    for patterns in [
        &["maxmemory*"][..],
        &["MAXMEMORY"],
        &["maxmemory", "MAXMEMORY"],
        &["*slave*", "timeout"],
        &["hash-max-*-entries", "nosuch*"],
        &["slave-priority"],
        &["watchdog-period"],
        &["watchdog*"],
        &["nosuchdirective"],
        &["[a-c]*"],
    ] {
        assert_eq!(
            config_get(&mut ours, patterns),
            config_get(&mut redis, patterns),
            "CONFIG GET {patterns:?}"
        );
    }
}

/// `CONFIG SET`'s errors for each kind of directive and each kind of mistake, and its
/// all-or-nothing application, as Redis 7.0 answers them.
#[test]
fn config_set_checks_and_errors_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["CONFIG", "SET", "timeout"],
            &["CONFIG", "SET", "a", "b", "c"],
            &["CONFIG", "SET", "nosuch", "1"],
            &["CONFIG", "SET", "timeout", "5", "maxmemory", "1x"],
            &["CONFIG", "GET", "timeout"],
            &["CONFIG", "SET", "daemonize", "yes", "foo", "bar"],
            &["CONFIG", "SET", "foo", "bar", "daemonize", "yes"],
            &["CONFIG", "SET", "timeout", "1", "TIMEOUT", "2"],
            &["CONFIG", "SET", "MAXMEMORY", "1x"],
            &["CONFIG", "SET", "slave-priority", "x"],
            &["CONFIG", "SET", "dir", "/tmp"],
            &["CONFIG", "SET", "dbfilename", "x.rdb"],
            &["CONFIG", "SET", "databases", "3"],
            &["CONFIG", "SET", "timeout", "1.5"],
            &["CONFIG", "SET", "timeout", " 5"],
            &["CONFIG", "SET", "timeout", "01"],
            &["CONFIG", "SET", "timeout", "-1"],
            &["CONFIG", "SET", "timeout", "9999999999"],
            &["CONFIG", "SET", "maxclients", "0"],
            &["CONFIG", "SET", "maxmemory", "-1"],
            &["CONFIG", "SET", "maxmemory", "1.5gb"],
            &["CONFIG", "SET", "maxmemory", "1k"],
            &["CONFIG", "GET", "maxmemory"],
            &["CONFIG", "SET", "maxmemory", "2GB"],
            &["CONFIG", "GET", "maxmemory"],
            &["CONFIG", "SET", "maxmemory", "0"],
            &["CONFIG", "SET", "proto-max-bulk-len", "1000"],
            &["CONFIG", "SET", "client-query-buffer-limit", "1000"],
            &["CONFIG", "SET", "maxmemory-clients", "101%"],
            &["CONFIG", "SET", "maxmemory-clients", "-5"],
            &["CONFIG", "SET", "maxmemory-clients", "10%"],
            &["CONFIG", "GET", "maxmemory-clients"],
            &["CONFIG", "SET", "maxmemory-clients", "0"],
            &["CONFIG", "SET", "appendonly", "maybe"],
            &["CONFIG", "SET", "protected-mode", "YES"],
            &["CONFIG", "GET", "protected-mode"],
            &["CONFIG", "SET", "loglevel", "loud"],
            &["CONFIG", "SET", "loglevel", "Verbose"],
            &["CONFIG", "GET", "loglevel"],
            &["CONFIG", "SET", "loglevel", "notice"],
            &["CONFIG", "SET", "save", "1 2 3"],
            &["CONFIG", "SET", "save", "abc 1"],
            &["CONFIG", "SET", "save", "100 1 50 10"],
            &["CONFIG", "GET", "save"],
            &["CONFIG", "SET", "save", ""],
            &["CONFIG", "SET", "notify-keyspace-events", "xyz"],
            &["CONFIG", "SET", "notify-keyspace-events", "KEAn"],
            &["CONFIG", "GET", "notify-keyspace-events"],
            &["CONFIG", "SET", "notify-keyspace-events", "Ex$gd"],
            &["CONFIG", "GET", "notify-keyspace-events"],
            &["CONFIG", "SET", "notify-keyspace-events", ""],
            &["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "master 1 2 3",
            ],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1x 2 3",
            ],
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 512kb 5",
            ],
            &["CONFIG", "GET", "client-output-buffer-limit"],
            &["CONFIG", "SET", "oom-score-adj-values", "1 2"],
            &["CONFIG", "SET", "oom-score-adj-values", "1 2 3000"],
            &[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "50 101",
            ],
            &[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "50.5 99",
            ],
            &["CONFIG", "GET", "latency-tracking-info-percentiles"],
            &["CONFIG", "SET", "shutdown-on-sigterm", "foo"],
            &["CONFIG", "SET", "shutdown-on-sigterm", "nosave save"],
            &["CONFIG", "SET", "shutdown-on-sigterm", "now save"],
            &["CONFIG", "GET", "shutdown-on-sigterm"],
            &["CONFIG", "SET", "hz", "0"],
            &["CONFIG", "GET", "hz"],
            &["CONFIG", "SET", "hz", "10"],
            &["CONFIG", "SET", "unixsocketperm", "777"],
            &["CONFIG", "SET", "replicaof", "no one"],
            &[
                "CONFIG",
                "SET",
                "slowlog-max-len",
                "5",
                "slowlog-log-slower-than",
                "-1",
            ],
            &["CONFIG", "GET", "slowlog-max-len"],
            &["CONFIG", "GET", "slowlog-log-slower-than"],
            &["CONFIG", "REWRITE"],
            &["CONFIG", "REWRITE", "x"],
            &["CONFIG", "RESETSTAT", "x"],
            &["CONFIG", "HELP"],
            &["CONFIG", "FOO"],
        ],
    );
}

/// `CONFIG SET requirepass` is shown redacted in the slow log, as Redis redacts secrets.
#[test]
fn config_set_secret_is_redacted_in_the_slowlog() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    for addr in [pair.redis.addr, pair.server.addr] {
        let mut client = RawClient::connect(addr);
        client.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        client.call(&["CONFIG", "SET", "requirepass", "hunter2", "timeout", "0"]);
        client.call(&["AUTH", "hunter2"]);
        let Frame::Array(entries) = client.call(&["SLOWLOG", "GET", "3"]) else {
            panic!("SLOWLOG GET")
        };
        let args: Vec<Vec<String>> = entries
            .iter()
            .map(|e| match e {
                Frame::Array(fields) => match &fields[3] {
                    Frame::Array(args) => args.iter().map(Frame::text).collect(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            args,
            vec![
                vec!["AUTH", "(redacted)"],
                vec!["CONFIG", "SET", "requirepass", "(redacted)", "timeout", "0"],
                vec!["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            ],
            "{addr}"
        );
    }
}

/// `CONFIG REWRITE` writes the file the server started with so that it gives the current
/// values, and a server started from it has them.
#[test]
fn config_rewrite_writes_the_start_up_file() {
    let dir = std::env::temp_dir().join(format!("cortado-rewrite-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cortado.conf");
    std::fs::write(&path, "# kept\ntimeout 3\nslave-priority 7\n").unwrap();
    let path_text = path.to_str().unwrap().to_owned();
    let server = ServerProcess::start(&[&path_text]);
    let mut client = server.raw();
    assert_eq!(
        client.call(&["CONFIG", "SET", "timeout", "11", "maxmemory", "3mb"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        client.call(&["CONFIG", "REWRITE"]),
        Frame::Simple("OK".into())
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# kept\ntimeout 11\nreplica-priority 7\n"),
        "{text}"
    );
    assert!(text.contains("\nmaxmemory 3145728\n"), "{text}");
    drop(server);
    let again = ServerProcess::start(&[&path_text]);
    let mut client = again.raw();
    assert_eq!(
        config_get(&mut client, &["timeout", "maxmemory"]),
        BTreeMap::from([
            ("maxmemory".to_owned(), "3145728".to_owned()),
            ("timeout".to_owned(), "11".to_owned())
        ])
    );
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}
