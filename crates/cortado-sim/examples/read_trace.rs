//! Loads trace files, reports how long `trace::load` takes, and optionally writes the keys in the
//! canonical `keys` format for comparison with `trace2keys.py`.
//!
//! `cargo run --release -p cortado-sim --example read_trace -- [--out DIR] FILE...`
//!
//! With `--out DIR`, writes `DIR/NAME.keys` for each trace, byte-comparable (`cmp`) with
//! `python3 trace2keys.py FILE -o NAME.keys`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cortado_sim::{gen, trace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out: Option<PathBuf> = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--out" {
            out = Some(args.next().ok_or("--out needs a directory")?.into());
        } else {
            files.push(PathBuf::from(arg));
        }
    }
    if files.is_empty() {
        return Err("usage: read_trace [--out DIR] FILE...".into());
    }
    for file in &files {
        let start = Instant::now();
        let keys = trace::load(file, None)?;
        let seconds = start.elapsed().as_secs_f64();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        println!(
            "{:<28} requests {:>11} distinct {:>10} load {:>8.1} ms ({:.1} M requests/s)",
            trace::name(file),
            keys.len(),
            sorted.len(),
            seconds * 1e3,
            keys.len() as f64 / seconds / 1e6
        );
        if let Some(dir) = &out {
            let path = Path::new(dir).join(format!("{}.keys", trace::name(file)));
            let file = std::fs::File::create(&path)?;
            gen::write_keys(file, keys.iter().copied())?;
        }
    }
    Ok(())
}
