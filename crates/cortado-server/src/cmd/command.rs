//! `COMMAND` and its subcommands: what clients learn of the command table.
//!
//! The table gives each command's name, arity, flags and legacy key positions. What Redis
//! documents beside them — ACL categories, tips, key specifications and `COMMAND DOCS`'
//! summaries, complexities and argument trees (which `redis-cli` turns into its hints) — is
//! Redis 7.0's own, recorded from `redis-server` into `data/redis-commands.resp3`, so the
//! replies are Redis's word for word. A command Redis does not have is described from the
//! table alone.
//!
//! # Design
//!
//! The record is one RESP3 frame per command or subcommand, `[name, categories, tips, key
//! specs, docs]`, the docs map without its subcommands (the table says which subcommands
//! exist here). It is indexed on first use and copied into replies by walking its frames,
//! which re-encodes maps and sets for RESP2 clients; nothing is allocated per frame. The test
//! `command_metadata_record_matches_redis` compares the record with the installed
//! `redis-server` and rewrites it when `CORTADO_RECORD_COMMANDS=1` is set.
//!
//! Keys for `COMMAND GETKEYS` are found with the key specifications, as Redis 7.0's
//! `getKeysUsingKeySpecs` finds them (an index or a keyword to begin, then a range or a key
//! count), so commands with movable keys answer as in Redis too.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::flags::*;
use super::{syntax_error, Args, CmdResult, Command, Ctx, Run, NO_KEYS};
use crate::protocol::{ErrorReply, Reply};

const fn cmd(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    since: &'static str,
    handler: super::Handler,
) -> Command {
    Command {
        name,
        arity,
        flags: LOADING | STALE,
        keys: NO_KEYS,
        group: "server",
        since,
        summary,
        run: Run::Handler(handler),
    }
}

const SUBCOMMANDS: &[Command] = &[
    cmd(
        "count",
        2,
        "Get total number of Redis commands",
        "2.8.13",
        command_count,
    ),
    cmd(
        "docs",
        -2,
        "Get array of specific Redis command documentation",
        "7.0.0",
        command_docs,
    ),
    cmd(
        "getkeys",
        -4,
        "Extract keys given a full Redis command",
        "2.8.13",
        command_getkeys,
    ),
    cmd(
        "getkeysandflags",
        -4,
        "Extract keys and access flags given a full Redis command",
        "7.0.0",
        command_getkeysandflags,
    ),
    cmd(
        "help",
        2,
        "Show helpful text about the different subcommands",
        "5.0.0",
        command_help,
    ),
    cmd(
        "info",
        -2,
        "Get array of specific Redis command details, or all when no argument is given.",
        "2.8.13",
        command_info,
    ),
    cmd(
        "list",
        -2,
        "Get an array of Redis command names",
        "7.0.0",
        command_list,
    ),
];

/// `COMMAND`.
pub const COMMANDS: &[Command] = &[Command {
    name: "command",
    arity: -1,
    flags: LOADING | STALE,
    keys: NO_KEYS,
    group: "server",
    since: "2.8.13",
    summary: "Get array of Redis command details",
    run: Run::Both(command_all, SUBCOMMANDS),
}];

/// Redis 7.0's description of its commands. See the [module docs](self).
static RECORD: &[u8] = include_bytes!("../../data/redis-commands.resp3");

/// What Redis documents of one command beside the table's fields.
struct Recorded {
    categories: Vec<&'static str>,
    tips: Vec<&'static [u8]>,
    /// The key specifications, as a RESP3 frame and parsed.
    key_specs_frame: &'static [u8],
    key_specs: Vec<KeySpec>,
    /// The number of fields of the docs map, and their frames.
    docs_fields: usize,
    docs_frames: &'static [u8],
}

/// How a key specification finds its first key.
#[derive(Debug, Clone, Copy)]
enum BeginSearch {
    Index(i64),
    Keyword {
        keyword: &'static [u8],
        startfrom: i64,
    },
    Unknown,
}

/// How a key specification finds its keys after the first.
#[derive(Debug, Clone, Copy)]
enum FindKeys {
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

#[derive(Debug, Clone)]
struct KeySpec {
    flags: Vec<&'static str>,
    begin: BeginSearch,
    find: FindKeys,
}

/// The record, indexed by full command name (`client|list`).
fn recorded() -> &'static HashMap<&'static str, Recorded> {
    static INDEX: OnceLock<HashMap<&'static str, Recorded>> = OnceLock::new();
    INDEX.get_or_init(|| index(RECORD).unwrap_or_default())
}

fn index(data: &'static [u8]) -> Option<HashMap<&'static str, Recorded>> {
    let mut out = HashMap::new();
    let mut pos = 0;
    while pos < data.len() {
        let (kind, n, mut at) = header(data, pos)?;
        if kind != b'*' || n != 5 {
            return None;
        }
        let name = std::str::from_utf8(string(data, at)?.0).ok()?;
        at = skip(data, at)?;
        let (categories, after) = strings(data, at)?;
        let (tips, after_tips) = strings(data, after)?;
        let specs_end = skip(data, after_tips)?;
        let key_specs = parse_key_specs(&parse(data, after_tips)?.0)?;
        let (kind, docs_fields, docs_start) = header(data, specs_end)?;
        if kind != b'%' {
            return None;
        }
        pos = skip(data, specs_end)?;
        let categories = categories
            .into_iter()
            .map(|c| std::str::from_utf8(c).ok())
            .collect::<Option<Vec<_>>>()?;
        out.insert(
            name,
            Recorded {
                categories,
                tips,
                key_specs_frame: &data[after_tips..specs_end],
                key_specs,
                docs_fields: docs_fields as usize,
                docs_frames: &data[docs_start..pos],
            },
        );
    }
    Some(out)
}

/// The type byte, the count or length, and where the frame's contents start.
fn header(data: &[u8], pos: usize) -> Option<(u8, i64, usize)> {
    let kind = *data.get(pos)?;
    let end = pos + data.get(pos..)?.iter().position(|&b| b == b'\r')?;
    let text = std::str::from_utf8(&data[pos + 1..end]).ok()?;
    let n = match kind {
        b'+' => 0,
        _ => text.parse().ok()?,
    };
    Some((kind, n, end + 2))
}

/// A bulk or simple string's bytes, and where the next frame starts.
fn string(data: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let (kind, n, at) = header(data, pos)?;
    match kind {
        b'$' => {
            let end = at.checked_add(usize::try_from(n).ok()?)?;
            Some((data.get(at..end)?, end + 2))
        }
        b'+' => Some((&data[pos + 1..at - 2], at)),
        _ => None,
    }
}

/// The strings of a set or array frame, and where the next frame starts.
fn strings(data: &'static [u8], pos: usize) -> Option<(Vec<&'static [u8]>, usize)> {
    let (kind, n, mut at) = header(data, pos)?;
    if kind != b'~' && kind != b'*' {
        return None;
    }
    let mut out = Vec::new();
    for _ in 0..n {
        let (s, next) = string(data, at)?;
        out.push(s);
        at = next;
    }
    Some((out, at))
}

/// Where the frame at `pos` ends.
fn skip(data: &[u8], pos: usize) -> Option<usize> {
    copy(data, pos, None)
}

/// Writes the frame at `pos` to `reply` (re-encoded for its protocol), if given; returns where
/// the frame ends.
fn copy(data: &[u8], pos: usize, mut reply: Option<&mut Reply>) -> Option<usize> {
    let (kind, n, at) = header(data, pos)?;
    let count = usize::try_from(n).ok();
    let children = match kind {
        b'$' | b'+' => {
            let (s, next) = string(data, pos)?;
            if let Some(reply) = reply {
                if kind == b'$' {
                    reply.bulk(s);
                } else {
                    reply.simple(std::str::from_utf8(s).ok()?);
                }
            }
            return Some(next);
        }
        b':' => {
            if let Some(reply) = reply {
                reply.int(n);
            }
            return Some(at);
        }
        b'*' => {
            if let Some(reply) = reply.as_deref_mut() {
                reply.array(count?);
            }
            count?
        }
        b'~' => {
            if let Some(reply) = reply.as_deref_mut() {
                reply.set(count?);
            }
            count?
        }
        b'%' => {
            if let Some(reply) = reply.as_deref_mut() {
                reply.map(count?);
            }
            2 * count?
        }
        _ => return None,
    };
    let mut at = at;
    for _ in 0..children {
        at = copy(data, at, reply.as_deref_mut())?;
    }
    Some(at)
}

/// A parsed frame, for the key specifications.
#[derive(Debug)]
enum Value {
    Str(&'static [u8]),
    Int(i64),
    List(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if *s == key.as_bytes()))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    fn str(&self, key: &str) -> Option<&'static [u8]> {
        match self.get(key)? {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

fn parse(data: &'static [u8], pos: usize) -> Option<(Value, usize)> {
    let (kind, n, mut at) = header(data, pos)?;
    match kind {
        b'$' | b'+' => {
            let (s, next) = string(data, pos)?;
            Some((Value::Str(s), next))
        }
        b':' => Some((Value::Int(n), at)),
        b'*' | b'~' => {
            let mut items = Vec::new();
            for _ in 0..n {
                let (v, next) = parse(data, at)?;
                items.push(v);
                at = next;
            }
            Some((Value::List(items), at))
        }
        b'%' => {
            let mut pairs = Vec::new();
            for _ in 0..n {
                let (k, next) = parse(data, at)?;
                let (v, next) = parse(data, next)?;
                pairs.push((k, v));
                at = next;
            }
            Some((Value::Map(pairs), at))
        }
        _ => None,
    }
}

fn parse_key_specs(specs: &Value) -> Option<Vec<KeySpec>> {
    let Value::List(specs) = specs else {
        return None;
    };
    let mut out = Vec::new();
    for spec in specs {
        let flags = match spec.get("flags")? {
            Value::List(flags) => flags
                .iter()
                .map(|f| match f {
                    Value::Str(s) => std::str::from_utf8(s).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
            _ => return None,
        };
        let begin = spec.get("begin_search")?;
        let begin_spec = begin.get("spec")?;
        let begin = match begin.str("type")? {
            b"index" => BeginSearch::Index(begin_spec.int("index")?),
            b"keyword" => BeginSearch::Keyword {
                keyword: begin_spec.str("keyword")?,
                startfrom: begin_spec.int("startfrom")?,
            },
            _ => BeginSearch::Unknown,
        };
        let find = spec.get("find_keys")?;
        let find_spec = find.get("spec")?;
        let find = match find.str("type")? {
            b"range" => FindKeys::Range {
                lastkey: find_spec.int("lastkey")?,
                keystep: find_spec.int("keystep")?,
                limit: find_spec.int("limit")?,
            },
            b"keynum" => FindKeys::Keynum {
                keynumidx: find_spec.int("keynumidx")?,
                firstkey: find_spec.int("firstkey")?,
                keystep: find_spec.int("keystep")?,
            },
            _ => FindKeys::Unknown,
        };
        out.push(KeySpec { flags, begin, find });
    }
    Some(out)
}

/// Whether a key specification has flag `name`.
fn has_flag(spec: &KeySpec, name: &str) -> bool {
    spec.flags.contains(&name)
}

/// The positions of the keys of `call` (the command's name first) by `specs`, each with its
/// spec's flags, as Redis 7.0's `getKeysUsingKeySpecs` finds them; `None` where a spec cannot
/// be followed (an unknown search, a bad key count, positions outside the arguments, an
/// incomplete spec), where Redis falls back to the command's own key finder.
fn keys_by_specs(
    specs: &'static [KeySpec],
    call: Args<'_>,
) -> Option<Vec<(usize, &'static [&'static str])>> {
    let argc = call.len() as i64;
    let mut out: Vec<(usize, &'static [&'static str])> = Vec::new();
    for spec in specs {
        if has_flag(spec, "not_key") {
            continue;
        }
        let first = match spec.begin {
            BeginSearch::Index(index) => index,
            BeginSearch::Keyword { keyword, startfrom } => {
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if call.get(i as usize).eq_ignore_ascii_case(keyword) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match spec.find {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, keystep)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let at = first + keynumidx;
                if keynumidx >= argc || at < 0 || at >= argc {
                    return None;
                }
                let numkeys =
                    crate::protocol::parse_i64(call.get(at as usize)).filter(|&n| n >= 0)?;
                let first = first + firstkey;
                (first, first.saturating_add(numkeys) - 1, keystep)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc || step < 1 {
            return None;
        }
        let mut i = first;
        while i <= last {
            out.push((i as usize, spec.flags.as_slice()));
            i += step;
        }
        if has_flag(spec, "incomplete") {
            return None;
        }
    }
    Some(out)
}

/// The ACL categories `COMMAND INFO` lists for a command Redis does not document, from its
/// flags and family.
fn derived_categories(command: &Command) -> Vec<&'static str> {
    let mut out = Vec::new();
    if command.flags & WRITE != 0 {
        out.push("@write");
    }
    if command.flags & READONLY != 0 {
        out.push("@read");
    }
    match command.group {
        "string" => out.push("@string"),
        "generic" => out.push("@keyspace"),
        "connection" => out.push("@connection"),
        "scripting" => out.push("@scripting"),
        _ => {}
    }
    if command.flags & ADMIN != 0 {
        out.push("@admin");
        out.push("@dangerous");
    }
    out.push(if command.flags & FAST != 0 {
        "@fast"
    } else {
        "@slow"
    });
    out
}

/// The ACL categories of table entry `id`.
fn categories(ctx: &Ctx<'_>, id: usize) -> Vec<&'static str> {
    let entry = ctx.server.commands.entry(id);
    match recorded().get(entry.full_name.as_str()) {
        Some(r) => r.categories.clone(),
        None => derived_categories(entry.command),
    }
}

/// One command's `COMMAND INFO` entry (`id` in the table), with its subcommands.
fn write_info(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let entry = table.entry(id);
    let command = entry.command;
    let record = recorded().get(entry.full_name.as_str());
    let categories = categories(ctx, id);
    let reply = &mut *ctx.reply;
    reply.array(10);
    reply.bulk(entry.full_name.as_bytes());
    reply.int(i64::from(command.arity));
    let flags: Vec<&str> = super::flags::NAMES
        .iter()
        .filter(|(f, _)| command.flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    reply.set(flags.len());
    for f in flags {
        reply.simple(f);
    }
    reply.int(i64::from(command.keys.first));
    reply.int(i64::from(command.keys.last));
    reply.int(i64::from(command.keys.step));
    reply.set(categories.len());
    for c in categories {
        reply.simple(c);
    }
    match record {
        Some(record) => {
            reply.set(record.tips.len());
            for tip in &record.tips {
                reply.bulk(tip);
            }
            copy(record.key_specs_frame, 0, Some(reply));
        }
        None => {
            reply.set(0);
            write_derived_key_spec(reply, command);
        }
    }
    // Redis sends no subcommands as an empty set, and subcommands as an array.
    let subs = table.subcommands(id);
    if subs.is_empty() {
        reply.set(0);
    } else {
        reply.array(subs.len());
    }
    for sub in subs {
        write_info(ctx, sub);
    }
}

/// A key specification from the table's legacy key positions, for a command Redis does not
/// document.
fn write_derived_key_spec(reply: &mut Reply, command: &Command) {
    let keys = command.keys;
    if keys.first == 0 {
        reply.set(0);
        return;
    }
    let last = if keys.last < 0 {
        keys.last
    } else {
        keys.last - keys.first
    };
    reply.set(1);
    reply.map(3);
    reply.bulk(b"flags");
    reply.set(0);
    reply.bulk(b"begin_search");
    reply.map(2);
    reply.bulk(b"type");
    reply.bulk(b"index");
    reply.bulk(b"spec");
    reply.map(1);
    reply.bulk(b"index");
    reply.int(i64::from(keys.first));
    reply.bulk(b"find_keys");
    reply.map(2);
    reply.bulk(b"type");
    reply.bulk(b"range");
    reply.bulk(b"spec");
    reply.map(3);
    reply.bulk(b"lastkey");
    reply.int(i64::from(last));
    reply.bulk(b"keystep");
    reply.int(i64::from(keys.step));
    reply.bulk(b"limit");
    reply.int(0);
}

/// The top-level commands' ids, in name order.
fn all_commands(ctx: &Ctx<'_>) -> Vec<usize> {
    let table = &ctx.server.commands;
    let mut ids: Vec<usize> = table.commands().map(|(_, id)| id).collect();
    ids.sort_by(|&a, &b| table.entry(a).full_name.cmp(&table.entry(b).full_name));
    ids
}

/// `COMMAND`: every command's `COMMAND INFO` entry.
fn command_all(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let ids = all_commands(ctx);
    ctx.reply.array(ids.len());
    for id in ids {
        write_info(ctx, id);
    }
    Ok(())
}

/// `COMMAND COUNT`: the number of commands, subcommands not counted.
fn command_count(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let n = ctx.server.commands.commands().count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// The table id of `name`, or of `container|sub`, as `COMMAND INFO` and `DOCS` name them.
fn find(ctx: &Ctx<'_>, name: &[u8]) -> Option<usize> {
    let table = &ctx.server.commands;
    match name.iter().position(|&b| b == b'|') {
        Some(bar) => table
            .lookup(&name[..bar])
            .and_then(|id| table.lookup_sub(id, &name[bar + 1..])),
        None => table.lookup(name),
    }
}

/// `COMMAND INFO [name ...]`: each named command's entry (nil if unknown), or all.
fn command_info(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    ctx.reply.array(args.len() - 2);
    for name in args.from(2).iter() {
        match find(ctx, name) {
            Some(id) => write_info(ctx, id),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// One command's `COMMAND DOCS` map: Redis's record, or the table's summary, version and
/// family; then the subcommands the table has.
fn write_docs(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let entry = table.entry(id);
    let command = entry.command;
    let subs = table.subcommands(id);
    let extra = usize::from(!subs.is_empty());
    let reply = &mut *ctx.reply;
    match recorded().get(entry.full_name.as_str()) {
        Some(record) => {
            reply.map(record.docs_fields + extra);
            let mut at = 0;
            for _ in 0..2 * record.docs_fields {
                match copy(record.docs_frames, at, Some(&mut *reply)) {
                    Some(next) => at = next,
                    None => break,
                }
            }
        }
        None => {
            reply.map(3 + extra);
            reply.bulk(b"summary");
            reply.bulk(command.summary.as_bytes());
            reply.bulk(b"since");
            reply.bulk(command.since.as_bytes());
            reply.bulk(b"group");
            reply.bulk(command.group.as_bytes());
        }
    }
    if !subs.is_empty() {
        reply.bulk(b"subcommands");
        reply.map(subs.len());
        for sub in subs {
            let name = ctx.server.commands.entry(sub).full_name.as_bytes();
            ctx.reply.bulk(name);
            write_docs(ctx, sub);
        }
    }
}

/// `COMMAND DOCS [name ...]`: a map from each known command to its documentation.
fn command_docs(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let ids: Vec<usize> = if args.len() == 2 {
        all_commands(ctx)
    } else {
        args.from(2)
            .iter()
            .filter_map(|name| find(ctx, name))
            .collect()
    };
    ctx.reply.map(ids.len());
    for id in ids {
        let name = ctx.server.commands.entry(id).full_name.as_bytes();
        ctx.reply.bulk(name);
        write_docs(ctx, id);
    }
    Ok(())
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`: the names of
/// the commands and their subcommands that pass the filter.
fn command_list(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    enum Filter<'a> {
        None,
        Module,
        Category(String),
        Pattern(&'a [u8]),
    }
    let filter = match args.len() {
        2 => Filter::None,
        5 if args.is(2, "filterby") => {
            if args.is(3, "module") {
                Filter::Module
            } else if args.is(3, "aclcat") {
                Filter::Category(format!("@{}", args.text(4).to_ascii_lowercase()))
            } else if args.is(3, "pattern") {
                Filter::Pattern(args.get(4))
            } else {
                return Err(syntax_error());
            }
        }
        _ => return Err(syntax_error()),
    };
    let table = &ctx.server.commands;
    let mut names: Vec<&str> = Vec::new();
    for id in all_commands(ctx) {
        for id in std::iter::once(id).chain(table.subcommands(id)) {
            let name = table.entry(id).full_name.as_str();
            let shown = match &filter {
                Filter::None => true,
                Filter::Module => false,
                Filter::Category(c) => categories(ctx, id).contains(&c.as_str()),
                Filter::Pattern(p) => crate::glob::glob_match(p, name.as_bytes(), true),
            };
            if shown {
                names.push(name);
            }
        }
    }
    ctx.reply.array(names.len());
    for name in names {
        ctx.reply.bulk(name.as_bytes());
    }
    Ok(())
}

/// `COMMAND GETKEYS command [arg ...]`: the keys the command would touch.
fn command_getkeys(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    getkeys(ctx, args, false)
}

/// `COMMAND GETKEYSANDFLAGS command [arg ...]`: the keys, each with its access flags.
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    getkeys(ctx, args, true)
}

/// The keys of the command in `args` from its third argument, as Redis 7.0's
/// `getKeysSubcommandImpl` finds and reports them.
fn getkeys(ctx: &mut Ctx<'_>, args: Args<'_>, with_flags: bool) -> CmdResult {
    let call = args.from(2);
    let table = &ctx.server.commands;
    let mut id = table
        .lookup(call.get(0))
        .ok_or_else(|| ErrorReply::err("Invalid command specified"))?;
    if call.len() >= 2 && !table.entry(id).command.run.subcommands().is_empty() {
        id = table
            .lookup_sub(id, call.get(1))
            .ok_or_else(|| ErrorReply::err("Invalid command specified"))?;
    }
    let entry = table.entry(id);
    let command = entry.command;
    let record = recorded().get(entry.full_name.as_str());
    let has_keys = match record {
        Some(record) => !record.key_specs.is_empty(),
        None => command.keys.first != 0,
    };
    if !has_keys {
        return Err(ErrorReply::err("The command has no key arguments"));
    }
    let argc = call.len() as i32;
    if (command.arity > 0 && command.arity != argc) || argc < -command.arity {
        return Err(ErrorReply::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = match record {
        Some(record) => keys_with_record(record, call, command),
        None => legacy_keys(command, argc),
    };
    if keys.is_empty() {
        if command.flags & NO_MANDATORY_KEYS != 0 {
            ctx.reply.array(0);
            return Ok(());
        }
        return Err(ErrorReply::err("Invalid arguments specified for command"));
    }
    ctx.reply.array(keys.len());
    for (i, flags) in keys {
        if with_flags {
            ctx.reply.array(2);
            ctx.reply.bulk(call.get(i));
            ctx.reply.set(flags.len());
            for f in flags {
                ctx.reply.simple(f);
            }
        } else {
            ctx.reply.bulk(call.get(i));
        }
    }
    Ok(())
}

/// The keys of `call` by Redis's recorded key specifications, with Redis's exceptions: `SET`'s
/// flags depend on its `GET` option (Redis's `setGetKeys`), and where the specifications
/// cannot be followed the legacy positions are used.
fn keys_with_record(
    record: &'static Recorded,
    call: Args<'_>,
    command: &Command,
) -> Vec<(usize, &'static [&'static str])> {
    if command.name == "set" {
        let get = (3..call.len()).any(|i| call.is(i, "get"));
        let flags: &'static [&'static str] = if get {
            &["RW", "access", "update"]
        } else {
            &["OW", "update"]
        };
        return vec![(1, flags)];
    }
    keys_by_specs(&record.key_specs, call)
        .unwrap_or_else(|| legacy_keys(command, call.len() as i32))
}

/// Key positions from the table's legacy first, last and step.
fn legacy_keys(command: &Command, argc: i32) -> Vec<(usize, &'static [&'static str])> {
    let keys = command.keys;
    let last = if keys.last < 0 {
        argc + keys.last
    } else {
        keys.last.min(argc - 1)
    };
    (keys.first..=last)
        .step_by(keys.step.max(1) as usize)
        .map(|i| (i as usize, &[][..]))
        .collect()
}

fn command_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_indexes_every_frame() {
        let index = recorded();
        assert!(index.len() > 300, "{} records", index.len());
        let get = &index["get"];
        assert_eq!(get.categories, ["@read", "@string", "@fast"]);
        assert_eq!(get.key_specs.len(), 1);
        assert!(index.contains_key("client|list"));
    }

    #[test]
    fn keys_by_specs_follow_index_keyword_and_keynum() {
        let index = recorded();
        let keys = |name: &str, call: &[&str]| -> Option<Vec<usize>> {
            let bytes: Vec<u8> = call.concat().into_bytes();
            let mut ranges = Vec::new();
            let mut at = 0;
            for a in call {
                ranges.push(at..at + a.len());
                at += a.len();
            }
            keys_by_specs(&index[name].key_specs, Args::new(&bytes, &ranges))
                .map(|keys| keys.into_iter().map(|(i, _)| i).collect())
        };
        assert_eq!(
            keys("mset", &["MSET", "a", "1", "b", "2"]),
            Some(vec![1, 3])
        );
        assert_eq!(keys("rename", &["RENAME", "a", "b"]), Some(vec![1, 2]));
        assert_eq!(
            keys(
                "zunionstore",
                &["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS"]
            ),
            Some(vec![1, 3, 4])
        );
        assert_eq!(keys("zunionstore", &["ZUNIONSTORE", "d", "3", "a"]), None);
        assert_eq!(keys("zunionstore", &["ZUNIONSTORE", "d", "x", "a"]), None);
        assert_eq!(
            keys(
                "xread",
                &["XREAD", "COUNT", "2", "STREAMS", "s", "t", "0", "0"]
            ),
            Some(vec![4, 5])
        );
    }
}
