//! The AWS SDK's credential sources that ask a server, in its default chain's order after the
//! shared files: IAM Identity Center (SSO) with a token from `aws sso login`'s cache, a web
//! identity token traded at STS (`AssumeRoleWithWebIdentity`), the ECS/EKS container endpoint,
//! and the EC2 instance metadata service (IMDSv2, else v1).
//!
//! Every endpoint is overridable as the SDK allows: `AWS_ENDPOINT_URL_SSO`/`AWS_ENDPOINT_URL_STS`
//! (or `AWS_ENDPOINT_URL`), `AWS_CONTAINER_CREDENTIALS_FULL_URI`, `AWS_EC2_METADATA_SERVICE_ENDPOINT`;
//! the tests point them at 127.0.0.1.

use super::sigv4::Credentials;
use crate::stream::StreamOptions;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// The SDK gives the container and instance endpoints one second.
const METADATA_TIMEOUT: Duration = Duration::from_secs(1);
const STS_TIMEOUT: Duration = Duration::from_secs(30);
const ECS_HOST: &str = "http://169.254.170.2";
const IMDS_HOST: &str = "http://169.254.169.254";
/// The SDK's text for an SSO token that is missing or past its expiry.
pub const SSO_EXPIRED: &str = "The SSO session associated with this profile has expired or is otherwise invalid. To refresh this SSO session run aws sso login with the corresponding profile.";

fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())
}

fn keys(id: Option<&str>, secret: Option<&str>, token: Option<&str>) -> Option<Credentials> {
    Some(Credentials {
        access_key_id: id.filter(|s| !s.is_empty())?.to_string(),
        secret_access_key: secret.filter(|s| !s.is_empty())?.to_string(),
        session_token: token.filter(|s| !s.is_empty()).map(str::to_string),
    })
}

/// A JSON answer's body (`null` when it is not JSON).
async fn json_body(resp: reqwest::Response) -> Value {
    let bytes = resp.bytes().await.unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// `AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`.
fn endpoint_override(options: &StreamOptions, service: &str) -> Option<String> {
    options
        .env_value(&format!("AWS_ENDPOINT_URL_{service}"))
        .or_else(|| options.env_value("AWS_ENDPOINT_URL"))
        .map(|u| u.trim_end_matches('/').to_string())
}

/// A profile that signs in through IAM Identity Center: `sso_account_id` and `sso_role_name`
/// with `sso_start_url` or `sso_session` (whose `[sso-session <name>]` section holds the region).
pub async fn sso(
    options: &StreamOptions,
    settings: &HashMap<String, String>,
    sso_session: &HashMap<String, String>,
) -> Option<Result<Credentials, String>> {
    let account = settings.get("sso_account_id")?;
    let role = settings.get("sso_role_name")?;
    let session_name = settings.get("sso_session");
    let start_url = settings.get("sso_start_url");
    let cache_key = session_name.or(start_url)?;
    let region = settings
        .get("sso_region")
        .or_else(|| sso_session.get("sso_region"))?;
    Some(sso_credentials(options, cache_key, region, account, role).await)
}

async fn sso_credentials(
    options: &StreamOptions,
    cache_key: &str,
    region: &str,
    account: &str,
    role: &str,
) -> Result<Credentials, String> {
    let home = options.env_value("HOME").unwrap_or_default();
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        cache_key.as_bytes(),
    );
    let name: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let path = format!("{home}/.aws/sso/cache/{name}.json");
    let token = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| pi_js::parse::parse_js_json(&t).ok())
        .ok_or_else(|| SSO_EXPIRED.to_string())?;
    let expires = token["expiresAt"]
        .as_str()
        .and_then(pi_js::time::parse_iso_ms)
        .ok_or_else(|| SSO_EXPIRED.to_string())?;
    let access = token["accessToken"]
        .as_str()
        .filter(|_| expires > pi_js::now_ms() as i64)
        .ok_or_else(|| SSO_EXPIRED.to_string())?;
    let base = endpoint_override(options, "SSO")
        .unwrap_or_else(|| format!("https://portal.sso.{region}.amazonaws.com"));
    let url = format!(
        "{base}/federation/credentials?account_id={}&role_name={}",
        crate::google_vertex::adc::encode(account),
        crate::google_vertex::adc::encode(role)
    );
    let resp = client(STS_TIMEOUT)?
        .get(url)
        .header("x-amz-sso_bearer_token", access)
        .send()
        .await
        .map_err(|e| format!("SSO GetRoleCredentials failed: {e}"))?;
    let status = resp.status().as_u16();
    let body: Value = json_body(resp).await;
    if status != 200 {
        let message = body["message"].as_str().unwrap_or("Unknown error");
        return Err(format!(
            "SSO GetRoleCredentials failed ({status}): {message}"
        ));
    }
    let c = &body["roleCredentials"];
    keys(
        c["accessKeyId"].as_str(),
        c["secretAccessKey"].as_str(),
        c["sessionToken"].as_str(),
    )
    .ok_or_else(|| "SSO returned no role credentials".to_string())
}

/// The text between `<tag>` and `</tag>` in an STS answer.
fn xml_field<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{tag}>"))? + tag.len() + 2;
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(&xml[start..end])
}

/// XML's five predefined entities.
fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` (or a profile's `web_identity_token_file`
/// and `role_arn`): the token traded at STS for the role's temporary keys.
pub async fn web_identity(
    options: &StreamOptions,
    settings: &HashMap<String, String>,
    region: &str,
) -> Option<Result<Credentials, String>> {
    let (file, role, session) = match (
        options.env_value("AWS_WEB_IDENTITY_TOKEN_FILE"),
        options.env_value("AWS_ROLE_ARN"),
    ) {
        (Some(f), Some(r)) => (f, r, options.env_value("AWS_ROLE_SESSION_NAME")),
        _ => (
            settings.get("web_identity_token_file")?.clone(),
            settings.get("role_arn")?.clone(),
            settings.get("role_session_name").cloned(),
        ),
    };
    let session = session.unwrap_or_else(|| format!("aws-sdk-js-session-{}", pi_js::now_ms()));
    Some(assume_role_with_web_identity(options, &file, &role, &session, region).await)
}

async fn assume_role_with_web_identity(
    options: &StreamOptions,
    file: &str,
    role: &str,
    session: &str,
    region: &str,
) -> Result<Credentials, String> {
    let token = std::fs::read_to_string(file)
        .map_err(|e| format!("Could not read web identity token file {file}: {e}"))?;
    let base = endpoint_override(options, "STS")
        .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
    let enc = crate::google_vertex::adc::encode;
    let body = format!(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
        enc(role),
        enc(session),
        enc(token.trim())
    );
    let resp = client(STS_TIMEOUT)?
        .post(format!("{base}/"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("AssumeRoleWithWebIdentity failed: {e}"))?;
    let status = resp.status().as_u16();
    let xml = resp.text().await.unwrap_or_default();
    if status != 200 {
        let message = xml_field(&xml, "Message").map(xml_unescape);
        return Err(
            message.unwrap_or_else(|| format!("AssumeRoleWithWebIdentity failed: {status}"))
        );
    }
    let field = |t: &str| xml_field(&xml, t).map(xml_unescape);
    let (id, secret, token) = (
        field("AccessKeyId"),
        field("SecretAccessKey"),
        field("SessionToken"),
    );
    keys(id.as_deref(), secret.as_deref(), token.as_deref())
        .ok_or_else(|| "AssumeRoleWithWebIdentity returned no credentials".to_string())
}

/// `{AccessKeyId, SecretAccessKey, Token}` of the container and instance endpoints.
fn metadata_keys(v: &Value) -> Option<Credentials> {
    keys(
        v["AccessKeyId"].as_str(),
        v["SecretAccessKey"].as_str(),
        v["Token"].as_str(),
    )
}

/// The ECS/EKS container endpoint: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` on ECS's address,
/// else `AWS_CONTAINER_CREDENTIALS_FULL_URI`, with `AWS_CONTAINER_AUTHORIZATION_TOKEN` (or the
/// file `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`) as its `Authorization`.
pub async fn container(options: &StreamOptions) -> Option<Result<Credentials, String>> {
    let url = match options.env_value("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        Some(rel) => format!("{ECS_HOST}{rel}"),
        None => options.env_value("AWS_CONTAINER_CREDENTIALS_FULL_URI")?,
    };
    let auth = match options.env_value("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(f) => std::fs::read_to_string(f)
            .ok()
            .map(|t| t.trim().to_string()),
        None => options.env_value("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    };
    Some(
        async {
            let mut req = client(METADATA_TIMEOUT)?.get(url);
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            let resp = req.send().await.map_err(|e| {
                format!("Could not load credentials from the container endpoint: {e}")
            })?;
            let status = resp.status().as_u16();
            let body: Value = json_body(resp).await;
            if status != 200 {
                return Err(format!("Container credentials request failed: {status}"));
            }
            metadata_keys(&body)
                .ok_or_else(|| "Container endpoint returned no credentials".to_string())
        }
        .await,
    )
}

/// The instance metadata service (unless `AWS_EC2_METADATA_DISABLED=true`): a session token
/// (IMDSv2; without one the requests go unauthenticated, as v1), the instance's role name, then
/// its keys. `None` when the service does not answer: the chain then has nothing.
pub async fn instance(options: &StreamOptions) -> Option<Result<Credentials, String>> {
    if options
        .env_value("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return None;
    }
    let base = options
        .env_value("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or_else(|| IMDS_HOST.into())
        .trim_end_matches('/')
        .to_string();
    let http = client(METADATA_TIMEOUT).ok()?;
    let token = match http
        .put(format!("{base}/latest/api/token"))
        .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
        .send()
        .await
    {
        Ok(r) if r.status().is_success() => r.text().await.ok(),
        Ok(_) => None,
        // No metadata service here.
        Err(_) => return None,
    };
    let get = |path: String| {
        let mut req = http.get(format!("{base}{path}"));
        if let Some(t) = &token {
            req = req.header("x-aws-ec2-metadata-token", t.as_str());
        }
        req.send()
    };
    let prefix = "/latest/meta-data/iam/security-credentials/";
    let roles = match get(prefix.to_string()).await {
        Ok(r) if r.status().is_success() => r.text().await.unwrap_or_default(),
        _ => return None,
    };
    let role = roles
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?
        .to_string();
    Some(
        async {
            let resp = get(format!("{prefix}{role}"))
                .await
                .map_err(|e| format!("Instance metadata request failed: {e}"))?;
            let body: Value = json_body(resp).await;
            metadata_keys(&body)
                .ok_or_else(|| "Instance metadata returned no credentials".to_string())
        }
        .await,
    )
}
