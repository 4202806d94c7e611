//! `prompt`, `steer`, `follow_up` and the session-level run (Pi's `prompt`, `_preparePrompt`,
//! `_startRun`, `_handlePostAgentRun`).
//!
//! The preflight runs inline in the command loop, so a second `prompt` sent right behind the
//! first always sees the session busy (Pi races here and can lose it, see DEVIATIONS.md). The run
//! itself is its own task.

use super::{Core, Runtime, lock};
use crate::extensions::{InputOutcome, StartTrigger};
use crate::resources::expand::expand_input;
use crate::resources::system_prompt::{ToolPrompt, diff_sections, replay_sections, system_message};
use pi_protocol::StreamingBehavior;
use pi_protocol::content::{ImageContent, StringOrBlocks, TextContent, UserBlock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::{AgentMessage, CustomMessage, UserMessage};

use pi_protocol::results::ClearQueueData;
use pi_protocol::usage::StopReason;

/// A `prompt`, `steer` or `follow_up` as received.
#[derive(Debug, Clone)]
pub struct PromptRequest {
    pub text: String,
    pub images: Vec<ImageContent>,
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// What the preflight decided.
pub enum Preflight {
    /// Answer `success:false` with this error.
    Rejected(String),
    /// Queued behind the active run; answer `disposition:"queued"`.
    Queued,
    /// An extension's `input` handler took care of it; answer `disposition:"handled"`.
    Handled,
    /// A run was started with these messages; answer `disposition:"started"`, then run it with
    /// [`Runtime::run_session`].
    Started(Vec<AgentMessage>),
}

/// A custom message an extension returned (`{customType, content, display, details}`).
pub(crate) fn custom_message(value: serde_json::Value) -> Option<AgentMessage> {
    let content = match value.get("content") {
        None | Some(serde_json::Value::Null) => serde_json::json!([]),
        Some(c) => c.clone(),
    };
    let message = CustomMessage {
        custom_type: value.get("customType")?.as_str()?.to_string(),
        content: serde_json::from_value(content).ok()?,
        display: value
            .get("display")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        details: value.get("details").cloned(),
        timestamp: pi_js::now_ms(),
        rest: Default::default(),
    };
    Some(AgentMessage::Custom(message))
}

fn user_message(text: String, images: Vec<ImageContent>) -> AgentMessage {
    let mut blocks = vec![UserBlock::Text(TextContent::new(text))];
    blocks.extend(images.into_iter().map(UserBlock::Image));
    AgentMessage::User(UserMessage::new(
        StringOrBlocks::Blocks(blocks),
        pi_js::now_ms(),
    ))
}

/// Who sent a prompt: the client, or an extension (`pi.sendUserMessage`), whose text is
/// expanded only when it asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptOrigin {
    Rpc,
    Extension { expand: bool },
}

impl Runtime {
    /// The inline part of `prompt`.
    pub async fn prompt_preflight(&self, request: PromptRequest) -> Preflight {
        self.prompt_preflight_from(request, PromptOrigin::Rpc).await
    }

    /// The inline part of a prompt from `origin`.
    pub(crate) async fn prompt_preflight_from(
        &self,
        request: PromptRequest,
        origin: PromptOrigin,
    ) -> Preflight {
        if lock(&self.core.run).compacting {
            return Preflight::Rejected(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
                    .into(),
            );
        }
        let streaming = self.core.is_streaming();
        let behavior = request
            .streaming_behavior
            .filter(|_| streaming)
            .map(|b| match b {
                StreamingBehavior::Steer => "steer",
                StreamingBehavior::FollowUp => "followUp",
            });
        let (source, expand) = match origin {
            PromptOrigin::Rpc => ("rpc", true),
            PromptOrigin::Extension { expand } => ("extension", expand),
        };
        // Pi queues an extension's message a tick after the call when no `input` handler runs
        // (before the command that sent it is answered), but only after the command's answer
        // when `input` handlers are awaited first.
        let input_handled = self.core.ext.handles("input");
        let (text, images) = match self
            .core
            .ext_input(request.text, request.images, source, behavior)
            .await
        {
            InputOutcome::Handled => return Preflight::Handled,
            InputOutcome::Continue(text, images) => (text, images),
        };
        let text = if expand {
            self.core.expand(&text).await
        } else {
            text
        };
        if self.core.is_streaming() {
            return match request.streaming_behavior {
                None => Preflight::Rejected(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
                        .into(),
                ),
                Some(behavior) => {
                    if origin == PromptOrigin::Rpc || !input_handled {
                        self.queue(behavior, text, images).await;
                    } else {
                        // Announced once the command that sent it has been answered.
                        self.enqueue(behavior, text, images);
                        let core = std::sync::Arc::clone(&self.core);
                        tokio::spawn(async move {
                            core.ext.commands_answered().await;
                            core.emit_queue_update().await;
                        });
                    }
                    Preflight::Queued
                }
            };
        }
        if let Err(message) = self.core.check_auth(&self.agent) {
            return Preflight::Rejected(message);
        }
        // From here the session is busy: a prompt arriving now is queued or refused.
        self.core.busy.send_replace(true);
        {
            let mut run = lock(&self.core.run);
            run.abort_requested = false;
        }
        self.core.mcp_before_prompt().await;
        let started = self
            .core
            .ext_before_agent_start(StartTrigger::User {
                prompt: &text,
                images: &images,
            })
            .await;
        let (images, hints) = self.core.normalize_images(images);
        let text = if hints.is_empty() {
            text
        } else {
            format!("{text}\n\n{}", hints.join("\n"))
        };
        Preflight::Started(self.starting_messages(user_message(text, images), started))
    }

    /// A run's starting messages (Pi's `_prepareRun`): the system prompt patch if the prompt
    /// changed, the starting message, held `nextTurn` messages, then messages extensions added.
    pub(crate) fn starting_messages(
        &self,
        first: AgentMessage,
        started: crate::extensions::BeforeAgentStart,
    ) -> Vec<AgentMessage> {
        let next_turn = std::mem::take(&mut lock(&self.core.run).next_turn);
        lock(&self.core.run).forced_system_prompt = started.system_prompt;
        let section = self.core.mcp_servers_section();
        lock(&self.core.run).mcp_section = Some(section);
        self.apply_run_loadout(started.prompt_options.as_ref().map(|o| o.selected_tools()));
        lock(&self.core.run).prompt_options = started.prompt_options;
        let mut messages = Vec::new();
        if let Some(system) = self.core.system_patch(&self.agent) {
            messages.push(AgentMessage::System(system));
        }
        messages.push(first);
        messages.extend(next_turn);
        messages.extend(started.messages.into_iter().filter_map(custom_message));
        messages
    }

    /// `steer` / `follow_up`: queue (also while idle; the next run delivers it).
    pub async fn queue_input(&self, behavior: StreamingBehavior, request: PromptRequest) {
        let text = self.core.expand(&request.text).await;
        self.queue(behavior, text, request.images).await;
    }

    async fn queue(&self, behavior: StreamingBehavior, text: String, images: Vec<ImageContent>) {
        self.enqueue(behavior, text, images);
        self.core.emit_queue_update().await;
    }

    /// Queues the message without announcing it.
    fn enqueue(&self, behavior: StreamingBehavior, text: String, images: Vec<ImageContent>) {
        {
            let mut run = lock(&self.core.run);
            match behavior {
                StreamingBehavior::Steer => run.steering.push(text.clone()),
                StreamingBehavior::FollowUp => run.follow_up.push(text.clone()),
            }
        }
        let message = user_message(text, images);
        match behavior {
            StreamingBehavior::Steer => self.agent.steer(message),
            StreamingBehavior::FollowUp => self.agent.follow_up(message),
        }
    }

    /// The session-level run: the first low-level run, then retries and queued work, then
    /// exactly one `agent_settled`.
    pub async fn run_session(&self, messages: Vec<AgentMessage>) {
        self.core.ext_run_state("run", Some(true));
        // Pi checks before the prompt response; here the check follows it, so the command
        // loop stays free to take an `abort` while a compaction runs.
        self.core.check_compaction_before_prompt().await;
        if let Err(e) = self.agent.prompt(messages).await {
            eprintln!("pi: {e}");
        }
        loop {
            if self.abort_requested() {
                break;
            }
            if self.post_agent_run().await {
                if self.abort_requested() {
                    break;
                }
                if let Err(e) = self.agent.continue_run().await {
                    eprintln!("pi: {e}");
                    break;
                }
                continue;
            }
            if self.abort_requested() || !self.before_settle().await {
                break;
            }
            if self.abort_requested() {
                break;
            }
            if let Err(e) = self.agent.continue_run().await {
                eprintln!("pi: {e}");
                break;
            }
        }
        if self.abort_requested() {
            self.core.finish_cancelled_retry().await;
        }
        self.core.flush_pending_bash();
        self.core.flush_held_custom().await;
        {
            let mut run = lock(&self.core.run);
            run.forced_system_prompt = None;
            run.prompt_options = None;
            run.mcp_section = None;
        }
        self.core.ext_run_state("run", Some(false));
        let aborted = self.abort_requested();
        // Idle before the client hears `agent_settled`: its next prompt must find us ready.
        self.core.busy.send_replace(false);
        self.core
            .ext_emit("agent_settled", serde_json::json!({ "aborted": aborted }))
            .await;
        self.core.emit(SessionEvent::AgentSettled { aborted }).await;
    }

    fn abort_requested(&self) -> bool {
        lock(&self.core.run).abort_requested
    }

    /// After a low-level run: retry, report a final failure, or continue with queued messages.
    /// True when the agent should continue.
    async fn post_agent_run(&self) -> bool {
        let message = lock(&self.core.run).last_assistant.take();
        if self.abort_requested() {
            self.core.finish_cancelled_retry().await;
            return false;
        }
        let Some(message) = message else {
            return self.agent.has_queued_messages();
        };
        if self.core.is_retryable(&message) && self.core.prepare_retry(&message).await {
            if self.abort_requested() {
                self.core.finish_cancelled_retry().await;
            }
            return !self.abort_requested();
        }
        if self.abort_requested() {
            self.core.finish_cancelled_retry().await;
            return false;
        }
        if message.stop_reason == StopReason::Error {
            let attempt = std::mem::take(&mut lock(&self.core.run).retry_attempt);
            if attempt > 0 {
                self.core
                    .emit(SessionEvent::AutoRetryEnd {
                        success: false,
                        attempt,
                        final_error: message.error_message.clone(),
                    })
                    .await;
            }
        }
        if self.core.check_compaction(&message).await {
            return !self.abort_requested();
        }
        !self.abort_requested() && self.agent.has_queued_messages()
    }

    /// `abort`: stops the run (stream, tools, retry backoff) and waits until the session is idle.
    pub async fn abort(&self) {
        self.core.cancel_compaction().await;
        if self.core.is_streaming() {
            let retry = {
                let mut run = lock(&self.core.run);
                run.abort_requested = true;
                run.retry_cancel.clone()
            };
            if let Some(cancel) = retry {
                cancel.cancel();
            }
            self.core.ext_run_state("abort", None);
            self.agent.abort();
        }
        let mut busy = self.core.busy.subscribe();
        let _ = busy.wait_for(|b| !*b).await;
    }

    /// `clear_queue`: empties both queues and returns their texts.
    pub async fn clear_queue(&self) -> ClearQueueData {
        let taken = {
            let mut run = lock(&self.core.run);
            ClearQueueData {
                steering: std::mem::take(&mut run.steering),
                follow_up: std::mem::take(&mut run.follow_up),
            }
        };
        self.agent.clear_queues();
        self.core.emit_queue_update().await;
        taken
    }
}

impl Core {
    /// Skill and prompt-template expansion; a failing skill read is reported like Pi does.
    async fn expand(&self, text: &str) -> String {
        let expansion = {
            let res = lock(&self.res);
            expand_input(text, &res.resources.skills, &res.resources.prompts)
        };
        if let Some(err) = expansion.error {
            self.emit(SessionEvent::ExtensionError {
                extension_path: err.path,
                event: "skill_expansion".into(),
                error: err.error,
            })
            .await;
        }
        expansion.text
    }

    /// Pi's `_normalizePromptImages`: converts unusual formats, fits images into the limits
    /// (when `images.autoResize` is on) and returns the hint lines for the prompt text.
    fn normalize_images(&self, images: Vec<ImageContent>) -> (Vec<ImageContent>, Vec<String>) {
        use base64::Engine;
        use pi_tools::image::{Processed, ResizeLimits, process_image};
        let auto_resize = self.settings().image_auto_resize;
        let mut out = Vec::new();
        let mut hints = Vec::new();
        for image in images {
            let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(image.data.as_bytes())
            else {
                // Not base64 we can read: pass it on untouched, as the provider will judge it.
                out.push(image);
                continue;
            };
            match process_image(
                &bytes,
                &image.mime_type,
                auto_resize,
                &ResizeLimits::default(),
            ) {
                Processed::Image {
                    data,
                    mime_type,
                    hints: h,
                } => {
                    out.push(ImageContent { data, mime_type });
                    hints.extend(h);
                }
                Processed::Omitted(message) => hints.push(message),
            }
        }
        (out, hints)
    }

    /// The model and auth checks of the preflight.
    fn check_auth(&self, agent: &pi_agent::Agent) -> Result<(), String> {
        let model = agent.with_state(|s| s.model.clone());
        let registry = lock(&self.registry);
        if registry.has_configured_auth(&model.provider) || registry.request_auth(&model).is_ok() {
            return Ok(());
        }
        if registry.is_using_oauth(&model.provider) {
            return Err(pi_registry::oauth_failed(&model.provider));
        }
        Err(registry.no_api_key_message(&model.provider))
    }

    /// The tool prompts of the active tools (built-in texts or what extensions registered).
    fn tool_prompts(&self, names: &[String]) -> Vec<ToolPrompt> {
        names.iter().map(|n| self.tools.prompt(n)).collect()
    }

    /// The prompt's sections for the active tools `names`: from the options an extension
    /// edited for this run, else from the session's resources.
    fn prompt_sections(
        &self,
        agent: &pi_agent::Agent,
        names: &[String],
    ) -> Result<crate::resources::system_prompt::Sections, String> {
        let run_options = lock(&self.run).prompt_options.clone();
        let built = match run_options {
            Some(options) => {
                let session = self.prompt_options(agent);
                options
                    .with_tools(names, &session)
                    .build(&self.env.package_dir)
            }
            None => lock(&self.res).prompt_sections(
                names,
                &[],
                &self.tool_prompts(names),
                &self.env.package_dir,
            ),
        };
        built.map(|s| self.with_mcp_section(s))
    }

    /// The session's own system prompt options (Pi's base options) for `agent`'s tools, or
    /// the session's tools while a run uses others.
    pub(crate) fn prompt_options(
        &self,
        agent: &pi_agent::Agent,
    ) -> crate::resources::prompt_options::PromptOptions {
        let names: Vec<String> = lock(&self.run).loadout_base.clone().unwrap_or_else(|| {
            agent.with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect())
        });
        let tools = self
            .tools
            .names()
            .iter()
            .map(|n| self.tools.prompt(n))
            .collect();
        crate::resources::prompt_options::PromptOptions::session(&lock(&self.res), names, tools)
    }

    /// The whole current system prompt as the model would read it (`ctx.getSystemPrompt()`).
    pub fn system_prompt_text(&self, agent: &pi_agent::Agent) -> String {
        let names: Vec<String> =
            agent.with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect());
        match self.prompt_sections(agent, &names) {
            // As `system_text` renders a leading system message: sections joined by a blank line.
            Ok(sections) => sections
                .iter()
                .map(|(_, text)| text.as_str())
                .filter(|text| !text.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"),
            Err(_) => String::new(),
        }
    }

    /// The system message to send before this run's first message, if the prompt changed.
    pub fn system_patch(
        &self,
        agent: &pi_agent::Agent,
    ) -> Option<pi_protocol::message::SystemMessage> {
        let messages = agent.with_state(|s| s.messages.clone());
        self.system_patch_over(agent, &messages)
    }

    /// The system message patching the prompt `messages` declare into the one this session
    /// renders now (its options and active tools), if they differ.
    pub fn system_patch_over(
        &self,
        agent: &pi_agent::Agent,
        messages: &[pi_protocol::SharedMessage],
    ) -> Option<pi_protocol::message::SystemMessage> {
        let transcript_sections = replay_sections(messages.iter().filter_map(|m| match &**m {
            AgentMessage::System(sys) => Some(sys),
            _ => None,
        }));
        let tool_names: Vec<String> =
            agent.with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect());
        let sections = match self.prompt_sections(agent, &tool_names) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("pi: {e}");
                return None;
            }
        };
        diff_sections(&transcript_sections, &sections)
            .map(|patch| system_message(patch, pi_js::now_ms()))
    }
}
