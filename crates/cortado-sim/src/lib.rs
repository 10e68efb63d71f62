//! Replays cache traces through Cortado's eviction policies and through reference policies, and
//! reports hit ratios.
//!
//! Three narrow parts: [`trace`] readers turn a file into a lazy stream of keys, [`policy`]
//! replays keys one request at a time, and the reports ([`report`], [`plot`]) print and draw
//! the results. [`replay`] connects them (sizes, cells, the parallel run), [`verify`] checks the
//! policies against the published reference table, and [`gen`] makes synthetic traces. The
//! `cortado-sim` binary is a thin command line over these modules.
//!
//! # Design
//!
//! Like the Caffeine simulator: a trace reader, a policy with one method (`record(key) -> hit`)
//! and reporters, each unaware of the others. The library's own policies run through the
//! library's real cache ([`policy::library`]), so what is measured is what users get.
//!
//! # References
//!
//! 1. B. Manes: the Caffeine simulator (`simulator/` of ben-manes/caffeine).
//! 2. J. Yang et al.: libCacheSim, which produced the reference hit ratios.

pub mod gen;
pub mod plot;
pub mod policy;
pub mod replay;
pub mod report;
pub mod trace;
pub mod verify;
