//! Smoke tests of the `replay` binary: every cache replays a short stream and reports hit
//! ratios that a warm second pass can only improve on; bad arguments fail with a message.

use std::process::Command;

fn replay(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(args)
        .output()
        .expect("the replay binary runs")
}

/// The two hit ratios on the binary's output line.
fn hit_ratios(stdout: &str) -> (f64, f64) {
    let numbers: Vec<f64> = stdout
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|word| word.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

#[test]
fn replay_every_cache_warm_pass_hits_at_least_as_often() {
    for cache in ["cortado", "quick_cache", "moka", "mini_moka", "lru_mutex"] {
        // B: 100,000 keys fit the cache; 20,000 Zipf draws repeat the hot ones.
        let output = replay(&[cache, "B", "20000"]);
        assert!(output.status.success(), "{cache}: {output:?}");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        assert!(stdout.starts_with(cache), "{cache}: {stdout}");
        let (fill, measured) = hit_ratios(&stdout);
        assert!(fill > 0.1 && fill < 1.0, "{cache}: {stdout}");
        assert!(measured >= fill && measured <= 1.0, "{cache}: {stdout}");
    }
}

#[test]
fn replay_unknown_cache_or_bad_ops_fails_with_usage() {
    for args in [
        &["nope", "A"][..],
        &["cortado", "C"],
        &["cortado", "A", "0"],
        &[],
    ] {
        let output = replay(args);
        assert!(!output.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8(output.stderr).expect("utf-8");
        assert!(stderr.contains("usage: replay"), "{args:?}: {stderr}");
    }
}
