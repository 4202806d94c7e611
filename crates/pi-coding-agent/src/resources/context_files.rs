//! Context files (`AGENTS.md` and friends) for the system prompt's `project_context` section, as
//! Pi's `loadProjectContextFiles` finds them:
//!
//! * one file per directory, the first that exists of `AGENTS.override.md`, `AGENTS.md`,
//!   `AGENTS.MD`, `CLAUDE.md`, `CLAUDE.MD`;
//! * the agent dir's first, then the cwd's ancestors from the filesystem root down to the cwd;
//! * a path already taken is not repeated (the agent dir may be an ancestor);
//! * in a linked git worktree nested inside its main checkout, the main checkout's file is left
//!   out when the worktree has its own (both describe the same repository).
//!
//! Context files load whether or not the project is trusted (`-nc` turns them off).

use crate::settings::paths::{canonicalize_or_self, is_path_within};
use std::path::{Path, PathBuf};

/// Candidate names in each directory, in order of preference.
pub const CONTEXT_FILE_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// A context file and its text (BOM removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// The context files for `cwd` (absolute), with warnings for files that exist but cannot be read
/// (Pi prints `Warning: Could not read <path>: <error>` and moves on to the next name).
pub fn load_context_files(cwd: &Path, agent_dir: &Path) -> (Vec<ContextFile>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    if let Some(global) = load_from_dir(agent_dir, &mut warnings) {
        files.push(global);
    }
    let shadowed = shadowed_context_file(cwd, &mut warnings);
    let mut ancestors = Vec::new();
    for dir in cwd.ancestors() {
        let Some(file) = load_from_dir(dir, &mut warnings) else {
            continue;
        };
        let name = file.path.file_name().map(PathBuf::from).unwrap_or_default();
        let is_shadowed = shadowed
            .as_ref()
            .is_some_and(|s| canonicalize_or_self(dir).join(&name) == *s);
        let seen = files
            .iter()
            .chain(ancestors.iter())
            .any(|f: &ContextFile| f.path == file.path);
        if !is_shadowed && !seen {
            ancestors.push(file);
        }
    }
    ancestors.reverse();
    files.extend(ancestors);
    (files, warnings)
}

fn load_from_dir(dir: &Path, warnings: &mut Vec<String>) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let content = text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_string();
                return Some(ContextFile { path, content });
            }
            Err(e) => warnings.push(format!(
                "Could not read {}: Error: {}",
                path.display(),
                crate::settings::file::node_io_message(&e, &path)
            )),
        }
    }
    None
}

/// The git checkout containing `dir`: where its `.git` is, and the repository's common git dir.
struct GitPaths {
    repo_dir: PathBuf,
    common_git_dir: PathBuf,
    /// `.git` is a directory itself, not a symbolic link: the checkout is its repository's main
    /// one, whose canonical root is the canonical parent of that `.git`.
    main_checkout: bool,
}

/// Pi's `findGitPaths`: the nearest `.git` (a directory, or a `gitdir:` file of a worktree).
fn find_git_paths(start: &Path) -> Option<GitPaths> {
    for dir in start.ancestors() {
        let git = dir.join(".git");
        let Ok(mut meta) = std::fs::symlink_metadata(&git) else {
            continue;
        };
        let linked = meta.file_type().is_symlink();
        if linked {
            let Ok(target) = std::fs::metadata(&git) else {
                continue;
            };
            meta = target;
        }
        if meta.is_file() {
            let text = std::fs::read_to_string(&git).ok()?;
            let target = text.trim().strip_prefix("gitdir: ")?;
            let git_dir = crate::settings::paths::lexical_normalize(&dir.join(target.trim()));
            if !git_dir.join("HEAD").exists() {
                return None;
            }
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(c) => crate::settings::paths::lexical_normalize(&git_dir.join(c.trim())),
                Err(_) => git_dir,
            };
            return Some(GitPaths {
                repo_dir: dir.to_path_buf(),
                common_git_dir: common,
                main_checkout: false,
            });
        }
        if meta.is_dir() {
            if !git.join("HEAD").exists() {
                return None;
            }
            return Some(GitPaths {
                repo_dir: dir.to_path_buf(),
                common_git_dir: git,
                main_checkout: !linked,
            });
        }
        return None;
    }
    None
}

/// In a linked worktree nested inside the main checkout that has its own context file, the main
/// checkout's file of the same name (canonical path), which would apply the same context twice.
fn shadowed_context_file(cwd: &Path, warnings: &mut Vec<String>) -> Option<PathBuf> {
    let git = find_git_paths(cwd)?;
    if git.main_checkout {
        // Not a linked worktree: the main root would be the checkout's own (no lookups).
        return None;
    }
    let common = canonicalize_or_self(&git.common_git_dir);
    let worktree_root = canonicalize_or_self(&git.repo_dir);
    let main_root = common.parent()?.to_path_buf();
    if !is_path_within(&main_root, &worktree_root) || worktree_root == main_root {
        return None;
    }
    // Only when the common git dir is the main checkout's own `.git` (not a bare layout or a
    // submodule).
    if canonicalize_or_self(&main_root.join(".git")) != common {
        return None;
    }
    let own = load_from_dir(&worktree_root, warnings)?;
    Some(main_root.join(own.path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    fn names(files: &[ContextFile], root: &Path) -> Vec<String> {
        files
            .iter()
            .map(|f| f.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn agent_dir_then_root_to_cwd_one_per_dir() {
        let tmp = TempDir::new();
        tmp.write("agent/CLAUDE.md", "global");
        tmp.write("work/CLAUDE.md", "top");
        tmp.write("work/repo/AGENTS.md", "repo");
        tmp.write("work/repo/CLAUDE.md", "loses");
        tmp.write("work/repo/pkg/AGENTS.override.md", "\u{FEFF}override");
        tmp.write("work/repo/pkg/AGENTS.md", "loses too");
        tmp.mkdir("work/repo/pkg/CLAUDE.md/not-a-file");
        let (files, warnings) =
            load_context_files(&tmp.path().join("work/repo/pkg"), &tmp.path().join("agent"));
        assert!(warnings.is_empty());
        assert_eq!(
            names(&files, tmp.path()),
            [
                "agent/CLAUDE.md",
                "work/CLAUDE.md",
                "work/repo/AGENTS.md",
                "work/repo/pkg/AGENTS.override.md"
            ]
        );
        assert_eq!(files[3].content, "override");
    }

    #[test]
    fn agent_dir_inside_the_cwd_is_not_repeated() {
        let tmp = TempDir::new();
        tmp.write("AGENTS.md", "both");
        let (files, _) = load_context_files(tmp.path(), tmp.path());
        assert_eq!(files.len(), 1);
    }

    #[test]
    fn nested_worktree_shadows_the_main_checkout_file() {
        let tmp = TempDir::new();
        tmp.write("main/.git/HEAD", "ref: refs/heads/main\n");
        tmp.write("main/AGENTS.md", "main copy");
        tmp.write("main/.git/worktrees/feat/HEAD", "ref: refs/heads/feat\n");
        tmp.write("main/.git/worktrees/feat/commondir", "../..\n");
        tmp.write(
            "main/wt/feat/.git",
            &format!(
                "gitdir: {}/main/.git/worktrees/feat\n",
                tmp.path().display()
            ),
        );
        tmp.write("main/wt/feat/AGENTS.md", "worktree copy");
        let (files, _) =
            load_context_files(&tmp.path().join("main/wt/feat"), &tmp.path().join("agent"));
        assert_eq!(names(&files, tmp.path()), ["main/wt/feat/AGENTS.md"]);
        // Without its own file the worktree inherits the main one.
        std::fs::remove_file(tmp.path().join("main/wt/feat/AGENTS.md")).unwrap();
        let (files, _) =
            load_context_files(&tmp.path().join("main/wt/feat"), &tmp.path().join("agent"));
        assert_eq!(names(&files, tmp.path()), ["main/AGENTS.md"]);
    }
}
