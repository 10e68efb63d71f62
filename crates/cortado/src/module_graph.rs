//! A test that the crate's modules import each other in one direction only (dependencies point
//! down): it reads every file under `src`, collects the module paths each one names
//! (`use crate::...`, `crate::...` in code, `super::...`), and looks for cycles among sibling
//! modules.
//!
//! A module naming its own ancestor or descendant is not an edge: a child module is part of its
//! parent's implementation (`sync::loading` uses `sync`'s private items, `sync` re-exports
//! `loading`'s types). Every other reference is an edge between the two siblings under the
//! nearest common ancestor that contain the two ends (`shard::tests` naming `unsync` is an edge
//! from `shard` to `unsync`), so a cycle between nested modules shows at the level where it
//! ties two siblings together. Test modules count like any other: a core whose tests build a
//! front end names that front end.
//!
//! Run it alone with `cargo test -p cortado --lib module_graph`. Not under Miri, whose isolation
//! forbids reading the files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root (`["sync", "loading"]`; empty for the root).
type ModPath = Vec<String>;

/// The module path of a source file, from its path relative to `src` (`sync/mod.rs`,
/// `shard/tests.rs`, `lib.rs`).
fn module_of_file(relative: &str) -> ModPath {
    let stem = relative.strip_suffix(".rs").unwrap_or(relative);
    let mut parts: ModPath = stem.split('/').map(str::to_string).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The line without its `//` comment and with string and character literals emptied, so that
/// neither a `crate::` in a doc nor a brace in a format string counts.
fn code_of(line: &str) -> String {
    let mut code = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                code.push('"');
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                code.push('"');
            }
            // A character literal ('{', '\''), not a lifetime ('a): its closing quote comes
            // within three characters.
            '\'' => {
                let ahead: String = chars.clone().take(3).collect();
                let literal = ahead.starts_with('\\') || ahead.chars().nth(1) == Some('\'');
                if literal {
                    let mut escaped = false;
                    for c in chars.by_ref() {
                        if c == '\'' && !escaped {
                            break;
                        }
                        escaped = c == '\\' && !escaped;
                    }
                    code.push_str("' '");
                } else {
                    code.push(c);
                }
            }
            _ => code.push(c),
        }
    }
    code
}

/// The paths that `tail` (the text after `crate::` or `super::`) names: one, or several for a
/// `{a, b::c}` group, each as its segments.
fn paths_in(tail: &str) -> Vec<Vec<String>> {
    let tail = tail.trim_start();
    if let Some(group) = tail.strip_prefix('{') {
        let mut depth = 0;
        let mut end = group.len();
        let mut items = Vec::new();
        let mut start = 0;
        for (at, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = at;
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..at]);
                    start = at + 1;
                }
                _ => {}
            }
        }
        items.push(&group[start..end]);
        return items
            .into_iter()
            .filter(|item| !item.trim().is_empty())
            .flat_map(paths_in)
            .collect();
    }
    let mut segments = Vec::new();
    let mut rest = tail;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_string());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(after) if after.starts_with('{') => {
                return paths_in(after)
                    .into_iter()
                    .map(|more| segments.iter().cloned().chain(more).collect())
                    .collect();
            }
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![segments]
}

/// The longest prefix of `segments` that is a known module.
fn resolve(segments: &[String], modules: &BTreeSet<ModPath>) -> ModPath {
    (0..=segments.len())
        .rev()
        .map(|len| segments[..len].to_vec())
        .find(|prefix| modules.contains(prefix))
        .unwrap_or_default()
}

/// Every module that the module at `file` (inline modules included) names, as (from, to).
fn references(
    file: &ModPath,
    source: &str,
    modules: &BTreeSet<ModPath>,
) -> Vec<(ModPath, ModPath)> {
    let mut found = Vec::new();
    // Inline modules (`mod tests { ... }`) open, with the brace depth at which each closes.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    for line in source.lines() {
        let code = code_of(line);
        let here: ModPath = file
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        for (at, _) in code.match_indices("crate::") {
            // `$crate::` in a macro names this crate too; a longer identifier ending in
            // `crate` does not.
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for path in paths_in(&code[at + "crate::".len()..]) {
                found.push((here.clone(), resolve(&path, modules)));
            }
        }
        for (at, _) in code.match_indices("super::") {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                // The second `super::` of `super::super::`, counted with the first.
                continue;
            }
            let mut base = here.clone();
            let mut tail = &code[at..];
            while let Some(after) = tail.strip_prefix("super::") {
                base.pop();
                tail = after;
            }
            for path in paths_in(tail) {
                let full: Vec<String> = base.iter().cloned().chain(path).collect();
                found.push((here.clone(), resolve(&full, modules)));
            }
        }
        let trimmed = code.trim_start();
        let declaration = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        let opens_inline = declaration
            .strip_prefix("mod ")
            .and_then(|rest| rest.trim_end().strip_suffix('{'))
            .map(|name| name.trim().to_string());
        for c in code.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|&(_, closes)| closes == depth) {
                        inline.pop();
                    }
                }
                _ => {}
            }
        }
        if let Some(name) = opens_inline {
            inline.push((name, depth - 1));
        }
    }
    found
}

/// The edge that a reference from `from` to `to` makes between siblings, if any: none when one
/// is an ancestor of the other.
fn sibling_edge(from: &ModPath, to: &ModPath) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The cycles among sibling modules of the crate whose files are `files` (path relative to
/// `src`, source): each as its modules, joined with `::`, sorted.
fn cycles(files: &[(String, String)]) -> Vec<Vec<String>> {
    let modules: BTreeSet<ModPath> = files.iter().map(|(path, _)| module_of_file(path)).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (path, source) in files {
        for (from, to) in references(&module_of_file(path), source, &modules) {
            if let Some((from, to)) = sibling_edge(&from, &to) {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    // Strongly connected components (Tarjan's algorithm), over the few dozen modules.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        components: Vec<Vec<String>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, node: &ModPath) {
            let at = self.index.len();
            self.index.insert(node.clone(), at);
            self.low.insert(node.clone(), at);
            self.stack.push(node.clone());
            self.on_stack.insert(node.clone());
            for next in self.edges.get(node).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node.clone(), low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node.clone(), low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(&member);
                    let done = &member == node;
                    component.push(member.join("::"));
                    if done {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in edges.keys() {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    tarjan.components.sort();
    tarjan.components
}

/// Every `.rs` file under `dir`, as (path relative to `root`, source).
fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read the source directory")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(root).expect("under the root");
            let relative = relative.to_string_lossy().replace('\\', "/");
            let source = std::fs::read_to_string(&path).expect("read a source file");
            out.push((relative, source));
        }
    }
}

fn files(sources: &[(&str, &str)]) -> Vec<(String, String)> {
    sources
        .iter()
        .map(|&(path, source)| (path.to_string(), source.to_string()))
        .collect()
}

#[test]
fn cycles_two_modules_naming_each_other_found() {
    let found = cycles(&files(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;"),
        ("a.rs", "use crate::b::Thing;"),
        ("b.rs", "pub struct Thing;\nfn f() { crate::c::g(); }"),
        ("c.rs", "use crate::{x, a::{Other}};"),
    ]));
    assert_eq!(found, vec![vec!["a", "b", "c"]]);
}

#[test]
fn cycles_parent_and_child_naming_each_other_not_a_cycle() {
    let found = cycles(&files(&[
        ("lib.rs", "mod sync;"),
        (
            "sync/mod.rs",
            "mod loading;\npub use loading::Entry;\nfn f() { crate::sync::loading::g(); }",
        ),
        ("sync/loading.rs", "use super::{read, Cache};"),
    ]));
    assert_eq!(found, Vec::<Vec<String>>::new());
}

#[test]
fn cycles_test_module_naming_front_end_found() {
    let found = cycles(&files(&[
        ("lib.rs", "mod core;\nmod front;"),
        ("core/mod.rs", "#[cfg(test)]\nmod tests;"),
        (
            "core/tests.rs",
            "use super::*;\nfn t() { let _ = crate::front::Cache::new(); }",
        ),
        ("front.rs", "use crate::core::Core;"),
    ]));
    assert_eq!(found, vec![vec!["core", "front"]]);
}

#[test]
fn cycles_inline_test_module_super_super_resolves_to_grandparent() {
    let found = cycles(&files(&[
        ("lib.rs", "mod a;\nmod shim;"),
        (
            "a.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::super::shim::model;\n    use super::*;\n}",
        ),
        ("shim.rs", "// crate::a is only named in a comment\nconst S: &str = \"crate::a\";"),
    ]));
    assert_eq!(found, Vec::<Vec<String>>::new());
}

#[test]
fn cycles_between_nested_siblings_found_at_their_level() {
    let found = cycles(&files(&[
        ("lib.rs", "mod policy;"),
        ("policy/mod.rs", "mod experts;\nmod wtinylfu;"),
        ("policy/experts.rs", "use super::wtinylfu::Mode;"),
        (
            "policy/wtinylfu.rs",
            "use super::experts::Experts;\nuse crate::policy::Deferral;",
        ),
    ]));
    assert_eq!(found, vec![vec!["policy::experts", "policy::wtinylfu"]]);
}

#[test]
fn crate_modules_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&src, &src, &mut sources);
    assert!(sources.len() > 20, "found only {} files", sources.len());
    let found = cycles(&sources);
    assert!(
        found.is_empty(),
        "modules that import each other (directly or through others): {found:?}"
    );
}
