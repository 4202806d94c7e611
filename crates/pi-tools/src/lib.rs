//! Pi's built-in tools (read, bash, edit, write, grep, find, ls) as [`pi_agent::AgentTool`]s, the
//! truncation helpers they share, and the shell executor the RPC `bash` command reuses.
//!
//! Result texts, notices and error strings are Pi 1.6.0's; descriptions sent to the model are
//! our own words over the same parameter schemas.

pub mod bash;
pub mod config;
pub mod edit;
pub mod find;
pub mod fs_error;
pub mod grep;
mod grep_pool;
mod grep_walk;
pub mod image;
pub mod ls;
pub mod mutation_queue;
pub mod operations;
pub mod output_file;
pub mod paths;
pub mod powershell;
pub mod read;
pub mod shell;
mod tool_util;
pub mod truncate;
pub mod write;

pub use config::{SessionHandle, SessionInfo, ToolsConfig};
pub use edit::prepare_edit_arguments;
pub use shell::{BashRequest, execute_bash, kill_running_shells};

use pi_agent::AgentTool;
use std::sync::Arc;

/// Every built-in tool name, in Pi's registration order.
pub const ALL_TOOL_NAMES: [&str; 8] = [
    "read",
    "bash",
    "powershell",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
];

/// The tools active when neither `--tools` nor the `defaultTools` setting says otherwise.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

pub fn all_tool_names() -> &'static [&'static str] {
    &ALL_TOOL_NAMES
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown tool name: {0}")]
pub struct UnknownTool(pub String);

/// One built-in tool by name.
pub fn build_tool(
    name: &str,
    config: &Arc<ToolsConfig>,
) -> Result<Arc<dyn AgentTool>, UnknownTool> {
    let config = config.clone();
    Ok(match name {
        "read" => Arc::new(read::ReadTool::new(config)),
        "bash" => Arc::new(bash::BashTool::new(config)),
        "powershell" => Arc::new(powershell::PowerShellTool::new()),
        "edit" => Arc::new(edit::EditTool::new(config)),
        "write" => Arc::new(write::WriteTool::new(config)),
        "grep" => Arc::new(grep::GrepTool::new(config)),
        "find" => Arc::new(find::FindTool::new(config)),
        "ls" => Arc::new(ls::LsTool::new(config)),
        other => return Err(UnknownTool(other.to_string())),
    })
}

/// The named tools, in the given order.
pub fn build(names: &[&str], config: ToolsConfig) -> Result<Vec<Arc<dyn AgentTool>>, UnknownTool> {
    let config = Arc::new(config);
    names.iter().map(|name| build_tool(name, &config)).collect()
}

/// A tool's line in the system prompt's tool list and the rules it adds (our own words).
/// Tools without a snippet are not listed.
pub fn prompt_snippet(name: &str) -> Option<&'static str> {
    Some(match name {
        "read" => "Read the contents of a file",
        "bash" => "Run bash commands (ls, grep, find, and so on)",
        "edit" => {
            "Change files by exact text replacement, several separate edits per call if needed"
        }
        "write" => "Create a file or replace its content",
        "grep" => "Search file contents for a pattern (honors .gitignore)",
        "find" => "Find files by glob pattern (honors .gitignore)",
        "ls" => "List a directory",
        "powershell" => "Run PowerShell commands",
        _ => return None,
    })
}

pub fn prompt_guidelines(name: &str) -> &'static [&'static str] {
    match name {
        "read" => &["Look at files with read rather than cat or sed."],
        "bash" | "powershell" => {
            &["The PI_* environment variables describe the current model and session."]
        }
        "edit" => &[
            "Use edit for focused changes, and put all changes to one file into one call.",
            "Every edits[].oldText must match the original file exactly and only once; keep them short and separate, and merge changes that are close together instead of spanning large unchanged parts.",
        ],
        "write" => &["Use write only to create files or to replace a file completely."],
        _ => &[],
    }
}
