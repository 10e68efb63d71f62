//! The server's integration tests: one binary, a module per subject.

mod common;
mod differential;
mod smoke;
