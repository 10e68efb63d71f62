//! Reports of a replay: a hit-ratio table for people, JSON and CSV for programs, and a timing
//! table.
//!
//! [`write_table`] prints one block per trace, one row per policy and one column per size, in
//! percent; [`write_json`] and [`write_csv`] write one record per cell with the fields of
//! [`Record`] (`hit_ratio` as a fraction); [`write_timing`] prints the replay speed per cell.
//!
//! # Design
//!
//! The reports only read [`Outcome`]s, so any engine output can be printed several ways, and
//! every writer takes an `impl Write`: tests check the bytes, the CLI passes stdout or a file.
//! Percentages in the table have two decimals, like the reference table they are compared with;
//! the machine formats carry the exact counts, so nothing is lost to rounding. CSV fields are
//! quoted only when they must be (a trace name with a comma or quote), per RFC 4180.
//!
//! # References
//!
//! 1. RFC 4180: Common Format and MIME Type for Comma-Separated Values (CSV) Files.

use std::io::{self, Write};

use serde::Serialize;

use crate::replay::{Outcome, Trace};

/// One cell as written by [`write_json`] and [`write_csv`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record<'a> {
    /// The trace's name.
    pub trace: &'a str,
    /// The policy's name.
    pub policy: &'a str,
    /// The capacity in entries.
    pub size: usize,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
    /// `hits / requests`.
    pub hit_ratio: f64,
}

impl<'a> From<&'a Outcome> for Record<'a> {
    fn from(outcome: &'a Outcome) -> Self {
        Record {
            trace: &outcome.trace_name,
            policy: outcome.policy,
            size: outcome.size,
            requests: outcome.requests,
            hits: outcome.hits,
            hit_ratio: outcome.hit_ratio(),
        }
    }
}

/// Writes the outcomes as a JSON array of [`Record`]s.
pub fn write_json(mut out: impl Write, outcomes: &[Outcome]) -> io::Result<()> {
    let records: Vec<Record<'_>> = outcomes.iter().map(Record::from).collect();
    serde_json::to_writer_pretty(&mut out, &records)?;
    writeln!(out)
}

/// Writes the outcomes as CSV with a header: `trace,policy,size,requests,hits,hit_ratio`.
pub fn write_csv(mut out: impl Write, outcomes: &[Outcome]) -> io::Result<()> {
    writeln!(out, "trace,policy,size,requests,hits,hit_ratio")?;
    for o in outcomes {
        let r = Record::from(o);
        writeln!(
            out,
            "{},{},{},{},{},{}",
            csv_field(r.trace),
            csv_field(r.policy),
            r.size,
            r.requests,
            r.hits,
            r.hit_ratio
        )?;
    }
    Ok(())
}

/// A CSV field, quoted when it contains a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The column heading of a size: `7,625` or `7,625 (1%)`.
fn size_heading(outcome: &Outcome) -> String {
    match outcome.percent {
        Some(p) => format!("{} ({p}%)", thousands(outcome.size as u64)),
        None => thousands(outcome.size as u64),
    }
}

/// Prints the hit ratios (percent) per trace: a header line, then a policy x size table.
pub fn write_table(mut out: impl Write, traces: &[Trace], outcomes: &[Outcome]) -> io::Result<()> {
    for (t, trace) in traces.iter().enumerate() {
        let cells: Vec<&Outcome> = outcomes.iter().filter(|o| o.trace == t).collect();
        if cells.is_empty() {
            continue;
        }
        if t > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{}: {} requests, {} distinct keys; hit ratio % by cache size (entries)",
            trace.name,
            thousands(trace.requests()),
            thousands(trace.distinct as u64)
        )?;
        let mut policies: Vec<&str> = Vec::new();
        let mut sizes: Vec<&Outcome> = Vec::new();
        for cell in &cells {
            if !policies.contains(&cell.policy) {
                policies.push(cell.policy);
            }
            if !sizes.iter().any(|s| s.size == cell.size) {
                sizes.push(cell);
            }
        }
        let headings: Vec<String> = sizes.iter().map(|s| size_heading(s)).collect();
        let name_width = policies.iter().map(|p| p.len()).max().unwrap_or(0).max(6);
        let widths: Vec<usize> = headings.iter().map(|h| h.len().max(6)).collect();
        write!(out, "{:<name_width$}", "policy")?;
        for (heading, width) in headings.iter().zip(&widths) {
            write!(out, "  {heading:>width$}")?;
        }
        writeln!(out)?;
        for policy in &policies {
            write!(out, "{policy:<name_width$}")?;
            for (size, width) in sizes.iter().zip(&widths) {
                let cell = cells
                    .iter()
                    .find(|c| c.policy == *policy && c.size == size.size);
                match cell {
                    Some(c) => write!(out, "  {:>width$.2}", 100.0 * c.hit_ratio())?,
                    None => write!(out, "  {:>width$}", "-")?,
                }
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// Prints the speed of each replay loop: requests, wall seconds and millions of requests per
/// wall second, then CPU seconds of the replaying thread and millions per CPU second (`-` where
/// the platform does not tell CPU time).
pub fn write_timing(mut out: impl Write, outcomes: &[Outcome]) -> io::Result<()> {
    let trace_width = outcomes
        .iter()
        .map(|o| o.trace_name.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let policy_width = outcomes
        .iter()
        .map(|o| o.policy.len())
        .max()
        .unwrap_or(0)
        .max(6);
    writeln!(
        out,
        "{:<trace_width$}  {:<policy_width$}  {:>10}  {:>12}  {:>9}  {:>9}  {:>9}  {:>11}",
        "trace", "policy", "size", "requests", "seconds", "M req/s", "cpu s", "M req/cpu-s"
    )?;
    for o in outcomes {
        let (cpu, per_cpu) = match (o.cpu_seconds, o.requests_per_cpu_second()) {
            (Some(cpu), Some(rate)) => (format!("{cpu:.3}"), format!("{:.2}", rate / 1e6)),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        writeln!(
            out,
            "{:<trace_width$}  {:<policy_width$}  {:>10}  {:>12}  {:>9.3}  {:>9.2}  {:>9}  {:>11}",
            o.trace_name,
            o.policy,
            o.size,
            o.requests,
            o.seconds,
            o.requests_per_second() / 1e6,
            cpu,
            per_cpu
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn outcome(trace: usize, name: &str, policy: &'static str, size: usize, hits: u64) -> Outcome {
        Outcome {
            trace,
            trace_name: name.into(),
            policy,
            size,
            percent: None,
            requests: 8,
            hits,
            seconds: 0.5,
            cpu_seconds: None,
        }
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(13_208_930), "13,208,930");
    }

    #[test]
    fn csv_quotes_names_with_commas_and_quotes() {
        let outcomes = [outcome(0, "a,\"b\"", "lru", 2, 2)];
        let mut out = Vec::new();
        write_csv(&mut out, &outcomes).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "trace,policy,size,requests,hits,hit_ratio\n\"a,\"\"b\"\"\",lru,2,8,2,0.25\n"
        );
    }

    #[test]
    fn json_records_have_exactly_the_six_fields() {
        let outcomes = [outcome(0, "t", "opt", 3, 6)];
        let mut out = Vec::new();
        write_json(&mut out, &outcomes).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let record = value.as_array().unwrap()[0].as_object().unwrap();
        let mut keys: Vec<&str> = record.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["hit_ratio", "hits", "policy", "requests", "size", "trace"]
        );
        assert_eq!(record["hit_ratio"], 0.75);
    }

    #[test]
    fn table_one_row_per_policy_one_column_per_size() {
        let traces = [Trace::from_keys(
            "t".into(),
            PathBuf::from("t.keys"),
            vec![1, 2, 3, 1, 2, 3, 1, 2],
        )];
        let outcomes = [
            outcome(0, "t", "lru", 2, 0),
            outcome(0, "t", "lru", 3, 5),
            outcome(0, "t", "opt", 2, 3),
            outcome(0, "t", "opt", 3, 5),
        ];
        let mut out = Vec::new();
        write_table(&mut out, &traces, &outcomes).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].starts_with("t: 8 requests, 3 distinct keys"),
            "{text}"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["policy", "2", "3"]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["lru", "0.00", "62.50"]
        );
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["opt", "37.50", "62.50"]
        );
    }

    #[test]
    fn timing_reports_millions_per_second() {
        let mut out = Vec::new();
        write_timing(&mut out, &[outcome(0, "t", "lru", 2, 0)]).unwrap();
        let text = String::from_utf8(out).unwrap();
        // 8 requests in 0.5 s: 16 per second, 0.00 M; CPU time unknown.
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row, ["t", "lru", "2", "8", "0.500", "0.00", "-", "-"]);
        let mut out = Vec::new();
        let mut timed = outcome(0, "t", "lru", 2, 0);
        timed.requests = 4_000_000;
        timed.cpu_seconds = Some(0.25);
        write_timing(&mut out, &[timed]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row[4..], ["0.500", "8.00", "0.250", "16.00"]);
    }
}
