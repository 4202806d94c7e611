//! The 1 GB session figure, opt-in (`--only session-1g`: it needs ~3 GB of disk and minutes):
//! a 1 GiB / 500,000-entry session (the generator of the 100 MiB one) opened with `--session`,
//! read back whole three ways (`get_messages`, `get_tree`, `get_entries`), appended to
//! (`set_session_name`, one entry line) and forked before its last user message (a new file
//! with the whole branch). Each run works on a fresh copy of the file. Peak RSS is `VmHWM` at
//! the end, against the target of 1.5× the file.
//!
//! The reference is tried once: Pi 1.6.0 opens the file but answers `get_messages` with
//! `"Invalid string length"` (its response would be one JavaScript string, and V8 strings stop
//! at 2²⁹ − 24 characters); the error is reported.

use std::time::{Duration, Instant};

use crate::agent::{Agent, Line, Res, Target, sandbox};
use crate::figures::{Ctx, MODEL_ARGS, SKIP_REFERENCE, Side};
use crate::stats::{Better, Row, fmt_num};
use pi_bench::datagen::{self, SessionData};

#[derive(Debug, Clone, Copy)]
pub struct Big {
    /// Spawn → `get_messages` response.
    pub open_ms: f64,
    /// Request → response, each.
    pub tree_ms: f64,
    pub entries_ms: f64,
    pub append_ms: f64,
    pub fork_ms: f64,
    pub peak_rss_mib: f64,
}

const TIMEOUT: Duration = Duration::from_secs(600);

/// Runs the figure: our warm-up plus measured rounds, then one try of the reference.
pub fn big_session(ctx: &Ctx) -> Res<(SessionData, Side<Big>, Side<Big>)> {
    let data = datagen::big_session(&ctx.data)?;
    let mut ours = Side::default();
    let rounds = crate::figures::rounds(ctx, 3);
    for round in 0..=rounds {
        let t0 = Instant::now();
        let r = run(ctx, &ctx.ours, &data);
        eprintln!(
            "  session-1g: ours round {round}{} {} ({:.1} s)",
            if round == 0 { " (warm-up)" } else { "" },
            if r.is_ok() { "ok" } else { "FAILED" },
            t0.elapsed().as_secs_f64()
        );
        match r {
            Ok(v) if round > 0 => ours.samples.push(v),
            Ok(_) => {}
            Err(e) => {
                eprintln!("    {e}");
                ours.errors.push(e);
            }
        }
    }
    let mut reference = Side::default();
    if !SKIP_REFERENCE.load(std::sync::atomic::Ordering::Relaxed) {
        let t0 = Instant::now();
        let r = run(ctx, &ctx.reference, &data);
        eprintln!(
            "  session-1g: ref (one try) {} ({:.1} s)",
            if r.is_ok() { "ok" } else { "FAILED" },
            t0.elapsed().as_secs_f64()
        );
        match r {
            Ok(v) => reference.samples.push(v),
            Err(e) => {
                eprintln!("    {e}");
                reference.errors.push(e);
            }
        }
    }
    Ok((data, ours, reference))
}

fn run(ctx: &Ctx, t: &Target, data: &SessionData) -> Res<Big> {
    ctx.mock.reset();
    let sb = sandbox(ctx.mock.port)?;
    let file = sb.root.join("session.jsonl");
    std::fs::copy(&data.file, &file).map_err(|e| e.to_string())?;
    let file = file.display().to_string();
    let mut args = vec!["--session", &file];
    args.extend(MODEL_ARGS);
    let mut agent = Agent::spawn(t, &sb, &data.cwd, &args)?;
    let r = (|| {
        // The messages alone are most of the file; a response far smaller means nothing loaded.
        let min = (data.bytes / 2) as usize;
        agent.send(r#"{"id":"m","type":"get_messages"}"#)?;
        let m = big_response(&agent, "m", min)?;
        let open_ms = ms(m - agent.spawned_at);
        let tree_ms = timed(&mut agent, r#"{"id":"t","type":"get_tree"}"#, "t", min)?;
        let entries_ms = timed(&mut agent, r#"{"id":"e","type":"get_entries"}"#, "e", min)?;
        let append_ms = timed(
            &mut agent,
            r#"{"id":"a","type":"set_session_name","name":"a long session"}"#,
            "a",
            0,
        )?;
        // Before the last entry, a user message: the fork copies the whole branch above it.
        let last_user = datagen::entry_id(data.entries - 1);
        let fork = format!(r#"{{"id":"f","type":"fork","entryId":"{last_user}"}}"#);
        let fork_ms = timed(&mut agent, &fork, "f", 0)?;
        Ok(Big {
            open_ms,
            tree_ms,
            entries_ms,
            append_ms,
            fork_ms,
            peak_rss_mib: agent.peak_rss_kib().unwrap_or(0) as f64 / 1024.0,
        })
    })();
    agent.stop();
    r
}

/// Waits for the response `id` of at least `min` bytes; returns when it was read (the text is
/// dropped at once: it is as large as the file).
fn big_response(agent: &Agent, id: &str, min: usize) -> Res<Instant> {
    let line: Line = agent.response(id, TIMEOUT)?;
    if line.text.len() < min {
        return Err(format!(
            "{id}: response has only {} bytes: {}",
            line.text.len(),
            line.text.chars().take(200).collect::<String>()
        ));
    }
    Ok(line.at)
}

/// Sends `command` and times it until its response `id` was read.
fn timed(agent: &mut Agent, command: &str, id: &str, min: usize) -> Res<f64> {
    let t0 = Instant::now();
    agent.send(command)?;
    Ok(ms(big_response(agent, id, min)? - t0))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The figure's rows.
pub fn rows(data: &SessionData, ours: &Side<Big>, reference: &Side<Big>) -> Vec<Row> {
    let file_mib = data.bytes as f64 / 1024.0 / 1024.0;
    let col = |side: &Side<Big>, f: fn(&Big) -> f64| side.samples.iter().map(f).collect();
    type Column = fn(&Big) -> f64;
    let figures: [(String, Column); 5] = [
        (
            format!(
                "1 GB session ({} MiB, {} entries): `--session` spawn → `get_messages` response",
                fmt_num(file_mib),
                fmt_num(data.entries as f64)
            ),
            |b| b.open_ms,
        ),
        ("… then `get_tree` → response".into(), |b| b.tree_ms),
        ("… then `get_entries` → response".into(), |b| {
            b.entries_ms
        }),
        (
            "… then append (`set_session_name`) → response".into(),
            |b| b.append_ms,
        ),
        (
            "… then `fork` before the last user message → response (writes the branch)".into(),
            |b| b.fork_ms,
        ),
    ];
    let mut rows = Vec::new();
    for (figure, f) in figures {
        let mut row = Row::new(&figure, "ms", Better::Lower);
        row.ours = col(ours, f);
        row.reference = Some(col(reference, f));
        rows.push(row);
    }
    let mut row = Row::new("… peak RSS (VmHWM) after all five", "MiB", Better::Lower);
    row.ours = col(ours, |b| b.peak_rss_mib);
    row.reference = Some(col(reference, |b| b.peak_rss_mib));
    if let Some(om) = row.ours_median() {
        row.target = Some((
            format!("≤ 1.5× file ({} MiB)", fmt_num(1.5 * file_mib)),
            om <= 1.5 * file_mib,
        ));
    }
    rows.push(row);
    if let Some(n) = ours.note() {
        rows[0].notes.push(format!("ours: {n}"));
    }
    if let Some(n) = reference.note() {
        rows[0].notes.push(format!("ref: {n}"));
    }
    rows
}
