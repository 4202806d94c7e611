//! The provider against the real SmolLM2 file. Opt-in by nature: each test prints why it skips
//! when the model is not installed (`scripts/setup-local-model`), and runs when it is.
//!
//! `cargo test -p pi-local --features llama --release -- --nocapture`

#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{AssistantBlock, StringOrBlocks};
use pi_protocol::message::{AgentMessage, AssistantMessage, SystemMessage, UserMessage};
use pi_protocol::model::Model;
use pi_protocol::tool::Tool;
use pi_protocol::usage::StopReason;
use serde_json::json;
use std::time::{Duration, Instant};

fn installed() -> Option<Model> {
    let model = pi_local::default_model();
    if model.is_none() {
        eprintln!(
            "SKIPPED: the local model is not installed at {}; run scripts/setup-local-model",
            pi_local::builtin_model().base_url
        );
    }
    model
}

fn system(text: &str, tools: Vec<Tool>) -> AgentMessage {
    let mut s: SystemMessage =
        serde_json::from_value(json!({"role": "system", "content": text, "timestamp": 1})).unwrap();
    if !tools.is_empty() {
        s.tools_added = Some(tools);
    }
    AgentMessage::System(s)
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::new(StringOrBlocks::Text(text.into()), 1))
}

fn ls_tool() -> Tool {
    serde_json::from_value(json!({
        "name": "ls",
        "description": "List the files in a directory.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "Directory to list"},
            "limit": {"type": "number"}}}
    }))
    .unwrap()
}

/// Runs one request to the end; returns the events and the final message.
async fn collect(
    model: &Model,
    messages: Vec<AgentMessage>,
    options: StreamOptions,
) -> (Vec<StreamEvent>, AssistantMessage) {
    let mut stream = pi_local::stream(model, LlmContext::from_messages(messages), options);
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        if let StreamEvent::Done { message } | StreamEvent::Error { message } = &ev {
            let message = message.clone();
            events.push(ev);
            return (events, message);
        }
        events.push(ev);
    }
    panic!("stream ended without Done/Error: {events:?}");
}

fn text_of(m: &AssistantMessage) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_a_factual_question_with_streamed_text_and_usage() {
    let Some(model) = installed() else { return };
    let started = Instant::now();
    let (events, msg) = collect(
        &model,
        vec![
            system(
                "You are a helpful assistant. Answer in one short sentence.",
                vec![],
            ),
            user("What is the capital of France?"),
        ],
        StreamOptions::default(),
    )
    .await;
    eprintln!("answer in {:?}: {:?}", started.elapsed(), text_of(&msg));
    assert_eq!(msg.stop_reason, StopReason::Stop, "{msg:?}");
    assert!(text_of(&msg).contains("Paris"), "{}", text_of(&msg));
    assert!(matches!(events[0], StreamEvent::Start { .. }));
    assert!(matches!(events[1], StreamEvent::TextStart { index: 0, .. }));
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 1, "text should stream in pieces");
    assert!(
        msg.usage.input > 10 && msg.usage.output > 0,
        "{:?}",
        msg.usage
    );
    assert_eq!(msg.usage.total_tokens, msg.usage.input + msg.usage.output);
    assert_eq!(msg.usage.cost.total, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tools_declared_it_emits_a_grammar_valid_tool_call() {
    let Some(model) = installed() else { return };
    let (events, msg) = collect(
        &model,
        vec![
            system(
                "You are a coding assistant working in a project directory.",
                vec![ls_tool()],
            ),
            user("List the files in the current directory."),
        ],
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::ToolUse, "{msg:?}");
    let [AssistantBlock::ToolCall(call)] = msg.content.as_slice() else {
        panic!("expected one tool call: {:?}", msg.content);
    };
    eprintln!("tool call: {} {:?}", call.name, call.arguments);
    assert_eq!(call.name, "ls");
    assert_eq!(call.arguments_error, None);
    // The schema allows only `path` (a string) and `limit` (a number).
    for (key, value) in &call.arguments {
        match key.as_str() {
            "path" => assert!(value.is_string(), "{value}"),
            "limit" => assert!(value.is_number(), "{value}"),
            other => panic!("key {other} is not in the schema"),
        }
    }
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolcallStart { .. } => Some("start"),
            StreamEvent::ToolcallEnd { .. } => Some("end"),
            StreamEvent::TextStart { .. } => Some("text"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["start", "end"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_generation_within_one_token() {
    let Some(model) = installed() else { return };
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    let messages = vec![
        system("You are a storyteller.", vec![]),
        user("Tell me a very long story about a dragon and a castle."),
    ];
    let mut stream = pi_local::stream(&model, LlmContext::from_messages(messages), options);
    let mut deltas_after = 0;
    let mut cancelled_at = None;
    let end = loop {
        let Some(ev) = stream.next().await else {
            panic!("stream ended without a terminal event")
        };
        match ev {
            StreamEvent::TextDelta { .. } if cancelled_at.is_some() => deltas_after += 1,
            StreamEvent::TextDelta { .. } => {
                cancel.cancel();
                cancelled_at = Some(Instant::now());
            }
            StreamEvent::Error { message } | StreamEvent::Done { message } => break message,
            _ => {}
        }
    };
    let waited = cancelled_at.map(|t| t.elapsed()).unwrap_or_default();
    eprintln!("aborted {waited:?} after cancel, {deltas_after} deltas after it");
    assert_eq!(end.stop_reason, StopReason::Aborted);
    assert_eq!(end.error_message.as_deref(), Some("Request was aborted"));
    assert!(deltas_after <= 1, "{deltas_after} tokens after the abort");
    assert!(waited < Duration::from_millis(500), "{waited:?}");
    // The model's worker stopped too: the next request starts at once instead of queueing
    // behind the rest of a 1024-token story.
    let started = Instant::now();
    let messages = vec![user("Say hi.")];
    let mut next = pi_local::stream(
        &model,
        LlmContext::from_messages(messages),
        StreamOptions::default(),
    );
    assert!(matches!(next.next().await, Some(StreamEvent::Start { .. })));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Pi's seven built-in tools (schemas as Pi 1.6.0 declares them, descriptions shortened).
fn pi_tools() -> Vec<Tool> {
    let s = |d: &str| json!({"type": "string", "description": d});
    let n = |d: &str| json!({"type": "number", "description": d});
    let b = |d: &str| json!({"type": "boolean", "description": d});
    let tool = |name: &str, description: &str, parameters: serde_json::Value| {
        serde_json::from_value::<Tool>(
            json!({"name": name, "description": description, "parameters": parameters}),
        )
        .unwrap()
    };
    vec![
        tool(
            "read",
            "Read a file.",
            json!({"type": "object", "required": ["path"],
            "properties": {"path": s("File path"), "offset": n("First line"), "limit": n("Lines")}}),
        ),
        tool(
            "bash",
            "Run a shell command.",
            json!({"type": "object", "required": ["command"],
            "properties": {"command": s("Command"), "timeout": n("Seconds")}}),
        ),
        tool(
            "edit",
            "Edit a file.",
            json!({"type": "object", "required": ["path", "edits"],
            "properties": {"path": s("File path"), "edits": {"type": "array", "items": {
                "type": "object", "required": ["oldText", "newText"],
                "properties": {"oldText": s("Old"), "newText": s("New")}}}}}),
        ),
        tool(
            "write",
            "Write a file.",
            json!({"type": "object", "required": ["path", "content"],
            "properties": {"path": s("File path"), "content": s("Content")}}),
        ),
        tool(
            "grep",
            "Search file contents.",
            json!({"type": "object", "required": ["pattern"],
            "properties": {"pattern": s("Pattern"), "path": s("Dir"), "glob": s("Glob"),
                "ignoreCase": b("Ignore case"), "literal": b("Literal"), "context": n("Lines"),
                "limit": n("Max")}}),
        ),
        tool(
            "find",
            "Find files by glob.",
            json!({"type": "object", "required": ["pattern"],
            "properties": {"pattern": s("Glob"), "path": s("Dir"), "limit": n("Max")}}),
        ),
        ls_tool(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pi_tool_schema_compiles_and_a_call_under_them_parses() {
    let Some(model) = installed() else { return };
    let (_, msg) = collect(
        &model,
        vec![
            system(
                "You are a coding assistant working in a project directory.",
                pi_tools(),
            ),
            user("Show me the files in this folder."),
        ],
        StreamOptions::default(),
    )
    .await;
    // A grammar llama.cpp rejected would end in an error here.
    assert_ne!(
        msg.stop_reason,
        StopReason::Error,
        "{:?}",
        msg.error_message
    );
    if let [AssistantBlock::ToolCall(call)] = msg.content.as_slice() {
        eprintln!("tool call: {} {:?}", call.name, call.arguments);
        assert_eq!(call.arguments_error, None);
        assert!(pi_tools().iter().any(|t| t.name == call.name));
    } else {
        eprintln!("answered in text: {}", text_of(&msg));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_calls_always_parse_and_carry_the_required_keys() {
    let Some(mut model) = installed() else { return };
    // Threshold 0: the first token always starts a call, whatever the request; no example
    // exchanges, which the model would copy (they call `ls`).
    let mut params = serde_json::Map::new();
    params.insert("toolThreshold".into(), json!(0.0));
    params.insert("toolExamples".into(), json!(false));
    model.sampling_params = Some(params);
    let tools = pi_tools();
    for request in [
        "Replace hello with bye in notes.txt.",
        "Create a file todo.md that says buy milk.",
        "Search for TODO in the src folder.",
    ] {
        let (_, msg) = collect(
            &model,
            vec![
                system("You are a coding assistant.", tools.clone()),
                user(request),
            ],
            StreamOptions::default(),
        )
        .await;
        let [AssistantBlock::ToolCall(call)] = msg.content.as_slice() else {
            panic!("{request}: expected one call, got {:?}", msg.content);
        };
        eprintln!("{request} -> {} {:?}", call.name, call.arguments);
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(call.arguments_error, None);
        let tool = tools.iter().find(|t| t.name == call.name).unwrap();
        for key in tool.parameters["required"].as_array().into_iter().flatten() {
            assert!(
                call.arguments.contains_key(key.as_str().unwrap()),
                "{key} missing"
            );
        }
    }
}
