//! Scripting: `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO`,
//! `SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP`.
//!
//! A script runs in the server's Lua engine ([`crate::lua`]) as one atomic step: `EVAL`
//! locks every shard (or, inside `EXEC`, uses the transaction's hold), then the engine, and
//! lends the shards to each command the script runs through `redis.call` or `redis.pcall`,
//! as `EXEC` lends them to its queued commands. Those commands pass Redis 7.0's script checks
//! (known command, arity, not `noscript`, no write from a read-only script, `-OOM`) and
//! reply into a buffer of their own, which is converted to Lua ([`crate::lua::convert`]).
//!
//! # Design
//!
//! - **Lock order**: the shards, then the engine, everywhere; `SCRIPT LOAD` takes only the
//!   engine. `EXEC` holds the shards when its `EVAL` takes the engine, so the other order
//!   would deadlock against a concurrent `EVAL`.
//! - **Keyspace events** of the script's commands are published once the script ends, put
//!   before the script's reply for a client subscribed to its own events (their commands'
//!   replies were written elsewhere).
//! - **Pipelined scripts** from one connection share one hold of every shard
//!   ([`ScriptHold`]), each still alone and with its own time: locking and releasing every
//!   shard was 15% of a script's instructions.
//! - **`redis.call`'s buffers** (arguments, reply) are kept per thread for the next call.
//! - **`SELECT`** inside a script changes the script's database only; the client's is restored.
//! - The formats: `EVAL script numkeys [key ...] [arg ...]`; `EVALSHA sha1 numkeys ...`;
//!   `SCRIPT LOAD script` replies the SHA1; `SCRIPT EXISTS sha1 ...` an array of 0/1;
//!   `SCRIPT FLUSH [ASYNC|SYNC]` drops every script (both modes synchronously).
//!
//! See `docs/decisions/0231-server-lua.md` for what was chosen and measured, and
//! `0233-server-script-path.md` for the script path's costs.

use mlua::{MultiValue, Value};

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Run, NO_KEYS};
use crate::keyspace::access::Shards;
use crate::lua::functions::flag as fflag;
use crate::lua::{convert, error_text, normalize_sha, CommandCall, Engine, ScriptError};
use crate::protocol::{ErrorReply, Reply};

command_constructor!("scripting");

/// The flags Redis 7.0 gives `EVAL` and `EVALSHA`.
const EVAL: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLE_KEYS;

/// The scripting commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "eval",
        -3,
        EVAL,
        NO_KEYS,
        "Runs a Lua script.",
        "2.6.0",
        eval,
    ),
    cmd(
        "eval_ro",
        -3,
        READONLY | EVAL,
        NO_KEYS,
        "Runs a read-only Lua script.",
        "7.0.0",
        eval_ro,
    ),
    cmd(
        "evalsha",
        -3,
        EVAL,
        NO_KEYS,
        "Runs a cached Lua script by its SHA1.",
        "2.6.0",
        evalsha,
    ),
    cmd(
        "evalsha_ro",
        -3,
        READONLY | EVAL,
        NO_KEYS,
        "Runs a cached read-only Lua script by its SHA1.",
        "7.0.0",
        evalsha_ro,
    ),
    Command {
        name: "script",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "scripting",
        since: "2.6.0",
        summary: "Subcommands that manage the script cache",
        run: Run::Container(SCRIPT),
    },
];

/// `SCRIPT`'s subcommands.
const SCRIPT: &[Command] = &[
    cmd(
        "exists",
        -3,
        NOSCRIPT,
        NO_KEYS,
        "Tells whether scripts are in the cache.",
        "2.6.0",
        script_exists,
    ),
    cmd(
        "flush",
        -2,
        NOSCRIPT,
        NO_KEYS,
        "Drops every cached script.",
        "2.6.0",
        script_flush,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        NO_KEYS,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        script_help,
    ),
    cmd(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        NO_KEYS,
        "Terminates a server-side Lua script during execution.",
        "2.6.0",
        script_kill,
    ),
    cmd(
        "load",
        3,
        NOSCRIPT | STALE,
        NO_KEYS,
        "Caches a script without running it.",
        "2.6.0",
        script_load,
    ),
];

/// How `EVAL` names its script.
#[derive(Clone, Copy)]
enum Source {
    Body,
    Sha,
}

fn eval(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    run(ctx, args, Source::Body, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    run(ctx, args, Source::Body, true)
}

fn evalsha(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    run(ctx, args, Source::Sha, false)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    run(ctx, args, Source::Sha, true)
}

fn noscript() -> ErrorReply {
    ErrorReply::new("NOSCRIPT No matching script. Please use EVAL.")
}

pub(super) fn lua_failure(error: mlua::Error) -> ErrorReply {
    ErrorReply::err(format!("Error running script: {error}"))
}

/// How many script commands run under one [`ScriptHold`] before it lets the shards go and
/// takes them again: a bound on how long other clients wait (64 short scripts take about a
/// millisecond here; Redis runs a whole read of commands without a pause).
pub const HOLD_RUNS: u32 = 64;

/// Every shard, kept by a connection from one script command to the next of a run of them
/// it read in one go (a pipeline), instead of locked and released for each. Each script
/// still runs alone and with its own time (read again for it), and the connection runs
/// nothing else meanwhile; other commands wait for the shards as they wait for a script's,
/// off the runtime's worker thread (the long-hold count stays raised while they are kept).
/// Released by any other command, by a script that leaves keyspace events to publish or
/// blocked clients to serve (both lock shards), after [`HOLD_RUNS`] scripts, and when
/// dropped. See `docs/decisions/0233-server-script-path.md`.
#[derive(Default)]
pub struct ScriptHold<'s> {
    locked: Option<crate::keyspace::Locked<'s>>,
    runs: u32,
}

impl<'s> ScriptHold<'s> {
    /// The shards `command` runs with: the hold for a script command (taken now if not
    /// held), its own locks for any other (the hold released first).
    pub(super) fn shards_for(
        &mut self,
        server: &'s crate::server::Server,
        command: &Command,
    ) -> Shards<'s> {
        let script = matches!(
            command.name,
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
        );
        if !script || self.runs >= HOLD_RUNS {
            self.release();
        }
        if !script {
            return Shards::new(&server.keyspace);
        }
        let locked = match self.locked.take() {
            Some(mut locked) => {
                locked.refresh_time();
                locked
            }
            None => {
                server.keyspace.begin_long_hold();
                server.keyspace.lock_all()
            }
        };
        self.runs += 1;
        Shards::holding(locked)
    }

    /// Keeps the shards a command ran with, if they are the hold's and the command left no
    /// events to publish or blocked clients to serve.
    pub(super) fn keep(&mut self, shards: Shards<'s>) {
        let Some(locked) = shards.into_held() else {
            return;
        };
        self.locked = Some(locked);
        if crate::notify::has_pending() || self.locked_keyspace_has_ready() {
            self.release();
        }
    }

    fn locked_keyspace_has_ready(&self) -> bool {
        self.locked
            .as_ref()
            .is_some_and(|locked| locked.keyspace().waits().has_ready())
    }

    /// Whether the shards are held.
    pub fn is_held(&self) -> bool {
        self.locked.is_some()
    }

    /// Lets the shards go, if held.
    pub fn release(&mut self) {
        if let Some(locked) = self.locked.take() {
            let keyspace = locked.keyspace();
            drop(locked);
            keyspace.end_long_hold();
        }
        self.runs = 0;
    }
}

impl Drop for ScriptHold<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// The engine of `guard`, made if there is none.
pub(super) fn engine<'g>(
    ctx: &Ctx<'_>,
    guard: &'g mut Option<Engine>,
) -> Result<&'g mut Engine, ErrorReply> {
    ctx.server.scripts.engine(guard).map_err(lua_failure)
}

/// `numkeys` at argument 2 and the keys and arguments after it, or Redis's errors.
pub(super) fn keys_and_args(args: Args<'_>) -> Result<(Args<'_>, Args<'_>), ErrorReply> {
    let numkeys = args.int(2)?;
    if numkeys < 0 {
        return Err(ErrorReply::err("Number of keys can't be negative"));
    }
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > args.len() - 3 {
        return Err(ErrorReply::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    Ok((args.from(3).prefix(numkeys), args.from(3 + numkeys)))
}

/// Runs `f` with every shard held (the transaction's, inside `EXEC`) and the engine.
pub(super) fn with_engine(
    ctx: &mut Ctx<'_>,
    f: impl FnOnce(&mut Ctx<'_>, &mut Engine) -> CmdResult,
) -> CmdResult {
    let server = ctx.server;
    // Before the shards are locked: a command that passed its look at the busy word an
    // instant before the script starts then waits for its shard off the runtime's worker.
    server.keyspace.begin_long_hold();
    let outer = (!ctx.shards.is_held())
        .then(|| std::mem::replace(&mut ctx.shards, Shards::holding(server.keyspace.lock_all())));
    let mut guard = server.scripts.lock();
    let result = match server.scripts.engine(&mut guard) {
        Ok(engine) => f(ctx, engine),
        Err(e) => Err(lua_failure(e)),
    };
    drop(guard);
    if let Some(outer) = outer {
        ctx.shards = outer;
    }
    server.keyspace.end_long_hold();
    result
}

/// Runs a script: the checks, the shards and the engine, then the script. See the
/// [module docs](self).
fn run(ctx: &mut Ctx<'_>, args: Args<'_>, source: Source, read_only: bool) -> CmdResult {
    let sha = match source {
        Source::Sha => Some(normalize_sha(args.get(1)).ok_or_else(noscript)?),
        Source::Body => None,
    };
    let (keys, argv) = keys_and_args(args)?;
    with_engine(ctx, |ctx, engine| {
        let sha = match sha {
            Some(sha) => sha,
            None => engine.load(args.get(1)).map_err(ErrorReply::err)?,
        };
        let (function, flags) = engine.get(&sha).ok_or_else(noscript)?;
        let invocation = Invocation {
            function,
            name: &sha,
            is_function: false,
            flags: *flags,
            ro_command: read_only,
        };
        run_invocation(ctx, engine, &invocation, keys, argv)
    })
}

/// One script or function to run, and how it was called.
pub(super) struct Invocation<'f> {
    /// The script's chunk or the registered function.
    pub function: &'f mlua::Function,
    /// What its errors name: the script's SHA1 or the function's name.
    pub name: &'f [u8],
    /// A function (`FCALL`): called with its keys and arguments, stopped by `FUNCTION KILL`.
    pub is_function: bool,
    /// The flags of its `#!lua` line or its registration; `None` for a script without one
    /// (Redis's older rules: `EVAL_RO` only makes it read-only).
    pub flags: Option<u8>,
    /// Called by `EVAL_RO`, `EVALSHA_RO` or `FCALL_RO`.
    pub ro_command: bool,
}

/// Runs `invocation` with the shards and the engine held: Redis 7.0's checks of its flags,
/// then the script, its reply or error.
pub(super) fn run_invocation(
    ctx: &mut Ctx<'_>,
    engine: &Engine,
    invocation: &Invocation<'_>,
    keys: Args<'_>,
    argv: Args<'_>,
) -> CmdResult {
    let flags = invocation.flags.unwrap_or(0);
    let no_writes = flags & fflag::NO_WRITES != 0;
    if invocation.flags.is_some() {
        if invocation.ro_command && !no_writes {
            return Err(ErrorReply::err(
                "Can not execute a script with write flag using *_ro command.",
            ));
        }
        if !no_writes
            && flags & fflag::ALLOW_OOM == 0
            && ctx
                .server
                .keyspace
                .refuses_writes(crate::memory::used_memory())
        {
            return Err(super::oom_error());
        }
    }
    let policy = CallPolicy {
        read_only: invocation.ro_command || no_writes,
        allow_oom: flags & fflag::ALLOW_OOM != 0,
    };
    let function = invocation.function;
    let db = ctx.client.db;
    let mark = ctx.reply.len();
    let first_event = crate::notify::pending_count();
    let lua = engine.lua();
    // `CLIENT REPLY` applies to the script's reply, not to its commands'.
    let reply_mode = std::mem::take(&mut ctx.client.reply_mode);
    let server = ctx.server;
    let outcome = {
        let mut commands = |(args, raise): CommandCall| -> mlua::Result<Value> {
            match script_call(ctx, lua, args, policy, engine.resp() == 3) {
                Ok(value) => Ok(value),
                Err(text) if raise => Err(mlua::Error::external(ScriptError(text))),
                Err(text) => {
                    let t = lua.create_table()?;
                    t.raw_set("err", lua.create_string(text)?)?;
                    Ok(Value::Table(t))
                }
            }
        };
        crate::lua::with_commands(&mut commands, || {
            server.scripts.busy.start(invocation.is_function);
            let outcome = if invocation.is_function {
                engine.run_function(function, keys, argv)
            } else {
                engine.run(function, keys, argv)
            };
            server.scripts.busy.end();
            outcome
        })
    };
    ctx.client.reply_mode = reply_mode;
    if ctx.client.db != db {
        ctx.client.select(db);
    }
    crate::notify::place_pending_from(first_event, mark);
    let resp3 = engine.resp() == 3;
    reply_outcome(ctx, invocation, outcome, resp3)
}

/// Writes a script's reply: its value, or its error with the script and line.
fn reply_outcome(
    ctx: &mut Ctx<'_>,
    invocation: &Invocation<'_>,
    outcome: mlua::Result<Result<Value, mlua::Table>>,
    resp3: bool,
) -> CmdResult {
    match outcome.map_err(lua_failure)? {
        Ok(value) => convert::lua_to_reply(&value, ctx.reply, resp3, 0),
        Err(table) => {
            let err = table.raw_get::<mlua::String>("err").ok();
            let mut text = err.map(|e| e.as_bytes().to_vec()).unwrap_or_default();
            let source = table.raw_get::<mlua::String>("source").ok();
            let line = table.raw_get::<i64>("line").ok();
            if let (Some(source), Some(line)) = (source, line) {
                text.extend_from_slice(b" script: ");
                text.extend_from_slice(invocation.name);
                text.extend_from_slice(b", on ");
                text.extend_from_slice(&source.as_bytes());
                text.extend_from_slice(format!(":{line}.").as_bytes());
            }
            ctx.reply.error_bytes(&convert::one_line(&text));
        }
    }
    Ok(())
}

/// What a running script's commands may do.
#[derive(Clone, Copy)]
struct CallPolicy {
    /// No write commands.
    read_only: bool,
    /// Commands that may grow memory run over `maxmemory` too.
    allow_oom: bool,
}

/// Runs one command for `redis.call`/`redis.pcall`: its reply as a Lua value, or the text of
/// the error table (a refusal, or the command's error reply).
fn script_call(
    ctx: &mut Ctx<'_>,
    lua: &mlua::Lua,
    values: MultiValue,
    policy: CallPolicy,
    resp3: bool,
) -> Result<Value, Vec<u8>> {
    let lua_error = |e: mlua::Error| error_text(e.to_string().as_bytes());
    if values.is_empty() {
        return Err(error_text(
            b"Please specify at least one argument for this redis lib call",
        ));
    }
    let CallBuffers {
        mut bytes,
        mut ranges,
        reply: mut scratch,
    } = CALL_BUFFERS.with(|buffers| std::mem::take(&mut *buffers.borrow_mut()));
    for value in values {
        let text = match value {
            Value::String(s) => s,
            Value::Number(_) | Value::Integer(_) => match lua.coerce_string(value) {
                Ok(Some(s)) => s,
                _ => return Err(argument_type_error()),
            },
            _ => return Err(argument_type_error()),
        };
        let at = bytes.len();
        bytes.extend_from_slice(&text.as_bytes());
        ranges.push(at..bytes.len());
    }
    let args = Args::new(&bytes, &ranges);
    let server = ctx.server;
    let table = &server.commands;
    let unknown = || error_text(b"Unknown Redis command called from script");
    let mut id = table.lookup(args.get(0)).ok_or_else(unknown)?;
    if !table.entry(id).command.run.subcommands().is_empty() && args.len() >= 2 {
        id = table.lookup_sub(id, args.get(1)).ok_or_else(unknown)?;
    }
    let command = table.entry(id).command;
    let arity = command.arity;
    let argc = args.len() as i32;
    if (arity > 0 && arity != argc) || argc < -arity {
        return Err(error_text(
            b"Wrong number of args calling Redis command from script",
        ));
    }
    if command.flags & NOSCRIPT != 0 {
        return Err(error_text(b"This Redis command is not allowed from script"));
    }
    if policy.read_only && command.flags & WRITE != 0 {
        return Err(error_text(
            b"Write commands are not allowed from read-only scripts.",
        ));
    }
    if command.flags & DENYOOM != 0
        && !policy.allow_oom
        && server.keyspace.refuses_writes(crate::memory::used_memory())
    {
        return Err(error_text(format!("-{}", super::oom_error().0).as_bytes()));
    }
    if command.flags & WRITE != 0 {
        // As Redis, a write called is a write made: SCRIPT KILL no longer stops the script.
        server.scripts.busy.mark_write();
    }
    scratch.set_resp3(resp3);
    std::mem::swap(ctx.reply, &mut scratch);
    // As a queued command: its statistics too, and one call site of `finish` keeps the
    // single-command path's inlining (decisions/0230).
    super::call_queued(ctx, id, args);
    std::mem::swap(ctx.reply, &mut scratch);
    let out = scratch.bytes();
    let result = if out.first() == Some(&b'-') {
        let end = out
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or(out.len());
        Err(error_text(&out[..end]))
    } else {
        let mut at = 0;
        convert::reply_to_lua(lua, out, &mut at).map_err(lua_error)
    };
    if bytes.capacity() <= KEEP_CALL_BUFFER && scratch.capacity() <= KEEP_CALL_BUFFER {
        bytes.clear();
        ranges.clear();
        scratch.discard();
        CALL_BUFFERS.with(|buffers| {
            *buffers.borrow_mut() = CallBuffers {
                bytes,
                ranges,
                reply: scratch,
            }
        });
    }
    result
}

/// A call's buffers larger than this are dropped after it rather than kept for the next (a
/// script that once read a large value keeps no large buffer).
const KEEP_CALL_BUFFER: usize = 16 * 1024;

/// The buffers of a `redis.call`: its arguments and its reply, kept from one call to the
/// next on each thread (three allocations a call otherwise).
#[derive(Default)]
struct CallBuffers {
    bytes: Vec<u8>,
    ranges: Vec<std::ops::Range<usize>>,
    reply: Reply,
}

thread_local! {
    static CALL_BUFFERS: std::cell::RefCell<CallBuffers> =
        std::cell::RefCell::new(CallBuffers::default());
}

fn argument_type_error() -> Vec<u8> {
    error_text(b"Lua redis lib command arguments must be strings or integers")
}

/// `SCRIPT LOAD script`: the script's SHA1, once it compiled.
fn script_load(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut guard = ctx.server.scripts.lock();
    let engine = engine(ctx, &mut guard)?;
    let sha = engine.load(args.get(2)).map_err(ErrorReply::err)?;
    drop(guard);
    ctx.reply.bulk(&sha);
    Ok(())
}

/// `SCRIPT EXISTS sha1 [sha1 ...]`: 1 for each cached script, 0 for each other.
fn script_exists(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let guard = ctx.server.scripts.lock();
    let shas = args.from(2);
    ctx.reply.array(shas.len());
    for sha in shas.iter() {
        let cached = normalize_sha(sha)
            .zip(guard.as_ref())
            .is_some_and(|(sha, engine)| engine.contains(&sha));
        ctx.reply.int(i64::from(cached));
    }
    Ok(())
}

/// `SCRIPT FLUSH [ASYNC|SYNC]`: OK, every script dropped.
fn script_flush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let valid = match args.len() {
        2 => true,
        3 => args.is(2, "async") || args.is(2, "sync"),
        _ => false,
    };
    if !valid {
        return Err(ErrorReply::err(
            "SCRIPT FLUSH only support SYNC|ASYNC option",
        ));
    }
    ctx.server.scripts.flush();
    ctx.reply.ok();
    Ok(())
}

/// `SCRIPT KILL`: OK once the running script is asked to stop (it has written nothing),
/// or Redis's refusal (see [`crate::lua::busy::Busy::kill`]).
fn script_kill(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.server.scripts.busy.kill(true)?;
    ctx.reply.ok();
    Ok(())
}

/// `SCRIPT HELP`: the subcommands, a few lines each.
fn script_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "SCRIPT",
        &[
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    Both modes flush synchronously here.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
    Ok(())
}
