//! Set values: members kept as a sorted array of integers while they are all integers and few,
//! in a [`Table`] otherwise.
//!
//! A set keeps Redis 7.0's two encodings and its rules: `intset` while every member is an
//! integer in canonical form (as Redis's `int` strings: no sign but `-`, no leading zero) and
//! there are at most `set-max-intset-entries` of them, then `hashtable` for good. Redis 7.0
//! has no listpack sets.
//!
//! # Design
//!
//! The integer array is one boxed buffer: a byte giving the width of every member (2, 4 or 8
//! bytes, the narrowest that holds them all, widened when a member needs it, as Redis's
//! intset does), then the members in increasing order, little-endian, found by bisection.
//! Members therefore come out in increasing order, as from Redis. See
//! `docs/decisions/0240-server-hashes-sets.md`.

use std::borrow::Cow;

use super::eviction::block_bytes;
use super::table::Table;
use crate::protocol::parse_i64;

/// A set. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Set {
    /// Integers: a width byte, then the members in increasing order at that width.
    Ints(Box<[u8]>),
    /// Any members.
    Table(Box<Table<()>>),
}

/// The narrowest width, in bytes, that holds `n`.
fn width_of(n: i64) -> usize {
    if i16::try_from(n).is_ok() {
        2
    } else if i32::try_from(n).is_ok() {
        4
    } else {
        8
    }
}

/// The member at `i` of an integer array of width `width`.
fn read(ints: &[u8], width: usize, i: usize) -> i64 {
    let at = 1 + i * width;
    let bytes = &ints[at..at + width];
    match width {
        2 => i64::from(i16::from_le_bytes([bytes[0], bytes[1]])),
        4 => i64::from(i32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
        _ => i64::from_le_bytes(bytes.try_into().expect("8 bytes")),
    }
}

/// Appends `n` at `width` bytes.
fn write(out: &mut Vec<u8>, width: usize, n: i64) {
    out.extend_from_slice(&n.to_le_bytes()[..width]);
}

/// The members of an integer array, in order.
fn ints(ints: &[u8]) -> impl Iterator<Item = i64> + '_ {
    let width = usize::from(ints.first().copied().unwrap_or(2));
    let len = ints.len().saturating_sub(1) / width;
    (0..len).map(move |i| read(ints, width, i))
}

/// Where `n` is in an integer array: `Ok(index)` or `Err(where it would go)`.
fn search(array: &[u8], n: i64) -> Result<usize, usize> {
    let width = usize::from(array.first().copied().unwrap_or(2));
    let (mut lo, mut hi) = (0, array.len().saturating_sub(1) / width);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match read(array, width, mid).cmp(&n) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

impl Set {
    /// An empty set that will hold `first` first: of integers if it is one.
    pub fn for_member(first: &[u8]) -> Self {
        if parse_i64(first).is_some() {
            Set::Ints(Box::new([2]))
        } else {
            Set::Table(Box::default())
        }
    }

    /// An empty set of integers (which stays one while its members allow), as Redis makes the
    /// result of `SINTERSTORE`, `SUNIONSTORE` and `SDIFFSTORE`.
    pub fn new() -> Self {
        Set::Ints(Box::new([2]))
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        match self {
            Set::Ints(a) => (a.len() - 1) / usize::from(a[0]),
            Set::Table(t) => t.len(),
        }
    }

    /// Whether it has no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `member` is one.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Ints(a) => parse_i64(member).is_some_and(|n| search(a, n).is_ok()),
            Set::Table(t) => t.contains(member),
        }
    }

    /// Every member, in no particular order (integers in increasing order).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Cow<'_, [u8]>> + '_> {
        match self {
            Set::Ints(a) => Box::new(ints(a).map(|n| Cow::Owned(n.to_string().into_bytes()))),
            Set::Table(t) => Box::new(t.iter().map(|(m, _)| Cow::Borrowed(m.as_slice()))),
        }
    }

    /// The member at `i` (`0..len`) of [`iter`](Self::iter)'s order, for picks at random.
    pub fn at(&self, i: usize) -> Cow<'_, [u8]> {
        match self {
            Set::Ints(a) => Cow::Owned(read(a, usize::from(a[0]), i).to_string().into_bytes()),
            Set::Table(t) => Cow::Borrowed(t.at(i).0.as_slice()),
        }
    }

    /// Adds `member`; returns whether it is new. A set of integers turns into a table when
    /// given another member, or more than `max_ints` integers.
    pub fn insert(&mut self, member: &[u8], max_ints: usize) -> bool {
        if let Set::Ints(a) = self {
            match parse_i64(member) {
                Some(n) => {
                    let Err(at) = search(a, n) else {
                        return false;
                    };
                    let old = usize::from(a[0]);
                    let width = old.max(width_of(n));
                    let len = (a.len() - 1) / old;
                    let mut out = Vec::with_capacity(1 + (len + 1) * width);
                    out.push(width as u8);
                    for i in 0..len {
                        if i == at {
                            write(&mut out, width, n);
                        }
                        write(&mut out, width, read(a, old, i));
                    }
                    if at == len {
                        write(&mut out, width, n);
                    }
                    *a = out.into_boxed_slice();
                    if len + 1 > max_ints {
                        self.convert();
                    }
                    return true;
                }
                None => self.convert(),
            }
        }
        let Set::Table(t) = self else {
            unreachable!("converted above")
        };
        t.insert(member, ()).is_none()
    }

    /// Turns a set of integers into a table.
    fn convert(&mut self) {
        if let Set::Ints(a) = self {
            let mut table = Table::new();
            for n in ints(a) {
                table.insert(n.to_string().as_bytes(), ());
            }
            *self = Set::Table(Box::new(table));
        }
    }

    /// Removes `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Ints(a) => {
                let Some(Ok(at)) = parse_i64(member).map(|n| search(a, n)) else {
                    return false;
                };
                let width = usize::from(a[0]);
                let mut out = a.to_vec();
                out.drain(1 + at * width..1 + (at + 1) * width);
                *a = out.into_boxed_slice();
                true
            }
            Set::Table(t) => t.remove(member).is_some(),
        }
    }

    /// One step of `SSCAN` from `cursor` (see [`Hash::scan`](super::hash::Hash::scan)).
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8])) -> u64 {
        match self {
            Set::Ints(a) => {
                ints(a).for_each(|n| visit(n.to_string().as_bytes()));
                0
            }
            Set::Table(t) => t.scan_counted(cursor, count, |i| visit(t.at(i).0.as_slice())),
        }
    }

    /// Bytes held on the heap (usable block sizes).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Set::Ints(a) => a.len(),
            Set::Table(t) => block_bytes(std::mem::size_of::<Table<()>>()) + t.heap_bytes(),
        }
    }

    /// The encoding `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }
}

impl Default for Set {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(set: &Set) -> Vec<String> {
        set.iter()
            .map(|m| String::from_utf8(m.into_owned()).unwrap())
            .collect()
    }

    #[test]
    fn set_ints_stay_sorted_and_widen() {
        let mut s = Set::new();
        for n in ["5", "-3", "70000", "1", "5", "-9223372036854775808"] {
            s.insert(n.as_bytes(), 512);
        }
        assert_eq!(s.encoding(), "intset");
        assert_eq!(
            members(&s),
            ["-9223372036854775808", "-3", "1", "5", "70000"]
        );
        assert!(s.contains(b"70000"));
        assert!(!s.contains(b"07"));
        assert!(s.remove(b"1"));
        assert!(!s.remove(b"1"));
        assert_eq!(s.len(), 4);
        assert_eq!(&*s.at(1), b"-3");
    }

    #[test]
    fn set_ints_turn_into_a_table_on_a_string_or_too_many() {
        let mut s = Set::new();
        s.insert(b"1", 2);
        s.insert(b"2", 2);
        assert_eq!(s.encoding(), "intset");
        s.insert(b"3", 2);
        assert_eq!((s.encoding(), s.len()), ("hashtable", 3));
        let mut t = Set::for_member(b"1");
        t.insert(b"1", 512);
        t.insert(b"01", 512);
        assert_eq!((t.encoding(), t.len()), ("hashtable", 2));
        assert!(t.contains(b"1") && t.contains(b"01"));
        assert_eq!(Set::for_member(b"x").encoding(), "hashtable");
    }

    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// A set agrees with a model set through additions and removals of integers and
        /// strings, across the switch from integers (small limits, so both are used); a set of
        /// integers lists them in increasing order.
        #[test]
        fn set_agrees_with_a_model(
            ops in prop::collection::vec((any::<bool>(), -40i64..40, 0u8..10), 0..300),
            max_ints in 1usize..30,
        ) {
            let mut s = Set::new();
            let mut model: BTreeSet<Vec<u8>> = BTreeSet::new();
            let mut ints = true;
            for (add, n, kind) in ops {
                // Mostly integers, some at the width limits, some not canonical or not numbers.
                let member = match kind {
                    0 => format!("0{n}"),
                    1 => format!("x{n}"),
                    2 => (i64::from(i32::MAX) + n).to_string(),
                    3 => (n * 1000).to_string(),
                    _ => n.to_string(),
                }
                .into_bytes();
                if add {
                    prop_assert_eq!(s.insert(&member, max_ints), model.insert(member.clone()));
                    ints &= parse_i64(&member).is_some() && model.len() <= max_ints;
                } else {
                    prop_assert_eq!(s.remove(&member), model.remove(&member));
                }
                prop_assert_eq!(s.len(), model.len());
                prop_assert_eq!(s.encoding(), if ints { "intset" } else { "hashtable" });
            }
            let members: Vec<Vec<u8>> = s.iter().map(|m| m.into_owned()).collect();
            if ints {
                let numbers: Vec<i64> = members.iter().map(|m| parse_i64(m).unwrap()).collect();
                prop_assert!(numbers.windows(2).all(|w| w[0] < w[1]), "increasing");
            }
            let sorted: BTreeSet<Vec<u8>> = members.iter().cloned().collect();
            prop_assert_eq!(sorted.len(), members.len(), "each member once");
            prop_assert_eq!(&sorted, &model);
            for m in &model {
                prop_assert!(s.contains(m));
            }
            for (i, member) in members.iter().enumerate() {
                prop_assert_eq!(&s.at(i).into_owned(), member);
            }
        }
    }
}
