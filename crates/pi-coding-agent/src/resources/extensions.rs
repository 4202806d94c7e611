//! Which extension files load, in Pi's order: `-e` sources as given, then (unless `-ne`) the
//! `extensions` settings entries and the standard folders — project settings, project
//! `.pi/extensions/` (only when trusted), user settings, `<agentDir>/extensions/` — each path
//! once (first occurrence wins, compared by real path). Built-in extensions (`builtin:<name>`)
//! and package sources (`npm:`, `git:`) are not files and are handled elsewhere.

use super::discovery::{
    DiscoveryInput, Kind, collect_auto_extension_entries, declared_extension_entries, discover,
};
use super::source::Metadata;
use crate::settings::paths::{canonicalize_or_self, resolve_path};
use pi_protocol::results::{SourceInfo, SourceScope};
use std::path::{Path, PathBuf};

/// An extension to load: the path handed to the loader and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionSource {
    pub path: PathBuf,
    pub source_info: SourceInfo,
}

/// What decides the list.
pub struct ExtensionOptions<'a> {
    /// `-e` values, in order, relative to `cli_base` (the process's cwd).
    pub cli: &'a [String],
    pub cli_base: &'a Path,
    /// `-ne`: only `-e` sources load.
    pub no_extensions: bool,
    pub discovery: DiscoveryInput<'a>,
}

/// `-e` values that are not local paths.
fn is_non_file_source(value: &str) -> bool {
    value.starts_with("builtin:") || value.starts_with("npm:") || value.starts_with("git:")
}

/// The sources in load order, and the load errors of `-e` paths that do not exist
/// (`(path, "Extension path does not exist: <path>")`).
pub fn extension_sources(
    opts: &ExtensionOptions<'_>,
) -> (Vec<ExtensionSource>, Vec<(String, String)>) {
    let home = opts.discovery.home;
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    let cli_meta = Metadata::new("cli", SourceScope::Temporary, None);
    for value in opts.cli.iter().filter(|v| !is_non_file_source(v)) {
        let path = resolve_path(value, opts.cli_base, home);
        if !path.exists() {
            let shown = path.display().to_string();
            errors.push((
                shown.clone(),
                format!("Extension path does not exist: {shown}"),
            ));
            continue;
        }
        for entry in cli_entries(&path) {
            let source_info = cli_meta.source_info(&entry);
            sources.push(ExtensionSource {
                path: entry,
                source_info,
            });
        }
    }
    if !opts.no_extensions {
        for found in discover(&opts.discovery, Kind::Extensions) {
            if found.enabled {
                let source_info = found.metadata.source_info(&found.path);
                sources.push(ExtensionSource {
                    path: found.path,
                    source_info,
                });
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    sources.retain(|s| seen.insert(canonicalize_or_self(&s.path)));
    (sources, errors)
}

/// What `-e <path>` loads: a file as is; a folder's declared entries (`package.json`
/// `pi.extensions`), else its `extensions/` folder, else the folder itself (the loader then
/// resolves its `index.ts`/`index.js`).
fn cli_entries(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    if let Some(entries) = declared_extension_entries(path)
        && !entries.iter().all(|e| is_index_of(e, path))
    {
        return entries;
    }
    let sub = path.join("extensions");
    if sub.is_dir() {
        let entries = collect_auto_extension_entries(&sub);
        if !entries.is_empty() {
            return entries;
        }
    }
    vec![path.to_path_buf()]
}

fn is_index_of(entry: &Path, dir: &Path) -> bool {
    entry.parent() == Some(dir)
        && matches!(
            entry.file_name().and_then(|n| n.to_str()),
            Some("index.ts" | "index.js")
        )
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
        let opts = |trusted: bool, no_extensions: bool| ExtensionOptions {
            cli: &cli,
            cli_base: &cwd,
            no_extensions,
            discovery: DiscoveryInput {
                cwd: &cwd,
                agent_dir: &agent,
                home: t.path(),
                global: &global,
                project: &project,
                project_trusted: trusted,
            },
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
        let entries = cli_entries(&t.path().join("pkg"));
        assert_eq!(entries, [t.path().join("pkg/src/a.ts")]);
    }
}
