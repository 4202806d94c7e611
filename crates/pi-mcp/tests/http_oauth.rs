//! Streamable HTTP beyond single requests, and OAuth, against the HTTP test server of
//! `pi-test-support` with its loopback authorization server: the server-to-client `GET` stream,
//! a session the server forgot, sign-in (browser callback and pasted redirect URL), refresh
//! before expiry and after a 401, and a grant the server revoked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_mcp::config::{self, Scope, ServerEntry};
use pi_mcp::connection::{AuthEnv, Connection, State};
use pi_mcp::log::ServerLog;
use pi_mcp::oauth::signin::{self, BoxFuture, SignIn, SignInPrompt};
use pi_mcp::oauth::store::CredentialStore;
use pi_test_support::mcp_http::{self, HttpOptions, OAuthOptions};
use pi_test_support::mcp_server::ServerOptions;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn entry(url: &str) -> ServerEntry {
    let (config, transport) = config::validate("web", &json!({"url": url})).unwrap();
    ServerEntry {
        name: "web".into(),
        config,
        transport,
        source: "test".into(),
        scope: Scope::Global,
        override_path: None,
    }
}

fn options(oauth: Option<OAuthOptions>) -> HttpOptions {
    HttpOptions {
        server: ServerOptions::from_args(Vec::<String>::new()).unwrap(),
        oauth,
        get_stream: true,
        ..HttpOptions::default()
    }
}

fn connection(url: &str, dir: &std::path::Path, changes: Arc<AtomicUsize>) -> Arc<Connection> {
    let log = Arc::new(ServerLog::new(dir.join("mcp.log")));
    let env = AuthEnv {
        credentials: Some(CredentialStore::new(dir)),
        provider_token: None,
    };
    Connection::with_auth(
        entry(url),
        dir,
        log,
        Arc::new(move |_: &Connection, tools: bool| {
            if tools {
                changes.fetch_add(1, Ordering::SeqCst);
            }
        }),
        env,
    )
}

/// A server with `opts`, a fresh agent dir, and a connection to the server that counts no
/// tool-list changes.
async fn start(
    opts: HttpOptions,
) -> (
    mcp_http::HttpServer,
    pi_test_support::TempDir,
    Arc<Connection>,
) {
    let server = mcp_http::serve(opts, 0).await.unwrap();
    let dir = pi_test_support::TempDir::new();
    let conn = connection(&server.url(), dir.path(), Arc::default());
    (server, dir, conn)
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

fn count(log: &Mutex<Vec<String>>, needle: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(needle))
        .count()
}

#[tokio::test]
async fn the_get_stream_carries_notifications_and_a_forgotten_session_is_opened_anew() {
    let server = mcp_http::serve(options(None), 0).await.unwrap();
    let dir = pi_test_support::TempDir::new();
    let changes = Arc::new(AtomicUsize::new(0));
    let conn = connection(&server.url(), dir.path(), Arc::clone(&changes));
    conn.client().await.unwrap();
    wait_until("the GET stream", || server.get_streams() == 1).await;
    assert_eq!(changes.load(Ordering::SeqCst), 1);
    server.notify(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    wait_until("the refreshed tool list", || {
        changes.load(Ordering::SeqCst) == 2
    })
    .await;
    assert_eq!(count(&server.log, "tools/list"), 2);

    // The server restarted: the call goes to a new session, once.
    server.expire_sessions();
    let r = conn
        .call_tool(
            "echo",
            json!({"text": "again"}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("again"));
    assert_eq!(count(&server.log, "\"initialize\""), 2);
    // Refused on the forgotten session, then sent on the new one.
    assert_eq!(
        count(
            &server.log,
            "POST session-1 {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\""
        ),
        1
    );
    assert_eq!(count(&server.log, "\"tools/call\""), 2);
    conn.close().await;
}

/// Pi's client awaits the `initialized` notification's answer, and so opens its `GET` stream,
/// before its first request: a session that ends right after connecting has still asked for
/// the stream, even when the server is slow to answer the notification.
#[tokio::test]
async fn requests_wait_for_the_initialized_notification_and_its_get_stream() {
    let (server, _dir, conn) = start(HttpOptions {
        notification_delay_ms: 300,
        ..options(None)
    })
    .await;
    conn.client().await.unwrap();
    conn.close().await;
    let mut log: Vec<String> = server
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|l| {
            let method = serde_json::from_str::<Value>(l.splitn(3, ' ').nth(2).unwrap_or(""))
                .ok()
                .and_then(|m| m.get("method").and_then(Value::as_str).map(String::from));
            let verb = l.split(' ').next().unwrap_or("");
            method.unwrap_or_else(|| verb.to_string())
        })
        .collect();
    // The stream and the first request go out together, in either order.
    log[2..4].sort();
    assert_eq!(
        log,
        [
            "initialize",
            "notifications/initialized",
            "GET",
            "tools/list",
            "DELETE"
        ]
    );
}

/// Plays the browser: opens the authorization URL (the test server approves at once) and,
/// when `paste` is set, hands the redirect URL back as if pasted instead of following it.
struct Browser {
    paste: bool,
    location: Arc<Mutex<Option<String>>>,
    opened: Arc<Mutex<Vec<String>>>,
}

impl Browser {
    fn new(paste: bool) -> Browser {
        Browser {
            paste,
            location: Arc::default(),
            opened: Arc::default(),
        }
    }
}

impl SignInPrompt for Browser {
    fn show_authorization_url(&self, url: &str) -> BoxFuture<'_, ()> {
        self.opened.lock().unwrap().push(url.to_string());
        let (url, paste, location) = (url.to_string(), self.paste, Arc::clone(&self.location));
        tokio::spawn(async move {
            let policy = if paste {
                reqwest::redirect::Policy::none()
            } else {
                reqwest::redirect::Policy::limited(5)
            };
            let client = reqwest::Client::builder().redirect(policy).build().unwrap();
            let response = client.get(&url).send().await.unwrap();
            if paste {
                let to = response.headers()["location"].to_str().unwrap().to_string();
                *location.lock().unwrap() = Some(to);
            } else {
                assert_eq!(response.status().as_u16(), 200);
                let page = response.text().await.unwrap();
                assert!(page.contains("Signed in to the MCP server."), "{page}");
            }
        });
        Box::pin(async {})
    }

    fn redirect_url(&self, cancel: CancellationToken) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            if !self.paste {
                cancel.cancelled().await;
                return None;
            }
            loop {
                if let Some(l) = self.location.lock().unwrap().clone() {
                    return Some(format!("  {l}  "));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    }
}

async fn sign_in(conn: &Connection, dir: &std::path::Path, browser: &Browser) {
    let url = conn.oauth_url().unwrap().to_string();
    let s = SignIn {
        server_url: url.clone(),
        store: CredentialStore::new(dir).for_server("web", &url),
        settings: conn.oauth_settings().unwrap(),
        challenge: conn.challenge(),
        cancel: CancellationToken::new(),
    };
    signin::sign_in(&s, browser).await.unwrap();
    conn.clear_challenge();
}

#[tokio::test]
async fn oauth_servers_sign_in_refresh_and_ask_again_when_the_grant_is_gone() {
    let (server, dir, conn) = start(options(Some(OAuthOptions::default()))).await;
    let e = conn.client().await.err().unwrap();
    assert_eq!(
        e,
        "MCP server \"web\" requires sign-in. Run /mcp to sign in."
    );
    assert_eq!(conn.state(), Some(State::NeedsAuth));
    let challenge = conn.challenge().unwrap();
    assert_eq!(
        challenge.resource_metadata_url,
        Some(format!(
            "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
            server.port
        ))
    );

    let browser = Browser::new(false);
    sign_in(&conn, dir.path(), &browser).await;
    let opened = browser.opened.lock().unwrap()[0].clone();
    let auth_url = reqwest::Url::parse(&opened).unwrap();
    let params: Vec<(String, String)> = auth_url.query_pairs().into_owned().collect();
    let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "response_type",
            "client_id",
            "code_challenge",
            "code_challenge_method",
            "redirect_uri",
            "state",
            "resource"
        ]
    );
    assert!(params[4].1.starts_with("http://127.0.0.1:") && params[4].1.ends_with("/callback"));
    assert_eq!(params[6].1, server.url());

    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("mcp-auth.json")).unwrap())
            .unwrap();
    let key = format!("mcp__web|{}", server.url());
    let state = &stored[&key];
    let fields: Vec<&str> = state
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "serverUrl",
            "discovery",
            "clientInformation",
            "oauthState",
            "codeVerifier",
            "tokens",
            "tokensExpireAt"
        ]
    );
    assert_eq!(
        state["clientInformation"]["client_name"],
        json!("pi"),
        "{state}"
    );
    assert_eq!(state["tokens"]["access_token"], json!("access-3"));

    conn.reconnect().await.unwrap();
    assert_eq!(conn.state(), Some(State::Connected));

    // A rejected token is refreshed and the call made again.
    server.revoke_access_tokens();
    let r = conn
        .call_tool(
            "echo",
            json!({"text": "hi"}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("hi"));
    assert_eq!(count(&server.log, "POST /token"), 2);

    // Without a usable refresh token the user has to sign in again.
    server.revoke_access_tokens();
    server.revoke_refresh_tokens();
    let e = conn
        .call_tool(
            "echo",
            json!({"text": "hi"}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e,
        "MCP server \"web\" requires sign-in. Run /mcp to sign in."
    );
    assert_eq!(conn.state(), Some(State::NeedsAuth));

    // This time the redirect URL is pasted; the stored client is used again.
    let browser = Browser::new(true);
    sign_in(&conn, dir.path(), &browser).await;
    assert_eq!(count(&server.log, "POST /register"), 1);
    conn.reconnect().await.unwrap();
    assert_eq!(conn.state(), Some(State::Connected));
    conn.close().await;
}

#[tokio::test]
async fn tokens_about_to_expire_are_refreshed_before_they_are_sent() {
    let oauth = OAuthOptions {
        expires_in: 10,
        ..OAuthOptions::default()
    };
    let (server, dir, conn) = start(options(Some(oauth))).await;
    let _ = conn.client().await;
    sign_in(&conn, dir.path(), &Browser::new(false)).await;
    assert_eq!(count(&server.log, "POST /token"), 1);
    conn.reconnect().await.unwrap();
    // Ten seconds is within the 30 s margin: every request refreshes first, and no 401 happens.
    assert!(count(&server.log, "POST /token") >= 2);
    conn.close().await;
}

/// The `scope` parameter of an authorization URL.
fn requested_scope(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
}

#[tokio::test]
async fn a_server_asking_for_more_scope_needs_a_new_sign_in_that_keeps_the_old_scope() {
    let oauth = OAuthOptions {
        scopes: Some(vec!["files:read".into()]),
        tool_scopes: vec![("add".into(), "files:write".into())],
        ..OAuthOptions::default()
    };
    let (server, dir, conn) = start(options(Some(oauth))).await;
    assert!(conn.client().await.is_err());
    let browser = Browser::new(false);
    sign_in(&conn, dir.path(), &browser).await;
    let first = browser.opened.lock().unwrap()[0].clone();
    // The resource's scopes_supported when nothing else names a scope.
    assert_eq!(requested_scope(&first).as_deref(), Some("files:read"));
    conn.reconnect().await.unwrap();
    let call = |tool: &'static str, args: Value| {
        let conn = Arc::clone(&conn);
        async move {
            conn.call_tool(tool, args, &CancellationToken::new(), None)
                .await
        }
    };
    let r = call("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r["content"][0]["text"], json!("hi"));

    // 403 insufficient_scope: no refresh (it would keep the scope), the user signs in again.
    let e = call("add", json!({"a": 1, "b": 2})).await.unwrap_err();
    assert_eq!(
        e,
        "MCP server \"web\" requires sign-in. Run /mcp to sign in."
    );
    assert_eq!(conn.state(), Some(State::NeedsAuth));
    let challenge = conn.challenge().unwrap();
    assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(challenge.scope.as_deref(), Some("files:write"));
    assert_eq!(count(&server.log, "POST /token"), 1);

    // The new grant asks for the challenged scope on top of the granted one, without trying
    // the stored refresh token first.
    let browser = Browser::new(false);
    sign_in(&conn, dir.path(), &browser).await;
    let second = browser.opened.lock().unwrap()[0].clone();
    assert_eq!(
        requested_scope(&second).as_deref(),
        Some("files:read files:write")
    );
    assert_eq!(count(&server.log, "POST /token"), 2);
    conn.reconnect().await.unwrap();
    let r = call("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert!(r["isError"] != json!(true), "{r}");
    let r = call("echo", json!({"text": "still"})).await.unwrap();
    assert_eq!(r["content"][0]["text"], json!("still"));
    conn.close().await;
}

#[tokio::test]
async fn a_dropped_get_stream_is_opened_again_after_a_pause() {
    let server = mcp_http::serve(options(None), 0).await.unwrap();
    let dir = pi_test_support::TempDir::new();
    let changes = Arc::new(AtomicUsize::new(0));
    let conn = connection(&server.url(), dir.path(), Arc::clone(&changes));
    conn.client().await.unwrap();
    wait_until("the GET stream", || server.get_streams() == 1).await;
    let gets = || count(&server.log, "GET session-1");
    assert_eq!(gets(), 1);
    server.drop_streams();
    let dropped = std::time::Instant::now();
    wait_until("the GET stream again", || server.get_streams() == 1).await;
    // Reopened after the first back-off delay (1 s), on the same session.
    assert!(
        dropped.elapsed() >= Duration::from_millis(900),
        "{:?}",
        dropped.elapsed()
    );
    assert_eq!(gets(), 2);
    server.notify(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    wait_until("the refreshed tool list", || {
        changes.load(Ordering::SeqCst) == 2
    })
    .await;
    conn.close().await;
}

#[tokio::test]
async fn a_response_stream_cut_off_is_resumed_with_its_last_event_id() {
    let (server, _dir, conn) = start(HttpOptions {
        cut_call_streams: 1,
        get_stream: false,
        ..options(None)
    })
    .await;
    conn.client().await.unwrap();
    let started = std::time::Instant::now();
    let r = conn
        .call_tool(
            "echo",
            json!({"text": "resumed"}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("resumed"));
    // The server's `retry: 50` replaces the 1 s back-off.
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // Sent once, then fetched with GET (the first GET is the server-to-client stream, 405).
    assert_eq!(count(&server.log, "\"tools/call\""), 1);
    assert_eq!(count(&server.log, "GET session-1"), 2);
    conn.close().await;
}
