//! One client's connection: reads requests, runs them, writes the replies.
//!
//! The loop reads what the socket has, runs every whole command in it in order, and writes
//! their replies in one write, so a pipeline of N commands costs one read and one write, not N.
//! A protocol error is answered with Redis's error and closes this connection only.
//!
//! # Design
//!
//! - **Memory per client is bounded.** Replies are written out once they pass [`FLUSH_AT`]
//!   even in the middle of a pipeline, so a client that sends many commands and reads slowly
//!   holds the server back (TCP's own flow control) instead of growing its buffer; a single
//!   reply larger than `client-output-buffer-limit`'s hard limit closes the client, as in Redis.
//!   The query buffer holds at most one command beyond what was run, up to
//!   `client-query-buffer-limit`.
//! - **Settings** are copied per connection and taken again only when their version changes
//!   (one atomic load per batch), so no lock is shared by every command.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::Client;
use crate::cmd::{execute, Args};
use crate::config::Settings;
use crate::protocol::request::{Limits, Source};
use crate::protocol::{ErrorReply, Reply, RequestParser};
use crate::server::Server;
use crate::stats::Counter;

/// Replies are written once this many bytes wait, even mid-pipeline.
const FLUSH_AT: usize = 64 * 1024;
/// What one read asks the socket for, at least (Redis's `PROTO_IOBUF_LEN`).
const READ_SIZE: usize = 16 * 1024;

/// Serves `client` on `stream` until it quits, is killed, or the server stops.
pub async fn run(server: &Server, mut stream: TcpStream, mut client: Client) {
    let mut settings = server.settings();
    let mut version = server.settings_version();
    let mut shutdown = server.subscribe_shutdown();
    let mut buf = BytesMut::new();
    let mut parser = RequestParser::default();
    let mut reply = Reply::new();
    let mut monitor: Option<tokio::sync::mpsc::Receiver<Vec<u8>>> = None;
    let info = client.info.clone();
    loop {
        if buf.capacity() - buf.len() < READ_SIZE / 4 {
            buf.reserve(READ_SIZE);
        }
        let idle = if monitor.is_some() {
            None
        } else {
            idle_limit(&settings)
        };
        let read = tokio::select! {
            biased;
            () = info.killed() => break,
            () = stopped(&mut shutdown) => break,
            line = recv_line(&mut monitor) => Event::Monitor(line),
            read = stream.read_buf(&mut buf) => Event::Read(read),
            () = sleep_or_never(idle) => break,
        };
        let read = match read {
            Event::Read(read) => read,
            Event::Monitor(Some(line)) => {
                reply.raw(&line);
                if write(server, &mut stream, &mut reply).await.is_err() {
                    break;
                }
                continue;
            }
            Event::Monitor(None) => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => server.stats.add(Counter::NetInput, n as u64),
        }
        let current = server.settings_version();
        if current != version {
            version = current;
            settings = server.settings();
        }
        let mut start = 0;
        let mut failed = false;
        loop {
            let limits = Limits {
                max_bulk_len: i64::try_from(settings.proto_max_bulk_len).unwrap_or(i64::MAX),
                authenticated: client.authenticated,
            };
            match parser.parse(&buf[start..], limits) {
                Ok(Some(n)) => {
                    let args = match parser.source() {
                        Source::Buffer => Args::new(&buf[start..start + n], parser.args()),
                        Source::Inline => Args::new(parser.inline_bytes(), parser.args()),
                    };
                    execute(server, &mut client, &mut reply, args);
                    parser.finish();
                    start += n;
                    let hard = settings.output_limit_normal.hard;
                    if hard > 0
                        && reply.len() as u64 > hard
                        && !client.info.has_flag(crate::client::flag::MONITOR)
                    {
                        // Over the hard limit: closed without the reply, as Redis does.
                        tracing::info!(
                            id = client.id,
                            "client closed for overcoming of output buffer limits"
                        );
                        failed = true;
                        break;
                    }
                    if client.close_after_reply || client.shutdown || client.wants_monitor {
                        break;
                    }
                    if reply.len() >= FLUSH_AT
                        && write(server, &mut stream, &mut reply).await.is_err()
                    {
                        failed = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(id = client.id, "protocol error: {}", error.0);
                    reply.error(&ErrorReply::err(&error.0));
                    let (n, code) = reply.take_errors();
                    if let Some(code) = code {
                        server.stats.record_errors(&code, u64::from(n));
                    }
                    client.close_after_reply = true;
                    break;
                }
            }
        }
        if failed {
            break;
        }
        buf.advance(start);
        if buf.len() as u64 > settings.query_buffer_limit {
            tracing::info!(
                id = client.id,
                "client closed for exceeding the query buffer limit"
            );
            break;
        }
        info.query_buffer.store(buf.len(), Ordering::Relaxed);
        if !reply.is_empty() && write(server, &mut stream, &mut reply).await.is_err() {
            break;
        }
        reply.shrink(FLUSH_AT);
        if buf.is_empty() && buf.capacity() > 4 * READ_SIZE {
            buf = BytesMut::new();
        }
        if client.shutdown {
            server.shutdown();
            break;
        }
        if client.close_after_reply {
            break;
        }
        if client.wants_monitor {
            client.wants_monitor = false;
            monitor = Some(server.monitors.add(&client));
        }
    }
    let _ = stream.shutdown().await;
}

/// Writes and empties `reply`.
async fn write(server: &Server, stream: &mut TcpStream, reply: &mut Reply) -> std::io::Result<()> {
    stream.write_all(reply.bytes()).await?;
    server.stats.add(Counter::NetOutput, reply.len() as u64);
    reply.consume(reply.len());
    Ok(())
}

/// What woke the connection up.
enum Event {
    Read(std::io::Result<usize>),
    Monitor(Option<Vec<u8>>),
}

async fn stopped(shutdown: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn recv_line(monitor: &mut Option<tokio::sync::mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match monitor {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// How long a client may stay idle (`timeout`), if bounded.
fn idle_limit(settings: &Arc<Settings>) -> Option<Duration> {
    (settings.timeout > 0).then(|| Duration::from_secs(settings.timeout))
}

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}
