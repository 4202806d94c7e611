//! An extension's custom `operations` for the built-in tools it made with `createReadTool` & co.
//! (SSH, containers): our Rust tools do the work and ask the host to run each operation
//! (`builtin_op` requests); a command's output comes back as `op_data` notifications.

use base64::Engine;
use pi_ext_host::Host;
use pi_tools::operations::{ExecEvent, ExecRequest, OpError, OpFuture, ToolOperations};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use tokio::sync::mpsc;

/// Commands running through operations, by the id their output is reported under.
static EXECS: LazyLock<Mutex<HashMap<u64, mpsc::UnboundedSender<ExecEvent>>>> =
    LazyLock::new(Default::default);
static NEXT_EXEC: AtomicU64 = AtomicU64::new(1);

fn execs() -> std::sync::MutexGuard<'static, HashMap<u64, mpsc::UnboundedSender<ExecEvent>>> {
    EXECS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The operations object `operationsId` the host keeps for one built-in tool run.
pub(crate) struct HostOperations {
    host: Host,
    operations_id: Value,
}

impl HostOperations {
    pub fn new(host: Host, operations_id: Value) -> HostOperations {
        HostOperations {
            host,
            operations_id,
        }
    }

    fn call<'a>(&'a self, op: &'a str, fields: Value) -> OpFuture<'a, Value> {
        Box::pin(async move {
            let mut params = Map::new();
            params.insert("operationsId".into(), self.operations_id.clone());
            params.insert("op".into(), json!(op));
            if let Value::Object(fields) = fields {
                params.extend(fields);
            }
            let value = self
                .host
                .request("builtin_op", params)
                .await
                .map_err(|e| OpError::new(e.to_string()))?;
            match value.get("error") {
                Some(error) => Err(op_error(error)),
                None => Ok(value.get("value").cloned().unwrap_or(Value::Null)),
            }
        })
    }
}

/// What the operation threw: `{message, code?, text}`.
fn op_error(error: &Value) -> OpError {
    let field = |k: &str| error.get(k).and_then(Value::as_str).map(str::to_string);
    let message = field("message").unwrap_or_default();
    OpError {
        text: field("text").unwrap_or_else(|| format!("Error: {message}")),
        code: field("code"),
        message,
    }
}

fn path_json(path: &Path) -> Value {
    json!(path.to_string_lossy())
}

impl ToolOperations for HostOperations {
    fn access<'a>(&'a self, path: &'a Path) -> OpFuture<'a, ()> {
        Box::pin(async move {
            self.call("access", json!({ "path": path_json(path) }))
                .await
                .map(|_| ())
        })
    }

    fn read_file<'a>(&'a self, path: &'a Path) -> OpFuture<'a, Vec<u8>> {
        Box::pin(async move {
            let value = self
                .call("readFile", json!({ "path": path_json(path) }))
                .await?;
            let data = value.as_str().unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| OpError::new(e.to_string()))
        })
    }

    fn detect_image_mime<'a>(&'a self, path: &'a Path) -> OpFuture<'a, Option<String>> {
        Box::pin(async move {
            let value = self
                .call("detectImageMimeType", json!({ "path": path_json(path) }))
                .await?;
            // Pi takes any truthy answer as the image type.
            Ok(value.as_str().filter(|s| !s.is_empty()).map(str::to_string))
        })
    }

    fn write_file<'a>(&'a self, path: &'a Path, content: &'a str) -> OpFuture<'a, ()> {
        Box::pin(async move {
            self.call(
                "writeFile",
                json!({ "path": path_json(path), "content": content }),
            )
            .await
            .map(|_| ())
        })
    }

    fn mkdir<'a>(&'a self, dir: &'a Path) -> OpFuture<'a, ()> {
        Box::pin(async move {
            self.call("mkdir", json!({ "path": path_json(dir) }))
                .await
                .map(|_| ())
        })
    }

    fn exec(&self, request: ExecRequest) -> mpsc::UnboundedReceiver<ExecEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let exec_id = NEXT_EXEC.fetch_add(1, Ordering::Relaxed);
        execs().insert(exec_id, tx.clone());
        let ops = HostOperations::new(self.host.clone(), self.operations_id.clone());
        tokio::spawn(async move {
            let env = request.env.as_ref().map(|vars| {
                vars.iter()
                    .map(|(k, v)| (k.to_string_lossy().into_owned(), json!(v.to_string_lossy())))
                    .collect::<Map<String, Value>>()
            });
            let call = ops.call(
                "exec",
                json!({
                    "execId": exec_id,
                    "command": request.command,
                    "cwd": path_json(&request.cwd),
                    "timeout": request.timeout,
                    "env": env,
                }),
            );
            tokio::pin!(call);
            let outcome = tokio::select! {
                outcome = &mut call => outcome,
                () = request.cancel.cancelled() => {
                    // The command's signal aborts; its operation still answers.
                    let mut note = Map::new();
                    note.insert("execId".into(), json!(exec_id));
                    ops.host.notify("op_abort", note);
                    call.await
                }
            };
            // Output notifications were handled before this answer arrived (one channel).
            execs().remove(&exec_id);
            let done = outcome.map(|v| v.get("exitCode").and_then(Value::as_i64).map(|c| c as i32));
            let _ = tx.send(ExecEvent::Done(done));
        });
        rx
    }
}

/// `op_data` from the host: a chunk of a running command's output.
pub(crate) fn exec_output(message: &Value) {
    let Some(id) = message.get("execId").and_then(Value::as_u64) else {
        return;
    };
    let data = message.get("data").and_then(Value::as_str).unwrap_or("");
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return;
    };
    if let Some(tx) = execs().get(&id) {
        let _ = tx.send(ExecEvent::Data(bytes));
    }
}
