//! `azure-openai-responses`: the Responses API of an Azure OpenAI resource,
//! `POST {base}/responses?api-version=<v>` with an `api-key` header. The base URL comes from
//! `AZURE_OPENAI_BASE_URL`, else `AZURE_OPENAI_RESOURCE_NAME`, else the model's; the request's
//! `model` is the deployment (`AZURE_OPENAI_DEPLOYMENT_NAME_MAP` maps model ids to names).
//! The stream is the Responses stream, read by [`crate::openai_responses`].

use crate::budget::resolve_sampling_params;
use crate::cost::{level_map_entry, mapped_level};
use crate::http;
use crate::openai_responses::request::{convert_messages, convert_tools};
use crate::openai_responses::{Flavor, relay};
use crate::output::Output;
use crate::provider_error::{Sdk, send_error_text};
use crate::request::{base_headers, base_max_tokens, effective_reasoning, start_stream};
use crate::stream::{LlmContext, StreamOptions};
use crate::transcript::{resolve_transcript, transcript_tools};
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The API id.
pub const API: &str = "azure-openai-responses";

const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode", "azure"];
const MIN_OUTPUT_TOKENS: u64 = 16;
const DEFAULT_API_VERSION: &str = "v1";

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let mid = model
        .compat
        .as_ref()
        .and_then(|c| c.supports_mid_convo_system_messages)
        .unwrap_or(false);
    let messages = resolve_transcript(&context.messages, mid);
    let Some(key) = options.api_key.clone().filter(|k| !k.is_empty()) else {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    };
    let base = match base_url(&model, &options) {
        Ok(b) => b,
        Err(e) => return out.fail(options.cancel.is_cancelled(), e).await,
    };
    if let Err(e) = check_tools(strict_supported(&model), &messages) {
        return out.fail(options.cancel.is_cancelled(), e).await;
    }
    let deployment = deployment_name(&model, &options);
    let body = build_body(&model, &context, &options, &messages, &deployment);
    let mut headers = base_headers(&model, &options, &[]);
    headers.set("api-key", key);
    headers.set("Accept", "application/json");
    headers.set("Content-Type", "application/json");
    let version = options
        .env_value("AZURE_OPENAI_API_VERSION")
        .unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
    let req = http::Request {
        url: format!("{base}/responses?api-version={version}"),
        headers: headers.0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    let error_text =
        |e: &http::SendError| send_error_text(Sdk::OpenAi, e, Some("Azure OpenAI API error"));
    let Some((out, resp)) = start_stream(
        out,
        req,
        &options,
        crate::provider_retry::RetryPolicy::Sdk(crate::provider_error::openai_sdk_message),
        error_text,
    )
    .await
    else {
        return;
    };
    relay(Flavor::Azure, &model, out, resp, &options).await;
}

/// `model_id=deployment,...` from `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`, else the model id.
fn deployment_name(model: &Model, options: &StreamOptions) -> String {
    let map = options
        .env_value("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        .unwrap_or_default();
    map.split(',')
        .filter_map(|e| {
            let mut parts = pi_js::trim(e).splitn(2, '=');
            Some((pi_js::trim(parts.next()?), pi_js::trim(parts.next()?)))
        })
        .filter(|(m, d)| !m.is_empty() && !d.is_empty())
        .find(|(m, _)| *m == model.id)
        .map(|(_, d)| d.to_string())
        .unwrap_or_else(|| model.id.clone())
}

/// Pi's `resolveAzureBaseUrl`: Azure hosts get `/openai/v1` as their path.
fn base_url(model: &Model, options: &StreamOptions) -> Result<String, String> {
    let configured = options
        .env_value("AZURE_OPENAI_BASE_URL")
        .map(|u| pi_js::trim(&u).to_string())
        .filter(|u| !u.is_empty());
    let resolved = configured
        .or_else(|| {
            options
                .env_value("AZURE_OPENAI_RESOURCE_NAME")
                .map(|r| format!("https://{r}.openai.azure.com/openai/v1"))
        })
        .or_else(|| (!model.base_url.is_empty()).then(|| model.base_url.clone()))
        .ok_or_else(|| "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl.".to_string())?;
    let trimmed = pi_js::trim(&resolved).trim_end_matches('/').to_string();
    let invalid = || format!("Invalid Azure OpenAI base URL: {resolved}");
    let (scheme, rest) = trimmed.split_once("://").ok_or_else(invalid)?;
    let (authority, path_query) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(invalid());
    }
    let host = authority
        .rsplit('@')
        .next()
        .unwrap_or(authority)
        .split(':')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let azure = [
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".ai.azure.com",
    ]
    .iter()
    .any(|s| host.ends_with(s));
    let path = path_query.split(['?', '#']).next().unwrap_or("");
    let path = path.trim_end_matches('/');
    if azure && ["", "/openai", "/openai/v1/responses"].contains(&path) {
        return Ok(format!("{scheme}://{authority}/openai/v1"));
    }
    // `new URL(...)` gives a bare host a `/` path, which the final trim removes again.
    Ok(trimmed)
}

/// Strict tool schemas are on unless the model's compat turns them off.
pub(crate) fn strict_supported(model: &Model) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.supports_strict_mode)
        .unwrap_or(true)
}

/// Tools whose strict requirement cannot be met fail the request before it is sent.
pub(crate) fn check_tools(strict: bool, messages: &[Cow<'_, AgentMessage>]) -> Result<(), String> {
    for t in crate::transcript::declared_tools(messages) {
        crate::strict_schema::resolve_strict(t, strict, None)?;
    }
    Ok(())
}

fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
    messages: &[Cow<'_, AgentMessage>],
    deployment: &str,
) -> Map<String, Value> {
    let c = model.compat.as_ref();
    let mut b = Map::new();
    b.insert("model".into(), deployment.into());
    b.insert(
        "input".into(),
        Value::Array(convert_messages(model, TOOL_CALL_PROVIDERS, messages)),
    );
    b.insert("stream".into(), true.into());
    let key_disabled = c.and_then(|c| c.prompt_cache_key_mode)
        == Some(pi_protocol::compat::PromptCacheKeyMode::Disabled);
    if !key_disabled && let Some(sid) = &options.session_id {
        b.insert(
            "prompt_cache_key".into(),
            sid.chars().take(64).collect::<String>().into(),
        );
    }
    b.insert("store".into(), false.into());
    let max_tokens = base_max_tokens(model, context, options);
    if max_tokens > 0 {
        b.insert(
            "max_output_tokens".into(),
            max_tokens.max(MIN_OUTPUT_TOKENS).into(),
        );
    }
    if let Some(t) = options.temperature {
        b.insert("temperature".into(), json!(t));
    }
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        b.insert(
            "tools".into(),
            Value::Array(convert_tools(&tools, strict_supported(model))),
        );
    }
    let reasoning = effective_reasoning(model, options);
    if model.reasoning {
        if let Some(level) = reasoning {
            b.insert(
                "reasoning".into(),
                json!({"effort": mapped_level(model, level), "summary": "auto"}),
            );
            b.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else {
            match level_map_entry(model, ThinkingLevel::Off) {
                Some(None) => {}
                Some(Some(v)) => {
                    b.insert("reasoning".into(), json!({"effort": v}));
                }
                None => {
                    b.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
    }
    if let Some(sp) = resolve_sampling_params(model, reasoning.unwrap_or(ThinkingLevel::Off)) {
        b.extend(sp);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(base: &str) -> Model {
        let mut m = Model::placeholder();
        m.base_url = base.into();
        m
    }

    #[test]
    fn azure_hosts_get_the_v1_path_and_other_hosts_stay() {
        let o = StreamOptions::default();
        assert_eq!(
            base_url(&model("https://r.openai.azure.com/"), &o).unwrap(),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            base_url(&model("https://r.cognitiveservices.azure.com/openai"), &o).unwrap(),
            "https://r.cognitiveservices.azure.com/openai/v1"
        );
        assert_eq!(
            base_url(&model("http://127.0.0.1:9/openai/v1/"), &o).unwrap(),
            "http://127.0.0.1:9/openai/v1"
        );
        let mut o = StreamOptions::default();
        o.env
            .insert("AZURE_OPENAI_RESOURCE_NAME".into(), "res".into());
        assert_eq!(
            base_url(&model(""), &o).unwrap(),
            "https://res.openai.azure.com/openai/v1"
        );
    }

    #[test]
    fn deployment_names_come_from_the_map() {
        let mut o = StreamOptions::default();
        o.env.insert(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP".into(),
            " gpt-5 = prod-gpt5 ,bad, x=".into(),
        );
        let mut m = Model::placeholder();
        m.id = "gpt-5".into();
        assert_eq!(deployment_name(&m, &o), "prod-gpt5");
        m.id = "other".into();
        assert_eq!(deployment_name(&m, &o), "other");
    }
}
