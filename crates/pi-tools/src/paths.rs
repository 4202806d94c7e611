//! Resolving the paths a model gives to absolute paths, as Pi does: Unicode spaces become plain
//! spaces, one leading `@` is dropped, `~` and `file://` URLs are expanded, relative paths resolve
//! against the session cwd, and the result is normalized lexically (Node's `path.resolve`).

use std::path::{Path, PathBuf};
use unicode_normalization::UnicodeNormalization;

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// The home directory as Node's `os.homedir()` reports it (`$HOME` first).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Percent-decodes the path of a `file://` URL; `None` if it is not a local file URL Node accepts.
fn file_url_to_path(url: &str) -> Option<String> {
    let rest = url.strip_prefix("file://")?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if !host.is_empty() && host != "localhost" {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                if v == b'/' {
                    return None;
                }
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Pi's `normalizePath` with Unicode-space normalization and `@` stripping.
pub fn expand_path(input: &str) -> String {
    let mut normalized: String = input
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if let Some(rest) = normalized.strip_prefix('@') {
        normalized = rest.to_string();
    }
    expand_home_and_url(&normalized)
}

fn expand_home_and_url(normalized: &str) -> String {
    if normalized == "~" {
        return home_dir().to_string_lossy().into_owned();
    }
    if let Some(rest) = normalized.strip_prefix("~/") {
        return join_str(&home_dir().to_string_lossy(), rest);
    }
    if let Some(path) = file_url_to_path(normalized) {
        return path;
    }
    normalized.to_string()
}

fn join_str(base: &str, rest: &str) -> String {
    normalize_lexically(&format!("{base}/{rest}"), false)
}

/// Node's `path.normalize` rules for POSIX: collapse `//`, drop `.`, fold `..`, and (when
/// `resolve` is set, as `path.resolve` does) drop a trailing slash.
fn normalize_lexically(path: &str, resolve: bool) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    let mut out = if absolute {
        format!("/{joined}")
    } else {
        joined
    };
    if out.is_empty() {
        out = ".".to_string();
    }
    if !resolve && path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Resolves a model-given path against `cwd` (Pi's `resolveToCwd`).
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(path);
    if expanded.starts_with('/') {
        return PathBuf::from(normalize_lexically(&expanded, true));
    }
    let base = expand_home_and_url(&cwd.to_string_lossy());
    PathBuf::from(normalize_lexically(&format!("{base}/{expanded}"), true))
}

/// `access(path, F_OK)`: follows symlinks, so a dangling link does not exist.
fn exists(path: &str) -> bool {
    std::fs::metadata(path).is_ok()
}

/// `read`'s resolution: if the path does not exist, tries the spellings macOS uses in screenshot
/// names (narrow no-break space before AM/PM, NFD, U+2019 for `'`, NFD with U+2019).
pub fn resolve_read_path(path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    let text = resolved.to_string_lossy().into_owned();
    if exists(&text) {
        return resolved;
    }
    let am_pm = am_pm_variant(&text);
    if am_pm != text && exists(&am_pm) {
        return PathBuf::from(am_pm);
    }
    let nfd: String = text.nfd().collect();
    if nfd != text && exists(&nfd) {
        return PathBuf::from(nfd);
    }
    let curly = text.replace('\'', "\u{2019}");
    if curly != text && exists(&curly) {
        return PathBuf::from(curly);
    }
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    if nfd_curly != text && exists(&nfd_curly) {
        return PathBuf::from(nfd_curly);
    }
    resolved
}

/// ` AM.`/` PM.` (any case) with U+202F instead of the space.
fn am_pm_variant(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(' ') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let marker = after.get(..3);
        if marker.is_some_and(|m| {
            let m = m.as_bytes();
            matches!(m[0].to_ascii_uppercase(), b'A' | b'P')
                && m[1].eq_ignore_ascii_case(&b'm')
                && m[2] == b'.'
        }) {
            out.push('\u{202f}');
            out.push_str(&after[..3]);
            rest = &after[3..];
        } else {
            out.push(' ');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_like_node() {
        let cwd = Path::new("/work/dir");
        assert_eq!(
            resolve_to_cwd("a/../b/./c/", cwd),
            PathBuf::from("/work/dir/b/c")
        );
        assert_eq!(
            resolve_to_cwd("@src/x.rs", cwd),
            PathBuf::from("/work/dir/src/x.rs")
        );
        assert_eq!(resolve_to_cwd("/x//y/..", cwd), PathBuf::from("/x"));
        assert_eq!(
            resolve_to_cwd("a\u{a0}b", cwd),
            PathBuf::from("/work/dir/a b")
        );
        assert_eq!(
            resolve_to_cwd("file:///tmp/a%20b", cwd),
            PathBuf::from("/tmp/a b")
        );
        assert_eq!(resolve_to_cwd(".", cwd), PathBuf::from("/work/dir"));
        assert_eq!(resolve_to_cwd("../../..", cwd), PathBuf::from("/"));
    }

    #[test]
    fn am_pm_gets_a_narrow_no_break_space() {
        assert_eq!(am_pm_variant("Shot 1.2 PM.png"), "Shot 1.2\u{202f}PM.png");
        assert_eq!(am_pm_variant("a am.b"), "a\u{202f}am.b");
    }
}
