//! The `arc` format: `start count ignored request_no` lines, as in the ARC paper's traces.
//!
//! Each line stands for `count` requests, for the keys `start, start + 1, ..., start + count - 1`
//! in that order; a line that is not four unsigned decimal fields, whose range passes
//! `u64::MAX`, or whose `count` exceeds [`MAX_COUNT`] is an error.
//!
//! # Design
//!
//! `start` is a 512-byte block number and `count` the length of the I/O in blocks. Expanding
//! every block into its own request is what Caffeine's `ArcTraceReader`, mokabench and the ARC
//! paper's request counts do, so hit ratios stay comparable with theirs (P12 has 547,147 lines
//! but 13,208,930 requests). The line only yields the range; the reader expands it lazily, so a
//! line with a huge `count` costs no memory, but it would cost time: a corrupt count near 2^64
//! would replay for centuries. [`MAX_COUNT`] (2^24 blocks, a single 8 GiB I/O) turns that into an
//! error; the largest count in the ARC traces we replay is 512 (`p12`). The third field
//! (undocumented) and the fourth (the line number) are checked to be numbers and otherwise
//! ignored.
//!
//! # References
//!
//! 1. N. Megiddo, D. S. Modha: "ARC: A Self-Tuning, Low Overhead Replacement Cache", USENIX FAST
//!    2003.

use super::text::{fields, parse_u64, LineKeys};

/// Fields on every line.
const FIELDS: usize = 4;
/// The most blocks one line may stand for.
const MAX_COUNT: u64 = 1 << 24;

/// Parses one trimmed line.
pub(super) fn parse(line: &[u8]) -> Result<LineKeys, String> {
    if line.is_empty() {
        return Ok(LineKeys::Skip);
    }
    let mut values = [0u64; FIELDS];
    let mut n = 0;
    for field in fields(line) {
        if n == FIELDS {
            return Err(format!(
                "expected {FIELDS} fields `start count ignored request_no`, found more"
            ));
        }
        values[n] = parse_u64(field)
            .ok_or_else(|| format!("field {} is not an unsigned decimal integer", n + 1))?;
        n += 1;
    }
    if n < FIELDS {
        return Err(format!(
            "expected {FIELDS} fields `start count ignored request_no`, found {n}"
        ));
    }
    let [first, count, _, _] = values;
    if count > MAX_COUNT {
        return Err(format!(
            "count {count} exceeds {MAX_COUNT} blocks (an 8 GiB I/O); a corrupt line?"
        ));
    }
    if count > 0 && first.checked_add(count - 1).is_none() {
        return Err("block range `start + count - 1` exceeds u64::MAX".to_owned());
    }
    Ok(LineKeys::Range { first, count })
}

#[cfg(test)]
mod tests {
    use crate::trace::{read_bytes, Format, TraceError};

    #[test]
    fn arc_line_expands_into_count_consecutive_blocks() {
        let keys = read_bytes(b"230027 3 0 0\n5 1 7 1\n9 0 0 2\n100 2 0 3", Format::Arc);
        assert_eq!(keys.unwrap(), vec![230027, 230028, 230029, 5, 100, 101]);
    }

    #[test]
    fn arc_range_ending_at_u64_max_is_accepted() {
        let keys = read_bytes(b"18446744073709551614 2 0 0\n", Format::Arc).unwrap();
        assert_eq!(keys, vec![u64::MAX - 1, u64::MAX]);
    }

    #[test]
    fn arc_count_above_limit_errors_at_its_line() {
        let data = format!(
            "1 {} 0 0\n7 {} 0 1\n",
            super::MAX_COUNT,
            super::MAX_COUNT + 1
        );
        let err = read_bytes(data.as_bytes(), Format::Arc).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("exceeds 16777216 blocks"), "{err}");
    }

    #[test]
    fn arc_range_past_u64_max_errors() {
        let err = read_bytes(b"1 1 0 0\n18446744073709551614 3 0 1\n", Format::Arc).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn arc_wrong_field_count_or_garbage_errors_with_line_number() {
        for (input, line) in [
            (&b"1 1 0 0\n2 1 0\n"[..], 2),
            (b"1 1 0 0 9\n", 1),
            (b"1 1 0 0\n2 1 0 1\n3 x 0 2\n", 3),
            (b"1 -1 0 0\n", 1),
        ] {
            let err = read_bytes(input, Format::Arc).unwrap_err();
            match err {
                TraceError::Malformed { line: got, .. } => assert_eq!(got, line, "{err}"),
                other => panic!("unexpected error {other}"),
            }
        }
    }
}
