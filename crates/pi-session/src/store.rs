//! [`SessionStore`]: one session's header and entries in file order, the id index, labels and
//! the leaf, bound to its file (or in memory). Opening, creating and switching live here;
//! appending is in `append`, reading views in `context`, `tree`, `queries` and `fork`.

use crate::error::{Result, SessionError};
use crate::id_index::IdIndex;
use crate::ids::{uuid_v7, validate_session_id};
use crate::lenient::entry_from_map;
use crate::migrate::migrate;
use crate::paths::{absolute, default_session_dir, join, normalize_lexically, session_file_name};
use crate::read::{Body, FileContent, ReadOutcome, read_session_file};
use crate::writer::{SessionFile, terminate_last_line};
use indexmap::IndexMap;
use pi_js::json::{to_js_string, write_js};
use pi_js::time::now_iso;
use pi_protocol::message::AgentMessage;
use pi_protocol::record::Rest;
use pi_protocol::session_entry::{CURRENT_SESSION_VERSION, SessionEntry, SessionHeader};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The current label of an entry and when it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub label: String,
    pub timestamp: String,
}

/// Options for a new session.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// An explicit session id (`--session-id`); a UUIDv7 otherwise.
    pub id: Option<String>,
    /// The header's `parentSession`.
    pub parent_session: Option<String>,
}

/// A session: header, entries (all branches, file order), labels and the current leaf.
///
/// Appends go to the file before they return (see `append`); nothing is ever rewritten except by
/// a migration or when an empty file is initialized.
#[derive(Debug)]
pub struct SessionStore {
    pub(crate) cwd: PathBuf,
    /// Where new session files go (`None` for an in-memory session).
    pub(crate) session_dir: Option<PathBuf>,
    pub(crate) header: Map<String, Value>,
    pub(crate) entries: Vec<SessionEntry>,
    /// Entry id → position of the last entry with that id.
    pub(crate) by_id: IdIndex,
    /// Target id → label, in JavaScript `Map` order (a cleared and re-set label moves last).
    pub(crate) labels: IndexMap<String, Label>,
    pub(crate) leaf: Option<String>,
    pub(crate) file: Option<SessionFile>,
    /// Whether any entry is a user or assistant message (the condition for creating the file).
    pub(crate) has_conversation: bool,
}

pub(crate) fn is_conversation(entry: &SessionEntry) -> bool {
    matches!(entry, SessionEntry::Message(m) if matches!(m.message.role(), "user" | "assistant"))
}

/// The header of a new session file, as the object the store keeps (a header read from a file
/// stays the object it was, whatever keys it has).
pub(crate) fn new_header(
    id: &str,
    timestamp: &str,
    cwd: &Path,
    parent_session: Option<String>,
) -> Result<Map<String, Value>> {
    let header = SessionHeader {
        version: Some(CURRENT_SESSION_VERSION),
        id: id.to_owned(),
        timestamp: timestamp.to_owned(),
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session,
        rest: Rest::default(),
    };
    Ok(serde_json::from_value(serde_json::to_value(&header)?)?)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))
}

impl SessionStore {
    fn blank(cwd: &Path, session_dir: Option<PathBuf>) -> SessionStore {
        SessionStore {
            cwd: absolute(cwd),
            session_dir,
            header: Map::new(),
            entries: Vec::new(),
            by_id: IdIndex::default(),
            labels: IndexMap::new(),
            leaf: None,
            file: None,
            has_conversation: false,
        }
    }

    /// A new session whose file goes to `session_dir` (created now) once it has a conversation.
    pub fn create(cwd: &Path, session_dir: &Path, options: NewSession) -> Result<SessionStore> {
        let dir = PathBuf::from(session_dir);
        create_dir(&dir)?;
        let mut s = SessionStore::blank(cwd, Some(dir));
        s.new_session(options)?;
        Ok(s)
    }

    /// A new session in the default directory for `cwd` under `agent_dir`.
    pub fn create_default(
        cwd: &Path,
        agent_dir: &Path,
        options: NewSession,
    ) -> Result<SessionStore> {
        SessionStore::create(cwd, &default_session_dir(cwd, agent_dir), options)
    }

    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: &Path, options: NewSession) -> Result<SessionStore> {
        let mut s = SessionStore::blank(cwd, None);
        s.new_session(options)?;
        Ok(s)
    }

    /// Opens the session file at `path` (`--session <path>`, `switch_session`, resume).
    ///
    /// A missing file gives a fresh session bound to that path; an empty file is initialized
    /// with a header at once; a non-empty file without a header is refused, untouched. Older
    /// versions are migrated and the file rewritten. New sessions (`new_session`, forks) go to
    /// `session_dir`, by default the file's directory. The cwd is `cwd_override`, else the
    /// header's, else the process's.
    pub fn open(
        path: &Path,
        session_dir: Option<&Path>,
        cwd_override: Option<&Path>,
    ) -> Result<SessionStore> {
        let path = absolute(path);
        let content = read_session_file(&path)?;
        let header_cwd = match &content {
            ReadOutcome::Session(c) => c.header.get("cwd").and_then(Value::as_str),
            _ => None,
        };
        let cwd = match (cwd_override, header_cwd) {
            (Some(c), _) => PathBuf::from(c),
            (None, Some(c)) if !c.is_empty() => PathBuf::from(c),
            _ => std::env::current_dir().map_err(|e| SessionError::io(".", e))?,
        };
        let dir = match session_dir {
            Some(d) => d.to_path_buf(),
            None => normalize_lexically(&path.join("..")),
        };
        create_dir(&dir)?;
        let mut s = SessionStore::blank(&cwd, Some(dir));
        match content {
            ReadOutcome::Missing => {
                s.new_session(NewSession::default())?;
                s.file = Some(SessionFile::pending(path));
            }
            ReadOutcome::NoHeader => {
                let size = std::fs::metadata(&path)
                    .map_err(|e| SessionError::io(&path, e))?
                    .len();
                if size > 0 {
                    return Err(SessionError::InvalidSessionFile(path));
                }
                s.new_session(NewSession::default())?;
                let mut file = SessionFile::pending(path);
                let header = format!("{}\n", to_js_string(&s.header)?);
                file.rewrite(|w| w.write_all(header.as_bytes()))?;
                s.file = Some(file);
            }
            ReadOutcome::Session(content) => s.load(path, content)?,
        }
        Ok(s)
    }

    fn load(&mut self, path: PathBuf, content: FileContent) -> Result<()> {
        let FileContent {
            mut header,
            body,
            needs_newline,
        } = content;
        if needs_newline {
            terminate_last_line(&path)?;
        }
        let mut file = SessionFile::existing(path);
        self.entries = match body {
            Body::Current(entries) => entries,
            Body::Legacy(mut maps) => {
                let rewrite = migrate(&mut header, &mut maps);
                if rewrite {
                    file.rewrite(|w| {
                        for line in std::iter::once(&header).chain(&maps) {
                            write_js(&mut *w, line).map_err(std::io::Error::other)?;
                            w.write_all(b"\n")?;
                        }
                        Ok(())
                    })?;
                }
                maps.into_iter()
                    .filter(|m| m.get("type").and_then(Value::as_str) != Some("session"))
                    .map(entry_from_map)
                    .collect()
            }
        };
        // Entries are large (~500 bytes inline); a doubled vector would waste up to half.
        self.entries.shrink_to_fit();
        self.header = header;
        self.file = Some(file);
        self.rebuild_index();
        Ok(())
    }

    /// Starts a new, empty session in place (new id and header; the file, if persisted, is a
    /// new one in the session directory). Returns the new file path.
    pub fn new_session(&mut self, options: NewSession) -> Result<Option<PathBuf>> {
        if let Some(id) = &options.id {
            validate_session_id(id)?;
        }
        let id = options.id.unwrap_or_else(uuid_v7);
        let timestamp = now_iso();
        self.header = new_header(&id, &timestamp, &self.cwd, options.parent_session)?;
        self.entries.clear();
        self.by_id.clear();
        self.labels.clear();
        self.leaf = None;
        self.has_conversation = false;
        self.file = self.session_dir.as_ref().map(|dir| {
            SessionFile::pending(join(dir, Path::new(&session_file_name(&timestamp, &id))))
        });
        Ok(self.session_file().map(Path::to_path_buf))
    }

    /// Recomputes the id index, labels, leaf (the last entry in file order) and conversation flag.
    pub(crate) fn rebuild_index(&mut self) {
        self.by_id.clear();
        self.labels.clear();
        self.leaf = None;
        self.has_conversation = false;
        for i in 0..self.entries.len() {
            if let Some(id) = self.entries[i].id() {
                self.by_id.insert(id, i);
            }
            self.note_entry(i);
        }
        self.by_id.resolve_parents(&self.entries);
    }

    /// Indexes the entry just appended as the newest entry.
    pub(crate) fn index_last_entry(&mut self) {
        self.by_id.push(&self.entries);
        self.note_entry(self.entries.len() - 1);
    }

    /// The leaf, conversation flag and labels after entry `i`.
    fn note_entry(&mut self, i: usize) {
        let entry = &self.entries[i];
        self.leaf = entry.id().map(str::to_owned);
        self.has_conversation |= is_conversation(entry);
        if let SessionEntry::Label(l) = entry {
            match l.label.as_deref().filter(|s| !s.is_empty()) {
                Some(label) => {
                    let value = Label {
                        label: label.to_owned(),
                        timestamp: l.timestamp.clone(),
                    };
                    self.labels.insert(l.target_id.clone(), value);
                }
                None => {
                    self.labels.shift_remove(&l.target_id);
                }
            }
        }
    }

    pub fn session_id(&self) -> &str {
        self.header.get("id").and_then(Value::as_str).unwrap_or("")
    }

    /// The session file path (also before the file exists); `None` in memory.
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_ref().map(SessionFile::path)
    }

    /// The directory new sessions of this one go to; `None` in memory.
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub fn is_persisted(&self) -> bool {
        self.file.is_some()
    }

    /// Whether the session file exists (was loaded or has been written).
    pub fn is_flushed(&self) -> bool {
        self.file.as_ref().is_some_and(SessionFile::is_flushed)
    }

    /// The header object as read or written.
    pub fn header(&self) -> &Map<String, Value> {
        &self.header
    }

    /// The header's `parentSession`, if it is a string.
    pub fn parent_session(&self) -> Option<&str> {
        self.header.get("parentSession").and_then(Value::as_str)
    }

    /// Every entry, file order, all branches (no header).
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// The entry with this id (the last one, should a file repeat an id).
    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    pub fn leaf_entry(&self) -> Option<&SessionEntry> {
        self.leaf.as_deref().and_then(|id| self.entry(id))
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.labels.get(id)
    }

    /// All labels, in the order Pi enumerates them.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &Label)> {
        self.labels.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Moves the leaf to an existing entry; the next append starts a branch there.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        if !self.by_id.contains_key(id) {
            return Err(SessionError::EntryNotFound(id.to_owned()));
        }
        self.leaf = Some(id.to_owned());
        Ok(())
    }

    /// Clears the leaf; the next append becomes a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Positions of the entries from the root to `from` (default: the leaf), root first.
    pub(crate) fn branch_indices(&self, from: Option<&str>) -> Vec<usize> {
        let start = from.or(self.leaf.as_deref());
        let mut path = Vec::new();
        let mut cur = start.and_then(|id| self.by_id.get(id).copied());
        while let Some(i) = cur {
            path.push(i);
            // A corrupt file may hold a parent cycle.
            if path.len() > self.entries.len() {
                break;
            }
            cur = self.entries[i]
                .parent_id()
                .is_some_and(|p| !p.is_empty())
                .then(|| self.by_id.parent(i))
                .flatten();
        }
        path.reverse();
        path
    }

    /// The entries from the root to `from` (default: the leaf), root first.
    pub fn branch_entries(&self, from: Option<&str>) -> Vec<&SessionEntry> {
        self.branch_indices(from)
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// All entries after the first one with id `since` (all entries without `since`).
    pub fn entries_since(&self, since: Option<&str>) -> Result<&[SessionEntry]> {
        let Some(since) = since else {
            return Ok(&self.entries);
        };
        match self.entries.iter().position(|e| e.id() == Some(since)) {
            Some(i) => Ok(&self.entries[i + 1..]),
            None => Err(SessionError::SinceNotFound(since.to_owned())),
        }
    }

    /// The session name: the latest `session_info` entry's trimmed name (an empty one clears).
    pub fn session_name(&self) -> Option<String> {
        self.entries.iter().rev().find_map(|e| match e {
            SessionEntry::SessionInfo(i) => Some(
                i.name
                    .as_deref()
                    .map(pi_js::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
            ),
            SessionEntry::Other(m)
                if m.get("type").and_then(Value::as_str) == Some("session_info") =>
            {
                Some(
                    m.get("name")
                        .and_then(Value::as_str)
                        .map(pi_js::trim)
                        .filter(|n| !n.is_empty())
                        .map(str::to_owned),
                )
            }
            _ => None,
        })?
    }

    /// Fails with Pi's message when this persisted session's cwd no longer exists (checked
    /// before switching to or resuming a session).
    pub fn ensure_cwd_exists(&self, fallback_cwd: &Path) -> Result<()> {
        let Some(file) = self.session_file() else {
            return Ok(());
        };
        if self.cwd.as_os_str().is_empty() || self.cwd.exists() {
            return Ok(());
        }
        Err(SessionError::MissingCwd {
            cwd: self.cwd.clone(),
            session_file: Some(file.to_path_buf()),
            fallback: fallback_cwd.to_path_buf(),
        })
    }

    /// The message of a `message` entry.
    pub fn message(&self, id: &str) -> Option<&AgentMessage> {
        match self.entry(id)? {
            SessionEntry::Message(m) => Some(&m.message),
            _ => None,
        }
    }
}
