//! The measurements. Every figure runs the targets in alternation (the order flips each round),
//! discards a warm-up round, and stops after `reps` rounds or when its time budget is spent
//! (after at least three measured rounds).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use pi_test_support::mock::Reply;
use pi_test_support::mock::script::{Chunks, Step, tool_call};
use serde_json::json;

use crate::agent::{Agent, Res, Target, sandbox};
use crate::stats::percentile;
use pi_bench::datagen;
use pi_bench::mock::{Event, Mock, render};

pub struct Ctx {
    pub ours: Target,
    pub reference: Target,
    pub mock: Mock,
    pub data: PathBuf,
    pub rg: PathBuf,
    /// Multiplies every figure's round count (`--quick` uses less than 1).
    pub scale: f64,
}

pub const MODEL_ARGS: [&str; 4] = ["--provider", "mock-openai", "--model", "mock-gpt"];
const ALL_TOOLS: &str = "read,bash,edit,write,grep,find,ls";

/// Samples of one side, plus why runs failed.
#[derive(Debug)]
pub struct Side<T> {
    pub samples: Vec<T>,
    pub errors: Vec<String>,
}

impl<T> Default for Side<T> {
    fn default() -> Self {
        Side {
            samples: Vec::new(),
            errors: Vec::new(),
        }
    }
}

impl<T> Side<T> {
    pub fn note(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        let mut first = self.errors[0].clone();
        if first.len() > 160 {
            let cut = (0..=160)
                .rev()
                .find(|i| first.is_char_boundary(*i))
                .unwrap_or(0);
            first.truncate(cut);
            first.push('…');
        }
        Some(format!("{} failed run(s): {first}", self.errors.len()))
    }
}

/// Set by `--skip-reference` (profiling our binary alone): runs of the reference are skipped.
pub static SKIP_REFERENCE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Runs `f` for each target in alternation. Round 0 is a warm-up and is discarded. A target
/// whose warm-up and first two measured rounds all fail is not tried again.
pub fn alternate<T>(
    what: &str,
    targets: &[&Target],
    rounds: usize,
    budget: Duration,
    mut f: impl FnMut(&Target) -> Res<T>,
) -> Vec<Side<T>> {
    let mut sides: Vec<Side<T>> = targets.iter().map(|_| Side::default()).collect();
    let mut failures = vec![0usize; targets.len()];
    let start = Instant::now();
    for round in 0..=rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if failures[i] >= 3 && sides[i].samples.is_empty() {
                continue;
            }
            if targets[i].key == "ref" && SKIP_REFERENCE.load(std::sync::atomic::Ordering::Relaxed)
            {
                continue;
            }
            let t0 = Instant::now();
            let r = f(targets[i]);
            eprintln!(
                "  {what}: {} round {round}{} {} ({:.1} s)",
                targets[i].key,
                if round == 0 { " (warm-up)" } else { "" },
                if r.is_ok() { "ok" } else { "FAILED" },
                t0.elapsed().as_secs_f64()
            );
            match r {
                Ok(v) if round > 0 => sides[i].samples.push(v),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("    {e}");
                    failures[i] += 1;
                    sides[i].errors.push(e);
                }
            }
        }
        if round >= 3 && start.elapsed() > budget {
            eprintln!("  {what}: time budget spent after {round} rounds");
            break;
        }
    }
    sides
}

pub fn rounds(ctx: &Ctx, n: usize) -> usize {
    ((n as f64 * ctx.scale).round() as usize).max(3)
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// ---------------------------------------------------------------------------------------------
// ready + idle RSS

#[derive(Debug, Clone, Copy)]
pub struct Ready {
    pub ready_ms: f64,
    pub idle_rss_mib: f64,
}

/// Spawn `pi --mode rpc --no-session` in a fresh agent dir and time the first `get_state`
/// response (the command is written right after the spawn). Then the process tree's RSS after
/// 500 ms idle.
pub fn ready(ctx: &Ctx) -> Vec<Side<Ready>> {
    let targets = [&ctx.ours, &ctx.reference];
    alternate(
        "ready",
        &targets,
        rounds(ctx, 20),
        Duration::from_secs(90),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            let mut args = vec!["--no-session"];
            args.extend(MODEL_ARGS);
            let mut agent = Agent::spawn(t, &sb, &sb.work, &args)?;
            let r = (|| {
                agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
                let line = agent.response("ready", Duration::from_secs(30))?;
                let ready_ms = ms(line.at - agent.spawned_at);
                std::thread::sleep(Duration::from_millis(500));
                let idle_rss_mib = agent.tree_rss_kib() as f64 / 1024.0;
                Ok(Ready {
                    ready_ms,
                    idle_rss_mib,
                })
            })();
            agent.stop();
            r
        },
    )
}

// ---------------------------------------------------------------------------------------------
// ready with installed packages

/// The three packages: two from npm (one with a version range), one from git, each with an
/// extension (one command), a skill and a prompt template.
const PACKAGES: [(&str, &str, &str); 3] = [
    ("npm:pi-bench-a", "npm/node_modules/pi-bench-a", "a"),
    ("npm:pi-bench-b@^1", "npm/node_modules/pi-bench-b", "b"),
    ("git:127.0.0.1/bench/c", "git/127.0.0.1/bench/c", "c"),
];

/// Writes the packages into the agent dir as `pi install` leaves them, and lists them in
/// `settings.json`.
fn install_packages(agent: &Path) -> Res<()> {
    let write = |rel: String, text: String| -> Res<()> {
        let p = agent.join(rel);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(p, text).map_err(|e| e.to_string())
    };
    for (_, dir, key) in PACKAGES {
        write(
            format!("{dir}/package.json"),
            json!({"name": format!("pi-bench-{key}"), "version": "1.0.0", "keywords": ["pi-package"]})
                .to_string(),
        )?;
        write(
            format!("{dir}/extensions/{key}.ts"),
            format!(
                "export default function (pi: any) {{\n  pi.registerCommand(\"bench-{key}\", {{ description: \"from package {key}\", handler: async () => {{}} }});\n}}\n"
            ),
        )?;
        write(
            format!("{dir}/skills/skill-{key}/SKILL.md"),
            format!(
                "---\nname: skill-{key}\ndescription: Skill of package {key}\n---\nDo {key}.\n"
            ),
        )?;
        write(
            format!("{dir}/prompts/prompt-{key}.md"),
            format!("---\ndescription: Prompt of package {key}\n---\nRun {key} on $@\n"),
        )?;
    }
    let sources: Vec<&str> = PACKAGES.iter().map(|(s, _, _)| *s).collect();
    write(
        "settings.json".into(),
        json!({"packages": sources}).to_string(),
    )
}

/// Like `ready`, with three installed packages (offline: nothing is fetched): spawn →
/// `get_commands` response, which must list each package's command, skill and prompt.
/// Both sides get Node 22 on PATH (our extensions run in a Node host), and ours keeps its
/// host's installed files in one cache directory across runs, as a user's machine does.
pub fn ready_packages(ctx: &Ctx, node_path: &str, cache: &Path) -> Vec<Side<f64>> {
    let mut ours = ctx.ours.clone();
    ours.path_env = node_path.to_string();
    ours.env
        .push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
    let targets = [&ours, &ctx.reference];
    alternate(
        "packages",
        &targets,
        rounds(ctx, 10),
        Duration::from_secs(120),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            install_packages(&sb.agent)?;
            let mut args = vec!["--no-session"];
            args.extend(MODEL_ARGS);
            let mut agent = Agent::spawn(t, &sb, &sb.work, &args)?;
            let r = (|| {
                agent.send(r#"{"id":"c","type":"get_commands"}"#)?;
                let line = agent.response("c", Duration::from_secs(60))?;
                for (_, _, key) in PACKAGES {
                    for name in [
                        format!("bench-{key}"),
                        format!("skill:skill-{key}"),
                        format!("prompt-{key}"),
                    ] {
                        if !line.text.contains(&format!("\"name\":\"{name}\"")) {
                            return Err(format!("`{name}` missing from get_commands"));
                        }
                    }
                }
                Ok(ms(line.at - agent.spawned_at))
            })();
            agent.stop();
            r
        },
    )
}

// ---------------------------------------------------------------------------------------------
// stream relay

pub const FLOOD_DELTAS: usize = 20_000;
pub const LOCKSTEP_DELTAS: usize = 2_000;

#[derive(Debug, Clone, Copy)]
pub struct Stream {
    pub records_per_s: f64,
    pub flood_p50_us: f64,
    pub lock_p50_us: f64,
    pub lock_p99_us: f64,
}

fn text_reply(deltas: usize) -> Reply {
    let pieces: Vec<String> = (0..deltas).map(|i| format!("w{} ", i % 1000)).collect();
    Reply::stream(vec![Step::Text(Chunks::Many(pieces))])
}

fn is_text_delta(line: &str) -> bool {
    line.starts_with("{\"type\":\"message_update\"") && line.contains("\"type\":\"text_delta\"")
}

pub fn is_settled(line: &str) -> bool {
    line.starts_with("{\"type\":\"agent_settled\"")
}

/// A calibration target run in alternation with both agents: `program`, with no `PATH`.
pub(crate) fn floor_program(ctx: &Ctx, program: PathBuf) -> Target {
    Target {
        key: "floor",
        program,
        path_env: String::new(),
        tmpdir: ctx.ours.tmpdir.clone(),
        env: Vec::new(),
    }
}

/// `pi-bench` itself as a calibration target: `env` selects its floor mode.
fn floor_target(ctx: &Ctx, env: &str, value: String) -> Target {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("pi-bench"));
    Target {
        env: vec![(env.to_string(), value)],
        ..floor_program(ctx, exe)
    }
}

/// The mock streams [`FLOOD_DELTAS`] text deltas as fast as the socket takes them; records/s is
/// deltas / (last text_delta record read − first chunk written). Then a lock-step stream of
/// [`LOCKSTEP_DELTAS`]: each delta is written only after the previous one's record was read, so
/// record-read − chunk-write is the added latency without queueing.
///
/// A third target, the relay floor (`pi-bench` itself in [`crate::relay`] mode: one thread,
/// blocking reads, one line written per SSE event), shows what this machine and this
/// measurement allow at best.
pub fn stream(ctx: &Ctx) -> Vec<Side<Stream>> {
    let flood = Arc::new(render(&text_reply(FLOOD_DELTAS), 1));
    let lock = Arc::new(render(&text_reply(LOCKSTEP_DELTAS), 2));
    let floor = floor_target(ctx, crate::relay::PORT_ENV, ctx.mock.port.to_string());
    let targets = [&ctx.ours, &ctx.reference, &floor];
    alternate(
        "stream relay",
        &targets,
        rounds(ctx, 5),
        Duration::from_secs(150),
        |t| {
            ctx.mock.reset();
            let sb = sandbox(ctx.mock.port)?;
            let mut args = vec!["--no-session"];
            args.extend(MODEL_ARGS);
            let mut agent = Agent::spawn(t, &sb, &sb.work, &args)?;
            let r = stream_run(ctx, &mut agent, flood.clone(), lock.clone());
            agent.stop();
            r
        },
    )
}

/// With `PI_BENCH_VERBOSE`: the agent's context switches and CPU per delta since the counts given.
fn print_cost_per_delta(agent: &Agent, phase: &str, deltas: usize, switches: u64, cpu_us: u64) {
    if std::env::var_os("PI_BENCH_VERBOSE").is_some() {
        eprintln!(
            "    {}: {:.2} context switches and {:.1} µs CPU per delta {phase}",
            agent.pid,
            (agent.context_switches() - switches) as f64 / deltas as f64,
            (agent.cpu_us() - cpu_us) as f64 / deltas as f64
        );
    }
}

fn stream_run(
    ctx: &Ctx,
    agent: &mut Agent,
    flood: Arc<Vec<Event>>,
    lock: Arc<Vec<Event>>,
) -> Res<Stream> {
    agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
    agent.response("ready", Duration::from_secs(30))?;

    // Flood.
    let (wtx, wrx) = channel();
    ctx.mock.push(Box::new(move |r, _| {
        r.head()?;
        let mut shown = Vec::with_capacity(flood.len());
        for ev in flood.iter() {
            let t = r.chunk(ev.bytes.as_bytes())?;
            if ev.shown {
                shown.push(t);
            }
        }
        r.finish()?;
        let _ = wtx.send(shown);
        Ok(())
    }));
    let switches_before = agent.context_switches();
    let cpu_before = agent.cpu_us();
    agent.send(r#"{"id":"p1","type":"prompt","message":"stream"}"#)?;
    let mut reads = Vec::with_capacity(FLOOD_DELTAS);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = agent.next(deadline.saturating_duration_since(Instant::now()))?;
        if is_text_delta(&line.text) {
            reads.push(line.at);
        } else if is_settled(&line.text) {
            break;
        }
    }
    let writes = wrx
        .recv_timeout(Duration::from_secs(5))
        .map_err(|_| "the mock did not finish the flood stream".to_string())?;
    if reads.len() != FLOOD_DELTAS || writes.len() < FLOOD_DELTAS {
        return Err(format!(
            "flood: {} text_delta records for {FLOOD_DELTAS} deltas ({} written)",
            reads.len(),
            writes.len()
        ));
    }
    print_cost_per_delta(
        agent,
        "during the flood",
        FLOOD_DELTAS,
        switches_before,
        cpu_before,
    );
    let span = reads[FLOOD_DELTAS - 1].saturating_duration_since(writes[0]);
    let records_per_s = FLOOD_DELTAS as f64 / span.as_secs_f64();
    let flood_lat: Vec<f64> = (0..FLOOD_DELTAS)
        .map(|i| reads[i].saturating_duration_since(writes[i]).as_secs_f64() * 1e6)
        .collect();

    // Lock-step.
    let (wtx, wrx) = channel();
    let (gtx, grx) = channel::<()>();
    ctx.mock.push(Box::new(move |r, _| {
        r.head()?;
        let mut n = 0;
        for ev in lock.iter() {
            let t = r.chunk(ev.bytes.as_bytes())?;
            if ev.shown && n < LOCKSTEP_DELTAS {
                n += 1;
                let _ = wtx.send(t);
                if grx.recv_timeout(Duration::from_secs(10)).is_err() {
                    break;
                }
            }
        }
        r.finish()?;
        Ok(())
    }));
    let switches_before = agent.context_switches();
    let cpu_before = agent.cpu_us();
    agent.send(r#"{"id":"p2","type":"prompt","message":"lock-step"}"#)?;
    let mut lat = Vec::with_capacity(LOCKSTEP_DELTAS);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = agent.next(deadline.saturating_duration_since(Instant::now()))?;
        if is_text_delta(&line.text) {
            let w = wrx
                .recv_timeout(Duration::from_secs(1))
                .map_err(|_| "lock-step: a record without a written delta".to_string())?;
            lat.push(line.at.saturating_duration_since(w).as_secs_f64() * 1e6);
            let _ = gtx.send(());
        } else if is_settled(&line.text) {
            break;
        }
    }
    print_cost_per_delta(
        agent,
        "in lock-step",
        LOCKSTEP_DELTAS,
        switches_before,
        cpu_before,
    );
    if lat.len() != LOCKSTEP_DELTAS {
        return Err(format!(
            "lock-step: {} text_delta records for {LOCKSTEP_DELTAS} deltas",
            lat.len()
        ));
    }
    Ok(Stream {
        records_per_s,
        flood_p50_us: percentile(&flood_lat, 50.0),
        lock_p50_us: percentile(&lat, 50.0),
        lock_p99_us: percentile(&lat, 99.0),
    })
}

// ---------------------------------------------------------------------------------------------
// tool turn and grep turn

/// One agent process, two prompts, each answered by a tool-call message (`calls`, ids made
/// unique per turn) and then a text. The first turn warms up; the figure is the second turn's
/// time from the end of the tool-call response body to the next request's arrival. Returns it
/// and the text of every `tool_execution_end` record of the measured turn.
pub(crate) fn tool_turn_run(
    ctx: &Ctx,
    t: &Target,
    cwd: &Path,
    calls: &dyn Fn(usize) -> Vec<Step>,
) -> Res<(f64, Vec<String>)> {
    tool_turn_run_with(ctx, t, cwd, calls, &[])
}

/// [`tool_turn_run`] with more arguments for the agent (an extension to load).
pub(crate) fn tool_turn_run_with(
    ctx: &Ctx,
    t: &Target,
    cwd: &Path,
    calls: &dyn Fn(usize) -> Vec<Step>,
    extra: &[&str],
) -> Res<(f64, Vec<String>)> {
    let (ms, mut ends) = tool_turns(ctx, t, cwd, calls, extra, 2)?;
    Ok((ms, ends.pop().unwrap_or_default()))
}

/// [`turns`] in a fresh sandbox, the agent given every tool (`--tools`) and `extra`.
fn tool_turns(
    ctx: &Ctx,
    t: &Target,
    cwd: &Path,
    calls: &dyn Fn(usize) -> Vec<Step>,
    extra: &[&str],
    count: usize,
) -> Res<(f64, Vec<Vec<String>>)> {
    ctx.mock.reset();
    let sb = sandbox(ctx.mock.port)?;
    let mut args = vec!["--no-session"];
    args.extend(MODEL_ARGS);
    args.extend(["--tools", ALL_TOOLS]);
    args.extend(extra);
    turns(ctx, t, &sb, cwd, &args, calls, count)
}

/// The two turns of [`tool_turn_run`] in a sandbox the caller prepared, with `args` whole (the
/// mock must be reset first).
pub(crate) fn two_turns(
    ctx: &Ctx,
    t: &Target,
    sb: &pi_test_support::conformance::sandbox::Sandbox,
    cwd: &Path,
    args: &[&str],
    calls: &dyn Fn(usize) -> Vec<Step>,
) -> Res<(f64, Vec<String>)> {
    let (ms, mut ends) = turns(ctx, t, sb, cwd, args, calls, 2)?;
    Ok((ms, ends.pop().unwrap_or_default()))
}

/// `count` prompts in one agent process, each answered by a tool-call message (`calls(turn)`)
/// and then a text. Returns the last turn's time (end of the tool-call response body → the
/// next request's arrival) and the `tool_execution_end` records of every turn after the first.
pub(crate) fn turns(
    ctx: &Ctx,
    t: &Target,
    sb: &pi_test_support::conformance::sandbox::Sandbox,
    cwd: &Path,
    args: &[&str],
    calls: &dyn Fn(usize) -> Vec<Step>,
    count: usize,
) -> Res<(f64, Vec<Vec<String>>)> {
    let mut agent = Agent::spawn(t, sb, cwd, args)?;
    let r = (|| {
        agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
        agent.response("ready", Duration::from_secs(30))?;
        let (etx, erx) = channel();
        for turn in 0..count {
            let reply = Reply::stream(calls(turn));
            let etx = etx.clone();
            let n = 2 * turn + 1;
            ctx.mock.push(Box::new(move |r, _| {
                let end = r.reply(&reply, n)?;
                let _ = etx.send(end);
                Ok(())
            }));
            ctx.mock.push(Box::new(move |r, _| {
                r.reply(&Reply::text("done"), n + 1).map(|_| ())
            }));
        }
        let mut ends = Vec::new();
        let mut results = Vec::new();
        // Collected only when asked for: the harness does no more than it must while measuring.
        let show_timeline = std::env::var_os("PI_BENCH_TIMELINE").is_some();
        let mut timeline = Vec::new();
        for turn in 0..count {
            agent.send(&format!(
                r#"{{"id":"t{turn}","type":"prompt","message":"run the tools"}}"#
            ))?;
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut these = Vec::new();
            loop {
                let line = agent.next(deadline.saturating_duration_since(Instant::now()))?;
                if show_timeline && turn + 1 == count {
                    timeline.push((line.at, record_kind(&line.text), line.text.len()));
                }
                if turn > 0 && line.text.starts_with("{\"type\":\"tool_execution_end\"") {
                    these.push(line.text);
                } else if is_settled(&line.text) {
                    break;
                }
            }
            if turn > 0 {
                results.push(these);
            }
            ends.push(
                erx.recv_timeout(Duration::from_secs(1))
                    .map_err(|_| "the mock sent no tool-call message".to_string())?,
            );
        }
        let mut arrivals = Vec::new();
        for _ in 0..2 * count {
            arrivals.push(ctx.mock.arrival(Duration::from_secs(1))?.2);
        }
        let last = arrivals[2 * count - 1].saturating_duration_since(ends[count - 1]);
        if show_timeline {
            let start = ends[count - 1];
            for (at, kind, len) in &timeline {
                let ms = at.saturating_duration_since(start).as_secs_f64() * 1e3;
                eprintln!("    {ms:8.3} ms  {kind} ({len} bytes)");
            }
            eprintln!("    {:8.3} ms  next request", ms(last));
        }
        Ok((ms(last), results))
    })();
    agent.stop();
    r
}

/// A record's `type` and, for messages, its role (for tool events, the tool): a line of the tool
/// turn's timeline.
fn record_kind(text: &str) -> String {
    let field = |name: &str| pi_bench::text::string_field(text, name);
    let kind = field("type").unwrap_or_default().to_string();
    match (field("role"), field("toolName")) {
        (Some(role), _) if kind.starts_with("message_") => format!("{kind} {role}"),
        (_, Some(tool)) if kind.starts_with("tool_execution_") => format!("{kind} {tool}"),
        _ => kind,
    }
}

/// The arguments of the tool turn's 8 parallel calls, by tool.
pub(crate) fn eight_args() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("read", json!({"path": "src/core/engine.rs"})),
        (
            "read",
            json!({"path": "README.md", "offset": 1, "limit": 200}),
        ),
        (
            "grep",
            json!({"pattern": "fn handle_\\w+_state", "path": "src"}),
        ),
        (
            "grep",
            json!({"pattern": "TODO", "literal": true, "glob": "*.rs", "context": 1}),
        ),
        ("find", json!({"pattern": "*.rs"})),
        ("ls", json!({"path": "src"})),
        // Cheap commands, as agents mostly run: the figure is about the agent, not coreutils.
        ("bash", json!({"command": "ls -la src | head -n 30"})),
        (
            "bash",
            json!({"command": "wc -l src/core/engine.rs README.md"}),
        ),
    ]
}

/// The 8 parallel calls of the tool turn.
pub(crate) fn eight_calls(turn: usize) -> Vec<Step> {
    eight_args()
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| tool_call(&format!("call_{turn}_{i}"), name, args))
        .collect()
}

fn errors_in(results: &[String]) -> usize {
    results
        .iter()
        .filter(|r| r.contains("\"isError\":true"))
        .count()
}

/// One measured tool turn: its time, and the longest `durationMs` any of its 8 tools reported
/// (the part of the turn that is the tools' own work, run in parallel).
#[derive(Debug, Clone, Copy)]
pub struct ToolTurn {
    pub ms: f64,
    pub slowest_tool_ms: f64,
    /// The same 8 calls one per turn: the sum of their `durationMs`.
    pub alone_sum_ms: f64,
    /// The floor only: the turn's shell commands run alone by the harness.
    pub shells_ms: f64,
}

/// The `durationMs` of each `tool_execution_end` record in `results`; with
/// `PI_BENCH_VERBOSE`, each is printed with its tool and `label`.
fn durations(results: &[String], label: &str) -> Vec<f64> {
    let verbose = std::env::var_os("PI_BENCH_VERBOSE").is_some();
    results
        .iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(r).ok())
        .filter_map(|v| {
            if verbose {
                eprintln!(
                    "    {label} {}: durationMs {}",
                    v["toolName"], v["durationMs"]
                );
            }
            v["durationMs"].as_f64()
        })
        .collect()
}

/// An error unless `results` are the 8 calls' records, none an error.
fn all_eight_ok(what: &str, results: &[String]) -> Res<()> {
    if results.len() != 8 || errors_in(results) > 0 {
        return Err(format!(
            "{what}{} tool results, {} errors",
            results.len(),
            errors_in(results)
        ));
    }
    Ok(())
}

/// The tool turn's 8 calls one per turn, after a warm-up turn of all 8, in one process: the
/// sum of their `durationMs` is the tools' own work when they do not share the two cores.
fn tools_one_at_a_time(ctx: &Ctx, t: &Target, cwd: &Path) -> Res<f64> {
    let calls = |turn: usize| {
        let mut all = eight_calls(turn);
        if turn == 0 {
            all
        } else {
            vec![all.swap_remove(turn - 1)]
        }
    };
    let (_, results) = tool_turns(ctx, t, cwd, &calls, &[], 9)?;
    let all: Vec<String> = results.into_iter().flatten().collect();
    let alone = durations(&all, &format!("{} alone", t.key));
    all_eight_ok("one at a time: ", &all)?;
    Ok(alone.iter().sum())
}

/// Ours, Pi and a third target, the floor ([`crate::tool_floor`]): the same 8 calls run by our
/// tools directly, with no agent around them.
pub fn tool_turn(ctx: &Ctx) -> Res<Vec<Side<ToolTurn>>> {
    let tree = datagen::tool_tree(&ctx.data)?;
    // Measured inside this process (no program runs for it): only its key is used.
    let floor = Target {
        key: "floor",
        ..ctx.ours.clone()
    };
    let targets = [&ctx.ours, &ctx.reference, &floor];
    Ok(alternate(
        "tool turn",
        &targets,
        rounds(ctx, 10),
        Duration::from_secs(120),
        |t| {
            if t.key == "floor" {
                let agent_dir = ctx.ours.tmpdir.join("tool-floor-agent");
                let ms = crate::tool_floor::measure(
                    &tree,
                    &agent_dir,
                    &ctx.ours.path_env,
                    &eight_args(),
                )?;
                let shells_ms = crate::tool_floor::shell_commands_alone(
                    &tree,
                    &ctx.ours.path_env,
                    &eight_args(),
                )?;
                return Ok(ToolTurn {
                    ms,
                    slowest_tool_ms: f64::NAN,
                    alone_sum_ms: f64::NAN,
                    shells_ms,
                });
            }
            let (ms, results) = tool_turn_run(ctx, t, &tree, &eight_calls)?;
            let each = durations(&results, t.key);
            all_eight_ok("", &results)?;
            let slowest_tool_ms = each.into_iter().fold(0.0, f64::max);
            Ok(ToolTurn {
                ms,
                slowest_tool_ms,
                alone_sum_ms: tools_one_at_a_time(ctx, t, &tree)?,
                shells_ms: f64::NAN,
            })
        },
    ))
}

pub struct Grep {
    pub rg: Side<f64>,
    pub agents: Vec<Side<f64>>,
}

/// `rg` as Pi runs it (same flags, in the tree, stdout drained), spawn to exit.
fn rg_once(rg: &Path, tree: &Path) -> Res<f64> {
    let t0 = Instant::now();
    let out = Command::new(rg)
        .args([
            "--no-config",
            "--json",
            "--line-number",
            "--color=never",
            "--hidden",
            "--",
            datagen::GREP_NEEDLE,
            ".",
        ])
        .current_dir(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("rg: {e}"))?;
    let elapsed = ms(t0.elapsed());
    let matches = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"match\""))
        .count();
    if matches != datagen::GREP_NEEDLE_FILES {
        return Err(format!("rg found {matches} matches"));
    }
    Ok(elapsed)
}

/// The grep tool over the 100,000-file tree (one call, the second turn of a process), against
/// `rg` run directly with Pi's flags.
pub fn grep(ctx: &Ctx) -> Res<Grep> {
    let tree = datagen::grep_tree(&ctx.data)?;
    let calls = |turn: usize| {
        vec![tool_call(
            &format!("call_{turn}"),
            "grep",
            json!({"pattern": datagen::GREP_NEEDLE}),
        )]
    };
    let rg_target = Target {
        key: "rg",
        program: ctx.rg.clone(),
        path_env: String::new(),
        tmpdir: PathBuf::new(),
        env: Vec::new(),
    };
    let targets = [&rg_target, &ctx.ours, &ctx.reference];
    let mut sides = alternate(
        "grep",
        &targets,
        rounds(ctx, 10),
        Duration::from_secs(120),
        |t| {
            if t.key == "rg" {
                return rg_once(&ctx.rg, &tree);
            }
            let (ms, results) = tool_turn_run(ctx, t, &tree, &calls)?;
            let found = results
                .first()
                .map_or(0, |r| r.matches(datagen::GREP_NEEDLE).count());
            if found != datagen::GREP_NEEDLE_FILES || errors_in(&results) > 0 {
                return Err(format!("grep tool result shows {found} matches"));
            }
            Ok(ms)
        },
    );
    let rg = sides.remove(0);
    Ok(Grep { rg, agents: sides })
}

// ---------------------------------------------------------------------------------------------
// session open

#[derive(Debug, Clone)]
pub struct Open {
    /// Start (spawn, or sending `switch_session`) → `get_messages` response.
    pub messages_ms: f64,
    /// `get_messages` response → `get_tree` response, or why `get_tree` failed.
    pub tree_ms: Result<f64, String>,
    /// VmHWM once both answered.
    pub peak_rss_mib: f64,
}

pub struct Sessions {
    pub data: datagen::SessionData,
    /// `--session <file>`: spawn, `get_messages` and `get_tree` written at once (ours, ref,
    /// floor).
    pub startup: Vec<Side<Open>>,
    /// From ready: `switch_session`, then `get_messages`, then `get_tree`.
    pub switch: Vec<Side<Open>>,
}

fn expect_big(line: &crate::agent::Line, what: &str, min: usize) -> Res<()> {
    if line.text.len() < min {
        return Err(format!(
            "{what} response has only {} bytes: {}",
            line.text.len(),
            line.text.chars().take(200).collect::<String>()
        ));
    }
    Ok(())
}

/// Waits for the `get_tree` response (id `t`); its time counts from the `get_messages` one.
fn tree_time(
    agent: &Agent,
    messages: &crate::agent::Line,
    min: usize,
    timeout: Duration,
) -> Result<f64, String> {
    let tr = agent.response("t", timeout)?;
    expect_big(&tr, "get_tree", min)?;
    Ok(ms(tr.at.saturating_duration_since(messages.at)))
}

/// Both ways of opening, each with a third target: the floor ([`crate::session_floor`]), which
/// answers `get_messages` only (its `get_tree` is not asked for).
pub fn session_open(ctx: &Ctx) -> Res<Sessions> {
    let data = datagen::session(&ctx.data)?;
    // The messages alone are most of the file; a response far smaller means nothing loaded.
    let min = (data.bytes / 2) as usize;
    let answer = data.file.with_file_name("floor-answer.jsonl");
    crate::session_floor::prepare(&data.file, &answer)?;
    // Responses (messages, tree) are up to ~1.1× the file; one buffer per reader alive at once.
    crate::agent::warm_line_buffers(data.bytes as usize * 5 / 4, 2);
    let floor = floor_target(ctx, crate::session_floor::ENV, answer.display().to_string());
    let targets = [&ctx.ours, &ctx.reference, &floor];
    let floor_tree = || Err("not measured".to_string());
    let copy = |sb: &pi_test_support::conformance::sandbox::Sandbox| -> Res<PathBuf> {
        let dst = sb.root.join("session.jsonl");
        std::fs::copy(&data.file, &dst).map_err(|e| e.to_string())?;
        Ok(dst)
    };
    let timeout = Duration::from_secs(120);
    let startup = alternate(
        "session open (--session)",
        &targets,
        rounds(ctx, 5),
        Duration::from_secs(240),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            let file = copy(&sb)?;
            let file = file.display().to_string();
            let mut agent = Agent::spawn(t, &sb, &data.cwd, &["--session", &file])?;
            let r = (|| {
                agent.send(r#"{"id":"m","type":"get_messages"}"#)?;
                if t.key != "floor" {
                    agent.send(r#"{"id":"t","type":"get_tree"}"#)?;
                }
                let m = agent.response("m", timeout)?;
                expect_big(&m, "get_messages", min)?;
                let tree = if t.key == "floor" {
                    floor_tree()
                } else {
                    tree_time(&agent, &m, min, timeout)
                };
                Ok(Open {
                    messages_ms: ms(m.at - agent.spawned_at),
                    tree_ms: tree,
                    peak_rss_mib: agent.peak_rss_kib().unwrap_or(0) as f64 / 1024.0,
                })
            })();
            agent.stop();
            r
        },
    );
    let switch = alternate(
        "session open (switch_session)",
        &targets,
        rounds(ctx, 5),
        Duration::from_secs(240),
        |t| {
            let sb = sandbox(ctx.mock.port)?;
            let file = copy(&sb)?;
            let mut args = vec![];
            args.extend(MODEL_ARGS);
            let mut agent = Agent::spawn(t, &sb, &data.cwd, &args)?;
            let r = (|| {
                agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
                agent.response("ready", Duration::from_secs(30))?;
                let t0 = Instant::now();
                agent.send(
                    &json!({"id": "s", "type": "switch_session", "sessionPath": file}).to_string(),
                )?;
                agent.response("s", timeout)?;
                agent.send(r#"{"id":"m","type":"get_messages"}"#)?;
                let m = agent.response("m", timeout)?;
                expect_big(&m, "get_messages", min)?;
                let tree = if t.key == "floor" {
                    floor_tree()
                } else {
                    agent.send(r#"{"id":"t","type":"get_tree"}"#)?;
                    tree_time(&agent, &m, min, timeout)
                };
                Ok(Open {
                    messages_ms: ms(m.at - t0),
                    tree_ms: tree,
                    peak_rss_mib: agent.peak_rss_kib().unwrap_or(0) as f64 / 1024.0,
                })
            })();
            agent.stop();
            r
        },
    );
    Ok(Sessions {
        data,
        startup,
        switch,
    })
}

// ---------------------------------------------------------------------------------------------
// sizes

/// Bytes of all regular files under `dir` (symlinks not followed, except `dir` itself).
pub fn tree_bytes(dir: &Path) -> u64 {
    let Ok(dir) = dir.canonicalize() else {
        return 0;
    };
    let mut total = 0;
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                total += m.len();
            }
        }
    }
    total
}
