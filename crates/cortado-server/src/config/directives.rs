//! The directives of redis.conf, every one Redis 7.0 accepts: name, alias, kind of value,
//! default, and whether `CONFIG SET` may change it.
//!
//! Cortado acts on the directives [`Settings`](super::Settings) reads; it accepts the others
//! with the same validation as Redis and shows them in `CONFIG GET`, so a redis.conf written
//! for Redis loads unchanged. A directive asking for what Cortado does not have (`appendonly
//! yes`, `cluster-enabled yes`, `replicaof`, a `unixsocket`, TLS) accepts only its "off"
//! value, so such a configuration fails at start-up instead of running without what it asked
//! for.
//!
//! # Design
//!
//! The names, aliases, kinds of value, ranges and defaults are Redis 7.0's interface, which
//! redis.conf files and clients depend on: the defaults and names are those `CONFIG GET *`
//! reports on `redis-server` 7.0, and the ranges those its `CONFIG SET` accepts. The
//! differential tests hold the table to it: `config_get_all_matches_redis` compares `CONFIG
//! GET *` (every name, alias and default value) with `redis-server`'s, and
//! `config_set_checks_and_errors_match_redis` compares the answers to values of each kind,
//! in and out of range. Where Cortado's default differs it says so at the entry: `bind`
//! (`127.0.0.1 -::1`, as redis.conf sets it, rather than listening everywhere), `dir` (the
//! working directory), `enable-debug-command` (`yes`: test harnesses send `DEBUG SLEEP` and
//! `DEBUG LOG`), `save` (empty: nothing is ever saved). `port` and `bind` cannot be changed
//! at run time here (Redis re-binds).

/// What a directive's value may be.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// `yes` or `no`, any case.
    Bool,
    /// An integer in a range.
    Int(i64, i64),
    /// A byte count with an optional unit (`k`, `kb`, `m`, `mb`, `g`, `gb`), in a range.
    Memory(u64, u64),
    /// A byte count, or a percentage of `maxmemory` up to 100 (`maxmemory-clients`).
    MemoryOrPercent,
    /// An octal number in a range (`unixsocketperm`).
    Octal(u32, u32),
    /// One of these words, any case.
    Enum(&'static [&'static str]),
    /// Only this value: the directive asks for something Cortado does not have.
    Only(&'static str),
    /// Any text.
    Text,
    /// An existing directory.
    Dir,
    /// Addresses to listen on.
    Bind,
    /// `client-output-buffer-limit`'s class quadruples.
    OutputLimits,
    /// `save`'s pairs of seconds and changes (accepted; Cortado keeps nothing on disk).
    Save,
    /// Event class letters (`notify-keyspace-events`).
    Events,
    /// Three scores between -2000 and 2000 (`oom-score-adj-values`).
    OomValues,
    /// Percentiles between 0 and 100 (`latency-tracking-info-percentiles`).
    Percentiles,
    /// `default`, or some of `save`, `nosave`, `now`, `force` (`shutdown-on-sigterm`).
    ShutdownFlags,
}

/// `CONFIG SET` may change it.
pub(super) const MUTABLE: u8 = 1;
/// `CONFIG GET` shows it only when asked by its exact name.
pub(super) const HIDDEN: u8 = 2;
/// `CONFIG SET` refuses it while `enable-protected-configs` is `no`.
pub(super) const PROTECTED: u8 = 4;
/// Its value is a secret: the slow log and `MONITOR` show `CONFIG SET`'s value of it as
/// `(redacted)`.
pub(super) const SENSITIVE: u8 = 8;

/// One directive.
#[derive(Debug)]
pub(super) struct Directive {
    pub name: &'static str,
    /// The old name Redis still accepts (`slave-priority` for `replica-priority`).
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub flags: u8,
}

impl Directive {
    /// Whether it has flag `flag`.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

const fn d(
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
    flags: u8,
) -> Directive {
    Directive {
        name,
        alias,
        kind,
        default,
        flags,
    }
}

const I32: i64 = i32::MAX as i64;
const I32_MIN: i64 = i32::MIN as i64;
const U32: i64 = u32::MAX as i64;

/// `loglevel`'s values.
pub(super) const LOGLEVEL: &[&str] = &["debug", "verbose", "notice", "warning"];
/// `enable-debug-command`'s values, and the other protected actions'.
pub(super) const ALLOWED: &[&str] = &["no", "yes", "local"];
/// Redis's eight eviction policies, then Cortado's two.
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

const ACL_PUBSUB_DEFAULT: &[&str] = &["allchannels", "resetchannels"];
const APPENDFSYNC: &[&str] = &["everysec", "always", "no"];
const CLUSTER_PREFERRED_ENDPOINT_TYPE: &[&str] = &["ip", "hostname", "unknown-endpoint"];
const OOM_SCORE_ADJ: &[&str] = &["no", "yes", "relative", "absolute"];
const PROPAGATION_ERROR_BEHAVIOR: &[&str] = &["ignore", "panic", "panic-on-replicas"];
const REPL_DISKLESS_LOAD: &[&str] = &["disabled", "on-empty-db", "swapdb"];
const SANITIZE_DUMP_PAYLOAD: &[&str] = &["no", "yes", "clients"];
const SUPERVISED: &[&str] = &["upstart", "systemd", "auto", "no"];
const SYSLOG_FACILITY: &[&str] = &[
    "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];
const TLS_AUTH_CLIENTS: &[&str] = &["no", "yes", "optional"];

/// Every directive of Redis 7.0, by name. See the [module docs](self).
pub(super) const DIRECTIVES: &[Directive] = &[
    d(
        "acl-pubsub-default",
        None,
        Kind::Enum(ACL_PUBSUB_DEFAULT),
        "resetchannels",
        MUTABLE,
    ),
    d("aclfile", None, Kind::Only(""), "", 0),
    d(
        "acllog-max-len",
        None,
        Kind::Int(0, i64::MAX),
        "128",
        MUTABLE,
    ),
    d(
        "active-defrag-cycle-max",
        None,
        Kind::Int(1, 99),
        "25",
        MUTABLE,
    ),
    d(
        "active-defrag-cycle-min",
        None,
        Kind::Int(1, 99),
        "1",
        MUTABLE,
    ),
    d(
        "active-defrag-ignore-bytes",
        None,
        Kind::Memory(1, i64::MAX as u64),
        "104857600",
        MUTABLE,
    ),
    d(
        "active-defrag-max-scan-fields",
        None,
        Kind::Int(1, i64::MAX),
        "1000",
        MUTABLE,
    ),
    d(
        "active-defrag-threshold-lower",
        None,
        Kind::Int(0, 1000),
        "10",
        MUTABLE,
    ),
    d(
        "active-defrag-threshold-upper",
        None,
        Kind::Int(0, 1000),
        "100",
        MUTABLE,
    ),
    d("active-expire-effort", None, Kind::Int(1, 10), "1", MUTABLE),
    d("activedefrag", None, Kind::Bool, "no", MUTABLE),
    d("activerehashing", None, Kind::Bool, "yes", MUTABLE),
    d("always-show-logo", None, Kind::Bool, "no", 0),
    d("aof-disable-auto-gc", None, Kind::Bool, "no", MUTABLE),
    d("aof-load-truncated", None, Kind::Bool, "yes", MUTABLE),
    d(
        "aof-rewrite-incremental-fsync",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d("aof-timestamp-enabled", None, Kind::Bool, "no", MUTABLE),
    d("aof-use-rdb-preamble", None, Kind::Bool, "yes", MUTABLE),
    d("aof_rewrite_cpulist", None, Kind::Text, "", 0),
    d("appenddirname", None, Kind::Text, "appendonlydir", 0),
    d("appendfilename", None, Kind::Text, "appendonly.aof", 0),
    d(
        "appendfsync",
        None,
        Kind::Enum(APPENDFSYNC),
        "everysec",
        MUTABLE,
    ),
    d("appendonly", None, Kind::Only("no"), "no", MUTABLE),
    d(
        "auto-aof-rewrite-min-size",
        None,
        Kind::Memory(0, i64::MAX as u64),
        "67108864",
        MUTABLE,
    ),
    d(
        "auto-aof-rewrite-percentage",
        None,
        Kind::Int(0, I32),
        "100",
        MUTABLE,
    ),
    d("bgsave_cpulist", None, Kind::Text, "", 0),
    d("bind", None, Kind::Bind, "127.0.0.1 -::1", 0),
    d("bind-source-addr", None, Kind::Text, "", MUTABLE),
    d("bio_cpulist", None, Kind::Text, "", 0),
    d(
        "busy-reply-threshold",
        Some("lua-time-limit"),
        Kind::Int(0, i64::MAX),
        "5000",
        MUTABLE,
    ),
    d(
        "client-output-buffer-limit",
        None,
        Kind::OutputLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        MUTABLE,
    ),
    d(
        "client-query-buffer-limit",
        None,
        Kind::Memory(1048576, i64::MAX as u64),
        "1073741824",
        MUTABLE,
    ),
    d(
        "cluster-allow-pubsubshard-when-down",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d(
        "cluster-allow-reads-when-down",
        None,
        Kind::Bool,
        "no",
        MUTABLE,
    ),
    d(
        "cluster-allow-replica-migration",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d(
        "cluster-announce-bus-port",
        None,
        Kind::Int(0, 65535),
        "0",
        MUTABLE,
    ),
    d("cluster-announce-hostname", None, Kind::Text, "", MUTABLE),
    d("cluster-announce-ip", None, Kind::Text, "", MUTABLE),
    d(
        "cluster-announce-port",
        None,
        Kind::Int(0, 65535),
        "0",
        MUTABLE,
    ),
    d(
        "cluster-announce-tls-port",
        None,
        Kind::Int(0, 65535),
        "0",
        MUTABLE,
    ),
    d("cluster-config-file", None, Kind::Text, "nodes.conf", 0),
    d("cluster-enabled", None, Kind::Only("no"), "no", 0),
    d(
        "cluster-link-sendbuf-limit",
        None,
        Kind::Memory(0, u64::MAX),
        "0",
        MUTABLE,
    ),
    d(
        "cluster-migration-barrier",
        None,
        Kind::Int(0, I32),
        "1",
        MUTABLE,
    ),
    d(
        "cluster-node-timeout",
        None,
        Kind::Int(0, i64::MAX),
        "15000",
        MUTABLE,
    ),
    d("cluster-port", None, Kind::Int(0, 65535), "0", 0),
    d(
        "cluster-preferred-endpoint-type",
        None,
        Kind::Enum(CLUSTER_PREFERRED_ENDPOINT_TYPE),
        "ip",
        MUTABLE,
    ),
    d(
        "cluster-replica-no-failover",
        Some("cluster-slave-no-failover"),
        Kind::Bool,
        "no",
        MUTABLE,
    ),
    d(
        "cluster-replica-validity-factor",
        Some("cluster-slave-validity-factor"),
        Kind::Int(0, I32),
        "10",
        MUTABLE,
    ),
    d(
        "cluster-require-full-coverage",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d("crash-log-enabled", None, Kind::Bool, "yes", MUTABLE),
    d("crash-memcheck-enabled", None, Kind::Bool, "yes", MUTABLE),
    d("daemonize", None, Kind::Only("no"), "no", 0),
    d("databases", None, Kind::Int(1, I32), "16", 0),
    d(
        "dbfilename",
        None,
        Kind::Text,
        "dump.rdb",
        MUTABLE | PROTECTED,
    ),
    d("dir", None, Kind::Dir, "", MUTABLE | PROTECTED),
    d("disable-thp", None, Kind::Bool, "yes", 0),
    d("dynamic-hz", None, Kind::Bool, "yes", MUTABLE),
    d("enable-debug-command", None, Kind::Enum(ALLOWED), "yes", 0),
    d("enable-module-command", None, Kind::Enum(ALLOWED), "no", 0),
    d(
        "enable-protected-configs",
        None,
        Kind::Enum(ALLOWED),
        "no",
        0,
    ),
    d(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        Kind::Int(0, i64::MAX),
        "512",
        MUTABLE,
    ),
    d(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        Kind::Memory(0, i64::MAX as u64),
        "64",
        MUTABLE,
    ),
    d(
        "hll-sparse-max-bytes",
        None,
        Kind::Memory(0, i64::MAX as u64),
        "3000",
        MUTABLE,
    ),
    d("hz", None, Kind::Int(0, I32), "10", MUTABLE),
    d("ignore-warnings", None, Kind::Text, "", MUTABLE),
    d("io-threads", None, Kind::Int(1, 128), "1", 0),
    d("io-threads-do-reads", None, Kind::Bool, "no", 0),
    d("jemalloc-bg-thread", None, Kind::Bool, "yes", MUTABLE),
    d(
        "key-load-delay",
        None,
        Kind::Int(I32_MIN, I32),
        "0",
        MUTABLE | HIDDEN,
    ),
    d(
        "latency-monitor-threshold",
        None,
        Kind::Int(0, i64::MAX),
        "0",
        MUTABLE,
    ),
    d("latency-tracking", None, Kind::Bool, "yes", MUTABLE),
    d(
        "latency-tracking-info-percentiles",
        None,
        Kind::Percentiles,
        "50 99 99.9",
        MUTABLE,
    ),
    d("lazyfree-lazy-eviction", None, Kind::Bool, "no", MUTABLE),
    d("lazyfree-lazy-expire", None, Kind::Bool, "no", MUTABLE),
    d("lazyfree-lazy-server-del", None, Kind::Bool, "no", MUTABLE),
    d("lazyfree-lazy-user-del", None, Kind::Bool, "no", MUTABLE),
    d("lazyfree-lazy-user-flush", None, Kind::Bool, "no", MUTABLE),
    d("lfu-decay-time", None, Kind::Int(0, I32), "1", MUTABLE),
    d("lfu-log-factor", None, Kind::Int(0, I32), "10", MUTABLE),
    d("list-compress-depth", None, Kind::Int(0, I32), "0", MUTABLE),
    d(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        Kind::Int(I32_MIN, I32),
        "-2",
        MUTABLE,
    ),
    d(
        "loading-process-events-interval-bytes",
        None,
        Kind::Int(1024, I32),
        "2097152",
        MUTABLE | HIDDEN,
    ),
    d("logfile", None, Kind::Text, "", 0),
    d("loglevel", None, Kind::Enum(LOGLEVEL), "notice", MUTABLE),
    d("masterauth", None, Kind::Text, "", MUTABLE | SENSITIVE),
    d("masteruser", None, Kind::Text, "", MUTABLE | SENSITIVE),
    d("maxclients", None, Kind::Int(1, U32), "10000", MUTABLE),
    d("maxmemory", None, Kind::Memory(0, u64::MAX), "0", MUTABLE),
    d(
        "maxmemory-clients",
        None,
        Kind::MemoryOrPercent,
        "0",
        MUTABLE,
    ),
    d(
        "maxmemory-eviction-tenacity",
        None,
        Kind::Int(0, 100),
        "10",
        MUTABLE,
    ),
    d(
        "maxmemory-policy",
        None,
        Kind::Enum(POLICIES),
        "noeviction",
        MUTABLE,
    ),
    d("maxmemory-samples", None, Kind::Int(1, I32), "5", MUTABLE),
    d(
        "min-replicas-max-lag",
        Some("min-slaves-max-lag"),
        Kind::Int(0, I32),
        "10",
        MUTABLE,
    ),
    d(
        "min-replicas-to-write",
        Some("min-slaves-to-write"),
        Kind::Int(0, I32),
        "0",
        MUTABLE,
    ),
    d("no-appendfsync-on-rewrite", None, Kind::Bool, "no", MUTABLE),
    d("notify-keyspace-events", None, Kind::Events, "", MUTABLE),
    d(
        "oom-score-adj",
        None,
        Kind::Enum(OOM_SCORE_ADJ),
        "no",
        MUTABLE,
    ),
    d(
        "oom-score-adj-values",
        None,
        Kind::OomValues,
        "0 200 800",
        MUTABLE,
    ),
    d("pidfile", None, Kind::Text, "", 0),
    d("port", None, Kind::Int(0, 65535), "6379", 0),
    d(
        "proc-title-template",
        None,
        Kind::Text,
        "{title} {listen-addr} {server-mode}",
        MUTABLE,
    ),
    d(
        "propagation-error-behavior",
        None,
        Kind::Enum(PROPAGATION_ERROR_BEHAVIOR),
        "ignore",
        MUTABLE,
    ),
    d("protected-mode", None, Kind::Bool, "yes", MUTABLE),
    d(
        "proto-max-bulk-len",
        None,
        Kind::Memory(1048576, i64::MAX as u64),
        "536870912",
        MUTABLE,
    ),
    d("rdb-del-sync-files", None, Kind::Bool, "no", MUTABLE),
    d(
        "rdb-key-save-delay",
        None,
        Kind::Int(I32_MIN, I32),
        "0",
        MUTABLE | HIDDEN,
    ),
    d(
        "rdb-save-incremental-fsync",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d("rdbchecksum", None, Kind::Bool, "yes", 0),
    d("rdbcompression", None, Kind::Bool, "yes", MUTABLE),
    d(
        "repl-backlog-size",
        None,
        Kind::Memory(1, i64::MAX as u64),
        "1048576",
        MUTABLE,
    ),
    d(
        "repl-backlog-ttl",
        None,
        Kind::Int(0, i64::MAX),
        "3600",
        MUTABLE,
    ),
    d("repl-disable-tcp-nodelay", None, Kind::Bool, "no", MUTABLE),
    d(
        "repl-diskless-load",
        None,
        Kind::Enum(REPL_DISKLESS_LOAD),
        "disabled",
        MUTABLE,
    ),
    d("repl-diskless-sync", None, Kind::Bool, "yes", MUTABLE),
    d(
        "repl-diskless-sync-delay",
        None,
        Kind::Int(0, I32),
        "5",
        MUTABLE,
    ),
    d(
        "repl-diskless-sync-max-replicas",
        None,
        Kind::Int(0, I32),
        "0",
        MUTABLE,
    ),
    d(
        "repl-ping-replica-period",
        Some("repl-ping-slave-period"),
        Kind::Int(1, I32),
        "10",
        MUTABLE,
    ),
    d("repl-timeout", None, Kind::Int(1, I32), "60", MUTABLE),
    d(
        "replica-announce-ip",
        Some("slave-announce-ip"),
        Kind::Text,
        "",
        MUTABLE,
    ),
    d(
        "replica-announce-port",
        Some("slave-announce-port"),
        Kind::Int(0, 65535),
        "0",
        MUTABLE,
    ),
    d("replica-announced", None, Kind::Bool, "yes", MUTABLE),
    d(
        "replica-ignore-disk-write-errors",
        None,
        Kind::Bool,
        "no",
        MUTABLE,
    ),
    d(
        "replica-ignore-maxmemory",
        Some("slave-ignore-maxmemory"),
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d(
        "replica-lazy-flush",
        Some("slave-lazy-flush"),
        Kind::Bool,
        "no",
        MUTABLE,
    ),
    d(
        "replica-priority",
        Some("slave-priority"),
        Kind::Int(0, I32),
        "100",
        MUTABLE,
    ),
    d(
        "replica-read-only",
        Some("slave-read-only"),
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d(
        "replica-serve-stale-data",
        Some("slave-serve-stale-data"),
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d("replicaof", Some("slaveof"), Kind::Only(""), "", 0),
    d("requirepass", None, Kind::Text, "", MUTABLE | SENSITIVE),
    d(
        "sanitize-dump-payload",
        None,
        Kind::Enum(SANITIZE_DUMP_PAYLOAD),
        "no",
        MUTABLE,
    ),
    d("save", None, Kind::Save, "", MUTABLE),
    d("server_cpulist", None, Kind::Text, "", 0),
    d(
        "set-max-intset-entries",
        None,
        Kind::Int(0, i64::MAX),
        "512",
        MUTABLE,
    ),
    d("set-proc-title", None, Kind::Bool, "yes", 0),
    d(
        "shutdown-on-sigint",
        None,
        Kind::ShutdownFlags,
        "default",
        MUTABLE,
    ),
    d(
        "shutdown-on-sigterm",
        None,
        Kind::ShutdownFlags,
        "default",
        MUTABLE,
    ),
    d("shutdown-timeout", None, Kind::Int(0, I32), "10", MUTABLE),
    d(
        "slowlog-log-slower-than",
        None,
        Kind::Int(-1, i64::MAX),
        "10000",
        MUTABLE,
    ),
    d(
        "slowlog-max-len",
        None,
        Kind::Int(0, i64::MAX),
        "128",
        MUTABLE,
    ),
    d("socket-mark-id", None, Kind::Int(0, U32), "0", 0),
    d(
        "stop-writes-on-bgsave-error",
        None,
        Kind::Bool,
        "yes",
        MUTABLE,
    ),
    d(
        "stream-node-max-bytes",
        None,
        Kind::Memory(0, i64::MAX as u64),
        "4096",
        MUTABLE,
    ),
    d(
        "stream-node-max-entries",
        None,
        Kind::Int(0, i64::MAX),
        "100",
        MUTABLE,
    ),
    d("supervised", None, Kind::Enum(SUPERVISED), "no", 0),
    d("syslog-enabled", None, Kind::Only("no"), "no", 0),
    d(
        "syslog-facility",
        None,
        Kind::Enum(SYSLOG_FACILITY),
        "local0",
        0,
    ),
    d("syslog-ident", None, Kind::Text, "redis", 0),
    d("tcp-backlog", None, Kind::Int(0, I32), "511", 0),
    d("tcp-keepalive", None, Kind::Int(0, I32), "300", MUTABLE),
    d("timeout", None, Kind::Int(0, I32), "0", MUTABLE),
    d(
        "tls-auth-clients",
        None,
        Kind::Enum(TLS_AUTH_CLIENTS),
        "yes",
        MUTABLE,
    ),
    d("tls-ca-cert-dir", None, Kind::Text, "", MUTABLE),
    d("tls-ca-cert-file", None, Kind::Text, "", MUTABLE),
    d("tls-cert-file", None, Kind::Text, "", MUTABLE),
    d("tls-ciphers", None, Kind::Text, "", MUTABLE),
    d("tls-ciphersuites", None, Kind::Text, "", MUTABLE),
    d("tls-client-cert-file", None, Kind::Text, "", MUTABLE),
    d("tls-client-key-file", None, Kind::Text, "", MUTABLE),
    d("tls-client-key-file-pass", None, Kind::Text, "", MUTABLE),
    d("tls-cluster", None, Kind::Bool, "no", MUTABLE),
    d("tls-dh-params-file", None, Kind::Text, "", MUTABLE),
    d("tls-key-file", None, Kind::Text, "", MUTABLE),
    d("tls-key-file-pass", None, Kind::Text, "", MUTABLE),
    d("tls-port", None, Kind::Only("0"), "0", MUTABLE),
    d("tls-prefer-server-ciphers", None, Kind::Bool, "no", MUTABLE),
    d("tls-protocols", None, Kind::Text, "", MUTABLE),
    d("tls-replication", None, Kind::Bool, "no", MUTABLE),
    d(
        "tls-session-cache-size",
        None,
        Kind::Int(0, I32),
        "20480",
        MUTABLE,
    ),
    d(
        "tls-session-cache-timeout",
        None,
        Kind::Int(0, I32),
        "300",
        MUTABLE,
    ),
    d("tls-session-caching", None, Kind::Bool, "yes", MUTABLE),
    d(
        "tracking-table-max-keys",
        None,
        Kind::Int(0, i64::MAX),
        "1000000",
        MUTABLE,
    ),
    d("unixsocket", None, Kind::Only(""), "", 0),
    d("unixsocketperm", None, Kind::Octal(0, 511), "0", 0),
    d(
        "use-exit-on-panic",
        None,
        Kind::Bool,
        "no",
        MUTABLE | HIDDEN,
    ),
    d(
        "watchdog-period",
        None,
        Kind::Int(0, I32),
        "0",
        MUTABLE | HIDDEN,
    ),
    d(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        Kind::Int(0, i64::MAX),
        "128",
        MUTABLE,
    ),
    d(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        Kind::Memory(0, i64::MAX as u64),
        "64",
        MUTABLE,
    ),
];

/// A yes-or-no directive, for checking the values of the ones that accept only `no`.
pub(super) const BOOL: Directive = d("", None, Kind::Bool, "no", 0);
/// A port directive, for checking the values of the ones that accept only `0`.
pub(super) const PORT: Directive = d("", None, Kind::Int(0, 65535), "0", 0);

/// The directive named `name` (any case), by its name or its alias, and whether `name` is
/// the alias.
pub(super) fn lookup(name: &str) -> Option<(&'static Directive, bool)> {
    let lower = name.to_ascii_lowercase();
    if let Ok(i) = DIRECTIVES.binary_search_by(|d| d.name.cmp(lower.as_str())) {
        return Some((&DIRECTIVES[i], false));
    }
    DIRECTIVES
        .iter()
        .find(|d| d.alias == Some(lower.as_str()))
        .map(|d| (d, true))
}
