//! Package sources and the `packages` entries of settings.
//!
//! A source is `npm:<name>[@<version or range>]`, a git source (see [`super::git_url`]), or a
//! local path (a file is one extension, a folder a package). Identity ignores versions and
//! refs: npm packages are the same by name, git packages by `host/path`, local ones by resolved
//! path, so one package never loads twice through equivalent declarations.

use super::git_url::{GitSource, parse_git_url};
use crate::resources::discovery::Kind;
use crate::settings::paths::{resolve_path, resolve_path_trimmed};
use nodejs_semver::{Range, Version};
use pi_protocol::results::SourceScope;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// An npm source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmSource {
    /// What npm installs (`name` or `name@version`).
    pub spec: String,
    pub name: String,
    pub version: Option<String>,
    /// An exact version: never checked for updates.
    pub pinned: bool,
}

impl NpmSource {
    /// The version range the installed copy must satisfy (none for tags such as `latest`).
    pub fn range(&self) -> Option<Range> {
        self.version.as_deref().and_then(|v| Range::parse(v).ok())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Npm(NpmSource),
    Git(GitSource),
    Local(String),
}

/// Pi's `isLocalPath`: not a package source, URL or built-in.
pub fn is_local_path(value: &str) -> bool {
    let t = pi_js::trim(value);
    ![
        "npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// Pi's `parseSource`.
pub fn parse_source(source: &str) -> Source {
    if let Some(rest) = source.strip_prefix("npm:") {
        let spec = pi_js::trim(rest).to_string();
        let (name, version) = split_npm_spec(&spec);
        let pinned = version.as_deref().is_some_and(is_exact_version);
        return Source::Npm(NpmSource {
            spec,
            name,
            version,
            pinned,
        });
    }
    if is_local_path(source) {
        return Source::Local(source.to_string());
    }
    match parse_git_url(source) {
        Some(git) => Source::Git(git),
        None => Source::Local(source.to_string()),
    }
}

/// `name[@version]`, a scope's leading `@` being part of the name.
fn split_npm_spec(spec: &str) -> (String, Option<String>) {
    let start = usize::from(spec.starts_with('@'));
    match spec[start..].find('@').map(|i| i + start) {
        Some(at) if at > start && at + 1 < spec.len() => {
            (spec[..at].to_string(), Some(spec[at + 1..].to_string()))
        }
        _ => (spec.to_string(), None),
    }
}

/// npm's `semver.valid`: a full version (a leading `v` and surrounding blanks allowed).
pub fn is_exact_version(v: &str) -> bool {
    parse_version(v).is_some()
}

/// A version as `semver.valid` accepts it.
pub fn parse_version(v: &str) -> Option<Version> {
    let t = v.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    if t.starts_with('=') || t.split(['-', '+']).next()?.split('.').count() != 3 {
        return None;
    }
    Version::parse(t).ok()
}

/// Identity of a source (Pi's `getPackageIdentity`): local paths resolve from `base` (the
/// settings folder of their scope, or the cwd for sources typed on the command line).
pub fn identity(source: &str, base: &Path, home: &Path) -> String {
    match parse_source(source) {
        Source::Npm(n) => format!("npm:{}", n.name),
        Source::Git(g) => format!("git:{}/{}", g.host, g.path),
        Source::Local(p) => format!("local:{}", resolve_path_trimmed(&p, base, home).display()),
    }
}

/// One `packages` entry: a source string, or an object with `source` and filters.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageEntry {
    pub source: String,
    pub filter: Option<Filter>,
    /// The entry as written (kept when settings are rewritten).
    pub raw: Value,
}

/// The object form's resource selection.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    pub extensions: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    pub themes: Option<Vec<String>>,
    /// `autoload: false`: a project entry that only adjusts the user's entry of the package.
    pub autoload_off: bool,
}

impl Filter {
    pub fn get(&self, kind: Kind) -> Option<&Vec<String>> {
        match kind {
            Kind::Extensions => self.extensions.as_ref(),
            Kind::Skills => self.skills.as_ref(),
            Kind::Prompts => self.prompts.as_ref(),
            Kind::Themes => self.themes.as_ref(),
        }
    }
}

fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    let items = v?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
    )
}

impl PackageEntry {
    /// Reads one entry; other JSON values are not entries.
    pub fn from_value(v: &Value) -> Option<PackageEntry> {
        match v {
            Value::String(s) => Some(PackageEntry {
                source: s.clone(),
                filter: None,
                raw: v.clone(),
            }),
            Value::Object(m) => {
                let source = m.get("source")?.as_str()?.to_string();
                Some(PackageEntry {
                    source,
                    filter: Some(Filter {
                        extensions: string_list(m.get("extensions")),
                        skills: string_list(m.get("skills")),
                        prompts: string_list(m.get("prompts")),
                        themes: string_list(m.get("themes")),
                        autoload_off: m.get("autoload") == Some(&Value::Bool(false)),
                    }),
                    raw: v.clone(),
                })
            }
            _ => None,
        }
    }
}

/// The `packages` of one settings layer.
pub fn layer_packages(layer: &Map<String, Value>) -> Vec<PackageEntry> {
    layer
        .get("packages")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(PackageEntry::from_value).collect())
        .unwrap_or_default()
}

/// The settings folder local sources of a scope resolve from.
pub fn scope_base(scope: SourceScope, cwd: &Path, agent_dir: &Path) -> PathBuf {
    match scope {
        SourceScope::Project => cwd.join(crate::settings::paths::CONFIG_DIR_NAME),
        SourceScope::User => agent_dir.to_path_buf(),
        SourceScope::Temporary => cwd.to_path_buf(),
    }
}

/// A local source resolved from a base folder (Pi's `resolvePathFromBase`).
pub fn resolve_local(path: &str, base: &Path, home: &Path) -> PathBuf {
    resolve_path(pi_js::trim(path), base, home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_specs() {
        let npm = |s: &str| match parse_source(s) {
            Source::Npm(n) => (n.name, n.version, n.pinned),
            other => panic!("{other:?}"),
        };
        assert_eq!(npm("npm:foo"), ("foo".into(), None, false));
        assert_eq!(
            npm("npm:@s/foo@1.2.3"),
            ("@s/foo".into(), Some("1.2.3".into()), true)
        );
        assert_eq!(
            npm("npm: @s/foo@^1 "),
            ("@s/foo".into(), Some("^1".into()), false)
        );
        assert_eq!(npm("npm:foo@"), ("foo@".into(), None, false));
        assert_eq!(
            npm("npm:foo@latest"),
            ("foo".into(), Some("latest".into()), false)
        );
        assert_eq!(
            npm("npm:foo@v1.0.0"),
            ("foo".into(), Some("v1.0.0".into()), true)
        );
    }

    #[test]
    fn exact_versions_and_ranges_as_semver_reads_them() {
        // `semver.valid` / `validRange` in Pi's copy of semver.
        for (v, exact, range) in [
            ("1.2.3", true, true),
            ("v1.2.3", true, true),
            ("=1.2.3", false, true),
            ("1.2", false, true),
            ("latest", false, false),
            ("^1.0.0", false, true),
            ("1.x", false, true),
            ("*", false, true),
            ("1.2.3-beta.1", true, true),
            (">=1 <2", false, true),
        ] {
            assert_eq!(is_exact_version(v), exact, "{v}");
            assert_eq!(Range::parse(v).is_ok(), range, "{v}");
        }
    }

    #[test]
    fn local_and_git_sources() {
        assert_eq!(parse_source("./x"), Source::Local("./x".into()));
        assert_eq!(
            parse_source("github:user/repo"),
            Source::Local("github:user/repo".into())
        );
        assert!(matches!(parse_source("git:localhost/a/b"), Source::Git(_)));
        let home = Path::new("/h");
        assert_eq!(identity("npm:@a/b@1", home, home), "npm:@a/b");
        assert_eq!(
            identity("git:github.com/u/r@v1", home, home),
            "git:github.com/u/r"
        );
        assert_eq!(
            identity("https://github.com/u/r", home, home),
            "git:github.com/u/r"
        );
        assert_eq!(identity("../p", Path::new("/a/b"), home), "local:/a/p");
    }
}
