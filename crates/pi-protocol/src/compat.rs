//! Per-model compatibility overrides (`compat` of a model; pi-ai `compat-schema.d.ts`).
//!
//! Pi types `compat` per API (`OpenAICompletionsCompat`, `AnthropicMessagesCompat`, ...); in
//! `models.json` every API's keys are accepted (`ProviderCompat`). [`ModelCompat`] is that union,
//! every key optional. Its key order is whatever the configuration or catalog used.

use crate::cost::ModelCost;
use crate::num::StringOrNumber;
use crate::record::{OrderedMap, record};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Request field that carries the output-token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    MaxCompletionTokens,
    MaxTokens,
}

/// How reasoning is requested from an OpenAI-compatible server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkingFormat {
    AntLing,
    Baseten,
    ChatTemplate,
    Deepseek,
    Openai,
    Openrouter,
    Qwen,
    QwenChatTemplate,
    StringThinking,
    Together,
    Zai,
}

/// Top-level request field that caps reasoning tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingTokenBudgetField {
    ThinkingBudget,
    ThinkingBudgetTokens,
    ThinkingTokenBudget,
}

/// Cache-control marker style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheControlFormat {
    Anthropic,
}

/// Which session-affinity headers are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionAffinityFormat {
    Openai,
    OpenaiNosession,
    Openrouter,
}

/// Whether `prompt_cache_key` is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PromptCacheKeyMode {
    Auto,
    Disabled,
    Enabled,
}

/// How a System One classifier service takes images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ImageInput {
    Assets,
    Images,
    StateImageUrls,
}

/// Values a chat-template variable can refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ChatTemplateVarName {
    #[serde(rename = "thinking.budget")]
    ThinkingBudget,
    #[serde(rename = "thinking.effort")]
    ThinkingEffort,
    #[serde(rename = "thinking.enabled")]
    ThinkingEnabled,
}

record! {
    /// `{"$var": ..., "omitWhenOff"?}`: a value filled in from the request's thinking settings.
    pub struct ChatTemplateVar {
        req var: ChatTemplateVarName = "$var";
        opt omit_when_off: bool = "omitWhenOff";
    }
}

/// One `chatTemplateKwargs` value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ChatTemplateKwargValue {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Var(ChatTemplateVar),
}

/// OpenRouter `data_collection` preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DataCollection {
    Allow,
    Deny,
}

record! {
    /// OpenRouter `sort` given as an object.
    #[derive(Default)]
    pub struct OpenRouterSortOptions {
        opt by: String = "by";
        optnul partition: String = "partition";
    }
}

/// OpenRouter `sort`: a strategy name or options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OpenRouterSort {
    Strategy(String),
    Options(OpenRouterSortOptions),
}

record! {
    /// OpenRouter maximum prices.
    #[derive(Default)]
    pub struct OpenRouterMaxPrice {
        opt prompt: StringOrNumber = "prompt";
        opt completion: StringOrNumber = "completion";
        opt image: StringOrNumber = "image";
        opt audio: StringOrNumber = "audio";
        opt request: StringOrNumber = "request";
    }
}

record! {
    /// Latency or throughput percentiles.
    #[derive(Default)]
    pub struct Percentiles {
        opt p50: f64 = "p50";
        opt p75: f64 = "p75";
        opt p90: f64 = "p90";
        opt p99: f64 = "p99";
    }
}

/// A single threshold or per-percentile thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum NumberOrPercentiles {
    Number(f64),
    Percentiles(Percentiles),
}

record! {
    /// OpenRouter provider routing preferences (`OpenRouterRouting`).
    #[derive(Default)]
    pub struct OpenRouterRouting {
        opt allow_fallbacks: bool = "allow_fallbacks";
        opt require_parameters: bool = "require_parameters";
        opt data_collection: DataCollection = "data_collection";
        opt zdr: bool = "zdr";
        opt enforce_distillable_text: bool = "enforce_distillable_text";
        opt order: Vec<String> = "order";
        opt only: Vec<String> = "only";
        opt ignore: Vec<String> = "ignore";
        opt quantizations: Vec<String> = "quantizations";
        opt sort: OpenRouterSort = "sort";
        opt max_price: OpenRouterMaxPrice = "max_price";
        opt preferred_min_throughput: NumberOrPercentiles = "preferred_min_throughput";
        opt preferred_max_latency: NumberOrPercentiles = "preferred_max_latency";
    }
}

record! {
    /// Vercel AI Gateway routing preferences (`VercelGatewayRouting`).
    #[derive(Default)]
    pub struct VercelGatewayRouting {
        opt only: Vec<String> = "only";
        opt order: Vec<String> = "order";
    }
}

record! {
    /// A server-side refusal fallback model with its local price (`AnthropicAllowedFallbackModel`).
    pub struct AnthropicAllowedFallbackModel {
        req provider: String = "provider";
        req model: String = "model";
        req cost: ModelCost = "cost";
    }
}

record! {
    /// Every compatibility key of every API (pi-ai `ProviderCompat`), all optional. Canonical
    /// order: openai-completions keys, then openai-responses, anthropic-messages and System One
    /// keys.
    #[derive(Default)]
    pub struct ModelCompat {
        opt supports_store: bool = "supportsStore";
        opt supports_developer_role: bool = "supportsDeveloperRole";
        opt supports_reasoning_effort: bool = "supportsReasoningEffort";
        opt supports_usage_in_streaming: bool = "supportsUsageInStreaming";
        opt supports_finish_reason: bool = "supportsFinishReason";
        opt max_tokens_field: MaxTokensField = "maxTokensField";
        opt requires_tool_result_name: bool = "requiresToolResultName";
        opt requires_assistant_after_tool_result: bool = "requiresAssistantAfterToolResult";
        opt requires_non_null_assistant_content: bool = "requiresNonNullAssistantContent";
        opt requires_tools_with_tool_history: bool = "requiresToolsWithToolHistory";
        opt requires_thinking_as_text: bool = "requiresThinkingAsText";
        opt requires_reasoning_content_on_assistant_messages: bool = "requiresReasoningContentOnAssistantMessages";
        opt thinking_format: ThinkingFormat = "thinkingFormat";
        opt chat_template_kwargs: OrderedMap<ChatTemplateKwargValue> = "chatTemplateKwargs";
        opt chat_template_args: OrderedMap<ChatTemplateKwargValue> = "chatTemplateArgs";
        opt open_router_routing: OpenRouterRouting = "openRouterRouting";
        opt vercel_gateway_routing: VercelGatewayRouting = "vercelGatewayRouting";
        opt zai_tool_stream: bool = "zaiToolStream";
        opt thinking_token_budget_field: ThinkingTokenBudgetField = "thinkingTokenBudgetField";
        opt supports_thinking_token_budget: bool = "supportsThinkingTokenBudget";
        opt supports_open_ai_grammar_tools: bool = "supportsOpenAIGrammarTools";
        opt supports_mid_convo_system_messages: bool = "supportsMidConvoSystemMessages";
        opt supports_mid_convo_tool_additions: bool = "supportsMidConvoToolAdditions";
        opt supports_strict_mode: bool = "supportsStrictMode";
        opt cache_control_format: CacheControlFormat = "cacheControlFormat";
        opt send_session_affinity_headers: bool = "sendSessionAffinityHeaders";
        opt session_affinity_format: SessionAffinityFormat = "sessionAffinityFormat";
        opt prompt_cache_key_mode: PromptCacheKeyMode = "promptCacheKeyMode";
        opt supports_long_cache_retention: bool = "supportsLongCacheRetention";
        opt vllm_priority: f64 = "vllmPriority";
        opt supports_additional_tools: bool = "supportsAdditionalTools";
        opt supports_tool_search: bool = "supportsToolSearch";
        opt supports_explicit_prompt_cache_mode: bool = "supportsExplicitPromptCacheMode";
        opt supports_mid_convo_effort: bool = "supportsMidConvoEffort";
        opt supports_max_output_tokens: bool = "supportsMaxOutputTokens";
        opt supports_eager_tool_input_streaming: bool = "supportsEagerToolInputStreaming";
        opt supports_cache_control_on_tools: bool = "supportsCacheControlOnTools";
        opt supports_temperature: bool = "supportsTemperature";
        opt force_adaptive_thinking: bool = "forceAdaptiveThinking";
        opt allow_empty_signature: bool = "allowEmptySignature";
        opt supports_strict_tools: bool = "supportsStrictTools";
        opt supports_mid_convo_tool_changes: bool = "supportsMidConvoToolChanges";
        opt supports_message_threads: bool = "supportsMessageThreads";
        opt allowed_fallback_models: Vec<AnthropicAllowedFallbackModel> = "allowedFallbackModels";
        opt image_input: ImageInput = "imageInput";
        opt send_image_opt_in_header: bool = "sendImageOptInHeader";
    }
}

/// Keys whose object values are merged one level deep rather than replaced.
const NESTED_MERGE_KEYS: [&str; 4] = [
    "openRouterRouting",
    "vercelGatewayRouting",
    "chatTemplateKwargs",
    "chatTemplateArgs",
];

impl ModelCompat {
    /// Overlays `over` on `base` the way Pi merges provider-level and model-level compat
    /// (`{...base, ...over}`, with the routing and chat-template objects merged one level
    /// deep), keeping JavaScript key order: base keys first, new keys appended.
    pub fn merge(base: Option<&ModelCompat>, over: Option<&ModelCompat>) -> Option<ModelCompat> {
        let Some(over) = over else {
            return base.cloned();
        };
        let to_map = |c: &ModelCompat| match serde_json::to_value(c) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let base_map = base.map(to_map).unwrap_or_default();
        let over_map = to_map(over);
        let mut merged = base_map.clone();
        for (k, v) in &over_map {
            merged.insert(k.clone(), v.clone());
        }
        for key in NESTED_MERGE_KEYS {
            let b = base_map.get(key).and_then(Value::as_object);
            let o = over_map.get(key).and_then(Value::as_object);
            if b.is_some() || o.is_some() {
                let mut nested = b.cloned().unwrap_or_default();
                for (k, v) in o.into_iter().flatten() {
                    nested.insert(k.clone(), v.clone());
                }
                merged.insert(key.to_string(), Value::Object(nested));
            }
        }
        ModelCompat::from_map(merged).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn compat_round_trips_and_merges() {
        let s = r#"{"thinkingFormat":"qwen-chat-template","chatTemplateKwargs":{"enable_thinking":{"$var":"thinking.enabled","omitWhenOff":true},"x":null,"n":2},"openRouterRouting":{"sort":{"by":"price","partition":null},"max_price":{"prompt":"1","completion":2},"preferred_max_latency":{"p50":1.5}},"maxTokensField":"max_tokens"}"#;
        let c: ModelCompat = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&c).unwrap(), s);
        let base: ModelCompat =
            serde_json::from_str(r#"{"supportsStore":false,"openRouterRouting":{"only":["a"]}}"#)
                .unwrap();
        let over: ModelCompat = serde_json::from_str(
            r#"{"openRouterRouting":{"order":["b"]},"supportsStore":true,"zaiToolStream":true}"#,
        )
        .unwrap();
        let m = ModelCompat::merge(Some(&base), Some(&over)).unwrap();
        assert_eq!(
            to_js_string(&m).unwrap(),
            r#"{"supportsStore":true,"openRouterRouting":{"only":["a"],"order":["b"]},"zaiToolStream":true}"#
        );
    }
}
