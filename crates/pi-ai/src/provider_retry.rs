//! Provider-level retries of a request that failed before its stream began (settings
//! `retry.provider.maxRetries`, off by default), with the policies Pi 1.6.0 applies per API:
//!
//! * [`RetryPolicy::Sdk`] (Anthropic and OpenAI SDK adapters, Azure): Pi's
//!   `retryProviderRequest`. Retries connection failures and 408/409/429/5xx unless
//!   `x-should-retry` says otherwise; waits `retry-after-ms` or `retry-after` when the server
//!   names a delay, refusing one longer than `maxRetryDelayMs` with "Server requested …", and
//!   backs off exponentially (0.5 s doubling to 8 s, up to a quarter less) otherwise.
//! * [`RetryPolicy::Google`] (Google, Vertex): the same, but the SDK's error carries no headers
//!   and a failed `fetch` is not a provider error: status codes only, always backoff.
//! * [`RetryPolicy::Codex`]: its own loop. Retries every failure except a usage limit, waiting
//!   a server-named delay for 429/5xx (refused above the maximum) and 1 s doubling otherwise.
//!
//! Recorded from the reference in `tests/fixtures/<api>/retries.json`.

use crate::http::SendError;
use std::time::Duration;

/// Pi's default `maxRetryDelayMs`.
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
pub enum RetryPolicy {
    /// No retries here (the adapter has none, or its own).
    None,
    /// `status_message` is the SDK's `APIError` message, quoted after "Server requested …".
    Sdk(fn(u16, &str) -> String),
    Google,
    Codex,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Wait this long, then send again.
    RetryAfter(Duration),
    /// Give up with this text instead of the failure's own.
    Fail(String),
    /// Give up with the failure's own text.
    GiveUp,
}

/// Decides about attempt `attempt` (0-based) that failed with `err`. `final_text` is the text
/// the failure would end the message with (Codex looks for a usage limit in it).
pub fn next(
    policy: RetryPolicy,
    err: &SendError,
    attempt: u32,
    max_retries: u32,
    max_delay: Option<Duration>,
    final_text: &str,
) -> Next {
    if attempt >= max_retries || matches!(err, SendError::Aborted | SendError::Client(_)) {
        return Next::GiveUp;
    }
    let max_delay = max_delay.unwrap_or(DEFAULT_MAX_RETRY_DELAY);
    match policy {
        RetryPolicy::None => Next::GiveUp,
        RetryPolicy::Sdk(status_message) => {
            let SendError::Status {
                status,
                body,
                headers,
                ..
            } = err
            else {
                // A connection failure or a timeout: no status, retryable.
                return Next::RetryAfter(backoff(attempt));
            };
            match header(headers, "x-should-retry") {
                Some("true") => {}
                Some("false") => return Next::GiveUp,
                _ if !sdk_retryable(*status) => return Next::GiveUp,
                _ => {}
            }
            match server_delay(headers, true) {
                Some(d) if max_delay > Duration::ZERO && d > max_delay => Next::Fail(format!(
                    "{}. {}",
                    too_long(d, max_delay),
                    status_message(*status, body)
                )),
                Some(d) => Next::RetryAfter(d),
                None => Next::RetryAfter(backoff(attempt)),
            }
        }
        RetryPolicy::Google => match err {
            SendError::Status { status, .. } if sdk_retryable(*status) => {
                Next::RetryAfter(backoff(attempt))
            }
            _ => Next::GiveUp,
        },
        RetryPolicy::Codex => {
            let doubling = Duration::from_millis(1000u64 << attempt.min(20));
            if let SendError::Status {
                status,
                body,
                headers,
                ..
            } = err
                && codex_retryable(*status, body)
            {
                return match server_delay(headers, false) {
                    Some(d) if max_delay > Duration::ZERO && d > max_delay => {
                        Next::Fail(too_long(d, max_delay))
                    }
                    Some(d) => Next::RetryAfter(d),
                    None => Next::RetryAfter(doubling),
                };
            }
            // Anything else is thrown inside Codex's retry loop and caught as "retryable".
            if final_text.contains("usage limit") {
                Next::GiveUp
            } else {
                Next::RetryAfter(doubling)
            }
        }
    }
}

fn too_long(delay: Duration, max: Duration) -> String {
    let secs = |d: Duration| (d.as_millis() as f64 / 1000.0).ceil() as u64;
    format!(
        "Server requested {}s retry delay (max: {}s)",
        secs(delay),
        secs(max)
    )
}

fn sdk_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

fn codex_retryable(status: u16, text: &str) -> bool {
    let re = |p: &str| regex::Regex::new(p).is_ok_and(|r| r.is_match(text));
    if status == 429
        && re(
            r"(?i)GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|insufficient_quota|out of budget|quota exceeded|billing",
        )
    {
        return false;
    }
    matches!(status, 429 | 500 | 502 | 503 | 504)
        || re(
            r"(?i)rate.?limit|overloaded|service.?unavailable|upstream.?connect|connection.?refused",
        )
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The delay the server asks for: `retry-after-ms`, else `retry-after` in seconds or as an
/// HTTP date. `lenient` reads numbers as `parseFloat` does (a numeric prefix: the SDK policy),
/// otherwise as `Number` (the whole text: Codex).
fn server_delay(headers: &[(String, String)], lenient: bool) -> Option<Duration> {
    let number = |v: &str| {
        if lenient {
            parse_float_prefix(v)
        } else {
            let n = pi_js::string_to_number(v);
            n.is_finite().then_some(n)
        }
    };
    let millis = |ms: f64| Duration::from_secs_f64(ms.max(0.0) / 1000.0);
    if let Some(v) = header(headers, "retry-after-ms")
        && let Some(ms) = number(v)
    {
        return Some(millis(ms));
    }
    let v = header(headers, "retry-after")?;
    match number(v) {
        Some(s) => Some(millis(s * 1000.0)),
        None => {
            let at = http_date_ms(v).or_else(|| pi_js::time::parse_iso_ms(v))?;
            Some(millis(at as f64 - pi_js::now_ms() as f64))
        }
    }
}

/// An IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`), the form `retry-after` dates take, in
/// milliseconds since the epoch.
fn http_date_ms(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|x| x == month)? as i64 + 1;
    let (d, y): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, min, sec] = hms.as_slice() else {
        return None;
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + min) * 60_000 + sec * 1000)
}

/// `parseFloat`: the longest numeric prefix after leading whitespace, `None` for NaN.
fn parse_float_prefix(text: &str) -> Option<f64> {
    let t = text.trim_start();
    let bytes = t.as_bytes();
    let mut end = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    if t[end..].starts_with("Infinity") {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let digits = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let int_end = digits(end);
    let mut best = (int_end > end).then_some(int_end);
    if bytes.get(int_end) == Some(&b'.') {
        let frac_end = digits(int_end + 1);
        if frac_end > int_end + 1 || best.is_some() {
            best = Some(frac_end);
        }
    }
    let mut last = best?;
    if matches!(bytes.get(last), Some(b'e' | b'E')) {
        let mut i = last + 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_end = digits(i);
        if exp_end > i {
            last = exp_end;
        }
    }
    t[..last].parse().ok()
}

/// Exponential backoff of the SDK policy: 0.5 s doubling up to 8 s, jittered down by up to a
/// quarter.
fn backoff(attempt: u32) -> Duration {
    let base = (0.5 * 2f64.powi(attempt.min(16) as i32)).min(8.0);
    Duration::from_secs_f64(base * (1.0 - jitter() * 0.25))
}

/// A number in [0, 1) without a random-number dependency (the jitter only spreads clients).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    f64::from(nanos % 1000) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, headers: &[(&str, &str)]) -> SendError {
        SendError::Status {
            status: code,
            body: "{}".into(),
            content_type: None,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn msg(status: u16, _body: &str) -> String {
        format!("{status} Rate limit reached")
    }

    #[test]
    fn sdk_policy_follows_the_server_and_the_status() {
        let p = RetryPolicy::Sdk(msg);
        let ra = status(429, &[("retry-after", "1")]);
        assert_eq!(
            next(p, &ra, 0, 2, None, ""),
            Next::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(next(p, &ra, 2, 2, None, ""), Next::GiveUp);
        let ms = status(429, &[("retry-after-ms", "300")]);
        assert_eq!(
            next(p, &ms, 0, 2, None, ""),
            Next::RetryAfter(Duration::from_millis(300))
        );
        assert_eq!(
            next(p, &status(429, &[("retry-after", "120")]), 0, 2, None, ""),
            Next::Fail(
                "Server requested 120s retry delay (max: 60s). 429 Rate limit reached".into()
            )
        );
        assert_eq!(
            next(
                p,
                &status(500, &[("x-should-retry", "false")]),
                0,
                2,
                None,
                ""
            ),
            Next::GiveUp
        );
        assert_eq!(next(p, &status(400, &[]), 0, 2, None, ""), Next::GiveUp);
        assert!(matches!(
            next(p, &SendError::Connect("x".into()), 0, 2, None, ""),
            Next::RetryAfter(_)
        ));
        assert_eq!(next(p, &SendError::Aborted, 0, 2, None, ""), Next::GiveUp);
    }

    #[test]
    fn codex_retries_everything_but_a_usage_limit() {
        let p = RetryPolicy::Codex;
        assert_eq!(
            next(p, &status(400, &[]), 0, 2, None, "bad"),
            Next::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            next(p, &status(429, &[]), 1, 2, None, ""),
            Next::RetryAfter(Duration::from_secs(2))
        );
        assert_eq!(
            next(p, &status(429, &[("retry-after", "120")]), 0, 2, None, ""),
            Next::Fail("Server requested 120s retry delay (max: 60s)".into())
        );
        assert_eq!(
            next(
                p,
                &status(400, &[]),
                0,
                2,
                None,
                "You have hit your ChatGPT usage limit."
            ),
            Next::GiveUp
        );
    }

    #[test]
    fn parse_float_reads_a_numeric_prefix() {
        assert_eq!(parse_float_prefix(" 1.5s"), Some(1.5));
        assert_eq!(parse_float_prefix("2e3"), Some(2000.0));
        assert_eq!(parse_float_prefix(".5"), Some(0.5));
        assert_eq!(parse_float_prefix("Wed, 21 Oct 2015"), None);
        assert_eq!(
            http_date_ms("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480_000)
        );
    }
}
