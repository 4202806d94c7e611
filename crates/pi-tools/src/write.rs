//! The `write` tool: creates or overwrites a file, creating its parent directories.

use crate::config::ToolsConfig;
use crate::fs_error;
use crate::mutation_queue::wait_turn;
use crate::paths::resolve_to_cwd;
use crate::tool_util::{check_cancel, declaration, prop, str_arg, text_result};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::json;
use std::sync::Arc;

pub struct WriteTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl WriteTool {
    pub fn new(config: Arc<ToolsConfig>) -> WriteTool {
        let description = "Write a file with the given content: a missing file is created, an \
             existing one is replaced, and missing parent directories are created too.";
        let parameters = json!({
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": prop("string", "File to write, as a relative or absolute path"),
                "content": prop("string", "The complete new content of the file"),
            }
        });
        WriteTool {
            config,
            declaration: declaration("write", description, parameters, true),
        }
    }
}

impl AgentTool for WriteTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        let config = self.config.clone();
        Box::pin(async move { run(&config, invocation).await })
    }
}

async fn run(
    config: &ToolsConfig,
    invocation: ToolInvocation,
) -> Result<AgentToolResult, ToolError> {
    let path = str_arg(&invocation.args, "path")
        .unwrap_or_default()
        .to_string();
    let content = str_arg(&invocation.args, "content")
        .unwrap_or_default()
        .to_string();
    let absolute = resolve_to_cwd(&path, &config.cwd);
    let _turn = wait_turn(&absolute).await.map_err(ToolError::new)?;
    let check = || check_cancel(&invocation.cancel);
    check()?;
    // An extension's operations do the I/O when it gave some; their errors are the tool's.
    let ops = config.operations.as_deref();
    let failed = |e: crate::operations::OpError| ToolError::new(e.message);
    if let Some(dir) = absolute.parent() {
        match ops {
            Some(ops) => ops.mkdir(dir).await.map_err(failed)?,
            None => tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| ToolError::new(fs_error::with_path(&e, "mkdir", dir)))?,
        }
    }
    check()?;
    match ops {
        Some(ops) => ops.write_file(&absolute, &content).await.map_err(failed)?,
        None => tokio::fs::write(&absolute, content.as_bytes())
            .await
            .map_err(|e| ToolError::new(fs_error::with_path(&e, "open", &absolute)))?,
    }
    check()?;
    Ok(text_result(format!("Successfully wrote to {path}"), None))
}
