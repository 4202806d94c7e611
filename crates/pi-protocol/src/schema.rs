//! The JSON Schema of the whole protocol, generated from the wire types: what a client writes
//! (commands, extension UI answers), what it reads (responses, events, extension UI requests)
//! and the lines of a session file. `pi schema` prints it; a test validates every record of every
//! conformance golden against it, so it cannot drift from what is sent.
//!
//! Most types derive `schemars::JsonSchema` next to their serde derive (schemars reads the same
//! serde attributes), `record!` types get theirs from the macro, and the few types with
//! hand-written serde impls have hand-written schemas here. The response record is assembled
//! here too: its `data` depends on the `command`, which no type expresses.

use crate::command::{ADDITION_COMMAND_TYPES, COMMAND_TYPES, ExtensionUiResponse, RpcCommand};
use crate::event::SessionEvent;
use crate::extension_ui::{ExtensionUiRequest, ExtensionUiRequestType};
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, CustomMessage, SystemMessage, ToolResultMessage, UserMessage,
};
use crate::record::OrderedMap;
use crate::session_entry::{FileEntry, SessionEntry, SessionHeader};
use crate::tool::{ConstrainedSampling, ConstrainedSamplingConfig};
use crate::union_schema::{one_of, other_object};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};
use std::borrow::Cow;

impl JsonSchema for AgentMessage {
    fn schema_name() -> Cow<'static, str> {
        "AgentMessage".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let known = [
            "system",
            "user",
            "assistant",
            "toolResult",
            "bashExecution",
            "custom",
            "branchSummary",
            "compactionSummary",
        ];
        let variants = vec![
            g.subschema_for::<SystemMessage>().to_value(),
            g.subschema_for::<UserMessage>().to_value(),
            g.subschema_for::<AssistantMessage>().to_value(),
            g.subschema_for::<ToolResultMessage>().to_value(),
            g.subschema_for::<BashExecutionMessage>().to_value(),
            g.subschema_for::<CustomMessage>().to_value(),
            g.subschema_for::<BranchSummaryMessage>().to_value(),
            g.subschema_for::<CompactionSummaryMessage>().to_value(),
            other_object(
                "A message of a role this protocol does not define (an extension's), kept verbatim.",
                "role",
                &known,
            ),
        ];
        one_of(&["Any message, discriminated by `role`."], variants)
    }
}

/// A message kept as its canonical text is still a message: the same definition.
impl JsonSchema for crate::SharedMessage {
    fn schema_name() -> Cow<'static, str> {
        AgentMessage::schema_name()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        AgentMessage::json_schema(g)
    }
}

impl JsonSchema for SessionEntry {
    fn schema_name() -> Cow<'static, str> {
        "SessionEntry".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        use crate::session_entry::*;
        let mut variants = vec![
            g.subschema_for::<MessageEntry>().to_value(),
            g.subschema_for::<ThinkingLevelChangeEntry>().to_value(),
            g.subschema_for::<ModelChangeEntry>().to_value(),
            g.subschema_for::<UsageEntry>().to_value(),
            g.subschema_for::<CompactionEntry>().to_value(),
            g.subschema_for::<BranchSummaryEntry>().to_value(),
            g.subschema_for::<CustomEntry>().to_value(),
            g.subschema_for::<CustomMessageEntry>().to_value(),
            g.subschema_for::<ContextEditEntry>().to_value(),
            g.subschema_for::<LabelEntry>().to_value(),
            g.subschema_for::<SessionInfoEntry>().to_value(),
        ];
        // `session` is the header's type: a file line of that type is never an entry.
        let known = [
            "message",
            "thinking_level_change",
            "model_change",
            "usage",
            "compaction",
            "branch_summary",
            "custom",
            "custom_message",
            "context_edit",
            "label",
            "session_info",
            "session",
        ];
        variants.push(other_object(
            "An entry of a type this protocol does not define (a newer writer's), kept verbatim.",
            "type",
            &known,
        ));
        one_of(&["Any session entry, discriminated by `type`."], variants)
    }
}

impl JsonSchema for FileEntry {
    fn schema_name() -> Cow<'static, str> {
        "SessionFileLine".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let variants = vec![
            g.subschema_for::<SessionHeader>().to_value(),
            g.subschema_for::<SessionEntry>().to_value(),
        ];
        one_of(
            &["One line of a session file (JSONL): the header (first line) or an entry."],
            variants,
        )
    }
}

impl JsonSchema for ConstrainedSampling {
    fn schema_name() -> Cow<'static, str> {
        "ConstrainedSampling".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let config = g.subschema_for::<ConstrainedSamplingConfig>().to_value();
        json_schema!({
            "description": "`false` (constrained sampling off) or its configuration.",
            "anyOf": [{ "const": false }, config]
        })
    }
}

impl JsonSchema for ExtensionUiRequestType {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ExtensionUiRequestType".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": "extension_ui_request" })
    }
}

impl<V: JsonSchema> JsonSchema for OrderedMap<V> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Map_of_{}", V::schema_name()).into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let value = g.subschema_for::<V>().to_value();
        json_schema!({ "type": "object", "additionalProperties": value })
    }
}

/// The `data` of a successful response to `command`: `None` for commands answered without
/// `data`, `Some(None)` for an unknown command. Mirrors [`crate::ResponseData::decode`].
fn response_data(command: &str, g: &mut SchemaGenerator) -> Option<Option<Schema>> {
    use crate::results::*;
    Some(Some(match command {
        "prompt" => g.subschema_for::<PromptData>(),
        "steer" | "follow_up" => g.subschema_for::<QueuedInputData>(),
        "clear_queue" => g.subschema_for::<ClearQueueData>(),
        "new_session" | "switch_session" | "clone" => g.subschema_for::<CancelledData>(),
        "get_state" => g.subschema_for::<RpcSessionState>(),
        "set_model" => g.subschema_for::<crate::model::Model>(),
        "cycle_model" => g.subschema_for::<Option<CycleModelData>>(),
        "get_available_models" => g.subschema_for::<AvailableModelsData>(),
        "cycle_thinking_level" => g.subschema_for::<Option<ThinkingLevelData>>(),
        "get_available_thinking_levels" => g.subschema_for::<AvailableThinkingLevelsData>(),
        "compact" => g.subschema_for::<CompactionResult>(),
        "bash" => g.subschema_for::<BashResult>(),
        "get_session_stats" => g.subschema_for::<SessionStats>(),
        "export_html" => g.subschema_for::<ExportHtmlData>(),
        "fork" => g.subschema_for::<ForkData>(),
        "get_fork_messages" => g.subschema_for::<ForkMessagesData>(),
        "get_entries" => g.subschema_for::<EntriesData>(),
        "get_tree" => g.subschema_for::<TreeData>(),
        "get_last_assistant_text" => g.subschema_for::<LastAssistantTextData>(),
        "get_messages" => g.subschema_for::<MessagesData>(),
        "get_commands" => g.subschema_for::<CommandsData>(),
        "get_protocol_info" => g.subschema_for::<crate::additions::ProtocolInfo>(),
        "list_sessions" => g.subschema_for::<crate::additions::SessionList>(),
        "read_session" => g.subschema_for::<crate::additions::SessionRead>(),
        "get_tool_approvals" | "set_tool_approvals" => {
            g.subschema_for::<crate::additions::ToolApprovalPolicy>()
        }
        "abort"
        | "set_thinking_level"
        | "set_steering_mode"
        | "set_follow_up_mode"
        | "set_auto_compaction"
        | "set_auto_retry"
        | "abort_retry"
        | "abort_bash"
        | "set_session_name" => return Some(None),
        _ => return None,
    }))
}

/// The `response` record: one success shape per command (its `data`, or none), and the failure
/// shape shared by all (also for unknown commands and unparsable lines, `command: "parse"`).
fn response_schema(g: &mut SchemaGenerator) -> Value {
    let id = json!({ "description": "The command's `id`, echoed verbatim (any JSON value)." });
    let mut variants = Vec::new();
    for command in COMMAND_TYPES.iter().chain(ADDITION_COMMAND_TYPES) {
        let mut properties = Map::new();
        properties.insert("id".into(), id.clone());
        properties.insert("type".into(), json!({ "const": "response" }));
        properties.insert("command".into(), json!({ "const": command }));
        properties.insert("success".into(), json!({ "const": true }));
        let mut required = vec!["type", "command", "success"];
        // Every command of the lists has a shape (a unit test checks it).
        if let Some(Some(data)) = response_data(command, g) {
            properties.insert("data".into(), data.to_value());
            required.push("data");
        }
        variants.push(json!({
            "type": "object",
            "properties": properties,
            "required": required,
        }));
    }
    variants.push(json!({
        "description": "A failed command: unknown, invalid, unparsable (`command: \"parse\"`, no `id`) or refused. `command` is absent when the input had no `type`.",
        "type": "object",
        "properties": {
            "id": id,
            "type": { "const": "response" },
            "command": { "description": "The command's `type` as given (any JSON value)." },
            "success": { "const": false },
            "error": { "type": "string" },
        },
        "required": ["type", "success", "error"],
    }));
    json!({
        "description": "Exactly one per command line, correlated by `id`.",
        "oneOf": variants,
    })
}

/// Adds the optional `id` every command may carry (it travels beside the typed command).
fn add_command_ids(command: &mut Value) {
    let Some(variants) = command.get_mut("oneOf").and_then(Value::as_array_mut) else {
        return;
    };
    for variant in variants {
        if let Some(Value::Object(properties)) = variant.get_mut("properties") {
            properties.insert(
                "id".into(),
                json!({ "description": "Echoed in the response (any JSON value; a string is usual)." }),
            );
        }
    }
}

/// schemars writes every `Option` as nullable, but a field skipped when `None` is never `null`
/// on the wire: its optional properties lose the `null` schemars added (the nullable fields of
/// records say so with `oneOf`, which stays).
fn strip_optional_null(schema: &mut Schema) {
    let mut recurse = strip_optional_null;
    schemars::transform::transform_subschemas(&mut recurse, schema);
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let required: Vec<String> = match object.get("required") {
        Some(Value::Array(keys)) => keys
            .iter()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return;
    };
    for (key, property) in properties.iter_mut() {
        if !required.contains(key) {
            strip_null(property);
        }
    }
}

fn strip_null(property: &mut Value) {
    let Value::Object(map) = property else {
        return;
    };
    if let Some(Value::Array(types)) = map.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let replacement = match rest.len() {
            1 => rest[0].clone(),
            _ => Value::Array(rest),
        };
        map.insert("type".into(), replacement);
    }
    let single = match map.get("anyOf") {
        Some(Value::Array(options))
            if options.len() == 2 && options[1] == json!({ "type": "null" }) =>
        {
            options[0].as_object().cloned()
        }
        _ => None,
    };
    if let Some(inner) = single {
        map.remove("anyOf");
        for (k, v) in inner {
            map.entry(k).or_insert(v);
        }
    }
}

/// Descriptions come from doc comments: their rustdoc links (``[`RpcCommand`]``) read as plain
/// code spans (`` `RpcCommand` ``) to a client, who has no rustdoc to follow them into.
fn plain_descriptions(schema: &mut Schema) {
    let mut recurse = plain_descriptions;
    schemars::transform::transform_subschemas(&mut recurse, schema);
    if let Some(Value::String(text)) = schema
        .as_object_mut()
        .and_then(|o| o.get_mut("description"))
    {
        *text = text.replace("[`", "`").replace("`]", "`");
    }
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/$defs/{name}") })
}

/// The whole protocol as one JSON Schema (draft 2020-12). Entry points under `$defs`:
/// `StdinRecord`, `StdoutRecord` and `SessionFileLine`; the root accepts any of the three.
pub fn protocol_schema() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(strip_optional_null as fn(&mut Schema))
        .with_transform(plain_descriptions as fn(&mut Schema))
        .into_generator();
    let command = g.subschema_for::<RpcCommand>().to_value();
    let ui_response = g.subschema_for::<ExtensionUiResponse>().to_value();
    let event = g.subschema_for::<SessionEvent>().to_value();
    let ui_request = g.subschema_for::<ExtensionUiRequest>().to_value();
    let header = g.subschema_for::<SessionHeader>().to_value();
    let file_line = g.subschema_for::<FileEntry>().to_value();
    let responses = response_schema(&mut g);
    // The `data` of a `tool_approval` custom entry: custom data is open (any JSON), so nothing
    // refers to it, but a client reading approvals from the session wants its shape.
    g.subschema_for::<crate::additions::ToolApprovalRecord>();
    let mut defs = g.take_definitions(true);
    if let Some(command) = defs.get_mut("RpcCommand") {
        add_command_ids(command);
    }
    defs.insert("RpcResponse".into(), responses);
    defs.insert(
        "StdinRecord".into(),
        json!({
            "description": "One line a client writes to stdin: a command, or the answer to an extension UI dialog.",
            "oneOf": [command, ui_response],
        }),
    );
    defs.insert(
        "StdoutRecord".into(),
        json!({
            "description": "One line pi writes to stdout: a response, a session event, or an extension UI request (and, in `--mode json` only, the session header first).",
            "oneOf": [reference("RpcResponse"), event, ui_request, header],
        }),
    );
    debug_assert_eq!(file_line, reference("SessionFileLine"));
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pi --mode rpc",
        "description": concat!(
            "The RPC protocol of pi in Rust: Pi 1.6.0's records (stdin commands, stdout responses and ",
            "events, the extension UI sub-protocol, session file lines) and the additions listed by ",
            "`get_protocol_info`. Generated from the Rust wire types (`pi schema`)."
        ),
        "anyOf": [reference("StdinRecord"), reference("StdoutRecord"), reference("SessionFileLine")],
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_response_shape() {
        let mut g = SchemaGenerator::default();
        for command in COMMAND_TYPES.iter().chain(ADDITION_COMMAND_TYPES) {
            assert!(response_data(command, &mut g).is_some(), "{command}");
        }
    }

    /// The tags of a union's variants, as the schema has them.
    fn tags(variants: &Value, key: &str) -> Vec<String> {
        variants["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["properties"][key]["const"].as_str().map(str::to_string))
            .collect()
    }

    #[test]
    fn listed_events_and_ui_methods_are_the_types() {
        let schema = protocol_schema();
        let defs = &schema["$defs"];
        assert_eq!(
            tags(&defs["SessionEvent"], "type"),
            crate::event::EVENT_TYPES
        );
        assert_eq!(
            tags(&defs["ExtensionUiRequest"], "method"),
            crate::extension_ui::UI_METHODS
        );
        let commands: Vec<&str> = COMMAND_TYPES
            .iter()
            .chain(ADDITION_COMMAND_TYPES)
            .copied()
            .collect();
        assert_eq!(tags(&defs["RpcCommand"], "type"), commands);
    }

    #[test]
    fn entry_points_are_defined() {
        let schema = protocol_schema();
        let defs = schema["$defs"].as_object().unwrap();
        for name in [
            "StdinRecord",
            "StdoutRecord",
            "SessionFileLine",
            "RpcResponse",
            "RpcCommand",
            "SessionEvent",
            "AgentMessage",
            "SessionEntry",
        ] {
            assert!(defs.contains_key(name), "{name}");
        }
    }
}
