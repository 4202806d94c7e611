//! Custom I/O for the file and shell tools: Pi's `ReadOperations`, `WriteOperations`,
//! `EditOperations` and `BashOperations`, which an extension passes to `createReadTool` & co. to
//! run the tools against another machine or a container. The tools keep their own logic and
//! output; only the I/O goes through the operations.

use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A failed operation, as the JavaScript error it threw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// `error.message`.
    pub message: String,
    /// `error.code`, when the error has one (Node's `ENOENT` and the like).
    pub code: Option<String>,
    /// `String(error)` (`Error: message`).
    pub text: String,
}

impl OpError {
    pub fn new(message: impl Into<String>) -> OpError {
        let message = message.into();
        OpError {
            text: format!("Error: {message}"),
            message,
            code: None,
        }
    }
}

pub type OpFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, OpError>> + Send + 'a>>;

/// What a running command reports: output, then its end (an exit code, `None` when it was
/// killed by a signal), or the error the operation threw (`aborted`, `timeout:<seconds>`, ...).
#[derive(Debug)]
pub enum ExecEvent {
    Data(Vec<u8>),
    Done(Result<Option<i32>, OpError>),
}

/// A command to run through the operations (`exec(command, cwd, {onData, signal, timeout,
/// env})`).
pub struct ExecRequest {
    pub command: String,
    pub cwd: std::path::PathBuf,
    /// Seconds, as the tool got it.
    pub timeout: Option<f64>,
    /// `None` when the caller passes none (the RPC `bash` command).
    pub env: Option<Vec<(OsString, OsString)>>,
    pub cancel: CancellationToken,
}

pub trait ToolOperations: Send + Sync {
    /// Readable (read) or readable and writable (edit) — whatever the operations check.
    fn access<'a>(&'a self, path: &'a Path) -> OpFuture<'a, ()>;
    fn read_file<'a>(&'a self, path: &'a Path) -> OpFuture<'a, Vec<u8>>;
    /// The image type of the file; `None` for text, and always when the operations have no
    /// `detectImageMimeType`.
    fn detect_image_mime<'a>(&'a self, path: &'a Path) -> OpFuture<'a, Option<String>>;
    fn write_file<'a>(&'a self, path: &'a Path, content: &'a str) -> OpFuture<'a, ()>;
    fn mkdir<'a>(&'a self, dir: &'a Path) -> OpFuture<'a, ()>;
    /// Starts the command; its output and end come through the receiver, in order.
    fn exec(&self, request: ExecRequest) -> mpsc::UnboundedReceiver<ExecEvent>;
}

impl std::fmt::Debug for dyn ToolOperations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolOperations")
    }
}

/// Runs an operation from a tool that works on a blocking thread.
pub(crate) fn block_on<T>(future: OpFuture<'_, T>) -> Result<T, OpError> {
    tokio::runtime::Handle::current().block_on(future)
}
