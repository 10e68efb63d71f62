//! The server's integration tests: one binary, a module per subject.

mod common;
mod diff_generated;
mod diff_keyspace;
mod diff_strings;
mod differential;
mod smoke;
