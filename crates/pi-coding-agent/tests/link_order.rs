//! The release link order (`link/symbol-order.txt`, see build.rs) names functions by their
//! mangled symbols, which carry each crate's hash; the hashes change with the dependency graph.
//! A stale order links fine but keeps the startup functions apart again (idle RSS ~10 MB instead
//! of ~6 MB), so a change of Cargo.lock or of a manifest must come with
//! `scripts/gen-symbol-order`, which records the packages and a hash of the manifests it ran
//! with in `link/symbol-order.packages`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::path::Path;

/// `name version` of every package in a Cargo.lock, sorted (as the script writes them).
fn packages(lock: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut name = None;
    for line in lock.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("name = \"") {
            name = Some(n.trim_end_matches('"').to_owned());
        } else if let Some(v) = line.strip_prefix("version = \"")
            && let Some(n) = name.take()
        {
            out.push(format!("{n} {}", v.trim_end_matches('"')));
        }
    }
    out.sort();
    out
}

/// FNV-1a (64-bit) over every manifest of the workspace (path, a newline, then its bytes), in
/// path order, as the script computes it: a crate's dependencies or build-dependencies change
/// its symbol hashes without touching Cargo.lock.
fn manifests_hash(root: &Path) -> String {
    let mut paths = vec!["Cargo.toml".to_owned()];
    for dir in ["crates", "vendor"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            if entry.path().join("Cargo.toml").is_file() {
                let name = entry.file_name().to_string_lossy().into_owned();
                paths.push(format!("{dir}/{name}/Cargo.toml"));
            }
        }
    }
    paths.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for path in paths {
        let mut data = format!("{path}\n").into_bytes();
        data.extend(std::fs::read(root.join(&path)).unwrap());
        for b in data {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[test]
fn the_link_order_was_made_with_the_current_dependencies() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(manifest.join("../../Cargo.lock")).unwrap();
    let stamp = std::fs::read_to_string(manifest.join("link/symbol-order.packages")).unwrap();
    let now = packages(&lock);
    let (then, manifests): (Vec<String>, Vec<String>) = stamp
        .lines()
        .map(str::to_owned)
        .partition(|l| !l.starts_with("manifests "));
    let added: Vec<&String> = now.iter().filter(|p| !then.contains(p)).collect();
    let removed: Vec<&String> = then.iter().filter(|p| !now.contains(p)).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "Cargo.lock changed since the release link order was made (added {added:?}, removed \
         {removed:?}): run scripts/gen-symbol-order and commit both files in link/"
    );
    let root = manifest.join("../..");
    assert_eq!(
        manifests,
        vec![format!("manifests {}", manifests_hash(&root))],
        "a Cargo.toml changed since the release link order was made: run scripts/gen-symbol-order \
         and commit both files in link/"
    );
}
