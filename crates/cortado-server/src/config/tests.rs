use super::*;

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("cortado-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn directives_table_is_sorted_and_defaults_validate() {
    assert!(DIRECTIVES.windows(2).all(|w| w[0].name < w[1].name));
    for d in DIRECTIVES {
        let args: Vec<&str> = if is_multi(d) && !d.default.is_empty() {
            d.default.split(' ').collect()
        } else if is_multi(d) {
            Vec::new()
        } else {
            vec![d.default]
        };
        if !matches!(d.kind, Kind::Dir) {
            assert_eq!(validate(d, &args).as_deref(), Ok(d.default), "{}", d.name);
        }
    }
}

#[test]
fn parse_memory_takes_redis_units_only() {
    assert_eq!(parse_memory("1gb"), Some(1 << 30));
    assert_eq!(parse_memory("1G"), Some(1_000_000_000));
    assert_eq!(parse_memory("100mb"), Some(100 << 20));
    assert_eq!(parse_memory("5k"), Some(5000));
    assert_eq!(parse_memory("42"), Some(42));
    for bad in ["1x", "-1", "gb", "", " 1", "1.5gb", "1 gb"] {
        assert_eq!(parse_memory(bad), None, "{bad:?}");
    }
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
    let err = config.load_text(b"timeout 1 2\n", "test.conf").unwrap_err();
    assert_eq!(
        err.0,
        "test.conf, line 1: 'timeout': wrong number of arguments"
    );
    assert_eq!(config.get("port"), Some("7000"));
}

#[test]
fn load_text_takes_a_stock_redis_conf() {
    // Directives of Debian's /etc/redis/redis.conf for Redis 7.0, which Cortado accepts.
    let text = b"bind 127.0.0.1 -::1\nprotected-mode yes\nport 6379\ntcp-backlog 511\ntimeout 0\n\
tcp-keepalive 300\ndaemonize no\npidfile /run/redis/redis-server.pid\nloglevel notice\n\
logfile \"\"\ndatabases 16\nalways-show-logo no\nset-proc-title yes\n\
proc-title-template \"{title} {listen-addr} {server-mode}\"\nstop-writes-on-bgsave-error yes\n\
rdbcompression yes\nrdbchecksum yes\ndbfilename dump.rdb\nrdb-del-sync-files no\n\
repl-diskless-sync yes\nrepl-diskless-sync-delay 5\nrepl-diskless-sync-max-replicas 0\n\
repl-diskless-load disabled\nrepl-disable-tcp-nodelay no\nreplica-priority 100\n\
acllog-max-len 128\nlazyfree-lazy-eviction no\noom-score-adj no\noom-score-adj-values 0 200 800\n\
disable-thp yes\nappendonly no\nappendfilename \"appendonly.aof\"\nappenddirname \"appendonlydir\"\n\
appendfsync everysec\nno-appendfsync-on-rewrite no\nauto-aof-rewrite-percentage 100\n\
auto-aof-rewrite-min-size 64mb\naof-load-truncated yes\naof-use-rdb-preamble yes\n\
aof-timestamp-enabled no\nslowlog-log-slower-than 10000\nslowlog-max-len 128\n\
latency-monitor-threshold 0\nnotify-keyspace-events \"\"\nhash-max-listpack-entries 512\n\
hash-max-listpack-value 64\nlist-max-listpack-size -2\nlist-compress-depth 0\n\
set-max-intset-entries 512\nzset-max-listpack-entries 128\nzset-max-listpack-value 64\n\
hll-sparse-max-bytes 3000\nstream-node-max-bytes 4096\nstream-node-max-entries 100\n\
activerehashing yes\nclient-output-buffer-limit normal 0 0 0\n\
client-output-buffer-limit replica 256mb 64mb 60\nclient-output-buffer-limit pubsub 32mb 8mb 60\n\
hz 10\ndynamic-hz yes\naof-rewrite-incremental-fsync yes\nrdb-save-incremental-fsync yes\n\
jemalloc-bg-thread yes\nsave 900 1\nsave 300 10\n";
    let mut config = Config::default();
    config.load_text(text, "redis.conf").unwrap();
    assert_eq!(config.get("save"), Some("900 1 300 10"));
    assert_eq!(
        config.get("client-output-buffer-limit"),
        Some("normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
    );
    assert_eq!(config.get("auto-aof-rewrite-min-size"), Some("67108864"));
    // What asks for a feature Cortado does not have fails, clearly.
    let err = config
        .load_text(b"appendonly yes\n", "redis.conf")
        .unwrap_err();
    assert_eq!(
        err.0,
        "redis.conf, line 1: 'appendonly': not supported by Cortado: only 'no' is accepted"
    );
}

#[test]
fn from_args_command_line_overrides_file() {
    let scratch = Scratch::new("config-args");
    let path = scratch.0.join("c.conf");
    std::fs::write(&path, "port 7001\nmaxmemory 1mb\n").unwrap();
    let args: Vec<String> = [
        path.to_str().unwrap(),
        "--port",
        "7002",
        "--save",
        "",
        "--client-output-buffer-limit",
        "normal 1mb 0 0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let config = Config::from_args(&args).unwrap();
    let settings = config.settings();
    assert_eq!(settings.port, 7002);
    assert_eq!(settings.maxmemory, 1 << 20);
    assert_eq!(settings.output_limit_normal.hard, 1 << 20);
    assert_eq!(config.get("save"), Some(""));
}

#[test]
fn include_reads_another_file_and_stops_at_a_loop() {
    let scratch = Scratch::new("config-include");
    let inner = scratch.0.join("inner.conf");
    let outer = scratch.0.join("outer.conf");
    std::fs::write(&inner, "timeout 7\n").unwrap();
    std::fs::write(&outer, format!("include {}\nport 7003\n", inner.display())).unwrap();
    let mut config = Config::default();
    config.load_file(&outer).unwrap();
    assert_eq!(config.get("timeout"), Some("7"));
    let looping = scratch.0.join("loop.conf");
    std::fs::write(&looping, format!("include {}\n", looping.display())).unwrap();
    let err = Config::default().load_file(&looping).unwrap_err();
    assert!(err.0.ends_with("includes nest too deep"), "{}", err.0);
}

#[test]
fn set_all_is_all_or_nothing_with_redis_errors_in_redis_order() {
    let mut config = Config::default();
    let err = config
        .set_all(&[(b"timeout", b"5"), (b"maxmemory", b"1x")], true)
        .unwrap_err();
    assert_eq!(
        err,
        "CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(config.get("timeout"), Some("0"));
    assert_eq!(
        config.set_all(&[(b"foo", b"1")], true).unwrap_err(),
        "Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    // The first error wins; an unknown name after another error is not looked at.
    assert_eq!(
        config
            .set_all(&[(b"daemonize", b"yes"), (b"foo", b"bar")], true)
            .unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config"
    );
    assert_eq!(
        config
            .set_all(&[(b"timeout", b"1"), (b"TIMEOUT", b"2")], true)
            .unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'TIMEOUT') - duplicate parameter"
    );
    assert_eq!(
        config.set_all(&[(b"dir", b"/tmp")], true).unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
    );
    // A value error names the directive as Redis registers it: lowercase, alias kept.
    assert_eq!(
        config.set_all(&[(b"SLAVE-priority", b"x")], true).unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'slave-priority') - argument couldn't be parsed into an integer"
    );
    config
        .set_all(&[(b"timeout", b"5"), (b"maxmemory", b"2mb")], true)
        .unwrap();
    assert_eq!(config.get("maxmemory"), Some("2097152"));
    assert_eq!(config.settings().timeout, 5);
}

#[test]
fn values_are_kept_in_redis_canonical_form() {
    let mut config = Config::default();
    let set = |config: &mut Config, name: &[u8], value: &[u8]| {
        config.set_all(&[(name, value)], true).map(|()| {
            config
                .get(&String::from_utf8_lossy(name))
                .unwrap()
                .to_owned()
        })
    };
    assert_eq!(
        set(&mut config, b"notify-keyspace-events", b"KEAn").unwrap(),
        "AKE"
    );
    assert_eq!(
        set(&mut config, b"notify-keyspace-events", b"Eng").unwrap(),
        "gnE"
    );
    assert_eq!(
        set(&mut config, b"notify-keyspace-events", b"Ex$gd").unwrap(),
        "g$xdE"
    );
    assert_eq!(
        set(&mut config, b"maxmemory-clients", b"10%").unwrap(),
        "10%"
    );
    assert_eq!(
        set(&mut config, b"maxmemory-clients", b"101%").unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100"
    );
    assert_eq!(
        set(&mut config, b"loglevel", b"Verbose").unwrap(),
        "verbose"
    );
    assert_eq!(
        set(
            &mut config,
            b"latency-tracking-info-percentiles",
            b"50.5 99"
        )
        .unwrap(),
        "50.5 99"
    );
    assert_eq!(
        set(&mut config, b"shutdown-on-sigint", b"now save").unwrap(),
        "save now"
    );
    assert_eq!(
        set(&mut config, b"shutdown-on-sigint", b"nosave save").unwrap_err(),
        "CONFIG SET failed (possibly related to argument 'shutdown-on-sigint') - shutdown options SAVE and NOSAVE can't be used simultaneously"
    );
    assert_eq!(config.settings().hz, 10);
    set(&mut config, b"hz", b"0").unwrap();
    assert_eq!(config.settings().hz, 1);
}

#[test]
fn config_get_matches_as_redis() {
    let config = Config::default();
    let names = |patterns: &[&[u8]]| -> Vec<String> {
        config
            .matching(patterns)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(names(&[b"MAXMEMORY"]), ["MAXMEMORY"]);
    assert_eq!(names(&[b"maxmemory", b"MAXMEMORY"]), ["maxmemory"]);
    assert_eq!(names(&[b"slave-priority"]), ["slave-priority"]);
    assert!(names(&[b"*priority*"]).contains(&"slave-priority".to_owned()));
    // Hidden directives answer to their exact name only.
    assert_eq!(names(&[b"watchdog-period"]), ["watchdog-period"]);
    assert!(names(&[b"watchdog*"]).is_empty());
    assert_eq!(names(&[b"*"]).len(), 192);
}

#[test]
fn output_limits_merge_into_classes() {
    let mut config = Config::default();
    config
        .set_all(
            &[(b"client-output-buffer-limit", b"normal 1mb 512kb 10")],
            true,
        )
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
    let scratch = Scratch::new("config-rewrite");
    let path = scratch.0.join("c.conf");
    std::fs::write(&path, "# mine\nport 7001\ntimeout 3\nslave-priority 5\n").unwrap();
    let mut config = Config::from_args(&[path.to_str().unwrap().to_owned()]).unwrap();
    config
        .set_all(&[(b"timeout", b"9"), (b"maxmemory", b"1mb")], true)
        .unwrap();
    config.rewrite().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "# mine\nport 7001\ntimeout 9\nreplica-priority 5\nmaxmemory 1048576\n"
    );
    let again = Config::from_args(&[path.to_str().unwrap().to_owned()]).unwrap();
    assert_eq!(again.get("timeout"), Some("9"));
}
