//! From configured sources to resource paths (Pi's `resolvePackageSources`): each package of
//! the settings (project entries first, one per identity) or of `-e`, installed first when it
//! is missing (unless offline; a failed install is skipped and reported), then its resources
//! collected with the package as their source.

use super::collect::collect_package_resources;
use super::manager::{InstallFailure, PackageManager, Progress};
use super::source::{PackageEntry, Source, identity, layer_packages, parse_source, resolve_local};
use crate::resources::discovery::{Kind, ResourceSet};
use crate::resources::source::Metadata;
use pi_protocol::results::SourceScope;
use std::path::Path;

/// Resources of packages, and the packages that could not be installed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolution {
    pub resources: ResourceSet,
    pub install_failures: Vec<InstallFailure>,
}

/// A package entry and the scope of the settings it came from.
#[derive(Debug, Clone)]
struct Scoped {
    entry: PackageEntry,
    scope: SourceScope,
}

impl PackageManager {
    /// The packages of both settings layers.
    pub fn resolve_packages(&mut self) -> Resolution {
        let mut all = Vec::new();
        for entry in layer_packages(&self.project) {
            all.push(Scoped {
                entry,
                scope: SourceScope::Project,
            });
        }
        for entry in layer_packages(&self.global) {
            all.push(Scoped {
                entry,
                scope: SourceScope::User,
            });
        }
        let packages = self.dedupe(all);
        self.resolve_sources(&packages)
    }

    /// `-e` sources other than `builtin:` ones, as temporary packages (local paths are
    /// absolute already).
    pub fn resolve_cli_sources(&mut self, sources: &[String]) -> Resolution {
        let packages: Vec<Scoped> = sources
            .iter()
            .filter(|s| !s.starts_with("builtin:"))
            .map(|s| Scoped {
                entry: PackageEntry {
                    source: s.clone(),
                    filter: None,
                    raw: serde_json::Value::String(s.clone()),
                },
                scope: SourceScope::Temporary,
            })
            .collect();
        self.resolve_sources(&packages)
    }

    fn identity_of(&self, source: &str, scope: SourceScope) -> String {
        let base = super::source::scope_base(scope, &self.cwd, &self.agent_dir);
        identity(source, &base, &self.home)
    }

    /// One entry per identity, the project's winning; a project entry with `autoload: false`
    /// keeps the user's entry after it (it only adjusts that one).
    fn dedupe(&self, packages: Vec<Scoped>) -> Vec<Scoped> {
        let mut result: Vec<Scoped> = Vec::new();
        let mut seen: Vec<(String, usize)> = Vec::new();
        for p in packages {
            let id = self.identity_of(&p.entry.source, p.scope);
            let Some(&(_, index)) = seen.iter().find(|(i, _)| *i == id) else {
                seen.push((id, result.len()));
                result.push(p);
                continue;
            };
            let existing = &result[index];
            if existing.scope == SourceScope::Project && p.scope == SourceScope::User {
                if existing
                    .entry
                    .filter
                    .as_ref()
                    .is_some_and(|f| f.autoload_off)
                {
                    result.push(p);
                }
            } else if p.scope == SourceScope::Project {
                result[index] = p;
            }
        }
        result
    }

    fn resolve_sources(&mut self, packages: &[Scoped]) -> Resolution {
        let mut out = Resolution::default();
        for p in packages {
            let source = p.entry.source.as_str();
            let filter = p.entry.filter.as_ref();
            // An `autoload: false` project entry resolves to the user's package.
            let base_entry = (p.scope == SourceScope::Project
                && filter.is_some_and(|f| f.autoload_off))
            .then(|| {
                let id = self.identity_of(source, p.scope);
                packages.iter().find(|o| {
                    o.scope == SourceScope::User && self.identity_of(&o.entry.source, o.scope) == id
                })
            })
            .flatten();
            let (resolved_source, resolved_scope) = match base_entry {
                Some(b) => (b.entry.source.clone(), SourceScope::User),
                None => (source.to_string(), p.scope),
            };
            let parsed = parse_source(&resolved_source);
            let mut metadata = Metadata::package(source, p.scope);
            let installed = match &parsed {
                Source::Local(path) => {
                    let Ok(base) = self.scope_base(resolved_scope) else {
                        continue;
                    };
                    self.collect_local(path, &base, &mut out.resources, filter, &mut metadata);
                    continue;
                }
                Source::Npm(n) => {
                    let Ok(mut path) = self.npm_path(n, resolved_scope) else {
                        continue;
                    };
                    let needs_install = !path.exists() || !Self::installed_matches(n, &path);
                    if !needs_install
                        && resolved_scope == SourceScope::Temporary
                        && !n.pinned
                        && self.npm_has_update(n, &path)
                    {
                        // `-e` sources have no `pi update`: refresh unpinned ones here, keeping
                        // the cached copy if that fails.
                        let mut latest = n.clone();
                        if latest.version.is_none() {
                            latest.spec = format!("{}@latest", n.name);
                        }
                        let _ = self.install_npm(&latest, resolved_scope);
                    }
                    if needs_install {
                        if !self.install_missing(
                            &parsed,
                            &resolved_source,
                            resolved_scope,
                            &mut out,
                        ) {
                            continue;
                        }
                        match self.npm_path(n, resolved_scope) {
                            Ok(p) => path = p,
                            Err(_) => continue,
                        }
                    }
                    path
                }
                Source::Git(g) => {
                    let Ok(path) = self.git_path(g, resolved_scope) else {
                        continue;
                    };
                    if !path.exists() {
                        if !self.install_missing(
                            &parsed,
                            &resolved_source,
                            resolved_scope,
                            &mut out,
                        ) {
                            continue;
                        }
                    } else if resolved_scope == SourceScope::Temporary {
                        self.refresh_temporary_git(g, &resolved_source, &path);
                    }
                    path
                }
            };
            metadata.base_dir = Some(installed.clone());
            metadata.package_root = Some(installed.clone());
            let home = self.home.clone();
            collect_package_resources(&installed, &mut out.resources, filter, &mut metadata, &home);
        }
        out
    }

    /// Installs a missing package; a failure is recorded, not fatal. Offline nothing is done.
    fn install_missing(
        &mut self,
        parsed: &Source,
        label: &str,
        scope: SourceScope,
        out: &mut Resolution,
    ) -> bool {
        if self.offline {
            return false;
        }
        self.emit(Progress::Start(format!("Installing {label}...")));
        match self.install_parsed(parsed, scope) {
            Ok(()) => true,
            Err(message) => {
                out.install_failures.push(InstallFailure {
                    source: label.to_string(),
                    scope,
                    message,
                });
                false
            }
        }
    }

    /// A local source: a file is one extension, a folder a package (or, without resources,
    /// an extension folder the loader resolves). A missing path is skipped.
    fn collect_local(
        &self,
        path: &str,
        base: &Path,
        acc: &mut ResourceSet,
        filter: Option<&super::source::Filter>,
        metadata: &mut Metadata,
    ) {
        let resolved = resolve_local(path, base, &self.home);
        let Ok(meta) = std::fs::metadata(&resolved) else {
            return;
        };
        if meta.is_file() {
            metadata.base_dir = resolved.parent().map(Path::to_path_buf);
            acc.add(Kind::Extensions, resolved, metadata, true);
        } else if meta.is_dir() {
            metadata.base_dir = Some(resolved.clone());
            metadata.package_root = Some(resolved.clone());
            if !collect_package_resources(&resolved, acc, filter, metadata, &self.home) {
                acc.add(Kind::Extensions, resolved, metadata, true);
            }
        }
    }
}
