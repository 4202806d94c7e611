// One generation of loaded extensions (an `init`, `reinit` or `reload`): the extensions in load
// order, shared flag values, the event bus, and the staleness switch.
import { effect, host, STALE_MESSAGE } from "./state.mjs";

let nextGeneration = 1;

export function createExtension(path, sourceInfo) {
	return {
		path,
		sourceInfo,
		handlers: new Map(),
		tools: new Map(),
		commands: new Map(),
		flags: new Map(),
		shortcuts: new Map(),
		messageRenderers: new Map(),
		entryRenderers: new Map(),
		toolRenderers: [],
		markdownTransformer: undefined,
	};
}

export class Runtime {
	constructor({ cwd, mode, hasUI, eventBus }) {
		this.generation = nextGeneration++;
		this.cwd = cwd;
		this.mode = mode;
		this.hasUI = hasUI;
		this.eventBus = eventBus;
		/** Committed extensions in load order. */
		this.extensions = [];
		this.flagValues = new Map();
		/** Provider changes queued during loading: {kind, name, config?, provider?, extensionPath}. */
		this.pendingProviders = [];
		/** Providers with a JS streamSimple, in registration order: {name, api, streamSimple, extensionPath}. */
		this.streamProviders = [];
		/** OAuth logins registered with providers (`registerProvider(id, { oauth })`), by provider id. */
		this.oauthProviders = new Map();
		/** `refreshModels` hooks of registered providers, by provider id. */
		this.refreshProviders = new Map();
		/** Image and classifier implementations of registered providers (`images`, `classifiers`
		 * keyed by api), by provider id: {images?, classifiers?}. */
		this.typedProviders = new Map();
		/** MCP servers extensions registered, by name: {name, config, extensionPath}; pi gets copies. */
		this.mcpServers = new Map();
		/** Virtual models are kept here only (pi has no channel for them yet). */
		this.virtualModels = [];
		/** False while factories run: action methods throw until the result of the load is sent. */
		this.bound = false;
		this.staleMessage = undefined;
		this.busUnsubscribers = new Set();
		this.uiPromptDepth = 0;
		this.activeUIPrompt = undefined;
		this.lastHandlerEvents = "[]";
	}

	assertActive() {
		if (this.staleMessage) throw new Error(this.staleMessage);
	}

	invalidate(message = STALE_MESSAGE) {
		if (this.staleMessage) return;
		this.staleMessage = message;
		for (const unsubscribe of [...this.busUnsubscribers]) unsubscribe();
		this.busUnsubscribers.clear();
	}

	trackBusSubscription(unsubscribe) {
		let active = true;
		const tracked = () => {
			if (!active) return;
			active = false;
			this.busUnsubscribers.delete(tracked);
			unsubscribe();
		};
		this.busUnsubscribers.add(tracked);
		return tracked;
	}

	/** Handler errors of events: reported even after the runtime went stale (as Pi's runner does). */
	emitError({ extensionPath, event, error }) {
		effect("extension_error", { extensionPath, event, error });
	}

	/** Errors of event-bus handlers: a stale runtime must not report into its replacement. */
	reportError(error) {
		if (!this.staleMessage) this.emitError(error);
	}

	hasHandlers(event) {
		return this.extensions.some((ext) => (ext.handlers.get(event)?.length ?? 0) > 0);
	}

	handlerEvents() {
		const events = new Set();
		for (const ext of this.extensions) {
			for (const [event, list] of ext.handlers) if (list.length > 0) events.add(event);
		}
		return [...events];
	}

	/** Sends a `handlers` notification when the set of events with handlers changed after load. */
	handlersChanged() {
		if (!this.bound || this.staleMessage || host.runtime !== this) return;
		const events = this.handlerEvents();
		const key = JSON.stringify([...events].sort());
		if (key === this.lastHandlerEvents) return;
		this.lastHandlerEvents = key;
		host.channel?.notify("handlers", { events });
	}

	rememberHandlerEvents(events) {
		this.lastHandlerEvents = JSON.stringify([...events].sort());
	}

	/** Every command with its invocation name: duplicates across extensions become name:1, name:2, … */
	resolveCommands() {
		const commands = [];
		const counts = new Map();
		for (const ext of this.extensions) {
			for (const command of ext.commands.values()) {
				commands.push({ ext, command });
				counts.set(command.name, (counts.get(command.name) ?? 0) + 1);
			}
		}
		const seen = new Map();
		const taken = new Set();
		return commands.map(({ ext, command }) => {
			const occurrence = (seen.get(command.name) ?? 0) + 1;
			seen.set(command.name, occurrence);
			let invocationName = counts.get(command.name) > 1 ? `${command.name}:${occurrence}` : command.name;
			let suffix = occurrence;
			while (taken.has(invocationName)) invocationName = `${command.name}:${++suffix}`;
			taken.add(invocationName);
			return { ext, command, invocationName };
		});
	}

	findCommand(invocationName) {
		return this.resolveCommands().find((c) => c.invocationName === invocationName);
	}

	/** The tool pi knows by `name`: the first registration in load order. */
	findTool(name) {
		for (const ext of this.extensions) {
			const tool = ext.tools.get(name);
			if (tool) return { ext, definition: tool.definition };
		}
		return undefined;
	}

	/** The provider with a JS streamSimple for `api` (the latest registration wins). */
	findStreamProvider(api) {
		return this.streamProviders.filter((p) => p.api === api).at(-1);
	}
}
