//! Checks our policies against the published reference hit ratios
//! (`shared/reference/hit-ratios.csv`), cell by cell.
//!
//! [`verify`] replays every reference row it can (its trace file is found in the traces
//! directory, its policy column is mapped to one of ours by [`MAPPINGS`]) at the row's size and
//! returns a [`Verification`] with each difference; it passes when no *enforced* policy differs
//! by more than the tolerance.
//!
//! # Design
//!
//! - **What must match, and what is only reported.** LRU, ARC and Belady are deterministic, so a
//!   correct implementation reproduces libCacheSim's numbers to the table's two decimals: `lru`
//!   (the library's), `arc` and `opt` (Belady without bypass, as libCacheSim runs it) are
//!   enforced. `lirs`, `s3fifo` and `sieve` follow libCacheSim too, but the reference README
//!   documents artifacts (S3-FIFO's tiny-cache cells), so they are reported, never failed on.
//!   W-TinyLFU is not mapped: libCacheSim's variant (a counting Bloom filter, a static window)
//!   is not the library's algorithm.
//! - **Units.** The table is in percent with two decimals, so the tolerance is in percentage
//!   points: the default [`DEFAULT_TOLERANCE`] (0.01) allows the table's rounding (at most
//!   0.005) and nothing an algorithmic difference would produce on these traces.
//! - **Sizes from the table.** Each row's `size` column is replayed as is, not recomputed from
//!   the percentage, so a disagreement on the size rule cannot hide behind a matching hit ratio
//!   (the size rule has its own tests in [`crate::replay`]).
//! - **Traces by name.** A trace `NAME` is the file `NAME.FORMAT[.gz]` of the traces directory;
//!   a reference trace with no file is listed as missing, not an error, so a partial trace set
//!   still verifies what it can.
//!
//! # References
//!
//! 1. `../shared/reference/README.md` (from the repository root): the table's columns,
//!    policies and artifacts.
//! 2. 1a1a11a/libCacheSim 0.3.5, the simulator that produced the table.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::replay::{self, Cell, ReplayError, RunOptions, Trace};
use crate::trace::{self, Format};

/// Default largest allowed difference, in percentage points.
pub const DEFAULT_TOLERANCE: f64 = 0.01;

/// Slack on the tolerance for the float error of `ours - reference`, in percentage points: a
/// difference of exactly the tolerance (75 - 74.99) comes out as 0.010000000000005.
const SLACK: f64 = 1e-9;

/// One of our policies and the reference column it is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Our policy's name.
    pub ours: &'static str,
    /// The `policy` value in the reference table.
    pub reference: &'static str,
    /// Whether a difference beyond the tolerance fails the verification.
    pub enforced: bool,
}

/// The policies [`verify`] can check; see the [module docs](self).
pub const MAPPINGS: &[Mapping] = &[
    Mapping {
        ours: "lru",
        reference: "LRU",
        enforced: true,
    },
    Mapping {
        ours: "arc",
        reference: "ARC",
        enforced: true,
    },
    Mapping {
        ours: "opt",
        reference: "Belady",
        enforced: true,
    },
    Mapping {
        ours: "lirs",
        reference: "LIRS",
        enforced: false,
    },
    Mapping {
        ours: "s3fifo",
        reference: "S3FIFO",
        enforced: false,
    },
    Mapping {
        ours: "sieve",
        reference: "SIEVE",
        enforced: false,
    },
];

/// The policies verified by default.
pub const DEFAULT_POLICIES: &[&str] = &["lru", "arc", "opt"];

/// The mapping of our policy `name` (case-insensitive), if it can be verified.
pub fn mapping(name: &str) -> Option<Mapping> {
    MAPPINGS
        .iter()
        .copied()
        .find(|m| m.ours.eq_ignore_ascii_case(name))
}

/// One row of the reference table.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceRow {
    /// The trace's name.
    pub trace: String,
    /// The capacity in entries.
    pub size: usize,
    /// The reference policy's column name (`LRU`, `Belady`...).
    pub policy: String,
    /// The hit ratio in percent.
    pub hit_ratio_pct: f64,
}

/// Why a verification could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum VerifyError {
    /// The reference file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A line of the reference file does not fit its format.
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A policy that has no reference column.
    Unmapped {
        /// The name given.
        name: String,
    },
    /// `--traces-only` named a trace the reference table does not have.
    UnknownTrace {
        /// The name given.
        name: String,
    },
    /// No reference row could be replayed.
    NothingToVerify,
    /// A replay failed.
    Replay(ReplayError),
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            VerifyError::Malformed { path, line, reason } => {
                write!(f, "{}:{line}: {reason}", path.display())
            }
            VerifyError::Unmapped { name } => write!(
                f,
                "policy `{name}` has no reference column (verifiable: {})",
                MAPPINGS
                    .iter()
                    .map(|m| format!("{}->{}", m.ours, m.reference))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            VerifyError::UnknownTrace { name } => {
                write!(f, "trace `{name}` is not in the reference table")
            }
            VerifyError::NothingToVerify => write!(
                f,
                "no reference row could be replayed (no trace file found for the selected traces)"
            ),
            VerifyError::Replay(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for VerifyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            VerifyError::Io { source, .. } => Some(source),
            VerifyError::Replay(error) => Some(error),
            _ => None,
        }
    }
}

impl From<ReplayError> for VerifyError {
    fn from(error: ReplayError) -> Self {
        VerifyError::Replay(error)
    }
}

/// The columns the reference file must start with.
const HEADER: [&str; 5] = [
    "trace",
    "size",
    "size_pct_of_distinct",
    "policy",
    "hit_ratio_pct",
];

/// Reads a reference table: header `trace,size,size_pct_of_distinct,policy,hit_ratio_pct`.
pub fn read_reference(path: &Path) -> Result<Vec<ReferenceRow>, VerifyError> {
    let text = std::fs::read_to_string(path).map_err(|source| VerifyError::Io {
        path: path.to_owned(),
        source,
    })?;
    let malformed = |line, reason: String| VerifyError::Malformed {
        path: path.to_owned(),
        line,
        reason,
    };
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, header)) if header.trim().split(',').eq(HEADER) => {}
        _ => {
            return Err(malformed(
                1,
                format!("expected the header `{}`", HEADER.join(",")),
            ))
        }
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let [trace, size, _pct, policy, ratio] = fields[..] else {
            return Err(malformed(
                i + 1,
                format!("expected 5 fields, found {}", fields.len()),
            ));
        };
        // `parse` alone would take `+5`; the table's sizes are plain digits.
        let size = Some(size)
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                malformed(
                    i + 1,
                    format!("size `{size}` is not a whole number of entries, at least 1"),
                )
            })?;
        let hit_ratio_pct = ratio
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=100.0).contains(r))
            .ok_or_else(|| malformed(i + 1, format!("hit ratio `{ratio}` is not in 0..=100")))?;
        rows.push(ReferenceRow {
            trace: trace.to_owned(),
            size,
            policy: policy.to_owned(),
            hit_ratio_pct,
        });
    }
    Ok(rows)
}

/// The trace files of a directory by trace name (`NAME.FORMAT[.gz]`; other files are ignored).
/// Of several files with one name (`p3.arc.gz` and the `p3.keys.gz` made from it), the path
/// that sorts first is taken, so the choice does not depend on the directory's order.
pub fn trace_files(dir: &Path) -> Result<HashMap<String, PathBuf>, VerifyError> {
    let entries = std::fs::read_dir(dir).map_err(|source| VerifyError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut files = HashMap::new();
    for entry in entries {
        let path = entry
            .map_err(|source| VerifyError::Io {
                path: dir.to_owned(),
                source,
            })?
            .path();
        if path.is_file() && Format::from_path(&path).is_some() {
            files
                .entry(trace::name(&path))
                .and_modify(|kept: &mut PathBuf| {
                    if path < *kept {
                        kept.clone_from(&path);
                    }
                })
                .or_insert(path);
        }
    }
    Ok(files)
}

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The reference table.
    pub reference: PathBuf,
    /// The directory of trace files.
    pub traces: PathBuf,
    /// Our policies to check (each must have a [`Mapping`]).
    pub policies: Vec<String>,
    /// Only these traces, if given.
    pub traces_only: Option<Vec<String>>,
    /// Largest allowed difference for enforced policies, in percentage points.
    pub tolerance: f64,
    /// Threads, seed and progress of the replays.
    pub run: RunOptions,
}

/// One compared cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The trace's name.
    pub trace: String,
    /// The capacity in entries.
    pub size: usize,
    /// The policy compared.
    pub mapping: Mapping,
    /// Our hit ratio, in percent.
    pub ours_pct: f64,
    /// The reference hit ratio, in percent.
    pub reference_pct: f64,
}

impl Comparison {
    /// `ours - reference`, in percentage points.
    pub fn diff(&self) -> f64 {
        self.ours_pct - self.reference_pct
    }
}

/// The result of [`verify`].
#[derive(Clone, Debug)]
pub struct Verification {
    /// Every compared cell, by trace (reference order), size, then policy.
    pub comparisons: Vec<Comparison>,
    /// Reference traces skipped for want of a file.
    pub missing: Vec<String>,
    /// The tolerance applied, in percentage points.
    pub tolerance: f64,
}

impl Verification {
    /// Whether `c` differs by more than the tolerance.
    fn beyond(&self, c: &Comparison) -> bool {
        c.diff().abs() > self.tolerance + SLACK
    }

    /// Whether `c` fails the verification.
    pub fn fails(&self, c: &Comparison) -> bool {
        c.mapping.enforced && self.beyond(c)
    }

    /// Whether no enforced policy differs by more than the tolerance.
    pub fn passed(&self) -> bool {
        !self.comparisons.iter().any(|c| self.fails(c))
    }

    /// Prints every comparison: trace, size, policy, ours, reference, diff, and a mark.
    pub fn write_table(&self, mut out: impl Write) -> io::Result<()> {
        let width = self
            .comparisons
            .iter()
            .map(|c| c.trace.len())
            .max()
            .unwrap_or(0)
            .max(5);
        writeln!(
            out,
            "{:<width$}  {:>8}  {:<7}  {:>8}  {:>9}  {:>7}",
            "trace", "size", "policy", "ours %", "reference", "diff"
        )?;
        for c in &self.comparisons {
            let mark = if self.fails(c) {
                "  FAIL"
            } else if self.beyond(c) {
                "  (report only)"
            } else {
                ""
            };
            writeln!(
                out,
                "{:<width$}  {:>8}  {:<7}  {:>8.3}  {:>9.2}  {:>+7.3}{mark}",
                c.trace,
                c.size,
                c.mapping.ours,
                c.ours_pct,
                c.reference_pct,
                c.diff()
            )?;
        }
        Ok(())
    }

    /// Prints one line per policy (cells, within tolerance, largest and mean difference) and a
    /// verdict.
    pub fn write_summary(&self, mut out: impl Write) -> io::Result<()> {
        let mut seen: Vec<Mapping> = Vec::new();
        for c in &self.comparisons {
            if !seen.contains(&c.mapping) {
                seen.push(c.mapping);
            }
        }
        for m in seen {
            let cells: Vec<&Comparison> =
                self.comparisons.iter().filter(|c| c.mapping == m).collect();
            let within = cells.iter().filter(|c| !self.beyond(c)).count();
            let largest = cells.iter().map(|c| c.diff().abs()).fold(0.0, f64::max);
            let mean = cells.iter().map(|c| c.diff().abs()).sum::<f64>() / cells.len() as f64;
            writeln!(
                out,
                "{:<7} vs {:<7} {:>3}/{:<3} cells within {} pp; max |diff| {:.3}, mean {:.4}{}",
                m.ours,
                m.reference,
                within,
                cells.len(),
                self.tolerance,
                largest,
                mean,
                if m.enforced { "" } else { " (report only)" }
            )?;
        }
        if !self.missing.is_empty() {
            writeln!(out, "skipped (no trace file): {}", self.missing.join(", "))?;
        }
        let failed = self.comparisons.iter().filter(|c| self.fails(c)).count();
        if failed == 0 {
            writeln!(out, "verify: PASS ({} cells)", self.comparisons.len())
        } else {
            writeln!(
                out,
                "verify: FAIL ({failed} of {} cells beyond {} pp)",
                self.comparisons.len(),
                self.tolerance
            )
        }
    }
}

/// Replays the reference rows selected by `options` and compares; see the [module docs](self).
pub fn verify(options: &VerifyOptions) -> Result<Verification, VerifyError> {
    let mappings = options
        .policies
        .iter()
        .map(|name| {
            mapping(name).ok_or_else(|| VerifyError::Unmapped {
                name: name.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rows = read_reference(&options.reference)?;
    let mut names: Vec<&str> = Vec::new();
    for row in &rows {
        if !names.contains(&row.trace.as_str()) {
            names.push(&row.trace);
        }
    }
    if let Some(only) = &options.traces_only {
        if let Some(unknown) = only.iter().find(|n| !names.contains(&n.as_str())) {
            return Err(VerifyError::UnknownTrace {
                name: unknown.clone(),
            });
        }
        names.retain(|n| only.iter().any(|o| o == n));
    }
    let files = trace_files(&options.traces)?;
    let (present, missing): (Vec<&str>, Vec<&str>) =
        names.iter().partition(|n| files.contains_key(**n));
    let paths: Vec<PathBuf> = present.iter().map(|n| files[*n].clone()).collect();

    // Cells per reference row, in table order; a row and its cell share an index.
    let selected: Vec<(&ReferenceRow, Mapping, usize)> = rows
        .iter()
        .filter_map(|row| {
            let m = mappings.iter().find(|m| m.reference == row.policy)?;
            let t = present.iter().position(|n| *n == row.trace)?;
            Some((row, *m, t))
        })
        .collect();
    if selected.is_empty() {
        return Err(VerifyError::NothingToVerify);
    }
    let cells: Vec<Cell> = selected
        .iter()
        .map(|&(row, m, t)| Cell {
            trace: t,
            policy: m.ours,
            size: row.size,
            percent: None,
        })
        .collect();
    let outcomes = options.run.install(|| -> Result<_, ReplayError> {
        let traces: Vec<Trace> = replay::load_traces(&paths, None, &options.run)?;
        replay::run(&traces, &cells, &options.run)
    })??;
    let mut comparisons: Vec<Comparison> = selected
        .iter()
        .zip(&outcomes)
        .map(|(&(row, mapping, _), outcome)| Comparison {
            trace: row.trace.clone(),
            size: row.size,
            mapping,
            ours_pct: 100.0 * outcome.hit_ratio(),
            reference_pct: row.hit_ratio_pct,
        })
        .collect();
    let rank = |c: &Comparison| {
        (
            present.iter().position(|n| *n == c.trace),
            c.size,
            mappings.iter().position(|m| *m == c.mapping),
        )
    };
    comparisons.sort_by_key(rank);
    Ok(Verification {
        comparisons,
        missing: missing.iter().map(|n| n.to_string()).collect(),
        tolerance: options.tolerance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cortado-sim-verify-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn trace_files_same_name_two_formats_takes_first_sorted_path() {
        // Which of `t.keys` and `t.lirs` was verified followed the directory's order.
        let dir = temp_dir("same-name");
        for i in 0..20 {
            std::fs::write(dir.join(format!("t{i}.lirs")), "1\n").unwrap();
            std::fs::write(dir.join(format!("t{i}.keys")), "2\n").unwrap();
        }
        let files = trace_files(&dir).unwrap();
        assert_eq!(files.len(), 20);
        for i in 0..20 {
            assert_eq!(
                files[&format!("t{i}")],
                dir.join(format!("t{i}.keys")),
                "t{i}"
            );
        }
    }

    fn options(dir: &Path, policies: &[&str]) -> VerifyOptions {
        VerifyOptions {
            reference: dir.join("ref.csv"),
            traces: dir.to_owned(),
            policies: policies.iter().map(|p| p.to_string()).collect(),
            traces_only: None,
            tolerance: DEFAULT_TOLERANCE,
            run: RunOptions {
                threads: Some(1),
                ..RunOptions::default()
            },
        }
    }

    #[test]
    fn mapping_names_reference_columns() {
        assert_eq!(mapping("lru").unwrap().reference, "LRU");
        assert_eq!(mapping("ARC").unwrap().reference, "ARC");
        assert_eq!(mapping("opt").unwrap().reference, "Belady");
        assert!(mapping("opt").unwrap().enforced);
        assert!(!mapping("s3fifo").unwrap().enforced);
        assert_eq!(mapping("wtinylfu"), None);
        assert_eq!(mapping("opt-bypass"), None);
    }

    #[test]
    fn read_reference_bad_lines_report_line_numbers() {
        let dir = temp_dir("bad");
        let path = dir.join("ref.csv");
        std::fs::write(
            &path,
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,x,1,LRU,5\n",
        )
        .unwrap();
        let err = read_reference(&path).unwrap_err();
        assert!(
            matches!(err, VerifyError::Malformed { line: 2, .. }),
            "{err}"
        );
        std::fs::write(&path, "a,b\n").unwrap();
        let err = read_reference(&path).unwrap_err();
        assert!(
            matches!(err, VerifyError::Malformed { line: 1, .. }),
            "{err}"
        );
        std::fs::write(
            &path,
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,3,1,LRU,101\n",
        )
        .unwrap();
        assert!(read_reference(&path).is_err());
    }

    #[test]
    fn read_reference_signed_size_malformed_with_line() {
        let dir = temp_dir("signed-size");
        let path = dir.join("ref.csv");
        std::fs::write(
            &path,
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,3,1,LRU,5\nt,+5,1,LRU,5\n",
        )
        .unwrap();
        let err = read_reference(&path).unwrap_err();
        assert!(
            matches!(err, VerifyError::Malformed { line: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn read_reference_zero_size_malformed_with_line() {
        // A size of 0 entries was read, then rejected by the replay as "policy arc at size 0",
        // with exit status 2 (a bad argument) and neither the file nor the line.
        let dir = temp_dir("zero-size");
        let path = dir.join("ref.csv");
        std::fs::write(
            &path,
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,3,1,LRU,5\nt,0,0,ARC,0\n",
        )
        .unwrap();
        let err = read_reference(&path).unwrap_err();
        assert!(
            matches!(err, VerifyError::Malformed { line: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("ref.csv:3"), "{err}");
    }

    #[test]
    fn verify_hand_counted_trace_passes_and_wrong_number_fails() {
        let dir = temp_dir("hand");
        // LRU at 3 entries on 1 2 3 1 2 4 1 2 3 4 hits 4 of 10 (hand-counted in replay's tests).
        std::fs::write(dir.join("hand.lirs"), "1\n2\n3\n1\n2\n4\n1\n2\n3\n4\n").unwrap();
        std::fs::write(
            dir.join("ref.csv"),
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\n\
             hand,3,75,LRU,40.00\n\
             hand,3,75,WTinyLFU,99.00\n\
             other,3,75,LRU,40.00\n",
        )
        .unwrap();
        let result = verify(&options(&dir, &["lru"])).unwrap();
        assert_eq!(result.comparisons.len(), 1);
        assert_eq!(result.missing, ["other"]);
        assert!(result.passed());
        assert!((result.comparisons[0].ours_pct - 40.0).abs() < 1e-9);

        std::fs::write(
            dir.join("ref.csv"),
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nhand,3,75,LRU,41.00\n",
        )
        .unwrap();
        let result = verify(&options(&dir, &["lru"])).unwrap();
        assert!(!result.passed());
        let mut summary = Vec::new();
        result.write_summary(&mut summary).unwrap();
        let summary = String::from_utf8(summary).unwrap();
        assert!(summary.contains("verify: FAIL (1 of 1"), "{summary}");
    }

    #[test]
    fn verify_difference_of_exactly_the_tolerance_passes() {
        // LRU hits 3 of 4: 75%. 75 - 74.99 is 0.010000000000005 in f64, just above the default
        // tolerance of 0.01: a difference the tolerance allows failed.
        let dir = temp_dir("boundary");
        std::fs::write(dir.join("t.lirs"), "1\n1\n1\n1\n").unwrap();
        std::fs::write(
            dir.join("ref.csv"),
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\n\
             t,10,1,LRU,74.99\n\
             t,11,1,LRU,75.01\n",
        )
        .unwrap();
        let result = verify(&options(&dir, &["lru"])).unwrap();
        assert!(result.passed(), "{:?}", result.comparisons);
        let mut summary = Vec::new();
        result.write_summary(&mut summary).unwrap();
        let summary = String::from_utf8(summary).unwrap();
        assert!(summary.contains("2/2 "), "{summary}");
        let mut table = Vec::new();
        result.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(!table.contains("FAIL"), "{table}");
    }

    #[test]
    fn verify_report_only_policy_never_fails() {
        let dir = temp_dir("report-only");
        std::fs::write(dir.join("t.lirs"), "1\n2\n1\n2\n").unwrap();
        std::fs::write(
            dir.join("ref.csv"),
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,10,1,SIEVE,0.00\n",
        )
        .unwrap();
        let result = verify(&options(&dir, &["sieve"])).unwrap();
        assert!((result.comparisons[0].ours_pct - 50.0).abs() < 1e-9);
        assert!(result.passed());
    }

    #[test]
    fn verify_unmapped_policy_and_unknown_trace_rejected() {
        let dir = temp_dir("errors");
        std::fs::write(
            dir.join("ref.csv"),
            "trace,size,size_pct_of_distinct,policy,hit_ratio_pct\nt,10,1,LRU,0.00\n",
        )
        .unwrap();
        let err = verify(&options(&dir, &["wtinylfu"])).unwrap_err();
        assert!(matches!(err, VerifyError::Unmapped { .. }), "{err}");
        let mut only = options(&dir, &["lru"]);
        only.traces_only = Some(vec!["nope".into()]);
        let err = verify(&only).unwrap_err();
        assert!(matches!(err, VerifyError::UnknownTrace { .. }), "{err}");
        // The trace exists in the table but has no file.
        let err = verify(&options(&dir, &["lru"])).unwrap_err();
        assert!(matches!(err, VerifyError::NothingToVerify), "{err}");
    }
}
