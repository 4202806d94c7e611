//! Commands a client writes to stdin, one JSON object per line (`RpcCommand` in Pi's
//! `rpc-types.d.ts`), and their decoding into typed values at the edge.

use crate::content::ImageContent;
use crate::thinking::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a queued message is delivered: one per poll or everything queued so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum QueueMode {
    #[serde(rename = "all")]
    All,
    #[serde(rename = "one-at-a-time")]
    OneAtATime,
}

/// What `prompt` does with its message while a run is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum StreamingBehavior {
    #[serde(rename = "steer")]
    Steer,
    #[serde(rename = "followUp")]
    FollowUp,
}

/// One RPC command. The `id` travels beside it because it is echoed
/// verbatim, with whatever JSON type the client gave it (see [`Incoming::Command`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RpcCommand {
    Prompt {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<Vec<ImageContent>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<Vec<ImageContent>>,
    },
    FollowUp {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<Vec<ImageContent>>,
    },
    Abort {},
    ClearQueue {},
    NewSession {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session: Option<String>,
    },
    GetState {},
    SetModel {
        provider: String,
        model_id: String,
    },
    CycleModel {},
    GetAvailableModels {},
    SetThinkingLevel {
        level: ThinkingLevel,
    },
    CycleThinkingLevel {},
    GetAvailableThinkingLevels {},
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
    },
    SetAutoCompaction {
        enabled: bool,
    },
    SetAutoRetry {
        enabled: bool,
    },
    AbortRetry {},
    Bash {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exclude_from_context: Option<bool>,
    },
    AbortBash {},
    GetSessionStats {},
    ExportHtml {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_path: Option<String>,
    },
    SwitchSession {
        session_path: String,
    },
    Fork {
        entry_id: String,
    },
    Clone {},
    GetForkMessages {},
    GetEntries {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<String>,
    },
    GetTree {},
    GetLastAssistantText {},
    SetSessionName {
        name: String,
    },
    GetMessages {},
    GetCommands {},
    // Additions (see `crate::additions`): not Pi 1.6.0's; Pi answers them `Unknown command`.
    /// The handshake: versions, supported commands and events, the additions.
    GetProtocolInfo {},
    /// Sessions on disk, newest first, one page at a time.
    ListSessions {
        /// Sessions of this working directory (default: the session's cwd).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Sessions of every working directory instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        all: Option<bool>,
        /// Only sessions whose name, id, cwd or message text contains this (case-insensitive).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// Page size (default 50, at most 1000).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
        /// The `nextCursor` of the previous page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
    /// Another session's entries or messages, without switching to it.
    ReadSession {
        session_path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        view: Option<crate::additions::SessionView>,
        /// `entries` view: only the entries after the one with this id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<String>,
        /// `entries` view: at most this many entries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
    },
    /// The tool approval policy in force.
    GetToolApprovals {},
    /// Replaces the tool approval policy for the rest of this process.
    SetToolApprovals {
        rules: crate::record::OrderedMap<crate::additions::ApprovalAction>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
}

/// Every command `type` Pi 1.6.0 knows, in the order of `rpc-types.d.ts`.
pub const COMMAND_TYPES: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
];

/// The command `type`s pi in Rust adds (see `crate::additions`).
pub const ADDITION_COMMAND_TYPES: &[&str] = &[
    "get_protocol_info",
    "list_sessions",
    "read_session",
    "get_tool_approvals",
    "set_tool_approvals",
];

impl RpcCommand {
    /// The wire `type` of this command.
    pub fn type_name(&self) -> &'static str {
        match self {
            RpcCommand::Prompt { .. } => "prompt",
            RpcCommand::Steer { .. } => "steer",
            RpcCommand::FollowUp { .. } => "follow_up",
            RpcCommand::Abort {} => "abort",
            RpcCommand::ClearQueue {} => "clear_queue",
            RpcCommand::NewSession { .. } => "new_session",
            RpcCommand::GetState {} => "get_state",
            RpcCommand::SetModel { .. } => "set_model",
            RpcCommand::CycleModel {} => "cycle_model",
            RpcCommand::GetAvailableModels {} => "get_available_models",
            RpcCommand::SetThinkingLevel { .. } => "set_thinking_level",
            RpcCommand::CycleThinkingLevel {} => "cycle_thinking_level",
            RpcCommand::GetAvailableThinkingLevels {} => "get_available_thinking_levels",
            RpcCommand::SetSteeringMode { .. } => "set_steering_mode",
            RpcCommand::SetFollowUpMode { .. } => "set_follow_up_mode",
            RpcCommand::Compact { .. } => "compact",
            RpcCommand::SetAutoCompaction { .. } => "set_auto_compaction",
            RpcCommand::SetAutoRetry { .. } => "set_auto_retry",
            RpcCommand::AbortRetry {} => "abort_retry",
            RpcCommand::Bash { .. } => "bash",
            RpcCommand::AbortBash {} => "abort_bash",
            RpcCommand::GetSessionStats {} => "get_session_stats",
            RpcCommand::ExportHtml { .. } => "export_html",
            RpcCommand::SwitchSession { .. } => "switch_session",
            RpcCommand::Fork { .. } => "fork",
            RpcCommand::Clone {} => "clone",
            RpcCommand::GetForkMessages {} => "get_fork_messages",
            RpcCommand::GetEntries { .. } => "get_entries",
            RpcCommand::GetTree {} => "get_tree",
            RpcCommand::GetLastAssistantText {} => "get_last_assistant_text",
            RpcCommand::SetSessionName { .. } => "set_session_name",
            RpcCommand::GetMessages {} => "get_messages",
            RpcCommand::GetCommands {} => "get_commands",
            RpcCommand::GetProtocolInfo {} => "get_protocol_info",
            RpcCommand::ListSessions { .. } => "list_sessions",
            RpcCommand::ReadSession { .. } => "read_session",
            RpcCommand::GetToolApprovals {} => "get_tool_approvals",
            RpcCommand::SetToolApprovals { .. } => "set_tool_approvals",
        }
    }

    /// Whether this is one of pi in Rust's additions rather than a Pi 1.6.0 command.
    pub fn is_addition(&self) -> bool {
        ADDITION_COMMAND_TYPES.contains(&self.type_name())
    }
}

/// A client's answer to an `extension_ui_request` (`RpcExtensionUIResponse`). Pi reads the
/// fields loosely (a `cancelled:true` wins, otherwise `value` or `confirmed`), so all are optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExtensionUiResponse {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
}

/// The result of decoding one input line that was valid JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A known command, with the `id` to echo.
    Command {
        id: Option<Value>,
        command: RpcCommand,
    },
    /// An answer to a pending extension UI dialog; never gets a response record.
    ExtensionUiResponse(ExtensionUiResponse),
    /// Something that cannot be run; answer with this error response.
    Rejected(Rejection),
}

/// A line that is valid JSON but not a runnable command.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub id: Option<Value>,
    /// The `command` key of the error response; absent when the input had no usable `type`.
    pub command: Option<Value>,
    pub error: String,
}

/// Decodes a parsed JSON value into a command.
///
/// Pi answers a value without a string `type` with `Unknown command: undefined` (the `command`
/// key then absent) and an unknown `type` with `Unknown command: <type>`. Pi does no validation
/// of fields and leaks JavaScript `TypeError`s for missing ones; we answer with the field named
/// instead (see DEVIATIONS.md).
pub fn decode_command(value: Value) -> Incoming {
    let Value::Object(map) = value else {
        return Incoming::Rejected(Rejection {
            id: None,
            command: None,
            error: "Unknown command: undefined".to_string(),
        });
    };
    let id = map.get("id").cloned();
    let type_value = map.get("type").cloned();
    let type_name = match &type_value {
        Some(Value::String(s)) => s.clone(),
        // `"type": null` is not undefined to Pi: it answers `command:null`, `Unknown command: null`.
        Some(other) => js_string(other),
        None => {
            return Incoming::Rejected(Rejection {
                id,
                command: None,
                error: "Unknown command: undefined".to_string(),
            });
        }
    };
    // Pi compares with `===`: only the string itself makes a dialog answer (an array that
    // stringifies the same is an unknown command and gets its error response).
    if matches!(&type_value, Some(Value::String(s)) if s == "extension_ui_response") {
        return match serde_json::from_value::<ExtensionUiResponse>(Value::Object(map)) {
            Ok(r) => Incoming::ExtensionUiResponse(r),
            // Pi ignores responses it cannot match to a dialog; so do we.
            Err(_) => Incoming::ExtensionUiResponse(ExtensionUiResponse {
                id: String::new(),
                value: None,
                confirmed: None,
                cancelled: None,
            }),
        };
    }
    let known = COMMAND_TYPES.contains(&type_name.as_str())
        || ADDITION_COMMAND_TYPES.contains(&type_name.as_str());
    if !matches!(type_value, Some(Value::String(_))) || !known {
        return Incoming::Rejected(Rejection {
            id,
            command: type_value,
            error: format!("Unknown command: {type_name}"),
        });
    }
    let mut fields: Map<String, Value> = map;
    fields.remove("id");
    match serde_json::from_value::<RpcCommand>(Value::Object(fields)) {
        Ok(command) => Incoming::Command { id, command },
        Err(e) => Incoming::Rejected(Rejection {
            id,
            command: type_value,
            error: format!(
                "Invalid {type_name} command: {}",
                clean_serde_error(&e.to_string())
            ),
        }),
    }
}

/// serde's messages carry positions that mean nothing for a value we already parsed.
fn clean_serde_error(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// `String(value)` for the non-string JSON values a `type` could hold.
fn js_string(value: &Value) -> String {
    match value {
        Value::Array(items) => items.iter().map(js_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_string(),
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        other => pi_js::json::to_js_string(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(s: &str) -> Incoming {
        decode_command(serde_json::from_str(s).unwrap())
    }

    #[test]
    fn every_command_type_decodes_with_its_minimal_fields() {
        let minimal = json!({
            "prompt": {"message": "hi"}, "steer": {"message": "s"}, "follow_up": {"message": "f"},
            "set_model": {"provider": "p", "modelId": "m"}, "set_thinking_level": {"level": "high"},
            "set_steering_mode": {"mode": "all"}, "set_follow_up_mode": {"mode": "one-at-a-time"},
            "set_auto_compaction": {"enabled": true}, "set_auto_retry": {"enabled": false},
            "bash": {"command": "ls"}, "switch_session": {"sessionPath": "/x.jsonl"},
            "fork": {"entryId": "abcd1234"}, "set_session_name": {"name": "n"},
        });
        let minimal_additions = json!({
            "read_session": {"sessionPath": "/x.jsonl"}, "set_tool_approvals": {"rules": {}},
        });
        for t in COMMAND_TYPES.iter().chain(ADDITION_COMMAND_TYPES) {
            let mut obj = minimal
                .get(*t)
                .or_else(|| minimal_additions.get(*t))
                .cloned()
                .unwrap_or_else(|| json!({}));
            obj["type"] = json!(t);
            obj["id"] = json!(7);
            match decode_command(obj) {
                Incoming::Command { id, command } => {
                    assert_eq!(id, Some(json!(7)));
                    assert_eq!(command.type_name(), *t);
                }
                other => panic!("{t}: {other:?}"),
            }
        }
    }

    #[test]
    fn prompt_with_images_and_streaming_behavior() {
        let got = decode(
            r#"{"id":"a","type":"prompt","message":"m","images":[{"type":"image","data":"QQ==","mimeType":"image/png"}],"streamingBehavior":"followUp"}"#,
        );
        let Incoming::Command { command, .. } = got else {
            panic!("{got:?}")
        };
        assert_eq!(
            command,
            RpcCommand::Prompt {
                message: "m".into(),
                images: Some(vec![ImageContent {
                    data: "QQ==".into(),
                    mime_type: "image/png".into()
                }]),
                streaming_behavior: Some(StreamingBehavior::FollowUp),
            }
        );
    }

    #[test]
    fn non_objects_and_missing_type_are_unknown_undefined() {
        for s in [
            "[1,2]",
            "\"get_state\"",
            "42",
            "null",
            "true",
            "{}",
            r#"{"id":"x"}"#,
        ] {
            let Incoming::Rejected(r) = decode(s) else {
                panic!("{s}")
            };
            assert_eq!(r.error, "Unknown command: undefined", "{s}");
            assert_eq!(r.command, None);
        }
        let Incoming::Rejected(r) = decode(r#"{"id":"x"}"#) else {
            panic!()
        };
        assert_eq!(r.id, Some(json!("x")));
    }

    #[test]
    fn unknown_type_echoes_type_and_id() {
        let Incoming::Rejected(r) = decode(r#"{"id":3,"type":"bogus"}"#) else {
            panic!()
        };
        assert_eq!(
            r,
            Rejection {
                id: Some(json!(3)),
                command: Some(json!("bogus")),
                error: "Unknown command: bogus".into()
            }
        );
        let Incoming::Rejected(r) = decode(r#"{"type":5}"#) else {
            panic!()
        };
        assert_eq!(r.error, "Unknown command: 5");
        assert_eq!(r.command, Some(json!(5)));
    }

    #[test]
    fn missing_field_names_the_field() {
        let Incoming::Rejected(r) = decode(r#"{"id":"p","type":"prompt"}"#) else {
            panic!()
        };
        assert_eq!(r.error, "Invalid prompt command: missing field `message`");
        assert_eq!(r.command, Some(json!("prompt")));
    }

    #[test]
    fn extension_ui_response_is_routed_not_answered() {
        let got = decode(r#"{"type":"extension_ui_response","id":"u1","confirmed":true}"#);
        assert_eq!(
            got,
            Incoming::ExtensionUiResponse(ExtensionUiResponse {
                id: "u1".into(),
                value: None,
                confirmed: Some(true),
                cancelled: None
            })
        );
    }
}
