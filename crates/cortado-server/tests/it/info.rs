//! `INFO` against `redis-server`: its sections and field names, the per-command and per-error
//! statistics after the same commands, and the tools that read it (`redis-cli --stat`).

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::compare::Pair;
use crate::common::{Frame, RawClient, TestServer};

/// `INFO <args>`'s text.
fn info(client: &mut RawClient, args: &[&str]) -> String {
    let mut command = vec!["INFO"];
    command.extend_from_slice(args);
    client.call(&command).text()
}

/// The section headers and field names of an `INFO` text, in order.
fn field_names(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(':').next().unwrap_or(l).to_owned())
        .collect()
}

/// The value of `field` in an `INFO` text.
fn field(text: &str, field: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {text}"))
        .trim()
        .to_owned()
}

/// Every field Redis 7.0 writes in these sections is written, under the same name and in the
/// same order (what `redis_exporter` and dashboards parse); Cortado adds `cortado_version`,
/// and Redis 7.4's `expired_subkeys` for the hash field lifetimes it has from 7.4.
#[test]
fn info_fields_are_redis_fields_in_redis_order() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    for section in [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "cluster",
    ] {
        let want = field_names(&info(&mut redis, &[section]));
        let got: Vec<String> = field_names(&info(&mut ours, &[section]))
            .into_iter()
            .filter(|f| f != "cortado_version" && f != "expired_subkeys")
            .collect();
        assert_eq!(got, want, "INFO {section}");
    }
}

/// Which sections each argument list selects, and in which order they come.
#[test]
fn info_section_arguments_select_as_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let headers = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    for args in [
        &[][..],
        &["default"],
        &["all"],
        &["everything"],
        &["SERVER"],
        &["cpu", "server"],
        &["server", "server"],
        &["nosuchsection"],
        &["keyspace", "errorstats", "commandstats"],
    ] {
        assert_eq!(
            headers(&info(&mut ours, args)),
            headers(&info(&mut redis, args)),
            "INFO {args:?}"
        );
    }
}

/// `INFO latencystats` with the values left out: each command's name and percentile labels.
fn latency_lines(client: &mut RawClient) -> BTreeSet<String> {
    info(client, &["latencystats"])
        .lines()
        .map(|line| {
            let labels: Vec<&str> = line
                .split([':', ','])
                .map(|part| part.split('=').next().unwrap_or(part))
                .collect();
            labels.join(",")
        })
        .collect()
}

/// The commands `INFO latencystats` lists and the percentiles it shows, after the same
/// commands, percentile settings, `CONFIG RESETSTAT` and `latency-tracking no`.
#[test]
fn latencystats_lists_commands_and_percentiles_as_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let steps: &[&[&str]] = &[
        &["SET", "a", "b"],
        &["GET", "a"],
        &["CONFIG", "GET", "maxmemory"],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 99.99 100",
        ],
        &["CONFIG", "RESETSTAT"],
        &["GET", "a"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", ""],
        &["CONFIG", "SET", "latency-tracking", "no"],
        &["SET", "c", "d"],
    ];
    for step in steps {
        assert_eq!(redis.call(step), ours.call(step), "{step:?}");
        assert_eq!(
            latency_lines(&mut ours),
            latency_lines(&mut redis),
            "after {step:?}"
        );
    }
    let ours_text = info(&mut ours, &["latencystats"]);
    assert!(!ours_text.contains("_set:"), "not tracked: {ours_text}");
}

/// A command's percentiles are in microseconds and ascend.
#[test]
fn latencystats_percentiles_ascend_in_microseconds() {
    let server = TestServer::start();
    let mut client = server.raw();
    for i in 0..200 {
        client.call(&["SET", &format!("k{i}"), "v"]);
    }
    let text = info(&mut client, &["latencystats"]);
    let line = field(&text, "latency_percentiles_usec_set");
    let values: Vec<f64> = line
        .split(',')
        .map(|part| {
            let (label, value) = part.split_once('=').expect("label=value");
            assert!(["p50", "p99", "p99.9"].contains(&label), "{line}");
            value.parse().expect("a number")
        })
        .collect();
    assert_eq!(values.len(), 3, "{line}");
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{line}");
    assert!(values[0] > 0.0 && values[2] < 1_000_000.0, "{line}");
}

/// The `cmdstat_*` and `errorstat_*` lines and the error totals after the same commands, with
/// the microseconds left out.
fn statistics(client: &mut RawClient) -> BTreeSet<String> {
    let mut lines = BTreeSet::new();
    for section in ["commandstats", "errorstats"] {
        for line in info(client, &[section]).lines() {
            if line.starts_with("cmdstat_") || line.starts_with("errorstat_") {
                let mut fields: Vec<&str> = line.split(',').collect();
                fields.retain(|f| !f.starts_with("usec"));
                let line = fields.join(",");
                // "cmdstat_x:calls=1,usec=..." keeps its name and calls.
                lines.insert(line.split(",usec=").next().unwrap_or(&line).to_owned());
            }
        }
    }
    let stats = info(client, &["stats"]);
    for name in ["total_error_replies", "total_commands_processed"] {
        lines.insert(format!("{name}:{}", field(&stats, name)));
    }
    lines
}

/// Calls, rejected calls, failed calls, error codes and totals count as in Redis: rejections
/// (arity, authentication, a monitor's keyspace commands) count against the command, unknown
/// commands and subcommands against no command, errors from a command that ran as failed.
#[test]
fn command_and_error_statistics_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let commands: &[&[&str]] = &[
        &["GET"],
        &["GET", "a", "b"],
        &["FOO"],
        &["CLIENT", "FOO"],
        &["CLIENT", "LIST", "X"],
        &["CONFIG", "GET"],
        &["SET", "a", "b"],
        &["INCR", "a"],
        &["SELECT", "99"],
        &["AUTH", "x"],
        &["ECHO", "x"],
        &["CLIENT", "KILL", "1.1.1.1:1"],
        &["HELLO", "9"],
        &["PING"],
        &["CONFIG", "SET", "foo", "bar"],
        &["CONFIG", "SET", "maxmemory", "1x"],
        &["COMMAND", "INFO", "get"],
        &["WRONG", "x"],
        &["CLIENT", "REPLY", "OFF"],
        &["GET", "a", "b"],
        &["CLIENT", "REPLY", "ON"],
        &["SLOWLOG", "GET", "-5"],
        &["GETRANGE", "a", "x", "1"],
        &["DBSIZE"],
    ];
    let mut seen = Vec::new();
    for addr in [pair.redis.addr, pair.server.addr] {
        let mut client = RawClient::connect(addr);
        assert_eq!(
            client.call(&["CONFIG", "RESETSTAT"]),
            Frame::Simple("OK".into())
        );
        for command in commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            client.send_command(&args);
        }
        // CLIENT REPLY OFF and the command after it answer nothing.
        for _ in 0..commands.len() - 2 {
            client.read().expect("a reply");
        }
        // A monitor's keyspace command is a rejected call too.
        let mut monitor = RawClient::connect(addr);
        assert_eq!(monitor.call(&["MONITOR"]), Frame::Simple("OK".into()));
        monitor.send_command(&[b"GET", b"a"]);
        // The protocol error of another client counts as an error reply.
        let mut bad = RawClient::connect(addr);
        bad.send(b"*1\r\nx\r\n");
        let _ = bad.read();
        std::thread::sleep(Duration::from_millis(100));
        seen.push(statistics(&mut RawClient::connect(addr)));
    }
    let (want, got) = (&seen[0], &seen[1]);
    assert_eq!(
        got.symmetric_difference(want).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "statistics differ (redis: {want:#?})"
    );
}

/// Hits and misses count lookups of keys as Redis counts them, and RESETSTAT zeroes them.
#[test]
fn keyspace_hits_and_misses_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let mut seen = Vec::new();
    for addr in [pair.redis.addr, pair.server.addr] {
        let mut client = RawClient::connect(addr);
        for command in [
            &["SET", "a", "1"][..],
            &["GET", "a"],
            &["GET", "b"],
            &["MGET", "a", "b", "c"],
            &["EXISTS", "a", "b"],
            &["STRLEN", "a"],
            &["CONFIG", "RESETSTAT"],
            &["GET", "a"],
            &["GET", "zz"],
        ] {
            client.call(command);
        }
        let stats = info(&mut client, &["stats"]);
        seen.push((
            field(&stats, "keyspace_hits"),
            field(&stats, "keyspace_misses"),
        ));
    }
    assert_eq!(seen[1], seen[0]);
    assert_eq!(seen[1], ("1".to_owned(), "1".to_owned()));
}

#[test]
fn instantaneous_ops_per_sec_follows_the_load() {
    let server = TestServer::start();
    let mut client = server.raw();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(1200) {
        let batch = b"PING\r\n".repeat(50);
        client.send(&batch);
        for _ in 0..50 {
            client.read().expect("PONG");
        }
    }
    let stats = info(&mut client, &["stats"]);
    let ops: u64 = field(&stats, "instantaneous_ops_per_sec").parse().unwrap();
    assert!(ops > 0, "{stats}");
    let kbps: f64 = field(&stats, "instantaneous_input_kbps").parse().unwrap();
    assert!(kbps > 0.0, "{stats}");
}

/// `redis-cli --stat` reads its columns from INFO: keys, memory, clients, requests,
/// connections. Run for a moment against the server, its keys column shows the keys stored.
#[test]
fn redis_cli_stat_reads_the_server() {
    if Command::new("redis-cli").arg("--version").output().is_err()
        || Command::new("stdbuf").arg("--version").output().is_err()
    {
        eprintln!("note: redis-cli or stdbuf is missing; the --stat test is skipped");
        return;
    }
    let server = TestServer::start();
    let mut client = server.raw();
    for i in 0..37 {
        client.call(&["SET", &format!("k{i}"), "v"]);
    }
    client.call(&["SELECT", "3"]);
    for i in 0..5 {
        client.call(&["SET", &format!("k{i}"), "v"]);
    }
    let mut child = Command::new("stdbuf")
        .args([
            "-oL",
            "redis-cli",
            "-p",
            &server.addr.port().to_string(),
            "--stat",
            "-i",
            "0.2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run redis-cli --stat");
    std::thread::sleep(Duration::from_millis(1000));
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.len() >= 3, "redis-cli --stat printed:\n{text}");
    for row in &rows {
        assert_eq!(row[0], "42", "keys column:\n{text}");
        assert_eq!(row[2], "2", "clients column:\n{text}");
    }
    assert!(text.contains("keys") && text.contains("requests"), "{text}");
}

/// `avg_ttl` estimates the mean lifetime left of the keys with one, in milliseconds, and is 0
/// without any.
#[test]
fn info_keyspace_avg_ttl_estimates_mean_lifetime_left() {
    let server = TestServer::with_manual_clock(&[]);
    let mut client = server.raw();
    let avg_ttl = |client: &mut RawClient| -> f64 {
        let line = field(&info(client, &["keyspace"]), "db0");
        let value = line
            .split(',')
            .find_map(|part| part.strip_prefix("avg_ttl="))
            .expect("avg_ttl");
        value.parse().expect("a number")
    };
    for i in 0..1_000 {
        client.call(&["SET", &format!("plain{i}"), "v"]);
    }
    assert_eq!(avg_ttl(&mut client), 0.0);
    // Lifetimes of 100 to 1,099 seconds: a mean of 599.5 s.
    for i in 0..1_000 {
        let seconds = (100 + i).to_string();
        client.call(&["SET", &format!("timed{i}"), "v", "EX", &seconds]);
    }
    let mean = avg_ttl(&mut client);
    assert!((509_575.0..=689_425.0).contains(&mean), "{mean}");
    server.advance(Duration::from_secs(50));
    let later = avg_ttl(&mut client);
    assert!((467_075.0..=631_925.0).contains(&later), "{later}");
}
