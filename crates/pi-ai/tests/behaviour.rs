//! Transport behaviour against a loopback server: idle timeout, cancellation, refused
//! connections, requests that fail before sending, and the scripted faux API.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_ai::faux::{self, FauxResponse};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::model::Model;
use pi_protocol::usage::StopReason;
use serde_json::json;
use std::time::{Duration, Instant};
use support::{Mock, Reply};

fn model(api: &str, provider: &str, base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "m", "name": "m", "api": api, "provider": provider, "baseUrl": base,
        "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 4096
    }))
    .unwrap()
}

fn hello() -> LlmContext {
    LlmContext::from_messages(vec![AgentMessage::User(UserMessage::new(
        StringOrBlocks::Blocks(vec![UserBlock::Text(
            pi_protocol::content::TextContent::new("hi"),
        )]),
        1,
    ))])
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some("k".into()),
        ..StreamOptions::default()
    }
}

async fn collect(mut s: pi_ai::AssistantStream) -> (Vec<StreamEvent>, AssistantMessage) {
    let mut events = Vec::new();
    while let Some(ev) = s.next().await {
        if let StreamEvent::Done { message } | StreamEvent::Error { message } = &ev {
            let m = message.clone();
            events.push(ev);
            assert!(s.next().await.is_none(), "nothing after the terminal event");
            return (events, m);
        }
        events.push(ev);
    }
    panic!("stream ended without a terminal event");
}

fn oc_chunks() -> Vec<String> {
    let c = |d: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": d}]})
        )
    };
    vec![
        c(json!({"content": "par"})),
        c(json!({"content": "tial"})),
        c(json!({"content": "never"})),
    ]
}

#[tokio::test]
async fn a_stalled_stream_fails_after_the_idle_timeout_with_undicis_text() {
    let mut reply = Reply::sse(oc_chunks());
    reply.stall_after = Some(2);
    let mock = Mock::start(vec![reply]).await;
    let m = model("openai-completions", "p", &format!("{}/v1", mock.base()));
    let opts = StreamOptions {
        idle_timeout: Some(Duration::from_millis(150)),
        ..options()
    };
    let t = Instant::now();
    let (_, msg) = collect(pi_ai::stream(&m, hello(), opts)).await;
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("terminated: Body Timeout Error (UND_ERR_BODY_TIMEOUT)")
    );
    assert_eq!(msg.text(), "partial");
}

#[tokio::test]
async fn a_slow_stream_that_never_pauses_past_the_idle_timeout_completes() {
    // Six chunks 100 ms apart under a 250 ms idle timeout: the whole body takes longer than
    // the timeout, no single gap does.
    let mut chunks = oc_chunks();
    chunks.extend(oc_chunks());
    let mut reply = Reply::sse(chunks);
    reply.gap = Duration::from_millis(100);
    let mock = Mock::start(vec![reply]).await;
    let m = model("openai-completions", "p", &format!("{}/v1", mock.base()));
    let opts = StreamOptions {
        idle_timeout: Some(Duration::from_millis(250)),
        ..options()
    };
    let t = Instant::now();
    let (_, msg) = collect(pi_ai::stream(&m, hello(), opts)).await;
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "took {:?}",
        t.elapsed()
    );
    // (The scripted chunks carry no finish_reason, which is reported; no timeout is.)
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );
    assert_eq!(msg.text(), "partialneverpartialnever");
}

#[tokio::test]
async fn cancelling_mid_stream_ends_promptly_as_aborted() {
    for (api, base, chunks, text) in [
        ("openai-completions", "/v1", oc_chunks(), "Request was aborted"),
        (
            "anthropic-messages",
            "",
            vec![
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n".to_string(),
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_string(),
            ],
            "This operation was aborted",
        ),
    ] {
        let mut reply = Reply::sse(chunks);
        reply.stall_after = Some(2);
        let mock = Mock::start(vec![reply]).await;
        let m = model(api, "p", &format!("{}{base}", mock.base()));
        let opts = options();
        let cancel = opts.cancel.clone();
        let mut s = pi_ai::stream(&m, hello(), opts);
        // Wait until the response started streaming, then cancel.
        loop {
            match s.next().await {
                Some(StreamEvent::TextStart { .. }) => break,
                Some(_) => {}
                None => panic!("{api}: ended early"),
            }
        }
        let t = Instant::now();
        cancel.cancel();
        let (_, msg) = collect(s).await;
        assert!(t.elapsed() < Duration::from_millis(500), "{api}: took {:?}", t.elapsed());
        assert_eq!(msg.stop_reason, StopReason::Aborted, "{api}");
        assert_eq!(msg.error_message.as_deref(), Some(text), "{api}");
    }
}

#[tokio::test]
async fn cancelling_before_the_response_arrives_reports_request_aborted() {
    let m = model("anthropic-messages", "p", "http://127.0.0.1:9");
    let opts = options();
    opts.cancel.cancel();
    let (_, msg) = collect(pi_ai::stream(&m, hello(), opts)).await;
    assert_eq!(
        (msg.stop_reason, msg.error_message.as_deref()),
        (StopReason::Aborted, Some("Request aborted"))
    );
}

#[tokio::test]
async fn a_refused_connection_is_worded_like_node() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let m = model(
        "openai-completions",
        "p",
        &format!("http://127.0.0.1:{port}/v1"),
    );
    let (events, msg) = collect(pi_ai::stream(&m, hello(), options())).await;
    assert_eq!(events.len(), 1, "no start before a failed request");
    assert_eq!(
        msg.error_message,
        Some(format!(
            "Connection error.: connect ECONNREFUSED 127.0.0.1:{port}"
        ))
    );
    let g = model(
        "google-generative-ai",
        "p",
        &format!("http://127.0.0.1:{port}/v1beta"),
    );
    let (_, msg) = collect(pi_ai::stream(&g, hello(), options())).await;
    assert_eq!(
        msg.error_message,
        Some(format!(
            "fetch failed: connect ECONNREFUSED 127.0.0.1:{port}"
        ))
    );
}

#[tokio::test]
async fn requests_that_cannot_start_fail_with_pis_setup_error() {
    let m = model("nope-api", "p", "");
    let (_, msg) = collect(pi_ai::stream(&m, hello(), options())).await;
    let json = pi_js::json::to_js_string(&msg).unwrap();
    assert!(
        json.starts_with(r#"{"role":"assistant","content":[],"api":"nope-api","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"No API provider registered for api: nope-api","timestamp":"#),
        "{json}"
    );
    let m = model("anthropic-messages", "p", "http://127.0.0.1:9");
    let (_, msg) = collect(pi_ai::stream(&m, hello(), StreamOptions::default())).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: p")
    );
}

#[tokio::test]
async fn the_faux_api_streams_scripted_responses_in_pieces() {
    let m = model("faux", "faux-test-1", "");
    let mut args = serde_json::Map::new();
    args.insert("path".into(), json!("some/long/path/to/a/file.txt"));
    faux::set_responses(
        "faux-test-1",
        vec![
            FauxResponse::thinking_then_text("let me think about it", "the answer is forty-two"),
            FauxResponse::tool_call("t1", "read", args),
            FauxResponse::error("scripted failure"),
        ],
    );
    let (events, msg) = collect(pi_ai::stream(&m, hello(), StreamOptions::default())).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            StreamEvent::Start { .. } => "start",
            StreamEvent::ThinkingStart { .. } => "thinking_start",
            StreamEvent::ThinkingDelta { .. } => "thinking_delta",
            StreamEvent::ThinkingEnd { .. } => "thinking_end",
            StreamEvent::TextStart { .. } => "text_start",
            StreamEvent::TextDelta { .. } => "text_delta",
            StreamEvent::TextEnd { .. } => "text_end",
            StreamEvent::Done { .. } => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(msg.text(), "the answer is forty-two");
    assert_eq!((msg.usage.input, msg.usage.output), (2, 12));
    let (_, msg) = collect(pi_ai::stream(&m, hello(), StreamOptions::default())).await;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let (_, msg) = collect(pi_ai::stream(&m, hello(), StreamOptions::default())).await;
    assert_eq!(
        (msg.stop_reason, msg.error_message.as_deref()),
        (StopReason::Error, Some("scripted failure"))
    );
    let (_, msg) = collect(pi_ai::stream(&m, hello(), StreamOptions::default())).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No more faux responses queued")
    );
}

#[tokio::test]
async fn the_faux_api_honours_cancellation() {
    let m = model("faux", "faux-test-2", "");
    faux::set_responses(
        "faux-test-2",
        vec![FauxResponse::text(&"x".repeat(200)).with_delay(Duration::from_millis(20))],
    );
    let opts = StreamOptions::default();
    let cancel = opts.cancel.clone();
    let s = pi_ai::stream(&m, hello(), opts);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let (_, msg) = collect(s).await;
    assert_eq!(
        (msg.stop_reason, msg.error_message.as_deref()),
        (StopReason::Aborted, Some("Request was aborted"))
    );
    assert!(!msg.text().is_empty() && msg.text().len() < 200);
}
