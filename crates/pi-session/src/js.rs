//! The few JavaScript semantics session handling depends on: `String.prototype.trim`,
//! truthiness, `Number()` of a header `version`, and `contentText` of message content.

use serde_json::Value;

/// ECMAScript `WhiteSpace` and `LineTerminator` code points (what `trim()` removes).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `s.trim()`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `!!v`.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `Number(v)` for the primitive values a header `version` can hold (objects give `NaN`).
pub fn to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => {
            let t = js_trim(s);
            if t.is_empty() {
                0.0
            } else {
                t.parse::<f64>().unwrap_or(f64::NAN)
            }
        }
        Value::Array(a) if a.is_empty() => 0.0,
        Value::Array(a) if a.len() == 1 => to_number(&a[0]),
        _ => f64::NAN,
    }
}

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
    fn trim_and_truthiness() {
        assert_eq!(js_trim("\u{feff} a b\u{3000}\r\n"), "a b");
        assert!(!truthy(&json!("")));
        assert!(!truthy(&json!(0)));
        assert!(truthy(&json!([])));
        assert_eq!(to_number(&json!("3")), 3.0);
        assert!(to_number(&json!("x")).is_nan());
        assert_eq!(to_number(&json!(null)), 0.0);
    }

    #[test]
    fn content_text_joins_text_blocks() {
        let c = json!([{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]);
        assert_eq!(raw_content_text(&c, "").as_deref(), Some("ab"));
        assert_eq!(raw_content_text(&json!("s"), "").as_deref(), Some("s"));
        assert_eq!(raw_content_text(&json!(5), ""), None);
    }
}
