//! Differential helpers: the same input to `redis-server` and to the server, compared as reply
//! frames or as raw bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::{Frame, RawClient, RealRedis, TestServer};

/// A real `redis-server` and an in-process server started with the same directives.
pub struct Pair {
    pub redis: RealRedis,
    pub server: TestServer,
}

impl Pair {
    /// Both servers with `args` (`["--requirepass", "pw"]`); `None` where redis-server is not
    /// installed.
    pub fn start(args: &[&str]) -> Option<Pair> {
        let redis = RealRedis::start_with(args)?;
        let server = TestServer::with_args(args);
        Some(Pair { redis, server })
    }

    /// A fresh connection to each: (redis, cortado).
    pub fn clients(&self) -> (RawClient, RawClient) {
        (self.redis.raw(), self.server.raw())
    }

    /// Sends the same raw bytes to both on fresh connections: (redis's answer, ours).
    pub fn exchange(&self, bytes: &[u8]) -> (Exchange, Exchange) {
        (
            exchange(self.redis.addr, bytes),
            exchange(self.server.addr, bytes),
        )
    }
}

/// Runs `commands` on both connections and asserts every reply is the same frame, listing
/// every command whose replies differ.
pub fn assert_same_replies(expected: &mut RawClient, actual: &mut RawClient, commands: &[&[&str]]) {
    let mut differing = Vec::new();
    for command in commands {
        let want = expected.call(command);
        let got = actual.call(command);
        if want != got {
            differing.push(format!(
                "{command:?}\n  redis:   {want:?}\n  cortado: {got:?}"
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "replies differ:\n{}",
        differing.join("\n")
    );
}

/// What a connection received for some bytes, and whether the server closed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub received: Vec<u8>,
    pub closed: bool,
}

impl Exchange {
    /// The bytes received, as text for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.received).into_owned()
    }
}

/// Connects to `addr`, sends `bytes` and reads until the server closes the connection or
/// stays silent for a while.
pub fn exchange(addr: SocketAddr, bytes: &[u8]) -> Exchange {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).unwrap();
    // A server may close before reading everything (a protocol error early in the bytes).
    let _ = stream.write_all(bytes);
    read_until_quiet(&mut stream, Duration::from_millis(300))
}

/// Reads from `stream` until it is closed or `quiet` passes without a byte.
pub fn read_until_quiet(stream: &mut TcpStream, quiet: Duration) -> Exchange {
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => {
                return Exchange {
                    received,
                    closed: true,
                }
            }
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Exchange {
                    received,
                    closed: false,
                }
            }
            // A reset after the server closed with unread input: closed.
            Err(_) => {
                return Exchange {
                    received,
                    closed: true,
                }
            }
        }
        assert!(Instant::now() < deadline, "the server kept sending");
    }
}

/// Asserts a frame is an error whose text starts with `prefix`.
pub fn assert_error(frame: &Frame, prefix: &str) {
    match frame {
        Frame::Error(text) if text.starts_with(prefix) => {}
        other => panic!("expected an error starting with {prefix:?}, got {other:?}"),
    }
}
