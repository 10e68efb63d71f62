//! Doubly linked lists threaded through a policy's node array by `u32` index.
//!
//! A policy keeps one `Vec` of nodes indexed by the shard's slab index; each node carries `prev` and
//! `next` links and belongs to at most one [`Deque`]. Several deques share the same node array, so
//! moving an entry between queues is two link updates and no allocation.

/// The "no node" index.
pub(crate) const NIL: u32 = u32::MAX;

/// A node that can sit in a [`Deque`].
pub(crate) trait Linked {
    fn prev(&self) -> u32;
    fn next(&self) -> u32;
    fn set_prev(&mut self, prev: u32);
    fn set_next(&mut self, next: u32);
}

/// Implements [`Linked`] for a struct with `prev: u32` and `next: u32` fields.
macro_rules! impl_linked {
    ($node:ty) => {
        impl $crate::policy::deque::Linked for $node {
            #[inline]
            fn prev(&self) -> u32 {
                self.prev
            }
            #[inline]
            fn next(&self) -> u32 {
                self.next
            }
            #[inline]
            fn set_prev(&mut self, prev: u32) {
                self.prev = prev;
            }
            #[inline]
            fn set_next(&mut self, next: u32) {
                self.next = next;
            }
        }
    };
}
pub(crate) use impl_linked;

/// Head, tail and length of one list; the links live in the nodes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deque {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for Deque {
    fn default() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl Deque {
    /// The least recently added or moved node.
    #[inline]
    pub(crate) fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub(crate) fn push_back<N: Linked>(&mut self, nodes: &mut [N], i: u32) {
        let node = &mut nodes[i as usize];
        node.set_prev(self.tail);
        node.set_next(NIL);
        if self.tail == NIL {
            self.head = i;
        } else {
            nodes[self.tail as usize].set_next(i);
        }
        self.tail = i;
        self.len += 1;
    }

    #[inline]
    pub(crate) fn push_front<N: Linked>(&mut self, nodes: &mut [N], i: u32) {
        let node = &mut nodes[i as usize];
        node.set_prev(NIL);
        node.set_next(self.head);
        if self.head == NIL {
            self.tail = i;
        } else {
            nodes[self.head as usize].set_prev(i);
        }
        self.head = i;
        self.len += 1;
    }

    /// Removes `i`, which must be in this deque.
    #[inline]
    pub(crate) fn unlink<N: Linked>(&mut self, nodes: &mut [N], i: u32) {
        let (prev, next) = (nodes[i as usize].prev(), nodes[i as usize].next());
        if prev == NIL {
            self.head = next;
        } else {
            nodes[prev as usize].set_next(next);
        }
        if next == NIL {
            self.tail = prev;
        } else {
            nodes[next as usize].set_prev(prev);
        }
        let node = &mut nodes[i as usize];
        node.set_prev(NIL);
        node.set_next(NIL);
        self.len -= 1;
    }

    /// Moves `i`, which must be in this deque, to the back.
    #[inline]
    pub(crate) fn move_to_back<N: Linked>(&mut self, nodes: &mut [N], i: u32) {
        if self.tail != i {
            self.unlink(nodes, i);
            self.push_back(nodes, i);
        }
    }

    /// Inserts `i` right after `after`, which must be in this deque.
    pub(crate) fn insert_after<N: Linked>(&mut self, nodes: &mut [N], after: u32, i: u32) {
        let next = nodes[after as usize].next();
        if next == NIL {
            self.push_back(nodes, i);
            return;
        }
        nodes[i as usize].set_prev(after);
        nodes[i as usize].set_next(next);
        nodes[after as usize].set_next(i);
        nodes[next as usize].set_prev(i);
        self.len += 1;
    }

    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Iterates from front (oldest) to back.
    pub(crate) fn iter<'a, N: Linked>(&self, nodes: &'a [N]) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let i = at;
                at = nodes[i as usize].next();
                i
            })
        })
    }

    /// Iterates from back (newest) to front.
    pub(crate) fn iter_rev<'a, N: Linked>(&self, nodes: &'a [N]) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.tail;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let i = at;
                at = nodes[i as usize].prev();
                i
            })
        })
    }

    /// Panics unless the links form one consistent list of `len` nodes.
    pub(crate) fn validate<N: Linked>(&self, nodes: &[N]) -> Vec<u32> {
        let forward: Vec<u32> = self.iter(nodes).take(self.len() + 1).collect();
        assert_eq!(forward.len(), self.len(), "deque length mismatch");
        let mut backward: Vec<u32> = self.iter_rev(nodes).take(self.len() + 1).collect();
        backward.reverse();
        assert_eq!(forward, backward, "deque links disagree");
        forward
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct Node {
        prev: u32,
        next: u32,
    }
    impl_linked!(Node);

    fn nodes(n: usize) -> Vec<Node> {
        vec![
            Node {
                prev: NIL,
                next: NIL
            };
            n
        ]
    }

    #[test]
    fn deque_push_unlink_move_keeps_order() {
        let mut ns = nodes(5);
        let mut d = Deque::default();
        for i in 0..5 {
            d.push_back(&mut ns, i);
        }
        d.unlink(&mut ns, 2);
        d.move_to_back(&mut ns, 0);
        d.push_front(&mut ns, 2);
        assert_eq!(d.validate(&ns), vec![2, 1, 3, 4, 0]);
        assert_eq!((d.front(), d.iter_rev(&ns).next()), (Some(2), Some(0)));
    }

    #[test]
    fn deque_unlink_all_becomes_empty() {
        let mut ns = nodes(3);
        let mut d = Deque::default();
        for i in 0..3 {
            d.push_back(&mut ns, i);
        }
        for i in [1, 0, 2] {
            d.unlink(&mut ns, i);
        }
        assert_eq!(d.len(), 0);
        assert_eq!(d.front(), None);
        assert!(d.validate(&ns).is_empty());
    }
}
