//! Criterion micro-benchmarks of the hot paths, through the public APIs of the library crates:
//!
//! * `framing`: what the RPC loop does per line besides splitting it (the splitter,
//!   `LineSplitter`, lives in the binary crate and has no public API): `parse_js_json` +
//!   `decode_command` of an input line, and `to_js_line` of a response record.
//! * `sse`: `pi_ai::sse::SseDecoder` over an openai-completions stream, in socket-sized reads
//!   and one event per read.
//! * `event`: `to_js_string` of a `message_update` (`SessionEvent` and the borrowed
//!   `AgentEventRef` the agent uses).
//! * `session_line`: `parse_js_json` + `SessionEntry::from_map` of each kind of session line.
//! * `session_open`: `SessionStore::open` of a 16 MiB session like the one of `bench/run`
//!   (file in the page cache), and writing its context as `get_messages` does.
//! * `truncate`: `truncate_head` (read/grep output) and `truncate_tail` (bash output).
//! * `json_escape`: `push_json_str` of a source file (a newline every few dozen bytes, quotes),
//!   what every tool result costs in each event, session line and request that carries it.
//!
//! Run: `cargo bench -p pi-bench` (add a filter, e.g. `cargo bench -p pi-bench -- sse`).

// Bench code: a broken fixture should abort loudly, so unwrap/expect are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_ai::sse::SseDecoder;
use pi_bench::datagen::{self, Rng, sample_session_lines};
use pi_bench::mock::render;
use pi_js::json::{to_js_line, to_js_string};
use pi_js::parse::parse_js_json;
use pi_protocol::{
    AgentEventRef, Outcome, RpcResponse, SessionEntry, SessionEvent, Usage, UsageRef,
    WireAssistantEvent, decode_command,
};
use pi_session::SessionStore;
use pi_test_support::mock::Reply;
use pi_test_support::mock::script::{Chunks, Step};
use pi_tools::truncate::{Limits, truncate_head, truncate_tail};
use serde_json::{Value, json};

fn framing(c: &mut Criterion) {
    let mut g = c.benchmark_group("framing");
    let lines = [
        (
            "get_state",
            r#"{"id":"req-17","type":"get_state"}"#.to_string(),
        ),
        (
            "prompt_1KiB",
            json!({"id": "req-18", "type": "prompt", "message": "x".repeat(1024)}).to_string(),
        ),
    ];
    for (name, line) in &lines {
        g.throughput(Throughput::Bytes(line.len() as u64));
        g.bench_function(format!("decode_line/{name}"), |b| {
            b.iter(|| {
                let v = parse_js_json(black_box(line)).unwrap();
                black_box(decode_command(v))
            })
        });
    }
    let state = json!({"model": {"id": "mock-gpt", "name": "mock-gpt",
        "api": "openai-completions", "provider": "mock-openai", "baseUrl": "http://127.0.0.1:1/v1",
        "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 4096},
        "thinkingLevel": "off", "isStreaming": false, "isCompacting": false,
        "steeringMode": "one-at-a-time", "followUpMode": "one-at-a-time",
        "sessionId": "019b8c2e-4a10-7000-8000-00000000be9c", "autoCompactionEnabled": true,
        "messageCount": 0, "pendingMessageCount": 0});
    let response = RpcResponse::new(Some(json!("req-17")), "get_state", Outcome::Data(state));
    g.throughput(Throughput::Elements(1));
    g.bench_function("encode_response/get_state", |b| {
        b.iter(|| black_box(to_js_line(black_box(&response)).unwrap()))
    });
    g.finish();
}

fn sse(c: &mut Criterion) {
    let pieces: Vec<String> = (0..2000).map(|i| format!("w{} ", i % 1000)).collect();
    let events = render(&Reply::stream(vec![Step::Text(Chunks::Many(pieces))]), 1);
    let body: Vec<u8> = events.iter().flat_map(|e| e.bytes.bytes()).collect();
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("openai_2000_deltas/16KiB_reads", |b| {
        b.iter(|| {
            let mut d = SseDecoder::new();
            let mut n = 0;
            for chunk in body.chunks(16 * 1024) {
                n += d.push(black_box(chunk)).len();
            }
            n += d.finish().len();
            assert_eq!(n, events.len());
            n
        })
    });
    g.bench_function("openai_2000_deltas/one_event_per_read", |b| {
        b.iter(|| {
            let mut d = SseDecoder::new();
            let mut n = 0;
            for e in &events {
                n += d.push(black_box(e.bytes.as_bytes())).len();
            }
            n
        })
    });
    g.finish();
}

fn event(c: &mut Criterion) {
    let usage: Usage = serde_json::from_value(json!({"input": 2150, "output": 180,
        "cacheRead": 1900, "cacheWrite": 0, "reasoning": 0, "totalTokens": 4230,
        "cost": {"input": 0.0043, "output": 0.0027, "cacheRead": 0.00057, "cacheWrite": 0,
            "total": 0.00757, "totalFromProvider": false}}))
    .expect("Usage deserializes");
    let wire = WireAssistantEvent::TextDelta {
        content_index: 0,
        delta: Cow::Borrowed("Hello, wor"),
    };
    let owned = SessionEvent::MessageUpdate {
        usage: usage.clone(),
        assistant_message_event: wire.clone().into_owned(),
    };
    let mut g = c.benchmark_group("event");
    g.throughput(Throughput::Elements(1));
    g.bench_function("message_update/SessionEvent", |b| {
        b.iter(|| black_box(to_js_string(black_box(&owned)).unwrap()))
    });
    g.bench_function("message_update/AgentEventRef", |b| {
        b.iter(|| {
            let r = AgentEventRef::MessageUpdate {
                usage: UsageRef::Value(black_box(&usage)),
                assistant_message_event: black_box(&wire).clone(),
            };
            black_box(to_js_string(&r).unwrap())
        })
    });
    g.finish();
}

fn session_line(c: &mut Criterion) {
    // header, model_change, thinking_level_change, system, user, assistant tool call,
    // tool result (~2 KiB, the average of the 100 MiB bench session), assistant text.
    let lines = sample_session_lines(2048);
    let names = [
        "header",
        "model_change",
        "thinking_level_change",
        "system",
        "user",
        "assistant_tool_call",
        "tool_result_2KiB",
        "assistant_text",
    ];
    let mut g = c.benchmark_group("session_line");
    for (name, line) in names.iter().zip(&lines).skip(1) {
        g.throughput(Throughput::Bytes(line.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let Value::Object(map) = parse_js_json(black_box(line)).unwrap() else {
                    unreachable!("an entry is an object")
                };
                black_box(SessionEntry::from_map(map).unwrap())
            })
        });
    }
    // For scale: the parse alone, without building the entry.
    let result = &lines[6];
    g.throughput(Throughput::Bytes(result.len() as u64));
    g.bench_function("tool_result_2KiB/parse_js_json_only", |b| {
        b.iter(|| black_box(parse_js_json(black_box(result)).unwrap()))
    });
    g.finish();
}

fn session_open(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("pi-bench-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.jsonl");
    let mut g = datagen::SessionGen::new("/home/user/project");
    let mut text = g.header();
    text.push('\n');
    for line in g.preamble() {
        text.push_str(&line);
        text.push('\n');
    }
    while text.len() < 16 << 20 {
        text.push_str(&g.next_line(5500));
        text.push('\n');
    }
    std::fs::write(&file, &text).unwrap();
    let mut group = c.benchmark_group("session_open");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("open_16MiB", |b| {
        b.iter(|| black_box(SessionStore::open(&file, Some(&dir), None).unwrap()))
    });
    let store = SessionStore::open(&file, Some(&dir), None).unwrap();
    let messages = store.build_context().into_owned_messages();
    group.bench_function("get_messages_16MiB", |b| {
        let mut out = Vec::with_capacity(text.len() + 1024);
        b.iter(|| {
            out.clear();
            pi_js::json::write_js(&mut out, black_box(&messages)).unwrap();
            black_box(out.len())
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

fn truncate(c: &mut Criterion) {
    let mut rng = Rng::new(9);
    // A source file over both limits (3,000 lines, ~150 KiB) as `read` sees it.
    let file = datagen::code_file(&mut rng, 3000);
    // A megabyte of build-log-like bash output.
    let mut log = String::new();
    while log.len() < 1 << 20 {
        log.push_str(&datagen::code_line(&mut rng, 0));
        log.push('\n');
    }
    let mut g = c.benchmark_group("truncate");
    g.throughput(Throughput::Bytes(file.len() as u64));
    g.bench_function("head/150KiB_3000_lines", |b| {
        b.iter(|| black_box(truncate_head(black_box(&file), Limits::default())))
    });
    g.throughput(Throughput::Bytes(log.len() as u64));
    g.bench_function("tail/1MiB", |b| {
        b.iter(|| black_box(truncate_tail(black_box(&log), Limits::default())))
    });
    g.finish();
}

fn json_escape(c: &mut Criterion) {
    let mut rng = Rng::new(11);
    let file = datagen::code_file(&mut rng, 3000);
    let mut g = c.benchmark_group("json_escape");
    g.throughput(Throughput::Bytes(file.len() as u64));
    let mut out = String::with_capacity(2 * file.len());
    g.bench_function("source_150KiB", |b| {
        b.iter(|| {
            out.clear();
            pi_js::json_str::push_json_str(&mut out, black_box(&file));
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    json_escape,
    framing,
    sse,
    event,
    session_line,
    session_open,
    truncate
);
criterion_main!(benches);
