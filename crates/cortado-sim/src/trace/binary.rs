//! The binary formats `i32be`, `u32be` and `i64be`: headerless streams of fixed-width big-endian
//! integers, one request per record.
//!
//! Each record becomes one 64-bit key (`i32be` sign-extended, `u32be` zero-extended, `i64be`
//! taken bit for bit); a stream that ends inside a record is an error naming the record.
//!
//! # Design
//!
//! Sign extension is what Caffeine does for the cache2k traces (`DataInputStream.readInt()`
//! into a `long`), so `orm-busy`'s negative type-tagged ids (88 % of its values) become keys near
//! `u64::MAX`, as in `trace2keys.py`. Records are cut from a private [`CHUNK`]-byte buffer filled
//! with `read`, not pulled from the `BufRead` one call at a time: the common case is a bounds
//! check and a byte swap, and only a record straddling two chunks takes the slow path.
//! `trace2keys.py` warns about trailing bytes and drops them; here they are an error, because a
//! binary trace cut mid-record was damaged in transit, and its keys cannot be trusted.

use std::io::{self, Read};

/// Bytes read from the source at a time.
const CHUNK: usize = 64 * 1024;

/// How each record becomes a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Width {
    /// 4-byte signed, sign-extended to 64 bits.
    I32,
    /// 4-byte unsigned.
    U32,
    /// 8-byte, taken as unsigned.
    I64,
}

impl Width {
    /// Record size in bytes.
    pub(super) fn bytes(self) -> usize {
        match self {
            Width::I32 | Width::U32 => 4,
            Width::I64 => 8,
        }
    }
}

/// Why the record stream stopped early.
#[derive(Debug)]
pub(super) enum RecordError {
    /// The source failed after `done` records.
    Io {
        /// The underlying error.
        source: io::Error,
        /// Records returned before the failure.
        done: u64,
    },
    /// The stream ended `got` bytes into record `record` (0-based).
    Truncated {
        /// 0-based index of the incomplete record.
        record: u64,
        /// Bytes of it that were present.
        got: usize,
        /// Record size in bytes.
        width: usize,
    },
}

/// Cuts fixed-width records out of a byte stream.
#[derive(Debug)]
pub(super) struct Records {
    width: Width,
    buf: Box<[u8]>,
    /// Next unread byte in `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Records returned so far.
    record: u64,
}

impl Records {
    /// A reader of `width`-sized records.
    pub(super) fn new(width: Width) -> Self {
        Records {
            width,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            record: 0,
        }
    }

    /// The next key, `None` at a clean end of the stream.
    pub(super) fn next_key(&mut self, input: &mut dyn Read) -> Result<Option<u64>, RecordError> {
        let size = self.width.bytes();
        if self.end - self.pos < size && !self.refill(input, size)? {
            return Ok(None);
        }
        let bytes = &self.buf[self.pos..self.pos + size];
        let key = match self.width {
            Width::I32 => {
                i64::from(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])) as u64
            }
            Width::U32 => u64::from(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            Width::I64 => {
                let mut word = [0; 8];
                word.copy_from_slice(bytes);
                u64::from_be_bytes(word)
            }
        };
        self.pos += size;
        self.record += 1;
        Ok(Some(key))
    }

    /// Makes at least `size` bytes available; `false` when the stream ended cleanly first.
    #[cold]
    fn refill(&mut self, input: &mut dyn Read, size: usize) -> Result<bool, RecordError> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < size {
            match input.read(&mut self.buf[self.end..]) {
                Ok(0) if self.end == 0 => return Ok(false),
                Ok(0) => {
                    return Err(RecordError::Truncated {
                        record: self.record,
                        got: self.end,
                        width: size,
                    })
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(RecordError::Io {
                        source,
                        done: self.record,
                    })
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::{Records, Width};
    use crate::trace::{read_bytes, Format, TraceError};

    #[test]
    fn i32be_negative_values_sign_extended() {
        let input = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0, 0, 0, 0, 0, 0x01, 0x02, 0x7F, 0xFF, 0xFF, 0xFF,
        ];
        let keys = read_bytes(&input, Format::I32Be).unwrap();
        // -1, i32::MIN, 258, i32::MAX as two's complement 64-bit values.
        assert_eq!(
            keys,
            vec![u64::MAX, 0xFFFF_FFFF_8000_0000, 258, 0x7FFF_FFFF]
        );
    }

    #[test]
    fn u32be_high_bit_zero_extended() {
        let input = [0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0, 0, 1];
        let keys = read_bytes(&input, Format::U32Be).unwrap();
        assert_eq!(keys, vec![0xFFFF_FFFF, 0x8000_0001]);
    }

    #[test]
    fn i64be_bits_taken_as_unsigned() {
        let mut input = Vec::new();
        input.extend_from_slice(&(-2i64).to_be_bytes());
        input.extend_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        let keys = read_bytes(&input, Format::I64Be).unwrap();
        assert_eq!(keys, vec![u64::MAX - 1, 0x0102_0304_0506_0708]);
    }

    /// A source that returns at most 3 bytes per read, so records straddle reads.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(out.len()).min(3);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn binary_records_straddling_reads_decoded() {
        let values: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let mut records = Records::new(Width::I64);
        let mut source = Trickle(&bytes);
        let mut keys = Vec::new();
        while let Some(key) = records.next_key(&mut source).unwrap() {
            keys.push(key);
        }
        assert_eq!(keys, values);
    }

    #[test]
    fn binary_truncated_record_errors_with_record_and_offset() {
        let err = read_bytes(&[0, 0, 0, 1, 0, 0, 0, 2, 0xAB, 0xCD], Format::I32Be).unwrap_err();
        match err {
            TraceError::Truncated {
                record,
                offset,
                got,
                width,
                ..
            } => assert_eq!((record, offset, got, width), (2, 8, 2, 4)),
            other => panic!("unexpected error {other}"),
        }
        let err = read_bytes(&[0; 12], Format::I64Be).unwrap_err();
        assert!(
            matches!(err, TraceError::Truncated { record: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn binary_empty_stream_has_no_keys() {
        assert_eq!(read_bytes(&[], Format::I64Be).unwrap(), Vec::<u64>::new());
    }
}
