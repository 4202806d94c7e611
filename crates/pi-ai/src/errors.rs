//! Classifying failed responses: transient (worth retrying) and context overflow (worth
//! compacting), with Pi's pattern lists (`utils/retry.js`, `utils/overflow.js`).
//!
//! The `regex` crate has no look-around, so the few look-around alternatives are checked by
//! hand; everything else is one case-insensitive regex per list.

use pi_protocol::message::AssistantMessage;
use pi_protocol::usage::StopReason;
use regex::Regex;
use std::sync::OnceLock;

const NON_RETRYABLE: &str = r#"(?i)GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|insufficient_quota|out of budget|quota exceeded|billing|subscription_sharing_usage_limit_exceeded|subscription_sharing_workplace_individual_usage_limit_exceeded"#;

const RETRYABLE: &str = r#"(?i)overloaded|server_busy|servers are currently busy|currently experiencing high demand|model is at capacity|rate.?limit|too many requests|service.?(?:is.?)?(?:temporarily.?)?unavailable|server.?error|internal.?error|provider.?returned.?(?:an.?)?error|exceeded request buffer limit while retrying upstream|unable to forward upstream|upstream.?request.?failed|upstream_stream_read_error|stream was interrupted|http/?2 stream failed|network.?error|connection.?error|connection.?refused|connection.?lost|connection.?closed|other side closed|fetch failed|request to \S+ failed, reason:|getaddrinfo|connection reset by peer|ENOTFOUND|EAI_AGAIN|upstream.?connect|reset before headers|socket hang up|socket connection was closed|timed? out|timeout|terminated|websocket.?closed|websocket.?error|websocket.?connection.?limit.?reached|ended without|stream ended before message_stop|stream ended before a terminal response event|http2 request did not get a response|stream disconnected before completion|cut short after the reply had begun|pending stream has been canceled|retry delay|you can retry your request|try your request again|please retry your request|ResourceExhausted|subscription_sharing_usage_unavailable|subscription_sharing_user_unavailable"#;

const OVERFLOW: &str = r#"(?i)prompt (?:is )?too long|prompt exceeds max length|request_too_large|input is too long for requested model|exceeds the context window|exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))|context window exceeded|input token count.*exceeds the maximum|maximum prompt length is \d+|reduce the length of the messages|maximum context length is \d+ tokens|exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?|input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)|exceeds the limit of \d+|exceeds the available context size|greater than the context length|context window exceeds limit|exceeded model token limit|too large for model with \d+ maximum context length|prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?|model_context_window_exceeded|prompt too long; exceeded (?:max )?context length|range of input length should be|context[_ ]length[_ ]exceeded|too many tokens|token limit exceeded|^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))"#;

const NON_OVERFLOW: &str =
    r#"(?i)^(Throttling error|Service unavailable):|rate limit|too many requests"#;

const CEREBRAS_BODYLESS: &str = r#"(?i)^4(?:00|13)\s*(?:status code)?\s*\(no body\)"#;

struct Patterns {
    non_retryable: Regex,
    retryable: Regex,
    overflow: Regex,
    non_overflow: Regex,
    cerebras: Regex,
}

fn patterns() -> Option<&'static Patterns> {
    static P: OnceLock<Option<Patterns>> = OnceLock::new();
    P.get_or_init(|| {
        Some(Patterns {
            non_retryable: Regex::new(NON_RETRYABLE).ok()?,
            retryable: Regex::new(RETRYABLE).ok()?,
            overflow: Regex::new(OVERFLOW).ok()?,
            non_overflow: Regex::new(NON_OVERFLOW).ok()?,
            cerebras: Regex::new(CEREBRAS_BODYLESS).ok()?,
        })
    })
    .as_ref()
}

/// Whether `needle` occurs in `hay` (ASCII case-insensitively) with neither neighbour matching
/// `boundary` (a hand-written `(?<![..])needle(?![..])`).
fn bounded(hay: &str, needle: &str, boundary: fn(u8) -> bool) -> bool {
    let h = hay.as_bytes();
    let n = needle.len();
    (0..h.len().saturating_sub(n - 1)).any(|i| {
        h[i..i + n].eq_ignore_ascii_case(needle.as_bytes())
            && (i == 0 || !boundary(h[i - 1]))
            && (i + n == h.len() || !boundary(h[i + n]))
    })
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn alnum_underscore(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `"code"\s*:\s*"?1308(?![0-9])`: Z.ai's plan-limit code.
fn zai_limit_code(text: &str) -> bool {
    text.match_indices("\"code\"").any(|(i, m)| {
        let rest = pi_js::trim_start(&text[i + m.len()..]);
        let Some(rest) = rest.strip_prefix(':') else {
            return false;
        };
        let rest = pi_js::trim_start(rest);
        let rest = rest.strip_prefix('"').unwrap_or(rest);
        rest.strip_prefix("1308")
            .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Whether an error text looks like a transient provider or transport failure
/// (`isRetryableAssistantError` on the text alone).
pub fn is_retryable_error_text(text: &str) -> bool {
    let Some(p) = patterns() else { return false };
    if p.non_retryable.is_match(text) || zai_limit_code(text) {
        return false;
    }
    p.retryable.is_match(text)
        || ["429", "500", "502", "503", "504", "520", "524"]
            .iter()
            .any(|c| bounded(text, c, alnum))
        || [
            "ECONNRESET",
            "ECONNABORTED",
            "ECONNREFUSED",
            "ETIMEDOUT",
            "EPIPE",
        ]
        .iter()
        .any(|c| bounded(text, c, alnum_underscore))
}

/// `isRetryableAssistantError`: a failed (`error`) response with a retryable message.
pub fn is_retryable(message: &AssistantMessage) -> bool {
    message.stop_reason == StopReason::Error
        && message
            .error_message
            .as_deref()
            .is_some_and(|t| !t.is_empty() && is_retryable_error_text(t))
}

/// `isContextOverflow`: an overflow error text, or (with the context window known) a silent
/// overflow: a `stop` whose input exceeds the window, or a `length` with no output whose input
/// filled it.
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    if message.stop_reason == StopReason::Error
        && let (Some(text), Some(p)) = (
            message.error_message.as_deref().filter(|t| !t.is_empty()),
            patterns(),
        )
        && !p.non_overflow.is_match(text)
        && (p.overflow.is_match(text)
            || (message.provider == "cerebras" && p.cerebras.is_match(text)))
    {
        return true;
    }
    let Some(window) = context_window.filter(|w| *w > 0) else {
        return false;
    };
    let input = message.usage.input + message.usage.cache_read;
    match message.stop_reason {
        StopReason::Stop => input > window,
        StopReason::Length => message.usage.output == 0 && input as f64 >= window as f64 * 0.99,
        _ => false,
    }
}

/// `isRecoverableLength`: a `length` stop below the intended output limit.
pub fn is_recoverable_length(message: &AssistantMessage, desired_max_output: u64) -> bool {
    message.stop_reason == StopReason::Length
        && desired_max_output > 0
        && message.usage.output < desired_max_output
}

/// Pi's agent retry delay for attempt `n` (1-based): `base * 2^(n-1)`, capped.
pub fn retry_delay_ms(base_delay_ms: u64, max_delay_ms: u64, attempt: u32) -> u64 {
    let exp = attempt.saturating_sub(1).min(52);
    base_delay_ms.saturating_mul(1u64 << exp).min(max_delay_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(text: &str) -> AssistantMessage {
        let mut m = AssistantMessage::new("a", "p", "m", StopReason::Error, 0);
        m.error_message = Some(text.into());
        m
    }

    #[test]
    fn retryable_texts_recorded_from_pi_classify_as_pi_does() {
        for t in [
            r#"500: {"message":"boom internal","type":"server_error","param":null,"code":null}"#,
            r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "terminated: other side closed (UND_ERR_SOCKET)",
            "terminated: Body Timeout Error (UND_ERR_BODY_TIMEOUT)",
            "Connection error.: connect ECONNREFUSED 127.0.0.1:59999",
            "read ECONNRESET",
            "Anthropic stream ended before message_stop",
        ] {
            assert!(is_retryable(&failed(t)), "{t}");
        }
        for t in [
            r#"400: {"message":"bad request thing","type":"invalid_request_error","param":null,"code":null}"#,
            "Provider finish_reason: content_filter",
            r#"429 {"error":{"type":"insufficient_quota"}}"#,
            r#"{"code": "1308", "message":"limit"} 429"#,
            "request id 15003 failed",
            "ECONNRESET_X",
        ] {
            assert!(!is_retryable(&failed(t)), "{t}");
        }
    }

    #[test]
    fn overflow_patterns_and_exclusions() {
        assert!(is_context_overflow(
            &failed(r#"400: {"message":"prompt is too long: 213462 tokens > 200000 maximum"}"#),
            None
        ));
        assert!(is_context_overflow(
            &failed("OpenAI API error (413): too big"),
            None
        ));
        assert!(is_context_overflow(
            &failed("413 status code (no body)"),
            None
        ));
        assert!(!is_context_overflow(
            &failed("ThrottlingException: Too many tokens, rate limit"),
            None
        ));
        let mut c = failed("400 status code (no body)");
        assert!(!is_context_overflow(&c, None));
        c.provider = "cerebras".into();
        assert!(is_context_overflow(&c, None));
        let mut silent = AssistantMessage::new("a", "p", "m", StopReason::Stop, 0);
        silent.usage.input = 1001;
        assert!(is_context_overflow(&silent, Some(1000)));
        assert!(!is_context_overflow(&silent, None));
    }

    #[test]
    fn retry_delays_double_up_to_the_cap() {
        assert_eq!(
            (1..=6)
                .map(|n| retry_delay_ms(2000, 60000, n))
                .collect::<Vec<_>>(),
            vec![2000, 4000, 8000, 16000, 32000, 60000]
        );
    }
}
