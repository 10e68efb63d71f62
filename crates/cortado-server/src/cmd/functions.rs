//! Redis 7 functions: `FCALL`, `FCALL_RO` and `FUNCTION LOAD|LIST|DELETE|FLUSH|STATS|KILL|
//! DUMP|RESTORE|HELP`.
//!
//! The libraries live in the scripts' engine ([`crate::lua::functions`]); `FCALL` runs a
//! function as `EVAL` runs a script (`scripting::run_invocation`), every shard held, with the
//! function's flags (`no-writes`, `allow-oom`) checked as Redis 7.0 checks them.
//!
//! # Design
//!
//! - `FUNCTION STATS` and `FUNCTION KILL` are allowed while a script is busy, so they take
//!   neither the shards nor the engine: the counts and the running function are kept beside
//!   the engine ([`crate::lua::busy`], [`crate::lua::Scripts`]).
//! - The other subcommands take only the engine, as `SCRIPT LOAD` does; `FUNCTION LIST`
//!   lists libraries and functions by name (Redis's order is its hash table's).
//! - `FUNCTION DUMP` writes Redis's payload (RDB records), so a dump moves between Cortado
//!   and Redis 7.0 both ways.

use super::flags::*;
use super::scripting::{self, Invocation};
use super::{Args, CmdResult, Command, Ctx, Run, NO_KEYS};
use crate::lua::functions::{self, flag, Libraries};
use crate::protocol::ErrorReply;

command_constructor!("scripting");

/// The flags Redis 7.0 gives `FCALL`.
const FCALL: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLE_KEYS;

/// The function commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "fcall",
        -3,
        FCALL,
        NO_KEYS,
        "Invokes a function.",
        "7.0.0",
        fcall,
    ),
    cmd(
        "fcall_ro",
        -3,
        READONLY | FCALL,
        NO_KEYS,
        "Invokes a read-only function.",
        "7.0.0",
        fcall_ro,
    ),
    Command {
        name: "function",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "scripting",
        since: "7.0.0",
        summary: "Subcommands that manage the function libraries.",
        run: Run::Container(FUNCTION),
    },
];

/// `FUNCTION`'s subcommands.
const FUNCTION: &[Command] = &[
    cmd(
        "delete",
        3,
        WRITE | NOSCRIPT,
        NO_KEYS,
        "Deletes a library and its functions.",
        "7.0.0",
        delete,
    ),
    cmd(
        "dump",
        2,
        NOSCRIPT,
        NO_KEYS,
        "Dumps all libraries into a serialized binary payload.",
        "7.0.0",
        dump,
    ),
    cmd(
        "flush",
        -2,
        WRITE | NOSCRIPT,
        NO_KEYS,
        "Deletes all libraries and functions.",
        "7.0.0",
        flush,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        NO_KEYS,
        "Returns helpful text about the different subcommands.",
        "7.0.0",
        help,
    ),
    cmd(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        NO_KEYS,
        "Terminates a function during execution.",
        "7.0.0",
        kill,
    ),
    cmd(
        "list",
        -2,
        NOSCRIPT,
        NO_KEYS,
        "Returns information about all libraries.",
        "7.0.0",
        list,
    ),
    cmd(
        "load",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        NO_KEYS,
        "Creates a library.",
        "7.0.0",
        load,
    ),
    cmd(
        "restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        NO_KEYS,
        "Restores all libraries from a payload.",
        "7.0.0",
        restore,
    ),
    cmd(
        "stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        NO_KEYS,
        "Returns information about a function during execution.",
        "7.0.0",
        stats,
    ),
];

fn fcall(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    call(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    call(ctx, args, true)
}

/// `FCALL[_RO] function numkeys [key ...] [arg ...]`: the function's reply.
fn call(ctx: &mut Ctx<'_>, args: Args<'_>, ro_command: bool) -> CmdResult {
    let (keys, argv) = scripting::keys_and_args(args)?;
    let name = String::from_utf8_lossy(args.get(1)).into_owned();
    scripting::with_engine(ctx, |ctx, engine| {
        let def = engine
            .libraries
            .functions
            .get(&name)
            .cloned()
            .ok_or_else(|| ErrorReply::err("Function not found"))?;
        let busy = &ctx.server.scripts.busy;
        busy.set_running_function(&def.name, args);
        let invocation = Invocation {
            function: &def.callback,
            name: def.name.as_bytes(),
            is_function: true,
            flags: Some(def.flags),
            ro_command,
        };
        let result = scripting::run_invocation(ctx, engine, &invocation, keys, argv);
        busy.clear_running_function();
        result
    })
}

/// Runs `f` on the engine's libraries (the engine alone held, as `SCRIPT LOAD`), then
/// publishes their counts for `FUNCTION STATS`.
fn with_libraries<T>(
    ctx: &mut Ctx<'_>,
    f: impl FnOnce(&mut crate::lua::Engine) -> Result<T, ErrorReply>,
) -> Result<T, ErrorReply> {
    let scripts = &ctx.server.scripts;
    let mut guard = scripts.lock();
    let engine = scripting::engine(ctx, &mut guard)?;
    let result = f(engine);
    scripts.set_function_counts(
        engine.libraries.libraries.len(),
        engine.libraries.function_count(),
    );
    result
}

/// `FUNCTION LOAD [REPLACE] code`: the library's name.
fn load(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut replace = false;
    let mut at = 2;
    while at < args.len() - 1 {
        if args.is(at, "replace") {
            replace = true;
        } else {
            return Err(ErrorReply::err(format!(
                "Unknown option given: {}",
                String::from_utf8_lossy(args.get(at))
            )));
        }
        at += 1;
    }
    let code = args.get(args.len() - 1);
    let name = with_libraries(ctx, |engine| {
        let mut libraries = std::mem::take(&mut engine.libraries);
        let result = engine.load_library(&mut libraries, code, replace);
        engine.libraries = libraries;
        result.map_err(ErrorReply::err)
    })?;
    ctx.reply.bulk(name.as_bytes());
    Ok(())
}

/// `FUNCTION DELETE library`: OK, or an error if there is no such library.
fn delete(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let name = String::from_utf8_lossy(args.get(2)).into_owned();
    with_libraries(ctx, |engine| {
        if engine.libraries.delete(&name) {
            Ok(())
        } else {
            Err(ErrorReply::err("Library not found"))
        }
    })?;
    ctx.reply.ok();
    Ok(())
}

/// `FUNCTION FLUSH [ASYNC|SYNC]`: OK, every library dropped (both modes at once).
fn flush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    match args.len() {
        2 => {}
        3 if args.is(2, "async") || args.is(2, "sync") => {}
        3 => {
            return Err(ErrorReply::err(
                "FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
        _ => return Err(super::subcommand_syntax_error(args)),
    }
    with_libraries(ctx, |engine| {
        engine.libraries = Libraries::default();
        Ok(())
    })?;
    ctx.reply.ok();
    Ok(())
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`: each library (matching the pattern)
/// with its engine, its functions (name, description, flags) and, asked for, its code.
fn list(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut at = 2;
    while at < args.len() {
        if args.is(at, "withcode") && !with_code {
            with_code = true;
        } else if args.is(at, "libraryname") && pattern.is_none() {
            if at + 1 >= args.len() {
                return Err(ErrorReply::err("library name argument was not given"));
            }
            at += 1;
            pattern = Some(args.get(at));
        } else {
            return Err(ErrorReply::err(format!(
                "Unknown argument {}",
                String::from_utf8_lossy(args.get(at))
            )));
        }
        at += 1;
    }
    let mut guard = ctx.server.scripts.lock();
    let engine = scripting::engine(ctx, &mut guard)?;
    let libraries = &engine.libraries;
    let shown: Vec<_> = libraries
        .libraries
        .iter()
        .filter(|(name, _)| {
            pattern.is_none_or(|p| crate::glob::glob_match(p, name.as_bytes(), false))
        })
        .collect();
    let reply = &mut *ctx.reply;
    reply.array(shown.len());
    for (name, library) in shown {
        reply.map(if with_code { 4 } else { 3 });
        reply.bulk(b"library_name");
        reply.bulk(name.as_bytes());
        reply.bulk(b"engine");
        reply.bulk(b"LUA");
        reply.bulk(b"functions");
        reply.array(library.functions.len());
        for f in &library.functions {
            let def = &libraries.functions[f];
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(def.name.as_bytes());
            reply.bulk(b"description");
            match &def.description {
                Some(d) => reply.bulk(d.as_bytes()),
                None => reply.null(),
            }
            reply.bulk(b"flags");
            let names: Vec<&str> = flag::NAMES
                .iter()
                .filter(|(bit, _)| def.flags & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            reply.set(names.len());
            for n in names {
                reply.simple(n);
            }
        }
        if with_code {
            reply.bulk(b"library_code");
            reply.bulk(&library.code);
        }
    }
    Ok(())
}

/// `FUNCTION STATS`: the running function (name, command, milliseconds) or nil, and the
/// engine's counts; Redis's `-BUSY` while an `EVAL` script is busy.
fn stats(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let scripts = &ctx.server.scripts;
    let busy = &scripts.busy;
    let running = busy.running_function();
    if running.is_none() && busy.timed_out() {
        return Err(busy.refusal());
    }
    let (libraries, functions) = scripts.function_counts();
    let reply = &mut *ctx.reply;
    reply.map(2);
    reply.bulk(b"running_script");
    match running {
        None => reply.null(),
        Some((name, command, millis)) => {
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(name.as_bytes());
            reply.bulk(b"command");
            reply.array(command.len());
            for arg in &command {
                reply.bulk(arg);
            }
            reply.bulk(b"duration_ms");
            reply.int(i64::try_from(millis).unwrap_or(i64::MAX));
        }
    }
    reply.bulk(b"engines");
    reply.map(1);
    reply.bulk(b"LUA");
    reply.map(2);
    reply.bulk(b"libraries_count");
    reply.int(libraries as i64);
    reply.bulk(b"functions_count");
    reply.int(functions as i64);
    Ok(())
}

/// `FUNCTION KILL`: OK once the running function is asked to stop (see
/// [`crate::lua::busy::Busy::kill`]).
fn kill(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.server.scripts.busy.kill(false)?;
    ctx.reply.ok();
    Ok(())
}

/// `FUNCTION DUMP`: every library's code in Redis's payload.
fn dump(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let mut guard = ctx.server.scripts.lock();
    let engine = scripting::engine(ctx, &mut guard)?;
    let payload = functions::dump(
        engine
            .libraries
            .libraries
            .values()
            .map(|l| l.code.as_slice()),
    );
    drop(guard);
    ctx.reply.bulk(&payload);
    Ok(())
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: OK once every library of the payload
/// loaded, on its own, then joined (`FLUSH`: in place of all; `APPEND`, the default: a name taken is an error;
/// `REPLACE`: in place of those of the same name), or an error and nothing changed.
fn restore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    let policy = match args.len() {
        3 => Policy::Append,
        4 if args.is(3, "flush") => Policy::Flush,
        4 if args.is(3, "append") => Policy::Append,
        4 if args.is(3, "replace") => Policy::Replace,
        4 => {
            return Err(ErrorReply::err(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
        _ => return Err(super::subcommand_syntax_error(args)),
    };
    let codes = functions::undump(args.get(2))
        .ok_or_else(|| ErrorReply::err("DUMP payload version or checksum are wrong"))?;
    with_libraries(ctx, |engine| {
        let mut incoming = Libraries::default();
        for code in &codes {
            engine
                .load_library(&mut incoming, code, false)
                .map_err(ErrorReply::err)?;
        }
        let mut libraries = match policy {
            Policy::Flush => Libraries::default(),
            _ => engine.libraries.clone(),
        };
        libraries
            .join(incoming, policy == Policy::Replace)
            .map_err(ErrorReply::err)?;
        engine.libraries = libraries;
        Ok(())
    })?;
    ctx.reply.ok();
    Ok(())
}

/// `FUNCTION HELP`: the subcommands, a few lines each.
fn help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    Both modes flush synchronously here.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
    Ok(())
}
