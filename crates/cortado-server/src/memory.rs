//! The process's memory and CPU as `INFO` reports them.
//!
//! `used_memory` is what the allocator handed out and has not taken back: the binary installs
//! [`CountingAllocator`](crate::sys::CountingAllocator) as its global allocator, which counts every allocation's size. Where
//! it is not installed (a test binary that did not), `used_memory` falls back to the resident
//! set size.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys::{ALLOCATED, PEAK};

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Marks the counting allocator as the process's (called by a binary that installed it).
pub fn counting_installed() {
    INSTALLED.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not freed (`used_memory`).
pub fn used_memory() -> u64 {
    if INSTALLED.load(Ordering::Relaxed) {
        ALLOCATED.load(Ordering::Relaxed) as u64
    } else {
        resident_bytes()
    }
}

/// The most bytes allocated at once since the start.
pub fn peak_memory() -> u64 {
    if INSTALLED.load(Ordering::Relaxed) {
        PEAK.load(Ordering::Relaxed) as u64
    } else {
        resident_bytes()
    }
}

/// The allocator's name as `INFO` shows it (counted or not, it is the system's).
pub fn allocator_name() -> &'static str {
    "libc"
}

/// The process's resident set size in bytes (0 where unknown).
pub fn resident_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The machine's memory in bytes (0 where unknown).
pub fn total_system_memory() -> u64 {
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU seconds used by the process: (user, system).
pub fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line; 12 and 13 after the name.
    (ticks(11) / 100.0, ticks(12) / 100.0)
}
