//! Helpers shared by the tool implementations: declarations, argument access, results.

use crate::config::ToolsConfig;
use pi_agent::{ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{TextContent, UserBlock};
use pi_protocol::tool::{
    AgentToolResult, ConstrainedSampling, ConstrainedSamplingConfig, SchemaStrictness, Tool,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A declaration; `strict` adds `constrainedSampling: {type: json_schema, strict: prefer}` as Pi
/// does for read, bash, edit and write.
pub fn declaration(name: &str, description: &str, parameters: Value, strict: bool) -> Tool {
    Tool {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
        constrained_sampling: strict.then_some(ConstrainedSampling::Config(
            ConstrainedSamplingConfig::JsonSchema {
                strict: SchemaStrictness::Prefer,
            },
        )),
        rest: Default::default(),
    }
}

/// `{"type":"string","description":...}` and friends.
pub fn prop(kind: &str, description: &str) -> Value {
    json!({ "type": kind, "description": description })
}

pub fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

pub fn num_arg(args: &Map<String, Value>, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

pub fn bool_arg(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub fn text_block(text: impl Into<String>) -> UserBlock {
    UserBlock::Text(TextContent::new(text))
}

/// A result with one text block and optional details.
pub fn text_result(text: impl Into<String>, details: Option<Value>) -> AgentToolResult {
    let mut result = AgentToolResult::new(vec![text_block(text)]);
    result.details = details;
    result
}

pub fn aborted() -> ToolError {
    ToolError::new("Operation aborted")
}

/// [`aborted`] once `cancel` has fired.
pub fn check_cancel(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(aborted())
    } else {
        Ok(())
    }
}

/// `Math.max(1, Math.floor(limit ?? default))` as an integer count.
pub fn effective_limit(limit: Option<f64>, default: usize) -> usize {
    match limit {
        None => default,
        Some(v) if v.is_nan() => 1,
        Some(v) => {
            let floored = v.floor();
            if floored < 1.0 {
                1
            } else if floored >= usize::MAX as f64 {
                usize::MAX / 4
            } else {
                floored as usize
            }
        }
    }
}

/// Runs a tool body that blocks (file system walks and reads) on the blocking pool. An abort
/// answers `Operation aborted` at once; the body stops at its next look at the token.
pub fn run_blocking<F>(config: Arc<ToolsConfig>, invocation: ToolInvocation, body: F) -> ToolFuture
where
    F: FnOnce(
            &ToolsConfig,
            &Map<String, Value>,
            &CancellationToken,
        ) -> Result<AgentToolResult, ToolError>
        + Send
        + 'static,
{
    Box::pin(async move {
        let cancel = invocation.cancel.clone();
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        let token = cancel.clone();
        let work = tokio::task::spawn_blocking(move || body(&config, &invocation.args, &token));
        tokio::select! {
            _ = cancel.cancelled() => Err(aborted()),
            joined = work => joined.unwrap_or_else(|e| Err(ToolError::new(e.to_string()))),
        }
    })
}

/// The result of a listing tool (find, ls): the head-truncated text, then in brackets the
/// item-limit notice (`limit`: notice text, details key, limit) and the byte-limit notice, with
/// the matching `details`.
pub fn listing_result(
    truncation: crate::truncate::Truncation,
    limit: Option<(String, &str, usize)>,
) -> AgentToolResult {
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if let Some((notice, key, limit)) = limit {
        notices.push(notice);
        details.insert(key.into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!(
            "{} limit reached",
            crate::truncate::format_size(crate::truncate::DEFAULT_MAX_BYTES)
        ));
        details.insert(
            "truncation".into(),
            serde_json::to_value(&truncation).unwrap_or(Value::Null),
        );
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    text_result(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    )
}
