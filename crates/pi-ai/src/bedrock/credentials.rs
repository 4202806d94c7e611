//! Where a Bedrock request gets its identity and region, in Pi's order: a bearer token (the
//! request's key or `AWS_BEARER_TOKEN_BEDROCK`), else SigV4 keys from the environment (unless
//! the credential names a profile), else the profile's keys in the shared files
//! (`~/.aws/credentials`, `~/.aws/config`, or `AWS_SHARED_CREDENTIALS_FILE`/`AWS_CONFIG_FILE`),
//! including a profile's `credential_process`; then the sources that ask a server (SSO, web
//! identity, the container endpoint, instance metadata: `remote_credentials.rs`).

use super::sigv4::Credentials;
use crate::stream::StreamOptions;
use std::collections::HashMap;

/// How the request authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Bearer(String),
    SigV4(Credentials),
}

/// The AWS SDK's text when no provider in its chain has credentials.
pub const NO_CREDENTIALS: &str = "Could not load credentials from any providers";

/// A profile's settings from the shared files (credentials file first, then config).
pub fn profile_settings(options: &StreamOptions, profile: &str) -> HashMap<String, String> {
    let home = std::env::var("HOME").unwrap_or_default();
    let creds_file = options
        .env_value("AWS_SHARED_CREDENTIALS_FILE")
        .unwrap_or_else(|| format!("{home}/.aws/credentials"));
    let config_file = options
        .env_value("AWS_CONFIG_FILE")
        .unwrap_or_else(|| format!("{home}/.aws/config"));
    let mut out = HashMap::new();
    if let Ok(text) = std::fs::read_to_string(&config_file) {
        let section = if profile == "default" {
            "default".to_string()
        } else {
            format!("profile {profile}")
        };
        out.extend(ini_section(&text, &section));
    }
    if let Ok(text) = std::fs::read_to_string(&creds_file) {
        out.extend(ini_section(&text, profile));
    }
    out
}

/// `key = value` lines of `[name]` (names and keys compared trimmed, keys lowercase).
fn ini_section(text: &str, name: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = h.trim() == name;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            out.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

/// The profile a request uses: the credential's own `AWS_PROFILE`, else the environment's.
fn profile_name(options: &StreamOptions) -> (Option<String>, bool) {
    if let Some(p) = options.env.get("AWS_PROFILE").filter(|p| !p.is_empty()) {
        return (Some(p.clone()), true);
    }
    (options.env_value("AWS_PROFILE"), false)
}

/// The request's authentication, or the SDK's error text.
pub async fn resolve(options: &StreamOptions) -> Result<Auth, String> {
    let skip = options.env_value("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1");
    if skip {
        // Proxies that need no authentication still get a well-formed signature.
        return Ok(Auth::SigV4(Credentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        }));
    }
    if let Some(token) = options
        .api_key
        .clone()
        .filter(|k| !k.is_empty())
        .or_else(|| options.env_value("AWS_BEARER_TOKEN_BEDROCK"))
    {
        return Ok(Auth::Bearer(token));
    }
    let (profile, explicit) = profile_name(options);
    if !explicit
        && let (Some(id), Some(secret)) = (
            options.env_value("AWS_ACCESS_KEY_ID"),
            options.env_value("AWS_SECRET_ACCESS_KEY"),
        )
    {
        return Ok(Auth::SigV4(Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: options.env_value("AWS_SESSION_TOKEN"),
        }));
    }
    let profile = profile.unwrap_or_else(|| "default".into());
    let settings = profile_settings(options, &profile);
    // The SDK's chain: SSO, the shared files, `credential_process`, web identity, then the
    // container endpoint and instance metadata.
    let sso_session = settings
        .get("sso_session")
        .map(|name| config_section(options, &format!("sso-session {name}")))
        .unwrap_or_default();
    if let Some(result) = super::remote_credentials::sso(options, &settings, &sso_session).await {
        return result.map(Auth::SigV4);
    }
    if let (Some(id), Some(secret)) = (
        settings.get("aws_access_key_id"),
        settings.get("aws_secret_access_key"),
    ) {
        return Ok(Auth::SigV4(Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: settings.get("aws_session_token").cloned(),
        }));
    }
    if let Some(cmd) = settings.get("credential_process") {
        return credential_process(cmd).await;
    }
    let region = configured_region(options)
        .or_else(|| settings.get("region").cloned())
        .unwrap_or_else(|| "us-east-1".into());
    let remote = match super::remote_credentials::web_identity(options, &settings, &region).await {
        Some(r) => Some(r),
        None => match super::remote_credentials::container(options).await {
            Some(r) => Some(r),
            None => super::remote_credentials::instance(options).await,
        },
    };
    match remote {
        Some(result) => result.map(Auth::SigV4),
        None => Err(NO_CREDENTIALS.into()),
    }
}

/// A section of the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`), such as
/// `[sso-session <name>]`.
fn config_section(options: &StreamOptions, name: &str) -> HashMap<String, String> {
    let home = std::env::var("HOME").unwrap_or_default();
    let file = options
        .env_value("AWS_CONFIG_FILE")
        .unwrap_or_else(|| format!("{home}/.aws/config"));
    std::fs::read_to_string(file)
        .map(|text| ini_section(&text, name))
        .unwrap_or_default()
}

/// Runs a profile's `credential_process` and reads its JSON (version 1).
async fn credential_process(cmd: &str) -> Result<Auth, String> {
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|e| format!("credential_process failed: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "credential_process exited with {}",
            out.status.code().unwrap_or(-1)
        ));
    }
    let v = pi_js::parse::parse_js_json(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| format!("credential_process returned invalid JSON: {e}"))?;
    match (v["AccessKeyId"].as_str(), v["SecretAccessKey"].as_str()) {
        (Some(id), Some(secret)) => Ok(Auth::SigV4(Credentials {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
            session_token: v["SessionToken"].as_str().map(String::from),
        })),
        _ => Err("credential_process returned no credentials".into()),
    }
}

/// The standard runtime endpoint's region (`bedrock-runtime[-fips].<region>.amazonaws.com`).
pub fn endpoint_region(base_url: &str) -> Option<String> {
    let rest = base_url.split_once("://")?.1;
    let host = rest.split(['/', ':', '?']).next()?.to_ascii_lowercase();
    let host = host
        .strip_suffix(".amazonaws.com")
        .or_else(|| host.strip_suffix(".amazonaws.com.cn"))?;
    let region = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    (!region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    .then(|| region.to_string())
}

/// The configured region: `AWS_REGION`, then `AWS_DEFAULT_REGION`.
pub fn configured_region(options: &StreamOptions) -> Option<String> {
    options
        .env_value("AWS_REGION")
        .or_else(|| options.env_value("AWS_DEFAULT_REGION"))
}

/// Where the request goes: the model's URL unless it is a standard endpoint and a region or
/// profile is configured (then the region's standard endpoint), and the region to sign for.
pub fn endpoint_and_region(
    model_id: &str,
    base_url: &str,
    options: &StreamOptions,
) -> (String, String) {
    let configured = configured_region(options);
    let ambient_profile = std::env::var("AWS_PROFILE").is_ok_and(|p| !p.is_empty());
    let standard = endpoint_region(base_url);
    let explicit = standard.is_none() || (configured.is_none() && !ambient_profile);
    let arn_region = model_id
        .strip_prefix("arn:aws")
        .and_then(|r| r.split_once(":bedrock:"))
        .filter(|(partition, _)| {
            partition.is_empty() || partition.strip_prefix('-').is_some_and(|p| !p.is_empty())
        })
        .and_then(|(_, rest)| rest.split(':').next())
        .filter(|r| !r.is_empty())
        .map(String::from);
    let region = arn_region
        .or(configured)
        .or_else(|| standard.clone().filter(|_| explicit))
        .or_else(|| {
            let (profile, _) = profile_name(options);
            profile_settings(options, profile.as_deref().unwrap_or("default"))
                .get("region")
                .cloned()
        })
        .unwrap_or_else(|| "us-east-1".into());
    let endpoint = if explicit && !base_url.is_empty() {
        base_url.trim_end_matches('/').to_string()
    } else {
        format!("https://bedrock-runtime.{region}.amazonaws.com")
    };
    (endpoint, region)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(env: &[(&str, &str)]) -> StreamOptions {
        StreamOptions {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..StreamOptions::default()
        }
    }

    #[test]
    fn standard_endpoints_name_their_region() {
        assert_eq!(
            endpoint_region("https://bedrock-runtime.eu-west-1.amazonaws.com").as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(
            endpoint_region("https://bedrock-runtime-fips.us-east-1.amazonaws.com/").as_deref(),
            Some("us-east-1")
        );
        assert_eq!(endpoint_region("http://127.0.0.1:9"), None);
    }

    #[test]
    fn region_rules() {
        let std_url = "https://bedrock-runtime.us-east-1.amazonaws.com";
        if std::env::var("AWS_PROFILE").is_err() {
            let (e, r) = endpoint_and_region("m", std_url, &opts(&[("AWS_REGION", "eu-west-3")]));
            assert_eq!(r, "eu-west-3");
            assert_eq!(e, "https://bedrock-runtime.eu-west-3.amazonaws.com");
            let (e, r) = endpoint_and_region(
                "arn:aws:bedrock:ap-south-1:123:inference-profile/x",
                "http://127.0.0.1:9",
                &opts(&[("AWS_REGION", "eu-west-3")]),
            );
            assert_eq!(
                (e.as_str(), r.as_str()),
                ("http://127.0.0.1:9", "ap-south-1")
            );
        }
    }

    #[tokio::test]
    async fn profiles_come_from_the_shared_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &creds,
            "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = s1\n[work]\naws_access_key_id=AKWORK\naws_secret_access_key=s2\naws_session_token=tok\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&config, "[profile work]\nregion = eu-north-1\n[profile proc]\ncredential_process = printf '{\"Version\":1,\"AccessKeyId\":\"AKPROC\",\"SecretAccessKey\":\"s3\"}'\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let c = creds.to_str().unwrap_or("");
        let f = config.to_str().unwrap_or("");
        let base = [("AWS_SHARED_CREDENTIALS_FILE", c), ("AWS_CONFIG_FILE", f)];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut e = base.to_vec();
            e.extend_from_slice(extra);
            opts(&e)
        };
        let work = with(&[
            ("AWS_PROFILE", "work"),
            ("AWS_ACCESS_KEY_ID", "ENVKEY"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
        ]);
        assert_eq!(
            resolve(&work).await,
            Ok(Auth::SigV4(Credentials {
                access_key_id: "AKWORK".into(),
                secret_access_key: "s2".into(),
                session_token: Some("tok".into()),
            })),
            "a profile named by the credential wins over environment keys"
        );
        assert_eq!(
            endpoint_and_region("m", "", &work).1,
            if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err()
            {
                "eu-north-1"
            } else {
                return;
            }
        );
        let proc_ = with(&[("AWS_PROFILE", "proc")]);
        match resolve(&proc_).await {
            Ok(Auth::SigV4(c)) => assert_eq!(c.access_key_id, "AKPROC"),
            other => panic!("{other:?}"),
        }
        let bearer = with(&[("AWS_BEARER_TOKEN_BEDROCK", "bt")]);
        assert_eq!(resolve(&bearer).await, Ok(Auth::Bearer("bt".into())));
    }
}
