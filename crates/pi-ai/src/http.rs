//! HTTP transport for the wire APIs: one shared client, idle timeouts on headers and between
//! body chunks, cancellation, and failures described the way Node's fetch (undici) describes
//! them, since those texts reach `errorMessage` and the retry/overflow classifiers.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The Pi version this implementation speaks for (identity headers).
pub const PI_VERSION: &str = "1.6.0";
/// Pi's default `httpIdleTimeoutMs`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_millis(300_000);

/// Text of a stream that stalled longer than the idle timeout.
pub const BODY_TIMEOUT: &str = "terminated: Body Timeout Error (UND_ERR_BODY_TIMEOUT)";
/// Text of a chunked body that ended before its last chunk.
pub const CHUNKED_EOF: &str =
    "terminated: Response does not match the HTTP/1.1 protocol (Invalid EOF state)";
/// Text of a connection closed before the response was complete.
pub const SOCKET_CLOSED: &str = "terminated: other side closed (UND_ERR_SOCKET)";
/// Text of a `content-length` body that ended short on a connection the server closes.
pub const LENGTH_MISMATCH: &str = "terminated: Response body length does not match content-length header (UND_ERR_RES_CONTENT_LENGTH_MISMATCH)";

/// How a response body is delimited, and whether the connection was meant to outlive it. An
/// early end reads differently to undici (Pi's HTTP client) in each case: when the server said
/// `connection: close`, the end of the connection ends the message, and only a chunked or
/// `content-length` body that is then incomplete is an error of its own; on a keep-alive
/// connection any early end is the socket's error (recorded from Pi 1.6.0 in the `faults`
/// fixtures of every wire API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Framing {
    chunked: bool,
    length: bool,
    keep_alive: bool,
}

/// `pi/<version> (<platform>; <runtime>; <arch>)` with Node's platform and arch names.
pub fn default_user_agent() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    format!("pi/{PI_VERSION} ({os}; rust; {arch})")
}

fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .http1_only()
                .build()
                .map_err(|e| format!("Connection error.: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A complete small exchange (token endpoints): POSTs `body` and returns the status and the
/// whole response text. Errors are the connection failure's text.
pub async fn post_text(
    url: &str,
    headers: &[(&str, &str)],
    body: String,
    cancel: &CancellationToken,
) -> Result<(u16, String), String> {
    let client = client()?;
    let mut builder = client.post(url);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let host = host_port(url);
    let fut = async {
        let resp = builder.body(body).send().await?;
        let status = resp.status().as_u16();
        Ok::<_, reqwest::Error>((status, resp.text().await?))
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err("This operation was aborted".to_string()),
        r = tokio::time::timeout(DEFAULT_IDLE_TIMEOUT, fut) => match r {
            Err(_) => Err("Request timed out".to_string()),
            Ok(Err(e)) => Err(connect_detail(&e, &host)),
            Ok(Ok(v)) => Ok(v),
        },
    }
}

/// Why a [`get_text`] exchange produced no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetError {
    /// No response within the timeout.
    Timeout,
    /// No connection; the cause as Node reports it (`connect ECONNREFUSED 127.0.0.1:1`).
    Connect(String),
    Aborted,
}

/// A complete small GET (metadata servers): the status, the response headers (names
/// lowercase) and the whole body text, or why there was none within `timeout`.
pub async fn get_text(
    url: &str,
    headers: &[(&str, &str)],
    timeout: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<(u16, Vec<(String, String)>, String), GetError> {
    let client = client().map_err(GetError::Connect)?;
    let mut builder = client.get(url);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let host = host_port(url);
    let fut = async {
        let resp = builder.send().await?;
        let status = resp.status().as_u16();
        let heads = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        Ok::<_, reqwest::Error>((status, heads, resp.text().await?))
    };
    let limit = timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(GetError::Aborted),
        r = tokio::time::timeout(limit, fut) => match r {
            Err(_) => Err(GetError::Timeout),
            Ok(Err(e)) => Err(GetError::Connect(connect_detail(&e, &host))),
            Ok(Ok(v)) => Ok(v),
        },
    }
}

/// A POST request with a JSON body.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Why a request produced no streaming body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// A non-2xx answer with its body text.
    Status {
        status: u16,
        body: String,
        content_type: Option<String>,
        /// The response headers, names lowercase (AWS names the error type in one).
        headers: Vec<(String, String)>,
    },
    /// No connection; the deepest cause as Node reports it (`connect ECONNREFUSED 127.0.0.1:1`).
    Connect(String),
    /// No response headers within the idle timeout.
    HeadersTimeout,
    /// Cancelled before the response arrived.
    Aborted,
    /// The client could not be built.
    Client(String),
}

/// Why reading the body stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    Aborted,
    /// The full `terminated: ...` text.
    Terminated(String),
}

/// A streaming response body.
#[derive(Debug)]
pub struct Body {
    resp: reqwest::Response,
    framing: Framing,
    idle: Option<Duration>,
    /// When the last chunk arrived (or the body started).
    last_chunk: tokio::time::Instant,
    /// Fires at the earliest moment the body could have been idle too long; armed once and
    /// moved on only when it fires, not per chunk (re-arming per chunk cost more than the chunk).
    idle_timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// The wait on the request's cancellation, registered once for the whole body.
    cancelled: Option<std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>>,
}

fn effective(idle: Option<Duration>) -> Option<Duration> {
    match idle {
        None => Some(DEFAULT_IDLE_TIMEOUT),
        Some(d) if d.is_zero() => None,
        d => d,
    }
}

async fn with_idle<F: std::future::Future>(idle: Option<Duration>, f: F) -> Option<F::Output> {
    match idle {
        Some(d) => tokio::time::timeout(d, f).await.ok(),
        None => Some(f.await),
    }
}

/// Sends `req`; resolves once response headers arrive.
pub async fn send(
    req: Request,
    cancel: &CancellationToken,
    idle: Option<Duration>,
) -> Result<Body, SendError> {
    let client = client().map_err(SendError::Client)?;
    let mut builder = client.post(&req.url);
    for (k, v) in &req.headers {
        builder = builder.header(k, v);
    }
    let host = host_port(&req.url);
    let idle = effective(idle);
    let fut = builder.body(req.body).send();
    let resp = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(SendError::Aborted),
        r = with_idle(idle, fut) => match r {
            None => return Err(SendError::HeadersTimeout),
            Some(Err(e)) => return Err(SendError::Connect(connect_detail(&e, &host))),
            Some(Ok(resp)) => resp,
        },
    };
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let connection = header("connection").unwrap_or_default();
    let keep_alive = if resp.version() == reqwest::Version::HTTP_10 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    };
    let framing = Framing {
        chunked,
        length: !chunked && header("content-length").is_some(),
        keep_alive,
    };
    let mut body = Body {
        resp,
        framing,
        idle,
        last_chunk: tokio::time::Instant::now(),
        idle_timer: None,
        cancelled: None,
    };
    if !(200..300).contains(&status) {
        let headers = body.headers();
        let mut text = Vec::new();
        loop {
            match body.chunk(cancel).await {
                Ok(Some(c)) => text.extend_from_slice(&c),
                Ok(None) | Err(ReadError::Terminated(_)) => break,
                Err(ReadError::Aborted) => return Err(SendError::Aborted),
            }
        }
        return Err(SendError::Status {
            status,
            body: String::from_utf8_lossy(&text).into_owned(),
            content_type,
            headers,
        });
    }
    Ok(body)
}

impl Body {
    /// The response's status code.
    pub fn status(&self) -> u16 {
        self.resp.status().as_u16()
    }

    /// The response's headers, names lowercase, in order.
    pub fn headers(&self) -> Vec<(String, String)> {
        self.resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect()
    }

    /// The whole body (small JSON answers), read chunk by chunk under `cancel`.
    pub async fn body(&mut self, cancel: &CancellationToken) -> Result<Vec<u8>, ReadError> {
        let mut bytes = Vec::new();
        while let Some(c) = self.chunk(cancel).await? {
            bytes.extend_from_slice(&c);
        }
        Ok(bytes)
    }

    /// The next chunk, `None` at the end of the body. `cancel` is the same token on every
    /// call.
    pub async fn chunk(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<bytes::Bytes>, ReadError> {
        let framing = self.framing;
        let last_chunk = self.last_chunk;
        // An already cancelled token makes the first poll ready: no chunk is taken after it.
        let cancelled = self
            .cancelled
            .get_or_insert_with(|| Box::pin(cancel.clone().cancelled_owned()));
        let mut timer = self.idle.map(|d| {
            let timer = self
                .idle_timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(last_chunk + d)));
            (timer, d)
        });
        let mut read = std::pin::pin!(self.resp.chunk());
        let r = std::future::poll_fn(|cx| {
            if cancelled.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(Err(ReadError::Aborted));
            }
            if let std::task::Poll::Ready(r) = read.as_mut().poll(cx) {
                return std::task::Poll::Ready(Ok(r));
            }
            if let Some((timer, d)) = timer.as_mut() {
                let d = *d;
                while timer.as_mut().poll(cx).is_ready() {
                    let due = last_chunk + d;
                    if tokio::time::Instant::now() >= due {
                        return std::task::Poll::Ready(Err(ReadError::Terminated(
                            BODY_TIMEOUT.to_string(),
                        )));
                    }
                    timer.as_mut().reset(due);
                }
            }
            std::task::Poll::Pending
        })
        .await?;
        self.last_chunk = tokio::time::Instant::now();
        r.map_err(|_| ReadError::Terminated(body_error_text(framing)))
    }

    /// The reason phrase of the status (`Bad Gateway`), for APIs that quote it.
    pub fn status_text(status: u16) -> &'static str {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("")
    }
}

fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e.source();
    let mut last = e.to_string();
    while let Some(err) = cur {
        last = err.to_string();
        cur = err.source();
    }
    last
}

fn body_error_text(framing: Framing) -> String {
    // A reset counts as the end of the connection when the server announced that end.
    if !framing.keep_alive {
        if framing.chunked {
            return CHUNKED_EOF.to_string();
        }
        if framing.length {
            return LENGTH_MISMATCH.to_string();
        }
    }
    // On a keep-alive connection undici reports a reset after part of the body like a close
    // (checked against Node 22 with both a FIN and an RST after the first chunk).
    SOCKET_CLOSED.to_string()
}

fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
    {
        authority.to_string()
    } else if url.starts_with("https") {
        format!("{authority}:443")
    } else {
        format!("{authority}:80")
    }
}

fn connect_detail(e: &reqwest::Error, host: &str) -> String {
    use std::io::ErrorKind::*;
    let text = chain_text(e);
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if text.contains("dns error") || text.contains("failed to lookup address") {
        // getaddrinfo's EAI_AGAIN (no answer from the resolver) reads differently in Node.
        let code = if text.contains("Temporary failure in name resolution") {
            "EAI_AGAIN"
        } else {
            "ENOTFOUND"
        };
        return format!("getaddrinfo {code} {name}");
    }
    // hyper's wording for a server that closed the connection without answering; undici
    // (Pi's HTTP client) calls it "other side closed".
    if text.contains("connection closed before message completed") {
        return "other side closed (UND_ERR_SOCKET)".to_string();
    }
    match io_kind(e) {
        Some(ConnectionRefused) => format!("connect ECONNREFUSED {host}"),
        Some(ConnectionReset) => "read ECONNRESET".to_string(),
        Some(TimedOut) => format!("connect ETIMEDOUT {host}"),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_for_connection_errors() {
        assert_eq!(
            host_port("http://127.0.0.1:59999/v1/chat"),
            "127.0.0.1:59999"
        );
        assert_eq!(
            host_port("https://api.example.test/v1"),
            "api.example.test:443"
        );
        assert!(default_user_agent().starts_with("pi/1.6.0 ("));
    }
}
