//! Radius's browser sign-in (Pi's `createRadiusOAuth` browser method): the gateway names its
//! authorization page (`GET <gateway>/v1/oauth`), the browser comes back to
//! `http://127.0.0.1:1456/oauth/callback`, and the callback itself trades the code at the
//! gateway's token endpoint before answering the browser (502 when that fails).

use super::endpoint;
use super::refresh::{self, Reply, form, get, post};
use super::sign_in::{Interaction, Notice, pkce, random_b64url};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

const CLIENT_ID: &str = "pi-gateway";
const SCOPE: &str = "gateway offline_access";
const CALLBACK_PORT: u16 = 1456;
const CALLBACK_PATH: &str = "/oauth/callback";
const REDIRECT_URI: &str = "http://127.0.0.1:1456/oauth/callback";
const PROVIDER: &str = "Radius";

/// `<message>: <error>[: <description>]`, Pi's `OAuthResponseError` text, and the OAuth error.
pub(crate) fn oauth_error(r: &Reply, message: &str) -> (Option<String>, String) {
    let (error, description) = match r.json() {
        Some(d) => (
            d["error"].as_str().map(String::from),
            d["error_description"].as_str().map(String::from),
        ),
        None if !r.body.is_empty() => (None, Some(r.body.clone())),
        None => (None, None),
    };
    let detail = match (&error, &description) {
        (Some(e), Some(d)) => format!("{e}: {d}"),
        (Some(e), None) => e.clone(),
        (None, Some(d)) if !d.is_empty() => d.clone(),
        _ => r.status.to_string(),
    };
    (error, format!("{message}: {detail}"))
}

/// The stored credential of a Radius token answer.
pub(crate) fn credential(body: &str) -> Value {
    let data: Value = pi_js::parse::parse_js_json(body).unwrap_or(Value::Null);
    let expires_in = data["expires_in"].as_f64().unwrap_or(f64::NAN);
    let mut out = serde_json::Map::new();
    out.insert("type".into(), "oauth".into());
    out.insert("access".into(), data["access_token"].clone());
    out.insert("refresh".into(), data["refresh_token"].clone());
    out.insert(
        "expires".into(),
        refresh::num(refresh::now() + expires_in * 1000.0 - 60_000.0),
    );
    if let Some(s) = data.get("scope") {
        out.insert("scope".into(), s.clone());
    }
    Value::Object(out)
}

/// A random version-4 UUID (`crypto.randomUUID()`), the sign-in's state.
fn uuid_v4() -> Result<String, String> {
    use base64::Engine as _;
    let raw = random_b64url(16)?;
    let mut b = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .map_err(|e| e.to_string())?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

fn page(status: u16, text: &str) -> String {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>pi</title><p>{}</p>",
        text.replace('&', "&amp;").replace('<', "&lt;")
    );
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The authorization page the gateway names, which must be an http(s) URL.
async fn discover(base: &str, gateway: &str) -> Result<String, String> {
    let r = get(
        &endpoint(&format!("{base}/v1/oauth")),
        &[("accept", "application/json")],
    )
    .await?;
    if !r.ok() {
        return Err(format!(
            "Could not load Radius OAuth config from {gateway}: {} {}",
            r.status, r.body
        ));
    }
    r.json()
        .and_then(|d| d["authorizationEndpoint"].as_str().map(String::from))
        .filter(|u| reqwest::Url::parse(u).is_ok_and(|p| matches!(p.scheme(), "http" | "https")))
        .ok_or_else(|| format!("Invalid Radius OAuth config from {gateway}"))
}

pub(crate) async fn browser(gateway: &str, ui: &mut dyn Interaction) -> Result<Value, String> {
    let base = gateway.trim_end_matches('/');
    let authorize = discover(base, gateway).await?;
    let (verifier, challenge) = pkce()?;
    let state = uuid_v4()?;
    let mut url = reqwest::Url::parse(&authorize).map_err(|e| e.to_string())?;
    url.set_query(Some(&form(&[
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("redirect_uri", REDIRECT_URI),
        ("scope", SCOPE),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("handoff", "url"),
        ("state", &state),
    ])));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", CALLBACK_PORT))
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                format!("listen EADDRINUSE: address already in use 127.0.0.1:{CALLBACK_PORT}")
            } else {
                e.to_string()
            }
        })?;
    ui.notify(Notice::Progress(format!(
        "Listening for OAuth callback on {REDIRECT_URI}"
    )));
    ui.notify(Notice::AuthUrl {
        url: url.to_string(),
        instructions: Some("Continue in your browser.".into()),
    });
    let token_url = endpoint(&format!("{base}/v1/oauth/token"));
    loop {
        let (mut sock, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let head = super::sign_in::read_request_head(&mut sock).await;
        let mut words = head.split(' ');
        let method = words.next().unwrap_or("");
        let target = words.next().unwrap_or("/");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let param = |name: &str| {
            query.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k == name).then(|| super::sign_in::percent_decode(&v.replace('+', " ")))
            })
        };
        let (answer, outcome) = if method != "GET" || path != CALLBACK_PATH {
            (page(404, "Callback route not found."), None)
        } else if param("state").as_deref() != Some(state.as_str()) {
            (page(400, "State mismatch."), None)
        } else if let Some(error) = param("error") {
            let description = param("error_description").unwrap_or(error);
            (
                page(
                    400,
                    &format!("{PROVIDER} authorization failed. {description}"),
                ),
                Some(Err(format!(
                    "{PROVIDER} authorization failed: {description}"
                ))),
            )
        } else if let Some(code) = param("code").filter(|c| !c.is_empty()) {
            let body = form(&[
                ("grant_type", "authorization_code"),
                ("client_id", CLIENT_ID),
                ("redirect_uri", REDIRECT_URI),
                ("code", &code),
                ("code_verifier", &verifier),
            ]);
            let headers = [
                ("accept", "application/json"),
                ("content-type", "application/x-www-form-urlencoded"),
            ];
            let result = match post(&token_url, &headers, body).await {
                Ok(r) if r.ok() => Ok(credential(&r.body)),
                Ok(r) => Err(oauth_error(&r, "Radius OAuth token request failed").1),
                Err(e) => Err(e),
            };
            match result {
                Ok(c) => (
                    page(
                        200,
                        &format!("Signed in to {PROVIDER}. You may now close this page."),
                    ),
                    Some(Ok(c)),
                ),
                Err(e) => (
                    page(502, &format!("{PROVIDER} sign-in failed. {e}")),
                    Some(Err(e)),
                ),
            }
        } else {
            (page(400, "Missing authorization code."), None)
        };
        let _ = sock.write_all(answer.as_bytes()).await;
        if let Some(o) = outcome {
            return o;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn states_are_version_4_uuids() {
        let u = super::uuid_v4().unwrap();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }
}
