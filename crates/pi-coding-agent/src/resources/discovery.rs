//! Which resource files exist for a working directory, before they are read (Pi's
//! `DefaultPackageManager.resolve`):
//!
//! 1. the resources of `packages` (resolved by `crate::packages`, project entries first);
//! 2. entries of the `skills`/`prompts`/`extensions`/`themes` settings, project layer first
//!    (relative to `<cwd>/.pi`), then the agent-dir layer (relative to the agent dir): plain
//!    paths are collected, `!glob`, `+path` and `-path` entries switch them on and off;
//! 3. the standard folders, each file on unless an override entry of its layer switches it off:
//!    project (only when trusted) `.pi/<kind>`, every `.agents/skills` from the cwd up to the
//!    git root; then the user's `<agentDir>/<kind>` and `~/.agents/skills`;
//! 4. ordered by precedence (project settings, project folders, user settings, user folders,
//!    packages) and deduplicated by real path.
//!
//! Every path keeps the metadata that gives it its `sourceInfo`, switched off or not.

use super::patterns::{IgnoreRules, Overrides, apply_patterns};
use super::skills::{entry_kind, sorted_entries};
use super::source::Metadata;
use crate::settings::paths::{CONFIG_DIR_NAME, canonicalize_or_self, resolve_path_trimmed};
use pi_protocol::results::SourceScope;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A discovered file.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    pub path: PathBuf,
    pub enabled: bool,
    pub metadata: Metadata,
}

/// Discovered paths of every kind, each path once per kind (the first entry wins, as in Pi's
/// accumulator), in the order they were found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceSet {
    pub extensions: Vec<Discovered>,
    pub skills: Vec<Discovered>,
    pub prompts: Vec<Discovered>,
    pub themes: Vec<Discovered>,
}

impl ResourceSet {
    pub fn kind(&self, kind: Kind) -> &Vec<Discovered> {
        match kind {
            Kind::Extensions => &self.extensions,
            Kind::Skills => &self.skills,
            Kind::Prompts => &self.prompts,
            Kind::Themes => &self.themes,
        }
    }

    fn kind_mut(&mut self, kind: Kind) -> &mut Vec<Discovered> {
        match kind {
            Kind::Extensions => &mut self.extensions,
            Kind::Skills => &mut self.skills,
            Kind::Prompts => &mut self.prompts,
            Kind::Themes => &mut self.themes,
        }
    }

    /// Adds `path` unless this kind already has it.
    pub fn add(&mut self, kind: Kind, path: PathBuf, metadata: &Metadata, enabled: bool) {
        let list = self.kind_mut(kind);
        if path.as_os_str().is_empty() || list.iter().any(|d| d.path == path) {
            return;
        }
        list.push(Discovered {
            path,
            enabled,
            metadata: metadata.clone(),
        });
    }
}

/// What discovery looks at.
pub struct DiscoveryInput<'a> {
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    pub home: &'a Path,
    pub global: &'a Map<String, Value>,
    /// The project layer (empty when the project is not trusted).
    pub project: &'a Map<String, Value>,
    pub project_trusted: bool,
    /// The resources of the `packages` settings, already resolved (and installed).
    pub packages: &'a ResourceSet,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Extensions,
    Skills,
    Prompts,
    Themes,
}

impl Kind {
    /// Pi's order of resource types.
    pub const ALL: [Kind; 4] = [Kind::Extensions, Kind::Skills, Kind::Prompts, Kind::Themes];

    /// The settings key (and conventional folder name) of the kind.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Skills => "skills",
            Kind::Prompts => "prompts",
            Kind::Extensions => "extensions",
            Kind::Themes => "themes",
        }
    }
}

fn list(layer: &Map<String, Value>, key: &str) -> Vec<String> {
    match layer.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

pub fn is_pattern(s: &str) -> bool {
    s.starts_with(['!', '+', '-']) || s.contains('*') || s.contains('?')
}

/// `builtin:<name>` entries name Pi's built-in extensions, not files.
fn is_builtin(s: &str) -> bool {
    s.starts_with("builtin:")
}

/// The discovered files of one kind, in precedence order.
pub fn discover(input: &DiscoveryInput<'_>, kind: Kind) -> Vec<Discovered> {
    let project_base = input.cwd.join(CONFIG_DIR_NAME);
    let global_base = input.agent_dir.to_path_buf();
    let project_entries = list(input.project, kind.key());
    let global_entries = list(input.global, kind.key());
    // Packages were resolved first in Pi's accumulator, so a path they share with a settings
    // entry keeps the package's metadata.
    let mut acc: Vec<Discovered> = input.packages.kind(kind).clone();
    let add = |acc: &mut Vec<Discovered>, path: PathBuf, metadata: &Metadata, enabled: bool| {
        acc.push(Discovered {
            path,
            enabled,
            metadata: metadata.clone(),
        });
    };

    for (entries, scope, base) in [
        (&project_entries, SourceScope::Project, &project_base),
        (&global_entries, SourceScope::User, &global_base),
    ] {
        if entries.is_empty() {
            continue;
        }
        let meta = Metadata::new("local", scope, None);
        let (patterns, plain): (Vec<String>, Vec<String>) = entries
            .iter()
            .filter(|e| !is_builtin(e))
            .cloned()
            .partition(|e| is_pattern(e));
        let files = collect_from_paths(
            plain
                .iter()
                .map(|p| resolve_path_trimmed(p, base, input.home)),
            kind,
        );
        let on = apply_patterns(&files, &patterns, base, input.home);
        for (f, enabled) in files.into_iter().zip(on) {
            add(&mut acc, f, &meta, enabled);
        }
    }

    let project_overrides = Overrides::new(&project_entries);
    let user_overrides = Overrides::new(&global_entries);
    let add_auto = |acc: &mut Vec<Discovered>,
                    paths: Vec<PathBuf>,
                    meta: &Metadata,
                    overrides: &Overrides,
                    base: &Path| {
        for p in paths {
            let enabled = overrides.enabled(&p.to_string_lossy(), base, input.home);
            add(acc, p, meta, enabled);
        }
    };
    let user_agents_skills = input.home.join(".agents").join("skills");
    if input.project_trusted {
        let meta = Metadata::new("auto", SourceScope::Project, Some(&project_base));
        let dir = project_base.join(kind.key());
        match kind {
            Kind::Skills => {
                let skills = collect_skill_entries(&dir, SkillMode::Pi);
                add_auto(&mut acc, skills, &meta, &project_overrides, &project_base);
                for dir in ancestor_agents_skill_dirs(input.cwd) {
                    if dir == user_agents_skills {
                        continue;
                    }
                    let agents_base = dir.parent().unwrap_or(&dir).to_path_buf();
                    let meta = Metadata::new("auto", SourceScope::Project, Some(&agents_base));
                    let skills = collect_skill_entries(&dir, SkillMode::Agents);
                    add_auto(&mut acc, skills, &meta, &project_overrides, &agents_base);
                }
            }
            Kind::Prompts => {
                let prompts = collect_top_level(&dir, ".md");
                add_auto(&mut acc, prompts, &meta, &project_overrides, &project_base);
            }
            Kind::Themes => {
                let themes = collect_top_level(&dir, ".json");
                add_auto(&mut acc, themes, &meta, &project_overrides, &project_base);
            }
            Kind::Extensions => {
                let found = collect_auto_extension_entries(&dir);
                add_auto(&mut acc, found, &meta, &project_overrides, &project_base);
            }
        }
    }
    let meta = Metadata::new("auto", SourceScope::User, Some(&global_base));
    let dir = global_base.join(kind.key());
    match kind {
        Kind::Skills => {
            let skills = collect_skill_entries(&dir, SkillMode::Pi);
            add_auto(&mut acc, skills, &meta, &user_overrides, &global_base);
            let agents_base = input.home.join(".agents");
            let meta = Metadata::new("auto", SourceScope::User, Some(&agents_base));
            let skills = collect_skill_entries(&user_agents_skills, SkillMode::Agents);
            add_auto(&mut acc, skills, &meta, &user_overrides, &agents_base);
        }
        Kind::Prompts => {
            let prompts = collect_top_level(&dir, ".md");
            add_auto(&mut acc, prompts, &meta, &user_overrides, &global_base);
        }
        Kind::Themes => {
            let themes = collect_top_level(&dir, ".json");
            add_auto(&mut acc, themes, &meta, &user_overrides, &global_base);
        }
        Kind::Extensions => {
            let found = collect_auto_extension_entries(&dir);
            add_auto(&mut acc, found, &meta, &user_overrides, &global_base);
        }
    }

    // A path listed twice keeps its first entry (metadata and switch).
    let mut listed = std::collections::HashSet::new();
    acc.retain(|d| listed.insert(d.path.clone()));
    order_and_dedupe(acc)
}

/// Every kind at once.
pub fn discover_all(input: &DiscoveryInput<'_>) -> ResourceSet {
    ResourceSet {
        extensions: discover(input, Kind::Extensions),
        skills: discover(input, Kind::Skills),
        prompts: discover(input, Kind::Prompts),
        themes: discover(input, Kind::Themes),
    }
}

/// Pi's `toResolvedPaths`: a stable sort by precedence rank, then each real path once.
pub fn order_and_dedupe(mut found: Vec<Discovered>) -> Vec<Discovered> {
    found.sort_by_key(|d| d.metadata.rank());
    let mut seen = std::collections::HashSet::new();
    found.retain(|d| seen.insert(canonicalize_or_self(&d.path)));
    found
}

/// Files of settings entries: a file as is, a folder searched like its kind's standard folder
/// (recursively for prompts and themes).
pub fn collect_from_paths(paths: impl IntoIterator<Item = PathBuf>, kind: Kind) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for p in paths {
        let (is_dir, is_file) = entry_kind(&p);
        if is_file {
            files.push(p);
        } else if is_dir {
            files.extend(collect_resource_files(&p, kind));
        }
    }
    files
}

/// The resources of one kind in a folder (Pi's `collectResourceFiles`): skill folders,
/// extension entries, or every `.md`/`.json` file below it.
pub fn collect_resource_files(dir: &Path, kind: Kind) -> Vec<PathBuf> {
    match kind {
        Kind::Skills => collect_skill_entries(dir, SkillMode::Pi),
        Kind::Extensions => collect_auto_extension_entries(dir),
        Kind::Prompts => collect_files(dir, ".md"),
        Kind::Themes => collect_files(dir, ".json"),
    }
}

/// Every file ending in `suffix` below `dir` (Pi's `collectFiles`): dot entries and
/// `node_modules` skipped, ignore files honoured, symlinks followed.
pub fn collect_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if dir.exists() {
        let mut rules = IgnoreRules::new(dir);
        walk_files(dir, suffix, &mut rules, &mut out);
    }
    out
}

fn walk_files(dir: &Path, suffix: &str, rules: &mut IgnoreRules, out: &mut Vec<PathBuf>) {
    rules.add_dir(dir);
    for (name, path) in sorted_entries(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let (is_dir, is_file) = entry_kind(&path);
        if rules.ignores(&path, is_dir) {
            continue;
        }
        if is_dir {
            walk_files(&path, suffix, rules, out);
        } else if is_file && name.ends_with(suffix) {
            out.push(path);
        }
    }
}

/// `pi`: top-level `.md` files count (Pi's skills folders); `agents`: only `.md` files in
/// subfolders (the Agent Skills `.agents/skills` layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillMode {
    Pi,
    Agents,
}

pub fn collect_skill_entries(root: &Path, mode: SkillMode) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if root.exists() {
        let mut rules = IgnoreRules::new(root);
        skill_entries(root, root, mode, &mut rules, &mut out);
    }
    out
}

fn skill_entries(
    dir: &Path,
    root: &Path,
    mode: SkillMode,
    rules: &mut IgnoreRules,
    out: &mut Vec<PathBuf>,
) {
    rules.add_dir(dir);
    let entries = sorted_entries(dir);
    if let Some((_, path)) = entries.iter().find(|(n, _)| n == "SKILL.md")
        && entry_kind(path).1
        && !rules.ignores(path, false)
    {
        out.push(path.clone());
        return;
    }
    let at_root = dir == root;
    for (name, path) in &entries {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let (is_dir, is_file) = entry_kind(path);
        let wanted_md = match mode {
            SkillMode::Pi => at_root,
            SkillMode::Agents => !at_root,
        };
        if is_file && name.ends_with(".md") && !rules.ignores(path, false) && wanted_md {
            out.push(path.clone());
            continue;
        }
        if !is_dir || rules.ignores(path, true) {
            continue;
        }
        skill_entries(path, root, mode, rules, out);
    }
}

/// Top-level files ending in `suffix` of a standard prompts or themes folder (not recursive).
fn collect_top_level(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    for (name, path) in sorted_entries(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if rules.ignores(&path, false) {
            continue;
        }
        if entry_kind(&path).1 && name.ends_with(suffix) {
            out.push(path);
        }
    }
    out
}

/// The entry files a folder declares: its `package.json` `pi.extensions` entries that exist,
/// else `index.ts`, else `index.js` (Pi's `resolveExtensionEntries`).
pub fn declared_extension_entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let manifest = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|text| pi_js::parse::parse_js_json(&text).ok());
    if let Some(list) = manifest
        .as_ref()
        .and_then(|m| m.get("pi"))
        .and_then(|pi| pi.get("extensions"))
        .and_then(Value::as_array)
    {
        let entries: Vec<PathBuf> = list
            .iter()
            .filter_map(Value::as_str)
            .map(|e| crate::settings::paths::resolve_path(e, dir, dir))
            .filter(|p| p.exists())
            .collect();
        if !entries.is_empty() {
            return Some(entries);
        }
    }
    ["index.ts", "index.js"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.exists())
        .map(|p| vec![p])
}

/// One folder's extensions (Pi's `collectAutoExtensionEntries`): what the folder itself
/// declares, else its `.ts`/`.js` files and the declared entries of its subfolders, one level
/// deep, in name order, honouring ignore files.
pub fn collect_auto_extension_entries(dir: &Path) -> Vec<PathBuf> {
    if !dir.exists() {
        return Vec::new();
    }
    if let Some(entries) = declared_extension_entries(dir) {
        return entries;
    }
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    let mut out = Vec::new();
    for (name, path) in sorted_entries(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let (is_dir, is_file) = entry_kind(&path);
        if rules.ignores(&path, is_dir) {
            continue;
        }
        if is_file && (name.ends_with(".ts") || name.ends_with(".js")) {
            out.push(path);
        } else if is_dir && let Some(entries) = declared_extension_entries(&path) {
            out.extend(entries);
        }
    }
    out
}

/// `.agents/skills` in the cwd and each ancestor, stopping at the git root (the first folder
/// with a `.git`), else at the filesystem root.
pub fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.join(".agents").join("skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;
    use serde_json::json;

    #[test]
    fn agents_skill_dirs_stop_at_the_git_root() {
        let tmp = TempDir::new();
        tmp.mkdir("a/repo/.git");
        tmp.mkdir("a/repo/sub");
        let dirs = ancestor_agents_skill_dirs(&tmp.path().join("a/repo/sub"));
        assert_eq!(
            dirs,
            [
                tmp.path().join("a/repo/sub/.agents/skills"),
                tmp.path().join("a/repo/.agents/skills")
            ]
        );
    }

    #[test]
    fn settings_entries_come_before_standard_folders() {
        let tmp = TempDir::new();
        tmp.write("agent/prompts/auto.md", "x");
        tmp.write("extra/one.md", "x");
        tmp.write("extra/deep/two.md", "x");
        tmp.write("extra/deep/.gitignore", "three.md\n");
        tmp.write("extra/deep/three.md", "x");
        let global = json!({"prompts": ["../extra", "!**/one.md"]});
        let global = global.as_object().unwrap();
        let empty = Map::new();
        let input = DiscoveryInput {
            cwd: &tmp.path().join("work"),
            agent_dir: &tmp.path().join("agent"),
            home: tmp.path(),
            global,
            project: &empty,
            project_trusted: false,
            packages: &ResourceSet::default(),
        };
        let discovered = discover(&input, Kind::Prompts);
        let found: Vec<(String, bool, &str)> = discovered
            .iter()
            .map(|d| {
                let rel = d
                    .path
                    .strip_prefix(tmp.path())
                    .unwrap()
                    .display()
                    .to_string();
                (rel, d.enabled, d.metadata.source.as_str())
            })
            .collect();
        assert_eq!(
            found,
            [
                ("extra/deep/two.md".to_string(), true, "local"),
                ("extra/one.md".to_string(), false, "local"),
                ("agent/prompts/auto.md".to_string(), true, "auto"),
            ]
        );
    }
}
