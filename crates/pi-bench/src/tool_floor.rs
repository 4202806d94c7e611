//! The tool turn's floor: its 8 calls run by our tools directly, on a tokio runtime built as
//! the agent builds its own, with nothing around them (no events, no requests, no session). It
//! is the tools' own work on this machine when they share its two cores, so Pi's turn over it
//! is the most that any agent built on these tools could reach here.

use crate::agent::Res;
use pi_agent::ToolInvocation;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// One floor round: the 8 calls once to warm up (as the agent's first turn does), then once
/// measured. The tools get what the agents get: `agent_dir` and, for commands, only `PATH`.
/// Returns the measured wall time from the first call's start to the last one's end, in ms.
pub fn measure(
    tree: &Path,
    agent_dir: &Path,
    path_env: &str,
    calls: &[(&'static str, Value)],
) -> Res<f64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let mut config = pi_tools::config::ToolsConfig::new(tree, agent_dir);
    config.base_env = Some(vec![("PATH".into(), path_env.into())]);
    let names: Vec<&str> = calls.iter().map(|(name, _)| *name).collect();
    let tools = pi_tools::build(&names, config).map_err(|e| e.to_string())?;
    rt.block_on(async {
        run_all(&tools, calls).await?;
        run_all(&tools, calls).await
    })
}

async fn run_all(
    tools: &[Arc<dyn pi_agent::AgentTool>],
    calls: &[(&'static str, Value)],
) -> Res<f64> {
    let start = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for (i, (tool, (_, args))) in tools.iter().zip(calls).enumerate() {
        let Value::Object(args) = args.clone() else {
            return Err(format!("call {i}: arguments are not an object"));
        };
        let fut = tool.execute(ToolInvocation {
            tool_call_id: format!("floor_{i}"),
            args,
            cancel: CancellationToken::new(),
            updates: Arc::new(|_| {}),
        });
        running.spawn(async move { (i, fut.await) });
    }
    while let Some(joined) = running.join_next().await {
        let (i, result) = joined.map_err(|e| e.to_string())?;
        match result {
            Ok(r) if r.is_error != Some(true) => {}
            Ok(_) => return Err(format!("call {i} ({}) returned an error", calls[i].0)),
            Err(e) => return Err(format!("call {i} ({}): {}", calls[i].0, e.0)),
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1000.0)
}

/// The turn's shell commands alone: each `bash` call's command run by the shell the tool would
/// use (`<shell> -c <command>` in the tree, only `PATH` set, output drained), all at once, with
/// nothing else running. It is what process creation costs on this machine, under the floor
/// above whatever runs the tools. Returns the wall time from the first spawn to the last exit.
pub fn shell_commands_alone(
    tree: &Path,
    path_env: &str,
    calls: &[(&'static str, Value)],
) -> Res<f64> {
    let shell = pi_tools::shell::env::resolve_shell(None)?;
    let commands: Vec<&str> = calls
        .iter()
        .filter(|(name, _)| *name == "bash")
        .filter_map(|(_, args)| args.get("command")?.as_str())
        .collect();
    let run = || -> Res<f64> {
        let start = Instant::now();
        let mut children = Vec::new();
        for command in &commands {
            let child = std::process::Command::new(&shell)
                .arg("-c")
                .arg(command)
                .current_dir(tree)
                .env_clear()
                .env("PATH", path_env)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("spawn {}: {e}", shell.display()))?;
            children.push(child);
        }
        for child in children {
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!("a shell command failed: {}", out.status));
            }
        }
        Ok(start.elapsed().as_secs_f64() * 1000.0)
    };
    // Warmed up once, as the turn's tools are.
    run()?;
    run()
}
