//! The extensions' view of the session's life: bound once the runtime exists
//! (`session_start`, `resources_discover`), told when pi quits (`session_shutdown`).

use super::delegate::HostDelegate;
use crate::runtime::{Runtime, lock};
use serde_json::json;

impl Runtime {
    /// Connects the loaded extensions to the session: their calls reach the runtime from now
    /// on, startup problems are reported, and `session_start` runs (before any command is
    /// handled, as in Pi).
    pub async fn bind_extensions(&self) {
        let pending = std::mem::take(&mut *lock(&self.core.pending_ext_errors));
        for (path, error) in pending {
            self.core.ext_error(&path, "load", &error).await;
        }
        let Some(host) = self.core.ext.host() else {
            return;
        };
        host.set_delegate(HostDelegate::new(&self.core));
        self.core
            .ext_emit("session_start", json!({ "reason": "startup" }))
            .await;
        self.core.ext_resources_discover("startup").await;
    }

    /// An `extension_ui_response` from the client, for the dialog with its id: a tool
    /// approval's, else an extension's (unknown ids are ignored by the host, as Pi ignores them).
    pub fn extension_ui_response(&self, response: &pi_protocol::command::ExtensionUiResponse) {
        // `/mcp` (built in) asks its own questions.
        if self.core.tools.mcp.answer_dialog(response) {
            return;
        }
        if self.approval_answer(response) {
            return;
        }
        let Some(host) = self.core.ext.host() else {
            return;
        };
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(response) {
            host.notify("ui_response", map);
        }
    }

    /// `session_shutdown` (`reason: "quit"`), then the host ends.
    pub async fn shutdown_extensions(&self) {
        if self.core.ext.host().is_none() {
            return;
        }
        self.core
            .ext_emit("session_shutdown", json!({ "reason": "quit" }))
            .await;
        self.core.ext.kill();
    }
}

impl Runtime {
    /// `session_before_switch`: true when a handler cancelled.
    pub(crate) async fn ext_before_switch(&self, reason: &str, target: Option<&str>) -> bool {
        let mut payload = json!({ "reason": reason });
        if let Some(t) = target {
            payload["targetSessionFile"] = json!(t);
        }
        cancelled(self.core.ext_emit("session_before_switch", payload).await)
    }

    /// `session_before_fork` (`position`: `before` for fork, `at` for clone): true when a
    /// handler cancelled.
    pub(crate) async fn ext_before_fork(&self, entry_id: &str, position: &str) -> bool {
        let payload = json!({ "entryId": entry_id, "position": position });
        cancelled(self.core.ext_emit("session_before_fork", payload).await)
    }

    /// `session_shutdown` of the session being replaced.
    pub(crate) async fn ext_session_shutdown(&self, reason: &str, target: Option<String>) {
        let mut payload = json!({ "reason": reason });
        if let Some(t) = target {
            payload["targetSessionFile"] = json!(t);
        }
        self.core.ext_emit("session_shutdown", payload).await;
    }

    /// After a replacement: every extension instance is made anew for the new session (its
    /// module state kept, as Pi keeps the loaded modules), then `session_start`.
    /// `sources` are the extensions of the new session's cwd (Pi loads them anew with the
    /// runtime).
    pub(crate) async fn ext_session_restart(
        &self,
        reason: &str,
        previous: Option<String>,
        sources: &[crate::resources::extensions::ExtensionSource],
    ) {
        // The pre-trust pass of a new cwd loaded the extensions that decide its trust: that
        // host goes on with the project's (Pi's pre-trust runtime becomes the runtime).
        let pending = lock(&self.core.pending_host).take();
        if let Some(host) = pending {
            self.ext_load_in(host, "extend", reason, previous, sources)
                .await;
            return;
        }
        let Some(host) = self.core.ext.host() else {
            // A process that started without extensions gets a host for a project with some.
            if !self.core.ext.loaded() && !sources.is_empty() {
                self.ext_start_host(reason, previous, sources).await;
            }
            return;
        };
        host.notify("invalidate", serde_json::Map::new());
        let cwd = self.core.cwd();
        let mut params =
            super::load::init_params(sources, &self.core.args, &cwd, &self.core.env.agent_dir);
        params.insert("reason".into(), json!(reason));
        match host.request("reinit", params).await {
            Ok(value) => self.apply_registrations(value, Some(sources)),
            Err(e) => {
                self.core
                    .ext_error("<host>", "reinit", &e.to_string())
                    .await;
                return;
            }
        }
        self.ext_session_started(reason, previous).await;
    }

    async fn ext_session_started(&self, reason: &str, previous: Option<String>) {
        let mut payload = json!({ "reason": reason });
        if let Some(p) = previous {
            payload["previousSessionFile"] = json!(p);
        }
        self.core.ext_emit("session_start", payload).await;
        self.core.ext_resources_discover("startup").await;
    }

    /// Starts the extension host for a replacement session whose project has extensions when
    /// none ran before; without Node each extension is reported and the session goes on.
    async fn ext_start_host(
        &self,
        reason: &str,
        previous: Option<String>,
        sources: &[crate::resources::extensions::ExtensionSource],
    ) {
        let cwd = self.core.cwd();
        let host = match super::load::start_host(&cwd) {
            Ok(host) => host,
            Err(e) => {
                self.core
                    .report_once(format!("Warning: {e}. Extensions are not loaded."));
                for s in sources {
                    self.core
                        .ext_error(&s.path.display().to_string(), "load", &e.to_string())
                        .await;
                }
                return;
            }
        };
        self.ext_load_in(host, "init", reason, previous, sources)
            .await;
    }

    /// Makes `host` the extensions' host (the previous one ends) and loads `sources` in it
    /// (`init`, or `extend` after a pre-trust pass), then the session starts for them.
    async fn ext_load_in(
        &self,
        host: pi_ext_host::Host,
        kind: &str,
        reason: &str,
        previous: Option<String>,
        sources: &[crate::resources::extensions::ExtensionSource],
    ) {
        host.set_delegate(HostDelegate::new(&self.core));
        self.core.ext.replace_host(host.clone());
        let cwd = self.core.cwd();
        let args = &self.core.args;
        let mut params = super::load::init_params(sources, args, &cwd, &self.core.env.agent_dir);
        params.insert(
            "flagValues".into(),
            json!(super::load::unknown_flag_values(args)),
        );
        match host.request(kind, params).await {
            Ok(value) => self.apply_registrations(value, Some(sources)),
            Err(e) => {
                self.core.ext_error("<host>", kind, &e.to_string()).await;
                return;
            }
        }
        self.ext_session_started(reason, previous).await;
    }
}

/// Whether a `session_before_*` result cancels.
fn cancelled(result: Option<serde_json::Value>) -> bool {
    result
        .and_then(|r| r.get("cancel").and_then(serde_json::Value::as_bool))
        .unwrap_or(false)
}

impl Runtime {
    /// Takes the registrations of extensions made anew (`reinit`/`reload`): handlers, commands,
    /// tools (active ones stay active while registered; new default ones become active).
    /// `sources` gives each extension's source info (a reload may load new ones); otherwise it
    /// comes from the previous registrations.
    pub(crate) fn apply_registrations(
        &self,
        value: serde_json::Value,
        sources: Option<&[crate::resources::extensions::ExtensionSource]>,
    ) {
        let init: super::load::InitResult = match serde_json::from_value(value) {
            Ok(init) => init,
            Err(e) => {
                eprintln!("pi: unexpected answer from the extension host: {e}");
                return;
            }
        };
        for e in &init.errors {
            eprintln!(
                "Error: Failed to load extension \"{}\": {}",
                e.path, e.error
            );
        }
        if let Some(host) = self.core.ext.host() {
            host.set_handlers(init.handlers);
        }
        let previous = self.core.ext.registrations().clone();
        let mut fresh = super::Registrations::default();
        for reg in init.extensions {
            let info = match sources {
                Some(sources) => sources
                    .iter()
                    .find(|s| s.path.to_str() == Some(reg.path.as_str()))
                    .map(|s| s.source_info.clone()),
                None => previous
                    .extensions
                    .iter()
                    .find(|(p, _)| p.path == reg.path)
                    .map(|(_, info)| info.clone()),
            };
            if let Some(info) = info {
                fresh.extensions.push((reg, info));
            }
        }
        fresh.mcp_servers = init.mcp_servers;
        let tools: Vec<_> = fresh
            .extensions
            .iter()
            .flat_map(|(reg, info)| reg.tools.iter().map(move |t| (t.clone(), info.clone())))
            .collect();
        {
            // The new generation's providers replace the old one's.
            let mut registry = crate::runtime::lock(&self.core.registry);
            registry.clear_extension_providers();
            registry.clear_virtual_models();
            for (path, entry) in fresh.providers() {
                if let Err(e) = super::registry::apply_provider(&mut registry, &entry) {
                    eprintln!("Error: Extension \"{path}\" error: {}", String::from(e));
                }
            }
            for (path, definition) in fresh.virtual_models() {
                if let Err(e) = super::registry::apply_virtual_model(&mut registry, &definition) {
                    eprintln!("Error: Extension \"{path}\" error: {e}");
                }
            }
            self.core.ext.route_streams(&registry);
        }
        *self.core.ext.registrations() = fresh;
        let before: Vec<String> = self.core.tools.extension_defaults();
        self.core
            .tools
            .replace_extensions(crate::runtime::extension_tools(tools, &self.core));
        let mut names = self.active_tool_names();
        for name in self.core.tools.extension_defaults() {
            if !before.contains(&name) && !names.contains(&name) {
                names.push(name);
            }
        }
        self.set_active_tools_by_name(&names);
        // The new generation's MCP servers replace the old one's.
        self.core.mcp_registrations_loaded();
    }
}

/// What `session_before_compact` handlers decided.
#[derive(Default)]
pub(crate) struct CompactHook {
    pub cancel: bool,
    /// A summary an extension made itself (used instead of ours).
    pub compaction: Option<pi_protocol::results::CompactionResult>,
}

impl crate::runtime::Core {
    /// `session_before_compact`: cancel, or supply the compaction.
    pub(crate) async fn ext_before_compact(
        &self,
        prep: &crate::compaction::Preparation,
        custom_instructions: Option<&str>,
        reason: pi_protocol::event::CompactionReason,
    ) -> CompactHook {
        if !self.ext.handles("session_before_compact") {
            return CompactHook::default();
        }
        let branch: Vec<serde_json::Value> = {
            let session = lock(&self.session);
            session
                .branch_entries(None)
                .into_iter()
                .filter_map(|e| serde_json::to_value(e).ok())
                .collect()
        };
        let mut payload = json!({
            "preparation": {
                "firstKeptEntryId": prep.first_kept_entry_id,
                "messagesToSummarize": prep.messages_to_summarize,
                "turnPrefixMessages": prep.turn_prefix_messages,
                "isSplitTurn": prep.is_split_turn,
                "tokensBefore": prep.tokens_before,
                "previousSummary": prep.previous_summary,
            },
            "branchEntries": branch,
            "reason": reason,
            "willRetry": false,
        });
        if let Some(c) = custom_instructions {
            payload["customInstructions"] = json!(c);
        }
        let Some(result) = self.ext_emit("session_before_compact", payload).await else {
            return CompactHook::default();
        };
        CompactHook {
            cancel: result.get("cancel").and_then(serde_json::Value::as_bool) == Some(true),
            compaction: result.get("compaction").and_then(|c| {
                let mut c = c.clone();
                if c.get("tokensBefore").is_none() {
                    c["tokensBefore"] = json!(prep.tokens_before);
                }
                serde_json::from_value(c).ok()
            }),
        }
    }
}

impl Runtime {
    /// `pi.registerTool` after loading: registered at once, and active when its kind of tool
    /// is active on registration (Pi's `_refreshToolRegistry`).
    pub(crate) fn register_extension_tool(&self, path: &str, def: super::ExtTool) {
        let source = self
            .core
            .ext
            .registrations()
            .extensions
            .iter()
            .find(|(e, _)| e.path == path)
            .map(|(_, info)| info.clone());
        let Some(source) = source else {
            return;
        };
        self.core.ext.registrations().add_tool(path, def.clone());
        let active = def.active_by_default();
        let name = def.name.clone();
        for (def, source, tool) in crate::runtime::extension_tools(vec![(def, source)], &self.core)
        {
            self.core.tools.add_extension(def, source, tool);
        }
        let mut names = self.active_tool_names();
        if active && !names.contains(&name) && self.core.tools.is_allowed(&name) {
            names.push(name);
            self.set_active_tools_by_name(&names);
        }
    }
}

impl crate::runtime::Core {
    /// `resources_discover`: the skills and prompt templates extensions point at join the
    /// session's resources (the system prompt and `get_commands` list them from then on).
    pub(crate) async fn ext_resources_discover(&self, reason: &str) {
        let result = self
            .ext_emit(
                "resources_discover",
                json!({ "cwd": self.cwd(), "reason": reason }),
            )
            .await;
        let Some(result) = result else { return };
        let entries = |key: &str| -> Vec<crate::resources::loader::ExtensionResourcePath> {
            result
                .get(key)
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some(crate::resources::loader::ExtensionResourcePath {
                        path: e.get("path")?.as_str()?.to_string(),
                        extension_path: e
                            .get("extensionPath")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    })
                })
                .collect()
        };
        let (skills, prompts) = (entries("skillPaths"), entries("promptPaths"));
        let themes = entries("themePaths");
        let env = &self.env;
        let cwd = self.cwd();
        if !themes.is_empty() {
            // Themes extensions discover come after the session's own (a name keeps its theme).
            let res = &mut lock(&self.res).resources;
            for t in themes {
                let path = crate::settings::paths::resolve_path(&t.path, &cwd, &env.home);
                if !res.theme_paths.contains(&path) {
                    res.theme_paths.push(path);
                }
            }
        }
        if skills.is_empty() && prompts.is_empty() {
            return;
        }
        lock(&self.res).resources.extend_from_extensions(
            &skills,
            &prompts,
            &cwd,
            &env.agent_dir,
            &env.home,
        );
    }
}
