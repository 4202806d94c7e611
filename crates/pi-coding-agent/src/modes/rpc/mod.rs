//! `pi --mode rpc`: JSONL commands on stdin, responses and events on stdout.

mod dispatch;
mod framing;
mod in_flight;
mod large;
mod signals;
mod stdin;

use framing::Frame;
use in_flight::InFlight;
use pi_coding_agent::output::Output;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long shutdown waits for commands still in flight before exiting anyway.
const IN_FLIGHT_GRACE: Duration = Duration::from_secs(5);

/// Runs RPC mode until stdin closes or a signal arrives; returns the process exit code.
pub fn run(args: &pi_coding_agent::cli::Args) -> i32 {
    super::host::run(|output| serve(output, args))
}

async fn serve(output: Output, args: &pi_coding_agent::cli::Args) -> i32 {
    // Read from the first moment: lines sent while extensions load are answered afterwards
    // (Pi does not read stdin until then; see DEVIATIONS.md).
    let (frames, ui_answers) = stdin::spawn_reader();
    // Boxed, as the other large futures below: inlined, start-up's state would make this
    // future's poll a stack frame of tens of KB.
    let rt = match Box::pin(pi_coding_agent::runtime::start(args, output.clone())).await {
        Ok(rt) => rt,
        Err(e) => {
            e.report();
            return 1;
        }
    };
    tokio::spawn(deliver_ui_answers(ui_answers, rt.clone()));
    // Pi refreshes model catalogs in the background unless offline.
    if !args.offline_mode(std::env::var("PI_OFFLINE").ok().as_deref()) {
        let refresh = rt.clone();
        tokio::spawn(async move { refresh.refresh_catalogs_online().await });
    }
    rt.bind_extensions().await;
    let mut signals = match signals::Signals::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Error: cannot install signal handlers: {e}");
            return 1;
        }
    };
    let in_flight = InFlight::default();
    let input = tokio::spawn(input_loop(frames, output, rt.clone(), in_flight.clone()));
    let exit_code = tokio::select! {
        _ = input => 0,
        code = signals.next() => code,
        () = rt.quit_requested() => {
            // Pi looks for a requested shutdown once a command was answered: the command that
            // asked for it (a `/quit` prompt) gets its response before `session_shutdown` runs.
            let _ = tokio::time::timeout(IN_FLIGHT_GRACE, in_flight.wait_idle()).await;
            0
        }
    };
    // Dispose the runtime: abort a run and wait for it; kill running commands.
    tokio::select! {
        _ = tokio::time::timeout(IN_FLIGHT_GRACE, rt.shutdown()) => {}
        code = signals.next() => std::process::exit(code),
    }
    // Orderly shutdown: answer what is in flight, unless a second signal says to stop now.
    tokio::select! {
        _ = tokio::time::timeout(IN_FLIGHT_GRACE, in_flight.wait_idle()) => {}
        code = signals.next() => std::process::exit(code),
    }
    exit_code
}

/// Answers to extension dialogs go straight to the extensions, never waiting behind commands
/// (a handler that opened a dialog may be what a command is waiting for). They produce no
/// output, so their order against commands does not matter.
async fn deliver_ui_answers(
    mut answers: mpsc::UnboundedReceiver<pi_protocol::command::ExtensionUiResponse>,
    rt: pi_coding_agent::runtime::Runtime,
) {
    while let Some(answer) = answers.recv().await {
        rt.extension_ui_response(&answer);
    }
}

/// Handles lines in arrival order. Quick commands are answered inline, so their responses keep
/// input order as Pi's do; long-running ones get their own task so they never block the next line.
async fn input_loop(
    mut frames: mpsc::Receiver<Vec<Frame>>,
    output: Output,
    rt: pi_coding_agent::runtime::Runtime,
    in_flight: InFlight,
) {
    while let Some(batch) = frames.recv().await {
        for frame in batch {
            match frame {
                Frame::Line(line) => {
                    Box::pin(dispatch::handle_line(&line, &output, &rt, &in_flight)).await
                }
                Frame::TooLong => dispatch::reject_too_long(&output).await,
            }
        }
        in_flight.release();
    }
}
