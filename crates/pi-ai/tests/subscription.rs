//! Requests made with subscription credentials: a Claude Pro/Max token presents itself as
//! Claude Code (bearer token, Claude Code's identity headers, betas and system block, tool
//! names in Claude Code's casing and back), and GitHub Copilot requests carry Copilot's
//! per-request headers.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{AssistantBlock, StringOrBlocks};
use pi_protocol::message::{AgentMessage, UserMessage};
use pi_protocol::model::Model;
use serde_json::{Value, json};
use support::{Mock, Reply};

fn model(api: &str, provider: &str, base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "api": api, "provider": provider,
        "baseUrl": base, "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000, "maxTokens": 8192
    }))
    .unwrap()
}

/// A system message declaring the `read` tool, then a user prompt.
fn context() -> LlmContext {
    let system: AgentMessage = serde_json::from_value(json!({
        "role": "system", "content": "Be brief.", "timestamp": 1,
        "toolsAdded": [{"name": "read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
    }))
    .unwrap();
    LlmContext::from_messages(vec![
        system,
        AgentMessage::User(UserMessage::new(StringOrBlocks::Text("read f".into()), 2)),
    ])
}

fn tool_use_reply(name: &str) -> Reply {
    let ev = |n: &str, d: Value| format!("event: {n}\ndata: {d}\n\n");
    Reply::sse(vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m1", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\":\"f\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 3}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ])
}

async fn final_message(model: &Model, key: &str) -> pi_protocol::message::AssistantMessage {
    let opts = StreamOptions {
        api_key: Some(key.into()),
        ..StreamOptions::default()
    };
    let mut s = pi_ai::stream(model, context(), opts);
    while let Some(ev) = s.next().await {
        if let StreamEvent::Done { message } | StreamEvent::Error { message } = ev {
            return message;
        }
    }
    panic!("no final message");
}

#[tokio::test]
async fn a_claude_subscription_token_speaks_as_claude_code() {
    let mock = Mock::start(vec![tool_use_reply("Read")]).await;
    let m = model("anthropic-messages", "anthropic", &mock.base());
    let msg = final_message(&m, "sk-ant-oat01-secret").await;
    assert_eq!(msg.error_message, None);
    match &msg.content[0] {
        AssistantBlock::ToolCall(tc) => assert_eq!(tc.name, "read", "mapped back to our tool"),
        other => panic!("{other:?}"),
    }
    let r = &mock.requests()[0];
    assert_eq!(
        r.header("authorization"),
        Some("Bearer sk-ant-oat01-secret")
    );
    assert_eq!(r.header("x-api-key"), None);
    assert_eq!(r.header("user-agent"), Some("claude-cli/2.1.322"));
    assert_eq!(r.header("x-app"), Some("cli"));
    assert!(
        r.header("anthropic-beta")
            .unwrap()
            .starts_with("claude-code-20250219,oauth-2025-04-20"),
        "{:?}",
        r.header("anthropic-beta")
    );
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        body["system"][0]["text"],
        "You are Claude Code, Anthropic's official CLI for Claude."
    );
    assert_eq!(body["system"][1]["text"], "Be brief.");
    assert_eq!(body["tools"][0]["name"], "Read");
}

#[tokio::test]
async fn an_api_key_keeps_the_plain_anthropic_request() {
    let mock = Mock::start(vec![tool_use_reply("read")]).await;
    let m = model("anthropic-messages", "anthropic", &mock.base());
    final_message(&m, "sk-ant-api03-key").await;
    let r = &mock.requests()[0];
    assert_eq!(r.header("x-api-key"), Some("sk-ant-api03-key"));
    assert_eq!(r.header("authorization"), None);
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(body["system"][0]["text"], "Be brief.");
}

#[tokio::test]
async fn copilot_requests_carry_copilots_headers_and_bearer_token() {
    let mock = Mock::start(vec![tool_use_reply("read")]).await;
    let m = model("anthropic-messages", "github-copilot", &mock.base());
    final_message(&m, "tid=1;proxy-ep=proxy.x").await;
    let r = &mock.requests()[0];
    assert_eq!(
        r.header("authorization"),
        Some("Bearer tid=1;proxy-ep=proxy.x")
    );
    assert_eq!(r.header("x-initiator"), Some("user"));
    assert_eq!(r.header("openai-intent"), Some("conversation-edits"));
    assert_eq!(r.header("copilot-vision-request"), None);
}
