//! Whether a provider is usable, and the credentials a request uses (`composeApiKeyAuth` in
//! `provider-composer.js`, `resolveProviderAuth` in pi-ai).
//!
//! Precedence: a stored credential (`--api-key`, else the `auth.json` entry) owns the provider;
//! without one, a `models.json` `apiKey`; without that, the built-in provider's environment
//! variables. `models.json` `headers`/`authHeader` apply on top of whichever won.

use super::builtin_auth::{BuiltinAuth, KeyCredential, Resolved};
use super::config_value::{self, ExplicitEnv};
use super::env::Env;
use super::headers::{self, HeaderList};
use super::models_json::ProviderConfig;
use serde_json::{Map, Value};

/// The credential found for a provider, before any resolution against its methods.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Credential {
    None,
    ApiKey(KeyCredential),
    OAuth(Map<String, Value>),
    /// An auth.json entry of an unknown `type`.
    Other,
}

/// Pi's message when `authHeader` is set but no key resolved.
pub(crate) const AUTH_HEADER_NEEDS_KEY: &str = "authHeader requires a resolved API key";

/// A provider's auth methods: the built-in ones, and the `models.json` layer when the provider
/// was composed with one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProviderAuth<'a> {
    pub id: &'a str,
    pub builtin: Option<BuiltinAuth>,
    /// `Some` only when the provider's `models.json` entry composed without error.
    pub config: Option<&'a ProviderConfig>,
}

impl ProviderAuth<'_> {
    pub(crate) fn has_oauth(&self) -> bool {
        self.builtin.is_some_and(|b| b.oauth) || self.extension_oauth().is_some()
    }

    /// The display name of the OAuth login an extension registered for the provider.
    pub(crate) fn extension_oauth(&self) -> Option<&str> {
        self.config.and_then(|c| c.extension_oauth.as_deref())
    }

    /// Whether the provider takes a key typed at login (every built-in API-key method has a
    /// login, Bedrock's and Vertex's included).
    pub(crate) fn offers_key_login(&self) -> bool {
        self.inherited().is_some()
    }

    fn inherited(&self) -> Option<super::builtin_auth::KeyAuth> {
        self.builtin.and_then(|b| b.key)
    }

    /// OAuth-only providers get no API-key method from `models.json` unless it sets `apiKey`.
    fn has_api_key_method(&self) -> bool {
        match self.config {
            Some(c) => self.inherited().is_some() || c.api_key.is_some() || !self.has_oauth(),
            None => self.inherited().is_some(),
        }
    }

    /// `checkAuth`: whether the provider counts as configured (its models are available).
    /// `models.json` commands are not run for this; auth.json keys were resolved on read.
    pub(crate) fn check(&self, credential: &Credential, env: &Env) -> bool {
        if let Credential::OAuth(_) = credential {
            return self.has_oauth();
        }
        if !self.has_api_key_method() {
            return false;
        }
        let Some(config) = self.config else {
            return match credential {
                Credential::ApiKey(c) => self
                    .inherited()
                    .and_then(|k| k.resolve(Some(c), env))
                    .is_some(),
                Credential::None => self
                    .inherited()
                    .and_then(|k| k.resolve(None, env))
                    .is_some(),
                _ => false,
            };
        };
        if let Credential::ApiKey(c) = credential {
            if c.key.as_ref().is_some_and(|k| !k.is_empty()) {
                return true;
            }
            return self
                .inherited()
                .and_then(|k| k.resolve(Some(c), env))
                .is_some();
        }
        match &config.api_key {
            Some(raw) if config_value::is_command(raw) => true,
            Some(raw) => config_value::env_var_names(raw)
                .iter()
                .all(|n| env.get(n).is_some()),
            None => self
                .inherited()
                .and_then(|k| k.resolve(None, env))
                .is_some(),
        }
    }

    /// `resolveProviderAuth` for an API-key credential or none. `Err` carries the cause message
    /// (Pi wraps it as `API key auth failed for provider <id>: <cause>`).
    pub(crate) fn resolve(
        &self,
        credential: &Credential,
        env: &Env,
    ) -> Result<Option<Resolved>, String> {
        let api_credential = match credential {
            Credential::ApiKey(c) => Some(c),
            Credential::None => None,
            Credential::OAuth(_) | Credential::Other => return Ok(None),
        };
        if !self.has_api_key_method() {
            return Ok(None);
        }
        let Some(config) = self.config else {
            return Ok(self
                .inherited()
                .and_then(|k| k.resolve(api_credential, env)));
        };
        let result = match (api_credential, &config.api_key) {
            (Some(c), _) => match self.inherited() {
                Some(k) => k.resolve(Some(c), env),
                None => c.key.as_ref().filter(|k| !k.is_empty()).map(|k| Resolved {
                    api_key: Some(k.clone()),
                    headers: None,
                    env: c.env.clone(),
                }),
            },
            (None, Some(raw)) => {
                let what = format!("API key for provider \"{}\"", self.id);
                let key = config_value::resolve_or_error(raw, &what, None, env)?;
                match self.inherited() {
                    Some(k) => k.resolve(
                        Some(&KeyCredential {
                            key: Some(key),
                            env: None,
                        }),
                        env,
                    ),
                    None => Some(Resolved {
                        api_key: Some(key),
                        ..Resolved::default()
                    }),
                }
            }
            (None, None) => self.inherited().and_then(|k| k.resolve(None, env)),
        };
        let Some(mut result) = result else {
            return Ok(None);
        };
        let mut explicit: ExplicitEnv = api_credential
            .and_then(|c| c.env.clone())
            .unwrap_or_default();
        for (k, v) in result.env.iter().flatten() {
            explicit.insert(k.clone(), v.clone());
        }
        let configured = config_value::resolve_headers_or_error(
            config.headers.as_deref(),
            &format!("provider \"{}\"", self.id),
            Some(&explicit),
            env,
        )?;
        let mut merged =
            headers::spread(result.headers.take(), configured.map(headers::from_strings));
        if config.auth_header == Some(true) {
            let key = result.api_key.as_ref().filter(|k| !k.is_empty());
            let Some(key) = key else {
                return Err(AUTH_HEADER_NEEDS_KEY.to_string());
            };
            let bearer: HeaderList = vec![("Authorization".into(), Some(format!("Bearer {key}")))];
            merged = headers::spread(merged.or_else(|| Some(Vec::new())), Some(bearer));
        }
        result.headers = merged;
        Ok(Some(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_auth::builtin_auth;
    use serde_json::json;

    fn config(v: serde_json::Value) -> ProviderConfig {
        ProviderConfig::from_object(v.as_object().unwrap_or(&Map::new()))
    }

    #[test]
    fn custom_provider_with_env_template_is_available_only_when_set() {
        let c = config(json!({"baseUrl": "u", "apiKey": "$MY_KEY"}));
        let auth = ProviderAuth {
            id: "p",
            builtin: None,
            config: Some(&c),
        };
        assert!(!auth.check(&Credential::None, &Env::default()));
        assert!(auth.check(&Credential::None, &Env::from_pairs([("MY_KEY", "x")])));
        assert!(!auth.check(&Credential::None, &Env::from_pairs([("MY_KEY", " ")])));
    }

    #[test]
    fn command_keys_count_as_configured_without_running() {
        let c = config(json!({"baseUrl": "u", "apiKey": "!exit 1"}));
        let auth = ProviderAuth {
            id: "p",
            builtin: None,
            config: Some(&c),
        };
        assert!(auth.check(&Credential::None, &Env::default()));
        assert_eq!(
            auth.resolve(
                &Credential::None,
                &Env::from_pairs([("PATH", "/bin:/usr/bin")])
            ),
            Err("Failed to resolve API key for provider \"p\" from shell command: exit 1".into())
        );
    }

    #[test]
    fn models_json_key_beats_environment_for_builtins() {
        let c = config(json!({"apiKey": "from-config"}));
        let auth = ProviderAuth {
            id: "openai",
            builtin: builtin_auth("openai"),
            config: Some(&c),
        };
        let env = Env::from_pairs([("OPENAI_API_KEY", "from-env")]);
        let r = auth.resolve(&Credential::None, &env);
        assert_eq!(
            r.map(|r| r.and_then(|r| r.api_key)),
            Ok(Some("from-config".into()))
        );
    }

    #[test]
    fn stored_key_beats_models_json_key() {
        let c = config(json!({"baseUrl": "u", "apiKey": "cfg"}));
        let auth = ProviderAuth {
            id: "p",
            builtin: None,
            config: Some(&c),
        };
        let cred = Credential::ApiKey(KeyCredential {
            key: Some("stored".into()),
            env: None,
        });
        let r = auth.resolve(&cred, &Env::default());
        assert_eq!(
            r.map(|r| r.and_then(|r| r.api_key)),
            Ok(Some("stored".into()))
        );
    }

    #[test]
    fn auth_header_adds_bearer_after_configured_headers() {
        let c = config(json!({"baseUrl": "u", "apiKey": "k", "authHeader": true,
            "headers": {"X-Team": "$TEAM"}}));
        let auth = ProviderAuth {
            id: "p",
            builtin: None,
            config: Some(&c),
        };
        let r = auth.resolve(&Credential::None, &Env::from_pairs([("TEAM", "t")]));
        assert_eq!(
            r.map(|r| r.and_then(|r| r.headers)),
            Ok(Some(vec![
                ("X-Team".into(), Some("t".into())),
                ("Authorization".into(), Some("Bearer k".into())),
            ]))
        );
        assert_eq!(
            auth.resolve(&Credential::None, &Env::default()),
            Err("Failed to resolve provider \"p\" header \"X-Team\" from environment variable: TEAM".into())
        );
    }

    #[test]
    fn oauth_credentials_need_an_oauth_provider() {
        let oauth = Credential::OAuth(Map::new());
        let anthropic = ProviderAuth {
            id: "anthropic",
            builtin: builtin_auth("anthropic"),
            config: None,
        };
        let groq = ProviderAuth {
            id: "groq",
            builtin: builtin_auth("groq"),
            config: None,
        };
        assert!(anthropic.check(&oauth, &Env::default()));
        assert!(!groq.check(&oauth, &Env::from_pairs([("GROQ_API_KEY", "k")])));
    }
}
