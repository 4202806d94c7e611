//! A loopback mock LLM server. It answers each request with the next scripted [`Reply`] in the
//! wire format of the endpoint that was hit, logs every request, and can hold a stream at a named
//! gate until the test opens it.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use pi_test_support::mock::{MockLlm, Reply};
//! let mock = MockLlm::start(vec![Reply::text("pong")]).await?;
//! let base = mock.base_url(); // http://127.0.0.1:<port>
//! # Ok(()) }
//! ```

pub mod gates;
pub mod http;
pub mod llama;
pub mod script;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;

pub use gates::Gates;
pub use script::{Reply, Step, UsageSpec};

use crate::sse::{Frame, RenderContext, anthropic, openai_chat};

/// The wire API a request path belongs to. New APIs (OpenAI Responses, Google Generative AI) add a
/// variant here, a route in [`WireApi::from_path`] and a renderer module in [`crate::sse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    AnthropicMessages,
    OpenAiChat,
}

impl WireApi {
    pub fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/messages" => Some(WireApi::AnthropicMessages),
            "/v1/chat/completions" | "/chat/completions" => Some(WireApi::OpenAiChat),
            _ => None,
        }
    }

    fn render(self, reply: &Reply, ctx: &RenderContext) -> Vec<Frame> {
        match self {
            WireApi::AnthropicMessages => anthropic::render(reply, ctx),
            WireApi::OpenAiChat => openai_chat::render(reply, ctx),
        }
    }

    fn error_body(self, status: u16) -> Value {
        match self {
            WireApi::AnthropicMessages => anthropic::error_body(status),
            WireApi::OpenAiChat => openai_chat::error_body(status),
        }
    }
}

/// One request as the mock received it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query string.
    pub path: String,
    /// All headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or a string when it is not JSON.
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Pacing of streamed answers.
///
/// With `progress` (a counter the test bumps for every record the client writes), the mock
/// streams in lock-step: after the response head and after each event the client must answer
/// with a record, it waits until the counter moves (at most `pace_timeout`). Snapshots such as
/// the usage inside `message_update` then do not depend on how fast the client reads.
/// Summarization requests (see [`crate::summarization`]), which produce no records, are not
/// paced. Without
/// `progress`, fixed pauses approximate the same.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Pause after the response head, before the first event (unpaced streams only).
    pub header_delay: Duration,
    /// Pause after each streamed event.
    pub chunk_delay: Duration,
    pub progress: Option<tokio::sync::watch::Receiver<u64>>,
    pub pace_timeout: Duration,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            header_delay: Duration::from_millis(30),
            chunk_delay: Duration::from_millis(10),
            progress: None,
            // Wide enough for a debug build among 16 parallel scenarios on 2 cores: a gate is
            // reached after this wait, and a test's next command must not overtake the record.
            pace_timeout: Duration::from_millis(1500),
        }
    }
}

/// Waits until the progress counter moves past `from` (or the timeout passes).
async fn paced(progress: &Option<tokio::sync::watch::Receiver<u64>>, from: u64, max: Duration) {
    let Some(rx) = progress else { return };
    let mut rx = rx.clone();
    let _ = tokio::time::timeout(max, rx.wait_for(|v| *v > from)).await;
}

fn progress_now(progress: &Option<tokio::sync::watch::Receiver<u64>>) -> u64 {
    progress.as_ref().map(|rx| *rx.borrow()).unwrap_or(0)
}

struct State {
    queue: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    unscripted: AtomicUsize,
    active: AtomicUsize,
    activity: Notify,
    gates: Gates,
    config: MockConfig,
    /// Fixed JSON answers by `"<METHOD> <path and query>"` (a llama.cpp server's model list and
    /// props), served before the scripted replies and not consuming them.
    routes: Mutex<Vec<(String, Value)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A running mock server; stops when dropped.
pub struct MockLlm {
    addr: SocketAddr,
    state: Arc<State>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl MockLlm {
    /// Starts on a free loopback port with the default pacing.
    pub async fn start(replies: Vec<Reply>) -> io::Result<Self> {
        Self::start_with(replies, MockConfig::default()).await
    }

    pub async fn start_with(replies: Vec<Reply>, config: MockConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            queue: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
            unscripted: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            activity: Notify::new(),
            gates: Gates::new(),
            config,
            routes: Mutex::new(Vec::new()),
        });
        let accept_state = state.clone();
        let accept_task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let st = accept_state.clone();
                        st.active.fetch_add(1, Ordering::SeqCst);
                        connections.spawn(async move {
                            // A failed write means the client went away; nothing to report.
                            let _ = serve_connection(stream, &st).await;
                            st.active.fetch_sub(1, Ordering::SeqCst);
                            st.activity.notify_waiters();
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(MockLlm {
            addr,
            state,
            accept_task,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>` (no trailing slash, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: Reply) {
        lock(&self.state.queue).push_back(reply);
    }

    /// Answers `route` (`"GET /models"`, matched against method, path and query) with `body`
    /// (status 200, JSON) from now on; a later call for the same route replaces the answer.
    pub fn set_route(&self, route: &str, body: Value) {
        let mut routes = lock(&self.state.routes);
        routes.retain(|(r, _)| r != route);
        routes.push((route.to_string(), body));
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    pub fn gates(&self) -> &Gates {
        &self.state.gates
    }

    pub fn open_gate(&self, name: &str) {
        self.state.gates.open(name);
    }

    /// Number of connections currently being served.
    pub fn active_connections(&self) -> usize {
        self.state.active.load(Ordering::SeqCst)
    }

    /// Requests that arrived after the script was used up (answered with a 500).
    pub fn unscripted_requests(&self) -> usize {
        self.state.unscripted.load(Ordering::SeqCst)
    }

    /// Replies not consumed yet.
    pub fn remaining(&self) -> usize {
        lock(&self.state.queue).len()
    }
}

async fn serve_connection(stream: TcpStream, state: &State) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (rd, mut wr) = stream.into_split();
    let mut reader = BufReader::new(rd);
    let Some(req) = http::read_request(&mut reader).await? else {
        return Ok(());
    };
    let body = match serde_json::from_slice::<Value>(&req.body) {
        Ok(v) => v,
        Err(_) => Value::String(String::from_utf8_lossy(&req.body).into_owned()),
    };
    let summarization = crate::summarization::is_summarization_request(&body);
    let llama_answer = llama::answer(&req.method, req.path(), &body);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let number = {
        let mut log = lock(&state.requests);
        log.push(RecordedRequest {
            method: req.method.clone(),
            path: req.target.clone(),
            headers: req.headers.clone(),
            body,
        });
        log.len()
    };
    state.activity.notify_waiters();

    let route = format!("{} {}", req.method, req.target);
    let fixed = lock(&state.routes)
        .iter()
        .find(|(r, _)| *r == route)
        .map(|(_, body)| body.clone());
    if let Some(body) = fixed {
        return http::write_full(&mut wr, 200, &json_headers(), body.to_string().as_bytes()).await;
    }
    if let Some(body) = llama_answer {
        return http::write_full(&mut wr, 200, &json_headers(), body.to_string().as_bytes()).await;
    }
    // Classifier endpoints answer plain JSON (a reply's `json`); errors look like OpenAI's.
    let json_route = ["/systemone", "/decisions", "/run", "/completion"]
        .iter()
        .any(|end| req.path().ends_with(end));
    let Some(api) = WireApi::from_path(req.path()).or(json_route.then_some(WireApi::OpenAiChat))
    else {
        let body = json!({"error": {"message": format!("mock: no route for {} {}", req.method, req.target)}});
        return http::write_full(&mut wr, 404, &json_headers(), body.to_string().as_bytes()).await;
    };
    let reply = lock(&state.queue).pop_front();
    let Some(reply) = reply else {
        state.unscripted.fetch_add(1, Ordering::SeqCst);
        let mut body = api.error_body(500);
        let msg = format!("mock: no scripted reply left for request {number}");
        if let Some(m) = body.pointer_mut("/error/message") {
            *m = Value::String(msg);
        }
        return http::write_full(&mut wr, 500, &json_headers(), body.to_string().as_bytes()).await;
    };

    if let Some(g) = &reply.gate
        && !until_closed(&mut reader, state.gates.pass(g)).await
    {
        return Ok(());
    }
    if let Some(ms) = reply.delay_ms
        && !until_closed(&mut reader, tokio::time::sleep(Duration::from_millis(ms))).await
    {
        return Ok(());
    }
    if reply.drop_connection {
        return Ok(());
    }
    let mut extra: Vec<(String, String)> = reply
        .headers
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.to_ascii_lowercase(), v)
        })
        .collect();
    if let Some(status) = reply.status.filter(|s| *s != 200) {
        let body = reply.body.clone().unwrap_or_else(|| api.error_body(status));
        let text = match &body {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut headers = json_headers();
        headers.append(&mut extra);
        return http::write_full(&mut wr, status, &headers, text.as_bytes()).await;
    }
    if let Some(body) = &reply.json {
        let mut headers = json_headers();
        headers.append(&mut extra);
        return http::write_full(&mut wr, 200, &headers, body.to_string().as_bytes()).await;
    }

    let frames = if reply.raw_sse.is_empty() {
        let ctx = RenderContext {
            request_number: number,
            model,
        };
        api.render(&reply, &ctx)
    } else {
        reply
            .raw_sse
            .iter()
            .map(|e| {
                Frame::Quiet(crate::sse::SseEvent {
                    event: e.event.clone(),
                    data: match &e.data {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                })
            })
            .collect()
    };
    let mut headers = vec![
        ("content-type".to_string(), "text/event-stream".to_string()),
        ("cache-control".to_string(), "no-cache".to_string()),
    ];
    headers.append(&mut extra);
    let config = &state.config;
    let pace = config.progress.is_some() && !summarization && reply.raw_sse.is_empty();
    let progress = if pace { config.progress.clone() } else { None };
    let before = progress_now(&progress);
    http::write_chunked_head(&mut wr, 200, &headers).await?;
    // The client announces the assistant message once it has the response head.
    let head_pause = async {
        if pace {
            paced(&progress, before, config.pace_timeout).await;
        } else {
            tokio::time::sleep(config.header_delay).await;
        }
    };
    if !until_closed(&mut reader, head_pause).await {
        return Ok(());
    }
    for frame in frames {
        let (event, shown) = match frame {
            Frame::Event(ev) => (ev, true),
            Frame::Quiet(ev) => (ev, false),
            Frame::Gate(g) => {
                if !until_closed(&mut reader, state.gates.pass(&g)).await {
                    return Ok(());
                }
                continue;
            }
            Frame::Delay(ms) => {
                let pause = tokio::time::sleep(Duration::from_millis(ms));
                if !until_closed(&mut reader, pause).await {
                    return Ok(());
                }
                continue;
            }
            // Dropping the socket mid-body is what makes clients report a terminated stream.
            Frame::Drop => return Ok(()),
        };
        let before = progress_now(&progress);
        http::write_chunk(&mut wr, event.encode().as_bytes()).await?;
        let wait = async {
            if shown {
                paced(&progress, before, config.pace_timeout).await;
            }
            tokio::time::sleep(config.chunk_delay).await;
        };
        if !until_closed(&mut reader, wait).await {
            return Ok(());
        }
    }
    http::finish_chunked(&mut wr).await
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".to_string(), "application/json".to_string())]
}

/// Runs `fut` unless the client closes the connection first; returns false if it did.
async fn until_closed<R, F>(reader: &mut BufReader<R>, fut: F) -> bool
where
    R: AsyncRead + Unpin,
    F: std::future::Future<Output = ()>,
{
    let closed = async {
        let mut buf = [0u8; 256];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::select! {
        _ = fut => true,
        _ = closed => false,
    }
}

#[cfg(test)]
mod tests;
