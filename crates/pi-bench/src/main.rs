//! `pi-bench`: our `pi` side by side with Pi 1.6.0 on the same machine. Normally started by
//! `bench/run`, which installs the reference and builds both binaries; see `bench/README.md`.
//!
//! ```text
//! pi-bench --ours target/release/pi --reference <pi16>/node_modules/.bin/pi \
//!          --node-bin <node22>/package/bin --tools-bin <ref>/tools/bin \
//!          [--data target/pi-bench] [--only ready,extensions,mcp,packages,stream,tool,session,fleet,listing,grep] [--quick | --scale F] [--out FILE]
//! ```
//!
//! `--only session-1g` (opt-in, never part of the default set) runs the 1 GiB session figure.
//!
//! Everything runs on 127.0.0.1; the mock LLM runs inside this process so that chunk writes and
//! record reads share one clock; every child is ended by its PID (stdin closed first, then
//! SIGKILL after 5 s).

mod agent;
mod ext_figures;
mod figures;
mod fleet;
mod listing;
mod mcp_figures;
mod relay;
mod session_big;
mod session_floor;
mod stats;
mod tool_floor;

use pi_bench::mock;

use std::path::{Path, PathBuf};

use agent::Target;
use figures::{Ctx, Side};
use stats::{Better, Row, fmt_num, summarize, table};

const USAGE: &str = "usage: pi-bench --ours PATH --reference PATH --node-bin DIR [--tools-bin DIR] \
[--rg PATH] [--data DIR] [--only LIST] [--quick | --scale F] [--skip-reference] [--out FILE]\n\
  LIST: comma-separated of ready,extensions,mcp,packages,stream,tool,session,fleet,listing,grep (default: all), or session-1g\n\
  (opt-in: a 1 GB session, minutes and disk)\n\
  --scale F: every figure's round count times F (--quick is 0.3), e.g. 5 to A/B two builds";

struct Cli {
    ours: PathBuf,
    reference: PathBuf,
    node_bin: PathBuf,
    tools_bin: Option<PathBuf>,
    rg: Option<PathBuf>,
    data: PathBuf,
    only: Vec<String>,
    scale: f64,
    out: Option<PathBuf>,
}

fn parse_cli() -> Result<Cli, String> {
    let mut args = std::env::args().skip(1);
    let mut ours = None;
    let mut reference = None;
    let mut node_bin = None;
    let mut tools_bin = None;
    let mut rg = None;
    let mut data = PathBuf::from("target/pi-bench");
    let mut only = Vec::new();
    let mut scale = 1.0;
    let mut out = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--ours" => ours = Some(PathBuf::from(val()?)),
            "--reference" => reference = Some(PathBuf::from(val()?)),
            "--node-bin" => node_bin = Some(PathBuf::from(val()?)),
            "--tools-bin" => tools_bin = Some(PathBuf::from(val()?)),
            "--rg" => rg = Some(PathBuf::from(val()?)),
            "--data" => data = PathBuf::from(val()?),
            "--only" => only = val()?.split(',').map(str::to_string).collect(),
            "--quick" => scale = 0.3,
            "--scale" => {
                scale = val()?
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0)
                    .ok_or(format!("--scale needs a positive number\n{USAGE}"))?
            }
            "--skip-reference" => {
                figures::SKIP_REFERENCE.store(true, std::sync::atomic::Ordering::Relaxed)
            }
            "--out" => out = Some(PathBuf::from(val()?)),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Cli {
        ours: ours.ok_or(USAGE)?,
        reference: reference.ok_or(USAGE)?,
        node_bin: node_bin.ok_or(USAGE)?,
        tools_bin,
        rg,
        data,
        only,
        scale,
        out,
    })
}

fn abs(p: &Path) -> Result<PathBuf, String> {
    p.canonicalize()
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn which(name: &str, path: &str) -> Option<PathBuf> {
    path.split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// `nproc`, CPU model, RAM and load average, for the report.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    format!(
        "{cpus} CPUs ({model}), {:.1} GiB RAM, load average {}",
        mem_kib as f64 / 1024.0 / 1024.0,
        load()
    )
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// (busy, total) jiffies of all CPUs from /proc/stat.
fn cpu_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = text.lines().next() else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    // idle + iowait
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// Waits (at most `max`) until the machine was ≥ 90% idle for a whole second; returns the
/// busy share of the last second.
fn wait_quiet(max: std::time::Duration) -> f64 {
    let start = std::time::Instant::now();
    loop {
        let (b0, t0) = cpu_jiffies();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let (b1, t1) = cpu_jiffies();
        let busy = if t1 > t0 {
            (b1 - b0) as f64 / (t1 - t0) as f64
        } else {
            0.0
        };
        if busy <= 0.10 || start.elapsed() >= max {
            return busy;
        }
    }
}

/// Before each figure: the one before it may have left the CPUs busy (a reference process
/// exiting, page cache writeback), which would land on whichever side runs first.
fn settle() {
    let busy = wait_quiet(std::time::Duration::from_secs(15));
    if busy > 0.10 {
        eprintln!(
            "  (the machine stayed {:.0}% busy; measuring anyway)",
            busy * 100.0
        );
    }
}

/// The smallest ours/ref ratio over the rounds (higher is better): round by round when both
/// sides have every round, else the worst of ours against the best of the reference.
fn worst_round_ratio(ours: &[f64], reference: &[f64]) -> Option<f64> {
    if ours.is_empty() || reference.is_empty() {
        return None;
    }
    if ours.len() == reference.len() {
        return ours
            .iter()
            .zip(reference)
            .map(|(o, r)| o / r)
            .min_by(f64::total_cmp);
    }
    let worst = ours.iter().copied().min_by(f64::total_cmp)?;
    let best = reference.iter().copied().max_by(f64::total_cmp)?;
    Some(worst / best)
}

/// A row of one figure of both sides, `f` picking it out of each sample.
fn sided<T: Copy>(
    title: &str,
    unit: &'static str,
    better: Better,
    ours: &Side<T>,
    reference: &Side<T>,
    f: impl Fn(T) -> f64,
) -> Row {
    let mut row = Row::new(title, unit, better);
    row.ours = col(ours, &f);
    row.reference = Some(col(reference, &f));
    row
}

fn col<T: Copy>(side: &Side<T>, f: impl Fn(T) -> f64) -> Vec<f64> {
    side.samples.iter().map(|s| f(*s)).collect()
}

/// " (floor: N×)" for a target column: Pi's median over the floor's, the most any agent could
/// reach here; empty without both.
fn floor_ratio(floor: &[f64], row: &Row) -> String {
    let reference = row.reference.as_deref().and_then(summarize);
    match (summarize(floor), reference) {
        (Some(f), Some(r)) if f.median > 0.0 => format!(" (floor: {:.1}×)", r.median / f.median),
        _ => String::new(),
    }
}

/// The row of a floor's own measurement (no reference side).
fn floor_row(label: &str, unit: &'static str, floor: Vec<f64>, note: Option<String>) -> Row {
    let mut row = Row::new(label, unit, Better::Lower);
    row.ours = floor;
    row.reference = None;
    row.notes.extend(note);
    row
}

fn notes<T>(row: &mut Row, ours: &Side<T>, reference: Option<&Side<T>>) {
    if let Some(n) = ours.note() {
        row.notes.push(format!("ours: {n}"));
    }
    if let Some(n) = reference.and_then(Side::note) {
        row.notes.push(format!("ref: {n}"));
    }
}

/// A milliseconds row (lower is better) from the two sides of a figure.
fn ms_row(title: &str, sides: &[Side<f64>]) -> Row {
    let (o, r) = (&sides[0], &sides[1]);
    let mut row = Row::new(title, "ms", Better::Lower);
    row.ours = o.samples.clone();
    row.reference = Some(r.samples.clone());
    notes(&mut row, o, Some(r));
    row
}

fn main() {
    if let Ok(port) = std::env::var(relay::PORT_ENV) {
        relay::run(&port);
        return;
    }
    if let Ok(answer) = std::env::var(session_floor::ENV) {
        session_floor::run(&answer);
        return;
    }
    let cli = match parse_cli() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(cli) {
        eprintln!("pi-bench: {e}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let ours = abs(&cli.ours)?;
    let reference = abs(&cli.reference)?;
    let node_bin = abs(&cli.node_bin)?;
    std::fs::create_dir_all(&cli.data).map_err(|e| e.to_string())?;
    let data = abs(&cli.data)?;
    let mut ref_path = format!("{}:", node_bin.display());
    if let Some(t) = &cli.tools_bin {
        ref_path.push_str(&format!("{}:", t.display()));
    }
    ref_path.push_str("/usr/local/bin:/usr/bin:/bin");
    let rg = match cli.rg.clone() {
        Some(p) => p,
        None => which("rg", &ref_path).ok_or("rg not found (install ripgrep)")?,
    };
    let tmp_ours = data.join("tmp-ours");
    let tmp_ref = data.join("tmp-ref");
    for d in [&tmp_ours, &tmp_ref] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let mock = mock::Mock::start().map_err(|e| format!("mock: {e}"))?;
    let ctx = Ctx {
        ours: Target {
            key: "ours",
            program: ours.clone(),
            path_env: "/usr/local/bin:/usr/bin:/bin".into(),
            tmpdir: tmp_ours,
            env: Vec::new(),
        },
        reference: Target {
            key: "ref",
            program: reference.clone(),
            path_env: ref_path,
            tmpdir: tmp_ref,
            env: Vec::new(),
        },
        mock,
        data,
        rg,
        scale: cli.scale,
    };
    let want = |name: &str| cli.only.is_empty() || cli.only.iter().any(|o| o == name);
    // Figures that need minutes and gigabytes run only when named.
    let named = |name: &str| cli.only.iter().any(|o| o == name);
    eprintln!("waiting (at most 60 s) for the machine to be ≥ 90% idle for a second");
    let busy = wait_quiet(std::time::Duration::from_secs(60));
    let load_before = format!(
        "{} (CPU busy in the last second: {:.0}%)",
        load(),
        busy * 100.0
    );
    let started = std::time::Instant::now();
    let mut rows: Vec<Row> = Vec::new();

    if want("ready") {
        settle();
        eprintln!("ready + idle RSS");
        let sides = figures::ready(&ctx);
        let (o, r) = (&sides[0], &sides[1]);
        let mut row = sided(
            "ready: spawn → first `get_state` response",
            "ms",
            Better::Lower,
            o,
            r,
            |s| s.ready_ms,
        );
        notes(&mut row, o, Some(r));
        if let (Some(om), Some(ratio)) = (row.ours_median(), row.ratio()) {
            row.target = Some((
                "≤ 5 ms and ≥ 80× faster".into(),
                om <= 5.0 && ratio > 0.0 && 1.0 / ratio >= 80.0,
            ));
        }
        rows.push(row);
        let mut row = sided(
            "idle RSS after ready (process tree)",
            "MiB",
            Better::Lower,
            o,
            r,
            |s| s.idle_rss_mib,
        );
        if let Some(om) = row.ours_median() {
            row.target = Some(("≤ 6 MB".into(), om * 1.048_576 <= 6.0));
        }
        rows.push(row);
        // Sizes go with ready: they need no runs.
        let ours_size = std::fs::metadata(&ours).map_or(0, |m| m.len()) as f64;
        let node_size = which("node", &format!("{}", node_bin.display()))
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len()) as f64;
        // <pi16>/node_modules/.bin/pi resolves into <pi16>/node_modules/@earendil-works/...
        let modules = [reference.as_path(), cli.reference.as_path()]
            .into_iter()
            .find_map(|p| {
                p.ancestors()
                    .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
            })
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let package_size = figures::tree_bytes(&modules) as f64;
        let mib = 1024.0 * 1024.0;
        let mut row = Row::new(
            &format!(
                "binary size (ours: stripped `pi`; ref: `node` {} MiB + `node_modules` {} MiB)",
                fmt_num(node_size / mib),
                fmt_num(package_size / mib)
            ),
            "MiB",
            Better::Lower,
        );
        row.ours = vec![ours_size / mib];
        row.reference = Some(vec![(node_size + package_size) / mib]);
        row.target = Some(("≤ 15 MB".into(), ours_size <= 15e6));
        rows.push(row);
    }

    if want("extensions") {
        settle();
        eprintln!("ready with one extension; the tool_call gate");
        let cache = ctx.data.join("cache-ours");
        std::fs::create_dir_all(&cache).map_err(|e| e.to_string())?;
        let node_path = ctx.reference.path_env.clone();
        let sides = ext_figures::ready_extension(&ctx, &node_path, &cache);
        rows.push(ms_row(
            "ready with one trivial extension (`-e`, a command): spawn → first `get_state` response",
            &sides,
        ));
        let sides = ext_figures::tool_gate(&ctx, &node_path, &cache)?;
        // Per call: (turn with the gate − turn without) / 8, round by round.
        let per_call = |without: &Side<f64>, with: &Side<f64>| -> Vec<f64> {
            without
                .samples
                .iter()
                .zip(&with.samples)
                .map(|(a, b)| (b - a) / 8.0)
                .collect()
        };
        let mut row = Row::new(
            "tool_call gate: time an extension's `tool_call` handler adds per tool call (8 parallel calls, handler returns nothing)",
            "ms",
            Better::Lower,
        );
        row.ours = per_call(&sides[0], &sides[1]);
        row.reference = Some(per_call(&sides[2], &sides[3]));
        notes(&mut row, &sides[1], Some(&sides[3]));
        rows.push(row);
    }

    if want("mcp") {
        settle();
        eprintln!("ready with an MCP server; a codemode script making 100 MCP calls");
        let sides = mcp_figures::ready_mcp(&ctx);
        rows.push(ms_row(
            "ready with one stdio MCP server in `mcp.json`: spawn → first `get_state` response",
            &sides,
        ));
        let sides = mcp_figures::codemode_calls(&ctx);
        rows.push(ms_row(
            "codemode script making 100 sequential MCP tool calls (stdio server): tool-call message end → next request",
            &sides,
        ));
    }

    if want("packages") {
        settle();
        eprintln!("ready with 3 installed packages");
        let cache = ctx.data.join("cache-ours");
        std::fs::create_dir_all(&cache).map_err(|e| e.to_string())?;
        let sides = figures::ready_packages(&ctx, &ctx.reference.path_env.clone(), &cache);
        rows.push(ms_row(
            "ready with 3 installed packages (npm ×2, git; an extension, a skill and a prompt each): spawn → `get_commands` response",
            &sides,
        ));
    }

    if want("stream") {
        settle();
        eprintln!(
            "stream relay ({} deltas flood, {} lock-step)",
            figures::FLOOD_DELTAS,
            figures::LOCKSTEP_DELTAS
        );
        let sides = figures::stream(&ctx);
        let (o, r, floor) = (&sides[0], &sides[1], &sides[2]);
        let mut row = sided(
            &format!(
                "stream relay: text_delta records/s ({} deltas as fast as possible)",
                fmt_num(figures::FLOOD_DELTAS as f64)
            ),
            "rec/s",
            Better::Higher,
            o,
            r,
            |s| s.records_per_s,
        );
        notes(&mut row, o, Some(r));
        // The issue asks for 10× in every run, not only in the median: the worst round's
        // ratio (rounds pair up as they alternated; after a failed round, worst against best).
        // The floor's own worst round against the same rounds of Pi says what this machine
        // allows at all.
        let reference = row.reference.clone().unwrap_or_default();
        if let Some(worst) = worst_round_ratio(&row.ours, &reference) {
            let floor_worst = worst_round_ratio(&col(floor, |s| s.records_per_s), &reference)
                .map(|f| format!("; the floor's worst {f:.1}×"))
                .unwrap_or_default();
            row.target = Some((
                format!("≥ 10× ref in every round (worst {worst:.1}×{floor_worst})"),
                worst >= 10.0,
            ));
        }
        rows.push(row);
        let row = sided(
            "stream relay: added latency p50 (chunk written → record read, lock-step)",
            "µs",
            Better::Lower,
            o,
            r,
            |s| s.lock_p50_us,
        );
        rows.push(row);
        let mut row = sided(
            "stream relay: added latency p99 (lock-step)",
            "µs",
            Better::Lower,
            o,
            r,
            |s| s.lock_p99_us,
        );
        // Within 1.3× of what the minimal relay gets on this machine (the floor below).
        let floor_p99 = stats::summarize(&col(floor, |s| s.lock_p99_us)).map(|s| s.median);
        if let (Some(om), Some(fm)) = (row.ours_median(), floor_p99) {
            row.target = Some((format!("≤ 1.3× floor ({:.1} µs)", 1.3 * fm), om <= 1.3 * fm));
        }
        rows.push(row);
        let row = sided(
            "stream relay: latency p50 during the flood (includes queueing)",
            "µs",
            Better::Lower,
            o,
            r,
            |s| s.flood_p50_us,
        );
        rows.push(row);
        // The calibration: what a one-thread blocking relay achieves here (ours column).
        for (what, unit, better, f) in [
            (
                "records/s",
                "rec/s",
                Better::Higher,
                (|s: figures::Stream| s.records_per_s) as fn(figures::Stream) -> f64,
            ),
            ("latency p50", "µs", Better::Lower, |s| s.lock_p50_us),
            ("latency p99", "µs", Better::Lower, |s| s.lock_p99_us),
        ] {
            let mut row = Row::new(
                &format!(
                    "… relay floor {what} (minimal one-thread relay process, same measurement)"
                ),
                unit,
                better,
            );
            row.ours = col(floor, f);
            row.reference = None;
            if let Some(n) = floor.note() {
                row.notes.push(n);
            }
            rows.push(row);
        }
    }

    if want("tool") {
        settle();
        eprintln!("tool turn (8 parallel calls)");
        let sides = figures::tool_turn(&ctx)?;
        let (o, r) = (&sides[0], &sides[1]);
        let mut row = sided(
            "tool turn: 8 parallel calls (read×2, grep×2, find, ls, bash×2), tool-call message → next request",
            "ms",
            Better::Lower,
            o,
            r,
            |t| t.ms,
        );
        notes(&mut row, o, Some(r));
        let floor = sides.get(2);
        let floor_ms: Vec<f64> = floor.map(|f| col(f, |t| t.ms)).unwrap_or_default();
        let best = floor_ratio(&floor_ms, &row);
        if let Some(ratio) = row.ratio() {
            row.target = Some((
                format!("≥ 8× faster{best}"),
                ratio > 0.0 && 1.0 / ratio >= 8.0,
            ));
        }
        rows.push(row);
        if let Some(floor) = floor {
            rows.push(floor_row(
                "… floor: the same 8 calls run by our tools directly in the harness, no agent \
                 around them (no events, requests or session), first call's start → last call's end",
                "ms",
                floor_ms,
                floor.note(),
            ));
            // Process creation on this machine: the part of the floor no code of ours runs.
            rows.push(floor_row(
                "… the turn's two shell commands alone (`bash -c`, spawned by the harness at once, \
                 nothing else running), first spawn → last exit",
                "ms",
                col(floor, |t| t.shells_ms),
                None,
            ));
        }
        // Where the turn's time goes: the tools run in parallel, so the slowest one's own
        // time is the part no agent overhead explains.
        let row = sided(
            "… the turn's slowest tool (its `durationMs`)",
            "ms",
            Better::Lower,
            o,
            r,
            |t| t.slowest_tool_ms,
        );
        rows.push(row);
        // The tools' work without the sharing: on two cores no parallel turn can take less
        // than half of it, whatever the agent does around the tools.
        let row = sided(
            "… the same 8 calls one per turn (tools not sharing the 2 cores): sum of their `durationMs`",
            "ms",
            Better::Lower,
            o,
            r,
            |t| t.alone_sum_ms,
        );
        rows.push(row);
    }

    if want("listing") {
        settle();
        eprintln!("list_sessions over {} sessions", listing::SESSIONS);
        let (d, sides) = listing::list_sessions(&ctx)?;
        let (o, r) = (&sides[0], &sides[1]);
        let mut row = Row::new(
            &format!(
                "sessions list, {} sessions ({} MiB): first page of 50 (ours: `list_sessions` round trip from ready, an addition; ref: `SessionManager.list`, the call alone, in Node)",
                fmt_num(listing::SESSIONS as f64),
                fmt_num(d.bytes as f64 / 1024.0 / 1024.0)
            ),
            "ms",
            Better::Lower,
        );
        row.ours = o.samples.clone();
        row.reference = Some(r.samples.clone());
        notes(&mut row, o, Some(r));
        rows.push(row);
    }

    let mut session_note = String::new();
    if want("session") {
        settle();
        eprintln!("session open");
        let s = figures::session_open(&ctx)?;
        let file_mib = s.data.bytes as f64 / 1024.0 / 1024.0;
        session_note = format!(
            "{} entries, {} MiB",
            fmt_num(s.data.entries as f64),
            fmt_num(file_mib)
        );
        for (label, sides) in [
            ("`--session <file>`: spawn →", &s.startup),
            ("`switch_session` (from ready) →", &s.switch),
        ] {
            let (o, r) = (&sides[0], &sides[1]);
            let mut row = Row::new(
                &format!("session open, {label} `get_messages` response"),
                "ms",
                Better::Lower,
            );
            row.ours = o.samples.iter().map(|x| x.messages_ms).collect();
            row.reference = Some(r.samples.iter().map(|x| x.messages_ms).collect());
            notes(&mut row, o, Some(r));
            let floor = sides.get(2);
            let floor_ms: Vec<f64> = floor
                .map(|f| f.samples.iter().map(|x| x.messages_ms).collect())
                .unwrap_or_default();
            let best = floor_ratio(&floor_ms, &row);
            if let Some(ratio) = row.ratio() {
                row.target = Some((
                    format!("≥ 10× faster{best}"),
                    ratio > 0.0 && 1.0 / ratio >= 10.0,
                ));
            }
            rows.push(row);
            if let Some(floor) = floor {
                rows.push(floor_row(
                    "… floor: a process that only hands a prepared copy of the answer to the pipe \
                     (`sendfile`; no reading, parsing or checks), same measurement",
                    "ms",
                    floor_ms,
                    floor.note(),
                ));
            }
            let mut row = Row::new("… then `get_tree` response", "ms", Better::Lower);
            let tree = |side: &Side<figures::Open>, row: &mut Row, who: &str| {
                let mut ok = Vec::new();
                let mut errs = Vec::new();
                for x in &side.samples {
                    match &x.tree_ms {
                        Ok(v) => ok.push(*v),
                        Err(e) => errs.push(e.clone()),
                    }
                }
                if let Some(e) = errs.first() {
                    let e = e
                        .rsplit("\"error\":")
                        .next()
                        .unwrap_or(e)
                        .trim_end_matches('}');
                    row.notes.push(format!(
                        "{who}: {} of {} failed: {e}",
                        errs.len(),
                        side.samples.len()
                    ));
                }
                ok
            };
            row.ours = tree(o, &mut row, "ours");
            row.reference = Some(tree(r, &mut row, "ref"));
            rows.push(row);
            let mut row = Row::new("… peak RSS (VmHWM) after both", "MiB", Better::Lower);
            row.ours = o.samples.iter().map(|x| x.peak_rss_mib).collect();
            row.reference = Some(r.samples.iter().map(|x| x.peak_rss_mib).collect());
            if let Some(om) = row.ours_median() {
                row.target = Some((
                    format!("≤ 1.5× file ({} MiB)", fmt_num(1.5 * file_mib)),
                    om <= 1.5 * file_mib,
                ));
            }
            rows.push(row);
        }
    }

    if named("session-1g") {
        settle();
        eprintln!("1 GB session");
        let (data, o, r) = session_big::big_session(&ctx)?;
        rows.extend(session_big::rows(&data, &o, &r));
    }

    if want("fleet") {
        settle();
        eprintln!("fleet ({} agents at once)", fleet::FLEET);
        let sides = fleet::fleet(&ctx)?;
        rows.extend(fleet::rows(&sides));
    }

    if want("grep") {
        settle();
        eprintln!("grep (100,000 files)");
        let g = figures::grep(&ctx)?;
        let (o, r) = (&g.agents[0], &g.agents[1]);
        let rg_median = summarize(&g.rg.samples).map(|s| s.median);
        let mut row = Row::new(
            "grep tool, 100,000 files (tool-call message → next request)",
            "ms",
            Better::Lower,
        );
        row.ours = o.samples.clone();
        row.reference = Some(r.samples.clone());
        notes(&mut row, o, Some(r));
        if let (Some(om), Some(rg)) = (row.ours_median(), rg_median) {
            row.target = Some((
                format!("≤ 1.2× rg (ours/rg = {:.2})", om / rg),
                om <= 1.2 * rg,
            ));
        }
        rows.push(row);
        let mut row = Row::new(
            "… `rg` run directly with Pi's flags (spawn → exit)",
            "ms",
            Better::Lower,
        );
        row.ours = g.rg.samples.clone();
        row.reference = None;
        if let Some(n) = g.rg.note() {
            row.notes.push(n);
        }
        rows.push(row);
    }

    let mut report = String::new();
    report.push_str(&format!("Machine: {}\n", machine()));
    report.push_str(&format!(
        "Load average before the run: {load_before}; after: {}; wall time {:.0} s\n",
        load(),
        started.elapsed().as_secs_f64()
    ));
    if !session_note.is_empty() {
        report.push_str(&format!("Session file: {session_note}\n"));
    }
    report.push('\n');
    report.push_str(&table(&rows, "Pi 1.6.0 (Node 22)"));
    println!("{report}");
    if let Some(out) = &cli.out {
        std::fs::write(out, &report).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}
