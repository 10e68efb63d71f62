//! What the keyspace stores: keys and string values as [`CompactBytes`], values as [`Value`].
//!
//! # Design
//!
//! Most cache keys and many values are short (ids, counters, flags, tokens), and a heap
//! allocation per string costs more than the string: 16 bytes of allocator header and rounding
//! on top of the pointer and length that refer to it. So strings of up to [`INLINE`] bytes are
//! stored in the 24 bytes that a boxed slice's pointer and length would take, and only longer
//! ones are allocated. A key and a value of 16 bytes each then cost their 48 bytes in the
//! cache's slot and nothing more.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

/// The longest string kept inline: what is left of 24 bytes after the variant's tag and the
/// length byte.
pub const INLINE: usize = 22;

/// A byte string kept inline when short, boxed when long. See the [module docs](self).
#[derive(Clone)]
pub enum CompactBytes {
    /// Up to [`INLINE`] bytes, `len` of them used.
    Inline { len: u8, data: [u8; INLINE] },
    /// Longer strings.
    Heap(Box<[u8]>),
}

impl CompactBytes {
    /// A copy of `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut data = [0; INLINE];
            data[..bytes.len()].copy_from_slice(bytes);
            Self::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else {
            Self::Heap(bytes.into())
        }
    }

    /// Takes `bytes`, keeping its allocation if it is too long to be inline.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE {
            Self::new(&bytes)
        } else {
            Self::Heap(bytes.into_boxed_slice())
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline { len, data } => &data[..*len as usize],
            Self::Heap(bytes) => bytes,
        }
    }

    /// The number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Self::Inline { len, .. } => *len as usize,
            Self::Heap(bytes) => bytes.len(),
        }
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated on the heap for this string (0 when inline).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Inline { .. } => 0,
            Self::Heap(bytes) => bytes.len(),
        }
    }

    /// The bytes as a vector to change (a copy when inline).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Inline { len, data } => data[..len as usize].to_vec(),
            Self::Heap(bytes) => bytes.into_vec(),
        }
    }
}

impl Default for CompactBytes {
    fn default() -> Self {
        Self::new(&[])
    }
}

impl Borrow<[u8]> for CompactBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

// Hashes as the byte slice does, so that a `&[u8]` finds its key (`Borrow`'s contract).
impl Hash for CompactBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq for CompactBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CompactBytes {}

impl fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

/// A value of the keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string (Redis's strings are binary, and integers and floats are strings too).
    Str(CompactBytes),
}

/// The reply of `TYPE` and the `SCAN ... TYPE` filter's name for each kind of value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `string`
    Str,
}

impl Kind {
    /// The name Redis gives the type.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
        }
    }

    /// The type named `name` (as `TYPE` replies it), if there is one.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        name.eq_ignore_ascii_case(b"string").then_some(Kind::Str)
    }
}

impl Value {
    /// A string value holding a copy of `bytes`.
    pub fn string(bytes: &[u8]) -> Self {
        Value::Str(CompactBytes::new(bytes))
    }

    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Str(_) => Kind::Str,
        }
    }

    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&CompactBytes> {
        match self {
            Value::Str(s) => Some(s),
        }
    }

    /// Bytes the value holds on the heap, beside its 24 bytes in the cache's slot.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_bytes(),
        }
    }

    /// The encoding `OBJECT ENCODING` reports, by Redis's rules for a string written whole:
    /// `int` for an integer of up to 20 characters, `embstr` up to 44 bytes, `raw` beyond.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                let bytes = s.as_slice();
                if bytes.len() <= 20 && crate::protocol::parse_i64(bytes).is_some() {
                    "int"
                } else if bytes.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_bytes_takes_the_space_of_a_boxed_slice() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }

    #[test]
    fn compact_bytes_short_is_inline_long_is_boxed() {
        for len in [0, 1, INLINE, INLINE + 1, 100] {
            let bytes: Vec<u8> = (0..len as u8).collect();
            let compact = CompactBytes::new(&bytes);
            assert_eq!(compact.as_slice(), &bytes[..]);
            assert_eq!(compact.len(), len);
            assert_eq!(compact.heap_bytes(), if len <= INLINE { 0 } else { len });
            assert_eq!(CompactBytes::from_vec(bytes.clone()), compact);
            assert_eq!(compact.clone().into_vec(), bytes);
        }
    }

    #[test]
    fn compact_bytes_hashes_as_its_slice() {
        use std::hash::BuildHasher;
        let hasher = std::collections::hash_map::RandomState::new();
        for bytes in [&b"short"[..], &[7u8; 40][..]] {
            assert_eq!(
                hasher.hash_one(CompactBytes::new(bytes)),
                hasher.hash_one(bytes)
            );
        }
    }

    #[test]
    fn value_encoding_follows_redis_rules() {
        assert_eq!(Value::string(b"12345").encoding(), "int");
        assert_eq!(Value::string(b"-1").encoding(), "int");
        assert_eq!(Value::string(b"012").encoding(), "embstr");
        assert_eq!(Value::string(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(Value::string(&[b'a'; 45]).encoding(), "raw");
    }
}
