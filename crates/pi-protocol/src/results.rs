//! The `data` payloads of RPC responses, and the result objects they embed (`BashResult`,
//! `CompactionResult`, `SessionStats`, `RpcSessionState`, slash commands). [`ResponseData`] is
//! the payload of any response: what RPC mode sends, and what the doc-example tests decode.
//!
//! These are built by us and never persisted, so they are plain serde structs with a fixed key
//! order (the order Pi writes) and no unknown-key retention.

use crate::command::QueueMode;
use crate::model::Model;
use crate::session_entry::{SessionEntry, SessionTreeNode};
use crate::shared_message::SharedMessage;
use crate::thinking::ThinkingLevel;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `get_state` data. `model` is always present in practice (the placeholder when nothing is
/// available); `sessionFile` is absent with `--no-session`; `sessionName` only when set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcSessionState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    pub thinking_level: ThinkingLevel,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    pub auto_compaction_enabled: bool,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub message_count: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub pending_message_count: u64,
}

/// Token totals of `get_session_stats`; `total` = input + output + cacheRead + cacheWrite.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub input: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub output: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub cache_read: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub cache_write: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub total: u64,
}

/// How full the context window is. `tokens` and `percent` are `null` when unknown (after a
/// compaction, before the next response); `percent` is unrounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    #[serde(deserialize_with = "crate::num::de_opt_u64")]
    pub tokens: Option<u64>,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub context_window: u64,
    pub percent: Option<f64>,
}

/// `get_session_stats` data. Counts cover every `message` entry of the file (all branches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: String,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub user_messages: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub assistant_messages: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub tool_calls: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub tool_results: u64,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub total_messages: u64,
    pub tokens: TokenTotals,
    /// Sum of `usage.cost.total` in dollars.
    pub cost: f64,
    /// Absent without a model or with `contextWindow <= 0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
}

/// Result of the RPC `bash` command. `exitCode` is absent when the command was cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashResult {
    pub output: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::num::de_opt_i64"
    )]
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    /// Temp file with the whole output, when it was truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// Result of a compaction (`compact` data, `compaction_end.result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    #[serde(deserialize_with = "crate::num::de_u64")]
    pub tokens_before: u64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::num::de_opt_u64"
    )]
    pub estimated_tokens_after: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Pi: [`CompactionDetails`]; extensions may store anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// The `details` Pi stores with a compaction it generated (Pi's `CompactionDetails`; branch
/// summaries use the same shape): the files the summarized part only read, and those it wrote
/// or edited, each sorted by UTF-16 code units. `details` itself is a [`Value`] wherever it is
/// carried, because an extension may store anything there.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionDetails {
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
}

/// Where a resource is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceScope {
    User,
    Project,
    Temporary,
}

/// Whether a resource comes from a package or is configured directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SourceOrigin {
    Package,
    TopLevel,
}

/// Where an extension, prompt template or skill comes from (`SourceInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// File path, or a synthetic path such as `builtin:mcp`.
    pub path: String,
    pub source: String,
    pub scope: SourceScope,
    pub origin: SourceOrigin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_path: Option<String>,
}

/// What kind of slash command an entry of `get_commands` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SlashCommandSource {
    Extension,
    Prompt,
    Skill,
}

/// A command that can be invoked through `prompt` (`RpcSlashCommand`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcSlashCommand {
    /// Without the leading slash (`skill:<name>` for skills).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: SlashCommandSource,
    pub source_info: SourceInfo,
}

/// How an accepted `prompt` was dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PromptDisposition {
    Started,
    Queued,
    Handled,
}

/// How an accepted `steer`/`follow_up` was dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueuedInputDisposition {
    Queued,
    Handled,
}

/// `prompt` data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptData {
    pub disposition: PromptDisposition,
}

/// `steer` / `follow_up` data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QueuedInputData {
    pub disposition: QueuedInputDisposition,
}

/// `clear_queue` data: the texts that were removed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClearQueueData {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// `new_session`, `switch_session` and `clone` data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CancelledData {
    pub cancelled: bool,
}

/// `cycle_model` data (the response carries `null` when there is nothing to cycle to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CycleModelData {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub is_scoped: bool,
}

/// `get_available_models` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AvailableModelsData {
    pub models: Vec<Model>,
}

/// `cycle_thinking_level` data (`null` for non-reasoning models).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThinkingLevelData {
    pub level: ThinkingLevel,
}

/// `get_available_thinking_levels` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AvailableThinkingLevelsData {
    pub levels: Vec<ThinkingLevel>,
}

/// `export_html` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExportHtmlData {
    pub path: String,
}

/// `fork` data: the text of the user message forked from; `text` is absent when an extension
/// cancelled the fork.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ForkData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub cancelled: bool,
}

/// One entry of `get_fork_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// `get_fork_messages` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ForkMessagesData {
    pub messages: Vec<ForkMessage>,
}

/// `get_entries` data. `leafId` is `null` for an empty session. `entries` is any sequence of
/// entries, so a response can be written from the session's own slice (`&[SessionEntry]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EntriesData")]
pub struct EntriesData<E = Vec<SessionEntry>> {
    pub entries: E,
    pub leaf_id: Option<String>,
}

/// `get_tree` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeData {
    pub tree: Vec<SessionTreeNode>,
    pub leaf_id: Option<String>,
}

/// `get_last_assistant_text` data: Pi writes `{}` (not `{"text":null}`) when there is none.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LastAssistantTextData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `get_messages` data (the transcript's shared messages, written without copying them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessagesData {
    pub messages: Vec<SharedMessage>,
}

/// `get_commands` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandsData {
    pub commands: Vec<RpcSlashCommand>,
}

/// The `data` of a successful response, one variant per shape. Serializes as the payload alone
/// (`null` for an empty `cycle_model`/`cycle_thinking_level`); [`ResponseData::decode`] reads it
/// back given the command. RPC mode streams the large ones without this wrapper: `get_messages`
/// and `get_entries` as `RpcResponse<MessagesData>` / `RpcResponse<EntriesData<&[_]>>`, and
/// `get_tree` written iteratively in the [`TreeData`] shape (a deep tree is too deep for serde).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResponseData {
    Prompt(PromptData),
    QueuedInput(QueuedInputData),
    ClearQueue(ClearQueueData),
    Cancelled(CancelledData),
    State(Box<RpcSessionState>),
    Model(Box<Model>),
    CycleModel(Option<Box<CycleModelData>>),
    AvailableModels(AvailableModelsData),
    ThinkingLevel(Option<ThinkingLevelData>),
    AvailableThinkingLevels(AvailableThinkingLevelsData),
    Compaction(Box<CompactionResult>),
    Bash(BashResult),
    SessionStats(Box<SessionStats>),
    ExportHtml(ExportHtmlData),
    Fork(ForkData),
    ForkMessages(ForkMessagesData),
    Entries(EntriesData),
    Tree(TreeData),
    LastAssistantText(LastAssistantTextData),
    Messages(MessagesData),
    Commands(CommandsData),
    ProtocolInfo(Box<crate::additions::ProtocolInfo>),
    SessionList(crate::additions::SessionList),
    SessionRead(Box<crate::additions::SessionRead>),
    ToolApprovals(crate::additions::ToolApprovalPolicy),
}

impl ResponseData {
    /// Reads the `data` of a successful response to `command`; `None` for a command whose
    /// responses carry no data.
    pub fn decode(command: &str, data: Value) -> Option<Result<Self, serde_json::Error>> {
        use serde_json::from_value as f;
        Some(match command {
            "prompt" => f(data).map(Self::Prompt),
            "steer" | "follow_up" => f(data).map(Self::QueuedInput),
            "clear_queue" => f(data).map(Self::ClearQueue),
            "new_session" | "switch_session" | "clone" => f(data).map(Self::Cancelled),
            "get_state" => f(data).map(Self::State),
            "set_model" => f(data).map(Self::Model),
            "cycle_model" => f(data).map(Self::CycleModel),
            "get_available_models" => f(data).map(Self::AvailableModels),
            "cycle_thinking_level" => f(data).map(Self::ThinkingLevel),
            "get_available_thinking_levels" => f(data).map(Self::AvailableThinkingLevels),
            "compact" => f(data).map(Self::Compaction),
            "bash" => f(data).map(Self::Bash),
            "get_session_stats" => f(data).map(Self::SessionStats),
            "export_html" => f(data).map(Self::ExportHtml),
            "fork" => f(data).map(Self::Fork),
            "get_fork_messages" => f(data).map(Self::ForkMessages),
            "get_entries" => f(data).map(Self::Entries),
            "get_tree" => f(data).map(Self::Tree),
            "get_last_assistant_text" => f(data).map(Self::LastAssistantText),
            "get_messages" => f(data).map(Self::Messages),
            "get_commands" => f(data).map(Self::Commands),
            "get_protocol_info" => f(data).map(Self::ProtocolInfo),
            "list_sessions" => f(data).map(Self::SessionList),
            "read_session" => f(data).map(Self::SessionRead),
            "get_tool_approvals" | "set_tool_approvals" => f(data).map(Self::ToolApprovals),
            _ => return None,
        })
    }
}

/// `From<payload> for ResponseData`, so a handler answers `Outcome::Data(payload.into())`.
macro_rules! into_response_data {
    ($wrap:path => $($variant:ident($ty:ty)),* $(,)?) => {
        $(
            impl From<$ty> for ResponseData {
                fn from(data: $ty) -> Self {
                    ResponseData::$variant($wrap(data))
                }
            }
        )*
    };
}

into_response_data! {
    std::convert::identity =>
    Prompt(PromptData),
    QueuedInput(QueuedInputData),
    ClearQueue(ClearQueueData),
    Cancelled(CancelledData),
    AvailableModels(AvailableModelsData),
    ThinkingLevel(Option<ThinkingLevelData>),
    AvailableThinkingLevels(AvailableThinkingLevelsData),
    Bash(BashResult),
    ExportHtml(ExportHtmlData),
    Fork(ForkData),
    ForkMessages(ForkMessagesData),
    Entries(EntriesData),
    Tree(TreeData),
    LastAssistantText(LastAssistantTextData),
    Messages(MessagesData),
    Commands(CommandsData),
    SessionList(crate::additions::SessionList),
    ToolApprovals(crate::additions::ToolApprovalPolicy),
}

into_response_data! {
    Box::new =>
    ProtocolInfo(crate::additions::ProtocolInfo),
    SessionRead(crate::additions::SessionRead),
    State(RpcSessionState),
    Model(Model),
    Compaction(CompactionResult),
    SessionStats(SessionStats),
}

impl From<Option<CycleModelData>> for ResponseData {
    fn from(data: Option<CycleModelData>) -> Self {
        ResponseData::CycleModel(data.map(Box::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn stats_null_context_usage_and_empty_text() {
        let s = r#"{"sessionId":"s","userMessages":2,"assistantMessages":3,"toolCalls":1,"toolResults":1,"totalMessages":7,"tokens":{"input":270,"output":21,"cacheRead":0,"cacheWrite":0,"total":291},"cost":0.0011250000000000001,"contextUsage":{"tokens":null,"contextWindow":128000,"percent":null}}"#;
        // serde_json's own float parsing can misround; js_parse rounds like V8.
        let st: SessionStats =
            serde_json::from_value(pi_js::parse::parse_js_json(s).unwrap()).unwrap();
        assert_eq!(to_js_string(&st).unwrap(), s);
        assert_eq!(
            to_js_string(&LastAssistantTextData::default()).unwrap(),
            "{}"
        );
        let b = BashResult {
            output: "so far".into(),
            exit_code: None,
            cancelled: true,
            truncated: false,
            full_output_path: None,
        };
        assert_eq!(
            to_js_string(&b).unwrap(),
            r#"{"output":"so far","cancelled":true,"truncated":false}"#
        );
    }
}
