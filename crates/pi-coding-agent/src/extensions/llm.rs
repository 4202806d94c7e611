//! Model calls extensions make through pi (`complete` from pi-ai's helpers and
//! `ctx.modelRegistry.complete`): our providers, the registry's credentials.

use crate::runtime::{Runtime, lock};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::SharedMessage;
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, AssistantMessage, SystemMessage};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use serde_json::Value;

impl Runtime {
    /// The model a call names: a whole model object, else `provider` + `id` in the registry.
    fn call_model(&self, params: &Value) -> Result<Model, String> {
        if let Some(model) = params.get("model").filter(|m| m.is_object())
            && let Ok(model) = serde_json::from_value::<Model>(model.clone())
        {
            return Ok(model);
        }
        let provider = params.get("provider").and_then(Value::as_str).unwrap_or("");
        let id = params.get("id").and_then(Value::as_str).unwrap_or("");
        lock(&self.core.registry)
            .find(provider, id)
            .map(|m| (*m).clone())
            .ok_or_else(|| pi_registry::model_not_found(provider, id))
    }

    /// One whole response for pi-ai's `Context` (`systemPrompt`, `messages`, `tools`).
    pub(crate) async fn ext_complete(&self, params: &Value) -> Result<Value, String> {
        let (_, mut stream) = self.ext_request(params).await?;
        loop {
            match stream.next().await {
                Some(StreamEvent::Done { message }) | Some(StreamEvent::Error { message }) => {
                    return serde_json::to_value(&message).map_err(|e| e.to_string());
                }
                Some(_) => {}
                None => return Err("Provider stream ended without a result".into()),
            }
        }
    }

    /// A streamed response: each event goes to the host as a `stream_event` notification for
    /// `streamId`, as pi-ai's `AssistantMessageEvent` (with the response so far).
    pub(crate) async fn ext_stream(&self, params: &Value) -> Result<Value, String> {
        let stream_id = params
            .get("streamId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (model, mut stream) = self.ext_request(params).await?;
        let mut partial = super::PartialAssistant::new(AssistantMessage::new(
            model.api.clone(),
            model.provider.clone(),
            model.id.clone(),
            pi_protocol::usage::StopReason::Stop,
            pi_js::now_ms(),
        ));
        while let Some(event) = stream.next().await {
            let terminal = event.is_terminal();
            let pi_event = super::provider_stream::to_pi_event(&event, &mut partial);
            if let Some(host) = self.core.ext.host() {
                let mut note = serde_json::Map::new();
                note.insert("streamId".into(), Value::String(stream_id.clone()));
                note.insert("event".into(), pi_event);
                host.notify("stream_event", note);
            }
            if terminal {
                return Ok(Value::Null);
            }
        }
        Err("Provider stream ended without a result".into())
    }

    async fn ext_request(&self, params: &Value) -> Result<(Model, pi_ai::AssistantStream), String> {
        let model = self.call_model(params)?;
        let context = params.get("context").cloned().unwrap_or(Value::Null);
        let messages = llm_messages(&context)?;
        let options = params.get("options").cloned().unwrap_or(Value::Null);
        let auth = pi_registry::request_auth_shared(&self.core.registry, &model)
            .await
            .map_err(|e| e.to_string())?;
        // `complete`/`stream` take the provider's options (`reasoningEffort`), the simple
        // calls Pi's `reasoning` level.
        let raw = params.get("simple").and_then(Value::as_bool) == Some(false);
        let reasoning = options
            .get(if raw { "reasoningEffort" } else { "reasoning" })
            .cloned()
            .and_then(|r| serde_json::from_value::<ThinkingLevel>(r).ok())
            .filter(|l| *l != ThinkingLevel::Off);
        let transport = self.core.transport_settings();
        let stream_options = StreamOptions {
            idle_timeout: transport.idle_timeout,
            // The call's own options first, then the settings (Pi's `buildRequestOptions`).
            max_retries: options
                .get("maxRetries")
                .and_then(Value::as_f64)
                .map(|n| n.max(0.0) as u32)
                .or(transport.max_retries),
            max_retry_delay: options
                .get("maxRetryDelayMs")
                .and_then(Value::as_f64)
                .map(|v| std::time::Duration::from_millis(v.max(0.0) as u64))
                .or(transport.max_retry_delay),
            api_key: options
                .get("apiKey")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or(auth.api_key),
            reasoning,
            max_tokens: options.get("maxTokens").and_then(Value::as_u64),
            temperature: options.get("temperature").and_then(Value::as_f64),
            raw,
            ..StreamOptions::default()
        };
        let stream = (self.core.ext.stream_fn())(&model, LlmContext { messages }, stream_options);
        Ok((model, stream))
    }
}

/// pi-ai's `Context` as our transcript: the system prompt and tools as one leading system
/// message, then the messages.
fn llm_messages(context: &Value) -> Result<Vec<SharedMessage>, String> {
    let mut out = Vec::new();
    let system = context.get("systemPrompt").and_then(Value::as_str);
    let tools = context
        .get("tools")
        .filter(|t| t.is_array())
        .map(|t| serde_json::from_value(t.clone()))
        .transpose()
        .map_err(|e| format!("invalid tools: {e}"))?;
    if system.is_some() || tools.is_some() {
        out.push(SharedMessage::new(AgentMessage::System(SystemMessage {
            content: StringOrBlocks::Text(system.unwrap_or("").to_string()),
            sections: None,
            tools_added: tools,
            tools_removed: None,
            timestamp: pi_js::now_ms(),
            rest: Default::default(),
        })));
    }
    for m in context
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let message: AgentMessage =
            serde_json::from_value(m.clone()).map_err(|e| format!("invalid message: {e}"))?;
        out.push(SharedMessage::new(message));
    }
    Ok(out)
}
