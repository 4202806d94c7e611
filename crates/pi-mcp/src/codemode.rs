//! The `codemode` tool: the model writes JavaScript that calls other tools; only the script's
//! output reaches the model. Scripts run in the QuickJS sandbox ([`crate::sandbox`]); tool calls
//! go to the session's tools through [`CodemodeHost`]. The result starts with `Script
//! completed` or `Script failed`, the wall time and the output, laid out as `docs/codemode.md`
//! describes (text items, `==> text N/M <==` headers, one `<console_output>` block, a token
//! budget with the full text in a temp file, images saved to temp files).
//!
//! Calls of one script run concurrently (`Promise.all` over tool calls takes the time of the
//! slowest); `models.*` ([`crate::codemode_models`]) reaches classifiers and image models.

use crate::codemode_models::{self as models, Method, ModelsHost};
use crate::sandbox::{self, SandboxHost, Settle};
use crate::tool::write_output_file;
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{ImageContent, TextContent, UserBlock};
use pi_protocol::tool::{
    AgentToolResult, ConstrainedSampling, ConstrainedSamplingConfig, GrammarVariants, Tool,
};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

pub const CODEMODE_TOOL_NAME: &str = "codemode";
/// Custom session entry holding one script's `store()` writes.
pub const STORE_ENTRY_TYPE: &str = "codemode-store";

/// The Lark grammar of a script: an optional `// @options:` first line, then the source.
const SOURCE_GRAMMAR: &str = "\nstart: options_source | plain_source\noptions_source: OPTIONS_LINE NEWLINE SOURCE\nplain_source: SOURCE\n\nOPTIONS_LINE: /[ \\t]*\\/\\/ @options:[^\\r\\n]*/\nNEWLINE: /\\r?\\n/\nSOURCE: /[\\s\\S]+/\n";

/// The system prompt line and rule of the tool.
pub const PROMPT_SNIPPET: &str = "Run JavaScript that calls other tools";
pub const PROMPT_GUIDELINE: &str = "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter large output, instead of many separate calls.";

const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;
const CHARS_PER_TOKEN: usize = 4;
const ARGS_PREVIEW_CHARS: usize = 200;
const ERROR_PREVIEW_CHARS: usize = 500;

/// A tool a script may call.
#[derive(Clone)]
pub struct CallableTool {
    pub tool: Arc<dyn AgentTool>,
    /// `(name, description, instructions)` of its namespace (an MCP server).
    pub namespace: Option<(String, Option<String>, Option<String>)>,
}

/// What the tool needs from the session.
pub trait CodemodeHost: Send + Sync {
    /// Active direct tools and every codemode/deferred tool, without `codemode` itself.
    fn callable(&self) -> Vec<CallableTool>;
    /// Waits for the servers a script may reach.
    fn wait_ready<'a>(&'a self, code: &'a str) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
    /// `load()` values: the `codemode-store` entries on the branch.
    fn stored(&self) -> Map<String, Value>;
    /// Records a successful script's writes (`{set, delete}`).
    fn append_store(&self, writes: Value);
    /// The model catalog and credentials of `models.*` (none: scripts have no `models`).
    fn models(&self) -> Option<Arc<dyn ModelsHost>> {
        None
    }
}

pub struct CodemodeTool {
    declaration: Tool,
    host: Option<Weak<dyn CodemodeHost>>,
}

impl CodemodeTool {
    pub fn new(host: Option<Weak<dyn CodemodeHost>>) -> CodemodeTool {
        CodemodeTool {
            declaration: Tool {
                name: CODEMODE_TOOL_NAME.into(),
                description: "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as the body of an async function in a QuickJS sandbox: top-level `await` and `return` work; there is no Node, file system, network or timer.\n- `await tools.<name>({ ...args })` resolves to the tool's text, or to an object for tools that return one (MCP tools resolve to their CallToolResult), and rejects with an Error on failure.\n- Optional first line: `// @options: {\"max_output_tokens\": 10000, \"timeout_ms\": 60000}`\n\nGlobals: `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)` and `return` add output; `exit()` ends the script; `store(key, value)`/`load(key)` keep JSON values across calls; `ALL_TOOLS`, `await searchTools(query, { limit?, namespace? })`, `await describeTool(name)`, `await describeNamespace(name)` find tools that are not listed, such as MCP tools; `models` lists models by type and runs classifiers (`models.classify`) and image models (`models.generateImages`): read docs/codemode.md first.".into(),
                parameters: json!({"type": "object", "required": ["code"], "properties": {
                    "code": {"type": "string", "description": "Raw JavaScript source."}
                }})
                .into(),
                constrained_sampling: Some(ConstrainedSampling::Config(
                    ConstrainedSamplingConfig::Grammar {
                        variants: GrammarVariants {
                            openai_lark: Some(SOURCE_GRAMMAR.into()),
                            openai_regex: None,
                        },
                    },
                )),
                rest: Default::default(),
            },
            host,
        }
    }
}

/// `// @options: {...}` on the first line: `(code, max_output_tokens, timeout_ms)`.
fn parse_source(source: &str) -> Result<(String, u64, Option<u64>), String> {
    let (first, rest) = source.split_once('\n').unwrap_or((source, ""));
    let marker = "// @options:";
    let trimmed = first.trim_start_matches([' ', '\t']);
    let Some(options) = trimmed.strip_prefix(marker) else {
        if source
            .lines()
            .skip(1)
            .any(|l| l.trim_start().starts_with(marker))
        {
            return Err("The // @options: line must be the first line of the script".into());
        }
        return Ok((source.to_string(), DEFAULT_MAX_OUTPUT_TOKENS, None));
    };
    let parsed: Value = pi_js::parse::parse_js_json(options.trim())
        .map_err(|e| format!("Invalid // @options: line: {e}"))?;
    let Value::Object(o) = parsed else {
        return Err("Invalid // @options: line: expected a JSON object".into());
    };
    let positive = |k: &str| -> Result<Option<u64>, String> {
        match o.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|n| *n > 0.0 && n.fract() == 0.0)
                .map(|n| Some(n as u64))
                .ok_or_else(|| {
                    format!("Invalid // @options: line: {k} must be a positive integer")
                }),
        }
    };
    let max = positive("max_output_tokens")?.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
    let timeout = positive("timeout_ms")?;
    Ok((rest.to_string(), max, timeout))
}

fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max - 3).collect();
    format!("{head}...")
}

fn text_of(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs nested calls for the sandbox and keeps the record of them.
struct Calls {
    tools: Vec<CallableTool>,
    /// The agent loop's runner for nested calls (absent outside a run).
    nested: Option<pi_agent::NestedRunner>,
    parent: String,
    records: Mutex<Vec<Value>>,
    updates: pi_agent::ToolUpdateSink,
    handle: tokio::runtime::Handle,
    models: Option<Arc<dyn ModelsHost>>,
    /// Classifier and image calls in flight (at most four, the rest wait in call order).
    model_slots: tokio::sync::Semaphore,
    model_calls: std::sync::atomic::AtomicU64,
    /// Usage of the script's `models.*` calls.
    usage: Mutex<Option<Value>>,
    /// Images `models.generateImages()` returned, to notice a script that never shows them.
    generated_images: std::sync::atomic::AtomicUsize,
}

impl Calls {
    fn publish(&self) {
        let calls = self.records.lock().map(|r| r.clone()).unwrap_or_default();
        let mut r = AgentToolResult::new(Vec::new());
        r.details = Some(json!({"calls": calls}));
        (self.updates)(r);
    }

    fn find(&self, name: &str) -> Option<&CallableTool> {
        self.tools.iter().find(|t| t.tool.name() == name)
    }
}

impl Calls {
    /// One `models.*` call: checked and answered at once, or run as a recorded call.
    async fn model_call(
        &self,
        method: &str,
        args: Value,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<Value, String> {
        let Some(host) = self.models.clone() else {
            return Err(format!("models.{method} is not available"));
        };
        let args = match args {
            Value::Array(a) => a,
            _ => Vec::new(),
        };
        let (name, resolved, context) = match models::prepare(host.as_ref(), method, &args)? {
            Method::Value(v) => return Ok(v),
            Method::Call(name, resolved, context) => (name, resolved, context),
        };
        let n = self
            .model_calls
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let reference = format!(
            "{}/{}",
            resolved["provider"].as_str().unwrap_or(""),
            resolved["id"].as_str().unwrap_or("")
        );
        let index = match self.records.lock() {
            Ok(mut records) => {
                records.push(json!({"id": format!("{}/{name}/{n}", self.parent), "name": name, "args": reference, "status": "running"}));
                records.len() - 1
            }
            Err(_) => usize::MAX,
        };
        self.publish();
        let started = Instant::now();
        let result = {
            let _slot = self.model_slots.acquire().await;
            if name == "models.classify" {
                host.classify(resolved, context, cancel).await
            } else {
                host.generate_images(resolved, context, cancel).await
            }
        };
        if name == "models.generateImages" {
            let images = result["output"]
                .as_array()
                .map(|o| o.iter().filter(|b| b["type"] == "image").count())
                .unwrap_or(0);
            self.generated_images
                .fetch_add(images, std::sync::atomic::Ordering::SeqCst);
        }
        if let Some(usage) = result.get("usage").filter(|u| u.is_object())
            && let Ok(mut total) = self.usage.lock()
        {
            *total = Some(match total.take() {
                Some(t) => models::combine_usage(&t, usage),
                None => usage.clone(),
            });
        }
        if let Ok(mut records) = self.records.lock()
            && let Some(r) = records.get_mut(index)
        {
            r["durationMs"] = json!(started.elapsed().as_millis() as u64);
            r["status"] = json!(match result["stopReason"].as_str() {
                Some("stop") => "ok",
                Some("aborted") => "cancelled",
                _ => "error",
            });
            if let Some(e) = result["errorMessage"].as_str() {
                r["error"] = json!(truncate_chars(e, ERROR_PREVIEW_CHARS));
            }
            if let Some(cost) = result["usage"]["cost"].get("total") {
                r["cost"] = cost.clone();
            }
        }
        self.publish();
        Ok(result)
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Value,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<Value, String> {
        let tool = self
            .find(name)
            .map(|t| Arc::clone(&t.tool))
            .ok_or_else(|| format!("Tool {name} not found"))?;
        let preview = truncate_chars(
            &pi_js::json::to_js_string(&args).unwrap_or_default(),
            ARGS_PREVIEW_CHARS,
        );
        let index = Mutex::new(None);
        let started = Instant::now();
        let mark_running = |_id: &str| {
            if let Ok(mut records) = self.records.lock() {
                records.push(json!({"id": format!("{}/?", self.parent), "name": name, "args": preview, "status": "running"}));
                if let Ok(mut i) = index.lock() {
                    *i = Some(records.len() - 1);
                }
            }
            self.publish();
        };
        let (id, outcome): (String, Result<AgentToolResult, String>) = match &self.nested {
            // Through the agent loop: events, hooks, and the `nestedCalls` record.
            Some(runner) => {
                let o = runner
                    .run(Arc::clone(&tool), args, cancel.child_token(), mark_running)
                    .await;
                let mut r = o.result;
                if o.is_error {
                    r.is_error = Some(true);
                }
                (o.id, Ok(r))
            }
            None => {
                mark_running("");
                let id = format!(
                    "{}/{}",
                    self.parent,
                    self.records.lock().map(|r| r.len()).unwrap_or(0)
                );
                let map = match args {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                let outcome =
                    match pi_schema::validate_tool_arguments(tool.declaration(), &map, None) {
                        Err(e) => Err(e),
                        Ok(args) => tool
                            .execute(ToolInvocation {
                                tool_call_id: id.clone(),
                                args,
                                cancel: cancel.child_token(),
                                updates: Arc::new(|_| {}),
                            })
                            .await
                            .map_err(|e| e.0),
                    };
                (id, outcome)
            }
        };
        let index = index.lock().ok().and_then(|i| *i).unwrap_or(usize::MAX);
        let (status, error, value) = match outcome {
            Ok(r) if r.is_error == Some(true) => {
                let text = text_of(&r);
                let err = if text.is_empty() {
                    format!("Tool \"{name}\" failed")
                } else {
                    text
                };
                match r.structured_content {
                    Some(v) => ("error", Some(err), Ok(v)),
                    None => ("error", Some(err.clone()), Err(err)),
                }
            }
            Ok(r) => match r.structured_content {
                Some(v) => ("ok", None, Ok(v)),
                None => ("ok", None, Ok(Value::String(text_of(&r)))),
            },
            Err(e) => {
                let e = if e.is_empty() {
                    format!("Tool \"{name}\" failed")
                } else {
                    e
                };
                ("error", Some(e.clone()), Err(e))
            }
        };
        if let Ok(mut records) = self.records.lock()
            && let Some(r) = records.get_mut(index)
        {
            r["id"] = json!(id);
            r["status"] = json!(if cancel.is_cancelled() && status == "error" {
                "cancelled"
            } else {
                status
            });
            r["durationMs"] = json!(started.elapsed().as_millis() as u64);
            if let Some(e) = error {
                r["error"] = json!(truncate_chars(&e, ERROR_PREVIEW_CHARS));
            }
        }
        self.publish();
        value
    }
}

impl SandboxHost for Calls {
    fn start(
        self: Arc<Self>,
        name: String,
        args: Value,
        cancel: tokio_util::sync::CancellationToken,
        settle: Settle,
    ) {
        let handle = self.handle.clone();
        let mut call = Box::pin(async move {
            let outcome = match name.strip_prefix("models.") {
                Some(method) => self.model_call(method, args, cancel).await,
                None => self.call_tool(&name, args, cancel).await,
            };
            settle(outcome);
        });
        // The first poll runs here, on the script's thread in call order: each call's id,
        // `tool_execution_start` and call row come in the order the script made the calls, as
        // in Pi, not in the order the runtime's threads happen to pick the tasks up. The
        // runtime polls the task again when it spawns it.
        let _runtime = handle.enter();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if call.as_mut().poll(&mut cx).is_pending() {
            handle.spawn(call);
        }
    }

    fn search(&self, query: &str, options: &Value) -> Result<Value, String> {
        let limit = match options.get("limit") {
            None | Some(Value::Null) => crate::tool_search::DEFAULT_LIMIT,
            Some(v) => v
                .as_f64()
                .filter(|n| *n > 0.0 && n.fract() == 0.0)
                .map(|n| n as usize)
                .ok_or("searchTools() limit must be a positive integer")?,
        };
        let namespace = match options.get("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("searchTools() namespace must be a string".into()),
        };
        let docs: Vec<crate::tool_search::SearchDoc> = self
            .tools
            .iter()
            .filter(|t| match &namespace {
                None => true,
                Some(n) => t
                    .namespace
                    .as_ref()
                    .is_some_and(|(ns, _, _)| namespace_matches(ns, n)),
            })
            .map(|t| {
                let d = t.tool.declaration();
                crate::tool_search::SearchDoc {
                    name: d.name.clone(),
                    description: d.description.clone(),
                    parameters: d.parameters.clone(),
                    namespace_text: t
                        .namespace
                        .clone()
                        .map(|(n, d, i)| {
                            [n, d.unwrap_or_default(), i.unwrap_or_default()].join(" ")
                        })
                        .unwrap_or_default(),
                }
            })
            .collect();
        let ranked = crate::tool_search::rank(query, &docs, limit);
        Ok(Value::Array(
            ranked
                .into_iter()
                .filter_map(|(name, _)| self.find(&name))
                .map(|t| summary(&t.tool))
                .collect(),
        ))
    }

    fn describe_tool(&self, name: &str) -> Value {
        self.tools
            .iter()
            .find(|t| t.tool.name() == name || sandbox::identifier(t.tool.name()) == name)
            .map(|t| {
                let d = t.tool.declaration();
                json!({"name": sandbox::identifier(&d.name), "description": d.description, "parameters": d.parameters})
            })
            .unwrap_or(Value::Null)
    }

    fn describe_namespace(&self, name: &str) -> Value {
        let mut found: Option<(String, Option<String>, Option<String>)> = None;
        let mut tools = Vec::new();
        for t in &self.tools {
            if let Some(ns) = &t.namespace
                && namespace_matches(&ns.0, name)
            {
                found.get_or_insert_with(|| ns.clone());
                tools.push(sandbox::identifier(t.tool.name()));
            }
        }
        let Some((ns, description, instructions)) = found else {
            return Value::Null;
        };
        let mut out = json!({"name": ns});
        if let Some(d) = description {
            out["description"] = json!(d);
        }
        if let Some(i) = instructions {
            out["instructions"] = json!(i);
        }
        out["tools"] = json!(tools);
        out
    }
}

/// `mcp__dev-radius`, `mcp__dev_radius`, `dev-radius` and `dev_radius` all name `mcp__dev_radius`.
fn namespace_matches(namespace: &str, query: &str) -> bool {
    let q = sandbox::identifier(query);
    namespace == query || namespace == q || namespace.strip_prefix("mcp__") == Some(q.as_str())
}

fn summary(tool: &Arc<dyn AgentTool>) -> Value {
    let d = tool.declaration();
    json!({"name": sandbox::identifier(&d.name), "description": d.description})
}

/// Text items in order with `==> text N/M <==` headers when there are several, images as they
/// come, console lines in one block at the end.
fn format_output(items: &[Value]) -> Vec<Value> {
    let is_text = |i: &Value| i["type"] == "text" && i.get("console").is_none();
    let total = items.iter().filter(|i| is_text(i)).count();
    let mut out = Vec::new();
    let mut console = Vec::new();
    let mut n = 0;
    for item in items {
        if item["type"] == "image" {
            out.push(item.clone());
        } else if item.get("console").is_some() {
            console.push(item["text"].as_str().unwrap_or("").to_string());
        } else {
            n += 1;
            let text = item["text"].as_str().unwrap_or("");
            let text = if total > 1 {
                format!("==> text {n}/{total} <==\n{text}")
            } else {
                text.to_string()
            };
            out.push(json!({"type": "text", "text": text}));
        }
    }
    if !console.is_empty() {
        out.push(json!({"type": "text", "text": format!("<console_output>\n{}\n</console_output>", console.join("\n"))}));
    }
    out
}

/// Adjacent text items become one, each part on its own line.
fn join_text(items: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let flush = |parts: &mut Vec<String>, out: &mut Vec<Value>| {
        if !parts.is_empty() {
            out.push(json!({"type": "text", "text": parts.concat()}));
            parts.clear();
        }
    };
    for item in items {
        if item["type"] != "text" {
            flush(&mut parts, &mut out);
            out.push(item);
            continue;
        }
        if let Some(last) = parts.iter().rev().find(|p| !p.is_empty())
            && !last.ends_with('\n')
        {
            parts.push("\n".into());
        }
        parts.push(item["text"].as_str().unwrap_or("").to_string());
    }
    flush(&mut parts, &mut out);
    out
}

/// The token budget: over it, the text becomes its start and end around a marker, with the full
/// text in a temp file; images follow.
fn budget(items: Vec<Value>, max_tokens: u64) -> (Vec<Value>, Option<String>) {
    let texts: Vec<&str> = items
        .iter()
        .filter(|i| i["type"] == "text")
        .filter_map(|i| i["text"].as_str())
        .collect();
    let combined = texts.join("\n");
    let budget = max_tokens as usize * CHARS_PER_TOKEN;
    let len = pi_js::utf16_len(&combined);
    if texts.is_empty() || len <= budget {
        return (items, None);
    }
    let chars: Vec<char> = combined.chars().collect();
    let head_n = budget / 2;
    let tail_n = budget - head_n;
    let head: String = chars.iter().take(head_n).collect();
    let tail: String = chars[chars.len().saturating_sub(tail_n)..].iter().collect();
    let removed = len.saturating_sub(head_n + tail_n);
    let mut text = format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {}\n\n{head}…{} tokens truncated…{tail}",
        len.div_ceil(CHARS_PER_TOKEN),
        combined.split('\n').count(),
        removed.div_ceil(CHARS_PER_TOKEN)
    );
    let path = match write_output_file("pi-codemode", ".txt", combined.as_bytes()) {
        Ok(p) => {
            text.push_str(&format!("\n\n[Full output: {p} (read with offset/limit)]"));
            Some(p)
        }
        Err(e) => {
            text.push_str(&format!("\n\n[Could not save the full output: {e}]"));
            None
        }
    };
    let mut out = vec![json!({"type": "text", "text": text})];
    out.extend(items.into_iter().filter(|i| i["type"] == "image"));
    (out, path)
}

/// Each image is saved to a temp file, named in a text item before it.
fn save_images(items: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items {
        if item["type"] != "image" {
            out.push(item);
            continue;
        }
        let data = item["data"].as_str().unwrap_or("");
        let mime = item["mimeType"].as_str().unwrap_or("");
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
            .unwrap_or_default();
        let kind = format!("{mime}, {}", crate::tool::format_size(bytes.len() as u64));
        let ext = match mime {
            "image/png" => ".png",
            "image/jpeg" => ".jpg",
            "image/gif" => ".gif",
            _ => ".webp",
        };
        let label = match write_output_file("pi-codemode", ext, &bytes) {
            Ok(p) => format!("[Image saved to {p} ({kind})]"),
            Err(e) => format!("[Image ({kind}) could not be saved: {e}]"),
        };
        out.push(json!({"type": "text", "text": label}));
        out.push(item);
    }
    out
}

fn to_blocks(items: Vec<Value>) -> Vec<UserBlock> {
    items
        .into_iter()
        .map(|i| match i["type"].as_str() {
            Some("image") => UserBlock::Image(ImageContent {
                data: i["data"].as_str().unwrap_or("").into(),
                mime_type: i["mimeType"].as_str().unwrap_or("").into(),
            }),
            _ => UserBlock::Text(TextContent::new(i["text"].as_str().unwrap_or(""))),
        })
        .collect()
}

fn call_summary(calls: &[Value]) -> String {
    if calls.is_empty() {
        return "No tool calls were made.".into();
    }
    let list: Vec<String> = calls
        .iter()
        .map(|c| {
            format!(
                "{} ({})",
                c["name"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or("")
            )
        })
        .collect();
    format!(
        "Tool calls made before the failure (they are not undone): {}",
        list.join(", ")
    )
}

impl AgentTool for CodemodeTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, inv: ToolInvocation) -> ToolFuture {
        let host = self.host.as_ref().and_then(Weak::upgrade);
        Box::pin(async move {
            let started = Instant::now();
            let source = inv
                .args
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (code, max_tokens, timeout_ms) = parse_source(&source).map_err(ToolError)?;
            let mut empty = AgentToolResult::new(Vec::new());
            empty.details = Some(json!({"calls": []}));
            (inv.updates)(empty);
            let (tools, stored, models_host) = match &host {
                Some(h) => {
                    h.wait_ready(&code).await;
                    (h.callable(), h.stored(), h.models())
                }
                None => (Vec::new(), Map::new(), None),
            };
            let names: Vec<String> = tools.iter().map(|t| t.tool.name().to_string()).collect();
            let all: Vec<Value> = tools.iter().map(|t| summary(&t.tool)).collect();
            let calls = Arc::new(Calls {
                tools,
                nested: pi_agent::NestedRunner::current(),
                parent: inv.tool_call_id.clone(),
                records: Mutex::new(Vec::new()),
                updates: Arc::clone(&inv.updates),
                handle: tokio::runtime::Handle::current(),
                models: models_host,
                model_slots: tokio::sync::Semaphore::new(models::MAX_CONCURRENT_MODEL_CALLS),
                model_calls: Default::default(),
                usage: Mutex::new(None),
                generated_images: Default::default(),
            });
            let deadline = timeout_ms.map(|ms| started + Duration::from_millis(ms));
            let (sandbox_calls, cancel) = (Arc::clone(&calls), inv.cancel.clone());
            let with_models = calls.models.is_some();
            let outcome = tokio::task::spawn_blocking(move || {
                sandbox::run(
                    &code,
                    sandbox::Globals {
                        tool_names: &names,
                        all_tools: &json!(all),
                        stored: &Value::Object(stored),
                        models: with_models,
                    },
                    sandbox_calls,
                    cancel,
                    deadline,
                )
            })
            .await
            .map_err(|e| ToolError(format!("Script sandbox failed: {e}")))?;
            let mut records = calls.records.lock().map(|r| r.clone()).unwrap_or_default();
            for r in records.iter_mut() {
                if r["status"] == "running" {
                    r["status"] = json!("cancelled");
                }
            }
            let mut output = outcome.output.clone();
            if outcome.ok {
                let writes = &outcome.writes;
                let changed = writes["set"].as_object().is_some_and(|m| !m.is_empty())
                    || writes["delete"].as_array().is_some_and(|a| !a.is_empty());
                if changed && let Some(h) = &host {
                    h.append_store(writes.clone());
                }
                if let Some(v) = &outcome.value {
                    output.push(json!({"type": "text", "text": v}));
                }
            }
            let mut items = format_output(&output);
            if !outcome.ok {
                let error = outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| "Error: script failed".into());
                items.push(json!({"type": "text", "text": format!("Script error:\n{error}\n\n{}", call_summary(&records))}));
            }
            let generated = calls
                .generated_images
                .load(std::sync::atomic::Ordering::SeqCst);
            if generated > 0 && !items.iter().any(|i| i["type"] == "image") {
                let plural = if generated == 1 { "" } else { "s" };
                items.push(json!({"type": "text", "text": format!("Note: models.generateImages() returned {generated} image{plural} that the script did not show. Show each image block of result.output with image(block).")}));
            }
            let (items, full_path) = budget(join_text(items), max_tokens);
            let items = join_text(save_images(items));
            let header = format!(
                "{}\nWall time {:.1} seconds\nOutput:\n",
                if outcome.ok {
                    "Script completed"
                } else {
                    "Script failed"
                },
                started.elapsed().as_secs_f64()
            );
            let mut content = vec![UserBlock::Text(TextContent::new(header))];
            content.extend(to_blocks(items));
            let mut details = json!({"calls": records});
            if let Some(p) = full_path {
                details["fullOutputPath"] = json!(p);
            }
            let mut result = AgentToolResult::new(content);
            result.details = Some(details);
            let usage = calls.usage.lock().ok().and_then(|mut u| u.take());
            result.usage = usage.and_then(|u| serde_json::from_value(u).ok());
            if !outcome.ok {
                result.is_error = Some(true);
            }
            Ok(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_line_is_read_from_the_first_line_only() {
        assert_eq!(
            parse_source("return 1"),
            Ok(("return 1".into(), 10_000, None))
        );
        assert_eq!(
            parse_source("// @options: {\"max_output_tokens\": 5, \"timeout_ms\": 60}\nreturn 1"),
            Ok(("return 1".into(), 5, Some(60)))
        );
        assert!(parse_source("x()\n// @options: {}").is_err());
    }

    #[test]
    fn output_layout_follows_the_docs() {
        let items = vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "text", "text": "log", "console": true}),
            json!({"type": "text", "text": "b"}),
        ];
        assert_eq!(
            join_text(format_output(&items)),
            [
                json!({"type": "text", "text": "==> text 1/2 <==\na\n==> text 2/2 <==\nb\n<console_output>\nlog\n</console_output>"})
            ]
        );
    }
}
