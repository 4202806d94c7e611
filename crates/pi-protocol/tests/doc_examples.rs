//! Every record of the fixtures in `tests/fixtures/` must deserialize into its typed value and
//! re-serialize to the same bytes.
//!
//! * `doc_*.jsonl`: the shapes of Pi 1.6.0's docs (`rpc-commands.md`, `json.md`,
//!   `rpc-extension-ui.md`, `message-types.md`, `session-format.md`), written out as compact
//!   JSON in the key order Pi uses (generator: `fixtures/capture/gen_doc.py`).
//! * `real_*_rpc.jsonl`: complete stdout of Pi 1.6.0 RPC runs against a local mock LLM
//!   (openai-completions and anthropic-messages, an extension exercising the UI protocol and
//!   custom entries, a manual compaction, HTTP 500 with auto-retry); `real_*_session.jsonl`: the
//!   session files those runs wrote. Captured unmodified (`fixtures/capture/`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::assistant_event::WireAssistantEvent;
use pi_protocol::command::{Incoming, decode_command};
use pi_protocol::content::AssistantBlock;
use pi_protocol::event::SessionEvent;
use pi_protocol::extension_ui::{ExtensionUiRequest, UiRequest};
use pi_protocol::message::{AgentMessage, SystemMessage};
use pi_protocol::response::{Outcome, RpcResponse};
use pi_protocol::results::{CompactionDetails, ForkData, LastAssistantTextData, ResponseData};
use pi_protocol::session_entry::{FileEntry, SessionEntry};
use pi_protocol::usage::StopReason;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<(usize, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<(usize, String)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect();
    assert!(!lines.is_empty(), "{name} is empty");
    lines
}

/// Parses like `JSON.parse` (V8 float rounding, JavaScript key order).
fn parse(line: &str) -> Value {
    parse_js_json(line).unwrap_or_else(|e| panic!("not JSON: {e}: {line}"))
}

/// Deserializes `line` as `T` and checks that it re-serializes byte-identically. Also checks
/// that serde_json's own parser accepts the line.
fn round_trip<T: DeserializeOwned + Serialize>(where_: &str, line: &str) -> T {
    let typed: T = serde_json::from_value(parse(line))
        .unwrap_or_else(|e| panic!("{where_}: does not deserialize: {e}\n{line}"));
    let again = to_js_string(&typed).unwrap_or_else(|e| panic!("{where_}: {e}"));
    assert_eq!(again, line, "{where_}: re-serialized differently");
    serde_json::from_str::<T>(line)
        .unwrap_or_else(|e| panic!("{where_}: serde_json::from_str fails: {e}"));
    typed
}

/// Which [`ResponseData`] shape a payload is. Exhaustive: a new shape must be named here, and
/// [`every_response_shape_is_covered`] then demands an example of it.
fn shape(data: &ResponseData) -> &'static str {
    match data {
        ResponseData::Prompt(_) => "Prompt",
        ResponseData::QueuedInput(_) => "QueuedInput",
        ResponseData::ClearQueue(_) => "ClearQueue",
        ResponseData::Cancelled(_) => "Cancelled",
        ResponseData::State(_) => "State",
        ResponseData::Model(_) => "Model",
        ResponseData::CycleModel(Some(_)) => "CycleModel",
        ResponseData::CycleModel(None) => "CycleModel(null)",
        ResponseData::AvailableModels(_) => "AvailableModels",
        ResponseData::ThinkingLevel(Some(_)) => "ThinkingLevel",
        ResponseData::ThinkingLevel(None) => "ThinkingLevel(null)",
        ResponseData::AvailableThinkingLevels(_) => "AvailableThinkingLevels",
        ResponseData::Compaction(_) => "Compaction",
        ResponseData::Bash(_) => "Bash",
        ResponseData::SessionStats(_) => "SessionStats",
        ResponseData::ExportHtml(_) => "ExportHtml",
        ResponseData::Fork(ForkData { text: Some(_), .. }) => "Fork",
        ResponseData::Fork(ForkData { text: None, .. }) => "Fork(no text)",
        ResponseData::ForkMessages(_) => "ForkMessages",
        ResponseData::Entries(_) => "Entries",
        ResponseData::Tree(_) => "Tree",
        ResponseData::LastAssistantText(LastAssistantTextData { text: Some(_) }) => {
            "LastAssistantText"
        }
        ResponseData::LastAssistantText(LastAssistantTextData { text: None }) => {
            "LastAssistantText({})"
        }
        ResponseData::Messages(_) => "Messages",
        ResponseData::Commands(_) => "Commands",
        // Additions (no Pi doc examples): their goldens cover them (`schema_goldens`).
        ResponseData::ProtocolInfo(_) => "ProtocolInfo",
        ResponseData::SessionList(_) => "SessionList",
        ResponseData::SessionRead(_) => "SessionRead",
        ResponseData::ToolApprovals(_) => "ToolApprovals",
    }
}

/// Every shape of Pi's protocol [`shape`] names.
const SHAPES: [&str; 25] = [
    "Prompt",
    "QueuedInput",
    "ClearQueue",
    "Cancelled",
    "State",
    "Model",
    "CycleModel",
    "CycleModel(null)",
    "AvailableModels",
    "ThinkingLevel",
    "ThinkingLevel(null)",
    "AvailableThinkingLevels",
    "Compaction",
    "Bash",
    "SessionStats",
    "ExportHtml",
    "Fork",
    "Fork(no text)",
    "ForkMessages",
    "Entries",
    "Tree",
    "LastAssistantText",
    "LastAssistantText({})",
    "Messages",
    "Commands",
];

/// Checks a response line against [`RpcResponse`]`<`[`ResponseData`]`>` (the type RPC mode
/// sends); returns the shape of its `data`, if any.
fn check_response(where_: &str, line: &str) -> Option<&'static str> {
    let Value::Object(obj) = parse(line) else {
        panic!("{where_}: not an object")
    };
    let command = obj.get("command").cloned();
    let outcome = if obj.get("success") == Some(&Value::Bool(true)) {
        match obj.get("data") {
            Some(data) => {
                let name = command.as_ref().and_then(Value::as_str).unwrap_or_default();
                Outcome::Data(
                    ResponseData::decode(name, data.clone())
                        .unwrap_or_else(|| panic!("{where_}: no data type for command {name}"))
                        .unwrap_or_else(|e| panic!("{where_}: data of {name}: {e}\n{line}")),
                )
            }
            None => Outcome::Ok,
        }
    } else {
        Outcome::Error(
            obj.get("error")
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{where_}: error response without error"))
                .to_string(),
        )
    };
    let response = RpcResponse {
        id: obj.get("id").cloned(),
        command,
        outcome,
    };
    assert_eq!(to_js_string(&response).unwrap(), line, "{where_}");
    match &response.outcome {
        Outcome::Data(data) => Some(shape(data)),
        _ => None,
    }
}

fn assert_message_typed(where_: &str, m: &AgentMessage) {
    assert!(
        !matches!(m, AgentMessage::Other(_)),
        "{where_}: message not recognized: {m:?}"
    );
}

fn assert_entry_typed(where_: &str, e: &SessionEntry) {
    assert!(
        !matches!(e, SessionEntry::Other(_)),
        "{where_}: entry not recognized: {e:?}"
    );
    if let SessionEntry::Message(m) = e {
        assert_message_typed(where_, &m.message);
    }
}

/// Checks every line of an RPC stdout capture; returns the events.
fn check_rpc_stream(name: &str) -> Vec<SessionEvent> {
    let mut events = Vec::new();
    for (n, line) in fixture(name) {
        let where_ = format!("{name}:{n}");
        let kind = parse(&line)
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string);
        match kind.as_deref() {
            Some("response") => {
                check_response(&where_, &line);
            }
            Some("extension_ui_request") => {
                round_trip::<ExtensionUiRequest>(&where_, &line);
            }
            _ => {
                let event: SessionEvent = round_trip(&where_, &line);
                check_event_contents(&where_, &line, &event);
                events.push(event);
            }
        }
    }
    events
}

/// Asserts that a message Pi wrote uses our canonical key order (so values we build are written
/// the way Pi writes them), except for the leading system message, which uses
/// [`SystemMessage::RUN_START_ORDER`]. Checks content blocks and usage too.
fn assert_pi_order(where_: &str, m: &AgentMessage) {
    let canonical = |ok: bool, what: &str| assert!(ok, "{where_}: {what} not in canonical order");
    let usage_ok = |u: &pi_protocol::usage::Usage| {
        u.rest.order().is_canonical() && u.cost.rest.order().is_canonical()
    };
    match m {
        AgentMessage::Assistant(a) => {
            canonical(a.rest.order().is_canonical(), "assistant message");
            canonical(usage_ok(&a.usage), "usage");
            for b in &a.content {
                let ok = match b {
                    AssistantBlock::Text(t) => t.rest.order().is_canonical(),
                    AssistantBlock::Thinking(t) => t.rest.order().is_canonical(),
                    AssistantBlock::ToolCall(t) => t.rest.order().is_canonical(),
                };
                canonical(ok, "assistant block");
            }
        }
        AgentMessage::System(sys) => {
            if !sys.rest.order().is_canonical() {
                let present: Vec<&str> = SystemMessage::RUN_START_ORDER
                    .iter()
                    .copied()
                    .filter(|k| sys.rest.order().keys().contains(k))
                    .collect();
                assert_eq!(
                    sys.rest.order().keys(),
                    present,
                    "{where_}: system message order"
                );
            }
            for t in sys.tools_added.iter().flatten() {
                canonical(t.rest.order().is_canonical(), "tool declaration");
            }
        }
        AgentMessage::User(u) => canonical(u.rest.order().is_canonical(), "user message"),
        AgentMessage::ToolResult(t) => {
            canonical(t.rest.order().is_canonical(), "tool result");
            canonical(t.usage.as_deref().is_none_or(usage_ok), "tool result usage");
        }
        AgentMessage::BashExecution(b) => canonical(b.rest.order().is_canonical(), "bash message"),
        AgentMessage::Custom(c) => canonical(c.rest.order().is_canonical(), "custom message"),
        AgentMessage::BranchSummary(b) => {
            canonical(b.rest.order().is_canonical(), "branch summary")
        }
        AgentMessage::CompactionSummary(c) => {
            canonical(c.rest.order().is_canonical(), "compaction summary")
        }
        AgentMessage::Other(_) => {}
    }
}

fn assert_entry_pi_order(where_: &str, e: &SessionEntry) {
    let ok = match e {
        SessionEntry::Message(m) => {
            assert_pi_order(where_, &m.message);
            m.rest.order().is_canonical()
        }
        SessionEntry::ThinkingLevelChange(x) => x.rest.order().is_canonical(),
        SessionEntry::ModelChange(x) => x.rest.order().is_canonical(),
        SessionEntry::Usage(x) => x.rest.order().is_canonical(),
        SessionEntry::Compaction(x) => {
            if let Some(sys) = &x.system_message {
                assert!(
                    sys.rest.order().is_canonical(),
                    "{where_}: compaction systemMessage"
                );
            }
            x.rest.order().is_canonical()
        }
        SessionEntry::BranchSummary(x) => x.rest.order().is_canonical(),
        SessionEntry::Custom(x) => x.rest.order().is_canonical(),
        SessionEntry::CustomMessage(x) => x.rest.order().is_canonical(),
        SessionEntry::ContextEdit(x) => x.rest.order().is_canonical(),
        SessionEntry::Label(x) => x.rest.order().is_canonical(),
        SessionEntry::SessionInfo(x) => x.rest.order().is_canonical(),
        SessionEntry::Other(_) => true,
    };
    assert!(ok, "{where_}: {} entry not in canonical order", e.kind());
}

fn check_event_contents(where_: &str, line: &str, event: &SessionEvent) {
    match event {
        SessionEvent::MessageStart { message } | SessionEvent::MessageEnd { message } => {
            assert_message_typed(where_, message);
            assert_pi_order(where_, message);
        }
        SessionEvent::TurnEnd {
            message,
            tool_results,
        } => {
            assert_message_typed(where_, message);
            assert_pi_order(where_, message);
            for t in tool_results {
                assert!(t.rest.order().is_canonical(), "{where_}: toolResults");
            }
        }
        SessionEvent::AgentEnd { messages, .. } => {
            for m in messages {
                assert_message_typed(where_, m);
                assert_pi_order(where_, m);
            }
        }
        SessionEvent::EntryAppended { entry } => {
            assert_entry_typed(where_, entry);
            assert_entry_pi_order(where_, entry);
        }
        SessionEvent::MessageUpdate { usage, .. } => {
            assert!(usage.rest.order().is_canonical(), "{where_}: usage order");
        }
        _ => {}
    }
    // Agent-loop events are sent through their borrowed form: it must write the same bytes.
    if let Some(borrowed) = event.as_agent_event() {
        assert_eq!(
            to_js_string(&borrowed).unwrap(),
            line,
            "{where_}: AgentEventRef differs"
        );
    }
}

fn check_session_file(name: &str) -> Vec<FileEntry> {
    let mut out = Vec::new();
    for (n, line) in fixture(name) {
        let where_ = format!("{name}:{n}");
        let entry: FileEntry = round_trip(&where_, &line);
        match &entry {
            FileEntry::Header(_) => assert!(n == 1 || name.starts_with("doc_"), "{where_}"),
            FileEntry::Entry(e) => {
                assert_entry_typed(&where_, e);
                if name.starts_with("real_") {
                    assert_entry_pi_order(&where_, e);
                }
            }
        }
        out.push(entry);
    }
    out
}

#[test]
fn doc_rpc_commands() {
    for (n, line) in fixture("doc_rpc_commands.jsonl") {
        let where_ = format!("doc_rpc_commands.jsonl:{n}");
        let Incoming::Command { id, command } = decode_command(parse(&line)) else {
            panic!("{where_}: not a command")
        };
        let Value::Object(fields) = serde_json::to_value(&command).unwrap() else {
            panic!("{where_}")
        };
        let mut obj = Map::new();
        if let Some(id) = id {
            obj.insert("id".into(), id);
        }
        obj.extend(fields);
        assert_eq!(to_js_string(&obj).unwrap(), line, "{where_}");
    }
}

#[test]
fn doc_rpc_responses() {
    for (n, line) in fixture("doc_rpc_responses.jsonl") {
        check_response(&format!("doc_rpc_responses.jsonl:{n}"), &line);
    }
}

/// Every payload RPC mode can send has an example: the docs' responses, or a recorded run.
#[test]
fn every_response_shape_is_covered() {
    let mut seen: Vec<&str> = Vec::new();
    for name in [
        "doc_rpc_responses.jsonl",
        "real_openai_rpc.jsonl",
        "real_anthropic_rpc.jsonl",
        "real_extension_rpc.jsonl",
        "real_compaction_rpc.jsonl",
        "real_error_rpc.jsonl",
    ] {
        for (n, line) in fixture(name) {
            if parse(&line).get("type").and_then(Value::as_str) == Some("response") {
                seen.extend(check_response(&format!("{name}:{n}"), &line));
            }
        }
    }
    let missing: Vec<&str> = SHAPES.into_iter().filter(|s| !seen.contains(s)).collect();
    assert!(
        missing.is_empty(),
        "response shapes without an example: {missing:?}"
    );
}

#[test]
fn doc_events() {
    let events = check_rpc_stream("doc_events.jsonl");
    let mut kinds: Vec<&str> = events.iter().map(SessionEvent::type_name).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), 24, "every event type is covered: {kinds:?}");
}

#[test]
fn doc_extension_ui() {
    let mut methods = Vec::new();
    for (n, line) in fixture("doc_extension_ui.jsonl") {
        let r: ExtensionUiRequest = round_trip(&format!("doc_extension_ui.jsonl:{n}"), &line);
        methods.push(r.request.method());
    }
    methods.dedup();
    assert_eq!(methods.len(), 9, "{methods:?}");
}

#[test]
fn doc_messages() {
    let mut roles = Vec::new();
    for (n, line) in fixture("doc_messages.jsonl") {
        let where_ = format!("doc_messages.jsonl:{n}");
        let m: AgentMessage = round_trip(&where_, &line);
        assert_message_typed(&where_, &m);
        roles.push(m.role().to_string());
    }
    roles.sort();
    roles.dedup();
    assert_eq!(roles.len(), 8, "{roles:?}");
}

#[test]
fn doc_session_entries() {
    let entries = check_session_file("doc_session.jsonl");
    let mut kinds: Vec<&str> = entries
        .iter()
        .filter_map(|e| match e {
            FileEntry::Entry(e) => Some(e.kind()),
            FileEntry::Header(_) => None,
        })
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), 11, "every entry type is covered: {kinds:?}");
    assert_eq!(check_generated_details("doc_session.jsonl", &entries), 2);
}

/// Round-trips the `details` of every compaction and branch summary Pi generated (those with
/// file lists) through [`CompactionDetails`]; returns how many there were.
fn check_generated_details(name: &str, entries: &[FileEntry]) -> usize {
    let mut checked = 0;
    for e in entries {
        let details = match e {
            FileEntry::Entry(SessionEntry::Compaction(c)) => c.details.as_ref(),
            FileEntry::Entry(SessionEntry::BranchSummary(b)) => b.details.as_ref(),
            _ => None,
        };
        if let Some(details) = details.filter(|d| d.get("readFiles").is_some()) {
            round_trip::<CompactionDetails>(
                &format!("{name}: details"),
                &to_js_string(details).unwrap(),
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn real_openai_completions_run() {
    let events = check_rpc_stream("real_openai_rpc.jsonl");
    let tool_use = events
        .iter()
        .find_map(|e| match e {
            SessionEvent::MessageEnd {
                message: AgentMessage::Assistant(a),
            } if a.stop_reason == StopReason::ToolUse => Some(a),
            _ => None,
        })
        .expect("an assistant message that called a tool");
    assert_eq!(tool_use.usage.reasoning, Some(2));
    assert_eq!(tool_use.response_id.as_deref(), Some("c1"));
    let AssistantBlock::ToolCall(call) = &tool_use.content[2] else {
        panic!("third block is the tool call")
    };
    assert_eq!(call.arguments.get("command"), Some(&Value::from("echo hi")));
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::MessageUpdate {
            assistant_message_event: WireAssistantEvent::ToolcallStart { .. },
            ..
        }
    )));
    check_session_file("real_openai_session.jsonl");
}

#[test]
fn real_anthropic_messages_run() {
    let events = check_rpc_stream("real_anthropic_rpc.jsonl");
    let usage_with_1h = events.iter().any(|e| {
        matches!(e, SessionEvent::MessageUpdate { usage, .. } if usage.cache_write_1h == Some(0))
    });
    assert!(usage_with_1h);
    check_session_file("real_anthropic_session.jsonl");
}

#[test]
fn real_extension_run() {
    check_rpc_stream("real_extension_rpc.jsonl");
    let mut dialogs = 0;
    for (n, line) in fixture("real_extension_rpc.jsonl") {
        if line.contains("\"extension_ui_request\"") {
            let r: ExtensionUiRequest = round_trip(&format!("real_extension_rpc.jsonl:{n}"), &line);
            if r.request.is_dialog() {
                dialogs += 1;
            }
            if let UiRequest::SetStatus { status_text, .. } = &r.request {
                assert!(status_text.is_none() || status_text.as_deref() == Some("running"));
            }
        }
    }
    assert_eq!(dialogs, 4);
    let entries = check_session_file("real_extension_session.jsonl");
    assert!(entries.iter().any(|e| matches!(
        e,
        FileEntry::Entry(SessionEntry::Label(l)) if l.label.is_none()
    )));
    check_session_file("real_clone_session.jsonl");
}

#[test]
fn real_compaction_run() {
    let events = check_rpc_stream("real_compaction_rpc.jsonl");
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::CompactionEnd {
            result: Some(_),
            ..
        }
    )));
    let entries = check_session_file("real_compaction_session.jsonl");
    assert_eq!(
        check_generated_details("real_compaction_session.jsonl", &entries),
        1
    );
    let compaction = entries
        .iter()
        .find_map(|e| match e {
            FileEntry::Entry(SessionEntry::Compaction(c)) => Some(c),
            _ => None,
        })
        .expect("a compaction entry");
    let system = compaction.system_message.as_ref().expect("systemMessage");
    assert!(system.tools_added.as_ref().is_some_and(|t| !t.is_empty()));
}

#[test]
fn real_error_and_retry_run() {
    let events = check_rpc_stream("real_error_rpc.jsonl");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::AutoRetryStart { .. }))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::EntryAppended {
            entry: SessionEntry::ContextEdit(c)
        } if c.replacement.is_none()
    )));
    check_session_file("real_error_session.jsonl");
}
