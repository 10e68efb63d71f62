//! `INFO`'s sections, with Redis's field names, so that `redis-cli --stat`, `redis_exporter`
//! and dashboards read the server as they read Redis.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::cmd::server::human_bytes;
use crate::memory;
use crate::protocol::ErrorReply;
use crate::server::{Server, REDIS_VERSION};
use crate::stats::Counter;

/// Appends section `name` (lowercase) to `out`; an unknown section adds nothing, as in Redis.
pub fn section(server: &Server, name: &str, out: &mut String) -> Result<(), ErrorReply> {
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
                "# Server\r\nredis_version:{REDIS_VERSION}\r\ncortado_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{now_us}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{config_file}\r\nio_threads_active:0\r\n",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                server.run_id,
                server.port.load(Ordering::Relaxed),
                uptime / 86400,
                settings.hz,
                settings.hz,
                (now_us / 1_000_000) & ((1 << 24) - 1),
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            )?;
        }
        "clients" => {
            write!(
                out,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
                server.clients.len(),
                settings.maxclients,
            )?;
        }
        "memory" => {
            let used = memory::used_memory();
            let rss = memory::resident_bytes();
            let peak = memory::peak_memory().max(used);
            let total = memory::total_system_memory();
            write!(
                out,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\ntotal_system_memory:{total}\r\ntotal_system_memory_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_allocator:{}\r\n",
                human_bytes(used),
                human_bytes(rss),
                human_bytes(peak),
                human_bytes(total),
                settings.maxmemory,
                human_bytes(settings.maxmemory),
                settings.maxmemory_policy,
                if used > 0 { rss as f64 / used as f64 } else { 0.0 },
                memory::allocator_name(),
            )?;
        }
        "persistence" => {
            write!(
                out,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n",
                server.started_unix,
            )?;
        }
        "stats" => {
            let stats = &server.stats;
            let (hits, misses) = (
                server.keyspace.sum(|s| s.hits),
                server.keyspace.sum(|s| s.misses),
            );
            write!(
                out,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nevicted_keys:{}\r\nkeyspace_hits:{hits}\r\nkeyspace_misses:{misses}\r\npubsub_channels:0\r\npubsub_patterns:0\r\ntotal_error_replies:{}\r\n",
                stats.get(Counter::Connections),
                stats.get(Counter::Commands),
                stats.get(Counter::NetInput),
                stats.get(Counter::NetOutput),
                stats.get(Counter::RejectedConnections),
                server.keyspace.expired_keys(),
                stats.get(Counter::EvictedKeys),
                stats.get(Counter::ErrorReplies),
            )?;
        }
        "replication" => {
            out.push_str(
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n",
            );
        }
        "cpu" => {
            let (user, system) = memory::cpu_seconds();
            write!(
                out,
                "# CPU\r\nused_cpu_sys:{system:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
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
        "commandstats" => {
            out.push_str("# Commandstats\r\n");
            let mut rows: Vec<(String, crate::stats::CommandFigures)> = server
                .commands
                .entries()
                .map(|(id, entry)| (entry.full_name.clone(), server.stats.command(id)))
                .filter(|(_, f)| f.calls > 0 || f.rejected > 0 || f.failed > 0)
                .collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
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
                let keys = server.keyspace.dbsize(db);
                if keys > 0 {
                    let expires = server.keyspace.expiring(db);
                    write!(out, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n")?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}
