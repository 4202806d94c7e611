//! The test MCP server of [`crate::mcp_server`] over streamable HTTP on 127.0.0.1: `POST /mcp`
//! with one JSON-RPC message per request. `initialize` starts a session (`Mcp-Session-Id`),
//! later requests must carry it; `tools/call` answers as an SSE stream (progress notifications,
//! then the result), everything else as JSON; notifications get 202. `DELETE` ends the session.
//! `fail_first` answers that many requests with 503 first, for retry tests.

use crate::mcp_server::{self, ServerOptions};
use crate::mock::http::read_request;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A running server; dropped, it stops accepting.
pub struct HttpServer {
    pub port: u16,
    /// Every request as `METHOD session-id-or-"-" body`, in arrival order.
    pub log: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the server on a free loopback port.
pub async fn start(opts: ServerOptions, fail_first: usize) -> std::io::Result<HttpServer> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let port = listener.local_addr()?.port();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let failures = Arc::new(AtomicUsize::new(fail_first));
    let opts = Arc::new(opts);
    let task = {
        let log = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, failures, opts) =
                    (Arc::clone(&log), Arc::clone(&failures), Arc::clone(&opts));
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut reader = BufReader::new(read);
                    while let Ok(Some(req)) = read_request(&mut reader).await {
                        let session = req.header("mcp-session-id").unwrap_or("-").to_string();
                        let body = String::from_utf8_lossy(&req.body).to_string();
                        if let Ok(mut l) = log.lock() {
                            l.push(format!("{} {session} {body}", req.method));
                        }
                        let reply = answer(&opts, &req.method, &session, &body, &failures);
                        if write.write_all(&reply).await.is_err() {
                            break;
                        }
                        let _ = write.flush().await;
                    }
                });
            }
        })
    };
    Ok(HttpServer { port, log, task })
}

fn response(status: &str, headers: &[(&str, String)], body: &str) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn answer(
    opts: &ServerOptions,
    method: &str,
    session: &str,
    body: &str,
    failures: &AtomicUsize,
) -> Vec<u8> {
    if failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return response("503 Service Unavailable", &[], "overloaded");
    }
    if method == "DELETE" {
        return response("200 OK", &[], "");
    }
    if method != "POST" {
        return response("405 Method Not Allowed", &[], "");
    }
    let Ok(msg) = serde_json::from_str::<Value>(body) else {
        return response("400 Bad Request", &[], "invalid JSON");
    };
    let method_name = msg.get("method").and_then(Value::as_str).unwrap_or("");
    if method_name != "initialize" && session != "test-session" {
        return response("400 Bad Request", &[], "missing session");
    }
    let Some(id) = msg.get("id").cloned() else {
        return response("202 Accepted", &[], "");
    };
    let mut progress = Vec::new();
    let reply = match mcp_server::reply(opts, &msg, &mut progress) {
        Some(r) => r,
        None => return Vec::new(), // `crash`: close the connection without an answer
    };
    let _ = id;
    let session_header = [("mcp-session-id", "test-session".to_string())];
    if method_name == "tools/call" {
        let mut sse = String::new();
        for line in String::from_utf8_lossy(&progress).lines() {
            sse.push_str(&format!("event: message\ndata: {line}\n\n"));
        }
        sse.push_str(&format!("event: message\ndata: {reply}\n\n"));
        let mut headers = vec![("content-type", "text/event-stream".to_string())];
        headers.extend(session_header);
        return response("200 OK", &headers, &sse);
    }
    let mut headers = vec![("content-type", "application/json".to_string())];
    headers.extend(session_header);
    response("200 OK", &headers, &json!(reply).to_string())
}
