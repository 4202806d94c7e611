//! Google Application Default Credentials, the parts a Vertex request needs: the credential
//! file (`GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's
//! `application_default_credentials.json`), an access token for it (a service account signs a
//! JWT assertion; a `gcloud auth application-default login` user trades its refresh token),
//! and an in-process cache that reuses a token until five minutes before it expires.
//!
//! The token endpoint is the file's `token_uri` when it has one (Google's key files carry it,
//! as Google's Python and Go libraries honour it), else Google's; tests point it at 127.0.0.1.
//! The metadata server of Google's own VMs is not consulted.

use crate::http;
use base64::Engine as _;
use pi_js::parse::parse_js_json;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Google's OAuth token endpoint.
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// google-auth-library refreshes this long before a token expires.
const EAGER_REFRESH: Duration = Duration::from_secs(5 * 60);
/// google-auth-library's text when no credential file is found.
pub const NO_ADC_FOUND: &str = "Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.";

/// An access token and when it stops being usable.
#[derive(Debug, Clone)]
struct Cached {
    token: String,
    expires_at: SystemTime,
}

fn cache() -> &'static Mutex<HashMap<String, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// What a request needs from the credential: the bearer token and, for user credentials
/// with a quota project, the project to bill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub token: String,
    pub quota_project: Option<String>,
}

/// The credential file ADC uses: `explicit` (the provider setting or variable), else gcloud's
/// well-known file under `CLOUDSDK_CONFIG` or `~/.config/gcloud`.
pub fn credentials_path(explicit: Option<String>, home: Option<String>) -> Option<String> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let dir = match std::env::var("CLOUDSDK_CONFIG") {
        Ok(d) if !d.is_empty() => d,
        _ => format!("{}/.config/gcloud", home?),
    };
    Some(format!("{dir}/application_default_credentials.json"))
}

/// An access token for the credential file at `path`, from the cache or the token endpoint.
pub async fn access(path: &str, cancel: &CancellationToken) -> Result<Access, String> {
    let text = std::fs::read_to_string(path).map_err(|_| NO_ADC_FOUND.to_string())?;
    let json = parse_js_json(&text).map_err(|e| format!("Unable to parse {path}: {e}"))?;
    let quota_project = json["quota_project_id"].as_str().map(String::from);
    let now = SystemTime::now();
    if let Some(c) = cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(path)
        .filter(|c| c.expires_at > now + EAGER_REFRESH)
    {
        return Ok(Access {
            token: c.token.clone(),
            quota_project,
        });
    }
    let (token, expires_in) = match json["type"].as_str() {
        Some("service_account") => service_account_token(&json, cancel).await?,
        Some("authorized_user") => user_token(&json, cancel).await?,
        Some(other) => return Err(format!("Unsupported credential type: {other}")),
        None => {
            return Err(
                "The incoming JSON object does not contain a client_email field".to_string(),
            );
        }
    };
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            path.to_string(),
            Cached {
                token: token.clone(),
                expires_at: SystemTime::now() + Duration::from_secs(expires_in),
            },
        );
    Ok(Access {
        token,
        quota_project,
    })
}

fn token_url(json: &Value) -> String {
    json["token_uri"]
        .as_str()
        .filter(|u| !u.is_empty())
        .unwrap_or(GOOGLE_TOKEN_URL)
        .to_string()
}

fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
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
}

async fn exchange(
    url: &str,
    body: String,
    cancel: &CancellationToken,
) -> Result<(String, u64), String> {
    let (status, text) = http::post_text(
        url,
        &[("content-type", "application/x-www-form-urlencoded")],
        body,
        cancel,
    )
    .await?;
    let json = parse_js_json(&text).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        // google-auth-library reports the endpoint's `error` and `error_description`.
        let err = json["error"].as_str().unwrap_or("");
        let desc = json["error_description"].as_str().unwrap_or("");
        return Err(match (err.is_empty(), desc.is_empty()) {
            (false, false) => format!("{err}: {desc}"),
            (false, true) => err.to_string(),
            _ => format!("Request failed with status code {status}"),
        });
    }
    let token = json["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "No access token in the token endpoint's answer".to_string())?;
    let expires_in = json["expires_in"]
        .as_f64()
        .map_or(3600, |e| e.max(0.0) as u64);
    Ok((token.to_string(), expires_in))
}

async fn user_token(json: &Value, cancel: &CancellationToken) -> Result<(String, u64), String> {
    let field = |k: &str| json[k].as_str().unwrap_or("").to_string();
    let body = form(&[
        ("client_id", &field("client_id")),
        ("client_secret", &field("client_secret")),
        ("refresh_token", &field("refresh_token")),
        ("grant_type", "refresh_token"),
    ]);
    exchange(&token_url(json), body, cancel).await
}

async fn service_account_token(
    json: &Value,
    cancel: &CancellationToken,
) -> Result<(String, u64), String> {
    let email = json["client_email"]
        .as_str()
        .ok_or("The incoming JSON object does not contain a client_email field")?;
    let pem = json["private_key"]
        .as_str()
        .ok_or("The incoming JSON object does not contain a private_key field")?;
    let url = token_url(json);
    let iat = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let assertion = signed_jwt(pem, json["private_key_id"].as_str(), email, &url, iat)?;
    let body = form(&[
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", &assertion),
    ]);
    exchange(&url, body, cancel).await
}

/// The RS256 JWT a service account presents to the token endpoint (valid for an hour).
pub fn signed_jwt(
    pem: &str,
    key_id: Option<&str>,
    email: &str,
    audience: &str,
    iat: u64,
) -> Result<String, String> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = kid.into();
    }
    let claims = serde_json::json!({
        "iss": email, "scope": SCOPE, "aud": audience, "exp": iat + 3600, "iat": iat,
    });
    let signing_input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let der = pem_body(pem).ok_or("private_key is not a PEM PKCS#8 key")?;
    let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("private_key is not a usable RSA key: {e}"))?;
    let mut sig = vec![0u8; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| "signing the token request failed".to_string())?;
    Ok(format!("{signing_input}.{}", b64(&sig)))
}

fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let text: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_url_encoded() {
        assert_eq!(encode("a b/c:d=e"), "a+b%2Fc%3Ad%3De");
        assert_eq!(
            form(&[("grant_type", "refresh_token"), ("x", "1&2")]),
            "grant_type=refresh_token&x=1%262"
        );
    }

    #[test]
    fn the_well_known_file_is_under_gcloud_config() {
        if std::env::var("CLOUDSDK_CONFIG").is_err() {
            assert_eq!(
                credentials_path(None, Some("/h".into())).as_deref(),
                Some("/h/.config/gcloud/application_default_credentials.json")
            );
        }
        assert_eq!(
            credentials_path(Some("/k.json".into()), None).as_deref(),
            Some("/k.json")
        );
    }
}
