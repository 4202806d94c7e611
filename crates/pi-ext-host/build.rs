//! Embeds the extension host's JavaScript (`js/`, tests excluded) and the vendored npm tarballs
//! into the binary, with a content hash that names the folder they are installed into.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "node_modules" || name == "test" {
            continue;
        }
        let path = entry.path();
        let rel_name = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if path.is_dir() {
            collect(&path, &rel_name, out);
        } else {
            out.push((rel_name, path));
        }
    }
}

/// FNV-1a, 64 bits: stable across toolchains, which `DefaultHasher` is not.
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *hash ^= u64::from(*b);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = Vec::new();
    collect(&root.join("js"), "js", &mut files);
    collect(&root.join("vendor"), "vendor", &mut files);
    files.retain(|(rel, _)| !rel.ends_with(".sh") && !rel.ends_with("SHA256SUMS"));
    println!("cargo:rerun-if-changed=js");
    println!("cargo:rerun-if-changed=vendor");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut code =
        String::from("/// Every file the host needs: path under the install folder, contents.\n");
    code.push_str("pub(crate) static FILES: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        fnv(&mut hash, rel.as_bytes());
        fnv(&mut hash, &std::fs::read(path).unwrap_or_default());
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");
    let _ = writeln!(
        code,
        "/// Hash of every file's path and contents.\npub(crate) const HASH: &str = \"{hash:016x}\";"
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    let _ = std::fs::write(out.join("assets.rs"), code);
}
