//! What the commands of the collection types (hashes, sets, lists, sorted sets) share:
//! changing a collection in place and deleting its key once emptied, the options of
//! `HSCAN`/`SSCAN`/`ZSCAN`, and picks at random.

use super::args::Args;
use super::syntax_error;
use crate::glob::glob_match;
use crate::keyspace::hash::Hash;
use crate::keyspace::list::List;
use crate::keyspace::set::Set;
use crate::keyspace::zset::ZSet;
use crate::keyspace::{random_u64, Shard, Value};
use crate::protocol::{ErrorReply, Reply};

/// A collection type of [`Value`]: what [`change`] needs to find one and to see it emptied.
pub(crate) trait Collection {
    /// The collection `value` holds, if it is of this type.
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    /// Whether it is empty (and its key must go).
    fn is_empty(&self) -> bool;
}

/// Implements [`Collection`] for `$type` through `Value::$access`.
macro_rules! collection {
    ($type:ty, $access:ident) => {
        impl Collection for $type {
            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                value.$access()
            }

            fn is_empty(&self) -> bool {
                <$type>::is_empty(self)
            }
        }
    };
}

collection!(Hash, as_hash_mut);
collection!(Set, as_set_mut);
collection!(List, as_list_mut);
collection!(ZSet, as_zset_mut);

/// Changes the collection at `key` in place with `change` (its lifetime stays; the value is
/// re-weighed when the borrow ends), `WRONGTYPE` if the key holds another type, and deletes
/// the key if the change left it empty, as Redis does (also when `change` failed). `Err(change)`
/// back if the key is missing, for a command that then creates it; otherwise what `change`
/// returned and whether the key was deleted. The caller tells its event, then `del` if the key
/// went (Redis's order).
pub(crate) fn change<C: Collection, R, F: FnOnce(&mut C) -> Result<R, ErrorReply>>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    change: F,
) -> Result<Result<(R, bool), F>, ErrorReply> {
    let Some(mut value) = shard.lookup_mut(db, key) else {
        return Ok(Err(change));
    };
    let collection = C::of_mut(&mut value).ok_or_else(super::wrong_type)?;
    let result = change(collection);
    let emptied = collection.is_empty();
    drop(value);
    if emptied {
        shard.remove(db, key);
    }
    Ok(Ok((result?, emptied)))
}

/// [`change`] for a command that does nothing to a missing key: `None` then.
pub(crate) fn change_existing<C: Collection, R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    change: impl FnOnce(&mut C) -> Result<R, ErrorReply>,
) -> Result<Option<(R, bool)>, ErrorReply> {
    Ok(self::change(shard, db, key, change)?.ok())
}

/// The options of `HSCAN` and `SSCAN`: `MATCH pattern` and `COUNT n` (at least 1), in any
/// order and repeated (the last counts); anything else is a syntax error.
pub(crate) struct ScanOptions<'a> {
    pattern: Option<&'a [u8]>,
    /// Positions to visit at least, as a hint.
    pub count: usize,
}

impl<'a> ScanOptions<'a> {
    /// The options from argument `from` on.
    pub fn parse(args: Args<'a>, from: usize) -> Result<Self, ErrorReply> {
        let mut options = ScanOptions {
            pattern: None,
            count: 10,
        };
        let mut i = from;
        while i < args.len() {
            if i + 1 >= args.len() {
                return Err(syntax_error());
            }
            if args.is(i, "count") {
                let count = args.int(i + 1)?;
                if count < 1 {
                    return Err(syntax_error());
                }
                options.count = usize::try_from(count).unwrap_or(usize::MAX);
            } else if args.is(i, "match") {
                // `*` matches everything, so it filters nothing.
                options.pattern = Some(args.get(i + 1)).filter(|p| *p != b"*");
            } else {
                return Err(syntax_error());
            }
            i += 2;
        }
        Ok(options)
    }

    /// Whether `item` passes `MATCH`.
    pub fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, item, false))
    }
}

/// The reply of `HSCAN`/`SSCAN`/`ZSCAN` on a missing key, given before their options are
/// read, as Redis gives it: cursor 0 and nothing.
pub(crate) fn reply_empty_scan(reply: &mut Reply) {
    reply.array(2);
    reply.bulk(b"0");
    reply.array(0);
}

/// A number in `0..n` (`n` > 0) picked at random.
pub(crate) fn random_index(n: usize) -> usize {
    (random_u64() % n as u64) as usize
}

/// `count` distinct numbers of `0..n` (`count` < `n`) picked at random, in random order.
pub(super) fn distinct_indices(n: usize, count: usize) -> Vec<usize> {
    if count * 3 > n {
        // Many of them: a partial shuffle of all.
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..count {
            let j = i + random_index(n - i);
            all.swap(i, j);
        }
        all.truncate(count);
        return all;
    }
    let mut picked = std::collections::HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let i = random_index(n);
        if picked.insert(i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_indices_are_distinct_and_in_range() {
        for (n, count) in [(10, 9), (1000, 10), (5, 0), (2, 1)] {
            let mut picks = distinct_indices(n, count);
            assert_eq!(picks.len(), count);
            assert!(picks.iter().all(|&i| i < n));
            picks.sort_unstable();
            picks.dedup();
            assert_eq!(picks.len(), count, "distinct");
        }
    }
}
