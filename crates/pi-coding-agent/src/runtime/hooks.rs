//! How the runtime takes part in a run (the agent's `RunHooks`): compaction between turns,
//! credentials per request, and the extension gates — `tool_call`, `tool_result`, `context`,
//! `message_end`.

use super::{Core, lock};
use pi_agent::{BoxFuture, RunHooks, ToolCallGate, TurnContext, TurnUpdate};
use pi_protocol::SharedMessage;
use pi_protocol::content::ToolCall;
use pi_protocol::event::CompactionReason;
use pi_protocol::message::AgentMessage;
use pi_protocol::tool::AgentToolResult;
use serde_json::{Map, Value, json};
use std::sync::Arc;

impl RunHooks for Core {
    /// Compacts between a tool batch and the next request when the projected context crossed
    /// the threshold; the run continues with the compacted context.
    fn prepare_next_turn<'a>(
        &'a self,
        _turn: &'a TurnContext<'a>,
    ) -> BoxFuture<'a, Option<TurnUpdate>> {
        Box::pin(async move {
            let model = self.current_model()?;
            let settings = self.compaction_settings(&model).ok()?;
            if !crate::compaction::exceeds_threshold(&lock(&self.session), &model, settings) {
                return None;
            }
            if !self.auto_compact(CompactionReason::Threshold, false).await {
                return None;
            }
            let context = self.agent()?.messages();
            Some(TurnUpdate {
                context: Some(context),
                ..TurnUpdate::default()
            })
        })
    }

    fn api_key<'a>(&'a self, provider: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let model = self.current_model()?;
            if model.provider != provider {
                return None;
            }
            lock(&self.registry)
                .request_auth(&model)
                .ok()
                .and_then(|a| a.api_key)
        })
    }

    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        args: Map<String, Value>,
    ) -> BoxFuture<'a, Result<ToolCallGate, String>> {
        Box::pin(async move {
            if !self.ext.handles("tool_call") {
                return Ok(ToolCallGate::Run(args));
            }
            let payload = json!({
                "toolName": call.name,
                "toolCallId": call.id,
                "input": args,
            });
            let Some(result) = self.ext_emit("tool_call", payload).await else {
                return Ok(ToolCallGate::Run(args));
            };
            if result.get("block").and_then(Value::as_bool) == Some(true) {
                return Ok(ToolCallGate::Block {
                    reason: result
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    terminate: result.get("terminate").and_then(Value::as_bool) == Some(true),
                });
            }
            match result.get("input") {
                Some(Value::Object(input)) => Ok(ToolCallGate::Run(input.clone())),
                _ => Ok(ToolCallGate::Run(args)),
            }
        })
    }

    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        args: &'a Map<String, Value>,
        result: AgentToolResult,
        is_error: bool,
    ) -> BoxFuture<'a, (AgentToolResult, bool)> {
        Box::pin(async move {
            if !self.ext.handles("tool_result") {
                return (result, is_error);
            }
            let mut payload = json!({
                "toolName": call.name,
                "toolCallId": call.id,
                "input": args,
                "content": result.content,
                "details": result.details,
            });
            if let Some(structured) = &result.structured_content {
                payload["structuredContent"] = structured.clone();
            }
            payload["isError"] = json!(is_error);
            payload["usage"] = json!(result.usage);
            match self.ext_emit("tool_result", payload).await {
                Some(Value::Object(patch)) => apply_tool_result_patch(result, is_error, patch),
                _ => (result, is_error),
            }
        })
    }

    fn provider_hooks(&self) -> Option<Arc<dyn pi_ai::ProviderHooks>> {
        self.this().and_then(|core| core.ext_provider_hooks())
    }

    fn transform_context<'a>(
        &'a self,
        messages: Vec<SharedMessage>,
    ) -> BoxFuture<'a, Vec<SharedMessage>> {
        Box::pin(async move {
            let messages = self.ext_context(messages).await;
            let forced = lock(&self.run).forced_system_prompt.clone();
            match forced {
                Some(prompt) => force_system_prompt(messages, prompt),
                None => messages,
            }
        })
    }

    fn message_end<'a>(&'a self, message: SharedMessage) -> BoxFuture<'a, SharedMessage> {
        Box::pin(async move {
            if !self.ext.handles("message_end") {
                return message;
            }
            let payload = json!({ "message": message });
            let Some(result) = self.ext_emit("message_end", payload).await else {
                return message;
            };
            match result.get("message").cloned() {
                Some(m) if !m.is_null() => match serde_json::from_value::<AgentMessage>(m) {
                    Ok(replaced) => SharedMessage::new(replaced),
                    Err(e) => {
                        self.ext_error(
                            "<runtime>",
                            "message_end",
                            &format!("invalid message: {e}"),
                        )
                        .await;
                        message
                    }
                },
                _ => message,
            }
        })
    }
}

/// A run whose system prompt an extension forced sees one system message with that text (and
/// the tools the transcript declares) instead of the transcript's system messages.
fn force_system_prompt(messages: Vec<SharedMessage>, prompt: String) -> Vec<SharedMessage> {
    let current = pi_ai::transcript::current_system_message(&messages);
    let head = pi_protocol::message::SystemMessage {
        content: pi_protocol::content::StringOrBlocks::Text(prompt),
        sections: None,
        tools_added: current.as_ref().and_then(|c| c.tools_added.clone()),
        tools_removed: None,
        timestamp: current.as_ref().map_or_else(pi_js::now_ms, |c| c.timestamp),
        rest: Default::default(),
    };
    std::iter::once(SharedMessage::new(AgentMessage::System(head)))
        .chain(
            messages
                .into_iter()
                .filter(|m| !matches!(&**m, AgentMessage::System(_))),
        )
        .collect()
}

impl Core {
    /// The extensions' `context` and `context_with_system` handlers over a request's messages.
    async fn ext_context(&self, messages: Vec<SharedMessage>) -> Vec<SharedMessage> {
        let messages = self.ext_context_event("context", messages).await;
        self.ext_context_event("context_with_system", messages)
            .await
    }

    /// One of the two context events, over the whole transcript (system messages included).
    async fn ext_context_event(
        &self,
        event: &str,
        messages: Vec<SharedMessage>,
    ) -> Vec<SharedMessage> {
        if !self.ext.handles(event) {
            return messages;
        }
        let payload = json!({ "messages": messages });
        let Some(result) = self.ext_emit(event, payload).await else {
            return messages;
        };
        let Some(list) = result.get("messages").cloned() else {
            return messages;
        };
        match serde_json::from_value::<Vec<AgentMessage>>(list) {
            Ok(changed) => changed.into_iter().map(SharedMessage::new).collect(),
            Err(e) => {
                self.ext_error("<runtime>", event, &format!("invalid messages: {e}"))
                    .await;
                messages
            }
        }
    }
}

/// Pi's `afterToolCall` patch: the content (else the original), the hook's details and usage,
/// its structured content (dropped when the content was replaced without one), its error flag
/// (else the original).
fn apply_tool_result_patch(
    mut result: AgentToolResult,
    is_error: bool,
    patch: Map<String, Value>,
) -> (AgentToolResult, bool) {
    if let Some(content) = patch.get("content").filter(|c| !c.is_null())
        && let Ok(content) = serde_json::from_value(content.clone())
    {
        result.content = content;
    }
    result.details = patch.get("details").cloned().filter(|d| !d.is_null());
    result.structured_content = patch
        .get("structuredContent")
        .cloned()
        .filter(|d| !d.is_null());
    result.usage = patch
        .get("usage")
        .filter(|u| !u.is_null())
        .and_then(|u| serde_json::from_value(u.clone()).ok());
    let is_error = patch
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(is_error);
    (result, is_error)
}
