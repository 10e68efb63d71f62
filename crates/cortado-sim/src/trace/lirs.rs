//! The `lirs` format: one block number per line, as in the LIRS paper's traces.
//!
//! Every line that holds an unsigned decimal is one request for that key; lines that are exactly
//! `*` (checkpoint markers) and blank lines are skipped, and anything else is an error.
//!
//! # Design
//!
//! `2_pools` and `cs` carry two `*` markers each and `gli` one blank line, so both must be
//! skipped to get the published request counts; `loop` uses `\r\n` line ends, which trimming
//! absorbs. Negative numbers are rejected although `trace2keys.py` would wrap them: the format
//! defines block numbers as non-negative.
//!
//! # References
//!
//! 1. S. Jiang, X. Zhang: "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy
//!    to Improve Buffer Cache Performance", SIGMETRICS 2002.

use super::text::{parse_u64, LineKeys};

/// Parses one trimmed line.
pub(super) fn parse(line: &[u8]) -> Result<LineKeys, String> {
    if line.is_empty() || line == b"*" {
        return Ok(LineKeys::Skip);
    }
    parse_u64(line)
        .map(LineKeys::one)
        .ok_or_else(|| "expected an unsigned decimal block number or `*`".to_owned())
}

#[cfg(test)]
mod tests {
    use crate::trace::{read_bytes, Format, TraceError};

    #[test]
    fn lirs_markers_and_blank_lines_skipped() {
        let keys = read_bytes(b"5\n*\n\n7\r\n  9  \n*\n11", Format::Lirs).unwrap();
        assert_eq!(keys, vec![5, 7, 9, 11]);
    }

    #[test]
    fn lirs_negative_number_errors_with_line_number() {
        let err = read_bytes(b"1\n*\n-3\n4\n", Format::Lirs).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn lirs_two_numbers_on_a_line_errors() {
        let err = read_bytes(b"1 2\n", Format::Lirs).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 1, .. }),
            "{err}"
        );
    }
}
