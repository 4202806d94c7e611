//! Streaming events of one model response: pi-ai's `AssistantMessageEvent` (in-process, each
//! event carrying the live `partial` message) and its wire form inside `message_update`
//! (`partial` removed; `toolcall_start` gains the call's `id` and `toolName`).

use crate::content::{AssistantBlock, ToolCall};
use crate::message::AssistantMessage;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Stop reasons that end a successful stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DoneReason {
    Stop,
    Length,
    ToolUse,
    Deferred,
}

/// Stop reasons that end a failed stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ErrorReason {
    Aborted,
    Error,
}

/// pi-ai's `AssistantMessageEvent`: what a provider stream yields, each update carrying the
/// response so far. Never written to stdout as is; see [`WireAssistantEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantMessageEvent {
    Start {
        partial: AssistantMessage,
    },
    TextStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        partial: AssistantMessage,
    },
    TextDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: String,
        partial: AssistantMessage,
    },
    TextEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        content: String,
        /// What a pi-messages backend sent as the block's `contentSignature`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
        partial: AssistantMessage,
    },
    ThinkingStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        partial: AssistantMessage,
    },
    ThinkingDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: String,
        partial: AssistantMessage,
    },
    ThinkingEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        content: String,
        /// What a pi-messages backend sent as the block's `contentSignature`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
        partial: AssistantMessage,
    },
    ToolcallStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        partial: AssistantMessage,
    },
    ToolcallDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: String,
        partial: AssistantMessage,
    },
    ToolcallEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        tool_call: ToolCall,
        partial: AssistantMessage,
    },
    Done {
        reason: DoneReason,
        message: AssistantMessage,
    },
    Error {
        reason: ErrorReason,
        error: AssistantMessage,
    },
}

/// The wire form of an [`AssistantMessageEvent`] (`assistantMessageEvent` of `message_update`).
///
/// Borrowing (`Cow`) lets the streaming hot path serialize without copying deltas; values read
/// from JSON are always owned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum WireAssistantEvent<'a> {
    Start {},
    TextStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
    },
    TextDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: Cow<'a, str>,
    },
    TextEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        content: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<Cow<'a, str>>,
    },
    ThinkingStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
    },
    ThinkingDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: Cow<'a, str>,
    },
    ThinkingEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        content: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<Cow<'a, str>>,
    },
    ToolcallStart {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        id: Cow<'a, str>,
        tool_name: Cow<'a, str>,
    },
    ToolcallDelta {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        delta: Cow<'a, str>,
    },
    ToolcallEnd {
        #[serde(deserialize_with = "crate::num::de_u64")]
        content_index: u64,
        tool_call: Cow<'a, ToolCall>,
    },
    Done {
        reason: DoneReason,
        message: Cow<'a, AssistantMessage>,
    },
    Error {
        reason: ErrorReason,
        error: Cow<'a, AssistantMessage>,
    },
}

impl WireAssistantEvent<'_> {
    /// Detaches the event from borrowed data.
    pub fn into_owned(self) -> WireAssistantEvent<'static> {
        use WireAssistantEvent as W;
        fn own(c: Cow<'_, str>) -> Cow<'static, str> {
            Cow::Owned(c.into_owned())
        }
        match self {
            W::Start {} => W::Start {},
            W::TextStart { content_index } => W::TextStart { content_index },
            W::TextDelta {
                content_index,
                delta,
            } => W::TextDelta {
                content_index,
                delta: own(delta),
            },
            W::TextEnd {
                content_index,
                content,
                content_signature,
            } => W::TextEnd {
                content_index,
                content: own(content),
                content_signature: content_signature.map(own),
            },
            W::ThinkingStart { content_index } => W::ThinkingStart { content_index },
            W::ThinkingDelta {
                content_index,
                delta,
            } => W::ThinkingDelta {
                content_index,
                delta: own(delta),
            },
            W::ThinkingEnd {
                content_index,
                content,
                content_signature,
            } => W::ThinkingEnd {
                content_index,
                content: own(content),
                content_signature: content_signature.map(own),
            },
            W::ToolcallStart {
                content_index,
                id,
                tool_name,
            } => W::ToolcallStart {
                content_index,
                id: own(id),
                tool_name: own(tool_name),
            },
            W::ToolcallDelta {
                content_index,
                delta,
            } => W::ToolcallDelta {
                content_index,
                delta: own(delta),
            },
            W::ToolcallEnd {
                content_index,
                tool_call,
            } => W::ToolcallEnd {
                content_index,
                tool_call: Cow::Owned(tool_call.into_owned()),
            },
            W::Done { reason, message } => W::Done {
                reason,
                message: Cow::Owned(message.into_owned()),
            },
            W::Error { reason, error } => W::Error {
                reason,
                error: Cow::Owned(error.into_owned()),
            },
        }
    }
}

impl AssistantMessageEvent {
    /// The live message of an update event (`partial`), or the final message of `done`/`error`.
    pub fn message(&self) -> &AssistantMessage {
        use AssistantMessageEvent as E;
        match self {
            E::Start { partial }
            | E::TextStart { partial, .. }
            | E::TextDelta { partial, .. }
            | E::TextEnd { partial, .. }
            | E::ThinkingStart { partial, .. }
            | E::ThinkingDelta { partial, .. }
            | E::ThinkingEnd { partial, .. }
            | E::ToolcallStart { partial, .. }
            | E::ToolcallDelta { partial, .. }
            | E::ToolcallEnd { partial, .. } => partial,
            E::Done { message, .. } => message,
            E::Error { error, .. } => error,
        }
    }

    /// The wire form, borrowing from `self`. `None` for a `toolcall_start` whose content index
    /// does not hold a tool call (Pi throws there).
    pub fn to_wire(&self) -> Option<WireAssistantEvent<'_>> {
        use AssistantMessageEvent as E;
        use WireAssistantEvent as W;
        Some(match self {
            E::Start { .. } => W::Start {},
            E::TextStart { content_index, .. } => W::TextStart {
                content_index: *content_index,
            },
            E::TextDelta {
                content_index,
                delta,
                ..
            } => W::TextDelta {
                content_index: *content_index,
                delta: Cow::Borrowed(delta),
            },
            E::TextEnd {
                content_index,
                content,
                content_signature,
                ..
            } => W::TextEnd {
                content_index: *content_index,
                content: Cow::Borrowed(content),
                content_signature: content_signature.as_deref().map(Cow::Borrowed),
            },
            E::ThinkingStart { content_index, .. } => W::ThinkingStart {
                content_index: *content_index,
            },
            E::ThinkingDelta {
                content_index,
                delta,
                ..
            } => W::ThinkingDelta {
                content_index: *content_index,
                delta: Cow::Borrowed(delta),
            },
            E::ThinkingEnd {
                content_index,
                content,
                content_signature,
                ..
            } => W::ThinkingEnd {
                content_index: *content_index,
                content: Cow::Borrowed(content),
                content_signature: content_signature.as_deref().map(Cow::Borrowed),
            },
            E::ToolcallStart {
                content_index,
                partial,
            } => {
                let index = usize::try_from(*content_index).ok()?;
                let AssistantBlock::ToolCall(call) = partial.content.get(index)? else {
                    return None;
                };
                W::ToolcallStart {
                    content_index: *content_index,
                    id: Cow::Borrowed(&call.id),
                    tool_name: Cow::Borrowed(&call.name),
                }
            }
            E::ToolcallDelta {
                content_index,
                delta,
                ..
            } => W::ToolcallDelta {
                content_index: *content_index,
                delta: Cow::Borrowed(delta),
            },
            E::ToolcallEnd {
                content_index,
                tool_call,
                ..
            } => W::ToolcallEnd {
                content_index: *content_index,
                tool_call: Cow::Borrowed(tool_call),
            },
            E::Done { reason, message } => W::Done {
                reason: *reason,
                message: Cow::Borrowed(message),
            },
            E::Error { reason, error } => W::Error {
                reason: *reason,
                error: Cow::Borrowed(error),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::StopReason;
    use pi_js::json::to_js_string;

    #[test]
    fn a_content_signature_travels_on_the_wire() {
        let partial = AssistantMessage::new("a", "p", "m", StopReason::Pending, 1);
        let ev = AssistantMessageEvent::TextEnd {
            content_index: 0,
            content: "hi".into(),
            content_signature: Some("sig".into()),
            partial,
        };
        assert_eq!(
            to_js_string(&ev.to_wire().unwrap()).unwrap(),
            r#"{"type":"text_end","contentIndex":0,"content":"hi","contentSignature":"sig"}"#
        );
    }

    #[test]
    fn wire_form_drops_partial_and_names_tool_calls() {
        let mut partial = AssistantMessage::new("a", "p", "m", StopReason::Pending, 1);
        partial.content.push(AssistantBlock::ToolCall(ToolCall::new(
            "toolu_1",
            "bash",
            Default::default(),
        )));
        let ev = AssistantMessageEvent::ToolcallStart {
            content_index: 0,
            partial: partial.clone(),
        };
        assert_eq!(
            to_js_string(&ev.to_wire().unwrap()).unwrap(),
            r#"{"type":"toolcall_start","contentIndex":0,"id":"toolu_1","toolName":"bash"}"#
        );
        let bad = AssistantMessageEvent::ToolcallStart {
            content_index: 3,
            partial,
        };
        assert!(bad.to_wire().is_none());
        for s in [
            r#"{"type":"start"}"#,
            r#"{"type":"text_delta","contentIndex":1,"delta":"Hello "}"#,
            r#"{"type":"thinking_end","contentIndex":0,"content":"think"}"#,
            r#"{"type":"thinking_end","contentIndex":0,"content":"think","contentSignature":"sigA"}"#,
            r#"{"type":"text_end","contentIndex":1,"content":"hi","contentSignature":"sigB"}"#,
            r#"{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"t","name":"bash","arguments":{"command":"ls"}}}"#,
        ] {
            let w: WireAssistantEvent = serde_json::from_str(s).unwrap();
            assert_eq!(to_js_string(&w).unwrap(), s);
        }
    }
}
