//! The `keys` format: the canonical form, one unsigned decimal 64-bit key per line.
//!
//! Every non-blank line that does not start with `#` is one request for its key; a line that is
//! not an unsigned decimal fitting in 64 bits is an error.
//!
//! # Design
//!
//! This is what `trace2keys.py` writes and what [`crate::gen::write_keys`] writes, so it is the
//! format to convert anything else into. Blank lines and `#` comments are skipped, as the
//! converter does, so a keys file may carry a comment header.

use super::text::{parse_u64, LineKeys};

/// Parses one trimmed line.
pub(super) fn parse(line: &[u8]) -> Result<LineKeys, String> {
    if line.is_empty() || line[0] == b'#' {
        return Ok(LineKeys::Skip);
    }
    parse_u64(line)
        .map(LineKeys::one)
        .ok_or_else(|| "expected an unsigned decimal 64-bit key".to_owned())
}

#[cfg(test)]
mod tests {
    use crate::trace::{read_bytes, Format, TraceError};

    #[test]
    fn keys_comments_and_blank_lines_skipped() {
        let keys = read_bytes(
            b"# made by hand\n0\n\n18446744073709551615\n42",
            Format::Keys,
        );
        assert_eq!(keys.unwrap(), vec![0, u64::MAX, 42]);
    }

    #[test]
    fn keys_overflowing_key_errors_with_line_number() {
        let err = read_bytes(b"1\n2\n18446744073709551616\n", Format::Keys).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 3, .. }),
            "{err}"
        );
    }
}
