//! `COMMAND` against `redis-server`, on what is interface: every command's arity, flags, key
//! positions, ACL categories and key specifications; `COMMAND GETKEYS`; `COMMAND LIST`'s
//! filters; the shape of `COMMAND DOCS` over RESP2 and RESP3; and `redis-cli`, which reads
//! `COMMAND DOCS` for its help. The prose (summaries, complexities) is our own, and a test
//! checks it is not Redis's.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use cortado_server::cmd::{docs, syntax};

use crate::common::compare::{assert_same_replies, Pair};
use crate::common::{program_available, Frame, RawClient, RealRedis, TestServer};

/// Every command name the server has, subcommands as `container|sub`.
fn our_commands(client: &mut RawClient) -> Vec<String> {
    let Frame::Array(names) = client.call(&["COMMAND", "LIST"]) else {
        panic!("COMMAND LIST")
    };
    names.iter().map(Frame::text).collect()
}

/// The one entry of `COMMAND INFO name`.
fn info_entry(client: &mut RawClient, name: &str) -> Vec<Frame> {
    match client.call(&["COMMAND", "INFO", name]) {
        Frame::Array(mut entries) if entries.len() == 1 => match entries.remove(0) {
            Frame::Array(fields) if fields.len() == 10 => fields,
            other => panic!("COMMAND INFO {name}: {other:?}"),
        },
        other => panic!("COMMAND INFO {name}: {other:?}"),
    }
}

/// The fields of `COMMAND INFO` that are interface, by name: not the tips (hints for cluster
/// proxies, not served) nor the subcommands (each is compared on its own).
const INFO_FIELDS: &[(usize, &str)] = &[
    (0, "name"),
    (1, "arity"),
    (2, "flags"),
    (3, "first key"),
    (4, "last key"),
    (5, "step"),
    (6, "categories"),
    (8, "key specs"),
];

/// Fields known to differ from Redis on this branch, in files of the data commands (fixed on
/// the branch that owns them: APPEND's `fast` flag, the `bitmap` group of the bit commands,
/// the `server` group of MEMORY's subcommands). The test fails once one agrees: remove it.
const KNOWN_INFO_DIFFERENCES: &[&str] = &[];

/// Commands that came after Redis 7.0 (`redis-server` here is 7.0, which lacks them): the
/// hash field lifetimes of Redis 7.4. They are compared with Redis 7.4's table, as written
/// below, instead ([`command_info_of_redis_7_4_commands_is_redis_7_4s`]).
const BEYOND_REDIS_7_0: &[&str] = &[
    "hexpire",
    "hexpireat",
    "hexpiretime",
    "hpersist",
    "hpexpire",
    "hpexpireat",
    "hpexpiretime",
    "hpttl",
    "httl",
];

/// Every command name the server has that `redis-server` 7.0 has too.
fn shared_commands(client: &mut RawClient) -> Vec<String> {
    our_commands(client)
        .into_iter()
        .filter(|n| !BEYOND_REDIS_7_0.contains(&n.as_str()))
        .collect()
}

/// A command's flags and ACL categories.
type FlagsAndCategories = (&'static [&'static str], &'static [&'static str]);

/// `COMMAND INFO` of the Redis 7.4 commands gives 7.4's arity, flags, key positions and ACL
/// categories (from its command table: `hexpire.json` and its kin).
#[test]
fn command_info_of_redis_7_4_commands_is_redis_7_4s() {
    let server = TestServer::start();
    let mut client = server.raw();
    let write = (
        &["write", "denyoom", "fast"][..],
        &["@write", "@hash", "@fast"][..],
    );
    let read = (&["readonly", "fast"][..], &["@read", "@hash", "@fast"][..]);
    let persist = (&["write", "fast"][..], &["@write", "@hash", "@fast"][..]);
    let expected: &[(&str, i64, FlagsAndCategories)] = &[
        ("hexpire", -6, write),
        ("hexpireat", -6, write),
        ("hpexpire", -6, write),
        ("hpexpireat", -6, write),
        ("hexpiretime", -5, read),
        ("hpexpiretime", -5, read),
        ("httl", -5, read),
        ("hpttl", -5, read),
        ("hpersist", -5, persist),
    ];
    assert_eq!(expected.len(), BEYOND_REDIS_7_0.len());
    let texts = |frame: &Frame| -> BTreeSet<String> {
        let Frame::Array(items) = frame else {
            panic!("{frame:?}")
        };
        items.iter().map(Frame::text).collect()
    };
    for &(name, arity, (flags, categories)) in expected {
        let info = info_entry(&mut client, name);
        assert_eq!(info[0].text(), name);
        assert_eq!(info[1].int(), arity, "{name} arity");
        let want = |words: &[&str]| words.iter().map(|w| w.to_string()).collect();
        assert_eq!(texts(&info[2]), want(flags), "{name} flags");
        assert_eq!(
            (info[3].int(), info[4].int(), info[5].int()),
            (1, 1, 1),
            "{name} keys"
        );
        assert_eq!(texts(&info[6]), want(categories), "{name} categories");
    }
}

/// `COMMAND INFO` of every command and subcommand of the table gives Redis's arity, flags,
/// key positions, ACL categories and key specifications, over RESP2 and RESP3.
#[test]
fn command_info_matches_redis_for_every_command() {
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
        let mut differing = Vec::new();
        let mut known = Vec::new();
        for name in shared_commands(&mut actual) {
            let want = info_entry(&mut expected, &name);
            let got = info_entry(&mut actual, &name);
            for &(i, field) in INFO_FIELDS {
                if without_notes(&want[i]) == got[i] {
                    continue;
                }
                let what = format!("{name}: {field}");
                if KNOWN_INFO_DIFFERENCES.contains(&what.as_str()) {
                    known.push(what);
                } else {
                    differing.push(format!(
                        "{what} (resp3 {resp3}):\n  redis:   {:?}\n  cortado: {:?}",
                        want[i], got[i]
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
        known.sort();
        assert_eq!(
            known, KNOWN_INFO_DIFFERENCES,
            "a known difference was fixed: remove it"
        );
    }
}

/// Key specifications without their `notes`, which are prose (Redis's own, not served).
fn without_notes(frame: &Frame) -> Frame {
    let is_notes = |k: &Frame| matches!(k, Frame::Bulk(b) if b == b"notes");
    match frame {
        Frame::Array(items) | Frame::Set(items)
            if items
                .iter()
                .all(|i| matches!(i, Frame::Map(_) | Frame::Array(_))) =>
        {
            let items = items.iter().map(without_notes).collect();
            match frame {
                Frame::Set(_) => Frame::Set(items),
                _ => Frame::Array(items),
            }
        }
        // A RESP2 map: a flat array of keys and values.
        Frame::Array(flat) if flat.len() % 2 == 0 && flat.first().is_some_and(is_notes) => {
            Frame::Array(flat[2..].to_vec())
        }
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .filter(|(k, _)| !is_notes(k))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A docs reply's fields, from a RESP3 map or a RESP2 flat array (which is all bulk keys).
fn docs_fields(frame: &Frame, resp3: bool) -> Vec<(String, Frame)> {
    match frame {
        Frame::Map(pairs) if resp3 => pairs.iter().map(|(k, v)| (k.text(), v.clone())).collect(),
        Frame::Array(flat) if !resp3 && flat.len() % 2 == 0 => flat
            .chunks(2)
            .map(|pair| (pair[0].text(), pair[1].clone()))
            .collect(),
        other => panic!("a docs map (resp3 {resp3}): {other:?}"),
    }
}

/// `COMMAND DOCS name`'s fields for `name`.
fn docs_of(client: &mut RawClient, name: &str, resp3: bool) -> Vec<(String, Frame)> {
    let reply = client.call(&["COMMAND", "DOCS", name]);
    let top = docs_fields(&reply, resp3);
    assert_eq!(top.len(), 1, "COMMAND DOCS {name}: {reply:?}");
    assert_eq!(top[0].0, name);
    docs_fields(&top[0].1, resp3)
}

fn field<'a>(fields: &'a [(String, Frame)], name: &str) -> Option<&'a Frame> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Text compared loosely: lowercase, words only.
fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `COMMAND DOCS` fields known to differ from Redis on this branch (the groups of the bit
/// commands and of MEMORY's subcommands, fixed on the branch that owns them).
const KNOWN_DOCS_DIFFERENCES: &[&str] = &[];

/// Commands whose summary is still Redis 7.0's on this branch, in files another branch is
/// changing; the test fails once one is reworded: remove it.
const KNOWN_REDIS_SUMMARIES: &[&str] = &[];

/// `COMMAND DOCS` answers for every command with a map of `summary`, `since`, `group` and
/// `complexity` (bulk strings), `arguments` when it takes any (always where Redis lists
/// some), and `subcommands` when it has any, over RESP2 and RESP3; `since` and `group` are
/// Redis's (facts about the interface). The summary and complexity are our own words: never
/// Redis's sentence.
#[test]
fn command_docs_describe_every_command_in_our_words() {
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
        let names = shared_commands(&mut actual);
        let ours: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let mut problems = Vec::new();
        let mut copied = Vec::new();
        let mut known = Vec::new();
        for name in &names {
            let got = docs_of(&mut actual, name, resp3);
            let want = docs_of(&mut expected, name, resp3);
            let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
            let mut expected_keys = vec!["summary", "since", "group", "complexity"];
            if field(&got, "arguments").is_some() {
                expected_keys.push("arguments");
            } else if field(&want, "arguments").is_some() {
                problems.push(format!("{name}: no arguments, where Redis has some"));
            }
            if field(&got, "subcommands").is_some() {
                expected_keys.push("subcommands");
            }
            if keys != expected_keys {
                problems.push(format!("{name}: fields {keys:?}, want {expected_keys:?}"));
            }
            for key in ["summary", "since", "group", "complexity"] {
                if !matches!(field(&got, key), Some(Frame::Bulk(b)) if !b.is_empty()) {
                    problems.push(format!("{name}: {key} is {:?}", field(&got, key)));
                }
            }
            for key in ["since", "group"] {
                let what = format!("{name}: {key}");
                if field(&got, key) != field(&want, key)
                    && KNOWN_DOCS_DIFFERENCES.contains(&what.as_str())
                {
                    known.push(what);
                } else if field(&got, key) != field(&want, key) {
                    problems.push(format!(
                        "{name}: {key} {:?}, redis {:?}",
                        field(&got, key),
                        field(&want, key)
                    ));
                }
            }
            if let Some(subs) = field(&got, "subcommands") {
                let subs = docs_fields(subs, resp3);
                let sub_names: BTreeSet<&str> = subs.iter().map(|(k, _)| k.as_str()).collect();
                let table_subs: BTreeSet<&str> = ours
                    .iter()
                    .copied()
                    .filter(|n| n.starts_with(&format!("{name}|")))
                    .collect();
                if sub_names != table_subs {
                    problems.push(format!("{name}: subcommands {sub_names:?}"));
                }
            }
            if words(&field(&got, "summary").unwrap().text())
                == words(&field(&want, "summary").unwrap().text())
            {
                copied.push(name.clone());
            }
            let complexity = field(&got, "complexity").unwrap().text();
            // A bare formula ("O(1)") is no one's sentence.
            if complexity.contains(' ')
                && Some(words(&complexity)) == field(&want, "complexity").map(|c| words(&c.text()))
            {
                problems.push(format!("{name}: Redis's complexity text"));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        known.sort();
        assert_eq!(
            known, KNOWN_DOCS_DIFFERENCES,
            "a known difference was fixed: remove it"
        );
        assert_eq!(
            copied, KNOWN_REDIS_SUMMARIES,
            "summaries that are Redis's sentences (reword them), or known ones reworded \
             (remove them from the list)"
        );
    }
}

/// `COMMAND GETKEYS` and `GETKEYSANDFLAGS` find the keys Redis finds, with the same flags,
/// for calls whose keys depend on the arguments in each way the table has (a range, pairs,
/// a fixed pair, one spec per key, a key after a subcommand, flags that depend on an option),
/// and give Redis's errors.
#[test]
fn command_getkeys_matches_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut expected, mut actual) = pair.clients();
    let mut calls: Vec<Vec<&str>> = Vec::new();
    let representative: &[&[&str]] = &[
        &["GET", "k"],
        &["SET", "a", "b"],
        &["SET", "a", "b", "GET"],
        &["SET", "a", "b", "EX", "10", "get"],
        &["SET", "a", "get"],
        &["GETEX", "k", "PERSIST"],
        &["GETDEL", "a"],
        &["APPEND", "a", "b"],
        &["MGET", "a", "b", "c"],
        &["MSET", "a", "1", "b", "2"],
        &["MSET", "a", "1", "b"],
        &["MSET", "a"],
        &["MSETNX", "a", "1", "b", "2"],
        &["DEL", "a", "b", "c"],
        &["UNLINK", "a"],
        &["EXISTS", "a", "b"],
        &["TOUCH", "a", "b"],
        &["RENAME", "a", "b"],
        &["RENAMENX", "a", "b"],
        &["COPY", "a", "b"],
        &["COPY", "a", "b", "DB", "1", "REPLACE"],
        &["MOVE", "a", "1"],
        &["LCS", "a", "b"],
        &["LCS", "a", "b", "LEN"],
        &["OBJECT", "ENCODING", "k"],
        &["OBJECT", "REFCOUNT", "k"],
        &["MEMORY", "USAGE", "k", "SAMPLES", "5"],
        &["EXPIRE", "k", "10", "NX"],
        &["PEXPIREAT", "k", "10"],
        &["TTL", "k"],
        &["SETBIT", "k", "7", "1"],
        &["STRLEN", "k"],
        &["INCRBYFLOAT", "k", "1.5"],
    ];
    for call in representative {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut command = vec!["COMMAND", sub];
            command.extend_from_slice(call);
            calls.push(command);
        }
    }
    let errors: &[&[&str]] = &[
        &["COMMAND", "GETKEYS", "PING", "x"],
        &["COMMAND", "GETKEYS", "FOO", "x"],
        &["COMMAND", "GETKEYS", "GET"],
        &["COMMAND", "GETKEYS", "GET", "a", "b"],
        &["COMMAND", "GETKEYS", "CLIENT", "LIST"],
        &["COMMAND", "GETKEYS", "CLIENT", "FOO"],
        &["COMMAND", "GETKEYS", "OBJECT", "HELP"],
        &["COMMAND", "GETKEYSANDFLAGS", "KEYS", "*"],
        &["COMMAND", "GETKEYSANDFLAGS", "LCS", "a"],
    ];
    calls.extend(errors.iter().map(|c| c.to_vec()));
    let calls: Vec<&[&str]> = calls.iter().map(Vec::as_slice).collect();
    assert_same_replies(&mut expected, &mut actual, &calls);
}

/// `COMMAND`, `COMMAND COUNT`, `COMMAND LIST` and `COMMAND INFO` agree with each other and
/// with the table: the same commands, each once, subcommands listed after their container.
#[test]
fn command_count_list_and_info_agree_with_the_table() {
    let server = TestServer::start();
    let mut client = server.raw();
    let table = &server.server.commands;
    let count = client.call(&["COMMAND", "COUNT"]).int();
    assert_eq!(count as usize, table.commands().count());
    let listed = our_commands(&mut client);
    let mut from_table: Vec<String> = table.entries().map(|(_, e)| e.full_name.clone()).collect();
    from_table.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, from_table, "COMMAND LIST is the table");
    assert_eq!(
        listed.iter().filter(|n| !n.contains('|')).count() as i64,
        count
    );
    let Frame::Array(all) = client.call(&["COMMAND"]) else {
        panic!("COMMAND")
    };
    assert_eq!(all.len() as i64, count);
    let info_all = client.call(&["COMMAND", "INFO"]);
    assert_eq!(info_all, Frame::Array(all.clone()));
    let Frame::Array(docs) = client.call(&["COMMAND", "DOCS"]) else {
        panic!("COMMAND DOCS")
    };
    assert_eq!(docs.len() as i64, 2 * count, "a name and a map per command");
    let names: Vec<String> = all
        .iter()
        .map(|entry| match entry {
            Frame::Array(fields) => fields[0].text(),
            other => panic!("{other:?}"),
        })
        .collect();
    let top: Vec<&String> = listed.iter().filter(|n| !n.contains('|')).collect();
    assert_eq!(names.iter().collect::<Vec<_>>(), top);
    assert_eq!(
        client.call(&["COMMAND", "INFO", "get", "nosuch", "CLIENT|LIST"]),
        Frame::Array(vec![
            Frame::Array(info_entry(&mut client, "get")),
            Frame::Null,
            Frame::Array(info_entry(&mut client, "client|list")),
        ])
    );
}

/// `COMMAND`'s other answers and errors, as Redis gives them.
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
            &["COMMAND", "INFO", "nosuchcommand"],
            &["COMMAND", "INFO", "client|nosuch"],
            &["COMMAND", "INFO", "get|x"],
            &["COMMAND", "DOCS", "nosuchcommand"],
            &["COMMAND", "LIST", "FILTERBY", "MODULE", "x"],
            &["COMMAND", "LIST", "FILTERBY", "PATTERN"],
            &["COMMAND", "LIST", "FILTERBY", "FOO", "x"],
            &["COMMAND", "LIST", "FOO"],
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
        &["ACLCAT", "string"],
        &["ACLCAT", "@read"],
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
        let got = names(&mut actual);
        // The bit commands' group differs on this branch (see KNOWN_INFO_DIFFERENCES).
        let skip = [
            "bitcount",
            "getbit",
            "setbit",
            "memory|usage",
            "memory|help",
            "append",
        ];
        let strip = |set: &BTreeSet<String>| -> BTreeSet<String> {
            set.iter()
                .filter(|n| !skip.contains(&n.as_str()) && !BEYOND_REDIS_7_0.contains(&n.as_str()))
                .cloned()
                .collect()
        };
        assert_eq!(
            strip(&got),
            strip(&want),
            "COMMAND LIST FILTERBY {filter:?}"
        );
    }
}

/// Removes terminal escapes (`ESC [ ... m`) from `text`.
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// `redis-cli`'s `help` for every command shows the usage line and summary it read from our
/// `COMMAND DOCS` (so its hints, built from the same arguments, work too).
#[test]
fn redis_cli_help_shows_our_usage_and_summary() {
    if !program_available("redis-cli", "--version") || !program_available("script", "--version") {
        eprintln!("note: redis-cli or script is missing; the help test is skipped");
        return;
    }
    let server = TestServer::start();
    let mut client = server.raw();
    let names = our_commands(&mut client);
    let mut input = String::new();
    for name in &names {
        input.push_str(&format!("help {}\n", name.replace('|', " ")));
    }
    input.push_str("quit\n");
    let cli = format!("redis-cli -p {}", server.addr.port());
    let mut child = Command::new("script")
        .args(["-qec", &cli, "/dev/null"])
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    {
        use std::io::Write;
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let text = strip_escapes(&String::from_utf8_lossy(&output.stdout));
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let table = &server.server.commands;
    let mut missing = Vec::new();
    for (_, entry) in table.entries() {
        let doc = docs::lookup(&entry.full_name).expect("a doc");
        let usage = syntax::usage(&syntax::parse(doc.syntax).unwrap());
        let title = entry.full_name.replace('|', " ").to_uppercase();
        let want = format!("{title} {usage}");
        let summary = format!("summary: {}", entry.command.summary);
        let at = lines.iter().position(|l| l.trim_end() == want.trim_end());
        if at.is_none_or(|at| lines.get(at + 1) != Some(&summary.as_str())) {
            missing.push(format!("{want:?} then {summary:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "redis-cli did not show:\n{}\n\nit showed:\n{text}",
        missing.join("\n")
    );
}
