//! The inference engine behind the provider: a job goes in, decoded text comes out.
//!
//! With the `llama` feature each model file gets one worker thread that loads it once and keeps
//! it (and its KV cache) for the life of the process; jobs for that file queue on it. Without
//! the feature every job fails with a message saying how to build pi with local models.

#[cfg(feature = "llama")]
mod llama;
#[cfg(feature = "llama")]
mod sampling;
// Used by the engine only, but its tests run in every build.
#[cfg_attr(not(feature = "llama"), allow(dead_code))]
mod utf8;

use crate::prompt::Turn;
use std::path::PathBuf;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Per-request engine settings (from the model definition and the request).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Upper bound of the context (prompt and output), in tokens.
    pub context_window: u32,
    pub threads: usize,
    /// 0 means greedy decoding.
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub seed: u32,
    /// 1.0 disables it.
    pub repeat_penalty: f32,
    /// With tools declared: the least probability the model must give to starting a call for
    /// the output to be one (see `Sampling` in the llama engine).
    pub tool_threshold: f32,
}

/// One generation request.
#[derive(Debug)]
pub struct Job {
    pub path: PathBuf,
    pub settings: Settings,
    pub turns: Vec<Turn>,
    /// GBNF constraining the output, when tools are declared.
    pub grammar: Option<String>,
    /// Whether the grammar offers a call (decided on the first token).
    pub allow_calls: bool,
    pub max_tokens: u32,
    /// Checked before every decoded token.
    pub cancel: CancellationToken,
    pub events: mpsc::UnboundedSender<EngineEvent>,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model ended its turn.
    EndOfTurn,
    /// `max_tokens` or the context window was reached.
    Length,
    Cancelled,
}

/// Where the time went, for logs and benchmarks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Model load time, when this job loaded it.
    pub load_ms: Option<u64>,
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV cache was kept from the previous request.
    pub reused_tokens: usize,
    pub prefill_ms: u64,
    pub output_tokens: usize,
    pub decode_ms: u64,
    /// With tools declared: how likely the model found starting a call.
    pub call_probability: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The prompt was tokenized; `tokens` is its length.
    Prompt {
        tokens: usize,
    },
    /// Text of one or more generated tokens (always whole UTF-8 characters).
    Text(String),
    Finished {
        reason: Finish,
        stats: Stats,
    },
    Failed(String),
}

/// Queues a job on the worker of its model file.
pub fn submit(job: Job) {
    #[cfg(feature = "llama")]
    llama::submit(job);
    #[cfg(not(feature = "llama"))]
    {
        let _ = job.events.send(EngineEvent::Failed(
            "This pi was built without local models: rebuild with `cargo build -p pi-coding-agent --features local-model`".into(),
        ));
    }
}
