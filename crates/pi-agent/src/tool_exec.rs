//! Executing the tool calls of one assistant message (pi-agent-core's `executeToolCalls`).
//!
//! Order rules (Pi's): `tool_execution_start` in call order while calls are prepared;
//! preparation failures end at once; prepared calls then run concurrently (or one by one in
//! sequential mode) and each `tool_execution_end` is emitted when its call finishes; the
//! tool-result messages follow in call order once all are done.

use crate::agent::{Agent, ToolCallGate};
use crate::event::AgentEvent;
use crate::join::join_all;
use crate::nested::{NESTED, NestedRunner, Relay};
use crate::tool::{AgentTool, ExecutionMode, ToolInvocation, ToolUpdateSink};
use pi_js::now_ms;
use pi_protocol::SharedMessage;
use pi_protocol::content::{AssistantBlock, TextContent, ToolCall, UserBlock};
use pi_protocol::message::{AssistantMessage, ToolResultMessage};
use pi_protocol::tool::AgentToolResult;
use pi_schema::validate_tool_arguments;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(crate) struct Batch {
    /// The tool-result messages, each shared with the transcript and its events.
    pub messages: Vec<SharedMessage>,
    /// Every result asked the run to stop after this batch.
    pub terminate: bool,
}

struct Finalized {
    call: ToolCall,
    result: AgentToolResult,
    is_error: bool,
    duration_ms: Option<u64>,
    /// Calls the tool made to other tools (codemode scripts).
    nested: Vec<pi_protocol::tool::NestedToolCallRecord>,
}

// Short-lived, one per tool call: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Prepared {
    Immediate(Finalized),
    Ready {
        call: ToolCall,
        tool: Arc<dyn AgentTool>,
        args: Map<String, Value>,
    },
}

fn error_result(text: impl Into<String>) -> AgentToolResult {
    let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
    r.details = Some(Value::Object(Map::new()));
    r
}

fn immediate(call: &ToolCall, text: impl Into<String>) -> Prepared {
    Prepared::Immediate(Finalized {
        call: call.clone(),
        result: error_result(text),
        is_error: true,
        duration_ms: None,
        nested: Vec::new(),
    })
}

fn tool_calls(message: &AssistantMessage) -> Vec<ToolCall> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

async fn emit_start(agent: &Agent, call: &ToolCall) {
    agent
        .emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Value::Object(call.arguments.clone()),
            parent_tool_call_id: None,
        })
        .await;
}

async fn emit_end(agent: &Agent, f: &Finalized) {
    agent
        .emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: f.call.id.clone(),
            tool_name: f.call.name.clone(),
            result: f.result.clone(),
            is_error: f.is_error,
            duration_ms: f.duration_ms,
            parent_tool_call_id: None,
        })
        .await;
}

/// Pi writes `nestedCalls` after the other keys of a tool result.
const NESTED_RESULT_ORDER: &[&str] = &[
    "role",
    "toolCallId",
    "toolName",
    "content",
    "details",
    "usage",
    "isError",
    "durationMs",
    "timestamp",
    "nestedCalls",
];

fn result_message(f: Finalized) -> ToolResultMessage {
    let rest = if f.nested.is_empty() {
        Default::default()
    } else {
        pi_protocol::record::Rest::with_order(NESTED_RESULT_ORDER)
    };
    ToolResultMessage {
        tool_call_id: f.call.id,
        tool_name: f.call.name,
        content: f.result.content,
        details: f.result.details,
        usage: f.result.usage.map(Box::new),
        nested_calls: (!f.nested.is_empty()).then(|| pi_protocol::tool::NestedToolCalls {
            complete: f
                .nested
                .iter()
                .all(|c| c.status != pi_protocol::tool::NestedCallStatus::Unfinished),
            calls: f.nested,
            rest: Default::default(),
        }),
        is_error: f.is_error,
        duration_ms: f.duration_ms,
        timestamp: now_ms(),
        rest,
    }
}

/// Emits the result message's start and end; returns the message as finally ended (an
/// extension may have replaced it), shared: a result is often long and is never copied.
async fn emit_result_message(agent: &Agent, message: ToolResultMessage) -> SharedMessage {
    let started = SharedMessage::new(pi_protocol::message::AgentMessage::ToolResult(message));
    agent
        .emit(AgentEvent::MessageStart {
            message: started.clone(),
        })
        .await;
    let ended = agent.end_message(started.clone()).await;
    // The turn reports typed tool results: a replacement of a shape the types do not know
    // stays in the transcript only.
    match &*ended {
        pi_protocol::message::AgentMessage::ToolResult(_) => ended,
        _ => started,
    }
}

/// Pi's `prepareToolCall`: abort check, lookup, the tool's own argument preparation, schema
/// validation, then the `before_tool_call` hook.
async fn prepare(agent: &Agent, call: &ToolCall, cancel: &CancellationToken) -> Prepared {
    if cancel.is_cancelled() {
        return immediate(call, "Operation aborted");
    }
    let tool = agent.with_state(|s| s.tools.iter().find(|t| t.name() == call.name).cloned());
    let Some(tool) = tool else {
        return immediate(call, format!("Tool {} not found", call.name));
    };
    let prepared_call;
    let call_to_validate = match tool.prepare_arguments(Value::Object(call.arguments.clone())) {
        None => call,
        Some(future) => match future.await {
            Ok(Value::Object(arguments)) => {
                prepared_call = ToolCall {
                    arguments,
                    ..call.clone()
                };
                &prepared_call
            }
            Ok(_) => return immediate(call, "Tool arguments must be an object"),
            Err(e) => return immediate(call, e.0),
        },
    };
    let args = match validate_tool_arguments(
        tool.declaration(),
        &call_to_validate.arguments,
        call_to_validate.arguments_error.as_deref(),
    ) {
        Ok(args) => args,
        Err(text) => return immediate(call, text),
    };
    let gate = agent.config.hooks.before_tool_call(call, args).await;
    if cancel.is_cancelled() {
        return immediate(call, "Operation aborted");
    }
    match gate {
        Ok(ToolCallGate::Run(args)) => Prepared::Ready {
            call: call.clone(),
            tool,
            args,
        },
        Ok(ToolCallGate::Block { reason, terminate }) => {
            let mut result = error_result(
                reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "Tool execution was blocked".into()),
            );
            if terminate {
                result.terminate = Some(true);
            }
            Prepared::Immediate(Finalized {
                call: call.clone(),
                result,
                is_error: true,
                duration_ms: None,
                nested: Vec::new(),
            })
        }
        Err(text) => immediate(call, text),
    }
}

/// Runs a prepared call, relaying its partial results, and measures its duration.
async fn execute(
    agent: &Agent,
    call: ToolCall,
    tool: Arc<dyn AgentTool>,
    args: Map<String, Value>,
    cancel: &CancellationToken,
) -> Finalized {
    let (tx, mut rx) = mpsc::unbounded_channel::<Relay>();
    let accepting = Arc::new(AtomicBool::new(true));
    let sink_accepting = Arc::clone(&accepting);
    let update_tx = tx.clone();
    let updates: ToolUpdateSink = Arc::new(move |partial| {
        if sink_accepting.load(Ordering::SeqCst) {
            let _ = update_tx.send(Relay::Update(partial));
        }
    });
    let started = Instant::now();
    let args_for_hook = args.clone();
    // Nested calls report through the same channel as updates, so their events keep the
    // order in which the tool produced them.
    let nested = NestedRunner::new(
        &call.id,
        Arc::clone(&agent.config.hooks),
        tx,
        agent.config.tool_execution == ExecutionMode::Sequential,
        Arc::clone(&agent.nested_queue),
    );
    let fut = NESTED.scope(
        nested.clone(),
        tool.execute(ToolInvocation {
            tool_call_id: call.id.clone(),
            args,
            cancel: cancel.child_token(),
            updates,
        }),
    );
    tokio::pin!(fut);
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut fut => break outcome,
            Some(item) = rx.recv() => relay(agent, &call, item).await,
        }
    };
    let duration_ms = (started.elapsed().as_secs_f64() * 1000.0).round() as u64;
    // Updates sent after the tool finished are dropped; those sent before still go out.
    accepting.store(false, Ordering::SeqCst);
    while let Ok(item) = rx.try_recv() {
        relay(agent, &call, item).await;
    }
    let (result, is_error) = match outcome {
        Ok(result) => {
            let is_error = result.is_error == Some(true);
            (result, is_error)
        }
        Err(e) => (error_result(e.0), true),
    };
    let (result, is_error) = agent
        .config
        .hooks
        .after_tool_call(&call, &args_for_hook, result, is_error)
        .await;
    Finalized {
        call,
        result,
        is_error,
        duration_ms: Some(duration_ms),
        nested: nested.records(),
    }
}

async fn relay(agent: &Agent, call: &ToolCall, item: Relay) {
    match item {
        Relay::Update(partial) => emit_update(agent, call, partial).await,
        Relay::Event(event) => agent.emit(event).await,
    }
}

async fn emit_update(agent: &Agent, call: &ToolCall, partial: AgentToolResult) {
    agent
        .emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Value::Object(call.arguments.clone()),
            partial_result: partial,
            parent_tool_call_id: None,
        })
        .await;
}

pub(crate) async fn execute_tool_calls(
    agent: &Agent,
    message: &AssistantMessage,
    cancel: &CancellationToken,
) -> Batch {
    let calls = tool_calls(message);
    let sequential = agent.config.tool_execution == ExecutionMode::Sequential
        || agent.with_state(|s| {
            calls.iter().any(|c| {
                s.tools
                    .iter()
                    .any(|t| t.name() == c.name && t.execution_mode() == ExecutionMode::Sequential)
            })
        });
    if sequential {
        return execute_sequential(agent, &calls, cancel).await;
    }
    let mut slots: Vec<Prepared> = Vec::new();
    for call in &calls {
        emit_start(agent, call).await;
        let prepared = prepare(agent, call, cancel).await;
        if let Prepared::Immediate(f) = &prepared {
            emit_end(agent, f).await;
        }
        slots.push(prepared);
    }
    let runs = slots.into_iter().map(|p| async move {
        match p {
            Prepared::Immediate(f) => f,
            Prepared::Ready { call, tool, args } => {
                let f = if cancel.is_cancelled() {
                    Finalized {
                        call,
                        result: error_result("Operation aborted"),
                        is_error: true,
                        duration_ms: None,
                        nested: Vec::new(),
                    }
                } else {
                    execute(agent, call, tool, args, cancel).await
                };
                emit_end(agent, &f).await;
                f
            }
        }
    });
    let finalized = join_all(runs.collect()).await;
    let terminate =
        !finalized.is_empty() && finalized.iter().all(|f| f.result.terminate == Some(true));
    let mut messages = Vec::new();
    for f in finalized {
        messages.push(emit_result_message(agent, result_message(f)).await);
    }
    Batch {
        messages,
        terminate,
    }
}

/// One call at a time: start, update*, end and the result message, call by call.
async fn execute_sequential(
    agent: &Agent,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> Batch {
    let mut messages = Vec::new();
    let mut terminates = Vec::new();
    for call in calls {
        emit_start(agent, call).await;
        let f = match prepare(agent, call, cancel).await {
            Prepared::Immediate(f) => f,
            Prepared::Ready { call, tool, args } => execute(agent, call, tool, args, cancel).await,
        };
        emit_end(agent, &f).await;
        terminates.push(f.result.terminate == Some(true));
        messages.push(emit_result_message(agent, result_message(f)).await);
    }
    let terminate = !terminates.is_empty() && terminates.iter().all(|t| *t);
    Batch {
        messages,
        terminate,
    }
}

/// Every call of a message cut off by the output token limit fails without running.
pub(crate) async fn fail_truncated_calls(agent: &Agent, message: &AssistantMessage) -> Batch {
    let mut messages = Vec::new();
    for call in tool_calls(message) {
        emit_start(agent, &call).await;
        let text = format!(
            "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
            call.name
        );
        let f = Finalized {
            call,
            result: error_result(text),
            is_error: true,
            duration_ms: None,
            nested: Vec::new(),
        };
        emit_end(agent, &f).await;
        messages.push(emit_result_message(agent, result_message(f)).await);
    }
    Batch {
        messages,
        terminate: false,
    }
}
