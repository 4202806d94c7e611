//! Each OAuth provider's token refresh, with the provider's endpoint, request shape, resulting
//! credential (keys in the order Pi writes them) and failure text.

use super::{Flow, endpoint};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::time::Duration;

pub(crate) const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
pub(crate) const ANTHROPIC_TOKEN_URL: &str = "https://platform.claude.com/v1/oauth/token";
pub(crate) const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
pub(crate) const CODEX_TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
const CHATGPT_TOKEN_URL: &str = "https://auth.openai.com/api/accounts/oauth/token";
pub(crate) const CHATGPT_RESOURCE: &str = "https://api.openai.com/v1";
const CHATGPT_DIRECT_SCOPE: &str = "chatgpt.tokens.use.direct";
pub(crate) const KIMI_CLIENT_ID: &str = "17e5f671-d194-4dfb-9706-5516cb48c098";
const KIMI_OAUTH_HOST: &str = "https://auth.kimi.com";
pub(crate) const XAI_CLIENT_ID: &str = "b1a00492-073a-47ea-816f-4c329264a828";
pub(crate) const XAI_TOKEN_URL: &str = "https://auth.x.ai/oauth2/token";
const META_MINT_URL: &str = "https://api.meta.ai/muse-code/key";
const RADIUS_CLIENT_ID: &str = "pi-gateway";
/// Copilot's editor identity, sent with every Copilot token and model request.
pub const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];
const COPILOT_API_VERSION: &str = "2026-06-01";
const FIVE_MINUTES: f64 = 5.0 * 60.0 * 1000.0;

fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

pub(crate) fn now() -> f64 {
    pi_js::now_ms() as f64
}

pub(crate) fn num(v: f64) -> Value {
    pi_js::json::js_number_value(v)
}

/// `application/x-www-form-urlencoded` pairs (`URLSearchParams`).
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A finished exchange: status, reason phrase, body text.
pub(crate) struct Reply {
    pub status: u16,
    pub status_text: String,
    pub body: String,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
    pub fn json(&self) -> Option<Value> {
        pi_js::parse::parse_js_json(&self.body).ok()
    }
}

pub(crate) async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> Result<Reply, String> {
    let mut req = client()?.post(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body).send().await.map_err(|e| fetch_failed(&e))?;
    finish(resp).await
}

pub(crate) async fn get(url: &str, headers: &[(&str, &str)]) -> Result<Reply, String> {
    let mut req = client()?.get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.map_err(|e| fetch_failed(&e))?;
    finish(resp).await
}

async fn finish(resp: reqwest::Response) -> Result<Reply, String> {
    let status = resp.status();
    let body = resp.text().await.map_err(|e| fetch_failed(&e))?;
    Ok(Reply {
        status: status.as_u16(),
        status_text: status.canonical_reason().unwrap_or("").to_string(),
        body,
    })
}

/// Node's fetch names a transport failure this way.
fn fetch_failed(_: &reqwest::Error) -> String {
    "fetch failed".to_string()
}

fn str_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Refreshes `cred` (the stored entry) with its provider; the new entry to store.
pub async fn refresh(flow: &Flow, cred: &Map<String, Value>) -> Result<Value, String> {
    let refresh_token = cred.get("refresh").and_then(Value::as_str).unwrap_or("");
    match flow {
        Flow::Anthropic => anthropic(refresh_token).await,
        Flow::OpenAiCodex => codex(refresh_token).await,
        Flow::OpenAiChatGpt => chatgpt(cred, refresh_token).await,
        Flow::GithubCopilot => copilot(cred, refresh_token).await,
        Flow::Kimi => kimi(refresh_token).await,
        Flow::Xai => xai(refresh_token).await,
        Flow::OpenRouter => Ok(Value::Object(cred.clone())),
        Flow::Meta => meta(refresh_token).await,
        Flow::Radius { gateway } => radius(gateway, refresh_token).await,
        Flow::Extension { provider, .. } => super::extension::refresh(provider, cred).await,
    }
}

async fn anthropic(refresh: &str) -> Result<Value, String> {
    let url = endpoint(ANTHROPIC_TOKEN_URL);
    let body = json!({"grant_type": "refresh_token", "client_id": ANTHROPIC_CLIENT_ID, "refresh_token": refresh});
    let reply = post(
        &url,
        &[("Content-Type", "application/json"), ("Accept", "application/json")],
        body.to_string(),
    )
    .await
    .map_err(|e| {
        format!("Anthropic token refresh request failed. url={ANTHROPIC_TOKEN_URL}; details=TypeError: {e}")
    })?;
    if !reply.ok() {
        return Err(format!(
            "Anthropic token refresh request failed. url={ANTHROPIC_TOKEN_URL}; details=Error: HTTP request failed. status={}; url={ANTHROPIC_TOKEN_URL}; body={}",
            reply.status, reply.body
        ));
    }
    let data = reply.json().ok_or_else(|| {
        format!(
            "Anthropic token refresh returned invalid JSON. url={ANTHROPIC_TOKEN_URL}; body={}",
            reply.body
        )
    })?;
    let expires_in = data["expires_in"].as_f64().unwrap_or(f64::NAN);
    let mut out = Map::new();
    out.insert("type".into(), "oauth".into());
    out.insert("refresh".into(), data["refresh_token"].clone());
    out.insert("access".into(), data["access_token"].clone());
    out.insert(
        "expires".into(),
        num(now() + expires_in * 1000.0 - FIVE_MINUTES),
    );
    Ok(Value::Object(out))
}

/// The ChatGPT account id in an OpenAI access token's claims.
pub fn codex_account_id(access: &str) -> Option<String> {
    let parts: Vec<&str> = access.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .or_else(|_| {
            base64::engine::general_purpose::STANDARD_NO_PAD.decode(parts[1].trim_end_matches('='))
        })
        .ok()?;
    let claims = pi_js::parse::parse_js_json(&String::from_utf8_lossy(&payload)).ok()?;
    claims["https://api.openai.com/auth"]["chatgpt_account_id"]
        .as_str()
        .filter(|a| !a.is_empty())
        .map(String::from)
}

/// The stored credential for tokens from OpenAI's token endpoint (Codex).
pub(crate) fn codex_credential(json: &Value) -> Result<Value, String> {
    let (Some(access), Some(refresh), Some(expires_in)) = (
        str_field(json, "access_token"),
        str_field(json, "refresh_token"),
        json["expires_in"].as_f64(),
    ) else {
        return Err(format!(
            "OpenAI Codex token exchange response missing fields: {}",
            pi_js::json::to_js_string(json).unwrap_or_default()
        ));
    };
    let account = codex_account_id(access).ok_or("Failed to extract accountId from token")?;
    Ok(
        json!({"type": "oauth", "access": access, "refresh": refresh,
        "expires": num(now() + expires_in * 1000.0), "accountId": account}),
    )
}

async fn codex(refresh: &str) -> Result<Value, String> {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", CODEX_CLIENT_ID),
    ]);
    let reply = post(
        &endpoint(CODEX_TOKEN_URL),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body,
    )
    .await
    .map_err(|e| format!("OpenAI Codex token refresh error: {e}"))?;
    if !reply.ok() {
        let text = if reply.body.is_empty() {
            reply.status_text.clone()
        } else {
            reply.body.clone()
        };
        return Err(format!(
            "OpenAI Codex token refresh failed ({}): {text}",
            reply.status
        ));
    }
    let json = reply.json().unwrap_or(Value::Null);
    let (Some(access), Some(refresh), Some(expires_in)) = (
        str_field(&json, "access_token"),
        str_field(&json, "refresh_token"),
        json["expires_in"].as_f64(),
    ) else {
        return Err(format!(
            "OpenAI Codex token refresh response missing fields: {}",
            pi_js::json::to_js_string(&json).unwrap_or_default()
        ));
    };
    let account = codex_account_id(access).ok_or("Failed to extract accountId from token")?;
    Ok(
        json!({"type": "oauth", "access": access, "refresh": refresh,
        "expires": num(now() + expires_in * 1000.0), "accountId": account}),
    )
}

async fn chatgpt(cred: &Map<String, Value>, refresh: &str) -> Result<Value, String> {
    let client_id = cred
        .get("clientId")
        .and_then(Value::as_str)
        .filter(|c| !pi_js::trim(c).is_empty())
        .ok_or("Stored OpenAI OAuth credential does not contain an issued client ID; reconnect ChatGPT")?;
    let token = chatgpt_token_request(&[
        ("grant_type", "refresh_token"),
        ("client_id", client_id),
        ("refresh_token", refresh),
        ("resource", CHATGPT_RESOURCE),
    ])
    .await?;
    chatgpt_credential(&token, client_id)
}

/// A request to the ChatGPT sign-in's token endpoint; its JSON object.
pub(crate) async fn chatgpt_token_request(pairs: &[(&str, &str)]) -> Result<Value, String> {
    let reply = post(
        &endpoint(CHATGPT_TOKEN_URL),
        &[
            ("accept", "application/json"),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        form(pairs),
    )
    .await?;
    if !reply.ok() {
        let text = if reply.body.is_empty() {
            reply.status_text.clone()
        } else {
            reply.body.clone()
        };
        return Err(format!(
            "OpenAI OAuth token request failed ({}): {text}",
            reply.status
        ));
    }
    reply
        .json()
        .filter(Value::is_object)
        .ok_or_else(|| "OpenAI OAuth token response must be an object".to_string())
}

/// The stored credential of a ChatGPT token answer (issued for `client_id`).
pub(crate) fn chatgpt_credential(token: &Value, client_id: &str) -> Result<Value, String> {
    let need = |k: &str| {
        token[k]
            .as_str()
            .filter(|s| !pi_js::trim(s).is_empty())
            .map(String::from)
            .ok_or_else(|| format!("OpenAI OAuth token response has invalid {k}"))
    };
    let (access, refresh, scope) = (
        need("access_token")?,
        need("refresh_token")?,
        need("scope")?,
    );
    let expires_in = token["expires_in"]
        .as_f64()
        .filter(|e| e.is_finite() && *e > 0.0)
        .ok_or("OpenAI OAuth token response has invalid expires_in")?;
    let scopes: Vec<&str> = scope.split_whitespace().collect();
    if !scopes.contains(&CHATGPT_DIRECT_SCOPE) {
        return Err(format!(
            "OpenAI OAuth grant did not include {CHATGPT_DIRECT_SCOPE}"
        ));
    }
    Ok(
        json!({"type": "oauth", "access": access, "refresh": refresh,
        "expires": num(now() + expires_in * 1000.0 - 3.0 * 60.0 * 1000.0),
        "clientId": client_id, "scopes": scopes}),
    )
}

/// `https://api.<host>` from the token's `proxy-ep`, else the enterprise or individual host.
pub fn copilot_base_url(token: &str, enterprise: Option<&str>) -> String {
    if let Some(ep) = token
        .split(';')
        .find_map(|p| p.trim().strip_prefix("proxy-ep="))
        .filter(|e| !e.is_empty())
    {
        let host = ep
            .strip_prefix("proxy.")
            .map_or(ep.to_string(), |h| format!("api.{h}"));
        return format!("https://{host}");
    }
    match enterprise {
        Some(d) => format!("https://copilot-api.{d}"),
        None => "https://api.individual.githubcopilot.com".into(),
    }
}

/// The enterprise domain stored with a Copilot login.
pub fn copilot_domain(cred: &Map<String, Value>) -> Option<String> {
    let url = cred.get("enterpriseUrl")?.as_str()?.trim();
    if url.is_empty() {
        return None;
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', ':', '?', '#']).next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

pub(crate) async fn copilot_token(
    github_token: &str,
    domain: Option<String>,
) -> Result<Value, String> {
    let mut cred = Map::new();
    if let Some(d) = domain {
        cred.insert("enterpriseUrl".into(), d.into());
    }
    copilot(&cred, github_token).await
}

async fn copilot(cred: &Map<String, Value>, refresh: &str) -> Result<Value, String> {
    let domain = copilot_domain(cred);
    let host = domain.clone().unwrap_or_else(|| "github.com".into());
    let auth = format!("Bearer {refresh}");
    let mut headers = vec![
        ("Accept", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    headers.extend(COPILOT_HEADERS);
    let reply = get(
        &endpoint(&format!("https://api.{host}/copilot_internal/v2/token")),
        &headers,
    )
    .await?;
    if !reply.ok() {
        return Err(format!(
            "{} {}: {}",
            reply.status, reply.status_text, reply.body
        ));
    }
    let raw = reply
        .json()
        .filter(Value::is_object)
        .ok_or("Invalid Copilot token response")?;
    let (Some(token), Some(expires_at)) = (raw["token"].as_str(), raw["expires_at"].as_f64())
    else {
        return Err("Invalid Copilot token response fields".into());
    };
    let mut out = Map::new();
    out.insert("type".into(), "oauth".into());
    out.insert("refresh".into(), refresh.into());
    out.insert("access".into(), token.into());
    out.insert("expires".into(), num(expires_at * 1000.0 - FIVE_MINUTES));
    if let Some(d) = &domain {
        out.insert("enterpriseUrl".into(), d.clone().into());
    }
    // Pi refreshes the account's model list with the token.
    let base = copilot_base_url(token, domain.as_deref());
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Accept", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    headers.extend(COPILOT_HEADERS);
    headers.push(("X-GitHub-Api-Version", COPILOT_API_VERSION));
    let models = get(&endpoint(&format!("{base}/models")), &headers).await?;
    if !models.ok() {
        return Err(format!(
            "{} {}: {}",
            models.status, models.status_text, models.body
        ));
    }
    let catalog = models.json().unwrap_or(Value::Null);
    let ids =
        copilot_available_models(&catalog, base == "https://api.individual.githubcopilot.com")?;
    out.insert("availableModelIds".into(), json!(ids));
    Ok(Value::Object(out))
}

/// The account's usable models from Copilot's `/models` answer (Pi's picker rules).
fn copilot_available_models(raw: &Value, policy_fallback: bool) -> Result<Vec<String>, String> {
    let data = raw["data"]
        .as_array()
        .ok_or("Invalid Copilot models response")?;
    let models: Vec<(&str, bool, Option<&str>)> = data
        .iter()
        .filter(|m| m["capabilities"]["supports"]["tool_calls"] != json!(false))
        .filter_map(|m| {
            Some((
                m["id"].as_str()?,
                m["model_picker_enabled"] == json!(true),
                m["policy"]["state"].as_str(),
            ))
        })
        .collect();
    let picker: Vec<String> = models
        .iter()
        .filter(|(_, p, s)| *p && *s != Some("disabled"))
        .map(|(id, _, _)| id.to_string())
        .collect();
    if !picker.is_empty() || !policy_fallback {
        return Ok(picker);
    }
    Ok(models
        .iter()
        .filter(|(_, _, s)| *s == Some("enabled"))
        .map(|(id, _, _)| id.to_string())
        .collect())
}

/// Kimi's OAuth host: `KIMI_CODE_OAUTH_HOST`, `KIMI_OAUTH_HOST`, else Kimi's.
pub(crate) fn kimi_host() -> String {
    std::env::var("KIMI_CODE_OAUTH_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::env::var("KIMI_OAUTH_HOST")
                .ok()
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| endpoint(KIMI_OAUTH_HOST))
        .trim_end_matches('/')
        .to_string()
}

async fn kimi(refresh: &str) -> Result<Value, String> {
    let url = format!("{}/api/oauth/token", kimi_host());
    let mut last = "Kimi Code token refresh failed".to_string();
    for attempt in 0..=3u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(1000 << (attempt - 1))).await;
        }
        let body = form(&[
            ("client_id", KIMI_CLIENT_ID),
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
        ]);
        let reply = match post(
            &url,
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Accept", "application/json"),
            ],
            body,
        )
        .await
        {
            Ok(r) => r,
            Err(e) => {
                last = e;
                continue;
            }
        };
        let json = reply.json().unwrap_or(Value::Null);
        if reply.ok() {
            let (Some(access), Some(refresh), Some(expires_in)) = (
                str_field(&json, "access_token"),
                str_field(&json, "refresh_token"),
                json["expires_in"].as_f64().filter(|e| *e > 0.0),
            ) else {
                return Err(format!(
                    "Kimi Code token refresh response missing fields: {}",
                    pi_js::json::to_js_string(&json).unwrap_or_default()
                ));
            };
            return Ok(
                json!({"type": "oauth", "access": access, "refresh": refresh,
                "expires": num(now() + expires_in * 1000.0)}),
            );
        }
        if reply.status == 401 || reply.status == 403 || json["error"] == "invalid_grant" {
            let desc = json["error_description"]
                .as_str()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(format!(
                "Kimi Code token refresh unauthorized (status {}){desc}",
                reply.status
            ));
        }
        if (reply.status == 429 || reply.status >= 500) && attempt < 3 {
            last = format!(
                "Kimi Code token refresh failed with status {}",
                reply.status
            );
            continue;
        }
        return Err(format!(
            "Kimi Code token refresh failed with status {}: {}",
            reply.status,
            pi_js::json::to_js_string(&json).unwrap_or_default()
        ));
    }
    Err(last)
}

async fn xai(refresh: &str) -> Result<Value, String> {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("client_id", XAI_CLIENT_ID),
        ("refresh_token", refresh),
    ]);
    let reply = post(
        &endpoint(XAI_TOKEN_URL),
        &[
            ("Accept", "application/json"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body,
    )
    .await?;
    let body = reply
        .json()
        .ok_or_else(|| format!("xAI OAuth returned invalid JSON (HTTP {})", reply.status))?;
    let body = if body.is_object() { body } else { json!({}) };
    if !reply.ok() {
        let detail: Vec<&str> = [body["error"].as_str(), body["error_description"].as_str()]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        let detail = detail.join(": ");
        return Err(format!(
            "xAI OAuth token refresh failed (HTTP {}){}",
            reply.status,
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        ));
    }
    let access =
        str_field(&body, "access_token").ok_or("Invalid xAI OAuth response field: access_token")?;
    let new_refresh = match body.get("refresh_token") {
        None if !refresh.is_empty() => refresh.to_string(),
        _ => str_field(&body, "refresh_token")
            .ok_or("Invalid xAI OAuth response field: refresh_token")?
            .to_string(),
    };
    let expires_in = match body.get("expires_in") {
        None => 3600.0,
        Some(v) => v
            .as_f64()
            .filter(|e| e.is_finite() && *e > 0.0)
            .ok_or("Invalid xAI OAuth response field: expires_in")?,
    };
    Ok(
        json!({"type": "oauth", "access": access, "refresh": new_refresh,
        "expires": num(now() + expires_in * 1000.0 - FIVE_MINUTES)}),
    )
}

pub(crate) fn meta_detail(json: &Value) -> String {
    for k in ["error_description", "detail", "message", "error"] {
        if let Some(v) = json[k].as_str().map(pi_js::trim).filter(|v| !v.is_empty()) {
            return format!(": {v}");
        }
    }
    String::new()
}

pub(crate) async fn meta(identity: &str) -> Result<Value, String> {
    let auth = format!("Bearer {identity}");
    let reply = post(
        &endpoint(META_MINT_URL),
        &[
            ("Accept", "application/json"),
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("x-api-version", "1.0.0"),
        ],
        "{}".into(),
    )
    .await?;
    let json = reply.json().unwrap_or(Value::Null);
    if reply.status == 401 || reply.status == 403 {
        return Err(format!(
            "Meta session expired (status {}). Run `/login meta` to sign in again.{}",
            reply.status,
            meta_detail(&json)
        ));
    }
    if !reply.ok() {
        return Err(format!(
            "Meta API key mint failed with status {}{}",
            reply.status,
            meta_detail(&json)
        ));
    }
    let key = str_field(&json, "api_key").ok_or_else(|| {
        match json["action_url"]
            .as_str()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        {
            Some(u) => format!("Meta did not issue an API key. Complete setup at {u}"),
            None => "Meta did not issue an API key.".to_string(),
        }
    })?;
    Ok(json!({"type": "oauth", "refresh": identity, "access": key,
        "expires": num(now() + 24.0 * 60.0 * 60.0 * 1000.0)}))
}

async fn radius(gateway: &str, refresh: &str) -> Result<Value, String> {
    let url = endpoint(&format!("{}/v1/oauth/token", gateway.trim_end_matches('/')));
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("client_id", RADIUS_CLIENT_ID),
        ("refresh_token", refresh),
    ]);
    let reply = post(
        &url,
        &[
            ("accept", "application/json"),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        body,
    )
    .await?;
    if !reply.ok() {
        let (error, description) = match reply.json() {
            Some(d) => (
                d["error"].as_str().map(String::from),
                d["error_description"].as_str().map(String::from),
            ),
            None if !reply.body.is_empty() => (None, Some(reply.body.clone())),
            None => (None, None),
        };
        let detail = match (error, description) {
            (Some(e), Some(d)) => format!("{e}: {d}"),
            (Some(e), None) => e,
            (None, Some(d)) if !d.is_empty() => d,
            _ => reply.status.to_string(),
        };
        return Err(format!("Radius OAuth token request failed: {detail}"));
    }
    let data = reply.json().unwrap_or(Value::Null);
    let expires_in = data["expires_in"].as_f64().unwrap_or(f64::NAN);
    let mut out = Map::new();
    out.insert("type".into(), "oauth".into());
    out.insert("access".into(), data["access_token"].clone());
    out.insert("refresh".into(), data["refresh_token"].clone());
    out.insert(
        "expires".into(),
        num(now() + expires_in * 1000.0 - 60_000.0),
    );
    if let Some(s) = data.get("scope") {
        out.insert("scope".into(), s.clone());
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copilot_base_url_comes_from_the_token() {
        assert_eq!(
            copilot_base_url(
                "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;x=y",
                None
            ),
            "https://api.business.githubcopilot.com"
        );
        assert_eq!(
            copilot_base_url("opaque", Some("ghe.example.com")),
            "https://copilot-api.ghe.example.com"
        );
        assert_eq!(
            copilot_base_url("opaque", None),
            "https://api.individual.githubcopilot.com"
        );
    }

    #[test]
    fn copilot_models_follow_the_picker_then_the_policy() {
        let raw = json!({"data": [
            {"id": "a", "model_picker_enabled": true, "policy": {"state": "enabled"}},
            {"id": "b", "model_picker_enabled": true, "policy": {"state": "disabled"}},
            {"id": "c", "model_picker_enabled": false, "policy": {"state": "enabled"}},
            {"id": "d", "model_picker_enabled": true, "capabilities": {"supports": {"tool_calls": false}}},
        ]});
        assert_eq!(copilot_available_models(&raw, true).unwrap(), vec!["a"]);
        let none_picked = json!({"data": [{"id": "c", "policy": {"state": "enabled"}}]});
        assert_eq!(
            copilot_available_models(&none_picked, true).unwrap(),
            vec!["c"]
        );
        assert!(
            copilot_available_models(&none_picked, false)
                .unwrap()
                .is_empty()
        );
    }
}
