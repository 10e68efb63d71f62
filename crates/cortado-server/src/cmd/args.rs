//! A command's arguments, and the parsing of numbers and options out of them with Redis's
//! errors.

use std::ops::Range;

use crate::protocol::{parse_i64, ErrorReply};

/// The arguments of one command: the name first, then its arguments, as byte strings.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    bytes: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Args<'a> {
    /// The arguments lying at `ranges` of `bytes`.
    pub fn new(bytes: &'a [u8], ranges: &'a [Range<usize>]) -> Self {
        Self { bytes, ranges }
    }

    /// The number of arguments, the command's name included.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there is no argument, not even a name.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command's name).
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.bytes[self.ranges[i].clone()]
    }

    /// Every argument, the name first.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let bytes = self.bytes;
        self.ranges.iter().map(move |r| &bytes[r.clone()])
    }

    /// The arguments from `i` on.
    pub fn from(&self, i: usize) -> Args<'a> {
        Args {
            bytes: self.bytes,
            ranges: &self.ranges[i.min(self.ranges.len())..],
        }
    }

    /// The first `n` arguments (all of them if there are fewer).
    pub fn prefix(&self, n: usize) -> Args<'a> {
        Args {
            bytes: self.bytes,
            ranges: &self.ranges[..n.min(self.ranges.len())],
        }
    }

    /// Argument `i` as an integer, or Redis's error for one that is not.
    pub fn int(&self, i: usize) -> Result<i64, ErrorReply> {
        parse_int(self.get(i))
    }

    /// Argument `i` as a float, or Redis's error for one that is not.
    pub fn float(&self, i: usize) -> Result<f64, ErrorReply> {
        parse_float(self.get(i)).ok_or_else(|| ErrorReply::err("value is not a valid float"))
    }

    /// Whether argument `i` is `word`, ignoring ASCII case.
    #[inline]
    pub fn is(&self, i: usize, word: &str) -> bool {
        self.get(i).eq_ignore_ascii_case(word.as_bytes())
    }

    /// Argument `i` as text, lossily, for messages.
    pub fn text(&self, i: usize) -> String {
        String::from_utf8_lossy(self.get(i)).into_owned()
    }
}

impl std::fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

/// An integer argument, or `ERR value is not an integer or out of range`.
pub fn parse_int(bytes: &[u8]) -> Result<i64, ErrorReply> {
    parse_i64(bytes).ok_or_else(not_an_integer)
}

/// Redis's error for an argument that is not a 64-bit integer.
pub fn not_an_integer() -> ErrorReply {
    ErrorReply::err("value is not an integer or out of range")
}

/// A float as Redis's `string2ld`/`strtold` take one: the whole argument, no spaces around, and
/// not NaN; `inf`, `-inf` and `+inf` (any case) are accepted.
pub fn parse_float(bytes: &[u8]) -> Option<f64> {
    if bytes.is_empty() || bytes.len() > 5 * 1024 {
        return None;
    }
    if bytes[0].is_ascii_whitespace() || bytes[bytes.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let lower = text.to_ascii_lowercase();
    let value = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        // Rust's parser takes forms strtod does not ("1_000" is refused by both), and refuses
        // hexadecimal floats, which Redis takes but no client sends.
        _ => {
            if lower.contains("inf") || lower.contains("nan") {
                return None;
            }
            text.parse::<f64>().ok()?
        }
    };
    (!value.is_nan()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_float_takes_redis_forms_only() {
        assert_eq!(parse_float(b"1.5"), Some(1.5));
        assert_eq!(parse_float(b"-3e2"), Some(-300.0));
        assert_eq!(parse_float(b".5"), Some(0.5));
        assert_eq!(parse_float(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"-INF"), Some(f64::NEG_INFINITY));
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"abc", b"1.5x"] {
            assert_eq!(parse_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn args_index_and_compare() {
        let bytes = b"SETkeyvalue";
        let ranges = [0..3, 3..6, 6..11];
        let args = Args::new(bytes, &ranges);
        assert_eq!(args.len(), 3);
        assert!(args.is(0, "set"));
        assert_eq!(args.get(2), b"value");
        assert_eq!(args.from(1).len(), 2);
        assert_eq!(args.from(5).len(), 0);
        assert_eq!(args.int(1), Err(not_an_integer()));
    }
}
