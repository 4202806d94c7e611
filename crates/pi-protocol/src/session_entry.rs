//! Session file records (v3 JSONL): the header line and every entry type Pi 1.6.0 writes,
//! plus the `get_tree` node shape. RPC `get_entries`/`get_tree`/`entry_appended` carry these
//! objects verbatim.
//!
//! Entries are records (see [`crate::record`]): a session file must round-trip losslessly,
//! whatever Pi version wrote it, so unknown keys and key order are kept. `custom` and
//! `custom_message` entries put `id, parentId, timestamp` last, unlike every other entry.

use crate::content::{EditableContent, UserContent};
use crate::message::SystemMessage;
use crate::record::record;
use crate::shared_message::SharedMessage;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The session format version Pi 1.6.0 writes.
pub const CURRENT_SESSION_VERSION: u64 = 3;

record! {
    /// The first line of a session file. `version` is absent in v1 files; after a migration Pi
    /// sets it in place, so it then comes last (the recorded order keeps that).
    pub struct SessionHeader {
        @tag "type" = "session";
        opt version: u64 = "version" via crate::num::de_u64;
        req id: String = "id";
        /// ISO 8601 time the session was created.
        req timestamp: String = "timestamp";
        req cwd: String = "cwd";
        /// The session file this one was forked or cloned from.
        opt parent_session: String = "parentSession";
    }
}

record! {
    /// A message of the conversation.
    pub struct MessageEntry {
        @tag "type" = "message";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req message: SharedMessage = "message";
    }
}

record! {
    /// The thinking level changed (the value is stored unvalidated).
    pub struct ThinkingLevelChangeEntry {
        @tag "type" = "thinking_level_change";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req thinking_level: String = "thinkingLevel";
    }
}

record! {
    /// The model changed.
    pub struct ModelChangeEntry {
        @tag "type" = "model_change";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req provider: String = "provider";
        req model_id: String = "modelId";
    }
}

record! {
    /// Model usage outside the conversation (e.g. `kind:"cache_warm"`).
    pub struct UsageEntry {
        @tag "type" = "usage";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req kind: String = "kind";
        req provider: String = "provider";
        req model: String = "model";
        req usage: Usage = "usage";
        opt note: String = "note";
    }
}

record! {
    /// A compaction: everything before `firstKeptEntryId` is replaced by `summary` (and the
    /// replayed prompt state `systemMessage`) in the context.
    pub struct CompactionEntry {
        @tag "type" = "compaction";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req summary: String = "summary";
        req first_kept_entry_id: String = "firstKeptEntryId";
        req tokens_before: u64 = "tokensBefore" via crate::num::de_u64;
        /// Extension- or Pi-defined data (Pi: `{readFiles, modifiedFiles}`).
        any details: Value = "details";
        opt usage: Usage = "usage";
        /// True when an extension supplied the summary.
        opt from_hook: bool = "fromHook";
        opt system_message: SystemMessage = "systemMessage";
    }
}

record! {
    /// A summary of a branch the conversation left; `fromId` is the old leaf (or `"root"`).
    pub struct BranchSummaryEntry {
        @tag "type" = "branch_summary";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req from_id: String = "fromId";
        req summary: String = "summary";
        any details: Value = "details";
        opt usage: Usage = "usage";
        opt from_hook: bool = "fromHook";
    }
}

record! {
    /// Extension state; not part of the context.
    pub struct CustomEntry {
        @tag "type" = "custom";
        req custom_type: String = "customType";
        any data: Value = "data";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
    }
}

record! {
    /// An extension message that is part of the context (as a `custom` message).
    pub struct CustomMessageEntry {
        @tag "type" = "custom_message";
        req custom_type: String = "customType";
        req content: UserContent = "content";
        req display: bool = "display";
        any details: Value = "details";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
    }
}

record! {
    /// The replacement of a context edit: new content for the target message.
    pub struct ContextEditReplacement {
        req content: EditableContent = "content";
    }
}

record! {
    /// Changes what an earlier entry contributes to the context: `replacement:null` omits it.
    pub struct ContextEditEntry {
        @tag "type" = "context_edit";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req target_id: String = "targetId";
        nul replacement: ContextEditReplacement = "replacement";
    }
}

record! {
    /// Sets (or, without `label`, clears) the label of an entry.
    pub struct LabelEntry {
        @tag "type" = "label";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        req target_id: String = "targetId";
        opt label: String = "label";
    }
}

record! {
    /// Session metadata: the display name.
    pub struct SessionInfoEntry {
        @tag "type" = "session_info";
        req id: String = "id";
        nul parent_id: String = "parentId";
        req timestamp: String = "timestamp";
        opt name: String = "name";
    }
}

/// Any session entry, discriminated by `type`. Entries of a type Pi 1.6.0 does not define are
/// kept verbatim in [`SessionEntry::Other`] so a file still round-trips.
#[derive(Debug, Clone, PartialEq)]
///
/// Large, rare entry types are boxed: a long session is mostly `message` entries, and every
/// entry pays for the largest inline variant (472 bytes unboxed, 136 boxed).
pub enum SessionEntry {
    Message(MessageEntry),
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    ModelChange(ModelChangeEntry),
    Usage(Box<UsageEntry>),
    Compaction(Box<CompactionEntry>),
    BranchSummary(Box<BranchSummaryEntry>),
    Custom(Box<CustomEntry>),
    CustomMessage(Box<CustomMessageEntry>),
    ContextEdit(Box<ContextEditEntry>),
    Label(LabelEntry),
    SessionInfo(SessionInfoEntry),
    Other(Map<String, Value>),
}

macro_rules! entry_dispatch {
    ($($variant:ident($ty:ty) = $tag:literal),* $(,)?) => {
        impl SessionEntry {
            /// Builds the entry from a parsed JSON object, dispatching on `type`.
            pub fn from_map(map: Map<String, Value>) -> Result<SessionEntry, serde_json::Error> {
                let kind = match map.get("type") {
                    Some(Value::String(t)) => t.clone(),
                    _ => return Ok(SessionEntry::Other(map)),
                };
                Ok(match kind.as_str() {
                    $( $tag => SessionEntry::$variant(<$ty>::from_map(map)?.into()), )*
                    _ => SessionEntry::Other(map),
                })
            }

            /// The entry `type`.
            pub fn kind(&self) -> &str {
                match self {
                    $( SessionEntry::$variant(_) => $tag, )*
                    SessionEntry::Other(m) => m.get("type").and_then(Value::as_str).unwrap_or(""),
                }
            }

            /// The entry id (`None` only for a foreign entry without a string `id`).
            pub fn id(&self) -> Option<&str> {
                match self {
                    $( SessionEntry::$variant(e) => Some(&e.id), )*
                    SessionEntry::Other(m) => m.get("id").and_then(Value::as_str),
                }
            }

            /// The parent entry id; `None` for a root.
            pub fn parent_id(&self) -> Option<&str> {
                match self {
                    $( SessionEntry::$variant(e) => e.parent_id.as_deref(), )*
                    SessionEntry::Other(m) => m.get("parentId").and_then(Value::as_str),
                }
            }

            /// The ISO 8601 entry timestamp.
            pub fn timestamp(&self) -> Option<&str> {
                match self {
                    $( SessionEntry::$variant(e) => Some(&e.timestamp), )*
                    SessionEntry::Other(m) => m.get("timestamp").and_then(Value::as_str),
                }
            }
        }

        impl Serialize for SessionEntry {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( SessionEntry::$variant(e) => e.serialize(s), )*
                    SessionEntry::Other(m) => m.serialize(s),
                }
            }
        }

        $(impl From<$ty> for SessionEntry {
            fn from(e: $ty) -> Self {
                SessionEntry::$variant(e.into())
            }
        })*
    };
}

entry_dispatch!(
    Message(MessageEntry) = "message",
    ThinkingLevelChange(ThinkingLevelChangeEntry) = "thinking_level_change",
    ModelChange(ModelChangeEntry) = "model_change",
    Usage(UsageEntry) = "usage",
    Compaction(CompactionEntry) = "compaction",
    BranchSummary(BranchSummaryEntry) = "branch_summary",
    Custom(CustomEntry) = "custom",
    CustomMessage(CustomMessageEntry) = "custom_message",
    ContextEdit(ContextEditEntry) = "context_edit",
    Label(LabelEntry) = "label",
    SessionInfo(SessionInfoEntry) = "session_info",
);

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        SessionEntry::from_map(map).map_err(serde::de::Error::custom)
    }
}

/// One line of a session file: the header or an entry.
// Values are transient (one per line while loading), so the size difference does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum FileEntry {
    Header(SessionHeader),
    Entry(SessionEntry),
}

impl FileEntry {
    pub fn from_map(map: Map<String, Value>) -> Result<FileEntry, serde_json::Error> {
        if map.get("type").and_then(Value::as_str) == Some("session") {
            SessionHeader::from_map(map).map(FileEntry::Header)
        } else {
            SessionEntry::from_map(map).map(FileEntry::Entry)
        }
    }
}

impl Serialize for FileEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FileEntry::Header(h) => h.serialize(s),
            FileEntry::Entry(e) => e.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for FileEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        FileEntry::from_map(map).map_err(serde::de::Error::custom)
    }
}

/// A node of `get_tree`: an entry, its children (sorted by timestamp), and its resolved label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTreeNode {
    pub entry: SessionEntry,
    pub children: Vec<SessionTreeNode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Timestamp of the latest label change for this entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_timestamp: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn entries_round_trip() {
        for s in [
            r#"{"type":"session","id":"x","timestamp":"t","cwd":"/w","version":3}"#,
            r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/w","parentSession":"/p.jsonl"}"#,
            r#"{"type":"custom","customType":"no-data","id":"15d3a5d3","parentId":"698f05c8","timestamp":"t"}"#,
            r#"{"type":"context_edit","id":"a","parentId":"b","timestamp":"t","targetId":"b","replacement":null}"#,
            r#"{"type":"context_edit","id":"a","parentId":"b","timestamp":"t","targetId":"b","replacement":{"content":"x"}}"#,
            r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"b"}"#,
            r#"{"type":"usage","id":"a","parentId":"b","timestamp":"t","kind":"cache_warm","provider":"p","model":"m","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"note":"n"}"#,
            r#"{"type":"future_kind","id":"a","parentId":"b","timestamp":"t","x":1}"#,
        ] {
            let e: FileEntry = serde_json::from_str(s).unwrap();
            assert_eq!(to_js_string(&e).unwrap(), s);
        }
    }
}
