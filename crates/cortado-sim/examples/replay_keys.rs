//! Replays a plain keys file (one decimal `u64` per line) through reference policies.
//!
//! Usage: `replay_keys KEYS_FILE POLICY[,POLICY...] SIZE[,SIZE...]`
//!
//! Prints one tab-separated line per policy and size: policy, size, hits, requests, hit ratio in
//! percent (two decimals), replay seconds and requests per second. It predates the simulator's
//! trace readers and reports (`cortado-sim --trace FILE --format keys` replays such a file now); it
//! is how the reference policies were first checked against libCacheSim's published hit ratios.

use std::io::{BufRead, BufReader};
use std::time::Instant;

use cortado_sim::policy::reference::reference;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, policies, sizes] = args.as_slice() else {
        return Err("usage: replay_keys KEYS_FILE POLICY[,POLICY...] SIZE[,SIZE...]".into());
    };
    let mut keys = Vec::new();
    for (n, line) in BufReader::new(std::fs::File::open(path)?)
        .lines()
        .enumerate()
    {
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        keys.push(
            line.parse::<u64>()
                .map_err(|e| format!("{path}:{}: {e}", n + 1))?,
        );
    }
    let sizes = sizes
        .split(',')
        .map(str::parse::<usize>)
        .collect::<Result<Vec<_>, _>>()?;
    for name in policies.split(',') {
        for &size in &sizes {
            let mut policy = reference(name, size, &keys)?;
            let start = Instant::now();
            let hits = keys.iter().filter(|&&k| policy.record(k)).count();
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "{name}\t{size}\t{hits}\t{}\t{:.2}\t{seconds:.3}\t{:.0}",
                keys.len(),
                100.0 * hits as f64 / keys.len().max(1) as f64,
                keys.len() as f64 / seconds.max(1e-9),
            );
        }
    }
    Ok(())
}
