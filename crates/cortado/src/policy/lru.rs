//! Least recently used: evict the entry whose last use is oldest.
//!
//! One deque in use order; a hit moves the entry to the back, eviction takes from the front until
//! the weighted size fits.

use super::deque::{impl_linked, Deque, NIL};

#[derive(Debug, Clone, Copy)]
struct Node {
    prev: u32,
    next: u32,
    weight: u32,
    present: bool,
}
impl_linked!(Node);

const EMPTY: Node = Node {
    prev: NIL,
    next: NIL,
    weight: 0,
    present: false,
};

/// The LRU policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lru {
    nodes: Vec<Node>,
    order: Deque,
    maximum: u64,
    weighted_size: u64,
}

impl Lru {
    pub(crate) fn new(maximum: u64) -> Self {
        Self {
            maximum,
            ..Self::default()
        }
    }

    pub(crate) fn maximum(&self) -> u64 {
        self.maximum
    }

    pub(crate) fn set_maximum(&mut self, maximum: u64) {
        self.maximum = maximum;
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

    pub(crate) fn insert(&mut self, i: u32, weight: u32) {
        if i as usize >= self.nodes.len() {
            let len = (i as usize + 1).max(self.nodes.len() * 2).max(16);
            self.nodes.resize(len, EMPTY);
        }
        self.nodes[i as usize] = Node {
            weight,
            present: true,
            ..EMPTY
        };
        self.order.push_back(&mut self.nodes, i);
        self.weighted_size += u64::from(weight);
    }

    #[inline]
    pub(crate) fn access(&mut self, i: u32) {
        self.order.move_to_back(&mut self.nodes, i);
    }

    pub(crate) fn update(&mut self, i: u32, weight: u32) {
        let node = &mut self.nodes[i as usize];
        self.weighted_size = self.weighted_size - u64::from(node.weight) + u64::from(weight);
        node.weight = weight;
        self.access(i);
    }

    pub(crate) fn remove(&mut self, i: u32) {
        self.order.unlink(&mut self.nodes, i);
        self.weighted_size -= u64::from(self.nodes[i as usize].weight);
        self.nodes[i as usize] = EMPTY;
    }

    pub(crate) fn evict(&mut self, evicted: &mut Vec<u32>) {
        while self.weighted_size > self.maximum {
            let Some(i) = self.order.front() else {
                break;
            };
            self.remove(i);
            evicted.push(i);
        }
    }

    /// Indices from the next to be evicted to the last.
    pub(crate) fn coldest(&self) -> Vec<u32> {
        self.order.iter(&self.nodes).collect()
    }

    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.order.clear();
        self.weighted_size = 0;
    }

    pub(crate) fn weight_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].weight
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
    }

    pub(crate) fn validate(&self) -> Vec<u32> {
        let members = self.order.validate(&self.nodes);
        let weight: u64 = members
            .iter()
            .map(|&i| {
                assert!(self.nodes[i as usize].present);
                u64::from(self.nodes[i as usize].weight)
            })
            .sum();
        assert_eq!(weight, self.weighted_size, "weighted size");
        assert_eq!(
            self.nodes.iter().filter(|n| n.present).count(),
            members.len()
        );
        members
    }
}
