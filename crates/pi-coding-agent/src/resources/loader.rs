//! Loading every resource of a session at once (Pi's `DefaultResourceLoader.reload`, without
//! extensions): discovered, packaged and CLI skills, prompt templates and theme files with
//! their source info, context files, and the custom and appended system prompt texts.

use super::context_files::{ContextFile, load_context_files};
use super::discovery::{Discovered, ResourceSet};
use super::prompt_templates::{PromptTemplate, load_prompt_templates};
use super::skills::{Skill, load_skills};
use super::source::Metadata;
use super::source::{Diagnostic, DiagnosticKind};
use crate::cli::Args;
use crate::settings::SettingsManager;
use crate::settings::paths::{CONFIG_DIR_NAME, canonicalize_or_self, is_path_within, resolve_path};
use pi_protocol::results::SourceInfo;
use std::path::{Path, PathBuf};

/// What to load, from the command line and the environment.
#[derive(Debug, Clone, Default)]
pub struct ResourceOptions {
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    /// The process's working directory: relative CLI paths and `--system-prompt` files are
    /// looked up from here (it differs from `cwd` when a session from elsewhere is resumed).
    pub process_cwd: PathBuf,
    /// `--skill` values.
    pub skills: Vec<String>,
    /// `--prompt-template` values.
    pub prompt_templates: Vec<String>,
    /// `--theme` values.
    pub themes: Vec<String>,
    pub no_skills: bool,
    pub no_prompt_templates: bool,
    pub no_themes: bool,
    pub no_context_files: bool,
    /// `--system-prompt` (text, or a file to read).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt` values (texts or files); empty = not given (then
    /// `APPEND_SYSTEM.md` is looked for).
    pub append_system_prompt: Vec<String>,
}

impl ResourceOptions {
    /// The options of a parsed command line.
    pub fn from_args(
        args: &Args,
        cwd: &Path,
        agent_dir: &Path,
        home: &Path,
        process_cwd: &Path,
    ) -> ResourceOptions {
        ResourceOptions {
            cwd: cwd.to_path_buf(),
            agent_dir: agent_dir.to_path_buf(),
            home: home.to_path_buf(),
            process_cwd: process_cwd.to_path_buf(),
            skills: args.skills.clone(),
            prompt_templates: args.prompt_templates.clone(),
            themes: args.themes.clone(),
            no_skills: args.no_skills,
            no_prompt_templates: args.no_prompt_templates,
            no_themes: args.no_themes,
            no_context_files: args.no_context_files,
            system_prompt: args.system_prompt.clone(),
            append_system_prompt: args.append_system_prompt.clone(),
        }
    }
}

/// Everything loaded.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub skills: Vec<Skill>,
    pub prompts: Vec<PromptTemplate>,
    /// Theme files in load order (discovered, from packages, `--theme`); read by `themes`.
    pub theme_paths: Vec<PathBuf>,
    pub context_files: Vec<ContextFile>,
    /// The custom system prompt text (`--system-prompt` or `SYSTEM.md`).
    pub system_prompt: Option<String>,
    /// The file the custom system prompt came from.
    pub system_prompt_path: Option<PathBuf>,
    /// Addendum texts, in order.
    pub append_system_prompt: Vec<String>,
    pub append_system_prompt_paths: Vec<PathBuf>,
    /// Skill and prompt-template problems (Pi shows these in interactive mode only).
    pub diagnostics: Vec<Diagnostic>,
    /// Problems Pi prints on stderr while loading (`Warning: Could not read ...`).
    pub warnings: Vec<crate::cli::Diagnostic>,
}

/// Pi's `isLocalPath`: not a package source or URL.
fn is_local_path(p: &str) -> bool {
    let t = pi_js::trim(p);
    ![
        "npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:",
    ]
    .iter()
    .any(|prefix| t.starts_with(prefix))
}

/// Absolute, deduplicated (by real path) paths, in order.
fn merge_paths(primary: &[PathBuf], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    primary
        .iter()
        .chain(extra)
        .filter(|p| seen.insert(canonicalize_or_self(p)))
        .cloned()
        .collect()
}

/// Pi's `metadataByPath`: how each path was found, the first record of a path winning. The
/// settings' resolution comes first (all kinds), then the `-e` sources, whose extensions and
/// skills count as `cli` while their prompts and themes keep their package.
struct SourceTable(Vec<(PathBuf, Metadata)>);

impl SourceTable {
    fn new(found: &ResourceSet, cli: &ResourceSet) -> SourceTable {
        let mut rows: Vec<(PathBuf, Metadata)> = Vec::new();
        let mut add = |path: &Path, meta: &Metadata| {
            if !rows.iter().any(|(p, _)| p == path) {
                rows.push((path.to_path_buf(), meta.clone()));
            }
        };
        for list in [
            &found.extensions,
            &found.skills,
            &found.prompts,
            &found.themes,
        ] {
            for d in list {
                add(&d.path, &d.metadata);
            }
        }
        let cli_meta = Metadata::new("cli", pi_protocol::results::SourceScope::Temporary, None);
        for d in cli.extensions.iter().chain(&cli.skills) {
            add(&d.path, &cli_meta);
        }
        for d in cli.prompts.iter().chain(&cli.themes) {
            add(&d.path, &d.metadata);
        }
        SourceTable(rows)
    }

    /// The source info of `path`: its own record, else the first record of a folder holding it.
    fn source_info(&self, path: &Path) -> Option<SourceInfo> {
        self.0
            .iter()
            .find(|(p, _)| p == path)
            .or_else(|| self.0.iter().find(|(p, _)| is_path_within(p, path)))
            .map(|(_, m)| m.source_info(path))
    }
}

/// Loads the resources of a session. `settings` must have been loaded with the session's trust
/// decision (its project layer is empty when the project is not trusted); `found` is what
/// discovery (packages included) produced for it, `cli` the resources of the `-e` sources.
pub fn load_resources(
    opts: &ResourceOptions,
    settings: &SettingsManager,
    found: &ResourceSet,
    cli: &ResourceSet,
) -> Resources {
    let table = SourceTable::new(found, cli);
    let cli_path = |p: &String| -> PathBuf {
        if is_local_path(p) {
            resolve_path(p, &opts.process_cwd, &opts.home)
        } else {
            opts.cwd.join(p)
        }
    };
    let cli_skills: Vec<PathBuf> = opts.skills.iter().map(cli_path).collect();
    let cli_prompts: Vec<PathBuf> = opts.prompt_templates.iter().map(cli_path).collect();
    let enabled = |found: &[Discovered]| -> Vec<PathBuf> {
        found
            .iter()
            .filter(|d| d.enabled)
            .map(|d| d.path.clone())
            .collect()
    };
    let mut res = Resources::default();

    let packaged = |cli: &[Discovered], found: &[Discovered], off: bool| -> Vec<PathBuf> {
        let mut paths = enabled(cli);
        if !off {
            paths.extend(enabled(found));
        }
        paths
    };
    let skill_paths = merge_paths(
        &packaged(&cli.skills, &found.skills, opts.no_skills),
        &cli_skills,
    );
    let (mut skills, mut diags) = load_skills(&skill_paths, &opts.cwd, &opts.agent_dir, &opts.home);
    for s in &mut skills {
        if let Some(info) = table.source_info(&s.file_path) {
            s.source_info = info;
        }
    }
    missing_cli_paths(
        &opts.skills,
        &cli_skills,
        "Skill path does not exist",
        &mut diags,
    );
    res.skills = skills;
    res.diagnostics.append(&mut diags);

    let prompt_paths = merge_paths(
        &packaged(&cli.prompts, &found.prompts, opts.no_prompt_templates),
        &cli_prompts,
    );
    let (templates, mut diags) =
        load_prompt_templates(&prompt_paths, &opts.cwd, &opts.agent_dir, &opts.home);
    for mut t in templates {
        if let Some(existing) = res.prompts.iter().find(|p| p.name == t.name) {
            diags.push(Diagnostic {
                kind: DiagnosticKind::Collision,
                message: format!("name \"/{}\" collision", t.name),
                path: t.file_path.clone(),
                winner: Some(existing.file_path.clone()),
            });
            continue;
        }
        if let Some(info) = table.source_info(&t.file_path) {
            t.source_info = info;
        }
        res.prompts.push(t);
    }
    missing_cli_paths(
        &opts.prompt_templates,
        &cli_prompts,
        "Prompt template path does not exist",
        &mut diags,
    );
    res.diagnostics.append(&mut diags);

    // `--theme` paths resolve like the other CLI resource paths; all of them are looked up,
    // URLs included (Pi reports those missing too).
    let cli_themes: Vec<PathBuf> = opts.themes.iter().map(cli_path).collect();
    res.theme_paths = merge_paths(
        &packaged(&cli.themes, &found.themes, opts.no_themes),
        &cli_themes,
    );

    if !opts.no_context_files {
        let (files, warnings) = load_context_files(&opts.cwd, &opts.agent_dir);
        res.context_files = files;
        res.warnings
            .extend(warnings.into_iter().map(crate::cli::Diagnostic::warning));
    }

    let trusted = settings.is_project_trusted();
    let discover_file = |name: &str| -> Option<String> {
        let project = opts.cwd.join(CONFIG_DIR_NAME).join(name);
        if trusted && project.exists() {
            return Some(project.to_string_lossy().into_owned());
        }
        let global = opts.agent_dir.join(name);
        global
            .exists()
            .then(|| global.to_string_lossy().into_owned())
    };
    let system_source = opts
        .system_prompt
        .clone()
        .or_else(|| discover_file("SYSTEM.md"));
    if let Some(source) = system_source.as_deref() {
        let (text, path) = prompt_input(source, "system prompt", opts, &mut res.warnings);
        res.system_prompt = text;
        res.system_prompt_path = path;
    }
    let append_sources: Vec<String> = if opts.append_system_prompt.is_empty() {
        discover_file("APPEND_SYSTEM.md").into_iter().collect()
    } else {
        opts.append_system_prompt.clone()
    };
    for source in &append_sources {
        let (text, path) = prompt_input(source, "append system prompt", opts, &mut res.warnings);
        res.append_system_prompt.extend(text);
        res.append_system_prompt_paths.extend(path);
    }
    res
}

/// `Skill path does not exist` (etc.) for CLI paths that are missing, once per path.
fn missing_cli_paths(
    raw: &[String],
    resolved: &[PathBuf],
    message: &str,
    diags: &mut Vec<Diagnostic>,
) {
    for (r, p) in raw.iter().zip(resolved) {
        if is_local_path(r) && !p.exists() && !diags.iter().any(|d| d.path == *p) {
            diags.push(Diagnostic::error(message, p));
        }
    }
}

/// Pi's `resolvePromptInput`: a value naming an existing file is replaced by the file's text;
/// anything else is the text itself. Empty means none. Also returns the file's path.
fn prompt_input(
    value: &str,
    what: &str,
    opts: &ResourceOptions,
    warnings: &mut Vec<crate::cli::Diagnostic>,
) -> (Option<String>, Option<PathBuf>) {
    if value.is_empty() {
        return (None, None);
    }
    let path = opts.process_cwd.join(value);
    if !path.exists() {
        return (Some(value.to_string()), None);
    }
    let resolved = crate::settings::paths::lexical_normalize(&path);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_string();
            (Some(text), Some(resolved))
        }
        Err(e) => {
            warnings.push(crate::cli::Diagnostic::warning(format!(
                "Could not read {what} file {value}: Error: {}",
                crate::settings::file::node_io_message(&e, &path)
            )));
            (Some(value.to_string()), Some(resolved))
        }
    }
}

/// A skill or prompt-template path an extension's `resources_discover` handler returned, and
/// the extension that returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionResourcePath {
    pub path: String,
    pub extension_path: String,
}

/// Pi's source info for an extension's resources: `extension:<file name>` (synthetic paths
/// such as `<inline>` keep their name), temporary, top-level, based in the extension's folder.
fn extension_source_info(file: &Path, extension_path: &str) -> SourceInfo {
    let synthetic = extension_path.starts_with('<') || extension_path.contains(':');
    let source = if synthetic {
        format!("extension:{}", extension_path.replace(['<', '>'], ""))
    } else {
        let base = Path::new(extension_path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = base
            .strip_suffix(".ts")
            .or_else(|| base.strip_suffix(".js"))
            .unwrap_or(&base);
        format!("extension:{name}")
    };
    SourceInfo {
        path: file.to_string_lossy().into_owned(),
        source,
        scope: pi_protocol::results::SourceScope::Temporary,
        origin: pi_protocol::results::SourceOrigin::TopLevel,
        base_dir: (!synthetic)
            .then(|| Path::new(extension_path).parent())
            .flatten()
            .map(|d| d.to_string_lossy().into_owned()),
        changelog_path: None,
    }
}

impl Resources {
    /// Adds the skills and prompt templates extensions discovered (Pi's `extendResources`):
    /// their paths come after the session's own, so a name already loaded keeps its resource.
    pub fn extend_from_extensions(
        &mut self,
        skills: &[ExtensionResourcePath],
        prompts: &[ExtensionResourcePath],
        cwd: &Path,
        agent_dir: &Path,
        home: &Path,
    ) {
        let resolve = |entries: &[ExtensionResourcePath]| -> Vec<(PathBuf, String)> {
            entries
                .iter()
                .map(|e| (resolve_path(&e.path, cwd, home), e.extension_path.clone()))
                .collect()
        };
        let owner = |file: &Path, entries: &[(PathBuf, String)]| -> Option<SourceInfo> {
            entries
                .iter()
                .find(|(p, _)| p == file)
                .or_else(|| entries.iter().find(|(p, _)| file.starts_with(p)))
                .map(|(_, ext)| extension_source_info(file, ext))
        };
        let skill_entries = resolve(skills);
        let paths: Vec<PathBuf> = skill_entries.iter().map(|(p, _)| p.clone()).collect();
        let (found, mut diags) = load_skills(&paths, cwd, agent_dir, home);
        for mut skill in found {
            let known = self.skills.iter().any(|s| {
                s.name == skill.name
                    || canonicalize_or_self(&s.file_path) == canonicalize_or_self(&skill.file_path)
            });
            if known {
                continue;
            }
            if let Some(info) = owner(&skill.file_path, &skill_entries) {
                skill.source_info = info;
            }
            self.skills.push(skill);
        }
        self.diagnostics.append(&mut diags);

        let prompt_entries = resolve(prompts);
        let paths: Vec<PathBuf> = prompt_entries.iter().map(|(p, _)| p.clone()).collect();
        let (found, mut diags) = load_prompt_templates(&paths, cwd, agent_dir, home);
        for mut template in found {
            if self.prompts.iter().any(|p| p.name == template.name) {
                continue;
            }
            if let Some(info) = owner(&template.file_path, &prompt_entries) {
                template.source_info = info;
            }
            self.prompts.push(template);
        }
        self.diagnostics.append(&mut diags);
    }
}
