//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`.
//!
//! After `MULTI` a client's commands are checked as usual ([`execute`](super::execute)) and
//! queued rather than run; a command refused at that point (unknown, wrong arity, `-OOM`,
//! not allowed in a transaction) makes `EXEC` refuse the whole queue with `-EXECABORT`. `EXEC`
//! then locks every shard, holds them until the last queued command has replied, and runs
//! each command with them ([`Shards::holding`]): the transaction is one atomic step over any
//! keys and databases, and time stands still for its whole length. A command that fails at
//! run time (`WRONGTYPE`) fails alone, as in Redis.
//!
//! # Design
//!
//! - **The queue** keeps every queued argument in one byte vector, with the ranges of each,
//!   so a transaction of n commands allocates a few vectors, not n; the emptied vectors are
//!   kept for the client's next transaction (up to 16 KiB, so a client that once queued a
//!   large value keeps no large buffer).
//! - **`WATCH`** registers each key in the keyspace's registry ([`crate::keyspace::watch`]),
//!   and remembers whether it was live. `EXEC` fails (a null array) if any write touched a
//!   watched key since, or if a key live at `WATCH` is not live any more under the
//!   transaction's time (it expired or was evicted), as Redis 7.0's `EXEC` fails.
//! - **Refusals inside `MULTI`** follow Redis 7.0's `processCommand`: under `-OOM` every
//!   command but `EXEC`, `DISCARD`, `QUIT` and `RESET` is refused while queueing, and `EXEC`
//!   itself if it would run a `denyoom` command; a refused `EXEC` discards the transaction
//!   with `-EXECABORT Transaction discarded because of: <the error>`.
//! - **Keyspace events** of the queued commands are published once `EXEC` ends, like every
//!   command's ([`crate::notify`]), so other clients see them after the transaction.

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Keys, NO_KEYS};
use crate::client::{flag, Client};
use crate::keyspace::access::Shards;
use crate::keyspace::watch::Dirty;
use crate::keyspace::Locked;
use crate::protocol::{ErrorReply, Reply};
use crate::server::Server;

command_constructor!("transactions");

/// The flags Redis 7.0 gives every transaction command but `EXEC`.
const CONTROL: u32 = NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY;

/// The transaction commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "discard",
        1,
        CONTROL,
        NO_KEYS,
        "Discards a transaction.",
        "2.0.0",
        discard,
    ),
    cmd(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG,
        NO_KEYS,
        "Runs the commands queued since MULTI.",
        "1.2.0",
        exec,
    ),
    cmd(
        "multi",
        1,
        CONTROL,
        NO_KEYS,
        "Starts a transaction.",
        "1.2.0",
        multi,
    ),
    cmd(
        "unwatch",
        1,
        CONTROL,
        NO_KEYS,
        "Forgets every key WATCH watches.",
        "2.2.0",
        unwatch,
    ),
    cmd(
        "watch",
        -2,
        CONTROL,
        Keys {
            first: 1,
            last: -1,
            step: 1,
        },
        "Makes the next EXEC fail if any of the keys changes first.",
        "2.2.0",
        watch,
    ),
];

/// A client's transaction: its queue while in `MULTI`, and the keys it watches.
#[derive(Debug, Default)]
pub struct Transaction {
    /// The queued commands; `None` outside `MULTI`.
    queue: Option<Queue>,
    /// An emptied queue whose room the next `MULTI` reuses.
    spare: Queue,
    /// The watched keys: database, key, and whether it was live when watched.
    watched: Vec<(usize, Vec<u8>, bool)>,
    /// Raised by a change to a watched key; made at the first `WATCH`.
    dirty: Option<Dirty>,
}

/// The commands queued since `MULTI`. See the [module docs](self).
#[derive(Debug, Default)]
struct Queue {
    /// Every argument's bytes, one after another.
    bytes: Vec<u8>,
    /// Each argument's place in `bytes`.
    ranges: Vec<Range<usize>>,
    /// Each command's table id and its arguments' place in `ranges`.
    commands: Vec<(usize, Range<usize>)>,
    /// The union of the queued commands' flags.
    flags: u32,
    /// Whether a command was refused while queueing (`EXEC` then aborts).
    refused: bool,
}

/// A queue holding more bytes than this is dropped after its transaction rather than kept
/// for the next (a client that once queued a large value keeps no large buffer).
const KEEP_QUEUE_BYTES: usize = 16 * 1024;

impl Queue {
    /// Empties the queue for reuse, if its room is worth keeping.
    fn recycle(mut self) -> Queue {
        if self.bytes.capacity() > KEEP_QUEUE_BYTES {
            return Queue::default();
        }
        self.bytes.clear();
        self.ranges.clear();
        self.commands.clear();
        self.flags = 0;
        self.refused = false;
        self
    }
}

impl Transaction {
    /// Whether the client is in `MULTI`.
    #[inline]
    pub fn in_multi(&self) -> bool {
        self.queue.is_some()
    }

    /// Whether a watched key changed since `WATCH`, every shard held by `locked`.
    fn changed(&self, locked: &mut Locked<'_>) -> bool {
        self.dirty
            .as_ref()
            .is_some_and(|dirty| dirty.load(Ordering::Relaxed))
            || self
                .watched
                .iter()
                .any(|(db, key, live)| *live && !locked.shard(key).contains(*db, key))
    }
}

/// Whether `command` runs at once inside `MULTI` rather than being queued.
pub(super) fn runs_in_multi(command: &Command) -> bool {
    matches!(
        command.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Queues the command of table id `id` for `EXEC`; replies `QUEUED`.
#[cold]
pub(super) fn queue(client: &mut Client, reply: &mut Reply, id: usize, flags: u32, args: Args<'_>) {
    let Some(queue) = client.transaction.queue.as_mut() else {
        return;
    };
    let start = queue.ranges.len();
    for arg in args.iter() {
        let at = queue.bytes.len();
        queue.bytes.extend_from_slice(arg);
        queue.ranges.push(at..queue.bytes.len());
    }
    queue.commands.push((id, start..queue.ranges.len()));
    queue.flags |= flags;
    client
        .info
        .queued
        .store(queue.commands.len() as i64, Ordering::Relaxed);
    reply.simple("QUEUED");
}

/// Why `command` from `client`, in `MULTI`, is refused beyond the checks every command
/// passes (Redis 7.0's rules): a `no_multi` command; over `maxmemory`, every command but
/// `DISCARD`, `QUIT`, `RESET`, and `EXEC` unless it would run a `denyoom` command (a
/// `denyoom` command itself was refused already).
#[cold]
pub(super) fn refusal(server: &Server, client: &Client, command: &Command) -> Option<ErrorReply> {
    if command.flags & NO_MULTI != 0 {
        return Some(ErrorReply::err("Command not allowed inside a transaction"));
    }
    let queue = client.transaction.queue.as_ref()?;
    let oom_applies = match command.name {
        "exec" => queue.flags & DENYOOM != 0,
        "discard" | "quit" | "reset" => false,
        _ => true,
    };
    (oom_applies && server.keyspace.refuses_writes(crate::memory::used_memory()))
        .then(super::oom_error)
}

/// Replies `error` to a refused `command`. Inside `MULTI` the refusal dooms the transaction.
/// A refused `EXEC` answers `-EXECABORT` naming the error, discards the transaction and
/// forgets the watched keys, in or out of `MULTI`, as Redis 7.0 does.
#[cold]
pub(super) fn refuse(
    server: &Server,
    client: &mut Client,
    reply: &mut Reply,
    command: Option<&Command>,
    error: &[u8],
) {
    if command.is_some_and(|c| c.name == "exec") {
        let reason = error.strip_prefix(b"ERR ").unwrap_or(error);
        let mut text = b"EXECABORT Transaction discarded because of: ".to_vec();
        text.extend_from_slice(reason);
        reply.error_bytes(&text);
        end(server, client);
        return;
    }
    if let Some(queue) = client.transaction.queue.as_mut() {
        queue.refused = true;
    }
    reply.error_bytes(error);
}

/// Ends the client's transaction, if any, and forgets the keys it watches (`DISCARD`,
/// `RESET`, the connection's end).
pub fn end(server: &Server, client: &mut Client) {
    if let Some(queue) = client.transaction.queue.take() {
        client.transaction.spare = queue.recycle();
    }
    client.info.set_flag(flag::MULTI, false);
    client.info.queued.store(-1, Ordering::Relaxed);
    unwatch_all(server, client);
}

/// Forgets the keys the client watches.
fn unwatch_all(server: &Server, client: &mut Client) {
    let transaction = &mut client.transaction;
    if transaction.watched.is_empty() {
        return;
    }
    if let Some(dirty) = &transaction.dirty {
        let keys = transaction.watched.iter().map(|(db, k, _)| (*db, &k[..]));
        server.keyspace.watches().unwatch(keys, dirty);
        dirty.store(false, Ordering::Relaxed);
    }
    transaction.watched.clear();
}

/// `MULTI`: OK; the next commands are queued until `EXEC` or `DISCARD`.
fn multi(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    if ctx.client.transaction.in_multi() {
        return Err(ErrorReply::err("MULTI calls can not be nested"));
    }
    ctx.client.transaction.queue = Some(std::mem::take(&mut ctx.client.transaction.spare));
    ctx.client.info.set_flag(flag::MULTI, true);
    ctx.client.info.queued.store(0, Ordering::Relaxed);
    ctx.reply.ok();
    Ok(())
}

/// `DISCARD`: OK; the queued commands are dropped and every key unwatched.
fn discard(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    if !ctx.client.transaction.in_multi() {
        return Err(ErrorReply::err("DISCARD without MULTI"));
    }
    end(ctx.server, ctx.client);
    ctx.reply.ok();
    Ok(())
}

/// `EXEC`: an array of the queued commands' replies; a null array if a watched key changed;
/// `-EXECABORT` if a command was refused while queueing.
fn exec(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let Some(queue) = ctx.client.transaction.queue.take() else {
        return Err(ErrorReply::err("EXEC without MULTI"));
    };
    let server = ctx.server;
    if queue.refused {
        end(server, ctx.client);
        ctx.client.transaction.spare = queue.recycle();
        return Err(ErrorReply::new(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let version = server.settings_version();
    let mut locked = server.keyspace.lock_all();
    let changed = ctx.client.transaction.changed(&mut locked);
    if changed {
        drop(locked);
        end(server, ctx.client);
        ctx.client.transaction.spare = queue.recycle();
        ctx.reply.null_array();
        return Ok(());
    }
    // The keys are forgotten before the commands run, as Redis does; `CLIENT INFO` still
    // shows the transaction (`flags=x`, `multi=<queued>`) until it ends.
    unwatch_all(server, ctx.client);
    ctx.reply.array(queue.commands.len());
    let reply_mode = std::mem::take(&mut ctx.client.reply_mode);
    let mut inner = Ctx {
        server,
        client: &mut *ctx.client,
        reply: &mut *ctx.reply,
        shards: Shards::holding(locked),
    };
    for (id, at) in &queue.commands {
        let args = Args::new(&queue.bytes, &queue.ranges[at.clone()]);
        super::call_queued(&mut inner, *id, args);
    }
    drop(inner);
    ctx.client.reply_mode = reply_mode;
    end(server, ctx.client);
    ctx.client.transaction.spare = queue.recycle();
    if server.settings_version() != version {
        // A `CONFIG SET` inside the transaction could not rebuild the caches while it held
        // the shards.
        server.apply_eviction();
    }
    Ok(())
}

/// `WATCH key [key ...]`: OK; the next `EXEC` fails if any of the keys changes first.
fn watch(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if ctx.client.transaction.in_multi() {
        return Err(ErrorReply::err("WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    let keys = args.from(1);
    let mut locked = ctx.shards.lock_keys(keys.iter());
    let transaction = &mut ctx.client.transaction;
    let dirty = transaction.dirty.get_or_insert_with(Dirty::default).clone();
    for key in keys.iter() {
        if transaction
            .watched
            .iter()
            .any(|(d, k, _)| *d == db && k == key)
        {
            continue;
        }
        let live = locked.shard(key).contains(db, key);
        ctx.server.keyspace.watches().watch(db, key, &dirty);
        transaction.watched.push((db, key.to_vec(), live));
    }
    drop(locked);
    ctx.reply.ok();
    Ok(())
}

/// `UNWATCH`: OK; no key is watched any more.
fn unwatch(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    unwatch_all(ctx.server, ctx.client);
    ctx.reply.ok();
    Ok(())
}
