//! Runs prompts against a local model and prints the output, timings and memory: a probe for
//! prompt wording and the figures in the docs.
//!
//! `PI_LOCAL_STATS=1 cargo run -p pi-local --features llama --example probe -- [--tools] "question" ...`

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::{AssistantBlock, StringOrBlocks};
use pi_protocol::message::{AgentMessage, SystemMessage, UserMessage};
use pi_protocol::tool::Tool;
use serde_json::json;
use std::time::Instant;

fn rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let tools_on = args.first().is_some_and(|a| a == "--tools");
    if tools_on {
        args.remove(0);
    }
    let Some(model) = pi_local::default_model() else {
        eprintln!("model not installed: run scripts/setup-local-model");
        return;
    };
    let tools: Vec<Tool> = if tools_on {
        serde_json::from_value(json!([
            {"name": "ls", "description": "List directory contents.", "parameters": {"type": "object",
                "properties": {"path": {"type": "string", "description": "Directory to list"},
                "limit": {"type": "number", "description": "Maximum number of entries"}}}},
            {"name": "read", "description": "Read the contents of a file.", "parameters": {"type": "object",
                "required": ["path"], "properties": {"path": {"type": "string", "description": "Path to the file"}}}}
        ]))
        .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut system: SystemMessage = match serde_json::from_value(json!({"role": "system",
        "content": "You are a helpful coding assistant working in a project directory.", "timestamp": 1}))
    {
        Ok(s) => s,
        Err(e) => return eprintln!("{e}"),
    };
    system.tools_added = Some(tools);
    for question in args {
        let messages = vec![
            AgentMessage::System(system.clone()),
            AgentMessage::User(UserMessage::new(StringOrBlocks::Text(question.clone()), 1)),
        ];
        let started = Instant::now();
        let mut stream = pi_local::stream(
            &model,
            LlmContext::from_messages(messages),
            StreamOptions::default(),
        );
        let mut first = None;
        println!("> {question}");
        while let Some(ev) = stream.next().await {
            match ev {
                StreamEvent::TextDelta { .. } | StreamEvent::ToolcallStart { .. } => {
                    first.get_or_insert(started.elapsed());
                }
                StreamEvent::Done { message } | StreamEvent::Error { message } => {
                    for block in &message.content {
                        match block {
                            AssistantBlock::Text(t) => println!("{}", t.text),
                            AssistantBlock::ToolCall(c) => {
                                println!("CALL {} {:?}", c.name, c.arguments)
                            }
                            AssistantBlock::Thinking(_) => {}
                        }
                    }
                    println!(
                        "[{:?}; first token after {:?}, total {:?}; usage in {} out {}; {}]",
                        message.stop_reason,
                        first,
                        started.elapsed(),
                        message.usage.input,
                        message.usage.output,
                        rss()
                    );
                }
                _ => {}
            }
        }
    }
}
