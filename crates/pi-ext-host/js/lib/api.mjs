// The `pi` object each extension factory receives (Pi's ExtensionAPI), with staged registration:
// registrations go into the extension, provider changes and flag defaults wait for the factory to
// succeed, and actions throw until every extension of the generation has loaded.
import {
	registerCommandWithPi,
	registerProviderWithPi,
	registerToolWithPi,
	registerVirtualModelWithPi,
	unregisterProviderWithPi,
	unregisterVirtualModelWithPi,
} from "./registration.mjs";
import { emitLocal } from "./dispatch.mjs";
import { execCommand } from "./exec.mjs";
import {
	callAsync,
	callSync,
	effect,
	errorMessage,
	host,
	jsonSafe,
	mutateSession,
	NOT_INITIALIZED,
	sessionQuery,
	stateQuery,
} from "./state.mjs";

const DEFAULT_MARKDOWN_MESSAGE_TYPES = ["user", "assistant", "assistant-thinking"];

const mcpNamespace = (name) => String(name).replace(/-/g, "_");

/** Copies of the registered MCP servers, in registration order (Pi's `getMcpServers()`). */
export function mcpServerList(runtime) {
	return [...runtime.mcpServers.values()].map((server) => ({ ...server, config: structuredClone(server.config) }));
}

export function createExtensionAPI(extension, runtime) {
	const pendingFlagValues = new Map();
	const pendingChanges = [];
	const loadingUnsubscribers = [];
	let state = "loading";

	const assertActive = () => {
		if (state === "failed") {
			throw new Error(`Extension "${extension.path}" failed to load and its API is no longer active.`);
		}
		runtime.assertActive();
	};
	/** Actions need a bound runtime: they throw during loading, like Pi's stubs. */
	const bound = () => {
		if (!runtime.bound) throw new Error(NOT_INITIALIZED);
	};
	const applyChange = (change) => {
		if (state === "loading") pendingChanges.push(change);
		else change();
	};
	// After loading, registry changes reach pi, which connects the servers (its built-in MCP
	// support), and the extensions' handlers (not awaited, as in Pi). Registrations made while
	// loading travel with the load result instead.
	const mcpChanged = () => {
		if (!runtime.bound) return;
		effect("mcp_servers", { servers: mcpServerList(runtime) });
		void emitLocal(runtime, { type: "mcp_servers_change", servers: mcpServerList(runtime) });
	};
	const reportAsync = (event) => (error) =>
		runtime.emitError({ extensionPath: "<runtime>", event, error: errorMessage(error) });

	const api = {
		on(event, handler) {
			assertActive();
			const registered = (...args) => handler(...args);
			const list = extension.handlers.get(event) ?? [];
			list.push(registered);
			extension.handlers.set(event, list);
			runtime.handlersChanged();
			return () => {
				const handlers = extension.handlers.get(event);
				if (!handlers) return;
				const index = handlers.indexOf(registered);
				if (index === -1) return;
				handlers.splice(index, 1);
				if (handlers.length === 0) extension.handlers.delete(event);
				runtime.handlersChanged();
			};
		},
		registerTool(tool) {
			assertActive();
			if (typeof tool?.parameters !== "object" || tool.parameters === null || Array.isArray(tool.parameters)) {
				throw new Error(
					`Tool "${tool?.name}" registered by extension "${extension.path}" must define an object parameter schema.`,
				);
			}
			extension.tools.set(tool.name, { definition: tool, sourceInfo: extension.sourceInfo });
			if (runtime.bound && state !== "loading") registerToolWithPi(runtime, extension, tool);
		},
		registerCommand(name, options) {
			assertActive();
			if (typeof name !== "string" || name.length === 0) {
				throw new Error(
					`Command registered by extension "${extension.path}" must have a non-empty string name. Use pi.registerCommand("name", { description, handler }).`,
				);
			}
			if (typeof options?.handler !== "function") {
				throw new Error(`Command "/${name}" registered by extension "${extension.path}" must define handler().`);
			}
			extension.commands.set(name, { name, sourceInfo: extension.sourceInfo, ...options });
			if (runtime.bound && state !== "loading") registerCommandWithPi(runtime, extension, name);
		},
		registerShortcut(shortcut, options) {
			assertActive();
			extension.shortcuts.set(shortcut, { shortcut, extensionPath: extension.path, ...options });
		},
		registerFlag(name, options) {
			assertActive();
			if (options.default !== undefined && typeof options.default !== options.type) {
				throw new Error(
					`Invalid default for flag "${name}": expected ${options.type}, got ${typeof options.default}`,
				);
			}
			extension.flags.set(name, { name, extensionPath: extension.path, ...options });
			if (options.default !== undefined && !runtime.flagValues.has(name)) {
				if (state === "loading") {
					if (!pendingFlagValues.has(name)) pendingFlagValues.set(name, options.default);
				} else {
					runtime.flagValues.set(name, options.default);
				}
			}
		},
		registerMessageRenderer(customType, renderer) {
			assertActive();
			extension.messageRenderers.set(customType, renderer);
		},
		registerEntryRenderer(customType, renderer) {
			assertActive();
			extension.entryRenderers.set(customType, renderer);
		},
		registerToolRenderer(resolver) {
			assertActive();
			extension.toolRenderers.push(resolver);
		},
		registerMarkdownTransformer(transformer, options) {
			assertActive();
			extension.markdownTransformer = {
				transformer,
				messageTypes: new Set(options?.messageTypes ?? DEFAULT_MARKDOWN_MESSAGE_TYPES),
			};
		},
		getFlag(name) {
			assertActive();
			if (!extension.flags.has(name)) return undefined;
			return runtime.flagValues.has(name) ? runtime.flagValues.get(name) : pendingFlagValues.get(name);
		},
		sendMessage(message, options) {
			assertActive();
			bound();
			callAsync("send_message", {
				message,
				triggerTurn: options?.triggerTurn,
				deliverAs: options?.deliverAs,
			}).catch(reportAsync("send_message"));
		},
		sendUserMessage(content, options) {
			assertActive();
			bound();
			// Pi starts the prompt a tick later: what the caller does synchronously after this
			// call (a notify) reaches the client before the message is queued.
			Promise.resolve()
				.then(() =>
					callAsync("send_user_message", {
						content,
						deliverAs: options?.deliverAs,
						expandPromptTemplates: options?.expandPromptTemplates,
					}),
				)
				.catch(reportAsync("send_user_message"));
		},
		appendEntry(customType, data) {
			assertActive();
			bound();
			mutateSession("append_entry", { customType, data });
		},
		setSessionName(name) {
			assertActive();
			bound();
			const changed = mutateSession("set_session_name", { name });
			// Pi starts these handlers without awaiting them, before this call returns.
			if (changed?.event) void emitLocal(runtime, { type: "session_info_changed", ...changed.event });
		},
		getSessionName() {
			assertActive();
			bound();
			return sessionQuery("sessionName") ?? undefined;
		},
		setLabel(entryId, label) {
			assertActive();
			bound();
			mutateSession("set_label", { entryId, label });
		},
		exec(command, args, options) {
			assertActive();
			return execCommand(command, args, options?.cwd ?? runtime.cwd, options);
		},
		getActiveTools() {
			assertActive();
			bound();
			return stateQuery("activeTools");
		},
		getAllTools() {
			assertActive();
			bound();
			return stateQuery("allTools");
		},
		getSettings() {
			assertActive();
			bound();
			return stateQuery("settings");
		},
		setActiveTools(toolNames) {
			assertActive();
			bound();
			callSync("set_active_tools", { names: toolNames });
		},
		getCommands() {
			assertActive();
			bound();
			return stateQuery("commands");
		},
		setModel(model) {
			assertActive();
			if (!runtime.bound) return Promise.reject(new Error("Extension runtime not initialized"));
			return callAsync("set_model", { provider: model?.provider, id: model?.id });
		},
		getThinkingLevel() {
			assertActive();
			bound();
			return host.ctxState.thinkingLevel;
		},
		setThinkingLevel(level) {
			assertActive();
			bound();
			const changed = callSync("set_thinking_level", { level });
			// Pi clamps the level to the model; read back what it settled on.
			host.ctxState.thinkingLevel = stateQuery("thinkingLevel");
			// Pi starts these handlers without awaiting them, before this call returns.
			if (changed?.event) void emitLocal(runtime, { type: "thinking_level_select", ...changed.event });
		},
		registerProvider(providerOrName, config) {
			assertActive();
			if (typeof providerOrName === "string") {
				if (!config) throw new Error("Provider config is required when registering by name");
				applyChange(() =>
					registerProviderWithPi(runtime, { kind: "register", name: providerOrName, config, extensionPath: extension.path }),
				);
				return;
			}
			applyChange(() =>
				registerProviderWithPi(runtime, {
					kind: "native",
					name: providerOrName?.id,
					provider: providerOrName,
					extensionPath: extension.path,
				}),
			);
		},
		unregisterProvider(name) {
			assertActive();
			applyChange(() => unregisterProviderWithPi(runtime, name));
		},
		registerMcpServer(name, config) {
			assertActive();
			// pi validates with the rules and texts of mcp.json (aliases come back resolved).
			const validated = callSync("mcp_validate", { name: String(name), config: jsonSafe(config) });
			if (validated.error !== undefined) {
				throw new Error(`Invalid MCP server registered by extension "${extension.path}": ${validated.error}`);
			}
			const owner = runtime.mcpServers.get(name)?.extensionPath;
			if (owner !== undefined && owner !== extension.path) {
				throw new Error(`MCP server "${name}" is already registered by extension "${owner}"`);
			}
			const clash = [...runtime.mcpServers.values()].find(
				(s) => s.name !== name && mcpNamespace(s.name) === mcpNamespace(name),
			);
			if (clash) throw new Error(`MCP server "${name}" conflicts with registered server "${clash.name}"`);
			const server = { name, config: validated.config, extensionPath: extension.path };
			applyChange(() => {
				runtime.mcpServers.set(name, server);
				mcpChanged();
			});
		},
		unregisterMcpServer(name) {
			assertActive();
			applyChange(() => {
				if (runtime.mcpServers.get(name)?.extensionPath !== extension.path) return;
				runtime.mcpServers.delete(name);
				mcpChanged();
			});
		},
		getMcpServers() {
			assertActive();
			return mcpServerList(runtime);
		},
		registerVirtualModel(model) {
			assertActive();
			applyChange(() =>
				registerVirtualModelWithPi(runtime, { definition: model, extensionPath: extension.path }),
			);
		},
		unregisterVirtualModel(provider, id) {
			assertActive();
			applyChange(() => unregisterVirtualModelWithPi(runtime, provider, id));
		},
		events: {
			emit(channel, data) {
				assertActive();
				runtime.eventBus.emit(channel, data);
			},
			on(channel, handler) {
				assertActive();
				const reporting = async (data) => {
					try {
						await handler(data);
					} catch (error) {
						runtime.reportError({
							extensionPath: extension.path,
							event: `events:${channel}`,
							error: errorMessage(error),
						});
					}
				};
				const unsubscribe = runtime.trackBusSubscription(runtime.eventBus.on(channel, reporting));
				if (state === "loading") loadingUnsubscribers.push(unsubscribe);
				return unsubscribe;
			},
		},
	};

	return {
		api,
		commit() {
			if (state !== "loading") return;
			runtime.assertActive();
			for (const [name, value] of pendingFlagValues) {
				if (!runtime.flagValues.has(name)) runtime.flagValues.set(name, value);
			}
			state = "active";
			for (const apply of pendingChanges) apply();
			pendingFlagValues.clear();
			pendingChanges.length = 0;
			loadingUnsubscribers.length = 0;
		},
		discard() {
			if (state !== "loading") return;
			state = "failed";
			for (const unsubscribe of loadingUnsubscribers) unsubscribe();
			pendingFlagValues.clear();
			pendingChanges.length = 0;
			loadingUnsubscribers.length = 0;
		},
	};
}
