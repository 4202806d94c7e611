// Serves pi's requests and notifications (PROTOCOL.md "Requests pi → host").
import { abortBuiltinOperation, handleBuiltinUpdate, runBuiltinOperation } from "../modules/builtin-tools.mjs";
import { createCommandContext, createContext, createToolContext } from "./context.mjs";
import { emitEvent } from "./dispatch.mjs";
import { handleStreamEvent } from "./llm.mjs";
import { extendGeneration, loadGeneration } from "./loader.mjs";
import { runModelRefresh } from "./model-refresh.mjs";
import { oauthApiKey, refreshOAuth } from "./provider-oauth.mjs";
import { abortProviderStream, runProviderStream } from "./provider-stream.mjs";
import { abortTypedCall, runTypedCall } from "./provider-typed.mjs";
import { effect, errorMessage, host, updateCtxState } from "./state.mjs";
import { handleUIResponse } from "./ui.mjs";

const toolControllers = new Map();

function requireRuntime() {
	if (!host.runtime) throw new Error("No extensions are loaded (init has not run)");
	return host.runtime;
}

const TOOL_RESULT_KEYS = ["content", "details", "isError", "terminate", "structuredContent", "usage"];

/** The tool's result as pi needs it, in the tool's own key order (Pi passes the object on). */
function toolResultValue(result) {
	const value = {};
	if (result && typeof result === "object") {
		for (const key of Object.keys(result)) {
			if (TOOL_RESULT_KEYS.includes(key) && result[key] !== undefined) value[key] = result[key];
		}
	}
	if (value.content === undefined) return { content: [], ...value };
	return value;
}

async function runTool({ tool, toolCallId, params, ctx }) {
	updateCtxState(ctx);
	const runtime = requireRuntime();
	const found = runtime.findTool(tool);
	if (!found) throw new Error(`Tool ${tool} not found`);
	const controller = new AbortController();
	toolControllers.set(toolCallId, controller);
	let settled = false;
	// Updates after execute() settled are dropped, as in Pi's agent loop.
	const onUpdate = (partialResult) => {
		if (!settled) effect("tool_update", { toolCallId, partialResult });
	};
	try {
		const result = await found.definition.execute(
			toolCallId,
			params,
			controller.signal,
			onUpdate,
			createToolContext(runtime, toolCallId),
		);
		return toolResultValue(result);
	} finally {
		settled = true;
		toolControllers.delete(toolCallId);
	}
}

async function runCommand({ name, args, ctx }) {
	updateCtxState(ctx);
	const runtime = requireRuntime();
	const found = runtime.findCommand(name);
	if (!found) throw new Error(`Unknown extension command: ${name}`);
	try {
		await found.command.handler(args ?? "", createCommandContext(runtime));
	} catch (error) {
		runtime.emitError({ extensionPath: `command:${name}`, event: "command", error: errorMessage(error) });
	}
	return null;
}

/** A virtual model's router decides one request: `{model: {provider, id}, thinkingLevel, state}`. */
async function routeModel({ provider, modelId: id, request, ctx }) {
	updateCtxState(ctx);
	const runtime = requireRuntime();
	const entry = runtime.virtualModels.find(
		({ definition }) => definition.provider === provider && definition.id === id,
	);
	if (!entry) throw new Error(`Virtual model ${provider}/${id} is not registered.`);
	const route = await entry.definition.route(request, createContext(runtime));
	const value = {
		model: { provider: route?.model?.provider, id: route?.model?.id },
		thinkingLevel: route?.thinkingLevel,
	};
	if (route?.state !== undefined) value.state = route.state;
	return value;
}

function prepareArgs({ tool, args }) {
	const found = requireRuntime().findTool(tool);
	const prepare = found?.definition.prepareArguments;
	return typeof prepare === "function" ? prepare(args) : args;
}

const REQUESTS = {
	init: (msg) => loadGeneration("init", msg),
	reinit: (msg) => loadGeneration("reinit", msg),
	reload: (msg) => loadGeneration("reload", msg),
	extend: (msg) => extendGeneration(msg),
	apply_flags: ({ values }) => {
		const runtime = requireRuntime();
		for (const [name, value] of Object.entries(values ?? {})) runtime.flagValues.set(name, value);
		return null;
	},
	emit: ({ event, payload, ctx }) => {
		updateCtxState(ctx);
		return emitEvent(requireRuntime(), event, payload);
	},
	command: runCommand,
	prepare_args: prepareArgs,
	tool: runTool,
	provider_stream: (msg) => runProviderStream(requireRuntime(), msg),
	provider_typed: (msg) => runTypedCall(requireRuntime(), msg),
	route_model: routeModel,
	oauth_refresh: refreshOAuth,
	oauth_api_key: oauthApiKey,
	refresh_models: (msg) => runModelRefresh(msg),
	builtin_op: (msg) => runBuiltinOperation(msg),
};

const NOTIFICATIONS = {
	ui_response: (msg) => handleUIResponse(msg.response && typeof msg.response === "object" ? msg.response : msg),
	tool_abort: ({ toolCallId }) => toolControllers.get(toolCallId)?.abort(),
	stream_abort: ({ streamId }) => abortProviderStream(streamId),
	typed_abort: ({ callId }) => abortTypedCall(callId),
	stream_event: (msg) => handleStreamEvent(msg),
	builtin_update: (msg) => handleBuiltinUpdate(msg),
	op_abort: (msg) => abortBuiltinOperation(msg),
	run: ({ active }) => {
		if (active) {
			host.run = new AbortController();
			host.ctxState.isIdle = false;
		} else {
			host.run = undefined;
			host.ctxState.isIdle = true;
		}
	},
	abort: () => {
		host.run?.abort();
		for (const controller of toolControllers.values()) controller.abort();
		for (const controller of host.abortables) controller.abort();
	},
	invalidate: () => host.runtime?.invalidate(),
};

async function handleRequest(channel, message) {
	const handler = REQUESTS[message.type];
	try {
		if (!handler) throw new Error(`Unknown request type: ${message.type}`);
		const value = await handler(message);
		channel.result(message.id, value ?? null);
	} catch (error) {
		channel.failure(message.id, errorMessage(error));
	}
}

export function startHost(channel) {
	host.channel = channel;
	channel.onMessage((message) => {
		// Notifications first: a ui_response carries the dialog's (string) id, not a request id.
		const notification = NOTIFICATIONS[message.type];
		if (!notification) {
			if (message.id !== undefined) void handleRequest(channel, message);
			return;
		}
		try {
			notification(message);
		} catch (error) {
			process.stderr.write(`pi extension host: ${message.type}: ${errorMessage(error)}\n`);
		}
	});
	// pi went away: nothing left to serve.
	channel.onEnd(() => process.exit(0));
	// Extension code must not take the host down with a stray rejection or throw.
	process.on("unhandledRejection", (reason) => {
		process.stderr.write(`pi extension host: unhandled rejection: ${reason?.stack ?? reason}\n`);
	});
	process.on("uncaughtException", (error) => {
		process.stderr.write(`pi extension host: uncaught exception: ${error?.stack ?? error}\n`);
	});
	channel.start();
}
