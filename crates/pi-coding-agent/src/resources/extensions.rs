//! Which extension files load, in Pi's order: `-e` sources as given (files, folders treated as
//! packages, `npm:`/`git:` packages installed into a temporary cache), then (unless `-ne`) the
//! `extensions` settings entries, the standard folders and the `packages` of settings — project
//! settings, project `.pi/extensions/` (only when trusted), user settings,
//! `<agentDir>/extensions/`, packages — each path once (first occurrence wins, compared by real
//! path). Built-in extensions (`builtin:<name>`) are handled elsewhere.

use super::discovery::{Discovered, ResourceSet};
use super::source::Metadata;
use crate::packages::source::is_local_path;
use crate::settings::paths::{canonicalize_or_self, resolve_path};
use pi_protocol::results::{SourceInfo, SourceScope};
use std::path::{Path, PathBuf};

/// An extension to load: the path handed to the loader and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionSource {
    pub path: PathBuf,
    pub source_info: SourceInfo,
    /// The package the extension belongs to (checked for host-provided dependencies).
    pub package_root: Option<PathBuf>,
}

/// What decides the list.
pub struct ExtensionOptions<'a> {
    /// `-e` values, in order, relative to `cli_base` (the process's cwd).
    pub cli: &'a [String],
    pub cli_base: &'a Path,
    /// The resources of the `-e` sources (see `crate::packages`).
    pub cli_packages: &'a ResourceSet,
    /// `-ne`: only `-e` sources load.
    pub no_extensions: bool,
    /// The extensions discovery found (settings entries, folders, packages), in order.
    pub found: &'a [Discovered],
    pub home: &'a Path,
}

/// The sources in load order, and the load errors of `-e` paths that do not exist
/// (`(path, "Extension path does not exist: <path>")`).
pub fn extension_sources(
    opts: &ExtensionOptions<'_>,
) -> (Vec<ExtensionSource>, Vec<(String, String)>) {
    let found = opts.found;
    // Pi keys source information by path; the settings' resolution was recorded first.
    let cli_meta = Metadata::new("cli", SourceScope::Temporary, None);
    let known = |path: &Path| found.iter().find(|d| d.path == path).map(|d| &d.metadata);
    let mut sources: Vec<ExtensionSource> = opts
        .cli_packages
        .extensions
        .iter()
        .filter(|d| d.enabled)
        .map(|d| {
            // As in Pi, an `-e` package's extensions carry the `cli` record, which names no
            // package root, so its manifest is not checked for host-provided dependencies.
            let meta = known(&d.path).unwrap_or(&cli_meta);
            ExtensionSource {
                path: d.path.clone(),
                source_info: meta.source_info(&d.path),
                package_root: meta.package_root.clone(),
            }
        })
        .collect();
    if !opts.no_extensions {
        sources.extend(found.iter().filter(|d| d.enabled).map(settings_source));
    }
    let mut seen = std::collections::HashSet::new();
    sources.retain(|s| seen.insert(canonicalize_or_self(&s.path)));
    (
        sources,
        missing_cli_paths(opts.cli, opts.cli_base, opts.home),
    )
}

fn settings_source(d: &Discovered) -> ExtensionSource {
    ExtensionSource {
        path: d.path.clone(),
        source_info: d.metadata.source_info(&d.path),
        package_root: d.metadata.package_root.clone(),
    }
}

/// `-e` values as the package manager takes them: local paths made absolute.
pub fn resolve_cli_values(cli: &[String], base: &Path, home: &Path) -> Vec<String> {
    cli.iter()
        .map(|v| {
            if is_local_path(v) {
                resolve_path(v, base, home).to_string_lossy().into_owned()
            } else {
                v.clone()
            }
        })
        .collect()
}

/// `Extension path does not exist: <path>` for each local `-e` path that is missing.
fn missing_cli_paths(cli: &[String], base: &Path, home: &Path) -> Vec<(String, String)> {
    cli.iter()
        .filter(|v| is_local_path(v))
        .map(|v| resolve_path(pi_js::trim(v), base, home))
        .filter(|p| !p.exists())
        .map(|p| {
            let shown = p.display().to_string();
            (
                shown.clone(),
                format!("Extension path does not exist: {shown}"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;
    use serde_json::{Map, Value, json};

    fn layer(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn names(sources: &[ExtensionSource], root: &Path) -> Vec<String> {
        sources
            .iter()
            .map(|s| {
                let rel = s.path.strip_prefix(root).unwrap_or(&s.path);
                format!("{} {}", rel.display(), s.source_info.source)
            })
            .collect()
    }

    #[test]
    fn cli_then_project_then_user_each_once_in_name_order() {
        let t = TempDir::new();
        let cwd = t.mkdir("work");
        let agent = t.mkdir("agent");
        t.write("work/one.ts", "");
        t.write("work/dirext/index.ts", "");
        t.write("work/.pi/extensions/b.ts", "");
        t.write("work/.pi/extensions/a.js", "");
        t.write("work/.pi/extensions/notes.md", "");
        t.write("work/.pi/extensions/pkg/index.ts", "");
        t.write("agent/extensions/z.ts", "");
        t.write("agent/extensions/.hidden.ts", "");
        t.write("agent/listed.ts", "");
        let global = layer(json!({"extensions": ["listed.ts", "builtin:mcp", "-builtin:mcp"]}));
        let project = layer(json!({}));
        let cli = vec![
            "./one.ts".to_string(),
            "dirext".to_string(),
            "builtin:mcp".to_string(),
            "./one.ts".to_string(),
            "missing.ts".to_string(),
        ];
        let mut pm = crate::packages::PackageManager::with_layers(
            &cwd,
            &agent,
            t.path(),
            (&global, &project, true),
            crate::packages::ChildOutput::Stderr,
        );
        let cli_packages = pm
            .resolve_cli_sources(&resolve_cli_values(&cli, &cwd, t.path()))
            .resources;
        let none = ResourceSet::default();
        let found = |trusted: bool| {
            crate::resources::discovery::discover(
                &crate::resources::discovery::DiscoveryInput {
                    cwd: &cwd,
                    agent_dir: &agent,
                    home: t.path(),
                    global: &global,
                    project: &project,
                    project_trusted: trusted,
                    packages: &none,
                },
                crate::resources::discovery::Kind::Extensions,
            )
        };
        let (trusted_found, untrusted_found) = (found(true), found(false));
        let opts = |trusted: bool, no_extensions: bool| ExtensionOptions {
            cli: &cli,
            cli_base: &cwd,
            cli_packages: &cli_packages,
            no_extensions,
            found: if trusted {
                &trusted_found
            } else {
                &untrusted_found
            },
            home: t.path(),
        };
        let (sources, errors) = extension_sources(&opts(true, false));
        assert_eq!(
            names(&sources, t.path()),
            [
                "work/one.ts cli",
                "work/dirext cli",
                "work/.pi/extensions/a.js auto",
                "work/.pi/extensions/b.ts auto",
                "work/.pi/extensions/pkg/index.ts auto",
                "agent/listed.ts local",
                "agent/extensions/z.ts auto",
            ]
        );
        let missing = cwd.join("missing.ts").display().to_string();
        assert_eq!(
            errors,
            [(
                missing.clone(),
                format!("Extension path does not exist: {missing}")
            )]
        );
        let (untrusted, _) = extension_sources(&opts(false, false));
        assert!(
            !names(&untrusted, t.path())
                .iter()
                .any(|n| n.contains(".pi/"))
        );
        let (only_cli, _) = extension_sources(&opts(true, true));
        assert_eq!(
            names(&only_cli, t.path()),
            ["work/one.ts cli", "work/dirext cli"]
        );
    }

    #[test]
    fn a_folder_with_a_manifest_loads_its_entries() {
        let t = TempDir::new();
        t.write(
            "pkg/package.json",
            r#"{"name":"p","pi":{"extensions":["./src/a.ts","./missing.ts"]}}"#,
        );
        t.write("pkg/src/a.ts", "");
        let empty = Map::new();
        let mut pm = crate::packages::PackageManager::with_layers(
            t.path(),
            t.path(),
            t.path(),
            (&empty, &empty, true),
            crate::packages::ChildOutput::Stderr,
        );
        let pkg = t.path().join("pkg").display().to_string();
        let found = pm.resolve_cli_sources(&[pkg]).resources;
        let paths: Vec<&Path> = found.extensions.iter().map(|d| d.path.as_path()).collect();
        assert_eq!(paths, [t.path().join("pkg/src/a.ts")]);
    }
}
