//! The server's integration tests: one binary, a module per subject.

mod atomicity;
mod command_table;
mod commands;
mod common;
mod config;
mod diff_generated;
mod diff_hashes;
mod diff_keyspace;
mod diff_scripting;
mod diff_sets;
mod diff_strings;
mod diff_transactions;
mod differential;
mod expiry_clock;
mod info;
mod maxmemory;
mod memory_discipline;
mod notify;
mod process;
mod protocol;
mod pubsub;
mod scan;
mod scripting;
mod security;
mod smoke;
mod transactions;
