// A fake `pi` for tests: starts the real host (`node main.mjs`) with fds 3/4/5 as real pipes
// (FIFOs), speaks pi's side of PROTOCOL.md, answers calls from canned state and records every
// line the host sends.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const HOST_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const FIXTURES = path.join(HOST_DIR, "test", "fixtures");
export const REFERENCE = "/work/main/conformance/.reference/pi16/node_modules/@earendil-works/pi-coding-agent";

const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;

export function defaultState() {
	return {
		cwd: process.cwd(),
		sessionId: "session-1",
		sessionFile: "/tmp/session-1.jsonl",
		sessionName: undefined,
		entries: [{ type: "message", id: "e1", parentId: null, message: { role: "user", content: "hi" } }],
		labels: {},
		activeTools: ["read", "bash", "edit", "write"],
		allTools: [{ name: "read", description: "Read", parameters: { type: "object" } }],
		settings: {},
		thinkingLevel: "medium",
		models: [
			{ provider: "anthropic", id: "claude-x", api: "anthropic-messages", reasoning: true },
			{ provider: "openai", id: "gpt-x", api: "openai-responses" },
		],
		systemPrompt: "SYSTEM",
	};
}

export class FakePi {
	constructor(child, fds, dir) {
		this.child = child;
		this.fds = fds;
		this.dir = dir;
		this.state = defaultState();
		/** Every message from the host, parsed, in order. */
		this.messages = [];
		/** The raw JSON lines, for byte-exact comparisons. */
		this.lines = [];
		this.stderr = "";
		this.calls = { sync: {}, async: {} };
		this.nextId = 1;
		this.pending = new Map();
		this.waiters = [];
		this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
	}

	/** Starts a host. `env` adds variables; `cwd` defaults to the test process cwd. */
	static async start({ env = {}, cwd = process.cwd(), args = [] } = {}) {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-ext-host-test-"));
		const fifo = (name) => {
			const p = path.join(dir, name);
			execFileSync("mkfifo", [p]);
			return p;
		};
		const toPi = fifo("to-pi");
		const toHost = fifo("to-host");
		const sync = fifo("sync");
		// Open the ends so no open() blocks: readers first (non-blocking), then writers.
		const piRead = fs.openSync(toPi, O_RDONLY | O_NONBLOCK);
		const hostWrite = fs.openSync(toPi, O_WRONLY | O_NONBLOCK);
		const hostRead = fs.openSync(toHost, O_RDONLY | O_NONBLOCK);
		const piWrite = fs.openSync(toHost, O_WRONLY);
		const hostSync = fs.openSync(sync, O_RDONLY | O_NONBLOCK);
		const piSync = fs.openSync(sync, O_WRONLY);
		const child = spawn(process.execPath, ["--no-warnings", ...args, path.join(HOST_DIR, "main.mjs")], {
			cwd,
			env: { ...process.env, PI_EXT_HOST: "1", ...env },
			stdio: ["ignore", "pipe", "pipe", hostWrite, hostRead, hostSync],
		});
		for (const fd of [hostWrite, hostRead, hostSync]) fs.closeSync(fd);
		const pi = new FakePi(child, { piRead, piWrite, piSync }, dir);
		pi.state.cwd = cwd;
		child.stdout.on("data", (d) => {
			pi.stderr += d.toString();
		});
		child.stderr.on("data", (d) => {
			pi.stderr += d.toString();
		});
		const socket = new net.Socket({ fd: piRead, readable: true, writable: false });
		pi.socket = socket;
		let buffer = "";
		socket.setEncoding("utf8");
		socket.on("data", (text) => {
			buffer += text;
			let nl = buffer.indexOf("\n");
			while (nl !== -1) {
				const line = buffer.slice(0, nl);
				buffer = buffer.slice(nl + 1);
				if (line) pi.#receive(line);
				nl = buffer.indexOf("\n");
			}
		});
		socket.on("error", () => {});
		return pi;
	}

	#receive(line) {
		const message = JSON.parse(line);
		this.lines.push(line);
		this.messages.push(message);
		if (message.type === "result") {
			const pending = this.pending.get(message.re);
			if (pending) {
				this.pending.delete(message.re);
				pending(message);
			}
		} else if (message.type === "call" && message.sync) {
			this.#answer(message, (reply) => this.#writeSync(reply));
		} else if (message.type === "call" && message.id !== undefined) {
			this.#answer(message, (reply) => this.send({ type: "result", ...reply }));
		}
		for (const waiter of [...this.waiters]) {
			if (waiter.predicate(message)) {
				this.waiters.splice(this.waiters.indexOf(waiter), 1);
				waiter.resolve(message);
			}
		}
	}

	#answer(message, reply) {
		const table = message.sync ? this.calls.sync : this.calls.async;
		const handler = table[message.method] ?? (message.sync ? this.defaultSync : this.defaultAsync).bind(this);
		const respond = (value) => reply({ re: message.id, ok: true, value: value === undefined ? null : value });
		const fail = (error) => reply({ re: message.id, ok: false, error: error?.message ?? String(error) });
		try {
			const value = handler(message.params, message.method);
			if (value && typeof value.then === "function") value.then(respond, fail);
			else respond(value);
		} catch (error) {
			fail(error);
		}
	}

	defaultSync(params, method) {
		const s = this.state;
		switch (method) {
			case "session": {
				const answers = {
					cwd: s.cwd,
					sessionId: s.sessionId,
					sessionFile: s.sessionFile,
					sessionDir: path.dirname(s.sessionFile),
					sessionName: s.sessionName ?? null,
					entries: s.entries,
					branch: s.entries,
					leafId: s.entries.at(-1)?.id ?? null,
					leafEntry: s.entries.at(-1) ?? null,
					header: { type: "session", id: s.sessionId },
					tree: [],
					contextEntries: s.entries,
					projection: { entries: s.entries },
				};
				if (params.what === "entry") return s.entries.find((e) => e.id === params.id) ?? null;
				if (params.what === "label") return s.labels[params.id] ?? null;
				return answers[params.what];
			}
			case "state": {
				const answers = {
					activeTools: s.activeTools,
					allTools: s.allTools,
					commands: [],
					settings: s.settings,
					contextUsage: { tokens: 2, contextWindow: 100000, percent: 0.002 },
					systemPrompt: s.systemPrompt,
					systemPromptOptions: { cwd: s.cwd },
					scopedModels: [],
					projectTrusted: true,
					thinkingLevel: s.thinkingLevel,
					availableThinkingLevels: ["off", "low", "medium", "high"],
				};
				return answers[params.what];
			}
			case "models": {
				if (params.what === "all" || params.what === "available") return s.models;
				if (params.what === "find") return s.models.find((m) => m.provider === params.provider && m.id === params.id) ?? null;
				if (params.what === "providers") return [...new Set(s.models.map((m) => m.provider))];
				return true;
			}
			case "append_entry": {
				const id = `e${s.entries.length + 1}`;
				s.entries.push({ type: "custom", id, customType: params.customType, data: params.data });
				return id;
			}
			case "set_session_name":
				s.sessionName = params.name;
				return null;
			case "set_label":
				s.labels[params.entryId] = params.label;
				return null;
			case "set_thinking_level":
				s.thinkingLevel = params.level;
				return null;
			case "boundary_context":
				if (params.entries.some((e) => e.type === "invalid")) throw new Error("bad draft");
				return { contextEntries: [...s.entries, ...params.entries], canContinue: true };
			case "js":
				if (params.fn === "buildSystemPrompt") return `BUILT(${JSON.stringify(params.args[0])})`;
				if (params.fn === "stripFrontmatter") return String(params.args[0]).replace(/^---[\s\S]*?---\n/, "");
				return { fn: params.fn, args: params.args };
			default:
				return null;
		}
	}

	async defaultAsync(params, method) {
		switch (method) {
			case "set_model":
				return true;
			case "new_session":
			case "fork":
			case "switch_session":
			case "navigate_tree":
				return { cancelled: false };
			case "run_builtin_tool":
				return { content: [{ type: "text", text: `builtin ${params.name}` }], details: { params, cwd: params.cwd } };
			case "execute_tool":
				return { toolCall: { name: params.name }, result: { content: [], details: {} }, isError: false };
			case "complete":
				return { role: "assistant", content: [{ type: "text", text: "completed" }], stopReason: "stop" };
			default:
				return null;
		}
	}

	send(message) {
		const buffer = Buffer.from(`${JSON.stringify(message)}\n`);
		let offset = 0;
		while (offset < buffer.length) offset += fs.writeSync(this.fds.piWrite, buffer, offset);
	}

	#writeSync(reply) {
		const buffer = Buffer.from(`${JSON.stringify(reply)}\n`);
		let offset = 0;
		while (offset < buffer.length) offset += fs.writeSync(this.fds.piSync, buffer, offset);
	}

	/** Sends a request and resolves with the host's `result` message. */
	request(type, fields = {}) {
		const id = this.nextId++;
		return new Promise((resolve) => {
			this.pending.set(id, resolve);
			this.send({ id, type, ...fields });
		});
	}

	/** Like request(), but resolves with `value` and rejects on `ok:false`. */
	async ask(type, fields = {}) {
		const result = await this.request(type, fields);
		if (!result.ok) throw new Error(result.error);
		return result.value;
	}

	notify(type, fields = {}) {
		this.send({ type, ...fields });
	}

	init(extensions, fields = {}) {
		return this.ask("init", {
			cwd: this.state.cwd,
			agentDir: "/tmp/pi-agent-test",
			mode: "rpc",
			hasUI: true,
			piVersion: "1.6.0",
			extensions: extensions.map((p) => (typeof p === "string" ? { path: p, sourceInfo: { path: p, source: "cli" } } : p)),
			flagValues: {},
			...fields,
		});
	}

	emit(event, payload = {}, ctx = {}) {
		return this.ask("emit", { event, payload, ctx: { sessionVersion: 1, isIdle: true, ...ctx } });
	}

	/** Resolves with the first message (already received or future) matching `predicate`. */
	waitFor(predicate, timeoutMs = 5000) {
		const found = this.messages.find(predicate);
		if (found) return Promise.resolve(found);
		return new Promise((resolve, reject) => {
			const waiter = { predicate, resolve };
			this.waiters.push(waiter);
			setTimeout(() => {
				const index = this.waiters.indexOf(waiter);
				if (index !== -1) {
					this.waiters.splice(index, 1);
					reject(new Error(`timed out waiting; stderr:\n${this.stderr}`));
				}
			}, timeoutMs).unref();
		});
	}

	effects(method) {
		return this.messages.filter((m) => m.type === "call" && m.id === undefined && m.method === method).map((m) => m.params);
	}

	callsOf(method) {
		return this.messages.filter((m) => m.type === "call" && m.method === method).map((m) => m.params);
	}

	uiRecords() {
		return this.effects("ui").map((p) => p.request);
	}

	/** The raw `request` JSON of each ui effect, exactly as the host serialised it. */
	uiRecordJson() {
		return this.lines
			.filter((line) => line.includes('"method":"ui"'))
			.map((line) => {
				const start = line.indexOf('"request":') + '"request":'.length;
				return line.slice(start, line.length - 2);
			});
	}

	errors() {
		return this.effects("extension_error");
	}

	async close() {
		try {
			fs.closeSync(this.fds.piWrite);
		} catch {}
		const result = await Promise.race([this.exited, new Promise((r) => setTimeout(() => r("timeout"), 3000))]);
		if (result === "timeout") this.child.kill("SIGKILL");
		try {
			fs.closeSync(this.fds.piSync);
		} catch {}
		this.socket.destroy();
		fs.rmSync(this.dir, { recursive: true, force: true });
		return result;
	}
}

/** Writes `files` ({relativePath: content}) into a fresh temp dir and returns its path. */
export function fixtureDir(files) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-ext-fixture-"));
	for (const [name, content] of Object.entries(files)) {
		const full = path.join(dir, name);
		fs.mkdirSync(path.dirname(full), { recursive: true });
		fs.writeFileSync(full, content);
	}
	return dir;
}
