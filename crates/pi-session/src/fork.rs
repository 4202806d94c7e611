//! Forks and clones: a new session holding one path of this one.
//!
//! The copied path keeps its entries (ids, timestamps, key order) and re-links `parentId` around
//! the `label` entries it drops; labels of entries on the path are re-created at the end. The new
//! file is written at once only if the path holds a conversation; otherwise it waits for the first
//! message like a new session.

use crate::error::{Result, SessionError};
use crate::ids::{new_entry_id, uuid_v7, validate_session_id};
use crate::lenient::entry_from_map;
use crate::migrate::migrate;
use crate::paths::{absolute, join, session_file_name};
use crate::queries::user_message_text;
use crate::read::{Body, ReadOutcome, read_session_file};
use crate::store::{Label, NewSession, SessionStore, new_header};
use crate::writer::{SessionFile, terminate_last_line, write_entries};
use pi_js::json::{to_js_string, write_js};
use pi_js::time::now_iso;
use pi_protocol::record::Rest;
use pi_protocol::session_entry::{LabelEntry, SessionEntry};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a fork ends relative to the chosen entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkPosition {
    /// Before a user message: the new session ends at its parent (RPC `fork`).
    Before,
    /// At the entry itself (RPC `clone`).
    At,
}

/// The session a fork produced.
#[derive(Debug)]
pub struct Forked {
    pub store: SessionStore,
    /// The forked user message's text (text blocks joined), for [`ForkPosition::Before`].
    pub selected_text: Option<String>,
}

fn set_parent(entry: &mut SessionEntry, parent: Option<String>) {
    match entry {
        SessionEntry::Message(e) => e.parent_id = parent,
        SessionEntry::ThinkingLevelChange(e) => e.parent_id = parent,
        SessionEntry::ModelChange(e) => e.parent_id = parent,
        SessionEntry::Usage(e) => e.parent_id = parent,
        SessionEntry::Compaction(e) => e.parent_id = parent,
        SessionEntry::BranchSummary(e) => e.parent_id = parent,
        SessionEntry::Custom(e) => e.parent_id = parent,
        SessionEntry::CustomMessage(e) => e.parent_id = parent,
        SessionEntry::ContextEdit(e) => e.parent_id = parent,
        SessionEntry::Label(e) => e.parent_id = parent,
        SessionEntry::SessionInfo(e) => e.parent_id = parent,
        SessionEntry::Other(m) => {
            m.insert("parentId".into(), parent.map_or(Value::Null, Value::String));
        }
    }
}

/// A label entry as a fork re-creates it, with the label's own time.
fn label_entry(target: &str, label: &Label, parent: Option<String>, id: String) -> SessionEntry {
    SessionEntry::Label(LabelEntry {
        id,
        parent_id: parent,
        timestamp: label.timestamp.clone(),
        target_id: target.to_owned(),
        label: Some(label.label.clone()),
        rest: Rest::default(),
    })
}

/// Writes a whole session file: the header line, then the entries.
fn whole_file(
    header: &Map<String, Value>,
    entries: &[SessionEntry],
) -> impl FnOnce(&mut dyn Write) -> std::io::Result<()> {
    move |w| {
        write_js(&mut *w, header).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        write_entries(w, entries)
    }
}

impl SessionStore {
    /// A new session holding the path root → `leaf_id` (Pi's `createBranchedSession`). Its file
    /// goes to this session's directory; `parentSession` names this session's file.
    pub fn branched_copy(&self, leaf_id: &str) -> Result<SessionStore> {
        let path = self.branch_indices(Some(leaf_id));
        if path.is_empty() {
            return Err(SessionError::EntryNotFound(leaf_id.to_owned()));
        }
        let mut kept: Vec<SessionEntry> = Vec::with_capacity(path.len());
        let mut label_successor: HashMap<String, String> = HashMap::new();
        let mut pending_labels: Vec<String> = Vec::new();
        let mut parent: Option<String> = None;
        for &i in &path {
            let entry = &self.entries[i];
            let id = entry.id().unwrap_or_default().to_owned();
            if entry.kind() == "label" {
                pending_labels.push(id);
                continue;
            }
            for l in pending_labels.drain(..) {
                label_successor.insert(l, id.clone());
            }
            let mut copy = entry.clone();
            set_parent(&mut copy, parent.replace(id.clone()));
            if let SessionEntry::Compaction(c) = &mut copy
                && c.first_kept_entry_id != c.id
                && let Some(next) = label_successor.get(&c.first_kept_entry_id)
            {
                c.first_kept_entry_id = next.clone();
            }
            kept.push(copy);
        }
        let mut taken: HashSet<String> = kept
            .iter()
            .filter_map(|e| e.id().map(str::to_owned))
            .collect();
        let mut parent = kept
            .last()
            .and_then(|e| e.id())
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        let mut labels = Vec::new();
        for (target, label) in &self.labels {
            if kept.iter().any(|e| e.id() == Some(target.as_str())) {
                let id = new_entry_id(|id| taken.contains(id));
                taken.insert(id.clone());
                labels.push(label_entry(target, label, parent.replace(id.clone()), id));
            }
        }
        kept.extend(labels);

        let mut store = SessionStore {
            cwd: self.cwd.clone(),
            session_dir: self.session_dir.clone(),
            header: Map::new(),
            entries: kept,
            by_id: Default::default(),
            labels: Default::default(),
            leaf: None,
            file: None,
            has_conversation: false,
        };
        let id = uuid_v7();
        let timestamp = now_iso();
        let parent = self
            .session_file()
            .map(|f| f.to_string_lossy().into_owned());
        store.header = new_header(&id, &timestamp, &self.cwd, parent)?;
        store.rebuild_index();
        if let Some(dir) = &self.session_dir {
            let mut file =
                SessionFile::pending(join(dir, Path::new(&session_file_name(&timestamp, &id))));
            if store.has_conversation {
                file.rewrite(whole_file(&store.header, &store.entries))?;
            }
            store.file = Some(file);
        }
        Ok(store)
    }

    /// Replaces this session by the path root → `leaf_id` (see [`SessionStore::branched_copy`]);
    /// returns the new file path (`None` in memory).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>> {
        *self = self.branched_copy(leaf_id)?;
        Ok(self.session_file().map(Path::to_path_buf))
    }

    /// RPC `fork` ([`ForkPosition::Before`] a user message) and `clone` ([`ForkPosition::At`]
    /// the leaf), with Pi's checks and errors. This session is left unchanged.
    pub fn fork(&self, entry_id: &str, position: ForkPosition) -> Result<Forked> {
        let selected = self.entry(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        let (target, selected_text) = match position {
            ForkPosition::At => (selected.id().map(str::to_owned), None),
            ForkPosition::Before => match selected {
                SessionEntry::Message(m) if m.message.role() == "user" => {
                    (m.parent_id.clone(), user_message_text(&m.message))
                }
                _ => return Err(SessionError::InvalidForkEntry),
            },
        };
        let target = target.filter(|t| !t.is_empty());
        let store = match (self.session_file(), target) {
            (Some(file), None) => {
                let dir = self.session_dir.clone().unwrap_or_default();
                SessionStore::create(
                    &self.cwd,
                    &dir,
                    NewSession {
                        id: None,
                        parent_session: Some(file.to_string_lossy().into_owned()),
                    },
                )?
            }
            (Some(file), Some(target)) => {
                if !file.exists() {
                    return Err(SessionError::NotSavedYet);
                }
                self.branched_copy(&target)?
            }
            (None, None) => SessionStore::in_memory(&self.cwd, NewSession::default())?,
            (None, Some(target)) => self.branched_copy(&target)?,
        };
        Ok(Forked {
            store,
            selected_text,
        })
    }

    /// RPC `clone`: a fork at the current leaf.
    pub fn clone_session(&self) -> Result<Forked> {
        let leaf = self.leaf.clone().ok_or(SessionError::NoCurrentEntry)?;
        self.fork(&leaf, ForkPosition::At)
    }

    /// `--fork <source>`: copies every entry of another session file into a new session for
    /// `target_cwd` in `session_dir` (written at once). An older source is migrated in the copy
    /// only; the source file is not rewritten.
    pub fn fork_from(
        source: &Path,
        target_cwd: &Path,
        session_dir: &Path,
        id: Option<String>,
    ) -> Result<SessionStore> {
        let source = absolute(source);
        let target_cwd = absolute(target_cwd);
        let content = match read_session_file(&source)? {
            ReadOutcome::Session(c) => c,
            ReadOutcome::Missing | ReadOutcome::NoHeader => {
                return Err(SessionError::ForkSourceInvalid(source));
            }
        };
        if content.needs_newline {
            terminate_last_line(&source)?;
        }
        std::fs::create_dir_all(session_dir).map_err(|e| SessionError::io(session_dir, e))?;
        if let Some(id) = &id {
            validate_session_id(id)?;
        }
        let id = id.unwrap_or_else(uuid_v7);
        let timestamp = now_iso();
        let entries: Vec<SessionEntry> = match content.body {
            Body::Current(entries) => entries,
            Body::Legacy(mut maps) => {
                let mut header = content.header;
                migrate(&mut header, &mut maps);
                maps.into_iter()
                    .filter(|m| m.get("type").and_then(Value::as_str) != Some("session"))
                    .map(entry_from_map)
                    .collect()
            }
        };
        let parent = source.to_string_lossy().into_owned();
        let header = new_header(&id, &timestamp, &target_cwd, Some(parent))?;
        let path = join(session_dir, Path::new(&session_file_name(&timestamp, &id)));
        let header_line = format!("{}\n", to_js_string(&header)?);
        SessionFile::pending(path.clone())
            .create(header_line.as_bytes(), |w| write_entries(w, &entries))?;
        drop(entries);
        SessionStore::open(&path, Some(session_dir), Some(&target_cwd))
    }
}
