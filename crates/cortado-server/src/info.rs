//! `INFO`'s sections, with Redis 7.0's field names in Redis's order, so that
//! `redis-cli --stat`, `redis_exporter` and dashboards read the server as they read Redis.
//!
//! Fields about what Cortado does not have (persistence, replication, Lua, active defrag,
//! forks) are present with the values Redis shows when it does none of it, so that a parser
//! expecting them finds them. `latencystats` reads the histograms of [`crate::latency`];
//! `keyspace`'s `avg_ttl` is an estimate from a few keys per shard, as Redis's is an estimate
//! from its expiry cycle's samples.

use crate::keyspace::access::Shards;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::cmd::server::human_bytes;
use crate::memory;
use crate::protocol::ErrorReply;
use crate::server::{Server, REDIS_VERSION};
use crate::stats::{Counter, Rate};

/// Every section, in the order `INFO` writes them.
pub const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// The sections `INFO` with no argument (or `default`) writes.
pub const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// `INFO`'s text for the sections named in `args` (any case; `default`, `all`,
/// `everything`), each once, in Redis's order.
pub fn render<'a>(
    server: &Server,
    shards: &Shards<'_>,
    args: impl Iterator<Item = &'a [u8]>,
) -> Result<String, ErrorReply> {
    let mut wanted: Vec<&str> = Vec::new();
    let mut any = false;
    for arg in args {
        any = true;
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match name.as_str() {
            "default" => wanted.extend(DEFAULT_SECTIONS),
            "all" | "everything" => wanted.extend(SECTIONS),
            _ => {
                if let Some(section) = SECTIONS.iter().find(|s| **s == name) {
                    wanted.push(section);
                }
            }
        }
    }
    if !any {
        wanted.extend(DEFAULT_SECTIONS);
    }
    let mut text = String::new();
    for section in SECTIONS.iter().filter(|s| wanted.contains(s)) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        write_section(server, shards, section, &mut text)?;
    }
    Ok(text)
}

/// Appends section `name` (lowercase) to `out`.
fn write_section(
    server: &Server,
    shards: &Shards<'_>,
    name: &str,
    out: &mut String,
) -> Result<(), ErrorReply> {
    let settings = server.settings();
    match name {
        "server" => {
            let uptime = server.started.elapsed().as_secs();
            let config_file = server
                .config
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .file
                .as_ref()
                .and_then(|f| std::fs::canonicalize(f).ok())
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            let now_us = server.keyspace.time().now_nanos() / 1000;
            write!(
                out,
                "# Server\r\n\
                 redis_version:{REDIS_VERSION}\r\n\
                 redis_git_sha1:00000000\r\n\
                 redis_git_dirty:0\r\n\
                 redis_build_id:0\r\n\
                 redis_mode:standalone\r\n\
                 os:{} {}\r\n\
                 arch_bits:64\r\n\
                 monotonic_clock:POSIX clock_gettime\r\n\
                 multiplexing_api:epoll\r\n\
                 atomicvar_api:c11-builtin\r\n\
                 gcc_version:0.0.0\r\n\
                 process_id:{}\r\n\
                 process_supervised:no\r\n\
                 run_id:{}\r\n\
                 tcp_port:{}\r\n\
                 server_time_usec:{now_us}\r\n\
                 uptime_in_seconds:{uptime}\r\n\
                 uptime_in_days:{}\r\n\
                 hz:{}\r\n\
                 configured_hz:{}\r\n\
                 lru_clock:{}\r\n\
                 executable:{}\r\n\
                 config_file:{config_file}\r\n\
                 io_threads_active:0\r\n\
                 cortado_version:{}\r\n",
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                server.run_id,
                server.port.load(Ordering::Relaxed),
                uptime / 86400,
                settings.hz,
                settings.hz,
                (now_us / 1_000_000) & ((1 << 24) - 1),
                std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                env!("CARGO_PKG_VERSION"),
            )?;
        }
        "clients" => {
            let clients = server.clients.all();
            let max_input = clients
                .iter()
                .map(|c| c.query_buffer.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            let max_output = clients
                .iter()
                .map(|c| c.output_buffer.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            write!(
                out,
                "# Clients\r\n\
                 connected_clients:{}\r\n\
                 cluster_connections:0\r\n\
                 maxclients:{}\r\n\
                 client_recent_max_input_buffer:{max_input}\r\n\
                 client_recent_max_output_buffer:{max_output}\r\n\
                 blocked_clients:{}\r\n\
                 tracking_clients:0\r\n\
                 clients_in_timeout_table:0\r\n",
                clients.len(),
                settings.maxclients,
                server.keyspace.waits().count(),
            )?;
        }
        "memory" => write_memory(server, &settings, out)?,
        "persistence" => {
            write!(
                out,
                "# Persistence\r\n\
                 loading:0\r\n\
                 async_loading:0\r\n\
                 current_cow_peak:0\r\n\
                 current_cow_size:0\r\n\
                 current_cow_size_age:0\r\n\
                 current_fork_perc:0.00\r\n\
                 current_save_keys_processed:0\r\n\
                 current_save_keys_total:0\r\n\
                 rdb_changes_since_last_save:0\r\n\
                 rdb_bgsave_in_progress:0\r\n\
                 rdb_last_save_time:{}\r\n\
                 rdb_last_bgsave_status:ok\r\n\
                 rdb_last_bgsave_time_sec:-1\r\n\
                 rdb_current_bgsave_time_sec:-1\r\n\
                 rdb_saves:0\r\n\
                 rdb_last_cow_size:0\r\n\
                 rdb_last_load_keys_expired:0\r\n\
                 rdb_last_load_keys_loaded:0\r\n\
                 aof_enabled:0\r\n\
                 aof_rewrite_in_progress:0\r\n\
                 aof_rewrite_scheduled:0\r\n\
                 aof_last_rewrite_time_sec:-1\r\n\
                 aof_current_rewrite_time_sec:-1\r\n\
                 aof_last_bgrewrite_status:ok\r\n\
                 aof_rewrites:0\r\n\
                 aof_rewrites_consecutive_failures:0\r\n\
                 aof_last_write_status:ok\r\n\
                 aof_last_cow_size:0\r\n\
                 module_fork_in_progress:0\r\n\
                 module_fork_last_cow_size:0\r\n",
                server.started_unix,
            )?;
        }
        "stats" => {
            let stats = &server.stats;
            let [hits, misses, expired, evicted, expired_fields] = server.keyspace_counts(shards);
            let rates = &stats.rates;
            write!(
                out,
                "# Stats\r\n\
                 total_connections_received:{}\r\n\
                 total_commands_processed:{}\r\n\
                 instantaneous_ops_per_sec:{}\r\n\
                 total_net_input_bytes:{}\r\n\
                 total_net_output_bytes:{}\r\n\
                 total_net_repl_input_bytes:0\r\n\
                 total_net_repl_output_bytes:0\r\n\
                 instantaneous_input_kbps:{:.2}\r\n\
                 instantaneous_output_kbps:{:.2}\r\n\
                 instantaneous_input_repl_kbps:0.00\r\n\
                 instantaneous_output_repl_kbps:0.00\r\n\
                 rejected_connections:{}\r\n\
                 sync_full:0\r\n\
                 sync_partial_ok:0\r\n\
                 sync_partial_err:0\r\n\
                 expired_keys:{expired}\r\n\
                 expired_subkeys:{expired_fields}\r\n\
                 expired_stale_perc:0.00\r\n\
                 expired_time_cap_reached_count:0\r\n\
                 expire_cycle_cpu_milliseconds:0\r\n\
                 evicted_keys:{evicted}\r\n\
                 evicted_clients:0\r\n\
                 total_eviction_exceeded_time:0\r\n\
                 current_eviction_exceeded_time:0\r\n\
                 keyspace_hits:{hits}\r\n\
                 keyspace_misses:{misses}\r\n\
                 pubsub_channels:{}\r\n\
                 pubsub_patterns:{}\r\n\
                 pubsubshard_channels:{}\r\n\
                 latest_fork_usec:0\r\n\
                 total_forks:0\r\n\
                 migrate_cached_sockets:0\r\n\
                 slave_expires_tracked_keys:0\r\n\
                 active_defrag_hits:0\r\n\
                 active_defrag_misses:0\r\n\
                 active_defrag_key_hits:0\r\n\
                 active_defrag_key_misses:0\r\n\
                 total_active_defrag_time:0\r\n\
                 current_active_defrag_time:0\r\n\
                 tracking_total_keys:0\r\n\
                 tracking_total_items:0\r\n\
                 tracking_total_prefixes:0\r\n\
                 unexpected_error_replies:0\r\n\
                 total_error_replies:{}\r\n\
                 dump_payload_sanitizations:0\r\n\
                 total_reads_processed:{}\r\n\
                 total_writes_processed:{}\r\n\
                 io_threaded_reads_processed:0\r\n\
                 io_threaded_writes_processed:0\r\n\
                 reply_buffer_shrinks:0\r\n\
                 reply_buffer_expands:0\r\n",
                stats.get(Counter::Connections),
                stats.get(Counter::Commands),
                rates.per_second(Rate::Commands) as u64,
                stats.get(Counter::NetInput),
                stats.get(Counter::NetOutput),
                rates.per_second(Rate::NetInput) / 1024.0,
                rates.per_second(Rate::NetOutput) / 1024.0,
                stats.get(Counter::RejectedConnections),
                server.pubsub.channel_count(crate::pubsub::Namespace::Plain),
                server.pubsub.pattern_count(),
                server.pubsub.channel_count(crate::pubsub::Namespace::Shard),
                stats.get(Counter::ErrorReplies),
                stats.get(Counter::ReadsProcessed),
                stats.get(Counter::WritesProcessed),
            )?;
        }
        "replication" => {
            write!(
                out,
                "# Replication\r\n\
                 role:master\r\n\
                 connected_slaves:0\r\n\
                 master_failover_state:no-failover\r\n\
                 master_replid:{}\r\n\
                 master_replid2:0000000000000000000000000000000000000000\r\n\
                 master_repl_offset:0\r\n\
                 second_repl_offset:-1\r\n\
                 repl_backlog_active:0\r\n\
                 repl_backlog_size:1048576\r\n\
                 repl_backlog_first_byte_offset:0\r\n\
                 repl_backlog_histlen:0\r\n",
                server.run_id,
            )?;
        }
        "cpu" => {
            let (user, system) = memory::cpu_seconds();
            write!(
                out,
                "# CPU\r\n\
                 used_cpu_sys:{system:.6}\r\n\
                 used_cpu_user:{user:.6}\r\n\
                 used_cpu_sys_children:0.000000\r\n\
                 used_cpu_user_children:0.000000\r\n\
                 used_cpu_sys_main_thread:{system:.6}\r\n\
                 used_cpu_user_main_thread:{user:.6}\r\n"
            )?;
        }
        "modules" => out.push_str("# Modules\r\n"),
        "cluster" => out.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        "errorstats" => {
            out.push_str("# Errorstats\r\n");
            let errors = server
                .stats
                .errors
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            for (code, count) in errors.iter() {
                write!(out, "errorstat_{code}:count={count}\r\n")?;
            }
        }
        "latencystats" => {
            out.push_str("# Latencystats\r\n");
            // With tracking off, Redis shows none, not even what was counted before.
            if !settings.latency_tracking {
                return Ok(());
            }
            let percentiles: Vec<f64> = settings.latency_percentiles.iter().map(|p| p.1).collect();
            let mut rows: Vec<(&str, Vec<u64>)> = server
                .commands
                .entries()
                .filter_map(|(id, entry)| {
                    let values = server.stats.latencies.percentiles(id, &percentiles)?;
                    Some((entry.full_name.as_str(), values))
                })
                .collect();
            rows.sort_by(|a, b| a.0.cmp(b.0));
            for (name, values) in rows {
                write!(out, "latency_percentiles_usec_{name}:")?;
                for (i, ((label, _), nanos)) in
                    settings.latency_percentiles.iter().zip(values).enumerate()
                {
                    let sep = if i == 0 { "" } else { "," };
                    write!(out, "{sep}p{label}={:.3}", nanos as f64 / 1000.0)?;
                }
                out.push_str("\r\n");
            }
        }
        "commandstats" => {
            out.push_str("# Commandstats\r\n");
            let mut rows: Vec<(&str, crate::stats::CommandFigures)> = server
                .commands
                .entries()
                .map(|(id, entry)| (entry.full_name.as_str(), server.stats.command(id)))
                .filter(|(_, f)| f.calls > 0 || f.rejected > 0 || f.failed > 0)
                .collect();
            rows.sort_by(|a, b| a.0.cmp(b.0));
            for (name, f) in rows {
                let per_call = if f.calls > 0 {
                    f.usec as f64 / f.calls as f64
                } else {
                    0.0
                };
                write!(
                    out,
                    "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                    f.calls, f.usec, f.rejected, f.failed
                )?;
            }
        }
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            for db in 0..server.keyspace.databases() {
                let keys = shards.dbsize(db);
                if keys > 0 {
                    let expires = shards.expiring(db);
                    let avg_ttl = shards.avg_ttl_millis(db);
                    write!(
                        out,
                        "db{db}:keys={keys},expires={expires},avg_ttl={avg_ttl}\r\n"
                    )?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `INFO memory`: the counting allocator's figures (see [`memory`]) in Redis's fields.
fn write_memory(
    server: &Server,
    settings: &crate::config::Settings,
    out: &mut String,
) -> Result<(), ErrorReply> {
    let used = memory::used_memory();
    let rss = memory::resident_bytes();
    let peak = memory::peak_memory().max(used);
    let total = memory::total_system_memory();
    let startup = server.startup_memory.min(used);
    let clients: u64 = server
        .clients
        .all()
        .iter()
        .map(|c| {
            (c.query_buffer.load(Ordering::Relaxed) + c.output_buffer.load(Ordering::Relaxed))
                as u64
        })
        .sum();
    let overhead = (startup + clients).min(used);
    let dataset = used - overhead;
    let percent = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    write!(
        out,
        "# Memory\r\n\
         used_memory:{used}\r\n\
         used_memory_human:{}\r\n\
         used_memory_rss:{rss}\r\n\
         used_memory_rss_human:{}\r\n\
         used_memory_peak:{peak}\r\n\
         used_memory_peak_human:{}\r\n\
         used_memory_peak_perc:{:.2}%\r\n\
         used_memory_overhead:{overhead}\r\n\
         used_memory_startup:{startup}\r\n\
         used_memory_dataset:{dataset}\r\n\
         used_memory_dataset_perc:{:.2}%\r\n\
         allocator_allocated:{used}\r\n\
         allocator_active:{used}\r\n\
         allocator_resident:{rss}\r\n\
         total_system_memory:{total}\r\n\
         total_system_memory_human:{}\r\n\
         used_memory_lua:0\r\n\
         used_memory_vm_eval:0\r\n\
         used_memory_lua_human:0B\r\n\
         used_memory_scripts_eval:0\r\n\
         number_of_cached_scripts:0\r\n\
         number_of_functions:0\r\n\
         number_of_libraries:0\r\n\
         used_memory_vm_functions:0\r\n\
         used_memory_vm_total:0\r\n\
         used_memory_vm_total_human:0B\r\n\
         used_memory_functions:0\r\n\
         used_memory_scripts:0\r\n\
         used_memory_scripts_human:0B\r\n\
         maxmemory:{}\r\n\
         maxmemory_human:{}\r\n\
         maxmemory_policy:{}\r\n\
         allocator_frag_ratio:1.00\r\n\
         allocator_frag_bytes:0\r\n\
         allocator_rss_ratio:{:.2}\r\n\
         allocator_rss_bytes:{}\r\n\
         rss_overhead_ratio:1.00\r\n\
         rss_overhead_bytes:0\r\n\
         mem_fragmentation_ratio:{:.2}\r\n\
         mem_fragmentation_bytes:{}\r\n\
         mem_not_counted_for_evict:0\r\n\
         mem_replication_backlog:0\r\n\
         mem_total_replication_buffers:0\r\n\
         mem_clients_slaves:0\r\n\
         mem_clients_normal:{clients}\r\n\
         mem_cluster_links:0\r\n\
         mem_aof_buffer:0\r\n\
         mem_allocator:{}\r\n\
         active_defrag_running:0\r\n\
         lazyfree_pending_objects:0\r\n\
         lazyfreed_objects:0\r\n",
        human_bytes(used),
        human_bytes(rss),
        human_bytes(peak),
        percent(used, peak),
        percent(dataset, used - startup),
        human_bytes(total),
        settings.maxmemory,
        human_bytes(settings.maxmemory),
        settings.maxmemory_policy,
        ratio(rss, used),
        rss as i64 - used as i64,
        ratio(rss, used),
        rss as i64 - used as i64,
        memory::allocator_name(),
    )?;
    Ok(())
}
