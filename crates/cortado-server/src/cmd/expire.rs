//! Expiry commands: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with `NX`, `XX`, `GT`,
//! `LT`), `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME` and `PERSIST`.
//!
//! Times are Unix milliseconds underneath, and a command reads the clock once (its shard's
//! time, set when it was locked). A time not after now deletes the key and replies 1, as Redis
//! does; a relative time or unit conversion that overflows is `invalid expire time`. `TTL`
//! replies -2 for a missing key and -1 for one without a lifetime; the second-based replies
//! round to the nearest second. The four readers count as keyspace hits or misses, the
//! writers do not, as in Redis. Every reply here was checked against `redis-server` 7.0 by
//! the differential tests.

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Run, KEY1};
use crate::notify::class::GENERIC;
use crate::protocol::ErrorReply;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        name,
        arity,
        flags,
        keys: KEY1,
        group: "generic",
        since,
        summary,
        run: Run::Handler(handler),
    }
}

/// The expiry family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "expire",
        -3,
        WRITE | FAST,
        "Gives a key a lifetime in seconds",
        "1.0.0",
        expire,
    ),
    cmd(
        "expireat",
        -3,
        WRITE | FAST,
        "Makes a key expire at a Unix time in seconds",
        "1.2.0",
        expireat,
    ),
    cmd(
        "expiretime",
        2,
        READONLY | FAST,
        "Replies with the Unix time in seconds at which a key expires",
        "7.0.0",
        expiretime,
    ),
    cmd(
        "persist",
        2,
        WRITE | FAST,
        "Makes a key live until removed",
        "2.2.0",
        persist,
    ),
    cmd(
        "pexpire",
        -3,
        WRITE | FAST,
        "Gives a key a lifetime in milliseconds",
        "2.6.0",
        pexpire,
    ),
    cmd(
        "pexpireat",
        -3,
        WRITE | FAST,
        "Makes a key expire at a Unix time in milliseconds",
        "2.6.0",
        pexpireat,
    ),
    cmd(
        "pexpiretime",
        2,
        READONLY | FAST,
        "Replies with the Unix time in milliseconds at which a key expires",
        "7.0.0",
        pexpiretime,
    ),
    cmd(
        "pttl",
        2,
        READONLY | FAST,
        "Replies with the milliseconds a key has left",
        "2.6.0",
        pttl,
    ),
    cmd(
        "ttl",
        2,
        READONLY | FAST,
        "Replies with the seconds a key has left",
        "1.0.0",
        ttl,
    ),
];

/// `EXPIRE`'s conditions.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// The `NX`/`XX`/`GT`/`LT` options from argument 3 on, with Redis's errors.
fn conditions(args: Args<'_>) -> Result<Conditions, ErrorReply> {
    let mut c = Conditions::default();
    for i in 3..args.len() {
        if args.is(i, "nx") {
            c.nx = true;
        } else if args.is(i, "xx") {
            c.xx = true;
        } else if args.is(i, "gt") {
            c.gt = true;
        } else if args.is(i, "lt") {
            c.lt = true;
        } else {
            return Err(ErrorReply::err(format!(
                "Unsupported option {}",
                args.text(i)
            )));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(ErrorReply::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(ErrorReply::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

/// The four `EXPIRE` commands: `unit_ms` per unit of the argument, relative to now or not.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: Args<'_>,
    unit_ms: i64,
    relative: bool,
    name: &str,
) -> CmdResult {
    let c = conditions(args)?;
    let n = args.int(2)?;
    let invalid = || ErrorReply::err(format!("invalid expire time in '{name}' command"));
    let mut when = n.checked_mul(unit_ms).ok_or_else(invalid)?;
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    if relative {
        when = when.checked_add(shard.now_millis()).ok_or_else(invalid)?;
    }
    let Some(current) = shard.expire_time(db, key) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let refused = (c.nx && current.is_some())
        || (c.xx && current.is_none())
        || (c.gt && current.is_none_or(|cur| when <= cur))
        || (c.lt && current.is_some_and(|cur| when >= cur));
    if refused {
        ctx.reply.int(0);
        return Ok(());
    }
    shard.set_expire_time(db, key, Some(when));
    // A time not after now deleted the key. Redis tells a deletion before its reply, a new
    // lifetime after it.
    if when <= shard.now_millis() {
        ctx.notify(GENERIC, "del", key);
        ctx.reply.int(1);
    } else {
        ctx.reply.int(1);
        ctx.notify(GENERIC, "expire", key);
    }
    Ok(())
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`: 1 if set, 0 if the key is missing or a condition failed.
fn expire(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_generic(ctx, args, 1000, true, "expire")
}

/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`.
fn pexpire(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_generic(ctx, args, 1, true, "pexpire")
}

/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`.
fn expireat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_generic(ctx, args, 1000, false, "expireat")
}

/// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`.
fn pexpireat(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    expire_generic(ctx, args, 1, false, "pexpireat")
}

/// The key's expiry time and the shard's time, in milliseconds: `None` if missing. A read
/// (counted as a keyspace hit or miss) that does not count as a use, as Redis's.
fn lookup(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<(Option<i64>, i64)> {
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    shard.lookup_read_untouched(db, key)?;
    let at = shard.expire_time(db, key)?;
    Some((at, shard.now_millis()))
}

/// Milliseconds as Redis replies them in seconds: rounded to the nearest (its `(ms + 500) /
/// 1000` on a value it knows is not negative, which the compiler does unsigned, so even
/// `i64::MAX` rounds up).
fn rounded_seconds(ms: i64) -> i64 {
    ((ms.max(0) as u64 + 500) / 1000) as i64
}

/// The reply of the four commands: -2 if missing, -1 without a lifetime, else `reply` of the
/// expiry time and now.
fn ttl_generic(ctx: &mut Ctx<'_>, args: Args<'_>, reply: fn(i64, i64) -> i64) -> CmdResult {
    let n = match lookup(ctx, args.get(1)) {
        None => -2,
        Some((None, _)) => -1,
        Some((Some(at), now)) => reply(at, now),
    };
    ctx.reply.int(n);
    Ok(())
}

/// `TTL key`: seconds left (rounded), -1 without a lifetime, -2 if missing.
fn ttl(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, |at, now| rounded_seconds(at.saturating_sub(now)))
}

/// `PTTL key`: milliseconds left, -1 without a lifetime, -2 if missing.
fn pttl(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, |at, now| at.saturating_sub(now).max(0))
}

/// `EXPIRETIME key`: the Unix time in seconds (rounded) it expires at, -1 or -2 as `TTL`.
fn expiretime(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, |at, _| rounded_seconds(at))
}

/// `PEXPIRETIME key`: the Unix time in milliseconds it expires at, -1 or -2 as `TTL`.
fn pexpiretime(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, |at, _| at.max(0))
}

/// `PERSIST key`: 1 if a lifetime was removed, 0 if the key is missing or had none.
fn persist(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let shard = locked.shard(key);
    let removed = matches!(shard.expire_time(db, key), Some(Some(_)));
    if removed {
        shard.set_expire_time(db, key, None);
        ctx.notify(GENERIC, "persist", key);
    }
    ctx.reply.int(i64::from(removed));
    Ok(())
}
