//! Project trust (`docs/security.md`): whether the project's own settings and resources
//! (`.pi/settings.json`, `.pi/skills`, `.pi/prompts`, `.pi/SYSTEM.md`, `.agents/skills`, ...)
//! are used. Context files (`AGENTS.md`) load either way.
//!
//! Without a prompt (RPC, JSON and print modes) Pi decides, in order: `--approve`/`--no-approve`;
//! when the project has none of those resources, trusted (unless `trust.json` says otherwise);
//! the nearest saved decision in `<agentDir>/trust.json` for the cwd or a parent folder; then the
//! agent-dir setting `defaultProjectTrust`: `always` trusts, `ask` and `never` do not.
//! (Extensions answering the `project_trust` event come before the saved decision in Pi; we have
//! no extensions yet.)

use crate::cli::Diagnostic;
use crate::settings::DefaultProjectTrust;
use crate::settings::lock::FileLock;
use crate::settings::paths::{CONFIG_DIR_NAME, canonicalize_or_self, lexical_normalize};
use pi_js::parse::parse_js_json;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The `.pi` entries that make a folder need a trust decision.
const TRUST_REQUIRING_ENTRIES: [&str; 8] = [
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
];

/// Whether `cwd` has project resources that only load when trusted: one of the `.pi` entries,
/// or an `.agents/skills` folder in it or any parent (the user's `~/.agents/skills` excepted).
pub fn has_trust_requiring_resources(cwd: &Path, home: &Path) -> bool {
    let user_skills = canonicalize_or_self(home).join(".agents").join("skills");
    let cwd = canonicalize_or_self(cwd);
    let config = cwd.join(CONFIG_DIR_NAME);
    if TRUST_REQUIRING_ENTRIES
        .iter()
        .any(|e| config.join(e).exists())
    {
        return true;
    }
    cwd.ancestors().any(|dir| {
        let skills = dir.join(".agents").join("skills");
        skills != user_skills && skills.exists()
    })
}

/// `<agentDir>/trust.json`: saved decisions by canonical folder path (`true`, `false`; `null`
/// entries are ignored).
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    pub fn new(agent_dir: &Path) -> TrustStore {
        TrustStore {
            path: agent_dir.join("trust.json"),
        }
    }

    /// The decision saved for `cwd` or its nearest parent. `Err` carries Pi's message for an
    /// unreadable store.
    pub fn get(&self, cwd: &Path) -> Result<Option<bool>, String> {
        if !self.path.exists() {
            return Ok(None);
        }
        let _lock = FileLock::acquire(&self.path).map_err(|e| e.to_string())?;
        let data = self.read()?;
        let cwd = canonicalize_or_self(cwd);
        for dir in cwd.ancestors() {
            for (key, value) in &data {
                if lexical_normalize(Path::new(key)) == dir
                    && let Some(decision) = value.as_bool()
                {
                    return Ok(Some(decision));
                }
            }
        }
        Ok(None)
    }

    /// Saves (or with `None`, removes) the decision for `cwd`. Keys are written sorted, as Pi does.
    pub fn set(&self, cwd: &Path, decision: Option<bool>) -> Result<(), String> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let _lock = FileLock::acquire(&self.path).map_err(|e| e.to_string())?;
        let mut data = self.read()?;
        let key = canonicalize_or_self(cwd);
        data.retain(|k, _| lexical_normalize(Path::new(k)) != key);
        if let Some(d) = decision {
            data.insert(key.to_string_lossy().into_owned(), Value::Bool(d));
        }
        let mut entries: Vec<(String, Value)> = data.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted: Map<String, Value> = entries.into_iter().collect();
        let text = pi_js::json::to_js_string_pretty(&sorted).map_err(|e| e.to_string())?;
        std::fs::write(&self.path, format!("{text}\n")).map_err(|e| e.to_string())
    }

    fn read(&self) -> Result<Map<String, Value>, String> {
        let p = self.path.display();
        let text = match std::fs::read(&self.path) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(format!("Failed to read trust store {p}: {e}")),
        };
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let parsed =
            parse_js_json(text).map_err(|m| format!("Failed to read trust store {p}: {m}"))?;
        let Value::Object(data) = parsed else {
            return Err(format!("Invalid trust store {p}: expected an object"));
        };
        if let Some((key, _)) = data
            .iter()
            .find(|(_, v)| !matches!(v, Value::Bool(_) | Value::Null))
        {
            let key = serde_json::to_string(key).unwrap_or_default();
            return Err(format!(
                "Invalid trust store {p}: value for {key} must be true, false, or null"
            ));
        }
        Ok(data)
    }
}

/// The trust decision for a session in a mode without a trust prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustDecision {
    pub trusted: bool,
    /// Problems met on the way (an unreadable trust store), to print as startup warnings. Pi
    /// stops with an exception there; we report it and treat the store as empty.
    pub diagnostics: Vec<Diagnostic>,
}

/// Decides whether the project at `cwd` is trusted (see the module docs).
/// `needs_trust`: [`has_trust_requiring_resources`] for `cwd`, asked only when it matters;
/// `cli_override`: `--approve` → `Some(true)`, `--no-approve` → `Some(false)`;
/// `default_trust`: the agent-dir `defaultProjectTrust` setting.
pub fn resolve_project_trust(
    cwd: &Path,
    agent_dir: &Path,
    needs_trust: impl FnOnce() -> bool,
    cli_override: Option<bool>,
    default_trust: DefaultProjectTrust,
) -> TrustDecision {
    let mut diagnostics = Vec::new();
    if let Some(o) = cli_override {
        return TrustDecision {
            trusted: o,
            diagnostics,
        };
    }
    let saved = match TrustStore::new(agent_dir).get(cwd) {
        Ok(d) => d,
        Err(message) => {
            diagnostics.push(Diagnostic::warning(message));
            None
        }
    };
    let trusted = if !needs_trust() {
        saved.unwrap_or(true)
    } else {
        saved.unwrap_or(default_trust == DefaultProjectTrust::Always)
    };
    TrustDecision {
        trusted,
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    fn decide(tmp: &TempDir, cli: Option<bool>, default: DefaultProjectTrust) -> bool {
        let cwd = tmp.path().join("work/repo/pkg");
        resolve_project_trust(
            &cwd,
            &tmp.path().join("agent"),
            || has_trust_requiring_resources(&cwd, &tmp.path().join("home")),
            cli,
            default,
        )
        .trusted
    }

    #[test]
    fn decisions_in_pis_order() {
        let tmp = TempDir::new();
        tmp.mkdir("work/repo/pkg");
        // Nothing to protect: trusted.
        assert!(decide(&tmp, None, DefaultProjectTrust::Ask));
        tmp.write("work/repo/pkg/.pi/settings.json", "{}");
        assert!(!decide(&tmp, None, DefaultProjectTrust::Ask));
        assert!(!decide(&tmp, None, DefaultProjectTrust::Never));
        assert!(decide(&tmp, None, DefaultProjectTrust::Always));
        assert!(decide(&tmp, Some(true), DefaultProjectTrust::Never));
        assert!(!decide(&tmp, Some(false), DefaultProjectTrust::Always));
        // A saved decision for a parent folder applies; the nearest one wins.
        let store = TrustStore::new(&tmp.path().join("agent"));
        store
            .set(&tmp.path().join("work/repo"), Some(true))
            .unwrap();
        assert!(decide(&tmp, None, DefaultProjectTrust::Never));
        store
            .set(&tmp.path().join("work/repo/pkg"), Some(false))
            .unwrap();
        assert!(!decide(&tmp, None, DefaultProjectTrust::Always));
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("agent/trust.json")).unwrap(),
            format!(
                "{{\n  \"{0}/work/repo\": true,\n  \"{0}/work/repo/pkg\": false\n}}\n",
                tmp.path().display()
            )
        );
    }

    #[test]
    fn agents_skills_in_a_parent_need_trust_except_the_users() {
        let tmp = TempDir::new();
        tmp.mkdir("home/.agents/skills");
        tmp.mkdir("work/x");
        assert!(!has_trust_requiring_resources(
            &tmp.path().join("home"),
            &tmp.path().join("home")
        ));
        tmp.mkdir("work/.agents/skills");
        assert!(has_trust_requiring_resources(
            &tmp.path().join("work/x"),
            &tmp.path().join("home")
        ));
        // A bare .pi folder does not.
        tmp.mkdir("other/.pi");
        assert!(!has_trust_requiring_resources(
            &tmp.path().join("other"),
            &tmp.path().join("home")
        ));
    }

    #[test]
    fn a_broken_store_is_reported() {
        let tmp = TempDir::new();
        tmp.write("work/repo/pkg/.pi/skills/x.md", "x");
        tmp.write("agent/trust.json", "{\"/a\": 1}");
        let cwd = tmp.path().join("work/repo/pkg");
        let d = resolve_project_trust(
            &cwd,
            &tmp.path().join("agent"),
            || has_trust_requiring_resources(&cwd, &tmp.path().join("home")),
            None,
            DefaultProjectTrust::Always,
        );
        assert!(d.trusted);
        assert_eq!(
            d.diagnostics[0].message,
            format!(
                "Invalid trust store {}/agent/trust.json: value for \"/a\" must be true, false, or null",
                tmp.path().display()
            )
        );
    }
}
