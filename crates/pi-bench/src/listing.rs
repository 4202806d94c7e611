//! `list_sessions` (an addition, #21) over 10,000 sessions: the first page (50, newest first).
//!
//! Pi 1.6.0 has no such command. Its side is the operation its session picker runs,
//! `SessionManager.list(cwd, sessionDir)` (every session of the directory, newest first), timed
//! inside a Node process around the call alone (the import excluded). Ours is timed from the
//! harness around the RPC round trip of a fresh process's first `list_sessions` (nothing cached
//! by the listing; the OS page cache is warm for both after the warm-up round).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use crate::agent::{Agent, Res, Target, sandbox};
use crate::figures::{Ctx, MODEL_ARGS, Side, alternate, ms, rounds};
use pi_bench::datagen::Rng;

pub const SESSIONS: usize = 10_000;
const PAGE: usize = 50;
/// Bump when the generator changes.
const VERSION: &str = "2";

pub struct ListData {
    /// The session directory (`--session-dir`), and the cwd its sessions were started in.
    pub dir: PathBuf,
    pub cwd: PathBuf,
    pub bytes: u64,
}

const WORDS: &[&str] = &[
    "parser", "session", "cursor", "render", "stream", "retry", "schema", "branch", "token",
    "buffer", "queue", "signal", "index", "offset", "tool", "model", "widget", "config",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One session file: header, model and thinking changes, 2–60 messages (alternating user and
/// assistant, 8–120 words each), a name on every seventh.
fn session_lines(rng: &mut Rng, i: usize, cwd: &str) -> Vec<String> {
    let ts = |k: usize| {
        format!(
            "2026-01-05T{:02}:{:02}:{:02}.000Z",
            (i / 3600) % 24,
            (i / 60) % 60,
            k % 60
        )
    };
    let id = |k: usize| format!("{:04x}{:04x}", i % 0xffff, k);
    let mut lines = vec![
        json!({"type":"session","version":3,"id":format!("0190c6a2-{:04x}-7000-8000-{:012x}", i % 0xffff, i),
            "timestamp":ts(0),"cwd":cwd}).to_string(),
        json!({"type":"model_change","id":id(0),"parentId":null,"timestamp":ts(0),
            "provider":"mock-openai","modelId":"mock-gpt"}).to_string(),
        json!({"type":"thinking_level_change","id":id(1),"parentId":id(0),"timestamp":ts(1),
            "thinkingLevel":"off"}).to_string(),
    ];
    // Pi orders by the last message's time: older sessions have older messages, so both
    // programs agree on the order the file times give.
    let base = 1_767_571_200_000u64 - i as u64 * 100_000;
    let messages = 2 + rng.below(59) as usize;
    for k in 0..messages {
        let words = 8 + rng.below(113) as usize;
        let text = sentence(rng, words);
        let message = if k.is_multiple_of(2) {
            json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":base + k as u64})
        } else {
            json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"openai-completions",
                "provider":"mock-openai","model":"mock-gpt","usage":{"input":10,"output":5,"cacheRead":0,
                "cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
                "stopReason":"stop","timestamp":base + k as u64})
        };
        lines.push(
            json!({"type":"message","id":id(k + 2),"parentId":id(k + 1),"timestamp":ts(k + 2),"message":message})
                .to_string(),
        );
    }
    if i.is_multiple_of(7) {
        lines.push(
            json!({"type":"session_info","id":id(messages + 2),"parentId":id(messages + 1),
                "timestamp":ts(messages + 2),"name":sentence(rng, 3)})
            .to_string(),
        );
    }
    lines
}

/// 10,000 sessions of one project in one directory, file `i` modified `i` seconds before the
/// generation and its messages older than those of file `i - 1` (so the order is known and
/// total in both programs).
pub fn data(data: &Path) -> Res<ListData> {
    let root = data.join("sessions-10k");
    let dir = root.join("sessions");
    let cwd = root.join("cwd");
    let stamp = root.join(".complete");
    if std::fs::read_to_string(&stamp).is_ok_and(|v| v.trim() == VERSION) {
        return Ok(ListData {
            bytes: dir_bytes(&dir),
            dir,
            cwd,
        });
    }
    eprintln!("generating {} ({SESSIONS} sessions)", dir.display());
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&cwd).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(10_000);
    let now = SystemTime::now();
    let cwd_text = cwd.display().to_string();
    for i in 0..SESSIONS {
        let path = dir.join(format!("2026-01-05T00-00-00-000Z_{i:05}.jsonl"));
        let text = session_lines(&mut rng, i, &cwd_text).join("\n") + "\n";
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        let f = std::fs::File::options()
            .write(true)
            .open(&path)
            .map_err(|e| e.to_string())?;
        f.set_modified(now - Duration::from_secs(i as u64 + 1))
            .map_err(|e| e.to_string())?;
    }
    std::fs::write(&stamp, VERSION).map_err(|e| e.to_string())?;
    Ok(ListData {
        bytes: dir_bytes(&dir),
        dir,
        cwd,
    })
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Pi's package directory, from its `pi` (`<pkg>/dist/bundle/cli.js` behind the bin link).
fn package_dir(program: &Path) -> Res<PathBuf> {
    let real = program
        .canonicalize()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    real.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "dist"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("no dist/ above {}", real.display()))
}

/// Node: import Pi's `SessionManager`, time `list(cwd, dir)`, print the time, the count and
/// the first page's paths.
const NODE_SCRIPT: &str = r#"
const [index, cwd, dir] = process.argv.slice(1);
const { SessionManager } = await import(index);
const t0 = performance.now();
const list = await SessionManager.list(cwd, dir);
const elapsed = performance.now() - t0;
console.log(JSON.stringify({ ms: elapsed, count: list.length, first: list.slice(0, 50).map((s) => s.path) }));
"#;

fn reference_run(t: &Target, d: &ListData) -> Res<f64> {
    let index = package_dir(&t.program)?.join("dist/index.js");
    let node = t
        .path_env
        .split(':')
        .map(|p| Path::new(p).join("node"))
        .find(|p| p.exists())
        .ok_or("node not on the reference's PATH")?;
    let out = Command::new(node)
        .args(["--input-type=module", "-e", NODE_SCRIPT])
        .arg(format!("file://{}", index.display()))
        .arg(&d.cwd)
        .arg(&d.dir)
        .env_clear()
        .env("PATH", &t.path_env)
        .env("HOME", d.dir.parent().unwrap_or(&d.dir))
        .env("TMPDIR", &t.tmpdir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let line = BufReader::new(&out.stdout[..])
        .lines()
        .map_while(Result::ok)
        .last()
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&line)
        .map_err(|e| format!("node: {e}: {line} {}", String::from_utf8_lossy(&out.stderr)))?;
    check_page(
        &v["first"],
        v["count"].as_u64().unwrap_or(0) as usize,
        SESSIONS,
    )?;
    v["ms"]
        .as_f64()
        .ok_or_else(|| format!("node: no time in {line}"))
}

/// The page must be the newest 50 sessions in order: files `_00000` … `_00049`.
fn check_page(paths: &serde_json::Value, count: usize, min_count: usize) -> Res<()> {
    let paths: Vec<&str> = paths
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_str()).collect())
        .unwrap_or_default();
    let expected: Vec<String> = (0..PAGE).map(|i| format!("_{i:05}.jsonl")).collect();
    let ok = paths.len() == PAGE
        && paths
            .iter()
            .zip(&expected)
            .all(|(p, e)| p.ends_with(e.as_str()));
    if !ok || count < min_count {
        return Err(format!(
            "wrong first page ({count} listed): {:?}",
            &paths[..paths.len().min(3)]
        ));
    }
    Ok(())
}

fn ours_run(ctx: &Ctx, t: &Target, d: &ListData) -> Res<f64> {
    let sb = sandbox(ctx.mock.port)?;
    let dir = d.dir.display().to_string();
    let mut args = vec!["--session-dir", dir.as_str()];
    args.extend(MODEL_ARGS);
    let mut agent = Agent::spawn(t, &sb, &d.cwd, &args)?;
    let r = (|| {
        agent.send(r#"{"id":"ready","type":"get_state"}"#)?;
        agent.response("ready", Duration::from_secs(30))?;
        let t0 = Instant::now();
        agent.send(r#"{"id":"l","type":"list_sessions"}"#)?;
        let line = agent.response("l", Duration::from_secs(60))?;
        let elapsed = ms(line.at.saturating_duration_since(t0));
        let v: serde_json::Value = serde_json::from_str(&line.text).map_err(|e| e.to_string())?;
        let paths: Vec<serde_json::Value> = v["data"]["sessions"]
            .as_array()
            .map(|a| a.iter().map(|s| s["path"].clone()).collect())
            .unwrap_or_default();
        if v["data"]["nextCursor"].as_str().is_none() {
            return Err(format!(
                "no nextCursor: {}",
                &line.text[..line.text.len().min(300)]
            ));
        }
        check_page(&serde_json::Value::Array(paths), PAGE, PAGE)?;
        Ok(elapsed)
    })();
    agent.stop();
    r
}

/// Both sides: ours (`list_sessions`, first page), Pi (`SessionManager.list`).
pub fn list_sessions(ctx: &Ctx) -> Res<(ListData, Vec<Side<f64>>)> {
    let d = data(&ctx.data)?;
    let sides = alternate(
        "list_sessions (10,000 sessions)",
        &[&ctx.ours, &ctx.reference],
        rounds(ctx, 7),
        Duration::from_secs(180),
        |t| match t.key {
            "ref" => reference_run(t, &d),
            _ => ours_run(ctx, t, &d),
        },
    );
    Ok((d, sides))
}
