//! ACL categories: the named groups of commands that `COMMAND INFO` lists for each command and
//! `COMMAND LIST FILTERBY ACLCAT` selects by (the groups ACL rules such as `+@read` name).
//!
//! A command's categories follow from its table entry: its flags (`write` is `@write`,
//! `admin` is `@admin` and `@dangerous`, not `fast` is `@slow`, ...) and its group (`string`
//! is `@string`, `generic` is `@keyspace`, ...). What no rule gives, such as `@dangerous` for
//! `KEYS` or `@keyspace` for `FLUSHDB`, its [`Doc`](super::docs::Doc) states.
//!
//! # Design
//!
//! A command's categories are a bit set, one bit per category in the order `COMMAND INFO`
//! lists them, so the reply is written by walking [`NAMES`] once.

use super::flags;
use super::{Command, Run};

/// Reads or changes the keyspace without regard to the value's type.
pub const KEYSPACE: u32 = 1 << 0;
/// Reads data.
pub const READ: u32 = 1 << 1;
/// Writes data.
pub const WRITE: u32 = 1 << 2;
/// Works on sets.
pub const SET: u32 = 1 << 3;
/// Works on sorted sets.
pub const SORTEDSET: u32 = 1 << 4;
/// Works on lists.
pub const LIST: u32 = 1 << 5;
/// Works on hashes.
pub const HASH: u32 = 1 << 6;
/// Works on strings.
pub const STRING: u32 = 1 << 7;
/// Works on strings as bit arrays.
pub const BITMAP: u32 = 1 << 8;
/// Works on HyperLogLogs.
pub const HYPERLOGLOG: u32 = 1 << 9;
/// Works on geospatial indexes.
pub const GEO: u32 = 1 << 10;
/// Works on streams.
pub const STREAM: u32 = 1 << 11;
/// Publish/subscribe.
pub const PUBSUB: u32 = 1 << 12;
/// Administration.
pub const ADMIN: u32 = 1 << 13;
/// Cheap: O(1) or O(log N).
pub const FAST: u32 = 1 << 14;
/// Not fast.
pub const SLOW: u32 = 1 << 15;
/// May block the client.
pub const BLOCKING: u32 = 1 << 16;
/// Risky in untrusted hands.
pub const DANGEROUS: u32 = 1 << 17;
/// About the connection itself.
pub const CONNECTION: u32 = 1 << 18;
/// Transactions.
pub const TRANSACTION: u32 = 1 << 19;
/// Scripts and functions.
pub const SCRIPTING: u32 = 1 << 20;

/// Not a category: in a command's extra categories, leaves out the one its group gives
/// (`SORT`, a `generic` command Redis keeps out of `@keyspace`).
pub const NOT_GROUP: u32 = 1 << 31;

/// Every category with its name, in the order `COMMAND INFO` lists them.
pub const NAMES: &[(u32, &str)] = &[
    (KEYSPACE, "@keyspace"),
    (READ, "@read"),
    (WRITE, "@write"),
    (SET, "@set"),
    (SORTEDSET, "@sortedset"),
    (LIST, "@list"),
    (HASH, "@hash"),
    (STRING, "@string"),
    (BITMAP, "@bitmap"),
    (HYPERLOGLOG, "@hyperloglog"),
    (GEO, "@geo"),
    (STREAM, "@stream"),
    (PUBSUB, "@pubsub"),
    (ADMIN, "@admin"),
    (FAST, "@fast"),
    (SLOW, "@slow"),
    (BLOCKING, "@blocking"),
    (DANGEROUS, "@dangerous"),
    (CONNECTION, "@connection"),
    (TRANSACTION, "@transaction"),
    (SCRIPTING, "@scripting"),
];

/// The category every command of `group` (as `COMMAND DOCS` names groups) belongs to. The
/// `pubsub` group gives none: `@pubsub` comes from the `pubsub` flag, which `PUBSUB HELP`
/// lacks, as in Redis.
fn of_group(group: &str) -> u32 {
    match group {
        "generic" => KEYSPACE,
        "string" => STRING,
        "bitmap" => BITMAP,
        "list" => LIST,
        "set" => SET,
        "sorted-set" => SORTEDSET,
        "hash" => HASH,
        "hyperloglog" => HYPERLOGLOG,
        "geo" => GEO,
        "stream" => STREAM,
        "connection" => CONNECTION,
        "transactions" => TRANSACTION,
        "scripting" => SCRIPTING,
        _ => 0,
    }
}

/// The categories of `command`: those its flags and group give, and `extra`. A container
/// (`CLIENT`, `CONFIG`) belongs to no group's category: only its subcommands do; a
/// `readonly` command of `@scripting` is not `@read`.
pub fn of(command: &Command, extra: u32) -> u32 {
    let f = command.flags;
    let mut out = extra & !NOT_GROUP;
    for (flag, category) in [
        (flags::WRITE, WRITE),
        (flags::READONLY, READ),
        (flags::ADMIN, ADMIN | DANGEROUS),
        (flags::PUBSUB, PUBSUB),
        (flags::BLOCKING, BLOCKING),
    ] {
        if f & flag != 0 {
            out |= category;
        }
    }
    out |= if f & flags::FAST != 0 { FAST } else { SLOW };
    if !matches!(command.run, Run::Container(_)) && extra & NOT_GROUP == 0 {
        out |= of_group(command.group);
    }
    // As Redis's `setImplicitACLCategories`: a read-only script (`EVAL_RO`) is no `@read`.
    if out & SCRIPTING != 0 {
        out &= !READ;
    }
    out
}

/// The category named `name` (`read`, any case, without the `@`).
pub fn by_name(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .find(|(_, n)| n.as_bytes()[1..].eq_ignore_ascii_case(name))
        .map(|(bit, _)| *bit)
}

/// The names of the categories in `set`, in `COMMAND INFO`'s order.
pub fn names(set: u32) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .filter(move |(bit, _)| set & bit != 0)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::NO_KEYS;

    fn command(flags: u32, group: &'static str, container: bool) -> Command {
        fn handler(_: &mut crate::cmd::Ctx<'_>, _: crate::cmd::Args<'_>) -> crate::cmd::CmdResult {
            Ok(())
        }
        Command {
            name: "x",
            arity: 1,
            flags,
            keys: NO_KEYS,
            group,
            since: "1.0.0",
            summary: "",
            run: if container {
                Run::Container(&[])
            } else {
                Run::Handler(handler)
            },
        }
    }

    #[test]
    fn of_flags_and_group_give_categories() {
        let get = command(flags::READONLY | flags::FAST, "string", false);
        assert_eq!(
            names(of(&get, 0)).collect::<Vec<_>>(),
            ["@read", "@string", "@fast"]
        );
        let list = command(flags::ADMIN, "connection", false);
        assert_eq!(
            names(of(&list, 0)).collect::<Vec<_>>(),
            ["@admin", "@slow", "@dangerous", "@connection"]
        );
        let keys = command(flags::READONLY, "generic", false);
        assert_eq!(
            names(of(&keys, DANGEROUS)).collect::<Vec<_>>(),
            ["@keyspace", "@read", "@slow", "@dangerous"]
        );
    }

    #[test]
    fn of_container_takes_no_group_category() {
        let client = command(0, "connection", true);
        assert_eq!(of(&client, 0), SLOW);
    }

    #[test]
    fn by_name_takes_any_case_without_the_at() {
        assert_eq!(by_name(b"read"), Some(READ));
        assert_eq!(by_name(b"KeySpace"), Some(KEYSPACE));
        assert_eq!(by_name(b"@read"), None);
        assert_eq!(by_name(b"nosuch"), None);
    }
}
