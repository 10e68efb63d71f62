//! Keyspace commands: `DEL`, `UNLINK`, `EXISTS`, `TYPE`, `KEYS`, `SCAN`, `RENAME`,
//! `RENAMENX`, `RANDOMKEY`, `TOUCH`, `COPY`, `MOVE`, `OBJECT` and `MEMORY USAGE`.
//!
//! Commands over several keys lock all their shards first, so `RENAME` and `COPY` are atomic
//! even when the two keys live in different shards. `KEYS` holds every shard; a `SCAN` step
//! holds the shards it walks (see [`Locked::scan`](crate::keyspace::Locked::scan) for its
//! cursor); `RANDOMKEY` reads the shards' sizes to pick one in proportion. Lookups count as
//! keyspace hits or misses where Redis's do (`EXISTS`, `TYPE`, `TOUCH`, `OBJECT`, `COPY`'s
//! source), and every reply was checked against `redis-server` 7.0 by the differential tests.

use super::flags::*;
use super::{syntax_error, Args, CmdResult, Command, Ctx, Keys, Run, KEY1, NO_KEYS};
use crate::glob::glob_match;
use crate::keyspace::{Expire, Value};
use crate::notify::class::GENERIC;
use crate::protocol::ErrorReply;

command_constructor!("generic");

/// A `MEMORY` subcommand: Redis files these under `server`.
const fn memory(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        group: "server",
        ..cmd(name, arity, flags, keys, summary, since, handler)
    }
}

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
const SUB_KEY: Keys = Keys {
    first: 2,
    last: 2,
    step: 1,
};

const OBJECT: &[Command] = &[
    cmd(
        "encoding",
        3,
        READONLY,
        SUB_KEY,
        "Names the representation a key's value is kept in",
        "2.2.3",
        object_encoding,
    ),
    cmd(
        "freq",
        3,
        READONLY,
        SUB_KEY,
        "Replies with how often the eviction policy counts a key as used",
        "4.0.0",
        object_freq,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        NO_KEYS,
        "Lists the subcommands and what each does",
        "6.2.0",
        object_help,
    ),
    cmd(
        "idletime",
        3,
        READONLY,
        SUB_KEY,
        "Replies with the seconds since a key was last read or written",
        "2.2.3",
        object_idletime,
    ),
    cmd(
        "refcount",
        3,
        READONLY,
        SUB_KEY,
        "Replies with how many references a key's value has (always 1 here)",
        "2.2.3",
        object_refcount,
    ),
];

const MEMORY: &[Command] = &[
    memory(
        "help",
        2,
        LOADING | STALE,
        NO_KEYS,
        "Lists the subcommands and what each does",
        "4.0.0",
        memory_help,
    ),
    memory(
        "malloc-stats",
        2,
        0,
        NO_KEYS,
        "Replies with the allocator's own count of the heap beside used_memory",
        "4.0.0",
        memory_malloc_stats,
    ),
    memory(
        "usage",
        -3,
        READONLY,
        SUB_KEY,
        "Replies with about how many bytes a key and its value take",
        "4.0.0",
        memory_usage,
    ),
];

/// The keyspace family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "copy",
        -3,
        WRITE | DENYOOM,
        TWO_KEYS,
        "Copies a key's value to another key, in this or another database",
        "6.2.0",
        copy,
    ),
    cmd(
        "del",
        -2,
        WRITE,
        ALL_KEYS,
        "Removes keys; replies with how many existed",
        "1.0.0",
        del,
    ),
    cmd(
        "exists",
        -2,
        READONLY | FAST,
        ALL_KEYS,
        "Counts how many of the given keys exist",
        "1.0.0",
        exists,
    ),
    cmd(
        "keys",
        2,
        READONLY,
        NO_KEYS,
        "Lists every key matching a glob pattern, in one reply",
        "1.0.0",
        keys,
    ),
    Command {
        name: "memory",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "server",
        since: "4.0.0",
        summary: "Subcommands that report how memory is used",
        run: Run::Container(MEMORY),
    },
    cmd(
        "move",
        3,
        WRITE | FAST,
        KEY1,
        "Moves a key to another database unless it exists there",
        "1.0.0",
        move_key,
    ),
    Command {
        name: "object",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "generic",
        since: "2.2.3",
        summary: "Subcommands that describe how a key's value is kept",
        run: Run::Container(OBJECT),
    },
    cmd(
        "randomkey",
        1,
        READONLY,
        NO_KEYS,
        "Replies with a key picked at random",
        "1.0.0",
        randomkey,
    ),
    cmd(
        "rename",
        3,
        WRITE,
        TWO_KEYS,
        "Gives a key a new name, replacing any key of that name",
        "1.0.0",
        rename,
    ),
    cmd(
        "renamenx",
        3,
        WRITE | FAST,
        TWO_KEYS,
        "Gives a key a new name unless that name is taken",
        "1.0.0",
        renamenx,
    ),
    cmd(
        "scan",
        -2,
        READONLY,
        NO_KEYS,
        "Walks the keys a batch at a time with a cursor",
        "2.8.0",
        scan,
    ),
    cmd(
        "touch",
        -2,
        READONLY | FAST,
        ALL_KEYS,
        "Counts the given keys that exist, recording an access to each",
        "3.2.1",
        touch,
    ),
    cmd(
        "type",
        2,
        READONLY | FAST,
        KEY1,
        "Names the type of a key's value",
        "1.0.0",
        type_of,
    ),
    cmd(
        "unlink",
        -2,
        WRITE | FAST,
        ALL_KEYS,
        "Removes keys as DEL does; replies with how many existed",
        "4.0.0",
        del,
    ),
];

/// `DEL key [key ...]` and `UNLINK`: the number of keys removed.
fn del(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let keys = args.from(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys(keys.iter());
    let mut removed = 0;
    for key in keys.iter() {
        if locked.shard(key).remove(db, key).is_some() {
            ctx.notify(GENERIC, "del", key);
            removed += 1;
        }
    }
    ctx.reply.int(removed as i64);
    Ok(())
}

/// `EXISTS key [key ...]`: how many of the keys exist (a key named twice counts twice).
fn exists(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let keys = args.from(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys(keys.iter());
    let n = keys
        .iter()
        .filter(|key| locked.shard(key).lookup_read_untouched(db, key).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// `TOUCH key [key ...]`: how many exist; each counts as an access.
fn touch(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let keys = args.from(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys(keys.iter());
    let n = keys
        .iter()
        .filter(|key| locked.shard(key).lookup_read(db, key).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// `TYPE key`: `string`, ..., or `none`.
fn type_of(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let name = locked
        .shard(key)
        .lookup_read_untouched(db, key)
        .map_or("none", |v| v.kind().name());
    ctx.reply.simple(name);
    Ok(())
}

/// `KEYS pattern`: every key of the database matching the pattern.
fn keys(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let pattern = args.get(1);
    let all = pattern == b"*";
    let db = ctx.db();
    let mut locked = ctx.shards.lock_all();
    let mut found: Vec<Vec<u8>> = Vec::new();
    for (_, shard) in locked.shards() {
        if let Some(cache) = shard.db_ref(db) {
            for (key, _) in cache.iter() {
                if all || glob_match(pattern, key.as_slice(), false) {
                    found.push(key.as_slice().to_vec());
                }
            }
        }
    }
    drop(locked);
    ctx.reply.array(found.len());
    for key in found {
        ctx.reply.bulk(&key);
    }
    Ok(())
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`: the next cursor (0 once the scan is
/// done) and the keys of one step. See [`Locked::scan`](crate::keyspace::Locked::scan) for what
/// a cursor holds and what a whole scan guarantees.
fn scan(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let cursor = parse_cursor(args.get(1))?;
    let mut count = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut kind: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(syntax_error());
        }
        if args.is(i, "count") {
            count = args.int(i + 1)?;
            if count < 1 {
                return Err(syntax_error());
            }
        } else if args.is(i, "match") {
            // `*` matches every key, the empty one too, so it filters nothing.
            pattern = Some(args.get(i + 1)).filter(|p| *p != b"*");
        } else if args.is(i, "type") {
            kind = Some(args.get(i + 1));
        } else {
            return Err(syntax_error());
        }
        i += 2;
    }
    let db = ctx.db();
    let mut keys = Vec::new();
    let next = ctx.shards.scan(
        db,
        cursor,
        usize::try_from(count).unwrap_or(usize::MAX),
        |key, value| {
            // MATCH first; TYPE then looks the key up, which Redis counts as a hit.
            if !pattern.is_none_or(|p| glob_match(p, key.as_slice(), false)) {
                return false;
            }
            if kind.is_none_or(|k| k.eq_ignore_ascii_case(value.kind().name().as_bytes())) {
                keys.push(key.clone());
            }
            kind.is_some()
        },
    );
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(keys.len());
    for key in &keys {
        ctx.reply.bulk(key.as_slice());
    }
    Ok(())
}

/// A `SCAN` cursor as Redis reads one, with C's `strtoul`: an optional sign and decimal
/// digits (a minus negates modulo 2^64), or nothing at all for 0; anything else, a leading
/// space, or a number past `u64` is `invalid cursor`.
pub(crate) fn parse_cursor(bytes: &[u8]) -> Result<u64, ErrorReply> {
    let invalid = || ErrorReply::err("invalid cursor");
    if bytes.is_empty() {
        return Ok(0);
    }
    let (negative, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() {
        return Err(invalid());
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(invalid());
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// `RANDOMKEY`: a key of the database picked at random, or nil if it has none.
fn randomkey(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    match ctx.shards.random_key(ctx.db()) {
        Some(key) => ctx.reply.bulk(key.as_slice()),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// Takes `src` out of `db` with its expiry time: `None` if missing.
fn take(
    locked: &mut crate::keyspace::Locked<'_>,
    db: usize,
    key: &[u8],
) -> Option<(Value, Option<i64>)> {
    let shard = locked.shard(key);
    let at = shard.expire_time(db, key)?;
    let value = shard.remove(db, key)?;
    Some((value, at))
}

/// The lifetime of a key given its expiry time (`None`: never).
fn expire_of(at: Option<i64>) -> Expire {
    at.map_or(Expire::Never, Expire::AtMillis)
}

/// `RENAME` and, with `nx`, `RENAMENX`.
fn rename_generic(ctx: &mut Ctx<'_>, args: Args<'_>, nx: bool) -> CmdResult {
    let (src, dst) = (args.get(1), args.get(2));
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys([src, dst]);
    if !locked.shard(src).contains(db, src) {
        return Err(ErrorReply::err("no such key"));
    }
    if src == dst {
        if nx {
            ctx.reply.int(0);
        } else {
            ctx.reply.ok();
        }
        return Ok(());
    }
    if nx && locked.shard(dst).contains(db, dst) {
        ctx.reply.int(0);
        return Ok(());
    }
    let (value, at) = take(&mut locked, db, src).expect("checked live");
    // The old value of `dst` goes first, so the key is new as Redis tells it.
    locked.shard(dst).remove(db, dst);
    locked.shard(dst).add_field_timers(db, dst, &value);
    locked.shard(dst).set(db, dst, value, expire_of(at));
    ctx.notify(GENERIC, "rename_from", src);
    ctx.notify(GENERIC, "rename_to", dst);
    if nx {
        ctx.reply.int(1);
    } else {
        ctx.reply.ok();
    }
    Ok(())
}

/// `RENAME key newkey`: OK; the value and its lifetime move, replacing `newkey`.
fn rename(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    rename_generic(ctx, args, false)
}

/// `RENAMENX key newkey`: 1 if renamed, 0 if `newkey` exists.
fn renamenx(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// A database index argument: an `int` (Redis's `getIntFromObject`, with its error for an
/// integer past 32 bits), then within range.
fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, ErrorReply> {
    let n = i32::try_from(super::args::parse_int(arg)?).map_err(|_| {
        ErrorReply::err("value is out of range, value must between -2147483648 and 2147483647")
    })?;
    if n < 0 || n as usize >= ctx.server.keyspace.databases() {
        return Err(ErrorReply::err("DB index is out of range"));
    }
    Ok(n as usize)
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 if copied, 0 if not.
fn copy(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let (src, dst) = (args.get(1), args.get(2));
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if args.is(i, "replace") {
            replace = true;
        } else if args.is(i, "db") && i + 1 < args.len() {
            dst_db = db_index(ctx, args.get(i + 1))?;
            i += 1;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    if src == dst && src_db == dst_db {
        return Err(ErrorReply::err(
            "source and destination objects are the same",
        ));
    }
    let mut locked = ctx.shards.lock_keys([src, dst]);
    let shard = locked.shard(src);
    let Some(value) = shard.lookup_read(src_db, src).map(Value::copy) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let at = shard.expire_time(src_db, src).expect("a live key");
    if locked.shard(dst).contains(dst_db, dst) && !replace {
        ctx.reply.int(0);
        return Ok(());
    }
    locked.shard(dst).remove(dst_db, dst);
    locked.shard(dst).add_field_timers(dst_db, dst, &value);
    locked.shard(dst).set(dst_db, dst, value, expire_of(at));
    ctx.notify_db(GENERIC, "copy_to", dst_db, dst);
    ctx.reply.int(1);
    Ok(())
}

/// `MOVE key db`: 1 if moved, 0 if missing here or present there.
fn move_key(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(1);
    let src_db = ctx.db();
    let dst_db = db_index(ctx, args.get(2))?;
    if src_db == dst_db {
        return Err(ErrorReply::err(
            "source and destination objects are the same",
        ));
    }
    let mut locked = ctx.shards.lock(key);
    if !locked.shard(key).contains(src_db, key) || locked.shard(key).contains(dst_db, key) {
        ctx.reply.int(0);
        return Ok(());
    }
    let (value, at) = take(&mut locked, src_db, key).expect("checked live");
    locked.shard(key).add_field_timers(dst_db, key, &value);
    locked.shard(key).set(dst_db, key, value, expire_of(at));
    ctx.notify_db(GENERIC, "move_from", src_db, key);
    ctx.notify_db(GENERIC, "move_to", dst_db, key);
    ctx.reply.int(1);
    Ok(())
}

/// The value at the `OBJECT` subcommand's key, if any.
fn object_value(ctx: &mut Ctx<'_>, args: Args<'_>) -> Option<Value> {
    let key = args.get(2);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    locked.shard(key).lookup_read_untouched(db, key).cloned()
}

/// `OBJECT ENCODING key`: `int`, `embstr` or `raw` for strings; nil if missing.
fn object_encoding(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    match object_value(ctx, args) {
        Some(value) => ctx.reply.bulk(value.encoding().as_bytes()),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `OBJECT FREQ key`: how often the policy counts the key as used: Redis's logarithmic
/// counter under `allkeys-lfu`/`volatile-lfu`, the frequency sketch's estimate (0 to 15)
/// under the W-TinyLFU policies; nil if missing, Redis's error under a policy that counts no
/// uses.
fn object_freq(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(2);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    match locked.shard(key).frequency(db, key) {
        None => ctx.reply.null(),
        Some(Some(n)) => ctx.reply.int(n as i64),
        Some(None) => {
            return Err(ErrorReply::err(
                "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ))
        }
    }
    Ok(())
}

/// `OBJECT IDLETIME key`: the whole seconds since the key was last read or written (not by
/// `OBJECT`, `TYPE`, `EXISTS` or `TTL`, which leave it untouched); nil if missing, and under
/// `allkeys-lfu`/`volatile-lfu` Redis's error, as Redis keeps no idle time under them.
fn object_idletime(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let key = args.get(2);
    let db = ctx.db();
    let idle = {
        let mut locked = ctx.shards.lock(key);
        locked.shard(key).idle_time(db, key)
    };
    let Some(idle) = idle else {
        ctx.reply.null();
        return Ok(());
    };
    if ctx.server.settings().maxmemory_policy.ends_with("-lfu") {
        return Err(ErrorReply::err(
            "An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    ctx.reply.int(idle.as_secs() as i64);
    Ok(())
}

/// `OBJECT REFCOUNT key`: 1, or Redis's count for its shared small integers; nil if missing.
fn object_refcount(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    match object_value(ctx, args) {
        Some(value) => ctx.reply.int(value.refcount()),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `OBJECT HELP`: the subcommands, a few lines each.
fn object_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    How often the eviction policy counts <key> as used (LFU and W-TinyLFU",
            "    policies only).",
            "IDLETIME <key>",
            "    Seconds since <key> was last read or written (not under the LFU policies).",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
    Ok(())
}

/// `MEMORY USAGE key [SAMPLES count]`: the bytes the key and its value take; nil if missing.
fn memory_usage(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut i = 3;
    while i < args.len() {
        if !(args.is(i, "samples") && i + 1 < args.len()) || args.int(i + 1)? < 0 {
            return Err(syntax_error());
        }
        i += 2;
    }
    let key = args.get(2);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    match locked.shard(key).memory_usage(db, key) {
        Some(bytes) => ctx.reply.int(bytes as i64),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// `MEMORY MALLOC-STATS`: a bulk string of `name:value` lines: `used_memory` (the usable
/// bytes counted as they are allocated, which `maxmemory` limits) and `heap_in_use` (the C
/// library's own count of its blocks in use, headers included; absent where it does not say).
fn memory_malloc_stats(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let mut text = format!(
        "allocator:{}\r\nused_memory:{}\r\n",
        crate::memory::allocator_name(),
        crate::memory::used_memory()
    );
    if let Some(heap) = crate::sys::heap_in_use() {
        text.push_str(&format!("heap_in_use:{heap}\r\n"));
    }
    ctx.reply.bulk(text.as_bytes());
    Ok(())
}

/// `MEMORY HELP`: the subcommands, a few lines each.
fn memory_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "MEMORY",
        &[
            "MALLOC-STATS",
            "    Return the allocator's count of the heap in use beside used_memory.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(())
}
