// ctx.ui: in RPC mode every call becomes an `extension_ui_request` record (sent as a `ui` effect),
// dialogs wait for the matching `ui_response`; without a UI (json/print) everything is inert.
import { randomUUID } from "node:crypto";
import { effect } from "./state.mjs";
import { getTheme } from "./theme.mjs";

/** Open dialogs by request id; a `ui_response` resolves and removes one. */
const pendingDialogs = new Map();

export function handleUIResponse(response) {
	const resolve = response && pendingDialogs.get(response.id);
	if (!resolve) return; // unknown, late or already timed out: ignored, like Pi
	pendingDialogs.delete(response.id);
	resolve(response);
}

function sendRecord(request) {
	effect("ui", { request: { type: "extension_ui_request", id: randomUUID(), ...request } });
}

function dialog(opts, defaultValue, request, parse) {
	if (opts?.signal?.aborted) return Promise.resolve(defaultValue);
	const id = randomUUID();
	return new Promise((resolve) => {
		let timer;
		const cleanup = () => {
			clearTimeout(timer);
			opts?.signal?.removeEventListener("abort", onAbort);
			pendingDialogs.delete(id);
		};
		const onAbort = () => {
			cleanup();
			resolve(defaultValue);
		};
		opts?.signal?.addEventListener("abort", onAbort, { once: true });
		if (opts?.timeout) {
			timer = setTimeout(() => {
				cleanup();
				resolve(defaultValue);
			}, opts.timeout);
		}
		pendingDialogs.set(id, (response) => {
			cleanup();
			resolve(parse(response));
		});
		effect("ui", { request: { type: "extension_ui_request", id, ...request } });
	});
}

const valueOf = (r) => ("cancelled" in r && r.cancelled ? undefined : "value" in r ? r.value : undefined);
const confirmedOf = (r) => ("cancelled" in r && r.cancelled ? false : "confirmed" in r ? r.confirmed : false);

export function createRpcUI() {
	return {
		select: (title, options, opts) =>
			dialog(opts, undefined, { method: "select", title, options, timeout: opts?.timeout }, valueOf),
		confirm: (title, message, opts) =>
			dialog(opts, false, { method: "confirm", title, message, timeout: opts?.timeout }, confirmedOf),
		input: (title, placeholder, opts) =>
			dialog(opts, undefined, { method: "input", title, placeholder, timeout: opts?.timeout }, valueOf),
		// Pi's editor dialog has no timeout or signal.
		editor: (title, prefill) => dialog(undefined, undefined, { method: "editor", title, prefill }, valueOf),
		notify(message, type) {
			sendRecord({ method: "notify", message, notifyType: type });
		},
		onTerminalInput() {
			return () => {};
		},
		setStatus(key, text) {
			sendRecord({ method: "setStatus", statusKey: key, statusText: text });
		},
		setWorkingMessage() {},
		setWorkingVisible() {},
		setWorkingIndicator() {},
		setHiddenThinkingLabel() {},
		setWidget(key, content, options) {
			// Component factories cannot be shown over RPC: no record for them.
			if (content === undefined || Array.isArray(content)) {
				sendRecord({ method: "setWidget", widgetKey: key, widgetLines: content, widgetPlacement: options?.placement });
			}
		},
		setFooter() {},
		setHeader() {},
		setTitle(title) {
			sendRecord({ method: "setTitle", title });
		},
		async custom() {
			return undefined;
		},
		pasteToEditor(text) {
			this.setEditorText(text);
		},
		setEditorText(text) {
			sendRecord({ method: "set_editor_text", text });
		},
		getEditorText() {
			return "";
		},
		addAutocompleteProvider() {},
		setEditorComponent() {},
		getEditorComponent() {
			return undefined;
		},
		get theme() {
			return getTheme();
		},
		getAllThemes() {
			return [];
		},
		getTheme() {
			return undefined;
		},
		setTheme() {
			return { success: false, error: "Theme switching not supported in RPC mode" };
		},
		getToolsExpanded() {
			return false;
		},
		setToolsExpanded() {},
	};
}

/** The UI of json/print modes and of the project_trust ctx: nothing is shown. */
export function createNoOpUI() {
	return {
		select: async () => undefined,
		confirm: async () => false,
		input: async () => undefined,
		notify: () => {},
		onTerminalInput: () => () => {},
		setStatus: () => {},
		setWorkingMessage: () => {},
		setWorkingVisible: () => {},
		setWorkingIndicator: () => {},
		setHiddenThinkingLabel: () => {},
		setWidget: () => {},
		setFooter: () => {},
		setHeader: () => {},
		setTitle: () => {},
		custom: async () => undefined,
		pasteToEditor: () => {},
		setEditorText: () => {},
		getEditorText: () => "",
		editor: async () => undefined,
		addAutocompleteProvider: () => {},
		setEditorComponent: () => {},
		getEditorComponent: () => undefined,
		get theme() {
			return getTheme();
		},
		getAllThemes: () => [],
		getTheme: () => undefined,
		setTheme: () => ({ success: false, error: "UI not available" }),
		getToolsExpanded: () => false,
		setToolsExpanded: () => {},
	};
}

/**
 * Wraps the dialogs so handlers of `ui_prompt_start`/`ui_prompt_end` run around them (nested
 * prompts coalesce into one pair). The events are dispatched here, in the host, on a microtask.
 */
export function wrapUIPrompts(ui, runtime, emitLocal) {
	const emitLater = (event) => queueMicrotask(() => void emitLocal(runtime, event));
	const withPrompt = (kind, title, run) => {
		const outer = runtime.uiPromptDepth++ === 0;
		if (outer) {
			runtime.activeUIPrompt = { kind, title };
			emitLater({ type: "ui_prompt_start", reason: "ui_prompt", kind, ...(title ? { title } : {}) });
		}
		const finish = () => {
			if (--runtime.uiPromptDepth > 0) return;
			runtime.uiPromptDepth = 0;
			const prompt = runtime.activeUIPrompt ?? { kind, title };
			runtime.activeUIPrompt = undefined;
			emitLater({
				type: "ui_prompt_end",
				reason: "ui_prompt",
				kind: prompt.kind,
				...(prompt.title ? { title: prompt.title } : {}),
			});
		};
		try {
			return run().finally(finish);
		} catch (error) {
			finish();
			throw error;
		}
	};
	const wrapped = Object.defineProperties({}, Object.getOwnPropertyDescriptors(ui));
	wrapped.select = (title, options, opts) => withPrompt("select", title, () => ui.select(title, options, opts));
	wrapped.confirm = (title, message, opts) => withPrompt("confirm", title, () => ui.confirm(title, message, opts));
	wrapped.input = (title, placeholder, opts) => withPrompt("input", title, () => ui.input(title, placeholder, opts));
	wrapped.editor = (title, prefill) => withPrompt("editor", title, () => ui.editor(title, prefill));
	wrapped.custom = (factory, options) => withPrompt("custom", undefined, () => ui.custom(factory, options));
	return wrapped;
}
