//! Model calls extensions make through pi (`complete` from pi-ai's helpers and
//! `ctx.modelRegistry.complete`): our providers, the registry's credentials.

use crate::runtime::{Runtime, lock};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::SharedMessage;
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, SystemMessage};
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
        let model = self.call_model(params)?;
        let context = params.get("context").cloned().unwrap_or(Value::Null);
        let messages = llm_messages(&context)?;
        let options = params.get("options").cloned().unwrap_or(Value::Null);
        let auth = lock(&self.core.registry)
            .request_auth(&model)
            .map_err(|e| e.to_string())?;
        let reasoning = options
            .get("reasoning")
            .cloned()
            .and_then(|r| serde_json::from_value::<ThinkingLevel>(r).ok())
            .filter(|l| *l != ThinkingLevel::Off);
        let stream_options = StreamOptions {
            api_key: options
                .get("apiKey")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or(auth.api_key),
            reasoning,
            max_tokens: options.get("maxTokens").and_then(Value::as_u64),
            temperature: options.get("temperature").and_then(Value::as_f64),
            ..StreamOptions::default()
        };
        let mut stream = pi_ai::stream(&model, LlmContext { messages }, stream_options);
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
