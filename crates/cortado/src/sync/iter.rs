//! The concurrent caches' iterator: a snapshot of the live entries, one shard at a time.

use std::hash::{BuildHasher, Hash};

use hashbrown::DefaultHashBuilder;

use super::{read, Cache, Holding, Inner, Slot};

/// An iterator over a snapshot of the live entries of a [`Cache`] (or a
/// [`future::Cache`](crate::future::Cache)), taken one shard at a time: see [`Cache::iter`].
#[must_use = "iterators are lazy and do nothing unless consumed"]
pub struct Iter<'a, K, V, S = DefaultHashBuilder> {
    /// The cache: its clock, read as each shard is reached, and every shard, for the debug
    /// builds' check of the clones (see [Callbacks](self#callbacks)).
    pub(super) inner: &'a Inner<K, V, S>,
    pub(super) slots: std::slice::Iter<'a, Slot<K, V, S>>,
    /// The current shard's entries, cloned.
    pub(super) shard: std::vec::IntoIter<(K, V)>,
}

impl<K, V, S> Iterator for Iter<'_, K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher,
{
    type Item = (K, V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.shard.next() {
                return Some(entry);
            }
            let slot = self.slots.next()?;
            // Read per shard: an entry that expired since `iter` was called is not yielded.
            let now = self.inner.now();
            let core = read(&slot.core);
            // The clones run under the shared lock: checked as the callbacks are.
            let holding = Holding::enter(&self.inner.slots);
            let entries = core.iter(now).map(|(k, v)| (k.clone(), v.clone()));
            self.shard = entries.collect::<Vec<_>>().into_iter();
            drop(holding);
        }
    }

    /// At least the current shard's rest; exact once the last shard is reached.
    fn size_hint(&self) -> (usize, Option<usize>) {
        let held = self.shard.len();
        (held, (self.slots.len() == 0).then_some(held))
    }
}

impl<K, V, S> std::iter::FusedIterator for Iter<'_, K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher,
{
}

impl<K, V, S> std::fmt::Debug for Iter<'_, K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

impl<'a, K, V, S> IntoIterator for &'a Cache<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher,
{
    type Item = (K, V);
    type IntoIter = Iter<'a, K, V, S>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
