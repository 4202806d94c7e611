//! The host's JavaScript ships inside the binary and is written to a cache folder named by its
//! content hash on first use, so nothing needs installing and two versions never mix.

use std::io;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// Where the host runs from: `$PI_EXT_HOST_DIR` (a source checkout's `js/`, for development),
/// else the installed copy of the embedded files.
pub fn host_dir() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_EXT_HOST_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let root = cache_root().join(format!("ext-host-{HASH}"));
    if !root.join("js/main.mjs").is_file() {
        install(&root)?;
    }
    Ok(root.join("js"))
}

/// Installs the host's files and unpacks its packages with `node`, so a first start is fast
/// (for test suites that start many hosts at once on a fresh cache).
pub fn prepare(node: &Path) -> io::Result<()> {
    let dir = host_dir()?;
    let status = std::process::Command::new(node)
        .arg(dir.join("main.mjs"))
        .arg("--prepare")
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "preparing the extension host failed: {status}"
        )))
    }
}

/// `$XDG_CACHE_HOME/pi-rs`, else `~/.cache/pi-rs`, else the temp folder.
fn cache_root() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    base.join("pi-rs")
}

/// Writes every file into a fresh sibling folder and renames it into place, so a concurrent
/// start sees either nothing or the whole tree.
fn install(root: &Path) -> io::Result<()> {
    let parent = root.parent().unwrap_or(root);
    std::fs::create_dir_all(parent)?;
    let staging = parent.join(format!(
        ".{}.{}.tmp",
        root.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("ext-host"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    for (rel, bytes) in FILES {
        let path = staging.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, bytes)?;
    }
    match std::fs::rename(&staging, root) {
        Ok(()) => Ok(()),
        // Another process installed the same files first.
        Err(_) if root.join("js/main.mjs").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}
