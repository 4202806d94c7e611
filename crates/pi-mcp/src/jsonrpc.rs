//! The JSON-RPC side of an MCP connection, shared by the stdio client and the streamable-HTTP
//! transport: the protocol version, why a request failed, the requests awaiting an answer, and
//! what to do with each line the server sends.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, mpsc, oneshot};

/// Pi's MCP protocol version.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Why a request failed; `Display` is the text Pi's errors carry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// A JSON-RPC error answer.
    #[error("{message}")]
    Rpc { code: i64, message: String },
    #[error("MCP connection closed")]
    Closed,
    #[error("MCP request timed out after {0}ms")]
    Timeout(u64),
    #[error("MCP request aborted")]
    Aborted,
    /// An HTTP status or network failure of a streamable-HTTP server (`transient`: worth
    /// another attempt at connecting).
    #[error("{message}")]
    Http {
        status: Option<u16>,
        message: String,
    },
    /// The OAuth tokens could not be refreshed: the user has to sign in.
    #[error("MCP OAuth authorization requires user interaction")]
    AuthorizationRequired,
    /// The server no longer knows the session (restart, deploy): it did not run the request.
    #[error("MCP session expired")]
    SessionExpired,
    #[error("{0}")]
    Other(String),
}

/// Receives the params of each progress notification of one request.
pub type ProgressSink = Arc<dyn Fn(&Value) + Send + Sync>;

pub(crate) type PendingMap = Arc<Mutex<HashMap<u64, Pending>>>;

/// What the server sent that is not an answer to us.
pub type NotificationSink = Arc<dyn Fn(&str, &Value) + Send + Sync>;

pub(crate) struct Pending {
    pub(crate) tx: oneshot::Sender<Result<Value, McpError>>,
    /// Re-arms the request's timeout (a progress notification arrived).
    pub(crate) progress: Arc<Notify>,
    pub(crate) on_progress: Option<ProgressSink>,
}

impl McpError {
    /// Network failures and overloaded or restarting servers (408, 429, 5xx but 501).
    /// A 401 the auth provider could not recover from.
    pub fn is_auth_required(&self) -> bool {
        matches!(
            self,
            McpError::Http {
                status: Some(401),
                ..
            }
        )
    }

    pub fn is_transient(&self) -> bool {
        match self {
            McpError::Http { status: None, .. } => true,
            McpError::Http {
                status: Some(s), ..
            } => *s == 408 || *s == 429 || (*s >= 500 && *s != 501),
            _ => false,
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Handles one line from the server: an answer settles its pending request, a request from
/// the server is answered, a progress notification re-arms its request's timeout, and other
/// notifications go to `notifications`.
pub(crate) fn handle_line(
    line: &str,
    pending: &Mutex<HashMap<u64, Pending>>,
    writer: &mpsc::UnboundedSender<String>,
    notifications: &NotificationSink,
    roots: &Value,
) {
    let text = line.strip_suffix('\r').unwrap_or(line);
    if pi_js::trim(text).is_empty() {
        return;
    }
    let Ok(msg) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id");
    match (method, id) {
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else { return };
            let Some(p) = lock(pending).remove(&id) else {
                return;
            };
            let result = match (msg.get("result"), msg.get("error")) {
                (Some(r), None) => Ok(r.clone()),
                (_, Some(e)) => Err(McpError::Rpc {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                }),
                _ => return,
            };
            let _ = p.tx.send(result);
        }
        (Some(method), Some(id)) => {
            // Requests from the server: `ping` and `roots/list` are answered, others refused.
            let reply = match method {
                "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("Method not found: {method}")}}),
            };
            let _ = writer.send(format!("{reply}\n"));
        }
        (Some(method), None) => {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            if method == "notifications/progress"
                && let Some(token) = params.get("progressToken").and_then(Value::as_u64)
                && params.get("progress").is_some_and(Value::is_number)
            {
                let guard = lock(pending);
                if let Some(p) = guard.get(&token) {
                    p.progress.notify_one();
                    if let Some(cb) = &p.on_progress {
                        cb(&params);
                    }
                }
                return;
            }
            notifications(method, &params);
        }
        (None, None) => {}
    }
}
