//! The test MCP server of [`crate::mcp_server`] over streamable HTTP on 127.0.0.1, optionally
//! behind OAuth with its own authorization server on the same port.
//!
//! MCP: `POST /mcp` with one JSON-RPC message per request. `initialize` starts a session
//! (`Mcp-Session-Id: session-<n>`), later requests must carry it (an unknown one gets 404, as a
//! restarted server answers); `tools/call` answers as an SSE stream (progress notifications, then
//! the result), everything else as JSON; notifications get 202. `GET /mcp` opens the
//! server-to-client SSE stream when `get_stream` is set (else 405); [`HttpServer::notify`]
//! writes to it. `DELETE` ends the session. `fail_first` answers that many requests with 503.
//!
//! OAuth (`oauth`): `/mcp` wants `Authorization: Bearer <access token>` and answers 401 with a
//! `resource_metadata` challenge; the server publishes protected resource metadata
//! (`/.well-known/oauth-protected-resource/mcp`) and authorization server metadata
//! (`/.well-known/oauth-authorization-server`), registers clients (`POST /register`), approves
//! every authorization request at once (`GET /authorize` redirects to the client's redirect URI
//! with a code), and issues and rotates tokens (`POST /token`, PKCE S256 checked). Optionally it
//! accepts pi's Client ID Metadata Documents, sends `iss` (RFC 9207), or knows a pre-registered
//! confidential client.

use crate::mcp_server::{self, ServerOptions};
use crate::mock::http::{HttpRequest, read_request};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The authorization server's behaviour.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// `expires_in` of access tokens, in seconds.
    pub expires_in: u64,
    /// `scopes_supported` of the protected resource metadata.
    pub scopes: Option<Vec<String>>,
    /// Issue refresh tokens (rotated on every refresh).
    pub refresh_tokens: bool,
    /// Accept Client ID Metadata Documents (`client_id_metadata_document_supported`) of pi's
    /// base URL, without fetching them: their redirect URIs are known (`/callback` on loopback,
    /// `/callback/<id>` for a server-specific document).
    pub metadata_documents: bool,
    /// Send `iss` with authorization responses (RFC 9207) and say so in the metadata.
    pub iss: bool,
    /// A pre-registered confidential client `(client_id, client_secret)`: any loopback
    /// redirect URI, authenticated at the token endpoint with `client_secret_basic` or
    /// `client_secret_post`.
    pub client: Option<(String, String)>,
    /// Tools whose calls need a scope `(tool, scope)`: without it the call gets 403 with an
    /// `insufficient_scope` challenge naming that scope (step-up authorization).
    pub tool_scopes: Vec<(String, String)>,
    /// Access tokens valid from the start, without a grant (a credential issued elsewhere,
    /// such as a model provider's key sent with `auth.provider`).
    pub accepted_tokens: Vec<String>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            expires_in: 3600,
            scopes: None,
            refresh_tokens: true,
            metadata_documents: false,
            iss: false,
            client: None,
            tool_scopes: Vec::new(),
            accepted_tokens: Vec::new(),
        }
    }
}

/// What the HTTP server does.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    pub server: ServerOptions,
    pub fail_first: usize,
    pub oauth: Option<OAuthOptions>,
    pub get_stream: bool,
    /// The first this many `tools/call` streams end after a priming event (an `id`, a
    /// `retry: 50` and no data) without the answer, which a `GET` with that `Last-Event-ID`
    /// then replays (a server closing response streams at will, as the spec allows).
    pub cut_call_streams: usize,
    /// Notifications to `/mcp` are answered this much later (a slow server).
    pub notification_delay_ms: u64,
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: Option<String>,
}

#[derive(Default)]
struct Auth {
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Code>,
    /// Access and refresh tokens with the scope they grant (`""` for none).
    access: HashMap<String, String>,
    refresh: HashMap<String, String>,
}

struct Shared {
    opts: HttpOptions,
    port: u16,
    failures: AtomicUsize,
    counter: AtomicUsize,
    sessions: Mutex<HashSet<String>>,
    auth: Mutex<Auth>,
    streams: Mutex<Vec<mpsc::UnboundedSender<String>>>,
    cuts: AtomicUsize,
    /// What a cut stream still owed, by the id of its last event.
    replay: Mutex<HashMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn next(&self, prefix: &str) -> String {
        format!(
            "{prefix}-{}",
            self.counter.fetch_add(1, Ordering::SeqCst) + 1
        )
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A running server; dropped, it stops accepting.
pub struct HttpServer {
    pub port: u16,
    /// Every request as `METHOD session-id-or-"-" body` (`/mcp`) or `METHOD path` (OAuth),
    /// in arrival order.
    pub log: Arc<Mutex<Vec<String>>>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Forgets every session: the next request of each gets 404.
    pub fn expire_sessions(&self) {
        lock(&self.shared.sessions).clear();
    }

    /// Rejects every access token issued so far (refresh tokens stay valid).
    pub fn revoke_access_tokens(&self) {
        lock(&self.shared.auth).access.clear();
    }

    /// Rejects every refresh token issued so far.
    pub fn revoke_refresh_tokens(&self) {
        lock(&self.shared.auth).refresh.clear();
    }

    /// Writes a JSON-RPC message to every open `GET` stream; how many got it.
    pub fn notify(&self, message: &Value) -> usize {
        let mut streams = lock(&self.shared.streams);
        streams.retain(|s| s.send(message.to_string()).is_ok());
        streams.len()
    }

    /// Open `GET` streams.
    pub fn get_streams(&self) -> usize {
        let mut streams = lock(&self.shared.streams);
        streams.retain(|s| !s.is_closed());
        streams.len()
    }

    /// Closes every `GET` stream (the server side of a dropped connection).
    pub fn drop_streams(&self) {
        lock(&self.shared.streams).clear();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the plain server (no OAuth, no `GET` stream) on a free loopback port.
pub async fn start(opts: ServerOptions, fail_first: usize) -> std::io::Result<HttpServer> {
    serve(
        HttpOptions {
            server: opts,
            fail_first,
            ..HttpOptions::default()
        },
        0,
    )
    .await
}

/// Starts a server on `port` (0: a free one).
pub async fn serve(opts: HttpOptions, port: u16) -> std::io::Result<HttpServer> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let shared = Arc::new(Shared {
        failures: AtomicUsize::new(opts.fail_first),
        cuts: AtomicUsize::new(opts.cut_call_streams),
        replay: Mutex::default(),
        opts,
        port,
        counter: AtomicUsize::new(0),
        sessions: Mutex::default(),
        auth: Mutex::default(),
        streams: Mutex::default(),
    });
    if let Some(o) = &shared.opts.oauth {
        let mut auth = lock(&shared.auth);
        for t in &o.accepted_tokens {
            auth.access.insert(t.clone(), String::new());
        }
    }
    let task = {
        let (log, shared) = (Arc::clone(&log), Arc::clone(&shared));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, shared) = (Arc::clone(&log), Arc::clone(&shared));
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut reader = BufReader::new(read);
                    while let Ok(Some(req)) = read_request(&mut reader).await {
                        let close = req
                            .header("connection")
                            .is_some_and(|c| c.eq_ignore_ascii_case("close"));
                        let reply = answer(&shared, &log, &req);
                        let delay = shared.opts.notification_delay_ms;
                        if delay > 0 && is_notification(&req) {
                            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                        }
                        match reply {
                            Reply::Full(bytes) => {
                                if write.write_all(&bytes).await.is_err() {
                                    break;
                                }
                                let _ = write.flush().await;
                                if close {
                                    break;
                                }
                            }
                            Reply::Drop => break,
                            Reply::Stream(head, mut rx) => {
                                if write.write_all(head.as_bytes()).await.is_err() {
                                    break;
                                }
                                let _ = write.flush().await;
                                while let Some(msg) = rx.recv().await {
                                    let event = format!("event: message\ndata: {msg}\n\n");
                                    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                                    if write.write_all(chunk.as_bytes()).await.is_err() {
                                        break;
                                    }
                                    let _ = write.flush().await;
                                }
                                let _ = write.write_all(b"0\r\n\r\n").await;
                                break;
                            }
                        }
                    }
                });
            }
        })
    };
    Ok(HttpServer {
        port,
        log,
        shared,
        task,
    })
}

enum Reply {
    Full(Vec<u8>),
    /// Close the connection without an answer.
    Drop,
    /// A response head, then SSE events from the channel until it closes.
    Stream(String, mpsc::UnboundedReceiver<String>),
}

fn response(status: &str, headers: &[(&str, String)], body: &str) -> Reply {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    Reply::Full(out)
}

fn json_reply(status: &str, body: &Value) -> Reply {
    response(
        status,
        &[("content-type", "application/json".to_string())],
        &body.to_string(),
    )
}

fn query(target: &str) -> Map<String, Value> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    form(q)
}

/// `application/x-www-form-urlencoded` pairs (enough for the values the clients send).
fn form(text: &str) -> Map<String, Value> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && i + 2 < bytes.len()
                && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
            {
                out.push(b);
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), Value::String(decode(v)))
        })
        .collect()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `(host, path)` of a loopback `http` redirect URI.
fn loopback_redirect(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    matches!(host, "127.0.0.1" | "localhost").then(|| (host.to_string(), path.to_string()))
}

/// Whether pi's metadata document `client_id` lists `redirect_uri`: `client.json` lists
/// `/callback`, `<id>/client.json` lists `/callback/<id>`, on loopback with any port.
fn document_lists(client_id: &str, redirect_uri: &str) -> bool {
    let Some(doc) = client_id.strip_prefix("https://pi.dev/oauth/") else {
        return false;
    };
    let Some((_, path)) = loopback_redirect(redirect_uri) else {
        return false;
    };
    match doc.strip_suffix("/client.json") {
        Some(id) => path == format!("/callback/{id}"),
        None => doc == "client.json" && path == "/callback",
    }
}

/// `Authorization: Basic` client credentials (each part form-encoded, RFC 6749 2.3.1).
fn basic_credentials(req: &HttpRequest) -> Option<(String, Option<String>)> {
    let b64 = req.header("authorization")?.strip_prefix("Basic ")?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (id, secret) = text.split_once(':')?;
    let pair = form(&format!("id={id}&secret={secret}"));
    let get = |k: &str| {
        pair.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Some((get("id"), Some(get("secret"))))
}

/// The scope a `tools/call` in `body` needs, if its tool is one of `tool_scopes`.
fn needed_scope<'a>(shared: &'a Shared, body: &str) -> Option<&'a str> {
    let o = shared.opts.oauth.as_ref()?;
    let msg: Value = serde_json::from_str(body).ok()?;
    if msg.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let tool = msg.get("params")?.get("name")?.as_str()?;
    o.tool_scopes
        .iter()
        .find(|(t, _)| t == tool)
        .map(|(_, s)| s.as_str())
}

fn s256(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// A JSON-RPC notification (a method without an id) posted to `/mcp`.
fn is_notification(req: &HttpRequest) -> bool {
    req.path() == "/mcp"
        && serde_json::from_slice::<Value>(&req.body)
            .is_ok_and(|m| m.get("method").is_some() && m.get("id").is_none())
}

fn answer(shared: &Shared, log: &Mutex<Vec<String>>, req: &HttpRequest) -> Reply {
    let path = req.path().to_string();
    if path != "/mcp" {
        lock(log).push(format!("{} {path}", req.method));
        return match shared.opts.oauth.as_ref() {
            Some(o) => oauth(shared, o, req, &path),
            None => response("404 Not Found", &[], "not found"),
        };
    }
    let session = req.header("mcp-session-id").unwrap_or("-").to_string();
    let body = String::from_utf8_lossy(&req.body).to_string();
    lock(log).push(format!("{} {session} {body}", req.method));
    if shared
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return response("503 Service Unavailable", &[], "overloaded");
    }
    if shared.opts.oauth.is_some() {
        let token = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .unwrap_or("");
        let metadata = format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            shared.origin()
        );
        let Some(granted) = lock(&shared.auth).access.get(token).cloned() else {
            return response(
                "401 Unauthorized",
                &[("www-authenticate", format!("Bearer {metadata}"))],
                "unauthorized",
            );
        };
        if let Some(needed) = needed_scope(shared, &body)
            && !granted.split_whitespace().any(|g| g == needed)
        {
            let challenge =
                format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\", {metadata}");
            return response(
                "403 Forbidden",
                &[("www-authenticate", challenge)],
                "insufficient scope",
            );
        }
    }
    let known = |s: &str| lock(&shared.sessions).contains(s);
    match req.method.as_str() {
        "DELETE" => {
            lock(&shared.sessions).remove(&session);
            return response("200 OK", &[], "");
        }
        "GET" => {
            if let Some(last) = req.header("last-event-id") {
                let Some(sse) = lock(&shared.replay).remove(last) else {
                    return response("404 Not Found", &[], "unknown event id");
                };
                let headers = [("content-type", "text/event-stream".to_string())];
                return response("200 OK", &headers, &sse);
            }
            if !shared.opts.get_stream {
                return response("405 Method Not Allowed", &[], "");
            }
            if !known(&session) {
                return response("404 Not Found", &[], "session not found");
            }
            let (tx, rx) = mpsc::unbounded_channel();
            lock(&shared.streams).push(tx);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_string();
            return Reply::Stream(head, rx);
        }
        "POST" => {}
        _ => return response("405 Method Not Allowed", &[], ""),
    }
    let Ok(msg) = serde_json::from_str::<Value>(&body) else {
        return response("400 Bad Request", &[], "invalid JSON");
    };
    let method_name = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let session = if method_name == "initialize" {
        let id = shared.next("session");
        lock(&shared.sessions).insert(id.clone());
        id
    } else if session == "-" {
        return response("400 Bad Request", &[], "missing session");
    } else if !known(&session) {
        return response("404 Not Found", &[], "session not found");
    } else {
        session
    };
    if msg.get("id").is_none() {
        return response("202 Accepted", &[], "");
    }
    let mut progress = Vec::new();
    let Some(reply) = mcp_server::reply(&shared.opts.server, &msg, &mut progress) else {
        return Reply::Drop; // `crash`: close the connection without an answer
    };
    let session_header = ("mcp-session-id", session);
    if method_name == "tools/call" {
        let mut sse = String::new();
        for line in String::from_utf8_lossy(&progress).lines() {
            sse.push_str(&format!("event: message\ndata: {line}\n\n"));
        }
        sse.push_str(&format!("event: message\ndata: {reply}\n\n"));
        if shared
            .cuts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            let id = shared.next("event");
            lock(&shared.replay).insert(id.clone(), sse);
            sse = format!("id: {id}\nretry: 50\ndata: \n\n");
        }
        let headers = [
            ("content-type", "text/event-stream".to_string()),
            session_header,
        ];
        return response("200 OK", &headers, &sse);
    }
    let headers = [
        ("content-type", "application/json".to_string()),
        session_header,
    ];
    response("200 OK", &headers, &json!(reply).to_string())
}

fn oauth(shared: &Shared, o: &OAuthOptions, req: &HttpRequest, path: &str) -> Reply {
    let origin = shared.origin();
    match (req.method.as_str(), path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let mut meta = json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [origin],
            });
            if let Some(s) = &o.scopes {
                meta["scopes_supported"] = json!(s);
            }
            json_reply("200 OK", &meta)
        }
        // The same document where OpenID Connect keeps it (for `authServerMetadataUrl`).
        (
            "GET",
            "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
        ) => {
            let mut methods = vec!["none"];
            if o.client.is_some() {
                methods.extend(["client_secret_basic", "client_secret_post"]);
            }
            let mut meta = json!({
                "issuer": origin,
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "registration_endpoint": format!("{origin}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": methods,
            });
            if o.metadata_documents {
                meta["client_id_metadata_document_supported"] = json!(true);
            }
            if o.iss {
                meta["authorization_response_iss_parameter_supported"] = json!(true);
            }
            json_reply("200 OK", &meta)
        }
        ("POST", "/register") => {
            let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(&req.body) else {
                return json_reply(
                    "400 Bad Request",
                    &json!({"error": "invalid_client_metadata"}),
                );
            };
            let uris: Vec<String> = body
                .get("redirect_uris")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let id = shared.next("client");
            lock(&shared.auth).clients.insert(id.clone(), uris);
            body.insert("client_id".into(), json!(id));
            body.insert("client_id_issued_at".into(), json!(1_700_000_000));
            json_reply("201 Created", &Value::Object(body))
        }
        ("GET", "/authorize") => {
            let q = query(&req.target);
            let get = |k: &str| q.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let (client_id, redirect_uri) = (get("client_id"), get("redirect_uri"));
            let registered = lock(&shared.auth)
                .clients
                .get(&client_id)
                .is_some_and(|uris| uris.contains(&redirect_uri))
                || (o.metadata_documents && document_lists(&client_id, &redirect_uri))
                || (o.client.as_ref().is_some_and(|(id, _)| *id == client_id)
                    && loopback_redirect(&redirect_uri).is_some());
            if !registered || get("code_challenge_method") != "S256" {
                return response("400 Bad Request", &[], "invalid authorization request");
            }
            let code = shared.next("code");
            lock(&shared.auth).codes.insert(
                code.clone(),
                Code {
                    client_id,
                    redirect_uri: redirect_uri.clone(),
                    challenge: get("code_challenge"),
                    scope: q.get("scope").and_then(Value::as_str).map(str::to_string),
                },
            );
            let mut location = format!(
                "{redirect_uri}?code={}&state={}",
                encode(&code),
                encode(&get("state"))
            );
            if o.iss {
                location.push_str(&format!("&iss={}", encode(&origin)));
            }
            response("302 Found", &[("location", location)], "")
        }
        ("POST", "/token") => {
            let f = form(&String::from_utf8_lossy(&req.body));
            let get = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            // The client: `client_secret_basic`, else the form's `client_id` (and secret).
            let (client_id, secret) = match basic_credentials(req) {
                Some(pair) => pair,
                None => (
                    get("client_id"),
                    f.get("client_secret")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                ),
            };
            if let Some((id, expected)) = &o.client
                && *id == client_id
                && secret.as_ref() != Some(expected)
            {
                return json_reply("401 Unauthorized", &json!({"error": "invalid_client"}));
            }
            let invalid_grant = |d: &str| {
                json_reply(
                    "400 Bad Request",
                    &json!({"error": "invalid_grant", "error_description": d}),
                )
            };
            let mut granted_on_refresh = None;
            let scope = match get("grant_type").as_str() {
                "authorization_code" => {
                    let Some(code) = lock(&shared.auth).codes.remove(&get("code")) else {
                        return invalid_grant("Unknown authorization code");
                    };
                    if code.client_id != client_id
                        || code.redirect_uri != get("redirect_uri")
                        || code.challenge != s256(&get("code_verifier"))
                    {
                        return invalid_grant("The code does not match the request");
                    }
                    code.scope
                }
                "refresh_token" => {
                    let Some(granted) = lock(&shared.auth).refresh.remove(&get("refresh_token"))
                    else {
                        return invalid_grant("Unknown refresh token");
                    };
                    // The answer names no scope: the grant's scope stays (RFC 6749 §6).
                    granted_on_refresh = Some(granted);
                    None
                }
                _ => {
                    return json_reply(
                        "400 Bad Request",
                        &json!({"error": "unsupported_grant_type"}),
                    );
                }
            };
            let access = shared.next("access");
            let mut tokens = json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": o.expires_in,
            });
            let granted = granted_on_refresh
                .or_else(|| scope.clone())
                .unwrap_or_default();
            let mut auth = lock(&shared.auth);
            auth.access.insert(access, granted.clone());
            if o.refresh_tokens {
                let refresh = shared.next("refresh");
                auth.refresh.insert(refresh.clone(), granted);
                tokens["refresh_token"] = json!(refresh);
            }
            if let Some(s) = scope {
                tokens["scope"] = json!(s);
            }
            json_reply("200 OK", &tokens)
        }
        _ => response("404 Not Found", &[], "not found"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_and_encode() {
        let f = form("a=1+2&b=%2Fx%3Fy&c");
        assert_eq!(f["a"], json!("1 2"));
        assert_eq!(f["b"], json!("/x?y"));
        assert_eq!(f["c"], json!(""));
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        // Python: base64.urlsafe_b64encode(hashlib.sha256(b"...").digest()).rstrip(b"=")
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gXk-v2cFk"),
            "tuLWiBWvIBJLkdmOY4qxLMektsxBDKQxzMaYC3Rmh28"
        );
    }
}
