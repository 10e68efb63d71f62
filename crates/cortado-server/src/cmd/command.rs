//! `COMMAND` and its subcommands: what clients learn of the command table.
//!
//! Everything is served from the table: each [`Command`] gives the name, arity, flags, key
//! positions, group, version and summary, and its [`Doc`](super::docs::Doc) the cost, the
//! syntax, the ACL categories no rule gives and how the keys are used. From them come the
//! ACL categories ([`acl`]), the key specifications ([`keyspec`]), and `COMMAND DOCS`'
//! `arguments` ([`syntax`]), which `redis-cli` reads at start-up for its usage lines and
//! hints.
//!
//! `COMMAND GETKEYS` follows the key specifications, so a command whose keys depend on its
//! arguments is answered by what its specifications say; a command whose key flags depend on
//! its arguments (`SET ... GET`) says so through
//! [`Doc::call_flags`](super::docs::Doc::call_flags).
//!
//! Not served: command tips (hints for cluster proxies, which have nothing to route here),
//! and the `history`, `doc_flags`, `deprecated_since` and `replaced_by` fields of
//! `COMMAND DOCS`.

use super::flags::*;
use super::keyspec::{self, Begin, Find, KeySpec, KeysDoc};
use super::{acl, syntax, syntax_error, Args, CmdResult, Command, Ctx, Entry, Run, NO_KEYS};
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
        "Counts the commands this server knows.",
        "2.8.13",
        command_count,
    ),
    cmd(
        "docs",
        -2,
        "Describes commands for people: purpose, cost and syntax.",
        "7.0.0",
        command_docs,
    ),
    cmd(
        "getkeys",
        -4,
        "Lists the keys a command line would touch.",
        "2.8.13",
        command_getkeys,
    ),
    cmd(
        "getkeysandflags",
        -4,
        "Lists the keys a command line would touch, with how each is used.",
        "7.0.0",
        command_getkeysandflags,
    ),
    cmd(
        "help",
        2,
        "Lists the COMMAND subcommands.",
        "5.0.0",
        command_help,
    ),
    cmd(
        "info",
        -2,
        "Describes commands for programs: arity, flags, keys, categories.",
        "2.8.13",
        command_info,
    ),
    cmd(
        "list",
        -2,
        "Lists command names, optionally filtered.",
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
    summary: "Describes every command this server knows.",
    run: Run::Both(command_all, SUBCOMMANDS),
}];

/// How an entry's keys are described: its doc's word, or its table positions alone.
fn keys_doc(entry: &Entry) -> KeysDoc {
    entry.doc.map_or(KeysDoc::Positions, |doc| doc.keys)
}

/// The key specifications of table entry `entry`.
pub fn key_specs(entry: &Entry) -> Vec<KeySpec> {
    keyspec::specs(entry.command.keys, keys_doc(entry))
}

/// The ACL categories of table entry `entry`, as a bit set of [`acl`]'s.
pub fn categories(entry: &Entry) -> u32 {
    acl::of(entry.command, entry.doc.map_or(0, |doc| doc.acl))
}

/// One command's `COMMAND INFO` entry (`id` in the table), with its subcommands.
fn write_info(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let entry = table.entry(id);
    let command = entry.command;
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
    let categories = categories(entry);
    reply.set(acl::names(categories).count());
    for name in acl::names(categories) {
        reply.simple(name);
    }
    // No tips: see the module docs.
    reply.set(0);
    let specs = key_specs(entry);
    reply.set(specs.len());
    for spec in &specs {
        write_key_spec(reply, spec);
    }
    // An empty set when there are no subcommands, an array of entries otherwise.
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

/// One key specification as a map of its flags, its begin search and its key finding.
fn write_key_spec(reply: &mut Reply, spec: &KeySpec) {
    reply.map(3);
    reply.bulk(b"flags");
    reply.set(keyspec::flag::names(spec.flags).count());
    for name in keyspec::flag::names(spec.flags) {
        reply.simple(name);
    }
    reply.bulk(b"begin_search");
    reply.map(2);
    reply.bulk(b"type");
    match spec.begin {
        Begin::Index(index) => {
            reply.bulk(b"index");
            reply.bulk(b"spec");
            reply.map(1);
            reply.bulk(b"index");
            reply.int(i64::from(index));
        }
        Begin::Keyword { keyword, startfrom } => {
            reply.bulk(b"keyword");
            reply.bulk(b"spec");
            reply.map(2);
            reply.bulk(b"keyword");
            reply.bulk(keyword.as_bytes());
            reply.bulk(b"startfrom");
            reply.int(i64::from(startfrom));
        }
        Begin::Unknown => {
            reply.bulk(b"unknown");
            reply.bulk(b"spec");
            reply.map(0);
        }
    }
    reply.bulk(b"find_keys");
    reply.map(2);
    reply.bulk(b"type");
    let fields = match spec.find {
        Find::Range {
            lastkey,
            keystep,
            limit,
        } => {
            reply.bulk(b"range");
            vec![("lastkey", lastkey), ("keystep", keystep), ("limit", limit)]
        }
        Find::Keynum {
            keynumidx,
            firstkey,
            keystep,
        } => {
            reply.bulk(b"keynum");
            vec![
                ("keynumidx", keynumidx),
                ("firstkey", firstkey),
                ("keystep", keystep),
            ]
        }
        Find::Unknown => {
            reply.bulk(b"unknown");
            Vec::new()
        }
    };
    reply.bulk(b"spec");
    reply.map(fields.len());
    for (name, value) in fields {
        reply.bulk(name.as_bytes());
        reply.int(i64::from(value));
    }
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

/// One command's `COMMAND DOCS` map: the table's summary, version and group, its doc's cost
/// and arguments, then the subcommands the table has.
fn write_docs(ctx: &mut Ctx<'_>, id: usize) {
    let table = &ctx.server.commands;
    let entry = table.entry(id);
    let command = entry.command;
    let subs = table.subcommands(id);
    let arguments = entry
        .doc
        .and_then(|doc| syntax::parse(doc.syntax).ok())
        .unwrap_or_default();
    let reply = &mut *ctx.reply;
    reply.map(
        3 + usize::from(entry.doc.is_some())
            + usize::from(!arguments.is_empty())
            + usize::from(!subs.is_empty()),
    );
    reply.bulk(b"summary");
    reply.bulk(command.summary.as_bytes());
    reply.bulk(b"since");
    reply.bulk(command.since.as_bytes());
    reply.bulk(b"group");
    reply.bulk(command.group.as_bytes());
    if let Some(doc) = entry.doc {
        reply.bulk(b"complexity");
        reply.bulk(doc.complexity.as_bytes());
    }
    if !arguments.is_empty() {
        reply.bulk(b"arguments");
        syntax::write(reply, &arguments, key_specs(entry).len());
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
        /// An unknown category matches nothing.
        Category(Option<u32>),
        Pattern(&'a [u8]),
    }
    let filter = match args.len() {
        2 => Filter::None,
        5 if args.is(2, "filterby") => {
            if args.is(3, "module") {
                Filter::Module
            } else if args.is(3, "aclcat") {
                Filter::Category(acl::by_name(args.get(4)))
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
                Filter::Category(c) => c.is_some_and(|c| categories(table.entry(id)) & c != 0),
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

/// The keys of the command in `args` from its third argument, found by its key
/// specifications, with Redis's errors for an unknown command, one without keys, a wrong
/// number of arguments, and arguments the specifications cannot be followed in.
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
    let specs = key_specs(entry);
    if specs.is_empty() {
        return Err(ErrorReply::err("The command has no key arguments"));
    }
    let argc = call.len() as i32;
    if (command.arity > 0 && command.arity != argc) || argc < -command.arity {
        return Err(ErrorReply::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = keyspec::find_keys(&specs, call).unwrap_or_default();
    if keys.is_empty() {
        if command.flags & NO_MANDATORY_KEYS != 0 {
            ctx.reply.array(0);
            return Ok(());
        }
        return Err(ErrorReply::err("Invalid arguments specified for command"));
    }
    let call_flags = entry.doc.and_then(|doc| doc.call_flags);
    ctx.reply.array(keys.len());
    for (i, flags) in keys {
        if with_flags {
            let flags = call_flags.map_or(flags, |f| f(call));
            ctx.reply.array(2);
            ctx.reply.bulk(call.get(i));
            ctx.reply.set(keyspec::flag::names(flags).count());
            for name in keyspec::flag::names(flags) {
                ctx.reply.simple(name);
            }
        } else {
            ctx.reply.bulk(call.get(i));
        }
    }
    Ok(())
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
