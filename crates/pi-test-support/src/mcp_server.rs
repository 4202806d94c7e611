//! A small MCP server over stdio (newline-delimited JSON-RPC), for tests and conformance
//! scenarios that need a real server process both Pi 1.6.0 and our `pi` can start.
//!
//! Behaviour is chosen by flags so one binary serves every scenario:
//! `--name <server name>`, `--instructions <text>`, `--fail-start <message>` (read the first
//! request, write the message to stderr and exit 1 without answering), `--no-resources`,
//! `--meet` (adds the `meet` tool, stdio only). Tools:
//!
//! | tool | result |
//! |---|---|
//! | `echo {text}` | the text |
//! | `add {a, b}` | `"<sum>"` as text and `{sum}` as `structuredContent` |
//! | `list_items {}` | a JSON list of items with `id`, `name`, `color` (for scripts that filter) |
//! | `get_item {id}` | one item, or an `isError` result for an unknown id |
//! | `progress {steps}` | `steps` progress notifications, then `done` |
//! | `crash {}` | writes `crashing` to stderr and exits 3 without answering (a server that dies mid-call) |
//! | `fail {}` | a JSON-RPC error `-32000 tool failed on purpose` |
//! | `meet {text}` | (`--meet`) no answer until a second `meet` call arrives; then both are answered, the later one first and the earlier one 300 ms after, each with `<own text> met <other text>`: a client that waits for one call before sending the next never gets an answer |
//!
//! The server also answers `ping`, `resources/list` (one text resource) and `resources/read`.
//! It is synchronous and std-only: a test server must be obviously correct.

use serde_json::{Value, json};
use std::io::{BufRead, Write};

/// Flags of one server process.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    pub name: String,
    pub instructions: Option<String>,
    pub fail_start: Option<String>,
    pub resources: bool,
    pub meet: bool,
}

impl ServerOptions {
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<ServerOptions, String> {
        let mut o = ServerOptions {
            name: "test-server".into(),
            resources: true,
            ..ServerOptions::default()
        };
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
            match a.as_str() {
                "--name" => o.name = value()?,
                "--instructions" => o.instructions = Some(value()?),
                "--fail-start" => o.fail_start = Some(value()?),
                "--no-resources" => o.resources = false,
                "--meet" => o.meet = true,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(o)
    }
}

fn items() -> Value {
    json!([
        {"id": 1, "name": "apple", "color": "red"},
        {"id": 2, "name": "banana", "color": "yellow"},
        {"id": 3, "name": "cherry", "color": "red"},
        {"id": 4, "name": "lime", "color": "green"}
    ])
}

fn tools() -> Value {
    json!([
        {"name": "echo", "description": "Echoes the text back",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "What to echo"}}, "required": ["text"]},
         "annotations": {"readOnlyHint": true}},
        {"name": "add", "description": "Adds two numbers",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
         "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}},
        {"name": "list_items", "description": "Lists every item with its color",
         "inputSchema": {"type": "object"}},
        {"name": "get_item", "description": "Gets one item by id",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "number"}}, "required": ["id"]}},
        {"name": "progress", "description": "Reports progress, then finishes",
         "inputSchema": {"type": "object", "properties": {"steps": {"type": "number"}}}},
        {"name": "crash", "description": "Makes the server exit in the middle of the call",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "fail", "description": "Answers with a protocol error",
         "inputSchema": {"type": "object", "properties": {}}}
    ])
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

/// Runs the server on this process's stdin/stdout until stdin closes. Returns the exit code.
pub fn run_stdio(opts: &ServerOptions) -> i32 {
    let stdin = std::io::stdin();
    if let Some(msg) = &opts.fail_start {
        // Read the client's first message first, so it always sees the connection close (not
        // a write to a process that is already gone).
        let mut first = String::new();
        let _ = stdin.lock().read_line(&mut first);
        eprintln!("{msg}");
        return 1;
    }
    let mut out = std::io::stdout().lock();
    // A `meet` call waiting for its partner: (request id, text).
    let mut waiting: Option<(Value, String)> = None;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg.get("method").is_none() || msg.get("id").is_none() {
            continue; // responses to nothing we asked, and notifications
        }
        if opts.meet
            && msg.get("method") == Some(&json!("tools/call"))
            && msg.pointer("/params/name") == Some(&json!("meet"))
        {
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            let own = msg
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let Some((first_id, first)) = waiting.take() else {
                waiting = Some((id, own));
                continue;
            };
            // The later call first; the earlier one a moment after, so the client handles the
            // two answers one at a time (events in an order that does not depend on reads).
            let answers = [
                (id, format!("{own} met {first}")),
                (first_id, format!("{first} met {own}")),
            ];
            for (n, (id, t)) in answers.into_iter().enumerate() {
                if n > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": text(t)});
                if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
                    return 0;
                }
            }
            continue;
        }
        let Some(reply) = reply(opts, &msg, &mut out) else {
            eprintln!("crashing");
            return 3;
        };
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    0
}

/// The answer to one request (progress notifications go to `out` first); `None` for `crash`,
/// where the server dies without answering.
pub fn reply(opts: &ServerOptions, msg: &Value, out: &mut impl Write) -> Option<Value> {
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    match handle(opts, method, &params, &id, out) {
        Handled::Result(r) => Some(json!({"jsonrpc": "2.0", "id": id, "result": r})),
        Handled::Error(code, m) => {
            Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": m}}))
        }
        Handled::Crash => None,
    }
}

enum Handled {
    Result(Value),
    Error(i64, String),
    Crash,
}

fn handle(
    opts: &ServerOptions,
    method: &str,
    params: &Value,
    id: &Value,
    out: &mut impl Write,
) -> Handled {
    match method {
        "initialize" => {
            let mut caps = json!({"tools": {"listChanged": true}, "logging": {}});
            if opts.resources {
                caps["resources"] = json!({});
            }
            let mut r = json!({
                "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-06-18")),
                "capabilities": caps,
                "serverInfo": {"name": opts.name, "version": "1.0.0"},
            });
            if let Some(i) = &opts.instructions {
                r["instructions"] = json!(i);
            }
            Handled::Result(r)
        }
        "ping" => Handled::Result(json!({})),
        "tools/list" => {
            let mut list = tools();
            if opts.meet
                && let Some(a) = list.as_array_mut()
            {
                a.push(json!({"name": "meet", "description": "Answers once a second meet call arrives",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}));
            }
            Handled::Result(json!({"tools": list}))
        }
        "resources/list" if opts.resources => Handled::Result(json!({"resources": [
            {"uri": "test://readme", "name": "readme", "mimeType": "text/plain"}
        ]})),
        "resources/read" if opts.resources => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            Handled::Result(json!({"contents": [
                {"uri": uri, "mimeType": "text/plain", "text": "The test server's readme."}
            ]}))
        }
        "tools/call" => call_tool(params, id, out),
        _ => Handled::Error(-32601, format!("Method not found: {method}")),
    }
}

fn call_tool(params: &Value, _id: &Value, out: &mut impl Write) -> Handled {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    match name {
        "echo" => Handled::Result(text(args.get("text").and_then(Value::as_str).unwrap_or(""))),
        "add" => {
            let a = args.get("a").and_then(Value::as_f64).unwrap_or(0.0);
            let b = args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
            // Whole sums as integers, as a JavaScript server would print them.
            let s = a + b;
            let sum = if s.fract() == 0.0 && s.abs() < 1e15 {
                json!(s as i64)
            } else {
                json!(s)
            };
            let mut r = text(sum.to_string());
            r["structuredContent"] = json!({"sum": sum});
            Handled::Result(r)
        }
        "list_items" => Handled::Result(text(items().to_string())),
        "get_item" => {
            let id = args.get("id").and_then(Value::as_f64);
            let found = items().as_array().and_then(|a| {
                a.iter()
                    .find(|i| i.get("id").and_then(Value::as_f64) == id)
                    .cloned()
            });
            match found {
                Some(item) => Handled::Result(text(item.to_string())),
                None => {
                    let mut r = text(format!(
                        "no item {}",
                        args.get("id").unwrap_or(&Value::Null)
                    ));
                    r["isError"] = json!(true);
                    Handled::Result(r)
                }
            }
        }
        "progress" => {
            let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(2);
            let token = params.pointer("/_meta/progressToken").cloned();
            if let Some(token) = token {
                for i in 1..=steps {
                    let n = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": i, "total": steps}});
                    let _ = writeln!(out, "{n}").and_then(|_| out.flush());
                }
            }
            Handled::Result(text("done"))
        }
        "crash" => Handled::Crash,
        "fail" => Handled::Error(-32000, "tool failed on purpose".into()),
        other => Handled::Error(-32602, format!("Unknown tool: {other}")),
    }
}

/// The `mcp-test-server` binary beside the running executable (`target/<profile>/`, or its
/// parent for test binaries in `deps/`), built with cargo when missing.
pub fn binary_path() -> Result<std::path::PathBuf, String> {
    static FOUND: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    FOUND.get_or_init(find_or_build).clone()
}

fn find_or_build() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let name = format!("mcp-test-server{}", std::env::consts::EXE_SUFFIX);
    let mut dirs = Vec::new();
    if let Some(d) = exe.parent() {
        dirs.push(d.to_path_buf());
        if let Some(p) = d.parent() {
            dirs.push(p.to_path_buf());
        }
    }
    let own_target = dirs
        .last()
        .cloned()
        .unwrap_or_else(std::env::temp_dir)
        .join("mcp-test-server-build");
    dirs.push(own_target.join("debug"));
    for d in &dirs {
        let p = d.join(&name);
        if p.is_file() {
            return Ok(p);
        }
    }
    // Only a test run of one package (`cargo test -p x`) gets here. The running cargo holds the
    // lock of the workspace's target dir, so the server is built into a target dir of its own.
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "--manifest-path",
            manifest,
            "--bin",
            "mcp-test-server",
        ])
        .arg("--target-dir")
        .arg(&own_target)
        .status()
        .map_err(|e| format!("cargo build mcp-test-server: {e}"))?;
    if !status.success() {
        return Err("cargo build mcp-test-server failed".into());
    }
    dirs.iter()
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .ok_or_else(|| "mcp-test-server not found after building it".into())
}
