// Process hygiene and start-up: Node version check, vendored packages extracted atomically,
// extension output kept off the protocol, descriptors not inherited, exit on EOF.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { tarEntries, extractTgz } from "../lib/tar.mjs";
import { ensureVendored } from "../lib/vendor.mjs";
import { FakePi, fixtureDir, HOST_DIR } from "./harness.mjs";
import zlib from "node:zlib";

const VENDOR = path.resolve(HOST_DIR, "..", "vendor");

describe("start-up", () => {
	it("refuses Node < 22 with one line on stderr and exit code 3", () => {
		const result = spawnSync(
			process.execPath,
			["--import", 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.1.0"})', path.join(HOST_DIR, "main.mjs")],
			{ encoding: "utf8" },
		);
		assert.equal(result.status, 3);
		assert.equal(result.stderr, "pi extension host: Node.js >= 22 is required (found 20.1.0)\n");
		assert.equal(result.stdout, "");
	});

	it("reads npm tarballs (pax and long names included) and extracts them", () => {
		const names = [...tarEntries(zlib.gunzipSync(fs.readFileSync(path.join(VENDOR, "jiti-2.7.0.tgz"))))].map((e) => e.name);
		assert.ok(names.includes("package/package.json"));
		assert.ok(names.includes("package/lib/jiti.mjs"));
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tar-test-"));
		extractTgz(path.join(VENDOR, "typebox-1.3.27.tgz"), dir);
		assert.equal(JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version, "1.3.27");
		fs.rmSync(dir, { recursive: true, force: true });
	});

	it("extracts the vendored packages once, also when several hosts start together", async () => {
		const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), "vendor-test-"));
		const script = `import(${JSON.stringify(path.join(HOST_DIR, "lib", "vendor.mjs"))}).then((m) => m.ensureVendored(${JSON.stringify(hostDir)}, ${JSON.stringify(VENDOR)}))`;
		const runs = Array.from({ length: 4 }, () =>
			new Promise((resolve) => spawn(process.execPath, ["-e", script], { stdio: "inherit" }).on("exit", resolve)),
		);
		assert.deepEqual(await Promise.all(runs), [0, 0, 0, 0]);
		const modules = fs.readdirSync(path.join(hostDir, "node_modules")).sort();
		assert.deepEqual(modules, ["jiti", "typebox"]);
		ensureVendored(hostDir, VENDOR);
		assert.equal(JSON.parse(fs.readFileSync(path.join(hostDir, "node_modules", "jiti", "package.json"), "utf8")).version, "2.7.0");
		fs.rmSync(hostDir, { recursive: true, force: true });
	});
});

describe("process hygiene", () => {
	it("keeps extension output off the protocol and the pipes out of child processes", async () => {
		const dir = fixtureDir({
			"noisy.ts": `
				import { execSync } from "node:child_process";
				export default function (pi) {
					console.log("log line");
					console.info("info line");
					process.stdout.write("stdout line\\n");
					pi.registerCommand("fds", {
						handler: async (_a, ctx) => ctx.ui.notify(execSync("ls -l /proc/self/fd/").toString()),
					});
				}`,
		});
		const pi = await FakePi.start({ cwd: dir });
		try {
			const result = await pi.init([path.join(dir, "noisy.ts")]);
			assert.deepEqual(result.errors, []);
			assert.match(pi.stderr, /log line\ninfo line\nstdout line\n/);
			// Every line on fd 3 is protocol JSON.
			for (const line of pi.lines) assert.doesNotThrow(() => JSON.parse(line));
			await pi.ask("command", { name: "fds", args: "", ctx: {} });
			if (fs.existsSync("/proc/self/fd")) {
				// The protocol FIFOs live in pi.dir: a child of an extension must hold none of them.
				const listing = pi.uiRecords().at(-1).message;
				assert.ok(listing.includes("/proc/"), listing);
				assert.ok(!listing.includes(pi.dir), listing);
			}
		} finally {
			const exit = await pi.close();
			assert.deepEqual(exit, { code: 0, signal: null });
		}
	});
});

describe("pi as a subprocess", () => {
	it("process.argv[1] runs the pi binary named by init's piPath", async () => {
		const dir = fixtureDir({
			"fake-pi": '#!/bin/sh\necho "fake pi $*"\nexit 4\n',
			"sub.ts": `
				import { spawnSync } from "node:child_process";
				export default (pi) => pi.registerCommand("sub", { handler: async (_a, ctx) => {
					const r = spawnSync(process.execPath, [process.argv[1], "--mode", "json"], { encoding: "utf8" });
					ctx.ui.notify(JSON.stringify({ out: r.stdout, status: r.status }));
				} });`,
		});
		fs.chmodSync(path.join(dir, "fake-pi"), 0o755);
		const pi = await FakePi.start({ cwd: dir });
		try {
			await pi.init([path.join(dir, "sub.ts")], { piPath: path.join(dir, "fake-pi") });
			await pi.ask("command", { name: "sub", args: "", ctx: {} });
			assert.deepEqual(JSON.parse(pi.uiRecords().at(-1).message), { out: "fake pi --mode json\n", status: 4 });
		} finally {
			await pi.close();
		}
	});
});
