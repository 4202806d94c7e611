//! Installing, removing and updating packages (Pi's `DefaultPackageManager.install`, `remove`,
//! `update`): npm packages go into a private npm project per scope (`npm install <spec> --prefix
//! <root> --legacy-peer-deps --no-audit --no-fund`, so host-provided peers are not installed),
//! git packages are cloned and checked out at their ref, then their dependencies installed
//! without dev and peer dependencies. Local paths are only checked.

use super::git_url::GitSource;
use super::manager::{NETWORK_TIMEOUT, PackageManager, Progress, run_capture};
use super::source::{NpmSource, Source, identity, layer_packages, parse_source, parse_version};
use crate::settings::paths::resolve_path;
use nodejs_semver::Version;
use pi_protocol::results::SourceScope;
use std::path::{Path, PathBuf};

/// How many update checks and git updates run at once.
const CONCURRENCY: usize = 4;

impl PackageManager {
    /// Runs `op` between a start and (on failure) nothing more: Pi's `withProgress` only
    /// announces the start to the CLI.
    fn with_progress<T>(
        &mut self,
        message: String,
        op: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        self.emit(Progress::Start(message));
        op(self)
    }

    /// `pi install <source>`: installs (npm, git) or checks (local path) the source.
    pub fn install(&mut self, source: &str, scope: SourceScope) -> Result<(), String> {
        let parsed = parse_source(source);
        self.assert_trusted(scope)?;
        self.with_progress(format!("Installing {source}..."), |pm| match &parsed {
            Source::Npm(n) => pm.install_npm(n, scope),
            Source::Git(g) => pm.install_git(g, scope),
            Source::Local(p) => {
                let resolved = resolve_path(pi_js::trim(p), &pm.cwd, &pm.home);
                if resolved.exists() {
                    Ok(())
                } else {
                    Err(format!("Path does not exist: {}", resolved.display()))
                }
            }
        })
    }

    /// Installs a parsed source into `scope` (startup installs of missing packages).
    pub(super) fn install_parsed(
        &mut self,
        parsed: &Source,
        scope: SourceScope,
    ) -> Result<(), String> {
        match parsed {
            Source::Npm(n) => self.install_npm(n, scope),
            Source::Git(g) => self.install_git(g, scope),
            Source::Local(_) => Ok(()),
        }
    }

    /// `pi remove <source>`: uninstalls an npm package or deletes a git checkout.
    pub fn remove(&mut self, source: &str, scope: SourceScope) -> Result<(), String> {
        let parsed = parse_source(source);
        self.assert_trusted(scope)?;
        self.with_progress(format!("Removing {source}..."), |pm| match &parsed {
            Source::Npm(n) => pm.uninstall_npm(n, scope),
            Source::Git(g) => {
                let target = pm.git_path(g, scope)?;
                let _ = std::fs::remove_dir_all(&target);
                let _ = std::fs::remove_file(update_marker(&target));
                let root = pm.git_root(scope)?;
                prune_empty_parents(&target, root.as_deref());
                Ok(())
            }
            Source::Local(_) => Ok(()),
        })
    }

    // ---- npm ----------------------------------------------------------------------------

    /// `install` arguments of the configured package manager, peers left to the host.
    fn npm_install_args(&self, specs: &[String], root: &Path) -> Result<Vec<String>, String> {
        // npm writes broken nested lock paths when --prefix goes through a symlink.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let root = root.to_string_lossy().into_owned();
        let mut args = vec!["install".to_string()];
        args.extend(specs.iter().cloned());
        match self.package_manager_name()?.as_str() {
            "bun" => args.extend(["--cwd".into(), root, "--omit=peer".into()]),
            "pnpm" => args.extend([
                "--prefix".into(),
                root,
                "--config.auto-install-peers=false".into(),
                "--config.strict-peer-dependencies=false".into(),
                "--config.strict-dep-builds=false".into(),
            ]),
            _ => args.extend([
                "--prefix".into(),
                root,
                "--legacy-peer-deps".into(),
                "--no-audit".into(),
                "--no-fund".into(),
            ]),
        }
        Ok(args)
    }

    /// Dependencies of a git checkout: production only, no peers.
    fn git_dependency_args(&self) -> Result<Vec<String>, String> {
        let args: &[&str] = match self.package_manager_name()?.as_str() {
            "bun" => &["install", "--omit=dev", "--omit=peer"],
            "pnpm" => &[
                "install",
                "--prod",
                "--config.auto-install-peers=false",
                "--config.strict-peer-dependencies=false",
                "--config.strict-dep-builds=false",
            ],
            "npm" => &[
                "install",
                "--omit=dev",
                "--legacy-peer-deps",
                "--no-audit",
                "--no-fund",
            ],
            _ => &["install"],
        };
        Ok(args.iter().map(|s| s.to_string()).collect())
    }

    /// The npm project of a scope, created on first use.
    fn ensure_npm_project(&self, root: &Path) -> Result<(), String> {
        std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
        ensure_gitignore(root)?;
        let package_json = root.join("package.json");
        if !package_json.exists() {
            std::fs::write(
                &package_json,
                "{\n  \"name\": \"pi-extensions\",\n  \"private\": true\n}",
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    pub(super) fn install_npm(
        &mut self,
        source: &NpmSource,
        scope: SourceScope,
    ) -> Result<(), String> {
        self.install_npm_specs(std::slice::from_ref(&source.spec), scope)
    }

    fn install_npm_specs(&mut self, specs: &[String], scope: SourceScope) -> Result<(), String> {
        let root = self.npm_root(scope)?;
        self.ensure_npm_project(&root)?;
        let args = self.npm_install_args(specs, &root)?;
        self.npm(&args, None)
    }

    fn uninstall_npm(&mut self, source: &NpmSource, scope: SourceScope) -> Result<(), String> {
        let root = self.npm_root(scope)?;
        if !root.exists() {
            return Ok(());
        }
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let root = root.to_string_lossy().into_owned();
        let name = self.package_manager_name()?;
        let mut args = vec!["uninstall".to_string(), source.name.clone()];
        if name == "bun" {
            args.extend(["--cwd".into(), root]);
        } else {
            args.extend(["--prefix".into(), root]);
            if name != "pnpm" {
                args.extend([
                    "--legacy-peer-deps".into(),
                    "--no-audit".into(),
                    "--no-fund".into(),
                ]);
            }
        }
        self.npm(&args, None)
    }

    /// The `version` of an installed package's `package.json`.
    pub(super) fn installed_version(path: &Path) -> Option<String> {
        let text = std::fs::read_to_string(path.join("package.json")).ok()?;
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let pkg = pi_js::parse::parse_js_json(text).ok()?;
        pkg.get("version")?.as_str().map(str::to_string)
    }

    /// Whether the installed copy satisfies the configured range (any version without one).
    pub(super) fn installed_matches(source: &NpmSource, path: &Path) -> bool {
        let Some(installed) = Self::installed_version(path) else {
            return false;
        };
        match source.range() {
            Some(range) => parse_version(&installed).is_some_and(|v| range.satisfies(&v)),
            None => true,
        }
    }

    /// The newest version npm offers for the source (within its range).
    fn latest_npm_version(&self, source: &NpmSource) -> Result<String, String> {
        latest_npm_version(&self.npm_argv(), &self.cwd, source)
    }

    /// An unpinned `-e` npm source has a newer matching version.
    pub(super) fn npm_has_update(&self, source: &NpmSource, path: &Path) -> bool {
        if self.offline {
            return false;
        }
        let Some(installed) = Self::installed_version(path).and_then(|v| parse_version(&v)) else {
            return false;
        };
        self.latest_npm_version(source)
            .ok()
            .and_then(|v| parse_version(&v))
            .is_some_and(|latest| latest > installed)
    }

    // ---- git ----------------------------------------------------------------------------

    pub(super) fn install_git(
        &mut self,
        source: &GitSource,
        scope: SourceScope,
    ) -> Result<(), String> {
        let target = self.git_path(source, scope)?;
        if target.exists() {
            return self.reconcile_git(source, &target);
        }
        let root = self.git_root(scope)?;
        if let Some(root) = &root {
            ensure_gitignore(root)?;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let _ = std::fs::remove_file(update_marker(&target));
        let result = (|| -> Result<(), String> {
            let target_s = target.to_string_lossy().into_owned();
            self.run(
                "git",
                &["clone".into(), source.repo.clone(), target_s],
                None,
            )?;
            if let Some(r) = &source.git_ref {
                self.run("git", &["checkout".into(), r.clone()], Some(&target))?;
            }
            if target.join("package.json").exists() {
                let args = self.git_dependency_args()?;
                self.npm(&args, Some(&target))?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&target);
            prune_empty_parents(&target, root.as_deref());
        }
        result
    }

    /// Brings an existing checkout to the configured ref, or to its upstream branch.
    fn reconcile_git(&mut self, source: &GitSource, target: &Path) -> Result<(), String> {
        if let Some(r) = &source.git_ref {
            return self.ensure_git_ref(
                target,
                &["fetch".into(), "origin".into(), r.clone()],
                "FETCH_HEAD",
            );
        }
        let (fetch, reference) = self.git_update_target(target)?;
        self.ensure_git_ref(target, &fetch, &reference)
    }

    /// The fetch to run and the ref to reset to: the upstream branch, else `origin/HEAD`.
    fn git_update_target(&self, dir: &Path) -> Result<(Vec<String>, String), String> {
        let capture = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            run_capture("git", &args, Some(dir), Some(NETWORK_TIMEOUT), &[])
        };
        let fetch = |branch: &str| -> Vec<String> {
            ["fetch", "--prune", "--no-tags", "origin"]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("+refs/heads/{branch}:refs/remotes/origin/{branch}")])
                .collect()
        };
        let upstream = capture(&["rev-parse", "--abbrev-ref", "@{upstream}"]).and_then(|u| {
            let branch = u
                .trim()
                .strip_prefix("origin/")
                .ok_or_else(|| format!("Unsupported upstream remote: {}", u.trim()))?
                .to_string();
            if branch.is_empty() {
                return Err("Missing upstream branch name".to_string());
            }
            capture(&["rev-parse", "@{upstream}"])?;
            Ok(branch)
        });
        if let Ok(branch) = upstream {
            return Ok((fetch(&branch), "@{upstream}".into()));
        }
        let _ = self.run_quiet("git", &["remote", "set-head", "origin", "-a"], dir);
        capture(&["rev-parse", "origin/HEAD"])?;
        let head_ref = capture(&["symbolic-ref", "refs/remotes/origin/HEAD"]).unwrap_or_default();
        let branch = head_ref
            .trim()
            .trim_start_matches("refs/remotes/origin/")
            .to_string();
        if !branch.is_empty() {
            return Ok((fetch(&branch), "origin/HEAD".into()));
        }
        let args = [
            "fetch",
            "--prune",
            "--no-tags",
            "origin",
            "+HEAD:refs/remotes/origin/HEAD",
        ];
        Ok((
            args.iter().map(|s| s.to_string()).collect(),
            "origin/HEAD".into(),
        ))
    }

    /// A command whose failure does not matter (its output still shows, as in Pi).
    fn run_quiet(&self, command: &str, args: &[&str], dir: &Path) -> Result<(), String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.run(command, &args, Some(dir))
    }

    /// Fetches, then resets the checkout to `reference` when it moved; cleans and reinstalls
    /// dependencies after a reset (a marker file makes an interrupted reset retry).
    fn ensure_git_ref(
        &mut self,
        dir: &Path,
        fetch: &[String],
        reference: &str,
    ) -> Result<(), String> {
        self.run("git", fetch, Some(dir))?;
        let rev = |r: &str| {
            run_capture(
                "git",
                &["rev-parse".into(), r.into()],
                Some(dir),
                Some(NETWORK_TIMEOUT),
                &[],
            )
        };
        let local = rev("HEAD")?;
        let commit = format!("{reference}^{{commit}}");
        let target = rev(&commit)?;
        let marker = update_marker(dir);
        if local.trim() == target.trim() {
            if marker.exists() {
                return self.clean_and_install(dir, &marker);
            }
            return self.repair_git_dependencies(dir);
        }
        std::fs::write(&marker, "").map_err(|e| e.to_string())?;
        self.run("git", &["reset".into(), "--hard".into(), commit], Some(dir))?;
        self.clean_and_install(dir, &marker)
    }

    fn clean_and_install(&mut self, dir: &Path, marker: &Path) -> Result<(), String> {
        let cleaned = match self.run("git", &["clean".into(), "-fdx".into()], Some(dir)) {
            Ok(()) => true,
            Err(reason) => {
                self.emit(Progress::Warning(format!(
                    "Could not remove all untracked files in {} ({reason}). Files may be in use by another pi session; close it and run the update again.",
                    dir.display()
                )));
                false
            }
        };
        if dir.join("package.json").exists() {
            let args = self.git_dependency_args()?;
            self.npm(&args, Some(dir))?;
        }
        if cleaned {
            let _ = std::fs::remove_file(marker);
        }
        Ok(())
    }

    /// Installs dependencies a checkout declares but lacks.
    fn repair_git_dependencies(&mut self, dir: &Path) -> Result<(), String> {
        if !missing_dependencies(dir) {
            return Ok(());
        }
        let args = self.git_dependency_args()?;
        self.npm(&args, Some(dir))
    }

    /// Refreshes a cached `-e` git checkout; a commit already checked out is kept as is, and
    /// any failure keeps the cached copy.
    pub(super) fn refresh_temporary_git(&mut self, source: &GitSource, label: &str, dir: &Path) {
        if self.offline {
            return;
        }
        if let Some(r) = &source.git_ref
            && r.len() >= 7
            && r.len() <= 64
            && r.chars().all(|c| c.is_ascii_hexdigit())
        {
            let head = run_capture(
                "git",
                &["rev-parse".into(), "HEAD".into()],
                Some(dir),
                Some(NETWORK_TIMEOUT),
                &[],
            );
            if let Ok(head) = head
                && head.trim().to_lowercase().starts_with(&r.to_lowercase())
            {
                return;
            }
        }
        let _ = self.with_progress(format!("Refreshing {label}..."), |pm| {
            pm.update_git(source, SourceScope::Temporary)
        });
    }

    fn update_git(&mut self, source: &GitSource, scope: SourceScope) -> Result<(), String> {
        let target = self.git_path(source, scope)?;
        if !target.exists() {
            return self.install_git(source, scope);
        }
        self.reconcile_git(source, &target)
    }

    fn git_head(dir: &Path) -> Option<String> {
        if !dir.exists() {
            return None;
        }
        run_capture(
            "git",
            &["rev-parse".into(), "HEAD".into()],
            Some(dir),
            Some(NETWORK_TIMEOUT),
            &[],
        )
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
    }

    // ---- update -------------------------------------------------------------------------

    /// `pi update --extensions [source]`: updates the configured packages (all, or those with
    /// the identity of `source`). Pinned npm versions stay; git checkouts are reconciled.
    pub fn update(&mut self, source: Option<&str>) -> Result<(), String> {
        let wanted = source.map(|s| identity(s, &self.cwd, &self.home));
        let mut sources: Vec<(String, SourceScope)> = Vec::new();
        let mut all_configured = Vec::new();
        for (layer, scope) in [
            (&self.global, SourceScope::User),
            (&self.project, SourceScope::Project),
        ] {
            let base = super::source::scope_base(scope, &self.cwd, &self.agent_dir);
            for entry in layer_packages(layer) {
                all_configured.push(entry.source.clone());
                if let Some(w) = &wanted
                    && identity(&entry.source, &base, &self.home) != *w
                {
                    continue;
                }
                sources.push((entry.source, scope));
            }
        }
        if let Some(s) = source
            && sources.is_empty()
        {
            return Err(no_matching_package(s, &all_configured));
        }
        self.update_sources(&sources)
    }

    fn update_sources(&mut self, sources: &[(String, SourceScope)]) -> Result<(), String> {
        if self.offline || sources.is_empty() {
            return Ok(());
        }
        let mut npm: Vec<(String, SourceScope, NpmSource)> = Vec::new();
        let mut git: Vec<(String, SourceScope, GitSource)> = Vec::new();
        for (s, scope) in sources {
            match parse_source(s) {
                Source::Npm(n) if !n.pinned => npm.push((s.clone(), *scope, n)),
                Source::Git(g) => git.push((s.clone(), *scope, g)),
                _ => {}
            }
        }
        // Check npm sources (a few at a time; each check is an `npm view`).
        let checks = self.npm_update_checks(&npm);
        let mut updates: Vec<NpmUpdate> = Vec::new();
        for ((label, scope, parsed), (should, installed, target)) in npm.into_iter().zip(checks) {
            if should {
                updates.push(NpmUpdate {
                    label,
                    scope,
                    parsed,
                    installed,
                    target,
                });
            }
        }
        let mut first_error = None;
        for scope in [SourceScope::User, SourceScope::Project] {
            let batch: Vec<&NpmUpdate> = updates.iter().filter(|u| u.scope == scope).collect();
            if batch.is_empty() {
                continue;
            }
            let message = if batch.len() == 1 {
                format!("Updating {}...", batch[0].label)
            } else {
                format!("Updating {} npm packages...", scope_name(scope))
            };
            let specs: Vec<String> = batch
                .iter()
                .map(|u| {
                    if u.parsed.version.is_some() {
                        u.parsed.spec.clone()
                    } else {
                        format!("{}@latest", u.parsed.name)
                    }
                })
                .collect();
            let result = self.with_progress(message, |pm| pm.install_npm_specs(&specs, scope));
            match result {
                Ok(()) => self.report_unchanged(&batch),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let mut git_changes: Vec<(String, SourceScope, Option<String>, Option<String>)> =
            Vec::new();
        for (label, scope, parsed) in &git {
            let result = self.with_progress(format!("Updating {label}..."), |pm| {
                let dir = pm.git_path(parsed, *scope)?;
                let from = Self::git_head(&dir);
                pm.update_git(parsed, *scope)?;
                let to = Self::git_head(&dir);
                Ok((from, to))
            });
            match result {
                Ok((from, to)) if from != to => git_changes.push((label.clone(), *scope, from, to)),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let mut changed: Vec<String> = Vec::new();
        for u in &updates {
            let path = self.managed_npm_path(&u.parsed, u.scope)?;
            let to = if path.exists() {
                Self::installed_version(&path)
            } else {
                None
            };
            if to != u.installed {
                changed.push(change_line(
                    &u.label,
                    u.scope,
                    u.installed.as_deref(),
                    to.as_deref(),
                    false,
                ));
            }
        }
        for (label, scope, from, to) in &git_changes {
            changed.push(change_line(
                label,
                *scope,
                from.as_deref(),
                to.as_deref(),
                true,
            ));
        }
        for line in changed {
            self.emit(Progress::Updated(line));
        }
        Ok(())
    }

    /// For each npm source: whether to update, the installed and the target version.
    fn npm_update_checks(
        &mut self,
        npm: &[(String, SourceScope, NpmSource)],
    ) -> Vec<(bool, Option<String>, Option<String>)> {
        let installed: Vec<Option<String>> = npm
            .iter()
            .map(|(_, scope, parsed)| {
                let path = self.managed_npm_path(parsed, *scope).ok()?;
                path.exists()
                    .then(|| Self::installed_version(&path))
                    .flatten()
            })
            .collect();
        let argv = self.npm_argv();
        let cwd = self.cwd.clone();
        let (argv, cwd) = (&argv, &cwd);
        let mut results = vec![(true, None, None); npm.len()];
        for chunk_start in (0..npm.len()).step_by(CONCURRENCY) {
            let end = (chunk_start + CONCURRENCY).min(npm.len());
            std::thread::scope(|s| {
                let handles: Vec<_> = (chunk_start..end)
                    .map(|i| {
                        let parsed = &npm[i].2;
                        let installed = installed[i].clone();
                        s.spawn(move || match installed {
                            None => (true, None, None),
                            Some(inst) => match latest_npm_version(argv, cwd, parsed) {
                                Ok(target) => {
                                    let newer = match (parse_version(&target), parse_version(&inst))
                                    {
                                        (Some(t), Some(i)) => t > i,
                                        _ => false,
                                    };
                                    (newer, Some(inst), Some(target))
                                }
                                // A failed lookup updates anyway, as Pi does.
                                Err(_) => (true, Some(inst), None),
                            },
                        })
                    })
                    .collect();
                for (i, h) in (chunk_start..end).zip(handles) {
                    if let Ok(r) = h.join() {
                        results[i] = r;
                    }
                }
            });
        }
        results
    }

    /// npm may reinstall the old version from stale registry metadata without failing.
    fn report_unchanged(&mut self, batch: &[&NpmUpdate]) {
        for u in batch {
            let (Some(installed), Some(target)) = (&u.installed, &u.target) else {
                continue;
            };
            let Ok(path) = self.managed_npm_path(&u.parsed, u.scope) else {
                continue;
            };
            let after = Self::installed_version(&path);
            if after.as_ref() != Some(installed) {
                continue;
            }
            self.emit(Progress::Warning(format!(
                "{} is still {installed} (registry reports {target}); npm registry metadata may be stale, try again in a few minutes",
                u.label
            )));
        }
    }

    /// Where a configured package is installed, if it is (`pi list`).
    pub fn installed_path(&mut self, source: &str, scope: SourceScope) -> Option<PathBuf> {
        let path = match parse_source(source) {
            Source::Npm(n) => self.npm_path(&n, scope).ok()?,
            Source::Git(g) => self.git_path(&g, scope).ok()?,
            Source::Local(p) => {
                let base = self.scope_base(scope).ok()?;
                resolve_path(pi_js::trim(&p), &base, &self.home)
            }
        };
        path.exists().then_some(path)
    }
}

/// `npm view <spec> version --json`: the newest version (within the source's range).
fn latest_npm_version(argv: &[String], cwd: &Path, source: &NpmSource) -> Result<String, String> {
    let spec = if source.version.is_some() {
        source.spec.clone()
    } else {
        source.name.clone()
    };
    let (command, rest) = argv
        .split_first()
        .ok_or("Invalid npmCommand: first array entry must be a non-empty command")?;
    let mut args = rest.to_vec();
    args.extend([
        "view".to_string(),
        spec,
        "version".to_string(),
        "--json".to_string(),
    ]);
    let out = run_capture(command, &args, Some(cwd), Some(NETWORK_TIMEOUT), &[])?;
    let raw = out.trim();
    if raw.is_empty() {
        return Err("Empty response from npm view".into());
    }
    let parsed: serde_json::Value =
        serde_json::from_str(raw).map_err(|e| format!("Unexpected response from npm view: {e}"))?;
    if let Some(v) = parsed.as_str() {
        return Ok(v.to_string());
    }
    if let Some(items) = parsed.as_array() {
        let versions: Vec<Version> = items
            .iter()
            .filter_map(|v| v.as_str())
            .filter_map(parse_version)
            .collect();
        let best = match source.range() {
            Some(range) => versions
                .iter()
                .filter(|v| range.satisfies(v))
                .max()
                .cloned(),
            None => versions.iter().max().cloned(),
        };
        if let Some(v) = best {
            return Ok(v.to_string());
        }
    }
    Err("Unexpected response from npm view".into())
}

struct NpmUpdate {
    label: String,
    scope: SourceScope,
    parsed: NpmSource,
    installed: Option<String>,
    target: Option<String>,
}

fn scope_name(scope: SourceScope) -> &'static str {
    match scope {
        SourceScope::User => "user",
        SourceScope::Project => "project",
        SourceScope::Temporary => "temporary",
    }
}

/// `npm:foo (project) 1.0.0 -> 1.1.0`; git commits shortened to 7 characters.
fn change_line(
    label: &str,
    scope: SourceScope,
    from: Option<&str>,
    to: Option<&str>,
    git: bool,
) -> String {
    let show = |v: Option<&str>| match v {
        None => "(none)".to_string(),
        Some(v) if git => v.chars().take(7).collect(),
        Some(v) => v.to_string(),
    };
    let scope = if scope == SourceScope::Project {
        " (project)"
    } else {
        ""
    };
    format!("{label}{scope} {} -> {}", show(from), show(to))
}

/// `No matching package found for <source>`, with a suggestion when the user typed a
/// configured package's name without its `npm:`/`git:` prefix.
pub fn no_matching_package(source: &str, configured: &[String]) -> String {
    let typed = pi_js::trim(source);
    let suggestion = configured.iter().find(|c| match parse_source(c) {
        Source::Npm(n) => typed == n.name || typed == n.spec,
        Source::Git(g) => {
            let short = format!("{}/{}", g.host, g.path);
            typed == short
                || g.git_ref
                    .as_ref()
                    .is_some_and(|r| typed == format!("{short}@{r}"))
        }
        Source::Local(_) => false,
    });
    match suggestion {
        Some(s) => format!("No matching package found for {source}. Did you mean {s}?"),
        None => format!("No matching package found for {source}"),
    }
}

/// `.gitignore` keeping an install folder out of the user's repositories.
fn ensure_gitignore(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join(".gitignore");
    if !path.exists() {
        std::fs::write(&path, "*\n!.gitignore\n").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `.<name>.pi-update-incomplete` next to a checkout.
fn update_marker(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!(".{name}.pi-update-incomplete"))
}

/// Removes the empty folders a removed checkout leaves, up to the install root.
fn prune_empty_parents(target: &Path, root: Option<&Path>) {
    let Some(root) = root else {
        return;
    };
    let mut current = target.parent().map(Path::to_path_buf);
    while let Some(dir) = current {
        if !dir.starts_with(root) || dir == root {
            break;
        }
        if dir.exists() {
            let empty = std::fs::read_dir(&dir)
                .map(|mut r| r.next().is_none())
                .unwrap_or(false);
            if !empty || std::fs::remove_dir_all(&dir).is_err() {
                break;
            }
        }
        current = dir.parent().map(Path::to_path_buf);
    }
}

/// A checkout whose `dependencies` are not all in its `node_modules`.
fn missing_dependencies(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
        return false;
    };
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let Ok(pkg) = pi_js::parse::parse_js_json(text) else {
        return false;
    };
    let Some(deps) = pkg.get("dependencies").and_then(|d| d.as_object()) else {
        return false;
    };
    let modules = dir.join("node_modules");
    deps.keys().any(|name| {
        let path = crate::settings::paths::lexical_normalize(&modules.join(name));
        path.starts_with(&modules) && path != modules && !path.exists()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_and_change_lines() {
        let configured = vec![
            "npm:@a/b@1".to_string(),
            "git:github.com/u/r@v1".to_string(),
        ];
        assert_eq!(
            no_matching_package("@a/b", &configured),
            "No matching package found for @a/b. Did you mean npm:@a/b@1?"
        );
        assert_eq!(
            no_matching_package("github.com/u/r@v1", &configured),
            "No matching package found for github.com/u/r@v1. Did you mean git:github.com/u/r@v1?"
        );
        assert_eq!(
            no_matching_package("npm:zzz", &configured),
            "No matching package found for npm:zzz"
        );
        assert_eq!(
            change_line(
                "git:h/o/r",
                SourceScope::Project,
                Some("0123456789"),
                None,
                true
            ),
            "git:h/o/r (project) 0123456 -> (none)"
        );
    }
}
