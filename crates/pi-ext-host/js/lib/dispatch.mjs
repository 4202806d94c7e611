// The runner: dispatches one event to every handler (load order, then registration order, each
// awaited) and composes the results the way Pi's ExtensionRunner does. The value returned is what
// PROTOCOL.md's "Events" table promises pi.
import { registerCommandOperations } from "../modules/builtin-tools.mjs";
import { cloneContext, createContext } from "./context.mjs";
import { getCurrentSystemMessage } from "./transcript.mjs";
import { callSync, errorMessage, host, normalizePromptOptions, piFunction } from "./state.mjs";

function snapshot(runtime, event) {
	return runtime.extensions.map((ext) => ({ ext, handlers: ext.handlers.get(event)?.slice() ?? [] }));
}

const SESSION_BEFORE = new Set([
	"session_before_switch",
	"session_before_fork",
	"session_before_compact",
	"session_before_tree",
]);

function report(runtime, ext, event, error) {
	runtime.emitError({ extensionPath: ext.path, event, error: errorMessage(error) });
}

/** Runs every handler; handler results are ignored except for session_before_* (kept / cancel). */
export async function emitLocal(runtime, event) {
	const ctx = createContext(runtime);
	let result;
	for (const { ext, handlers } of snapshot(runtime, event.type)) {
		for (const handler of handlers) {
			try {
				const value = await handler(event, ctx);
				if (SESSION_BEFORE.has(event.type) && value) {
					result = value;
					if (result.cancel) return result;
				}
			} catch (error) {
				report(runtime, ext, event.type, error);
			}
		}
	}
	return result;
}

async function emitInput(runtime, event) {
	const ctx = createContext(runtime);
	const { text, images } = event;
	let currentText = text;
	let currentImages = images;
	for (const { ext, handlers } of snapshot(runtime, "input")) {
		for (const handler of handlers) {
			try {
				const current = {
					type: "input",
					text: currentText,
					images: currentImages,
					source: event.source,
					streamingBehavior: event.streamingBehavior,
				};
				const result = await handler(current, ctx);
				if (result?.action === "handled") return { action: "handled" };
				if (result?.action === "transform") {
					currentText = result.text;
					currentImages = result.images ?? currentImages;
				}
			} catch (error) {
				report(runtime, ext, "input", error);
			}
		}
	}
	return currentText !== text || currentImages !== images
		? { action: "transform", text: currentText, images: currentImages }
		: { action: "continue" };
}

async function emitToolCall(runtime, event) {
	const ctx = createContext(runtime);
	let result;
	// Not caught per handler: a throw blocks the call with its message (no extension_error).
	try {
		outer: for (const { handlers } of snapshot(runtime, "tool_call")) {
			for (const handler of handlers) {
				const value = await handler(event, ctx);
				if (value) {
					result = value;
					if (result.block) break outer;
				}
			}
		}
	} catch (error) {
		return { input: event.input, block: true, reason: errorMessage(error) };
	}
	const value = { input: event.input };
	if (result?.block) {
		value.block = true;
		if (result.reason !== undefined) value.reason = result.reason;
	}
	if (result?.terminate !== undefined) value.terminate = result.terminate;
	return value;
}

async function emitToolResult(runtime, event) {
	const ctx = createContext(runtime);
	const current = { ...event };
	let modified = false;
	for (const { ext, handlers } of snapshot(runtime, "tool_result")) {
		for (const handler of handlers) {
			try {
				const result = await handler(current, ctx);
				if (!result) continue;
				if (result.content !== undefined) {
					current.content = result.content;
					// Structured content not replaced with the content may no longer match it.
					if (result.structuredContent === undefined) delete current.structuredContent;
					modified = true;
				}
				for (const key of ["details", "structuredContent", "isError", "usage"]) {
					if (result[key] !== undefined) {
						current[key] = result[key];
						modified = true;
					}
				}
			} catch (error) {
				report(runtime, ext, "tool_result", error);
			}
		}
	}
	if (!modified) return null;
	return {
		content: current.content,
		details: current.details,
		structuredContent: current.structuredContent,
		isError: current.isError,
		usage: current.usage,
	};
}

async function emitMessageEnd(runtime, event) {
	const ctx = createContext(runtime);
	let message = event.message;
	let modified = false;
	for (const { ext, handlers } of snapshot(runtime, "message_end")) {
		for (const handler of handlers) {
			try {
				const result = await handler({ ...event, message }, ctx);
				if (!result?.message) continue;
				if (result.message.role !== message.role) {
					runtime.emitError({
						extensionPath: ext.path,
						event: "message_end",
						error: "message_end handlers must return a message with the same role",
					});
					continue;
				}
				message = result.message;
				modified = true;
			} catch (error) {
				report(runtime, ext, "message_end", error);
			}
		}
	}
	return modified ? { message } : null;
}

const sameList = (a, b) => a.length === b.length && a.every((item, i) => item === b[i]);

async function emitContextEvent(runtime, event) {
	const ctx = createContext(runtime);
	const original = JSON.stringify(event.messages);
	let current = structuredClone(event.messages);
	if (event.type === "context") {
		for (const { ext, handlers } of snapshot(runtime, "context")) {
			for (const handler of handlers) {
				try {
					const visible = current.filter((m) => m.role !== "system");
					const before = visible.slice();
					const result = await handler({ type: "context", messages: visible }, ctx);
					// A new list, or the event's array edited in place.
					const returned = result?.messages ?? (sameList(visible, before) ? undefined : visible);
					if (!returned || sameList(returned, before)) continue;
					// A changed conversation gets the replayed system state as one leading message.
					const head = getCurrentSystemMessage(current);
					current = head ? [head, ...returned] : returned;
				} catch (error) {
					report(runtime, ext, "context", error);
				}
			}
		}
	} else {
		for (const { ext, handlers } of snapshot(runtime, "context_with_system")) {
			for (const handler of handlers) {
				try {
					const hadSystem = current[0]?.role === "system";
					const result = await handler({ type: "context_with_system", messages: current }, ctx);
					current = result?.messages ?? current;
					if (hadSystem && current[0]?.role !== "system") {
						runtime.emitError({
							extensionPath: ext.path,
							event: "context_with_system",
							error:
								"Handler removed the leading system message; the request has no prompt or initial tool declarations. Keep it at index 0 or replace a dropped prefix with getCurrentSystemMessage().",
						});
					}
				} catch (error) {
					report(runtime, ext, "context_with_system", error);
				}
			}
		}
	}
	// In-place edits of message objects count as changes too.
	return JSON.stringify(current) === original ? null : { messages: current };
}

async function emitBeforeProviderRequest(runtime, event) {
	const ctx = createContext(runtime);
	const original = JSON.stringify(event.payload);
	let payload = event.payload;
	for (const { ext, handlers } of snapshot(runtime, "before_provider_request")) {
		for (const handler of handlers) {
			try {
				const result = await handler({ type: "before_provider_request", payload }, ctx);
				if (result !== undefined) payload = result;
			} catch (error) {
				report(runtime, ext, "before_provider_request", error);
			}
		}
	}
	return JSON.stringify(payload) === original ? null : { payload };
}

async function emitBeforeProviderHeaders(runtime, event) {
	const ctx = createContext(runtime);
	const headers = event.headers ?? {};
	for (const { ext, handlers } of snapshot(runtime, "before_provider_headers")) {
		for (const handler of handlers) {
			try {
				await handler({ type: "before_provider_headers", headers }, ctx);
			} catch (error) {
				report(runtime, ext, "before_provider_headers", error);
			}
		}
	}
	for (const [key, value] of Object.entries(headers)) if (value === null) delete headers[key];
	return { headers };
}

async function emitBeforeAgentStart(runtime, event) {
	const { systemPrompt: initialPrompt, systemPromptOptions, type: _type, ...trigger } = event;
	const options = normalizePromptOptions(systemPromptOptions);
	const originalOptions = JSON.stringify(options);
	// The rendered prompt of the current options: pi's own text while nothing changed.
	const render = () => {
		if (options.forceSystemPrompt !== undefined) return options.forceSystemPrompt;
		if (JSON.stringify(options) === originalOptions && typeof initialPrompt === "string") return initialPrompt;
		return piFunction("buildSystemPrompt", options);
	};
	const ctx = cloneContext(createContext(runtime));
	ctx.getSystemPrompt = () => {
		runtime.assertActive();
		return render();
	};
	const messages = [];
	for (const { ext, handlers } of snapshot(runtime, "before_agent_start")) {
		for (const handler of handlers) {
			try {
				const current = {
					...trigger,
					type: "before_agent_start",
					get systemPrompt() {
						return render();
					},
					systemPromptOptions: options,
				};
				const result = await handler(current, ctx);
				if (result) {
					if (result.message) messages.push(result.message);
					if (result.systemPrompt !== undefined) options.forceSystemPrompt = result.systemPrompt;
				}
			} catch (error) {
				report(runtime, ext, "before_agent_start", error);
			}
		}
	}
	const value = { messages };
	if (options.forceSystemPrompt !== undefined) value.systemPrompt = options.forceSystemPrompt;
	if (JSON.stringify(options) !== originalOptions) value.systemPromptOptions = options;
	return value;
}

async function emitResourcesDiscover(runtime, event) {
	const ctx = createContext(runtime);
	const out = { skillPaths: [], promptPaths: [], themePaths: [] };
	for (const { ext, handlers } of snapshot(runtime, "resources_discover")) {
		for (const handler of handlers) {
			try {
				const result = await handler({ type: "resources_discover", cwd: event.cwd, reason: event.reason }, ctx);
				for (const key of Object.keys(out)) {
					if (result?.[key]?.length) out[key].push(...result[key].map((path) => ({ path, extensionPath: ext.path })));
				}
			} catch (error) {
				report(runtime, ext, "resources_discover", error);
			}
		}
	}
	return out;
}

function isUserBashResult(value) {
	if (typeof value !== "object" || value === null) return false;
	const hasOperations = value.operations !== undefined;
	if (hasOperations === (value.result !== undefined)) return false;
	if (hasOperations) return typeof value.operations === "object" && typeof value.operations?.exec === "function";
	const r = value.result;
	return (
		typeof r === "object" &&
		r !== null &&
		typeof r.output === "string" &&
		"exitCode" in r &&
		(r.exitCode === undefined || typeof r.exitCode === "number") &&
		typeof r.cancelled === "boolean" &&
		typeof r.truncated === "boolean" &&
		(r.fullOutputPath === undefined || typeof r.fullOutputPath === "string")
	);
}

async function emitUserBash(runtime, event) {
	const ctx = createContext(runtime);
	for (const { ext, handlers } of snapshot(runtime, "user_bash")) {
		for (const handler of handlers) {
			try {
				const result = await handler(event, ctx);
				if (result === undefined) continue;
				if (!isUserBashResult(result)) {
					throw new Error(
						"Invalid user_bash handler result: return undefined for local execution or exactly one valid { operations } or { result } object",
					);
				}
				if (result.operations) return { operationsId: registerCommandOperations(result.operations) };
				return { result: result.result };
			} catch (error) {
				report(runtime, ext, "user_bash", error);
				throw error; // pi fails the bash command with it
			}
		}
	}
	return null;
}

async function emitCacheWarmingDecision(runtime, event) {
	const ctx = createContext(runtime);
	let action;
	for (const { ext, handlers } of snapshot(runtime, event.type)) {
		for (const handler of handlers) {
			try {
				const result = await handler(event, ctx);
				if (result?.action !== undefined) action = result.action;
			} catch (error) {
				report(runtime, ext, event.type, error);
			}
		}
	}
	return action === undefined ? null : { action };
}

/** turn_end / agent_before_settle: handlers propose entry drafts and a continue flag in turn. */
async function emitBoundary(runtime, event) {
	const ctx = createContext(runtime);
	const { entries: _e, continue: _c, context: initialContext, ...base } = event;
	let entries = [];
	let shouldContinue = false;
	let context = initialContext;
	let valid = true;
	for (const { ext, handlers } of snapshot(runtime, event.type)) {
		for (const handler of handlers) {
			const mutationsBefore = host.sessionMutations;
			const entriesBefore = entries;
			try {
				const result = await handler({ ...base, entries, continue: shouldContinue, context }, ctx);
				if (result?.entries !== undefined) entries = result.entries;
				if (result?.continue !== undefined) shouldContinue = result.continue;
			} catch (error) {
				report(runtime, ext, event.type, error);
			}
			// The preview only changes with the drafts or the session; ask pi to rebuild it then.
			if (entries === entriesBefore && host.sessionMutations === mutationsBefore && valid) continue;
			try {
				context = callSync("boundary_context", { event: event.type, entries });
				valid = true;
			} catch (error) {
				valid = false;
				runtime.emitError({
					extensionPath: ext.path,
					event: event.type,
					error: `Invalid boundary entries: ${errorMessage(error)}`,
				});
			}
		}
	}
	return valid ? { entries, continue: shouldContinue } : { entries: [], continue: false };
}

/** project_trust runs against a reduced ctx; the first yes/no wins and errors become warnings. */
async function emitProjectTrust(runtime, event) {
	const ctx = {
		cwd: event.cwd,
		mode: runtime.mode,
		hasUI: false,
		ui: {
			select: async () => undefined,
			confirm: async () => false,
			input: async () => undefined,
			notify: (message) => process.stderr.write(`${message}\n`),
		},
	};
	const warnings = [];
	for (const { ext, handlers } of snapshot(runtime, "project_trust")) {
		for (const handler of handlers) {
			try {
				const result = await handler(event, ctx);
				if (result.trusted === "undecided") continue;
				const value = { trusted: result.trusted };
				if (result.remember !== undefined) value.remember = result.remember;
				if (warnings.length > 0) value.warnings = warnings;
				return value;
			} catch (error) {
				warnings.push(`Extension "${ext.path}" project_trust error: ${errorMessage(error)}`);
			}
		}
	}
	return warnings.length > 0 ? { warnings } : null;
}

const COMPOSED = {
	input: emitInput,
	tool_call: emitToolCall,
	tool_result: emitToolResult,
	message_end: emitMessageEnd,
	context: emitContextEvent,
	context_with_system: emitContextEvent,
	before_provider_request: emitBeforeProviderRequest,
	before_provider_headers: emitBeforeProviderHeaders,
	before_agent_start: emitBeforeAgentStart,
	resources_discover: emitResourcesDiscover,
	user_bash: emitUserBash,
	cache_warming_decision: emitCacheWarmingDecision,
	turn_end: emitBoundary,
	agent_before_settle: emitBoundary,
	project_trust: emitProjectTrust,
};

/** The event object handlers see: Pi puts `type` first, except provider_stream_event (`data` first). */
function eventObject(name, payload) {
	if (name === "provider_stream_event") {
		const { data, ...rest } = payload ?? {};
		return { data, type: name, ...rest };
	}
	return { type: name, ...(payload ?? {}) };
}

/** Handles an `emit` request: the composed value for pi, `null` for plain notifications. */
export async function emitEvent(runtime, name, payload) {
	const event = eventObject(name, payload);
	const composed = COMPOSED[name];
	if (composed) return composed(runtime, event);
	let controller;
	if (name === "session_before_compact" || name === "session_before_tree") {
		// The payload cannot carry an AbortSignal; handlers get one that fires on pi's `abort`.
		controller = new AbortController();
		host.abortables.add(controller);
		event.signal = controller.signal;
	}
	try {
		const result = await emitLocal(runtime, event);
		return SESSION_BEFORE.has(name) ? (result ?? null) : null;
	} finally {
		if (controller) host.abortables.delete(controller);
	}
}
