//! Scripts alone: their atomicity under concurrent clients, the distributed lock pattern, and
//! the script cache (see `diff_scripting.rs` for the replies compared with Redis).

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Frame, RawClient, TestServer};

/// Redis's compare-and-delete: deletes the lock only if it still holds the caller's token.
const UNLOCK: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// A read-modify-write that is right only if the script runs as one step.
const READ_MODIFY_WRITE: &str =
    "local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) return v + 1";

/// Moves one unit from KEYS[1] to KEYS[2], across shards, in two writes.
const TRANSFER: &str = "redis.call('decr', KEYS[1]) redis.call('incr', KEYS[2]) return 1";

fn int(frame: Frame) -> i64 {
    match frame {
        Frame::Int(n) => n,
        Frame::Bulk(b) => String::from_utf8_lossy(&b).parse().expect("a number"),
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn scripting_read_modify_write_under_contention_loses_no_update() {
    let server = TestServer::start();
    let threads = 4;
    let rounds = 250;
    let sha = server
        .raw()
        .call(&["SCRIPT", "LOAD", READ_MODIFY_WRITE])
        .text();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let mut client = server.raw();
            let sha = sha.clone();
            thread::spawn(move || {
                for _ in 0..rounds {
                    client.call(&["EVALSHA", &sha, "1", "counter"]);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let total = int(server.raw().call(&["GET", "counter"]));
    assert_eq!(total, threads * rounds);
}

#[test]
fn scripting_transfers_across_keys_are_never_seen_half_done() {
    let server = TestServer::start();
    let mut setup = server.raw();
    setup.call(&["SET", "from", "100000"]);
    setup.call(&["SET", "to", "0"]);
    let sum = "return tonumber(redis.call('get', KEYS[1])) + tonumber(redis.call('get', KEYS[2]))";
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let mut client = server.raw();
            thread::spawn(move || {
                for _ in 0..300 {
                    assert_eq!(
                        client.call(&["EVAL", TRANSFER, "2", "from", "to"]),
                        Frame::Int(1)
                    );
                }
            })
        })
        .collect();
    let mut reader = server.raw();
    let mut reads = 0;
    while writers.iter().any(|w| !w.is_finished()) || reads < 10 {
        // A plain MULTI of two GETs would be atomic too; a script's reads must be as well.
        assert_eq!(
            reader.call(&["EVAL", sum, "2", "from", "to"]),
            Frame::Int(100000)
        );
        reads += 1;
    }
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(int(reader.call(&["GET", "to"])), 600);
}

/// The lock's state as the test clients know it: the token of the last client that got it,
/// when that client sent its `SET` (the lease ends no earlier than that plus the lifetime),
/// and when it sent its unlock, if it did.
#[derive(Default)]
struct LockRecord {
    token: String,
    sent_set: Option<Instant>,
    sent_unlock: Option<Instant>,
}

#[test]
fn scripting_lock_with_expiring_leases_has_one_holder_and_no_foreign_unlock() {
    let server = TestServer::start();
    let lifetime = Duration::from_millis(25);
    let clients = 6;
    let run_for = Duration::from_millis(1500);
    let sha = server.raw().call(&["SCRIPT", "LOAD", UNLOCK]).text();
    let record = Arc::new(Mutex::new(LockRecord::default()));
    let start = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|id| {
            let mut client: RawClient = server.raw();
            let (sha, record, start) = (sha.clone(), Arc::clone(&record), Arc::clone(&start));
            thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1);
                let (mut acquired, mut expired_mid_hold, mut refused_unlocks) = (0, 0, 0);
                start.wait();
                let began = Instant::now();
                let mut attempt = 0;
                while began.elapsed() < run_for {
                    attempt += 1;
                    let token = format!("{id}-{attempt}");
                    let sent_set = Instant::now();
                    let px = lifetime.as_millis().to_string();
                    let reply = client.call(&["SET", "lock", &token, "NX", "PX", &px]);
                    if reply == Frame::Null {
                        thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    assert_eq!(reply, Frame::Simple("OK".into()));
                    let got = Instant::now();
                    {
                        let mut r = record.lock().unwrap();
                        if let Some(previous_set) = r.sent_set {
                            // The previous holder's lease ended (no earlier than its SET plus
                            // the lifetime, less a millisecond of the server's rounding), or
                            // it had sent its unlock.
                            let expired = got + Duration::from_millis(1) >= previous_set + lifetime;
                            let released = r.sent_unlock.is_some_and(|u| u <= got);
                            assert!(
                                expired || released,
                                "{token} got the lock while {} held it",
                                r.token
                            );
                        }
                        *r = LockRecord {
                            token: token.clone(),
                            sent_set: Some(sent_set),
                            sent_unlock: None,
                        };
                    }
                    acquired += 1;
                    // Hold for 0 to 50 ms: about half the leases expire mid-hold.
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    thread::sleep(Duration::from_millis((seed >> 33) % 50));
                    let taken_over = {
                        let mut r = record.lock().unwrap();
                        if r.token == token {
                            r.sent_unlock = Some(Instant::now());
                            false
                        } else {
                            true
                        }
                    };
                    let deleted = client.call(&["EVALSHA", &sha, "1", "lock", &token]);
                    if taken_over {
                        // Another client holds the lock now, or held it and let it go: the
                        // compare-and-delete must not remove theirs.
                        assert_eq!(deleted, Frame::Int(0), "{token} deleted a lock it lost");
                        refused_unlocks += 1;
                    }
                    if deleted == Frame::Int(0) {
                        expired_mid_hold += 1;
                    }
                }
                (acquired, expired_mid_hold, refused_unlocks)
            })
        })
        .collect();
    let (mut acquired, mut expired, mut refused) = (0, 0, 0);
    for handle in handles {
        let (a, e, r) = handle.join().unwrap();
        acquired += a;
        expired += e;
        refused += r;
    }
    // The pattern was exercised: many acquisitions, leases lost mid-hold, lost locks that
    // other clients had taken.
    assert!(acquired > 20, "only {acquired} acquisitions");
    assert!(expired > 0, "no lease expired mid-hold");
    assert!(refused > 0, "no lock was taken over before its unlock");
}

#[test]
fn scripting_eval_in_exec_and_flush_keep_working() {
    let server = TestServer::start();
    let mut client = server.raw();
    assert_eq!(client.call(&["MULTI"]), Frame::Simple("OK".into()));
    client.call(&["EVAL", READ_MODIFY_WRITE, "1", "c"]);
    client.call(&["EVAL", READ_MODIFY_WRITE, "1", "c"]);
    assert_eq!(
        client.call(&["EXEC"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(2)])
    );
    let sha = client.call(&["SCRIPT", "LOAD", "return 7"]).text();
    assert_eq!(client.call(&["EVALSHA", &sha, "0"]), Frame::Int(7));
    assert_eq!(
        client.call(&["SCRIPT", "FLUSH"]),
        Frame::Simple("OK".into())
    );
    assert!(
        matches!(client.call(&["EVALSHA", &sha, "0"]), Frame::Error(e) if e.starts_with("NOSCRIPT"))
    );
    // A fresh state after the flush: scripts run, and the sandbox is back.
    assert_eq!(client.call(&["EVAL", "return 8", "0"]), Frame::Int(8));
    assert!(
        matches!(client.call(&["EVAL", "x = 1", "0"]), Frame::Error(e) if e.contains("readonly table"))
    );
}

#[test]
fn scripting_command_info_has_redis_flags_and_key_specs() {
    let server = TestServer::start();
    let mut client = server.raw();
    let Frame::Array(keys) =
        client.call(&["COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b", "c"])
    else {
        panic!("no keys");
    };
    assert_eq!(keys, vec![Frame::bulk("a"), Frame::bulk("b")]);
    let info = format!("{:?}", client.call(&["COMMAND", "INFO", "EVAL_RO"]));
    for flag in ["readonly", "noscript", "movablekeys", "no_mandatory_keys"] {
        assert!(info.contains(flag), "{flag} missing from {info}");
    }
}
