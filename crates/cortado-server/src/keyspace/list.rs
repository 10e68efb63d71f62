//! Lists: byte strings in order, pushed and popped at both ends in O(1), kept in small
//! contiguous chunks.
//!
//! A [`List`] is what the list commands need: both ends, an index, a walk from an index
//! either way, and the rebuilding of a stretch (`LSET`, `LINSERT`, `LREM`).
//!
//! # Design
//!
//! - **Chunks of entries** (Redis's quicklist of listpacks): a deque of byte buffers of up to
//!   [`CHUNK_BYTES`] each (`list-max-listpack-size -2`, Redis's default: 8 KiB), each entry its
//!   length as a LEB128 varint, its bytes, and its length again with the varint's bytes
//!   reversed, so a chunk is read from either end (Redis's `backlen`). An entry of 10 bytes
//!   costs 12, as in Redis's listpack; a deque of one string per element would cost 24 and
//!   more. An entry longer than a chunk gets a chunk of its own. A list of one chunk (most
//!   lists) holds it in place, without the deque's allocation.
//! - **Indexes** walk the chunks' counts, then scan one chunk: O(n / entries per chunk), as in
//!   Redis.
//! - **Weight.** [`List::heap_bytes`] is O(1): the chunks' capacities are kept as a running
//!   sum.
//!
//! Measurements: `docs/decisions/0241-server-zsets-lists.md`.

use std::collections::VecDeque;

use super::eviction::block_bytes;

/// The most bytes a chunk holds, unless one entry alone is longer: Redis's default
/// `list-max-listpack-size -2` (8 KiB per node).
pub const CHUNK_BYTES: usize = 8192;

/// One end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (`L`).
    Left,
    /// The tail (`R`).
    Right,
}

impl End {
    /// The other end.
    pub fn other(self) -> End {
        match self {
            End::Left => End::Right,
            End::Right => End::Left,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Chunk {
    buf: Vec<u8>,
    count: u32,
}

/// Makes room in `buf` for `extra` more bytes: a sixteenth more than it needs and at least
/// [`MIN_ROOM`], rounded up to the allocator's block (so the block's last bytes are room, not
/// rounding the allocator keeps unused), and no more than `limit` unless it needs more. Growth
/// by a sixteenth keeps appends amortized O(1) (each byte is copied at most 16 times on its
/// way to a full chunk) while the last chunk of a list wastes about 4% of itself on average,
/// less than the ~9% of Redis's jemalloc classes; growth by a quarter wasted 12% (a list of
/// 1,000 entries cost 2% more than in Redis), doubling up to half.
pub(super) fn reserve(buf: &mut Vec<u8>, extra: usize, limit: usize) {
    let needed = buf.len() + extra;
    if needed <= buf.capacity() {
        return;
    }
    let room = (needed / 16).max(MIN_ROOM);
    let target = block_bytes((needed + room).min(limit.max(needed)));
    buf.reserve_exact(target - buf.len());
}

/// The least room a buffer grows by: below 512 bytes a sixteenth is less than one short
/// entry, and a short list was moved at almost every push (`RPUSH` to lists of about 20
/// entries: 8% more instructions than growth by a quarter; decision 0241).
const MIN_ROOM: usize = 32;

/// The bytes a varint of `n` takes.
fn varint_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

fn encode_into(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    let mut n = bytes.len();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    let header = out.len() - start;
    out.extend_from_slice(bytes);
    for k in (0..header).rev() {
        out.push(out[start + k]);
    }
}

/// The bytes of an encoded entry of `len` bytes.
fn entry_len(len: usize) -> usize {
    len + 2 * varint_len(len)
}

/// The entry at `at`: its bytes and the offset of the next.
#[inline]
fn entry_at(buf: &[u8], at: usize) -> (&[u8], usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, at);
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let header = i - at;
    (&buf[i..i + n], i + n + header)
}

/// The entry ending at `end`: its bytes and its start.
#[inline]
fn entry_before(buf: &[u8], end: usize) -> (&[u8], usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, end);
    loop {
        i -= 1;
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let header = end - i;
    let start = i - n - header;
    (&buf[start + header..i], start)
}

/// The entries of a chunk, from either end.
struct Entries<'a> {
    buf: &'a [u8],
    front: usize,
    back: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (bytes, next) = entry_at(self.buf, self.front);
        self.front = next;
        Some(bytes)
    }
}

impl<'a> DoubleEndedIterator for Entries<'a> {
    #[inline]
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (bytes, start) = entry_before(self.buf, self.back);
        self.back = start;
        Some(bytes)
    }
}

impl Chunk {
    fn entries(&self) -> Entries<'_> {
        Entries {
            buf: &self.buf,
            front: 0,
            back: self.buf.len(),
        }
    }

    /// A chunk of `entries`, in order.
    fn of<'e>(entries: impl IntoIterator<Item = &'e [u8]>) -> Chunk {
        let mut chunk = Chunk::default();
        for e in entries {
            encode_into(&mut chunk.buf, e);
            chunk.count += 1;
        }
        chunk.buf.shrink_to_fit();
        chunk
    }
}

/// The chunks of a list: one held in place (most lists are short: no deque to allocate, 48
/// bytes a key with glibc's header), or a deque of them.
#[derive(Clone, Debug, Default)]
enum Chunks {
    #[default]
    Empty,
    One(Chunk),
    Many(VecDeque<Chunk>),
}

impl std::ops::Index<usize> for Chunks {
    type Output = Chunk;

    fn index(&self, i: usize) -> &Chunk {
        match self {
            Chunks::One(c) if i == 0 => c,
            Chunks::Many(d) => &d[i],
            _ => panic!("chunk {i} out of range"),
        }
    }
}

impl std::ops::IndexMut<usize> for Chunks {
    fn index_mut(&mut self, i: usize) -> &mut Chunk {
        match self {
            Chunks::One(c) if i == 0 => c,
            Chunks::Many(d) => &mut d[i],
            _ => panic!("chunk {i} out of range"),
        }
    }
}

impl Chunks {
    fn len(&self) -> usize {
        match self {
            Chunks::Empty => 0,
            Chunks::One(_) => 1,
            Chunks::Many(d) => d.len(),
        }
    }

    /// The deque's own heap bytes.
    fn deque_bytes(&self) -> usize {
        match self {
            Chunks::Many(d) => d.capacity() * std::mem::size_of::<Chunk>(),
            _ => 0,
        }
    }

    fn front(&self) -> Option<&Chunk> {
        (self.len() > 0).then(|| &self[0])
    }

    fn back(&self) -> Option<&Chunk> {
        self.len().checked_sub(1).map(|i| &self[i])
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Chunk> {
        (i < self.len()).then(|| &mut self[i])
    }

    /// Every chunk, in order, either way.
    fn iter(&self) -> impl DoubleEndedIterator<Item = &Chunk> + ExactSizeIterator + '_ {
        (0..self.len()).map(move |i| &self[i])
    }

    /// Chunks `range`, in order.
    fn range(&self, range: std::ops::Range<usize>) -> impl DoubleEndedIterator<Item = &Chunk> + '_ {
        range.map(move |i| &self[i])
    }

    /// The chunks as a deque, to change their number.
    fn deque(&mut self) -> &mut VecDeque<Chunk> {
        match std::mem::take(self) {
            Chunks::Empty => *self = Chunks::Many(VecDeque::new()),
            Chunks::One(c) => {
                let mut d = VecDeque::with_capacity(2);
                d.push_back(c);
                *self = Chunks::Many(d);
            }
            many => *self = many,
        }
        match self {
            Chunks::Many(d) => d,
            _ => unreachable!("made a deque above"),
        }
    }

    /// The chunks as a deque with room for one more: an eighth more when full (at least one),
    /// not the double `VecDeque` would take, as a list gains a chunk per 8 KiB of entries.
    fn deque_with_room(&mut self) -> &mut VecDeque<Chunk> {
        let d = self.deque();
        if d.len() == d.capacity() {
            d.reserve_exact((d.len() / 8).max(1));
        }
        d
    }

    /// Back to the compact forms once one chunk or none is left; a deque that emptied
    /// three quarters gives back half its room.
    fn settle(&mut self) {
        if let Chunks::Many(d) = self {
            match d.len() {
                0 => *self = Chunks::Empty,
                1 => *self = Chunks::One(d.pop_front().expect("one chunk")),
                n if n < d.capacity() / 4 => d.shrink_to(n * 2),
                _ => {}
            }
        }
    }

    fn push(&mut self, end: End, chunk: Chunk) {
        if let Chunks::Empty = self {
            *self = Chunks::One(chunk);
            return;
        }
        let d = self.deque_with_room();
        match end {
            End::Left => d.push_front(chunk),
            End::Right => d.push_back(chunk),
        }
    }

    fn pop(&mut self, end: End) -> Option<Chunk> {
        let popped = match self {
            Chunks::Empty => None,
            Chunks::One(_) => match std::mem::take(self) {
                Chunks::One(c) => Some(c),
                _ => unreachable!("matched above"),
            },
            Chunks::Many(d) => match end {
                End::Left => d.pop_front(),
                End::Right => d.pop_back(),
            },
        };
        self.settle();
        popped
    }

    fn remove(&mut self, i: usize) -> Option<Chunk> {
        let removed = self.deque().remove(i);
        self.settle();
        removed
    }

    fn insert(&mut self, i: usize, chunk: Chunk) {
        if let Chunks::Empty = self {
            *self = Chunks::One(chunk);
            return;
        }
        self.deque_with_room().insert(i, chunk);
    }
}

/// A list. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct List {
    chunks: Chunks,
    len: usize,
    /// The chunks' buffers' capacities, summed.
    bytes: usize,
}

impl PartialEq for List {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for List {}

impl List {
    /// A list of `entries`, in order.
    pub fn of<'e>(entries: impl IntoIterator<Item = &'e [u8]>) -> List {
        let mut list = List::default();
        for e in entries {
            list.push(End::Right, e);
        }
        list
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held on the heap, the list's own box included.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.chunks.deque_bytes() + self.bytes
    }

    /// Adds `bytes` at `end`.
    pub fn push(&mut self, end: End, bytes: &[u8]) {
        let need = entry_len(bytes.len());
        let fits = |c: &Chunk| c.buf.len() + need <= CHUNK_BYTES;
        let at = match end {
            End::Left => self.chunks.front().filter(|c| fits(c)).map(|_| 0),
            End::Right => self
                .chunks
                .back()
                .filter(|c| fits(c))
                .map(|_| self.chunks.len() - 1),
        };
        let i = match at {
            Some(i) => i,
            None => {
                self.chunks.push(end, Chunk::default());
                if end == End::Left {
                    0
                } else {
                    self.chunks.len() - 1
                }
            }
        };
        let chunk = &mut self.chunks[i];
        let before = chunk.buf.capacity();
        reserve(&mut chunk.buf, need, CHUNK_BYTES);
        match end {
            End::Right => encode_into(&mut chunk.buf, bytes),
            End::Left => {
                let mut entry = Vec::with_capacity(need);
                encode_into(&mut entry, bytes);
                chunk.buf.splice(0..0, entry);
            }
        }
        chunk.count += 1;
        self.bytes = self.bytes + chunk.buf.capacity() - before;
        self.len += 1;
    }

    /// Removes the entry at `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let i = match end {
            End::Left => 0,
            End::Right => self.chunks.len().checked_sub(1)?,
        };
        let chunk = self.chunks.get_mut(i)?;
        let popped = match end {
            End::Left => {
                let (bytes, next) = entry_at(&chunk.buf, 0);
                let popped = bytes.to_vec();
                chunk.buf.drain(..next);
                popped
            }
            End::Right => {
                let (bytes, start) = entry_before(&chunk.buf, chunk.buf.len());
                let popped = bytes.to_vec();
                chunk.buf.truncate(start);
                popped
            }
        };
        chunk.count -= 1;
        self.len -= 1;
        if chunk.count == 0 {
            self.bytes -= chunk.buf.capacity();
            self.chunks.pop(end);
        }
        Some(popped)
    }

    /// The chunk holding index `index` and the index within it.
    fn locate(&self, index: usize) -> Option<(usize, usize)> {
        if index >= self.len {
            return None;
        }
        if index >= self.len / 2 {
            // From the tail.
            let mut left = self.len - index;
            for (i, c) in self.chunks.iter().enumerate().rev() {
                if left <= c.count as usize {
                    return Some((i, c.count as usize - left));
                }
                left -= c.count as usize;
            }
            return None;
        }
        let mut index = index;
        for (i, c) in self.chunks.iter().enumerate() {
            if index < c.count as usize {
                return Some((i, index));
            }
            index -= c.count as usize;
        }
        None
    }

    /// The entry at `index` (from 0).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        let (i, at) = self.locate(index)?;
        self.chunks[i].entries().nth(at)
    }

    /// Every entry, in order, either way.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.chunks.iter().flat_map(Chunk::entries)
    }

    /// The entries from index `from` on, upwards (`rev`: downwards), skipping whole chunks.
    pub fn iter_from(&self, from: usize, rev: bool) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        let Some((i, at)) = self.locate(from) else {
            return Box::new(std::iter::empty());
        };
        if rev {
            let head = self.chunks[i]
                .entries()
                .take(at + 1)
                .collect::<Vec<_>>()
                .into_iter()
                .rev();
            Box::new(
                head.chain(
                    self.chunks
                        .range(0..i)
                        .rev()
                        .flat_map(|c| c.entries().rev()),
                ),
            )
        } else {
            Box::new(
                self.chunks[i].entries().skip(at).chain(
                    self.chunks
                        .range(i + 1..self.chunks.len())
                        .flat_map(Chunk::entries),
                ),
            )
        }
    }

    /// Replaces chunk `i` with chunks of `entries` (none if empty); returns how many.
    fn rebuild_chunk(&mut self, i: usize, entries: Vec<Vec<u8>>) -> usize {
        let old = self.chunks.remove(i).expect("chunk exists");
        self.bytes -= old.buf.capacity();
        self.len -= old.count as usize;
        let mut at = i;
        let mut start = 0;
        while start < entries.len() {
            let mut size = 0;
            let mut end = start;
            while end < entries.len()
                && (end == start || size + entry_len(entries[end].len()) <= CHUNK_BYTES)
            {
                size += entry_len(entries[end].len());
                end += 1;
            }
            let chunk = Chunk::of(entries[start..end].iter().map(Vec::as_slice));
            self.bytes += chunk.buf.capacity();
            self.len += chunk.count as usize;
            self.chunks.insert(at, chunk);
            at += 1;
            start = end;
        }
        at - i
    }

    /// Sets the entry at `index`; false if out of range.
    pub fn set(&mut self, index: usize, bytes: &[u8]) -> bool {
        let Some((i, at)) = self.locate(index) else {
            return false;
        };
        let mut entries: Vec<Vec<u8>> = self.chunks[i].entries().map(<[u8]>::to_vec).collect();
        entries[at] = bytes.to_vec();
        self.rebuild_chunk(i, entries);
        true
    }

    /// Inserts `bytes` before (or `after`) the first entry equal to `pivot`; false if there
    /// is none.
    pub fn insert(&mut self, pivot: &[u8], bytes: &[u8], after: bool) -> bool {
        for i in 0..self.chunks.len() {
            let Some(at) = self.chunks[i].entries().position(|e| e == pivot) else {
                continue;
            };
            let mut entries: Vec<Vec<u8>> = self.chunks[i].entries().map(<[u8]>::to_vec).collect();
            entries.insert(at + usize::from(after), bytes.to_vec());
            self.rebuild_chunk(i, entries);
            return true;
        }
        false
    }

    /// Removes entries equal to `bytes`: up to `count` from the head (from the tail if
    /// `rev`), all if `count` is 0; returns how many went.
    pub fn remove(&mut self, bytes: &[u8], count: usize, rev: bool) -> usize {
        let mut removed = 0;
        // Chunk by chunk, towards the far end; a rebuilt chunk may become none or several.
        let mut i = if rev { self.chunks.len() } else { 0 };
        loop {
            if count != 0 && removed == count {
                break;
            }
            if rev {
                if i == 0 {
                    break;
                }
                i -= 1;
            } else if i >= self.chunks.len() {
                break;
            }
            if !self.chunks[i].entries().any(|e| e == bytes) {
                i += usize::from(!rev);
                continue;
            }
            let mut entries: Vec<Vec<u8>> = self.chunks[i].entries().map(<[u8]>::to_vec).collect();
            let mut keep = vec![true; entries.len()];
            let positions: Vec<usize> = if rev {
                (0..entries.len()).rev().collect()
            } else {
                (0..entries.len()).collect()
            };
            for p in positions {
                if count != 0 && removed == count {
                    break;
                }
                if entries[p] == bytes {
                    keep[p] = false;
                    removed += 1;
                }
            }
            let mut k = keep.iter();
            entries.retain(|_| *k.next().expect("one flag per entry"));
            let made = self.rebuild_chunk(i, entries);
            if !rev {
                i += made;
            }
        }
        removed
    }

    /// Keeps the entries from index `start` to `stop` (both in range, `start <= stop`), or
    /// none if `keep` is `None`.
    pub fn trim(&mut self, keep: Option<(usize, usize)>) {
        let Some((start, stop)) = keep else {
            *self = List::default();
            return;
        };
        let tail = self.len - 1 - stop;
        for (n, end) in [(start, End::Left), (tail, End::Right)] {
            let mut n = n;
            while n > 0 {
                let chunk = match end {
                    End::Left => self.chunks.front(),
                    End::Right => self.chunks.back(),
                };
                let count = chunk.map_or(0, |c| c.count as usize);
                if count <= n {
                    let c = self.chunks.pop(end).expect("a chunk");
                    self.bytes -= c.buf.capacity();
                    self.len -= count;
                    n -= count;
                } else {
                    self.pop(end);
                    n -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_encoding_reads_from_both_ends() {
        for len in [0, 1, 127, 128, 300, 20_000] {
            let bytes = vec![7u8; len];
            let mut buf = Vec::new();
            encode_into(&mut buf, &bytes);
            assert_eq!(buf.len(), entry_len(len));
            assert_eq!(entry_at(&buf, 0), (&bytes[..], buf.len()));
            assert_eq!(entry_before(&buf, buf.len()), (&bytes[..], 0));
        }
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<u8>),
        Pop(bool),
        Set(usize, Vec<u8>),
        Insert(Vec<u8>, Vec<u8>, bool),
        Remove(Vec<u8>, usize, bool),
        Trim(usize, usize),
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            20 => proptest::collection::vec(b'a'..b'd', 0..3),
            1 => proptest::collection::vec(any::<u8>(), 100..3000),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (any::<bool>(), bytes()).prop_map(|(l, b)| Op::Push(l, b)),
            3 => any::<bool>().prop_map(Op::Pop),
            1 => (0..50usize, bytes()).prop_map(|(i, b)| Op::Set(i, b)),
            1 => (bytes(), bytes(), any::<bool>()).prop_map(|(p, b, a)| Op::Insert(p, b, a)),
            1 => (bytes(), 0..3usize, any::<bool>()).prop_map(|(b, c, r)| Op::Remove(b, c, r)),
            1 => (0..20usize, 0..20usize).prop_map(|(a, b)| Op::Trim(a, b)),
        ]
    }

    proptest! {
        #[test]
        fn list_matches_vecdeque(ops in proptest::collection::vec(op(), 0..300)) {
            let mut list = List::default();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(left, b) => {
                        list.push(if left { End::Left } else { End::Right }, &b);
                        if left { model.push_front(b) } else { model.push_back(b) }
                    }
                    Op::Pop(left) => {
                        let want = if left { model.pop_front() } else { model.pop_back() };
                        prop_assert_eq!(list.pop(if left { End::Left } else { End::Right }), want);
                    }
                    Op::Set(i, b) => {
                        let ok = i < model.len();
                        if ok { model[i] = b.clone(); }
                        prop_assert_eq!(list.set(i, &b), ok);
                    }
                    Op::Insert(p, b, after) => {
                        let at = model.iter().position(|e| *e == p);
                        if let Some(at) = at { model.insert(at + usize::from(after), b.clone()); }
                        prop_assert_eq!(list.insert(&p, &b, after), at.is_some());
                    }
                    Op::Remove(b, count, rev) => {
                        let mut removed = 0;
                        let mut kept: Vec<Vec<u8>> = Vec::new();
                        let items: Vec<Vec<u8>> = if rev { model.iter().rev().cloned().collect() } else { model.iter().cloned().collect() };
                        for e in items {
                            if e == b && (count == 0 || removed < count) { removed += 1; } else { kept.push(e); }
                        }
                        if rev { kept.reverse(); }
                        model = kept.into();
                        prop_assert_eq!(list.remove(&b, count, rev), removed);
                    }
                    Op::Trim(a, b) => {
                        if model.is_empty() { continue; }
                        let stop = b.min(model.len() - 1);
                        if a > stop {
                            model.clear();
                            list.trim(None);
                        } else {
                            model = model.iter().skip(a).take(stop - a + 1).cloned().collect();
                            list.trim(Some((a, stop)));
                        }
                    }
                }
                prop_assert_eq!(list.len(), model.len());
            }
            let all: Vec<&[u8]> = list.iter().collect();
            prop_assert_eq!(all, model.iter().map(Vec::as_slice).collect::<Vec<_>>());
            let back: Vec<&[u8]> = list.iter().rev().collect();
            prop_assert_eq!(back, model.iter().rev().map(Vec::as_slice).collect::<Vec<_>>());
            for i in 0..model.len() {
                prop_assert_eq!(list.get(i), Some(model[i].as_slice()));
                let from: Vec<&[u8]> = list.iter_from(i, false).collect();
                prop_assert_eq!(from.len(), model.len() - i);
                let down: Vec<&[u8]> = list.iter_from(i, true).collect();
                prop_assert_eq!(down.len(), i + 1);
                prop_assert_eq!(down[0], model[i].as_slice());
            }
            prop_assert_eq!(list.get(model.len()), None);
        }
    }

    #[test]
    fn reserve_grows_by_a_sixteenth_to_whole_blocks() {
        let mut buf: Vec<u8> = Vec::new();
        let mut growths = 0;
        while buf.len() + 18 <= CHUNK_BYTES {
            let before = buf.capacity();
            reserve(&mut buf, 18, CHUNK_BYTES);
            let needed = buf.len() + 18;
            if buf.capacity() != before {
                growths += 1;
                assert_eq!(buf.capacity(), block_bytes(buf.capacity()), "a whole block");
                assert!(buf.capacity() <= block_bytes(needed + (needed / 16).max(MIN_ROOM)));
            }
            buf.extend_from_slice(&[7; 18]);
        }
        // Amortized O(1): a bounded number of moves to fill a chunk, not one per entry.
        assert!(
            growths < 80,
            "{growths} growths for {} entries",
            buf.len() / 18
        );
        assert_eq!(
            buf.capacity(),
            block_bytes(CHUNK_BYTES),
            "capped at the chunk's block"
        );
    }

    #[test]
    fn list_deque_grows_by_an_eighth() {
        let mut list = List::default();
        let entry = [b'e'; 100];
        let per_chunk = CHUNK_BYTES / entry_len(entry.len());
        for _ in 0..3 * per_chunk {
            list.push(End::Right, &entry);
        }
        assert_eq!(list.chunks.len(), 3);
        assert_eq!(list.chunks.deque_bytes(), 3 * std::mem::size_of::<Chunk>());
        for _ in 0..37 * per_chunk {
            list.push(End::Left, &entry);
        }
        let Chunks::Many(d) = &list.chunks else {
            panic!("many chunks")
        };
        assert_eq!(d.len(), 40);
        assert!(d.capacity() <= 40 + 40 / 8, "{}", d.capacity());
    }

    #[test]
    fn list_weight_counts_chunk_capacity() {
        let mut list = List::default();
        for i in 0..10_000u32 {
            list.push(End::Right, &i.to_le_bytes());
        }
        // 6 bytes an entry, chunks about full: well under 8 bytes an entry.
        assert!(list.heap_bytes() < 10_000 * 8, "{}", list.heap_bytes());
        while list.pop(End::Left).is_some() {}
        assert!(list.heap_bytes() < 1024, "{}", list.heap_bytes());
    }
}
