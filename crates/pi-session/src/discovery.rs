//! Finding sessions without loading them: `--continue` (most recent), `--session <id or prefix>`,
//! `--session-id`, and listings. Only headers are read (at most 1 MiB each), except to order
//! several sessions that match one id prefix, where Pi's "last activity" needs a scan of those
//! files.

use crate::content_text::raw_content_text;
use crate::error::{Result, SessionError};
use crate::paths::{absolute, default_session_dir, resolve_path};
use crate::read::{as_header, parse_line};
use crate::store::{NewSession, SessionStore};
use pi_js::time::parse_iso_ms;
use pi_js::trim as js_trim;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Discovery reads at most this much of a file looking for its header.
const HEADER_SCAN_LIMIT: usize = 1 << 20;

/// Reads the header of a session file: the first parsed line if it is a header, `None` if it is
/// something else or there is none. Fails if no line ends within the first 1 MiB.
pub fn read_session_header(path: &Path) -> Result<Option<Map<String, Value>>> {
    let file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    let mut reader = BufReader::with_capacity(4096, file.take(HEADER_SCAN_LIMIT as u64 + 1));
    let mut line = Vec::new();
    let mut scanned = 0usize;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| SessionError::io(path, e))?;
        scanned += n;
        let complete = line.last() == Some(&b'\n');
        if !complete && scanned > HEADER_SCAN_LIMIT {
            return Err(SessionError::HeaderScanLimit(path.to_path_buf()));
        }
        if n == 0 {
            return Ok(None);
        }
        if complete {
            line.pop();
        }
        if let Some(value) = parse_line(&String::from_utf8_lossy(&line)) {
            return Ok(as_header(value));
        }
        if !complete {
            return Ok(None);
        }
    }
}

fn header_for_discovery(path: &Path) -> Option<Map<String, Value>> {
    read_session_header(path).ok().flatten()
}

fn header_str<'a>(h: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    h.get(key).and_then(Value::as_str)
}

/// Where sessions are looked up: the cwd, the agent dir, and the chosen session directory
/// (`--session-dir` etc., see [`crate::paths::choose_session_dir`]).
#[derive(Debug, Clone)]
pub struct SessionScope {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub session_dir: Option<PathBuf>,
}

impl SessionScope {
    /// The directory sessions of this cwd live in.
    pub fn dir(&self) -> PathBuf {
        match &self.session_dir {
            Some(d) => d.clone(),
            None => default_session_dir(&self.cwd, &self.agent_dir),
        }
    }

    /// A custom directory may hold sessions of other projects: then only headers whose cwd is
    /// this cwd count.
    fn cwd_filter(&self) -> Option<PathBuf> {
        let custom = self.session_dir.as_ref()?;
        let default = default_session_dir(&self.cwd, &self.agent_dir);
        (absolute(custom) != default).then(|| absolute(&self.cwd))
    }
}

fn cwd_matches(header: &Map<String, Value>, filter: Option<&Path>) -> bool {
    let Some(cwd) = filter else {
        return true;
    };
    match header_str(header, "cwd") {
        Some(c) if !c.is_empty() => absolute(Path::new(c)) == cwd,
        _ => false,
    }
}

/// `*.jsonl` files of `dir`, sorted by name.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

fn mtime_ms(path: &Path) -> Option<f64> {
    let m = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(m.duration_since(UNIX_EPOCH).ok()?.as_secs_f64() * 1000.0)
}

/// `--continue`: the session with the newest modification time whose header is valid (and
/// matches the cwd in a custom directory).
pub fn find_most_recent_session(scope: &SessionScope) -> Option<PathBuf> {
    let filter = scope.cwd_filter();
    let mut files: Vec<(f64, PathBuf)> = jsonl_files(&scope.dir())
        .into_iter()
        .filter_map(|p| Some((mtime_ms(&p)?, p)))
        .collect();
    files.sort_by(|a, b| b.0.total_cmp(&a.0));
    files
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| header_for_discovery(p).is_some_and(|h| cwd_matches(&h, filter.as_deref())))
}

/// `--session-id <id>`: the file in the scope's directory whose header has exactly this id.
pub fn find_session_by_id(scope: &SessionScope, id: &str) -> Option<PathBuf> {
    let filter = scope.cwd_filter();
    jsonl_files(&scope.dir()).into_iter().find(|p| {
        header_for_discovery(p)
            .is_some_and(|h| header_str(&h, "id") == Some(id) && cwd_matches(&h, filter.as_deref()))
    })
}

impl SessionStore {
    /// `--continue`: opens the most recent session of the scope, or starts a new one there.
    pub fn continue_recent(scope: &SessionScope) -> Result<SessionStore> {
        let dir = scope.dir();
        match find_most_recent_session(scope) {
            Some(path) => SessionStore::open(&path, Some(&dir), Some(&scope.cwd)),
            None => SessionStore::create(&scope.cwd, &dir, NewSession::default()),
        }
    }
}

/// What `--session <arg>` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionLookup {
    /// The argument is a path (contains a separator or ends in `.jsonl`), resolved.
    Path(PathBuf),
    /// A session of this project.
    Local(PathBuf),
    /// A session of another project, with its cwd.
    Global {
        path: PathBuf,
        cwd: String,
    },
    NotFound,
}

/// Resolves `--session <arg>`: a path; else an exact id, then an id prefix, in this project;
/// else an exact id, then a prefix, across all projects (most recently active first).
pub fn resolve_session_arg(scope: &SessionScope, arg: &str) -> SessionLookup {
    if arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl") {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        return SessionLookup::Path(resolve_path(arg, &scope.cwd, &home));
    }
    if let Some(p) = find_session_by_id(scope, arg) {
        return SessionLookup::Local(p);
    }
    let filter = scope.cwd_filter();
    let local = headers_of(&jsonl_files(&scope.dir()))
        .into_iter()
        .filter(|(_, h)| cwd_matches(h, filter.as_deref()))
        .collect();
    if let Some((p, _)) = best_match(local, |id| id.starts_with(arg)) {
        return SessionLookup::Local(p);
    }
    let all_files: Vec<PathBuf> = match &scope.session_dir {
        Some(d) => jsonl_files(d),
        None => {
            let root = absolute(&scope.agent_dir).join("sessions");
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .map(|e| e.path())
                        .filter(|p| p.is_dir())
                        .collect()
                })
                .unwrap_or_default();
            dirs.sort();
            dirs.iter().flat_map(|d| jsonl_files(d)).collect()
        }
    };
    let all = headers_of(&all_files);
    let found = best_match(all.clone(), |id| id == arg)
        .or_else(|| best_match(all, |id| id.starts_with(arg)));
    match found {
        Some((path, h)) => SessionLookup::Global {
            path,
            cwd: header_str(&h, "cwd").unwrap_or_default().to_owned(),
        },
        None => SessionLookup::NotFound,
    }
}

/// A session file and its header.
type Candidate = (PathBuf, Map<String, Value>);

fn headers_of(files: &[PathBuf]) -> Vec<Candidate> {
    files
        .iter()
        .filter_map(|p| Some((p.clone(), header_for_discovery(p)?)))
        .collect()
}

/// The most recently active of the sessions whose id satisfies `pred`.
fn best_match(candidates: Vec<Candidate>, pred: impl Fn(&str) -> bool) -> Option<Candidate> {
    let mut matching: Vec<Candidate> = candidates
        .into_iter()
        .filter(|(_, h)| header_str(h, "id").is_some_and(&pred))
        .collect();
    if matching.len() > 1 {
        let mut keyed: Vec<(f64, Candidate)> = matching
            .into_iter()
            .filter_map(|c| Some((session_info(&c.0)?.modified, c)))
            .collect();
        keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
        matching = keyed.into_iter().map(|(_, c)| c).collect();
    }
    matching.into_iter().next()
}

/// A session as the session selector lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    pub name: Option<String>,
    pub parent_session_path: Option<String>,
    /// Header time, Unix ms (`None` if unreadable).
    pub created: Option<i64>,
    /// Last user/assistant activity, else the header time, else the file's mtime (Unix ms).
    pub modified: f64,
    pub message_count: u64,
    /// The first user message's text, or `(no messages)`.
    pub first_message: String,
    pub all_messages_text: String,
}

/// Scans one session file for its listing data (streaming; memory stays small).
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let file = File::open(path).ok()?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut header: Option<Map<String, Value>> = None;
    let (mut name, mut count, mut last_activity) = (None, 0u64, None::<f64>);
    let (mut first, mut all) = (String::new(), Vec::new());
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).ok()? == 0 {
            break;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        let Some(Value::Object(entry)) = parse_line(&String::from_utf8_lossy(&buf)) else {
            continue;
        };
        if header.is_none() {
            if entry.get("type").and_then(Value::as_str) != Some("session") {
                return None;
            }
            header = Some(entry);
            continue;
        }
        match entry.get("type").and_then(Value::as_str) {
            Some("session_info") => {
                name = entry
                    .get("name")
                    .and_then(Value::as_str)
                    .map(js_trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned);
                continue;
            }
            Some("message") => {}
            _ => continue,
        }
        count += 1;
        let Some(Value::Object(msg)) = entry.get("message") else {
            continue;
        };
        let role = msg.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "assistant")) || !msg.contains_key("content") {
            continue;
        }
        let t = match msg.get("timestamp") {
            Some(Value::Number(n)) => n.as_f64(),
            _ => entry
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(parse_iso_ms)
                .map(|ms| ms as f64),
        };
        if let Some(t) = t {
            last_activity = Some(last_activity.unwrap_or(0.0).max(t));
        }
        let Some(text) = msg.get("content").and_then(|c| raw_content_text(c, " ")) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        if first.is_empty() && role == Some("user") {
            first = text.clone();
        }
        all.push(text);
    }
    let header = header?;
    let created = header_str(&header, "timestamp").and_then(parse_iso_ms);
    let modified = match (last_activity, created) {
        (Some(t), _) if t > 0.0 => t,
        (_, Some(c)) => c as f64,
        _ => mtime_ms(path).unwrap_or(0.0),
    };
    Some(SessionInfo {
        path: path.to_path_buf(),
        id: header_str(&header, "id").unwrap_or_default().to_owned(),
        cwd: header_str(&header, "cwd").unwrap_or_default().to_owned(),
        name,
        parent_session_path: header_str(&header, "parentSession").map(str::to_owned),
        created,
        modified,
        message_count: count,
        first_message: if first.is_empty() {
            "(no messages)".to_owned()
        } else {
            first
        },
        all_messages_text: all.join(" "),
    })
}

/// Every session of the scope's directory (cwd-filtered in a custom directory), most recently
/// active first.
pub fn list_sessions(scope: &SessionScope) -> Vec<SessionInfo> {
    let filter = scope.cwd_filter();
    let mut out: Vec<SessionInfo> = jsonl_files(&scope.dir())
        .iter()
        .filter_map(|p| session_info(p))
        .filter(|s| match &filter {
            None => true,
            Some(cwd) => !s.cwd.is_empty() && absolute(Path::new(&s.cwd)) == *cwd,
        })
        .collect();
    out.sort_by(|a, b| b.modified.total_cmp(&a.modified));
    out
}
