//! Picking values out of JSON lines without parsing them: the floors do no more than they
//! must, and the harness's own diagnostics need only a field or two.

/// The text between the first `start` and the next `end` after it.
pub fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// The raw (still escaped) value of the first `"name":"…"` string field; it ends at the next
/// quote, so values with escaped quotes are cut short.
pub fn string_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    between(text, &format!("\"{name}\":\""), "\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_spans() {
        let line = r#"{"id":"p","type":"prompt","message":"hi"}"#;
        assert_eq!(string_field(line, "type"), Some("prompt"));
        assert_eq!(string_field(line, "role"), None);
        assert_eq!(
            between("http://127.0.0.1:9/v1", "http://", "/"),
            Some("127.0.0.1:9")
        );
    }
}
