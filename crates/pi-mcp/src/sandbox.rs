//! Runs one codemode script in QuickJS: no file system, network or timers; the script reaches
//! the world only through the host functions installed here (`tools.*`, discovery, `store`).
//!
//! A nested tool call blocks the script's thread until the host answered it, so calls made
//! with `Promise.all` run one after another: simpler than bridging two executors, and the
//! script sees the same values. The globals (`text`, `image`, `console`, `exit`, `store`,
//! `load`, `ALL_TOOLS`, ...) are plain JavaScript in [`PRELUDE`]; Rust only moves JSON across.

use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Exception, Function, Runtime};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// A script's VM heap.
const MEMORY_LIMIT_BYTES: usize = 256 * 1024 * 1024;

/// What the sandbox asks of the host, on the script's thread.
pub trait SandboxHost: Send + Sync {
    /// Runs a tool; `Ok(script value as JSON)` or the error text the promise rejects with.
    fn call(&self, name: &str, args: Value) -> Result<Value, String>;
    /// `searchTools(query, {limit, namespace})`.
    fn search(&self, query: &str, options: &Value) -> Result<Value, String>;
    /// `describeTool(name)` (`Null`: unknown).
    fn describe_tool(&self, name: &str) -> Value;
    /// `describeNamespace(name)` (`Null`: unknown).
    fn describe_namespace(&self, name: &str) -> Value;
}

/// How the script ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptOutcome {
    pub ok: bool,
    /// Items in order: `{type: "text", text, console?}` or `{type: "image", data, mimeType}`.
    pub output: Vec<Value>,
    /// The returned value as text (`text()`'s rules), if any.
    pub value: Option<String>,
    /// The error line(s) of a failed script.
    pub error: Option<String>,
    /// `store()` writes of a successful script: `{set, delete}`.
    pub writes: Value,
}

/// The script's globals, written for this sandbox.
const PRELUDE: &str = r#"
(() => {
  const out = [];
  let items = 0;
  let chars = 0;
  const count = (n) => {
    items += 1;
    chars += n;
    if (items > 100000) throw new Error("Script output exceeds 100000 text(), image(), and console calls");
    if (chars > 16777216) throw new Error("Script output exceeds 16777216 characters");
  };
  const show = (v) => (typeof v === "string" ? v : (JSON.stringify(v) ?? String(v)));
  globalThis.text = (v) => { const t = show(v); count(t.length); out.push({ type: "text", text: t }); };
  const imageOf = (v) => {
    if (typeof v === "string") {
      const m = /^data:(image\/[a-z+.-]+);base64,(.*)$/s.exec(v);
      if (!m) throw new Error("image() takes a base64 data: URL, an { image_url } object, or an image block; remote URLs are not supported");
      return { data: m[2], mimeType: m[1] };
    }
    if (v && typeof v === "object") {
      if (typeof v.image_url === "string") return imageOf(v.image_url);
      if (v.image_url && typeof v.image_url.url === "string") return imageOf(v.image_url.url);
      if (v.type === "image" && typeof v.data === "string" && typeof v.mimeType === "string") return { data: v.data, mimeType: v.mimeType };
    }
    throw new Error("image() takes a base64 data: URL, an { image_url } object, or an image block");
  };
  globalThis.image = (v) => {
    const img = imageOf(v);
    if (!["image/png", "image/jpeg", "image/gif", "image/webp"].includes(img.mimeType)) throw new Error(`image() does not accept ${img.mimeType}; use PNG, JPEG, GIF, or WebP`);
    count(img.data.length);
    out.push({ type: "image", data: img.data, mimeType: img.mimeType });
  };
  const log = (...args) => { const t = args.map(show).join(" "); count(t.length); out.push({ type: "text", text: t, console: true }); };
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  class PiExit {}
  globalThis.exit = () => { throw new PiExit(); };
  const stored = JSON.parse(__pi_store);
  const writes = { set: {}, delete: [] };
  globalThis.store = (key, value) => {
    if (typeof key !== "string") throw new Error("store() key must be a string");
    if (value === undefined) {
      delete stored[key]; delete writes.set[key];
      if (!writes.delete.includes(key)) writes.delete.push(key);
      return;
    }
    const json = JSON.stringify(value);
    if (json === undefined) throw new Error("store() value must be JSON");
    if (json.length > 262144) throw new Error("store() value exceeds 262144 characters of JSON");
    const copy = JSON.parse(json);
    stored[key] = copy; writes.set[key] = copy;
    writes.delete = writes.delete.filter((k) => k !== key);
    if (JSON.stringify(stored).length > 1048576) throw new Error("store() values exceed 1048576 characters of JSON in all");
  };
  globalThis.load = (key) => (key in stored ? JSON.parse(JSON.stringify(stored[key])) : undefined);
  globalThis.ALL_TOOLS = JSON.parse(__pi_all_tools);
  // Host calls answer in a promise job, as an asynchronous host does: a failure becomes an
  // Error made here, whose frames (this file's only) are left out of the script's error.
  const call = (fn, ...args) => {
    let ok = true;
    let r;
    try { r = fn(...args); } catch (e) { ok = false; r = e instanceof Error ? e.message : String(e); }
    return Promise.resolve().then(() => {
      if (!ok) throw new Error(r);
      return r === "" ? undefined : JSON.parse(r);
    });
  };
  globalThis.searchTools = (query, options) => call(__pi_search, query, JSON.stringify(options ?? {}));
  globalThis.describeTool = (name) => call(__pi_describe_tool, String(name));
  globalThis.describeNamespace = (name) => call(__pi_describe_namespace, String(name));
  const tools = {};
  for (const [id, name] of JSON.parse(__pi_tool_ids)) {
    tools[id] = (args) => call(__pi_call, name, JSON.stringify(args ?? {}));
  }
  globalThis.tools = tools;
  const state = { done: false };
  // QuickJS stacks list frames only: "Name: message" first, as V8 does, and no frames of
  // this file.
  const errorText = (e) => {
    const head = e.message ? `${e.name}: ${e.message}` : String(e.name);
    const frames = typeof e.stack === "string"
      ? e.stack.split("\n").filter((l) => l.trim() && !l.includes("codemode-prelude.js"))
      : [];
    return [head, ...frames].join("\n");
  };
  const format = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return errorText(v);
    if (typeof v === "number") return String(v);
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch { return String(v); }
  };
  globalThis.__pi_start = (f) => {
    f(tools, globalThis.console).then(
      (v) => { state.done = true; state.ok = true; state.value = v; },
      (e) => {
        state.done = true;
        if (e instanceof PiExit) { state.ok = true; return; }
        state.ok = false;
        let text;
        try { text = e instanceof Error ? errorText(e) : `Error: ${format(e)}`; }
        catch { text = "Error: The script threw a value that cannot be described"; }
        state.error = text;
      },
    );
  };
  globalThis.__pi_finish = () => JSON.stringify({
    done: state.done,
    ok: state.ok === true,
    value: state.value === undefined ? null : show(state.value),
    error: state.error ?? null,
    output: out,
    writes,
  });
})();
"#;

/// `tools.<id>`: characters invalid in an identifier become `_`.
pub fn identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

/// Script code as Pi's sandbox evaluates it: global, not strict, under `filename`.
fn sloppy(filename: &str) -> EvalOptions {
    let mut o = EvalOptions::default();
    o.strict = false;
    o.filename = Some(filename.to_string());
    o
}

fn throw(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_message(ctx, message)
}

/// The pending exception as text: `Name: message` and its frames.
fn exception_text(ctx: &Ctx<'_>) -> String {
    let caught = ctx.catch();
    if let Some(e) = caught.as_exception() {
        let name: String = e.get("name").unwrap_or_else(|_| "Error".into());
        let message = e.message().unwrap_or_default();
        let head = if message.is_empty() {
            name
        } else {
            format!("{name}: {message}")
        };
        let stack = e.stack().unwrap_or_default();
        let stack = pi_js::trim_end(&stack);
        return if stack.is_empty() {
            head
        } else {
            format!("{head}\n{stack}")
        };
    }
    caught
        .as_string()
        .and_then(|s| s.to_string().ok())
        .map(|s| format!("Uncaught {s}"))
        .unwrap_or_else(|| "Script failed".into())
}

/// Runs `code` (an async function body) with the given tools (`(name)`), stored values and
/// limits. Blocks: call it on a blocking thread.
pub fn run(
    code: &str,
    tool_names: &[String],
    all_tools: &Value,
    stored: &Value,
    host: Arc<dyn SandboxHost>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
) -> ScriptOutcome {
    let failed = |error: String| ScriptOutcome {
        ok: false,
        output: Vec::new(),
        value: None,
        error: Some(error),
        writes: json!({"set": {}, "delete": []}),
    };
    let rt = match Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return failed(format!("Script sandbox failed: {e}")),
    };
    rt.set_memory_limit(MEMORY_LIMIT_BYTES);
    {
        let cancel = cancel.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            cancel.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d)
        })));
    }
    let ctx = match Context::full(&rt) {
        Ok(c) => c,
        Err(e) => return failed(format!("Script sandbox failed: {e}")),
    };
    let ids: Vec<(String, String)> = tool_names
        .iter()
        .map(|n| (identifier(n), n.clone()))
        .collect();
    let started = ctx.with(|ctx| -> Result<(), String> {
        let globals = ctx.globals();
        let set = |k: &str, v: String| globals.set(k, v).map_err(|e| e.to_string());
        set("__pi_store", stored.to_string())?;
        set("__pi_all_tools", all_tools.to_string())?;
        set("__pi_tool_ids", json!(ids).to_string())?;
        let h = Arc::clone(&host);
        let call = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'_>, name: String, args: String| {
                let args: Value = serde_json::from_str(&args).unwrap_or(Value::Null);
                match h.call(&name, args) {
                    Ok(v) => Ok(v.to_string()),
                    Err(e) => Err(throw(&ctx, &e)),
                }
            },
        );
        let h = Arc::clone(&host);
        let search = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'_>, query: rquickjs::Value<'_>, options: String| {
                let Some(query) = query.as_string().and_then(|s| s.to_string().ok()) else {
                    return Err(throw(&ctx, "searchTools() expects a query string"));
                };
                let options: Value = serde_json::from_str(&options).unwrap_or(Value::Null);
                h.search(&query, &options)
                    .map(|v| v.to_string())
                    .map_err(|e| throw(&ctx, &e))
            },
        );
        let h = Arc::clone(&host);
        let describe_tool = Function::new(ctx.clone(), move |name: String| {
            match h.describe_tool(&name) {
                Value::Null => String::new(),
                v => v.to_string(),
            }
        });
        let h = Arc::clone(&host);
        let describe_ns = Function::new(ctx.clone(), move |name: String| {
            match h.describe_namespace(&name) {
                Value::Null => String::new(),
                v => v.to_string(),
            }
        });
        for (name, f) in [
            ("__pi_call", call),
            ("__pi_search", search),
            ("__pi_describe_tool", describe_tool),
            ("__pi_describe_namespace", describe_ns),
        ] {
            let f = f.map_err(|e| e.to_string())?;
            globals.set(name, f).map_err(|e| e.to_string())?;
        }
        if ctx
            .eval_with_options::<(), _>(PRELUDE, sloppy("codemode-prelude.js"))
            .is_err()
        {
            return Err(format!("Script sandbox failed: {}", exception_text(&ctx)));
        }
        // The prefix shares the script's first line, so frames name the lines as written.
        let wrapped = format!("(async (tools, console) => {{{code}\n}})");
        let script: Function = match ctx.eval_with_options(wrapped, sloppy("codemode.js")) {
            Ok(f) => f,
            Err(_) => return Err(exception_text(&ctx)),
        };
        let start: Function = globals.get("__pi_start").map_err(|e| e.to_string())?;
        if start.call::<_, ()>((script,)).is_err() {
            return Err(exception_text(&ctx));
        }
        Ok(())
    });
    let interrupted_error = || {
        if cancel.is_cancelled() {
            Some("Script aborted: Execution aborted".to_string())
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            Some("Script timed out: Execution timed out".to_string())
        } else {
            None
        }
    };
    if let Err(e) = started {
        return failed(interrupted_error().unwrap_or(e));
    }
    loop {
        match rt.execute_pending_job() {
            Ok(true) => continue,
            Ok(false) => break,
            Err(_) => break,
        }
    }
    // The interrupt handler must not stop collecting the output.
    rt.set_interrupt_handler(None);
    let finished: Result<String, String> = ctx.with(|ctx| {
        ctx.eval::<String, _>("__pi_finish()")
            .map_err(|_| exception_text(&ctx))
    });
    let report: Value = match finished {
        Ok(s) => serde_json::from_str(&s).unwrap_or(Value::Null),
        Err(e) => return failed(e),
    };
    let output = report["output"].as_array().cloned().unwrap_or_default();
    let mut outcome = ScriptOutcome {
        ok: report["ok"] == json!(true),
        output,
        value: report["value"].as_str().map(str::to_string),
        error: report["error"].as_str().map(str::to_string),
        writes: report["writes"].clone(),
    };
    if let Some(e) = interrupted_error().filter(|_| !outcome.ok || report["done"] != json!(true)) {
        outcome.ok = false;
        outcome.value = None;
        outcome.error = Some(e);
    } else if report["done"] != json!(true) {
        outcome.ok = false;
        outcome.value = None;
        outcome.error = Some(
            "Error: the script waits on a promise that can never settle (there are no timers)"
                .into(),
        );
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl SandboxHost for Echo {
        fn call(&self, name: &str, args: Value) -> Result<Value, String> {
            match name {
                "fail" => Err("it failed".into()),
                _ => Ok(json!({"tool": name, "args": args})),
            }
        }
        fn search(&self, query: &str, _options: &Value) -> Result<Value, String> {
            Ok(json!([{"name": query, "description": ""}]))
        }
        fn describe_tool(&self, _name: &str) -> Value {
            Value::Null
        }
        fn describe_namespace(&self, name: &str) -> Value {
            json!({"name": name, "tools": []})
        }
    }

    fn run_script(code: &str) -> ScriptOutcome {
        run(
            code,
            &["mcp__dev-radius__search".into(), "fail".into()],
            &json!([]),
            &json!({"k": 1}),
            Arc::new(Echo),
            CancellationToken::new(),
            None,
        )
    }

    #[test]
    fn scripts_call_tools_and_collect_output() {
        let o = run_script(
            "const r = await tools.mcp__dev_radius__search({ q: 1 });\ntext('a'); console.log('n', 2, {x: 1});\nconst e = await tools.fail({}).catch((e) => e.message);\nstore('k', undefined); store('j', [1]);\nreturn { r, e, k: load('k'), j: load('j') };",
        );
        assert!(o.ok, "{o:?}");
        assert_eq!(
            o.value.as_deref(),
            Some(
                r#"{"r":{"tool":"mcp__dev-radius__search","args":{"q":1}},"e":"it failed","j":[1]}"#
            )
        );
        assert_eq!(
            o.output,
            [
                json!({"type": "text", "text": "a"}),
                json!({"type": "text", "text": "n 2 {\"x\":1}", "console": true})
            ]
        );
        assert_eq!(o.writes, json!({"set": {"j": [1]}, "delete": ["k"]}));
    }

    #[test]
    fn errors_exits_and_never_settling_promises() {
        let o = run_script("text('before'); throw new TypeError('bad');");
        assert!(!o.ok);
        assert!(
            o.error
                .as_deref()
                .unwrap_or("")
                .starts_with("TypeError: bad"),
            "{o:?}"
        );
        assert_eq!(o.output.len(), 1);
        let o = run_script("text(1); exit(); text(2);");
        assert!(o.ok);
        assert_eq!(o.output, [json!({"type": "text", "text": "1"})]);
        let o = run_script("await new Promise(() => {});");
        assert!(!o.ok);
        let o = run_script("this is not javascript");
        assert!(
            o.error.as_deref().unwrap_or("").starts_with("SyntaxError"),
            "{o:?}"
        );
        let o = run(
            "while (true) {}",
            &[],
            &json!([]),
            &json!({}),
            Arc::new(Echo),
            CancellationToken::new(),
            Some(Instant::now() + std::time::Duration::from_millis(50)),
        );
        assert_eq!(
            o.error.as_deref(),
            Some("Script timed out: Execution timed out")
        );
    }
}
