//! The `local` provider: a GGUF model run in-process by llama.cpp, so the agent works with no
//! API key and no network.
//!
//! * Models: provider `local`, api `llama-cpp`. The built-in one is SmolLM2-135M-Instruct
//!   (Q4_1), installed by `scripts/setup-local-model` into the models directory
//!   ([`paths::models_dir`]). A model counts as available when its file exists; it needs no
//!   credentials.
//! * `models.json` adds models under `providers.local.models` (their `api` defaults to
//!   `llama-cpp`): `baseUrl` is the GGUF file (absolute, `~/`, or a name in the models
//!   directory), `contextWindow` bounds the context, and `samplingParams` may set `threads`
//!   (default `PI_LOCAL_THREADS`, else all CPUs but one), `temperature` (default 0: greedy),
//!   `topK`, `topP`, `seed`, `repeatPenalty` (default 1.1), `toolThreshold` (default 0.05),
//!   `toolExamples` (default true) and `maxToolRounds` (default unlimited; 1 for SmolLM2).
//! * The prompt is the model's chat template from its GGUF metadata (as llama.cpp knows it),
//!   else ChatML; see [`prompt`] for how the transcript and tools are rendered and [`shots`]
//!   for the example exchanges that teach a small model to call tools.
//! * Output protocol: with tools declared, generation runs under a grammar ([`grammar`]) that
//!   allows either a text answer or exactly one well-formed call,
//!   `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`; the first token decides which
//!   (a call when the model gives it at least `toolThreshold` of the probability). A call
//!   streams as `toolcall_*` events and ends with a `toolUse` stop; [`protocol`] parses it.
//!   After `maxToolRounds` rounds of calls since the user spoke, only text is allowed.
//! * The model stays loaded for the life of the process (one worker thread per file), and the
//!   KV cache of the previous request's prompt prefix is reused. An abort stops generation
//!   before the next token.
//! * `PI_LOCAL_STATS=1` prints one line of timings per request on stderr.
//!
//! The inference engine is behind the `llama` feature (it builds llama.cpp); without it the
//! provider still registers and renders, and a request fails saying how to build it in.

pub mod catalog;
// Without the `llama` feature nothing reads what a job carries.
#[cfg_attr(not(feature = "llama"), allow(dead_code))]
mod engine;
pub mod grammar;
pub mod paths;
pub mod prompt;
pub mod protocol;
mod provider;
pub mod shots;
pub mod turn;

pub use catalog::{
    API, DEFAULT_MODEL_FILE, DEFAULT_MODEL_ID, PROVIDER, builtin_model, default_model, is_runnable,
    local_model, registry_provider,
};
pub use provider::{STATS_ENV, THREADS_ENV, missing_model_message, settings, stream};

/// Whether the inference engine is compiled in.
pub const ENGINE_BUILT: bool = cfg!(feature = "llama");
