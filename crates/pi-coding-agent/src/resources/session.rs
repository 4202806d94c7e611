//! Everything settings- and resource-related a session needs, in the order Pi's `main` prepares
//! it: the trust decision for the session's cwd, the settings of that cwd, the resources, the
//! built-in extensions, and the startup warnings to print.

use super::commands::{BuiltinOptions, builtin_commands, builtin_extensions, slash_commands};
use super::discovery::{DiscoveryInput, discover_all};
use super::extensions::{ExtensionOptions, ExtensionSource, extension_sources, resolve_cli_values};
use super::loader::{ResourceOptions, Resources, load_resources};
use super::system_prompt::{PromptInputs, Sections, ToolPrompt, build_sections};
use super::trust::resolve_project_trust;
use crate::cli::{Args, Diagnostic};
use crate::packages::{ChildOutput, PackageManager};
use crate::settings::SettingsManager;
use pi_protocol::results::RpcSlashCommand;
use serde_json::Value;
use std::cell::OnceCell;
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
    /// `(path, warning)` about packages, printed after the load failures as
    /// `Warning: Extension package "<path>": <warning>`: packages that failed to install, and
    /// packages declaring host-provided modules as dependencies.
    pub package_warnings: Vec<(String, String)>,
}

/// The extensions of the pre-trust pass and its package warnings.
pub type PreTrust = (Vec<ExtensionSource>, Vec<(String, String)>);

/// What the package manager found: the packages of settings and the `-e` sources.
struct Packages {
    settings: crate::packages::Resolution,
    cli: crate::packages::Resolution,
}

impl Packages {
    /// Resolves (installing what is missing, unless offline) with these settings.
    fn resolve(args: &Args, at: Locations<'_>, settings: &SettingsManager) -> Packages {
        let mut pm =
            PackageManager::new(at.cwd, at.agent_dir, at.home, settings, ChildOutput::Stderr);
        // `--offline` works like `PI_OFFLINE`.
        pm.offline |= args.offline;
        let settings = pm.resolve_packages();
        let cli_values = resolve_cli_values(&args.extensions, at.process_cwd, at.home);
        let cli = pm.resolve_cli_sources(&cli_values);
        Packages { settings, cli }
    }

    /// Install failures as `(source, warning)`.
    fn failure_warnings(&self) -> Vec<(String, String)> {
        self.settings
            .install_failures
            .iter()
            .chain(&self.cli.install_failures)
            .map(|f| (f.source.clone(), f.description()))
            .collect()
    }
}

/// Modules the extension host provides; a package must not bring its own copy.
const HOST_PROVIDED: [&str; 10] = [
    "@earendil-works/pi-agent-core",
    "@earendil-works/pi-ai",
    "@earendil-works/pi-coding-agent",
    "@earendil-works/pi-tui",
    "@mariozechner/pi-agent-core",
    "@mariozechner/pi-ai",
    "@mariozechner/pi-coding-agent",
    "@mariozechner/pi-tui",
    "@sinclair/typebox",
    "typebox",
];

/// Pi's warning for each package (of the extensions to load) that lists host-provided modules
/// under `dependencies`.
fn host_dependency_warnings(extensions: &[ExtensionSource]) -> Vec<(String, String)> {
    let mut roots: Vec<&Path> = Vec::new();
    for e in extensions {
        if let Some(r) = &e.package_root
            && !roots.contains(&r.as_path())
        {
            roots.push(r);
        }
    }
    let mut out = Vec::new();
    for root in roots {
        let manifest = root.join("package.json");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let Some(deps) = pi_js::parse::parse_js_json(text)
            .ok()
            .and_then(|v| v.get("dependencies").and_then(Value::as_object).cloned())
        else {
            continue;
        };
        let mut host: Vec<&str> = HOST_PROVIDED
            .iter()
            .copied()
            .filter(|n| deps.contains_key(*n))
            .collect();
        if host.is_empty() {
            continue;
        }
        host.sort_unstable();
        out.push((
            manifest.display().to_string(),
            format!(
                "Host-provided extension packages must be declared in peerDependencies with a \"*\" range, not dependencies: {}. Installed copies can bypass the extension loader and create duplicate runtime modules.",
                host.join(", ")
            ),
        ));
    }
    out
}

/// Pi's `mergeExtensionWarnings`: one warning per path, the later text in the earlier place.
pub fn merge_warnings(into: &mut Vec<(String, String)>, more: Vec<(String, String)>) {
    for (path, warning) in more {
        match into.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = warning,
            None => into.push((path, warning)),
        }
    }
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
    /// Whether `cwd` has resources that need a trust decision, looked up at most once for
    /// these locations (the pre-trust pass and the decision both ask; a probe is ~30 lookups).
    pub needs_trust: &'a OnceCell<bool>,
}

impl Locations<'_> {
    /// [`super::trust::has_trust_requiring_resources`] for `cwd`, once.
    pub fn needs_trust(&self) -> bool {
        *self
            .needs_trust
            .get_or_init(|| super::trust::has_trust_requiring_resources(self.cwd, self.home))
    }
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
            || at.needs_trust(),
            args.project_trust_override,
            default_trust,
        );
        let mut settings = startup
            .reread(at.cwd, at.agent_dir, trust.trusted)
            .unwrap_or_else(|| SettingsManager::load(at.cwd, at.agent_dir, trust.trusted));
        let packages = Packages::resolve(args, at, &settings);
        let found = discover_all(&DiscoveryInput {
            cwd: at.cwd,
            agent_dir: at.agent_dir,
            home: at.home,
            global: settings.global_layer(),
            project: settings.project_layer(),
            project_trusted: settings.is_project_trusted(),
            packages: &packages.settings.resources,
        });
        let options =
            ResourceOptions::from_args(args, at.cwd, at.agent_dir, at.home, at.process_cwd);
        let resources = load_resources(&options, &settings, &found, &packages.cli.resources);

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
            cli_packages: &packages.cli.resources,
            no_extensions: args.no_extensions,
            found: &found.extensions,
            home: at.home,
        });
        let mut package_warnings = packages.failure_warnings();
        merge_warnings(&mut package_warnings, host_dependency_warnings(&extensions));
        let session = SessionResources {
            cwd: at.cwd.to_path_buf(),
            settings,
            project_trusted: trust.trusted,
            resources,
            builtin_extensions: builtins,
            extensions,
            missing_extensions,
            package_warnings,
        };
        (session, stderr)
    }

    /// The extensions of Pi's pre-trust pass, when the project's trust is still to be decided
    /// (no `--approve`/`--no-approve`, and the cwd has resources that need trust): `-e` sources
    /// and user-level extensions and packages, which may answer `project_trust`; and the
    /// package warnings of that pass. `None` otherwise.
    pub fn pre_trust_extensions(args: &Args, at: Locations<'_>) -> Option<PreTrust> {
        if args.project_trust_override.is_some() || !at.needs_trust() {
            return None;
        }
        let settings = SettingsManager::load(at.cwd, at.agent_dir, false);
        let packages = Packages::resolve(args, at, &settings);
        let found = super::discovery::discover(
            &DiscoveryInput {
                cwd: at.cwd,
                agent_dir: at.agent_dir,
                home: at.home,
                global: settings.global_layer(),
                project: settings.project_layer(),
                project_trusted: false,
                packages: &packages.settings.resources,
            },
            super::discovery::Kind::Extensions,
        );
        let (extensions, _) = extension_sources(&ExtensionOptions {
            cli: &args.extensions,
            cli_base: at.process_cwd,
            cli_packages: &packages.cli.resources,
            no_extensions: args.no_extensions,
            found: &found,
            home: at.home,
        });
        let mut warnings = packages.failure_warnings();
        merge_warnings(&mut warnings, host_dependency_warnings(&extensions));
        Some((extensions, warnings))
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
