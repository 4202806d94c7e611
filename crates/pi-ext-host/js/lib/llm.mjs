// Event streams (pi-ai's EventStream contract) and LLM calls that pi performs for extensions:
// `complete` is one async call; `stream` is an async call whose events arrive as `stream_event`
// notifications with the stream's id.
import { randomUUID } from "node:crypto";
import { callAsync } from "./state.mjs";

/** An async-iterable queue of events that ends with a final result (`result()`). */
export class EventStream {
	#queue = [];
	#waiting = [];
	#resolveResult;
	#result;

	constructor(isComplete, extractResult) {
		this.done = false;
		this.isComplete = isComplete;
		this.extractResult = extractResult;
		this.#result = new Promise((resolve) => {
			this.#resolveResult = resolve;
		});
	}

	push(event) {
		if (this.done) return;
		if (this.isComplete(event)) {
			this.done = true;
			this.#resolveResult(this.extractResult(event));
		}
		const waiter = this.#waiting.shift();
		if (waiter) waiter({ value: event, done: false });
		else this.#queue.push(event);
	}

	end(result) {
		this.done = true;
		if (result !== undefined) this.#resolveResult(result);
		for (const waiter of this.#waiting.splice(0)) waiter({ value: undefined, done: true });
	}

	async *[Symbol.asyncIterator]() {
		for (;;) {
			if (this.#queue.length > 0) {
				yield this.#queue.shift();
			} else if (this.done) {
				return;
			} else {
				const next = await new Promise((resolve) => this.#waiting.push(resolve));
				if (next.done) return;
				yield next.value;
			}
		}
	}

	result() {
		return this.#result;
	}
}

/** The stream of one assistant response; the final message gets `durationMs` if it has none. */
export class AssistantMessageEventStream extends EventStream {
	#startedAt = Date.now();
	#startedMonotonic = performance.now();

	constructor() {
		super(
			(event) => event.type === "done" || event.type === "error",
			(event) => (event.type === "done" ? event.message : event.error),
		);
	}

	push(event) {
		if (event?.type === "done") this.#time(event.message);
		else if (event?.type === "error") this.#time(event.error);
		super.push(event);
	}

	end(result) {
		if (result !== undefined) this.#time(result);
		super.end(result);
	}

	#time(message) {
		if (!message || this.done || message.durationMs !== undefined || message.timestamp < this.#startedAt) return;
		message.durationMs = Math.max(0, Math.round(performance.now() - this.#startedMonotonic));
	}
}

export function createAssistantMessageEventStream() {
	return new AssistantMessageEventStream();
}

/** Options as data: callbacks and abort signals stay in the host. */
export function plainOptions(options) {
	if (!options || typeof options !== "object") return undefined;
	const out = {};
	for (const [key, value] of Object.entries(options)) {
		if (typeof value === "function" || value instanceof AbortSignal) continue;
		out[key] = value;
	}
	return out;
}

function emptyUsage() {
	return {
		input: 0,
		output: 0,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: 0,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
	};
}

export function errorAssistantMessage(model, message, stopReason = "error") {
	return {
		role: "assistant",
		content: [],
		api: model?.api,
		provider: model?.provider,
		model: model?.id,
		usage: emptyUsage(),
		stopReason,
		errorMessage: message,
		timestamp: Date.now(),
	};
}

const remoteStreams = new Map();

/** Routes a `stream_event` notification from pi to its stream. */
export function handleStreamEvent({ streamId, event }) {
	remoteStreams.get(streamId)?.push(event);
}

/** `simple`: Pi's completeSimple/streamSimple (a `reasoning` level), else provider options. */
export function remoteComplete(model, context, options, simple = true) {
	return callAsync("complete", {
		provider: model?.provider,
		id: model?.id,
		context,
		options: plainOptions(options),
		simple,
	});
}

export function remoteStream(model, context, options, simple = true) {
	const stream = new AssistantMessageEventStream();
	const streamId = randomUUID();
	remoteStreams.set(streamId, stream);
	callAsync("stream", { streamId, provider: model?.provider, id: model?.id, context, options: plainOptions(options), simple })
		.catch((error) => {
			if (!stream.done) {
				stream.push({ type: "error", reason: "error", error: errorAssistantMessage(model, error.message) });
			}
		})
		.finally(() => {
			remoteStreams.delete(streamId);
			if (!stream.done) stream.end();
		});
	return stream;
}
