//! One client's connection: reads requests, runs them, writes the replies.
//!
//! The loop reads what the socket has, runs every whole command in it in order, and writes
//! their replies with one write, so a pipeline of N commands costs one read and one write, not
//! N. A protocol error is answered with Redis's error and closes this connection only.
//!
//! # Design
//!
//! - **Output waits in a buffer, as in Redis.** Replies the socket does not take at once stay
//!   in the client's output buffer while the connection goes on reading and running commands,
//!   so a client that writes a long pipeline before reading any reply never deadlocks with the
//!   server. What bounds that buffer is `client-output-buffer-limit`, as in Redis: over the
//!   hard limit, or over the soft limit for longer than its seconds, the client is closed
//!   without the rest of its replies. Lines pushed by other connections (`MONITOR`, pub/sub)
//!   join the same buffer through the client's inbox, under the `pubsub` class's limits.
//! - **One read, one write per batch.** A read that returns less than was asked for has
//!   drained the socket, so the connection waits for the next readiness event instead of
//!   trying another read that would only say "would block": a ping-pong request costs one
//!   read and one write, as in Redis. Output past `FLUSH_AT` is offered to the socket in the
//!   middle of a batch, without waiting.
//! - **The query buffer** holds the command being received and what follows it, up to
//!   `client-query-buffer-limit` (checked after each read, as Redis checks it); its space is
//!   reused, and given back once it grew past `KEEP_BUFFER` and emptied.
//! - **Pipelined scripts**: a command whose name starts with `EV` or `FC` runs with the
//!   whole commands after it in the buffer as one run, every shard kept from one script
//!   command to the next ([`crate::cmd::scripting::ScriptHold`]); the run's output limits
//!   are checked after it.
//! - **Settings** are copied per connection and taken again only when their version changes
//!   (one atomic load per batch), so no lock is shared by every command.
//! - **Waiting** is on the socket's own readiness slots and one wake-up flag of the client's
//!   (see [`crate::client`]), no lock taken per request; the output limits are looked at
//!   only once the output passes the smallest of them.
//!
//! The measurements behind these choices are in `docs/decisions/0201-server-connection-loop.md`.

use std::future::poll_fn;
use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;

use crate::client::{flag, Client};
use crate::cmd::scripting::ScriptHold;
use crate::cmd::{execute, execute_holding, Args};
use crate::config::{OutputLimit, Settings};
use crate::protocol::request::ProtocolError;
use crate::protocol::request::{Limits, Source};
use crate::protocol::{ErrorReply, Reply, RequestParser};
use crate::server::Server;
use crate::stats::Counter;

/// Output past this many bytes is offered to the socket in the middle of a batch.
const FLUSH_AT: usize = 64 * 1024;
/// What one read asks the socket for, at least (Redis's `PROTO_IOBUF_LEN`).
const READ_SIZE: usize = 16 * 1024;
/// Buffers that grew past this are given back once empty (a large command or reply is rare;
/// a buffer kept at its largest would hold memory for every idle client that ever sent one).
const KEEP_BUFFER: usize = 4 * READ_SIZE;
/// How long a stopping server lets a connection write the replies it has.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(3);

/// Serves `client` on `stream` until it quits, is killed, or the server stops.
pub async fn run(server: &Server, stream: TcpStream, client: Client) {
    let settings = server.settings();
    let mut connection = Connection {
        server,
        limit_floor: limit_floor(&settings),
        settings,
        version: server.settings_version(),
        stream,
        client,
        buf: BytesMut::new(),
        parser: RequestParser::default(),
        reply: Reply::new(),
        soft_since: None,
    };
    connection.serve().await;
    if let Some(blocked) = connection.client.blocked.take() {
        // A waiter that goes leaves no trace (an element it was served is lost with it).
        crate::cmd::blocking::settle(server, &blocked.waiter, true, false);
    }
    server.pubsub.unsubscribe_all(&mut connection.client);
    crate::cmd::transactions::end(server, &mut connection.client);
    let _ = connection.stream.shutdown().await;
}

/// What a step of the loop found.
enum Step {
    Continue,
    Close,
}

struct Connection<'a> {
    server: &'a Server,
    settings: Arc<Settings>,
    /// The smallest output limit set, of any class: output up to it needs no check.
    limit_floor: u64,
    version: u64,
    stream: TcpStream,
    client: Client,
    /// The query buffer.
    buf: BytesMut,
    parser: RequestParser,
    /// The output buffer.
    reply: Reply,
    /// When the output buffer went over the soft limit, while it stays over.
    soft_since: Option<Instant>,
}

impl Connection<'_> {
    async fn serve(&mut self) {
        let info = self.client.info.clone();
        if self.server.is_shutting_down() {
            return;
        }
        loop {
            if !self.reply.is_empty() && self.write_now().is_err() {
                return;
            }
            if self.client.close_after_reply && self.reply.is_empty() {
                return;
            }
            // Nothing more is read from a client that is being closed.
            let want_read = !self.client.close_after_reply;
            let want_write = !self.reply.is_empty();
            let idle = self.idle_limit();
            let deadline = self.client.blocked.as_ref().and_then(|b| b.deadline);
            let stream = &self.stream;
            let event = tokio::select! {
                biased;
                () = poll_fn(|cx| info.poll_woken(cx)) => Event::Woken,
                ready = poll_fn(|cx| poll_ready(stream, cx, want_read, want_write)) => {
                    Event::Ready(ready)
                }
                () = sleep_or_never(idle) => Event::Idle,
                () = sleep_until_or_never(deadline) => Event::Timeout,
            };
            let step = match event {
                Event::Woken if self.server.is_shutting_down() => {
                    self.flush_before_close().await;
                    return;
                }
                Event::Woken => self.woken(),
                Event::Timeout => self.settle_blocked(true),
                Event::Idle => {
                    tracing::debug!(id = self.client.id, "closing idle client");
                    Step::Close
                }
                Event::Ready(Err(_)) => Step::Close,
                Event::Ready(Ok(readable)) if readable && want_read => self.read_and_run(),
                // Writable: the top of the loop writes.
                Event::Ready(Ok(_)) => Step::Continue,
            };
            if let Step::Close = step {
                return;
            }
            if self.client.shutdown {
                self.client.shutdown = false;
                self.server.shutdown();
            }
        }
    }

    /// The client was killed, or its inbox has lines to send.
    fn woken(&mut self) -> Step {
        let info = &self.client.info;
        if info.is_killed() {
            return Step::Close;
        }
        let reply = &mut self.reply;
        info.take_inbox(|bytes| reply.raw(bytes));
        info.output_buffer.store(reply.len(), Ordering::Relaxed);
        if let Step::Close = self.check_output_limits() {
            return Step::Close;
        }
        self.settle_blocked(false)
    }

    /// A blocked client's waiter served (or, if `timed_out`, its time up): its reply joins the
    /// output and the commands waiting behind it run.
    fn settle_blocked(&mut self, timed_out: bool) -> Step {
        let Some(blocked) = &self.client.blocked else {
            return Step::Continue;
        };
        let resp3 = self.client.resp == 3;
        let Some(bytes) =
            crate::cmd::blocking::settle(self.server, &blocked.waiter, timed_out, resp3)
        else {
            return Step::Continue;
        };
        self.client.blocked = None;
        self.client.info.set_flag(flag::BLOCKED, false);
        self.reply.raw(&bytes);
        self.run_commands()
    }

    /// Reads what the socket has and runs every whole command in the query buffer.
    fn read_and_run(&mut self) -> Step {
        if self.buf.capacity() - self.buf.len() < READ_SIZE / 4 {
            self.buf.reserve(READ_SIZE);
        }
        let room = self.buf.capacity() - self.buf.len();
        let mut read = 0;
        let result = self.stream.try_io(Interest::READABLE, || {
            read = self.stream.try_read_buf(&mut self.buf)?;
            if read > 0 && read < room {
                // The socket is drained: wait for its next readiness instead of trying a
                // read that would only say so.
                return Err(ErrorKind::WouldBlock.into());
            }
            Ok(())
        });
        match result {
            Ok(()) | Err(_) if read > 0 => {}
            Ok(()) => return Step::Close,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Continue,
            Err(_) => return Step::Close,
        }
        let stats = &self.server.stats;
        stats.add(Counter::NetInput, read as u64);
        stats.add(Counter::ReadsProcessed, 1);
        let current = self.server.settings_version();
        if current != self.version {
            self.version = current;
            self.settings = self.server.settings();
            self.limit_floor = limit_floor(&self.settings);
        }
        // Checked as Redis checks it, right after the read: what waits to be run, the
        // command being received included, must fit.
        if self.buf.len() as u64 > self.settings.query_buffer_limit {
            tracing::warn!(
                id = self.client.id,
                "closing client that reached max query buffer length"
            );
            return Step::Close;
        }
        let step = self.run_commands();
        let info = &self.client.info;
        info.query_buffer.store(self.buf.len(), Ordering::Relaxed);
        info.output_buffer
            .store(self.reply.len(), Ordering::Relaxed);
        step
    }

    /// Runs the whole commands at the front of the query buffer.
    fn run_commands(&mut self) -> Step {
        let mut start = 0;
        let mut step = Step::Continue;
        // A blocked client's commands wait behind its blocking one.
        while self.client.blocked.is_none() {
            let limits = Limits {
                max_bulk_len: i64::try_from(self.settings.proto_max_bulk_len).unwrap_or(i64::MAX),
                authenticated: self.client.authenticated,
            };
            match self.parser.parse(&self.buf[start..], limits) {
                Ok(Some(n)) => {
                    let args = parsed_args(&self.parser, &self.buf[start..start + n]);
                    if may_hold(args) {
                        start += run_script_batch(
                            self.server,
                            &mut self.client,
                            &mut self.reply,
                            &mut self.parser,
                            &self.buf[start..],
                            n,
                            limits,
                        );
                    } else {
                        execute(self.server, &mut self.client, &mut self.reply, args);
                        self.parser.finish();
                        start += n;
                    }
                    if let Step::Close = self.check_output_limits() {
                        step = Step::Close;
                        break;
                    }
                    if self.client.close_after_reply || self.client.shutdown {
                        // Redis reads nothing after QUIT, and stops at SHUTDOWN.
                        break;
                    }
                    if self.reply.len() >= FLUSH_AT && self.write_now().is_err() {
                        step = Step::Close;
                        break;
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    protocol_error(self.server, &mut self.client, &mut self.reply, &error);
                    break;
                }
            }
        }
        self.buf.advance(start);
        if self.buf.is_empty() && self.buf.capacity() > KEEP_BUFFER {
            self.buf = BytesMut::new();
        }
        step
    }

    /// Closes the client if its output buffer is over its class's limits, as Redis's
    /// `checkClientOutputBufferLimits`.
    fn check_output_limits(&mut self) -> Step {
        let waiting = self.reply.len() as u64;
        if waiting <= self.limit_floor && self.soft_since.is_none() {
            return Step::Continue;
        }
        let info = &self.client.info;
        let limit: OutputLimit = if info.has_flag(flag::MONITOR | flag::PUBSUB) {
            self.settings.output_limit_pubsub
        } else {
            self.settings.output_limit_normal
        };
        let over_hard = limit.hard > 0 && waiting > limit.hard;
        let mut over_soft = false;
        if limit.soft > 0 && waiting > limit.soft {
            let since = *self.soft_since.get_or_insert_with(Instant::now);
            over_soft = since.elapsed() > Duration::from_secs(limit.soft_seconds);
        } else {
            self.soft_since = None;
        }
        if over_hard || over_soft {
            tracing::warn!(
                id = self.client.id,
                "client closed for overcoming of output buffer limits"
            );
            self.reply.discard();
            return Step::Close;
        }
        Step::Continue
    }

    /// Writes what the socket takes without waiting.
    fn write_now(&mut self) -> std::io::Result<()> {
        match self.stream.try_write(self.reply.bytes()) {
            Ok(n) => {
                let stats = &self.server.stats;
                stats.add(Counter::NetOutput, n as u64);
                stats.add(Counter::WritesProcessed, 1);
                self.reply.consume(n);
                self.client
                    .info
                    .output_buffer
                    .store(self.reply.len(), Ordering::Relaxed);
                if self.reply.is_empty() {
                    self.reply.shrink(KEEP_BUFFER);
                }
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes what is left for a while, as the server stops.
    async fn flush_before_close(&mut self) {
        let deadline = tokio::time::Instant::now() + SHUTDOWN_FLUSH;
        while !self.reply.is_empty() {
            match tokio::time::timeout_at(deadline, self.stream.writable()).await {
                Ok(Ok(())) => {
                    if self.write_now().is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// How long the client may stay idle (`timeout`), if bounded: monitors and subscribers
    /// are never closed for idling, as in Redis.
    fn idle_limit(&self) -> Option<Duration> {
        let timeout = self.settings.timeout;
        (timeout > 0
            && self.client.blocked.is_none()
            && !self.client.info.has_flag(flag::MONITOR | flag::PUBSUB))
        .then(|| Duration::from_secs(timeout))
    }
}

/// The arguments of the command `parser` just read from `frame` (its bytes in the buffer; an
/// inline command's are in the parser).
#[inline(always)]
fn parsed_args<'a>(parser: &'a RequestParser, frame: &'a [u8]) -> Args<'a> {
    match parser.source() {
        Source::Buffer => Args::new(frame, parser.args()),
        Source::Inline => Args::new(parser.inline_bytes(), parser.args()),
    }
}

/// Answers a protocol error with Redis's error; the client is closed after its replies.
fn protocol_error(server: &Server, client: &mut Client, reply: &mut Reply, error: &ProtocolError) {
    tracing::debug!(id = client.id, "protocol error: {}", error.0);
    reply.error(&ErrorReply::err(&error.0));
    let (n, code) = reply.take_errors();
    if let Some(code) = code {
        server.stats.record_errors(&code, u64::from(n));
    }
    client.close_after_reply = true;
}

/// Whether the command of `args` may be a script command (`EVAL`, `EVALSHA`, `FCALL` and
/// their `_RO` forms), by its name's first two letters; the command table decides.
#[inline(always)]
fn may_hold(args: Args<'_>) -> bool {
    !args.is_empty()
        && matches!(
            args.get(0),
            [a, b, _, _, ..] if matches!([a | 0x20, b | 0x20], [b'e', b'v'] | [b'f', b'c'])
        )
}

/// Runs the command `parser` just read (`n` bytes at the start of `buf`) and the whole
/// commands after it in `buf`, with every shard kept from one script command to the next
/// ([`ScriptHold`]), until a command is not a script command (it runs, the hold released
/// first), the commands run out, or the client must stop (closed, blocked, its output past
/// `FLUSH_AT`); returns the bytes the commands took. Output limits are checked after the
/// run, by the caller.
fn run_script_batch<'f>(
    server: &'f Server,
    mut client: &'f mut Client,
    mut reply: &'f mut Reply,
    parser: &mut RequestParser,
    buf: &[u8],
    mut n: usize,
    limits: Limits,
) -> usize {
    let mut hold = ScriptHold::default();
    let mut used = 0;
    loop {
        let args = parsed_args(parser, &buf[used..used + n]);
        (client, reply) = execute_holding(server, client, reply, args, &mut hold);
        parser.finish();
        used += n;
        if !hold.is_held()
            || client.blocked.is_some()
            || client.close_after_reply
            || client.shutdown
            || reply.len() >= FLUSH_AT
        {
            return used;
        }
        match parser.parse(&buf[used..], limits) {
            Ok(Some(next)) => n = next,
            Ok(None) => return used,
            Err(error) => {
                drop(hold);
                protocol_error(server, client, reply, &error);
                return used;
            }
        }
    }
}

/// The smallest non-zero output limit of any class (`u64::MAX` if none is set).
fn limit_floor(settings: &Settings) -> u64 {
    let (normal, pubsub) = (settings.output_limit_normal, settings.output_limit_pubsub);
    [normal.hard, normal.soft, pubsub.hard, pubsub.soft]
        .into_iter()
        .filter(|&l| l > 0)
        .min()
        .unwrap_or(u64::MAX)
}

/// What woke the connection up.
enum Event {
    /// Killed, the inbox has something, or the server is stopping.
    Woken,
    /// The socket is readable (`true`) or writable.
    Ready(std::io::Result<bool>),
    Idle,
    /// A blocked client's time is up.
    Timeout,
}

/// Ready once the socket is readable (if `read`) or writable (if `write`): `Ok(true)` for
/// readable. Polls the stream's own readiness slots, which, unlike `TcpStream::ready`'s
/// waiter list, take no lock.
fn poll_ready(
    stream: &TcpStream,
    cx: &mut Context<'_>,
    read: bool,
    write: bool,
) -> Poll<std::io::Result<bool>> {
    if read {
        if let Poll::Ready(ready) = stream.poll_read_ready(cx) {
            return Poll::Ready(ready.map(|()| true));
        }
    }
    if write {
        if let Poll::Ready(ready) = stream.poll_write_ready(cx) {
            return Poll::Ready(ready.map(|()| false));
        }
    }
    Poll::Pending
}

async fn sleep_until_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}
