//! Wire types of what pi in Rust adds to Pi 1.6.0's protocol: the handshake
//! (`get_protocol_info`), session listing and reading (`list_sessions`, `read_session`) and tool
//! approvals (`get_tool_approvals`, `set_tool_approvals`, the approval confirm dialog and its
//! session record). Every addition is opt-in: nothing here is written unless a client sent one
//! of these commands or a user configured an approval policy, and Pi itself answers each of
//! these commands with its ordinary `Unknown command` error, so a client can probe.

use crate::record::OrderedMap;
use crate::session_entry::{SessionEntry, SessionHeader};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the additions' protocol, raised when one of them changes incompatibly.
pub const PROTOCOL_VERSION: u64 = 1;

/// The reference whose protocol this program speaks byte for byte.
pub const COMPATIBLE_NAME: &str = "@earendil-works/pi-coding-agent";
pub const COMPATIBLE_VERSION: &str = "1.6.0";

/// Feature names of the additions, as `get_protocol_info` lists them.
pub const ADDITIONS: &[&str] = &[
    "protocol_info",
    "session_listing",
    "session_reading",
    "tool_approvals",
];

/// A program and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProgramInfo {
    pub name: String,
    pub version: String,
}

/// `get_protocol_info` data: everything a client needs to feature-test in one round trip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolInfo {
    /// Version of the additions' protocol ([`PROTOCOL_VERSION`]).
    pub protocol_version: u64,
    /// This program.
    pub program: ProgramInfo,
    /// The reference whose protocol is spoken unchanged (Pi 1.6.0).
    pub compatible_with: ProgramInfo,
    /// Every command `type` this program answers, Pi's and the additions'.
    pub commands: Vec<String>,
    /// Every event `type` it may write to stdout (besides `response` and
    /// `extension_ui_request`).
    pub events: Vec<String>,
    /// The `method`s of `extension_ui_request` it may write.
    pub extension_ui_methods: Vec<String>,
    /// Feature names of the additions ([`ADDITIONS`]).
    pub additions: Vec<String>,
}

/// `list_sessions` data: one page of sessions, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One session of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// Absolute path of the session file (what `switch_session` and `read_session` take).
    pub path: String,
    pub id: String,
    /// The working directory the session was started in (its header's `cwd`).
    pub cwd: String,
    /// The display name (the latest `session_info` entry), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The session it was forked or cloned from (its header's `parentSession`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_path: Option<String>,
    /// When the session was created (its header's `timestamp`, ISO 8601).
    pub created: String,
    /// When the file last changed (ISO 8601): the order of the listing.
    pub modified: String,
    /// Number of `message` entries (all branches).
    pub message_count: u64,
    /// Text of the first user message, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
}

/// What `read_session` returns of a session.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SessionView {
    /// Every entry in file order (all branches), like `get_entries`.
    #[default]
    Entries,
    /// The messages of the current branch as the model would see them, like `get_messages`.
    Messages,
}

/// `read_session` data, by view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SessionRead {
    Entries(SessionEntriesRead),
    Messages(SessionMessagesRead),
}

/// `read_session` data of the `entries` view (the shape of `get_entries`, with the header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntriesRead {
    pub header: SessionHeader,
    pub entries: Vec<SessionEntry>,
    /// The last entry of the file (where the session would continue); `null` when empty.
    pub leaf_id: Option<String>,
    /// More entries follow (`limit` was reached): pass the last entry's id as `since`.
    pub has_more: bool,
}

/// `read_session` data of the `messages` view (the shape of `get_messages`, with the header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMessagesRead {
    pub header: SessionHeader,
    pub messages: Vec<crate::SharedMessage>,
}

/// What happens to a tool call under the approval policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAction {
    /// Run it (Pi's behaviour, and the default when no rule matches).
    Allow,
    /// Fail it at once with a tool error.
    Deny,
    /// Ask the client with an `extension_ui_request` confirm dialog; no answer within the
    /// timeout denies.
    Ask,
}

/// The tool approval policy (`get_tool_approvals` / `set_tool_approvals` data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalPolicy {
    /// Tool name or pattern (`*` any run of characters, `?` one) → action. An exact name wins
    /// over patterns, a longer pattern over a shorter one; no match allows.
    pub rules: OrderedMap<ApprovalAction>,
    /// How long an `ask` waits for the client's answer before denying.
    pub timeout_ms: u64,
}

/// The approval a confirm dialog asks for, on the `extension_ui_request` (absent from every
/// other dialog, so Pi's clients render it as a plain confirm).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalSubject {
    pub tool_call_id: String,
    pub tool_name: String,
    /// The arguments the tool would run with.
    pub args: Value,
}

/// How an approval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalDecision {
    Approved,
    Denied,
}

/// Who or what decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalReason {
    /// The client answered the dialog (`cancelled` denies).
    Client,
    /// A `deny` rule.
    Policy,
    /// No answer within `timeoutMs`.
    Timeout,
    /// `ask` with no client to ask (`--mode json`, `-p`).
    NoClient,
    /// The run was aborted while waiting.
    Aborted,
}

/// The `custom` entry (`customType: "tool_approval"`) recorded for every decision other than
/// a plain `allow`, so approvals, denials and timeouts are in the session and, through its
/// `entry_appended` event, in the event stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalRecord {
    pub tool_call_id: String,
    pub tool_name: String,
    pub decision: ApprovalDecision,
    pub reason: ApprovalReason,
    /// The rule that applied.
    pub rule: String,
}

/// `customType` of the session entry holding a [`ToolApprovalRecord`].
pub const APPROVAL_CUSTOM_TYPE: &str = "tool_approval";
