//! `mcp.json`: the `mcpServers` shape other MCP clients share, read from the agent dir and (for
//! trusted projects) `<cwd>/.pi/mcp.json`, validated with Pi's rules and error texts, and edited
//! in place by `pi mcp add|remove` keeping unrelated content.
//!
//! A project entry replaces a global one of the same name; a project entry without `command`,
//! `url` or `type` only overrides `enabled`, `exposure` and `toolExposure` of the global server.

use crate::naming::namespace;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// How a server's tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exposure {
    /// Called from codemode scripts (the default).
    Codemode,
    /// Declared once `tool_search` loads them.
    Deferred,
    /// Declared like built-in tools.
    Direct,
    /// Registered but unreachable.
    Hidden,
}

impl Exposure {
    pub const ALL: [Exposure; 4] = [
        Exposure::Codemode,
        Exposure::Deferred,
        Exposure::Direct,
        Exposure::Hidden,
    ];

    pub fn parse(s: &str) -> Option<Exposure> {
        match s {
            "codemode" | "codemode-deferred" => Some(Exposure::Codemode),
            "deferred" => Some(Exposure::Deferred),
            "direct" => Some(Exposure::Direct),
            "hidden" => Some(Exposure::Hidden),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Direct => "direct",
            Exposure::Hidden => "hidden",
        }
    }

    /// The tool registry's exposure: `codemode` tools are `deferred` tools that the codemode
    /// tool (not `tool_search`) is activated for.
    pub fn tool_exposure(self) -> &'static str {
        match self {
            Exposure::Codemode => "deferred",
            other => other.as_str(),
        }
    }
}

/// The transport an entry selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Project,
    Extension,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
            Scope::Extension => "extension",
        }
    }
}

/// One validated server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    pub name: String,
    /// The entry as written (aliases resolved), for fields read later and for editing.
    pub config: Map<String, Value>,
    pub transport: Transport,
    /// The file (or extension path) that defines it.
    pub source: String,
    pub scope: Scope,
    /// The project file that overrides some fields, if any.
    pub override_path: Option<String>,
}

impl ServerEntry {
    pub fn enabled(&self) -> bool {
        self.config.get("enabled") != Some(&Value::Bool(false))
    }

    pub fn exposure(&self) -> Exposure {
        self.config
            .get("exposure")
            .and_then(Value::as_str)
            .and_then(Exposure::parse)
            .unwrap_or(Exposure::Codemode)
    }

    pub fn description(&self) -> Option<&str> {
        self.config.get("description").and_then(Value::as_str)
    }

    /// Per-request timeout (`timeout` seconds, default 60).
    pub fn timeout_ms(&self) -> u64 {
        let secs = self
            .config
            .get("timeout")
            .and_then(Value::as_f64)
            .unwrap_or(60.0);
        (secs * 1000.0) as u64
    }

    /// The exposure of one tool: an exact `toolExposure` key, else the first matching pattern,
    /// else the server's.
    pub fn tool_exposure(&self, tool: &str) -> Exposure {
        let Some(Value::Object(map)) = self.config.get("toolExposure") else {
            return self.exposure();
        };
        let parse = |v: &Value| v.as_str().and_then(Exposure::parse);
        if let Some(e) = map.get(tool).and_then(parse) {
            return e;
        }
        map.iter()
            .filter(|(k, _)| k.contains('*'))
            .find(|(k, _)| pattern_matches(k, tool))
            .and_then(|(_, v)| parse(v))
            .unwrap_or_else(|| self.exposure())
    }

    /// Exposures the server's tools can have, known before it connects.
    pub fn configured_exposures(&self) -> Vec<Exposure> {
        let mut out = vec![self.exposure()];
        if let Some(Value::Object(map)) = self.config.get("toolExposure") {
            out.extend(
                map.values()
                    .filter_map(|v| v.as_str().and_then(Exposure::parse)),
            );
        }
        out
    }

    pub fn has_direct_tools(&self) -> bool {
        self.configured_exposures().contains(&Exposure::Direct)
    }

    pub fn has_indirect_tools(&self) -> bool {
        self.configured_exposures()
            .iter()
            .any(|e| matches!(e, Exposure::Codemode | Exposure::Deferred))
    }

    /// `command args...` or the URL, as status lines show the transport.
    pub fn describe_transport(&self) -> String {
        match &self.transport {
            Transport::Http { url, .. } => url.clone(),
            Transport::Stdio { command, args, .. } => {
                let mut parts = vec![command.clone()];
                parts.extend(args.iter().cloned());
                parts.join(" ")
            }
        }
    }
}

/// `*` matches any characters; everything else is literal.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether a name matches any entry (exact names or `*` patterns).
pub fn matches_any(entries: &[String], name: &str) -> bool {
    entries.iter().any(|e| pattern_matches(e, name))
}

/// What `mcp.json` files yielded.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    pub servers: Vec<ServerEntry>,
    pub auto_enable_codemode: Option<bool>,
    /// `<path>: <error>` lines.
    pub errors: Vec<String>,
    /// The trusted project's `mcp.json`, where project overrides are saved.
    pub project_config: Option<PathBuf>,
}

const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];

fn is_override(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command") && !entry.contains_key("url") && !entry.contains_key("type")
}

/// Reads the global `mcp.json` and, when `project_trusted`, the project's.
pub fn load(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> McpConfig {
    let mut config = McpConfig::default();
    read_file(&agent_dir.join("mcp.json"), Scope::Global, &mut config);
    if project_trusted {
        let project = cwd.join(".pi").join("mcp.json");
        read_file(&project, Scope::Project, &mut config);
        config.project_config = Some(project);
    }
    config
}

fn read_file(path: &Path, scope: Scope, state: &mut McpConfig) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let shown = path.display().to_string();
    let parsed = match pi_js::parse::parse_js_json(text.trim_start_matches('\u{feff}')) {
        Ok(v) => v,
        Err(e) => {
            state.errors.push(format!("{shown}: {e}"));
            return;
        }
    };
    let servers = match &parsed {
        Value::Object(o) => match o.get("mcpServers") {
            None => Some(Map::new()),
            Some(Value::Object(s)) => Some(s.clone()),
            Some(_) => None,
        },
        _ => None,
    };
    let Some(servers) = servers else {
        state.errors.push(format!(
            "{shown}: expected an object with an \"mcpServers\" object"
        ));
        return;
    };
    match parsed.get("autoEnableCodemode") {
        Some(Value::Bool(b)) => state.auto_enable_codemode = Some(*b),
        Some(_) => state
            .errors
            .push(format!("{shown}: autoEnableCodemode must be a boolean")),
        None => {}
    }
    for (name, value) in servers {
        if scope == Scope::Project
            && let Value::Object(entry) = &value
            && is_override(entry)
        {
            let base = state.servers.iter().position(|s| s.name == name);
            let extra: Vec<&String> = entry
                .keys()
                .filter(|k| !OVERRIDE_KEYS.contains(&k.as_str()))
                .collect();
            match base {
                None => state.errors.push(format!(
                    "{shown}: server \"{name}\" needs \"command\" or \"url\", or a global server to override"
                )),
                Some(_) if !extra.is_empty() => state.errors.push(format!(
                    "{shown}: server \"{name}\": an override can only set {}",
                    OVERRIDE_KEYS.join(", ")
                )),
                Some(i) => {
                    let mut merged = state.servers[i].config.clone();
                    for (k, v) in entry {
                        merged.insert(k.clone(), v.clone());
                    }
                    match validate(&name, &Value::Object(merged)) {
                        Err(e) => state.errors.push(format!("{shown}: {e}")),
                        Ok((config, transport)) => {
                            let base = &mut state.servers[i];
                            base.config = config;
                            base.transport = transport;
                            base.override_path = Some(shown.clone());
                        }
                    }
                }
            }
            continue;
        }
        let (config, transport) = match validate(&name, &value) {
            Ok(v) => v,
            Err(e) => {
                state.errors.push(format!("{shown}: {e}"));
                continue;
            }
        };
        if let Some(clash) = state
            .servers
            .iter()
            .find(|s| s.name != name && namespace(&s.name) == namespace(&name))
        {
            state.errors.push(format!(
                "{shown}: server \"{name}\" conflicts with \"{}\"",
                clash.name
            ));
            continue;
        }
        if scope == Scope::Project
            && matches!(transport, Transport::Http { .. })
            && config.contains_key("auth")
        {
            state.errors.push(format!(
                "{shown}: server \"{name}\": auth is only allowed in the global mcp.json"
            ));
            continue;
        }
        let entry = ServerEntry {
            name: name.clone(),
            config,
            transport,
            source: shown.clone(),
            scope,
            override_path: None,
        };
        match state.servers.iter().position(|s| s.name == name) {
            Some(i) => state.servers[i] = entry,
            None => state.servers.push(entry),
        }
    }
}

fn string_map(v: Option<&Value>) -> Option<Vec<(String, String)>> {
    match v {
        None => Some(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect(),
        Some(_) => None,
    }
}

fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

/// Validates one entry (Pi's `validateMcpServerConfig`), resolving exposure aliases.
pub fn validate(name: &str, raw: &Value) -> Result<(Map<String, Value>, Transport), String> {
    if !is_server_name(name) {
        return Err(format!(
            "invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"
        ));
    }
    let Value::Object(entry) = raw else {
        return Err(format!("server \"{name}\" must be an object"));
    };
    let mut entry = entry.clone();
    resolve_aliases(&mut entry);
    let fail = |e: &str| Err(format!("server \"{name}\": {e}"));
    match entry.get("enabled") {
        None | Some(Value::Bool(_)) => {}
        Some(_) => return fail("enabled must be a boolean"),
    }
    match entry.get("description") {
        None | Some(Value::String(_)) => {}
        Some(_) => return fail("description must be a string"),
    }
    match entry.get("timeout") {
        None => {}
        Some(v) if v.as_f64().is_some_and(|t| t > 0.0) => {}
        Some(_) => return fail("timeout must be a positive number of seconds"),
    }
    let ty = entry.get("type");
    if ty.and_then(Value::as_str) == Some("sse") {
        return fail("legacy SSE transport is not supported; use the streamable HTTP URL");
    }
    let ty_is = |names: &[&str]| {
        ty.is_none()
            || ty
                .and_then(Value::as_str)
                .is_some_and(|t| names.contains(&t))
    };
    let transport = if let Some(url) = entry.get("url").and_then(Value::as_str)
        && ty_is(&["http", "streamable-http"])
    {
        if !is_http_url(url) {
            return fail("url must be an http or https URL");
        }
        let Some(headers) = string_map(entry.get("headers")) else {
            return fail("headers must map names to strings");
        };
        if let Some(e) = check_oauth(entry.get("oauth")) {
            return fail(&e);
        }
        Transport::Http {
            url: url.to_string(),
            headers,
        }
    } else if let Some(command) = entry.get("command").and_then(Value::as_str)
        && ty_is(&["stdio"])
    {
        let args = match entry.get("args") {
            None => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(_) => return fail("args must be an array of strings"),
        };
        let Some(env) = string_map(entry.get("env")) else {
            return fail("env must map names to strings");
        };
        let cwd = match entry.get("cwd") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return fail("cwd must be a string"),
        };
        Transport::Stdio {
            command: command.to_string(),
            args,
            env,
            cwd,
        }
    } else {
        return Err(format!(
            "server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
        ));
    };
    if let Some(e) = check_exposures(&entry) {
        return fail(&e);
    }
    if let Transport::Http { url, .. } = &transport
        && let Some(e) = check_auth(entry.get("auth"), url)
    {
        return fail(&e);
    }
    Ok((entry, transport))
}

fn resolve_aliases(entry: &mut Map<String, Value>) {
    let alias = |v: &mut Value| {
        if v.as_str() == Some("codemode-deferred") {
            *v = Value::String("codemode".into());
        }
    };
    if let Some(v) = entry.get_mut("exposure") {
        alias(v);
    }
    if let Some(Value::Object(m)) = entry.get_mut("toolExposure") {
        for v in m.values_mut() {
            alias(v);
        }
    }
}

fn check_exposures(entry: &Map<String, Value>) -> Option<String> {
    let all = "\"codemode\", \"deferred\", \"direct\", \"hidden\"";
    let valid = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s != "codemode-deferred" && Exposure::parse(s).is_some())
    };
    if let Some(e) = entry.get("exposure")
        && !valid(e)
    {
        return Some(format!("exposure must be one of {all}"));
    }
    match entry.get("toolExposure") {
        None => None,
        Some(Value::Object(m)) => m
            .iter()
            .find(|(_, v)| !valid(v))
            .map(|(k, _)| format!("toolExposure \"{k}\" must be one of {all}")),
        Some(_) => Some("toolExposure must map tool names to exposures".into()),
    }
}

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    if host_port.starts_with('[') {
        return host_port
            .split(']')
            .next()
            .map_or("", |h| &host_port[..h.len() + 1]);
    }
    host_port.split(':').next().unwrap_or("")
}

fn check_auth(auth: Option<&Value>, url: &str) -> Option<String> {
    let auth = auth?;
    let provider = auth.get("provider").and_then(Value::as_str);
    if !auth.is_object() || provider.is_none_or(str::is_empty) {
        return Some("auth.provider must be a provider name".into());
    }
    if !url.starts_with("https://") && !LOOPBACK_HOSTS.contains(&url_host(url)) {
        return Some(
            "auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]".into(),
        );
    }
    None
}

fn check_oauth(value: Option<&Value>) -> Option<String> {
    let value = value?;
    let Value::Object(o) = value else {
        return Some("oauth must be an object".into());
    };
    let not_string = |k: &str| o.get(k).is_some_and(|v| !v.is_string());
    if not_string("clientId") {
        return Some("oauth.clientId must be a string".into());
    }
    if not_string("clientSecret") {
        return Some("oauth.clientSecret must be a string".into());
    }
    if let Some(p) = o.get("callbackPort")
        && !p.as_u64().is_some_and(|p| (1..=65535).contains(&p))
    {
        return Some("oauth.callbackPort must be a port number".into());
    }
    if let Some(cb) = o.get("callbackUrl") {
        let ok = cb.as_str().is_some_and(|u| {
            u.starts_with("http://")
                && LOOPBACK_HOSTS.contains(&url_host(u))
                && !u.contains('?')
                && !u.contains('#')
        });
        if !ok {
            return Some("oauth.callbackUrl must be an http URI on localhost, 127.0.0.1, or [::1] without query or fragment".into());
        }
    }
    if not_string("scope") {
        return Some("oauth.scope must be a string".into());
    }
    if let Some(n) = o.get("clientName")
        && n.as_str().is_none_or(|s| pi_js::trim(s).is_empty())
    {
        return Some("oauth.clientName must be a non-empty string".into());
    }
    match o.get("clientRegistration").map(|v| v.as_str()) {
        None | Some(Some("auto" | "dcr")) => {}
        Some(Some("cimd")) => {
            if o.contains_key("clientId") || o.contains_key("clientName") {
                return Some("oauth.clientRegistration \"cimd\" cannot be combined with oauth.clientId or oauth.clientName".into());
            }
        }
        Some(_) => {
            return Some("oauth.clientRegistration must be \"auto\", \"dcr\", or \"cimd\"".into());
        }
    }
    None
}

/// Reads an `mcp.json` for editing (an empty object when missing).
fn read_for_edit(path: &Path) -> Result<(Map<String, Value>, Option<String>), String> {
    let shown = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => Some(t.trim_start_matches('\u{feff}').to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let parsed = match &text {
        Some(t) => pi_js::parse::parse_js_json(t).map_err(|e| e.to_string())?,
        None => Value::Object(Map::new()),
    };
    match parsed {
        Value::Object(o) if o.get("mcpServers").is_none_or(Value::is_object) => Ok((o, text)),
        _ => Err(format!(
            "{shown}: expected an object with an \"mcpServers\" object"
        )),
    }
}

/// Writes `parsed` back with the file's indentation (two spaces for a new file).
fn write_edited(
    path: &Path,
    parsed: &Map<String, Value>,
    text: Option<&str>,
) -> Result<(), String> {
    let indent = text
        .and_then(|t| {
            t.lines().find_map(|l| {
                let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
                (!ws.is_empty() && l.len() > ws.len()).then_some(ws)
            })
        })
        .unwrap_or_else(|| "  ".into());
    let pretty = pi_js::json::to_js_string_pretty(parsed).map_err(|e| e.to_string())?;
    let body: Vec<String> = pretty
        .lines()
        .map(|l| {
            let n = l.len() - l.trim_start_matches(' ').len();
            format!("{}{}", indent.repeat(n / 2), &l[n..])
        })
        .collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, format!("{}\n", body.join("\n"))).map_err(|e| e.to_string())
}

/// Adds or replaces a server; true when one was replaced.
pub fn add_server(path: &Path, name: &str, config: Map<String, Value>) -> Result<bool, String> {
    let (mut parsed, text) = read_for_edit(path)?;
    let mut servers = match parsed.remove("mcpServers") {
        Some(Value::Object(s)) => s,
        _ => Map::new(),
    };
    let replaced = servers.contains_key(name);
    servers.insert(name.to_string(), Value::Object(config));
    parsed.insert("mcpServers".into(), Value::Object(servers));
    write_edited(path, &parsed, text.as_deref())?;
    Ok(replaced)
}

/// Removes a server; false when the file does not define it.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, String> {
    if !path.exists() {
        return Ok(false);
    }
    let (mut parsed, text) = read_for_edit(path)?;
    let Some(Value::Object(servers)) = parsed.get_mut("mcpServers") else {
        return Ok(false);
    };
    if servers.remove(name).is_none() {
        return Ok(false);
    }
    write_edited(path, &parsed, text.as_deref())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_errors_use_pis_texts() {
        let err = |name: &str, v: Value| validate(name, &v).err().unwrap_or_default();
        assert_eq!(
            err("a b", json!({})),
            "invalid server name \"a b\" (use letters, digits, \"_\" and \"-\")"
        );
        assert_eq!(err("s", json!(1)), "server \"s\" must be an object");
        assert_eq!(
            err("s", json!({"type": "sse", "url": "http://x"})),
            "server \"s\": legacy SSE transport is not supported; use the streamable HTTP URL"
        );
        assert_eq!(
            err("s", json!({})),
            "server \"s\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
        );
        assert_eq!(
            err("s", json!({"command": "x", "exposure": "bogus"})),
            "server \"s\": exposure must be one of \"codemode\", \"deferred\", \"direct\", \"hidden\""
        );
        assert_eq!(
            err("s", json!({"command": "x", "args": [1]})),
            "server \"s\": args must be an array of strings"
        );
        assert_eq!(
            err("s", json!({"url": "ftp://x"})),
            "server \"s\": url must be an http or https URL"
        );
        let (config, _) = validate(
            "s",
            &json!({"command": "x", "exposure": "codemode-deferred"}),
        )
        .unwrap_or_default_for_test();
        assert_eq!(config.get("exposure"), Some(&json!("codemode")));
    }

    trait OrDefault {
        fn unwrap_or_default_for_test(self) -> (Map<String, Value>, Transport);
    }
    impl OrDefault for Result<(Map<String, Value>, Transport), String> {
        fn unwrap_or_default_for_test(self) -> (Map<String, Value>, Transport) {
            match self {
                Ok(v) => v,
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn tool_exposure_prefers_exact_names_then_the_first_pattern() {
        let (config, transport) = validate(
            "gh",
            &json!({"command": "x", "exposure": "deferred",
                "toolExposure": {"get_*": "codemode", "get_me": "direct", "*": "hidden"}}),
        )
        .unwrap_or_default_for_test();
        let entry = ServerEntry {
            name: "gh".into(),
            config,
            transport,
            source: "f".into(),
            scope: Scope::Global,
            override_path: None,
        };
        assert_eq!(entry.tool_exposure("get_me"), Exposure::Direct);
        assert_eq!(entry.tool_exposure("get_x"), Exposure::Codemode);
        assert_eq!(entry.tool_exposure("other"), Exposure::Hidden);
        assert!(pattern_matches("mcp__*__x*", "mcp__a__xyz"));
        assert!(!pattern_matches("mcp__radius__*", "mcp__other__a"));
    }

    #[test]
    fn project_entries_override_or_replace_global_ones() {
        let dir = pi_test_support::TempDir::new();
        let agent = dir.path().join("agent");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join(".pi")).ok();
        std::fs::create_dir_all(&agent).ok();
        std::fs::write(
            agent.join("mcp.json"),
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "v"}}, "b": {"url": "http://h/mcp"}, "x-y": {"command": "y"}, "x_y": {"command": "y"}}}"#,
        )
        .ok();
        std::fs::write(
            cwd.join(".pi/mcp.json"),
            r#"{"autoEnableCodemode": false, "mcpServers": {"a": {"enabled": false}, "c": {"enabled": true}, "b": {"command": "z"}}}"#,
        )
        .ok();
        let c = load(&agent, &cwd, true);
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "x-y"]);
        assert!(!c.servers[0].enabled());
        assert_eq!(c.servers[0].config.get("env"), Some(&json!({"K": "v"})));
        assert_eq!(c.servers[1].scope, Scope::Project);
        assert_eq!(c.auto_enable_codemode, Some(false));
        let global = agent.join("mcp.json").display().to_string();
        let project = cwd.join(".pi/mcp.json").display().to_string();
        assert_eq!(
            c.errors,
            [
                format!("{global}: server \"x_y\" conflicts with \"x-y\""),
                format!(
                    "{project}: server \"c\" needs \"command\" or \"url\", or a global server to override"
                ),
            ]
        );
        let untrusted = load(&agent, &cwd, false);
        assert!(untrusted.servers[0].enabled());
    }

    #[test]
    fn edits_keep_other_content_and_indentation() {
        let dir = pi_test_support::TempDir::new();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            "{\n\t\"other\": 1,\n\t\"mcpServers\": {\"x\": {\"url\": \"http://a\"}}\n}\n",
        )
        .ok();
        let mut c = Map::new();
        c.insert("command".into(), json!("npx"));
        assert_eq!(add_server(&path, "y", c), Ok(false));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            text,
            "{\n\t\"other\": 1,\n\t\"mcpServers\": {\n\t\t\"x\": {\n\t\t\t\"url\": \"http://a\"\n\t\t},\n\t\t\"y\": {\n\t\t\t\"command\": \"npx\"\n\t\t}\n\t}\n}\n"
        );
        assert_eq!(remove_server(&path, "x"), Ok(true));
        assert_eq!(remove_server(&path, "x"), Ok(false));
    }
}
