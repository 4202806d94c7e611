//! Children that outlive `pi`. Commands run in process groups of their own (so an abort stops
//! everything a command started), which also means nothing stops them when `pi` is killed with
//! SIGKILL: the kernel's parent-death signal reaches only a direct child, not what a shell
//! started. So before the first child, `pi` starts a reaper: a second copy of its own binary
//! whose stdin is a pipe only `pi` holds the write end of (close-on-exec: no child keeps it past
//! its exec). The reaper learns each process group that starts and ends; when the pipe reports
//! end of file — `pi` exited or was killed — it kills every group still listed and exits.
//!
//! The reaper starts before the first child ([`ready`], [`watch`]), not with the first notice:
//! starting it takes milliseconds, and a `pi` killed then left that child unknown to it. A
//! child that is forked anyway (it has other `pre_exec` work, as the extension host does)
//! announces its own group between fork and exec ([`watch`]), which closes even the window
//! between `spawn` returning and `pi`'s notice: the child still holds the pipe then, so the
//! reaper reads the notice before its end of file. Other children keep posix_spawn and are
//! announced by `pi` right after `spawn` returns ([`notify`]), a window of microseconds: a
//! hook would make std fork them, and in a process of `pi`'s size the copy-on-write faults
//! after a fork cost milliseconds (a 12 MB heap rewritten: 2.7 ms of faults against 0.02 ms).
//!
//! The lines: `+pgid` from the child (provisional: its exec may still fail, and then `pi` never
//! learns the pid), `=pgid` from `pi` once `spawn` succeeded, `-pgid` when the group ended. A
//! provisional group whose processes are gone is dropped after [`PRUNE_MS`], so a pid of a
//! failed exec is not killed later when the number belongs to someone else.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set in the reaper's environment: the binary's `main` runs [`run`] instead of `pi`.
pub const ENV: &str = "PI_PROCESS_REAPER";

/// How long a provisional group may be gone before the reaper forgets it.
const PRUNE_MS: i32 = 1000;

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
/// Never dropped once set, so its descriptor number stays valid for children's hooks.
static PIPE: Mutex<Option<Result<ChildStdin, ()>>> = Mutex::new(None);

fn pipe() -> std::sync::MutexGuard<'static, Option<Result<ChildStdin, ()>>> {
    let mut guard = match PIPE.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if guard.is_none() && ENABLED.load(Ordering::SeqCst) {
        *guard = Some(start().map_err(|e| eprintln!("pi: process reaper not started: {e}")));
    }
    guard
}

/// Starts the reaper if it is not running yet (before a child whose group `pi` announces
/// itself with [`notify`]).
pub fn ready() {
    drop(pipe());
}

/// Has `command`'s child announce its process group to the reaper before it execs, starting
/// the reaper first if need be. `command` must put the child in a group of its own
/// (`process_group(0)`): the child announces its pid as the group. Best effort: without a
/// reaper the command runs as before.
#[allow(unsafe_code)]
pub fn watch(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let fd = match pipe().as_ref() {
        Some(Ok(pipe)) => pipe.as_raw_fd(),
        _ => return,
    };
    // SAFETY: the hook runs in the forked child before exec and makes only async-signal-safe
    // calls (getpid, write) on a stack buffer and a descriptor the child inherited: the pipe is
    // close-on-exec, not closed at fork, and `PIPE` never closes it.
    unsafe {
        command.pre_exec(move || {
            let mut line = [0u8; LINE_MAX];
            let len = format_line(b'+', libc::getpid(), &mut line);
            libc::write(fd, line.as_ptr().cast(), len);
            Ok(())
        });
    }
}

/// `pi`'s side: the group `pgid` started (its `spawn` succeeded) or ended.
pub fn notify(pgid: i32, running: bool) {
    if pgid <= 0 {
        return;
    }
    if let Some(Ok(pipe)) = pipe().as_mut() {
        let mut line = [0u8; LINE_MAX];
        let len = format_line(if running { b'=' } else { b'-' }, pgid, &mut line);
        // One write per line: writes to a pipe up to PIPE_BUF never interleave with a child's.
        let _ = pipe.write_all(&line[..len]);
    }
}

/// Sign, up to 10 digits of a positive i32, newline.
const LINE_MAX: usize = 12;

/// Writes `<sign><n>\n` into `out` without allocating (it runs between fork and exec).
fn format_line(sign: u8, n: i32, out: &mut [u8; LINE_MAX]) -> usize {
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = n.unsigned_abs();
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out[0] = sign;
    for i in 0..count {
        out[1 + i] = digits[count - 1 - i];
    }
    out[1 + count] = b'\n';
    count + 2
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

/// The groups the reaper knows: `true` once `pi` confirmed the group's start.
type Groups = HashMap<i32, bool>;

fn apply(groups: &mut Groups, line: &[u8]) {
    let Some((&sign, number)) = line.split_first() else {
        return;
    };
    let Some(pgid) = std::str::from_utf8(number)
        .ok()
        .and_then(|n| n.parse::<i32>().ok())
    else {
        return;
    };
    match sign {
        b'+' => {
            groups.entry(pgid).or_insert(false);
        }
        b'=' => {
            groups.insert(pgid, true);
        }
        b'-' => {
            groups.remove(&pgid);
        }
        _ => {}
    }
}

/// Drops provisional groups with no process left (an exec that failed).
fn prune(groups: &mut Groups, alive: impl Fn(i32) -> bool) {
    groups.retain(|&pgid, confirmed| *confirmed || alive(pgid));
}

/// The reaper: reads notices until its input ends, then kills the groups still listed.
/// Returns the exit status.
#[allow(unsafe_code)]
pub fn run() -> i32 {
    // SAFETY: signal(2) with SIG_IGN at startup, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let mut groups = Groups::new();
    let mut partial = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let provisional = groups.values().any(|confirmed| !confirmed);
        if provisional && !readable(0, PRUNE_MS) {
            prune(&mut groups, has_members);
            continue;
        }
        // SAFETY: read(2) into a stack buffer of the length given.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        let Ok(n @ 1..) = usize::try_from(n) else {
            break;
        };
        partial.extend_from_slice(&buf[..n]);
        while let Some(end) = partial.iter().position(|&b| b == b'\n') {
            apply(&mut groups, &partial[..end]);
            partial.drain(..=end);
        }
    }
    for pgid in groups.into_keys() {
        kill_group(pgid);
    }
    0
}

/// Whether `fd` has input (or end of file) within `timeout_ms`.
#[allow(unsafe_code)]
fn readable(fd: RawFd, timeout_ms: i32) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one pollfd we own. An error counts as readable: the read reports it.
    unsafe { libc::poll(&mut poll, 1, timeout_ms) != 0 }
}

/// Whether any process is still in group `pgid` (signal 0 checks without sending).
pub(crate) fn has_members(pgid: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 takes plain integers and sends nothing.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(sign: u8, n: i32) -> String {
        let mut out = [0u8; LINE_MAX];
        let len = format_line(sign, n, &mut out);
        String::from_utf8(out[..len].to_vec()).unwrap_or_default()
    }

    #[test]
    fn lines_are_formatted_without_allocating() {
        assert_eq!(line(b'+', 1), "+1\n");
        assert_eq!(line(b'-', 40213), "-40213\n");
        assert_eq!(line(b'=', i32::MAX), "=2147483647\n");
        assert_eq!(line(b'+', 10), "+10\n");
    }

    #[test]
    fn a_child_announces_then_pi_confirms_then_it_ends() {
        let mut groups = Groups::new();
        apply(&mut groups, b"+17");
        assert_eq!(groups.get(&17), Some(&false));
        apply(&mut groups, b"=17");
        assert_eq!(groups.get(&17), Some(&true));
        // A late duplicate announcement does not make a confirmed group provisional again.
        apply(&mut groups, b"+17");
        assert_eq!(groups.get(&17), Some(&true));
        apply(&mut groups, b"-17");
        assert!(groups.is_empty());
        for junk in [&b""[..], b"+", b"x12", b"+12a", b"=-"] {
            apply(&mut groups, junk);
        }
        assert!(groups.is_empty());
    }

    #[test]
    fn only_provisional_groups_that_are_gone_are_pruned() {
        let mut groups = Groups::new();
        for l in [&b"+1"[..], b"+2", b"+3", b"=3", b"+4", b"=4"] {
            apply(&mut groups, l);
        }
        // 1 (a failed exec) is gone, 2 still runs, 3 is gone but confirmed: pi sends its end.
        prune(&mut groups, |pgid| pgid == 2 || pgid == 4);
        let mut left: Vec<_> = groups.into_iter().collect();
        left.sort_unstable();
        assert_eq!(left, vec![(2, false), (3, true), (4, true)]);
    }
}
