//! The registry against answers recorded from Pi 1.6.0 (`scripts/record-registry.mjs`).
//!
//! Each fixture case under `tests/fixtures/registry/cases/` is an agent dir, environment, CLI
//! flags and a list of model/thinking RPC commands. The test runs startup selection and a small
//! session simulator on our registry and compares, line for line, the RPC output Pi produced
//! (`get_state` reduced to `model` and `thinkingLevel`), the startup diagnostics on stderr, the
//! exit status, and `--list-models` output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::{Model, ThinkingLevel};
use pi_registry::{
    DiagnosticKind, Env, LoadOptions, ModelRegistry, ModelSettings, RequestAuth, ScopedModel,
    StartupRequest, clamp_thinking_str, ensure_agent_files, model_not_found, next_thinking_level,
    no_api_key_found, supported_thinking_levels, thinking_for_model_switch,
};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/registry/cases")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn read_json(path: &Path) -> Value {
    parse_js_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn settings_of(agent: &Path) -> (ModelSettings, Option<Vec<String>>) {
    let path = agent.join("settings.json");
    if !path.exists() {
        return (ModelSettings::default(), None);
    }
    let s = read_json(&path);
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
    let levels = s
        .get("modelThinkingLevels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let settings = ModelSettings {
        default_provider: text("defaultProvider"),
        default_model: text("defaultModel"),
        default_thinking_level: text("defaultThinkingLevel"),
        model_thinking_levels: levels,
    };
    (settings, s.get("enabledModels").map(|v| strings(Some(v))))
}

fn request_from_args(args: &[String]) -> StartupRequest {
    let mut req = StartupRequest::default();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned();
        match args[i].as_str() {
            "--provider" => req.cli_provider = value,
            "--model" => req.cli_model = value,
            "--thinking" => req.cli_thinking = value.as_deref().and_then(ThinkingLevel::parse),
            "--api-key" => req.cli_api_key = value,
            "--models" => {
                req.scope_patterns = value.map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
            }
            other => panic!("unsupported flag in fixture: {other}"),
        }
        i += 2;
    }
    req
}

/// Pi's AgentSession, reduced to model and thinking-level state.
struct Session<'a> {
    registry: &'a ModelRegistry,
    settings: ModelSettings,
    model: Arc<Model>,
    thinking: ThinkingLevel,
    scoped: Vec<ScopedModel>,
    out: Vec<String>,
    /// Headers a prompt's request would carry (names lowercased, only `record` ones kept).
    record: Vec<String>,
    requests: Vec<Value>,
}

fn model_value(m: &Model) -> Value {
    serde_json::to_value(m).unwrap()
}

impl Session<'_> {
    fn respond(&mut self, id: &Value, command: &str, data: Option<Value>) {
        let mut r = Map::new();
        r.insert("id".into(), id.clone());
        r.insert("type".into(), "response".into());
        r.insert("command".into(), command.into());
        r.insert("success".into(), true.into());
        if let Some(d) = data {
            r.insert("data".into(), d);
        }
        self.out.push(to_js_string(&Value::Object(r)).unwrap());
    }

    fn fail(&mut self, id: &Value, command: &str, error: String) {
        let r = json!({"id": id, "type": "response", "command": command, "success": false, "error": error});
        self.out.push(to_js_string(&r).unwrap());
    }

    /// `setThinkingLevel`: clamps, and announces a change.
    fn set_thinking(&mut self, level: &str) {
        let effective = clamp_thinking_str(&self.model, level);
        if effective != self.thinking {
            self.thinking = effective;
            self.out.push(format!(
                r#"{{"type":"thinking_level_changed","level":"{}"}}"#,
                effective.as_str()
            ));
        }
    }

    fn switch_to(&mut self, model: Arc<Model>, explicit: Option<ThinkingLevel>) {
        let level = thinking_for_model_switch(&model, explicit, &self.settings, self.thinking);
        self.model = model;
        self.set_thinking(level.as_str());
    }

    fn run(&mut self, cmd: &Value) {
        let id = cmd.get("id").cloned().unwrap_or(Value::Null);
        let kind = cmd["type"].as_str().unwrap();
        let field = |k: &str| {
            cmd.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match kind {
            "get_available_models" => {
                let models: Vec<Value> = self
                    .registry
                    .available_models()
                    .iter()
                    .map(|m| model_value(m))
                    .collect();
                self.respond(&id, kind, Some(json!({ "models": models })));
            }
            "get_state" => {
                let data = json!({"model": model_value(&self.model), "thinkingLevel": self.thinking.as_str()});
                self.respond(&id, kind, Some(data));
            }
            "set_model" => {
                let (provider, model_id) = (field("provider"), field("modelId"));
                match self.registry.find_available(&provider, &model_id) {
                    None => self.fail(&id, kind, model_not_found(&provider, &model_id)),
                    Some(model) => {
                        self.switch_to(model.clone(), None);
                        self.respond(&id, kind, Some(model_value(&model)));
                    }
                }
            }
            "cycle_model" => match self.registry.cycle_target(&self.model, &self.scoped, true) {
                None => self.respond(&id, kind, Some(Value::Null)),
                Some((model, explicit, is_scoped)) => {
                    self.switch_to(model.clone(), explicit);
                    let data = json!({"model": model_value(&model), "thinkingLevel": self.thinking.as_str(), "isScoped": is_scoped});
                    self.respond(&id, kind, Some(data));
                }
            },
            "get_available_thinking_levels" => {
                let levels: Vec<&str> = supported_thinking_levels(&self.model)
                    .iter()
                    .map(|l| l.as_str())
                    .collect();
                self.respond(&id, kind, Some(json!({ "levels": levels })));
            }
            "set_thinking_level" => {
                self.set_thinking(&field("level"));
                self.respond(&id, kind, None);
            }
            "cycle_thinking_level" => match next_thinking_level(&self.model, self.thinking) {
                None => self.respond(&id, kind, Some(Value::Null)),
                Some(level) => {
                    self.set_thinking(level.as_str());
                    self.respond(&id, kind, Some(json!({ "level": level.as_str() })));
                }
            },
            "prompt" => self.prompt(&id),
            other => panic!("unsupported command in fixture: {other}"),
        }
    }
}

impl Session<'_> {
    /// Prompt preflight, then the request's credentials: an error becomes the failed assistant
    /// message, success the request the mock server saw.
    fn prompt(&mut self, id: &Value) {
        if !self.registry.has_configured_auth(&self.model.provider) {
            let message = no_api_key_found(&self.model.provider, self.registry.docs_dir());
            return self.fail(id, "prompt", message);
        }
        self.respond(id, "prompt", Some(json!({"disposition": "started"})));
        match self.registry.request_auth(&self.model) {
            Err(e) => self.out.push(
                to_js_string(&json!({"type": "assistant_error", "errorMessage": e.to_string()}))
                    .unwrap(),
            ),
            Ok(auth) => {
                let request = self.wire_request(&auth);
                self.requests.push(request);
            }
        }
    }

    /// What the OpenAI / Anthropic SDKs put on the wire: their key header, then our headers
    /// (case-insensitive, `None` removes).
    fn wire_request(&self, auth: &RequestAuth) -> Value {
        let anthropic = self.model.api == "anthropic-messages";
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(key) = &auth.api_key {
            headers.push(if anthropic {
                ("x-api-key".into(), key.clone())
            } else {
                ("authorization".into(), format!("Bearer {key}"))
            });
        }
        for (name, value) in auth.headers.iter().flatten() {
            let lower = name.to_lowercase();
            headers.retain(|(n, _)| *n != lower);
            if let Some(v) = value {
                headers.push((lower, v.clone()));
            }
        }
        headers.retain(|(n, _)| self.record.contains(n));
        headers.sort();
        let path = self
            .model
            .base_url
            .split("${PORT}")
            .nth(1)
            .unwrap_or_default()
            .to_string()
            + if anthropic {
                "/v1/messages?beta=true"
            } else {
                "/chat/completions"
            };
        let headers: Map<String, Value> = headers
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        json!({"path": path, "headers": headers})
    }
}

/// Pi's `get_state` line reduced to the fields the registry decides.
fn reduce_state(line: &str) -> String {
    let mut v = parse_js_json(line).unwrap();
    if v.get("command").and_then(Value::as_str) == Some("get_state") {
        let data = v.get("data").cloned().unwrap();
        let reduced = json!({"model": data["model"], "thinkingLevel": data["thinkingLevel"]});
        v.as_object_mut().unwrap().insert("data".into(), reduced);
    }
    to_js_string(&v).unwrap()
}

fn run_case(name: &str) -> Vec<String> {
    let dir = cases_dir().join(name);
    let spec = read_json(&dir.join("case.json"));
    let expected = read_json(&dir.join("expected.json"));
    let tmp = std::env::temp_dir().join(format!("pi-registry-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let agent = tmp.join("agent");
    let source = match spec.get("agent").and_then(Value::as_str) {
        Some(other) => cases_dir().join(other).join("agent"),
        None => dir.join("agent"),
    };
    if source.exists() {
        copy_dir(&source, &agent);
    }
    ensure_agent_files(&agent).unwrap();
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut env = Env::from_pairs([("PATH", "/usr/bin:/bin"), ("HOME", home.to_str().unwrap())]);
    for (k, v) in spec
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        env.set(k.clone(), v.as_str().unwrap());
    }
    let (mut registry, _) = ModelRegistry::load(LoadOptions {
        agent_dir: agent.clone(),
        env,
        docs_dir: Some(PathBuf::from("<docs>")),
        local: None,
        llama: false,
    });
    let (settings, enabled) = settings_of(&agent);
    let mut request = request_from_args(&strings(spec.get("args")));
    if request.scope_patterns.is_none() {
        request.scope_patterns = enabled;
    }
    request.settings = settings.clone();
    let selection = registry.select_startup(&request);

    let mut failures = Vec::new();
    let mut check = |what: &str, ours: &dyn std::fmt::Debug, theirs: &dyn std::fmt::Debug| {
        let (a, b) = (format!("{ours:?}"), format!("{theirs:?}"));
        if a != b {
            failures.push(format!("{name}: {what}\n  ours:   {a}\n  pi:     {b}"));
        }
    };
    let diag_lines: Vec<String> = selection
        .diagnostics
        .iter()
        .flat_map(|d| {
            d.to_string()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    check("stderr", &diag_lines, &strings(expected.get("stderr")));
    let failed = selection
        .diagnostics
        .iter()
        .any(|d| d.kind == DiagnosticKind::Error);
    check(
        "exit code",
        &(if failed { 1 } else { 0 }),
        &expected["exitCode"].as_i64().unwrap(),
    );

    let mut session = Session {
        registry: &registry,
        settings,
        model: Arc::new(selection.model_or_placeholder()),
        thinking: selection.thinking_level,
        scoped: selection.scoped_models.clone(),
        out: Vec::new(),
        record: strings(spec.get("recordHeaders"))
            .iter()
            .map(|h| h.to_lowercase())
            .collect(),
        requests: Vec::new(),
    };
    if !failed {
        for cmd in spec
            .get("commands")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            session.run(cmd);
        }
    }
    let ours: Vec<String> = session.out.iter().map(|l| reduce_state(l)).collect();
    let theirs: Vec<String> = strings(expected.get("stdout"))
        .iter()
        .map(|l| reduce_state(l))
        .collect();
    for i in 0..ours.len().max(theirs.len()) {
        check(
            &format!("stdout line {}", i + 1),
            &ours.get(i),
            &theirs.get(i),
        );
    }

    let theirs_requests = expected
        .get("requests")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for i in 0..session.requests.len().max(theirs_requests.len()) {
        let ours = session.requests.get(i).map(|r| to_js_string(r).unwrap());
        let theirs = theirs_requests.get(i).map(|r| to_js_string(r).unwrap());
        check(&format!("request {}", i + 1), &ours, &theirs);
    }

    for entry in expected
        .get("list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let search = entry.get("search").and_then(Value::as_str);
        let out = registry.list_models(search);
        let agent_path = agent.to_str().unwrap();
        let stderr: String = diag_lines
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            + &out.stderr.replace(agent_path, "<agent>");
        check(
            &format!("--list-models {search:?} stdout"),
            &out.stdout,
            &entry["stdout"].as_str().unwrap(),
        );
        check(
            &format!("--list-models {search:?} stderr"),
            &stderr,
            &entry["stderr"].as_str().unwrap(),
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    failures
}

#[test]
fn registry_matches_recorded_reference_answers() {
    let mut names: Vec<String> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 25, "fixture cases missing: {names:?}");
    let failures: Vec<String> = names.iter().flat_map(|n| run_case(n)).collect();
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
