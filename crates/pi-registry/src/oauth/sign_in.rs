//! What every sign-in flow shares: the terminal side ([`Interaction`] and what it is shown),
//! PKCE and random state, and reading the browser's request on a loopback callback server.
//! The flows are in `login.rs`, `chatgpt_login.rs` and `radius_login.rs`.

use base64::Engine as _;
use std::future::Future;
use std::pin::Pin;
use tokio::io::AsyncReadExt;

/// What the user is shown while signing in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A sign-in page to open (and how to finish).
    AuthUrl {
        url: String,
        instructions: Option<String>,
    },
    /// A code to enter at a verification page.
    DeviceCode {
        user_code: String,
        verification_uri: String,
    },
    Progress(String),
}

/// A choice among sign-in methods: `(id, label)`.
pub type Choice = (&'static str, &'static str);

pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The terminal side of a sign-in.
pub trait Interaction: Send {
    fn notify(&mut self, notice: Notice);
    /// One of `options` (ids); the first is the browser sign-in when there is one.
    fn select<'a>(&'a mut self, message: &'a str, options: &'a [Choice]) -> Answer<'a>;
    /// A line of text (`placeholder` shown as a hint).
    fn ask<'a>(&'a mut self, message: &'a str, placeholder: Option<&'a str>) -> Answer<'a>;
    /// A line pasted while a browser callback may still arrive; cancelled when it does.
    fn paste<'a>(&'a mut self, message: &'a str, placeholder: Option<&'a str>) -> Answer<'a>;
    /// This installation's stable id (a UUID, created on first use), which Sign in with
    /// ChatGPT names the agent host by; `None` where there is none.
    fn device_id(&mut self) -> Option<String> {
        None
    }
}

pub(crate) fn random_b64url(n: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; n];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| "no random numbers available".to_string())?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCE verifier and its S256 challenge.
pub fn pkce() -> Result<(String, String), String> {
    let verifier = random_b64url(32)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
    Ok((verifier, challenge))
}

pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The head of a browser's request to a callback server (up to its blank line, at most
/// 8 KiB): a request that arrives in several pieces is read whole before it is answered.
pub(crate) async fn read_request_head(sock: &mut tokio::net::TcpStream) -> String {
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    while n < buf.len() {
        match sock.read(&mut buf[n..]).await {
            Ok(0) | Err(_) => break,
            Ok(got) => n += got,
        }
        if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(flavor = "current_thread")]
    async fn a_callback_request_in_pieces_is_read_whole() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let browser = tokio::spawn(async move {
            let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
            for piece in ["GET /cb", "?code=c&state=s HTTP/1.1\r\n", "host: x\r\n\r\n"] {
                conn.write_all(piece.as_bytes()).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            conn
        });
        let (mut sock, _) = listener.accept().await.unwrap();
        let head = read_request_head(&mut sock).await;
        assert_eq!(head, "GET /cb?code=c&state=s HTTP/1.1\r\nhost: x\r\n\r\n");
        drop(browser.await.unwrap());
    }
}
