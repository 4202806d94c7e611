//! Runs one codemode script in QuickJS: no file system, network or timers; the script reaches
//! the world only through the host functions installed here (`tools.*`, `models.*`, discovery,
//! `store`).
//!
//! `tools.*` and `models.*` calls are asynchronous, as in Pi: each starts an operation on the
//! host and returns a promise at once, so `Promise.all([tools.a(), tools.b()])` runs both calls
//! together. The script's thread runs QuickJS's jobs until none is left, then waits for the next
//! operation to finish and settles its promise. Calls still running when the script ends are
//! cancelled. The globals (`text`, `image`, `console`, `exit`, `store`, `load`, `ALL_TOOLS`, ...)
//! are plain JavaScript in [`PRELUDE`]; Rust only moves JSON across.

use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Exception, Function, Runtime};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// A script's VM heap.
const MEMORY_LIMIT_BYTES: usize = 256 * 1024 * 1024;

/// Receives the outcome of an operation: `Ok(script value as JSON)` or the error text the
/// promise rejects with. May be called from any thread.
pub type Settle = Box<dyn FnOnce(Result<Value, String>) + Send>;

/// What the sandbox asks of the host, on the script's thread.
pub trait SandboxHost: Send + Sync {
    /// Starts `tools.<name>(args)` (`name` is the tool's name) or a `models.<method>(...args)`
    /// call (`name` is `models.<method>`, `args` the array of arguments). Must not block: the
    /// outcome goes to `settle` when the operation ends. `cancel` fires when the script ends
    /// with the operation still running.
    fn start(self: Arc<Self>, name: String, args: Value, cancel: CancellationToken, settle: Settle);
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
  // Asynchronous host operations: the promise settles when the host answers, through
  // __pi_settle, whose Error carries only this file's frames (left out of the script's error).
  const pending = new Map();
  let tickets = 0;
  const op = (name, json) => new Promise((resolve, reject) => {
    const ticket = ++tickets;
    pending.set(ticket, { resolve, reject });
    __pi_begin(ticket, name, json);
  });
  globalThis.__pi_settle = (ticket, ok, text) => {
    const p = pending.get(ticket);
    if (!p) return;
    pending.delete(ticket);
    if (ok) p.resolve(text === "" ? undefined : JSON.parse(text));
    else p.reject(new Error(text));
  };
  const tools = {};
  for (const [id, name] of JSON.parse(__pi_tool_ids)) {
    tools[id] = (args) => op(name, JSON.stringify(args ?? {}));
  }
  globalThis.tools = tools;
  const modelsApi = {};
  for (const m of ["getModelsOfType", "getAvailableOfType", "getModelOfType", "classify", "generateImages"]) {
    modelsApi[m] = (...args) => op(`models.${m}`, JSON.stringify(args));
  }
  if (__pi_models) globalThis.models = Object.freeze(modelsApi);
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
  globalThis.__pi_done = () => state.done;
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

/// What a script gets besides its code and host.
pub struct Globals<'a> {
    /// Names of the tools `tools.*` calls.
    pub tool_names: &'a [String],
    /// `ALL_TOOLS`.
    pub all_tools: &'a Value,
    /// `load()` values.
    pub stored: &'a Value,
    /// Whether `models` is defined.
    pub models: bool,
}

/// An operation's outcome on its way back to the script's thread: `(ticket, outcome)`.
type Finished = (f64, Result<Value, String>);

/// How long the script's thread waits for an operation before looking at the cancellation and
/// the deadline again.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs `code` (an async function body) with the given globals and limits. Blocks: call it on a
/// blocking thread.
pub fn run(
    code: &str,
    globals_in: Globals<'_>,
    host: Arc<dyn SandboxHost>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
) -> ScriptOutcome {
    let Globals {
        tool_names,
        all_tools,
        stored,
        models,
    } = globals_in;
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
    let (tx, rx) = std::sync::mpsc::channel::<Finished>();
    // Cancels the operations still running when the script ends.
    let ops = cancel.child_token();
    let running = Arc::new(AtomicUsize::new(0));
    let started = ctx.with(|ctx| -> Result<(), String> {
        let globals = ctx.globals();
        let set = |k: &str, v: String| globals.set(k, v).map_err(|e| e.to_string());
        set("__pi_store", stored.to_string())?;
        set("__pi_all_tools", all_tools.to_string())?;
        set("__pi_tool_ids", json!(ids).to_string())?;
        globals
            .set("__pi_models", models)
            .map_err(|e| e.to_string())?;
        let (h, tx, ops, running) = (
            Arc::clone(&host),
            tx.clone(),
            ops.clone(),
            Arc::clone(&running),
        );
        let begin = Function::new(
            ctx.clone(),
            move |ticket: f64, name: String, args: String| {
                let args: Value = serde_json::from_str(&args).unwrap_or(Value::Null);
                running.fetch_add(1, Ordering::SeqCst);
                let tx = tx.clone();
                let settle: Settle = Box::new(move |outcome| {
                    let _ = tx.send((ticket, outcome));
                });
                Arc::clone(&h).start(name, args, ops.clone(), settle);
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
            ("__pi_begin", begin),
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
        ops.cancel();
        return failed(interrupted_error().unwrap_or(e));
    }
    drive(&rt, &ctx, &rx, &running, &interrupted_error);
    ops.cancel();
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

/// Runs jobs until the script is done, stopped, or waits on nothing the host still answers;
/// between runs, settles the promise of the next operation that finished.
fn drive(
    rt: &Runtime,
    ctx: &Context,
    rx: &std::sync::mpsc::Receiver<Finished>,
    running: &AtomicUsize,
    interrupted: &dyn Fn() -> Option<String>,
) {
    loop {
        loop {
            match rt.execute_pending_job() {
                Ok(true) => continue,
                Ok(false) => break,
                Err(_) => break,
            }
        }
        let done = ctx.with(|ctx| {
            ctx.globals()
                .get::<_, Function>("__pi_done")
                .and_then(|f| f.call::<_, bool>(()))
                .unwrap_or(true)
        });
        if done || interrupted().is_some() || running.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (ticket, outcome) = match rx.recv_timeout(POLL) {
            Ok(f) => f,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        };
        running.fetch_sub(1, Ordering::SeqCst);
        let (ok, text) = match outcome {
            Ok(Value::Null) => (true, String::new()),
            Ok(v) => (true, v.to_string()),
            Err(e) => (false, e),
        };
        ctx.with(|ctx| {
            if let Ok(settle) = ctx.globals().get::<_, Function>("__pi_settle") {
                let _ = settle.call::<_, ()>((ticket, ok, text));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    /// Answers at once; `slow_a`/`slow_b` each wait (on their own thread) until both started,
    /// so a sandbox that ran them one after the other would make them fail.
    #[derive(Default)]
    struct Echo {
        started: Mutex<u32>,
        both: Condvar,
        cancelled: Mutex<Vec<String>>,
    }

    impl SandboxHost for Echo {
        fn start(
            self: Arc<Self>,
            name: String,
            args: Value,
            cancel: CancellationToken,
            settle: Settle,
        ) {
            match name.as_str() {
                "fail" => settle(Err("it failed".into())),
                "slow_a" | "slow_b" => {
                    std::thread::spawn(move || {
                        let mut n = self.started.lock().unwrap_or_else(|e| e.into_inner());
                        *n += 1;
                        self.both.notify_all();
                        let (n, wait) = self
                            .both
                            .wait_timeout_while(n, Duration::from_secs(5), |n| *n < 2)
                            .unwrap_or_else(|e| e.into_inner());
                        drop(n);
                        settle(if wait.timed_out() {
                            Err(format!("{name} ran alone"))
                        } else {
                            Ok(json!(name))
                        });
                    });
                }
                "never" => {
                    std::thread::spawn(move || {
                        let deadline = Instant::now() + Duration::from_secs(5);
                        while !cancel.is_cancelled() && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        if cancel.is_cancelled() {
                            self.cancelled
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(name);
                        }
                        settle(Err("cancelled".into()));
                    });
                }
                _ => settle(Ok(json!({"tool": name, "args": args}))),
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

    fn run_with(code: &str, host: Arc<Echo>, deadline: Option<Instant>) -> ScriptOutcome {
        let names: Vec<String> = [
            "mcp__dev-radius__search",
            "fail",
            "slow_a",
            "slow_b",
            "never",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        run(
            code,
            Globals {
                tool_names: &names,
                all_tools: &json!([]),
                stored: &json!({"k": 1}),
                models: true,
            },
            host,
            CancellationToken::new(),
            deadline,
        )
    }

    fn run_script(code: &str) -> ScriptOutcome {
        run_with(code, Arc::new(Echo::default()), None)
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
    fn calls_under_promise_all_run_together() {
        let o = run_script("return await Promise.all([tools.slow_a({}), tools.slow_b({})]);");
        assert!(o.ok, "{o:?}");
        assert_eq!(o.value.as_deref(), Some(r#"["slow_a","slow_b"]"#));
    }

    #[test]
    fn models_calls_pass_their_arguments_as_an_array() {
        let o = run_script("return await models.getModelOfType('classifier', undefined, 'x');");
        assert_eq!(
            o.value.as_deref(),
            Some(r#"{"tool":"models.getModelOfType","args":["classifier",null,"x"]}"#)
        );
    }

    #[test]
    fn calls_still_running_when_the_script_ends_are_cancelled() {
        let host = Arc::new(Echo::default());
        let o = run_with("tools.never({}); return 1;", Arc::clone(&host), None);
        assert!(o.ok, "{o:?}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while host.cancelled.lock().map(|c| c.is_empty()).unwrap_or(true)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            *host.cancelled.lock().unwrap_or_else(|e| e.into_inner()),
            ["never"]
        );
        let o = run_with(
            "await tools.never({});",
            Arc::new(Echo::default()),
            Some(Instant::now() + Duration::from_millis(100)),
        );
        assert_eq!(
            o.error.as_deref(),
            Some("Script timed out: Execution timed out")
        );
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
        let o = run_with(
            "while (true) {}",
            Arc::new(Echo::default()),
            Some(Instant::now() + std::time::Duration::from_millis(50)),
        );
        assert_eq!(
            o.error.as_deref(),
            Some("Script timed out: Execution timed out")
        );
    }
}
