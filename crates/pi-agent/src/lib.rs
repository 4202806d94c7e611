//! The agent loop, independent of files and the CLI: it sends the transcript to a model, runs
//! the tools the model calls, delivers queued steering and follow-up messages, and reports every
//! step as an event.

pub mod agent;
pub mod event;
mod join;
pub mod nested;
pub mod queue;
mod run;
pub mod tool;
mod tool_exec;
pub mod transcript;

pub use agent::{
    Agent, AgentConfig, AgentError, AgentListener, AgentState, BoxFuture, ConvertToLlm,
    RequestCredentials, RequestSettings, Route, RunHooks, StreamFn, ToolCallGate, TurnContext,
    TurnUpdate,
};
pub use event::AgentEvent;
pub use nested::{NestedOutcome, NestedRunner};
pub use tool::{
    AgentTool, ExecutionMode, PrepareFuture, ToolError, ToolFuture, ToolInvocation, ToolUpdateSink,
};
