//! The fleet figure's floor (`bench/run --only fleet`): the least one agent of the fleet must do,
//! as a calibration of the fleet's CPU, wall time and memory. Started as the agents are
//! (`--mode rpc` in the tool tree, a fresh agent dir, the loopback mock in `models.json`), it
//! does the observable work of one agent and nothing else, in one thread with std only: reads
//! its configuration and the prompt line, makes Pi's layout in the agent dir (`auth.json`,
//! `models-store.json`, the session folder and file), sends the two requests of the turn to the
//! mock (bodies of the size an agent sends: a system prompt, then the tool result) and reads
//! their streams, runs the `read` call, appends the session records and writes the RPC events
//! with the message contents, then waits for stdin to close. No checks, no parsing beyond
//! finding what it needs, no lookups of resources, no runtime: whatever an agent does beyond
//! this is its own cost.

use std::fs::OpenOptions;
use std::io::{BufRead, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use pi_bench::text::{between, string_field};

fn main() {
    if let Err(e) = run() {
        eprintln!("pi-bench-fleet-floor: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let agent_dir = PathBuf::from(
        std::env::var_os("PI_CODING_AGENT_DIR").ok_or("PI_CODING_AGENT_DIR is not set")?,
    );
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let models = read(&agent_dir.join("models.json"))?;
    let addr = between(&models, "\"baseUrl\":\"http://", "/")
        .ok_or("no baseUrl in models.json")?
        .to_string();
    for name in ["auth.json", "models-store.json"] {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(agent_dir.join(name))
        {
            Ok(mut f) => f.write_all(b"{}").map_err(|e| e.to_string())?,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }

    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let prompt_line = lines
        .next()
        .ok_or("no prompt")?
        .map_err(|e| e.to_string())?;
    let id = string_field(&prompt_line, "id").unwrap_or("");
    let prompt = string_field(&prompt_line, "message").unwrap_or("");
    let mut out = std::io::stdout().lock();
    let mut emit = |line: String| out.write_all(line.as_bytes()).map_err(|e| e.to_string());
    emit(format!(
        "{{\"id\":\"{id}\",\"type\":\"response\",\"command\":\"prompt\",\"success\":true}}\n"
    ))?;

    let slug = format!(
        "--{}--",
        cwd.to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "-")
    );
    let dir = agent_dir.join("sessions").join(slug);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?;
    let session_id = format!("{:x}-{:x}", now.as_nanos(), std::process::id());
    let mut session = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{}_{session_id}.jsonl", now.as_millis())))
        .map_err(|e| e.to_string())?;
    let mut record = |line: String| {
        session
            .write_all(line.as_bytes())
            .map_err(|e| e.to_string())
    };
    record(format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{session_id}\",\"cwd\":\"{}\"}}\n",
        esc(&cwd.to_string_lossy())
    ))?;

    let user = format!(
        "{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{prompt}\"}}],\"timestamp\":{}}}",
        now.as_millis()
    );
    emit("{\"type\":\"agent_start\"}\n".to_string())?;
    emit("{\"type\":\"turn_start\"}\n".to_string())?;
    emit(format!(
        "{{\"type\":\"message_start\",\"message\":{user}}}\n"
    ))?;
    emit(format!("{{\"type\":\"message_end\",\"message\":{user}}}\n"))?;
    record(format!("{{\"type\":\"message\",\"message\":{user}}}\n"))?;

    // About the system prompt and tool definitions an agent sends (ours: 5.2 KB in all).
    let system =
        "You are a coding agent with tools to read, run, edit and write files. ".repeat(70);
    let mut messages = format!(
        "{{\"role\":\"system\",\"content\":\"{system}\"}},{{\"role\":\"user\",\"content\":\"{prompt}\"}}"
    );
    let mut conn = TcpStream::connect(&addr).map_err(|e| format!("{addr}: {e}"))?;
    let first = post(&mut conn, &addr, &messages)?;
    // The call's arguments come in pieces; an agent joins them and reads the path.
    let arguments = unescape(&joined(&first, "arguments"));
    let path = string_field(&arguments, "path").ok_or("no path in the tool call")?;
    let call_id = first
        .find("\"tool_calls\"")
        .and_then(|at| string_field(&first[at..], "id"))
        .ok_or("no tool call")?;
    let assistant = format!(
        "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"{call_id}\",\"name\":\"read\",\"arguments\":{{\"path\":\"{path}\",\"limit\":40}}}}],\"stopReason\":\"toolUse\"}}"
    );
    emit(format!(
        "{{\"type\":\"message_start\",\"message\":{assistant}}}\n"
    ))?;
    emit(format!(
        "{{\"type\":\"message_end\",\"message\":{assistant}}}\n"
    ))?;
    record(format!(
        "{{\"type\":\"message\",\"message\":{assistant}}}\n"
    ))?;

    emit(format!(
        "{{\"type\":\"tool_execution_start\",\"toolCallId\":\"{call_id}\",\"toolName\":\"read\"}}\n"
    ))?;
    let text = read(&cwd.join(path))?;
    let text = esc(&text.lines().take(40).collect::<Vec<_>>().join("\n"));
    let result = format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"details\":{{\"text\":\"{text}\"}}}}"
    );
    emit(format!(
        "{{\"type\":\"tool_execution_end\",\"toolCallId\":\"{call_id}\",\"toolName\":\"read\",\"result\":{result},\"isError\":false}}\n"
    ))?;
    let tool_message = format!(
        "{{\"role\":\"toolResult\",\"toolCallId\":\"{call_id}\",\"toolName\":\"read\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"isError\":false}}"
    );
    emit(format!(
        "{{\"type\":\"message_start\",\"message\":{tool_message}}}\n"
    ))?;
    emit(format!(
        "{{\"type\":\"message_end\",\"message\":{tool_message}}}\n"
    ))?;
    record(format!(
        "{{\"type\":\"message\",\"message\":{tool_message}}}\n"
    ))?;
    emit(format!(
        "{{\"type\":\"turn_end\",\"message\":{assistant},\"toolResults\":[{tool_message}]}}\n"
    ))?;

    emit("{\"type\":\"turn_start\"}\n".to_string())?;
    messages.push_str(&format!(
        ",{{\"role\":\"assistant\",\"tool_calls\":[{{\"id\":\"{call_id}\",\"type\":\"function\",\"function\":{{\"name\":\"read\",\"arguments\":\"{{\\\"path\\\":\\\"{path}\\\",\\\"limit\\\":40}}\"}}}}]}},{{\"role\":\"tool\",\"tool_call_id\":\"{call_id}\",\"content\":\"{text}\"}}"
    ));
    let second = post(&mut conn, &addr, &messages)?;
    let reply = joined(&second, "content");
    let last = format!(
        "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{reply}\"}}],\"stopReason\":\"stop\"}}"
    );
    emit(format!(
        "{{\"type\":\"message_start\",\"message\":{last}}}\n"
    ))?;
    emit(format!("{{\"type\":\"message_end\",\"message\":{last}}}\n"))?;
    record(format!("{{\"type\":\"message\",\"message\":{last}}}\n"))?;
    emit(format!(
        "{{\"type\":\"turn_end\",\"message\":{last},\"toolResults\":[]}}\n"
    ))?;
    emit(format!(
        "{{\"type\":\"agent_end\",\"messages\":[{user},{assistant},{tool_message},{last}]}}\n"
    ))?;
    emit("{\"type\":\"agent_settled\",\"aborted\":false}\n".to_string())?;
    // Like an agent, it lives until the client closes stdin.
    for line in lines {
        line.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One streamed chat request to the mock on `conn` (kept open for the next, as the agents'
/// clients keep theirs); the whole response, read up to its last chunk.
fn post(conn: &mut TcpStream, addr: &str, messages: &str) -> Result<String, String> {
    let body = format!("{{\"model\":\"mock-gpt\",\"stream\":true,\"messages\":[{messages}]}}");
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nauthorization: Bearer dummy\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(format!("{head}{body}").as_bytes())
        .map_err(|e| e.to_string())?;
    // The SSE events never hold the chunked body's end marker.
    let mut response = Vec::new();
    let mut buf = [0u8; 16384];
    while !response.ends_with(b"\r\n0\r\n\r\n") {
        let n = conn.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(response).map_err(|e| e.to_string())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The raw (still escaped) contents of every `"key":"…"` string in `text`, joined in order.
fn joined(text: &str, key: &str) -> String {
    let start = format!("\"{key}\":\"");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&start) {
        rest = &rest[at + start.len()..];
        let mut escaped = false;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                let close = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                close
            })
            .map_or(rest.len(), |(i, _)| i);
        out.push_str(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// The quotes and backslashes of an escaped JSON string's inside, unescaped (enough for a call's
/// arguments).
fn unescape(s: &str) -> String {
    s.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// `s` as the inside of a JSON string.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
