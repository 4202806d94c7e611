//! `list_sessions`: the sessions of a directory (or of every project), newest first, a page at a
//! time, optionally filtered by text.
//!
//! Fast on thousands of sessions because the order needs no file content: the listing sorts
//! the directory entries by modification time (one `stat` each) and reads only the sessions of
//! the page it returns. Reading one is a byte scan, not a parse: `message` entries are counted
//! by their line prefix, and only the lines that matter (the header, the first user message,
//! `session_info`) are parsed. What a scan found is kept per file with its size and mtime;
//! sessions only ever grow by appends, so a file that grew is read from where the last scan
//! stopped, and an unchanged one is not read again.
//!
//! This differs from Pi's session selector on purpose: Pi reads and parses every file before
//! showing the first entry, and orders by the last message's time.

use crate::content_text::raw_content_text;
use crate::discovery::SessionScope;
use crate::paths::absolute;
use crate::read::{as_header, parse_line};
use pi_js::time::iso_from_ms;
use pi_protocol::additions::{SessionList, SessionSummary};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::UNIX_EPOCH;

/// Page size when the client gives none, and the largest it may ask for.
pub const DEFAULT_PAGE: usize = 50;
pub const MAX_PAGE: usize = 1000;

/// What to list.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// The sessions of `scope.cwd` (in `scope`'s directory), or with `all` every session.
    pub scope: SessionScope,
    pub all: bool,
    /// Case-insensitive text the name, id, cwd or a user or assistant message must contain.
    pub query: Option<String>,
    pub limit: usize,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// A malformed cursor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid cursor: {0}")]
pub struct InvalidCursor(pub String);

/// A session file in listing order: newest modification first, then by path (descending), so
/// the order is total and a cursor names a position in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    /// Negated nanoseconds since the epoch, so ascending order is newest first.
    age: i128,
    path: std::cmp::Reverse<PathBuf>,
}

impl Position {
    fn cursor(&self) -> String {
        format!("{}:{}", -self.age, self.path.0.display())
    }

    fn parse(cursor: &str) -> Result<Position, InvalidCursor> {
        let bad = || InvalidCursor(cursor.to_string());
        let (nanos, path) = cursor.split_once(':').ok_or_else(bad)?;
        let nanos: i128 = nanos.parse().map_err(|_| bad())?;
        Ok(Position {
            age: -nanos,
            path: std::cmp::Reverse(PathBuf::from(path)),
        })
    }
}

/// One page of sessions.
pub fn list_sessions(request: &ListRequest) -> Result<SessionList, InvalidCursor> {
    let after = request.cursor.as_deref().map(Position::parse).transpose()?;
    let dirs = listing_dirs(&request.scope, request.all);
    // A custom session directory may hold other projects' sessions (see `SessionScope`).
    let cwd_filter =
        (!request.all && request.scope.session_dir.is_some()).then(|| absolute(&request.scope.cwd));
    let mut files: Vec<(Position, u64)> = dirs.iter().flat_map(|d| jsonl_files(d)).collect();
    files.sort_unstable();
    let start = match &after {
        Some(a) => files.partition_point(|(p, _)| p <= a),
        None => 0,
    };
    let needle = request
        .query
        .as_deref()
        .map(pi_js::trim)
        .filter(|q| !q.is_empty())
        .map(Needle::new);
    let limit = request.limit.clamp(1, MAX_PAGE);
    let mut sessions = Vec::new();
    let mut last = None;
    for (position, len) in &files[start..] {
        if sessions.len() == limit {
            break;
        }
        last = Some(position);
        let path = &position.path.0;
        let Some(scan) = scan_cached(path, *len, position.age) else {
            continue;
        };
        if let Some(cwd) = &cwd_filter
            && (scan.cwd.is_empty() || absolute(Path::new(&scan.cwd)) != *cwd)
        {
            continue;
        }
        if let Some(needle) = &needle
            && !needle.matches_summary(&scan)
            && !needle.matches_messages(path)
        {
            continue;
        }
        sessions.push(summary(path, -position.age, scan));
    }
    let more = last.is_some_and(|l| files.last().is_some_and(|(p, _)| p != l));
    Ok(SessionList {
        sessions,
        next_cursor: last.filter(|_| more).map(Position::cursor),
    })
}

/// The directories a listing reads: the scope's own, or for `all` every project directory
/// under `<agentDir>/sessions` (a custom session directory holds every project itself).
fn listing_dirs(scope: &SessionScope, all: bool) -> Vec<PathBuf> {
    if !all || scope.session_dir.is_some() {
        return vec![scope.dir()];
    }
    let root = absolute(&scope.agent_dir).join("sessions");
    match std::fs::read_dir(&root) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The `*.jsonl` files of `dir` with their listing position and size.
fn jsonl_files(dir: &Path) -> Vec<(Position, u64)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".jsonl"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            if !meta.is_file() {
                return None;
            }
            let nanos = meta
                .modified()
                .ok()?
                .duration_since(UNIX_EPOCH)
                .ok()?
                .as_nanos() as i128;
            let position = Position {
                age: -nanos,
                path: std::cmp::Reverse(e.path()),
            };
            Some((position, meta.len()))
        })
        .collect()
}

/// What a scan of a session file found.
#[derive(Debug, Clone, Default)]
struct Scan {
    id: String,
    cwd: String,
    created: String,
    parent_session: Option<String>,
    /// The latest `session_info` name (trimmed; an empty one clears).
    name: Option<String>,
    message_count: u64,
    first_message: Option<String>,
    /// Bytes scanned: the end of the last complete line.
    offset: u64,
}

/// A scan and the file state it describes.
struct Cached {
    len: u64,
    age: i128,
    scan: Scan,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The scan of `path` (of size `len`, modified at `-age`): cached, continued from where the
/// cached scan stopped when the file grew, or done anew. `None` for a file that is not a
/// session.
fn scan_cached(path: &Path, len: u64, age: i128) -> Option<Scan> {
    let previous = {
        let cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        match cache.get(path) {
            Some(c) if c.len == len && c.age == age => return Some(c.scan.clone()),
            // Appends only: a file that grew continues; anything else is read anew.
            Some(c) if len > c.len => Some(c.scan.clone()),
            _ => None,
        }
    };
    let (complete, with_tail) = scan_file(path, previous)?;
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    cache.insert(
        path.to_path_buf(),
        Cached {
            len,
            age,
            scan: complete,
        },
    );
    Some(with_tail)
}

/// Reads a session file from the end of `previous` (or from the start): counts its messages
/// and finds its name and first user message. Returns the scan of the complete lines (where a
/// later scan continues) and the scan including an unterminated last line, which Pi counts
/// when it parses (a later append completes it, and it is read again then).
fn scan_file(path: &Path, previous: Option<Scan>) -> Option<(Scan, Scan)> {
    let mut file = File::open(path).ok()?;
    let mut have_header = previous.is_some();
    let mut scan = match previous {
        Some(s) => {
            file.seek(SeekFrom::Start(s.offset)).ok()?;
            s
        }
        None => Scan::default(),
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            if !have_header {
                return None;
            }
            let mut with_tail = scan.clone();
            scan_line(&mut with_tail, &line, false);
            return Some((scan, with_tail));
        }
        line.pop();
        scan.offset += n as u64;
        if !have_header {
            // The first line that parses must be the header (blank and broken lines before
            // it are skipped, as Pi skips them).
            let Some(value) = parse_line(&String::from_utf8_lossy(&line)) else {
                continue;
            };
            header_fields(&mut scan, &as_header(value)?);
            have_header = true;
            continue;
        }
        scan_line(&mut scan, &line, true);
    }
    have_header.then(|| (scan.clone(), scan))
}

fn header_fields(scan: &mut Scan, header: &Map<String, Value>) {
    let text = |k: &str| header.get(k).and_then(Value::as_str).map(str::to_string);
    scan.id = text("id").unwrap_or_default();
    scan.cwd = text("cwd").unwrap_or_default();
    scan.created = text("timestamp").unwrap_or_default();
    scan.parent_session = text("parentSession");
}

/// Entry types whose lines never change a listing (Pi writes `type` first).
const SKIPPED: &[&[u8]] = &[
    b"{\"type\":\"thinking_level_change\"",
    b"{\"type\":\"model_change\"",
    b"{\"type\":\"usage\"",
    b"{\"type\":\"compaction\"",
    b"{\"type\":\"branch_summary\"",
    b"{\"type\":\"custom\"",
    b"{\"type\":\"custom_message\"",
    b"{\"type\":\"context_edit\"",
    b"{\"type\":\"label\"",
];

fn scan_line(scan: &mut Scan, line: &[u8], complete: bool) {
    let is_message = line.starts_with(b"{\"type\":\"message\",");
    let needs_parse = !complete
        || line.starts_with(b"{\"type\":\"session_info\"")
        || (is_message && scan.first_message.is_none())
        || !(is_message || SKIPPED.iter().any(|p| line.starts_with(p)));
    if !needs_parse {
        if is_message {
            scan.message_count += 1;
        }
        return;
    }
    let Some(Value::Object(entry)) = parse_line(&String::from_utf8_lossy(line)) else {
        return;
    };
    match entry.get("type").and_then(Value::as_str) {
        Some("session_info") => {
            scan.name = entry
                .get("name")
                .and_then(Value::as_str)
                .map(pi_js::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string);
        }
        Some("message") => {
            scan.message_count += 1;
            if scan.first_message.is_none() {
                scan.first_message = user_text(&entry);
            }
        }
        _ => {}
    }
}

/// The text of a `message` entry's user message, when it has any (Pi's `firstMessage`).
fn user_text(entry: &Map<String, Value>) -> Option<String> {
    let message = entry.get("message")?.as_object()?;
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    raw_content_text(message.get("content")?, " ").filter(|t| !t.is_empty())
}

fn summary(path: &Path, modified_nanos: i128, scan: Scan) -> SessionSummary {
    SessionSummary {
        path: path.to_string_lossy().into_owned(),
        id: scan.id,
        cwd: scan.cwd,
        name: scan.name,
        parent_session_path: scan.parent_session,
        created: scan.created,
        modified: iso_from_ms((modified_nanos / 1_000_000) as i64),
        message_count: scan.message_count,
        first_message: scan.first_message,
    }
}

/// A text filter: Unicode-lowercase substring matching.
struct Needle {
    lower: String,
    /// The needle can be looked for in the raw bytes of a file (ASCII-case-insensitively) to
    /// skip files without it: it is ASCII without the characters JSON escapes.
    raw: Option<Vec<u8>>,
}

impl Needle {
    fn new(query: &str) -> Needle {
        let lower = query.to_lowercase();
        let raw = lower
            .bytes()
            .all(|b| b.is_ascii() && b >= 0x20 && b != b'"' && b != b'\\')
            .then(|| lower.as_bytes().to_vec());
        Needle { lower, raw }
    }

    fn matches(&self, text: &str) -> bool {
        text.to_lowercase().contains(&self.lower)
    }

    fn matches_summary(&self, scan: &Scan) -> bool {
        [
            Some(&scan.id),
            Some(&scan.cwd),
            scan.name.as_ref(),
            scan.first_message.as_ref(),
        ]
        .into_iter()
        .flatten()
        .any(|t| self.matches(t))
    }

    /// Whether the text of a user or assistant message of the file contains the needle.
    fn matches_messages(&self, path: &Path) -> bool {
        let mut bytes = Vec::new();
        if File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .is_err()
        {
            return false;
        }
        let finder = self.raw.as_deref().and_then(|raw| {
            // Characters whose lowercase is ASCII (KELVIN SIGN, capital I with dot) would
            // match a needle the raw bytes do not contain: such files are parsed whole.
            let special = memchr::memmem::find(&bytes, "\u{212a}".as_bytes()).is_some()
                || memchr::memmem::find(&bytes, "\u{130}".as_bytes()).is_some();
            (!special).then(|| memchr::memmem::Finder::new(raw))
        });
        if let Some(finder) = &finder {
            bytes.make_ascii_lowercase();
            if finder.find(&bytes).is_none() {
                return false;
            }
        }
        for line in bytes.split(|b| *b == b'\n') {
            if !line.starts_with(b"{\"type\":\"message\"") && line.starts_with(b"{\"type\":\"") {
                continue;
            }
            if finder.as_ref().is_some_and(|f| f.find(line).is_none()) {
                continue;
            }
            // The bytes were lowercased for the search; the text is compared lowercased anyway.
            let Some(Value::Object(entry)) = parse_line(&String::from_utf8_lossy(line)) else {
                continue;
            };
            let Some(message) = entry.get("message").and_then(Value::as_object) else {
                continue;
            };
            if !matches!(
                message.get("role").and_then(Value::as_str),
                Some("user" | "assistant")
            ) {
                continue;
            }
            if message
                .get("content")
                .and_then(|c| raw_content_text(c, " "))
                .is_some_and(|t| self.matches(&t))
            {
                return true;
            }
        }
        false
    }
}
