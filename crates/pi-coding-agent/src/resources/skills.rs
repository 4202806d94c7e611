//! Skills (`docs/skills.md`, Pi's `skills.js`): loading `SKILL.md` files and standalone markdown
//! skills from the paths discovery produced, validating them with Pi's warnings, and the rules
//! for which of two skills with the same name wins.
//!
//! * A folder holding `SKILL.md` is one skill; its other files are not searched.
//! * Otherwise a folder's `.md` files are skills only at the top of the walk (a standalone file
//!   needs a `description`), and subfolders are searched for `SKILL.md`.
//! * Dot entries and `node_modules` are skipped; `.gitignore`/`.ignore`/`.fdignore` apply.
//! * A skill without a description is not loaded; other problems are warnings.
//! * The first skill of a name wins; later ones are reported as collisions.

use super::frontmatter;
use super::patterns::IgnoreRules;
use super::source::{Diagnostic, DiagnosticKind, Metadata};
use crate::settings::paths::{canonicalize_or_self, is_path_within, resolve_path_trimmed};
use pi_protocol::results::SourceInfo;
use pi_protocol::results::SourceScope;
use std::path::{Path, PathBuf};

/// Longest valid name (Agent Skills specification).
const MAX_NAME_LENGTH: usize = 64;
/// Longest valid description.
const MAX_DESCRIPTION_LENGTH: usize = 1024;

/// A loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The markdown file (`SKILL.md` or a standalone `.md`).
    pub file_path: PathBuf,
    /// The file's folder, which relative references in the skill start from.
    pub base_dir: PathBuf,
    pub source_info: SourceInfo,
    /// `disable-model-invocation: true`: only `/skill:name` uses it; the prompt does not list it.
    pub disable_model_invocation: bool,
}

/// Where a skill path came from, for its default source info.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillOrigin {
    /// Under `<agentDir>/skills`.
    User,
    /// Under `<cwd>/.pi/skills`.
    Project,
    /// Anywhere else.
    Path,
}

/// Loads the skills at `paths` (files or folders, resolved against `cwd`) in order.
pub fn load_skills(
    paths: &[PathBuf],
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
) -> (Vec<Skill>, Vec<Diagnostic>) {
    let user_dir = agent_dir.join("skills");
    let project_dir = cwd
        .join(crate::settings::paths::CONFIG_DIR_NAME)
        .join("skills");
    let mut set = SkillSet::default();
    for raw in paths {
        let resolved = resolve_path_trimmed(&raw.to_string_lossy(), cwd, home);
        let origin = if is_path_within(&user_dir, &resolved) {
            SkillOrigin::User
        } else if is_path_within(&project_dir, &resolved) {
            SkillOrigin::Project
        } else {
            SkillOrigin::Path
        };
        let meta = match std::fs::metadata(&resolved) {
            Ok(m) => m,
            Err(_) => {
                set.diagnostics
                    .push(Diagnostic::warning("skill path does not exist", &resolved));
                continue;
            }
        };
        if meta.is_dir() {
            let mut rules = IgnoreRules::new(&resolved);
            let mut found = Vec::new();
            load_dir(
                &resolved,
                origin,
                true,
                &mut rules,
                &mut found,
                &mut set.diagnostics,
            );
            for skill in found {
                set.add(skill);
            }
        } else if meta.is_file() && resolved.to_string_lossy().ends_with(".md") {
            let mut diags = Vec::new();
            if let Some(skill) = load_file(&resolved, origin, &mut diags) {
                set.diagnostics.extend(diags);
                set.add(skill);
            } else {
                set.diagnostics.extend(diags);
            }
        } else {
            set.diagnostics.push(Diagnostic::warning(
                "skill path is not a markdown file",
                &resolved,
            ));
        }
    }
    set.finish()
}

#[derive(Default)]
struct SkillSet {
    skills: Vec<Skill>,
    /// Index into `skills` by name.
    by_name: std::collections::HashMap<String, usize>,
    real_paths: std::collections::HashSet<PathBuf>,
    diagnostics: Vec<Diagnostic>,
    collisions: Vec<Diagnostic>,
}

impl SkillSet {
    fn add(&mut self, skill: Skill) {
        // The same file reached twice (through a symlink) is not a collision.
        let real = canonicalize_or_self(&skill.file_path);
        if self.real_paths.contains(&real) {
            return;
        }
        match self.by_name.get(&skill.name) {
            Some(&i) => self.collisions.push(Diagnostic {
                kind: DiagnosticKind::Collision,
                message: format!("name \"{}\" collision", skill.name),
                path: skill.file_path.clone(),
                winner: Some(self.skills[i].file_path.clone()),
            }),
            None => {
                self.real_paths.insert(real);
                self.by_name.insert(skill.name.clone(), self.skills.len());
                self.skills.push(skill);
            }
        }
    }

    fn finish(mut self) -> (Vec<Skill>, Vec<Diagnostic>) {
        self.diagnostics.append(&mut self.collisions);
        (self.skills, self.diagnostics)
    }
}

/// Directory entries sorted by name, as Node's `readdirSync` returns them.
pub fn sorted_entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    entries
}

/// What an entry is, following symlinks (a broken link is neither).
pub fn entry_kind(path: &Path) -> (bool, bool) {
    match std::fs::metadata(path) {
        Ok(m) => (m.is_dir(), m.is_file()),
        Err(_) => (false, false),
    }
}

fn load_dir(
    dir: &Path,
    origin: SkillOrigin,
    include_root_files: bool,
    rules: &mut IgnoreRules,
    out: &mut Vec<Skill>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if !dir.exists() {
        return;
    }
    rules.add_dir(dir);
    let entries = sorted_entries(dir);
    if let Some((_, path)) = entries.iter().find(|(n, _)| n == "SKILL.md") {
        let (_, is_file) = entry_kind(path);
        if is_file && !rules.ignores(path, false) {
            if let Some(skill) = load_file(path, origin, diagnostics) {
                out.push(skill);
            }
            return;
        }
    }
    for (name, path) in &entries {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let (is_dir, is_file) = entry_kind(path);
        if rules.ignores(path, is_dir) {
            continue;
        }
        if is_dir {
            load_dir(path, origin, false, rules, out, diagnostics);
        } else if is_file
            && include_root_files
            && name.ends_with(".md")
            && let Some(skill) = load_file(path, origin, diagnostics)
        {
            out.push(skill);
        }
    }
}

/// The default source info of a skill file (Pi's `createSkillSourceInfo`).
pub fn skill_source_info(path: &Path, base_dir: &Path, origin: SkillOrigin) -> SourceInfo {
    let scope = match origin {
        SkillOrigin::User => SourceScope::User,
        SkillOrigin::Project => SourceScope::Project,
        SkillOrigin::Path => SourceScope::Temporary,
    };
    Metadata::new("local", scope, Some(base_dir)).source_info(path)
}

/// Loads one skill file; `None` (with the reasons in `diagnostics`) when it is not a skill.
fn load_file(path: &Path, origin: SkillOrigin, diagnostics: &mut Vec<Diagnostic>) -> Option<Skill> {
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let raw = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            diagnostics.push(Diagnostic::warning(
                &crate::settings::file::node_io_message(&e, path),
                path,
            ));
            return None;
        }
    };
    let parsed = match frontmatter::parse(&raw) {
        Ok(p) => p,
        Err(e) => {
            if declared {
                diagnostics.push(Diagnostic::warning(&e.to_string(), path));
            }
            return None;
        }
    };
    let description = parsed.string("description").map(str::to_string);
    let has_description = description
        .as_deref()
        .is_some_and(|d| !pi_js::trim(d).is_empty());
    if !declared && !has_description {
        return None;
    }
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir_name = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &description {
        Some(d) if has_description => {
            let len = d.encode_utf16().count();
            if len > MAX_DESCRIPTION_LENGTH {
                diagnostics.push(Diagnostic::warning(
                    &format!("description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len})"),
                    path,
                ));
            }
        }
        _ => diagnostics.push(Diagnostic::warning("description is required", path)),
    }
    let name = parsed
        .string("name")
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or(dir_name);
    for problem in validate_name(&name) {
        diagnostics.push(Diagnostic::warning(&problem, path));
    }
    let description = description.filter(|_| has_description)?;
    Some(Skill {
        source_info: skill_source_info(path, &base_dir, origin),
        disable_model_invocation: matches!(
            parsed.field("disable-model-invocation"),
            Some(super::yaml::Yaml::Bool(true))
        ),
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
    })
}

/// The Agent Skills naming rules, as Pi words their violations.
fn validate_name(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let len = name.encode_utf16().count();
    if len > MAX_NAME_LENGTH {
        errors.push(format!("name exceeds {MAX_NAME_LENGTH} characters ({len})"));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errors.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".into(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        errors.push("name must not contain consecutive hyphens".into());
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    fn load(tmp: &TempDir, rel: &str) -> (Vec<Skill>, Vec<Diagnostic>) {
        load_skills(
            &[tmp.path().join(rel)],
            &tmp.path().join("work"),
            &tmp.path().join("agent"),
            tmp.path(),
        )
    }

    fn messages(d: &[Diagnostic]) -> Vec<String> {
        d.iter().map(|d| d.message.clone()).collect()
    }

    #[test]
    fn validation_warnings_use_pis_words() {
        let tmp = TempDir::new();
        tmp.write("s/Bad_Name/SKILL.md", "---\ndescription: ok\n---\n");
        tmp.write("s/no-desc/SKILL.md", "---\nname: no-desc\n---\n");
        tmp.write("s/x/SKILL.md", "---\nname: -a--b-\ndescription: d\n---\n");
        tmp.write("s/broken/SKILL.md", "---\ndescription: a: b\n---\n");
        tmp.write(
            "s/long/SKILL.md",
            &format!("---\ndescription: {}\n---\n", "é".repeat(1025)),
        );
        let (skills, diags) = load(&tmp, "s");
        let names: Vec<_> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Bad_Name", "long", "-a--b-"]);
        assert_eq!(
            messages(&diags),
            [
                "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
                "Nested mappings are not allowed in compact mappings at line 1, column 14:",
                "description exceeds 1024 characters (1025)",
                "description is required",
                "name must not start or end with a hyphen",
                "name must not contain consecutive hyphens",
            ]
        );
    }

    #[test]
    fn collisions_keep_the_first() {
        let tmp = TempDir::new();
        tmp.write("s/a/SKILL.md", "---\nname: dup\ndescription: first\n---\n");
        tmp.write("s/b/SKILL.md", "---\nname: dup\ndescription: second\n---\n");
        let (skills, diags) = load(&tmp, "s");
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].description, "first");
        assert_eq!(diags[0].kind, DiagnosticKind::Collision);
        assert_eq!(diags[0].message, "name \"dup\" collision");
    }

    #[test]
    fn ignore_files_and_dot_entries_hide_skills() {
        let tmp = TempDir::new();
        tmp.write("s/.gitignore", "hidden/\n");
        tmp.write(
            "s/hidden/SKILL.md",
            "---\nname: hidden\ndescription: d\n---\n",
        );
        tmp.write("s/.dot/SKILL.md", "---\nname: dot\ndescription: d\n---\n");
        tmp.write(
            "s/node_modules/x/SKILL.md",
            "---\nname: nm\ndescription: d\n---\n",
        );
        tmp.write(
            "s/shown/SKILL.md",
            "---\nname: shown\ndescription: d\n---\n",
        );
        let (skills, _) = load(&tmp, "s");
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].name, "shown");
    }

    #[test]
    fn missing_and_non_markdown_paths() {
        let tmp = TempDir::new();
        tmp.write("notes.txt", "x");
        let (_, d) = load(&tmp, "nope");
        assert_eq!(messages(&d), ["skill path does not exist"]);
        let (_, d) = load(&tmp, "notes.txt");
        assert_eq!(messages(&d), ["skill path is not a markdown file"]);
    }
}
