//! The same commands sent to `redis-server` and to the server, replies compared.
//!
//! This is how the server learns Redis's behaviour: each case is a sequence of commands run on
//! a fresh pair of servers, and every reply must be the same frame. Replies that depend on the
//! clock or on chance are compared by a rule instead ([`Compare`]): remaining times within a
//! tolerance, `KEYS` as a set, `RANDOMKEY` and `SCAN` by their shape, `MEMORY USAGE` as an
//! integer or nil. After every command the keyspace hit and miss counters of `INFO` must have
//! moved the same on both. Skipped, with a note, where `redis-server` is not installed (CI
//! installs it).
//!
//! The cases by family are in `diff_strings.rs`, `diff_keyspace.rs` and `diff_expire.rs`;
//! generated sequences in `diff_generated.rs`.

use crate::common::{Frame, RawClient, RealRedis, TestServer};

/// How two replies to one command are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// The same frame.
    Exact,
    /// Integers that may differ by this much when not negative (a time left or an expiry
    /// time computed from each server's clock); -1 and -2 exactly.
    Close(i64),
    /// Arrays with the same elements in any order (`KEYS`).
    Unordered,
    /// Both nil, or both a bulk string (`RANDOMKEY`).
    NilOrBulk,
    /// Both nil, or both an integer (`MEMORY USAGE`: the sizes are each server's own).
    NilOrInt,
    /// A `SCAN` step: the same error, or both `[cursor, [keys]]`.
    ScanStep,
}

impl Compare {
    /// The rule for a command, by its name (and subcommand).
    pub fn for_command(args: &[&[u8]]) -> Self {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        let sub = args
            .get(1)
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase());
        match name.as_str() {
            "ttl" | "expiretime" => Compare::Close(1),
            "pttl" | "pexpiretime" => Compare::Close(1000),
            "keys" => Compare::Unordered,
            "randomkey" => Compare::NilOrBulk,
            "scan" => Compare::ScanStep,
            "memory" if sub.as_deref() == Some("usage") => Compare::NilOrInt,
            _ => Compare::Exact,
        }
    }

    /// Whether `actual` passes for `expected`.
    pub fn accepts(self, expected: &Frame, actual: &Frame) -> bool {
        match (self, expected, actual) {
            (_, Frame::Error(_), _) | (_, _, Frame::Error(_)) => expected == actual,
            (Compare::Exact, _, _) => expected == actual,
            (Compare::Close(tolerance), Frame::Int(a), Frame::Int(b)) => {
                if *a < 0 || *b < 0 {
                    a == b
                } else {
                    a.abs_diff(*b) <= tolerance as u64
                }
            }
            (Compare::Unordered, Frame::Array(a), Frame::Array(b)) => sorted(a) == sorted(b),
            (Compare::NilOrBulk, Frame::Null, Frame::Null)
            | (Compare::NilOrBulk, Frame::Bulk(_), Frame::Bulk(_))
            | (Compare::NilOrInt, Frame::Null, Frame::Null)
            | (Compare::NilOrInt, Frame::Int(_), Frame::Int(_)) => true,
            (Compare::ScanStep, Frame::Array(a), Frame::Array(b)) => {
                scan_step(a).is_some() && scan_step(b).is_some()
            }
            _ => false,
        }
    }
}

fn sorted(frames: &[Frame]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| match f {
            Frame::Bulk(b) => b.clone(),
            other => format!("{other:?}").into_bytes(),
        })
        .collect();
    out.sort();
    out
}

/// A `SCAN` reply's cursor and keys, if it has that shape.
pub fn scan_step(reply: &[Frame]) -> Option<(u64, Vec<Vec<u8>>)> {
    let [Frame::Bulk(cursor), Frame::Array(keys)] = reply else {
        return None;
    };
    let cursor = std::str::from_utf8(cursor).ok()?.parse().ok()?;
    let keys = keys
        .iter()
        .map(|k| match k {
            Frame::Bulk(b) => Some(b.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((cursor, keys))
}

/// A pair of fresh servers, Redis's and ours, with a connection to each. See the [module
/// docs](self).
pub struct Diff {
    pub expected: RawClient,
    pub actual: RawClient,
    /// The commands sent so far, for failure messages.
    history: Vec<String>,
    /// `keyspace_hits` and `keyspace_misses` of each server when the pair started.
    stats_base: [(i64, i64); 2],
    _redis: RealRedis,
    _server: TestServer,
}

/// A command's arguments as text for messages (bytes outside printable ASCII escaped).
pub fn show(args: &[&[u8]]) -> String {
    args.iter()
        .map(|a| {
            let text: String = a
                .iter()
                .flat_map(|&b| std::ascii::escape_default(b))
                .map(char::from)
                .collect();
            format!("\"{text}\"")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Diff {
    /// A fresh pair with the default settings; `None` (after a note) without `redis-server`.
    pub fn start() -> Option<Self> {
        Self::with_server(TestServer::start())
    }

    /// A fresh pair whose connections speak RESP3 (`HELLO 3`; its reply, which names each
    /// server, is not compared).
    pub fn start_resp3() -> Option<Self> {
        let mut diff = Self::start()?;
        for client in [&mut diff.expected, &mut diff.actual] {
            let hello = client.call(&["HELLO", "3"]);
            assert!(matches!(hello, Frame::Map(_)), "HELLO 3: {hello:?}");
        }
        Some(diff)
    }

    /// A pair whose server is `server`.
    pub fn with_server(server: TestServer) -> Option<Self> {
        let redis = RealRedis::start()?;
        let mut diff = Diff {
            expected: redis.raw(),
            actual: server.raw(),
            history: Vec::new(),
            stats_base: [(0, 0); 2],
            _redis: redis,
            _server: server,
        };
        diff.stats_base = [
            keyspace_stats(&mut diff.expected),
            keyspace_stats(&mut diff.actual),
        ];
        Some(diff)
    }

    /// Sends `args` to both servers and returns their replies, comparing nothing.
    pub fn both(&mut self, args: &[&[u8]]) -> (Frame, Frame) {
        self.history.push(show(args));
        let reply = |client: &mut RawClient| {
            client.send_command(args);
            client.read().expect("a reply")
        };
        let expected = reply(&mut self.expected);
        let actual = reply(&mut self.actual);
        (expected, actual)
    }

    /// Sends `args` to both servers and compares the replies by the command's rule and the
    /// hit and miss counters; panics on a difference, with the commands that led to it.
    pub fn check_raw(&mut self, args: &[&[u8]]) -> (Frame, Frame) {
        self.check_with(args, Compare::for_command(args))
    }

    /// [`check_raw`](Self::check_raw) of text arguments.
    pub fn check(&mut self, args: &[&str]) -> (Frame, Frame) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.check_raw(&args)
    }

    /// [`check_raw`](Self::check_raw) with the rule `compare`.
    pub fn check_with(&mut self, args: &[&[u8]], compare: Compare) -> (Frame, Frame) {
        let (expected, actual) = self.both(args);
        if !compare.accepts(&expected, &actual) {
            self.fail(&format!(
                "replies differ ({compare:?})\n  redis:   {expected:?}\n  cortado: {actual:?}"
            ));
        }
        self.check_stats();
        (expected, actual)
    }

    /// Asserts that the keyspace hit and miss counters moved the same on both servers since
    /// the pair started.
    pub fn check_stats(&mut self) {
        let stats = [
            keyspace_stats(&mut self.expected),
            keyspace_stats(&mut self.actual),
        ];
        let moved = |i: usize| {
            (
                stats[i].0 - self.stats_base[i].0,
                stats[i].1 - self.stats_base[i].1,
            )
        };
        if moved(0) != moved(1) {
            self.fail(&format!(
                "keyspace hits and misses since the start differ: redis {:?}, cortado {:?}",
                moved(0),
                moved(1)
            ));
        }
    }

    /// Runs each command with [`check`](Self::check).
    pub fn run(&mut self, commands: &[&[&str]]) {
        for command in commands {
            self.check(command);
        }
    }

    /// Walks a whole `SCAN` (with these options) on both servers and compares the sets of keys
    /// seen; every step must have `SCAN`'s shape, or both must fail alike.
    pub fn scan_all(&mut self, options: &[&str]) {
        let mut seen: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
        for (side, client) in [&mut self.expected, &mut self.actual]
            .into_iter()
            .enumerate()
        {
            let mut cursor = "0".to_string();
            for step in 0.. {
                assert!(step < 100_000, "SCAN did not end");
                let mut args = vec!["SCAN", cursor.as_str()];
                args.extend_from_slice(options);
                let reply = client.call(&args);
                let Frame::Array(parts) = &reply else {
                    seen[side] = vec![format!("{reply:?}").into_bytes()];
                    break;
                };
                let (next, keys) = scan_step(parts).expect("a SCAN reply");
                seen[side].extend(keys);
                if next == 0 {
                    break;
                }
                cursor = next.to_string();
            }
            seen[side].sort();
            seen[side].dedup();
        }
        self.history.push(format!("(whole SCAN {options:?})"));
        if seen[0] != seen[1] {
            let show_keys = |keys: &[Vec<u8>]| {
                keys.iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect::<Vec<_>>()
            };
            self.fail(&format!(
                "a whole SCAN saw different keys\n  redis:   {:?}\n  cortado: {:?}",
                show_keys(&seen[0]),
                show_keys(&seen[1])
            ));
        }
        self.check_stats();
    }

    fn fail(&self, what: &str) -> ! {
        let start = self.history.len().saturating_sub(40);
        panic!(
            "{what}\nafter these commands (the last {} of {}):\n  {}",
            self.history.len() - start,
            self.history.len(),
            self.history[start..].join("\n  ")
        );
    }
}

/// `keyspace_hits` and `keyspace_misses` from `INFO stats`.
pub fn keyspace_stats(client: &mut RawClient) -> (i64, i64) {
    let info = client.call(&["INFO", "stats"]).text();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO stats has no {name}"))
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

/// Runs `commands` on a fresh pair of servers and asserts that every reply matches (see
/// [`Diff`]).
pub fn same_replies(commands: &[&[&str]]) {
    if let Some(mut diff) = Diff::start() {
        diff.run(commands);
    }
}

/// Runs `commands` on two open connections and asserts the replies match exactly (for tests
/// that set the connections up themselves, as the protocol's do).
#[allow(dead_code)]
pub fn compare(expected: &mut RawClient, actual: &mut RawClient, commands: &[&[&str]]) {
    for client in [&mut *expected, &mut *actual] {
        assert_eq!(client.call(&["FLUSHALL"]), Frame::Simple("OK".into()));
    }
    for command in commands {
        let want = expected.call(command);
        let got = actual.call(command);
        assert_eq!(got, want, "replies differ for {command:?}");
    }
}

#[test]
fn compare_rules_accept_and_refuse() {
    let int = Frame::Int;
    assert!(Compare::Close(1).accepts(&int(100), &int(99)));
    assert!(!Compare::Close(1).accepts(&int(100), &int(98)));
    assert!(!Compare::Close(1000).accepts(&int(-1), &int(0)));
    let keys = |k: &[&str]| Frame::Array(k.iter().map(|s| Frame::bulk(s)).collect());
    assert!(Compare::Unordered.accepts(&keys(&["a", "b"]), &keys(&["b", "a"])));
    assert!(!Compare::Unordered.accepts(&keys(&["a", "b"]), &keys(&["a"])));
    assert!(!Compare::NilOrBulk.accepts(&Frame::Null, &Frame::bulk("k")));
    let step = |c: &str| Frame::Array(vec![Frame::bulk(c), keys(&["x"])]);
    assert!(Compare::ScanStep.accepts(&step("0"), &step("17")));
    assert!(!Compare::ScanStep.accepts(&step("0"), &keys(&["0"])));
    let error = Frame::Error("ERR syntax error".into());
    assert!(!Compare::NilOrInt.accepts(&error, &Frame::Null));
}

/// The commands of the string, keyspace, expiry, hash and set families.
const FAMILY_COMMANDS: &[&str] = &[
    "append",
    "bitcount",
    "copy",
    "decr",
    "decrby",
    "del",
    "exists",
    "expire",
    "expireat",
    "expiretime",
    "get",
    "getbit",
    "getdel",
    "getex",
    "getrange",
    "getset",
    "hdel",
    "hexists",
    "hget",
    "hgetall",
    "hincrby",
    "hincrbyfloat",
    "hkeys",
    "hlen",
    "hmget",
    "hmset",
    "hrandfield",
    "hscan",
    "hset",
    "hsetnx",
    "hstrlen",
    "hvals",
    "incr",
    "incrby",
    "incrbyfloat",
    "keys",
    "lcs",
    "memory",
    "mget",
    "move",
    "mset",
    "msetnx",
    "object",
    "persist",
    "pexpire",
    "pexpireat",
    "pexpiretime",
    "psetex",
    "pttl",
    "randomkey",
    "rename",
    "renamenx",
    "sadd",
    "scan",
    "scard",
    "sdiff",
    "sdiffstore",
    "set",
    "setbit",
    "setex",
    "setnx",
    "setrange",
    "sinter",
    "sintercard",
    "sinterstore",
    "sismember",
    "smembers",
    "smismember",
    "smove",
    "spop",
    "srandmember",
    "srem",
    "sscan",
    "strlen",
    "sunion",
    "sunionstore",
    "touch",
    "ttl",
    "type",
    "unlink",
];

#[test]
fn every_command_with_zero_to_four_arguments_replies_as_redis() {
    // Arity errors where the count is wrong; otherwise whatever "x" as every argument gives
    // (a key named x, a bad number, an unknown option or subcommand).
    let Some(mut d) = Diff::start() else { return };
    for name in FAMILY_COMMANDS {
        for n in 0..=4 {
            let mut args = vec![*name];
            args.extend(std::iter::repeat_n("x", n));
            d.check(&args);
            let upper = name.to_ascii_uppercase();
            args[0] = &upper;
            d.check(&args);
        }
    }
}
