//! Building the runtime from the command line, the environment and the files (Pi's `main`
//! for the non-interactive modes, up to the point where the mode starts).

use super::{Core, RunState, Runtime, RuntimeEnv};
use crate::cli::{Args, Diagnostic, DiagnosticKind, render_diagnostics};
use crate::output::Output;
use crate::resources::session::{Locations, SessionResources};
use crate::settings::manager::{SettingsManager, session_dir};
use crate::settings::paths::{agent_dir, home_dir};
use pi_agent::{Agent, AgentConfig, AgentState, ExecutionMode};
use pi_protocol::SharedMessage;
use pi_registry::{
    Env, LoadOptions, ModelRegistry, ModelSettings, SessionModelState, StartupRequest,
};
use pi_session::{NewSession, SessionScope, SessionStore};
use pi_tools::{SessionHandle, SessionInfo, ToolsConfig};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::watch;

/// Why startup stopped; the process exits with code 1.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The reasons are already on stderr, in Pi's words.
    #[error("startup failed")]
    Reported,
    /// To be printed as `Error: <message>`.
    #[error("{0}")]
    Failed(String),
}

impl StartupError {
    /// Prints what is not printed yet.
    pub fn report(&self) {
        if let StartupError::Failed(message) = self {
            eprintln!("Error: {message}");
        }
    }
}

fn warn_all(diagnostics: &[Diagnostic]) {
    eprint!("{}", render_diagnostics(diagnostics));
}

fn tool_names(args: &Args, settings: &crate::settings::model::Settings) -> Vec<String> {
    if args.no_tools || args.no_builtin_tools {
        return Vec::new();
    }
    let base: Vec<String> = settings.default_tools.clone().unwrap_or_else(|| {
        pi_tools::DEFAULT_TOOL_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect()
    });
    let mut names = match &args.tools {
        Some(list)
            if list
                .iter()
                .any(|t| t.starts_with('+') || t.starts_with('-')) =>
        {
            crate::settings::merge::apply_tool_modifiers(&base, list)
        }
        Some(list) => list.clone(),
        None => base,
    };
    names.retain(|n| pi_tools::ALL_TOOL_NAMES.contains(&n.as_str()));
    if let Some(excluded) = &args.exclude_tools {
        names.retain(|n| !excluded.contains(n));
    }
    names
}

/// `--tools` as an allowlist (unless it only edits the default set) and `--exclude-tools`.
fn tool_filters(args: &Args) -> (Option<Vec<String>>, Vec<String>) {
    let allowed = args
        .tools
        .as_ref()
        .filter(|list| {
            !list
                .iter()
                .any(|t| t.starts_with('+') || t.starts_with('-'))
        })
        .cloned();
    (allowed, args.exclude_tools.clone().unwrap_or_default())
}

/// The tools active at startup: the built-in selection, then the extension tools that are
/// active when registered (with an allowlist: the ones it names), in registration order.
fn initial_tool_names(
    args: &Args,
    settings: &crate::settings::model::Settings,
    catalog: &super::ToolCatalog,
) -> Vec<String> {
    if args.no_tools {
        return Vec::new();
    }
    let mut names = tool_names(args, settings);
    let extension = match &tool_filters(args).0 {
        Some(allowed) => catalog
            .names()
            .into_iter()
            .filter(|n| allowed.contains(n) && catalog.extension_tool(n).is_some())
            .collect(),
        None => catalog.extension_defaults(),
    };
    for name in extension {
        if !names.contains(&name) && catalog.is_allowed(&name) {
            names.push(name);
        }
    }
    names
}

/// Pi's `createSessionManager`: which session this process works on.
fn open_session(
    args: &Args,
    cwd: &Path,
    agent_dir: &Path,
    dir: Option<PathBuf>,
) -> Result<SessionStore, StartupError> {
    use pi_session::SessionLookup;
    let fail = |e: pi_session::SessionError| StartupError::Failed(e.to_string());
    let scope = SessionScope {
        cwd: cwd.to_path_buf(),
        agent_dir: agent_dir.to_path_buf(),
        session_dir: dir.clone(),
    };
    let target_dir = scope.dir();
    let with_id = || NewSession {
        id: args.session_id.clone(),
        parent_session: None,
    };
    if args.no_session {
        return SessionStore::in_memory(cwd, with_id()).map_err(fail);
    }
    if let Some(source) = &args.fork {
        if let Some(id) = &args.session_id
            && pi_session::discovery::find_session_by_id(&scope, id).is_some()
        {
            return Err(StartupError::Failed(format!(
                "Session already exists with id '{id}'"
            )));
        }
        return match pi_session::discovery::resolve_session_arg(&scope, source) {
            SessionLookup::Path(p)
            | SessionLookup::Local(p)
            | SessionLookup::Global { path: p, .. } => {
                SessionStore::fork_from(&p, cwd, &target_dir, args.session_id.clone()).map_err(fail)
            }
            SessionLookup::NotFound => Err(StartupError::Failed(format!(
                "No session found matching '{source}'"
            ))),
        };
    }
    if let Some(arg) = &args.session {
        return match pi_session::discovery::resolve_session_arg(&scope, arg) {
            SessionLookup::Path(p) | SessionLookup::Local(p) => {
                SessionStore::open(&p, dir.as_deref(), None).map_err(fail)
            }
            // Pi asks whether to fork a session of another project into this one; without a
            // terminal to ask on, we fork (the original stays untouched) and say so.
            SessionLookup::Global { path, cwd: other } => {
                eprintln!(
                    "Session found in different project: {other}; forking it into the current directory"
                );
                SessionStore::fork_from(&path, cwd, &target_dir, None).map_err(fail)
            }
            SessionLookup::NotFound => Err(StartupError::Failed(format!(
                "No session found matching '{arg}'"
            ))),
        };
    }
    if args.resume {
        return Err(StartupError::Failed(
            "--resume needs an interactive terminal to pick a session; use --continue or --session <id|path>".into(),
        ));
    }
    if args.continue_session {
        return SessionStore::continue_recent(&scope).map_err(fail);
    }
    if let Some(id) = &args.session_id {
        if let Some(path) = pi_session::discovery::find_session_by_id(&scope, id) {
            return SessionStore::open(&path, dir.as_deref(), None).map_err(fail);
        }
        eprintln!(
            "Warning: No project session found with id '{id}'; creating a new session with that id."
        );
    }
    SessionStore::create(cwd, &target_dir, with_id()).map_err(fail)
}

/// The session's stored cwd when it has one (it exists: [`finish_session`] checked), else the
/// process's.
fn session_cwd(session: &SessionStore, process_cwd: &Path) -> PathBuf {
    let stored = session.cwd();
    if stored.as_os_str().is_empty() {
        process_cwd.to_path_buf()
    } else {
        stored.to_path_buf()
    }
}

/// The checks and annotations Pi makes once the session is open: the stored cwd must exist,
/// and `--name` names the session.
fn finish_session(args: &Args, session: &mut SessionStore, cwd: &Path) -> Result<(), StartupError> {
    let stored = session.cwd().to_path_buf();
    if session.session_file().is_some() && !stored.as_os_str().is_empty() && !stored.exists() {
        let file = session
            .session_file()
            .map(|f| format!("\nSession file: {}", f.display()))
            .unwrap_or_default();
        return Err(StartupError::Failed(format!(
            "Stored session working directory does not exist: {}{file}\nCurrent working directory: {}",
            stored.display(),
            cwd.display()
        )));
    }
    if let Some(name) = &args.name {
        let name = pi_js::trim(name);
        if name.is_empty() {
            return Err(StartupError::Failed(
                "--name requires a non-empty value".into(),
            ));
        }
        session
            .append_session_info(name)
            .map_err(|e| StartupError::Failed(e.to_string()))?;
    }
    Ok(())
}

/// New sessions record the starting model and thinking level so a resume restores them; an
/// older session without a thinking entry gets one (Pi's `createAgentSession`).
pub(super) fn record_initial_selection(
    session: &mut SessionStore,
    selection: &pi_registry::StartupSelection,
    has_thinking_entry: bool,
    existing: bool,
) {
    let level = selection.thinking_level.as_str();
    let result = if existing {
        if has_thinking_entry {
            Ok(())
        } else {
            session.append_thinking_level_change(level).map(|_| ())
        }
    } else {
        let model = match &selection.model {
            Some(m) => session.append_model_change(&m.provider, &m.id).map(|_| ()),
            None => Ok(()),
        };
        model.and_then(|_| session.append_thinking_level_change(level).map(|_| ()))
    };
    if let Err(e) = result {
        eprintln!("pi: could not write to the session file: {e}");
    }
}

/// Builds the runtime: where we run, what we load (extensions included), then the agent around
/// it. Diagnostics Pi prints at startup go to stderr here. The extensions' `session_start`
/// follows in [`Runtime::bind_extensions`].
pub async fn start(args: &Args, out: Output) -> Result<Runtime, StartupError> {
    let env = resolve_environment()?;
    let loaded = load(args, &env).await?;
    assemble(args, env, loaded, out)
}

/// The fixed facts of this process: cwd, home, the agent dir (created with Pi's empty
/// `auth.json` and `models-store.json` when missing) and the package folder.
fn resolve_environment() -> Result<RuntimeEnv, StartupError> {
    let cwd = std::env::current_dir().map_err(|e| StartupError::Failed(e.to_string()))?;
    let home = home_dir();
    let agent_dir = agent_dir(
        std::env::var("PI_CODING_AGENT_DIR").ok().as_deref(),
        &home,
        &cwd,
    );
    if let Err(e) = pi_registry::ensure_agent_files(&agent_dir) {
        eprintln!("Warning: could not prepare {}: {e}", agent_dir.display());
    }
    let package_dir = package_dir(&home);
    let docs_dir = pi_docs(&package_dir);
    Ok(RuntimeEnv {
        cwd,
        agent_dir,
        home,
        package_dir,
        docs_dir,
    })
}

/// `<package_dir>/docs` if Pi's provider docs are there.
fn pi_docs(package_dir: &Path) -> Option<PathBuf> {
    let docs = package_dir.join("docs");
    docs.join("providers.md").is_file().then_some(docs)
}

/// `PI_PACKAGE_DIR`, else the folder of the binary.
fn package_dir(home: &Path) -> PathBuf {
    let default_package = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    crate::settings::paths::package_dir(
        std::env::var("PI_PACKAGE_DIR").ok().as_deref(),
        &default_package,
        home,
    )
}

/// `llama`: Pi's built-in llama.cpp extension is loaded (its provider joins the registry).
pub(super) fn load_registry(
    env: &RuntimeEnv,
    llama: bool,
) -> (ModelRegistry, Vec<pi_registry::LoadError>) {
    ModelRegistry::load(LoadOptions {
        agent_dir: env.agent_dir.clone(),
        env: Env::from_process(),
        docs_dir: env.docs_dir.clone(),
        local: super::local_model::install(),
        llama,
    })
}

/// Applies the provider registrations queued during loading. Pi's rejections are errors
/// (`Extension "<path>" error: <message>`); forms we do not run are warnings.
pub(super) fn apply_extension_providers(
    registry: &mut ModelRegistry,
    registrations: &crate::extensions::Registrations,
) -> Vec<Diagnostic> {
    use crate::extensions::registry::{ProviderRejection, apply_provider};
    let mut diagnostics: Vec<Diagnostic> = registrations
        .providers()
        .into_iter()
        .filter_map(|(path, entry)| match apply_provider(registry, &entry) {
            Ok(()) => None,
            Err(ProviderRejection::Invalid(message)) => Some(Diagnostic {
                kind: DiagnosticKind::Error,
                message: format!("Extension \"{path}\" error: {message}"),
            }),
            Err(ProviderRejection::Unsupported(message)) => Some(Diagnostic {
                kind: DiagnosticKind::Warning,
                message: format!("Extension \"{path}\": {message}"),
            }),
        })
        .collect();
    for (path, definition) in registrations.virtual_models() {
        if let Err(message) =
            crate::extensions::registry::apply_virtual_model(registry, &definition)
        {
            diagnostics.push(Diagnostic {
                kind: DiagnosticKind::Error,
                message: format!("Extension \"{path}\" error: {message}"),
            });
        }
    }
    diagnostics
}

/// What startup reads: settings and resources, the extensions, the model registry, the
/// session, and the model and thinking level to start with.
struct Loaded {
    res: SessionResources,
    extensions: crate::extensions::LoadReport,
    registry: ModelRegistry,
    session: SessionStore,
    selection: pi_registry::StartupSelection,
    context_messages: Vec<SharedMessage>,
    /// The command line with an extension's trust decision in it (what `ctx.reload()` reads).
    decided_args: Option<Args>,
    /// The session directory chosen (`None`: the default per-cwd one).
    session_dir: Option<PathBuf>,
    /// The diagnostics printed, so a replacement runtime does not print them again.
    reported: std::collections::HashSet<String>,
}

async fn load(args: &Args, env: &RuntimeEnv) -> Result<Loaded, StartupError> {
    // Pi reads `sessionDir` and `defaultProjectTrust` from settings loaded as if trusted.
    let mut startup_settings = SettingsManager::load(&env.cwd, &env.agent_dir, true);
    let startup_s = startup_settings.settings().clone();
    // The session comes first: Pi builds the runtime for the session's own cwd (a session
    // of another project opened with `--session` runs there).
    let chosen_dir = session_dir(
        args.session_dir.as_deref(),
        std::env::var("PI_CODING_AGENT_SESSION_DIR").ok().as_deref(),
        &startup_s,
        &env.home,
    )
    .map(|d| env.cwd.join(d));
    let mut session = open_session(args, &env.cwd, &env.agent_dir, chosen_dir.clone())?;
    finish_session(args, &mut session, &env.cwd)?;
    let cwd = session_cwd(&session, &env.cwd);
    let at = Locations {
        cwd: &cwd,
        agent_dir: &env.agent_dir,
        home: &env.home,
        process_cwd: &env.cwd,
        needs_trust: &std::cell::OnceCell::new(),
    };
    // Pi's pre-trust pass: `-e` and user-level extensions may decide the project's trust
    // (`project_trust`) before the project's own files are read.
    let mut trust_args = None;
    let mut pass = crate::extensions::ProjectTrustPass::default();
    let mut pre_trust_warnings = Vec::new();
    if let Some((sources, warnings)) = SessionResources::pre_trust_extensions(args, at) {
        pre_trust_warnings = warnings;
        pass = crate::extensions::project_trust_pass(&sources, args, &cwd, &env.agent_dir).await;
        for w in &pass.warnings {
            eprintln!("Warning: {w}");
        }
        if let Some(trusted) = pass.trusted {
            if pass.remember
                && let Err(e) = crate::resources::trust::TrustStore::new(&env.agent_dir)
                    .set(&cwd, Some(trusted))
            {
                eprintln!("Warning: {e}");
            }
            let mut decided = args.clone();
            decided.project_trust_override = Some(trusted);
            trust_args = Some(decided);
        }
    }
    let (mut res, diagnostics) = SessionResources::load(
        trust_args.as_ref().unwrap_or(args),
        at,
        &mut startup_settings,
    );
    // Warnings of the pre-trust pass stay, in front (one per package).
    let final_warnings = std::mem::replace(&mut res.package_warnings, pre_trust_warnings);
    crate::resources::session::merge_warnings(&mut res.package_warnings, final_warnings);
    let mut extensions = crate::extensions::load_extensions(
        &res.extensions,
        &res.missing_extensions,
        args,
        &cwd,
        &env.agent_dir,
        pass.host.take(),
    )
    .await;
    // Providers the extensions registered join the registry before the model is chosen, so
    // `--provider`/`--model` can name them.
    let llama = res
        .builtin_extensions
        .iter()
        .any(|p| p == "builtin:llama.cpp");
    let (mut registry, problems) = load_registry(env, llama);
    let provider_errors = apply_extension_providers(&mut registry, &extensions.registrations);
    // Pi's order: provider registration errors, argument errors of the runtime, settings and
    // resource diagnostics, extension load failures, then its hint.
    warn_all(&provider_errors);
    warn_all(&extensions.flag_errors);
    warn_all(&diagnostics);
    warn_all(&extensions.load_errors);
    let mut reported: std::collections::HashSet<String> = diagnostics
        .iter()
        .chain(&extensions.load_errors)
        .map(Diagnostic::to_string)
        .collect();
    for (path, warning) in &res.package_warnings {
        eprintln!("Warning: Extension package \"{path}\": {warning}");
    }
    let failed = provider_errors
        .iter()
        .chain(&extensions.flag_errors)
        .chain(&diagnostics)
        .chain(&extensions.load_errors)
        .any(|d| d.kind == DiagnosticKind::Error);
    if crate::extensions::needs_hint(&extensions.load_errors)
        || crate::extensions::needs_hint(&diagnostics)
    {
        eprintln!("Hint: Start without extensions using \"pi -ne\".");
    }
    if failed {
        if let Some(host) = extensions.host.take() {
            host.kill();
        }
        return Err(StartupError::Reported);
    }
    // Pi's startup model refresh (no network): registered providers may restore their catalogs
    // before the model is chosen. Its errors are not reported, as in Pi.
    if let Some(host) = &extensions.host {
        let shared = std::sync::Mutex::new(registry);
        let options = crate::extensions::model_refresh::RefreshOptions::default();
        crate::extensions::model_refresh::refresh(host, &shared, options).await;
        registry = shared
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    let s = res.settings.settings().clone();

    for p in problems {
        let line = format!("Warning: {p}");
        eprintln!("{line}");
        reported.insert(line);
    }

    let has_thinking_entry = session.branch_entries(None).iter().any(|e| {
        matches!(
            e,
            pi_protocol::session_entry::SessionEntry::ThinkingLevelChange(_)
        )
    });
    let (context_messages, session_model) = {
        let ctx = session.build_context();
        let state = SessionModelState {
            has_messages: !ctx.messages.is_empty(),
            model: ctx
                .model
                .as_ref()
                .map(|m| (m.provider.clone(), m.model_id.clone())),
            thinking_level: Some(ctx.thinking_level.clone()).filter(|_| session.entry_count() > 0),
        };
        (ctx.into_owned_messages(), state)
    };

    let existing = session_model.has_messages;
    let startup_request = startup_request(args, &s);
    let selection = registry.select_startup(&StartupRequest {
        session: session_model,
        ..startup_request
    });
    let mut fatal = false;
    for d in &selection.diagnostics {
        let kind = match d.kind {
            pi_registry::DiagnosticKind::Error => {
                fatal = true;
                DiagnosticKind::Error
            }
            _ => DiagnosticKind::Warning,
        };
        warn_all(&[Diagnostic {
            kind,
            message: d.message.clone(),
        }]);
    }
    if fatal {
        return Err(StartupError::Reported);
    }
    record_initial_selection(&mut session, &selection, has_thinking_entry, existing);
    Ok(Loaded {
        res,
        extensions,
        registry,
        session,
        selection,
        context_messages,
        decided_args: trust_args,
        session_dir: chosen_dir,
        reported,
    })
}

/// The CLI's and the settings' model request, re-run against each new session.
pub(super) fn startup_request(args: &Args, s: &crate::settings::model::Settings) -> StartupRequest {
    StartupRequest {
        cli_provider: args.provider.clone(),
        cli_model: args.model.clone(),
        cli_thinking: args.thinking,
        cli_api_key: args.api_key.clone(),
        scope_patterns: args.models.clone().or_else(|| s.enabled_models.clone()),
        settings: ModelSettings {
            default_provider: s.default_provider.clone(),
            default_model: s.default_model.clone(),
            default_thinking_level: s.default_thinking_level.map(|l| l.as_str().to_string()),
            model_thinking_levels: s
                .model_thinking_levels
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().to_string()))
                .collect(),
        },
        session: SessionModelState::default(),
    }
}

/// The tools, the runtime's shared state and the agent.
fn assemble(
    args: &Args,
    env: RuntimeEnv,
    loaded: Loaded,
    out: Output,
) -> Result<Runtime, StartupError> {
    let Loaded {
        res,
        extensions,
        registry,
        session,
        selection,
        context_messages,
        decided_args,
        session_dir,
        reported,
    } = loaded;
    let s = res.settings.settings().clone();
    let builtin_extensions = res.builtin_extensions.clone();
    let model = selection.model_or_placeholder();
    let tool_session = SessionHandle::new(SessionInfo {
        session_id: Some(session.session_id().to_string()),
        session_file: session.session_file().map(Path::to_path_buf),
        provider: Some(model.provider.clone()),
        model_id: Some(model.id.clone()),
        thinking_level: Some(selection.thinking_level.as_str().to_string()),
        model_accepts_images: Some(
            model
                .input
                .iter()
                .any(|i| matches!(i, pi_protocol::model::InputModality::Image)),
        ),
        image_limits: None,
    });
    let mut tools_config = ToolsConfig::new(&res.cwd, &env.agent_dir);
    super::tools::apply_shell_settings(&mut tools_config, &s);
    tools_config.session = tool_session.clone();
    let (allowed, excluded) = tool_filters(args);
    let catalog = super::ToolCatalog::new(tools_config, allowed, excluded);

    let session_id = session.session_id().to_string();
    let ext_tools: Vec<_> = extensions
        .registrations
        .extensions
        .iter()
        .flat_map(|(reg, info)| reg.tools.iter().map(move |t| (t.clone(), info.clone())))
        .collect();
    let deferred = extensions.deferred_errors;
    let ext = crate::extensions::Extensions::new(extensions.host, extensions.registrations);
    ext.route_streams(&registry);
    let (approvals, approval_warnings) = super::approvals::Approvals::from_settings(&s);
    for w in approval_warnings {
        eprintln!("Warning: {w}");
    }
    let core = Arc::new(Core {
        out,
        env,
        session: Mutex::new(session),
        registry: Mutex::new(registry),
        res: Mutex::new(res),
        scoped_models: Mutex::new(selection.scoped_models.clone()),
        args: decided_args.unwrap_or_else(|| args.clone()),
        cli_trust_override: args.project_trust_override,
        reported_diagnostics: Mutex::new(reported),
        trust_by_cwd: Mutex::default(),
        pending_host: Mutex::default(),
        tool_session,
        run: Mutex::new(RunState::default()),
        usage_json: Mutex::new(None),
        busy: watch::channel(false).0,
        bash_cancels: Mutex::new(Vec::new()),
        tools: catalog,
        ext,
        pending_ext_errors: Mutex::new(deferred),
        ext_partial: Mutex::new(None),
        default_tools: OnceLock::new(),
        quit: tokio::sync::Notify::new(),
        session_dir,
        approvals,
        agent: OnceLock::new(),
        this: OnceLock::new(),
    });
    let _ = core.this.set(Arc::downgrade(&core));
    for (def, source, tool) in super::tools::extension_tools(ext_tools, &core) {
        core.tools.add_extension(def, source, tool);
    }
    let mut names = initial_tool_names(args, &s, &core.tools);
    if !args.no_tools {
        // Pi's built-in codemode/tool-search/mcp extensions; MCP activates what its servers need.
        for name in core.start_mcp(&builtin_extensions, args.no_mcp) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    } else {
        core.start_mcp(&builtin_extensions, args.no_mcp);
    }
    let _ = core.default_tools.set(names.clone());
    let tools: Vec<Arc<dyn pi_agent::AgentTool>> =
        names.iter().filter_map(|n| core.tools.get(n)).collect();
    let config = AgentConfig {
        stream_fn: core.ext.stream_fn(),
        convert_to_llm: Arc::new(|messages: &[SharedMessage]| {
            crate::messages::convert_to_llm(messages)
        }),
        listener: core.clone(),
        hooks: core.clone(),
        tool_execution: ExecutionMode::Parallel,
        session_id: Some(session_id),
        max_tokens: None,
    };
    let agent = Arc::new(Agent::new(
        config,
        AgentState {
            messages: context_messages,
            model,
            thinking_level: selection.thinking_level,
            tools,
            error_message: None,
        },
    ));
    agent.set_steering_mode(s.steering_mode);
    agent.set_follow_up_mode(s.follow_up_mode);
    let _ = core.agent.set(Arc::downgrade(&agent));
    let rt = Runtime { agent, core };
    // A resumed session takes the tool loadout its transcript recorded.
    rt.restore_tools_from_transcript(true);
    Ok(rt)
}

/// `pi --list-models [search]`: the available models as Pi's table (stdout) and any models.json
/// problems (stderr).
/// The model registry as a CLI command outside a session sees it (`pi auth`).
pub fn cli_registry() -> ModelRegistry {
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = home_dir();
    let env = RuntimeEnv {
        agent_dir: agent_dir(
            std::env::var("PI_CODING_AGENT_DIR").ok().as_deref(),
            &home,
            &cwd,
        ),
        docs_dir: pi_docs(&package_dir(&home)),
        package_dir: package_dir(&home),
        cwd,
        home,
    };
    load_registry(&env, false).0
}

pub fn list_models(search: Option<&str>) -> pi_registry::ListModelsOutput {
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = home_dir();
    let env = RuntimeEnv {
        agent_dir: agent_dir(
            std::env::var("PI_CODING_AGENT_DIR").ok().as_deref(),
            &home,
            &cwd,
        ),
        docs_dir: pi_docs(&package_dir(&home)),
        package_dir: package_dir(&home),
        cwd,
        home,
    };
    let (registry, _) = load_registry(&env, false);
    registry.list_models(search)
}
