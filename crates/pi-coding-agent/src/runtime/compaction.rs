//! Compaction in the session runtime (Pi's `compact`, `_checkCompaction`,
//! `_runAutoCompaction`, `_compactBeforeNextAssistantResponse`, `getContextUsage`): runs the
//! pure logic of [`crate::compaction`] against the session, records the entry, reloads the
//! agent's context and reports `compaction_*` events.
//!
//! Manual compaction refuses prompts while it runs; automatic compaction happens inside a run
//! (after it, or between a tool batch and the next request), so the session stays busy instead.
//! Either is cancelled by `abort`.

use super::{Core, Runtime, lock};
use crate::compaction::{
    self, CheckInput, Preparation, RetryNotice, RetryNotices, RetryPolicy, SummarizeError,
    Summarizer, Trigger,
};
use crate::settings::model::CompactionSettings;
use pi_agent::BoxFuture;
use pi_protocol::SharedMessage;
use pi_protocol::event::{CompactionReason, SessionEvent, SummarizationSource};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::results::{CompactionResult, ContextUsage};
use pi_protocol::thinking::ThinkingLevel;
use pi_session::CompactionParams;
use tokio_util::sync::CancellationToken;

/// Turns summarization retry notices into `summarization_retry_*` events.
struct RetryEvents<'a> {
    core: &'a Core,
    /// `None`: a branch summary.
    reason: Option<CompactionReason>,
}

impl RetryNotices for RetryEvents<'_> {
    fn notify<'a>(&'a self, notice: RetryNotice) -> BoxFuture<'a> {
        Box::pin(async move {
            let event = match notice {
                RetryNotice::Scheduled {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                } => SessionEvent::SummarizationRetryScheduled {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                },
                RetryNotice::AttemptStart => SessionEvent::SummarizationRetryAttemptStart {
                    source: match self.reason {
                        Some(_) => SummarizationSource::Compaction,
                        None => SummarizationSource::BranchSummary,
                    },
                    reason: self.reason,
                },
                RetryNotice::Finished => SessionEvent::SummarizationRetryFinished {},
            };
            self.core.emit(event).await;
        })
    }
}

/// A running compaction: `cancel` stops it, `done` fires once its `compaction_end` is out.
#[derive(Debug)]
pub(crate) struct CompactionHandle {
    cancel: CancellationToken,
    done: CancellationToken,
}

fn model_key(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

impl Core {
    pub(crate) fn current_model(&self) -> Option<Model> {
        self.agent().map(|a| a.with_state(|s| s.model.clone()))
    }

    /// `compaction` settings for `model`; an invalid token setting is an error, as in Pi.
    pub(super) fn compaction_settings(&self, model: &Model) -> Result<CompactionSettings, String> {
        let (settings, warnings) = self.settings().compaction_for(Some(&model_key(model)));
        match warnings.into_iter().next() {
            Some(w) => Err(w),
            None => Ok(settings),
        }
    }

    fn retry_policy(&self) -> RetryPolicy {
        let r = self.settings().retry;
        RetryPolicy {
            enabled: r.enabled,
            max_retries: r.max_retries.max(0.0) as u64,
            base_delay_ms: r.base_delay_ms.max(0.0) as u64,
            max_delay_ms: r.max_agent_delay_ms.max(0.0) as u64,
        }
    }

    /// What to summarize, or `None` when there is nothing.
    fn prepare(&self, settings: CompactionSettings) -> Option<Preparation> {
        let session = lock(&self.session);
        let projection = session.build_projection();
        let branch = session.branch_entries(None);
        compaction::prepare_compaction(&projection, &branch, settings.keep_recent_tokens)
    }

    /// Marks a compaction as running and returns its cancellation.
    pub(crate) fn begin_compaction(&self, manual: bool) -> CancellationToken {
        let handle = CompactionHandle {
            cancel: CancellationToken::new(),
            done: CancellationToken::new(),
        };
        let cancel = handle.cancel.clone();
        let mut run = lock(&self.run);
        if manual {
            run.compacting = true;
        } else {
            run.auto_compacting = true;
        }
        run.compaction = Some(handle);
        cancel
    }

    /// Marks the compaction as over; returns the token to fire once its end is reported.
    pub(crate) fn end_compaction(&self, manual: bool) -> Option<CancellationToken> {
        let mut run = lock(&self.run);
        if manual {
            run.compacting = false;
        } else {
            run.auto_compacting = false;
        }
        run.compaction.take().map(|h| h.done)
    }

    /// Cancels a running compaction and waits until its end was reported (part of `abort`,
    /// which Pi answers after `compaction_end`).
    pub async fn cancel_compaction(&self) {
        let handle = lock(&self.run)
            .compaction
            .as_ref()
            .map(|h| (h.cancel.clone(), h.done.clone()));
        if let Some((cancel, done)) = handle {
            cancel.cancel();
            done.cancelled().await;
        }
    }

    /// Summarizes, appends the compaction entry and reloads the agent's context.
    async fn summarize_and_record(
        &self,
        model: &Model,
        prep: &Preparation,
        custom_instructions: Option<&str>,
        reason: CompactionReason,
        cancel: &CancellationToken,
    ) -> Result<CompactionResult, SummarizeError> {
        let hook = self
            .ext_before_compact(prep, custom_instructions, reason)
            .await;
        if hook.cancel {
            return Err(SummarizeError::Cancelled);
        }
        if let Some(result) = hook.compaction {
            lock(&self.run).compaction_from_extension = true;
            return self.record_compaction(result, true, reason).await;
        }
        let (model, thinking_level) = self
            .summary_model(model.clone())
            .await
            .map_err(SummarizeError::Failed)?;
        let api_key = self
            .summarization_api_key(&model)
            .await
            .map_err(SummarizeError::Failed)?;
        let notices = RetryEvents {
            core: self,
            reason: Some(reason),
        };
        let summarizer = Summarizer {
            stream: self.ext.stream_fn(),
            model,
            api_key,
            thinking_level,
            retry: self.retry_policy(),
            transport: self.transport_settings(),
            cancel: cancel.clone(),
            notices: &notices,
        };
        let result = summarizer.compact(prep, custom_instructions).await?;
        if cancel.is_cancelled() {
            return Err(SummarizeError::Cancelled);
        }
        self.record_compaction(result, false, reason).await
    }

    /// Appends the compaction entry, reloads the agent's context and tells extensions
    /// (`session_compact`).
    async fn record_compaction(
        &self,
        mut result: CompactionResult,
        from_hook: bool,
        reason: CompactionReason,
    ) -> Result<CompactionResult, SummarizeError> {
        let (estimated_after, entry) = {
            let mut session = lock(&self.session);
            let id = session
                .append_compaction(CompactionParams {
                    summary: result.summary.clone(),
                    first_kept_entry_id: Some(result.first_kept_entry_id.clone()),
                    tokens_before: result.tokens_before,
                    details: result.details.clone(),
                    from_hook: Some(from_hook),
                    usage: result.usage.clone(),
                })
                .map_err(|e| SummarizeError::Failed(e.to_string()))?;
            let estimate =
                compaction::estimate_messages_tokens(&session.build_projection().messages);
            (estimate, session.entry(&id).cloned())
        };
        self.refresh_agent_context();
        result.estimated_tokens_after = Some(estimated_after);
        if let Some(entry) = entry {
            self.ext_emit(
                "session_compact",
                serde_json::json!({
                    "compactionEntry": entry,
                    "fromExtension": from_hook,
                    "reason": reason,
                    "willRetry": false,
                }),
            )
            .await;
        }
        Ok(result)
    }

    /// The credential for a summarization call; like a prompt, it needs one.
    async fn summarization_api_key(&self, model: &Model) -> Result<Option<String>, String> {
        let auth = pi_registry::request_auth_shared(&self.registry, model)
            .await
            .map_err(|e| e.to_string())?;
        if auth.api_key.is_none() && auth.headers.is_none() {
            return Err(pi_registry::no_api_key_found(
                &model.provider,
                self.env.docs_dir.as_deref(),
            ));
        }
        Ok(auth.api_key)
    }

    /// After a low-level run (Pi's `_checkCompaction`): threshold compaction, or overflow
    /// recovery with one compact-and-retry per prompt. True when the agent should continue
    /// (the failed turn is retried, or messages are queued).
    pub async fn check_compaction(&self, message: &AssistantMessage) -> bool {
        self.check_compaction_with(message, true).await
    }

    /// Before a prompt starts: the same check on the last response, aborted ones included.
    pub async fn check_compaction_before_prompt(&self) {
        let last = self.agent().and_then(|a| {
            a.with_state(|s| {
                s.messages.iter().rev().find_map(|m| match &**m {
                    AgentMessage::Assistant(a) => Some(a.clone()),
                    _ => None,
                })
            })
        });
        if let Some(message) = last {
            self.check_compaction_with(&message, false).await;
        }
    }

    async fn check_compaction_with(&self, message: &AssistantMessage, skip_aborted: bool) -> bool {
        let (Some(agent), Some(model)) = (self.agent(), self.current_model()) else {
            return false;
        };
        let settings = match self.compaction_settings(&model) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("pi: {e}");
                return false;
            }
        };
        let agent_messages = agent.messages();
        let trigger = compaction::check(
            &lock(&self.session),
            &CheckInput {
                message,
                model: &model,
                settings,
                agent_messages: &agent_messages,
                skip_aborted,
            },
        );
        match trigger {
            Trigger::Nothing => false,
            // Boxed: a compaction's future is ~12 KB, and inlined it would make every check's
            // future (part of each prompt's run) that large, though most checks find nothing.
            Trigger::CompletedOverflow => {
                Box::pin(self.run_auto_compaction(CompactionReason::Overflow, false)).await
            }
            Trigger::Threshold => {
                Box::pin(self.run_auto_compaction(CompactionReason::Threshold, false)).await
            }
            Trigger::Recover { overflow } => {
                let attempted =
                    std::mem::replace(&mut lock(&self.run).overflow_recovery_attempted, true);
                if attempted {
                    let error_message = if overflow {
                        "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."
                    } else {
                        "Truncated response recovery failed after one compact-and-retry attempt."
                    };
                    self.emit_compaction_failed(
                        CompactionReason::Overflow,
                        false,
                        Some(error_message.into()),
                    )
                    .await;
                    return false;
                }
                self.omit_recovery_attempt(message, &agent_messages).await;
                Box::pin(self.run_auto_compaction(CompactionReason::Overflow, true)).await
            }
        }
    }

    /// Hides a failed attempt and its tool results from the context with `context_edit`
    /// entries, so the retried turn does not see it.
    async fn omit_recovery_attempt(&self, message: &AssistantMessage, agent: &[SharedMessage]) {
        let wrapped = AgentMessage::Assistant(message.clone());
        let call_ids: Vec<&str> = message
            .content
            .iter()
            .filter_map(|b| match b {
                pi_protocol::content::AssistantBlock::ToolCall(c) => Some(c.id.as_str()),
                _ => None,
            })
            .collect();
        let mut targets = vec![wrapped.clone()];
        if let Some(at) = agent.iter().position(|m| **m == wrapped) {
            targets.extend(
                agent[at + 1..]
                    .iter()
                    .take_while(|m| m.role() != "assistant")
                    .filter(|m| {
                        matches!(&***m, AgentMessage::ToolResult(t) if call_ids.contains(&t.tool_call_id.as_str()))
                    })
                    .map(|m| (**m).clone()),
            );
        }
        for target in &targets {
            let entry = {
                let mut session = lock(&self.session);
                let id = {
                    let branch = session.branch_entries(None);
                    compaction::persisted_entry_id(&branch, target).map(str::to_string)
                };
                let Some(id) = id else { continue };
                session
                    .append_context_edit(&id, None)
                    .map(|edit| session.entry(&edit).cloned())
            };
            match entry {
                Ok(Some(entry)) => self.emit(SessionEvent::EntryAppended { entry }).await,
                Ok(None) => {}
                Err(e) => eprintln!("pi: could not write to the session file: {e}"),
            }
        }
        self.refresh_agent_context();
    }

    /// Pi's `_runAutoCompaction`, returning whether the agent should continue: after a
    /// successful compaction that retries the failed turn, or with messages queued.
    async fn run_auto_compaction(&self, reason: CompactionReason, will_retry: bool) -> bool {
        self.auto_compact(reason, will_retry).await
            && (will_retry || self.agent().is_some_and(|a| a.has_queued_messages()))
    }

    /// Compacts with `compaction_start`/`compaction_end`; nothing to summarize means no events
    /// at all. True when the compaction was recorded.
    pub(super) async fn auto_compact(&self, reason: CompactionReason, will_retry: bool) -> bool {
        let Some(model) = self.current_model() else {
            return false;
        };
        let Ok(settings) = self.compaction_settings(&model) else {
            return false;
        };
        let Some(prep) = self.prepare(settings) else {
            return false;
        };
        let cancel = self.begin_compaction(false);
        lock(&self.run).compaction_from_extension = false;
        self.emit(SessionEvent::CompactionStart { reason }).await;
        let outcome = if cancel.is_cancelled() {
            Err(SummarizeError::Cancelled)
        } else {
            self.summarize_and_record(&model, &prep, None, reason, &cancel)
                .await
        };
        let compacted = outcome.is_ok();
        match outcome {
            Ok(result) => {
                self.emit(SessionEvent::CompactionEnd {
                    reason,
                    result: Some(result),
                    aborted: false,
                    will_retry,
                    error_message: None,
                })
                .await
            }
            Err(e) => {
                let aborted = cancel.is_cancelled() || e == SummarizeError::Cancelled;
                let prefix = match reason {
                    CompactionReason::Overflow => "Context overflow recovery failed",
                    _ => "Auto-compaction failed",
                };
                let error_message = (!aborted).then(|| format!("{prefix}: {e}"));
                self.emit_compaction_failed(reason, aborted, error_message)
                    .await;
            }
        }
        if let Some(done) = self.end_compaction(false) {
            done.cancel();
        }
        compacted
    }
}

impl Runtime {
    /// RPC `compact`: aborts an active run, then summarizes the history before the kept part.
    /// The error is the bare message (`compaction_end` carries it as `Compaction failed: …`).
    pub async fn compact(
        &self,
        custom_instructions: Option<String>,
    ) -> Result<CompactionResult, String> {
        self.abort().await;
        let core = &self.core;
        let cancel = core.begin_compaction(true);
        lock(&core.run).compaction_from_extension = false;
        core.emit(SessionEvent::CompactionStart {
            reason: CompactionReason::Manual,
        })
        .await;
        // Boxed, as the automatic ones are: the summarization's future is ~12 KB, and inlined
        // it would make every caller's future (a command's, an extension's) that large.
        let outcome =
            Box::pin(self.manual_compaction(custom_instructions.as_deref(), &cancel)).await;
        // Idle again before the client hears the end: its next prompt must be accepted.
        let done = core.end_compaction(true);
        let answer = match outcome {
            Ok(result) => {
                core.emit(SessionEvent::CompactionEnd {
                    reason: CompactionReason::Manual,
                    result: Some(result.clone()),
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                })
                .await;
                Ok(result)
            }
            Err(e) => {
                let aborted = cancel.is_cancelled() || e == SummarizeError::Cancelled;
                let message = if aborted {
                    SummarizeError::Cancelled.to_string()
                } else {
                    e.to_string()
                };
                let error_message = (!aborted).then(|| format!("Compaction failed: {message}"));
                core.emit_compaction_failed(CompactionReason::Manual, aborted, error_message)
                    .await;
                Err(message)
            }
        };
        if let Some(done) = done {
            done.cancel();
        }
        answer
    }

    async fn manual_compaction(
        &self,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionResult, SummarizeError> {
        let core = &self.core;
        let model = self.agent.with_state(|s| s.model.clone());
        if model == Model::placeholder() {
            return Err(SummarizeError::Failed(pi_registry::no_model_selected(
                core.env.docs_dir.as_deref(),
            )));
        }
        let settings = core
            .compaction_settings(&model)
            .map_err(SummarizeError::Failed)?;
        let Some(prep) = core.prepare(settings) else {
            let reason = compaction::nothing_to_compact_reason(&lock(&core.session));
            return Err(SummarizeError::Failed(reason.to_string()));
        };
        core.summarize_and_record(
            &model,
            &prep,
            custom_instructions,
            CompactionReason::Manual,
            cancel,
        )
        .await
    }

    /// `contextUsage` of `get_session_stats`.
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let model = self.agent.with_state(|s| s.model.clone());
        compaction::context_usage(&lock(&self.core.session), &model)
    }
}

impl Core {
    /// A failed compaction: `compaction_end` for the client, then the extensions'
    /// `session_compact_failed`.
    async fn emit_compaction_failed(
        &self,
        reason: CompactionReason,
        aborted: bool,
        error_message: Option<String>,
    ) {
        self.emit(SessionEvent::CompactionEnd {
            reason,
            result: None,
            aborted,
            will_retry: false,
            error_message: error_message.clone(),
        })
        .await;
        if self.ext.handles("session_compact_failed") {
            let from_extension = lock(&self.run).compaction_from_extension;
            let mut payload = serde_json::json!({ "reason": reason });
            if let Some(m) = error_message {
                payload["errorMessage"] = serde_json::json!(m);
            }
            payload["aborted"] = serde_json::json!(aborted);
            payload["willRetry"] = serde_json::json!(false);
            payload["fromExtension"] = serde_json::json!(from_extension);
            self.ext_emit("session_compact_failed", payload).await;
        }
    }
}

impl Core {
    /// A summary of the branch `entries` (tree navigation), with the session's model, retry
    /// settings and `branchSummary.reserveTokens`.
    pub(crate) async fn summarize_branch(
        &self,
        entries: &[pi_protocol::session_entry::SessionEntry],
        custom_instructions: Option<&str>,
        replace_instructions: bool,
        cancel: &CancellationToken,
    ) -> Result<
        (
            String,
            Option<pi_protocol::usage::Usage>,
            pi_protocol::results::CompactionDetails,
        ),
        SummarizeError,
    > {
        let model = self
            .current_model()
            .ok_or_else(|| SummarizeError::Failed("No model available for summarization".into()))?;
        let (model, thinking_level) = self
            .summary_model(model)
            .await
            .map_err(SummarizeError::Failed)?;
        let reserve = self.settings().branch_summary.reserve_tokens as u64;
        let window = if model.context_window > 0 {
            model.context_window
        } else {
            128_000
        };
        let (messages, files) =
            crate::compaction::branch::prepare(entries, window.saturating_sub(reserve));
        let api_key = self
            .summarization_api_key(&model)
            .await
            .map_err(SummarizeError::Failed)?;
        let notices = RetryEvents {
            core: self,
            reason: None,
        };
        let summarizer = Summarizer {
            stream: self.ext.stream_fn(),
            model,
            api_key,
            thinking_level,
            retry: self.retry_policy(),
            transport: self.transport_settings(),
            cancel: cancel.clone(),
            notices: &notices,
        };
        summarizer
            .branch(&messages, &files, custom_instructions, replace_instructions)
            .await
    }
}

impl Core {
    /// The model a summary is made with, and its thinking level: the session's, or under a
    /// virtual model the one its router names for a request outside the agent loop
    /// (`reason: "direct"`); summaries size their input and output from the model they get.
    async fn summary_model(&self, model: Model) -> Result<(Model, ThinkingLevel), String> {
        let level = self
            .agent()
            .map_or(ThinkingLevel::Off, |a| a.with_state(|s| s.thinking_level));
        if !pi_registry::is_virtual(&model) {
            return Ok((model, level));
        }
        let messages = self.agent().map(|a| a.messages()).unwrap_or_default();
        let reasoning = (level != ThinkingLevel::Off).then_some(level);
        let (routed, reasoning) = self
            .route_virtual_direct(&model, reasoning, &messages)
            .await?;
        Ok((routed, reasoning.unwrap_or(ThinkingLevel::Off)))
    }
}
