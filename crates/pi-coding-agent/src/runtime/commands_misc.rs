//! The RPC `bash` command, `export_html` and `get_commands`.

use super::{Runtime, lock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::BashExecutionMessage;
use pi_protocol::results::{BashResult, RpcSlashCommand};
use pi_tools::{BashRequest, execute_bash};
use std::path::Path;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a `user_bash` handler decided.
enum UserBash {
    Result(BashResult),
    Operations(std::sync::Arc<dyn pi_tools::operations::ToolOperations>),
}

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
        let mut operations = None;
        match self.ext_user_bash(&command, exclude_from_context).await? {
            Some(UserBash::Result(result)) => {
                self.record_bash(command, &result, exclude_from_context);
                return Ok(result);
            }
            Some(UserBash::Operations(ops)) => operations = Some(ops),
            None => {}
        }
        let settings = self.core.settings();
        let request = BashRequest {
            command: command.clone(),
            cwd: self.core.cwd(),
            shell_path: settings.shell_path.clone().map(Into::into),
            command_prefix: settings.shell_command_prefix.clone(),
            bin_dir: self.core.env.agent_dir.join("bin"),
            base_env: None,
            operations,
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
        self.record_bash(command, &result, exclude_from_context);
        Ok(result)
    }

    /// The command's message goes into the session (once the run settles, if one is active).
    fn record_bash(&self, command: String, result: &BashResult, exclude_from_context: bool) {
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
    }

    /// Extensions' `user_bash`: a result that replaces running the command, operations that
    /// run it, or `None` to run it here. A throwing handler fails the command.
    async fn ext_user_bash(
        &self,
        command: &str,
        exclude_from_context: bool,
    ) -> Result<Option<UserBash>, String> {
        if !self.core.ext.handles("user_bash") {
            return Ok(None);
        }
        let Some(host) = self.core.ext.host() else {
            return Ok(None);
        };
        let mut params = serde_json::Map::new();
        params.insert("event".into(), serde_json::json!("user_bash"));
        params.insert(
            "payload".into(),
            serde_json::json!({
                "command": command,
                "excludeFromContext": exclude_from_context,
                "cwd": self.core.cwd(),
            }),
        );
        params.insert("ctx".into(), self.core.ext_ctx());
        let value = host
            .request("emit", params)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(id) = value.get("operationsId").filter(|v| !v.is_null()) {
            let ops = crate::extensions::operations::HostOperations::new(host, id.clone());
            return Ok(Some(UserBash::Operations(std::sync::Arc::new(ops))));
        }
        match value.get("result") {
            Some(result) if !result.is_null() => serde_json::from_value(result.clone())
                .map(|r| Some(UserBash::Result(r)))
                .map_err(|e| format!("Invalid user_bash handler result: {e}")),
            _ => Ok(None),
        }
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
        // The page takes the palette of the `theme` setting (built-in or any loaded theme).
        let theme = {
            let res = lock(&self.core.res);
            crate::themes::page_theme(
                res.settings.settings().theme.as_deref(),
                &res.resources.theme_paths,
            )
        };
        let options = pi_export::ExportOptions {
            theme,
            ..Default::default()
        };
        pi_export::export_session_file_with(&file, output, &self.core.env.cwd, &options)
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| e.to_string())
    }

    /// `get_commands`: extension commands, prompt templates, skills and the built-in
    /// extension commands.
    pub fn commands(&self) -> Vec<RpcSlashCommand> {
        let extension = self.core.ext.registrations().slash_commands();
        lock(&self.core.res).commands(extension)
    }
}

impl Runtime {
    /// `/llama` of Pi's built-in llama.cpp extension, when it loads and no extension took the
    /// name. Its model manager is a terminal UI; outside it Pi only says so.
    pub fn llama_command(&self, text: &str) -> bool {
        let Some(rest) = text.strip_prefix("/llama") else {
            return false;
        };
        (rest.is_empty() || rest.starts_with(' '))
            && lock(&self.core.res)
                .builtin_extensions
                .iter()
                .any(|p| p == "builtin:llama.cpp")
    }

    /// Runs `/llama` outside the terminal UI: Pi's warning notice.
    pub async fn run_llama_command(&self) {
        let request = super::mcp::notify_request(
            "/llama is available in interactive mode".into(),
            pi_mcp::Notice::Warning,
        );
        self.core.write(&request).await;
    }
}
