//! Events of the agent loop, and their wire form.

use pi_ai::StreamEvent;
use pi_protocol::SharedMessage;
use pi_protocol::assistant_event::WireAssistantEvent;
use pi_protocol::event::{AgentEventRef, MessageRef, MessagesRef, UsageRef};
use pi_protocol::tool::AgentToolResult;
use pi_protocol::usage::Usage;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// One step of a low-level run (`AgentEvent` of pi-agent-core). Messages are shared, not
/// copied: the message a `message_end` reports is the one the transcript, the turn and the
/// run's end hold (tool results are often long).
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    TurnStart,
    MessageStart {
        message: SharedMessage,
    },
    /// A streaming update of the assistant message; never a terminal stream event.
    MessageUpdate {
        event: StreamEvent,
    },
    /// The finished message, shared with the transcript and the session entry.
    MessageEnd {
        message: SharedMessage,
    },
    /// `parent_tool_call_id`: the call of the tool (codemode) that made this nested call.
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: AgentToolResult,
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: AgentToolResult,
        is_error: bool,
        duration_ms: Option<u64>,
        parent_tool_call_id: Option<String>,
    },
    /// `message` is the assistant message; `tool_results` are tool-result messages.
    TurnEnd {
        message: SharedMessage,
        tool_results: Vec<SharedMessage>,
    },
    /// `messages` are the messages this low-level run produced.
    AgentEnd {
        messages: Vec<SharedMessage>,
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

    /// The stdout record of this event. `agent_end` carries the session's `willRetry`; a
    /// `message_update` writes `usage_json` (its [`Self::update_usage`], already serialized)
    /// when given.
    pub fn wire<'a>(
        &'a self,
        will_retry: bool,
        usage_json: Option<&'a RawValue>,
    ) -> AgentEventRef<'a> {
        use AgentEventRef as R;
        match self {
            AgentEvent::AgentStart => R::AgentStart {},
            AgentEvent::TurnStart => R::TurnStart {},
            AgentEvent::MessageStart { message } => R::MessageStart {
                message: MessageRef::Shared(message),
            },
            AgentEvent::MessageUpdate { event } => {
                let (usage, assistant_message_event) = wire_update(event);
                R::MessageUpdate {
                    usage: match usage_json {
                        Some(raw) => UsageRef::Serialized(raw),
                        None => UsageRef::Value(usage),
                    },
                    assistant_message_event,
                }
            }
            AgentEvent::MessageEnd { message } => R::MessageEnd {
                message: MessageRef::Shared(message),
            },
            AgentEvent::ToolExecutionStart {
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
            AgentEvent::ToolExecutionUpdate {
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
            AgentEvent::ToolExecutionEnd {
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
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => R::TurnEnd {
                message: MessageRef::Shared(message),
                tool_results: MessagesRef::Shared(tool_results),
            },
            AgentEvent::AgentEnd { messages } => R::AgentEnd {
                messages: MessagesRef::Shared(messages),
                will_retry,
            },
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
            signature,
            usage,
        } => (
            usage,
            W::TextEnd {
                content_index: idx(index),
                content: Cow::Borrowed(content),
                content_signature: signature.as_deref().map(Cow::Borrowed),
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
            signature,
            usage,
        } => (
            usage,
            W::ThinkingEnd {
                content_index: idx(index),
                content: Cow::Borrowed(content),
                content_signature: signature.as_deref().map(Cow::Borrowed),
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
