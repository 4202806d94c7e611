// @earendil-works/pi-coding-agent as extensions see it in the host. Every runtime name of Pi 1.6.0
// exists: helpers extensions use work (pure ones here, session/message ones through pi's `js`
// call), TUI classes are inert, and the SDK entry points fail with a clear message.
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { createEventBus } from "../lib/event-bus.mjs";
import { host, piFunction } from "../lib/state.mjs";
import { createBuiltinTool, createBuiltinToolDefinition, withFileMutationQueue } from "./builtin-tools.mjs";
import { unavailable, unavailableClass } from "./inert.mjs";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateHead, truncateLine, truncateTail } from "./truncate.mjs";

export * from "./coding-agent-ui.mjs";
export { createEventBus, withFileMutationQueue };
export { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateHead, truncateLine, truncateTail };

export const VERSION = "1.6.0";
export const CONFIG_DIR_NAME = ".pi";
export const CURRENT_SESSION_VERSION = 3;
export const VIRTUAL_MODEL_STATE_ENTRY = "pi.virtual-model-state";
export const DEFAULT_COMPACTION_SETTINGS = Object.freeze({ enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 });

/** The agent dir pi uses (from `init`), else `$PI_CODING_AGENT_DIR`, else ~/.pi/agent. */
export function getAgentDir() {
	if (host.config.agentDir) return host.config.agentDir;
	const fromEnv = process.env.PI_CODING_AGENT_DIR;
	if (fromEnv) return fromEnv === "~" ? os.homedir() : fromEnv.startsWith("~/") ? path.join(os.homedir(), fromEnv.slice(2)) : fromEnv;
	return path.join(os.homedir(), CONFIG_DIR_NAME, "agent");
}

// ---- tool definitions and event type guards ---------------------------------------------------

export const defineTool = (tool) => tool;
export const isToolCallEventType = (toolName, event) => event.toolName === toolName;
export const isBashToolResult = (e) => e.toolName === "bash";
export const isPowerShellToolResult = (e) => e.toolName === "powershell";
export const isReadToolResult = (e) => e.toolName === "read";
export const isEditToolResult = (e) => e.toolName === "edit";
export const isWriteToolResult = (e) => e.toolName === "write";
export const isGrepToolResult = (e) => e.toolName === "grep";
export const isFindToolResult = (e) => e.toolName === "find";
export const isLsToolResult = (e) => e.toolName === "ls";

// ---- built-in tools (executed by pi) ------------------------------------------------------------

const definitionFactory = (name) => (cwd, options) => createBuiltinToolDefinition(name, cwd, options);
const toolFactory = (name) => (cwd, options) => createBuiltinTool(name, cwd, options);

export const createReadToolDefinition = definitionFactory("read");
export const createBashToolDefinition = definitionFactory("bash");
export const createEditToolDefinition = definitionFactory("edit");
export const createWriteToolDefinition = definitionFactory("write");
export const createGrepToolDefinition = definitionFactory("grep");
export const createFindToolDefinition = definitionFactory("find");
export const createLsToolDefinition = definitionFactory("ls");
export const createPowerShellToolDefinition = definitionFactory("powershell");
export const createReadTool = toolFactory("read");
export const createBashTool = toolFactory("bash");
export const createEditTool = toolFactory("edit");
export const createWriteTool = toolFactory("write");
export const createGrepTool = toolFactory("grep");
export const createFindTool = toolFactory("find");
export const createLsTool = toolFactory("ls");
export const createPowerShellTool = toolFactory("powershell");

export const createCodingTools = (cwd, options) =>
	["read", "bash", "edit", "write"].map((name) => createBuiltinTool(name, cwd, options?.[name]));
export const createReadOnlyTools = (cwd, options) =>
	["read", "grep", "find", "ls"].map((name) => createBuiltinTool(name, cwd, options?.[name]));

/** Local shell operations ({exec}) for extensions that wrap or delegate to them. */
function createShellOperations(shell, argsFor) {
	return {
		exec(command, cwd, { onData, signal, timeout, env } = {}) {
			return new Promise((resolve, reject) => {
				if (signal?.aborted) return reject(new Error("aborted"));
				const child = spawn(shell, argsFor(command), {
					cwd,
					env: env ?? process.env,
					stdio: ["ignore", "pipe", "pipe"],
					detached: process.platform !== "win32",
				});
				let timer;
				let reason;
				const kill = (why) => {
					reason = why;
					try {
						process.kill(-child.pid, "SIGKILL");
					} catch {
						child.kill("SIGKILL");
					}
				};
				const onAbort = () => kill("aborted");
				signal?.addEventListener("abort", onAbort, { once: true });
				if (timeout && timeout > 0) timer = setTimeout(() => kill(`timeout:${timeout}`), timeout * 1000);
				child.stdout.on("data", (data) => onData?.(data));
				child.stderr.on("data", (data) => onData?.(data));
				child.on("error", (error) => {
					clearTimeout(timer);
					signal?.removeEventListener("abort", onAbort);
					reject(error);
				});
				child.on("close", (code) => {
					clearTimeout(timer);
					signal?.removeEventListener("abort", onAbort);
					if (reason) reject(new Error(reason));
					else resolve({ exitCode: code });
				});
			});
		},
	};
}

export const createLocalBashOperations = (options) =>
	createShellOperations(options?.shellPath ?? "bash", (command) => ["-c", command]);
export const createLocalPowerShellOperations = () =>
	createShellOperations("pwsh", (command) => ["-NoProfile", "-NonInteractive", "-Command", command]);

// ---- helpers implemented by pi (the `js` sync call) ---------------------------------------------

const viaPi = (name) => ({ [name]: (...args) => piFunction(name, ...args) })[name];

export const parseFrontmatter = viaPi("parseFrontmatter");
export const stripFrontmatter = viaPi("stripFrontmatter");
export const convertToLlm = viaPi("convertToLlm");
export const serializeConversation = viaPi("serializeConversation");
export const estimateTokens = viaPi("estimateTokens");
export const buildContextEntries = viaPi("buildContextEntries");
export const buildSessionContext = viaPi("buildSessionContext");
export const buildSessionProjection = viaPi("buildSessionProjection");
export const calculateContextTokens = viaPi("calculateContextTokens");
export const collectEntriesForBranchSummary = viaPi("collectEntriesForBranchSummary");
export const createSyntheticSourceInfo = viaPi("createSyntheticSourceInfo");
export const findCutPoint = viaPi("findCutPoint");
export const findTurnStartIndex = viaPi("findTurnStartIndex");
export const formatDimensionNote = viaPi("formatDimensionNote");
export const formatReadLineRange = viaPi("formatReadLineRange");
export const formatSkillsForPrompt = viaPi("formatSkillsForPrompt");
export const generateDiffString = viaPi("generateDiffString");
export const generateUnifiedPatch = viaPi("generateUnifiedPatch");
export const getLanguageFromPath = viaPi("getLanguageFromPath");
export const getLastAssistantUsage = viaPi("getLastAssistantUsage");
export const getLatestCompactionEntry = viaPi("getLatestCompactionEntry");
export const migrateSessionEntries = viaPi("migrateSessionEntries");
export const parseSessionEntries = viaPi("parseSessionEntries");
export const parseSkillBlock = viaPi("parseSkillBlock");
export const prepareBranchEntries = viaPi("prepareBranchEntries");
export const sessionEntryToContextMessages = viaPi("sessionEntryToContextMessages");
export const shouldCompact = viaPi("shouldCompact");

// ---- SessionManager: session files belong to pi; extensions use ctx.sessionManager -------------

export class SessionManager {
	constructor() {
		throw new Error("SessionManager cannot be constructed in the pi extension host; use ctx.sessionManager");
	}
	static create = unavailable("SessionManager.create");
	static open = unavailable("SessionManager.open");
	static inMemory = unavailable("SessionManager.inMemory");
	static continueRecent = unavailable("SessionManager.continueRecent");
	static forkFrom = unavailable("SessionManager.forkFrom");
	static list = unavailable("SessionManager.list");
	static listAll = unavailable("SessionManager.listAll");
}

export class CredentialSynchronizationError extends Error {
	constructor(message, options) {
		super(message, options);
		this.name = "CredentialSynchronizationError";
	}
}

// ---- the SDK and CLI: Pi's own runtime, not available inside an extension host -----------------

export const AgentSession = unavailableClass("AgentSession");
export const AgentSessionRuntime = unavailableClass("AgentSessionRuntime");
export const DefaultPackageManager = unavailableClass("DefaultPackageManager");
export const DefaultResourceLoader = unavailableClass("DefaultResourceLoader");
export const ExtensionRunner = unavailableClass("ExtensionRunner");
export const InteractiveMode = unavailableClass("InteractiveMode");
export const ModelRegistry = unavailableClass("ModelRegistry");
export const ModelRuntime = unavailableClass("ModelRuntime");
export const ProjectTrustStore = unavailableClass("ProjectTrustStore");
export const RpcClient = unavailableClass("RpcClient");
export const SettingsManager = unavailableClass("SettingsManager");
export const compact = unavailable("compact");
export const convertToPng = unavailable("convertToPng");
export const copyToClipboard = unavailable("copyToClipboard");
export const createAgentSession = unavailable("createAgentSession");
export const createAgentSessionFromServices = unavailable("createAgentSessionFromServices");
export const createAgentSessionRuntime = unavailable("createAgentSessionRuntime");
export const createAgentSessionServices = unavailable("createAgentSessionServices");
export const createCodemodeExtension = unavailable("createCodemodeExtension");
export const createExtensionRuntime = unavailable("createExtensionRuntime");
export const createMcpExtension = unavailable("createMcpExtension");
export const createToolSearchExtension = unavailable("createToolSearchExtension");
export const detectSupportedImageMimeTypeFromFile = unavailable("detectSupportedImageMimeTypeFromFile");
export const discoverAndLoadExtensions = unavailable("discoverAndLoadExtensions");
export const generateBranchSummary = unavailable("generateBranchSummary");
export const generateSummary = unavailable("generateSummary");
export const generateSummaryWithUsage = unavailable("generateSummaryWithUsage");
export const getDocsPath = unavailable("getDocsPath");
export const getExamplesPath = unavailable("getExamplesPath");
export const getPackageDir = unavailable("getPackageDir");
export const getPowerShellConfig = unavailable("getPowerShellConfig");
export const getReadmePath = unavailable("getReadmePath");
export const getShellConfig = unavailable("getShellConfig");
export const hasTrustRequiringProjectResources = unavailable("hasTrustRequiringProjectResources");
export const loadProjectContextFiles = unavailable("loadProjectContextFiles");
export const loadSkills = unavailable("loadSkills");
export const loadSkillsFromDir = unavailable("loadSkillsFromDir");
export const main = unavailable("main");
export const parseArgs = unavailable("parseArgs");
export const readStoredCredential = unavailable("readStoredCredential");
export const resizeImage = unavailable("resizeImage");
export const resolveCliModel = unavailable("resolveCliModel");
export const resolveModelScopeWithDiagnostics = unavailable("resolveModelScopeWithDiagnostics");
export const runPrintMode = unavailable("runPrintMode");
export const runRpcMode = unavailable("runRpcMode");
export const wrapRegisteredTool = unavailable("wrapRegisteredTool");
export const wrapRegisteredTools = unavailable("wrapRegisteredTools");
