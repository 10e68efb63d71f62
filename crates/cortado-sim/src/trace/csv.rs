//! The `csv` format: comma-separated text with one request per line and the key in one column.
//!
//! The key column is found from the header, which covers both layouts in the shared traces
//! (Twitter's `# time, object, size, next_access_vtime` gives column 2, CloudPhysics'
//! `version,time,op,size,lbn` gives column 5); every data line's key field must be an unsigned
//! decimal 64-bit integer, otherwise the line is an error.
//!
//! # Design
//!
//! The rules are those of `trace2keys.py`, so both produce the same keys:
//!
//! - Lines starting with `#` are comments. The first one, if it comes before any other line,
//!   is read as a header: `# time, object, ...`.
//! - The first other line is a header too if its field in the key column is not an integer
//!   (`version,time,op,size,lbn`); a negative or too large integer there is an error.
//! - In a header the key column is the first of [`KEY_NAMES`] found (case-insensitive);
//!   with none of them, column 2 (column 1 if the header has a single name). Without any
//!   header the key is column 2.
//! - Fields are split at commas and trimmed, so Twitter's `", "` separator needs no option.
//!   Only the key field is parsed; the others (CloudPhysics' hex opcode, say) are not checked.
//!
//! Detecting the layout rather than naming it (`csv-twitter`) keeps one format name for all
//! `*.csv.gz` files, and a libCacheSim csv with an `obj_id` column works without a new name.

use super::text::{parse_u64, trim, LineKeys};

/// Header names that mark the key column, most specific first.
const KEY_NAMES: [&str; 8] = [
    "obj_id", "object", "obj", "key", "id", "lbn", "lba", "block",
];

/// The key column (0-based) when no header names one.
const DEFAULT_COLUMN: usize = 1;

/// Layout state of one csv stream.
#[derive(Debug, Default)]
pub(super) struct Csv {
    /// 0-based key column, once a header has named it.
    column: Option<usize>,
    /// Whether a non-comment line has been seen (only the first may be a header).
    seen_line: bool,
}

impl Csv {
    /// Parses one trimmed line.
    pub(super) fn parse(&mut self, line: &[u8]) -> Result<LineKeys, String> {
        if line.is_empty() {
            return Ok(LineKeys::Skip);
        }
        if line[0] == b'#' {
            if !self.seen_line && self.column.is_none() {
                let names = line.iter().position(|&b| b != b'#').unwrap_or(line.len());
                self.column = Some(header_column(&line[names..]));
            }
            return Ok(LineKeys::Skip);
        }
        let first_line = !self.seen_line;
        self.seen_line = true;
        let column = self.column.unwrap_or(DEFAULT_COLUMN);
        let field = line.split(|&b| b == b',').nth(column).map(trim);
        let key = field.map(parse_u64);
        match key {
            Some(Some(key)) => Ok(LineKeys::one(key)),
            // A field that is an integer, if not a valid key, makes a data line, not a header.
            _ if first_line && !field.is_some_and(is_integer) => {
                if self.column.is_none() {
                    self.column = Some(header_column(line));
                }
                Ok(LineKeys::Skip)
            }
            Some(None) => Err(format!(
                "key field (column {}) is not an unsigned decimal 64-bit integer",
                column + 1
            )),
            None => Err(format!(
                "{} fields, but the key is in column {}",
                line.split(|&b| b == b',').count(),
                column + 1
            )),
        }
    }
}

/// Whether `field` is a decimal integer, signed or too large for a key (`trace2keys.py` reads
/// such a first line as data).
fn is_integer(field: &[u8]) -> bool {
    let digits = field.strip_prefix(b"-").unwrap_or(field);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// The 0-based key column named by a header line.
fn header_column(header: &[u8]) -> usize {
    let names: Vec<&[u8]> = header.split(|&b| b == b',').map(trim).collect();
    KEY_NAMES
        .iter()
        .find_map(|want| {
            names
                .iter()
                .position(|name| name.eq_ignore_ascii_case(want.as_bytes()))
        })
        .unwrap_or(if names.len() > 1 { DEFAULT_COLUMN } else { 0 })
}

#[cfg(test)]
mod tests {
    use crate::trace::{read_bytes, Format, TraceError};

    #[test]
    fn csv_twitter_comment_header_selects_object_column() {
        let input = b"# time, object, size, next_access_vtime\n\
            0, 13053225291711363978, 737, 13\n\
            0, 61177148907475485, 248, 9223372036854775807\n";
        let keys = read_bytes(input, Format::Csv).unwrap();
        assert_eq!(keys, vec![13053225291711363978, 61177148907475485]);
    }

    #[test]
    fn csv_cloudphysics_header_selects_lbn_column() {
        let input = b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633898,28,4096,7\n";
        let keys = read_bytes(input, Format::Csv).unwrap();
        assert_eq!(keys, vec![42932745, 7]);
    }

    #[test]
    fn csv_without_header_uses_second_column() {
        let keys = read_bytes(b"10,20,30\n11,21,31\n", Format::Csv).unwrap();
        assert_eq!(keys, vec![20, 21]);
    }

    #[test]
    fn csv_header_without_known_name_uses_second_column() {
        let keys = read_bytes(b"a,b,c\n10,20,30\n", Format::Csv).unwrap();
        assert_eq!(keys, vec![20]);
    }

    #[test]
    fn csv_non_numeric_key_after_header_errors_with_line_number() {
        let input = b"version,time,op,size,lbn\n1,1,2a,512,5\n1,1,2a,512,oops\n";
        let err = read_bytes(input, Format::Csv).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn csv_first_line_negative_or_overflowing_key_errors_not_skipped_as_header() {
        // `trace2keys.py` reads a first line whose key field is an integer as data (and wraps it
        // into a key); here such a key is an error, as on any other line, not a header to skip.
        for input in [
            &b"1,-5,3\n2,6,4\n"[..],
            b"1,18446744073709551616,3\n2,6,4\n",
        ] {
            let err = read_bytes(input, Format::Csv).unwrap_err();
            assert!(
                matches!(err, TraceError::Malformed { line: 1, .. }),
                "{err}"
            );
        }
    }

    #[test]
    fn csv_short_line_errors_with_line_number() {
        let input = b"version,time,op,size,lbn\n1,1,2a,512,5\n\n1,1,2a\n";
        let err = read_bytes(input, Format::Csv).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 4, .. }),
            "{err}"
        );
    }
}
