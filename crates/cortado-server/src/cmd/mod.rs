//! The commands, in files by family, and the one table that drives dispatch, arity errors,
//! authentication, `COMMAND`, statistics and the slow log.
//!
//! Each family file lists its commands in a `COMMANDS` slice of [`Command`]s: the name, arity
//! (Redis's convention: `n` exactly n arguments counting the name, `-n` at least n), flags,
//! key positions, and the function that runs it. [`Table`] gathers them at start-up, applies
//! `rename-command`, numbers every command and subcommand for the statistics, and joins each
//! to its [`docs::Doc`] (cost, syntax, ACL categories, key usage), which only `COMMAND`
//! reads.
//! [`execute`] runs one command for a client: lookup, arity, authentication, then the command
//! (or, inside `MULTI`, its queueing: see [`transactions`]), then the bookkeeping Redis does
//! after each call.

/// Defines a family file's `cmd`: a [`Command`] of the family `$group` (as `COMMAND DOCS`
/// names it) run by a handler, the one way every family builds its `COMMANDS`.
macro_rules! command_constructor {
    ($group:literal) => {
        /// A command of this family run by `handler`.
        const fn cmd(
            name: &'static str,
            arity: i32,
            flags: u32,
            keys: $crate::cmd::Keys,
            summary: &'static str,
            since: &'static str,
            handler: $crate::cmd::Handler,
        ) -> $crate::cmd::Command {
            $crate::cmd::Command {
                name,
                arity,
                flags,
                keys,
                group: $group,
                since,
                summary,
                run: $crate::cmd::Run::Handler(handler),
            }
        }
    };
}

pub mod acl;
pub mod args;
pub mod blocking;
pub mod collections;
pub mod command;
pub mod connection;
pub mod docs;
pub mod expire;
pub mod functions;
pub mod hash_expiry;
pub mod hashes;
pub mod keyspace;
pub mod keyspec;
pub mod lists;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod strings;
pub mod syntax;
pub mod transactions;
pub mod zsets;

use std::collections::HashMap;
use std::time::Instant;

pub use args::Args;

use crate::client::{Client, ReplyMode};
use crate::keyspace::access::Shards;
use crate::protocol::{ErrorReply, Reply};
use crate::server::Server;

/// Command flags, as `COMMAND INFO` names them.
pub mod flags {
    /// Changes data.
    pub const WRITE: u32 = 1 << 0;
    /// Only reads data.
    pub const READONLY: u32 = 1 << 1;
    /// May grow memory use (refused under `maxmemory` with `noeviction`).
    pub const DENYOOM: u32 = 1 << 2;
    /// An administrative command.
    pub const ADMIN: u32 = 1 << 3;
    /// Pub/sub related.
    pub const PUBSUB: u32 = 1 << 4;
    /// Not allowed in scripts.
    pub const NOSCRIPT: u32 = 1 << 5;
    /// May block the client.
    pub const BLOCKING: u32 = 1 << 6;
    /// Allowed while loading.
    pub const LOADING: u32 = 1 << 7;
    /// Allowed on a stale replica.
    pub const STALE: u32 = 1 << 8;
    /// Not shown to `MONITOR`.
    pub const SKIP_MONITOR: u32 = 1 << 9;
    /// Not recorded in the slow log.
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    /// O(1) or O(log n).
    pub const FAST: u32 = 1 << 11;
    /// Allowed before authentication.
    pub const NO_AUTH: u32 = 1 << 12;
    /// Not allowed inside `MULTI`.
    pub const NO_MULTI: u32 = 1 << 13;
    /// Allowed while a script runs too long.
    pub const ALLOW_BUSY: u32 = 1 << 14;
    /// May cause replication traffic although it writes no key (`PUBLISH`, scripts).
    pub const MAY_REPLICATE: u32 = 1 << 15;
    /// May run without any key (scripts called with no keys).
    pub const NO_MANDATORY_KEYS: u32 = 1 << 16;
    /// Refused during an asynchronous load.
    pub const NO_ASYNC_LOADING: u32 = 1 << 17;
    /// Its keys are not at fixed positions (found by a keyword or a count).
    pub const MOVABLE_KEYS: u32 = 1 << 18;
    /// Refused unless `enable-debug-command` allows it (`DEBUG`); not shown by `COMMAND`, as
    /// in Redis.
    pub const PROTECTED: u32 = 1 << 19;

    /// Every flag with its name, in the order `COMMAND INFO` lists them.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// The result of a command: its reply was written, or this error is its reply.
pub type CmdResult = Result<(), ErrorReply>;

/// Runs a command whose arity was checked.
pub type Handler = fn(&mut Ctx<'_>, Args<'_>) -> CmdResult;

/// Where a command's keys are, as `COMMAND INFO`'s first, last and step: argument `first` to
/// `last` (negative: from the end) every `step`; `first` 0 for none. The key specifications
/// are derived from them ([`keyspec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    /// The first key's position (0: no keys).
    pub first: i32,
    /// The last key's position (-1: the last argument).
    pub last: i32,
    /// The distance between keys.
    pub step: i32,
}

/// No keys.
pub const NO_KEYS: Keys = Keys {
    first: 0,
    last: 0,
    step: 0,
};

/// One key, at position 1.
pub const KEY1: Keys = Keys {
    first: 1,
    last: 1,
    step: 1,
};

/// What runs a command.
#[derive(Clone, Copy)]
pub enum Run {
    /// A function.
    Handler(Handler),
    /// A container of subcommands (`CONFIG GET`, `CLIENT LIST`, ...).
    Container(&'static [Command]),
    /// A function for the bare command, and subcommands (`COMMAND`, `COMMAND INFO`).
    Both(Handler, &'static [Command]),
}

impl Run {
    /// The subcommands, if any.
    pub fn subcommands(&self) -> &'static [Command] {
        match self {
            Run::Handler(_) => &[],
            Run::Container(subs) | Run::Both(_, subs) => subs,
        }
    }
}

/// One command of the table. See the [module docs](self).
pub struct Command {
    /// The name, lowercase.
    pub name: &'static str,
    /// Redis's arity.
    pub arity: i32,
    /// [`flags`].
    pub flags: u32,
    /// Key positions.
    pub keys: Keys,
    /// The family, as `COMMAND DOCS` names it (`string`, `generic`, `server`, ...); it gives
    /// an ACL category too ([`acl`]).
    pub group: &'static str,
    /// The Redis version that introduced it.
    pub since: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// What runs it.
    pub run: Run,
}

/// One entry of the table: a command or a subcommand.
pub struct Entry {
    /// The command.
    pub command: &'static Command,
    /// `name` or `container|name`, as errors and statistics name it.
    pub full_name: String,
    /// The subcommands of a container, by lowercase name, as table ids.
    subcommands: HashMap<&'static [u8], usize>,
    /// The container's id, for a subcommand.
    pub parent: Option<usize>,
    /// What `COMMAND` says of it beyond the table; `None` for a command nobody described
    /// (a unit test sees that there is none).
    pub doc: Option<&'static docs::Doc>,
}

/// Every command, numbered. See the [module docs](self).
pub struct Table {
    entries: Vec<Entry>,
    by_name: HashMap<Vec<u8>, usize>,
}

/// Every family's commands.
fn families() -> impl Iterator<Item = &'static Command> {
    [
        blocking::COMMANDS,
        command::COMMANDS,
        connection::COMMANDS,
        expire::COMMANDS,
        functions::COMMANDS,
        hash_expiry::COMMANDS,
        hashes::COMMANDS,
        keyspace::COMMANDS,
        lists::COMMANDS,
        pubsub::COMMANDS,
        scripting::COMMANDS,
        server::COMMANDS,
        sets::COMMANDS,
        sort::COMMANDS,
        strings::COMMANDS,
        transactions::COMMANDS,
        zsets::COMMANDS,
    ]
    .into_iter()
    .flatten()
}

impl Table {
    /// Every command, with `renames` applied (`rename-command old new`; an empty new name
    /// removes the command). An unknown old name is an error.
    pub fn new(renames: &[(String, String)]) -> Result<Self, String> {
        let mut table = Table {
            entries: Vec::new(),
            by_name: HashMap::new(),
        };
        for command in families() {
            let id = table.push(command, command.name.to_owned(), None);
            table.by_name.insert(command.name.as_bytes().to_vec(), id);
            {
                for sub in command.run.subcommands() {
                    let sub_id =
                        table.push(sub, format!("{}|{}", command.name, sub.name), Some(id));
                    table.entries[id]
                        .subcommands
                        .insert(sub.name.as_bytes(), sub_id);
                }
            }
        }
        for (old, new) in renames {
            let id = table
                .by_name
                .remove(old.as_bytes())
                .ok_or_else(|| format!("rename-command: no such command '{old}'"))?;
            if !new.is_empty() {
                table
                    .by_name
                    .insert(new.to_ascii_lowercase().into_bytes(), id);
            }
        }
        Ok(table)
    }

    fn push(
        &mut self,
        command: &'static Command,
        full_name: String,
        parent: Option<usize>,
    ) -> usize {
        self.entries.push(Entry {
            command,
            doc: docs::lookup(&full_name),
            full_name,
            subcommands: HashMap::new(),
            parent,
        });
        self.entries.len() - 1
    }

    /// The number of entries, subcommands included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `id`.
    pub fn entry(&self, id: usize) -> &Entry {
        &self.entries[id]
    }

    /// Every entry with its id.
    pub fn entries(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.entries.iter().enumerate()
    }

    /// The top-level commands as clients may call them, with their ids.
    pub fn commands(&self) -> impl Iterator<Item = (&[u8], usize)> {
        self.by_name.iter().map(|(name, id)| (name.as_slice(), *id))
    }

    /// The id of the command called `name` (any case).
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut lower = [0u8; 32];
        let lower = lower.get_mut(..name.len())?;
        for (l, c) in lower.iter_mut().zip(name) {
            *l = c.to_ascii_lowercase();
        }
        self.by_name.get(&*lower).copied()
    }

    /// The id of `parent`'s subcommand `name` (any case).
    pub fn lookup_sub(&self, parent: usize, name: &[u8]) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        self.entries[parent].subcommands.get(&lower[..]).copied()
    }

    /// The ids of a container's subcommands.
    pub fn subcommands(&self, parent: usize) -> Vec<usize> {
        let mut ids: Vec<usize> = self.entries[parent].subcommands.values().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// What a command runs with: the server, its client, the reply it writes, and the shards it
/// may lock.
pub struct Ctx<'a> {
    /// The server.
    pub server: &'a Server,
    /// The calling client.
    pub client: &'a mut Client,
    /// The client's output.
    pub reply: &'a mut Reply,
    /// Where the command takes its shards: from the keyspace, or from the transaction that
    /// runs it (see [`Shards`]).
    pub shards: Shards<'a>,
}

impl Ctx<'_> {
    /// The selected database.
    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Reports `event` (of [`class`](crate::notify::class) `class`) on `key` of the selected
    /// database, published after the command if `notify-keyspace-events` asks for it.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.notify_db(class, event, self.client.db, key);
    }

    /// [`notify`](Self::notify) for a key of database `db`. Every command that changes a key
    /// reports it, under the key's shard, so this tells the key's watchers too (see
    /// [`crate::keyspace::watch`]).
    #[inline]
    pub fn notify_db(&self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        self.server.keyspace.watches().touch(db, key);
        self.server.keyspace.waits().signal(db, key);
        self.server
            .keyspace
            .notifications()
            .key_event_at(class, event, db, key, self.reply.len());
    }
}

/// Redis's arity error for the command named `name` in the table.
pub fn arity_error(full_name: &str) -> ErrorReply {
    ErrorReply::err(format!(
        "wrong number of arguments for '{full_name}' command"
    ))
}

/// Redis's error for a subcommand given the wrong arguments, which names the subcommand and
/// the command as the client typed them.
pub fn subcommand_syntax_error(args: Args<'_>) -> ErrorReply {
    let sub: String = String::from_utf8_lossy(c_string(args.get(1), 128)).into_owned();
    let command = String::from_utf8_lossy(c_string(args.get(0), usize::MAX)).to_ascii_uppercase();
    ErrorReply::err(format!(
        "unknown subcommand or wrong number of arguments for '{sub}'. Try {command} HELP."
    ))
}

/// The refusal of a command that may grow memory while the server is over `maxmemory`.
#[cold]
pub fn oom_error() -> ErrorReply {
    ErrorReply::new("OOM command not allowed when used memory > 'maxmemory'.")
}

/// A syntax error.
pub fn syntax_error() -> ErrorReply {
    ErrorReply::err("syntax error")
}

/// The error of a command run on a key of another type.
pub fn wrong_type() -> ErrorReply {
    ErrorReply::new("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// Runs one command for `client`, writing its reply. See the [module docs](self).
///
/// The checks before a command runs are those Redis 7.0 makes, in its order: the
/// command exists, its arity, authentication, the refusal of keyspace commands from a
/// monitor, then of all but a few commands from a RESP2 client with a subscription, then,
/// while a script runs, the wait for its end and, past `busy-reply-threshold`, the `-BUSY`
/// refusal of all but the `allow_busy` commands ([`crate::lua::busy`]); inside `MULTI`, those of [`transactions`] (`no_multi`, `-OOM`), after which the command is queued
/// rather than run (but for `EXEC`, `DISCARD`, `MULTI`, `WATCH`, `QUIT` and `RESET`). A
/// refused command is counted as `rejected_calls` of its entry (an unknown command or
/// subcommand has no entry), a command that ran and replied with an error as `failed_calls`.
pub fn execute(server: &Server, client: &mut Client, reply: &mut Reply, args: Args<'_>) {
    execute_in(server, client, reply, args, None);
}

/// [`execute`] for a command of a pipelined run: a script command (`EVAL`, `EVALSHA`,
/// `FCALL` and their `_RO` forms) runs with every shard from `hold` (taken if not held yet)
/// and leaves them there for the next; any other command releases the hold first. The
/// client and its output come back for the next command (the hold borrows as long as they).
/// See [`scripting::ScriptHold`].
pub fn execute_holding<'f>(
    server: &'f Server,
    client: &'f mut Client,
    reply: &'f mut Reply,
    args: Args<'_>,
    hold: &mut scripting::ScriptHold<'f>,
) -> (&'f mut Client, &'f mut Reply) {
    execute_in(server, client, reply, args, Some(hold))
}

/// [`execute`], with a connection's [`scripting::ScriptHold`] or without (`None`: the
/// single-command path, which this inlined body leaves as it was).
#[inline(always)]
fn execute_in<'f>(
    server: &'f Server,
    client: &'f mut Client,
    reply: &'f mut Reply,
    args: Args<'_>,
    mut hold: Option<&mut scripting::ScriptHold<'f>>,
) -> (&'f mut Client, &'f mut Reply) {
    if args.is_empty() {
        return (client, reply);
    }
    let started = Instant::now();
    let mark = reply.len();
    let table = &server.commands;
    let Some(mut id) = table.lookup(args.get(0)) else {
        transactions::refuse(server, client, reply, None, &unknown_command(args));
        finish(server, client, reply, None, started, mark, args);
        return (client, reply);
    };
    if args.len() >= 2 && !table.entry(id).command.run.subcommands().is_empty() {
        match table.lookup_sub(id, args.get(1)) {
            Some(sub) => id = sub,
            None => {
                // Redis names the container as the client typed it (renamed or not).
                let mut text = b"ERR unknown subcommand '".to_vec();
                text.extend_from_slice(c_string(args.get(1), 128));
                text.extend_from_slice(b"'. Try ");
                text.extend_from_slice(&c_string(args.get(0), usize::MAX).to_ascii_uppercase());
                text.extend_from_slice(b" HELP.");
                transactions::refuse(server, client, reply, None, &text);
                finish(server, client, reply, None, started, mark, args);
                return (client, reply);
            }
        }
    }
    let entry = table.entry(id);
    let command = entry.command;
    let arity = command.arity;
    let argc = args.len() as i32;
    let mut refusal = if (arity > 0 && arity != argc) || argc < -arity {
        Some(arity_error(&entry.full_name))
    } else if command.flags & flags::PROTECTED != 0 && !debug_allowed(server, client) {
        Some(ErrorReply::err(
            "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        ))
    } else if !client.authenticated && command.flags & flags::NO_AUTH == 0 {
        Some(ErrorReply::new("NOAUTH Authentication required."))
    } else if command.flags & (flags::WRITE | flags::READONLY) != 0
        && client.info.has_flag(crate::client::flag::MONITOR)
    {
        Some(ErrorReply::err("Replica can't interact with the keyspace"))
    } else if command.flags & flags::DENYOOM != 0
        && server.keyspace.refuses_writes(crate::memory::used_memory())
    {
        Some(oom_error())
    } else if client.resp == 2
        && client.info.has_flag(crate::client::flag::PUBSUB)
        && !pubsub::ALLOWED_WHILE_SUBSCRIBED.contains(&command.name)
    {
        Some(ErrorReply::err(format!(
            "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            entry.full_name
        )))
    } else if server.scripts.busy.is_running()
        && server.scripts.busy.wait()
        && command.flags & flags::ALLOW_BUSY == 0
    {
        // A script ran past `busy-reply-threshold` (see `crate::lua::busy`).
        Some(server.scripts.busy.refusal())
    } else {
        None
    };
    if client.transaction.in_multi() {
        refusal = refusal.or_else(|| transactions::refusal(server, client, command));
        if refusal.is_none() && !transactions::runs_in_multi(command) {
            transactions::queue(client, reply, id, command.flags, args);
            finish(server, client, reply, None, started, mark, args);
            return (client, reply);
        }
    }
    if let Some(error) = refusal {
        transactions::refuse(server, client, reply, Some(command), error.0.as_bytes());
        server.stats.record_rejected(id);
        finish(server, client, reply, None, started, mark, args);
        return (client, reply);
    }
    let shards = match hold.as_deref_mut() {
        None => Shards::new(&server.keyspace),
        Some(hold) => hold.shards_for(server, command),
    };
    let mut ctx = Ctx {
        server,
        client,
        reply,
        shards,
    };
    call(&mut ctx, id, command, args);
    if let Some(hold) = hold {
        // Before blocked clients are served or events published, which lock shards.
        hold.keep(ctx.shards);
    }
    if server.keyspace.waits().has_ready() {
        blocking::serve_ready(server);
    }
    let client = ctx.client;
    let reply = ctx.reply;
    if crate::notify::has_pending() {
        publish_key_events(server, client, reply, mark);
    }
    finish(server, client, reply, Some(id), started, mark, args);
    (client, reply)
}

/// Runs `command` (of table id `id`), which passed its checks: its handler, then the
/// monitors' feed.
#[inline(always)]
fn call(ctx: &mut Ctx<'_>, id: usize, command: &Command, args: Args<'_>) {
    let handler = match command.run {
        Run::Handler(handler) | Run::Both(handler, _) => handler,
        // A container called with no subcommand: its arity (-2) refused it above.
        Run::Container(_) => unreachable!("containers have arity -2"),
    };
    ctx.client.info.touch(id);
    if let Err(error) = handler(ctx, args) {
        ctx.reply.error(&error);
    }
    if command.flags & (flags::SKIP_MONITOR | flags::ADMIN) == 0 {
        ctx.server
            .monitors
            .feed(ctx.server, ctx.client, args, ctx.reply);
    }
}

/// Runs a command `EXEC` dequeued or a script called, in their context (the shards held): as
/// [`call`], then the statistics and slow log of the command, as Redis counts each one of a
/// transaction. `EXEC` and scripts keep `CLIENT REPLY` on meanwhile: their one reply holds
/// their commands'.
pub(super) fn call_queued(ctx: &mut Ctx<'_>, id: usize, args: Args<'_>) {
    let started = Instant::now();
    let mark = ctx.reply.len();
    call(ctx, id, ctx.server.commands.entry(id).command, args);
    finish(
        ctx.server,
        ctx.client,
        ctx.reply,
        Some(id),
        started,
        mark,
        args,
    );
}

/// Publishes the keyspace events of the command that just ran, its shards released; the
/// client's own messages (a RESP3 client subscribed to them) go into its reply where the
/// command reported them, as Redis sends them during the command (an event of the keyspace's
/// where the previous one went, or before the reply).
#[cold]
fn publish_key_events(server: &Server, client: &Client, reply: &mut Reply, mark: usize) {
    let mut own = crate::notify::OwnMessages {
        id: client.id,
        resp3: client.resp == 3,
        messages: Vec::new(),
    };
    server
        .keyspace
        .notifications()
        .publish(&server.pubsub, Some(&mut own));
    let mut place = mark;
    let mut placed = Vec::with_capacity(own.messages.len());
    for (at, bytes) in own.messages {
        place = at.unwrap_or(place).max(place);
        placed.push((place, bytes));
    }
    // From the last: inserting there leaves the earlier places where they were.
    for (place, bytes) in placed.iter().rev() {
        reply.insert(*place, bytes);
    }
}

/// Whether `enable-debug-command` lets `client` run `DEBUG`: `yes`, or `local` and a loopback
/// client.
fn debug_allowed(server: &Server, client: &Client) -> bool {
    match server.settings().enable_debug_command {
        crate::config::Allowed::Yes => true,
        crate::config::Allowed::Local => client.info.addr.ip().is_loopback(),
        crate::config::Allowed::No => false,
    }
}

/// `bytes` as C's `%.{max}s` prints a string: up to its first zero byte, at most `max` bytes.
fn c_string(bytes: &[u8], max: usize) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end.min(max)]
}

/// Redis's error for an unknown command: its name and the start of its arguments, each cut
/// at a zero byte as Redis's `printf` cuts them, quoted, 128 bytes of them at most.
fn unknown_command(args: Args<'_>) -> Vec<u8> {
    let mut shown = Vec::new();
    for arg in args.iter().skip(1) {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        shown.push(b'\'');
        shown.extend_from_slice(c_string(arg, room));
        shown.extend_from_slice(b"' ");
    }
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(c_string(args.get(0), 128));
    text.extend_from_slice(b"', with args beginning with: ");
    text.extend_from_slice(&shown);
    text
}

/// After a command: statistics (`ran`: the id of the command that ran, `None` if it was refused
/// or queued), the slow log, and `CLIENT REPLY`'s dropping of replies.
fn finish(
    server: &Server,
    client: &mut Client,
    reply: &mut Reply,
    ran: Option<usize>,
    started: Instant,
    mark: usize,
    args: Args<'_>,
) {
    let elapsed = started.elapsed();
    let usec = elapsed.as_micros() as u64;
    let (errors, code) = reply.take_errors();
    if let Some(code) = &code {
        server.stats.record_errors(code, u64::from(errors));
    }
    if let Some(id) = ran {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        server.stats.record_call(id, nanos, errors > 0);
        server.stats.add(crate::stats::Counter::Commands, 1);
        if server.commands.entry(id).command.flags & flags::SKIP_SLOWLOG == 0 {
            server.slowlog.record(server, client, usec, args);
        }
    }
    if !client.redacted.is_empty() {
        client.redacted.clear();
    }
    match client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off => reply.truncate(mark),
        // `CLIENT REPLY SKIP` itself replies nothing and skips the next command's reply.
        ReplyMode::Skip => {
            reply.truncate(mark);
            client.reply_mode = ReplyMode::Skipping;
        }
        ReplyMode::Skipping => {
            reply.truncate(mark);
            client.reply_mode = ReplyMode::On;
        }
    }
}
