//! The session's side of MCP (Pi's built-in `mcp`, `codemode` and `tool-search` extensions):
//! the tools they add to the catalog, starting the servers, the wait before a prompt, the
//! `mcp_servers` section, `/mcp`, and shutdown. The servers themselves live in `pi-mcp`.
//!
//! Entry points used elsewhere in the runtime: [`Core::start_mcp`] (startup),
//! [`Core::mcp_before_prompt`] and [`Core::with_mcp_section`] (prompt), [`Runtime::mcp_command`]
//! and [`Runtime::run_mcp_command`] (RPC dispatch), [`Core::shutdown_mcp`] (shutdown).
//!
//! Extensions' `pi.registerMcpServer()` registrations come from the host (with each load
//! result, and as `mcp_servers` effects after loading) and go to [`pi_mcp::McpManager`] as
//! extension-scoped servers, which a `mcp.json` server of the same namespace overrides
//! ([`Core::mcp_registrations_loaded`], [`Core::mcp_servers_changed`]).

use super::{Core, Runtime, lock};
use crate::resources::system_prompt::{Sections, ToolPrompt};
use pi_agent::AgentTool;
use pi_mcp::codemode::{self, CODEMODE_TOOL_NAME};
use pi_mcp::oauth::signin::BoxFuture;
use pi_mcp::tool_search::{SearchDoc, TOOL_SEARCH_TOOL_NAME, ToolSearchHost};
use pi_mcp::{McpHost, McpManager, Notice};
use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::extension_ui::{ExtensionUiRequest, NotifyType, UiRequest};
use pi_protocol::results::{SourceInfo, SourceOrigin, SourceScope};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The catalog's MCP part: the built-in extensions' tools and the servers' tools.
#[derive(Default)]
pub(crate) struct McpTools {
    /// `codemode` and `tool_search`, when their built-in extensions load.
    builtin: Mutex<Vec<Arc<dyn AgentTool>>>,
    /// The servers of the session's cwd (replaced when the session moves to another one).
    manager: Mutex<Option<Arc<McpManager>>>,
    /// The "neither is active" warning was shown (Pi shows it once per session).
    warned_unreachable: AtomicBool,
    /// Registered servers already reported as connected by nothing (no built-in MCP).
    reported_unhandled: Mutex<HashSet<String>>,
    /// `/mcp`'s own dialogs waiting for the client's `extension_ui_response`, by request id.
    dialogs: Mutex<HashMap<String, oneshot::Sender<ExtensionUiResponse>>>,
}

fn builtin_source(name: &str) -> SourceInfo {
    SourceInfo {
        path: format!("builtin:{name}"),
        source: "builtin".into(),
        scope: SourceScope::Temporary,
        origin: SourceOrigin::TopLevel,
        base_dir: None,
        changelog_path: None,
    }
}

impl McpTools {
    pub fn manager(&self) -> Option<Arc<McpManager>> {
        lock(&self.manager).clone()
    }

    /// Hands the client's answer to a dialog of `/mcp`; false when the id is not one of ours.
    pub fn answer_dialog(&self, response: &ExtensionUiResponse) -> bool {
        match lock(&self.dialogs).remove(&response.id) {
            Some(tx) => {
                let _ = tx.send(response.clone());
                true
            }
            None => false,
        }
    }

    /// Whether `--tools`/`--exclude-tools` keep an MCP tool registered: an allowlist filters
    /// MCP tools only once one of its entries starts with `mcp__`; exclusions are patterns.
    fn mcp_registered(name: &str, catalog: &super::ToolCatalog) -> bool {
        if pi_mcp::config::matches_any(catalog.excluded(), name) {
            return false;
        }
        match catalog.allowlist() {
            Some(list) if list.iter().any(|e| e.starts_with("mcp__")) => {
                pi_mcp::config::matches_any(list, name)
            }
            _ => true,
        }
    }

    /// Whether an MCP `direct` tool may be declared: with an allowlist, only a named one.
    fn mcp_declarable(name: &str, catalog: &super::ToolCatalog) -> bool {
        Self::mcp_registered(name, catalog)
            && catalog
                .allowlist()
                .is_none_or(|list| pi_mcp::config::matches_any(list, name))
    }

    pub fn get(&self, name: &str, catalog: &super::ToolCatalog) -> Option<Arc<dyn AgentTool>> {
        if let Some(t) = lock(&self.builtin).iter().find(|t| t.name() == name) {
            return catalog.is_allowed(name).then(|| Arc::clone(t));
        }
        let entry = self.manager()?.tool(name)?;
        Self::mcp_registered(name, catalog).then_some(entry.tool)
    }

    pub fn names(&self, catalog: &super::ToolCatalog) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.builtin)
            .iter()
            .map(|t| t.name().to_string())
            .filter(|n| catalog.is_allowed(n))
            .collect();
        if let Some(m) = self.manager() {
            names.extend(
                m.tools()
                    .into_iter()
                    .map(|t| t.name)
                    .filter(|n| Self::mcp_registered(n, catalog)),
            );
        }
        names
    }

    pub fn is_hidden(&self, name: &str) -> bool {
        self.manager()
            .and_then(|m| m.tool(name))
            .is_some_and(|t| t.exposure == "hidden")
    }

    /// The registry's exposure of a tool of ours (`None`: not ours).
    fn exposure(&self, name: &str) -> Option<&'static str> {
        if lock(&self.builtin).iter().any(|t| t.name() == name) {
            return Some("model-only");
        }
        self.manager()?.tool(name).map(|t| t.exposure)
    }

    pub fn prompt(&self, name: &str) -> Option<ToolPrompt> {
        let ours = lock(&self.builtin).iter().any(|t| t.name() == name);
        match name {
            CODEMODE_TOOL_NAME if ours => Some(ToolPrompt {
                name: name.into(),
                snippet: Some(codemode::PROMPT_SNIPPET.into()),
                guidelines: vec![codemode::PROMPT_GUIDELINE.into()],
            }),
            TOOL_SEARCH_TOOL_NAME if ours => Some(ToolPrompt {
                name: name.into(),
                snippet: Some(
                    "Search for tools that are not loaded yet and load the matches".into(),
                ),
                guidelines: Vec::new(),
            }),
            _ => self.manager()?.tool(name).map(|_| ToolPrompt {
                name: name.into(),
                ..ToolPrompt::default()
            }),
        }
    }

    /// `pi.getAllTools()`'s entry.
    pub fn info(&self, name: &str, catalog: &super::ToolCatalog) -> Option<Value> {
        let tool = self.get(name, catalog)?;
        let decl = tool.declaration();
        let exposure = self.exposure(name)?;
        let mut info = json!({
            "name": decl.name,
            "description": decl.description,
            "parameters": decl.parameters,
            "exposure": exposure,
        });
        if let Some(entry) = self.manager().and_then(|m| m.tool(name)) {
            if let Some((ns, description, instructions)) =
                self.manager().and_then(|m| m.namespace_of(name))
            {
                let mut namespace = json!({"name": ns});
                if let Some(d) = description {
                    namespace["description"] = json!(d);
                }
                if let Some(i) = instructions {
                    namespace["instructions"] = json!(i);
                }
                info["namespace"] = namespace;
            }
            if let Some(a) = entry.annotations {
                info["annotations"] = a;
            }
            info["sourceInfo"] = json!(builtin_source("mcp"));
        } else {
            let ext = if name == CODEMODE_TOOL_NAME {
                "codemode"
            } else {
                "tool-search"
            };
            info["reachesTools"] = json!(true);
            info["sourceInfo"] = json!(builtin_source(ext));
        }
        Some(info)
    }
}

impl Core {
    /// Registers the built-in extensions' tools and starts the MCP servers (in the
    /// background). Returns the tools to activate at once (`codemode`/`tool_search` when the
    /// servers' exposures need them).
    pub(crate) fn start_mcp(self: &Arc<Self>, builtins: &[String], no_mcp: bool) -> Vec<String> {
        let catalog = &self.tools;
        let taken = |name: &str| catalog.extension_tool(name).is_some();
        let has = |b: &str| builtins.iter().any(|p| p == b);
        {
            let mut builtin = lock(&catalog.mcp.builtin);
            if has("builtin:codemode") && !taken(CODEMODE_TOOL_NAME) {
                let host: Weak<dyn codemode::CodemodeHost> =
                    Arc::downgrade(self) as Weak<dyn codemode::CodemodeHost>;
                builtin.push(Arc::new(codemode::CodemodeTool::new(Some(host))));
            }
            if has("builtin:tool-search") && !taken(TOOL_SEARCH_TOOL_NAME) {
                let host: Weak<dyn ToolSearchHost> =
                    Arc::downgrade(self) as Weak<dyn ToolSearchHost>;
                builtin.push(pi_mcp::tool_search::tool(host));
            }
        }
        // An extension that registers `/mcp` replaces the built-in MCP support.
        let replaced = self.ext.registrations().has_command("mcp");
        if no_mcp || !has("builtin:mcp") || replaced {
            return Vec::new();
        }
        self.start_manager()
    }

    /// Reads the MCP configuration of the session's cwd and connects its servers (in the
    /// background); returns the discovery tools to activate.
    fn start_manager(self: &Arc<Self>) -> Vec<String> {
        let catalog = &self.tools;
        let (cwd, agent_dir, trusted) = {
            let res = lock(&self.res);
            (
                res.cwd.clone(),
                self.env.agent_dir.clone(),
                res.project_trusted,
            )
        };
        let manager = McpManager::load(&agent_dir, &cwd, trusted);
        manager.set_provider_token(self.provider_token());
        // Servers the extensions registered while loading connect with the configured ones.
        let registered = self.ext.registrations().mcp_servers.clone();
        manager.set_extension_servers(&registered);
        *lock(&catalog.mcp.manager) = Some(Arc::clone(&manager));
        let activate = self.discovery_tools(&manager);
        manager.start(Arc::downgrade(self) as Weak<dyn McpHost>);
        activate
    }

    /// The session moved to another cwd: its MCP servers replace the previous ones (Pi's
    /// MCP extension is made anew with the runtime). Nothing when MCP is off.
    pub(crate) async fn restart_mcp(self: &Arc<Self>) {
        let Some(old) = self.tools.mcp.manager() else {
            return;
        };
        old.shutdown().await;
        let activate = self.start_manager();
        if !activate.is_empty() {
            self.change_active(&activate, &[]);
        }
    }

    /// `codemode` for servers with codemode exposure (unless `autoEnableCodemode` is false),
    /// `tool_search` for deferred ones; a warning when neither can be active.
    fn discovery_tools(&self, manager: &McpManager) -> Vec<String> {
        let (codemode, search) = manager.discovery_needs();
        if !codemode && !search {
            return Vec::new();
        }
        let registered = |n: &str| self.tools.get(n).is_some();
        let mut out = Vec::new();
        if codemode && manager.auto_enable_codemode && registered(CODEMODE_TOOL_NAME) {
            out.push(CODEMODE_TOOL_NAME.to_string());
        }
        if search && registered(TOOL_SEARCH_TOOL_NAME) {
            out.push(TOOL_SEARCH_TOOL_NAME.to_string());
        }
        if out.is_empty()
            && !self
                .tools
                .mcp
                .warned_unreachable
                .swap(true, Ordering::SeqCst)
        {
            let reason =
                if codemode && registered(CODEMODE_TOOL_NAME) && !manager.auto_enable_codemode {
                    " (autoEnableCodemode is false)"
                } else {
                    ""
                };
            self.notify(
                format!("MCP tools are only reachable from the codemode or tool_search tool, but neither is active{reason}; they cannot be called."),
                Notice::Warning,
            );
        }
        out
    }

    /// `auth.provider`: the provider's API key or OAuth access token (refreshed when due), as
    /// Pi's `getApiKeyForProvider` gives it.
    fn provider_token(&self) -> pi_mcp::oauth::auth::ProviderToken {
        let core = self.this.get().cloned().unwrap_or_default();
        Arc::new(move |provider: String| {
            let core = core.clone();
            Box::pin(async move {
                let core = core.upgrade()?;
                let model = lock(&core.registry)
                    .all_models()
                    .into_iter()
                    .find(|m| m.provider == provider)?;
                pi_registry::request_auth_shared(&core.registry, &model)
                    .await
                    .ok()?
                    .api_key
            })
        })
    }

    /// A new generation of extensions loaded (`reinit`, `reload`): its registrations replace
    /// the previous generation's.
    pub(crate) fn mcp_registrations_loaded(&self) {
        if let Some(m) = self.tools.mcp.manager() {
            let registered = self.ext.registrations().mcp_servers.clone();
            m.set_extension_servers(&registered);
            self.ensure_discovery_active(&m);
        }
    }

    /// An extension registered or unregistered a server after loading: the manager connects or
    /// stops it. Without the built-in MCP support, and with no extension handling
    /// `mcp_servers_change`, nothing connects it: each server is reported once, as Pi's runner
    /// does.
    pub(crate) async fn mcp_servers_changed(&self) {
        if self.tools.mcp.manager().is_some() {
            self.mcp_registrations_loaded();
            return;
        }
        if self.ext.handles("mcp_servers_change") {
            return;
        }
        let registered = self.ext.registrations().mcp_servers.clone();
        for server in registered {
            if !lock(&self.tools.mcp.reported_unhandled).insert(server.name.clone()) {
                continue;
            }
            let error = format!(
                "MCP server \"{}\" is registered, but no loaded extension connects MCP servers; another extension may have replaced the built-in MCP support",
                server.name
            );
            self.ext_error(&server.extension_path, "register_mcp_server", &error)
                .await;
        }
    }

    /// After the servers changed: `codemode`/`tool_search` become active when an enabled
    /// server's exposure needs them (Pi's `ensureDiscoveryActive`), with the warning once when
    /// neither can be.
    fn ensure_discovery_active(&self, manager: &McpManager) {
        let (codemode, search) = manager.discovery_needs();
        if !codemode && !search {
            return;
        }
        let registered = |n: &str| self.tools.get(n).is_some();
        let active = self.active_names();
        let mut activate = Vec::new();
        if codemode
            && manager.auto_enable_codemode
            && registered(CODEMODE_TOOL_NAME)
            && !active.iter().any(|n| n == CODEMODE_TOOL_NAME)
        {
            activate.push(CODEMODE_TOOL_NAME.to_string());
        }
        if search
            && registered(TOOL_SEARCH_TOOL_NAME)
            && !active.iter().any(|n| n == TOOL_SEARCH_TOOL_NAME)
        {
            activate.push(TOOL_SEARCH_TOOL_NAME.to_string());
        }
        if !activate.is_empty() {
            self.change_active(&activate, &[]);
        }
        let reachable = |n: &str| {
            registered(n) && (active.iter().any(|a| a == n) || activate.iter().any(|a| a == n))
        };
        if reachable(CODEMODE_TOOL_NAME) || reachable(TOOL_SEARCH_TOOL_NAME) {
            return;
        }
        if self
            .tools
            .mcp
            .warned_unreachable
            .swap(true, Ordering::SeqCst)
        {
            return;
        }
        let reason = if codemode && registered(CODEMODE_TOOL_NAME) && !manager.auto_enable_codemode
        {
            " (autoEnableCodemode is false)"
        } else {
            ""
        };
        self.notify(
            format!("MCP tools are only reachable from the codemode or tool_search tool, but neither is active{reason}; they cannot be called."),
            Notice::Warning,
        );
    }

    fn notify(&self, message: String, kind: Notice) {
        let request = notify_request(message, kind);
        if let Some(core) = self.this() {
            tokio::spawn(async move { core.write(&request).await });
        }
    }

    /// Before a prompt starts: the first one waits for servers with `direct` tools; servers
    /// signed in meanwhile outside the session (`pi mcp login`) connect again.
    pub(crate) async fn mcp_before_prompt(&self) {
        if let Some(m) = self.tools.mcp.manager() {
            m.wait_for_direct_servers().await;
            m.reconnect_signed_in().await;
            self.ensure_discovery_active(&m);
        }
    }

    /// The sections with `mcp_servers` added (or left out when no server is listed).
    pub(crate) fn with_mcp_section(&self, mut sections: Sections) -> Sections {
        let frozen = lock(&self.run).mcp_section.clone();
        let text = match frozen {
            Some(text) => text,
            None => self.mcp_servers_section(),
        };
        if let Some(text) = text {
            sections.insert(
                "mcp_servers".to_string(),
                format!("<mcp_servers>\n{text}\n</mcp_servers>"),
            );
        }
        sections
    }

    /// The live `mcp_servers` section text.
    pub(crate) fn mcp_servers_section(&self) -> Option<String> {
        self.tools.mcp.manager().and_then(|m| m.servers_section())
    }

    pub(crate) async fn shutdown_mcp(&self) {
        if let Some(m) = self.tools.mcp.manager() {
            m.shutdown().await;
        }
    }

    fn active_names(&self) -> Vec<String> {
        self.agent()
            .map(|a| a.with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect()))
            .unwrap_or_default()
    }

    /// Appends tools to the active set and removes others.
    fn change_active(&self, add: &[String], remove: &[String]) {
        let Some(agent) = self.agent() else { return };
        let added: Vec<Arc<dyn AgentTool>> = add.iter().filter_map(|n| self.tools.get(n)).collect();
        agent.with_state(|s| {
            s.tools.retain(|t| !remove.iter().any(|r| r == t.name()));
            for t in added {
                if !s.tools.iter().any(|x| x.name() == t.name()) {
                    s.tools.push(t);
                }
            }
        });
    }
}

impl McpHost for Core {
    fn tools_changed(&self, activate: Vec<String>, deactivate: Vec<String>) {
        let mut activate: Vec<String> = activate
            .into_iter()
            .filter(|n| McpTools::mcp_declarable(n, &self.tools))
            .collect();
        // Tools the transcript still declares (loaded by `tool_search` on this branch, say) come
        // back when their server registers them again, as Pi's pending tools do.
        let declared: Vec<String> = self
            .agent()
            .map(|a| {
                a.with_state(|s| {
                    pi_agent::transcript::current_tools(
                        s.messages
                            .iter()
                            .filter(|m| m.role() == "system")
                            .map(|m| &**m),
                    )
                    .into_iter()
                    .map(|t| t.name.clone())
                    .collect()
                })
            })
            .unwrap_or_default();
        if let Some(m) = self.tools.mcp.manager() {
            for t in m.tools() {
                if declared.contains(&t.name)
                    && t.exposure != "hidden"
                    && !activate.contains(&t.name)
                    && McpTools::mcp_registered(&t.name, &self.tools)
                {
                    activate.push(t.name);
                }
            }
        }
        self.change_active(&activate, &deactivate);
    }

    fn notify(&self, message: String, kind: Notice) {
        Core::notify(self, message, kind);
    }

    fn notify_now(&self, message: String, kind: Notice) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(core) = self.this() else { return };
            let request = notify_request(message, kind);
            core.write(&request).await;
        })
    }
}

impl ToolSearchHost for Core {
    fn candidates(&self) -> Vec<SearchDoc> {
        let active = self.active_names();
        let Some(m) = self.tools.mcp.manager() else {
            return Vec::new();
        };
        m.tools()
            .into_iter()
            .filter(|t| t.exposure == "deferred" && !active.contains(&t.name))
            .filter(|t| McpTools::mcp_registered(&t.name, &self.tools))
            .map(|t| {
                let namespace_text = m
                    .namespace_of(&t.name)
                    .map(|(n, d, i)| [n, d.unwrap_or_default(), i.unwrap_or_default()].join(" "))
                    .unwrap_or_default();
                let decl = t.tool.declaration();
                SearchDoc {
                    name: t.name.clone(),
                    description: decl.description.clone(),
                    parameters: decl.parameters.clone(),
                    namespace_text,
                }
            })
            .collect()
    }

    fn activate(&self, names: Vec<String>) {
        self.change_active(&names, &[]);
    }

    fn wait_ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let Some(m) = self.tools.mcp.manager() {
                m.wait_for_tool(TOOL_SEARCH_TOOL_NAME, true).await;
            }
        })
    }
}

impl codemode::CodemodeHost for Core {
    fn callable(&self) -> Vec<codemode::CallableTool> {
        let mut out: Vec<codemode::CallableTool> = Vec::new();
        let manager = self.tools.mcp.manager();
        let namespace = |name: &str| manager.as_ref().and_then(|m| m.namespace_of(name));
        let active: Vec<Arc<dyn AgentTool>> = self
            .agent()
            .map(|a| a.with_state(|s| s.tools.clone()))
            .unwrap_or_default();
        for tool in active {
            if tool.name() != CODEMODE_TOOL_NAME && tool.name() != TOOL_SEARCH_TOOL_NAME {
                let ns = namespace(tool.name());
                out.push(codemode::CallableTool {
                    tool,
                    namespace: ns,
                });
            }
        }
        if let Some(m) = &manager {
            for t in m.tools() {
                let reachable = t.exposure == "deferred" || t.exposure == "direct";
                if reachable
                    && !out.iter().any(|c| c.tool.name() == t.name)
                    && McpTools::mcp_registered(&t.name, &self.tools)
                {
                    let ns = namespace(&t.name);
                    out.push(codemode::CallableTool {
                        tool: t.tool,
                        namespace: ns,
                    });
                }
            }
        }
        out
    }

    fn wait_ready<'a>(&'a self, code: &'a str) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if let Some(m) = self.tools.mcp.manager() {
                m.wait_for_script(code).await;
            }
        })
    }

    fn stored(&self) -> serde_json::Map<String, Value> {
        let session = lock(&self.session);
        let mut store = serde_json::Map::new();
        for entry in session.branch_entries(None) {
            let pi_protocol::session_entry::SessionEntry::Custom(c) = entry else {
                continue;
            };
            if c.custom_type != codemode::STORE_ENTRY_TYPE {
                continue;
            }
            let Some(data) = &c.data else { continue };
            if let Some(deleted) = data.get("delete").and_then(Value::as_array) {
                for k in deleted.iter().filter_map(Value::as_str) {
                    store.remove(k);
                }
            }
            if let Some(Value::Object(set)) = data.get("set") {
                for (k, v) in set {
                    store.insert(k.clone(), v.clone());
                }
            }
        }
        store
    }

    fn models(&self) -> Option<Arc<dyn pi_mcp::codemode_models::ModelsHost>> {
        let core = self.this.get().cloned()?;
        Some(Arc::new(super::codemode_models::SessionModels { core }))
    }

    fn append_store(&self, writes: Value) {
        if let Err(e) =
            lock(&self.session).append_custom_entry(codemode::STORE_ENTRY_TYPE, Some(writes))
        {
            eprintln!("pi: could not write to the session file: {e}");
        }
    }
}

impl Runtime {
    /// `/mcp ...` as the built-in command: the arguments, when MCP is on and no extension
    /// took the name.
    pub fn mcp_command(&self, text: &str) -> Option<String> {
        self.core.tools.mcp.manager()?;
        let rest = text.strip_prefix("/mcp")?;
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return None;
        }
        Some(rest.strip_prefix(' ').unwrap_or(rest).to_string())
    }

    /// Runs `/mcp` (Pi's non-TUI form: a status notice, or login/logout/reconnect).
    pub async fn run_mcp_command(&self, args: &str) {
        let Some(m) = self.core.tools.mcp.manager() else {
            return;
        };
        let ui = RpcUi {
            core: Arc::clone(&self.core),
            manager: Arc::clone(&m),
        };
        m.command(args, &ui).await;
    }
}

/// `/mcp`'s side of the RPC client: notices and dialogs as `extension_ui_request` records.
struct RpcUi {
    core: Arc<Core>,
    manager: Arc<McpManager>,
}

impl RpcUi {
    async fn dialog(
        &self,
        request: UiRequest,
        cancel: Option<CancellationToken>,
    ) -> Option<ExtensionUiResponse> {
        let id = pi_session::ids::uuid_v4();
        let (tx, rx) = oneshot::channel();
        lock(&self.core.tools.mcp.dialogs).insert(id.clone(), tx);
        self.core
            .write(&ExtensionUiRequest::new(id.clone(), request))
            .await;
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(never);
        let answer = tokio::select! {
            a = rx => a.ok(),
            // Dismissed without a record, as Pi's RPC dialogs are when their signal fires.
            _ = cancel.cancelled() => None,
        };
        lock(&self.core.tools.mcp.dialogs).remove(&id);
        answer
    }
}

impl pi_mcp::command::CommandUi for RpcUi {
    fn notify(&self, message: String, kind: Notice) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let request = notify_request(message, kind);
            self.core.write(&request).await;
        })
    }

    fn select(&self, title: String, options: Vec<String>) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let request = UiRequest::Select {
                title,
                options,
                timeout: None,
            };
            let answer = self.dialog(request, None).await?;
            if answer.cancelled == Some(true) {
                return None;
            }
            answer.value
        })
    }

    fn input(
        &self,
        title: String,
        placeholder: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let request = UiRequest::Input {
                title,
                placeholder: Some(placeholder),
                timeout: None,
            };
            let answer = self.dialog(request, Some(cancel)).await?;
            if answer.cancelled == Some(true) {
                return None;
            }
            answer.value
        })
    }

    fn open_url(&self, url: &str) {
        pi_mcp::command::open_browser(url);
    }

    fn servers_changed(&self) {
        self.core.ensure_discovery_active(&self.manager);
    }
}

/// An `extension_ui_request` notice, as the built-in extensions' notices go out.
pub(super) fn notify_request(message: String, kind: Notice) -> ExtensionUiRequest {
    let notify_type = match kind {
        Notice::Info => NotifyType::Info,
        Notice::Warning => NotifyType::Warning,
        Notice::Error => NotifyType::Error,
    };
    ExtensionUiRequest::new(
        pi_session::ids::uuid_v4(),
        UiRequest::Notify {
            message,
            notify_type: Some(notify_type),
        },
    )
}
