// The same extensions and events through Pi 1.6.0's own runner (in this process) and through the
// host: composed values and reported errors must agree. Skipped without the reference package.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir, REFERENCE } from "./harness.mjs";

const hasReference = fs.existsSync(REFERENCE);

const A = `
export default function (pi) {
	pi.on("input", (e) => {
		if (e.text === "stop") return { action: "handled" };
		if (e.text === "fail") throw new Error("input failed");
		if (e.text === "same") return { action: "transform", text: e.text };
		return { action: "transform", text: e.text.toUpperCase() };
	});
	pi.on("tool_call", (e) => {
		e.input.seenBy = ["a"];
		if (e.input.block) return { block: true, reason: "a says no" };
		if (e.input.explode) throw new Error("a exploded");
		return { note: "a" };
	});
	pi.on("tool_result", (e) => {
		if (e.input.skip) return undefined;
		if (e.input.fail) throw new Error("result failed");
		return { content: [{ type: "text", text: "A:" + e.content[0].text }] };
	});
	pi.on("message_end", (e) => {
		if (e.message.role === "assistant") return { message: { role: "user" } };
		return { message: { ...e.message, a: true } };
	});
	pi.on("context", (e) => {
		if (e.messages.some((m) => m.content === "inplace")) { e.messages[0].content = "edited"; return; }
		return { messages: e.messages.filter((m) => m.content !== "drop") };
	});
	pi.on("before_provider_request", (e) => (e.payload.replace ? { replaced: true } : undefined));
	pi.on("before_provider_headers", (e) => { e.headers.a = "1"; });
	pi.on("user_bash", (e) => {
		if (e.command === "res") return { result: { output: "o", exitCode: 0, cancelled: false, truncated: false } };
		if (e.command === "bad") return { result: {} };
		if (e.command === "throw") throw new Error("user_bash threw");
	});
	pi.on("turn_end", (e) => ({ entries: [...e.entries, { type: "custom", customType: "a" }] }));
	pi.on("session_before_switch", (e) => (e.reason === "new" ? { cancel: true } : { from: "a" }));
	pi.on("agent_end", () => { throw new Error("agent_end failed"); });
}`;

const B = `
export default function (pi) {
	pi.on("input", (e) => ({ action: "transform", text: e.text + "!", images: e.text === "img" ? [{ type: "image", data: "x" }] : undefined }));
	pi.on("tool_call", (e) => { e.input.seenBy.push("b"); });
	pi.on("tool_result", (e) => ({ isError: true, structuredContent: { s: e.content[0].text } }));
	pi.on("message_end", (e) => ({ message: { ...e.message, b: true } }));
	pi.on("context", (e) => { e.messages.push({ role: "user", content: "b" }); });
	pi.on("context_with_system", (e) => ({ messages: [...e.messages, { role: "user", content: "cws" }] }));
	pi.on("before_provider_request", (e) => { e.payload.b = 1; });
	pi.on("before_provider_headers", (e) => { e.headers.drop = undefined; });
	pi.on("turn_end", (e) => ({ continue: e.entries.length > 0 }));
	pi.on("session_before_switch", () => ({ from: "b" }));
}`;

describe("host vs Pi's ExtensionRunner", { skip: !hasReference && "reference package not installed" }, () => {
	let host;
	let runner;
	let dir;
	const piErrors = [];
	before(async () => {
		dir = fixtureDir({ "a.ts": A, "b.ts": B });
		const files = [path.join(dir, "a.ts"), path.join(dir, "b.ts")];
		const { loadExtensions } = await import(path.join(REFERENCE, "dist/core/extensions/loader.js"));
		const { ExtensionRunner } = await import(path.join(REFERENCE, "dist/core/extensions/runner.js"));
		const loaded = await loadExtensions(files, dir);
		assert.deepEqual(loaded.errors, []);
		runner = new ExtensionRunner(loaded.extensions, loaded.runtime, dir, {}, {});
		runner.onError(({ extensionPath, event, error }) => piErrors.push({ extensionPath, event, error }));
		host = await FakePi.start({ cwd: dir });
		const result = await host.init(files);
		assert.deepEqual(result.errors, []);
	});
	after(async () => {
		await host?.close();
	});

	/** Runs `ours` and `theirs`, compares values (as JSON) and the errors each reported meanwhile. */
	async function same(ours, theirs, normalise = (v) => v) {
		const hostErrorsBefore = host.errors().length;
		const piErrorsBefore = piErrors.length;
		let mine;
		let pis;
		try {
			mine = { value: await ours() };
		} catch (error) {
			mine = { error: error.message };
		}
		try {
			pis = { value: normalise(await theirs()) };
		} catch (error) {
			pis = { error: error.message };
		}
		assert.deepEqual(JSON.parse(JSON.stringify(mine)), JSON.parse(JSON.stringify(pis)));
		assert.deepEqual(host.errors().slice(hostErrorsBefore), piErrors.slice(piErrorsBefore));
	}

	it("input", async () => {
		for (const text of ["hi", "stop", "fail", "same", "img"]) {
			await same(
				() => host.emit("input", { text, source: "rpc" }),
				() => runner.emitInput(text, undefined, "rpc", undefined),
			);
		}
	});

	it("tool_call", async () => {
		for (const input of [{}, { block: true }, { explode: true }]) {
			const event = { type: "tool_call", toolName: "t", toolCallId: "1", input: structuredClone(input) };
			await same(
				() => host.emit("tool_call", { toolName: "t", toolCallId: "1", input }),
				async () => {
					try {
						const result = await runner.emitToolCall(event);
						const value = { input: event.input };
						if (result?.block) Object.assign(value, { block: true, reason: result.reason });
						return value;
					} catch (error) {
						// Pi's agent session turns the throw into a block with the message.
						return { input: event.input, block: true, reason: error.message };
					}
				},
			);
		}
	});

	it("tool_result", async () => {
		for (const input of [{}, { skip: true }, { fail: true }]) {
			const payload = { toolName: "t", toolCallId: "1", input, content: [{ type: "text", text: "x" }], details: {}, isError: false, structuredContent: { old: 1 } };
			await same(
				() => host.emit("tool_result", payload),
				async () => (await runner.emitToolResult({ type: "tool_result", ...structuredClone(payload) })) ?? null,
			);
		}
	});

	it("message_end", async () => {
		for (const message of [{ role: "user", content: "u" }, { role: "assistant", content: [] }]) {
			await same(
				() => host.emit("message_end", { message }),
				async () => {
					const replaced = await runner.emitMessageEnd({ type: "message_end", message: structuredClone(message) });
					return replaced ? { message: replaced } : null;
				},
			);
		}
	});

	it("context then context_with_system", async () => {
		for (const messages of [
			[{ role: "system", content: "S", timestamp: 1 }, { role: "user", content: "keep" }, { role: "user", content: "drop" }],
			[{ role: "user", content: "inplace" }],
		]) {
			await same(
				async () => {
					const first = await host.emit("context", { messages });
					const second = await host.emit("context_with_system", { messages: first?.messages ?? messages });
					return second?.messages ?? first?.messages ?? messages;
				},
				() => runner.emitContext(structuredClone(messages)),
			);
		}
	});

	it("provider request and headers", async () => {
		for (const payload of [{ model: "m" }, { replace: true }]) {
			await same(
				async () => (await host.emit("before_provider_request", { payload }))?.payload ?? payload,
				() => runner.emitBeforeProviderRequest(structuredClone(payload)),
			);
		}
		await same(
			async () => (await host.emit("before_provider_headers", { headers: { keep: "k" } })).headers,
			() => runner.emitBeforeProviderHeaders({ keep: "k" }),
		);
	});

	it("user_bash", async () => {
		for (const command of ["res", "bad", "throw", "none"]) {
			await same(
				() => host.emit("user_bash", { command, excludeFromContext: false, cwd: dir }),
				async () => (await runner.emitUserBash({ type: "user_bash", command, excludeFromContext: false, cwd: dir })) ?? null,
			);
		}
	});

	it("turn_end boundary", async () => {
		const base = { turnIndex: 0, outcome: "completed" };
		await same(
			() => host.emit("turn_end", { ...base, entries: [], continue: false, context: {} }),
			async () => {
				const { entries, continue: cont } = await runner.emitBoundary({ type: "turn_end", ...base }, async () => ({}));
				return { entries, continue: cont };
			},
		);
	});

	it("session_before_switch and plain notifications", async () => {
		for (const reason of ["new", "resume"]) {
			await same(
				() => host.emit("session_before_switch", { reason }),
				async () => (await runner.emit({ type: "session_before_switch", reason })) ?? null,
			);
		}
		await same(
			() => host.emit("agent_end", { messages: [] }),
			async () => (await runner.emit({ type: "agent_end", messages: [] })) ?? null,
		);
	});
});

describe("load errors vs Pi's loader", { skip: !hasReference && "reference package not installed" }, () => {
	it("gives the same error texts", async () => {
		const dir = fixtureDir({
			"nodefault.ts": "export const x = 1;",
			"throws.ts": `export default function () { throw new Error("boom"); }`,
			"action.ts": `export default function (pi) { pi.appendEntry("x"); }`,
			"setmodel.ts": `export default async function (pi) { await pi.setModel({}); }`,
			"badtool.ts": `export default (pi) => pi.registerTool({ name: "bad", parameters: null });`,
			"badcmd.ts": `export default (pi) => pi.registerCommand(42, { handler() {} });`,
			"nohandler.ts": `export default (pi) => pi.registerCommand("nh", {});`,
			"badflag.ts": `export default (pi) => pi.registerFlag("f", { type: "string", default: 1 });`,
			"badprov.ts": `export default (pi) => pi.registerProvider("p");`,
			"ok.ts": `export default (pi) => pi.registerCommand("ok", { handler() {} });`,
		});
		const files = fs.readdirSync(dir).sort().map((f) => path.join(dir, f));
		const { loadExtensions } = await import(path.join(REFERENCE, "dist/core/extensions/loader.js"));
		const theirs = await loadExtensions(files, dir);
		const host = await FakePi.start({ cwd: dir });
		try {
			const ours = await host.init(files);
			assert.deepEqual(ours.errors, theirs.errors);
			assert.deepEqual(
				ours.extensions.map((e) => e.path),
				theirs.extensions.map((e) => e.path),
			);
		} finally {
			await host.close();
		}
	});
});
