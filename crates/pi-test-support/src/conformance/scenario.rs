//! The scenario file format (`conformance/scenarios/<name>.json`). See `conformance/README.md`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::mock::Reply;

/// One conformance scenario: the environment, the LLM script and the RPC input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// File stem; filled in by [`Scenario::load`].
    #[serde(skip)]
    pub name: String,
    pub description: String,
    /// Set when the golden is our hand-edited expected output rather than Pi's (see DEVIATIONS.md).
    #[serde(default)]
    pub deviation: Option<String>,
    /// Set for a scenario of pi in Rust's protocol additions (#21): what it pins down. Its golden
    /// is ours, recorded from our binary (`record --ours`) and reviewed; Pi's recording, where
    /// the additions' commands get `Unknown command`, goes to `<name>.pi.golden` as for a
    /// deviation.
    #[serde(default)]
    pub addition: Option<String>,
    /// `json` or `print` (`-p`) instead of `--mode rpc`; the prompt then comes from `args`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Flags after `--mode rpc`.
    #[serde(default = "default_args")]
    pub args: Vec<String>,
    /// Replaces the default `models.json`; the string `{PORT}` is replaced by the mock's port.
    #[serde(default)]
    pub models: Option<Value>,
    /// Written to `<agent-dir>/settings.json`.
    #[serde(default)]
    pub settings: Option<Value>,
    /// Working-directory fixture files (relative path → content).
    #[serde(default)]
    pub files: BTreeMap<String, FileContent>,
    /// Agent-directory fixture files (relative path → content).
    #[serde(default)]
    pub agent_files: BTreeMap<String, FileContent>,
    /// The mock's replies, one consumed per request.
    #[serde(default)]
    pub llm: Vec<Reply>,
    #[serde(default)]
    pub chunk_delay_ms: Option<u64>,
    #[serde(default)]
    pub header_delay_ms: Option<u64>,
    /// The RPC input and the points where the runner waits.
    pub steps: Vec<Step>,
    /// How long to wait for the process to exit after the last step (default 10 s).
    #[serde(default)]
    pub exit_timeout_ms: Option<u64>,
    /// Record stderr in the golden too (`stderr "<line>"` lines before `exit`), for scenarios
    /// whose contract is a diagnostic (startup failures). Off by default: stderr is free-form
    /// logging otherwise.
    #[serde(default)]
    pub stderr: bool,
    /// With `stderr`, record only the lines starting with one of these prefixes (for example
    /// `Warning: `), when the rest is tool output that varies from run to run (npm, git).
    #[serde(default)]
    pub stderr_prefixes: Vec<String>,
    /// Environment variables set after the runner's own (`PI_OFFLINE` can be overridden with
    /// an empty value to let startup install packages); `${...}` variables are substituted.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names removed from the runner's environment: `PI_OFFLINE`, so that startup refreshes
    /// model catalogs (scenarios that do so point every address they use at the mock).
    #[serde(default)]
    pub env_remove: Vec<String>,
    /// Fixed JSON answers of the mock by `"<METHOD> <path and query>"` (a llama.cpp server's
    /// `GET /models`), beside the scripted LLM replies; `${...}` in strings are substituted.
    #[serde(default)]
    pub routes: BTreeMap<String, Value>,
    /// Lists the mock's requests sorted instead of in arrival order, for scenarios whose agent
    /// sends some requests at once (llama.cpp classification tokenizes labels concurrently).
    #[serde(default)]
    pub sort_requests: bool,
}

fn default_args() -> Vec<String> {
    ["--provider", "mock-openai", "--model", "mock-gpt"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Fixture content: text, or `{"base64": "..."}` for binary files.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FileContent {
    Text(String),
    Base64 { base64: String },
}

impl FileContent {
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            FileContent::Text(t) => Ok(t.as_bytes().to_vec()),
            FileContent::Base64 { base64 } => decode_base64(base64),
        }
    }
}

/// One step of the RPC input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Write the JSON value compactly plus `\n`. `${NAME}` in strings is substituted.
    Send(Value),
    /// Write this text verbatim (one write). `${NAME}` is substituted.
    Raw(String),
    /// Write these bytes verbatim (one write), e.g. invalid UTF-8.
    RawBytes(Vec<u8>),
    /// Wait for a stdout record.
    Wait(Matcher),
    /// Wait until stdout has been quiet for this many ms and the mock serves no request.
    Idle(u64),
    OpenGate(String),
    /// Wait until a mock stream is held at this gate.
    AwaitGate(String),
    Sleep(u64),
    CloseStdin(bool),
    /// Send a signal by name (`TERM`, `HUP`, `INT`).
    Signal(String),
}

/// Selects a stdout record. Every given criterion must hold. Waiting for the same matcher twice
/// waits for its second occurrence (count from the start of the run), unless `nth` says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub command: Option<String>,
    /// JSON pointer → expected value.
    #[serde(default)]
    pub fields: BTreeMap<String, Value>,
    /// 1-based occurrence to wait for.
    #[serde(default)]
    pub nth: Option<usize>,
    /// Variables to capture from the matched record: name → JSON pointer.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
}

impl Matcher {
    pub fn matches(&self, record: &Value) -> bool {
        if let Some(k) = &self.kind
            && record.get("type").and_then(Value::as_str) != Some(k.as_str())
        {
            return false;
        }
        if let Some(id) = &self.id
            && record.get("id") != Some(id)
        {
            return false;
        }
        if let Some(c) = &self.command
            && record.get("command").and_then(Value::as_str) != Some(c.as_str())
        {
            return false;
        }
        self.fields
            .iter()
            .all(|(ptr, want)| record.pointer(ptr) == Some(want))
    }

    /// The matcher without `nth`/`capture`, used to count earlier waits for the same thing.
    pub fn identity(&self) -> Matcher {
        Matcher {
            nth: None,
            capture: BTreeMap::new(),
            ..self.clone()
        }
    }

    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(k) = &self.kind {
            parts.push(format!("type={k}"));
        }
        if let Some(id) = &self.id {
            parts.push(format!("id={id}"));
        }
        if let Some(c) = &self.command {
            parts.push(format!("command={c}"));
        }
        for (p, v) in &self.fields {
            parts.push(format!("{p}={v}"));
        }
        parts.join(" ")
    }
}

/// Name prefix of the scenarios of pi in Rust's protocol additions (see [`Scenario::addition`]).
pub const ADDITION_PREFIX: &str = "addition_";

impl Scenario {
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut s: Scenario =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        s.name = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The name says it too, so a listing or a golden's file name shows what is not Pi's.
        if s.addition.is_some() != s.name.starts_with(ADDITION_PREFIX) {
            return Err(format!(
                "{}: a scenario has the `addition` field exactly when its name starts with `{ADDITION_PREFIX}`",
                path.display()
            ));
        }
        if s.addition.is_some() && s.deviation.is_some() {
            return Err(format!(
                "{}: `addition` and `deviation` exclude each other",
                path.display()
            ));
        }
        Ok(s)
    }

    /// Whether the compared golden is ours rather than Pi's recording: a deviation's
    /// (hand-edited) or an addition's (recorded from our binary). Pi's own recording of such a
    /// scenario is `<name>.pi.golden`.
    pub fn golden_is_ours(&self) -> bool {
        self.deviation.is_some() || self.addition.is_some()
    }

    /// All scenarios of a directory, sorted by name.
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, String> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths.iter().map(|p| Scenario::load(p)).collect()
    }
}

/// Standard base64 (with or without padding).
pub fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' | b' ' => continue,
            _ => return Err(format!("invalid base64 character {:?}", c as char)),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

impl Scenario {
    /// Whether the agent loads TypeScript/JavaScript extensions (fixture files of those kinds).
    pub fn uses_extensions(&self) -> bool {
        let code = |name: &String| {
            [".ts", ".js", ".mjs", ".cjs"]
                .iter()
                .any(|ext| name.ends_with(ext))
        };
        self.files.keys().any(code) || self.agent_files.keys().any(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_and_matchers_parse() {
        let s: Scenario = serde_json::from_value(json!({
            "description": "d",
            "llm": [{"text": "pong"}],
            "steps": [
                {"send": {"id": "1", "type": "prompt", "message": "hi"}},
                {"wait": {"type": "response", "id": "1", "capture": {"e": "/data/x"}}},
                {"raw": "{\"type\":\"get_state\"}\r\n"},
                {"raw_bytes": [255, 10]},
                {"idle": 200},
                {"open_gate": "g"},
                {"close_stdin": true}
            ]
        }))
        .unwrap();
        assert_eq!(s.args[0], "--provider");
        assert_eq!(s.steps.len(), 7);
        let Step::Wait(m) = &s.steps[1] else { panic!() };
        assert!(m.matches(&json!({"type": "response", "id": "1"})));
        assert!(!m.matches(&json!({"type": "response", "id": 1})));
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("AAEC").unwrap(), vec![0, 1, 2]);
    }
}
