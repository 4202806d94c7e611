#!/usr/bin/env node
// Records what the reference (Pi 1.6.0) answers for each registry fixture, so
// crates/pi-registry/tests/registry_conformance.rs can assert our registry gives the same answers
// without Node.
//
//   node crates/pi-registry/scripts/record-registry.mjs [case ...]
//
// Each case is crates/pi-registry/tests/fixtures/registry/cases/<name>/ with
//   case.json    {"args": [...], "env": {...}, "commands": [<rpc command with id>...], "list": [null | "search", ...],
//                 "mock": true, "recordHeaders": [...]}
//                With "mock", `${PORT}` in models.json/auth.json is a loopback LLM; prompts run to
//                agent_settled, stdout keeps only responses, thinking-level events and assistant
//                errors, and "requests" records each request's path and the listed headers.
//   agent/       the agent dir (models.json, auth.json, settings.json, models-store.json), copied to a temp dir
//                (or "agent": "<other case>" in case.json to reuse that case's agent dir)
// and gets expected.json:
//   {"stdout": [<every stdout line of `pi --mode rpc --no-session <args>`>],
//    "stderr": [<stderr lines>], "list": [{"search", "stdout", "stderr"}]}
// Paths are normalized: the docs dir becomes <docs>, the temp agent dir <agent>; get_state's
// sessionId becomes <sessionId>.
//
// Environment: PI_REF (default /work/ref/pi16/node_modules/.bin/pi), NODE22_BIN (default
// /work/ref/node22/package/bin). Runs offline (PI_OFFLINE=1, env -i style environment).

import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { createServer } from "node:http";

const piBin = process.env.PI_REF ?? "/work/ref/pi16/node_modules/.bin/pi";
const nodeBin = process.env.NODE22_BIN ?? "/work/ref/node22/package/bin";
const docsDir = realpathSync(join(dirname(piBin), "..", "@earendil-works", "pi-coding-agent", "docs"));
const casesDir = join(dirname(fileURLToPath(import.meta.url)), "..", "tests", "fixtures", "registry", "cases");

function normalize(text, agentDir) {
  return text
    .split(docsDir).join("<docs>")
    .split(agentDir).join("<agent>");
}

function run(args, env, cwd, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(piBin, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    // Pi exits before reading stdin when startup fails.
    child.stdin.on("error", () => {});
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const lines = [];
    const waiting = new Map();
    let onSettled;
    createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(line);
      try {
        const msg = JSON.parse(line);
        if (msg.type === "response" && waiting.has(msg.id)) waiting.get(msg.id)(msg);
        if (msg.type === "agent_settled" && onSettled) onSettled();
      } catch {}
    });
    let stdoutText = "";
    if (!input) child.stdout.on("data", (d) => (stdoutText += d));
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error(`timeout: ${args.join(" ")}`)); }, 30000);
    child.on("close", (code) => {
      clearTimeout(timer);
      for (const r of waiting.values()) r({});
      onSettled?.();
      resolve({ code, lines, stderr, stdoutText });
    });
    (async () => {
      for (const command of input ?? []) {
        const answered = new Promise((r) => waiting.set(command.id, r));
        const settled = new Promise((r) => (onSettled = r));
        child.stdin.write(`${JSON.stringify(command)}\n`);
        const response = await answered;
        // A started prompt runs until agent_settled.
        if (command.type === "prompt" && response.success) await settled;
      }
      // Let trailing events arrive before closing stdin.
      await new Promise((r) => setTimeout(r, 200));
      child.stdin.end();
    })();
  });
}

/// A loopback LLM for prompts: answers `pong` in the openai-completions and anthropic-messages
/// formats and keeps the path and headers of every request.
function startMock() {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      requests.push({ path: req.url, headers: req.headers });
      const model = JSON.parse(body || "{}").model;
      res.writeHead(200, { "content-type": "text/event-stream", connection: "close" });
      if (req.url.includes("/chat/completions")) {
        const base = { id: "c1", object: "chat.completion.chunk", created: 0, model };
        for (const e of [
          { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "pong" }, finish_reason: null }] },
          { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
          { ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } },
        ]) res.write(`data: ${JSON.stringify(e)}\n\n`);
        res.end("data: [DONE]\n\n");
      } else {
        for (const [name, data] of [
          ["message_start", { type: "message_start", message: { id: "m1", type: "message", role: "assistant", model, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 0 } } }],
          ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
          ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "pong" } }],
          ["content_block_stop", { type: "content_block_stop", index: 0 }],
          ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } }],
          ["message_stop", { type: "message_stop" }],
        ]) res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
        res.end();
      }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, requests, port: server.address().port })));
}

/// Keeps what the registry decides from a prompt run: responses, thinking-level events, and the
/// error of a failed assistant message.
function summarize(lines) {
  const out = [];
  for (const line of lines) {
    const msg = JSON.parse(line);
    if (msg.type === "response" || msg.type === "thinking_level_changed") out.push(line);
    else if (msg.type === "message_end" && msg.message?.role === "assistant" && msg.message.errorMessage !== undefined)
      out.push(JSON.stringify({ type: "assistant_error", errorMessage: msg.message.errorMessage }));
  }
  return out;
}

async function recordCase(name) {
  const dir = join(casesDir, name);
  const spec = JSON.parse(readFileSync(join(dir, "case.json"), "utf8"));
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), "pi-registry-")));
  const agentDir = join(tmp, "agent");
  const agentSource = join(spec.agent ? join(casesDir, spec.agent) : dir, "agent");
  if (existsSync(agentSource)) cpSync(agentSource, agentDir, { recursive: true });
  const home = join(tmp, "home");
  const cwd = join(tmp, "work");
  for (const d of [home, cwd]) mkdirSync(d, { recursive: true });
  const env = {
    PATH: `${nodeBin}:/usr/bin:/bin`,
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    ...(spec.env ?? {}),
  };
  const mock = spec.mock ? await startMock() : undefined;
  if (mock) {
    for (const file of ["models.json", "auth.json"]) {
      const path = join(agentDir, file);
      if (existsSync(path)) writeFileSync(path, readFileSync(path, "utf8").split("${PORT}").join(String(mock.port)));
    }
  }
  const rpc = await run(["--mode", "rpc", "--no-session", ...(spec.args ?? [])], env, cwd, spec.commands ?? []);
  mock?.server.close();
  const rawLines = (spec.mock ? summarize(rpc.lines) : rpc.lines).map((l) =>
    mock ? l.split(`127.0.0.1:${mock.port}`).join("127.0.0.1:${PORT}") : l,
  );
  const stdout = rawLines.map((l) => {
    const n = normalize(l, agentDir);
    const msg = JSON.parse(n);
    if (msg.command === "get_state" && msg.data?.sessionId) msg.data.sessionId = "<sessionId>";
    return msg.command === "get_state" ? JSON.stringify(msg) : n;
  });
  const list = [];
  for (const search of spec.list ?? []) {
    const args = ["--list-models", ...(search === null ? [] : [search])];
    const r = await run(args, env, cwd, null);
    list.push({ search, stdout: normalize(r.stdoutText, agentDir), stderr: normalize(r.stderr, agentDir) });
  }
  const keep = new Set((spec.recordHeaders ?? []).map((h) => h.toLowerCase()));
  const expected = {
    exitCode: rpc.code,
    ...(mock ? {
      requests: mock.requests.map((r) => ({
        path: r.path.split(String(mock.port)).join("${PORT}"),
        headers: Object.fromEntries(Object.entries(r.headers).filter(([k]) => keep.has(k)).sort(([a], [b]) => (a < b ? -1 : 1))),
      })),
    } : {}),
    stdout,
    stderr: normalize(rpc.stderr, agentDir).split("\n").filter((l) => l.length > 0),
    list,
  };
  writeFileSync(join(dir, "expected.json"), `${JSON.stringify(expected, null, 1)}\n`);
  rmSync(tmp, { recursive: true, force: true });
  console.error(`${name}: ${stdout.length} stdout lines, ${expected.stderr.length} stderr lines`);
}

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : readdirSync(casesDir).sort();
for (const name of names) await recordCase(name);
