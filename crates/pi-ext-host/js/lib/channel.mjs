// The host side of PROTOCOL.md: every message to pi goes out on one blocking descriptor (fd 3)
// in program order; requests and async results come in on fd 4; sync-call replies on fd 5.
import fs from "node:fs";
import net from "node:net";
import { envChanges } from "./env-sync.mjs";

/** Reopens an inherited pipe through procfs so it is close-on-exec, then closes the original. */
export function reopenInherited(fd, flags) {
	for (const dir of ["/proc/self/fd", "/dev/fd"]) {
		try {
			const reopened = fs.openSync(`${dir}/${fd}`, flags);
			fs.closeSync(fd);
			return reopened;
		} catch {}
	}
	// Sockets cannot be reopened (ENXIO); keep the inherited descriptor then.
	return fd;
}

/** Serialises like JSON.stringify, but never throws (BigInt → number, cycles → omitted). */
export function toJsonLine(value) {
	try {
		return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? Number(v) : v));
	} catch {
		const seen = new WeakSet();
		return JSON.stringify(value, (_k, v) => {
			if (typeof v === "bigint") return Number(v);
			if (typeof v === "object" && v !== null) {
				if (seen.has(v)) return undefined;
				seen.add(v);
			}
			return v;
		});
	}
}

export class Channel {
	#outFd;
	#syncFd;
	#inFd;
	#nextCallId = 1;
	#pendingCalls = new Map();
	#syncBuffer = Buffer.alloc(0);
	#onMessage = () => {};
	#onEnd = () => {};

	constructor({ outFd, inFd, syncFd }) {
		this.#outFd = outFd;
		this.#inFd = inFd;
		this.#syncFd = syncFd;
	}

	/** Writes one JSON line to pi, whole, before returning; `process.env` changes go first. */
	send(message) {
		// Stream events are many and come from provider code, not from the handlers that set env.
		if (message.type !== "stream_event") {
			const env = envChanges();
			if (env) this.#write({ type: "call", method: "env", params: env });
		}
		this.#write(message);
	}

	#write(message) {
		const buffer = Buffer.from(`${toJsonLine(message)}\n`, "utf8");
		let offset = 0;
		while (offset < buffer.length) {
			try {
				offset += fs.writeSync(this.#outFd, buffer, offset, buffer.length - offset);
			} catch (error) {
				if (error.code === "EAGAIN") continue;
				// pi is gone (it exits without waiting for us): nothing left to tell it, and the
				// host ends when its input closes.
				if (error.code === "EPIPE") return;
				throw error;
			}
		}
	}

	/** A call pi answers on fd 5 before it reads anything else from us; blocks the host. */
	callSync(method, params = {}) {
		const id = this.#nextCallId++;
		this.send({ type: "call", sync: true, id, method, params });
		for (;;) {
			const reply = this.#readSyncLine();
			if (reply.re !== id) continue; // a stale reply cannot happen with a correct pi; skip it
			if (reply.ok) return reply.value;
			throw new Error(reply.error ?? `${method} failed`);
		}
	}

	#readSyncLine() {
		const chunk = Buffer.alloc(65536);
		for (;;) {
			const nl = this.#syncBuffer.indexOf(0x0a);
			if (nl !== -1) {
				const line = this.#syncBuffer.subarray(0, nl).toString("utf8");
				this.#syncBuffer = this.#syncBuffer.subarray(nl + 1);
				if (line.trim() === "") continue;
				return JSON.parse(line);
			}
			let n;
			try {
				n = fs.readSync(this.#syncFd, chunk, 0, chunk.length, null);
			} catch (error) {
				if (error.code === "EAGAIN") continue;
				throw error;
			}
			if (n === 0) throw new Error("pi closed the sync reply channel");
			this.#syncBuffer = Buffer.concat([this.#syncBuffer, chunk.subarray(0, n)]);
		}
	}

	/** A call pi answers later on fd 4. */
	call(method, params = {}) {
		const id = this.#nextCallId++;
		return new Promise((resolve, reject) => {
			this.#pendingCalls.set(id, { resolve, reject, method });
			this.send({ type: "call", id, method, params });
		});
	}

	/** An effect: pi acts on it and never answers. */
	effect(method, params = {}) {
		this.send({ type: "call", method, params });
	}

	notify(type, fields = {}) {
		this.send({ type, ...fields });
	}

	result(re, value) {
		this.send({ type: "result", re, ok: true, value: value === undefined ? null : value });
	}

	failure(re, error) {
		this.send({ type: "result", re, ok: false, error });
	}

	onMessage(handler) {
		this.#onMessage = handler;
	}

	onEnd(handler) {
		this.#onEnd = handler;
	}

	/** Starts reading fd 4 as a stream of JSON lines. */
	start() {
		const socket = new net.Socket({ fd: this.#inFd, readable: true, writable: false });
		let pending = "";
		socket.setEncoding("utf8");
		socket.on("data", (text) => {
			pending += text;
			let nl = pending.indexOf("\n");
			while (nl !== -1) {
				const line = pending.slice(0, nl);
				pending = pending.slice(nl + 1);
				if (line.trim() !== "") this.#dispatch(line);
				nl = pending.indexOf("\n");
			}
		});
		socket.on("end", () => this.#onEnd());
		socket.on("error", () => this.#onEnd());
		return socket;
	}

	#dispatch(line) {
		let message;
		try {
			message = JSON.parse(line);
		} catch {
			process.stderr.write(`pi extension host: ignoring a malformed line from pi\n`);
			return;
		}
		if (message.type === "result" && typeof message.re === "number") {
			const pending = this.#pendingCalls.get(message.re);
			if (!pending) return;
			this.#pendingCalls.delete(message.re);
			if (message.ok) pending.resolve(message.value);
			else pending.reject(new Error(message.error ?? `${pending.method} failed`));
			return;
		}
		this.#onMessage(message);
	}
}
