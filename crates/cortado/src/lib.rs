//! Cortado: an embeddable cache with W-TinyLFU eviction, and the structures it is built from.
//!
//! The standalone structures are public so they can be used on their own: the admission
//! [`sketch`] (a 4-bit Count-Min sketch with aging).

#![warn(missing_docs)]

mod random;
pub mod sketch;
