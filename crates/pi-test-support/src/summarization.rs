//! Recognizing a summarization request (compaction, branch summary) in a request body: no
//! `tools`, and a single user message laid out as the compaction spec fixes it (the conversation
//! first, in `<conversation>` tags or under `# Conversation`). The mock does not pace these (they
//! produce no records) and the normalizer blanks their text (the prompt is ours to write).

use serde_json::Value;

/// The text of a user message: a string, or its text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Whether `body` is a summarization request.
pub fn is_summarization_request(body: &Value) -> bool {
    if body.get("tools").is_some() {
        return false;
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return false;
    };
    let mut others = messages.iter().filter(|m| {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        role != "system" && role != "developer"
    });
    let (Some(only), None) = (others.next(), others.next()) else {
        return false;
    };
    if only.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    let text = only.get("content").map(text_of).unwrap_or_default();
    text.starts_with("<conversation>\n") || text.starts_with("# Conversation\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_toolless_single_user_requests_in_summary_layout_count() {
        let body = |text: &str, tools: bool| {
            let mut b = json!({"messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": text}]}
            ]});
            if tools {
                b["tools"] = json!([]);
            }
            b
        };
        assert!(is_summarization_request(&body(
            "<conversation>\n[User]: a",
            false
        )));
        assert!(is_summarization_request(&body(
            "# Conversation\n[User]: a",
            false
        )));
        assert!(!is_summarization_request(&body("<conversation>\n", true)));
        assert!(!is_summarization_request(&body("hello", false)));
    }
}
