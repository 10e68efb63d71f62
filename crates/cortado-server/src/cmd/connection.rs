//! Connection commands: `PING`, `ECHO`, `QUIT`, `RESET`, `HELLO`, `AUTH`, `SELECT`, and
//! `CLIENT` with its subcommands.

use std::sync::atomic::Ordering;

use super::flags::*;
use super::{syntax_error, Args, CmdResult, Command, Ctx, Run, NO_KEYS};
use crate::client::{flag, ClientInfo, ReplyMode};
use crate::protocol::ErrorReply;
use crate::server::REDIS_VERSION;

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
        keys: NO_KEYS,
        group: "connection",
        since,
        summary,
        run: Run::Handler(handler),
    }
}

const CLIENT: &[Command] = &[
    cmd(
        "getname",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns the name this connection has set, or nil.",
        "2.6.9",
        client_getname,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "Lists the CLIENT subcommands.",
        "5.0.0",
        client_help,
    ),
    cmd(
        "id",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns this connection's numeric id.",
        "5.0.0",
        client_id,
    ),
    cmd(
        "info",
        2,
        NOSCRIPT | LOADING | STALE,
        "Describes this connection in one CLIENT LIST line.",
        "6.2.0",
        client_info,
    ),
    cmd(
        "kill",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Closes the connections at an address or matching filters.",
        "2.4.0",
        client_kill,
    ),
    cmd(
        "list",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Describes the open connections, one line each.",
        "2.4.0",
        client_list,
    ),
    cmd(
        "no-evict",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Exempts this connection from client eviction, or not.",
        "7.0.0",
        client_no_evict,
    ),
    cmd(
        "reply",
        3,
        NOSCRIPT | LOADING | STALE,
        "Turns this connection's replies on or off, or skips one.",
        "3.2.0",
        client_reply,
    ),
    cmd(
        "setname",
        3,
        NOSCRIPT | LOADING | STALE,
        "Names this connection; an empty name clears it.",
        "2.6.9",
        client_setname,
    ),
    cmd(
        "unblock",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Ends another connection's blocking command, as a timeout or an error.",
        "5.0.0",
        client_unblock,
    ),
];

/// The connection family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "auth",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,
        "Logs this connection in with a password.",
        "1.0.0",
        auth,
    ),
    Command {
        name: "client",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "connection",
        since: "2.4.0",
        summary: "Commands about connections.",
        run: Run::Container(CLIENT),
    },
    cmd(
        "echo",
        2,
        LOADING | STALE | FAST,
        "Replies with its argument.",
        "1.0.0",
        echo,
    ),
    cmd(
        "hello",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,
        "Picks the protocol, optionally logs in, and describes the server.",
        "6.0.0",
        hello,
    ),
    cmd(
        "ping",
        -1,
        FAST,
        "Checks the server is alive: PONG, or the argument.",
        "1.0.0",
        ping,
    ),
    cmd(
        "quit",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,
        "Closes this connection after replying.",
        "1.0.0",
        quit,
    ),
    cmd(
        "reset",
        1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,
        "Returns this connection to its state after connecting.",
        "6.2.0",
        reset,
    ),
    cmd(
        "select",
        2,
        LOADING | STALE | FAST,
        "Switches this connection to another database.",
        "1.0.0",
        select,
    ),
];

/// `PING [message]`: PONG, or the message as a bulk string; from a RESP2 client with a
/// subscription, `["pong", message or ""]`.
fn ping(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() <= 2 && ctx.client.resp == 2 && ctx.client.info.has_flag(flag::PUBSUB) {
        ctx.reply.array(2);
        ctx.reply.bulk(b"pong");
        ctx.reply
            .bulk(if args.len() == 2 { args.get(1) } else { b"" });
        return Ok(());
    }
    match args.len() {
        1 => ctx.reply.simple("PONG"),
        2 => ctx.reply.bulk(args.get(1)),
        _ => return Err(super::arity_error("ping")),
    }
    Ok(())
}

/// `ECHO message`: the message.
fn echo(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ctx.reply.bulk(args.get(1));
    Ok(())
}

/// `QUIT`: OK, then the connection closes.
fn quit(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

/// `SELECT index`: OK.
fn select(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let index = args.int(1)?;
    if index < 0 || index as usize >= ctx.server.keyspace.databases() {
        return Err(ErrorReply::err("DB index is out of range"));
    }
    ctx.client.select(index as usize);
    ctx.reply.ok();
    Ok(())
}

/// Checks `password` for `user` against `requirepass`, in time independent of where they
/// differ. The default user without a password accepts any.
fn check_password(ctx: &Ctx<'_>, user: &[u8], password: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    match &ctx.server.settings().requirepass {
        None => true,
        Some(expected) => constant_time_eq(expected, password),
    }
}

/// Compares without stopping at the first difference, so that the time taken does not tell
/// an attacker how much of a guess was right (the length still shows, as in Redis).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn wrongpass() -> ErrorReply {
    ErrorReply::new("WRONGPASS invalid username-password pair or user is disabled.")
}

/// `AUTH [username] password`: OK, or WRONGPASS. `MONITOR` and the slow log show its
/// arguments as `(redacted)`.
fn auth(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    ctx.client.redacted.extend(1..args.len());
    let (user, password) = match args.len() {
        2 => {
            if ctx.server.settings().requirepass.is_none() {
                return Err(ErrorReply::err("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
            }
            (&b"default"[..], args.get(1))
        }
        3 => (args.get(1), args.get(2)),
        _ => return Err(syntax_error()),
    };
    if !check_password(ctx, user, password) {
        return Err(wrongpass());
    }
    ctx.client.authenticated = true;
    ctx.reply.ok();
    Ok(())
}

/// Whether `name` may name a client: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    if !valid_name(name) {
        return Err(ErrorReply::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    let name = (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned());
    *ctx.client
        .info
        .name
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = name;
    Ok(())
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`: the server's
/// description as a map, after switching protocol.
fn hello(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut version = ctx.client.resp;
    if args.len() >= 2 {
        let v = args
            .int(1)
            .map_err(|_| ErrorReply::err("Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&v) {
            return Err(ErrorReply::new("NOPROTO unsupported protocol version"));
        }
        version = v as u8;
    }
    let mut credentials = None;
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        if args.is(i, "auth") && i + 2 < args.len() {
            credentials = Some((args.get(i + 1), args.get(i + 2)));
            ctx.client.redacted.extend([i + 1, i + 2]);
            i += 3;
        } else if args.is(i, "setname") && i + 1 < args.len() {
            name = Some(args.get(i + 1));
            i += 2;
        } else {
            return Err(ErrorReply::err(format!(
                "Syntax error in HELLO option '{}'",
                args.text(i)
            )));
        }
    }
    if let Some((user, password)) = credentials {
        if !check_password(ctx, user, password) {
            return Err(wrongpass());
        }
        ctx.client.authenticated = true;
    }
    if !ctx.client.authenticated {
        return Err(ErrorReply::new("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(name) = name {
        set_name(ctx, name)?;
    }
    ctx.client.resp = version;
    ctx.client.info.resp.store(version, Ordering::Relaxed);
    ctx.reply.set_resp3(version == 3);
    let reply = &mut *ctx.reply;
    reply.map(7);
    reply.bulk(b"server");
    reply.bulk(b"redis");
    reply.bulk(b"version");
    reply.bulk(REDIS_VERSION.as_bytes());
    reply.bulk(b"proto");
    reply.int(i64::from(version));
    reply.bulk(b"id");
    reply.int(ctx.client.id as i64);
    reply.bulk(b"mode");
    reply.bulk(b"standalone");
    reply.bulk(b"role");
    reply.bulk(b"master");
    reply.bulk(b"modules");
    reply.array(0);
    Ok(())
}

/// `RESET`: the connection as new (database 0, RESP2, no name, replies on, not a monitor, no
/// subscriptions, and unauthenticated if a password is set), then `+RESET`.
fn reset(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.client.select(0);
    ctx.client.resp = 2;
    ctx.client.info.resp.store(2, Ordering::Relaxed);
    ctx.reply.set_resp3(false);
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.info.set_flag(flag::NO_EVICT, false);
    if ctx.client.info.has_flag(flag::MONITOR) {
        ctx.server.monitors.remove(ctx.client.id);
    }
    ctx.server.pubsub.unsubscribe_all(ctx.client);
    super::transactions::end(ctx.server, ctx.client);
    *ctx.client
        .info
        .name
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = None;
    ctx.client.authenticated = ctx.server.settings().requirepass.is_none();
    ctx.reply.simple("RESET");
    Ok(())
}

/// `CLIENT ID`: the connection's id.
fn client_id(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.int(ctx.client.id as i64);
    Ok(())
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 if the client was blocked (it is answered as a
/// timeout, or with `-UNBLOCKED`), 0 otherwise.
fn client_unblock(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let id = args.int(2)?;
    let error = match args.len() {
        3 => false,
        4 if args.is(3, "timeout") => false,
        4 if args.is(3, "error") => true,
        4 => {
            return Err(ErrorReply::err(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
        _ => return Err(syntax_error()),
    };
    let unblocked =
        u64::try_from(id).is_ok_and(|id| crate::cmd::blocking::unblock(ctx.server, id, error));
    ctx.reply.int(i64::from(unblocked));
    Ok(())
}

/// `CLIENT SETNAME name`: OK; an empty name clears it.
fn client_setname(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    set_name(ctx, args.get(2))?;
    ctx.reply.ok();
    Ok(())
}

/// `CLIENT GETNAME`: the name, or nil.
fn client_getname(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let name = ctx
        .client
        .info
        .name
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    match name {
        Some(name) => ctx.reply.bulk(name.as_bytes()),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// One line of `CLIENT LIST`, with Redis's fields.
pub fn describe(server: &crate::server::Server, info: &ClientInfo) -> String {
    let flags = info.flags.load(Ordering::Relaxed);
    let mut letters = String::new();
    if flags & flag::MONITOR != 0 {
        letters.push('O');
    }
    if flags & flag::PUBSUB != 0 {
        letters.push('P');
    }
    if flags & flag::MULTI != 0 {
        letters.push('x');
    }
    if flags & flag::BLOCKED != 0 {
        letters.push('b');
    }
    if flags & flag::NO_EVICT != 0 {
        letters.push('e');
    }
    if letters.is_empty() {
        letters.push('N');
    }
    let command = match info.last_command.load(Ordering::Relaxed) {
        0 => "NULL".to_owned(),
        id => server.commands.entry(id - 1).full_name.clone(),
    };
    let qbuf = info.query_buffer.load(Ordering::Relaxed);
    let omem = info.output_buffer.load(Ordering::Relaxed);
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user=default redir=-1 resp={}",
        info.id,
        info.addr,
        info.laddr,
        info.fd,
        info.name(),
        info.created.elapsed().as_secs(),
        info.idle_seconds(),
        letters,
        info.db.load(Ordering::Relaxed),
        info.subscriptions.channels.load(Ordering::Relaxed),
        info.subscriptions.patterns.load(Ordering::Relaxed),
        info.subscriptions.shard_channels.load(Ordering::Relaxed),
        info.queued.load(Ordering::Relaxed),
        qbuf,
        omem,
        qbuf + omem + 16384,
        command,
        info.resp.load(Ordering::Relaxed),
    )
}

/// `CLIENT INFO`: this connection's line of `CLIENT LIST`.
fn client_info(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    let line = describe(ctx.server, &ctx.client.info) + "\n";
    ctx.reply.verbatim(line.as_bytes());
    Ok(())
}

/// A client class as `CLIENT LIST TYPE` and `CLIENT KILL TYPE` name them (Redis's
/// `getClientTypeByName`); `None` for an unknown name.
fn client_class(name: &str) -> Option<ClientClass> {
    match name.to_ascii_lowercase().as_str() {
        "normal" => Some(ClientClass::Normal),
        "slave" | "replica" => Some(ClientClass::Replica),
        "pubsub" => Some(ClientClass::PubSub),
        "master" => Some(ClientClass::Master),
        _ => None,
    }
}

/// The classes of clients Redis tells apart; here every client is normal or a subscriber
/// (monitors count as normal, as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientClass {
    Normal,
    Replica,
    PubSub,
    Master,
}

fn class_of(info: &ClientInfo) -> ClientClass {
    if info.has_flag(flag::PUBSUB) {
        ClientClass::PubSub
    } else {
        ClientClass::Normal
    }
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub | ID id ...]`: a line per client (for
/// `ID`, in the order given), as Redis 7.0 parses it: one filter at most.
fn client_list(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let mut text = String::new();
    if args.len() == 4 && args.is(2, "type") {
        let class = client_class(&args.text(3))
            .ok_or_else(|| ErrorReply::err(format!("Unknown client type '{}'", args.text(3))))?;
        for info in ctx.server.clients.all() {
            if class_of(&info) == class {
                text.push_str(&describe(ctx.server, &info));
                text.push('\n');
            }
        }
    } else if args.len() > 3 && args.is(2, "id") {
        for i in 3..args.len() {
            let id = args
                .int(i)
                .map_err(|_| ErrorReply::err("Invalid client ID"))?;
            if let Some(info) = u64::try_from(id)
                .ok()
                .and_then(|id| ctx.server.clients.get(id))
            {
                text.push_str(&describe(ctx.server, &info));
                text.push('\n');
            }
        }
    } else if args.len() != 2 {
        return Err(syntax_error());
    } else {
        for info in ctx.server.clients.all() {
            text.push_str(&describe(ctx.server, &info));
            text.push('\n');
        }
    }
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

/// `CLIENT KILL addr` or `CLIENT KILL [ID id] [TYPE type] [ADDR addr] [LADDR addr]
/// [USER user] [SKIPME yes|no] ...`: OK (old form) or the number killed, with Redis 7.0's
/// errors.
fn client_kill(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.len() == 3 {
        let addr = args.text(2);
        let target = ctx
            .server
            .clients
            .all()
            .into_iter()
            .find(|c| c.addr.to_string() == addr)
            .ok_or_else(|| ErrorReply::err("No such client"))?;
        kill(ctx, &target);
        ctx.reply.ok();
        return Ok(());
    }
    let mut id = None;
    let mut class = None;
    let mut addr = None;
    let mut laddr = None;
    let mut skipme = true;
    let mut i = 2;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(syntax_error());
        }
        let value = args.text(i + 1);
        if args.is(i, "id") {
            id = Some(
                args.int(i + 1)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| ErrorReply::err("client-id should be greater than 0"))?
                    as u64,
            );
        } else if args.is(i, "type") {
            class = Some(
                client_class(&value)
                    .ok_or_else(|| ErrorReply::err(format!("Unknown client type '{value}'")))?,
            );
        } else if args.is(i, "addr") {
            addr = Some(value);
        } else if args.is(i, "laddr") {
            laddr = Some(value);
        } else if args.is(i, "user") {
            // The default user is the only one.
            if value != "default" {
                return Err(ErrorReply::err(format!("No such user '{value}'")));
            }
        } else if args.is(i, "skipme") {
            skipme = match value.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => return Err(syntax_error()),
            };
        } else {
            return Err(syntax_error());
        }
        i += 2;
    }
    let mut killed = 0;
    for info in ctx.server.clients.all() {
        let matches = id.is_none_or(|id| id == info.id)
            && class.is_none_or(|class| class == class_of(&info))
            && addr.as_ref().is_none_or(|a| *a == info.addr.to_string())
            && laddr.as_ref().is_none_or(|a| *a == info.laddr.to_string())
            && !(skipme && info.id == ctx.client.id);
        if matches {
            kill(ctx, &info);
            killed += 1;
        }
    }
    ctx.reply.int(killed);
    Ok(())
}

fn kill(ctx: &mut Ctx<'_>, target: &ClientInfo) {
    if target.id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        target.kill();
    }
}

/// `CLIENT REPLY ON|OFF|SKIP`: OK for ON; nothing for the others.
fn client_reply(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    if args.is(2, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.reply.ok();
    } else if args.is(2, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if args.is(2, "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::Skip;
        }
    } else {
        return Err(syntax_error());
    }
    Ok(())
}

/// `CLIENT NO-EVICT ON|OFF`: OK.
fn client_no_evict(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let on = if args.is(2, "on") {
        true
    } else if args.is(2, "off") {
        false
    } else {
        return Err(syntax_error());
    };
    ctx.client.info.set_flag(flag::NO_EVICT, on);
    ctx.reply.ok();
    Ok(())
}

/// `CLIENT HELP`: Redis 7.0's text for the subcommands implemented here.
fn client_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "CLIENT",
        &[
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_slices() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"Secret"));
        assert!(!constant_time_eq(b"secret", b"secre"));
        assert!(!constant_time_eq(b"secret", b"secrets"));
    }

    #[test]
    fn valid_name_refuses_spaces_and_control_bytes() {
        assert!(valid_name(b"worker-1"));
        assert!(valid_name(b""));
        for bad in [&b"a b"[..], b"a\nb", b"\x7f", "é".as_bytes()] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
