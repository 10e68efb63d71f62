//! What the server's tests share: an in-process server on a free port, a raw RESP client, and
//! a real `redis-server` to compare against.

#![allow(dead_code)]

pub mod binary;
pub mod compare;
pub mod resp;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cortado::time::ManualClock;
use cortado_server::config::Config;
use cortado_server::keyspace::TimeSource;
use cortado_server::server::{self, Server};

pub use resp::Frame;

/// A server running in this process on 127.0.0.1, on its own runtime thread; stopped when
/// dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub server: Arc<Server>,
    /// The manual clock, for servers started with one.
    pub clock: Option<ManualClock>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// A server with the default settings and the system clock.
    pub fn start() -> Self {
        Self::with_args(&[])
    }

    /// A server with these directives (`["--maxclients", "2"]`) and the system clock.
    pub fn with_args(args: &[&str]) -> Self {
        Self::build(args, TimeSource::System, None)
    }

    /// A server whose clock stands at a fixed Unix time until [`advance`](Self::advance)d.
    pub fn with_manual_clock(args: &[&str]) -> Self {
        let clock = ManualClock::new();
        clock.set(Duration::from_secs(1_700_000_000));
        Self::build(args, TimeSource::Manual(clock.clone()), Some(clock))
    }

    fn build(args: &[&str], time: TimeSource, clock: Option<ManualClock>) -> Self {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let config = Config::from_args(&args).expect("valid test settings");
        let server = Server::new(config, time).expect("server builds");
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = server.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listeners = server::bind(&[("127.0.0.1".parse().unwrap(), false)], 0)
                    .await
                    .expect("bind a free port");
                tx.send(listeners[0].local_addr().unwrap()).unwrap();
                server::serve(handle, listeners, std::future::pending()).await;
            });
        });
        let addr = rx.recv().expect("server started");
        Self {
            addr,
            server,
            clock,
            thread: Some(thread),
        }
    }

    /// A raw client connected to the server.
    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.addr)
    }

    /// A `redis` crate connection over RESP2.
    pub fn redis(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.addr))
            .unwrap()
            .get_connection()
            .expect("redis connection")
    }

    /// A `redis` crate connection over RESP3.
    pub fn redis3(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/?protocol=resp3", self.addr))
            .unwrap()
            .get_connection()
            .expect("redis connection")
    }

    /// Moves the manual clock forward.
    pub fn advance(&self, by: Duration) {
        self.clock.as_ref().expect("a manual clock").advance(by);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.server.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A client that writes bytes and reads whole reply frames.
pub struct RawClient {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawClient {
    /// Connects to `addr`.
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends a command as a RESP array of bulk strings.
    pub fn send_command(&mut self, args: &[&[u8]]) {
        self.send(&resp::encode_command(args));
    }

    /// Reads one reply frame; `None` if the server closed the connection first.
    pub fn read(&mut self) -> Option<Frame> {
        loop {
            if let Some((frame, used)) = resp::parse(&self.buf) {
                self.buf.drain(..used);
                return Some(frame);
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// Sends a command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> Frame {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_command(&args);
        self.read().expect("a reply")
    }

    /// Whether the server closed the connection (reads return end of stream).
    pub fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0))
    }
}

/// A real `redis-server` on a free port, for differential tests; `None` (after printing a
/// note) where it is not installed.
pub struct RealRedis {
    pub addr: SocketAddr,
    child: Child,
}

impl RealRedis {
    pub fn start() -> Option<Self> {
        Self::start_with(&[])
    }

    /// A real server with these directives added (`["--maxclients", "2"]`).
    pub fn start_with(extra: &[&str]) -> Option<Self> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("note: redis-server is not installed; the differential test is skipped");
            return None;
        }
        let port = free_port();
        let mut child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let started = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // A server of another process may hold the port: ours then fails to bind and exits.
        assert!(
            matches!(child.try_wait(), Ok(None)),
            "redis-server exited: port {port} taken by another process"
        );
        Some(Self { addr, child })
    }

    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.addr)
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `program` runs (started with `arg`, such as `--version`): tests that drive an
/// installed tool skip, with a note, where it is missing.
pub fn program_available(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A port nobody listens on right now.
///
/// The port is free only until a server takes it, and the OS may hand the same free port to
/// two tests running at once, whose two servers would then share one listener (a differential
/// test once talked to another test's `redis-server`). So no port is handed out twice in this
/// process.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}
