// Loading a generation of extensions (`init`, `reinit`, `reload`): jiti imports each file with
// the host-provided modules mapped in, factories run one after another, and the result lists
// what every extension registered plus Pi's load-error texts.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createJiti } from "jiti";
import { createExtensionAPI, mcpServerList } from "./api.mjs";
import { emitLocal } from "./dispatch.mjs";
import { createEventBus } from "./event-bus.mjs";
import { createSessionManagerFacade } from "./facades.mjs";
import { buildRegistration, flushQueuedProviders } from "./registration.mjs";
import { createExtension, Runtime } from "./runtime.mjs";
import { errorMessage, host } from "./state.mjs";
import { resetTheme } from "./theme.mjs";
import { createNoOpUI, createRpcUI, wrapUIPrompts } from "./ui.mjs";
import { VIRTUAL_MODULES } from "./virtual-modules.mjs";

// Factories by resolved path, kept across `reinit` in the same cwd (module-level state survives a
// new session) and dropped by `reload` or a cwd change (fresh module instances), as in Pi.
const factoryCache = new Map();
let factoryCacheCwd;

function expandHome(p) {
	if (p === "~") return os.homedir();
	if (p.startsWith("~/")) return path.join(os.homedir(), p.slice(2));
	return p;
}

function resolveFsPath(p, cwd) {
	return path.resolve(cwd, expandHome(String(p)));
}

function isFile(p) {
	try {
		return fs.statSync(p).isFile();
	} catch {
		return false;
	}
}

function isDirectory(p) {
	try {
		return fs.statSync(p).isDirectory();
	} catch {
		return false;
	}
}

function manifestEntries(dir) {
	try {
		const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
		const list = pkg?.pi?.extensions;
		if (!Array.isArray(list)) return undefined;
		const entries = list
			.filter((e) => typeof e === "string" && !/^[!+-]/.test(e))
			.map((e) => path.resolve(dir, e))
			.filter((e) => fs.existsSync(e));
		return entries.length > 0 ? entries : undefined;
	} catch {
		return undefined;
	}
}

/** A package directory's entry points: its pi.extensions, else index.ts, else index.js. */
function packageEntries(dir) {
	const fromManifest = manifestEntries(dir);
	if (fromManifest) return fromManifest;
	for (const index of ["index.ts", "index.js"]) {
		if (isFile(path.join(dir, index))) return [path.join(dir, index)];
	}
	return undefined;
}

/** One level of auto-discovery, as for `.pi/extensions/`. */
function discoverDir(dir) {
	const own = packageEntries(dir);
	if (own) return own;
	const found = [];
	const names = fs.readdirSync(dir).sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));
	for (const name of names) {
		if (name.startsWith(".") || name === "node_modules") continue;
		const full = path.join(dir, name);
		if (isFile(full) && (name.endsWith(".ts") || name.endsWith(".js"))) found.push(full);
		else if (isDirectory(full)) found.push(...(packageEntries(full) ?? []));
	}
	return found;
}

/**
 * The extension files behind one configured path. pi normally sends files; a directory is
 * expanded like Pi's local package sources: pi.extensions of its package.json, else its
 * `extensions/` folder, else the directory itself (jiti resolves its index file).
 */
export function expandExtensionPath(p, cwd) {
	const resolved = resolveFsPath(p, cwd);
	if (!isDirectory(resolved)) return [p];
	const fromManifest = manifestEntries(resolved);
	if (fromManifest) return fromManifest;
	const extensionsDir = path.join(resolved, "extensions");
	if (isDirectory(extensionsDir)) return discoverDir(extensionsDir);
	return [p];
}

async function importFactory(resolvedPath) {
	if (factoryCache.has(resolvedPath)) return factoryCache.get(resolvedPath);
	const jiti = createJiti(import.meta.url, { moduleCache: false, tryNative: false, virtualModules: VIRTUAL_MODULES });
	let canonical = resolvedPath;
	try {
		canonical = fs.realpathSync(resolvedPath);
	} catch {}
	const factory = await jiti.import(canonical, { default: true });
	if (typeof factory !== "function") return undefined;
	factoryCache.set(resolvedPath, factory);
	return factory;
}

async function loadExtension(runtime, extPath, sourceInfo) {
	const resolvedPath = resolveFsPath(extPath, runtime.cwd);
	try {
		const factory = await importFactory(resolvedPath);
		if (!factory) return { error: `Extension does not export a valid factory function: ${extPath}` };
		const extension = createExtension(extPath, sourceInfo);
		const load = createExtensionAPI(extension, runtime);
		try {
			await factory(load.api);
			load.commit();
		} catch (error) {
			load.discard();
			throw error;
		}
		return { extension };
	} catch (error) {
		return { error: `Failed to load extension: ${errorMessage(error)}` };
	}
}

/** Tools and flags registered by two extensions: reported on the later one, which stays loaded. */
function detectConflicts(extensions) {
	const conflicts = [];
	const toolOwners = new Map();
	const flagOwners = new Map();
	for (const ext of extensions) {
		for (const name of ext.tools.keys()) {
			const owner = toolOwners.get(name);
			if (owner && owner !== ext.path) conflicts.push({ path: ext.path, error: `Tool "${name}" conflicts with ${owner}` });
			else toolOwners.set(name, ext.path);
		}
		for (const name of ext.flags.keys()) {
			const owner = flagOwners.get(name);
			if (owner && owner !== ext.path) conflicts.push({ path: ext.path, error: `Flag "--${name}" conflicts with ${owner}` });
			else flagOwners.set(name, ext.path);
		}
	}
	return conflicts;
}

/** CLI values as pi parsed them, matched against registered flags (booleans become true). */
export function applyFlagValues(runtime, values) {
	const registered = new Map();
	for (const ext of runtime.extensions) for (const [name, flag] of ext.flags) registered.set(name, flag.type);
	for (const [name, value] of Object.entries(values ?? {})) {
		const type = registered.get(name);
		if (type === "boolean") runtime.flagValues.set(name, value === false ? false : true);
		else if (type === "string" && typeof value === "string") runtime.flagValues.set(name, value);
	}
}

/** Makes process.argv[1] start pi (see pi-shim.mjs); execPath stays node so fork() keeps working. */
function usePiShim(piPath) {
	process.env.PI_EXT_HOST_PI_PATH = piPath;
	process.argv[1] = fileURLToPath(new URL("../pi-shim.mjs", import.meta.url));
}

/**
 * Loads a new generation. `kind` is "init", "reinit" or "reload"; `request` carries the fields of
 * PROTOCOL.md (reinit may omit `extensions`/`flagValues`: the previous ones are reused).
 */
export async function loadGeneration(kind, request) {
	const previous = host.runtime;
	previous?.invalidate();
	if (kind === "init") {
		host.config = {
			cwd: request.cwd ?? process.cwd(),
			agentDir: request.agentDir,
			mode: request.mode ?? "rpc",
			hasUI: Boolean(request.hasUI),
			piVersion: request.piVersion ?? "1.6.0",
		};
		resetTheme();
		if (request.piPath) usePiShim(request.piPath);
	} else if (request.cwd) {
		host.config.cwd = request.cwd;
	}
	const cwd = host.config.cwd;
	if (kind !== "reinit" || factoryCacheCwd !== cwd) factoryCache.clear();
	factoryCacheCwd = cwd;
	if (kind === "reload") resetTheme();

	const extensions = request.extensions ?? host.lastExtensions ?? [];
	const flagValues = request.flagValues ?? (kind === "reinit" ? host.lastFlagValues : undefined) ?? {};
	host.lastExtensions = extensions;
	host.lastFlagValues = flagValues;

	// The event bus lives as long as the session: a reload keeps it, a new session does not.
	const eventBus = kind === "reload" && previous ? previous.eventBus : createEventBus();
	const runtime = new Runtime({ cwd, mode: host.config.mode, hasUI: host.config.hasUI, eventBus });
	runtime.ui = runtime.hasUI ? wrapUIPrompts(createRpcUI(), runtime, emitLocal) : createNoOpUI();
	host.runtime = runtime;

	const errors = [];
	for (const { path: configured, sourceInfo } of extensions) {
		for (const extPath of expandExtensionPath(configured, cwd)) {
			const { extension, error } = await loadExtension(runtime, extPath, sourceInfo);
			if (error) errors.push({ path: extPath, error });
			else runtime.extensions.push(extension);
		}
	}
	errors.push(...detectConflicts(runtime.extensions));

	if (kind === "reload" && previous) applyFlagValues(runtime, Object.fromEntries(previous.flagValues));
	applyFlagValues(runtime, flagValues);
	host.lastErrors = errors;

	// The pre-trust pass (Pi's loadProjectTrustExtensions): these extensions answer project_trust
	// before anything is bound; `extend` adds the rest and binds.
	if (kind === "init" && request.preTrust) return generationResult(runtime, errors);

	runtime.bound = true;
	flushQueuedProviders(runtime);

	const setup = host.pendingSessionSetup;
	if (kind === "reinit" && setup) {
		host.pendingSessionSetup = undefined;
		try {
			await setup(createSessionManagerFacade());
		} catch (error) {
			runtime.emitError({ extensionPath: "<runtime>", event: "new_session", error: errorMessage(error) });
		}
	}

	return generationResult(runtime, errors);
}

function generationResult(runtime, errors) {
	const handlers = runtime.handlerEvents();
	runtime.rememberHandlerEvents(handlers);
	return {
		extensions: runtime.extensions.map((ext) => buildRegistration(runtime, ext)),
		errors,
		handlers,
		mcpServers: mcpServerList(runtime),
	};
}

/**
 * After the pre-trust pass (Pi's loadFinalExtensionSet): the final list, in its order; the
 * extensions already loaded are kept as they are, those that failed are not tried again, the
 * others load now. Then the generation is bound. The result lists every extension.
 */
export async function extendGeneration(request) {
	const runtime = host.runtime;
	if (!runtime) throw new Error("No extensions are loaded (init has not run)");
	const cwd = host.config.cwd;
	const loaded = new Map(runtime.extensions.map((ext) => [ext.path, ext]));
	const failed = new Set((host.lastErrors ?? []).map((e) => e.path));
	const errors = [...(host.lastErrors ?? [])];
	const order = [];
	for (const { path: configured, sourceInfo } of request.extensions ?? []) {
		for (const extPath of expandExtensionPath(configured, cwd)) {
			order.push(extPath);
			if (loaded.has(extPath) || failed.has(extPath)) continue;
			const { extension, error } = await loadExtension(runtime, extPath, sourceInfo);
			if (error) errors.push({ path: extPath, error });
			else loaded.set(extPath, extension);
		}
	}
	runtime.extensions = order.map((p) => loaded.get(p)).filter((ext) => ext !== undefined);
	for (const conflict of detectConflicts(runtime.extensions)) {
		if (!errors.some((e) => e.path === conflict.path && e.error === conflict.error)) errors.push(conflict);
	}
	host.lastExtensions = request.extensions ?? [];
	applyFlagValues(runtime, host.lastFlagValues ?? {});
	runtime.bound = true;
	flushQueuedProviders(runtime);
	return generationResult(runtime, errors);
}
