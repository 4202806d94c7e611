//! `pi auth` against Pi 1.6.0: every case recorded by `tests/fixtures/auth/record.py` (stdout,
//! stderr, exit code and the auth.json left behind) must come out the same from our binary;
//! and `print-bearer-token` refreshes an expiring login at a loopback token endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

fn run(root: &Path, args: &[String], env: &[(String, String)]) -> (String, String, i32) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pi"));
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(root)
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let home = root.display().to_string();
    (
        String::from_utf8_lossy(&out.stdout).replace(&home, "<home>"),
        String::from_utf8_lossy(&out.stderr).replace(&home, "<home>"),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn auth_commands_print_and_exit_as_pi_does() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/auth/cases.json");
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let env: Vec<(String, String)> = fx["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    let mut problems = Vec::new();
    for case in fx["cases"].as_array().unwrap() {
        let tmp = pi_test_support::TempDir::new();
        std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
        std::fs::write(
            tmp.path().join("agent/auth.json"),
            serde_json::to_string_pretty(&fx["auth"]).unwrap(),
        )
        .unwrap();
        let args: Vec<String> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let (stdout, stderr, code) = run(tmp.path(), &args, &env);
        let after: Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join("agent/auth.json")).unwrap(),
        )
        .unwrap();
        let want = (
            case["stdout"].as_str().unwrap(),
            case["stderr"].as_str().unwrap(),
            case["code"].as_i64().unwrap() as i32,
        );
        if (stdout.as_str(), stderr.as_str(), code) != want || after != case["auth_after"] {
            problems.push(format!(
                "pi {}\n  ours: {code} {stdout:?} {stderr:?} {after}\n  pi:   {} {:?} {:?} {}",
                args.join(" "),
                want.2,
                want.0,
                want.1,
                case["auth_after"]
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Answers every request with a fresh token; returns the origin.
fn token_endpoint(body: Value) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let l = line.trim_end().to_ascii_lowercase();
                if let Some(v) = l.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if l.is_empty() {
                    break;
                }
            }
            let mut buf = vec![0; len];
            let _ = reader.read_exact(&mut buf);
            let text = body.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    origin
}

#[test]
fn print_bearer_token_refreshes_a_token_shorter_lived_than_min_expiry() {
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    // Valid for ten more minutes: enough for a request, not for --min-expiry 1h.
    let expires = pi_js::now_ms() + 10 * 60_000;
    std::fs::write(
        tmp.path().join("agent/auth.json"),
        json!({"xai": {"type": "oauth", "refresh": "r1", "access": "short", "expires": expires}})
            .to_string(),
    )
    .unwrap();
    let origin =
        token_endpoint(json!({"access_token": "long", "refresh_token": "r2", "expires_in": 7200}));
    let env = [("PI_OAUTH_ENDPOINT_ORIGIN".to_string(), origin)];
    let args = |a: &str| a.split(' ').map(String::from).collect::<Vec<_>>();
    let (out, err, code) = run(
        tmp.path(),
        &args("auth print-bearer-token --provider xai --min-expiry 5m"),
        &env,
    );
    assert_eq!((out.as_str(), code), ("short\n", 0), "{err}");
    let (out, err, code) = run(
        tmp.path(),
        &args("auth print-bearer-token --provider xai --min-expiry 1h"),
        &env,
    );
    assert_eq!((out.as_str(), code), ("long\n", 0), "{err}");
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("agent/auth.json")).unwrap())
            .unwrap();
    assert_eq!(stored["xai"]["access"], "long");
    assert_eq!(stored["xai"]["refresh"], "r2");
}
