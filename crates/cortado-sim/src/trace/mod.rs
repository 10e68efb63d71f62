//! Trace readers: each trace file becomes a lazy stream of `u64` keys, one per request.
//!
//! [`open`] returns a [`Reader`] that yields exactly the key sequence `trace2keys.py` (the
//! reference converter next to the shared traces) produces for the same well-formed file, for
//! every [`Format`], gzip-compressed or not; a malformed line or a truncated binary record ends
//! the stream with a [`TraceError`] naming the file and the line (or record), never a panic and
//! never a silently dropped request.
//!
//! # Design
//!
//! - **Lazy and streaming.** A [`Reader`] holds one 256 KiB input buffer ([`BUFFER`]), one reused
//!   line buffer and, for `arc`, the rest of the current line's block range. Nothing grows with the
//!   trace, so a 13M-request trace streams in constant memory. [`load`] is the exception on
//!   purpose: the simulator replays one trace through many policies in parallel and shares a
//!   `Vec<u64>` of its keys, 8 bytes per request (106 MB for P12's 13.2M requests).
//! - **Bytes, not strings.** Text formats are split with `read_until` and parsed digit by digit
//!   (module `text`); there is no `String` per line and no regex. Binary formats cut records from
//!   a private chunk (module `binary`). Reading P12 must stay well below the replay itself, which
//!   aims at more than 10M requests per second.
//! - **Compression by content.** A gzip stream is recognised by its magic bytes `1f 8b 08`, not by
//!   the file name, and decoded with a multi-member decoder (a `.gz` made by `cat a.gz b.gz` is
//!   one stream). xz, bzip2 and zstd are recognised too, but only to say they are unsupported.
//!   Binary formats are checked as well, as `trace2keys.py` does: raw records could start with
//!   a magic by chance, but an `.xz` trace (as Caffeine ships the cache2k ones) read as raw
//!   records gives a plausible-looking garbage key sequence.
//! - **Format from the name.** Shared traces are named `NAME.FORMAT[.gz]`
//!   ([`Format::from_path`]); binary formats cannot be told apart by content, so there is no
//!   sniffing: an unknown extension is an error unless the caller names the format.
//! - **Stricter than the converter.** Signs, `_` digit separators and numbers above `u64::MAX`
//!   are errors here, where Python's `int()` accepts or wraps them, and so are trailing bytes
//!   after the last whole binary record, which the converter drops with a warning. None of the
//!   shared traces has any; all 21 give byte-identical `keys` output.
//! - **Errors end the stream.** After an error the reader returns `None`: a replay of a damaged
//!   trace must stop, not skip the bad request. Text errors carry the 1-based line number and the
//!   line itself; binary errors carry the record number and its byte offset.
//!
//! Each format lives in its own module: `lirs`, `arc`, `binary` (i32be, u32be, i64be), `csv`
//! and `keys`, where their rules are explained.
//!
//! # References
//!
//! 1. `../shared/traces/README.md` (from the repository root) and `trace2keys.py`: the format
//!    definitions and the reference key sequences.
//! 2. B. Manes: the Caffeine simulator's trace readers (`parser/*`), one lazy stream per format.
//! 3. J. Yang et al.: libCacheSim's csv and binary readers (the csv header rules).

mod arc;
mod binary;
mod csv;
mod keys;
mod lirs;
mod text;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::iter::FusedIterator;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use flate2::read::MultiGzDecoder;

use binary::{RecordError, Records, Width};
use text::{LineKeys, Lines};

/// Bytes buffered between the file (or the gzip decoder) and the parser.
pub const BUFFER: usize = 256 * 1024;

/// Bytes of an offending line shown in an error message.
const SHOWN_LINE: usize = 80;

/// A trace file format, named as in `../shared/traces/README.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One block number per line; `*` markers and blank lines skipped.
    Lirs,
    /// `start count ignored request_no` lines, each expanding into `count` consecutive keys.
    Arc,
    /// 4-byte big-endian signed integers, sign-extended to 64 bits.
    I32Be,
    /// 8-byte big-endian integers, taken as unsigned.
    I64Be,
    /// 4-byte big-endian unsigned integers.
    U32Be,
    /// Comma-separated text; the key column is found from the header (Twitter, CloudPhysics).
    Csv,
    /// One unsigned decimal key per line (the canonical form).
    Keys,
}

impl Format {
    /// Every format, in the order the names are listed in messages.
    pub const ALL: [Format; 7] = [
        Format::Lirs,
        Format::Arc,
        Format::I32Be,
        Format::I64Be,
        Format::U32Be,
        Format::Csv,
        Format::Keys,
    ];

    /// The format's name: the `FORMAT` of `NAME.FORMAT[.gz]` and the value of `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Lirs => "lirs",
            Format::Arc => "arc",
            Format::I32Be => "i32be",
            Format::I64Be => "i64be",
            Format::U32Be => "u32be",
            Format::Csv => "csv",
            Format::Keys => "keys",
        }
    }

    /// Whether the format is fixed-width binary records rather than text lines.
    pub fn is_binary(self) -> bool {
        matches!(self, Format::I32Be | Format::I64Be | Format::U32Be)
    }

    /// The format named by a file name `NAME.FORMAT` or `NAME.FORMAT.gz` (case-insensitive);
    /// `None` when the extension names no format.
    pub fn from_path(path: &Path) -> Option<Format> {
        let (_, format) = split_name(path);
        format
    }

    /// The comma-separated list of format names, for messages.
    fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = ParseFormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseFormatError { name: s.to_owned() })
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseFormatError {
    /// The name given.
    pub name: String,
}

impl fmt::Display for ParseFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown trace format `{}` (expected one of: {})",
            self.name,
            Format::names()
        )
    }
}

impl std::error::Error for ParseFormatError {}

/// Why a trace could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// No format was given and the file name `NAME.FORMAT[.gz]` names none.
    UnknownFormat {
        /// The trace file.
        path: PathBuf,
    },
    /// The file is compressed with something other than gzip.
    UnsupportedCompression {
        /// The trace file.
        path: PathBuf,
        /// The compression recognised from the magic bytes (`xz`, `bzip2`, `zstd`).
        method: &'static str,
    },
    /// Opening, reading or decompressing the file failed.
    Io {
        /// The trace file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Reading or decompressing failed partway through the trace (a corrupt or cut-off
    /// compressed file, a read error).
    ReadFailed {
        /// The trace file.
        path: PathBuf,
        /// `line` for a text format, `record` for a binary one.
        unit: &'static str,
        /// How many lines or records were read before the failure.
        done: u64,
        /// The underlying error.
        source: io::Error,
    },
    /// A text line does not fit the format.
    Malformed {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number in the decompressed text.
        line: u64,
        /// What is wrong with it.
        reason: String,
        /// The line itself, trimmed and cut to a readable length.
        text: String,
    },
    /// A binary stream ends inside a record.
    Truncated {
        /// The trace file.
        path: PathBuf,
        /// 0-based index of the incomplete record (the number of complete records before it).
        record: u64,
        /// Byte offset of that record in the decompressed stream.
        offset: u64,
        /// Bytes of the record present.
        got: usize,
        /// Record size in bytes.
        width: usize,
    },
}

impl TraceError {
    /// The trace file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            TraceError::UnknownFormat { path }
            | TraceError::UnsupportedCompression { path, .. }
            | TraceError::Io { path, .. }
            | TraceError::ReadFailed { path, .. }
            | TraceError::Malformed { path, .. }
            | TraceError::Truncated { path, .. } => path,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path().display();
        match self {
            TraceError::UnknownFormat { .. } => write!(
                f,
                "{path}: cannot tell the trace format from the file name (expected \
                 NAME.FORMAT[.gz] with FORMAT one of: {}); name the format explicitly",
                Format::names()
            ),
            TraceError::UnsupportedCompression { method, .. } => write!(
                f,
                "{path}: {method}-compressed input is not supported; decompress it or \
                 recompress it with gzip"
            ),
            TraceError::Io { source, .. } => write!(f, "{path}: {source}"),
            TraceError::ReadFailed {
                unit: what,
                done: 0,
                source,
                ..
            } => write!(f, "{path}: read failed before the first {what}: {source}"),
            TraceError::ReadFailed {
                unit: what,
                done,
                source,
                ..
            } => write!(f, "{path}: read failed after {what} {done}: {source}"),
            TraceError::Malformed {
                line, reason, text, ..
            } => write!(f, "{path}:{line}: {reason}: `{text}`"),
            TraceError::Truncated {
                record,
                offset,
                got,
                width,
                ..
            } => write!(
                f,
                "{path}: truncated record {record} at byte offset {offset}: the stream ends \
                 after {got} of its {width} bytes"
            ),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } | TraceError::ReadFailed { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Opens a trace file as a lazy stream of keys.
///
/// The format is `format` if given, otherwise taken from the file name ([`Format::from_path`]).
/// gzip input is decompressed transparently.
pub fn open(path: &Path, format: Option<Format>) -> Result<Reader, TraceError> {
    let format = match format.or_else(|| Format::from_path(path)) {
        Some(format) => format,
        None => {
            return Err(TraceError::UnknownFormat {
                path: path.to_owned(),
            })
        }
    };
    let file = File::open(path).map_err(|source| TraceError::Io {
        path: path.to_owned(),
        source,
    })?;
    Reader::new(file, format, path)
}

/// Reads a whole trace into memory: 8 bytes per request.
pub fn load(path: &Path, format: Option<Format>) -> Result<Vec<u64>, TraceError> {
    open(path, format)?.collect()
}

/// The trace's name: its file name without `.FORMAT[.gz]` (`p3.arc.gz` gives `p3`).
///
/// An extension that names no format is kept (`a.bin.gz` gives `a.bin`).
pub fn name(path: &Path) -> String {
    let (name, _) = split_name(path);
    name
}

/// Splits a file name into the trace name and the format its extension names.
fn split_name(path: &Path) -> (String, Option<Format>) {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match file.len().checked_sub(3) {
        Some(cut) if file.is_char_boundary(cut) && file[cut..].eq_ignore_ascii_case(".gz") => {
            &file[..cut]
        }
        _ => &file[..],
    };
    if let Some((name, ext)) = stem.rsplit_once('.') {
        if let (false, Ok(format)) = (name.is_empty(), ext.parse::<Format>()) {
            return (name.to_owned(), Some(format));
        }
    }
    (stem.to_owned(), None)
}

/// A lazy stream of the keys of one trace; see the [module docs](self).
///
/// Yields `Ok(key)` per request, or one `Err` after which it is finished.
pub struct Reader {
    path: PathBuf,
    format: Format,
    input: Box<dyn BufRead + Send>,
    decoder: Decoder,
    /// The next key of the current `arc` range.
    next_key: u64,
    /// Keys of the current `arc` range still to return.
    left: u64,
    /// Set at the end of the input or after an error.
    done: bool,
}

/// Per-format parsing state.
enum Decoder {
    Text { lines: Lines, kind: TextKind },
    Binary(Records),
}

/// The text formats.
enum TextKind {
    Lirs,
    Arc,
    Keys,
    Csv(csv::Csv),
}

impl Reader {
    /// Reads a trace of `format` from any byte source, decompressing gzip transparently;
    /// `path` is only used to name the trace in errors.
    ///
    /// Reads the first bytes of `source` to detect compression.
    pub fn new(
        source: impl Read + Send + 'static,
        format: Format,
        path: impl Into<PathBuf>,
    ) -> Result<Reader, TraceError> {
        let path = path.into();
        let (head, source) = peek(source).map_err(|source| TraceError::Io {
            path: path.clone(),
            source,
        })?;
        let method = compression(&head);
        let source = Cursor::new(head).chain(source);
        let input: Box<dyn BufRead + Send> = match method {
            Some("gzip") => Box::new(BufReader::with_capacity(
                BUFFER,
                MultiGzDecoder::new(source),
            )),
            Some(method) => return Err(TraceError::UnsupportedCompression { path, method }),
            None => Box::new(BufReader::with_capacity(BUFFER, source)),
        };
        let decoder = match format {
            Format::Lirs => Decoder::text(TextKind::Lirs),
            Format::Arc => Decoder::text(TextKind::Arc),
            Format::Keys => Decoder::text(TextKind::Keys),
            Format::Csv => Decoder::text(TextKind::Csv(csv::Csv::default())),
            Format::I32Be => Decoder::Binary(Records::new(Width::I32)),
            Format::I64Be => Decoder::Binary(Records::new(Width::I64)),
            Format::U32Be => Decoder::Binary(Records::new(Width::U32)),
        };
        Ok(Reader {
            path,
            format,
            input,
            decoder,
            next_key: 0,
            left: 0,
            done: false,
        })
    }

    /// The trace file, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format being read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Decodes the next line or record; `Ok(None)` at the end of the input.
    fn advance(&mut self) -> Result<Option<u64>, TraceError> {
        match &mut self.decoder {
            Decoder::Binary(records) => {
                records
                    .next_key(&mut self.input)
                    .map_err(|error| match error {
                        RecordError::Io { source, done } => TraceError::ReadFailed {
                            path: self.path.clone(),
                            unit: "record",
                            done,
                            source,
                        },
                        RecordError::Truncated { record, got, width } => TraceError::Truncated {
                            path: self.path.clone(),
                            record,
                            offset: record * width as u64,
                            got,
                            width,
                        },
                    })
            }
            Decoder::Text { lines, kind } => loop {
                let line = match lines.next_line(&mut *self.input) {
                    Ok(Some(line)) => line,
                    Ok(None) => return Ok(None),
                    Err(source) => {
                        return Err(TraceError::ReadFailed {
                            path: self.path.clone(),
                            unit: "line",
                            done: lines.number(),
                            source,
                        })
                    }
                };
                let parsed = match kind {
                    TextKind::Lirs => lirs::parse(line),
                    TextKind::Arc => arc::parse(line),
                    TextKind::Keys => keys::parse(line),
                    TextKind::Csv(csv) => csv.parse(line),
                };
                match parsed {
                    Ok(LineKeys::Range { first, count }) if count > 0 => {
                        self.next_key = first.wrapping_add(1);
                        self.left = count - 1;
                        return Ok(Some(first));
                    }
                    Ok(_) => {}
                    Err(reason) => {
                        let shown = lines.current();
                        let mut text =
                            String::from_utf8_lossy(&shown[..shown.len().min(SHOWN_LINE)])
                                .into_owned();
                        if shown.len() > SHOWN_LINE {
                            text.push_str("...");
                        }
                        return Err(TraceError::Malformed {
                            path: self.path.clone(),
                            line: lines.number(),
                            reason,
                            text,
                        });
                    }
                }
            },
        }
    }
}

impl Decoder {
    fn text(kind: TextKind) -> Decoder {
        Decoder::Text {
            lines: Lines::default(),
            kind,
        }
    }
}

impl Iterator for Reader {
    type Item = Result<u64, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left > 0 {
            self.left -= 1;
            let key = self.next_key;
            self.next_key = key.wrapping_add(1);
            return Some(Ok(key));
        }
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(key)) => Some(Ok(key)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl FusedIterator for Reader {}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Magic bytes read ahead to recognise compression (xz's is the longest).
const MAGIC: usize = 6;

/// Reads the first [`MAGIC`] bytes (fewer if the source is shorter) and hands back the source.
fn peek<R: Read>(mut source: R) -> io::Result<(Vec<u8>, R)> {
    let mut head = vec![0; MAGIC];
    let mut got = 0;
    while got < MAGIC {
        match source.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    Ok((head, source))
}

/// The compression `head` announces, if any.
fn compression(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x1f, 0x8b, 0x08]) {
        Some("gzip")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Some("xz")
    } else if head.starts_with(b"BZh") {
        Some("bzip2")
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("zstd")
    } else {
        None
    }
}

/// Reads all keys of an in-memory trace.
#[cfg(test)]
fn read_bytes(data: &[u8], format: Format) -> Result<Vec<u64>, TraceError> {
    Reader::new(Cursor::new(data.to_vec()), format, "memory")?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    /// A fresh path in the temp directory, removed when dropped.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str, contents: &[u8]) -> TempFile {
            let dir =
                std::env::temp_dir().join(format!("cortado-sim-trace-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(name);
            std::fs::write(&path, contents).unwrap();
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn format_names_round_trip_case_insensitive() {
        for format in Format::ALL {
            assert_eq!(format.name().parse::<Format>(), Ok(format));
            assert_eq!(
                format.to_string().to_uppercase().parse::<Format>(),
                Ok(format)
            );
        }
    }

    #[test]
    fn format_unknown_name_error_lists_valid_names() {
        let err = "lis".parse::<Format>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("`lis`"), "{message}");
        for format in Format::ALL {
            assert!(message.contains(format.name()), "{message}");
        }
    }

    #[test]
    fn format_from_path_reads_extension_before_gz() {
        let cases = [
            ("/x/p3.arc.gz", Some(Format::Arc)),
            ("loop.lirs.gz", Some(Format::Lirs)),
            ("orm-busy.i32be.GZ", Some(Format::I32Be)),
            ("scarab-recs.i64be", Some(Format::I64Be)),
            ("w106.u32be.gz", Some(Format::U32Be)),
            ("twitter-c52.csv.gz", Some(Format::Csv)),
            ("zipf.keys", Some(Format::Keys)),
            ("p3.gz", None),
            ("trace.bin", None),
            ("README.md", None),
            (".lirs", None),
            ("lirs", None),
        ];
        for (path, want) in cases {
            assert_eq!(Format::from_path(Path::new(path)), want, "{path}");
        }
    }

    #[test]
    fn name_strips_format_and_gz() {
        assert_eq!(name(Path::new("/traces/p3.arc.gz")), "p3");
        assert_eq!(name(Path::new("cloudphysics-io.csv.gz")), "cloudphysics-io");
        assert_eq!(name(Path::new("multi.part.keys")), "multi.part");
        assert_eq!(name(Path::new("a.bin.gz")), "a.bin");
        assert_eq!(name(Path::new("plain")), "plain");
    }

    #[test]
    fn reader_gzip_input_decoded_transparently() {
        let plain = b"3\n*\n1\n4\n1\n5\n";
        let keys = read_bytes(&gzip(plain), Format::Lirs).unwrap();
        assert_eq!(keys, read_bytes(plain, Format::Lirs).unwrap());
        assert_eq!(keys, vec![3, 1, 4, 1, 5]);
    }

    #[test]
    fn reader_concatenated_gzip_members_read_as_one_stream() {
        let mut data = gzip(&[0, 0, 0, 1]);
        data.extend(gzip(&[0xFF, 0xFF, 0xFF, 0xFE]));
        let keys = read_bytes(&data, Format::I32Be).unwrap();
        assert_eq!(keys, vec![1, u64::MAX - 1]);
    }

    #[test]
    fn reader_gzip_malformed_line_reports_decompressed_line_number() {
        let err = read_bytes(&gzip(b"1 1 0 0\n\n2 1 0 1\n3 1 zero 2\n"), Format::Arc).unwrap_err();
        assert!(
            matches!(err, TraceError::Malformed { line: 4, .. }),
            "{err}"
        );
        assert!(err.to_string().starts_with("memory:4: "), "{err}");
    }

    #[test]
    fn reader_corrupt_gzip_gives_read_error() {
        let mut data = gzip(b"1\n2\n3\n");
        let n = data.len();
        data.truncate(n - 10);
        let err = read_bytes(&data, Format::Lirs).unwrap_err();
        assert!(matches!(err, TraceError::ReadFailed { .. }), "{err}");
    }

    #[test]
    fn reader_gzip_cut_mid_trace_names_lines_and_records_read() {
        let text: String = (0..100_000).map(|i| format!("{i}\n")).collect();
        let mut data = gzip(text.as_bytes());
        data.truncate(data.len() / 2);
        let err = read_bytes(&data, Format::Lirs).unwrap_err();
        let TraceError::ReadFailed {
            unit: "line", done, ..
        } = err
        else {
            panic!("{err}");
        };
        assert!((1..100_000).contains(&done), "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("memory: read failed after line {done}: ")),
            "{err}"
        );

        let records: Vec<u8> = (0..100_000u32).flat_map(u32::to_be_bytes).collect();
        let mut data = gzip(&records);
        data.truncate(data.len() / 2);
        let err = read_bytes(&data, Format::I32Be).unwrap_err();
        assert!(
            matches!(err, TraceError::ReadFailed { unit: "record", done, .. } if done > 0),
            "{err}"
        );
    }

    #[test]
    fn reader_zstd_text_input_gives_unsupported_compression() {
        let err = read_bytes(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0], Format::Keys).unwrap_err();
        assert!(
            matches!(
                err,
                TraceError::UnsupportedCompression { method: "zstd", .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn reader_xz_or_zstd_binary_input_gives_unsupported_compression() {
        // Caffeine ships the cache2k traces as `.trace.xz`: read with `--format i32be`, the
        // compressed bytes came back as keys (the 12 bytes below as 3 "requests"), where
        // `trace2keys.py` decompresses them.
        for (head, method) in [
            (&[0xfd, b'7', b'z', b'X', b'Z', 0x00][..], "xz"),
            (&[0x28, 0xb5, 0x2f, 0xfd][..], "zstd"),
        ] {
            let mut data = head.to_vec();
            data.resize(12, 0);
            for format in [Format::I32Be, Format::I64Be, Format::U32Be] {
                let err = read_bytes(&data, format).unwrap_err();
                assert!(
                    matches!(err, TraceError::UnsupportedCompression { method: m, .. } if m == method),
                    "{format}: {err}"
                );
            }
        }
    }

    #[test]
    fn reader_after_error_returns_none() {
        let mut reader =
            Reader::new(Cursor::new(b"1\nx\n2\n".to_vec()), Format::Keys, "m").unwrap();
        assert_eq!(reader.next().unwrap().unwrap(), 1);
        assert!(reader.next().unwrap().is_err());
        assert!(reader.next().is_none());
        assert!(reader.next().is_none());
    }

    #[test]
    fn malformed_error_names_file_line_and_text() {
        let err = read_bytes(b"1\n2\n3 4\n", Format::Lirs).unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with("memory:3: "), "{message}");
        assert!(message.contains("`3 4`"), "{message}");
    }

    #[test]
    fn open_gzip_file_loads_keys_and_names_format_from_extension() {
        let file = TempFile::new("open-test.arc.gz", &gzip(b"10 2 0 0\n20 1 0 1\n"));
        assert_eq!(load(&file.0, None).unwrap(), vec![10, 11, 20]);
        // An explicit format wins over the name.
        let file = TempFile::new("open-test.keys", b"7 1 0 0\n");
        assert_eq!(load(&file.0, Some(Format::Arc)).unwrap(), vec![7]);
    }

    #[test]
    fn open_unknown_extension_errors_without_format() {
        let err = open(Path::new("/nonexistent/trace.bin"), None).unwrap_err();
        assert!(matches!(err, TraceError::UnknownFormat { .. }), "{err}");
        assert!(err.to_string().contains("trace.bin"), "{err}");
    }

    #[test]
    fn open_missing_file_gives_io_error_naming_it() {
        let err = open(Path::new("/nonexistent/p3.arc.gz"), None).unwrap_err();
        assert!(matches!(err, TraceError::Io { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/p3.arc.gz"), "{err}");
    }
}
