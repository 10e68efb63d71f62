//! Scripts alone: their atomicity under concurrent clients, the distributed lock pattern, and
//! the script cache (see `diff_scripting.rs` for the replies compared with Redis).

use std::sync::{Arc, Barrier};
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
fn scripting_pipelined_read_modify_writes_beside_plain_writes_lose_no_update() {
    // Pipelined scripts run in runs under one hold of every shard; the plain INCRs of the
    // other clients wait for the hold between them, and every update lands.
    let server = TestServer::start();
    let sha = server
        .raw()
        .call(&["SCRIPT", "LOAD", READ_MODIFY_WRITE])
        .text();
    let (pipelines, depth, rounds) = (3, 100, 8);
    let scripts: Vec<_> = (0..pipelines)
        .map(|_| {
            let mut client = server.raw();
            let sha = sha.clone();
            thread::spawn(move || {
                for _ in 0..rounds {
                    for _ in 0..depth {
                        client.send_command(&[b"EVALSHA", sha.as_bytes(), b"1", b"counter"]);
                    }
                    for _ in 0..depth {
                        assert!(matches!(client.read(), Some(Frame::Int(_))));
                    }
                }
            })
        })
        .collect();
    let mut plain = server.raw();
    for _ in 0..500 {
        assert!(matches!(plain.call(&["INCR", "counter"]), Frame::Int(_)));
    }
    for handle in scripts {
        handle.join().unwrap();
    }
    let total = int(server.raw().call(&["GET", "counter"]));
    assert_eq!(total, pipelines * depth * rounds + 500);
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

/// One client's hold of the lock, as its clock saw it: the server ran its `SET` between
/// `sent_set` and `got`, and its unlock between `sent_unlock` and `unlocked`.
#[derive(Debug, Clone, Copy)]
struct Hold {
    sent_set: Instant,
    got: Instant,
    sent_unlock: Instant,
    unlocked: Instant,
    /// Whether the unlock deleted the key.
    deleted: bool,
}

/// Checks every pair of holds: a hold surely granted after another (its `SET` sent after the
/// other's reply) came no earlier than the other's lease could end (its `SET` plus the
/// lifetime, less a millisecond of rounding) or its unlock was sent; and an unlock that
/// deleted the key had no hold surely granted between its own grant and it. Returns how many
/// holds were taken over before their unlock (the case the compare-and-delete is for).
fn check_holds(holds: &[Hold], lifetime: Duration) -> usize {
    let mut taken_over = 0;
    for (i, a) in holds.iter().enumerate() {
        let earliest_end = (a.sent_set + lifetime - Duration::from_millis(1)).min(a.sent_unlock);
        let mut overtaken = false;
        for (j, b) in holds.iter().enumerate() {
            if i == j || b.sent_set < a.got {
                continue;
            }
            assert!(
                b.got >= earliest_end,
                "a hold was granted while another's lease ran: {a:?} then {b:?}"
            );
            if b.got <= a.sent_unlock {
                overtaken = true;
            }
        }
        if overtaken {
            assert!(
                !a.deleted,
                "an unlock deleted a lock granted to another: {a:?}"
            );
            taken_over += 1;
        }
    }
    taken_over
}

#[test]
fn scripting_lock_with_expiring_leases_has_one_holder_and_no_foreign_unlock() {
    let server = TestServer::start();
    let lifetime = Duration::from_millis(25);
    let clients = 6;
    let run_for = Duration::from_millis(1500);
    let sha = server.raw().call(&["SCRIPT", "LOAD", UNLOCK]).text();
    let start = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|id| {
            let mut client: RawClient = server.raw();
            let (sha, start) = (sha.clone(), Arc::clone(&start));
            thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1);
                let mut holds = Vec::new();
                start.wait();
                let began = Instant::now();
                let mut attempt = 0;
                while began.elapsed() < run_for {
                    attempt += 1;
                    let token = format!("{id}-{attempt}");
                    let px = lifetime.as_millis().to_string();
                    let sent_set = Instant::now();
                    let reply = client.call(&["SET", "lock", &token, "NX", "PX", &px]);
                    let got = Instant::now();
                    if reply == Frame::Null {
                        thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    assert_eq!(reply, Frame::Simple("OK".into()));
                    // Hold for 0 to 50 ms: about half the leases expire mid-hold.
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    thread::sleep(Duration::from_millis((seed >> 33) % 50));
                    let sent_unlock = Instant::now();
                    let deleted = client.call(&["EVALSHA", &sha, "1", "lock", &token]);
                    let unlocked = Instant::now();
                    assert!(matches!(deleted, Frame::Int(0 | 1)), "{deleted:?}");
                    holds.push(Hold {
                        sent_set,
                        got,
                        sent_unlock,
                        unlocked,
                        deleted: deleted == Frame::Int(1),
                    });
                }
                holds
            })
        })
        .collect();
    let holds: Vec<Hold> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let taken_over = check_holds(&holds, lifetime);
    // The pattern was exercised: many holds, leases lost mid-hold and taken by another
    // client before the unlock, and unlocks that did delete.
    assert!(holds.len() > 20, "only {} holds", holds.len());
    assert!(taken_over > 0, "no lock was taken over before its unlock");
    assert!(
        holds.iter().any(|h| h.deleted),
        "no unlock deleted its lock"
    );
    assert!(holds.iter().all(|h| h.unlocked >= h.sent_unlock));
}

#[test]
fn scripting_lock_check_catches_overlapping_holds() {
    // The checker must be able to fail: two holds granted 5 ms apart, the first neither
    // expired nor unlocked by then.
    let t = Instant::now();
    let ms = Duration::from_millis;
    let first = Hold {
        sent_set: t,
        got: t + ms(1),
        sent_unlock: t + ms(20),
        unlocked: t + ms(21),
        deleted: true,
    };
    let second = Hold {
        sent_set: t + ms(5),
        got: t + ms(6),
        sent_unlock: t + ms(30),
        unlocked: t + ms(31),
        deleted: true,
    };
    let caught = std::panic::catch_unwind(|| check_holds(&[first, second], ms(25)));
    assert!(caught.is_err());
    // And a foreign unlock: the first expired, the second was granted, then the first's
    // unlock deleted.
    let late = Hold {
        sent_set: t + ms(27),
        got: t + ms(28),
        sent_unlock: t + ms(40),
        unlocked: t + ms(41),
        deleted: false,
    };
    let expired_first = Hold {
        sent_unlock: t + ms(35),
        unlocked: t + ms(36),
        ..first
    };
    let caught = std::panic::catch_unwind(|| check_holds(&[expired_first, late], ms(25)));
    assert!(caught.is_err());
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
