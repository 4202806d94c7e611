//! Finding a server's authorization server (the MCP authorization spec, as Pi's `pi-mcp` does
//! it): the `WWW-Authenticate` challenge of a 401, protected resource metadata (RFC 9728) under
//! `/.well-known/oauth-protected-resource`, then authorization server metadata (RFC 8414, or
//! OpenID discovery) with the issuer checked, and the `resource` parameter to send (RFC 8707).
//!
//! Metadata is kept as JSON (what the server sent, checked field by field), since it is stored
//! as such in `mcp-auth.json`.

use super::FlowError;
use super::http::{OAuthHttp, Response};
use crate::jsonrpc::LATEST_PROTOCOL_VERSION;
use reqwest::Url;
use serde_json::{Map, Value};

/// What a `WWW-Authenticate` bearer challenge asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata_url: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

fn field(header: &str, name: &str) -> Option<String> {
    let pattern = format!(r#"(?i)(?:^|[,\s]){name}=(?:"([^"]*)"|([^\s,]+))"#);
    let re = regex::Regex::new(&pattern).ok()?;
    let caps = re.captures(header)?;
    // An empty value (`scope=""`) carries no information.
    caps.get(1)
        .or_else(|| caps.get(2))
        .map(|m| m.as_str().to_string())
        .filter(|v| !v.is_empty())
}

/// The bearer (or DPoP) challenge of a `WWW-Authenticate` header; empty for other schemes.
pub fn parse_www_authenticate(header: Option<&str>) -> Challenge {
    let Some(header) = header else {
        return Challenge::default();
    };
    let scheme = header
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if scheme != "bearer" && scheme != "dpop" {
        return Challenge::default();
    }
    Challenge {
        resource_metadata_url: field(header, "resource_metadata").filter(|u| Url::parse(u).is_ok()),
        scope: field(header, "scope"),
        error: field(header, "error"),
        error_description: field(header, "error_description"),
    }
}

/// `null` and `""` count as absent: servers send them for fields they have no value for.
fn absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null)) || v.and_then(Value::as_str) == Some("")
}

fn invalid(name: &str) -> FlowError {
    FlowError::Other(format!("Invalid {name}"))
}

/// Only `http:` and `https:` URLs: the authorization URL is opened with the platform's URL
/// handler, which would launch local programs for `file:` or custom schemes.
fn safe_url(v: Option<&Value>, name: &str) -> Result<String, FlowError> {
    let text = v
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(name))?;
    match Url::parse(text) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(text.to_string()),
        _ => Err(invalid(name)),
    }
}

fn strings(v: Option<&Value>, name: &str) -> Result<Option<Vec<String>>, FlowError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => Ok(Some(
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
        )),
        _ => Err(invalid(name)),
    }
}

/// Protected resource metadata, checked.
pub fn parse_resource_metadata(value: &Value) -> Result<Map<String, Value>, FlowError> {
    let Value::Object(input) = value else {
        return Err(invalid("OAuth protected resource metadata"));
    };
    let mut out = input.clone();
    safe_url(
        input.get("resource"),
        "OAuth protected resource metadata resource",
    )?;
    match strings(input.get("authorization_servers"), "authorization_servers")? {
        Some(list) => {
            for url in &list {
                safe_url(
                    Some(&Value::String(url.clone())),
                    "authorization server URL",
                )?;
            }
        }
        None => {
            out.shift_remove("authorization_servers");
        }
    }
    if strings(input.get("scopes_supported"), "scopes_supported")?.is_none() {
        out.shift_remove("scopes_supported");
    }
    Ok(out)
}

/// Authorization server metadata, checked; optional URLs that are empty are dropped.
pub fn parse_server_metadata(value: &Value) -> Result<Map<String, Value>, FlowError> {
    let Value::Object(input) = value else {
        return Err(invalid("authorization server metadata"));
    };
    let mut out = input.clone();
    if strings(
        input.get("response_types_supported"),
        "response_types_supported",
    )?
    .is_none()
    {
        return Err(invalid("response_types_supported"));
    }
    safe_url(input.get("issuer"), "authorization server issuer")?;
    safe_url(
        input.get("authorization_endpoint"),
        "authorization endpoint",
    )?;
    safe_url(input.get("token_endpoint"), "token endpoint")?;
    if absent(input.get("registration_endpoint")) {
        out.shift_remove("registration_endpoint");
    } else {
        safe_url(input.get("registration_endpoint"), "registration endpoint")?;
    }
    for list in [
        "scopes_supported",
        "grant_types_supported",
        "token_endpoint_auth_methods_supported",
        "code_challenge_methods_supported",
    ] {
        if strings(input.get(list), list)?.is_none() {
            out.shift_remove(list);
        }
    }
    for flag in [
        "client_id_metadata_document_supported",
        "authorization_response_iss_parameter_supported",
    ] {
        if input.get(flag).is_some_and(|v| !v.is_boolean()) {
            out.shift_remove(flag);
        }
    }
    Ok(out)
}

/// Path suffix for `/.well-known/<kind><path>`; empty for the root path.
fn path_suffix(path: &str) -> &str {
    path.strip_suffix('/').unwrap_or(path)
}

/// 4xx and 502 mean "not here": discovery tries the next candidate.
fn is_miss(status: u16) -> bool {
    (400..500).contains(&status) || status == 502
}

async fn fetch_metadata(http: &OAuthHttp, url: &str) -> Result<Response, FlowError> {
    http.get_json(url, &[("MCP-Protocol-Version", LATEST_PROTOCOL_VERSION)])
        .await
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// RFC 9728 metadata of the server at `server_url` (or at the challenge's URL).
pub async fn discover_resource_metadata(
    http: &OAuthHttp,
    server_url: &str,
    resource_metadata_url: Option<&str>,
) -> Result<Map<String, Value>, FlowError> {
    let server = Url::parse(server_url).map_err(|e| FlowError::Other(e.to_string()))?;
    let first = match resource_metadata_url {
        Some(u) => u.to_string(),
        None => format!(
            "{}/.well-known/oauth-protected-resource{}",
            origin(&server),
            path_suffix(server.path())
        ),
    };
    let mut response = fetch_metadata(http, &first).await?;
    if resource_metadata_url.is_none() && server.path() != "/" && is_miss(response.status) {
        let root = format!("{}/.well-known/oauth-protected-resource", origin(&server));
        response = fetch_metadata(http, &root).await?;
    }
    if !response.ok() {
        return Err(FlowError::Other(format!(
            "HTTP {} loading OAuth protected resource metadata",
            response.status
        )));
    }
    parse_resource_metadata(&response.json()?)
}

/// The metadata URLs to try for an issuer, in order.
fn server_discovery_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = Url::parse(issuer) else {
        return Vec::new();
    };
    let path = path_suffix(url.path());
    let o = origin(&url);
    let mut urls = vec![
        format!("{o}/.well-known/oauth-authorization-server{path}"),
        format!("{o}/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        urls.push(format!("{o}{path}/.well-known/openid-configuration"));
    }
    urls
}

/// RFC 8414 (or OpenID) metadata of an authorization server, with its issuer checked; `None`
/// when no candidate URL has any.
pub async fn discover_server_metadata(
    http: &OAuthHttp,
    issuer: &str,
) -> Result<Option<Map<String, Value>>, FlowError> {
    for url in server_discovery_urls(issuer) {
        let response = fetch_metadata(http, &url).await?;
        if !response.ok() {
            if is_miss(response.status) {
                continue;
            }
            return Err(FlowError::Other(format!(
                "HTTP {} loading authorization server metadata from {url}",
                response.status
            )));
        }
        let metadata = parse_server_metadata(&response.json()?)?;
        // `new URL()` gives bare origins a trailing slash: compare without one on either side.
        let trim = |s: &str| s.strip_suffix('/').unwrap_or(s).to_string();
        let found = metadata.get("issuer").and_then(Value::as_str).unwrap_or("");
        if trim(found) != trim(issuer) {
            return Err(FlowError::IssuerMismatch {
                expected: Some(issuer.to_string()),
                received: Some(found.to_string()),
            });
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// What discovery found (stored as `discovery` in the server's state).
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    pub authorization_server_url: String,
    pub server_metadata: Option<Map<String, Value>>,
    pub resource_metadata: Option<Map<String, Value>>,
}

impl Discovered {
    pub fn to_json(&self, resource_metadata_url: Option<&str>) -> Value {
        let mut out = Map::new();
        out.insert(
            "authorizationServerUrl".into(),
            Value::String(self.authorization_server_url.clone()),
        );
        if let Some(m) = &self.server_metadata {
            out.insert(
                "authorizationServerMetadata".into(),
                Value::Object(m.clone()),
            );
        }
        if let Some(m) = &self.resource_metadata {
            out.insert("resourceMetadata".into(), Value::Object(m.clone()));
        }
        if let Some(u) = resource_metadata_url {
            out.insert("resourceMetadataUrl".into(), Value::String(u.to_string()));
        }
        Value::Object(out)
    }

    pub fn from_json(value: &Value) -> Option<Discovered> {
        let url = value.get("authorizationServerUrl")?.as_str()?;
        let object = |k: &str| value.get(k).and_then(Value::as_object).cloned();
        Some(Discovered {
            authorization_server_url: url.to_string(),
            server_metadata: object("authorizationServerMetadata"),
            resource_metadata: object("resourceMetadata"),
        })
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.server_metadata.as_ref()?.get(key)
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta(key).and_then(Value::as_str)
    }

    pub fn meta_list(&self, key: &str) -> Option<Vec<String>> {
        self.meta(key).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
    }
}

/// Protected resource metadata, then the authorization server it names (or the server's own
/// origin) and that server's metadata. A network failure of the first step fails discovery;
/// other failures there only mean the server has no resource metadata.
pub async fn discover(
    http: &OAuthHttp,
    server_url: &str,
    resource_metadata_url: Option<&str>,
    server_metadata_url: Option<&str>,
) -> Result<Discovered, FlowError> {
    let resource_metadata =
        match discover_resource_metadata(http, server_url, resource_metadata_url).await {
            Ok(m) => Some(m),
            Err(FlowError::Network(e)) => return Err(FlowError::Network(e)),
            Err(_) => None,
        };
    if let Some(url) = server_metadata_url {
        let response = fetch_metadata(http, url).await?;
        if !response.ok() {
            return Err(FlowError::Other(format!(
                "HTTP {} loading authorization server metadata from {url}",
                response.status
            )));
        }
        let metadata = parse_server_metadata(&response.json()?)?;
        return Ok(Discovered {
            authorization_server_url: metadata
                .get("issuer")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            server_metadata: Some(metadata),
            resource_metadata,
        });
    }
    let authorization_server_url = resource_metadata
        .as_ref()
        .and_then(|m| m.get("authorization_servers"))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            Url::parse(server_url)
                .and_then(|u| u.join("/"))
                .map(|u| u.to_string())
                .unwrap_or_default()
        });
    let server_metadata = discover_server_metadata(http, &authorization_server_url).await?;
    Ok(Discovered {
        authorization_server_url,
        server_metadata,
        resource_metadata,
    })
}

/// The `resource` to request (RFC 8707): the metadata's resource when the server URL lies
/// under it; an error when it does not.
pub fn select_resource(
    server_url: &str,
    metadata: Option<&Map<String, Value>>,
) -> Result<Option<String>, FlowError> {
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    let resource = metadata
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut requested = Url::parse(server_url).map_err(|e| FlowError::Other(e.to_string()))?;
    requested.set_fragment(None);
    let configured = Url::parse(resource).map_err(|e| FlowError::Other(e.to_string()))?;
    let mismatch = || {
        FlowError::Other(format!(
            "Protected resource {resource} does not match MCP server {requested}"
        ))
    };
    if requested.origin() != configured.origin() {
        return Err(mismatch());
    }
    let with_slash = |p: &str| {
        if p.ends_with('/') {
            p.to_string()
        } else {
            format!("{p}/")
        }
    };
    if !with_slash(requested.path()).starts_with(&with_slash(configured.path())) {
        return Err(mismatch());
    }
    Ok(Some(resource.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_name_their_metadata_scope_and_error() {
        let c = parse_www_authenticate(Some(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp""#,
        ));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata_url.as_deref(),
            Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            parse_www_authenticate(Some("Basic realm=x")),
            Challenge::default()
        );
        assert_eq!(
            parse_www_authenticate(Some("Bearer scope=\"\"")).scope,
            None
        );
        assert_eq!(
            server_discovery_urls("https://auth.test/tenant/"),
            [
                "https://auth.test/.well-known/oauth-authorization-server/tenant",
                "https://auth.test/.well-known/openid-configuration/tenant",
                "https://auth.test/tenant/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_resource_must_contain_the_server_url() {
        let meta = |r: &str| {
            let mut m = Map::new();
            m.insert("resource".into(), Value::String(r.into()));
            m
        };
        assert_eq!(
            select_resource("http://h:1/mcp", Some(&meta("http://h:1/"))).ok(),
            Some(Some("http://h:1/".to_string()))
        );
        assert_eq!(
            select_resource("http://h:1/mcp", Some(&meta("http://h:1/other")))
                .err()
                .map(|e| e.to_string()),
            Some(
                "Protected resource http://h:1/other does not match MCP server http://h:1/mcp"
                    .into()
            )
        );
    }
}
