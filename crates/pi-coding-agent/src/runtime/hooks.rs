//! How the runtime takes part in a run (the agent's `RunHooks`): compaction between turns,
//! credentials per request, and the extension gates — `tool_call`, `tool_result`, `context`,
//! `message_end`.

use super::{Core, lock};
use pi_agent::{BoxFuture, RequestCredentials, RunHooks, ToolCallGate, TurnContext, TurnUpdate};
use pi_protocol::SharedMessage;
use pi_protocol::content::ToolCall;
use pi_protocol::event::CompactionReason;
use pi_protocol::message::AgentMessage;
use pi_protocol::tool::AgentToolResult;
use serde_json::{Map, Value, json};
use std::sync::Arc;

impl Core {
    /// `httpIdleTimeoutMs` and `retry.provider.*` as every provider request takes them: the
    /// agent's turns, compaction and branch summaries, extensions' `complete`/`stream` (Pi's
    /// `buildRequestOptions` wraps the one stream function all of them use).
    pub(crate) fn transport_settings(&self) -> pi_agent::RequestSettings {
        let s = self.settings();
        let ms = |v: f64| std::time::Duration::from_millis(v.max(0.0) as u64);
        pi_agent::RequestSettings {
            idle_timeout: Some(std::time::Duration::from_millis(s.http_idle_timeout_ms)),
            max_retries: s.retry.provider_max_retries.map(|n| n.max(0.0) as u32),
            max_retry_delay: Some(ms(s.retry.provider_max_retry_delay_ms)),
        }
    }

    /// Whether a threshold compaction ran between turns.
    async fn compact_before_next_turn(&self) -> bool {
        let Some(model) = self.current_model() else {
            return false;
        };
        let Ok(settings) = self.compaction_settings(&model) else {
            return false;
        };
        if !crate::compaction::exceeds_threshold(&lock(&self.session), &model, settings) {
            return false;
        }
        self.auto_compact(CompactionReason::Threshold, false).await
    }
}

impl RunHooks for Core {
    /// Between turns: compacts when the projected context crossed the threshold (the run
    /// continues with the compacted context), then, as Pi, renders the prompt again from the
    /// run's options and the active tools; a changed prompt is patched by a system message
    /// before the next request.
    fn prepare_next_turn<'a>(
        &'a self,
        turn: &'a TurnContext<'a>,
    ) -> BoxFuture<'a, Option<TurnUpdate>> {
        Box::pin(async move {
            let mut update = TurnUpdate::default();
            if self.compact_before_next_turn().await {
                update.context = Some(self.agent()?.messages());
            }
            let agent = self.agent()?;
            let context = update.context.as_deref().unwrap_or(turn.context);
            if let Some(patch) = self.system_patch_over(&agent, context) {
                update.messages.push(AgentMessage::System(patch));
            }
            (update.context.is_some() || !update.messages.is_empty()).then_some(update)
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

    fn request_credentials<'a>(
        &'a self,
        model: &'a pi_protocol::model::Model,
    ) -> BoxFuture<'a, Result<RequestCredentials, String>> {
        Box::pin(async move {
            let oauth = lock(&self.registry).is_using_oauth(&model.provider);
            match pi_registry::request_auth_shared(&self.registry, model).await {
                Ok(auth) => {
                    let mut creds = RequestCredentials {
                        api_key: auth.api_key,
                        base_url: auth.base_url,
                        ..RequestCredentials::default()
                    };
                    for (k, v) in auth.env.iter().flat_map(|e| e.iter()) {
                        if let Some(v) = v.as_str() {
                            creds.env.insert(k.clone(), v.to_string());
                        }
                    }
                    // Headers an OAuth login adds (Kimi sends its token as `Authorization`).
                    if oauth {
                        for (k, v) in auth.headers.iter().flat_map(|h| h.iter()) {
                            if let Some(v) = v {
                                creds.headers.insert(k.clone(), v.clone());
                            }
                        }
                    }
                    Ok(creds)
                }
                // A stored login that cannot give a token fails the response with Pi's text.
                Err(e) if oauth => Err(e.to_string()),
                Err(_) => Ok(RequestCredentials::default()),
            }
        })
    }

    fn route_request<'a>(
        &'a self,
        model: &'a pi_protocol::model::Model,
        reasoning: Option<pi_protocol::thinking::ThinkingLevel>,
        context: &'a [SharedMessage],
    ) -> BoxFuture<
        'a,
        Option<
            Result<
                (
                    pi_protocol::model::Model,
                    Option<pi_protocol::thinking::ThinkingLevel>,
                ),
                String,
            >,
        >,
    > {
        Box::pin(async move {
            if !pi_registry::is_virtual(model) {
                return None;
            }
            let retrying = lock(&self.run).retry_attempt > 0;
            let reason =
                crate::extensions::virtual_models::RouteReason::of_context(context, retrying);
            Some(self.route_virtual(model, reasoning, context, reason).await)
        })
    }

    fn credentials_rejected<'a>(
        &'a self,
        model: &'a pi_protocol::model::Model,
        failed: &'a pi_protocol::message::AssistantMessage,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let text = failed.error_message.as_deref().unwrap_or("");
            if !is_unauthorized(text) {
                return false;
            }
            let login = {
                let registry = lock(&self.registry);
                if !registry.is_using_oauth(&model.provider) {
                    return false;
                }
                registry.oauth_login(&model.provider)
            };
            // Pi retries with a renewed token only for its own logins, not an extension's.
            let Some((flow, path)) =
                login.filter(|(f, _)| !matches!(f, pi_registry::oauth::Flow::Extension { .. }))
            else {
                return false;
            };
            let Ok(stored) = pi_registry::oauth::store::read(&path) else {
                return false;
            };
            let Some(access) = stored
                .get(&model.provider)
                .and_then(|c| c.get("access"))
                .and_then(Value::as_str)
                .map(String::from)
            else {
                return false;
            };
            matches!(
                pi_registry::oauth::refresh_rejected(&path, &model.provider, &flow, &access).await,
                Ok(Some(_))
            )
        })
    }

    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        args: Map<String, Value>,
    ) -> BoxFuture<'a, Result<ToolCallGate, String>> {
        Box::pin(async move {
            // The approval policy judges what the extensions let through, with their edits.
            match self.extension_tool_gate(call, args).await {
                ToolCallGate::Run(args) => Ok(self.approve(call, args).await),
                blocked => Ok(blocked),
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

    fn request_settings(&self) -> pi_agent::RequestSettings {
        self.transport_settings()
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

impl Core {
    /// The extensions' `tool_call` handlers: block the call, or run it (with edited input).
    async fn extension_tool_gate(&self, call: &ToolCall, args: Map<String, Value>) -> ToolCallGate {
        if !self.ext.handles("tool_call") {
            return ToolCallGate::Run(args);
        }
        let payload = json!({
            "toolName": call.name,
            "toolCallId": call.id,
            "input": args,
        });
        let Some(result) = self.ext_emit("tool_call", payload).await else {
            return ToolCallGate::Run(args);
        };
        if result.get("block").and_then(Value::as_bool) == Some(true) {
            return ToolCallGate::Block {
                reason: result
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                terminate: result.get("terminate").and_then(Value::as_bool) == Some(true),
            };
        }
        match result.get("input") {
            Some(Value::Object(input)) => ToolCallGate::Run(input.clone()),
            _ => ToolCallGate::Run(args),
        }
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

/// Whether a failure text reports an HTTP 401 (the credential was not accepted).
fn is_unauthorized(text: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices("401").any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + 3).copied();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}
