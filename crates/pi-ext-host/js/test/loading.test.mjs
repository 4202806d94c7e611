// Loading: entry points, async factories, Pi's load-error texts, staged registration, conflicts,
// flags during loading, and the module cache across reinit/reload.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

const NOT_INITIALIZED =
	"Failed to load extension: Extension runtime not initialized. Action methods cannot be called during extension loading.";

describe("loading", () => {
	let pi;
	let dir;
	before(async () => {
		dir = fixtureDir({
			"file.ts": `export default function (pi: any) { pi.registerCommand("file", { handler: async () => {} }); }`,
			"dirext/index.ts": `export default (pi) => pi.registerCommand("fromindex", { handler() {} });`,
			"pkg/package.json": JSON.stringify({ name: "pkg", pi: { extensions: ["./a.ts", "./b.js"] } }),
			"pkg/a.ts": `export default (pi) => pi.registerCommand("pkga", { handler() {} });`,
			"pkg/b.js": `module.exports = function (pi) { pi.registerCommand("pkgb", { handler() {} }); };`,
			"async.ts": `
				export default async function (pi) {
					await new Promise((r) => setTimeout(r, 50));
					(globalThis as any).order = [...((globalThis as any).order ?? []), "async"];
					pi.registerCommand("async", { handler() {} });
				}`,
			"after-async.ts": `
				export default function (pi) {
					(globalThis as any).order = [...((globalThis as any).order ?? []), "after"];
					pi.registerCommand("order", { description: (globalThis as any).order.join(","), handler() {} });
				}`,
			"parse-error.ts": "export default function (pi) { const = 1; }",
			"nodefault.ts": "export const x = 1;",
			"throws.ts": `export default function () { throw new Error("boom in factory"); }`,
			"rejects.ts": `export default async function () { await null; throw new Error("async boom"); }`,
			"action.ts": `export default function (pi) { pi.sendMessage({ customType: "x", content: "y" }); }`,
			"getname.ts": `export default function (pi) { pi.getSessionName(); }`,
			"setmodel.ts": `export default async function (pi) { await pi.setModel({ provider: "a", id: "b" }); }`,
			"badtool.ts": `export default (pi) => pi.registerTool({ name: "bad", parameters: [] });`,
			"badcmd.ts": `export default (pi) => pi.registerCommand("", { handler() {} });`,
			"nohandler.ts": `export default (pi) => pi.registerCommand("nh", { description: "x" });`,
			"badflag.ts": `export default (pi) => pi.registerFlag("f", { type: "boolean", default: "yes" });`,
			"badprov.ts": `export default (pi) => pi.registerProvider("p");`,
			"tool1.ts": `export default (pi) => pi.registerTool({ name: "echo", parameters: { type: "object" }, execute() {} });`,
			"tool2.ts": `export default (pi) => pi.registerTool({ name: "echo", parameters: { type: "object" }, execute() {} });`,
			"flag1.ts": `export default (pi) => pi.registerFlag("plan", { type: "boolean" });`,
			"flag2.ts": `export default (pi) => pi.registerFlag("plan", { type: "boolean" });`,
		});
		pi = await FakePi.start({ cwd: dir });
	});
	after(async () => {
		await pi.close();
	});

	it("loads files, index directories, package manifests and CommonJS", async () => {
		const result = await pi.init(["file.ts", path.join(dir, "dirext"), path.join(dir, "pkg")]);
		assert.deepEqual(result.errors, []);
		assert.deepEqual(
			result.extensions.map((e) => [e.path, e.commands.map((c) => c.name)]),
			[
				["file.ts", ["file"]],
				[path.join(dir, "dirext"), ["fromindex"]],
				[path.join(dir, "pkg", "a.ts"), ["pkga"]],
				[path.join(dir, "pkg", "b.js"), ["pkgb"]],
			],
		);
	});

	it("awaits async factories one after another", async () => {
		const result = await pi.init(["async.ts", "after-async.ts"]);
		assert.deepEqual(result.errors, []);
		assert.equal(result.extensions[1].commands[0].description, "async,after");
	});

	it("reports every load failure with Pi's texts, in load order, then conflicts", async () => {
		const p = (f) => path.join(dir, f);
		const result = await pi.init(
			[
				"tool1.ts",
				"flag1.ts",
				"nodefault.ts",
				"throws.ts",
				"rejects.ts",
				"action.ts",
				"getname.ts",
				"setmodel.ts",
				"badtool.ts",
				"badcmd.ts",
				"nohandler.ts",
				"badflag.ts",
				"badprov.ts",
				"tool2.ts",
				"flag2.ts",
			].map(p),
		);
		assert.deepEqual(result.errors, [
			{ path: p("nodefault.ts"), error: `Extension does not export a valid factory function: ${p("nodefault.ts")}` },
			{ path: p("throws.ts"), error: "Failed to load extension: boom in factory" },
			{ path: p("rejects.ts"), error: "Failed to load extension: async boom" },
			{ path: p("action.ts"), error: NOT_INITIALIZED },
			{ path: p("getname.ts"), error: NOT_INITIALIZED },
			{ path: p("setmodel.ts"), error: "Failed to load extension: Extension runtime not initialized" },
			{
				path: p("badtool.ts"),
				error: `Failed to load extension: Tool "bad" registered by extension "${p("badtool.ts")}" must define an object parameter schema.`,
			},
			{
				path: p("badcmd.ts"),
				error: `Failed to load extension: Command registered by extension "${p("badcmd.ts")}" must have a non-empty string name. Use pi.registerCommand("name", { description, handler }).`,
			},
			{
				path: p("nohandler.ts"),
				error: `Failed to load extension: Command "/nh" registered by extension "${p("nohandler.ts")}" must define handler().`,
			},
			{
				path: p("badflag.ts"),
				error: 'Failed to load extension: Invalid default for flag "f": expected boolean, got string',
			},
			{ path: p("badprov.ts"), error: "Failed to load extension: Provider config is required when registering by name" },
			{ path: p("tool2.ts"), error: `Tool "echo" conflicts with ${p("tool1.ts")}` },
			{ path: p("flag2.ts"), error: `Flag "--plan" conflicts with ${p("flag1.ts")}` },
		]);
		// Conflicting extensions stay loaded; failed ones are gone.
		assert.deepEqual(
			result.extensions.map((e) => path.basename(e.path)),
			["tool1.ts", "flag1.ts", "tool2.ts", "flag2.ts"],
		);
	});

	it("reports a parse error as a load failure", async () => {
		const result = await pi.init(["parse-error.ts"]);
		assert.equal(result.extensions.length, 0);
		assert.equal(result.errors.length, 1);
		assert.match(result.errors[0].error, /^Failed to load extension: .*/s);
	});
});

describe("staged registration", () => {
	let pi;
	let dir;
	before(async () => {
		dir = fixtureDir({
			"partial.ts": `
				export default function (pi) {
					(globalThis as any).partialPi = pi;
					pi.on("agent_start", () => {});
					pi.registerProvider("queued", { api: "x", models: [] });
					pi.events.on("chan", () => { throw new Error("should be unsubscribed"); });
					pi.registerFlag("late", { type: "string", default: "d" });
					throw new Error("half way");
				}`,
			"ok.ts": `
				export default function (pi) {
					pi.registerFlag("mode", { type: "string", default: "fast" });
					pi.registerFlag("verbose", { type: "boolean" });
					const during = pi.getFlag("mode");
					const other = pi.getFlag("late");
					pi.registerProvider("prov", { api: "my-api", baseUrl: "http://x", streamSimple() {}, models: [{ id: "m" }] });
					pi.registerProvider("gone", { api: "y", models: [] });
					pi.unregisterProvider("gone");
					pi.registerCommand("flags", {
						description: JSON.stringify({ during, other }),
						handler: async (_a, ctx) => {
							ctx.ui.notify(JSON.stringify({ mode: pi.getFlag("mode"), verbose: pi.getFlag("verbose"), late: pi.getFlag("late") }));
						},
					});
					pi.registerCommand("partial", {
						handler: async (_a, ctx) => {
							try { (globalThis as any).partialPi.on("x", () => {}); } catch (e) { ctx.ui.notify(e.message); }
							pi.events.emit("chan", 1);
						},
					});
				}`,
		});
		pi = await FakePi.start({ cwd: dir });
	});
	after(async () => {
		await pi.close();
	});

	it("discards a failed extension whole and commits the others", async () => {
		const result = await pi.init(["partial.ts", "ok.ts"].map((f) => path.join(dir, f)), {
			flagValues: { mode: "slow", verbose: "ignored", late: "x" },
		});
		assert.equal(result.errors.length, 1);
		assert.deepEqual(result.handlers, []);
		const [ok] = result.extensions;
		assert.deepEqual(JSON.parse(ok.commands[0].description), { during: "fast" });
		assert.deepEqual(ok.flags, [
			{ name: "mode", type: "string", default: "fast" },
			{ name: "verbose", type: "boolean" },
		]);
		assert.deepEqual(ok.providers, [
			{ name: "prov", config: { api: "my-api", baseUrl: "http://x", streamSimple: true, models: [{ id: "m" }] } },
		]);
		await pi.ask("command", { name: "partial", args: "", ctx: {} });
		await pi.ask("command", { name: "flags", args: "", ctx: {} });
		const notes = pi.uiRecords().map((r) => r.message);
		assert.equal(notes[0], `Extension "${path.join(dir, "partial.ts")}" failed to load and its API is no longer active.`);
		// CLI values are applied after loading: booleans become true, unregistered names are ignored.
		assert.deepEqual(JSON.parse(notes[1]), { mode: "slow", verbose: true });
		assert.deepEqual(pi.errors(), []);
	});

	it("apply_flags sets values pi matched", async () => {
		await pi.ask("apply_flags", { values: { mode: "turbo" } });
		await pi.ask("command", { name: "flags", args: "", ctx: {} });
		assert.equal(JSON.parse(pi.uiRecords().at(-1).message).mode, "turbo");
	});
});

describe("module cache", () => {
	let pi;
	let dir;
	before(async () => {
		dir = fixtureDir({
			"counter.ts": `
				let count = 0;
				export default function (pi) {
					count++;
					pi.registerCommand("count", { description: String(count), handler() {} });
				}`,
		});
		pi = await FakePi.start({ cwd: dir });
	});
	after(async () => {
		await pi.close();
	});

	it("keeps module instances across reinit and re-imports on reload or a cwd change", async () => {
		const desc = (r) => r.extensions[0].commands[0].description;
		assert.equal(desc(await pi.init([path.join(dir, "counter.ts")])), "1");
		assert.equal(desc(await pi.ask("reinit", { reason: "new", cwd: dir })), "2");
		assert.equal(desc(await pi.ask("reload", { cwd: dir, extensions: [{ path: path.join(dir, "counter.ts") }] })), "1");
		assert.equal(desc(await pi.ask("reinit", { reason: "new", cwd: dir })), "2");
		assert.equal(desc(await pi.ask("reinit", { reason: "resume", cwd: path.dirname(dir) })), "1");
	});
});

describe("pre-trust pass", () => {
	let pi;
	let dir;
	before(async () => {
		dir = fixtureDir({
			"trust.ts": `
				let runs = 0;
				export default function (pi) {
					runs++;
					pi.on("project_trust", async () => ({ trusted: "yes", remember: true }));
					pi.registerCommand("trust", { description: String(runs), handler() {} });
				}`,
			"throws.ts": `export default (pi) => pi.on("project_trust", () => { throw new Error("cannot tell"); });`,
			"proj.ts": `export default (pi) => pi.registerCommand("proj", { handler() {} });`,
			"broken.ts": `export default function () { throw new Error("broken"); }`,
		});
		pi = await FakePi.start({ cwd: dir });
	});
	after(async () => {
		await pi.close();
	});

	it("answers project_trust unbound, then extend keeps those extensions and loads the rest in order", async () => {
		const p = (f) => path.join(dir, f);
		const first = await pi.init([p("throws.ts"), p("trust.ts"), p("broken.ts")], { preTrust: true });
		assert.deepEqual(first.handlers, ["project_trust"]);
		const decision = await pi.emit("project_trust", { cwd: dir });
		assert.deepEqual(decision, {
			trusted: "yes",
			remember: true,
			warnings: [`Extension "${p("throws.ts")}" project_trust error: cannot tell`],
		});
		const all = await pi.ask("extend", {
			extensions: [p("proj.ts"), p("throws.ts"), p("trust.ts"), p("broken.ts")].map((x) => ({ path: x })),
		});
		assert.deepEqual(
			all.extensions.map((e) => [path.basename(e.path), e.commands.map((c) => `${c.name}:${c.description ?? ""}`)]),
			[
				["proj.ts", ["proj:"]],
				["throws.ts", []],
				["trust.ts", ["trust:1"]],
			],
		);
		assert.deepEqual(all.errors, [{ path: p("broken.ts"), error: "Failed to load extension: broken" }]);
	});
});
