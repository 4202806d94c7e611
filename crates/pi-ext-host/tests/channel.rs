//! The channel against a scripted stand-in host (a few lines of Node): requests and results,
//! sync calls answered in order with effects, async calls, handler sets, the host dying, and
//! pi ending it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_ext_host::{BoxFuture, CallResult, Delegate, Host, HostError};
use pi_test_support::TempDir;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};

/// A host that answers `echo` with its params, `calls` with the results of a sync call, an
/// effect and an async call made in that order, and exits on `die`.
const FAKE_HOST: &str = r#"
import fs from "node:fs";
import net from "node:net";
const out = (m) => fs.writeSync(3, JSON.stringify(m) + "\n");
function syncCall(method, params) {
  out({ type: "call", sync: true, id: 1000, method, params });
  let text = "";
  const buf = Buffer.alloc(65536);
  while (!text.includes("\n")) {
    const n = fs.readSync(5, buf, 0, buf.length, null);
    text += buf.subarray(0, n).toString();
  }
  return JSON.parse(text);
}
let pendingAsync = null;
out({ type: "handlers", events: ["tool_call", "input"] });
const input = new net.Socket({ fd: 4, readable: true });
let acc = "";
input.on("data", (chunk) => {
  acc += chunk;
  let i;
  while ((i = acc.indexOf("\n")) >= 0) {
    const line = acc.slice(0, i); acc = acc.slice(i + 1);
    const msg = JSON.parse(line);
    if (msg.type === "echo") out({ type: "result", re: msg.id, ok: true, value: msg.params });
    else if (msg.type === "fail") out({ type: "result", re: msg.id, ok: false, error: "boom" });
    else if (msg.type === "calls") {
      out({ type: "call", method: "ui", params: { first: true } });
      const answer = syncCall("state", { what: "model" });
      out({ type: "call", id: 7, method: "slow", params: {} });
      pendingAsync = { re: msg.id, answer };
    } else if (msg.type === "result" && msg.re === 7) {
      out({ type: "result", re: pendingAsync.re, ok: true, value: { sync: pendingAsync.answer, async: msg.value } });
    } else if (msg.type === "die") process.exit(3);
  }
});
input.on("end", () => process.exit(0));
"#;

#[derive(Default)]
struct Recorder {
    log: Mutex<Vec<String>>,
    gone: Mutex<Option<String>>,
}

impl Delegate for Recorder {
    fn sync_call<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("sync {method} {params}"));
            Ok(json!("gpt"))
        })
    }
    fn effect<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("effect {method} {params}"))
        })
    }
    fn call(self: Arc<Self>, method: String, _params: Value) -> BoxFuture<'static, CallResult> {
        Box::pin(async move {
            self.log.lock().unwrap().push(format!("call {method}"));
            Ok(json!(42))
        })
    }
    fn notification<'a>(&'a self, _kind: &'a str, _message: Value) -> BoxFuture<'a> {
        Box::pin(async {})
    }
    fn gone(&self, reason: String) {
        *self.gone.lock().unwrap() = Some(reason);
    }
}

fn fake_host() -> TempDir {
    let dir = TempDir::new();
    dir.write("main.mjs", FAKE_HOST);
    dir
}

fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn requests_calls_and_effects_keep_their_order_and_a_dying_host_fails_what_is_pending() {
    if pi_ext_host::find_node().is_none() {
        eprintln!("skipped: no node on PATH");
        return;
    }
    let dir = fake_host();
    unsafe_set_host_dir(dir.path());
    let host = Host::start(dir.path()).expect("host starts");
    let recorder = Arc::new(Recorder::default());
    host.set_delegate(recorder.clone());

    let echoed = host
        .request("echo", params(json!({"params": {"a": 1}})))
        .await;
    assert_eq!(echoed, Ok(json!({"a": 1})));
    assert!(host.has_handlers("tool_call") && host.has_handlers("input"));
    assert!(!host.has_handlers("context"));
    assert_eq!(
        host.request("fail", Map::new()).await,
        Err(HostError::Failed("boom".into()))
    );

    let value = host.request("calls", Map::new()).await.unwrap();
    assert_eq!(
        value,
        json!({"sync": {"re": 1000, "ok": true, "value": "gpt"}, "async": 42})
    );
    assert_eq!(
        *recorder.log.lock().unwrap(),
        [
            "effect ui {\"first\":true}",
            "sync state {\"what\":\"model\"}",
            "call slow"
        ]
    );

    let died = host.request("die", Map::new()).await;
    assert!(matches!(died, Err(HostError::Gone(_))), "{died:?}");
    for _ in 0..100 {
        if recorder.gone.lock().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(!host.is_alive());
    assert!(!host.has_handlers("tool_call"));
    assert!(recorder.gone.lock().unwrap().is_some());
    assert!(matches!(
        host.request("echo", Map::new()).await,
        Err(HostError::Gone(_))
    ));

    // A host pi ends itself (quit, reload) fails what is pending, but its end is no news to
    // the delegate: a quitting pi must not report the closed channel as an extension error.
    let host = Host::start(dir.path()).expect("second host starts");
    let quiet = Arc::new(Recorder::default());
    host.set_delegate(quiet.clone());
    assert!(host.request("echo", Map::new()).await.is_ok());
    let pending = tokio::spawn({
        let host = host.clone();
        // The stand-in never answers a request it does not know.
        async move { host.request("never", Map::new()).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    host.kill();
    let ended = pending.await.unwrap();
    assert!(matches!(ended, Err(HostError::Gone(_))), "{ended:?}");
    assert!(!host.is_alive());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(*quiet.gone.lock().unwrap(), None);
}

#[allow(unsafe_code)]
fn unsafe_set_host_dir(dir: &std::path::Path) {
    // SAFETY: this test binary has one test; nothing reads the environment concurrently.
    unsafe { std::env::set_var("PI_EXT_HOST_DIR", dir) };
}
