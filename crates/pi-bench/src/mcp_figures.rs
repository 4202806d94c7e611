//! What MCP costs: a start with one stdio server configured, and a `codemode` script that makes
//! 100 calls to the server's tool. Both sides talk to the same small stdio server (a Python
//! script written into the data folder: no build, and it starts the same way for both).

use std::time::Duration;

use pi_test_support::mock::script::tool_call;
use serde_json::json;

use crate::agent::{Agent, Res, Target, sandbox};
use crate::figures::{Ctx, MODEL_ARGS, Side, alternate, ms, rounds, two_turns};
use pi_test_support::conformance::sandbox::Sandbox;

/// A line-delimited JSON-RPC MCP server with one tool, `echo`.
const SERVER: &str = r#"import json, sys
TOOLS = [{"name": "echo", "description": "Echoes the text back",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue
    method, rid = msg["method"], msg["id"]
    if method == "initialize":
        result = {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        text = msg.get("params", {}).get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// 100 sequential calls, then a summary: what the model sees is one short line.
const SCRIPT: &str = "let n = 0;\nfor (let i = 0; i < 100; i++) {\n  const r = await tools.mcp__bench__echo({ text: `call ${i}` });\n  if (r.content[0].text === `call ${i}`) n++;\n}\nreturn { ok: n };";

fn configure(ctx: &Ctx, sb: &Sandbox) -> Res<()> {
    let server = ctx.data.join("mcp-bench-server.py");
    if !server.exists() {
        std::fs::write(&server, SERVER).map_err(|e| e.to_string())?;
    }
    let config = json!({"mcpServers": {"bench": {"command": "python3", "args": [server.display().to_string()]}}});
    std::fs::write(sb.agent.join("mcp.json"), config.to_string()).map_err(|e| e.to_string())
}

fn with_python(t: &Target) -> Target {
    let mut t = t.clone();
    if !t.path_env.split(':').any(|d| d == "/usr/bin") {
        t.path_env = format!("{}:/usr/local/bin:/usr/bin:/bin", t.path_env);
    }
    t
}

/// Spawn with one stdio server in `mcp.json` → the first `get_state` response.
pub fn ready_mcp(ctx: &Ctx) -> Vec<Side<f64>> {
    let (ours, reference) = (with_python(&ctx.ours), with_python(&ctx.reference));
    alternate(
        "ready with an MCP server",
        &[&ours, &reference],
        rounds(ctx, 10),
        Duration::from_secs(120),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            configure(ctx, &sb)?;
            let mut args = vec!["--no-session"];
            args.extend(MODEL_ARGS);
            let mut agent = Agent::spawn(t, &sb, &sb.work, &args)?;
            let r = (|| {
                agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
                let line = agent.response("ready", Duration::from_secs(60))?;
                Ok(ms(line.at - agent.spawned_at))
            })();
            agent.stop();
            r
        },
    )
}

/// The model asks for a `codemode` script making 100 MCP tool calls: from the end of that
/// message to the request carrying the script's result (the second of two turns, so the server
/// is connected).
pub fn codemode_calls(ctx: &Ctx) -> Vec<Side<f64>> {
    let (ours, reference) = (with_python(&ctx.ours), with_python(&ctx.reference));
    alternate(
        "codemode, 100 MCP calls",
        &[&ours, &reference],
        rounds(ctx, 8),
        Duration::from_secs(240),
        |t| codemode_run(ctx, t),
    )
}

fn codemode_run(ctx: &Ctx, t: &Target) -> Res<f64> {
    ctx.mock.reset();
    let sb = sandbox(ctx.mock.port)?;
    configure(ctx, &sb)?;
    let mut args = vec!["--no-session"];
    args.extend(MODEL_ARGS);
    let call = |turn: usize| {
        vec![tool_call(
            &format!("cm_{turn}"),
            "codemode",
            json!({ "code": SCRIPT }),
        )]
    };
    let (ms, results) = two_turns(ctx, t, &sb, &sb.work, &args, &call)?;
    // Nested tool calls end first; the codemode call itself ends last.
    match results.last() {
        Some(r) if r.contains("100") => Ok(ms),
        r => Err(format!(
            "the script did not make 100 calls: {}",
            r.map(|r| &r[..r.len().min(300)]).unwrap_or("no result")
        )),
    }
}
