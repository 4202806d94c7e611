//! Everything settings- and resource-related a session needs, in the order Pi's `main` prepares
//! it: the trust decision for the session's cwd, the settings of that cwd, the resources, the
//! built-in extensions, and the startup warnings to print.

use super::commands::{BuiltinOptions, builtin_commands, builtin_extensions, slash_commands};
use super::discovery::DiscoveryInput;
use super::extensions::{ExtensionOptions, ExtensionSource, extension_sources};
use super::loader::{ResourceOptions, Resources, load_resources};
use super::system_prompt::{PromptInputs, Sections, ToolPrompt, build_sections};
use super::trust::resolve_project_trust;
use crate::cli::{Args, Diagnostic};
use crate::settings::SettingsManager;
use pi_protocol::results::RpcSlashCommand;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The settings, trust and resources of one session.
#[derive(Debug, Clone)]
pub struct SessionResources {
    pub cwd: PathBuf,
    pub settings: SettingsManager,
    pub project_trusted: bool,
    pub resources: Resources,
    /// Loaded built-in extensions (`builtin:<name>`), in load order.
    pub builtin_extensions: Vec<String>,
    /// Extension files to load, in load order.
    pub extensions: Vec<ExtensionSource>,
    /// `-e` paths that do not exist: `(path, error)`, reported with the load failures.
    pub missing_extensions: Vec<(String, String)>,
}

/// Where the session's files are.
#[derive(Debug, Clone, Copy)]
pub struct Locations<'a> {
    /// The session's working directory (absolute).
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    pub home: &'a Path,
    /// The process's working directory (CLI paths are relative to it).
    pub process_cwd: &'a Path,
}

fn string_list(layer: &serde_json::Map<String, Value>, key: &str) -> Vec<String> {
    layer
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl SessionResources {
    /// Loads everything for `at.cwd`. `startup` is the settings manager made first, for the
    /// process cwd as if trusted (Pi uses it for `sessionDir` and `defaultProjectTrust`); its
    /// warnings are taken here. Returns the session and the stderr lines to print, in Pi's
    /// order; an `Error` among them ends startup with exit 1.
    pub fn load(
        args: &Args,
        at: Locations<'_>,
        startup: &mut SettingsManager,
    ) -> (SessionResources, Vec<Diagnostic>) {
        let default_trust = startup.settings().default_project_trust;
        let trust = resolve_project_trust(
            at.cwd,
            at.agent_dir,
            at.home,
            args.project_trust_override,
            default_trust,
        );
        let mut settings = SettingsManager::load(at.cwd, at.agent_dir, trust.trusted);
        let options =
            ResourceOptions::from_args(args, at.cwd, at.agent_dir, at.home, at.process_cwd);
        let resources = load_resources(&options, &settings);

        // Pi prints resource read failures while loading, then the deduplicated startup list.
        let mut stderr: Vec<Diagnostic> = resources.warnings.clone();
        let mut listed: Vec<Diagnostic> = startup.take_diagnostics();
        listed.extend(trust.diagnostics);
        listed.extend(settings.take_diagnostics());
        let (builtins, errors) = builtin_extensions(
            &BuiltinOptions {
                no_extensions: args.no_extensions,
                no_mcp: args.no_mcp,
                cli_extensions: &args.extensions,
                user_extensions: &string_list(settings.global_layer(), "extensions"),
                project_extensions: &string_list(settings.project_layer(), "extensions"),
            },
            at.cwd,
            at.agent_dir,
            at.home,
        );
        listed.extend(errors.into_iter().map(|(path, error)| {
            Diagnostic::error(format!("Failed to load extension \"{path}\": {error}"))
        }));
        for d in listed {
            if !stderr.contains(&d) {
                stderr.push(d);
            }
        }
        let (extensions, missing_extensions) = extension_sources(&ExtensionOptions {
            cli: &args.extensions,
            cli_base: at.process_cwd,
            no_extensions: args.no_extensions,
            discovery: DiscoveryInput {
                cwd: at.cwd,
                agent_dir: at.agent_dir,
                home: at.home,
                global: settings.global_layer(),
                project: settings.project_layer(),
                project_trusted: settings.is_project_trusted(),
            },
        });
        let session = SessionResources {
            cwd: at.cwd.to_path_buf(),
            settings,
            project_trusted: trust.trusted,
            resources,
            builtin_extensions: builtins,
            extensions,
            missing_extensions,
        };
        (session, stderr)
    }

    /// The extensions of Pi's pre-trust pass, when the project's trust is still to be decided
    /// (no `--approve`/`--no-approve`, and the cwd has resources that need trust): `-e` paths
    /// and user-level extensions, which may answer `project_trust`. `None` otherwise.
    pub fn pre_trust_extensions(args: &Args, at: Locations<'_>) -> Option<Vec<ExtensionSource>> {
        if args.project_trust_override.is_some()
            || !super::trust::has_trust_requiring_resources(at.cwd, at.home)
        {
            return None;
        }
        let settings = SettingsManager::load(at.cwd, at.agent_dir, false);
        let (extensions, _) = extension_sources(&ExtensionOptions {
            cli: &args.extensions,
            cli_base: at.process_cwd,
            no_extensions: args.no_extensions,
            discovery: DiscoveryInput {
                cwd: at.cwd,
                agent_dir: at.agent_dir,
                home: at.home,
                global: settings.global_layer(),
                project: settings.project_layer(),
                project_trusted: false,
            },
        });
        Some(extensions)
    }

    /// The `get_commands` list: `extension_commands` (loaded extension files), the built-in
    /// extensions' commands (Pi loads built-ins after extension files), prompt templates,
    /// skills.
    pub fn commands(&self, extension_commands: Vec<RpcSlashCommand>) -> Vec<RpcSlashCommand> {
        let mut ext = extension_commands;
        ext.extend(builtin_commands(&self.builtin_extensions));
        slash_commands(ext, &self.resources.prompts, &self.resources.skills)
    }

    /// The system prompt sections for the active tools (`selected`, in order; `hidden` ones
    /// are active but not declared), with the tools' prompt contributions in `registry`.
    pub fn prompt_sections(
        &self,
        selected: &[String],
        hidden: &[String],
        registry: &[ToolPrompt],
        package_dir: &Path,
    ) -> Result<Sections, String> {
        build_sections(&PromptInputs {
            custom_prompt: self.resources.system_prompt.as_deref(),
            selected_tools: selected,
            hidden_tools: hidden,
            tools: registry,
            prompt_guidelines: &[],
            append: &self.resources.append_system_prompt,
            package_dir,
            cwd: &self.cwd,
            context_files: &self.resources.context_files,
            skills: &self.resources.skills,
            extra_sections: &[],
        })
    }
}
