//! Messages (`AgentMessage` of the coding agent): the four LLM roles of pi-ai plus the four
//! coding-agent roles, as they appear in events, RPC data and `message` session entries.
//!
//! All message types keep unknown keys and the key order they were read with (see
//! [`crate::record`]): they are persisted in session files, which must round-trip losslessly,
//! and Pi writes some of them in more than one key order.

use crate::content::{AssistantBlock, SystemContent, UserBlock, UserContent};
use crate::num::StringOrNumber;
use crate::record::{OrderedMap, Rest, record};
use crate::thinking::ThinkingLevel;
use crate::tool::{NestedToolCalls, Tool, ToolReference};
use crate::usage::{StopReason, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

record! {
    /// System instructions and tool declarations at one point of the transcript. The leading one
    /// holds the whole prompt (as `sections`) and every tool; later ones patch sections (`null`
    /// removes one) and add or remove tools.
    pub struct SystemMessage {
        @tag "role" = "system";
        req content: SystemContent = "content";
        opt sections: OrderedMap<Option<String>> = "sections";
        opt tools_added: Vec<Tool> = "toolsAdded";
        opt tools_removed: Vec<ToolReference> = "toolsRemoved";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

impl SystemMessage {
    /// Key order of the system message Pi emits at the start of a run (`timestamp` before the
    /// tool lists). Inside a compaction entry Pi writes the canonical order instead.
    pub const RUN_START_ORDER: &'static [&'static str] = &[
        "role",
        "content",
        "sections",
        "timestamp",
        "toolsAdded",
        "toolsRemoved",
    ];
}

record! {
    /// A user message. Pi builds `content` as blocks; a plain string is kept as read.
    pub struct UserMessage {
        @tag "role" = "user";
        req content: UserContent = "content";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

impl UserMessage {
    pub fn new(content: UserContent, timestamp: u64) -> UserMessage {
        UserMessage {
            content,
            timestamp,
            rest: Rest::default(),
        }
    }
}

record! {
    /// Details of an error a provider adapter recorded on a response.
    pub struct DiagnosticErrorInfo {
        opt name: String = "name";
        req message: String = "message";
        opt stack: String = "stack";
        opt code: StringOrNumber = "code";
    }
}

record! {
    /// A diagnostic note attached to an assistant message (`AssistantMessageDiagnostic`).
    pub struct AssistantMessageDiagnostic {
        req kind: String = "type";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
        opt error: DiagnosticErrorInfo = "error";
        opt details: Map<String, Value> = "details";
    }
}

record! {
    /// Handle of a response the provider finishes asynchronously (`DeferredHandle`).
    pub struct DeferredHandle {
        req provider: String = "provider";
        req model_id: String = "modelId";
        req api: String = "api";
        req id: String = "id";
        opt expires_at: u64 = "expiresAt" via crate::num::de_u64;
        opt poll_after_ms: u64 = "pollAfterMs" via crate::num::de_u64;
        any data: Value = "data";
    }
}

record! {
    /// A model response.
    ///
    /// Canonical key order: `role, content, api, provider, model, usage, stopReason, timestamp`,
    /// then the optional keys in the order the provider adapters assign them
    /// (`providerThinkingLevel` when the request is built, `responseId`/`responseModel` from the
    /// first chunk, `rawStopReason` then `errorMessage` at the end, `durationMs` from the event
    /// stream, `thinkingLevel` from the agent loop). See [`AssistantMessage::FAILURE_ORDER`]
    /// for the one path that differs.
    pub struct AssistantMessage {
        @tag "role" = "assistant";
        req content: Vec<AssistantBlock> = "content";
        req api: String = "api";
        req provider: String = "provider";
        req model: String = "model";
        /// Boxed: every message of a loaded session is as large as this, the largest variant.
        req usage: Box<Usage> = "usage";
        req stop_reason: StopReason = "stopReason";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
        /// Provider-native effort level used for this response.
        opt provider_thinking_level: String = "providerThinkingLevel";
        opt response_id: String = "responseId";
        /// The concrete model the provider reported, when it reports one.
        opt response_model: String = "responseModel";
        opt raw_stop_reason: String = "rawStopReason";
        opt error_message: String = "errorMessage";
        opt diagnostics: Vec<AssistantMessageDiagnostic> = "diagnostics";
        opt end_turn: bool = "endTurn";
        opt deferred: Box<DeferredHandle> = "deferred";
        /// Monotonic milliseconds from request start to the end of the response.
        opt duration_ms: u64 = "durationMs" via crate::num::de_u64;
        /// The thinking level the agent loop requested (`off` when none).
        opt thinking_level: ThinkingLevel = "thinkingLevel";
    }
}

impl AssistantMessage {
    /// Key order of the message pi-agent-core synthesizes when its loop throws
    /// (`errorMessage` before `timestamp`).
    pub const FAILURE_ORDER: &'static [&'static str] = &[
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "errorMessage",
        "timestamp",
    ];

    /// An empty response for `api`/`provider`/`model` with zero usage.
    pub fn new(
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        stop_reason: StopReason,
        timestamp: u64,
    ) -> AssistantMessage {
        AssistantMessage {
            content: Vec::new(),
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            usage: Box::new(Usage::zero()),
            stop_reason,
            timestamp,
            provider_thinking_level: None,
            response_id: None,
            response_model: None,
            raw_stop_reason: None,
            error_message: None,
            diagnostics: None,
            end_turn: None,
            deferred: None,
            duration_ms: None,
            thinking_level: None,
            rest: Rest::default(),
        }
    }

    /// The text blocks joined without separator.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

record! {
    /// The result of one tool call, as the model sees it. Tool-specific `details` are kept for
    /// the UI; `usage` is nested model work done by the tool.
    pub struct ToolResultMessage {
        @tag "role" = "toolResult";
        req tool_call_id: String = "toolCallId";
        req tool_name: String = "toolName";
        req content: Vec<UserBlock> = "content";
        any details: Value = "details";
        opt usage: Box<Usage> = "usage";
        opt nested_calls: NestedToolCalls = "nestedCalls";
        req is_error: bool = "isError";
        /// Monotonic milliseconds the tool's execution took; absent when it never ran.
        opt duration_ms: u64 = "durationMs" via crate::num::de_u64;
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

impl ToolResultMessage {
    /// A result of one text block and nothing else (no details, usage, duration or nested calls).
    pub fn text(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: &str,
        is_error: bool,
        timestamp: u64,
    ) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: vec![UserBlock::Text(crate::content::TextContent::new(text))],
            details: None,
            usage: None,
            nested_calls: None,
            is_error,
            duration_ms: None,
            timestamp,
            rest: Rest::default(),
        }
    }
}

record! {
    /// A shell command the user ran directly (RPC `bash`), not a model tool call.
    pub struct BashExecutionMessage {
        @tag "role" = "bashExecution";
        req command: String = "command";
        text output: String = "output";
        /// Absent when the command was cancelled.
        opt exit_code: i64 = "exitCode" via crate::num::de_i64;
        req cancelled: bool = "cancelled";
        req truncated: bool = "truncated";
        opt full_output_path: String = "fullOutputPath";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
        /// When true the message is not shown to the model.
        opt exclude_from_context: bool = "excludeFromContext";
    }
}

record! {
    /// A message an extension injected into the context. `details` never reach the model.
    pub struct CustomMessage {
        @tag "role" = "custom";
        req custom_type: String = "customType";
        req content: UserContent = "content";
        req display: bool = "display";
        any details: Value = "details";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

record! {
    /// Context message projected from a `branch_summary` entry.
    pub struct BranchSummaryMessage {
        @tag "role" = "branchSummary";
        req summary: String = "summary";
        nul from_id: String = "fromId";
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

record! {
    /// Context message projected from a `compaction` entry.
    pub struct CompactionSummaryMessage {
        @tag "role" = "compactionSummary";
        req summary: String = "summary";
        req tokens_before: u64 = "tokensBefore" via crate::num::de_u64;
        req timestamp: u64 = "timestamp" via crate::num::de_u64;
    }
}

/// Any message, discriminated by `role`. Messages with a role Pi 1.6.0 does not define (an
/// extension host may add roles) are kept verbatim in [`AgentMessage::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    Custom(CustomMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage),
    Other(Map<String, Value>),
}

impl AgentMessage {
    /// The `role` string.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom(_) => "custom",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::Other(m) => m.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The message `timestamp` (Unix ms), if it has one.
    pub fn timestamp(&self) -> Option<u64> {
        Some(match self {
            AgentMessage::System(m) => m.timestamp,
            AgentMessage::User(m) => m.timestamp,
            AgentMessage::Assistant(m) => m.timestamp,
            AgentMessage::ToolResult(m) => m.timestamp,
            AgentMessage::BashExecution(m) => m.timestamp,
            AgentMessage::Custom(m) => m.timestamp,
            AgentMessage::BranchSummary(m) => m.timestamp,
            AgentMessage::CompactionSummary(m) => m.timestamp,
            AgentMessage::Other(m) => return m.get("timestamp").and_then(Value::as_u64),
        })
    }

    /// Builds the message from a parsed JSON object, dispatching on `role`.
    pub fn from_map(map: Map<String, Value>) -> Result<AgentMessage, serde_json::Error> {
        let role = match map.get("role") {
            Some(Value::String(r)) => r.clone(),
            _ => return Ok(AgentMessage::Other(map)),
        };
        Ok(match role.as_str() {
            "system" => AgentMessage::System(SystemMessage::from_map(map)?),
            "user" => AgentMessage::User(UserMessage::from_map(map)?),
            "assistant" => AgentMessage::Assistant(AssistantMessage::from_map(map)?),
            "toolResult" => AgentMessage::ToolResult(ToolResultMessage::from_map(map)?),
            "bashExecution" => AgentMessage::BashExecution(BashExecutionMessage::from_map(map)?),
            "custom" => AgentMessage::Custom(CustomMessage::from_map(map)?),
            "branchSummary" => AgentMessage::BranchSummary(BranchSummaryMessage::from_map(map)?),
            "compactionSummary" => {
                AgentMessage::CompactionSummary(CompactionSummaryMessage::from_map(map)?)
            }
            _ => AgentMessage::Other(map),
        })
    }
}

impl Serialize for AgentMessage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::System(m) => m.serialize(s),
            AgentMessage::User(m) => m.serialize(s),
            AgentMessage::Assistant(m) => m.serialize(s),
            AgentMessage::ToolResult(m) => m.serialize(s),
            AgentMessage::BashExecution(m) => m.serialize(s),
            AgentMessage::Custom(m) => m.serialize(s),
            AgentMessage::BranchSummary(m) => m.serialize(s),
            AgentMessage::CompactionSummary(m) => m.serialize(s),
            AgentMessage::Other(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        AgentMessage::from_map(map).map_err(serde::de::Error::custom)
    }
}

macro_rules! message_from {
    ($($variant:ident($ty:ty)),*) => {
        $(impl From<$ty> for AgentMessage {
            fn from(m: $ty) -> Self {
                AgentMessage::$variant(m)
            }
        })*
    };
}
message_from!(
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    Custom(CustomMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage)
);

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn rt(s: &str) -> AgentMessage {
        let m: AgentMessage = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&m).unwrap(), s);
        m
    }

    #[test]
    fn both_system_message_orders_round_trip() {
        let a = rt(
            r#"{"role":"system","content":"","sections":{"preamble":"p","cwd":null},"timestamp":5,"toolsAdded":[{"name":"n","description":"d","parameters":{}}]}"#,
        );
        let b = rt(
            r#"{"role":"system","content":"","sections":{"preamble":"p","cwd":null},"toolsAdded":[{"name":"n","description":"d","parameters":{}}],"timestamp":5}"#,
        );
        assert_eq!(a, b);
        let AgentMessage::System(mut built) = b else {
            panic!()
        };
        built.rest = Rest::with_order(SystemMessage::RUN_START_ORDER);
        assert_eq!(
            to_js_string(&built).unwrap(),
            r#"{"role":"system","content":"","sections":{"preamble":"p","cwd":null},"timestamp":5,"toolsAdded":[{"name":"n","description":"d","parameters":{}}]}"#
        );
    }

    #[test]
    fn assistant_orders() {
        rt(
            r#"{"role":"assistant","content":[{"type":"text","text":""}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"boom","timestamp":1}"#,
        );
        let mut m = AssistantMessage::new("a", "p", "m", StopReason::Aborted, 1);
        m.error_message = Some("x".into());
        m.rest = Rest::with_order(AssistantMessage::FAILURE_ORDER);
        assert!(
            to_js_string(&m)
                .unwrap()
                .ends_with(r#""stopReason":"aborted","errorMessage":"x","timestamp":1}"#)
        );
    }

    #[test]
    fn unknown_roles_and_keys_are_kept() {
        let m = rt(r#"{"role":"notification","text":"x","timestamp":3}"#);
        assert_eq!(m.role(), "notification");
        rt(r#"{"role":"user","content":"hi","timestamp":1,"extra":true}"#);
        rt(r#"{"role":"branchSummary","summary":"s","fromId":null,"timestamp":2}"#);
        rt(
            r#"{"role":"bashExecution","command":"c","output":"","cancelled":true,"truncated":false,"timestamp":1,"excludeFromContext":true}"#,
        );
    }
}
