//! Lifetimes of hash fields, Redis 7.4's commands beyond 7.0: `HEXPIRE`, `HPEXPIRE`,
//! `HEXPIREAT`, `HPEXPIREAT` give them, `HTTL`, `HPTTL`, `HEXPIRETIME`, `HPEXPIRETIME` read
//! them, `HPERSIST` clears them (see [`crate::keyspace::field_expiry`] for how they end).
//!
//! Replies and errors are Redis 7.4's: one integer per field named (`-2` no such field or
//! key, `0` condition not met, `1` set, `2` deleted at once because the time is not in the
//! future; `-1` no lifetime), the checks in Redis's order (the key's type, the time, the
//! `FIELDS` keyword, the count). Events: `hexpire` when lifetimes were set, `hdel` when a
//! field was deleted at once (with `del` if that emptied the hash), `hpersist`.

use super::flags::*;
use super::{wrong_type, Args, CmdResult, Command, Ctx, KEY1};
use crate::keyspace::hash::Hash;
use crate::keyspace::Value;
use crate::notify::class::{GENERIC, HASH};
use crate::protocol::ErrorReply;

command_constructor!("hash");

/// The latest expiry time Redis 7.4 takes, in Unix milliseconds (its `EB_EXPIRE_TIME_MAX`,
/// 2^48 - 1: the year 10889).
const MAX_EXPIRE_MS: i64 = (1 << 48) - 1;

/// The field-lifetime commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "hexpire",
        -6,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Gives fields of a hash a lifetime in seconds",
        "7.4.0",
        hexpire,
    ),
    cmd(
        "hexpireat",
        -6,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Gives fields of a hash an expiry time in Unix seconds",
        "7.4.0",
        hexpireat,
    ),
    cmd(
        "hexpiretime",
        -5,
        READONLY | FAST,
        KEY1,
        "Tells when fields of a hash expire, in Unix seconds",
        "7.4.0",
        hexpiretime,
    ),
    cmd(
        "hpersist",
        -5,
        WRITE | FAST,
        KEY1,
        "Takes the lifetimes off fields of a hash",
        "7.4.0",
        hpersist,
    ),
    cmd(
        "hpexpire",
        -6,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Gives fields of a hash a lifetime in milliseconds",
        "7.4.0",
        hpexpire,
    ),
    cmd(
        "hpexpireat",
        -6,
        WRITE | DENYOOM | FAST,
        KEY1,
        "Gives fields of a hash an expiry time in Unix milliseconds",
        "7.4.0",
        hpexpireat,
    ),
    cmd(
        "hpexpiretime",
        -5,
        READONLY | FAST,
        KEY1,
        "Tells when fields of a hash expire, in Unix milliseconds",
        "7.4.0",
        hpexpiretime,
    ),
    cmd(
        "hpttl",
        -5,
        READONLY | FAST,
        KEY1,
        "Tells how long fields of a hash have left, in milliseconds",
        "7.4.0",
        hpttl,
    ),
    cmd(
        "httl",
        -5,
        READONLY | FAST,
        KEY1,
        "Tells how long fields of a hash have left, in seconds",
        "7.4.0",
        httl,
    ),
];

/// The fields named by `FIELDS numfields field...` from argument `at` (the keyword's).
fn fields(args: Args<'_>, at: usize) -> Result<Args<'_>, ErrorReply> {
    if at >= args.len() || !args.is(at, "fields") {
        return Err(ErrorReply::err(
            "Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    let count = args
        .int(at + 1)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| ErrorReply::err("Parameter `numFields` should be greater than 0"))?;
    if count as u64 != (args.len() - at - 2) as u64 {
        return Err(ErrorReply::err(
            "The `numfields` parameter must match the number of arguments",
        ));
    }
    Ok(args.from(at + 2))
}

/// Whether `value` is missing or a hash (`WRONGTYPE` otherwise).
fn check_hash(value: Option<&Value>) -> Result<bool, ErrorReply> {
    match value {
        None => Ok(false),
        Some(v) => v.as_hash().map(|_| true).ok_or_else(wrong_type),
    }
}

/// Which lifetimes `HEXPIRE` may change.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Condition {
    Always,
    /// Only a field without one.
    Nx,
    /// Only a field with one.
    Xx,
    /// Only to a later time (no lifetime counts as forever).
    Gt,
    /// Only to an earlier time.
    Lt,
}

impl Condition {
    /// Whether a field whose expiry time is `old` may be given `at`.
    fn allows(self, old: Option<i64>, at: i64) -> bool {
        match (self, old) {
            (Condition::Always, _) => true,
            (Condition::Nx, old) => old.is_none(),
            (Condition::Xx, old) => old.is_some(),
            (Condition::Gt, None) => false,
            (Condition::Gt, Some(old)) => at > old,
            (Condition::Lt, None) => true,
            (Condition::Lt, Some(old)) => at < old,
        }
    }
}

/// `HEXPIRE` and its kin: `unit` milliseconds per unit of the time given, relative to now or
/// absolute.
fn expire_fields(
    ctx: &mut Ctx<'_>,
    args: Args<'_>,
    name: &str,
    unit: i64,
    relative: bool,
) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let exists = check_hash(shard.lookup_write(db, key))?;
    let time = args.int(2)?;
    if time < 0 {
        return Err(ErrorReply::err("invalid expire time, must be >= 0"));
    }
    let invalid = || ErrorReply::err(format!("invalid expire time in '{name}' command"));
    let base = if relative { shard.now_millis() } else { 0 };
    let at = time
        .checked_mul(unit)
        .filter(|&ms| ms <= MAX_EXPIRE_MS)
        .and_then(|ms| ms.checked_add(base))
        .filter(|&at| at <= MAX_EXPIRE_MS)
        .ok_or_else(invalid)?;
    let (condition, fields_at) = match args.get(3).to_ascii_lowercase().as_slice() {
        b"nx" => (Condition::Nx, 4),
        b"xx" => (Condition::Xx, 4),
        b"gt" => (Condition::Gt, 4),
        b"lt" => (Condition::Lt, 4),
        _ => (Condition::Always, 3),
    };
    let named = fields(args, fields_at)?;
    ctx.reply.array(named.len());
    if !exists {
        for _ in 0..named.len() {
            ctx.reply.int(-2);
        }
        return Ok(());
    }
    let now = shard.now_millis();
    let mut value = shard.lookup_mut(db, key).expect("found above");
    let hash = value.as_hash_mut().expect("a hash, checked above");
    let (mut set, mut deleted) = (Vec::new(), 0);
    for field in named.iter() {
        let code = match hash.expire_time(field) {
            None => -2,
            Some(old) if !condition.allows(old, at) => 0,
            Some(_) if at <= now => {
                hash.remove(field);
                deleted += 1;
                2
            }
            Some(_) => {
                hash.set_expire_time(field, at);
                set.push(field);
                1
            }
        };
        ctx.reply.int(code);
    }
    let emptied = hash.is_empty();
    drop(value);
    let any_set = !set.is_empty();
    for field in set {
        shard.add_field_timer(db, key, field, at);
    }
    if emptied {
        shard.remove(db, key);
        ctx.notify(HASH, "hdel", key);
        ctx.notify(GENERIC, "del", key);
    } else if deleted > 0 {
        ctx.notify(HASH, "hdel", key);
    } else if any_set {
        ctx.notify(HASH, "hexpire", key);
    }
    Ok(())
}

fn hexpire(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_fields(ctx, args, "hexpire", 1000, true)
}

fn hpexpire(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_fields(ctx, args, "hpexpire", 1, true)
}

fn hexpireat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_fields(ctx, args, "hexpireat", 1000, false)
}

fn hpexpireat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_fields(ctx, args, "hpexpireat", 1, false)
}

/// What `HTTL` and its kin tell of a field with a lifetime.
#[derive(Clone, Copy)]
enum Tell {
    /// Seconds left, rounded up.
    SecondsLeft,
    /// Milliseconds left.
    MillisLeft,
    /// The expiry time in Unix seconds.
    UnixSeconds,
    /// The expiry time in Unix milliseconds.
    UnixMillis,
}

/// `HTTL key FIELDS numfields field...` and its kin: per field, -2 (no such field or key),
/// -1 (no lifetime) or what `tell` says.
fn read_lifetimes(ctx: &mut Ctx<'_>, args: Args<'_>, tell: Tell) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    check_hash(shard.lookup_read(db, key))?;
    let named = fields(args, 2)?;
    let now = shard.now_millis();
    let hash = shard.peek(db, key).and_then(Value::as_hash);
    ctx.reply.array(named.len());
    for field in named.iter() {
        let code = match hash.and_then(|h| h.expire_time(field)) {
            None => -2,
            Some(None) => -1,
            Some(Some(at)) => match tell {
                Tell::SecondsLeft => (at - now + 999) / 1000,
                Tell::MillisLeft => at - now,
                Tell::UnixSeconds => at / 1000,
                Tell::UnixMillis => at,
            },
        };
        ctx.reply.int(code);
    }
    Ok(())
}

fn httl(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    read_lifetimes(ctx, args, Tell::SecondsLeft)
}

fn hpttl(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    read_lifetimes(ctx, args, Tell::MillisLeft)
}

fn hexpiretime(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    read_lifetimes(ctx, args, Tell::UnixSeconds)
}

fn hpexpiretime(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    read_lifetimes(ctx, args, Tell::UnixMillis)
}

/// `HPERSIST key FIELDS numfields field...`: per field, -2 (no such field or key), -1 (no
/// lifetime) or 1 (cleared).
fn hpersist(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let exists = check_hash(shard.lookup_write(db, key))?;
    let named = fields(args, 2)?;
    ctx.reply.array(named.len());
    let mut cleared = Vec::new();
    if let Some(mut value) = shard.lookup_mut(db, key).filter(|_| exists) {
        let hash: &mut Hash = value.as_hash_mut().expect("a hash, checked above");
        for field in named.iter() {
            let code = match hash.expire_time(field) {
                None => -2,
                Some(None) => -1,
                Some(Some(at)) => {
                    hash.persist(field);
                    cleared.push((field, at));
                    1
                }
            };
            ctx.reply.int(code);
        }
    } else {
        for _ in 0..named.len() {
            ctx.reply.int(-2);
        }
    }
    for &(field, at) in &cleared {
        shard.remove_field_timer(db, key, field, at);
    }
    if !cleared.is_empty() {
        ctx.notify(HASH, "hpersist", key);
    }
    Ok(())
}
