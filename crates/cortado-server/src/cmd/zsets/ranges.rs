//! The sorted-set commands over ranges: `ZRANGE` and its older forms, `ZRANGESTORE`,
//! `ZCOUNT`, `ZLEXCOUNT`, `ZREMRANGEBY*`, and the set algebra (`ZUNION`, `ZINTER`, `ZDIFF`,
//! `ZINTERCARD` and the store forms).
//!
//! Every range becomes a pair of ranks: a score or lexical bound is the rank of the first
//! entry past it ([`ZSet::count_below`], O(log n)), so ranges cost O(log n + m) for m entries
//! returned, as in Redis.

use std::collections::HashMap;

use super::{change, notify_change, read, reply_entries};
use crate::cmd::{syntax_error, wrong_type, Args, CmdResult, Ctx};
use crate::keyspace::zset::{ZSet, ZSetLimits};
use crate::keyspace::{Expire, Value};
use crate::notify::class::{GENERIC, ZSET};
use crate::protocol::ErrorReply;

/// A score bound: the score and whether it is exclusive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

/// A score bound as Redis's `zslParseRange` reads one (C's `strtod`): `(` for exclusive,
/// leading spaces allowed, the empty string 0, NaN refused.
fn parse_score_bound(bytes: &[u8]) -> Option<(f64, bool)> {
    let (exclusive, rest) = match bytes.first() {
        Some(b'(') => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if rest.is_empty() {
        return Some((0.0, exclusive));
    }
    let trimmed = rest.trim_ascii_start();
    let value = crate::cmd::args::parse_float(trimmed)?;
    Some((value, exclusive))
}

impl ScoreRange {
    pub(crate) fn parse(min: &[u8], max: &[u8]) -> Result<Self, ErrorReply> {
        let error = || ErrorReply::err("min or max is not a float");
        let (min, minex) = parse_score_bound(min).ok_or_else(error)?;
        let (max, maxex) = parse_score_bound(max).ok_or_else(error)?;
        Ok(Self {
            min,
            minex,
            max,
            maxex,
        })
    }

    fn below_min(&self, score: f64) -> bool {
        if self.minex {
            score <= self.min
        } else {
            score < self.min
        }
    }

    fn within_max(&self, score: f64) -> bool {
        if self.maxex {
            score < self.max
        } else {
            score <= self.max
        }
    }
}

/// A lexical bound: `-`, `+`, `[member` or `(member`.
#[derive(Debug, Clone)]
enum Lex {
    Lowest,
    Highest,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

/// A lexical range.
#[derive(Debug, Clone)]
pub(crate) struct LexRange {
    min: Lex,
    max: Lex,
}

fn parse_lex(bytes: &[u8]) -> Option<Lex> {
    match bytes {
        b"+" => Some(Lex::Highest),
        b"-" => Some(Lex::Lowest),
        [b'(', rest @ ..] => Some(Lex::Exclusive(rest.to_vec())),
        [b'[', rest @ ..] => Some(Lex::Inclusive(rest.to_vec())),
        _ => None,
    }
}

impl LexRange {
    pub(crate) fn parse(min: &[u8], max: &[u8]) -> Result<Self, ErrorReply> {
        let error = || ErrorReply::err("min or max not valid string range item");
        Ok(Self {
            min: parse_lex(min).ok_or_else(error)?,
            max: parse_lex(max).ok_or_else(error)?,
        })
    }

    fn below_min(&self, member: &[u8]) -> bool {
        match &self.min {
            Lex::Lowest => false,
            Lex::Highest => true,
            Lex::Inclusive(v) => member < v.as_slice(),
            Lex::Exclusive(v) => member <= v.as_slice(),
        }
    }

    fn within_max(&self, member: &[u8]) -> bool {
        match &self.max {
            Lex::Lowest => false,
            Lex::Highest => true,
            Lex::Inclusive(v) => member <= v.as_slice(),
            Lex::Exclusive(v) => member < v.as_slice(),
        }
    }
}

/// A range of a sorted set, as the commands name one.
#[derive(Debug, Clone)]
pub(crate) enum Span {
    /// Ranks `start` to `stop`, inclusive, negative from the end.
    Rank(i64, i64),
    /// Scores.
    Score(ScoreRange),
    /// Members, for a set of one score.
    Lex(LexRange),
}

/// Ranks `start..=stop` (negative from the end) of `len` entries, as Redis clamps them:
/// `None` if empty.
pub(crate) fn clamp_ranks(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

impl Span {
    /// The ranks of the first entry in the range and of the first past it (score and
    /// lexical ranges).
    fn bounds(&self, set: &ZSet) -> (usize, usize) {
        match self {
            Span::Rank(..) => unreachable!("rank ranges are clamped"),
            Span::Score(r) => (
                set.count_below(|s, _| r.below_min(s)),
                set.count_below(|s, _| r.within_max(s)),
            ),
            Span::Lex(r) => (
                set.count_below(|_, m| r.below_min(m)),
                set.count_below(|_, m| r.within_max(m)),
            ),
        }
    }

    /// The first rank and the number of entries in the range, walking down from the top if
    /// `rev`, after skipping `offset` and keeping at most `limit` (negative: all), as
    /// Redis's `LIMIT` does; `None` if empty.
    pub(crate) fn ranks(
        &self,
        set: &ZSet,
        rev: bool,
        offset: i64,
        limit: i64,
    ) -> Option<(usize, usize)> {
        let len = set.len();
        if let Span::Rank(start, stop) = *self {
            let (start, stop) = clamp_ranks(start, stop, len)?;
            let from = if rev { len - 1 - start } else { start };
            return Some((from, stop - start + 1));
        }
        let (first, end) = self.bounds(set);
        if end <= first || offset < 0 {
            return None;
        }
        let total = end - first;
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        if offset >= total {
            return None;
        }
        let mut n = total - offset;
        if limit >= 0 {
            n = n.min(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        if n == 0 {
            return None;
        }
        let from = if rev {
            end - 1 - offset
        } else {
            first + offset
        };
        Some((from, n))
    }

    /// The entries in the range (see [`ranks`](Self::ranks)).
    pub(crate) fn select(
        &self,
        set: &ZSet,
        rev: bool,
        offset: i64,
        limit: i64,
    ) -> Vec<(Vec<u8>, f64)> {
        match self.ranks(set, rev, offset, limit) {
            Some((from, n)) => set.range(from, n, rev),
            None => Vec::new(),
        }
    }
}

/// What kind of range a `ZRANGE` form reads, if fixed by the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

/// `ZRANGE` and its older forms, as Redis's `zrangeGenericCommand`: the key is argument
/// `at`, the range's ends the next two, options after; `store` is `ZRANGESTORE`'s
/// destination.
fn range_generic(
    ctx: &mut Ctx<'_>,
    args: Args<'_>,
    at: usize,
    store: Option<&[u8]>,
    by: By,
    rev: Option<bool>,
) -> CmdResult {
    let (mut by, mut rev) = (by, rev);
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = at + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        if store.is_none() && args.is(j, "withscores") {
            withscores = true;
        } else if args.is(j, "limit") && left >= 2 {
            offset = args.int(j + 1)?;
            limit = args.int(j + 2)?;
            j += 2;
        } else if rev.is_none() && args.is(j, "rev") {
            rev = Some(true);
        } else if by == By::Auto && args.is(j, "bylex") {
            by = By::Lex;
        } else if by == By::Auto && args.is(j, "byscore") {
            by = By::Score;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if by == By::Auto {
        by = By::Rank;
    }
    if limit != -1 && by == By::Rank {
        return Err(ErrorReply::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == By::Lex {
        return Err(ErrorReply::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min, mut max) = (args.get(at + 1), args.get(at + 2));
    if rev && by != By::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    let span = match by {
        By::Rank => Span::Rank(
            crate::cmd::args::parse_int(min)?,
            crate::cmd::args::parse_int(max)?,
        ),
        By::Score => Span::Score(ScoreRange::parse(min, max)?),
        By::Lex | By::Auto => Span::Lex(LexRange::parse(min, max)?),
    };
    let key = args.get(at);
    let db = ctx.db();
    let Some(dst) = store else {
        let mut locked = ctx.shards.lock(key);
        let entries = match read(locked.shard(key), db, key)? {
            Some(set) => span.select(set, rev, offset, limit),
            None => Vec::new(),
        };
        reply_entries(ctx.reply, &entries, withscores);
        return Ok(());
    };
    let mut locked = ctx.shards.lock_keys([dst, key]);
    let entries = match read(locked.shard(key), db, key)? {
        Some(set) => span.select(set, rev, offset, limit),
        None => Vec::new(),
    };
    let limits = ctx.server.settings().zset_limits;
    let (event, len) = store_entries(locked.shard(dst), db, dst, &entries, "zrangestore", limits);
    if let Some((class, event)) = event {
        ctx.notify(class, event, dst);
    }
    ctx.reply.int(len as i64);
    Ok(())
}

/// Writes `entries` as the sorted set at `dst` in `db` (deleting it if there are none), compact
/// within `limits`:
/// the event to tell (`event`, or `del` if a key went, or none) and the count to reply.
fn store_entries(
    shard: &mut crate::keyspace::Shard,
    db: usize,
    dst: &[u8],
    entries: &[(Vec<u8>, f64)],
    event: &'static str,
    limits: ZSetLimits,
) -> (Option<(u32, &'static str)>, usize) {
    if entries.is_empty() {
        let deleted = shard.remove(db, dst).is_some();
        return (deleted.then_some((GENERIC, "del")), 0);
    }
    let set = ZSet::from_entries(entries.iter().map(|(m, s)| (m.as_slice(), *s)), limits);
    let len = set.len();
    shard.set(db, dst, Value::ZSet(set), Expire::Never);
    (Some((ZSET, event)), len)
}

pub(crate) fn zrange(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Auto, None)
}

pub(crate) fn zrangestore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 2, Some(args.get(1)), By::Auto, None)
}

pub(crate) fn zrevrange(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Rank, Some(true))
}

pub(crate) fn zrangebyscore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Score, Some(false))
}

pub(crate) fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Score, Some(true))
}

pub(crate) fn zrangebylex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Lex, Some(false))
}

pub(crate) fn zrevrangebylex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    range_generic(ctx, args, 1, None, By::Lex, Some(true))
}

/// `ZCOUNT key min max` and `ZLEXCOUNT`: the entries in the range.
fn count(ctx: &mut Ctx<'_>, args: Args<'_>, span: Span) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let n = match read(locked.shard(key), db, key)? {
        Some(set) => span.ranks(set, false, 0, -1).map_or(0, |r| r.1),
        None => 0,
    };
    ctx.reply.int(n as i64);
    Ok(())
}

pub(crate) fn zcount(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let span = Span::Score(ScoreRange::parse(args.get(2), args.get(3))?);
    count(ctx, args, span)
}

pub(crate) fn zlexcount(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let span = Span::Lex(LexRange::parse(args.get(2), args.get(3))?);
    count(ctx, args, span)
}

/// `ZREMRANGEBY* key a b`: the entries removed.
fn remove_range(ctx: &mut Ctx<'_>, args: Args<'_>, span: Span, event: &'static str) -> CmdResult {
    let key = args.get(1);
    let db = ctx.db();
    let mut locked = ctx.shards.lock(key);
    let changed = change(locked.shard(key), db, key, |set| {
        let entries = span.select(set, false, 0, -1);
        for (m, _) in &entries {
            set.remove(m);
        }
        Ok(entries.len())
    })?;
    let removed = match changed {
        Some((n, emptied)) => {
            if n > 0 {
                notify_change(ctx, event, key, emptied);
            }
            n
        }
        None => 0,
    };
    ctx.reply.int(removed as i64);
    Ok(())
}

pub(crate) fn zremrangebyrank(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let span = Span::Rank(args.int(2)?, args.int(3)?);
    remove_range(ctx, args, span, "zremrangebyrank")
}

pub(crate) fn zremrangebyscore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let span = Span::Score(ScoreRange::parse(args.get(2), args.get(3))?);
    remove_range(ctx, args, span, "zremrangebyscore")
}

pub(crate) fn zremrangebylex(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let span = Span::Lex(LexRange::parse(args.get(2), args.get(3))?);
    remove_range(ctx, args, span, "zremrangebylex")
}

/// The set operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// How scores of a member in several sets combine.
#[derive(Debug, Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            // Redis turns `inf + -inf` into 0 rather than NaN.
            Aggregate::Sum => {
                let sum = a + b;
                if sum.is_nan() {
                    0.0
                } else {
                    sum
                }
            }
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// The entries of an input of the set algebra: a sorted set's, or (once sets exist) a
/// set's members with score 1, as Redis takes both.
fn input_entries(value: &Value) -> Result<Vec<(Vec<u8>, f64)>, ErrorReply> {
    match value {
        Value::ZSet(set) => Ok(set.range(0, usize::MAX, false)),
        // A set (`Value::Set`, from the `hashes` branch) joins here: its members, score 1.
        _ => Err(wrong_type()),
    }
}

/// `ZUNION`, `ZINTER`, `ZDIFF`, `ZINTERCARD` and the store forms, as Redis's
/// `zunionInterDiffGenericCommand`: the keys are read (and their types checked) before the
/// options are.
fn set_op(
    ctx: &mut Ctx<'_>,
    args: Args<'_>,
    op: Op,
    name: &str,
    store: bool,
    card_only: bool,
) -> CmdResult {
    let numkeys_at = if store { 2 } else { 1 };
    let setnum = args.int(numkeys_at)?;
    if setnum < 1 {
        return Err(ErrorReply::err(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    if setnum as u64 > (args.len() - numkeys_at - 1) as u64 {
        return Err(syntax_error());
    }
    let setnum = setnum as usize;
    let keys = args.from(numkeys_at + 1).prefix(setnum);
    let dst = store.then(|| args.get(1));
    let db = ctx.db();
    let mut locked = ctx.shards.lock_keys(keys.iter().chain(dst));
    let mut inputs = Vec::with_capacity(setnum);
    for key in keys.iter() {
        let entries = match locked.shard(key).lookup_read(db, key) {
            Some(value) => input_entries(value)?,
            None => Vec::new(),
        };
        inputs.push((entries, 1.0f64));
    }
    let mut aggregate = Aggregate::Sum;
    let (mut withscores, mut limit) = (false, 0usize);
    let mut j = numkeys_at + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        if op != Op::Diff && !card_only && remaining > setnum && args.is(j, "weights") {
            for (i, input) in inputs.iter_mut().enumerate() {
                input.1 = crate::cmd::args::parse_float(args.get(j + 1 + i))
                    .ok_or_else(|| ErrorReply::err("weight value is not a float"))?;
            }
            j += 1 + setnum;
        } else if op != Op::Diff && !card_only && remaining >= 2 && args.is(j, "aggregate") {
            aggregate = if args.is(j + 1, "sum") {
                Aggregate::Sum
            } else if args.is(j + 1, "min") {
                Aggregate::Min
            } else if args.is(j + 1, "max") {
                Aggregate::Max
            } else {
                return Err(syntax_error());
            };
            j += 2;
        } else if !store && !card_only && args.is(j, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && args.is(j, "limit") {
            let n = args.int(j + 1)?;
            if n < 0 {
                return Err(ErrorReply::err("LIMIT can't be negative"));
            }
            limit = usize::try_from(n).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    let weighted = |s: f64, w: f64| {
        let v = s * w;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut result: Vec<(Vec<u8>, f64)> = match op {
        Op::Union => {
            inputs.sort_by_key(|i| i.0.len());
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for (entries, w) in inputs {
                for (m, s) in entries {
                    let v = weighted(s, w);
                    acc.entry(m)
                        .and_modify(|cur| *cur = aggregate.apply(*cur, v))
                        .or_insert(v);
                }
            }
            acc.into_iter().collect()
        }
        Op::Inter => {
            inputs.sort_by_key(|i| i.0.len());
            let maps: Vec<(HashMap<&[u8], f64>, f64)> = inputs[1..]
                .iter()
                .map(|(e, w)| (e.iter().map(|(m, s)| (m.as_slice(), *s)).collect(), *w))
                .collect();
            let (first, w0) = &inputs[0];
            let mut out = Vec::new();
            'members: for (m, s) in first {
                let mut score = weighted(*s, *w0);
                for (map, w) in &maps {
                    match map.get(m.as_slice()) {
                        Some(&other) => score = aggregate.apply(score, weighted(other, *w)),
                        None => continue 'members,
                    }
                }
                out.push((m.clone(), score));
                if card_only && limit > 0 && out.len() >= limit {
                    break;
                }
            }
            out
        }
        Op::Diff => {
            let others: std::collections::HashSet<&[u8]> = inputs[1..]
                .iter()
                .flat_map(|(e, _)| e.iter().map(|(m, _)| m.as_slice()))
                .collect();
            inputs[0]
                .0
                .iter()
                .filter(|(m, _)| !others.contains(m.as_slice()))
                .cloned()
                .collect()
        }
    };
    if card_only {
        ctx.reply.int(result.len() as i64);
        return Ok(());
    }
    result.sort_by(|a, b| crate::keyspace::zset::order((a.1, &a.0), (b.1, &b.0)));
    match dst {
        Some(dst) => {
            let event = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            let limits = ctx.server.settings().zset_limits;
            let (event, len) = store_entries(locked.shard(dst), db, dst, &result, event, limits);
            if let Some((class, event)) = event {
                ctx.notify(class, event, dst);
            }
            ctx.reply.int(len as i64);
        }
        None => reply_entries(ctx.reply, &result, withscores),
    }
    Ok(())
}

pub(crate) fn zunion(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Union, "zunion", false, false)
}

pub(crate) fn zinter(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Inter, "zinter", false, false)
}

pub(crate) fn zdiff(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Diff, "zdiff", false, false)
}

pub(crate) fn zintercard(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Inter, "zintercard", false, true)
}

pub(crate) fn zunionstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Union, "zunionstore", true, false)
}

pub(crate) fn zinterstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Inter, "zinterstore", true, false)
}

pub(crate) fn zdiffstore(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_op(ctx, args, Op::Diff, "zdiffstore", true, false)
}
