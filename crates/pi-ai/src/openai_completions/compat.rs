//! The effective `compat` of an openai-completions model: detected from provider and base URL,
//! then overridden key by key by the model's `compat` (Pi's `detectCompat`/`getCompat`).

use pi_protocol::compat::{
    CacheControlFormat, ChatTemplateKwargValue, MaxTokensField, ModelCompat, PromptCacheKeyMode,
    SessionAffinityFormat, ThinkingFormat, ThinkingTokenBudgetField,
};
use pi_protocol::model::Model;
use pi_protocol::record::OrderedMap;

#[derive(Debug, Clone)]
pub struct Compat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    pub supports_finish_reason: bool,
    pub max_tokens_field: MaxTokensField,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_non_null_assistant_content: bool,
    pub requires_tools_with_tool_history: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    pub thinking_format: ThinkingFormat,
    pub chat_template_kwargs: OrderedMap<ChatTemplateKwargValue>,
    pub chat_template_args: OrderedMap<ChatTemplateKwargValue>,
    pub zai_tool_stream: bool,
    pub supports_thinking_token_budget: bool,
    pub thinking_token_budget_field: Option<ThinkingTokenBudgetField>,
    pub supports_strict_mode: bool,
    pub supports_mid_convo_system_messages: bool,
    pub supports_mid_convo_tool_additions: bool,
    pub cache_control_format: Option<CacheControlFormat>,
    pub send_session_affinity_headers: bool,
    pub session_affinity_format: SessionAffinityFormat,
    pub supports_long_cache_retention: bool,
    pub prompt_cache_key_mode: Option<PromptCacheKeyMode>,
    pub vllm_priority: Option<f64>,
}

fn detect(model: &Model) -> Compat {
    let p = model.provider.as_str();
    let url = model.base_url.as_str();
    let zai = p == "zai"
        || p == "zai-coding-cn"
        || url.contains("api.z.ai")
        || url.contains("open.bigmodel.cn");
    let together =
        p == "together" || url.contains("api.together.ai") || url.contains("api.together.xyz");
    let moonshot = p == "moonshotai" || p == "moonshotai-cn" || url.contains("api.moonshot.");
    let openrouter = p == "openrouter" || url.contains("openrouter.ai");
    let cf_workers = p == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let cf_gateway = p == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let nvidia = p == "nvidia" || url.contains("integrate.api.nvidia.com");
    let ant_ling = p == "ant-ling" || url.contains("api.ant-ling.com");
    let cerebras = p == "cerebras" || url.contains("cerebras.ai");
    let deepseek = p == "deepseek" || url.to_lowercase().contains("deepseek.com");
    let grok = p == "xai" || url.contains("api.x.ai");
    let non_standard = nvidia
        || cerebras
        || grok
        || together
        || url.contains("chutes.ai")
        || deepseek
        || zai
        || moonshot
        || p == "opencode"
        || url.contains("opencode.ai")
        || cf_workers
        || cf_gateway
        || ant_ling;
    let max_tokens = url.contains("chutes.ai")
        || deepseek
        || moonshot
        || cf_gateway
        || together
        || nvidia
        || ant_ling
        || zai;
    Compat {
        supports_store: !non_standard,
        supports_developer_role: p == "openai" || url.contains("api.openai.com"),
        supports_reasoning_effort: !grok
            && !zai
            && !moonshot
            && !together
            && !cf_gateway
            && !nvidia
            && !ant_ling,
        supports_usage_in_streaming: true,
        supports_finish_reason: true,
        max_tokens_field: if max_tokens {
            MaxTokensField::MaxTokens
        } else {
            MaxTokensField::MaxCompletionTokens
        },
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_non_null_assistant_content: false,
        requires_tools_with_tool_history: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: deepseek,
        thinking_format: if deepseek {
            ThinkingFormat::Deepseek
        } else if zai {
            ThinkingFormat::Zai
        } else if together {
            ThinkingFormat::Together
        } else if ant_ling {
            ThinkingFormat::AntLing
        } else if openrouter {
            ThinkingFormat::Openrouter
        } else {
            ThinkingFormat::Openai
        },
        chat_template_kwargs: OrderedMap::new(),
        chat_template_args: OrderedMap::new(),
        zai_tool_stream: false,
        supports_thinking_token_budget: false,
        thinking_token_budget_field: None,
        supports_strict_mode: false,
        supports_mid_convo_system_messages: false,
        supports_mid_convo_tool_additions: false,
        cache_control_format: (p == "openrouter" && model.id.starts_with("anthropic/"))
            .then_some(CacheControlFormat::Anthropic),
        send_session_affinity_headers: openrouter,
        session_affinity_format: if openrouter {
            SessionAffinityFormat::Openrouter
        } else {
            SessionAffinityFormat::Openai
        },
        supports_long_cache_retention: !(together
            || cf_workers
            || cf_gateway
            || nvidia
            || ant_ling),
        prompt_cache_key_mode: None,
        vllm_priority: None,
    }
}

/// Detected compat overridden by the model's explicit `compat` keys.
pub fn compat(model: &Model) -> Compat {
    let mut c = detect(model);
    let Some(m): Option<&ModelCompat> = model.compat.as_ref() else {
        return c;
    };
    macro_rules! over {
        ($($f:ident),*) => { $( if let Some(v) = m.$f.clone() { c.$f = v; } )* };
    }
    over!(
        supports_store,
        supports_developer_role,
        supports_reasoning_effort,
        supports_usage_in_streaming,
        supports_finish_reason,
        max_tokens_field,
        requires_tool_result_name,
        requires_assistant_after_tool_result,
        requires_non_null_assistant_content,
        requires_tools_with_tool_history,
        requires_thinking_as_text,
        requires_reasoning_content_on_assistant_messages,
        thinking_format,
        chat_template_kwargs,
        chat_template_args,
        zai_tool_stream,
        supports_thinking_token_budget,
        supports_strict_mode,
        supports_mid_convo_system_messages,
        supports_mid_convo_tool_additions,
        send_session_affinity_headers,
        session_affinity_format,
        supports_long_cache_retention
    );
    if m.thinking_token_budget_field.is_some() {
        c.thinking_token_budget_field = m.thinking_token_budget_field;
    }
    if m.cache_control_format.is_some() {
        c.cache_control_format = m.cache_control_format;
    }
    c.prompt_cache_key_mode = m.prompt_cache_key_mode;
    c.vllm_priority = m.vllm_priority;
    c
}
