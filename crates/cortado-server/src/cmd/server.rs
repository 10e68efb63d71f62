//! Server commands: `INFO`, `CONFIG`, `DBSIZE`, `FLUSHDB`, `FLUSHALL`, `SWAPDB`,
//! `TIME`, `LASTSAVE`, `SHUTDOWN`, `SLOWLOG`, `MONITOR`, `DEBUG`, and `FUNCTION FLUSH`.

use std::time::Duration;

use super::flags::*;
use super::{syntax_error, Args, CmdResult, Command, Ctx, Run, NO_KEYS};
use crate::protocol::ErrorReply;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        name,
        arity,
        flags,
        keys: NO_KEYS,
        group: "server",
        since,
        summary,
        run: Run::Handler(handler),
    }
}

const fn container(
    name: &'static str,
    summary: &'static str,
    since: &'static str,
    subs: &'static [Command],
) -> Command {
    Command {
        name,
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "server",
        since,
        summary,
        run: Run::Container(subs),
    }
}

const CONFIG: &[Command] = &[
    cmd(
        "get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Returns the directives matching patterns, with their values.",
        "2.0.0",
        config_get,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Lists the CONFIG subcommands.",
        "5.0.0",
        config_help,
    ),
    cmd(
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Zeroes the counters INFO reports.",
        "2.0.0",
        config_resetstat,
    ),
    cmd(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Writes the current settings back to the configuration file.",
        "2.8.0",
        config_rewrite,
    ),
    cmd(
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Changes directives at run time, all of them or none.",
        "2.0.0",
        config_set,
    ),
];

const SLOWLOG: &[Command] = &[
    cmd(
        "get",
        -2,
        ADMIN | LOADING | STALE,
        "Returns the newest entries of the slow log.",
        "2.2.12",
        slowlog_get,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Lists the SLOWLOG subcommands.",
        "6.2.0",
        slowlog_help,
    ),
    cmd(
        "len",
        2,
        ADMIN | LOADING | STALE,
        "Counts the entries of the slow log.",
        "2.2.12",
        slowlog_len,
    ),
    cmd(
        "reset",
        2,
        ADMIN | LOADING | STALE,
        "Empties the slow log.",
        "2.2.12",
        slowlog_reset,
    ),
];

/// The server family's commands.
pub const COMMANDS: &[Command] = &[
    container(
        "config",
        "Commands that read and change the settings.",
        "2.0.0",
        CONFIG,
    ),
    cmd(
        "dbsize",
        1,
        READONLY | FAST,
        "Counts the keys of the selected database.",
        "1.0.0",
        dbsize,
    ),
    cmd(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED,
        "Commands for testing and diagnosing the server.",
        "1.0.0",
        debug,
    ),
    cmd(
        "flushall",
        -1,
        WRITE,
        "Deletes every key of every database.",
        "1.0.0",
        flushall,
    ),
    cmd(
        "flushdb",
        -1,
        WRITE,
        "Deletes every key of the selected database.",
        "1.0.0",
        flushdb,
    ),
    cmd(
        "info",
        -1,
        LOADING | STALE,
        "Reports the server's state and counters, by section.",
        "1.0.0",
        info,
    ),
    cmd(
        "lastsave",
        1,
        LOADING | STALE | FAST,
        "Returns the Unix time of the last save to disk.",
        "1.0.0",
        lastsave,
    ),
    cmd(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Streams every command the server runs to this connection.",
        "1.0.0",
        monitor,
    ),
    cmd(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        "Stops the server.",
        "1.0.0",
        shutdown,
    ),
    container(
        "slowlog",
        "Commands about the log of slow commands.",
        "2.2.12",
        SLOWLOG,
    ),
    cmd(
        "swapdb",
        3,
        WRITE | FAST,
        "Exchanges the contents of two databases.",
        "4.0.0",
        swapdb,
    ),
    cmd(
        "time",
        1,
        LOADING | STALE | FAST,
        "Returns the server's clock in seconds and microseconds.",
        "2.6.0",
        time,
    ),
];

/// Writes a `HELP` reply: Redis's first line, `lines`, then `HELP`'s own entry.
pub fn help(ctx: &mut Ctx<'_>, command: &str, lines: &[&str]) {
    ctx.reply.array(lines.len() + 3);
    ctx.reply.simple(&format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        ctx.reply.simple(line);
    }
    ctx.reply.simple("HELP");
    ctx.reply.simple("    Prints this help.");
}

/// `DBSIZE`: the number of keys in the selected database.
fn dbsize(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let n = ctx.shards.dbsize(ctx.db());
    ctx.reply.int(n as i64);
    Ok(())
}

/// Whether a flush is asked to be asynchronous (`ASYNC`), or `SYNC`/nothing.
fn flush_mode(args: Args<'_>) -> Result<bool, ErrorReply> {
    match args.len() {
        1 => Ok(false),
        2 if args.is(1, "async") => Ok(true),
        2 if args.is(1, "sync") => Ok(false),
        _ => Err(syntax_error()),
    }
}

/// Drops the flushed caches, on another thread when asked to (`ASYNC`), so a large database's
/// memory is freed without holding up this client.
fn drop_caches(caches: Vec<crate::keyspace::Cache>, background: bool) {
    if background && !caches.is_empty() {
        std::thread::spawn(move || drop(caches));
    }
}

/// `FLUSHDB [ASYNC|SYNC]`: OK.
fn flushdb(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let background = flush_mode(args)?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock_all();
    ctx.server
        .keyspace
        .watches()
        .touch_db(db, |key| locked.shard(key).contains(db, key));
    let caches: Vec<_> = locked
        .shards()
        .into_iter()
        .filter_map(|(_, shard)| shard.flush(db))
        .collect();
    drop(locked);
    drop_caches(caches, background);
    ctx.reply.ok();
    Ok(())
}

/// `FLUSHALL [ASYNC|SYNC]`: OK.
fn flushall(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let background = flush_mode(args)?;
    let databases = ctx.server.keyspace.databases();
    let mut locked = ctx.shards.lock_all();
    for db in 0..databases {
        ctx.server
            .keyspace
            .watches()
            .touch_db(db, |key| locked.shard(key).contains(db, key));
    }
    let mut caches = Vec::new();
    for (_, shard) in locked.shards() {
        caches.extend((0..databases).filter_map(|db| shard.flush(db)));
    }
    drop(locked);
    drop_caches(caches, background);
    ctx.reply.ok();
    Ok(())
}

/// `SWAPDB index1 index2`: OK.
fn swapdb(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let a = args
        .int(1)
        .map_err(|_| ErrorReply::err("invalid first DB index"))?;
    let b = args
        .int(2)
        .map_err(|_| ErrorReply::err("invalid second DB index"))?;
    let n = ctx.server.keyspace.databases() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(ErrorReply::err("DB index is out of range"));
    }
    let (a, b) = (a as usize, b as usize);
    let mut locked = ctx.shards.lock_all();
    for db in [a, b] {
        ctx.server.keyspace.watches().touch_db(db, |key| {
            let shard = locked.shard(key);
            shard.contains(a, key) || shard.contains(b, key)
        });
    }
    for (_, shard) in locked.shards() {
        shard.swap(a, b);
    }
    // As Redis does, a client blocked on a key that the swap filled is served.
    for db in [a, b] {
        ctx.server.keyspace.waits().signal_db(db);
    }
    ctx.reply.ok();
    Ok(())
}

/// `TIME`: the Unix time as seconds and microseconds.
fn time(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let nanos = ctx.server.keyspace.time().now_nanos();
    ctx.reply.array(2);
    ctx.reply.bulk_int((nanos / 1_000_000_000) as i64);
    ctx.reply.bulk_int((nanos % 1_000_000_000 / 1000) as i64);
    Ok(())
}

/// `LASTSAVE`: nothing is ever saved, so the start time.
fn lastsave(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.started_unix as i64);
    Ok(())
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: no reply; the server stops (there is
/// nothing to save).
fn shutdown(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut abort = false;
    for i in 1..args.len() {
        if args.is(i, "abort") {
            abort = true;
        } else if !(args.is(i, "nosave")
            || args.is(i, "save")
            || args.is(i, "now")
            || args.is(i, "force"))
        {
            return Err(syntax_error());
        }
    }
    if abort {
        if args.len() > 2 {
            return Err(syntax_error());
        }
        return Err(ErrorReply::err("No shutdown in progress."));
    }
    let busy = &ctx.server.scripts.busy;
    if busy.timed_out() && !(1..args.len()).any(|i| args.is(i, "nosave")) {
        // As Redis: only SHUTDOWN NOSAVE stops a server whose script is busy (the server's
        // stop stops the script).
        return Err(busy.refusal());
    }
    tracing::warn!(id = ctx.client.id, "user requested shutdown");
    ctx.client.shutdown = true;
    Ok(())
}

/// `MONITOR`: OK, then a line for every command run (see [`crate::server::Monitors`]);
/// nothing if the client is a monitor already.
fn monitor(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    if ctx.shards.is_held() {
        // Inside EXEC, as Redis refuses a client that may not block there.
        return Err(ErrorReply::err(
            "MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if ctx.client.info.has_flag(crate::client::flag::MONITOR) {
        return Ok(());
    }
    ctx.server.monitors.add(&ctx.client.info);
    ctx.reply.ok();
    Ok(())
}

/// `DEBUG SLEEP seconds | LOG message | SET-ACTIVE-EXPIRE 0|1 | HELP`: what test harnesses
/// send. `SLEEP` holds every shard, as Redis, single-threaded, is busy for that long.
fn debug(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.is(1, "sleep") && args.len() == 3 {
        // Redis reads the seconds with strtod and sleeps for none if they are not a number
        // or negative.
        let seconds = leading_float(args.get(2)).max(0.0);
        let locked = ctx.shards.lock_all();
        if seconds.is_finite() {
            std::thread::sleep(Duration::from_secs_f64(seconds));
        }
        drop(locked);
        ctx.reply.ok();
    } else if args.is(1, "log") && args.len() == 3 {
        tracing::warn!("DEBUG LOG: {}", args.text(2));
        ctx.reply.ok();
    } else if args.is(1, "set-active-expire") && args.len() == 3 {
        // Redis reads the flag with atoi: anything but a non-zero number turns it off.
        let on = leading_float(args.get(2)) as i64 != 0;
        ctx.server
            .active_expire
            .store(on, std::sync::atomic::Ordering::Relaxed);
        ctx.reply.ok();
    } else if args.is(1, "help") && args.len() == 2 {
        help(
            ctx,
            "DEBUG",
            &[
                "LOG <message>",
                "    Write <message> to the server log.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not accessed (otherwise the Redis behavior). Setting it to 1 reenables back the default.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else {
        return Err(super::subcommand_syntax_error(args));
    }
    Ok(())
}

/// The number at the start of `bytes`, as C's `strtod` reads it (0 if there is none).
fn leading_float(bytes: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .filter(|n| !n.is_nan())
        .unwrap_or(0.0)
}

/// `CONFIG GET pattern [pattern ...]`: a map of every matching setting.
fn config_get(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let patterns: Vec<&[u8]> = args.from(2).iter().collect();
    let config = ctx.server.config.lock().unwrap_or_else(|p| p.into_inner());
    let matches = config.matching(&patterns);
    ctx.reply.map(matches.len());
    for (name, value) in matches {
        ctx.reply.bulk(name.as_bytes());
        ctx.reply.bulk(value.as_bytes());
    }
    Ok(())
}

/// `CONFIG SET parameter value [parameter value ...]`: OK; all or none are applied (see
/// [`crate::config::Config::set_all`]). Values of secret directives are redacted from the
/// slow log and `MONITOR`, whatever the outcome.
fn config_set(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() % 2 != 0 {
        return Err(syntax_error());
    }
    let names = (2..args.len()).step_by(2).map(|i| args.get(i));
    let secrets = crate::config::Config::secret_values(names);
    ctx.client
        .redacted
        .extend(secrets.into_iter().map(|i| i + 2));
    let pairs: Vec<(&[u8], &[u8])> = (2..args.len())
        .step_by(2)
        .map(|i| (args.get(i), args.get(i + 1)))
        .collect();
    let loopback = ctx.client.info.addr.ip().is_loopback();
    let mut config = ctx.server.config.lock().unwrap_or_else(|p| p.into_inner());
    config.set_all(&pairs, loopback).map_err(ErrorReply::err)?;
    ctx.server.publish_settings(&config, &ctx.shards);
    drop(config);
    ctx.reply.ok();
    Ok(())
}

/// `CONFIG RESETSTAT`: OK; the counters of `INFO` start again.
fn config_resetstat(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.server.reset_stats(&ctx.shards);
    ctx.reply.ok();
    Ok(())
}

/// `CONFIG REWRITE`: OK, once the start-up file gives the current settings.
fn config_rewrite(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let config = ctx.server.config.lock().unwrap_or_else(|p| p.into_inner());
    config.rewrite().map_err(ErrorReply::err)?;
    ctx.reply.ok();
    Ok(())
}

fn config_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    help(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(())
}

/// `SLOWLOG GET [count]`: the newest `count` entries (10 by default, -1 for all).
fn slowlog_get(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let count = if args.len() == 3 {
        let n = args.int(2).unwrap_or(i64::MIN);
        if n < -1 {
            return Err(ErrorReply::err(
                "count should be greater than or equal to -1",
            ));
        }
        if n == -1 {
            usize::MAX
        } else {
            n as usize
        }
    } else if args.len() == 2 {
        10
    } else {
        return Err(super::subcommand_syntax_error(args));
    };
    let entries = ctx.server.slowlog.newest(count);
    ctx.reply.array(entries.len());
    for entry in entries {
        ctx.reply.array(6);
        ctx.reply.int(entry.id as i64);
        ctx.reply.int(entry.time as i64);
        ctx.reply.int(entry.usec as i64);
        ctx.reply.array(entry.args.len());
        for arg in &entry.args {
            ctx.reply.bulk(arg);
        }
        ctx.reply.bulk(entry.addr.as_bytes());
        ctx.reply.bulk(entry.name.as_bytes());
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.slowlog.len() as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.server.slowlog.reset();
    ctx.reply.ok();
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(())
}

/// A byte count as Redis's `bytesToHuman` writes it (`1.58M`).
pub fn human_bytes(n: u64) -> String {
    let n = n as f64;
    const K: f64 = 1024.0;
    if n < K {
        format!("{n}B")
    } else if n < K * K {
        format!("{:.2}K", n / K)
    } else if n < K * K * K {
        format!("{:.2}M", n / (K * K))
    } else if n < K * K * K * K {
        format!("{:.2}G", n / (K * K * K))
    } else {
        format!("{:.2}T", n / (K * K * K * K))
    }
}

/// `INFO [section ...]`: the server's figures in Redis's sections and field names (see
/// [`crate::info`]).
fn info(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let text = crate::info::render(ctx.server, &ctx.shards, args.from(1).iter())?;
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}
