//! Turns one input line into exactly one response record (or none, for extension UI answers),
//! calling into the session runtime.

use super::framing::Frame;
use super::in_flight::InFlight;
use super::large;
use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::{Preflight, PromptRequest, Runtime};
use pi_js::json::to_js_line;
use pi_js::parse::parse_js_json;
use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::{Incoming, Outcome, RpcCommand, RpcResponse, StreamingBehavior, decode_command};
use serde::Serialize;
use serde_json::{Value, json};

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
                    respond(
                        &out,
                        id,
                        "prompt",
                        Outcome::Data(json!({"disposition": "handled"})),
                    )
                    .await;
                });
                return;
            }
            let request = PromptRequest {
                text: message,
                images: images.unwrap_or_default(),
                streaming_behavior,
            };
            match rt.prompt_preflight(request).await {
                Preflight::Rejected(e) => {
                    respond::<Value>(out, id, "prompt", Outcome::Error(e)).await
                }
                Preflight::Queued => {
                    respond(
                        out,
                        id,
                        "prompt",
                        Outcome::Data(json!({"disposition": "queued"})),
                    )
                    .await
                }
                Preflight::Handled => {
                    respond(
                        out,
                        id,
                        "prompt",
                        Outcome::Data(json!({"disposition": "handled"})),
                    )
                    .await
                }
                Preflight::Started(messages) => {
                    respond(
                        out,
                        id,
                        "prompt",
                        Outcome::Data(json!({"disposition": "started"})),
                    )
                    .await;
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
    )
}

fn to_value<T: Serialize>(v: &T) -> Outcome<Value> {
    match serde_json::to_value(v) {
        Ok(v) => Outcome::Data(v),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

async fn answer(id: Option<Value>, command: RpcCommand, out: &Output, rt: &Runtime) {
    let name = command.type_name();
    let outcome: Outcome<Value> = match command {
        RpcCommand::Prompt { .. } => return,
        RpcCommand::Steer { message, .. } | RpcCommand::FollowUp { message, .. }
            if rt.extension_command(&message).is_some() =>
        {
            let name = rt
                .extension_command(&message)
                .map(|(n, _)| n)
                .unwrap_or_default();
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
            Outcome::Data(json!({"disposition": "queued"}))
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
        RpcCommand::ClearQueue {} => {
            let (steering, follow_up) = rt.clear_queue().await;
            Outcome::Data(json!({"steering": steering, "followUp": follow_up}))
        }
        RpcCommand::GetState {} => to_value(&rt.state()),
        RpcCommand::GetMessages {} => {
            large::get_messages(out, rt, id).await;
            return;
        }
        RpcCommand::GetAvailableModels {} => to_value(&json!({"models": rt.available_models()})),
        RpcCommand::SetModel { provider, model_id } => {
            match rt.set_model(&provider, &model_id).await {
                Ok(model) => to_value(&model),
                Err(e) => Outcome::Error(e),
            }
        }
        RpcCommand::CycleModel {} => match rt.cycle_model().await {
            Some(c) => to_value(
                &json!({"model": c.model, "thinkingLevel": c.thinking_level, "isScoped": c.is_scoped}),
            ),
            None => Outcome::Data(Value::Null),
        },
        RpcCommand::SetThinkingLevel { level } => {
            rt.set_thinking_level(level).await;
            Outcome::Ok
        }
        RpcCommand::CycleThinkingLevel {} => match rt.cycle_thinking_level().await {
            Some(level) => Outcome::Data(json!({"level": level})),
            None => Outcome::Data(Value::Null),
        },
        RpcCommand::GetAvailableThinkingLevels {} => {
            Outcome::Data(json!({"levels": rt.available_thinking_levels()}))
        }
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
        RpcCommand::GetLastAssistantText {} => match rt.last_assistant_text() {
            // Pi answers `{}` (its `text: undefined` is dropped), not `{"text":null}`.
            Some(text) => Outcome::Data(json!({"text": text})),
            None => Outcome::Data(json!({})),
        },
        RpcCommand::SetSessionName { name } => match rt.set_session_name(&name).await {
            Ok(()) => Outcome::Ok,
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::GetForkMessages {} => {
            let messages: Vec<Value> = rt
                .fork_messages()
                .into_iter()
                .map(|m| json!({"entryId": m.entry_id, "text": m.text}))
                .collect();
            Outcome::Data(json!({"messages": messages}))
        }
        RpcCommand::GetEntries { since } => {
            large::get_entries(out, rt, id, since).await;
            return;
        }
        RpcCommand::GetTree {} => {
            large::get_tree(out, rt, id).await;
            return;
        }
        RpcCommand::GetSessionStats {} => to_value(&rt.session_stats()),
        RpcCommand::Bash {
            command,
            exclude_from_context,
        } => {
            let bash_id = id.as_ref().and_then(|v| v.as_str().map(str::to_string));
            match rt
                .bash(bash_id, command, exclude_from_context == Some(true))
                .await
            {
                Ok(result) => to_value(&result),
                Err(e) => Outcome::Error(e),
            }
        }
        RpcCommand::ExportHtml { output_path } => match rt.export_html(output_path.as_deref()) {
            Ok(path) => Outcome::Data(json!({"path": path})),
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::GetCommands {} => to_value(&json!({"commands": rt.commands()})),
        RpcCommand::NewSession { parent_session } => match rt.new_session(parent_session).await {
            Ok(()) => Outcome::Data(json!({"cancelled": false})),
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::SwitchSession { session_path } => {
            match rt.switch_session(&session_path).await {
                Ok(()) => Outcome::Data(json!({"cancelled": false})),
                Err(e) => Outcome::Error(e),
            }
        }
        RpcCommand::Fork { entry_id } => match rt.fork(&entry_id).await {
            Ok(Some(text)) => Outcome::Data(json!({"text": text, "cancelled": false})),
            Ok(None) => Outcome::Data(json!({"cancelled": false})),
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::Clone {} => match rt.clone_session().await {
            Ok(()) => Outcome::Data(json!({"cancelled": false})),
            Err(e) => Outcome::Error(e),
        },
        RpcCommand::Compact {
            custom_instructions,
        } => match rt.compact(custom_instructions).await {
            Ok(result) => to_value(&result),
            Err(e) => Outcome::Error(e),
        },
    };
    respond(out, id, name, outcome).await;
}

async fn respond<T: Serialize>(
    out: &Output,
    id: Option<Value>,
    command: &str,
    outcome: Outcome<T>,
) {
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
