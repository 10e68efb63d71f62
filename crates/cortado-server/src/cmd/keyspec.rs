//! Key specifications: where a command's keys are in its arguments and what it does to them,
//! in the shape `COMMAND INFO` reports and `COMMAND GETKEYS` follows.
//!
//! A specification finds its first key (at a fixed index, or after a keyword) and then the
//! rest (a range with a step, or a count read from an argument), and carries flags saying how
//! the keys are used (`RO`, `RW`, `OW`, `RM`; `access`, `update`, `insert`, `delete`).
//! Most commands have one specification, derived from the table's key positions
//! ([`Keys`]) with the flags their [`Doc`](super::docs::Doc) gives; a command whose keys
//! are used differently (`COPY` reads its source and overwrites its destination) has one per
//! key, and a command whose keys move with its arguments writes its specifications out.
//!
//! # Design
//!
//! The specifications are plain `Copy` values built when `COMMAND` asks (it is not on any
//! command's path), so deriving them costs nothing at dispatch.

use super::Args;
use super::Keys;

/// Key specification flags, as `COMMAND INFO` and `COMMAND GETKEYSANDFLAGS` name them.
pub mod flag {
    /// Read only.
    pub const RO: u16 = 1 << 0;
    /// Read and written.
    pub const RW: u16 = 1 << 1;
    /// Overwritten without being read.
    pub const OW: u16 = 1 << 2;
    /// Removed.
    pub const RM: u16 = 1 << 3;
    /// The value is returned or its contents read.
    pub const ACCESS: u16 = 1 << 4;
    /// The value is changed or replaced.
    pub const UPDATE: u16 = 1 << 5;
    /// Something is added to the value (or the key created), nothing removed.
    pub const INSERT: u16 = 1 << 6;
    /// Something is removed from the value (or the key deleted).
    pub const DELETE: u16 = 1 << 7;
    /// Not a key, though it looks like one (it is never looked up).
    pub const NOT_KEY: u16 = 1 << 8;
    /// The specification may miss keys: callers must ask the command.
    pub const INCOMPLETE: u16 = 1 << 9;
    /// The flags depend on the other arguments (`SET`'s `GET`).
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    /// Every flag with its name, in the order `COMMAND INFO` lists them.
    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];

    /// The names of the flags in `set`, in order.
    pub fn names(set: u16) -> impl Iterator<Item = &'static str> {
        NAMES
            .iter()
            .filter(move |(bit, _)| set & bit != 0)
            .map(|(_, name)| *name)
    }
}

/// How a specification finds its first key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At this argument (the command's name is 0).
    Index(i32),
    /// Just after `keyword` (any case), searched from argument `startfrom` forwards, or
    /// backwards from the end if negative.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    /// Not to be found from the arguments (`SORT`'s `BY` and `GET` keys come from data).
    Unknown,
}

/// How a specification finds its keys from the first on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// Up to `lastkey` (relative to the first key; negative: from the end of the arguments,
    /// or, with a `limit`, over 1/`limit` of the arguments left), every `keystep`.
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    /// As many keys as argument `keynumidx` (relative to the begin) says, the first at
    /// `firstkey` (relative to the begin), every `keystep`.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
    /// Not to be found from the arguments: see [`Begin::Unknown`].
    Unknown,
}

/// One key specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// [`flag`]s.
    pub flags: u16,
    pub begin: Begin,
    pub find: Find,
}

/// A single key at argument `index`.
pub const fn single(index: i32, flags: u16) -> KeySpec {
    KeySpec {
        flags,
        begin: Begin::Index(index),
        find: Find::Range {
            lastkey: 0,
            keystep: 1,
            limit: 0,
        },
    }
}

/// How a command's [`Doc`](super::docs::Doc) describes its keys.
#[derive(Debug, Clone, Copy)]
pub enum KeysDoc {
    /// Nothing beyond the table's positions: one specification over them, without flags.
    Positions,
    /// One specification over the table's positions, with these flags.
    Range(u16),
    /// One single-key specification per key position, with these flags each, in order
    /// (`COPY source destination`).
    Each(&'static [u16]),
    /// Written out: keys found by keyword or count.
    Specs(&'static [KeySpec]),
}

/// The specifications of a command whose table positions are `keys`, described by `doc`.
pub fn specs(keys: Keys, doc: KeysDoc) -> Vec<KeySpec> {
    let range = |flags| KeySpec {
        flags,
        begin: Begin::Index(keys.first),
        find: Find::Range {
            lastkey: if keys.last < 0 {
                keys.last
            } else {
                keys.last - keys.first
            },
            keystep: keys.step,
            limit: 0,
        },
    };
    match doc {
        KeysDoc::Specs(specs) => specs.to_vec(),
        _ if keys.first == 0 => Vec::new(),
        KeysDoc::Positions => vec![range(0)],
        KeysDoc::Range(flags) => vec![range(flags)],
        KeysDoc::Each(flags) => flags
            .iter()
            .zip((keys.first..).step_by(keys.step.max(1) as usize))
            .map(|(&flags, index)| single(index, flags))
            .collect(),
    }
}

/// The positions of the keys of `call` (the command's name first) by `specs`, each with its
/// specification's flags; `None` where a specification cannot be followed: a key count that
/// is not a non-negative integer, a range that is empty or runs past the arguments, or an
/// incomplete specification (`COMMAND GETKEYS` then reports invalid arguments, as Redis
/// does). A keyword that is absent is no error: that specification has no keys.
pub fn find_keys(specs: &[KeySpec], call: Args<'_>) -> Option<Vec<(usize, u16)>> {
    let argc = call.len() as i64;
    let mut out = Vec::new();
    for spec in specs {
        if spec.flags & flag::NOT_KEY != 0 {
            continue;
        }
        let begin = match spec.begin {
            // Keys the arguments do not name: none to report.
            Begin::Unknown => continue,
            Begin::Index(index) => i64::from(index),
            Begin::Keyword { keyword, startfrom } => {
                // Forwards from `startfrom` up to the last argument but one, or backwards from
                // the end down to argument 2: a keyword needs a key after it.
                let found = if startfrom > 0 {
                    (i64::from(startfrom)..argc - 1).find(|&i| call.is(i as usize, keyword))
                } else {
                    (2..=argc + i64::from(startfrom))
                        .rev()
                        .find(|&i| i < argc && call.is(i as usize, keyword))
                };
                match found {
                    Some(i) => i + 1,
                    None => continue,
                }
            }
        };
        let (first, last, step) = match spec.find {
            Find::Unknown => continue,
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let lastkey = i64::from(lastkey);
                let last = if lastkey >= 0 {
                    begin + lastkey
                } else if limit <= 1 {
                    argc + lastkey
                } else {
                    begin + (argc - begin) / i64::from(limit) + lastkey
                };
                (begin, last, i64::from(keystep))
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let at = begin + i64::from(keynumidx);
                if at < 0 || at >= argc {
                    return None;
                }
                let count =
                    crate::protocol::parse_i64(call.get(at as usize)).filter(|&n| n >= 0)?;
                let first = begin + i64::from(firstkey);
                (first, first + count - 1, i64::from(keystep))
            }
        };
        if step < 1 || first < 1 || first >= argc || last < first || last >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            out.push((i as usize, spec.flags));
            i += step;
        }
        if spec.flags & flag::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::flag::*;
    use super::*;

    /// The key positions `specs` find in `call`.
    fn positions(specs: &[KeySpec], call: &[&str]) -> Option<Vec<usize>> {
        let bytes: Vec<u8> = call.concat().into_bytes();
        let mut ranges = Vec::new();
        let mut at = 0;
        for a in call {
            ranges.push(at..at + a.len());
            at += a.len();
        }
        find_keys(specs, Args::new(&bytes, &ranges))
            .map(|keys| keys.into_iter().map(|(i, _)| i).collect())
    }

    const PAIRS: Keys = Keys {
        first: 1,
        last: -1,
        step: 2,
    };

    #[test]
    fn specs_derive_one_range_or_one_per_key() {
        let mset = specs(PAIRS, KeysDoc::Range(OW | UPDATE));
        assert_eq!(
            mset,
            [KeySpec {
                flags: OW | UPDATE,
                begin: Begin::Index(1),
                find: Find::Range {
                    lastkey: -1,
                    keystep: 2,
                    limit: 0
                },
            }]
        );
        let two = Keys {
            first: 1,
            last: 2,
            step: 1,
        };
        let lcs = specs(two, KeysDoc::Range(RO));
        assert_eq!(
            lcs[0].find,
            Find::Range {
                lastkey: 1,
                keystep: 1,
                limit: 0
            }
        );
        let copy = specs(two, KeysDoc::Each(&[RO | ACCESS, OW | UPDATE]));
        assert_eq!(copy, [single(1, RO | ACCESS), single(2, OW | UPDATE)]);
        assert!(specs(crate::cmd::NO_KEYS, KeysDoc::Range(RO)).is_empty());
    }

    #[test]
    fn find_keys_follows_ranges_and_steps() {
        let mset = specs(PAIRS, KeysDoc::Range(OW));
        assert_eq!(
            positions(&mset, &["MSET", "a", "1", "b", "2"]),
            Some(vec![1, 3])
        );
        // An odd count still names the last argument a key, as Redis does.
        assert_eq!(positions(&mset, &["MSET", "a", "1", "b"]), Some(vec![1, 3]));
        let get = [single(1, RO)];
        assert_eq!(positions(&get, &["GET", "k"]), Some(vec![1]));
        assert_eq!(positions(&get, &["GET"]), None);
        let sub = [single(2, RO)];
        assert_eq!(positions(&sub, &["OBJECT", "ENCODING", "k"]), Some(vec![2]));
    }

    #[test]
    fn find_keys_follows_keywords_and_counts() {
        // ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS ...]
        let zunionstore = [
            single(1, OW | UPDATE),
            KeySpec {
                flags: RO | ACCESS,
                begin: Begin::Index(2),
                find: Find::Keynum {
                    keynumidx: 0,
                    firstkey: 1,
                    keystep: 1,
                },
            },
        ];
        assert_eq!(
            positions(
                &zunionstore,
                &["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS"]
            ),
            Some(vec![1, 3, 4])
        );
        assert_eq!(
            positions(&zunionstore, &["ZUNIONSTORE", "d", "3", "a"]),
            None
        );
        assert_eq!(
            positions(&zunionstore, &["ZUNIONSTORE", "d", "x", "a"]),
            None
        );
        assert_eq!(
            positions(&zunionstore, &["ZUNIONSTORE", "d", "-1", "a"]),
            None
        );
        assert_eq!(positions(&zunionstore, &["ZUNIONSTORE", "d", "0"]), None);
        // XREAD [COUNT n] STREAMS key [key ...] id [id ...]: half of what follows STREAMS.
        let xread = [KeySpec {
            flags: RO,
            begin: Begin::Keyword {
                keyword: "STREAMS",
                startfrom: 1,
            },
            find: Find::Range {
                lastkey: -1,
                keystep: 1,
                limit: 2,
            },
        }];
        assert_eq!(
            positions(
                &xread,
                &["XREAD", "COUNT", "2", "streams", "s", "t", "0", "0"]
            ),
            Some(vec![4, 5])
        );
        assert_eq!(positions(&xread, &["XREAD", "COUNT", "2"]), Some(vec![]));
        // No keys after the keyword: an empty range.
        assert_eq!(positions(&xread, &["XREAD", "x", "STREAMS", "s"]), None);
    }

    #[test]
    fn find_keys_skips_not_keys_and_refuses_incomplete_specs() {
        let not_key = [single(1, NOT_KEY), single(2, RO)];
        assert_eq!(positions(&not_key, &["X", "a", "b"]), Some(vec![2]));
        let incomplete = [single(1, RO | INCOMPLETE)];
        assert_eq!(positions(&incomplete, &["X", "a"]), None);
    }

    #[test]
    fn flag_names_are_in_info_order() {
        assert_eq!(
            flag::names(VARIABLE_FLAGS | RW | UPDATE | ACCESS).collect::<Vec<_>>(),
            ["RW", "access", "update", "variable_flags"]
        );
    }
}
