//! A loopback mock LLM that runs inside the bench process, so that the instant a chunk is
//! written and the instant the client's record is read come from the same clock.
//!
//! It serves one scripted [`Handler`] per request (blocking I/O, one thread per connection at a
//! time). Connections stay open for the client's next request, as a provider's do (both
//! agents' HTTP clients keep them), unless the request says `connection: close` or a handler
//! left its response unfinished. The streams are rendered by the conformance mock's own renderer
//! (`pi_test_support::sse::openai_chat::render`), so the bytes are what the tests send.
//! Each SSE event is written as its own HTTP chunk with a single `write` on a `TCP_NODELAY`
//! socket, and the handler gets the instant each write returned.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pi_test_support::mock::Reply;
use pi_test_support::sse::{Frame, RenderContext, openai_chat};

/// A request as it arrived.
#[derive(Debug)]
pub struct Request {
    pub path: String,
    /// Size of the body (read whole before the request counts as arrived).
    pub body_len: usize,
    /// The body, as text.
    pub body: String,
    /// When the whole request (head and body) had been read.
    pub arrived: Instant,
    /// The client asked for the connection to be closed after the response.
    pub close: bool,
}

/// Writes one streamed response.
pub struct Responder {
    stream: TcpStream,
    /// The connection ends after this response.
    close: bool,
    /// The response was written to its end (the connection can carry the next request).
    complete: bool,
}

impl Responder {
    /// The `connection` header's value for this response.
    fn connection(&self) -> &'static str {
        if self.close { "close" } else { "keep-alive" }
    }

    pub fn head(&mut self) -> std::io::Result<()> {
        let connection = self.connection();
        self.stream.write_all(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                 connection: {connection}\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            .as_bytes(),
        )
    }

    /// One HTTP chunk in one `write`; returns the instant the write returned.
    pub fn chunk(&mut self, data: &[u8]) -> std::io::Result<Instant> {
        let mut buf = Vec::with_capacity(data.len() + 16);
        buf.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        buf.extend_from_slice(data);
        buf.extend_from_slice(b"\r\n");
        self.stream.write_all(&buf)?;
        Ok(Instant::now())
    }

    /// Ends the chunked body; returns the instant the last byte was written.
    pub fn finish(&mut self) -> std::io::Result<Instant> {
        self.stream.write_all(b"0\r\n\r\n")?;
        let end = Instant::now();
        self.complete = true;
        Ok(end)
    }

    /// A whole scripted reply, each event as a chunk; returns the instant the end of the
    /// body was written.
    pub fn reply(&mut self, reply: &Reply, request_number: usize) -> std::io::Result<Instant> {
        self.head()?;
        for f in &render(reply, request_number) {
            self.chunk(f.bytes.as_bytes())?;
        }
        self.finish()
    }
}

/// One pre-rendered SSE event.
#[derive(Debug, Clone)]
pub struct Event {
    pub bytes: String,
    /// The client answers it with a stdout record (a delta), as opposed to usage/finish.
    pub shown: bool,
}

/// Renders a reply as openai-completions chunks (`data: {...}\n\n` each).
pub fn render(reply: &Reply, request_number: usize) -> Vec<Event> {
    let ctx = RenderContext {
        request_number,
        model: "mock-gpt".into(),
    };
    openai_chat::render(reply, &ctx)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some(Event {
                bytes: e.encode(),
                shown: true,
            }),
            Frame::Quiet(e) => Some(Event {
                bytes: e.encode(),
                shown: false,
            }),
            _ => None,
        })
        .collect()
}

pub type Handler = Box<dyn FnOnce(&mut Responder, &Request) -> std::io::Result<()> + Send>;

/// Answers any request no queued handler is waiting for, from what the request says (many
/// clients at once, whose requests arrive in no particular order).
pub type Rule = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// The running mock; its accept thread ends with the process.
pub struct Mock {
    pub port: u16,
    handlers: Arc<Mutex<VecDeque<Handler>>>,
    rule: Arc<Mutex<Option<Rule>>>,
    arrivals: Receiver<(String, usize, Instant)>,
}

impl Mock {
    pub fn start() -> std::io::Result<Mock> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let handlers: Arc<Mutex<VecDeque<Handler>>> = Arc::default();
        let rule: Arc<Mutex<Option<Rule>>> = Arc::default();
        let (tx, rx) = channel();
        let (hs, rs) = (handlers.clone(), rule.clone());
        let pool = Workers::new(Arc::new(move |stream| {
            // A failed write means the client went away; nothing to report.
            let _ = serve(stream, &hs, &rs, &tx);
        }));
        for _ in 0..IDLE_WORKERS {
            pool.spawn(None);
        }
        std::thread::Builder::new()
            .name("mock-accept".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    pool.serve(stream);
                }
            })?;
        Ok(Mock {
            port,
            handlers,
            rule,
            arrivals: rx,
        })
    }

    /// Answers requests without a queued handler by `rule` (`None`: an error response).
    pub fn set_rule(&self, rule: Option<Rule>) {
        *lock(&self.rule) = rule;
    }

    /// Queues the handler of the next request.
    pub fn push(&self, h: Handler) {
        lock(&self.handlers).push_back(h);
    }

    /// Drops handlers a failed run left behind, and stale arrival notices.
    pub fn reset(&self) {
        lock(&self.handlers).clear();
        *lock(&self.rule) = None;
        while self.arrivals.try_recv().is_ok() {}
    }

    /// Waits for the next request to arrive (path, body size, arrival instant).
    pub fn arrival(
        &self,
        timeout: std::time::Duration,
    ) -> Result<(String, usize, Instant), String> {
        self.arrivals
            .recv_timeout(timeout)
            .map_err(|_| format!("no request reached the mock within {timeout:?}"))
    }
}

/// Connection threads started with the mock, before any request.
const IDLE_WORKERS: usize = 4;

type Serve = Arc<dyn Fn(TcpStream) + Send + Sync>;

/// Connection threads that wait for the next connection once theirs is served: starting a
/// thread per connection put 50–170 µs of the harness's own work between the client's
/// `connect` and the first read of its request, on every request of every side. A connection
/// that finds no thread waiting gets a new one (the fleet has 50 at once).
#[derive(Clone)]
struct Workers {
    serve: Serve,
    tx: Sender<TcpStream>,
    rx: Arc<Mutex<Receiver<TcpStream>>>,
    /// Threads waiting for a connection, less the connections already handed to them.
    idle: Arc<AtomicUsize>,
}

impl Workers {
    fn new(serve: Serve) -> Workers {
        let (tx, rx) = channel();
        Workers {
            serve,
            tx,
            rx: Arc::new(Mutex::new(rx)),
            idle: Arc::default(),
        }
    }

    /// Hands `stream` to a waiting thread, or to a new one.
    fn serve(&self, stream: TcpStream) {
        let reserved = self
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if !reserved {
            self.spawn(Some(stream));
        } else if let Err(e) = self.tx.send(stream) {
            // Unreachable while the mock lives (its threads never end): serve it anyway.
            self.spawn(Some(e.0));
        }
    }

    fn spawn(&self, first: Option<TcpStream>) {
        let pool = self.clone();
        let _ = std::thread::Builder::new()
            .name("mock-conn".into())
            .spawn(move || {
                if let Some(stream) = first {
                    (pool.serve)(stream);
                }
                loop {
                    pool.idle.fetch_add(1, Ordering::SeqCst);
                    let next = lock(&pool.rx).recv();
                    match next {
                        Ok(stream) => (pool.serve)(stream),
                        Err(_) => return,
                    }
                }
            });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn serve(
    stream: TcpStream,
    handlers: &Mutex<VecDeque<Handler>>,
    rule: &Mutex<Option<Rule>>,
    arrivals: &Sender<(String, usize, Instant)>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut responder = Responder {
        stream,
        close: false,
        complete: false,
    };
    loop {
        let Some(req) = read_request(&mut reader)? else {
            return Ok(());
        };
        responder.close = req.close;
        responder.complete = false;
        respond(&mut responder, &req, handlers, rule, arrivals)?;
        responder.stream.flush()?;
        if responder.close || !responder.complete {
            return Ok(());
        }
    }
}

/// Answers one request: its queued handler, else the rule, else an error.
fn respond(
    responder: &mut Responder,
    req: &Request,
    handlers: &Mutex<VecDeque<Handler>>,
    rule: &Mutex<Option<Rule>>,
    arrivals: &Sender<(String, usize, Instant)>,
) -> std::io::Result<()> {
    let _ = arrivals.send((req.path.clone(), req.body_len, req.arrived));
    let handler = lock(handlers).pop_front();
    let rule = lock(rule).clone();
    match (handler, rule) {
        (Some(h), _) => h(responder, req)?,
        (None, Some(rule)) => {
            responder.reply(&rule(req), 1)?;
        }
        (None, None) => {
            let body =
                br#"{"error":{"message":"bench mock: no reply scripted","type":"server_error"}}"#;
            let connection = responder.connection();
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
                 connection: {connection}\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            responder.stream.write_all(head.as_bytes())?;
            responder.stream.write_all(body)?;
            responder.complete = true;
        }
    }
    Ok(())
}

fn read_request<R: Read>(reader: &mut BufReader<R>) -> std::io::Result<Option<Request>> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(bad("closed inside the request head"))
            };
        }
        let line = line.trim_end().to_string();
        if line.is_empty() {
            if head.is_empty() {
                continue;
            }
            break;
        }
        head.push(line);
    }
    let path = head[0].split(' ').nth(1).unwrap_or("").to_string();
    let header = |name: &str| {
        head[1..].iter().find_map(|h| {
            let (n, v) = h.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if n == 0 {
                let mut trailer = String::new();
                while reader.read_line(&mut trailer)? > 0 && !trailer.trim().is_empty() {
                    trailer.clear();
                }
                break;
            }
            let start = body.len();
            body.resize(start + n, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(len) = header("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    }
    // Taken before the body is made text: checking and copying a request of a few hundred KB
    // took ~0.2 ms, which counted as the client's time.
    let arrived = Instant::now();
    let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Ok(Some(Request {
        close,
        path,
        body_len: body.len(),
        body: String::from_utf8(body)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        arrived,
    }))
}
