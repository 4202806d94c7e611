//! One agent process in RPC mode: a hermetic sandbox, the child with piped stdio, a reader
//! thread that timestamps every stdout record the moment it is read, and `/proc` figures.
//! The records one `read` returns reach the caller as one batch: a hand-off between threads per
//! record woke the harness twice for each write of the agent, on the two cores the agent
//! runs on.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use pi_test_support::conformance::sandbox::{Sandbox, default_models};

/// Which agent a run starts.
#[derive(Debug, Clone)]
pub struct Target {
    /// `ours` or `ref`.
    pub key: &'static str,
    pub program: PathBuf,
    /// `PATH` of the child (the reference needs node, rg and fd on it).
    pub path_env: String,
    /// `TMPDIR` shared by all runs of this target: Pi 1.6.0 calls `enableCompileCache()`, which
    /// keeps V8's code cache in `$TMPDIR/node-compile-cache`, as on a user's machine.
    pub tmpdir: PathBuf,
    /// Extra environment (the relay floor uses it to find the mock).
    pub env: Vec<(String, String)>,
}

/// A stdout record and the instant the reader thread got it.
#[derive(Debug)]
pub struct Line {
    pub at: Instant,
    pub text: String,
}

pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<Line>>,
    /// Records of a batch not taken yet.
    pending: RefCell<VecDeque<Line>>,
    pub pid: u32,
    pub spawned_at: Instant,
    stderr_path: PathBuf,
}

pub type Res<T> = Result<T, String>;

/// Line buffers that readers hand on to later readers. A reader that grew a fresh buffer to a
/// 100 MB response would take ~25,000 page faults (~50 ms on this VM) before the line is
/// whole, for every agent alike: client cost that is not the agent's. So the session figures
/// warm buffers once ([`warm_line_buffers`]) and every reader reads into one of them.
static LINE_BUFFERS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Buffers larger than this are not kept (the 1 GB session's would pin gigabytes).
const KEPT_BUFFER_MAX: usize = 256 << 20;

/// Keeps `count` line buffers of `bytes` each, every page written once.
pub fn warm_line_buffers(bytes: usize, count: usize) {
    let mut pool = LINE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
    while pool.len() < count {
        let mut b = vec![1u8; bytes];
        b.clear();
        pool.push(b);
    }
}

fn take_line_buffer() -> Vec<u8> {
    let mut pool = LINE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
    pool.pop().unwrap_or_else(|| Vec::with_capacity(1 << 12))
}

fn give_back_line_buffer(buf: Vec<u8>) {
    if buf.capacity() > 1 << 20 && buf.capacity() <= KEPT_BUFFER_MAX {
        let mut pool = LINE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 4 {
            pool.push(buf);
        }
    }
}

/// A fresh sandbox (home/, agent/, work/, tmp/ under the system temp dir, removed on drop)
/// with the two mock providers of the spec in `agent/models.json`.
pub fn sandbox(mock_port: u16) -> Res<Sandbox> {
    let sb = Sandbox::create(false)?;
    let models = default_models(mock_port);
    std::fs::write(sb.agent.join("models.json"), models.to_string()).map_err(|e| e.to_string())?;
    Ok(sb)
}

impl Agent {
    /// Starts `<target> --mode rpc <args>` in `cwd` with a cleared environment.
    pub fn spawn(target: &Target, sb: &Sandbox, cwd: &Path, args: &[&str]) -> Res<Agent> {
        let stderr_path = sb.root.join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&target.program);
        cmd.arg("--mode")
            .arg("rpc")
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", &target.path_env)
            .env("HOME", &sb.home)
            .env("PI_CODING_AGENT_DIR", &sb.agent)
            .env("PI_OFFLINE", "1")
            .env("TMPDIR", &target.tmpdir)
            .envs(target.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        let spawned_at = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", target.program.display()))?;
        let pid = child.id();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::Builder::new()
            .name(format!("stdout-{pid}"))
            .spawn(move || {
                let mut reader = BufReader::with_capacity(1 << 20, stdout);
                let mut buf = take_line_buffer();
                let line = |buf: &[u8], at| Line {
                    at,
                    text: String::from_utf8_lossy(buf.strip_suffix(b"\n").unwrap_or(buf))
                        .into_owned(),
                };
                loop {
                    buf.clear();
                    match reader.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let at = Instant::now();
                    let mut batch = vec![line(&buf, at)];
                    // The rest of what that read returned, without another read.
                    while reader.buffer().contains(&b'\n') {
                        buf.clear();
                        if reader.read_until(b'\n', &mut buf).is_err() {
                            break;
                        }
                        batch.push(line(&buf, at));
                    }
                    if tx.send(batch).is_err() {
                        break;
                    }
                }
                give_back_line_buffer(buf);
            })
            .map_err(|e| e.to_string())?;
        Ok(Agent {
            child,
            stdin,
            lines: rx,
            pending: RefCell::default(),
            pid,
            spawned_at,
            stderr_path,
        })
    }

    /// Writes one command line.
    pub fn send(&mut self, json: &str) -> Res<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let mut line = String::with_capacity(json.len() + 1);
        line.push_str(json);
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("write to agent: {e}"))
    }

    /// The next record, or an error after `timeout` (or when stdout closed).
    pub fn next(&self, timeout: Duration) -> Res<Line> {
        let mut pending = self.pending.borrow_mut();
        if let Some(line) = pending.pop_front() {
            return Ok(line);
        }
        match self.lines.recv_timeout(timeout) {
            Ok(batch) => {
                pending.extend(batch);
                pending
                    .pop_front()
                    .ok_or_else(|| "an empty batch".to_string())
            }
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "timed out after {:?} waiting for output{}",
                timeout,
                self.stderr_tail()
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Err(format!("agent closed stdout{}", self.stderr_tail()))
            }
        }
    }

    /// Skips records until one satisfies `pred`.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Res<Line> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.next(left)?;
            if pred(&line.text) {
                return Ok(line);
            }
        }
    }

    /// Waits for the response to the command with `id`; an error if `success` is false.
    pub fn response(&self, id: &str, timeout: Duration) -> Res<Line> {
        let needle = format!("\"id\":\"{id}\"");
        let line = self.wait_for(timeout, |t| {
            t.starts_with('{') && t.contains("\"type\":\"response\"") && t.contains(&needle)
        })?;
        if line.text.contains("\"success\":false") {
            let head: String = line.text.chars().take(300).collect();
            return Err(format!("command {id} failed: {head}"));
        }
        Ok(line)
    }

    /// Resident set of the process and all its descendants, in KiB.
    pub fn tree_rss_kib(&self) -> u64 {
        descendants(self.pid)
            .into_iter()
            .chain([self.pid])
            .filter_map(|p| status_kib(p, "VmRSS:"))
            .sum()
    }

    /// Peak resident set of the process (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        status_kib(self.pid, "VmHWM:")
    }

    /// Context switches (voluntary + involuntary) of all threads of the process so far.
    pub fn context_switches(&self) -> u64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return 0;
        };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter(|l| l.contains("ctxt_switches:"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// CPU time the process's threads have used so far, in microseconds (the scheduler's
    /// nanosecond run times in `/proc/<pid>/task/*/schedstat`; `stat`'s ticks are 10 ms).
    pub fn cpu_us(&self) -> u64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return 0;
        };
        let ns: u64 = tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|text| text.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        ns / 1000
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        if tail.is_empty() {
            String::new()
        } else {
            let mut t: Vec<&str> = tail;
            t.reverse();
            format!(" (stderr: {})", t.join(" | "))
        }
    }

    /// Like [`Agent::stop`], and returns the CPU time the process used over its life (all its
    /// threads, also those that ended).
    pub fn stop_with_usage(mut self) -> Option<Usage> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(u) = wait4(self.pid, false) {
                return Some(u);
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Not reaped yet, so the PID is still this child's.
        let _ = self.child.kill();
        wait4(self.pid, true)
    }

    /// Closes stdin (Pi exits on EOF), waits up to 5 s, then kills the child by its PID.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => break,
            }
        }
        // `Child::kill` signals exactly this PID.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a process used over its life. (No peak RSS: `ru_maxrss` carries the high-water mark
/// from before the exec, i.e. the spawning harness's; read `VmHWM` while the process lives.)
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// User + system CPU time.
    pub cpu: Duration,
}

/// Reaps the child `pid` (blocking or not) and returns its usage; `None` if it has not ended
/// (or cannot be waited for). Once this succeeds the `Child` must not be waited for again.
#[allow(unsafe_code)]
fn wait4(pid: u32, block: bool) -> Option<Usage> {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid, and wait4 writes only into the two out-pointers,
    // both of which point at live locals.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut ru) };
    if r != pid as libc::pid_t {
        return None;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    Some(Usage {
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
    })
}

/// `/proc/<pid>/status` field in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// Every process whose ancestry leads to `root`.
fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parent_of = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may contain spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok())
        {
            parent_of.push((pid, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (child, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            out.push(*child);
            frontier.push(*child);
        }
    }
    out
}
