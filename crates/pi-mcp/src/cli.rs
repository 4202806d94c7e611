//! `pi mcp add|remove|list|login|logout`: configure and check servers without a session, with
//! Pi's options, messages and exit codes. `list` connects to every enabled server and exits 1
//! when an entry is invalid or an enabled server did not connect.

use crate::config::{self, ServerEntry, Transport};
use crate::connection::{AuthEnv, Connection, State};
use crate::log::ServerLog;
use crate::oauth::auth::ProviderToken;
use crate::oauth::signin::{self, BoxFuture, SignIn, SignInPrompt};
use crate::oauth::store::CredentialStore;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub const HELP: &str = r#"Usage:
  pi mcp add <server> [options] -- <command> [args...]
  pi mcp add <server> [options] --url <url>
  pi mcp remove <server> [-l]
  pi mcp list [--json]
  pi mcp login <server> [-l] [--timeout <seconds>]
  pi mcp logout <server> [-l]

Configure and check MCP servers and sign in to OAuth servers without starting a session.
Reads ~/.pi/agent/mcp.json and, in trusted projects, .pi/mcp.json.

Commands:
  add <server>            Add or replace a server in mcp.json
  remove <server>         Remove a server from mcp.json
  list                    Show state, tools, and errors (exits 1 on failure)
  login <server>          Sign in through the browser
  logout <server>         Delete the stored OAuth credentials

Options for add, remove, login, and logout:
  -l, --local             Use .pi/mcp.json in the current project instead of the global file

Options for add:
  --url <url>             Streamable HTTP server URL (instead of a command)
  --env <KEY=VALUE>       Environment variable for a stdio server (repeatable)
  --cwd <dir>             Working directory for a stdio server
  --header <KEY=VALUE>    HTTP header (repeatable)
  --bearer-token-env-var <NAME>
                          Send "Authorization: Bearer ${NAME}"
  --oauth-client-id <id>  Pre-registered OAuth client id
  --oauth-client-secret <secret>
                          OAuth client secret (may be ${NAME} or !command)
  --oauth-callback-port <port>
                          Fixed OAuth callback port
  --oauth-client-name <name>
                          Client name sent when registering with the OAuth server
  --oauth-client-registration <mode>
                          auto (default), cimd, or dcr
  --exposure <mode>       codemode (default), deferred, direct, or hidden
  --description <text>    What the server offers, shown in the system prompt

Other options:
  --json                  Print the list as JSON
  --timeout <seconds>     Time limit for the whole sign-in (default: 300)"#;

const HELP_HINT: &str = "Use \"pi mcp --help\" for usage.";

/// Where the command runs.
pub struct CliContext {
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    /// Whether the project in `cwd` is trusted (its `.pi/mcp.json` is read only then).
    pub project_trusted: bool,
    /// Credentials of servers with `auth.provider`.
    pub provider_token: Option<ProviderToken>,
    /// Print as the command goes (a sign-in shows its URL before it finishes) instead of
    /// collecting the output.
    pub live: bool,
}

impl CliContext {
    fn auth_env(&self) -> AuthEnv {
        AuthEnv {
            credentials: Some(CredentialStore::new(&self.agent_dir)),
            provider_token: self.provider_token.clone(),
        }
    }
}

/// What the command printed, and its exit code.
#[derive(Debug, Default, PartialEq)]
pub struct CliOutput {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
    /// Printed at once rather than collected.
    live: bool,
}

impl CliOutput {
    fn out(&mut self, line: &str) {
        if self.live {
            println!("{line}");
            return;
        }
        self.stdout.push_str(line);
        self.stdout.push('\n');
    }

    fn err(&mut self, line: &str) -> i32 {
        if self.live {
            eprintln!("{line}");
            return 1;
        }
        self.stderr.push_str(line);
        self.stderr.push('\n');
        1
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Flag,
    Single,
    List,
}

#[derive(Default)]
struct Parsed {
    positional: Vec<String>,
    values: HashMap<String, String>,
    flags: Vec<String>,
    lists: HashMap<String, Vec<String>>,
}

/// `--name value` options; `--` or reaching `max_positionals` ends them.
fn parse(
    args: &[String],
    known: &[(&str, Kind)],
    max_positionals: usize,
    o: &mut CliOutput,
) -> Option<Parsed> {
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let typed = &args[i];
        let arg = if typed == "-l" {
            "--local"
        } else {
            typed.as_str()
        };
        if arg == "--" || p.positional.len() >= max_positionals {
            let from = if arg == "--" { i + 1 } else { i };
            p.positional.extend(args[from..].iter().cloned());
            break;
        }
        let Some(name) = arg.strip_prefix("--") else {
            p.positional.push(arg.to_string());
            i += 1;
            continue;
        };
        let Some((_, kind)) = known.iter().find(|(k, _)| *k == name) else {
            o.err(&format!("Unknown option {typed}.\n{HELP_HINT}"));
            return None;
        };
        if *kind == Kind::Flag {
            p.flags.push(name.to_string());
            i += 1;
            continue;
        }
        let Some(value) = args.get(i + 1) else {
            o.err(&format!("{arg} needs a value."));
            return None;
        };
        if *kind == Kind::List {
            p.lists
                .entry(name.to_string())
                .or_default()
                .push(value.clone());
        } else {
            p.values.insert(name.to_string(), value.clone());
        }
        i += 2;
    }
    Some(p)
}

/// Runs `pi mcp <args>`.
pub async fn run(args: &[String], ctx: &CliContext) -> CliOutput {
    let mut o = CliOutput {
        live: ctx.live,
        ..CliOutput::default()
    };
    let command = args.first().map(String::as_str);
    if command.is_none_or(|c| c == "help") || args.iter().any(|a| a == "--help" || a == "-h") {
        o.out(HELP);
        return o;
    }
    let rest = &args[1..];
    let project_config = ctx.cwd.join(".pi").join("mcp.json");
    o.code = match command.unwrap_or("") {
        "add" => add(rest, &project_config, ctx, &mut o),
        "remove" => remove(rest, &project_config, ctx, &mut o),
        "list" | "login" | "logout" => {
            let loaded = config::load(&ctx.agent_dir, &ctx.cwd, ctx.project_trusted);
            let note = (!ctx.project_trusted && project_config.exists()).then(|| {
                format!(
                    "{} is ignored because the project is not trusted. Start pi in the project to trust it.",
                    project_config.display()
                )
            });
            if command == Some("list") {
                list(rest, loaded, note, ctx, &mut o).await
            } else {
                login_logout(command.unwrap_or(""), rest, &loaded, note, ctx, &mut o).await
            }
        }
        other => o.err(&format!("Unknown mcp command \"{other}\".\n{HELP_HINT}")),
    };
    o
}

fn pairs(
    option: &str,
    list: Option<&Vec<String>>,
    o: &mut CliOutput,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for pair in list.into_iter().flatten() {
        match pair.find('=') {
            Some(i) if i > 0 => {
                out.insert(pair[..i].to_string(), json!(pair[i + 1..]));
            }
            _ => {
                o.err(&format!("--{option} expects KEY=VALUE, got \"{pair}\"."));
                return None;
            }
        }
    }
    Some(out)
}

fn add(args: &[String], project_config: &Path, ctx: &CliContext, o: &mut CliOutput) -> i32 {
    use Kind::{Flag, List, Single};
    let known = [
        ("local", Flag),
        ("url", Single),
        ("env", List),
        ("cwd", Single),
        ("header", List),
        ("bearer-token-env-var", Single),
        ("oauth-client-id", Single),
        ("oauth-client-secret", Single),
        ("oauth-callback-port", Single),
        ("oauth-client-name", Single),
        ("oauth-client-registration", Single),
        ("exposure", Single),
        ("description", Single),
    ];
    let Some(p) = parse(args, &known, 2, o) else {
        return 1;
    };
    let usage = format!(
        "Usage: pi mcp add <server> [options] (--url <url> | -- <command> [args...])\n{HELP_HINT}"
    );
    let (name, command) = match p.positional.split_first() {
        Some((n, c)) => (n.clone(), c.to_vec()),
        None => return o.err(&usage),
    };
    let url = p.values.get("url").cloned();
    if url.is_none() == command.is_empty() {
        return o.err(&usage);
    }
    let has = |k: &str| p.values.contains_key(k) || p.lists.contains_key(k);
    let http_only = [
        "header",
        "bearer-token-env-var",
        "oauth-client-id",
        "oauth-client-secret",
        "oauth-callback-port",
        "oauth-client-name",
        "oauth-client-registration",
    ];
    let misplaced = if url.is_none() {
        http_only.iter().find(|k| has(k))
    } else {
        ["env", "cwd"].iter().find(|k| has(k))
    };
    if let Some(m) = misplaced {
        let kind = if url.is_none() {
            "HTTP servers (--url)"
        } else {
            "stdio servers"
        };
        return o.err(&format!("--{m} only applies to {kind}."));
    }
    let mut entry = Map::new();
    if let Some(url) = url {
        entry.insert("url".into(), json!(url));
        let Some(mut headers) = pairs("header", p.lists.get("header"), o) else {
            return 1;
        };
        if let Some(b) = p.values.get("bearer-token-env-var") {
            headers.insert("Authorization".into(), json!(format!("Bearer ${{{b}}}")));
        }
        if !headers.is_empty() {
            entry.insert("headers".into(), Value::Object(headers));
        }
        let mut oauth = Map::new();
        for (opt, key) in [
            ("oauth-client-id", "clientId"),
            ("oauth-client-secret", "clientSecret"),
        ] {
            if let Some(v) = p.values.get(opt) {
                oauth.insert(key.into(), json!(v));
            }
        }
        if let Some(port) = p.values.get("oauth-callback-port") {
            let n = pi_js::string_to_number(port);
            oauth.insert("callbackPort".into(), pi_js::json::js_number_value(n));
        }
        for (opt, key) in [
            ("oauth-client-name", "clientName"),
            ("oauth-client-registration", "clientRegistration"),
        ] {
            if let Some(v) = p.values.get(opt) {
                oauth.insert(key.into(), json!(v));
            }
        }
        if !oauth.is_empty() {
            entry.insert("oauth".into(), Value::Object(oauth));
        }
    } else {
        let Some(env) = pairs("env", p.lists.get("env"), o) else {
            return 1;
        };
        entry.insert("command".into(), json!(command[0]));
        if command.len() > 1 {
            entry.insert("args".into(), json!(command[1..]));
        }
        if !env.is_empty() {
            entry.insert("env".into(), Value::Object(env));
        }
        if let Some(cwd) = p.values.get("cwd") {
            entry.insert("cwd".into(), json!(cwd));
        }
    }
    for key in ["exposure", "description"] {
        if let Some(v) = p.values.get(key) {
            entry.insert(key.into(), json!(v));
        }
    }
    let (validated, transport) = match config::validate(&name, &Value::Object(entry)) {
        Ok(v) => v,
        Err(e) => return o.err(&e),
    };
    let project = p.flags.iter().any(|f| f == "local");
    let path = if project {
        project_config.to_path_buf()
    } else {
        ctx.agent_dir.join("mcp.json")
    };
    let scope = if project { "project" } else { "global" };
    let replaced = match config::add_server(&path, &name, validated) {
        Ok(r) => r,
        Err(e) => return o.err(&format!("Could not update {}: {e}", path.display())),
    };
    let verb = if replaced { "Replaced" } else { "Added" };
    o.out(&format!(
        "{verb} {scope} MCP server \"{name}\" in {}.",
        path.display()
    ));
    if project && !ctx.project_trusted {
        o.out(&format!(
            "The project is not trusted, so {} is ignored until you start pi in the project and trust it.",
            path.display()
        ));
    }
    let may_sign_in = matches!(&transport, Transport::Http { headers, .. }
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")));
    let hint = if may_sign_in {
        format!(". If it requires sign-in: pi mcp login {name}")
    } else {
        String::new()
    };
    o.out(&format!("Check it with: pi mcp list{hint}"));
    0
}

fn remove(args: &[String], project_config: &Path, ctx: &CliContext, o: &mut CliOutput) -> i32 {
    let Some(p) = parse(args, &[("local", Kind::Flag)], usize::MAX, o) else {
        return 1;
    };
    let [name] = p.positional.as_slice() else {
        return o.err(&format!("Usage: pi mcp remove <server> [-l]\n{HELP_HINT}"));
    };
    let project = p.flags.iter().any(|f| f == "local");
    let path = if project {
        project_config.to_path_buf()
    } else {
        ctx.agent_dir.join("mcp.json")
    };
    let scope = if project { "project" } else { "global" };
    match config::remove_server(&path, name) {
        Err(e) => o.err(&format!("Could not update {}: {e}", path.display())),
        Ok(true) => {
            o.out(&format!(
                "Removed {scope} MCP server \"{name}\" from {}.",
                path.display()
            ));
            0
        }
        Ok(false) => {
            let all = config::load(&ctx.agent_dir, &ctx.cwd, true);
            let other = all
                .servers
                .iter()
                .find(|s| &s.name == name && s.scope.as_str() != scope);
            let hint = other
                .map(|s| {
                    let how = if s.scope.as_str() == "project" {
                        "; use --local"
                    } else {
                        "; omit --local"
                    };
                    format!(" It is defined in {}{how}.", s.source)
                })
                .unwrap_or_default();
            o.err(&format!(
                "No {scope} MCP server named \"{name}\" in {}.{hint}",
                path.display()
            ))
        }
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur.push((prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A sign-in in the terminal: the URL on stdout, a pasted redirect URL read from a terminal.
struct TerminalPrompt {
    name: String,
    live: bool,
    interactive: bool,
    shown: std::sync::Mutex<Vec<String>>,
}

impl SignInPrompt for TerminalPrompt {
    fn show_authorization_url(&self, url: &str) -> BoxFuture<'_, ()> {
        let line = format!(
            "Sign in to MCP server \"{}\" in your browser:\n{url}",
            self.name
        );
        if self.live {
            println!("{line}");
        } else if let Ok(mut shown) = self.shown.lock() {
            shown.push(line);
        }
        crate::command::open_browser(url);
        Box::pin(async {})
    }

    /// Only a terminal can paste; otherwise only the browser's callback finishes the sign-in.
    fn redirect_url(&self, cancel: CancellationToken) -> BoxFuture<'_, Option<String>> {
        let interactive = self.interactive;
        Box::pin(async move {
            if !interactive {
                cancel.cancelled().await;
                return None;
            }
            eprint!(
                "If the browser cannot reach this machine, paste the URL it was redirected to: "
            );
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let read = std::io::stdin().read_line(&mut line);
                let _ = tx.send(read.ok().filter(|n| *n > 0).map(|_| line));
            });
            tokio::select! {
                line = rx => line.ok().flatten(),
                _ = cancel.cancelled() => None,
            }
        })
    }
}

async fn login_logout(
    command: &str,
    args: &[String],
    loaded: &config::McpConfig,
    note: Option<String>,
    ctx: &CliContext,
    o: &mut CliOutput,
) -> i32 {
    let known: &[(&str, Kind)] = if command == "login" {
        &[("local", Kind::Flag), ("timeout", Kind::Single)]
    } else {
        &[("local", Kind::Flag)]
    };
    let Some(p) = parse(args, known, usize::MAX, o) else {
        return 1;
    };
    let [name] = p.positional.as_slice() else {
        return o.err(&format!(
            "Usage: pi mcp {command} <server> [-l]\n{HELP_HINT}"
        ));
    };
    let Some(entry) = loaded.servers.iter().find(|s| &s.name == name) else {
        let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
        let suggestion = names
            .iter()
            .find(|c| edit_distance(c, name) <= 2)
            .map(|s| format!(" Did you mean \"{s}\"?"))
            .unwrap_or_default();
        let note = note.map(|n| format!(" {n}")).unwrap_or_default();
        let configured = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return o.err(&format!(
            "No MCP server named \"{name}\".{suggestion}{note} Configured: {configured}."
        ));
    };
    if p.flags.iter().any(|f| f == "local") && entry.scope.as_str() != "project" {
        return o.err(&format!(
            "MCP server \"{name}\" is defined in {}, not in the project; omit --local.",
            entry.source
        ));
    }
    if let Some(provider) = entry
        .config
        .get("auth")
        .and_then(|a| a.get("provider"))
        .and_then(Value::as_str)
    {
        return o.err(&format!(
            "MCP server \"{name}\" uses the credentials of provider \"{provider}\". Run \"pi auth {command} {provider}\"."
        ));
    }
    let log = Arc::new(ServerLog::new(ctx.agent_dir.join("mcp.log")));
    let conn = Connection::with_auth(
        entry.clone(),
        &ctx.cwd,
        log,
        Arc::new(|_: &Connection, _| {}),
        ctx.auth_env(),
    );
    let Some(url) = conn.oauth_url().map(str::to_string) else {
        return o.err(&format!(
            "MCP server \"{name}\" does not use OAuth. Only HTTP servers without an Authorization header do."
        ));
    };
    let store = CredentialStore::new(&ctx.agent_dir);
    if command == "logout" {
        let removed = store.remove(name, &url).await.unwrap_or(false);
        o.out(&if removed {
            format!("Signed out of MCP server \"{name}\".")
        } else {
            format!("No stored credentials for MCP server \"{name}\".")
        });
        return 0;
    }
    let timeout = match p.values.get("timeout") {
        Some(t) => pi_js::string_to_number(t),
        None => 300.0,
    };
    if !(timeout.is_finite() && timeout > 0.0) {
        return o.err("--timeout must be a positive number of seconds.");
    }
    let code = login(&conn, &url, timeout, &store, o).await;
    conn.close().await;
    code
}

/// Pi's `login`: connecting first tells whether a sign-in is needed (and records the server's
/// challenge); then the browser sign-in, bounded by `timeout` seconds, and a reconnect.
async fn login(
    conn: &Connection,
    url: &str,
    timeout: f64,
    store: &CredentialStore,
    o: &mut CliOutput,
) -> i32 {
    let name = conn.name().to_string();
    match conn.client().await {
        Ok(_) => {
            o.out(&format!(
                "Already signed in to MCP server \"{name}\" ({} tools).",
                conn.tools().len()
            ));
            return 0;
        }
        Err(_) if conn.state() != Some(State::NeedsAuth) => {
            return o.err(&format!(
                "MCP server \"{name}\" failed to connect: {}",
                conn.error().unwrap_or_else(|| "unknown error".into())
            ));
        }
        Err(_) => {}
    }
    let settings = match conn.oauth_settings() {
        Ok(s) => s,
        Err(e) => return o.err(&format!("Sign-in to MCP server \"{name}\" failed: {e}")),
    };
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        let ms = (timeout * 1000.0) as u64;
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            cancel.cancel();
        })
    };
    let s = SignIn {
        server_url: url.to_string(),
        store: store.for_server(&name, url),
        settings,
        challenge: conn.challenge(),
        cancel,
    };
    let prompt = TerminalPrompt {
        name: name.clone(),
        live: o.live,
        interactive: std::io::IsTerminal::is_terminal(&std::io::stdin()),
        shown: std::sync::Mutex::default(),
    };
    let result = signin::sign_in(&s, &prompt).await;
    timer.abort();
    for line in prompt.shown.lock().map(|s| s.clone()).unwrap_or_default() {
        o.out(&line);
    }
    match result {
        Err(crate::oauth::FlowError::Cancelled) => {
            return o.err(&format!(
                "Sign-in to MCP server \"{name}\" was cancelled or not completed within {} seconds.",
                pi_js::json::js_number_value(timeout.round())
            ));
        }
        Err(e) => return o.err(&format!("Sign-in to MCP server \"{name}\" failed: {e}")),
        Ok(()) => {}
    }
    conn.clear_challenge();
    if let Err(e) = conn.reconnect().await {
        return o.err(&format!("Signed in, but {e}"));
    }
    o.out(&format!(
        "Signed in to MCP server \"{name}\" ({} tools).",
        conn.tools().len()
    ));
    0
}

async fn list(
    args: &[String],
    loaded: config::McpConfig,
    note: Option<String>,
    ctx: &CliContext,
    o: &mut CliOutput,
) -> i32 {
    let Some(p) = parse(args, &[("json", Kind::Flag)], usize::MAX, o) else {
        return 1;
    };
    if !p.positional.is_empty() {
        return o.err(&format!("Usage: pi mcp list [--json]\n{HELP_HINT}"));
    }
    let json_out = p.flags.iter().any(|f| f == "json");
    let log = Arc::new(ServerLog::new(ctx.agent_dir.join("mcp.log")));
    let checks = loaded.servers.iter().map(|entry| {
        let entry = entry.clone();
        let log = Arc::clone(&log);
        let cwd = ctx.cwd.clone();
        let env = ctx.auth_env();
        tokio::spawn(async move { report(entry, &cwd, log, env).await })
    });
    let handles: Vec<_> = checks.collect();
    let mut reports = Vec::new();
    for h in handles {
        if let Ok(r) = h.await {
            reports.push(r);
        }
    }
    let failed = !loaded.errors.is_empty()
        || reports
            .iter()
            .any(|r| r["enabled"] == json!(true) && r["state"] != json!("connected"));
    let code = i32::from(failed);
    if json_out {
        let mut doc = json!({"servers": reports, "errors": loaded.errors});
        if let Some(n) = &note {
            doc["note"] = json!(n);
        }
        o.out(&pi_js::json::to_js_string_pretty(&doc).unwrap_or_default());
        return code;
    }
    if reports.is_empty() && loaded.errors.is_empty() {
        o.out(&format!(
            "No MCP servers configured. Add them to {} or .pi/mcp.json.",
            ctx.agent_dir.join("mcp.json").display()
        ));
    }
    for r in &reports {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let tools: Vec<&str> = r["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let state = match s("state") {
            "connected" => format!(
                "connected, {} tool{}",
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            ),
            "needs-auth" => "needs sign-in".into(),
            other => other.into(),
        };
        o.out(&format!(
            "{}: {state} ({}, {})",
            s("name"),
            s("exposure"),
            s("scope")
        ));
        o.out(&format!("  {}", s("transport")));
        if let Some(ov) = r.get("override").and_then(Value::as_str) {
            o.out(&format!("  project override: {ov}"));
        }
        if s("state") == "needs-auth" {
            // A provider's credentials come from that provider's login, not `pi mcp login`.
            match r.get("authProvider").and_then(Value::as_str) {
                Some(p) => o.out(&format!("  sign in with: /login {p} in pi")),
                None => o.out(&format!("  sign in with: pi mcp login {}", s("name"))),
            }
        }
        if !tools.is_empty() {
            let shown: Vec<String> = tools
                .iter()
                .map(|t| {
                    match r
                        .pointer(&format!("/toolExposure/{t}"))
                        .and_then(Value::as_str)
                    {
                        Some(e) => format!("{t} [{e}]"),
                        None => t.to_string(),
                    }
                })
                .collect();
            o.out(&format!("  tools: {}", shown.join(", ")));
        }
        if r.get("resources").is_some() {
            o.out("  offers resources");
        }
        if let Some(e) = r.get("error").and_then(Value::as_str) {
            o.out(&format!(
                "  {}",
                e.split('\n').collect::<Vec<_>>().join("\n  ")
            ));
        }
    }
    for e in &loaded.errors {
        o.out(&format!("config error: {e}"));
    }
    if let Some(n) = note {
        o.out(&n);
    }
    code
}

/// One server's line of `pi mcp list`, as its `--json` object.
async fn report(entry: ServerEntry, cwd: &Path, log: Arc<ServerLog>, env: AuthEnv) -> Value {
    let mut r = json!({
        "name": entry.name,
        "scope": entry.scope.as_str(),
        "source": entry.source,
    });
    if let Some(ov) = &entry.override_path {
        r["override"] = json!(ov);
    }
    let exposure = entry.exposure();
    r["enabled"] = json!(entry.enabled());
    r["exposure"] = json!(exposure.as_str());
    r["transport"] = json!(entry.describe_transport());
    if let Some(p) = entry.config.get("auth").and_then(|a| a.get("provider")) {
        r["authProvider"] = p.clone();
    }
    r["state"] = json!("disabled");
    r["tools"] = json!([]);
    if !entry.enabled() {
        return r;
    }
    let conn = Connection::with_auth(
        entry.clone(),
        cwd,
        log,
        Arc::new(|_: &Connection, _| {}),
        env,
    );
    let _ = conn.client().await;
    let state = conn.state().unwrap_or(State::Failed);
    let tools: Vec<String> = conn
        .tools()
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    r["state"] = json!(state.as_str());
    let overrides: Map<String, Value> = tools
        .iter()
        .map(|t| (t, entry.tool_exposure(t)))
        .filter(|(_, e)| *e != exposure)
        .map(|(t, e)| (t.clone(), json!(e.as_str())))
        .collect();
    r["tools"] = json!(tools);
    if !overrides.is_empty() {
        r["toolExposure"] = Value::Object(overrides);
    }
    if conn.has_resources() {
        r["resources"] = json!(true);
    }
    if state != State::Connected
        && let Some(e) = conn.error()
    {
        r["error"] = json!(e);
    }
    conn.close().await;
    r
}
