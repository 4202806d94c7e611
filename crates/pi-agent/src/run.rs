//! One low-level run: `agent_start` … `agent_end` (pi-agent-core's `runLoop`).

use crate::agent::{Agent, AgentError, TurnContext};
use crate::event::AgentEvent;
use crate::tool_exec::{execute_tool_calls, fail_truncated_calls};
use crate::transcript::{declaration, declare_tool_changes};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_js::now_ms;
use pi_protocol::SharedMessage;
use pi_protocol::content::AssistantBlock;
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use pi_protocol::usage::StopReason;
use tokio_util::sync::CancellationToken;

/// Runs are started here, next to the loop they start (the rest of `Agent` is in `agent.rs`).
impl Agent {
    /// Starts a run with new messages and waits for it to end.
    pub async fn prompt(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        let cancel = self.begin_run().ok_or(AgentError::AlreadyPrompting)?;
        run(self, Some(messages), cancel.clone(), false).await;
        self.end_run();
        Ok(())
    }

    /// Continues from the current transcript (retries, queued messages after a run).
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        let last_role = self.with_state(|state| {
            if state
                .messages
                .iter()
                .all(|m| matches!(&**m, AgentMessage::System(_)))
            {
                None
            } else {
                state.messages.last().map(|m| m.role().to_string())
            }
        });
        let Some(last_role) = last_role else {
            return Err(if self.is_running() {
                AgentError::AlreadyContinuing
            } else {
                AgentError::NothingToContinue
            });
        };
        if last_role == "assistant" {
            let steering = self.drain_steering();
            if !steering.is_empty() {
                let cancel = self.begin_run().ok_or(AgentError::AlreadyContinuing)?;
                run(self, Some(steering), cancel, true).await;
                self.end_run();
                return Ok(());
            }
            let follow_ups = self.drain_follow_up();
            if !follow_ups.is_empty() {
                let cancel = self.begin_run().ok_or(AgentError::AlreadyContinuing)?;
                run(self, Some(follow_ups), cancel, false).await;
                self.end_run();
                return Ok(());
            }
            return Err(AgentError::ContinueFromAssistant);
        }
        let cancel = self.begin_run().ok_or(AgentError::AlreadyContinuing)?;
        run(self, None, cancel, false).await;
        self.end_run();
        Ok(())
    }
}

/// What a run works on; replaced wholesale by `prepare_next_turn` (e.g. after compaction).
pub(crate) struct RunState {
    pub context: Vec<SharedMessage>,
    pub model: Model,
    /// `None` means thinking off.
    pub reasoning: Option<ThinkingLevel>,
    /// A request could not be prepared (a virtual model's routing failed): the run ends as
    /// one that threw, its `agent_end` naming only the failure message.
    pub threw: bool,
}

/// Runs the loop. `prompts` are new messages to start with; `None` continues from the context.
/// `skip_first_steering_poll` is set when the prompts themselves are drained steering messages.
pub(crate) async fn run(
    agent: &Agent,
    prompts: Option<Vec<AgentMessage>>,
    cancel: CancellationToken,
    skip_first_steering_poll: bool,
) {
    let (context, model, level) =
        agent.with_state(|s| (s.messages.clone(), s.model.clone(), s.thinking_level));
    let mut st = RunState {
        context,
        model,
        reasoning: (level != ThinkingLevel::Off).then_some(level),
        threw: false,
    };
    let mut new_messages: Vec<SharedMessage> = Vec::new();
    agent.emit(AgentEvent::AgentStart).await;
    agent.emit(AgentEvent::TurnStart).await;
    if let Some(prompts) = prompts {
        deliver(agent, &mut st, &mut new_messages, prompts).await;
    }
    run_loop(
        agent,
        &mut st,
        &mut new_messages,
        &cancel,
        skip_first_steering_poll,
    )
    .await;
    if st.threw {
        new_messages = new_messages.split_off(new_messages.len().saturating_sub(1));
    }
    agent
        .emit(AgentEvent::AgentEnd {
            messages: new_messages,
        })
        .await;
}

/// Emits start and end of each new message (with the tool declarations they need first) and
/// adds them to the run's context.
async fn deliver(
    agent: &Agent,
    st: &mut RunState,
    new_messages: &mut Vec<SharedMessage>,
    messages: Vec<AgentMessage>,
) {
    let declared = declare_tool_changes(&st.context, messages, &tool_declarations(agent), now_ms());
    for message in declared {
        let message = SharedMessage::new(message);
        agent
            .emit(AgentEvent::MessageStart {
                message: message.clone(),
            })
            .await;
        let ended = agent.end_message(message).await;
        new_messages.push(ended.clone());
        st.context.push(ended);
    }
}

fn tool_declarations(agent: &Agent) -> Vec<Tool> {
    agent.with_state(|s| {
        s.tools
            .iter()
            .map(|t| declaration(t.declaration()))
            .collect()
    })
}

async fn run_loop(
    agent: &Agent,
    st: &mut RunState,
    new_messages: &mut Vec<SharedMessage>,
    cancel: &CancellationToken,
    skip_first_steering_poll: bool,
) {
    let mut last_turn: Option<(SharedMessage, Vec<SharedMessage>)> = None;
    let mut pending = if skip_first_steering_poll {
        Vec::new()
    } else {
        agent.drain_steering()
    };
    loop {
        let mut more_tool_calls = true;
        while more_tool_calls || !pending.is_empty() {
            let mut prepared = Vec::new();
            if let Some((message, tool_results)) = &last_turn {
                let turn = TurnContext {
                    message: assistant(message),
                    tool_results,
                    context: &st.context,
                };
                if let Some(update) = agent.config.hooks.prepare_next_turn(&turn).await {
                    if let Some(context) = update.context {
                        st.context = context;
                    }
                    if let Some(model) = update.model {
                        st.model = model;
                    }
                    if let Some(level) = update.thinking_level {
                        st.reasoning = (level != ThinkingLevel::Off).then_some(level);
                    }
                    prepared = update.messages;
                }
                // Preparation may take long (compaction): pick up steering queued meanwhile,
                // unless a poll already returned something (one-at-a-time must stay one).
                if pending.is_empty() {
                    pending = agent.drain_steering();
                }
                agent.emit(AgentEvent::TurnStart).await;
            }
            st.context.extend(agent.take_context_additions());
            prepared.append(&mut pending);
            deliver(agent, st, new_messages, prepared).await;

            let shared = stream_assistant_response(agent, st, cancel).await;
            new_messages.push(shared.clone());
            let message = assistant(&shared);
            if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
                agent
                    .emit(AgentEvent::TurnEnd {
                        message: shared,
                        tool_results: Vec::new(),
                    })
                    .await;
                return;
            }

            let has_tool_calls = message
                .content
                .iter()
                .any(|b| matches!(b, AssistantBlock::ToolCall(_)));
            let mut tool_results = Vec::new();
            more_tool_calls = false;
            if has_tool_calls {
                // A `length` stop may have cut the arguments short: run none of the calls.
                let batch = if message.stop_reason == StopReason::Length {
                    fail_truncated_calls(agent, message).await
                } else {
                    execute_tool_calls(agent, message, cancel).await
                };
                more_tool_calls = !batch.terminate;
                st.context.extend(batch.messages.iter().cloned());
                new_messages.extend(batch.messages.iter().cloned());
                tool_results = batch.messages;
            }
            agent
                .emit(AgentEvent::TurnEnd {
                    message: shared.clone(),
                    tool_results: tool_results.clone(),
                })
                .await;
            last_turn = Some((shared, tool_results));
            pending = agent.drain_steering();
        }
        // The run would stop here; follow-ups keep it going.
        let follow_ups = agent.drain_follow_up();
        if follow_ups.is_empty() {
            break;
        }
        pending = follow_ups;
    }
}

/// The assistant message of a turn ([`stream_assistant_response`] returns nothing else).
fn assistant(message: &SharedMessage) -> &AssistantMessage {
    match &**message {
        AgentMessage::Assistant(a) => a,
        _ => unreachable!("a turn's message is an assistant message"),
    }
}

/// Sends the transcript to the model and relays its stream; returns the final message, which
/// is also appended to the run's context (the same message, unless a `message_end` hook
/// replaced it with one of a shape the types do not know).
async fn stream_assistant_response(
    agent: &Agent,
    st: &mut RunState,
    cancel: &CancellationToken,
) -> SharedMessage {
    let context = agent
        .config
        .hooks
        .transform_context(st.context.clone())
        .await;
    let llm_messages = (agent.config.convert_to_llm)(&context);
    // A virtual model is routed for this request only; the selection stays in the state.
    let routed = agent
        .config
        .hooks
        .route_request(&st.model, st.reasoning, &context)
        .await;
    let (model, reasoning, route_error) = match routed {
        None => (st.model.clone(), st.reasoning, None),
        Some(Ok((model, reasoning))) => (model, reasoning, None),
        Some(Err(text)) => (st.model.clone(), st.reasoning, Some(text)),
    };
    st.threw = route_error.is_some();
    let mut attempt = 0;
    let (mut final_message, started) = loop {
        attempt += 1;
        let (message, started) = match &route_error {
            Some(text) => (route_failure(&model, text.clone()), false),
            None => request_once(agent, &model, reasoning, cancel, llm_messages.clone()).await,
        };
        // A subscription token the provider rejected before anything streamed is refreshed
        // once and the request made again.
        let rejected = attempt == 1
            && !started
            && message.stop_reason == StopReason::Error
            && !cancel.is_cancelled()
            && agent
                .config
                .hooks
                .credentials_rejected(&model, &message)
                .await;
        if !rejected {
            break (message, started);
        }
    };
    let requested = reasoning.unwrap_or(ThinkingLevel::Off);
    // Pi records the requested level on the message, whichever provider answered (not on the
    // failure of a request that could not be prepared).
    if route_error.is_none() {
        final_message.thinking_level = Some(requested);
    }
    let final_message = SharedMessage::new(AgentMessage::Assistant(final_message));
    if !started {
        agent
            .emit(AgentEvent::MessageStart {
                message: final_message.clone(),
            })
            .await;
    }
    let ended = agent.end_message(final_message.clone()).await;
    st.context.push(ended.clone());
    match &*ended {
        AgentMessage::Assistant(_) => ended,
        _ => final_message,
    }
}

/// A routing failure: the run's failure message (an empty text block, the error; no duration),
/// as the agent loop writes it when preparing a request throws.
fn route_failure(model: &Model, text: String) -> AssistantMessage {
    let mut m = AssistantMessage::new(
        &model.api,
        &model.provider,
        &model.id,
        StopReason::Error,
        now_ms(),
    );
    m.content = vec![pi_protocol::content::AssistantBlock::Text(
        pi_protocol::content::TextContent::new(""),
    )];
    m.error_message = Some(text);
    m.rest.set_order(pi_protocol::record::KeyOrder::Recorded(
        std::sync::Arc::from(
            AssistantMessage::FAILURE_ORDER
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>(),
        ),
    ));
    m
}

/// One request to `model`: resolves the credential, streams the response (emitting
/// `message_start` and updates once it starts); the final message and whether it started.
async fn request_once(
    agent: &Agent,
    model: &Model,
    reasoning: Option<ThinkingLevel>,
    cancel: &CancellationToken,
    llm_messages: Vec<SharedMessage>,
) -> (AssistantMessage, bool) {
    let started_at = std::time::Instant::now();
    let credentials = agent.config.hooks.request_credentials(model).await;
    let mut stream = match credentials {
        Ok(creds) => {
            let transport = agent.config.hooks.request_settings();
            let options = StreamOptions {
                idle_timeout: transport.idle_timeout,
                max_retries: transport.max_retries,
                max_retry_delay: transport.max_retry_delay,
                api_key: creds.api_key,
                headers: creds.headers,
                env: creds.env,
                reasoning,
                max_tokens: agent.config.max_tokens,
                session_id: agent.config.session_id.clone(),
                cancel: cancel.child_token(),
                hooks: agent.config.hooks.provider_hooks(),
                ..StreamOptions::default()
            };
            let request_model = match creds.base_url {
                Some(url) => {
                    let mut m = model.clone();
                    m.base_url = url;
                    m
                }
                None => model.clone(),
            };
            (agent.config.stream_fn)(
                &request_model,
                LlmContext {
                    messages: llm_messages,
                },
                options,
            )
        }
        // The credential could not be resolved (a refresh failed): the response fails before
        // anything is sent, as Pi's request setup does.
        Err(text) => pi_ai::AssistantStream::immediate(pi_ai::request::setup_error(
            model,
            text,
            started_at,
            now_ms(),
        )),
    };
    let mut started = false;
    let message = loop {
        match stream.next().await {
            Some(StreamEvent::Start { partial }) => {
                started = true;
                agent
                    .emit(AgentEvent::MessageStart {
                        message: SharedMessage::new(AgentMessage::Assistant(partial)),
                    })
                    .await;
            }
            Some(StreamEvent::Done { message }) | Some(StreamEvent::Error { message }) => {
                break message;
            }
            Some(update) => {
                if started {
                    agent
                        .emit(AgentEvent::MessageUpdate { event: update })
                        .await;
                }
            }
            None => break vanished_stream_message(model, cancel.is_cancelled()),
        }
    };
    (message, started)
}

/// A provider task that ended without a terminal event (it panicked or was dropped).
fn vanished_stream_message(model: &Model, aborted: bool) -> AssistantMessage {
    let (reason, text) = if aborted {
        (StopReason::Aborted, "Request was aborted")
    } else {
        (StopReason::Error, "Provider stream ended without a result")
    };
    let mut m = AssistantMessage::new(&model.api, &model.provider, &model.id, reason, now_ms());
    m.error_message = Some(text.to_string());
    m
}
