//! Drives the real `pi` binary over pipes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

const READ_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Pi {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _home: TempDir,
}

impl Pi {
    /// `pi --mode rpc --no-session` in a fresh, hermetic home and agent dir.
    pub fn rpc() -> Pi {
        Pi::spawn(&["--mode", "rpc", "--no-session"])
    }

    pub fn spawn(args: &[&str]) -> Pi {
        Pi::spawn_with(args, &[], &[])
    }

    /// Like [`Pi::spawn`], with extra environment variables (replacing the defaults) and
    /// files written into the working directory first. Stderr goes to `<home>/stderr.txt`.
    pub fn spawn_with(args: &[&str], env: &[(&str, String)], files: &[(&str, &str)]) -> Pi {
        let home = TempDir::new();
        let agent = home.path.join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        for (name, text) in files {
            let path = home.path.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            // A session file records its cwd: `${PI_TEST_HOME}` names this run's folder.
            let text = text.replace("${PI_TEST_HOME}", &home.path.display().to_string());
            std::fs::write(path, text).unwrap();
        }
        let stderr = std::fs::File::create(home.path.join("stderr.txt")).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home.path)
            .env("PI_CODING_AGENT_DIR", &agent)
            .env("PI_OFFLINE", "1");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .current_dir(&home.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn pi");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        assert_eq!(buf.pop(), Some(b'\n'), "record without LF");
                        let s = String::from_utf8(buf).expect("stdout is UTF-8");
                        if tx.send(s).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Pi {
            child,
            stdin,
            lines,
            _home: home,
        }
    }

    /// What pi wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self._home.path.join("stderr.txt")).unwrap_or_default()
    }

    /// The home directory pi runs in (its working directory too).
    pub fn home(&self) -> &std::path::Path {
        &self._home.path
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes the chunks from another thread (for when stdout is deliberately not read).
    pub fn spawn_writer(&mut self, chunks: Vec<Vec<u8>>) -> std::thread::JoinHandle<()> {
        let mut stdin = self.stdin.take().expect("stdin open");
        std::thread::spawn(move || {
            for c in chunks {
                stdin.write_all(&c).unwrap();
            }
        })
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    pub fn read_line(&mut self) -> String {
        self.lines
            .recv_timeout(READ_TIMEOUT)
            .expect("a stdout record before the timeout")
    }

    pub fn read_json(&mut self) -> Value {
        let line = self.read_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Every record still to come until stdout closes.
    pub fn read_rest(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(READ_TIMEOUT) {
            out.push(serde_json::from_str(&line).unwrap());
        }
        out
    }

    #[allow(unsafe_code)]
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child we own.
        let rc = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(rc, 0);
    }

    pub fn wait_exit(&mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + READ_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(std::time::Instant::now() < deadline, "pi did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Resident set size from /proc, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

/// The names of a process's threads (Linux `/proc`).
pub fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|t| {
            let comm = t.unwrap().path().join("comm");
            std::fs::read_to_string(comm)
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect()
}

impl Drop for Pi {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A temporary directory removed on drop.
pub struct TempDir {
    pub path: std::path::PathBuf,
}

impl TempDir {
    pub fn new() -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "pi-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
