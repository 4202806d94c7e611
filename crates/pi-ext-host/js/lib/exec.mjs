// pi.exec(): run a command without a shell and collect its output (Pi's ExecResult semantics).
import { constants as bufferConstants } from "node:buffer";
import { spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import { StringDecoder } from "node:string_decoder";

const DEFAULT_MAX_BUFFER = Math.min(256 * 1024 * 1024, bufferConstants.MAX_STRING_LENGTH);
const FORCE_KILL_DELAY_MS = 5000;

const EXIT_IDLE_MS = 100;

/**
 * Resolves with the exit code (null when killed by a signal); rejects on spawn failure.
 * After "exit" it waits until both pipes ended, or until they stayed quiet for EXIT_IDLE_MS:
 * a detached descendant holding the pipes must not keep us waiting, but output still
 * arriving must not be cut off either.
 */
function waitForExit(child) {
	return new Promise((resolve, reject) => {
		let settled = false;
		let exited = false;
		let exitCode = null;
		let idleTimer;
		let open = (child.stdout ? 1 : 0) + (child.stderr ? 1 : 0);
		const finish = () => {
			if (settled) return;
			settled = true;
			clearTimeout(idleTimer);
			child.stdout?.destroy();
			child.stderr?.destroy();
			resolve(exitCode);
		};
		const armIdle = () => {
			clearTimeout(idleTimer);
			idleTimer = setTimeout(finish, EXIT_IDLE_MS);
		};
		const ended = () => {
			open--;
			if (exited && open <= 0) finish();
		};
		child.stdout?.once("end", ended);
		child.stderr?.once("end", ended);
		child.stdout?.on("data", () => exited && !settled && armIdle());
		child.stderr?.on("data", () => exited && !settled && armIdle());
		child.once("error", (error) => {
			if (settled) return;
			settled = true;
			clearTimeout(idleTimer);
			reject(error);
		});
		child.once("exit", (code) => {
			exited = true;
			exitCode = code;
			if (open <= 0) finish();
			else armIdle();
		});
	});
}

export async function execCommand(command, args, cwd, options) {
	const maxBuffer = options?.maxBuffer ?? DEFAULT_MAX_BUFFER;
	if (!Number.isInteger(maxBuffer) || maxBuffer < 0 || maxBuffer > bufferConstants.MAX_STRING_LENGTH) {
		throw new RangeError(`maxBuffer must be an integer between 0 and ${bufferConstants.MAX_STRING_LENGTH} bytes`);
	}
	const child = spawn(command, args ?? [], { cwd, shell: false, stdio: ["ignore", "pipe", "pipe"] });
	const outDecoder = new StringDecoder("utf8");
	const errDecoder = new StringDecoder("utf8");
	let stdout = "";
	let stderr = "";
	let bytes = 0;
	let truncated = false;
	let killed = false;
	let timeoutId;
	let forceKillId;

	const kill = () => {
		if (killed) return;
		killed = true;
		child.kill("SIGTERM");
		forceKillId = setTimeout(() => {
			if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
		}, FORCE_KILL_DELAY_MS);
	};
	const signal = options?.signal;
	if (signal) {
		if (signal.aborted) kill();
		else signal.addEventListener("abort", kill, { once: true });
	}
	if (options?.timeout && options.timeout > 0) timeoutId = setTimeout(kill, options.timeout);

	// stdout and stderr share one byte budget; past it the pipes close and the child is killed.
	const withinBudget = (data) => {
		if (truncated) return undefined;
		const room = maxBuffer - bytes;
		if (data.length <= room) {
			bytes += data.length;
			return data;
		}
		truncated = true;
		child.stdout?.destroy();
		child.stderr?.destroy();
		kill();
		return room > 0 ? data.subarray(0, room) : undefined;
	};
	child.stdout?.on("data", (data) => {
		const chunk = withinBudget(data);
		if (chunk) stdout += outDecoder.write(chunk);
	});
	child.stderr?.on("data", (data) => {
		const chunk = withinBudget(data);
		if (chunk) stderr += errDecoder.write(chunk);
	});

	let code;
	try {
		code = await waitForExit(child);
	} catch (error) {
		if (!(error instanceof Error)) throw error;
		code = 1;
		if (!stderr) stderr = error.message;
	} finally {
		clearTimeout(timeoutId);
		clearTimeout(forceKillId);
		signal?.removeEventListener("abort", kill);
	}
	if (!truncated) {
		stdout += outDecoder.end();
		stderr += errDecoder.end();
	}
	const exitCode = code ?? (child.signalCode ? 128 + (osConstants.signals[child.signalCode] ?? 0) : 1);
	return { stdout, stderr, code: truncated && exitCode === 0 ? 1 : exitCode, killed, truncated };
}
