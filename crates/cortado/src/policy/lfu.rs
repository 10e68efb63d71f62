//! Least frequently used with O(1) operations: evict the least used entry, the least recent among
//! equals.
//!
//! Every `get` hit and every `insert` of an existing key counts as a use; a new entry starts at
//! one use. When an eviction is needed right after an insert, the entry just inserted is not the
//! victim: the least frequently used of the others goes, as in the classic LFU cache.
//!
//! # Design
//!
//! Frequency buckets form a list in ascending frequency; each bucket holds its entries in use order
//! (a deque), so the victim is the front of the first bucket and a use moves an entry from bucket
//! `f` to the back of bucket `f + 1`, creating that bucket next to `f` if needed. All steps are
//! constant time.
//!
//! # References
//!
//! 1. K. Shah, A. Mitra, D. Matani: "An O(1) algorithm for implementing the LFU cache eviction
//!    scheme", 2010.

use super::deque::{impl_linked, Deque, NIL};

#[derive(Debug, Clone, Copy)]
struct Node {
    prev: u32,
    next: u32,
    weight: u32,
    /// Index of the node's bucket, `NIL` when absent.
    bucket: u32,
}
impl_linked!(Node);

const EMPTY: Node = Node {
    prev: NIL,
    next: NIL,
    weight: 0,
    bucket: NIL,
};

#[derive(Debug, Clone, Copy)]
struct Bucket {
    prev: u32,
    next: u32,
    frequency: u64,
    entries: Deque,
}
impl_linked!(Bucket);

/// The LFU policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lfu {
    nodes: Vec<Node>,
    buckets: Vec<Bucket>,
    free_buckets: Vec<u32>,
    /// Buckets in ascending frequency.
    order: Deque,
    maximum: u64,
    weighted_size: u64,
    /// The entry inserted last, spared by the eviction that follows its insertion.
    newest: u32,
}

impl Lfu {
    pub(crate) fn new(maximum: u64) -> Self {
        Self {
            maximum,
            newest: NIL,
            ..Self::default()
        }
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.maximum
    }

    /// Moves the maximum without forgetting the newest entry: the bound a shared budget
    /// gives (see [`Policy::set_allowance`](crate::policy::Policy::set_allowance)) moves inside
    /// a write, before the eviction that is still the newest entry's own.
    pub(crate) fn set_allowance(&mut self, maximum: u64) {
        self.maximum = maximum;
    }

    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.maximum = maximum;
        // The eviction that follows is not the newest entry's own.
        self.newest = NIL;
    }

    pub(crate) fn weighted_size(&self) -> u64 {
        self.weighted_size
    }

    pub(crate) fn reserve(&mut self, entries: usize) {
        if entries > self.nodes.len() {
            self.nodes.reserve_exact(entries - self.nodes.len());
            self.nodes.resize(entries, EMPTY);
        }
    }

    /// A bucket for `frequency` placed right after `after` (or first if `after` is `NIL`).
    fn new_bucket(&mut self, frequency: u64, after: u32) -> u32 {
        let bucket = Bucket {
            prev: NIL,
            next: NIL,
            frequency,
            entries: Deque::default(),
        };
        let b = match self.free_buckets.pop() {
            Some(b) => {
                self.buckets[b as usize] = bucket;
                b
            }
            None => {
                self.buckets.push(bucket);
                (self.buckets.len() - 1) as u32
            }
        };
        if after == NIL {
            self.order.push_front(&mut self.buckets, b);
        } else {
            self.order.insert_after(&mut self.buckets, after, b);
        }
        b
    }

    fn drop_bucket_if_empty(&mut self, b: u32) {
        if self.buckets[b as usize].entries.len() == 0 {
            self.order.unlink(&mut self.buckets, b);
            self.free_buckets.push(b);
        }
    }

    pub(crate) fn insert(&mut self, i: u32, weight: u32) {
        if i as usize >= self.nodes.len() {
            let len = (i as usize + 1).max(self.nodes.len() * 2).max(16);
            self.nodes.resize(len, EMPTY);
        }
        let first = self.order.front().unwrap_or(NIL);
        let b = if first != NIL && self.buckets[first as usize].frequency == 1 {
            first
        } else {
            self.new_bucket(1, NIL)
        };
        self.nodes[i as usize] = Node {
            weight,
            bucket: b,
            ..EMPTY
        };
        self.buckets[b as usize]
            .entries
            .push_back(&mut self.nodes, i);
        self.weighted_size += u64::from(weight);
        self.newest = i;
    }

    pub(crate) fn access(&mut self, i: u32) {
        let b = self.nodes[i as usize].bucket;
        let frequency = self.buckets[b as usize].frequency.saturating_add(1);
        let next = self.buckets[b as usize].next;
        let target = if next != NIL && self.buckets[next as usize].frequency == frequency {
            next
        } else {
            self.new_bucket(frequency, b)
        };
        self.buckets[b as usize].entries.unlink(&mut self.nodes, i);
        self.buckets[target as usize]
            .entries
            .push_back(&mut self.nodes, i);
        self.nodes[i as usize].bucket = target;
        self.drop_bucket_if_empty(b);
    }

    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        let node = &mut self.nodes[i as usize];
        self.weighted_size = self.weighted_size - u64::from(node.weight) + u64::from(weight);
        node.weight = weight;
        self.access(i);
        // The eviction that follows (a heavier weight) is not the newest entry's own.
        self.newest = NIL;
    }

    pub(crate) fn remove(&mut self, i: u32) {
        let b = self.nodes[i as usize].bucket;
        self.buckets[b as usize].entries.unlink(&mut self.nodes, i);
        self.drop_bucket_if_empty(b);
        self.weighted_size -= u64::from(self.nodes[i as usize].weight);
        self.nodes[i as usize] = EMPTY;
        if self.newest == i {
            self.newest = NIL;
        }
    }

    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        while self.weighted_size > self.maximum {
            let Some(victim) = self.victim() else {
                break;
            };
            self.remove(victim);
            evicted.push(victim);
        }
        self.newest = NIL;
    }

    /// The least frequently, least recently used entry other than the newest; the newest only
    /// when it is alone.
    fn victim(&self) -> Option<u32> {
        let mut candidates = self
            .order
            .iter(&self.buckets)
            .flat_map(|b| self.buckets[b as usize].entries.iter(&self.nodes))
            .take(2);
        let first = candidates.next()?;
        if first != self.newest {
            return Some(first);
        }
        Some(candidates.next().unwrap_or(first))
    }

    /// Indices from the next to be evicted to the last.
    pub(crate) fn coldest(&self) -> Vec<u32> {
        self.order
            .iter(&self.buckets)
            .flat_map(|b| self.buckets[b as usize].entries.iter(&self.nodes))
            .collect()
    }

    /// The use count of an entry.
    pub(crate) fn frequency(&self, i: u32) -> u64 {
        self.buckets[self.nodes[i as usize].bucket as usize].frequency
    }

    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.buckets.clear();
        self.free_buckets.clear();
        self.order.clear();
        self.weighted_size = 0;
        self.newest = NIL;
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].weight
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }

    pub(crate) fn validate(&self) -> Vec<u32> {
        let buckets = self.order.validate(&self.buckets);
        let mut members = Vec::new();
        let mut last = 0;
        let mut weight = 0;
        for b in buckets {
            let bucket = &self.buckets[b as usize];
            assert!(bucket.frequency > last, "bucket frequencies not ascending");
            last = bucket.frequency;
            let entries = bucket.entries.validate(&self.nodes);
            assert!(!entries.is_empty(), "empty bucket kept");
            for &i in &entries {
                assert_eq!(self.nodes[i as usize].bucket, b, "node {i} in wrong bucket");
                weight += u64::from(self.nodes[i as usize].weight);
            }
            members.extend(entries);
        }
        assert_eq!(weight, self.weighted_size, "weighted size");
        let tagged = self.nodes.iter().filter(|n| n.bucket != NIL).count();
        assert_eq!(tagged, members.len(), "tagged nodes outside every bucket");
        members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evict_lowest_frequency_then_least_recent() {
        let mut p = Lfu::new(3);
        let mut evicted = Vec::new();
        for i in 0..3 {
            p.insert(i, 1);
        }
        p.access(0);
        p.access(0);
        p.access(2);
        // Frequencies: 0 -> 3, 1 -> 1, 2 -> 2.
        p.insert(3, 1);
        p.evict(&mut evicted);
        assert_eq!(evicted, vec![1]);
        // 3 has frequency 1 but is the newest; next time it is the coldest.
        p.insert(4, 1);
        p.evict(&mut evicted);
        assert_eq!(evicted, vec![1, 3]);
        assert_eq!(p.frequency(0), 3);
        p.validate();
    }

    #[test]
    fn access_middle_bucket_creates_bucket_in_order() {
        let mut p = Lfu::new(10);
        for i in 0..3 {
            p.insert(i, 1);
        }
        for _ in 0..3 {
            p.access(2);
        }
        p.access(1); // bucket 2 must sit between 1 and 4
        assert_eq!(p.coldest(), vec![0, 1, 2]);
        assert_eq!(p.frequency(1), 2);
        p.validate();
    }
}
