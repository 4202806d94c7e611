// The ctx objects handed to handlers, commands and tools. Every member re-checks staleness, and
// getters are live: they read the latest CtxState or ask pi when accessed.
import { createModelRegistryFacade, createSessionManagerFacade } from "./facades.mjs";
import { callAsync, host, normalizePromptOptions, stateQuery } from "./state.mjs";

const orUndefined = (value) => (value === null ? undefined : value);
const ignore = () => {};

export function createContext(runtime) {
	const guard = () => runtime.assertActive();
	return {
		get ui() {
			guard();
			return runtime.ui;
		},
		get mode() {
			guard();
			return runtime.mode;
		},
		get hasUI() {
			guard();
			return runtime.hasUI;
		},
		get cwd() {
			guard();
			return runtime.cwd;
		},
		get sessionManager() {
			guard();
			runtime.sessionManager ??= createSessionManagerFacade();
			return runtime.sessionManager;
		},
		get modelRegistry() {
			guard();
			runtime.modelRegistry ??= createModelRegistryFacade();
			return runtime.modelRegistry;
		},
		get model() {
			guard();
			return orUndefined(host.ctxState.model);
		},
		get scopedModels() {
			guard();
			return stateQuery("scopedModels") ?? [];
		},
		get thinkingLevel() {
			guard();
			return host.ctxState.thinkingLevel;
		},
		isIdle: () => {
			guard();
			return host.ctxState.isIdle;
		},
		isProjectTrusted: () => {
			guard();
			return stateQuery("projectTrusted");
		},
		get signal() {
			guard();
			return host.run?.signal;
		},
		abort: () => {
			guard();
			callAsync("abort").catch(ignore);
		},
		hasPendingMessages: () => {
			guard();
			return host.ctxState.hasPendingMessages;
		},
		shutdown: () => {
			guard();
			callAsync("shutdown").catch(ignore);
		},
		getContextUsage: () => {
			guard();
			return orUndefined(stateQuery("contextUsage"));
		},
		compact: (options) => {
			guard();
			callAsync("compact", { customInstructions: options?.customInstructions }).then(
				(result) => options?.onComplete?.(result),
				(error) => options?.onError?.(error),
			);
		},
		getSystemPrompt: () => {
			guard();
			return stateQuery("systemPrompt");
		},
	};
}

/** A copy of `ctx` that keeps its getters lazy (a spread would freeze them). */
export function cloneContext(ctx) {
	return Object.defineProperties({}, Object.getOwnPropertyDescriptors(ctx));
}

async function afterReplacement(result, withSession) {
	if (!result?.cancelled && typeof withSession === "function" && host.runtime) {
		await withSession(createReplacedContext(host.runtime));
	}
	return { cancelled: Boolean(result?.cancelled) };
}

export function createCommandContext(runtime) {
	const guard = () => runtime.assertActive();
	const ctx = cloneContext(createContext(runtime));
	ctx.getSystemPromptOptions = () => {
		guard();
		return normalizePromptOptions(stateQuery("systemPromptOptions"));
	};
	ctx.waitForIdle = () => {
		guard();
		return callAsync("wait_for_idle").then(ignore);
	};
	ctx.newSession = async (options) => {
		guard();
		// pi answers only after the replacement; `setup` runs when the new generation loads.
		host.pendingSessionSetup = typeof options?.setup === "function" ? options.setup : undefined;
		try {
			const result = await callAsync("new_session", { parentSession: options?.parentSession });
			return afterReplacement(result, options?.withSession);
		} finally {
			host.pendingSessionSetup = undefined;
		}
	};
	ctx.fork = async (entryId, options) => {
		guard();
		const result = await callAsync("fork", { entryId, position: options?.position });
		return afterReplacement(result, options?.withSession);
	};
	ctx.navigateTree = async (targetId, options) => {
		guard();
		const result = await callAsync("navigate_tree", {
			targetId,
			summarize: options?.summarize,
			customInstructions: options?.customInstructions,
			replaceInstructions: options?.replaceInstructions,
			label: options?.label,
		});
		return { cancelled: Boolean(result?.cancelled) };
	};
	ctx.switchSession = async (sessionPath, options) => {
		guard();
		const result = await callAsync("switch_session", { sessionPath });
		return afterReplacement(result, options?.withSession);
	};
	ctx.reload = async () => {
		guard();
		await callAsync("reload");
	};
	return ctx;
}

/** What `withSession` receives: the new generation's command ctx, with awaitable messaging. */
export function createReplacedContext(runtime) {
	const ctx = createCommandContext(runtime);
	ctx.sendMessage = async (message, options) => {
		runtime.assertActive();
		await callAsync("send_message", { message, triggerTurn: options?.triggerTurn, deliverAs: options?.deliverAs });
	};
	ctx.sendUserMessage = async (content, options) => {
		runtime.assertActive();
		await callAsync("send_user_message", {
			content,
			deliverAs: options?.deliverAs,
			expandPromptTemplates: options?.expandPromptTemplates,
		});
	};
	return ctx;
}

export function createToolContext(runtime, toolCallId) {
	const guard = () => runtime.assertActive();
	return Object.defineProperties(createContext(runtime), {
		tools: {
			get() {
				guard();
				return (stateQuery("allTools") ?? []).map((info) => ({
					...info,
					execute: (_id, params) =>
						callAsync("execute_tool", { name: info.name, args: params, parentToolCallId: toolCallId }),
				}));
			},
		},
		executeTool: {
			// Nested calls run in pi (validation, tool_call/tool_result, records); their signal and
			// onUpdate stay with pi's own run.
			value: async (name, args) => {
				guard();
				return callAsync("execute_tool", { name, args, parentToolCallId: toolCallId });
			},
		},
	});
}
