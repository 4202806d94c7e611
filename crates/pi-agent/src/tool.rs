//! What the loop needs from a tool.

use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How the calls of one assistant message run when this tool is among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// Prepared in call order, then run concurrently (Pi's default).
    #[default]
    Parallel,
    /// Forces the whole batch to run one call at a time.
    Sequential,
}

/// A failed execution. Its message becomes the error result's only text block, exactly as Pi
/// turns a thrown `Error` into `{"content":[{"type":"text","text":<message>}],"details":{}}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

/// Receives partial results while a tool runs (`tool_execution_update`); each call replaces the
/// previous snapshot. Calls after the tool finished are ignored by the loop.
pub type ToolUpdateSink = Arc<dyn Fn(AgentToolResult) + Send + Sync>;

/// One call of a tool, with validated arguments.
pub struct ToolInvocation {
    pub tool_call_id: String,
    /// Arguments after coercion and validation against the tool's schema.
    pub args: Map<String, Value>,
    /// Fires on abort; the tool must stop promptly (and kill any process it started).
    pub cancel: CancellationToken,
    pub updates: ToolUpdateSink,
}

pub type ToolFuture = Pin<Box<dyn Future<Output = Result<AgentToolResult, ToolError>> + Send>>;

/// The outcome of [`AgentTool::prepare_arguments`]: the arguments to validate, or the error
/// text of the call.
pub type PrepareFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send>>;

/// A tool the model can call.
pub trait AgentTool: Send + Sync {
    /// Name, description and JSON Schema of the parameters, as sent to the model.
    fn declaration(&self) -> &Tool;

    fn name(&self) -> &str {
        &self.declaration().name
    }

    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }

    /// Runs the call. A result with `is_error: Some(true)` is an error result that still carries
    /// the tool's own content and details (e.g. bash's non-zero exit).
    fn execute(&self, invocation: ToolInvocation) -> ToolFuture;

    /// Rewrites the raw arguments before they are validated (Pi's `prepareArguments`, e.g. to
    /// accept an older argument shape). `None` when the tool has no such step.
    fn prepare_arguments(&self, _args: Value) -> Option<PrepareFuture> {
        None
    }
}
