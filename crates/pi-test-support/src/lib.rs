//! Test doubles shared by the workspace's tests: a scripted loopback mock LLM server
//! ([`mock`]), SSE body builders per wire API ([`sse`]) and the conformance scenario runner that
//! records Pi 1.6.0 and replays our binary against the same goldens ([`conformance`]), and a
//! loopback npm registry and git server for package tests ([`packages`]), and a JSON Schema
//! validator for the protocol schema ([`json_schema`]).

pub mod conformance;
pub mod json_schema;
pub mod mcp_http;
pub mod mcp_server;
pub mod mock;
pub mod packages;
pub mod sse;
pub mod summarization;
pub mod temp_dir;

pub use temp_dir::TempDir;
