//! The Lua engine behind `EVAL`: one Lua 5.1 state per server, sandboxed as Redis 7.0
//! sandboxes its own, with the scripts compiled once and cached by SHA1.
//!
//! A script runs with the `redis` library (`call`, `pcall`, `error_reply`, `status_reply`,
//! `sha1hex`, `log`, `setresp`, `set_repl`, `replicate_commands`) in an environment where
//! reading a global that does not exist and writing any global are errors, and `os`, `io`,
//! `loadfile`, `dofile`, `require`, `print`, `debug` are absent; [`cmd::scripting`] runs it
//! with every shard held, and lends `redis.call` the hold.
//!
//! # Design
//!
//! - **One state per server**, behind a mutex taken after the shards: a script holds every
//!   shard anyway, so a second state could never run beside it; one state compiles each
//!   script once for all clients, and holds the function libraries ([`functions`]).
//!   `SCRIPT FLUSH` drops the cached scripts.
//! - **The sandbox** is a proxy table as each script's environment: its `__index` reads the
//!   real globals or raises Redis's "nonexistent global variable" error, its `__newindex`
//!   raises "Attempt to modify a readonly table" (Redis's patched Lua has read-only tables;
//!   stock Lua needs the proxy). `string`, `math`, `table`, `coroutine` and `redis` are
//!   read-only proxies too, so no script changes what the next one sees.
//! - **Errors** go through Redis 7.0's `__redis__err__handler`, in Rust here: a string error
//!   becomes `{err = "ERR " .. msg}`, and the table gets the source and line of the script's
//!   frame (skipping C frames and this module's own Lua), which the reply prints as
//!   `script: <sha>, on @user_script:<line>.`. The handler reads the stack through
//!   [`mlua::Lua::inspect_stack`], so the unsafe `debug` library is never loaded.
//! - **`redis.call`** and **`redis.pcall`** are Rust functions made once per engine; they
//!   run the running script's commands through a runner the script's command lends them for
//!   its run ([`with_commands`], on the running thread), which borrows the command's context.
//!   A Rust function cannot raise a table as Redis's C does; it raises a [`ScriptError`] that
//!   the error handler turns into the table. (A Lua wrapper raising the table would lose the
//!   script's line: `return redis.call(...)` is a tail call, which drops the script's frame.)
//! - **`KEYS` and `ARGV`** are two tables kept for the engine: it sets entries 1 to n before
//!   a run and the runner removes anything else first (not after the run: the reply may be
//!   these tables), so a run leaves no garbage of its own. Globals are read through a table
//!   `__index` (no Lua call); a missing one reaches the real globals' `__index`, which raises.
//! - **A hook** every [`HOOK_INSTRUCTIONS`] instructions lets a script be stopped
//!   (`SCRIPT KILL`, `FUNCTION KILL`, `SHUTDOWN NOSAVE`) and wakes the runtime at the first
//!   look of a long script ([`busy`]); `pcall` and `xpcall` raise the stop again.
//! - **`bit`, `cjson`, `cmsgpack` and `struct`** are Rust (`libs`), read-only as `string`.
//!
//! See `docs/decisions/0231-server-lua.md`, `0232-server-lua-busy-functions.md` and
//! `0233-server-script-path.md`.
//!
//! [`cmd::scripting`]: crate::cmd::scripting

pub mod busy;
pub mod convert;
pub mod functions;
mod libs;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mlua::{
    ChunkMode, Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState,
};
use sha1::{Digest, Sha1};

/// The Lua code that builds the sandbox and the `redis` library around the Rust functions it
/// is given; it returns the scripts' environment, the runner and the real `redis` table.
const SETUP: &str = include_str!("setup.lua");

/// How many Lua instructions run between two looks of the hook at the kill flag: Redis's
/// own count (its `luaMaskCountHook`), about a millisecond of a busy loop.
pub const HOOK_INSTRUCTIONS: u32 = 100_000;

/// The scripts' Lua state, made at the first script. See the [module docs](self).
#[derive(Default)]
pub struct Scripts {
    engine: Mutex<Option<Engine>>,
    /// The running script, as other connections see it.
    pub busy: Arc<busy::Busy>,
    /// The function libraries and functions loaded, for `FUNCTION STATS` (which may not
    /// wait for the engine while a script runs).
    function_counts: Mutex<(usize, usize)>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts").finish_non_exhaustive()
    }
}

impl Scripts {
    /// The engine, made if there is none; the caller holds it for the script's run.
    /// A wait for it (a script runs) happens off the runtime's worker thread, as a wait for a
    /// shard a script holds does.
    pub fn lock(&self) -> MutexGuard<'_, Option<Engine>> {
        match self.engine.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => crate::keyspace::off_the_runtime(|| {
                self.engine.lock().unwrap_or_else(|e| e.into_inner())
            }),
        }
    }

    /// Drops every cached script (`SCRIPT FLUSH`); the function libraries stay.
    pub fn flush(&self) {
        if let Some(engine) = self.lock().as_mut() {
            engine.scripts.clear();
            let _ = engine.lua.gc_collect();
        }
    }

    /// Publishes the numbers of libraries and functions.
    pub fn set_function_counts(&self, libraries: usize, functions: usize) {
        *self
            .function_counts
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = (libraries, functions);
    }

    /// The numbers of libraries and functions.
    pub fn function_counts(&self) -> (usize, usize) {
        *self
            .function_counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The engine of `guard` (which [`lock`](Self::lock) gave), made if there is none.
    pub fn engine<'g>(&self, guard: &'g mut Option<Engine>) -> mlua::Result<&'g mut Engine> {
        if guard.is_none() {
            *guard = Some(Engine::new(Arc::clone(&self.busy))?);
        }
        Ok(guard.as_mut().expect("made above"))
    }
}

/// A Lua state with its cached scripts. See the [module docs](self).
pub struct Engine {
    lua: Lua,
    env: Table,
    runner: Function,
    /// The `KEYS` and `ARGV` tables, filled for each run (the runner removes whatever else
    /// they hold).
    keys: Table,
    argv: Table,
    /// The running script's `redis.setresp`.
    resp: Arc<AtomicU8>,
    /// The running script, as other connections see it (and the hook, a library's load).
    busy: Arc<busy::Busy>,
    /// The cached scripts, with the flags of their `#!lua` line (`None`: no such line).
    scripts: HashMap<[u8; 40], (Function, Option<u8>)>,
    /// The functions' environment, and the Lua that runs a library's code.
    library_env: Table,
    load_library: Function,
    /// Runs a function with its keys and arguments, through the error handler.
    function_runner: Function,
    /// The function libraries.
    pub libraries: functions::Libraries,
}

/// The lowercase hex SHA1 of `bytes`.
pub fn sha1_hex(bytes: &[u8]) -> [u8; 40] {
    let digest = Sha1::digest(bytes);
    let mut hex = [0u8; 40];
    for (i, b) in digest.iter().enumerate() {
        hex[2 * i] = b"0123456789abcdef"[usize::from(b >> 4)];
        hex[2 * i + 1] = b"0123456789abcdef"[usize::from(b & 15)];
    }
    hex
}

/// `sha` in lowercase, if it is 40 bytes long.
pub fn normalize_sha(sha: &[u8]) -> Option<[u8; 40]> {
    let mut out: [u8; 40] = sha.try_into().ok()?;
    out.make_ascii_lowercase();
    Some(out)
}

impl Engine {
    /// A fresh sandboxed state, whose scripts stop when `busy` asks.
    pub fn new(busy: Arc<busy::Busy>) -> mlua::Result<Self> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        self::libs::register(&lua)?;
        let killed = {
            let busy = Arc::clone(&busy);
            move || -> mlua::Result<()> {
                if busy.kill_requested() {
                    return Err(mlua::Error::external(ScriptError(busy::KILLED.into())));
                }
                Ok(())
            }
        };
        let hook_busy = Arc::clone(&busy);
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS),
            move |_, _| {
                if hook_busy.hook() {
                    return Err(mlua::Error::external(ScriptError(busy::KILLED.into())));
                }
                if hook_busy.load_timed_out() {
                    return Err(raise("FUNCTION LOAD timeout"));
                }
                Ok(VmState::Continue)
            },
        )?;
        let check_killed = lua.create_function(move |_, ()| killed())?;
        let resp = Arc::new(AtomicU8::new(2));
        let sha1hex = lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise("wrong number of arguments"));
            }
            let text = lua
                .coerce_string(args[0].clone())?
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default();
            lua.create_string(sha1_hex(&text))
        })?;
        let log = lua.create_function(|lua, args: MultiValue| {
            if args.len() < 2 {
                return Err(raise("redis.log() requires two arguments or more."));
            }
            let Some(level) = number(&args[0]) else {
                return Err(raise("First argument must be a number (log level)."));
            };
            if !(0.0..4.0).contains(&level) {
                return Err(raise("Invalid debug level."));
            }
            let mut parts = Vec::new();
            for value in args.iter().skip(1) {
                if let Some(s) = lua.coerce_string(value.clone())? {
                    parts.push(String::from_utf8_lossy(&s.as_bytes()).into_owned());
                }
            }
            let text = parts.join(" ");
            match level as u8 {
                0 => tracing::debug!(target: "script", "{text}"),
                1 => tracing::trace!(target: "script", "{text}"),
                2 => tracing::info!(target: "script", "{text}"),
                _ => tracing::warn!(target: "script", "{text}"),
            }
            Ok(())
        })?;
        let error_reply = lua.create_function(|lua, args: MultiValue| {
            let table = lua.create_table()?;
            match (args.len(), args.front()) {
                (1, Some(Value::String(s))) => {
                    let mut text = s.as_bytes().to_vec();
                    if text.first() != Some(&b'-') {
                        text.insert(0, b'-');
                    }
                    table.raw_set("err", lua.create_string(error_text(&text))?)?;
                }
                _ => table.raw_set("err", "ERR wrong number or type of arguments")?,
            }
            Ok(table)
        })?;
        let setresp = {
            let resp = Arc::clone(&resp);
            lua.create_function(move |_, args: MultiValue| {
                if args.len() != 1 {
                    return Err(raise("redis.setresp() requires one argument."));
                }
                match number(&args[0]).map(|n| n as i64) {
                    Some(n @ (2 | 3)) => resp.store(n as u8, Ordering::Relaxed),
                    _ => return Err(raise("RESP version must be 2 or 3.")),
                }
                Ok(())
            })?
        };
        let set_repl = lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise("redis.set_repl() requires one argument."));
            }
            match number(&args[0]) {
                Some(flags) if (0.0..=3.0).contains(&flags) => Ok(()),
                _ => Err(raise(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                )),
            }
        })?;
        let call = lua.create_function(|_, args: MultiValue| call_lent(args, true))?;
        let pcall = lua.create_function(|_, args: MultiValue| call_lent(args, false))?;
        let handler = lua.create_function(error_handler)?;
        #[allow(clippy::type_complexity)]
        let (env, runner, library_env, load_library, function_runner, keys, argv): (
            Table,
            Function,
            Table,
            Function,
            Function,
            Table,
            Table,
        ) = lua.load(SETUP).set_name("=redis").call((
            sha1hex,
            log,
            error_reply,
            setresp,
            set_repl,
            handler,
            check_killed,
            call,
            pcall,
        ))?;
        Ok(Engine {
            lua,
            env,
            runner,
            keys,
            argv,
            resp,
            busy,
            scripts: HashMap::new(),
            library_env,
            load_library,
            function_runner,
            libraries: functions::Libraries::default(),
        })
    }

    /// The `redis.setresp` of the running script: 2 or 3.
    pub fn resp(&self) -> u8 {
        self.resp.load(Ordering::Relaxed)
    }

    /// The Lua state.
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Whether the script of `sha` (lowercase) is cached.
    pub fn contains(&self, sha: &[u8; 40]) -> bool {
        self.scripts.contains_key(sha)
    }

    /// The cached script of `sha` (lowercase), with its shebang's flags.
    pub fn get(&self, sha: &[u8; 40]) -> Option<&(Function, Option<u8>)> {
        self.scripts.get(sha)
    }

    /// Compiles and caches `body` (if it is not cached); its SHA1, or Redis's error (without
    /// its code).
    pub fn load(&mut self, body: &[u8]) -> Result<[u8; 40], String> {
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let flags = script_flags(body)?;
        // The `#!` line is blanked, its line break kept: Lua would not read it.
        let code = match flags {
            Some(_) => &body[body.iter().position(|&b| b == b'\n').unwrap_or(body.len())..],
            None => body,
        };
        let f = self
            .lua
            .load(code)
            .set_name("@user_script")
            .set_mode(ChunkMode::Text)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                let message = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!("Error compiling script (new function): {message}")
            })?;
        self.scripts.insert(sha, (f, flags));
        Ok(sha)
    }

    /// `FUNCTION LOAD [REPLACE]`: compiles and registers the library of `code` into
    /// `libraries` (the engine's, or a copy `FUNCTION RESTORE` works on); its name, or Redis's
    /// error without its code.
    pub fn load_library(
        &self,
        libraries: &mut functions::Libraries,
        code: &[u8],
        replace: bool,
    ) -> Result<String, String> {
        self.busy.set_loading(true);
        let loaded = libraries.load(
            &self.lua,
            &self.library_env,
            &self.load_library,
            code,
            replace,
        );
        self.busy.set_loading(false);
        loaded
    }

    /// Runs `script` (a chunk) with `KEYS` and `ARGV` set, through Redis's error handler: the
    /// value it returned, or the error table.
    pub fn run(
        &self,
        script: &Function,
        keys: crate::cmd::Args<'_>,
        argv: crate::cmd::Args<'_>,
    ) -> mlua::Result<Result<Value, Table>> {
        self.fill(&self.keys, keys)?;
        self.fill(&self.argv, argv)?;
        self.resp.store(2, Ordering::Relaxed);
        let outcome = self.runner.call((script, keys.len(), argv.len()))?;
        self.outcome(outcome)
    }

    /// Runs `function` (a registered function) with its keys and arguments as parameters.
    pub fn run_function(
        &self,
        function: &Function,
        keys: crate::cmd::Args<'_>,
        argv: crate::cmd::Args<'_>,
    ) -> mlua::Result<Result<Value, Table>> {
        let keys = Value::Table(self.strings(keys)?);
        let argv = Value::Table(self.strings(argv)?);
        self.resp.store(2, Ordering::Relaxed);
        let outcome = self.function_runner.call((function, keys, argv))?;
        self.outcome(outcome)
    }

    /// Sets entries 1 to n of `table` to the n `args`, as [`strings`](Self::strings) makes a
    /// new table.
    fn fill(&self, table: &Table, args: crate::cmd::Args<'_>) -> mlua::Result<()> {
        for (i, arg) in args.iter().enumerate() {
            match std::str::from_utf8(arg) {
                Ok(text) => table.raw_set(i + 1, text)?,
                Err(_) => table.raw_set(i + 1, self.lua.create_string(arg)?)?,
            }
        }
        Ok(())
    }

    /// A Lua array of `args`. Arguments that are UTF-8 (most are) go in as `&str`, which
    /// mlua pushes straight onto Lua's stack; a Lua string made first would take and give
    /// back a slot of mlua's reference table each.
    fn strings(&self, args: crate::cmd::Args<'_>) -> mlua::Result<Table> {
        if args.iter().all(|a| std::str::from_utf8(a).is_ok()) {
            let text = args
                .iter()
                .map(|a| std::str::from_utf8(a).unwrap_or_default());
            return self.lua.create_sequence_from(text);
        }
        let t = self.lua.create_table_with_capacity(args.len(), 0)?;
        for (i, arg) in args.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(arg)?)?;
        }
        Ok(t)
    }

    /// A runner's `(ok, value)`: the value, or the error as a table.
    fn outcome(&self, (ok, value): (bool, Value)) -> mlua::Result<Result<Value, Table>> {
        if ok {
            return Ok(Ok(value));
        }
        match value {
            Value::Table(t) => Ok(Err(t)),
            other => {
                let t = self.lua.create_table()?;
                let text = self.lua.coerce_string(other)?;
                let text = text.map(|s| s.as_bytes().to_vec()).unwrap_or_default();
                let mut err = b"ERR ".to_vec();
                err.extend_from_slice(&text);
                t.raw_set("err", self.lua.create_string(err)?)?;
                Ok(Err(t))
            }
        }
    }
}

/// What `redis.call` (`true`: an error raises) and `redis.pcall` (`false`: an error is
/// returned as a table) hand the running script's command runner: the arguments, and whether
/// to raise.
pub type CommandCall = (MultiValue, bool);

thread_local! {
    /// The running script's command runner, lent by [`with_commands`].
    static COMMANDS: crate::sys::LendSlot<CommandCall, mlua::Result<Value>> =
        const { crate::sys::LendSlot::new() };
}

/// Runs `body` (which runs a script) with `commands` as what its `redis.call` and
/// `redis.pcall` call. The two are Lua functions made once per engine that find the runner
/// here, on the running thread: made for each run (`Lua::scope`, which lets them borrow the
/// command's context), they cost about 10,000 instructions a script, their garbage
/// included (decisions/0233).
pub fn with_commands<T>(
    commands: &mut dyn FnMut(CommandCall) -> mlua::Result<Value>,
    body: impl FnOnce() -> T,
) -> T {
    COMMANDS.with(|slot| slot.lend(commands, body))
}

/// `redis.call` or `redis.pcall`: the lent command runner's result.
fn call_lent(args: MultiValue, raise_errors: bool) -> mlua::Result<Value> {
    COMMANDS
        .with(|slot| slot.with(|commands| commands((args, raise_errors))))
        .unwrap_or_else(|| Err(raise("redis.call is available only while a script runs")))
}

/// The flags of an `EVAL` script's `#!lua [flags=a,b]` first line (`None` without one), or
/// Redis's error.
fn script_flags(body: &[u8]) -> Result<Option<u8>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = 0;
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("Unknown lua shebang option: {part}"));
        };
        for name in list.split(',').filter(|n| !n.is_empty()) {
            flags |= functions::flag::parse(name.as_bytes())
                .ok_or_else(|| format!("Unexpected flag in script shebang: {name}"))?;
        }
    }
    Ok(Some(flags))
}

/// A Lua number's value (mlua gives integral numbers as integers).
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// An error `redis.call` and the `redis` library raise: Redis raises a table
/// `{err = text}`, which a Rust function cannot, so the error handler makes the table from it
/// (Redis's `__redis__err__handler`, in Rust here).
#[derive(Debug)]
pub struct ScriptError(pub Vec<u8>);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for ScriptError {}

/// The Lua error of a [`ScriptError`] of `message` (given the code `ERR`).
pub fn raise(message: &str) -> mlua::Error {
    mlua::Error::external(ScriptError(error_text(message.as_bytes())))
}

/// Redis 7.0's `__redis__err__handler`: the error as a table `{err = text}` (a string error
/// gets the code `ERR`), with the source and line of the innermost frame that is the
/// script's (neither C nor this module's Lua).
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Table> {
    let table = match err {
        Value::Table(table) => table,
        Value::Error(error) => {
            let text = match error.chain().find_map(|e| e.downcast_ref::<ScriptError>()) {
                Some(ScriptError(text)) => text.clone(),
                None => format!("ERR {error}").into_bytes(),
            };
            let table = lua.create_table()?;
            table.raw_set("err", lua.create_string(text)?)?;
            table
        }
        other => {
            let text = lua.coerce_string(other)?;
            let mut bytes = b"ERR ".to_vec();
            match text {
                Some(text) => bytes.extend_from_slice(&text.as_bytes()),
                None => bytes.extend_from_slice(b"nil"),
            }
            let table = lua.create_table()?;
            table.raw_set("err", lua.create_string(bytes)?)?;
            table
        }
    };
    for level in 1.. {
        let frame = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            let ours = source.what == "C" || source.source.as_deref() == Some("=redis");
            (!ours).then(|| (source.source.map(|s| s.into_owned()), debug.current_line()))
        });
        match frame {
            None => break,
            Some(None) => continue,
            Some(Some((source, line))) => {
                table.raw_set("source", source)?;
                table.raw_set("line", line)?;
                break;
            }
        }
    }
    Ok(table)
}

/// Redis's error text from an error reply (`-CODE msg`, or `msg` given the code `ERR`), as
/// a Lua error table holds it: `CODE msg`, trimmed of CR and LF at both ends.
pub fn error_text(raw: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match raw.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(space) => (&rest[..space], &rest[space + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", raw),
    };
    let trim = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !trim(b)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|b| !trim(b)).map_or(start, |e| e + 1);
    let mut text = code.to_vec();
    text.push(b' ');
    text.extend_from_slice(&msg[start..end.max(start)]);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_hex_of_empty_is_the_known_digest() {
        assert_eq!(&sha1_hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }

    #[test]
    fn error_text_splits_code_and_trims() {
        assert_eq!(error_text(b"-X y\r\n"), b"X y");
        assert_eq!(error_text(b"-boom"), b"ERR boom");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
    }

    #[test]
    fn normalize_sha_lowercases_and_checks_length() {
        let upper = [b'A'; 40];
        assert_eq!(normalize_sha(&upper), Some([b'a'; 40]));
        assert_eq!(normalize_sha(b"abc"), None);
    }
}
