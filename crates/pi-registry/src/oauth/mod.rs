//! Stored OAuth logins (`"type": "oauth"` entries of `auth.json`): the provider's flow, a
//! refresh when the token has less than five minutes left (or was rejected), written back under
//! Pi's `auth.json` lock with the check repeated under the lock, so several processes (ours and
//! Pi's) refresh a token once; and what a request sends for the credential.
//!
//! Token endpoints are the providers' own. `PI_OAUTH_ENDPOINT_ORIGIN` (ours, for tests) sends
//! every OAuth request to another origin with the same path.

mod chatgpt_login;
pub mod extension;
pub mod login;
mod radius_login;
pub mod refresh;
mod sign_in;
pub mod store;

use serde_json::{Map, Value};
use std::path::Path;

/// The OAuth flow of a provider (Pi 1.6.0 has these nine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    Anthropic,
    OpenAiCodex,
    /// "Sign in with ChatGPT" for the `openai` provider.
    OpenAiChatGpt,
    GithubCopilot,
    Kimi,
    Xai,
    OpenRouter,
    Meta,
    /// A Radius gateway (the `radius` provider, or models.json `"oauth": "radius"`).
    Radius {
        gateway: String,
    },
    /// A login an extension registered with its provider; `name` is its display name.
    Extension {
        provider: String,
        name: String,
    },
}

impl Flow {
    /// The flow for `provider`; `oauth` is its models.json `oauth` setting, `base_url` its URL.
    pub fn for_provider(provider: &str, oauth: Option<&str>, base_url: &str) -> Option<Flow> {
        if oauth == Some("radius") || provider == "radius" {
            return Some(Flow::Radius {
                gateway: crate::gateway::radius_gateway(base_url),
            });
        }
        Some(match provider {
            "anthropic" => Flow::Anthropic,
            "openai-codex" => Flow::OpenAiCodex,
            "openai" => Flow::OpenAiChatGpt,
            "github-copilot" => Flow::GithubCopilot,
            "kimi-coding" => Flow::Kimi,
            "xai" => Flow::Xai,
            "openrouter" => Flow::OpenRouter,
            "meta" => Flow::Meta,
            _ => return None,
        })
    }

    /// The login's display name, as `pi auth` lists it.
    pub fn name(&self) -> &str {
        match self {
            Flow::Anthropic => "Anthropic (Claude Pro/Max)",
            Flow::OpenAiCodex => "OpenAI (ChatGPT Plus/Pro)",
            Flow::OpenAiChatGpt => "OpenAI (ChatGPT subscription)",
            Flow::GithubCopilot => "GitHub Copilot",
            Flow::Kimi => "Kimi Code (subscription)",
            Flow::Xai => "xAI (Grok/X subscription)",
            Flow::OpenRouter => "OpenRouter OAuth",
            Flow::Meta => "Meta (Muse subscription)",
            Flow::Radius { .. } => "Radius",
            Flow::Extension { name, .. } => name,
        }
    }
}

fn origin_override() -> &'static std::sync::RwLock<Option<String>> {
    static ORIGIN: std::sync::OnceLock<std::sync::RwLock<Option<String>>> =
        std::sync::OnceLock::new();
    ORIGIN.get_or_init(Default::default)
}

/// Sends this process's OAuth requests to `origin` (tests), like `PI_OAUTH_ENDPOINT_ORIGIN`.
pub fn set_endpoint_origin(origin: Option<String>) {
    *origin_override()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = origin;
}

/// `url` with its origin replaced by [`set_endpoint_origin`]'s or `PI_OAUTH_ENDPOINT_ORIGIN`.
pub fn endpoint(url: &str) -> String {
    let set = origin_override()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(origin) = set.or_else(|| std::env::var("PI_OAUTH_ENDPOINT_ORIGIN").ok()) else {
        return url.to_string();
    };
    let origin = origin.trim_end_matches('/');
    if origin.is_empty() {
        return url.to_string();
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    format!("{origin}{path}")
}

/// What a request sends for an OAuth credential.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthAuth {
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The endpoint the credential names (GitHub Copilot's per-account proxy).
    pub base_url: Option<String>,
}

/// Pi's refresh window: a token with less than this left is refreshed first.
pub const MIN_VALIDITY_MS: u64 = 5 * 60 * 1000;

fn expires(cred: &Map<String, Value>) -> f64 {
    cred.get("expires").and_then(Value::as_f64).unwrap_or(0.0)
}

fn as_oauth(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("oauth"))
}

/// The credential's request auth (Pi's `toAuth`).
pub fn to_auth(flow: &Flow, cred: &Map<String, Value>) -> OAuthAuth {
    let access = cred
        .get("access")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match flow {
        Flow::Kimi => OAuthAuth {
            api_key: None,
            headers: vec![("Authorization".into(), format!("Bearer {access}"))],
            base_url: None,
        },
        Flow::GithubCopilot => OAuthAuth {
            base_url: Some(refresh::copilot_base_url(
                &access,
                refresh::copilot_domain(cred).as_deref(),
            )),
            api_key: Some(access),
            headers: Vec::new(),
        },
        _ => OAuthAuth {
            api_key: Some(access),
            ..OAuthAuth::default()
        },
    }
}

/// Refreshes `provider`'s stored login under the lock when `needs_refresh` still holds for the
/// entry read there; the entry afterwards (`None` when it is no longer an OAuth login).
async fn refresh_locked(
    auth_path: &Path,
    provider: &str,
    flow: &Flow,
    needs_refresh: impl Fn(&Map<String, Value>) -> bool,
) -> Result<Option<Map<String, Value>>, String> {
    let mut refresh_error = None;
    let post = store::modify(auth_path, provider, |current| {
        let refresh_error = &mut refresh_error;
        async move {
            let Some(cur) = as_oauth(current.as_ref()) else {
                return Ok(None); // logged out meanwhile
            };
            if !needs_refresh(cur) {
                return Ok(None); // another process or request refreshed it
            }
            match refresh::refresh(flow, cur).await {
                Ok(next) => Ok(Some(next)),
                Err(e) => {
                    *refresh_error = Some(e);
                    Err(String::new())
                }
            }
        }
    })
    .await;
    match post {
        Ok(v) => Ok(as_oauth(v.as_ref()).cloned()),
        Err(_) if refresh_error.is_some() => Err(format!(
            "OAuth refresh failed for {provider}: {}",
            refresh_error.unwrap_or_default()
        )),
        Err(e) => Err(format!(
            "Credential store modify failed for {provider}: {e}"
        )),
    }
}

/// The request auth of `provider`'s stored OAuth login, refreshed first when it expires within
/// five minutes (or `min_validity_ms`, whichever is longer). `Ok(None)` when no OAuth login is
/// stored. Errors are Pi's texts (`OAuth refresh failed for <provider>: <cause>`).
pub async fn resolve(
    auth_path: &Path,
    provider: &str,
    flow: &Flow,
    min_validity_ms: Option<u64>,
) -> Result<Option<OAuthAuth>, String> {
    let data = store::read(auth_path)
        .map_err(|e| format!("Credential store read failed for {provider}: {e}"))?;
    let Some(stored) = as_oauth(data.get(provider)).cloned() else {
        return Ok(None);
    };
    let min = MIN_VALIDITY_MS.max(min_validity_ms.unwrap_or(0)) as f64;
    let expires_soon = |c: &Map<String, Value>| pi_js::now_ms() as f64 + min >= expires(c);
    let mut cred = stored;
    if expires_soon(&cred) {
        let Some(post) = refresh_locked(auth_path, provider, flow, expires_soon).await? else {
            return Ok(None);
        };
        cred = post;
        if min_validity_ms.is_some() && expires_soon(&cred) {
            return Err(format!(
                "OAuth refresh returned a token that expires too soon for {provider}"
            ));
        }
    }
    credential_auth(flow, &cred).await.map(Some)
}

/// [`to_auth`], asking the extension for the key of a login it registered.
async fn credential_auth(flow: &Flow, cred: &Map<String, Value>) -> Result<OAuthAuth, String> {
    match flow {
        Flow::Extension { provider, .. } => Ok(OAuthAuth {
            api_key: Some(extension::api_key(provider, cred).await?),
            ..OAuthAuth::default()
        }),
        _ => Ok(to_auth(flow, cred)),
    }
}

/// After the provider rejected `rejected_access`: refreshes once under the lock unless another
/// request or process already replaced that token; the auth to retry with.
pub async fn refresh_rejected(
    auth_path: &Path,
    provider: &str,
    flow: &Flow,
    rejected_access: &str,
) -> Result<Option<OAuthAuth>, String> {
    let still_rejected =
        |c: &Map<String, Value>| c.get("access").and_then(Value::as_str) == Some(rejected_access);
    match refresh_locked(auth_path, provider, flow, still_rejected).await? {
        Some(c) => credential_auth(flow, &c).await.map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_by_provider() {
        assert_eq!(
            Flow::for_provider("anthropic", None, ""),
            Some(Flow::Anthropic)
        );
        assert_eq!(
            Flow::for_provider("openai", None, ""),
            Some(Flow::OpenAiChatGpt)
        );
        assert_eq!(Flow::for_provider("groq", None, ""), None);
        assert_eq!(
            Flow::for_provider("my-gw", Some("radius"), "https://gw.example/v1"),
            Some(Flow::Radius {
                gateway: "https://gw.example".into()
            })
        );
    }

    #[test]
    fn kimi_sends_a_header_and_copilot_its_endpoint() {
        let mut c = Map::new();
        c.insert(
            "access".into(),
            "tid=1;proxy-ep=proxy.enterprise.githubcopilot.com".into(),
        );
        assert_eq!(
            to_auth(&Flow::GithubCopilot, &c).base_url.as_deref(),
            Some("https://api.enterprise.githubcopilot.com")
        );
        c.insert("access".into(), "k".into());
        assert_eq!(
            to_auth(&Flow::Kimi, &c),
            OAuthAuth {
                api_key: None,
                headers: vec![("Authorization".into(), "Bearer k".into())],
                base_url: None
            }
        );
    }
}
