//! What the loaded extensions registered, as the host reports it (`init` results, later
//! registrations): tools, commands, flags, providers and MCP servers, with the extension each
//! came from.

use pi_protocol::results::{RpcSlashCommand, SlashCommandSource, SourceInfo};
use serde::Deserialize;
use serde_json::Value;

/// A tool an extension registered.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtTool {
    pub name: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub description: String,
    pub parameters: Value,
    #[serde(default)]
    pub prompt_snippet: Option<String>,
    #[serde(default)]
    pub prompt_guidelines: Vec<String>,
    #[serde(default)]
    pub execution_mode: Option<String>,
    #[serde(default)]
    pub exposure: Option<String>,
    #[serde(default)]
    pub default_active: Option<bool>,
    #[serde(default)]
    pub has_prepare_arguments: bool,
    /// Declared with the tool (the built-in definitions from `create*Tool` carry one).
    #[serde(default)]
    pub constrained_sampling: Option<Value>,
}

impl ExtTool {
    /// Declared to the model when the session starts (Pi: `direct`/`model-only` exposure and
    /// `defaultActive` not false).
    pub fn active_by_default(&self) -> bool {
        self.default_active != Some(false)
            && matches!(
                self.exposure.as_deref(),
                None | Some("direct" | "model-only")
            )
    }
}

/// A command an extension registered, under its invocation name (`name`, or `name:1`,
/// `name:2`… when several extensions registered it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtCommand {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// A command with the extension that registered it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PathCommand {
    pub path: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// A flag an extension registered (`--name`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtFlag {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub description: Option<String>,
}

/// One loaded extension's registrations.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRegistration {
    pub path: String,
    #[serde(default)]
    pub tools: Vec<ExtTool>,
    #[serde(default)]
    pub commands: Vec<ExtCommand>,
    #[serde(default)]
    pub flags: Vec<ExtFlag>,
    #[serde(default)]
    pub providers: Vec<Value>,
    /// `registerVirtualModel` definitions (JSON-safe; the router stays in the host).
    #[serde(default)]
    pub virtual_models: Vec<Value>,
}

/// Everything registered, per extension in load order, with the source info of each.
#[derive(Debug, Clone, Default)]
pub struct Registrations {
    pub extensions: Vec<(ExtensionRegistration, SourceInfo)>,
    /// MCP servers the extensions registered (`pi.registerMcpServer`), in registration order.
    pub mcp_servers: Vec<pi_mcp::manager::RegisteredServer>,
}

impl Registrations {
    /// Every tool, first registration of a name wins (Pi's `getAllRegisteredTools`).
    pub fn tools(&self) -> Vec<ExtTool> {
        let mut seen = std::collections::HashSet::new();
        self.extensions
            .iter()
            .flat_map(|(e, _)| e.tools.iter())
            .filter(|t| seen.insert(t.name.clone()))
            .cloned()
            .collect()
    }

    pub fn tool(&self, name: &str) -> Option<ExtTool> {
        self.extensions
            .iter()
            .flat_map(|(e, _)| e.tools.iter())
            .find(|t| t.name == name)
            .cloned()
    }

    /// Adds a tool registered after loading (first registration of a name still wins).
    pub fn add_tool(&mut self, path: &str, tool: ExtTool) {
        if let Some((e, _)) = self.extensions.iter_mut().find(|(e, _)| e.path == path) {
            e.tools.retain(|t| t.name != tool.name);
            e.tools.push(tool);
        }
    }

    /// Replaces every extension's commands (the host sends the whole list when one is added
    /// after loading, since a duplicate renames earlier ones).
    pub fn set_commands(&mut self, commands: Vec<PathCommand>) {
        for (e, _) in &mut self.extensions {
            e.commands = commands
                .iter()
                .filter(|c| c.path == e.path)
                .map(|c| ExtCommand {
                    name: c.name.clone(),
                    description: c.description.clone(),
                })
                .collect();
        }
    }

    /// The `get_commands` entries of extension commands, in load order.
    pub fn slash_commands(&self) -> Vec<RpcSlashCommand> {
        self.extensions
            .iter()
            .flat_map(|(e, info)| {
                e.commands.iter().map(|c| RpcSlashCommand {
                    name: c.name.clone(),
                    description: c.description.clone(),
                    source: SlashCommandSource::Extension,
                    source_info: info.clone(),
                })
            })
            .collect()
    }

    pub fn has_command(&self, name: &str) -> bool {
        self.extensions
            .iter()
            .any(|(e, _)| e.commands.iter().any(|c| c.name == name))
    }

    /// Every registered flag with its type, in load order.
    pub fn flags(&self) -> Vec<ExtFlag> {
        self.extensions
            .iter()
            .flat_map(|(e, _)| e.flags.iter().cloned())
            .collect()
    }
}

/// Why a provider registration was not applied.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderRejection {
    /// Pi rejects it too (its error text).
    Invalid(String),
    /// A form we do not run: `registerProvider(provider)` with a provider object.
    Unsupported(String),
}

impl From<ProviderRejection> for String {
    fn from(r: ProviderRejection) -> String {
        match r {
            ProviderRejection::Invalid(m) | ProviderRejection::Unsupported(m) => m,
        }
    }
}

/// Applies one ProviderRegistration (`{name, config}`, or `{name, native, provider}`) to the
/// model registry.
pub fn apply_provider(
    registry: &mut pi_registry::ModelRegistry,
    entry: &Value,
) -> Result<(), ProviderRejection> {
    let name = entry.get("name").and_then(Value::as_str).unwrap_or("");
    if entry.get("native").and_then(Value::as_bool) == Some(true) {
        return Err(ProviderRejection::Unsupported(format!(
            "Provider {name}: pi in Rust does not run provider objects (registerProvider(provider)); register it with registerProvider(name, config)"
        )));
    }
    let Some(config) = entry.get("config").and_then(Value::as_object) else {
        return Err(ProviderRejection::Invalid(
            "Provider config is required when registering by name".into(),
        ));
    };
    registry
        .register_extension_provider(name, config)
        .map_err(ProviderRejection::Invalid)
}

impl Registrations {
    /// Virtual models registered while loading, in load order, with the extension of each.
    pub fn virtual_models(&self) -> Vec<(String, Value)> {
        self.extensions
            .iter()
            .flat_map(|(e, _)| e.virtual_models.iter().map(|v| (e.path.clone(), v.clone())))
            .collect()
    }

    /// Provider registrations still queued at the end of loading, in load order, with the
    /// extension that made each.
    pub fn providers(&self) -> Vec<(String, Value)> {
        self.extensions
            .iter()
            .flat_map(|(e, _)| e.providers.iter().map(|p| (e.path.clone(), p.clone())))
            .collect()
    }
}

/// Applies one `registerVirtualModel` definition to the model registry.
pub fn apply_virtual_model(
    registry: &mut pi_registry::ModelRegistry,
    definition: &Value,
) -> Result<(), String> {
    let empty = serde_json::Map::new();
    registry.register_virtual_model(definition.as_object().unwrap_or(&empty))
}
