//! Session events as written on stdout in RPC and JSON mode (`JsonAgentSessionEvent`), plus the
//! RPC-only `extension_error` record.
//!
//! Field order is the order Pi writes keys. The events of the agent loop are written from
//! borrowed data through [`AgentEventRef`] (no message, result or delta is copied), which
//! serializes byte-identically to the matching [`SessionEvent`].

use crate::SharedMessage;
use crate::assistant_event::WireAssistantEvent;
use crate::message::{AgentMessage, ToolResultMessage};
use crate::results::CompactionResult;
use crate::session_entry::SessionEntry;
use crate::thinking::ThinkingLevel;
use crate::tool::AgentToolResult;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Why a compaction started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

/// Which summarization is being retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SummarizationSource {
    Compaction,
    BranchSummary,
}

/// One stdout event record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// Every event `type` ([`SessionEvent`]), in declaration order (`get_protocol_info` lists them;
/// a test checks the list against the schema of the enum).
pub const EVENT_TYPES: &[&str] = &[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_update",
    "compaction_start",
    "compaction_end",
    "auto_retry_start",
    "auto_retry_end",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "bash_execution_update",
    "extension_error",
];

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

/// The agent-loop events of [`SessionEvent`] over borrowed data: what RPC and JSON mode write
/// for every event of a run. Each variant serializes byte-identically to the `SessionEvent`
/// variant of the same name ([`SessionEvent::as_agent_event`] gives the pairing).
// Built on the stack for one write and dropped: boxing the `message_update` payload would
// allocate once per streamed delta.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AgentEventRef<'a> {
    AgentStart {},
    AgentEnd {
        messages: MessagesRef<'a, AgentMessage>,
        will_retry: bool,
    },
    TurnStart {},
    TurnEnd {
        message: MessageRef<'a>,
        tool_results: MessagesRef<'a, ToolResultMessage>,
    },
    MessageStart {
        message: MessageRef<'a>,
    },
    MessageUpdate {
        usage: UsageRef<'a>,
        assistant_message_event: WireAssistantEvent<'a>,
    },
    MessageEnd {
        message: MessageRef<'a>,
    },
    ToolExecutionStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<&'a str>,
    },
    ToolExecutionUpdate {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
        partial_result: &'a AgentToolResult,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<&'a str>,
    },
    ToolExecutionEnd {
        tool_call_id: &'a str,
        tool_name: &'a str,
        result: &'a AgentToolResult,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<&'a str>,
    },
}

/// One message in an [`AgentEventRef`]: the agent loop's shared one (whose long text the
/// JSON memo writes once for all its records, see [`crate::message_json_memo`]), or a
/// [`SessionEvent`]'s own. Both write the same JSON object.
#[derive(Debug, Clone, Copy)]
pub enum MessageRef<'a> {
    Shared(&'a SharedMessage),
    Owned(&'a AgentMessage),
}

impl Serialize for MessageRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MessageRef::Shared(m) => m.serialize(s),
            MessageRef::Owned(m) => m.serialize(s),
        }
    }
}

/// A list of messages in an [`AgentEventRef`]: the agent loop's shared ones, or a
/// [`SessionEvent`]'s own. Both write the same JSON array: a shared message serializes as its
/// [`AgentMessage`], which writes each variant as the message type itself.
#[derive(Debug)]
pub enum MessagesRef<'a, T> {
    Shared(&'a [SharedMessage]),
    Owned(&'a [T]),
}

// By hand: a derive would require `T: Copy`, and only references are copied.
impl<T> Clone for MessagesRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for MessagesRef<'_, T> {}

impl<T: Serialize> Serialize for MessagesRef<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MessagesRef::Shared(m) => m.serialize(s),
            MessagesRef::Owned(m) => m.serialize(s),
        }
    }
}

/// The `usage` of a `message_update`: the value, or the same value already serialized (it
/// rarely changes between the deltas of one response).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub enum UsageRef<'a> {
    Value(&'a Usage),
    Serialized(&'a RawValue),
}

impl SessionEvent {
    /// This event as an [`AgentEventRef`], for the agent-loop events; `None` for the others.
    pub fn as_agent_event(&self) -> Option<AgentEventRef<'_>> {
        use AgentEventRef as R;
        Some(match self {
            SessionEvent::AgentStart {} => R::AgentStart {},
            SessionEvent::AgentEnd {
                messages,
                will_retry,
            } => R::AgentEnd {
                messages: MessagesRef::Owned(messages),
                will_retry: *will_retry,
            },
            SessionEvent::TurnStart {} => R::TurnStart {},
            SessionEvent::TurnEnd {
                message,
                tool_results,
            } => R::TurnEnd {
                message: MessageRef::Owned(message),
                tool_results: MessagesRef::Owned(tool_results),
            },
            SessionEvent::MessageStart { message } => R::MessageStart {
                message: MessageRef::Owned(message),
            },
            SessionEvent::MessageUpdate {
                usage,
                assistant_message_event,
            } => R::MessageUpdate {
                usage: UsageRef::Value(usage),
                assistant_message_event: assistant_message_event.clone(),
            },
            SessionEvent::MessageEnd { message } => R::MessageEnd {
                message: MessageRef::Owned(message),
            },
            SessionEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id,
            } => R::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id: parent_tool_call_id.as_deref(),
            },
            SessionEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
                parent_tool_call_id,
            } => R::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
                parent_tool_call_id: parent_tool_call_id.as_deref(),
            },
            SessionEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
                parent_tool_call_id,
            } => R::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error: *is_error,
                duration_ms: *duration_ms,
                parent_tool_call_id: parent_tool_call_id.as_deref(),
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use std::borrow::Cow;

    #[test]
    fn borrowed_message_update_matches_owned() {
        let usage = Usage::zero();
        let event = WireAssistantEvent::TextDelta {
            content_index: 0,
            delta: Cow::Borrowed("Hello "),
        };
        let borrowed = to_js_string(&AgentEventRef::MessageUpdate {
            usage: UsageRef::Value(&usage),
            assistant_message_event: event.clone(),
        })
        .unwrap();
        let usage_json = RawValue::from_string(to_js_string(&usage).unwrap()).unwrap();
        let cached = to_js_string(&AgentEventRef::MessageUpdate {
            usage: UsageRef::Serialized(&usage_json),
            assistant_message_event: event.clone(),
        })
        .unwrap();
        let owned = to_js_string(&SessionEvent::MessageUpdate {
            usage: usage.clone(),
            assistant_message_event: event.into_owned(),
        })
        .unwrap();
        assert_eq!(borrowed, owned);
        assert_eq!(cached, owned);
        assert_eq!(
            owned,
            r#"{"type":"message_update","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello "}}"#
        );
    }

    #[test]
    fn shared_messages_write_as_the_owned_ones() {
        let assistant = r#"{"role":"assistant","content":[{"type":"text","text":""}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}"#;
        let result = r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x\n"}],"details":{"b":1,"a":[0.5,null]},"isError":false,"durationMs":3,"timestamp":2}"#;
        let user = r#"{"role":"user","content":"go","timestamp":0}"#;
        let turn_end = format!(
            r#"{{"type":"turn_end","message":{assistant},"toolResults":[{result},{result}]}}"#
        );
        let agent_end = format!(
            r#"{{"type":"agent_end","messages":[{user},{assistant},{result}],"willRetry":true}}"#
        );
        for line in [&turn_end, &agent_end] {
            let event: SessionEvent = serde_json::from_str(line).unwrap();
            assert_eq!(to_js_string(&event).unwrap(), *line);
            assert_eq!(
                to_js_string(&event.as_agent_event().unwrap()).unwrap(),
                *line
            );
            let written = match &event {
                SessionEvent::TurnEnd {
                    message,
                    tool_results,
                } => {
                    let results: Vec<_> = tool_results
                        .iter()
                        .map(|t| SharedMessage::new(AgentMessage::ToolResult(t.clone())))
                        .collect();
                    to_js_string(&AgentEventRef::TurnEnd {
                        message: MessageRef::Owned(message),
                        tool_results: MessagesRef::Shared(&results),
                    })
                }
                SessionEvent::AgentEnd {
                    messages,
                    will_retry,
                } => {
                    let messages: Vec<_> =
                        messages.iter().cloned().map(SharedMessage::new).collect();
                    to_js_string(&AgentEventRef::AgentEnd {
                        messages: MessagesRef::Shared(&messages),
                        will_retry: *will_retry,
                    })
                }
                _ => unreachable!(),
            };
            assert_eq!(written.unwrap(), *line);
        }
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
