// ctx.sessionManager and ctx.modelRegistry: synchronous facades over pi's `session` and `models`
// sync calls (LLM requests go through async calls).
import { remoteComplete, remoteStream } from "./llm.mjs";
import { callAsync, modelsQuery, mutateSession, sessionQuery } from "./state.mjs";

const orUndefined = (value) => (value === null ? undefined : value);

export function createSessionManagerFacade() {
	return {
		getCwd: () => sessionQuery("cwd"),
		getSessionDir: () => sessionQuery("sessionDir"),
		getSessionId: () => sessionQuery("sessionId"),
		getSessionFile: () => orUndefined(sessionQuery("sessionFile")),
		getLeafId: () => sessionQuery("leafId"),
		getLeafEntry: () => orUndefined(sessionQuery("leafEntry")),
		getEntry: (id) => orUndefined(sessionQuery("entry", { id })),
		getLabel: (id) => orUndefined(sessionQuery("label", { id })),
		getBranch: (fromId) => sessionQuery("branch", fromId === undefined ? {} : { fromId }),
		buildContextEntries: () => sessionQuery("contextEntries"),
		buildSessionProjection: () => sessionQuery("projection"),
		getHeader: () => orUndefined(sessionQuery("header")),
		getEntries: () => sessionQuery("entries"),
		getTree: () => sessionQuery("tree"),
		getSessionName: () => orUndefined(sessionQuery("sessionName")),
		// Writes that extensions reach through the live SessionManager in Pi.
		appendCustomEntry: (customType, data) => mutateSession("append_entry", { customType, data }),
		appendSessionInfo: (name) => mutateSession("set_session_name", { name }),
		appendLabelChange: (entryId, label) => mutateSession("set_label", { entryId, label }),
	};
}

const modelType = (model) => model?.type ?? "chat";

function unsupported(name) {
	return () => {
		throw new Error(`modelRegistry.${name}() is not available in the pi extension host`);
	};
}

function callOptions(options) {
	const out = {};
	if (typeof options?.temperature === "number") out.temperature = options.temperature;
	if (typeof options?.maxRetries === "number") out.maxRetries = options.maxRetries;
	return out;
}

export function createModelRegistryFacade() {
	const providers = () => modelsQuery("providers") ?? [];
	const findProvider = (name) =>
		providers().find((p) => (typeof p === "string" ? p === name : p?.id === name || p?.name === name));
	const registry = {
		getAll: () => modelsQuery("all"),
		getAvailable: () => modelsQuery("available"),
		find: (provider, modelId) => orUndefined(modelsQuery("find", { provider, id: modelId })),
		// Classifier and image models live in pi's catalog of other model types; chat models are
		// the ones `getAll()` lists.
		findOfType(type, provider, modelId) {
			if (type !== "chat") return orUndefined(modelsQuery("modelOfType", { type, provider, id: modelId }));
			const model = registry.find(provider, modelId);
			return model && modelType(model) === type ? model : undefined;
		},
		getModelOfType: (type, provider, modelId) => registry.findOfType(type, provider, modelId),
		getModelsOfType: (type, provider) =>
			type !== "chat"
				? modelsQuery("ofType", { type, provider })
				: registry.getAll().filter((m) => modelType(m) === type && (provider === undefined || m.provider === provider)),
		getAvailableOfType: async (type, provider) =>
			type !== "chat"
				? modelsQuery("availableOfType", { type, provider })
				: registry.getAvailable().filter((m) => modelType(m) === type && (provider === undefined || m.provider === provider)),
		hasConfiguredAuth: (model) =>
			modelsQuery("hasConfiguredAuth", { provider: typeof model === "string" ? model : model?.provider }),
		isUsingOAuth: (model) => modelsQuery("isUsingOAuth", { provider: typeof model === "string" ? model : model?.provider }),
		getProvider: (name) => {
			const found = findProvider(name);
			return typeof found === "string" ? { id: found } : found;
		},
		getProviderDisplayName: (name) => {
			const found = findProvider(name);
			return (typeof found === "object" && found?.name) || name;
		},
		getProviderAuthStatus: (name) => ({
			configured: modelsQuery("hasConfiguredAuth", { provider: name }),
			oauth: modelsQuery("isUsingOAuth", { provider: name }),
		}),
		getError: () => undefined,
		getRegisteredProviderIds: () => providers().map((p) => (typeof p === "string" ? p : p.id)),
		refresh: async (options) => {
			const result = await callAsync("refresh_models", {
				providers: options?.providers,
				allowNetwork: options?.allowNetwork,
				force: options?.force,
			});
			const errors = new Map(Object.entries(result?.errors ?? {}).map(([id, message]) => [id, new Error(message)]));
			return { aborted: false, errors };
		},
		getApiKeyAndHeaders: (model) => callAsync("get_api_key", { provider: model?.provider }),
		getProviderAuth: async (provider) => {
			const auth = await callAsync("get_api_key", { provider });
			return auth ? { auth } : undefined;
		},
		getApiKeyForProvider: async (provider) => {
			try {
				return (await callAsync("get_api_key", { provider }))?.apiKey;
			} catch {
				return undefined;
			}
		},
		complete: (model, context, options) => remoteComplete(model, context, options, false),
		stream: (model, context, options) => remoteStream(model, context, options, false),
		streamSimple: (model, context, options) => remoteStream(model, context, options, true),
		// The options that can cross to pi: numbers (a signal or callbacks cannot).
		classify: (model, context, options) =>
			callAsync("classify", { model, context, options: callOptions(options) }),
		generateImages: (model, context, options) =>
			callAsync("generate_images", { model, context, options: callOptions(options) }),
		registerProvider: unsupported("registerProvider"),
		unregisterProvider: unsupported("unregisterProvider"),
		registerVirtualModel: unsupported("registerVirtualModel"),
		unregisterVirtualModel: unsupported("unregisterVirtualModel"),
	};
	return registry;
}
