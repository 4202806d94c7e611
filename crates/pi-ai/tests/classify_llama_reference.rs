//! `llama-cpp-classify` against a loopback stand-in for llama-server that tokenizes, renders
//! templates and ranks next tokens from fixed tables. The answers and the request sequence are
//! those Pi 1.6.0 produced against the same server, recorded independently of `classify_llama.rs`
//! (a label split into two tokens is looked up
//! alone; a label outside the first 256 ranked tokens is asked for 4096).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_ai::classify::{self, CallOptions};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

fn server(ranked_ok: bool) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(64) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let path = first.split(' ').nth(1).unwrap_or("").to_string();
            let (mut length, mut auth) = (0, None);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if lower.starts_with("authorization:") {
                    auth = Some(line[14..].trim().to_string());
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            s.lock().unwrap().push((path.clone(), auth, body.clone()));
            let out = match path.as_str() {
                "/tokenize" => {
                    let tokens = match body["content"].as_str().unwrap() {
                        "\n" => json!([{"id": 10, "piece": "\n"}]),
                        "\nA" => json!([10, 65]),
                        "\nB" => json!([10, 66]),
                        "\nYes" => json!([10, 100]),
                        "\nNo" => json!([10, 101, 102]),
                        "No" => json!([200]),
                        _ => json!([1, 2]),
                    };
                    json!({"tokens": tokens})
                }
                "/apply-template" => {
                    let len = body["messages"][1]["content"].as_str().unwrap().len();
                    json!({"prompt": format!("P({len})<think>")})
                }
                "/completion" => {
                    let mut top = vec![
                        json!({"id": 65, "logprob": -0.1, "token": "A"}),
                        json!({"id": 66, "logprob": -2.5}),
                        json!({"id": 100, "logprob": -0.3}),
                    ];
                    if ranked_ok && body["n_probs"].as_u64().unwrap() > 256 {
                        top.push(json!({"id": 200, "logprob": -1.5}));
                    }
                    json!({"completion_probabilities": [{"top_logprobs": top}]})
                }
                _ => json!({}),
            };
            let text = out.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

fn model(origin: &str) -> serde_json::Map<String, Value> {
    json!({"type": "classifier", "id": "qwen", "name": "qwen", "api": "llama-cpp-classify",
        "provider": "llama.cpp", "baseUrl": format!("{origin}/v1"), "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 1000})
    .as_object()
    .unwrap()
    .clone()
}

fn context() -> Value {
    json!({"state": {"a": [1]}, "questions": {
        "mood": {"type": "choice", "instructions": "Mood?", "criteria": {"happy": "smiles", "sad": ""}},
        "ok": {"type": "bool", "instructions": "Fine?", "criteria": {"true": "all good"}}}})
}

fn options() -> CallOptions {
    CallOptions {
        api_key: Some("k".into()),
        ..CallOptions::default()
    }
}

fn close(a: &Value, b: f64) {
    assert!((a.as_f64().unwrap() - b).abs() < 1e-12, "{a} vs {b}");
}

#[tokio::test]
async fn labels_are_read_from_next_token_probabilities() {
    let (origin, seen) = server(true);
    let r = classify::classify(&model(&origin), &context(), &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert_eq!(r["api"], "llama-cpp-classify");
    let mood = &r["answers"]["mood"];
    assert_eq!(mood["choice"], "happy");
    close(&mood["probabilities"]["happy"], 0.9168273035060777);
    close(&mood["probabilities"]["sad"], 0.08317269649392238);
    close(&mood["confidence"], 0.8336546070121553);
    assert_eq!(r["answers"]["ok"]["type"], "bool");
    close(&r["answers"]["ok"]["probability"], 0.7685247834990175);

    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|(_, auth, _)| auth.as_deref() == Some("Bearer k"))
    );
    let completions: Vec<&Value> = seen
        .iter()
        .filter(|(p, _, _)| p == "/completion")
        .map(|(_, _, b)| b)
        .collect();
    assert_eq!(
        completions.len(),
        3,
        "one readout, then one for Yes/No and a deeper one"
    );
    assert_eq!(
        *completions[0],
        json!({"model": "qwen", "prompt": "P(278)<think></think>", "n_predict": 1, "n_probs": 256,
               "post_sampling_probs": false, "cache_prompt": true, "temperature": 0})
    );
    assert_eq!(completions[2]["n_probs"], 4096);
    let template = seen
        .iter()
        .find(|(p, _, _)| p == "/apply-template")
        .unwrap();
    assert_eq!(
        template.2["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    assert!(
        seen.iter()
            .any(|(p, _, b)| p == "/tokenize" && b["content"] == "No")
    );
}

#[tokio::test]
async fn a_label_never_ranked_is_pi_error() {
    let (origin, _) = server(false);
    let mut m = model(&origin);
    // Another model id: the label cache is per server and model.
    m.insert("id".into(), json!("other"));
    let r = classify::classify(&m, &context(), &options()).await;
    assert_eq!(r["stopReason"], "error");
    assert_eq!(
        r["errorMessage"],
        "llama.cpp did not rank labels No for ok within the top 32768 tokens"
    );
    assert_eq!(r["answers"], json!({}));
}
