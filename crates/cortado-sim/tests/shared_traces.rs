//! Reads every shared trace and checks its request and distinct-key counts against the table in
//! `shared/traces/README.md`, an independent source (computed by `trace2keys.py --stats`).
//!
//! The traces live outside the repository: `../shared/traces` from the repository root, or the
//! directory named by `CORTADO_TRACES`. Without them the test prints a note and passes.

mod common;

use common::traces_dir;
use cortado_sim::trace;

/// `(file, requests, distinct keys)` as published in the README.
const TRACES: [(&str, usize, usize); 21] = [
    ("loop.lirs.gz", 505_500, 1_011),
    ("2_pools.lirs.gz", 100_000, 9_939),
    ("cs.lirs.gz", 6_781, 1_409),
    ("cpp.lirs.gz", 9_047, 1_223),
    ("gli.lirs.gz", 6_015, 2_529),
    ("ps.lirs.gz", 10_448, 3_083),
    ("sprite.lirs.gz", 133_996, 7_075),
    ("multi1.lirs.gz", 15_858, 2_606),
    ("multi2.lirs.gz", 26_311, 5_684),
    ("multi3.lirs.gz", 30_241, 7_454),
    ("scan.lirs.gz", 50_025, 2_001),
    ("zigzag.lirs.gz", 52_001, 2_001),
    ("oltp.arc.gz", 914_145, 186_880),
    ("p3.arc.gz", 3_912_296, 762_543),
    ("p12.arc.gz", 13_208_930, 3_153_310),
    ("orm-busy.i32be.gz", 5_000_000, 76_349),
    ("web07.i32be.gz", 76_118, 20_484),
    ("scarab-recs.i64be.gz", 1_245_184, 258_368),
    ("corda-vaultservice.i64be.gz", 135_702, 90_468),
    ("twitter-c52.csv.gz", 1_000_000, 143_542),
    ("cloudphysics-io.csv.gz", 113_872, 48_974),
];

#[test]
fn shared_traces_counts_match_readme() {
    let dir = traces_dir();
    if !dir.is_dir() {
        eprintln!(
            "note: {} not found (set CORTADO_TRACES); shared trace counts not checked",
            dir.display()
        );
        return;
    }
    let mut failures = Vec::new();
    for (file, requests, distinct) in TRACES {
        let mut keys = match trace::load(&dir.join(file), None) {
            Ok(keys) => keys,
            Err(error) => {
                failures.push(format!("{error}"));
                continue;
            }
        };
        let got_requests = keys.len();
        keys.sort_unstable();
        keys.dedup();
        if (got_requests, keys.len()) != (requests, distinct) {
            failures.push(format!(
                "{file}: {got_requests} requests, {} distinct; README: {requests}, {distinct}",
                keys.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
