//! `server-bench`: cortado-server beside redis-server in one run, both started by it.
//!
//! ```text
//! cargo build --release -p cortado-server
//! cargo run --release -p cortado-server --bin server-bench -- [throughput] [concurrency] [memory] [expiry]
//!     [transactions] [scripts] [--requests N] [--keys N] [--rounds N] [--type T[,T...]]
//! ```
//!
//! - `throughput`: `redis-benchmark -t set,get -n N -r N -c 50` at `-P 1` and `-P 16`
//!   against each server, the two servers taking turns within each round; requests per second
//!   and p50/p99/max latency per cell, and each cell's ratio to Redis in the same round.
//! - `concurrency`: the same load against Redis, Cortado, Cortado with its keyspace behind one
//!   lock and Cortado with every connection on one thread (see
//!   `docs/decisions/0200-server-concurrency.md`), taking turns within each round.
//! - `memory`: N keys of 16 bytes with values of 16 bytes, loaded through pipelined `SET`s,
//!   without and with a one-hour TTL; bytes per key from the growth of the process's resident
//!   set and of `INFO`'s `used_memory`. With `--type`, N elements of each type named instead
//!   (see [`LOADS`]: `string`, `hash`, `hash-object`, `hash-large`, `set`, `intset`, `list`,
//!   `list-small`, `zset`, `zset-small`), written one command per
//!   element, bytes per element beside Redis's and their ratio.
//! - `expiry`: N keys that expire in the same second, no reads of them; the time from that
//!   second until `DBSIZE` is 0 and `used_memory` is back near its level before the load,
//!   and the latency of a ping-pong `GET` client meanwhile (p50, p99, max), and in the
//!   seconds before the deadline, the machine's own noise.
//! - `transactions`: N `MULTI` / `INCR` / `EXEC` transactions from 8 connections, each
//!   sending one transaction at a time (depth 1) or 16 pipelined (depth 16), through this
//!   binary's own client: `redis-benchmark` repeats one command per request and cannot send a
//!   sequence. Transactions per second and the ratio to Redis in the same round; the counters
//!   are checked to sum to N on both servers.
//! - `scripts`: N `EVALSHA`s from 8 connections at depth 1 and 16, of the lock's
//!   compare-and-delete script (on a lock another token holds, so it reads and compares and
//!   deletes nothing, as a contended unlock does) and of a script doing one `INCR`, loaded
//!   with `SCRIPT LOAD` first. Scripts per second and the ratio to Redis in the same round;
//!   the replies are checked, and the `INCR` counters to sum to N.
//!
//! Needs `redis-server` and `redis-benchmark` on the `PATH`; the cortado-server binary is the
//! one built beside this one.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Options {
    throughput: bool,
    concurrency: bool,
    memory: bool,
    expiry: bool,
    transactions: bool,
    scripts: bool,
    requests: u64,
    keys: u64,
    rounds: u32,
    /// The `--type`s of `memory` (empty: strings with and without a TTL).
    types: Vec<String>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        throughput: false,
        concurrency: false,
        memory: false,
        expiry: false,
        transactions: false,
        scripts: false,
        requests: 1_000_000,
        keys: 1_000_000,
        rounds: 1,
        types: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.replace('_', "").parse().ok())
                .ok_or_else(|| format!("{name} takes a number"))
        };
        match arg.as_str() {
            "throughput" => o.throughput = true,
            "concurrency" => o.concurrency = true,
            "memory" => o.memory = true,
            "expiry" => o.expiry = true,
            "transactions" => o.transactions = true,
            "scripts" => o.scripts = true,
            "--requests" => o.requests = number("--requests")?,
            "--keys" => o.keys = number("--keys")?,
            "--rounds" => o.rounds = number("--rounds")? as u32,
            "--type" => {
                let list = args.next().ok_or("--type takes a list of types")?;
                for name in list.split(',') {
                    if !LOADS.iter().any(|l| l.name == name) {
                        return Err(format!("unknown type '{name}'"));
                    }
                    o.types.push(name.to_owned());
                }
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if !(o.throughput || o.concurrency || o.memory || o.expiry || o.transactions || o.scripts) {
        o.throughput = true;
        o.memory = true;
        o.expiry = true;
    }
    Ok(o)
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("server-bench: {e}");
            std::process::exit(2);
        }
    };
    for tool in ["redis-server", "redis-benchmark"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!(
                "server-bench: {tool} is not installed (apt-get install redis-server redis-tools)"
            );
            std::process::exit(2);
        }
    }
    println!(
        "server-bench: {} CPUs; redis-server {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        redis_version()
    );
    if o.throughput {
        throughput(&o);
    }
    if o.concurrency {
        concurrency(&o);
    }
    if o.memory {
        memory(&o);
    }
    if o.expiry {
        expiry(&o);
    }
    if o.transactions {
        transactions(&o);
    }
    if o.scripts {
        scripts(&o);
    }
}

fn redis_version() -> String {
    Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The servers: Redis, Cortado, and Cortado in the concurrency designs it was measured
/// against.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Redis,
    Cortado,
    /// The whole keyspace behind one lock (`CORTADO_KEYSPACE_SHARDS=1`).
    CortadoOneLock,
    /// Every connection on one thread, as Redis runs commands (`TOKIO_WORKER_THREADS=1`).
    CortadoOneThread,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Redis => "redis",
            Kind::Cortado => "cortado",
            Kind::CortadoOneLock => "cortado, one lock",
            Kind::CortadoOneThread => "cortado, one thread",
        }
    }

    /// The environment that selects the design.
    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Redis | Kind::Cortado => &[],
            Kind::CortadoOneLock => &[("CORTADO_KEYSPACE_SHARDS", "1")],
            Kind::CortadoOneThread => &[("TOKIO_WORKER_THREADS", "1")],
        }
    }
}

/// A server process on a free port, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(kind: Kind) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let port_text = port.to_string();
        let mut command = match kind {
            Kind::Redis => {
                let mut c = Command::new("redis-server");
                c.args([
                    "--port",
                    &port_text,
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ]);
                c
            }
            Kind::Cortado | Kind::CortadoOneLock | Kind::CortadoOneThread => {
                let exe: PathBuf = std::env::current_exe()
                    .expect("own path")
                    .with_file_name("cortado-server");
                let mut c = Command::new(exe);
                c.args([
                    "--port",
                    &port_text,
                    "--bind",
                    "127.0.0.1",
                    "--loglevel",
                    "warning",
                ]);
                c.env_remove("CORTADO_KEYSPACE_SHARDS");
                c.env_remove("TOKIO_WORKER_THREADS");
                c.envs(kind.env().iter().copied());
                c
            }
        };
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", kind.name()));
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let started = Instant::now();
        loop {
            if let Ok(mut c) = Client::connect(addr) {
                if c.call(&[b"PING"]).is_ok() {
                    break;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{} did not start",
                kind.name()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, addr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's resident set in bytes.
    fn rss(&self) -> u64 {
        let statm =
            std::fs::read_to_string(format!("/proc/{}/statm", self.pid())).unwrap_or_default();
        statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(0)
            * 4096
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking RESP client that counts replies without building them.
struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> std::io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream: BufReader::with_capacity(1 << 16, stream),
        })
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.get_mut().write_all(bytes).expect("write");
    }

    /// Reads one reply; returns its first line (and a bulk string's data after a newline).
    fn read_reply(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let line = line.trim_end().to_owned();
        match line.as_bytes().first() {
            Some(b'$') | Some(b'=') => {
                let n: i64 = line[1..].parse().unwrap_or(-1);
                if n < 0 {
                    return Ok(line);
                }
                let mut data = vec![0; n as usize + 2];
                self.stream.read_exact(&mut data)?;
                data.truncate(n as usize);
                Ok(format!("{line}\n{}", String::from_utf8_lossy(&data)))
            }
            Some(b'*') => {
                let n: i64 = line[1..].parse().unwrap_or(0);
                let mut out = line.clone();
                for _ in 0..n.max(0) {
                    out.push('\n');
                    out.push_str(&self.read_reply()?);
                }
                Ok(out)
            }
            _ => Ok(line),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> std::io::Result<String> {
        self.send(&encode(args));
        self.read_reply()
    }

    /// An `INFO` field's value.
    fn info_field(&mut self, field: &str) -> u64 {
        let text = self.call(&[b"INFO", b"all"]).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One redis-benchmark test's figures.
#[derive(Clone, Copy, Default)]
struct Cell {
    rps: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

fn redis_benchmark(addr: SocketAddr, pipeline: u32, requests: u64) -> Vec<(String, Cell)> {
    let output = Command::new("redis-benchmark")
        .args([
            "-h",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
            "-t",
            "set,get",
            "-n",
            &requests.to_string(),
            "-r",
            &requests.to_string(),
            "-c",
            "50",
            "-P",
            &pipeline.to_string(),
            "--csv",
        ])
        .output()
        .expect("run redis-benchmark");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<String> = line
                .split(',')
                .map(|f| f.trim_matches('"').to_owned())
                .collect();
            let num = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            (fields.len() >= 8).then(|| {
                (
                    fields[0].clone(),
                    Cell {
                        rps: num(1),
                        p50: num(4),
                        p99: num(6),
                        max: num(7),
                    },
                )
            })
        })
        .collect()
}

fn throughput(o: &Options) {
    println!(
        "\n## Throughput: redis-benchmark -t set,get -n {n} -r {n} -c 50 (-P 1, -P 16), {} round(s)\n",
        o.rounds,
        n = o.requests
    );
    println!("| round | test | P | redis rps | cortado rps | ratio | redis p50/p99/max ms | cortado p50/p99/max ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for round in 0..o.rounds {
        for pipeline in [1, 16] {
            // The servers take turns going first.
            let order = if round % 2 == 0 {
                [Kind::Redis, Kind::Cortado]
            } else {
                [Kind::Cortado, Kind::Redis]
            };
            let mut results: Vec<(Kind, Vec<(String, Cell)>)> = Vec::new();
            for kind in order {
                let server = Server::start(kind);
                results.push((kind, redis_benchmark(server.addr, pipeline, o.requests)));
            }
            let of = |kind: Kind| &results.iter().find(|(k, _)| *k == kind).unwrap().1;
            for (test, redis) in of(Kind::Redis) {
                let Some((_, cortado)) = of(Kind::Cortado).iter().find(|(t, _)| t == test) else {
                    continue;
                };
                println!(
                    "| {} | {test} | {pipeline} | {:.0} | {:.0} | {:.2}x | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} / {:.3} |",
                    round + 1,
                    redis.rps,
                    cortado.rps,
                    cortado.rps / redis.rps,
                    redis.p50,
                    redis.p99,
                    redis.max,
                    cortado.p50,
                    cortado.p99,
                    cortado.max
                );
            }
        }
    }
}

/// Connections sending transactions in `transactions`.
const TX_CLIENTS: u64 = 8;

/// `MULTI` / `INCR` / `EXEC` transactions per second on Redis and Cortado, taking turns.
fn transactions(o: &Options) {
    println!(
        "\n## Transactions: {} x MULTI/INCR/EXEC from {TX_CLIENTS} connections, {} round(s)\n",
        o.requests, o.rounds
    );
    println!("| round | depth | redis tx/s | cortado tx/s | ratio |");
    println!("|---|---|---|---|---|");
    for round in 0..o.rounds {
        for depth in [1, 16] {
            let order = if round % 2 == 0 {
                [Kind::Redis, Kind::Cortado]
            } else {
                [Kind::Cortado, Kind::Redis]
            };
            let mut rates = [0.0; 2];
            for kind in order {
                let server = Server::start(kind);
                rates[usize::from(kind == Kind::Cortado)] =
                    transaction_load(server.addr, o.requests, depth);
            }
            println!(
                "| {} | {depth} | {:.0} | {:.0} | {:.2}x |",
                round + 1,
                rates[0],
                rates[1],
                rates[1] / rates[0]
            );
        }
    }
}

/// Runs `transactions` transactions (`MULTI`, `INCR tx:<client>`, `EXEC`) from
/// [`TX_CLIENTS`] connections, `depth` in flight on each; returns transactions per second.
/// Panics if a transaction fails or the counters do not sum to the transactions run.
fn transaction_load(addr: SocketAddr, transactions: u64, depth: u64) -> f64 {
    let per_client = transactions / TX_CLIENTS;
    let started = Instant::now();
    let threads: Vec<_> = (0..TX_CLIENTS)
        .map(|i| {
            std::thread::spawn(move || {
                let mut client = Client::connect(addr).expect("connect");
                let key = format!("tx:{i}");
                let mut one = encode(&[b"MULTI"]);
                one.extend(encode(&[b"INCR", key.as_bytes()]));
                one.extend(encode(&[b"EXEC"]));
                let batch = one.repeat(depth as usize);
                let mut done = 0;
                while done < per_client {
                    let n = depth.min(per_client - done);
                    client.send(&batch[..one.len() * n as usize]);
                    for _ in 0..n {
                        let replies = [(); 3].map(|_| client.read_reply().expect("a reply"));
                        assert!(
                            replies[0] == "+OK" && replies[1] == "+QUEUED",
                            "{replies:?}"
                        );
                        assert!(replies[2].starts_with("*1\n:"), "{replies:?}");
                    }
                    done += n;
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("client thread");
    }
    let rate = (per_client * TX_CLIENTS) as f64 / started.elapsed().as_secs_f64();
    let mut check = Client::connect(addr).expect("connect");
    let total = counters_total(&mut check, "tx");
    assert_eq!(total, per_client * TX_CLIENTS, "every transaction counted");
    rate
}

/// The lock's compare-and-delete script, as the distributed lock pattern writes it.
const UNLOCK_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// A script doing one `INCR`.
const INCR_SCRIPT: &str = "return redis.call('incr', KEYS[1])";

/// `EVALSHA`s per second of the unlock and `INCR` scripts on Redis and Cortado, taking turns.
fn scripts(o: &Options) {
    println!(
        "\n## Scripts: {} x EVALSHA from {TX_CLIENTS} connections, {} round(s)\n",
        o.requests, o.rounds
    );
    println!("| round | script | depth | redis scripts/s | cortado scripts/s | ratio |");
    println!("|---|---|---|---|---|---|");
    for round in 0..o.rounds {
        for (name, script) in [("unlock", UNLOCK_SCRIPT), ("incr", INCR_SCRIPT)] {
            for depth in [1, 16] {
                let order = if round % 2 == 0 {
                    [Kind::Redis, Kind::Cortado]
                } else {
                    [Kind::Cortado, Kind::Redis]
                };
                let mut rates = [0.0; 2];
                for kind in order {
                    let server = Server::start(kind);
                    rates[usize::from(kind == Kind::Cortado)] =
                        script_load(server.addr, script, o.requests, depth);
                }
                println!(
                    "| {} | {name} | {depth} | {:.0} | {:.0} | {:.2}x |",
                    round + 1,
                    rates[0],
                    rates[1],
                    rates[1] / rates[0]
                );
            }
        }
    }
}

/// Runs `count` `EVALSHA`s of `script` (given `KEYS[1]` = `s:<client>`, `ARGV[1]` = `mine`)
/// from [`TX_CLIENTS`] connections, `depth` in flight on each; returns scripts per second.
/// Each lock is held by another token first, so the unlock script replies 0 every time; the
/// `INCR` script's counters must sum to the scripts run.
fn script_load(addr: SocketAddr, script: &str, count: u64, depth: u64) -> f64 {
    let per_client = count / TX_CLIENTS;
    let mut setup = Client::connect(addr).expect("connect");
    let sha = setup
        .call(&[b"SCRIPT", b"LOAD", script.as_bytes()])
        .expect("SCRIPT LOAD");
    let sha = sha.lines().nth(1).expect("a SHA1").to_owned();
    let unlock = script == UNLOCK_SCRIPT;
    for i in 0..TX_CLIENTS {
        if unlock {
            setup
                .call(&[b"SET", format!("s:{i}").as_bytes(), b"theirs"])
                .expect("SET");
        }
    }
    let started = Instant::now();
    let threads: Vec<_> = (0..TX_CLIENTS)
        .map(|i| {
            let sha = sha.clone();
            std::thread::spawn(move || {
                let mut client = Client::connect(addr).expect("connect");
                let key = format!("s:{i}");
                let one = encode(&[b"EVALSHA", sha.as_bytes(), b"1", key.as_bytes(), b"mine"]);
                let batch = one.repeat(depth as usize);
                let mut done = 0;
                while done < per_client {
                    let n = depth.min(per_client - done);
                    client.send(&batch[..one.len() * n as usize]);
                    for _ in 0..n {
                        let reply = client.read_reply().expect("a reply");
                        assert!(reply.starts_with(':'), "{reply}");
                        if unlock {
                            assert_eq!(reply, ":0", "the lock is another's");
                        }
                    }
                    done += n;
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("client thread");
    }
    let rate = (per_client * TX_CLIENTS) as f64 / started.elapsed().as_secs_f64();
    if !unlock {
        let total = counters_total(&mut setup, "s");
        assert_eq!(total, per_client * TX_CLIENTS, "every script counted");
    }
    rate
}

/// The sum of the counters `{prefix}:0` to `{prefix}:{TX_CLIENTS - 1}` (a missing one: 0), by
/// which the transaction and script modes check that no increment was lost.
fn counters_total(client: &mut Client, prefix: &str) -> u64 {
    (0..TX_CLIENTS)
        .map(|i| {
            let reply = client
                .call(&[b"GET", format!("{prefix}:{i}").as_bytes()])
                .expect("GET");
            reply
                .lines()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// Requests per second of Cortado's design and of the two it was measured against, beside
/// Redis, the four servers taking turns; each cell's ratio is to Redis in the same round.
fn concurrency(o: &Options) {
    const KINDS: [Kind; 4] = [
        Kind::Redis,
        Kind::Cortado,
        Kind::CortadoOneLock,
        Kind::CortadoOneThread,
    ];
    println!(
        "\n## Concurrency designs: redis-benchmark -t set,get -n {n} -r {n} -c 50, {} round(s)\n",
        o.rounds,
        n = o.requests
    );
    println!("| round | test | P | redis rps | cortado (sharded) | one lock | one thread |");
    println!("|---|---|---|---|---|---|---|");
    for round in 0..o.rounds {
        for pipeline in [1, 16] {
            let mut order = KINDS;
            order.rotate_left(round as usize % KINDS.len());
            let mut results: Vec<(Kind, Vec<(String, Cell)>)> = Vec::new();
            for kind in order {
                let server = Server::start(kind);
                results.push((kind, redis_benchmark(server.addr, pipeline, o.requests)));
            }
            let of = |kind: Kind| &results.iter().find(|(k, _)| *k == kind).unwrap().1;
            for (test, redis) in of(Kind::Redis) {
                let mut row = format!("| {} | {test} | {pipeline} | {:.0} |", round + 1, redis.rps);
                for kind in &KINDS[1..] {
                    match of(*kind).iter().find(|(t, _)| t == test) {
                        Some((_, cell)) => row.push_str(&format!(
                            " {:.0} ({:.2}x) |",
                            cell.rps,
                            cell.rps / redis.rps
                        )),
                        None => row.push_str(" - |"),
                    }
                }
                println!("{row}");
            }
        }
    }
}

/// Loads keys `0..n` as 16-byte keys with 16-byte values, with a TTL if `ex` is set, in
/// pipelined batches.
fn load(addr: SocketAddr, n: u64, expire: Option<(&str, u64)>) {
    let mut client = Client::connect(addr).expect("connect");
    const BATCH: u64 = 1000;
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let mut buf = Vec::new();
        for i in start..end {
            let key = format!("key:{i:012}");
            let value = format!("value:{i:010}");
            match expire {
                None => buf.extend(encode(&[b"SET", key.as_bytes(), value.as_bytes()])),
                Some((unit, t)) => buf.extend(encode(&[
                    b"SET",
                    key.as_bytes(),
                    value.as_bytes(),
                    unit.as_bytes(),
                    t.to_string().as_bytes(),
                ])),
            }
        }
        client.send(&buf);
        for _ in start..end {
            client.read_reply().expect("reply");
        }
        start = end;
    }
}

/// One kind of value `memory --type` loads, an element at a time.
struct Load {
    /// Its name for `--type`.
    name: &'static str,
    /// What its keys hold, for the table.
    shape: &'static str,
    /// The command that writes element `e`.
    command: fn(u64) -> Vec<Vec<u8>>,
}

/// The kinds of value `memory --type` loads.
const LOADS: &[Load] = &[
    Load {
        name: "string",
        shape: "keys of 16 bytes, values of 16 bytes",
        command: |e| {
            let key = format!("key:{e:012}");
            let value = format!("value:{e:010}");
            vec![b"SET".to_vec(), key.into(), value.into()]
        },
    },
    Load {
        name: "hash",
        shape: "hashes of 10 fields of 7 bytes, values of 9 bytes (listpack)",
        command: |e| {
            let key = format!("hash:{:012}", e / 10);
            let field = format!("field:{}", e % 10);
            let value = format!("v{e:08}");
            vec![b"HSET".to_vec(), key.into(), field.into(), value.into()]
        },
    },
    Load {
        name: "hash-object",
        shape: "hashes of 10 named fields (3-8 bytes), 5 integers and 5 strings of 4-12 bytes (listpack)",
        command: |e| {
            const FIELDS: [&str; 10] = [
                "name", "email", "age", "city", "plan", "created", "visits", "score", "active",
                "referrer",
            ];
            let i = (e % 10) as usize;
            let key = format!("user:{:08}", e / 10);
            let value = match i {
                0 => format!("user{}", e / 10),
                1 => format!("u{}@mail.io", e / 10),
                3 => "Lisbon".to_string(),
                4 => "free".to_string(),
                9 => format!("ref{}", e % 7),
                2 => (20 + e % 50).to_string(),
                5 => (1_700_000_000 + e).to_string(),
                _ => (e % 1000).to_string(),
            };
            vec![b"HSET".to_vec(), key.into(), FIELDS[i].into(), value.into()]
        },
    },
    Load {
        name: "hash-large",
        shape: "hashes of 1,000 fields of up to 9 bytes, values of 14 bytes (hashtable)",
        command: |e| {
            let key = format!("bighash:{:08}", e / 1000);
            let field = format!("field:{}", e % 1000);
            let value = format!("value:{e:08}");
            vec![b"HSET".to_vec(), key.into(), field.into(), value.into()]
        },
    },
    Load {
        name: "set",
        shape: "sets of 1,000 members of 15 bytes (hashtable)",
        command: |e| {
            let key = format!("set:{:08}", e / 1000);
            let member = format!("member:{e:08}");
            vec![b"SADD".to_vec(), key.into(), member.into()]
        },
    },
    Load {
        name: "list",
        shape: "lists of 1,000 elements of 16 bytes (quicklist)",
        command: |e| {
            let key = format!("list:{:08}", e / 1000);
            let element = format!("element:{e:08}");
            vec![b"RPUSH".to_vec(), key.into(), element.into()]
        },
    },
    Load {
        name: "list-small",
        shape: "lists of 10 elements of 16 bytes (quicklist of one listpack)",
        command: |e| {
            let key = format!("smalllist:{:08}", e / 10);
            let element = format!("element:{e:08}");
            vec![b"RPUSH".to_vec(), key.into(), element.into()]
        },
    },
    Load {
        name: "zset",
        shape: "sorted sets of 1,000 members of 16 bytes, integer scores (skiplist)",
        command: |e| {
            let key = format!("zset:{:08}", e / 1000);
            let member = format!("element:{e:08}");
            vec![b"ZADD".to_vec(), key.into(), e.to_string().into(), member.into()]
        },
    },
    Load {
        name: "zset-small",
        shape: "sorted sets of 10 members of 16 bytes, integer scores (listpack)",
        command: |e| {
            let key = format!("smallzset:{:08}", e / 10);
            let member = format!("element:{e:08}");
            vec![b"ZADD".to_vec(), key.into(), e.to_string().into(), member.into()]
        },
    },
    Load {
        name: "intset",
        shape: "sets of 500 integers below 2^31 (intset)",
        command: |e| {
            let key = format!("intset:{:08}", e / 500);
            vec![b"SADD".to_vec(), key.into(), e.to_string().into()]
        },
    },
];

/// Writes elements `0..n` of `load`, pipelined in batches.
fn load_elements(addr: SocketAddr, n: u64, load: &Load) {
    let mut client = Client::connect(addr).expect("connect");
    const BATCH: u64 = 1000;
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let mut buf = Vec::new();
        for e in start..end {
            let args = (load.command)(e);
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            buf.extend(encode(&refs));
        }
        client.send(&buf);
        for _ in start..end {
            let reply = client.read_reply().expect("reply");
            assert!(!reply.starts_with('-'), "{}: {reply}", load.name);
        }
        start = end;
    }
}

/// `memory --type`: bytes per element of each type asked for, Redis's and ours.
fn memory_types(o: &Options) {
    println!("\n## Memory: {} elements of each type\n", o.keys);
    println!("| type | shape | server | RSS bytes/element | used_memory bytes/element | used_memory vs redis | DBSIZE |");
    println!("|---|---|---|---|---|---|---|");
    for name in &o.types {
        let load = LOADS.iter().find(|l| l.name == name).expect("checked");
        let mut redis_used = None;
        for kind in [Kind::Redis, Kind::Cortado] {
            let server = Server::start(kind);
            let mut client = Client::connect(server.addr).expect("connect");
            std::thread::sleep(Duration::from_millis(200));
            let (rss0, used0) = (server.rss(), client.info_field("used_memory"));
            load_elements(server.addr, o.keys, load);
            std::thread::sleep(Duration::from_millis(500));
            let (rss1, used1) = (server.rss(), client.info_field("used_memory"));
            let dbsize = client.call(&[b"DBSIZE"]).unwrap_or_default();
            let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / o.keys as f64;
            let used = per(used0, used1);
            let ratio = match redis_used {
                None => {
                    redis_used = Some(used);
                    "1.000".to_string()
                }
                Some(r) => format!("{:.3}", used / r),
            };
            println!(
                "| {} | {} | {} | {:.1} | {:.2} | {ratio} | {} |",
                load.name,
                load.shape,
                kind.name(),
                per(rss0, rss1),
                used,
                dbsize.trim_start_matches(':')
            );
        }
    }
}

fn memory(o: &Options) {
    if !o.types.is_empty() {
        return memory_types(o);
    }
    println!(
        "\n## Memory: {} keys of 16 bytes, values of 16 bytes\n",
        o.keys
    );
    println!("| server | TTL | RSS bytes/key | used_memory bytes/key | DBSIZE |");
    println!("|---|---|---|---|---|");
    for ttl in [false, true] {
        for kind in [Kind::Redis, Kind::Cortado] {
            let server = Server::start(kind);
            let mut client = Client::connect(server.addr).expect("connect");
            std::thread::sleep(Duration::from_millis(200));
            let (rss0, used0) = (server.rss(), client.info_field("used_memory"));
            load(server.addr, o.keys, ttl.then_some(("EX", 3600)));
            std::thread::sleep(Duration::from_millis(500));
            let (rss1, used1) = (server.rss(), client.info_field("used_memory"));
            let dbsize = client.call(&[b"DBSIZE"]).unwrap_or_default();
            let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / o.keys as f64;
            println!(
                "| {} | {} | {:.1} | {:.1} | {} |",
                kind.name(),
                if ttl { "1 h" } else { "none" },
                per(rss0, rss1),
                per(used0, used1),
                dbsize.trim_start_matches(':')
            );
        }
    }
}

/// Latencies in microseconds, sorted, as p50/p99/max in milliseconds.
fn percentiles(mut us: Vec<u64>) -> (f64, f64, f64) {
    if us.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    us.sort_unstable();
    let at = |q: f64| us[((us.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
    (at(0.5), at(0.99), *us.last().unwrap() as f64 / 1000.0)
}

fn expiry(o: &Options) {
    println!(
        "\n## Expiry storm: {} keys expiring in the same second, no reads of them\n",
        o.keys
    );
    println!("| server | load s | deadline to DBSIZE 0 | deadline to used_memory back | GET p50 / p99 / max ms (during) | GETs | GET p50 / p99 / max ms (before the deadline) |");
    println!("|---|---|---|---|---|---|---|");
    for kind in [Kind::Redis, Kind::Cortado] {
        let server = Server::start(kind);
        let mut control = Client::connect(server.addr).expect("connect");
        control.call(&[b"SET", b"probe", b"x"]).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let used0 = control.info_field("used_memory");
        let load_started = Instant::now();
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // Long enough after now for the load to finish first.
        let deadline_s = now_s + 2 + o.keys / 200_000;
        load(server.addr, o.keys, Some(("EXAT", deadline_s)));
        let load_secs = load_started.elapsed().as_secs_f64();
        let deadline = UNIX_EPOCH + Duration::from_secs(deadline_s);
        // The ping-pong GET client runs from the end of the load until the end.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop_getter = stop.clone();
        let addr = server.addr;
        let getter = std::thread::spawn(move || {
            let mut client = Client::connect(addr).expect("connect");
            // Before the deadline: the machine's own noise, for comparison.
            let (mut before, mut during) = (Vec::new(), Vec::new());
            while !stop_getter.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                client.call(&[b"GET", b"probe"]).expect("GET");
                let took = started.elapsed().as_micros() as u64;
                if SystemTime::now() >= deadline {
                    during.push(took);
                } else {
                    before.push(took);
                }
            }
            (before, during)
        });
        while SystemTime::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut empty_after = None;
        let mut memory_after = None;
        let give_up = Instant::now() + Duration::from_secs(60);
        while (empty_after.is_none() || memory_after.is_none()) && Instant::now() < give_up {
            let since = SystemTime::now()
                .duration_since(deadline)
                .unwrap_or_default();
            if empty_after.is_none() {
                let size = control.call(&[b"DBSIZE"]).unwrap_or_default();
                // The probe key stays.
                if size.trim() == ":1" {
                    empty_after = Some(since);
                }
            }
            if memory_after.is_none() {
                let used = control.info_field("used_memory");
                if used <= used0 + used0 / 10 + (1 << 20) {
                    memory_after = Some(since);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (before, latencies) = getter.join().unwrap();
        let gets = latencies.len();
        let (p50, p99, max) = percentiles(latencies);
        let (b50, b99, bmax) = percentiles(before);
        let show = |d: Option<Duration>| {
            d.map_or("> 60 s".to_owned(), |d| format!("{:.3} s", d.as_secs_f64()))
        };
        println!(
            "| {} | {load_secs:.1} | {} | {} | {p50:.3} / {p99:.3} / {max:.3} | {gets} | {b50:.3} / {b99:.3} / {bmax:.3} |",
            kind.name(),
            show(empty_after),
            show(memory_after),
        );
    }
}
