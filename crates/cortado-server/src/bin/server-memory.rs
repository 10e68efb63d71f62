//! `server-memory`: memory discipline under `maxmemory`, for cortado-server and redis-server
//! started by it: many clients writing values of varied sizes with TTLs and reading them back,
//! while the server process's resident set is sampled.
//!
//! ```text
//! cargo build --release -p cortado-server
//! target/release/server-memory [--servers redis,cortado] [--policies allkeys-lru,allkeys-wtinylfu]
//!     [--clients 200] [--seconds 600] [--maxmemory 256mb] [--keys-per-client 4096]
//!     [--cortado PATH]
//! ```
//!
//! Each cell (server, policy) starts a fresh server with `--save '' --appendonly no`, the
//! `maxmemory` and the policy (a policy Redis lacks is skipped for Redis), and runs the clients
//! for the given time. It prints a table and one `result ...` line per cell, and exits with
//! failure if any cell broke a rule:
//!
//! - the largest resident set (`VmRSS` of `/proc/<pid>/status`, every 100 ms) stays within
//!   `maxmemory` x 1.1 + 32 MB;
//! - no error reply but `-OOM`, and `-OOM` only under `noeviction`;
//! - no client reads a wrong value.
//!
//! # Design
//!
//! - **Values a reader can check exactly.** Each client owns its keys (`mem:{client}:{n}`) and
//!   talks over one connection, one command at a time, so it knows the last value it wrote to
//!   each: a `GET` must return either nothing (evicted or expired) or exactly that value. A value
//!   is a header naming the key and a version, then filler bytes drawn from a generator seeded by
//!   both, so a value of another key, an older version or a damaged copy all show.
//! - **The load.** Half `SET`s, half `GET`s of keys drawn uniformly from the client's own, so
//!   the working set (clients x keys x the mean value, about 2.4 KB) is far above `maxmemory`
//!   and eviction runs the whole time. Sizes are log-uniform from 16 bytes to 16 KiB, which
//!   stresses allocator size classes and fragmentation as real caches do. Three `SET`s in four
//!   carry `EX` of 1 s to 10 min (log-uniform), so keys also expire throughout; the rest have no
//!   TTL.
//! - **A guard for the machine.** A server whose resident set passes four times the bound (at
//!   least 1 GiB) is stopped early and the cell fails: a server that does not evict would
//!   otherwise take all of a shared machine's memory.
//!
//! `tests/it/memory_discipline.rs` runs this binary against cortado-server with 50 clients for a
//! few seconds at 32 MB.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// The policies only Cortado has; Redis's cells skip them.
const CORTADO_ONLY: [&str; 2] = ["allkeys-wtinylfu", "volatile-wtinylfu"];

/// Value sizes: log-uniform between these (16 B to 16 KiB).
const MIN_VALUE: f64 = 16.0;
const MAX_VALUE: f64 = 16384.0;

/// TTLs of the `SET`s that have one: log-uniform between these, in seconds.
const MIN_TTL: f64 = 1.0;
const MAX_TTL: f64 = 600.0;

/// How often the resident set is read.
const RSS_PERIOD: Duration = Duration::from_millis(100);

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
}

struct Options {
    servers: Vec<Kind>,
    policies: Vec<String>,
    clients: usize,
    seconds: u64,
    maxmemory: u64,
    keys_per_client: u32,
    cortado: PathBuf,
}

/// `256mb`, `1gb`, `100kb` or bytes, as Redis reads memory sizes (k/m/g are 1000s, kb/mb/gb
/// 1024s).
fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let units: [(&str, u64); 7] = [
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1_000),
        ("b", 1),
    ];
    for (suffix, scale) in units {
        if let Some(number) = lower.strip_suffix(suffix) {
            return number.parse::<u64>().ok()?.checked_mul(scale);
        }
    }
    lower.parse().ok()
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        servers: vec![Kind::Redis, Kind::Cortado],
        policies: vec!["allkeys-lru".to_owned(), "allkeys-wtinylfu".to_owned()],
        clients: 200,
        seconds: 600,
        maxmemory: 256 * MIB,
        keys_per_client: 4096,
        cortado: std::env::current_exe()
            .map(|exe| exe.with_file_name("cortado-server"))
            .unwrap_or_default(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} takes a value"));
        let positive = |text: String, name: &str| {
            text.replace('_', "")
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name} takes a positive integer"))
        };
        match arg.as_str() {
            "--servers" => {
                o.servers = value()?
                    .split(',')
                    .map(|s| match s {
                        "redis" => Ok(Kind::Redis),
                        "cortado" => Ok(Kind::Cortado),
                        other => Err(format!("unknown server '{other}' (redis, cortado)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--policies" => o.policies = value()?.split(',').map(str::to_owned).collect(),
            "--clients" => o.clients = positive(value()?, "--clients")? as usize,
            "--seconds" => o.seconds = positive(value()?, "--seconds")?,
            "--keys-per-client" => {
                o.keys_per_client = u32::try_from(positive(value()?, "--keys-per-client")?)
                    .map_err(|_| "--keys-per-client is too large".to_owned())?
            }
            "--maxmemory" => {
                let text = value()?;
                o.maxmemory = parse_memory(&text)
                    .filter(|&m| m > 0)
                    .ok_or_else(|| format!("--maxmemory '{text}' is not a memory size (256mb)"))?
            }
            "--cortado" => o.cortado = PathBuf::from(value()?),
            other => {
                return Err(format!(
                    "unknown argument '{other}'; usage: server-memory [--servers redis,cortado] \
                     [--policies P,...] [--clients N] [--seconds N] [--maxmemory SIZE] \
                     [--keys-per-client N] [--cortado PATH]"
                ))
            }
        }
    }
    if o.servers.contains(&Kind::Cortado) && !o.cortado.is_file() {
        return Err(format!(
            "no cortado-server binary at {} (build it, or pass --cortado PATH)",
            o.cortado.display()
        ));
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("server-memory: {e}");
            return ExitCode::from(2);
        }
    };
    if o.servers.contains(&Kind::Redis)
        && Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
    {
        eprintln!("server-memory: redis-server is not installed (apt-get install redis-server)");
        return ExitCode::from(2);
    }
    let bound = o.maxmemory + o.maxmemory / 10 + 32 * MIB;
    println!(
        "server-memory: {} CPUs; {} clients for {} s; maxmemory {} bytes; RSS bound {} bytes ({:.1} MiB)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        o.clients,
        o.seconds,
        o.maxmemory,
        bound,
        bound as f64 / MIB as f64
    );
    println!("\n| server | policy | max RSS MiB | bound MiB | RSS at start MiB | used_memory MiB | evicted_keys | expired_keys | SETs | GETs | hits | OOM | other errors | wrong values | verdict |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut results = Vec::new();
    for &kind in &o.servers {
        for policy in &o.policies {
            if kind == Kind::Redis && CORTADO_ONLY.contains(&policy.as_str()) {
                continue;
            }
            match run_cell(&o, kind, policy, bound) {
                Ok(cell) => results.push(cell),
                Err(e) => {
                    eprintln!("server-memory: {} {policy}: {e}", kind.name());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!();
    for cell in &results {
        println!("{}", cell.result_line(bound));
        for (message, count) in &cell.other_error_kinds {
            println!(
                "  {} {}: {count} x {message}",
                cell.kind.name(),
                cell.policy
            );
        }
        for example in &cell.wrong_examples {
            println!(
                "  {} {}: wrong value: {example}",
                cell.kind.name(),
                cell.policy
            );
        }
    }
    if results.iter().all(|c| c.passed(bound)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What one cell measured.
struct CellResult {
    kind: Kind,
    policy: String,
    max_rss: u64,
    start_rss: u64,
    aborted: bool,
    used_memory: u64,
    evicted: u64,
    expired: u64,
    totals: Totals,
    other_error_kinds: Vec<(String, u64)>,
    wrong_examples: Vec<String>,
}

impl CellResult {
    fn passed(&self, bound: u64) -> bool {
        let oom_allowed = self.policy == "noeviction" || self.totals.oom == 0;
        !self.aborted
            && self.max_rss <= bound
            && oom_allowed
            && self.totals.other_errors == 0
            && self.totals.wrong == 0
    }

    fn result_line(&self, bound: u64) -> String {
        format!(
            "result server={} policy={} max_rss={} bound={} aborted={} oom={} other_errors={} wrong={} sets={} gets={} hits={} pass={}",
            self.kind.name(),
            self.policy,
            self.max_rss,
            bound,
            self.aborted,
            self.totals.oom,
            self.totals.other_errors,
            self.totals.wrong,
            self.totals.sets,
            self.totals.gets,
            self.totals.hits,
            self.passed(bound)
        )
    }
}

/// The clients' counts, added up.
#[derive(Default, Clone, Copy)]
struct Totals {
    sets: u64,
    gets: u64,
    hits: u64,
    oom: u64,
    other_errors: u64,
    wrong: u64,
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.sets += other.sets;
        self.gets += other.gets;
        self.hits += other.hits;
        self.oom += other.oom;
        self.other_errors += other.other_errors;
        self.wrong += other.wrong;
    }
}

/// What the clients share: the stop flag, and the first few unusual replies for the report.
struct Shared {
    stop: AtomicBool,
    other_errors: Mutex<Vec<(String, u64)>>,
    wrong_examples: Mutex<Vec<String>>,
}

impl Shared {
    fn record_error(&self, message: &str) {
        let mut errors = self.other_errors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = errors.iter_mut().find(|(m, _)| m == message) {
            *count += 1;
        } else if errors.len() < 16 {
            errors.push((message.to_owned(), 1));
        }
    }

    fn record_wrong(&self, example: String) {
        let mut examples = self
            .wrong_examples
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if examples.len() < 5 {
            examples.push(example);
        }
    }
}

fn run_cell(o: &Options, kind: Kind, policy: &str, bound: u64) -> Result<CellResult, String> {
    let server = ServerProcess::start(kind, o, policy)?;
    let start_rss = rss(server.pid()).unwrap_or(0);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        other_errors: Mutex::new(Vec::new()),
        wrong_examples: Mutex::new(Vec::new()),
    });
    let clients: Vec<_> = (0..o.clients)
        .map(|id| {
            let shared = shared.clone();
            let (addr, keys) = (server.addr, o.keys_per_client);
            std::thread::Builder::new()
                .name(format!("client-{id}"))
                .stack_size(256 * 1024)
                .spawn(move || run_client(addr, id as u64, keys, &shared))
                .map_err(|e| format!("cannot start client thread {id}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    // The guard: four times the bound, and never less than 1 GiB.
    let abort_at = (4 * bound).max(1 << 30);
    let deadline = Instant::now() + Duration::from_secs(o.seconds);
    let (mut max_rss, mut aborted) = (start_rss, false);
    while Instant::now() < deadline {
        std::thread::sleep(RSS_PERIOD);
        let Some(now) = rss(server.pid()) else {
            shared.stop.store(true, Ordering::Relaxed);
            return Err(format!("{} exited during the run", kind.name()));
        };
        max_rss = max_rss.max(now);
        if now > abort_at {
            aborted = true;
            break;
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    let mut totals = Totals::default();
    for client in clients {
        match client.join() {
            Ok(t) => totals.add(&t),
            Err(_) => return Err("a client thread panicked".to_owned()),
        }
    }
    if let Some(now) = rss(server.pid()) {
        max_rss = max_rss.max(now);
    }
    let mut control = Client::connect(server.addr)?;
    let info = control.info()?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let cell = CellResult {
        kind,
        policy: policy.to_owned(),
        max_rss,
        start_rss,
        aborted,
        used_memory: field("used_memory"),
        evicted: field("evicted_keys"),
        expired: field("expired_keys"),
        totals,
        other_error_kinds: std::mem::take(
            &mut *shared
                .other_errors
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ),
        wrong_examples: std::mem::take(
            &mut *shared
                .wrong_examples
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ),
    };
    let mib = |b: u64| b as f64 / MIB as f64;
    println!(
        "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        kind.name(),
        policy,
        mib(cell.max_rss),
        mib(bound),
        mib(cell.start_rss),
        mib(cell.used_memory),
        cell.evicted,
        cell.expired,
        totals.sets,
        totals.gets,
        totals.hits,
        totals.oom,
        totals.other_errors,
        totals.wrong,
        if cell.aborted {
            "FAIL (stopped: RSS above the guard)"
        } else if cell.passed(bound) {
            "pass"
        } else {
            "FAIL"
        }
    );
    Ok(cell)
}

/// The resident set of process `pid` in bytes (`VmRSS`), or `None` once it is gone.
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// SplitMix64: a small, fast generator; each client and each value has its own seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-uniform in `[low, high]`.
    fn log_uniform(&mut self, low: f64, high: f64) -> f64 {
        (low.ln() + self.unit() * (high.ln() - low.ln())).exp()
    }
}

/// The value written to `key` at `version`, `len` bytes or its header's length if longer:
/// `key|version|` and filler from a generator seeded by both.
fn make_value(key: &str, version: u32, len: usize) -> Vec<u8> {
    let mut value = format!("{key}|{version}|").into_bytes();
    let mut seed = 0x0C04_7AD0_u64 ^ u64::from(version).rotate_left(32);
    for b in key.bytes() {
        seed = (seed ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    let mut filler = SplitMix(seed);
    while value.len() < len {
        let word = filler.next().to_le_bytes();
        let take = (len - value.len()).min(8);
        value.extend_from_slice(&word[..take]);
    }
    value
}

/// What a client last wrote to one of its keys.
#[derive(Clone, Copy)]
enum Written {
    Never,
    /// The version and length of the last `SET` the server acknowledged.
    Value(u32, u32),
    /// A `SET` whose reply was lost (the connection broke): any value is accepted until the
    /// next acknowledged `SET`.
    Unknown,
}

/// One client: its own keys, one connection, until the stop flag.
fn run_client(addr: SocketAddr, id: u64, keys: u32, shared: &Shared) -> Totals {
    let mut rng = SplitMix(0x5EED ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut written = vec![Written::Never; keys as usize];
    let mut version = 0u32;
    let mut totals = Totals::default();
    let mut client = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let connection = match &mut client {
            Some(c) => c,
            None => match Client::connect(addr) {
                Ok(c) => client.insert(c),
                Err(e) => {
                    totals.other_errors += 1;
                    shared.record_error(&format!("connect: {e}"));
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            },
        };
        let index = (rng.next() % u64::from(keys)) as usize;
        let key = format!("mem:{id}:{index}");
        let outcome = if rng.next() % 2 == 0 {
            version = version.wrapping_add(1) % u32::MAX;
            let len = rng.log_uniform(MIN_VALUE, MAX_VALUE) as usize;
            let value = make_value(&key, version, len);
            let ttl = (rng.next() % 4 != 0)
                .then(|| (rng.log_uniform(MIN_TTL, MAX_TTL) as u64).to_string());
            let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), &value];
            if let Some(ttl) = &ttl {
                args.extend([b"EX".as_slice(), ttl.as_bytes()]);
            }
            totals.sets += 1;
            let reply = connection.call(&args);
            match &reply {
                Ok(Reply::Status(s)) if s == "OK" => {
                    written[index] = Written::Value(version, value.len() as u32)
                }
                Err(_) => written[index] = Written::Unknown,
                _ => {}
            }
            reply
        } else {
            totals.gets += 1;
            let reply = connection.call(&[b"GET", key.as_bytes()]);
            if let Ok(Reply::Bulk(data)) = &reply {
                totals.hits += 1;
                let right = match written[index] {
                    Written::Unknown => true,
                    Written::Never => false,
                    Written::Value(v, len) => *data == make_value(&key, v, len as usize),
                };
                if !right {
                    totals.wrong += 1;
                    let shown = &data[..data.len().min(40)];
                    shared.record_wrong(format!(
                        "GET {key} gave {} bytes starting {:?}",
                        data.len(),
                        String::from_utf8_lossy(shown)
                    ));
                }
            }
            reply
        };
        match outcome {
            Ok(Reply::Error(e)) if e.starts_with("OOM") => totals.oom += 1,
            Ok(Reply::Error(e)) => {
                totals.other_errors += 1;
                shared.record_error(&e);
            }
            Ok(Reply::Status(s)) if s != "OK" => {
                totals.other_errors += 1;
                shared.record_error(&format!("unexpected status {s}"));
            }
            Ok(_) => {}
            Err(e) => {
                totals.other_errors += 1;
                shared.record_error(&e);
                client = None;
            }
        }
    }
    totals
}

/// A server process on a free port of 127.0.0.1, killed when dropped.
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServerProcess {
    fn start(kind: Kind, o: &Options, policy: &str) -> Result<ServerProcess, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port()
            .to_string();
        let mut command = match kind {
            Kind::Redis => Command::new("redis-server"),
            Kind::Cortado => Command::new(&o.cortado),
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
            "--maxmemory",
            &o.maxmemory.to_string(),
            "--maxmemory-policy",
            policy,
        ]);
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
                return Err(format!("{} did not start in 10 s", kind.name()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One reply of the commands used here.
enum Reply {
    Status(String),
    Error(String),
    Int,
    Bulk(Vec<u8>),
    Null,
}

/// A blocking RESP2 client, one command at a time.
struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Result<Client, String> {
        let stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        Ok(Client {
            stream: BufReader::with_capacity(32 * 1024, stream),
        })
    }

    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.stream
            .get_mut()
            .write_all(&out)
            .map_err(|e| format!("write: {e}"))?;
        let mut line = Vec::new();
        self.stream
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("read: {e}"))?;
        if line.len() < 3 || !line.ends_with(b"\r\n") {
            return Err("connection closed by the server".to_owned());
        }
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        match line[0] {
            b'+' => Ok(Reply::Status(text)),
            b'-' => Ok(Reply::Error(text)),
            b':' => Ok(Reply::Int),
            b'$' => {
                let n: i64 = text
                    .parse()
                    .map_err(|_| format!("bad bulk length '{text}'"))?;
                if n < 0 {
                    return Ok(Reply::Null);
                }
                let mut data = vec![0; n as usize + 2];
                self.stream
                    .read_exact(&mut data)
                    .map_err(|e| format!("read: {e}"))?;
                data.truncate(n as usize);
                Ok(Reply::Bulk(data))
            }
            other => Err(format!("unexpected reply type byte {other:#x}")),
        }
    }

    /// `INFO all` as text.
    fn info(&mut self) -> Result<String, String> {
        match self.call(&[b"INFO", b"all"])? {
            Reply::Bulk(data) => Ok(String::from_utf8_lossy(&data).into_owned()),
            _ => Err("INFO did not reply with a bulk string".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_value_differs_by_key_version_and_is_exact_length() {
        let a = make_value("mem:1:2", 7, 100);
        assert_eq!(a.len(), 100);
        assert!(a.starts_with(b"mem:1:2|7|"));
        assert_eq!(a, make_value("mem:1:2", 7, 100));
        assert_ne!(a[10..], make_value("mem:1:3", 7, 100)[10..]);
        assert_ne!(a[10..], make_value("mem:1:2", 8, 100)[10..]);
        // A header longer than the length asked for is kept whole.
        assert_eq!(make_value("mem:1:2", 7, 3), b"mem:1:2|7|");
    }

    #[test]
    fn parse_memory_units_as_redis_reads_them() {
        assert_eq!(parse_memory("256mb"), Some(256 << 20));
        assert_eq!(parse_memory("1GB"), Some(1 << 30));
        assert_eq!(parse_memory("5k"), Some(5000));
        assert_eq!(parse_memory("123"), Some(123));
        assert_eq!(parse_memory("lots"), None);
    }
}
