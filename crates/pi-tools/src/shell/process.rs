//! One shell command as a child process: `<shell> -c <command>` in its own process group, stdin
//! null, stdout and stderr on one pipe (so their bytes arrive in write order). Abort and timeout
//! send SIGKILL to the whole group. Like Pi, after the shell exits we keep reading while its
//! background children write, and stop once the pipe closes or stays quiet for 100 ms.

use super::reaper::{has_members, kill_group};
use std::collections::HashSet;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

/// Quiet time after the shell exited before output from its background children is abandoned.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);
const READ_CHUNK: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct ShellCommand {
    pub shell: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
}

/// The shell's own exit, when it came before a timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShellExit {
    pub code: i32,
    /// Seconds from start to the shell's exit, rounded to 0.1 s.
    pub after_seconds: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShellOutcome {
    /// The exit code; a shell killed by a signal reports 128 + the signal number.
    Exited(i32),
    Aborted,
    TimedOut {
        shell_exit: Option<ShellExit>,
    },
}

#[derive(Debug)]
pub enum ShellEvent {
    Output(Vec<u8>),
    Finished(ShellOutcome),
}

/// Process groups of running commands, so the binary can kill them all when it is told to quit.
static RUNNING_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn track(pgid: i32, running: bool) {
    let mut guard = match RUNNING_GROUPS.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    let set = guard.get_or_insert_with(HashSet::new);
    let mut emptied = Vec::new();
    if running {
        // Groups kept for what a finished command left running: drop those that emptied
        // since, before their number can be reused by an unrelated group.
        set.retain(|&g| {
            let keep = has_members(g);
            if !keep {
                emptied.push(g);
            }
            keep
        });
        set.insert(pgid);
    } else {
        set.remove(&pgid);
    }
    drop(guard);
    // Also when pi itself is killed: the reaper stops the groups still running then.
    for g in emptied {
        super::reaper::notify(g, false);
    }
    super::reaper::notify(pgid, running);
}

/// A command is over. What it left running in the background (`server &`) may go on while
/// `pi` runs, as in Pi, but dies with `pi` (exit, SIGTERM, or SIGKILL through the reaper),
/// where Pi would leave it behind: so the group stays listed while it has members.
fn finished(pgid: i32) {
    if !has_members(pgid) {
        track(pgid, false);
    }
}

/// Kills the process groups of every command still running (for SIGTERM/SIGHUP handling).
pub fn kill_running_shells() {
    let groups: Vec<i32> = match RUNNING_GROUPS.lock() {
        Ok(mut g) => g
            .take()
            .map(|s| s.into_iter().collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    for pgid in groups {
        kill_group(pgid);
    }
}

pub struct ShellProcess {
    child: Child,
    pgid: i32,
    pipe: Option<pipe::Receiver>,
    started: Instant,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    exit: Option<(ExitStatus, Instant)>,
    grace_until: Option<Instant>,
    aborted: bool,
    timed_out: bool,
    exit_before_deadline: Option<Instant>,
    finished: bool,
    buf: Vec<u8>,
}

enum Step {
    Cancelled,
    Deadline,
    Read(std::io::Result<usize>),
    Exited(std::io::Result<ExitStatus>),
    Quiet,
}

impl ShellProcess {
    /// Starts the command. Errors are Pi's texts (`spawn <shell> ENOENT`).
    pub fn spawn(
        cmd: &ShellCommand,
        cancel: CancellationToken,
        timeout: Option<Duration>,
    ) -> Result<ShellProcess, String> {
        let (sender, receiver) = pipe::pipe().map_err(|e| e.to_string())?;
        let write_end: OwnedFd = sender.into_blocking_fd().map_err(|e| e.to_string())?;
        let write_end_2 = write_end.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(&cmd.shell);
        command
            .arg("-c")
            .arg(&cmd.command)
            .current_dir(&cmd.cwd)
            .env_clear()
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(write_end))
            .stderr(Stdio::from(write_end_2))
            .process_group(0)
            .kill_on_drop(false);
        // Not `reaper::watch`: its hook would make std fork instead of posix_spawn (see
        // `reaper`). Started first, the reaper hears of the group right after `spawn` returns.
        super::reaper::ready();
        let child = command.spawn().map_err(|e| {
            format!(
                "spawn {} {}",
                cmd.shell.display(),
                crate::fs_error::code(&e)
            )
        })?;
        // Our copies of the write end must close now, or the pipe never reports EOF.
        drop(command);
        let pgid = child.id().map_or(0, |id| id as i32);
        track(pgid, true);
        let started = Instant::now();
        Ok(ShellProcess {
            child,
            pgid,
            pipe: Some(receiver),
            started,
            cancel,
            deadline: timeout.map(|t| started + t),
            exit: None,
            grace_until: None,
            aborted: false,
            timed_out: false,
            exit_before_deadline: None,
            finished: false,
            buf: vec![0u8; READ_CHUNK],
        })
    }

    pub fn pid(&self) -> i32 {
        self.pgid
    }

    fn kill(&self) {
        kill_group(self.pgid);
    }

    fn outcome(&self) -> ShellOutcome {
        if self.aborted || self.cancel.is_cancelled() {
            return ShellOutcome::Aborted;
        }
        if self.timed_out {
            let shell_exit = self.exit_before_deadline.and_then(|at| {
                let code = self.exit.map(|(status, _)| exit_code(status))?;
                let ms = at.duration_since(self.started).as_secs_f64() * 1000.0;
                Some(ShellExit {
                    code,
                    after_seconds: (ms / 100.0).round() / 10.0,
                })
            });
            return ShellOutcome::TimedOut { shell_exit };
        }
        ShellOutcome::Exited(self.exit.map_or(1, |(status, _)| exit_code(status)))
    }

    /// The next chunk of output, or the outcome once the command is over. Cancel-safe.
    pub async fn next(&mut self) -> ShellEvent {
        loop {
            if self.finished || (self.exit.is_some() && self.pipe.is_none()) {
                if !self.finished {
                    self.finished = true;
                    finished(self.pgid);
                }
                return ShellEvent::Finished(self.outcome());
            }
            let far = Instant::now() + Duration::from_secs(86_400 * 365);
            let step = {
                let ShellProcess {
                    child,
                    pipe,
                    cancel,
                    deadline,
                    exit,
                    grace_until,
                    aborted,
                    timed_out,
                    buf,
                    ..
                } = self;
                let reading = pipe.is_some();
                tokio::select! {
                    biased;
                    _ = cancel.cancelled(), if !*aborted => Step::Cancelled,
                    _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() && !*timed_out => Step::Deadline,
                    r = async { match pipe.as_mut() { Some(p) => p.read(buf).await, None => Ok(0) } }, if reading => Step::Read(r),
                    s = child.wait(), if exit.is_none() => Step::Exited(s),
                    _ = sleep_until(grace_until.unwrap_or(far)), if exit.is_some() && grace_until.is_some() => Step::Quiet,
                }
            };
            match step {
                Step::Cancelled => {
                    self.aborted = true;
                    self.kill();
                }
                Step::Deadline => {
                    self.timed_out = true;
                    self.exit_before_deadline = self.exit.map(|(_, at)| at);
                    // Also after the shell exited: the group kill still reaches background
                    // processes that hold the pipe.
                    self.kill();
                }
                Step::Read(Ok(0)) | Step::Read(Err(_)) => self.pipe = None,
                Step::Read(Ok(n)) => {
                    if self.exit.is_some() {
                        self.grace_until = Some(Instant::now() + EXIT_STDIO_GRACE);
                    }
                    return ShellEvent::Output(self.buf[..n].to_vec());
                }
                Step::Exited(status) => {
                    let now = Instant::now();
                    let status = status.unwrap_or_else(|_| ExitStatus::default());
                    self.exit = Some((status, now));
                    self.grace_until = Some(now + EXIT_STDIO_GRACE);
                }
                Step::Quiet => self.pipe = None,
            }
        }
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        if !self.finished {
            // Abandoned mid-run (the caller went away): leave nothing running.
            self.kill();
            track(self.pgid, false);
        }
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}
