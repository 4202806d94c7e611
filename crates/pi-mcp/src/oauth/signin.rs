//! Signing in to an OAuth MCP server (pi's `signInMcpServer`): a loopback callback server is
//! opened where the settings say; the stored refresh token is tried first; otherwise the user
//! opens the authorization URL, and the code comes back to the callback server or as a redirect
//! URL the user pastes; the code is exchanged and the tokens stored.

use super::discovery::Challenge;
use super::flow::{
    Client, FlowOptions, Outcome, merge_scopes, offers_metadata_document, registered_redirect_urls,
    server_specific_path, step_up_scope,
};
use super::http::OAuthHttp;
use super::store::ServerStore;
use super::{FlowError, Settings};
use reqwest::Url;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

const CALLBACK_HOST: &str = "127.0.0.1";
/// The redirect URI when the settings name none and no client is stored.
pub const DEFAULT_REDIRECT_URL: &str = "http://127.0.0.1/callback";
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(5 * 60);

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The user's side of a sign-in.
pub trait SignInPrompt: Send + Sync {
    /// The URL to open (shown, and handed to the browser).
    fn show_authorization_url(&self, url: &str) -> BoxFuture<'_, ()>;
    /// A redirect URL the user pasted; `None` when they gave up. `cancel` fires when the
    /// browser's callback came first.
    fn redirect_url(&self, cancel: CancellationToken) -> BoxFuture<'_, Option<String>>;
}

/// The authorization response: the code and what came with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthResponse {
    pub code: String,
    pub state: String,
    pub iss: Option<String>,
}

/// Where the loopback callback listens and the redirect URI it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loopback {
    pub url: String,
    pub host: String,
    pub redirect_host: String,
    pub port: Option<u16>,
    pub path: String,
    /// A redirect URI with a port: sent exactly as configured (servers compare strings).
    pub fixed_redirect_url: Option<String>,
}

pub fn loopback_settings(settings: &Settings) -> Loopback {
    let configured = settings
        .callback_url
        .clone()
        .unwrap_or_else(|| DEFAULT_REDIRECT_URL.to_string());
    let Ok(mut url) = Url::parse(&configured) else {
        return Loopback {
            url: configured,
            host: CALLBACK_HOST.into(),
            redirect_host: CALLBACK_HOST.into(),
            port: settings.callback_port,
            path: "/callback".into(),
            fixed_redirect_url: None,
        };
    };
    let raw_host = url.host_str().unwrap_or(CALLBACK_HOST).to_string();
    let address = raw_host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = url.port().or(settings.callback_port);
    let fixed_redirect_url = if url.port().is_some() {
        settings.callback_url.clone()
    } else if let Some(p) = port {
        let _ = url.set_port(Some(p));
        Some(url.to_string())
    } else {
        None
    };
    Loopback {
        url: configured,
        // `localhost` is served on 127.0.0.1; browsers fall back to it when ::1 refuses.
        host: if address == "localhost" {
            CALLBACK_HOST.into()
        } else {
            address.clone()
        },
        redirect_host: address,
        port,
        path: url.path().to_string(),
        fixed_redirect_url,
    }
}

type Pending = HashMap<
    String,
    (
        oneshot::Sender<Result<AuthResponse, String>>,
        Option<String>,
    ),
>;

/// A loopback HTTP server waiting for authorization responses, by `state`.
pub struct CallbackServer {
    pub redirect_url: String,
    pending: Arc<Mutex<Pending>>,
    stop: CancellationToken,
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page the browser shows after the redirect.
fn page(ok: bool, message: &str, details: Option<&str>) -> String {
    let (title, body) = if ok {
        (
            "Authentication successful",
            "Signed in to the MCP server. You may now close this page.".to_string(),
        )
    } else {
        let details = details
            .map(|d| format!("<p>{}</p>", escape(d)))
            .unwrap_or_default();
        (
            "Authentication failed",
            format!("{}</p>{details}<p>", escape(message)),
        )
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"
    )
}

impl CallbackServer {
    pub async fn listen(
        host: &str,
        redirect_host: &str,
        port: u16,
        path: &str,
        extra_paths: Vec<String>,
    ) -> std::io::Result<CallbackServer> {
        let listener = TcpListener::bind((host, port)).await?;
        let port = listener.local_addr()?.port();
        let shown_host = if redirect_host.contains(':') {
            format!("[{redirect_host}]")
        } else {
            redirect_host.to_string()
        };
        let redirect_url = format!("http://{shown_host}:{port}{path}");
        let pending: Arc<Mutex<Pending>> = Arc::default();
        let stop = CancellationToken::new();
        let mut paths = vec![path.to_string()];
        paths.extend(extra_paths);
        let (p, s, base) = (Arc::clone(&pending), stop.clone(), redirect_url.clone());
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = tokio::select! {
                    a = listener.accept() => match a { Ok(a) => a, Err(_) => break },
                    _ = s.cancelled() => break,
                };
                let (p, paths, base) = (Arc::clone(&p), paths.clone(), base.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf);
                    let target = head
                        .lines()
                        .next()
                        .and_then(|l| l.split_whitespace().nth(1))
                        .unwrap_or("/")
                        .to_string();
                    let (status, body) = handle(&p, &paths, &base, &target);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Ok(CallbackServer {
            redirect_url,
            pending,
            stop,
        })
    }

    /// The response with `state`; with `path`, one arriving on another path fails (a
    /// server-specific redirect URI tells authorization servers apart).
    pub async fn wait(&self, state: &str, path: Option<String>) -> Result<AuthResponse, String> {
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.contains_key(state) {
                return Err("OAuth state is already pending".into());
            }
            pending.insert(state.to_string(), (tx, path));
        }
        let result = tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err("OAuth callback server closed".into())),
            _ = tokio::time::sleep(CALLBACK_TIMEOUT) => Err("OAuth callback timed out".into()),
            _ = self.stop.cancelled() => Err("OAuth callback server closed".into()),
        };
        lock(&self.pending).remove(state);
        result
    }
}

fn handle(
    pending: &Mutex<Pending>,
    paths: &[String],
    base: &str,
    target: &str,
) -> (&'static str, String) {
    let Ok(url) = Url::parse(base).and_then(|b| b.join(target)) else {
        return ("400 Bad Request", page(false, "Not found", None));
    };
    if !paths.iter().any(|p| p == url.path()) {
        return ("404 Not Found", page(false, "Not found", None));
    }
    let param = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    let state = param("state");
    let waiting = state.as_ref().and_then(|s| lock(pending).remove(s));
    let (Some(state), Some((tx, path))) = (state, waiting) else {
        return (
            "400 Bad Request",
            page(false, "Invalid or expired OAuth state", None),
        );
    };
    if path.as_ref().is_some_and(|p| p != url.path()) {
        let _ = tx.send(Err(
            "The authorization response arrived on another redirect URI".into(),
        ));
        return (
            "400 Bad Request",
            page(false, "Unexpected redirect URI", None),
        );
    }
    if let Some(error) = param("error") {
        let description = param("error_description").unwrap_or(error);
        let _ = tx.send(Err(description.clone()));
        return (
            "200 OK",
            page(
                false,
                "Authorization failed. You may close this window.",
                Some(&description),
            ),
        );
    }
    let Some(code) = param("code") else {
        let _ = tx.send(Err(
            "OAuth callback did not include an authorization code".into()
        ));
        return (
            "400 Bad Request",
            page(false, "Missing authorization code", None),
        );
    };
    let iss = param("iss").filter(|s| !s.is_empty());
    let _ = tx.send(Ok(AuthResponse { code, state, iss }));
    ("200 OK", page(true, "", None))
}

/// The authorization response in a redirect URL the user pasted.
pub fn response_from_redirect_url(
    input: &str,
    redirect_url: &str,
    state: &str,
) -> Result<AuthResponse, String> {
    let url = Url::parse(pi_js::trim(input))
        .map_err(|_| "Expected the full redirect URL from the browser address bar".to_string())?;
    let expected = Url::parse(redirect_url).map_err(|e| e.to_string())?;
    if url.origin() != expected.origin() || url.path() != expected.path() {
        return Err("The redirect URL does not match this sign-in's redirect URI".into());
    }
    let param = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = param("error") {
        return Err(param("error_description").unwrap_or(error));
    }
    if param("state").as_deref() != Some(state) {
        return Err("The redirect URL belongs to a different sign-in".into());
    }
    let code = param("code")
        .filter(|c| !c.is_empty())
        .ok_or("The redirect URL does not contain an authorization code")?;
    Ok(AuthResponse {
        code,
        state: state.to_string(),
        iss: param("iss").filter(|s| !s.is_empty()),
    })
}

/// What a sign-in needs.
pub struct SignIn {
    pub server_url: String,
    pub store: ServerStore,
    pub settings: Settings,
    pub challenge: Option<Challenge>,
    pub cancel: CancellationToken,
}

/// The redirect URI a refresh identifies with: only a Client ID Metadata Document client cares,
/// so any URI the documents list does.
fn refresh_redirect(
    settings: &Settings,
    state: &serde_json::Map<String, Value>,
    preferred: Option<&str>,
) -> String {
    let candidates = [
        preferred.map(str::to_string),
        loopback_settings(settings).fixed_redirect_url,
        registered_redirect_urls(state.get("clientInformation"))
            .into_iter()
            .next(),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|u| super::documents_list_redirect(Some(u)))
        .unwrap_or_else(|| DEFAULT_REDIRECT_URL.to_string())
}

/// Refreshes the stored tokens with the stored client (Pi's `refreshStoredTokens`); never
/// registers a client or prepares an authorization. Call holding the refresh lock.
pub async fn refresh_stored_tokens(
    store: &ServerStore,
    server_url: &str,
    settings: &Settings,
    state: &serde_json::Map<String, Value>,
    challenge: Option<&Challenge>,
    redirect_url: Option<&str>,
) -> Result<Outcome, FlowError> {
    let client = Client {
        store: store.clone(),
        redirect_url: refresh_redirect(settings, state, redirect_url),
        settings: settings.clone(),
        http: OAuthHttp::new(),
    };
    client
        .authorize(&FlowOptions {
            server_url: server_url.to_string(),
            resource_metadata_url: challenge.and_then(|c| c.resource_metadata_url.clone()),
            server_metadata_url: settings.auth_server_metadata_url.clone(),
            refresh_only: true,
            ..FlowOptions::default()
        })
        .await
}

async fn cancellable<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, FlowError>>,
) -> Result<T, FlowError> {
    if cancel.is_cancelled() {
        return Err(FlowError::Cancelled);
    }
    tokio::select! {
        r = work => r,
        _ = cancel.cancelled() => Err(FlowError::Cancelled),
    }
}

/// Signs in; the tokens end up in the store. Cancelling stops it at any step.
pub async fn sign_in(s: &SignIn, prompt: &dyn SignInPrompt) -> Result<(), FlowError> {
    let loopback = loopback_settings(&s.settings);
    let stored = s.store.load_raw().await.map_err(FlowError::Other)?;
    let registered =
        registered_redirect_urls(stored.as_ref().and_then(|st| st.get("clientInformation")))
            .into_iter()
            .next()
            .and_then(|u| Url::parse(&u).ok())
            .and_then(|u| u.port());
    let port = loopback.port.or(registered);
    let extra = if offers_metadata_document(&s.settings, &loopback.url) {
        vec![server_specific_path(&loopback.path, &s.server_url)]
    } else {
        Vec::new()
    };
    let listen = |p: u16| {
        CallbackServer::listen(
            &loopback.host,
            &loopback.redirect_host,
            p,
            &loopback.path,
            extra.clone(),
        )
    };
    let callback = match listen(port.unwrap_or(0)).await {
        Ok(c) => c,
        // A configured port is required; the stored client's is only preferred.
        Err(_) if loopback.port.is_none() && port.is_some() => listen(0)
            .await
            .map_err(|e| FlowError::Other(e.to_string()))?,
        Err(e) => return Err(FlowError::Other(e.to_string())),
    };
    let redirect_url = loopback
        .fixed_redirect_url
        .clone()
        .unwrap_or_else(|| callback.redirect_url.clone());
    let client = Client {
        store: s.store.clone(),
        redirect_url: redirect_url.clone(),
        settings: s.settings.clone(),
        http: OAuthHttp::new(),
    };
    if s.cancel.is_cancelled() {
        return Err(FlowError::Cancelled);
    }
    let step_up = s
        .challenge
        .as_ref()
        .is_some_and(|c| c.error.as_deref() == Some("insufficient_scope"));
    if !step_up && refresh_before(s, &redirect_url).await? == Outcome::Authorized {
        return Ok(());
    }
    let (authorization_url, state, scope) =
        cancellable(&s.cancel, browser_step(s, &client, step_up)).await?;
    prompt.show_authorization_url(&authorization_url).await;
    let request_redirect = Url::parse(&authorization_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "redirect_uri")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or_else(|| redirect_url.clone());
    let response =
        wait_for_response(&callback, prompt, &request_redirect, &state, &s.cancel).await?;
    cancellable(&s.cancel, async {
        if response.state != state {
            return Err(FlowError::Other(
                "The authorization response belongs to a different sign-in".into(),
            ));
        }
        let current = s.store.load_raw().await.map_err(FlowError::Other)?;
        if current
            .as_ref()
            .and_then(|c| c.get("oauthState"))
            .and_then(Value::as_str)
            != Some(&state)
        {
            return Err(FlowError::Other(
                "Another sign-in to this MCP server started since; sign in again".into(),
            ));
        }
        client
            .authorize(&FlowOptions {
                server_url: s.server_url.clone(),
                resource_metadata_url: s
                    .challenge
                    .as_ref()
                    .and_then(|c| c.resource_metadata_url.clone()),
                server_metadata_url: s.settings.auth_server_metadata_url.clone(),
                scope,
                authorization_code: Some(response.code.clone()),
                authorization_redirect_url: Some(request_redirect.clone()),
                iss: response.iss.clone(),
                ..FlowOptions::default()
            })
            .await
            .map(|_| ())
    })
    .await
}

/// The refresh a sign-in tries first, under the refresh lock (skipped when another process
/// holds it too long).
async fn refresh_before(s: &SignIn, redirect_url: &str) -> Result<Outcome, FlowError> {
    let attempt = s.store.with_refresh_lock(async {
        if s.cancel.is_cancelled() {
            return Ok(Outcome::Redirect(None));
        }
        let Some(state) = s.store.load_raw().await.map_err(FlowError::Other)? else {
            return Ok(Outcome::Redirect(None));
        };
        let has_refresh = state
            .get("tokens")
            .and_then(|t| t.get("refresh_token"))
            .is_some_and(Value::is_string);
        if !has_refresh {
            return Ok(Outcome::Redirect(None));
        }
        // `cimd` is to replace a registered client.
        if s.settings.registration() == "cimd"
            && state.contains_key("clientInformation")
            && s.settings.client_id.is_none()
        {
            return Ok(Outcome::Redirect(None));
        }
        refresh_stored_tokens(
            &s.store,
            &s.server_url,
            &s.settings,
            &state,
            s.challenge.as_ref(),
            Some(redirect_url),
        )
        .await
    });
    // A refresh the server answered may have rotated the refresh token: it is not dropped.
    match attempt.await {
        Ok(r) => {
            if s.cancel.is_cancelled() {
                return Err(FlowError::Cancelled);
            }
            r
        }
        Err(_busy) => Ok(Outcome::Redirect(None)),
    }
}

/// Prepares the browser step: `(authorization URL, state, requested scope)`.
async fn browser_step(
    s: &SignIn,
    client: &Client,
    step_up: bool,
) -> Result<(String, String, Option<String>), FlowError> {
    let stored = s.store.load_raw().await.map_err(FlowError::Other)?;
    if let Some(stored) = &stored {
        let mut next = stored.clone();
        next.shift_remove("oauthState");
        // A registered client cannot use another redirect URI, and its tokens are its own.
        let keep_client = s.settings.client_id.is_some()
            || match stored.get("clientInformation") {
                Some(c) => {
                    s.settings.registration() != "cimd"
                        && registered_redirect_urls(Some(c)).contains(&client.redirect_url)
                }
                None => offers_metadata_document(&s.settings, &client.redirect_url),
            };
        if !keep_client {
            next.shift_remove("clientInformation");
            next.shift_remove("tokens");
            next.shift_remove("tokensExpireAt");
        }
        s.store.save(next).await.map_err(FlowError::Other)?;
    }
    let granted = stored
        .as_ref()
        .and_then(|st| st.get("tokens"))
        .and_then(|t| t.get("scope"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let challenged = s.challenge.as_ref().and_then(|c| c.scope.clone());
    let extra = if step_up {
        step_up_scope(granted.as_deref(), challenged.as_deref())
    } else {
        challenged
    };
    let scope = merge_scopes(&[s.settings.scope.as_deref(), extra.as_deref()]);
    let outcome = client
        .authorize(&FlowOptions {
            server_url: s.server_url.clone(),
            resource_metadata_url: s
                .challenge
                .as_ref()
                .and_then(|c| c.resource_metadata_url.clone()),
            server_metadata_url: s.settings.auth_server_metadata_url.clone(),
            scope,
            skip_refresh: true,
            ..FlowOptions::default()
        })
        .await?;
    let Outcome::Redirect(Some(url)) = outcome else {
        return Err(FlowError::Other(
            "OAuth flow did not produce an authorization URL".into(),
        ));
    };
    let requested = Url::parse(&url).ok().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty())
    });
    let state = client.state().await?;
    Ok((url, state, requested))
}

/// The browser's callback or a pasted redirect URL, whichever comes first.
async fn wait_for_response(
    callback: &CallbackServer,
    prompt: &dyn SignInPrompt,
    redirect_url: &str,
    state: &str,
    cancel: &CancellationToken,
) -> Result<AuthResponse, FlowError> {
    let path = Url::parse(redirect_url).ok().map(|u| u.path().to_string());
    let asking = cancel.child_token();
    let from_browser = callback.wait(state, path);
    let from_user = async {
        match prompt.redirect_url(asking.clone()).await {
            Some(input) if !pi_js::trim(&input).is_empty() => {
                response_from_redirect_url(&input, redirect_url, state).map_err(FlowError::Other)
            }
            _ => {
                if asking.is_cancelled() {
                    // The browser won the race; this side only lost it.
                    std::future::pending::<()>().await;
                }
                Err(FlowError::Cancelled)
            }
        }
    };
    let result = tokio::select! {
        r = from_browser => r.map_err(FlowError::Other),
        r = from_user => r,
        _ = cancel.cancelled() => Err(FlowError::Cancelled),
    };
    asking.cancel();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_settings_follow_the_callback_options() {
        let d = loopback_settings(&Settings::default());
        assert_eq!(
            (
                d.host.as_str(),
                d.port,
                d.path.as_str(),
                d.fixed_redirect_url
            ),
            ("127.0.0.1", None, "/callback", None)
        );
        let s = Settings {
            callback_url: Some("http://localhost/cb".into()),
            callback_port: Some(8765),
            ..Settings::default()
        };
        let l = loopback_settings(&s);
        assert_eq!(l.host, "127.0.0.1");
        assert_eq!(l.redirect_host, "localhost");
        assert_eq!(
            l.fixed_redirect_url.as_deref(),
            Some("http://localhost:8765/cb")
        );
        assert_eq!(
            response_from_redirect_url(
                " http://127.0.0.1:9/callback?code=c1&state=s1 ",
                "http://127.0.0.1:9/callback",
                "s1"
            ),
            Ok(AuthResponse {
                code: "c1".into(),
                state: "s1".into(),
                iss: None
            })
        );
        assert_eq!(
            response_from_redirect_url(
                "http://127.0.0.1:9/other?code=c1&state=s1",
                "http://127.0.0.1:9/callback",
                "s1"
            ),
            Err("The redirect URL does not match this sign-in's redirect URI".into())
        );
    }
}
