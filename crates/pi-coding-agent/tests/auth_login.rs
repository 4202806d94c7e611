//! `pi auth login` on a terminal (a pseudo-terminal from `script`), against a loopback server
//! that plays GitHub's device-code and Copilot token endpoints, and Anthropic's token endpoint
//! for a pasted code: the credential lands in auth.json as Pi stores it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

type Route = Box<dyn Fn(&str, &str, usize) -> (u16, Value) + Send + Sync>;
/// Requests as received: path and body.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// Answers each request with `route(method, path, nth request to that path)`; records bodies.
fn server(route: Route) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(32) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            let mut parts = first.split(' ');
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let l = line.trim_end().to_ascii_lowercase();
                if let Some(v) = l.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if l.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let nth = {
                let mut seen = s.lock().unwrap();
                seen.push((path.clone(), String::from_utf8_lossy(&body).into_owned()));
                seen.iter().filter(|(p, _)| *p == path).count() - 1
            };
            let (status, reply) = route(&method, &path, nth);
            let text = reply.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

/// Runs `pi <args>` on a pseudo-terminal, typing `input`.
fn on_terminal(root: &Path, args: &str, origin: &str, input: &str) -> (String, i32) {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_pi"));
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_OFFLINE", "1")
        .env("PI_OAUTH_ENDPOINT_ORIGIN", origin)
        .env("TERM", "dumb")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    std::thread::spawn(move || {
        // Give the prompt time to appear, then type.
        std::thread::sleep(std::time::Duration::from_millis(500));
        let _ = stdin.write_all(input.as_bytes());
        std::thread::sleep(std::time::Duration::from_secs(5));
    });
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        out.status.code().unwrap_or(-1),
    )
}

fn stored(root: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root.join("agent/auth.json")).unwrap()).unwrap()
}

#[test]
fn github_copilot_device_code_login_stores_the_copilot_token() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (origin, seen) = server(Box::new(|_, path, nth| match path {
        "/login/device/code" => (
            200,
            json!({"device_code": "dc-1", "user_code": "ABCD-1234", "verification_uri": "https://github.com/login/device", "interval": 1, "expires_in": 60}),
        ),
        "/login/oauth/access_token" if nth == 0 => (200, json!({"error": "authorization_pending"})),
        "/login/oauth/access_token" => (200, json!({"access_token": "gho_user"})),
        "/copilot_internal/v2/token" => (
            200,
            json!({"token": "tid=1;exp=9;proxy-ep=proxy.individual.githubcopilot.com", "expires_at": 4_000_000_000u64}),
        ),
        "/models" => (
            200,
            json!({"data": [{"id": "gpt-4o", "model_picker_enabled": true, "policy": {"state": "enabled"}},
                            {"id": "off", "model_picker_enabled": false}]}),
        ),
        _ => (404, json!({})),
    }));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (out, code) = on_terminal(
        tmp.path(),
        "auth login github-copilot --no-browser",
        &origin,
        "\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("GitHub Enterprise URL/domain (blank for github.com) (company.ghe.com): "),
        "{out}"
    );
    assert!(
        out.contains("Open https://github.com/login/device and enter code: ABCD-1234\nWaiting for authentication...\n"),
        "{out}"
    );
    let auth_path = tmp.path().join("agent/auth.json");
    assert!(
        out.contains(&format!(
            "Logged in to GitHub Copilot. Credentials saved to {}",
            auth_path.display()
        )),
        "{out}"
    );
    let c = &stored(tmp.path())["github-copilot"];
    assert_eq!(c["type"], "oauth");
    assert_eq!(c["refresh"], "gho_user");
    assert_eq!(
        c["access"],
        "tid=1;exp=9;proxy-ep=proxy.individual.githubcopilot.com"
    );
    assert_eq!(c["expires"], json!(4_000_000_000_000u64 - 300_000));
    assert_eq!(c["availableModelIds"], json!(["gpt-4o"]));
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter()
            .filter(|(p, _)| p == "/login/oauth/access_token")
            .count(),
        2,
        "polled until authorized"
    );
    assert!(seen[0].1.contains("scope=read%3Auser"), "{:?}", seen[0]);
}

#[test]
fn anthropic_copy_code_login_exchanges_the_pasted_code() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (origin, seen) = server(Box::new(|_, path, _| match path {
        "/v1/oauth/token" => (
            200,
            json!({"access_token": "sk-ant-oat-new", "refresh_token": "sk-ant-ort-new", "expires_in": 3600}),
        ),
        _ => (404, json!({})),
    }));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    // --no-browser picks the copy-code method; the pasted `code#state` has no state check
    // issue because the state is the verifier, unknown here: paste the code alone.
    let (out, code) = on_terminal(
        tmp.path(),
        "auth login anthropic --no-browser",
        &origin,
        "the-code\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Select Anthropic login method: Copy code login (headless)\n"),
        "{out}"
    );
    assert!(out.contains("Open this URL to sign in:\n  https://claude.ai/oauth/authorize?code=true&client_id=9d1c250a-e61b-44d9-88ed-5944d1962f5e&response_type=code&redirect_uri=https%3A%2F%2Fplatform.claude.com%2Foauth%2Fcode%2Fcallback&scope=org%3Acreate_api_key+user%3Aprofile"), "{out}");
    assert!(
        out.contains("Paste the code Anthropic shows after you sign in: (code#state): "),
        "{out}"
    );
    let c = &stored(tmp.path())["anthropic"];
    assert_eq!(c["access"], "sk-ant-oat-new");
    assert_eq!(c["refresh"], "sk-ant-ort-new");
    let body: Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
    assert_eq!(body["grant_type"], "authorization_code");
    assert_eq!(body["code"], "the-code");
    assert_eq!(
        body["redirect_uri"],
        "https://platform.claude.com/oauth/code/callback"
    );
    assert_eq!(body["code_verifier"], body["state"]);
}

#[test]
fn openrouter_login_trades_a_pasted_code_for_a_key() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (origin, seen) = server(Box::new(|_, path, _| match path {
        "/api/v1/auth/keys" => (200, json!({"key": "sk-or-v1-new", "user_id": "u"})),
        _ => (404, json!({})),
    }));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (out, code) = on_terminal(
        tmp.path(),
        "auth login openrouter --no-browser",
        &origin,
        "http://127.0.0.1:1/oauth/callback/x?code=or-code\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Listening for OpenRouter OAuth callback on http://127.0.0.1:"),
        "{out}"
    );
    assert!(
        out.contains("Exchanging authorization code for an API key...\n"),
        "{out}"
    );
    assert_eq!(
        stored(tmp.path())["openrouter"],
        json!({"type": "oauth", "access": "sk-or-v1-new", "refresh": "", "expires": 9_007_199_254_740_991u64})
    );
    let body: Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
    assert_eq!(body["code"], "or-code");
    assert_eq!(body["code_challenge_method"], "S256");
}

#[test]
fn meta_device_login_mints_an_api_key() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (origin, seen) = server(Box::new(|_, path, _| match path {
        "/oidc/device/authorization/" => (
            200,
            json!({"device_code": "md", "user_code": "META-1", "verification_uri": "https://meta.ai/device", "interval": 1, "expires_in": 60}),
        ),
        "/oidc/device/token/" => (200, json!({"access_token": "identity-tok"})),
        "/muse-code/key" => (200, json!({"api_key": "meta-key-1"})),
        _ => (404, json!({})),
    }));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (out, code) = on_terminal(tmp.path(), "auth login meta --no-browser", &origin, "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Open https://meta.ai/device and enter code: META-1\nWaiting for authentication...\nEnabling Meta Model API access...\n"),
        "{out}"
    );
    let c = &stored(tmp.path())["meta"];
    assert_eq!(c["refresh"], "identity-tok");
    assert_eq!(c["access"], "meta-key-1");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.last().unwrap().0, "/muse-code/key");
}

#[test]
fn radius_device_login_stores_the_gateway_token() {
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (origin, _seen) = server(Box::new(|_, path, nth| match path {
        "/v1/oauth/device" => (
            200,
            json!({"device_code": "rd", "user_code": "RAD-1", "verification_uri": "https://radius.example/device", "interval": 1, "expires_in": 60}),
        ),
        "/v1/oauth/token" if nth == 0 => (400, json!({"error": "authorization_pending"})),
        "/v1/oauth/token" => (
            200,
            json!({"access_token": "rad-a", "refresh_token": "rad-r", "expires_in": 3600, "scope": "gateway offline_access"}),
        ),
        _ => (404, json!({})),
    }));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (out, code) = on_terminal(tmp.path(), "auth login radius --no-browser", &origin, "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "Sign in to Radius: Sign in with device code (when signing in from another device)\n"
        ),
        "{out}"
    );
    let c = &stored(tmp.path())["radius"];
    assert_eq!(c["access"], "rad-a");
    assert_eq!(c["refresh"], "rad-r");
    assert_eq!(c["scope"], "gateway offline_access");
}
