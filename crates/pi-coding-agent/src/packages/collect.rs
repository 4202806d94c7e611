//! The resources one package contributes (Pi's `collectPackageResources`).
//!
//! A package declares them in the `pi` object of its `package.json` (`extensions`, `skills`,
//! `prompts`, `themes`: paths or globs relative to the package root, with `!glob`, `+path` and
//! `-path` entries), or keeps them in the conventional folders of those names. A settings entry
//! in object form narrows that set per kind: a missing key keeps everything, `[]` switches the
//! kind off, patterns select among what the package offers (never beyond it). A project entry
//! with `autoload: false` only switches single resources of the user's entry on or off.

use super::source::Filter;
use crate::resources::discovery::{Kind, ResourceSet, collect_from_paths, collect_resource_files};
use crate::resources::patterns::{apply_patterns, glob_matches, matches_any, matches_any_exact};
use crate::resources::skills::{entry_kind, sorted_entries};
use crate::resources::source::Metadata;
use crate::settings::paths::{canonicalize_or_self, is_path_within, lexical_normalize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `pi` object of a `package.json` (Pi's `readPiManifest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    pub extensions: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    pub themes: Option<Vec<String>>,
    pub changelog_path: Option<String>,
}

impl Manifest {
    pub fn get(&self, kind: Kind) -> Option<&Vec<String>> {
        match kind {
            Kind::Extensions => self.extensions.as_ref(),
            Kind::Skills => self.skills.as_ref(),
            Kind::Prompts => self.prompts.as_ref(),
            Kind::Themes => self.themes.as_ref(),
        }
    }

    /// Only a manifest that lists resources replaces the conventional folders; one holding
    /// metadata only (a changelog path, gallery media) does not.
    fn lists_resources(&self) -> bool {
        Kind::ALL.iter().any(|k| self.get(*k).is_some())
    }
}

/// Reads the manifest; `None` when the file is missing, broken or has no `pi` object. A list
/// that is not all strings counts as absent.
pub fn read_manifest(package_json: &Path) -> Option<Manifest> {
    let text = std::fs::read_to_string(package_json).ok()?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let pkg = pi_js::parse::parse_js_json(text).ok()?;
    let pi = pkg.as_object()?.get("pi")?.as_object()?;
    let list = |key: &str| -> Option<Vec<String>> {
        let items = pi.get(key)?.as_array()?;
        items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
    };
    Some(Manifest {
        extensions: list("extensions"),
        skills: list("skills"),
        prompts: list("prompts"),
        themes: list("themes"),
        changelog_path: pi
            .get("changelogPath")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The package's changelog: `pi.changelogPath` (empty switches it off) or `CHANGELOG.md`, if
/// it is a file inside the package.
fn changelog_path(root: &Path, manifest: Option<&Manifest>) -> Option<PathBuf> {
    let configured = manifest
        .and_then(|m| m.changelog_path.clone())
        .unwrap_or_else(|| "CHANGELOG.md".into());
    if configured.is_empty() {
        return None;
    }
    let path = lexical_normalize(&root.join(&configured));
    if !path.exists() {
        return None;
    }
    let (root_real, path_real) = (canonicalize_or_self(root), canonicalize_or_self(&path));
    let inside = path_real != root_real && is_path_within(&root_real, &path_real);
    (inside && entry_kind(&path).1).then_some(path)
}

/// Adds the resources of the package at `root` to `acc` with `metadata` (which gets the
/// changelog path). Returns whether the package has any resources at all (declared or in
/// conventional folders); a filter always counts as having them.
pub fn collect_package_resources(
    root: &Path,
    acc: &mut ResourceSet,
    filter: Option<&Filter>,
    metadata: &mut Metadata,
    home: &Path,
) -> bool {
    let manifest = read_manifest(&root.join("package.json"));
    metadata.changelog_path = changelog_path(root, manifest.as_ref());
    if let Some(filter) = filter {
        for kind in Kind::ALL {
            let patterns = filter.get(kind);
            if filter.autoload_off {
                apply_delta_filter(
                    root,
                    manifest.as_ref(),
                    patterns.map(Vec::as_slice).unwrap_or(&[]),
                    kind,
                    acc,
                    metadata,
                    home,
                );
            } else if let Some(patterns) = patterns {
                apply_filter(root, manifest.as_ref(), patterns, kind, acc, metadata, home);
            } else {
                collect_default(root, manifest.as_ref(), kind, acc, metadata, home);
            }
        }
        return true;
    }
    if let Some(m) = manifest.as_ref().filter(|m| m.lists_resources()) {
        for kind in Kind::ALL {
            if let Some(entries) = m.get(kind) {
                add_manifest_entries(entries, root, kind, acc, metadata, home);
            }
        }
        return true;
    }
    let mut any = false;
    for kind in Kind::ALL {
        let dir = root.join(kind.key());
        if dir.exists() {
            for f in collect_resource_files(&dir, kind) {
                acc.add(kind, f, metadata, true);
            }
            any = true;
        }
    }
    any
}

fn collect_default(
    root: &Path,
    manifest: Option<&Manifest>,
    kind: Kind,
    acc: &mut ResourceSet,
    metadata: &Metadata,
    home: &Path,
) {
    if let Some(entries) = manifest.and_then(|m| m.get(kind)) {
        add_manifest_entries(entries, root, kind, acc, metadata, home);
        return;
    }
    let dir = root.join(kind.key());
    if dir.exists() {
        for f in collect_resource_files(&dir, kind) {
            acc.add(kind, f, metadata, true);
        }
    }
}

/// Settings patterns over what the package offers: `[]` lists everything switched off.
fn apply_filter(
    root: &Path,
    manifest: Option<&Manifest>,
    patterns: &[String],
    kind: Kind,
    acc: &mut ResourceSet,
    metadata: &Metadata,
    home: &Path,
) {
    let files = offered_files(root, manifest, kind, home);
    if patterns.is_empty() {
        for f in files {
            acc.add(kind, f, metadata, false);
        }
        return;
    }
    let on = apply_patterns(&files, patterns, root, home);
    for (f, enabled) in files.into_iter().zip(on) {
        acc.add(kind, f, metadata, enabled);
    }
}

/// `autoload: false`: only the resources a pattern names are listed, on or off as the last
/// matching pattern says (`+`/plain on, `-`/`!` off).
fn apply_delta_filter(
    root: &Path,
    manifest: Option<&Manifest>,
    patterns: &[String],
    kind: Kind,
    acc: &mut ResourceSet,
    metadata: &Metadata,
    home: &Path,
) {
    if patterns.is_empty() {
        return;
    }
    let files = offered_files(root, manifest, kind, home);
    // Later patterns override earlier ones per file, but files keep the order of their first
    // match (Pi fills a Map pattern by pattern).
    let mut decided: Vec<(PathBuf, bool)> = Vec::new();
    for pattern in patterns {
        let first = pattern.chars().next();
        let target = if is_override(pattern) {
            vec![pattern[1..].to_string()]
        } else {
            vec![pattern.clone()]
        };
        let enabled = !matches!(first, Some('-') | Some('!'));
        let exact = matches!(first, Some('+') | Some('-'));
        for f in &files {
            let path = f.to_string_lossy();
            let hit = if exact {
                matches_any_exact(&path, &target, root, home)
            } else {
                matches_any(&path, &target, root, home)
            };
            if hit {
                match decided.iter_mut().find(|(p, _)| p == f) {
                    Some(slot) => slot.1 = enabled,
                    None => decided.push((f.clone(), enabled)),
                }
            }
        }
    }
    for (f, enabled) in decided {
        acc.add(kind, f, metadata, enabled);
    }
}

/// Everything of `kind` the package itself offers (Pi's `collectManifestFiles`): its manifest
/// entries with their own patterns applied, else the conventional folder.
fn offered_files(
    root: &Path,
    manifest: Option<&Manifest>,
    kind: Kind,
    home: &Path,
) -> Vec<PathBuf> {
    if let Some(entries) = manifest.and_then(|m| m.get(kind)).filter(|e| !e.is_empty()) {
        let all = files_of_manifest_entries(entries, root, kind);
        let patterns: Vec<String> = entries.iter().filter(|e| is_override(e)).cloned().collect();
        if patterns.is_empty() {
            return all;
        }
        let on = apply_patterns(&all, &patterns, root, home);
        return on_only(all, on);
    }
    let dir = root.join(kind.key());
    if !dir.exists() {
        return Vec::new();
    }
    collect_resource_files(&dir, kind)
}

fn add_manifest_entries(
    entries: &[String],
    root: &Path,
    kind: Kind,
    acc: &mut ResourceSet,
    metadata: &Metadata,
    home: &Path,
) {
    let all = files_of_manifest_entries(entries, root, kind);
    let patterns: Vec<String> = entries.iter().filter(|e| is_override(e)).cloned().collect();
    let on = apply_patterns(&all, &patterns, root, home);
    for f in on_only(all, on) {
        acc.add(kind, f, metadata, true);
    }
}

fn on_only(files: Vec<PathBuf>, on: Vec<bool>) -> Vec<PathBuf> {
    files
        .into_iter()
        .zip(on)
        .filter_map(|(f, on)| on.then_some(f))
        .collect()
}

fn is_override(s: &str) -> bool {
    s.starts_with(['!', '+', '-'])
}

/// The files manifest entries name: exact paths as given (dot folders and symlinks allowed),
/// globs expanded over visible paths; folders searched like conventional ones.
fn files_of_manifest_entries(entries: &[String], root: &Path, kind: Kind) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for entry in entries.iter().filter(|e| !is_override(e)) {
        if entry.contains('*') || entry.contains('?') {
            paths.extend(expand_glob(entry, root));
        } else {
            paths.push(lexical_normalize(&root.join(entry)));
        }
    }
    collect_from_paths(paths, kind)
}

/// Node's `fs.globSync(pattern, {cwd: root})`, keeping only paths with no dot segment below the
/// root, sorted. `*` and `?` stay in one segment, `**` spans any number.
pub fn expand_glob(pattern: &str, root: &Path) -> Vec<PathBuf> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    // Walk from the folder the literal leading segments name.
    let literal = segments
        .iter()
        .take_while(|s| !s.contains(['*', '?', '[', '{']))
        .count()
        .min(segments.len().saturating_sub(1));
    let mut base = root.to_path_buf();
    for s in &segments[..literal] {
        base = lexical_normalize(&base.join(s));
    }
    let rest = segments[literal..].join("/");
    let deep = rest.contains("**");
    let depth = segments.len() - literal;
    let mut out = Vec::new();
    walk_glob(&base, "", &rest, deep, depth, &mut out);
    let mut found: Vec<PathBuf> = out
        .into_iter()
        .filter(|p| {
            let rel = crate::settings::paths::relative(root, p);
            rel.split('/').all(|s| s == ".." || !s.starts_with('.'))
        })
        .collect();
    found.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    found.dedup();
    found
}

fn walk_glob(
    dir: &Path,
    rel: &str,
    pattern: &str,
    deep: bool,
    depth: usize,
    out: &mut Vec<PathBuf>,
) {
    if !deep && depth == 0 {
        return;
    }
    for (name, path) in sorted_entries(dir) {
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if glob_matches(pattern, &child_rel) {
            out.push(path.clone());
        }
        // Node's glob walks into symlinked folders only for explicit segments; a plain
        // directory is enough here.
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir && !name.starts_with('.') {
            walk_glob(
                &path,
                &child_rel,
                pattern,
                deep,
                depth.saturating_sub(1),
                out,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::discovery::Discovered;
    use pi_protocol::results::SourceScope;
    use pi_test_support::TempDir;

    fn names(list: &[Discovered], root: &Path) -> Vec<String> {
        list.iter()
            .map(|d| {
                let rel = d.path.strip_prefix(root).unwrap_or(&d.path).display();
                format!("{rel}{}", if d.enabled { "" } else { " (off)" })
            })
            .collect()
    }

    fn package(t: &TempDir) -> PathBuf {
        t.write("p/extensions/a.ts", "");
        t.write("p/extensions/b.ts", "");
        t.write("p/extensions/sub/index.ts", "");
        t.write("p/skills/one/SKILL.md", "");
        t.write("p/skills/two/SKILL.md", "");
        t.write("p/prompts/x.md", "");
        t.write("p/prompts/deep/y.md", "");
        t.write("p/themes/t.json", "{}");
        t.path().join("p")
    }

    #[test]
    fn conventional_folders() {
        let t = TempDir::new();
        let root = package(&t);
        let mut acc = ResourceSet::default();
        let mut meta = Metadata::package("npm:p", SourceScope::User);
        assert!(collect_package_resources(
            &root,
            &mut acc,
            None,
            &mut meta,
            t.path()
        ));
        assert_eq!(
            names(&acc.extensions, &root),
            [
                "extensions/a.ts",
                "extensions/b.ts",
                "extensions/sub/index.ts"
            ]
        );
        assert_eq!(
            names(&acc.skills, &root),
            ["skills/one/SKILL.md", "skills/two/SKILL.md"]
        );
        assert_eq!(
            names(&acc.prompts, &root),
            ["prompts/deep/y.md", "prompts/x.md"]
        );
        assert_eq!(names(&acc.themes, &root), ["themes/t.json"]);
        let empty = t.mkdir("empty");
        let mut acc = ResourceSet::default();
        assert!(!collect_package_resources(
            &empty,
            &mut acc,
            None,
            &mut meta,
            t.path()
        ));
    }

    #[test]
    fn manifest_globs_and_exclusions() {
        let t = TempDir::new();
        let root = package(&t);
        t.write("p/src/main.ts", "");
        t.write("p/src/legacy.ts", "");
        t.write("p/.hidden/h.ts", "");
        t.write(
            "p/package.json",
            r#"{"name":"p","pi":{"extensions":["./src/*.ts","!**/legacy.ts"],"prompts":["prompts/x.md"]}}"#,
        );
        let mut acc = ResourceSet::default();
        let mut meta = Metadata::package("npm:p", SourceScope::User);
        assert!(collect_package_resources(
            &root,
            &mut acc,
            None,
            &mut meta,
            t.path()
        ));
        assert_eq!(names(&acc.extensions, &root), ["src/main.ts"]);
        assert_eq!(names(&acc.prompts, &root), ["prompts/x.md"]);
        assert!(acc.skills.is_empty());
    }

    #[test]
    fn settings_filters() {
        let t = TempDir::new();
        let root = package(&t);
        let filter = Filter {
            extensions: Some(vec!["extensions/*.ts".into(), "!extensions/b.ts".into()]),
            skills: Some(vec![]),
            prompts: Some(vec!["-prompts/x.md".into()]),
            ..Filter::default()
        };
        let mut acc = ResourceSet::default();
        let mut meta = Metadata::package("npm:p", SourceScope::User);
        collect_package_resources(&root, &mut acc, Some(&filter), &mut meta, t.path());
        assert_eq!(
            names(&acc.extensions, &root),
            [
                "extensions/a.ts",
                "extensions/b.ts (off)",
                "extensions/sub/index.ts (off)"
            ]
        );
        assert_eq!(
            names(&acc.skills, &root),
            ["skills/one/SKILL.md (off)", "skills/two/SKILL.md (off)"]
        );
        assert_eq!(
            names(&acc.prompts, &root),
            ["prompts/deep/y.md", "prompts/x.md (off)"]
        );
        assert_eq!(names(&acc.themes, &root), ["themes/t.json"]);

        let delta = Filter {
            skills: Some(vec!["-skills/one".into()]),
            prompts: Some(vec!["!*.md".into(), "+prompts/x.md".into()]),
            autoload_off: true,
            ..Filter::default()
        };
        let mut acc = ResourceSet::default();
        collect_package_resources(&root, &mut acc, Some(&delta), &mut meta, t.path());
        assert!(acc.extensions.is_empty());
        assert_eq!(names(&acc.skills, &root), ["skills/one/SKILL.md (off)"]);
        assert_eq!(
            names(&acc.prompts, &root),
            ["prompts/deep/y.md (off)", "prompts/x.md"]
        );
    }

    #[test]
    fn changelog_inside_the_package_only() {
        let t = TempDir::new();
        let root = package(&t);
        t.write("p/CHANGELOG.md", "## 1.0.0");
        let mut meta = Metadata::package("npm:p", SourceScope::User);
        collect_package_resources(
            &root,
            &mut ResourceSet::default(),
            None,
            &mut meta,
            t.path(),
        );
        assert_eq!(meta.changelog_path, Some(root.join("CHANGELOG.md")));
        t.write(
            "p/package.json",
            r#"{"pi":{"changelogPath":"../outside.md"}}"#,
        );
        t.write("outside.md", "x");
        collect_package_resources(
            &root,
            &mut ResourceSet::default(),
            None,
            &mut meta,
            t.path(),
        );
        assert_eq!(meta.changelog_path, None);
    }
}
