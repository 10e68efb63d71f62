//! Checks against the published reference table (`shared/reference/hit-ratios.csv`), an
//! independent source: libCacheSim's hit ratios and its size column.
//!
//! The traces and the table live outside the repository (see `common`); without them the tests
//! print a note and pass. Only the small LIRS-format traces are replayed, to stay fast in the
//! test profile.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{present, reference_csv, traces_dir};
use cortado_sim::verify::read_reference;
use serde_json::Value;

/// The LIRS-format traces of the shared set.
const LIRS_TRACES: &str = "loop,2_pools,cs,cpp,gli,ps,sprite,multi1,multi2,multi3,scan,zigzag";

#[test]
fn verify_lru_arc_opt_on_lirs_traces_within_hundredth() {
    let (traces, reference) = (traces_dir(), reference_csv());
    if !present(&traces, "reference verification") || !present(&reference, "verification") {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_cortado-sim"))
        .args(["verify", "--policies", "lru,arc,opt", "--tolerance", "0.01"])
        .args(["--traces-only", LIRS_TRACES, "--quiet"])
        .arg("--reference")
        .arg(&reference)
        .arg("--traces")
        .arg(&traces)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 12 traces x 4 sizes x 3 policies, none skipped.
    assert!(text.contains("verify: PASS (144 cells)"), "{text}");
    assert!(!text.contains("skipped"), "{text}");
}

#[test]
fn percent_sizes_reproduce_reference_size_column_and_lru() {
    let (traces, reference) = (traces_dir(), reference_csv());
    if !present(&traces, "size rule check") || !present(&reference, "size rule check") {
        return;
    }
    // multi1 (25%: 651.5 -> 652), sprite (10%: 707.5 -> 708), cs (1%: 14.09 -> 14).
    let rows = read_reference(&reference).unwrap();
    let dir = common::Scratch::new("reference-sizes");
    let json = dir.path("out.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cortado-sim"));
    for name in ["multi1", "sprite", "cs"] {
        command
            .arg("--trace")
            .arg(traces.join(format!("{name}.lirs.gz")));
    }
    let out = command
        .args(["--sizes", "1%,5%,10%,25%", "--policies", "lru,arc", "-q"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = value.as_array().unwrap();
    assert_eq!(records.len(), 3 * 4 * 2);
    for name in ["multi1", "sprite", "cs"] {
        let ours: BTreeSet<u64> = records
            .iter()
            .filter(|r| r["trace"] == name)
            .map(|r| r["size"].as_u64().unwrap())
            .collect();
        let theirs: BTreeSet<u64> = rows
            .iter()
            .filter(|r| r.trace == name)
            .map(|r| r.size as u64)
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
    for record in records {
        let column = match record["policy"].as_str().unwrap() {
            "lru" => "LRU",
            _ => "ARC",
        };
        let row = rows
            .iter()
            .find(|r| {
                r.trace == record["trace"].as_str().unwrap()
                    && r.size as u64 == record["size"].as_u64().unwrap()
                    && r.policy == column
            })
            .unwrap();
        let ours = 100.0 * record["hit_ratio"].as_f64().unwrap();
        assert!(
            (ours - row.hit_ratio_pct).abs() <= 0.01,
            "{record}: reference {}",
            row.hit_ratio_pct
        );
    }
}

/// The adaptive policy's hit ratio (%) on each named trace at 25% of its distinct keys.
fn wtinylfu_at_quarter(traces: &std::path::Path, files: &[&str]) -> Vec<(String, f64)> {
    let dir = common::Scratch::new("wtinylfu-quarter");
    let json = dir.path("out.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cortado-sim"));
    for file in files {
        command.arg("--trace").arg(traces.join(file));
    }
    let out = command
        .args(["--sizes", "25%", "--policies", "wtinylfu", "-q"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let ratio = 100.0 * r["hit_ratio"].as_f64().unwrap();
            (r["trace"].as_str().unwrap().to_string(), ratio)
        })
        .collect()
}

/// `scan` and `cs` want the admission margin (a candidate must be seen twice more often than
/// the victim): without it they got 20.67% and 17.15%. `cloudphysics-io` wants none: with the
/// margin always on it got 35.65%. Only a policy that measures which margin pays passes all
/// three (the best reference policies: 23.75%, 19.89%, 38.80%).
#[test]
fn wtinylfu_margin_scan_cs_on_cloudphysics_off() {
    let traces = traces_dir();
    if !present(&traces, "admission margin check") {
        return;
    }
    let files = ["scan.lirs.gz", "cs.lirs.gz", "cloudphysics-io.csv.gz"];
    let floors = [("scan", 23.0), ("cs", 19.5), ("cloudphysics-io", 38.0)];
    let ratios = wtinylfu_at_quarter(&traces, &files);
    for (trace, floor) in floors {
        let (_, ratio) = ratios.iter().find(|(t, _)| t == trace).unwrap();
        assert!(*ratio >= floor, "{trace} at 25%: {ratio:.2}% < {floor}%");
    }
}
