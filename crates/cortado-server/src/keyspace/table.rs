//! The hash table of the large hashes and sets: members (and values) by key, with a cursor for
//! `HSCAN`/`SSCAN` that misses nothing however the table grows or shrinks between calls, and
//! uniform random picks for `SPOP`, `SRANDMEMBER` and `HRANDFIELD`.
//!
//! # Design
//!
//! Chained buckets over a dense array: `entries` holds every member once, contiguous (a
//! removal moves the last entry into the hole), and `heads` is a power-of-two array of chain
//! heads, each an index into `entries` (plus one; 0 ends a chain), with each entry's `next`
//! continuing its chain. So a random pick is a random index (the array has no holes), and a
//! scan walks buckets with Redis's reverse-binary cursor: incrementing the bucket index from
//! its high bit down visits, after a resize to any power of two, every bucket whose members
//! were not yet seen (a member is reported at least once, possibly twice). Chains hold one
//! member on average: the table doubles once it holds more members than buckets, and halves
//! once it holds fewer than an eighth (hysteresis, so a member added and removed at the
//! boundary does not resize each time). An index is a `u32`: four billion members per hash or
//! set, as Redis's listpack-free tables could hold more only in theory.
//!
//! The bytes a table holds are kept as a running sum ([`Table::heap_bytes`]), as the keyspace
//! weighs a value after every change and a sum over a million members each time would make
//! every `SADD` O(n).

use std::hash::BuildHasher;
use std::sync::OnceLock;

use super::eviction::block_bytes;
use super::CompactBytes;

/// The hash of the tables' keys: one seed per process, drawn at random at the first use.
fn hash_of(key: &[u8]) -> u64 {
    static SEED: OnceLock<cortado::DefaultHashBuilder> = OnceLock::new();
    SEED.get_or_init(Default::default).hash_one(key)
}

/// A value the table keeps beside each key: its heap bytes count toward the table's.
pub trait Held: Clone + PartialEq {
    /// Bytes the value holds on the heap (usable block sizes).
    fn heap_bytes(&self) -> usize;
}

impl Held for () {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl Held for CompactBytes {
    fn heap_bytes(&self) -> usize {
        block_bytes(CompactBytes::heap_bytes(self))
    }
}

#[derive(Clone, Debug)]
struct Entry<V> {
    key: CompactBytes,
    value: V,
    /// The next entry of the chain, plus one (0: the chain ends).
    next: u32,
}

/// A hash table of keys and values. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Table<V> {
    entries: Vec<Entry<V>>,
    heads: Box<[u32]>,
    /// The keys' and values' heap bytes.
    held: usize,
}

impl<V: Held> Default for Table<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Held> Table<V> {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            heads: Box::new([]),
            held: 0,
        }
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn bucket(&self, key: &[u8]) -> usize {
        hash_of(key) as usize & (self.heads.len() - 1)
    }

    /// The index of `key` (`0..len`), which stays its own until a removal moves another
    /// entry into a hole (see [`remove_at`](Self::remove_at)).
    pub fn index_of(&self, key: &[u8]) -> Option<usize> {
        if self.heads.is_empty() {
            return None;
        }
        let mut at = self.heads[self.bucket(key)];
        while at != 0 {
            let entry = &self.entries[at as usize - 1];
            if entry.key.as_slice() == key {
                return Some(at as usize - 1);
            }
            at = entry.next;
        }
        None
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.index_of(key).map(|i| &self.entries[i].value)
    }

    /// Whether `key` is there.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.index_of(key).is_some()
    }

    /// Sets `key` to `value`; returns the value it replaced, if any. A new key's index is the
    /// table's length before it.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        if let Some(i) = self.index_of(key) {
            self.held = self.held - self.entries[i].value.heap_bytes() + value.heap_bytes();
            return Some(std::mem::replace(&mut self.entries[i].value, value));
        }
        assert!(
            self.entries.len() < u32::MAX as usize,
            "a table of 2^32 keys"
        );
        let key = CompactBytes::new(key);
        self.held += Held::heap_bytes(&key) + value.heap_bytes();
        self.entries.push(Entry {
            key,
            value,
            next: 0,
        });
        if self.entries.len() > self.heads.len() {
            self.rebuild((self.heads.len() * 2).max(4));
        } else {
            self.link(self.entries.len() - 1);
        }
        None
    }

    /// Puts entry `i` at the head of its bucket's chain.
    fn link(&mut self, i: usize) {
        let bucket = self.bucket(self.entries[i].key.as_slice());
        self.entries[i].next = self.heads[bucket];
        self.heads[bucket] = i as u32 + 1;
    }

    /// Makes the chains again over `buckets` buckets (a power of two).
    fn rebuild(&mut self, buckets: usize) {
        self.heads = vec![0; buckets].into_boxed_slice();
        for i in 0..self.entries.len() {
            self.link(i);
        }
    }

    /// Removes `key`; returns its value if it was there.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let i = self.index_of(key)?;
        Some(self.remove_at(i).1)
    }

    /// Makes the chain link that points at entry `i` point at `to` instead.
    fn relink(&mut self, i: usize, to: u32) {
        let bucket = self.bucket(self.entries[i].key.as_slice());
        let target = i as u32 + 1;
        if self.heads[bucket] == target {
            self.heads[bucket] = to;
            return;
        }
        let mut at = self.heads[bucket];
        while at != 0 {
            let entry = &mut self.entries[at as usize - 1];
            if entry.next == target {
                entry.next = to;
                return;
            }
            at = entry.next;
        }
        unreachable!("every entry is on its bucket's chain");
    }

    /// Removes the entry at index `i` (`0..len`), returning its key and value; the last entry
    /// takes index `i`.
    pub fn remove_at(&mut self, i: usize) -> (CompactBytes, V) {
        let next = self.entries[i].next;
        self.relink(i, next);
        let last = self.entries.len() - 1;
        if i != last {
            // The last entry fills the hole: whatever pointed at it points at `i` now.
            self.relink(last, i as u32 + 1);
        }
        let entry = self.entries.swap_remove(i);
        self.held -= Held::heap_bytes(&entry.key) + entry.value.heap_bytes();
        if self.entries.is_empty() {
            self.entries = Vec::new();
            self.heads = Box::new([]);
        } else if self.entries.len() * 8 < self.heads.len() && self.heads.len() > 4 {
            self.rebuild(self.heads.len() / 2);
            self.entries.shrink_to(self.entries.len() * 2);
        }
        (entry.key, entry.value)
    }

    /// The entry at index `i` (`0..len`): for picks at random.
    pub fn at(&self, i: usize) -> (&CompactBytes, &V) {
        let entry = &self.entries[i];
        (&entry.key, &entry.value)
    }

    /// Every key and value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&CompactBytes, &V)> + '_ {
        self.entries.iter().map(|e| (&e.key, &e.value))
    }

    /// Visits the keys of the bucket `cursor` names and returns the cursor of the next bucket,
    /// 0 once all were visited (see the [module docs](self)).
    pub fn scan<'a>(&'a self, cursor: u64, mut visit: impl FnMut(&'a CompactBytes, &'a V)) -> u64 {
        self.scan_indices(cursor, |i| {
            let entry = &self.entries[i];
            visit(&entry.key, &entry.value);
        })
    }

    /// One step of `HSCAN`, `SSCAN` or `ZSCAN` from `cursor`: visits the indices of whole
    /// buckets until `count` entries were seen, ten times `count` buckets were walked (a
    /// sparse table after many removals), or the end, and returns the next cursor. `COUNT`
    /// is a hint, as in Redis: a bucket is never split, so a step may visit more.
    pub fn scan_counted(&self, mut cursor: u64, count: usize, mut visit: impl FnMut(usize)) -> u64 {
        let (mut seen, mut steps) = (0, count.saturating_mul(10).max(1));
        loop {
            cursor = self.scan_indices(cursor, |i| {
                seen += 1;
                visit(i);
            });
            steps -= 1;
            if cursor == 0 || seen >= count || steps == 0 {
                return cursor;
            }
        }
    }

    /// [`scan`](Self::scan), visiting the entries' indices.
    pub fn scan_indices(&self, cursor: u64, mut visit: impl FnMut(usize)) -> u64 {
        if self.heads.is_empty() {
            return 0;
        }
        let mask = self.heads.len() as u64 - 1;
        let mut at = self.heads[(cursor & mask) as usize];
        while at != 0 {
            visit(at as usize - 1);
            at = self.entries[at as usize - 1].next;
        }
        // Increment the bits of the mask from the high one down.
        (cursor | !mask)
            .reverse_bits()
            .wrapping_add(1)
            .reverse_bits()
    }

    /// Bytes held on the heap: the two arrays' blocks and the keys' and values'.
    pub fn heap_bytes(&self) -> usize {
        block_bytes(self.entries.capacity() * std::mem::size_of::<Entry<V>>())
            + block_bytes(self.heads.len() * 4)
            + self.held
    }
}

impl<V: Held> PartialEq for Table<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k.as_slice()) == Some(v))
    }
}

impl<V: Held> Eq for Table<V> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    fn key(i: u32) -> Vec<u8> {
        format!("member:{i}").into_bytes()
    }

    #[test]
    fn table_insert_get_remove_agree_with_a_map() {
        let mut table: Table<CompactBytes> = Table::new();
        let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut x: u32 = 7;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let k = key((x >> 8) % 500);
            if step % 3 == 0 {
                assert_eq!(
                    table.remove(&k).map(|v| v.into_vec()),
                    model.remove(&k),
                    "remove"
                );
            } else {
                let v = format!("{step:040}").into_bytes();
                let old = table.insert(&k, CompactBytes::new(&v));
                assert_eq!(old.map(|v| v.into_vec()), model.insert(k.clone(), v));
            }
            assert_eq!(table.len(), model.len());
        }
        for (k, v) in &model {
            assert_eq!(table.get(k).map(CompactBytes::as_slice), Some(&v[..]));
        }
        let held: usize = model
            .iter()
            .map(|(k, v)| Held::heap_bytes(&CompactBytes::new(k)) + block_bytes(v.len()))
            .sum();
        assert_eq!(table.held, held, "the running sum is the sum");
        while !table.is_empty() {
            let k = table.at(0).0.clone();
            table.remove(k.as_slice());
        }
        assert_eq!(table.heap_bytes(), 0, "an empty table holds nothing");
    }

    #[test]
    fn table_scan_sees_every_member_present_throughout_despite_resizes() {
        let mut table: Table<()> = Table::new();
        for i in 0..1000 {
            table.insert(&key(i), ());
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut calls = 0;
        loop {
            cursor = table.scan(cursor, |k, _| {
                seen.insert(k.as_slice().to_vec());
            });
            calls += 1;
            // Grow to 4x, then shrink below the start, while scanning.
            if calls == 100 {
                for i in 1000..4000 {
                    table.insert(&key(i), ());
                }
            }
            if calls == 600 {
                for i in 1000..4000 {
                    table.remove(&key(i));
                }
                for i in 0..900 {
                    if i % 2 == 1 {
                        table.remove(&key(i));
                    }
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in (0..1000).filter(|i| i % 2 == 0 || *i >= 900) {
            assert!(seen.contains(&key(i)), "member {i} missed");
        }
    }

    #[test]
    fn table_remove_at_keeps_entries_dense_and_findable() {
        let mut table: Table<()> = Table::new();
        for i in 0..100 {
            table.insert(&key(i), ());
        }
        for _ in 0..50 {
            table.remove_at(0);
        }
        assert_eq!(table.len(), 50);
        let left: Vec<Vec<u8>> = table.iter().map(|(k, _)| k.as_slice().to_vec()).collect();
        for k in &left {
            assert!(table.contains(k));
        }
    }
}
