//! Failure texts as each reference SDK words them. They reach `errorMessage` on the wire and
//! feed the retry and overflow classifiers, so they follow Pi 1.6.0 exactly (recorded against
//! the reference: see `tests/fixtures/*/errors.json`).

use crate::http::{Body, ReadError, SendError};
use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use serde_json::Value;

/// Which SDK the reference used for an API; they word failures differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// The OpenAI SDK (`openai-completions`, `openai-responses`).
    OpenAi,
    Anthropic,
    Google,
}

/// Pi's cap on a quoted error body.
const MAX_BODY_CHARS: usize = 4000;

pub(crate) fn truncate(text: &str) -> String {
    let len = pi_js::utf16_len(text);
    if len <= MAX_BODY_CHARS {
        return text.to_string();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > MAX_BODY_CHARS {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!("{}... [truncated {} chars]", &text[..end], len - units)
}

fn js_stringify(v: &Value) -> String {
    to_js_string(v).unwrap_or_default()
}

/// The SDK's `APIError` message: `<status> <error.message | JSON(error) | text>`.
fn stainless_message(status: u16, error: Option<&Value>, text: &str) -> String {
    let msg = match error {
        Some(e) => match e.get("message") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(m) if pi_js::truthy(m) => js_stringify(m),
            _ if pi_js::truthy(e) => js_stringify(e),
            _ => String::new(),
        },
        None => text.to_string(),
    };
    if msg.is_empty() {
        format!("{status} status code (no body)")
    } else {
        format!("{status} {msg}")
    }
}

/// The OpenAI SDK's `APIError` message for a status error (what Pi quotes after "Server
/// requested …"): `<status> <error.message>`.
pub fn openai_sdk_message(status: u16, body: &str) -> String {
    let parsed = parse_js_json(body).ok();
    let error = parsed.as_ref().map(|v| match v.get("error") {
        Some(e) if !e.is_null() => e,
        _ => v,
    });
    stainless_message(status, error, body)
}

/// The Anthropic SDK's `APIError` message: `<status> <body as JSON>`.
pub fn anthropic_sdk_message(status: u16, body: &str) -> String {
    let parsed = parse_js_json(body).ok();
    stainless_message(status, parsed.as_ref(), body)
}

/// `<status>: <body>` for an HTTP error, as the OpenAI SDK path formats it (with Pi's
/// `<prefix> (<status>): ...` variant for the Responses API).
fn openai_status(status: u16, body: &str, prefix: Option<&str>) -> String {
    let parsed = parse_js_json(body).ok();
    let error = parsed.as_ref().map(|v| match v.get("error") {
        Some(e) if !e.is_null() => e,
        _ => v,
    });
    let message = stainless_message(status, error, body);
    let body = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(|e| truncate(pi_js::trim(&js_stringify(e))));
    match (body, prefix) {
        (Some(b), Some(p)) if !message.contains(&b) => format!("{p} ({status}): {b}"),
        (Some(b), None) if !message.contains(&b) => format!("{status}: {b}"),
        (_, Some(p)) => format!("{p} ({status}): {message}"),
        (_, None) => message,
    }
}

fn google_status(status: u16, body: &str, content_type: Option<&str>) -> String {
    if content_type.is_some_and(|c| c.contains("application/json")) {
        return match parse_js_json(body) {
            Ok(v) => js_stringify(&v),
            Err(e) => e,
        };
    }
    js_stringify(&serde_json::json!({
        "error": {"message": body, "code": status, "status": Body::status_text(status)}
    }))
}

/// The text of a request that got no streaming body; the bool says whether it was an abort.
pub fn send_error_text(sdk: Sdk, err: &SendError, prefix: Option<&str>) -> (bool, String) {
    let text = match err {
        SendError::Aborted => return (true, "Request aborted".to_string()),
        SendError::Client(t) => t.clone(),
        SendError::Status {
            status,
            body,
            content_type,
            ..
        } => match sdk {
            Sdk::OpenAi => openai_status(*status, body, prefix),
            Sdk::Anthropic => {
                let parsed = parse_js_json(body).ok();
                stainless_message(*status, parsed.as_ref(), body)
            }
            Sdk::Google => google_status(*status, body, content_type.as_deref()),
        },
        SendError::Connect(detail) => match sdk {
            Sdk::Google => format!("fetch failed: {detail}"),
            _ => format!("Connection error.: {detail}"),
        },
        SendError::HeadersTimeout => match sdk {
            Sdk::Google => {
                "fetch failed: Headers Timeout Error (UND_ERR_HEADERS_TIMEOUT)".to_string()
            }
            _ => "Request timed out.".to_string(),
        },
    };
    (false, text)
}

/// The text of a body read that failed (cancellation is handled per API by the caller).
pub fn read_error_text(err: &ReadError) -> String {
    match err {
        ReadError::Aborted => "This operation was aborted".to_string(),
        ReadError::Terminated(t) => t.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(sdk: Sdk, code: u16, body: &str, ct: Option<&str>, prefix: Option<&str>) -> String {
        let err = SendError::Status {
            status: code,
            body: body.into(),
            content_type: ct.map(String::from),
            headers: Vec::new(),
        };
        send_error_text(sdk, &err, prefix).1
    }

    #[test]
    fn http_errors_are_worded_per_sdk_as_recorded_from_pi() {
        let b = r#"{"error":{"message":"boom internal","type":"server_error","param":null,"code":null}}"#;
        assert_eq!(
            status(Sdk::OpenAi, 500, b, None, None),
            r#"500: {"message":"boom internal","type":"server_error","param":null,"code":null}"#
        );
        assert_eq!(
            status(Sdk::OpenAi, 503, "upstream unavailable", None, None),
            "503 upstream unavailable"
        );
        assert_eq!(
            status(Sdk::OpenAi, 502, "", None, None),
            "502 status code (no body)"
        );
        assert_eq!(
            status(
                Sdk::OpenAi,
                500,
                r#"{"message":"plain message"}"#,
                None,
                None
            ),
            r#"500: {"message":"plain message"}"#
        );
        assert_eq!(
            status(Sdk::OpenAi, 502, "", None, Some("or API error")),
            "or API error (502): 502 status code (no body)"
        );
        assert_eq!(
            status(Sdk::Anthropic, 500, b, None, None),
            format!("500 {b}")
        );
        assert_eq!(
            status(
                Sdk::Anthropic,
                500,
                r#"{"message":"plain message"}"#,
                None,
                None
            ),
            "500 plain message"
        );
        assert_eq!(
            status(
                Sdk::Google,
                503,
                "upstream unavailable",
                Some("text/plain"),
                None
            ),
            r#"{"error":{"message":"upstream unavailable","code":503,"status":"Service Unavailable"}}"#
        );
        assert_eq!(
            status(Sdk::Google, 400, b, Some("application/json"), None),
            b
        );
    }

    #[test]
    fn long_bodies_are_cut_at_4000_units() {
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(5000));
        let t = status(Sdk::OpenAi, 400, &long, None, None);
        assert!(
            t.ends_with("... [truncated 1014 chars]"),
            "{}",
            &t[t.len() - 40..]
        );
    }
}
