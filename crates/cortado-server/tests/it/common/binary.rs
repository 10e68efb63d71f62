//! The built `cortado-server` binary, run as a separate process.

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, RawClient};

/// The binary Cargo built for these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_cortado-server");

/// A `cortado-server` process on a free port of 127.0.0.1; killed when dropped.
pub struct ServerProcess {
    pub addr: SocketAddr,
    child: Option<Child>,
}

impl ServerProcess {
    /// Starts the binary with `--port <free> --bind 127.0.0.1` and `args`, and waits until it
    /// accepts connections.
    pub fn start(args: &[&str]) -> Self {
        let mut all = vec!["--bind", "127.0.0.1"];
        all.extend_from_slice(args);
        Self::start_default_bind(&all)
    }

    /// Starts the binary with `--port <free>` and `args` only (its default `bind`), and waits
    /// until it accepts connections on 127.0.0.1. A configuration file among `args` (an
    /// argument not starting with `--` before any that does) goes first, where the binary
    /// expects it.
    pub fn start_default_bind(args: &[&str]) -> Self {
        let port = free_port().to_string();
        let file: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| a.ends_with(".conf"))
            .collect();
        let rest: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| !a.ends_with(".conf"))
            .collect();
        let child = Command::new(BINARY)
            .args(&file)
            .args(["--port", &port])
            .args(&rest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cortado-server");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut server = Self {
            addr,
            child: Some(child),
        };
        server.wait_until_listening();
        server
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("the process")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the process").id()
    }

    fn wait_until_listening(&mut self) {
        let started = Instant::now();
        while TcpStream::connect(self.addr).is_err() {
            if let Ok(Some(status)) = self.child().try_wait() {
                panic!("cortado-server exited at start: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "cortado-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A raw client connected to the process.
    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.addr)
    }

    /// Sends signal `name` (`TERM`, `INT`) to the process.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child().try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What the process wrote to standard output and error (killed if still running).
    pub fn output(mut self) -> Output {
        let mut child = self.child.take().expect("the process");
        let _ = child.kill();
        child.wait_with_output().expect("collect the output")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs the binary with `args` to completion (it is expected to exit by itself, as on a
/// configuration error), for at most ten seconds.
pub fn run_to_exit(args: &[&str]) -> Output {
    let mut child = Command::new(BINARY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cortado-server");
    let started = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return child.wait_with_output().expect("collect the output");
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("cortado-server {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
