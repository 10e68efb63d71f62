//! Miss coalescing for loaders: on a miss, one caller per key runs the loader and every concurrent
//! caller for that key waits for its outcome (stampede protection).
//!
//! The loader's outcome (a value, an error, "nothing") is handed to every waiter; if the loader
//! panics or its future is dropped, waiters are released and retry, so a key is never left locked.
//!
//! # Design
//!
//! Each shard keeps a map from key to the [`Waiter`] of the load in flight. A waiter is a mutex
//! over the outcome plus both a condition variable (for threads) and a list of wakers (for
//! futures), so the blocking and the async front ends share it. The loader holds a
//! [`LoadGuard`]; completing it publishes the outcome and removes the map entry, and dropping it
//! uncompleted (a panic, a cancelled future) publishes [`Outcome::Abandoned`].

use std::any::Any;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use hashbrown::HashMap;

/// How a load ended.
pub(crate) enum Outcome<V> {
    /// The loader produced this value (now cached).
    Value(V),
    /// The loader produced nothing (`optionally_get_with`).
    Absent,
    /// The loader failed with this error (an `Arc<E>` behind `Any`).
    Failed(Arc<dyn Any + Send + Sync>),
    /// The loader panicked or was cancelled: waiters should retry.
    Abandoned,
}

impl<V: Clone> Clone for Outcome<V> {
    fn clone(&self) -> Self {
        match self {
            Self::Value(v) => Self::Value(v.clone()),
            Self::Absent => Self::Absent,
            Self::Failed(e) => Self::Failed(e.clone()),
            Self::Abandoned => Self::Abandoned,
        }
    }
}

struct State<V> {
    outcome: Option<Outcome<V>>,
    wakers: Vec<Waker>,
}

/// The meeting point of one load and its waiters.
pub(crate) struct Waiter<V> {
    state: Mutex<State<V>>,
    ready: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<V: Clone> Waiter<V> {
    fn new() -> Self {
        Self {
            state: Mutex::new(State {
                outcome: None,
                wakers: Vec::new(),
            }),
            ready: Condvar::new(),
        }
    }

    fn complete(&self, outcome: Outcome<V>) {
        let wakers = {
            let mut state = lock(&self.state);
            state.outcome = Some(outcome);
            std::mem::take(&mut state.wakers)
        };
        self.ready.notify_all();
        for waker in wakers {
            waker.wake();
        }
    }

    /// Blocks until the load ends.
    pub(crate) fn wait(&self) -> Outcome<V> {
        let mut state = lock(&self.state);
        loop {
            if let Some(outcome) = &state.outcome {
                return outcome.clone();
            }
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The outcome if the load ended, else registers the task to be woken.
    pub(crate) fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<Outcome<V>> {
        let mut state = lock(&self.state);
        if let Some(outcome) = &state.outcome {
            return Poll::Ready(outcome.clone());
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What a caller that missed should do.
pub(crate) enum Role<'a, K: Hash + Eq + Clone, V: Clone> {
    /// Run the loader, then complete the guard.
    Load(LoadGuard<'a, K, V>),
    /// Wait for another caller's load.
    Wait(Arc<Waiter<V>>),
}

/// The loads in flight of one shard.
pub(crate) struct Loading<K, V> {
    in_flight: Mutex<HashMap<K, Arc<Waiter<V>>>>,
}

impl<K, V> Default for Loading<K, V> {
    fn default() -> Self {
        Self {
            in_flight: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Loading<K, V> {
    /// Joins the load of `key` in flight, or starts one.
    pub(crate) fn join(&self, key: &K) -> Role<'_, K, V> {
        let mut in_flight = lock(&self.in_flight);
        if let Some(waiter) = in_flight.get(key) {
            return Role::Wait(waiter.clone());
        }
        let waiter = Arc::new(Waiter::new());
        in_flight.insert(key.clone(), waiter.clone());
        Role::Load(LoadGuard {
            loading: self,
            key: key.clone(),
            waiter,
            done: false,
        })
    }

    /// Loads in flight (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.in_flight).len()
    }
}

/// Held by the caller that runs the loader; see the [module docs](self).
pub(crate) struct LoadGuard<'a, K: Hash + Eq + Clone, V: Clone> {
    loading: &'a Loading<K, V>,
    key: K,
    waiter: Arc<Waiter<V>>,
    done: bool,
}

impl<K: Hash + Eq + Clone, V: Clone> LoadGuard<'_, K, V> {
    /// Publishes the outcome to every waiter and ends the load.
    pub(crate) fn complete(mut self, outcome: Outcome<V>) {
        self.finish(outcome);
    }

    fn finish(&mut self, outcome: Outcome<V>) {
        self.done = true;
        lock(&self.loading.in_flight).remove(&self.key);
        self.waiter.complete(outcome);
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Drop for LoadGuard<'_, K, V> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Outcome::Abandoned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_second_caller_waits_for_first() {
        let loading = Loading::<u32, u32>::default();
        let Role::Load(guard) = loading.join(&1) else {
            panic!("first caller must load");
        };
        let Role::Wait(waiter) = loading.join(&1) else {
            panic!("second caller must wait");
        };
        guard.complete(Outcome::Value(7));
        assert!(matches!(waiter.wait(), Outcome::Value(7)));
        assert_eq!(loading.len(), 0);
        assert!(matches!(loading.join(&1), Role::Load(_)));
    }

    #[test]
    fn guard_dropped_uncompleted_abandons() {
        let loading = Loading::<u32, u32>::default();
        let Role::Load(guard) = loading.join(&1) else {
            panic!("first caller must load");
        };
        let Role::Wait(waiter) = loading.join(&1) else {
            panic!("second caller must wait");
        };
        drop(guard);
        assert!(matches!(waiter.wait(), Outcome::Abandoned));
        assert_eq!(loading.len(), 0);
    }
}
