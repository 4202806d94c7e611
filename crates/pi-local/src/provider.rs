//! The `llama-cpp` API: a request becomes an engine job; the engine's text becomes Pi's stream
//! events (`text_*` for an answer, `toolcall_*` and a `toolUse` stop for a call).

use crate::engine::{self, EngineEvent, Finish, Job, Settings, Stats};
use crate::grammar::{text_grammar, tool_grammar};
use crate::paths::resolve_model_path;
use crate::prompt;
use crate::protocol::{OutputParser, Parsed, Piece};
use pi_ai::output::Output;
use pi_ai::request::setup_error;
use pi_ai::tool_args::{parse_tool_call_arguments, partial_arguments};
use pi_ai::{AssistantStream, LlmContext, StreamEvent, StreamOptions};
use pi_js::now_ms;
use pi_protocol::content::{AssistantBlock, TextContent, ToolCall};
use pi_protocol::model::Model;
use pi_protocol::usage::StopReason;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Set to print one line of timings per request on stderr.
pub const STATS_ENV: &str = "PI_LOCAL_STATS";
/// Threads for models that do not set `samplingParams.threads`.
pub const THREADS_ENV: &str = "PI_LOCAL_THREADS";

/// Streams one response from a local model (the counterpart of `pi_ai::stream` for
/// [`crate::API`]). Must be called inside a Tokio runtime.
pub fn stream(model: &Model, context: LlmContext, options: StreamOptions) -> AssistantStream {
    let started = Instant::now();
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return AssistantStream::immediate(setup_error(
            model,
            "No Tokio runtime to run the request on".into(),
            started,
            now_ms(),
        ));
    };
    let (tx, rx) = AssistantStream::channel();
    let model = model.clone();
    let out = Output::new(&model, &model.api, tx, started);
    handle.spawn(run(model, context, options, out));
    rx
}

/// The error for a model whose weights are missing: says how to get them.
pub fn missing_model_message(model: &Model, path: Option<&Path>) -> String {
    let shown = path.map_or_else(|| model.base_url.clone(), |p| p.display().to_string());
    if model.id == crate::DEFAULT_MODEL_ID {
        format!(
            "Local model file not found: {shown}. Install it with scripts/setup-local-model (from the pi source tree), or set an API key for another provider."
        )
    } else {
        format!(
            "Local model file not found: {shown}. Point the model's baseUrl in models.json at a GGUF file."
        )
    }
}

fn param<'a>(model: &'a Model, keys: &[&str]) -> Option<&'a Value> {
    let params = model.sampling_params.as_ref()?;
    keys.iter().find_map(|k| params.get(*k))
}

/// Between what SmolLM2-135M gives a call on requests that want one (10-15%) and on questions
/// (0.2-3%), with the example exchanges of [`crate::shots`].
const DEFAULT_TOOL_THRESHOLD: f64 = 0.05;

/// Engine settings: `samplingParams` of the model (`threads`, `temperature`, `topK`, `topP`,
/// `seed`, `repeatPenalty`, `toolThreshold`), the request's temperature winning over the
/// model's. Threads default to `PI_LOCAL_THREADS`, else all available CPUs but one. (Two more
/// `samplingParams` shape the prompt: `toolExamples` and `maxToolRounds`, see `run`.)
pub fn settings(model: &Model, options: &StreamOptions) -> Settings {
    let num = |keys: &[&str]| param(model, keys).and_then(Value::as_f64);
    let threads = num(&["threads"])
        .filter(|n| *n >= 1.0)
        .map(|n| n as usize)
        .or_else(|| {
            std::env::var(THREADS_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n >= 1)
        })
        .unwrap_or_else(default_threads);
    Settings {
        context_window: u32::try_from(model.context_window).unwrap_or(u32::MAX),
        threads,
        temperature: options
            .temperature
            .or_else(|| num(&["temperature"]))
            .unwrap_or(0.0) as f32,
        top_k: num(&["topK", "top_k"]).unwrap_or(40.0) as i32,
        top_p: num(&["topP", "top_p"]).unwrap_or(0.95) as f32,
        seed: num(&["seed"]).unwrap_or(0.0) as u32,
        repeat_penalty: num(&["repeatPenalty", "repeat_penalty"]).unwrap_or(1.1) as f32,
        tool_threshold: num(&["toolThreshold"]).unwrap_or(DEFAULT_TOOL_THRESHOLD) as f32,
    }
}

/// Every available CPU but one. llama.cpp's OpenMP threads wait for each other at every
/// operation, so one preempted thread stalls all: with both cores of a 2-core machine in use
/// while other work ran, decoding fell from ~42 to ~4 tokens/s. The spare core also keeps the
/// agent itself (tools, the event stream) responsive.
fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .saturating_sub(1)
        .max(1)
}

fn call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}{n:04x}", now_ms())
}

/// The blocks of the message as they stream: at most one text block or one tool call.
struct Blocks {
    parser: OutputParser,
    /// Arguments JSON of the open call so far.
    args: String,
}

impl Blocks {
    async fn apply(&mut self, piece: Piece, out: &mut Output) {
        let index = out.msg.content.len().saturating_sub(1);
        let usage = out.usage();
        let ev = match piece {
            Piece::TextStart => {
                out.msg
                    .content
                    .push(AssistantBlock::Text(TextContent::new("")));
                StreamEvent::TextStart {
                    index: out.msg.content.len() - 1,
                    usage,
                }
            }
            Piece::Text(delta) => {
                if let Some(AssistantBlock::Text(t)) = out.msg.content.last_mut() {
                    t.text.push_str(&delta);
                }
                StreamEvent::TextDelta {
                    index,
                    delta,
                    usage,
                }
            }
            Piece::CallStart { name } => {
                let id = call_id();
                let call = ToolCall::new(id.clone(), name.clone(), Default::default());
                out.msg.content.push(AssistantBlock::ToolCall(call));
                StreamEvent::ToolcallStart {
                    index: out.msg.content.len() - 1,
                    id,
                    name,
                    usage,
                }
            }
            Piece::CallArgs(delta) => {
                self.args.push_str(&delta);
                if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.last_mut() {
                    tc.arguments = partial_arguments(&self.args);
                }
                StreamEvent::ToolcallDelta {
                    index,
                    delta,
                    usage,
                }
            }
        };
        out.emit(ev).await;
    }

    /// Ends the open block; returns whether it was a complete tool call.
    async fn close(mut self, out: &mut Output) -> bool {
        if let Some(piece) = self.parser.flush() {
            self.apply(piece, out).await;
        }
        let parsed = self.parser.finish();
        let Some(index) = out.msg.content.len().checked_sub(1) else {
            if let Parsed::Malformed(text) = parsed {
                // Cannot happen under the grammar; show the text rather than lose it.
                out.msg
                    .content
                    .push(AssistantBlock::Text(TextContent::new(text.clone())));
                let usage = out.usage();
                out.emit(StreamEvent::TextStart { index: 0, usage }).await;
                let usage = out.usage();
                out.emit(StreamEvent::TextEnd {
                    index: 0,
                    content: text,
                    signature: None,
                    usage,
                })
                .await;
            }
            return false;
        };
        let usage = out.usage();
        match out.msg.content.get_mut(index) {
            Some(AssistantBlock::Text(t)) => {
                let content = t.text.clone();
                out.emit(StreamEvent::TextEnd {
                    index,
                    content,
                    signature: None,
                    usage,
                })
                .await;
                false
            }
            Some(AssistantBlock::ToolCall(tc)) => {
                let complete = matches!(parsed, Parsed::Call { complete: true, .. });
                let (arguments, error) = parse_tool_call_arguments(&self.args);
                tc.arguments = arguments;
                tc.arguments_error = error;
                let tool_call = tc.clone();
                out.emit(StreamEvent::ToolcallEnd {
                    index,
                    tool_call,
                    usage,
                })
                .await;
                complete
            }
            _ => false,
        }
    }
}

fn set_usage(out: &mut Output, input: u64, output: u64) {
    let u = &mut out.msg.usage;
    u.input = input;
    u.output = output;
    u.total_tokens = input + output;
}

fn log_stats(stats: &Stats) {
    // A job cancelled before it ran has nothing to report.
    if std::env::var_os(STATS_ENV).is_none() || stats.prompt_tokens == 0 {
        return;
    }
    let rate = |n: usize, ms: u64| n as f64 * 1000.0 / ms.max(1) as f64;
    let evaluated = stats.prompt_tokens - stats.reused_tokens;
    eprintln!(
        "pi-local: load {} ms; prompt {} tokens ({} reused), {} evaluated in {} ms ({:.0} tok/s); {} generated in {} ms ({:.1} tok/s){}",
        stats.load_ms.map_or("-".into(), |m| m.to_string()),
        stats.prompt_tokens,
        stats.reused_tokens,
        evaluated,
        stats.prefill_ms,
        rate(evaluated, stats.prefill_ms),
        stats.output_tokens,
        stats.decode_ms,
        rate(stats.output_tokens, stats.decode_ms),
        stats
            .call_probability
            .map_or(String::new(), |p| format!("; P(call) {p:.4}")),
    );
}

/// Runs one request. `samplingParams.maxToolRounds` caps the assistant turns with calls after
/// a user message: past it the model must answer in text (a tiny model otherwise repeats its
/// call forever).
pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let path = resolve_model_path(&model.base_url).filter(|p| p.is_file());
    let Some(path) = path else {
        let shown = resolve_model_path(&model.base_url);
        return out
            .setup_fail(missing_model_message(&model, shown.as_deref()))
            .await;
    };
    let examples = param(&model, &["toolExamples"]).and_then(Value::as_bool) != Some(false);
    let prompt = prompt::render(&model, &context, examples);
    let tools = !prompt.tools.is_empty();
    let max_rounds = param(&model, &["maxToolRounds"]).and_then(Value::as_u64);
    let allow_calls = tools && max_rounds.is_none_or(|m| (prompt.tool_rounds as u64) < m);
    let grammar = match (tools, allow_calls) {
        (false, _) => None,
        (true, true) => Some(tool_grammar(&prompt.tools)),
        // The tools stay declared (the prompt prefix, and its KV cache, stay the same).
        (true, false) => Some(text_grammar()),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    // The engine watches this token; dropping this task (the consumer gave up) trips it too.
    let engine_cancel = options.cancel.child_token();
    let _stop_engine = engine_cancel.clone().drop_guard();
    engine::submit(Job {
        path,
        settings: settings(&model, &options),
        turns: prompt.turns,
        grammar,
        allow_calls,
        max_tokens: u32::try_from(options.max_tokens.unwrap_or(model.max_tokens).max(1))
            .unwrap_or(u32::MAX),
        cancel: engine_cancel.clone(),
        events: tx,
    });
    relay(rx, &options.cancel, &engine_cancel, tools, out).await;
}

/// Turns the engine's events into stream events until the response ends. `tools`: whether
/// the output may be a call (the request declared tools). `cancel` is the request's abort;
/// `engine` stops generation early when the answer is over.
async fn relay(
    mut rx: mpsc::UnboundedReceiver<EngineEvent>,
    cancel: &CancellationToken,
    engine: &CancellationToken,
    tools: bool,
    mut out: Output,
) {
    let mut blocks = Blocks {
        parser: OutputParser::new(tools),
        args: String::new(),
    };
    let mut started = false;
    let mut input = 0;
    let mut generated = 0;
    loop {
        let event = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            ev = rx.recv() => Some(ev),
        };
        let event = match event {
            // Aborted: the engine stops at its next token; the stream ends now.
            None => Some(EngineEvent::Finished {
                reason: Finish::Cancelled,
                stats: Stats::default(),
            }),
            Some(ev) => ev,
        };
        match event {
            Some(EngineEvent::Prompt { tokens }) => {
                input = tokens as u64;
                set_usage(&mut out, input, 0);
                if !started {
                    started = true;
                    out.start().await;
                }
            }
            Some(EngineEvent::Text(text)) => {
                generated += 1;
                set_usage(&mut out, input, generated);
                for piece in blocks.parser.push(&text) {
                    blocks.apply(piece, &mut out).await;
                }
                if blocks.parser.ended() {
                    engine.cancel();
                }
                if out.gone() {
                    return;
                }
            }
            Some(EngineEvent::Finished { reason, stats }) => {
                log_stats(&stats);
                if stats.output_tokens > 0 || reason != Finish::Cancelled {
                    set_usage(&mut out, input, stats.output_tokens as u64);
                }
                // Stopped by us at the end of the answer, not aborted.
                let reason = match reason {
                    Finish::Cancelled if blocks.parser.ended() && !cancel.is_cancelled() => {
                        Finish::EndOfTurn
                    }
                    other => other,
                };
                let call = blocks.close(&mut out).await;
                out.msg.stop_reason = match reason {
                    Finish::Cancelled => {
                        return out.fail(true, "Request was aborted".into()).await;
                    }
                    Finish::Length => StopReason::Length,
                    Finish::EndOfTurn if call => StopReason::ToolUse,
                    Finish::EndOfTurn => StopReason::Stop,
                };
                return out.done().await;
            }
            Some(EngineEvent::Failed(message)) => {
                blocks.close(&mut out).await;
                return out.fail(false, message).await;
            }
            None => {
                blocks.close(&mut out).await;
                return out
                    .fail(false, "The local model worker stopped unexpectedly".into())
                    .await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model() -> Model {
        crate::catalog::local_model("m", "M", "/m.gguf")
    }

    /// The stream events for a scripted engine run, terminal message last.
    async fn replay(events: Vec<EngineEvent>, tools: bool, cancelled: bool) -> Vec<StreamEvent> {
        let (etx, erx) = mpsc::unbounded_channel();
        for e in events {
            etx.send(e).unwrap();
        }
        drop(etx);
        let (tx, mut stream) = AssistantStream::channel();
        let model = model();
        let out = Output::new(&model, &model.api, tx, Instant::now());
        let cancel = CancellationToken::new();
        if cancelled {
            cancel.cancel();
        }
        relay(erx, &cancel, &CancellationToken::new(), tools, out).await;
        let mut got = Vec::new();
        while let Some(ev) = stream.next().await {
            got.push(ev);
        }
        got
    }

    fn finished(reason: Finish, output_tokens: usize) -> EngineEvent {
        EngineEvent::Finished {
            reason,
            stats: Stats {
                output_tokens,
                ..Stats::default()
            },
        }
    }

    fn summary(events: &[StreamEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                StreamEvent::Start { .. } => "start".into(),
                StreamEvent::TextStart { index, .. } => format!("text_start {index}"),
                StreamEvent::TextDelta { delta, .. } => format!("text_delta {delta}"),
                StreamEvent::TextEnd { content, .. } => format!("text_end {content}"),
                StreamEvent::ToolcallStart { name, .. } => format!("toolcall_start {name}"),
                StreamEvent::ToolcallDelta { delta, .. } => format!("toolcall_delta {delta}"),
                StreamEvent::ToolcallEnd { tool_call, .. } => format!(
                    "toolcall_end {} {}",
                    tool_call.name,
                    Value::Object(tool_call.arguments.clone())
                ),
                StreamEvent::Done { message } | StreamEvent::Error { message } => format!(
                    "end {:?} {}/{}/{} {}",
                    message.stop_reason,
                    message.usage.input,
                    message.usage.output,
                    message.usage.total_tokens,
                    message.error_message.clone().unwrap_or_default()
                ),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn text_streams_as_text_events_and_ends_with_stop_and_token_usage() {
        let events = replay(
            vec![
                EngineEvent::Prompt { tokens: 12 },
                EngineEvent::Text("Par".into()),
                EngineEvent::Text("is.".into()),
                finished(Finish::EndOfTurn, 3),
            ],
            true,
            false,
        )
        .await;
        assert_eq!(
            summary(&events),
            vec![
                "start",
                "text_start 0",
                "text_delta Par",
                "text_delta is.",
                "text_end Paris.",
                "end Stop 12/3/15 ",
            ]
        );
    }

    #[tokio::test]
    async fn a_call_streams_its_arguments_and_ends_with_tool_use() {
        let events = replay(
            vec![
                EngineEvent::Prompt { tokens: 40 },
                EngineEvent::Text("<tool_call>\n{\"name\": \"ls\", \"arguments\": ".into()),
                EngineEvent::Text("{\"path\": \".\"}".into()),
                EngineEvent::Text("}\n</tool_call>".into()),
                finished(Finish::EndOfTurn, 9),
            ],
            true,
            false,
        )
        .await;
        assert_eq!(
            summary(&events),
            vec![
                "start",
                "toolcall_start ls",
                "toolcall_delta {\"path\": \".\"}",
                &format!("toolcall_end ls {}", json!({"path": "."})),
                "end ToolUse 40/9/49 ",
            ]
        );
        let Some(StreamEvent::ToolcallStart { id, .. }) = events.get(1) else {
            panic!()
        };
        assert!(id.starts_with("call_"));
    }

    #[tokio::test]
    async fn length_abort_and_a_vanished_engine_end_the_stream_as_pi_does() {
        let length = replay(
            vec![
                EngineEvent::Prompt { tokens: 4 },
                EngineEvent::Text("a".into()),
                finished(Finish::Length, 1),
            ],
            false,
            false,
        )
        .await;
        assert_eq!(summary(&length).last().unwrap(), "end Length 4/1/5 ");
        let aborted = replay(vec![EngineEvent::Prompt { tokens: 4 }], false, true).await;
        assert_eq!(
            summary(&aborted),
            vec!["end Aborted 0/0/0 Request was aborted"]
        );
        let vanished = replay(vec![EngineEvent::Prompt { tokens: 4 }], false, false).await;
        assert_eq!(
            summary(&vanished),
            vec![
                "start",
                "end Error 4/0/4 The local model worker stopped unexpectedly"
            ]
        );
    }
}
