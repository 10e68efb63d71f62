//! What `COMMAND` tells clients about each command beyond dispatch: its cost, its syntax, the
//! ACL categories no rule gives it, and how it uses its keys. All of it is written here in our
//! own words and notation, from the syntax and behaviour the server implements.
//!
//! The table's [`Command`](super::Command) gives the rest (name, arity, flags, key
//! positions, group, version, summary); [`Table`](super::Table) joins each entry to its
//! [`Doc`] by full name when it is built.
//!
//! # Design
//!
//! The docs are kept apart from [`Command`](super::Command) so dispatch walks only what it
//! needs. [`DOCS`] is sorted by full name (a unit test checks it) and searched by bisection,
//! once per entry at start-up.

use super::acl::{ADMIN, CONNECTION, DANGEROUS, KEYSPACE, LIST, NOT_GROUP, SET, SORTEDSET};
use super::keyspec::flag::*;
use super::keyspec::{single, Begin, Find, KeySpec, KeysDoc};
use super::Args;

/// One command's description. See the [module docs](self).
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    /// `name`, or `container|name` for a subcommand.
    pub name: &'static str,
    /// Its cost, in big-O terms, as `COMMAND DOCS` shows it.
    pub complexity: &'static str,
    /// Its arguments after the name (and subcommand), in [`syntax`](super::syntax)'s
    /// notation.
    pub syntax: &'static str,
    /// ACL categories beyond those its flags and group give ([`acl`](super::acl)).
    pub acl: u32,
    /// How it uses its keys.
    pub keys: KeysDoc,
    /// The key flags of one call, for a command whose flags depend on its arguments (`SET`
    /// reads the old value only with `GET`).
    pub call_flags: Option<fn(Args<'_>) -> u16>,
}

const fn doc(name: &'static str, complexity: &'static str, syntax: &'static str) -> Doc {
    Doc {
        name,
        complexity,
        syntax,
        acl: 0,
        keys: KeysDoc::Positions,
        call_flags: None,
    }
}

impl Doc {
    /// Its keys, at the table's positions, are used as `flags` say.
    const fn keys(self, flags: u16) -> Doc {
        Doc {
            keys: KeysDoc::Range(flags),
            ..self
        }
    }

    /// Its keys are used differently, each as its `flags` say.
    const fn each_key(self, flags: &'static [u16]) -> Doc {
        Doc {
            keys: KeysDoc::Each(flags),
            ..self
        }
    }

    /// Its keys are found as `specs` say.
    const fn specs(self, specs: &'static [KeySpec]) -> Doc {
        Doc {
            keys: KeysDoc::Specs(specs),
            ..self
        }
    }

    /// It is in these ACL categories too.
    const fn acl(self, categories: u32) -> Doc {
        Doc {
            acl: categories,
            ..self
        }
    }

    /// Its key flags depend on its arguments, as `call_flags` says.
    const fn flags_per_call(self, call_flags: fn(Args<'_>) -> u16) -> Doc {
        Doc {
            call_flags: Some(call_flags),
            ..self
        }
    }
}

/// `SET`'s key flags: it reads and returns the old value only with `GET`.
fn set_call_flags(call: Args<'_>) -> u16 {
    if (3..call.len()).any(|i| call.is(i, "get")) {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    }
}

/// The description of the command or subcommand `full_name` (`get`, `client|list`).
pub fn lookup(full_name: &str) -> Option<&'static Doc> {
    DOCS.binary_search_by(|doc| doc.name.cmp(full_name))
        .ok()
        .map(|i| &DOCS[i])
}

/// `SET`'s and `GETEX`'s expiration options, with their last alternative.
macro_rules! expiration {
    ($last:literal) => {
        concat!(
            "expiration=[EX seconds:integer|PX milliseconds:integer|",
            "EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|",
            $last,
            "]"
        )
    };
}

const EACH_KEY: &str = "O(N) for N keys";
const NONE: &str = "";
const SUBCOMMANDS: &str = "Varies with the subcommand";
const CONSTANT: &str = "O(1)";
const SCRIPT_COST: &str = "Depends on the script";
const SCAN_STEP: &str = "O(1) a call, O(N) for a whole walk of N items";
/// The syntaxes of the hash field lifetime commands (Redis 7.4).
const FIELDS_ONLY: &str = "key:key (FIELDS numfields:integer field...)";
const HEXPIRE_SECONDS: &str =
    "key:key seconds:integer condition=[NX|XX|GT|LT] (FIELDS numfields:integer field...)";
const HEXPIRE_MILLIS: &str =
    "key:key milliseconds:integer condition=[NX|XX|GT|LT] (FIELDS numfields:integer field...)";
const HEXPIREAT_SECONDS: &str =
    "key:key unix-time-seconds:unix-time condition=[NX|XX|GT|LT] (FIELDS numfields:integer field...)";
const HEXPIREAT_MILLIS: &str = "key:key unix-time-milliseconds:unix-time condition=[NX|XX|GT|LT] \
     (FIELDS numfields:integer field...)";
const SET_ALGEBRA: &str = "O(N) for N members of the sets read";

/// `SINTERSTORE`'s keys: the destination, read and written, then the sets.
const STORE_UPDATE: &[KeySpec] = &[single(1, RW | UPDATE), sets_from(2)];
/// `SUNIONSTORE`'s and `SDIFFSTORE`'s keys: the destination, overwritten, then the sets.
const STORE_OVERWRITE: &[KeySpec] = &[single(1, OW | UPDATE), sets_from(2)];
/// `SINTERCARD`'s keys: `numkeys` of them after the count.
const COUNTED_SETS: &[KeySpec] = &[KeySpec {
    flags: RO | ACCESS,
    begin: Begin::Index(1),
    find: Find::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}];

/// The sets read by a command, from argument `index` to the last.
const fn sets_from(index: i32) -> KeySpec {
    KeySpec {
        flags: RO | ACCESS,
        begin: Begin::Index(index),
        find: Find::Range {
            lastkey: -1,
            keystep: 1,
            limit: 0,
        },
    }
}

/// The keys of a script that may write: `numkeys` of them after the count, as Redis
/// assumes the worst of a script.
const SCRIPT_KEYS: &[KeySpec] = &[script_keys(RW | ACCESS | UPDATE)];
/// The keys of a read-only script.
const SCRIPT_KEYS_RO: &[KeySpec] = &[script_keys(RO | ACCESS)];

const fn script_keys(flags: u16) -> KeySpec {
    KeySpec {
        flags,
        begin: Begin::Index(2),
        find: Find::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    }
}

/// `SORT`'s keys: the sorted one, those its `BY` and `GET` patterns name (found in the data,
/// not the arguments), and the `STORE` destination.
const SORT_KEYS: &[KeySpec] = &[
    single(1, RO | ACCESS),
    KeySpec {
        flags: RO | ACCESS,
        begin: Begin::Unknown,
        find: Find::Unknown,
    },
    KeySpec {
        flags: OW | UPDATE,
        begin: Begin::Unknown,
        find: Find::Unknown,
    },
];
/// `SORT_RO`'s keys: `SORT`'s but the destination.
const SORT_RO_KEYS: &[KeySpec] = &[SORT_KEYS[0], SORT_KEYS[1]];

/// Every command's description, sorted by full name.
pub const DOCS: &[Doc] = &[
    doc("append", "O(1) amortized", "key:key value").keys(RW | INSERT),
    doc("auth", "O(N) for a password of N bytes", "[username] password"),
    doc("bitcount", "O(N) for N bytes counted", "key:key range=[start:integer end:integer unit=[BYTE|BIT]]")
        .keys(RO | ACCESS),
    doc("blmove", "O(1)", "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT) timeout:double").each_key(&[RW | ACCESS | DELETE, RW | INSERT]),
    doc("blmpop", "O(K + M) for K keys and M elements popped", "timeout:double numkeys:integer key:key... where=(LEFT|RIGHT) [COUNT count:integer]").specs(&[KeySpec { flags: RW | ACCESS | DELETE, begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("blpop", "O(K) for K keys", "key:key... timeout:double").keys(RW | ACCESS | DELETE),
    doc("brpop", "O(K) for K keys", "key:key... timeout:double").keys(RW | ACCESS | DELETE),
    doc("brpoplpush", "O(1)", "source:key destination:key timeout:double").each_key(&[RW | ACCESS | DELETE, RW | INSERT]),
    doc("bzmpop", "O(K + M log N) for K keys and M members popped", "timeout:double numkeys:integer key:key... where=(MIN|MAX) [COUNT count:integer]").specs(&[KeySpec { flags: RW | ACCESS | DELETE, begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("bzpopmax", "O(log N)", "key:key... timeout:double").keys(RW | ACCESS | DELETE),
    doc("bzpopmin", "O(log N)", "key:key... timeout:double").keys(RW | ACCESS | DELETE),
    doc("client", SUBCOMMANDS, NONE),
    doc("client|getname", CONSTANT, NONE),
    doc("client|help", CONSTANT, NONE),
    doc("client|id", CONSTANT, NONE),
    doc("client|info", CONSTANT, NONE),
    doc(
        "client|kill",
        "O(N) for N connections",
        "target=(addr|filter=(ID client-id:integer|TYPE class=(NORMAL|MASTER|SLAVE|REPLICA|PUBSUB)|USER username|ADDR addr|LADDR laddr|SKIPME skip=(YES|NO))...)",
    ),
    doc(
        "client|list",
        "O(N) for N connections",
        "[TYPE class=(NORMAL|MASTER|REPLICA|PUBSUB)] [ID client-id:integer...]",
    ),
    doc("client|no-evict", CONSTANT, "enabled=(ON|OFF)"),
    doc("client|reply", CONSTANT, "mode=(ON|OFF|SKIP)"),
    doc("client|setname", CONSTANT, "connection-name"),
    doc("client|unblock", "O(N) for N blocked clients", "client-id:integer [unblock-type=(TIMEOUT|ERROR)]"),
    doc("command", "O(N) for N commands", NONE).acl(CONNECTION),
    doc("command|count", CONSTANT, NONE).acl(CONNECTION),
    doc("command|docs", "O(N) for N commands described", "[command-name...]").acl(CONNECTION),
    doc("command|getkeys", "O(N) for N arguments", "command [arg...]").acl(CONNECTION),
    doc("command|getkeysandflags", "O(N) for N arguments", "command [arg...]").acl(CONNECTION),
    doc("command|help", CONSTANT, NONE).acl(CONNECTION),
    doc("command|info", "O(N) for N commands described", "[command-name...]").acl(CONNECTION),
    doc(
        "command|list",
        "O(N) for N commands",
        "[FILTERBY filter=(MODULE module-name|ACLCAT category|PATTERN pattern:pattern)]",
    )
    .acl(CONNECTION),
    doc("config", SUBCOMMANDS, NONE),
    doc("config|get", "O(N) for N directives", "parameter:pattern..."),
    doc("config|help", CONSTANT, NONE),
    doc("config|resetstat", CONSTANT, NONE),
    doc("config|rewrite", "O(N) for N lines of the file", NONE),
    doc("config|set", "O(N) for N directives set", "data=(parameter value)..."),
    doc(
        "copy",
        "O(N) for a value of N bytes",
        "source:key destination:key [DB destination-db:integer] [REPLACE]",
    )
    .each_key(&[RO | ACCESS, OW | UPDATE]),
    doc("dbsize", CONSTANT, NONE).acl(KEYSPACE),
    doc("debug", SUBCOMMANDS, "subcommand [argument...]"),
    doc("decr", CONSTANT, "key:key").keys(RW | ACCESS | UPDATE),
    doc("decrby", CONSTANT, "key:key decrement:integer").keys(RW | ACCESS | UPDATE),
    doc("del", EACH_KEY, "key:key...").keys(RM | DELETE),
    doc("discard", "O(N) for N queued commands", NONE),
    doc("echo", CONSTANT, "message"),
    doc("eval", SCRIPT_COST, "script numkeys:integer [key:key...] [arg...]").specs(SCRIPT_KEYS),
    doc("eval_ro", SCRIPT_COST, "script numkeys:integer [key:key...] [arg...]")
        .specs(SCRIPT_KEYS_RO),
    doc("evalsha", SCRIPT_COST, "sha1 numkeys:integer [key:key...] [arg...]").specs(SCRIPT_KEYS),
    doc("evalsha_ro", SCRIPT_COST, "sha1 numkeys:integer [key:key...] [arg...]")
        .specs(SCRIPT_KEYS_RO),
    doc("exec", "The queued commands' costs", NONE),
    doc("exists", EACH_KEY, "key:key...").keys(RO),
    doc("expire", CONSTANT, "key:key seconds:integer condition=[NX|XX|GT|LT]")
        .keys(RW | UPDATE),
    doc(
        "expireat",
        CONSTANT,
        "key:key unix-time-seconds:unix-time condition=[NX|XX|GT|LT]",
    )
    .keys(RW | UPDATE),
    doc("expiretime", CONSTANT, "key:key").keys(RO | ACCESS),
    doc("fcall", SCRIPT_COST, "function numkeys:integer [key:key...] [arg...]")
        .specs(SCRIPT_KEYS),
    doc("fcall_ro", SCRIPT_COST, "function numkeys:integer [key:key...] [arg...]")
        .specs(SCRIPT_KEYS_RO),
    doc("flushall", "O(N) for N keys in all databases", "mode=[ASYNC|SYNC]")
        .acl(KEYSPACE | DANGEROUS),
    doc("flushdb", "O(N) for N keys in the database", "mode=[ASYNC|SYNC]")
        .acl(KEYSPACE | DANGEROUS),
    doc("function", SUBCOMMANDS, NONE),
    doc("function|delete", CONSTANT, "library-name"),
    doc("function|dump", "O(N) for N functions", NONE),
    doc("function|flush", "O(N) for N functions", "flush-type=[ASYNC|SYNC]"),
    doc("function|help", CONSTANT, NONE),
    doc("function|kill", CONSTANT, NONE),
    doc("function|list", "O(N) for N functions", "[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    doc("function|load", "O(1) (compiling the library aside)", "[REPLACE] function-code"),
    doc("function|restore", "O(N) for N functions", "serialized-value policy=[FLUSH|APPEND|REPLACE]"),
    doc("function|stats", CONSTANT, NONE),
    doc("get", CONSTANT, "key:key").keys(RO | ACCESS),
    doc("getbit", CONSTANT, "key:key offset:integer").keys(RO | ACCESS),
    doc("getdel", CONSTANT, "key:key").keys(RW | ACCESS | DELETE),
    doc("getex", CONSTANT, concat!("key:key ", expiration!("PERSIST"))).keys(RW | ACCESS | UPDATE),
    doc("getrange", "O(N) for N bytes returned", "key:key start:integer end:integer")
        .keys(RO | ACCESS),
    doc("getset", CONSTANT, "key:key value").keys(RW | ACCESS | UPDATE),
    doc("hdel", "O(N) for N fields named", "key:key field...").keys(RW | DELETE),
    doc(
        "hello",
        CONSTANT,
        "arguments=[protover:integer [AUTH username password] [SETNAME clientname]]",
    ),
    doc("hexists", CONSTANT, "key:key field").keys(RO),
    doc("hexpire", "O(N) for N fields named", HEXPIRE_SECONDS).keys(RW | UPDATE),
    doc("hexpireat", "O(N) for N fields named", HEXPIREAT_SECONDS).keys(RW | UPDATE),
    doc("hexpiretime", "O(N) for N fields named", FIELDS_ONLY).keys(RO | ACCESS),
    doc("hget", CONSTANT, "key:key field").keys(RO | ACCESS),
    doc("hgetall", "O(N) for N fields held", "key:key").keys(RO | ACCESS),
    doc("hincrby", CONSTANT, "key:key field increment:integer").keys(RW | ACCESS | UPDATE),
    doc("hincrbyfloat", CONSTANT, "key:key field increment:double").keys(RW | ACCESS | UPDATE),
    doc("hkeys", "O(N) for N fields held", "key:key").keys(RO | ACCESS),
    doc("hlen", CONSTANT, "key:key").keys(RO),
    doc("hmget", "O(N) for N fields named", "key:key field...").keys(RO | ACCESS),
    doc("hmset", "O(N) for N fields written", "key:key data=(field value)...").keys(RW | UPDATE),
    doc("hpersist", "O(N) for N fields named", FIELDS_ONLY).keys(RW | UPDATE),
    doc("hpexpire", "O(N) for N fields named", HEXPIRE_MILLIS).keys(RW | UPDATE),
    doc("hpexpireat", "O(N) for N fields named", HEXPIREAT_MILLIS).keys(RW | UPDATE),
    doc("hpexpiretime", "O(N) for N fields named", FIELDS_ONLY).keys(RO | ACCESS),
    doc("hpttl", "O(N) for N fields named", FIELDS_ONLY).keys(RO | ACCESS),
    doc("hrandfield", "O(N) for N fields picked", "key:key options=[count:integer [WITHVALUES]]")
        .keys(RO | ACCESS),
    doc("hscan", SCAN_STEP, "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]")
        .keys(RO | ACCESS),
    doc("hset", "O(N) for N fields written", "key:key data=(field value)...").keys(RW | UPDATE),
    doc("hsetnx", CONSTANT, "key:key field value").keys(RW | INSERT),
    doc("hstrlen", CONSTANT, "key:key field").keys(RO),
    doc("httl", "O(N) for N fields named", FIELDS_ONLY).keys(RO | ACCESS),
    doc("hvals", "O(N) for N fields held", "key:key").keys(RO | ACCESS),
    doc("incr", CONSTANT, "key:key").keys(RW | ACCESS | UPDATE),
    doc("incrby", CONSTANT, "key:key increment:integer").keys(RW | ACCESS | UPDATE),
    doc("incrbyfloat", CONSTANT, "key:key increment:double").keys(RW | ACCESS | UPDATE),
    doc("info", "O(N) for N sections", "[section...]").acl(DANGEROUS),
    doc("keys", "O(N) for N keys in the database", "pattern:pattern").acl(DANGEROUS),
    doc("lastsave", CONSTANT, NONE).acl(ADMIN | DANGEROUS),
    doc(
        "lcs",
        "O(N*M) for strings of N and M bytes",
        "key1:key key2:key [LEN] [IDX] [MINMATCHLEN min-match-len:integer] [WITHMATCHLEN]",
    )
    .keys(RO | ACCESS),
    doc("lindex", "O(N) for N elements skipped", "key:key index:integer").keys(RO | ACCESS),
    doc("linsert", "O(N) for N elements looked at", "key:key where=(BEFORE|AFTER) pivot element").keys(RW | INSERT),
    doc("llen", "O(1)", "key:key").keys(RO),
    doc("lmove", "O(1)", "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT)").each_key(&[RW | ACCESS | DELETE, RW | INSERT]),
    doc("lmpop", "O(K + M) for K keys and M elements popped", "numkeys:integer key:key... where=(LEFT|RIGHT) [COUNT count:integer]").specs(&[KeySpec { flags: RW | ACCESS | DELETE, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("lpop", "O(M) for M elements popped", "key:key [count:integer]").keys(RW | ACCESS | DELETE),
    doc("lpos", "O(N) for N elements looked at", "key:key element [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]").keys(RO | ACCESS),
    doc("lpush", "O(1) per element", "key:key element...").keys(RW | INSERT),
    doc("lpushx", "O(1) per element", "key:key element...").keys(RW | INSERT),
    doc("lrange", "O(S + M) for S elements skipped and M returned", "key:key start:integer stop:integer").keys(RO | ACCESS),
    doc("lrem", "O(N) for N elements", "key:key count:integer element").keys(RW | DELETE),
    doc("lset", "O(N) for N elements skipped", "key:key index:integer element").keys(RW | UPDATE),
    doc("ltrim", "O(M) for M elements removed", "key:key start:integer stop:integer").keys(RW | DELETE),
    doc("memory", SUBCOMMANDS, NONE),
    doc("memory|help", CONSTANT, NONE),
    doc("memory|malloc-stats", "O(1): the C library's summary", NONE),
    doc("memory|usage", CONSTANT, "key:key [SAMPLES count:integer]").keys(RO),
    doc("mget", EACH_KEY, "key:key...").keys(RO | ACCESS),
    doc("monitor", CONSTANT, NONE),
    doc("move", CONSTANT, "key:key db:integer").keys(RW | ACCESS | UPDATE),
    doc("mset", EACH_KEY, "data=(key:key value)...").keys(OW | UPDATE),
    doc("msetnx", EACH_KEY, "data=(key:key value)...").keys(OW | INSERT),
    doc("multi", CONSTANT, NONE),
    doc("object", SUBCOMMANDS, NONE),
    doc("object|encoding", CONSTANT, "key:key").keys(RO),
    doc("object|freq", CONSTANT, "key:key").keys(RO),
    doc("object|help", CONSTANT, NONE),
    doc("object|idletime", CONSTANT, "key:key").keys(RO),
    doc("object|refcount", CONSTANT, "key:key").keys(RO),
    doc("persist", CONSTANT, "key:key").keys(RW | UPDATE),
    doc(
        "pexpire",
        CONSTANT,
        "key:key milliseconds:integer condition=[NX|XX|GT|LT]",
    )
    .keys(RW | UPDATE),
    doc(
        "pexpireat",
        CONSTANT,
        "key:key unix-time-milliseconds:unix-time condition=[NX|XX|GT|LT]",
    )
    .keys(RW | UPDATE),
    doc("pexpiretime", CONSTANT, "key:key").keys(RO | ACCESS),
    doc("ping", CONSTANT, "[message]"),
    doc("psetex", CONSTANT, "key:key milliseconds:integer value").keys(OW | UPDATE),
    doc("psubscribe", "O(N) for N patterns", "pattern:pattern..."),
    doc("pttl", CONSTANT, "key:key").keys(RO | ACCESS),
    doc("publish", "O(N+M) for N subscribers of the channel and M patterns", "channel message"),
    doc("pubsub", SUBCOMMANDS, NONE),
    doc("pubsub|channels", "O(N) for N channels", "[pattern:pattern]"),
    doc("pubsub|help", CONSTANT, NONE),
    doc("pubsub|numpat", CONSTANT, NONE),
    doc("pubsub|numsub", "O(N) for N channels", "[channel...]"),
    doc("pubsub|shardchannels", "O(N) for N channels", "[pattern:pattern]"),
    doc("pubsub|shardnumsub", "O(N) for N channels", "[shardchannel...]"),
    doc("punsubscribe", "O(N) for N patterns", "[pattern:pattern...]"),
    doc("quit", CONSTANT, NONE),
    doc("randomkey", CONSTANT, NONE),
    doc("rename", CONSTANT, "key:key newkey:key").each_key(&[RW | ACCESS | DELETE, OW | UPDATE]),
    doc("renamenx", CONSTANT, "key:key newkey:key").each_key(&[RW | ACCESS | DELETE, OW | INSERT]),
    doc("reset", CONSTANT, NONE),
    doc("rpop", "O(M) for M elements popped", "key:key [count:integer]").keys(RW | ACCESS | DELETE),
    doc("rpoplpush", "O(1)", "source:key destination:key").each_key(&[RW | ACCESS | DELETE, RW | INSERT]),
    doc("rpush", "O(1) per element", "key:key element...").keys(RW | INSERT),
    doc("rpushx", "O(1) per element", "key:key element...").keys(RW | INSERT),
    doc("sadd", "O(N) for N members named", "key:key member...").keys(RW | INSERT),
    doc(
        "scan",
        "O(1) a call; O(N) for a whole pass over N keys",
        "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type]",
    ),
    doc("scard", CONSTANT, "key:key").keys(RO),
    doc("script", SUBCOMMANDS, NONE),
    doc("script|exists", "O(N) for N scripts", "sha1..."),
    doc("script|flush", "O(N) for N cached scripts", "flush-type=[ASYNC|SYNC]"),
    doc("script|help", CONSTANT, NONE),
    doc("script|kill", CONSTANT, NONE),
    doc("script|load", "O(N) for a script of N bytes", "script"),
    doc("sdiff", SET_ALGEBRA, "key:key...").keys(RO | ACCESS),
    doc("sdiffstore", SET_ALGEBRA, "destination:key key:key...").specs(STORE_OVERWRITE),
    doc("select", CONSTANT, "index:integer"),
    doc("set", CONSTANT, concat!("key:key value condition=[NX|XX] [GET] ", expiration!("KEEPTTL"))).keys(RW | ACCESS | UPDATE | VARIABLE_FLAGS)
        .flags_per_call(set_call_flags),
    doc("setbit", CONSTANT, "key:key offset:integer value:integer").keys(RW | ACCESS | UPDATE),
    doc("setex", CONSTANT, "key:key seconds:integer value").keys(OW | UPDATE),
    doc("setnx", CONSTANT, "key:key value").keys(OW | INSERT),
    doc("setrange", "O(1), or O(N) to grow the string to N bytes", "key:key offset:integer value")
        .keys(RW | UPDATE),
    doc("shutdown", "O(N) for N connections", "save=[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"),
    doc("sinter", SET_ALGEBRA, "key:key...").keys(RO | ACCESS),
    doc("sintercard", SET_ALGEBRA, "numkeys:integer key:key... [LIMIT limit:integer]")
        .specs(COUNTED_SETS),
    doc("sinterstore", SET_ALGEBRA, "destination:key key:key...").specs(STORE_UPDATE),
    doc("sismember", CONSTANT, "key:key member").keys(RO),
    doc("slowlog", SUBCOMMANDS, NONE),
    doc("slowlog|get", "O(N) for N entries returned", "[count:integer]"),
    doc("slowlog|help", CONSTANT, NONE),
    doc("slowlog|len", CONSTANT, NONE),
    doc("slowlog|reset", "O(N) for N entries", NONE),
    doc("smembers", "O(N) for N members held", "key:key").keys(RO | ACCESS),
    doc("smismember", "O(N) for N members named", "key:key member...").keys(RO | ACCESS),
    doc("smove", CONSTANT, "source:key destination:key member")
        .each_key(&[RW | ACCESS | DELETE, RW | INSERT]),
    doc("sort", "O(N + M log M) for N elements and M sorted", "key:key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...] order=[ASC|DESC] [ALPHA] [STORE destination:key]").specs(SORT_KEYS).acl(SET | SORTEDSET | LIST | DANGEROUS | NOT_GROUP),
    doc("sort_ro", "O(N + M log M) for N elements and M sorted", "key:key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...] order=[ASC|DESC] [ALPHA]").specs(SORT_RO_KEYS).acl(SET | SORTEDSET | LIST | DANGEROUS | NOT_GROUP),
    doc("spop", "O(N) for N members popped", "key:key [count:integer]").keys(RW | ACCESS | DELETE),
    doc("spublish", "O(N) for N subscribers of the channel", "shardchannel:key message").keys(NOT_KEY),
    doc("srandmember", "O(N) for N members picked", "key:key [count:integer]").keys(RO | ACCESS),
    doc("srem", "O(N) for N members named", "key:key member...").keys(RW | DELETE),
    doc("sscan", SCAN_STEP, "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]")
        .keys(RO | ACCESS),
    doc("ssubscribe", "O(N) for N channels", "shardchannel:key...").keys(NOT_KEY),
    doc("strlen", CONSTANT, "key:key").keys(RO),
    doc("subscribe", "O(N) for N channels", "channel..."),
    doc("sunion", SET_ALGEBRA, "key:key...").keys(RO | ACCESS),
    doc("sunionstore", SET_ALGEBRA, "destination:key key:key...").specs(STORE_OVERWRITE),
    doc("sunsubscribe", "O(N) for N channels", "[shardchannel:key...]").keys(NOT_KEY),
    doc("swapdb", CONSTANT, "index1:integer index2:integer").acl(KEYSPACE | DANGEROUS),
    doc("time", CONSTANT, NONE),
    doc("touch", EACH_KEY, "key:key...").keys(RO),
    doc("ttl", CONSTANT, "key:key").keys(RO | ACCESS),
    doc("type", CONSTANT, "key:key").keys(RO),
    doc("unlink", EACH_KEY, "key:key...").keys(RM | DELETE),
    doc("unsubscribe", "O(N) for N channels", "[channel...]"),
    doc("unwatch", "O(N) for N watched keys", NONE),
    doc("watch", EACH_KEY, "key:key...").keys(RO),
    doc("zadd", "O(log N) per member added, N the set's size", "key:key condition=[NX|XX] comparison=[GT|LT] [CH] [INCR] data=(score:double member)...").keys(RW | UPDATE),
    doc("zcard", "O(1)", "key:key").keys(RO),
    doc("zcount", "O(log N) for N members", "key:key min:double max:double").keys(RO | ACCESS),
    doc("zdiff", "O(N) for N members in all", "numkeys:integer key:key... [WITHSCORES]").specs(&[KeySpec { flags: RO | ACCESS, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zdiffstore", "O(N) for N members in all", "destination:key numkeys:integer key:key...").specs(&[single(1, OW | UPDATE), KeySpec { flags: RO | ACCESS, begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zincrby", "O(log N) for N members", "key:key increment:double member").keys(RW | ACCESS | UPDATE),
    doc("zinter", "O(N K) for the smallest set's N members and K sets", "numkeys:integer key:key... [WEIGHTS weight:double...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [WITHSCORES]").specs(&[KeySpec { flags: RO | ACCESS, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zintercard", "O(N K) for the smallest set's N members and K sets", "numkeys:integer key:key... [LIMIT limit:integer]").specs(&[KeySpec { flags: RO | ACCESS, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zinterstore", "O(N K) for the smallest set's N members and K sets", "destination:key numkeys:integer key:key... [WEIGHTS weight:double...] [AGGREGATE aggregate=(SUM|MIN|MAX)]").specs(&[single(1, OW | UPDATE), KeySpec { flags: RO | ACCESS, begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zlexcount", "O(log N) for N members", "key:key min max").keys(RO | ACCESS),
    doc("zmpop", "O(K + M log N) for K keys and M members popped", "numkeys:integer key:key... where=(MIN|MAX) [COUNT count:integer]").specs(&[KeySpec { flags: RW | ACCESS | DELETE, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zmscore", "O(N) for N members asked", "key:key member...").keys(RO | ACCESS),
    doc("zpopmax", "O(M log N) for M members popped", "key:key [count:integer]").keys(RW | ACCESS | DELETE),
    doc("zpopmin", "O(M log N) for M members popped", "key:key [count:integer]").keys(RW | ACCESS | DELETE),
    doc("zrandmember", "O(M) for M members returned", "key:key [options=(count:integer [WITHSCORES])]").keys(RO | ACCESS),
    doc("zrange", "O(log N + M) for N members and M returned", "key:key start stop sortby=[BYSCORE|BYLEX] [REV] [LIMIT offset:integer count:integer] [WITHSCORES]").keys(RO | ACCESS),
    doc("zrangebylex", "O(log N + M) for N members and M returned", "key:key min max [LIMIT offset:integer count:integer]").keys(RO | ACCESS),
    doc("zrangebyscore", "O(log N + M) for N members and M returned", "key:key min:double max:double [WITHSCORES] [LIMIT offset:integer count:integer]").keys(RO | ACCESS),
    doc("zrangestore", "O(log N + M) for N members and M returned", "dst:key src:key min max sortby=[BYSCORE|BYLEX] [REV] [LIMIT offset:integer count:integer]").each_key(&[OW | UPDATE, RO | ACCESS]),
    doc("zrank", "O(log N) for N members", "key:key member").keys(RO | ACCESS),
    doc("zrem", "O(M log N) for M members removed", "key:key member...").keys(RW | DELETE),
    doc("zremrangebylex", "O(log N + M) for M members removed", "key:key min max").keys(RW | DELETE),
    doc("zremrangebyrank", "O(log N + M) for M members removed", "key:key start:integer stop:integer").keys(RW | DELETE),
    doc("zremrangebyscore", "O(log N + M) for M members removed", "key:key min:double max:double").keys(RW | DELETE),
    doc("zrevrange", "O(log N + M) for N members and M returned", "key:key start:integer stop:integer [WITHSCORES]").keys(RO | ACCESS),
    doc("zrevrangebylex", "O(log N + M) for N members and M returned", "key:key max min [LIMIT offset:integer count:integer]").keys(RO | ACCESS),
    doc("zrevrangebyscore", "O(log N + M) for N members and M returned", "key:key max:double min:double [WITHSCORES] [LIMIT offset:integer count:integer]").keys(RO | ACCESS),
    doc("zrevrank", "O(log N) for N members", "key:key member").keys(RO | ACCESS),
    doc("zscan", "O(1) per call, O(N) for a whole walk", "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]").keys(RO | ACCESS),
    doc("zscore", "O(1)", "key:key member").keys(RO | ACCESS),
    doc("zunion", "O(N log N) for N members in all", "numkeys:integer key:key... [WEIGHTS weight:double...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [WITHSCORES]").specs(&[KeySpec { flags: RO | ACCESS, begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
    doc("zunionstore", "O(N log N) for N members in all", "destination:key numkeys:integer key:key... [WEIGHTS weight:double...] [AGGREGATE aggregate=(SUM|MIN|MAX)]").specs(&[single(1, OW | UPDATE), KeySpec { flags: RO | ACCESS, begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::{keyspec, syntax, Table};

    #[test]
    fn docs_are_sorted_by_full_name_without_duplicates() {
        for pair in DOCS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} then {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn every_table_entry_has_a_doc_and_every_doc_an_entry() {
        let table = Table::new(&[]).unwrap();
        let missing: Vec<&str> = table
            .entries()
            .filter(|(_, e)| e.doc.is_none())
            .map(|(_, e)| e.full_name.as_str())
            .collect();
        assert!(missing.is_empty(), "no doc for {missing:?}");
        let names: Vec<&str> = table.entries().map(|(_, e)| e.full_name.as_str()).collect();
        for doc in DOCS {
            assert!(
                names.contains(&doc.name),
                "{}: a doc without a command",
                doc.name
            );
        }
    }

    #[test]
    fn every_syntax_parses_and_keys_match_the_table() {
        let table = Table::new(&[]).unwrap();
        for (_, entry) in table.entries() {
            let doc = entry.doc.unwrap();
            let args = syntax::parse(doc.syntax).unwrap_or_else(|e| panic!("{}: {e}", doc.name));
            let keys = entry.command.keys;
            let specs = keyspec::specs(keys, doc.keys);
            // A command whose keys move (`EVAL`'s follow its count) has specs, no positions.
            let movable = entry.command.flags & crate::cmd::flags::MOVABLE_KEYS != 0;
            let has_positions = keys.first != 0 || movable;
            assert_eq!(
                !specs.is_empty(),
                has_positions,
                "{}: key specs and positions",
                doc.name
            );
            assert_eq!(
                matches!(doc.keys, KeysDoc::Positions),
                !has_positions,
                "{}: keys with positions are described, none without",
                doc.name
            );
            if let KeysDoc::Each(flags) = doc.keys {
                let count = (keys.last - keys.first) / keys.step + 1;
                assert!(keys.last > 0, "{}: a fixed number of keys", doc.name);
                assert_eq!(flags.len() as i32, count, "{}: a spec per key", doc.name);
            }
            // A key argument in the syntax for each command with keys, and none otherwise.
            fn has_key(args: &[syntax::Arg]) -> bool {
                args.iter().any(|a| match &a.kind {
                    syntax::Kind::Key => true,
                    syntax::Kind::OneOf(args) | syntax::Kind::Block(args) => has_key(args),
                    _ => false,
                })
            }
            assert_eq!(has_key(&args), has_positions, "{}: key arguments", doc.name);
            assert!(!doc.complexity.is_empty(), "{}: complexity", doc.name);
        }
    }

    #[test]
    fn set_call_flags_read_the_old_value_only_with_get() {
        let call = |words: &[&str]| {
            let bytes: Vec<u8> = words.concat().into_bytes();
            let mut ranges = Vec::new();
            let mut at = 0;
            for w in words {
                ranges.push(at..at + w.len());
                at += w.len();
            }
            set_call_flags(Args::new(&bytes, &ranges))
        };
        assert_eq!(call(&["SET", "k", "v"]), OW | UPDATE);
        assert_eq!(
            call(&["SET", "k", "v", "EX", "10", "get"]),
            RW | ACCESS | UPDATE
        );
        // A value spelled "get" is not the option.
        assert_eq!(call(&["SET", "k", "get"]), OW | UPDATE);
    }
}
