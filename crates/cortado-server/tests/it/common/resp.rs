//! Reply frames as tests see them: a small RESP2/RESP3 parser and a command encoder.

use std::fmt;

/// One reply.
#[derive(Clone, PartialEq)]
pub enum Frame {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// `$-1`, `*-1` or RESP3's `_`.
    Null,
    Array(Vec<Frame>),
    Map(Vec<(Frame, Frame)>),
    Set(Vec<Frame>),
    Push(Vec<Frame>),
    Double(String),
    Bool(bool),
    Verbatim(String, Vec<u8>),
    BigNumber(String),
}

impl Frame {
    /// A bulk string frame of `text`.
    pub fn bulk(text: &str) -> Frame {
        Frame::Bulk(text.as_bytes().to_vec())
    }

    /// The frame's bytes as text, for bulk, simple, verbatim strings.
    pub fn text(&self) -> String {
        match self {
            Frame::Simple(s) | Frame::Error(s) | Frame::Double(s) | Frame::BigNumber(s) => {
                s.clone()
            }
            Frame::Bulk(b) | Frame::Verbatim(_, b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("not a string: {other:?}"),
        }
    }

    /// The integer of an integer frame.
    pub fn int(&self) -> i64 {
        match self {
            Frame::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        }
    }

    /// Whether this is an error frame.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Simple(s) => write!(f, "+{s}"),
            Frame::Error(s) => write!(f, "-{s}"),
            Frame::Int(n) => write!(f, ":{n}"),
            Frame::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Frame::Null => write!(f, "(nil)"),
            Frame::Array(items) => f.debug_list().entries(items).finish(),
            Frame::Map(pairs) => f
                .debug_map()
                .entries(pairs.iter().map(|(k, v)| (k, v)))
                .finish(),
            Frame::Set(items) => write!(f, "~{items:?}"),
            Frame::Push(items) => write!(f, ">{items:?}"),
            Frame::Double(d) => write!(f, ",{d}"),
            Frame::Bool(b) => write!(f, "#{b}"),
            Frame::Verbatim(kind, b) => write!(f, "={kind}:{:?}", String::from_utf8_lossy(b)),
            Frame::BigNumber(n) => write!(f, "({n}"),
        }
    }
}

/// A command as a RESP array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Parses one frame from the front of `buf`: the frame and the bytes it took, or `None` if
/// `buf` does not yet hold a whole one.
pub fn parse(buf: &[u8]) -> Option<(Frame, usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[1..end]).ok()?.to_owned();
    let after = end + 2;
    let count = |line: &str| line.parse::<i64>().expect("a length");
    let items = |n: i64, mut at: usize| -> Option<(Vec<Frame>, usize)> {
        let mut out = Vec::new();
        for _ in 0..n {
            let (frame, used) = parse(&buf[at..])?;
            out.push(frame);
            at += used;
        }
        Some((out, at))
    };
    match buf[0] {
        b'+' => Some((Frame::Simple(line), after)),
        b'-' => Some((Frame::Error(line), after)),
        b':' => Some((Frame::Int(count(&line)), after)),
        b',' => Some((Frame::Double(line), after)),
        b'(' => Some((Frame::BigNumber(line), after)),
        b'#' => Some((Frame::Bool(line == "t"), after)),
        b'_' => Some((Frame::Null, after)),
        b'$' | b'=' => {
            let n = count(&line);
            if n < 0 {
                return Some((Frame::Null, after));
            }
            let n = n as usize;
            if buf.len() < after + n + 2 {
                return None;
            }
            let data = buf[after..after + n].to_vec();
            let frame = if buf[0] == b'=' {
                Frame::Verbatim(
                    String::from_utf8_lossy(&data[..3]).into_owned(),
                    data[4..].to_vec(),
                )
            } else {
                Frame::Bulk(data)
            };
            Some((frame, after + n + 2))
        }
        b'*' | b'~' | b'>' => {
            let n = count(&line);
            if n < 0 {
                return Some((Frame::Null, after));
            }
            let (list, used) = items(n, after)?;
            let frame = match buf[0] {
                b'*' => Frame::Array(list),
                b'~' => Frame::Set(list),
                _ => Frame::Push(list),
            };
            Some((frame, used))
        }
        b'%' => {
            let n = count(&line);
            let (list, used) = items(2 * n, after)?;
            let mut pairs = Vec::new();
            let mut it = list.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Some((Frame::Map(pairs), used))
        }
        other => panic!("unexpected reply byte {:?}", other as char),
    }
}

/// Appends `frame` encoded as RESP3 (the form a RESP3 client receives).
pub fn encode_frame(frame: &Frame, out: &mut Vec<u8>) {
    let header = |out: &mut Vec<u8>, prefix: char, n: usize| {
        out.extend_from_slice(format!("{prefix}{n}\r\n").as_bytes());
    };
    match frame {
        Frame::Simple(s) => out.extend_from_slice(format!("+{s}\r\n").as_bytes()),
        Frame::Error(s) => out.extend_from_slice(format!("-{s}\r\n").as_bytes()),
        Frame::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
        Frame::Double(d) => out.extend_from_slice(format!(",{d}\r\n").as_bytes()),
        Frame::BigNumber(n) => out.extend_from_slice(format!("({n}\r\n").as_bytes()),
        Frame::Bool(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Frame::Null => out.extend_from_slice(b"_\r\n"),
        Frame::Bulk(b) => {
            header(out, '$', b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Frame::Verbatim(kind, b) => {
            header(out, '=', b.len() + 4);
            out.extend_from_slice(kind.as_bytes());
            out.push(b':');
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            let prefix = match frame {
                Frame::Array(_) => '*',
                Frame::Set(_) => '~',
                _ => '>',
            };
            header(out, prefix, items.len());
            for item in items {
                encode_frame(item, out);
            }
        }
        Frame::Map(pairs) => {
            header(out, '%', pairs.len());
            for (k, v) in pairs {
                encode_frame(k, out);
                encode_frame(v, out);
            }
        }
    }
}
