//! `pi auth login` through the browser: the sign-in URL goes to `xdg-open` (here a stand-in
//! that records it), the test plays the browser by calling the loopback redirect URI the URL
//! names with a code and the URL's state, and the provider's token endpoint (a loopback server,
//! `PI_OAUTH_ENDPOINT_ORIGIN`) trades the code: the credential lands in auth.json. Covers
//! Anthropic, OpenAI Codex and OpenRouter, and a callback with the wrong state being refused.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a login may take to finish after the callback.
const FINISH: Duration = Duration::from_secs(15);

/// Requests as received: path and body.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A token endpoint answering `reply` on `path` (404 elsewhere); records bodies.
fn token_server(path: &'static str, reply: Value) -> (String, Seen) {
    server(vec![(path, reply)])
}

/// Answers each of `routes` (path, JSON) with 200, anything else with 404; records bodies.
fn server(routes: Vec<(&'static str, Value)>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(8) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let target = first.split(' ').nth(1).unwrap_or("").to_string();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            s.lock()
                .unwrap()
                .push((target.clone(), String::from_utf8_lossy(&body).into_owned()));
            let (status, text) = match routes.iter().find(|(p, _)| *p == target) {
                Some((_, reply)) => (200, reply.to_string()),
                None => (404, "{}".to_string()),
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

/// `encodeURIComponent`'s inverse for the query values we read.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

/// `GET <url>` on loopback; the status.
fn browser_get(url: &str) -> u16 {
    let rest = url.split_once("://").unwrap().1;
    let (host, path) = rest.split_once('/').unwrap();
    let host = host.replace("localhost", "127.0.0.1");
    let mut conn = TcpStream::connect(&host).unwrap();
    write!(
        conn,
        "GET /{path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = conn.read_to_string(&mut text);
    text.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0)
}

struct Login {
    out: String,
    code: i32,
    /// The URL handed to the browser.
    opened: String,
    /// The status the callback server answered the browser with.
    callback_status: u16,
}

/// Runs `pi auth login <provider>` on a pseudo-terminal with a recording `xdg-open`; once the
/// URL is opened, calls `redirect(url)` (the address the browser is sent back to) with
/// `code=browser-code` and the parameters `extra(url)` (`&state=...`).
fn browser_login(
    root: &Path,
    provider: &str,
    origin: &str,
    redirect: fn(&str) -> String,
    extra: fn(&str) -> String,
    wait: Duration,
) -> Login {
    // Several providers listen on one fixed callback port (Anthropic's, OpenAI's): logins of
    // parallel tests would answer each other's browser, so one runs at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = root.join("opened.txt");
    let script = bin.join("xdg-open");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            opened.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = format!("{} auth login {provider}", env!("CARGO_BIN_EXE_pi"));
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_OFFLINE", "1")
        .env("PI_OAUTH_ENDPOINT_ORIGIN", origin)
        .env("TERM", "dumb")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let deadline = Instant::now() + Duration::from_secs(15);
    let url = loop {
        if let Ok(text) = std::fs::read_to_string(&opened)
            && let Some(line) = text.lines().next()
        {
            break line.to_string();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no URL was opened");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let callback = format!("{}?code=browser-code{}", redirect(&url), extra(&url));
    let callback_status = browser_get(&callback);
    // Wait for the exit (bounded); a login still waiting is killed.
    let deadline = Instant::now() + wait;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    Login {
        out: String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        code: out.status.code().unwrap_or(-1),
        opened: url,
        callback_status,
    }
}

fn stored(root: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root.join("agent/auth.json")).unwrap()).unwrap()
}

fn have_script() -> bool {
    Command::new("script").arg("--version").output().is_ok()
}

fn redirect_param(url: &str) -> String {
    query_param(url, "redirect_uri").unwrap()
}

fn state_param(url: &str) -> String {
    format!("&state={}", query_param(url, "state").unwrap())
}

#[test]
fn anthropic_browser_login_takes_the_loopback_callback() {
    if !have_script() {
        return;
    }
    let (origin, seen) = token_server(
        "/v1/oauth/token",
        json!({"access_token": "sk-ant-oat-b", "refresh_token": "sk-ant-ort-b", "expires_in": 3600}),
    );
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "anthropic",
        &origin,
        redirect_param,
        state_param,
        FINISH,
    );
    assert_eq!(login.code, 0, "{}", login.out);
    assert_eq!(login.callback_status, 200);
    assert!(
        login
            .opened
            .starts_with("https://claude.ai/oauth/authorize?code=true&")
    );
    let redirect = redirect_param(&login.opened);
    assert!(redirect.starts_with("http://localhost:"), "{redirect}");
    assert!(redirect.ends_with("/callback"), "{redirect}");
    let c = &stored(tmp.path())["anthropic"];
    assert_eq!(c["access"], "sk-ant-oat-b");
    assert_eq!(c["refresh"], "sk-ant-ort-b");
    let body: Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
    assert_eq!(body["code"], "browser-code");
    assert_eq!(body["redirect_uri"], redirect.as_str());
    assert_eq!(body["code_verifier"], body["state"]);
}

/// OpenAI's two sign-ins share port 1455, so they run one after the other.
#[test]
fn openai_sign_ins_take_the_callback_on_port_1455() {
    if !have_script() || TcpListener::bind("127.0.0.1:1455").is_err() {
        return;
    }
    codex_browser_login_takes_the_callback();
    chatgpt_sign_in_registers_a_client_and_stores_its_id();
}

fn codex_browser_login_takes_the_callback() {
    // The access token names the ChatGPT account.
    let access = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC0xMjM0In19.sig";
    let (origin, seen) = token_server(
        "/oauth/token",
        json!({"access_token": access, "refresh_token": "r-codex", "expires_in": 3600}),
    );
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "openai-codex",
        &origin,
        redirect_param,
        state_param,
        FINISH,
    );
    assert_eq!(login.code, 0, "{}", login.out);
    assert_eq!(login.callback_status, 200);
    assert_eq!(
        redirect_param(&login.opened),
        "http://localhost:1455/auth/callback"
    );
    let c = &stored(tmp.path())["openai-codex"];
    assert_eq!(c["access"], access);
    assert_eq!(c["accountId"], "acct-1234");
    let body = &seen.lock().unwrap()[0].1;
    assert!(body.contains("grant_type=authorization_code"), "{body}");
    assert!(body.contains("code=browser-code"), "{body}");
}

#[test]
fn openrouter_browser_login_takes_the_callback() {
    if !have_script() {
        return;
    }
    let (origin, seen) = token_server(
        "/api/v1/auth/keys",
        json!({"key": "sk-or-v1-b", "user_id": "u"}),
    );
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "openrouter",
        &origin,
        |url| query_param(url, "callback_url").unwrap(),
        |_| String::new(),
        FINISH,
    );
    assert_eq!(login.code, 0, "{}", login.out);
    assert_eq!(login.callback_status, 200);
    assert_eq!(stored(tmp.path())["openrouter"]["access"], "sk-or-v1-b");
    let body: Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
    assert_eq!(body["code"], "browser-code");
}

#[test]
fn a_callback_with_another_state_is_refused() {
    if !have_script() {
        return;
    }
    let (origin, seen) = token_server("/v1/oauth/token", json!({}));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "anthropic",
        &origin,
        redirect_param,
        |_| "&state=forged".into(),
        Duration::from_secs(2),
    );
    assert_eq!(login.callback_status, 400);
    // Still waiting for a proper callback: killed, nothing exchanged or stored.
    assert_ne!(login.code, 0);
    assert!(seen.lock().unwrap().is_empty());
    assert!(
        std::fs::read_to_string(tmp.path().join("agent/auth.json"))
            .map(|t| !t.contains("anthropic"))
            .unwrap_or(true)
    );
}

fn chatgpt_sign_in_registers_a_client_and_stores_its_id() {
    let (origin, seen) = token_server(
        "/api/accounts/oauth/token",
        json!({"access_token": "at-chatgpt", "refresh_token": "rt-chatgpt", "id_token": "idt",
            "scope": "openid resource.invoke chatgpt.tokens.use.direct", "expires_in": 3600}),
    );
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "openai",
        &origin,
        redirect_param,
        |url| format!("{}&client_id=issued-client", state_param(url)),
        FINISH,
    );
    assert_eq!(login.code, 0, "{}", login.out);
    assert_eq!(login.callback_status, 200);
    assert!(
        login
            .opened
            .starts_with("https://auth.openai.com/api/accounts/authorize?client_id=dynamic_agent_client&agent_name_hint=Pi&ext_agent_host_id=urn%3Auuid%3A"),
        "{}",
        login.opened
    );
    assert_eq!(
        redirect_param(&login.opened),
        "http://127.0.0.1:1455/auth/callback"
    );
    // The installation's device id was created in the global settings and names the host.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("agent/settings.json")).unwrap(),
    )
    .unwrap();
    let device = settings["deviceId"].as_str().unwrap();
    assert_eq!(
        query_param(&login.opened, "ext_agent_host_id").unwrap(),
        format!("urn:uuid:{device}")
    );
    let c = &stored(tmp.path())["openai"];
    assert_eq!(c["type"], "oauth");
    assert_eq!(c["access"], "at-chatgpt");
    assert_eq!(c["refresh"], "rt-chatgpt");
    assert_eq!(c["clientId"], "issued-client");
    assert_eq!(
        c["scopes"],
        json!(["openid", "resource.invoke", "chatgpt.tokens.use.direct"])
    );
    let body = seen.lock().unwrap()[0].1.clone();
    assert!(
        body.starts_with(
            "grant_type=authorization_code&client_id=issued-client&code=browser-code&code_verifier="
        ),
        "{body}"
    );
    assert!(body.ends_with("&redirect_uri=http%3A%2F%2F127.0.0.1%3A1455%2Fauth%2Fcallback&resource=https%3A%2F%2Fapi.openai.com%2Fv1"), "{body}");
}

#[test]
fn radius_browser_sign_in_trades_the_code_in_the_callback() {
    if !have_script() || TcpListener::bind("127.0.0.1:1456").is_err() {
        return;
    }
    let (origin, seen) = server(vec![
        (
            "/v1/oauth",
            json!({"authorizationEndpoint": "https://radius.example/authorize"}),
        ),
        (
            "/v1/oauth/token",
            json!({"access_token": "rad-b", "refresh_token": "rad-rb", "expires_in": 3600, "scope": "gateway offline_access"}),
        ),
    ]);
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let login = browser_login(
        tmp.path(),
        "radius",
        &origin,
        redirect_param,
        state_param,
        FINISH,
    );
    assert_eq!(login.code, 0, "{}", login.out);
    assert_eq!(login.callback_status, 200);
    assert!(
        login
            .opened
            .starts_with("https://radius.example/authorize?response_type=code&client_id=pi-gateway&redirect_uri=http%3A%2F%2F127.0.0.1%3A1456%2Foauth%2Fcallback&scope=gateway+offline_access&code_challenge="),
        "{}",
        login.opened
    );
    assert!(
        login.opened.contains("&handoff=url&state="),
        "{}",
        login.opened
    );
    assert!(
        login
            .out
            .contains("Listening for OAuth callback on http://127.0.0.1:1456/oauth/callback"),
        "{}",
        login.out
    );
    let c = &stored(tmp.path())["radius"];
    assert_eq!(c["access"], "rad-b");
    assert_eq!(c["scope"], "gateway offline_access");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "/v1/oauth");
    assert_eq!(seen[1].0, "/v1/oauth/token");
    assert!(seen[1].1.starts_with("grant_type=authorization_code&client_id=pi-gateway&redirect_uri=http%3A%2F%2F127.0.0.1%3A1456%2Foauth%2Fcallback&code=browser-code&code_verifier="), "{}", seen[1].1);
}
