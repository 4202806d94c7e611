// Pi's own example extensions load, register and behave in the host. Skipped when the reference
// package is not installed.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, REFERENCE } from "./harness.mjs";

const EXAMPLES = path.join(REFERENCE, "examples", "extensions");
const available = fs.existsSync(EXAMPLES);
const ex = (name) => path.join(EXAMPLES, name);

describe("Pi's example extensions", { skip: !available && "reference package not installed" }, () => {
	let pi;
	let result;
	before(async () => {
		pi = await FakePi.start({ cwd: process.cwd() });
		result = await pi.init(
			["hello.ts", "permission-gate.ts", "plan-mode", "rpc-demo.ts", "todo.ts", "tool-override.ts"].map(ex),
			{ flagValues: { plan: true } },
		);
	});
	after(async () => {
		await pi.close();
	});
	const byName = (name) => result.extensions.find((e) => e.path === ex(name));

	it("all load and register what they declare", () => {
		assert.deepEqual(result.errors, []);
		assert.deepEqual(
			byName("hello.ts").tools.map((t) => [t.name, t.label, t.description]),
			[["hello", "Hello", "A simple greeting tool"]],
		);
		assert.deepEqual(byName("hello.ts").tools[0].parameters, {
			type: "object",
			required: ["name"],
			properties: { name: { type: "string", description: "Name to greet" } },
		});
		assert.deepEqual(byName("permission-gate.ts").events, ["tool_call"]);
		const plan = byName("plan-mode");
		// todo.ts registers /todos as well: both become todos:1, todos:2 in load order.
		assert.deepEqual(
			plan.commands.map((c) => c.name),
			["plan", "todos:1"],
		);
		assert.deepEqual(
			byName("todo.ts").commands.map((c) => c.name),
			["todos:2"],
		);
		assert.deepEqual(plan.flags, [
			{ name: "plan", type: "boolean", default: false, description: "Start in plan mode (read-only exploration)" },
		]);
		assert.deepEqual(
			byName("rpc-demo.ts").commands.map((c) => c.name),
			["rpc-input", "rpc-editor", "rpc-prefill"],
		);
		assert.deepEqual(
			byName("todo.ts").tools.map((t) => t.name),
			["todo"],
		);
		assert.deepEqual(
			byName("tool-override.ts").tools.map((t) => t.name),
			["read"],
		);
		assert.deepEqual(
			result.handlers.sort(),
			[
				"agent_end",
				"before_agent_start",
				"context",
				"session_before_switch",
				"session_start",
				"session_tree",
				"tool_call",
				"turn_end",
				"turn_start",
			].sort(),
		);
	});

	it("session_start: rpc-demo's records, plan mode starts from the --plan flag", async () => {
		await pi.emit("session_start", { reason: "startup" });
		const records = pi
			.uiRecords()
			.map(({ id: _id, ...rest }) => rest)
			.filter((r) => r.method === "setTitle" || r.widgetKey === "rpc-demo" || r.statusKey === "rpc-demo");
		assert.deepEqual(records, [
			{ type: "extension_ui_request", method: "setTitle", title: "pi RPC Demo" },
			{
				type: "extension_ui_request",
				method: "setWidget",
				widgetKey: "rpc-demo",
				widgetLines: ["--- RPC Extension UI Demo ---", "Loaded and ready."],
			},
			{ type: "extension_ui_request", method: "setStatus", statusKey: "rpc-demo", statusText: "Turns: 0" },
		]);
		// plan-mode (loaded before rpc-demo) switched to read-only tools.
		assert.ok(pi.callsOf("set_active_tools").length > 0);
		const planStatus = pi.uiRecords().find((r) => r.statusKey === "plan-mode");
		assert.equal(planStatus.statusText, "\x1b[38;5;3m⏸ plan\x1b[39m");
	});

	it("the hello tool runs", async () => {
		const value = await pi.ask("tool", { tool: "hello", toolCallId: "h1", params: { name: "World" }, ctx: {} });
		assert.deepEqual(value, { content: [{ type: "text", text: "Hello, World!" }], details: { greeted: "World" } });
	});

	it("permission-gate and rpc-demo ask before a dangerous bash command", async () => {
		const pending = pi.emit("tool_call", { toolName: "bash", toolCallId: "b1", input: { command: "rm -rf /tmp/x" } });
		const select = await pi.waitFor((m) => m.method === "ui" && m.params.request.method === "select");
		assert.match(select.params.request.title, /Dangerous command/);
		assert.deepEqual(select.params.request.options, ["Yes", "No"]);
		pi.notify("ui_response", { id: select.params.request.id, value: "No" });
		assert.deepEqual(await pending, { input: { command: "rm -rf /tmp/x" }, block: true, reason: "Blocked by user" });
	});

	it("todo keeps state in tool details", async () => {
		const added = await pi.ask("tool", { tool: "todo", toolCallId: "t1", params: { action: "add", text: "write tests" }, ctx: {} });
		assert.equal(added.details.action, "add");
		assert.deepEqual(added.details.todos, [{ id: 1, text: "write tests", done: false }]);
		const listed = await pi.ask("tool", { tool: "todo", toolCallId: "t2", params: { action: "list" }, ctx: {} });
		assert.match(listed.content[0].text, /write tests/);
	});

	it("tool-override's read blocks sensitive paths", async () => {
		const value = await pi.ask("tool", { tool: "read", toolCallId: "r1", params: { path: "/x/.env" }, ctx: {} });
		assert.deepEqual(value.details, { blocked: true });
		assert.match(value.content[0].text, /^Access denied/);
	});

	it("rpc-demo's commands produce their dialogs", async () => {
		const pending = pi.ask("command", { name: "rpc-editor", args: "", ctx: {} });
		const editor = await pi.waitFor((m) => m.method === "ui" && m.params.request.method === "editor");
		assert.equal(editor.params.request.prefill, "Line 1\nLine 2\nLine 3");
		pi.notify("ui_response", { id: editor.params.request.id, value: "a\nb" });
		await pending;
		assert.equal(pi.uiRecords().at(-1).message, "Editor submitted (2 lines)");
	});
});
