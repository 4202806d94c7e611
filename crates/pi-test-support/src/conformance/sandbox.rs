//! The hermetic environment of one run: a temp root with `home/`, `agent/`, `work/` and `tmp/`,
//! the fixture files, and the list of files the run wrote or changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::scenario::{FileContent, Scenario};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct Sandbox {
    pub root: PathBuf,
    pub home: PathBuf,
    pub agent: PathBuf,
    pub work: PathBuf,
    pub tmp: PathBuf,
    /// Contents of every file before the run (absolute path → bytes).
    before: HashMap<PathBuf, Vec<u8>>,
    keep: bool,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// A file the run created, changed or deleted.
#[derive(Debug, Clone, PartialEq)]
pub enum FileChange {
    Written(PathBuf, Vec<u8>),
    Deleted(PathBuf),
}

fn err(path: &Path, e: std::io::Error) -> String {
    format!("{}: {e}", path.display())
}

/// The default `models.json`: the two mock providers of the spec README.
pub fn default_models(port: u16) -> Value {
    json!({
        "providers": {
            "mock-openai": {
                "baseUrl": format!("http://127.0.0.1:{port}/v1"),
                "api": "openai-completions",
                "apiKey": "dummy",
                "models": [{"id": "mock-gpt", "contextWindow": 128000, "maxTokens": 4096}]
            },
            "mock-anthropic": {
                "baseUrl": format!("http://127.0.0.1:{port}"),
                "api": "anthropic-messages",
                "apiKey": "dummy",
                "models": [{"id": "mock-claude", "reasoning": true, "input": ["text", "image"],
                    "contextWindow": 200000, "maxTokens": 8192}]
            }
        }
    })
}

/// Replaces `{PORT}` in every string of `v`.
fn with_port(v: &Value, port: u16) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("{PORT}", &port.to_string())),
        Value::Array(a) => Value::Array(a.iter().map(|x| with_port(x, port)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), with_port(x, port)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// [`SANDBOX_DIR_ENV`] when set; else `/tmp` where it exists (whatever `TMPDIR` says), else the
/// system temp dir.
fn temp_base() -> PathBuf {
    if let Some(dir) = std::env::var_os(SANDBOX_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let tmp = Path::new("/tmp");
    if cfg!(unix) && tmp.is_dir() {
        tmp.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Where sandboxes are made instead of `/tmp`: `bench/run` uses it to see what the file system
/// costs the agents (e.g. `/dev/shm`). Conformance fixtures assume `/tmp` (token counts include
/// the path's length).
pub const SANDBOX_DIR_ENV: &str = "PI_SANDBOX_DIR";

impl Sandbox {
    pub fn create(keep: bool) -> Result<Sandbox, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        // Token estimates (compaction results, context usage) count the cwd in the system
        // prompt, so the root has the same length in every run and on every machine.
        let root = temp_base().join(format!(
            "pi-conformance-{:010}-{:06}-{nanos:09}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let sb = Sandbox {
            home: root.join("home"),
            agent: root.join("agent"),
            work: root.join("work"),
            tmp: root.join("tmp"),
            root,
            before: HashMap::new(),
            keep,
        };
        for d in [&sb.home, &sb.agent, &sb.work, &sb.tmp] {
            std::fs::create_dir_all(d).map_err(|e| err(d, e))?;
        }
        Ok(sb)
    }

    /// Writes models.json, settings.json and the fixture files, then snapshots the tree.
    pub fn prepare(&mut self, scenario: &Scenario, port: u16) -> Result<(), String> {
        let models = match &scenario.models {
            Some(m) => with_port(m, port),
            None => default_models(port),
        };
        write(&self.agent.join("models.json"), pretty(&models).as_bytes())?;
        if let Some(s) = &scenario.settings {
            write(&self.agent.join("settings.json"), pretty(s).as_bytes())?;
        }
        for (rel, content) in &scenario.files {
            write(&self.work.join(rel), &self.fixture(content, port)?)?;
        }
        for (rel, content) in &scenario.agent_files {
            write(&self.agent.join(rel), &self.fixture(content, port)?)?;
        }
        self.before = walk(&self.root)?
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap_or_default();
                (p, bytes)
            })
            .collect();
        Ok(())
    }

    /// Variables available to steps and flags as `${NAME}`.
    pub fn vars(&self, port: u16) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        v.insert("ROOT".into(), self.root.display().to_string());
        v.insert("CWD".into(), self.work.display().to_string());
        v.insert("AGENT".into(), self.agent.display().to_string());
        v.insert("HOME".into(), self.home.display().to_string());
        v.insert("TMP".into(), self.tmp.display().to_string());
        v.insert("PORT".into(), port.to_string());
        if let Ok(p) = crate::mcp_server::binary_path() {
            v.insert("MCP_SERVER".into(), p.display().to_string());
        }
        v
    }

    /// Literal substitutions for the normalizer.
    pub fn substitutions(&self, port: u16, package_dir: Option<&str>) -> Vec<(String, String)> {
        let work = self.work.display().to_string();
        let encoded = work.trim_start_matches('/').replace(['/', '\\', ':'], "-");
        let mut subs = vec![
            (work, "<cwd>".to_string()),
            (encoded, "<cwd-encoded>".to_string()),
            (self.agent.display().to_string(), "<agent>".to_string()),
            (self.home.display().to_string(), "<home>".to_string()),
            (self.tmp.display().to_string(), "<tmp>".to_string()),
            (self.root.display().to_string(), "<root>".to_string()),
            (format!("127.0.0.1:{port}"), "127.0.0.1:<port>".to_string()),
        ];
        if let Ok(p) = crate::mcp_server::binary_path() {
            subs.push((p.display().to_string(), "<mcp-server>".to_string()));
        }
        if let Some(p) = package_dir {
            subs.push((p.to_string(), "<pi-package>".to_string()));
        }
        subs
    }

    /// Files written, changed or deleted since [`Sandbox::prepare`], except the temp dir and
    /// the empty credential stores Pi creates at startup.
    pub fn changes(&self) -> Result<Vec<FileChange>, String> {
        let mut out = Vec::new();
        let now = walk(&self.root)?;
        for p in &now {
            if p.starts_with(&self.tmp) || self.ignored(p) {
                continue;
            }
            let bytes = std::fs::read(p).map_err(|e| err(p, e))?;
            if self.before.get(p) != Some(&bytes) {
                if self.is_empty_store(p, &bytes) {
                    continue;
                }
                out.push(FileChange::Written(p.clone(), bytes));
            }
        }
        for p in self.before.keys() {
            if !now.contains(p) {
                out.push(FileChange::Deleted(p.clone()));
            }
        }
        Ok(out)
    }

    /// Lock files are transient, and `~/.cache` holds what a program keeps for itself (our
    /// extension host's installed files), `~/.npm` npm's cache and debug logs (named by the
    /// time), not anything the protocol says.
    fn ignored(&self, p: &Path) -> bool {
        p.starts_with(self.home.join(".cache"))
            || p.starts_with(self.home.join(".npm"))
            || p.components()
                .any(|c| c.as_os_str().to_string_lossy().ends_with(".lock"))
    }

    fn is_empty_store(&self, p: &Path, bytes: &[u8]) -> bool {
        let stores = [
            self.agent.join("auth.json"),
            self.agent.join("models-store.json"),
        ];
        stores.iter().any(|s| s == p) && String::from_utf8_lossy(bytes).trim() == "{}"
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| err(parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| err(path, e))
}

/// Every regular file under `dir` (symlinks not followed).
pub fn walk(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(err(&d, e)),
        };
        for entry in entries.flatten() {
            let p = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Fixture bytes with `${MCP_SERVER}` replaced by the test MCP server's path, so an `mcp.json`
/// fixture can start it (other `${...}` are left alone: `mcp.json` has its own `${VAR}` syntax).
impl Sandbox {
    /// A fixture file's bytes; in text files `${CWD}`, `${AGENT}` and `${HOME}` name this run's
    /// folders (a session file records its cwd), `${MCP_SERVER}` the test MCP server and
    /// `${PORT}` the mock's port (a stored llama.cpp server address).
    fn fixture(&self, content: &FileContent, port: u16) -> Result<Vec<u8>, String> {
        let FileContent::Text(t) = content else {
            return content.bytes();
        };
        let mut text = t
            .replace("${CWD}", &self.work.display().to_string())
            .replace("${AGENT}", &self.agent.display().to_string())
            .replace("${HOME}", &self.home.display().to_string())
            .replace("${PORT}", &port.to_string());
        if text.contains("${MCP_SERVER}") {
            let path = crate::mcp_server::binary_path()?;
            text = text.replace("${MCP_SERVER}", &path.display().to_string());
        }
        Ok(text.into_bytes())
    }
}
