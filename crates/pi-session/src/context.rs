//! What the model sees: the messages projected from the path root → leaf, with compaction,
//! context edits and summaries applied, and the model and thinking level the path selects.
//!
//! 1. The path: from the leaf (or the last entry when the leaf id is unknown) up the parents.
//! 2. Settings from the whole path: the last `thinking_level_change` (default `off`); the last
//!    `model_change` or assistant message names the model.
//! 3. Only the newest compaction on the path counts: it comes first, then the path entries
//!    before it from `firstKeptEntryId` on (minus system messages), then everything after it.
//! 4. The latest `context_edit` per target among those entries replaces (or with `null` drops)
//!    the target's messages.
//! 5. Each entry projects to its messages (see [`project_entry`]).
//!
//! Messages are borrowed from the entries where they are stored verbatim, so building the
//! context of a large session copies little.

use crate::lenient::message_from_map;
use crate::store::SessionStore;
use pi_js::time::parse_iso_ms;
use pi_protocol::SharedMessage;
use pi_protocol::message::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage,
};
use pi_protocol::record::Rest;
use pi_protocol::session_entry::SessionEntry;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ops::Range;

pub use crate::system_prompt::current_system_message;

/// A message of the context: the one stored in its entry, or one built for the context
/// (summaries, edited or normalized messages). Small, so a large context costs little beyond
/// the entries themselves.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextMessage<'a> {
    Stored(&'a SharedMessage),
    Built(Box<AgentMessage>),
}

impl ContextMessage<'_> {
    fn built(m: AgentMessage) -> Self {
        ContextMessage::Built(Box::new(m))
    }

    /// The message to keep: a stored one is shared with its entry, not copied.
    pub fn into_owned(self) -> SharedMessage {
        match self {
            ContextMessage::Stored(m) => m.clone(),
            ContextMessage::Built(m) => SharedMessage::new(*m),
        }
    }
}

impl std::ops::Deref for ContextMessage<'_> {
    type Target = AgentMessage;

    fn deref(&self) -> &AgentMessage {
        match self {
            ContextMessage::Stored(m) => m,
            ContextMessage::Built(m) => m,
        }
    }
}

impl AsRef<AgentMessage> for ContextMessage<'_> {
    fn as_ref(&self) -> &AgentMessage {
        self
    }
}

impl Serialize for ContextMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// The model a path selects: `{provider, modelId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelRef {
    pub provider: String,
    #[serde(rename = "modelId")]
    pub model_id: String,
}

/// The model context of the current leaf.
#[derive(Debug, Clone)]
pub struct SessionContext<'a> {
    pub messages: Vec<ContextMessage<'a>>,
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

impl SessionContext<'_> {
    /// The messages as owned values.
    pub fn into_owned_messages(self) -> Vec<SharedMessage> {
        self.messages
            .into_iter()
            .map(ContextMessage::into_owned)
            .collect()
    }
}

/// The context with provenance: which selected entry produced which messages.
#[derive(Debug, Clone)]
pub struct SessionProjection<'a> {
    /// The selected entries, in context order.
    pub entries: Vec<&'a SessionEntry>,
    /// For each of `entries`, the range of `messages` it produced (possibly empty).
    pub ranges: Vec<Range<usize>>,
    pub messages: Vec<ContextMessage<'a>>,
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

impl<'a> SessionProjection<'a> {
    pub fn into_context(self) -> SessionContext<'a> {
        SessionContext {
            messages: self.messages,
            thinking_level: self.thinking_level,
            model: self.model,
        }
    }
}

fn is_kind(e: &SessionEntry, kind: &str) -> bool {
    e.kind() == kind
}

fn raw_str<'a>(e: &'a SessionEntry, key: &str) -> Option<&'a str> {
    match e {
        SessionEntry::Other(m) => m.get(key).and_then(Value::as_str),
        _ => None,
    }
}

fn first_kept_id(e: &SessionEntry) -> Option<&str> {
    match e {
        SessionEntry::Compaction(c) => Some(&c.first_kept_entry_id),
        _ => raw_str(e, "firstKeptEntryId"),
    }
}

fn is_system_message(e: &SessionEntry) -> bool {
    matches!(e, SessionEntry::Message(m) if m.message.role() == "system")
}

/// The target of a context edit and its replacement content: `None` drops the target's
/// messages, `Some(None)` removes their `content` key (a replacement without `content`).
fn edit_of(e: &SessionEntry) -> Option<(&str, Option<Option<Value>>)> {
    match e {
        SessionEntry::ContextEdit(c) => Some((
            &c.target_id,
            c.replacement
                .as_ref()
                .map(|r| serde_json::to_value(&r.content).ok()),
        )),
        SessionEntry::Other(m) if m.get("type").and_then(Value::as_str) == Some("context_edit") => {
            let target = m.get("targetId")?.as_str()?;
            match m.get("replacement")? {
                Value::Null => Some((target, None)),
                r => Some((target, Some(r.get("content").cloned()))),
            }
        }
        _ => None,
    }
}

impl SessionStore {
    /// Positions of the path root → leaf (empty for a `null` leaf).
    fn context_path(&self) -> Vec<usize> {
        let Some(leaf) = self.leaf.as_deref() else {
            return Vec::new();
        };
        if self.by_id.contains_key(leaf) {
            self.branch_indices(Some(leaf))
        } else if let Some(last) = self.entries.last().and_then(SessionEntry::id) {
            self.branch_indices(Some(last))
        } else {
            Vec::new()
        }
    }

    /// The context entries of the current leaf: compaction-aware (step 3 of the module docs).
    pub fn context_entries(&self) -> Vec<&SessionEntry> {
        select_context(&self.entries, &self.context_path())
    }

    /// The model context of the current leaf.
    pub fn build_context(&self) -> SessionContext<'_> {
        self.build_projection().into_context()
    }

    /// The model context of the current leaf with the entry behind each message.
    pub fn build_projection(&self) -> SessionProjection<'_> {
        let path = self.context_path();
        let (thinking_level, model) = path_settings(path.iter().map(|&i| &self.entries[i]));
        let entries = select_context(&self.entries, &path);
        let mut edits: HashMap<&str, Option<Option<Value>>> = HashMap::new();
        for e in &entries {
            if let Some((target, replacement)) = edit_of(e) {
                edits.insert(target, replacement);
            }
        }
        let mut messages = Vec::with_capacity(entries.len());
        let mut ranges = Vec::with_capacity(entries.len());
        for (k, e) in entries.iter().enumerate() {
            let start = messages.len();
            // An older compaction inside the kept range contributes nothing.
            if !(k > 0 && is_kind(e, "compaction")) {
                project_entry(e, &mut messages);
                if let Some(edit) = e.id().and_then(|id| edits.get(id)) {
                    apply_edit(&mut messages, start, edit.as_ref());
                }
            }
            ranges.push(start..messages.len());
        }
        SessionProjection {
            entries,
            ranges,
            messages,
            thinking_level,
            model,
        }
    }
}

/// Thinking level and model selected by a path: the last `thinking_level_change`, and the
/// last `model_change` or assistant message that names one. Looked for from the end, so only
/// the last assistant message of a long session is parsed.
fn path_settings<'a>(
    path: impl DoubleEndedIterator<Item = &'a SessionEntry>,
) -> (String, Option<ModelRef>) {
    let mut thinking = None;
    let mut model = None;
    for e in path.rev() {
        if thinking.is_some() && model.is_some() {
            break;
        }
        match e {
            SessionEntry::ThinkingLevelChange(t) if thinking.is_none() => {
                thinking = Some(t.thinking_level.clone());
            }
            SessionEntry::ModelChange(m) if model.is_none() => {
                model = Some(ModelRef {
                    provider: m.provider.clone(),
                    model_id: m.model_id.clone(),
                });
            }
            SessionEntry::Message(m) if model.is_none() && m.message.role() == "assistant" => {
                model = match &*m.message {
                    AgentMessage::Assistant(a) => Some(ModelRef {
                        provider: a.provider.clone(),
                        model_id: a.model.clone(),
                    }),
                    AgentMessage::Other(o) => match (
                        o.get("provider").and_then(Value::as_str),
                        o.get("model").and_then(Value::as_str),
                    ) {
                        (Some(p), Some(id)) => Some(ModelRef {
                            provider: p.to_owned(),
                            model_id: id.to_owned(),
                        }),
                        _ => None,
                    },
                    _ => None,
                };
            }
            _ => {}
        }
    }
    (thinking.unwrap_or_else(|| "off".to_owned()), model)
}

/// Step 3: the newest compaction, the kept entries before it, and everything after it.
fn select_context<'a>(entries: &'a [SessionEntry], path: &[usize]) -> Vec<&'a SessionEntry> {
    let on_path = |k: usize| &entries[path[k]];
    let Some(last) = (0..path.len())
        .rev()
        .find(|&k| is_kind(on_path(k), "compaction"))
    else {
        return path.iter().map(|&i| &entries[i]).collect();
    };
    let compaction = on_path(last);
    let cid = compaction.id();
    let at = (0..path.len())
        .find(|&k| on_path(k).id() == cid)
        .unwrap_or(last);
    let first_kept = first_kept_id(compaction);
    let mut out = Vec::with_capacity(path.len() - at);
    out.push(compaction);
    let mut found = false;
    for k in 0..at {
        let e = on_path(k);
        found |= first_kept.is_some() && e.id() == first_kept;
        if found && !is_system_message(e) {
            out.push(e);
        }
    }
    out.extend(path[at + 1..].iter().map(|&i| &entries[i]));
    out
}

/// `new Date(iso).getTime()` as a message timestamp: typed when it is a valid non-negative
/// time, otherwise the raw JSON value (`null` for an invalid date).
enum Stamp {
    Ms(u64),
    Raw(Value),
}

fn stamp(iso: Option<&str>) -> Stamp {
    match iso.and_then(parse_iso_ms) {
        Some(ms) if ms >= 0 => Stamp::Ms(ms as u64),
        Some(ms) => Stamp::Raw(Value::from(ms)),
        None => Stamp::Raw(Value::Null),
    }
}

/// Builds a message object from `(key, value)` pairs, leaving out absent values.
fn raw_message(pairs: Vec<(&str, Option<Value>)>) -> AgentMessage {
    let map: Map<String, Value> = pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect();
    message_from_map(map)
}

fn stamp_value(s: Stamp) -> Value {
    match s {
        Stamp::Ms(ms) => Value::from(ms),
        Stamp::Raw(v) => v,
    }
}

/// Step 5: the messages one entry contributes.
///
/// | entry | messages |
/// |---|---|
/// | `message` | the message (null `content` normalized: `""` for system, `[]` otherwise) |
/// | `custom_message` | a `custom` message with the entry's time |
/// | `branch_summary` with a summary | a `branchSummary` message |
/// | `compaction` | its `systemMessage` (if any), then a `compactionSummary` message |
/// | anything else | nothing |
pub fn project_entry<'a>(entry: &'a SessionEntry, out: &mut Vec<ContextMessage<'a>>) {
    match entry {
        SessionEntry::Message(m) => out.push(normalized(&m.message)),
        SessionEntry::CustomMessage(c) => {
            out.push(ContextMessage::built(match stamp(Some(&c.timestamp)) {
                Stamp::Ms(timestamp) => AgentMessage::Custom(CustomMessage {
                    custom_type: c.custom_type.clone(),
                    content: c.content.clone(),
                    display: c.display,
                    details: c.details.clone(),
                    timestamp,
                    rest: Rest::default(),
                }),
                Stamp::Raw(ts) => raw_message(vec![
                    ("role", Some("custom".into())),
                    ("customType", Some(c.custom_type.clone().into())),
                    ("content", serde_json::to_value(&c.content).ok()),
                    ("display", Some(c.display.into())),
                    ("details", c.details.clone()),
                    ("timestamp", Some(ts)),
                ]),
            }))
        }
        SessionEntry::BranchSummary(b) if !b.summary.is_empty() => {
            out.push(ContextMessage::built(match stamp(Some(&b.timestamp)) {
                Stamp::Ms(timestamp) => AgentMessage::BranchSummary(BranchSummaryMessage {
                    summary: b.summary.clone(),
                    from_id: Some(b.from_id.clone()),
                    timestamp,
                    rest: Rest::default(),
                }),
                Stamp::Raw(ts) => raw_message(vec![
                    ("role", Some("branchSummary".into())),
                    ("summary", Some(b.summary.clone().into())),
                    ("fromId", Some(b.from_id.clone().into())),
                    ("timestamp", Some(ts)),
                ]),
            }))
        }
        SessionEntry::Compaction(c) => {
            if let Some(sm) = &c.system_message {
                out.push(ContextMessage::built(AgentMessage::System(sm.clone())));
            }
            out.push(ContextMessage::built(match stamp(Some(&c.timestamp)) {
                Stamp::Ms(timestamp) => AgentMessage::CompactionSummary(CompactionSummaryMessage {
                    summary: c.summary.clone(),
                    tokens_before: c.tokens_before,
                    timestamp,
                    rest: Rest::default(),
                }),
                Stamp::Raw(ts) => raw_message(vec![
                    ("role", Some("compactionSummary".into())),
                    ("summary", Some(c.summary.clone().into())),
                    ("tokensBefore", Some(c.tokens_before.into())),
                    ("timestamp", Some(ts)),
                ]),
            }))
        }
        SessionEntry::Other(m) => project_raw(m, out),
        _ => {}
    }
}

/// [`project_entry`] for an entry kept verbatim.
fn project_raw<'a>(m: &'a Map<String, Value>, out: &mut Vec<ContextMessage<'a>>) {
    let get = |k: &str| m.get(k).cloned();
    let ts = || {
        Some(stamp_value(stamp(
            m.get("timestamp").and_then(Value::as_str),
        )))
    };
    match m.get("type").and_then(Value::as_str) {
        Some("message") => {
            if let Some(Value::Object(msg)) = m.get("message") {
                out.push(ContextMessage::built(message_from_map(normalize_raw(
                    msg.clone(),
                ))));
            }
        }
        Some("custom_message") => {
            let content = match m.get("content") {
                None | Some(Value::Null) => Some(Value::Array(Vec::new())),
                Some(c) => Some(c.clone()),
            };
            out.push(ContextMessage::built(raw_message(vec![
                ("role", Some("custom".into())),
                ("customType", get("customType")),
                ("content", content),
                ("display", get("display")),
                ("details", get("details")),
                ("timestamp", ts()),
            ])));
        }
        Some("branch_summary") if m.get("summary").is_some_and(pi_js::truthy) => {
            out.push(ContextMessage::built(raw_message(vec![
                ("role", Some("branchSummary".into())),
                ("summary", get("summary")),
                ("fromId", get("fromId")),
                ("timestamp", ts()),
            ])));
        }
        Some("compaction") => {
            if let Some(Value::Object(sm)) = m.get("systemMessage") {
                out.push(ContextMessage::built(message_from_map(sm.clone())));
            }
            out.push(ContextMessage::built(raw_message(vec![
                ("role", Some("compactionSummary".into())),
                ("summary", get("summary")),
                ("tokensBefore", get("tokensBefore")),
                ("timestamp", ts()),
            ])));
        }
        _ => {}
    }
}

/// A stored message as the context shows it: `content: null` (or missing) becomes `""` for
/// system messages and `[]` for user, assistant and tool-result messages.
fn normalized(message: &SharedMessage) -> ContextMessage<'_> {
    // A message still kept as text has a non-null `content` where it matters (the reader
    // parses the others at once), so it need not be parsed to know.
    match message.parsed() {
        Some(AgentMessage::Other(m)) if needs_content(m) => {
            ContextMessage::built(message_from_map(normalize_raw(m.clone())))
        }
        _ => ContextMessage::Stored(message),
    }
}

fn needs_content(m: &Map<String, Value>) -> bool {
    matches!(m.get("content"), None | Some(Value::Null))
        && matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "user" | "assistant" | "toolResult")
        )
}

fn normalize_raw(mut m: Map<String, Value>) -> Map<String, Value> {
    if needs_content(&m) {
        let empty = if m.get("role").and_then(Value::as_str) == Some("system") {
            Value::String(String::new())
        } else {
            Value::Array(Vec::new())
        };
        m.insert("content".into(), empty);
    }
    m
}

/// Step 4 for the messages of one entry (`out[start..]`).
fn apply_edit(out: &mut Vec<ContextMessage<'_>>, start: usize, edit: Option<&Option<Value>>) {
    let Some(content) = edit else {
        out.truncate(start);
        return;
    };
    for slot in &mut out[start..] {
        let role = slot.role();
        if !matches!(role, "user" | "assistant" | "toolResult" | "custom") {
            continue;
        }
        let Ok(Value::Object(mut map)) = serde_json::to_value(&**slot) else {
            continue;
        };
        let new_content = match content {
            Some(Value::String(text)) if matches!(role, "assistant" | "toolResult") => {
                Some(serde_json::json!([{"type": "text", "text": text}]))
            }
            other => other.clone(),
        };
        match new_content {
            Some(c) => {
                map.insert("content".into(), c);
            }
            // JavaScript keeps the key with `undefined`, which JSON drops.
            None => {
                map.shift_remove("content");
            }
        }
        *slot = ContextMessage::built(message_from_map(map));
    }
}

/// What a branch summary reads from each of `entries` (Pi's `getMessageFromEntry`): the
/// message of a `message` entry (tool results left out), a `custom_message` as a custom
/// message, a branch summary or compaction as its summary message; `None` for the rest. The
/// latest `context_edit` per target among `entries` is applied, as in the context.
pub fn branch_summary_messages(entries: &[SessionEntry]) -> Vec<Option<AgentMessage>> {
    let mut edits: HashMap<&str, Option<Option<Value>>> = HashMap::new();
    for e in entries {
        if let Some((target, edit)) = edit_of(e) {
            edits.insert(target, edit);
        }
    }
    entries
        .iter()
        .map(|entry| {
            if matches!(entry, SessionEntry::Message(m) if m.message.role() == "toolResult") {
                return None;
            }
            let mut out = Vec::new();
            project_entry(entry, &mut out);
            out.retain(|m| m.role() != "system" && m.role() != "toolResult");
            if let Some(id) = entry.id()
                && let Some(edit) = edits.get(id)
            {
                apply_edit(&mut out, 0, edit.as_ref());
            }
            out.pop().map(|m| (*m).clone())
        })
        .collect()
}
