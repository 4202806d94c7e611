//! Events of the agent loop, and their wire form.

use pi_ai::StreamEvent;
use pi_protocol::assistant_event::WireAssistantEvent;
use pi_protocol::message::{AgentMessage, ToolResultMessage};
use pi_protocol::tool::AgentToolResult;
use pi_protocol::usage::Usage;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::borrow::Cow;

/// One step of a low-level run (`AgentEvent` of pi-agent-core).
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    TurnStart,
    MessageStart {
        message: AgentMessage,
    },
    /// A streaming update of the assistant message; never a terminal stream event.
    MessageUpdate {
        event: StreamEvent,
    },
    /// The finished message, shared with the transcript and the session entry.
    MessageEnd {
        message: std::sync::Arc<AgentMessage>,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: AgentToolResult,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: AgentToolResult,
        is_error: bool,
        duration_ms: Option<u64>,
    },
    TurnEnd {
        message: AgentMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    /// `messages` are the messages this low-level run produced.
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
}

impl AgentEvent {
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::AgentEnd { .. } => "agent_end",
        }
    }

    /// The stdout record of this event. `agent_end` carries the session's `willRetry`.
    pub fn wire(&self, will_retry: bool) -> WireAgentEvent<'_> {
        WireAgentEvent {
            event: self,
            will_retry,
            usage_json: None,
        }
    }

    /// The running usage a `message_update` carries.
    pub fn update_usage(&self) -> Option<&Usage> {
        match self {
            AgentEvent::MessageUpdate { event } => Some(wire_update(event).0),
            _ => None,
        }
    }
}

/// Serializes an [`AgentEvent`] exactly as Pi writes it in RPC and JSON mode.
pub struct WireAgentEvent<'a> {
    event: &'a AgentEvent,
    will_retry: bool,
    /// A `message_update`'s usage, already serialized (it rarely changes between deltas).
    usage_json: Option<&'a serde_json::value::RawValue>,
}

impl<'a> WireAgentEvent<'a> {
    /// Writes `usage` (the serialized [`AgentEvent::update_usage`]) as the usage of a
    /// `message_update`.
    pub fn with_usage_json(mut self, usage: &'a serde_json::value::RawValue) -> Self {
        self.usage_json = Some(usage);
        self
    }
}

impl Serialize for WireAgentEvent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", self.event.type_name())?;
        match self.event {
            AgentEvent::AgentStart | AgentEvent::TurnStart => {}
            AgentEvent::MessageStart { message } => m.serialize_entry("message", message)?,
            AgentEvent::MessageEnd { message } => m.serialize_entry("message", message)?,
            AgentEvent::MessageUpdate { event } => {
                let (usage, wire) = wire_update(event);
                match self.usage_json {
                    Some(raw) => m.serialize_entry("usage", raw)?,
                    None => m.serialize_entry("usage", usage)?,
                }
                m.serialize_entry("assistantMessageEvent", &wire)?;
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("args", args)?;
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("args", args)?;
                m.serialize_entry("partialResult", partial_result)?;
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("result", result)?;
                m.serialize_entry("isError", is_error)?;
                if let Some(d) = duration_ms {
                    m.serialize_entry("durationMs", d)?;
                }
            }
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                m.serialize_entry("message", message)?;
                m.serialize_entry("toolResults", tool_results)?;
            }
            AgentEvent::AgentEnd { messages } => {
                m.serialize_entry("messages", messages)?;
                m.serialize_entry("willRetry", &self.will_retry)?;
            }
        }
        m.end()
    }
}

static ZERO_USAGE: std::sync::LazyLock<Usage> = std::sync::LazyLock::new(Usage::zero);

/// The `usage` and `assistantMessageEvent` of a `message_update`, borrowing the deltas.
fn wire_update(event: &StreamEvent) -> (&Usage, WireAssistantEvent<'_>) {
    use WireAssistantEvent as W;
    let idx = |i: &usize| *i as u64;
    match event {
        StreamEvent::Start { partial } => (&partial.usage, W::Start {}),
        StreamEvent::TextStart { index, usage } => (
            usage,
            W::TextStart {
                content_index: idx(index),
            },
        ),
        StreamEvent::TextDelta {
            index,
            delta,
            usage,
        } => (
            usage,
            W::TextDelta {
                content_index: idx(index),
                delta: Cow::Borrowed(delta),
            },
        ),
        StreamEvent::TextEnd {
            index,
            content,
            usage,
        } => (
            usage,
            W::TextEnd {
                content_index: idx(index),
                content: Cow::Borrowed(content),
            },
        ),
        StreamEvent::ThinkingStart { index, usage } => (
            usage,
            W::ThinkingStart {
                content_index: idx(index),
            },
        ),
        StreamEvent::ThinkingDelta {
            index,
            delta,
            usage,
        } => (
            usage,
            W::ThinkingDelta {
                content_index: idx(index),
                delta: Cow::Borrowed(delta),
            },
        ),
        StreamEvent::ThinkingEnd {
            index,
            content,
            usage,
        } => (
            usage,
            W::ThinkingEnd {
                content_index: idx(index),
                content: Cow::Borrowed(content),
            },
        ),
        StreamEvent::ToolcallStart {
            index,
            id,
            name,
            usage,
        } => (
            usage,
            W::ToolcallStart {
                content_index: idx(index),
                id: Cow::Borrowed(id),
                tool_name: Cow::Borrowed(name),
            },
        ),
        StreamEvent::ToolcallDelta {
            index,
            delta,
            usage,
        } => (
            usage,
            W::ToolcallDelta {
                content_index: idx(index),
                delta: Cow::Borrowed(delta),
            },
        ),
        StreamEvent::ToolcallEnd {
            index,
            tool_call,
            usage,
        } => (
            usage,
            W::ToolcallEnd {
                content_index: idx(index),
                tool_call: Cow::Borrowed(tool_call),
            },
        ),
        // Terminal events never become message_update; keep the function total anyway.
        StreamEvent::Done { .. } | StreamEvent::Error { .. } => (&ZERO_USAGE, W::Start {}),
    }
}
