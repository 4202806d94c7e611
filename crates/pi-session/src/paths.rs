//! Where sessions live: the session directory choice, the default per-cwd directory under the
//! agent dir, file names, and the path arithmetic of Node's `path` module that Pi relies on
//! (lexical, never touching the file system). POSIX paths only.

use pi_js::time::file_timestamp;
use std::path::{Path, PathBuf};

/// Pi's `normalizePath`: `~` and `~/...` expand to `home`, `file://` URLs become paths;
/// anything else is returned unchanged (relative paths stay relative).
pub fn normalize_path(input: &str, home: &Path) -> PathBuf {
    if input == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = input.strip_prefix("~/") {
        return join(home, Path::new(rest));
    }
    if let Some(rest) = input.strip_prefix("file://") {
        // `file:///x` (empty host) and `file://localhost/x` both mean `/x`.
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        return PathBuf::from(percent_decode(path));
    }
    PathBuf::from(input)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).and_then(|c| hex(*c)),
                b.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Lexical normalization as `path.normalize` does it: repeated and trailing separators, `.`
/// and resolvable `..` segments removed; an empty relative path becomes `.`.
pub fn normalize_lexically(p: &Path) -> PathBuf {
    let s = p.to_string_lossy();
    let absolute = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in s.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => PathBuf::from(format!("/{joined}")),
        (false, true) => PathBuf::from("."),
        (false, false) => PathBuf::from(joined),
    }
}

/// `path.join(a, b)`: concatenation, then [`normalize_lexically`].
pub fn join(a: &Path, b: &Path) -> PathBuf {
    let a = a.to_string_lossy();
    let b = b.to_string_lossy();
    let joined = match (a.is_empty(), b.is_empty()) {
        (true, true) => String::new(),
        (true, false) => b.into_owned(),
        (false, true) => a.into_owned(),
        (false, false) => format!("{a}/{b}"),
    };
    normalize_lexically(Path::new(&joined))
}

/// Pi's `resolvePath(input, base)`: [`normalize_path`], then absolute against `base`, normalized.
pub fn resolve_path(input: &str, base: &Path, home: &Path) -> PathBuf {
    let p = normalize_path(input, home);
    if p.is_absolute() {
        normalize_lexically(&p)
    } else {
        normalize_lexically(&base.join(p))
    }
}

/// A path made absolute against the process's current directory (lexically).
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize_lexically(p)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        normalize_lexically(&cwd.join(p))
    }
}

/// The directory name for a cwd: `--<cwd>--` with one leading separator dropped and every `/`,
/// `\` and `:` replaced by `-` (`/tmp/x/work` → `--tmp-x-work--`).
pub fn encode_cwd(resolved_cwd: &Path) -> String {
    let s = resolved_cwd.to_string_lossy();
    let s = s
        .strip_prefix('/')
        .or_else(|| s.strip_prefix('\\'))
        .unwrap_or(&s);
    format!("--{}--", s.replace(['/', '\\', ':'], "-"))
}

/// `<agentDir>/sessions/--<encoded cwd>--`, with both directories resolved.
pub fn default_session_dir(cwd: &Path, agent_dir: &Path) -> PathBuf {
    let cwd = absolute(cwd);
    join(&absolute(agent_dir), Path::new("sessions")).join(encode_cwd(&cwd))
}

/// The session directory the user chose, in Pi's precedence: `--session-dir`, then
/// `PI_CODING_AGENT_SESSION_DIR`, then the `sessionDir` setting; empty values count as unset.
/// `None` means the default directory ([`default_session_dir`]). `~` is expanded; relative paths
/// stay relative, as in Pi.
pub fn choose_session_dir(
    cli: Option<&str>,
    env: Option<&str>,
    setting: Option<&str>,
    home: &Path,
) -> Option<PathBuf> {
    [cli, env, setting]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .map(|s| normalize_path(s, home))
}

/// `<ts>_<id>.jsonl` for a header timestamp and session id.
pub fn session_file_name(iso_timestamp: &str, session_id: &str) -> String {
    format!("{}_{session_id}.jsonl", file_timestamp(iso_timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_cwd_like_pi() {
        assert_eq!(encode_cwd(Path::new("/tmp/x/work")), "--tmp-x-work--");
        assert_eq!(encode_cwd(Path::new("/")), "----");
        assert_eq!(encode_cwd(Path::new("/a:b\\c")), "--a-b-c--");
        assert_eq!(
            default_session_dir(Path::new("/w/p/"), Path::new("/h/.pi/agent/")),
            PathBuf::from("/h/.pi/agent/sessions/--w-p--")
        );
    }

    #[test]
    fn session_dir_precedence() {
        let home = Path::new("/home/u");
        assert_eq!(
            choose_session_dir(Some("~/s"), Some("/env"), Some("/set"), home),
            Some(PathBuf::from("/home/u/s"))
        );
        assert_eq!(
            choose_session_dir(Some(""), Some("/env"), Some("/set"), home),
            Some(PathBuf::from("/env"))
        );
        assert_eq!(
            choose_session_dir(None, None, Some("rel/dir"), home),
            Some(PathBuf::from("rel/dir"))
        );
        assert_eq!(choose_session_dir(None, Some(""), Some(""), home), None);
    }

    #[test]
    fn node_path_semantics() {
        assert_eq!(
            normalize_lexically(Path::new("/a//b/./c/../d/")),
            PathBuf::from("/a/b/d")
        );
        assert_eq!(normalize_lexically(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(
            normalize_lexically(Path::new("../x/..")),
            PathBuf::from("..")
        );
        assert_eq!(
            join(Path::new("./s"), Path::new("f.jsonl")),
            PathBuf::from("s/f.jsonl")
        );
        let home = Path::new("/h");
        assert_eq!(
            resolve_path("~/x", Path::new("/w"), home),
            PathBuf::from("/h/x")
        );
        assert_eq!(
            resolve_path("a/../b", Path::new("/w"), home),
            PathBuf::from("/w/b")
        );
        assert_eq!(
            resolve_path("file:///tmp/a%20b", Path::new("/w"), home),
            PathBuf::from("/tmp/a b")
        );
        assert_eq!(
            session_file_name("2026-11-29T23:46:16.125Z", "id"),
            "2026-11-29T23-46-16-125Z_id.jsonl"
        );
    }
}
