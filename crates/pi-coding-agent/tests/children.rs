//! Children of the real binary (issue #22, item 5): what a command starts dies with `pi`, also
//! when `pi` is killed with SIGKILL, and no child holds the protocol's stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Pi, TempDir};

/// Gone, or a zombie nobody reaped yet: either way it runs no more.
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn read_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[test]
fn a_commands_processes_die_when_pi_is_killed_with_sigkill() {
    let mut pi = Pi::rpc();
    let dir = TempDir::new();
    let (shell, background) = (dir.path.join("sh.pid"), dir.path.join("bg.pid"));
    // A shell with a background grandchild, both in the command's own process group.
    let command = format!(
        "sleep 300 & echo $! > {}.tmp; mv {0}.tmp {0}; echo $$ > {}.tmp; mv {1}.tmp {1}; wait",
        background.display(),
        shell.display()
    );
    let cmd = serde_json::json!({"id": "b", "type": "bash", "command": command});
    pi.write(format!("{cmd}\n").as_bytes());
    let started = Instant::now();
    let (sh, bg) = loop {
        if let (Some(sh), Some(bg)) = (read_pid(&shell), read_pid(&background)) {
            break (sh, bg);
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "command did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!dead(sh) && !dead(bg));
    pi.signal(libc::SIGKILL);
    pi.wait_exit();
    let killed = Instant::now();
    while !(dead(sh) && dead(bg)) {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the command's processes outlived pi (shell {sh}: dead {}, background {bg}: dead {})",
            dead(sh),
            dead(bg)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("both gone {:?} after SIGKILL", killed.elapsed());
}

/// Waits for the pid files a command writes (30 s at most: an extension host starting Node
/// on a loaded 2-core machine took over 10 s).
fn wait_pids(files: [&std::path::Path; 2]) -> [i32; 2] {
    let started = Instant::now();
    loop {
        if let (Some(a), Some(b)) = (read_pid(files[0]), read_pid(files[1])) {
            return [a, b];
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the child did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILLs `pi` and waits (5 s at most) until every pid is dead.
fn kill_and_expect_dead(mut pi: Pi, pids: [i32; 2]) -> Duration {
    assert!(pids.iter().all(|p| !dead(*p)));
    pi.signal(libc::SIGKILL);
    pi.wait_exit();
    let killed = Instant::now();
    while !pids.iter().all(|p| dead(*p)) {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "children outlived pi: {:?}",
            pids.map(|p| (p, dead(p)))
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.elapsed()
}

#[test]
fn an_mcp_server_and_its_children_die_when_pi_is_killed_with_sigkill() {
    let server = pi_test_support::mcp_server::binary_path().unwrap();
    let dir = TempDir::new();
    let (shell, background) = (dir.path.join("sh.pid"), dir.path.join("bg.pid"));
    // A wrapper that leaves a child behind and becomes the server, as `npx`-style launchers do.
    let script = format!(
        "sleep 300 & echo $! > {bg}.tmp; mv {bg}.tmp {bg}; echo $$ > {sh}.tmp; mv {sh}.tmp {sh}; exec {server}",
        bg = background.display(),
        sh = shell.display(),
        server = server.display()
    );
    let mcp =
        serde_json::json!({"mcpServers": {"test": {"command": "sh", "args": ["-c", script]}}});
    let pi = Pi::spawn_with(
        &["--mode", "rpc", "--no-session"],
        &[],
        &[("agent/mcp.json", &mcp.to_string())],
    );
    let pids = wait_pids([&shell, &background]);
    let took = kill_and_expect_dead(pi, pids);
    eprintln!("server and its child gone {took:?} after SIGKILL");
}

#[test]
fn what_an_extension_starts_dies_when_pi_is_killed_with_sigkill() {
    let dir = TempDir::new();
    let (shell, child) = (dir.path.join("sh.pid"), dir.path.join("child.pid"));
    // An extension that starts a shell (not detached: it stays in the host's group), which
    // starts a child of its own.
    let script = format!(
        "sleep 300 & echo $! > {c}.tmp; mv {c}.tmp {c}; echo $$ > {s}.tmp; mv {s}.tmp {s}; wait",
        c = child.display(),
        s = shell.display()
    );
    let extension = format!(
        "import {{ spawn }} from \"node:child_process\";\n\
         export default function () {{ spawn(\"sh\", [\"-c\", {}], {{ stdio: \"ignore\" }}); }}\n",
        serde_json::to_string(&script).unwrap()
    );
    let pi = Pi::spawn_with(
        &["--mode", "rpc", "--no-session", "-ne", "-e", "./spawner.ts"],
        &[],
        &[("spawner.ts", &extension)],
    );
    let pids = wait_pids([&shell, &child]);
    let took = kill_and_expect_dead(pi, pids);
    eprintln!("the extension's processes gone {took:?} after SIGKILL");
}

#[test]
fn no_child_holds_the_protocol_stdout() {
    let home = TempDir::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--mode", "rpc", "--no-session"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home.path)
        .env("PI_CODING_AGENT_DIR", home.path.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(&home.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let protocol = std::fs::read_link(format!("/proc/self/fd/{}", stdout.as_raw_fd())).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Every descriptor of the command's shell, and what writing to its stdout does.
    let cmd = serde_json::json!({"id": "b", "type": "bash",
        "command": "for f in /proc/$$/fd/*; do readlink $f; done; echo leak > /dev/stdout; echo leak >&2"});
    stdin.write_all(format!("{cmd}\n").as_bytes()).unwrap();
    let mut reader = BufReader::new(stdout);
    let response = loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0);
        let rec: Value = serde_json::from_str(&line).unwrap();
        assert_ne!(line.trim(), "leak", "a child wrote to the protocol");
        if rec["type"] == "response" && rec["id"] == "b" {
            break rec;
        }
    };
    let output = response["data"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{response}"));
    assert!(output.contains("pipe:"), "{output}");
    assert!(
        !output.contains(&*protocol.to_string_lossy()),
        "the shell holds the protocol pipe {}: {output}",
        protocol.display()
    );
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert!(!rest.contains("leak"), "{rest}");
    assert!(child.wait().unwrap().success());
}

/// What a finished command left running (`server &`) goes on while `pi` runs, as in Pi, and
/// dies with it: on SIGKILL (the reaper) and on an orderly exit (Pi leaves it behind).
#[test]
fn a_finished_commands_background_child_lives_with_the_session_and_dies_with_pi() {
    for sigkill in [true, false] {
        let mut pi = Pi::rpc();
        let dir = TempDir::new();
        let background = dir.path.join("bg.pid");
        // The child's output goes elsewhere, so the command ends at once.
        let command = format!(
            "sleep 300 >/dev/null 2>&1 & echo $! > {0}.tmp; mv {0}.tmp {0}",
            background.display()
        );
        let cmd = serde_json::json!({"id": "b", "type": "bash", "command": command});
        pi.write(format!("{cmd}\n").as_bytes());
        let answer = loop {
            let rec = pi.read_json();
            if rec["id"] == "b" {
                break rec;
            }
        };
        assert_eq!(answer["data"]["exitCode"], 0, "{answer}");
        let bg = read_pid(&background).unwrap();
        // Another command meanwhile (it prunes emptied groups) leaves the child alone.
        pi.write(b"{\"id\":\"c\",\"type\":\"bash\",\"command\":\"true\"}\n");
        while pi.read_json()["id"] != "c" {}
        std::thread::sleep(Duration::from_millis(200));
        assert!(!dead(bg), "the background child died with its command");
        if sigkill {
            pi.signal(libc::SIGKILL);
        } else {
            pi.close_stdin();
        }
        pi.wait_exit();
        let ended = Instant::now();
        while !dead(bg) {
            assert!(
                ended.elapsed() < Duration::from_secs(5),
                "the background child {bg} outlived pi (SIGKILL: {sigkill})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
