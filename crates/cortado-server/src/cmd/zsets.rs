//! Sorted-set commands: `ZADD` and the other single-member commands, pops, random members,
//! removal by range, `ZSCAN`; the range readers and the set algebra are in [`ranges`].
//!
//! The structure is [`crate::keyspace::zset`]: ranks and ranges in O(log n), small sets in
//! one buffer. Arguments are read in Redis 7.0's order (options, then numbers, then the key),
//! since that decides which error a client gets, and replies take Redis 7.0's RESP3 forms
//! (scores as doubles, `WITHSCORES` as pairs). A command that empties a set deletes its key
//! and tells `del`, as Redis does (`change`).

pub mod ranges;

use super::collections::reply_empty_scan;
use super::flags::*;
use super::{syntax_error, wrong_type, Args, CmdResult, Command, Ctx, Keys, KEY1, NO_KEYS};
use crate::keyspace::zset::ZSet;
use crate::keyspace::{Expire, Shard, Value};
use crate::notify::class::{GENERIC, ZSET};
use crate::protocol::{ErrorReply, Reply};
use ranges::*;

command_constructor!("sorted-set");

/// The sorted-set family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "zadd",
        -4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds members with scores to a sorted set, or changes their scores",
        "1.2.0",
        zadd,
    ),
    cmd(
        "zincrby",
        4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds to a member's score, adding the member if absent",
        "1.2.0",
        zincrby,
    ),
    cmd(
        "zrem",
        -3,
        WRITE | FAST,
        KEY1,
        "Removes members from a sorted set",
        "1.2.0",
        zrem,
    ),
    cmd(
        "zscore",
        3,
        READONLY | FAST,
        KEY1,
        "Reads a member's score",
        "1.2.0",
        zscore,
    ),
    cmd(
        "zmscore",
        -3,
        READONLY | FAST,
        KEY1,
        "Reads several members' scores",
        "6.2.0",
        zmscore,
    ),
    cmd(
        "zcard",
        2,
        READONLY | FAST,
        KEY1,
        "Counts a sorted set's members",
        "1.2.0",
        zcard,
    ),
    cmd(
        "zcount",
        4,
        READONLY | FAST,
        KEY1,
        "Counts the members with scores within a range",
        "2.0.0",
        zcount,
    ),
    cmd(
        "zlexcount",
        4,
        READONLY | FAST,
        KEY1,
        "Counts the members within a lexical range",
        "2.8.9",
        zlexcount,
    ),
    cmd(
        "zrange",
        -4,
        READONLY,
        KEY1,
        "Reads members by rank, score or lexical range, either way",
        "1.2.0",
        zrange,
    ),
    cmd(
        "zrangebyscore",
        -4,
        READONLY,
        KEY1,
        "Reads members with scores within a range, lowest first",
        "1.0.5",
        zrangebyscore,
    ),
    cmd(
        "zrevrangebyscore",
        -4,
        READONLY,
        KEY1,
        "Reads members with scores within a range, highest first",
        "2.2.0",
        zrevrangebyscore,
    ),
    cmd(
        "zrangebylex",
        -4,
        READONLY,
        KEY1,
        "Reads members within a lexical range, lowest first",
        "2.8.9",
        zrangebylex,
    ),
    cmd(
        "zrevrangebylex",
        -4,
        READONLY,
        KEY1,
        "Reads members within a lexical range, highest first",
        "2.8.9",
        zrevrangebylex,
    ),
    cmd(
        "zrevrange",
        -4,
        READONLY,
        KEY1,
        "Reads members by rank, highest first",
        "1.2.0",
        zrevrange,
    ),
    cmd(
        "zrangestore",
        -5,
        WRITE | DENYOOM,
        Keys {
            first: 1,
            last: 2,
            step: 1,
        },
        "Stores a range of a sorted set's members in another key",
        "6.2.0",
        zrangestore,
    ),
    cmd(
        "zrank",
        3,
        READONLY | FAST,
        KEY1,
        "Reads a member's rank, lowest score first",
        "2.0.0",
        zrank,
    ),
    cmd(
        "zrevrank",
        3,
        READONLY | FAST,
        KEY1,
        "Reads a member's rank, highest score first",
        "2.0.0",
        zrevrank,
    ),
    cmd(
        "zpopmin",
        -2,
        WRITE | FAST,
        KEY1,
        "Removes and returns the members with the lowest scores",
        "5.0.0",
        zpopmin,
    ),
    cmd(
        "zpopmax",
        -2,
        WRITE | FAST,
        KEY1,
        "Removes and returns the members with the highest scores",
        "5.0.0",
        zpopmax,
    ),
    cmd(
        "zmpop",
        -4,
        WRITE | MOVABLE_KEYS,
        NO_KEYS,
        "Pops the lowest or highest members of the first non-empty sorted set",
        "7.0.0",
        zmpop,
    ),
    cmd(
        "zrandmember",
        -2,
        READONLY,
        KEY1,
        "Reads members picked at random",
        "6.2.0",
        zrandmember,
    ),
    cmd(
        "zremrangebyscore",
        4,
        WRITE,
        KEY1,
        "Removes the members with scores within a range",
        "1.2.0",
        zremrangebyscore,
    ),
    cmd(
        "zremrangebyrank",
        4,
        WRITE,
        KEY1,
        "Removes the members within a range of ranks",
        "2.0.0",
        zremrangebyrank,
    ),
    cmd(
        "zremrangebylex",
        4,
        WRITE,
        KEY1,
        "Removes the members within a lexical range",
        "2.8.9",
        zremrangebylex,
    ),
    cmd(
        "zunion",
        -3,
        READONLY | MOVABLE_KEYS,
        NO_KEYS,
        "Reads the union of sorted sets",
        "6.2.0",
        zunion,
    ),
    cmd(
        "zinter",
        -3,
        READONLY | MOVABLE_KEYS,
        NO_KEYS,
        "Reads the intersection of sorted sets",
        "6.2.0",
        zinter,
    ),
    cmd(
        "zdiff",
        -3,
        READONLY | MOVABLE_KEYS,
        NO_KEYS,
        "Reads the members of the first sorted set not in the others",
        "6.2.0",
        zdiff,
    ),
    cmd(
        "zintercard",
        -3,
        READONLY | MOVABLE_KEYS,
        NO_KEYS,
        "Counts the members of the intersection of sorted sets",
        "7.0.0",
        zintercard,
    ),
    cmd(
        "zunionstore",
        -4,
        WRITE | DENYOOM | MOVABLE_KEYS,
        KEY1,
        "Stores the union of sorted sets",
        "2.0.0",
        zunionstore,
    ),
    cmd(
        "zinterstore",
        -4,
        WRITE | DENYOOM | MOVABLE_KEYS,
        KEY1,
        "Stores the intersection of sorted sets",
        "2.0.0",
        zinterstore,
    ),
    cmd(
        "zdiffstore",
        -4,
        WRITE | DENYOOM | MOVABLE_KEYS,
        KEY1,
        "Stores the members of the first sorted set not in the others",
        "6.2.0",
        zdiffstore,
    ),
    cmd(
        "zscan",
        -3,
        READONLY,
        KEY1,
        "Walks a sorted set's members and scores, a few at a time",
        "2.8.0",
        zscan,
    ),
];

/// The sorted set a value holds, or `WRONGTYPE`.
#[inline]
pub(crate) fn zset(value: &Value) -> Result<&ZSet, ErrorReply> {
    value.as_zset().ok_or_else(wrong_type)
}

/// The sorted set at `key` for a reading command: `None` if absent.
pub(crate) fn read<'s>(
    shard: &'s mut Shard,
    db: usize,
    key: &[u8],
) -> Result<Option<&'s ZSet>, ErrorReply> {
    shard.lookup_read(db, key).map(zset).transpose()
}

/// Runs `change` on the sorted set at `key` (see [`super::collections::change_existing`]).
pub(crate) fn change<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    change: impl FnOnce(&mut ZSet) -> Result<R, ErrorReply>,
) -> Result<Option<(R, bool)>, ErrorReply> {
    super::collections::change_existing(shard, db, key, change)
}

/// Tells `event` on `key`, and `del` after it if the key went.
pub(crate) fn notify_change(ctx: &Ctx<'_>, event: &'static str, key: &[u8], emptied: bool) {
    ctx.notify(ZSET, event, key);
    if emptied {
        ctx.notify(GENERIC, "del", key);
    }
}

/// Writes `entries` as Redis replies a range: members only, or with their scores (pairs in
/// RESP3, a flat array in RESP2).
pub(crate) fn reply_entries(reply: &mut Reply, entries: &[(Vec<u8>, f64)], withscores: bool) {
    if !withscores {
        reply.array(entries.len());
        for (m, _) in entries {
            reply.bulk(m);
        }
    } else if reply.is_resp3() {
        reply.array(entries.len());
        for (m, s) in entries {
            reply.array(2);
            reply.bulk(m);
            reply.double(*s);
        }
    } else {
        reply.array(entries.len() * 2);
        for (m, s) in entries {
            reply.bulk(m);
            reply.double(*s);
        }
    }
}

/// A score as `ZADD` and `ZINCRBY` take one (Redis's `getDoubleFromObject`): a whole float,
/// no spaces, not NaN, and not out of a double's range (`1e400` is refused, `inf` taken).
pub(crate) fn parse_score(bytes: &[u8]) -> Result<f64, ErrorReply> {
    let invalid = || ErrorReply::err("value is not a valid float");
    let value = super::args::parse_float(bytes).ok_or_else(invalid)?;
    if value.is_infinite() && !bytes.iter().any(|b| b.eq_ignore_ascii_case(&b'i')) {
        return Err(invalid());
    }
    Ok(value)
}

/// `ZADD`'s options.
#[derive(Debug, Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ...`: the members added (or changed,
/// with CH); with INCR, the new score, or nil if a condition stopped it.
fn zadd(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut i = 2;
    while i < args.len() {
        let f = args.get(i).to_ascii_lowercase();
        match f.as_slice() {
            b"nx" => flags.nx = true,
            b"xx" => flags.xx = true,
            b"gt" => flags.gt = true,
            b"lt" => flags.lt = true,
            b"ch" => flags.ch = true,
            b"incr" => flags.incr = true,
            _ => break,
        }
        i += 1;
    }
    let elements = args.len() - i;
    if elements % 2 != 0 || elements == 0 {
        return Err(syntax_error());
    }
    if flags.nx && flags.xx {
        return Err(ErrorReply::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(ErrorReply::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && elements > 2 {
        return Err(ErrorReply::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for j in (i..args.len()).step_by(2) {
        pairs.push((parse_score(args.get(j))?, args.get(j + 1)));
    }
    add(ctx, args.get(1), flags, &pairs)
}

/// `ZINCRBY key increment member`: the new score.
fn zincrby(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let by = parse_score(args.get(2))?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    add(ctx, args.get(1), flags, &[(by, args.get(3))])
}

/// The work of `ZADD` and `ZINCRBY`, as Redis's `zsetAdd` does it member by member.
fn add(ctx: &mut Ctx<'_>, key: &[u8], flags: AddFlags, pairs: &[(f64, &[u8])]) -> CmdResult {
    let db = ctx.db();
    let limits = ctx.server.settings().zset_limits;
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let exists = match shard.lookup_write(db, key) {
        Some(value) => {
            zset(value)?;
            true
        }
        None => false,
    };
    if !exists {
        if flags.xx {
            reply_add(ctx.reply, flags, 0, 0, None);
            return Ok(());
        }
        let longest = pairs.iter().map(|p| p.1.len()).max().unwrap_or(0);
        let set = ZSet::with_capacity(pairs.len(), longest, limits);
        shard.set(db, key, Value::ZSet(set), Expire::Never);
    }
    let (mut added, mut updated, mut last) = (0, 0, None);
    let mut value = shard.lookup_mut(db, key).expect("present or written above");
    let set = value.as_zset_mut().expect("checked above");
    for &(score, member) in pairs {
        match set.score(member) {
            Some(current) => {
                if flags.nx {
                    continue;
                }
                let mut new = score;
                if flags.incr {
                    new += current;
                    if new.is_nan() {
                        return Err(ErrorReply::err("resulting score is not a number (NaN)"));
                    }
                }
                if (flags.lt && new >= current) || (flags.gt && new <= current) {
                    continue;
                }
                if new != current {
                    set.insert(member, new, limits);
                    updated += 1;
                }
                last = Some(new);
            }
            None if flags.xx => {}
            None => {
                set.insert(member, score, limits);
                added += 1;
                last = Some(score);
            }
        }
    }
    drop(value);
    if added + updated > 0 {
        ctx.notify(ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    reply_add(ctx.reply, flags, added, updated, last);
    Ok(())
}

fn reply_add(reply: &mut Reply, flags: AddFlags, added: i64, updated: i64, last: Option<f64>) {
    if flags.incr {
        match last {
            Some(score) => reply.double(score),
            None => reply.null(),
        }
    } else {
        reply.int(if flags.ch { added + updated } else { added });
    }
}

/// `ZREM key member...`: the members removed.
fn zrem(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let changed = change(locked.shard(key), db, key, |set| {
        Ok(args
            .iter()
            .skip(2)
            .filter(|m| set.remove(m).is_some())
            .count())
    })?;
    let removed = match changed {
        Some((removed, emptied)) => {
            if removed > 0 {
                notify_change(ctx, "zrem", key, emptied);
            }
            removed
        }
        None => 0,
    };
    ctx.reply.int(removed as i64);
    Ok(())
}

/// `ZSCORE key member`: the score, or nil.
fn zscore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    match read(locked.shard(key), db, key)?.and_then(|s| s.score(args.get(2))) {
        Some(score) => ctx.reply.double(score),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `ZMSCORE key member...`: each score, or nil.
fn zmscore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let set = read(locked.shard(key), db, key)?;
    ctx.reply.array(args.len() - 2);
    for member in args.iter().skip(2) {
        match set.and_then(|s| s.score(member)) {
            Some(score) => ctx.reply.double(score),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// `ZCARD key`: the number of members.
fn zcard(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let len = read(locked.shard(key), db, key)?.map_or(0, ZSet::len);
    ctx.reply.int(len as i64);
    Ok(())
}

/// `ZRANK key member` and `ZREVRANK`: the rank, or nil.
fn rank(ctx: &mut Ctx<'_>, args: Args<'_>, rev: bool) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let found = read(locked.shard(key), db, key)?.and_then(|set| {
        let rank = set.rank(args.get(2))?;
        Some(if rev { set.len() - 1 - rank } else { rank })
    });
    match found {
        Some(rank) => ctx.reply.int(rank as i64),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    rank(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    rank(ctx, args, true)
}

/// Removes and returns up to `count` entries from the low end of `set` (the high end if
/// `max`).
pub(crate) fn pop(set: &mut ZSet, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
    let from = if max { set.len().saturating_sub(1) } else { 0 };
    let entries = set.range(from, count, max);
    for (m, _) in &entries {
        set.remove(m);
    }
    entries
}

/// `ZPOPMIN key [count]` and `ZPOPMAX`: the entries popped, flat, or pairs in RESP3 when a
/// count is given.
fn pop_command(ctx: &mut Ctx<'_>, args: Args<'_>, max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(syntax_error());
    }
    let key = args.get(1);
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
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    if count == Some(0) {
        // The type is checked first: `WRONGTYPE` even for no entries.
        if let Some(value) = locked.shard(key).lookup_write(db, key) {
            zset(value)?;
        }
        ctx.reply.array(0);
        return Ok(());
    }
    let popped = change(locked.shard(key), db, key, |set| {
        Ok(pop(set, max, count.unwrap_or(1)))
    })?;
    let Some((entries, emptied)) = popped else {
        ctx.reply.array(0);
        return Ok(());
    };
    notify_change(ctx, if max { "zpopmax" } else { "zpopmin" }, key, emptied);
    if count.is_some() {
        reply_entries(ctx.reply, &entries, true);
    } else {
        reply_flat(ctx.reply, &entries);
    }
    Ok(())
}

/// Entries as one flat array of members and scores, in either protocol.
pub(crate) fn reply_flat(reply: &mut Reply, entries: &[(Vec<u8>, f64)]) {
    reply.array(entries.len() * 2);
    for (m, s) in entries {
        reply.bulk(m);
        reply.double(*s);
    }
}

fn zpopmin(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_command(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    pop_command(ctx, args, true)
}
/// The arguments of `ZMPOP`, `BZMPOP`, `LMPOP` and `BLMPOP` from the key count at
/// `numkeys_at` on: the keys, whether the second of `ends` was named, and the count (1 if
/// none). Errors as Redis's, in its order.
pub(crate) fn mpop_args<'a>(
    args: Args<'a>,
    numkeys_at: usize,
    ends: (&str, &str),
) -> Result<(Args<'a>, bool, usize), ErrorReply> {
    let numkeys =
        args.int(numkeys_at)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| ErrorReply::err("numkeys should be greater than 0"))? as u64;
    let where_at = (numkeys_at as u64)
        .saturating_add(numkeys)
        .saturating_add(1);
    if where_at >= args.len() as u64 {
        return Err(syntax_error());
    }
    let where_at = where_at as usize;
    let second = if args.is(where_at, ends.0) {
        false
    } else if args.is(where_at, ends.1) {
        true
    } else {
        return Err(syntax_error());
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && args.is(j, "count") && j + 1 < args.len() {
            let n = args
                .int(j + 1)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| ErrorReply::err("count should be greater than 0"))?;
            count = Some(n as usize);
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    let keys = args.from(numkeys_at + 1).prefix(numkeys as usize);
    Ok((keys, second, count.unwrap_or(1)))
}

/// `ZMPOP numkeys key... MIN|MAX [COUNT count]`: the key popped and its entries, or nil.
fn zmpop(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (keys, max, count) = mpop_args(args, 1, ("min", "max"))?;
    if !super::blocking::serve_first(ctx, keys, &super::blocking::Task::ZMPop(max, count))? {
        ctx.reply.null_array();
    }
    Ok(())
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: a member, or `count` of them (distinct, or with
/// repeats if negative).
fn zrandmember(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() > 4 || (args.len() == 4 && !args.is(3, "withscores")) {
        return Err(syntax_error());
    }
    let key = args.get(1);
    let db = ctx.db();
    let random = super::collections::random_index;
    if args.len() == 2 {
        let mut locked = ctx.shards.lock(key);
        match read(locked.shard(key), db, key)? {
            Some(set) => {
                let (m, _) = set.range(random(set.len()), 1, false).remove(0);
                ctx.reply.bulk(&m);
            }
            None => ctx.reply.null(),
        }
        return Ok(());
    }
    let count = args.int(2)?;
    if count == i64::MIN {
        return Err(ErrorReply::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let withscores = args.len() == 4;
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(ErrorReply::err("value is out of range"));
    }
    let mut locked = ctx.shards.lock(key);
    let Some(set) = read(locked.shard(key), db, key)? else {
        ctx.reply.array(0);
        return Ok(());
    };
    let len = set.len();
    let picks: Vec<(Vec<u8>, f64)> = if count < 0 {
        (0..count.unsigned_abs())
            .map(|_| set.range(random(len), 1, false).remove(0))
            .collect()
    } else if count as u64 >= len as u64 {
        set.range(0, len, false)
    } else {
        let mut ranks = std::collections::HashSet::new();
        while ranks.len() < count as usize {
            ranks.insert(random(len));
        }
        ranks
            .into_iter()
            .map(|r| set.range(r, 1, false).remove(0))
            .collect()
    };
    reply_entries(ctx.reply, &picks, withscores);
    Ok(())
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor and members with their
/// scores. A small set is returned whole with cursor 0, as Redis returns a listpack; a
/// large one walks its member table ([`ZSet::scan`]).
fn zscan(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    // Redis's order: the cursor, the key, then the options.
    let key = args.get(1);
    let cursor = super::keyspace::parse_cursor(args.get(2))?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(set) = read(locked.shard(key), db, key)? else {
        reply_empty_scan(ctx.reply);
        return Ok(());
    };
    let options = super::collections::ScanOptions::parse(args, 3)?;
    let mut entries = Vec::new();
    let next = set.scan(cursor, options.count, |m, s| {
        if options.matches(m) {
            entries.push((m.to_vec(), s));
        }
    });
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(entries.len() * 2);
    for (m, s) in &entries {
        ctx.reply.bulk(m);
        ctx.reply
            .bulk(crate::protocol::format_double(*s).as_bytes());
    }
    Ok(())
}
