//! `cortado-sim`: replays cache traces through policies and reports hit ratios.
//!
//! Parses the command line and dispatches to the library's [`replay`], [`report`], [`plot`],
//! [`verify`] and [`gen`] modules. Exit status: 0 on success, 1 when a trace, a file or a
//! verification fails, 2 on a bad argument.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use cortado::policy::sampled::MAX_SAMPLES;
use cortado_sim::gen::{self, Dist, GenError};
use cortado_sim::plot::{self, ImageFormat, PlotError};
use cortado_sim::policy::{self, RedisTuning, POLICIES};
use cortado_sim::replay::{self, ReplayError, RunOptions, Size};
use cortado_sim::report;
use cortado_sim::trace::Format;
use cortado_sim::verify::{self, VerifyError, VerifyOptions, MAPPINGS};

/// Replays cache traces through eviction policies and reports hit ratios.
///
/// Example: cortado-sim --trace ../shared/traces/p3.arc.gz --sizes 1%,5%,10%,25%
/// --policies wtinylfu,lru,arc,opt --json p3.json --plot p3.svg
#[derive(Parser, Debug)]
#[command(
    name = "cortado-sim",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    simulate: SimulateArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Writes a synthetic trace in the `keys` format (one decimal key per line).
    Gen(GenArgs),
    /// Replays the reference table's cells and compares our hit ratios with it.
    Verify(VerifyArgs),
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Trace files, `NAME.FORMAT[.gz]` (repeat the flag or separate with commas).
    #[arg(
        long = "trace",
        value_name = "FILE",
        value_delimiter = ',',
        required = true
    )]
    traces: Vec<PathBuf>,
    /// The format of every trace whose file name does not say it (a trace named for another
    /// format is an error).
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Cache sizes: entry counts (1000) or percentages of each trace's distinct keys (5%),
    /// rounded, at least 10 entries.
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "1%,5%,10%,25%",
        value_parser = parse_size
    )]
    sizes: Vec<Size>,
    /// Policies to replay (the list of names is filled in at run time).
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        default_value = "wtinylfu,lru,arc,lirs,s3fifo,sieve,opt",
        value_parser = parse_policy
    )]
    policies: Vec<&'static str>,
    /// Writes every cell as a JSON array of {trace, policy, size, requests, hits, hit_ratio}.
    #[arg(long, value_name = "OUT.json")]
    json: Option<PathBuf>,
    /// Writes every cell as CSV with the same columns as --json.
    #[arg(long, value_name = "OUT.csv")]
    csv: Option<PathBuf>,
    /// Draws hit ratio against cache size, one line per policy; PNG or SVG by extension.
    #[arg(long, value_name = "OUT.png|OUT.svg")]
    plot: Option<PathBuf>,
    /// Prints the speed of every replay loop (requests per second, loading excluded).
    #[arg(long)]
    timing: bool,
    #[command(flatten)]
    redis: RedisArgs,
    #[command(flatten)]
    exec: ExecArgs,
}

/// Redis's eviction tunables, under Redis's own names.
#[derive(Args, Debug)]
struct RedisArgs {
    /// Entries redis-lru and redis-lfu sample per eviction round [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SAMPLES)))]
    maxmemory_samples: Option<u32>,
    /// How much harder each of redis-lfu's counter increments gets [default: 10].
    #[arg(long, value_name = "N")]
    lfu_log_factor: Option<u32>,
    /// Requests per redis-lfu counter decay period; 0 never decays [default: 10 per entry the
    /// cache holds].
    #[arg(long, value_name = "REQUESTS")]
    lfu_decay_period: Option<u64>,
}

impl RedisArgs {
    /// The tunables, or the first flag given for a policy that `policies` does not include.
    fn tuning(&self, policies: &[&'static str]) -> Result<RedisTuning, CliError> {
        let has = |name| policies.contains(&name);
        let unused = |flag, applies_to| CliError::UnusedTuning { flag, applies_to };
        if self.maxmemory_samples.is_some() && !has("redis-lru") && !has("redis-lfu") {
            return Err(unused("--maxmemory-samples", "redis-lru and redis-lfu"));
        }
        if self.lfu_log_factor.is_some() && !has("redis-lfu") {
            return Err(unused("--lfu-log-factor", "redis-lfu"));
        }
        if self.lfu_decay_period.is_some() && !has("redis-lfu") {
            return Err(unused("--lfu-decay-period", "redis-lfu"));
        }
        Ok(RedisTuning {
            samples: self.maxmemory_samples,
            lfu_log_factor: self.lfu_log_factor,
            lfu_decay_period: self.lfu_decay_period,
        })
    }
}

#[derive(Args, Debug)]
struct ExecArgs {
    /// Replays running at once (one per core by default; 1 for timing).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Seed of the library policies' randomness (a fixed default keeps runs reproducible).
    #[arg(long)]
    seed: Option<u64>,
    /// Never draws progress bars (they are drawn only when stderr is a terminal).
    #[arg(long, short)]
    quiet: bool,
}

impl ExecArgs {
    fn options(&self) -> RunOptions {
        RunOptions {
            threads: self.threads.map(usize::from),
            seed: self.seed,
            redis: RedisTuning::default(),
            progress: !self.quiet && io::stderr().is_terminal(),
        }
    }
}

#[derive(Args, Debug)]
struct GenArgs {
    /// zipf:S, loop, scan+zipf:S, drift+zipf:S or alternate:L.
    #[arg(long, value_parser = parse_dist)]
    dist: Dist,
    /// Distinct keys of the key space.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Requests to write.
    #[arg(long)]
    requests: u64,
    /// Seed: the same seed always gives the same keys.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output file (stdout by default).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// The reference table [default: $CORTADO_REFERENCE or ../shared/reference/hit-ratios.csv].
    #[arg(long, value_name = "CSV")]
    reference: Option<PathBuf>,
    /// The directory of trace files [default: $CORTADO_TRACES or ../shared/traces].
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
    /// Policies to verify (the mapping is filled in at run time).
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        default_value = "lru,arc,opt",
        value_parser = parse_verify_policy
    )]
    policies: Vec<&'static str>,
    /// Only these traces (names as in the table, e.g. cs,loop).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    traces_only: Option<Vec<String>>,
    /// Largest difference allowed for lru, arc and opt, in percentage points.
    #[arg(long, default_value_t = verify::DEFAULT_TOLERANCE, value_parser = parse_tolerance)]
    tolerance: f64,
    #[command(flatten)]
    exec: ExecArgs,
}

fn parse_format(text: &str) -> Result<Format, String> {
    text.parse()
        .map_err(|e: cortado_sim::trace::ParseFormatError| e.to_string())
}

fn parse_size(text: &str) -> Result<Size, String> {
    text.parse().map_err(|e: replay::SizeError| e.to_string())
}

fn parse_policy(text: &str) -> Result<&'static str, String> {
    policy::canonical(text.trim()).map_err(|e| e.to_string())
}

fn parse_verify_policy(text: &str) -> Result<&'static str, String> {
    verify::mapping(text.trim()).map(|m| m.ours).ok_or_else(|| {
        VerifyError::Unmapped {
            name: text.to_owned(),
        }
        .to_string()
    })
}

fn parse_dist(text: &str) -> Result<Dist, String> {
    text.parse().map_err(|e: GenError| e.to_string())
}

fn parse_tolerance(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!(
            "`{text}` is not a non-negative number of percentage points"
        )),
    }
}

/// Everything that stops a command, with its exit status.
#[derive(Debug)]
enum CliError {
    Replay(ReplayError),
    Verify(VerifyError),
    Plot(PlotError),
    Gen(GenError),
    /// Writing an output failed.
    Output {
        path: PathBuf,
        source: io::Error,
    },
    /// The verification ran and found differences (already printed).
    Mismatch,
    /// `--format` names another format than a trace's file name does.
    FormatConflict {
        path: PathBuf,
        named: Format,
        given: Format,
    },
    /// A Redis tunable was given, but `--policies` has no policy it applies to.
    UnusedTuning {
        flag: &'static str,
        applies_to: &'static str,
    },
}

impl CliError {
    fn exit_code(&self) -> u8 {
        match self {
            CliError::Replay(ReplayError::Policy { .. })
            | CliError::Verify(VerifyError::Unmapped { .. } | VerifyError::UnknownTrace { .. })
            | CliError::Verify(VerifyError::Replay(ReplayError::Policy { .. }))
            | CliError::Plot(PlotError::UnknownExtension { .. })
            | CliError::FormatConflict { .. }
            | CliError::UnusedTuning { .. }
            | CliError::Gen(_) => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Replay(e) => e.fmt(f),
            CliError::Verify(e) => e.fmt(f),
            CliError::Plot(e) => e.fmt(f),
            CliError::Gen(e) => e.fmt(f),
            CliError::Output { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::Mismatch => write!(f, "hit ratios differ from the reference"),
            CliError::FormatConflict { path, named, given } => write!(
                f,
                "{}: the file name says format `{named}` but --format says `{given}`; \
                 --format is for traces whose names do not say their format",
                path.display()
            ),
            CliError::UnusedTuning { flag, applies_to } => write!(
                f,
                "{flag} applies to {applies_to}, which --policies does not include"
            ),
        }
    }
}

impl From<ReplayError> for CliError {
    fn from(e: ReplayError) -> Self {
        CliError::Replay(e)
    }
}

impl From<VerifyError> for CliError {
    fn from(e: VerifyError) -> Self {
        CliError::Verify(e)
    }
}

impl From<PlotError> for CliError {
    fn from(e: PlotError) -> Self {
        CliError::Plot(e)
    }
}

fn main() -> ExitCode {
    let command = Cli::command()
        .mut_arg("policies", |a| {
            a.help(format!("Policies to replay: {}", POLICIES.join(", ")))
        })
        .mut_subcommand("verify", |c| {
            c.mut_arg("policies", |a| {
                let pairs: Vec<String> = MAPPINGS
                    .iter()
                    .map(|m| format!("{} ({})", m.ours, m.reference))
                    .collect();
                a.help(format!(
                    "Policies to verify, with their reference column: {}; lirs, s3fifo and \
                     sieve are reported but never fail",
                    pairs.join(", ")
                ))
            })
        });
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Some(Command::Gen(args)) => generate(&args),
        Some(Command::Verify(args)) => run_verify(&args),
        None => simulate(&cli.simulate),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Output { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(CliError::Mismatch) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cortado-sim: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn simulate(args: &SimulateArgs) -> Result<(), CliError> {
    // Check the plot's name and font before the (possibly long) replay.
    if let Some(path) = &args.plot {
        ImageFormat::from_path(path)?;
        plot::load_font()?;
    }
    let mut policies: Vec<&'static str> = Vec::new();
    for &p in &args.policies {
        if !policies.contains(&p) {
            policies.push(p);
        }
    }
    // A trace named twice is replayed once, as a repeated policy or size is.
    let mut paths: Vec<PathBuf> = Vec::new();
    for path in &args.traces {
        if !paths.contains(path) {
            paths.push(path.clone());
        }
    }
    // `--format` fills in for names that say no format: it must not silently reread a trace
    // named for another (a `.lirs` file read as `i32be` records is a plausible key sequence).
    if let Some(given) = args.format {
        for path in &paths {
            match Format::from_path(path) {
                Some(named) if named != given => {
                    return Err(CliError::FormatConflict {
                        path: path.clone(),
                        named,
                        given,
                    })
                }
                _ => {}
            }
        }
    }
    let mut options = args.exec.options();
    options.redis = args.redis.tuning(&policies)?;
    let (traces, outcomes) = options.install(|| -> Result<_, ReplayError> {
        let traces = replay::load_traces(&paths, args.format, &options)?;
        let cells = replay::grid(&traces, &policies, &args.sizes);
        let outcomes = replay::run(&traces, &cells, &options)?;
        Ok((traces, outcomes))
    })??;
    let stdout = Path::new("stdout");
    // A reader that went away (`| head`) does not cancel the files asked for.
    let table = write_to(stdout, None, |out| {
        report::write_table(&mut *out, &traces, &outcomes)?;
        if args.timing {
            writeln!(out)?;
            report::write_timing(&mut *out, &outcomes)?;
        }
        Ok(())
    });
    match table {
        Err(CliError::Output { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    if let Some(path) = &args.json {
        write_to(path, Some(path), |out| report::write_json(out, &outcomes))?;
    }
    if let Some(path) = &args.csv {
        write_to(path, Some(path), |out| report::write_csv(out, &outcomes))?;
    }
    if let Some(path) = &args.plot {
        plot::draw(path, &traces, &outcomes)?;
    }
    Ok(())
}

/// Runs `write` on a buffered `file`, or on stdout when `file` is `None`; `name` is for errors.
fn write_to(
    name: &Path,
    file: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), CliError> {
    let fail = |source| CliError::Output {
        path: name.to_owned(),
        source,
    };
    match file {
        Some(path) => {
            let mut out = BufWriter::new(File::create(path).map_err(fail)?);
            write(&mut out).and_then(|()| out.flush()).map_err(fail)
        }
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&mut out).and_then(|()| out.flush()).map_err(fail)
        }
    }
}

fn generate(args: &GenArgs) -> Result<(), CliError> {
    let keys = gen::keys(args.dist, args.keys, args.requests, args.seed).map_err(CliError::Gen)?;
    match &args.output {
        Some(path) => write_to(path, Some(path), |out| gen::write_keys(out, keys).map(drop)),
        None => write_to(Path::new("stdout"), None, |out| {
            gen::write_keys(out, keys).map(drop)
        }),
    }
}

fn run_verify(args: &VerifyArgs) -> Result<(), CliError> {
    let from_env = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(default))
    };
    let options = VerifyOptions {
        reference: args
            .reference
            .clone()
            .unwrap_or_else(|| from_env("CORTADO_REFERENCE", "../shared/reference/hit-ratios.csv")),
        traces: args
            .traces
            .clone()
            .unwrap_or_else(|| from_env("CORTADO_TRACES", "../shared/traces")),
        policies: args.policies.iter().map(|p| p.to_string()).collect(),
        traces_only: args.traces_only.clone(),
        tolerance: args.tolerance,
        run: args.exec.options(),
    };
    let result = verify::verify(&options)?;
    let report = write_to(Path::new("stdout"), None, |out| {
        result.write_table(&mut *out)?;
        writeln!(out)?;
        result.write_summary(&mut *out)
    });
    // A reader that went away (`| head`) must not turn a failure into success.
    match report {
        Err(CliError::Output { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    if result.passed() {
        Ok(())
    } else {
        Err(CliError::Mismatch)
    }
}
