// Commands (invocation names, errors), tools (execute, onUpdate, abort, prepare_args, built-ins),
// and registrations made after loading.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

describe("commands and tools", () => {
	let pi;
	let dir;
	let init;
	const p = (f) => path.join(dir, f);
	before(async () => {
		dir = fixtureDir({
			"one.ts": `
				export default function (pi) {
					pi.registerCommand("dup", { description: "one", handler: async (args, ctx) => ctx.ui.notify("one:" + args) });
					pi.registerCommand("solo", { handler: async () => { throw new Error("solo failed"); } });
					pi.registerCommand("solo", { description: "replaced", handler: async (args, ctx) => ctx.ui.notify("solo2") });
					pi.registerCommand("late", {
						handler: async () => {
							pi.registerCommand("dup", { description: "late", handler: async () => {} });
							pi.registerTool({ name: "later", label: "Later", description: "d", parameters: { type: "object" }, execute: async () => ({ content: [] }) });
						},
					});
					pi.registerTool({
						name: "slow",
						label: "Slow",
						description: "waits for abort",
						parameters: { type: "object", properties: {} },
						async execute(id, params, signal, onUpdate, ctx) {
							onUpdate({ content: [{ type: "text", text: "started " + id }] });
							await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
							setTimeout(() => onUpdate({ content: [{ type: "text", text: "too late" }] }), 0);
							throw new Error("aborted by signal");
						},
					});
					pi.registerTool({
						name: "prep",
						label: "Prep",
						description: "prepares",
						parameters: { type: "object" },
						prepareArguments: (args) => ({ ...args, prepared: true }),
						async execute(id, params, signal, onUpdate, ctx) {
							return { content: [{ type: "text", text: JSON.stringify(params) }], details: { cwd: ctx.cwd, model: ctx.model?.id }, terminate: true, extra: 1 };
						},
					});
				}`,
			"two.ts": `
				import { createBashTool, createReadToolDefinition } from "@earendil-works/pi-coding-agent";
				export default function (pi) {
					pi.registerCommand("dup", { description: "two", handler: async (args, ctx) => ctx.ui.notify("two:" + args) });
					pi.registerTool(createReadToolDefinition(process.cwd()));
					const bash = createBashTool("/somewhere", { commandPrefix: "set -e", spawnHook: (c) => ({ ...c, command: c.command + " # hooked", env: { ONLY: "1" } }) });
					pi.registerTool({ ...bash, name: "mybash", label: "mybash", execute: (id, params, signal, onUpdate, ctx) => bash.execute(id, params, signal, onUpdate) });
					const files = { "/r/a.txt": "remote text" };
					const remoteBash = createBashTool("/r", {
						operations: {
							exec: async (command, cwd, { onData }) => {
								onData(Buffer.from("ran " + command + " in " + cwd));
								return { exitCode: 7 };
							},
						},
					});
					pi.registerTool({ ...remoteBash, name: "rbash", label: "rbash" });
					const remoteRead = createReadToolDefinition("/r", {
						operations: {
							access: async (p) => { if (!(p in files)) { const e = new Error("no " + p); e.code = "ENOENT"; throw e; } },
							readFile: async (p) => Buffer.from(files[p]),
						},
					});
					pi.registerTool({ ...remoteRead, name: "rread", label: "rread" });
				}`,
		});
		pi = await FakePi.start({ cwd: dir });
		init = await pi.init([p("one.ts"), p("two.ts")]);
	});
	after(async () => {
		await pi.close();
	});

	it("duplicate command names become name:1, name:2 in load order; one extension re-registering replaces", () => {
		assert.deepEqual(init.errors, []);
		assert.deepEqual(init.extensions[0].commands, [
			{ name: "dup:1", description: "one" },
			{ name: "solo", description: "replaced" },
			{ name: "late" },
		]);
		assert.deepEqual(init.extensions[1].commands, [{ name: "dup:2", description: "two" }]);
	});

	it("runs commands by invocation name; throws become extension_error command:<name>", async () => {
		await pi.ask("command", { name: "dup:2", args: "  spaced args ", ctx: {} });
		assert.equal(pi.uiRecords().at(-1).message, "two:  spaced args ");
		await pi.ask("command", { name: "solo", args: "", ctx: {} });
		assert.equal(pi.uiRecords().at(-1).message, "solo2");
		const unknown = await pi.request("command", { name: "dup", args: "", ctx: {} });
		assert.equal(unknown.ok, false);
	});

	it("reports registrations made after loading with sync calls", async () => {
		await pi.ask("command", { name: "late", args: "", ctx: {} });
		const [cmd] = pi.callsOf("register_command");
		assert.equal(cmd.path, p("one.ts"));
		// Re-registering its own "dup" replaces it in place (a Map in Pi): still dup:1.
		assert.equal(cmd.name, "dup:1");
		assert.equal(cmd.description, "late");
		assert.deepEqual(
			cmd.commands.map((c) => c.name),
			["dup:1", "solo", "late", "dup:2"],
		);
		const [tool] = pi.callsOf("register_tool");
		assert.deepEqual(tool, {
			path: p("one.ts"),
			name: "later",
			label: "Later",
			description: "d",
			parameters: { type: "object" },
			hasPrepareArguments: false,
		});
	});

	it("tool: onUpdate becomes tool_update, tool_abort fires the signal, late updates are dropped", async () => {
		const pending = pi.request("tool", { tool: "slow", toolCallId: "call-1", params: {}, ctx: {} });
		await pi.waitFor((m) => m.method === "tool_update");
		pi.notify("tool_abort", { toolCallId: "call-1" });
		const result = await pending;
		assert.deepEqual(result, { type: "result", re: result.re, ok: false, error: "aborted by signal" });
		await new Promise((r) => setTimeout(r, 50));
		assert.deepEqual(pi.effects("tool_update"), [
			{ toolCallId: "call-1", partialResult: { content: [{ type: "text", text: "started call-1" }] } },
		]);
	});

	it("tool: result fields, ctx from CtxState; prepare_args", async () => {
		assert.equal(init.extensions[0].tools.find((t) => t.name === "prep").hasPrepareArguments, true);
		const prepared = await pi.ask("prepare_args", { tool: "prep", args: { a: 1 } });
		assert.deepEqual(prepared, { a: 1, prepared: true });
		const value = await pi.ask("tool", {
			tool: "prep",
			toolCallId: "c2",
			params: prepared,
			ctx: { model: { provider: "anthropic", id: "claude-x" }, thinkingLevel: "high", isIdle: false },
		});
		assert.deepEqual(value, {
			content: [{ type: "text", text: '{"a":1,"prepared":true}' }],
			details: { cwd: dir, model: "claude-x" },
			terminate: true,
		});
	});

	it("built-in tool factories carry Pi's definitions and run through run_builtin_tool", async () => {
		const read = init.extensions[1].tools.find((t) => t.name === "read");
		assert.equal(read.promptSnippet, "Read file contents");
		assert.deepEqual(read.constrainedSampling, { type: "json_schema", strict: "prefer" });
		const value = await pi.ask("tool", { tool: "read", toolCallId: "r1", params: { path: "x" }, ctx: {} });
		// The tool's own onUpdate was passed on: pi reports progress under updateId.
		const { updateId, ...request } = value.details.params;
		assert.equal(typeof updateId, "number");
		assert.deepEqual(request, { name: "read", cwd: dir, params: { path: "x" }, toolCallId: "r1" });
		await pi.ask("tool", { tool: "mybash", toolCallId: "b1", params: { command: "ls" }, ctx: {} });
		const call = pi.callsOf("run_builtin_tool").at(-1);
		assert.equal(call.name, "bash");
		assert.equal(call.cwd, "/somewhere");
		assert.equal(call.params.command, "set -e\nls # hooked");
		assert.deepEqual(call.env, { ONLY: "1" });
	});

	it("custom operations: pi runs each one through builtin_op; exec output comes as op_data", async () => {
		const answers = [];
		pi.calls.async.run_builtin_tool = async (params) => {
			assert.equal(typeof params.operationsId, "number");
			const ask = (fields) => pi.ask("builtin_op", { operationsId: params.operationsId, ...fields });
			if (params.name === "read") {
				answers.push(await ask({ op: "access", path: "/r/a.txt" }));
				answers.push(await ask({ op: "detectImageMimeType", path: "/r/a.txt" }));
				answers.push(await ask({ op: "readFile", path: "/r/a.txt" }));
				answers.push(await ask({ op: "access", path: "/r/missing" }));
			} else {
				answers.push(await ask({ op: "exec", execId: 9, command: "ls", cwd: "/r", timeout: null, env: {} }));
			}
			return { content: [{ type: "text", text: "ok" }] };
		};
		try {
			await pi.ask("tool", { tool: "rread", toolCallId: "o1", params: { path: "a.txt" }, ctx: {} });
			await pi.ask("tool", { tool: "rbash", toolCallId: "o2", params: { command: "ls" }, ctx: {} });
			assert.deepEqual(answers, [
				{ value: null },
				{ value: null },
				{ value: Buffer.from("remote text").toString("base64") },
				{ error: { message: "no /r/missing", code: "ENOENT", text: "Error: no /r/missing" } },
				{ value: { exitCode: 7 } },
			]);
			const data = pi.messages.filter((m) => m.type === "op_data" && m.execId === 9);
			assert.deepEqual(
				data.map((m) => Buffer.from(m.data, "base64").toString()),
				["ran ls in /r"],
			);
		} finally {
			delete pi.calls.async.run_builtin_tool;
		}
	});

	it("builtin_update notifications reach the onUpdate the extension passed, before the result", async () => {
		pi.calls.async.run_builtin_tool = (params) => {
			pi.notify("builtin_update", { updateId: params.updateId, partialResult: { content: [{ type: "text", text: "half" }] } });
			return { content: [{ type: "text", text: "done" }], details: {} };
		};
		try {
			const value = await pi.ask("tool", { tool: "mybash", toolCallId: "b2", params: { command: "ls" }, ctx: {} });
			assert.deepEqual(value.content, [{ type: "text", text: "done" }]);
			const updates = pi.effects("tool_update").filter((u) => u.toolCallId === "b2");
			assert.deepEqual(updates, [{ toolCallId: "b2", partialResult: { content: [{ type: "text", text: "half" }] } }]);
		} finally {
			delete pi.calls.async.run_builtin_tool;
		}
	});
});
