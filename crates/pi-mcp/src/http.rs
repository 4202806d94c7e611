//! The streamable-HTTP transport: every outgoing message is one `POST` to the server URL with
//! the session id (`Mcp-Session-Id`), protocol version and bearer token once known; a request's
//! answer comes back as JSON or as an SSE stream of messages (progress, server requests, the
//! result), resumed with `Last-Event-ID` when it breaks off after the server numbered its
//! events. Once the session is initialized a `GET` stream carries what the server sends on its
//! own (tool-list changes, log messages), reopened with backoff when it drops. A 401 (or a 403
//! asking for more scope) goes to the auth provider once and the request is sent again.
//! Closing ends the session with a `DELETE`.

use crate::jsonrpc::{McpError, NotificationSink, PendingMap, handle_line};
use crate::oauth::auth::HttpAuth;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

const ERROR_BODY_CHARS: usize = 500;
const RECONNECT_INITIAL_DELAY_MS: u64 = 1_000;
const RECONNECT_MAX_DELAY_MS: u64 = 30_000;
const RECONNECT_MAX_RETRIES: u32 = 5;
/// JSON-RPC internal error, for a request whose response stream failed.
const INTERNAL_ERROR: i64 = -32603;

/// Where incoming messages go (set when the writer starts).
struct Delivery {
    pending: PendingMap,
    writer: mpsc::UnboundedSender<String>,
    notifications: NotificationSink,
    roots: Value,
}

impl Delivery {
    fn deliver(&self, data: &str) {
        handle_line(
            data,
            &self.pending,
            &self.writer,
            &self.notifications,
            &self.roots,
        );
    }
}

pub struct HttpSession {
    url: String,
    headers: Vec<(String, String)>,
    http: reqwest::Client,
    session_id: Mutex<Option<String>>,
    protocol_version: Mutex<Option<String>>,
    closed: watch::Sender<bool>,
    auth: Option<Arc<dyn HttpAuth>>,
    /// The token of the latest request, which the closing `DELETE` reuses.
    last_token: Mutex<Option<String>>,
    get_stream_started: AtomicBool,
    /// Set once the first `GET` has had its answer (or failed): a close waits for it, so the
    /// server sees the stream Pi's client opens at once even when the session ends right away.
    get_stream_answered: watch::Sender<bool>,
    delivery: OnceLock<Delivery>,
    stop: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Pi's text for a failed request (`MCP HTTP request failed with status 503: <body>`).
fn describe_failure(status: u16, body: &str) -> String {
    let text = pi_js::trim(body);
    let snippet = if text.chars().count() > ERROR_BODY_CHARS {
        let cut: String = text.chars().take(ERROR_BODY_CHARS - 3).collect();
        format!("{cut}...")
    } else {
        text.to_string()
    };
    if snippet.is_empty() {
        format!("MCP HTTP request failed with status {status}")
    } else {
        format!("MCP HTTP request failed with status {status}: {snippet}")
    }
}

/// 401, or 403 with an `insufficient_scope` bearer challenge (step-up authorization).
fn needs_authorization(response: &reqwest::Response) -> bool {
    match response.status().as_u16() {
        401 => true,
        403 => response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|h| {
                regex::Regex::new(r#"(?i)(?:^|[\s,])error="?insufficient_scope"?"#)
                    .is_ok_and(|re| re.is_match(h))
            }),
        _ => false,
    }
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
}

/// Network failures and transient statuses are retried when a stream (re)opens; auth,
/// session and protocol errors are not.
fn is_retryable(e: &McpError) -> bool {
    match e {
        McpError::Http { status: None, .. } => true,
        McpError::Http {
            status: Some(s), ..
        } => *s == 408 || *s == 429 || *s >= 500,
        _ => false,
    }
}

fn network_error() -> McpError {
    // Node's fetch says no more than this about a refused or dropped connection.
    McpError::Http {
        status: None,
        message: "fetch failed".into(),
    }
}

/// Event ids, the server's reconnect delay, and whether anything arrived, of one stream.
#[derive(Default)]
struct Cursor {
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
    received: bool,
}

fn reconnect_delay(attempt: u32, server_delay: Option<u64>) -> Duration {
    Duration::from_millis(server_delay.unwrap_or_else(|| {
        RECONNECT_INITIAL_DELAY_MS
            .saturating_mul(1u64 << attempt.min(20))
            .min(RECONNECT_MAX_DELAY_MS)
    }))
}

impl HttpSession {
    pub fn new(
        url: &str,
        headers: Vec<(String, String)>,
        closed: watch::Sender<bool>,
        auth: Option<Arc<dyn HttpAuth>>,
    ) -> Result<Arc<HttpSession>, McpError> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| McpError::Other(e.to_string()))?;
        Ok(Arc::new(HttpSession {
            url: url.to_string(),
            headers,
            http,
            session_id: Mutex::new(None),
            protocol_version: Mutex::new(None),
            closed,
            auth,
            last_token: Mutex::new(None),
            get_stream_started: AtomicBool::new(false),
            get_stream_answered: watch::channel(false).0,
            delivery: OnceLock::new(),
            stop: CancellationToken::new(),
        }))
    }

    pub fn set_protocol_version(&self, version: &str) {
        *lock(&self.protocol_version) = Some(version.to_string());
    }

    /// The configured headers, then `extra`, the session, the protocol version and the token,
    /// each replacing an earlier header of the same name.
    fn build_headers(&self, extra: &[(&str, String)], token: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        let mut set = |k: &str, v: &str| {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                map.insert(name, value);
            }
        };
        for (k, v) in &self.headers {
            set(k, v);
        }
        for (k, v) in extra {
            set(k, v);
        }
        if let Some(id) = lock(&self.session_id).clone() {
            set("mcp-session-id", &id);
        }
        if let Some(v) = lock(&self.protocol_version).clone() {
            set("mcp-protocol-version", &v);
        }
        if let Some(t) = token {
            set("authorization", &format!("Bearer {t}"));
        }
        map
    }

    /// A request with credentials; a 401 (or 403 for more scope) is handed to the auth
    /// provider once and the request made again with what it left behind.
    async fn authorized(
        &self,
        method: reqwest::Method,
        extra: &[(&str, String)],
        body: Option<&str>,
    ) -> Result<reqwest::Response, McpError> {
        for attempt in 0..2 {
            let token = match &self.auth {
                Some(a) => a.token().await,
                None => None,
            };
            *lock(&self.last_token) = token.clone();
            let mut req = self
                .http
                .request(method.clone(), &self.url)
                .headers(self.build_headers(extra, token.as_deref()));
            if let Some(b) = body {
                req = req.body(b.to_string());
            }
            let response = tokio::select! {
                r = req.send() => r.map_err(|_| network_error())?,
                _ = self.stop.cancelled() => return Err(McpError::Closed),
            };
            let recovering = self.auth.as_ref().filter(|a| a.recovers());
            let Some(auth) = recovering.filter(|_| attempt == 0 && needs_authorization(&response))
            else {
                return Ok(response);
            };
            let www = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            drop(response);
            auth.on_unauthorized(www, token).await?;
        }
        Err(McpError::Closed)
    }

    /// The error of a response that is not 2xx.
    async fn failure(&self, response: reqwest::Response) -> McpError {
        let status = response.status().as_u16();
        let had_session = lock(&self.session_id).is_some();
        let body = response.text().await.unwrap_or_default();
        match status {
            401 => McpError::Http {
                status: Some(401),
                message: "MCP server requires authentication".into(),
            },
            404 if had_session => McpError::SessionExpired,
            _ => McpError::Http {
                status: Some(status),
                message: describe_failure(status, &body),
            },
        }
    }

    fn capture_session(&self, response: &reqwest::Response) {
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *lock(&self.session_id) = Some(id.to_string());
        }
    }

    /// Sends each outgoing line as its own `POST`, concurrently, until `stop`.
    pub fn spawn_writer(
        self: &Arc<Self>,
        mut lines: mpsc::UnboundedReceiver<String>,
        pending: PendingMap,
        writer: mpsc::UnboundedSender<String>,
        notifications: NotificationSink,
        roots: Value,
        stop: CancellationToken,
    ) {
        let _ = self.delivery.set(Delivery {
            pending,
            writer,
            notifications,
            roots,
        });
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let line = tokio::select! {
                    l = lines.recv() => match l { Some(l) => l, None => break },
                    _ = stop.cancelled() => break,
                };
                // Pi's client awaits the `initialized` notification's answer (and so the
                // opening of its `GET` stream) before its first request: requests wait for it
                // here too, or a short session could end before the stream was ever asked for.
                if line.contains("notifications/initialized")
                    && serde_json::from_str::<Value>(&line).is_ok_and(|m| {
                        m.get("method").and_then(Value::as_str) == Some("notifications/initialized")
                    })
                {
                    tokio::select! {
                        _ = this.post(&line) => {}
                        _ = stop.cancelled() => break,
                    }
                    continue;
                }
                let this = Arc::clone(&this);
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = this.post(&line) => {}
                        _ = stop.cancelled() => {}
                    }
                });
            }
        });
    }

    fn fail(&self, request_id: Option<u64>, e: McpError) {
        if let (Some(id), Some(d)) = (request_id, self.delivery.get())
            && let Some(p) = lock(&d.pending).remove(&id)
        {
            let _ = p.tx.send(Err(e));
        }
    }

    async fn post(self: &Arc<Self>, line: &str) {
        let msg: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        // Only our requests wait for an answer; a failure is theirs to report.
        let request_id = match (msg.get("method"), msg.get("id")) {
            (Some(_), Some(id)) => id.as_u64(),
            _ => None,
        };
        let extra = [
            ("accept", "application/json, text/event-stream".to_string()),
            ("content-type", "application/json".to_string()),
        ];
        let response = match self
            .authorized(reqwest::Method::POST, &extra, Some(line.trim_end()))
            .await
        {
            Ok(r) => r,
            Err(e) => return self.fail(request_id, e),
        };
        if !response.status().is_success() {
            let e = self.failure(response).await;
            return self.fail(request_id, e);
        }
        self.capture_session(&response);
        let status = response.status().as_u16();
        let Some(id) = request_id else {
            // The server-to-client stream may only open once the session is initialized.
            if method == "notifications/initialized" {
                self.start_get_stream();
            }
            return;
        };
        if status == 202 || status == 204 {
            return self.fail(
                request_id,
                McpError::Http {
                    status: Some(status),
                    message: format!("MCP server accepted request {method} without a response"),
                },
            );
        }
        let Some(delivery) = self.delivery.get() else {
            return;
        };
        match content_type(&response).as_deref() {
            Some("application/json") => {
                let body = response.text().await.unwrap_or_default();
                match serde_json::from_str::<Value>(&body) {
                    Ok(Value::Array(items)) => {
                        for item in items {
                            delivery.deliver(&item.to_string());
                        }
                    }
                    Ok(v) => delivery.deliver(&v.to_string()),
                    Err(e) => self.fail(request_id, McpError::Other(e.to_string())),
                }
            }
            Some("text/event-stream") => self.consume_response_stream(response, id).await,
            other => self.fail(
                request_id,
                McpError::Http {
                    status: Some(status),
                    message: format!(
                        "Unsupported MCP response content type: {}",
                        other.unwrap_or("missing")
                    ),
                },
            ),
        }
    }

    /// Reads one SSE stream, delivering its messages; `Err` when it broke off.
    async fn consume(
        &self,
        mut response: reqwest::Response,
        cursor: &mut Cursor,
        mut seen: impl FnMut(&Value),
    ) -> Result<(), McpError> {
        let mut sse = SseParser::default();
        let mut handle = |events: Vec<SseEvent>, sse: &SseParser, cursor: &mut Cursor| {
            if sse.last_id.is_some() {
                cursor.last_event_id.clone_from(&sse.last_id);
            }
            if sse.retry.is_some() {
                cursor.retry_ms = sse.retry;
            }
            for e in events {
                cursor.received = true;
                // Other event types are not JSON-RPC.
                let message = e.event.as_deref().is_none_or(|n| n == "message");
                if !message || pi_js::trim(&e.data).is_empty() {
                    continue;
                }
                if let Ok(v) = serde_json::from_str::<Value>(&e.data) {
                    seen(&v);
                }
                if let Some(d) = self.delivery.get() {
                    d.deliver(&e.data);
                }
            }
        };
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c,
                _ = self.stop.cancelled() => return Ok(()),
            };
            match chunk {
                Ok(Some(bytes)) => {
                    let events = sse.push(&bytes);
                    handle(events, &sse, cursor);
                }
                Ok(None) => break,
                // A body cut off mid-stream; an incomplete event is dropped.
                Err(_) => return Err(network_error()),
            }
        }
        let events = sse.finish();
        handle(events, &sse, cursor);
        Ok(())
    }

    /// The SSE stream answering request `id`. When it ends or breaks before the answer and the
    /// server numbered its events, it is resumed with `GET` and `Last-Event-ID`; otherwise the
    /// request fails.
    async fn consume_response_stream(&self, response: reqwest::Response, id: u64) {
        let mut cursor = Cursor::default();
        let mut answered = false;
        let mut stream = Some(response);
        let mut failure: Option<McpError> = None;
        let mut attempt = 0;
        loop {
            if let Some(r) = stream.take() {
                let seen = |v: &Value| {
                    if v.get("method").is_none() && v.get("id").and_then(Value::as_u64) == Some(id)
                    {
                        answered = true;
                    }
                };
                failure = self.consume(r, &mut cursor, seen).await.err();
            }
            if answered || self.stop.is_cancelled() {
                return;
            }
            if failure.as_ref().is_some_and(|e| !is_retryable(e)) {
                break;
            }
            if cursor.last_event_id.is_none() || attempt >= RECONNECT_MAX_RETRIES {
                break;
            }
            if cursor.received {
                attempt = 0;
            }
            cursor.received = false;
            let wait = reconnect_delay(attempt, cursor.retry_ms);
            attempt += 1;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.stop.cancelled() => return,
            }
            match self.open_sse_stream(cursor.last_event_id.clone()).await {
                Ok(s) => stream = s,
                Err(e) => {
                    let retry = is_retryable(&e);
                    failure = Some(e);
                    if !retry {
                        break;
                    }
                }
            }
        }
        let reason = match failure {
            None => "stream ended without a response".to_string(),
            Some(e) => e.to_string(),
        };
        if let Some(d) = self.delivery.get() {
            d.deliver(
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": INTERNAL_ERROR,
                    "message": format!("MCP response stream failed: {reason}")}})
                .to_string(),
            );
        }
    }

    /// A `GET` SSE stream; `None` when the server answers 405 (it offers none).
    async fn open_sse_stream(
        &self,
        last_event_id: Option<String>,
    ) -> Result<Option<reqwest::Response>, McpError> {
        let mut extra = vec![("accept", "text/event-stream".to_string())];
        if let Some(id) = last_event_id {
            extra.push(("last-event-id", id));
        }
        let response = self.authorized(reqwest::Method::GET, &extra, None).await?;
        if response.status().as_u16() == 405 {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(self.failure(response).await);
        }
        self.capture_session(&response);
        let ty = content_type(&response);
        if ty.as_deref() != Some("text/event-stream") {
            return Err(McpError::Http {
                status: Some(response.status().as_u16()),
                message: format!(
                    "Unsupported MCP GET response content type: {}",
                    ty.as_deref().unwrap_or("missing")
                ),
            });
        }
        Ok(Some(response))
    }

    fn start_get_stream(self: &Arc<Self>) {
        if self.stop.is_cancelled() || self.get_stream_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = Arc::clone(self);
        tokio::spawn(async move { this.run_get_stream().await });
    }

    /// Keeps the server-to-client stream open, reopening it with backoff when it drops.
    async fn run_get_stream(&self) {
        let mut cursor = Cursor::default();
        let mut attempt: u32 = 0;
        while !self.stop.is_cancelled() {
            let opened = self.open_sse_stream(cursor.last_event_id.clone()).await;
            self.get_stream_answered.send_replace(true);
            match opened {
                Ok(None) => return,
                Ok(Some(stream)) => {
                    let opened = Instant::now();
                    let broke = self.consume(stream, &mut cursor, |_| {}).await.err();
                    // A stream that stayed up a while was healthy, even if idle.
                    if cursor.received
                        || opened.elapsed() > Duration::from_millis(RECONNECT_MAX_DELAY_MS)
                    {
                        attempt = 0;
                    }
                    if broke.is_some_and(|e| !is_retryable(&e)) {
                        return;
                    }
                }
                // Auth, session and protocol errors end the stream for good; requests report
                // them on their own.
                Err(e) if !is_retryable(&e) => return,
                Err(_) => {}
            }
            cursor.received = false;
            if attempt >= RECONNECT_MAX_RETRIES {
                return;
            }
            let wait = reconnect_delay(attempt, cursor.retry_ms);
            attempt += 1;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.stop.cancelled() => return,
            }
        }
    }

    /// Ends the session (`DELETE` with the last token, at most a second) and marks the
    /// connection closed.
    pub async fn close(&self) {
        if self.get_stream_started.load(Ordering::SeqCst) {
            let mut answered = self.get_stream_answered.subscribe();
            let _ = tokio::time::timeout(Duration::from_secs(1), answered.wait_for(|a| *a)).await;
        }
        self.stop.cancel();
        if lock(&self.session_id).is_some() {
            let token = lock(&self.last_token).clone();
            let req = self
                .http
                .delete(&self.url)
                .headers(self.build_headers(&[], token.as_deref()));
            let _ = tokio::time::timeout(Duration::from_secs(1), req.send()).await;
        }
        if let Some(a) = &self.auth {
            // A refresh the server answered may have rotated the refresh token.
            a.settled().await;
        }
        let _ = self.closed.send(true);
    }
}

/// One server-sent event with data.
#[derive(Debug, Clone, PartialEq, Default)]
struct SseEvent {
    event: Option<String>,
    data: String,
}

/// Server-sent events: lines end with CRLF, LF or a lone CR; an event ends with a blank line.
/// `id` and `retry` fields move the stream's cursor as soon as they are read.
#[derive(Default)]
struct SseParser {
    buffered: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    last_id: Option<String>,
    retry: Option<u64>,
    /// The last chunk ended in CR: a following LF belongs to it.
    skip_lf: bool,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut bytes = bytes;
        if self.skip_lf && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.skip_lf = false;
        }
        self.buffered.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buffered.len() {
            let c = self.buffered[i];
            if c != b'\r' && c != b'\n' {
                i += 1;
                continue;
            }
            let line = String::from_utf8_lossy(&self.buffered[start..i]).into_owned();
            self.line(&line, &mut out);
            if c == b'\r' {
                if i + 1 < self.buffered.len() {
                    if self.buffered[i + 1] == b'\n' {
                        i += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            i += 1;
            start = i;
        }
        self.buffered.drain(..start);
        out
    }

    /// The stream ended: a last unterminated line and event count.
    fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buffered.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buffered)).into_owned();
            self.line(&rest, &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data).join("\n"),
        });
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datas(events: Vec<SseEvent>) -> Vec<String> {
        events
            .into_iter()
            .filter(|e| e.event.as_deref().is_none_or(|n| n == "message"))
            .map(|e| e.data)
            .collect()
    }

    #[test]
    fn sse_events_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"event: message\ndata: {\"a\"").is_empty());
        assert_eq!(
            datas(p.push(b":1}\n\n: comment\nevent: ping\ndata: x\n\nid: 7\nretry: 50\ndata: 2\r")),
            ["{\"a\":1}"]
        );
        assert_eq!(p.last_id.as_deref(), Some("7"));
        assert_eq!(p.retry, Some(50));
        assert_eq!(datas(p.push(b"\n\r\n")), ["2"]);
        assert_eq!(datas(p.push(b"data: 3")), Vec::<String>::new());
        assert_eq!(datas(p.finish()), ["3"]);
        assert_eq!(
            describe_failure(503, " overloaded \n"),
            "MCP HTTP request failed with status 503: overloaded"
        );
        assert_eq!(reconnect_delay(0, None), Duration::from_secs(1));
        assert_eq!(reconnect_delay(9, None), Duration::from_secs(30));
        assert_eq!(reconnect_delay(3, Some(5)), Duration::from_millis(5));
    }
}
