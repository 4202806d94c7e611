//! The assistant message as streamed so far. Pi hands it to `message_update` handlers with
//! every delta; our stream events carry only the delta, so it is rebuilt here, and only while an
//! extension listens.

use pi_ai::StreamEvent;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::message::AssistantMessage;
use serde_json::Map;

pub(crate) struct PartialAssistant {
    pub message: AssistantMessage,
    /// The raw argument text of each streaming tool call, by content index.
    arguments: Vec<(usize, String)>,
}

impl PartialAssistant {
    pub fn new(message: AssistantMessage) -> PartialAssistant {
        PartialAssistant {
            message,
            arguments: Vec::new(),
        }
    }

    fn block(&mut self, index: usize) -> Option<&mut AssistantBlock> {
        self.message.content.get_mut(index)
    }

    pub fn apply(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::Start { partial } => self.message = partial.clone(),
            StreamEvent::TextStart { usage, .. } => {
                self.message
                    .content
                    .push(AssistantBlock::Text(TextContent::new("")));
                *self.message.usage = usage.clone();
            }
            StreamEvent::ThinkingStart { usage, .. } => {
                self.message
                    .content
                    .push(AssistantBlock::Thinking(ThinkingContent::new("")));
                *self.message.usage = usage.clone();
            }
            StreamEvent::ToolcallStart {
                index,
                id,
                name,
                usage,
            } => {
                self.message
                    .content
                    .push(AssistantBlock::ToolCall(ToolCall::new(
                        id.clone(),
                        name.clone(),
                        Map::new(),
                    )));
                self.arguments.push((*index, String::new()));
                *self.message.usage = usage.clone();
            }
            StreamEvent::TextDelta {
                index,
                delta,
                usage,
            } => {
                if let Some(AssistantBlock::Text(t)) = self.block(*index) {
                    t.text.push_str(delta);
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::ThinkingDelta {
                index,
                delta,
                usage,
            } => {
                if let Some(AssistantBlock::Thinking(t)) = self.block(*index) {
                    t.thinking.push_str(delta);
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::ToolcallDelta {
                index,
                delta,
                usage,
            } => {
                let text = match self.arguments.iter_mut().find(|(i, _)| i == index) {
                    Some((_, text)) => {
                        text.push_str(delta);
                        text.clone()
                    }
                    None => return,
                };
                if let Some(AssistantBlock::ToolCall(c)) = self.block(*index) {
                    c.arguments = pi_ai::tool_args::partial_arguments(&text);
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::TextEnd {
                index,
                content,
                usage,
                ..
            } => {
                if let Some(AssistantBlock::Text(t)) = self.block(*index) {
                    t.text = content.clone();
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::ThinkingEnd {
                index,
                content,
                usage,
                ..
            } => {
                if let Some(AssistantBlock::Thinking(t)) = self.block(*index) {
                    t.thinking = content.clone();
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::ToolcallEnd {
                index,
                tool_call,
                usage,
            } => {
                if let Some(block) = self.block(*index) {
                    *block = AssistantBlock::ToolCall(tool_call.clone());
                }
                *self.message.usage = usage.clone();
            }
            StreamEvent::Done { message } | StreamEvent::Error { message } => {
                self.message = message.clone();
            }
        }
    }
}
