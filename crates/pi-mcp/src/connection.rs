//! One configured server's connection (Pi's `McpServerConnection`): its state as `/mcp` shows
//! it, the tools it offers, and a client opened on demand — a dropped connection reconnects on
//! the next call.

use crate::client::{McpClient, McpError, NotificationSink, StdioParams};
use crate::config::{ServerEntry, Transport};
use crate::log::ServerLog;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

const STDERR_TAIL_CHARS: usize = 2000;
/// The error of a 401 answer (`McpAuthRequiredError`).
const UNAUTHORIZED: &str = "MCP server requires authentication";
/// Delays between attempts to connect to an HTTP server that failed with a transient error.
const CONNECT_RETRY_DELAYS_MS: [u64; 2] = [250, 1000];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Connecting,
    Connected,
    Failed,
    Disconnected,
    NeedsAuth,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Connected => "connected",
            State::Failed => "failed",
            State::Disconnected => "disconnected",
            State::NeedsAuth => "needs-auth",
            State::Closed => "closed",
        }
    }
}

#[derive(Default)]
struct Inner {
    state: Option<State>,
    error: Option<String>,
    tools: Vec<Value>,
    instructions: Option<String>,
    has_resources: bool,
    client: Option<Arc<McpClient>>,
    /// Counts clients, so a late close of an old one is not taken for the current one.
    generation: u64,
}

/// Called when the tool list (`tools`) or the state changed.
pub type ChangeHook = Arc<dyn Fn(&Connection, bool) + Send + Sync>;

pub struct Connection {
    pub entry: ServerEntry,
    cwd: PathBuf,
    inner: Mutex<Inner>,
    open: tokio::sync::Mutex<()>,
    shutdown: CancellationToken,
    log: Arc<ServerLog>,
    /// `(connection, tools_changed)`.
    on_change: ChangeHook,
    this: Weak<Connection>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The last `max` characters.
fn tail_chars(s: &str, max: usize) -> &str {
    let n = s.chars().count();
    if n <= max {
        return s;
    }
    let skip = s.char_indices().nth(n - max).map_or(0, |(i, _)| i);
    &s[skip..]
}

/// `~` and `~/...` name the home directory.
fn expand_home(value: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    if value == "~" {
        return home;
    }
    match value.strip_prefix("~/") {
        Some(rest) => Path::new(&home).join(rest).display().to_string(),
        None => value.to_string(),
    }
}

impl Connection {
    pub fn new(
        entry: ServerEntry,
        cwd: &Path,
        log: Arc<ServerLog>,
        on_change: ChangeHook,
    ) -> Arc<Connection> {
        Arc::new_cyclic(|this| Connection {
            entry,
            cwd: cwd.to_path_buf(),
            inner: Mutex::new(Inner::default()),
            open: tokio::sync::Mutex::new(()),
            shutdown: CancellationToken::new(),
            log,
            on_change,
            this: this.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// `None` until the first connection attempt starts.
    pub fn state(&self) -> Option<State> {
        lock(&self.inner).state
    }

    pub fn error(&self) -> Option<String> {
        lock(&self.inner).error.clone()
    }

    pub fn tools(&self) -> Vec<Value> {
        lock(&self.inner).tools.clone()
    }

    pub fn instructions(&self) -> Option<String> {
        lock(&self.inner).instructions.clone()
    }

    pub fn has_resources(&self) -> bool {
        lock(&self.inner).has_resources
    }

    pub fn is_closed(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    fn set_state(&self, state: State, error: Option<String>) {
        {
            let mut inner = lock(&self.inner);
            inner.state = Some(state);
            inner.error = error;
        }
        (self.on_change)(self, false);
    }

    /// HTTP servers sign in with OAuth unless the config sends an `Authorization` header or
    /// uses a provider's credentials (`auth`).
    pub fn uses_oauth(&self) -> bool {
        matches!(&self.entry.transport, Transport::Http { headers, .. }
            if !self.entry.config.contains_key("auth")
                && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")))
    }

    /// The open client, connecting first when there is none.
    pub async fn client(&self) -> Result<Arc<McpClient>, String> {
        if self.is_closed() {
            return Err(format!("MCP server \"{}\" is shut down", self.entry.name));
        }
        if let Some(c) = self.live_client() {
            return Ok(c);
        }
        let _opening = self.open.lock().await;
        if let Some(c) = self.live_client() {
            return Ok(c);
        }
        self.open().await
    }

    fn live_client(&self) -> Option<Arc<McpClient>> {
        let inner = lock(&self.inner);
        inner
            .client
            .as_ref()
            .filter(|c| !c.is_closed() && inner.state == Some(State::Connected))
            .cloned()
    }

    async fn open(&self) -> Result<Arc<McpClient>, String> {
        self.set_state(State::Connecting, None);
        match self.connect_once().await {
            Ok(client) => Ok(client),
            Err((error, _)) if error == UNAUTHORIZED && self.uses_oauth() && !self.is_closed() => {
                // An OAuth server without stored credentials: the user has to sign in.
                self.set_state(State::NeedsAuth, None);
                Err(format!(
                    "MCP server \"{}\" requires sign-in. Run /mcp to sign in.",
                    self.entry.name
                ))
            }
            Err((error, stderr)) => {
                let tail = tail_chars(&stderr, STDERR_TAIL_CHARS);
                let error = if tail.is_empty() {
                    error
                } else {
                    format!("{error}\n{tail}")
                };
                let state = if self.is_closed() {
                    State::Closed
                } else {
                    State::Failed
                };
                self.set_state(state, Some(error.clone()));
                Err(format!(
                    "MCP server \"{}\" failed to connect: {error}",
                    self.entry.name
                ))
            }
        }
    }

    async fn connect_once(&self) -> Result<Arc<McpClient>, (String, String)> {
        let params = match &self.entry.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut resolved = Vec::new();
                for (k, v) in env {
                    let what = format!("MCP server \"{}\" env \"{k}\"", self.entry.name);
                    let value = pi_registry::resolve_config_value(v, &what)
                        .map_err(|e| (e, String::new()))?;
                    resolved.push((k.clone(), value));
                }
                StdioParams {
                    command: expand_home(command),
                    args: args.iter().map(|a| expand_home(a)).collect(),
                    env: resolved,
                    cwd: self.cwd.join(expand_home(cwd.as_deref().unwrap_or("."))),
                }
            }
            Transport::Http { url, headers } => {
                let mut resolved = Vec::new();
                for (k, v) in headers {
                    let what = format!("MCP server \"{}\" header \"{k}\"", self.entry.name);
                    let value = pi_registry::resolve_config_value(v, &what)
                        .map_err(|e| (e, String::new()))?;
                    resolved.push((k.clone(), value));
                }
                return self.connect_http(url, resolved).await;
            }
        };
        let generation = {
            let mut inner = lock(&self.inner);
            inner.generation += 1;
            inner.generation
        };
        let sink = self.notification_sink();
        let weak = self.this.clone();
        let on_close = Box::new(move || {
            if let Some(conn) = weak.upgrade() {
                conn.client_closed(generation);
            }
        });
        let client = McpClient::connect_stdio(
            &params,
            self.entry.timeout_ms(),
            sink,
            self.roots(),
            on_close,
        )
        .await
        .map_err(|(e, tail)| (e.to_string(), tail))?;
        self.finish_connect(Arc::new(client)).await
    }

    /// Lists the tools of a new client and makes it the current one.
    async fn finish_connect(
        &self,
        client: Arc<McpClient>,
    ) -> Result<Arc<McpClient>, (String, String)> {
        let tools = if client.info.capabilities.get("tools").is_some() {
            match list_tools(&client).await {
                Ok(t) => t,
                Err(e) => {
                    client.close().await;
                    return Err((e, client.stderr_tail()));
                }
            }
        } else {
            Vec::new()
        };
        if self.is_closed() {
            client.close().await;
            return Err(("shut down while connecting".into(), String::new()));
        }
        if client.is_closed() {
            return Err((
                "connection closed during setup".into(),
                client.stderr_tail(),
            ));
        }
        {
            let mut inner = lock(&self.inner);
            inner.client = Some(Arc::clone(&client));
            inner.tools = tools;
            inner.has_resources = client.info.capabilities.get("resources").is_some();
            inner.instructions = client
                .info
                .instructions
                .as_deref()
                .map(pi_js::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            inner.state = Some(State::Connected);
            inner.error = None;
        }
        (self.on_change)(self, true);
        Ok(client)
    }

    /// Opens an HTTP session; network errors and transient statuses get two more attempts.
    async fn connect_http(
        &self,
        url: &str,
        headers: Vec<(String, String)>,
    ) -> Result<Arc<McpClient>, (String, String)> {
        let mut attempt = 0;
        let client = loop {
            let sink = self.notification_sink();
            let timeout = self.entry.timeout_ms();
            match McpClient::connect_http(url, headers.clone(), timeout, sink, self.roots()).await {
                Ok(c) => break c,
                Err(e) => match CONNECT_RETRY_DELAYS_MS.get(attempt).copied() {
                    Some(ms) if e.is_transient() && !self.is_closed() => {
                        attempt += 1;
                        tokio::select! {
                            _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                            _ = self.shutdown.cancelled() => return Err((e.to_string(), String::new())),
                        }
                    }
                    _ => return Err((e.to_string(), String::new())),
                },
            }
        };
        self.finish_connect(Arc::new(client)).await
    }

    fn roots(&self) -> Value {
        json!([{
            "uri": format!("file://{}", self.cwd.display()),
            "name": self.cwd.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
        }])
    }

    fn notification_sink(&self) -> NotificationSink {
        let weak = self.this.clone();
        Arc::new(move |method: &str, params: &Value| {
            let Some(conn) = weak.upgrade() else { return };
            match method {
                "notifications/message" => conn.log.write(&conn.entry.name, params),
                "notifications/tools/list_changed" => {
                    tokio::spawn(async move { conn.refresh_tools().await });
                }
                _ => {}
            }
        })
    }

    async fn refresh_tools(&self) {
        let Some(client) = self.live_client() else {
            return;
        };
        match list_tools(&client).await {
            Ok(tools) => {
                lock(&self.inner).tools = tools;
                (self.on_change)(self, true);
            }
            Err(e) => {
                lock(&self.inner).error = Some(format!("Failed to refresh tools: {e}"));
                (self.on_change)(self, false);
            }
        }
    }

    /// The transport dropped: the next call reconnects; until then the status says why.
    fn client_closed(&self, generation: u64) {
        if self.is_closed() {
            return;
        }
        let error = {
            let mut inner = lock(&self.inner);
            if inner.generation != generation || inner.client.is_none() {
                return;
            }
            let stderr = inner
                .client
                .take()
                .map(|c| c.stderr_tail())
                .unwrap_or_default();
            inner.state = Some(State::Disconnected);
            let tail = tail_chars(&stderr, STDERR_TAIL_CHARS);
            let error = if tail.is_empty() {
                "Connection closed".to_string()
            } else {
                format!("Connection closed\n{tail}")
            };
            inner.error = Some(error.clone());
            error
        };
        let _ = error;
        (self.on_change)(self, false);
    }

    /// `tools/call`; the connection error if the server is gone.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        cancel: &CancellationToken,
        on_progress: Option<crate::client::ProgressSink>,
    ) -> Result<Value, String> {
        let client = self.client().await?;
        let result = client
            .request(
                "tools/call",
                Some(json!({"name": name, "arguments": args})),
                Some(cancel),
                on_progress,
            )
            .await
            .map_err(|e| e.to_string())?;
        match result {
            Value::Object(mut m) => {
                match m.get("content") {
                    None => {
                        m.insert("content".into(), json!([]));
                    }
                    Some(Value::Array(_)) => {}
                    Some(_) => return Err("Invalid MCP tools/call result".into()),
                }
                Ok(Value::Object(m))
            }
            _ => Err("Invalid MCP tools/call result".into()),
        }
    }

    /// A read-only request (resources), retried after a reconnect once.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, String> {
        let client = self.client().await?;
        client
            .request(method, params, None, None)
            .await
            .map_err(|e: McpError| e.to_string())
    }

    /// Drops the client and connects again.
    pub async fn reconnect(&self) -> Result<(), String> {
        let _opening = self.open.lock().await;
        let old = lock(&self.inner).client.take();
        if let Some(c) = old {
            c.close().await;
        }
        self.open().await.map(|_| ())
    }

    /// Stops the server for good.
    pub async fn close(&self) {
        self.shutdown.cancel();
        let client = {
            let mut inner = lock(&self.inner);
            inner.state = Some(State::Closed);
            inner.client.take()
        };
        if let Some(c) = client {
            c.close().await;
        }
    }
}

async fn list_tools(client: &McpClient) -> Result<Vec<Value>, String> {
    let tools = client
        .list_all("tools/list", "tools")
        .await
        .map_err(|e| e.to_string())?;
    for t in &tools {
        let ok = t.get("name").is_some_and(Value::is_string)
            && t.get("inputSchema").is_some_and(Value::is_object);
        if !ok {
            return Err("Invalid entry in MCP tools/list result".into());
        }
    }
    Ok(tools)
}
