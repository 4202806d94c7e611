//! Google Application Default Credentials, the parts a Vertex request needs: the credential
//! file (`GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's
//! `application_default_credentials.json`), an access token for it (a service account signs a
//! JWT assertion; a `gcloud auth application-default login` user trades its refresh token),
//! and an in-process cache that reuses a token until five minutes before it expires.
//!
//! The token endpoint is the file's `token_uri` when it has one (Google's key files carry it,
//! as Google's Python and Go libraries honour it), else Google's; tests point it at 127.0.0.1.
//! With no file named and no gcloud file, the metadata server of Google's own machines is the
//! last source (see [`super::metadata`]).

use super::metadata;
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

/// Where the credentials come from, in google-auth-library's order.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The file the provider names (`GOOGLE_APPLICATION_CREDENTIALS`): it must be readable.
    pub explicit: Option<String>,
    /// `HOME`, for gcloud's well-known file when `CLOUDSDK_CONFIG` is not set.
    pub home: Option<String>,
    /// `CLOUDSDK_CONFIG`.
    pub cloudsdk_config: Option<String>,
    /// `GOOGLE_CLOUD_QUOTA_PROJECT`: replaces the quota project of found (not named) credentials.
    pub quota_project: Option<String>,
    pub metadata: metadata::Settings,
}

impl Sources {
    /// The sources from `get` (the provider's environment, then the process's).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        Sources {
            explicit: get("GOOGLE_APPLICATION_CREDENTIALS"),
            home: get("HOME"),
            cloudsdk_config: get("CLOUDSDK_CONFIG"),
            quota_project: get("GOOGLE_CLOUD_QUOTA_PROJECT"),
            metadata: metadata::Settings::from_env(get),
        }
    }

    /// gcloud's `application_default_credentials.json`, if a config directory is known.
    pub fn well_known_file(&self) -> Option<String> {
        let dir = match self.cloudsdk_config.as_deref().filter(|d| !d.is_empty()) {
            Some(d) => d.to_string(),
            None => format!("{}/.config/gcloud", self.home.as_deref()?),
        };
        Some(format!("{dir}/application_default_credentials.json"))
    }
}

/// An access token from the first source that has one: the named file, gcloud's file, then
/// the metadata server when it is there; else google-auth-library's "Could not load" text.
pub async fn resolve(src: &Sources, cancel: &CancellationToken) -> Result<Access, String> {
    if let Some(path) = src.explicit.as_deref().filter(|p| !p.is_empty()) {
        return access(path, cancel).await;
    }
    if let Some(path) = src.well_known_file()
        && std::path::Path::new(&path).exists()
    {
        let mut found = access(&path, cancel).await?;
        if let Some(q) = src.quota_project.clone() {
            found.quota_project = Some(q);
        }
        return Ok(found);
    }
    if !metadata::available(&src.metadata, cancel).await? {
        return Err(NO_ADC_FOUND.to_string());
    }
    let key = format!("metadata:{}", src.metadata.host.as_deref().unwrap_or(""));
    let token = match cached(&key) {
        Some(t) => t,
        None => {
            let (token, expires_in) = metadata::token(&src.metadata, cancel).await?;
            remember(&key, &token, expires_in);
            token
        }
    };
    Ok(Access {
        token,
        quota_project: src.quota_project.clone(),
    })
}

fn cached(key: &str) -> Option<String> {
    let now = SystemTime::now();
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(key)
        .filter(|c| c.expires_at > now + EAGER_REFRESH)
        .map(|c| c.token.clone())
}

fn remember(key: &str, token: &str, expires_in: u64) {
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            key.to_string(),
            Cached {
                token: token.to_string(),
                expires_at: SystemTime::now() + Duration::from_secs(expires_in),
            },
        );
}

/// Node's text for a file that cannot be opened (`ENOENT: no such file or directory, open
/// '/abs/path'`), as google-auth-library reports a named file it cannot read.
fn open_error(path: &str, e: &std::io::Error) -> String {
    let abs =
        std::path::absolute(path).map_or_else(|_| path.to_string(), |p| p.display().to_string());
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("ENOENT: no such file or directory, open '{abs}'")
        }
        std::io::ErrorKind::PermissionDenied => format!("EACCES: permission denied, open '{abs}'"),
        std::io::ErrorKind::IsADirectory => {
            "EISDIR: illegal operation on a directory, read".to_string()
        }
        _ => format!("{e}, open '{abs}'"),
    }
}

/// An access token for the credential file at `path`, from the cache or the token endpoint.
pub async fn access(path: &str, cancel: &CancellationToken) -> Result<Access, String> {
    let text = std::fs::read_to_string(path).map_err(|e| open_error(path, &e))?;
    let json = parse_js_json(&text).map_err(|e| format!("Unable to parse {path}: {e}"))?;
    let quota_project = json["quota_project_id"].as_str().map(String::from);
    if let Some(token) = cached(path) {
        return Ok(Access {
            token,
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
    remember(path, &token, expires_in);
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
        let src = |config: Option<&str>| Sources {
            home: Some("/h".into()),
            cloudsdk_config: config.map(String::from),
            ..Sources::default()
        };
        assert_eq!(
            src(None).well_known_file().as_deref(),
            Some("/h/.config/gcloud/application_default_credentials.json")
        );
        assert_eq!(
            src(Some("/c")).well_known_file().as_deref(),
            Some("/c/application_default_credentials.json")
        );
    }
}
