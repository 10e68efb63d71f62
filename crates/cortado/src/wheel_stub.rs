//! Temporary stand-in for the timer wheel while it is written (same API, BTreeMap inside).
#![allow(dead_code, missing_docs)]
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Default, Clone)]
pub struct TimerWheel {
    by_id: HashMap<u32, u64>,
    order: BTreeSet<(u64, u32)>,
    now: u64,
}

impl TimerWheel {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn schedule(&mut self, id: u32, deadline: u64) {
        self.cancel(id);
        self.by_id.insert(id, deadline);
        self.order.insert((deadline, id));
    }
    pub fn cancel(&mut self, id: u32) -> bool {
        match self.by_id.remove(&id) {
            Some(d) => self.order.remove(&(d, id)),
            None => false,
        }
    }
    pub fn deadline(&self, id: u32) -> Option<u64> {
        self.by_id.get(&id).copied()
    }
    pub fn advance(&mut self, now: u64, expired: &mut Vec<u32>) {
        self.now = now;
        while let Some(&(d, id)) = self.order.first() {
            if d > now {
                break;
            }
            self.order.pop_first();
            self.by_id.remove(&id);
            expired.push(id);
        }
    }
    pub fn next_expiration(&self) -> Option<u64> {
        self.order.first().map(|&(d, _)| d)
    }
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.order.clear();
    }
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.by_id.iter().map(|(&i, &d)| (i, d))
    }
    pub fn memory_bytes(&self) -> usize {
        self.by_id.len() * 40
    }
    pub fn validate(&self) {
        assert_eq!(self.by_id.len(), self.order.len());
    }
}
