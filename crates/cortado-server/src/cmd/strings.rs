//! String commands: `GET`, `SET` and its variants, counters, ranges and bits.
//!
//! Strings are binary-safe byte strings of up to `proto-max-bulk-len` bytes; integers and floats
//! are strings that parse as one. Commands that change a string in place (`APPEND`, `INCR`,
//! `SETRANGE`, `SETBIT`, `INCRBYFLOAT`) keep the key's lifetime and take one lookup (the
//! library's `get_mut`); `SET` without `KEEPTTL` clears it, and a plain `SET` writes without
//! looking first. Each value records how it was written ([`Written`]), which decides what
//! `OBJECT ENCODING` reports, as Redis's encoding does. Arguments are read in Redis's order
//! (some commands look their key up before they read their options: `BITCOUNT`, `LCS`, the
//! expiry of `GETEX`), since that decides which error a client gets; every reply was checked
//! against `redis-server` 7.0 by the differential tests.

use super::args::parse_int;
use super::flags::*;
use super::{syntax_error, wrong_type, Args, CmdResult, Command, Ctx, Keys, KEY1};
use crate::keyspace::value::Growable;
use crate::keyspace::{Expire, Shard, Value, Written};
use crate::notify::class::{GENERIC, STRING};
use crate::protocol::ErrorReply;

command_constructor!("string");

/// A bit command: Redis files these under `bitmap`.
const fn bitmap(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        group: "bitmap",
        ..cmd(name, arity, flags, keys, summary, since, handler)
    }
}

const ALL_KEYS: Keys = Keys {
    first: 1,
    last: -1,
    step: 1,
};
const PAIRS: Keys = Keys {
    first: 1,
    last: -1,
    step: 2,
};
const TWO_KEYS: Keys = Keys {
    first: 1,
    last: 2,
    step: 1,
};

/// The string family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "append",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds bytes to the end of a string, creating it if absent; replies with the new length",
        "2.0.0",
        append,
    ),
    bitmap(
        "bitcount",
        -2,
        READONLY,
        KEY1,
        "Counts the 1 bits of a string, optionally within a byte or bit range",
        "2.6.0",
        bitcount,
    ),
    cmd(
        "decr",
        2,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Subtracts 1 from the integer stored in a key",
        "1.0.0",
        decr,
    ),
    cmd(
        "decrby",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Subtracts an amount from the integer stored in a key",
        "1.0.0",
        decrby,
    ),
    cmd(
        "get",
        2,
        READONLY | FAST,
        KEY1,
        "Reads a string key",
        "1.0.0",
        get,
    ),
    bitmap(
        "getbit",
        3,
        READONLY | FAST,
        KEY1,
        "Reads one bit of a string (0 past its end)",
        "2.2.0",
        getbit,
    ),
    cmd(
        "getdel",
        2,
        WRITE | FAST,
        KEY1,
        "Reads a string key and removes it in the same step",
        "6.2.0",
        getdel,
    ),
    cmd(
        "getex",
        -2,
        WRITE | FAST,
        KEY1,
        "Reads a string key and optionally changes or clears its lifetime",
        "6.2.0",
        getex,
    ),
    cmd(
        "getrange",
        4,
        READONLY,
        KEY1,
        "Reads a byte range of a string",
        "2.4.0",
        getrange,
    ),
    cmd(
        "getset",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Writes a string key and replies with what it held before",
        "1.0.0",
        getset,
    ),
    cmd(
        "incr",
        2,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds 1 to the integer stored in a key",
        "1.0.0",
        incr,
    ),
    cmd(
        "incrby",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds an amount to the integer stored in a key",
        "1.0.0",
        incrby,
    ),
    cmd(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Adds a decimal amount to the number stored in a key",
        "2.6.0",
        incrbyfloat,
    ),
    cmd(
        "lcs",
        -3,
        READONLY,
        TWO_KEYS,
        "Compares two strings: their longest common subsequence, its length or its positions",
        "7.0.0",
        lcs,
    ),
    cmd(
        "mget",
        -2,
        READONLY | FAST,
        ALL_KEYS,
        "Reads several string keys at once",
        "1.0.0",
        mget,
    ),
    cmd(
        "mset",
        -3,
        WRITE | DENYOOM,
        PAIRS,
        "Writes several keys at once, as one step",
        "1.0.1",
        mset,
    ),
    cmd(
        "msetnx",
        -3,
        WRITE | DENYOOM,
        PAIRS,
        "Writes several keys as one step, or none if any of them exists",
        "1.0.1",
        msetnx,
    ),
    cmd(
        "psetex",
        4,
        WRITE | DENYOOM,
        KEY1,
        "Writes a string key with a lifetime in milliseconds",
        "2.6.0",
        psetex,
    ),
    cmd(
        "set",
        -3,
        WRITE | DENYOOM,
        KEY1,
        "Writes a string key, with optional conditions, lifetime and old-value reply",
        "1.0.0",
        set,
    ),
    bitmap(
        "setbit",
        4,
        WRITE | DENYOOM,
        KEY1,
        "Writes one bit of a string, growing it with zero bytes as needed",
        "2.2.0",
        setbit,
    ),
    cmd(
        "setex",
        4,
        WRITE | DENYOOM,
        KEY1,
        "Writes a string key with a lifetime in seconds",
        "2.0.0",
        setex,
    ),
    cmd(
        "setnx",
        3,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Writes a string key unless the key already exists",
        "1.0.0",
        setnx,
    ),
    cmd(
        "setrange",
        4,
        WRITE | DENYOOM,
        KEY1,
        "Writes bytes into a string at an offset, padding with zero bytes",
        "2.2.0",
        setrange,
    ),
    cmd(
        "strlen",
        2,
        READONLY | FAST,
        KEY1,
        "Replies with a string's length in bytes",
        "2.2.0",
        strlen,
    ),
];

/// The string bytes of a value, or `WRONGTYPE`.
#[inline]
fn string(value: &Value) -> Result<&[u8], ErrorReply> {
    value.as_str().map(|s| s.as_slice()).ok_or_else(wrong_type)
}

/// Reads the string at `key` for a reading command: `None` if absent.
#[inline]
fn read<'s>(shard: &'s mut Shard, db: usize, key: &[u8]) -> Result<Option<&'s [u8]>, ErrorReply> {
    shard.lookup_read(db, key).map(string).transpose()
}

/// The longest string the server keeps, as `proto-max-bulk-len` sets it: an error if
/// `len + more` bytes would be longer.
fn check_length(ctx: &Ctx<'_>, len: usize, more: usize) -> CmdResult {
    let total = len as u64 + more as u64;
    if total > ctx.server.settings().proto_max_bulk_len {
        return Err(ErrorReply::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// `GET key`: the value, or nil.
fn get(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    match read(locked.shard(key), db, key)? {
        Some(bytes) => ctx.reply.bulk(bytes),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// The unit of an expiry option's number, and whether it is relative to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExpireUnit {
    /// `EX` seconds from now.
    Ex,
    /// `PX` milliseconds from now.
    Px,
    /// `EXAT` Unix seconds.
    ExAt,
    /// `PXAT` Unix milliseconds.
    PxAt,
}

/// The options of `SET` and `GETEX`, parsed as Redis parses them: an option may be given
/// again (its last number counts), but two that conflict (`NX` and `XX`, two units, a unit and
/// `KEEPTTL` or `PERSIST`) are a syntax error, as is an option the command does not take.
#[derive(Debug, Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    expire: Option<(ExpireUnit, &'a [u8])>,
}

impl<'a> StringOptions<'a> {
    /// The options from argument `from` on, for `SET` (`set`) or `GETEX`.
    fn parse(args: Args<'a>, from: usize, set: bool) -> Result<Self, ErrorReply> {
        let mut o = StringOptions::default();
        let mut i = from;
        while i < args.len() {
            let next = (i + 1 < args.len()).then(|| args.get(i + 1));
            let unit = |o: &StringOptions<'_>, unit| {
                let free = !o.keep_ttl && !o.persist && o.expire.is_none_or(|(u, _)| u == unit);
                free.then_some(()).and(next).map(|n| (unit, n))
            };
            let word = args.get(i);
            if word.eq_ignore_ascii_case(b"nx") && set && !o.xx {
                o.nx = true;
            } else if word.eq_ignore_ascii_case(b"xx") && set && !o.nx {
                o.xx = true;
            } else if word.eq_ignore_ascii_case(b"get") && set {
                o.get = true;
            } else if word.eq_ignore_ascii_case(b"keepttl") && set && o.expire.is_none() {
                o.keep_ttl = true;
            } else if word.eq_ignore_ascii_case(b"persist") && !set && o.expire.is_none() {
                o.persist = true;
            } else if let Some(expire) = [
                (&b"ex"[..], ExpireUnit::Ex),
                (b"px", ExpireUnit::Px),
                (b"exat", ExpireUnit::ExAt),
                (b"pxat", ExpireUnit::PxAt),
            ]
            .into_iter()
            .find(|(name, _)| word.eq_ignore_ascii_case(name))
            .and_then(|(_, u)| unit(&o, u))
            {
                o.expire = Some(expire);
                i += 1;
            } else {
                return Err(syntax_error());
            }
            i += 1;
        }
        Ok(o)
    }

    /// The expiry time the options ask for, as a Unix time in milliseconds (`now_ms` is the
    /// command's time), with Redis's errors: not an integer; not positive, or overflowing.
    fn expire_at(&self, now_ms: i64, command: &str) -> Result<Option<i64>, ErrorReply> {
        let Some((unit, number)) = self.expire else {
            return Ok(None);
        };
        let n = parse_int(number)?;
        let invalid = || ErrorReply::err(format!("invalid expire time in '{command}' command"));
        if n <= 0 {
            return Err(invalid());
        }
        let ms = match unit {
            ExpireUnit::Ex | ExpireUnit::ExAt => n.checked_mul(1000).ok_or_else(invalid)?,
            ExpireUnit::Px | ExpireUnit::PxAt => n,
        };
        match unit {
            ExpireUnit::Ex | ExpireUnit::Px => ms.checked_add(now_ms).ok_or_else(invalid).map(Some),
            ExpireUnit::ExAt | ExpireUnit::PxAt => Ok(Some(ms)),
        }
    }
}

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]`: OK, or nil when
/// NX/XX stopped it; with GET, the old value (or nil) instead.
fn set(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    if args.len() == 3 {
        // The plain form: one lookup (the write's), no clock read.
        let mut locked = ctx.shards.lock(key);
        let value = Value::string(args.get(2));
        locked.shard(key).set(db, key, value, Expire::Never);
        ctx.notify(STRING, "set", key);
        ctx.reply.ok();
        return Ok(());
    }
    let options = StringOptions::parse(args, 3, true)?;
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let at = options.expire_at(shard.now_millis(), "set")?;
    let exists = if options.get {
        let old = read(shard, db, key)?;
        match old {
            Some(bytes) => ctx.reply.bulk(bytes),
            None => ctx.reply.null(),
        }
        old.is_some()
    } else if options.nx || options.xx {
        shard.lookup_write(db, key).is_some()
    } else {
        false
    };
    if (options.nx && exists) || (options.xx && !exists) {
        if !options.get {
            ctx.reply.null();
        }
        return Ok(());
    }
    let expire = match at {
        Some(at) => Expire::AtMillis(at),
        None if options.keep_ttl => Expire::Keep,
        None => Expire::Never,
    };
    shard.set(db, key, Value::string(args.get(2)), expire);
    ctx.notify(STRING, "set", key);
    if at.is_some() {
        ctx.notify(GENERIC, "expire", key);
    }
    if !options.get {
        ctx.reply.ok();
    }
    Ok(())
}

/// `SETNX key value`: 1 if set, 0 if the key existed.
fn setnx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if shard.lookup_write(db, key).is_some() {
        ctx.reply.int(0);
    } else {
        shard.set(db, key, Value::string(args.get(2)), Expire::Never);
        ctx.notify(STRING, "set", key);
        ctx.reply.int(1);
    }
    Ok(())
}

/// `SETEX` and `PSETEX`: `unit` is the time's.
fn set_with_ttl(ctx: &mut Ctx<'_>, args: Args<'_>, unit: ExpireUnit, command: &str) -> CmdResult {
    let key = args.get(1);
    let options = StringOptions {
        expire: Some((unit, args.get(2))),
        ..StringOptions::default()
    };
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let at = options.expire_at(shard.now_millis(), command)?;
    let at = at.expect("an expiry was given");
    shard.set(db, key, Value::string(args.get(3)), Expire::AtMillis(at));
    ctx.notify(STRING, "set", key);
    ctx.notify(GENERIC, "expire", key);
    ctx.reply.ok();
    Ok(())
}

/// `SETEX key seconds value`: OK.
fn setex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_with_ttl(ctx, args, ExpireUnit::Ex, "setex")
}

/// `PSETEX key milliseconds value`: OK.
fn psetex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_with_ttl(ctx, args, ExpireUnit::Px, "psetex")
}

/// `GETSET key value`: the old value or nil; the key loses its lifetime.
fn getset(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    match read(shard, db, key)? {
        Some(bytes) => ctx.reply.bulk(bytes),
        None => ctx.reply.null(),
    }
    shard.set(db, key, Value::string(args.get(2)), Expire::Never);
    ctx.notify(STRING, "set", key);
    Ok(())
}

/// `GETDEL key`: the value (then deleted) or nil.
fn getdel(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    match read(shard, db, key)? {
        Some(bytes) => {
            ctx.reply.bulk(bytes);
            shard.remove(db, key);
            ctx.notify(GENERIC, "del", key);
        }
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`: the value or nil, then the lifetime
/// changed as asked (a time already past deletes the key).
fn getex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let options = StringOptions::parse(args, 2, false)?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let now_ms = shard.now_millis();
    let Some(bytes) = read(shard, db, key)? else {
        ctx.reply.null();
        return Ok(());
    };
    // Redis checks the time only once it has the string.
    let at = options.expire_at(now_ms, "getex")?;
    ctx.reply.bulk(bytes);
    if let Some(at) = at {
        shard.set_expire_time(db, key, Some(at));
        // A time not after now deleted the key.
        ctx.notify(GENERIC, if at <= now_ms { "del" } else { "expire" }, key);
    } else if options.persist && matches!(shard.expire_time(db, key), Some(Some(_))) {
        shard.set_expire_time(db, key, None);
        ctx.notify(GENERIC, "persist", key);
    }
    Ok(())
}

/// `MGET key [key ...]`: each value, nil for a missing key or one that is not a string.
fn mget(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let keys = args.from(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys(keys.iter());
    ctx.reply.array(keys.len());
    for key in keys.iter() {
        match locked
            .shard(key)
            .lookup_read(db, key)
            .and_then(Value::as_str)
        {
            Some(s) => ctx.reply.bulk(s.as_slice()),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// `MSET key value [key value ...]`: OK; all are written at once.
fn mset(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(super::arity_error("mset"));
    }
    let db = ctx.db();
    let mut locked = ctx
        .server
        .keyspace
        .lock_keys(args.from(1).iter().step_by(2));
    for i in (1..args.len()).step_by(2) {
        let key = args.get(i);
        locked
            .shard(key)
            .set(db, key, Value::string(args.get(i + 1)), Expire::Never);
        ctx.notify(STRING, "set", key);
    }
    ctx.reply.ok();
    Ok(())
}

/// `MSETNX key value [key value ...]`: 1 if all were written, 0 (and none) if any existed.
fn msetnx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(super::arity_error("msetnx"));
    }
    let db = ctx.db();
    let mut locked = ctx
        .server
        .keyspace
        .lock_keys(args.from(1).iter().step_by(2));
    for i in (1..args.len()).step_by(2) {
        let key = args.get(i);
        if locked.shard(key).lookup_write(db, key).is_some() {
            ctx.reply.int(0);
            return Ok(());
        }
    }
    for i in (1..args.len()).step_by(2) {
        let key = args.get(i);
        locked
            .shard(key)
            .set(db, key, Value::string(args.get(i + 1)), Expire::Never);
        ctx.notify(STRING, "set", key);
    }
    ctx.reply.int(1);
    Ok(())
}

/// Adds `by` to the integer at `key` (0 if absent), keeping its lifetime.
fn add(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> CmdResult {
    let db = ctx.db();
    let overflow = || ErrorReply::err("increment or decrement would overflow");
    let mut digits = itoa::Buffer::new();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if let Some(mut value) = shard.lookup_mut(db, key) {
        let new = parse_int(string(&value)?)?
            .checked_add(by)
            .ok_or_else(overflow)?;
        *value = Value::string(digits.format(new).as_bytes());
        ctx.notify(STRING, "incrby", key);
        ctx.reply.int(new);
        return Ok(());
    }
    let value = Value::string(digits.format(by).as_bytes());
    shard.set(db, key, value, Expire::Never);
    ctx.notify(STRING, "incrby", key);
    ctx.reply.int(by);
    Ok(())
}

/// `INCR key`: the new value.
fn incr(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    add(ctx, args.get(1), 1)
}

/// `DECR key`: the new value.
fn decr(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    add(ctx, args.get(1), -1)
}

/// `INCRBY key increment`: the new value.
fn incrby(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let by = args.int(2)?;
    add(ctx, args.get(1), by)
}

/// `DECRBY key decrement`: the new value.
fn decrby(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let by = args.int(2)?;
    if by == i64::MIN {
        return Err(ErrorReply::err("decrement would overflow"));
    }
    add(ctx, args.get(1), -by)
}

/// `INCRBYFLOAT key increment`: the new value, as Redis prints it (computed in C's `long
/// double`, printed with 17 decimals and trailing zeros trimmed).
fn incrbyfloat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let by = args.get(2);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if let Some(mut value) = shard.lookup_mut(db, key) {
        let sum = crate::float::add_decimal(string(&value)?, by)?;
        ctx.notify(STRING, "incrbyfloat", key);
        ctx.reply.bulk(sum.as_bytes());
        *value = Value::string_written(sum.into_bytes(), Written::Float);
        return Ok(());
    }
    let sum = crate::float::add_decimal(b"0", by)?;
    let value = Value::string_written(sum.clone().into_bytes(), Written::Float);
    shard.set(db, key, value, Expire::Never);
    ctx.notify(STRING, "incrbyfloat", key);
    ctx.reply.bulk(sum.as_bytes());
    Ok(())
}

/// Changes the string in `value` in place with `edit` (Redis's unsharing: the result is
/// encoded `raw`), growing it with room ahead as Redis does.
/// The caller checked that it is a string; anything else is left as it is.
fn edit_in_place(value: &mut Value, edit: impl FnOnce(&mut Growable)) {
    let Value::Str(s) = value else {
        return;
    };
    *s = std::mem::take(s).with_tag(Written::InPlace as u8);
    s.edit(edit);
}

/// `APPEND key value`: the new length.
fn append(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let tail = args.get(2);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if let Some(mut value) = shard.lookup_mut(db, key) {
        let len = string(&value)?.len();
        check_length(ctx, len, tail.len())?;
        edit_in_place(&mut value, |bytes| bytes.extend_from_slice(tail));
        ctx.notify(STRING, "append", key);
        ctx.reply.int((len + tail.len()) as i64);
        return Ok(());
    }
    shard.set(db, key, Value::string(tail), Expire::Never);
    ctx.notify(STRING, "append", key);
    ctx.reply.int(tail.len() as i64);
    Ok(())
}

/// `STRLEN key`: the length, 0 if absent.
fn strlen(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let len = read(locked.shard(key), db, key)?.map_or(0, <[u8]>::len);
    ctx.reply.int(len as i64);
    Ok(())
}

/// Redis's inclusive range `start..=end` of a string of `len` bytes (or bits): negative
/// positions count from the end, both are clamped into the string, and `None` means empty
/// (including a negative start past a negative end, which Redis answers before clamping).
fn string_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len = len as i64;
    let from_end = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let start = from_end(start);
    let end = from_end(end).min(len - 1);
    if len == 0 || start > end {
        return None;
    }
    Some((start as usize, end as usize))
}

/// `GETRANGE key start end`: the substring (inclusive, negative from the end).
fn getrange(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let (start, end) = (args.int(2)?, args.int(3)?);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let bytes = read(locked.shard(key), db, key)?.unwrap_or_default();
    match string_range(start, end, bytes.len()) {
        Some((s, e)) => ctx.reply.bulk(&bytes[s..=e]),
        None => ctx.reply.bulk(b""),
    }
    Ok(())
}

/// `SETRANGE key offset value`: the new length; the gap, if any, is zero bytes.
fn setrange(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let offset = args.int(2)?;
    if offset < 0 {
        return Err(ErrorReply::err("offset is out of range"));
    }
    let offset = offset as usize;
    let patch = args.get(3);
    let end = offset + patch.len();
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if let Some(mut value) = shard.lookup_mut(db, key) {
        let len = string(&value)?.len();
        if patch.is_empty() {
            ctx.reply.int(len as i64);
            return Ok(());
        }
        check_length(ctx, offset, patch.len())?;
        edit_in_place(&mut value, |bytes| {
            bytes.grow_zeroed(end);
            bytes.as_mut_slice()[offset..end].copy_from_slice(patch);
        });
        ctx.notify(STRING, "setrange", key);
        ctx.reply.int(len.max(end) as i64);
        return Ok(());
    }
    if patch.is_empty() {
        ctx.reply.int(0);
        return Ok(());
    }
    check_length(ctx, offset, patch.len())?;
    // A new string is allocated to its length, as Redis's is.
    let mut bytes = vec![0; offset];
    bytes.extend_from_slice(patch);
    let len = bytes.len();
    shard.set(
        db,
        key,
        Value::string_written(bytes, Written::InPlace),
        Expire::Never,
    );
    ctx.notify(STRING, "setrange", key);
    ctx.reply.int(len as i64);
    Ok(())
}

/// A bit offset argument: a non-negative integer whose byte lies within `proto-max-bulk-len`.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, ErrorReply> {
    let error = || ErrorReply::err("bit offset is not an integer or out of range");
    let offset = crate::protocol::parse_i64(arg).ok_or_else(error)?;
    if offset < 0 || (offset as u64 >> 3) >= ctx.server.settings().proto_max_bulk_len {
        return Err(error());
    }
    Ok(offset as u64)
}

/// `SETBIT key offset value`: the bit's old value.
fn setbit(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let offset = bit_offset(ctx, args.get(2))?;
    let on = match args.get(3) {
        b"1" => true,
        b"0" => false,
        _ => return Err(ErrorReply::err("bit is not an integer or out of range")),
    };
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let flip = |bytes: &mut [u8]| {
        let old = bytes[byte] & mask != 0;
        if on {
            bytes[byte] |= mask;
        } else {
            bytes[byte] &= !mask;
        }
        old
    };
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if let Some(mut value) = shard.lookup_mut(db, key) {
        string(&value)?;
        let mut old = false;
        edit_in_place(&mut value, |bytes| {
            bytes.grow_zeroed(byte + 1);
            old = flip(bytes.as_mut_slice());
        });
        ctx.notify(STRING, "setbit", key);
        ctx.reply.int(i64::from(old));
        return Ok(());
    }
    let mut bytes = vec![0; byte + 1];
    flip(&mut bytes);
    shard.set(
        db,
        key,
        Value::string_written(bytes, Written::InPlace),
        Expire::Never,
    );
    ctx.notify(STRING, "setbit", key);
    ctx.reply.int(0);
    Ok(())
}

/// `GETBIT key offset`: the bit, 0 past the end.
fn getbit(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let offset = bit_offset(ctx, args.get(2))?;
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let bytes = read(locked.shard(key), db, key)?.unwrap_or_default();
    let byte = (offset >> 3) as usize;
    let bit = bytes
        .get(byte)
        .is_some_and(|b| b & (1 << (7 - (offset & 7))) != 0);
    ctx.reply.int(i64::from(bit));
    Ok(())
}

/// `BITCOUNT key [start end [BYTE | BIT]]`: the number of set bits in the range (0 for a
/// missing key, whatever the arguments, as Redis looks the key up first).
fn bitcount(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let Some(bytes) = read(locked.shard(key), db, key)? else {
        ctx.reply.int(0);
        return Ok(());
    };
    let (start, end, bits) = match args.len() {
        2 => (0, -1, false),
        4 | 5 => {
            let (start, end) = (args.int(2)?, args.int(3)?);
            // Redis answers an inverted range of negatives before it reads the unit.
            if start < 0 && end < 0 && start > end {
                ctx.reply.int(0);
                return Ok(());
            }
            let bits = match args.len() {
                5 if args.is(4, "bit") => true,
                5 if !args.is(4, "byte") => return Err(syntax_error()),
                _ => false,
            };
            (start, end, bits)
        }
        _ => return Err(syntax_error()),
    };
    let count = if bits {
        match string_range(start, end, bytes.len() * 8) {
            Some((s, e)) => (s..=e)
                .filter(|&bit| bytes[bit >> 3] & (1 << (7 - (bit & 7))) != 0)
                .count() as i64,
            None => 0,
        }
    } else {
        match string_range(start, end, bytes.len()) {
            Some((s, e)) => bytes[s..=e].iter().map(|b| b.count_ones() as i64).sum(),
            None => 0,
        }
    };
    ctx.reply.int(count);
    Ok(())
}

/// A run of bytes common to both strings of `LCS`: inclusive ranges in each.
#[derive(Clone, Copy)]
struct Stretch {
    a: (usize, usize),
    b: (usize, usize),
}

impl Stretch {
    fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest common subsequence
/// of two strings, its length, or the ranges that match.
fn lcs(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    // Redis reads the keys before it looks at the options.
    let db = ctx.db();
    let (k1, k2) = (args.get(1), args.get(2));
    let mut locked = ctx.shards.lock_keys([k1, k2]);
    let mut fetch = |key: &[u8]| match locked.shard(key).lookup_read(db, key) {
        Some(value) => value.as_str().map(|s| s.as_slice().to_vec()),
        None => Some(Vec::new()),
    };
    let (a, b) = (fetch(k1), fetch(k2));
    drop(locked);
    let (Some(a), Some(b)) = (a, b) else {
        return Err(ErrorReply::err(
            "The specified keys must contain string values",
        ));
    };
    let (mut len_only, mut idx, mut with_len) = (false, false, false);
    let mut min_len: i64 = 0;
    let mut i = 3;
    while i < args.len() {
        if args.is(i, "len") {
            len_only = true;
        } else if args.is(i, "idx") {
            idx = true;
        } else if args.is(i, "withmatchlen") {
            with_len = true;
        } else if args.is(i, "minmatchlen") && i + 1 < args.len() {
            min_len = args.int(i + 1)?.max(0);
            i += 1;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    if len_only && idx {
        return Err(ErrorReply::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    let cells = (a.len() as u64 + 1).saturating_mul(b.len() as u64 + 1);
    if cells.saturating_mul(4) > ctx.server.settings().proto_max_bulk_len {
        return Err(ErrorReply::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    // table[i][j]: the LCS length of a[..i] and b[..j].
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[i * width + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * width + j - 1] + 1
            } else {
                table[(i - 1) * width + j].max(table[i * width + j - 1])
            };
        }
    }
    let total = table[a.len() * width + b.len()] as usize;
    if len_only {
        ctx.reply.int(total as i64);
        return Ok(());
    }
    // Walk back from the end, collecting the subsequence and the stretches that match.
    let mut sequence = vec![0u8; total];
    let mut stretches: Vec<Stretch> = Vec::new();
    let (mut i, mut j, mut k) = (a.len(), b.len(), total);
    let mut current: Option<Stretch> = None;
    let keep = |stretch: Option<Stretch>, stretches: &mut Vec<Stretch>| {
        if let Some(stretch) = stretch.filter(|s| s.len() as i64 >= min_len) {
            stretches.push(stretch);
        }
    };
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            k -= 1;
            sequence[k] = a[i - 1];
            let (ai, bj) = (i - 1, j - 1);
            match &mut current {
                Some(s) if s.a.0 == ai + 1 && s.b.0 == bj + 1 => {
                    s.a.0 = ai;
                    s.b.0 = bj;
                }
                _ => {
                    keep(current.take(), &mut stretches);
                    current = Some(Stretch {
                        a: (ai, ai),
                        b: (bj, bj),
                    });
                }
            }
            i -= 1;
            j -= 1;
        } else if table[(i - 1) * width + j] > table[i * width + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    keep(current, &mut stretches);
    if !idx {
        ctx.reply.bulk(&sequence);
        return Ok(());
    }
    ctx.reply.map(2);
    ctx.reply.bulk(b"matches");
    ctx.reply.array(stretches.len());
    for s in &stretches {
        ctx.reply.array(if with_len { 3 } else { 2 });
        for (from, to) in [s.a, s.b] {
            ctx.reply.array(2);
            ctx.reply.int(from as i64);
            ctx.reply.int(to as i64);
        }
        if with_len {
            ctx.reply.int(s.len() as i64);
        }
    }
    ctx.reply.bulk(b"len");
    ctx.reply.int(total as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_range_follows_redis_clamping() {
        assert_eq!(string_range(0, -1, 5), Some((0, 4)));
        assert_eq!(string_range(0, -100, 5), Some((0, 0)));
        assert_eq!(string_range(-3, -1, 5), Some((2, 4)));
        assert_eq!(string_range(-1, -3, 5), None);
        assert_eq!(string_range(2, 100, 5), Some((2, 4)));
        assert_eq!(string_range(6, 10, 5), None);
        assert_eq!(string_range(0, 0, 0), None);
    }
}
