//! A typed client of `pi --mode rpc` (Pi 1.6.0's protocol and pi in Rust's additions).
//!
//! [`Client::spawn`] starts `pi --mode rpc` (or [`Client::attach`] takes a child you spawned
//! with piped stdin and stdout); [`Client::request`] sends a typed [`RpcCommand`] and awaits
//! its response by `id`, its `data` decoded into [`ResponseData`]; [`Client::next_event`]
//! yields the session events and extension UI requests in stdout order, typed; and
//! [`Client::answer_ui`] answers a dialog.
//!
//! Backpressure: one task reads stdout into a bounded queue of events. When the queue is full
//! (nobody calls `next_event`), the task stops reading, the pipe fills and pi's writer waits,
//! so memory stays bounded on both sides however long a run streams. Responses go straight to
//! their waiting request, but behind events read before them: a client that sends requests must
//! also drain events (from another task if it awaits a response meanwhile).
//!
//! ```no_run
//! use pi_protocol::RpcCommand;
//! use pi_protocol::results::ResponseData;
//! # async fn demo() -> Result<(), pi_rpc_client::Error> {
//! let mut client = pi_rpc_client::Client::spawn("pi", &["--no-session"], |_| {})?;
//! let info = client.request(RpcCommand::GetProtocolInfo {}).await?;
//! if let Some(ResponseData::ProtocolInfo(info)) = info.data()? {
//!     println!("{} speaks {}", info.program.name, info.compatible_with.version);
//! }
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! A runnable version: `cargo run -p pi-rpc-client --example handshake -- target/debug/pi`.

use pi_protocol::RpcCommand;
use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::event::SessionEvent;
use pi_protocol::extension_ui::ExtensionUiRequest;
use pi_protocol::results::ResponseData;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

/// How many events may wait unread before the reader stops reading stdout.
pub const EVENT_BUFFER: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("pi: {0}")]
    Io(#[from] std::io::Error),
    #[error("the child has no piped {0}")]
    NotPiped(&'static str),
    #[error("pi closed stdout before answering")]
    Closed,
    #[error("invalid JSON from pi: {0}")]
    Json(#[from] serde_json::Error),
}

/// A response record: the `command` it answers and whether it succeeded.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub command: String,
    /// `Ok(None)`: success without `data`; `Ok(Some(data))`: success; `Err`: the error text.
    pub outcome: Result<Option<Value>, String>,
}

impl Response {
    /// The `data`, typed by the command it answers: `None` without `data` and for a failed
    /// command (see [`Response::error`]); an error when the data does not decode.
    pub fn data(&self) -> Result<Option<ResponseData>, Error> {
        match &self.outcome {
            Ok(Some(data)) => match ResponseData::decode(&self.command, data.clone()) {
                Some(decoded) => Ok(Some(decoded?)),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// The error text of a failed command.
    pub fn error(&self) -> Option<&str> {
        self.outcome.as_ref().err().map(String::as_str)
    }
}

/// One stdout record that is not a response.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Session(Box<SessionEvent>),
    /// A dialog or notification of an extension (or a tool approval): answer dialogs with
    /// [`Client::answer_ui`].
    Ui(Box<ExtensionUiRequest>),
    /// A record this client's types do not know (a newer pi's), as JSON; also a response to
    /// an `id` this client did not send.
    Other(Value),
}

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Response>>>>;

/// A running `pi --mode rpc`.
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<Event>,
    pending: Pending,
    next_id: AtomicU64,
}

impl Client {
    /// Starts `<program> --mode rpc <args>`; `configure` may set the environment or the working
    /// directory. Stderr is inherited.
    pub fn spawn(
        program: &str,
        args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Result<Client, Error> {
        let mut cmd = Command::new(program);
        cmd.arg("--mode").arg("rpc").args(args);
        configure(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        Client::attach(cmd.spawn()?)
    }

    /// Takes over a child spawned with piped stdin and stdout.
    pub fn attach(mut child: Child) -> Result<Client, Error> {
        let stdin = child.stdin.take().ok_or(Error::NotPiped("stdin"))?;
        let stdout = child.stdout.take().ok_or(Error::NotPiped("stdout"))?;
        let pending: Pending = Arc::default();
        let (tx, events) = mpsc::channel(EVENT_BUFFER);
        tokio::spawn(read_stdout(stdout, tx, pending.clone()));
        Ok(Client {
            child,
            stdin: Some(stdin),
            events,
            pending,
            next_id: AtomicU64::new(1),
        })
    }

    /// Sends `command` and waits for its response.
    pub async fn request(&mut self, command: RpcCommand) -> Result<Response, Error> {
        let id = format!("rc{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut line = match serde_json::to_value(&command)? {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        line.insert("id".into(), Value::String(id.clone()));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        if let Err(e) = self.write(&Value::Object(line)).await {
            lock(&self.pending).remove(&id);
            return Err(e);
        }
        rx.await.map_err(|_| Error::Closed)
    }

    /// Answers an extension UI dialog (`extension_ui_response`; it gets no response record).
    pub async fn answer_ui(&mut self, answer: &ExtensionUiResponse) -> Result<(), Error> {
        let mut line = match serde_json::to_value(answer)? {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        line.insert("type".into(), "extension_ui_response".into());
        self.write(&Value::Object(line)).await
    }

    /// The next event or extension UI request; `None` once stdout has closed.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Whether pi has exited (without waiting).
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, Error> {
        Ok(self.child.try_wait()?)
    }

    /// Closes stdin (pi finishes what runs and exits) and waits for the exit.
    pub async fn close(mut self) -> Result<ExitStatus, Error> {
        drop(self.stdin.take());
        // Keep draining so a pi still writing can finish.
        while self.events.recv().await.is_some() {}
        Ok(self.child.wait().await?)
    }

    async fn write(&mut self, value: &Value) -> Result<(), Error> {
        let stdin = self.stdin.as_mut().ok_or(Error::Closed)?;
        let mut bytes = serde_json::to_vec(value)?;
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await?;
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads stdout records until it closes: responses to their request, the rest to the events
/// queue (waiting while it is full: the backpressure).
async fn read_stdout(stdout: ChildStdout, events: mpsc::Sender<Event>, pending: Pending) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let event = match classify(value) {
            Record::Response(id, response) => match lock(&pending).remove(&id) {
                Some(waiter) => {
                    let _ = waiter.send(response);
                    continue;
                }
                None => Event::Other(Value::String(line)),
            },
            Record::Event(e) => e,
        };
        if events.send(event).await.is_err() {
            // The client is gone: keep reading so pi is never blocked on a full pipe.
            continue;
        }
    }
    // Requests still waiting learn that no answer will come.
    lock(&pending).clear();
}

enum Record {
    Response(String, Response),
    Event(Event),
}

fn classify(value: Value) -> Record {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "response" => {
            let id = match value.get("id") {
                Some(Value::String(s)) => s.clone(),
                _ => return Record::Event(Event::Other(value)),
            };
            let command = value
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let outcome = if value.get("success") == Some(&Value::Bool(true)) {
                Ok(value.get("data").cloned())
            } else {
                Err(value
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string())
            };
            Record::Response(id, Response { command, outcome })
        }
        "extension_ui_request" => match serde_json::from_value(value.clone()) {
            Ok(request) => Record::Event(Event::Ui(Box::new(request))),
            Err(_) => Record::Event(Event::Other(value)),
        },
        _ => match serde_json::from_value(value.clone()) {
            Ok(event) => Record::Event(Event::Session(Box::new(event))),
            Err(_) => Record::Event(Event::Other(value)),
        },
    }
}
