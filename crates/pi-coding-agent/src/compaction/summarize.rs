//! Asking the model for the summaries (Pi's `compact`, `generateSummary`,
//! `completeSummarization`): one history summary, plus a turn-prefix summary for a split turn,
//! each a standalone request without tools, retried on transient errors.

use super::Preparation;
use super::prompt::{SYSTEM_PROMPT, history_prompt, turn_prefix_prompt};
use super::serialize::serialize_conversation;
use pi_agent::{BoxFuture, StreamFn};
use pi_ai::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{AssistantBlock, StringOrBlocks, TextContent, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, SystemMessage, UserMessage};
use pi_protocol::model::Model;
use pi_protocol::record::Rest;
use pi_protocol::results::{CompactionDetails, CompactionResult};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::{StopReason, Usage, UsageCost};
use tokio_util::sync::CancellationToken;

/// The agent retry policy, as summarization uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub enabled: bool,
    pub max_retries: u64,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

/// What the retry loop reports (`summarization_retry_*` events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryNotice {
    Scheduled {
        attempt: u64,
        max_attempts: u64,
        delay_ms: u64,
        error_message: String,
    },
    /// The backoff is over; the next attempt starts.
    AttemptStart,
    /// The last attempt after at least one retry ended (whatever the outcome).
    Finished,
}

/// Receives [`RetryNotice`]s; the runtime turns them into events.
pub trait RetryNotices: Send + Sync {
    fn notify<'a>(&'a self, notice: RetryNotice) -> BoxFuture<'a>;
}

/// Everything one summarization call needs besides the prompt.
pub struct Summarizer<'a> {
    pub stream: StreamFn,
    pub model: Model,
    pub api_key: Option<String>,
    /// The session's thinking level (used only if the model reasons).
    pub thinking_level: ThinkingLevel,
    pub retry: RetryPolicy,
    /// The provider-level settings every request takes (idle timeout, `retry.provider`).
    pub transport: pi_agent::RequestSettings,
    pub cancel: CancellationToken,
    pub notices: &'a dyn RetryNotices,
}

/// Why a compaction did not produce a result. `Display` is the error the client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummarizeError {
    Cancelled,
    Failed(String),
}

impl std::fmt::Display for SummarizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SummarizeError::Cancelled => f.write_str("Compaction cancelled"),
            SummarizeError::Failed(m) => f.write_str(m),
        }
    }
}

/// A result without `estimatedTokensAfter` (known only once the entry is appended).
pub fn generated_result(
    summary: String,
    usage: Usage,
    prep: &Preparation,
    details: &CompactionDetails,
) -> CompactionResult {
    CompactionResult {
        summary,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: prep.tokens_before,
        estimated_tokens_after: None,
        usage: Some(usage),
        // Two string lists always convert.
        details: serde_json::to_value(details).ok(),
    }
}

impl Summarizer<'_> {
    /// Summarizes what `prep` selected; the summary ends with the file lists.
    pub async fn compact(
        &self,
        prep: &Preparation,
        custom_instructions: Option<&str>,
    ) -> Result<CompactionResult, SummarizeError> {
        let focus = custom_instructions;
        let (mut summary, usage) = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            let history = if prep.messages_to_summarize.is_empty() {
                None
            } else {
                Some(self.history(prep, focus).await?)
            };
            let prefix = self
                .summarize(
                    turn_prefix_prompt(&serialize_conversation(&prep.turn_prefix_messages), focus),
                    "Turn prefix summarization",
                )
                .await?;
            let history_text = match &history {
                Some((text, _)) => text.clone(),
                None => prep
                    .previous_summary
                    .clone()
                    .unwrap_or_else(|| "No prior history.".to_string()),
            };
            let usage = match history {
                Some((_, u)) => combine_usage(&u, &prefix.1),
                None => prefix.1,
            };
            (
                format!(
                    "{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{}",
                    prefix.0
                ),
                usage,
            )
        } else {
            self.history(prep, focus).await?
        };
        let lists = prep.file_ops.lists();
        summary.push_str(&super::files::summary_suffix(&lists));
        Ok(generated_result(summary, usage, prep, &lists))
    }

    /// A summary of a branch the session leaves (Pi's `generateBranchSummary`): the stored
    /// text (Pi's opening lines, the answer, the file lists), its usage and the lists.
    pub async fn branch(
        &self,
        messages: &[AgentMessage],
        files: &super::files::FileOps,
        custom_instructions: Option<&str>,
        replace_instructions: bool,
    ) -> Result<(String, Option<Usage>, CompactionDetails), SummarizeError> {
        if messages.is_empty() {
            return Ok((
                "No content to summarize".into(),
                None,
                CompactionDetails::default(),
            ));
        }
        let prompt = super::branch::prompt(
            &serialize_conversation(messages),
            custom_instructions,
            replace_instructions,
        );
        let (text, usage) = self.summarize(prompt, "Branch summarization").await?;
        let lists = files.lists();
        let summary = format!(
            "{}{text}{}",
            super::branch::SUMMARY_PREAMBLE,
            super::files::summary_suffix(&lists)
        );
        Ok((summary, Some(usage), lists))
    }

    async fn history(
        &self,
        prep: &Preparation,
        focus: Option<&str>,
    ) -> Result<(String, Usage), SummarizeError> {
        let conversation = serialize_conversation(&prep.messages_to_summarize);
        self.summarize(
            history_prompt(&conversation, prep.previous_summary.as_deref(), focus),
            "Summarization",
        )
        .await
    }

    /// One summary: the answer's text blocks joined by newlines, and its usage.
    async fn summarize(
        &self,
        prompt: String,
        label: &str,
    ) -> Result<(String, Usage), SummarizeError> {
        if self.cancel.is_cancelled() {
            return Err(SummarizeError::Cancelled);
        }
        let response = self.complete_with_retry(prompt).await;
        if self.cancel.is_cancelled() || response.stop_reason == StopReason::Aborted {
            return Err(SummarizeError::Cancelled);
        }
        if let Some(failure) = failure(&response, label) {
            return Err(SummarizeError::Failed(failure));
        }
        if response
            .content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolCall(_)))
        {
            return Err(SummarizeError::Failed(format!(
                "{label} attempted to call a tool"
            )));
        }
        let text: Vec<&str> = response
            .content
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        Ok((text.join("\n"), *response.usage))
    }

    /// Pi's `retryAssistantCall`: retries retryable errors with the agent's backoff.
    async fn complete_with_retry(&self, prompt: String) -> AssistantMessage {
        let max_attempts = if self.retry.enabled {
            self.retry.max_retries
        } else {
            0
        };
        let mut attempt = 0;
        loop {
            let response = self.complete(&prompt).await;
            let retryable = response.stop_reason == StopReason::Error
                && attempt < max_attempts
                && pi_ai::errors::is_retryable(&response);
            if !retryable {
                if attempt > 0 {
                    self.notices.notify(RetryNotice::Finished).await;
                }
                return response;
            }
            attempt += 1;
            let delay_ms = pi_ai::errors::retry_delay_ms(
                self.retry.base_delay_ms,
                self.retry.max_delay_ms,
                attempt as u32,
            );
            self.notices
                .notify(RetryNotice::Scheduled {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message: response
                        .error_message
                        .clone()
                        .filter(|m| !m.is_empty())
                        .unwrap_or_else(|| "Unknown error".into()),
                })
                .await;
            let slept = tokio::select! {
                _ = self.cancel.cancelled() => false,
                _ = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => true,
            };
            if !slept {
                self.notices.notify(RetryNotice::Finished).await;
                let mut aborted = response;
                aborted.stop_reason = StopReason::Aborted;
                aborted.error_message = None;
                return aborted;
            }
            self.notices.notify(RetryNotice::AttemptStart).await;
        }
    }

    /// One request: a fixed system prompt and one user message, no tools, no prompt caching,
    /// a fresh session id.
    async fn complete(&self, prompt: &str) -> AssistantMessage {
        let system = SystemMessage {
            content: StringOrBlocks::Text(SYSTEM_PROMPT.to_string()),
            sections: None,
            tools_added: None,
            tools_removed: None,
            timestamp: 0,
            rest: Rest::default(),
        };
        let user = UserMessage::new(
            StringOrBlocks::Blocks(vec![UserBlock::Text(TextContent::new(prompt))]),
            pi_js::now_ms(),
        );
        let reasoning = (self.model.reasoning && self.thinking_level != ThinkingLevel::Off)
            .then_some(self.thinking_level);
        let options = StreamOptions {
            idle_timeout: self.transport.idle_timeout,
            max_retries: self.transport.max_retries,
            max_retry_delay: self.transport.max_retry_delay,
            api_key: self.api_key.clone(),
            reasoning,
            session_id: Some(pi_session::ids::uuid_v7()),
            cancel: self.cancel.child_token(),
            cache_retention: Some(CacheRetention::None),
            ..StreamOptions::default()
        };
        let context =
            LlmContext::from_messages(vec![AgentMessage::System(system), AgentMessage::User(user)]);
        let mut stream = (self.stream)(&self.model, context, options);
        loop {
            match stream.next().await {
                Some(StreamEvent::Done { message } | StreamEvent::Error { message }) => {
                    return message;
                }
                Some(_) => {}
                None => {
                    let mut m = AssistantMessage::new(
                        &self.model.api,
                        &self.model.provider,
                        &self.model.id,
                        StopReason::Error,
                        pi_js::now_ms(),
                    );
                    m.error_message = Some("The response stream ended unexpectedly".into());
                    return m;
                }
            }
        }
    }
}

/// Pi's `getSummarizationFailure`: an error, or a summary cut off by the token cap.
fn failure(response: &AssistantMessage, label: &str) -> Option<String> {
    match response.stop_reason {
        StopReason::Error => Some(format!(
            "{label} failed: {}",
            response
                .error_message
                .as_deref()
                .filter(|m| !m.is_empty())
                .unwrap_or("Unknown error")
        )),
        StopReason::Length => Some(format!(
            "{label} failed: generation hit the token cap and the summary is incomplete"
        )),
        _ => None,
    }
}

/// Key order of a summed usage: the optional splits sit before `totalTokens`.
const COMBINED_ORDER: &[&str] = &[
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "cacheWrite1h",
    "reasoning",
    "totalTokens",
    "cost",
];

/// Pi's `combineUsage`: the sum of two usages; an optional split is present when either has it.
pub fn combine_usage(a: &Usage, b: &Usage) -> Usage {
    let opt_sum = |x: Option<u64>, y: Option<u64>| {
        (x.is_some() || y.is_some()).then(|| x.unwrap_or(0) + y.unwrap_or(0))
    };
    Usage {
        input: a.input + b.input,
        output: a.output + b.output,
        cache_read: a.cache_read + b.cache_read,
        cache_write: a.cache_write + b.cache_write,
        reasoning: opt_sum(a.reasoning, b.reasoning),
        total_tokens: a.total_tokens + b.total_tokens,
        cost: UsageCost {
            input: a.cost.input + b.cost.input,
            output: a.cost.output + b.cost.output,
            cache_read: a.cost.cache_read + b.cost.cache_read,
            cache_write: a.cost.cache_write + b.cost.cache_write,
            total: a.cost.total + b.cost.total,
            total_from_provider: Some(
                a.cost.total_from_provider == Some(true)
                    && b.cost.total_from_provider == Some(true),
            ),
            rest: Rest::default(),
        },
        cache_write_1h: opt_sum(a.cache_write_1h, b.cache_write_1h),
        rest: Rest::with_order(COMBINED_ORDER),
    }
}
