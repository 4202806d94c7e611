// The RPC UI context: extension_ui_request records byte for byte, dialogs with responses,
// timeouts and signals, ui_prompt events, degraded methods, and the UI-less modes.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const EXT = `
export default function (pi) {
	const log = (ctx, value) => ctx.ui.notify(JSON.stringify(value === undefined ? "undefined" : value));
	pi.registerCommand("records", {
		handler: async (_args, ctx) => {
			ctx.ui.notify("plain");
			ctx.ui.notify("warn", "warning");
			ctx.ui.setStatus("k", "text");
			ctx.ui.setStatus("k", undefined);
			ctx.ui.setWidget("w", ["l1", "l2"]);
			ctx.ui.setWidget("w", ["l1"], { placement: "belowEditor" });
			ctx.ui.setWidget("w", undefined);
			ctx.ui.setWidget("w", () => ({ render: () => [] }));
			ctx.ui.setTitle("Title \\u00e9");
			ctx.ui.setEditorText("edit me");
			ctx.ui.pasteToEditor("pasted");
		},
	});
	pi.registerCommand("dialogs", {
		handler: async (_args, ctx) => {
			log(ctx, await ctx.ui.select("Pick", ["a", "b"]));
			log(ctx, await ctx.ui.confirm("Sure?", "Really"));
			log(ctx, await ctx.ui.input("Name", "placeholder"));
			log(ctx, await ctx.ui.editor("Edit", "prefill"));
			log(ctx, await ctx.ui.select("Cancel me", ["x"]));
		},
	});
	pi.registerCommand("timeouts", {
		handler: async (_args, ctx) => {
			const results = await Promise.all([
				ctx.ui.select("S", ["a"], { timeout: 30 }),
				ctx.ui.confirm("C", "m", { timeout: 30 }),
				ctx.ui.input("I", undefined, { timeout: 30 }),
			]);
			log(ctx, results);
			const aborted = new AbortController();
			aborted.abort();
			log(ctx, await ctx.ui.confirm("never shown", "m", { signal: aborted.signal }));
			const later = new AbortController();
			setTimeout(() => later.abort(), 20);
			log(ctx, await ctx.ui.select("aborted later", ["a"], { signal: later.signal }));
		},
	});
	pi.registerCommand("degraded", {
		handler: async (_args, ctx) => {
			log(ctx, {
				custom: (await ctx.ui.custom(() => ({}))) ?? "undefined",
				editorText: ctx.ui.getEditorText(),
				setTheme: ctx.ui.setTheme("dark"),
				themes: ctx.ui.getAllThemes(),
				theme: ctx.ui.getTheme("dark") ?? "undefined",
				expanded: ctx.ui.getToolsExpanded(),
				mode: ctx.mode,
				hasUI: ctx.hasUI,
				unsub: typeof ctx.ui.onTerminalInput(() => {}),
			});
			ctx.ui.setWorkingMessage("x");
			ctx.ui.setFooter(() => ({}));
			ctx.ui.setHeader(undefined);
			ctx.ui.setEditorComponent(undefined);
			ctx.ui.addAutocompleteProvider(() => ({}));
		},
	});
	pi.registerCommand("theme", {
		handler: async (_args, ctx) => {
			const t = ctx.ui.theme;
			ctx.ui.setStatus("t", [t.fg("accent", "a"), t.fg("muted", "m"), t.bg("selectedBg", "s"), t.bold("b")].join("|"));
			try { t.fg("nope", "x"); } catch (e) { ctx.ui.notify(e.message); }
		},
	});
	pi.on("ui_prompt_start", (e, ctx) => ctx.ui.notify("start " + JSON.stringify(e)));
	pi.on("ui_prompt_end", (e, ctx) => ctx.ui.notify("end " + JSON.stringify(e)));
}
`;

describe("RPC UI", () => {
	let pi;
	before(async () => {
		const dir = fixtureDir({ "ui.ts": EXT });
		pi = await FakePi.start({ cwd: dir });
		await pi.init([path.join(dir, "ui.ts")]);
	});
	after(async () => {
		await pi.close();
	});

	const since = (n) => pi.uiRecordJson().slice(n);
	const withId = (json) => JSON.parse(json).id;

	it("fire-and-forget records match Pi's key order and omit undefined keys", async () => {
		const start = pi.uiRecordJson().length;
		await pi.ask("command", { name: "records", args: "", ctx: {} });
		const records = since(start);
		for (const json of records) assert.match(withId(json), UUID);
		const expected = [
			'"method":"notify","message":"plain"',
			'"method":"notify","message":"warn","notifyType":"warning"',
			'"method":"setStatus","statusKey":"k","statusText":"text"',
			'"method":"setStatus","statusKey":"k"',
			'"method":"setWidget","widgetKey":"w","widgetLines":["l1","l2"]',
			'"method":"setWidget","widgetKey":"w","widgetLines":["l1"],"widgetPlacement":"belowEditor"',
			'"method":"setWidget","widgetKey":"w"',
			'"method":"setTitle","title":"Title é"',
			'"method":"set_editor_text","text":"edit me"',
			'"method":"set_editor_text","text":"pasted"',
		];
		assert.deepEqual(
			records,
			expected.map((body, i) => `{"type":"extension_ui_request","id":"${withId(records[i])}",${body}}`),
		);
	});

	it("dialogs wait for ui_response; unknown ids are ignored; cancelled gives the default", async () => {
		const start = pi.uiRecords().length;
		const done = pi.request("command", { name: "dialogs", args: "", ctx: {} });
		const answer = async (method, response) => {
			const record = await pi.waitFor(
				(m) => m.method === "ui" && m.params.request.method === method && !m.answered,
			);
			record.answered = true;
			pi.notify("ui_response", { id: "not-a-pending-id", value: "ignored" });
			pi.notify("ui_response", { id: record.params.request.id, ...response });
			return record.params.request;
		};
		const select = await answer("select", { value: "b" });
		assert.deepEqual(Object.keys(select), ["type", "id", "method", "title", "options"]);
		const confirm = await answer("confirm", { confirmed: true });
		assert.deepEqual(Object.keys(confirm), ["type", "id", "method", "title", "message"]);
		const input = await answer("input", { value: "typed" });
		assert.equal(input.placeholder, "placeholder");
		const editor = await answer("editor", { value: "edited" });
		assert.equal(editor.prefill, "prefill");
		// The cancelled select: answered with cancelled:true.
		const cancelRecord = await pi.waitFor((m) => m.method === "ui" && m.params.request.title === "Cancel me");
		pi.notify("ui_response", { id: cancelRecord.params.request.id, cancelled: true });
		await done;
		const notes = pi
			.uiRecords()
			.slice(start)
			.filter((r) => r.method === "notify" && !/^(start|end) /.test(r.message))
			.map((r) => JSON.parse(r.message));
		assert.deepEqual(notes, ["b", true, "typed", "edited", "undefined"]);
	});

	it("ui_prompt_start/end run around dialogs", async () => {
		const prompts = pi
			.uiRecords()
			.filter((r) => r.method === "notify" && /^(start|end) /.test(r.message))
			.map((r) => r.message);
		assert.deepEqual(prompts.slice(0, 4), [
			'start {"type":"ui_prompt_start","reason":"ui_prompt","kind":"select","title":"Pick"}',
			'end {"type":"ui_prompt_end","reason":"ui_prompt","kind":"select","title":"Pick"}',
			'start {"type":"ui_prompt_start","reason":"ui_prompt","kind":"confirm","title":"Sure?"}',
			'end {"type":"ui_prompt_end","reason":"ui_prompt","kind":"confirm","title":"Sure?"}',
		]);
	});

	it("timeouts and signals resolve the defaults; an aborted signal shows nothing", async () => {
		const start = pi.uiRecords().length;
		await pi.ask("command", { name: "timeouts", args: "", ctx: {} });
		const records = pi.uiRecords().slice(start).filter((r) => !/^(start|end) /.test(r.message ?? ""));
		assert.deepEqual(
			records.map((r) => [r.method, r.title, r.timeout]),
			[
				["select", "S", 30],
				["confirm", "C", 30],
				["input", "I", 30],
				["notify", undefined, undefined],
				["notify", undefined, undefined],
				["select", "aborted later", undefined],
				["notify", undefined, undefined],
			],
		);
		const notes = records.filter((r) => r.method === "notify").map((r) => JSON.parse(r.message));
		assert.deepEqual(notes, [[null, false, null], false, "undefined"]);
	});

	it("degraded methods answer like Pi's RPC mode and write nothing", async () => {
		const start = pi.uiRecords().length;
		await pi.ask("command", { name: "degraded", args: "", ctx: {} });
		const records = pi.uiRecords().slice(start).filter((r) => !/^(start|end) /.test(r.message ?? ""));
		assert.equal(records.length, 1);
		assert.deepEqual(JSON.parse(records[0].message), {
			custom: "undefined",
			editorText: "",
			setTheme: { success: false, error: "Theme switching not supported in RPC mode" },
			themes: [],
			theme: "undefined",
			expanded: false,
			mode: "rpc",
			hasUI: true,
			unsub: "function",
		});
	});

	it("theme colours use Pi's system-theme escapes", async () => {
		await pi.ask("command", { name: "theme", args: "", ctx: {} });
		const status = pi.uiRecords().findLast((r) => r.method === "setStatus");
		assert.equal(status.statusText, "\x1b[38;5;5ma\x1b[39m|\x1b[39m\x1b[2mm\x1b[22;39m|\x1b[49ms\x1b[49m|b");
		assert.equal(pi.uiRecords().at(-1).message, "Unknown theme color: nope");
	});
});

describe("UI-less modes", () => {
	it("json mode: hasUI false, dialogs resolve defaults without records", async () => {
		const dir = fixtureDir({
			"q.ts": `export default (pi) => pi.registerCommand("q", { handler: async (_a, ctx) => {
				const values = [ctx.mode, ctx.hasUI, await ctx.ui.select("t", ["a"]), await ctx.ui.confirm("t", "m"), ctx.ui.setTheme("x")];
				ctx.ui.notify("nothing");
				pi.appendEntry("result", values);
			} });`,
		});
		const pi = await FakePi.start({ cwd: dir });
		try {
			await pi.init([path.join(dir, "q.ts")], { mode: "json", hasUI: false });
			await pi.ask("command", { name: "q", args: "", ctx: {} });
			assert.deepEqual(pi.uiRecords(), []);
			assert.deepEqual(pi.callsOf("append_entry")[0].data, [
				"json",
				false,
				null,
				false,
				{ success: false, error: "UI not available" },
			]);
		} finally {
			await pi.close();
		}
	});
});
