//! One configured server's connection (Pi's `McpServerConnection`): its state as `/mcp` shows
//! it, the tools it offers, and a client opened on demand — a dropped connection reconnects on
//! the next call.

use crate::client::{McpClient, McpError, NotificationSink, StdioParams};
use crate::config::{ServerEntry, Transport};
use crate::log::ServerLog;
use crate::oauth::auth::{HttpAuth, OAuthAuth, ProviderAuth, ProviderToken};
use crate::oauth::discovery::Challenge;
use crate::oauth::store::CredentialStore;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

const STDERR_TAIL_CHARS: usize = 2000;
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

/// Where credentials come from: `mcp-auth.json` for OAuth servers, the model registry for
/// servers with `auth.provider`.
#[derive(Clone, Default)]
pub struct AuthEnv {
    pub credentials: Option<CredentialStore>,
    pub provider_token: Option<ProviderToken>,
}

pub struct Connection {
    pub entry: ServerEntry,
    cwd: PathBuf,
    inner: Mutex<Inner>,
    auth: Option<Arc<dyn HttpAuth>>,
    /// The server's last OAuth challenge; a sign-in uses its metadata URL and scope.
    challenge: Arc<Mutex<Option<Challenge>>>,
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
        Connection::with_auth(entry, cwd, log, on_change, AuthEnv::default())
    }

    pub fn with_auth(
        entry: ServerEntry,
        cwd: &Path,
        log: Arc<ServerLog>,
        on_change: ChangeHook,
        env: AuthEnv,
    ) -> Arc<Connection> {
        let challenge: Arc<Mutex<Option<Challenge>>> = Arc::default();
        let auth = http_auth(&entry, &env, &challenge);
        Arc::new_cyclic(|this| Connection {
            entry,
            cwd: cwd.to_path_buf(),
            inner: Mutex::new(Inner::default()),
            auth,
            challenge,
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
        uses_oauth(&self.entry)
    }

    /// The server URL when the server signs in with OAuth.
    pub fn oauth_url(&self) -> Option<&str> {
        match &self.entry.transport {
            Transport::Http { url, .. } if self.uses_oauth() => Some(url),
            _ => None,
        }
    }

    /// The server's `oauth` settings (the client secret resolved).
    pub fn oauth_settings(&self) -> Result<crate::oauth::Settings, String> {
        crate::oauth::Settings::from_config(&self.entry.name, self.entry.config.get("oauth"))
    }

    /// The last challenge, for a sign-in.
    pub fn challenge(&self) -> Option<Challenge> {
        lock(&self.challenge).clone()
    }

    /// The challenge was answered (signed in).
    pub fn clear_challenge(&self) {
        *lock(&self.challenge) = None;
    }

    fn auth_provider(&self) -> Option<&str> {
        match &self.entry.transport {
            Transport::Http { .. } => self
                .entry
                .config
                .get("auth")
                .and_then(|a| a.get("provider"))
                .and_then(Value::as_str),
            Transport::Stdio { .. } => None,
        }
    }

    /// OAuth servers that still reject the request after a refresh, and provider-authenticated
    /// ones that reject the provider's credential, need the user to sign in.
    fn needs_sign_in(&self, e: &McpError) -> bool {
        matches!(e, McpError::AuthorizationRequired)
            || ((self.uses_oauth() || self.auth.is_some()) && e.is_auth_required())
    }

    fn sign_in_required_message(&self) -> String {
        let how = match self.auth_provider() {
            Some(p) => format!("/login {p}"),
            None => "/mcp".into(),
        };
        format!(
            "MCP server \"{}\" requires sign-in. Run {how} to sign in.",
            self.entry.name
        )
    }

    fn mark_needs_auth(&self) {
        self.set_state(State::NeedsAuth, None);
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
            Err((error, _)) if self.needs_sign_in(&error) && !self.is_closed() => {
                self.mark_needs_auth();
                Err(self.sign_in_required_message())
            }
            Err((error, stderr)) => {
                let tail = tail_chars(&stderr, STDERR_TAIL_CHARS);
                let error = if tail.is_empty() {
                    error.to_string()
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

    async fn connect_once(&self) -> Result<Arc<McpClient>, (McpError, String)> {
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
                        .map_err(|e| (McpError::Other(e), String::new()))?;
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
                        .map_err(|e| (McpError::Other(e), String::new()))?;
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
        .await?;
        self.finish_connect(Arc::new(client)).await
    }

    /// Lists the tools of a new client and makes it the current one.
    async fn finish_connect(
        &self,
        client: Arc<McpClient>,
    ) -> Result<Arc<McpClient>, (McpError, String)> {
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
            return Err((
                McpError::Other("shut down while connecting".into()),
                String::new(),
            ));
        }
        if client.is_closed() {
            return Err((
                McpError::Other("connection closed during setup".into()),
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
    ) -> Result<Arc<McpClient>, (McpError, String)> {
        let mut attempt = 0;
        let client = loop {
            let sink = self.notification_sink();
            let timeout = self.entry.timeout_ms();
            let auth = self.auth.clone();
            match McpClient::connect_http(url, headers.clone(), timeout, sink, self.roots(), auth)
                .await
            {
                Ok(c) => break c,
                Err(e) => match CONNECT_RETRY_DELAYS_MS.get(attempt).copied() {
                    Some(ms) if e.is_transient() && !self.is_closed() => {
                        attempt += 1;
                        tokio::select! {
                            _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                            _ = self.shutdown.cancelled() => return Err((e, String::new())),
                        }
                    }
                    _ => return Err((e, String::new())),
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

    /// Runs a request, reconnecting when needed (Pi's `withClient`). A session the server
    /// forgot is opened anew and the request sent once more (it did not run); read-only
    /// requests also get one more attempt after a transient HTTP error (a tool call may have
    /// run). An authentication failure leaves the server needing a sign-in.
    async fn with_client(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: Option<&CancellationToken>,
        on_progress: Option<crate::client::ProgressSink>,
        read_only: bool,
    ) -> Result<Value, String> {
        let mut attempt = 1;
        loop {
            let client = self.client().await?;
            let result = client
                .request(method, params.clone(), cancel, on_progress.clone())
                .await;
            let error = match result {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            if read_only
                && attempt == 1
                && matches!(error, McpError::Http { .. })
                && error.is_transient()
            {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(CONNECT_RETRY_DELAYS_MS[0]))
                    .await;
                continue;
            }
            if matches!(error, McpError::SessionExpired) && attempt == 1 {
                // Detached, not closed: closing would fail its other calls in flight, which
                // get the same 404 and retry the same way.
                attempt += 1;
                let mut inner = lock(&self.inner);
                if inner
                    .client
                    .as_ref()
                    .is_some_and(|c| Arc::ptr_eq(c, &client))
                {
                    inner.client = None;
                }
                continue;
            }
            if !self.needs_sign_in(&error) {
                return Err(error.to_string());
            }
            self.drop_client(&client).await;
            self.mark_needs_auth();
            return Err(self.sign_in_required_message());
        }
    }

    async fn drop_client(&self, client: &Arc<McpClient>) {
        {
            let mut inner = lock(&self.inner);
            if inner
                .client
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, client))
            {
                inner.client = None;
            }
        }
        client.close().await;
    }

    /// `tools/call`; the connection error if the server is gone.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        cancel: &CancellationToken,
        on_progress: Option<crate::client::ProgressSink>,
    ) -> Result<Value, String> {
        let params = Some(json!({"name": name, "arguments": args}));
        let result = self
            .with_client("tools/call", params, Some(cancel), on_progress, false)
            .await?;
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

    /// A read-only request (resources).
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, String> {
        self.with_client(method, params, None, None, true).await
    }

    /// Disconnects after the stored credentials were removed.
    pub async fn sign_out(&self) {
        let _opening = self.open.lock().await;
        let old = lock(&self.inner).client.take();
        if let Some(c) = old {
            c.close().await;
        }
        if !self.is_closed() {
            self.mark_needs_auth();
        }
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

async fn list_tools(client: &McpClient) -> Result<Vec<Value>, McpError> {
    let tools = client.list_all("tools/list", "tools").await?;
    for t in &tools {
        let ok = t.get("name").is_some_and(Value::is_string)
            && t.get("inputSchema").is_some_and(Value::is_object);
        if !ok {
            return Err(McpError::Other(
                "Invalid entry in MCP tools/list result".into(),
            ));
        }
    }
    Ok(tools)
}

/// HTTP servers sign in with OAuth unless the config sends an `Authorization` header or uses a
/// provider's credentials (`auth`).
pub fn uses_oauth(entry: &ServerEntry) -> bool {
    matches!(&entry.transport, Transport::Http { headers, .. }
        if !entry.config.contains_key("auth")
            && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")))
}

/// The credentials an HTTP server's requests carry.
fn http_auth(
    entry: &ServerEntry,
    env: &AuthEnv,
    challenge: &Arc<Mutex<Option<Challenge>>>,
) -> Option<Arc<dyn HttpAuth>> {
    let Transport::Http { url, .. } = &entry.transport else {
        return None;
    };
    if uses_oauth(entry) {
        let store = env.credentials.as_ref()?.for_server(&entry.name, url);
        let (name, oauth) = (entry.name.clone(), entry.config.get("oauth").cloned());
        let seen = Arc::clone(challenge);
        return Some(Arc::new(OAuthAuth::new(
            store,
            url,
            Arc::new(move || crate::oauth::Settings::from_config(&name, oauth.as_ref())),
            Arc::new(move |c| *lock(&seen) = Some(c)),
        )));
    }
    let provider = entry
        .config
        .get("auth")
        .and_then(|a| a.get("provider"))
        .and_then(Value::as_str)?;
    Some(Arc::new(ProviderAuth {
        provider: provider.to_string(),
        token: env.provider_token.clone()?,
    }))
}
