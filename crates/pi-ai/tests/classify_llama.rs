//! `llama-cpp-classify` against a llama-server stand-in on 127.0.0.1: the request sequence
//! (`/tokenize`, `/apply-template`, `/completion`), the label softmax, deeper readouts for
//! missing labels, and failures with Pi's texts.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_ai::classify::{self, CallOptions};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One scripted answer: status, extra headers, body.
type Answer = (u16, Vec<(String, String)>, String);

#[derive(Default)]
struct State {
    seen: Vec<Seen>,
    /// Answers for `/completion`, in order (questions go one at a time).
    completions: VecDeque<Answer>,
    /// Overrides the computed `/apply-template` answer.
    template: Option<Answer>,
    /// Tokens as `{id, piece}` objects instead of bare ids.
    token_objects: bool,
    /// `Yes` and `No` split into letters instead of one token each.
    split_words: bool,
}

/// A llama-server stand-in: `/tokenize` gives `Yes`/`No` one token each and every other
/// character its code point; `/apply-template` writes a prompt that opens a reasoning block.
struct Server {
    base: String,
    state: Arc<Mutex<State>>,
}

fn tokenize(text: &str, split_words: bool) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !split_words && rest.starts_with("Yes") {
            out.push(1000);
            rest = &rest[3..];
        } else if !split_words && rest.starts_with("No") {
            out.push(1001);
            rest = &rest[2..];
        } else {
            out.push(c as u64);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _ = serve(stream, &state).await;
                });
            }
        });
        Server { base, state }
    }

    fn completion(&self, status: u16, body: Value) {
        let answer = (status, Vec::new(), body.to_string());
        self.state.lock().unwrap().completions.push_back(answer);
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The `n_probs` of each `/completion` request, in order (how deep each readout went).
    fn completion_depths(&self) -> Vec<Value> {
        self.seen()
            .into_iter()
            .filter(|s| s.path == "/completion")
            .map(|s| s.body["n_probs"].clone())
            .collect()
    }

    fn paths(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.path).collect()
    }

    fn model(&self, id: &str) -> Map<String, Value> {
        json!({"type": "classifier", "id": id, "name": id, "api": "llama-cpp-classify",
            "provider": "llama.cpp", "baseUrl": format!("{}/v1/", self.base), "input": ["text"],
            "headers": {"X-Model": "m"}})
        .as_object()
        .cloned()
        .unwrap()
    }
}

async fn serve(stream: tokio::net::TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let (rd, mut wr) = stream.into_split();
    let mut reader = BufReader::new(rd);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).await?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, extra, text) = {
        let mut st = state.lock().unwrap();
        st.seen.push(Seen {
            path: path.clone(),
            headers,
            body: body.clone(),
        });
        match path.as_str() {
            "/tokenize" => {
                let ids = tokenize(body["content"].as_str().unwrap_or(""), st.split_words);
                let tokens: Vec<Value> = ids
                    .iter()
                    .map(|id| {
                        if st.token_objects {
                            json!({"id": id, "piece": "?"})
                        } else {
                            json!(id)
                        }
                    })
                    .collect();
                (200, Vec::new(), json!({"tokens": tokens}).to_string())
            }
            "/apply-template" => st.template.clone().unwrap_or_else(|| {
                let user = body["messages"][1]["content"].as_str().unwrap_or("");
                let prompt = format!("<|user|>{}<|assistant|>\n<think>", user.len());
                (200, Vec::new(), json!({"prompt": prompt}).to_string())
            }),
            "/completion" => st.completions.pop_front().unwrap_or((
                500,
                Vec::new(),
                "no completion scripted".into(),
            )),
            _ => (404, Vec::new(), "not found".into()),
        }
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        text.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    wr.write_all(head.as_bytes()).await?;
    wr.write_all(text.as_bytes()).await?;
    wr.shutdown().await
}

fn top(entries: &[(u64, f64)]) -> Value {
    let list: Vec<Value> = entries
        .iter()
        .map(|(id, l)| json!({"id": id, "token": "?", "logprob": l, "bytes": []}))
        .collect();
    json!({"content": "", "completion_probabilities": [{"id": 0, "logprob": 0, "top_logprobs": list}]})
}

fn options() -> CallOptions {
    CallOptions {
        api_key: Some("sk-local".into()),
        ..CallOptions::default()
    }
}

const A: u64 = 'A' as u64;
const B: u64 = 'B' as u64;

#[tokio::test]
async fn labels_are_tokenized_the_template_applied_and_the_readout_softmaxed() {
    let server = Server::start().await;
    // Equal label logprobs: an even split; an underflowed label: all on the other one.
    server.completion(200, top(&[(7, -0.1), (A, -2.0), (B, -2.0)]));
    server.completion(200, top(&[(1001, -1e30), (1000, -0.5)]));
    let context = json!({"state": {"text": "fine"}, "questions": {
        "mood": {"type": "choice", "instructions": "How?", "criteria": {"happy": "Glad", "sad": "Not"}},
        "ok": {"type": "bool", "instructions": "Approves?", "criteria": {"true": "Yes", "false": "No"}},
    }});
    let r = classify::classify(&server.model("qwen"), &context, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert_eq!(
        r["answers"],
        json!({
            "mood": {"type": "choice", "choice": "happy", "probabilities": {"happy": 0.5, "sad": 0.5}, "confidence": 0},
            "ok": {"type": "bool", "probability": 1},
        })
    );
    assert_eq!(
        (&r["api"], &r["provider"], &r["model"]),
        (
            &json!("llama-cpp-classify"),
            &json!("llama.cpp"),
            &json!("qwen")
        )
    );
    assert!(r.get("usage").is_none(), "llama-server reports no usage");

    let seen = server.seen();
    let count = |p: &str| seen.iter().filter(|s| s.path == p).count();
    // Two labels per question: "\n" and "\n<label>" each.
    assert_eq!(
        (
            count("/tokenize"),
            count("/apply-template"),
            count("/completion")
        ),
        (8, 2, 2)
    );
    let tokenize = seen.iter().find(|s| s.path == "/tokenize").unwrap();
    assert_eq!(tokenize.body["model"], "qwen");
    assert_eq!(tokenize.body["add_special"], false);
    assert_eq!(tokenize.body["parse_special"], false);
    assert_eq!(tokenize.header("authorization"), Some("Bearer sk-local"));
    assert_eq!(tokenize.header("content-type"), Some("application/json"));
    assert_eq!(tokenize.header("x-model"), Some("m"));
    assert!(tokenize.header("user-agent").unwrap().starts_with("pi/"));

    let template = seen.iter().find(|s| s.path == "/apply-template").unwrap();
    let user = template.body["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("State:\n{\n \"text\": \"fine\"\n}\n\nTask: answer each"));
    assert!(user.ends_with("Options:\nA. happy: Glad\nB. sad: Not\n\nAnswer with one letter."));
    assert_eq!(template.body["messages"][0]["role"], "system");
    assert!(
        template.body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You answer one question about the state.")
    );
    assert_eq!(
        template.body["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );

    let completion = seen.iter().find(|s| s.path == "/completion").unwrap();
    assert_eq!(
        completion.body,
        json!({"model": "qwen", "prompt": format!("<|user|>{}<|assistant|>\n<think></think>", user.len()),
            "n_predict": 1, "n_probs": 256, "post_sampling_probs": false, "cache_prompt": true, "temperature": 0})
    );
}

#[tokio::test]
async fn label_tokens_are_cached_and_token_objects_read() {
    let server = Server::start().await;
    server.state.lock().unwrap().token_objects = true;
    let zero = '0' as u64;
    server.completion(
        200,
        top(&[(zero, -1.0), (zero + 1, -1.0), (zero + 2, -1.0)]),
    );
    server.completion(
        200,
        top(&[(zero, -1.0), (zero + 1, -1.0), (zero + 2, -1.0)]),
    );
    let two_scores = json!({"state": 1, "questions": {
        "s": {"type": "score", "instructions": "Rate", "criteria": ["low", "mid", "high"]},
        "u": {"type": "score", "instructions": "Again", "criteria": ["low", "mid", "high"]},
    }});
    let r = classify::classify(&server.model("m"), &two_scores, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    let s = &r["answers"]["s"];
    assert_eq!(s["type"], "score");
    assert!((s["score"].as_f64().unwrap() - 1.0).abs() < 1e-12, "{s}");
    // The second question's labels come from the cache: six tokenizations in all.
    let tokenized = server.paths().iter().filter(|p| *p == "/tokenize").count();
    assert_eq!(tokenized, 6);
}

#[tokio::test]
async fn a_missing_label_is_read_again_deeper_then_reported() {
    let server = Server::start().await;
    server.completion(200, top(&[(A, -1.0)]));
    server.completion(200, top(&[(A, -1.0), (B, -1.0)]));
    let context = json!({"state": {}, "questions": {
        "q": {"type": "choice", "instructions": "?", "criteria": {"a": "", "b": ""}},
    }});
    let r = classify::classify(&server.model("m"), &context, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert_eq!(
        r["answers"]["q"]["probabilities"],
        json!({"a": 0.5, "b": 0.5})
    );
    let depths = server.completion_depths();
    assert_eq!(depths, vec![json!(256), json!(4096)]);

    let server = Server::start().await;
    for _ in 0..3 {
        server.completion(200, top(&[(A, -1.0)]));
    }
    let r = classify::classify(&server.model("m"), &context, &options()).await;
    assert_eq!(r["stopReason"], "error");
    assert_eq!(r["answers"], json!({}));
    assert_eq!(
        r["errorMessage"],
        "llama.cpp did not rank labels B for q within the top 32768 tokens"
    );
    let depths = server.completion_depths();
    assert_eq!(depths, vec![json!(256), json!(4096), json!(32768)]);
}

#[tokio::test]
async fn failures_carry_pis_texts() {
    let bool_question = json!({"state": "x", "questions": {
        "ok": {"type": "bool", "instructions": "Fine?", "criteria": {}},
    }});

    // Every label underflowed.
    let server = Server::start().await;
    server.completion(200, top(&[(1000, -1e30), (1001, -3e38)]));
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "m gave no probability to any answer label for ok"
    );

    // A label that is several tokens.
    let server = Server::start().await;
    server.state.lock().unwrap().split_words = true;
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "Label \"Yes\" is not a single token for m"
    );

    // An HTTP error with its body; 4xx is not retried.
    let server = Server::start().await;
    server.state.lock().unwrap().template =
        Some((400, Vec::new(), "{\"error\":\"no template\"}".into()));
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(r["stopReason"], "error");
    assert_eq!(
        r["errorMessage"],
        "llama.cpp error (400): {\"error\":\"no template\"}"
    );
    assert_eq!(
        server
            .paths()
            .iter()
            .filter(|p| *p == "/apply-template")
            .count(),
        1
    );

    // A 503 is retried after the delay the server names.
    let server = Server::start().await;
    {
        let mut st = server.state.lock().unwrap();
        st.completions.push_back((
            503,
            vec![("retry-after-ms".into(), "5".into())],
            "busy".into(),
        ));
    }
    server.completion(200, top(&[(1000, -1.0), (1001, -1.0)]));
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(
        r["answers"]["ok"],
        json!({"type": "bool", "probability": 0.5}),
        "{r}"
    );

    // No prompt in the template answer; no probabilities in the completion.
    let server = Server::start().await;
    server.state.lock().unwrap().template = Some((200, Vec::new(), "{}".into()));
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(r["errorMessage"], "llama.cpp did not return a prompt");
    let server = Server::start().await;
    server.completion(200, json!({"content": "x"}));
    let r = classify::classify(&server.model("m"), &bool_question, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "llama.cpp did not return token probabilities"
    );

    // Checked before any request: option counts, images, temperature.
    let server = Server::start().await;
    let one_option = json!({"state": 1, "questions": {
        "ok": {"type": "bool", "instructions": "?", "criteria": {}},
        "c": {"type": "choice", "instructions": "?", "criteria": {"only": ""}},
    }});
    let r = classify::classify(&server.model("m"), &one_option, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "A choice question needs 2 to 62 options, got 1"
    );
    let with_image = json!({"state": 1, "images": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        "questions": {"ok": {"type": "bool", "instructions": "?", "criteria": {}}}});
    let r = classify::classify(&server.model("m"), &with_image, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "llama.cpp classification does not support image input"
    );
    let cold = CallOptions {
        temperature: Some(0.0),
        ..options()
    };
    let r = classify::classify(&server.model("m"), &bool_question, &cold).await;
    assert_eq!(
        r["errorMessage"],
        "Temperature must be a positive number, got 0"
    );
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn no_key_sends_no_authorization_and_a_cancelled_call_is_aborted() {
    let server = Server::start().await;
    server.completion(200, top(&[(1000, -1.0), (1001, -1.0)]));
    let context = json!({"state": 1, "questions": {"ok": {"type": "bool", "instructions": "?", "criteria": {}}}});
    let r = classify::classify(&server.model("m"), &context, &CallOptions::default()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_none())
    );

    // Temperature 2 flattens: exp(-1/2) against exp(-3/2).
    let server = Server::start().await;
    server.completion(200, top(&[(1000, -1.0), (1001, -3.0)]));
    let warm = CallOptions {
        temperature: Some(2.0),
        ..options()
    };
    let r = classify::classify(&server.model("m"), &context, &warm).await;
    let p = r["answers"]["ok"]["probability"].as_f64().unwrap();
    let expected = 1.0 / (1.0 + (-1.0f64).exp());
    assert!((p - expected).abs() < 1e-12, "{p}");

    let cancel = CancellationToken::new();
    cancel.cancel();
    let aborted = CallOptions {
        cancel,
        ..options()
    };
    let r = classify::classify(&server.model("m"), &context, &aborted).await;
    assert_eq!(r["stopReason"], "aborted");
    assert_eq!(r["errorMessage"], "Request aborted");
}
