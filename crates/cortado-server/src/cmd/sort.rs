//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set, sorted by their own value
//! or by other keys' (`BY`), numerically or by bytes (`ALPHA`), with `LIMIT`, `GET` of other
//! keys, and `STORE` of the result as a list.
//!
//! Redis 7.0's `sortCommandGeneric`, step by step: the options; the key (a sorted set or a
//! list sorted `BY` a pattern without `*` keeps its own order, `LIMIT` applied to it
//! directly); each element's weight (its own value, or the string at the key `BY` names,
//! parsed as a double unless `ALPHA`; a missing weight key weighs 0 or sorts first); the
//! sort (ties broken by the element's bytes); then the output, through `GET` patterns
//! (`#` is the element itself, `key->field` a hash's field). Keys named by patterns may be
//! anywhere, so a `SORT` with patterns holds every shard.

use super::flags::*;
use super::{syntax_error, wrong_type, Args, CmdResult, Command, Ctx, Keys};
use crate::keyspace::list::{End, List};
use crate::keyspace::{Expire, Locked, Value};
use crate::notify::class::{GENERIC, LIST};
use crate::protocol::ErrorReply;

command_constructor!("generic");

/// `SORT` and `SORT_RO`.
pub const COMMANDS: &[Command] = &[
    cmd(
        "sort",
        -2,
        WRITE | DENYOOM | MOVABLE_KEYS,
        Keys {
            first: 1,
            last: 1,
            step: 1,
        },
        "Sorts a list, set or sorted set, optionally storing the result",
        "1.0.0",
        sort,
    ),
    cmd(
        "sort_ro",
        -2,
        READONLY | MOVABLE_KEYS,
        Keys {
            first: 1,
            last: 1,
            step: 1,
        },
        "Sorts a list, set or sorted set without writing",
        "7.0.0",
        sort_ro,
    ),
];

/// An element being sorted: itself, its numeric weight (`None`: 0), and its `BY` value for
/// `ALPHA` (`None`: missing, sorted first).
type Sortable = (Vec<u8>, Option<f64>, Option<Vec<u8>>);

fn sort(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    sort_generic(ctx, args, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    sort_generic(ctx, args, true)
}

/// The value a pattern names for `element` (Redis's `lookupKeyByPattern`): `#` is the
/// element; otherwise the first `*` is replaced by it and the key read (a hit or miss, as
/// Redis counts), a string, or with `->field` a hash's field. `None` if there is none.
fn by_pattern(
    locked: &mut Locked<'_>,
    db: usize,
    pattern: &[u8],
    element: &[u8],
) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let rest = &pattern[star + 1..];
    let field = rest
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < rest.len());
    let postfix = match field {
        Some(at) => &rest[..at],
        None => rest,
    };
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let value = locked.shard(&key).lookup_read(db, &key)?;
    match (field, value) {
        (None, Value::Str(s)) => Some(s.as_slice().to_vec()),
        (Some(at), Value::Hash(hash)) => hash.get(&rest[at + 2..]).map(<[u8]>::to_vec),
        _ => None,
    }
}

/// A weight as Redis's `strtod` takes one: the whole string (leading spaces allowed, empty
/// is 0), not NaN.
fn weight(bytes: &[u8]) -> Option<f64> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.is_empty() {
        return bytes.is_empty().then_some(0.0);
    }
    super::args::parse_float(trimmed)
}

fn sort_generic(ctx: &mut Ctx<'_>, args: Args<'_>, read_only: bool) -> CmdResult {
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut store: Option<&[u8]> = None;
    let mut by: Option<&[u8]> = None;
    let mut gets: Vec<&[u8]> = Vec::new();
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        if args.is(j, "asc") {
            desc = false;
        } else if args.is(j, "desc") {
            desc = true;
        } else if args.is(j, "alpha") {
            alpha = true;
        } else if args.is(j, "limit") && left >= 2 {
            limit_start = args.int(j + 1)?;
            limit_count = args.int(j + 2)?;
            j += 2;
        } else if !read_only && args.is(j, "store") && left >= 1 {
            store = Some(args.get(j + 1));
            j += 1;
        } else if args.is(j, "by") && left >= 1 {
            by = Some(args.get(j + 1));
            dontsort = !args.get(j + 1).contains(&b'*');
            j += 1;
        } else if args.is(j, "get") && left >= 1 {
            gets.push(args.get(j + 1));
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let key = args.get(1);
    let db = ctx.db();
    let patterns = !gets.is_empty() || (by.is_some() && !dontsort);
    let mut locked = if patterns {
        ctx.shards.lock_all()
    } else {
        ctx.shards.lock_keys(std::iter::once(key).chain(store))
    };
    // The elements, in the key's own order.
    let found = locked.shard(key).lookup_read(db, key);
    let elements: Vec<Vec<u8>> = match found {
        None => Vec::new(),
        Some(Value::List(list)) => list.iter().map(<[u8]>::to_vec).collect(),
        Some(Value::ZSet(set)) => set.members(),
        Some(Value::Set(set)) => {
            // A set has no order of its own: stored unsorted, it is sorted as strings, so
            // that what is stored does not depend on the set's layout (Redis's rule).
            if dontsort && store.is_some() {
                (dontsort, alpha, by) = (false, true, None);
            }
            set.iter().map(|member| member.into_owned()).collect()
        }
        Some(_) => return Err(wrong_type()),
    };
    let len = elements.len() as i64;
    let start = limit_start.max(0);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start.saturating_add(limit_count) - 1
    };
    let mut start = start;
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    let mut vector: Vec<Sortable>;
    if dontsort {
        // A list or sorted set in its own order (backwards for DESC), LIMIT taken here.
        let mut ordered = elements;
        if desc {
            ordered.reverse();
        }
        vector = if end >= start {
            ordered
                .into_iter()
                .skip(start as usize)
                .take((end - start + 1) as usize)
                .map(|e| (e, None, None))
                .collect()
        } else {
            Vec::new()
        };
        end -= start;
        start = 0;
    } else {
        vector = elements.into_iter().map(|e| (e, None, None)).collect();
        let mut conversion_error = false;
        for (element, score, cmp) in &mut vector {
            let by_value = match by {
                Some(pattern) => match by_pattern(&mut locked, db, pattern, element) {
                    Some(v) => v,
                    None => continue,
                },
                None => element.clone(),
            };
            if alpha {
                if by.is_some() {
                    *cmp = Some(by_value);
                }
            } else {
                match weight(&by_value) {
                    Some(w) => *score = Some(w),
                    None => conversion_error = true,
                }
            }
        }
        if conversion_error {
            return Err(ErrorReply::err(
                "One or more scores can't be converted into double",
            ));
        }
        let by_pattern_set = by.is_some();
        vector.sort_by(|a, b| {
            let cmp = if !alpha {
                let (x, y) = (a.1.unwrap_or(0.0), b.1.unwrap_or(0.0));
                x.partial_cmp(&y)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            } else if by_pattern_set {
                match (&a.2, &b.2) {
                    (None, None) => std::cmp::Ordering::Equal,
                    (None, Some(_)) => std::cmp::Ordering::Less,
                    (Some(_), None) => std::cmp::Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.0.cmp(&b.0)
            };
            if desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
    }
    let picked: &[Sortable] = if end >= start {
        &vector[start as usize..=end as usize]
    } else {
        &[]
    };
    // The output: each element, or what each GET pattern names for it.
    let mut output: Vec<Option<Vec<u8>>> = Vec::new();
    for (element, _, _) in picked {
        if gets.is_empty() {
            output.push(Some(element.clone()));
        }
        for pattern in &gets {
            output.push(by_pattern(&mut locked, db, pattern, element));
        }
    }
    let Some(dst) = store else {
        ctx.reply.array(output.len());
        for item in &output {
            match item {
                Some(bytes) => ctx.reply.bulk(bytes),
                None => ctx.reply.null(),
            }
        }
        return Ok(());
    };
    let shard = locked.shard(dst);
    if output.is_empty() {
        if shard.remove(db, dst).is_some() {
            ctx.notify(GENERIC, "del", dst);
        }
    } else {
        let mut list = List::default();
        for item in &output {
            list.push(End::Right, item.as_deref().unwrap_or_default());
        }
        shard.set(db, dst, Value::List(Box::new(list)), Expire::Never);
        ctx.notify(LIST, "sortstore", dst);
    }
    ctx.reply.int(output.len() as i64);
    Ok(())
}
