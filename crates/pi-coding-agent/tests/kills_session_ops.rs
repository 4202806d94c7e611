//! Kill -9 during compaction and forks (issue #22, item 2): `pi --session <file>` runs a script
//! of prompts (each answer big enough to trigger auto-compaction when it is on), a manual
//! `compact`, `fork`, `clone`, `new_session` and `switch_session` back, against a loopback
//! provider that streams slowly, and is killed with SIGKILL at a random moment. After every kill
//! each session file that changed must: hold only complete entries (a compaction entry is whole
//! or absent; a torn last line aside), keep its tree closed (every `parentId` names an entry of
//! the file), reload in a fresh `pi`, and hold every message whose `message_end` and every
//! compaction whose `compaction_end` reached the client while it was the session's file. A
//! sample of the killed files is loaded by Pi 1.6.0 too (when `conformance/.reference` has it).
//!
//! Sizes: `PI_KILLS` (default 16; the full campaign: `scripts/reliability kills`), Pi loads:
//! `PI_CROSS_LOADS` (default 4). `PI_REQUIRE_REFERENCE=1` fails instead of skipping the Pi loads
//! when the reference is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod oc_agent;
mod support;

use mock::{Mock, Reply};
use oc_agent::{Rng, Rpc, chunk_with_usage as chunk, load_messages};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::TempDir;

/// Kills that share one home (and so one main session file and its forks).
const KILLS_PER_HOME: usize = 6;
/// Bound on any wait for a record of a live `pi`.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// A slow text answer whose usage is over the compaction threshold; it serves prompts and
/// summarization requests alike.
fn answer(n: usize) -> Reply {
    let mut text = vec![chunk(
        json!({"role":"assistant","content":""}),
        Value::Null,
        None,
    )];
    for i in 0..20 {
        text.push(chunk(
            json!({"content": format!("a{n}w{i} ")}),
            Value::Null,
            None,
        ));
    }
    text.push(chunk(
        json!({}),
        json!("stop"),
        Some(json!({"prompt_tokens": 3500, "completion_tokens": 20, "total_tokens": 3520})),
    ));
    text.push("data: [DONE]\n\n".into());
    let mut r = Reply::sse(text);
    r.gap = Duration::from_millis(4);
    r
}

/// `command` (ours or Pi's) on `--session <file>`.
fn on_session(mut command: Command, file: &Path) -> Command {
    command.args(["--session", file.to_str().unwrap()]);
    command
}

/// What the client saw for one session file.
#[derive(Default)]
struct Seen {
    messages: Vec<Value>,
    /// Summaries of the compactions whose `compaction_end` carried a result.
    summaries: Vec<String>,
}

/// Sends `command` and waits for its response; events on the way are credited to `file`.
/// `None` when the process is gone.
#[allow(clippy::too_many_arguments)] // a test helper: the driver's whole state, passed along
fn call(
    phase: &Phase,
    target: &Target,
    stdin: &mut impl Write,
    rx: &Receiver<Value>,
    seen: &mut HashMap<PathBuf, Seen>,
    file: &Path,
    command: Value,
    settle: bool,
) -> Option<Value> {
    let id = command["id"].clone();
    let name = command["type"].as_str().unwrap_or_default().to_owned();
    set(phase, &name);
    stdin.write_all(format!("{command}\n").as_bytes()).ok()?;
    if let Some((pid, what, micros)) = target
        && *what == name
    {
        std::thread::sleep(Duration::from_micros(*micros));
        set(phase, &format!("{name} (targeted)"));
        // SAFETY: kill(2) on our child, which is not reaped until this thread is joined.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(*pid as i32, libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + STEP_TIMEOUT;
    let mut response = None;
    loop {
        let rec = match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(rec) => rec,
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => panic!("no answer to {command} in {STEP_TIMEOUT:?}"),
        };
        let entry = seen.entry(file.to_path_buf()).or_default();
        match rec["type"].as_str() {
            Some("message_end") => entry.messages.push(rec["message"].clone()),
            Some("compaction_start") => set(phase, "compaction"),
            Some("compaction_end") => {
                set(phase, &name);
                if let Some(s) = rec["result"]["summary"].as_str() {
                    entry.summaries.push(s.to_owned());
                }
            }
            Some("response") if rec["id"] == id => {
                if rec["command"] == "prompt" && rec["success"] == true && settle {
                    response = Some(rec);
                    continue;
                }
                set(phase, &format!("after {name}"));
                return Some(rec);
            }
            Some("agent_settled") if response.is_some() => {
                set(phase, &format!("after {name}"));
                return response;
            }
            _ => {}
        }
    }
}

/// What the process was doing (as far as the client knows) when it was killed.
type Phase = Arc<Mutex<String>>;

/// A kill the driver itself makes: `(pid, command, µs)` — that long after sending the
/// command (a fork is over in a millisecond: a timer would seldom land in it).
type Target = Option<(u32, &'static str, u64)>;

fn set(phase: &Phase, what: &str) {
    what.clone_into(&mut phase.lock().unwrap());
}

/// The session file of the running process.
fn session_file(
    phase: &Phase,
    target: &Target,
    stdin: &mut impl Write,
    rx: &Receiver<Value>,
) -> Option<PathBuf> {
    let mut ignore = HashMap::new();
    let state = call(
        phase,
        target,
        stdin,
        rx,
        &mut ignore,
        Path::new(""),
        json!({"id": "st", "type": "get_state"}),
        false,
    )?;
    Some(PathBuf::from(state["data"]["sessionFile"].as_str()?))
}

/// The script one process runs until it is killed.
fn script(
    phase: Phase,
    target: Target,
    mut stdin: impl Write,
    rx: Receiver<Value>,
    main: PathBuf,
    auto: bool,
    tag: usize,
) -> HashMap<PathBuf, Seen> {
    let mut seen = HashMap::new();
    let mut file = main.clone();
    let _ = (|| -> Option<()> {
        let s = &mut seen;
        let set = json!({"id": "a", "type": "set_auto_compaction", "enabled": auto});
        call(&phase, &target, &mut stdin, &rx, s, &file, set, false)?;
        let prompt = |n: usize| json!({"id": format!("p{n}"), "type": "prompt", "message": format!("go {tag}.{n}")});
        call(&phase, &target, &mut stdin, &rx, s, &file, prompt(1), true)?;
        call(&phase, &target, &mut stdin, &rx, s, &file, prompt(2), true)?;
        call(
            &phase,
            &target,
            &mut stdin,
            &rx,
            s,
            &file,
            json!({"id": "c", "type": "compact"}),
            false,
        )?;
        let forks = call(
            &phase,
            &target,
            &mut stdin,
            &rx,
            s,
            &file,
            json!({"id": "fm", "type": "get_fork_messages"}),
            false,
        )?;
        if let Some(entry) = forks["data"]["messages"][0]["entryId"].as_str() {
            let fork = json!({"id": "f", "type": "fork", "entryId": entry});
            call(&phase, &target, &mut stdin, &rx, s, &file, fork, false)?;
            file = session_file(&phase, &target, &mut stdin, &rx)?;
            call(&phase, &target, &mut stdin, &rx, s, &file, prompt(3), true)?;
        }
        call(
            &phase,
            &target,
            &mut stdin,
            &rx,
            s,
            &file,
            json!({"id": "cl", "type": "clone"}),
            false,
        )?;
        file = session_file(&phase, &target, &mut stdin, &rx)?;
        call(
            &phase,
            &target,
            &mut stdin,
            &rx,
            s,
            &file,
            json!({"id": "c2", "type": "compact"}),
            false,
        )?;
        call(
            &phase,
            &target,
            &mut stdin,
            &rx,
            s,
            &file,
            json!({"id": "n", "type": "new_session"}),
            false,
        )?;
        file = session_file(&phase, &target, &mut stdin, &rx)?;
        call(&phase, &target, &mut stdin, &rx, s, &file, prompt(4), true)?;
        let back = json!({"id": "sw", "type": "switch_session", "sessionPath": main.to_str()?});
        call(&phase, &target, &mut stdin, &rx, s, &file, back, false)?;
        file = main.clone();
        call(&phase, &target, &mut stdin, &rx, s, &file, prompt(5), true)?;
        Some(())
    })();
    seen
}

/// Every `.jsonl` file under `dir`.
fn session_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            session_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// The raw checks of one file; returns its message entries and compaction summaries.
fn check_raw(file: &Path, kill: usize, torn: &mut usize) -> (Vec<Value>, Vec<String>) {
    let bytes = std::fs::read(file).unwrap();
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let mut ids = HashSet::new();
    let mut parents = Vec::new();
    let mut messages = Vec::new();
    let mut summaries = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let Ok(entry) = serde_json::from_slice::<Value>(line) else {
            // SIGKILL can cut a write short: a torn line that loaders skip (a later load
            // terminates it, so it need not be the last).
            *torn += 1;
            continue;
        };
        if i == 0 {
            assert_eq!(
                entry["type"],
                "session",
                "kill {kill}: {} has no header",
                file.display()
            );
            continue;
        }
        if let Some(id) = entry["id"].as_str() {
            ids.insert(id.to_owned());
        }
        if let Some(p) = entry["parentId"].as_str() {
            parents.push(p.to_owned());
        }
        match entry["type"].as_str() {
            Some("message") => messages.push(entry["message"].clone()),
            Some("compaction") => {
                assert!(
                    entry["summary"].is_string()
                        && entry["firstKeptEntryId"].is_string()
                        && entry["tokensBefore"].is_number(),
                    "kill {kill}: an incomplete compaction entry in {}: {entry}",
                    file.display()
                );
                summaries.push(entry["summary"].as_str().unwrap().to_owned());
            }
            _ => {}
        }
    }
    for p in parents {
        assert!(
            ids.contains(&p),
            "kill {kill}: {} has an entry whose parent {p} is not in the file",
            file.display()
        );
    }
    (messages, summaries)
}

#[test]
fn compactions_and_forks_survive_sigkill() {
    let kills = std::env::var("PI_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16usize);
    let mut cross_loads = std::env::var("PI_CROSS_LOADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4usize);
    let reference = oc_agent::reference(Path::new("/")).is_some();
    let rt = oc_agent::runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let mut rng = Rng(0x22_0026);
    let mut home = TempDir::new();
    let mut versions: HashMap<PathBuf, Vec<u8>> = HashMap::new();
    let mut seen_by_file: HashMap<PathBuf, Seen> = HashMap::new();
    let (mut checked_messages, mut checked_summaries, mut files_checked) = (0, 0, 0);
    let mut pi_loads = 0;
    let mut torn = 0;
    let mut phases: HashMap<String, usize> = HashMap::new();
    let started = Instant::now();
    for kill in 0..kills {
        if kill % KILLS_PER_HOME == 0 {
            home = TempDir::new();
            oc_agent::write_agent(
                &home.path,
                &mock.base(),
                4000,
                1000,
                r#"{"retry":{"enabled":false},"compaction":{"enabled":true,"reserveTokens":1000,"keepRecentTokens":10}}"#,
            );
            versions.clear();
            seen_by_file.clear();
        }
        let main = home.path.join("main.jsonl");
        mock.clear();
        for n in 0..16 {
            mock.push(answer(n));
        }
        let Rpc {
            mut child,
            stdin,
            rx,
            ..
        } = Rpc::start(on_session(oc_agent::ours(&home.path), &main));
        let auto = rng.below(2) == 0;
        let main_for_script = main.clone();
        let phase = Phase::default();
        let driver_phase = phase.clone();
        let target = (rng.below(2) == 0).then(|| {
            const OPS: [&str; 5] = ["fork", "clone", "new_session", "switch_session", "compact"];
            (child.id(), OPS[rng.below(5) as usize], rng.below(3000))
        });
        let driver = std::thread::spawn(move || {
            script(driver_phase, target, stdin, rx, main_for_script, auto, kill)
        });
        if target.is_none() {
            std::thread::sleep(Duration::from_millis(30 + rng.below(3000)));
        } else {
            // The driver kills; if the script ends first, the process is killed after it.
            while !driver.is_finished() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        child.kill().unwrap();
        *phases
            .entry(phase.lock().unwrap().clone())
            .or_insert(0usize) += 1;
        child.wait().unwrap();
        for (file, seen) in driver.join().unwrap() {
            let e = seen_by_file.entry(file).or_default();
            e.messages.extend(seen.messages);
            e.summaries.extend(seen.summaries);
        }

        let mut files = Vec::new();
        session_files(&home.path, &mut files);
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            if versions.get(&file) == Some(&bytes) {
                continue;
            }
            let (messages, summaries) = check_raw(&file, kill, &mut torn);
            let loaded = load_messages(on_session(oc_agent::ours(&home.path), &file), &file, "pi");
            if let Some(seen) = seen_by_file.get(&file) {
                for m in &seen.messages {
                    assert!(
                        messages.contains(m),
                        "kill {kill}: a message the client saw is missing from {}: {m}",
                        file.display()
                    );
                }
                for s in &seen.summaries {
                    assert!(
                        summaries.contains(s),
                        "kill {kill}: a compaction the client saw is missing from {}",
                        file.display()
                    );
                }
                checked_messages += seen.messages.len();
                checked_summaries += seen.summaries.len();
            }
            if let Some(theirs) = oc_agent::reference(&home.path)
                && cross_loads > 0
                && kill % 3 == 2
            {
                cross_loads -= 1;
                pi_loads += 1;
                let theirs = load_messages(on_session(theirs, &file), &file, "Pi 1.6.0");
                assert_eq!(
                    theirs.len(),
                    loaded.len(),
                    "kill {kill}: Pi and we load a different number of messages from {}",
                    file.display()
                );
            }
            files_checked += 1;
            // Loading may have terminated a torn last line: remember the file as it is now.
            versions.insert(file.clone(), std::fs::read(&file).unwrap());
        }
    }
    eprintln!(
        "{kills} kills in {:?}: {files_checked} file versions checked and reloaded ({pi_loads} by Pi \
         1.6.0); {checked_messages} message and {checked_summaries} compaction checks, none lost; \
         {torn} torn lines",
        started.elapsed()
    );
    let mut phases: Vec<_> = phases.into_iter().collect();
    phases.sort();
    eprintln!("killed during: {phases:?}");
    assert!(
        checked_messages > kills && checked_summaries > 0,
        "too little reached the client to mean anything"
    );
    if !reference {
        eprintln!(
            "Pi loads skipped: the reference is not installed (conformance/record installs it)"
        );
    }
}
