//! `pi -p` and `pi --mode json` against a scripted model on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_test_support::mock::{MockLlm, Reply};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

struct Sandbox {
    root: std::path::PathBuf,
}

impl Sandbox {
    fn new(port: u16) -> Sandbox {
        let root = std::env::temp_dir().join(format!("pi-print-{}-{port}", std::process::id()));
        std::fs::create_dir_all(root.join("agent")).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        let models = json!({"providers": {"mock": {"baseUrl": format!("http://127.0.0.1:{port}/v1"),
            "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}});
        std::fs::write(root.join("agent/models.json"), models.to_string()).unwrap();
        Sandbox { root }
    }

    fn run(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.root)
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_OFFLINE", "1")
            .current_dir(self.root.join("work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn text_reply(t: &str) -> Reply {
    serde_json::from_value(json!({"text": t})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_prints_the_final_answer_and_joins_piped_stdin() {
    let mock = MockLlm::start(vec![text_reply("forty-two")]).await.unwrap();
    let sb = Sandbox::new(mock.port());
    let (code, stdout, _) = sb.run(&["-p", "--no-session", "What is it?"], "context: ");
    assert_eq!((code, stdout.as_str()), (0, "forty-two\n"));
    let body = &mock.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"],
        json!([{"type": "text", "text": "context: What is it?"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_writes_the_header_then_every_event() {
    let mock = MockLlm::start(vec![text_reply("hi")]).await.unwrap();
    let sb = Sandbox::new(mock.port());
    let (code, stdout, _) = sb.run(&["--mode", "json", "--no-session", "hello"], "");
    assert_eq!(code, 0);
    let types: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|t| t != "message_update")
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_reports_a_provider_error_on_stderr_with_exit_1() {
    let mock = MockLlm::start(vec![Reply::http_error(400)]).await.unwrap();
    let sb = Sandbox::new(mock.port());
    let (code, stdout, stderr) = sb.run(&["-p", "--no-session", "x"], "");
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.starts_with("400"), "{stderr}");
}
