//! `<agent-dir>/auth.json`: stored credentials per provider (`auth-storage.js`), and the files Pi
//! creates in the agent dir at startup.
//!
//! Only reading is implemented: `api_key` entries (`key` may be a literal, a `$VAR` template or a
//! `!command`, resolved once per registry like Pi's per-process cache; `env` adds variables for
//! that provider) and `oauth` entries, which count as configured for providers that offer OAuth.
//! Refreshing and writing entries back is [`crate::oauth`]'s job (under Pi's lock).

use super::config_value::ExplicitEnv;
use serde_json::{Map, Value};
use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// One stored credential.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredCredential {
    ApiKey {
        /// The raw `key` (unresolved).
        key: Option<String>,
        env: Option<ExplicitEnv>,
    },
    OAuth {
        /// The whole entry (`access`, `refresh`, `expires`, provider extras).
        fields: Map<String, Value>,
    },
    /// Any other `type`: Pi keeps it, and it disables the provider's other credentials.
    Other { kind: String },
}

/// The parsed file. `Invalid` keeps Pi's outcome for an unparsable file: every credential lookup
/// fails, so no provider is available.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthFile {
    Entries(Vec<(String, StoredCredential)>),
    Invalid(String),
}

impl Default for AuthFile {
    fn default() -> Self {
        AuthFile::Entries(Vec::new())
    }
}

impl AuthFile {
    pub(crate) fn load(path: &Path) -> AuthFile {
        match std::fs::read(path) {
            Ok(bytes) => AuthFile::parse(&String::from_utf8_lossy(&bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => AuthFile::default(),
            Err(e) => AuthFile::Invalid(e.to_string()),
        }
    }

    pub(crate) fn parse(text: &str) -> AuthFile {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        if text.is_empty() {
            return AuthFile::default();
        }
        let value = match pi_js::parse::parse_js_json(text) {
            Ok(v) => v,
            Err(e) => return AuthFile::Invalid(e),
        };
        // `data[provider]` on a non-object yields nothing for every provider.
        let Value::Object(entries) = value else {
            return AuthFile::default();
        };
        AuthFile::Entries(
            entries
                .into_iter()
                .filter_map(|(id, v)| Some((id, credential(v)?)))
                .collect(),
        )
    }

    pub(crate) fn get(&self, provider: &str) -> Result<Option<&StoredCredential>, String> {
        match self {
            AuthFile::Entries(e) => Ok(e.iter().find(|(k, _)| k == provider).map(|(_, c)| c)),
            AuthFile::Invalid(msg) => Err(msg.clone()),
        }
    }
}

fn credential(value: Value) -> Option<StoredCredential> {
    // Falsy entries (`null`, `false`, `0`, `""`) are "no credential" in Pi.
    let Value::Object(fields) = value else {
        return None;
    };
    Some(match fields.get("type").and_then(Value::as_str) {
        Some("api_key") => StoredCredential::ApiKey {
            key: fields
                .get("key")
                .and_then(Value::as_str)
                .map(str::to_string),
            env: fields.get("env").and_then(Value::as_object).cloned(),
        },
        Some("oauth") => StoredCredential::OAuth { fields },
        other => StoredCredential::Other {
            kind: other.unwrap_or_default().to_string(),
        },
    })
}

/// Creates `<agent-dir>/auth.json` and `<agent-dir>/models-store.json` as `{}` (mode 0600) when
/// missing, and the agent dir itself (mode 0700), as Pi does at startup.
pub fn ensure_agent_files(agent_dir: &Path) -> std::io::Result<()> {
    if !agent_dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(agent_dir)?;
    }
    for name in ["auth.json", "models-store.json"] {
        let path = agent_dir.join(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => f.write_all(b"{}")?,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn parses_api_key_oauth_and_unknown_entries() {
        let f = AuthFile::parse(
            r#"{"a": {"type": "api_key", "key": "$K", "env": {"X": "1"}},
                "b": {"type": "oauth", "access": "t", "refresh": "r", "expires": 1},
                "c": {"type": "weird"}, "d": null}"#,
        );
        let AuthFile::Entries(e) = f else {
            panic!("expected entries");
        };
        assert_eq!(e.len(), 3);
        assert_eq!(
            e[0].1,
            StoredCredential::ApiKey {
                key: Some("$K".into()),
                env: serde_json::json!({"X": "1"}).as_object().cloned(),
            }
        );
        assert!(matches!(e[1].1, StoredCredential::OAuth { .. }));
        assert_eq!(
            e[2].1,
            StoredCredential::Other {
                kind: "weird".into()
            }
        );
    }

    #[test]
    fn unparsable_file_is_invalid() {
        assert!(matches!(AuthFile::parse("{oops"), AuthFile::Invalid(_)));
        assert_eq!(AuthFile::parse(""), AuthFile::default());
    }

    #[test]
    fn ensure_creates_private_empty_files_once() {
        let dir = std::env::temp_dir().join(format!("pi-ai-ensure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        ensure_agent_files(&dir.join("agent")).unwrap();
        let auth = dir.join("agent/auth.json");
        assert_eq!(std::fs::read_to_string(&auth).unwrap(), "{}");
        let mode = std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&auth, "{\"x\":1}").unwrap();
        ensure_agent_files(&dir.join("agent")).unwrap();
        assert_eq!(std::fs::read_to_string(&auth).unwrap(), "{\"x\":1}");
        assert_eq!(
            std::fs::read_to_string(dir.join("agent/models-store.json")).unwrap(),
            "{}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
