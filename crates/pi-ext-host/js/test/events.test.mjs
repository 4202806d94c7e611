// Event composition (PROTOCOL.md "Events"), handler errors, and the handlers set.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

describe("events", () => {
	let pi;
	let dir;
	const p = (f) => path.join(dir, f);
	before(async () => {
		dir = fixtureDir({
			"a.ts": `
				export default function (pi) {
					pi.on("input", (e) => {
						if (e.text === "handle me") return { action: "handled" };
						if (e.text === "boom") throw new Error("input failed");
						return { action: "transform", text: e.text + " [a]" };
					});
					pi.on("tool_call", (e) => {
						if (e.toolName === "bash") e.input.command = "safe " + e.input.command;
						if (e.toolName === "throwing") throw new Error("no way");
						if (e.toolName === "blocked") return { block: true, reason: "blocked by a" };
					});
					pi.on("tool_result", (e) => ({ content: [{ type: "text", text: "patched by a" }] }));
					pi.on("message_end", (e) => {
						if (e.message.role === "user") return { message: { ...e.message, content: "replaced" } };
						if (e.message.role === "assistant") return { message: { role: "user", content: "wrong" } };
					});
					pi.on("context", (e) => ({ messages: e.messages.filter((m) => m.content !== "drop") }));
					pi.on("before_agent_start", (e, ctx) => {
						const seen = e.systemPrompt;
						e.systemPromptOptions.appendSystemPrompt = "extra";
						return { message: { customType: "note", content: "seen " + seen, display: false } };
					});
					pi.on("session_before_switch", () => ({ note: "a" }));
					pi.on("session_before_fork", () => ({ cancel: true }));
					pi.on("user_bash", (e) => {
						if (e.command === "fake") return { result: { output: "faked", exitCode: 0, cancelled: false, truncated: false } };
						if (e.command === "ops") return { operations: { exec() {} } };
						if (e.command === "invalid") return { result: { output: 1 } };
						if (e.command === "throw") throw new Error("bash handler failed");
					});
					pi.on("turn_end", (e) => ({ entries: [...e.entries, { type: "custom", customType: "a", data: e.turnIndex }] }));
					pi.on("agent_before_settle", () => ({ entries: [{ type: "invalid" }], continue: true }));
					pi.on("before_provider_headers", (e) => { e.headers["x-a"] = "1"; e.headers.drop = null; });
					pi.on("before_provider_request", (e) => ({ ...e.payload, a: true }));
					pi.on("resources_discover", () => ({ skillPaths: ["/s1"], promptPaths: [] }));
					pi.on("cache_warming_decision", () => ({ action: "warm" }));
					pi.on("agent_start", () => { throw new Error("agent_start failed"); });
					pi.on("project_trust", () => { throw new Error("cannot decide"); });
				}`,
			"b.ts": `
				export default function (pi) {
					pi.on("input", (e) => ({ action: "transform", text: e.text + " [b]", images: [{ type: "image" }] }));
					pi.on("tool_call", (e) => ({ seen: e.input.command }));
					pi.on("tool_result", (e) => ({ isError: true, details: { prev: e.content[0].text } }));
					pi.on("message_end", (e) => (e.message.role === "user" ? { message: { ...e.message, b: e.message.content } } : undefined));
					pi.on("context", (e) => { e.messages.push({ role: "user", content: "added" }); });
					pi.on("context_with_system", (e) => ({ messages: e.messages.slice(1) }));
					pi.on("before_agent_start", (e) => ({ systemPrompt: "forced: " + e.systemPrompt }));
					pi.on("session_before_switch", () => undefined);
					pi.on("session_before_fork", () => { throw new Error("not reached"); });
					pi.on("turn_end", (e) => ({ continue: e.entries.length === 1 }));
					pi.on("before_provider_request", (e) => { e.payload.b = true; });
					pi.on("resources_discover", () => ({ skillPaths: ["/s2"], themePaths: ["/t"] }));
					pi.on("project_trust", () => ({ trusted: "undecided" }));
					pi.on("project_trust", () => ({ trusted: "yes", remember: true }));
				}`,
		});
		pi = await FakePi.start({ cwd: dir });
		const result = await pi.init([p("a.ts"), p("b.ts")]);
		assert.deepEqual(result.errors, []);
	});
	after(async () => {
		await pi.close();
	});

	it("input: transforms chain, handled stops, errors are reported and skipped", async () => {
		assert.deepEqual(await pi.emit("input", { text: "hi", source: "rpc" }), {
			action: "transform",
			text: "hi [a] [b]",
			images: [{ type: "image" }],
		});
		assert.deepEqual(await pi.emit("input", { text: "handle me", source: "rpc" }), { action: "handled" });
		assert.deepEqual(await pi.emit("input", { text: "boom", source: "rpc" }), {
			action: "transform",
			text: "boom [b]",
			images: [{ type: "image" }],
		});
		assert.deepEqual(pi.errors().at(-1), { extensionPath: p("a.ts"), event: "input", error: "input failed" });
	});

	it("tool_call: input mutated in place, block stops, a throw blocks without extension_error", async () => {
		const errorsBefore = pi.errors().length;
		assert.deepEqual(await pi.emit("tool_call", { toolName: "bash", toolCallId: "1", input: { command: "ls" } }), {
			input: { command: "safe ls" },
		});
		assert.deepEqual(await pi.emit("tool_call", { toolName: "blocked", toolCallId: "2", input: {} }), {
			input: {},
			block: true,
			reason: "blocked by a",
		});
		assert.deepEqual(await pi.emit("tool_call", { toolName: "throwing", toolCallId: "3", input: { x: 1 } }), {
			input: { x: 1 },
			block: true,
			reason: "no way",
		});
		assert.equal(pi.errors().length, errorsBefore);
	});

	it("tool_result: patches chain; replaced content drops structuredContent", async () => {
		const value = await pi.emit("tool_result", {
			toolName: "read",
			toolCallId: "1",
			input: {},
			content: [{ type: "text", text: "orig" }],
			details: { d: 1 },
			structuredContent: { s: 1 },
			isError: false,
			usage: undefined,
		});
		assert.deepEqual(value, {
			content: [{ type: "text", text: "patched by a" }],
			details: { prev: "patched by a" },
			isError: true,
		});
	});

	it("message_end: replacements chain; a changed role is reported and ignored", async () => {
		assert.deepEqual(await pi.emit("message_end", { message: { role: "user", content: "orig" } }), {
			message: { role: "user", content: "replaced", b: "replaced" },
		});
		assert.equal(await pi.emit("message_end", { message: { role: "assistant", content: [] } }), null);
		assert.deepEqual(pi.errors().at(-1), {
			extensionPath: p("a.ts"),
			event: "message_end",
			error: "message_end handlers must return a message with the same role",
		});
	});

	it("context: handlers see no system messages; a changed list gets the folded system message back", async () => {
		const messages = [
			{ role: "system", content: "SYS", timestamp: 5 },
			{ role: "user", content: "keep" },
			{ role: "user", content: "drop" },
		];
		assert.deepEqual(await pi.emit("context", { messages }), {
			messages: [
				{ role: "system", content: "SYS", timestamp: 5 },
				{ role: "user", content: "keep" },
				{ role: "user", content: "added" },
			],
		});
		// Without system messages there is nothing to put back; b's in-place push still counts.
		assert.deepEqual(await pi.emit("context", { messages: [{ role: "user", content: "keep" }] }), {
			messages: [
				{ role: "user", content: "keep" },
				{ role: "user", content: "added" },
			],
		});
	});

	it("context_with_system: dropping the leading system message is reported but used", async () => {
		const value = await pi.emit("context_with_system", {
			messages: [
				{ role: "system", content: "SYS" },
				{ role: "user", content: "u" },
			],
		});
		assert.deepEqual(value, { messages: [{ role: "user", content: "u" }] });
		assert.match(pi.errors().at(-1).error, /^Handler removed the leading system message/);
		assert.equal(pi.errors().at(-1).event, "context_with_system");
	});

	it("before_agent_start: messages accumulate, systemPrompt is forced, options edits come back", async () => {
		const value = await pi.emit("before_agent_start", {
			messageType: "user",
			prompt: "do it",
			systemPrompt: "BASE",
			systemPromptOptions: { cwd: "/x", appendSystemPrompt: "" },
		});
		assert.deepEqual(value.messages, [{ customType: "note", content: "seen BASE", display: false }]);
		// b saw the prompt rendered from a's edited options (pi's buildSystemPrompt via the js call).
		assert.equal(value.systemPrompt, `forced: BUILT(${JSON.stringify({ cwd: "/x", appendSystemPrompt: "extra" })})`);
		assert.deepEqual(value.systemPromptOptions, {
			cwd: "/x",
			appendSystemPrompt: "extra",
			forceSystemPrompt: value.systemPrompt,
		});
	});

	it("session_before_*: the last truthy result is kept, the first cancel wins", async () => {
		assert.deepEqual(await pi.emit("session_before_switch", { reason: "new" }), { note: "a" });
		assert.deepEqual(await pi.emit("session_before_fork", { entryId: "e1", position: "before" }), { cancel: true });
		assert.ok(!pi.errors().some((e) => e.error === "not reached"));
	});

	it("user_bash: result, operations, invalid results and throws", async () => {
		assert.deepEqual(await pi.emit("user_bash", { command: "fake", excludeFromContext: false, cwd: dir }), {
			result: { output: "faked", exitCode: 0, cancelled: false, truncated: false },
		});
		// The operations stay in the host; pi runs the command through them by this id.
		const ops = await pi.emit("user_bash", { command: "ops", excludeFromContext: false, cwd: dir });
		assert.deepEqual(Object.keys(ops), ["operationsId"]);
		assert.equal(typeof ops.operationsId, "number");
		assert.equal(await pi.emit("user_bash", { command: "local", excludeFromContext: false, cwd: dir }), null);
		const invalid = await pi.request("emit", { event: "user_bash", payload: { command: "invalid" }, ctx: {} });
		assert.equal(invalid.ok, false);
		assert.match(invalid.error, /^Invalid user_bash handler result/);
		const thrown = await pi.request("emit", { event: "user_bash", payload: { command: "throw" }, ctx: {} });
		assert.deepEqual(thrown, { type: "result", re: thrown.re, ok: false, error: "bash handler failed" });
		assert.deepEqual(pi.errors().at(-1), { extensionPath: p("a.ts"), event: "user_bash", error: "bash handler failed" });
	});

	it("turn_end / agent_before_settle: drafts and continue chain; invalid drafts void the result", async () => {
		const base = { turnIndex: 3, message: {}, toolResults: [], outcome: "completed", entries: [], continue: false };
		assert.deepEqual(await pi.emit("turn_end", { ...base, context: { contextEntries: [] } }), {
			entries: [{ type: "custom", customType: "a", data: 3 }],
			continue: true,
		});
		assert.deepEqual(pi.callsOf("boundary_context").at(-1), {
			event: "turn_end",
			entries: [{ type: "custom", customType: "a", data: 3 }],
		});
		assert.deepEqual(await pi.emit("agent_before_settle", { outcome: "completed", entries: [], continue: false, context: {} }), {
			entries: [],
			continue: false,
		});
		assert.deepEqual(pi.errors().at(-1), {
			extensionPath: p("a.ts"),
			event: "agent_before_settle",
			error: "Invalid boundary entries: bad draft",
		});
	});

	it("provider hooks: headers mutated in place with nulls deleted; payload chain", async () => {
		assert.deepEqual(await pi.emit("before_provider_headers", { headers: { keep: "k", drop: "d" } }), {
			headers: { keep: "k", "x-a": "1" },
		});
		assert.deepEqual(await pi.emit("before_provider_request", { payload: { model: "m" } }), {
			payload: { model: "m", a: true, b: true },
		});
	});

	it("resources_discover, cache_warming_decision, project_trust", async () => {
		assert.deepEqual(await pi.emit("resources_discover", { cwd: dir, reason: "startup" }), {
			skillPaths: [
				{ path: "/s1", extensionPath: p("a.ts") },
				{ path: "/s2", extensionPath: p("b.ts") },
			],
			promptPaths: [],
			themePaths: [{ path: "/t", extensionPath: p("b.ts") }],
		});
		assert.deepEqual(await pi.emit("cache_warming_decision", { action: "skip" }), { action: "warm" });
		assert.deepEqual(await pi.emit("project_trust", { cwd: dir }), {
			trusted: "yes",
			remember: true,
			warnings: [`Extension "${p("a.ts")}" project_trust error: cannot decide`],
		});
	});

	it("notification events: handler errors become extension_error effects; value null", async () => {
		assert.equal(await pi.emit("agent_start", {}), null);
		assert.deepEqual(pi.errors().at(-1), { extensionPath: p("a.ts"), event: "agent_start", error: "agent_start failed" });
		assert.equal(await pi.emit("turn_start", { turnIndex: 0, timestamp: 1 }), null);
		// The extension_error record keeps Pi's key order.
		const line = pi.lines.findLast((l) => l.includes('"extension_error"'));
		assert.ok(line.includes('"params":{"extensionPath":'));
		assert.ok(/"extensionPath":[^,]+,"event":"agent_start","error":"agent_start failed"/.test(line));
	});
});

describe("handlers set", () => {
	it("is reported at load and whenever it changes afterwards", async () => {
		const dir = fixtureDir({
			"h.ts": `
				export default function (pi) {
					pi.on("session_start", () => {});
					pi.registerCommand("sub", {
						handler: async () => {
							const off = pi.on("turn_end", () => {});
							pi.on("turn_end", () => {});
							(globalThis as any).off = off;
						},
					});
					pi.registerCommand("unsub", { handler: async () => (globalThis as any).off() });
				}`,
		});
		const pi = await FakePi.start({ cwd: dir });
		try {
			const result = await pi.init([path.join(dir, "h.ts")]);
			assert.deepEqual(result.handlers, ["session_start"]);
			await pi.ask("command", { name: "sub", args: "", ctx: {} });
			await pi.ask("command", { name: "unsub", args: "", ctx: {} });
			const notes = pi.messages.filter((m) => m.type === "handlers");
			// The second pi.on and the first unsubscribe leave the set unchanged: one notification.
			assert.deepEqual(notes, [{ type: "handlers", events: ["session_start", "turn_end"] }]);
		} finally {
			await pi.close();
		}
	});
});
