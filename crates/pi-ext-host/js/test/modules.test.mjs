// The host-provided modules against Pi's own implementations (when the reference package is
// installed): truncation, built-in tool definitions, theme escapes, pi-ai helpers, text width.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { REFERENCE } from "./harness.mjs";

const hasReference = fs.existsSync(REFERENCE);
const ref = (p) => import(path.join(REFERENCE, p));
const refTui = () => import(path.join(REFERENCE, "..", "pi-tui", "dist", "index.js"));

// Host modules read `host.config`; importing them needs no channel.
const ours = {
	truncate: () => import("../modules/truncate.mjs"),
	codingAgent: () => import("../modules/coding-agent.mjs"),
	piAi: () => import("../modules/pi-ai.mjs"),
	tui: () => import("../modules/pi-tui.mjs"),
	theme: () => import("../lib/theme.mjs"),
};

function samples() {
	const out = ["", "one", "one\n", "a\nb\nc", "\n\n\n", "x".repeat(100), "é😀中".repeat(40)];
	let seed = 7;
	const rand = (n) => {
		seed = (seed * 1103515245 + 12345) % 2 ** 31;
		return seed % n;
	};
	const alphabet = ["a", "b", "\n", "é", "😀", "中", " ", "\n\n"];
	for (let i = 0; i < 60; i++) {
		let s = "";
		const len = rand(400);
		for (let j = 0; j < len; j++) s += alphabet[rand(alphabet.length)];
		out.push(s);
	}
	return out;
}

describe("truncation helpers", () => {
	it("match Pi's results", { skip: !hasReference && "no reference" }, async () => {
		const mine = await ours.truncate();
		const pi = await ref("dist/core/tools/truncate.js");
		for (const text of samples()) {
			for (const options of [{}, { maxLines: 3 }, { maxBytes: 17 }, { maxLines: 5, maxBytes: 40 }, { maxBytes: 1 }]) {
				assert.deepEqual(mine.truncateHead(text, options), pi.truncateHead(text, options));
				assert.deepEqual(mine.truncateTail(text, options), pi.truncateTail(text, options));
			}
			assert.deepEqual(mine.truncateLine(text, 20), pi.truncateLine(text, 20));
			assert.deepEqual(mine.truncateLine(text), pi.truncateLine(text));
		}
		for (const n of [0, 1, 1023, 1024, 1536, 1048575, 1048576, 5 * 1048576 + 123]) {
			assert.equal(mine.formatSize(n), pi.formatSize(n));
		}
		assert.equal(mine.DEFAULT_MAX_BYTES, 51200);
		assert.equal(mine.DEFAULT_MAX_LINES, 2000);
	});
});

describe("built-in tool definitions", () => {
	it("carry Pi's names, descriptions, schemas and prompt metadata", { skip: !hasReference && "no reference" }, async () => {
		const mine = await ours.codingAgent();
		const pi = await ref("dist/index.js");
		const data = (tool) =>
			JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(tool).map(([k, v]) => [k, typeof v === "function" ? "<fn>" : v]))));
		const strip = ({ renderCall: _a, renderResult: _b, renderShell: _c, ...rest }) => rest;
		for (const name of ["Read", "Bash", "Edit", "Write", "Grep", "Find", "Ls", "PowerShell"]) {
			assert.deepEqual(data(mine[`create${name}ToolDefinition`]("/tmp")), strip(data(pi[`create${name}ToolDefinition`]("/tmp"))), name);
			const ourTool = data(mine[`create${name}Tool`]("/tmp"));
			const piTool = data(pi[`create${name}Tool`]("/tmp"));
			assert.deepEqual(Object.keys(ourTool).sort(), Object.keys(piTool).sort(), name);
		}
		assert.deepEqual(
			mine.createCodingTools("/tmp").map((t) => t.name),
			pi.createCodingTools("/tmp").map((t) => t.name),
		);
		assert.deepEqual(
			mine.createReadOnlyTools("/tmp").map((t) => t.name),
			pi.createReadOnlyTools("/tmp").map((t) => t.name),
		);
		const edit = mine.createEditToolDefinition("/tmp");
		const piEdit = pi.createEditToolDefinition("/tmp");
		for (const args of [
			{ path: "p", oldText: "a", newText: "b" },
			{ path: "p", edits: '[{"oldText":"a","newText":"b"}]' },
			{ path: "p", edits: { oldText: "a", newText: "b" } },
			{ path: "p", edits: [{ oldText: "x", newText: "y" }], oldText: "a", newText: "b" },
		]) {
			assert.deepEqual(edit.prepareArguments(structuredClone(args)), piEdit.prepareArguments(structuredClone(args)));
		}
	});
});

describe("theme", () => {
	it("dark and light tables reproduce Pi's escapes", { skip: !hasReference && "no reference" }, async () => {
		const { createTheme } = await ours.theme();
		const piTheme = await ref("dist/modes/interactive/theme/theme.js");
		const { THEME_TOKENS } = await ref("dist/modes/interactive/theme/theme-tokens.js");
		for (const name of ["dark", "light", "system"]) {
			piTheme.initTheme(name, false);
			const mine = createTheme(name);
			assert.equal(mine.getColorMode(), piTheme.theme.getColorMode());
			for (const [token, descriptor] of Object.entries(THEME_TOKENS)) {
				if (descriptor.slot === "background") assert.equal(mine.bg(token, "x"), piTheme.theme.bg(token, "x"), token);
				else assert.equal(mine.fg(token, "x"), piTheme.theme.fg(token, "x"), token);
			}
		}
	});
});

describe("pi-ai helpers", () => {
	it("StringEnum, uuidv7, calculateCost, event streams", async () => {
		const ai = await ours.piAi();
		assert.deepEqual(JSON.parse(JSON.stringify(ai.StringEnum(["a", "b"], { description: "d", default: "" }))), {
			type: "string",
			enum: ["a", "b"],
			description: "d",
		});
		const ids = Array.from({ length: 50 }, () => ai.uuidv7());
		for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		assert.deepEqual([...ids].sort(), ids);
		const usage = { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, cost: {} };
		ai.calculateCost({ cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } }, usage);
		assert.ok(Math.abs(usage.cost.total - 0.0105) < 1e-12);
		const stream = ai.createAssistantMessageEventStream();
		setTimeout(() => {
			stream.push({ type: "start" });
			stream.push({ type: "done", message: { role: "assistant", timestamp: Date.now() } });
			stream.push({ type: "ignored after done" });
		}, 5);
		const seen = [];
		for await (const event of stream) seen.push(event.type);
		assert.deepEqual(seen, ["start", "done"]);
		assert.equal((await stream.result()).role, "assistant");
		const messages = [
			{ role: "system", content: "base", timestamp: 1, toolsAdded: [{ name: "a" }, { name: "b" }] },
			{ role: "user", content: "u" },
			{ role: "system", content: "more", sections: { s: "S" }, toolsRemoved: [{ name: "a" }] },
		];
		assert.deepEqual(ai.getCurrentSystemMessage(messages), {
			role: "system",
			content: "base\n\nmore",
			sections: { s: "S" },
			toolsAdded: [{ name: "b" }],
			timestamp: 1,
		});
		assert.equal(ai.getCurrentSystemPrompt(messages), "base\n\nmore\n\nS");
	});

	it("match Pi's transcript helpers", { skip: !hasReference && "no reference" }, async () => {
		const ai = await ours.piAi();
		const pi = await ref("dist/core/extensions/pi-ai-extension-view.js");
		const messages = [
			{ role: "system", content: [{ type: "text", text: "x" }], timestamp: 3, sections: { a: "1", b: "2" } },
			{ role: "system", content: "", sections: { a: null }, toolsAdded: [{ name: "t", description: "d", parameters: {} }] },
			{ role: "user", content: "u" },
		];
		assert.deepEqual(ai.getCurrentSystemMessage(messages), pi.getCurrentSystemMessage(messages));
		assert.deepEqual(ai.collapseSystemMessages({ messages }), pi.collapseSystemMessages({ messages }));
		for (const model of [{ reasoning: false }, { reasoning: true }, { reasoning: true, thinkingLevelMap: { xhigh: "x", low: null } }]) {
			for (const level of ["off", "minimal", "low", "medium", "high", "xhigh", "max", "bogus"]) {
				assert.equal(ai.clampThinkingLevel(model, level), pi.clampThinkingLevel(model, level));
			}
		}
	});
});

describe("pi-tui helpers", () => {
	it("match pi-tui on common text", { skip: !hasReference && "no reference" }, async () => {
		const mine = await ours.tui();
		const pi = await refTui();
		const texts = ["hello world", "", "\x1b[38;5;5mcolored\x1b[39m text", "中文字符测试", "tab\there", "emoji 😀 ok", "é accent"];
		for (const text of texts) {
			assert.equal(mine.visibleWidth(text), pi.visibleWidth(text), text);
			for (const width of [1, 3, 5, 8, 40]) {
				assert.equal(mine.truncateToWidth(text, width), pi.truncateToWidth(text, width), `${text} @${width}`);
				assert.equal(mine.truncateToWidth(text, width, "…", true), pi.truncateToWidth(text, width, "…", true), `${text} @${width} pad`);
			}
		}
		assert.deepEqual(mine.wrapTextWithAnsi("the quick brown fox jumps", 10), pi.wrapTextWithAnsi("the quick brown fox jumps", 10));
		assert.equal(mine.Key.ctrl("c"), pi.Key.ctrl("c"));
		assert.equal(mine.matchesKey("\x03", "ctrl+c"), pi.matchesKey("\x03", "ctrl+c"));
		assert.equal(mine.matchesKey("\x1b", mine.Key.escape), pi.matchesKey("\x1b", pi.Key.escape));
		assert.equal(mine.matchesKey("\r", "enter"), pi.matchesKey("\r", "enter"));
		assert.equal(mine.CURSOR_MARKER, pi.CURSOR_MARKER);
		const container = new mine.Container();
		container.addChild(new mine.Text("x", 0, 0));
		assert.deepEqual(container.render(80), []);
		assert.equal(container.anything("goes"), undefined);
	});
});
