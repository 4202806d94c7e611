//! The pi coding agent as a library: everything `pi` does except talking to its caller.
//!
//! * [`cli`]: Pi 1.6.0's flags and argument errors. It is here rather than in the binary
//!   because the runtime re-reads the command line once extensions have registered flags.
//! * [`settings`], [`resources`]: `settings.json`, context files, skills, prompt templates,
//!   system prompt, project trust.
//! * [`runtime`]: the session runtime (Pi's `AgentSession`): one agent, one session file,
//!   queues, retry, compaction, model and thinking commands.
//! * [`compaction`], [`messages`]: summarizing old context; what the model sees of the coding
//!   agent's own message kinds.
//! * [`extensions`]: Pi's TypeScript extensions, run in a Node host (`pi_ext_host`).
//! * [`output`]: the one owner of stdout that every mode writes records through.
//!
//! The binary (`src/main.rs`, `src/modes/`) parses the command line and runs a mode on top.

pub mod cli;
pub mod commands;
pub mod compaction;
pub mod extensions;
pub mod messages;
pub mod output;
pub mod packages;
pub mod resources;
pub mod runtime;
pub mod settings;
pub mod stream_kind;
pub mod themes;

/// The Pi release whose CLI and protocol this program reproduces.
pub const PI_VERSION: &str = "1.6.0";
