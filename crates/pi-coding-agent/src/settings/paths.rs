//! Where Pi's files live, and path arithmetic with Node's semantics (`path.resolve`, `~`
//! expansion, `file://` URLs), so that the paths we report and compare are the ones Pi reports.
//!
//! * [`agent_dir`]: `PI_CODING_AGENT_DIR` (with `~` expanded) or `~/.pi/agent`.
//! * [`resolve_path`]: Pi's `resolvePath(input, base)`: `~` expansion, then `path.resolve`, which
//!   is lexical (`..` is not checked against symlinks) and drops trailing slashes.

use std::path::{Component, Path, PathBuf};

/// Name of the agent directory override.
pub const PI_CODING_AGENT_DIR: &str = "PI_CODING_AGENT_DIR";
/// Name of the session directory override.
pub const PI_CODING_AGENT_SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";
/// Name of the override of the folder holding the harness's README, docs and examples.
pub const PI_PACKAGE_DIR: &str = "PI_PACKAGE_DIR";
/// Project configuration folder (`<cwd>/.pi`) and the folder under `~` holding the agent dir.
pub const CONFIG_DIR_NAME: &str = ".pi";

/// The user's home directory as Node's `os.homedir()` finds it: `$HOME`, else the password
/// database (through `std::env::home_dir`, which does the same lookup).
pub fn home_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => std::env::home_dir().unwrap_or_else(|| PathBuf::from("/")),
    }
}

/// The agent directory, from the value of `PI_CODING_AGENT_DIR` (pass
/// `std::env::var(PI_CODING_AGENT_DIR).ok()`), made absolute against `cwd` as Pi's
/// `resolvePath(getAgentDir())` does.
pub fn agent_dir(env_value: Option<&str>, home: &Path, cwd: &Path) -> PathBuf {
    match env_value {
        Some(dir) if !dir.is_empty() => resolve_path(dir, cwd, home),
        _ => home.join(CONFIG_DIR_NAME).join("agent"),
    }
}

/// The folder the system prompt's `docs` section points to: `PI_PACKAGE_DIR` (with `~`
/// expanded) when set, else `default` (the folder the binary was installed with).
pub fn package_dir(env_value: Option<&str>, default: &Path, home: &Path) -> PathBuf {
    match env_value {
        Some(dir) if !dir.is_empty() => PathBuf::from(normalize_path(dir, home)),
        _ => default.to_path_buf(),
    }
}

/// Pi's `normalizePath`: a lone `~` or a leading `~/` becomes the home directory, and a
/// `file://` URL becomes its path. Nothing else changes (the result may still be relative).
pub fn normalize_path(input: &str, home: &Path) -> String {
    if input == "~" {
        return home.to_string_lossy().into_owned();
    }
    if let Some(rest) = input.strip_prefix("~/") {
        return home.join(rest).to_string_lossy().into_owned();
    }
    if let Some(url_path) = input.strip_prefix("file://") {
        // `fileURLToPath` needs an absolute path after the host part; keep it simple: an empty
        // host (`file:///x`) or `localhost`, with percent-escapes decoded.
        let path = url_path.strip_prefix("localhost").unwrap_or(url_path);
        return percent_decode(path);
    }
    input.to_string()
}

/// `resolvePath(input, base)`: [`normalize_path`], then Node's `path.resolve(base, input)`.
pub fn resolve_path(input: &str, base: &Path, home: &Path) -> PathBuf {
    let normalized = normalize_path(input, home);
    let p = Path::new(&normalized);
    if p.is_absolute() {
        lexical_normalize(p)
    } else {
        let base = normalize_path(&base.to_string_lossy(), home);
        lexical_normalize(&Path::new(&base).join(p))
    }
}

/// Like [`resolve_path`] with Pi's `trim: true` option (settings and CLI resource entries).
pub fn resolve_path_trimmed(input: &str, base: &Path, home: &Path) -> PathBuf {
    resolve_path(pi_js::trim(input), base, home)
}

/// Node's `path.resolve` on an already joined path: `.` dropped, `..` pops a component (never
/// above the root), repeated and trailing separators removed.
pub fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `realpath`, or the path itself when that fails (Pi's `canonicalizePath`).
pub fn canonicalize_or_self(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether `child` is `parent` or inside it, comparing resolved paths (Pi's `isPathWithin`).
pub fn is_path_within(parent: &Path, child: &Path) -> bool {
    let parent = lexical_normalize(parent);
    let child = lexical_normalize(child);
    child.starts_with(&parent)
}

/// A path as a string with `/` separators, for display and pattern matching.
pub fn to_posix(path: &Path) -> String {
    path.to_string_lossy()
        .replace(std::path::MAIN_SEPARATOR, "/")
}

/// Node's `path.relative(from, to)` for two absolute paths.
pub fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (lexical_normalize(from), lexical_normalize(to));
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_like_node() {
        let home = Path::new("/home/u");
        let base = Path::new("/work/proj");
        assert_eq!(
            resolve_path("a/../b/", base, home),
            Path::new("/work/proj/b")
        );
        assert_eq!(resolve_path("~/x", base, home), Path::new("/home/u/x"));
        assert_eq!(resolve_path("~", base, home), Path::new("/home/u"));
        assert_eq!(resolve_path("~x", base, home), Path::new("/work/proj/~x"));
        assert_eq!(resolve_path("/a/./b//c/..", base, home), Path::new("/a/b"));
        assert_eq!(resolve_path("../../..", base, home), Path::new("/"));
        assert_eq!(
            resolve_path("file:///tmp/a%20b", base, home),
            Path::new("/tmp/a b")
        );
        assert_eq!(
            resolve_path_trimmed("  x ", base, home),
            Path::new("/work/proj/x")
        );
    }

    #[test]
    fn agent_dir_from_env() {
        let home = Path::new("/home/u");
        let cwd = Path::new("/c");
        assert_eq!(agent_dir(None, home, cwd), Path::new("/home/u/.pi/agent"));
        assert_eq!(
            agent_dir(Some(""), home, cwd),
            Path::new("/home/u/.pi/agent")
        );
        assert_eq!(
            agent_dir(Some("~/cfg"), home, cwd),
            Path::new("/home/u/cfg")
        );
        assert_eq!(agent_dir(Some("rel"), home, cwd), Path::new("/c/rel"));
        assert_eq!(package_dir(Some("~/p"), cwd, home), Path::new("/home/u/p"));
        assert_eq!(package_dir(None, cwd, home), cwd);
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b/c/d")), "c/d");
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/x")), "../x");
        assert_eq!(relative(Path::new("/a"), Path::new("/a")), "");
        assert!(is_path_within(Path::new("/a/b"), Path::new("/a/b/c")));
        assert!(is_path_within(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_path_within(Path::new("/a/b"), Path::new("/a/bc")));
    }
}
