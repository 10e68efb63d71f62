//! Cortado's cache server: Redis's protocol, commands and configuration, on the Cortado core.
//!
//! Clients (`redis-cli`, `redis-benchmark`, redis-py, the `redis` crate) talk to it as to Redis
//! 7.0, over RESP2 or RESP3, with Redis's replies and error strings. Keys live in the `cortado`
//! library's caches, the same code the library's users and the simulator run; expiry is exact,
//! on the caches' timer wheels.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use cortado_server::{config::Config, keyspace::TimeSource, server};
//! let config = Config::default();
//! let settings = config.settings();
//! let server = server::Server::new(config, TimeSource::System).expect("valid settings");
//! let listeners = server::bind(&settings.bind, settings.port).await?;
//! server::serve(server, listeners, std::future::pending()).await;
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! - **Tasks and shards.** Each connection is a task on a multi-threaded tokio runtime: it
//!   reads what its socket has, runs every whole command in order, and writes the replies in
//!   one write. The keyspace is split into shards, each behind its own mutex (see
//!   [`keyspace`]); a command locks the shards of its keys in increasing order, holds them for
//!   its whole length and releases them before its reply is written. So every command is
//!   atomic and isolated (multi-key ones too: `MSET`, `RENAME`, `COPY` lock all their keys'
//!   shards first). `MULTI`/`EXEC` ([`cmd::transactions`]) holds every shard for the whole
//!   transaction and lends them to its commands, so it is one atomic step across keys and
//!   databases with time frozen; `WATCH` is told of writes to the watched keys only
//!   (`docs/decisions/0230-server-transactions.md`). A script ([`cmd::scripting`]) holds every
//!   shard and then the server's one Lua state ([`lua`]) for its run and lends the shards to
//!   the commands it calls, so it too is one atomic step (`docs/decisions/0231-server-lua.md`).
//!   Parsing,
//!   replies and socket work run in parallel on all cores; only commands on the same shard
//!   wait for each other.
//! - **Why not Redis's single thread**: one thread owning the keyspace, fed by the connection
//!   tasks through channels, costs a channel send and a wake-up per command, and caps the
//!   server at one core of command execution. A single global lock is the other simple
//!   design: it keeps the parallel I/O, but every command of every client then contends for
//!   one cache line. With 16 shards per CPU, two threads want the same shard in about one
//!   command in 32 on uniform keys. The measurements behind this choice are in
//!   `docs/decisions/0200-server-concurrency.md`.
//! - **Pub/sub** ([`pubsub`]) reaches subscribers through their inboxes, under the pubsub
//!   output limit; keyspace notifications ([`notify`]) are published after the command that
//!   caused them released its shards.
//! - **Commands** live in files by family under [`cmd`], each listed in one table that drives
//!   dispatch, arity errors, authentication, `COMMAND` and the statistics.
//! - **Unsafe code** is confined to [`sys`]: the counting allocator and one call into C.

pub mod client;
pub mod cmd;
pub mod config;
pub mod connection;
pub mod float;
pub mod glob;
pub mod info;
pub mod keyspace;
pub mod latency;
pub mod lua;
pub mod memory;
pub mod notify;
pub mod protocol;
pub mod pubsub;
pub mod server;
pub mod stats;
pub mod sys;
