//! Multi-key commands are atomic and isolated: concurrent clients never see half of one.
//!
//! Each test puts its keys in different shards (the server's own `shard_of` picks them), so
//! the commands take more than one lock, and runs writers and readers on their own
//! connections at once for a bounded number of commands.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use crate::common::{Frame, RawClient, TestServer};

/// Two keys (with this prefix) that live in different shards of `server`.
fn keys_in_two_shards(server: &TestServer, prefix: &str) -> (String, String) {
    let keyspace = &server.server.keyspace;
    assert!(keyspace.shard_count() > 1, "a keyspace of one shard");
    let first = format!("{prefix}0");
    let shard = keyspace.shard_of(first.as_bytes());
    let second = (1..)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| keyspace.shard_of(k.as_bytes()) != shard)
        .expect("a key in another shard");
    (first, second)
}

/// Runs `writer` on one connection until every reader has made `reads` calls of `reader`
/// on its own connection.
fn race(
    server: &TestServer,
    readers: usize,
    reads: usize,
    writer: impl Fn(&mut RawClient, u64) + Send + Sync + 'static,
    reader: impl Fn(&mut RawClient) + Send + Sync + 'static,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let writer_thread = {
        let stop = stop.clone();
        let mut client = server.raw();
        thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                writer(&mut client, n);
                n += 1;
            }
            n
        })
    };
    let reader = Arc::new(reader);
    let reader_threads: Vec<_> = (0..readers)
        .map(|_| {
            let reader = reader.clone();
            let mut client = server.raw();
            thread::spawn(move || {
                for _ in 0..reads {
                    reader(&mut client);
                }
            })
        })
        .collect();
    let outcome: Vec<_> = reader_threads.into_iter().map(|t| t.join()).collect();
    stop.store(true, Ordering::Relaxed);
    let writes = writer_thread.join().expect("the writer ran");
    for result in outcome {
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
    assert!(
        writes > 10,
        "the writer ran alongside the readers ({writes} writes)"
    );
}

fn bulks(frame: &Frame) -> Vec<Option<String>> {
    let Frame::Array(items) = frame else {
        panic!("an array: {frame:?}")
    };
    items
        .iter()
        .map(|f| match f {
            Frame::Null => None,
            other => Some(other.text()),
        })
        .collect()
}

#[test]
fn mset_pair_across_shards_never_read_mixed() {
    let server = TestServer::start();
    let (a, b) = keys_in_two_shards(&server, "pair");
    server.raw().call(&["MSET", &a, "0", &b, "0"]);
    let (wa, wb) = (a.clone(), b.clone());
    race(
        &server,
        3,
        3000,
        move |c, n| {
            let v = n.to_string();
            assert_eq!(
                c.call(&["MSET", &wa, &v, &wb, &v]),
                Frame::Simple("OK".into())
            );
        },
        move |c| {
            let pair = bulks(&c.call(&["MGET", &a, &b]));
            assert_eq!(pair[0], pair[1], "MGET saw half an MSET");
            let reversed = bulks(&c.call(&["MGET", &b, &a]));
            assert_eq!(reversed[0], reversed[1], "MGET saw half an MSET");
        },
    );
}

#[test]
fn rename_across_shards_readers_see_exactly_one_key() {
    let server = TestServer::start();
    let (x, y) = keys_in_two_shards(&server, "moving");
    server.raw().call(&["SET", &x, "v"]);
    let (wx, wy) = (x.clone(), y.clone());
    race(
        &server,
        3,
        1500,
        move |c, _| {
            assert_eq!(c.call(&["RENAME", &wx, &wy]), Frame::Simple("OK".into()));
            assert_eq!(c.call(&["RENAMENX", &wy, &wx]), Frame::Int(1));
        },
        move |c| {
            assert_eq!(c.call(&["EXISTS", &x, &y]), Frame::Int(1), "EXISTS");
            let found = bulks(&c.call(&["MGET", &x, &y]));
            assert_eq!(found.iter().flatten().count(), 1, "MGET {found:?}");
            assert_eq!(c.call(&["DBSIZE"]), Frame::Int(1), "DBSIZE");
            let Frame::Array(keys) = c.call(&["KEYS", "moving*"]) else {
                panic!("KEYS")
            };
            assert_eq!(keys.len(), 1, "KEYS {keys:?}");
            // One SCAN step over every shard is one instant too.
            let Frame::Array(step) = c.call(&["SCAN", "0", "COUNT", "100000"]) else {
                panic!("SCAN")
            };
            assert_eq!(step[0], Frame::bulk("0"), "one step walked every shard");
            assert_eq!(bulks(&step[1]).len(), 1, "SCAN {step:?}");
        },
    );
}

#[test]
fn dbsize_counts_a_key_renamed_across_shards_once() {
    let server = TestServer::start();
    let (x, y) = keys_in_two_shards(&server, "counted");
    server.raw().call(&["SET", &x, "v"]);
    let batch = crate::common::resp::encode_command(&[b"DBSIZE"]).repeat(200);
    race(
        &server,
        2,
        40,
        move |c, _| {
            c.call(&["RENAME", &x, &y]);
            c.call(&["RENAME", &y, &x]);
        },
        move |c| {
            // Pipelined, so that reads come as fast as the server answers them.
            c.send(&batch);
            for _ in 0..200 {
                assert_eq!(c.read(), Some(Frame::Int(1)), "DBSIZE mid-RENAME");
            }
        },
    );
}

#[test]
fn del_and_copy_across_shards_are_all_or_nothing() {
    let server = TestServer::start();
    let (a, b) = keys_in_two_shards(&server, "both");
    let (wa, wb) = (a.clone(), b.clone());
    race(
        &server,
        3,
        2000,
        move |c, n| {
            if n % 2 == 0 {
                c.call(&["SET", &wa, "v"]);
                assert_eq!(c.call(&["COPY", &wa, &wb]), Frame::Int(1));
            } else {
                assert_eq!(c.call(&["DEL", &wa, &wb]), Frame::Int(2));
            }
        },
        move |c| {
            // The copy never exists without its source: COPY writes it while the source
            // exists, and DEL takes both at once.
            let found = bulks(&c.call(&["MGET", &b, &a]));
            assert!(
                found[0].is_none() || found[1].is_some(),
                "the copy without its source: {found:?}"
            );
        },
    );
}

#[test]
fn msetnx_racers_exactly_one_wins_all_or_nothing() {
    let server = TestServer::start();
    let (a, b) = keys_in_two_shards(&server, "nx");
    let racers = 6;
    let rounds = 150;
    let barrier = Arc::new(Barrier::new(racers));
    let threads: Vec<_> = (0..racers)
        .map(|id| {
            let barrier = barrier.clone();
            let (a, b) = (a.clone(), b.clone());
            let mut c = server.raw();
            thread::spawn(move || {
                let mut wins = 0;
                for round in 0..rounds {
                    barrier.wait();
                    let v = format!("{round}:{id}");
                    wins += c.call(&["MSETNX", &a, &v, &b, &v]).int();
                    barrier.wait();
                    if id == 0 {
                        let pair = bulks(&c.call(&["MGET", &a, &b]));
                        assert!(pair[0].is_some() && pair[0] == pair[1], "{pair:?}");
                        c.call(&["DEL", &a, &b]);
                    }
                }
                wins
            })
        })
        .collect();
    let wins: i64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(wins, rounds as i64, "one winner a round");
}

#[test]
fn counters_lose_no_update_under_contention() {
    let server = TestServer::start();
    let clients = 8;
    let each = 1000;
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let mut c = server.raw();
            thread::spawn(move || {
                for i in 0..each {
                    c.call(&["INCR", "counter"]);
                    c.call(&["DECRBY", "down", "3"]);
                    if i % 2 == 0 {
                        c.call(&["INCRBYFLOAT", "float", "0.5"]);
                    }
                    c.call(&["APPEND", "log", "x"]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = server.raw();
    let total = clients * each;
    assert_eq!(c.call(&["GET", "counter"]), Frame::bulk(&total.to_string()));
    assert_eq!(
        c.call(&["GET", "down"]),
        Frame::bulk(&(-3 * total as i64).to_string())
    );
    assert_eq!(
        c.call(&["GET", "float"]),
        Frame::bulk(&(total / 4).to_string())
    );
    assert_eq!(c.call(&["STRLEN", "log"]), Frame::Int(total as i64));
}

#[test]
fn smove_across_shards_set_algebra_sees_each_member_once() {
    let server = TestServer::start();
    let (s, t) = keys_in_two_shards(&server, "set");
    let mut setup = server.raw();
    let mut sadd = vec!["SADD", s.as_str()];
    let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    sadd.extend(members.iter().map(String::as_str));
    setup.call(&sadd);
    let (ws, wt) = (s.clone(), t.clone());
    race(
        &server,
        3,
        1500,
        move |c, n| {
            // Each member goes to the other set and back; one of the two sets may be emptied
            // (its key deleted) and made again meanwhile.
            let m = format!("m{}", n % 20);
            let (from, to) = if (n / 20) % 2 == 0 {
                (&ws, &wt)
            } else {
                (&wt, &ws)
            };
            assert_eq!(c.call(&["SMOVE", from, to, &m]), Frame::Int(1));
        },
        move |c| {
            let Frame::Array(union) = c.call(&["SUNION", &s, &t]) else {
                panic!("SUNION")
            };
            assert_eq!(union.len(), 20, "SUNION saw half an SMOVE");
            assert_eq!(c.call(&["SINTERCARD", "2", &s, &t]), Frame::Int(0));
            let stored = c.call(&["SUNIONSTORE", "{u}", &s, &t]);
            assert_eq!(stored, Frame::Int(20), "SUNIONSTORE saw half an SMOVE");
        },
    );
}
