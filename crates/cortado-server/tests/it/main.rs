//! The server's integration tests: one binary, a module per subject.

mod atomicity;
mod common;
mod diff_generated;
mod diff_keyspace;
mod diff_strings;
mod differential;
mod expiry_clock;
mod scan;
mod smoke;
