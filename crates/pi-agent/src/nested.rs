//! Calls a tool makes to other tools (codemode scripts): each runs through the same pipeline as
//! a call of the model — argument preparation, validation, the `before_tool_call` and
//! `after_tool_call` hooks — and is reported as `tool_execution_*` events with the calling
//! tool's id as `parentToolCallId` and recorded for the result message's `nestedCalls`.
//!
//! A tool reaches the runner with [`NestedRunner::current`] while it executes; the loop
//! installs one around every call.

use crate::agent::{RunHooks, ToolCallGate};
use crate::event::AgentEvent;
use crate::tool::{AgentTool, ToolInvocation, ToolUpdateSink};
use pi_protocol::content::{TextContent, ToolCall, UserBlock};
use pi_protocol::record::Rest;
use pi_protocol::tool::{AgentToolResult, NestedCallStatus, NestedToolCallRecord};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    pub(crate) static NESTED: NestedRunner;
}

/// What the executing call's relay carries: its own updates and nested calls' events.
pub(crate) enum Relay {
    Update(AgentToolResult),
    Event(AgentEvent),
}

/// Key order of a `nestedCalls` record as Pi writes it.
const RECORD_ORDER: &[&str] = &[
    "id",
    "name",
    "status",
    "arguments",
    "argumentsBytes",
    "durationMs",
    "error",
];

struct Inner {
    parent: String,
    hooks: Arc<dyn RunHooks>,
    tx: mpsc::UnboundedSender<Relay>,
    count: AtomicU64,
    /// In start order; a call still running is `unfinished`.
    records: Mutex<Vec<NestedToolCallRecord>>,
    /// The agent runs tool calls one at a time (`toolExecution: "sequential"`).
    sequential: bool,
    /// Held by a nested call that must not run beside another (a sequential tool, or every
    /// tool in sequential mode); shared by every runner of the agent.
    queue: Arc<tokio::sync::Mutex<()>>,
}

/// Runs nested calls for one executing tool call.
#[derive(Clone)]
pub struct NestedRunner(Arc<Inner>);

/// How a nested call ended.
#[derive(Debug, Clone)]
pub struct NestedOutcome {
    /// `<parent id>/<n>`.
    pub id: String,
    pub result: AgentToolResult,
    pub is_error: bool,
}

fn error_result(text: impl Into<String>) -> AgentToolResult {
    let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
    r.details = Some(Value::Object(Map::new()));
    r
}

impl NestedRunner {
    pub(crate) fn new(
        parent: &str,
        hooks: Arc<dyn RunHooks>,
        tx: mpsc::UnboundedSender<Relay>,
        sequential: bool,
        queue: Arc<tokio::sync::Mutex<()>>,
    ) -> NestedRunner {
        NestedRunner(Arc::new(Inner {
            parent: parent.to_string(),
            hooks,
            tx,
            count: AtomicU64::new(0),
            records: Mutex::new(Vec::new()),
            sequential,
            queue,
        }))
    }

    /// The runner of the tool call executing on this task, if any.
    pub fn current() -> Option<NestedRunner> {
        NESTED.try_with(Clone::clone).ok()
    }

    pub(crate) fn records(&self) -> Vec<NestedToolCallRecord> {
        self.0.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.0.tx.send(Relay::Event(event));
    }

    /// Runs `tool` with `args`. `started(id)` is called right after `tool_execution_start`.
    pub async fn run(
        &self,
        tool: Arc<dyn AgentTool>,
        args: Value,
        cancel: CancellationToken,
        started: impl FnOnce(&str),
    ) -> NestedOutcome {
        let name = tool.name().to_string();
        self.run_named(&name, Some(tool), args, cancel, started)
            .await
    }

    /// Like [`NestedRunner::run`] for a tool found by name: an unknown name is a call that
    /// fails with Pi's `Tool <name> not found` (its events and record included).
    pub async fn run_named(
        &self,
        name: &str,
        tool: Option<Arc<dyn AgentTool>>,
        args: Value,
        cancel: CancellationToken,
        started: impl FnOnce(&str),
    ) -> NestedOutcome {
        let n = self.0.count.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("{}/{n}", self.0.parent);
        let name = name.to_string();
        let arguments = match &args {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let parent = Some(self.0.parent.clone());
        self.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            args: Value::Object(arguments.clone()),
            parent_tool_call_id: parent.clone(),
        });
        if let Ok(mut records) = self.0.records.lock() {
            records.push(NestedToolCallRecord {
                id: id.clone(),
                name: name.clone(),
                arguments: Some(arguments.clone()),
                arguments_bytes: None,
                status: NestedCallStatus::Unfinished,
                duration_ms: None,
                error: None,
                rest: Rest::with_order(RECORD_ORDER),
            });
        }
        started(&id);
        let begun = Instant::now();
        let exclusive = self.0.sequential
            || tool
                .as_ref()
                .is_some_and(|t| t.execution_mode() == crate::tool::ExecutionMode::Sequential);
        let _turn = if exclusive {
            Some(self.0.queue.lock().await)
        } else {
            None
        };
        let call = ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            rest: Default::default(),
        };
        // Pi reports `durationMs` only for a tool that ran (not for one that was blocked, failed
        // validation or does not exist); the record always has it.
        let (result, is_error, ran) = match tool {
            Some(tool) => self.execute(&call, tool, args, cancel).await,
            None => (error_result(format!("Tool {name} not found")), true, false),
        };
        let duration_ms = (begun.elapsed().as_secs_f64() * 1000.0).round() as u64;
        self.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            result: result.clone(),
            is_error,
            duration_ms: ran.then_some(duration_ms),
            parent_tool_call_id: parent,
        });
        let error = is_error.then(|| {
            result
                .content
                .iter()
                .filter_map(|b| match b {
                    UserBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
        if let Ok(mut records) = self.0.records.lock()
            && let Some(record) = records.iter_mut().find(|r| r.id == id)
        {
            record.status = if is_error {
                NestedCallStatus::Error
            } else {
                NestedCallStatus::Ok
            };
            record.duration_ms = Some(duration_ms);
            record.error = error.filter(|e| !e.is_empty());
        }
        NestedOutcome {
            id,
            result,
            is_error,
        }
    }

    async fn execute(
        &self,
        call: &ToolCall,
        tool: Arc<dyn AgentTool>,
        args: Value,
        cancel: CancellationToken,
    ) -> (AgentToolResult, bool, bool) {
        if cancel.is_cancelled() {
            return (error_result("Operation aborted"), true, false);
        }
        let args = match tool.prepare_arguments(args.clone()) {
            None => args,
            Some(f) => match f.await {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    return (
                        error_result("Tool arguments must be an object"),
                        true,
                        false,
                    );
                }
                Err(e) => return (error_result(e.0), true, false),
            },
        };
        let map = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let args = match pi_schema::validate_tool_arguments(tool.declaration(), &map, None) {
            Ok(a) => a,
            Err(e) => return (error_result(e), true, false),
        };
        let args = match self.0.hooks.before_tool_call(call, args).await {
            Ok(ToolCallGate::Run(a)) => a,
            Ok(ToolCallGate::Block { reason, .. }) => {
                let text = reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "Tool execution was blocked".into());
                return (error_result(text), true, false);
            }
            Err(e) => return (error_result(e), true, false),
        };
        let tx = self.0.tx.clone();
        let (id, name, parent) = (call.id.clone(), call.name.clone(), self.0.parent.clone());
        let shown = Value::Object(args.clone());
        let updates: ToolUpdateSink = Arc::new(move |partial| {
            let _ = tx.send(Relay::Event(AgentEvent::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: shown.clone(),
                partial_result: partial,
                parent_tool_call_id: Some(parent.clone()),
            }));
        });
        let outcome = tool
            .execute(ToolInvocation {
                tool_call_id: call.id.clone(),
                args: args.clone(),
                cancel,
                updates,
            })
            .await;
        let (result, is_error) = match outcome {
            Ok(r) => {
                let e = r.is_error == Some(true);
                (r, e)
            }
            Err(e) => (error_result(e.0), true),
        };
        let (result, is_error) = self
            .0
            .hooks
            .after_tool_call(call, &args, result, is_error)
            .await;
        (result, is_error, true)
    }
}
