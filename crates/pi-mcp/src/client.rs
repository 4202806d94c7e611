//! One MCP connection over stdio: the server process in its own process group, newline-delimited
//! JSON-RPC on its stdin/stdout, a bounded tail of its stderr, requests with timeouts that
//! progress notifications re-arm, and Pi's shutdown (close stdin, SIGTERM, SIGKILL to the group).
//!
//! Written here rather than on an SDK because Pi's own client is hand-written too and its
//! behaviour (error texts, timeout reset, the stderr tail in failures, process-group shutdown)
//! is what the wire shows; an SDK would have to be bent around each of those.

pub use crate::jsonrpc::{LATEST_PROTOCOL_VERSION, McpError, NotificationSink, ProgressSink};
use crate::jsonrpc::{Pending, PendingMap, handle_line, lock};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = [
    LATEST_PROTOCOL_VERSION,
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];
const MAX_STDERR_BYTES: usize = 64 * 1024;
const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(500);
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How to start the server.
#[derive(Debug, Clone)]
pub struct StdioParams {
    pub command: String,
    pub args: Vec<String>,
    /// Added to this process's environment.
    pub env: Vec<(String, String)>,
    pub cwd: std::path::PathBuf,
}

/// What `initialize` told us.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    pub capabilities: Value,
    pub instructions: Option<String>,
}

pub struct McpClient {
    writer: mpsc::UnboundedSender<String>,
    pending: PendingMap,
    next_id: AtomicU64,
    closed: watch::Receiver<bool>,
    stderr: Arc<Mutex<Vec<u8>>>,
    pid: Option<u32>,
    /// For HTTP servers: ends the session with a `DELETE` on close.
    http: Option<Arc<crate::http::HttpSession>>,
    /// Ends the writer task, which closes the server's stdin.
    stop: CancellationToken,
    timeout_ms: u64,
    pub info: ServerInfo,
}

/// Node's spawn error text (`spawn <cmd> ENOENT`).
fn spawn_error(command: &str, e: &std::io::Error) -> String {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => "ENOENT",
        std::io::ErrorKind::PermissionDenied => "EACCES",
        _ => return format!("spawn {command}: {e}"),
    };
    format!("spawn {command} {code}")
}

impl McpClient {
    /// Starts the server and runs `initialize`. `on_close` runs once when the connection ends
    /// (server exit or [`McpClient::close`]).
    pub async fn connect_stdio(
        params: &StdioParams,
        timeout_ms: u64,
        notifications: NotificationSink,
        roots: Value,
        on_close: Box<dyn FnOnce() + Send>,
    ) -> Result<McpClient, (McpError, String)> {
        let mut cmd = tokio::process::Command::new(&params.command);
        // The environment as extensions left it (Pi's servers inherit its process.env).
        if pi_js::process_env::is_changed() {
            cmd.env_clear().envs(pi_js::process_env::vars_os());
        }
        cmd.args(&params.args)
            .envs(params.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&params.cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // Its own group, so stopping it also stops what wrappers (npx, uvx) started.
            .process_group(0)
            .kill_on_drop(false);
        // Stopped with pi even when pi is killed outright (see `pi_tools::shell::reaper`): the
        // reaper runs before the server does and hears of its group right after the spawn.
        pi_tools::shell::reaper::ready();
        let mut child = cmd.spawn().map_err(|e| {
            (
                McpError::Other(spawn_error(&params.command, &e)),
                String::new(),
            )
        })?;
        let pid = child.id();
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
            pi_tools::shell::reaper::notify(pid, true);
        }
        let (Some(mut stdin), Some(stdout), Some(mut stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err((McpError::Closed, String::new()));
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_done = {
            let stderr = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr_pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut tail = lock(&stderr);
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > MAX_STDERR_BYTES {
                        let cut = tail.len() - MAX_STDERR_BYTES;
                        tail.drain(..cut);
                    }
                }
            })
        };
        let (writer, mut lines) = mpsc::unbounded_channel::<String>();
        let stop = CancellationToken::new();
        {
            let stop = stop.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        line = lines.recv() => match line {
                            Some(line) => {
                                if stdin.write_all(line.as_bytes()).await.is_err() { break; }
                                let _ = stdin.flush().await;
                            }
                            None => break,
                        },
                        _ = stop.cancelled() => break,
                    }
                }
                // Dropping stdin closes it: the spec's first shutdown step.
            });
        }
        let pending: PendingMap = Arc::default();
        let (closed_tx, closed) = watch::channel(false);
        {
            let pending = Arc::clone(&pending);
            let writer = writer.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    handle_line(&line, &pending, &writer, &notifications, &roots);
                }
                // The server's last words on stderr belong to the failure it reports.
                let _ = tokio::time::timeout(Duration::from_millis(500), stderr_done).await;
                let _ = child.wait().await;
                if let Some(pid) = pid {
                    // Children of the server may still hold its pipes.
                    kill_group(pid, libc::SIGTERM);
                    if let Ok(pid) = i32::try_from(pid) {
                        pi_tools::shell::reaper::notify(pid, false);
                    }
                }
                for (_, p) in lock(&pending).drain() {
                    let _ = p.tx.send(Err(McpError::Closed));
                }
                let _ = closed_tx.send(true);
                on_close();
            });
        }
        let mut client = McpClient {
            writer,
            pending,
            next_id: AtomicU64::new(1),
            closed,
            stderr,
            pid,
            http: None,
            stop,
            timeout_ms,
            info: ServerInfo::default(),
        };
        match client.initialize().await {
            Ok(info) => {
                client.info = info;
                Ok(client)
            }
            Err(e) => {
                client.close().await;
                let tail = client.stderr_tail();
                Err((e, tail))
            }
        }
    }

    /// Opens a streamable-HTTP session and runs `initialize`.
    pub async fn connect_http(
        url: &str,
        headers: Vec<(String, String)>,
        timeout_ms: u64,
        notifications: NotificationSink,
        roots: Value,
        auth: Option<Arc<dyn crate::oauth::auth::HttpAuth>>,
    ) -> Result<McpClient, McpError> {
        let pending: PendingMap = Arc::default();
        let (writer, lines) = mpsc::unbounded_channel::<String>();
        let (closed_tx, closed) = watch::channel(false);
        let stop = CancellationToken::new();
        let session = crate::http::HttpSession::new(url, headers, closed_tx, auth)?;
        session.spawn_writer(
            lines,
            Arc::clone(&pending),
            writer.clone(),
            notifications,
            roots,
            stop.clone(),
        );
        let mut client = McpClient {
            writer,
            pending,
            next_id: AtomicU64::new(1),
            closed,
            stderr: Arc::default(),
            pid: None,
            http: Some(Arc::clone(&session)),
            stop,
            timeout_ms,
            info: ServerInfo::default(),
        };
        match client.initialize().await {
            Ok(info) => {
                client.info = info;
                Ok(client)
            }
            Err(e) => {
                client.close().await;
                Err(e)
            }
        }
    }

    async fn initialize(&self) -> Result<ServerInfo, McpError> {
        let result = self
            .request(
                "initialize",
                Some(json!({
                    "protocolVersion": LATEST_PROTOCOL_VERSION,
                    "capabilities": {"roots": {}},
                    "clientInfo": {"name": "pi", "version": crate::PI_VERSION},
                })),
                None,
                None,
            )
            .await?;
        let valid = result.get("protocolVersion").is_some_and(Value::is_string)
            && result.get("capabilities").is_some_and(Value::is_object)
            && result
                .pointer("/serverInfo/name")
                .is_some_and(Value::is_string)
            && result
                .pointer("/serverInfo/version")
                .is_some_and(Value::is_string)
            && result.get("instructions").is_none_or(Value::is_string);
        if !valid {
            return Err(McpError::Rpc {
                code: -32600,
                message: "Invalid MCP initialize result".into(),
            });
        }
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return Err(McpError::Other(format!(
                "MCP server selected unsupported protocol version {version}"
            )));
        }
        if let Some(http) = &self.http {
            http.set_protocol_version(version);
        }
        self.notify("notifications/initialized", None);
        Ok(ServerInfo {
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// The last 64 KiB of the server's stderr, trimmed.
    pub fn stderr_tail(&self) -> String {
        let bytes = lock(&self.stderr).clone();
        pi_js::trim(&String::from_utf8_lossy(&bytes)).to_string()
    }

    pub fn notify(&self, method: &str, params: Option<Value>) {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let _ = self.writer.send(format!("{msg}\n"));
    }

    /// Sends a request and waits for its answer, the timeout (re-armed by progress), `cancel`,
    /// or the connection's end. A cancelled or timed-out request is announced to the server.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: Option<&CancellationToken>,
        on_progress: Option<ProgressSink>,
    ) -> Result<Value, McpError> {
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut params = params;
        if on_progress.is_some() {
            let p = params.get_or_insert_with(|| json!({}));
            if let Value::Object(map) = p {
                let meta = map.entry("_meta").or_insert_with(|| json!({}));
                meta["progressToken"] = json!(id);
            }
        }
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let (tx, mut rx) = oneshot::channel();
        let progress = Arc::new(Notify::new());
        lock(&self.pending).insert(
            id,
            Pending {
                tx,
                progress: Arc::clone(&progress),
                on_progress,
            },
        );
        if self.writer.send(format!("{msg}\n")).is_err() {
            lock(&self.pending).remove(&id);
            return Err(McpError::Closed);
        }
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        loop {
            let timeout = tokio::time::sleep(Duration::from_millis(self.timeout_ms.max(1)));
            tokio::select! {
                r = &mut rx => return r.unwrap_or(Err(McpError::Closed)),
                _ = progress.notified() => continue,
                _ = timeout => {
                    self.cancel_pending(id, method, "Request timed out");
                    return Err(McpError::Timeout(self.timeout_ms));
                }
                _ = cancel.cancelled() => {
                    self.cancel_pending(id, method, "Aborted");
                    return Err(McpError::Aborted);
                }
            }
        }
    }

    fn cancel_pending(&self, id: u64, method: &str, reason: &str) {
        lock(&self.pending).remove(&id);
        // The spec forbids cancelling `initialize`.
        if method != "initialize" {
            self.notify(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": reason})),
            );
        }
    }

    /// Every item of a paginated list (`tools/list`, `resources/list`, ...).
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, McpError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let page = self.request(method, params, None, None).await?;
            let Some(list) = page.get(key).and_then(Value::as_array) else {
                return Err(McpError::Rpc {
                    code: -32600,
                    message: format!("Invalid MCP {method} result"),
                });
            };
            items.extend(list.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => {
                    if cursor.as_deref() == Some(c) {
                        return Err(McpError::Other(format!(
                            "MCP {method} returned duplicate cursor: {c}"
                        )));
                    }
                    cursor = Some(c.to_string());
                }
                _ => return Ok(items),
            }
        }
        Err(McpError::Other(format!("MCP {method} exceeded 1000 pages")))
    }

    /// Stops the server: closes stdin, then SIGTERM after 500 ms, SIGKILL 2 s later, to its
    /// whole process group; returns once the connection ended.
    pub async fn close(&self) {
        self.stop.cancel();
        if let Some(http) = &self.http {
            http.close().await;
            return;
        }
        let mut closed = self.closed.clone();
        if tokio::time::timeout(STDIN_CLOSE_GRACE, closed.wait_for(|c| *c))
            .await
            .is_ok()
        {
            return;
        }
        if let Some(pid) = self.pid {
            kill_group(pid, libc::SIGTERM);
        }
        if tokio::time::timeout(CLOSE_TIMEOUT, closed.wait_for(|c| *c))
            .await
            .is_ok()
        {
            return;
        }
        if let Some(pid) = self.pid {
            kill_group(pid, libc::SIGKILL);
        }
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, closed.wait_for(|c| *c)).await;
    }
}

#[allow(unsafe_code)]
fn kill_group(pid: u32, signal: i32) {
    let Ok(pid) = i32::try_from(pid) else { return };
    // SAFETY: kill(2) with a negative pid signals the process group we created for the
    // server (`process_group(0)`); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, signal);
    }
}
