//! The library's integration tests, one module per subject, built as one test binary that
//! compiles `common` and links the library once (as fifteen binaries, each did both again).
//! `sync_thread_exit` stays a binary of its own (`tests/sync_thread_exit.rs`), so that a
//! regression there, which aborts the process, aborts only it.
//!
//! Proptest keeps each module's regressions in `tests/proptest-regressions/<module>.txt`: it
//! looks beside the directory that holds this `main.rs`.

mod bulk;
mod common;

mod front_ends;
mod future_behaviour;
mod panic_safety;
mod policy_equivalence;
mod refresh;
mod sampled_model;
mod scheduler_tokio;
mod sync_behaviour;
mod sync_callback_reentry;
mod sync_concurrency;
mod sync_hit_ratio;
mod sync_mixed_configs;
mod sync_model;
mod unsync_behaviour;
mod unsync_model;
mod weighted_model;
mod weighted_shards;
