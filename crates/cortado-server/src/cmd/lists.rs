//! List commands: pushes and pops at both ends, indexes and ranges, `LINSERT`, `LREM`,
//! `LTRIM`, `LPOS`, `LMOVE`, `LMPOP`; the blocking forms are in [`super::blocking`].
//!
//! The structure is [`crate::keyspace::list`]: chunks of entries, as Redis 7.0's quicklist
//! of listpacks (`OBJECT ENCODING` says `quicklist`). Arguments are read in Redis 7.0's
//! order, which decides the error a client gets; a command that empties a list deletes its
//! key and tells `del` (`collections::change_existing`).

use super::blocking::{serve_first, Task};
use super::collections::change_existing as change;
use super::flags::*;
use super::{syntax_error, wrong_type, Args, CmdResult, Command, Ctx, Keys, KEY1, NO_KEYS};
use crate::keyspace::list::{End, List};
use crate::keyspace::{Expire, Shard, Value};
use crate::notify::class::{GENERIC, LIST};
use crate::protocol::ErrorReply;

command_constructor!("list");

/// The list family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "lpush",
        -3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds elements at the head of a list",
        "1.0.0",
        lpush,
    ),
    cmd(
        "rpush",
        -3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds elements at the tail of a list",
        "1.0.0",
        rpush,
    ),
    cmd(
        "lpushx",
        -3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds elements at the head of a list that exists",
        "2.2.0",
        lpushx,
    ),
    cmd(
        "rpushx",
        -3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds elements at the tail of a list that exists",
        "2.2.0",
        rpushx,
    ),
    cmd(
        "lpop",
        -2,
        WRITE | FAST,
        KEY1,
        "Removes and returns elements from the head of a list",
        "1.0.0",
        lpop,
    ),
    cmd(
        "rpop",
        -2,
        WRITE | FAST,
        KEY1,
        "Removes and returns elements from the tail of a list",
        "1.0.0",
        rpop,
    ),
    cmd(
        "llen",
        2,
        READONLY | FAST,
        KEY1,
        "Counts a list's elements",
        "1.0.0",
        llen,
    ),
    cmd(
        "lrange",
        4,
        READONLY,
        KEY1,
        "Reads a range of a list's elements",
        "1.0.0",
        lrange,
    ),
    cmd(
        "lindex",
        3,
        READONLY,
        KEY1,
        "Reads the element at an index",
        "1.0.0",
        lindex,
    ),
    cmd(
        "lset",
        4,
        WRITE | DENYOOM,
        KEY1,
        "Writes the element at an index",
        "1.0.0",
        lset,
    ),
    cmd(
        "linsert",
        5,
        WRITE | DENYOOM,
        KEY1,
        "Inserts an element before or after another",
        "2.2.0",
        linsert,
    ),
    cmd(
        "lrem",
        4,
        WRITE,
        KEY1,
        "Removes elements equal to a value",
        "1.0.0",
        lrem,
    ),
    cmd(
        "ltrim",
        4,
        WRITE,
        KEY1,
        "Keeps only a range of a list's elements",
        "1.0.0",
        ltrim,
    ),
    cmd(
        "lpos",
        -3,
        READONLY,
        KEY1,
        "Finds the indexes of elements equal to a value",
        "6.0.6",
        lpos,
    ),
    cmd(
        "lmove",
        5,
        WRITE | DENYOOM,
        Keys {
            first: 1,
            last: 2,
            step: 1,
        },
        "Pops an element from one list and pushes it onto another",
        "6.2.0",
        lmove,
    ),
    cmd(
        "rpoplpush",
        3,
        WRITE | DENYOOM,
        Keys {
            first: 1,
            last: 2,
            step: 1,
        },
        "Pops the tail of one list and pushes it at the head of another",
        "1.2.0",
        rpoplpush,
    ),
    cmd(
        "lmpop",
        -4,
        WRITE | MOVABLE_KEYS,
        NO_KEYS,
        "Pops elements from the first non-empty list",
        "7.0.0",
        lmpop,
    ),
];

/// The list a value holds, or `WRONGTYPE`.
pub(crate) fn list(value: &Value) -> Result<&List, ErrorReply> {
    value.as_list().ok_or_else(wrong_type)
}

/// The list at `key` for a reading command: `None` if absent.
fn read<'s>(shard: &'s mut Shard, db: usize, key: &[u8]) -> Result<Option<&'s List>, ErrorReply> {
    shard.lookup_read(db, key).map(list).transpose()
}

/// The event of a push or a pop at `end`.
pub(crate) fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// See [`push_event`].
pub(crate) fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// Pushes `elements` at `end` of the list at `key` in `db`, creating it unless `only_existing`
/// (`LPUSHX`): the new length, or `None` if there was no list to push to. The caller tells
/// the push.
pub(crate) fn push<'e>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    end: End,
    elements: impl IntoIterator<Item = &'e [u8]>,
    only_existing: bool,
) -> Result<Option<usize>, ErrorReply> {
    if let Some(mut value) = shard.lookup_mut(db, key) {
        let list = value.as_list_mut().ok_or_else(wrong_type)?;
        for e in elements {
            list.push(end, e);
        }
        return Ok(Some(list.len()));
    }
    if only_existing {
        return Ok(None);
    }
    let mut list = List::default();
    for e in elements {
        list.push(end, e);
    }
    let len = list.len();
    shard.set(db, key, Value::List(Box::new(list)), Expire::Never);
    Ok(Some(len))
}

fn push_command(ctx: &mut Ctx<'_>, args: Args<'_>, end: End, only_existing: bool) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let pushed = push(
        locked.shard(key),
        db,
        key,
        end,
        args.iter().skip(2),
        only_existing,
    )?;
    if pushed.is_some() {
        ctx.notify(LIST, push_event(end), key);
    }
    ctx.reply.int(pushed.unwrap_or(0) as i64);
    Ok(())
}

fn lpush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Right, true)
}

/// Elements popped, and whether their key went.
pub(crate) type Popped = (Vec<Vec<u8>>, bool);

/// Pops up to `count` elements from `end` of the list at `key`: `None` if there is no list;
/// the elements and whether the key went.
pub(crate) fn pop(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Popped>, ErrorReply> {
    change(shard, db, key, |list: &mut List| {
        Ok((0..count).map_while(|_| list.pop(end)).collect())
    })
}

/// Tells a pop from `key` at `end`, and `del` if the key went.
pub(crate) fn notify_pop(ctx: &Ctx<'_>, key: &[u8], end: End, emptied: bool) {
    ctx.notify(LIST, pop_event(end), key);
    if emptied {
        ctx.notify(GENERIC, "del", key);
    }
}

/// `LPOP key [count]` and `RPOP`: an element (or nil), or with a count an array (nil if
/// the key is missing).
fn pop_command(ctx: &mut Ctx<'_>, args: Args<'_>, end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(super::arity_error(if end == End::Left {
            "lpop"
        } else {
            "rpop"
        }));
    }
    let count = if args.len() == 3 {
        let n = args
            .int(2)
            .ok()
            .filter(|&n| n >= 0)
            .ok_or_else(|| ErrorReply::err("value is out of range, must be positive"))?;
        Some(n as usize)
    } else {
        None
    };
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    match shard.lookup_write(db, key) {
        None => {
            if count.is_some() {
                ctx.reply.null_array();
            } else {
                ctx.reply.null();
            }
            return Ok(());
        }
        Some(value) => {
            list(value)?;
        }
    }
    if count == Some(0) {
        ctx.reply.array(0);
        return Ok(());
    }
    let (popped, emptied) =
        pop(shard, db, key, end, count.unwrap_or(1))?.expect("the list is there");
    notify_pop(ctx, key, end, emptied);
    match count {
        Some(_) => {
            ctx.reply.array(popped.len());
            for e in &popped {
                ctx.reply.bulk(e);
            }
        }
        None => ctx.reply.bulk(&popped[0]),
    }
    Ok(())
}

fn lpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_command(ctx, args, End::Left)
}

fn rpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_command(ctx, args, End::Right)
}

/// `LLEN key`: the length.
fn llen(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let len = read(locked.shard(key), db, key)?.map_or(0, List::len);
    ctx.reply.int(len as i64);
    Ok(())
}

/// `LRANGE key start stop`: the elements in the range.
fn lrange(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (start, stop) = (args.int(2)?, args.int(3)?);
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(list) = read(locked.shard(key), db, key)? else {
        ctx.reply.array(0);
        return Ok(());
    };
    match super::zsets::ranges::clamp_ranks(start, stop, list.len()) {
        Some((start, stop)) => {
            ctx.reply.array(stop - start + 1);
            for e in list.iter_from(start, false).take(stop - start + 1) {
                ctx.reply.bulk(e);
            }
        }
        None => ctx.reply.array(0),
    }
    Ok(())
}

/// An index from the head (negative from the tail) as a position, if in range.
fn position(index: i64, len: usize) -> Option<usize> {
    let at = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&at).then_some(at as usize)
}

/// `LINDEX key index`: the element, or nil.
fn lindex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(list) = read(locked.shard(key), db, key)? else {
        ctx.reply.null();
        return Ok(());
    };
    let index = args.int(2)?;
    match position(index, list.len()).and_then(|at| list.get(at)) {
        Some(e) => ctx.reply.bulk(e),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `LSET key index element`: OK.
fn lset(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let Some(mut value) = shard.lookup_mut(db, key) else {
        return Err(ErrorReply::err("no such key"));
    };
    let list = value.as_list_mut().ok_or_else(wrong_type)?;
    let index = args.int(2)?;
    let at = position(index, list.len()).ok_or_else(|| ErrorReply::err("index out of range"))?;
    list.set(at, args.get(3));
    drop(value);
    ctx.notify(LIST, "lset", key);
    ctx.reply.ok();
    Ok(())
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 without the pivot, 0 without
/// the key.
fn linsert(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let after = if args.is(2, "after") {
        true
    } else if args.is(2, "before") {
        false
    } else {
        return Err(syntax_error());
    };
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let inserted = change(locked.shard(key), db, key, |list: &mut List| {
        Ok(list
            .insert(args.get(3), args.get(4), after)
            .then(|| list.len()))
    })?;
    match inserted {
        None => ctx.reply.int(0),
        Some((None, _)) => ctx.reply.int(-1),
        Some((Some(len), _)) => {
            ctx.notify(LIST, "linsert", key);
            ctx.reply.int(len as i64);
        }
    }
    Ok(())
}

/// `LREM key count element`: the elements removed.
fn lrem(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let count = args.int(2)?;
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let removed = change(locked.shard(key), db, key, |list: &mut List| {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        Ok(list.remove(args.get(3), n, count < 0))
    })?;
    let n = match removed {
        Some((n, emptied)) => {
            if n > 0 {
                ctx.notify(LIST, "lrem", key);
                if emptied {
                    ctx.notify(GENERIC, "del", key);
                }
            }
            n
        }
        None => 0,
    };
    ctx.reply.int(n as i64);
    Ok(())
}

/// `LTRIM key start stop`: OK.
fn ltrim(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (start, stop) = (args.int(2)?, args.int(3)?);
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let trimmed = change(locked.shard(key), db, key, |list: &mut List| {
        list.trim(super::zsets::ranges::clamp_ranks(start, stop, list.len()));
        Ok(())
    })?;
    if let Some(((), emptied)) = trimmed {
        ctx.notify(LIST, "ltrim", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    }
    ctx.reply.ok();
    Ok(())
}

/// `LPOS key element [RANK rank] [COUNT n] [MAXLEN len]`: the index of the match, or with
/// COUNT the indexes of the matches.
fn lpos(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<u64>, 0u64);
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if args.is(j, "rank") && more {
            rank = args.int(j + 1)?;
            if rank == i64::MIN {
                return Err(ErrorReply::err(
                    "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                ));
            }
            if rank == 0 {
                return Err(ErrorReply::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if args.is(j, "count") && more {
            let n = args.int(j + 1).ok().filter(|&n| n >= 0);
            count = Some(n.ok_or_else(|| ErrorReply::err("COUNT can't be negative"))? as u64);
        } else if args.is(j, "maxlen") && more {
            let n = args.int(j + 1).ok().filter(|&n| n >= 0);
            maxlen = n.ok_or_else(|| ErrorReply::err("MAXLEN can't be negative"))? as u64;
        } else {
            return Err(syntax_error());
        }
        j += 2;
    }
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(list) = read(locked.shard(key), db, key)? else {
        if count.is_some() {
            ctx.reply.array(0);
        } else {
            ctx.reply.null();
        }
        return Ok(());
    };
    let rev = rank < 0;
    let rank = rank.unsigned_abs();
    let len = list.len();
    let element = args.get(2);
    let from = if rev { len.saturating_sub(1) } else { 0 };
    let mut found = Vec::new();
    let mut matches = 0u64;
    for (index, e) in list.iter_from(from, rev).enumerate() {
        if maxlen != 0 && index as u64 >= maxlen {
            break;
        }
        if e != element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        found.push(if rev { len - 1 - index } else { index });
        match count {
            None => break,
            Some(c) if c != 0 && matches - rank + 1 >= c => break,
            Some(_) => {}
        }
    }
    match count {
        Some(_) => {
            ctx.reply.array(found.len());
            for i in found {
                ctx.reply.int(i as i64);
            }
        }
        None => match found.first() {
            Some(&i) => ctx.reply.int(i as i64),
            None => ctx.reply.null(),
        },
    }
    Ok(())
}

/// `LEFT` or `RIGHT`.
pub(crate) fn parse_end(args: Args<'_>, i: usize) -> Result<End, ErrorReply> {
    if args.is(i, "left") {
        Ok(End::Left)
    } else if args.is(i, "right") {
        Ok(End::Right)
    } else {
        Err(syntax_error())
    }
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: the element moved, or nil.
fn lmove(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (from, to) = (parse_end(args, 3)?, parse_end(args, 4)?);
    move_command(ctx, args, from, to)
}

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
fn rpoplpush(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    move_command(ctx, args, End::Right, End::Left)
}

fn move_command(ctx: &mut Ctx<'_>, args: Args<'_>, from: End, to: End) -> CmdResult {
    let task = Task::Move {
        from,
        to,
        dst: args.get(2).to_vec(),
    };
    if !serve_first(ctx, args.from(1).prefix(1), &task)? {
        ctx.reply.null();
    }
    Ok(())
}

/// `LMPOP numkeys key... LEFT|RIGHT [COUNT count]`: the key popped and its elements, or nil.
fn lmpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (keys, right, count) = super::zsets::mpop_args(args, 1, ("left", "right"))?;
    let end = if right { End::Right } else { End::Left };
    if !serve_first(ctx, keys, &Task::MPop(end, count))? {
        ctx.reply.null_array();
    }
    Ok(())
}
