//! The agent process under test: spawned with a cleared environment, stdin written by the
//! runner, stdout collected line by line (LF only, as the protocol frames it), stderr kept for
//! diagnostics (and for the golden of a scenario with `"stderr": true`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::Notify;

/// How to start the agent under test.
#[derive(Debug, Clone)]
pub struct Target {
    /// Shown in messages (`pi 1.6.0`, `ours`).
    pub label: String,
    pub program: PathBuf,
    /// Arguments before `--mode rpc`.
    pub args: Vec<String>,
    /// The `PATH` of the child.
    pub path_env: String,
    /// Install directory of the program's package, replaced by `<pi-package>` in transcripts.
    pub package_dir: Option<String>,
    /// `XDG_CACHE_HOME` shared by every run: a cache filled once (our extension host's
    /// installed files) instead of once per scenario, as on a user's machine.
    pub cache_dir: Option<String>,
}

/// One stdout line.
#[derive(Debug, Clone)]
pub struct Line {
    pub text: String,
    pub json: Option<Value>,
}

#[derive(Debug)]
pub struct Output {
    pub lines: Vec<Line>,
    pub stdout_closed: bool,
    pub last_activity: Instant,
    pub stderr: Vec<u8>,
    pub stderr_closed: bool,
}

const STDERR_CAP: usize = 256 * 1024;

/// A running agent.
pub struct Agent {
    pub child: Child,
    stdin: Option<ChildStdin>,
    output: Arc<(Mutex<Output>, Notify)>,
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Agent {
    pub fn spawn(
        target: &Target,
        mode: Option<&str>,
        args: &[String],
        env: &[(String, String)],
        cwd: &std::path::Path,
        progress: tokio::sync::watch::Sender<u64>,
    ) -> Result<Agent, String> {
        let mut cmd = Command::new(&target.program);
        let mode_args: &[&str] = match mode {
            None => &["--mode", "rpc"],
            Some("print") => &["-p"],
            Some("json") => &["--mode", "json"],
            Some(_) => &["--mode", "rpc"],
        };
        cmd.args(&target.args)
            .args(mode_args)
            .args(args)
            .env_clear()
            .env("PATH", &target.path_env)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .envs(target.cache_dir.iter().map(|d| ("XDG_CACHE_HOME", d)))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", target.program.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let output = Arc::new((
            Mutex::new(Output {
                lines: Vec::new(),
                stdout_closed: false,
                last_activity: Instant::now(),
                stderr: Vec::new(),
                stderr_closed: false,
            }),
            Notify::new(),
        ));
        if let Some(out) = stdout {
            let shared = output.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(out);
                loop {
                    let mut buf = Vec::new();
                    let n = reader.read_until(b'\n', &mut buf).await.unwrap_or(0);
                    let mut o = lock(&shared.0);
                    if n == 0 {
                        o.stdout_closed = true;
                        drop(o);
                        shared.1.notify_waiters();
                        return;
                    }
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let json = serde_json::from_str(&text).ok();
                    o.lines.push(Line { text, json });
                    o.last_activity = Instant::now();
                    let count = o.lines.len() as u64;
                    drop(o);
                    progress.send_replace(count);
                    shared.1.notify_waiters();
                }
            });
        }
        if let Some(mut err) = stderr {
            let shared = output.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut o = lock(&shared.0);
                    if o.stderr.len() < STDERR_CAP {
                        o.stderr.extend_from_slice(&buf[..n]);
                    }
                }
                lock(&shared.0).stderr_closed = true;
                shared.1.notify_waiters();
            });
        }
        Ok(Agent {
            child,
            stdin,
            output,
        })
    }

    pub fn output(&self) -> MutexGuard<'_, Output> {
        lock(&self.output.0)
    }

    /// Resolves on the next stdout line or stdout close (or after `max`).
    pub async fn changed(&self, max: Duration) {
        let notified = self.output.1.notified();
        let _ = tokio::time::timeout(max, notified).await;
    }

    /// Registers interest before checking a condition, so no wake-up is lost.
    pub fn notifier(&self) -> Arc<(Mutex<Output>, Notify)> {
        self.output.clone()
    }

    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("stdin already closed".into());
        };
        stdin
            .write_all(bytes)
            .await
            .map_err(|e| format!("writing stdin: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("flushing stdin: {e}"))
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub async fn signal(&self, name: &str) -> Result<(), String> {
        let Some(pid) = self.child.id() else {
            return Err("process already exited".into());
        };
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .await
            .map_err(|e| format!("kill: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{name} {pid} failed"))
        }
    }

    /// Waits for exit; kills the process if it does not exit within `max`.
    /// Returns the golden `exit` value: a code, `signal <n>`, or `killed after timeout`.
    pub async fn finish(&mut self, max: Duration) -> String {
        self.close_stdin();
        let status = match tokio::time::timeout(max, self.child.wait()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return format!("wait failed: {e}"),
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                return "killed after timeout".into();
            }
        };
        // Let the readers drain what the process wrote before exiting.
        let deadline = Instant::now() + Duration::from_secs(2);
        let drained = |o: &Output| o.stdout_closed && o.stderr_closed;
        while !drained(&self.output()) && Instant::now() < deadline {
            self.changed(Duration::from_millis(50)).await;
        }
        describe_status(status)
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    }
}
