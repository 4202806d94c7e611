//! A tool an extension registered, run by the agent like any other: its `execute` (and
//! `prepareArguments`) run in the host, its `onUpdate` calls become `tool_execution_update`s,
//! and an abort reaches its signal.

use super::registry::ExtTool;
use crate::runtime::Core;
use pi_agent::{AgentTool, ExecutionMode, PrepareFuture, ToolError, ToolFuture, ToolInvocation};
use pi_ext_host::HostError;
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Weak};

pub(crate) struct ExtensionTool {
    declaration: Tool,
    def: ExtTool,
    core: Weak<Core>,
}

impl ExtensionTool {
    pub fn new(def: ExtTool, core: Weak<Core>) -> ExtensionTool {
        ExtensionTool {
            declaration: Tool {
                name: def.name.clone(),
                description: def.description.clone(),
                parameters: def.parameters.clone().into(),
                // Anything but `false` or a configuration is left out of the declaration.
                constrained_sampling: def
                    .constrained_sampling
                    .clone()
                    .and_then(|v| serde_json::from_value(v).ok()),
                rest: Default::default(),
            },
            def,
            core,
        }
    }
}

fn host_failure(e: HostError) -> ToolError {
    ToolError(e.to_string())
}

impl AgentTool for ExtensionTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execution_mode(&self) -> ExecutionMode {
        match self.def.execution_mode.as_deref() {
            Some("sequential") => ExecutionMode::Sequential,
            _ => ExecutionMode::Parallel,
        }
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        let core = self.core.upgrade();
        let name = self.def.name.clone();
        Box::pin(async move {
            let core = core.ok_or_else(|| ToolError::new("the session has ended"))?;
            let host = core
                .ext
                .host()
                .ok_or_else(|| ToolError::new("the extension host is not running"))?;
            let id = invocation.tool_call_id.clone();
            core.ext.track_tool(&id, Arc::clone(&invocation.updates));
            if let Some(runner) = pi_agent::NestedRunner::current() {
                core.ext
                    .track_nested(&id, runner, invocation.cancel.clone());
            }
            let mut params = Map::new();
            params.insert("tool".into(), json!(name));
            params.insert("toolCallId".into(), json!(id));
            params.insert("params".into(), Value::Object(invocation.args));
            params.insert("ctx".into(), core.ext_ctx());
            let request = host.request("tool", params);
            tokio::pin!(request);
            let outcome = tokio::select! {
                outcome = &mut request => outcome,
                () = invocation.cancel.cancelled() => {
                    // The tool sees its signal abort; its result still comes back.
                    host.notify("tool_abort", [("toolCallId".to_string(), json!(id))].into_iter().collect());
                    request.await
                }
            };
            core.ext.untrack_tool(&id);
            match outcome {
                Ok(value) => serde_json::from_value::<AgentToolResult>(value)
                    .map_err(|e| ToolError(format!("invalid tool result: {e}"))),
                Err(e) => Err(host_failure(e)),
            }
        })
    }

    fn prepare_arguments(&self, args: Value) -> Option<PrepareFuture> {
        if !self.def.has_prepare_arguments {
            return None;
        }
        let core = self.core.upgrade()?;
        let host = core.ext.host()?;
        let name = self.def.name.clone();
        Some(Box::pin(async move {
            let mut params = Map::new();
            params.insert("tool".into(), json!(name));
            params.insert("args".into(), args);
            host.request("prepare_args", params)
                .await
                .map_err(host_failure)
        }))
    }
}

impl crate::runtime::Runtime {
    /// `ctx.executeTool(name, args)` from a running extension tool: a nested call through the
    /// agent loop's pipeline (hooks, validation, `tool_execution_*` with `parentToolCallId`,
    /// the result's `nestedCalls`). Answers Pi's `AgentToolCallOutcome`.
    pub(crate) async fn ext_execute_tool(&self, params: &Value) -> Result<Value, String> {
        let text = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or("");
        let (parent, name) = (text("parentToolCallId"), text("name"));
        let args = params
            .get("args")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let Some((runner, cancel)) = self.core.ext.nested_runner(parent) else {
            return Err("ctx.executeTool() is only available while the tool runs".into());
        };
        let tool = pi_mcp::codemode::CodemodeHost::callable(&*self.core)
            .into_iter()
            .map(|c| c.tool)
            .find(|t| t.name() == name);
        let outcome = runner
            .run_named(name, tool, args.clone(), cancel, |_| {})
            .await;
        Ok(json!({
            "toolCall": { "type": "toolCall", "id": outcome.id, "name": name, "arguments": args },
            "result": outcome.result,
            "isError": outcome.is_error,
        }))
    }
}
