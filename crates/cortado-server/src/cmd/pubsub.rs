//! Pub/sub commands: `SUBSCRIBE`, `UNSUBSCRIBE`, `PSUBSCRIBE`, `PUNSUBSCRIBE`, `PUBLISH`, their
//! shard forms (`SSUBSCRIBE`, `SUNSUBSCRIBE`, `SPUBLISH`) and `PUBSUB` with its subcommands.
//!
//! Each (un)subscription is confirmed by a message of its own, `[kind, channel, count]`, an
//! array in RESP2 and a push in RESP3; the count is the client's channels and patterns (its
//! shard channels for the shard forms). A RESP2 client with a subscription may send only these
//! commands, `PING`, `QUIT` and `RESET` ([`super::execute`] refuses the rest). Every reply was
//! checked against `redis-server` 7.0 (`tests/it/pubsub.rs`). The registry is
//! [`crate::pubsub`].

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Keys, Run, NO_KEYS};
use crate::pubsub::{Namespace, PubSub, Publisher};

command_constructor!("pubsub");

const ALL_KEYS: Keys = Keys {
    first: 1,
    last: -1,
    step: 1,
};

const KEY1: Keys = super::KEY1;

const PUBSUB: &[Command] = &[
    cmd(
        "channels",
        -2,
        super::flags::PUBSUB | LOADING | STALE,
        NO_KEYS,
        "Lists the channels with subscribers, those matching a pattern if given",
        "2.8.0",
        pubsub_channels,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        NO_KEYS,
        "Lists the PUBSUB subcommands",
        "6.2.0",
        pubsub_help,
    ),
    cmd(
        "numpat",
        2,
        super::flags::PUBSUB | LOADING | STALE,
        NO_KEYS,
        "Counts the patterns with subscribers",
        "2.8.0",
        pubsub_numpat,
    ),
    cmd(
        "numsub",
        -2,
        super::flags::PUBSUB | LOADING | STALE,
        NO_KEYS,
        "Counts the subscribers of each channel given",
        "2.8.0",
        pubsub_numsub,
    ),
    cmd(
        "shardchannels",
        -2,
        super::flags::PUBSUB | LOADING | STALE,
        NO_KEYS,
        "Lists the shard channels with subscribers, those matching a pattern if given",
        "7.0.0",
        pubsub_shardchannels,
    ),
    cmd(
        "shardnumsub",
        -2,
        super::flags::PUBSUB | LOADING | STALE,
        NO_KEYS,
        "Counts the subscribers of each shard channel given",
        "7.0.0",
        pubsub_shardnumsub,
    ),
];

const SUBSCRIBING: u32 = super::flags::PUBSUB | NOSCRIPT | LOADING | STALE;

/// The pub/sub family's commands.
pub const COMMANDS: &[Command] = &[
    cmd(
        "psubscribe",
        -2,
        SUBSCRIBING,
        NO_KEYS,
        "Listens to the channels matching glob patterns",
        "2.0.0",
        psubscribe,
    ),
    cmd(
        "publish",
        3,
        super::flags::PUBSUB | LOADING | STALE | FAST,
        NO_KEYS,
        "Sends a message to a channel; replies with how many received it",
        "2.0.0",
        publish,
    ),
    Command {
        name: "pubsub",
        arity: -2,
        flags: 0,
        keys: NO_KEYS,
        group: "pubsub",
        since: "2.8.0",
        summary: "Subcommands that describe the subscriptions",
        run: Run::Container(PUBSUB),
    },
    cmd(
        "punsubscribe",
        -1,
        SUBSCRIBING,
        NO_KEYS,
        "Stops listening to patterns, or to all of them",
        "2.0.0",
        punsubscribe,
    ),
    cmd(
        "spublish",
        3,
        super::flags::PUBSUB | LOADING | STALE | FAST,
        KEY1,
        "Sends a message to a shard channel; replies with how many received it",
        "7.0.0",
        spublish,
    ),
    cmd(
        "ssubscribe",
        -2,
        SUBSCRIBING,
        ALL_KEYS,
        "Listens to shard channels",
        "7.0.0",
        ssubscribe,
    ),
    cmd(
        "subscribe",
        -2,
        SUBSCRIBING,
        NO_KEYS,
        "Listens to channels",
        "2.0.0",
        subscribe,
    ),
    cmd(
        "sunsubscribe",
        -1,
        SUBSCRIBING,
        ALL_KEYS,
        "Stops listening to shard channels, or to all of them",
        "7.0.0",
        sunsubscribe,
    ),
    cmd(
        "unsubscribe",
        -1,
        SUBSCRIBING,
        NO_KEYS,
        "Stops listening to channels, or to all of them",
        "2.0.0",
        unsubscribe,
    ),
];

/// The commands a RESP2 client with a subscription may still send, by table name.
pub const ALLOWED_WHILE_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "ssubscribe",
    "psubscribe",
    "unsubscribe",
    "sunsubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// Writes one confirmation: `[kind, channel or nil, count]`.
fn confirm(ctx: &mut Ctx<'_>, kind: &str, channel: Option<&[u8]>, count: usize) {
    ctx.reply.push(3);
    ctx.reply.bulk(kind.as_bytes());
    match channel {
        Some(channel) => ctx.reply.bulk(channel),
        None => ctx.reply.null(),
    }
    ctx.reply.int(count as i64);
}

fn count(ctx: &Ctx<'_>, namespace: Namespace) -> usize {
    match namespace {
        Namespace::Plain => ctx.client.subscriptions.count(),
        Namespace::Shard => ctx.client.subscriptions.shard_count(),
    }
}

/// `SUBSCRIBE` and `SSUBSCRIBE`.
fn subscribe_generic(ctx: &mut Ctx<'_>, args: Args<'_>, namespace: Namespace) -> CmdResult {
    let kind = match namespace {
        Namespace::Plain => "subscribe",
        Namespace::Shard => "ssubscribe",
    };
    for channel in args.from(1).iter() {
        ctx.server.pubsub.subscribe(namespace, ctx.client, channel);
        let n = count(ctx, namespace);
        confirm(ctx, kind, Some(channel), n);
    }
    Ok(())
}

/// `UNSUBSCRIBE` and `SUNSUBSCRIBE`: the channels given, or all; a client without any gets
/// one confirmation naming no channel.
fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: Args<'_>, namespace: Namespace) -> CmdResult {
    let kind = match namespace {
        Namespace::Plain => "unsubscribe",
        Namespace::Shard => "sunsubscribe",
    };
    let channels: Vec<bytes::Bytes> = if args.len() > 1 {
        args.from(1)
            .iter()
            .map(bytes::Bytes::copy_from_slice)
            .collect()
    } else {
        PubSub::channels_of(ctx.client, namespace)
    };
    if channels.is_empty() {
        let n = count(ctx, namespace);
        confirm(ctx, kind, None, n);
    }
    for channel in channels {
        ctx.server
            .pubsub
            .unsubscribe(namespace, ctx.client, &channel);
        let n = count(ctx, namespace);
        confirm(ctx, kind, Some(&channel), n);
    }
    Ok(())
}

/// `SUBSCRIBE channel [channel ...]`: a confirmation per channel.
fn subscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    subscribe_generic(ctx, args, Namespace::Plain)
}

/// `SSUBSCRIBE shardchannel [shardchannel ...]`: a confirmation per channel.
fn ssubscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    subscribe_generic(ctx, args, Namespace::Shard)
}

/// `UNSUBSCRIBE [channel ...]`: a confirmation per channel left.
fn unsubscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    unsubscribe_generic(ctx, args, Namespace::Plain)
}

/// `SUNSUBSCRIBE [shardchannel ...]`: a confirmation per channel left.
fn sunsubscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    unsubscribe_generic(ctx, args, Namespace::Shard)
}

/// `PSUBSCRIBE pattern [pattern ...]`: a confirmation per pattern.
fn psubscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    for pattern in args.from(1).iter() {
        ctx.server.pubsub.psubscribe(ctx.client, pattern);
        let n = ctx.client.subscriptions.count();
        confirm(ctx, "psubscribe", Some(pattern), n);
    }
    Ok(())
}

/// `PUNSUBSCRIBE [pattern ...]`: a confirmation per pattern left, in the order subscribed
/// when none is given.
fn punsubscribe(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    let patterns: Vec<bytes::Bytes> = if args.len() > 1 {
        args.from(1)
            .iter()
            .map(bytes::Bytes::copy_from_slice)
            .collect()
    } else {
        PubSub::patterns_of(ctx.client)
    };
    if patterns.is_empty() {
        let n = ctx.client.subscriptions.count();
        confirm(ctx, "punsubscribe", None, n);
    }
    for pattern in patterns {
        ctx.server.pubsub.punsubscribe(ctx.client, &pattern);
        let n = ctx.client.subscriptions.count();
        confirm(ctx, "punsubscribe", Some(&pattern), n);
    }
    Ok(())
}

/// `PUBLISH` and `SPUBLISH`: the publisher's own messages, if it listens, before the count.
fn publish_generic(ctx: &mut Ctx<'_>, args: Args<'_>, namespace: Namespace) -> CmdResult {
    let mut own = Vec::new();
    let me = Publisher {
        id: ctx.client.id,
        resp3: ctx.client.resp == 3,
        out: &mut own,
    };
    let n = ctx
        .server
        .pubsub
        .publish(namespace, args.get(1), args.get(2), Some(me));
    ctx.reply.raw(&own);
    ctx.reply.int(n as i64);
    Ok(())
}

/// `PUBLISH channel message`: how many subscriptions received it.
fn publish(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    publish_generic(ctx, args, Namespace::Plain)
}

/// `SPUBLISH shardchannel message`: how many subscriptions received it.
fn spublish(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    publish_generic(ctx, args, Namespace::Shard)
}

/// `PUBSUB CHANNELS` and `SHARDCHANNELS` `[pattern]`.
fn channels_generic(ctx: &mut Ctx<'_>, args: Args<'_>, namespace: Namespace) -> CmdResult {
    if args.len() > 3 {
        return Err(super::subcommand_syntax_error(args));
    }
    let pattern = (args.len() == 3).then(|| args.get(2));
    let names = ctx.server.pubsub.channel_names(namespace, pattern);
    ctx.reply.array(names.len());
    for name in &names {
        ctx.reply.bulk(name);
    }
    Ok(())
}

/// `PUBSUB CHANNELS [pattern]`: the channels with subscribers.
fn pubsub_channels(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    channels_generic(ctx, args, Namespace::Plain)
}

/// `PUBSUB SHARDCHANNELS [pattern]`: the shard channels with subscribers.
fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    channels_generic(ctx, args, Namespace::Shard)
}

/// `PUBSUB NUMSUB` and `SHARDNUMSUB` `[channel ...]`: each channel then its count, in a flat
/// array (in RESP3 too, as Redis 7.0 replies).
fn numsub_generic(ctx: &mut Ctx<'_>, args: Args<'_>, namespace: Namespace) -> CmdResult {
    let channels = args.from(2);
    ctx.reply.array(2 * channels.len());
    for channel in channels.iter() {
        ctx.reply.bulk(channel);
        let n = ctx.server.pubsub.subscribers(namespace, channel);
        ctx.reply.int(n as i64);
    }
    Ok(())
}

/// `PUBSUB NUMSUB [channel ...]`: each channel with its number of subscribers.
fn pubsub_numsub(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    numsub_generic(ctx, args, Namespace::Plain)
}

/// `PUBSUB SHARDNUMSUB [shardchannel ...]`: each shard channel with its number of subscribers.
fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: Args<'_>) -> CmdResult {
    numsub_generic(ctx, args, Namespace::Shard)
}

/// `PUBSUB NUMPAT`: the number of patterns with subscribers.
fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.pubsub.pattern_count() as i64);
    Ok(())
}

/// `PUBSUB HELP`: the subcommands.
fn pubsub_help(ctx: &mut Ctx<'_>, _args: Args<'_>) -> CmdResult {
    super::server::help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
    Ok(())
}
