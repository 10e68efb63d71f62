//! `WATCH`: which clients watch which keys, and the flag a change to one of them raises on
//! each of its watchers, which makes the watcher's `EXEC` fail.
//!
//! A write tells [`Watches::touch`] the key it changed while it holds the key's shard, so a
//! transaction that holds every shard sees every change made before it took them. The
//! registry costs a write one relaxed load (the count of watched keys, 0 unless a client
//! watches something) and nothing more until a client watches.
//!
//! # Design
//!
//! - **Registry.** One map from key bytes to the `(database, watcher's flag)` pairs that watch
//!   it, under one mutex: only writes to a watched key, `WATCH`, `UNWATCH` and the end of a
//!   transaction take it, and only while some client watches.
//! - **Changes a write does not name.** Expiry and eviction remove keys without a command;
//!   rather than hear every removal, `EXEC` checks that each key live at `WATCH` is still live
//!   (every shard held, time frozen), which also catches a key that expired and is not yet
//!   removed, as Redis 7.0's `EXEC` does. `FLUSHDB`, `FLUSHALL` and `SWAPDB` touch the watched
//!   keys of their databases that exist before or after ([`Watches::touch_db`]), as Redis's
//!   `touchAllWatchedKeysInDb` does, so a watched key that never existed survives a flush.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One client's raised-on-change flag, shared with the registry.
pub type Dirty = Arc<AtomicBool>;

/// The watchers of one key: each one's database and flag.
type Watchers = Vec<(usize, Dirty)>;

/// Every watched key. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Watches {
    /// Watched `(client, key)` pairs: 0 lets a write skip the registry.
    count: AtomicUsize,
    keys: Mutex<HashMap<Vec<u8>, Watchers>>,
}

impl Watches {
    /// Tells the watchers of `key` in `db` that it changed. The caller holds the key's shard.
    #[inline]
    pub fn touch(&self, db: usize, key: &[u8]) {
        // Relaxed: watching and writing a key both hold its shard, whose mutex orders them.
        if self.count.load(Ordering::Relaxed) != 0 {
            self.touch_watched(db, key);
        }
    }

    #[cold]
    fn touch_watched(&self, db: usize, key: &[u8]) {
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(watchers) = keys.get(key) {
            for (_, dirty) in watchers.iter().filter(|(d, _)| *d == db) {
                dirty.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Tells the watchers of every key of `db` for which `exists` holds that it changed (a
    /// flush or a swap of `db`). The caller holds every shard.
    pub fn touch_db(&self, db: usize, mut exists: impl FnMut(&[u8]) -> bool) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        for (key, watchers) in keys.iter() {
            let mut watchers = watchers.iter().filter(|(d, _)| *d == db).peekable();
            if watchers.peek().is_some() && exists(key) {
                for (_, dirty) in watchers {
                    dirty.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// Registers `dirty`'s owner as a watcher of `key` in `db`. The caller holds the key's
    /// shard.
    pub fn watch(&self, db: usize, key: &[u8], dirty: &Dirty) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.entry(key.to_vec())
            .or_default()
            .push((db, dirty.clone()));
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Removes `dirty`'s owner from the watchers of each `(db, key)`.
    pub fn unwatch<'k>(&self, watched: impl IntoIterator<Item = (usize, &'k [u8])>, dirty: &Dirty) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        for (db, key) in watched {
            let Some(watchers) = keys.get_mut(key) else {
                continue;
            };
            let before = watchers.len();
            watchers.retain(|(d, flag)| !(*d == db && Arc::ptr_eq(flag, dirty)));
            self.count
                .fetch_sub(before - watchers.len(), Ordering::Relaxed);
            if watchers.is_empty() {
                keys.remove(key);
            }
        }
    }

    /// The number of watched `(client, key)` pairs.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_watched_key_raises_only_its_watchers() {
        let watches = Watches::default();
        let (a, b) = (Dirty::default(), Dirty::default());
        watches.watch(0, b"k", &a);
        watches.watch(1, b"k", &b);
        watches.touch(0, b"other");
        watches.touch(0, b"k");
        assert!(a.load(Ordering::Relaxed));
        assert!(!b.load(Ordering::Relaxed), "same key, another database");
    }

    #[test]
    fn unwatch_all_keys_count_returns_to_zero() {
        let watches = Watches::default();
        let a = Dirty::default();
        watches.watch(0, b"k", &a);
        watches.watch(0, b"j", &a);
        assert_eq!(watches.count(), 2);
        watches.unwatch([(0, &b"k"[..]), (0, &b"j"[..])], &a);
        assert_eq!(watches.count(), 0);
        watches.touch(0, b"k");
        assert!(!a.load(Ordering::Relaxed));
    }

    #[test]
    fn touch_db_missing_key_leaves_watcher_clean() {
        let watches = Watches::default();
        let (a, b) = (Dirty::default(), Dirty::default());
        watches.watch(0, b"there", &a);
        watches.watch(0, b"gone", &b);
        watches.touch_db(0, |key| key == b"there");
        assert!(a.load(Ordering::Relaxed));
        assert!(!b.load(Ordering::Relaxed));
    }
}
