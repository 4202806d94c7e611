//! Every wire type of Pi 1.6.0's RPC and JSON modes, and JSON output byte-compatible with
//! JavaScript's `JSON.stringify`. No I/O lives here.

pub mod additions;
pub mod assistant_event;
pub mod command;
pub mod compat;
pub mod content;
pub mod cost;
pub mod event;
pub mod extension_ui;
pub mod message;
pub mod message_json_memo;
pub mod model;
pub mod num;
pub mod record;
pub mod response;
pub mod results;
pub mod schema;
pub mod schema_ts;
pub mod session_entry;
pub mod shared_message;
pub mod thinking;
pub mod tool;
mod union_schema;
pub mod usage;

pub use assistant_event::{AssistantMessageEvent, WireAssistantEvent};
pub use command::{Incoming, QueueMode, Rejection, RpcCommand, StreamingBehavior, decode_command};
pub use content::{
    AssistantBlock, ContentBlock, ImageContent, TextContent, ThinkingContent, ToolCall, UserBlock,
    UserContent,
};
pub use event::{AgentEventRef, SessionEvent, UsageRef};
pub use extension_ui::{ExtensionUiRequest, UiRequest};
pub use message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, CustomMessage, SystemMessage, ToolResultMessage, UserMessage,
};
pub use model::Model;
pub use record::{KeyOrder, Rest};
pub use response::{Outcome, RpcResponse};
pub use results::ResponseData;
pub use session_entry::{FileEntry, SessionEntry, SessionHeader, SessionTreeNode};
pub use shared_message::SharedMessage;
pub use thinking::ThinkingLevel;
pub use usage::{StopReason, Usage, UsageCost};
