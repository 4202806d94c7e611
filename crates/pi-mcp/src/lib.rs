//! MCP servers for pi, native: `mcp.json` ([`config`]), stdio clients ([`client`],
//! [`connection`]), the session's servers and their tools ([`manager`]: naming, exposure, the
//! `mcp_servers` section, `/mcp`), the resource tools, `tool_search`, the `codemode` tool's
//! declaration, `mcp.log`, and the `pi mcp` shell commands ([`cli`]).
//!
//! Everything the model can call is an ordinary [`pi_agent::AgentTool`].

pub mod cli;
pub mod client;
pub mod codemode;
pub mod codemode_models;
pub mod command;
pub mod config;
pub mod connection;
mod http;
mod jsonrpc;
pub mod log;
pub mod manager;
pub mod naming;
pub mod oauth;
pub mod resources;
pub mod sandbox;
pub mod section;
pub mod tool;
pub mod tool_search;

pub use config::{Exposure, McpConfig, ServerEntry};
pub use manager::{McpHost, McpManager, McpToolEntry, Notice};

/// The version pi reports to servers in `initialize`.
pub const PI_VERSION: &str = "1.6.0";
