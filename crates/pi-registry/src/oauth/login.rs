//! Account sign-in for `pi auth login`: the browser flows (PKCE with a loopback callback
//! server, or a pasted code/redirect URL) and the device-code flows, each producing the
//! credential Pi stores. The caller supplies the terminal side as an [`Interaction`].
//!
//! Built here: Anthropic (browser, copy code), OpenAI Codex (browser, device code), GitHub
//! Copilot, xAI, Kimi Code and Meta (device code), OpenRouter (browser), Radius (device code;
//! its browser sign-in is in `radius_login.rs`); Sign in with ChatGPT is in `chatgpt_login.rs`.

use super::refresh::{self, form, post};
pub use super::sign_in::{Answer, Choice, Interaction, Notice, pkce};
use super::sign_in::{percent_decode, random_b64url, read_request_head};
use super::{Flow, endpoint};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const ANTHROPIC_AUTHORIZE_URL: &str = "https://claude.ai/oauth/authorize";
const ANTHROPIC_CALLBACK_PORT: u16 = 53692;
const ANTHROPIC_COPY_CODE_REDIRECT: &str = "https://platform.claude.com/oauth/code/callback";
const ANTHROPIC_SCOPES: &str = "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload";
const CODEX_AUTHORIZE_URL: &str = "https://auth.openai.com/oauth/authorize";
const CODEX_REDIRECT_URI: &str = "http://localhost:1455/auth/callback";
const CODEX_DEVICE_USER_CODE_URL: &str = "https://auth.openai.com/api/accounts/deviceauth/usercode";
const CODEX_DEVICE_TOKEN_URL: &str = "https://auth.openai.com/api/accounts/deviceauth/token";
const CODEX_DEVICE_VERIFICATION: &str = "https://auth.openai.com/codex/device";
const CODEX_DEVICE_REDIRECT: &str = "https://auth.openai.com/deviceauth/callback";
const CODEX_SCOPE: &str = "openid profile email offline_access";
const COPILOT_CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
const XAI_DEVICE_CODE_URL: &str = "https://auth.x.ai/oauth2/device/code";
const XAI_SCOPE: &str = "openid profile email offline_access grok-cli:access api:access";

/// Signs in with `flow`; the credential to store.
pub async fn login(flow: &Flow, ui: &mut dyn Interaction) -> Result<Value, String> {
    match flow {
        Flow::Anthropic => anthropic(ui).await,
        Flow::OpenAiCodex => codex(ui).await,
        Flow::GithubCopilot => copilot(ui).await,
        Flow::Xai => xai(ui).await,
        Flow::Kimi => kimi(ui).await,
        Flow::OpenRouter => openrouter(ui).await,
        Flow::Meta => meta(ui).await,
        Flow::Radius { gateway } => radius(gateway, ui).await,
        Flow::OpenAiChatGpt => super::chatgpt_login::chatgpt(ui).await,
        other => Err(format!(
            "{} sign-in is not available in this build of pi in Rust; sign in with Pi, or use --api-key where the provider takes one",
            other.name()
        )),
    }
}

/// `code` and `state` from a pasted redirect URL, `code#state`, a query string or a bare code.
pub fn parse_authorization_input(input: &str) -> (Option<String>, Option<String>) {
    let value = input.trim();
    if value.is_empty() {
        return (None, None);
    }
    let query_of = |q: &str| {
        let mut code = None;
        let mut state = None;
        for pair in q.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v);
            match k {
                "code" => code = Some(v),
                "state" => state = Some(v),
                _ => {}
            }
        }
        (code, state)
    };
    if value.contains("://") {
        let q = value.split_once('?').map_or("", |(_, q)| q);
        return query_of(q.split('#').next().unwrap_or(""));
    }
    if let Some((code, state)) = value.split_once('#') {
        return (Some(code.to_string()), Some(state.to_string()));
    }
    if value.contains("code=") {
        return query_of(value);
    }
    (Some(value.to_string()), None)
}

/// A loopback server for the browser's redirect: resolves with the `code` of the first
/// request to `path` whose `state` matches.
struct Callback {
    redirect_uri: String,
    code: tokio::sync::oneshot::Receiver<Result<String, String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Callback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn callback_server(
    provider_name: &'static str,
    port: u16,
    path: &'static str,
    state: String,
) -> std::io::Result<Callback> {
    callback_server_at(
        provider_name,
        port,
        path.to_string(),
        Some(state),
        Some("localhost"),
    )
    .await
}

/// [`callback_server`] with an optional state check and the host the redirect URI names
/// (`None`: the address it listens on).
async fn callback_server_at(
    provider_name: &'static str,
    port: u16,
    path: String,
    state: Option<String>,
    redirect_host: Option<&str>,
) -> std::io::Result<Callback> {
    let host = std::env::var("PI_OAUTH_CALLBACK_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "127.0.0.1".into());
    let listener = tokio::net::TcpListener::bind((host.as_str(), port)).await?;
    let port = listener.local_addr()?.port();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let path_copy = path.clone();
    let task = tokio::spawn(async move {
        let mut tx = Some(tx);
        while let Ok((mut sock, _)) = listener.accept().await {
            let head = read_request_head(&mut sock).await;
            let target = head.split(' ').nth(1).unwrap_or("/");
            let (p, q) = target.split_once('?').unwrap_or((target, ""));
            let param = |name: &str| {
                q.split('&').find_map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (k == name).then(|| percent_decode(v))
                })
            };
            let (status, text, outcome) = if p != path {
                (404, "Callback route not found.".to_string(), None)
            } else if state.is_some() && param("state") != state {
                (400, "State mismatch.".to_string(), None)
            } else if let Some(err) = param("error") {
                let desc = param("error_description").unwrap_or(err);
                (
                    400,
                    format!("{provider_name} authorization failed. {desc}"),
                    Some(Err(format!("{provider_name} authorization failed: {desc}"))),
                )
            } else if let Some(code) = param("code") {
                (
                    200,
                    format!("Signed in to {provider_name}. You may now close this page."),
                    Some(Ok(code)),
                )
            } else {
                (400, "Missing authorization code.".to_string(), None)
            };
            let page = format!(
                "<!doctype html><meta charset=\"utf-8\"><title>pi</title><p>{}</p>",
                text.replace('&', "&amp;").replace('<', "&lt;")
            );
            let _ = sock
                .write_all(
                    format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            if let Some(o) = outcome
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(o);
                return;
            }
        }
    });
    let shown = redirect_host.map_or(host.clone(), String::from);
    let shown = if shown.contains(':') {
        format!("[{shown}]")
    } else {
        shown
    };
    Ok(Callback {
        redirect_uri: format!("http://{shown}:{port}{path_copy}"),
        code: rx,
        task,
    })
}

enum Got {
    Callback(String),
    Manual(String),
}

/// The browser's redirect, or a pasted code/URL, whichever comes first.
async fn callback_or_paste(
    ui: &mut dyn Interaction,
    callback: Option<Callback>,
    message: &str,
    placeholder: &str,
) -> Result<Got, String> {
    let Some(mut cb) = callback else {
        return ui.paste(message, Some(placeholder)).await.map(Got::Manual);
    };
    tokio::select! {
        r = &mut cb.code => match r {
            Ok(Ok(code)) => Ok(Got::Callback(code)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("OAuth callback server closed".into()),
        },
        r = ui.paste(message, Some(placeholder)) => r.map(Got::Manual),
    }
}

async fn anthropic(ui: &mut dyn Interaction) -> Result<Value, String> {
    let method = ui
        .select(
            "Select Anthropic login method:",
            &[
                ("browser", "Browser login (default)"),
                ("copy_code", "Copy code login (headless)"),
            ],
        )
        .await?;
    let (verifier, challenge) = pkce()?;
    let (redirect, callback) = if method == "copy_code" {
        (ANTHROPIC_COPY_CODE_REDIRECT.to_string(), None)
    } else if method == "browser" {
        let cb = match callback_server(
            "Anthropic",
            ANTHROPIC_CALLBACK_PORT,
            "/callback",
            verifier.clone(),
        )
        .await
        {
            Ok(cb) => Some(cb),
            Err(_) => callback_server("Anthropic", 0, "/callback", verifier.clone())
                .await
                .ok(),
        };
        let redirect = cb.as_ref().map_or_else(
            || format!("http://localhost:{ANTHROPIC_CALLBACK_PORT}/callback"),
            |c| c.redirect_uri.clone(),
        );
        (redirect, cb)
    } else {
        return Err(format!("Unknown Anthropic login method: {method}"));
    };
    let params = form(&[
        ("code", "true"),
        ("client_id", refresh::ANTHROPIC_CLIENT_ID),
        ("response_type", "code"),
        ("redirect_uri", &redirect),
        ("scope", ANTHROPIC_SCOPES),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", &verifier),
    ]);
    let copy = method == "copy_code";
    ui.notify(Notice::AuthUrl {
        url: format!("{ANTHROPIC_AUTHORIZE_URL}?{params}"),
        instructions: Some(if copy {
            "Complete login in your browser, then copy the code Anthropic shows and paste it here.".into()
        } else {
            "Complete login in your browser. If the browser is on another machine, paste the final redirect URL here.".into()
        }),
    });
    let (code, state) = if copy {
        let input = ui
            .ask(
                "Paste the code Anthropic shows after you sign in:",
                Some("code#state"),
            )
            .await?;
        parse_authorization_input(&input)
    } else {
        match callback_or_paste(
            ui,
            callback,
            "Complete login in your browser, or paste the authorization code / redirect URL here:",
            &redirect,
        )
        .await?
        {
            Got::Callback(code) => (Some(code), None),
            Got::Manual(input) => parse_authorization_input(&input),
        }
    };
    if state.as_ref().is_some_and(|s| *s != verifier) {
        return Err("OAuth state mismatch".into());
    }
    let code = code
        .filter(|c| !c.is_empty())
        .ok_or("Missing authorization code")?;
    let state = state.unwrap_or_else(|| verifier.clone());
    ui.notify(Notice::Progress(
        "Exchanging authorization code for tokens...".into(),
    ));
    let url = endpoint(refresh::ANTHROPIC_TOKEN_URL);
    let body = json!({"grant_type": "authorization_code", "client_id": refresh::ANTHROPIC_CLIENT_ID,
        "code": code, "state": state, "redirect_uri": redirect, "code_verifier": verifier});
    let reply = post(
        &url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        body.to_string(),
    )
    .await?;
    let fail = |details: String| {
        format!(
            "Token exchange request failed. url={}; redirect_uri={redirect}; response_type=authorization_code; details={details}",
            refresh::ANTHROPIC_TOKEN_URL
        )
    };
    if !reply.ok() {
        return Err(fail(format!(
            "Error: HTTP request failed. status={}; url={}; body={}",
            reply.status,
            refresh::ANTHROPIC_TOKEN_URL,
            reply.body
        )));
    }
    let data = reply.json().ok_or_else(|| {
        format!(
            "Token exchange returned invalid JSON. url={}; body={}",
            refresh::ANTHROPIC_TOKEN_URL,
            reply.body
        )
    })?;
    let expires_in = data["expires_in"].as_f64().unwrap_or(f64::NAN);
    Ok(
        json!({"type": "oauth", "refresh": data["refresh_token"], "access": data["access_token"],
        "expires": refresh::num(refresh::now() + expires_in * 1000.0 - 5.0 * 60.0 * 1000.0)}),
    )
}

/// Polls `poll` every `interval` until it answers, fails, or `expires_in` runs out
/// (Pi's `pollOAuthDeviceCodeFlow`).
async fn poll_device<F, Fut>(
    interval_s: Option<f64>,
    expires_in_s: f64,
    wait_first: bool,
    mut poll: F,
) -> Result<String, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll, String>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(expires_in_s.max(0.0));
    let mut interval =
        Duration::from_millis(((interval_s.unwrap_or(5.0) * 1000.0) as u64).max(1000));
    let mut slowed = false;
    if wait_first {
        tokio::time::sleep_until((tokio::time::Instant::now() + interval).min(deadline)).await;
    }
    while tokio::time::Instant::now() < deadline {
        match poll().await? {
            Poll::Done(v) => return Ok(v),
            Poll::Pending => {}
            Poll::SlowDown(s) => {
                slowed = true;
                interval = match s {
                    Some(s) if s > 0.0 => Duration::from_millis(((s * 1000.0) as u64).max(1000)),
                    _ => interval + Duration::from_secs(5),
                };
            }
        }
        let next = (tokio::time::Instant::now() + interval).min(deadline);
        tokio::time::sleep_until(next).await;
    }
    Err(if slowed {
        "Device flow timed out after one or more slow_down responses. This is often caused by clock drift in WSL or VM environments. Please sync or restart the VM clock and try again.".into()
    } else {
        "Device flow timed out".into()
    })
}

enum Poll {
    Done(String),
    Pending,
    SlowDown(Option<f64>),
}

async fn copilot(ui: &mut dyn Interaction) -> Result<Value, String> {
    let input = ui
        .ask(
            "GitHub Enterprise URL/domain (blank for github.com)",
            Some("company.ghe.com"),
        )
        .await?;
    let trimmed = input.trim();
    let domain = if trimmed.is_empty() {
        None
    } else {
        let rest = trimmed.split_once("://").map_or(trimmed, |(_, r)| r);
        let host = rest
            .split(['/', ':', '?', '#'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if host.is_empty() {
            return Err("Invalid GitHub Enterprise URL/domain".into());
        }
        Some(host)
    };
    let host = domain.clone().unwrap_or_else(|| "github.com".into());
    let headers = [
        ("Accept", "application/json"),
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ];
    let reply = post(
        &endpoint(&format!("https://{host}/login/device/code")),
        &headers,
        form(&[("client_id", COPILOT_CLIENT_ID), ("scope", "read:user")]),
    )
    .await?;
    if !reply.ok() {
        return Err(format!(
            "{} {}: {}",
            reply.status, reply.status_text, reply.body
        ));
    }
    let d = reply
        .json()
        .filter(Value::is_object)
        .ok_or("Invalid device code response")?;
    let (Some(device_code), Some(user_code), Some(uri), Some(expires)) = (
        d["device_code"].as_str(),
        d["user_code"].as_str(),
        d["verification_uri"].as_str(),
        d["expires_in"].as_f64(),
    ) else {
        return Err("Invalid device code response fields".into());
    };
    if !(uri.starts_with("https://") || uri.starts_with("http://")) {
        return Err("Untrusted verification_uri in device code response".into());
    }
    ui.notify(Notice::DeviceCode {
        user_code: user_code.to_string(),
        verification_uri: uri.to_string(),
    });
    let token_url = endpoint(&format!("https://{host}/login/oauth/access_token"));
    let github_token = poll_device(d["interval"].as_f64(), expires, true, || {
        let body = form(&[
            ("client_id", COPILOT_CLIENT_ID),
            ("device_code", device_code),
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ]);
        let url = token_url.clone();
        async move {
            let r = post(&url, &headers, body).await?;
            if !r.ok() {
                return Err(format!("{} {}: {}", r.status, r.status_text, r.body));
            }
            let raw = r.json().unwrap_or(Value::Null);
            if let Some(t) = raw["access_token"].as_str() {
                return Ok(Poll::Done(t.to_string()));
            }
            match raw["error"].as_str() {
                Some("authorization_pending") => Ok(Poll::Pending),
                Some("slow_down") => Ok(Poll::SlowDown(raw["interval"].as_f64())),
                Some(e) => Err(format!(
                    "Device flow failed: {e}{}",
                    raw["error_description"]
                        .as_str()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                )),
                None => Err("Invalid device token response".into()),
            }
        }
    })
    .await?;
    refresh::copilot_token(&github_token, domain).await
}

async fn codex(ui: &mut dyn Interaction) -> Result<Value, String> {
    let method = ui
        .select(
            "Select OpenAI Codex login method:",
            &[
                ("browser", "Browser login (default)"),
                ("device_code", "Device code login (headless)"),
            ],
        )
        .await?;
    let (code, verifier, redirect) = match method.as_str() {
        "device_code" => codex_device(ui).await?,
        "browser" => codex_browser(ui).await?,
        other => return Err(format!("Unknown OpenAI Codex login method: {other}")),
    };
    let reply = post(
        &endpoint(refresh::CODEX_TOKEN_URL),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form(&[
            ("grant_type", "authorization_code"),
            ("client_id", refresh::CODEX_CLIENT_ID),
            ("code", &code),
            ("code_verifier", &verifier),
            ("redirect_uri", &redirect),
        ]),
    )
    .await?;
    if !reply.ok() {
        let text = if reply.body.is_empty() {
            reply.status_text.clone()
        } else {
            reply.body.clone()
        };
        return Err(format!(
            "OpenAI Codex token exchange failed ({}): {text}",
            reply.status
        ));
    }
    refresh::codex_credential(&reply.json().unwrap_or(Value::Null))
}

async fn codex_browser(ui: &mut dyn Interaction) -> Result<(String, String, String), String> {
    let (verifier, challenge) = pkce()?;
    let state = random_b64url(16)?;
    let params = form(&[
        ("response_type", "code"),
        ("client_id", refresh::CODEX_CLIENT_ID),
        ("redirect_uri", CODEX_REDIRECT_URI),
        ("scope", CODEX_SCOPE),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", &state),
        ("id_token_add_organizations", "true"),
        ("codex_cli_simplified_flow", "true"),
        ("originator", "pi"),
    ]);
    // Port 1455 is shared with the Codex CLI; when it is taken, the pasted URL finishes it.
    let cb = callback_server("OpenAI", 1455, "/auth/callback", state.clone())
        .await
        .ok();
    ui.notify(Notice::AuthUrl {
        url: format!("{CODEX_AUTHORIZE_URL}?{params}"),
        instructions: Some("A browser window should open. Complete login to finish.".into()),
    });
    let code = match callback_or_paste(
        ui,
        cb,
        "Complete login in your browser, or paste the authorization code / redirect URL here:",
        CODEX_REDIRECT_URI,
    )
    .await?
    {
        Got::Callback(code) => Some(code),
        Got::Manual(input) => {
            let (code, got_state) = parse_authorization_input(&input);
            if got_state.is_some_and(|s| s != state) {
                return Err("State mismatch".into());
            }
            code
        }
    };
    let code = code
        .filter(|c| !c.is_empty())
        .ok_or("Missing authorization code")?;
    Ok((code, verifier, CODEX_REDIRECT_URI.to_string()))
}

async fn codex_device(ui: &mut dyn Interaction) -> Result<(String, String, String), String> {
    let reply = post(
        &endpoint(CODEX_DEVICE_USER_CODE_URL),
        &[("Content-Type", "application/json")],
        json!({"client_id": refresh::CODEX_CLIENT_ID}).to_string(),
    )
    .await?;
    if !reply.ok() {
        if reply.status == 404 {
            return Err("OpenAI Codex device code login is not enabled for this server. Use browser login or verify the server URL.".into());
        }
        return Err(format!(
            "OpenAI Codex device code request failed with status {}{}",
            reply.status,
            if reply.body.is_empty() {
                String::new()
            } else {
                format!(": {}", reply.body)
            }
        ));
    }
    let j = reply.json().unwrap_or(Value::Null);
    let interval = match &j["interval"] {
        Value::String(s) => s.trim().parse::<f64>().ok(),
        v => v.as_f64(),
    };
    let (Some(id), Some(user_code), Some(interval)) = (
        j["device_auth_id"].as_str().filter(|s| !s.is_empty()),
        j["user_code"].as_str().filter(|s| !s.is_empty()),
        interval.filter(|i| i.is_finite() && *i >= 0.0),
    ) else {
        return Err(format!(
            "Invalid OpenAI Codex device code response: {}",
            pi_js::json::to_js_string(&j).unwrap_or_default()
        ));
    };
    ui.notify(Notice::DeviceCode {
        user_code: user_code.to_string(),
        verification_uri: CODEX_DEVICE_VERIFICATION.to_string(),
    });
    let url = endpoint(CODEX_DEVICE_TOKEN_URL);
    let body = json!({"device_auth_id": id, "user_code": user_code}).to_string();
    let done = poll_device(Some(interval), 15.0 * 60.0, false, || {
        let (url, body) = (url.clone(), body.clone());
        async move {
            let r = post(&url, &[("Content-Type", "application/json")], body).await?;
            if r.ok() {
                let j = r.json().unwrap_or(Value::Null);
                return match (
                    j["authorization_code"].as_str(),
                    j["code_verifier"].as_str(),
                ) {
                    (Some(c), Some(v)) if !c.is_empty() && !v.is_empty() => {
                        Ok(Poll::Done(format!("{c}\n{v}")))
                    }
                    _ => Err(format!(
                        "Invalid OpenAI Codex device auth token response: {}",
                        pi_js::json::to_js_string(&j).unwrap_or_default()
                    )),
                };
            }
            if r.status == 403 || r.status == 404 {
                return Ok(Poll::Pending);
            }
            let code = r.json().map(|j| match &j["error"] {
                Value::Object(o) => o.get("code").and_then(Value::as_str).map(String::from),
                v => v.as_str().map(String::from),
            });
            match code.flatten().as_deref() {
                Some("deviceauth_authorization_pending") => Ok(Poll::Pending),
                Some("slow_down") => Ok(Poll::SlowDown(None)),
                _ => Err(format!(
                    "OpenAI Codex device auth failed with status {}{}",
                    r.status,
                    if r.body.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", r.body)
                    }
                )),
            }
        }
    })
    .await?;
    let (code, verifier) = done.split_once('\n').unwrap_or((&done, ""));
    Ok((
        code.to_string(),
        verifier.to_string(),
        CODEX_DEVICE_REDIRECT.to_string(),
    ))
}

async fn xai(ui: &mut dyn Interaction) -> Result<Value, String> {
    let headers = [
        ("Accept", "application/json"),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let reply = post(
        &endpoint(XAI_DEVICE_CODE_URL),
        &headers,
        form(&[
            ("client_id", refresh::XAI_CLIENT_ID),
            ("scope", XAI_SCOPE),
            ("referrer", "pi"),
        ]),
    )
    .await?;
    let body = reply
        .json()
        .ok_or_else(|| format!("xAI OAuth returned invalid JSON (HTTP {})", reply.status))?;
    let failure = |action: &str, status: u16, b: &Value| {
        let detail: Vec<&str> = [b["error"].as_str(), b["error_description"].as_str()]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        let detail = detail.join(": ");
        format!(
            "xAI OAuth {action} failed (HTTP {status}){}",
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        )
    };
    if !reply.ok() {
        return Err(failure("device authorization", reply.status, &body));
    }
    let field = |k: &str| {
        body[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from)
            .ok_or_else(|| format!("Invalid xAI OAuth response field: {k}"))
    };
    let (device_code, user_code, uri) = (
        field("device_code")?,
        field("user_code")?,
        field("verification_uri")?,
    );
    let complete = body["verification_uri_complete"].as_str().map(String::from);
    let expires = body["expires_in"]
        .as_f64()
        .filter(|e| *e > 0.0)
        .ok_or("Invalid xAI OAuth response field: expires_in")?;
    for u in std::iter::once(&uri).chain(complete.iter()) {
        if !u.starts_with("https://") {
            return Err("Untrusted verification URI in xAI OAuth response".into());
        }
    }
    ui.notify(Notice::DeviceCode {
        user_code,
        verification_uri: complete.unwrap_or(uri),
    });
    let url = endpoint(refresh::XAI_TOKEN_URL);
    let token = poll_device(
        body["interval"].as_f64().filter(|i| *i > 0.0),
        expires,
        true,
        || {
            let url = url.clone();
            let b = form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("client_id", refresh::XAI_CLIENT_ID),
                ("device_code", &device_code),
            ]);
            async move {
                let r = post(&url, &headers, b).await?;
                let j = r.json().ok_or_else(|| {
                    format!("xAI OAuth returned invalid JSON (HTTP {})", r.status)
                })?;
                if r.ok() {
                    return Ok(Poll::Done(j.to_string()));
                }
                match j["error"].as_str() {
                    Some("authorization_pending") => Ok(Poll::Pending),
                    Some("slow_down") => Ok(Poll::SlowDown(j["interval"].as_f64())),
                    Some("access_denied" | "authorization_denied") => {
                        Err("xAI device authorization was denied".into())
                    }
                    Some("expired_token") => Err("xAI device code expired".into()),
                    _ => Err(failure("device token polling", r.status, &j)),
                }
            }
        },
    )
    .await?;
    let t: Value = serde_json::from_str(&token).unwrap_or(Value::Null);
    let access = t["access_token"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("Invalid xAI OAuth response field: access_token")?;
    let refresh_token = t["refresh_token"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("Invalid xAI OAuth response field: refresh_token")?;
    let expires_in = t["expires_in"].as_f64().unwrap_or(3600.0);
    Ok(
        json!({"type": "oauth", "access": access, "refresh": refresh_token,
        "expires": refresh::num(refresh::now() + expires_in * 1000.0 - 5.0 * 60.0 * 1000.0)}),
    )
}

async fn kimi(ui: &mut dyn Interaction) -> Result<Value, String> {
    let host = refresh::kimi_host();
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ];
    let reply = post(
        &format!("{host}/api/oauth/device_authorization"),
        &headers,
        form(&[("client_id", refresh::KIMI_CLIENT_ID)]),
    )
    .await?;
    if !reply.ok() {
        return Err(format!(
            "Kimi Code device authorization failed with status {}{}",
            reply.status,
            if reply.body.is_empty() {
                String::new()
            } else {
                format!(": {}", reply.body)
            }
        ));
    }
    let j = reply.json().unwrap_or(Value::Null);
    let web = |k: &str| {
        j[k].as_str()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .map(String::from)
    };
    let (Some(device_code), Some(user_code), Some(_), Some(complete)) = (
        j["device_code"].as_str().map(String::from),
        j["user_code"].as_str().map(String::from),
        web("verification_uri"),
        web("verification_uri_complete"),
    ) else {
        return Err(format!(
            "Invalid Kimi Code device authorization response: {}",
            pi_js::json::to_js_string(&j).unwrap_or_default()
        ));
    };
    let interval = j["interval"]
        .as_f64()
        .filter(|i| i.is_finite() && *i > 0.0)
        .unwrap_or(5.0);
    let expires = j["expires_in"]
        .as_f64()
        .filter(|e| e.is_finite() && *e > 0.0)
        .unwrap_or(900.0);
    ui.notify(Notice::DeviceCode {
        user_code,
        verification_uri: complete,
    });
    let url = format!("{host}/api/oauth/token");
    let token = poll_device(Some(interval), expires, true, || {
        let url = url.clone();
        let b = form(&[
            ("client_id", refresh::KIMI_CLIENT_ID),
            ("device_code", &device_code),
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ]);
        async move {
            let r = post(&url, &headers, b).await?;
            if r.status >= 500 {
                return Err(format!(
                    "Kimi Code device token request failed with status {}{}",
                    r.status,
                    if r.body.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", r.body)
                    }
                ));
            }
            let j = r.json().unwrap_or(Value::Null);
            if r.ok() && j["access_token"].is_string() {
                return Ok(Poll::Done(j.to_string()));
            }
            let error = j["error"].as_str();
            match error {
                Some("authorization_pending") => Ok(Poll::Pending),
                Some("slow_down") => Ok(Poll::SlowDown(j["interval"].as_f64())),
                Some("expired_token") => {
                    Err("Kimi Code device authorization expired. Please restart login.".into())
                }
                Some("access_denied") => Err("Kimi Code login was denied.".into()),
                _ => Err(format!(
                    "Kimi Code device token request failed (status {}){}",
                    r.status,
                    match error {
                        Some(e) => format!(
                            ": {e}{}",
                            j["error_description"]
                                .as_str()
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        ),
                        None => String::new(),
                    }
                )),
            }
        }
    })
    .await?;
    let t: Value = serde_json::from_str(&token).unwrap_or(Value::Null);
    match (
        t["access_token"].as_str().filter(|s| !s.is_empty()),
        t["refresh_token"].as_str().filter(|s| !s.is_empty()),
        t["expires_in"]
            .as_f64()
            .filter(|e| e.is_finite() && *e > 0.0),
    ) {
        (Some(a), Some(r), Some(e)) => Ok(json!({"type": "oauth", "access": a, "refresh": r,
            "expires": refresh::num(refresh::now() + e * 1000.0)})),
        _ => Err(format!(
            "Kimi Code token poll response missing fields: {}",
            pi_js::json::to_js_string(&t).unwrap_or_default()
        )),
    }
}

const META_CLIENT_ID: &str = "1031625952748946";
const META_DEVICE_AUTHORIZATION_URL: &str = "https://auth.meta.com/oidc/device/authorization/";
const META_DEVICE_TOKEN_URL: &str = "https://auth.meta.com/oidc/device/token/";

async fn meta(ui: &mut dyn Interaction) -> Result<Value, String> {
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ];
    let reply = post(
        &endpoint(META_DEVICE_AUTHORIZATION_URL),
        &headers,
        form(&[("client_id", META_CLIENT_ID)]),
    )
    .await?;
    let j = reply.json().unwrap_or(Value::Null);
    if !reply.ok() {
        return Err(format!(
            "Meta device authorization failed with status {}{}",
            reply.status,
            refresh::meta_detail(&j)
        ));
    }
    let web = |k: &str| {
        j[k].as_str()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .map(String::from)
    };
    let (Some(device_code), Some(user_code), Some(uri)) = (
        j["device_code"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from),
        j["user_code"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from),
        web("verification_uri_complete").or_else(|| web("verification_uri")),
    ) else {
        return Err(format!(
            "Invalid Meta device authorization response: {}",
            pi_js::json::to_js_string(&j).unwrap_or_default()
        ));
    };
    let positive = |k: &str| j[k].as_f64().filter(|v| v.is_finite() && *v > 0.0);
    ui.notify(Notice::DeviceCode {
        user_code,
        verification_uri: uri,
    });
    let url = endpoint(META_DEVICE_TOKEN_URL);
    // No expiry from the server means Pi keeps polling until cancelled; a day stands in.
    let expires = positive("expires_in").unwrap_or(86_400.0);
    let identity = poll_device(positive("interval"), expires, true, || {
        let url = url.clone();
        let b = form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", &device_code),
            ("client_id", META_CLIENT_ID),
        ]);
        async move {
            let r = post(&url, &headers, b).await?;
            let j = r.json().unwrap_or(Value::Null);
            if r.ok()
                && let Some(t) = j["access_token"].as_str().filter(|t| !t.is_empty())
            {
                return Ok(Poll::Done(t.to_string()));
            }
            match j["error"].as_str() {
                Some("authorization_pending") => Ok(Poll::Pending),
                Some("slow_down") => Ok(Poll::SlowDown(
                    j["interval"].as_f64().filter(|v| v.is_finite() && *v > 0.0),
                )),
                Some("access_denied") => Err("Meta login was denied.".into()),
                Some("expired_token") => {
                    Err("Meta device authorization expired. Please restart login.".into())
                }
                _ => Err(format!(
                    "Meta device token request failed with status {}{}",
                    r.status,
                    refresh::meta_detail(&j)
                )),
            }
        }
    })
    .await?;
    ui.notify(Notice::Progress("Enabling Meta Model API access...".into()));
    refresh::meta(&identity).await
}

async fn radius(gateway: &str, ui: &mut dyn Interaction) -> Result<Value, String> {
    let message = "Sign in to Radius:";
    let method = ui
        .select(
            message,
            &[
                ("browser", "Sign in with browser (recommended)"),
                (
                    "device-code",
                    "Sign in with device code (when signing in from another device)",
                ),
            ],
        )
        .await?;
    if method == "browser" {
        return super::radius_login::browser(gateway, ui).await;
    }
    let base = gateway.trim_end_matches('/');
    let headers = [
        ("accept", "application/json"),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let reply = post(
        &endpoint(&format!("{base}/v1/oauth/device")),
        &headers,
        form(&[
            ("client_id", "pi-gateway"),
            ("scope", "gateway offline_access"),
        ]),
    )
    .await?;
    let oauth_error = |r: &refresh::Reply, message: &str| -> (Option<String>, String) {
        let (error, description) = match r.json() {
            Some(d) => (
                d["error"].as_str().map(String::from),
                d["error_description"].as_str().map(String::from),
            ),
            None if !r.body.is_empty() => (None, Some(r.body.clone())),
            None => (None, None),
        };
        let detail = match (&error, description) {
            (Some(e), Some(d)) => format!("{e}: {d}"),
            (Some(e), None) => e.clone(),
            (None, Some(d)) if !d.is_empty() => d,
            _ => r.status.to_string(),
        };
        (error, format!("{message}: {detail}"))
    };
    if !reply.ok() {
        return Err(oauth_error(&reply, "Radius OAuth device authorization failed").1);
    }
    let d = reply.json().unwrap_or(Value::Null);
    let (Some(device_code), Some(user_code), Some(uri), Some(expires)) = (
        d["device_code"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from),
        d["user_code"].as_str().filter(|s| !s.is_empty()),
        d["verification_uri"].as_str().filter(|s| !s.is_empty()),
        d["expires_in"].as_f64().filter(|e| *e > 0.0),
    ) else {
        return Err("Radius OAuth device authorization response is missing required fields".into());
    };
    if !(uri.starts_with("https://") || uri.starts_with("http://")) {
        return Err(
            "Untrusted verification_uri in Radius OAuth device authorization response".into(),
        );
    }
    ui.notify(Notice::DeviceCode {
        user_code: user_code.to_string(),
        verification_uri: uri.to_string(),
    });
    let url = endpoint(&format!("{base}/v1/oauth/token"));
    let done = poll_device(d["interval"].as_f64(), expires, false, || {
        let url = url.clone();
        let b = form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("client_id", "pi-gateway"),
            ("device_code", &device_code),
        ]);
        async move {
            let r = post(&url, &headers, b).await?;
            if r.ok() {
                return Ok(Poll::Done(r.body));
            }
            let (error, text) = oauth_error(&r, "Radius OAuth token request failed");
            match error.as_deref() {
                Some("authorization_pending") => Ok(Poll::Pending),
                Some("slow_down") => Ok(Poll::SlowDown(None)),
                Some("expired_token") => Err("Device authorization expired.".into()),
                Some("access_denied") => Err("Device authorization was denied.".into()),
                _ => Err(text),
            }
        }
    })
    .await?;
    Ok(super::radius_login::credential(&done))
}

const OPENROUTER_AUTHORIZE_URL: &str = "https://openrouter.ai/auth";
const OPENROUTER_KEYS_URL: &str = "https://openrouter.ai/api/v1/auth/keys";

async fn openrouter(ui: &mut dyn Interaction) -> Result<Value, String> {
    let (verifier, challenge) = pkce()?;
    let id = random_b64url(16)?;
    let cb = callback_server_at("OpenRouter", 0, format!("/oauth/callback/{id}"), None, None)
        .await
        .map_err(|e| e.to_string())?;
    let redirect = cb.redirect_uri.clone();
    let params = form(&[
        ("callback_url", &redirect),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    ui.notify(Notice::Progress(format!(
        "Listening for OpenRouter OAuth callback on {redirect}"
    )));
    ui.notify(Notice::AuthUrl {
        url: format!("{OPENROUTER_AUTHORIZE_URL}?{params}"),
        instructions: Some("Complete sign-in in your browser. If the browser is on another machine, paste the final redirect URL here.".into()),
    });
    let code = match callback_or_paste(
        ui,
        Some(cb),
        "Complete sign-in in your browser, or paste the authorization code / redirect URL here:",
        &redirect,
    )
    .await?
    {
        Got::Callback(code) => code,
        Got::Manual(input) => {
            let code = parse_authorization_input(&input)
                .0
                .filter(|c| !c.is_empty())
                .ok_or("Missing authorization code")?;
            ui.notify(Notice::Progress(
                "Exchanging authorization code for an API key...".into(),
            ));
            code
        }
    };
    let reply = post(
        &endpoint(OPENROUTER_KEYS_URL),
        &[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ],
        json!({"code": code, "code_verifier": verifier, "code_challenge_method": "S256"})
            .to_string(),
    )
    .await?;
    let body = reply.json().filter(Value::is_object);
    if !reply.ok() {
        let b = body.unwrap_or(Value::Null);
        let detail = b["error_description"]
            .as_str()
            .or_else(|| b["message"].as_str())
            .or_else(|| b["error"].as_str())
            .or_else(|| b["error"]["message"].as_str());
        return Err(format!(
            "OpenRouter OAuth key exchange failed (HTTP {}){}",
            reply.status,
            detail.map(|d| format!(": {d}")).unwrap_or_default()
        ));
    }
    let body = body.ok_or("OpenRouter OAuth returned invalid JSON")?;
    let key = body["key"]
        .as_str()
        .filter(|k| !k.is_empty())
        .ok_or("OpenRouter OAuth response carries no \"key\"")?;
    // A key that never expires, as Pi stores it.
    Ok(json!({"type": "oauth", "access": key, "refresh": "", "expires": 9_007_199_254_740_991u64}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    #[test]
    fn pasted_input_gives_code_and_state() {
        assert_eq!(
            parse_authorization_input("http://localhost:1455/auth/callback?code=c%2B1&state=s"),
            (Some("c+1".into()), Some("s".into()))
        );
        assert_eq!(
            parse_authorization_input("abc#st"),
            (Some("abc".into()), Some("st".into()))
        );
        assert_eq!(
            parse_authorization_input("code=x&state=y"),
            (Some("x".into()), Some("y".into()))
        );
        assert_eq!(
            parse_authorization_input(" raw "),
            (Some("raw".into()), None)
        );
    }

    #[test]
    fn pkce_challenge_is_the_verifiers_sha256() {
        let (v, c) = pkce().unwrap();
        assert_eq!(v.len(), 43);
        let d = ring::digest::digest(&ring::digest::SHA256, v.as_bytes());
        assert_eq!(
            c,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d.as_ref())
        );
    }
}
