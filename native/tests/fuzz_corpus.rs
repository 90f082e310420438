//! Replays the fuzz corpus on the stable toolchain: every file under `native/fuzz/corpus/<target>/`
//! and `native/fuzz/regressions/<target>/` goes through the same checks the cargo-fuzz targets
//! run (`tests/fuzz_checks/mod.rs`), plus truncations and byte flips of the pure-decoder inputs.
//! Inputs that once failed are kept in `regressions/<target>/`.

mod fuzz_checks;

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use fuzz_checks::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none if the directory does not exist).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(fuzz_dir().join(kind).join(target)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file() && !is_note(p)).collect();
    files.sort();
    files
}

fn is_note(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "md" || e == "txt")
}

fn check(target: &str) -> fn(&[u8]) {
    TARGETS.iter().find(|(name, _)| *name == target).map(|(_, check)| *check).unwrap()
}

/// Runs `check` on every input, reporting all failing files at once.
fn replay(check: fn(&[u8]), files: &[PathBuf]) -> usize {
    let mut failures = Vec::new();
    for file in files {
        let bytes = fs::read(file).unwrap();
        if panic::catch_unwind(AssertUnwindSafe(|| check(&bytes))).is_err() {
            failures.push(file.display().to_string());
        }
    }
    assert!(failures.is_empty(), "{} input(s) failed:\n{}", failures.len(), failures.join("\n"));
    files.len()
}

fn replay_target(target: &str) {
    let corpus = inputs("corpus", target);
    assert!(!corpus.is_empty(), "no corpus for {target} in {}", fuzz_dir().display());
    replay(check(target), &corpus);
    replay(check(target), &inputs("regressions", target));
}

#[test]
fn frame_header_corpus() {
    replay_target("frame_header");
}

#[test]
fn hello_corpus() {
    replay_target("hello");
}

#[test]
fn addr_corpus() {
    replay_target("addr");
}

#[test]
fn control_frames_corpus() {
    replay_target("control_frames");
}

#[test]
fn tags_credits_corpus() {
    replay_target("tags_credits");
}

#[test]
fn stream_corpus() {
    replay_target("stream");
}

#[test]
fn negotiation_corpus() {
    replay_target("negotiation");
}

/// Every prefix of every pure-decoder corpus input (not the two simulated connections), and each of its first 64 bytes flipped in a
/// few ways: cheap neighbours of the seeds, where boundary mistakes live.
#[test]
fn mutated_corpus() {
    let mut runs = 0;
    for (target, check) in TARGETS.iter().filter(|(name, _)| !matches!(*name, "stream" | "negotiation")) {
        for file in inputs("corpus", target) {
            let bytes = fs::read(&file).unwrap();
            let mut variants: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
            let flips: [fn(u8) -> u8; 6] =
                [|b| b ^ 0x01, |b| b ^ 0x80, |_| 0x00, |_| 0xff, |b| b.wrapping_add(1), |b| b.wrapping_sub(1)];
            for at in 0..bytes.len().min(64) {
                for flip in flips {
                    let mut variant = bytes.clone();
                    variant[at] = flip(variant[at]);
                    variants.push(variant);
                }
            }
            for variant in &variants {
                if panic::catch_unwind(AssertUnwindSafe(|| check(variant))).is_err() {
                    panic!("{target}: a variant of {} failed: {variant:02x?}", file.display());
                }
            }
            runs += variants.len();
        }
    }
    assert!(runs > 1000, "only {runs} variants");
}

/// The corpus directories and the fuzz targets name the same set of targets.
#[test]
fn targets_match_the_fuzz_project() {
    let mut files: Vec<String> = fs::read_dir(fuzz_dir().join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut names: Vec<String> = TARGETS.iter().map(|(name, _)| name.to_string()).collect();
    names.sort();
    assert_eq!(files, names);
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for name in &names {
        assert!(manifest.contains(&format!("name = \"{name}\"")), "{name} is not a [[bin]] of fuzz/Cargo.toml");
    }
}
