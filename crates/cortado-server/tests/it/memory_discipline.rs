//! Memory discipline under `maxmemory` (issue 35), the short form of the `server-memory` bench:
//! the built binary under 50 clients for a few seconds at `maxmemory 32mb`, for an LRU policy,
//! W-TinyLFU and `noeviction`.

use std::process::Command;

use crate::common::binary::BINARY;

/// One `result ...` line of `server-memory`, as `name=value` pairs.
struct CellResult(Vec<(String, String)>);

impl CellResult {
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("result ")?;
        Some(Self(
            rest.split_whitespace()
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        ))
    }

    fn text(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no '{name}' in the result line"))
    }

    fn number(&self, name: &str) -> u64 {
        self.text(name)
            .parse()
            .unwrap_or_else(|_| panic!("'{name}' is not a number"))
    }
}

#[test]
fn memory_discipline_fifty_clients_rss_within_bound_and_no_wrong_value() {
    let policies = ["allkeys-lru", "allkeys-wtinylfu", "noeviction"];
    let output = Command::new(env!("CARGO_BIN_EXE_server-memory"))
        .args([
            "--servers",
            "cortado",
            "--cortado",
            BINARY,
            "--clients",
            "50",
            "--seconds",
            "6",
            "--maxmemory",
            "32mb",
            "--policies",
            &policies.join(","),
        ])
        .output()
        .expect("run server-memory");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let cells: Vec<CellResult> = stdout.lines().filter_map(CellResult::parse).collect();
    assert_eq!(
        cells.len(),
        policies.len(),
        "one result per policy:\n{report}"
    );
    for cell in &cells {
        let policy = cell.text("policy");
        assert_eq!(cell.text("aborted"), "false", "{policy}:\n{report}");
        assert!(
            cell.number("max_rss") <= cell.number("bound"),
            "{policy}: RSS above maxmemory x 1.1 + 32 MB:\n{report}"
        );
        assert_eq!(cell.number("wrong"), 0, "{policy}: wrong values:\n{report}");
        assert_eq!(cell.number("other_errors"), 0, "{policy}:\n{report}");
        if policy != "noeviction" {
            assert_eq!(cell.number("oom"), 0, "{policy}: OOM replies:\n{report}");
        }
        // The load ran: values were written and read back.
        assert!(cell.number("sets") > 1000, "{policy}:\n{report}");
        assert!(cell.number("hits") > 0, "{policy}:\n{report}");
    }
    assert!(output.status.success(), "server-memory failed:\n{report}");
}
