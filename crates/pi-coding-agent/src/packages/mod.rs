//! Pi packages (`docs/packages.md` of Pi 1.6.0): extensions, skills, prompt templates and themes
//! shared as one npm package, git repository or local folder, declared under `packages` in the
//! user's or the project's `settings.json`, or given once with `-e npm:…`/`-e git:…`.
//!
//! * [`source`]: the three kinds of sources, their identity, settings entries and filters;
//!   [`git_url`] the git source forms.
//! * [`manager`]: install locations, the npm command, running npm and git.
//! * [`install`]: install, remove, update.
//! * [`resolve`]: configured packages → resource paths, installing missing ones at startup.
//! * [`collect`]: the resources of one package (manifest, conventional folders, filters).
//! * This file: the `packages` edits of `pi install`/`pi remove` and `pi list`'s view.
//!
//! The loaders take the resolved paths like any other resource (`resources::discovery`), with
//! the package as `sourceInfo`.

pub mod cli;
pub mod collect;
pub mod config;
pub mod git_url;
pub mod install;
pub mod manager;
pub mod resolve;
pub mod source;

pub use manager::{ChildOutput, InstallFailure, PackageManager, Progress, offline_from_env};
pub use resolve::Resolution;

use crate::settings::SettingsManager;
use crate::settings::paths::{relative, resolve_path};
use pi_protocol::results::SourceScope;
use serde_json::Value;
use source::{Source, identity, is_local_path, layer_packages, parse_source};

/// A configured package, as `pi list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedPackage {
    pub source: String,
    pub scope: SourceScope,
    /// Object form (with filters).
    pub filtered: bool,
    pub installed_path: Option<std::path::PathBuf>,
}

impl PackageManager {
    /// The user's packages, then the project's.
    pub fn list_configured(&mut self) -> Vec<ListedPackage> {
        let mut out = Vec::new();
        let layers = [
            (layer_packages(&self.global), SourceScope::User),
            (layer_packages(&self.project), SourceScope::Project),
        ];
        for (entries, scope) in layers {
            for e in entries {
                let installed_path = self.installed_path(&e.source, scope);
                out.push(ListedPackage {
                    filtered: e.filter.is_some(),
                    source: e.source,
                    scope,
                    installed_path,
                });
            }
        }
        out
    }

    /// The settings key of a typed source: local paths resolve from the cwd.
    fn input_key(&self, source: &str) -> String {
        identity(source, &self.cwd, &self.home)
    }

    /// How a source is written into a scope's settings: local paths relative to its folder.
    fn settings_form(&self, source: &str, scope: SourceScope) -> String {
        match parse_source(source) {
            Source::Local(p) => {
                let base = source::scope_base(scope, &self.cwd, &self.agent_dir);
                let resolved = resolve_path(pi_js::trim(&p), &self.cwd, &self.home);
                let rel = relative(&base, &resolved);
                if rel.is_empty() { ".".into() } else { rel }
            }
            _ => source.to_string(),
        }
    }
}

/// The entry of `packages` (in `entries`) that names the same package as `source`.
fn matching_index(
    pm: &PackageManager,
    entries: &[Value],
    source: &str,
    scope: SourceScope,
) -> Option<usize> {
    let want = pm.input_key(source);
    let base = source::scope_base(scope, &pm.cwd, &pm.agent_dir);
    entries.iter().position(|e| {
        source::PackageEntry::from_value(e)
            .is_some_and(|e| identity(&e.source, &base, &pm.home) == want)
    })
}

/// The `packages` array of a scope's settings file as loaded.
fn packages_value(settings: &SettingsManager, scope: SourceScope) -> Vec<Value> {
    let layer = if scope == SourceScope::Project {
        settings.project_layer()
    } else {
        settings.global_layer()
    };
    layer
        .get("packages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Adds `source` to the scope's `packages` (or updates the entry of the same package to the
/// new source, keeping its filters). Returns whether settings changed.
pub fn add_to_settings(
    pm: &PackageManager,
    settings: &mut SettingsManager,
    source: &str,
    scope: SourceScope,
) -> Result<bool, String> {
    let mut entries = packages_value(settings, scope);
    let normalized = pm.settings_form(source, scope);
    match matching_index(pm, &entries, source, scope) {
        Some(i) => {
            let same = match &entries[i] {
                Value::String(s) => *s == normalized,
                Value::Object(m) => m.get("source").and_then(Value::as_str) == Some(&normalized),
                _ => false,
            };
            if same {
                return Ok(false);
            }
            match &mut entries[i] {
                Value::Object(m) => {
                    m.insert("source".into(), Value::String(normalized));
                }
                other => *other = Value::String(normalized),
            }
        }
        None => entries.push(Value::String(normalized)),
    }
    settings.set_packages(scope == SourceScope::Project, entries)?;
    Ok(true)
}

/// Removes every entry of the scope's `packages` naming the package. Returns whether one was
/// there.
pub fn remove_from_settings(
    pm: &PackageManager,
    settings: &mut SettingsManager,
    source: &str,
    scope: SourceScope,
) -> Result<bool, String> {
    let entries = packages_value(settings, scope);
    let want = pm.input_key(source);
    let base = source::scope_base(scope, &pm.cwd, &pm.agent_dir);
    let kept: Vec<Value> = entries
        .iter()
        .filter(|e| {
            source::PackageEntry::from_value(e)
                .is_none_or(|e| identity(&e.source, &base, &pm.home) != want)
        })
        .cloned()
        .collect();
    if kept.len() == entries.len() {
        return Ok(false);
    }
    settings.set_packages(scope == SourceScope::Project, kept)?;
    Ok(true)
}

/// Whether a `-e` value is a package source to install (not a path or a built-in).
pub fn is_remote_source(value: &str) -> bool {
    !is_local_path(value) && !value.starts_with("builtin:")
}
