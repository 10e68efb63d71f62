//! The blocking commands (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`,
//! `BZPOPMAX`, `BZMPOP`), and the serving of the clients they block.
//!
//! A blocking command first does what its non-blocking form does (`serve_key`, which
//! `LMOVE`, `LMPOP` and `ZMPOP` run too). Finding nothing, it registers its client as a
//! [`Waiter`] of its keys (in [`crate::keyspace::wait`]) while it still holds their shards,
//! and the connection stops running the client's commands until the waiter is settled:
//! served, timed out, or gone. Inside `MULTI` or a script it does not block: it answers as
//! a timeout would at once, as Redis does.
//!
//! # Design
//!
//! - **Served by the writer, after it.** Every write tells the registry of the key it
//!   changed ([`Ctx::notify_db`]); once the writing command (a push, an `EXEC`, a script) has
//!   released its shards, [`serve_ready`] serves each signalled key's waiters in the order
//!   they blocked, while the key has something to give, and encodes each reply for its
//!   client, whose connection sends it. Serving under the keys' shards, in the writer's
//!   thread, means a waiter is served before any later command of another client can take
//!   the element, as in Redis (where blocked clients are served before the next command).
//! - **Nothing costs the others.** A write pays one relaxed load (nobody waits) and
//!   `execute` one more (no key is ready).
//! - **A waiter leaves no trace**: a timeout, a disconnect or a service settles its state
//!   once and takes it out of every queue.
//!
//! The choices, and what was measured: `docs/decisions/0241-server-zsets-lists.md`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::flags::*;
use super::lists::{self, pop_event, push_event};
use super::zsets;
use super::{Args, CmdResult, Command, Ctx, Keys, NO_KEYS};
use crate::keyspace::list::End;
use crate::keyspace::wait::{State, Waiter};
use crate::keyspace::{Keyspace, Locked};
use crate::notify::class::{GENERIC, LIST, ZSET};
use crate::protocol::{ErrorReply, Reply};
use crate::server::Server;

command_constructor!("list");

/// A blocking sorted-set command: Redis files these under `sorted-set`.
const fn zcmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        group: "sorted-set",
        ..cmd(name, arity, flags, keys, summary, since, handler)
    }
}

/// The blocking commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "blpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        Keys {
            first: 1,
            last: -2,
            step: 1,
        },
        "Pops the head of the first non-empty list, waiting for one",
        "2.0.0",
        blpop,
    ),
    cmd(
        "brpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        Keys {
            first: 1,
            last: -2,
            step: 1,
        },
        "Pops the tail of the first non-empty list, waiting for one",
        "2.0.0",
        brpop,
    ),
    cmd(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        Keys {
            first: 1,
            last: 2,
            step: 1,
        },
        "Moves an element between lists, waiting for one",
        "6.2.0",
        blmove,
    ),
    cmd(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        Keys {
            first: 1,
            last: 2,
            step: 1,
        },
        "Moves the tail of one list to the head of another, waiting for one",
        "2.2.0",
        brpoplpush,
    ),
    cmd(
        "blmpop",
        -5,
        WRITE | BLOCKING | MOVABLE_KEYS,
        NO_KEYS,
        "Pops elements from the first non-empty list, waiting for one",
        "7.0.0",
        blmpop,
    ),
    zcmd(
        "bzpopmin",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        Keys {
            first: 1,
            last: -2,
            step: 1,
        },
        "Pops the lowest member of the first non-empty sorted set, waiting for one",
        "5.0.0",
        bzpopmin,
    ),
    zcmd(
        "bzpopmax",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        Keys {
            first: 1,
            last: -2,
            step: 1,
        },
        "Pops the highest member of the first non-empty sorted set, waiting for one",
        "5.0.0",
        bzpopmax,
    ),
    zcmd(
        "bzmpop",
        -5,
        WRITE | BLOCKING | MOVABLE_KEYS,
        NO_KEYS,
        "Pops members of the first non-empty sorted set, waiting for one",
        "7.0.0",
        bzmpop,
    ),
];

/// What a blocked client takes once served, and how its reply looks.
#[derive(Debug, Clone)]
pub(crate) enum Task {
    /// `BLPOP`, `BRPOP`: one element, replied `[key, element]`.
    Pop(End),
    /// `LMPOP`, `BLMPOP`: up to `count` elements, replied `[key, [elements]]`.
    MPop(End, usize),
    /// `LMOVE`, `BLMOVE`: one element moved to `dst`, replied as the element.
    Move { from: End, to: End, dst: Vec<u8> },
    /// `BZPOPMIN`, `BZPOPMAX` (max): one entry, replied `[key, member, score]`.
    ZPop(bool),
    /// `ZMPOP`, `BZMPOP`: up to `count` entries, replied `[key, [[member, score]...]]`.
    ZMPop(bool, usize),
}

/// A registered waiter's task, with its client's protocol.
struct Blocked {
    task: Task,
    resp3: bool,
}

/// Tells a change to `key` as a command's `ctx.notify` does, for a client served outside its
/// own command: watchers, waiters, keyspace events.
fn tell(keyspace: &Keyspace, class: u32, event: &'static str, db: usize, key: &[u8]) {
    keyspace.watches().touch(db, key);
    keyspace.waits().signal(db, key);
    keyspace.notifications().key_event(class, event, db, key);
}

/// Does `task` on `key` of `db` if it holds something to take, writing the reply: `Ok(false)`
/// if the key is missing, `WRONGTYPE` if it holds another type. The shards of `key` (and of a
/// move's destination) are locked.
pub(crate) fn serve_key(
    keyspace: &Keyspace,
    locked: &mut Locked<'_>,
    db: usize,
    key: &[u8],
    task: &Task,
    reply: &mut Reply,
) -> Result<bool, ErrorReply> {
    match task {
        Task::Pop(end) | Task::MPop(end, _) => {
            let count = if let Task::MPop(_, n) = task { *n } else { 1 };
            let Some((popped, emptied)) = lists::pop(locked.shard(key), db, key, *end, count)?
            else {
                return Ok(false);
            };
            tell(keyspace, LIST, pop_event(*end), db, key);
            if emptied {
                tell(keyspace, GENERIC, "del", db, key);
            }
            reply.array(2);
            reply.bulk(key);
            if let Task::MPop(..) = task {
                reply.array(popped.len());
                for e in &popped {
                    reply.bulk(e);
                }
            } else {
                reply.bulk(&popped[0]);
            }
        }
        Task::Move { from, to, dst } => {
            match locked.shard(key).lookup_write(db, key) {
                None => return Ok(false),
                Some(value) => {
                    lists::list(value)?;
                }
            }
            if let Some(value) = locked.shard(dst).lookup_write(db, dst) {
                lists::list(value)?;
            }
            let (mut popped, emptied) =
                lists::pop(locked.shard(key), db, key, *from, 1)?.expect("checked above");
            let element = popped.pop().expect("a list is never empty");
            lists::push(locked.shard(dst), db, dst, *to, [element.as_slice()], false)?;
            tell(keyspace, LIST, push_event(*to), db, dst);
            tell(keyspace, LIST, pop_event(*from), db, key);
            if emptied {
                tell(keyspace, GENERIC, "del", db, key);
            }
            reply.bulk(&element);
        }
        Task::ZPop(max) | Task::ZMPop(max, _) => {
            let count = if let Task::ZMPop(_, n) = task { *n } else { 1 };
            let Some((entries, emptied)) = zsets::change(locked.shard(key), db, key, |set| {
                Ok(zsets::pop(set, *max, count))
            })?
            else {
                return Ok(false);
            };
            tell(
                keyspace,
                ZSET,
                if *max { "zpopmax" } else { "zpopmin" },
                db,
                key,
            );
            if emptied {
                tell(keyspace, GENERIC, "del", db, key);
            }
            if let Task::ZMPop(..) = task {
                reply.array(2);
                reply.bulk(key);
                reply.array(entries.len());
                for (m, s) in &entries {
                    reply.array(2);
                    reply.bulk(m);
                    reply.double(*s);
                }
            } else {
                let (m, s) = &entries[0];
                reply.array(3);
                reply.bulk(key);
                reply.bulk(m);
                reply.double(*s);
            }
        }
    }
    Ok(true)
}

impl Task {
    /// A move's destination, which must be locked with its source.
    fn destination(&self) -> Option<&[u8]> {
        match self {
            Task::Move { dst, .. } => Some(dst),
            _ => None,
        }
    }
}

/// Does `task` on the first of `keys` that holds something (see [`serve_key`]): whether one
/// did. For the non-blocking forms, and a blocking one's first look.
pub(crate) fn serve_first(
    ctx: &mut Ctx<'_>,
    keys: Args<'_>,
    task: &Task,
) -> Result<bool, ErrorReply> {
    let db = ctx.db();
    let keyspace = &ctx.server.keyspace;
    let mut locked = ctx.shards.lock_keys(keys.iter().chain(task.destination()));
    for key in keys.iter() {
        if serve_key(keyspace, &mut locked, db, key, task, ctx.reply)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A blocking command's timeout, as Redis's `getTimeoutFromObjectOrReply` reads one in
/// seconds: `None` for 0 (for ever).
fn parse_timeout(bytes: &[u8]) -> Result<Option<Duration>, ErrorReply> {
    let seconds = super::args::parse_float(bytes)
        .ok_or_else(|| ErrorReply::err("timeout is not a float or out of range"))?;
    let millis = (seconds * 1000.0).ceil();
    // Past `i64::MAX` milliseconds C's conversion wraps negative: Redis says so.
    if millis < 0.0 || millis >= i64::MAX as f64 {
        return Err(ErrorReply::err("timeout is negative"));
    }
    Ok((millis > 0.0).then(|| Duration::from_millis(millis as u64)))
}

/// Runs `task` on the first of `keys` that holds something, or blocks the client on them for
/// `timeout` (see the [module docs](self)); inside `MULTI` or a script, answers at once as a
/// timeout (`null_bulk` for the moves, as Redis).
fn block(
    ctx: &mut Ctx<'_>,
    keys: Args<'_>,
    timeout: Option<Duration>,
    task: Task,
    null_bulk: bool,
) -> CmdResult {
    let db = ctx.db();
    let keyspace = &ctx.server.keyspace;
    let mut locked = ctx.shards.lock_keys(keys.iter().chain(task.destination()));
    for key in keys.iter() {
        if serve_key(keyspace, &mut locked, db, key, &task, ctx.reply)? {
            return Ok(());
        }
    }
    if ctx.shards.is_held() {
        if null_bulk {
            ctx.reply.null();
        } else {
            ctx.reply.null_array();
        }
        return Ok(());
    }
    let info = ctx.client.info.clone();
    let resp3 = ctx.client.resp == 3;
    let waiter = Waiter::new(
        ctx.client.id,
        db,
        keys.iter().map(<[u8]>::to_vec).collect(),
        Box::new(Blocked { task, resp3 }),
        Box::new(move || info.wake()),
    );
    keyspace.waits().register(&waiter);
    drop(locked);
    ctx.client.info.set_flag(crate::client::flag::BLOCKED, true);
    ctx.client.blocked = Some(crate::client::Blocked {
        waiter,
        deadline: timeout.map(|t| Instant::now() + t),
    });
    Ok(())
}

/// Serves the keys signalled since the last call, each one's waiters in the order they
/// blocked, while it has something to give (see the [module docs](self)). Called with no
/// shard held, after a command that wrote.
pub fn serve_ready(server: &Server) {
    let keyspace = &server.keyspace;
    let waits = keyspace.waits();
    loop {
        let ready = waits.take_ready();
        if ready.is_empty() {
            return;
        }
        for (db, key) in ready {
            while let Some(waiter) = waits.first(db, &key) {
                let Some(blocked) = waiter.task.downcast_ref::<Blocked>() else {
                    waits.remove(&waiter);
                    continue;
                };
                let mut locked = keyspace
                    .lock_keys(std::iter::once(key.as_slice()).chain(blocked.task.destination()));
                let mut state = waiter.state();
                if !matches!(*state, State::Waiting) {
                    drop(state);
                    waits.remove(&waiter);
                    continue;
                }
                let mut reply = Reply::new();
                reply.set_resp3(blocked.resp3);
                if !matches!(
                    serve_key(keyspace, &mut locked, db, &key, &blocked.task, &mut reply),
                    Ok(true)
                ) {
                    break;
                }
                *state = State::Served(reply.bytes().to_vec());
                drop(state);
                drop(locked);
                waits.remove(&waiter);
                waiter.wake();
            }
        }
    }
}

/// `BLPOP key... timeout` and `BRPOP`.
fn pop_blocking(ctx: &mut Ctx<'_>, args: Args<'_>, end: End) -> CmdResult {
    let timeout = parse_timeout(args.get(args.len() - 1))?;
    let keys = args.from(1).prefix(args.len() - 2);
    block(ctx, keys, timeout, Task::Pop(end), false)
}

fn blpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_blocking(ctx, args, End::Left)
}

fn brpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_blocking(ctx, args, End::Right)
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
fn blmove(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (from, to) = (lists::parse_end(args, 3)?, lists::parse_end(args, 4)?);
    let timeout = parse_timeout(args.get(5))?;
    let task = Task::Move {
        from,
        to,
        dst: args.get(2).to_vec(),
    };
    block(ctx, args.from(1).prefix(1), timeout, task, true)
}

/// `BRPOPLPUSH source destination timeout`.
fn brpoplpush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let timeout = parse_timeout(args.get(3))?;
    let task = Task::Move {
        from: End::Right,
        to: End::Left,
        dst: args.get(2).to_vec(),
    };
    block(ctx, args.from(1).prefix(1), timeout, task, true)
}

/// `BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT count]`.
fn blmpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let timeout = parse_timeout(args.get(1))?;
    let (keys, right, count) = zsets::mpop_args(args, 2, ("left", "right"))?;
    let end = if right { End::Right } else { End::Left };
    block(ctx, keys, timeout, Task::MPop(end, count), false)
}

/// `BZPOPMIN key... timeout` and `BZPOPMAX`.
fn zpop_blocking(ctx: &mut Ctx<'_>, args: Args<'_>, max: bool) -> CmdResult {
    let timeout = parse_timeout(args.get(args.len() - 1))?;
    let keys = args.from(1).prefix(args.len() - 2);
    block(ctx, keys, timeout, Task::ZPop(max), false)
}

fn bzpopmin(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    zpop_blocking(ctx, args, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    zpop_blocking(ctx, args, true)
}

/// `BZMPOP timeout numkeys key... MIN|MAX [COUNT count]`.
fn bzmpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let timeout = parse_timeout(args.get(1))?;
    let (keys, max, count) = zsets::mpop_args(args, 2, ("min", "max"))?;
    block(ctx, keys, timeout, Task::ZMPop(max, count), false)
}

/// `CLIENT UNBLOCK`: settles client `id`'s waiter, if it is blocked, as a timeout or with
/// Redis's `-UNBLOCKED` error, and wakes it; whether it was blocked.
pub fn unblock(server: &Server, id: u64, error: bool) -> bool {
    let Some(waiter) = server.keyspace.waits().of_owner(id) else {
        return false;
    };
    let resp3 = waiter
        .task
        .downcast_ref::<Blocked>()
        .is_some_and(|b| b.resp3);
    {
        let mut state = waiter.state();
        if !matches!(*state, State::Waiting) {
            return false;
        }
        let mut reply = Reply::new();
        reply.set_resp3(resp3);
        if error {
            reply.error(&ErrorReply::new(
                "UNBLOCKED client unblocked via CLIENT UNBLOCK",
            ));
        } else {
            reply.null_array();
        }
        *state = State::Served(reply.bytes().to_vec());
    }
    server.keyspace.waits().remove(&waiter);
    waiter.wake();
    true
}

/// Settles a blocked client's waiter from its connection: `Some(reply)` once it is served
/// or, if `timed_out`, cancelled (a null array, as Redis answers a timeout); `None` while
/// it still waits. The waiter leaves the registry either way.
pub fn settle(
    server: &Server,
    waiter: &Arc<Waiter>,
    timed_out: bool,
    resp3: bool,
) -> Option<Vec<u8>> {
    let bytes = {
        let mut state = waiter.state();
        match std::mem::replace(&mut *state, State::Cancelled) {
            State::Served(bytes) => bytes,
            State::Waiting if !timed_out => {
                *state = State::Waiting;
                return None;
            }
            State::Waiting | State::Cancelled => {
                let mut reply = Reply::new();
                reply.set_resp3(resp3);
                reply.null_array();
                reply.bytes().to_vec()
            }
        }
    };
    server.keyspace.waits().remove(waiter);
    Some(bytes)
}
