//! The cwd-bound services of a session made anew when the session is replaced.
//!
//! Pi builds a whole runtime for every session it switches to (`new_session`,
//! `switch_session`, `fork`, `clone`): settings, trust, resources (context files, skills,
//! prompt templates, themes, packages), extensions and MCP servers are those of the new
//! session's working directory, read again (a skill added meanwhile appears), and the tools and
//! RPC `bash` run there. We keep the process and the agent, and reload what depends on the cwd.

use super::{Runtime, lock};
use crate::cli::{Args, Diagnostic};
use crate::resources::extensions::ExtensionSource;
use crate::resources::session::{Locations, SessionResources};
use crate::settings::SettingsManager;
use std::path::{Path, PathBuf};

impl Runtime {
    /// Reads settings and resources again for `cwd` (the new session's); built-in tools are
    /// made there, and the MCP servers of that project replace the others when the cwd changed.
    /// Returns the extensions to load for it.
    pub(super) async fn rebind_services(&self, cwd: &Path) -> Vec<ExtensionSource> {
        let core = &self.core;
        let previous = core.cwd();
        let moved = previous != cwd;
        let env = &core.env;
        // A trust decision an extension made at startup was for the startup cwd; elsewhere
        // only the command line's `--approve`/`--no-approve` holds (Pi caches trust by cwd).
        let mut args = core.args.clone();
        if cwd != env.cwd {
            args.project_trust_override = core.cli_trust_override;
            if args.project_trust_override.is_none() {
                args.project_trust_override = self.extension_trust(&args, cwd).await;
            }
        }
        let (res, diagnostics) = self.read_resources(&args, cwd);
        // Pi reports a replacement runtime's diagnostics once each (an unchanged settings
        // warning is not repeated on every replacement, nor one startup printed).
        for d in &diagnostics {
            core.report_once(d.to_string());
        }
        for (path, error) in &res.missing_extensions {
            core.report_once(format!(
                "Error: Failed to load extension \"{path}\": {error}"
            ));
        }
        // Resources extensions discover come back with `resources_discover` once they are
        // made anew.
        let sources = res.extensions.clone();
        let settings = res.settings.settings().clone();
        *lock(&core.res) = res;
        self.reload_registry().await;
        // Tools are made anew with the settings read now (Pi's new runtime makes its own); the
        // MCP servers restart only for another project (a connection is costly).
        core.tools.rebind(cwd, &settings);
        if moved {
            core.restart_mcp().await;
        }
        sources
    }
}

impl Runtime {
    /// Settings and resources read again for `cwd`, as a replaced session and a reload both
    /// need; Pi's startup settings (the default project trust) stay the process cwd's.
    pub(crate) fn read_resources(
        &self,
        args: &Args,
        cwd: &Path,
    ) -> (SessionResources, Vec<Diagnostic>) {
        let env = &self.core.env;
        let mut startup = SettingsManager::load(&env.cwd, &env.agent_dir, true);
        SessionResources::load(
            args,
            Locations {
                cwd,
                agent_dir: &env.agent_dir,
                home: &env.home,
                process_cwd: &env.cwd,
                needs_trust: &std::cell::OnceCell::new(),
            },
            &mut startup,
        )
    }

    /// Pi's new runtime reads `models.json` and `auth.json` again. The extensions' providers
    /// and virtual models stay registered until their next generation replaces them, and
    /// registered providers restore their stored catalogs (no network), as at startup.
    async fn reload_registry(&self) {
        let core = &self.core;
        let llama = lock(&core.res)
            .builtin_extensions
            .iter()
            .any(|p| p == "builtin:llama.cpp");
        let (mut registry, problems) = super::startup::load_registry(&core.env, llama);
        // Their rejections were reported when they registered.
        let _ = super::startup::apply_extension_providers(&mut registry, &core.ext.registrations());
        *lock(&core.registry) = registry;
        if let Some(host) = core.ext.host() {
            let options = crate::extensions::model_refresh::RefreshOptions::default();
            crate::extensions::model_refresh::refresh(&host, &core.registry, options).await;
        }
        core.ext.route_streams(&lock(&core.registry));
        for p in problems {
            core.report_once(format!("Warning: {p}"));
        }
    }

    /// Pi's pre-trust pass for a cwd other than the startup one (its decision is kept per
    /// cwd): `-e` and user-level extensions may decide the project's trust (`project_trust`)
    /// before the project's own files are read. `None`: nothing decided.
    async fn extension_trust(&self, args: &crate::cli::Args, cwd: &Path) -> Option<bool> {
        let core = &self.core;
        if let Some(t) = lock(&core.trust_by_cwd).get(cwd) {
            return Some(*t);
        }
        let env = &core.env;
        let at = Locations {
            cwd,
            agent_dir: &env.agent_dir,
            home: &env.home,
            process_cwd: &env.cwd,
            needs_trust: &std::cell::OnceCell::new(),
        };
        let (sources, _) = SessionResources::pre_trust_extensions(args, at)?;
        let pass = crate::extensions::project_trust_pass(&sources, args, cwd, &env.agent_dir).await;
        // That host goes on with the project's extensions (see `ext_session_restart`).
        if let Some(host) = pass.host
            && let Some(old) = lock(&core.pending_host).replace(host)
        {
            old.kill();
        }
        for w in &pass.warnings {
            eprintln!("Warning: {w}");
        }
        let trusted = pass.trusted?;
        if pass.remember
            && let Err(e) =
                crate::resources::trust::TrustStore::new(&env.agent_dir).set(cwd, Some(trusted))
        {
            eprintln!("Warning: {e}");
        }
        lock(&core.trust_by_cwd).insert(cwd.to_path_buf(), trusted);
        Some(trusted)
    }
}

impl super::Core {
    /// Writes a diagnostic line to stderr unless it was printed before (Pi's
    /// `takeUnreportedDiagnostics`: replacements do not repeat what is unchanged).
    pub(crate) fn report_once(&self, line: String) {
        if lock(&self.reported_diagnostics).insert(line.clone()) {
            eprintln!("{line}");
        }
    }

    /// The session's working directory (Pi's runtime cwd): where tools and `bash` run and
    /// whose resources the session has. The process's own cwd is `env.cwd`.
    pub fn cwd(&self) -> PathBuf {
        lock(&self.res).cwd.clone()
    }
}
