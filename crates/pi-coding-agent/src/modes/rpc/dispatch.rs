//! Turns one input line into exactly one response record (or none, for extension UI answers).

use super::in_flight::InFlight;
use super::output::Output;
use pi_protocol::js_parse::parse_js_json;
use pi_protocol::json::to_js_line;
use pi_protocol::{Incoming, Outcome, RpcCommand, RpcResponse, decode_command};
use serde_json::{Value, json};

/// Handles one framed line: parse, decode, run, answer.
pub async fn handle_line(line: &str, out: &Output, in_flight: &InFlight) {
    // JSON.parse semantics and V8's exact error messages.
    let value = match parse_js_json(line) {
        Ok(v) => v,
        Err(message) => {
            send(out, &RpcResponse::parse_error(&message)).await;
            return;
        }
    };
    match decode_command(value) {
        Incoming::ExtensionUiResponse(_) => {
            // No extension dialog can be pending yet; Pi ignores answers to unknown ids silently.
        }
        Incoming::Rejected(r) => {
            let resp: RpcResponse<Value> = RpcResponse {
                id: r.id,
                command: r.command,
                outcome: Outcome::Error(r.error),
            };
            send(out, &resp).await;
        }
        Incoming::Command { id, command } if is_long_running(&command) => {
            let out = out.clone();
            in_flight.spawn(async move { answer(id, command, &out).await });
        }
        Incoming::Command { id, command } => answer(id, command, out).await,
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

async fn answer(id: Option<Value>, command: RpcCommand, out: &Output) {
    let name = command.type_name();
    let outcome = run(command, out).await;
    send(out, &RpcResponse::new(id, name, outcome)).await;
}

/// Commands that may wait (on the model, a process, the disk, or the run to go idle). Pi never
/// blocks later commands behind them, and neither do we.
fn is_long_running(command: &RpcCommand) -> bool {
    matches!(
        command,
        RpcCommand::Prompt { .. }
            | RpcCommand::Steer { .. }
            | RpcCommand::FollowUp { .. }
            | RpcCommand::Abort {}
            | RpcCommand::NewSession { .. }
            | RpcCommand::Compact { .. }
            | RpcCommand::Bash { .. }
            | RpcCommand::ExportHtml { .. }
            | RpcCommand::SwitchSession { .. }
            | RpcCommand::Fork { .. }
            | RpcCommand::Clone {}
    )
}

async fn run(command: RpcCommand, out: &Output) -> Outcome<Value> {
    match command {
        // Nothing can be running yet: no agent run, retry backoff or bash command exists, so
        // these are answered exactly as Pi answers them when idle.
        RpcCommand::Abort {} | RpcCommand::AbortRetry {} | RpcCommand::AbortBash {} => Outcome::Ok,
        RpcCommand::ClearQueue {} => {
            let empty: [&str; 0] = [];
            let event = json!({"type": "queue_update", "steering": empty, "followUp": empty});
            send(out, &event).await;
            Outcome::Data(json!({"steering": empty, "followUp": empty}))
        }
        other => Outcome::Error(format!(
            "Command \"{}\" is not implemented yet in this build of pi",
            other.type_name()
        )),
    }
}

async fn send<T: serde::Serialize>(out: &Output, record: &T) {
    match to_js_line(record) {
        Ok(line) => {
            out.send(line).await;
        }
        Err(e) => eprintln!("pi: could not serialize a record: {e}"),
    }
}
