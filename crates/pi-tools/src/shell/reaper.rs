//! Children that outlive `pi`. Commands run in process groups of their own (so an abort stops
//! everything a command started), which also means nothing stops them when `pi` is killed with
//! SIGKILL: the kernel's parent-death signal reaches only a direct child, not what a shell
//! started. So at the first child, `pi` starts a reaper: a second copy of its own binary whose
//! stdin is a pipe only `pi` holds the write end of (close-on-exec: no child inherits it). `pi`
//! tells it each process group it starts and ends; when the pipe reports end of file — `pi`
//! exited or was killed — the reaper kills every group still listed and exits.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set in the reaper's environment: the binary's `main` runs [`run`] instead of `pi`.
pub const ENV: &str = "PI_PROCESS_REAPER";

/// Only a binary whose `main` runs [`run`] for [`ENV`] may start copies of itself as reapers
/// (a test binary started that way would run its tests again, and so on).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Called by `pi`'s `main`, which dispatches to [`run`] when [`ENV`] is set.
pub fn enable() {
    if std::env::var_os(ENV).is_none() {
        ENABLED.store(true, Ordering::SeqCst);
    }
}

/// The write end of the reaper's pipe, once started; `Err` after a failed start (not retried).
static PIPE: Mutex<Option<Result<ChildStdin, ()>>> = Mutex::new(None);

/// Tells the reaper that process group `pgid` started (`running`) or ended, starting the
/// reaper first if need be. Best effort: a reaper that cannot start leaves the old behaviour.
pub fn notify(pgid: i32, running: bool) {
    if pgid <= 0 || !ENABLED.load(Ordering::SeqCst) {
        return;
    }
    let mut guard = match PIPE.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if guard.is_none() {
        *guard = Some(start().map_err(|e| eprintln!("pi: process reaper not started: {e}")));
    }
    if let Some(Ok(pipe)) = guard.as_mut() {
        let sign = if running { '+' } else { '-' };
        // One write per line: `writeln!` on the unbuffered pipe made three syscalls of it.
        let _ = pipe.write_all(format!("{sign}{pgid}\n").as_bytes());
    }
}

fn start() -> std::io::Result<ChildStdin> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(std::env::current_exe()?)
        .env(ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a signal to pi's group (Ctrl-C in a terminal) must not take it along.
        .process_group(0)
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no pipe to the reaper"))
}

/// The reaper: reads `+pgid`/`-pgid` lines until its input ends, then kills the groups still
/// listed. Returns the exit status.
#[allow(unsafe_code)]
pub fn run() -> i32 {
    // SAFETY: signal(2) with SIG_IGN at startup, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let mut groups = HashSet::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let (running, number) = match line.split_at_checked(1) {
            Some(("+", n)) => (true, n),
            Some(("-", n)) => (false, n),
            _ => continue,
        };
        let Ok(pgid) = number.parse::<i32>() else {
            continue;
        };
        if running {
            groups.insert(pgid);
        } else {
            groups.remove(&pgid);
        }
    }
    for pgid in groups {
        kill_group(pgid);
    }
    0
}

/// SIGKILL to the whole group. An already gone group is fine.
pub fn kill_group(pgid: i32) {
    if pgid <= 0 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
