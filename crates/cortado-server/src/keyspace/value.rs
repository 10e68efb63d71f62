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
//!
//! A string changed in place ([`CompactBytes::edit`]: `APPEND`, `SETRANGE`, `SETBIT`) grows as
//! Redis's strings do, into room allocated ahead: twice the new length up to 1 MiB, 1 MiB more
//! beyond ([`GROW_DOUBLING_LIMIT`]). Without it every `APPEND` reallocated the whole string, and
//! a client building a long string 100 bytes at a time was served four times slower than by
//! Redis. The room's size lives in the padding beside the boxed slice, so the string is still
//! 24 bytes; a fresh or copied string has none.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

/// The longest string kept inline: what is left of 24 bytes after the variant's tag and the
/// length byte.
pub const INLINE: usize = 22;

/// The low bits of an inline string's length byte that hold its length (22 needs five); the
/// high bits hold the [tag](CompactBytes::tag).
const LEN_MASK: u8 = 0x1f;
const TAG_SHIFT: u32 = 5;

/// The largest [tag](CompactBytes::tag).
pub const MAX_TAG: u8 = 7;

/// Up to this length, a string that must grow gets room for twice its new length; beyond, 1 MiB
/// more (Redis's `SDS_MAX_PREALLOC`), so the room stays within twice the string and a MiB.
pub const GROW_DOUBLING_LIMIT: usize = 1 << 20;

/// A byte string kept inline when short, boxed when long, with a small tag its owner may use
/// (string values record how they were written in it). See the [module docs](self).
pub struct CompactBytes(Repr);

enum Repr {
    /// Up to [`INLINE`] bytes; `meta` holds the length and the tag.
    Inline { meta: u8, data: [u8; INLINE] },
    /// Longer strings: the first `bytes.len() - spare` bytes, then room to grow into.
    Heap {
        tag: u8,
        spare: u32,
        bytes: Box<[u8]>,
    },
}

impl CompactBytes {
    /// A copy of `bytes`, tagged 0.
    #[inline]
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut data = [0; INLINE];
            data[..bytes.len()].copy_from_slice(bytes);
            Self(Repr::Inline {
                meta: bytes.len() as u8,
                data,
            })
        } else {
            Self(Repr::Heap {
                tag: 0,
                spare: 0,
                bytes: bytes.into(),
            })
        }
    }

    /// Takes `bytes`, keeping its allocation (trimmed to its length) if it is too long to be
    /// inline; tagged 0.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE {
            Self::new(&bytes)
        } else {
            Self(Repr::Heap {
                tag: 0,
                spare: 0,
                bytes: bytes.into_boxed_slice(),
            })
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { meta, data } => &data[..(meta & LEN_MASK) as usize],
            Repr::Heap { spare, bytes, .. } => &bytes[..bytes.len() - *spare as usize],
        }
    }

    /// The number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Inline { meta, .. } => (meta & LEN_MASK) as usize,
            Repr::Heap { spare, bytes, .. } => bytes.len() - *spare as usize,
        }
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tag, 0 to [`MAX_TAG`]: not part of the string (equality and hashing ignore it).
    #[inline]
    pub fn tag(&self) -> u8 {
        match &self.0 {
            Repr::Inline { meta, .. } => meta >> TAG_SHIFT,
            Repr::Heap { tag, .. } => *tag,
        }
    }

    /// The same bytes with the tag `tag` (at most [`MAX_TAG`]).
    #[inline]
    pub fn with_tag(mut self, tag: u8) -> Self {
        debug_assert!(tag <= MAX_TAG);
        match &mut self.0 {
            Repr::Inline { meta, .. } => *meta = (*meta & LEN_MASK) | (tag << TAG_SHIFT),
            Repr::Heap { tag: t, .. } => *t = tag,
        }
        self
    }

    /// Bytes allocated on the heap for this string (0 when inline), its room to grow included.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Heap { bytes, .. } => bytes.len(),
        }
    }

    /// The bytes as a vector (a copy when inline).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { meta, data } => data[..(meta & LEN_MASK) as usize].to_vec(),
            Repr::Heap { spare, bytes, .. } => {
                let mut bytes = bytes.into_vec();
                bytes.truncate(bytes.len() - spare as usize);
                bytes
            }
        }
    }

    /// Changes the string in place through `edit`, which gets it as a [`Growable`]: a string
    /// that grows gets room ahead (see the [module docs](self)), and one that grows again into
    /// that room is not reallocated. The tag stays.
    pub fn edit<R>(&mut self, edit: impl FnOnce(&mut Growable) -> R) -> R {
        let tag = self.tag();
        let mut growable = match std::mem::take(self).0 {
            Repr::Inline { meta, data } => Growable {
                bytes: data[..(meta & LEN_MASK) as usize].to_vec(),
                len: (meta & LEN_MASK) as usize,
            },
            Repr::Heap { spare, bytes, .. } => {
                let bytes = bytes.into_vec();
                Growable {
                    len: bytes.len() - spare as usize,
                    bytes,
                }
            }
        };
        let result = edit(&mut growable);
        *self = growable.finish().with_tag(tag);
        result
    }
}

/// A string being changed in place: see [`CompactBytes::edit`].
pub struct Growable {
    /// The string, then room: all of the allocation, initialized.
    bytes: Vec<u8>,
    len: usize,
}

impl Growable {
    /// The string's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The string, to change.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.len]
    }

    /// Appends `tail`.
    pub fn extend_from_slice(&mut self, tail: &[u8]) {
        let end = self.len + tail.len();
        self.make_room(end);
        self.bytes[self.len..end].copy_from_slice(tail);
        self.len = end;
    }

    /// Lengthens the string to `new_len` with zero bytes (no change if it is as long).
    pub fn grow_zeroed(&mut self, new_len: usize) {
        if new_len <= self.len {
            return;
        }
        self.make_room(new_len);
        self.bytes[self.len..new_len].fill(0);
        self.len = new_len;
    }

    /// Makes the allocation hold at least `needed` bytes, with room ahead when it grows.
    fn make_room(&mut self, needed: usize) {
        if needed <= self.bytes.len() {
            return;
        }
        let target = if needed < GROW_DOUBLING_LIMIT {
            needed * 2
        } else {
            needed + GROW_DOUBLING_LIMIT
        };
        self.bytes.reserve_exact(target - self.bytes.len());
        self.bytes.resize(target, 0);
    }

    /// The string as kept: inline if short enough, else boxed with its room.
    fn finish(self) -> CompactBytes {
        let Growable { mut bytes, len } = self;
        if len <= INLINE {
            return CompactBytes::new(&bytes[..len]);
        }
        // The room's size must fit its field; a larger room (a string past 4 GiB) is trimmed.
        bytes.truncate(len + (bytes.len() - len).min(u32::MAX as usize));
        let spare = (bytes.len() - len) as u32;
        CompactBytes(Repr::Heap {
            tag: 0,
            spare,
            bytes: bytes.into_boxed_slice(),
        })
    }
}

impl Clone for CompactBytes {
    /// A copy of the string, without its room to grow.
    fn clone(&self) -> Self {
        match &self.0 {
            Repr::Inline { meta, data } => Self(Repr::Inline {
                meta: *meta,
                data: *data,
            }),
            Repr::Heap { tag, .. } => Self::new(self.as_slice()).with_tag(*tag),
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
    /// A string (Redis's strings are binary, and integers and floats are strings too). Its
    /// [tag](CompactBytes::tag) is how it was written ([`Written`]).
    Str(CompactBytes),
    /// A hash: 16 bytes (a boxed buffer or a boxed table), so the value stays 24.
    Hash(super::hash::Hash),
    /// A set: 16 bytes, as a hash.
    Set(super::set::Set),
    /// A list (see [`super::list`]).
    List(Box<super::list::List>),
    /// A sorted set (see [`super::zset`]): 16 bytes, as a hash.
    ZSet(super::zset::ZSet),
}

/// How a string value was written, kept in its tag: Redis encodes a string by the command
/// that made it, and `OBJECT ENCODING` and `OBJECT REFCOUNT` report that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Written {
    /// Whole, from a client's argument or an integer result (`SET`, `MSET`, `APPEND` to a new
    /// key, `INCR`): Redis tries its compact encodings, `int` for an integer of up to 20
    /// characters (a shared object from 0 to 9,999), `embstr` up to 44 bytes, `raw` beyond.
    Whole = 0,
    /// Printed from a float (`INCRBYFLOAT`): `embstr` up to 44 bytes, `raw` beyond.
    Float = 1,
    /// Changed in place (`APPEND` to a string, `SETRANGE`, `SETBIT`): `raw`.
    InPlace = 2,
    /// Copied (`COPY`) from a whole string: its encoding, but an integer is not shared.
    Copied = 3,
}

impl Written {
    fn of(tag: u8) -> Self {
        match tag {
            1 => Written::Float,
            2 => Written::InPlace,
            3 => Written::Copied,
            _ => Written::Whole,
        }
    }
}

/// The reply of `TYPE` and the `SCAN ... TYPE` filter's name for each kind of value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `string`
    Str,
    /// `hash`
    Hash,
    /// `set`
    Set,
    /// `list`
    List,
    /// `zset`
    ZSet,
}

impl Kind {
    /// The name Redis gives the type.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::List => "list",
            Kind::ZSet => "zset",
        }
    }
}

/// Redis's shared integer objects: 0 to this, less one.
const SHARED_INTEGERS: i64 = 10_000;

impl Value {
    /// A string value holding a copy of `bytes`, written whole.
    #[inline]
    pub fn string(bytes: &[u8]) -> Self {
        Value::Str(CompactBytes::new(bytes))
    }

    /// A string value of `bytes`, written as `written` says.
    pub fn string_written(bytes: Vec<u8>, written: Written) -> Self {
        Value::Str(CompactBytes::from_vec(bytes).with_tag(written as u8))
    }

    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Str(_) => Kind::Str,
            Value::Hash(_) => Kind::Hash,
            Value::Set(_) => Kind::Set,
            Value::List(_) => Kind::List,
            Value::ZSet(_) => Kind::ZSet,
        }
    }

    /// The string, if the value is one.
    #[inline]
    pub fn as_str(&self) -> Option<&CompactBytes> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The hash, if the value is one.
    #[inline]
    pub fn as_hash(&self) -> Option<&super::hash::Hash> {
        match self {
            Value::Hash(h) => Some(h),
            _ => None,
        }
    }

    /// The list, if the value is one.
    pub fn as_list(&self) -> Option<&super::list::List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The hash, to change, if the value is one.
    #[inline]
    pub fn as_hash_mut(&mut self) -> Option<&mut super::hash::Hash> {
        match self {
            Value::Hash(h) => Some(h),
            _ => None,
        }
    }

    /// The list, to change, if the value is one.
    pub fn as_list_mut(&mut self) -> Option<&mut super::list::List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The set, if the value is one.
    #[inline]
    pub fn as_set(&self) -> Option<&super::set::Set> {
        match self {
            Value::Set(s) => Some(s),
            _ => None,
        }
    }

    /// The sorted set, if the value is one.
    pub fn as_zset(&self) -> Option<&super::zset::ZSet> {
        match self {
            Value::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// The set, to change, if the value is one.
    #[inline]
    pub fn as_set_mut(&mut self) -> Option<&mut super::set::Set> {
        match self {
            Value::Set(s) => Some(s),
            _ => None,
        }
    }

    /// The sorted set, to change, if the value is one.
    pub fn as_zset_mut(&mut self) -> Option<&mut super::zset::ZSet> {
        match self {
            Value::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// The value as `COPY` makes it: a duplicate, encoded the same (a shared integer becomes an
    /// unshared one).
    pub fn copy(&self) -> Self {
        match self {
            Value::Str(s) => match Written::of(s.tag()) {
                Written::Whole => Value::Str(s.clone().with_tag(Written::Copied as u8)),
                _ => self.clone(),
            },
            Value::Hash(_) | Value::Set(_) => self.clone(),
            Value::List(_) | Value::ZSet(_) => self.clone(),
        }
    }

    /// Bytes the value holds on the heap, beside its 24 bytes in the cache's slot.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_bytes(),
            Value::Hash(h) => h.heap_bytes(),
            Value::Set(s) => s.heap_bytes(),
            Value::List(l) => l.heap_bytes(),
            Value::ZSet(z) => z.heap_bytes(),
        }
    }

    /// The encoding `OBJECT ENCODING` reports, by Redis's rules for how the string was
    /// [written](Written).
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                let bytes = s.as_slice();
                match Written::of(s.tag()) {
                    Written::Whole | Written::Copied if integer(bytes).is_some() => "int",
                    Written::InPlace => "raw",
                    _ if bytes.len() <= 44 => "embstr",
                    _ => "raw",
                }
            }
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::List(_) => "quicklist",
            Value::ZSet(z) => z.encoding(),
        }
    }

    /// The reference count `OBJECT REFCOUNT` reports: `i32::MAX` for Redis's shared small
    /// integers, 1 otherwise.
    pub fn refcount(&self) -> i64 {
        match self {
            Value::Str(s) => {
                let shared = Written::of(s.tag()) == Written::Whole
                    && integer(s.as_slice()).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
                if shared {
                    i64::from(i32::MAX)
                } else {
                    1
                }
            }
            Value::Hash(_) | Value::Set(_) => 1,
            Value::List(_) | Value::ZSet(_) => 1,
        }
    }
}

/// The integer a string holds, as Redis's `int` encoding takes one: up to 20 characters, in
/// canonical form.
fn integer(bytes: &[u8]) -> Option<i64> {
    if bytes.len() > 20 {
        return None;
    }
    crate::protocol::parse_i64(bytes)
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
    fn compact_bytes_edit_grows_with_room_and_reuses_it() {
        let mut s = CompactBytes::new(b"0123456789").with_tag(2);
        s.edit(|g| g.extend_from_slice(&[b'a'; 20]));
        assert_eq!(s.len(), 30);
        assert_eq!(s.heap_bytes(), 60, "room for twice the new length");
        assert_eq!(s.tag(), 2, "the tag stays");
        let before = s.as_slice().as_ptr();
        s.edit(|g| g.extend_from_slice(&[b'b'; 30]));
        assert_eq!(
            s.as_slice().as_ptr(),
            before,
            "grown into its room, not moved"
        );
        assert_eq!(s.heap_bytes(), 60);
        assert_eq!(&s.as_slice()[..12], b"0123456789aa");
        assert_eq!(&s.as_slice()[50..], &[b'b'; 10]);
        // Zero-filled growth, and past the doubling limit a MiB of room at most.
        s.edit(|g| g.grow_zeroed(70));
        assert_eq!(&s.as_slice()[60..], &[0; 10]);
        s.edit(|g| g.grow_zeroed(GROW_DOUBLING_LIMIT + 5));
        assert_eq!(s.heap_bytes(), 2 * GROW_DOUBLING_LIMIT + 5);
        assert!(s.as_slice()[60..].iter().all(|&b| b == 0));
        // Changes through the slice, and a copy without the room.
        s.edit(|g| g.as_mut_slice()[0] = b'X');
        assert_eq!(s.as_slice()[0], b'X');
        let copy = s.clone();
        assert_eq!(copy, s);
        assert_eq!(copy.heap_bytes(), copy.len());
        assert_eq!(copy.tag(), 2);
        assert_eq!(s.clone().into_vec(), s.as_slice());
        // Short enough again (never by an edit that only grows): inline.
        let mut short = CompactBytes::new(b"ab");
        short.edit(|g| g.extend_from_slice(b"c"));
        assert_eq!((short.as_slice(), short.heap_bytes()), (&b"abc"[..], 0));
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
        let float = |b: &[u8]| Value::string_written(b.to_vec(), Written::Float);
        assert_eq!(float(b"3").encoding(), "embstr");
        assert_eq!(float(&[b'1'; 45]).encoding(), "raw");
        let edited = |b: &[u8]| Value::string_written(b.to_vec(), Written::InPlace);
        assert_eq!(edited(b"3").encoding(), "raw");
        assert_eq!(edited(b"").encoding(), "raw");
    }

    #[test]
    fn value_refcount_shares_small_integers_written_whole_only() {
        assert_eq!(Value::string(b"9999").refcount(), i64::from(i32::MAX));
        assert_eq!(Value::string(b"10000").refcount(), 1);
        assert_eq!(Value::string(b"-1").refcount(), 1);
        let copy = Value::string(b"7").copy();
        assert_eq!((copy.encoding(), copy.refcount()), ("int", 1));
        // A copy is equal to the original (the tag is not part of the string).
        assert_eq!(copy, Value::string(b"7"));
    }

    #[test]
    fn compact_bytes_tag_survives_and_is_ignored_by_equality() {
        for len in [0, 5, INLINE, INLINE + 1, 64] {
            let bytes = vec![b'x'; len];
            for tag in 0..=MAX_TAG {
                let tagged = CompactBytes::new(&bytes).with_tag(tag);
                assert_eq!(tagged.tag(), tag);
                assert_eq!(tagged.as_slice(), &bytes[..]);
                assert_eq!(tagged.len(), len);
                assert_eq!(tagged, CompactBytes::new(&bytes));
                assert_eq!(tagged.clone().into_vec(), bytes);
            }
        }
    }
}
