//! The running host: requests to it, and the loop that handles everything it sends, strictly in
//! order (see PROTOCOL.md).

use crate::spawn::{Pipes, spawn};
use pi_js::json::to_js_line;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};

pub type BoxFuture<'a, T = ()> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What pi does for the host: the other end of every call and effect.
pub trait Delegate: Send + Sync + 'static {
    /// A synchronous call: the host blocks until the answer, and no later message is read
    /// before it, so this must never wait on the host.
    fn sync_call<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a, CallResult>;
    /// An effect (a UI record, an `extension_error`, a tool update), handled before the next
    /// message is read.
    fn effect<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a>;
    /// An asynchronous call; runs concurrently with later messages.
    fn call(self: Arc<Self>, method: String, params: Value) -> BoxFuture<'static, CallResult>;
    /// A notification other than `handlers` (e.g. `stream_event`), in order.
    fn notification<'a>(&'a self, kind: &'a str, message: Value) -> BoxFuture<'a>;
    /// The host exited or the channel broke; called once.
    fn gone(&self, reason: String);
}

pub type CallResult = Result<Value, String>;

/// Why a request got no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The host answered `ok:false` (an exception in the extension code, usually).
    #[error("{0}")]
    Failed(String),
    /// The host is not running any more.
    #[error("the extension host is not running: {0}")]
    Gone(String),
}

/// Why the host could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "TypeScript extensions need Node.js 22 or newer; no `node` was found on PATH (set {env} to its path)",
        env = crate::spawn::NODE_ENV
    )]
    NoNode,
    #[error("could not install the extension host files: {0}")]
    Assets(std::io::Error),
    #[error("could not start the extension host ({node}): {error}")]
    Spawn { node: String, error: std::io::Error },
}

struct Shared {
    delegate: Mutex<Option<Arc<dyn Delegate>>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, HostError>>>>,
    handlers: Mutex<BTreeSet<String>>,
    gone: Mutex<Option<String>>,
    alive: AtomicBool,
    next_id: AtomicU64,
    to_host: mpsc::UnboundedSender<String>,
    pgid: Option<i32>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A handle to the running host; cheap to clone.
#[derive(Clone)]
pub struct Host {
    shared: Arc<Shared>,
}

impl Host {
    /// Installs the host files if needed, starts Node and the channel tasks. Must run inside a
    /// tokio runtime. The delegate can be set later ([`Host::set_delegate`]); until then sync
    /// calls fail and effects are dropped.
    pub fn start(cwd: &Path) -> Result<Host, StartError> {
        Host::start_with(cwd, |_| {})
    }

    /// [`Host::start`], with `prepare` applied to the Node command before anything of ours
    /// (its `pre_exec` hooks run first in the child, before the channel descriptors move).
    pub fn start_with(
        cwd: &Path,
        prepare: impl FnOnce(&mut std::process::Command),
    ) -> Result<Host, StartError> {
        let node = crate::spawn::find_node().ok_or(StartError::NoNode)?;
        let dir = crate::assets::host_dir().map_err(StartError::Assets)?;
        let (child, pipes) =
            spawn(&node, &dir, cwd, prepare).map_err(|error| StartError::Spawn {
                node: node.display().to_string(),
                error,
            })?;
        Ok(Host::attach(child, pipes))
    }

    fn attach(child: Child, pipes: Pipes) -> Host {
        let (to_host, outgoing) = mpsc::unbounded_channel();
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let shared = Arc::new(Shared {
            delegate: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            handlers: Mutex::new(BTreeSet::new()),
            gone: Mutex::new(None),
            alive: AtomicBool::new(true),
            next_id: AtomicU64::new(1),
            to_host,
            pgid,
        });
        let Pipes {
            from_host,
            to_host: writer,
            sync_replies,
        } = pipes;
        tokio::spawn(write_loop(Arc::clone(&shared), writer, outgoing));
        tokio::spawn(read_loop(Arc::clone(&shared), from_host, sync_replies));
        tokio::spawn(wait_loop(Arc::clone(&shared), child));
        Host { shared }
    }

    pub fn set_delegate(&self, delegate: Arc<dyn Delegate>) {
        *lock(&self.shared.delegate) = Some(delegate);
    }

    /// Forgets the delegate: calls the host still makes are answered "not ready", and its end
    /// is reported to no one (a host being replaced).
    pub fn detach(&self) {
        *lock(&self.shared.delegate) = None;
    }

    /// The process group of the host (Node and whatever extensions start without detaching).
    pub fn pgid(&self) -> Option<i32> {
        self.shared.pgid
    }

    pub fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// Whether any extension handles `event` (events without handlers are not sent at all).
    pub fn has_handlers(&self, event: &str) -> bool {
        self.is_alive() && lock(&self.shared.handlers).contains(event)
    }

    /// Replaces the set of events with handlers (from an `init` result).
    pub fn set_handlers<I: IntoIterator<Item = String>>(&self, events: I) {
        *lock(&self.shared.handlers) = events.into_iter().collect();
    }

    /// Sends a request and waits for its result.
    pub async fn request(
        &self,
        kind: &str,
        mut params: Map<String, Value>,
    ) -> Result<Value, HostError> {
        if let Some(reason) = lock(&self.shared.gone).clone() {
            return Err(HostError::Gone(reason));
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        params.insert("id".into(), json!(id));
        params.insert("type".into(), json!(kind));
        self.send(&Value::Object(params));
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(HostError::Gone(self.gone_reason())),
        }
    }

    /// Sends a notification (no answer).
    pub fn notify(&self, kind: &str, mut params: Map<String, Value>) {
        params.insert("type".into(), json!(kind));
        self.send(&Value::Object(params));
    }

    fn send(&self, message: &Value) {
        match to_js_line(message) {
            Ok(line) => {
                let _ = self.shared.to_host.send(line);
            }
            Err(e) => eprintln!("pi: could not serialize a message for the extension host: {e}"),
        }
    }

    fn gone_reason(&self) -> String {
        lock(&self.shared.gone)
            .clone()
            .unwrap_or_else(|| "it exited".into())
    }

    /// Ends the host and everything it started (its process group). The end is ours, so the
    /// delegate is not told the host went away: a quitting pi must not report the closed
    /// channel as an extension error (on a slow machine the report raced the exit).
    pub fn kill(&self) {
        end(&self.shared, "the extension host was stopped".into(), false);
    }
}

#[allow(unsafe_code)]
fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with plain integers; a group that is already gone is fine.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

async fn write_loop(
    shared: Arc<Shared>,
    writer: std::io::PipeWriter,
    mut outgoing: mpsc::UnboundedReceiver<String>,
) {
    let mut writer = match pipe::Sender::from_owned_fd(writer.into()) {
        Ok(w) => w,
        Err(e) => return mark_gone(&shared, format!("channel setup failed: {e}")),
    };
    while let Some(line) = outgoing.recv().await {
        if let Err(e) = writer.write_all(line.as_bytes()).await {
            return mark_gone(&shared, format!("channel write failed: {e}"));
        }
    }
}

async fn wait_loop(shared: Arc<Shared>, mut child: Child) {
    let status = child.wait().await;
    let reason = match status {
        Ok(s) => match s.code() {
            Some(code) => format!("exited with code {code}"),
            None => format!("was killed ({s})"),
        },
        Err(e) => format!("could not be waited for: {e}"),
    };
    mark_gone(&shared, format!("the extension host {reason}"));
}

/// The host died on its own: [`end`], and the delegate hears about it.
fn mark_gone(shared: &Arc<Shared>, reason: String) {
    end(shared, reason, true);
}

/// Marks the host dead once: pending requests fail, its process group is killed, and the
/// delegate hears about it when `report` (not when pi ended it itself).
fn end(shared: &Arc<Shared>, reason: String, report: bool) {
    {
        let mut gone = lock(&shared.gone);
        if gone.is_some() {
            return;
        }
        *gone = Some(reason.clone());
    }
    shared.alive.store(false, Ordering::SeqCst);
    lock(&shared.handlers).clear();
    let pending: Vec<_> = lock(&shared.pending).drain().collect();
    for (_, tx) in pending {
        let _ = tx.send(Err(HostError::Gone(reason.clone())));
    }
    if let Some(pgid) = shared.pgid {
        kill_group(pgid);
    }
    if !report {
        return;
    }
    let delegate = lock(&shared.delegate).clone();
    if let Some(d) = delegate {
        d.gone(reason);
    }
}

async fn read_loop(
    shared: Arc<Shared>,
    from_host: std::io::PipeReader,
    mut sync_replies: std::io::PipeWriter,
) {
    let reader = match pipe::Receiver::from_owned_fd(from_host.into()) {
        Ok(r) => r,
        Err(e) => return mark_gone(&shared, format!("channel setup failed: {e}")),
    };
    let mut lines = BufReader::new(reader).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return mark_gone(&shared, "the extension host closed its channel".into()),
            Err(e) => return mark_gone(&shared, format!("channel read failed: {e}")),
        };
        let message = match pi_js::parse::parse_js_json(&line) {
            Ok(Value::Object(m)) => m,
            _ => {
                eprintln!("pi: the extension host sent an unreadable message: {line:.200}");
                continue;
            }
        };
        handle(&shared, message, &mut sync_replies).await;
    }
}

async fn handle(
    shared: &Arc<Shared>,
    mut message: Map<String, Value>,
    sync_replies: &mut std::io::PipeWriter,
) {
    let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "result" => {
            let Some(id) = message.get("re").and_then(Value::as_u64) else {
                return;
            };
            let Some(tx) = lock(&shared.pending).remove(&id) else {
                return;
            };
            let ok = message.get("ok").and_then(Value::as_bool).unwrap_or(false);
            let result = if ok {
                Ok(message.remove("value").unwrap_or(Value::Null))
            } else {
                Err(HostError::Failed(error_text(&message)))
            };
            let _ = tx.send(result);
        }
        "call" => {
            let method = message
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let params = message.remove("params").unwrap_or(Value::Null);
            let id = message.get("id").and_then(Value::as_u64);
            let sync = message.get("sync").and_then(Value::as_bool) == Some(true);
            let delegate = lock(&shared.delegate).clone();
            if method == "env" && id.is_none() {
                // Applied here, in order, before anything the host sends after the change (a
                // tool call it gated, a command): also while loading, before pi has a delegate.
                apply_env(&params);
            }
            match (id, sync, delegate) {
                (Some(id), true, delegate) => {
                    let result = match delegate {
                        Some(d) => d.sync_call(&method, params).await,
                        None => Err("pi is not ready for this call yet".into()),
                    };
                    let reply = match result {
                        Ok(value) => json!({"re": id, "ok": true, "value": value}),
                        Err(error) => json!({"re": id, "ok": false, "error": error}),
                    };
                    // The host blocks reading this; it never waits on us meanwhile.
                    let written = to_js_line(&reply)
                        .map_err(std::io::Error::other)
                        .and_then(|line| sync_replies.write_all(line.as_bytes()));
                    if let Err(e) = written {
                        mark_gone(shared, format!("channel write failed: {e}"));
                    }
                }
                (Some(id), false, delegate) => {
                    let to_host = shared.to_host.clone();
                    let future = delegate.map(|d| d.call(method, params));
                    tokio::spawn(async move {
                        let result = match future {
                            Some(f) => f.await,
                            None => Err("pi is not ready for this call yet".into()),
                        };
                        let reply = match result {
                            Ok(value) => {
                                json!({"type": "result", "re": id, "ok": true, "value": value})
                            }
                            Err(error) => {
                                json!({"type": "result", "re": id, "ok": false, "error": error})
                            }
                        };
                        if let Ok(line) = to_js_line(&reply) {
                            let _ = to_host.send(line);
                        }
                    });
                }
                (None, _, Some(d)) => d.effect(&method, params).await,
                (None, _, None) => {}
            }
        }
        "handlers" => {
            let events = message
                .get("events")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|e| e.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            *lock(&shared.handlers) = events;
        }
        "" => {}
        other => {
            let kind = other.to_string();
            let delegate = lock(&shared.delegate).clone();
            if let Some(d) = delegate {
                d.notification(&kind, Value::Object(message)).await;
            }
        }
    }
}

fn error_text(message: &Map<String, Value>) -> String {
    match message.get("error") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "unknown error".into(),
    }
}

/// `{set: {name: value}, unset: [name]}`: the host's `process.env` changes.
fn apply_env(params: &Value) {
    let set = params
        .get("set")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let unset = params
        .get("unset")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    pi_js::process_env::apply(set, unset);
}
