//! Every tool the session can declare to the model (Pi's tool registry): the built-in tools,
//! built when first needed, and the tools extensions registered, which replace a built-in of the
//! same name. `--tools` and `--exclude-tools` decide which are registered at all; the agent's
//! state holds the active ones, in declaration order.

use super::{Runtime, lock};
use crate::extensions::{ExtTool, ExtensionTool};
use crate::resources::system_prompt::ToolPrompt;
use pi_agent::AgentTool;
use pi_protocol::results::{SourceInfo, SourceOrigin, SourceScope};
use pi_tools::ToolsConfig;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// An extension tool: its definition, where it came from, and the agent tool that runs it.
pub(crate) type RegisteredTool = (ExtTool, SourceInfo, Arc<dyn AgentTool>);

pub(crate) struct ToolCatalog {
    /// How built-in tools are made; replaced when the session moves to another cwd.
    config: Mutex<Arc<ToolsConfig>>,
    /// Tools of Pi's built-in extensions (`codemode`, `tool_search`) and of MCP servers.
    pub(crate) mcp: super::mcp::McpTools,
    built: Mutex<Vec<Arc<dyn AgentTool>>>,
    /// Extension tools with their definition and source info, first registration first.
    extension: Mutex<Vec<RegisteredTool>>,
    /// `--tools` (an allowlist unless it only edits the defaults) and `--exclude-tools`.
    allowed: Option<Vec<String>>,
    excluded: Vec<String>,
}

impl ToolCatalog {
    pub fn new(config: ToolsConfig, allowed: Option<Vec<String>>, excluded: Vec<String>) -> Self {
        ToolCatalog {
            config: Mutex::new(Arc::new(config)),
            mcp: super::mcp::McpTools::default(),
            built: Mutex::new(Vec::new()),
            extension: Mutex::new(Vec::new()),
            allowed,
            excluded,
        }
    }

    /// The configuration built-in tools are made with.
    pub fn config(&self) -> Arc<ToolsConfig> {
        Arc::clone(&lock(&self.config))
    }

    /// A new session (Pi builds its tools anew for each runtime): built-in tools are made
    /// again in its cwd, with its shell settings.
    pub fn rebind(&self, cwd: &std::path::Path, settings: &crate::settings::model::Settings) {
        let mut config = (*self.config()).clone();
        config.cwd = cwd.to_path_buf();
        apply_shell_settings(&mut config, settings);
        *lock(&self.config) = Arc::new(config);
        lock(&self.built).clear();
    }

    /// Whether `--tools`/`--exclude-tools` keep `name` registered.
    pub fn is_allowed(&self, name: &str) -> bool {
        !self.excluded.iter().any(|e| e == name)
            && self
                .allowed
                .as_ref()
                .is_none_or(|list| list.iter().any(|a| a == name))
    }

    /// Adds an extension tool (a later registration of a taken name is ignored, as in Pi).
    pub fn add_extension(&self, def: ExtTool, source: SourceInfo, tool: Arc<dyn AgentTool>) {
        if !self.is_allowed(&def.name) {
            return;
        }
        let mut ext = lock(&self.extension);
        if !ext.iter().any(|(d, _, _)| d.name == def.name) {
            ext.push((def, source, tool));
        }
    }

    /// Replaces every extension tool (the extensions were made anew).
    pub fn replace_extensions(&self, tools: Vec<RegisteredTool>) {
        lock(&self.extension).clear();
        for (def, source, tool) in tools {
            self.add_extension(def, source, tool);
        }
    }

    pub fn extension_tool(&self, name: &str) -> Option<ExtTool> {
        lock(&self.extension)
            .iter()
            .find(|(d, _, _)| d.name == name)
            .map(|(d, _, _)| d.clone())
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        if let Some((_, _, tool)) = lock(&self.extension)
            .iter()
            .find(|(d, _, _)| d.name == name)
        {
            return Some(Arc::clone(tool));
        }
        if !pi_tools::ALL_TOOL_NAMES.contains(&name) {
            return self.mcp.get(name, self);
        }
        if !self.is_allowed(name) {
            return None;
        }
        let mut built = lock(&self.built);
        if let Some(tool) = built.iter().find(|t| t.name() == name) {
            return Some(Arc::clone(tool));
        }
        let config = Arc::clone(&lock(&self.config));
        let tool = pi_tools::build_tool(name, &config).ok()?;
        built.push(Arc::clone(&tool));
        Some(tool)
    }

    /// Registered names: built-ins in Pi's order, then extension tools that add a name.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = pi_tools::ALL_TOOL_NAMES
            .iter()
            .filter(|n| self.is_allowed(n))
            .map(|n| n.to_string())
            .collect();
        for (def, _, _) in lock(&self.extension).iter() {
            if !names.contains(&def.name) {
                names.push(def.name.clone());
            }
        }
        for name in self.mcp.names(self) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// `--tools` as given (an allowlist), for MCP tools' own rules.
    pub fn allowlist(&self) -> Option<&[String]> {
        self.allowed.as_deref()
    }

    /// `--exclude-tools` as given.
    pub fn excluded(&self) -> &[String] {
        &self.excluded
    }

    /// Extension tools that are active when registered (Pi: `direct`/`model-only`, not
    /// `defaultActive: false`), in registration order.
    pub fn extension_defaults(&self) -> Vec<String> {
        lock(&self.extension)
            .iter()
            .filter(|(d, _, _)| d.active_by_default())
            .map(|(d, _, _)| d.name.clone())
            .collect()
    }

    /// What the system prompt says about `name`.
    pub fn prompt(&self, name: &str) -> ToolPrompt {
        if self.extension_tool(name).is_none()
            && let Some(prompt) = self.mcp.prompt(name)
        {
            return prompt;
        }
        match self.extension_tool(name) {
            Some(def) => ToolPrompt {
                name: def.name,
                snippet: def
                    .prompt_snippet
                    .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                    .filter(|s| !s.is_empty()),
                guidelines: def
                    .prompt_guidelines
                    .iter()
                    .map(|g| pi_js::trim(g).to_string())
                    .filter(|g| !g.is_empty())
                    .collect(),
            },
            None => ToolPrompt::builtin(name),
        }
    }

    /// `pi.getAllTools()`'s entry for `name`.
    pub fn info(&self, name: &str) -> Option<Value> {
        let ext = lock(&self.extension)
            .iter()
            .find(|(d, _, _)| d.name == name)
            .map(|(d, s, _)| (d.clone(), s.clone()));
        if let Some((def, source)) = ext {
            return Some(json!({
                "name": def.name,
                "description": def.description,
                "parameters": def.parameters,
                "promptGuidelines": (!def.prompt_guidelines.is_empty()).then_some(&def.prompt_guidelines),
                "exposure": def.exposure.as_deref().unwrap_or("direct"),
                "sourceInfo": source,
            }));
        }
        if !pi_tools::ALL_TOOL_NAMES.contains(&name) {
            return self.mcp.info(name, self);
        }
        let tool = self.get(name)?;
        let decl = tool.declaration();
        let guidelines = pi_tools::prompt_guidelines(name);
        Some(json!({
            "name": decl.name,
            "description": decl.description,
            "parameters": decl.parameters,
            "promptGuidelines": (!guidelines.is_empty()).then_some(guidelines),
            "exposure": "direct",
            "sourceInfo": SourceInfo {
                path: format!("builtin:{name}"),
                source: "builtin".into(),
                scope: SourceScope::Temporary,
                origin: SourceOrigin::TopLevel,
                base_dir: None,
                changelog_path: None,
            },
        }))
    }
}

/// The settings built-in tools read (`shellPath`, `shellCommandPrefix`, `images.autoResize`).
pub(crate) fn apply_shell_settings(config: &mut ToolsConfig, s: &crate::settings::model::Settings) {
    config.shell_path = s.shell_path.clone().map(std::path::PathBuf::from);
    config.shell_command_prefix = s.shell_command_prefix.clone();
    config.auto_resize_images = s.image_auto_resize;
}

impl Runtime {
    /// A built-in tool run for an extension (the tool factories of
    /// `@earendil-works/pi-coding-agent`), in the cwd it was made for. `env` is the whole
    /// environment an extension's bash `spawnHook` returned; with `updateId` the tool's
    /// progress goes back to the host (`builtin_update`), to the `onUpdate` the extension gave.
    pub(crate) async fn run_builtin_tool(&self, params: &Value) -> Result<Value, String> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let mut config = (*self.core.tools.config()).clone();
        if let Some(cwd) = params.get("cwd").and_then(Value::as_str) {
            config.cwd = cwd.into();
        }
        if let Some(env) = params.get("env").and_then(Value::as_object) {
            let vars = env
                .iter()
                .filter_map(|(k, v)| Some((k.into(), v.as_str()?.into())))
                .collect();
            config.base_env = Some(vars);
            config.base_env_is_final = true;
        }
        // An extension's custom operations: the host runs each one for the tool.
        if let (Some(id), Some(host)) = (
            params.get("operationsId").cloned().filter(|v| !v.is_null()),
            self.core.ext.host(),
        ) {
            config.operations = Some(Arc::new(
                crate::extensions::operations::HostOperations::new(host, id),
            ));
        }
        let updates: pi_agent::ToolUpdateSink = match (
            params.get("updateId").cloned().filter(|v| !v.is_null()),
            self.core.ext.host(),
        ) {
            (Some(update_id), Some(host)) => Arc::new(move |partial| {
                let mut message = serde_json::Map::new();
                message.insert("updateId".into(), update_id.clone());
                message.insert("partialResult".into(), json!(partial));
                host.notify("builtin_update", message);
            }),
            _ => Arc::new(|_| {}),
        };
        let tool = pi_tools::build_tool(name, &Arc::new(config)).map_err(|e| e.to_string())?;
        let args = match params.get("params") {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        };
        let args = pi_schema::validate_tool_arguments(tool.declaration(), &args, None)?;
        let result = tool
            .execute(pi_agent::ToolInvocation {
                tool_call_id: params
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                args,
                cancel: tokio_util::sync::CancellationToken::new(),
                updates,
            })
            .await
            .map_err(|e| e.0)?;
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    pub fn active_tool_names(&self) -> Vec<String> {
        self.agent
            .with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect())
    }

    /// `pi.getAllTools()`.
    pub fn all_tool_infos(&self) -> Vec<Value> {
        let catalog = &self.core.tools;
        catalog
            .names()
            .iter()
            .filter_map(|n| catalog.info(n))
            .collect()
    }

    /// `pi.setActiveTools(names)`: tools already active keep their place, the others follow in
    /// the requested order; unknown and hidden names are ignored. The next request declares the
    /// change.
    pub fn set_active_tools_by_name(&self, names: &[String]) {
        let current = self.active_tool_names();
        let mut order: Vec<&String> = current.iter().filter(|n| names.contains(n)).collect();
        for n in names {
            if !order.contains(&n) {
                order.push(n);
            }
        }
        let catalog = &self.core.tools;
        let tools: Vec<Arc<dyn AgentTool>> = order
            .into_iter()
            .filter(|n| {
                catalog
                    .extension_tool(n)
                    .is_none_or(|d| d.exposure.as_deref() != Some("hidden"))
                    && !catalog.mcp.is_hidden(n)
            })
            .filter_map(|n| catalog.get(n))
            .collect();
        self.agent.with_state(|s| s.tools = tools);
        // An explicit choice: the session's tools from now on.
        lock(&self.core.run).loadout_base = None;
    }

    /// The tools the branch's system messages leave active (Pi's `_restoreToolsFromTranscript`),
    /// plus extension tools that are active by default and the branch never mentioned.
    /// `with_modifiers`: apply `--tools +name/-name` to the restored set (a new runtime does;
    /// tree navigation does not).
    pub(crate) fn restore_tools_from_transcript(&self, with_modifiers: bool) {
        let systems: Vec<pi_protocol::message::SystemMessage> = {
            let session = lock(&self.core.session);
            session
                .branch_entries(None)
                .into_iter()
                .filter_map(|e| match e {
                    // Only system messages are looked into: the others may stay unparsed.
                    pi_protocol::session_entry::SessionEntry::Message(m)
                        if m.message.role() == "system" =>
                    {
                        match &*m.message {
                            pi_protocol::message::AgentMessage::System(s) => Some(s.clone()),
                            _ => None,
                        }
                    }
                    _ => None,
                })
                .collect()
        };
        if systems.is_empty() {
            return;
        }
        let mentioned: Vec<String> = systems
            .iter()
            .flat_map(|s| {
                let added = s.tools_added.iter().flatten().map(|t| t.name.clone());
                let removed = s.tools_removed.iter().flatten().map(|t| t.name.clone());
                added.chain(removed)
            })
            .collect();
        let mut names: Vec<String> = pi_ai::transcript::current_tools(&systems)
            .into_iter()
            .map(|t| t.name.clone())
            .collect();
        for name in self.core.tools.extension_defaults() {
            if !mentioned.contains(&name) && !names.contains(&name) {
                names.push(name);
            }
        }
        let modifiers = self.core.args.tools.as_ref().filter(|list| {
            with_modifiers
                && list
                    .iter()
                    .any(|t| t.starts_with('+') || t.starts_with('-'))
        });
        if let Some(list) = modifiers {
            names = crate::settings::merge::apply_tool_modifiers(&names, list);
        }
        self.set_active_tools_by_name(&names);
    }

    /// The tools of a run (Pi's tool loadout): the `selectedTools` of the options an extension
    /// edited, else the session's own. The session's own set is kept while a run's differs, so
    /// the next run starts from it again (as Pi rebuilds each run's loadout from its base
    /// options).
    pub(crate) fn apply_run_loadout(&self, edited: Option<&[String]>) {
        let base = lock(&self.core.run)
            .loadout_base
            .take()
            .unwrap_or_else(|| self.active_tool_names());
        let wanted: Vec<String> = edited
            .unwrap_or(&base)
            .iter()
            .filter(|n| self.core.tools.get(n).is_some())
            .cloned()
            .collect();
        if wanted != self.active_tool_names() {
            self.set_active_tools_by_name(&wanted);
        }
        if wanted != base {
            lock(&self.core.run).loadout_base = Some(base);
        }
    }
}

/// Extension tools as agent tools, for the catalog.
pub(crate) fn extension_tools(
    defs: Vec<(ExtTool, SourceInfo)>,
    core: &Arc<super::Core>,
) -> Vec<RegisteredTool> {
    defs.into_iter()
        .map(|(def, source)| {
            let tool: Arc<dyn AgentTool> =
                Arc::new(ExtensionTool::new(def.clone(), Arc::downgrade(core)));
            (def, source, tool)
        })
        .collect()
}
