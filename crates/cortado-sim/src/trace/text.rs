//! Line splitting and decimal parsing shared by the text formats.
//!
//! [`Lines`] hands out one trimmed line at a time from a single reused buffer and counts lines
//! from 1; [`parse_u64`] accepts exactly an unsigned decimal that fits in 64 bits and nothing else.
//!
//! # Design
//!
//! A trace line is a few bytes and there are millions of them, so nothing here allocates per
//! line: `read_until` appends into one `Vec<u8>` that is cleared and reused, and numbers are
//! parsed from the bytes directly (no UTF-8 check, no `str::parse`). Trimming removes the same
//! ASCII whitespace that Python's `bytes.strip()` does, so `\r\n` line ends (the `loop` trace has
//! them) and stray spaces give the same keys as `trace2keys.py`.
//!
//! The parser is stricter than Python's `int()`: no sign, no `_` separators, no inner spaces.
//! None of the shared traces needs them, and rejecting them turns a misread file into an error
//! instead of a plausible-looking key sequence.

use std::io::{self, BufRead};

/// The keys one text line stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineKeys {
    /// A comment, marker, header or blank line: no request.
    Skip,
    /// Requests for `first, first + 1, ..., first + count - 1` (one key when `count` is 1).
    Range {
        /// The first key.
        first: u64,
        /// How many consecutive keys.
        count: u64,
    },
}

impl LineKeys {
    /// A line holding a single request.
    pub(super) fn one(key: u64) -> Self {
        LineKeys::Range {
            first: key,
            count: 1,
        }
    }
}

/// Reads trimmed lines into one reused buffer, counting them from 1.
#[derive(Debug, Default)]
pub(super) struct Lines {
    buf: Vec<u8>,
    /// 1-based number of the line in `buf`; 0 before the first line.
    number: u64,
}

impl Lines {
    /// The next line without its surrounding whitespace, or `None` at the end of the input.
    pub(super) fn next_line(&mut self, input: &mut dyn BufRead) -> io::Result<Option<&[u8]>> {
        self.buf.clear();
        if input.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(None);
        }
        self.number += 1;
        Ok(Some(trim(&self.buf)))
    }

    /// The 1-based number of the line last returned.
    pub(super) fn number(&self) -> u64 {
        self.number
    }

    /// The line last returned, trimmed (for error messages).
    pub(super) fn current(&self) -> &[u8] {
        trim(&self.buf)
    }
}

/// Whitespace as Python's `bytes.strip()` sees it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `s` without leading and trailing whitespace.
pub(super) fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(start, |i| i + 1);
    &s[start..end]
}

/// Splits `line` into fields separated by runs of whitespace.
pub(super) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| is_space(b)).filter(|f| !f.is_empty())
}

/// Parses an unsigned decimal integer that fits in a `u64`; `None` for anything else (empty,
/// a sign, a non-digit, overflow).
pub(super) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &b in s {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_u64_valid_decimal_returns_value() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn parse_u64_garbage_or_overflow_returns_none() {
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1_000",
            b"12a",
            b"1 2",
            b"0x10",
            b"18446744073709551616",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_u64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn trim_crlf_and_spaces_removed() {
        assert_eq!(trim(b"  42\r\n"), b"42");
        assert_eq!(trim(b"\t\r\n"), b"");
        assert_eq!(trim(b""), b"");
    }

    #[test]
    fn lines_last_line_without_newline_is_returned_and_counted() {
        let mut input: &[u8] = b"a\n\nb";
        let mut lines = Lines::default();
        assert_eq!(lines.next_line(&mut input).unwrap(), Some(&b"a"[..]));
        assert_eq!(lines.next_line(&mut input).unwrap(), Some(&b""[..]));
        assert_eq!(lines.next_line(&mut input).unwrap(), Some(&b"b"[..]));
        assert_eq!(lines.number(), 3);
        assert_eq!(lines.next_line(&mut input).unwrap(), None);
    }
}
