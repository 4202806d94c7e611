//! Session events as written on stdout in RPC and JSON mode (`JsonAgentSessionEvent`), plus the
//! RPC-only `extension_error` record.
//!
//! Field order is the order Pi writes keys. `message_update` is the hot path: use
//! [`MessageUpdateRef`] to serialize it straight from borrowed data.

use crate::assistant_event::WireAssistantEvent;
use crate::message::{AgentMessage, ToolResultMessage};
use crate::results::CompactionResult;
use crate::session_entry::SessionEntry;
use crate::thinking::ThinkingLevel;
use crate::tool::AgentToolResult;
use crate::usage::Usage;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a compaction started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

/// Which summarization is being retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SummarizationSource {
    Compaction,
    BranchSummary,
}

/// One stdout event record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEvent {
    /// A low-level agent run started.
    AgentStart {},
    /// A low-level run ended; `messages` are the messages it produced.
    AgentEnd {
        messages: Vec<AgentMessage>,
        will_retry: bool,
    },
    /// Pi will not continue automatically; ends a session-level run.
    AgentSettled {
        aborted: bool,
    },
    TurnStart {},
    TurnEnd {
        message: AgentMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// A streaming update of the assistant message (wire form: no message snapshot).
    MessageUpdate {
        /// The response's cumulative usage at the time of the update.
        usage: Usage,
        assistant_message_event: WireAssistantEvent<'static>,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        /// Set for calls another tool made (`ctx.executeTool()`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: AgentToolResult,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: AgentToolResult,
        is_error: bool,
        /// Monotonic ms of the tool's execution; absent when the tool did not run.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::num::de_opt_u64"
        )]
        duration_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    /// The complete current steering and follow-up queues (texts).
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    CompactionStart {
        reason: CompactionReason,
    },
    /// `result` on success; `errorMessage` on failure; neither when aborted.
    CompactionEnd {
        reason: CompactionReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<CompactionResult>,
        aborted: bool,
        will_retry: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    AutoRetryStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        attempt: u64,
        #[serde(deserialize_with = "crate::num::de_u64")]
        max_attempts: u64,
        #[serde(deserialize_with = "crate::num::de_u64")]
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        #[serde(deserialize_with = "crate::num::de_u64")]
        attempt: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    SummarizationRetryScheduled {
        #[serde(deserialize_with = "crate::num::de_u64")]
        attempt: u64,
        #[serde(deserialize_with = "crate::num::de_u64")]
        max_attempts: u64,
        #[serde(deserialize_with = "crate::num::de_u64")]
        delay_ms: u64,
        error_message: String,
    },
    /// `reason` is present exactly when `source` is `compaction`.
    SummarizationRetryAttemptStart {
        source: SummarizationSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<CompactionReason>,
    },
    SummarizationRetryFinished {},
    /// A session entry was appended outside the message flow (context edits, extension entries).
    EntryAppended {
        entry: SessionEntry,
    },
    /// The session name changed; absent `name` means cleared.
    SessionInfoChanged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    ThinkingLevelChanged {
        level: ThinkingLevel,
    },
    /// A chunk of output of an RPC `bash` command; `id` is the command's id, if it had one.
    BashExecutionUpdate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        delta: String,
    },
    /// An extension handler threw (RPC only). `extensionPath` may be synthetic
    /// (`command:<name>`, `<runtime>`, `<boundary>`).
    ExtensionError {
        extension_path: String,
        event: String,
        error: String,
    },
}

impl SessionEvent {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            SessionEvent::AgentStart {} => "agent_start",
            SessionEvent::AgentEnd { .. } => "agent_end",
            SessionEvent::AgentSettled { .. } => "agent_settled",
            SessionEvent::TurnStart {} => "turn_start",
            SessionEvent::TurnEnd { .. } => "turn_end",
            SessionEvent::MessageStart { .. } => "message_start",
            SessionEvent::MessageUpdate { .. } => "message_update",
            SessionEvent::MessageEnd { .. } => "message_end",
            SessionEvent::ToolExecutionStart { .. } => "tool_execution_start",
            SessionEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            SessionEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            SessionEvent::QueueUpdate { .. } => "queue_update",
            SessionEvent::CompactionStart { .. } => "compaction_start",
            SessionEvent::CompactionEnd { .. } => "compaction_end",
            SessionEvent::AutoRetryStart { .. } => "auto_retry_start",
            SessionEvent::AutoRetryEnd { .. } => "auto_retry_end",
            SessionEvent::SummarizationRetryScheduled { .. } => "summarization_retry_scheduled",
            SessionEvent::SummarizationRetryAttemptStart { .. } => {
                "summarization_retry_attempt_start"
            }
            SessionEvent::SummarizationRetryFinished {} => "summarization_retry_finished",
            SessionEvent::EntryAppended { .. } => "entry_appended",
            SessionEvent::SessionInfoChanged { .. } => "session_info_changed",
            SessionEvent::ThinkingLevelChanged { .. } => "thinking_level_changed",
            SessionEvent::BashExecutionUpdate { .. } => "bash_execution_update",
            SessionEvent::ExtensionError { .. } => "extension_error",
        }
    }
}

/// A `message_update` record over borrowed data, byte-identical to
/// [`SessionEvent::MessageUpdate`]: `{"type":"message_update","usage":..,"assistantMessageEvent":..}`.
#[derive(Debug, Clone, Copy)]
pub struct MessageUpdateRef<'a> {
    pub usage: &'a Usage,
    pub event: &'a WireAssistantEvent<'a>,
}

impl Serialize for MessageUpdateRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "message_update")?;
        m.serialize_entry("usage", self.usage)?;
        m.serialize_entry("assistantMessageEvent", self.event)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use std::borrow::Cow;

    #[test]
    fn message_update_ref_matches_owned() {
        let usage = Usage::zero();
        let event = WireAssistantEvent::TextDelta {
            content_index: 0,
            delta: Cow::Borrowed("Hello "),
        };
        let borrowed = to_js_string(&MessageUpdateRef {
            usage: &usage,
            event: &event,
        })
        .unwrap();
        let owned = to_js_string(&SessionEvent::MessageUpdate {
            usage: usage.clone(),
            assistant_message_event: event.into_owned(),
        })
        .unwrap();
        assert_eq!(borrowed, owned);
        assert_eq!(
            owned,
            r#"{"type":"message_update","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello "}}"#
        );
    }

    #[test]
    fn simple_events() {
        for s in [
            r#"{"type":"agent_start"}"#,
            r#"{"type":"agent_settled","aborted":false}"#,
            r#"{"type":"summarization_retry_attempt_start","source":"branchSummary"}"#,
            r#"{"type":"summarization_retry_attempt_start","source":"compaction","reason":"threshold"}"#,
            r#"{"type":"session_info_changed"}"#,
            r#"{"type":"bash_execution_update","delta":"x"}"#,
            r#"{"type":"compaction_end","reason":"manual","aborted":true,"willRetry":false}"#,
        ] {
            let e: SessionEvent = serde_json::from_str(s).unwrap();
            assert_eq!(to_js_string(&e).unwrap(), s);
        }
    }
}
