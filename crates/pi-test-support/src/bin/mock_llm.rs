//! `mock-llm <script.json> [--port N]`: serves a scripted mock LLM on 127.0.0.1 for manual runs.
//! The script is a JSON array of replies, or a scenario file (its `llm` array is used).
//! Prints `{"port":N}` first, then one JSON line per request received. Reads commands from stdin:
//! `open <gate>`; exits at stdin EOF.

use std::process::ExitCode;

use pi_test_support::mock::{MockLlm, Reply};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

fn load(path: &str) -> Result<Vec<Reply>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let list = match v {
        Value::Object(mut m) => m.remove("llm").unwrap_or(Value::Array(Vec::new())),
        other => other,
    };
    serde_json::from_value(list).map_err(|e| format!("{path}: {e}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: mock-llm <script.json>");
        return ExitCode::from(2);
    };
    let replies = match load(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mock = match MockLlm::start(replies).await {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", json!({"port": mock.port()}));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut printed = 0;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(l)) => {
                    if let Some(g) = l.trim().strip_prefix("open ") {
                        mock.open_gate(g.trim());
                    }
                }
                _ => break,
            },
            _ = tick.tick() => {}
        }
        let reqs = mock.requests();
        for r in &reqs[printed..] {
            println!(
                "{}",
                json!({"method": r.method, "path": r.path, "body": r.body})
            );
        }
        printed = reqs.len();
    }
    ExitCode::SUCCESS
}
