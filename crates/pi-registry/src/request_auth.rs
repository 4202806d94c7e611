//! The credentials of one request (`ModelRuntime.getAuth` + `AgentSession._getRequiredRequestAuth`).

use super::auth::{AUTH_HEADER_NEEDS_KEY, Credential};
use super::config_value::{self, ExplicitEnv};
use super::headers::{self, HeaderList};
use super::messages;
use super::model_registry::ModelRegistry;
use pi_protocol::Model;
use serde_json::Value;

/// What a request to a model's provider sends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestAuth {
    pub api_key: Option<String>,
    /// Extra headers in order; `None` values remove a header the wire API sends by default
    /// (e.g. Cloudflare AI Gateway drops `Authorization`).
    pub headers: Option<HeaderList>,
    /// Provider settings that travel with the credential (account ids, AWS profile, ...).
    pub env: Option<ExplicitEnv>,
    /// The endpoint the credential names, replacing the model's (GitHub Copilot's proxy).
    pub base_url: Option<String>,
}

/// Why a request has no credentials. `Display` is Pi's error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// `No API key found for <provider>.` with login help.
    #[error("{message}")]
    NoApiKey { provider: String, message: String },
    /// A stored OAuth login that did not yield credentials.
    #[error("{}", messages::oauth_failed(.provider))]
    OAuthFailed { provider: String },
    /// A stored OAuth login: its token comes from [`crate::oauth::resolve`] (possibly a refresh
    /// over the network), which [`ModelRegistry::oauth_login`] describes; then
    /// [`ModelRegistry::request_auth_with`] finishes the request's auth.
    #[error("OAuth credentials for \"{provider}\" must be resolved first")]
    NeedsOAuth { provider: String },
    /// A configured value failed to resolve (Pi's message, e.g.
    /// `API key auth failed for provider "p": Failed to resolve API key ... environment variable: KEY`).
    #[error("{0}")]
    Failed(String),
}

impl ModelRegistry {
    fn no_api_key(&self, provider: &str) -> AuthError {
        if self.is_using_oauth(provider) {
            return AuthError::OAuthFailed {
                provider: provider.to_string(),
            };
        }
        AuthError::NoApiKey {
            provider: provider.to_string(),
            message: self.no_api_key_message(provider),
        }
    }

    /// The credentials and headers for a request to `model`, or Pi's error for why there are
    /// none. Runs `models.json` `!command` values (uncached, as Pi does for every request).
    pub fn request_auth(&self, model: &Model) -> Result<RequestAuth, AuthError> {
        let provider = model.provider.as_str();
        if self.is_local_provider(provider) {
            return Ok(RequestAuth::default());
        }
        let Some(entry) = self.providers.iter().find(|p| p.id == provider) else {
            return Err(self.no_api_key(provider));
        };
        let credential = self.credential(provider).map_err(AuthError::Failed)?;
        if let Credential::OAuth(_) = credential
            && entry.auth().has_oauth()
        {
            return Err(AuthError::NeedsOAuth {
                provider: provider.to_string(),
            });
        }
        let resolved = match entry.auth().resolve(&credential, &self.env) {
            Ok(Some(r)) => r,
            Ok(None) => return Err(self.no_api_key(provider)),
            Err(cause) if cause == AUTH_HEADER_NEEDS_KEY => return Err(self.no_api_key(provider)),
            Err(cause) => {
                return Err(AuthError::Failed(format!(
                    "API key auth failed for provider {provider}: {cause}"
                )));
            }
        };
        let model_headers: Option<HeaderList> = model.headers.as_ref().map(|h| {
            h.iter()
                .map(|(k, v)| (k.to_string(), Some(v.clone())))
                .collect()
        });
        let mut headers = headers::merge(resolved.headers, model_headers);
        if let Some(raw) = self.configured_model_headers(model) {
            let what = format!("model \"{provider}/{}\"", model.id);
            let configured = config_value::resolve_headers_or_error(
                Some(&raw),
                &what,
                resolved.env.as_ref(),
                &self.env,
            )
            .map_err(AuthError::Failed)?;
            headers = headers::merge(headers, configured.map(headers::from_strings));
        }
        if resolved.api_key.as_ref().is_none_or(|k| k.is_empty()) && headers.is_none() {
            return Err(self.no_api_key(provider));
        }
        // The llama.cpp server the credential names, whatever server the model was listed on.
        let base_url = (entry.builtin == Some(super::builtin_auth::LLAMA_AUTH))
            .then(|| resolved.env.as_ref()?.get("LLAMA_BASE_URL")?.as_str())
            .flatten()
            .map(crate::llama::inference_url);
        Ok(RequestAuth {
            api_key: resolved.api_key,
            headers,
            env: resolved.env,
            base_url,
        })
    }

    /// The OAuth flow of `provider` and the `auth.json` its login is stored in, when the
    /// provider offers OAuth.
    pub fn oauth_login(&self, provider: &str) -> Option<(crate::oauth::Flow, std::path::PathBuf)> {
        let entry = self.providers.iter().find(|p| p.id == provider)?;
        if !entry.auth().has_oauth() {
            return None;
        }
        if let Some(name) = entry.auth().extension_oauth() {
            let flow = crate::oauth::Flow::Extension {
                provider: provider.to_string(),
                name: name.to_string(),
            };
            return Some((flow, self.auth_path.clone()));
        }
        let config = entry.config.as_ref();
        let base_url = config
            .and_then(|c| c.base_url.clone())
            .or_else(|| entry.models().first().map(|m| m.base_url.clone()))
            .unwrap_or_default();
        let flow = crate::oauth::Flow::for_provider(
            provider,
            config.and_then(|c| c.oauth.as_deref()),
            &base_url,
        )?;
        Some((flow, self.auth_path.clone()))
    }

    /// A request's auth from a resolved OAuth login: its token or headers, then the model's
    /// and the configured model headers as for API keys.
    pub fn request_auth_with(
        &self,
        model: &Model,
        oauth: crate::oauth::OAuthAuth,
    ) -> Result<RequestAuth, AuthError> {
        let oauth_headers: Option<HeaderList> = (!oauth.headers.is_empty()).then(|| {
            oauth
                .headers
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect()
        });
        let model_headers: Option<HeaderList> = model.headers.as_ref().map(|h| {
            h.iter()
                .map(|(k, v)| (k.to_string(), Some(v.clone())))
                .collect()
        });
        let mut headers = headers::merge(oauth_headers, model_headers);
        if let Some(raw) = self.configured_model_headers(model) {
            let what = format!("model \"{}/{}\"", model.provider, model.id);
            let configured =
                config_value::resolve_headers_or_error(Some(&raw), &what, None, &self.env)
                    .map_err(AuthError::Failed)?;
            headers = headers::merge(headers, configured.map(headers::from_strings));
        }
        Ok(RequestAuth {
            api_key: oauth.api_key,
            headers,
            env: None,
            base_url: oauth.base_url,
        })
    }

    /// The API key a request to `provider` would use, if any (errors count as none).
    pub fn api_key_for(&self, provider: &str) -> Option<String> {
        let entry = self.providers.iter().find(|p| p.id == provider)?;
        let credential = self.credential(provider).ok()?;
        entry.auth().resolve(&credential, &self.env).ok()??.api_key
    }

    /// `modelOverrides[id].headers` then the `models` entry's headers, from the raw
    /// `models.json` entry (applied even when the entry failed to compose, as in Pi).
    fn configured_model_headers(&self, model: &Model) -> Option<Vec<(String, String)>> {
        let config = self.config.provider(&model.provider)?;
        let mut out: Vec<(String, String)> = Vec::new();
        let from = |obj: Option<&serde_json::Map<String, Value>>| -> Vec<(String, String)> {
            obj.and_then(|o| o.get("headers"))
                .and_then(Value::as_object)
                .map(|h| {
                    h.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let layers = [
            from(config.model_override(&model.id)),
            from(config.model_definition(&model.id)),
        ];
        for (name, value) in layers.into_iter().flatten() {
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => out.push((name, value)),
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// [`ModelRegistry::request_auth`] for a registry shared behind a mutex, resolving (and when
/// due refreshing) a stored OAuth login without holding the lock across the network.
pub async fn request_auth_shared(
    registry: &std::sync::Mutex<ModelRegistry>,
    model: &Model,
) -> Result<RequestAuth, AuthError> {
    let lock = || {
        registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let first = lock().request_auth(model);
    let Err(AuthError::NeedsOAuth { provider }) = first else {
        return first;
    };
    let Some((flow, path)) = lock().oauth_login(&provider) else {
        return Err(AuthError::OAuthFailed { provider });
    };
    match crate::oauth::resolve(&path, &provider, &flow, None).await {
        Ok(Some(auth)) => lock().request_auth_with(model, auth),
        Ok(None) => Err(AuthError::OAuthFailed { provider }),
        Err(text) => Err(AuthError::Failed(text)),
    }
}
