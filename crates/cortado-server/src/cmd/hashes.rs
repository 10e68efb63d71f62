//! Hash commands: fields and values under one key (see [`crate::keyspace::hash`] for how a
//! hash is kept).
//!
//! Replies, errors and the order of their checks are Redis 7.0's, as the differential tests
//! (`tests/it/diff_hashes.rs`) check against `redis-server`: a command that writes looks its
//! key up without counting a keyspace hit or miss, one that reads counts it; a hash emptied by
//! `HDEL` loses its key; `HGETALL` replies with a map over RESP3, and `HRANDFIELD ...
//! WITHVALUES` with pairs.

use super::collections::{
    change, change_existing, distinct_indices, random_index, reply_empty_scan, ScanOptions,
};
use super::flags::*;
use super::{wrong_type, Args, CmdResult, Command, Ctx, KEY1};
use crate::keyspace::hash::Hash;
use crate::keyspace::{Expire, Shard, Value};
use crate::notify::class::{GENERIC, HASH};
use crate::protocol::ErrorReply;

command_constructor!("hash");

/// The hash family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "hdel",
        -3,
        WRITE | FAST,
        KEY1,
        "Removes fields from a hash, and the key once it has none left",
        "2.0.0",
        hdel,
    ),
    cmd(
        "hexists",
        3,
        READONLY | FAST,
        KEY1,
        "Tells whether a hash has a field",
        "2.0.0",
        hexists,
    ),
    cmd(
        "hget",
        3,
        READONLY | FAST,
        KEY1,
        "Reads the value of one field of a hash",
        "2.0.0",
        hget,
    ),
    cmd(
        "hgetall",
        2,
        READONLY,
        KEY1,
        "Reads every field of a hash with its value",
        "2.0.0",
        hgetall,
    ),
    cmd(
        "hincrby",
        4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds an integer to the number held by a field of a hash",
        "2.0.0",
        hincrby,
    ),
    cmd(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds a decimal amount to the number held by a field of a hash",
        "2.6.0",
        hincrbyfloat,
    ),
    cmd(
        "hkeys",
        2,
        READONLY,
        KEY1,
        "Lists the field names of a hash",
        "2.0.0",
        hkeys,
    ),
    cmd(
        "hlen",
        2,
        READONLY | FAST,
        KEY1,
        "Counts the fields of a hash",
        "2.0.0",
        hlen,
    ),
    cmd(
        "hmget",
        -3,
        READONLY | FAST,
        KEY1,
        "Reads the values of several fields of a hash",
        "2.0.0",
        hmget,
    ),
    cmd(
        "hmset",
        -4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Writes several fields of a hash (the older form of HSET, replying OK)",
        "2.0.0",
        hmset,
    ),
    cmd(
        "hrandfield",
        -2,
        READONLY,
        KEY1,
        "Picks fields of a hash at random, optionally repeated and with their values",
        "6.2.0",
        hrandfield,
    ),
    cmd(
        "hscan",
        -3,
        READONLY,
        KEY1,
        "Walks the fields and values of a hash a step at a time with a cursor",
        "2.8.0",
        hscan,
    ),
    cmd(
        "hset",
        -4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Writes fields of a hash, creating it if needed; replies with how many are new",
        "2.0.0",
        hset,
    ),
    cmd(
        "hsetnx",
        4,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Writes a field of a hash only if the hash lacks it",
        "2.0.0",
        hsetnx,
    ),
    cmd(
        "hstrlen",
        3,
        READONLY | FAST,
        KEY1,
        "Gives the length in bytes of the value of a hash field",
        "3.2.0",
        hstrlen,
    ),
    cmd(
        "hvals",
        2,
        READONLY,
        KEY1,
        "Lists the values of a hash",
        "2.0.0",
        hvals,
    ),
];

/// The hash in a value, or `WRONGTYPE`.
fn hash(value: &Value) -> Result<&Hash, ErrorReply> {
    value.as_hash().ok_or_else(wrong_type)
}

/// The hash at `key` for a reading command (counted as a hit or miss): `None` if absent.
fn read<'s>(shard: &'s mut Shard, db: usize, key: &[u8]) -> Result<Option<&'s Hash>, ErrorReply> {
    shard.lookup_read(db, key).map(hash).transpose()
}

/// Changes the hash at `key` with `edit`, creating it first if it is missing; a hash left
/// empty loses its key. Returns what `edit` returned and whether the key was deleted.
fn write<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    edit: impl FnOnce(&mut Hash) -> Result<R, ErrorReply>,
) -> Result<(R, bool), ErrorReply> {
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let edit = match change::<Hash, _, _>(shard, db, key, edit)? {
        Ok(done) => return Ok(done),
        Err(edit) => edit,
    };
    let mut created = Hash::new();
    let result = edit(&mut created)?;
    if !created.is_empty() {
        shard.set(db, key, Value::Hash(created), Expire::Never);
    }
    Ok((result, false))
}

/// `HSET key field value [field value ...]` and `HMSET`: the number of new fields (`OK` for
/// `HMSET`).
fn set_fields(ctx: &mut Ctx<'_>, args: Args<'_>, name: &str) -> Result<i64, ErrorReply> {
    if args.len() % 2 == 1 {
        return Err(super::arity_error(name));
    }
    let key = args.get(1);
    let limits = ctx.server.settings().hash_limits;
    let (added, _) = write(ctx, key, |h| {
        Ok((2..args.len())
            .step_by(2)
            .filter(|&i| h.insert(args.get(i), args.get(i + 1), limits))
            .count() as i64)
    })?;
    Ok(added)
}

// Redis replies before it tells the event, which decides where a RESP3 client subscribed to
// its own events gets it.
fn hset(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let added = set_fields(ctx, args, "hset")?;
    ctx.reply.int(added);
    ctx.notify(HASH, "hset", args.get(1));
    Ok(())
}

fn hmset(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_fields(ctx, args, "hmset")?;
    ctx.reply.ok();
    ctx.notify(HASH, "hset", args.get(1));
    Ok(())
}

/// `HSETNX key field value`: 1 if written, 0 if the field was there.
fn hsetnx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (key, field, value) = (args.get(1), args.get(2), args.get(3));
    let limits = ctx.server.settings().hash_limits;
    let (written, _) = write(ctx, key, |h| {
        Ok(h.get(field).is_none() && h.insert(field, value, limits))
    })?;
    ctx.reply.int(i64::from(written));
    if written {
        ctx.notify(HASH, "hset", key);
    }
    Ok(())
}

/// `HGET key field`: the value, or nil.
fn hget(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (key, field) = (args.get(1), args.get(2));
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    match read(locked.shard(key), db, key)?.and_then(|h| h.get(field)) {
        Some(value) => ctx.reply.bulk(value),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `HMGET key field [field ...]`: each value, nil where missing.
fn hmget(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let h = read(locked.shard(key), db, key)?;
    ctx.reply.array(args.len() - 2);
    for field in args.from(2).iter() {
        match h.and_then(|h| h.get(field)) {
            Some(value) => ctx.reply.bulk(value),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// `HDEL key field [field ...]`: the number of fields removed.
fn hdel(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let removed = change_existing::<Hash, _>(locked.shard(key), db, key, |h| {
        Ok(args.from(2).iter().filter(|f| h.remove(f)).count() as i64)
    })?;
    let (removed, deleted) = removed.unwrap_or((0, false));
    if removed > 0 {
        ctx.notify(HASH, "hdel", key);
    }
    if deleted {
        ctx.notify(GENERIC, "del", key);
    }
    ctx.reply.int(removed);
    Ok(())
}

/// Replies with a number read from the hash at `key` (0 if absent) by `figure`.
fn reply_figure(ctx: &mut Ctx<'_>, key: &[u8], figure: impl FnOnce(&Hash) -> usize) -> CmdResult {
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let n = read(locked.shard(key), db, key)?.map_or(0, figure);
    ctx.reply.int(n as i64);
    Ok(())
}

/// `HEXISTS key field`: 1 or 0.
fn hexists(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let field = args.get(2);
    reply_figure(ctx, args.get(1), |h| usize::from(h.get(field).is_some()))
}

/// `HLEN key`: the number of fields.
fn hlen(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    reply_figure(ctx, args.get(1), Hash::len)
}

/// `HSTRLEN key field`: the value's length, 0 if missing.
fn hstrlen(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let field = args.get(2);
    reply_figure(ctx, args.get(1), |h| h.get(field).map_or(0, <[u8]>::len))
}

/// What of each field `HKEYS`, `HVALS` and `HGETALL` reply with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

fn reply_all(ctx: &mut Ctx<'_>, key: &[u8], part: Part) -> CmdResult {
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(h) = read(locked.shard(key), db, key)? else {
        match part {
            Part::Both => ctx.reply.map(0),
            _ => ctx.reply.array(0),
        }
        return Ok(());
    };
    match part {
        Part::Both => ctx.reply.map(h.len()),
        _ => ctx.reply.array(h.len()),
    }
    for (field, value) in h.iter() {
        if part != Part::Values {
            ctx.reply.bulk(field);
        }
        if part != Part::Fields {
            ctx.reply.bulk(value);
        }
    }
    Ok(())
}

/// `HKEYS key`: the fields.
fn hkeys(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    reply_all(ctx, args.get(1), Part::Fields)
}

/// `HVALS key`: the values.
fn hvals(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    reply_all(ctx, args.get(1), Part::Values)
}

/// `HGETALL key`: fields and values (a map over RESP3).
fn hgetall(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    reply_all(ctx, args.get(1), Part::Both)
}

/// `HINCRBY key field increment`: the new value; a missing field counts as 0.
fn hincrby(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (key, field) = (args.get(1), args.get(2));
    let by = args.int(3)?;
    let limits = ctx.server.settings().hash_limits;
    let (new, _) = write(ctx, key, |h| {
        let old = match h.get(field) {
            Some(value) => crate::protocol::parse_i64(value)
                .ok_or_else(|| ErrorReply::err("hash value is not an integer"))?,
            None => 0,
        };
        let new = old
            .checked_add(by)
            .ok_or_else(|| ErrorReply::err("increment or decrement would overflow"))?;
        // A field's lifetime stays through an increment, as in Redis 7.4.
        h.update(field, itoa::Buffer::new().format(new).as_bytes(), limits);
        Ok(new)
    })?;
    ctx.reply.int(new);
    ctx.notify(HASH, "hincrby", key);
    Ok(())
}

/// `HINCRBYFLOAT key field increment`: the new value, as `INCRBYFLOAT` prints it.
fn hincrbyfloat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (key, field, by) = (args.get(1), args.get(2), args.get(3));
    // The increment is read first: not a number, or an infinity, is refused before the key.
    let infinite = ErrorReply::err("increment would produce NaN or Infinity");
    match crate::float::add_decimal(b"0", by) {
        Err(e) if e == infinite => return Err(ErrorReply::err("value is NaN or Infinity")),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    let limits = ctx.server.settings().hash_limits;
    let (sum, _) = write(ctx, key, |h| {
        let sum = match h.get(field) {
            Some(value) => crate::float::add_decimal(value, by).map_err(|e| {
                if e == infinite {
                    e
                } else {
                    ErrorReply::err("hash value is not a float")
                }
            })?,
            None => crate::float::add_decimal(b"0", by)?,
        };
        h.update(field, sum.as_bytes(), limits);
        Ok(sum)
    })?;
    ctx.reply.bulk(sum.as_bytes());
    ctx.notify(HASH, "hincrbyfloat", key);
    Ok(())
}

/// `HRANDFIELD key [count [WITHVALUES]]`: one field (nil for a missing key), or `count`
/// distinct fields (all if fewer), or with a negative count that many picks with
/// repetition; with values, pairs (flat over RESP2).
fn hrandfield(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    if args.len() == 2 {
        let mut locked = ctx.shards.lock(key);
        match read(locked.shard(key), db, key)? {
            Some(h) => ctx.reply.bulk(h.at(random_index(h.len())).0),
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
    let with_values = match args.len() {
        3 => false,
        4 if args.is(3, "withvalues") => true,
        _ => return Err(super::syntax_error()),
    };
    if with_values && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(ErrorReply::err("value is out of range"));
    }
    let mut locked = ctx.shards.lock(key);
    let Some(h) = read(locked.shard(key), db, key)? else {
        ctx.reply.array(0);
        return Ok(());
    };
    let len = h.len();
    // Picks with repetition are drawn as they are written: a count of billions is a reply of
    // billions (as from Redis), not a list of them first.
    let (n, mut picks): (usize, Box<dyn Iterator<Item = usize>>) = if count < 0 {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        (n, Box::new((0..n).map(|_| random_index(len))))
    } else if count as u64 >= len as u64 {
        (len, Box::new(0..len))
    } else {
        let picks = distinct_indices(len, count as usize);
        (picks.len(), Box::new(picks.into_iter()))
    };
    let resp3 = ctx.reply.is_resp3();
    ctx.reply.array(if with_values && !resp3 {
        n.saturating_mul(2)
    } else {
        n
    });
    // Walking a small hash to each index costs what its size does, so pick from a list.
    let pairs: Vec<(&[u8], &[u8])> = match h {
        Hash::Packed(_) => h.iter().collect(),
        Hash::Table(_) => Vec::new(),
    };
    for i in &mut picks {
        let (field, value) = if pairs.is_empty() { h.at(i) } else { pairs[i] };
        if with_values && resp3 {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(field);
        if with_values {
            ctx.reply.bulk(value);
        }
    }
    Ok(())
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor and fields with values.
fn hscan(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let cursor = super::keyspace::parse_cursor(args.get(2))?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(h) = read(locked.shard(key), db, key)? else {
        reply_empty_scan(ctx.reply);
        return Ok(());
    };
    let options = ScanOptions::parse(args, 3)?;
    let mut found: Vec<(&[u8], &[u8])> = Vec::new();
    let next = h.scan(cursor, options.count, |f, v| {
        if options.matches(f) {
            found.push((f, v));
        }
    });
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(found.len() * 2);
    for (f, v) in found {
        ctx.reply.bulk(f);
        ctx.reply.bulk(v);
    }
    Ok(())
}
