//! The built binary: its command line and configuration file, start-up errors, stopping on
//! signals and `SHUTDOWN`, and its log.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::common::binary::{run_to_exit, ServerProcess};
use crate::common::compare::read_until_quiet;
use crate::common::{free_port, Frame};

/// A scratch directory for one test's files, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("cortado-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Standard error as text.
fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn config_file_bad_directive_is_one_error_naming_file_line_and_directive() {
    let scratch = Scratch::new("bad-directive");
    let port = free_port();
    let cases = [
        (
            format!("# comment\nport {port}\n\nfrobnicate yes\n"),
            "line 4: 'frobnicate': unknown directive",
        ),
        (
            format!("port {port}\nmaxmemory lots\n"),
            "line 2: 'maxmemory': argument must be a memory value",
        ),
        (
            format!("port {port}\nprotected-mode maybe\n"),
            "line 2: 'protected-mode': argument must be 'yes' or 'no'",
        ),
        (
            format!("port {port}\nrequirepass \"unterminated\n"),
            "line 2: unbalanced quotes",
        ),
        (
            format!("port {port}\ntimeout\n"),
            "line 2: 'timeout': wrong number of arguments",
        ),
    ];
    for (text, expected) in cases {
        let path = scratch.file("bad.conf", &text);
        let output = run_to_exit(&[&path]);
        let err = stderr(&output);
        assert!(!output.status.success(), "{text:?} started");
        assert_eq!(
            err.trim_end(),
            format!("cortado-server: {path}, {expected}"),
            "{text:?}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    }
    let output = run_to_exit(&["--port", "70000"]);
    assert!(!output.status.success());
    assert_eq!(
        stderr(&output).trim_end(),
        "cortado-server: command line: --port: argument must be between 0 and 65535 inclusive"
    );
    let output = run_to_exit(&["/nonexistent/cortado.conf"]);
    assert!(!output.status.success());
    assert!(stderr(&output).starts_with("cortado-server: cannot read /nonexistent/cortado.conf"));
}

#[test]
fn port_in_use_is_a_one_line_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = run_to_exit(&["--port", &port, "--bind", "127.0.0.1"]);
    let err = stderr(&output);
    assert!(!output.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "cortado-server: cannot listen on 127.0.0.1:{port}: "
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn config_file_and_flags_set_the_directives() {
    let scratch = Scratch::new("config-file");
    let path = scratch.file(
        "cortado.conf",
        "# a comment\nmaxmemory 2mb\ntimeout 30\nrequirepass \"pass word\"\nsave \"\"\n",
    );
    let server = ServerProcess::start(&[&path, "--timeout", "40"]);
    let mut client = server.raw();
    assert_eq!(
        client.call(&["PING"]).text(),
        "NOAUTH Authentication required."
    );
    assert_eq!(
        client.call(&["AUTH", "pass word"]),
        Frame::Simple("OK".into())
    );
    let Frame::Array(pairs) = client.call(&["CONFIG", "GET", "maxmemory", "timeout", "save"])
    else {
        panic!("CONFIG GET")
    };
    let pairs: Vec<String> = pairs.iter().map(Frame::text).collect();
    assert_eq!(
        pairs,
        ["maxmemory", "2097152", "timeout", "40", "save", ""],
        "the flag overrides the file"
    );
    let info = client.call(&["INFO", "server"]).text();
    let canonical = std::fs::canonicalize(&path).unwrap();
    assert!(
        info.contains(&format!("config_file:{}\r\n", canonical.display())),
        "{info}"
    );
}

#[test]
fn sigterm_and_sigint_stop_cleanly_writing_replies_in_flight() {
    for signal in ["TERM", "INT"] {
        let mut server = ServerProcess::start(&[]);
        let mut client = TcpStream::connect(server.addr).unwrap();
        // The server is asleep in DEBUG SLEEP when the signal comes (it reads the request
        // within microseconds; the signal comes 300 ms later, into a 2 s sleep): the replies
        // to it and to the command after it are still written, then the connection closed.
        client
            .write_all(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n2\r\nECHO done\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        server.signal(signal);
        let answer = read_until_quiet(&mut client, Duration::from_secs(3));
        assert_eq!(answer.text(), "+OK\r\n$4\r\ndone\r\n", "SIG{signal}");
        assert!(answer.closed, "SIG{signal}: the connection stayed open");
        let status = server
            .wait_exit(Duration::from_secs(10))
            .expect("the server exits");
        assert!(status.success(), "SIG{signal}: {status}");
        assert!(
            TcpStream::connect(server.addr).is_err(),
            "still listening after SIG{signal}"
        );
        let output = server.output();
        let log = String::from_utf8_lossy(&output.stdout);
        assert!(
            log.contains(&format!("received SIG{signal}")),
            "SIG{signal}: {log}"
        );
    }
}

#[test]
fn shutdown_command_stops_the_server_after_earlier_replies() {
    for variant in [
        &["SHUTDOWN"][..],
        &["SHUTDOWN", "NOSAVE"],
        &["SHUTDOWN", "SAVE"],
    ] {
        let mut server = ServerProcess::start(&[]);
        let mut other = server.raw();
        let mut client = server.raw();
        assert_eq!(
            client.call(&["SHUTDOWN", "ABORT"]).text(),
            "ERR No shutdown in progress."
        );
        let mut pipeline = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".to_vec();
        let args: Vec<&[u8]> = variant.iter().map(|a| a.as_bytes()).collect();
        pipeline.extend(crate::common::resp::encode_command(&args));
        pipeline.extend_from_slice(b"PING\r\n");
        client.send(&pipeline);
        assert_eq!(client.read(), Some(Frame::Simple("OK".into())));
        // SHUTDOWN has no reply, and nothing after it is run.
        assert_eq!(client.read(), None, "{variant:?}");
        assert!(other.is_closed(), "{variant:?}: another client stayed open");
        let status = server
            .wait_exit(Duration::from_secs(10))
            .expect("the server exits");
        assert!(status.success(), "{variant:?}: {status}");
    }
}

#[test]
fn loglevel_chooses_what_is_logged_as_redis() {
    // `notice` (the default) logs start-up; `warning` does not; `debug` logs more.
    let lines = |args: &[&str]| -> String {
        let server = ServerProcess::start(args);
        let mut client = server.raw();
        client.send(b"*1\r\nx\r\n");
        let _ = client.read();
        std::thread::sleep(Duration::from_millis(100));
        String::from_utf8_lossy(&server.output().stdout).into_owned()
    };
    let notice = lines(&[]);
    assert!(notice.contains("ready to accept connections"), "{notice}");
    assert!(!notice.contains("protocol error"), "{notice}");
    let warning = lines(&["--loglevel", "warning"]);
    assert!(
        !warning.contains("ready to accept connections"),
        "{warning}"
    );
    let verbose = lines(&["--loglevel", "verbose"]);
    assert!(verbose.contains("protocol error"), "{verbose}");
    // Redis 7.0 has no `nothing` level (7.2 added it).
    let output = run_to_exit(&["--loglevel", "nothing"]);
    assert!(!output.status.success());
    // CONFIG SET loglevel takes effect at once.
    let server = ServerProcess::start(&["--loglevel", "warning"]);
    let mut client = server.raw();
    assert_eq!(
        client.call(&["CONFIG", "SET", "loglevel", "verbose"]),
        Frame::Simple("OK".into())
    );
    let mut bad = server.raw();
    bad.send(b"*1\r\nx\r\n");
    let _ = bad.read();
    std::thread::sleep(Duration::from_millis(100));
    let log = String::from_utf8_lossy(&server.output().stdout).into_owned();
    assert!(log.contains("protocol error"), "{log}");
}

#[test]
fn logfile_receives_the_log() {
    let scratch = Scratch::new("logfile");
    let path = scratch.0.join("server.log");
    let server = ServerProcess::start(&["--logfile", path.to_str().unwrap()]);
    let mut client = server.raw();
    assert_eq!(
        client.call(&["DEBUG", "LOG", "hello from the test"]),
        Frame::Simple("OK".into())
    );
    drop(server);
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(log.contains("ready to accept connections"), "{log}");
    assert!(log.contains("DEBUG LOG: hello from the test"), "{log}");
}

#[test]
fn help_and_version_flags_answer_and_exit() {
    let output = run_to_exit(&["--version"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("cortado-server "));
    let output = run_to_exit(&["--help"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("Usage: cortado-server"));
}
