//! Hash values: fields and their values, packed in one buffer while small, in a [`Table`]
//! once large.
//!
//! A hash keeps Redis 7.0's two encodings and its rules for leaving the small one: it is
//! `listpack` until it holds more than `hash-max-listpack-entries` fields or is given a field
//! or value longer than `hash-max-listpack-value` bytes, then `hashtable` for good.
//!
//! # Design
//!
//! The small encoding is one boxed byte buffer of fields and values in turn, each a LEB128
//! length then its bytes: for 10 short fields, one block of about 150 bytes where a table
//! would hold 20 strings and 10 entries. A lookup walks it (at most 128 fields by default, a
//! few cache lines), a change rewrites it; both are what Redis's listpack does, with one byte
//! of length per item where Redis spends two (an encoding byte and a back-length, which its
//! reverse iteration needs and a hash never uses). Fields keep their order of insertion, as
//! Redis's do, so replies of small hashes come in Redis's order. The large encoding is the
//! keyspace's [`Table`], whose cursor `HSCAN` uses; a small hash is scanned in one call, as
//! Redis scans a listpack. See `docs/decisions/0240-server-hashes-sets.md`.
//!
//! A hash whose fields have lifetimes (`HEXPIRE`) is large, as Redis 7.4 turns it, and keeps
//! the fields' expiry times in a second table beside its fields ([`Large`]), boxed and absent
//! until a field has one: a hash without lifetimes pays one word per large hash (which
//! glibc's block of the table's header had to spare: 56 usable bytes for 48 or 56) and
//! nothing per field, and the 16-byte enum keeps its two variants (a third would need a
//! tag, and `Value` would outgrow its 24 bytes). The deadlines go once the last is gone. The shard's timers ([`super::field_expiry`]) say when to
//! remove a field; the hash holds the truth they are checked against. See
//! `docs/decisions/0242-server-hash-field-expiry.md`.

use super::eviction::block_bytes;
use super::field_expiry::TIMER_BYTES;
use super::table::{Held, Table};
use super::CompactBytes;

/// When a hash leaves its small encoding (`hash-max-listpack-entries` and `-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashLimits {
    /// The most fields a small hash holds.
    pub entries: usize,
    /// The longest field or value a small hash holds, in bytes.
    pub value: usize,
}

impl Default for HashLimits {
    /// `redis-server`'s built-in defaults: 512 fields, 64 bytes (its sample `redis.conf`
    /// says 128 fields).
    fn default() -> Self {
        Self {
            entries: 512,
            value: 64,
        }
    }
}

/// A hash. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hash {
    /// Small: fields and values in turn, each a LEB128 length and its bytes.
    Packed(Box<[u8]>),
    /// Large.
    Table(Box<Large>),
}

/// A large hash: its fields, and their lifetimes if any has one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Large {
    fields: Table<CompactBytes>,
    /// The expiry times (Unix milliseconds) of the fields that have one; `None` while none
    /// has.
    deadlines: Option<Box<Table<Millis>>>,
}

/// An expiry time in Unix milliseconds, held inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Millis(pub i64);

impl Held for Millis {
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Appends `bytes` to `out` as a packed item: its LEB128 length, then itself.
fn push_item(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut n = bytes.len();
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            break;
        }
        out.push(low | 0x80);
    }
    out.extend_from_slice(bytes);
}

/// The items of a packed buffer, in order.
struct Items<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let (mut len, mut shift, mut at) = (0usize, 0, 0);
        loop {
            let byte = self.rest[at];
            at += 1;
            len |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let item = &self.rest[at..at + len];
        self.rest = &self.rest[at + len..];
        Some(item)
    }
}

/// The fields and values of a packed buffer, in order.
fn pairs(packed: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
    let mut items = Items { rest: packed };
    std::iter::from_fn(move || Some((items.next()?, items.next()?)))
}

impl Default for Hash {
    fn default() -> Self {
        Self::new()
    }
}

impl Hash {
    /// An empty hash, small.
    pub fn new() -> Self {
        Hash::Packed(Box::new([]))
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match self {
            Hash::Packed(p) => Items { rest: p }.count() / 2,
            Hash::Table(t) => t.fields.len(),
        }
    }

    /// Whether it has no fields.
    pub fn is_empty(&self) -> bool {
        match self {
            Hash::Packed(p) => p.is_empty(),
            Hash::Table(t) => t.fields.is_empty(),
        }
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Packed(p) => pairs(p).find(|(f, _)| *f == field).map(|(_, v)| v),
            Hash::Table(t) => t.fields.get(field).map(CompactBytes::as_slice),
        }
    }

    /// Every field and value, in no particular order (a small hash's in order of insertion).
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Packed(p) => Box::new(pairs(p)),
            Hash::Table(t) => Box::new(t.fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
        }
    }

    /// The field and value at `i` (`0..len`) of [`iter`](Self::iter)'s order, for picks at
    /// random.
    pub fn at(&self, i: usize) -> (&[u8], &[u8]) {
        match self {
            Hash::Packed(p) => pairs(p).nth(i).expect("an index within the hash"),
            Hash::Table(t) => {
                let (f, v) = t.fields.at(i);
                (f.as_slice(), v.as_slice())
            }
        }
    }

    /// Sets `field` to `value`, clearing any lifetime it had (as `HSET` does); returns whether
    /// the field is new. The hash turns large if it outgrows `limits`.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limits: HashLimits) -> bool {
        let new = self.update(field, value, limits);
        self.persist(field);
        new
    }

    /// Sets `field` to `value`, keeping any lifetime it had (as `HINCRBY` does); returns
    /// whether the field is new.
    pub fn update(&mut self, field: &[u8], value: &[u8], limits: HashLimits) -> bool {
        if let Hash::Packed(p) = self {
            if field.len() > limits.value || value.len() > limits.value {
                self.convert();
            } else {
                let mut out = Vec::with_capacity(p.len() + field.len() + value.len() + 4);
                let mut new = true;
                for (f, v) in pairs(p) {
                    push_item(&mut out, f);
                    if f == field {
                        push_item(&mut out, value);
                        new = false;
                    } else {
                        push_item(&mut out, v);
                    }
                }
                if new {
                    push_item(&mut out, field);
                    push_item(&mut out, value);
                }
                *p = out.into_boxed_slice();
                if new && self.len() > limits.entries {
                    self.convert();
                }
                return new;
            }
        }
        let Hash::Table(t) = self else {
            unreachable!("converted above")
        };
        t.fields.insert(field, CompactBytes::new(value)).is_none()
    }

    /// The lifetimes of a large hash's fields, if any has one.
    fn deadlines(&self) -> Option<&Table<Millis>> {
        match self {
            Hash::Table(t) => t.deadlines.as_deref(),
            Hash::Packed(_) => None,
        }
    }

    /// Whether some field has a lifetime.
    pub fn has_lifetimes(&self) -> bool {
        self.deadlines().is_some()
    }

    /// When `field` expires, in Unix milliseconds: `None` if there is no such field,
    /// `Some(None)` if it has no lifetime.
    pub fn expire_time(&self, field: &[u8]) -> Option<Option<i64>> {
        self.get(field)?;
        Some(self.deadlines().and_then(|d| d.get(field)).map(|m| m.0))
    }

    /// Gives `field` the expiry time `at` (Unix milliseconds); false if there is no such
    /// field. The hash turns large.
    pub fn set_expire_time(&mut self, field: &[u8], at: i64) -> bool {
        if self.get(field).is_none() {
            return false;
        }
        self.convert();
        let Hash::Table(t) = self else {
            unreachable!("converted above")
        };
        t.deadlines
            .get_or_insert_with(Default::default)
            .insert(field, Millis(at));
        true
    }

    /// Clears the lifetime of `field`; returns whether it had one.
    pub fn persist(&mut self, field: &[u8]) -> bool {
        let Hash::Table(t) = self else {
            return false;
        };
        let Some(deadlines) = t.deadlines.as_mut() else {
            return false;
        };
        let had = deadlines.remove(field).is_some();
        if deadlines.is_empty() {
            t.deadlines = None;
        }
        had
    }

    /// Removes `field` if its expiry time is `at` (a timer that fired for it); returns
    /// whether it did. A timer left behind by a later change (a new lifetime, `HPERSIST`,
    /// `HSET`, `HDEL`) finds another time, or none, and removes nothing.
    pub fn remove_expired(&mut self, field: &[u8], at: i64) -> bool {
        if self.deadlines().and_then(|d| d.get(field)) != Some(&Millis(at)) {
            return false;
        }
        self.remove(field)
    }

    /// Removes every field whose expiry time is before `now_ms` (Unix milliseconds: a field
    /// lives through its millisecond); returns how many.
    pub fn remove_all_expired(&mut self, now_ms: i64) -> usize {
        let due: Vec<Box<[u8]>> = self
            .lifetimes()
            .filter(|&(_, at)| at < now_ms)
            .map(|(field, _)| field.into())
            .collect();
        due.iter().filter(|field| self.remove(field)).count()
    }

    /// Every field that has a lifetime, with its expiry time (Unix milliseconds).
    pub fn lifetimes(&self) -> impl Iterator<Item = (&[u8], i64)> + '_ {
        self.deadlines()
            .into_iter()
            .flat_map(Table::iter)
            .map(|(f, at)| (f.as_slice(), at.0))
    }

    /// Turns a small hash large.
    fn convert(&mut self) {
        if let Hash::Packed(p) = self {
            let mut table = Table::new();
            for (f, v) in pairs(p) {
                table.insert(f, CompactBytes::new(v));
            }
            *self = Hash::Table(Box::new(Large {
                fields: table,
                deadlines: None,
            }));
        }
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Packed(p) => {
                if !pairs(p).any(|(f, _)| f == field) {
                    return false;
                }
                let mut out = Vec::with_capacity(p.len());
                for (f, v) in pairs(p).filter(|(f, _)| *f != field) {
                    push_item(&mut out, f);
                    push_item(&mut out, v);
                }
                *p = out.into_boxed_slice();
                true
            }
            Hash::Table(t) => {
                let had = t.fields.remove(field).is_some();
                self.persist(field);
                had
            }
        }
    }

    /// One step of `HSCAN` from `cursor`: visits the fields of at least `count` more
    /// positions (fewer at the end) and returns the cursor to go on from, 0 at the end. A
    /// small hash is visited whole in one step, as Redis does.
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        match self {
            Hash::Packed(p) => {
                pairs(p).for_each(|(f, v)| visit(f, v));
                0
            }
            Hash::Table(t) => {
                let t = &t.fields;
                t.scan_counted(cursor, count, |i| {
                    let (f, v) = t.at(i);
                    visit(f.as_slice(), v.as_slice());
                })
            }
        }
    }

    /// Bytes held on the heap (usable block sizes).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Hash::Packed(p) => p.len(),
            Hash::Table(t) => {
                block_bytes(std::mem::size_of::<Large>())
                    + t.fields.heap_bytes()
                    + t.deadlines.as_deref().map_or(0, |d| {
                        // The shard's timers count here, so that `maxmemory` weighs them
                        // with the hash.
                        block_bytes(std::mem::size_of::<Table<Millis>>())
                            + d.heap_bytes()
                            + d.iter()
                                .map(|(f, _)| TIMER_BYTES + block_bytes(f.len()))
                                .sum::<usize>()
                    })
            }
        }
    }

    /// The encoding `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Packed(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_item_and_items_round_trip_long_lengths() {
        let mut out = Vec::new();
        let long = vec![7u8; 300];
        push_item(&mut out, b"");
        push_item(&mut out, &long);
        push_item(&mut out, b"x");
        assert_eq!(out.len(), 1 + 2 + 300 + 1 + 1);
        let items: Vec<&[u8]> = Items { rest: &out }.collect();
        assert_eq!(items, vec![&b""[..], &long[..], b"x"]);
    }

    #[test]
    fn hash_turns_large_past_either_limit_only() {
        let limits = HashLimits {
            entries: 3,
            value: 5,
        };
        let mut h = Hash::new();
        for f in [&b"a"[..], b"b", b"c"] {
            assert!(h.insert(f, b"12345", limits));
        }
        assert!(!h.insert(b"a", b"v", limits), "a replaced field is not new");
        assert_eq!(h.encoding(), "listpack");
        assert_eq!(h.get(b"a"), Some(&b"v"[..]));
        assert!(h.insert(b"d", b"v", limits));
        assert_eq!((h.encoding(), h.len()), ("hashtable", 4));
        let mut long = Hash::new();
        long.insert(b"f", b"123456", limits);
        assert_eq!(long.encoding(), "hashtable");
        let mut long_field = Hash::new();
        long_field.insert(b"123456", b"v", limits);
        assert_eq!(long_field.encoding(), "hashtable");
    }

    #[test]
    fn hash_packed_keeps_insertion_order_through_removals() {
        let mut h = Hash::new();
        let limits = HashLimits::default();
        for f in ["x", "a", "m", "b"] {
            h.insert(f.as_bytes(), b"1", limits);
        }
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        let fields: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(fields, vec![&b"x"[..], b"m", b"b"]);
        assert_eq!(h.at(1), (&b"m"[..], &b"1"[..]));
    }

    #[test]
    fn hash_lifetimes_make_it_timed_and_leave_it_plain_when_gone() {
        let limits = HashLimits::default();
        let mut h = Hash::new();
        h.insert(b"a", b"1", limits);
        h.insert(b"b", b"2", limits);
        let mut plain = Hash::new();
        plain.insert(b"a", b"1", limits);
        plain.insert(b"b", b"2", limits);
        plain.convert();
        let plain = plain.heap_bytes();
        assert!(!h.set_expire_time(b"zz", 5), "no such field");
        assert_eq!(h.encoding(), "listpack", "nothing set, nothing converted");
        assert!(h.set_expire_time(b"a", 10));
        assert!(h.has_lifetimes());
        assert!(
            h.heap_bytes() > plain + TIMER_BYTES,
            "the lifetime is weighed"
        );
        assert_eq!(h.expire_time(b"a"), Some(Some(10)));
        assert_eq!(h.expire_time(b"b"), Some(None));
        assert_eq!(h.expire_time(b"c"), None);
        assert!(
            !h.remove_expired(b"a", 9),
            "a timer of another time removes nothing"
        );
        assert!(
            !h.remove_expired(b"b", 10),
            "nor one of a field without a lifetime"
        );
        assert!(
            !h.update(b"a", b"2", limits),
            "an update keeps the lifetime"
        );
        assert_eq!(h.expire_time(b"a"), Some(Some(10)));
        assert_eq!(h.lifetimes().collect::<Vec<_>>(), vec![(&b"a"[..], 10)]);
        assert!(h.remove_expired(b"a", 10));
        assert_eq!((h.len(), h.get(b"a")), (1, None));
        assert!(!h.has_lifetimes(), "the last lifetime gone: plain again");
        h.set_expire_time(b"b", 20);
        assert!(
            !h.insert(b"b", b"3", limits),
            "HSET of a field clears its lifetime"
        );
        assert_eq!(h.expire_time(b"b"), Some(None));
        assert!(!h.has_lifetimes());
        h.set_expire_time(b"b", 20);
        assert!(h.persist(b"b"));
        assert!(!h.persist(b"b"));
        let mut same = Hash::new();
        same.insert(b"b", b"3", limits);
        same.convert();
        assert_eq!(
            h.heap_bytes(),
            same.heap_bytes(),
            "no lifetime, no weight for one"
        );
    }

    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Writes and removals over few fields, values of up to 10 bytes.
    fn ops() -> impl Strategy<Value = Vec<(bool, u8, Vec<u8>)>> {
        prop::collection::vec(
            (
                any::<bool>(),
                0u8..40,
                prop::collection::vec(any::<u8>(), 0..10),
            ),
            0..300,
        )
    }

    proptest! {
        /// A hash agrees with a map through writes and removals, across the switch from the
        /// packed encoding (small limits, so both are used), which happens exactly when a
        /// limit is passed and is never undone.
        #[test]
        fn hash_agrees_with_a_map(ops in ops(), entries in 1usize..20, value in 1usize..12) {
            let limits = HashLimits { entries, value };
            let mut h = Hash::new();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let mut outgrown = false;
            for (write, f, v) in ops {
                let field = vec![b'f', f];
                let field_len = field.len();
                if write {
                    let new = h.insert(&field, &v, limits);
                    prop_assert_eq!(new, model.insert(field, v.clone()).is_none());
                    outgrown |= v.len().max(field_len) > value || model.len() > entries;
                } else {
                    prop_assert_eq!(h.remove(&field), model.remove(&field).is_some());
                }
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.encoding(), if outgrown { "hashtable" } else { "listpack" });
            }
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> =
                h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            pairs.sort();
            let mut want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
            want.sort();
            prop_assert_eq!(&pairs, &want);
            for (i, (f, v)) in h.iter().enumerate() {
                prop_assert_eq!(h.at(i), (f, v));
                prop_assert_eq!(h.get(f), Some(v));
            }
        }

        /// Lifetimes agree with a map of fields to values and expiry times through writes
        /// that clear them (`HSET`) or keep them (`HINCRBY`), `HPERSIST`, `HDEL` and timers
        /// firing at right and wrong times; the hash keeps deadlines only while one exists.
        #[test]
        fn hash_lifetimes_agree_with_a_map(
            ops in prop::collection::vec((0u8..6, 0u8..12, 0i64..8), 0..200),
        ) {
            let limits = HashLimits { entries: 6, value: 8 };
            let mut h = Hash::new();
            let mut model: HashMap<Vec<u8>, (Vec<u8>, Option<i64>)> = HashMap::new();
            for (op, f, n) in ops {
                let field = vec![b'f', f];
                let value = n.to_string().into_bytes();
                match op {
                    0 => {
                        let new = h.insert(&field, &value, limits);
                        prop_assert_eq!(new, model.insert(field, (value, None)).is_none());
                    }
                    1 => {
                        let new = h.update(&field, &value, limits);
                        let at = model.get(&field).and_then(|(_, at)| *at);
                        prop_assert_eq!(new, model.insert(field, (value, at)).is_none());
                    }
                    2 => {
                        let set = h.set_expire_time(&field, n);
                        let entry = model.get_mut(&field);
                        prop_assert_eq!(set, entry.is_some());
                        if let Some(entry) = entry {
                            entry.1 = Some(n);
                        }
                    }
                    3 => {
                        let had = model.get_mut(&field).and_then(|e| e.1.take()).is_some();
                        prop_assert_eq!(h.persist(&field), had);
                    }
                    4 => {
                        prop_assert_eq!(h.remove(&field), model.remove(&field).is_some());
                    }
                    _ => {
                        let due = model.get(&field).is_some_and(|(_, at)| *at == Some(n));
                        prop_assert_eq!(h.remove_expired(&field, n), due);
                        if due {
                            model.remove(&field);
                        }
                    }
                }
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.has_lifetimes(), model.values().any(|(_, at)| at.is_some()));
            }
            for (field, (value, at)) in &model {
                prop_assert_eq!(h.get(field), Some(&value[..]));
                prop_assert_eq!(h.expire_time(field), Some(*at));
            }
            let mut lifetimes: Vec<(Vec<u8>, i64)> =
                h.lifetimes().map(|(f, at)| (f.to_vec(), at)).collect();
            lifetimes.sort();
            let mut want: Vec<(Vec<u8>, i64)> = model
                .iter()
                .filter_map(|(f, (_, at))| at.map(|at| (f.clone(), at)))
                .collect();
            want.sort();
            prop_assert_eq!(lifetimes, want);
        }
    }
}
