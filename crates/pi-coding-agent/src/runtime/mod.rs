//! The session runtime (Pi's `AgentSession`): one agent, one session file, the model registry,
//! settings and resources, and everything a run does around the agent loop — queues, retries,
//! persistence, `agent_settled`. RPC commands call into it; it writes events to the output.

mod additions;
mod approvals;
mod catalog_refresh;
mod commands_misc;
mod compaction;
mod emit;
mod hooks;
mod listener;

pub(crate) mod codemode_models;
mod local_model;
mod mcp;
mod model_cmds;
mod prompt;
mod rebind;
mod replace;
mod retry;
mod session_cmds;
mod startup;
mod state;
mod tools;

pub use additions::ListSessionsParams;
pub(crate) use catalog_refresh::refresh_builtin;
pub(crate) use prompt::custom_message;
pub use prompt::{Preflight, PromptOrigin, PromptRequest};
pub use startup::{cli_registry, list_models, start};
pub(crate) use tools::{ToolCatalog, extension_tools};

use crate::output::Output;
use crate::resources::session::SessionResources;
use crate::settings::model::Settings;
use pi_agent::Agent;
use pi_protocol::message::{AgentMessage, AssistantMessage, BashExecutionMessage};
use pi_registry::{ModelRegistry, ScopedModel};
use pi_session::SessionStore;
use pi_tools::SessionHandle;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Fixed facts about where this process runs.
#[derive(Debug, Clone)]
pub struct RuntimeEnv {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    /// The package folder (`README.md`, `docs/`, `examples/`), named in the system prompt.
    pub package_dir: PathBuf,
    /// `<package_dir>/docs` when it holds Pi's docs (as with `PI_PACKAGE_DIR` pointing at a Pi
    /// install), named in login help texts; otherwise the help names our README.
    pub docs_dir: Option<PathBuf>,
}

/// State of the session-level run (Pi's `_isAgentRunActive` and friends).
#[derive(Debug, Default)]
pub(crate) struct RunState {
    /// Texts of queued steering messages, as `queue_update` reports them.
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    pub abort_requested: bool,
    pub retry_attempt: u64,
    /// Cancels the backoff sleep of a pending retry.
    pub retry_cancel: Option<CancellationToken>,
    /// Ids of `abort_retry` commands to answer once the cancelled retry reported its end, so
    /// the answer comes after `auto_retry_end` and before `agent_settled`, as in Pi.
    pub abort_retry_waiters: Vec<Option<serde_json::Value>>,
    /// The last assistant message of the low-level run that just ended.
    pub last_assistant: Option<AssistantMessage>,
    /// Session entry id of each persisted assistant message, newest last (for retry omission).
    pub last_assistant_entry: Option<String>,
    /// Tool-result entry ids persisted after `last_assistant_entry`.
    pub tool_result_entries: Vec<String>,
    /// RPC `bash` results waiting for the run to settle.
    pub pending_bash: Vec<BashExecutionMessage>,
    /// A manual compaction is running (prompts are refused meanwhile).
    pub compacting: bool,
    /// An automatic compaction is running (`isCompacting`, but prompts queue as usual).
    pub auto_compacting: bool,
    /// The running compaction (manual or automatic), for `abort`.
    pub compaction: Option<compaction::CompactionHandle>,
    /// The current prompt already had its one overflow compact-and-retry.
    pub overflow_recovery_attempted: bool,
    /// `turnIndex` of the extensions' turn events: 0-based within a low-level run.
    pub turn_index: u64,
    /// How the last turn ended (`completed`, `error`, `aborted`): `agent_before_settle`'s
    /// `outcome`; `None` reads as `completed`.
    pub last_outcome: Option<&'static str>,
    /// The compaction under way is one an extension supplied (`session_before_compact`).
    pub compaction_from_extension: bool,
    /// A system prompt an extension forced for the current run (`before_agent_start`).
    pub forced_system_prompt: Option<String>,
    /// System prompt options an extension edited for the current run (`before_agent_start`).
    pub prompt_options: Option<crate::resources::prompt_options::PromptOptions>,
    /// The `mcp_servers` prompt section as the current run started (Pi renders a run's prompt
    /// from the options it started with; servers that connect meanwhile show from the next
    /// run on). `None` outside a run.
    pub mcp_section: Option<Option<String>>,
    /// The session's own active tools while a run uses others (see `apply_run_loadout`).
    pub loadout_base: Option<Vec<String>>,
    /// Extension messages for the next run (`sendMessage` with `deliverAs: "nextTurn"`).
    pub next_turn: Vec<AgentMessage>,
    /// Extension messages sent during a turn without triggering one; appended when it ends.
    pub held_custom: Vec<AgentMessage>,
    /// The session file refused a message of the current low-level run (already reported).
    pub persist_failed: bool,
}

/// Everything the runtime owns except the agent.
pub(crate) struct Core {
    pub out: Output,
    pub env: RuntimeEnv,
    pub session: Mutex<SessionStore>,
    pub registry: Mutex<ModelRegistry>,
    /// Settings, context files, skills, prompt templates.
    pub res: Mutex<SessionResources>,
    /// `--models` or the settings' `enabledModels`, resolved (again for each new session).
    pub scoped_models: Mutex<Vec<ScopedModel>>,
    /// The command line, for what is loaded again later (`ctx.reload()`).
    pub args: crate::cli::Args,
    /// `--approve`/`--no-approve` as given (`args` may hold an extension's decision for the
    /// startup cwd instead).
    pub cli_trust_override: Option<bool>,
    /// Trust decisions extensions made for other cwds than the startup one (Pi caches them by
    /// cwd for the process's life).
    pub trust_by_cwd: Mutex<std::collections::HashMap<PathBuf, bool>>,
    /// The host of a pre-trust pass made for the next session's cwd, to carry on as the
    /// extensions' host once that session starts.
    pub pending_host: Mutex<Option<pi_ext_host::Host>>,
    /// Diagnostics printed so far, each printed once (Pi's `takeUnreportedDiagnostics`).
    pub reported_diagnostics: Mutex<std::collections::HashSet<String>>,
    pub tool_session: SessionHandle,
    pub run: Mutex<RunState>,
    /// True while a session-level run is active (`isStreaming`).
    pub busy: watch::Sender<bool>,
    /// Running RPC `bash` commands, for `abort_bash`.
    pub bash_cancels: Mutex<Vec<(u64, CancellationToken)>>,
    /// The last `message_update` usage and its JSON: a stream's deltas mostly repeat it.
    pub usage_json: Mutex<Option<(pi_protocol::usage::Usage, Box<serde_json::value::RawValue>)>>,
    /// Every tool the session can declare.
    pub tools: ToolCatalog,
    /// The tools a session starts with (CLI, settings, MCP), before its transcript's loadout.
    pub default_tools: OnceLock<Vec<String>>,
    /// Loaded extensions (none: nothing to do anywhere).
    pub ext: crate::extensions::Extensions,
    /// `extension_error`s found at startup, written once the session runs: `(path, error)`.
    pub pending_ext_errors: Mutex<Vec<(String, String)>>,
    /// The streaming assistant message, rebuilt for extensions' `message_update` handlers.
    pub ext_partial: Mutex<Option<crate::extensions::PartialAssistant>>,
    /// An extension asked pi to quit (`ctx.shutdown()`).
    pub quit: tokio::sync::Notify,
    /// The session directory chosen at startup (`--session-dir` etc.), `None` for the default
    /// per-cwd one: where `list_sessions` looks.
    pub session_dir: Option<PathBuf>,
    /// The tool approval policy and the approval dialogs in flight (an addition).
    pub approvals: approvals::Approvals,
    agent: OnceLock<Weak<Agent>>,
    /// This core, for what must outlive a borrow of it (hooks handed to a request).
    this: OnceLock<Weak<Core>>,
}

/// Locks a mutex, recovering from poisoning (a panicked task must not wedge the session).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Core {
    pub fn agent(&self) -> Option<Arc<Agent>> {
        self.agent.get().and_then(Weak::upgrade)
    }

    pub fn this(&self) -> Option<Arc<Core>> {
        self.this.get().and_then(Weak::upgrade)
    }

    pub fn is_streaming(&self) -> bool {
        *self.busy.borrow()
    }

    /// `ctx.shutdown()`: the mode ends the session once it is idle.
    pub fn request_shutdown(&self) {
        self.quit.notify_one();
    }

    /// A copy of the merged settings.
    pub fn settings(&self) -> Settings {
        lock(&self.res).settings.settings().clone()
    }
}

/// The runtime: cheap to clone, shared by every command task.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) agent: Arc<Agent>,
    pub(crate) core: Arc<Core>,
}

impl Runtime {
    /// Resolves when an extension asked pi to quit and the session is idle.
    pub async fn quit_requested(&self) {
        self.core.quit.notified().await;
        let mut busy = self.core.busy.subscribe();
        let _ = busy.wait_for(|b| !*b).await;
    }

    /// Ends the process's work: aborts a run and waits for it, kills running commands.
    pub async fn shutdown(&self) {
        if self.core.is_streaming() {
            self.abort().await;
        }
        self.shutdown_extensions().await;
        self.core.shutdown_mcp().await;
        pi_tools::kill_running_shells();
    }
}
