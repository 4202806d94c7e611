//! `<agent-dir>/mcp-auth.json`: each OAuth server's state (discovery, client registration,
//! tokens, the pending PKCE verifier and `state`), keyed `mcp__<server>|<url>` so servers sharing a
//! URL keep separate accounts. A state stored under the URL alone (older Pi versions) is taken
//! over by the first server that loads it.
//!
//! The file is changed under the lock Pi takes on credential files (a `<path>.lock` directory,
//! see `pi_registry::oauth::store`) and written whole as `JSON.stringify(states, null, 2)` plus a
//! newline. Token refreshes also take a per-server lock (`mcp-auth-refresh-<hash>.lock` in the
//! agent dir), so two processes never refresh with the same rotating refresh token.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A refresh lock its holder stopped renewing (the process was killed) is taken over after this.
const REFRESH_LOCK_STALE: Duration = Duration::from_secs(20);
/// How long to wait for another process's refresh: longer than a stale lock lives.
const REFRESH_LOCK_WAIT: Duration = Duration::from_secs(25);
const REFRESH_LOCK_RETRY: Duration = Duration::from_millis(100);

/// Another process held the refresh lock for the whole wait.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Another process is refreshing the MCP server's tokens")]
pub struct RefreshLockBusy;

/// The credential file of one agent dir.
#[derive(Debug, Clone)]
pub struct CredentialStore {
    path: PathBuf,
    lock_dir: PathBuf,
}

/// `String(new URL(url))`: the WHATWG serialization Pi keys states by.
pub fn normalize_url(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(|_| url.to_string(), |u| u.to_string())
}

fn keys(name: &str, server_url: &str) -> (String, String) {
    let legacy = normalize_url(server_url);
    (
        format!("{}|{legacy}", crate::naming::namespace(name)),
        legacy,
    )
}

fn parse_states(text: &str) -> Map<String, Value> {
    let text = text.trim_start_matches('\u{feff}');
    if pi_js::trim(text).is_empty() {
        return Map::new();
    }
    match pi_js::parse::parse_js_json(text) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

impl CredentialStore {
    pub fn new(agent_dir: &Path) -> CredentialStore {
        CredentialStore {
            path: agent_dir.join("mcp-auth.json"),
            lock_dir: agent_dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn for_server(&self, name: &str, server_url: &str) -> ServerStore {
        let (key, legacy_key) = keys(name, server_url);
        ServerStore {
            store: self.clone(),
            key,
            legacy_key,
            server_url: normalize_url(server_url),
        }
    }

    /// Runs `f` on every state under the file lock; writes the file when `f` says it changed.
    async fn with_states<T>(
        &self,
        f: impl FnOnce(&mut Map<String, Value>) -> (T, bool),
    ) -> Result<T, String> {
        let _lock = pi_registry::oauth::store::lock(&self.path)
            .await
            .map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let mut states = parse_states(&text);
        let (result, changed) = f(&mut states);
        if changed {
            write(&self.path, &states).map_err(|e| e.to_string())?;
        }
        Ok(result)
    }

    /// The stored tokens of a server, to notice sign-ins another process did. Does not take
    /// over a legacy state.
    pub async fn tokens(&self, name: &str, server_url: &str) -> Option<Value> {
        let (key, legacy) = keys(name, server_url);
        self.with_states(|states| {
            let state = states.get(&key).or_else(|| states.get(&legacy));
            (state.and_then(|s| s.get("tokens")).cloned(), false)
        })
        .await
        .ok()
        .flatten()
    }

    /// Whether credentials were stored for the server (they are gone now). Removes a legacy
    /// state the server would take over.
    pub async fn remove(&self, name: &str, server_url: &str) -> Result<bool, String> {
        let (key, legacy) = keys(name, server_url);
        self.with_states(|states| {
            let stored = if states.contains_key(&key) {
                key
            } else if states.contains_key(&legacy) {
                legacy
            } else {
                return (false, false);
            };
            states.shift_remove(&stored);
            (true, true)
        })
        .await
    }
}

fn write(path: &Path, states: &Map<String, Value>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = pi_js::json::to_js_string_pretty(states).map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(format!("{text}\n").as_bytes())
}

/// One server's state in the file.
#[derive(Debug, Clone)]
pub struct ServerStore {
    store: CredentialStore,
    key: String,
    legacy_key: String,
    server_url: String,
}

impl ServerStore {
    /// The server URL as the state records it.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The stored state as written (taking over a legacy state), or `None`.
    pub async fn load_raw(&self) -> Result<Option<Map<String, Value>>, String> {
        let (key, legacy) = (self.key.clone(), self.legacy_key.clone());
        self.store
            .with_states(|states| {
                if let Some(Value::Object(s)) = states.get(&key) {
                    return (Some(s.clone()), false);
                }
                let Some(Value::Object(old)) = states.shift_remove(&legacy) else {
                    return (None, false);
                };
                states.insert(key, Value::Object(old.clone()));
                (Some(old), true)
            })
            .await
    }

    /// The state for this exact server URL: a state recorded for another URL is ignored, so
    /// credentials never travel to another server. Starts as `{serverUrl}`.
    pub async fn load(&self) -> Result<Map<String, Value>, String> {
        let raw = self.load_raw().await?;
        Ok(match raw {
            Some(s) if s.get("serverUrl").and_then(Value::as_str) == Some(&self.server_url) => s,
            _ => {
                let mut fresh = Map::new();
                fresh.insert("serverUrl".into(), Value::String(self.server_url.clone()));
                fresh
            }
        })
    }

    /// Replaces the stored state.
    pub async fn save(&self, state: Map<String, Value>) -> Result<(), String> {
        let key = self.key.clone();
        self.store
            .with_states(|states| {
                states.insert(key, Value::Object(state));
                ((), true)
            })
            .await
    }

    /// Changes this server's own state (see [`ServerStore::load`]) with `f`.
    pub async fn update(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Result<(), String> {
        let mut state = self.load().await?;
        f(&mut state);
        self.save(state).await
    }

    /// Runs `work` holding the server's refresh lock.
    pub async fn with_refresh_lock<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, RefreshLockBusy> {
        let hash: String = crate::naming::sha256(self.key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = self
            .store
            .lock_dir
            .join(format!("mcp-auth-refresh-{}.lock", &hash[..16]));
        let _ = std::fs::create_dir_all(&self.store.lock_dir);
        let deadline = tokio::time::Instant::now() + REFRESH_LOCK_WAIT;
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if is_stale(&dir) {
                        let _ = std::fs::remove_dir(&dir);
                        continue;
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(RefreshLockBusy);
                    }
                    tokio::time::sleep(REFRESH_LOCK_RETRY).await;
                }
                // A lock that cannot be made at all (read-only agent dir) only loses the
                // protection against another process refreshing at the same moment.
                Err(_) => return Ok(work.await),
            }
        }
        let held = LockDir(dir);
        let result = work.await;
        drop(held);
        Ok(result)
    }
}

struct LockDir(PathBuf);

impl Drop for LockDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn is_stale(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > REFRESH_LOCK_STALE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn states_are_keyed_by_namespace_and_url_and_legacy_ones_taken_over() {
        let dir = pi_test_support::TempDir::new();
        let store = CredentialStore::new(dir.path());
        let path = store.path().to_path_buf();
        std::fs::write(
            &path,
            r#"{"http://h:1/mcp": {"serverUrl": "http://h:1/mcp", "tokens": {"access_token": "old"}}}"#,
        )
        .ok();
        let a = store.for_server("my-srv", "http://h:1/mcp");
        let state = a.load().await.unwrap_or_default();
        assert_eq!(state["tokens"], json!({"access_token": "old"}));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            text,
            "{\n  \"mcp__my_srv|http://h:1/mcp\": {\n    \"serverUrl\": \"http://h:1/mcp\",\n    \"tokens\": {\n      \"access_token\": \"old\"\n    }\n  }\n}\n"
        );
        // Another server at the same URL starts afresh.
        let b = store.for_server("other", "http://h:1/mcp");
        assert_eq!(
            Value::Object(b.load().await.unwrap_or_default()),
            json!({"serverUrl": "http://h:1/mcp"})
        );
        assert_eq!(
            store.tokens("my-srv", "http://h:1/mcp").await,
            Some(json!({"access_token": "old"}))
        );
        // A bare origin is keyed with its slash, as `String(new URL(...))` writes it.
        assert_eq!(normalize_url("http://h:1"), "http://h:1/");
        assert_eq!(store.remove("my-srv", "http://h:1/mcp").await, Ok(true));
        assert_eq!(store.remove("my-srv", "http://h:1/mcp").await, Ok(false));
        let busy = a.with_refresh_lock(async { 1 }).await;
        assert_eq!(busy, Ok(1));
    }
}
