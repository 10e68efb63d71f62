//! The server: what every connection shares, the listeners, and the background work.
//!
//! [`Server::new`] builds the shared state from a [`Config`]; [`bind`] opens the listeners the
//! `bind` and `port` settings name; [`serve`] accepts connections until shutdown (`SHUTDOWN`,
//! or the future the caller passes, such as SIGTERM), then closes the listeners and lets every
//! connection write the replies it has before it closes.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::client::{flag, Client, Clients};
use crate::cmd::{Args, Table};
use crate::config::{Config, ConfigError, Settings};
use crate::keyspace::access::Shards;
use crate::keyspace::{Keyspace, TimeSource};
use crate::protocol::Reply;
use crate::stats::{Counter, Stats};

/// The text of Redis's refusal of a non-loopback client in protected mode.
const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// The version the server reports to clients, which pick features by it.
pub const REDIS_VERSION: &str = "7.0.15";

/// What every connection shares.
pub struct Server {
    /// The databases.
    pub keyspace: Keyspace,
    /// The settings as `CONFIG` reads and writes them.
    pub config: Mutex<Config>,
    settings: RwLock<Arc<Settings>>,
    /// Bumped at every settings change, so connections know to take the new ones.
    settings_version: AtomicU64,
    /// Every command.
    pub commands: Table,
    /// The counters of `INFO`.
    pub stats: Stats,
    /// Connected clients.
    pub clients: Clients,
    /// The slow log.
    pub slowlog: SlowLog,
    /// Clients in `MONITOR` mode.
    pub monitors: Monitors,
    /// The Lua engine and its cached scripts.
    pub scripts: crate::lua::Scripts,
    /// Channels and patterns and their subscribers.
    pub pubsub: crate::pubsub::PubSub,
    shutdown: watch::Sender<bool>,
    /// Set once the server is asked to stop; connections read it when woken.
    stopping: AtomicBool,
    /// When the server started.
    pub started: Instant,
    /// Unix time of the start, in seconds (`LASTSAVE` reports it: nothing is ever saved).
    pub started_unix: u64,
    /// 40 hex characters naming this run (`INFO server`'s `run_id`).
    pub run_id: String,
    /// The port actually listened on (the `port` setting, or the one chosen for port 0).
    pub port: AtomicUsize,
    /// Keys removed by active expiry since the start.
    pub active_expired: AtomicU64,
    /// Whether active expiry runs (`DEBUG SET-ACTIVE-EXPIRE`).
    pub active_expire: AtomicBool,
    /// `used_memory` when the server was built (`INFO`'s `used_memory_startup`).
    pub startup_memory: u64,
    /// The keyspace's counts ([`keyspace_counts`](Self::keyspace_counts)) at the last
    /// `CONFIG RESETSTAT`, which `INFO` subtracts (the keyspace counts them itself).
    pub keyspace_baseline: Mutex<[u64; 5]>,
}

impl Server {
    /// The shared state for `config`, with time from `time`.
    ///
    /// The keyspace's shard count is chosen from the CPU count unless the environment sets
    /// `CORTADO_KEYSPACE_SHARDS` (a power of two from 1 to 1024), which exists to measure the
    /// alternatives (`docs/decisions/0200-server-concurrency.md`); a bad value is an error
    /// naming it.
    pub fn new(config: Config, time: TimeSource) -> Result<Arc<Self>, ConfigError> {
        let settings = config.settings();
        crate::config::set_log_level(&settings.loglevel);
        let commands = Table::new(&config.renames).map_err(ConfigError)?;
        let stats = Stats::new(commands.len());
        let (shutdown, _) = watch::channel(false);
        let started_unix = time.now_millis() / 1000;
        let run_id = {
            use std::hash::{BuildHasher, Hasher};
            let mut id = String::new();
            while id.len() < 40 {
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u64(started_unix);
                id.push_str(&format!("{:016x}", h.finish()));
            }
            id.truncate(40);
            id
        };
        let pubsub = crate::pubsub::PubSub::default();
        pubsub.configure(settings.output_limit_pubsub.hard);
        let scripts = crate::lua::Scripts::default();
        scripts.busy.set_threshold_ms(settings.busy_reply_threshold);
        let keyspace = match keyspace_shards_from_env()? {
            Some(shards) => Keyspace::with_shards(settings.databases, time, shards),
            None => Keyspace::new(settings.databases, time),
        };
        keyspace.set_eviction(
            crate::keyspace::Eviction::from_settings(&settings),
            crate::memory::used_memory(),
        );
        keyspace
            .notifications()
            .configure(&settings.notify_keyspace_events);
        Ok(Arc::new(Self {
            keyspace,
            port: AtomicUsize::new(settings.port as usize),
            slowlog: SlowLog::new(settings.slowlog_slower_than, settings.slowlog_max_len),
            settings: RwLock::new(Arc::new(settings)),
            settings_version: AtomicU64::new(0),
            config: Mutex::new(config),
            commands,
            stats,
            clients: Clients::default(),
            monitors: Monitors::default(),
            scripts,
            pubsub,
            shutdown,
            stopping: AtomicBool::new(false),
            started: Instant::now(),
            started_unix,
            run_id,
            active_expired: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            startup_memory: crate::memory::used_memory(),
            keyspace_baseline: Mutex::new([0; 5]),
        }))
    }

    /// The current settings.
    pub fn settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The settings' version: a connection holding settings of an older one should take the
    /// current ones.
    #[inline]
    pub fn settings_version(&self) -> u64 {
        self.settings_version.load(Ordering::Acquire)
    }

    /// Derives the settings again after `config` changed. The caches are rebuilt for new
    /// `maxmemory` bounds at once, or, inside a transaction (`shards` held: see [`Shards`]),
    /// by `EXEC` once it releases the shards ([`Server::apply_eviction`]).
    pub fn publish_settings(&self, config: &Config, shards: &Shards<'_>) {
        let settings = config.settings();
        crate::config::set_log_level(&settings.loglevel);
        self.slowlog
            .configure(settings.slowlog_slower_than, settings.slowlog_max_len);
        self.pubsub.configure(settings.output_limit_pubsub.hard);
        self.scripts
            .busy
            .set_threshold_ms(settings.busy_reply_threshold);
        self.stats.latencies.set_enabled(settings.latency_tracking);
        self.keyspace
            .notifications()
            .configure(&settings.notify_keyspace_events);
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(settings);
        self.settings_version.fetch_add(1, Ordering::AcqRel);
        if !shards.is_held() {
            self.apply_eviction();
        }
    }

    /// Bounds the keyspace's caches as the current settings ask (see
    /// [`Keyspace::set_eviction`]); locks every shard if the bounds changed.
    pub fn apply_eviction(&self) {
        let eviction = crate::keyspace::Eviction::from_settings(&self.settings());
        self.keyspace
            .set_eviction(eviction, crate::memory::used_memory());
    }

    /// `CONFIG RESETSTAT`: the counters of `INFO stats`, `commandstats` and `errorstats`
    /// start again from zero (the slow log stays, as in Redis).
    /// `shards` are the calling command's (see [`Shards`]).
    pub fn reset_stats(&self, shards: &Shards<'_>) {
        self.stats.reset();
        *self
            .keyspace_baseline
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = keyspace_raw_counts(shards);
    }

    /// The keyspace's hits, misses, expired and evicted keys, and expired hash fields, since
    /// the last `CONFIG RESETSTAT`; `shards` are the calling command's (see [`Shards`]).
    pub fn keyspace_counts(&self, shards: &Shards<'_>) -> [u64; 5] {
        let raw = keyspace_raw_counts(shards);
        let base = *self
            .keyspace_baseline
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        [0, 1, 2, 3, 4].map(|i| raw[i].saturating_sub(base[i]))
    }

    /// Asks the server to stop: the listeners close, and every connection writes what it has
    /// and closes.
    pub fn shutdown(&self) {
        if !self.stopping.swap(true, Ordering::SeqCst) {
            // A running script would never end on its own: it is stopped, whatever it wrote.
            self.scripts.busy.abort();
            self.shutdown.send_replace(true);
            self.clients.wake_all();
        }
    }

    /// Whether the server is stopping.
    #[inline]
    pub fn is_shutting_down(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Resolves once the server is asked to stop.
    pub async fn shutting_down(&self) {
        let mut rx = self.shutdown.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

/// Opens a listener on every address of `bind` at `port` (0: any free port, the same for all),
/// with Redis's listen backlog of 511. See [`bind_with_backlog`].
pub async fn bind(bind: &[(IpAddr, bool)], port: u16) -> io::Result<Vec<TcpListener>> {
    bind_with_backlog(bind, port, 511)
}

/// Opens a listener on every address of `bind` at `port` (0: any free port, the same for all),
/// as Redis does: `SO_REUSEADDR`, IPv6 addresses only for IPv6 (so `* ::*` binds both), and a
/// queue of `backlog` connections. An address marked optional (`-::1`) that cannot be bound
/// is skipped; any other failure is an error naming the address.
pub fn bind_with_backlog(
    bind: &[(IpAddr, bool)],
    port: u16,
    backlog: u32,
) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    let mut port = port;
    for &(ip, optional) in bind {
        let addr = SocketAddr::new(ip, port);
        match listen(addr, backlog) {
            Ok(listener) => {
                port = listener.local_addr()?.port();
                listeners.push(listener);
            }
            Err(_) if optional => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot listen on {addr}: {e}"),
                ))
            }
        }
    }
    if listeners.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "no address of 'bind' could be listened on",
        ));
    }
    Ok(listeners)
}

fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket.into())
}

/// Accepts connections on `listeners` until the server is asked to stop or `stop` resolves,
/// then stops accepting and waits (up to a few seconds) for open connections to write what
/// they have and close.
pub async fn serve(
    server: Arc<Server>,
    listeners: Vec<TcpListener>,
    stop: impl std::future::Future<Output = ()> + Send,
) {
    if let Some(first) = listeners.first() {
        if let Ok(addr) = first.local_addr() {
            server.port.store(addr.port() as usize, Ordering::Relaxed);
        }
    }
    let cron = start_cron(server.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for listener in listeners {
        let server = server.clone();
        tasks.spawn(accept_loop(server, listener));
    }
    tokio::select! {
        () = server.shutting_down() => {}
        () = stop => server.shutdown(),
    }
    info!("shutting down: closing listeners");
    tasks.shutdown().await;
    // Connections see the shutdown too and close once their replies are written.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.clients.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cron.stop();
    info!("bye");
}

async fn accept_loop(server: Arc<Server>, listener: TcpListener) {
    let laddr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => return warn!("listener has no address: {e}"),
    };
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(pair) => pair,
            Err(e) => {
                // Out of descriptors and the like: wait rather than spin.
                warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // An IPv4 client of an IPv6 socket is shown and judged by its IPv4 address.
        let addr = SocketAddr::new(addr.ip().to_canonical(), addr.port());
        let settings = server.settings();
        let _ = stream.set_nodelay(true);
        if settings.tcp_keepalive > 0 {
            set_keepalive(&stream, settings.tcp_keepalive);
        }
        #[cfg(unix)]
        let fd = {
            use std::os::fd::AsRawFd;
            i64::from(stream.as_raw_fd())
        };
        #[cfg(not(unix))]
        let fd = -1;
        let Some(info) = server
            .clients
            .register(addr, laddr, fd, settings.maxclients)
        else {
            server.stats.add(Counter::RejectedConnections, 1);
            tokio::spawn(refuse(stream, "-ERR max number of clients reached\r\n"));
            continue;
        };
        server.stats.add(Counter::Connections, 1);
        if refused_by_protected_mode(&settings, addr.ip()) {
            server.clients.unregister(info.id);
            server.stats.add(Counter::RejectedConnections, 1);
            tokio::spawn(refuse(stream, DENIED));
            continue;
        }
        let client = Client::new(info, settings.requirepass.is_none());
        let server = server.clone();
        tokio::spawn(async move {
            let id = client.id;
            crate::connection::run(&server, stream, client).await;
            server.monitors.remove(id);
            server.clients.unregister(id);
        });
    }
}

/// Whether protected mode refuses a client from `peer`: while it is on and no password is
/// set, only loopback clients are served (Redis's `connIsLocal`: `127.*` and `::1`).
pub fn refused_by_protected_mode(settings: &Settings, peer: IpAddr) -> bool {
    settings.protected_mode && settings.requirepass.is_none() && !peer.to_canonical().is_loopback()
}

/// Turns on TCP keepalive as Redis's `anetKeepAlive`: probes after `seconds` idle, every
/// third of that, three of them.
fn set_keepalive(stream: &tokio::net::TcpStream, seconds: u64) {
    let idle = Duration::from_secs(seconds);
    let keepalive = socket2::TcpKeepalive::new().with_time(idle);
    #[cfg(any(target_os = "linux", target_os = "macos", target_os = "freebsd"))]
    let keepalive = keepalive
        .with_interval(Duration::from_secs((seconds / 3).max(1)))
        .with_retries(3);
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
}

async fn refuse(mut stream: tokio::net::TcpStream, message: &'static str) {
    use tokio::io::AsyncWriteExt;
    let _ = stream.write_all(message.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The background thread: active expiry, many times a second, and the rates' samples.
struct Cron {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Cron {
    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often active expiry looks for due keys: the timer wheel's finest buckets span 16.8 ms,
/// so a key is removed within about two of them of its deadline.
const EXPIRE_PERIOD: Duration = Duration::from_millis(10);

/// How often the `instantaneous_*` rates are sampled, as Redis's `serverCron` samples them.
const RATE_PERIOD: Duration = Duration::from_millis(100);

fn start_cron(server: Arc<Server>) -> Cron {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("cortado-cron".into())
        .spawn(move || {
            let mut sampled = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                crate::keyspace::tick_coarse_clock();
                if server.active_expire.load(Ordering::Relaxed) {
                    let removed = server.keyspace.expire_cycle();
                    server.active_expired.fetch_add(removed, Ordering::Relaxed);
                    if crate::notify::has_pending() {
                        server
                            .keyspace
                            .notifications()
                            .publish(&server.pubsub, None);
                    }
                }
                server.keyspace.fit_memory(crate::memory::used_memory());
                if sampled.elapsed() >= RATE_PERIOD {
                    sampled = Instant::now();
                    server.stats.rates.sample(&server.stats);
                }
                std::thread::sleep(EXPIRE_PERIOD);
            }
        })
        .expect("spawn the expiry thread");
    Cron {
        stop,
        thread: Some(thread),
    }
}

/// One entry of the slow log.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    /// Its id, increasing.
    pub id: u64,
    /// Unix time in seconds.
    pub time: u64,
    /// Microseconds the command took.
    pub usec: u64,
    /// The arguments, at most 32, each at most 128 bytes, as Redis trims them.
    pub args: Vec<Vec<u8>>,
    /// The client's address.
    pub addr: String,
    /// The client's name.
    pub name: String,
}

/// Commands slower than `slowlog-log-slower-than`, newest first, at most `slowlog-max-len`.
#[derive(Debug, Default)]
pub struct SlowLog {
    entries: Mutex<std::collections::VecDeque<SlowEntry>>,
    next_id: AtomicU64,
    /// The threshold in microseconds, cached from the settings (negative: off).
    threshold: std::sync::atomic::AtomicI64,
    max_len: AtomicUsize,
}

impl SlowLog {
    fn new(threshold: i64, max_len: usize) -> Self {
        let log = Self::default();
        log.configure(threshold, max_len);
        log
    }

    /// Takes new settings.
    pub fn configure(&self, threshold: i64, max_len: usize) {
        self.threshold.store(threshold, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.truncate(max_len);
    }

    /// Records the command `args` of `client` if it took at least the threshold.
    #[inline]
    pub fn record(&self, server: &Server, client: &Client, usec: u64, args: Args<'_>) {
        let threshold = self.threshold.load(Ordering::Relaxed);
        if threshold < 0 || usec < threshold as u64 {
            return;
        }
        let max_len = self.max_len.load(Ordering::Relaxed);
        let mut trimmed: Vec<Vec<u8>> = Vec::new();
        let shown = args.len().min(32);
        for i in 0..shown {
            if shown < args.len() && i == shown - 1 {
                trimmed
                    .push(format!("... ({} more arguments)", args.len() - shown + 1).into_bytes());
                break;
            }
            if client.redacted.contains(&i) {
                trimmed.push(b"(redacted)".to_vec());
                continue;
            }
            let arg = args.get(i);
            if arg.len() > 128 {
                let mut cut = arg[..128].to_vec();
                cut.extend_from_slice(format!("... ({} more bytes)", arg.len() - 128).as_bytes());
                trimmed.push(cut);
            } else {
                trimmed.push(arg.to_vec());
            }
        }
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: server.keyspace.time().now_millis() / 1000,
            usec,
            args: trimmed,
            addr: client.info.addr.to_string(),
            name: client.info.name(),
        };
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `n` entries.
    pub fn newest(&self, n: usize) -> Vec<SlowEntry> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.iter().take(n).cloned().collect()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the log.
    pub fn reset(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// Clients in `MONITOR` mode, each sent a line per command run.
///
/// A monitor is fed through its inbox (see [`crate::client`]) and bounded as a subscriber is,
/// by `client-output-buffer-limit pubsub`: a monitor too slow to read what the server runs
/// is closed, where Redis, counting monitors as normal clients, would let its output grow
/// without bound.
#[derive(Debug, Default)]
pub struct Monitors {
    list: Mutex<Vec<Arc<crate::client::ClientInfo>>>,
    /// The list's length, read without the lock on every command.
    count: AtomicUsize,
}

impl Monitors {
    /// Adds `client` as a monitor.
    pub fn add(&self, client: &Arc<crate::client::ClientInfo>) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if !list.iter().any(|m| m.id == client.id) {
            list.push(client.clone());
        }
        self.count.store(list.len(), Ordering::Relaxed);
        client.set_flag(flag::MONITOR, true);
    }

    /// Removes client `id`, if it is a monitor.
    pub fn remove(&self, id: u64) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|m| {
            let keep = m.id != id;
            if !keep {
                m.set_flag(flag::MONITOR, false);
            }
            keep
        });
        self.count.store(list.len(), Ordering::Relaxed);
    }

    /// Sends the command `args` of `client` to every monitor, as Redis formats it:
    /// `+<unix time>.<micros> [<db> <addr>] "arg" "arg" ...`, with redacted arguments shown
    /// as `"(redacted)"`. A monitor's own commands are shown to it too, in `reply`, after
    /// the command's own reply.
    #[inline]
    pub fn feed(&self, server: &Server, client: &Client, args: Args<'_>, reply: &mut Reply) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.feed_slow(server, client, args, reply);
    }

    #[cold]
    fn feed_slow(&self, server: &Server, client: &Client, args: Args<'_>, reply: &mut Reply) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut line = format!(
            "+{}.{:06} [{} {}]",
            now.as_secs(),
            now.subsec_micros(),
            client.db,
            client.info.addr
        )
        .into_bytes();
        for (i, arg) in args.iter().enumerate() {
            line.push(b' ');
            if client.redacted.contains(&i) {
                line.extend_from_slice(b"\"(redacted)\"");
            } else {
                quote_into(&mut line, arg);
            }
        }
        line.extend_from_slice(b"\r\n");
        let line = bytes::Bytes::from(line);
        let hard = server.settings().output_limit_pubsub.hard;
        let list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        for monitor in list.iter() {
            if monitor.id == client.id {
                // A client closing after this reply takes nothing more (Redis's
                // `prepareClientToWrite`), so `QUIT` is not shown to itself.
                if !client.close_after_reply {
                    reply.raw(&line);
                }
            } else {
                monitor.deliver(line.clone(), hard);
            }
        }
    }
}

/// Appends `bytes` quoted as Redis's `sdscatrepr` does: `"..."` with `\n`, `\r`, `\t`, `\a`,
/// `\b`, `\\`, `\"` and `\xHH` for other unprintable bytes.
pub fn quote_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// The shard count `CORTADO_KEYSPACE_SHARDS` asks for, if it is set.
fn keyspace_shards_from_env() -> Result<Option<usize>, ConfigError> {
    const NAME: &str = "CORTADO_KEYSPACE_SHARDS";
    let Some(value) = std::env::var_os(NAME) else {
        return Ok(None);
    };
    let text = value.to_string_lossy();
    match text.parse::<usize>() {
        Ok(n) if n.is_power_of_two() && n <= 1024 => Ok(Some(n)),
        _ => Err(ConfigError(format!(
            "{NAME}={text}: the keyspace's shard count must be a power of two from 1 to 1024"
        ))),
    }
}

/// The keyspace's hits, misses, expired and evicted keys, and expired hash fields, since the
/// start.
fn keyspace_raw_counts(shards: &Shards<'_>) -> [u64; 5] {
    [
        shards.sum(|s| s.hits),
        shards.sum(|s| s.misses),
        shards.cache_stat(|stats| stats.evictions_expired),
        shards.cache_stat(|stats| stats.evictions_size),
        shards.sum(|s| s.expired_fields),
    ]
}
