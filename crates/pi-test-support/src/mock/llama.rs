//! The parts of llama.cpp's `llama-server` that classification reads and that depend on the
//! request: `POST /tokenize` with a tiny vocabulary (`Yes` and `No` are one token each, 1000 and
//! 1001; every other character is the token of its code point) and `POST /apply-template`, a
//! fixed chat template that opens a reasoning block. `/completion` readouts are scripted replies.

use serde_json::{Value, json};

/// The answer for `path`, or `None` when the path is not one of these endpoints.
pub fn answer(method: &str, path: &str, body: &Value) -> Option<Value> {
    if method != "POST" {
        return None;
    }
    match path {
        "/tokenize" => {
            let text = body["content"].as_str().unwrap_or("");
            Some(json!({ "tokens": tokenize(text) }))
        }
        "/apply-template" => {
            let mut prompt = String::new();
            for m in body["messages"].as_array().into_iter().flatten() {
                let role = m["role"].as_str().unwrap_or("");
                let content = m["content"].as_str().unwrap_or("");
                prompt.push_str(&format!("<|{role}|>\n{content}\n"));
            }
            prompt.push_str("<|assistant|>\n<think>");
            Some(json!({ "prompt": prompt }))
        }
        _ => None,
    }
}

pub fn tokenize(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let (token, len) = if rest.starts_with("Yes") {
            (1000, 3)
        } else if rest.starts_with("No") {
            (1001, 2)
        } else {
            (c as u64, c.len_utf8())
        };
        out.push(token);
        rest = &rest[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_characters() {
        assert_eq!(tokenize("\nYes"), vec![10, 1000]);
        assert_eq!(tokenize("NoA"), vec![1001, 65]);
    }
}
