//! Settings as Redis users know them: redis.conf's directive names and value syntax, read from a
//! file and the command line, and read and changed at run time by `CONFIG`.
//!
//! A file holds one directive a line (`maxmemory 1gb`, `# comments`, quoted arguments as in
//! redis.conf, `include other.conf`), and `--name value ...` on the command line adds
//! directives after the file's, so they win. An unknown or malformed directive is a
//! [`ConfigError`] naming the file, the line and the directive, and the server does not
//! start.
//!
//! # Design
//!
//! One table (`directives`) lists every directive of Redis 7.0 with its kind, default and
//! flags; parsing, validation, `CONFIG GET`, `CONFIG SET` and `CONFIG REWRITE` all read it.
//! Values are kept in their canonical text (`maxmemory 1gb` is kept as `1073741824`, as
//! `CONFIG GET` shows it), and [`Settings`], the typed snapshot the server runs on, is
//! derived from them after each change. `CONFIG SET` behaves as Redis 7.0's does:
//! every name is checked before any value, the first error is reported (an unknown name
//! before any other), and either every pair is applied or none.

mod directives;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

pub use directives::POLICIES;
use directives::{lookup, Directive, Kind, DIRECTIVES, HIDDEN, MUTABLE, PROTECTED, SENSITIVE};

use crate::glob::glob_match;
use crate::protocol::request::split_args;

/// How deep `include` may nest, against a file that includes itself.
const MAX_INCLUDE_DEPTH: usize = 16;

/// `loglevel` as the log reads it: how many of `warning`, `notice`, `verbose`, `debug` are
/// on (0: nothing).
static LOG_LEVEL: AtomicU8 = AtomicU8::new(2);

/// Makes `loglevel` (`debug`, `verbose`, `notice` or `warning`) the level the log shows, at
/// once.
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

/// Whom a protected action is allowed to (`enable-debug-command`,
/// `enable-protected-configs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// Nobody.
    No,
    /// Everybody.
    Yes,
    /// Loopback clients.
    Local,
}

impl Allowed {
    fn parse(value: &str) -> Self {
        match value {
            "yes" => Allowed::Yes,
            "local" => Allowed::Local,
            _ => Allowed::No,
        }
    }

    /// Whether a client (loopback or not) may do the action.
    pub fn allows(self, loopback: bool) -> bool {
        self == Allowed::Yes || (self == Allowed::Local && loopback)
    }
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
    /// `pidfile` (empty: none).
    pub pidfile: String,
    /// `hz`, as Redis clamps it (1 to 500).
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
    /// `maxmemory-samples`.
    pub maxmemory_samples: u32,
    /// `maxmemory-eviction-tenacity` (0 to 100).
    pub maxmemory_eviction_tenacity: u32,
    /// `latency-tracking`.
    pub latency_tracking: bool,
    /// `latency-tracking-info-percentiles`, each as written (`99.9`) and as a number.
    pub latency_percentiles: Vec<(String, f64)>,
    /// `lfu-log-factor`.
    pub lfu_log_factor: u32,
    /// `lfu-decay-time` in minutes (0: counters never decay).
    pub lfu_decay_time: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`) in milliseconds: how long a script
    /// runs before other clients get `-BUSY` (see [`crate::lua::busy`]).
    pub busy_reply_threshold: u64,
    /// `enable-debug-command` (`yes` by default here, where Redis says `no`: test harnesses
    /// send `DEBUG SLEEP` and `DEBUG LOG`).
    pub enable_debug_command: Allowed,
    /// `enable-protected-configs`.
    pub enable_protected_configs: Allowed,
    /// `notify-keyspace-events`, canonical (`AKE`).
    pub notify_keyspace_events: String,
    /// `hash-max-listpack-entries` and `hash-max-listpack-value` (or their `ziplist` aliases).
    pub hash_limits: crate::keyspace::hash::HashLimits,
    /// When a sorted set leaves its compact form (`zset-max-listpack-entries` and `-value`).
    pub zset_limits: crate::keyspace::zset::ZSetLimits,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: usize,
}

/// All directives' values and where they came from. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// `rename-command` pairs, in order (file and command line only).
    pub renames: Vec<(String, String)>,
    /// The file the server was started with, for `CONFIG REWRITE`.
    pub file: Option<PathBuf>,
    /// Whether a `save` line of the file being read was seen (they add up, as in Redis).
    reading_save: bool,
}

impl Default for Config {
    fn default() -> Self {
        let mut values: BTreeMap<&'static str, String> = DIRECTIVES
            .iter()
            .map(|d| (d.name, d.default.to_owned()))
            .collect();
        values.insert("dir", current_dir());
        Self {
            values,
            renames: Vec::new(),
            file: None,
            reading_save: false,
        }
    }
}

fn current_dir() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "./".to_owned())
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
        config.reading_save = false;
        for words in directives {
            config
                .apply_line(&words, 0)
                .map_err(|e| ConfigError(format!("command line: --{}: {e}", words[0])))?;
        }
        Ok(config)
    }

    /// Reads the directives of `path`.
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        self.reading_save = false;
        self.load_path(path, 0)?;
        self.file = Some(path.to_owned());
        Ok(())
    }

    fn load_path(&mut self, path: &Path, depth: usize) -> Result<(), ConfigError> {
        let text = std::fs::read(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        self.load_text_at(&text, &path.display().to_string(), depth)
    }

    /// Reads directives from `text`, naming `origin` in errors.
    pub fn load_text(&mut self, text: &[u8], origin: &str) -> Result<(), ConfigError> {
        self.load_text_at(text, origin, 0)
    }

    fn load_text_at(&mut self, text: &[u8], origin: &str, depth: usize) -> Result<(), ConfigError> {
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
            self.apply_line(&words, depth).map_err(|e| {
                ConfigError(format!("{origin}, line {}: '{}': {e}", n + 1, words[0]))
            })?;
        }
        Ok(())
    }

    /// Applies one directive given as words (its name first), as at start-up.
    fn apply_line(&mut self, words: &[String], depth: usize) -> Result<(), String> {
        let name = words[0].to_ascii_lowercase();
        match name.as_str() {
            "rename-command" => {
                if words.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                self.renames
                    .push((words[1].to_ascii_lowercase(), words[2].clone()));
                return Ok(());
            }
            "include" => {
                if words.len() != 2 {
                    return Err("wrong number of arguments".into());
                }
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err("includes nest too deep".into());
                }
                return self
                    .load_path(Path::new(&words[1]), depth + 1)
                    .map_err(|e| e.0);
            }
            // Deprecated in Redis 7.0, which accepts and ignores them.
            "list-max-ziplist-entries" | "list-max-ziplist-value" | "lua-replicate-commands" => {
                return Ok(());
            }
            _ => {}
        }
        let (directive, _) = lookup(&name).ok_or_else(|| "unknown directive".to_owned())?;
        if words.len() < 2 {
            return Err("wrong number of arguments".into());
        }
        let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let split;
        if is_multi(directive) && args.len() == 1 && !args[0].is_empty() {
            // `--save "900 1"`: one argument holding several.
            split = split_line(args[0].as_bytes()).map_err(|()| "unbalanced quotes")?;
            args = split.iter().map(String::as_str).collect();
        }
        let mut canonical = validate(directive, &args)?;
        if matches!(directive.kind, Kind::Save) {
            // The `save` lines of a file add up; the first replaces the default.
            if self.reading_save && !canonical.is_empty() {
                let before = &self.values[directive.name];
                if !before.is_empty() {
                    canonical = format!("{before} {canonical}");
                }
            }
            self.reading_save = true;
        }
        self.values.insert(directive.name, canonical);
        Ok(())
    }

    /// The value of directive `name` as `CONFIG GET` shows it.
    pub fn get(&self, name: &str) -> Option<&str> {
        let (directive, _) = lookup(name)?;
        self.values.get(directive.name).map(String::as_str)
    }

    /// `CONFIG GET`: the directives `patterns` name, as Redis 7.0 finds them: a name without
    /// glob characters is looked up exactly (hidden ones and aliases too, shown as asked),
    /// a pattern matches names and aliases, not hidden ones; each directive once.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, &str)> {
        let mut out: Vec<(String, &str)> = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        for pattern in patterns {
            if !pattern.iter().any(|b| matches!(b, b'[' | b'*' | b'?')) {
                let name = String::from_utf8_lossy(pattern).into_owned();
                if let Some((directive, _)) = lookup(&name) {
                    if !seen.contains(&directive.name) {
                        seen.push(directive.name);
                        out.push((name, &self.values[directive.name]));
                    }
                }
                continue;
            }
            for directive in DIRECTIVES.iter().filter(|d| !d.has(HIDDEN)) {
                let names = std::iter::once(directive.name).chain(directive.alias);
                for name in names {
                    if glob_match(pattern, name.as_bytes(), true)
                        && !out.iter().any(|(shown, _)| shown == name)
                    {
                        seen.push(directive.name);
                        out.push((name.to_owned(), &self.values[directive.name]));
                    }
                }
            }
        }
        out
    }

    /// The positions, among `CONFIG SET`'s arguments from the first name on, of the values
    /// of secret directives (`requirepass`), which the slow log and `MONITOR` must not show.
    pub fn secret_values(names: impl Iterator<Item = impl AsRef<[u8]>>) -> Vec<usize> {
        names
            .enumerate()
            .filter(|(_, name)| {
                lookup(&String::from_utf8_lossy(name.as_ref()))
                    .is_some_and(|(d, _)| d.has(SENSITIVE))
            })
            .map(|(i, _)| 2 * i + 1)
            .collect()
    }

    /// `CONFIG SET`: all the pairs or none, with Redis 7.0's checks in its order and its
    /// error text (without the `ERR `). `loopback`: whether the client is local, for
    /// `enable-protected-configs local`.
    pub fn set_all(&mut self, pairs: &[(&[u8], &[u8])], loopback: bool) -> Result<(), String> {
        let protected_allowed = Allowed::parse(&self.values["enable-protected-configs"]);
        let mut unknown: Option<String> = None;
        let mut error: Option<(String, &str)> = None;
        let mut staged: Vec<(String, &'static Directive, &[u8])> = Vec::new();
        for (name, value) in pairs {
            let typed = String::from_utf8_lossy(name).into_owned();
            let Some((directive, _)) = lookup(&typed) else {
                if error.is_none() && unknown.is_none() {
                    unknown = Some(typed);
                }
                continue;
            };
            if error.is_some() || unknown.is_some() {
                continue;
            }
            if !directive.has(MUTABLE) {
                error = Some((typed, "can't set immutable config"));
            } else if directive.has(PROTECTED) && !protected_allowed.allows(loopback) {
                error = Some((typed, "can't set protected config"));
            } else if staged.iter().any(|(_, d, _)| d.name == directive.name) {
                error = Some((typed, "duplicate parameter"));
            } else {
                staged.push((typed.to_ascii_lowercase(), directive, value));
            }
        }
        if let Some(name) = unknown {
            return Err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{name}'"
            ));
        }
        if let Some((name, why)) = error {
            return Err(format!(
                "CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ));
        }
        let mut canonical: Vec<(&'static str, String)> = Vec::with_capacity(staged.len());
        for (typed, directive, value) in staged {
            let value = String::from_utf8_lossy(value);
            let args: Vec<&str> = if is_multi(directive) {
                // Redis splits a multi-argument value at single spaces.
                if value.is_empty() {
                    Vec::new()
                } else {
                    value.split(' ').collect()
                }
            } else {
                vec![&value]
            };
            // Named as Redis registers it: the directive's name, or the alias used.
            let value = validate(directive, &args).map_err(|why| {
                format!("CONFIG SET failed (possibly related to argument '{typed}') - {why}")
            })?;
            canonical.push((directive.name, value));
        }
        for (name, value) in canonical {
            self.values.insert(name, value);
        }
        Ok(())
    }

    /// The typed settings.
    pub fn settings(&self) -> Settings {
        let int = |name: &str| -> i64 { self.values[name].parse().expect("validated integer") };
        let memory = |name: &str| -> u64 { self.values[name].parse().expect("validated bytes") };
        let limits = parse_output_limits(
            &self.values["client-output-buffer-limit"]
                .split(' ')
                .collect::<Vec<_>>(),
        )
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
            pidfile: self.values["pidfile"].clone(),
            hz: int("hz").clamp(1, 500) as u64,
            proto_max_bulk_len: memory("proto-max-bulk-len"),
            query_buffer_limit: memory("client-query-buffer-limit"),
            output_limit_normal: limit("normal"),
            output_limit_pubsub: limit("pubsub"),
            slowlog_slower_than: int("slowlog-log-slower-than"),
            slowlog_max_len: int("slowlog-max-len") as usize,
            maxmemory: memory("maxmemory"),
            maxmemory_policy: self.values["maxmemory-policy"].clone(),
            maxmemory_samples: int("maxmemory-samples").clamp(1, 64) as u32,
            maxmemory_eviction_tenacity: int("maxmemory-eviction-tenacity").clamp(0, 100) as u32,
            latency_tracking: self.values["latency-tracking"] == "yes",
            latency_percentiles: self.values["latency-tracking-info-percentiles"]
                .split(' ')
                .filter(|p| !p.is_empty())
                .map(|p| (p.to_owned(), p.parse().expect("validated percentile")))
                .collect(),
            lfu_log_factor: int("lfu-log-factor").max(0) as u32,
            lfu_decay_time: int("lfu-decay-time").max(0) as u64,
            busy_reply_threshold: int("busy-reply-threshold").max(0) as u64,
            enable_debug_command: Allowed::parse(&self.values["enable-debug-command"]),
            enable_protected_configs: Allowed::parse(&self.values["enable-protected-configs"]),
            notify_keyspace_events: self.values["notify-keyspace-events"].clone(),
            hash_limits: crate::keyspace::hash::HashLimits {
                entries: memory("hash-max-listpack-entries") as usize,
                value: memory("hash-max-listpack-value") as usize,
            },
            set_max_intset_entries: memory("set-max-intset-entries") as usize,
            zset_limits: crate::keyspace::zset::ZSetLimits {
                entries: memory("zset-max-listpack-entries") as usize,
                value: memory("zset-max-listpack-value") as usize,
            },
        }
    }

    /// `CONFIG REWRITE`: rewrites the start-up file so it gives the current values. Lines of
    /// directives keep their place with their current value (under their current name, an
    /// alias's line too), comments and unknown lines stay, and directives that differ from
    /// their default but were not in the file are appended.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("The server is running without a config file".into());
        };
        let old = std::fs::read(path).map_err(|e| format!("Rewriting config file: {e}"))?;
        let mut out = String::new();
        let mut written: Vec<&str> = Vec::new();
        for line in old.split(|&b| b == b'\n') {
            let words = split_line(line).unwrap_or_default();
            let known = words.first().and_then(|w| lookup(w)).map(|(d, _)| d);
            match known {
                Some(d) if !written.contains(&d.name) => {
                    out.push_str(&format_directive(d, &self.values[d.name]));
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
            let value = &self.values[d.name];
            let default = if d.name == "dir" {
                current_dir()
            } else {
                d.default.to_owned()
            };
            if !written.contains(&d.name) && *value != default {
                out.push_str(&format_directive(d, value));
                out.push('\n');
            }
        }
        let tmp = path.with_extension("rewrite.tmp");
        std::fs::write(&tmp, out)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("Rewriting config file: {e}"))
    }
}

/// Whether a directive's value is several words (`save 900 1`, `bind a b`): written unquoted,
/// and split at spaces when `CONFIG SET` gives it as one argument.
fn is_multi(directive: &Directive) -> bool {
    matches!(
        directive.kind,
        Kind::Bind
            | Kind::OutputLimits
            | Kind::Save
            | Kind::OomValues
            | Kind::Percentiles
            | Kind::ShutdownFlags
    ) || directive.name == "replicaof"
}

fn format_directive(directive: &Directive, value: &str) -> String {
    let name = directive.name;
    if is_multi(directive) && !value.is_empty() {
        return format!("{name} {value}");
    }
    if value.is_empty() || value.contains(['"', '\'', '\\']) || value.contains(char::is_whitespace)
    {
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

/// Checks `args` against `directive`'s kind and returns its canonical form, or why not, in
/// Redis's words.
fn validate(directive: &Directive, args: &[&str]) -> Result<String, String> {
    if !is_multi(directive) && args.len() != 1 {
        return Err("wrong number of arguments".into());
    }
    let value = args.first().copied().unwrap_or("");
    let between = |lo: &dyn fmt::Display, hi: &dyn fmt::Display| {
        format!("argument must be between {lo} and {hi} inclusive")
    };
    match directive.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(min, max) => {
            let n = crate::protocol::parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_owned())?;
            if n < min || n > max {
                return Err(between(&min, &max));
            }
            if directive.name == "hz" {
                // Redis keeps hz between 1 and 500 and shows the kept value.
                return Ok(n.clamp(1, 500).to_string());
            }
            Ok(n.to_string())
        }
        Kind::Memory(min, max) => {
            let n = parse_memory(value).ok_or("argument must be a memory value")?;
            if n < min || n > max {
                return Err(between(&min, &max));
            }
            Ok(n.to_string())
        }
        Kind::MemoryOrPercent => {
            if let Some(n) = parse_memory(value) {
                return i64::try_from(n)
                    .map(|n| n.to_string())
                    .map_err(|_| between(&-100, &i64::MAX));
            }
            let percent = value
                .strip_suffix('%')
                .filter(|p| !p.is_empty())
                .and_then(|p| crate::protocol::parse_i64(p.as_bytes()))
                .filter(|&p| p >= 0)
                .ok_or_else(|| "argument must be a memory or percent value".to_owned())?;
            if percent > 100 {
                return Err("percentage argument must be less or equal to 100".into());
            }
            Ok(format!("{percent}%"))
        }
        Kind::Octal(min, max) => {
            let n = u32::from_str_radix(value, 8)
                .map_err(|_| "argument couldn't be parsed as an octal number".to_owned())?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min:o} and {max:o} inclusive"
                ));
            }
            Ok(format!("{n:o}"))
        }
        Kind::Enum(words) => {
            let lower = value.to_ascii_lowercase();
            words
                .iter()
                .find(|w| **w == lower)
                .map(|w| (*w).to_owned())
                .ok_or_else(|| {
                    format!(
                        "argument(s) must be one of the following: {}",
                        words.join(", ")
                    )
                })
        }
        Kind::Only(only) => {
            // First the checks of the value's own kind, as Redis makes them.
            match only {
                "no" => {
                    validate(&directives::BOOL, args)?;
                }
                "0" => {
                    validate(&directives::PORT, args)?;
                }
                _ => {}
            }
            let given = args.join(" ");
            if given.eq_ignore_ascii_case(only) {
                Ok(only.to_owned())
            } else {
                Err(format!(
                    "not supported by Cortado: only '{only}' is accepted"
                ))
            }
        }
        Kind::Text => Ok(value.to_owned()),
        Kind::Dir => {
            let path = std::fs::canonicalize(value).map_err(|e| {
                // As Redis reports a failed chdir: the system's message.
                let text = e.to_string();
                text.split(" (os error").next().unwrap_or(&text).to_owned()
            })?;
            if !path.is_dir() {
                return Err("Not a directory".into());
            }
            Ok(path.display().to_string())
        }
        Kind::Bind => {
            let joined = args.join(" ");
            parse_bind(&joined)?;
            Ok(joined.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        Kind::OutputLimits => {
            let limits = parse_output_limits(args)?;
            // Merged into the current classes, shown in Redis's order.
            let mut merged: Vec<(String, OutputLimit)> =
                parse_output_limits(&directive.default.split(' ').collect::<Vec<_>>())
                    .expect("default limits parse");
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
            let words: Vec<&str> = args.iter().copied().filter(|w| !w.is_empty()).collect();
            let valid = words.len() % 2 == 0
                && words.iter().all(|w| w.parse::<i64>().is_ok_and(|n| n >= 0));
            if !valid {
                return Err("Invalid save parameters".into());
            }
            Ok(words.join(" "))
        }
        Kind::Events => parse_events(value),
        Kind::OomValues => {
            if args.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let values: Option<Vec<i64>> = args
                .iter()
                .map(|a| a.parse::<i64>().ok().filter(|n| (-2000..=2000).contains(n)))
                .collect();
            let values = values.ok_or_else(|| {
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".to_owned()
            })?;
            Ok(values
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(" "))
        }
        Kind::Percentiles => {
            let mut out = Vec::new();
            for arg in args.iter().filter(|a| !a.is_empty()) {
                let p: f64 = arg.parse().map_err(|_| {
                    "Invalid latency-tracking-info-percentiles parameters".to_owned()
                })?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(
                        "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                            .into(),
                    );
                }
                // Redis prints them with %f, trailing zeros trimmed.
                let text = format!("{p:.6}");
                out.push(text.trim_end_matches('0').trim_end_matches('.').to_owned());
            }
            Ok(out.join(" "))
        }
        Kind::ShutdownFlags => {
            const FLAGS: &[&str] = &["default", "save", "nosave", "now", "force"];
            let mut on = [false; 5];
            for arg in args {
                let i = FLAGS
                    .iter()
                    .position(|f| f.eq_ignore_ascii_case(arg))
                    .ok_or_else(|| {
                        format!(
                            "argument(s) must be one of the following: {}",
                            FLAGS.join(", ")
                        )
                    })?;
                on[i] = true;
            }
            if on[1] && on[2] {
                return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
            }
            let shown: Vec<&str> = (1..5).filter(|&i| on[i]).map(|i| FLAGS[i]).collect();
            Ok(if shown.is_empty() {
                "default".to_owned()
            } else {
                shown.join(" ")
            })
        }
    }
}

/// `notify-keyspace-events` in the canonical letters `CONFIG GET` shows, or Redis's error for a
/// letter it does not know.
fn parse_events(value: &str) -> Result<String, String> {
    // The classes `A` stands for, in the order Redis writes them.
    const CLASSES: &str = "g$lshzxetd";
    let mut on = std::collections::BTreeSet::new();
    for c in value.chars() {
        match c {
            'A' => on.extend(CLASSES.chars()),
            'g' | '$' | 'l' | 's' | 'h' | 'z' | 'x' | 'e' | 't' | 'd' | 'n' | 'K' | 'E' | 'm' => {
                on.insert(c);
            }
            _ => return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        }
    }
    let mut out = String::new();
    if CLASSES.chars().all(|c| on.contains(&c)) {
        // Redis writes `A` alone then, even with `n` set.
        out.push('A');
    } else {
        out.extend("g$lshzxetdn".chars().filter(|c| on.contains(c)));
    }
    out.extend("KEm".chars().filter(|c| on.contains(c)));
    Ok(out)
}

/// A byte count as Redis reads one in its settings: digits with an optional unit, `k` (1,000),
/// `kb` (1,024), `m`, `mb`, `g`, `gb`, any case; nothing else, not even spaces.
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    if digits.is_empty() {
        return None;
    }
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
    if out.len() > 16 {
        return Err("Too many bind addresses specified.".into());
    }
    Ok(out)
}

fn parse_output_limits(words: &[&str]) -> Result<Vec<(String, OutputLimit)>, String> {
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
mod tests;
