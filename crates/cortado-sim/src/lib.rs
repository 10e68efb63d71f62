//! Replays cache traces through Cortado's eviction policies and through reference policies, and
//! reports hit ratios.
//!
//! Three narrow parts: [`trace`] readers turn a file into a lazy stream of keys, [`policy`]
//! replays keys one request at a time, and the reports print and plot the results.

pub mod gen;
pub mod policy;
pub mod trace;
