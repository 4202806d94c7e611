//! How each built-in provider finds an API key (pi-ai `providers/*.js`): a stored key first,
//! then its environment variables, or a provider-specific rule (Anthropic auth tokens and
//! workload identity, AWS credentials, Google ADC, Cloudflare account ids).

use super::config_value::ExplicitEnv;
use super::env::Env;
use super::headers::HeaderList;
use serde_json::Value;
use std::path::Path;

/// An `api_key` credential (auth.json entry or `--api-key`), its key already resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KeyCredential {
    pub key: Option<String>,
    pub env: Option<ExplicitEnv>,
}

/// What an API-key method resolved to.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Resolved {
    pub api_key: Option<String>,
    pub headers: Option<HeaderList>,
    pub env: Option<ExplicitEnv>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyAuth {
    /// `envApiKeyAuth`: stored key, else the first set variable.
    Env(&'static [&'static str]),
    Anthropic,
    Bedrock,
    Vertex,
    Cloudflare {
        gateway: bool,
    },
    /// The built-in llama.cpp extension's server (see `llama.rs`).
    Llama,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BuiltinAuth {
    pub key: Option<KeyAuth>,
    /// The provider offers an OAuth login (only stored OAuth credentials are read here).
    pub oauth: bool,
}

/// The auth methods of a built-in provider; `None` for unknown ids (custom providers).
pub(crate) fn builtin_auth(provider: &str) -> Option<BuiltinAuth> {
    use KeyAuth::*;
    let env = |vars: &'static [&'static str]| Some(Env(vars));
    let (key, oauth) = match provider {
        "amazon-bedrock" => (Some(Bedrock), false),
        "ant-ling" => (env(&["ANT_LING_API_KEY"]), false),
        "anthropic" => (Some(Anthropic), true),
        "azure" => (env(&["AZURE_OPENAI_API_KEY"]), false),
        "baseten" => (env(&["BASETEN_API_KEY"]), false),
        "cerebras" => (env(&["CEREBRAS_API_KEY"]), false),
        "cloudflare-ai-gateway" => (Some(Cloudflare { gateway: true }), false),
        "cloudflare-workers-ai" => (Some(Cloudflare { gateway: false }), false),
        "deepseek" => (env(&["DEEPSEEK_API_KEY"]), false),
        "fireworks" => (env(&["FIREWORKS_API_KEY"]), false),
        "github-copilot" => (env(&["COPILOT_GITHUB_TOKEN"]), true),
        "google" => (env(&["GEMINI_API_KEY"]), false),
        "google-vertex" => (Some(Vertex), false),
        "groq" => (env(&["GROQ_API_KEY"]), false),
        "huggingface" => (env(&["HF_TOKEN"]), false),
        "kimi-coding" => (env(&["KIMI_API_KEY"]), true),
        "meta" => (env(&["META_API_KEY"]), true),
        "minimax" => (env(&["MINIMAX_API_KEY"]), false),
        "minimax-cn" => (env(&["MINIMAX_CN_API_KEY"]), false),
        "mistral" => (env(&["MISTRAL_API_KEY"]), false),
        "moonshotai" | "moonshotai-cn" => (env(&["MOONSHOT_API_KEY"]), false),
        "nvidia" => (env(&["NVIDIA_API_KEY"]), false),
        "openai" => (env(&["OPENAI_API_KEY"]), true),
        "openai-codex" => (None, true),
        "opencode" | "opencode-go" => (env(&["OPENCODE_API_KEY"]), false),
        "openrouter" => (env(&["OPENROUTER_API_KEY"]), true),
        "qwen-token-plan" => (
            env(&["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"]),
            false,
        ),
        "qwen-token-plan-cn" => (
            env(&[
                "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
                "QWEN_TOKEN_PLAN_CN_API_KEY",
            ]),
            false,
        ),
        "qwen-token-plan-individual" => (
            env(&[
                "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
                "QWEN_TOKEN_PLAN_API_KEY",
            ]),
            false,
        ),
        "qwen-token-plan-individual-cn" => (
            env(&[
                "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
                "QWEN_TOKEN_PLAN_CN_API_KEY",
            ]),
            false,
        ),
        "radius" => (env(&["RADIUS_API_KEY"]), true),
        "together" => (env(&["TOGETHER_API_KEY"]), false),
        "typesafe" => (env(&["TYPESAFE_API_KEY"]), false),
        "vercel-ai-gateway" => (env(&["AI_GATEWAY_API_KEY"]), false),
        "xai" => (env(&["XAI_API_KEY"]), true),
        "xiaomi" => (env(&["XIAOMI_API_KEY"]), false),
        "xiaomi-token-plan-ams" => (env(&["XIAOMI_TOKEN_PLAN_AMS_API_KEY"]), false),
        "xiaomi-token-plan-cn" => (env(&["XIAOMI_TOKEN_PLAN_CN_API_KEY"]), false),
        "xiaomi-token-plan-sgp" => (env(&["XIAOMI_TOKEN_PLAN_SGP_API_KEY"]), false),
        "zai" => (env(&["ZAI_API_KEY"]), false),
        "zai-coding-cn" => (env(&["ZAI_CODING_CN_API_KEY"]), false),
        _ => return None,
    };
    Some(BuiltinAuth { key, oauth })
}

/// A provider registered from `models.json` with `"oauth": "radius"` has Radius's auth.
pub(crate) const RADIUS_AUTH: BuiltinAuth = BuiltinAuth {
    key: Some(KeyAuth::Env(&["RADIUS_API_KEY"])),
    oauth: true,
};

fn stored_key(credential: Option<&KeyCredential>) -> Option<Resolved> {
    let credential = credential?;
    let key = credential.key.as_ref().filter(|k| !k.is_empty())?;
    Some(Resolved {
        api_key: Some(key.clone()),
        headers: None,
        env: credential.env.clone(),
    })
}

fn cred_env<'a>(credential: Option<&'a KeyCredential>, name: &str) -> Option<&'a str> {
    credential?.env.as_ref()?.get(name)?.as_str()
}

fn env_object(pairs: &[(&str, &str)]) -> ExplicitEnv {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect()
}

impl KeyAuth {
    /// `apiKey.resolve({ctx, credential})` of the built-in method.
    pub(crate) fn resolve(self, credential: Option<&KeyCredential>, env: &Env) -> Option<Resolved> {
        match self {
            KeyAuth::Env(vars) => stored_key(credential).or_else(|| {
                let value = vars.iter().find_map(|v| env.get(v))?;
                Some(Resolved {
                    api_key: Some(value.to_string()),
                    ..Resolved::default()
                })
            }),
            KeyAuth::Anthropic => stored_key(credential).or_else(|| resolve_anthropic(env)),
            KeyAuth::Bedrock => resolve_bedrock(credential, env),
            KeyAuth::Vertex => resolve_vertex(credential, env),
            KeyAuth::Cloudflare { gateway } => resolve_cloudflare(gateway, credential, env),
            KeyAuth::Llama => resolve_llama(credential, env),
        }
    }
}

/// The llama.cpp extension's provider.
pub(crate) const LLAMA_AUTH: BuiltinAuth = BuiltinAuth {
    key: Some(KeyAuth::Llama),
    oauth: false,
};

/// Configured when a server is named (stored credential, else `LLAMA_BASE_URL`); the key is the
/// stored one, else `LLAMA_API_KEY`, else `local`; the server travels as `env.LLAMA_BASE_URL`.
fn resolve_llama(credential: Option<&KeyCredential>, env: &Env) -> Option<Resolved> {
    let server = crate::llama_url::server_url(
        cred_env(credential, "LLAMA_BASE_URL"),
        env.get("LLAMA_BASE_URL"),
    )?;
    let key = credential
        .and_then(|c| c.key.clone())
        .or_else(|| env.get("LLAMA_API_KEY").map(str::to_string))
        .unwrap_or_else(|| "local".into());
    let mut explicit = credential.and_then(|c| c.env.clone()).unwrap_or_default();
    explicit.insert("LLAMA_BASE_URL".into(), Value::String(server));
    Some(Resolved {
        api_key: Some(key),
        headers: None,
        env: Some(explicit),
    })
}

fn resolve_anthropic(env: &Env) -> Option<Resolved> {
    if let Some(token) = env.get("ANTHROPIC_AUTH_TOKEN") {
        return Some(Resolved {
            headers: Some(vec![(
                "Authorization".into(),
                Some(format!("Bearer {token}")),
            )]),
            ..Resolved::default()
        });
    }
    for var in ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"] {
        if let Some(key) = env.get(var) {
            return Some(Resolved {
                api_key: Some(key.to_string()),
                ..Resolved::default()
            });
        }
    }
    // Workload identity federation: the ids travel as provider env.
    let mut federation = Vec::new();
    for var in [
        "ANTHROPIC_FEDERATION_RULE_ID",
        "ANTHROPIC_ORGANIZATION_ID",
        "ANTHROPIC_IDENTITY_TOKEN_FILE",
    ] {
        federation.push((var, env.get(var)?));
    }
    for var in ["ANTHROPIC_SERVICE_ACCOUNT_ID", "ANTHROPIC_WORKSPACE_ID"] {
        if let Some(value) = env.get(var) {
            federation.push((var, value));
        }
    }
    Some(Resolved {
        env: Some(env_object(&federation)),
        ..Resolved::default()
    })
}

fn resolve_bedrock(credential: Option<&KeyCredential>, env: &Env) -> Option<Resolved> {
    if let Some(stored) = stored_key(credential) {
        return Some(stored);
    }
    let ambient = Resolved::default();
    if env.get("AWS_BEARER_TOKEN_BEDROCK").is_some() {
        return Some(ambient);
    }
    let stored_profile = cred_env(credential, "AWS_PROFILE");
    if stored_profile
        .or(env.get("AWS_PROFILE"))
        .is_some_and(|p| !p.is_empty())
    {
        return Some(Resolved {
            env: credential.and_then(|c| c.env.clone()),
            ..Resolved::default()
        });
    }
    let keys = env.get("AWS_ACCESS_KEY_ID").is_some() && env.get("AWS_SECRET_ACCESS_KEY").is_some();
    let ambient_ok = keys
        || [
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
        ]
        .iter()
        .any(|v| env.get(v).is_some());
    ambient_ok.then_some(ambient)
}

fn resolve_vertex(credential: Option<&KeyCredential>, env: &Env) -> Option<Resolved> {
    // `credential?.key ?? env(...)`: a stored empty key does not fall back to the variable.
    let key = match credential.and_then(|c| c.key.as_deref()) {
        Some(k) => Some(k),
        None => env.get("GOOGLE_CLOUD_API_KEY"),
    };
    if let Some(key) = key.filter(|k| !k.is_empty()) {
        return Some(Resolved {
            api_key: Some(key.to_string()),
            ..Resolved::default()
        });
    }
    let adc = cred_env(credential, "GOOGLE_APPLICATION_CREDENTIALS")
        .or_else(|| env.get("GOOGLE_APPLICATION_CREDENTIALS"))
        .unwrap_or("~/.config/gcloud/application_default_credentials.json");
    let path = match adc.strip_prefix('~') {
        Some(rest) => format!("{}{rest}", env.raw("HOME").unwrap_or("")),
        None => adc.to_string(),
    };
    let has_credentials = Path::new(&path).exists();
    let project = cred_env(credential, "GOOGLE_CLOUD_PROJECT")
        .or_else(|| env.get("GOOGLE_CLOUD_PROJECT"))
        .or_else(|| env.get("GCLOUD_PROJECT"));
    let location =
        cred_env(credential, "GOOGLE_CLOUD_LOCATION").or_else(|| env.get("GOOGLE_CLOUD_LOCATION"));
    let usable = has_credentials
        && project.is_some_and(|p| !p.is_empty())
        && location.is_some_and(|l| !l.is_empty());
    usable.then(|| Resolved {
        env: credential.and_then(|c| c.env.clone()),
        ..Resolved::default()
    })
}

fn resolve_cloudflare(
    gateway: bool,
    credential: Option<&KeyCredential>,
    env: &Env,
) -> Option<Resolved> {
    // Per field: the credential's value when present, else the environment.
    let value = |name: &str| -> Option<String> {
        let from_credential = credential.and_then(|c| {
            if name == "CLOUDFLARE_API_KEY" {
                c.key.clone()
            } else {
                cred_env(Some(c), name).map(str::to_string)
            }
        });
        from_credential.or_else(|| env.get(name).map(str::to_string))
    };
    let api_key = value("CLOUDFLARE_API_KEY").filter(|v| !v.is_empty())?;
    let account = value("CLOUDFLARE_ACCOUNT_ID").filter(|v| !v.is_empty())?;
    let gateway_id = if gateway {
        Some(value("CLOUDFLARE_GATEWAY_ID").filter(|v| !v.is_empty())?)
    } else {
        None
    };
    let mut out_env = vec![("CLOUDFLARE_ACCOUNT_ID", account.as_str())];
    if let Some(id) = gateway_id.as_deref() {
        out_env.push(("CLOUDFLARE_GATEWAY_ID", id));
    }
    let env = Some(env_object(&out_env));
    Some(if gateway {
        Resolved {
            api_key: None,
            headers: Some(vec![
                (
                    "cf-aig-authorization".into(),
                    Some(format!("Bearer {api_key}")),
                ),
                ("Authorization".into(), None),
                ("x-api-key".into(), None),
            ]),
            env,
        }
    } else {
        Resolved {
            api_key: Some(api_key),
            headers: None,
            env,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_provider_has_an_auth_entry() {
        for p in crate::catalog::catalog().providers() {
            assert!(builtin_auth(p.id).is_some(), "{}", p.id);
        }
    }

    #[test]
    fn env_keys_resolve_in_order_and_ignore_blank_values() {
        let auth = builtin_auth("qwen-token-plan").and_then(|a| a.key);
        let env = Env::from_pairs([
            ("QWEN_TOKEN_PLAN_TEAM_API_KEY", "  "),
            ("QWEN_TOKEN_PLAN_API_KEY", "k2"),
        ]);
        let resolved = auth.and_then(|a| a.resolve(None, &env));
        assert_eq!(resolved.and_then(|r| r.api_key), Some("k2".to_string()));
    }

    #[test]
    fn anthropic_auth_token_becomes_a_bearer_header() {
        let env = Env::from_pairs([("ANTHROPIC_AUTH_TOKEN", "t"), ("ANTHROPIC_API_KEY", "k")]);
        assert_eq!(
            KeyAuth::Anthropic.resolve(None, &env),
            Some(Resolved {
                headers: Some(vec![("Authorization".into(), Some("Bearer t".into()))]),
                ..Resolved::default()
            })
        );
    }

    #[test]
    fn stored_key_wins_over_environment() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "env")]);
        let cred = KeyCredential {
            key: Some("stored".into()),
            env: None,
        };
        let r = KeyAuth::Env(&["OPENAI_API_KEY"]).resolve(Some(&cred), &env);
        assert_eq!(r.and_then(|r| r.api_key), Some("stored".into()));
    }

    #[test]
    fn cloudflare_gateway_needs_account_and_gateway() {
        let env = Env::from_pairs([("CLOUDFLARE_API_KEY", "k"), ("CLOUDFLARE_ACCOUNT_ID", "a")]);
        let gw = KeyAuth::Cloudflare { gateway: true };
        assert_eq!(gw.resolve(None, &env), None);
        let workers = KeyAuth::Cloudflare { gateway: false }.resolve(None, &env);
        assert_eq!(workers.and_then(|r| r.api_key), Some("k".into()));
    }
}
