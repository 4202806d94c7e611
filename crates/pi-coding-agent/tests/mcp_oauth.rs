//! Signing in to an OAuth MCP server, against the recorded behaviour of Pi 1.6.0
//! (`tests/fixtures/mcp_oauth*.txt`): `pi mcp list|login|logout` and `/mcp`, `/mcp login`,
//! `/mcp logout` over RPC, how pi identifies itself as a client, and a running session picking
//! up a sign-in on its next turn, with the HTTP test server of `pi-test-support` behind its
//! loopback authorization server. The browser is played by the test: a fake `xdg-open` records the URL,
//! the test opens it (the server approves at once) and follows the redirect to pi's loopback
//! callback, or pastes the redirect URL into pi's input dialog.
//!
//! Re-record from the reference (needs Node 22):
//! `MCP_OAUTH_REFERENCE=conformance/.reference/pi16/node_modules/.bin/pi cargo test -p pi-coding-agent --test mcp_oauth`

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const FIXTURE: &str = "tests/fixtures/mcp_oauth.txt";

/// `(status, location, body)` of a plain-HTTP GET on loopback.
fn http_get(url: &str) -> (u16, Option<String>, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("location: ").map(str::to_string));
    (status, location, body.to_string())
}

/// Plays the browser: opens the authorization URL and follows the redirect (to pi's callback),
/// or only returns where it would go.
fn browse(url: &str, follow: bool) -> String {
    let (status, location, _) = http_get(url);
    assert_eq!(status, 302, "{url}");
    let location = location.unwrap();
    if follow {
        let (status, _, page) = http_get(&location);
        assert_eq!(status, 200, "{page}");
    }
    location
}

struct Env {
    dir: pi_test_support::TempDir,
    program: PathBuf,
    path: String,
    /// Server URLs (and their callback ids) with the names they get in the transcript.
    urls: Vec<(String, String)>,
}

impl Env {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(args)
            .current_dir(self.root().join("work"))
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", self.root().join("home"))
            .env("PI_CODING_AGENT_DIR", self.root().join("agent"))
            .env("PI_OFFLINE", "1")
            .env("PRIVATE_SECRET", "s3cret")
            .env("XDG_LOG", self.root().join("xdg.log"));
        c
    }

    fn norm(&self, s: &str) -> String {
        let mut s = s.replace(&self.root().display().to_string(), "<T>");
        for (url, name) in &self.urls {
            s = s.replace(url, name);
        }
        for (pattern, with) in [
            (r"127\.0\.0\.1(%3A|:)\d+", "127.0.0.1${1}P"),
            (r"(state|code_challenge)=[^&\x22\\\s]*", "${1}=X"),
            (
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                "<uuid>",
            ),
            (r#""tokensExpireAt": \d+"#, r#""tokensExpireAt": N"#),
            (r#""(oauthState|codeVerifier)": "[^"]*""#, r#""${1}": S"#),
            (r#""durationMs":[\d.]+"#, r#""durationMs":N"#),
            (r"Wall time [\d.]+ seconds", "Wall time T seconds"),
        ] {
            s = regex::Regex::new(pattern)
                .unwrap()
                .replace_all(&s, with)
                .into_owned();
        }
        s
    }

    /// The URLs the fake `xdg-open` was given so far.
    fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.root().join("xdg.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// `pi mcp <args>`; with `browser`, opens the URL pi hands to `xdg-open`.
fn cli(env: &Env, out: &mut String, args: &[&str], browser: bool) {
    let before = env.opened().len();
    let child = env
        .command(&[&["mcp"], args].concat())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if browser {
        let deadline = Instant::now() + Duration::from_secs(20);
        while env.opened().len() == before {
            assert!(Instant::now() < deadline, "pi never opened the browser");
            std::thread::sleep(Duration::from_millis(20));
        }
        browse(&env.opened()[before], true);
    }
    let o = child.wait_with_output().unwrap();
    out.push_str(&format!("== pi mcp {}\n", args.join(" ")));
    out.push_str(&env.norm(&String::from_utf8_lossy(&o.stdout)));
    for line in String::from_utf8_lossy(&o.stderr).lines() {
        out.push_str(&format!("ERR: {}\n", env.norm(line)));
    }
    out.push_str(&format!("exit {}\n", o.status.code().unwrap_or(-1)));
}

struct Rpc {
    stdin: std::process::ChildStdin,
    lines: Receiver<String>,
    child: std::process::Child,
}

impl Rpc {
    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Records lines until one matches.
    fn until(&self, env: &Env, out: &mut String, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .expect("pi went quiet");
            out.push_str(&env.norm(&line));
            out.push('\n');
            let v: Value = serde_json::from_str(&line).unwrap();
            if pred(&v) {
                return v;
            }
        }
    }
}

fn response(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |v| v["type"] == "response" && v["id"] == id
}

fn method(m: &str) -> impl Fn(&Value) -> bool + '_ {
    move |v| v["method"] == m
}

fn sign_in_notice(v: &Value) -> bool {
    v["method"] == "notify"
        && v["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Sign in to")
}

fn rpc_steps(env: &Env, out: &mut String) {
    let mut child = env
        .command(&["--mode", "rpc", "--no-session"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut rpc = Rpc {
        stdin: child.stdin.take().unwrap(),
        lines,
        child,
    };
    let prompt = |id: &str, message: &str| json!({"id": id, "type": "prompt", "message": message});
    out.push_str("## /mcp\n");
    rpc.send(prompt("1", "/mcp"));
    rpc.until(env, out, response("1"));

    out.push_str("## /mcp login (browser)\n");
    rpc.send(prompt("2", "/mcp login"));
    let notice = rpc.until(env, out, sign_in_notice);
    let url = notice["message"]
        .as_str()
        .unwrap()
        .split('\n')
        .nth(1)
        .unwrap()
        .to_string();
    rpc.until(env, out, method("input"));
    browse(&url, true);
    rpc.until(env, out, response("2"));

    out.push_str("## /mcp, logouts\n");
    rpc.send(prompt("3", "/mcp"));
    rpc.until(env, out, response("3"));
    rpc.send(prompt("4", "/mcp logout web"));
    rpc.until(env, out, response("4"));
    rpc.send(prompt("5", "/mcp logout"));
    rpc.until(env, out, response("5"));

    out.push_str("## /mcp login web (pasted)\n");
    rpc.send(prompt("6", "/mcp login web"));
    let notice = rpc.until(env, out, sign_in_notice);
    let url = notice["message"]
        .as_str()
        .unwrap()
        .split('\n')
        .nth(1)
        .unwrap()
        .to_string();
    let input = rpc.until(env, out, method("input"));
    let location = browse(&url, false);
    rpc.send(json!({"type": "extension_ui_response", "id": input["id"], "value": location}));
    rpc.until(env, out, response("6"));

    out.push_str("## cancelled, and a wrong paste\n");
    rpc.send(prompt("7", "/mcp logout web"));
    rpc.until(env, out, response("7"));
    rpc.send(prompt("8", "/mcp login web"));
    let input = rpc.until(env, out, method("input"));
    rpc.send(json!({"type": "extension_ui_response", "id": input["id"], "cancelled": true}));
    rpc.until(env, out, response("8"));
    rpc.send(prompt("9", "/mcp login web"));
    let input = rpc.until(env, out, method("input"));
    rpc.send(json!({"type": "extension_ui_response", "id": input["id"],
        "value": "http://127.0.0.1:1/elsewhere?code=x&state=y"}));
    rpc.until(env, out, response("9"));

    out.push_str("## other forms\n");
    rpc.send(prompt("10", "/mcp login nope"));
    rpc.until(env, out, response("10"));
    rpc.send(prompt("11", "/mcp reconnect"));
    rpc.until(env, out, response("11"));
    rpc.send(prompt("12", "/mcp a b c"));
    rpc.until(env, out, response("12"));
    drop(rpc.stdin);
    let _ = rpc.child.wait();
}

#[test]
fn signing_in_to_oauth_servers_matches_the_reference() {
    let reference = std::env::var("MCP_OAUTH_REFERENCE").ok();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = match &reference {
        Some(p) => std::fs::canonicalize(manifest.join("../..").join(p)).unwrap(),
        None => PathBuf::from(env!("CARGO_BIN_EXE_pi")),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let options = pi_test_support::mcp_http::HttpOptions {
        server: pi_test_support::mcp_server::ServerOptions::from_args(Vec::<String>::new())
            .unwrap(),
        oauth: Some(Default::default()),
        ..Default::default()
    };
    let server = rt
        .block_on(pi_test_support::mcp_http::serve(options, 0))
        .unwrap();
    let dir = pi_test_support::TempDir::new();
    for sub in ["home", "agent", "work", "bin"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let open = dir.path().join("bin/xdg-open");
    std::fs::write(&open, "#!/bin/sh\necho \"$1\" >> \"$XDG_LOG\"\n").unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("agent/mcp.json"),
        json!({"mcpServers": {"web": {"url": server.url()}}}).to_string(),
    )
    .unwrap();
    let node = manifest.join("../../conformance/.reference/node22/package/bin");
    let env = Env {
        path: format!(
            "{}:{}:/usr/bin:/bin",
            dir.path().join("bin").display(),
            node.display()
        ),
        urls: vec![(server.url(), "<URL>".into())],
        program,
        dir,
    };
    let mut out = String::new();
    cli(&env, &mut out, &["list"], false);
    cli(&env, &mut out, &["login", "web"], true);
    out.push_str("== mcp-auth.json\n");
    out.push_str(
        &env.norm(&std::fs::read_to_string(env.root().join("agent/mcp-auth.json")).unwrap()),
    );
    cli(&env, &mut out, &["list"], false);
    cli(&env, &mut out, &["login", "web"], false);
    cli(&env, &mut out, &["logout", "web"], false);
    cli(&env, &mut out, &["logout", "web"], false);
    cli(&env, &mut out, &["login", "web", "--timeout", "1"], false);
    cli(&env, &mut out, &["login", "web", "--timeout", "0"], false);
    rpc_steps(&env, &mut out);
    let fixture = manifest.join(FIXTURE);
    if reference.is_some() {
        std::fs::write(&fixture, &out).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(out, expected);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How pi identifies itself: its Client ID Metadata Document (general, or specific to the MCP
/// server when the authorization server does not send `iss`), dynamic registration when
/// `clientName` or `clientRegistration: "dcr"` asks for it, a pre-registered confidential
/// client (right and wrong secret), and `clientRegistration: "cimd"` where documents are not
/// supported.
#[test]
fn client_identification_matches_the_reference() {
    use pi_test_support::mcp_http::{HttpOptions, OAuthOptions, serve};
    let reference = std::env::var("MCP_OAUTH_REFERENCE").ok();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = match &reference {
        Some(p) => std::fs::canonicalize(manifest.join("../..").join(p)).unwrap(),
        None => PathBuf::from(env!("CARGO_BIN_EXE_pi")),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let start = |oauth: OAuthOptions| {
        let options = HttpOptions {
            server: pi_test_support::mcp_server::ServerOptions::from_args(Vec::<String>::new())
                .unwrap(),
            oauth: Some(oauth),
            ..Default::default()
        };
        rt.block_on(serve(options, 0)).unwrap()
    };
    let with_iss = start(OAuthOptions {
        metadata_documents: true,
        iss: true,
        ..Default::default()
    });
    let without_iss = start(OAuthOptions {
        metadata_documents: true,
        ..Default::default()
    });
    let confidential = start(OAuthOptions {
        client: Some(("pre-1".into(), "s3cret".into())),
        ..Default::default()
    });
    let plain = start(OAuthOptions::default());
    let dir = pi_test_support::TempDir::new();
    for sub in ["home", "agent", "work", "bin"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let open = dir.path().join("bin/xdg-open");
    std::fs::write(&open, "#!/bin/sh\necho \"$1\" >> \"$XDG_LOG\"\n").unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let port = free_port();
    let servers = json!({"mcpServers": {
        "docs": {"url": with_iss.url()},
        "docs2": {"url": without_iss.url()},
        "named": {"url": without_iss.url(), "oauth": {"clientName": "Claude Code"}},
        "dcr": {"url": with_iss.url(), "oauth": {"clientRegistration": "dcr"}},
        "private": {"url": confidential.url(),
            "oauth": {"clientId": "pre-1", "clientSecret": "${PRIVATE_SECRET}", "callbackPort": port}},
        "wrong": {"url": confidential.url(), "oauth": {"clientId": "pre-1", "clientSecret": "nope"}},
        "strict": {"url": plain.url(), "oauth": {"clientRegistration": "cimd"}},
        "custom": {"url": plain.url(), "oauth": {"authServerMetadataUrl":
            format!("http://127.0.0.1:{}/.well-known/openid-configuration", plain.port)}},
    }});
    std::fs::write(dir.path().join("agent/mcp.json"), servers.to_string()).unwrap();
    let node = manifest.join("../../conformance/.reference/node22/package/bin");
    let mut urls = Vec::new();
    for (server, name) in [
        (&with_iss, "A"),
        (&without_iss, "B"),
        (&confidential, "C"),
        (&plain, "D"),
    ] {
        urls.push((server.url(), format!("<URL-{name}>")));
        let id = pi_mcp::oauth::flow::callback_id(&server.url());
        urls.push((id, format!("<ID-{name}>")));
    }
    let env = Env {
        path: format!(
            "{}:{}:/usr/bin:/bin",
            dir.path().join("bin").display(),
            node.display()
        ),
        urls,
        program,
        dir,
    };
    let mut out = String::new();
    cli(&env, &mut out, &["list"], false);
    for name in ["docs", "docs2", "named", "dcr", "private"] {
        cli(&env, &mut out, &["login", name], true);
    }
    cli(&env, &mut out, &["login", "wrong"], true);
    cli(&env, &mut out, &["login", "strict"], false);
    cli(&env, &mut out, &["login", "custom"], true);
    out.push_str("== mcp-auth.json\n");
    out.push_str(
        &env.norm(&std::fs::read_to_string(env.root().join("agent/mcp-auth.json")).unwrap()),
    );
    cli(&env, &mut out, &["list"], false);
    // What each authorization server was asked, in order (`/mcp` requests left out).
    for (server, name) in [
        (&with_iss, "A"),
        (&without_iss, "B"),
        (&confidential, "C"),
        (&plain, "D"),
    ] {
        out.push_str(&format!("== requests to {name}\n"));
        for line in server.log.lock().unwrap().iter() {
            if !line.starts_with("POST -")
                && !line.contains(" session-")
                && !line.starts_with("GET -")
            {
                out.push_str(&format!("{line}\n"));
            }
        }
    }
    let fixture = manifest.join("tests/fixtures/mcp_oauth_clients.txt");
    if reference.is_some() {
        std::fs::write(&fixture, &out).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(out, expected);
}

/// What a model request shows of MCP: the declared tools and every paragraph that speaks of
/// MCP servers (the `mcp_servers` section, wherever it is).
fn mcp_view(body: &Value) -> String {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut out = format!("tools: {}\n", tools.join(", "));
    let mut texts = Vec::new();
    strings(&body["messages"], &mut texts);
    for text in texts {
        for para in text.split("\n\n") {
            if para.contains("<mcp_servers>") || para.contains("MCP servers whose") {
                out.push_str(&format!("> {}\n", para.replace('\n', "\n> ")));
            }
        }
    }
    out
}

/// A session started while the server needs sign-in picks up a `pi mcp login` made in another
/// process on its next turn: the server connects and a codemode script calls its tool.
#[test]
fn a_running_session_uses_a_sign_in_made_elsewhere_on_its_next_turn() {
    use pi_test_support::mock::{MockLlm, Reply};
    let reference = std::env::var("MCP_OAUTH_REFERENCE").ok();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = match &reference {
        Some(p) => std::fs::canonicalize(manifest.join("../..").join(p)).unwrap(),
        None => PathBuf::from(env!("CARGO_BIN_EXE_pi")),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let options = pi_test_support::mcp_http::HttpOptions {
        server: pi_test_support::mcp_server::ServerOptions::from_args(Vec::<String>::new())
            .unwrap(),
        oauth: Some(Default::default()),
        ..Default::default()
    };
    let server = rt
        .block_on(pi_test_support::mcp_http::serve(options, 0))
        .unwrap();
    let replies: Vec<Reply> = serde_json::from_value(json!([
        {"text": "one"},
        {"stream": [{"tool_call": {"id": "call_1", "name": "codemode", "args": {"code":
            "const r = await tools.mcp__web__echo({ text: \"signed in\" });\nreturn r.content[0].text;"}}}]},
        {"text": "two"},
        {"stream": [{"tool_call": {"id": "call_2", "name": "codemode", "args": {"code":
            "const r = await tools.mcp__web__echo({ text: \"refreshed\" });\nreturn r.content[0].text;"}}}]},
        {"text": "three"},
        {"stream": [{"tool_call": {"id": "call_3", "name": "codemode", "args": {"code":
            "const r = await tools.mcp__web__echo({ text: \"gone\" });\nreturn r.content[0].text;"}}}]},
        {"text": "four"}
    ]))
    .unwrap();
    let mock = rt.block_on(MockLlm::start(replies)).unwrap();
    let dir = pi_test_support::TempDir::new();
    for sub in ["home", "agent", "work", "bin"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let open = dir.path().join("bin/xdg-open");
    std::fs::write(&open, "#!/bin/sh\necho \"$1\" >> \"$XDG_LOG\"\n").unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("agent/mcp.json"),
        json!({"mcpServers": {"web": {"url": server.url()}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent/models.json"),
        pi_test_support::conformance::sandbox::default_models(mock.port()).to_string(),
    )
    .unwrap();
    let node = manifest.join("../../conformance/.reference/node22/package/bin");
    let env = Env {
        path: format!(
            "{}:{}:/usr/bin:/bin",
            dir.path().join("bin").display(),
            node.display()
        ),
        urls: vec![(server.url(), "<URL>".into())],
        program,
        dir,
    };
    let mut child = env
        .command(&[
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "mock-openai",
            "--model",
            "mock-gpt",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut rpc = Rpc {
        stdin: child.stdin.take().unwrap(),
        lines,
        child,
    };
    // Only what speaks of the server: notices, tool results, the end of each run.
    let keep = |v: &Value| {
        matches!(
            v["type"].as_str(),
            Some("extension_ui_request" | "tool_execution_end" | "agent_end")
        ) || v["type"] == "response"
    };
    let mut out = String::new();
    let record_until = |rpc: &Rpc, out: &mut String, done: &dyn Fn(&Value) -> bool| loop {
        let line = rpc
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("pi went quiet");
        let v: Value = serde_json::from_str(&line).unwrap();
        if keep(&v) {
            let shown = if v["type"] == "agent_end" {
                json!({"type": "agent_end"})
            } else {
                v.clone()
            };
            out.push_str(&env.norm(&shown.to_string()));
            out.push('\n');
        }
        if done(&v) {
            break;
        }
    };
    out.push_str("## first turn (needs sign-in)\n");
    rpc.send(json!({"id": "1", "type": "prompt", "message": "first"}));
    record_until(&rpc, &mut out, &|v| v["type"] == "agent_end");
    cli(&env, &mut out, &["login", "web"], true);
    out.push_str("## second turn\n");
    rpc.send(json!({"id": "2", "type": "prompt", "message": "second"}));
    record_until(&rpc, &mut out, &|v| v["type"] == "agent_end");
    out.push_str("## third turn (access token rejected: refreshed)\n");
    server.revoke_access_tokens();
    rpc.send(json!({"id": "3", "type": "prompt", "message": "third"}));
    record_until(&rpc, &mut out, &|v| v["type"] == "agent_end");
    out.push_str("## fourth turn (grant gone)\n");
    server.revoke_access_tokens();
    server.revoke_refresh_tokens();
    rpc.send(json!({"id": "4", "type": "prompt", "message": "fourth"}));
    record_until(&rpc, &mut out, &|v| v["type"] == "agent_end");
    rpc.send(json!({"id": "5", "type": "prompt", "message": "/mcp"}));
    record_until(&rpc, &mut out, &|v| {
        v["type"] == "response" && v["id"] == "5"
    });
    drop(rpc.stdin);
    let _ = rpc.child.wait();
    out.push_str("## authorization server requests\n");
    for line in server.log.lock().unwrap().iter() {
        if !line.starts_with("POST -") && !line.contains(" session-") && !line.starts_with("GET -")
        {
            out.push_str(&format!("{line}\n"));
        }
    }
    for (i, req) in mock.requests().iter().enumerate() {
        out.push_str(&format!("## model request {}\n", i + 1));
        out.push_str(&env.norm(&mcp_view(&req.body)));
    }
    let fixture = manifest.join("tests/fixtures/mcp_oauth_next_turn.txt");
    if reference.is_some() {
        std::fs::write(&fixture, &out).unwrap();
        return;
    }
    if let Ok(p) = std::env::var("MCP_OAUTH_ACTUAL") {
        std::fs::write(p, &out).unwrap();
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(out, expected);
}

/// `auth.provider` sends a model provider's credential instead of OAuth: with the key of
/// `models.json` the server connects; a provider without credentials needs its `/login`.
#[test]
fn provider_credentials_match_the_reference() {
    use pi_test_support::mcp_http::{HttpOptions, OAuthOptions, serve};
    let reference = std::env::var("MCP_OAUTH_REFERENCE").ok();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = match &reference {
        Some(p) => std::fs::canonicalize(manifest.join("../..").join(p)).unwrap(),
        None => PathBuf::from(env!("CARGO_BIN_EXE_pi")),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let options = HttpOptions {
        server: pi_test_support::mcp_server::ServerOptions::from_args(Vec::<String>::new())
            .unwrap(),
        oauth: Some(OAuthOptions {
            accepted_tokens: vec!["dummy".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let server = rt.block_on(serve(options, 0)).unwrap();
    let dir = pi_test_support::TempDir::new();
    for sub in ["home", "agent", "work", "bin"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    std::fs::write(
        dir.path().join("agent/mcp.json"),
        json!({"mcpServers": {
            "keyed": {"url": server.url(), "auth": {"provider": "mock-openai"}},
            "keyless": {"url": server.url(), "auth": {"provider": "anthropic"}},
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent/models.json"),
        pi_test_support::conformance::sandbox::default_models(1).to_string(),
    )
    .unwrap();
    let node = manifest.join("../../conformance/.reference/node22/package/bin");
    let env = Env {
        path: format!(
            "{}:{}:/usr/bin:/bin",
            dir.path().join("bin").display(),
            node.display()
        ),
        urls: vec![(server.url(), "<URL>".into())],
        program,
        dir,
    };
    let mut out = String::new();
    cli(&env, &mut out, &["list"], false);
    cli(&env, &mut out, &["login", "keyless"], false);
    cli(&env, &mut out, &["logout", "keyed"], false);
    // The client waits a second for its `GET` stream's answer before it closes; on a loaded
    // machine the request can still be on its way when the command has exited.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("GET session-"))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Sorted: the servers connect at the same time.
    out.push_str("== requests (sorted)\n");
    let mut lines: Vec<String> = server
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    lines.sort();
    for line in lines {
        out.push_str(&format!("{line}\n"));
    }
    let fixture = manifest.join("tests/fixtures/mcp_oauth_provider.txt");
    if reference.is_some() {
        std::fs::write(&fixture, &out).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(out, expected);
}
