//! The `Model` object (pi-ai `Model<Api>`) as RPC reports it (`get_state.model`, `set_model`,
//! `get_available_models`, `cycle_model`), with its cost, limits and thinking-level metadata.
//!
//! Models are records (see [`crate::record`]): models built from `models.json` use the canonical
//! key order below, while catalog models keep the order of their catalog JSON.

use crate::compat::ModelCompat;
pub use crate::cost::{ModelCost, ModelCostTier};
use crate::record::{OrderedMap, Rest, record};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a model accepts as input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputModality {
    Text,
    Image,
}

record! {
    /// Provider-specific value for each Pi thinking level; `null` marks a level unsupported, an
    /// absent key uses the provider default.
    #[derive(Default)]
    pub struct ThinkingLevelMap {
        optnul off: String = "off";
        optnul minimal: String = "minimal";
        optnul low: String = "low";
        optnul medium: String = "medium";
        optnul high: String = "high";
        optnul xhigh: String = "xhigh";
        optnul max: String = "max";
    }
}

record! {
    /// How images are shrunk before they are sent to the model.
    #[derive(Default)]
    pub struct ModelImageResizeOptions {
        opt max_width: u64 = "maxWidth" via crate::num::de_u64;
        opt max_height: u64 = "maxHeight" via crate::num::de_u64;
        opt max_bytes: u64 = "maxBytes" via crate::num::de_u64;
        opt jpeg_quality: f64 = "jpegQuality";
    }
}

record! {
    /// Limits on images in requests.
    #[derive(Default)]
    pub struct ModelImageInputLimits {
        opt resize: ModelImageResizeOptions = "resize";
        opt max_per_message: u64 = "maxPerMessage" via crate::num::de_u64;
        opt max_per_request: u64 = "maxPerRequest" via crate::num::de_u64;
    }
}

record! {
    /// Provider input limits (`ModelInputLimits`).
    #[derive(Default)]
    pub struct ModelInputLimits {
        opt max_request_bytes: u64 = "maxRequestBytes" via crate::num::de_u64;
        opt images: ModelImageInputLimits = "images";
    }
}

record! {
    /// Prompt-cache lifetimes per retention tier (`ModelPromptCache`).
    #[derive(Default)]
    pub struct ModelPromptCache {
        opt short: f64 = "short";
        opt long: f64 = "long";
    }
}

/// Free-form sampling parameters merged into requests (`Record<string, unknown>`).
pub type SamplingParams = Map<String, Value>;

record! {
    /// Sampling parameter overrides per effective thinking level.
    #[derive(Default)]
    pub struct SamplingParamsByThinkingLevel {
        opt off: SamplingParams = "off";
        opt minimal: SamplingParams = "minimal";
        opt low: SamplingParams = "low";
        opt medium: SamplingParams = "medium";
        opt high: SamplingParams = "high";
        opt xhigh: SamplingParams = "xhigh";
        opt max: SamplingParams = "max";
    }
}

record! {
    /// A chat model. Canonical key order is the order Pi builds models from `models.json`.
    pub struct Model {
        req id: String = "id";
        req name: String = "name";
        req api: String = "api";
        req provider: String = "provider";
        req base_url: String = "baseUrl";
        req reasoning: bool = "reasoning";
        opt thinking_level_map: ThinkingLevelMap = "thinkingLevelMap";
        req input: Vec<InputModality> = "input";
        opt input_limits: ModelInputLimits = "inputLimits";
        req cost: ModelCost = "cost";
        opt prompt_cache: ModelPromptCache = "promptCache";
        req context_window: u64 = "contextWindow" via crate::num::de_u64;
        req max_tokens: u64 = "maxTokens" via crate::num::de_u64;
        opt sampling_params: SamplingParams = "samplingParams";
        opt sampling_params_by_thinking_level: SamplingParamsByThinkingLevel = "samplingParamsByThinkingLevel";
        opt headers: OrderedMap<String> = "headers";
        opt compat: ModelCompat = "compat";
    }
}

impl Model {
    /// The model pi-agent-core reports when no model is available:
    /// `{"id":"unknown","name":"unknown","api":"unknown","provider":"unknown","baseUrl":"",
    /// "reasoning":false,"input":[],"cost":{...all 0},"contextWindow":0,"maxTokens":0}`.
    pub fn placeholder() -> Model {
        Model {
            id: "unknown".into(),
            name: "unknown".into(),
            api: "unknown".into(),
            provider: "unknown".into(),
            base_url: String::new(),
            reasoning: false,
            thinking_level_map: None,
            input: Vec::new(),
            input_limits: None,
            cost: ModelCost::default(),
            prompt_cache: None,
            context_window: 0,
            max_tokens: 0,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            headers: None,
            compat: None,
            rest: Rest::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn placeholder_matches_pi() {
        assert_eq!(
            to_js_string(&Model::placeholder()).unwrap(),
            r#"{"id":"unknown","name":"unknown","api":"unknown","provider":"unknown","baseUrl":"","reasoning":false,"input":[],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":0,"maxTokens":0}"#
        );
    }

    #[test]
    fn catalog_order_round_trips() {
        let s = r#"{"id":"claude-fable-5","name":"Claude Fable 5","api":"anthropic-messages","provider":"anthropic","baseUrl":"https://api.anthropic.com","reasoning":true,"input":["text","image"],"cost":{"input":10,"output":50,"cacheRead":1,"cacheWrite":12.5},"contextWindow":1000000,"maxTokens":128000,"thinkingLevelMap":{"off":null,"xhigh":"xhigh","max":"max"},"compat":{"forceAdaptiveThinking":true,"supportsMidConvoSystemMessages":true,"supportsStrictTools":true,"allowedFallbackModels":[{"provider":"anthropic","model":"claude-opus-4-8","cost":{"input":5,"output":25,"cacheRead":0.5,"cacheWrite":6.25}}]},"promptCache":{"short":300,"long":3600}}"#;
        let m: Model = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&m).unwrap(), s);
        let tlm = m.thinking_level_map.as_ref().unwrap();
        assert_eq!(tlm.off, Some(None));
        assert_eq!(tlm.low, None);
    }
}
