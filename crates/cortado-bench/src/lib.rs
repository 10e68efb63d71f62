//! Workloads and baselines shared by Cortado's criterion benchmarks (`benches/`), and the
//! [`peers`] comparison behind the `peers` binary; see the crate's `README.md` for how to run
//! them and the numbers measured.
//!
//! Every workload is generated up front from a fixed seed, so two runs (and Cortado and its peer
//! within one run) see exactly the same keys and deadlines, and generation is never timed.
//!
//! # Design
//!
//! - **Compare in the same run.** The machines are shared and noisy, so each benchmark group puts
//!   Cortado beside its peer (the `lru` crate, or the [`deadline_index`] baseline) on the same
//!   stream, and the README quotes ratios first and absolute times second.
//! - **Per-operation timing.** Micro-benchmarks walk a pre-generated stream of
//!   [`STREAM_LEN`](workload::STREAM_LEN) keys with a wrapping index, one operation per
//!   criterion iteration, so the reported time is the time of one operation. The stream is a
//!   power of two long so the wrap is a mask, and long enough (8 MiB of keys) that its tail is
//!   not cache-resident by accident.
//! - **Bulk timing.** The timer benchmarks work on a million timers per iteration; their setup
//!   (building the loaded structure) runs outside the timed region, see `benches/timer_wheel.rs`.
//! - **Whole caches against whole caches.** The `peers` binary ([`peers`]) runs throughput,
//!   hit-ratio and memory measurements of `cortado::sync::Cache` and four peer crates in one
//!   run. Its heap counts need a global allocator ([`counting_alloc`]), the one module of the
//!   crate allowed `unsafe` (the rest denies it).
//!
//! # References
//!
//! 1. criterion.rs user guide: `iter_batched`, flat sampling for long iterations.
//! 2. L. Breslau et al.: "Web Caching and Zipf-like Distributions: Evidence and Implications",
//!    INFOCOM 1999 (why Zipf around 0.99).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod counting_alloc;
pub mod deadline_index;
pub mod peers;
pub mod workload;
