//! The RPC `bash` command, `export_html` and `get_commands`.

use super::{Runtime, lock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::BashExecutionMessage;
use pi_protocol::results::{BashResult, RpcSlashCommand};
use pi_tools::{BashRequest, execute_bash};
use std::path::Path;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Runtime {
    /// Runs a shell command for the client, streaming `bash_execution_update`s, and records its
    /// result as a `bashExecution` message (held until the active run settles, so it never
    /// lands between a tool call and its result).
    pub async fn bash(
        &self,
        id: Option<String>,
        command: String,
        exclude_from_context: bool,
    ) -> Result<BashResult, String> {
        let settings = self.core.settings();
        let request = BashRequest {
            command: command.clone(),
            cwd: self.core.env.cwd.clone(),
            shell_path: settings.shell_path.clone().map(Into::into),
            command_prefix: settings.shell_command_prefix.clone(),
            bin_dir: self.core.env.agent_dir.join("bin"),
            base_env: None,
        };
        let cancel = CancellationToken::new();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let key = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.core.bash_cancels).push((key, cancel.clone()));
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let run = execute_bash(&request, cancel.clone(), move |delta| {
            let _ = tx.send(delta.to_string());
        });
        let forward = async {
            while let Some(delta) = rx.recv().await {
                self.core
                    .emit(SessionEvent::BashExecutionUpdate {
                        id: id.clone(),
                        delta,
                    })
                    .await;
            }
        };
        let (result, ()) = tokio::join!(run, forward);
        lock(&self.core.bash_cancels).retain(|(k, _)| *k != key);
        let result = result?;
        let message = BashExecutionMessage {
            command,
            output: result.output.clone(),
            exit_code: result.exit_code,
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result.full_output_path.clone(),
            timestamp: pi_js::now_ms(),
            exclude_from_context: exclude_from_context.then_some(true),
            rest: Default::default(),
        };
        lock(&self.core.run).pending_bash.push(message);
        if !self.core.is_streaming() {
            self.core.flush_pending_bash();
        }
        Ok(result)
    }

    /// `abort_bash`: cancels every running RPC `bash` command (not the agent's tools).
    pub fn abort_bash(&self) {
        for (_, cancel) in lock(&self.core.bash_cancels).iter() {
            cancel.cancel();
        }
    }

    /// `export_html`: the session file rendered as a self-contained page.
    pub fn export_html(&self, output: Option<&str>) -> Result<String, String> {
        let file = lock(&self.core.session)
            .session_file()
            .map(Path::to_path_buf);
        let Some(file) = file else {
            return Err(pi_export::IN_MEMORY_ERROR.to_string());
        };
        if !file.exists() {
            return Err(pi_export::NOTHING_TO_EXPORT_ERROR.to_string());
        }
        let output = output.filter(|o| !o.is_empty()).map(Path::new);
        pi_export::export_session_file(&file, output, &self.core.env.cwd)
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| e.to_string())
    }

    /// `get_commands`: prompt templates, skills and the built-in extension commands.
    pub fn commands(&self) -> Vec<RpcSlashCommand> {
        lock(&self.core.res).commands(Vec::new())
    }
}
