//! The contract between a provider and its consumer (the agent loop).
//!
//! Pi's `AssistantMessageEvent` carries the whole partial message on every event. Copying that
//! per delta would make a long response quadratic, so our events carry only what changed plus a
//! snapshot of the running [`Usage`] (which the wire's `message_update` needs); the consumer
//! rebuilds nothing, because `Done`/`Error` bring the final message.

use crate::budget::ThinkingBudgets;
use pi_protocol::SharedMessage;
use pi_protocol::content::ToolCall;
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::Usage;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the model sees: the normalized transcript. System instructions and tool declarations
/// travel as `system` messages inside it (Pi's `TranscriptContext`); only the four LLM roles
/// (system, user, assistant, toolResult) appear here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmContext {
    /// Shared with the agent's transcript: a request copies no message.
    pub messages: Vec<SharedMessage>,
}

impl LlmContext {
    /// A context owning these messages.
    pub fn from_messages(messages: Vec<AgentMessage>) -> LlmContext {
        LlmContext {
            messages: messages.into_iter().map(SharedMessage::new).collect(),
        }
    }
}

/// Per-request options (Pi's `SimpleStreamOptions`, the parts we honour).
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Resolved credential for the model's provider.
    pub api_key: Option<String>,
    /// Requested thinking level; `None` means off.
    pub reasoning: Option<ThinkingLevel>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    /// Session id for providers with session-aware caching.
    pub session_id: Option<String>,
    /// Extra request headers (models.json `headers`, provider headers).
    pub headers: BTreeMap<String, String>,
    /// Cancels the request; the stream then ends with an `aborted` message.
    pub cancel: CancellationToken,
    /// Prompt-cache retention; `None` means `short` unless `PI_CACHE_RETENTION=long`.
    pub cache_retention: Option<CacheRetention>,
    /// Per-level thinking budgets for token-budget APIs (settings `thinkingBudgets`).
    pub thinking_budgets: ThinkingBudgets,
    /// How long the connection may be silent (waiting for headers, or between body chunks)
    /// before the request fails; `None` is Pi's default of 300 s, zero disables it
    /// (settings `httpIdleTimeoutMs`).
    pub idle_timeout: Option<Duration>,
    /// Provider-level retries of a request that failed before its stream began (settings
    /// `retry.provider.maxRetries`; `None` is Pi's default of none). See [`crate::provider_retry`].
    pub max_retries: Option<u32>,
    /// The longest server-requested retry delay honoured (`retry.provider.maxRetryDelayMs`;
    /// `None` is 60 s, zero means no limit).
    pub max_retry_delay: Option<Duration>,
    /// `User-Agent` header; `None` uses [`crate::http::default_user_agent`].
    pub user_agent: Option<String>,
    /// Who may look at and change the request (extensions' provider events).
    pub hooks: Option<std::sync::Arc<dyn ProviderHooks>>,
    /// Provider settings that travel with the credential (AWS profile and region, Google
    /// project, ...): looked up before the process environment (Pi's `options.env`).
    pub env: BTreeMap<String, String>,
    /// Pi's `stream` with provider options rather than `streamSimple` (an extension's
    /// `modelRegistry.complete`): only what was asked for is sent — no default output budget,
    /// `reasoning` is the provider's effort as given. So far only openai-completions tells the
    /// two apart.
    pub raw: bool,
}

impl StreamOptions {
    /// A provider setting: the request's own `env`, else the process environment; empty
    /// values count as unset (`getProviderEnvValue`).
    pub fn env_value(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }
}

/// What may see and change a request on its way (Pi's `onPayload`, `transformHeaders`,
/// `onResponse`: extensions' `before_provider_request`, `before_provider_headers`,
/// `after_provider_response`).
pub trait ProviderHooks: Send + Sync {
    /// The request body about to be sent; returns the body to send.
    fn payload<'a>(&'a self, payload: serde_json::Value) -> HookFuture<'a, serde_json::Value>;
    /// The request headers about to be sent; returns the headers to send.
    fn headers<'a>(&'a self, headers: HeaderPairs) -> HookFuture<'a, HeaderPairs>;
    /// A successful response's status and headers, before its body is read.
    fn response<'a>(&'a self, status: u16, headers: HeaderPairs) -> HookFuture<'a, ()>;
    /// Whether [`ProviderHooks::stream_event`] wants the raw events (Pi's
    /// `onProviderStreamEvent`); without it a provider need not parse what it can skip.
    fn wants_stream_events(&self) -> bool {
        false
    }
    /// One raw event of the response stream as the provider's SDK parsed it (a chunk, an
    /// Anthropic event), awaited before the event is processed.
    fn stream_event<'a>(
        &'a self,
        _model: &'a pi_protocol::model::Model,
        _event: &'a serde_json::Value,
    ) -> HookFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Header names and values, in order.
pub type HeaderPairs = Vec<(String, String)>;

/// What a [`ProviderHooks`] method returns.
pub type HookFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

impl std::fmt::Debug for dyn ProviderHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProviderHooks")
    }
}

/// Prompt-cache retention preference (`CacheRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRetention {
    None,
    Short,
    Long,
}

impl CacheRetention {
    /// The option, else `long` when `PI_CACHE_RETENTION=long`, else `short`.
    pub fn resolve(option: Option<CacheRetention>) -> CacheRetention {
        option.unwrap_or_else(|| match std::env::var("PI_CACHE_RETENTION") {
            Ok(v) if v == "long" => CacheRetention::Long,
            _ => CacheRetention::Short,
        })
    }
}

/// One streaming event. Indices are positions in the message's `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The response started. `partial` has empty content and the usage known so far.
    Start {
        partial: AssistantMessage,
    },
    TextStart {
        index: usize,
        usage: Usage,
    },
    TextDelta {
        index: usize,
        delta: String,
        usage: Usage,
    },
    /// `content` is the block's complete text; `signature` the `contentSignature` a pi-messages
    /// backend sent with it (the event carries it on the wire).
    TextEnd {
        index: usize,
        content: String,
        signature: Option<String>,
        usage: Usage,
    },
    ThinkingStart {
        index: usize,
        usage: Usage,
    },
    ThinkingDelta {
        index: usize,
        delta: String,
        usage: Usage,
    },
    ThinkingEnd {
        index: usize,
        content: String,
        signature: Option<String>,
        usage: Usage,
    },
    /// `id` and `name` are the tool call's, as the wire's `toolcall_start` reports them.
    ToolcallStart {
        index: usize,
        id: String,
        name: String,
        usage: Usage,
    },
    ToolcallDelta {
        index: usize,
        delta: String,
        usage: Usage,
    },
    ToolcallEnd {
        index: usize,
        tool_call: ToolCall,
        usage: Usage,
    },
    /// The final message of a successful response (`stop`, `length`, `toolUse`).
    Done {
        message: AssistantMessage,
    },
    /// The final message of a failed or aborted response (`stopReason` `error`/`aborted`,
    /// `errorMessage` set, content as far as it got).
    Error {
        message: AssistantMessage,
    },
}

impl StreamEvent {
    /// True for the two events that end a stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, StreamEvent::Done { .. } | StreamEvent::Error { .. })
    }
}

/// Capacity of a provider's event channel: enough to decouple network reads from the
/// consumer, small enough that a stalled consumer stalls the socket read.
const STREAM_CHANNEL: usize = 256;

/// The receiving end of a response stream. Every stream ends with exactly one
/// `Done` or `Error` event; a provider that vanished without one is reported by [`Self::next`]
/// returning `None`, which the consumer must turn into an error message.
#[derive(Debug)]
pub struct AssistantStream {
    rx: mpsc::Receiver<StreamEvent>,
}

/// The sending end, held by a provider task.
#[derive(Debug, Clone)]
pub struct StreamSender {
    tx: mpsc::Sender<StreamEvent>,
}

impl AssistantStream {
    /// A connected pair.
    pub fn channel() -> (StreamSender, AssistantStream) {
        let (tx, rx) = mpsc::channel(STREAM_CHANNEL);
        (StreamSender { tx }, AssistantStream { rx })
    }

    /// A stream that consists of one terminal event (e.g. a request that failed before sending).
    pub fn immediate(event: StreamEvent) -> AssistantStream {
        let (tx, rx) = mpsc::channel(1);
        // Capacity 1 and a fresh channel: this cannot fail.
        let _ = tx.try_send(event);
        AssistantStream { rx }
    }

    pub async fn next(&mut self) -> Option<StreamEvent> {
        self.rx.recv().await
    }
}

impl StreamSender {
    /// Sends an event; false once the consumer is gone (the provider should stop).
    pub async fn send(&self, event: StreamEvent) -> bool {
        self.tx.send(event).await.is_ok()
    }
}
