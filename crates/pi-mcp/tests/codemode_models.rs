//! The codemode tool's `models` global with a scripted session: the in-flight limit, usage on
//! the result, call rows, generated images shown or noted, and the context checks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_agent::{AgentTool, ToolInvocation};
use pi_mcp::codemode::{CallableTool, CodemodeHost, CodemodeTool};
use pi_mcp::codemode_models::ModelsHost;
use pi_protocol::content::UserBlock;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Session {
    active: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

fn entry(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn catalog() -> Vec<Map<String, Value>> {
    vec![
        entry(
            json!({"type": "classifier", "id": "jev", "name": "Jev", "api": "typesafe-system-one", "provider": "ts", "baseUrl": "http://x", "input": ["text"], "headers": {"X-Secret": "s"}}),
        ),
        entry(
            json!({"type": "image", "id": "painter", "name": "P", "api": "openrouter-images", "provider": "or", "baseUrl": "http://x", "input": ["text"], "output": ["image"]}),
        ),
    ]
}

fn usage(input: u64) -> Value {
    json!({"input": input, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + 1,
        "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75, "totalFromProvider": false}})
}

impl ModelsHost for Session {
    fn models_of_type(&self, t: &str, provider: Option<&str>) -> Vec<Map<String, Value>> {
        catalog()
            .into_iter()
            .filter(|m| m["type"] == t && provider.is_none_or(|p| m["provider"] == p))
            .collect()
    }
    fn available_of_type(&self, t: &str, provider: Option<&str>) -> Vec<Map<String, Value>> {
        self.models_of_type(t, provider)
    }
    fn classify(
        &self,
        model: Map<String, Value>,
        context: Value,
        _cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        let (active, most) = (Arc::clone(&self.active), Arc::clone(&self.most));
        Box::pin(async move {
            let now = active.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            active.fetch_sub(1, Ordering::SeqCst);
            assert!(
                model.get("headers").is_some(),
                "the host gets the catalog entry"
            );
            json!({"api": model["api"], "provider": model["provider"], "model": model["id"],
                "answers": {"n": context["state"]["n"]}, "stopReason": "stop", "timestamp": 1, "usage": usage(10)})
        })
    }
    fn generate_images(
        &self,
        model: Map<String, Value>,
        _context: Value,
        _cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        Box::pin(async move {
            json!({"api": model["api"], "provider": model["provider"], "model": model["id"],
                "output": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
                "stopReason": "stop", "timestamp": 1, "usage": usage(5)})
        })
    }
    fn docs_path(&self) -> String {
        "/pkg/docs/codemode.md".into()
    }
}

struct Host(Arc<Session>);

impl CodemodeHost for Host {
    fn callable(&self) -> Vec<CallableTool> {
        Vec::new()
    }
    fn wait_ready<'a>(&'a self, _code: &'a str) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async {})
    }
    fn stored(&self) -> Map<String, Value> {
        Map::new()
    }
    fn append_store(&self, _writes: Value) {}
    fn models(&self) -> Option<Arc<dyn ModelsHost>> {
        Some(Arc::clone(&self.0) as Arc<dyn ModelsHost>)
    }
}

async fn run(session: Arc<Session>, code: &str) -> pi_protocol::tool::AgentToolResult {
    let host: Arc<dyn CodemodeHost> = Arc::new(Host(session));
    let weak: Weak<dyn CodemodeHost> = Arc::downgrade(&host);
    let tool = CodemodeTool::new(Some(weak));
    let mut args = Map::new();
    args.insert("code".into(), json!(code));
    tool.execute(ToolInvocation {
        tool_call_id: "call_1".into(),
        args,
        cancel: CancellationToken::new(),
        updates: Arc::new(|_| {}),
    })
    .await
    .expect("the tool answers")
}

fn text(r: &pi_protocol::tool::AgentToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_calls_run_at_once_and_their_usage_adds_up() {
    let session = Arc::new(Session::default());
    let r = run(
        Arc::clone(&session),
        "const jev = await models.getModelOfType('classifier', 'ts', 'jev');\nconst rs = await Promise.all([...Array(10).keys()].map((n) => models.classify(jev, { state: { n }, questions: { q: { type: 'bool', instructions: '?', criteria: { true: 'y', false: 'n' } } } })));\nreturn [jev.headers, rs.map((r) => r.answers.n)];",
    )
    .await;
    assert!(
        text(&r).ends_with("[null,[0,1,2,3,4,5,6,7,8,9]]"),
        "{}",
        text(&r)
    );
    assert_eq!(session.most.load(Ordering::SeqCst), 4);
    let usage = serde_json::to_value(r.usage.expect("usage on the result")).unwrap();
    assert_eq!(usage["input"], 100);
    assert_eq!(usage["totalTokens"], 110);
    assert_eq!(usage["cost"]["total"], json!(7.5));
    let calls = &r.details.as_ref().unwrap()["calls"];
    assert_eq!(calls.as_array().map(Vec::len), Some(10));
    assert_eq!(calls[9]["id"], "call_1/models.classify/10");
    assert_eq!(calls[0]["args"], "ts/jev");
    assert_eq!(calls[0]["status"], "ok");
    assert_eq!(calls[0]["cost"], json!(0.75));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_images_are_shown_or_noted() {
    let session = Arc::new(Session::default());
    let code = "const r = await models.generateImages({ provider: 'or', id: 'painter' }, { input: [{ type: 'text', text: 'fox' }] });\n";
    let shown = run(Arc::clone(&session), &format!("{code}image(r.output[0]);")).await;
    assert!(
        shown
            .content
            .iter()
            .any(|b| matches!(b, UserBlock::Image(i) if i.mime_type == "image/png")),
        "{:?}",
        shown.content
    );
    assert!(
        text(&shown).contains("[Image saved to "),
        "{}",
        text(&shown)
    );
    assert!(!text(&shown).contains("Note:"));
    let hidden = run(
        Arc::clone(&session),
        &format!("{code}return r.output.length;"),
    )
    .await;
    assert!(
        text(&hidden).ends_with("1\nNote: models.generateImages() returned 1 image that the script did not show. Show each image block of result.output with image(block)."),
        "{}",
        text(&hidden)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_are_checked_before_any_call() {
    let session = Arc::new(Session::default());
    let r = run(
        session,
        "return await models.generateImages({ provider: 'or', id: 'painter' }, { prompt: 'fox' }).catch((e) => e.message);",
    )
    .await;
    assert!(
        text(&r).ends_with("models.generateImages() context.input must be a non-empty array of blocks, got undefined. Expected context: { input: [{ type: \"text\", text: <prompt> }, ...optional { type: \"image\", data: <base64>, mimeType } references] }. See \"Generate images\" in /pkg/docs/codemode.md."),
        "{}",
        text(&r)
    );
    assert!(
        r.details.as_ref().unwrap()["calls"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
