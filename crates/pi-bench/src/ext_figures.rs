//! What extensions cost: a start with one trivial extension, and the round trip of a
//! `tool_call` gate (an extension handler every tool call waits for). Ours runs extensions in a
//! Node host process; Pi runs them in its own process. Both sides get Node 22 on PATH; ours
//! keeps its host's installed files in one cache directory across runs, as a user's machine
//! does.

use std::path::Path;
use std::time::Duration;

use crate::agent::{Agent, Res, Target, sandbox};
use crate::figures::{
    Ctx, MODEL_ARGS, Side, alternate, eight_calls, ms, rounds, tool_turn_run_with,
};
use pi_bench::datagen;

const TRIVIAL: &str = "export default function (pi: any) {\n  pi.registerCommand(\"bench\", { description: \"a trivial extension\", handler: async () => {} });\n}\n";
const GATE: &str =
    "export default function (pi: any) {\n  pi.on(\"tool_call\", async () => undefined);\n}\n";

fn with_node(t: &Target, node_path: &str, cache: &Path) -> Target {
    let mut t = t.clone();
    t.path_env = node_path.to_string();
    t.env
        .push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
    t
}

fn write_extension(dir: &Path, name: &str, text: &str) -> Res<String> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}

/// Spawn with `-e <one trivial extension>` → the first `get_state` response (the extension is
/// loaded and bound by then, on both sides).
pub fn ready_extension(ctx: &Ctx, node_path: &str, cache: &Path) -> Vec<Side<f64>> {
    let ours = with_node(&ctx.ours, node_path, cache);
    let targets = [&ours, &ctx.reference];
    alternate(
        "ready with an extension",
        &targets,
        rounds(ctx, 10),
        Duration::from_secs(120),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            let ext = write_extension(&sb.work, "trivial.ts", TRIVIAL)?;
            let mut args = vec!["--no-session"];
            args.extend(MODEL_ARGS);
            args.extend(["-e", ext.as_str()]);
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

/// What one `tool_call` gate adds per call: the tool turn (8 parallel calls) with an extension
/// whose `tool_call` handler returns nothing, minus the same turn without it, per call. Sides:
/// ours without, ours with, ref without, ref with.
pub fn tool_gate(ctx: &Ctx, node_path: &str, cache: &Path) -> Res<Vec<Side<f64>>> {
    let tree = datagen::tool_tree(&ctx.data)?;
    let gate_dir = ctx.data.join("gate-extension");
    std::fs::create_dir_all(&gate_dir).map_err(|e| e.to_string())?;
    let gate = write_extension(&gate_dir, "gate.ts", GATE)?;
    let ours = with_node(&ctx.ours, node_path, cache);
    let mut ours_gate = ours.clone();
    ours_gate.key = "ours+gate";
    let mut ref_gate = ctx.reference.clone();
    ref_gate.key = "ref+gate";
    let targets = [&ours, &ours_gate, &ctx.reference, &ref_gate];
    Ok(alternate(
        "tool_call gate",
        &targets,
        rounds(ctx, 10),
        Duration::from_secs(240),
        |t| {
            let extra: Vec<&str> = if t.key.ends_with("+gate") {
                vec!["-e", gate.as_str()]
            } else {
                Vec::new()
            };
            let (ms, results) = tool_turn_run_with(ctx, t, &tree, &eight_calls, &extra)?;
            if results.len() != 8 {
                return Err(format!("{} tool results", results.len()));
            }
            Ok(ms)
        },
    ))
}
