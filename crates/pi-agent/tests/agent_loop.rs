//! The loop's event order for text, tools (parallel and sequential), steering, follow-ups,
//! abort and `length` stops, driven by a scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_agent::agent::NoHooks;
use pi_agent::{
    Agent, AgentConfig, AgentEvent, AgentListener, AgentState, AgentTool, BoxFuture, ExecutionMode,
    RunHooks, ToolError, ToolFuture, ToolInvocation,
};
use pi_ai::{AssistantStream, LlmContext, StreamEvent, StreamOptions};
use pi_protocol::QueueMode;
use pi_protocol::SharedMessage;
use pi_protocol::content::{AssistantBlock, TextContent, ToolCall, UserBlock, UserContent};
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::{AgentToolResult, Tool};
use pi_protocol::usage::{StopReason, Usage};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted model response.
#[derive(Clone)]
enum Reply {
    Text(&'static str),
    Tools(Vec<(&'static str, &'static str, Value)>, StopReason),
    /// Streams `n` deltas slowly so a test can abort mid-stream.
    Slow(usize),
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<LlmContext>>,
}

fn model() -> Model {
    let mut m = Model::placeholder();
    m.id = "m".into();
    m.provider = "p".into();
    m.api = "faux".into();
    m
}

fn assistant(content: Vec<AssistantBlock>, stop: StopReason) -> AssistantMessage {
    let mut a = AssistantMessage::new("faux", "p", "m", stop, 1);
    a.content = content;
    a
}

fn stream(script: Arc<Script>) -> pi_agent::StreamFn {
    Arc::new(
        move |_model: &Model, ctx: LlmContext, opts: StreamOptions| {
            script.requests.lock().unwrap().push(ctx);
            let reply = script.replies.lock().unwrap().pop_front();
            let (tx, rx) = AssistantStream::channel();
            tokio::spawn(async move {
                let cancel = opts.cancel;
                if cancel.is_cancelled() {
                    let mut m = assistant(vec![], StopReason::Aborted);
                    m.error_message = Some("This operation was aborted".into());
                    tx.send(StreamEvent::Error { message: m }).await;
                    return;
                }
                let usage = Usage::zero();
                tx.send(StreamEvent::Start {
                    partial: assistant(vec![], StopReason::Pending),
                })
                .await;
                match reply.unwrap_or(Reply::Text("(no script)")) {
                    Reply::Text(t) => {
                        tx.send(StreamEvent::TextStart {
                            index: 0,
                            usage: usage.clone(),
                        })
                        .await;
                        tx.send(StreamEvent::TextDelta {
                            index: 0,
                            delta: t.into(),
                            usage: usage.clone(),
                        })
                        .await;
                        tx.send(StreamEvent::TextEnd {
                            index: 0,
                            content: t.into(),
                            signature: None,
                            usage,
                        })
                        .await;
                        let m = assistant(
                            vec![AssistantBlock::Text(TextContent::new(t))],
                            StopReason::Stop,
                        );
                        tx.send(StreamEvent::Done { message: m }).await;
                    }
                    Reply::Tools(calls, stop) => {
                        let mut content = Vec::new();
                        for (i, (id, name, args)) in calls.into_iter().enumerate() {
                            let args: Map<String, Value> =
                                args.as_object().cloned().unwrap_or_default();
                            let call = ToolCall::new(id, name, args);
                            tx.send(StreamEvent::ToolcallStart {
                                index: i,
                                id: id.into(),
                                name: name.into(),
                                usage: usage.clone(),
                            })
                            .await;
                            tx.send(StreamEvent::ToolcallEnd {
                                index: i,
                                tool_call: call.clone(),
                                usage: usage.clone(),
                            })
                            .await;
                            content.push(AssistantBlock::ToolCall(call));
                        }
                        tx.send(StreamEvent::Done {
                            message: assistant(content, stop),
                        })
                        .await;
                    }
                    Reply::Slow(n) => {
                        let mut text = String::new();
                        tx.send(StreamEvent::TextStart {
                            index: 0,
                            usage: usage.clone(),
                        })
                        .await;
                        for i in 0..n {
                            tokio::select! {
                                _ = cancel.cancelled() => {
                                    let mut m = assistant(vec![AssistantBlock::Text(TextContent::new(text))], StopReason::Aborted);
                                    m.error_message = Some("Request was aborted".into());
                                    tx.send(StreamEvent::Error { message: m }).await;
                                    return;
                                }
                                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                            }
                            let d = format!("{i} ");
                            text.push_str(&d);
                            tx.send(StreamEvent::TextDelta {
                                index: 0,
                                delta: d,
                                usage: usage.clone(),
                            })
                            .await;
                        }
                        tx.send(StreamEvent::Done {
                            message: assistant(
                                vec![AssistantBlock::Text(TextContent::new(text))],
                                StopReason::Stop,
                            ),
                        })
                        .await;
                    }
                }
            });
            rx
        },
    )
}

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    /// Every event itself (its messages are shared, so keeping them copies none).
    kept: Mutex<Vec<AgentEvent>>,
}

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.events.lock().unwrap())
    }
}

fn describe(event: &AgentEvent) -> String {
    match event {
        AgentEvent::MessageStart { .. } | AgentEvent::MessageEnd { .. } => {
            let m: &AgentMessage = match event {
                AgentEvent::MessageStart { message } => message,
                AgentEvent::MessageEnd { message } => message,
                _ => unreachable!(),
            };
            let what = match m {
                AgentMessage::User(u) => format!("user:{}", user_text(u)),
                AgentMessage::Assistant(a) => {
                    format!("assistant:{}:{}", a.stop_reason.as_str(), a.text())
                }
                AgentMessage::ToolResult(t) => {
                    format!("toolResult:{}:{}", t.tool_call_id, t.is_error)
                }
                AgentMessage::System(_) => "system".into(),
                other => other.role().to_string(),
            };
            format!("{} {what}", event.type_name())
        }
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("tool_start {tool_call_id}"),
        AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
            format!("tool_update {tool_call_id}")
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            duration_ms,
            result,
            ..
        } => {
            let text = match result.content.first() {
                Some(UserBlock::Text(t)) => t.text.clone(),
                _ => String::new(),
            };
            format!(
                "tool_end {tool_call_id} err={is_error} ran={} {text}",
                duration_ms.is_some()
            )
        }
        AgentEvent::TurnEnd { tool_results, .. } => {
            format!("turn_end results={}", tool_results.len())
        }
        AgentEvent::AgentEnd { messages } => format!("agent_end n={}", messages.len()),
        other => other.type_name().to_string(),
    }
}

fn user_text(u: &UserMessage) -> String {
    match &u.content {
        UserContent::Text(s) => s.clone(),
        UserContent::Blocks(b) => b
            .iter()
            .filter_map(|b| match b {
                UserBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect(),
    }
}

impl AgentListener for Recorder {
    fn on_event<'a>(&'a self, event: &'a AgentEvent) -> BoxFuture<'a> {
        let line = describe(event);
        if line != "message_update" {
            self.events.lock().unwrap().push(line);
        }
        self.kept.lock().unwrap().push(event.clone());
        Box::pin(async {})
    }
}

/// A tool that sleeps `ms`, sends one update, and answers its name; fails when cancelled.
struct SleepTool {
    decl: Tool,
    ms: u64,
    mode: ExecutionMode,
}

impl SleepTool {
    fn shared(name: &str, ms: u64) -> Arc<dyn AgentTool> {
        Arc::new(SleepTool {
            decl: decl(name),
            ms,
            mode: ExecutionMode::Parallel,
        })
    }
}

fn decl(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "description": "test tool", "parameters": {"type": "object", "properties": {}}})).unwrap()
}

impl AgentTool for SleepTool {
    fn declaration(&self) -> &Tool {
        &self.decl
    }
    fn execution_mode(&self) -> ExecutionMode {
        self.mode
    }
    fn execute(&self, inv: ToolInvocation) -> ToolFuture {
        let ms = self.ms;
        let name = self.decl.name.clone();
        Box::pin(async move {
            (inv.updates)(AgentToolResult::new(vec![]));
            tokio::select! {
                _ = inv.cancel.cancelled() => Err(ToolError::new("Command aborted")),
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                    Ok(AgentToolResult::new(vec![UserBlock::Text(TextContent::new(name))]))
                }
            }
        })
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::new(
        UserContent::Blocks(vec![UserBlock::Text(TextContent::new(text))]),
        1,
    ))
}

struct Harness {
    agent: Arc<Agent>,
    recorder: Arc<Recorder>,
    script: Arc<Script>,
}

fn harness(replies: Vec<Reply>, tools: Vec<Arc<dyn AgentTool>>, mode: ExecutionMode) -> Harness {
    hooked_harness(replies, tools, mode, Arc::new(NoHooks))
}

fn hooked_harness(
    replies: Vec<Reply>,
    tools: Vec<Arc<dyn AgentTool>>,
    mode: ExecutionMode,
    hooks: Arc<dyn RunHooks>,
) -> Harness {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        requests: Mutex::default(),
    });
    let recorder = Arc::new(Recorder::default());
    let config = AgentConfig {
        stream_fn: stream(Arc::clone(&script)),
        convert_to_llm: Arc::new(|m: &[SharedMessage]| m.to_vec()),
        listener: recorder.clone(),
        hooks,
        tool_execution: mode,
        session_id: None,
        max_tokens: None,
    };
    let state = AgentState {
        messages: vec![],
        model: model(),
        thinking_level: ThinkingLevel::Off,
        tools,
        error_message: None,
    };
    Harness {
        agent: Arc::new(Agent::new(config, state)),
        recorder,
        script,
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn plain_text_answer_emits_pi_order() {
    let h = harness(vec![Reply::Text("pong")], vec![], ExecutionMode::Parallel);
    h.agent.prompt(vec![user("ping")]).await.unwrap();
    assert_eq!(
        h.recorder.take(),
        strs(&[
            "agent_start",
            "turn_start",
            "message_start user:ping",
            "message_end user:ping",
            "message_start assistant:pending:",
            "message_end assistant:stop:pong",
            "turn_end results=0",
            "agent_end n=2",
        ])
    );
    assert_eq!(h.agent.messages().len(), 2);
    let last = h.agent.messages().pop().unwrap();
    let AgentMessage::Assistant(a) = &*last else {
        panic!()
    };
    assert_eq!(a.thinking_level, Some(ThinkingLevel::Off));
}

#[tokio::test]
async fn parallel_tools_end_in_completion_order_and_results_in_call_order() {
    let tools = vec![
        SleepTool::shared("slow", 150),
        SleepTool::shared("fast", 10),
    ];
    let calls = vec![
        ("c1", "slow", json!({})),
        ("c2", "fast", json!({})),
        ("c3", "missing", json!({})),
    ];
    let h = harness(
        vec![
            Reply::Tools(calls, StopReason::ToolUse),
            Reply::Text("done"),
        ],
        tools,
        ExecutionMode::Parallel,
    );
    h.agent.prompt(vec![user("go")]).await.unwrap();
    let events = h.recorder.take();
    // The first turn declares the tools on a system message before the user message.
    assert_eq!(
        events,
        strs(&[
            "agent_start",
            "turn_start",
            "message_start system",
            "message_end system",
            "message_start user:go",
            "message_end user:go",
            "message_start assistant:pending:",
            "message_end assistant:toolUse:",
            "tool_start c1",
            "tool_start c2",
            "tool_start c3",
            "tool_end c3 err=true ran=false Tool missing not found",
            "tool_update c1",
            "tool_update c2",
            "tool_end c2 err=false ran=true fast",
            "tool_end c1 err=false ran=true slow",
            "message_start toolResult:c1:false",
            "message_end toolResult:c1:false",
            "message_start toolResult:c2:false",
            "message_end toolResult:c2:false",
            "message_start toolResult:c3:true",
            "message_end toolResult:c3:true",
            "turn_end results=3",
            "turn_start",
            "message_start assistant:pending:",
            "message_end assistant:stop:done",
            "turn_end results=0",
            "agent_end n=7",
        ])
    );
    // The second request carries the tool results in call order.
    let second = &h.script.requests.lock().unwrap()[1];
    let ids: Vec<String> = second
        .messages
        .iter()
        .filter_map(|m| match &**m {
            AgentMessage::ToolResult(t) => Some(t.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, strs(&["c1", "c2", "c3"]));
}

#[tokio::test]
async fn sequential_mode_finishes_each_call_before_the_next() {
    let tools = vec![SleepTool::shared("slow", 50), SleepTool::shared("fast", 5)];
    let calls = vec![("c1", "slow", json!({})), ("c2", "fast", json!({}))];
    let h = harness(
        vec![Reply::Tools(calls, StopReason::ToolUse), Reply::Text("ok")],
        tools,
        ExecutionMode::Sequential,
    );
    h.agent.prompt(vec![user("go")]).await.unwrap();
    let events = h.recorder.take();
    let tool_part: Vec<&String> = events
        .iter()
        .filter(|e| e.starts_with("tool_") || e.contains("toolResult"))
        .collect();
    assert_eq!(
        tool_part,
        vec![
            "tool_start c1",
            "tool_update c1",
            "tool_end c1 err=false ran=true slow",
            "message_start toolResult:c1:false",
            "message_end toolResult:c1:false",
            "tool_start c2",
            "tool_update c2",
            "tool_end c2 err=false ran=true fast",
            "message_start toolResult:c2:false",
            "message_end toolResult:c2:false",
        ]
    );
}

#[tokio::test]
async fn length_stop_fails_every_call_without_running_it() {
    let tools = vec![SleepTool::shared("slow", 10)];
    let h = harness(
        vec![
            Reply::Tools(vec![("c1", "slow", json!({}))], StopReason::Length),
            Reply::Text("again"),
        ],
        tools,
        ExecutionMode::Parallel,
    );
    h.agent.prompt(vec![user("go")]).await.unwrap();
    let events = h.recorder.take();
    assert!(events.contains(&"tool_end c1 err=true ran=false Tool call \"slow\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.".to_string()), "{events:#?}");
    assert!(!events.iter().any(|e| e.starts_with("tool_update")));
    assert_eq!(events.last().unwrap(), "agent_end n=5");
}

#[tokio::test]
async fn steering_one_at_a_time_delivers_one_per_turn_and_all_delivers_together() {
    // Queued steering joins the prompt's first request; one-at-a-time leaves the rest for the next turn.
    for (mode, expect_requests) in [(QueueMode::OneAtATime, 2), (QueueMode::All, 1)] {
        let h = harness(
            vec![Reply::Text("a"), Reply::Text("b"), Reply::Text("c")],
            vec![],
            ExecutionMode::Parallel,
        );
        h.agent.set_steering_mode(mode);
        h.agent.steer(user("s1"));
        h.agent.steer(user("s2"));
        h.agent.prompt(vec![user("p")]).await.unwrap();
        assert_eq!(
            h.script.requests.lock().unwrap().len(),
            expect_requests,
            "{mode:?}"
        );
        let events = h.recorder.take();
        let users: Vec<&String> = events
            .iter()
            .filter(|e| e.starts_with("message_start user"))
            .collect();
        assert_eq!(
            users,
            vec![
                "message_start user:p",
                "message_start user:s1",
                "message_start user:s2"
            ]
        );
    }
}

#[tokio::test]
async fn follow_up_runs_after_the_agent_would_stop() {
    let h = harness(
        vec![Reply::Text("first"), Reply::Text("second")],
        vec![],
        ExecutionMode::Parallel,
    );
    h.agent.follow_up(user("later"));
    h.agent.prompt(vec![user("now")]).await.unwrap();
    let events = h.recorder.take();
    assert_eq!(
        events,
        strs(&[
            "agent_start",
            "turn_start",
            "message_start user:now",
            "message_end user:now",
            "message_start assistant:pending:",
            "message_end assistant:stop:first",
            "turn_end results=0",
            "turn_start",
            "message_start user:later",
            "message_end user:later",
            "message_start assistant:pending:",
            "message_end assistant:stop:second",
            "turn_end results=0",
            "agent_end n=4",
        ])
    );
}

#[tokio::test]
async fn abort_during_stream_ends_with_aborted_message() {
    let h = harness(vec![Reply::Slow(100)], vec![], ExecutionMode::Parallel);
    let agent = Arc::clone(&h.agent);
    let run = tokio::spawn(async move { agent.prompt(vec![user("long")]).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.agent.abort();
    tokio::time::timeout(Duration::from_secs(2), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let events = h.recorder.take();
    let end = events
        .iter()
        .find(|e| e.starts_with("message_end assistant"))
        .unwrap();
    assert!(end.starts_with("message_end assistant:aborted:0 "), "{end}");
    assert_eq!(
        &events[events.len() - 2..],
        &strs(&["turn_end results=0", "agent_end n=2"])[..]
    );
    assert!(!h.agent.is_running());
}

#[tokio::test]
async fn abort_during_tool_cancels_it_and_next_turn_is_aborted_before_any_request() {
    let tools = vec![SleepTool::shared("slow", 10_000)];
    let h = harness(
        vec![Reply::Tools(
            vec![("c1", "slow", json!({}))],
            StopReason::ToolUse,
        )],
        tools,
        ExecutionMode::Parallel,
    );
    let agent = Arc::clone(&h.agent);
    let run = tokio::spawn(async move { agent.prompt(vec![user("go")]).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.agent.abort();
    tokio::time::timeout(Duration::from_secs(2), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let events = h.recorder.take();
    let tail: Vec<&String> = events
        .iter()
        .skip_while(|e| !e.starts_with("tool_end"))
        .collect();
    assert_eq!(
        tail,
        vec![
            "tool_end c1 err=true ran=true Command aborted",
            "message_start toolResult:c1:true",
            "message_end toolResult:c1:true",
            "turn_end results=1",
            "turn_start",
            "message_start assistant:aborted:",
            "message_end assistant:aborted:",
            "turn_end results=0",
            "agent_end n=5",
        ]
    );
}

#[tokio::test]
async fn a_second_prompt_while_running_is_refused() {
    let h = harness(vec![Reply::Slow(20)], vec![], ExecutionMode::Parallel);
    let agent = Arc::clone(&h.agent);
    let run = tokio::spawn(async move { agent.prompt(vec![user("a")]).await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(
        h.agent.prompt(vec![user("b")]).await,
        Err(pi_agent::AgentError::AlreadyPrompting)
    );
    run.await.unwrap().unwrap();
}

/// Replaces the text of every tool result at `message_end`.
struct ReplaceResults;

impl RunHooks for ReplaceResults {
    fn message_end<'a>(&'a self, message: SharedMessage) -> BoxFuture<'a, SharedMessage> {
        Box::pin(async move {
            match &*message {
                AgentMessage::ToolResult(t) => {
                    let mut t = t.clone();
                    t.content = vec![UserBlock::Text(TextContent::new("replaced"))];
                    SharedMessage::new(AgentMessage::ToolResult(t))
                }
                _ => message,
            }
        })
    }
}

#[tokio::test]
async fn a_result_is_one_shared_message_from_its_end_on_with_the_hooks_replacement() {
    let calls = vec![("c1", "fast", json!({}))];
    let h = hooked_harness(
        vec![Reply::Tools(calls, StopReason::ToolUse), Reply::Text("ok")],
        vec![SleepTool::shared("fast", 1)],
        ExecutionMode::Parallel,
        Arc::new(ReplaceResults),
    );
    h.agent.prompt(vec![user("go")]).await.unwrap();
    let kept = std::mem::take(&mut *h.recorder.kept.lock().unwrap());
    let result_of = |m: &SharedMessage| match &**m {
        AgentMessage::ToolResult(t) => Some(match t.content.first() {
            Some(UserBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        }),
        _ => None,
    };
    let started = kept
        .iter()
        .find_map(|e| match e {
            AgentEvent::MessageStart { message } => result_of(message),
            _ => None,
        })
        .unwrap();
    assert_eq!(started, "fast", "message_start has the tool's own result");
    let ended = kept
        .iter()
        .find_map(|e| match e {
            AgentEvent::MessageEnd { message } => result_of(message).map(|_| message.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result_of(&ended).unwrap(), "replaced");
    let (turn_message, turn_results) = kept
        .iter()
        .find_map(|e| match e {
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => Some((message.clone(), tool_results.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(turn_results.len(), 1);
    assert!(SharedMessage::ptr_eq(&turn_results[0], &ended));
    let assistant_end = kept
        .iter()
        .find_map(|e| match e {
            AgentEvent::MessageEnd { message } if message.role() == "assistant" => {
                Some(message.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(SharedMessage::ptr_eq(&turn_message, &assistant_end));
    let Some(AgentEvent::AgentEnd { messages }) = kept.last() else {
        panic!("the run ends with agent_end")
    };
    assert!(messages.iter().any(|m| SharedMessage::ptr_eq(m, &ended)));
    assert!(
        messages
            .iter()
            .any(|m| SharedMessage::ptr_eq(m, &assistant_end))
    );
    assert!(
        h.agent
            .messages()
            .iter()
            .any(|m| SharedMessage::ptr_eq(m, &ended))
    );
    // The next request is built from the replaced result.
    let second = &h.script.requests.lock().unwrap()[1];
    assert!(
        second
            .messages
            .iter()
            .any(|m| SharedMessage::ptr_eq(m, &ended))
    );
}
