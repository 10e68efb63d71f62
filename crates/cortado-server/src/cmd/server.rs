//! Server commands: `INFO`, `CONFIG`, `COMMAND`, `DBSIZE`, `FLUSHDB`, `FLUSHALL`, `SWAPDB`,
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
        "Returns the effective values of configuration parameters.",
        "2.0.0",
        config_get,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        config_help,
    ),
    cmd(
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Resets the server's statistics.",
        "2.0.0",
        config_resetstat,
    ),
    cmd(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Persists the effective configuration to file.",
        "2.8.0",
        config_rewrite,
    ),
    cmd(
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Sets configuration parameters in-flight.",
        "2.0.0",
        config_set,
    ),
];

const COMMAND: &[Command] = &[
    cmd(
        "count",
        2,
        LOADING | STALE,
        "Returns a count of commands.",
        "2.8.13",
        command_count,
    ),
    cmd(
        "docs",
        -2,
        LOADING | STALE,
        "Returns documentary information about one, multiple or all commands.",
        "7.0.0",
        command_docs,
    ),
    cmd(
        "getkeys",
        -3,
        LOADING | STALE,
        "Extracts the key names from an arbitrary command.",
        "2.8.13",
        command_getkeys,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        command_help,
    ),
    cmd(
        "info",
        -2,
        LOADING | STALE,
        "Returns information about one, multiple or all commands.",
        "2.8.13",
        command_info,
    ),
    cmd(
        "list",
        -2,
        LOADING | STALE,
        "Returns a list of command names.",
        "7.0.0",
        command_list,
    ),
];

const SLOWLOG: &[Command] = &[
    cmd(
        "get",
        -2,
        ADMIN | LOADING | STALE,
        "Returns the slow log's entries.",
        "2.2.12",
        slowlog_get,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Show helpful text about the different subcommands",
        "6.2.0",
        slowlog_help,
    ),
    cmd(
        "len",
        2,
        ADMIN | LOADING | STALE,
        "Returns the number of entries in the slow log.",
        "2.2.12",
        slowlog_len,
    ),
    cmd(
        "reset",
        2,
        ADMIN | LOADING | STALE,
        "Clears all entries from the slow log.",
        "2.2.12",
        slowlog_reset,
    ),
];

const FUNCTION: &[Command] = &[cmd(
    "flush",
    -2,
    WRITE | NOSCRIPT,
    "Deletes all libraries and functions.",
    "7.0.0",
    function_flush,
)];

/// The server family's commands.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "command",
        arity: -1,
        flags: LOADING | STALE,
        keys: NO_KEYS,
        group: "server",
        since: "2.8.13",
        summary: "Returns detailed information about all commands.",
        run: Run::Both(command_all, COMMAND),
    },
    container(
        "config",
        "A container for server configuration commands.",
        "2.0.0",
        CONFIG,
    ),
    cmd(
        "dbsize",
        1,
        READONLY | FAST,
        "Returns the number of keys in the database.",
        "1.0.0",
        dbsize,
    ),
    cmd(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "A container for debugging commands.",
        "1.0.0",
        debug,
    ),
    cmd(
        "flushall",
        -1,
        WRITE,
        "Removes all keys from all databases.",
        "1.0.0",
        flushall,
    ),
    cmd(
        "flushdb",
        -1,
        WRITE,
        "Remove all keys from the current database.",
        "1.0.0",
        flushdb,
    ),
    Command {
        name: "function",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "scripting",
        since: "7.0.0",
        summary: "A container for function commands.",
        run: Run::Container(FUNCTION),
    },
    cmd(
        "info",
        -1,
        LOADING | STALE,
        "Returns information and statistics about the server.",
        "1.0.0",
        info,
    ),
    cmd(
        "lastsave",
        1,
        LOADING | STALE | FAST,
        "Returns the Unix timestamp of the last successful save to disk.",
        "1.0.0",
        lastsave,
    ),
    cmd(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Listens for all requests received by the server in real-time.",
        "1.0.0",
        monitor,
    ),
    cmd(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        "1.0.0",
        shutdown,
    ),
    container(
        "slowlog",
        "A container for slow log commands.",
        "2.2.12",
        SLOWLOG,
    ),
    cmd(
        "swapdb",
        3,
        WRITE | FAST,
        "Swaps two Redis databases.",
        "4.0.0",
        swapdb,
    ),
    cmd(
        "time",
        1,
        LOADING | STALE | FAST,
        "Returns the server time.",
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
    ctx.reply.simple("    Print this help.");
}

/// `DBSIZE`: the number of keys in the selected database.
fn dbsize(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let n = ctx.server.keyspace.dbsize(ctx.db());
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
    let mut locked = ctx.server.keyspace.lock_all();
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
    let mut locked = ctx.server.keyspace.lock_all();
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
    let mut locked = ctx.server.keyspace.lock_all();
    for (_, shard) in locked.shards() {
        shard.swap(a as usize, b as usize);
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
    tracing::warn!(id = ctx.client.id, "user requested shutdown");
    ctx.client.shutdown = true;
    Ok(())
}

/// `MONITOR`: OK, then every command other clients run, one line each.
fn monitor(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.ok();
    ctx.client.wants_monitor = true;
    Ok(())
}

/// `DEBUG SLEEP seconds | LOG message | SET-ACTIVE-EXPIRE 0|1 | HELP`: what test harnesses
/// send. `SLEEP` holds every shard, as Redis, single-threaded, is busy for that long.
fn debug(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.is(1, "sleep") && args.len() == 3 {
        let seconds = super::args::parse_float(args.get(2))
            .filter(|s| *s >= 0.0 && s.is_finite())
            .ok_or_else(|| ErrorReply::err("value is not a valid float"))?;
        let locked = ctx.server.keyspace.lock_all();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        drop(locked);
        ctx.reply.ok();
    } else if args.is(1, "log") && args.len() == 3 {
        tracing::warn!("DEBUG LOG: {}", args.text(2));
        ctx.reply.ok();
    } else if args.is(1, "set-active-expire") && args.len() == 3 {
        ctx.reply.ok();
    } else if args.is(1, "help") {
        help(
            ctx,
            "DEBUG",
            &[
                "LOG <message>",
                "    Write <message> to the server log.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Accepted for compatibility; expiry always runs.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else {
        return Err(ErrorReply::err(format!(
            "unknown subcommand '{}'. Try DEBUG HELP.",
            args.text(1)
        )));
    }
    Ok(())
}

/// `FUNCTION FLUSH [ASYNC|SYNC]`: OK (no function is kept yet).
fn function_flush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() > 3 || (args.len() == 3 && !(args.is(2, "async") || args.is(2, "sync"))) {
        return Err(syntax_error());
    }
    ctx.reply.ok();
    Ok(())
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

/// `CONFIG SET parameter value [parameter value ...]`: OK; all or none are applied.
fn config_set(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() % 2 != 0 {
        return Err(super::arity_error("config|set"));
    }
    let pairs: Vec<(&[u8], &[u8])> = (2..args.len())
        .step_by(2)
        .map(|i| (args.get(i), args.get(i + 1)))
        .collect();
    let mut config = ctx.server.config.lock().unwrap_or_else(|p| p.into_inner());
    config.set_all(&pairs).map_err(ErrorReply::err)?;
    ctx.server.publish_settings(&config);
    let settings = config.settings();
    drop(config);
    ctx.server
        .slowlog
        .configure(settings.slowlog_slower_than, settings.slowlog_max_len);
    ctx.reply.ok();
    Ok(())
}

/// `CONFIG RESETSTAT`: OK; the counters of `INFO` start again.
fn config_resetstat(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.server.stats.reset();
    ctx.server.slowlog.reset();
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
        let n = args.int(2)?;
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
        return Err(super::arity_error("slowlog|get"));
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

/// The ACL categories `COMMAND INFO` lists for a command, from its flags and family.
fn categories(command: &Command) -> Vec<&'static str> {
    let mut out = Vec::new();
    if command.flags & WRITE != 0 {
        out.push("@write");
    }
    if command.flags & READONLY != 0 {
        out.push("@read");
    }
    match command.group {
        "string" => out.push("@string"),
        "generic" => out.push("@keyspace"),
        "connection" => out.push("@connection"),
        "scripting" => out.push("@scripting"),
        _ => {}
    }
    if command.flags & ADMIN != 0 {
        out.push("@admin");
        out.push("@dangerous");
    }
    out.push(if command.flags & FAST != 0 {
        "@fast"
    } else {
        "@slow"
    });
    out
}

/// One command's `COMMAND INFO` entry (`id` in the table), with its subcommands.
fn write_info(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let entry = table.entry(id);
    let command = entry.command;
    let reply = &mut *ctx.reply;
    reply.array(10);
    reply.bulk(entry.full_name.as_bytes());
    reply.int(i64::from(command.arity));
    let flags: Vec<&str> = super::flags::NAMES
        .iter()
        .filter(|(f, _)| command.flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    reply.set(flags.len());
    for f in flags {
        reply.simple(f);
    }
    reply.int(i64::from(command.keys.first));
    reply.int(i64::from(command.keys.last));
    reply.int(i64::from(command.keys.step));
    let cats = categories(command);
    reply.set(cats.len());
    for c in cats {
        reply.simple(c);
    }
    reply.set(0);
    if command.keys.first == 0 {
        reply.array(0);
    } else {
        let keys = command.keys;
        let last = if keys.last < 0 {
            keys.last
        } else {
            keys.last - keys.first
        };
        reply.array(1);
        reply.map(3);
        reply.bulk(b"flags");
        reply.set(0);
        reply.bulk(b"begin_search");
        reply.map(2);
        reply.bulk(b"type");
        reply.bulk(b"index");
        reply.bulk(b"spec");
        reply.map(1);
        reply.bulk(b"index");
        reply.int(i64::from(keys.first));
        reply.bulk(b"find_keys");
        reply.map(2);
        reply.bulk(b"type");
        reply.bulk(b"range");
        reply.bulk(b"spec");
        reply.map(3);
        reply.bulk(b"lastkey");
        reply.int(i64::from(last));
        reply.bulk(b"keystep");
        reply.int(i64::from(keys.step));
        reply.bulk(b"limit");
        reply.int(0);
    }
    let subs = table.subcommands(id);
    reply.array(subs.len());
    for sub in subs {
        write_info(ctx, sub);
    }
}

/// The top-level commands' ids, in name order.
fn all_commands(ctx: &Ctx<'_>) -> Vec<usize> {
    let mut ids: Vec<usize> = ctx.server.commands.commands().map(|(_, id)| id).collect();
    ids.sort_by_key(|&id| ctx.server.commands.entry(id).full_name.clone());
    ids
}

/// `COMMAND`: every command's `COMMAND INFO` entry.
fn command_all(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() > 1 {
        return Err(ErrorReply::err(format!(
            "unknown subcommand '{}'. Try COMMAND HELP.",
            args.text(1)
        )));
    }
    let ids = all_commands(ctx);
    ctx.reply.array(ids.len());
    for id in ids {
        write_info(ctx, id);
    }
    Ok(())
}

/// `COMMAND COUNT`: the number of commands.
fn command_count(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let n = ctx.server.commands.commands().count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// The table id of `name`, or `container|sub`.
fn find(ctx: &Ctx<'_>, name: &[u8]) -> Option<usize> {
    let table = &ctx.server.commands;
    match name.iter().position(|&b| b == b'|') {
        Some(bar) => table
            .lookup(&name[..bar])
            .and_then(|id| table.lookup_sub(id, &name[bar + 1..])),
        None => table.lookup(name),
    }
}

/// `COMMAND INFO [name ...]`: each named command's entry (nil if unknown), or all.
fn command_info(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() == 2 {
        return command_all(ctx, args.from(1).from(1));
    }
    ctx.reply.array(args.len() - 2);
    for name in args.from(2).iter() {
        match find(ctx, name) {
            Some(id) => write_info(ctx, id),
            None => ctx.reply.null_array(),
        }
    }
    Ok(())
}

fn write_docs(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let command = table.entry(id).command;
    let subs = table.subcommands(id);
    let reply = &mut *ctx.reply;
    reply.map(if subs.is_empty() { 3 } else { 4 });
    reply.bulk(b"summary");
    reply.bulk(command.summary.as_bytes());
    reply.bulk(b"since");
    reply.bulk(command.since.as_bytes());
    reply.bulk(b"group");
    reply.bulk(command.group.as_bytes());
    if !subs.is_empty() {
        reply.bulk(b"subcommands");
        ctx.reply.map(subs.len());
        for sub in subs {
            let name = ctx.server.commands.entry(sub).full_name.clone();
            ctx.reply.bulk(name.as_bytes());
            write_docs(ctx, sub);
        }
    }
}

/// `COMMAND DOCS [name ...]`: a map from each known command to its summary, version and
/// family.
fn command_docs(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let ids: Vec<usize> = if args.len() == 2 {
        all_commands(ctx)
    } else {
        args.from(2)
            .iter()
            .filter_map(|name| find(ctx, name))
            .collect()
    };
    ctx.reply.map(ids.len());
    for id in ids {
        let name = ctx.server.commands.entry(id).full_name.clone();
        ctx.reply.bulk(name.as_bytes());
        write_docs(ctx, id);
    }
    Ok(())
}

/// Which commands `COMMAND LIST` shows.
type NameFilter = Box<dyn Fn(&Command, &str) -> bool>;

/// `COMMAND LIST [FILTERBY PATTERN pattern | ACLCAT category | MODULE name]`: command names.
fn command_list(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let ids = all_commands(ctx);
    let filter: NameFilter = match args.len() {
        2 => Box::new(|_, _| true),
        5 if args.is(2, "filterby") && args.is(3, "pattern") => {
            let pattern = args.get(4).to_vec();
            Box::new(move |_, name| crate::glob::glob_match(&pattern, name.as_bytes(), true))
        }
        5 if args.is(2, "filterby") && args.is(3, "aclcat") => {
            let cat = format!("@{}", args.text(4).to_ascii_lowercase());
            Box::new(move |c, _| categories(c).contains(&cat.as_str()))
        }
        5 if args.is(2, "filterby") && args.is(3, "module") => Box::new(|_, _| false),
        _ => return Err(syntax_error()),
    };
    let names: Vec<String> = ids
        .iter()
        .map(|&id| ctx.server.commands.entry(id))
        .filter(|e| filter(e.command, &e.full_name))
        .map(|e| e.full_name.clone())
        .collect();
    ctx.reply.array(names.len());
    for name in names {
        ctx.reply.bulk(name.as_bytes());
    }
    Ok(())
}

/// `COMMAND GETKEYS command [arg ...]`: the keys the command would touch.
fn command_getkeys(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let call = args.from(2);
    let Some(mut id) = ctx.server.commands.lookup(call.get(0)) else {
        return Err(ErrorReply::err("Invalid command specified"));
    };
    if call.len() >= 2 {
        if let Some(sub) = ctx.server.commands.lookup_sub(id, call.get(1)) {
            id = sub;
        }
    }
    let command = ctx.server.commands.entry(id).command;
    let argc = call.len() as i32;
    if (command.arity > 0 && command.arity != argc) || argc < -command.arity {
        return Err(ErrorReply::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = command.keys;
    if keys.first == 0 {
        return Err(ErrorReply::err("The command has no key arguments"));
    }
    let last = if keys.last < 0 {
        argc + keys.last
    } else {
        keys.last.min(argc - 1)
    };
    let positions: Vec<usize> = (keys.first..=last)
        .step_by(keys.step.max(1) as usize)
        .map(|i| i as usize)
        .collect();
    ctx.reply.array(positions.len());
    for i in positions {
        ctx.reply.bulk(call.get(i));
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "GETKEYS <full-command>",
            "    Return the keys from a full command.",
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

/// The sections `INFO` with no argument (or `default`) shows.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// `INFO [section ...]`: the server's figures in Redis's sections and field names.
fn info(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut sections: Vec<String> = Vec::new();
    for arg in args.from(1).iter() {
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match name.as_str() {
            "default" => sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string())),
            "all" | "everything" => {
                sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
                sections.push("commandstats".into());
            }
            _ => sections.push(name),
        }
    }
    if sections.is_empty() {
        sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    let mut text = String::new();
    let order = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "errorstats",
        "commandstats",
        "cluster",
        "keyspace",
    ];
    for section in order {
        if sections.iter().any(|s| s == section) {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            crate::info::section(ctx.server, section, &mut text)?;
        }
    }
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}
