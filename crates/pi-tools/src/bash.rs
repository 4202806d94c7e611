//! The `bash` tool: runs a command with the session's environment, streams throttled snapshots
//! of the output tail, and reports the tail (2000 lines / 50 KB) with the full output in a temp
//! file when it was cut.

use crate::config::ToolsConfig;
use crate::shell::accumulator::{OutputAccumulator, Snapshot};
use crate::shell::env::{SESSION_ENV_VARS, remove, resolve_shell, set, shell_env};
use crate::shell::process::{ShellCommand, ShellEvent, ShellOutcome, ShellProcess};
use crate::tool_util::{declaration, num_arg, prop, str_arg, text_block, text_result};
use crate::truncate::{DEFAULT_MAX_BYTES, TruncatedBy, format_size};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation, ToolUpdateSink};
use pi_js::number_to_string as js_number;
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;
/// Limit of `structuredContent.output`.
const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;
/// At most one partial update per this interval.
pub const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

pub struct BashTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl BashTool {
    pub fn new(config: Arc<ToolsConfig>) -> BashTool {
        let description = "Run a command with bash in the current working directory; stdout and stderr \
             come back together. Long output keeps only its end (the last 2000 lines or 50KB, \
             whichever limit is reached first) and the complete output is written to a temporary \
             file. An optional timeout in seconds stops the command.";
        let parameters = json!({
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": prop("string", "The bash command to run"),
                "timeout": prop("number", "Seconds after which the command is stopped (optional; no timeout by default)"),
            }
        });
        BashTool {
            config,
            declaration: declaration("bash", description, parameters, true),
        }
    }
}

impl AgentTool for BashTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        let config = self.config.clone();
        Box::pin(async move { run(&config, invocation).await })
    }
}

/// The environment of a tool command: the shell environment plus the session variables.
fn tool_env(config: &ToolsConfig) -> Vec<(OsString, OsString)> {
    let mut env = shell_env(config.base_env.as_deref(), &config.bin_dir());
    if config.base_env_is_final {
        return env;
    }
    for key in SESSION_ENV_VARS {
        remove(&mut env, key);
    }
    let info = config.session.get();
    let mut put = |key: &str, value: Option<OsString>| {
        if let Some(v) = value {
            set(&mut env, OsStr::new(key), v);
        }
    };
    put("PI_SESSION_ID", info.session_id.map(OsString::from));
    put("PI_SESSION_FILE", info.session_file.map(OsString::from));
    if info.model_id.is_some() {
        put("PI_PROVIDER", info.provider.map(OsString::from));
        put("PI_MODEL", info.model_id.map(OsString::from));
    }
    put(
        "PI_REASONING_LEVEL",
        info.thinking_level.map(OsString::from),
    );
    env
}

fn resolve_timeout(timeout: Option<f64>) -> Result<Option<Duration>, String> {
    let Some(seconds) = timeout else {
        return Ok(None);
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err("Invalid timeout: must be a finite number of seconds".to_string());
    }
    let ms = seconds * 1000.0;
    if ms > MAX_TIMEOUT_MS {
        return Err(format!(
            "Invalid timeout: maximum is {} seconds",
            js_number(MAX_TIMEOUT_MS / 1000.0)
        ));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
}

enum RunEnd {
    Exited(i32),
    Aborted,
    TimedOut(Option<crate::shell::ShellExit>),
    /// An extension's operations threw `timeout:<seconds>`.
    TimedOutAfter(String),
    /// An extension's operations reported no exit code.
    NoExitCode,
    Failed(String),
}

/// Throttled partial results: the first at once, then at most one per [`UPDATE_THROTTLE`].
struct Updates {
    sink: ToolUpdateSink,
    dirty: bool,
    last: Option<Instant>,
    timer: Option<Instant>,
}

impl Updates {
    fn schedule(&mut self, output: &mut OutputAccumulator) {
        self.dirty = true;
        let now = Instant::now();
        match self.last {
            Some(last) if now.duration_since(last) < UPDATE_THROTTLE => {
                self.timer.get_or_insert(last + UPDATE_THROTTLE);
            }
            _ => {
                self.timer = None;
                self.emit(output);
            }
        }
    }

    fn emit(&mut self, output: &mut OutputAccumulator) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last = Some(Instant::now());
        let snapshot = output.snapshot(true);
        let mut details = Map::new();
        if snapshot.truncation.truncated {
            details.insert("truncation".into(), to_value(&snapshot.truncation));
        }
        if let Some(path) = &snapshot.full_output_path {
            details.insert(
                "fullOutputPath".into(),
                Value::String(path.display().to_string()),
            );
        }
        let mut update = AgentToolResult::new(vec![text_block(snapshot.content)]);
        update.details = Some(Value::Object(details));
        (self.sink)(update);
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

async fn execute_command(
    config: &ToolsConfig,
    command: String,
    timeout: Option<f64>,
    invocation: &ToolInvocation,
    output: &mut OutputAccumulator,
    updates: &mut Updates,
) -> RunEnd {
    if let Some(ops) = &config.operations {
        return execute_through(
            ops.as_ref(),
            config,
            command,
            timeout,
            invocation,
            output,
            updates,
        )
        .await;
    }
    let timeout = match resolve_timeout(timeout) {
        Ok(t) => t,
        Err(message) => return RunEnd::Failed(message),
    };
    if invocation.cancel.is_cancelled() {
        return RunEnd::Aborted;
    }
    let shell = match resolve_shell(config.shell_path.as_deref()) {
        Ok(shell) => shell,
        Err(message) => return RunEnd::Failed(message),
    };
    if std::fs::metadata(&config.cwd).is_err() {
        return RunEnd::Failed(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            config.cwd.display()
        ));
    }
    let cmd = ShellCommand {
        shell,
        command,
        cwd: config.cwd.clone(),
        env: tool_env(config),
    };
    let mut process = match ShellProcess::spawn(&cmd, invocation.cancel.clone(), timeout) {
        Ok(p) => p,
        Err(message) => return RunEnd::Failed(message),
    };
    loop {
        let timer = updates.timer;
        tokio::select! {
            event = process.next() => match event {
                ShellEvent::Output(bytes) => {
                    output.append(&bytes);
                    updates.schedule(output);
                }
                ShellEvent::Finished(ShellOutcome::Exited(code)) => return RunEnd::Exited(code),
                ShellEvent::Finished(ShellOutcome::Aborted) => return RunEnd::Aborted,
                ShellEvent::Finished(ShellOutcome::TimedOut { shell_exit }) => return RunEnd::TimedOut(shell_exit),
            },
            _ = sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                updates.timer = None;
                updates.emit(output);
            }
        }
    }
}

/// The command through an extension's `BashOperations.exec`: it gets the timeout as given and
/// the environment; its output feeds the same accumulator, and what it throws ends the run.
async fn execute_through(
    ops: &dyn crate::operations::ToolOperations,
    config: &ToolsConfig,
    command: String,
    timeout: Option<f64>,
    invocation: &ToolInvocation,
    output: &mut OutputAccumulator,
    updates: &mut Updates,
) -> RunEnd {
    use crate::operations::{ExecEvent, ExecRequest};
    let mut events = ops.exec(ExecRequest {
        command,
        cwd: config.cwd.clone(),
        timeout,
        env: Some(tool_env(config)),
        cancel: invocation.cancel.clone(),
    });
    loop {
        let timer = updates.timer;
        tokio::select! {
            event = events.recv() => match event {
                Some(ExecEvent::Data(bytes)) => {
                    output.append(&bytes);
                    updates.schedule(output);
                }
                Some(ExecEvent::Done(Ok(Some(code)))) => return RunEnd::Exited(code),
                Some(ExecEvent::Done(Ok(None))) => return RunEnd::NoExitCode,
                Some(ExecEvent::Done(Err(e))) => {
                    return if e.message == "aborted" {
                        RunEnd::Aborted
                    } else if let Some(seconds) = e.message.strip_prefix("timeout:") {
                        RunEnd::TimedOutAfter(seconds.split(':').next().unwrap_or("").to_string())
                    } else {
                        RunEnd::Failed(e.message)
                    };
                }
                None => return RunEnd::Failed("Command terminated without an exit code".into()),
            },
            _ = sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                updates.timer = None;
                updates.emit(output);
            }
        }
    }
}

/// The text with its truncation notice, and the details when truncated.
fn format_output(
    output: &OutputAccumulator,
    snapshot: &Snapshot,
    empty: &str,
) -> (String, Option<Value>) {
    let t = &snapshot.truncation;
    let mut text = if snapshot.content.is_empty() {
        empty.to_string()
    } else {
        snapshot.content.clone()
    };
    if !t.truncated {
        return (text, None);
    }
    let mut details = Map::new();
    details.insert("truncation".into(), to_value(t));
    let path = snapshot
        .full_output_path
        .as_ref()
        .map(|p| p.display().to_string());
    if let Some(p) = &path {
        details.insert("fullOutputPath".into(), Value::String(p.clone()));
    }
    let path = path.unwrap_or_else(|| "undefined".to_string());
    let start = t.total_lines + 1 - t.output_lines.min(t.total_lines + 1);
    let end = t.total_lines;
    if t.last_line_partial {
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end} (line is {}). Full output: {path}]",
            format_size(t.output_bytes),
            format_size(output.last_line_bytes())
        ));
    } else if t.truncated_by == Some(TruncatedBy::Lines) {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {}. Full output: {path}]",
            t.total_lines
        ));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {} ({} limit). Full output: {path}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        ));
    }
    (text, Some(Value::Object(details)))
}

fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

async fn run(
    config: &ToolsConfig,
    invocation: ToolInvocation,
) -> Result<AgentToolResult, ToolError> {
    let command = str_arg(&invocation.args, "command")
        .unwrap_or_default()
        .to_string();
    let timeout = num_arg(&invocation.args, "timeout");
    let command = match config.shell_command_prefix.as_deref() {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{command}"),
        _ => command,
    };
    let mut output = OutputAccumulator::new("pi-bash");
    (invocation.updates)(AgentToolResult::new(Vec::new()));
    let mut updates = Updates {
        sink: invocation.updates.clone(),
        dirty: false,
        last: None,
        timer: None,
    };
    let started = Instant::now();
    let end = execute_command(
        config,
        command,
        timeout,
        &invocation,
        &mut output,
        &mut updates,
    )
    .await;
    output.finish();
    updates.timer = None;
    updates.emit(&mut output);
    let snapshot = output.snapshot(true);
    let _ = output.close_temp_file();
    let exit_code = match end {
        RunEnd::Exited(code) => code,
        RunEnd::Aborted => {
            let (text, _) = format_output(&output, &snapshot, "");
            return Err(ToolError::new(append_status(&text, "Command aborted")));
        }
        RunEnd::TimedOut(shell_exit) => {
            let (text, _) = format_output(&output, &snapshot, "");
            let mut status = format!(
                "Command timed out after {} seconds",
                js_number(timeout.unwrap_or_default())
            );
            if let Some(exit) = shell_exit {
                status.push_str(&format!(
                    ". The shell exited with code {} after {} seconds, but background processes it started kept writing output until the timeout.",
                    exit.code,
                    js_number(exit.after_seconds)
                ));
            }
            return Err(ToolError::new(append_status(&text, &status)));
        }
        RunEnd::TimedOutAfter(seconds) => {
            let (text, _) = format_output(&output, &snapshot, "");
            let status = format!("Command timed out after {seconds} seconds");
            return Err(ToolError::new(append_status(&text, &status)));
        }
        RunEnd::NoExitCode => {
            let (text, _) = format_output(&output, &snapshot, "(no output)");
            return Err(ToolError::new(append_status(
                &text,
                "Command terminated without an exit code",
            )));
        }
        RunEnd::Failed(message) => return Err(ToolError::new(message)),
    };
    let (text, details) = format_output(&output, &snapshot, "(no output)");
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let wall_time_seconds = (wall_ms / 100.0).round() / 10.0;
    let full = output
        .read_full_output(STRUCTURED_OUTPUT_MAX_BYTES)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let mut structured = Map::new();
    structured.insert("output".into(), Value::String(full.content));
    structured.insert("truncated".into(), Value::Bool(full.truncated));
    if let (true, Some(path)) = (full.truncated, &snapshot.full_output_path) {
        structured.insert(
            "full_output_path".into(),
            Value::String(path.display().to_string()),
        );
    }
    structured.insert("exit_code".into(), json!(exit_code));
    structured.insert("wall_time_seconds".into(), json!(wall_time_seconds));
    let mut result = if exit_code != 0 {
        let mut r = text_result(
            append_status(&text, &format!("Command exited with code {exit_code}")),
            details,
        );
        r.is_error = Some(true);
        r
    } else {
        text_result(text, details)
    };
    result.structured_content = Some(Value::Object(structured));
    Ok(result)
}
