// The pi API and ctx against pi's calls: staleness, the event bus, exec, messaging, session
// reads and writes, replacement with withSession, LLM calls and provider streams.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

const STALE =
	"This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";

const EXT = `
import { complete, streamSimple, getModel } from "@earendil-works/pi-ai";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
const g = globalThis as any;
export default function (pi) {
	g.firstPi ??= pi;
	pi.on("session_start", (_e, ctx) => { g.capturedCtx = ctx; });
	pi.events.on("bus", (data) => { pi.appendEntry("bus", data); });
	pi.events.on("bus", () => { throw new Error("bus handler failed"); });
	pi.on("context", () => undefined);
	pi.registerCommand("stale", {
		handler: async (_a, ctx) => {
			const results = [];
			for (const f of [() => g.firstPi.getActiveTools(), () => g.capturedCtx.cwd, () => g.capturedCtx.ui]) {
				try { f(); results.push("ok"); } catch (e) { results.push(e.message); }
			}
			ctx.ui.notify(JSON.stringify(results));
		},
	});
	pi.registerCommand("bus", { handler: async () => pi.events.emit("bus", { n: 1 }) });
	pi.registerCommand("exec", {
		handler: async (_a, ctx) => {
			const ok = await pi.exec("sh", ["-c", "printf out; printf err >&2; exit 3"]);
			const missing = await pi.exec("definitely-not-a-command-xyz", []);
			const killed = await pi.exec("sleep", ["5"], { timeout: 50 });
			const cwd = await pi.exec("pwd", [], { cwd: "/" });
			const big = await pi.exec("sh", ["-c", "head -c 100 /dev/zero"], { maxBuffer: 10 });
			let range = "";
			try { await pi.exec("true", [], { maxBuffer: -1 }); } catch (e) { range = e.constructor.name; }
			pi.appendEntry("exec", { ok, missing: { code: missing.code, hasErr: missing.stderr.length > 0 }, killed, cwd: cwd.stdout, big: { len: big.stdout.length, code: big.code, truncated: big.truncated }, range });
		},
	});
	pi.registerCommand("session", {
		handler: async (_a, ctx) => {
			const sm = ctx.sessionManager;
			const before = sm.getEntries().length;
			pi.appendEntry("note", { x: 1 });
			pi.setSessionName("named");
			pi.setLabel("e1", "lbl");
			pi.setThinkingLevel("high");
			ctx.ui.notify(JSON.stringify({
				before, after: sm.getEntries().length, name: pi.getSessionName(), label: sm.getLabel("e1"),
				leaf: sm.getLeafId(), id: sm.getSessionId(), file: sm.getSessionFile(), level: pi.getThinkingLevel(),
				ctxLevel: ctx.thinkingLevel, usage: ctx.getContextUsage(), prompt: ctx.getSystemPrompt(),
				model: ctx.model?.id ?? null, idle: ctx.isIdle(), pending: ctx.hasPendingMessages(),
				found: ctx.modelRegistry.find("openai", "gpt-x")?.id, all: ctx.modelRegistry.getAll().length,
				getModel: getModel("anthropic", "claude-x")?.api, signal: ctx.signal === undefined,
			}));
		},
	});
	pi.registerCommand("messages", {
		handler: async (_a, ctx) => {
			pi.sendMessage({ customType: "c", content: "hello", display: true }, { triggerTurn: true });
			pi.sendUserMessage("do it", { deliverAs: "followUp" });
			const changed = await pi.setModel({ provider: "openai", id: "gpt-x" });
			ctx.ui.notify("setModel " + changed);
		},
	});
	pi.registerCommand("replace", {
		handler: async (_a, ctx) => {
			await ctx.newSession({
				parentSession: "/p.jsonl",
				setup: (sm) => sm.appendCustomEntry("setup", { ok: true }),
				withSession: async (next) => { await next.sendMessage({ customType: "after", content: "x", display: false }); next.ui.notify("with " + next.cwd); },
			});
			try { ctx.ui.notify("old ctx still works"); } catch (e) { g.oldCtxError = e.message; }
		},
	});
	pi.registerCommand("old", { handler: async (_a, ctx) => ctx.ui.notify(String(g.oldCtxError)) });
	pi.registerCommand("llm", {
		handler: async (_a, ctx) => {
			const model = ctx.modelRegistry.find("anthropic", "claude-x");
			const done = await complete(model, { messages: [] }, { signal: new AbortController().signal, maxTokens: 5 });
			const events = [];
			const s = streamSimple(model, { messages: [] }, { reasoning: "low" });
			for await (const e of s) events.push(e.type);
			const final = await s.result();
			ctx.ui.notify(JSON.stringify({ done: done.content[0].text, events, final: final.stopReason }));
		},
	});
	pi.registerCommand("boom", { handler: async () => { throw new Error("command exploded"); } });
	pi.registerProvider("jsprov", {
		api: "js-api",
		models: [{ id: "m1" }],
		streamSimple(model, context, options) {
			const stream = createAssistantMessageEventStream();
			(async () => {
				const payload = await options.onPayload({ model: model.id });
				await options.onResponse({ status: 200, headers: {} });
				stream.push({ type: "start", partial: { role: "assistant", content: [] } });
				stream.push({ type: "text_delta", delta: JSON.stringify(payload) + " " + options.apiKey });
				if (options.signal.aborted) stream.push({ type: "error", reason: "aborted", error: { role: "assistant", stopReason: "aborted" } });
				else stream.push({ type: "done", reason: "stop", message: { role: "assistant", content: [], stopReason: "stop", timestamp: Date.now() } });
			})();
			return stream;
		},
	});
	pi.on("before_provider_request", (e) => ({ ...e.payload, hooked: true }));
	pi.registerProvider("typedprov", {
		baseUrl: "http://typed.invalid",
		models: [{ type: "classifier", id: "c1", api: "c-api" }],
		classifiers: {
			"c-api": {
				classify: (model, context, options) =>
					context.state.wait
						? new Promise((_resolve, reject) => options.signal.addEventListener("abort", () => reject(new Error("stopped"))))
						: { model: model.id, answers: {}, key: options.apiKey, signal: typeof options.signal },
			},
			"c-throw": { classify: async () => { throw new Error("no answers"); } },
		},
		images: { "i-api": { generateImages: async (model, context) => ({ model: model.id, output: context.input }) } },
	});
}
`;

describe("pi API", () => {
	let pi;
	let dir;
	before(async () => {
		dir = fixtureDir({ "api.ts": EXT });
		pi = await FakePi.start({ cwd: dir });
		const result = await pi.init([path.join(dir, "api.ts")]);
		assert.deepEqual(result.errors, []);
		assert.deepEqual(result.extensions[0].providers[0], {
			name: "jsprov",
			config: { api: "js-api", models: [{ id: "m1" }], streamSimple: true },
		});
		// Implementations reach pi as `true`: pi only learns which apis have one.
		assert.deepEqual(result.extensions[0].providers[1].config.classifiers, {
			"c-api": { classify: true },
			"c-throw": { classify: true },
		});
		await pi.emit("session_start", { reason: "startup" });
	});
	after(async () => {
		await pi.close();
	});
	const lastNote = () => pi.uiRecords().findLast((r) => r.method === "notify").message;

	it("event bus: emit is synchronous; handler throws become events:<channel> errors", async () => {
		await pi.ask("command", { name: "bus", args: "", ctx: {} });
		assert.deepEqual(pi.callsOf("append_entry").at(-1), { customType: "bus", data: { n: 1 } });
		await new Promise((r) => setTimeout(r, 20));
		assert.deepEqual(pi.errors().at(-1), {
			extensionPath: path.join(dir, "api.ts"),
			event: "events:bus",
			error: "bus handler failed",
		});
	});

	it("exec: ExecResult semantics", async () => {
		await pi.ask("command", { name: "exec", args: "", ctx: {} });
		const { data } = pi.callsOf("append_entry").at(-1);
		assert.deepEqual(data.ok, { stdout: "out", stderr: "err", code: 3, killed: false, truncated: false });
		assert.deepEqual(Object.keys(data.ok), ["stdout", "stderr", "code", "killed", "truncated"]);
		assert.deepEqual(data.missing, { code: 1, hasErr: true });
		assert.equal(data.killed.killed, true);
		assert.equal(data.killed.code, 143);
		assert.equal(data.cwd, "/\n");
		// Truncation kills the child: 143 if it was still running, else a forced non-zero 1.
		assert.equal(data.big.len, 10);
		assert.equal(data.big.truncated, true);
		assert.ok(data.big.code === 1 || data.big.code === 143);
		assert.equal(data.range, "RangeError");
	});

	it("session reads and writes; CtxState getters", async () => {
		await pi.ask("command", {
			name: "session",
			args: "",
			ctx: { model: { provider: "anthropic", id: "claude-x" }, thinkingLevel: "low", isIdle: true, hasPendingMessages: true, sessionVersion: 7 },
		});
		const note = JSON.parse(lastNote());
		// The cached entries were dropped by appendEntry: the second read sees the new entry.
		assert.equal(note.after, note.before + 1);
		assert.deepEqual(note, {
			before: note.before,
			after: note.after,
			name: "named",
			label: "lbl",
			leaf: `e${note.after}`,
			id: "session-1",
			file: "/tmp/session-1.jsonl",
			level: "high",
			ctxLevel: "high",
			usage: { tokens: 2, contextWindow: 100000, percent: 0.002 },
			prompt: "SYSTEM",
			model: "claude-x",
			idle: true,
			pending: true,
			found: "gpt-x",
			all: 2,
			getModel: "anthropic-messages",
			signal: true,
		});
		assert.deepEqual(pi.callsOf("set_label").at(-1), { entryId: "e1", label: "lbl" });
	});

	it("messages and setModel go out as async calls; failures become <runtime> errors", async () => {
		pi.calls.async.send_message = () => {
			throw new Error("Agent is busy");
		};
		await pi.ask("command", { name: "messages", args: "", ctx: {} });
		delete pi.calls.async.send_message;
		assert.deepEqual(pi.callsOf("send_message").at(-1), {
			message: { customType: "c", content: "hello", display: true },
			triggerTurn: true,
		});
		assert.deepEqual(pi.callsOf("send_user_message").at(-1), { content: "do it", deliverAs: "followUp" });
		assert.deepEqual(pi.callsOf("set_model").at(-1), { provider: "openai", id: "gpt-x" });
		assert.equal(lastNote(), "setModel true");
		await pi.waitFor((m) => m.method === "extension_error" && m.params.event === "send_message");
		assert.deepEqual(pi.errors().at(-1), { extensionPath: "<runtime>", event: "send_message", error: "Agent is busy" });
	});

	it("command throws become command:<name> errors", async () => {
		assert.equal(await pi.ask("command", { name: "boom", args: "", ctx: {} }), null);
		assert.deepEqual(pi.errors().at(-1), { extensionPath: "command:boom", event: "command", error: "command exploded" });
	});

	it("context: unchanged messages give null", async () => {
		assert.equal(await pi.emit("context", { messages: [{ role: "system", content: "s" }, { role: "user", content: "u" }] }), null);
	});

	it("LLM calls: complete and stream through pi", async () => {
		pi.calls.async.stream = async (params) => {
			pi.notify("stream_event", { streamId: params.streamId, event: { type: "start", partial: {} } });
			pi.notify("stream_event", { streamId: params.streamId, event: { type: "done", reason: "stop", message: { role: "assistant", stopReason: "stop" } } });
			return null;
		};
		await pi.ask("command", { name: "llm", args: "", ctx: {} });
		assert.deepEqual(JSON.parse(lastNote()), { done: "completed", events: ["start", "done"], final: "stop" });
		assert.deepEqual(pi.callsOf("complete").at(-1), {
			provider: "anthropic",
			id: "claude-x",
			context: { messages: [] },
			options: { maxTokens: 5 },
			// pi-ai's complete takes provider options; the *Simple calls a reasoning level.
			simple: false,
		});
		assert.equal(pi.callsOf("stream").at(-1).options.reasoning, "low");
		assert.equal(pi.callsOf("stream").at(-1).simple, true);
	});

	it("provider_stream: runs the JS streamSimple, relays events, runs the payload hook here", async () => {
		const value = await pi.ask("provider_stream", {
			streamId: "s1",
			api: "js-api",
			model: { id: "m1", provider: "jsprov", api: "js-api" },
			context: { messages: [] },
			options: { apiKey: "KEY" },
		});
		assert.equal(value, null);
		const events = pi.messages.filter((m) => m.type === "stream_event" && m.streamId === "s1").map((m) => m.event);
		assert.deepEqual(
			events.map((e) => e.type),
			["start", "text_delta", "done"],
		);
		assert.equal(events[1].delta, '{"model":"m1","hooked":true} KEY');
		assert.equal(typeof events[2].message.durationMs, "number");
		const missing = await pi.request("provider_stream", { streamId: "s2", api: "nope", model: {}, context: {}, options: {} });
		assert.equal(missing.ok, false);
	});

	it("provider_typed: runs the registered classifier or image implementation for the model's api", async () => {
		const model = { id: "c1", provider: "typedprov", api: "c-api" };
		const ask = (kind, m, context, signal = false, callId = "t1") =>
			pi.ask("provider_typed", { callId, provider: "typedprov", kind, model: m, context, options: { apiKey: "K" }, signal });
		assert.deepEqual(await ask("classify", model, { state: {} }), {
			result: { model: "c1", answers: {}, key: "K", signal: "undefined" },
		});
		assert.equal((await ask("classify", model, { state: {} }, true)).result.signal, "object");
		assert.deepEqual(await ask("classify", { ...model, api: "c-throw" }, {}), { error: "no answers", aborted: false });
		assert.deepEqual(await ask("classify", { ...model, api: "nope" }, {}), {
			error: 'Provider typedprov has no classifier implementation for "nope"',
		});
		assert.deepEqual(await ask("images", { id: "i1", api: "i-api" }, { input: [1] }), { result: { model: "i1", output: [1] } });
		const waiting = ask("classify", model, { state: { wait: true } }, true, "t9");
		await new Promise((resolve) => setTimeout(resolve, 20));
		pi.notify("typed_abort", { callId: "t9" });
		assert.deepEqual(await waiting, { error: "stopped", aborted: true });
	});

	it("newSession: setup runs with the new generation, withSession gets its ctx, the old ctx goes stale", async () => {
		pi.calls.async.new_session = async (params) => {
			await pi.emit("session_before_switch", { reason: "new" });
			pi.notify("invalidate");
			await pi.ask("reinit", { reason: "new", cwd: dir, sessionStart: { reason: "new" } });
			await pi.emit("session_start", { reason: "new", previousSessionFile: params.parentSession });
			return { cancelled: false };
		};
		await pi.ask("command", { name: "replace", args: "", ctx: {} });
		delete pi.calls.async.new_session;
		assert.deepEqual(pi.callsOf("new_session").at(-1), { parentSession: "/p.jsonl" });
		assert.deepEqual(pi.callsOf("append_entry").at(-1), { customType: "setup", data: { ok: true } });
		assert.deepEqual(pi.callsOf("send_message").at(-1).message.customType, "after");
		assert.equal(lastNote(), `with ${dir}`);
		await pi.ask("command", { name: "old", args: "", ctx: {} });
		assert.equal(lastNote(), STALE);
	});

	it("staleness: captured pi and ctx of an invalidated generation throw Pi's text", async () => {
		await pi.emit("session_start", { reason: "startup" });
		pi.notify("invalidate");
		await pi.ask("reinit", { reason: "new", cwd: dir });
		await pi.ask("command", { name: "stale", args: "", ctx: {} });
		assert.deepEqual(JSON.parse(lastNote()), [STALE, STALE, STALE]);
	});
});

describe("run signal and late provider registration", () => {
	it("ctx.signal lives while a run is active and fires on abort; registerProvider after load is a sync call", async () => {
		const dir = fixtureDir({
			"sig.ts": `
				export default function (pi) {
					pi.on("agent_start", async (_e, ctx) => {
						const signal = ctx.signal;
						await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
						ctx.ui.notify("aborted " + signal.aborted);
					});
					pi.on("session_before_compact", async (e, ctx) => {
						await new Promise((resolve) => e.signal.addEventListener("abort", resolve, { once: true }));
						return { cancel: true };
					});
					pi.registerCommand("prov", { handler: async (_a, ctx) => {
						pi.registerProvider("late", { api: "late-api", streamSimple() {}, models: [] });
						try { pi.registerProvider("bad", { models: [] }); } catch (e) { ctx.ui.notify(e.message); }
					} });
				}`,
		});
		const pi = await FakePi.start({ cwd: dir });
		try {
			await pi.init([path.join(dir, "sig.ts")]);
			pi.notify("run", { active: true });
			const pending = pi.emit("agent_start", {});
			await new Promise((r) => setTimeout(r, 30));
			pi.notify("abort");
			await pending;
			assert.equal(pi.uiRecords().at(-1).message, "aborted true");
			pi.notify("run", { active: false });
			const compact = pi.emit("session_before_compact", { reason: "manual" });
			await new Promise((r) => setTimeout(r, 30));
			pi.notify("abort");
			assert.deepEqual(await compact, { cancel: true });
			pi.calls.sync.register_provider = (params) => {
				if (!params.config.api) throw new Error(`Provider ${params.name}: "api" is required`);
				return null;
			};
			await pi.ask("command", { name: "prov", args: "", ctx: {} });
			assert.deepEqual(pi.callsOf("register_provider")[0], {
				path: path.join(dir, "sig.ts"),
				name: "late",
				config: { api: "late-api", streamSimple: true, models: [] },
			});
			assert.equal(pi.uiRecords().at(-1).message, 'Provider bad: "api" is required');
		} finally {
			await pi.close();
		}
	});
});

describe("session answers", () => {
	it("are cached within one turn of the event loop, fetched again after an await", async () => {
		const dir = fixtureDir({
			"s.ts": `export default (pi) => pi.registerCommand("s", { handler: async (_a, ctx) => {
				const sm = ctx.sessionManager;
				const first = [sm.getEntries().length, sm.getEntries().length];
				await new Promise((r) => setTimeout(r, 50));
				ctx.ui.notify(JSON.stringify([...first, sm.getEntries().length]));
			} });`,
		});
		const pi = await FakePi.start({ cwd: dir });
		try {
			await pi.init([path.join(dir, "s.ts")]);
			const pending = pi.ask("command", { name: "s", args: "", ctx: {} });
			await pi.waitFor((m) => m.method === "session");
			pi.state.entries.push({ type: "message", id: "x" });
			await pending;
			assert.deepEqual(JSON.parse(pi.uiRecords().at(-1).message), [1, 1, 2]);
			assert.equal(pi.callsOf("session").length, 2);
		} finally {
			await pi.close();
		}
	});
});
