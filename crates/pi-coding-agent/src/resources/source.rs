//! Where a resource came from (`SourceInfo` in `get_commands`), and the diagnostics resource
//! loading produces.
//!
//! Pi gives a resource the source info of the discovery entry that produced its file (`auto` for
//! the standard folders, `local` for settings entries); resources found only through a CLI flag
//! keep the default their loader made (`local`, scope from the folder, `temporary` otherwise).

use pi_protocol::results::{SourceInfo, SourceOrigin, SourceScope};
use std::path::{Path, PathBuf};

/// How a discovered path was found (Pi's `PathMetadata`).
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// `auto` (standard folders), `local` (settings entries), `builtin`, `cli`, or for package
    /// resources the package's source as written (`npm:foo`, `../pkg`).
    pub source: String,
    pub scope: SourceScope,
    pub origin: SourceOrigin,
    pub base_dir: Option<PathBuf>,
    /// The root of the package a resource belongs to (for its manifest checks).
    pub package_root: Option<PathBuf>,
    /// The package's changelog file, when it has one.
    pub changelog_path: Option<PathBuf>,
}

impl Metadata {
    pub fn new(source: &str, scope: SourceScope, base_dir: Option<&Path>) -> Metadata {
        Metadata {
            source: source.to_string(),
            scope,
            origin: SourceOrigin::TopLevel,
            base_dir: base_dir.map(Path::to_path_buf),
            package_root: None,
            changelog_path: None,
        }
    }

    /// Metadata of a package's resources.
    pub fn package(source: &str, scope: SourceScope) -> Metadata {
        Metadata {
            origin: SourceOrigin::Package,
            ..Metadata::new(source, scope, None)
        }
    }

    /// Pi's precedence rank: project settings entries, project folders, user settings entries,
    /// user folders, packages, built-ins (lower wins a name collision).
    pub fn rank(&self) -> usize {
        if self.source == "builtin" {
            return 5;
        }
        if self.origin == SourceOrigin::Package {
            return 4;
        }
        let scope = if self.scope == SourceScope::Project {
            0
        } else {
            2
        };
        scope + usize::from(self.source != "local")
    }

    /// The source info of `path` found this way.
    pub fn source_info(&self, path: &Path) -> SourceInfo {
        SourceInfo {
            path: path.to_string_lossy().into_owned(),
            source: self.source.clone(),
            scope: self.scope,
            origin: self.origin,
            base_dir: self
                .base_dir
                .as_ref()
                .map(|d| d.to_string_lossy().into_owned()),
            changelog_path: self
                .changelog_path
                .as_ref()
                .map(|d| d.to_string_lossy().into_owned()),
        }
    }
}

/// Kinds of resource diagnostics (Pi's `ResourceDiagnostic.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Warning,
    Error,
    /// Two resources with one name; the first (`winner`) is kept.
    Collision,
}

/// A problem with one resource file or path. Pi shows these only in interactive mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub message: String,
    pub path: PathBuf,
    /// For collisions: the path that won.
    pub winner: Option<PathBuf>,
}

impl Diagnostic {
    pub fn warning(message: &str, path: &Path) -> Diagnostic {
        Diagnostic {
            kind: DiagnosticKind::Warning,
            message: message.to_string(),
            path: path.to_path_buf(),
            winner: None,
        }
    }

    pub fn error(message: &str, path: &Path) -> Diagnostic {
        Diagnostic {
            kind: DiagnosticKind::Error,
            ..Diagnostic::warning(message, path)
        }
    }
}
