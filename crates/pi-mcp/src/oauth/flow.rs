//! The authorization code flow with PKCE against one MCP server (Pi's `authorizeMcp`): discovery
//! (cached in the server's state), the client (pre-registered, pi's Client ID Metadata Document,
//! or dynamic client registration), then either the code exchange, a refresh, or the
//! authorization URL the user has to open. Rejected clients and grants are forgotten and the
//! flow runs once more.

use super::discovery::{self, Discovered};
use super::http::{OAuthHttp, form};
use super::store::ServerStore;
use super::{CLIENT_METADATA_BASE_URL, FlowError, Settings, documents_list_redirect, now_ms};
use base64::Engine as _;
use reqwest::Url;
use serde_json::{Map, Value, json};

/// How the flow ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Authorized,
    /// The user has to open this authorization URL (none when only a refresh was allowed).
    Redirect(Option<String>),
}

/// What one run of the flow is for.
#[derive(Debug, Clone, Default)]
pub struct FlowOptions {
    pub server_url: String,
    pub resource_metadata_url: Option<String>,
    pub server_metadata_url: Option<String>,
    pub scope: Option<String>,
    /// Exchange this code (second half of a sign-in).
    pub authorization_code: Option<String>,
    /// The redirect URI of the authorization request the code answers.
    pub authorization_redirect_url: Option<String>,
    pub iss: Option<String>,
    /// Refresh or give up; never register a client or prepare an authorization.
    pub refresh_only: bool,
    pub skip_refresh: bool,
}

/// The OAuth client of one server and redirect URI, with its state in the store (Pi's
/// `McpOAuthProvider` built by `createOAuthClientProvider`).
#[derive(Clone)]
pub struct Client {
    pub store: ServerStore,
    pub redirect_url: String,
    pub settings: Settings,
    pub http: OAuthHttp,
}

fn loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
}

/// Credentials only travel over https, or to a loopback address.
fn secure_endpoint(value: &str) -> Result<String, FlowError> {
    let url = Url::parse(value).map_err(|e| FlowError::Other(e.to_string()))?;
    if url.scheme() != "https" && !url.host_str().is_some_and(loopback) {
        return Err(FlowError::InsecureEndpoint(url.to_string()));
    }
    Ok(url.to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 12 characters identifying a server URL in callback paths (as Codex computes them).
pub fn callback_id(server_url: &str) -> String {
    let href = Url::parse(server_url).map_or_else(
        |_| server_url.to_string(),
        |mut u| {
            u.set_fragment(None);
            u.to_string()
        },
    );
    let digest = crate::naming::sha256(href.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..9])
}

/// `<path>/<callback id>`: the redirect path of a server-specific metadata document.
pub fn server_specific_path(path: &str, server_url: &str) -> String {
    format!(
        "{}/{}",
        path.strip_suffix('/').unwrap_or(path),
        callback_id(server_url)
    )
}

/// Whether the client may identify with a Client ID Metadata Document instead of registering.
pub fn offers_metadata_document(settings: &Settings, redirect_url: &str) -> bool {
    match settings.registration() {
        "auto" => {
            settings.client_id.is_none()
                && settings.client_name.is_none()
                && documents_list_redirect(Some(redirect_url))
        }
        other => other == "cimd",
    }
}

/// Redirect URIs a stored client was registered with.
pub fn registered_redirect_urls(client: Option<&Value>) -> Vec<String> {
    client
        .and_then(|c| c.get("redirect_uris"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn parse_tokens(value: &Value) -> Result<Map<String, Value>, FlowError> {
    let invalid = |n: &str| FlowError::Other(format!("Invalid {n}"));
    let Value::Object(input) = value else {
        return Err(invalid("OAuth token response"));
    };
    let absent = |k: &str| {
        matches!(input.get(k), None | Some(Value::Null)) || input.get(k) == Some(&json!(""))
    };
    let required = |k: &str| -> Result<Value, FlowError> {
        match input.get(k) {
            Some(Value::String(s)) if !s.is_empty() => Ok(Value::String(s.clone())),
            _ => Err(invalid(k)),
        }
    };
    let mut out = Map::new();
    out.insert("access_token".into(), required("access_token")?);
    out.insert("token_type".into(), required("token_type")?);
    if !absent("expires_in") {
        let n = match &input["expires_in"] {
            Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            Value::String(s) => pi_js::string_to_number(s),
            Value::Bool(b) => f64::from(u8::from(*b)),
            _ => f64::NAN,
        };
        if !n.is_finite() {
            return Err(invalid("expires_in"));
        }
        out.insert("expires_in".into(), pi_js::json::js_number_value(n));
    }
    for k in ["scope", "refresh_token", "id_token"] {
        if !absent(k) {
            out.insert(k.into(), required(k)?);
        }
    }
    Ok(out)
}

fn parse_client(value: &Value) -> Result<Map<String, Value>, FlowError> {
    let invalid = |n: &str| FlowError::Other(format!("Invalid {n}"));
    let Value::Object(input) = value else {
        return Err(invalid("OAuth client registration response"));
    };
    if input
        .get("client_id")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(invalid("client_id"));
    }
    let mut out = input.clone();
    if matches!(out.get("client_secret"), Some(Value::Null))
        || out.get("client_secret") == Some(&json!(""))
    {
        out.shift_remove("client_secret");
    }
    for k in ["client_id_issued_at", "client_secret_expires_at"] {
        if out.get(k).is_some_and(|v| !v.is_number()) {
            out.shift_remove(k);
        }
    }
    match out.get("redirect_uris") {
        None | Some(Value::Null) => {
            out.insert("redirect_uris".into(), json!([]));
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(_) => return Err(invalid("redirect_uris")),
    }
    Ok(out)
}

/// How the client authenticates at the token endpoint.
fn client_auth_method(client: &Map<String, Value>, supported: &[String]) -> &'static str {
    let secret = client
        .get("client_secret")
        .and_then(Value::as_str)
        .is_some();
    let hinted = client
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    for m in ["client_secret_basic", "client_secret_post", "none"] {
        if hinted == Some(m) && (supported.is_empty() || supported.iter().any(|s| s == m)) {
            return m;
        }
    }
    let has = |m: &str| supported.iter().any(|s| s == m);
    if supported.is_empty() {
        return if secret {
            "client_secret_basic"
        } else {
            "none"
        };
    }
    if secret && has("client_secret_basic") {
        return "client_secret_basic";
    }
    if secret && has("client_secret_post") {
        return "client_secret_post";
    }
    if has("none") {
        return "none";
    }
    if secret { "client_secret_post" } else { "none" }
}

/// The OpenID `application_type` for the redirect URIs: loopback and custom schemes are native.
fn application_type(redirect_uris: &[String]) -> &'static str {
    let native = redirect_uris.iter().any(|u| {
        Url::parse(u).is_ok_and(|url| {
            !matches!(url.scheme(), "http" | "https") || url.host_str().is_some_and(loopback)
        })
    });
    if native { "native" } else { "web" }
}

/// Scopes for a step-up: the challenged ones plus those granted so far.
pub fn step_up_scope(granted: Option<&str>, challenged: Option<&str>) -> Option<String> {
    let challenged = challenged?;
    Some(merge_scopes(&[granted, Some(challenged)]).unwrap_or_default())
}

/// Every scope of the lists, each once; `None` when there are none.
pub fn merge_scopes(scopes: &[Option<&str>]) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in scopes.iter().flatten() {
        for word in s.split_whitespace() {
            if !out.contains(&word) {
                out.push(word);
            }
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

impl Client {
    fn client_name(&self) -> String {
        self.settings
            .client_name
            .clone()
            .unwrap_or_else(|| super::CLIENT_NAME.to_string())
    }

    fn configured(&self) -> Option<Map<String, Value>> {
        let id = self.settings.client_id.as_ref()?;
        let mut c = Map::new();
        c.insert("client_id".into(), json!(id));
        if let Some(s) = &self.settings.client_secret {
            c.insert("client_secret".into(), json!(s));
        }
        Some(c)
    }

    /// The stored `state`, or a new one.
    pub async fn state(&self) -> Result<String, FlowError> {
        let own = self.store.load().await.map_err(FlowError::Other)?;
        if let Some(s) = own.get("oauthState").and_then(Value::as_str) {
            return Ok(s.to_string());
        }
        let state = hex(&super::random_bytes()?);
        let value = state.clone();
        self.update(|s| {
            s.insert("oauthState".into(), json!(value));
        })
        .await?;
        Ok(state)
    }

    async fn update(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Result<(), FlowError> {
        self.store.update(f).await.map_err(FlowError::Other)
    }

    async fn own(&self) -> Result<Map<String, Value>, FlowError> {
        self.store.load().await.map_err(FlowError::Other)
    }

    async fn client_information(&self) -> Result<Option<Map<String, Value>>, FlowError> {
        if let Some(c) = self.configured() {
            return Ok(Some(c));
        }
        Ok(self
            .own()
            .await?
            .get("clientInformation")
            .and_then(Value::as_object)
            .cloned())
    }

    async fn save_tokens(&self, tokens: Map<String, Value>) -> Result<(), FlowError> {
        let expires_at = tokens
            .get("expires_in")
            .and_then(Value::as_f64)
            .map(|s| now_ms() + s * 1000.0);
        self.update(|s| {
            s.insert("tokens".into(), Value::Object(tokens));
            match expires_at {
                Some(at) => {
                    s.insert(
                        "tokensExpireAt".into(),
                        pi_js::json::js_number_value(at.floor()),
                    );
                }
                None => {
                    s.shift_remove("tokensExpireAt");
                }
            }
        })
        .await
    }

    /// Forgets `client`, `tokens`, `verifier`, `discovery` or `all`.
    pub async fn invalidate(&self, kinds: &[&str]) -> Result<(), FlowError> {
        let all = kinds.contains(&"all");
        let has = |k: &str| all || kinds.contains(&k);
        let (client, tokens, verifier, discovery) = (
            has("client"),
            has("tokens"),
            has("verifier"),
            has("discovery"),
        );
        self.update(|s| {
            if client {
                s.shift_remove("clientInformation");
            }
            if tokens {
                s.shift_remove("tokens");
                s.shift_remove("tokensExpireAt");
            }
            if verifier {
                s.shift_remove("codeVerifier");
            }
            if discovery {
                s.shift_remove("discovery");
            }
            if all {
                s.shift_remove("oauthState");
            }
        })
        .await
    }

    /// The metadata document to identify with, if the client may and the server supports it.
    fn metadata_document(
        &self,
        discovered: &Discovered,
    ) -> Result<Option<(String, String)>, FlowError> {
        if !offers_metadata_document(&self.settings, &self.redirect_url) {
            return Ok(None);
        }
        if !documents_list_redirect(Some(&self.redirect_url)) {
            return Err(FlowError::Other(format!(
                "oauth.clientRegistration \"cimd\" needs Client ID Metadata Documents that list the redirect URI {}",
                self.redirect_url
            )));
        }
        let supported = discovered.meta("client_id_metadata_document_supported")
            == Some(&json!(true))
            && discovered
                .meta_list("token_endpoint_auth_methods_supported")
                .is_some_and(|l| l.iter().any(|m| m == "none"));
        if !supported {
            if self.settings.registration() == "cimd" {
                return Err(FlowError::Other("The authorization server does not support Client ID Metadata Documents for public clients; remove oauth.clientRegistration \"cimd\"".into()));
            }
            return Ok(None);
        }
        let server_url = self.store.server_url();
        if discovered.meta("authorization_response_iss_parameter_supported") == Some(&json!(true)) {
            return Ok(Some((
                format!("{CLIENT_METADATA_BASE_URL}/client.json"),
                self.redirect_url.clone(),
            )));
        }
        let mut redirect =
            Url::parse(&self.redirect_url).map_err(|e| FlowError::Other(e.to_string()))?;
        let path = server_specific_path(redirect.path(), server_url);
        redirect.set_path(&path);
        Ok(Some((
            format!(
                "{CLIENT_METADATA_BASE_URL}/{}/client.json",
                callback_id(server_url)
            ),
            redirect.to_string(),
        )))
    }

    async fn discovery(&self, options: &FlowOptions) -> Result<Discovered, FlowError> {
        let http = &self.http;
        let metadata_url = match &options.server_metadata_url {
            Some(u) => Some(secure_endpoint(u)?),
            None => None,
        };
        // With a configured metadata URL, discovery is not cached: a changed URL applies at once.
        let cached = if metadata_url.is_some() {
            None
        } else {
            self.own()
                .await?
                .get("discovery")
                .and_then(Discovered::from_json)
        };
        let discovered = match cached {
            Some(mut d) => {
                if d.server_metadata.is_none() {
                    d.server_metadata =
                        discovery::discover_server_metadata(http, &d.authorization_server_url)
                            .await?;
                }
                d
            }
            None => {
                discovery::discover(
                    http,
                    &options.server_url,
                    options.resource_metadata_url.as_deref(),
                    metadata_url.as_deref(),
                )
                .await?
            }
        };
        if metadata_url.is_none() {
            let stored = discovered.to_json(options.resource_metadata_url.as_deref());
            self.update(|s| {
                s.insert("discovery".into(), stored);
            })
            .await?;
        }
        Ok(discovered)
    }

    async fn register(
        &self,
        discovered: &Discovered,
        scope: Option<&str>,
    ) -> Result<Map<String, Value>, FlowError> {
        let endpoint = match discovered.meta_str("registration_endpoint") {
            Some(e) => e.to_string(),
            None if discovered.server_metadata.is_some() => {
                return Err(FlowError::Other(
                    "Authorization server does not support dynamic client registration".into(),
                ));
            }
            None => join(&discovered.authorization_server_url, "/register")?,
        };
        let redirect_uris = vec![self.redirect_url.clone()];
        let auth_method = if self.settings.client_secret.is_some() {
            "client_secret_post"
        } else {
            "none"
        };
        let mut body = json!({
            "client_name": self.client_name(),
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method,
            "application_type": application_type(&redirect_uris),
        });
        if let Some(s) = scope.filter(|s| !s.is_empty()) {
            body["scope"] = json!(s);
        }
        let headers = [
            ("accept".to_string(), "application/json".to_string()),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        let response = self
            .http
            .post(&endpoint, &headers, body.to_string())
            .await?;
        if !response.ok() {
            return Err(FlowError::Registration {
                status: response.status,
                body: response.text,
            });
        }
        parse_client(&response.json()?)
    }

    async fn token_request(
        &self,
        discovered: &Discovered,
        client: &Map<String, Value>,
        resource: Option<&str>,
        mut params: Vec<(String, String)>,
    ) -> Result<Map<String, Value>, FlowError> {
        let endpoint = match discovered.meta_str("token_endpoint") {
            Some(e) => e.to_string(),
            None => join(&discovered.authorization_server_url, "/token")?,
        };
        let url = secure_endpoint(&endpoint)?;
        let mut headers = vec![
            ("accept".to_string(), "application/json".to_string()),
            (
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ),
        ];
        if let Some(r) = resource {
            params.push(("resource".into(), r.to_string()));
        }
        let supported = discovered
            .meta_list("token_endpoint_auth_methods_supported")
            .unwrap_or_default();
        let id = client
            .get("client_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let secret = client
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_string);
        match client_auth_method(client, &supported) {
            "client_secret_basic" => {
                let Some(secret) = secret else {
                    return Err(FlowError::Other(
                        "client_secret_basic requires a client secret".into(),
                    ));
                };
                let basic =
                    base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
                headers.push(("authorization".into(), format!("Basic {basic}")));
            }
            method => {
                params.push(("client_id".into(), id));
                if method == "client_secret_post"
                    && let Some(s) = secret
                {
                    params.push(("client_secret".into(), s));
                }
            }
        }
        let response = self.http.post(&url, &headers, form(&params)).await?;
        let value: Option<Value> = serde_json::from_str(&response.text).ok();
        // Servers report OAuth errors with any status: the body decides first.
        if let Some(Value::Object(o)) = &value
            && let Some(code) = o.get("error").and_then(Value::as_str)
        {
            let message = o
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or(code);
            return Err(FlowError::OAuth {
                code: code.to_string(),
                message: if message.is_empty() {
                    code.to_string()
                } else {
                    message.to_string()
                },
            });
        }
        if !response.ok() {
            return Err(FlowError::OAuth {
                code: "server_error".into(),
                message: format!("HTTP {}: {}", response.status, response.text),
            });
        }
        parse_tokens(value.as_ref().unwrap_or(&Value::Null))
    }

    /// The authorization URL for the browser step, with a new PKCE verifier stored.
    async fn start_authorization(
        &self,
        discovered: &Discovered,
        client: &Map<String, Value>,
        redirect_url: &str,
        scope: Option<&str>,
        resource: Option<&str>,
    ) -> Result<String, FlowError> {
        if discovered.server_metadata.is_some() {
            if !discovered
                .meta_list("response_types_supported")
                .unwrap_or_default()
                .iter()
                .any(|t| t == "code")
            {
                return Err(FlowError::Other(
                    "Authorization server does not support authorization codes".into(),
                ));
            }
            if let Some(methods) = discovered.meta_list("code_challenge_methods_supported")
                && !methods.iter().any(|m| m == "S256")
            {
                return Err(FlowError::Other(
                    "Authorization server does not support PKCE S256".into(),
                ));
            }
        }
        let endpoint = match discovered.meta_str("authorization_endpoint") {
            Some(e) => e.to_string(),
            None => join(&discovered.authorization_server_url, "/authorize")?,
        };
        let mut url = Url::parse(&endpoint).map_err(|e| FlowError::Other(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FlowError::Other(format!(
                "Invalid authorization endpoint {url}"
            )));
        }
        let (verifier, challenge) = pi_registry::oauth::login::pkce().map_err(FlowError::Other)?;
        let state = self.state().await?;
        let id = client
            .get("client_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut set: Vec<(&str, String)> = vec![
            ("response_type", "code".into()),
            ("client_id", id.into()),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256".into()),
            ("redirect_uri", redirect_url.into()),
            ("state", state),
        ];
        if let Some(s) = scope.filter(|s| !s.is_empty()) {
            set.push(("scope", s.into()));
            if s.split_whitespace().any(|w| w == "offline_access") {
                set.push(("prompt", "consent".into()));
            }
        }
        if let Some(r) = resource {
            set.push(("resource", r.into()));
        }
        // `searchParams.set`: a parameter the endpoint already has is replaced in place.
        let mut pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        for (k, v) in set {
            match pairs.iter().position(|(pk, _)| pk == k) {
                Some(i) => {
                    pairs[i].1 = v;
                    let mut j = pairs.len();
                    while j > i + 1 {
                        j -= 1;
                        if pairs[j].0 == k {
                            pairs.remove(j);
                        }
                    }
                }
                None => pairs.push((k.to_string(), v)),
            }
        }
        url.set_query(Some(&form(&pairs)));
        let v = verifier.clone();
        self.update(|s| {
            s.insert("codeVerifier".into(), json!(v));
        })
        .await?;
        Ok(url.to_string())
    }

    /// One run of the flow; `stored_client_id` reports the client it started with.
    async fn run(
        &self,
        options: &FlowOptions,
        stored_client_id: &mut Option<String>,
    ) -> Result<Outcome, FlowError> {
        let discovered = self.discovery(options).await?;
        let resource =
            discovery::select_resource(&options.server_url, discovered.resource_metadata.as_ref())?;
        let scope = options.scope.clone().filter(|s| !s.is_empty()).or_else(|| {
            discovered
                .resource_metadata
                .as_ref()
                .and_then(|m| m.get("scopes_supported"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|s| !s.is_empty())
        });
        let stored = self.client_information().await?;
        *stored_client_id = stored
            .as_ref()
            .and_then(|c| c.get("client_id"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let document = match stored {
            Some(_) => None,
            None => self.metadata_document(&discovered)?,
        };
        if let Some((url, _)) = &document {
            let parsed = Url::parse(url).map_err(|e| FlowError::Other(e.to_string()))?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err(FlowError::Other("Invalid OAuth client metadata URL".into()));
            }
        }
        // The document's redirect URI may be specific to the server.
        let redirect_url = document
            .as_ref()
            .map_or_else(|| self.redirect_url.clone(), |(_, r)| r.clone());
        if options.authorization_code.is_some()
            && let Some(requested) = &options.authorization_redirect_url
            && *requested != redirect_url
        {
            return Err(FlowError::Other(format!(
                "The code exchange would use the redirect URI {redirect_url}, but the authorization request used {requested}"
            )));
        }
        let client = match (stored, &document) {
            (Some(c), _) => c,
            (None, Some((url, _))) => {
                let mut c = Map::new();
                c.insert("client_id".into(), json!(url));
                c
            }
            (None, None) => {
                if options.refresh_only {
                    return Ok(Outcome::Redirect(None));
                }
                if options.authorization_code.is_some() {
                    return Err(FlowError::Other("OAuth client information is missing during code exchange: the authorization request's client was removed, or the client settings changed".into()));
                }
                let registered = self.register(&discovered, scope.as_deref()).await?;
                if self.settings.client_id.is_none() {
                    let saved = registered.clone();
                    self.update(|s| {
                        s.insert("clientInformation".into(), Value::Object(saved));
                    })
                    .await?;
                }
                registered
            }
        };
        if let Some(code) = &options.authorization_code {
            // RFC 9207: a code from another authorization server never goes to this one.
            let issuer = discovered.meta_str("issuer").map(str::to_string);
            let promised = discovered.meta("authorization_response_iss_parameter_supported")
                == Some(&json!(true));
            if (options.iss.is_some() || promised) && options.iss != issuer {
                return Err(FlowError::IssuerMismatch {
                    expected: issuer,
                    received: options.iss.clone(),
                });
            }
            let verifier = self
                .own()
                .await?
                .get("codeVerifier")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| FlowError::Other("No OAuth PKCE code verifier is stored".into()))?;
            let params = vec![
                ("grant_type".to_string(), "authorization_code".to_string()),
                ("code".to_string(), code.clone()),
                ("code_verifier".to_string(), verifier),
                ("redirect_uri".to_string(), redirect_url.clone()),
            ];
            let mut tokens = self
                .token_request(&discovered, &client, resource.as_deref(), params)
                .await?;
            // A response without `scope` grants the requested one (RFC 6749 §5.1).
            if !tokens.contains_key("scope")
                && let Some(s) = &scope
            {
                tokens.insert("scope".into(), json!(s));
            }
            self.save_tokens(tokens).await?;
            return Ok(Outcome::Authorized);
        }
        let existing = if options.skip_refresh {
            None
        } else {
            self.own()
                .await?
                .get("tokens")
                .and_then(Value::as_object)
                .cloned()
        };
        if let Some(refresh_token) = existing
            .as_ref()
            .and_then(|t| t.get("refresh_token"))
            .and_then(Value::as_str)
        {
            let params = vec![
                ("grant_type".to_string(), "refresh_token".to_string()),
                ("refresh_token".to_string(), refresh_token.to_string()),
            ];
            match self
                .token_request(&discovered, &client, resource.as_deref(), params)
                .await
            {
                Ok(fresh) => {
                    let mut tokens = Map::new();
                    tokens.insert("refresh_token".into(), json!(refresh_token));
                    for (k, v) in fresh {
                        tokens.insert(k, v);
                    }
                    // A refresh without `scope` keeps the grant's (RFC 6749 §6).
                    if !tokens.contains_key("scope")
                        && let Some(s) = existing.as_ref().and_then(|t| t.get("scope"))
                    {
                        tokens.insert("scope".into(), s.clone());
                    }
                    self.save_tokens(tokens).await?;
                    return Ok(Outcome::Authorized);
                }
                Err(e @ FlowError::InsecureEndpoint(_)) => return Err(e),
                Err(e @ FlowError::OAuth { .. }) if !is_server_error(&e) => return Err(e),
                Err(_) => {}
            }
        }
        if options.refresh_only {
            return Ok(Outcome::Redirect(None));
        }
        let url = self
            .start_authorization(
                &discovered,
                &client,
                &redirect_url,
                scope.as_deref(),
                resource.as_deref(),
            )
            .await?;
        Ok(Outcome::Redirect(Some(url)))
    }

    /// The flow, run once more after the server rejected the client (forgotten first) or the
    /// grant (tokens forgotten).
    pub async fn authorize(&self, options: &FlowOptions) -> Result<Outcome, FlowError> {
        let mut stored_client_id = None;
        match self.run(options, &mut stored_client_id).await {
            Err(FlowError::OAuth { code, .. })
                if code == "invalid_client" || code == "unauthorized_client" =>
            {
                if options.refresh_only {
                    // A pending sign-in keeps its `state` and verifier; a client stored
                    // meanwhile is not the one the server rejected.
                    let current = self.client_information().await?.and_then(|c| {
                        c.get("client_id")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    });
                    if current == stored_client_id {
                        self.invalidate(&["client", "tokens", "discovery"]).await?;
                    }
                } else {
                    self.invalidate(&["all"]).await?;
                }
                self.run(options, &mut None).await
            }
            Err(FlowError::OAuth { code, .. }) if code == "invalid_grant" => {
                self.invalidate(&["tokens"]).await?;
                self.run(options, &mut None).await
            }
            other => other,
        }
    }
}

fn is_server_error(e: &FlowError) -> bool {
    matches!(e, FlowError::OAuth { code, .. } if code == "server_error")
}

fn join(base: &str, path: &str) -> Result<String, FlowError> {
    Url::parse(base)
        .and_then(|u| u.join(path))
        .map(|u| u.to_string())
        .map_err(|e| FlowError::Other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_follow_pis_rules() {
        assert_eq!(
            merge_scopes(&[Some("a b"), None, Some("b c")]).as_deref(),
            Some("a b c")
        );
        assert_eq!(step_up_scope(Some("a"), None), None);
        assert_eq!(step_up_scope(None, Some("x")).as_deref(), Some("x"));
        assert_eq!(
            application_type(&["http://127.0.0.1:9/callback".into()]),
            "native"
        );
        assert_eq!(application_type(&["https://app.example/cb".into()]), "web");
        let c = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            client_auth_method(&c(json!({"client_id": "a"})), &[]),
            "none"
        );
        assert_eq!(
            client_auth_method(&c(json!({"client_id": "a", "client_secret": "s"})), &[]),
            "client_secret_basic"
        );
        assert_eq!(
            client_auth_method(
                &c(
                    json!({"client_id": "a", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post"})
                ),
                &["client_secret_basic".into(), "client_secret_post".into()]
            ),
            "client_secret_post"
        );
        assert_eq!(callback_id("http://127.0.0.1:1/mcp").len(), 12);
        assert_eq!(
            parse_tokens(&json!({"access_token": "a", "token_type": "Bearer", "expires_in": "60", "scope": ""}))
                .map(Value::Object)
                .ok(),
            Some(json!({"access_token": "a", "token_type": "Bearer", "expires_in": 60}))
        );
    }
}
