//! The shape of `core/`, checked on its sources: its modules import each other one way (no
//! cycle), it names no `ucx1_sys` type and defines no C callback (those belong to `ucx/`), and it
//! reads no global settings (they are passed in).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn core_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments (line comments, doc comments included), so that a link in a
/// doc comment does not count as an import.
fn code(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The identifiers that follow `prefix` in `text`.
fn names_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

/// Module of core/ → the modules of core/ it refers to.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = core_dir();
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let module_of = |path: &Path| -> String {
        let relative = path.strip_prefix(&dir).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).filter(|m| m != "mod").collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(file);
        if module == "mod" {
            continue;
        }
        let text = code(&fs::read_to_string(file).unwrap());
        // In a file below a module's directory (conn/read.rs), `super::` is that module itself.
        let nested = file.parent() != Some(dir.as_path()) && !file.ends_with("mod.rs");
        let mut targets: Vec<&str> = names_after(&text, "crate::core::");
        if !nested {
            targets.extend(names_after(&text, "super::"));
        }
        let edges = graph.entry(module.clone()).or_default();
        for target in targets {
            if target != module && modules.contains(target) {
                edges.insert(target.to_string());
            }
        }
    }
    graph
}

/// A cycle of `graph` (its modules in order), if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if done.contains(node) {
            return None;
        }
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn core_modules_import_each_other_one_way() {
    let graph = graph();
    assert!(graph.contains_key("conn") && graph.contains_key("hub"), "core/ modules found: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("core/ has an import cycle: {}\nall imports: {graph:#?}", cycle.join(" -> "));
    }
}

#[test]
fn core_leaves_ucx_and_settings_to_others() {
    let mut files = Vec::new();
    sources(&core_dir(), &mut files);
    for file in files {
        let text = code(&fs::read_to_string(&file).unwrap());
        for forbidden in ["ucx1_sys", "extern \"C\"", "settings()"] {
            assert!(!text.contains(forbidden), "{} uses {forbidden}", file.display());
        }
    }
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&graph), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
