// What pi learns about registered tools, commands, flags and providers: the Registration records
// of a load result, and the sync calls for registrations made after loading.
import { callSync, jsonSafe } from "./state.mjs";

const TOOL_FIELDS = [
	"promptSnippet",
	"promptGuidelines",
	"executionMode",
	"exposure",
	"defaultActive",
	"namespace",
	"annotations",
	"reachesTools",
	"outputSchema",
	"constrainedSampling",
];

export function toolRegistration(tool) {
	const entry = {
		name: tool.name,
		label: tool.label,
		description: tool.description,
		parameters: jsonSafe(tool.parameters),
	};
	for (const field of TOOL_FIELDS) {
		if (tool[field] !== undefined) entry[field] = jsonSafe(tool[field]);
	}
	entry.hasPrepareArguments = typeof tool.prepareArguments === "function";
	return entry;
}

function flagRegistration(flag) {
	const entry = { name: flag.name, type: flag.type };
	if (flag.default !== undefined) entry.default = flag.default;
	if (flag.description !== undefined) entry.description = flag.description;
	return entry;
}

export function providerRegistration(entry) {
	if (entry.kind === "native") return { name: entry.name, native: true, provider: jsonSafe(entry.provider) };
	return { name: entry.name, config: jsonSafe(entry.config) };
}

/** Every command of the generation with its invocation name, in load order. */
export function commandList(runtime) {
	return runtime.resolveCommands().map(({ ext, command, invocationName }) => {
		const item = { path: ext.path, name: invocationName };
		if (command.description !== undefined) item.description = command.description;
		return item;
	});
}

export function buildRegistration(runtime, ext) {
	const commands = runtime
		.resolveCommands()
		.filter((c) => c.ext === ext)
		.map(({ command, invocationName }) => {
			const item = { name: invocationName };
			if (command.description !== undefined) item.description = command.description;
			return item;
		});
	return {
		path: ext.path,
		tools: [...ext.tools.values()].map(({ definition }) => toolRegistration(definition)),
		commands,
		flags: [...ext.flags.values()].map(flagRegistration),
		providers: runtime.pendingProviders.filter((p) => p.extensionPath === ext.path).map(providerRegistration),
		virtualModels: runtime.virtualModels
			.filter((v) => v.extensionPath === ext.path)
			.map((v) => jsonSafe(v.definition)),
		events: [...ext.handlers.keys()].filter((event) => ext.handlers.get(event).length > 0),
	};
}

function trackProvider(runtime, entry) {
	runtime.streamProviders = runtime.streamProviders.filter((p) => p.name !== entry.name);
	const config = entry.kind === "native" ? entry.provider : entry.config;
	// A registration merges over the previous one: an `oauth` left out keeps the earlier login.
	if (entry.kind !== "native" && config?.oauth && typeof config.oauth === "object") {
		runtime.oauthProviders.set(entry.name, config.oauth);
	}
	if (entry.kind !== "native" && typeof config?.refreshModels === "function") {
		runtime.refreshProviders.set(entry.name, config.refreshModels);
	}
	// Like the other keys, `images` and `classifiers` left out keep the earlier ones.
	if (entry.kind !== "native" && (config?.images !== undefined || config?.classifiers !== undefined)) {
		const previous = runtime.typedProviders.get(entry.name) ?? {};
		runtime.typedProviders.set(entry.name, {
			images: config.images !== undefined ? config.images : previous.images,
			classifiers: config.classifiers !== undefined ? config.classifiers : previous.classifiers,
		});
	}
	if (typeof config?.streamSimple === "function") {
		runtime.streamProviders.push({
			name: entry.name,
			api: config.api,
			streamSimple: config.streamSimple,
			extensionPath: entry.extensionPath,
		});
	}
}

/** At bind: providers queued during loading become live (pi applies them from the registrations). */
export function flushQueuedProviders(runtime) {
	for (const entry of runtime.pendingProviders) trackProvider(runtime, entry);
}

export function registerProviderWithPi(runtime, entry) {
	if (!runtime.bound) {
		runtime.pendingProviders.push(entry);
		return;
	}
	callSync("register_provider", { path: entry.extensionPath, ...providerRegistration(entry) });
	trackProvider(runtime, entry);
}

export function unregisterProviderWithPi(runtime, name) {
	if (!runtime.bound) {
		runtime.pendingProviders = runtime.pendingProviders.filter((p) => p.name !== name);
		return;
	}
	callSync("unregister_provider", { name });
	runtime.streamProviders = runtime.streamProviders.filter((p) => p.name !== name);
	runtime.oauthProviders.delete(name);
	runtime.refreshProviders.delete(name);
	runtime.typedProviders.delete(name);
}

/** A virtual model: kept here for its `route`; pi lists it (at once when bound). */
export function registerVirtualModelWithPi(runtime, entry) {
	const { provider, id } = entry.definition ?? {};
	if (runtime.bound) callSync("register_virtual_model", { path: entry.extensionPath, definition: jsonSafe(entry.definition) });
	runtime.virtualModels = runtime.virtualModels.filter(
		({ definition }) => definition.provider !== provider || definition.id !== id,
	);
	runtime.virtualModels.push(entry);
}

export function unregisterVirtualModelWithPi(runtime, provider, id) {
	const before = runtime.virtualModels.length;
	runtime.virtualModels = runtime.virtualModels.filter(
		({ definition }) => definition.provider !== provider || definition.id !== id,
	);
	if (runtime.bound && runtime.virtualModels.length !== before) {
		callSync("unregister_virtual_model", { provider, id });
	}
}

export function registerToolWithPi(runtime, ext, tool) {
	callSync("register_tool", { path: ext.path, ...toolRegistration(tool) });
}

export function registerCommandWithPi(runtime, ext, name) {
	const commands = commandList(runtime);
	const own = runtime.resolveCommands().find((c) => c.ext === ext && c.command.name === name);
	callSync("register_command", {
		path: ext.path,
		name: own?.invocationName ?? name,
		description: own?.command.description,
		commands,
	});
}
