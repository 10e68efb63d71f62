//! Sorted sets: members ordered by score, then by their bytes, with rank and range in
//! O(log n), and a compact form for small sets.
//!
//! A [`ZSet`] answers what the sorted-set commands ask: a member's score, its rank, the entries
//! at ranks `from..from + n` either way, and the rank of the first entry past a bound (a score
//! or a lexical one), from which every range command computes its ranks.
//!
//! # Design
//!
//! - **Small sets are one buffer** (Redis's listpack idea): entries sorted, each a header byte
//!   (the member's length, and whether the score is an integer), the score (an integer as a
//!   zigzag varint, 1 byte up to 63, as Redis's listpack stores integers; otherwise the 8
//!   bytes of the double) and the member's bytes, so a leaderboard of 10 short members with
//!   small integer scores is one allocation of about 190 bytes. The buffer is exactly its
//!   entries (a change writes a new one, as Redis's listpack reallocates on every change; the
//!   scan and the move of an insertion are O(n) already), and the set is 16 bytes held in the
//!   [`Value`](super::Value) itself, as a hash is: no room to grow, no box, so a small set's
//!   one block is all entries. Every operation scans it, which at up to 128 entries (the
//!   default) is faster than following pointers. Redis 7.0's limits decide when a set leaves
//!   it ([`ZSetLimits`]: more entries than `zset-max-listpack-entries` or a member longer than
//!   `zset-max-listpack-value`, as the server is configured when the set grows); `OBJECT
//!   ENCODING` then says `skiplist`, as Redis's does, and a set never goes back (as in
//!   Redis).
//! - **Large sets are a treap with subtree counts** in one vector of 24-byte nodes, indexed
//!   by `u32`, beside the members in the hashes' and sets' [`Table`], node `i` being the
//!   table's entry `i`: both are dense and fill a removal's hole with their last element, so
//!   they stay aligned, the member is stored once, and `ZSCAN` walks the table with its
//!   reverse-binary cursor, which misses no member however the set changes between calls.
//!   Counts give rank and select in O(log n) expected, as Redis's skip list spans do. A
//!   treap's priorities are random, so no order of inserts degrades it.
//! - **Weight.** [`ZSet::heap_bytes`] is O(1): the buffers' capacities plus the members'
//!   own heap bytes, kept as a running sum.
//!
//! Measurements: `docs/decisions/0241-server-zsets-lists.md`.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use cortado::DefaultHashBuilder;

use super::table::Table;

/// When a set leaves its compact form (`zset-max-listpack-entries` and `-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZSetLimits {
    /// The most entries a compact set holds.
    pub entries: usize,
    /// The longest member a compact set holds, in bytes.
    pub value: usize,
}

impl ZSetLimits {
    /// `redis-server`'s defaults: 128 entries, 64 bytes.
    pub const REDIS: Self = Self {
        entries: 128,
        value: 64,
    };

    /// Whether a set of `len` entries whose longest member has `longest` bytes is compact,
    /// as Redis's `zsetTypeCreate` decides.
    fn fit(self, len: usize, longest: usize) -> bool {
        len <= self.entries && longest <= self.value
    }
}

impl Default for ZSetLimits {
    fn default() -> Self {
        Self::REDIS
    }
}

/// The order of entries: by score, then by member bytes.
#[inline]
pub fn order(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.1.cmp(b.1))
}

/// A sorted set. See the [module docs](self).
#[derive(Clone, Debug)]
pub enum ZSet {
    /// Entries in one buffer of exactly their size: see the [module docs](self).
    Pack(Box<[u8]>),
    /// A treap with a member index.
    Tree(Box<Tree>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Pack(Box::default())
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.range(0, self.len(), false) == other.range(0, other.len(), false)
    }
}

impl Eq for ZSet {}

/// The header bit of a packed entry whose score is an integer, as a zigzag varint.
const INTEGER_SCORE: u8 = 0x80;

/// The longest member a packed entry's header can say (its other 7 bits): a set given a
/// longer `zset-max-listpack-value` leaves the compact form at such a member all the same.
const MAX_PACKED_MEMBER: usize = INTEGER_SCORE as usize - 1;

/// Reads the entry of a packed buffer at `at`: member, score, and the offset of the next.
#[inline]
fn pack_entry(buf: &[u8], at: usize) -> (&[u8], f64, usize) {
    let header = buf[at];
    let len = (header & !INTEGER_SCORE) as usize;
    let mut i = at + 1;
    let score = if header & INTEGER_SCORE != 0 {
        let (mut z, mut shift) = (0u64, 0);
        loop {
            let b = buf[i];
            i += 1;
            z |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        (((z >> 1) as i64) ^ -((z & 1) as i64)) as f64
    } else {
        i += 8;
        f64::from_le_bytes(buf[i - 8..i].try_into().expect("8 bytes"))
    };
    (&buf[i..i + len], score, i + len)
}

/// Appends the entry of `member` (at most [`MAX_PACKED_MEMBER`] bytes) and `score` to `out`.
fn pack_encode(out: &mut Vec<u8>, member: &[u8], score: f64) {
    // Integers a double holds exactly, but -0 (whose sign an integer would lose).
    let integer =
        score.fract() == 0.0 && score.abs() < 9.0e15 && !(score == 0.0 && score.is_sign_negative());
    if integer {
        out.push(member.len() as u8 | INTEGER_SCORE);
        let n = score as i64;
        let mut z = ((n << 1) ^ (n >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    } else {
        out.push(member.len() as u8);
        out.extend_from_slice(&score.to_le_bytes());
    }
    out.extend_from_slice(member);
}

/// `buf` without the bytes `cut` and with `entry` placed at `at` (an offset of `buf` outside
/// `cut`, or its start), in a new buffer of exactly its size: a small set's buffer holds no
/// room to grow, so that its block is all entries (one copy per change, as the scan and the
/// move of a `Vec`'s insertion already cost).
fn rebuilt(buf: &[u8], cut: std::ops::Range<usize>, at: usize, entry: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(buf.len() - cut.len() + entry.len());
    if at <= cut.start {
        out.extend_from_slice(&buf[..at]);
        out.extend_from_slice(entry);
        out.extend_from_slice(&buf[at..cut.start]);
        out.extend_from_slice(&buf[cut.end..]);
    } else {
        out.extend_from_slice(&buf[..cut.start]);
        out.extend_from_slice(&buf[cut.end..at]);
        out.extend_from_slice(entry);
        out.extend_from_slice(&buf[at..]);
    }
    out.into_boxed_slice()
}

fn pack_iter(buf: &[u8]) -> impl Iterator<Item = (&[u8], f64, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= buf.len() {
            return None;
        }
        let start = at;
        let (member, score, next) = pack_entry(buf, at);
        at = next;
        Some((member, score, start))
    })
}

impl ZSet {
    /// An empty set in the form its expected size calls for (a store command knows it).
    pub fn with_capacity(len: usize, longest: usize, limits: ZSetLimits) -> Self {
        if limits.fit(len, longest) {
            ZSet::default()
        } else {
            ZSet::Tree(Box::default())
        }
    }

    /// A set of `entries` (later duplicates win).
    pub fn from_entries<'m>(
        entries: impl IntoIterator<Item = (&'m [u8], f64)> + Clone,
        limits: ZSetLimits,
    ) -> Self {
        let (mut len, mut longest) = (0, 0);
        for (m, _) in entries.clone() {
            len += 1;
            longest = longest.max(m.len());
        }
        let mut set = Self::with_capacity(len, longest, limits);
        for (m, s) in entries {
            set.insert(m, s, limits);
        }
        set
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        match self {
            ZSet::Pack(buf) => pack_iter(buf).count(),
            ZSet::Tree(t) => t.len(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            ZSet::Pack(buf) => buf.is_empty(),
            ZSet::Tree(t) => t.len() == 0,
        }
    }

    /// `OBJECT ENCODING`'s name for the form.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Pack(_) => "listpack",
            ZSet::Tree(_) => "skiplist",
        }
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        match self {
            ZSet::Pack(buf) => buf.len(),
            ZSet::Tree(t) => t.heap_bytes(),
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(buf) => pack_iter(buf).find(|e| e.0 == member).map(|e| e.1),
            ZSet::Tree(t) => t.find(member).map(|i| t.nodes[i as usize].score),
        }
    }

    /// Sets `member`'s score; true if it is a new member. A compact set that would outgrow
    /// `limits` leaves its form.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: ZSetLimits) -> bool {
        if let ZSet::Pack(buf) = self {
            if member.len() <= limits.value.min(MAX_PACKED_MEMBER) {
                let old = pack_iter(buf).find(|e| e.0 == member).map(|e| e.2);
                let old = match old {
                    Some(at) => Some(at..pack_entry(buf, at).2),
                    None if pack_iter(buf).count() >= limits.entries => {
                        self.convert();
                        return self.insert(member, score, limits);
                    }
                    None => None,
                };
                let at = pack_iter(buf)
                    .filter(|e| old.as_ref().is_none_or(|old| e.2 != old.start))
                    .find(|e| order((e.1, e.0), (score, member)) == Ordering::Greater)
                    .map_or(buf.len(), |e| e.2);
                let mut entry = Vec::with_capacity(9 + member.len());
                pack_encode(&mut entry, member, score);
                let new = old.is_none();
                *buf = rebuilt(buf, old.unwrap_or(at..at), at, &entry);
                return new;
            }
            self.convert();
        }
        let ZSet::Tree(t) = self else {
            unreachable!("converted above")
        };
        let new = t.remove(member).is_none();
        t.insert(member, score);
        new
    }

    /// Moves a packed set into a tree.
    fn convert(&mut self) {
        if let ZSet::Pack(buf) = self {
            let mut tree = Box::<Tree>::default();
            for (m, s, _) in pack_iter(buf) {
                tree.insert(m, s);
            }
            *self = ZSet::Tree(tree);
        }
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(buf) => {
                let (_, score, at) = pack_iter(buf).find(|e| e.0 == member)?;
                let (_, _, next) = pack_entry(buf, at);
                *buf = rebuilt(buf, at..next, at, &[]);
                Some(score)
            }
            ZSet::Tree(t) => t.remove(member),
        }
    }

    /// The rank of `member` in increasing order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSet::Pack(buf) => pack_iter(buf).position(|e| e.0 == member),
            ZSet::Tree(t) => {
                let i = t.find(member)?;
                let n = &t.nodes[i as usize];
                Some(t.count_below(|s, m| order((s, m), (n.score, member)) == Ordering::Less))
            }
        }
    }

    /// The number of entries for which `below` holds, `below` being true for a prefix of the
    /// order (an entry below a bound).
    pub fn count_below(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Pack(buf) => pack_iter(buf).take_while(|e| below(e.1, e.0)).count(),
            ZSet::Tree(t) => t.count_below(below),
        }
    }

    /// Visits up to `n` entries from rank `from`: upwards, or downwards if `rev`.
    pub fn walk(&self, from: usize, n: usize, rev: bool, mut visit: impl FnMut(&[u8], f64)) {
        let len = self.len();
        if from >= len || n == 0 {
            return;
        }
        match self {
            ZSet::Pack(buf) if !rev => {
                for (m, s, _) in pack_iter(buf).skip(from).take(n) {
                    visit(m, s);
                }
            }
            ZSet::Pack(buf) => {
                let entries: Vec<_> = pack_iter(buf).take(from + 1).collect();
                for (m, s, _) in entries.iter().rev().take(n) {
                    visit(m, *s);
                }
            }
            ZSet::Tree(t) => t.walk(from, n, rev, visit),
        }
    }

    /// Up to `n` entries from rank `from` (see [`walk`](Self::walk)), copied.
    pub fn range(&self, from: usize, n: usize, rev: bool) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::with_capacity(n.min(self.len()));
        self.walk(from, n, rev, |m, s| out.push((m.to_vec(), s)));
        out
    }

    /// One step of `ZSCAN` from `cursor`, visiting members and scores, and the next cursor
    /// (0: done). A small set is visited whole, in order, as Redis returns a listpack; a
    /// large one walks its member table (see [`Table::scan_counted`]), so a member present
    /// from the first call to the last is visited at least once.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], f64)) -> u64 {
        match self {
            ZSet::Pack(_) => {
                self.walk(0, usize::MAX, false, visit);
                0
            }
            ZSet::Tree(t) => t.scan(cursor, count, &mut visit),
        }
    }

    /// Every member, in order.
    pub fn members(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.walk(0, usize::MAX, false, |m, _| out.push(m.to_vec()));
        out
    }
}

/// Marks a missing child.
const NIL: u32 = u32::MAX;

/// A treap node: 24 bytes (its member is the table's entry of the same index).
#[derive(Clone, Debug)]
struct Node {
    score: f64,
    left: u32,
    right: u32,
    /// Nodes in this subtree.
    size: u32,
    priority: u32,
}

/// The large form: see the [module docs](self).
#[derive(Clone)]
pub struct Tree {
    nodes: Vec<Node>,
    root: u32,
    /// The members, entry `i` being node `i`'s.
    members: Table<()>,
    /// The priorities' generator (xorshift).
    seed: u64,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tree({} entries)", self.nodes.len())
    }
}

impl Default for Tree {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            root: NIL,
            members: Table::new(),
            seed: DefaultHashBuilder::default().hash_one(0x5eed_u64) | 1,
        }
    }
}

impl Tree {
    fn len(&self) -> usize {
        self.nodes.len()
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.members.heap_bytes()
    }

    #[inline]
    fn size(&self, i: u32) -> usize {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].size as usize
        }
    }

    #[inline]
    fn member(&self, i: u32) -> &[u8] {
        self.members.at(i as usize).0.as_slice()
    }

    #[inline]
    fn key(&self, i: u32) -> (f64, &[u8]) {
        (self.nodes[i as usize].score, self.member(i))
    }

    fn update(&mut self, i: u32) {
        let n = &self.nodes[i as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[i as usize].size = size as u32;
    }

    fn find(&self, member: &[u8]) -> Option<u32> {
        self.members.index_of(member).map(|i| i as u32)
    }

    /// Adds `member`, which is not in the set, with `score`.
    fn insert(&mut self, member: &[u8], score: f64) {
        let i = self.nodes.len() as u32;
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let replaced = self.members.insert(member, ());
        debug_assert!(replaced.is_none(), "a new member");
        self.nodes.push(Node {
            score,
            left: NIL,
            right: NIL,
            size: 1,
            priority: (self.seed >> 32) as u32,
        });
        self.root = self.insert_at(self.root, i);
    }

    fn insert_at(&mut self, t: u32, i: u32) -> u32 {
        if t == NIL {
            return i;
        }
        if self.nodes[i as usize].priority > self.nodes[t as usize].priority {
            let (l, r) = self.split(t, i);
            let n = &mut self.nodes[i as usize];
            n.left = l;
            n.right = r;
            self.update(i);
            return i;
        }
        if order(self.key(i), self.key(t)) == Ordering::Less {
            let child = self.insert_at(self.nodes[t as usize].left, i);
            self.nodes[t as usize].left = child;
        } else {
            let child = self.insert_at(self.nodes[t as usize].right, i);
            self.nodes[t as usize].right = child;
        }
        self.update(t);
        t
    }

    /// Splits subtree `t` into the nodes ordered before node `i` and those after.
    fn split(&mut self, t: u32, i: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if order(self.key(t), self.key(i)) == Ordering::Less {
            let (l, r) = self.split(self.nodes[t as usize].right, i);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, i);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let right = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = right;
            self.update(a);
            a
        } else {
            let left = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = left;
            self.update(b);
            b
        }
    }

    /// Unlinks node `i` from subtree `t`; returns the subtree's new root.
    fn unlink(&mut self, t: u32, i: u32) -> u32 {
        if t == i {
            let n = &self.nodes[i as usize];
            return self.merge(n.left, n.right);
        }
        if order(self.key(i), self.key(t)) == Ordering::Less {
            let child = self.unlink(self.nodes[t as usize].left, i);
            self.nodes[t as usize].left = child;
        } else {
            let child = self.unlink(self.nodes[t as usize].right, i);
            self.nodes[t as usize].right = child;
        }
        self.update(t);
        t
    }

    /// The link that points at node `i`: its parent's child slot, or the root.
    fn link_to(&mut self, i: u32) -> &mut u32 {
        let mut at = self.root;
        let mut parent = NIL;
        while at != i {
            parent = at;
            at = if order(self.key(i), self.key(at)) == Ordering::Less {
                self.nodes[at as usize].left
            } else {
                self.nodes[at as usize].right
            };
        }
        if parent == NIL {
            return &mut self.root;
        }
        let p = &mut self.nodes[parent as usize];
        if p.left == i {
            &mut p.left
        } else {
            &mut p.right
        }
    }

    fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let i = self.find(member)?;
        self.root = self.unlink(self.root, i);
        // The last node fills the hole, as the last member does in the table.
        let last = self.nodes.len() as u32 - 1;
        if i != last {
            *self.link_to(last) = i;
        }
        let node = self.nodes.swap_remove(i as usize);
        self.members.remove_at(i as usize);
        if self.nodes.len() < self.nodes.capacity() / 4 {
            self.nodes.shrink_to(self.nodes.len() * 2);
        }
        Some(node.score)
    }

    /// See [`ZSet::scan`].
    fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], f64)) -> u64 {
        self.members.scan_counted(cursor, count, |i| {
            visit(self.member(i as u32), self.nodes[i].score);
        })
    }

    fn count_below(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut count = 0;
        let mut at = self.root;
        while at != NIL {
            let n = &self.nodes[at as usize];
            if below(n.score, self.member(at)) {
                count += self.size(n.left) + 1;
                at = n.right;
            } else {
                at = n.left;
            }
        }
        count
    }

    /// See [`ZSet::walk`]: an in-order walk with a stack of the nodes still to visit.
    fn walk(&self, from: usize, n: usize, rev: bool, mut visit: impl FnMut(&[u8], f64)) {
        let children = |node: &Node| {
            if rev {
                (node.right, node.left)
            } else {
                (node.left, node.right)
            }
        };
        // The rank in the walk's own direction.
        let mut skip = if rev { self.len() - 1 - from } else { from };
        let mut stack = Vec::new();
        let mut at = self.root;
        while at != NIL {
            let (near, far) = children(&self.nodes[at as usize]);
            let before = self.size(near);
            match skip.cmp(&before) {
                Ordering::Less => {
                    stack.push(at);
                    at = near;
                }
                Ordering::Equal => {
                    stack.push(at);
                    break;
                }
                Ordering::Greater => {
                    skip -= before + 1;
                    at = far;
                }
            }
        }
        let mut left = n;
        while left > 0 {
            let Some(i) = stack.pop() else { break };
            let node = &self.nodes[i as usize];
            visit(self.member(i), node.score);
            left -= 1;
            let mut at = children(node).1;
            while at != NIL {
                stack.push(at);
                at = children(&self.nodes[at as usize]).0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The model: members to scores, ordered on demand.
    fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| order((a.1, &a.0), (b.1, &b.0)));
        v
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, i8),
        Remove(Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Short members from a small alphabet, so inserts and removes meet; now and then a
        // long one, which moves a packed set into a tree.
        let member = prop_oneof![
            9 => proptest::collection::vec(b'a'..b'e', 0..3),
            1 => proptest::collection::vec(b'a'..b'c', 65..67),
        ];
        prop_oneof![
            3 => (member.clone(), any::<i8>()).prop_map(|(m, s)| Op::Insert(m, s)),
            1 => member.prop_map(Op::Remove),
        ]
    }

    fn check(set: &ZSet, model: &BTreeMap<Vec<u8>, f64>) {
        let want = sorted(model);
        assert_eq!(set.len(), want.len());
        assert_eq!(set.range(0, usize::MAX, false), want);
        let mut rev = want.clone();
        rev.reverse();
        assert_eq!(
            set.range(want.len().saturating_sub(1), usize::MAX, true),
            rev
        );
        for (rank, (m, s)) in want.iter().enumerate() {
            assert_eq!(set.rank(m), Some(rank));
            assert_eq!(set.score(m), Some(*s));
            assert_eq!(
                set.range(rank, 2, false),
                want[rank..(rank + 2).min(want.len())]
            );
            let back: Vec<_> = want[rank.saturating_sub(1)..=rank]
                .iter()
                .rev()
                .cloned()
                .collect();
            assert_eq!(set.range(rank, 2, true), back);
        }
        for bound in [-200.0, -1.0, 0.0, 3.0, 200.0] {
            let below = want.iter().filter(|e| e.1 < bound).count();
            assert_eq!(set.count_below(|s, _| s < bound), below);
        }
    }

    proptest! {
        #[test]
        fn zset_matches_model(ops in proptest::collection::vec(op(), 0..400)) {
            let mut set = ZSet::default();
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(m, s) => {
                        let new = set.insert(&m, f64::from(s), ZSetLimits::REDIS);
                        prop_assert_eq!(new, model.insert(m, f64::from(s)).is_none());
                    }
                    Op::Remove(m) => prop_assert_eq!(set.remove(&m), model.remove(&m)),
                }
            }
            check(&set, &model);
        }

        #[test]
        fn zset_tree_matches_model(ops in proptest::collection::vec(op(), 0..300)) {
            let mut set = ZSet::Tree(Box::default());
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(m, s) => {
                        let new = set.insert(&m, f64::from(s), ZSetLimits::REDIS);
                        prop_assert_eq!(new, model.insert(m, f64::from(s)).is_none());
                    }
                    Op::Remove(m) => prop_assert_eq!(set.remove(&m), model.remove(&m)),
                }
                check(&set, &model);
            }
        }
    }

    /// Removals of members already seen, growth to four times the size, shrinking and score
    /// changes between steps: every member present throughout is still visited (a rank cursor
    /// missed the members that removals moved below it).
    #[test]
    fn zset_scan_sees_every_member_present_throughout_despite_churn() {
        let member = |i: u32| format!("member:{i}").into_bytes();
        let mut set = ZSet::default();
        for i in 0..1000 {
            set.insert(&member(i), f64::from(i), ZSetLimits::REDIS);
        }
        assert!(matches!(set, ZSet::Tree(_)));
        let (mut seen, mut cursor, mut calls) = (std::collections::BTreeSet::new(), 0, 0);
        loop {
            cursor = set.scan(cursor, 10, |m, s| {
                assert_eq!(set.score(m), Some(s));
                seen.insert(m.to_vec());
            });
            calls += 1;
            match calls {
                5 => {
                    // The lowest-ranked members go: a rank cursor would skip as many.
                    for i in 0..100 {
                        set.remove(&member(i));
                    }
                }
                10 => {
                    for i in 1000..4000 {
                        set.insert(&member(i), -f64::from(i), ZSetLimits::REDIS);
                    }
                }
                40 => {
                    for i in 1000..4000 {
                        set.remove(&member(i));
                    }
                    for i in (500..600).step_by(2) {
                        set.insert(&member(i), 1e9, ZSetLimits::REDIS);
                    }
                }
                _ => {}
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 100..1000 {
            assert!(seen.contains(&member(i)), "member {i} missed");
        }
    }

    #[test]
    fn zset_pack_encoding_keeps_every_score() {
        let scores = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            63.0,
            64.0,
            -64.0,
            1.5,
            9.0e15,
            -9.0e15,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            123_456_789.0,
        ];
        let mut buf = Vec::new();
        for (i, &s) in scores.iter().enumerate() {
            pack_encode(&mut buf, format!("m{i}").as_bytes(), s);
        }
        let read: Vec<(Vec<u8>, f64)> = pack_iter(&buf).map(|(m, s, _)| (m.to_vec(), s)).collect();
        for (i, &s) in scores.iter().enumerate() {
            assert_eq!(read[i].0, format!("m{i}").into_bytes());
            assert_eq!(read[i].1.to_bits(), s.to_bits(), "{s}");
        }
        let mut small = Vec::new();
        pack_encode(&mut small, b"abc", 63.0);
        assert_eq!(small.len(), 5, "header, one score byte, member");
    }

    #[test]
    fn zset_packed_buffer_is_exactly_its_entries() {
        let mut set = ZSet::default();
        let mut model = BTreeMap::new();
        // Inserts, score changes that move a member either way, and removals.
        for (m, s) in [
            (&b"b"[..], 5.0),
            (b"a", 1.5),
            (b"c", 9.0),
            (b"a", 20.0),
            (b"c", -1.0),
        ] {
            set.insert(m, s, ZSetLimits::REDIS);
            model.insert(m.to_vec(), s);
            let mut exact = Vec::new();
            for (m, s) in sorted(&model) {
                pack_encode(&mut exact, &m, s);
            }
            let ZSet::Pack(buf) = &set else {
                panic!("small sets stay packed")
            };
            assert_eq!(&buf[..], &exact[..]);
            assert_eq!(set.heap_bytes(), exact.len());
        }
        assert_eq!(set.remove(b"b"), Some(5.0));
        assert_eq!(
            set.heap_bytes(),
            2 * 3,
            "a at 20 and c at -1: a header, one score byte and a member each"
        );
    }

    #[test]
    fn zset_packed_moves_to_tree_past_limits() {
        let mut set = ZSet::default();
        for i in 0..ZSetLimits::REDIS.entries {
            set.insert(format!("m{i}").as_bytes(), i as f64, ZSetLimits::REDIS);
        }
        assert_eq!(set.encoding(), "listpack");
        set.insert(b"one more", 0.5, ZSetLimits::REDIS);
        assert_eq!(set.encoding(), "skiplist");
        assert_eq!(set.rank(b"one more"), Some(1));
        let mut long = ZSet::default();
        long.insert(&[b'x'; ZSetLimits::REDIS.value], 1.0, ZSetLimits::REDIS);
        assert_eq!(long.encoding(), "listpack");
        long.insert(&[b'y'; ZSetLimits::REDIS.value + 1], 1.0, ZSetLimits::REDIS);
        assert_eq!(long.encoding(), "skiplist");
    }

    #[test]
    fn zset_heap_bytes_grow_and_shrink_with_entries() {
        let mut set = ZSet::default();
        let empty = set.heap_bytes();
        for i in 0..1000 {
            set.insert(
                format!("member-{i}").as_bytes(),
                f64::from(i),
                ZSetLimits::REDIS,
            );
        }
        let full = set.heap_bytes();
        assert!(full > empty + 1000 * 48, "{full}");
        for i in 0..990 {
            set.remove(format!("member-{i}").as_bytes());
        }
        assert!(set.heap_bytes() < full / 4, "{}", set.heap_bytes());
    }
}
