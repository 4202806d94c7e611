//! The session store of Pi 1.6.0: version 3 JSONL files holding a tree of entries.
//!
//! A session file starts with a header line; every other line is an entry with an 8-hex `id`
//! and the `parentId` of the entry it follows, so the file holds a tree (branches share their
//! common history) and a *leaf* marks where the conversation currently is. [`SessionStore`]
//! keeps one session: it loads a file (tolerating malformed and torn lines, migrating v1/v2),
//! appends entries one complete line per write, and answers the reading side of the RPC
//! protocol — the model context ([`SessionStore::build_context`]), `get_entries`
//! ([`SessionStore::entries_since`]), `get_tree` ([`SessionStore::tree`]), `get_fork_messages`,
//! session stats — plus forks and clones. [`discovery`] finds sessions on disk from their headers
//! alone; [`paths`] is the directory layout and the session directory choice.
//!
//! Entries are `pi-protocol`'s typed records, which keep unknown keys and key order, so every
//! entry re-serializes byte-identically; what does not fit the types is kept verbatim.
//!
//! All operations are synchronous file I/O (opening a large session also parses on a few
//! threads): async callers run them on a blocking thread. One store owns its file; nothing else
//! should append to it.

mod append;
mod blocks;
mod canonical;
pub mod content_text;
mod context;
pub mod discovery;
mod error;
mod fork;
mod id_index;
pub mod ids;
mod lenient;
pub mod listing;
mod mapped;
mod message_line;
mod migrate;
pub mod paths;
mod queries;
mod read;
mod reading;
mod store;
mod system_prompt;
mod tree;
mod writer;

#[cfg(test)]
mod testutil;

pub use append::{BranchSummaryParams, CompactionParams};
pub use context::{
    ContextMessage, ModelRef, SessionContext, SessionProjection, branch_summary_messages,
    project_entry,
};
pub use discovery::{SessionInfo, SessionLookup, SessionScope};
pub use error::{Result, SessionError};
pub use fork::{ForkPosition, Forked};
pub use queries::user_text;
pub use reading::SessionReader;
pub use store::{Label, NewSession, SessionStore};
pub use system_prompt::current_system_message;
pub use tree::SessionTree;
