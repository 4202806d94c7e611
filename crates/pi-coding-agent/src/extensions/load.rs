//! Loading the extensions at startup (Pi's resource loader and `main` diagnostics): start the
//! host, run every factory, report failures exactly as Pi does (every one on stderr, a hint,
//! exit 1 before anything reaches stdout), then match the command line's unknown flags against
//! the flags the extensions registered.

use super::registry::{ExtensionRegistration, Registrations};
use crate::cli::validate::{ExtensionFlagType, ExtensionFlagValue, resolve_extension_flags};
use crate::cli::{Args, Diagnostic, Mode};
use crate::resources::extensions::ExtensionSource;
use pi_ext_host::{Host, HostError};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::Path;

/// What loading produced.
#[derive(Default)]
pub struct LoadReport {
    pub host: Option<Host>,
    pub registrations: Registrations,
    /// Argument errors found once the registered flags are known (unknown `--flags`, bare
    /// string flags, `--provider` without `--model`); Pi prints them first.
    pub flag_errors: Vec<Diagnostic>,
    /// Extensions that failed to load; Pi prints them after the settings diagnostics.
    pub load_errors: Vec<Diagnostic>,
    /// `extension_error` records to write once the session runs (the host could not start).
    pub deferred_errors: Vec<(String, String)>,
}

#[derive(Deserialize)]
pub(crate) struct InitResult {
    #[serde(default)]
    pub extensions: Vec<ExtensionRegistration>,
    #[serde(default)]
    pub errors: Vec<LoadError>,
    #[serde(default)]
    pub handlers: Vec<String>,
    #[serde(default, rename = "mcpServers")]
    pub mcp_servers: Vec<pi_mcp::manager::RegisteredServer>,
}

#[derive(Deserialize)]
pub(crate) struct LoadError {
    pub path: String,
    pub error: String,
}

/// `pi`'s mode as extensions see it (`ctx.mode`).
/// What `init` (and `reload`) tell the host about the session and the extensions to load.
pub(crate) fn init_params(
    sources: &[ExtensionSource],
    args: &Args,
    cwd: &Path,
    agent_dir: &Path,
) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("cwd".into(), json!(cwd));
    params.insert("agentDir".into(), json!(agent_dir));
    params.insert("mode".into(), json!(mode_name(args)));
    params.insert("hasUI".into(), json!(args.mode == Mode::Rpc));
    params.insert("piVersion".into(), json!(crate::PI_VERSION));
    params.insert(
        "extensions".into(),
        Value::Array(
            sources
                .iter()
                .map(|s| json!({"path": s.path, "sourceInfo": s.source_info}))
                .collect(),
        ),
    );
    // Extensions that run pi as a subprocess (`process.argv[1]`) get this binary.
    if let Ok(exe) = std::env::current_exe() {
        params.insert("piPath".into(), json!(exe));
    }
    params
}

pub fn mode_name(args: &Args) -> &'static str {
    match args.mode {
        Mode::Rpc => "rpc",
        Mode::Json => "json",
        Mode::Text => "print",
    }
}

fn failure(path: &str, error: &str) -> Diagnostic {
    Diagnostic::error(format!("Failed to load extension \"{path}\": {error}"))
}

/// What the extensions of the pre-trust pass decided (Pi's `resolveProjectTrusted`).
#[derive(Default)]
pub struct ProjectTrustPass {
    /// The host with those extensions loaded but nothing bound; [`load_extensions`] continues it.
    pub host: Option<Host>,
    /// `yes`/`no` from the first handler that decided.
    pub trusted: Option<bool>,
    /// The decision is to be saved in `trust.json`.
    pub remember: bool,
    /// Handler failures, printed as warnings.
    pub warnings: Vec<String>,
}

/// Pi's pre-trust pass: loads `sources` (the extensions that may decide) and asks their
/// `project_trust` handlers. Without Node, or when loading fails, nothing is decided and the
/// final load reports the problem.
pub async fn project_trust_pass(
    sources: &[ExtensionSource],
    args: &Args,
    cwd: &Path,
    agent_dir: &Path,
) -> ProjectTrustPass {
    let mut pass = ProjectTrustPass::default();
    if sources.is_empty() {
        return pass;
    }
    let Ok(host) = start_host(cwd) else {
        return pass;
    };
    host.set_delegate(super::delegate::HostDelegate::loading());
    let mut params = init_params(sources, args, cwd, agent_dir);
    params.insert("flagValues".into(), json!(unknown_flag_values(args)));
    params.insert("preTrust".into(), json!(true));
    let init = match host.request("init", params).await {
        Ok(value) => serde_json::from_value::<InitResult>(value).ok(),
        Err(_) => None,
    };
    let Some(init) = init else {
        host.kill();
        return pass;
    };
    if init.handlers.iter().any(|h| h == "project_trust") {
        let mut params = Map::new();
        params.insert("event".into(), json!("project_trust"));
        params.insert("payload".into(), json!({ "cwd": cwd }));
        params.insert("ctx".into(), json!({}));
        if let Ok(result) = host.request("emit", params).await {
            pass.trusted = match result.get("trusted").and_then(Value::as_str) {
                Some("yes") => Some(true),
                Some("no") => Some(false),
                _ => None,
            };
            pass.remember = result.get("remember").and_then(Value::as_bool) == Some(true);
            pass.warnings = result
                .get("warnings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str().map(str::to_string))
                .collect();
        }
    }
    pass.host = Some(host);
    pass
}

/// Loads `sources` (nothing happens without any). `missing` are `-e` paths that do not exist;
/// they count as load failures. `pre_trust` is the host of a pre-trust pass: its extensions are
/// kept and the others added (`extend`).
pub async fn load_extensions(
    sources: &[ExtensionSource],
    missing: &[(String, String)],
    args: &Args,
    cwd: &Path,
    agent_dir: &Path,
    pre_trust: Option<Host>,
) -> LoadReport {
    let mut report = LoadReport {
        load_errors: missing.iter().map(|(p, e)| failure(p, e)).collect(),
        ..LoadReport::default()
    };
    if sources.is_empty() {
        if let Some(host) = pre_trust {
            host.kill();
        }
        report.flag_errors = flag_diagnostics(args, &[]).1;
        return report;
    }
    let extending = pre_trust.is_some();
    let started = match pre_trust {
        Some(host) => Ok(host),
        None => {
            start_host(cwd).inspect(|h| h.set_delegate(super::delegate::HostDelegate::loading()))
        }
    };
    let host = match started {
        Ok(host) => host,
        Err(e) => {
            // Without Node the session runs without extensions; the client hears about it.
            eprintln!("Warning: {e}. Extensions are not loaded.");
            report.deferred_errors = sources
                .iter()
                .map(|s| (s.path.display().to_string(), e.to_string()))
                .collect();
            report.flag_errors = flag_diagnostics(args, &[]).1;
            return report;
        }
    };
    let mut params = init_params(sources, args, cwd, agent_dir);
    params.insert("flagValues".into(), json!(unknown_flag_values(args)));
    let kind = if extending { "extend" } else { "init" };
    let result = match host.request(kind, params).await {
        Ok(value) => serde_json::from_value::<InitResult>(value)
            .map_err(|e| HostError::Failed(format!("unexpected init result: {e}"))),
        Err(e) => Err(e),
    };
    let init = match result {
        Ok(init) => init,
        Err(e) => {
            eprintln!(
                "Warning: the extension host failed to start: {e}. Extensions are not loaded."
            );
            host.kill();
            report.deferred_errors = sources
                .iter()
                .map(|s| (s.path.display().to_string(), e.to_string()))
                .collect();
            report.flag_errors = flag_diagnostics(args, &[]).1;
            return report;
        }
    };
    host.set_handlers(init.handlers);
    let mut registrations = Registrations {
        mcp_servers: init.mcp_servers,
        ..Registrations::default()
    };
    for reg in init.extensions {
        let info = sources
            .iter()
            .find(|s| s.path.to_string_lossy() == reg.path)
            .map(|s| s.source_info.clone())
            .unwrap_or_else(|| {
                super::super::resources::source::Metadata::new(
                    "cli",
                    pi_protocol::results::SourceScope::Temporary,
                    None,
                )
                .source_info(Path::new(&reg.path))
            });
        registrations.extensions.push((reg, info));
    }
    let flags: Vec<(String, ExtensionFlagType)> = registrations
        .flags()
        .into_iter()
        .map(|f| {
            let kind = if f.kind == "string" {
                ExtensionFlagType::String
            } else {
                ExtensionFlagType::Boolean
            };
            (f.name, kind)
        })
        .collect();
    let (values, flag_errors) = flag_diagnostics(args, &flags);
    report.flag_errors = flag_errors;
    let mut load_errors: Vec<Diagnostic> = init
        .errors
        .iter()
        .map(|e| failure(&e.path, &e.error))
        .collect();
    load_errors.append(&mut report.load_errors);
    report.load_errors = load_errors;
    if report.flag_errors.is_empty() && report.load_errors.is_empty() && !values.is_empty() {
        let mut map = Map::new();
        for (name, value) in values {
            let v = match value {
                ExtensionFlagValue::True => json!(true),
                ExtensionFlagValue::String(s) => json!(s),
            };
            map.insert(name, v);
        }
        if let Err(e) = host
            .request(
                "apply_flags",
                [("values".to_string(), Value::Object(map))]
                    .into_iter()
                    .collect(),
            )
            .await
        {
            eprintln!("pi: could not hand the flag values to the extensions: {e}");
        }
    }
    super::oauth::install(&host);
    report.host = Some(host);
    report.registrations = registrations;
    report
}

/// The flag values to hand over and the flag diagnostics, given the registered flags.
fn flag_diagnostics(
    args: &Args,
    registered: &[(String, ExtensionFlagType)],
) -> (Vec<(String, ExtensionFlagValue)>, Vec<Diagnostic>) {
    let refs: Vec<(&str, ExtensionFlagType)> =
        registered.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    let (values, _) = resolve_extension_flags(args, &refs);
    (
        values,
        crate::cli::validate::startup_diagnostics(args, &refs),
    )
}

/// The unknown long flags as parsed (`--x=v` and `--x v` give a string, a bare `--x` true).
pub(crate) fn unknown_flag_values(args: &Args) -> Map<String, Value> {
    args.unknown_flags
        .iter()
        .map(|f| {
            let v = match &f.value {
                Some(s) => json!(s),
                None => json!(true),
            };
            (f.name.clone(), v)
        })
        .collect()
}

/// Whether any error concerns an extension load (Pi then adds its `-ne` hint).
pub fn needs_hint(errors: &[Diagnostic]) -> bool {
    errors
        .iter()
        .any(|d| d.message.contains("Failed to load extension"))
}

/// Starts the extension host; its process group is stopped with pi even when pi is killed
/// outright (Node itself also has the parent-death signal; what extensions start does not).
pub(crate) fn start_host(cwd: &Path) -> Result<Host, pi_ext_host::StartError> {
    let host = Host::start_with(cwd, pi_tools::shell::reaper::watch)?;
    if let Some(pgid) = host.pgid() {
        pi_tools::shell::reaper::notify(pgid, true);
    }
    Ok(host)
}
