//! Talking to LLMs: one module per wire API, all streaming into the same [`StreamEvent`]s.

pub mod anthropic;
pub mod azure_openai_responses;
pub mod bedrock;
pub mod budget;
pub mod classify;
pub mod copilot;
pub mod cost;
mod dispatch;
pub mod errors;
pub mod faux;
pub mod google;
pub mod google_vertex;
pub mod http;
pub mod images;
pub mod mistral_conversations;
pub mod openai_codex_responses;
pub mod openai_completions;
pub mod openai_responses;
pub mod output;
pub mod pi_messages;
pub mod provider_error;
pub mod provider_retry;
pub mod request;
pub mod sse;
pub mod stream;
pub mod strict_schema;
pub mod strict_tool_limits;
pub mod tool_args;
pub mod transcript;
pub mod transform;

pub use dispatch::{ApiStreamFn, BUILT_IN_APIS, has_api, register_api, stream};
pub use stream::{
    AssistantStream, CacheRetention, LlmContext, ProviderHooks, StreamEvent, StreamOptions,
    StreamSender,
};
