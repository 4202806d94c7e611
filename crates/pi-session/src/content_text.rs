//! pi-ai's `contentText` over raw JSON content, as session listing and queries read it.

use serde_json::Value;

/// `contentText(content, sep)` of pi-ai for a raw JSON content value: a string as is, otherwise
/// the `text` of the `type:"text"` blocks joined with `sep`. `None` for shapes where JavaScript
/// would throw (not a string or an array).
pub fn raw_content_text(content: &Value, sep: &str) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<String> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .map(|b| match b.get("text") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                })
                .collect();
            Some(texts.join(sep))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_text_joins_text_blocks() {
        let c = json!([{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]);
        assert_eq!(raw_content_text(&c, "").as_deref(), Some("ab"));
        assert_eq!(raw_content_text(&json!("s"), "").as_deref(), Some("s"));
        assert_eq!(raw_content_text(&json!(5), ""), None);
    }
}
