//! The `local` provider's built-in model and its entry in the model registry.

use crate::paths::{models_dir, resolve_model_path};
use pi_protocol::model::{InputModality, Model, ModelCost};
use pi_registry::LocalProvider;

/// The provider id (`--provider local`).
pub const PROVIDER: &str = "local";
/// The `api` of local models: llama.cpp, in-process.
pub const API: &str = "llama-cpp";
/// The built-in model (`--model smollm2-135m-instruct`).
pub const DEFAULT_MODEL_ID: &str = "smollm2-135m-instruct";
/// Its file in the models directory, as `scripts/setup-local-model` installs it.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// What the "no models" messages add when the file is missing.
pub const SETUP_HINT: &str = "Or run a local model with no API key: install it with scripts/setup-local-model (from the pi source tree), then use --provider local --model smollm2-135m-instruct.";

/// SmolLM2 was trained with an 8192-token window.
const DEFAULT_CONTEXT_WINDOW: u64 = 8192;
/// Enough for a short answer or a tool call; a 135M model rambles past this.
const DEFAULT_MAX_TOKENS: u64 = 1024;

/// A local model definition whose weights are at `base_url` (see [`resolve_model_path`]).
pub fn local_model(id: &str, name: &str, base_url: &str) -> Model {
    let mut m = Model::placeholder();
    m.id = id.into();
    m.name = name.into();
    m.api = API.into();
    m.provider = PROVIDER.into();
    m.base_url = base_url.into();
    m.input = vec![InputModality::Text];
    m.cost = ModelCost::default();
    m.context_window = DEFAULT_CONTEXT_WINDOW;
    m.max_tokens = DEFAULT_MAX_TOKENS;
    m
}

/// The built-in model, pointing at its file in the models directory (present or not).
pub fn builtin_model() -> Model {
    let path = models_dir()
        .map(|d| d.join(DEFAULT_MODEL_FILE).to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_MODEL_FILE.into());
    let mut m = local_model(DEFAULT_MODEL_ID, "SmolLM2 135M Instruct (local)", &path);
    // At 135M parameters it repeats a call rather than moving on: one round, then an answer.
    let mut params = serde_json::Map::new();
    params.insert("maxToolRounds".into(), 1.into());
    m.sampling_params = Some(params);
    m
}

/// The built-in model when its weights are installed.
pub fn default_model() -> Option<Model> {
    Some(builtin_model()).filter(is_runnable)
}

/// Whether the model's weights are on disk.
pub fn is_runnable(model: &Model) -> bool {
    resolve_model_path(&model.base_url).is_some_and(|p| p.is_file())
}

/// The registry entry for `pi_registry::LoadOptions::local`.
pub fn registry_provider() -> LocalProvider {
    LocalProvider {
        id: PROVIDER.into(),
        name: "Local (llama.cpp)".into(),
        api: API.into(),
        models: vec![builtin_model()],
        runnable: is_runnable,
        setup_hint: SETUP_HINT.into(),
    }
}
