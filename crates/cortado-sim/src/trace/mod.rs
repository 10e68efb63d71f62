//! Trace readers: each format is a lazy iterator of `u64` keys.
