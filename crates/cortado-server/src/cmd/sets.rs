//! Set commands: members under one key, and the algebra of several (see
//! [`crate::keyspace::set`] for how a set is kept).
//!
//! Replies, errors and the order of their checks are Redis 7.0's, as the differential tests
//! (`tests/it/diff_sets.rs`) check against `redis-server`. A set emptied by a command loses
//! its key. The commands over several keys (`SINTER`, `SUNION`, `SDIFF`, their `STORE` forms,
//! `SINTERCARD`, `SMOVE`) lock the shards of all their keys at once, so they read and write
//! one instant's sets: every key is looked up first, as Redis does (which decides the hits,
//! misses and errors counted), then the sets are read together and the result computed and
//! stored under the same locks.

use std::borrow::Cow;

use super::collections::{
    change, change_existing, distinct_indices, random_index, reply_empty_scan, ScanOptions,
};
use super::flags::*;
use super::{syntax_error, wrong_type, Args, CmdResult, Command, Ctx, Keys, KEY1, NO_KEYS};
use crate::keyspace::set::Set;
use crate::keyspace::{Expire, Shard, Value};
use crate::notify::class::{GENERIC, SET};
use crate::protocol::ErrorReply;

command_constructor!("set");

const ALL_KEYS: Keys = Keys {
    first: 1,
    last: -1,
    step: 1,
};
const TWO_KEYS: Keys = Keys {
    first: 1,
    last: 2,
    step: 1,
};

/// The set family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "sadd",
        -3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds members to a set, creating it if needed; replies with how many are new",
        "1.0.0",
        sadd,
    ),
    cmd(
        "scard",
        2,
        READONLY | FAST,
        KEY1,
        "Counts the members of a set",
        "1.0.0",
        scard,
    ),
    cmd(
        "sdiff",
        -2,
        READONLY,
        ALL_KEYS,
        "Lists the members of the first set that no other set given has",
        "1.0.0",
        sdiff,
    ),
    cmd(
        "sdiffstore",
        -3,
        WRITE | DENYOOM,
        ALL_KEYS,
        "Stores the members of the first set that no other has under a destination key",
        "1.0.0",
        sdiffstore,
    ),
    cmd(
        "sinter",
        -2,
        READONLY,
        ALL_KEYS,
        "Lists the members every set given has",
        "1.0.0",
        sinter,
    ),
    cmd(
        "sintercard",
        -3,
        READONLY | MOVABLE_KEYS,
        NO_KEYS,
        "Counts the members every set given has, optionally stopping at a limit",
        "7.0.0",
        sintercard,
    ),
    cmd(
        "sinterstore",
        -3,
        WRITE | DENYOOM,
        ALL_KEYS,
        "Stores the members every set given has under a destination key",
        "1.0.0",
        sinterstore,
    ),
    cmd(
        "sismember",
        3,
        READONLY | FAST,
        KEY1,
        "Tells whether a value is a member of a set",
        "1.0.0",
        sismember,
    ),
    cmd(
        "smembers",
        2,
        READONLY,
        KEY1,
        "Lists every member of a set",
        "1.0.0",
        smembers,
    ),
    cmd(
        "smismember",
        -3,
        READONLY | FAST,
        KEY1,
        "Tells for each of several values whether it is a member of a set",
        "6.2.0",
        smismember,
    ),
    cmd(
        "smove",
        4,
        WRITE | FAST,
        TWO_KEYS,
        "Moves a member from one set to another",
        "1.0.0",
        smove,
    ),
    cmd(
        "spop",
        -2,
        WRITE | FAST,
        KEY1,
        "Removes members of a set picked at random and replies with them",
        "1.0.0",
        spop,
    ),
    cmd(
        "srandmember",
        -2,
        READONLY,
        KEY1,
        "Picks members of a set at random, optionally repeated, without removing them",
        "1.0.0",
        srandmember,
    ),
    cmd(
        "srem",
        -3,
        WRITE | FAST,
        KEY1,
        "Removes members from a set, and the key once it has none left",
        "1.0.0",
        srem,
    ),
    cmd(
        "sscan",
        -3,
        READONLY,
        KEY1,
        "Walks the members of a set a step at a time with a cursor",
        "2.8.0",
        sscan,
    ),
    cmd(
        "sunion",
        -2,
        READONLY,
        ALL_KEYS,
        "Lists the members any set given has",
        "1.0.0",
        sunion,
    ),
    cmd(
        "sunionstore",
        -3,
        WRITE | DENYOOM,
        ALL_KEYS,
        "Stores the members any set given has under a destination key",
        "1.0.0",
        sunionstore,
    ),
];

/// The set in a value, or `WRONGTYPE`.
fn set(value: &Value) -> Result<&Set, ErrorReply> {
    value.as_set().ok_or_else(wrong_type)
}

/// The set at `key` for a reading command (counted as a hit or miss): `None` if absent.
fn read<'s>(shard: &'s mut Shard, db: usize, key: &[u8]) -> Result<Option<&'s Set>, ErrorReply> {
    shard.lookup_read(db, key).map(set).transpose()
}

/// Replies with `members` as a set (an array over RESP2).
fn reply_members<'a>(
    reply: &mut crate::protocol::Reply,
    members: impl ExactSizeIterator<Item = Cow<'a, [u8]>>,
) {
    reply.set(members.len());
    for m in members {
        reply.bulk(&m);
    }
}

/// `SADD key member [member ...]`: the number of new members.
fn sadd(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let max_ints = ctx.server.settings().set_max_intset_entries;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let add = |s: &mut Set| -> Result<i64, ErrorReply> {
        Ok(args
            .from(2)
            .iter()
            .filter(|m| s.insert(m, max_ints))
            .count() as i64)
    };
    let added = match change::<Set, _, _>(shard, db, key, add)? {
        Ok((added, _)) => added,
        Err(add) => {
            let mut created = Set::for_member(args.get(2));
            let added = add(&mut created)?;
            shard.set(db, key, Value::Set(created), Expire::Never);
            added
        }
    };
    if added > 0 {
        ctx.notify(SET, "sadd", key);
    }
    ctx.reply.int(added);
    Ok(())
}

/// `SREM key member [member ...]`: the number of members removed.
fn srem(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let removed = change_existing::<Set, _>(locked.shard(key), db, key, |s| {
        Ok(args.from(2).iter().filter(|m| s.remove(m)).count() as i64)
    })?;
    let (removed, deleted) = removed.unwrap_or((0, false));
    if removed > 0 {
        ctx.notify(SET, "srem", key);
    }
    if deleted {
        ctx.notify(GENERIC, "del", key);
    }
    ctx.reply.int(removed);
    Ok(())
}

/// `SISMEMBER key member`: 1 or 0.
fn sismember(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let found = read(locked.shard(key), db, key)?.is_some_and(|s| s.contains(args.get(2)));
    ctx.reply.int(i64::from(found));
    Ok(())
}

/// `SMISMEMBER key member [member ...]`: 1 or 0 for each.
fn smismember(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let s = read(locked.shard(key), db, key)?;
    ctx.reply.array(args.len() - 2);
    for member in args.from(2).iter() {
        ctx.reply
            .int(i64::from(s.is_some_and(|s| s.contains(member))));
    }
    Ok(())
}

/// `SCARD key`: the number of members.
fn scard(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let n = read(locked.shard(key), db, key)?.map_or(0, Set::len);
    ctx.reply.int(n as i64);
    Ok(())
}

/// `SMEMBERS key`: every member.
fn smembers(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let members: Vec<Cow<'_, [u8]>> = match read(locked.shard(key), db, key)? {
        Some(s) => s.iter().collect(),
        None => Vec::new(),
    };
    reply_members(ctx.reply, members.into_iter());
    Ok(())
}

/// Redis's error for a count below `-i64::MAX`.
fn count_out_of_range() -> ErrorReply {
    ErrorReply::err(
        "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
    )
}

/// `SPOP key [count]`: one member removed at random (nil if none), or up to `count` of them.
fn spop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let count = match args.len() {
        2 => None,
        3 => {
            let n = crate::protocol::parse_i64(args.get(2))
                .filter(|n| *n >= 0)
                .ok_or_else(|| ErrorReply::err("value is out of range, must be positive"))?;
            Some(n as u64)
        }
        _ => return Err(syntax_error()),
    };
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    // Redis replies with a whole set by reading it as `SUNION` does, which counts a hit.
    let whole = |v: &Value| {
        v.as_set()
            .is_some_and(|s| count.is_some_and(|c| c >= s.len() as u64))
    };
    if shard.peek(db, key).is_some_and(whole) {
        shard.lookup_read(db, key);
    }
    let popped = change::<Set, _, _>(shard, db, key, |s| {
        let n = count.map_or(1, |c| c.min(s.len() as u64) as usize);
        let picks = if n == s.len() {
            (0..n).collect()
        } else {
            distinct_indices(s.len(), n)
        };
        let members: Vec<Vec<u8>> = picks.iter().map(|&i| s.at(i).into_owned()).collect();
        for m in &members {
            s.remove(m);
        }
        Ok(members)
    })?;
    let (members, deleted) = popped.unwrap_or_default();
    // Redis tells `spop`, replies, then tells `del`.
    if !members.is_empty() {
        ctx.notify(SET, "spop", key);
    }
    match count {
        None => match members.first() {
            Some(m) => ctx.reply.bulk(m),
            None => ctx.reply.null(),
        },
        Some(_) => reply_members(ctx.reply, members.iter().map(|m| Cow::Borrowed(&m[..]))),
    }
    if deleted {
        ctx.notify(GENERIC, "del", key);
    }
    Ok(())
}

/// `SRANDMEMBER key [count]`: one member picked at random (nil if none), or `count` distinct
/// members (all if fewer), or with a negative count that many picks with repetition.
fn srandmember(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let count = match args.len() {
        2 => None,
        3 => match args.int(2)? {
            i64::MIN => return Err(count_out_of_range()),
            n => Some(n),
        },
        _ => return Err(syntax_error()),
    };
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let s = read(locked.shard(key), db, key)?;
    let Some(count) = count else {
        match s {
            Some(s) => ctx.reply.bulk(&s.at(random_index(s.len()))),
            None => ctx.reply.null(),
        }
        return Ok(());
    };
    let Some(s) = s else {
        ctx.reply.array(0);
        return Ok(());
    };
    let len = s.len();
    if count < 0 {
        ctx.reply.array(count.unsigned_abs() as usize);
        for _ in 0..count.unsigned_abs() {
            ctx.reply.bulk(&s.at(random_index(len)));
        }
    } else if count as u64 >= len as u64 {
        ctx.reply.array(len);
        for m in s.iter() {
            ctx.reply.bulk(&m);
        }
    } else {
        let picks = distinct_indices(len, count as usize);
        ctx.reply.array(picks.len());
        for i in picks {
            ctx.reply.bulk(&s.at(i));
        }
    }
    Ok(())
}

/// `SMOVE source destination member`: 1 if moved, 0 if `source` lacks it.
fn smove(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (src, dst, member) = (args.get(1), args.get(2), args.get(3));
    let db = ctx.db();
    let max_ints = ctx.server.settings().set_max_intset_entries;
    let mut locked = ctx.shards.lock_keys([src, dst]);
    let Some(from) = locked.shard(src).lookup_write(db, src) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let has = set(from)?.contains(member);
    if locked
        .shard(dst)
        .lookup_write(db, dst)
        .is_some_and(|v| v.as_set().is_none())
    {
        return Err(wrong_type());
    }
    if src == dst || !has {
        ctx.reply.int(i64::from(has));
        return Ok(());
    }
    let removed = change_existing::<Set, _>(locked.shard(src), db, src, |s| Ok(s.remove(member)))?;
    ctx.notify(SET, "srem", src);
    if matches!(removed, Some((_, true))) {
        ctx.notify(GENERIC, "del", src);
    }
    let shard = locked.shard(dst);
    let added = change::<Set, _, _>(shard, db, dst, |s| Ok(s.insert(member, max_ints)))?;
    let added = match added {
        Ok((added, _)) => added,
        Err(_) => {
            let mut created = Set::for_member(member);
            created.insert(member, max_ints);
            shard.set(db, dst, Value::Set(created), Expire::Never);
            true
        }
    };
    if added {
        ctx.notify(SET, "sadd", dst);
    }
    ctx.reply.int(1);
    Ok(())
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor and members.
fn sscan(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let cursor = super::keyspace::parse_cursor(args.get(2))?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(s) = read(locked.shard(key), db, key)? else {
        reply_empty_scan(ctx.reply);
        return Ok(());
    };
    let options = ScanOptions::parse(args, 3)?;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(cursor, options.count, |m| {
        if options.matches(m) {
            found.push(m.to_vec());
        }
    });
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(found.len());
    for m in found {
        ctx.reply.bulk(&m);
    }
    Ok(())
}

/// Which set algebra a command computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// Looks up the sets at `keys` as Redis does, each counted as a hit or a miss (the `STORE`
/// forms too): `WRONGTYPE` for any key of another type, even after a missing key.
fn look_up_all(
    locked: &mut crate::keyspace::Locked<'_>,
    db: usize,
    keys: &[&[u8]],
) -> Result<(), ErrorReply> {
    for key in keys {
        if let Some(v) = locked.shard(key).lookup_read(db, key) {
            set(v)?;
        }
    }
    Ok(())
}

/// Computes `op` over the sets at `keys` (looked up already: see [`look_up_all`]), into a
/// set built as Redis builds its result (of integers while it can); `limit` stops an
/// intersection at that many members (0: no limit).
fn compute(
    locked: &mut crate::keyspace::Locked<'_>,
    db: usize,
    keys: &[&[u8]],
    op: Op,
    max_ints: usize,
    limit: usize,
) -> Set {
    let keyspace = locked.keyspace();
    let shards = locked.shards();
    let get = |key: &[u8]| -> Option<&Set> {
        let i = keyspace.shard_of(key);
        let at = shards.binary_search_by_key(&i, |(j, _)| *j).ok()?;
        shards[at].1.db_ref(db)?.peek(key)?.as_set()
    };
    let sets: Vec<Option<&Set>> = keys.iter().map(|k| get(k)).collect();
    let mut out = Set::new();
    match op {
        Op::Inter => {
            let Some(mut sets) = sets.into_iter().collect::<Option<Vec<&Set>>>() else {
                return out;
            };
            sets.sort_by_key(|s| s.len());
            for m in sets[0].iter() {
                if sets[1..].iter().all(|s| s.contains(&m)) {
                    out.insert(&m, max_ints);
                    if limit > 0 && out.len() >= limit {
                        break;
                    }
                }
            }
        }
        Op::Union => {
            for s in sets.into_iter().flatten() {
                for m in s.iter() {
                    out.insert(&m, max_ints);
                }
            }
        }
        Op::Diff => {
            let Some(first) = sets[0] else {
                return out;
            };
            for m in first.iter() {
                if !sets[1..].iter().flatten().any(|s| s.contains(&m)) {
                    out.insert(&m, max_ints);
                }
            }
        }
    }
    out
}

/// `SINTER`, `SUNION`, `SDIFF`: the result as a set reply.
fn algebra(ctx: &mut Ctx<'_>, args: Args<'_>, op: Op) -> CmdResult {
    let keys: Vec<&[u8]> = args.from(1).iter().collect();
    let db = ctx.db();
    let max_ints = ctx.server.settings().set_max_intset_entries;
    let mut locked = ctx.shards.lock_keys(keys.iter().copied());
    look_up_all(&mut locked, db, &keys)?;
    let result = compute(&mut locked, db, &keys, op, max_ints, 0);
    drop(locked);
    let members: Vec<Cow<'_, [u8]>> = result.iter().collect();
    reply_members(ctx.reply, members.into_iter());
    Ok(())
}

fn sinter(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    algebra(ctx, args, Op::Inter)
}

fn sunion(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    algebra(ctx, args, Op::Union)
}

fn sdiff(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    algebra(ctx, args, Op::Diff)
}

/// `SINTERSTORE`, `SUNIONSTORE`, `SDIFFSTORE destination key [key ...]`: the size of the
/// result, stored at `destination` (without a lifetime), or the destination deleted if empty.
fn store(ctx: &mut Ctx<'_>, args: Args<'_>, op: Op, event: &'static str) -> CmdResult {
    let dst = args.get(1);
    let keys: Vec<&[u8]> = args.from(2).iter().collect();
    let db = ctx.db();
    let max_ints = ctx.server.settings().set_max_intset_entries;
    let mut locked = ctx.shards.lock_keys(args.from(1).iter());
    look_up_all(&mut locked, db, &keys)?;
    let result = compute(&mut locked, db, &keys, op, max_ints, 0);
    let n = result.len();
    let shard = locked.shard(dst);
    // Redis replies after telling the event for `SINTERSTORE`, before for the others.
    if op != Op::Inter {
        ctx.reply.int(n as i64);
    }
    if n == 0 {
        if shard.remove(db, dst).is_some() {
            ctx.notify(GENERIC, "del", dst);
        }
    } else {
        shard.set(db, dst, Value::Set(result), Expire::Never);
        ctx.notify(SET, event, dst);
    }
    if op == Op::Inter {
        ctx.reply.int(n as i64);
    }
    Ok(())
}

fn sinterstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    store(ctx, args, Op::Inter, "sinterstore")
}

fn sunionstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    store(ctx, args, Op::Union, "sunionstore")
}

fn sdiffstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    store(ctx, args, Op::Diff, "sdiffstore")
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: the size of the intersection, at most
/// `limit` if one is given (0: none).
fn sintercard(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let numkeys = args
        .int(1)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ErrorReply::err("numkeys should be greater than 0"))?;
    if numkeys as u64 > (args.len() - 2) as u64 {
        return Err(ErrorReply::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let numkeys = numkeys as usize;
    let mut limit = 0;
    let mut i = 2 + numkeys;
    while i < args.len() {
        if args.is(i, "limit") && i + 1 < args.len() {
            limit = crate::protocol::parse_i64(args.get(i + 1))
                .filter(|n| *n >= 0)
                .ok_or_else(|| ErrorReply::err("LIMIT can't be negative"))?;
            i += 2;
        } else {
            return Err(syntax_error());
        }
    }
    let keys: Vec<&[u8]> = args.from(2).iter().take(numkeys).collect();
    let db = ctx.db();
    let max_ints = ctx.server.settings().set_max_intset_entries;
    let mut locked = ctx.shards.lock_keys(keys.iter().copied());
    look_up_all(&mut locked, db, &keys)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let n = compute(&mut locked, db, &keys, Op::Inter, max_ints, limit).len();
    ctx.reply.int(n as i64);
    Ok(())
}
