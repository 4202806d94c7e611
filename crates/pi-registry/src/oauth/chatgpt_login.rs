//! Sign in with ChatGPT for the `openai` provider (Pi's `openai-chatgpt` login): a public client
//! registered anew at each login (`dynamic_agent_client`; OpenAI returns the issued client id
//! in the callback), PKCE, the browser's redirect to `http://127.0.0.1:1455/auth/callback` or the
//! pasted redirect URL, and a token whose grant must include direct token use. The agent host is
//! named by this installation's device id.

use super::refresh::{CHATGPT_RESOURCE, chatgpt_credential, chatgpt_token_request};
use super::sign_in::{Interaction, Notice, pkce, random_b64url};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

const AUTHORIZE_URL: &str = "https://auth.openai.com/api/accounts/authorize";
const DYNAMIC_CLIENT_ID: &str = "dynamic_agent_client";
const AGENT_NAME_HINT: &str = "Pi";
const CALLBACK_PORT: u16 = 1455;
const CALLBACK_PATH: &str = "/auth/callback";
const REDIRECT_URI: &str = "http://127.0.0.1:1455/auth/callback";
const SCOPE: &str = "openid profile email offline_access resource.invoke chatgpt.tokens.use.direct";

/// What the redirect carries: the code and the client id OpenAI issued.
#[derive(Debug, PartialEq)]
struct Authorization {
    code: String,
    client_id: String,
}

/// A query's parameters, decoded.
fn params(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                super::sign_in::percent_decode(&k.replace('+', " ")),
                super::sign_in::percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

fn param(query: &[(String, String)], name: &str) -> Option<String> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// `authorizationResultFromCallback`: Pi's checks, in its order and words.
fn from_callback(query: &[(String, String)], state: &str) -> Result<Authorization, String> {
    let code = param(query, "code")
        .filter(|c| !c.is_empty())
        .ok_or("Missing authorization code")?;
    let got = param(query, "state")
        .filter(|s| !s.is_empty())
        .ok_or("Missing OAuth state")?;
    if got != state {
        return Err("OAuth state mismatch".into());
    }
    let client_id = param(query, "client_id")
        .map(|c| pi_js::trim(&c).to_string())
        .filter(|c| !c.is_empty())
        .ok_or("OpenAI OAuth registration callback did not contain an issued client ID")?;
    Ok(Authorization { code, client_id })
}

/// A pasted redirect URL: it must be the redirect URI's, with the callback's parameters.
fn from_pasted(input: &str, state: &str) -> Result<Authorization, String> {
    let url = reqwest::Url::parse(pi_js::trim(input))
        .map_err(|_| "Paste the full callback URL from the browser".to_string())?;
    let same_origin = url.scheme() == "http"
        && url.host_str() == Some("127.0.0.1")
        && url.port_or_known_default() == Some(CALLBACK_PORT);
    if !same_origin || url.path() != CALLBACK_PATH {
        return Err(format!(
            "The pasted callback URL must start with {REDIRECT_URI}"
        ));
    }
    let query = params(url.query().unwrap_or(""));
    if let Some(error) = param(&query, "error").filter(|e| !e.is_empty()) {
        return Err(format!("ChatGPT authorization failed: {error}"));
    }
    from_callback(&query, state)
}

fn page(status: u16, text: &str) -> String {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>pi</title><p>{}</p>",
        text.replace('&', "&amp;").replace('<', "&lt;")
    );
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Serves the redirect on port 1455 until a callback succeeds or reports an error; callbacks
/// that fail a check are answered 400 and the wait goes on, as in Pi.
async fn serve_callback(
    listener: tokio::net::TcpListener,
    state: String,
) -> Result<Authorization, String> {
    loop {
        let (mut sock, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let head = super::sign_in::read_request_head(&mut sock).await;
        let target = head.split(' ').nth(1).unwrap_or("/").to_string();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let query = params(query);
        let (answer, outcome) = if path != CALLBACK_PATH {
            (page(404, "Callback route not found."), None)
        } else if let Some(error) = param(&query, "error").filter(|e| !e.is_empty()) {
            (
                page(400, &format!("ChatGPT was not connected. Error: {error}")),
                Some(Err(format!("ChatGPT authorization failed: {error}"))),
            )
        } else {
            match from_callback(&query, &state) {
                Ok(a) => (
                    page(
                        200,
                        "ChatGPT authentication completed. You can close this window.",
                    ),
                    Some(Ok(a)),
                ),
                Err(e) => (page(400, &e), None),
            }
        };
        let _ = sock.write_all(answer.as_bytes()).await;
        if let Some(o) = outcome {
            return o;
        }
    }
}

/// `urn:uuid:<device id>`: how OpenAI tells installations apart.
fn agent_host_id(device: Option<String>) -> Result<String, String> {
    let d = device.unwrap_or_default();
    let b = d.as_bytes();
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if !uuid {
        return Err(
            "Sign in with ChatGPT requires a device ID (UUID) for this installation".into(),
        );
    }
    Ok(format!("urn:uuid:{}", d.to_ascii_lowercase()))
}

pub(crate) async fn chatgpt(ui: &mut dyn Interaction) -> Result<Value, String> {
    let host_id = agent_host_id(ui.device_id())?;
    let (verifier, challenge) = pkce()?;
    let state = random_b64url(32)?;
    let nonce = random_b64url(32)?;
    let host = std::env::var("PI_OAUTH_CALLBACK_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "127.0.0.1".into());
    // Another login (or the Codex CLI) holding the port would reject this login's callback.
    let listener = match tokio::net::TcpListener::bind((host.as_str(), CALLBACK_PORT)).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(format!(
                "Port {CALLBACK_PORT} is in use, probably by an unfinished login in another pi session or by the Codex CLI. Cancel that login and try again."
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let query = super::refresh::form(&[
        ("client_id", DYNAMIC_CLIENT_ID),
        ("agent_name_hint", AGENT_NAME_HINT),
        ("ext_agent_host_id", &host_id),
        ("response_type", "code"),
        ("redirect_uri", REDIRECT_URI),
        ("resource", CHATGPT_RESOURCE),
        ("scope", SCOPE),
        ("state", &state),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("nonce", &nonce),
    ]);
    ui.notify(Notice::AuthUrl {
        url: format!("{AUTHORIZE_URL}?{query}"),
        instructions: Some("Complete sign-in in your browser. If the callback does not complete, paste the final redirect URL here.".into()),
    });
    let server = serve_callback(listener, state.clone());
    let result = tokio::select! {
        r = server => r,
        pasted = ui.paste(
            "Complete login in your browser, or paste the final redirect URL here:",
            Some(REDIRECT_URI),
        ) => pasted.and_then(|input| from_pasted(&input, &state)),
    }?;
    ui.notify(Notice::Progress(
        "Exchanging authorization code for tokens...".into(),
    ));
    let token = chatgpt_token_request(&[
        ("grant_type", "authorization_code"),
        ("client_id", &result.client_id),
        ("code", &result.code),
        ("code_verifier", &verifier),
        ("redirect_uri", REDIRECT_URI),
        ("resource", CHATGPT_RESOURCE),
    ])
    .await?;
    // The ID token is not read, but its presence is part of the answer's contract.
    if token["id_token"]
        .as_str()
        .is_none_or(|t| pi_js::trim(t).is_empty())
    {
        return Err("OpenAI OAuth token response did not contain an ID token".into());
    }
    chatgpt_credential(&token, &result.client_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_are_checked_in_pis_order() {
        let q = |s: &str| params(s);
        assert_eq!(
            from_callback(&q("state=s&client_id=c"), "s").unwrap_err(),
            "Missing authorization code"
        );
        assert_eq!(
            from_callback(&q("code=x&client_id=c"), "s").unwrap_err(),
            "Missing OAuth state"
        );
        assert_eq!(
            from_callback(&q("code=x&state=t&client_id=c"), "s").unwrap_err(),
            "OAuth state mismatch"
        );
        assert_eq!(
            from_callback(&q("code=x&state=s&client_id=%20"), "s").unwrap_err(),
            "OpenAI OAuth registration callback did not contain an issued client ID"
        );
        assert_eq!(
            from_callback(&q("code=x%2By&state=s&client_id=c1"), "s").unwrap(),
            Authorization {
                code: "x+y".into(),
                client_id: "c1".into()
            }
        );
    }

    #[test]
    fn pasted_urls_must_be_the_redirect() {
        assert_eq!(
            from_pasted("not a url", "s").unwrap_err(),
            "Paste the full callback URL from the browser"
        );
        assert_eq!(
            from_pasted("http://localhost:1455/auth/callback?code=x", "s").unwrap_err(),
            "The pasted callback URL must start with http://127.0.0.1:1455/auth/callback"
        );
        assert_eq!(
            from_pasted("http://127.0.0.1:1455/auth/callback?error=denied", "s").unwrap_err(),
            "ChatGPT authorization failed: denied"
        );
        assert!(
            from_pasted(
                " http://127.0.0.1:1455/auth/callback?code=x&state=s&client_id=c ",
                "s"
            )
            .is_ok()
        );
        assert_eq!(
            agent_host_id(Some("0191A2B3-C4D5-4E6F-8899-AABBCCDDEEFF".into())).unwrap(),
            "urn:uuid:0191a2b3-c4d5-4e6f-8899-aabbccddeeff"
        );
        assert!(agent_host_id(None).is_err());
    }
}
