//! Appending entries. Each append makes the entry a child of the leaf, moves the leaf to it and
//! writes it before returning, so the caller may announce it (`entry_appended`) afterwards.
//!
//! A new session writes nothing until it holds a user or assistant message; the append that
//! makes that true writes the header and every entry so far. If writing fails, the entry is
//! taken back out of memory (leaf restored) and the error returned, so memory never holds an
//! entry the file lacks.

use crate::context::current_system_message;
use crate::error::{Result, SessionError};
use crate::ids::new_entry_id_in;
use crate::lenient::entry_from_map;
use crate::store::SessionStore;
use crate::writer::write_entries;
use pi_js::json::{to_js_line, to_js_string};
use pi_js::time::{now_iso, parse_iso_ms};
use pi_js::trim as js_trim;
use pi_protocol::SharedMessage;
use pi_protocol::content::UserContent;
use pi_protocol::message::AgentMessage;
use pi_protocol::message_json_memo::with_json_memo;
use pi_protocol::record::Rest;
use pi_protocol::session_entry::{
    BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, LabelEntry, MessageEntry,
    ModelChangeEntry, SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry,
};
use pi_protocol::usage::Usage;
use serde_json::{Map, Value};

/// The fields of a compaction entry the caller decides.
#[derive(Debug, Clone, Default)]
pub struct CompactionParams {
    pub summary: String,
    /// The first entry kept verbatim; `None` keeps nothing before the compaction (the entry's
    /// own id is written, as Pi does).
    pub first_kept_entry_id: Option<String>,
    pub tokens_before: u64,
    pub details: Option<Value>,
    /// `true` when an extension supplied the summary; Pi always writes the key.
    pub from_hook: Option<bool>,
    pub usage: Option<Usage>,
}

/// The fields of a branch summary entry the caller decides.
#[derive(Debug, Clone, Default)]
pub struct BranchSummaryParams {
    pub summary: String,
    pub details: Option<Value>,
    pub from_hook: Option<bool>,
    pub usage: Option<Usage>,
}

impl SessionStore {
    /// `(id, parentId, timestamp)` for the next entry.
    fn next_meta(&self) -> (String, Option<String>, String) {
        (new_entry_id_in(&self.by_id), self.leaf.clone(), now_iso())
    }

    /// Appends a fully built entry (its `parentId` should be the leaf) and writes it.
    /// Returns the entry's id.
    pub fn append_entry(&mut self, entry: SessionEntry) -> Result<String> {
        // Only a file already written takes the line; an in-memory session (`--no-session`) or
        // one not yet written (written whole once it has a conversation) never needs it.
        let line = match &self.file {
            // The message's text is the one its events carry (written once, see the memo).
            Some(file) if file.is_flushed() => with_json_memo(|| to_js_line(&entry))?,
            _ => String::new(),
        };
        let id = entry.id().unwrap_or_default().to_owned();
        let saved_leaf = self.leaf.clone();
        let saved_conversation = self.has_conversation;
        let saved_index = entry.id().and_then(|id| self.by_id.get(id).copied());
        let saved_label = match &entry {
            SessionEntry::Label(l) => {
                Some((l.target_id.clone(), self.labels.get(&l.target_id).cloned()))
            }
            _ => None,
        };
        if self.entries.len() == self.entries.capacity() {
            // Grow by an eighth, not double: a loaded session is large, and large buffers grow
            // in place (mremap) without copying.
            self.entries.reserve_exact((self.entries.len() / 8).max(64));
        }
        self.entries.push(entry);
        self.index_last_entry();
        if let Err(e) = self.persist(line.as_bytes()) {
            self.entries.pop();
            if !id.is_empty() {
                match saved_index {
                    Some(i) => self.by_id.insert(&id, i),
                    None => self.by_id.remove(&id),
                };
            }
            self.by_id.resolve_parents(&self.entries);
            if let Some((target, label)) = saved_label {
                match label {
                    Some(l) => self.labels.insert(target, l),
                    None => self.labels.shift_remove(&target),
                };
            }
            self.leaf = saved_leaf;
            self.has_conversation = saved_conversation;
            return Err(e);
        }
        Ok(id)
    }

    /// Writes the newest entry (`line`, made when the file is already written), or the whole
    /// session when this is the first write.
    fn persist(&mut self, line: &[u8]) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if file.is_flushed() {
            return file.append(line);
        }
        if !self.has_conversation {
            return Ok(());
        }
        let header = format!("{}\n", to_js_string(&self.header)?);
        // The run's messages so far (the first write comes with its first answer) carry the
        // texts their events wrote: the memo copies them.
        file.create(header.as_bytes(), |w| {
            with_json_memo(|| write_entries(w, &self.entries))
        })
    }

    /// Appends a conversation message.
    pub fn append_message(&mut self, message: AgentMessage) -> Result<String> {
        self.append_shared_message(SharedMessage::new(message))
    }

    /// Appends a message the caller keeps too (the agent's transcript): stored once, shared.
    pub fn append_shared_message(&mut self, message: SharedMessage) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::Message(MessageEntry {
            id,
            parent_id,
            timestamp,
            message,
            rest: Rest::default(),
        }))
    }

    /// Appends a thinking level change (stored as given, unvalidated).
    pub fn append_thinking_level_change(&mut self, thinking_level: &str) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::ThinkingLevelChange(
            ThinkingLevelChangeEntry {
                id,
                parent_id,
                timestamp,
                thinking_level: thinking_level.to_owned(),
                rest: Rest::default(),
            },
        ))
    }

    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::ModelChange(ModelChangeEntry {
            id,
            parent_id,
            timestamp,
            provider: provider.to_owned(),
            model_id: model_id.to_owned(),
            rest: Rest::default(),
        }))
    }

    /// Appends model usage outside the conversation (e.g. cache warming); an empty note is
    /// left out.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Usage,
        note: Option<&str>,
    ) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::from(UsageEntry {
            id,
            parent_id,
            timestamp,
            kind: kind.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            usage,
            note: note.filter(|n| !n.is_empty()).map(str::to_owned),
            rest: Rest::default(),
        }))
    }

    /// Appends a compaction. The current system prompt state (all system messages of the
    /// current context replayed) is stored with it, stamped with the entry's time.
    pub fn append_compaction(&mut self, params: CompactionParams) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        let system_message = {
            let ctx = self.build_context();
            current_system_message(ctx.messages.iter().map(|m| m.as_ref()))
        }
        .map(|mut sm| {
            sm.timestamp = parse_iso_ms(&timestamp).map_or(0, |ms| ms.max(0) as u64);
            sm
        });
        let first_kept_entry_id = params.first_kept_entry_id.unwrap_or_else(|| id.clone());
        self.append_entry(SessionEntry::from(CompactionEntry {
            id,
            parent_id,
            timestamp,
            summary: params.summary,
            first_kept_entry_id,
            tokens_before: params.tokens_before,
            details: params.details,
            usage: params.usage,
            from_hook: params.from_hook,
            system_message,
            rest: Rest::default(),
        }))
    }

    /// Appends extension state that is not part of the context.
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::from(CustomEntry {
            custom_type: custom_type.to_owned(),
            data,
            id,
            parent_id,
            timestamp,
            rest: Rest::default(),
        }))
    }

    /// Appends an extension message that is part of the context.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::from(CustomMessageEntry {
            custom_type: custom_type.to_owned(),
            content,
            display,
            details,
            id,
            parent_id,
            timestamp,
            rest: Rest::default(),
        }))
    }

    /// Appends the session name: runs of `\r`/`\n` become one space, then it is trimmed.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let mut clean = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    clean.push(' ');
                }
                in_break = true;
            } else {
                clean.push(c);
                in_break = false;
            }
        }
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::SessionInfo(SessionInfoEntry {
            id,
            parent_id,
            timestamp,
            name: Some(js_trim(&clean).to_owned()),
            rest: Rest::default(),
        }))
    }

    /// Sets (`Some` non-empty) or clears (`None` or `""`) the label of an existing entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.by_id.contains_key(target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_owned()));
        }
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::Label(LabelEntry {
            id,
            parent_id,
            timestamp,
            target_id: target_id.to_owned(),
            label: label.map(str::to_owned),
            rest: Rest::default(),
        }))
    }

    /// Appends a context edit for an editable entry on the active branch: `replacement` is
    /// `None` (omit the entry's messages) or an object with string or array `content`. A string
    /// replacing assistant or tool-result content is stored as one text block.
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<Value>,
    ) -> Result<String> {
        let content_ok =
            |r: &Value| matches!(r.get("content"), Some(Value::String(_) | Value::Array(_)));
        if replacement
            .as_ref()
            .is_some_and(|r| !r.is_object() || !content_ok(r))
        {
            return Err(SessionError::InvalidReplacement);
        }
        let Some(target) = self.entry(target_id) else {
            return Err(SessionError::EntryNotFound(target_id.to_owned()));
        };
        if !self
            .branch_indices(None)
            .iter()
            .any(|&i| self.entries[i].id() == Some(target_id))
        {
            return Err(SessionError::NotOnActiveBranch(target_id.to_owned()));
        }
        let role = match target {
            SessionEntry::CustomMessage(_) => "custom",
            SessionEntry::Message(m) => match m.message.role() {
                r @ ("user" | "assistant" | "toolResult") => r,
                _ => return Err(SessionError::NotEditable(target_id.to_owned())),
            },
            _ => return Err(SessionError::NotEditable(target_id.to_owned())),
        };
        let replacement = match replacement {
            Some(r) if matches!(role, "assistant" | "toolResult") => match r.get("content") {
                Some(Value::String(text)) => {
                    let block = serde_json::json!({"type": "text", "text": text});
                    let mut m = Map::new();
                    m.insert("content".into(), Value::Array(vec![block]));
                    Value::Object(m)
                }
                _ => r,
            },
            Some(r) => r,
            None => Value::Null,
        };
        let (id, parent_id, timestamp) = self.next_meta();
        let mut m = Map::new();
        m.insert("type".into(), "context_edit".into());
        m.insert("id".into(), id.into());
        m.insert(
            "parentId".into(),
            parent_id.map_or(Value::Null, Value::String),
        );
        m.insert("timestamp".into(), timestamp.into());
        m.insert("targetId".into(), target_id.into());
        m.insert("replacement".into(), replacement);
        self.append_entry(entry_from_map(m))
    }

    /// Moves the leaf to `branch_from` (`None`: before the first entry) and appends a summary
    /// of the branch that was left; `fromId` is the old leaf or `"root"`.
    pub fn branch_with_summary(
        &mut self,
        branch_from: Option<&str>,
        params: BranchSummaryParams,
    ) -> Result<String> {
        if let Some(b) = branch_from
            && !self.by_id.contains_key(b)
        {
            return Err(SessionError::EntryNotFound(b.to_owned()));
        }
        let from_id = self.leaf.clone().unwrap_or_else(|| "root".to_owned());
        self.leaf = branch_from.map(str::to_owned);
        let (id, parent_id, timestamp) = self.next_meta();
        self.append_entry(SessionEntry::from(BranchSummaryEntry {
            id,
            parent_id,
            timestamp,
            from_id,
            summary: params.summary,
            details: params.details,
            usage: params.usage,
            from_hook: params.from_hook,
            rest: Rest::default(),
        }))
    }

    /// Whether the session holds a user or assistant message.
    pub fn has_conversation(&self) -> bool {
        self.has_conversation
    }
}
