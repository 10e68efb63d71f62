//! Settings as Redis users know them: redis.conf's directive names and value syntax, read from a
//! file and the command line, and read and changed at run time by `CONFIG`.
//!
//! A file holds one directive a line (`maxmemory 1gb`, `# comments`, quoted arguments as in
//! redis.conf), and `--name value ...` on the command line adds directives after the file's, so
//! they win. An unknown or malformed directive is a [`ConfigError`] naming the file, the line
//! and the directive, and the server does not start.
//!
//! # Design
//!
//! One table ([`DIRECTIVES`]) lists every directive with its kind, default and whether
//! `CONFIG SET` may change it; parsing, validation, `CONFIG GET`, `CONFIG SET` and
//! `CONFIG REWRITE` all read it. Values are kept in their canonical text (`maxmemory 1gb` is
//! kept as `1073741824`, as `CONFIG GET` shows it), and [`Settings`], the typed snapshot the
//! server runs on, is derived from them after each change.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::glob::glob_match;
use crate::protocol::request::split_args;

/// The kind of value a directive takes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer in a range.
    Int(i64, i64),
    /// A byte count with an optional unit (`k`, `kb`, `m`, `mb`, `g`, `gb`).
    Memory,
    /// One of these words.
    Enum(&'static [&'static str]),
    /// Any text.
    Text,
    /// Addresses to listen on.
    Bind,
    /// `client-output-buffer-limit`'s class triples.
    OutputLimits,
    /// `save`'s pairs (accepted; Cortado keeps nothing on disk).
    Save,
    /// Event class letters (`notify-keyspace-events`).
    Events,
}

/// One directive.
struct Directive {
    name: &'static str,
    kind: Kind,
    default: &'static str,
    /// Whether `CONFIG SET` may change it.
    mutable: bool,
}

const fn d(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Directive {
    Directive {
        name,
        kind,
        default,
        mutable,
    }
}

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
/// Redis's eight policies, then Cortado's two.
pub const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
    "allkeys-wtinylfu",
    "volatile-wtinylfu",
];
const I32: i64 = i32::MAX as i64;

/// Every directive, by name. See the [module docs](self).
const DIRECTIVES: &[Directive] = &[
    d("activerehashing", Kind::Bool, "yes", true),
    d("appendonly", Kind::Enum(&["no"]), "no", true),
    d("bind", Kind::Bind, "127.0.0.1 -::1", false),
    d("busy-reply-threshold", Kind::Int(0, i64::MAX), "5000", true),
    d(
        "client-output-buffer-limit",
        Kind::OutputLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
    ),
    d(
        "client-query-buffer-limit",
        Kind::Memory,
        "1073741824",
        true,
    ),
    d("daemonize", Kind::Enum(&["no"]), "no", false),
    d("databases", Kind::Int(1, I32), "16", false),
    d("dbfilename", Kind::Text, "dump.rdb", true),
    d("dir", Kind::Text, "./", true),
    d("hz", Kind::Int(1, 500), "10", true),
    d("io-threads", Kind::Int(1, 128), "1", false),
    d("lazyfree-lazy-eviction", Kind::Bool, "no", true),
    d("lazyfree-lazy-expire", Kind::Bool, "no", true),
    d("lazyfree-lazy-server-del", Kind::Bool, "no", true),
    d("lazyfree-lazy-user-del", Kind::Bool, "no", true),
    d("lazyfree-lazy-user-flush", Kind::Bool, "no", true),
    d("lfu-decay-time", Kind::Int(0, I32), "1", true),
    d("lfu-log-factor", Kind::Int(0, I32), "10", true),
    d("logfile", Kind::Text, "", false),
    d("loglevel", Kind::Enum(LOGLEVELS), "notice", true),
    d("lua-time-limit", Kind::Int(0, i64::MAX), "5000", true),
    d("maxclients", Kind::Int(1, u32::MAX as i64), "10000", true),
    d("maxmemory", Kind::Memory, "0", true),
    d("maxmemory-eviction-tenacity", Kind::Int(0, 100), "10", true),
    d("maxmemory-policy", Kind::Enum(POLICIES), "noeviction", true),
    d("maxmemory-samples", Kind::Int(1, 64), "5", true),
    d("notify-keyspace-events", Kind::Events, "", true),
    d("pidfile", Kind::Text, "", false),
    d("port", Kind::Int(0, 65535), "6379", false),
    d("protected-mode", Kind::Bool, "yes", true),
    d("proto-max-bulk-len", Kind::Memory, "536870912", true),
    d("requirepass", Kind::Text, "", true),
    d("save", Kind::Save, "", true),
    d(
        "slowlog-log-slower-than",
        Kind::Int(-1, i64::MAX),
        "10000",
        true,
    ),
    d("slowlog-max-len", Kind::Int(0, i64::MAX), "128", true),
    d(
        "supervised",
        Kind::Enum(&["no", "upstart", "systemd", "auto"]),
        "no",
        false,
    ),
    d("tcp-backlog", Kind::Int(0, I32), "511", false),
    d("tcp-keepalive", Kind::Int(0, I32), "300", true),
    d("timeout", Kind::Int(0, I32), "0", true),
];

/// `loglevel` as the log reads it: how many of `warning`, `notice`, `verbose`, `debug` are
/// on (0: `nothing`).
static LOG_LEVEL: AtomicU8 = AtomicU8::new(2);

/// Makes `loglevel` (one of [`LOGLEVELS`]) the level the log shows, at once.
pub fn set_log_level(loglevel: &str) {
    let level = match loglevel {
        "debug" => 4,
        "verbose" => 3,
        "notice" => 2,
        "warning" => 1,
        _ => 0,
    };
    LOG_LEVEL.store(level, Ordering::Relaxed);
}

/// Whether the log shows events of `level` under the current `loglevel`: Redis's `warning`
/// shows `WARN` and `ERROR`, `notice` adds `INFO`, `verbose` `DEBUG`, `debug` `TRACE`.
pub fn log_enabled(level: &tracing::Level) -> bool {
    let max = match LOG_LEVEL.load(Ordering::Relaxed) {
        0 => return false,
        1 => tracing::Level::WARN,
        2 => tracing::Level::INFO,
        3 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    *level <= max
}

fn directive(name: &str) -> Option<&'static Directive> {
    DIRECTIVES
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &DIRECTIVES[i])
}

/// A setting the server cannot start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Output buffer limits of one client class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes past which the client is closed at once (0: none).
    pub hard: u64,
    /// Bytes past which the client is closed if it stays there `soft_seconds`.
    pub soft: u64,
    /// See `soft`.
    pub soft_seconds: u64,
}

/// The typed settings the server runs on, derived from a [`Config`].
#[derive(Debug, Clone)]
pub struct Settings {
    /// `port`.
    pub port: u16,
    /// `bind`: each address, and whether it may be missing (`-` prefix).
    pub bind: Vec<(IpAddr, bool)>,
    /// `protected-mode`.
    pub protected_mode: bool,
    /// `requirepass`, if set.
    pub requirepass: Option<Vec<u8>>,
    /// `maxclients`.
    pub maxclients: u64,
    /// `timeout` in seconds (0: never).
    pub timeout: u64,
    /// `tcp-keepalive` in seconds (0: off).
    pub tcp_keepalive: u64,
    /// `tcp-backlog`.
    pub tcp_backlog: u32,
    /// `databases`.
    pub databases: usize,
    /// `loglevel`.
    pub loglevel: String,
    /// `logfile` (empty: standard output).
    pub logfile: String,
    /// `hz`.
    pub hz: u64,
    /// `proto-max-bulk-len`.
    pub proto_max_bulk_len: u64,
    /// `client-query-buffer-limit`.
    pub query_buffer_limit: u64,
    /// `client-output-buffer-limit` for normal clients.
    pub output_limit_normal: OutputLimit,
    /// `client-output-buffer-limit` for pub/sub clients.
    pub output_limit_pubsub: OutputLimit,
    /// `slowlog-log-slower-than` in microseconds (negative: off).
    pub slowlog_slower_than: i64,
    /// `slowlog-max-len`.
    pub slowlog_max_len: usize,
    /// `maxmemory` in bytes (0: none).
    pub maxmemory: u64,
    /// `maxmemory-policy`.
    pub maxmemory_policy: String,
}

/// All directives' values and where they came from. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// `rename-command` pairs, in order (file and command line only).
    pub renames: Vec<(String, String)>,
    /// The file the server was started with, for `CONFIG REWRITE`.
    pub file: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            values: DIRECTIVES
                .iter()
                .map(|d| (d.name, d.default.to_owned()))
                .collect(),
            renames: Vec::new(),
            file: None,
        }
    }
}

impl Config {
    /// The settings of `cortado-server [file] [--name value ...]`: the file's, then the flags'.
    pub fn from_args(args: &[String]) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        let mut rest = args;
        if let Some(first) = args.first() {
            if !first.starts_with("--") {
                config.load_file(Path::new(first))?;
                rest = &args[1..];
            }
        }
        let mut directives: Vec<Vec<String>> = Vec::new();
        for arg in rest {
            if let Some(name) = arg.strip_prefix("--") {
                directives.push(vec![name.to_owned()]);
            } else if let Some(last) = directives.last_mut() {
                last.push(arg.clone());
            } else {
                return Err(ConfigError(format!(
                    "command line: expected '--name value', got '{arg}'"
                )));
            }
        }
        for words in directives {
            config
                .apply_line(&words)
                .map_err(|e| ConfigError(format!("command line: --{}: {e}", words[0])))?;
        }
        Ok(config)
    }

    /// Reads the directives of `path`.
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        self.load_text(&text, &path.display().to_string())?;
        self.file = Some(path.to_owned());
        Ok(())
    }

    /// Reads directives from `text`, naming `origin` in errors.
    pub fn load_text(&mut self, text: &[u8], origin: &str) -> Result<(), ConfigError> {
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let words = match split_line(line) {
                Ok(words) => words,
                Err(()) => {
                    return Err(ConfigError(format!(
                        "{origin}, line {}: unbalanced quotes",
                        n + 1
                    )))
                }
            };
            if words.is_empty() {
                continue;
            }
            self.apply_line(&words).map_err(|e| {
                ConfigError(format!("{origin}, line {}: '{}': {e}", n + 1, words[0]))
            })?;
        }
        Ok(())
    }

    /// Applies one directive given as words (its name first), as at start-up.
    fn apply_line(&mut self, words: &[String]) -> Result<(), String> {
        let name = words[0].to_ascii_lowercase();
        if name == "rename-command" {
            if words.len() != 3 {
                return Err("rename-command takes a command and a new name".into());
            }
            self.renames
                .push((words[1].to_ascii_lowercase(), words[2].clone()));
            return Ok(());
        }
        let directive = directive(&name).ok_or_else(|| "unknown directive".to_owned())?;
        if words.len() < 2 {
            return Err("missing value".into());
        }
        let value = words[1..].join(" ");
        let canonical = validate(directive, &value)?;
        self.values.insert(directive.name, canonical);
        Ok(())
    }

    /// The value of `name` as `CONFIG GET` shows it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `CONFIG GET`: every directive matching one of `patterns`, by name.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, &str)> {
        self.values
            .iter()
            .filter(|(name, _)| {
                patterns
                    .iter()
                    .any(|p| glob_match(p, name.as_bytes(), true))
            })
            .map(|(name, value)| (*name, value.as_str()))
            .collect()
    }

    /// `CONFIG SET`: all the pairs or none, with Redis's error text on failure.
    pub fn set_all(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut staged: Vec<(&'static str, String)> = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            let name_text = String::from_utf8_lossy(name).to_ascii_lowercase();
            let Some(directive) = directive(&name_text) else {
                return Err(format!(
                    "Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                ));
            };
            let fail = |why: &str| {
                format!(
                    "CONFIG SET failed (possibly related to argument '{}') - {why}",
                    String::from_utf8_lossy(name)
                )
            };
            if staged.iter().any(|(n, _)| *n == directive.name) {
                return Err(fail("duplicate parameter"));
            }
            if !directive.mutable {
                return Err(fail("can't set immutable config"));
            }
            let value = String::from_utf8_lossy(value);
            let canonical = validate(directive, &value).map_err(|why| fail(&why))?;
            staged.push((directive.name, canonical));
        }
        for (name, value) in staged {
            self.values.insert(name, value);
        }
        Ok(())
    }

    /// The typed settings.
    pub fn settings(&self) -> Settings {
        let int = |name: &str| -> i64 { self.values[name].parse().expect("validated integer") };
        let memory = |name: &str| -> u64 { self.values[name].parse().expect("validated bytes") };
        let limits = parse_output_limits(&self.values["client-output-buffer-limit"])
            .expect("validated limits");
        let limit = |class: &str| {
            limits
                .iter()
                .find(|(c, _)| c == class)
                .map(|(_, l)| *l)
                .unwrap_or_default()
        };
        Settings {
            port: int("port") as u16,
            bind: parse_bind(&self.values["bind"]).expect("validated addresses"),
            protected_mode: self.values["protected-mode"] == "yes",
            requirepass: Some(self.values["requirepass"].as_bytes().to_vec())
                .filter(|p| !p.is_empty()),
            maxclients: int("maxclients") as u64,
            timeout: int("timeout") as u64,
            tcp_keepalive: int("tcp-keepalive") as u64,
            tcp_backlog: int("tcp-backlog") as u32,
            databases: int("databases") as usize,
            loglevel: self.values["loglevel"].clone(),
            logfile: self.values["logfile"].clone(),
            hz: int("hz") as u64,
            proto_max_bulk_len: memory("proto-max-bulk-len"),
            query_buffer_limit: memory("client-query-buffer-limit"),
            output_limit_normal: limit("normal"),
            output_limit_pubsub: limit("pubsub"),
            slowlog_slower_than: int("slowlog-log-slower-than"),
            slowlog_max_len: int("slowlog-max-len") as usize,
            maxmemory: memory("maxmemory"),
            maxmemory_policy: self.values["maxmemory-policy"].clone(),
        }
    }

    /// `CONFIG REWRITE`: rewrites the start-up file so it gives the current values. Lines of
    /// directives keep their place with their current value, comments stay, and directives
    /// that differ from their default but were not in the file are appended.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("The server is running without a config file".into());
        };
        let old = std::fs::read(path).map_err(|e| format!("Rewriting config file: {e}"))?;
        let mut out = String::new();
        let mut written: Vec<&str> = Vec::new();
        for line in old.split(|&b| b == b'\n') {
            let words = split_line(line).unwrap_or_default();
            let known = words
                .first()
                .and_then(|w| directive(&w.to_ascii_lowercase()));
            match known {
                Some(d) if !written.contains(&d.name) => {
                    out.push_str(&format_directive(d.name, &self.values[d.name]));
                    written.push(d.name);
                }
                // A second line of a directive already written.
                Some(_) => continue,
                None => out.push_str(&String::from_utf8_lossy(line)),
            }
            out.push('\n');
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        for d in DIRECTIVES {
            if !written.contains(&d.name) && self.values[d.name] != d.default {
                out.push_str(&format_directive(d.name, &self.values[d.name]));
                out.push('\n');
            }
        }
        let tmp = path.with_extension("rewrite.tmp");
        std::fs::write(&tmp, out)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("Rewriting config file: {e}"))
    }
}

fn format_directive(name: &str, value: &str) -> String {
    if value.is_empty() || value.contains(['"', '\'', '\\']) || value.contains(char::is_whitespace)
    {
        // Multi-word values of list kinds stay words; text values are quoted.
        if matches!(
            directive(name).map(|d| d.kind),
            Some(Kind::Bind | Kind::OutputLimits | Kind::Save)
        ) && !value.is_empty()
        {
            return format!("{name} {value}");
        }
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        format!("{name} \"{escaped}\"")
    } else {
        format!("{name} {value}")
    }
}

/// Splits a line of a config file into words as Redis does (`#` starts a comment line).
fn split_line(line: &[u8]) -> Result<Vec<String>, ()> {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() || trimmed[0] == b'#' {
        return Ok(Vec::new());
    }
    let mut bytes = Vec::new();
    let mut ranges = Vec::new();
    if !split_args(trimmed, &mut bytes, &mut ranges) {
        return Err(());
    }
    Ok(ranges
        .into_iter()
        .map(|r| String::from_utf8_lossy(&bytes[r]).into_owned())
        .collect())
}

/// Checks `value` against `directive`'s kind and returns its canonical form, or why not.
fn validate(directive: &Directive, value: &str) -> Result<String, String> {
    match directive.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(min, max) => {
            let n: i64 = value
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_owned())?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Memory => parse_memory(value)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".to_owned()),
        Kind::Enum(words) => {
            let lower = value.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                ))
            }
        }
        Kind::Text => Ok(value.to_owned()),
        Kind::Bind => {
            parse_bind(value).map(|_| value.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        Kind::OutputLimits => {
            let limits = parse_output_limits(value)?;
            // Merged into the current classes, shown in Redis's order.
            let mut merged: Vec<(String, OutputLimit)> =
                parse_output_limits(directive.default).expect("default limits parse");
            for (class, limit) in limits {
                if let Some(slot) = merged.iter_mut().find(|(c, _)| *c == class) {
                    slot.1 = limit;
                }
            }
            Ok(merged
                .iter()
                .map(|(c, l)| format!("{c} {} {} {}", l.hard, l.soft, l.soft_seconds))
                .collect::<Vec<_>>()
                .join(" "))
        }
        Kind::Save => {
            let words: Vec<&str> = value.split_whitespace().collect();
            if words.len() % 2 != 0 || words.iter().any(|w| w.parse::<u64>().is_err()) {
                if value.trim().is_empty() || value == "\"\"" {
                    return Ok(String::new());
                }
                return Err("Invalid save parameters".into());
            }
            Ok(words.join(" "))
        }
        Kind::Events => {
            if value.chars().all(|c| "KEg$lshzxetmdnA".contains(c)) {
                Ok(value.to_owned())
            } else {
                Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
            }
        }
    }
}

/// A byte count as redis.conf writes it: digits with an optional unit, `k` (1,000), `kb`
/// (1,024), `m`, `mb`, `g`, `gb`, any case.
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let multiplier: u64 = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(multiplier)
}

fn parse_bind(value: &str) -> Result<Vec<(IpAddr, bool)>, String> {
    let mut out = Vec::new();
    for word in value.split_whitespace() {
        let (optional, addr) = match word.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, word),
        };
        let ip = match addr {
            "*" => IpAddr::from([0, 0, 0, 0]),
            "::*" => IpAddr::from([0u16; 8]),
            _ => addr
                .parse()
                .map_err(|_| format!("invalid bind address '{word}'"))?,
        };
        out.push((ip, optional));
    }
    if out.is_empty() {
        return Err("bind needs at least one address".into());
    }
    Ok(out)
}

fn parse_output_limits(value: &str) -> Result<Vec<(String, OutputLimit)>, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.is_empty() || words.len() % 4 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut out = Vec::new();
    for chunk in words.chunks(4) {
        let class = match chunk[0].to_ascii_lowercase().as_str() {
            "normal" => "normal",
            "slave" | "replica" => "slave",
            "pubsub" => "pubsub",
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = parse_memory(chunk[1]);
        let soft = parse_memory(chunk[2]);
        let seconds = chunk[3].parse::<u64>().ok();
        let (Some(hard), Some(soft), Some(soft_seconds)) = (hard, soft, seconds) else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        out.push((
            class.to_owned(),
            OutputLimit {
                hard,
                soft,
                soft_seconds,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_table_is_sorted_for_lookup() {
        assert!(DIRECTIVES.windows(2).all(|w| w[0].name < w[1].name));
        for d in DIRECTIVES {
            assert!(validate(d, d.default).is_ok(), "{} default", d.name);
        }
    }

    #[test]
    fn parse_memory_takes_redis_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("1G"), Some(1_000_000_000));
        assert_eq!(parse_memory("100mb"), Some(100 << 20));
        assert_eq!(parse_memory("5k"), Some(5000));
        assert_eq!(parse_memory("42"), Some(42));
        assert_eq!(parse_memory("1x"), None);
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("gb"), None);
    }

    #[test]
    fn load_text_bad_directive_names_line_and_directive() {
        let mut config = Config::default();
        let err = config
            .load_text(b"# a comment\nport 7000\n\nfrobnicate 3\n", "test.conf")
            .unwrap_err();
        assert_eq!(err.0, "test.conf, line 4: 'frobnicate': unknown directive");
        let err = config
            .load_text(b"maxmemory lots\n", "test.conf")
            .unwrap_err();
        assert_eq!(
            err.0,
            "test.conf, line 1: 'maxmemory': argument must be a memory value"
        );
        assert_eq!(config.get("port"), Some("7000"));
    }

    #[test]
    fn from_args_command_line_overrides_file() {
        let dir = std::env::temp_dir().join(format!("cortado-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.conf");
        std::fs::write(&path, "port 7001\nmaxmemory 1mb\n").unwrap();
        let args: Vec<String> = [path.to_str().unwrap(), "--port", "7002", "--save", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let config = Config::from_args(&args).unwrap();
        let settings = config.settings();
        assert_eq!(settings.port, 7002);
        assert_eq!(settings.maxmemory, 1 << 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn set_all_is_all_or_nothing_with_redis_errors() {
        let mut config = Config::default();
        let err = config
            .set_all(&[(b"timeout", b"5"), (b"maxmemory", b"1x")])
            .unwrap_err();
        assert_eq!(
            err,
            "CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
        );
        assert_eq!(config.get("timeout"), Some("0"));
        assert_eq!(
            config.set_all(&[(b"foo", b"1")]).unwrap_err(),
            "Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert!(config
            .set_all(&[(b"maxmemory", b"1"), (b"MAXMEMORY", b"2")])
            .unwrap_err()
            .ends_with("duplicate parameter"));
        assert!(config
            .set_all(&[(b"databases", b"3")])
            .unwrap_err()
            .ends_with("can't set immutable config"));
        config
            .set_all(&[(b"timeout", b"5"), (b"maxmemory", b"2mb")])
            .unwrap();
        assert_eq!(config.get("maxmemory"), Some("2097152"));
        assert_eq!(config.settings().timeout, 5);
    }

    #[test]
    fn output_limits_merge_into_classes() {
        let mut config = Config::default();
        config
            .set_all(&[(b"client-output-buffer-limit", b"normal 1mb 512kb 10")])
            .unwrap();
        assert_eq!(
            config.get("client-output-buffer-limit"),
            Some("normal 1048576 524288 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
        );
        assert_eq!(
            config.settings().output_limit_normal,
            OutputLimit {
                hard: 1 << 20,
                soft: 512 << 10,
                soft_seconds: 10
            }
        );
    }

    #[test]
    fn rewrite_keeps_comments_and_updates_values() {
        let dir = std::env::temp_dir().join(format!("cortado-rewrite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.conf");
        std::fs::write(&path, "# mine\nport 7001\ntimeout 3\n").unwrap();
        let mut config = Config::from_args(&[path.to_str().unwrap().to_owned()]).unwrap();
        config
            .set_all(&[(b"timeout", b"9"), (b"maxmemory", b"1mb")])
            .unwrap();
        config.rewrite().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "# mine\nport 7001\ntimeout 9\nmaxmemory 1048576\n");
        let again = Config::from_args(&[path.to_str().unwrap().to_owned()]).unwrap();
        assert_eq!(again.get("timeout"), Some("9"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
