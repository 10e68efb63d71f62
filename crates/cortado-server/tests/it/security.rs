//! Security: `requirepass`, protected mode (decided and tried for real from a non-loopback
//! address where the machine has one), the default bind, and `rename-command`.

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use cortado_server::config::Config;
use cortado_server::server::refused_by_protected_mode;

use crate::common::binary::ServerProcess;
use crate::common::compare::{assert_same_replies, exchange, Pair};
use crate::common::{Frame, RealRedis};

#[test]
fn requirepass_gates_commands_as_redis() {
    let Some(pair) = Pair::start(&["--requirepass", "secret"]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["PING"],
            &["GET", "k"],
            &["CLIENT", "ID"],
            &["SELECT", "1"],
            &["HELLO", "2"],
            &["HELLO", "3"],
            &["HELLO", "3", "AUTH", "default", "wrong"],
            &["HELLO", "3", "AUTH", "nobody", "secret"],
            &["AUTH", "wrong"],
            &["AUTH", "default", "wrong"],
            &["AUTH", "nobody", "secret"],
            &["AUTH", "a", "b", "c"],
            &["FOO"],
            &["GET"],
            &["AUTH", "secret"],
            &["PING"],
            &["AUTH", "default", "secret"],
            &["SET", "k", "v"],
            &["GET", "k"],
            // RESET forgets the authentication.
            &["RESET"],
            &["GET", "k"],
            &["AUTH", "default", "secret"],
            &["GET", "k"],
            &["QUIT"],
        ],
    );
    // HELLO with AUTH authenticates and switches protocol in one step (its reply holds the
    // client id, so only its shape is compared).
    let (mut redis, mut ours) = pair.clients();
    for client in [&mut redis, &mut ours] {
        let Frame::Map(fields) = client.call(&["HELLO", "3", "AUTH", "default", "secret"]) else {
            panic!("HELLO 3 AUTH")
        };
        let keys: Vec<String> = fields.iter().map(|(k, _)| k.text()).collect();
        assert_eq!(
            keys,
            ["server", "version", "proto", "id", "mode", "role", "modules"]
        );
        assert_eq!(client.call(&["GET", "k"]), Frame::bulk("v"));
    }
}

#[test]
fn requirepass_set_at_run_time_applies_to_new_clients() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["AUTH", "x"],
            &["CONFIG", "SET", "requirepass", "pw"],
            // The connection that set it stays authenticated.
            &["PING"],
        ],
    );
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["PING"],
            &["AUTH", "pw"],
            &["PING"],
            &["CONFIG", "SET", "requirepass", ""],
            &["AUTH", "pw"],
        ],
    );
}

#[test]
fn rename_command_renames_and_disables_as_redis() {
    let Some(pair) = Pair::start(&[
        "--rename-command",
        "GET",
        "FETCH",
        "--rename-command",
        "FLUSHALL",
        "",
        "--rename-command",
        "CONFIG",
        "CFG",
    ]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    assert_same_replies(
        &mut redis,
        &mut ours,
        &[
            &["SET", "k", "v"],
            &["GET", "k"],
            &["FETCH", "k"],
            &["fetch", "k"],
            &["FETCH"],
            &["FLUSHALL"],
            &["CONFIG", "GET", "timeout"],
            &["CFG", "GET", "timeout"],
            &["CFG", "FOO"],
            &["COMMAND", "INFO", "get"],
            &["COMMAND", "GETKEYS", "FETCH", "k"],
            &["COMMAND", "GETKEYS", "GET", "k"],
        ],
    );
}

#[test]
fn rename_of_unknown_command_stops_the_start() {
    let output = crate::common::binary::run_to_exit(&["--rename-command", "NOSUCH", "X"]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("NOSUCH") || err.contains("nosuch"), "{err}");
}

#[test]
fn protected_mode_refuses_only_non_loopback_clients_without_a_password() {
    let mut config = Config::default();
    let outside: IpAddr = "192.0.2.7".parse().unwrap();
    let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
    let settings = config.settings();
    assert!(refused_by_protected_mode(&settings, outside));
    assert!(refused_by_protected_mode(
        &settings,
        "2001:db8::1".parse().unwrap()
    ));
    for local in ["127.0.0.1", "127.1.2.3", "::1"] {
        assert!(!refused_by_protected_mode(
            &settings,
            local.parse().unwrap()
        ));
    }
    assert!(!refused_by_protected_mode(&settings, mapped));
    config
        .set_all(&[(b"requirepass".as_slice(), b"pw".as_slice())], true)
        .unwrap();
    assert!(!refused_by_protected_mode(&config.settings(), outside));
    config
        .set_all(
            &[
                (b"requirepass".as_slice(), b"".as_slice()),
                (b"protected-mode".as_slice(), b"no".as_slice()),
            ],
            true,
        )
        .unwrap();
    assert!(!refused_by_protected_mode(&config.settings(), outside));
}

/// An address of this machine that is not loopback (the one it would reach the outside
/// from), if it has one.
fn non_loopback_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    // Connecting a UDP socket sends nothing; it only picks the route.
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A client from a non-loopback address of this machine gets Redis's DENIED text, byte for
/// byte, while no password is set; with a password, or protected mode off, it is served.
#[test]
fn protected_mode_refuses_a_real_non_loopback_client_as_redis() {
    let Some(ip) = non_loopback_address() else {
        eprintln!("note: no non-loopback address; the protected-mode connection test is skipped");
        return;
    };
    let bind = format!("127.0.0.1 {ip}");
    let Some(redis) = RealRedis::start_with(&["--bind", &bind, "--protected-mode", "yes"]) else {
        return;
    };
    let server = ServerProcess::start(&["--bind", &bind]);
    let outside = |addr: SocketAddr| SocketAddr::new(ip, addr.port());
    let want = exchange(outside(redis.addr), b"PING\r\n");
    let got = exchange(outside(server.addr), b"PING\r\n");
    assert!(want
        .text()
        .starts_with("-DENIED Redis is running in protected mode"));
    assert_eq!(got, want);
    assert!(got.closed);
    // Loopback clients are served.
    assert_eq!(exchange(server.addr, b"PING\r\n").text(), "+PONG\r\n");
    // A password lifts the refusal.
    let mut admin = server.raw();
    assert_eq!(
        admin.call(&["CONFIG", "SET", "requirepass", "pw"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        exchange(outside(server.addr), b"AUTH pw\r\nPING\r\n").text(),
        "+OK\r\n+PONG\r\n"
    );
    assert_eq!(
        admin.call(&["CONFIG", "SET", "requirepass", "", "protected-mode", "no"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        exchange(outside(server.addr), b"PING\r\n").text(),
        "+PONG\r\n"
    );
}

/// With no `bind` given, the server listens on 127.0.0.1 and ::1 only.
#[test]
fn default_bind_is_loopback_only() {
    let settings = Config::default().settings();
    assert_eq!(
        settings.bind,
        vec![
            ("127.0.0.1".parse().unwrap(), false),
            ("::1".parse().unwrap(), true)
        ]
    );
    let server = ServerProcess::start_default_bind(&[]);
    let port = server.addr.port();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
    if TcpStream::connect_timeout(
        &SocketAddr::new("::1".parse().unwrap(), port),
        Duration::from_secs(1),
    )
    .is_err()
    {
        eprintln!("note: ::1 is not reachable here (no IPv6 loopback?)");
    }
    if let Some(ip) = non_loopback_address() {
        assert!(
            TcpStream::connect_timeout(&SocketAddr::new(ip, port), Duration::from_secs(1)).is_err(),
            "listening on {ip}"
        );
    }
}
