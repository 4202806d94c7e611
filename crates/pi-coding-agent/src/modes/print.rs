//! `pi -p` (print the final answer) and `pi --mode json` (the session header, then every event
//! as JSON lines): send the initial prompt and the remaining messages one after another, then
//! exit (Pi's `runPrintMode`).

use pi_coding_agent::cli::Args;
use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::{Preflight, PromptRequest, Runtime};
use pi_js::json::to_js_line;
use pi_protocol::content::{AssistantBlock, ImageContent};
use pi_protocol::message::AgentMessage;
use pi_protocol::usage::StopReason;
use std::io::{IsTerminal, Read};
use std::path::Path;

/// Runs print (`json == false`) or JSON mode.
pub fn run(args: &Args, json: bool) -> i32 {
    // Like Pi: piped stdin is part of the first prompt.
    let stdin = read_piped_stdin();
    let (first, images) = match initial_message(args, stdin) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("Error: {message}");
            return 1;
        }
    };
    super::host::run(|out| serve(out, args, json, first, images))
}

async fn serve(
    out: Output,
    args: &Args,
    json: bool,
    first: Option<String>,
    images: Vec<ImageContent>,
) -> i32 {
    let events = if json { out.clone() } else { out.muted() };
    let rt = match pi_coding_agent::runtime::start(args, events).await {
        Ok(rt) => rt,
        Err(e) => {
            e.report();
            return 1;
        }
    };
    rt.bind_extensions().await;
    if json && let Ok(line) = to_js_line(&rt.session_header()) {
        out.send(line).await;
    }
    let rest = args
        .messages
        .iter()
        .skip(usize::from(first.is_some() && !args.messages.is_empty()));
    let mut prompts: Vec<(String, Vec<ImageContent>)> = Vec::new();
    if let Some(text) = first {
        prompts.push((text, images));
    }
    prompts.extend(rest.map(|m| (m.clone(), Vec::new())));
    let mut code = 0;
    for (text, images) in prompts {
        // An extension command runs to its end, as in RPC mode; it answers nothing here.
        if let Some((name, args)) = rt.extension_command(&text) {
            rt.run_extension_command(&name, &args).await;
            rt.extension_command_answered();
            continue;
        }
        // The built-in extensions' commands run here too (their notices go where an
        // extension's do).
        if let Some(args) = rt.mcp_command(&text) {
            rt.run_mcp_command(&args).await;
            continue;
        }
        if rt.llama_command(&text) {
            rt.run_llama_command().await;
            continue;
        }
        match rt
            .prompt_preflight(PromptRequest {
                text,
                images,
                streaming_behavior: None,
            })
            .await
        {
            Preflight::Started(messages) => rt.run_session(messages).await,
            Preflight::Queued | Preflight::Handled => {}
            Preflight::Rejected(message) => {
                eprintln!("{message}");
                code = 1;
                break;
            }
        }
    }
    if code == 0 && !json {
        code = print_answer(&rt, &out).await;
    }
    rt.shutdown().await;
    code
}

/// Text mode's output: the last assistant message's text blocks, or its error on stderr.
async fn print_answer(rt: &Runtime, out: &Output) -> i32 {
    let last = rt.messages().pop();
    let Some(AgentMessage::Assistant(last)) = last.as_deref() else {
        return 0;
    };
    if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) {
        let reason = last.stop_reason.as_str();
        eprintln!(
            "{}",
            last.error_message
                .clone()
                .unwrap_or_else(|| format!("Request {reason}"))
        );
        return 1;
    }
    for block in &last.content {
        if let AssistantBlock::Text(t) = block {
            out.send(format!("{}\n", t.text)).await;
        }
    }
    if last.stop_reason == StopReason::Length {
        eprintln!("Response was truncated: the model reached its output token limit.");
        return 1;
    }
    0
}

fn read_piped_stdin() -> Option<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut bytes = Vec::new();
    stdin.lock().read_to_end(&mut bytes).ok()?;
    // Pi reads it as UTF-8 text; an empty pipe still counts (it contributes "").
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Pi's `buildInitialMessage`: stdin, then `@file` contents, then the first message, joined.
fn initial_message(
    args: &Args,
    stdin: Option<String>,
) -> Result<(Option<String>, Vec<ImageContent>), String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = stdin {
        parts.push(s);
    }
    let (file_text, images) = file_arguments(&args.file_args)?;
    if !file_text.is_empty() {
        parts.push(file_text);
    }
    if let Some(first) = args.messages.first() {
        parts.push(first.clone());
    }
    Ok(((!parts.is_empty()).then(|| parts.concat()), images))
}

/// `@file` arguments: text files wrapped in `<file name="...">` blocks, images attached.
fn file_arguments(files: &[String]) -> Result<(String, Vec<ImageContent>), String> {
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut text = String::new();
    let mut images = Vec::new();
    for arg in files {
        let path = cwd.join(expand_home(arg));
        let shown = path.display();
        let bytes = std::fs::read(&path).map_err(|_| format!("File not found: {shown}"))?;
        if bytes.is_empty() {
            continue;
        }
        if let Some(mime) = pi_tools::image::detect_mime(&bytes) {
            use base64::Engine;
            images.push(ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_string(),
            });
            text.push_str(&format!("<file name=\"{shown}\"></file>\n"));
        } else {
            let content = String::from_utf8_lossy(&bytes);
            let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
            text.push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
        }
    }
    Ok((text, images))
}

fn expand_home(arg: &str) -> std::path::PathBuf {
    match arg.strip_prefix("~/") {
        Some(rest) => pi_coding_agent::settings::paths::home_dir().join(rest),
        None => Path::new(arg).to_path_buf(),
    }
}
