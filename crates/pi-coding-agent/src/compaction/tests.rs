//! Preparation (cut points, split turns, file tracking), the summarizer's retries and failure
//! texts, and context usage, on in-memory sessions.

use super::*;
use pi_agent::BoxFuture;
use pi_ai::{AssistantStream, LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{AssistantBlock, StringOrBlocks, TextContent, ToolCall, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, ToolResultMessage, UserMessage};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::{StopReason, Usage};
use pi_session::{CompactionParams, NewSession, SessionStore};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

fn store() -> SessionStore {
    SessionStore::in_memory(std::path::Path::new("/tmp"), NewSession::default()).unwrap()
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::new(
        StringOrBlocks::Blocks(vec![UserBlock::Text(TextContent::new(text))]),
        1,
    ))
}

fn assistant(text: &str, total_tokens: u64) -> AgentMessage {
    let mut a = AssistantMessage::new("openai-completions", "p", "m", StopReason::Stop, 2);
    a.content = vec![AssistantBlock::Text(TextContent::new(text))];
    a.usage.total_tokens = total_tokens;
    AgentMessage::Assistant(a)
}

fn tool_call(name: &str, path: &str) -> AgentMessage {
    let mut a = AssistantMessage::new("openai-completions", "p", "m", StopReason::ToolUse, 2);
    let args = json!({ "path": path }).as_object().cloned().unwrap();
    a.content = vec![AssistantBlock::ToolCall(ToolCall::new("c1", name, args))];
    AgentMessage::Assistant(a)
}

fn tool_result(text: &str) -> AgentMessage {
    AgentMessage::ToolResult(
        serde_json::from_value::<ToolResultMessage>(json!({
            "role": "toolResult", "toolCallId": "c1", "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3
        }))
        .unwrap(),
    )
}

fn append(s: &mut SessionStore, messages: Vec<AgentMessage>) -> Vec<String> {
    messages
        .into_iter()
        .map(|m| s.append_message(m).unwrap())
        .collect()
}

fn prepare(s: &SessionStore, keep: u64) -> Option<Preparation> {
    let projection = s.build_projection();
    let branch = s.branch_entries(None);
    prepare_compaction(&projection, &branch, keep)
}

fn roles<M: super::estimate::AsMessage>(messages: &[M]) -> Vec<&str> {
    messages.iter().map(|m| m.message().role()).collect()
}

#[test]
fn keeps_recent_tokens_and_cuts_at_the_turn_that_reaches_the_budget() {
    let mut s = store();
    let text = "x".repeat(400); // 100 tokens each
    let ids = append(
        &mut s,
        vec![
            user(&text),
            assistant(&text, 500),
            user(&text),
            assistant(&text, 700),
        ],
    );
    let prep = prepare(&s, 150).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[2]);
    assert!(!prep.is_split_turn);
    assert_eq!(roles(&prep.messages_to_summarize), ["user", "assistant"]);
    assert!(prep.turn_prefix_messages.is_empty());
    // The last valid usage stands for the whole context.
    assert_eq!(prep.tokens_before, 700);
    assert_eq!(prep.previous_summary, None);
}

#[test]
fn a_cut_inside_a_turn_splits_it_and_tracks_its_files() {
    let mut s = store();
    let ids = append(
        &mut s,
        vec![
            user("first"),
            assistant("one", 10),
            user("second"),
            tool_call("read", "f.txt"),
            tool_result("content"),
            tool_call("edit", "g.txt"),
            tool_result("done"),
            assistant("answer", 20),
        ],
    );
    let prep = prepare(&s, 1).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[7]);
    assert!(prep.is_split_turn);
    assert_eq!(roles(&prep.messages_to_summarize), ["user", "assistant"]);
    assert_eq!(
        roles(&prep.turn_prefix_messages),
        ["user", "assistant", "toolResult", "assistant", "toolResult"]
    );
    let lists = prep.file_ops.lists();
    assert_eq!(lists.read_files, ["f.txt"]);
    assert_eq!(lists.modified_files, ["g.txt"]);
}

#[test]
fn a_tool_result_is_never_the_first_kept_message() {
    let mut s = store();
    let ids = append(
        &mut s,
        vec![
            user("q"),
            tool_call("read", "big.txt"),
            tool_result(&"y".repeat(4000)),
        ],
    );
    let prep = prepare(&s, 100).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[1]);
    assert!(prep.is_split_turn);
    assert_eq!(roles(&prep.turn_prefix_messages), ["user"]);
    assert!(prep.messages_to_summarize.is_empty());
}

#[test]
fn nothing_to_prepare_when_small_or_already_compacted() {
    let mut s = store();
    assert_eq!(prepare(&s, 1), None);
    assert_eq!(
        nothing_to_compact_reason(&s),
        "Nothing to compact (session too small)"
    );
    let ids = append(&mut s, vec![user("a"), assistant("b", 5)]);
    s.append_compaction(CompactionParams {
        summary: "S".into(),
        first_kept_entry_id: Some(ids[1].clone()),
        tokens_before: 5,
        ..CompactionParams::default()
    })
    .unwrap();
    assert_eq!(prepare(&s, 1), None);
    assert_eq!(nothing_to_compact_reason(&s), "Already compacted");
}

#[test]
fn a_second_compaction_builds_on_the_first_and_its_file_lists() {
    let mut s = store();
    let ids = append(&mut s, vec![user("a"), assistant("b", 5)]);
    s.append_compaction(CompactionParams {
        summary: "OLD".into(),
        first_kept_entry_id: Some(ids[1].clone()),
        tokens_before: 5,
        details: Some(json!({"readFiles": ["r.txt"], "modifiedFiles": ["m.txt"]})),
        from_hook: Some(false),
        usage: None,
    })
    .unwrap();
    let more = append(&mut s, vec![user("c"), assistant("d", 9)]);
    let prep = prepare(&s, 1).unwrap();
    assert_eq!(prep.previous_summary.as_deref(), Some("OLD"));
    assert_eq!(prep.first_kept_entry_id, more[1]);
    // The kept assistant of the first compaction comes first in the new history.
    assert_eq!(roles(&prep.messages_to_summarize), ["assistant"]);
    let lists = prep.file_ops.lists();
    assert_eq!(lists.read_files, ["r.txt"]);
    assert_eq!(lists.modified_files, ["m.txt"]);
}

#[test]
fn an_omitted_failed_attempt_moves_the_cut_past_its_input() {
    let mut s = store();
    let mut failed = AssistantMessage::new("a", "p", "m", StopReason::Error, 4);
    failed.error_message = Some("prompt is too long".into());
    let ids = append(
        &mut s,
        vec![
            user("first"),
            assistant("one", 10),
            user("second"),
            AgentMessage::Assistant(failed),
        ],
    );
    s.append_context_edit(&ids[3], None).unwrap();
    let prep = prepare(&s, 1).unwrap();
    assert_eq!(prep.first_kept_entry_id, ids[3]);
    assert!(prep.is_split_turn);
    assert_eq!(roles(&prep.messages_to_summarize), ["user", "assistant"]);
    assert_eq!(roles(&prep.turn_prefix_messages), ["user"]);
    // The edit makes the last usage untrustworthy: a pure estimate.
    assert_eq!(prep.tokens_before, 2 + 1 + 2);
}

#[test]
fn context_usage_is_unknown_after_compaction_until_a_new_response() {
    let mut s = store();
    let model = pi_protocol::model::Model {
        context_window: 1000,
        ..pi_protocol::model::Model::placeholder()
    };
    let ids = append(&mut s, vec![user("a"), assistant("b", 100)]);
    let usage = context_usage(&s, &model).unwrap();
    assert_eq!((usage.tokens, usage.percent), (Some(100), Some(10.0)));
    s.append_compaction(CompactionParams {
        summary: "S".into(),
        first_kept_entry_id: Some(ids[1].clone()),
        tokens_before: 100,
        ..CompactionParams::default()
    })
    .unwrap();
    let usage = context_usage(&s, &model).unwrap();
    assert_eq!((usage.tokens, usage.percent), (None, None));
    append(&mut s, vec![user("c"), assistant("d", 50)]);
    assert_eq!(context_usage(&s, &model).unwrap().tokens, Some(50));
    let none = pi_protocol::model::Model::placeholder();
    assert_eq!(context_usage(&s, &none), None);
}

/// Records notices; answers requests from a script of final messages.
struct Script {
    replies: Mutex<Vec<AssistantMessage>>,
    requests: Mutex<Vec<LlmContext>>,
    notices: Mutex<Vec<RetryNotice>>,
}

impl RetryNotices for Script {
    fn notify<'a>(&'a self, notice: RetryNotice) -> BoxFuture<'a> {
        self.notices.lock().unwrap().push(notice);
        Box::pin(async {})
    }
}

fn reply(stop: StopReason, text: &str, error: Option<&str>, input: u64) -> AssistantMessage {
    let mut m = AssistantMessage::new("openai-completions", "p", "m", stop, 9);
    if !text.is_empty() {
        m.content = vec![AssistantBlock::Text(TextContent::new(text))];
    }
    m.error_message = error.map(str::to_string);
    *m.usage = Usage {
        input,
        total_tokens: input,
        ..Usage::zero()
    };
    m
}

async fn run(
    replies: Vec<AssistantMessage>,
    prep: &Preparation,
) -> (Result<String, String>, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into_iter().rev().collect()),
        requests: Mutex::new(Vec::new()),
        notices: Mutex::new(Vec::new()),
    });
    let s2 = script.clone();
    let stream: pi_agent::StreamFn = Arc::new(move |_m, ctx: LlmContext, _o: StreamOptions| {
        s2.requests.lock().unwrap().push(ctx);
        let message = s2.replies.lock().unwrap().pop().unwrap();
        let event = if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            StreamEvent::Error { message }
        } else {
            StreamEvent::Done { message }
        };
        AssistantStream::immediate(event)
    });
    let summarizer = Summarizer {
        stream,
        model: pi_protocol::model::Model::placeholder(),
        api_key: None,
        thinking_level: ThinkingLevel::Off,
        retry: RetryPolicy {
            enabled: true,
            max_retries: 2,
            base_delay_ms: 1,
            max_delay_ms: 10,
        },
        transport: pi_agent::RequestSettings::default(),
        cancel: CancellationToken::new(),
        notices: script.as_ref(),
    };
    let result = summarizer
        .compact(prep, None)
        .await
        .map(|r| r.summary)
        .map_err(|e| e.to_string());
    (result, script)
}

fn split_prep() -> Preparation {
    let mut s = store();
    append(
        &mut s,
        vec![
            user("first"),
            assistant("one", 10),
            user("second"),
            assistant("two", 12),
        ],
    );
    prepare(&s, 1).unwrap()
}

#[tokio::test]
async fn a_split_turn_joins_history_and_prefix_summaries_after_a_retry() {
    let prep = split_prep();
    let (result, script) = run(
        vec![
            reply(StopReason::Error, "", Some("503 overloaded"), 0),
            reply(StopReason::Stop, "## Goal\nG", None, 30),
            reply(StopReason::Stop, "## Original Request\nR", None, 5),
        ],
        &prep,
    )
    .await;
    assert_eq!(
        result.unwrap(),
        "## Goal\nG\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nR"
    );
    assert_eq!(
        *script.notices.lock().unwrap(),
        [
            RetryNotice::Scheduled {
                attempt: 1,
                max_attempts: 2,
                delay_ms: 1,
                error_message: "503 overloaded".into()
            },
            RetryNotice::AttemptStart,
            RetryNotice::Finished,
        ]
    );
    // Each request: the summarization system prompt and one user message, nothing else.
    for ctx in script.requests.lock().unwrap().iter() {
        assert_eq!(roles(&ctx.messages), ["system", "user"]);
    }
}

#[tokio::test]
async fn failures_use_pis_texts() {
    let prep = split_prep();
    let cases = [
        (
            vec![reply(StopReason::Error, "", Some("400 bad"), 0)],
            "Summarization failed: 400 bad",
        ),
        (
            vec![reply(StopReason::Length, "partial", None, 0)],
            "Summarization failed: generation hit the token cap and the summary is incomplete",
        ),
        (
            vec![
                reply(StopReason::Stop, "ok", None, 0),
                reply(StopReason::Error, "", None, 0),
            ],
            "Turn prefix summarization failed: Unknown error",
        ),
    ];
    for (replies, expected) in cases {
        assert_eq!(run(replies, &prep).await.0, Err(expected.to_string()));
    }
    let mut call = tool_call("read", "x");
    if let AgentMessage::Assistant(a) = &mut call {
        a.stop_reason = StopReason::Stop;
        assert_eq!(
            run(vec![a.clone()], &prep).await.0,
            Err("Summarization attempted to call a tool".to_string())
        );
    }
}

#[test]
fn combined_usage_puts_optional_splits_before_the_total() {
    let a = Usage {
        input: 1,
        output: 2,
        total_tokens: 3,
        cache_write_1h: Some(0),
        ..Usage::zero()
    };
    let b = Usage {
        input: 10,
        total_tokens: 10,
        ..Usage::zero()
    };
    assert_eq!(
        pi_js::json::to_js_string(&summarize::combine_usage(&a, &b)).unwrap(),
        r#"{"input":11,"output":2,"cacheRead":0,"cacheWrite":0,"cacheWrite1h":0,"totalTokens":13,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}}"#
    );
}
