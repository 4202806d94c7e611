//! Path filters used while discovering resources:
//!
//! * [`IgnoreRules`]: `.gitignore`, `.ignore` and `.fdignore` files met while walking a resource
//!   folder. Like Pi, each file's lines are rewritten relative to the walk's root (`sub/` is
//!   prepended) and collected into one matcher, in the order the files were met.
//! * [`Overrides`]: the `!glob`, `+path` and `-path` entries of a settings resource list
//!   (`skills`, `prompts`, `extensions`), which switch discovered resources off and on.

use crate::settings::paths::{normalize_path, relative, to_posix};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Path, PathBuf};

const IGNORE_FILE_NAMES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// Ignore rules collected during one walk.
pub struct IgnoreRules {
    root: PathBuf,
    lines: Vec<String>,
    matcher: Option<Gitignore>,
}

impl IgnoreRules {
    pub fn new(root: &Path) -> IgnoreRules {
        IgnoreRules {
            root: root.to_path_buf(),
            lines: Vec::new(),
            matcher: None,
        }
    }

    /// Adds the ignore files of `dir` (a folder of the walk).
    pub fn add_dir(&mut self, dir: &Path) {
        let rel = relative(&self.root, dir);
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let mut added = false;
        for name in IGNORE_FILE_NAMES {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if let Some(p) = prefix_pattern(line, &prefix) {
                    self.lines.push(p);
                    added = true;
                }
            }
        }
        if added {
            let mut b = GitignoreBuilder::new(&self.root);
            for l in &self.lines {
                let _ = b.add_line(None, l);
            }
            self.matcher = b.build().ok();
        }
    }

    /// Whether `path` (inside the root) is ignored.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        match &self.matcher {
            Some(m) => m.matched(path, is_dir).is_ignore(),
            None => false,
        }
    }
}

/// Pi's `prefixIgnorePattern`: comments and blank lines dropped, `!` kept in front, a leading
/// `/` removed, the folder prefix added.
fn prefix_pattern(line: &str, prefix: &str) -> Option<String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
        return None;
    }
    let (negated, mut pattern) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, line.strip_prefix("\\!").map_or(line, |_| &line[1..])),
    };
    pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let prefixed = format!("{prefix}{pattern}");
    Some(if negated {
        format!("!{prefixed}")
    } else {
        prefixed
    })
}

/// Glob matching as minimatch does it for these patterns: `*` and `?` stay within one path
/// segment, `**` spans segments, `{a,b}` alternates.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher().is_match(text))
        .unwrap_or(false)
}

/// The `!`, `+` and `-` entries of a settings resource list.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    excludes: Vec<String>,
    force_includes: Vec<String>,
    force_excludes: Vec<String>,
    /// All override entries in order, for [`Overrides::decision`].
    ordered: Vec<String>,
}

impl Overrides {
    pub fn new(entries: &[String]) -> Overrides {
        let mut o = Overrides::default();
        for e in entries {
            if let Some(p) = e.strip_prefix('!') {
                o.excludes.push(p.to_string());
            } else if let Some(p) = e.strip_prefix('+') {
                o.force_includes.push(p.to_string());
            } else if let Some(p) = e.strip_prefix('-') {
                o.force_excludes.push(p.to_string());
            } else {
                continue;
            }
            o.ordered.push(e.clone());
        }
        o
    }

    /// Pi's `isEnabledByOverrides`: on unless a `!glob` matches, back on with a matching
    /// `+path`, off with a matching `-path`.
    pub fn enabled(&self, path: &str, base_dir: &Path, home: &Path) -> bool {
        let mut enabled = true;
        if matches_any(path, &self.excludes, base_dir, home) {
            enabled = false;
        }
        if matches_any_exact(path, &self.force_includes, base_dir, home) {
            enabled = true;
        }
        if matches_any_exact(path, &self.force_excludes, base_dir, home) {
            enabled = false;
        }
        enabled
    }

    /// Pi's `applyAutoloadDisabledPatterns` for one path: the decision of the last override
    /// entry that matches it, if any.
    pub fn decision(&self, path: &str, base_dir: &Path, home: &Path) -> Option<bool> {
        let mut result = None;
        for e in &self.ordered {
            let target = &e[1..];
            let exact = e.starts_with('+') || e.starts_with('-');
            let hit = if exact {
                matches_any_exact(path, &[target.to_string()], base_dir, home)
            } else {
                matches_any(path, &[target.to_string()], base_dir, home)
            };
            if hit {
                result = Some(e.starts_with('+'));
            }
        }
        result
    }
}

/// The forms of a resource path patterns are tried against: relative to the settings base
/// folder, its file name and the absolute path; for a `SKILL.md`, the same for its folder.
fn candidates(path: &str, base_dir: &Path) -> (Vec<String>, Vec<String>) {
    if path.starts_with("builtin:") {
        return (vec![path.to_string()], vec![path.to_string()]);
    }
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut glob = vec![relative(base_dir, p), name.clone(), to_posix(p)];
    let mut exact = vec![relative(base_dir, p), to_posix(p)];
    if name == "SKILL.md"
        && let Some(parent) = p.parent()
    {
        let parent_name = parent
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        glob.extend([relative(base_dir, parent), parent_name, to_posix(parent)]);
        exact.extend([relative(base_dir, parent), to_posix(parent)]);
    }
    (glob, exact)
}

/// Whether a glob pattern matches the path (relative to `base_dir`, its name or absolute).
pub fn matches_any(path: &str, patterns: &[String], base_dir: &Path, home: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let (forms, _) = candidates(path, base_dir);
    patterns.iter().any(|pattern| {
        let pattern = normalize_path(pattern, home).replace('\\', "/");
        forms.iter().any(|f| glob_matches(&pattern, f))
    })
}

/// Whether a pattern names the path exactly (relative to `base_dir` or absolute).
pub fn matches_any_exact(path: &str, patterns: &[String], base_dir: &Path, home: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let (_, forms) = candidates(path, base_dir);
    patterns.iter().any(|pattern| {
        let p = pattern
            .strip_prefix("./")
            .or_else(|| pattern.strip_prefix(".\\"))
            .unwrap_or(pattern);
        let normalized = normalize_path(p, home).replace('\\', "/");
        forms.contains(&normalized)
    })
}

/// Pi's `applyPatterns` for a settings list's entries: plain patterns select (all when there
/// are none), `!` removes, `+` adds back exact paths, `-` removes exact paths.
pub fn apply_patterns(
    paths: &[PathBuf],
    patterns: &[String],
    base_dir: &Path,
    home: &Path,
) -> Vec<bool> {
    let (mut includes, mut excludes, mut force_in, mut force_out) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in patterns {
        if let Some(r) = p.strip_prefix('+') {
            force_in.push(r.to_string());
        } else if let Some(r) = p.strip_prefix('-') {
            force_out.push(r.to_string());
        } else if let Some(r) = p.strip_prefix('!') {
            excludes.push(r.to_string());
        } else {
            includes.push(p.clone());
        }
    }
    paths
        .iter()
        .map(|path| {
            let s = path.to_string_lossy();
            let mut on = includes.is_empty() || matches_any(&s, &includes, base_dir, home);
            if on && matches_any(&s, &excludes, base_dir, home) {
                on = false;
            }
            if !on && matches_any_exact(&s, &force_in, base_dir, home) {
                on = true;
            }
            if matches_any_exact(&s, &force_out, base_dir, home) {
                on = false;
            }
            on
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    #[test]
    fn ignore_files_are_prefixed_by_their_folder() {
        let tmp = TempDir::new();
        tmp.write(".gitignore", "# comment\n/drafts\n*.tmp.md\n");
        tmp.write("sub/.ignore", "local.md\n!keep.tmp.md\n");
        let mut rules = IgnoreRules::new(tmp.path());
        rules.add_dir(tmp.path());
        assert!(rules.ignores(&tmp.path().join("drafts"), true));
        assert!(rules.ignores(&tmp.path().join("x/a.tmp.md"), false));
        assert!(!rules.ignores(&tmp.path().join("sub/local.md"), false));
        rules.add_dir(&tmp.path().join("sub"));
        assert!(rules.ignores(&tmp.path().join("sub/local.md"), false));
        assert!(!rules.ignores(&tmp.path().join("sub/keep.tmp.md"), false));
        // Prefixed patterns only apply at that level, as in Pi.
        assert!(!rules.ignores(&tmp.path().join("sub/deeper/local.md"), false));
    }

    #[test]
    fn overrides() {
        let home = Path::new("/h");
        let base = Path::new("/agent");
        let o = Overrides::new(&[
            "../extra".into(),
            "!**/draft-*".into(),
            "-skills/two".into(),
            "+skills/draft-keep".into(),
        ]);
        assert!(o.enabled("/agent/skills/one/SKILL.md", base, home));
        assert!(!o.enabled("/agent/skills/two/SKILL.md", base, home));
        assert!(!o.enabled("/agent/skills/draft-x/SKILL.md", base, home));
        assert!(o.enabled("/agent/skills/draft-keep/SKILL.md", base, home));
        let o = Overrides::new(&["-builtin:mcp".into(), "+builtin:mcp".into()]);
        assert_eq!(o.decision("builtin:mcp", base, home), Some(true));
        assert_eq!(o.decision("builtin:llama.cpp", base, home), None);
        assert!(!Overrides::new(&["!builtin:*".into()]).enabled("builtin:mcp", base, home));
    }

    #[test]
    fn patterns_select_then_exclude() {
        let home = Path::new("/h");
        let base = Path::new("/b");
        let paths: Vec<PathBuf> = ["/b/p/a.md", "/b/p/b.md", "/b/p/c.md"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let on = apply_patterns(
            &paths,
            &["p/*.md".into(), "!b.md".into(), "-p/c.md".into()],
            base,
            home,
        );
        assert_eq!(on, [true, false, false]);
        let on = apply_patterns(&paths, &["!*.md".into(), "+./p/b.md".into()], base, home);
        assert_eq!(on, [false, true, false]);
    }
}
