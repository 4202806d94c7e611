//! The `local` provider in the binary (feature `local-model`): listed and chosen by default
//! when its weights exist and nothing else is configured; named in the "no models" messages
//! when they do not. No model runs here (the weights are a stand-in file); pi-local's own
//! tests run the real one.

#![cfg(feature = "local-model")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::path::PathBuf;
use std::process::{Command, Stdio};

struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    /// A fresh home, agent dir and models dir; `weights` puts a stand-in model file in it.
    fn new(name: &str, weights: bool) -> Sandbox {
        let root = std::env::temp_dir().join(format!("pi-local-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["home", "agent", "work", "models"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        if weights {
            std::fs::write(root.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"), b"gguf").unwrap();
        }
        Sandbox { root }
    }

    fn run(&self, args: &[&str], stdin: &str) -> (String, String) {
        let child = Command::new(env!("CARGO_BIN_EXE_pi"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_LOCAL_MODEL_DIR", self.root.join("models"))
            .env("PI_OFFLINE", "1")
            .current_dir(self.root.join("work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut child = child;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
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

fn first_json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.lines().next().unwrap_or_default()).unwrap()
}

#[test]
fn with_its_weights_installed_the_local_model_is_available_and_is_the_default() {
    let sandbox = Sandbox::new("present", true);
    let (stdout, stderr) = sandbox.run(
        &["--mode", "rpc"],
        "{\"id\":\"1\",\"type\":\"get_available_models\"}\n",
    );
    let listed = first_json(&stdout);
    let ids: Vec<String> = listed["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(ids, vec!["local/smollm2-135m-instruct"], "{stderr}");
    let (stdout, stderr) = sandbox.run(
        &["--mode", "rpc"],
        "{\"id\":\"1\",\"type\":\"get_state\"}\n",
    );
    let model = first_json(&stdout)["data"]["model"].clone();
    assert_eq!(
        (
            model["provider"].as_str(),
            model["id"].as_str(),
            model["api"].as_str()
        ),
        (
            Some("local"),
            Some("smollm2-135m-instruct"),
            Some("llama-cpp")
        ),
        "{stdout}\n{stderr}"
    );
    let weights = sandbox.root.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(model["baseUrl"].as_str(), weights.to_str());
    assert_eq!(model["cost"]["input"].as_f64(), Some(0.0));
}

#[test]
fn without_weights_or_keys_the_messages_name_both_ways_out() {
    let sandbox = Sandbox::new("absent", false);
    let (stdout, stderr) = sandbox.run(
        &["--mode", "rpc"],
        "{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"hi\"}\n",
    );
    assert!(
        stderr.starts_with("Warning: No models available. Set a provider's API key"),
        "{stderr}"
    );
    assert!(stderr.contains("scripts/setup-local-model"), "{stderr}");
    let error = first_json(&stdout)["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.starts_with("No API key found for the selected model.\n\nSet a provider's API key")
            && error.ends_with("install it with scripts/setup-local-model (from the pi source tree), then use --provider local --model smollm2-135m-instruct."),
        "{stdout}"
    );
}
