//! Cortado: an embeddable cache with W-TinyLFU eviction, and the structures it is built from.
//!
//! The standalone structures are public so they can be used on their own: the admission
//! [`sketch`] (a 4-bit Count-Min sketch with aging), a general [`count_min`] sketch with top-k,
//! a [`bloom`] filter, the hierarchical [`timer_wheel`], and Storm's [`rotating`] map.

#![warn(missing_docs)]

pub mod bloom;
pub mod builder;
pub mod count_min;
pub mod expiry;
pub mod future;
mod loader;
#[cfg(test)]
mod model_check;
pub mod notification;
pub mod policy;
mod random;
mod read_buffer;
pub mod rotating;
mod scheduler;
mod shard;
mod shim;
pub mod sketch;
pub mod stats;
pub mod sync;
pub mod time;
pub mod timer_wheel;
pub mod unsync;

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
