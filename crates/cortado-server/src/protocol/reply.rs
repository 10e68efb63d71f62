//! Replies, encoded as the client's protocol version asks: RESP2 or RESP3.
//!
//! Commands write their replies through [`Reply`]'s typed methods (a bulk string, a map, a
//! null...), never bytes, and the same call gives each protocol its form: a map is a flat
//! array in RESP2, a double a bulk string, a null `$-1` or `*-1`. Replies are appended to the
//! connection's output buffer, which is written once per batch of pipelined commands.
//!
//! # Design
//!
//! Encoding straight into the output buffer, rather than building a frame tree first, keeps a
//! `GET` hit to one copy of the value and no allocation. What needs replies as values (a
//! script's `redis.call`) parses the bytes back, as Redis itself does.

/// The error a command answers with: the text after `-`, starting with its code (`ERR`,
/// `WRONGTYPE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply(pub String);

impl ErrorReply {
    /// An error whose text starts with its own code.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// An `ERR` error.
    pub fn err(text: impl AsRef<str>) -> Self {
        Self(format!("ERR {}", text.as_ref()))
    }

    /// The error's code, as `INFO errorstats` counts it: see [`error_code`].
    pub fn code(&self) -> &str {
        error_code(self.0.as_bytes())
    }
}

impl From<std::fmt::Error> for ErrorReply {
    fn from(_: std::fmt::Error) -> Self {
        ErrorReply::err("reply formatting failed")
    }
}

/// The code `INFO errorstats` files an error under, as Redis finds it: the text before the
/// first space if one is among the first 32 bytes of the reply line (its `-` included), else
/// `ERR`.
pub fn error_code(text: &[u8]) -> &str {
    text.iter()
        .take(31)
        .position(|&b| b == b' ')
        .and_then(|space| std::str::from_utf8(&text[..space]).ok())
        .unwrap_or("ERR")
}

/// Appends encoded replies to a buffer. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Reply {
    buf: Vec<u8>,
    /// Bytes at the front of `buf` already written to the socket.
    sent: usize,
    resp3: bool,
    /// Error replies written since [`take_errors`](Self::take_errors), and the code of the
    /// first, for `INFO errorstats` and the failed-call counts.
    errors: u32,
    first_error_code: Option<String>,
}

impl Reply {
    /// An empty buffer for a RESP2 client.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether replies are encoded as RESP3.
    pub fn is_resp3(&self) -> bool {
        self.resp3
    }

    /// Switches the protocol version for the replies written next.
    pub fn set_resp3(&mut self, resp3: bool) {
        self.resp3 = resp3;
    }

    /// The bytes encoded and not yet written.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.sent..]
    }

    /// The number of bytes encoded and not yet written.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.sent
    }

    /// Whether nothing waits to be written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.sent
    }

    /// Marks the first `n` bytes of [`bytes`](Self::bytes) as written. The space they took is
    /// reused once everything is written, or moved out once it is over half the buffer, so a
    /// large reply written in many pieces is not copied once per piece.
    pub fn consume(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.buf.len());
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        } else if self.sent > self.buf.len() / 2 {
            self.buf.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// Drops everything encoded after the first `len` bytes of [`bytes`](Self::bytes) (a
    /// reply that must not be sent; `len` is a [`len`](Self::len) taken before it).
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(self.sent + len);
    }

    /// Drops everything not yet written (the client is closed without it).
    pub fn discard(&mut self) {
        self.buf.clear();
        self.sent = 0;
    }

    /// Releases the buffer's memory if it grew past `keep` bytes and is empty.
    pub fn shrink(&mut self, keep: usize) {
        if self.is_empty() && self.buf.capacity() > keep {
            self.buf = Vec::new();
            self.sent = 0;
        }
    }

    /// The buffer's allocated size.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The number of error replies written since the last call, and the first one's code.
    pub fn take_errors(&mut self) -> (u32, Option<String>) {
        (
            std::mem::take(&mut self.errors),
            self.first_error_code.take(),
        )
    }

    fn line(&mut self, prefix: u8, text: &[u8]) {
        self.buf.push(prefix);
        self.buf.extend_from_slice(text);
        self.buf.extend_from_slice(b"\r\n");
    }

    fn header(&mut self, prefix: u8, n: i64) {
        self.buf.push(prefix);
        let mut digits = itoa::Buffer::new();
        self.buf.extend_from_slice(digits.format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A status reply (`+text`); `text` must not contain `\r` or `\n`.
    pub fn simple(&mut self, text: &str) {
        self.line(b'+', text.as_bytes());
    }

    /// An error reply; line breaks in it become spaces, as Redis makes them.
    pub fn error(&mut self, error: &ErrorReply) {
        self.error_bytes(error.0.as_bytes());
    }

    /// An error reply of text that need not be UTF-8 (it quotes a client's bytes), starting
    /// with its code.
    pub fn error_bytes(&mut self, text: &[u8]) {
        self.errors += 1;
        if self.first_error_code.is_none() {
            self.first_error_code = Some(error_code(text).to_owned());
        }
        self.buf.push(b'-');
        self.buf.extend(
            text.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An integer.
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// A bulk string.
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string of an integer's digits.
    pub fn bulk_int(&mut self, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.bulk(digits.format(n).as_bytes());
    }

    /// The null bulk string: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The null array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    /// An array of `n` replies, written next.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map of `n` pairs, written next key then value: a flat array of `2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// A set of `n` replies: an array in RESP2.
    pub fn set(&mut self, n: usize) {
        self.header(if self.resp3 { b'~' } else { b'*' }, n as i64);
    }

    /// A push message of `n` replies (pub/sub, monitor): an array in RESP2.
    pub fn push(&mut self, n: usize) {
        self.header(if self.resp3 { b'>' } else { b'*' }, n as i64);
    }

    /// A boolean: `#t`/`#f` in RESP3, the integer 1 or 0 in RESP2.
    pub fn boolean(&mut self, b: bool) {
        if self.resp3 {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(i64::from(b));
        }
    }

    /// A double: `,` in RESP3, a bulk string of `%.17g` in RESP2.
    pub fn double(&mut self, d: f64) {
        let text = format_double(d);
        if self.resp3 {
            self.line(b',', text.as_bytes());
        } else {
            self.bulk(text.as_bytes());
        }
    }

    /// A verbatim string of format `txt`: a bulk string in RESP2.
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.header(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Bytes already encoded in the protocol the client speaks (a stored reply).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes already encoded, put before what was encoded after the first `at` bytes of
    /// [`bytes`](Self::bytes) (`at` is a [`len`](Self::len) taken earlier): a push message
    /// that belongs before a command's reply.
    pub fn insert(&mut self, at: usize, bytes: &[u8]) {
        let at = (self.sent + at).min(self.buf.len());
        self.buf.splice(at..at, bytes.iter().copied());
    }
}

/// A double as C's `%.17g` prints it, and `inf`, `-inf`, `nan` as Redis writes them.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // 17 significant digits, then %g's choice of notation and trimming.
    let sci = format!("{d:.16e}");
    let (mantissa, exponent) = sci.split_once('e').expect("exponent");
    let exponent: i32 = exponent.parse().expect("exponent digits");
    if !(-4..17).contains(&exponent) {
        let mantissa = trim_fraction(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (16 - exponent).max(0) as usize;
        trim_fraction(&format!("{d:.decimals$}")).to_owned()
    }
}

fn trim_fraction(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_same_calls_encode_per_protocol() {
        let write = |reply: &mut Reply| {
            reply.map(1);
            reply.bulk(b"k");
            reply.double(1.5);
            reply.null();
            reply.null_array();
            reply.boolean(true);
            reply.set(0);
        };
        let mut two = Reply::new();
        write(&mut two);
        assert_eq!(
            two.bytes(),
            b"*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n$-1\r\n*-1\r\n:1\r\n*0\r\n"
        );
        let mut three = Reply::new();
        three.set_resp3(true);
        write(&mut three);
        assert_eq!(
            three.bytes(),
            b"%1\r\n$1\r\nk\r\n,1.5\r\n_\r\n_\r\n#t\r\n~0\r\n"
        );
    }

    #[test]
    fn reply_error_counts_and_flattens_line_breaks() {
        let mut reply = Reply::new();
        reply.error(&ErrorReply::new("WRONGTYPE a\r\nb"));
        reply.error(&ErrorReply::err("x"));
        assert_eq!(reply.bytes(), b"-WRONGTYPE a  b\r\n-ERR x\r\n");
        assert_eq!(reply.take_errors(), (2, Some("WRONGTYPE".to_owned())));
        assert_eq!(reply.take_errors(), (0, None));
    }

    #[test]
    fn error_code_is_the_first_word_within_32_bytes() {
        assert_eq!(error_code(b"WRONGTYPE Operation"), "WRONGTYPE");
        assert_eq!(error_code(b"ERR x"), "ERR");
        assert_eq!(error_code(b"NOSPACE"), "ERR");
        let long = format!("{} x", "C".repeat(30));
        assert_eq!(error_code(long.as_bytes()), "C".repeat(30));
        let too_long = format!("{} x", "C".repeat(31));
        assert_eq!(error_code(too_long.as_bytes()), "ERR");
    }

    #[test]
    fn reply_consume_and_truncate_track_what_was_written() {
        let mut reply = Reply::new();
        reply.bulk(b"abcdef");
        assert_eq!(reply.bytes(), b"$6\r\nabcdef\r\n");
        reply.consume(4);
        assert_eq!(reply.bytes(), b"abcdef\r\n");
        let mark = reply.len();
        reply.simple("DROPPED");
        reply.truncate(mark);
        assert_eq!(reply.bytes(), b"abcdef\r\n");
        reply.consume(reply.len());
        assert!(reply.is_empty());
        reply.ok();
        assert_eq!(reply.bytes(), b"+OK\r\n");
        // A large reply written in pieces is moved down once over half of it is written.
        let mut reply = Reply::new();
        reply.bulk(&[b'x'; 1000]);
        reply.consume(600);
        assert_eq!(reply.len(), "$1000\r\n".len() + 1000 + 2 - 600);
        assert_eq!(&reply.bytes()[reply.len() - 2..], b"\r\n");
        reply.discard();
        assert!(reply.is_empty());
    }

    #[test]
    fn format_double_matches_c_percent_17g() {
        let cases = [
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (100.0, "100"),
            (1e17, "1e+17"),
            (1.2345e16, "12345000000000000"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (3.0e-300, "3.0000000000000002e-300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double(d), text, "{d:e}");
        }
    }
}
