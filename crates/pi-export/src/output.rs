//! Where an export goes and what Pi says when it cannot: the output path rule shared by RPC
//! `export_html` and `pi --export <in> [out]`, and the error texts.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

/// RPC `export_html` without a session file (`--no-session`).
pub const IN_MEMORY_ERROR: &str = "Cannot export in-memory session to HTML";
/// RPC `export_html` before the session file has been written (no assistant reply yet).
pub const NOTHING_TO_EXPORT_ERROR: &str = "Nothing to export yet - start a conversation first";

/// Why an export failed; `Display` gives Pi's message.
#[derive(Debug)]
pub enum ExportError {
    /// `--export` of a path that does not exist (the absolute, resolved path).
    FileNotFound(PathBuf),
    /// `--export` of a non-empty file that is not a session.
    NotASession(PathBuf),
    /// A `file://` output path Node's `fileURLToPath` rejects; the message is Node's.
    InvalidFileUrl(&'static str),
    /// Reading the session file failed.
    Read { path: PathBuf, source: io::Error },
    /// Writing the page failed; `path` is the output path as reported (maybe relative).
    Write { path: PathBuf, source: io::Error },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::FileNotFound(p) => write!(f, "File not found: {}", p.display()),
            ExportError::NotASession(p) => {
                write!(f, "Session file is not a valid pi session: {}", p.display())
            }
            ExportError::InvalidFileUrl(message) => f.write_str(message),
            ExportError::Read { path, source } => node_fs_error(f, source, "open", path),
            ExportError::Write { path, source } => node_fs_error(f, source, "open", path),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::Read { source, .. } | ExportError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Node's fs error message (`EACCES: permission denied, open 'out.html'`) for the common
/// errno values; others fall back to the OS description.
fn node_fs_error(
    f: &mut fmt::Formatter<'_>,
    e: &io::Error,
    syscall: &str,
    path: &Path,
) -> fmt::Result {
    let known = match e.raw_os_error() {
        Some(2) => Some(("ENOENT", "no such file or directory")),
        Some(13) => Some(("EACCES", "permission denied")),
        Some(20) => Some(("ENOTDIR", "not a directory")),
        Some(21) => Some(("EISDIR", "illegal operation on a directory")),
        Some(28) => Some(("ENOSPC", "no space left on device")),
        Some(30) => Some(("EROFS", "read-only file system")),
        _ => None,
    };
    match known {
        Some((code, text)) => write!(f, "{code}: {text}, {syscall} '{}'", path.display()),
        None => write!(f, "{e}, {syscall} '{}'", path.display()),
    }
}

/// Pi's default output name: `pi-session-<file name without .jsonl>.html`, relative, so it
/// lands in the working directory (Node's `basename(file, ".jsonl")`).
pub fn default_output_path(session_file: &Path) -> PathBuf {
    let name = session_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.strip_suffix(".jsonl") {
        Some(stem) if !stem.is_empty() => stem,
        _ => name.as_str(),
    };
    PathBuf::from(format!("pi-session-{stem}.html"))
}

/// The path Pi reports for an output argument: `None` or empty means the default name;
/// otherwise `~` and `file://` URLs are expanded the way Pi's `normalizePath` does and
/// anything else is kept as given (relative paths stay relative).
pub fn output_path(
    output: Option<&Path>,
    session_file: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, ExportError> {
    let Some(output) = output.filter(|o| !o.as_os_str().is_empty()) else {
        return Ok(default_output_path(session_file));
    };
    let text = output.to_string_lossy();
    if let Some(home) = home {
        if text == "~" {
            return Ok(home.to_path_buf());
        }
        if let Some(rest) = text.strip_prefix("~/") {
            return Ok(lexical_normalize(&home.join(rest)));
        }
    }
    if text.starts_with("file://") {
        return file_url_to_path(&text);
    }
    Ok(output.to_path_buf())
}

/// Writes `html` for a session stored at `session_file` (RPC `export_html`): to `output`
/// as [`output_path`] decides, relative paths taken from `cwd`. Returns the path as Pi
/// reports it. Whether there is a session file at all is the caller's check
/// ([`IN_MEMORY_ERROR`], [`NOTHING_TO_EXPORT_ERROR`]).
pub fn write_export(
    html: &str,
    session_file: &Path,
    output: Option<&Path>,
    cwd: &Path,
) -> Result<PathBuf, ExportError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let reported = output_path(output, session_file, home.as_deref())?;
    std::fs::write(cwd.join(&reported), html).map_err(|source| ExportError::Write {
        path: reported.clone(),
        source,
    })?;
    Ok(reported)
}

/// `pi --export <session_path> [output]`: reads the session file (relative to `cwd`), renders
/// it as Pi's `exportFromFile` does (no system prompt or tools beyond what the file holds) and
/// writes it. Never modifies the session file, unlike Pi, which repairs torn last lines and
/// migrates old versions in place.
pub fn export_session_file(
    session_path: &Path,
    output: Option<&Path>,
    cwd: &Path,
) -> Result<PathBuf, ExportError> {
    export_session_file_with(session_path, output, cwd, &crate::ExportOptions::default())
}

/// [`export_session_file`] with options (the RPC `export_html` passes the theme).
pub fn export_session_file_with(
    session_path: &Path,
    output: Option<&Path>,
    cwd: &Path,
    options: &crate::ExportOptions,
) -> Result<PathBuf, ExportError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let resolved = resolve_input(session_path, cwd, home.as_deref())?;
    if !resolved.exists() {
        return Err(ExportError::FileNotFound(resolved));
    }
    let bytes = std::fs::read(&resolved).map_err(|source| ExportError::Read {
        path: resolved.clone(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let session = match crate::load::parse_session_text(&text) {
        Some(session) => session,
        // Pi turns an empty file into a new session (writing a header into it); we render the
        // same empty session without touching the file.
        None if bytes.is_empty() => crate::load::LoadedSession {
            header: empty_header(cwd),
            entries: Vec::new(),
            leaf: None,
        },
        None => return Err(ExportError::NotASession(resolved)),
    };
    let html = crate::render_session_html(
        &session.header,
        &session.entries,
        session.leaf.as_deref(),
        options,
    );
    write_export(&html, &resolved, output, cwd)
}

fn empty_header(cwd: &Path) -> pi_protocol::session_entry::SessionHeader {
    pi_protocol::session_entry::SessionHeader {
        version: Some(pi_protocol::session_entry::CURRENT_SESSION_VERSION),
        id: String::new(),
        timestamp: String::new(),
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session: None,
        rest: Default::default(),
    }
}

/// Pi's `resolvePath`: `~`/`file://` expansion, then absolute against `cwd`, normalized.
fn resolve_input(input: &Path, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, ExportError> {
    let text = input.to_string_lossy();
    let expanded = match home {
        Some(home) if text == "~" => home.to_path_buf(),
        Some(home) if text.starts_with("~/") => home.join(&text[2..]),
        _ if text.starts_with("file://") => file_url_to_path(&text)?,
        _ => input.to_path_buf(),
    };
    Ok(lexical_normalize(&cwd.join(expanded)))
}

/// Node's `path.resolve` normalization: drops `.`, applies `..` textually, no symlinks.
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Node's `fileURLToPath` on POSIX: host empty or `localhost`, query and fragment dropped,
/// dot segments resolved, percent-escapes decoded (but never to `/`).
fn file_url_to_path(url: &str) -> Result<PathBuf, ExportError> {
    let rest = &url["file://".len()..];
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (host, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return Err(ExportError::InvalidFileUrl(
            "File URL host must be \"localhost\" or empty on linux",
        ));
    }
    if path.to_ascii_lowercase().contains("%2f") {
        return Err(ExportError::InvalidFileUrl(
            "File URL path must not include encoded / characters",
        ));
    }
    let decoded = percent_decode(path).ok_or(ExportError::InvalidFileUrl("URI malformed"))?;
    Ok(lexical_normalize(Path::new(&decoded)))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(output: Option<&str>, session: &str) -> Result<PathBuf, String> {
        output_path(
            output.map(Path::new),
            Path::new(session),
            Some(Path::new("/home/u")),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn default_name_is_relative_and_strips_one_jsonl_suffix() {
        let cases = [
            (
                "/s/2025-01-01T00-00-00-000Z_abc.jsonl",
                "pi-session-2025-01-01T00-00-00-000Z_abc.html",
            ),
            ("/s/a.jsonl.jsonl", "pi-session-a.jsonl.html"),
            ("/s/.jsonl", "pi-session-.jsonl.html"),
            ("/s/x.JSONL", "pi-session-x.JSONL.html"),
            ("/s/plain", "pi-session-plain.html"),
            ("rel/b.jsonl", "pi-session-b.html"),
        ];
        for (session, expected) in cases {
            assert_eq!(out(None, session), Ok(PathBuf::from(expected)), "{session}");
            assert_eq!(
                out(Some(""), session),
                Ok(PathBuf::from(expected)),
                "{session}"
            );
        }
    }

    #[test]
    fn explicit_outputs_expand_like_normalize_path() {
        let s = "/s/a.jsonl";
        assert_eq!(out(Some("x.html"), s), Ok(PathBuf::from("x.html")));
        assert_eq!(out(Some("../x.html"), s), Ok(PathBuf::from("../x.html")));
        assert_eq!(
            out(Some("/tmp/x.html"), s),
            Ok(PathBuf::from("/tmp/x.html"))
        );
        assert_eq!(out(Some("~"), s), Ok(PathBuf::from("/home/u")));
        assert_eq!(
            out(Some("~/e/x.html"), s),
            Ok(PathBuf::from("/home/u/e/x.html"))
        );
        assert_eq!(out(Some("~x.html"), s), Ok(PathBuf::from("~x.html")));
        assert_eq!(
            out(Some("file:///tmp/a%20b.html"), s),
            Ok(PathBuf::from("/tmp/a b.html"))
        );
        assert_eq!(
            out(Some("file://localhost/tmp/a/../b?q#f"), s),
            Ok(PathBuf::from("/tmp/b"))
        );
        assert_eq!(
            out(Some("file://host/x"), s),
            Err("File URL host must be \"localhost\" or empty on linux".into())
        );
        assert_eq!(
            out(Some("file:///a%2Fb"), s),
            Err("File URL path must not include encoded / characters".into())
        );
        assert_eq!(out(Some("file:///a%zz"), s), Err("URI malformed".into()));
    }

    #[test]
    fn error_texts_are_pis() {
        assert_eq!(IN_MEMORY_ERROR, "Cannot export in-memory session to HTML");
        assert_eq!(
            NOTHING_TO_EXPORT_ERROR,
            "Nothing to export yet - start a conversation first"
        );
        assert_eq!(
            ExportError::FileNotFound("/w/missing.jsonl".into()).to_string(),
            "File not found: /w/missing.jsonl"
        );
        assert_eq!(
            ExportError::NotASession("/w/x.txt".into()).to_string(),
            "Session file is not a valid pi session: /w/x.txt"
        );
        let write = ExportError::Write {
            path: "pi-session-a.html".into(),
            source: io::Error::from_raw_os_error(13),
        };
        assert_eq!(
            write.to_string(),
            "EACCES: permission denied, open 'pi-session-a.html'"
        );
    }

    #[test]
    fn inputs_resolve_against_cwd() {
        let cwd = Path::new("/work/proj");
        let r = |p: &str| resolve_input(Path::new(p), cwd, Some(Path::new("/home/u"))).ok();
        assert_eq!(r("s.jsonl"), Some(PathBuf::from("/work/proj/s.jsonl")));
        assert_eq!(r("../x/./s.jsonl"), Some(PathBuf::from("/work/x/s.jsonl")));
        assert_eq!(r("/abs/s.jsonl"), Some(PathBuf::from("/abs/s.jsonl")));
        assert_eq!(r("~/s.jsonl"), Some(PathBuf::from("/home/u/s.jsonl")));
    }
}
