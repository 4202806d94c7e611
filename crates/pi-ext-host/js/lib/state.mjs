// Process-wide host state shared by the runner, the ctx objects and the host-provided modules.

export const STALE_MESSAGE =
	"This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";

export const NOT_INITIALIZED =
	"Extension runtime not initialized. Action methods cannot be called during extension loading.";

export const host = {
	/** @type {import("./channel.mjs").Channel | null} */
	channel: null,
	/** The current generation (see runtime.mjs). */
	runtime: null,
	/** From `init`: cwd, agentDir, mode, hasUI, piVersion. */
	config: { cwd: process.cwd(), agentDir: undefined, mode: "rpc", hasUI: false, piVersion: "1.6.0" },
	/** The CtxState pi attached to the latest request (PROTOCOL.md "CtxState"). */
	ctxState: { model: null, thinkingLevel: "off", isIdle: true, hasPendingMessages: false, sessionVersion: 0 },
	/** AbortController of the active run, or undefined while idle. */
	run: undefined,
	/** Signals handed to session_before_compact/_tree handlers; pi's `abort` fires them. */
	abortables: new Set(),
	/** Bumped by every session mutation the host asks for (append_entry, set_label, ...). */
	sessionMutations: 0,
};

const sessionCache = new Map();

export function updateCtxState(state) {
	if (!state || typeof state !== "object") return;
	if (state.sessionVersion !== host.ctxState.sessionVersion) sessionCache.clear();
	host.ctxState = { ...host.ctxState, ...state };
}

export function requireChannel() {
	if (!host.channel) throw new Error("The pi extension host channel is not connected");
	return host.channel;
}

export function callSync(method, params) {
	return requireChannel().callSync(method, params);
}

export function callAsync(method, params) {
	return requireChannel().call(method, params);
}

export function effect(method, params) {
	requireChannel().effect(method, params);
}

let cacheClearScheduled = false;

/**
 * Answers about the session. Cached for the current turn of the event loop only (pi may change
 * the session while a handler awaits something), and dropped earlier when pi reports a new
 * sessionVersion or the host mutates the session.
 */
export function sessionQuery(what, extra = {}) {
	const key = JSON.stringify([what, extra]);
	if (sessionCache.has(key)) return structuredClone(sessionCache.get(key));
	const value = callSync("session", { what, ...extra });
	sessionCache.set(key, value);
	if (!cacheClearScheduled) {
		cacheClearScheduled = true;
		setImmediate(() => {
			cacheClearScheduled = false;
			sessionCache.clear();
		});
	}
	return structuredClone(value);
}

/** A sync call that changes the session: drops cached session answers. */
export function mutateSession(method, params) {
	sessionCache.clear();
	host.sessionMutations++;
	try {
		return callSync(method, params);
	} finally {
		sessionCache.clear();
	}
}

export function stateQuery(what, extra = {}) {
	return callSync("state", { what, ...extra });
}

export function modelsQuery(what, extra = {}) {
	return callSync("models", { what, ...extra });
}

/** Runs one of pi's helper functions implemented in Rust (`js` sync call). */
export function piFunction(fn, ...args) {
	return callSync("js", { fn, args });
}

export function errorMessage(error) {
	return error instanceof Error ? error.message : String(error);
}

/** JSON-safe copy of a registration object: functions become `true`, undefined keys vanish. */
export function jsonSafe(value) {
	if (value === undefined) return undefined;
	return JSON.parse(
		JSON.stringify(value, (_k, v) => {
			if (typeof v === "function") return true;
			if (typeof v === "bigint") return Number(v);
			return v;
		}),
	);
}

/**
 * System prompt options as Pi's `normalizeBuildSystemPromptOptions` shapes them: JSON drops the
 * `undefined` members, but handlers see `customPrompt` and `forceSystemPrompt` as keys.
 */
export function normalizePromptOptions(options) {
	const { customPrompt, forceSystemPrompt, ...rest } = structuredClone(options ?? {});
	return { customPrompt, forceSystemPrompt, ...rest };
}
