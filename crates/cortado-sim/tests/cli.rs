//! End-to-end tests of the `cortado-sim` binary on traces the tests write themselves, with hit
//! counts worked out by hand, plus its error handling and exit statuses.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::Scratch;
use serde_json::Value;

/// The hand-counted trace: 1 2 3 1 2 4 1 2 3 4.
const HAND: &str = "1\n2\n3\n1\n2\n4\n1\n2\n3\n4\n";

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cortado-sim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `(trace, hits)` of every record of a `--json` report.
fn trace_hits(json: &Path) -> Vec<(String, u64)> {
    let value: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["trace"].as_str().unwrap().to_owned(),
                r["hits"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Replays `trace` at `sizes` through `policies`; returns the table printed and the records of
/// `--json`.
fn replay_json(dir: &Scratch, trace: &Path, sizes: &str, policies: &str) -> (String, Vec<Value>) {
    let json = dir.path("out.json");
    let out = sim(&[
        "--trace",
        arg(trace),
        "--sizes",
        sizes,
        "--policies",
        policies,
        "--json",
        arg(&json),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (stdout(&out), value.as_array().unwrap().clone())
}

/// Replays `trace` with each case's extra arguments, which must exit 2 with its message (and no
/// panic) on stderr.
fn exit_two_with_messages(trace: &Path, cases: &[(&[&str], &str)]) {
    for &(extra, message) in cases {
        let mut args = vec!["--trace", arg(trace)];
        args.extend_from_slice(extra);
        let out = sim(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(message),
            "{extra:?}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

#[test]
fn json_hand_counted_lru_and_opt_field_by_field() {
    // LRU, 2 entries: every request misses (each key returns only after two others) -> 0 hits.
    // LRU, 3 entries: hits at positions 3, 4, 6, 7 (0-based); 4 then 3 evict -> 4 hits.
    // OPT (Belady, always admits), 2 entries: 3 evicts 2 (next use 4 vs 1's 3); hit 1; 2 evicts
    //   3; 4 evicts 2; hit 1; 2 evicts 1 (never again); 3 evicts 2 (never again); hit 4 -> 3.
    // OPT, 3 entries: hit 1, hit 2; 4 evicts 3 (farthest); hit 1, hit 2; 3 evicts 1 or 2
    //   (never again); hit 4 -> 5.
    let dir = Scratch::new("json-hand");
    let trace = dir.write("hand.lirs", HAND);
    let (table, records) = replay_json(&dir, &trace, "2,3", "lru,opt");
    let want = [("lru", 2, 0), ("lru", 3, 4), ("opt", 2, 3), ("opt", 3, 5)];
    assert_eq!(records.len(), want.len());
    for (record, (policy, size, hits)) in records.iter().zip(want) {
        let record = record.as_object().unwrap();
        assert_eq!(record.len(), 6, "{record:?}");
        assert_eq!(record["trace"], "hand");
        assert_eq!(record["policy"], policy);
        assert_eq!(record["size"], size);
        assert_eq!(record["requests"], 10);
        assert_eq!(record["hits"], hits);
        let ratio = record["hit_ratio"].as_f64().unwrap();
        assert!((ratio - hits as f64 / 10.0).abs() < 1e-12, "{ratio}");
    }
    // The table printed on stdout has the same numbers, in percent.
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec!["lru", "0.00", "40.00"]), "{table}");
    assert!(rows.contains(&vec!["opt", "30.00", "50.00"]), "{table}");
}

#[test]
fn csv_same_cells_as_json() {
    let dir = Scratch::new("csv-hand");
    let trace = dir.write("hand.keys", HAND);
    let csv = dir.path("out.csv");
    let out = sim(&[
        "--trace",
        arg(&trace),
        "--sizes",
        "3",
        "--policies",
        "lru",
        "--csv",
        arg(&csv),
        "--timing",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "trace,policy,size,requests,hits,hit_ratio\nhand,lru,3,10,4,0.4\n"
    );
    assert!(stdout(&out).contains("M req/s"), "{}", stdout(&out));
}

#[test]
fn several_traces_comma_list_and_repeated_flag() {
    let dir = Scratch::new("several");
    let a = dir.write("a.lirs", HAND);
    let b = dir.write("b.keys", "7\n7\n7\n");
    let c = dir.write("c.lirs", "5\n5\n");
    let json = dir.path("out.json");
    let list = format!("{},{}", arg(&a), arg(&b));
    let out = sim(&[
        "--trace",
        &list,
        "--trace",
        arg(&c),
        "--sizes",
        "3",
        "--policies",
        "lru",
        "--json",
        arg(&json),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = trace_hits(&json);
    assert_eq!(got, [("a".into(), 4), ("b".into(), 2), ("c".into(), 1)]);
}

#[test]
fn percent_sizes_of_tiny_trace_floor_at_ten_entries() {
    let dir = Scratch::new("floor");
    let trace = dir.write("hand.lirs", HAND);
    let (_, records) = replay_json(&dir, &trace, "1%,25%", "lru");
    // Both percentages of 4 distinct keys give the floor of 10 entries: one cell, 6 hits.
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["size"], 10);
    assert_eq!(records[0]["hits"], 6);
}

#[test]
fn bad_arguments_exit_two_with_message() {
    let dir = Scratch::new("bad-args");
    let trace = dir.write("hand.lirs", HAND);
    let cases: [(&[&str], &str); 6] = [
        (&["--sizes", "5x"], "invalid size `5x`"),
        (&["--sizes", "0"], "at least 1 entry"),
        (&["--policies", "lru,nope"], "unknown policy `nope`"),
        (&["--format", "lis"], "unknown trace format `lis`"),
        (&["--threads", "0"], "--threads"),
        (&["--plot", "out.jpg"], ".png or .svg"),
    ];
    exit_two_with_messages(&trace, &cases);
    // The policy error lists the valid names.
    let out = sim(&["--trace", arg(&trace), "--policies", "nope"]);
    assert!(stderr(&out).contains("wtinylfu-static"), "{}", stderr(&out));
    // No trace at all.
    assert_eq!(sim(&[]).status.code(), Some(2));
}

#[test]
fn redis_tunables_change_redis_lfu_only_and_refuse_unused_flags() {
    let dir = Scratch::new("redis-tunables");
    // Key 1 used 40 times, then three scans of 2..=40 with key 1 between scanned keys: a
    // stream where redis-lfu's choices depend on how its counters grow and decay, so a decay
    // period of one request and a log factor of 0 must change its hits (LRU's must not).
    let mut keys = String::new();
    for _ in 0..40 {
        keys.push_str("1\n");
    }
    for _ in 0..3 {
        for k in 2..=40 {
            keys.push_str(&format!("{k}\n1\n"));
        }
    }
    let trace = dir.write("fade.keys", &keys);
    let hits = |extra: &[&str]| {
        let json = dir.path("tuned.json");
        let mut args = vec![
            "--trace",
            arg(&trace),
            "--sizes",
            "10",
            "--policies",
            "redis-lfu,lru",
            "--json",
            arg(&json),
        ];
        args.extend_from_slice(extra);
        let out = sim(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let hits: Vec<u64> = value
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["hits"].as_u64().unwrap())
            .collect();
        hits
    };
    let default = hits(&[]);
    let tuned = hits(&["--lfu-decay-period", "1", "--lfu-log-factor", "0"]);
    assert_ne!(
        default[0], tuned[0],
        "redis-lfu unchanged: {default:?} {tuned:?}"
    );
    assert_eq!(default[1], tuned[1], "lru changed: {default:?} {tuned:?}");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--policies", "lru", "--lfu-log-factor", "3"],
            "--lfu-log-factor applies to redis-lfu",
        ),
        (
            &["--policies", "redis-lru", "--lfu-decay-period", "3"],
            "--lfu-decay-period applies",
        ),
        (
            &["--policies", "lfu", "--maxmemory-samples", "3"],
            "redis-lru and redis-lfu",
        ),
        (
            &["--policies", "redis-lru", "--maxmemory-samples", "0"],
            "--maxmemory-samples",
        ),
    ];
    exit_two_with_messages(&trace, &cases);
}

#[test]
fn malformed_trace_exits_one_naming_file_and_line() {
    let dir = Scratch::new("malformed");
    let trace = dir.write("bad.lirs", "1\n2\nthree\n4\n");
    let out = sim(&["--trace", arg(&trace), "--policies", "lru"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("bad.lirs:3"), "{message}");
    assert!(message.contains("three"), "{message}");
    // A missing file and an unknown extension are trace errors too.
    let out = sim(&["--trace", arg(&dir.path("absent.lirs"))]);
    assert_eq!(out.status.code(), Some(1));
    let unnamed = dir.write("trace.bin", HAND);
    let out = sim(&["--trace", arg(&unnamed)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("trace format"), "{}", stderr(&out));
    // ... unless the format is given.
    let out = sim(&["--trace", arg(&unnamed), "--format", "keys", "--sizes", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn gen_loop_exact_and_zipf_deterministic() {
    let out = sim(&["gen", "--dist", "loop", "--keys", "3", "--requests", "7"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "0\n1\n2\n0\n1\n2\n0\n");

    let args = [
        "gen",
        "--dist",
        "scan+zipf:0.9",
        "--keys",
        "1000",
        "--requests",
        "5000",
        "--seed",
        "7",
    ];
    let first = sim(&args);
    let second = sim(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(stdout(&first).lines().count(), 5000);
    let mut other = args;
    other[8] = "8";
    assert_ne!(sim(&other).stdout, first.stdout);

    // -o writes the same bytes, and the file replays as a keys trace.
    let dir = Scratch::new("gen");
    let file = dir.path("z.keys");
    let mut to_file = args.to_vec();
    to_file.extend(["-o", arg(&file)]);
    assert!(sim(&to_file).status.success());
    assert_eq!(std::fs::read(&file).unwrap(), first.stdout);
    let replay = sim(&["--trace", arg(&file), "--policies", "lru", "--sizes", "100"]);
    assert!(replay.status.success(), "{}", stderr(&replay));
    assert!(
        stdout(&replay).starts_with("z: 5,000 requests"),
        "{}",
        stdout(&replay)
    );
}

/// The alternating stream is what the adaptive policy's two memories are for: following the
/// short memory alone, the cache switches a little late at every phase and got 4.54% here
/// (LRU: 24.6% at 20,000-request phases; see `policy/experts.rs`).
#[test]
fn gen_alternate_wtinylfu_follows_phases_with_two_memories() {
    let dir = Scratch::new("alternate");
    let file = dir.path("alternate.keys");
    let gen = [
        "gen",
        "--dist",
        "alternate:20000",
        "--keys",
        "1500",
        "--requests",
        "400000",
        "-o",
        arg(&file),
    ];
    assert!(sim(&gen).status.success());
    let (_, records) = replay_json(&dir, &file, "1000", "wtinylfu");
    let ratio = records[0]["hit_ratio"].as_f64().unwrap();
    assert!(ratio > 0.10, "hit ratio {ratio}");
}

#[test]
fn gen_bad_distribution_exits_two() {
    let out = sim(&["gen", "--dist", "zipf:-1", "--keys", "3", "--requests", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("zipf:-1"), "{}", stderr(&out));
    let out = sim(&["gen", "--dist", "loop", "--keys", "0", "--requests", "7"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn verify_wrong_reference_number_exits_one() {
    let dir = Scratch::new("verify-mismatch");
    dir.write("hand.lirs", HAND);
    let header = "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\n";
    // Right: LRU 40.00 and Belady 50.00 at 3 entries (hand-counted above). The S3FIFO row is
    // wrong but report-only; the WTinyLFU row has no mapping and is ignored.
    let good = dir.write(
        "good.csv",
        &format!("{header}hand,3,75,LRU,40.00\nhand,3,75,Belady,50.00\nhand,3,75,S3FIFO,1.00\nhand,3,75,WTinyLFU,1.00\n"),
    );
    let bad = dir.write(
        "bad.csv",
        &format!("{header}hand,3,75,LRU,40.00\nhand,3,75,Belady,49.00\n"),
    );
    let run = |reference: &Path, policies: &str| {
        sim(&[
            "verify",
            "--reference",
            arg(reference),
            "--traces",
            arg(&dir.0),
            "--policies",
            policies,
        ])
    };
    let out = run(&good, "lru,opt,s3fifo");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("verify: PASS (3 cells)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("(report only)"), "{}", stdout(&out));

    let out = run(&bad, "lru,arc,opt");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("verify: FAIL (1 of 2"), "{text}");
    let failing: Vec<&str> = text.lines().filter(|l| l.ends_with("FAIL")).collect();
    assert_eq!(failing.len(), 1, "{text}");
    assert!(failing[0].contains("opt"), "{text}");
    assert!(failing[0].contains("+1.000"), "{text}");

    // An unverifiable policy is a usage error.
    let out = run(&good, "wtinylfu");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no reference column"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn plot_writes_svg_and_png_with_labels() {
    if let Err(error) = cortado_sim::plot::load_font() {
        eprintln!("note: {error}; plot test skipped");
        return;
    }
    let dir = Scratch::new("plot");
    let trace = dir.write("hand.lirs", HAND);
    let svg = dir.path("out.svg");
    let png = dir.path("out.PNG");
    for out_path in [&svg, &png] {
        let out = sim(&[
            "--trace",
            arg(&trace),
            "--sizes",
            "1,2,3,4,20",
            "--policies",
            "lru,arc,opt",
            "--plot",
            arg(out_path),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    for label in ["hand", "lru", "arc", "opt", "hit ratio (%)"] {
        assert!(text.contains(label), "no {label} in the SVG");
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
}

#[test]
fn sizes_count_far_above_distinct_keys_replays_without_aborting() {
    // 1,000,000,000 entries is within every policy's limit, and a cache that large holds the
    // hand trace's 4 keys like any other of at least 4: 6 hits. Pre-sizing the policies for the
    // capacity asked tried to allocate 36 GB (sieve) and aborted. (tinylfu-lru is left out: its
    // sketch is sized to the capacity by design, 8 bytes per entry.)
    let dir = Scratch::new("huge-size");
    let trace = dir.write("hand.keys", HAND);
    let (table, records) = replay_json(
        &dir,
        &trace,
        "1000000000",
        "wtinylfu,lru,sieve,arc,lirs,s3fifo,clock,fifo,opt",
    );
    assert_eq!(records.len(), 9, "{table}");
    for record in &records {
        assert_eq!(record["hits"], 6, "{record:?}");
    }
}

#[test]
fn json_and_csv_closed_stdout_still_written() {
    // `cortado-sim ... --json out.json | head -1`: once the reader is gone, writing the table
    // fails with a broken pipe, which is no error for a table nobody reads; the files asked for
    // must still be written. They were skipped, with exit status 0 and no message.
    let dir = Scratch::new("broken-pipe");
    let trace = dir.write("hand.keys", HAND);
    let json = dir.path("out.json");
    let csv = dir.path("out.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cortado-sim"))
        .args([
            "--trace",
            arg(&trace),
            "--sizes",
            "3",
            "--policies",
            "lru",
            "--json",
            arg(&json),
            "--csv",
            arg(&csv),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "trace,policy,size,requests,hits,hit_ratio\nhand,lru,3,10,4,0.4\n"
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value[0]["hits"], 4);
}

#[test]
fn verify_mismatch_closed_stdout_exits_one() {
    // `cortado-sim verify | head`: the report's broken pipe must not turn a failed
    // verification into success. It exited 0.
    let dir = Scratch::new("verify-broken-pipe");
    dir.write("hand.lirs", HAND);
    let bad = dir.write(
        "bad.csv",
        "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nhand,3,75,Belady,49.00\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_cortado-sim"))
        .args([
            "verify",
            "--reference",
            arg(&bad),
            "--traces",
            arg(&dir.0),
            "--policies",
            "opt",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn format_flag_contradicting_trace_name_exits_two() {
    // `--format` gives the format of traces whose names do not say it. Given with a trace named
    // `.lirs`, it read that trace as i32be records: the hand trace's 20 bytes became 5 garbage
    // keys, replayed with exit status 0.
    let dir = Scratch::new("format-conflict");
    let named = dir.write("hand.lirs", HAND);
    let unnamed = dir.write("other.bin", "\0\0\0\x07\0\0\0\x07");
    let out = sim(&[
        "--trace",
        arg(&named),
        "--trace",
        arg(&unnamed),
        "--format",
        "i32be",
        "--sizes",
        "3",
        "--policies",
        "lru",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("hand.lirs"), "{}", stderr(&out));
    assert!(stderr(&out).contains("i32be"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    // A flag that agrees with the name (in any case) is no conflict: LRU at 3 entries hits 4
    // of the hand trace's 10 requests (counted in `json_hand_counted_lru_and_opt_field_by_field`).
    let out = sim(&[
        "--trace",
        arg(&named),
        "--format",
        "LIRS",
        "--sizes",
        "3",
        "--policies",
        "lru",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("40.00"), "{}", stdout(&out));
}

#[test]
fn json_two_traces_same_name_records_tell_them_apart() {
    // `a/x.lirs` and `b/x.lirs` were both reported as trace `x`: their records had the same
    // (trace, policy, size) and different hits, and could not be told apart.
    let dir = Scratch::new("same-name");
    std::fs::create_dir_all(dir.path("a")).unwrap();
    std::fs::create_dir_all(dir.path("b")).unwrap();
    // With 10 entries nothing is evicted: hits are the repeats, 1 and 0.
    let a = dir.write("a/x.lirs", "1\n1\n2\n");
    let b = dir.write("b/x.lirs", "1\n2\n3\n");
    let json = dir.path("out.json");
    // `a` is given twice: the same file is replayed once, as repeated policies and sizes are.
    let out = sim(&[
        "--trace",
        arg(&a),
        "--trace",
        arg(&b),
        "--trace",
        arg(&a),
        "--sizes",
        "10",
        "--policies",
        "lru",
        "--json",
        arg(&json),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = trace_hits(&json);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_ne!(got[0].0, got[1].0, "{got:?}");
    assert!(Path::new(&got[0].0).ends_with("a/x.lirs"), "{got:?}");
    assert_eq!(got[0].1, 1, "{got:?}");
    assert!(Path::new(&got[1].0).ends_with("b/x.lirs"), "{got:?}");
    assert_eq!(got[1].1, 0, "{got:?}");
}
