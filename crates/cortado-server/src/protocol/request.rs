//! Requests as clients send them: RESP arrays of bulk strings, or inline lines as telnet sends.
//!
//! [`RequestParser::parse`] finds the next whole command at the front of a buffer and records
//! where its arguments lie; it never copies a multibulk argument and never allocates for a
//! length a client only claims. A malformed request is a [`ProtocolError`] with Redis's text,
//! after which the connection answers it and closes.
//!
//! # Design
//!
//! The parser keeps its progress through the command at the front of the buffer (the arguments
//! found so far and where the next one starts), so a command that arrives in many reads is
//! scanned once, not once per read. Offsets are relative to the command's first byte, which
//! stays put while the caller appends to the buffer and moves only when the command is
//! consumed. Inline arguments may differ from their bytes on the wire (quotes and escapes), so
//! they are copied into a scratch buffer of the parser's.
//!
//! Limits, as in Redis 7.0: at most `i32::MAX` arguments; bulk lengths up to
//! `proto-max-bulk-len`; a length line or inline request longer than 64 KiB without its line
//! end is refused (so a client cannot make the server buffer an endless header); before
//! authentication, at most 10 arguments of 16 KiB each (CVE-2021-32675).

use std::ops::Range;

/// The longest inline request or length line accepted without its line end, as Redis's
/// `PROTO_INLINE_MAX_SIZE`.
pub const INLINE_MAX: usize = 64 * 1024;
/// The most arguments an unauthenticated client may send in one command.
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
/// The longest argument an unauthenticated client may send.
const UNAUTHENTICATED_MAX_BULK: i64 = 16 * 1024;

/// A request the server cannot read; the text is Redis's, without the `ERR ` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(text: &str) -> Self {
        Self(format!("Protocol error: {text}"))
    }
}

/// What the parser checks a request against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest bulk argument (`proto-max-bulk-len`).
    pub max_bulk_len: i64,
    /// Whether the client may send large requests (it has authenticated, or needs not).
    pub authenticated: bool,
}

/// Where a command's arguments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// In the connection's buffer, from the command's first byte.
    Buffer,
    /// In the parser's scratch buffer (an inline command).
    Inline,
}

/// Finds whole commands at the front of a buffer. See the [module docs](self).
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Arguments found so far of the command at the front, as offsets from its first byte (or
    /// into `inline` for an inline command).
    args: Vec<Range<usize>>,
    /// Arguments still to read; 0 before the count line is read.
    remaining: i64,
    /// Where the next unread part of the command starts.
    pos: usize,
    /// The length of the bulk argument whose header was read, if its data was not.
    bulk_len: Option<usize>,
    inline: Vec<u8>,
    source: Option<Source>,
}

impl RequestParser {
    /// Looks for a whole command at the front of `buf`: `Ok(Some(n))` when one fills
    /// `buf[..n]` (its arguments are then [`args`](Self::args); an empty line or an array of no
    /// elements is a command of no arguments, which Redis ignores), `Ok(None)` when more bytes
    /// are needed.
    pub fn parse(&mut self, buf: &[u8], limits: Limits) -> Result<Option<usize>, ProtocolError> {
        if self.source.is_none() {
            // A finished command was handed out: start the next.
            if buf.is_empty() {
                return Ok(None);
            }
            self.args.clear();
            self.pos = 0;
            self.remaining = 0;
            self.bulk_len = None;
            self.source = Some(if buf[0] == b'*' {
                Source::Buffer
            } else {
                Source::Inline
            });
        }
        let done = match self.source {
            Some(Source::Buffer) => self.parse_multibulk(buf, limits)?,
            _ => self.parse_inline(buf)?,
        };
        Ok(done)
    }

    /// The arguments of the command [`parse`](Self::parse) last found, as ranges of the bytes
    /// [`source`](Self::source) names.
    pub fn args(&self) -> &[Range<usize>] {
        &self.args
    }

    /// Where the arguments of the last command found are.
    pub fn source(&self) -> Source {
        self.source.unwrap_or(Source::Buffer)
    }

    /// The scratch buffer holding an inline command's arguments.
    pub fn inline_bytes(&self) -> &[u8] {
        &self.inline
    }

    /// Bytes buffered for the command in progress that the parser has already accounted for
    /// (the query buffer's length as `CLIENT LIST` reports it, less unread bytes).
    pub fn in_progress(&self) -> bool {
        self.source.is_some()
    }

    /// Marks the command found as consumed, so the next `parse` starts a new one.
    pub fn finish(&mut self) {
        self.source = None;
    }

    fn parse_multibulk(
        &mut self,
        buf: &[u8],
        limits: Limits,
    ) -> Result<Option<usize>, ProtocolError> {
        if self.remaining == 0 && self.args.is_empty() {
            let Some(end) = find_cr(buf, 1) else {
                if buf.len() > INLINE_MAX {
                    return Err(ProtocolError::new("too big mbulk count string"));
                }
                return Ok(None);
            };
            if end + 1 >= buf.len() {
                // The '\n' after the '\r' has not arrived.
                return Ok(None);
            }
            let count = match parse_i64(&buf[1..end]) {
                Some(count) if count <= i64::from(i32::MAX) => count,
                _ => return Err(ProtocolError::new("invalid multibulk length")),
            };
            if count > UNAUTHENTICATED_MAX_ARGS && !limits.authenticated {
                return Err(ProtocolError::new("unauthenticated multibulk length"));
            }
            self.pos = end + 2;
            if count <= 0 {
                // An empty command: nothing to run.
                self.source = Some(Source::Buffer);
                return Ok(Some(self.pos));
            }
            self.remaining = count;
            // Room for what is likely to come, not for what is claimed.
            self.args.reserve(count.min(64) as usize);
        }
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let start = self.pos;
                    let Some(end) = find_cr(buf, start) else {
                        if buf.len() - start > INLINE_MAX {
                            return Err(ProtocolError::new("too big bulk count string"));
                        }
                        return Ok(None);
                    };
                    if end + 1 >= buf.len() {
                        return Ok(None);
                    }
                    if buf[start] != b'$' {
                        return Err(ProtocolError(format!(
                            "Protocol error: expected '$', got '{}'",
                            buf[start] as char
                        )));
                    }
                    let len = match parse_i64(&buf[start + 1..end]) {
                        Some(len) if len >= 0 && len <= limits.max_bulk_len => len,
                        _ => return Err(ProtocolError::new("invalid bulk length")),
                    };
                    if len > UNAUTHENTICATED_MAX_BULK && !limits.authenticated {
                        return Err(ProtocolError::new("unauthenticated bulk length"));
                    }
                    self.pos = end + 2;
                    let len = len as usize;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // The data and its "\r\n", which Redis skips without checking.
            if buf.len() < self.pos + len + 2 {
                return Ok(None);
            }
            self.args.push(self.pos..self.pos + len);
            self.pos += len + 2;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        Ok(Some(self.pos))
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError::new("too big inline request"));
            }
            return Ok(None);
        };
        let mut line = &buf[..newline];
        if let [head @ .., b'\r'] = line {
            line = head;
        }
        self.inline.clear();
        if !split_args(line, &mut self.inline, &mut self.args) {
            return Err(ProtocolError::new("unbalanced quotes in request"));
        }
        Ok(Some(newline + 1))
    }
}

fn find_cr(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .iter()
        .position(|&b| b == b'\r')
        .map(|i| i + from)
}

/// Parses a decimal integer as Redis's `string2ll` does: an optional `-`, no `+`, no leading
/// zeros, no spaces, within `i64`.
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    if digits.len() > 19 {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if value > i64::MAX as u64 + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// Splits an inline request into arguments as Redis's `sdssplitargs` does: spaces separate;
/// `"..."` takes the escapes `\n \r \t \b \a \\ \"` and `\xHH`; `'...'` takes `\'`; a closing
/// quote must be followed by a space or the end. Arguments are appended to `out`, their ranges
/// to `args`; `false` on unbalanced quotes.
pub fn split_args(line: &[u8], out: &mut Vec<u8>, args: &mut Vec<Range<usize>>) -> bool {
    args.clear();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i == line.len() {
            return true;
        }
        let start = out.len();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                if i == line.len() {
                    return false;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < line.len()
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    out.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                    i += 4;
                } else if c == b'\\' && i + 1 < line.len() {
                    out.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    // The closing quote must end the argument.
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return false;
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                    i += 1;
                }
            } else if in_single {
                if i == line.len() {
                    return false;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    out.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return false;
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                    i += 1;
                }
            } else {
                if i == line.len() {
                    break;
                }
                match line[i] {
                    c if is_space(c) => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    c => out.push(c),
                }
                i += 1;
            }
        }
        args.push(start..out.len());
    }
}

/// C's `isspace` in the "C" locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Limits = Limits {
        max_bulk_len: 512 * 1024 * 1024,
        authenticated: true,
    };

    /// Every command in `input`, as argument lists, and the error if one stopped the parse.
    fn parse_all(input: &[u8], limits: Limits) -> (Vec<Vec<Vec<u8>>>, Option<String>) {
        let mut parser = RequestParser::default();
        let mut commands = Vec::new();
        let mut start = 0;
        loop {
            match parser.parse(&input[start..], limits) {
                Ok(Some(n)) => {
                    let base: &[u8] = match parser.source() {
                        Source::Buffer => &input[start..],
                        Source::Inline => parser.inline_bytes(),
                    };
                    commands.push(
                        parser
                            .args()
                            .iter()
                            .map(|r| base[r.clone()].to_vec())
                            .collect(),
                    );
                    parser.finish();
                    start += n;
                }
                Ok(None) => return (commands, None),
                Err(e) => return (commands, Some(e.0)),
            }
        }
    }

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_whole_command_parses_arguments() {
        let (commands, error) = parse_all(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", OPEN);
        assert_eq!(commands, vec![args(&["GET", "key"])]);
        assert_eq!(error, None);
    }

    #[test]
    fn multibulk_split_at_every_byte_parses_the_same() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n*1\r\n$4\r\nPING\r\n";
        for split in 0..input.len() {
            let mut parser = RequestParser::default();
            let mut buffer = input[..split].to_vec();
            let mut found = Vec::new();
            let mut rest = &input[split..];
            loop {
                match parser.parse(&buffer, OPEN).unwrap() {
                    Some(n) => {
                        found.push(parser.args().len());
                        parser.finish();
                        buffer.drain(..n);
                    }
                    None if rest.is_empty() => break,
                    None => {
                        buffer.push(rest[0]);
                        rest = &rest[1..];
                    }
                }
            }
            assert_eq!(found, vec![3, 1], "split at {split}");
        }
    }

    #[test]
    fn multibulk_huge_claimed_count_allocates_nothing_for_it() {
        let mut parser = RequestParser::default();
        assert_eq!(parser.parse(b"*2147483647\r\n$1\r\nx\r\n", OPEN), Ok(None));
        assert!(parser.args.capacity() <= 64);
    }

    #[test]
    fn multibulk_bad_headers_give_redis_errors() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"*3000000000\r\n",
                "Protocol error: invalid multibulk length",
            ),
            (b"*+1\r\n", "Protocol error: invalid multibulk length"),
            (b"*01\r\n", "Protocol error: invalid multibulk length"),
            (b"*x\r\n", "Protocol error: invalid multibulk length"),
            (b"*1\r\nx\r\n", "Protocol error: expected '$', got 'x'"),
            (b"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
            (b"*1\r\n$04\r\n", "Protocol error: invalid bulk length"),
            (
                b"*1\r\n$600000000\r\n",
                "Protocol error: invalid bulk length",
            ),
        ];
        for (input, expected) in cases {
            let (_, error) = parse_all(input, OPEN);
            assert_eq!(error.as_deref(), Some(*expected), "{input:?}");
        }
    }

    #[test]
    fn multibulk_long_header_without_line_end_is_refused() {
        let mut input = b"*1".to_vec();
        input.resize(INLINE_MAX + 10, b'1');
        assert_eq!(
            parse_all(&input, OPEN).1.as_deref(),
            Some("Protocol error: too big mbulk count string")
        );
        let mut input = b"*1\r\n$1".to_vec();
        input.resize(INLINE_MAX + 10, b'1');
        assert_eq!(
            parse_all(&input, OPEN).1.as_deref(),
            Some("Protocol error: too big bulk count string")
        );
    }

    #[test]
    fn multibulk_unauthenticated_limits_apply() {
        let closed = Limits {
            authenticated: false,
            ..OPEN
        };
        assert_eq!(
            parse_all(b"*11\r\n", closed).1.as_deref(),
            Some("Protocol error: unauthenticated multibulk length")
        );
        assert_eq!(
            parse_all(b"*1\r\n$16385\r\n", closed).1.as_deref(),
            Some("Protocol error: unauthenticated bulk length")
        );
        assert_eq!(parse_all(b"*10\r\n$16384\r\n", closed).1, None);
    }

    #[test]
    fn multibulk_empty_or_negative_count_is_an_empty_command() {
        let (commands, error) = parse_all(b"*0\r\n*-5\r\n*1\r\n$4\r\nPING\r\n", OPEN);
        assert_eq!(commands, vec![vec![], vec![], args(&["PING"])]);
        assert_eq!(error, None);
    }

    #[test]
    fn multibulk_trailer_is_skipped_unchecked_as_redis_does() {
        let (commands, _) = parse_all(b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", OPEN);
        assert_eq!(commands, vec![args(&["PING"]), args(&["PING"])]);
    }

    #[test]
    fn inline_quotes_and_escapes_follow_redis() {
        let (commands, error) = parse_all(
            b"SET \"a b\" 'c d'\r\nECHO \"\\x41\\n\\\"\" 'it\\'s'\nPING\n\r\n",
            OPEN,
        );
        assert_eq!(error, None);
        assert_eq!(
            commands,
            vec![
                args(&["SET", "a b", "c d"]),
                args(&["ECHO", "A\n\"", "it's"]),
                args(&["PING"]),
                vec![],
            ]
        );
    }

    #[test]
    fn inline_unbalanced_quotes_are_refused() {
        for input in [
            &b"SET \"a b\r\n"[..],
            b"SET 'a\r\n",
            b"ECHO \"a\"b\r\n",
            b"ECHO 'a'b\n",
        ] {
            assert_eq!(
                parse_all(input, OPEN).1.as_deref(),
                Some("Protocol error: unbalanced quotes in request"),
                "{input:?}"
            );
        }
    }

    #[test]
    fn inline_too_long_without_newline_is_refused() {
        let input = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(
            parse_all(&input, OPEN).1.as_deref(),
            Some("Protocol error: too big inline request")
        );
    }

    #[test]
    fn parse_i64_follows_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1e3",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }
}
