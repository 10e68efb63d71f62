//! `server-hits`: the hit ratio of cortado-server and redis-server at the same `maxmemory`, for
//! every eviction policy of each, by replaying traces through a real client.
//!
//! ```text
//! cargo build --release -p cortado-server -p cortado-bench --bin server-hits
//! CORTADO_TRACES=../shared/traces target/release/server-hits
//!     [--traces DIR] [--trace NAME[:REQUESTS[:FRACTION]]]... [--value-size BYTES]
//!     [--servers redis,cortado] [--policies P,...] [--cortado PATH] [--batch N]
//! ```
//!
//! Each request of a trace is a `GET` of the key (its decimal text); a miss is followed by a
//! `SET` of a value of `--value-size` bytes (100). Every cell (trace, server, policy) starts a
//! fresh server process on a free port with `--save '' --appendonly no`, the cell's `maxmemory`
//! and `maxmemory-policy`, so no cell inherits another's keys, statistics or allocator state.
//! The table gives the hit ratio (hits over all requests, cold misses included), the keys held
//! at the end (`DBSIZE`), `evicted_keys` and `used_memory` (`INFO`), and the `SET`s refused
//! with `-OOM` (`noeviction`, and the `volatile-*` policies when no key has a TTL).
//!
//! # Design
//!
//! - **One memory limit per trace, for both servers.** The bytes a key costs are measured on
//!   redis-server (the growth of `used_memory` over up to 10,000 of the trace's own keys with
//!   their values), and the limit is Redis's empty `used_memory` plus `FRACTION` (0.1) of the
//!   prefix's distinct keys at that cost. Cortado gets the same number of bytes: a server that
//!   spends less per key, or less on its empty state, holds more keys.
//! - **And the same room for keys.** At a limit of a few MB, what each server spends before its
//!   first key is a large share of it, so Cortado's `allkeys-lru` and `allkeys-wtinylfu` also
//!   run at its own empty `used_memory` (measured the same way) plus the bytes Redis has for
//!   keys: the `same room` rows compare the policies apart from the empty state.
//! - **Pipelined, the same for both servers.** A batch of up to `--batch` (64) `GET`s goes out
//!   at once, then the `SET`s of its misses. A batch ends early at a key it already holds, so a
//!   repeat within a batch is never counted as a miss that a one-at-a-time replay would hit; the
//!   only difference from that replay is that the batch's `SET`s come after all its `GET`s.
//! - **`volatile-*` cells write with `EX 100000`**, so every key is a candidate for eviction
//!   (more than a day: nothing expires during a run); the other cells write without a TTL. A
//!   TTL costs Redis an entry in its expires table, so those cells hold fewer keys in the same
//!   bytes: compare a `volatile-*` cell with the same policy of the other server, not with
//!   `allkeys-*`.
//! - **The traces' own keys.** Keys are the trace's `u64` keys in decimal, so their length (1 to
//!   20 bytes) is the trace's, and the readers are the simulator's (`cortado_sim::trace`).
//!
//! The goal the table is read against (issue 35): `allkeys-wtinylfu` at least 3 points above
//! the best Redis policy on every trace, holding at least as many keys; the summary after each
//! trace says whether it was met.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cortado_sim::trace;

/// Redis 7.0's policies; Cortado has these and [`CORTADO_ONLY`].
const REDIS_POLICIES: [&str; 8] = [
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
];

/// The policies only Cortado has.
const CORTADO_ONLY: [&str; 2] = ["allkeys-wtinylfu", "volatile-wtinylfu"];

/// The TTL of the `volatile-*` cells' keys: longer than any run.
const VOLATILE_TTL_SECONDS: &str = "100000";

/// Keys written to measure the bytes a key costs on redis-server: enough that the hash
/// table's doubling is a small share of the growth.
const PER_KEY_SAMPLE: usize = 10_000;

/// The default traces: a skewed key-value workload, a recency-friendly file server, a strict
/// loop (at half its keys, as LRU gets nothing below all of them, and a tenth of 1,011 keys is
/// too few bytes to measure), a database, and web requests.
const DEFAULT_TRACES: [&str; 5] = [
    "twitter-c52:500000",
    "sprite",
    "loop:300000:0.5",
    "oltp:500000",
    "web07",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Redis,
    Cortado,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Redis => "redis",
            Kind::Cortado => "cortado",
        }
    }

    fn policies(self) -> Vec<&'static str> {
        let mut all = REDIS_POLICIES.to_vec();
        if self == Kind::Cortado {
            all.extend(CORTADO_ONLY);
        }
        all
    }
}

/// One trace to replay: its name, how many requests of it, and the share of its distinct keys
/// the memory limit is sized for.
#[derive(Clone, Debug)]
struct TraceSpec {
    name: String,
    requests: Option<usize>,
    fraction: f64,
}

fn parse_trace_spec(text: &str) -> Result<TraceSpec, String> {
    let mut parts = text.split(':');
    let name = parts.next().unwrap_or_default().to_owned();
    if name.is_empty() {
        return Err(format!("'{text}': a trace needs a name"));
    }
    let requests = match parts.next() {
        None | Some("") | Some("all") => None,
        Some(n) => Some(
            n.replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("'{text}': REQUESTS must be a positive integer"))?,
        ),
    };
    let fraction = match parts.next() {
        None => 0.1,
        Some(f) => f
            .parse::<f64>()
            .ok()
            .filter(|f| *f > 0.0 && *f <= 1.0)
            .ok_or_else(|| format!("'{text}': FRACTION must be in (0, 1]"))?,
    };
    if parts.next().is_some() {
        return Err(format!("'{text}': expected NAME[:REQUESTS[:FRACTION]]"));
    }
    Ok(TraceSpec {
        name,
        requests,
        fraction,
    })
}

struct Options {
    traces_dir: PathBuf,
    traces: Vec<TraceSpec>,
    value_size: usize,
    batch: usize,
    servers: Vec<Kind>,
    policies: Option<Vec<String>>,
    cortado: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut traces_dir = std::env::var_os("CORTADO_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/traces"));
    let mut traces = Vec::new();
    let mut value_size = 100;
    let mut batch = 64;
    let mut servers = vec![Kind::Redis, Kind::Cortado];
    let mut policies = None;
    let mut cortado = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} takes a value"));
        let number = |text: String, name: &str| {
            text.replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name} takes a positive integer"))
        };
        match arg.as_str() {
            "--traces" => traces_dir = PathBuf::from(value()?),
            "--trace" => traces.push(parse_trace_spec(&value()?)?),
            "--value-size" => value_size = number(value()?, "--value-size")?,
            "--batch" => batch = number(value()?, "--batch")?,
            "--cortado" => cortado = Some(PathBuf::from(value()?)),
            "--policies" => {
                policies = Some(value()?.split(',').map(str::to_owned).collect::<Vec<_>>())
            }
            "--servers" => {
                servers = value()?
                    .split(',')
                    .map(|s| match s {
                        "redis" => Ok(Kind::Redis),
                        "cortado" => Ok(Kind::Cortado),
                        other => Err(format!("unknown server '{other}' (redis, cortado)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => {
                return Err(
                    "usage: server-hits [--traces DIR] [--trace NAME[:REQUESTS[:FRACTION]]]... \
                     [--value-size BYTES] [--batch N] [--servers redis,cortado] [--policies P,...] \
                     [--cortado PATH]"
                        .to_owned(),
                )
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    if traces.is_empty() {
        traces = DEFAULT_TRACES
            .iter()
            .map(|t| parse_trace_spec(t))
            .collect::<Result<_, _>>()?;
    }
    if let Some(policies) = &policies {
        for p in policies {
            if !REDIS_POLICIES.contains(&p.as_str()) && !CORTADO_ONLY.contains(&p.as_str()) {
                return Err(format!("unknown policy '{p}'"));
            }
        }
    }
    let cortado = cortado.unwrap_or_else(default_cortado_binary);
    if servers.contains(&Kind::Cortado) && !cortado.is_file() {
        return Err(format!(
            "no cortado-server binary at {} (cargo build --release -p cortado-server, or --cortado PATH)",
            cortado.display()
        ));
    }
    Ok(Options {
        traces_dir,
        traces,
        value_size,
        batch,
        servers,
        policies,
        cortado,
    })
}

/// `$CARGO_TARGET_DIR/release/cortado-server`, else `target/release/cortado-server`, else the
/// one beside this binary.
fn default_cortado_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    let built = target.join("release").join("cortado-server");
    if built.is_file() {
        return built;
    }
    std::env::current_exe()
        .map(|exe| exe.with_file_name("cortado-server"))
        .unwrap_or(built)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("server-hits: {e}");
            return ExitCode::from(2);
        }
    };
    // The memory limit is measured on redis-server even when only Cortado runs.
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!(
            "server-hits: redis-server is not installed (apt-get install redis-server redis-tools)"
        );
        return ExitCode::from(2);
    }
    println!(
        "server-hits: {} CPUs; {}; cortado-server {}; values of {} bytes, batches of {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        redis_version(),
        o.cortado.display(),
        o.value_size,
        o.batch
    );
    let mut failed = false;
    for spec in &o.traces {
        if let Err(e) = run_trace(&o, spec) {
            eprintln!("server-hits: {}: {e}", spec.name);
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn redis_version() -> String {
    Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The file of trace `name` in `dir`: the one whose name without `.FORMAT[.gz]` is `name`.
fn find_trace(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "cannot read the trace directory {} ({e}); set --traces or CORTADO_TRACES",
            dir.display()
        )
    })?;
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| trace::Format::from_path(p).is_some() && trace::name(p) == name)
        .ok_or_else(|| format!("no trace named '{name}' in {}", dir.display()))
}

/// One cell's outcome.
struct Cell {
    kind: Kind,
    policy: String,
    hits: u64,
    requests: u64,
    keys: u64,
    evicted: u64,
    used_memory: u64,
    empty_used_memory: u64,
    oom: u64,
    other_errors: u64,
    seconds: f64,
}

impl Cell {
    fn hit_ratio(&self) -> f64 {
        self.hits as f64 / self.requests.max(1) as f64
    }
}

fn run_trace(o: &Options, spec: &TraceSpec) -> Result<(), String> {
    let path = find_trace(&o.traces_dir, &spec.name)?;
    let reader = trace::open(&path, None).map_err(|e| e.to_string())?;
    let keys: Vec<u64> = match spec.requests {
        Some(n) => reader.take(n).collect::<Result<_, _>>(),
        None => reader.collect::<Result<_, _>>(),
    }
    .map_err(|e| e.to_string())?;
    let mut seen = HashSet::with_capacity(keys.len() / 4);
    let distinct: Vec<u64> = keys.iter().copied().filter(|k| seen.insert(*k)).collect();
    let value = vec![b'v'; o.value_size];
    let (empty, per_key) = measure_key_cost(Kind::Redis, o, &distinct, &value)?;
    let held = (spec.fraction * distinct.len() as f64).round();
    let room = (held * per_key).round() as u64;
    let maxmemory = empty + room;
    println!(
        "\n## {} ({} requests, {} distinct keys): maxmemory {maxmemory} = Redis's empty used_memory {empty} + {:.0}% of the distinct keys ({held:.0}) x {per_key:.1} bytes a key (measured on redis-server)\n",
        spec.name,
        keys.len(),
        distinct.len(),
        spec.fraction * 100.0,
    );
    // Cortado at its own empty state plus the same room for keys: the policies apart from
    // what each server spends before its first key.
    let same_room = if o.servers.contains(&Kind::Cortado) {
        let (cortado_empty, cortado_per_key) =
            measure_key_cost(Kind::Cortado, o, &distinct, &value)?;
        println!(
            "cortado-server measured the same way: empty used_memory {cortado_empty}, {cortado_per_key:.1} bytes a key; the `same room` rows run it at maxmemory {} (its empty used_memory + the {room} bytes Redis has for keys)\n",
            cortado_empty + room
        );
        Some(cortado_empty + room)
    } else {
        None
    };
    println!("| trace | server | policy | maxmemory | hit ratio | keys held | evicted_keys | used_memory | empty used_memory | OOM replies | seconds |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut plan: Vec<(Kind, &str, Limit)> = Vec::new();
    for &kind in &o.servers {
        for policy in kind.policies() {
            plan.push((kind, policy, Limit::Equal));
        }
    }
    if let Some(bytes) = same_room {
        for policy in SAME_ROOM_POLICIES {
            plan.push((Kind::Cortado, policy, Limit::SameRoom(bytes)));
        }
    }
    plan.retain(|(_, policy, _)| {
        o.policies
            .as_ref()
            .is_none_or(|only| only.iter().any(|p| p == policy))
    });
    let mut cells = Vec::new();
    for (kind, policy, limit) in plan {
        let bytes = match limit {
            Limit::Equal => maxmemory,
            Limit::SameRoom(bytes) => bytes,
        };
        let cell = run_cell(o, kind, policy, bytes, &keys, &value)?;
        println!(
            "| {} | {} | {} | {} | {:.4} | {} | {} | {} | {} | {}{} | {:.1} |",
            spec.name,
            kind.name(),
            policy,
            match limit {
                Limit::Equal => "equal".to_owned(),
                Limit::SameRoom(bytes) => format!("same room ({bytes})"),
            },
            cell.hit_ratio(),
            cell.keys,
            cell.evicted,
            if over_limit(cell.used_memory, bytes) {
                format!("{} (over maxmemory)", cell.used_memory)
            } else {
                cell.used_memory.to_string()
            },
            cell.empty_used_memory,
            cell.oom,
            if cell.other_errors > 0 {
                format!(" ({} other errors)", cell.other_errors)
            } else {
                String::new()
            },
            cell.seconds
        );
        cells.push((limit, cell));
    }
    summarize(&spec.name, &cells, maxmemory);
    Ok(())
}

/// The limit of a cell.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Limit {
    /// The trace's `maxmemory`, the same for both servers.
    Equal,
    /// Cortado's empty `used_memory` plus the bytes Redis has for keys under the equal limit.
    SameRoom(u64),
}

/// Cortado's policies also run at the same room for keys as Redis.
const SAME_ROOM_POLICIES: [&str; 2] = ["allkeys-lru", "allkeys-wtinylfu"];

/// Whether a server ended more than 10% above the limit: it did not keep to it, and its hit
/// ratio is not one at that limit.
fn over_limit(used_memory: u64, maxmemory: u64) -> bool {
    used_memory > maxmemory + maxmemory / 10
}

/// Whether the goal holds on one trace: `allkeys-wtinylfu` at the equal limit 3 points above
/// the best Redis policy that writes (`noeviction` stops writing when full), with at least as
/// many keys held, within the limit; and the same comparison at the same room for keys.
fn summarize(trace: &str, cells: &[(Limit, Cell)], maxmemory: u64) {
    let redis = || {
        cells
            .iter()
            .filter(|(_, c)| c.kind == Kind::Redis)
            .map(|(_, c)| c)
    };
    let best = redis()
        .filter(|c| c.policy != "noeviction")
        .max_by(|a, b| a.hit_ratio().total_cmp(&b.hit_ratio()));
    let most_keys = redis()
        .filter(|c| c.policy.starts_with("allkeys-"))
        .map(|c| c.keys)
        .max();
    let (Some(best), Some(most_keys)) = (best, most_keys) else {
        return;
    };
    for (limit, w) in cells
        .iter()
        .filter(|(_, c)| c.kind == Kind::Cortado && c.policy == "allkeys-wtinylfu")
    {
        let (label, bytes) = match limit {
            Limit::Equal => ("equal maxmemory", maxmemory),
            Limit::SameRoom(bytes) => ("same room for keys", *bytes),
        };
        let points = (w.hit_ratio() - best.hit_ratio()) * 100.0;
        let within = !over_limit(w.used_memory, bytes);
        let met = points >= 3.0 && w.keys >= most_keys && within;
        println!(
            "\n{trace}, {label}: cortado allkeys-wtinylfu {:.4} vs best Redis policy {} {:.4}: {points:+.2} points (goal +3); keys held {} vs {most_keys} (most of Redis's allkeys-* cells; ratio {:.3}); {}",
            w.hit_ratio(),
            best.policy,
            best.hit_ratio(),
            w.keys,
            w.keys as f64 / most_keys.max(1) as f64,
            match (within, met, limit) {
                (false, _, _) => "NOT comparable: allkeys-wtinylfu ended above its maxmemory",
                (true, true, Limit::Equal) => "goal met",
                (true, false, Limit::Equal) => "goal NOT met",
                (true, true, Limit::SameRoom(_)) => "would meet the goal",
                (true, false, Limit::SameRoom(_)) => "would NOT meet the goal",
            }
        );
    }
}

/// A server's `used_memory` with no keys, and the bytes a key of this trace with `value`
/// adds, over up to [`PER_KEY_SAMPLE`] of the trace's keys written in batches of `--batch`
/// `SET`s as the replay writes them. The empty state is read after `FLUSHALL`, so it includes
/// the client's buffers at the size the replay grows them to.
fn measure_key_cost(
    kind: Kind,
    o: &Options,
    distinct: &[u64],
    value: &[u8],
) -> Result<(u64, f64), String> {
    let server = ServerProcess::start(kind, &o.cortado, &[])?;
    let mut client = Client::connect(server.addr)?;
    let sample = &distinct[..distinct.len().min(PER_KEY_SAMPLE)];
    for chunk in sample.chunks(o.batch) {
        let mut out = Vec::new();
        for key in chunk {
            encode_into(&mut out, &[b"SET", key.to_string().as_bytes(), value]);
        }
        client.send(&out)?;
        for _ in chunk {
            client.read_reply()?;
        }
    }
    let full = client.info_field("used_memory")?;
    client.call(&[b"FLUSHALL", b"SYNC"])?;
    let empty = client.info_field("used_memory")?;
    Ok((
        empty,
        full.saturating_sub(empty) as f64 / sample.len().max(1) as f64,
    ))
}

fn run_cell(
    o: &Options,
    kind: Kind,
    policy: &str,
    maxmemory: u64,
    keys: &[u64],
    value: &[u8],
) -> Result<Cell, String> {
    let maxmemory_text = maxmemory.to_string();
    let server = ServerProcess::start(
        kind,
        &o.cortado,
        &["--maxmemory", &maxmemory_text, "--maxmemory-policy", policy],
    )?;
    let mut client = Client::connect(server.addr)?;
    client.call(&[b"PING"])?;
    let empty_used_memory = client.info_field("used_memory")?;
    let volatile = policy.starts_with("volatile-");
    let started = Instant::now();
    let (mut hits, mut oom, mut other_errors) = (0u64, 0u64, 0u64);
    let mut batch: Vec<u64> = Vec::with_capacity(o.batch);
    let mut in_batch: HashSet<u64> = HashSet::with_capacity(o.batch);
    let mut out = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        batch.clear();
        in_batch.clear();
        while i < keys.len() && batch.len() < o.batch && in_batch.insert(keys[i]) {
            batch.push(keys[i]);
            i += 1;
        }
        out.clear();
        let texts: Vec<String> = batch.iter().map(u64::to_string).collect();
        for key in &texts {
            encode_into(&mut out, &[b"GET", key.as_bytes()]);
        }
        client.send(&out)?;
        out.clear();
        let mut misses = 0;
        for key in &texts {
            match client.read_reply()? {
                Reply::Bulk(n) if n == value.len() => hits += 1,
                Reply::Null => {
                    misses += 1;
                    if volatile {
                        encode_into(
                            &mut out,
                            &[
                                b"SET",
                                key.as_bytes(),
                                value,
                                b"EX",
                                VOLATILE_TTL_SECONDS.as_bytes(),
                            ],
                        );
                    } else {
                        encode_into(&mut out, &[b"SET", key.as_bytes(), value]);
                    }
                }
                other => return Err(format!("{}: GET {key} replied {other:?}", kind.name())),
            }
        }
        if misses > 0 {
            client.send(&out)?;
            for _ in 0..misses {
                match client.read_reply()? {
                    Reply::Error(e) if e.starts_with("OOM") => oom += 1,
                    Reply::Error(_) => other_errors += 1,
                    _ => {}
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let keys_held = match client.call(&[b"DBSIZE"])? {
        Reply::Int(n) => n.max(0) as u64,
        other => return Err(format!("DBSIZE replied {other:?}")),
    };
    Ok(Cell {
        kind,
        policy: policy.to_owned(),
        hits,
        requests: keys.len() as u64,
        keys: keys_held,
        evicted: client.info_field("evicted_keys")?,
        used_memory: client.info_field("used_memory")?,
        empty_used_memory,
        oom,
        other_errors,
        seconds,
    })
}

/// A server process on a free port of 127.0.0.1, killed when dropped.
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServerProcess {
    fn start(kind: Kind, cortado: &Path, extra: &[&str]) -> Result<ServerProcess, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port()
            .to_string();
        let mut command = match kind {
            Kind::Redis => Command::new("redis-server"),
            Kind::Cortado => Command::new(cortado),
        };
        command.args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]);
        command.args(extra);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", kind.name()))?;
        let addr: SocketAddr = format!("127.0.0.1:{port}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        let mut server = ServerProcess { child, addr };
        let started = Instant::now();
        while TcpStream::connect(addr).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("{} exited at start: {status}", kind.name()));
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = server.child.kill();
                return Err(format!("{} did not start in 10 s", kind.name()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A reply, with a bulk string's data kept only as its length (arrays are not needed here).
#[derive(Debug)]
enum Reply {
    Status,
    Error(String),
    Int(i64),
    Bulk(usize),
    Null,
}

/// A blocking RESP2 client that pipelines: [`send`](Client::send) any number of commands, then
/// [`read_reply`](Client::read_reply) once for each.
struct Client {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    /// The data of the last bulk string read.
    last_bulk: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Result<Client, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        Ok(Client {
            reader: BufReader::with_capacity(1 << 16, stream),
            writer: BufWriter::with_capacity(1 << 16, writer),
            last_bulk: Vec::new(),
        })
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.writer
            .write_all(bytes)
            .and_then(|()| self.writer.flush())
            .map_err(|e| format!("write: {e}"))
    }

    fn read_reply(&mut self) -> Result<Reply, String> {
        let mut line = Vec::new();
        self.reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("read: {e}"))?;
        if line.len() < 3 || !line.ends_with(b"\r\n") {
            return Err("the server closed the connection or sent a broken reply".to_owned());
        }
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        let number = || {
            text.parse::<i64>()
                .map_err(|_| format!("bad length or integer '{text}'"))
        };
        match line[0] {
            b'+' => Ok(Reply::Status),
            b'-' => Ok(Reply::Error(text)),
            b':' => Ok(Reply::Int(number()?)),
            b'$' => {
                let n = number()?;
                if n < 0 {
                    return Ok(Reply::Null);
                }
                let mut data = vec![0; n as usize + 2];
                self.reader
                    .read_exact(&mut data)
                    .map_err(|e| format!("read: {e}"))?;
                self.last_bulk = data;
                self.last_bulk.truncate(n as usize);
                Ok(Reply::Bulk(n as usize))
            }
            other => Err(format!("unexpected reply type byte {other:#x}")),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        let mut out = Vec::new();
        encode_into(&mut out, args);
        self.send(&out)?;
        self.read_reply()
    }

    /// An `INFO` field's value (`used_memory`, `evicted_keys`).
    fn info_field(&mut self, field: &str) -> Result<u64, String> {
        let text = match self.call(&[b"INFO", b"all"])? {
            Reply::Bulk(_) => String::from_utf8_lossy(&self.last_bulk).into_owned(),
            other => return Err(format!("INFO replied {other:?}")),
        };
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("INFO has no numeric field '{field}'"))
    }
}

fn encode_into(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}
