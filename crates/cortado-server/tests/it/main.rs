//! The server's integration tests: one binary, a module per subject.

mod command_table;
mod commands;
mod common;
mod config;
mod differential;
mod info;
mod process;
mod protocol;
mod security;
mod smoke;
