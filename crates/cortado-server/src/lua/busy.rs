//! The running script as other connections see it: since when it runs, whether it wrote,
//! whether it was asked to stop; and the wait of a command that arrives meanwhile.
//!
//! A command another client sends while a script runs waits until the script ends or has run
//! for `busy-reply-threshold` milliseconds; past that, all but the few commands Redis allows
//! (`SCRIPT KILL`, `FUNCTION KILL`, `SHUTDOWN NOSAVE`, ...) get Redis 7.0's `-BUSY` reply.
//!
//! # Design
//!
//! - **One word says whether a script runs** (its start, in nanoseconds since `epoch`, plus
//!   one; 0 when none runs), so the single-command path pays one relaxed load for all this.
//! - **The wait** is on a condition variable the script's end signals, with the threshold's
//!   deadline as timeout; a tokio worker thread that waits hands its other tasks over first
//!   ([`tokio::task::block_in_place`]), so `SCRIPT KILL` on another connection is still read.
//! - **Stopping** is the script's own: the Lua hook ([`crate::lua`]) looks at the `KILL` flag
//!   every [`HOOK_INSTRUCTIONS`](super::HOOK_INSTRUCTIONS) instructions and raises Redis's
//!   error. `SCRIPT KILL` sets it only for a script that wrote nothing (its writes stay, as in
//!   Redis); `SHUTDOWN NOSAVE` sets it for any script, as the server stops.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::keyspace::off_the_runtime;
use crate::protocol::ErrorReply;

/// The script called a write command.
const WROTE: u8 = 1;
/// The script is asked to stop.
const KILL: u8 = 2;
/// The script is a function (`FCALL`), not an `EVAL` script.
const FUNCTION: u8 = 4;
/// The hook has been called during this run (the runtime was woken).
const HOOKED: u8 = 8;

/// [`Busy::since`] of a script whose start nobody has timed yet.
const UNSTAMPED: u64 = 1;

/// The refusal of a command while an `EVAL` script is busy.
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The refusal of a command while a function is busy.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// The error a stopped script raises.
pub const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// The running script's state. See the [module docs](self).
#[derive(Debug)]
pub struct Busy {
    epoch: Instant,
    /// 0: no script runs; [`UNSTAMPED`]: one runs and nobody looked at the clock yet;
    /// otherwise its start as the first to look saw it, in nanoseconds since `epoch`.
    since: AtomicU64,
    /// Commands waiting for the script's end: only then does the end take the mutex.
    waiters: AtomicUsize,
    flags: AtomicU8,
    /// `busy-reply-threshold`, in milliseconds.
    threshold_ms: AtomicU64,
    ended: Mutex<()>,
    ended_signal: Condvar,
    /// The running function's name and command (`FUNCTION STATS`); `None` for a script.
    function: Mutex<Option<(String, Vec<Vec<u8>>)>>,
    /// When the library being loaded started to run, as `since`; 0: none loads.
    loading_since: AtomicU64,
}

/// How long a library's code may run at `FUNCTION LOAD` (Redis 7.0's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT_NANOS: u64 = 500_000_000;

impl Default for Busy {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            since: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            flags: AtomicU8::new(0),
            threshold_ms: AtomicU64::new(5000),
            ended: Mutex::new(()),
            ended_signal: Condvar::new(),
            function: Mutex::new(None),
            loading_since: AtomicU64::new(0),
        }
    }
}

impl Busy {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX - UNSTAMPED)
            .saturating_add(UNSTAMPED + 1)
    }

    /// The running script's start (0 if none runs), timed now if nobody timed it yet.
    fn stamp(&self) -> u64 {
        match self.since.load(Ordering::SeqCst) {
            UNSTAMPED => match self.since.compare_exchange(
                UNSTAMPED,
                self.now(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => self.since.load(Ordering::SeqCst),
                Err(current) => current,
            },
            since => since,
        }
    }

    /// Sets `busy-reply-threshold` (milliseconds).
    pub fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    fn threshold(&self) -> u64 {
        self.threshold_ms
            .load(Ordering::Relaxed)
            .saturating_mul(1_000_000)
    }

    /// A script (a function if `function`) starts now. Its start is timed by the first to
    /// look (the hook after [`HOOK_INSTRUCTIONS`](super::HOOK_INSTRUCTIONS) instructions, or
    /// a command that arrives): a script that ends before either never reads the clock.
    pub fn start(&self, function: bool) {
        self.flags
            .store(if function { FUNCTION } else { 0 }, Ordering::Relaxed);
        self.since.store(UNSTAMPED, Ordering::SeqCst);
    }

    /// The script ended: waiting commands go on.
    pub fn end(&self) {
        self.since.store(0, Ordering::SeqCst);
        // A waiter counted itself before it looked at `since` (both sequentially
        // consistent): one not counted yet will see the 0.
        if self.waiters.load(Ordering::SeqCst) != 0 {
            let _guard = self.ended.lock().unwrap_or_else(|p| p.into_inner());
            self.ended_signal.notify_all();
        }
    }

    /// Whether a script runs (one relaxed load: the single-command path asks).
    #[inline(always)]
    pub fn is_running(&self) -> bool {
        self.since.load(Ordering::Relaxed) != 0
    }

    /// The running script called a write command.
    pub fn mark_write(&self) {
        self.flags.fetch_or(WROTE, Ordering::Relaxed);
    }

    /// Whether the running script was asked to stop (the hook asks).
    pub fn kill_requested(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & KILL != 0
    }

    /// The hook's look, every [`HOOK_INSTRUCTIONS`](super::HOOK_INSTRUCTIONS) instructions:
    /// at the first of a run, wakes the runtime (see `wake_runtime`); whether the script
    /// was asked to stop.
    pub fn hook(&self) -> bool {
        let flags = self.flags.fetch_or(HOOKED, Ordering::Relaxed);
        if flags & HOOKED == 0 {
            self.stamp();
            wake_runtime();
        }
        flags & KILL != 0
    }

    /// The refusal of a command while the running script is busy, by its kind.
    pub fn refusal(&self) -> ErrorReply {
        if self.flags.load(Ordering::Relaxed) & FUNCTION != 0 {
            ErrorReply::new(BUSY_FUNCTION)
        } else {
            ErrorReply::new(BUSY_EVAL)
        }
    }

    /// Whether a script runs and has passed the threshold.
    pub fn timed_out(&self) -> bool {
        let since = self.stamp();
        since != 0 && self.now().saturating_sub(since) >= self.threshold()
    }

    /// Waits while a script runs under the threshold; whether one runs past it (the caller
    /// then refuses all but the commands allowed while busy).
    #[cold]
    pub fn wait(&self) -> bool {
        let wait = || loop {
            let since = self.stamp();
            if since == 0 {
                return false;
            }
            let ran = self.now().saturating_sub(since);
            let threshold = self.threshold();
            if ran >= threshold {
                return true;
            }
            let guard = self.ended.lock().unwrap_or_else(|p| p.into_inner());
            if self.since.load(Ordering::SeqCst) != since {
                continue;
            }
            let timeout = Duration::from_nanos(threshold - ran);
            drop(
                self.ended_signal
                    .wait_timeout(guard, timeout)
                    .unwrap_or_else(|p| p.into_inner()),
            );
        };
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let busy = off_the_runtime(wait);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        busy
    }

    /// `SCRIPT KILL` (`eval`) or `FUNCTION KILL`: asks the running script to stop, or Redis
    /// 7.0's refusal (none runs, it wrote, or it is of the other kind).
    pub fn kill(&self, eval: bool) -> Result<(), ErrorReply> {
        if !self.is_running() {
            return Err(ErrorReply::new(
                "NOTBUSY No scripts in execution right now.",
            ));
        }
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & WROTE != 0 {
            return Err(ErrorReply::new(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
            ));
        }
        match (eval, flags & FUNCTION != 0) {
            (true, true) => Err(ErrorReply::new(BUSY_FUNCTION)),
            (false, false) => Err(ErrorReply::new(BUSY_EVAL)),
            _ => {
                self.flags.fetch_or(KILL, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// A library's code starts to run (`FUNCTION LOAD`), or ended (`loading` false).
    pub fn set_loading(&self, loading: bool) {
        let since = if loading { self.now() } else { 0 };
        self.loading_since.store(since, Ordering::Relaxed);
    }

    /// Whether the library being loaded has run past Redis's 500 ms (the hook asks).
    pub fn load_timed_out(&self) -> bool {
        let since = self.loading_since.load(Ordering::Relaxed);
        since != 0 && self.now().saturating_sub(since) > LOAD_TIMEOUT_NANOS
    }

    /// `FCALL` is about to run the function `name` for the command `args`.
    pub fn set_running_function(&self, name: &str, args: crate::cmd::Args<'_>) {
        let command = args.iter().map(<[u8]>::to_vec).collect();
        *self.function.lock().unwrap_or_else(|p| p.into_inner()) = Some((name.to_owned(), command));
    }

    /// The function ended.
    pub fn clear_running_function(&self) {
        *self.function.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The running function's name, command and milliseconds run, if a function runs.
    pub fn running_function(&self) -> Option<(String, Vec<Vec<u8>>, u64)> {
        let function = self.function.lock().unwrap_or_else(|p| p.into_inner());
        let (name, command) = function.clone()?;
        let since = self.stamp();
        let millis = match since {
            0 => 0,
            since => self.now().saturating_sub(since) / 1_000_000,
        };
        Some((name, command, millis))
    }

    /// Asks the running script to stop whatever it did (`SHUTDOWN NOSAVE`).
    pub fn abort(&self) {
        if self.is_running() {
            self.flags.fetch_or(KILL, Ordering::Relaxed);
        }
    }
}

/// Wakes a parked worker of the current tokio runtime (if multi-threaded) by spawning an
/// empty task from another thread. A worker that runs a long script keeps its thread; the
/// runtime's I/O driver is polled only by a worker that parks, and the other workers may all
/// be parked on their condition variable, not on the driver, so no connection is served until
/// one wakes: the woken worker runs the empty task and parks on the driver.
#[cold]
fn wake_runtime() {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("script-wake".into())
        .spawn(move || drop(handle.spawn(async {})));
    if let Err(e) = spawned {
        tracing::warn!("cannot wake the runtime during a long script: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_without_script_is_notbusy() {
        let busy = Busy::default();
        assert!(busy.kill(true).unwrap_err().0.starts_with("NOTBUSY"));
    }

    #[test]
    fn kill_after_write_is_unkillable() {
        let busy = Busy::default();
        busy.start(false);
        busy.mark_write();
        assert!(busy.kill(true).unwrap_err().0.starts_with("UNKILLABLE"));
        assert!(!busy.kill_requested());
        busy.abort();
        assert!(busy.kill_requested());
    }

    #[test]
    fn kill_of_other_kind_is_busy_and_own_kind_stops() {
        let busy = Busy::default();
        busy.start(true);
        assert_eq!(busy.kill(true).unwrap_err().0, BUSY_FUNCTION);
        assert!(!busy.kill_requested());
        busy.kill(false).unwrap();
        assert!(busy.kill_requested());
        busy.start(false);
        assert_eq!(busy.kill(false).unwrap_err().0, BUSY_EVAL);
    }

    #[test]
    fn wait_returns_busy_past_threshold_and_free_after_end() {
        let busy = std::sync::Arc::new(Busy::default());
        busy.set_threshold_ms(20);
        assert!(!busy.wait());
        busy.start(false);
        assert!(busy.wait());
        assert!(busy.timed_out());
        busy.set_threshold_ms(60_000);
        let ender = {
            let busy = busy.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                busy.end();
            })
        };
        assert!(!busy.wait());
        ender.join().unwrap();
        assert!(!busy.is_running());
    }
}
