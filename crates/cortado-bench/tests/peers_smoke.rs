//! Smoke tests of the `peers` binary: its memory-child protocol with the counting allocator
//! installed, and a tiny end-to-end run. Sizes are small so the suite stays fast; the numbers
//! themselves are the benchmark's business, these only check that they are plausible.

use std::path::Path;
use std::process::Command;

use cortado_bench::peers::memory::{measure_in_child, Scenario};
use cortado_bench::peers::Peer;

const ENTRIES: u64 = 20_000;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_peers"))
}

#[test]
fn memory_child_every_cache_reports_plausible_footprint() {
    for peer in Peer::ALL {
        let footprint = measure_in_child(exe(), peer, Scenario::NoExpiry, ENTRIES)
            .unwrap_or_else(|e| panic!("{peer}: {e}"))
            .unwrap_or_else(|| panic!("{peer}: no-expiry is always supported"));
        assert_eq!(footprint.capacity, ENTRIES);
        // Storing a u64 key and a u64 value takes 16 bytes at the very least.
        assert!(
            footprint.full_per_entry() >= 16.0,
            "{peer}: {} bytes per entry is below the payload",
            footprint.full_per_entry()
        );
        // And no cache here should need a kilobyte per small entry.
        assert!(
            footprint.evicting_per_entry() < 1_024.0,
            "{peer}: {footprint}"
        );
        // Sharded caches may lose a few slots to uneven shards, and quick_cache's bound is
        // approximate.
        let low = ENTRIES * 9 / 10;
        let high = ENTRIES * 11 / 10;
        assert!(
            (low..=high).contains(&footprint.full_entries),
            "{peer}: {footprint}"
        );
        assert!(footprint.evicting_entries <= high, "{peer}: {footprint}");
    }
}

#[test]
fn memory_child_ttl_is_unsupported_exactly_without_expiry() {
    for peer in Peer::ALL {
        let measured = measure_in_child(exe(), peer, Scenario::Ttl, 1_000)
            .unwrap_or_else(|e| panic!("{peer}: {e}"));
        let has_ttl = matches!(
            peer,
            Peer::Cortado | Peer::CortadoTtl | Peer::CortadoRefresh | Peer::Moka | Peer::MiniMoka
        );
        assert_eq!(measured.is_some(), has_ttl, "{peer}");
    }
}

#[test]
fn memory_child_bad_arguments_fail_with_usage() {
    let output = Command::new(exe())
        .args(["--memory-child", "memcached", "no-expiry", "10"])
        .output()
        .expect("the binary starts");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage"));
}

#[test]
fn run_tiny_prints_every_section_and_json() {
    let json = std::env::temp_dir().join(format!("peers-smoke-{}.json", std::process::id()));
    let output = Command::new(exe())
        .args(["--quick", "--ops", "2000", "--runs", "1", "--threads", "2"])
        .args(["--caches", "cortado,quick_cache,lru_mutex", "--json"])
        .arg(&json)
        .output()
        .expect("the binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for heading in [
        "Throughput, Mops/s",
        "ratio to quick_cache",
        "Hit ratio, `drift+zipf:0.99`",
        "Heap bytes per entry",
        "Goals",
    ] {
        assert!(
            stdout.contains(heading),
            "missing {heading:?} in:\n{stdout}"
        );
    }
    let written = std::fs::read_to_string(&json).expect("the JSON file was written");
    let _ = std::fs::remove_file(&json);
    assert!(written.starts_with('{') && written.trim_end().ends_with('}'));
    assert!(written.contains("\"cache\": \"cortado\""));
}
