//! The agent: its state, queues and the entry points that start a low-level run.

use crate::event::AgentEvent;
use crate::queue::PendingQueue;
use crate::tool::{AgentTool, ExecutionMode};
use pi_ai::{AssistantStream, LlmContext, StreamOptions};
use pi_protocol::QueueMode;
use pi_protocol::SharedMessage;
use pi_protocol::content::ToolCall;
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::AgentToolResult;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub type BoxFuture<'a, T = ()> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Starts a model request (Pi's `StreamFn`); `pi_ai::stream` in production, scripted in tests.
pub type StreamFn = Arc<dyn Fn(&Model, LlmContext, StreamOptions) -> AssistantStream + Send + Sync>;

/// Turns agent messages into what the model sees (system, user, assistant, toolResult).
pub type ConvertToLlm = Arc<dyn Fn(&[SharedMessage]) -> Vec<SharedMessage> + Send + Sync>;

/// Receives every event, in order. The loop waits for each call, so a slow listener (a client
/// that stopped reading) pauses the run instead of queueing without bound.
pub trait AgentListener: Send + Sync {
    fn on_event<'a>(&'a self, event: &'a AgentEvent) -> BoxFuture<'a>;
}

/// A completed turn, as the hooks see it.
pub struct TurnContext<'a> {
    pub message: &'a AssistantMessage,
    /// Tool-result messages.
    pub tool_results: &'a [SharedMessage],
    pub context: &'a [SharedMessage],
}

/// Replacement state for the next turn (e.g. after compaction).
#[derive(Default)]
pub struct TurnUpdate {
    /// Replaces the whole context of the run.
    pub context: Option<Vec<SharedMessage>>,
    pub model: Option<Model>,
    pub thinking_level: Option<ThinkingLevel>,
    /// Delivered before the turn's queued messages (a system message patching the prompt).
    pub messages: Vec<AgentMessage>,
}

/// What the `before_tool_call` hook decided.
pub enum ToolCallGate {
    /// Run the call with these arguments (possibly changed by the hook).
    Run(Map<String, Value>),
    /// Do not run it: the call fails with `reason` (Pi's default text when `None`), and with
    /// `terminate` the run stops after this batch.
    Block {
        reason: Option<String>,
        terminate: bool,
    },
}

/// Points where the session runtime takes part in a run.
pub trait RunHooks: Send + Sync {
    /// Before a validated call runs (Pi's `beforeToolCall`: extensions' `tool_call`). `Err` is
    /// the text of a call that failed in the hook.
    fn before_tool_call<'a>(
        &'a self,
        _call: &'a ToolCall,
        args: Map<String, Value>,
    ) -> BoxFuture<'a, Result<ToolCallGate, String>> {
        Box::pin(async move { Ok(ToolCallGate::Run(args)) })
    }

    /// After a call ran (Pi's `afterToolCall`: extensions' `tool_result`): the result and its
    /// error flag, possibly patched.
    fn after_tool_call<'a>(
        &'a self,
        _call: &'a ToolCall,
        _args: &'a Map<String, Value>,
        result: AgentToolResult,
        is_error: bool,
    ) -> BoxFuture<'a, (AgentToolResult, bool)> {
        Box::pin(async move { (result, is_error) })
    }

    /// The messages a request is built from, before conversion (Pi's `transformContext`:
    /// extensions' `context`).
    fn transform_context<'a>(
        &'a self,
        messages: Vec<SharedMessage>,
    ) -> BoxFuture<'a, Vec<SharedMessage>> {
        Box::pin(async move { messages })
    }

    /// What may look at and change the next provider request (extensions' provider events).
    fn provider_hooks(&self) -> Option<Arc<dyn pi_ai::ProviderHooks>> {
        None
    }

    /// Transport settings of the next request (idle timeout, provider-level retries), read
    /// per request so a settings change applies to the next one.
    fn request_settings(&self) -> RequestSettings {
        RequestSettings::default()
    }

    /// A finished message before anyone sees its `message_end` (extensions' `message_end` may
    /// replace it).
    fn message_end<'a>(&'a self, message: SharedMessage) -> BoxFuture<'a, SharedMessage> {
        Box::pin(async move { message })
    }

    /// Called before every turn after the first (Pi's `prepareNextTurn`).
    fn prepare_next_turn<'a>(
        &'a self,
        _turn: &'a TurnContext<'a>,
    ) -> BoxFuture<'a, Option<TurnUpdate>> {
        Box::pin(async { None })
    }

    /// The credential for a provider, resolved per request (tokens may expire).
    fn api_key<'a>(&'a self, _provider: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    /// Everything a request to `model` needs from its credential, resolved per request (an
    /// OAuth token may be refreshed first); `Err` is the text the response fails with, before
    /// anything is sent. Defaults to [`Self::api_key`].
    fn request_credentials<'a>(
        &'a self,
        model: &'a Model,
    ) -> BoxFuture<'a, Result<RequestCredentials, String>> {
        Box::pin(async move {
            Ok(RequestCredentials {
                api_key: self.api_key(&model.provider).await,
                ..RequestCredentials::default()
            })
        })
    }

    /// The model one request goes to (Pi's `prepareRequest` under a virtual model): `None`
    /// sends it to `model`; `Some(Ok(..))` to the model and thinking level a router chose;
    /// `Some(Err(text))` fails the response with `text` before anything is sent.
    fn route_request<'a>(
        &'a self,
        _model: &'a Model,
        _reasoning: Option<ThinkingLevel>,
        _context: &'a [SharedMessage],
    ) -> BoxFuture<'a, Option<Result<Route, String>>> {
        Box::pin(async { None })
    }

    /// A response failed before anything streamed; `true` when its credential was rejected
    /// and has been renewed, so the request is worth making once more.
    fn credentials_rejected<'a>(
        &'a self,
        _model: &'a Model,
        _failed: &'a AssistantMessage,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }
}

/// Where a routed request goes: the model and its thinking level (`None`: off).
pub type Route = (Model, Option<ThinkingLevel>);

/// A request's credential as the provider adapter takes it.
///
/// See also [`RunHooks::credentials_rejected`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCredentials {
    pub api_key: Option<String>,
    /// Headers the credential adds (a token sent as `Authorization`, ...).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Provider settings that travel with the credential (AWS profile, Google project, ...).
    pub env: std::collections::BTreeMap<String, String>,
    /// The endpoint the credential names, replacing the model's.
    pub base_url: Option<String>,
}

/// Settings `http` transport takes per request (`None`: pi-ai's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestSettings {
    /// `httpIdleTimeoutMs` (zero disables it).
    pub idle_timeout: Option<std::time::Duration>,
    /// `retry.provider.maxRetries`.
    pub max_retries: Option<u32>,
    /// `retry.provider.maxRetryDelayMs` (zero: no limit).
    pub max_retry_delay: Option<std::time::Duration>,
}

/// Hooks that do nothing.
pub struct NoHooks;
impl RunHooks for NoHooks {}

pub struct AgentConfig {
    pub stream_fn: StreamFn,
    pub convert_to_llm: ConvertToLlm,
    pub listener: Arc<dyn AgentListener>,
    pub hooks: Arc<dyn RunHooks>,
    pub tool_execution: ExecutionMode,
    pub session_id: Option<String>,
    pub max_tokens: Option<u64>,
}

/// The agent's state between and during runs.
pub struct AgentState {
    /// The transcript: every message whose `message_end` was emitted. Shared (not copied) with
    /// the session store, each run's context and each request.
    pub messages: Vec<SharedMessage>,
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Error message of the last turn that failed.
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyPrompting,
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyContinuing,
    #[error("No messages to continue from")]
    NothingToContinue,
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

pub struct Agent {
    state: Mutex<AgentState>,
    steering: Mutex<PendingQueue>,
    follow_up: Mutex<PendingQueue>,
    /// Cancellation of the active run, if any.
    active: Mutex<Option<CancellationToken>>,
    /// Messages added to the session during a run, outside the loop (an extension's message
    /// held until its turn ended): the run's context takes them before its next request.
    context_additions: Mutex<Vec<SharedMessage>>,
    busy: watch::Sender<bool>,
    pub(crate) config: AgentConfig,
    /// Taken by nested tool calls that must run alone (see [`crate::NestedRunner`]).
    pub(crate) nested_queue: Arc<tokio::sync::Mutex<()>>,
}

/// Locks a mutex, recovering from poisoning: state stays usable even if a listener panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Agent {
    pub fn new(config: AgentConfig, state: AgentState) -> Agent {
        Agent {
            state: Mutex::new(state),
            steering: Mutex::new(PendingQueue::new(QueueMode::OneAtATime)),
            follow_up: Mutex::new(PendingQueue::new(QueueMode::OneAtATime)),
            active: Mutex::new(None),
            context_additions: Mutex::new(Vec::new()),
            busy: watch::channel(false).0,
            config,
            nested_queue: Arc::default(),
        }
    }

    /// Runs `f` with the state locked. Never hold it across an await.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut AgentState) -> R) -> R {
        f(&mut lock(&self.state))
    }

    pub fn messages(&self) -> Vec<SharedMessage> {
        lock(&self.state).messages.clone()
    }

    pub fn is_running(&self) -> bool {
        *self.busy.borrow()
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.steering).mode = mode;
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.follow_up).mode = mode;
    }

    pub fn steer(&self, message: AgentMessage) {
        lock(&self.steering).enqueue(message);
    }

    pub fn follow_up(&self, message: AgentMessage) {
        lock(&self.follow_up).enqueue(message);
    }

    /// Adds a message the session recorded outside the loop to the active run's context (from
    /// its next request on). Without an active run nothing is needed: the next run starts
    /// from the transcript.
    pub fn add_to_run_context(&self, message: SharedMessage) {
        if self.is_running() {
            lock(&self.context_additions).push(message);
        }
    }

    pub(crate) fn take_context_additions(&self) -> Vec<SharedMessage> {
        std::mem::take(&mut *lock(&self.context_additions))
    }

    pub fn clear_queues(&self) {
        lock(&self.steering).clear();
        lock(&self.follow_up).clear();
    }

    pub fn has_queued_messages(&self) -> bool {
        lock(&self.steering).has_items() || lock(&self.follow_up).has_items()
    }

    pub(crate) fn drain_steering(&self) -> Vec<AgentMessage> {
        lock(&self.steering).drain()
    }

    pub(crate) fn drain_follow_up(&self) -> Vec<AgentMessage> {
        lock(&self.follow_up).drain()
    }

    /// Aborts the active run: the provider stream and running tools are cancelled at once.
    pub fn abort(&self) {
        if let Some(token) = lock(&self.active).as_ref() {
            token.cancel();
        }
    }

    /// The cancellation of the active run (what [`Agent::abort`] cancels), for work a hook
    /// waits on that an abort must end (a tool approval waiting for the client).
    pub fn run_cancellation(&self) -> Option<CancellationToken> {
        lock(&self.active).clone()
    }

    /// Resolves when no run is active.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.busy.subscribe();
        let _ = rx.wait_for(|busy| !*busy).await;
    }

    /// Marks a run active; `None` when one already is.
    pub(crate) fn begin_run(&self) -> Option<CancellationToken> {
        let mut active = lock(&self.active);
        if active.is_some() {
            return None;
        }
        let token = CancellationToken::new();
        *active = Some(token.clone());
        lock(&self.state).error_message = None;
        self.busy.send_replace(true);
        Some(token)
    }

    pub(crate) fn end_run(&self) {
        *lock(&self.active) = None;
        lock(&self.context_additions).clear();
        self.busy.send_replace(false);
    }

    /// Ends a message: the `message_end` hook may replace it (keeping its role), then
    /// `message_end` is emitted. Returns the message as ended.
    pub(crate) async fn end_message(&self, message: SharedMessage) -> SharedMessage {
        let ended = self.config.hooks.message_end(message.clone()).await;
        let message = if ended.role() == message.role() {
            ended
        } else {
            message
        };
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await;
        message
    }

    /// Updates state for an event, then hands it to the listener (pi-agent-core's
    /// `processEvents`).
    pub(crate) async fn emit(&self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageEnd { message } => lock(&self.state).messages.push(message.clone()),
            AgentEvent::TurnEnd { message, .. } => {
                if let AgentMessage::Assistant(a) = &**message
                    && let Some(e) = &a.error_message
                {
                    lock(&self.state).error_message = Some(e.clone());
                }
            }
            _ => {}
        }
        self.config.listener.on_event(&event).await;
    }
}
