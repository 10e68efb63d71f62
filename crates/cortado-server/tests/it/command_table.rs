//! `COMMAND` against `redis-server`: the recorded metadata is Redis 7.0's, and every command
//! of the table answers `COMMAND INFO`, `COMMAND DOCS` and `COMMAND GETKEYS` as Redis does.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::resp::encode_frame;
use crate::common::{Frame, RawClient, RealRedis, TestServer};

/// The record `COMMAND` reads (see `src/cmd/command.rs`).
const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/redis-commands.resp3");

/// The version of the real server, from `INFO server`.
fn redis_version(client: &mut RawClient) -> String {
    let info = client.call(&["INFO", "server"]).text();
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn map_get<'a>(map: &'a Frame, key: &str) -> Option<&'a Frame> {
    match map {
        Frame::Map(pairs) => pairs.iter().find(|(k, _)| k.text() == key).map(|(_, v)| v),
        _ => None,
    }
}

/// One frame per command and subcommand, `[name, categories, tips, key specs, docs without
/// subcommands]`, by name, from `COMMAND INFO` and `COMMAND DOCS` over RESP3.
fn record_from(client: &mut RawClient) -> Vec<u8> {
    assert!(matches!(client.call(&["HELLO", "3"]), Frame::Map(_)));
    let info = client.call(&["COMMAND", "INFO"]);
    let docs = client.call(&["COMMAND", "DOCS"]);
    let mut records = BTreeMap::new();
    let Frame::Array(entries) = info else {
        panic!("COMMAND INFO: {info:?}")
    };
    fn add(entry: &Frame, docs: &Frame, records: &mut BTreeMap<String, Vec<u8>>) {
        let Frame::Array(fields) = entry else {
            panic!("entry {entry:?}")
        };
        let name = fields[0].text();
        let doc = map_get(docs, &name).unwrap_or_else(|| panic!("no docs for {name}"));
        let Frame::Map(doc_fields) = doc else {
            panic!("docs of {name}: {doc:?}")
        };
        let without_subs: Vec<(Frame, Frame)> = doc_fields
            .iter()
            .filter(|(k, _)| k.text() != "subcommands")
            .cloned()
            .collect();
        let record = Frame::Array(vec![
            fields[0].clone(),
            fields[6].clone(),
            fields[7].clone(),
            fields[8].clone(),
            Frame::Map(without_subs),
        ]);
        let mut bytes = Vec::new();
        encode_frame(&record, &mut bytes);
        records.insert(name.clone(), bytes);
        if let (Frame::Array(subs), Some(sub_docs)) = (&fields[9], map_get(doc, "subcommands")) {
            for sub in subs {
                add(sub, sub_docs, records);
            }
        }
    }
    for entry in &entries {
        add(entry, &docs, &mut records);
    }
    records.into_values().flatten().collect()
}

/// Redis 7.0's metadata is what `data/redis-commands.resp3` holds; with
/// `CORTADO_RECORD_COMMANDS=1` the test writes the record instead.
#[test]
fn command_metadata_record_matches_redis() {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let mut client = redis.raw();
    let version = redis_version(&mut client);
    if !version.starts_with("7.0.") {
        eprintln!("note: redis-server {version} is not 7.0; the record is not compared");
        return;
    }
    let fresh = record_from(&mut client);
    if std::env::var_os("CORTADO_RECORD_COMMANDS").is_some() {
        std::fs::write(RECORD, &fresh).expect("write the record");
        return;
    }
    let recorded = std::fs::read(RECORD).expect("read the record");
    assert!(
        recorded == fresh,
        "{RECORD} differs from redis-server {version}'s COMMAND INFO and DOCS; \
         run with CORTADO_RECORD_COMMANDS=1 to record them again"
    );
}

/// Every command name the server has, subcommands as `container|sub`.
fn our_commands(client: &mut RawClient) -> Vec<String> {
    let Frame::Array(names) = client.call(&["COMMAND", "LIST"]) else {
        panic!("COMMAND LIST")
    };
    names.iter().map(Frame::text).collect()
}

/// `frame` with its subcommand lists (`COMMAND INFO`'s last element, `DOCS`'s
/// `subcommands` map) cut to the commands in `ours` and sorted, since Redis lists its
/// subcommands in hash order and has some the server does not.
fn normalize(frame: &Frame, ours: &BTreeSet<String>) -> Frame {
    match frame {
        // A COMMAND INFO entry.
        Frame::Array(fields) if fields.len() == 10 && matches!(fields[1], Frame::Int(_)) => {
            let mut fields = fields.clone();
            if let Frame::Array(subs) | Frame::Set(subs) = &fields[9] {
                let mut subs: Vec<Frame> = subs
                    .iter()
                    .filter(|s| matches!(s, Frame::Array(f) if ours.contains(&f[0].text())))
                    .map(|s| normalize(s, ours))
                    .collect();
                subs.sort_by_key(|s| match s {
                    Frame::Array(f) => f[0].text(),
                    _ => String::new(),
                });
                fields[9] = match fields[9] {
                    Frame::Set(_) => Frame::Set(subs),
                    _ => Frame::Array(subs),
                };
            }
            Frame::Array(fields)
        }
        // A RESP2 docs map: a flat array of pairs, whose `subcommands` value is one too.
        Frame::Array(items) => {
            let mut out = Vec::new();
            let mut i = 0;
            while i < items.len() {
                out.push(normalize(&items[i], ours));
                if items[i] == Frame::bulk("subcommands") {
                    if let Some(Frame::Array(flat)) = items.get(i + 1) {
                        let mut subs: Vec<(Frame, Frame)> = flat
                            .chunks(2)
                            .filter(|pair| ours.contains(&pair[0].text()))
                            .map(|pair| (pair[0].clone(), normalize(&pair[1], ours)))
                            .collect();
                        subs.sort_by_key(|(name, _)| name.text());
                        out.push(Frame::Array(
                            subs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                        ));
                        i += 2;
                        continue;
                    }
                }
                i += 1;
            }
            Frame::Array(out)
        }
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .map(|(k, v)| {
                    let is_subs = matches!(k, Frame::Bulk(b) if b == b"subcommands");
                    let v = match v {
                        Frame::Map(subs) if is_subs => {
                            let mut subs: Vec<(Frame, Frame)> = subs
                                .iter()
                                .filter(|(name, _)| ours.contains(&name.text()))
                                .map(|(name, doc)| (name.clone(), normalize(doc, ours)))
                                .collect();
                            subs.sort_by_key(|(name, _)| name.text());
                            Frame::Map(subs)
                        }
                        other => normalize(other, ours),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Table entries known to differ from Redis, in files of the data commands (to be fixed
/// there; the test fails once one is fixed, so the entry is removed with the fix).
const KNOWN_DIFFERENCES: &[&str] = &[
    // strings.rs: Redis 7.0 flags APPEND `fast`.
    "COMMAND INFO append",
];

/// `COMMAND INFO` and `COMMAND DOCS` of every command and subcommand of the table are Redis's,
/// over RESP2 and RESP3 (arity, flags, key positions, categories, tips, key specs, docs).
#[test]
fn command_info_and_docs_match_redis_for_every_command() {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let server = TestServer::start();
    for resp3 in [false, true] {
        let mut expected = redis.raw();
        let mut actual = server.raw();
        if resp3 {
            expected.call(&["HELLO", "3"]);
            actual.call(&["HELLO", "3"]);
        }
        let names = our_commands(&mut actual);
        let ours: BTreeSet<String> = names.iter().cloned().collect();
        let mut differing = Vec::new();
        let mut known = Vec::new();
        for name in &names {
            for sub in ["INFO", "DOCS"] {
                let want = normalize(&expected.call(&["COMMAND", sub, name]), &ours);
                let got = normalize(&actual.call(&["COMMAND", sub, name]), &ours);
                let what = format!("COMMAND {sub} {name}");
                if want != got && KNOWN_DIFFERENCES.contains(&what.as_str()) {
                    known.push(what);
                } else if want != got {
                    differing.push(format!(
                        "{what} (resp3 {resp3}):\n  redis:   {want:?}\n  cortado: {got:?}"
                    ));
                }
            }
        }
        assert!(
            differing.is_empty(),
            "{} differ:\n{}",
            differing.len(),
            differing.join("\n")
        );
        assert_eq!(
            known, KNOWN_DIFFERENCES,
            "a known difference was fixed: remove it"
        );
    }
}

/// `COMMAND GETKEYS`, `GETKEYSANDFLAGS`, `COUNT`'s type, `INFO` of unknown names, and the
/// errors, as Redis gives them.
#[test]
fn command_subcommands_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut expected, mut actual) = pair.clients();
    assert_same_replies(
        &mut expected,
        &mut actual,
        &[
            &["COMMAND", "GETKEYS", "GET", "k"],
            &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"],
            &["COMMAND", "GETKEYS", "MSET", "a"],
            &["COMMAND", "GETKEYS", "DEL", "a", "b", "c"],
            &["COMMAND", "GETKEYS", "RENAME", "a", "b"],
            &["COMMAND", "GETKEYS", "SET", "a", "b"],
            &["COMMAND", "GETKEYS", "PING", "x"],
            &["COMMAND", "GETKEYS", "FOO", "x"],
            &["COMMAND", "GETKEYS", "GET"],
            &["COMMAND", "GETKEYS", "CLIENT", "LIST"],
            &["COMMAND", "GETKEYS", "CLIENT", "FOO"],
            &["COMMAND", "GETKEYS", "GET", "a", "b"],
            &["COMMAND", "GETKEYSANDFLAGS", "SET", "a", "b"],
            &["COMMAND", "GETKEYSANDFLAGS", "SET", "a", "b", "GET"],
            &["COMMAND", "GETKEYSANDFLAGS", "GETDEL", "a"],
            &["COMMAND", "GETKEYSANDFLAGS", "COPY", "a", "b"],
            &["COMMAND", "GETKEYSANDFLAGS", "MSET", "a", "1", "b", "2"],
            &["COMMAND", "GETKEYSANDFLAGS", "LCS", "a", "b"],
            &["COMMAND", "INFO", "nosuchcommand"],
            &["COMMAND", "INFO", "client|nosuch"],
            &["COMMAND", "INFO", "get|x"],
            &["COMMAND", "DOCS", "nosuchcommand"],
            &["COMMAND", "LIST", "FILTERBY", "MODULE", "x"],
            &["COMMAND", "LIST", "FILTERBY", "PATTERN"],
            &["COMMAND", "LIST", "FILTERBY", "FOO", "x"],
            &["COMMAND", "LIST", "FOO"],
            &["COMMAND", "HELP"],
            &["COMMAND", "COUNT", "x"],
            &["COMMAND", "FOO"],
        ],
    );
}

/// `COMMAND LIST` with a filter names the commands Redis names, of those the server has.
#[test]
fn command_list_filters_match_redis() {
    let Some(redis) = RealRedis::start() else {
        return;
    };
    let server = TestServer::start();
    let mut expected = redis.raw();
    let mut actual = server.raw();
    let ours: BTreeSet<String> = our_commands(&mut actual).into_iter().collect();
    let filters: &[&[&str]] = &[
        &["PATTERN", "cl*"],
        &["PATTERN", "CLIENT|*"],
        &["PATTERN", "*get*"],
        &["ACLCAT", "connection"],
        &["ACLCAT", "KEYSPACE"],
        &["ACLCAT", "dangerous"],
        &["ACLCAT", "nosuchcategory"],
    ];
    for filter in filters {
        let mut command = vec!["COMMAND", "LIST", "FILTERBY"];
        command.extend_from_slice(filter);
        let names = |client: &mut RawClient| -> BTreeSet<String> {
            let Frame::Array(names) = client.call(&command) else {
                panic!("COMMAND LIST {filter:?}")
            };
            names.iter().map(Frame::text).collect()
        };
        let want: BTreeSet<String> = names(&mut expected).intersection(&ours).cloned().collect();
        assert_eq!(names(&mut actual), want, "COMMAND LIST FILTERBY {filter:?}");
    }
}
