// MCP servers extensions register: pi validates each (sync `mcp_validate`), the load result
// lists those registered while loading, and later changes reach pi as `mcp_servers` effects
// next to the extensions' own `mcp_servers_change` handlers.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakePi, fixtureDir } from "./harness.mjs";

describe("MCP server registrations", () => {
	let pi;
	let dir;
	let init;
	const p = (f) => path.join(dir, f);
	before(async () => {
		dir = fixtureDir({
			"one.ts": `
				export default function (pi) {
					pi.registerMcpServer("alpha", { command: "srv", exposure: "codemode-deferred" });
					pi.on("mcp_servers_change", (event, ctx) => ctx.ui.notify("change:" + event.servers.map((s) => s.name).join(",")));
					const attempt = (ctx, name, config) => {
						try { pi.registerMcpServer(name, config); ctx.ui.notify("ok:" + name); }
						catch (e) { ctx.ui.notify("error:" + e.message); }
					};
					pi.registerCommand("reg", {
						handler: async (_a, ctx) => {
							attempt(ctx, "bad", { url: "ftp://x" });
							attempt(ctx, "be_ta", { command: "srv" });
							attempt(ctx, "owned", { command: "srv" });
							attempt(ctx, "be-ta", { command: "srv" });
							pi.unregisterMcpServer("owned");
							pi.unregisterMcpServer("alpha");
							const list = pi.getMcpServers();
							list[0].config.command = "mutated";
							ctx.ui.notify("list:" + JSON.stringify(pi.getMcpServers()));
						},
					});
				}`,
			"two.ts": `export default function (pi) { pi.registerMcpServer("owned", { command: "srv", enabled: false }); }`,
		});
		pi = await FakePi.start({ cwd: dir });
		// pi's check: names with a space and non-http URLs are refused; aliases come back resolved.
		pi.calls.sync.mcp_validate = ({ name, config }) => {
			if (config.url?.startsWith("ftp:")) return { error: `server "${name}": url must be an http or https URL` };
			const resolved = { ...config };
			if (resolved.exposure === "codemode-deferred") resolved.exposure = "codemode";
			return { config: resolved };
		};
		init = await pi.init([p("one.ts"), p("two.ts")]);
	});
	after(async () => {
		await pi.close();
	});

	it("lists the servers registered while loading in the load result, validated by pi", () => {
		assert.deepEqual(init.errors, []);
		assert.deepEqual(init.mcpServers, [
			{ name: "alpha", config: { command: "srv", exposure: "codemode" }, extensionPath: p("one.ts") },
			{ name: "owned", config: { command: "srv", enabled: false }, extensionPath: p("two.ts") },
		]);
		assert.deepEqual(
			pi.callsOf("mcp_validate").map((c) => c.name),
			["alpha", "owned"],
		);
		assert.deepEqual(pi.effects("mcp_servers"), []);
	});

	it("rejects with Pi's texts and reports each later change to pi and to the handlers", async () => {
		await pi.ask("command", { name: "reg", args: "", ctx: {} });
		const messages = pi.uiRecords().map((r) => r.message);
		assert.deepEqual(messages.slice(0, 4), [
			`error:Invalid MCP server registered by extension "${p("one.ts")}": server "bad": url must be an http or https URL`,
			"change:alpha,owned,be_ta",
			"ok:be_ta",
			`error:MCP server "owned" is already registered by extension "${p("two.ts")}"`,
		]);
		assert.equal(messages[4], 'error:MCP server "be-ta" conflicts with registered server "be_ta"');
		const effects = pi.effects("mcp_servers").map((e) => e.servers.map((s) => s.name));
		// Registering be_ta, then unregistering alpha; another extension's server stays.
		assert.deepEqual(effects, [
			["alpha", "owned", "be_ta"],
			["owned", "be_ta"],
		]);
		const list = JSON.parse(messages.at(-1).slice("list:".length));
		assert.deepEqual(list[0], { name: "owned", config: { command: "srv", enabled: false }, extensionPath: p("two.ts") });
	});
});
