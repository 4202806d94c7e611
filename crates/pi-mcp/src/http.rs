//! The streamable-HTTP transport: every outgoing message is one `POST` to the server URL with
//! the session id (`Mcp-Session-Id`) and protocol version once known; a request's answer comes
//! back as JSON or as an SSE stream whose events are messages (progress, server requests, the
//! result). Closing ends the session with a `DELETE`.
//!
//! Not done yet: the optional `GET` stream for notifications outside a request, and OAuth.

use crate::client::{McpError, NotificationSink, PendingMap, handle_line};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

const ERROR_BODY_CHARS: usize = 500;

pub struct HttpSession {
    url: String,
    headers: Vec<(String, String)>,
    http: reqwest::Client,
    session_id: Mutex<Option<String>>,
    protocol_version: Mutex<Option<String>>,
    closed: watch::Sender<bool>,
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

impl HttpSession {
    pub fn new(
        url: &str,
        headers: Vec<(String, String)>,
        closed: watch::Sender<bool>,
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
        }))
    }

    pub fn set_protocol_version(&self, version: &str) {
        *lock(&self.protocol_version) = Some(version.to_string());
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, &self.url);
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        if let Some(id) = lock(&self.session_id).clone() {
            req = req.header("Mcp-Session-Id", id);
        }
        if let Some(v) = lock(&self.protocol_version).clone() {
            req = req.header("MCP-Protocol-Version", v);
        }
        req
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
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let line = tokio::select! {
                    l = lines.recv() => match l { Some(l) => l, None => break },
                    _ = stop.cancelled() => break,
                };
                let (this, pending, writer, notifications, roots) = (
                    Arc::clone(&this),
                    Arc::clone(&pending),
                    writer.clone(),
                    Arc::clone(&notifications),
                    roots.clone(),
                );
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = this.post(&line, &pending, &writer, &notifications, &roots) => {}
                        _ = stop.cancelled() => {}
                    }
                });
            }
        });
    }

    async fn post(
        &self,
        line: &str,
        pending: &PendingMap,
        writer: &mpsc::UnboundedSender<String>,
        notifications: &NotificationSink,
        roots: &Value,
    ) {
        let msg: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        // Only our requests wait for an answer; a failure is theirs to report.
        let request_id = match (msg.get("method"), msg.get("id")) {
            (Some(_), Some(id)) => id.as_u64(),
            _ => None,
        };
        let fail = |e: McpError| {
            if let Some(id) = request_id
                && let Some(p) = lock(pending).remove(&id)
            {
                let _ = p.tx.send(Err(e));
            }
        };
        let sent = self
            .request(reqwest::Method::POST)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(line.trim_end().to_string())
            .send()
            .await;
        let mut response = match sent {
            Ok(r) => r,
            Err(_) => {
                // Node's fetch says no more than this about a refused or dropped connection.
                return fail(McpError::Http {
                    status: None,
                    message: "fetch failed".into(),
                });
            }
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let had_session = lock(&self.session_id).is_some();
            let body = response.text().await.unwrap_or_default();
            let message = match status {
                401 => "MCP server requires authentication".to_string(),
                404 if had_session => "MCP session expired".to_string(),
                _ => describe_failure(status, &body),
            };
            return fail(McpError::Http {
                status: Some(status),
                message,
            });
        }
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *lock(&self.session_id) = Some(id.to_string());
        }
        if request_id.is_none() {
            return;
        }
        if status == 202 || status == 204 {
            let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
            return fail(McpError::Http {
                status: Some(status),
                message: format!("MCP server accepted request {method} without a response"),
            });
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        let deliver = |data: &str| handle_line(data, pending, writer, notifications, roots);
        match content_type.as_deref() {
            Some("application/json") => {
                let body = response.text().await.unwrap_or_default();
                match serde_json::from_str::<Value>(&body) {
                    Ok(Value::Array(items)) => {
                        for item in items {
                            deliver(&item.to_string());
                        }
                    }
                    Ok(v) => deliver(&v.to_string()),
                    Err(e) => fail(McpError::Other(e.to_string())),
                }
            }
            Some("text/event-stream") => {
                let mut sse = SseParser::default();
                loop {
                    match response.chunk().await {
                        Ok(Some(bytes)) => {
                            for data in sse.push(&bytes) {
                                deliver(&data);
                            }
                        }
                        Ok(None) => break,
                        Err(_) => break,
                    }
                }
                for data in sse.finish() {
                    deliver(&data);
                }
                // A stream that ended without the answer leaves nothing to wait for.
                fail(McpError::Closed);
            }
            other => fail(McpError::Http {
                status: Some(status),
                message: format!(
                    "Unsupported MCP response content type: {}",
                    other.unwrap_or("missing")
                ),
            }),
        }
    }

    /// Ends the session (`DELETE`, at most a second) and marks the connection closed.
    pub async fn close(&self) {
        if lock(&self.session_id).is_some() {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                self.request(reqwest::Method::DELETE).send(),
            )
            .await;
        }
        let _ = self.closed.send(true);
    }
}

/// Server-sent events: the `data` of each `message` event (or unnamed one), in order.
#[derive(Default)]
struct SseParser {
    buffered: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffered.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(pos) = self.buffered.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffered.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            self.line(text, &mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buffered.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buffered)).to_string();
            self.line(rest.trim_end_matches('\r'), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data).join("\n");
            let event = self.event.take();
            if !pi_js::trim(&data).is_empty() && event.as_deref().is_none_or(|e| e == "message") {
                out.push(data);
            }
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
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"event: message\ndata: {\"a\"").is_empty());
        assert_eq!(
            p.push(b":1}\n\n: comment\nevent: ping\ndata: x\n\ndata: 2\r\n"),
            ["{\"a\":1}"]
        );
        assert_eq!(p.finish(), ["2"]);
        assert_eq!(
            describe_failure(503, " overloaded \n"),
            "MCP HTTP request failed with status 503: overloaded"
        );
    }
}
