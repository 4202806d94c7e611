//! The session's MCP servers (Pi's built-in `mcp` extension): connects every enabled server in
//! the background, names and registers their tools, waits for servers with `direct` tools before
//! the first prompt, renders the `mcp_servers` system-prompt section, and answers `/mcp`.
//!
//! The runtime sees it through [`McpHost`] (what it must do when tools change or a notice is
//! due) and the methods here; tools are ordinary [`pi_agent::AgentTool`]s.

use crate::config::{self, Exposure, McpConfig, Scope, ServerEntry};
use crate::connection::AuthEnv;
use crate::connection::{Connection, State};
use crate::log::ServerLog;
use crate::naming;
use crate::oauth::auth::ProviderToken;
use crate::oauth::signin::BoxFuture;
use crate::oauth::store::CredentialStore;
use crate::resources::{self, ResourceServers};
use crate::tool::{ConnectionSource, McpTool};
use pi_agent::AgentTool;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long the first prompt waits for servers with `direct` tools.
pub const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Severity of a notice (`ctx.ui.notify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    Info,
    Warning,
    Error,
}

/// What the session runtime does for the manager.
pub trait McpHost: Send + Sync {
    /// The registered MCP tools changed; `activate` are newly registered `direct` tools to add
    /// to the active set, `deactivate` tools that are no longer reachable directly.
    fn tools_changed(&self, activate: Vec<String>, deactivate: Vec<String>);
    /// A notice for the user (an `extension_ui_request` `notify` in RPC mode).
    fn notify(&self, message: String, kind: Notice);
    /// The same, finished writing when the future is: the startup report must reach the
    /// client before `/mcp` (which waits for startup) answers.
    fn notify_now(&self, message: String, kind: Notice) -> BoxFuture<'_, ()> {
        self.notify(message, kind);
        Box::pin(async {})
    }
}

/// One registered tool as the catalog lists it.
#[derive(Clone)]
pub struct McpToolEntry {
    pub name: String,
    /// The tool registry's exposure: `direct`, `deferred` (codemode or deferred), `hidden`.
    pub exposure: &'static str,
    /// The MCP exposure, for choosing between codemode and tool_search.
    pub mcp_exposure: Exposure,
    pub server: Option<String>,
    pub tool: Arc<dyn AgentTool>,
    pub annotations: Option<Value>,
}

pub(crate) struct Server {
    pub(crate) entry: ServerEntry,
    pub(crate) conn: Option<Arc<Connection>>,
    /// True once the latest connection attempt settled.
    pub(crate) ready: watch::Receiver<bool>,
}

pub(crate) struct Inner {
    pub(crate) servers: Vec<Server>,
    /// Registered tools in registration order.
    tools: Vec<McpToolEntry>,
    /// Tool name → `server\0tool` that owns it, so names stay unique and stable.
    owners: HashMap<String, String>,
    resource_exposure: Option<Exposure>,
    /// `/mcp` lines for registrations a configured server of the same namespace overrides.
    pub(crate) overridden: Vec<String>,
}

/// A server an extension registered (`pi.registerMcpServer`), as the extension host reports it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredServer {
    pub name: String,
    pub config: Value,
    pub extension_path: String,
}

pub struct McpManager {
    pub(crate) inner: Mutex<Inner>,
    pub config_errors: Vec<String>,
    pub auto_enable_codemode: bool,
    pub(crate) agent_dir: PathBuf,
    cwd: PathBuf,
    log: Arc<ServerLog>,
    host: Mutex<Option<Weak<dyn McpHost>>>,
    /// Credentials of OAuth servers and of servers with `auth.provider`.
    auth_env: Mutex<AuthEnv>,
    /// The stored tokens of servers when they came to need a sign-in (JSON), to notice a
    /// sign-in done outside the session (`pi mcp login` run by the agent).
    tokens_at_sign_in: Mutex<HashMap<String, String>>,
    waited_for_startup: AtomicBool,
    /// Settles when every startup connection attempt did (for `/mcp`).
    pub(crate) startup: watch::Sender<bool>,
    /// Cancelled at shutdown: stops sign-ins in progress.
    pub(crate) closing: CancellationToken,
    this: Weak<McpManager>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl McpManager {
    /// Reads `mcp.json` (global, and the project's when trusted); connects nothing yet.
    pub fn load(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> Arc<McpManager> {
        let config = config::load(agent_dir, cwd, project_trusted);
        McpManager::from_config(config, agent_dir, cwd)
    }

    pub fn from_config(config: McpConfig, agent_dir: &Path, cwd: &Path) -> Arc<McpManager> {
        let servers = config
            .servers
            .into_iter()
            .map(|entry| Server {
                entry,
                conn: None,
                ready: watch::channel(true).1,
            })
            .collect();
        Arc::new_cyclic(|this| McpManager {
            inner: Mutex::new(Inner {
                servers,
                tools: Vec::new(),
                owners: HashMap::new(),
                resource_exposure: None,
                overridden: Vec::new(),
            }),
            config_errors: config.errors,
            auto_enable_codemode: config.auto_enable_codemode.unwrap_or(true),
            agent_dir: agent_dir.to_path_buf(),
            cwd: cwd.to_path_buf(),
            log: Arc::new(ServerLog::new(agent_dir.join("mcp.log"))),
            host: Mutex::new(None),
            auth_env: Mutex::new(AuthEnv {
                credentials: Some(CredentialStore::new(agent_dir)),
                provider_token: None,
            }),
            tokens_at_sign_in: Mutex::default(),
            waited_for_startup: AtomicBool::new(false),
            startup: watch::channel(true).0,
            closing: CancellationToken::new(),
            this: this.clone(),
        })
    }

    /// How servers with `auth.provider` get the provider's credential.
    pub fn set_provider_token(&self, token: ProviderToken) {
        lock(&self.auth_env).provider_token = Some(token);
    }

    pub(crate) fn credentials(&self) -> Option<CredentialStore> {
        lock(&self.auth_env).credentials.clone()
    }

    pub(crate) fn host(&self) -> Option<Arc<dyn McpHost>> {
        lock(&self.host).as_ref().and_then(Weak::upgrade)
    }

    pub fn has_servers(&self) -> bool {
        !lock(&self.inner).servers.is_empty()
    }

    /// Which discovery tools the enabled servers' exposures need: `(codemode, tool_search)`.
    pub fn discovery_needs(&self) -> (bool, bool) {
        let inner = lock(&self.inner);
        let exposures: Vec<Exposure> = inner
            .servers
            .iter()
            .filter(|s| s.entry.enabled())
            .flat_map(|s| s.entry.configured_exposures())
            .collect();
        (
            exposures.contains(&Exposure::Codemode),
            exposures.contains(&Exposure::Deferred),
        )
    }

    /// Connects every enabled server in the background; problems are reported once all
    /// attempts settled.
    pub fn start(&self, host: Weak<dyn McpHost>) {
        *lock(&self.host) = Some(host);
        let mut attempts = Vec::new();
        {
            let mut inner = lock(&self.inner);
            for server in inner.servers.iter_mut().filter(|s| s.entry.enabled()) {
                let (tx, rx) = watch::channel(false);
                server.ready = rx;
                let conn = self.new_connection(&server.entry);
                server.conn = Some(Arc::clone(&conn));
                attempts.push((conn, tx));
            }
        }
        if attempts.is_empty() {
            self.report_problems(None);
            return;
        }
        self.startup.send_replace(false);
        let this = self.this.clone();
        tokio::spawn(async move {
            let runs = attempts.into_iter().map(|(conn, tx)| async move {
                let _ = conn.client().await;
                let _ = tx.send(true);
            });
            futures_join_all(runs).await;
            if let Some(m) = this.upgrade() {
                if let (Some(text), Some(host)) = (m.problems(None), m.host()) {
                    host.notify_now(text, Notice::Warning).await;
                }
                m.startup.send_replace(true);
            }
        });
    }

    /// Takes the servers extensions registered, replacing the previous set (Pi's MCP extension
    /// on `mcp_servers_change`). A configured server of the same namespace overrides a
    /// registration (`/mcp` says so). Registrations that went away or whose config changed are
    /// stopped and their tools hidden; new ones connect at once once the manager has started
    /// (before that, [`McpManager::start`] connects them with the configured servers).
    pub fn set_extension_servers(&self, registered: &[RegisteredServer]) {
        let started = self.host().is_some();
        let mut removed: Vec<Arc<Connection>> = Vec::new();
        let mut attempts = Vec::new();
        let (activate, deactivate) = {
            let mut inner = lock(&self.inner);
            let mut next: Vec<ServerEntry> = Vec::new();
            let mut overridden = Vec::new();
            for r in registered {
                let configured = inner.servers.iter().find(|s| {
                    s.entry.scope != Scope::Extension
                        && naming::namespace(&s.entry.name) == naming::namespace(&r.name)
                });
                if let Some(c) = configured {
                    overridden.push(format!(
                        "\"{}\" registered by {} is overridden by \"{}\" in {}",
                        r.name, r.extension_path, c.entry.name, c.entry.source
                    ));
                    continue;
                }
                // The host validated it with this same function; a failure cannot happen.
                if let Ok((config, transport)) = config::validate(&r.name, &r.config) {
                    next.push(ServerEntry {
                        name: r.name.clone(),
                        config,
                        transport,
                        source: r.extension_path.clone(),
                        scope: Scope::Extension,
                        override_path: None,
                    });
                }
            }
            inner.overridden = overridden;
            // Unregistered servers and re-registered ones with a new config go; the latter
            // come back below.
            let mut gone = Vec::new();
            let mut kept = Vec::new();
            for s in std::mem::take(&mut inner.servers) {
                let stays = s.entry.scope != Scope::Extension
                    || next
                        .iter()
                        .any(|n| n.name == s.entry.name && n.config == s.entry.config);
                if stays {
                    kept.push(s);
                } else {
                    gone.push(s.entry.name.clone());
                    removed.extend(s.conn);
                }
            }
            inner.servers = kept;
            let mut deactivate = Vec::new();
            for t in inner.tools.iter_mut() {
                if t.server.as_ref().is_some_and(|s| gone.contains(s)) && t.exposure != "hidden" {
                    t.exposure = "hidden";
                    t.mcp_exposure = Exposure::Hidden;
                    deactivate.push(t.name.clone());
                }
            }
            for entry in next {
                if inner.servers.iter().any(|s| s.entry.name == entry.name) {
                    continue;
                }
                let mut server = Server {
                    entry,
                    conn: None,
                    ready: watch::channel(true).1,
                };
                if started && server.entry.enabled() {
                    let (tx, rx) = watch::channel(false);
                    server.ready = rx;
                    let conn = self.new_connection(&server.entry);
                    server.conn = Some(Arc::clone(&conn));
                    attempts.push((conn, tx));
                }
                inner.servers.push(server);
            }
            let (activate, fewer) = self.sync_resource_tools(&mut inner);
            deactivate.extend(fewer);
            (activate, deactivate)
        };
        if let Some(host) = self.host()
            && !(activate.is_empty() && deactivate.is_empty())
        {
            host.tools_changed(activate, deactivate);
        }
        if !removed.is_empty() {
            tokio::spawn(async move {
                futures_join_all(removed.into_iter().map(|c| async move { c.close().await })).await;
            });
        }
        if attempts.is_empty() {
            return;
        }
        let names: Vec<String> = attempts.iter().map(|(c, _)| c.name().to_string()).collect();
        let this = self.this.clone();
        tokio::spawn(async move {
            let runs = attempts.into_iter().map(|(conn, tx)| async move {
                let _ = conn.client().await;
                let _ = tx.send(true);
            });
            futures_join_all(runs).await;
            if let Some(m) = this.upgrade() {
                m.report_problems(Some(&names));
            }
        });
    }

    fn new_connection(&self, entry: &ServerEntry) -> Arc<Connection> {
        let this = self.this.clone();
        let env = lock(&self.auth_env).clone();
        Connection::with_auth(
            entry.clone(),
            &self.cwd,
            Arc::clone(&self.log),
            Arc::new(move |conn: &Connection, tools_changed: bool| {
                let Some(m) = this.upgrade() else { return };
                if tools_changed {
                    m.register_tools(conn);
                }
                m.watch_sign_in(conn);
            }),
            env,
        )
    }

    /// A server that comes to need a sign-in remembers its stored tokens; once they change
    /// (a sign-in outside the session), [`McpManager::reconnect_signed_in`] reconnects it.
    fn watch_sign_in(&self, conn: &Connection) {
        let name = conn.name().to_string();
        if conn.state() != Some(State::NeedsAuth) {
            lock(&self.tokens_at_sign_in).remove(&name);
            return;
        }
        if lock(&self.tokens_at_sign_in).contains_key(&name) {
            return;
        }
        let (Some(url), Some(store)) = (conn.oauth_url().map(str::to_string), self.credentials())
        else {
            return;
        };
        lock(&self.tokens_at_sign_in).insert(name.clone(), "null".into());
        let this = self.this.clone();
        tokio::spawn(async move {
            let tokens = store.tokens(&name, &url).await.unwrap_or(Value::Null);
            if let Some(m) = this.upgrade()
                && let Some(seen) = lock(&m.tokens_at_sign_in).get_mut(&name)
            {
                *seen = tokens.to_string();
            }
        });
    }

    /// Before a prompt: servers waiting for a sign-in whose credentials were stored since
    /// (by `pi mcp login` in another process) connect again.
    pub async fn reconnect_signed_in(&self) {
        let waiting: Vec<(String, String)> = lock(&self.tokens_at_sign_in)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if waiting.is_empty() {
            return;
        }
        let Some(store) = self.credentials() else {
            return;
        };
        let mut signed_in = Vec::new();
        for (name, seen) in waiting {
            let Some(conn) = self.connection(&name) else {
                continue;
            };
            let Some(url) = conn.oauth_url().map(str::to_string) else {
                continue;
            };
            let now = store
                .tokens(&name, &url)
                .await
                .unwrap_or(Value::Null)
                .to_string();
            if now != seen {
                lock(&self.tokens_at_sign_in).remove(&name);
                signed_in.push(conn);
            }
        }
        futures_join_all(signed_in.into_iter().map(|c| async move {
            let _ = c.reconnect().await;
        }))
        .await;
    }

    pub(crate) fn connection(&self, name: &str) -> Option<Arc<Connection>> {
        lock(&self.inner)
            .servers
            .iter()
            .find(|s| s.entry.name == name)
            .and_then(|s| s.conn.clone())
    }

    /// Registers (or re-registers) a connected server's tools; tools it dropped become hidden.
    fn register_tools(&self, conn: &Connection) {
        let server = conn.name().to_string();
        let offered = conn.tools();
        let source: Arc<dyn ConnectionSource> = Arc::new(Source(self.this.clone()));
        let (activate, deactivate) = {
            let mut inner = lock(&self.inner);
            // A connection of a server that is gone (unregistered by its extension meanwhile)
            // registers nothing.
            let current = inner.servers.iter().find(|s| {
                s.entry.name == server
                    && s.conn
                        .as_ref()
                        .is_some_and(|c| std::ptr::eq(Arc::as_ptr(c), conn))
            });
            let Some(entry) = current.map(|s| s.entry.clone()) else {
                return;
            };
            let names: Vec<String> = offered
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            let plain: Vec<String> = names
                .iter()
                .map(|t| naming::tool_name(&server, t, |_| false))
                .collect();
            let mut current: Vec<String> = Vec::new();
            let mut activate = Vec::new();
            for tool in &offered {
                let Some(tool_name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let owner = format!("{server}\0{tool_name}");
                let name = naming::tool_name(&server, tool_name, |candidate| {
                    inner.owners.get(candidate).is_some_and(|o| *o != owner)
                        || current.iter().any(|c| c == candidate)
                        || plain.iter().filter(|p| *p == candidate).count() > 1
                });
                inner.owners.insert(name.clone(), owner);
                current.push(name.clone());
                let exposure = entry.tool_exposure(tool_name);
                let agent_tool: Arc<dyn AgentTool> = Arc::new(McpTool::new(
                    name.clone(),
                    &server,
                    tool,
                    Arc::clone(&source),
                ));
                let registered = McpToolEntry {
                    name: name.clone(),
                    exposure: exposure.tool_exposure(),
                    mcp_exposure: exposure,
                    server: Some(server.clone()),
                    tool: agent_tool,
                    annotations: annotations(tool),
                };
                match inner.tools.iter().position(|t| t.name == name) {
                    Some(i) => {
                        if inner.tools[i].exposure != "direct" && exposure == Exposure::Direct {
                            activate.push(name.clone());
                        }
                        inner.tools[i] = registered;
                    }
                    None => {
                        if exposure == Exposure::Direct {
                            activate.push(name.clone());
                        }
                        inner.tools.push(registered);
                    }
                }
            }
            let mut deactivate = Vec::new();
            for t in inner.tools.iter_mut() {
                if t.server.as_deref() == Some(server.as_str()) && !current.contains(&t.name) {
                    t.exposure = "hidden";
                    t.mcp_exposure = Exposure::Hidden;
                    deactivate.push(t.name.clone());
                }
            }
            let (more, fewer) = self.sync_resource_tools(&mut inner);
            activate.extend(more);
            deactivate.extend(fewer);
            (activate, deactivate)
        };
        if let Some(host) = self.host() {
            host.tools_changed(activate, deactivate);
        }
    }

    /// Registers the resource tools with the widest exposure of the servers they reach.
    fn sync_resource_tools(&self, inner: &mut Inner) -> (Vec<String>, Vec<String>) {
        let exposures: Vec<Exposure> = inner
            .servers
            .iter()
            .filter(|s| s.entry.enabled() && s.entry.exposure() != Exposure::Hidden)
            .filter(|s| s.conn.as_ref().is_some_and(|c| c.has_resources()))
            .map(|s| s.entry.exposure())
            .collect();
        let next = [Exposure::Direct, Exposure::Codemode, Exposure::Deferred]
            .into_iter()
            .find(|e| exposures.contains(e))
            .unwrap_or(Exposure::Hidden);
        if Some(next) == inner.resource_exposure
            || (inner.resource_exposure.is_none() && next == Exposure::Hidden)
        {
            return (Vec::new(), Vec::new());
        }
        let was_direct = inner.resource_exposure == Some(Exposure::Direct);
        inner.resource_exposure = Some(next);
        let servers: Arc<dyn ResourceServers> = Arc::new(Source(self.this.clone()));
        let mut activate = Vec::new();
        let mut deactivate = Vec::new();
        for tool in resources::resource_tools(servers) {
            let name = tool.name().to_string();
            if next == Exposure::Direct {
                activate.push(name.clone());
            } else if was_direct {
                deactivate.push(name.clone());
            }
            let entry = McpToolEntry {
                name: name.clone(),
                exposure: next.tool_exposure(),
                mcp_exposure: next,
                server: None,
                tool,
                annotations: Some(serde_json::json!({"readOnlyHint": true})),
            };
            match inner.tools.iter().position(|t| t.name == name) {
                Some(i) => inner.tools[i] = entry,
                None => inner.tools.push(entry),
            }
        }
        (activate, deactivate)
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> Vec<McpToolEntry> {
        lock(&self.inner).tools.clone()
    }

    pub fn tool(&self, name: &str) -> Option<McpToolEntry> {
        lock(&self.inner)
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// The namespace of a server tool, for search and scripts: `(name, description, instructions)`.
    pub fn namespace_of(&self, tool: &str) -> Option<(String, Option<String>, Option<String>)> {
        let inner = lock(&self.inner);
        let server = inner
            .tools
            .iter()
            .find(|t| t.name == tool)?
            .server
            .clone()?;
        let s = inner.servers.iter().find(|s| s.entry.name == server)?;
        Some((
            naming::namespace(&server),
            s.entry
                .description()
                .map(pi_js::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_string),
            s.conn.as_ref().and_then(|c| c.instructions()),
        ))
    }

    /// Before the first prompt: waits up to [`STARTUP_WAIT`] for servers with `direct` tools.
    pub async fn wait_for_direct_servers(&self) {
        if self.waited_for_startup.swap(true, Ordering::SeqCst) {
            return;
        }
        let ready: Vec<watch::Receiver<bool>> = lock(&self.inner)
            .servers
            .iter()
            .filter(|s| s.entry.enabled() && s.entry.has_direct_tools())
            .map(|s| s.ready.clone())
            .collect();
        if ready.is_empty() {
            return;
        }
        let all = futures_join_all(ready.into_iter().map(|mut r| async move {
            let _ = r.wait_for(|done| *done).await;
        }));
        if tokio::time::timeout(STARTUP_WAIT, all).await.is_err()
            && let Some(host) = self.host()
        {
            host.notify(
                "MCP servers are still connecting; their tools become available once connected."
                    .into(),
                Notice::Info,
            );
        }
    }

    /// Waits for the servers a call needs: the owner of an MCP tool, or all of them for the
    /// resource tools and tools that reach every tool (`tool_search`).
    pub async fn wait_for_tool(&self, tool: &str, reaches_all: bool) {
        let owner = lock(&self.inner)
            .owners
            .get(tool)
            .and_then(|o| o.split('\0').next().map(str::to_string));
        let all = reaches_all || resources::is_resource_tool(tool);
        let ready: Vec<watch::Receiver<bool>> = lock(&self.inner)
            .servers
            .iter()
            .filter(|s| s.entry.enabled())
            .filter(|s| all || owner.as_deref() == Some(s.entry.name.as_str()))
            .map(|s| s.ready.clone())
            .collect();
        for mut r in ready {
            let _ = r.wait_for(|done| *done).await;
        }
    }

    /// Waits for the servers a codemode script may reach: every server when it uses a
    /// discovery global, else those whose namespace (`mcp__<server>`) its words contain.
    pub async fn wait_for_script(&self, code: &str) {
        let all = [
            "searchTools",
            "describeNamespace",
            "describeTool",
            "ALL_TOOLS",
        ]
        .iter()
        .any(|g| code.contains(g));
        let ready: Vec<watch::Receiver<bool>> = lock(&self.inner)
            .servers
            .iter()
            .filter(|s| s.entry.enabled())
            .filter(|s| all || code.contains(&naming::namespace(&s.entry.name)))
            .map(|s| s.ready.clone())
            .collect();
        for mut r in ready {
            let _ = r.wait_for(|done| *done).await;
        }
    }

    /// The `mcp_servers` section: enabled servers with codemode or deferred tools, with how
    /// their tools are reached and a one-line summary; `None` when there are none.
    pub fn servers_section(&self) -> Option<String> {
        let inner = lock(&self.inner);
        let mut listed: Vec<&Server> = inner
            .servers
            .iter()
            .filter(|s| s.entry.enabled() && s.entry.has_indirect_tools())
            .collect();
        listed.sort_by(|a, b| pi_js::locale_compare(&a.entry.name, &b.entry.name));
        let rows: Vec<crate::section::SectionServer> = listed
            .iter()
            .map(|s| crate::section::SectionServer {
                name: s.entry.name.clone(),
                codemode: s.entry.configured_exposures().contains(&Exposure::Codemode),
                summary: naming::server_summary(
                    s.entry.description(),
                    s.conn.as_ref().and_then(|c| c.instructions()).as_deref(),
                ),
            })
            .collect();
        crate::section::render(&rows)
    }

    /// One notice for everything that needs the user after startup.
    fn report_problems(&self, only: Option<&[String]>) {
        if let (Some(text), Some(host)) = (self.problems(only), self.host()) {
            host.notify(text, Notice::Warning);
        }
    }

    /// The report of servers that need the user, or of config errors (all servers, or `only`).
    fn problems(&self, only: Option<&[String]>) -> Option<String> {
        let mut lines: Vec<String> = if only.is_none() {
            self.config_errors
                .iter()
                .map(|e| format!("config: {e}"))
                .collect()
        } else {
            Vec::new()
        };
        for s in lock(&self.inner).servers.iter() {
            if only.is_some_and(|o| !o.contains(&s.entry.name)) {
                continue;
            }
            if let Some(c) = &s.conn
                && matches!(c.state(), Some(State::Failed | State::NeedsAuth))
            {
                lines.push(format!("{}: {}", s.entry.name, describe_state(s, true)));
            }
        }
        if lines.is_empty() {
            return None;
        }
        let text = lines
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n");
        Some(format!(
            "MCP servers need attention:\n{text}\nRun /mcp to fix."
        ))
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        self.closing.cancel();
        let conns: Vec<Arc<Connection>> = lock(&self.inner)
            .servers
            .iter_mut()
            .filter_map(|s| s.conn.take())
            .collect();
        futures_join_all(conns.into_iter().map(|c| async move { c.close().await })).await;
    }
}

/// Short state for the startup report.
pub(crate) fn describe_state(s: &Server, with_error: bool) -> String {
    if !s.entry.enabled() {
        return "disabled".into();
    }
    let Some(conn) = &s.conn else {
        return "starting".into();
    };
    match conn.state() {
        Some(State::NeedsAuth) => "needs sign-in".into(),
        Some(State::Failed) if with_error => {
            let e = conn.error().unwrap_or_else(|| "unknown error".into());
            format!("failed: {}", e.split('\n').next().unwrap_or(""))
        }
        Some(State::Failed) => "failed".into(),
        Some(State::Connected) => {
            let n = conn.tools().len();
            let res = if conn.has_resources() {
                " · resources"
            } else {
                ""
            };
            format!("connected · {n} tool{}{res}", if n == 1 { "" } else { "s" })
        }
        Some(State::Connecting) => "connecting…".into(),
        Some(other) => other.as_str().into(),
        None => "starting".into(),
    }
}

fn annotations(tool: &Value) -> Option<Value> {
    let mut out = serde_json::Map::new();
    for hint in [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ] {
        if let Some(b) = tool
            .pointer(&format!("/annotations/{hint}"))
            .filter(|v| v.is_boolean())
        {
            out.insert(hint.into(), b.clone());
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Runs futures concurrently to completion (no `futures` crate for one helper).
pub(crate) async fn futures_join_all<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl IntoIterator<Item = F>,
) {
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    for h in handles {
        let _ = h.await;
    }
}

/// The manager as tools see it.
struct Source(Weak<McpManager>);

impl ConnectionSource for Source {
    fn connection_for(&self, server: &str, tool: &str) -> Result<Arc<Connection>, String> {
        let m = self.0.upgrade().ok_or("MCP is shut down")?;
        let inner = lock(&m.inner);
        let s = inner
            .servers
            .iter()
            .find(|s| s.entry.name == server && s.entry.enabled())
            .ok_or_else(|| format!("MCP server \"{server}\" is disabled."))?;
        let conn = s
            .conn
            .clone()
            .ok_or_else(|| format!("MCP server \"{server}\" is still starting."))?;
        let offered = conn
            .tools()
            .iter()
            .any(|t| t.get("name").and_then(Value::as_str) == Some(tool));
        if s.entry.tool_exposure(tool) == Exposure::Hidden
            || (conn.state() == Some(State::Connected) && !offered)
        {
            return Err(format!(
                "MCP tool \"{server}/{tool}\" is no longer available."
            ));
        }
        Ok(conn)
    }

    fn readable_resources(&self, server: &str) -> bool {
        self.resource_servers().iter().any(|c| c.name() == server)
    }
}

impl ResourceServers for Source {
    fn resource_servers(&self) -> Vec<Arc<Connection>> {
        let Some(m) = self.0.upgrade() else {
            return Vec::new();
        };
        lock(&m.inner)
            .servers
            .iter()
            .filter(|s| s.entry.enabled() && s.entry.exposure() != Exposure::Hidden)
            .filter_map(|s| s.conn.clone())
            .filter(|c| c.has_resources())
            .collect()
    }
}
