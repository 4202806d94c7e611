//! The `powershell` tool is registered everywhere but only runs on Windows; elsewhere a call
//! fails with Pi's text (after the same empty first update the shell tools send).

use crate::tool_util::{declaration, prop};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::json;

pub struct PowerShellTool {
    declaration: Tool,
}

impl PowerShellTool {
    pub fn new() -> PowerShellTool {
        let description = "Run a PowerShell command in the current working directory; output and \
             errors come back together. Long output keeps only its end (the last 2000 lines or \
             50KB) and the complete output is written to a temporary file. An optional timeout \
             in seconds stops the command.";
        let parameters = json!({
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": prop("string", "The PowerShell command to run"),
                "timeout": prop("number", "Seconds after which the command is stopped (optional; no timeout by default)"),
            }
        });
        PowerShellTool {
            declaration: declaration("powershell", description, parameters, true),
        }
    }
}

impl Default for PowerShellTool {
    fn default() -> Self {
        PowerShellTool::new()
    }
}

impl AgentTool for PowerShellTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        Box::pin(async move {
            (invocation.updates)(AgentToolResult::new(Vec::new()));
            Err(ToolError::new(
                "The powershell tool is only available on Windows.",
            ))
        })
    }
}
