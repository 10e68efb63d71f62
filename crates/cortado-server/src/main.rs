//! `cortado-server [config-file] [--directive value ...]`: a Redis-compatible cache server.

use std::process::ExitCode;

use cortado_server::config::{self, Config};
use cortado_server::keyspace::TimeSource;
use cortado_server::{memory, server};

#[global_allocator]
static ALLOCATOR: cortado_server::sys::CountingAllocator = cortado_server::sys::CountingAllocator;

fn main() -> ExitCode {
    memory::counting_installed();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("Usage: cortado-server [/path/to/cortado.conf] [--port 6379] [--bind 127.0.0.1 ...] [--requirepass secret] [--<directive> <value> ...]");
        println!("Directives and their syntax are redis.conf's; flags override the file.");
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("cortado-server {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let config = match Config::from_args(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("cortado-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let settings = config.settings();
    config::set_log_level(&settings.loglevel);
    if let Err(e) = init_logging(&settings.logfile) {
        eprintln!("cortado-server: {e}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cortado-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let server = match server::Server::new(config, TimeSource::System) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("cortado-server: {e}");
                return ExitCode::FAILURE;
            }
        };
        let listeners = match server::bind(&settings.bind, settings.port).await {
            Ok(listeners) => listeners,
            Err(e) => {
                eprintln!("cortado-server: {e}");
                return ExitCode::FAILURE;
            }
        };
        for listener in &listeners {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!("ready to accept connections on {addr}");
            }
        }
        // As Redis, a pid file that cannot be written is a warning, not a stop.
        let pidfile = settings.pidfile.clone();
        if !pidfile.is_empty() {
            if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
                tracing::warn!("failed to write PID file {pidfile}: {e}");
            }
        }
        server::serve(server, listeners, stop_signal()).await;
        if !pidfile.is_empty() {
            let _ = std::fs::remove_file(&pidfile);
        }
        ExitCode::SUCCESS
    })
}

/// Resolves at SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("install the SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::warn!("received SIGINT, scheduling shutdown"),
            _ = term.recv() => tracing::warn!("received SIGTERM, scheduling shutdown"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Logs through `tracing` to standard output or `logfile`, at the `loglevel` of the moment
/// (`CONFIG SET loglevel` takes effect at once; see [`config::log_enabled`]).
fn init_logging(logfile: &str) -> Result<(), String> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{filter, fmt, Layer};
    let filter = filter::filter_fn(|meta| config::log_enabled(meta.level()));
    let registry = tracing_subscriber::registry();
    if logfile.is_empty() {
        use std::io::IsTerminal;
        let layer = fmt::layer()
            .with_target(false)
            .with_ansi(std::io::stdout().is_terminal())
            .with_filter(filter);
        registry.with(layer).init();
    } else {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)
            .map_err(|e| format!("cannot open logfile {logfile}: {e}"))?;
        let layer = fmt::layer()
            .with_target(false)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .with_filter(filter);
        registry.with(layer).init();
    }
    Ok(())
}
