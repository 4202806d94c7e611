//! The RPC `bash` command's executor (Pi's `executeBashWithOperations` with the local backend):
//! runs a command in the session cwd with the unmodified environment (plus `<agent dir>/bin` on
//! `PATH`), streams sanitized deltas, and returns a [`BashResult`].

use super::env::{resolve_shell, shell_env};
use super::process::{ShellCommand, ShellEvent, ShellOutcome, ShellProcess};
use super::sanitize::{sanitize_chunk, split_incomplete_ansi_suffix};
use crate::output_file::create_output_file;
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, truncate_tail};
use pi_js::text_decoder::Utf8Decoder;
use pi_js::utf16_len;
use pi_protocol::results::BashResult;
use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// How to run an RPC `bash` command.
#[derive(Debug, Clone)]
pub struct BashRequest {
    /// The command as the client sent it.
    pub command: String,
    pub cwd: PathBuf,
    pub shell_path: Option<PathBuf>,
    /// The `shellCommandPrefix` setting (prepended with a newline).
    pub command_prefix: Option<String>,
    pub bin_dir: PathBuf,
    /// `None`: this process's environment.
    pub base_env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// An extension's `BashOperations` (from `user_bash`) run the command instead of the
    /// local shell; they get the prefixed command and the cwd, nothing else.
    pub operations: Option<std::sync::Arc<dyn crate::operations::ToolOperations>>,
}

/// Runs the command; every non-empty sanitized chunk goes to `on_delta` (the caller emits
/// `bash_execution_update`). An abort through `cancel` still returns the output so far; other
/// failures (no shell, no cwd) are errors with Pi's texts.
pub async fn execute_bash(
    request: &BashRequest,
    cancel: CancellationToken,
    mut on_delta: impl FnMut(&str),
) -> Result<BashResult, String> {
    let mut state = ExecutorOutput {
        decoder: Utf8Decoder::new(),
        ..ExecutorOutput::default()
    };
    let outcome = run(request, &cancel, &mut state, &mut on_delta).await;
    let exit_code = match outcome {
        Ok(code) => code,
        Err(err) if !cancel.is_cancelled() => {
            return Err(err);
        }
        Err(_) => None,
    };
    state.flush(&mut on_delta);
    let full: String = state.chunks.iter().map(String::as_str).collect();
    let truncation = truncate_tail(&full, Limits::default());
    if truncation.truncated {
        state.ensure_temp_file();
    }
    let cancelled = cancel.is_cancelled();
    Ok(BashResult {
        output: if truncation.truncated {
            truncation.content
        } else {
            full
        },
        exit_code: if cancelled {
            None
        } else {
            exit_code.map(i64::from)
        },
        cancelled,
        truncated: state.discarded || truncation.truncated,
        full_output_path: state.temp_path.map(|p| p.to_string_lossy().into_owned()),
    })
}

async fn run(
    request: &BashRequest,
    cancel: &CancellationToken,
    state: &mut ExecutorOutput,
    on_delta: &mut impl FnMut(&str),
) -> Result<Option<i32>, String> {
    if cancel.is_cancelled() {
        return Err("aborted".to_string());
    }
    if let Some(ops) = &request.operations {
        return run_through(ops.as_ref(), request, cancel, state, on_delta).await;
    }
    let shell = resolve_shell(request.shell_path.as_deref())?;
    if std::fs::metadata(&request.cwd).is_err() {
        return Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            request.cwd.display()
        ));
    }
    let command = match &request.command_prefix {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{}", request.command),
        _ => request.command.clone(),
    };
    let cmd = ShellCommand {
        shell,
        command,
        cwd: request.cwd.clone(),
        env: shell_env(request.base_env.as_deref(), &request.bin_dir),
    };
    let mut process = ShellProcess::spawn(&cmd, cancel.clone(), None)?;
    loop {
        match process.next().await {
            ShellEvent::Output(bytes) => state.on_data(&bytes, on_delta),
            ShellEvent::Finished(ShellOutcome::Exited(code)) => return Ok(Some(code)),
            ShellEvent::Finished(_) => return Err("aborted".to_string()),
        }
    }
}

/// Through an extension's operations; what they throw fails the command (unless aborted).
async fn run_through(
    ops: &dyn crate::operations::ToolOperations,
    request: &BashRequest,
    cancel: &CancellationToken,
    state: &mut ExecutorOutput,
    on_delta: &mut impl FnMut(&str),
) -> Result<Option<i32>, String> {
    use crate::operations::{ExecEvent, ExecRequest};
    let command = match &request.command_prefix {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{}", request.command),
        _ => request.command.clone(),
    };
    let mut events = ops.exec(ExecRequest {
        command,
        cwd: request.cwd.clone(),
        timeout: None,
        env: None,
        cancel: cancel.clone(),
    });
    while let Some(event) = events.recv().await {
        match event {
            ExecEvent::Data(bytes) => state.on_data(&bytes, on_delta),
            ExecEvent::Done(result) => return result.map_err(|e| e.message),
        }
    }
    Err("aborted".to_string())
}

/// Output bookkeeping of one execution.
#[derive(Default)]
struct ExecutorOutput {
    decoder: Utf8Decoder,
    pending_ansi: String,
    /// Rolling buffer of sanitized chunks, at most 2 x 50 KiB of UTF-16 units.
    chunks: VecDeque<String>,
    buffered_units: usize,
    discarded: bool,
    total_raw_bytes: usize,
    temp_path: Option<PathBuf>,
    temp_file: Option<File>,
}

impl ExecutorOutput {
    fn on_data(&mut self, data: &[u8], on_delta: &mut impl FnMut(&str)) {
        self.total_raw_bytes += data.len();
        let mut text = std::mem::take(&mut self.pending_ansi);
        text.push_str(&self.decoder.decode(data));
        let (complete, pending) = split_incomplete_ansi_suffix(&text);
        self.pending_ansi = pending.to_string();
        let complete = complete.to_string();
        self.append(&complete, on_delta);
    }

    fn flush(&mut self, on_delta: &mut impl FnMut(&str)) {
        let mut rest = std::mem::take(&mut self.pending_ansi);
        rest.push_str(&self.decoder.finish());
        self.append(&rest, on_delta);
        if let Some(mut file) = self.temp_file.take() {
            let _ = file.flush();
        }
    }

    fn append(&mut self, raw: &str, on_delta: &mut impl FnMut(&str)) {
        let text = sanitize_chunk(raw);
        if text.is_empty() {
            return;
        }
        if self.total_raw_bytes > DEFAULT_MAX_BYTES {
            self.ensure_temp_file();
        }
        if let Some(file) = self.temp_file.as_mut() {
            let _ = file.write_all(text.as_bytes());
        }
        self.buffered_units += utf16_len(&text);
        self.chunks.push_back(text.clone());
        while self.buffered_units > DEFAULT_MAX_BYTES * 2 && self.chunks.len() > 1 {
            if let Some(removed) = self.chunks.pop_front() {
                self.buffered_units -= utf16_len(&removed);
                self.discarded = true;
            }
        }
        on_delta(&text);
    }

    fn ensure_temp_file(&mut self) {
        if self.temp_path.is_some() {
            return;
        }
        if let Ok((path, mut file)) = create_output_file("pi-bash", ".log") {
            for chunk in &self.chunks {
                let _ = file.write_all(chunk.as_bytes());
            }
            self.temp_path = Some(path);
            self.temp_file = Some(file);
        }
    }
}
