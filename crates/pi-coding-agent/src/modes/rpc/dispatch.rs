//! Turns one input line into exactly one response record (or none, for extension UI answers),
//! calling into the session runtime.

use super::framing::Frame;
use super::in_flight::InFlight;
use super::large;
use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::{ListSessionsParams, Preflight, PromptRequest, Runtime};
use pi_js::json::to_js_line;
use pi_js::parse::parse_js_json;
use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::results::{
    AvailableModelsData, AvailableThinkingLevelsData, CancelledData, CommandsData, ExportHtmlData,
    ForkData, ForkMessagesData, LastAssistantTextData, PromptData, PromptDisposition,
    QueuedInputData, QueuedInputDisposition, ResponseData, ThinkingLevelData,
};
use pi_protocol::{Incoming, Outcome, RpcCommand, RpcResponse, StreamingBehavior, decode_command};
use serde::Serialize;
use serde_json::Value;

/// Handles one framed line: parse, decode, run, answer.
pub async fn handle_line(line: &str, out: &Output, rt: &Runtime, in_flight: &InFlight) {
    // JSON.parse semantics and V8's exact error messages.
    let value = match parse_js_json(line) {
        Ok(v) => v,
        Err(message) => {
            send(out, &RpcResponse::parse_error(&message)).await;
            return;
        }
    };
    match decode_command(value) {
        // Answers go to the extensions' dialogs; no response record, whatever the id.
        Incoming::ExtensionUiResponse(answer) => rt.extension_ui_response(&answer),
        Incoming::Rejected(r) => {
            let resp: RpcResponse<Value> = RpcResponse {
                id: r.id,
                command: r.command,
                outcome: Outcome::Error(r.error),
            };
            send(out, &resp).await;
        }
        Incoming::Command {
            id,
            command:
                RpcCommand::Prompt {
                    message,
                    images,
                    streaming_behavior,
                },
        } => {
            // An extension command runs at once, even while streaming, and is answered when
            // its handler is done; commands that follow are not held up meanwhile.
            if let Some((name, args)) = rt.extension_command(&message) {
                let (out, rt) = (out.clone(), rt.clone());
                in_flight.spawn(async move {
                    rt.run_extension_command(&name, &args).await;
                    let handled = PromptData {
                        disposition: PromptDisposition::Handled,
                    };
                    respond(&out, id, "prompt", data(handled)).await;
                    rt.extension_command_answered();
                });
                return;
            }
            // The built-in `/mcp` (Pi's non-TUI form) runs like an extension command.
            if let Some(args) = rt.mcp_command(&message) {
                let (out, rt) = (out.clone(), rt.clone());
                in_flight.spawn(async move {
                    rt.run_mcp_command(&args).await;
                    let handled = PromptData {
                        disposition: PromptDisposition::Handled,
                    };
                    respond(&out, id, "prompt", data(handled)).await;
                });
                return;
            }
            // The built-in `/llama`: Pi's notice that it needs the terminal UI.
            if rt.llama_command(&message) {
                let (out, rt) = (out.clone(), rt.clone());
                in_flight.spawn(async move {
                    rt.run_llama_command().await;
                    let handled = PromptData {
                        disposition: PromptDisposition::Handled,
                    };
                    respond(&out, id, "prompt", data(handled)).await;
                });
                return;
            }
            let request = PromptRequest {
                text: message,
                images: images.unwrap_or_default(),
                streaming_behavior,
            };
            let prompted = |disposition| data(PromptData { disposition });
            match rt.prompt_preflight(request).await {
                Preflight::Rejected(e) => respond(out, id, "prompt", Outcome::Error(e)).await,
                Preflight::Queued => {
                    respond(out, id, "prompt", prompted(PromptDisposition::Queued)).await
                }
                Preflight::Handled => {
                    respond(out, id, "prompt", prompted(PromptDisposition::Handled)).await
                }
                Preflight::Started(messages) => {
                    respond(out, id, "prompt", prompted(PromptDisposition::Started)).await;
                    let rt = rt.clone();
                    in_flight.spawn_after_batch(async move { rt.run_session(messages).await });
                }
            }
        }
        Incoming::Command { id, command } if is_long_running(&command) => {
            let (out, rt) = (out.clone(), rt.clone());
            in_flight.spawn(async move { answer(id, command, &out, &rt).await });
        }
        Incoming::Command { id, command } => answer(id, command, out, rt).await,
    }
}

/// An `extension_ui_response` line, taken out of the command stream by the stdin reader.
pub fn ui_answer(frame: &Frame) -> Option<ExtensionUiResponse> {
    let Frame::Line(line) = frame else {
        return None;
    };
    if !line.contains("extension_ui_response") {
        return None;
    }
    match decode_command(parse_js_json(line).ok()?) {
        Incoming::ExtensionUiResponse(answer) => Some(answer),
        _ => None,
    }
}

/// The answer to a line that is too long to buffer.
pub async fn reject_too_long(out: &Output) {
    let msg = format!(
        "line exceeds {} MiB",
        super::framing::MAX_LINE_BYTES / (1024 * 1024)
    );
    send(out, &RpcResponse::parse_error(&msg)).await;
}

/// Commands that may wait (on a process, the disk, or the run to go idle). Pi never blocks
/// later commands behind them, and neither do we.
fn is_long_running(command: &RpcCommand) -> bool {
    matches!(
        command,
        RpcCommand::Abort {}
            | RpcCommand::NewSession { .. }
            | RpcCommand::Compact { .. }
            | RpcCommand::Bash { .. }
            | RpcCommand::ExportHtml { .. }
            | RpcCommand::SwitchSession { .. }
            | RpcCommand::Fork { .. }
            | RpcCommand::Clone {}
            | RpcCommand::ListSessions { .. }
            | RpcCommand::ReadSession { .. }
    )
}

/// `success:true` with `data`.
fn data(payload: impl Into<ResponseData>) -> Outcome<ResponseData> {
    Outcome::Data(payload.into())
}

/// `data` on success, `error` otherwise.
fn data_or_error<T: Into<ResponseData>>(result: Result<T, String>) -> Outcome<ResponseData> {
    match result {
        Ok(payload) => data(payload),
        Err(e) => Outcome::Error(e),
    }
}

/// `{"cancelled":false}` on success (nothing can cancel without extensions), `error` otherwise.
/// `{cancelled}` of a session replacement (an extension may cancel it).
fn cancelled(result: Result<bool, String>) -> Outcome<ResponseData> {
    data_or_error(result.map(|cancelled| CancelledData { cancelled }))
}

async fn answer(id: Option<Value>, command: RpcCommand, out: &Output, rt: &Runtime) {
    let name = command.type_name();
    let outcome: Outcome<ResponseData> = match command {
        RpcCommand::Prompt { .. } => return,
        RpcCommand::Steer { message, .. } | RpcCommand::FollowUp { message, .. }
            if rt.extension_command(&message).is_some()
                || rt.mcp_command(&message).is_some()
                || rt.llama_command(&message) =>
        {
            let name = match rt.extension_command(&message) {
                Some((n, _)) => n,
                None if rt.llama_command(&message) => "llama".to_string(),
                None => "mcp".to_string(),
            };
            Outcome::Error(format!(
                "Extension command \"/{name}\" cannot be queued. Use prompt() or execute the command when not streaming."
            ))
        }
        RpcCommand::Steer { message, images } | RpcCommand::FollowUp { message, images } => {
            let behavior = if name == "steer" {
                StreamingBehavior::Steer
            } else {
                StreamingBehavior::FollowUp
            };
            let request = PromptRequest {
                text: message,
                images: images.unwrap_or_default(),
                streaming_behavior: None,
            };
            rt.queue_input(behavior, request).await;
            data(QueuedInputData {
                disposition: QueuedInputDisposition::Queued,
            })
        }
        RpcCommand::Abort {} => {
            rt.abort().await;
            Outcome::Ok
        }
        RpcCommand::AbortRetry {} => {
            if !rt.abort_retry(id.clone()) {
                return;
            }
            Outcome::Ok
        }
        RpcCommand::AbortBash {} => {
            rt.abort_bash();
            Outcome::Ok
        }
        RpcCommand::ClearQueue {} => data(rt.clear_queue().await),
        RpcCommand::GetState {} => data(rt.state()),
        RpcCommand::GetMessages {} => {
            large::get_messages(out, rt, id).await;
            return;
        }
        RpcCommand::GetAvailableModels {} => data(AvailableModelsData {
            models: rt.available_models(),
        }),
        RpcCommand::SetModel { provider, model_id } => {
            data_or_error(rt.set_model(&provider, &model_id).await)
        }
        // `null` when there is nothing to cycle to.
        RpcCommand::CycleModel {} => data(rt.cycle_model().await),
        RpcCommand::SetThinkingLevel { level } => {
            rt.set_thinking_level(level).await;
            Outcome::Ok
        }
        // `null` for models without reasoning.
        RpcCommand::CycleThinkingLevel {} => data(
            rt.cycle_thinking_level()
                .await
                .map(|level| ThinkingLevelData { level }),
        ),
        RpcCommand::GetAvailableThinkingLevels {} => data(AvailableThinkingLevelsData {
            levels: rt.available_thinking_levels(),
        }),
        RpcCommand::SetSteeringMode { mode } => {
            rt.set_steering_mode(mode);
            Outcome::Ok
        }
        RpcCommand::SetFollowUpMode { mode } => {
            rt.set_follow_up_mode(mode);
            Outcome::Ok
        }
        RpcCommand::SetAutoCompaction { enabled } => {
            rt.set_auto_compaction(enabled);
            Outcome::Ok
        }
        RpcCommand::SetAutoRetry { enabled } => {
            rt.set_auto_retry(enabled);
            Outcome::Ok
        }
        // Pi answers `{}` (its `text: undefined` is dropped), not `{"text":null}`.
        RpcCommand::GetLastAssistantText {} => data(LastAssistantTextData {
            text: rt.last_assistant_text(),
        }),
        RpcCommand::SetSessionName { name } => match rt.set_session_name(&name).await {
            Ok(()) => Outcome::Ok,
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::GetForkMessages {} => data(ForkMessagesData {
            messages: rt.fork_messages(),
        }),
        RpcCommand::GetEntries { since } => {
            large::get_entries(out, rt, id, since).await;
            return;
        }
        RpcCommand::GetTree {} => {
            large::get_tree(out, rt, id).await;
            return;
        }
        RpcCommand::GetSessionStats {} => data(rt.session_stats()),
        RpcCommand::Bash {
            command,
            exclude_from_context,
        } => {
            let bash_id = id.as_ref().and_then(|v| v.as_str().map(str::to_string));
            data_or_error(
                rt.bash(bash_id, command, exclude_from_context == Some(true))
                    .await,
            )
        }
        RpcCommand::ExportHtml { output_path } => data_or_error(
            rt.export_html(output_path.as_deref())
                .map(|path| ExportHtmlData { path }),
        ),
        RpcCommand::GetCommands {} => data(CommandsData {
            commands: rt.commands(),
        }),
        RpcCommand::NewSession { parent_session } => {
            cancelled(rt.new_session(parent_session).await)
        }
        RpcCommand::SwitchSession { session_path } => {
            cancelled(rt.switch_session(&session_path).await)
        }
        // `text` is the forked-from user message; absent when there is none.
        RpcCommand::Fork { entry_id } => data_or_error(
            rt.fork(&entry_id)
                .await
                .map(|(text, cancelled)| ForkData { text, cancelled }),
        ),
        RpcCommand::Clone {} => cancelled(rt.clone_session().await),
        RpcCommand::Compact {
            custom_instructions,
        } => data_or_error(rt.compact(custom_instructions).await),
        // Additions (not Pi's; see `pi_protocol::additions`).
        RpcCommand::GetProtocolInfo {} => data(rt.protocol_info()),
        RpcCommand::ListSessions {
            cwd,
            all,
            query,
            limit,
            cursor,
        } => {
            let params = ListSessionsParams {
                cwd,
                all: all == Some(true),
                query,
                limit,
                cursor,
            };
            data_or_error(rt.list_sessions(params).await)
        }
        RpcCommand::ReadSession {
            session_path,
            view,
            since,
            limit,
        } => {
            let path = rt.session_path(&session_path);
            large::read_session(out, id, path, view.unwrap_or_default(), since, limit).await;
            return;
        }
        RpcCommand::GetToolApprovals {} => data(rt.tool_approvals()),
        RpcCommand::SetToolApprovals { rules, timeout_ms } => {
            data_or_error(rt.set_tool_approvals(rules, timeout_ms))
        }
    };
    respond(out, id, name, outcome).await;
}

async fn respond(out: &Output, id: Option<Value>, command: &str, outcome: Outcome<ResponseData>) {
    send(out, &RpcResponse::new(id, command, outcome)).await;
}

async fn send<T: Serialize>(out: &Output, record: &T) {
    match to_js_line(record) {
        Ok(line) => {
            out.send(line).await;
        }
        Err(e) => eprintln!("pi: could not serialize a record: {e}"),
    }
}
