//! The resource list of `pi config` (Pi's `ConfigSelectorComponent`): every discovered and
//! packaged resource and the built-in extensions, grouped by where they come from, and what
//! switching one on or off writes to settings.
//!
//! Global mode switches the user's resources: a `+path`/`-path` entry in the agent-dir
//! `extensions`/`skills`/`prompts`/`themes` list, or in the filter of the package's entry.
//! Project mode cycles a resource through inherit, load (`+`) and unload (`-`) entries of the
//! project's settings, which override the user's for this project.

use crate::packages::source::is_local_path;
use crate::resources::discovery::{Discovered, Kind, ResourceSet};
use crate::settings::SettingsManager;
use crate::settings::paths::{CONFIG_DIR_NAME, canonicalize_or_self, relative, resolve_path};
use pi_protocol::results::{SourceOrigin, SourceScope};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteScope {
    Global,
    Project,
}

/// One resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub path: String,
    pub enabled: bool,
    pub source: String,
    pub scope: SourceScope,
    pub origin: SourceOrigin,
    pub base_dir: Option<PathBuf>,
    pub kind: Kind,
    pub display_name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub label: String,
    pub scope: SourceScope,
    pub origin: SourceOrigin,
    pub source: String,
    /// Per kind, in Pi's order of kinds.
    pub subgroups: Vec<(Kind, Vec<Item>)>,
}

pub fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Extensions => "Extensions",
        Kind::Skills => "Skills",
        Kind::Prompts => "Prompts",
        Kind::Themes => "Themes",
    }
}

/// `~/…` for paths in the home folder, with a trailing `/`.
fn format_base_dir(dir: &Path, home: &Path) -> String {
    let shown = match dir.strip_prefix(home) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => dir.display().to_string(),
    };
    if shown.ends_with('/') {
        shown
    } else {
        format!("{shown}/")
    }
}

fn group_label(item: &Item, agent_dir: &Path, home: &Path) -> String {
    let user = item.scope == SourceScope::User;
    if item.origin == SourceOrigin::Package {
        let scope = match item.scope {
            SourceScope::User => "user",
            SourceScope::Project => "project",
            SourceScope::Temporary => "temporary",
        };
        return format!("{} ({scope})", item.source);
    }
    if item.source == "builtin" {
        return if user {
            "Built-in".into()
        } else {
            "Built-in (project override)".into()
        };
    }
    if item.source == "auto" {
        return match (&item.base_dir, user) {
            (Some(d), true) => format!("User ({})", format_base_dir(d, home)),
            (Some(d), false) => format!("Project ({})", format_base_dir(d, home)),
            (None, true) => format!("User ({})", format_base_dir(agent_dir, home)),
            (None, false) => format!("Project ({CONFIG_DIR_NAME}/)"),
        };
    }
    if user {
        "User settings".into()
    } else {
        "Project settings".into()
    }
}

fn display_name(path: &str, kind: Kind, builtin: bool) -> String {
    if builtin {
        return path.trim_start_matches("builtin:").to_string();
    }
    let p = Path::new(path);
    let file = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = p
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match kind {
        Kind::Extensions if parent != "extensions" => format!("{parent}/{file}"),
        Kind::Skills if file == "SKILL.md" => parent,
        _ => file,
    }
}

/// Pi's `buildGroups`: groups by origin, scope, source and base folder; packages first, then
/// user before project, then by source; items by name.
pub fn build_groups(resolved: &ResourceSet, agent_dir: &Path, home: &Path) -> Vec<Group> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for kind in Kind::ALL {
        for d in resolved.kind(kind) {
            let item = item_of(d, kind);
            let key = format!(
                "{:?}:{:?}:{}:{}",
                item.origin,
                item.scope,
                item.source,
                item.base_dir
                    .as_ref()
                    .map(|b| b.display().to_string())
                    .unwrap_or_default()
            );
            let index = match groups.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    groups.push((
                        key,
                        Group {
                            label: group_label(&item, agent_dir, home),
                            scope: item.scope,
                            origin: item.origin,
                            source: item.source.clone(),
                            subgroups: Vec::new(),
                        },
                    ));
                    groups.len() - 1
                }
            };
            let group = &mut groups[index].1;
            match group.subgroups.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, items)) => items.push(item),
                None => group.subgroups.push((kind, vec![item])),
            }
        }
    }
    let mut groups: Vec<Group> = groups.into_iter().map(|(_, g)| g).collect();
    groups.sort_by(|a, b| {
        if a.origin != b.origin {
            return if a.origin == SourceOrigin::Package {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
        }
        if a.scope != b.scope {
            return if a.scope == SourceScope::User {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
        }
        pi_js::locale_compare(&a.source, &b.source)
    });
    for g in &mut groups {
        g.subgroups
            .sort_by_key(|(k, _)| Kind::ALL.iter().position(|x| x == k));
        for (_, items) in &mut g.subgroups {
            items.sort_by(|a, b| pi_js::locale_compare(&a.display_name, &b.display_name));
        }
    }
    groups
}

fn item_of(d: &Discovered, kind: Kind) -> Item {
    let path = d.path.to_string_lossy().into_owned();
    let builtin = d.metadata.source == "builtin";
    Item {
        display_name: display_name(&path, kind, builtin),
        path,
        enabled: d.enabled,
        source: d.metadata.source.clone(),
        scope: d.metadata.scope,
        origin: d.metadata.origin,
        base_dir: d.metadata.base_dir.clone(),
        kind,
    }
}

/// A project override of one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    Inherit,
    Load,
    Unload,
}

fn target(entry: &str) -> &str {
    if entry.starts_with(['!', '+', '-']) {
        &entry[1..]
    } else {
        entry
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Toggles against the settings, with the global view remembered for project mode.
pub struct Editor<'a> {
    pub settings: &'a mut SettingsManager,
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    /// `(kind, real path) → enabled` in the global view.
    inherited: Vec<((Kind, PathBuf), bool)>,
}

impl<'a> Editor<'a> {
    pub fn new(
        settings: &'a mut SettingsManager,
        cwd: &Path,
        agent_dir: &Path,
        home: &Path,
        global_groups: &[Group],
    ) -> Editor<'a> {
        let mut inherited = Vec::new();
        for g in global_groups {
            for (_, items) in &g.subgroups {
                for i in items {
                    inherited.push((key_of(i), i.enabled));
                }
            }
        }
        Editor {
            settings,
            cwd: cwd.to_path_buf(),
            agent_dir: agent_dir.to_path_buf(),
            home: home.to_path_buf(),
            inherited,
        }
    }

    fn layer(&self, project: bool) -> &Map<String, Value> {
        if project {
            self.settings.project_layer()
        } else {
            self.settings.global_layer()
        }
    }

    fn top_base(&self, scope: SourceScope) -> PathBuf {
        if scope == SourceScope::Project {
            self.cwd.join(CONFIG_DIR_NAME)
        } else {
            self.agent_dir.clone()
        }
    }

    fn item_scope(item: &Item) -> SourceScope {
        if item.scope == SourceScope::Project {
            SourceScope::Project
        } else {
            SourceScope::User
        }
    }

    /// Whether space does anything for the item in this mode.
    pub fn can_toggle(mode: WriteScope, item: &Item) -> bool {
        mode == WriteScope::Project || Self::item_scope(item) == SourceScope::User
    }

    /// Switches the item; returns its new state (`None`: nothing changed).
    pub fn toggle(&mut self, mode: WriteScope, item: &Item) -> Result<Option<bool>, String> {
        if mode == WriteScope::Project {
            let state = self.next_override(item);
            if !self.set_override(item, state)? {
                return Ok(None);
            }
            return Ok(Some(match state {
                Override::Inherit => self.inherited_enabled(item),
                Override::Load => true,
                Override::Unload => false,
            }));
        }
        let enabled = !item.enabled;
        if item.origin == SourceOrigin::TopLevel {
            self.toggle_top_level(item, enabled)?;
        } else {
            self.toggle_package(item, enabled)?;
        }
        Ok(Some(enabled))
    }

    /// Pi's `getResourcePattern`: built-ins by name, others relative to their base folder.
    fn pattern(&self, item: &Item) -> String {
        if item.source == "builtin" {
            return item.path.clone();
        }
        let base = item
            .base_dir
            .clone()
            .unwrap_or_else(|| self.top_base(item.scope));
        relative(&base, Path::new(&item.path))
    }

    fn package_pattern(item: &Item) -> String {
        let base = item.base_dir.clone().unwrap_or_else(|| {
            Path::new(&item.path)
                .parent()
                .unwrap_or(Path::new("/"))
                .to_path_buf()
        });
        relative(&base, Path::new(&item.path))
    }

    fn toggle_top_level(&mut self, item: &Item, enabled: bool) -> Result<(), String> {
        let project = item.scope == SourceScope::Project;
        let pattern = self.pattern(item);
        let mut list: Vec<String> = strings(self.layer(project).get(item.kind.key()))
            .into_iter()
            .filter(|p| target(p) != pattern)
            .collect();
        list.push(format!("{}{pattern}", if enabled { "+" } else { "-" }));
        self.write_list(project, item.kind.key(), list)
    }

    fn write_list(&mut self, project: bool, key: &str, list: Vec<String>) -> Result<(), String> {
        self.settings
            .set_list(project, key, list.into_iter().map(Value::String).collect())
    }

    fn toggle_package(&mut self, item: &Item, enabled: bool) -> Result<(), String> {
        let project = item.scope == SourceScope::Project;
        let mut packages: Vec<Value> = self
            .layer(project)
            .get("packages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(index) = packages
            .iter()
            .position(|p| source_of(p) == Some(item.source.as_str()))
        else {
            return Ok(());
        };
        let mut pkg = match &packages[index] {
            Value::Object(m) => m.clone(),
            other => {
                let mut m = Map::new();
                m.insert("source".into(), other.clone());
                m
            }
        };
        let pattern = Self::package_pattern(item);
        let mut list: Vec<String> = strings(pkg.get(item.kind.key()))
            .into_iter()
            .filter(|p| target(p) != pattern)
            .collect();
        list.push(format!("{}{pattern}", if enabled { "+" } else { "-" }));
        pkg.insert(
            item.kind.key().into(),
            Value::Array(list.into_iter().map(Value::String).collect()),
        );
        packages[index] = Value::Object(pkg);
        self.settings.set_packages(project, packages)
    }

    /// Pi's `getProjectOverrideState`.
    pub fn override_state(&self, mode: WriteScope, item: &Item) -> Override {
        if mode != WriteScope::Project {
            return Override::Inherit;
        }
        if item.origin == SourceOrigin::TopLevel {
            let entries = strings(self.layer(true).get(item.kind.key()));
            return state_from(&entries, &self.top_level_patterns(item), false);
        }
        let Some(Value::Object(pkg)) = self.matching_project_package(item) else {
            return Override::Inherit;
        };
        let Some(entries) = pkg.get(item.kind.key()) else {
            return Override::Inherit;
        };
        let autoload_on = pkg.get("autoload") != Some(&Value::Bool(false));
        state_from(
            &strings(Some(entries)),
            &[Self::package_pattern(item)],
            autoload_on,
        )
    }

    fn next_override(&self, item: &Item) -> Override {
        let state = self.override_state(WriteScope::Project, item);
        let inherited = self.inherited_enabled(item);
        match (state, inherited) {
            (Override::Inherit, true) => Override::Unload,
            (Override::Inherit, false) => Override::Load,
            (Override::Unload, true) => Override::Load,
            (Override::Unload, false) => Override::Inherit,
            (Override::Load, true) => Override::Inherit,
            (Override::Load, false) => Override::Unload,
        }
    }

    pub fn inherited_enabled(&self, item: &Item) -> bool {
        let key = key_of(item);
        match self.inherited.iter().find(|(k, _)| *k == key) {
            Some((_, e)) => *e,
            None => Self::item_scope(item) != SourceScope::User || item.enabled,
        }
    }

    pub fn is_inherited_global(&self, item: &Item) -> bool {
        let key = key_of(item);
        Self::item_scope(item) == SourceScope::User || self.inherited.iter().any(|(k, _)| *k == key)
    }

    fn pattern_for_scope(&self, item: &Item, scope: SourceScope) -> String {
        let source_scope = Self::item_scope(item);
        if scope != source_scope || item.source == "builtin" {
            return item.path.clone();
        }
        let base = item
            .base_dir
            .clone()
            .unwrap_or_else(|| self.top_base(source_scope));
        relative(&base, Path::new(&item.path))
    }

    fn top_level_patterns(&self, item: &Item) -> Vec<String> {
        let base = self.top_base(SourceScope::Project);
        let mut out = vec![
            self.pattern_for_scope(item, SourceScope::Project),
            item.path.clone(),
            relative(&base, Path::new(&item.path)),
        ];
        if let Some(b) = &item.base_dir {
            out.push(relative(b, Path::new(&item.path)));
        }
        out
    }

    fn set_override(&mut self, item: &Item, state: Override) -> Result<bool, String> {
        if item.origin == SourceOrigin::TopLevel {
            self.set_top_level_override(item, state)?;
            return Ok(true);
        }
        self.set_package_override(item, state)
    }

    fn set_top_level_override(&mut self, item: &Item, state: Override) -> Result<(), String> {
        let current = strings(self.layer(true).get(item.kind.key()));
        let inherited = self.is_inherited_global(item);
        let pattern = if inherited {
            item.path.clone()
        } else {
            self.pattern_for_scope(item, SourceScope::Project)
        };
        let patterns = self.top_level_patterns(item);
        let mut updated: Vec<String> = current
            .into_iter()
            .filter(|e| {
                let t = target(e);
                if e.starts_with(['!', '+', '-']) && patterns.iter().any(|p| p == t) {
                    return false;
                }
                !(state == Override::Inherit && inherited && t == pattern)
            })
            .collect();
        if state != Override::Inherit {
            // Project entries name inherited files to override them; built-ins need none.
            if inherited && item.source != "builtin" && !updated.contains(&pattern) {
                updated.push(pattern.clone());
            }
            let sign = if state == Override::Load { "+" } else { "-" };
            updated.push(format!("{sign}{pattern}"));
        }
        self.write_list(true, item.kind.key(), updated)
    }

    fn set_package_override(&mut self, item: &Item, state: Override) -> Result<bool, String> {
        let mut packages: Vec<Value> = self
            .layer(true)
            .get("packages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let index = match packages
            .iter()
            .position(|p| source_of(p).is_some_and(|s| self.same_source(item, s)))
        {
            Some(i) => i,
            None => {
                if state == Override::Inherit {
                    return Ok(false);
                }
                packages.push(self.override_source(item));
                packages.len() - 1
            }
        };
        let mut pkg = match &packages[index] {
            Value::Object(m) => m.clone(),
            other => {
                let mut m = Map::new();
                m.insert("source".into(), other.clone());
                m
            }
        };
        let pattern = Self::package_pattern(item);
        let mut list: Vec<String> = strings(pkg.get(item.kind.key()))
            .into_iter()
            .filter(|e| target(e) != pattern)
            .collect();
        if state != Override::Inherit {
            let sign = if state == Override::Load { "+" } else { "-" };
            list.push(format!("{sign}{pattern}"));
        }
        if list.is_empty() {
            pkg.remove(item.kind.key());
        } else {
            pkg.insert(
                item.kind.key().into(),
                Value::Array(list.into_iter().map(Value::String).collect()),
            );
        }
        let has_filters = Kind::ALL.iter().any(|k| pkg.contains_key(k.key()));
        if has_filters {
            packages[index] = Value::Object(pkg);
        } else if pkg.get("autoload") == Some(&Value::Bool(false)) {
            packages.remove(index);
        } else {
            packages[index] = pkg.get("source").cloned().unwrap_or(Value::Null);
        }
        self.settings.set_packages(true, packages)?;
        Ok(true)
    }

    /// A new project entry that only adjusts the user's package.
    fn override_source(&self, item: &Item) -> Value {
        let source = if is_local_path(&item.source) {
            let path = resolve_path(
                pi_js::trim(&item.source),
                &self.top_base(Self::item_scope(item)),
                &self.home,
            );
            let rel = relative(&self.top_base(SourceScope::Project), &path);
            if rel.is_empty() { ".".into() } else { rel }
        } else {
            item.source.clone()
        };
        serde_json::json!({"source": source, "autoload": false})
    }

    /// Whether a project entry's source names the item's package.
    fn same_source(&self, item: &Item, project_source: &str) -> bool {
        if item.source == project_source {
            return true;
        }
        if !is_local_path(&item.source) || !is_local_path(project_source) {
            return false;
        }
        let left = resolve_path(
            pi_js::trim(&item.source),
            &self.top_base(Self::item_scope(item)),
            &self.home,
        );
        let right = resolve_path(
            pi_js::trim(project_source),
            &self.top_base(SourceScope::Project),
            &self.home,
        );
        left == right
    }

    fn matching_project_package(&self, item: &Item) -> Option<Value> {
        self.layer(true)
            .get("packages")
            .and_then(Value::as_array)?
            .iter()
            .find(|p| source_of(p).is_some_and(|s| self.same_source(item, s)))
            .cloned()
    }
}

fn source_of(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Object(m) => m.get("source").and_then(Value::as_str),
        _ => None,
    }
}

fn key_of(item: &Item) -> (Kind, PathBuf) {
    let path = if item.path.starts_with("builtin:") {
        PathBuf::from(&item.path)
    } else {
        canonicalize_or_self(Path::new(&item.path))
    };
    (item.kind, path)
}

/// The override of the last entry naming one of `patterns`; an empty list unloads when
/// `empty_unloads`.
fn state_from(entries: &[String], patterns: &[String], empty_unloads: bool) -> Override {
    if entries.is_empty() && empty_unloads {
        return Override::Unload;
    }
    let mut state = Override::Inherit;
    for e in entries {
        if !patterns.iter().any(|p| p == target(e)) {
            continue;
        }
        state = if e.starts_with(['!', '-']) {
            Override::Unload
        } else {
            Override::Load
        };
    }
    state
}
