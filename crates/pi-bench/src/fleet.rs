//! The fleet figure: [`FLEET`] agents started at once, as an orchestrator runs them, each
//! answering one prompt with a tool call (`read` of a small file) and a final text from the
//! loopback mock. Measured per round: the sum of the agents' peak resident sets (`VmHWM` once
//! all have settled), the wall time from the first spawn until the last agent settled, and the
//! CPU time all of them used over their whole lives (`wait4`, so threads that ended count too).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_test_support::mock::Reply;
use pi_test_support::mock::script::tool_call;
use serde_json::json;

use crate::agent::{Agent, Res, Target, Usage, sandbox};
use crate::figures::{Ctx, MODEL_ARGS, Side, alternate, floor_program, is_settled, rounds};
use crate::stats::{Better, Row};
use pi_bench::datagen;

/// Agents per fleet.
pub const FLEET: usize = 50;

/// The floor's program, built next to `pi-bench` (src/bin/pi-bench-fleet-floor.rs).
const FLOOR_PROGRAM: &str = "pi-bench-fleet-floor";

#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    pub rss_sum_mib: f64,
    pub wall_s: f64,
    pub cpu_s: f64,
}

/// The fleet of each target, in alternation.
pub fn fleet(ctx: &Ctx) -> Res<Vec<Side<Fleet>>> {
    let cwd = datagen::tool_tree(&ctx.data)?;
    ctx.mock.reset();
    // Requests of 50 agents arrive in any order: the reply follows from the request itself.
    ctx.mock.set_rule(Some(Arc::new(|req| {
        if req.body.contains(r#""role":"tool""#) {
            Reply::text("done")
        } else {
            Reply::stream(vec![tool_call(
                "call_1",
                "read",
                json!({"path": "README.md", "limit": 40}),
            )])
        }
    })));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let floor = floor_program(ctx, exe.with_file_name(FLOOR_PROGRAM));
    let targets = [&ctx.ours, &ctx.reference, &floor];
    let sides = alternate(
        &format!("fleet of {FLEET}"),
        &targets,
        rounds(ctx, 3),
        Duration::from_secs(600),
        |t| run(ctx, t, &cwd),
    );
    ctx.mock.set_rule(None);
    Ok(sides)
}

fn run(ctx: &Ctx, t: &Target, cwd: &Path) -> Res<Fleet> {
    let sandboxes = (0..FLEET)
        .map(|_| sandbox(ctx.mock.port))
        .collect::<Res<Vec<_>>>()?;
    let prompt = r#"{"id":"p","type":"prompt","message":"read the readme"}"#;
    let start = Instant::now();
    let mut agents = Vec::with_capacity(FLEET);
    let mut failure = None;
    for sb in &sandboxes {
        match Agent::spawn(t, sb, cwd, &MODEL_ARGS).and_then(|mut a| {
            a.send(prompt)?;
            Ok(a)
        }) {
            Ok(a) => agents.push(a),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let deadline = start + Duration::from_secs(300);
    let mut last = start;
    for a in &agents {
        if failure.is_some() {
            break;
        }
        match settle(a, deadline) {
            Ok(at) => last = last.max(at),
            Err(e) => failure = Some(e),
        }
    }
    let wall = last.saturating_duration_since(start);
    // Peaks are read while the agents still live: `VmHWM` is the high-water mark of the
    // process's own memory since its exec. (`wait4`'s `ru_maxrss` is not: exec carries the
    // pre-exec high-water mark over, which after a vfork-style spawn is the harness's own.)
    let peaks: Vec<Option<u64>> = agents.iter().map(Agent::peak_rss_kib).collect();
    // Every agent is stopped (by its PID), also after a failure.
    let usages: Vec<Option<Usage>> = agents.into_iter().map(Agent::stop_with_usage).collect();
    if let Some(e) = failure {
        return Err(e);
    }
    let (mut rss_kib, mut cpu) = (0u64, Duration::ZERO);
    for (peak, u) in peaks.into_iter().zip(usages) {
        rss_kib += peak.ok_or("an agent's VmHWM could not be read")?;
        cpu += u.ok_or("an agent could not be waited for")?.cpu;
    }
    Ok(Fleet {
        rss_sum_mib: rss_kib as f64 / 1024.0,
        wall_s: wall.as_secs_f64(),
        cpu_s: cpu.as_secs_f64(),
    })
}

/// Waits until the agent settled after running the tool; returns when.
fn settle(agent: &Agent, deadline: Instant) -> Res<Instant> {
    let mut tool_ok = false;
    loop {
        let line = agent.next(deadline.saturating_duration_since(Instant::now()))?;
        if line.text.starts_with(r#"{"type":"tool_execution_end""#) {
            tool_ok = !line.text.contains(r#""isError":true"#);
        } else if is_settled(&line.text) {
            return if tool_ok {
                Ok(line.at)
            } else {
                Err(format!(
                    "the read tool failed or did not run (pid {})",
                    agent.pid
                ))
            };
        }
    }
}

/// The figure's rows; each followed by the floor's, when it ran.
pub fn rows(sides: &[Side<Fleet>]) -> Vec<Row> {
    let (o, r, floor) = (&sides[0], &sides[1], sides.get(2));
    let col = |side: &Side<Fleet>, f: fn(&Fleet) -> f64| side.samples.iter().map(f).collect();
    let mut out = Vec::new();
    for (figure, unit, f, want) in [
        (
            format!(
                "fleet: {FLEET} agents started at once, one prompt + tool call each — sum of peak RSS"
            ),
            "MiB",
            (|x: &Fleet| x.rss_sum_mib) as fn(&Fleet) -> f64,
            15.0,
        ),
        (
            "… wall time, first spawn → all settled".to_string(),
            "s",
            |x| x.wall_s,
            18.0,
        ),
        (
            "… CPU time of all agents (user + system)".to_string(),
            "s",
            |x| x.cpu_s,
            150.0,
        ),
    ] {
        let mut row = Row::new(&figure, unit, Better::Lower);
        row.ours = col(o, f);
        row.reference = Some(col(r, f));
        let floor_samples = floor.map(|s| col(s, f)).unwrap_or_default();
        let best = crate::floor_ratio(&floor_samples, &row);
        if let Some(ratio) = row.ratio() {
            row.target = Some((
                format!("≥ {want}× less{best}"),
                ratio > 0.0 && 1.0 / ratio >= want,
            ));
        }
        out.push(row);
        if let Some(side) = floor {
            let label = if out.len() == 1 {
                format!(
                    "… floor: {FLEET} minimal agents (one thread, std only: the prompt, Pi's \
                     layout, the two requests, the read, the session records and events, nothing \
                     else), same measurement"
                )
            } else {
                "… floor (the same minimal agents)".to_string()
            };
            out.push(crate::floor_row(&label, unit, floor_samples, side.note()));
        }
    }
    if let Some(n) = o.note() {
        out[0].notes.push(format!("ours: {n}"));
    }
    if let Some(n) = r.note() {
        out[0].notes.push(format!("ref: {n}"));
    }
    out
}
