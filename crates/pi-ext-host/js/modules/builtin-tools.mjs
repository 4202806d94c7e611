// The built-in tool factories extensions import (createReadTool & co). Definitions carry Pi's exact
// names, descriptions and schemas (they reach the model); execution is pi's own Rust tool, through
// the async call `run_builtin_tool`.
import { realpath } from "node:fs/promises";
import path from "node:path";
import { Type } from "typebox";
import { callAsync, host } from "../lib/state.mjs";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH } from "./truncate.mjs";

const SESSION_ENV_GUIDELINE = "You can inspect PI_* environment variables for current model and session details.";
const JSON_SCHEMA_PREFERRED = { type: "json_schema", strict: "prefer" };
const KB = DEFAULT_MAX_BYTES / 1024;

const shellSchema = () =>
	Type.Object({
		command: Type.String({ description: "Shell command to execute" }),
		timeout: Type.Optional(Type.Number({ description: "Timeout in seconds (optional, no default timeout)" })),
	});

const shellOutputSchema = () =>
	Type.Object({
		output: Type.String({ description: "Combined stdout and stderr, possibly truncated" }),
		truncated: Type.Boolean(),
		full_output_path: Type.Optional(Type.String({ description: "Full output, when truncated" })),
		exit_code: Type.Number(),
		wall_time_seconds: Type.Number(),
	});

const shellDescription = (shell) =>
	`Execute a ${shell} command in the current working directory. Returns stdout and stderr. Output is truncated to last ${DEFAULT_MAX_LINES} lines or ${KB}KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.`;

const SPECS = {
	read: () => ({
		description: `Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to ${DEFAULT_MAX_LINES} lines or ${KB}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.`,
		promptSnippet: "Read file contents",
		promptGuidelines: ["Use read to examine files instead of cat or sed."],
		parameters: Type.Object({
			path: Type.String({ description: "Path to the file to read (relative or absolute)" }),
			offset: Type.Optional(Type.Number({ description: "Line number to start reading from (1-indexed)" })),
			limit: Type.Optional(Type.Number({ description: "Maximum number of lines to read" })),
		}),
		outputSchema: Type.Union([
			Type.String(),
			Type.Object({ type: Type.Literal("image"), data: Type.String(), mimeType: Type.String(), note: Type.String() }),
		]),
		constrainedSampling: JSON_SCHEMA_PREFERRED,
	}),
	bash: (options) => ({
		description: shellDescription("bash"),
		promptSnippet: "Execute bash commands (ls, grep, find, etc.)",
		promptGuidelines: (options?.exposeSessionEnvironment ?? true) ? [SESSION_ENV_GUIDELINE] : undefined,
		parameters: shellSchema(),
		outputSchema: shellOutputSchema(),
		constrainedSampling: JSON_SCHEMA_PREFERRED,
	}),
	powershell: (options) => ({
		description: shellDescription("PowerShell"),
		promptSnippet: "Execute PowerShell commands",
		promptGuidelines: (options?.exposeSessionEnvironment ?? true) ? [SESSION_ENV_GUIDELINE] : undefined,
		parameters: shellSchema(),
		outputSchema: shellOutputSchema(),
		constrainedSampling: JSON_SCHEMA_PREFERRED,
	}),
	edit: () => ({
		description:
			"Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
		promptSnippet: "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
		promptGuidelines: [
			"Use edit for targeted changes. Batch changes to one file in a single call.",
			"Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
		],
		parameters: Type.Object(
			{
				path: Type.String({ description: "Path to the file to edit (relative or absolute)" }),
				edits: Type.Array(
					Type.Object(
						{
							oldText: Type.String({
								description:
									"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.",
							}),
							newText: Type.String({ description: "Replacement text for this targeted edit." }),
						},
						{},
					),
					{
						description:
							"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.",
					},
				),
			},
			{},
		),
		constrainedSampling: JSON_SCHEMA_PREFERRED,
		prepareArguments: prepareEditArguments,
	}),
	write: () => ({
		description:
			"Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
		promptSnippet: "Create or overwrite files",
		promptGuidelines: ["Use write only for new files or complete rewrites."],
		parameters: Type.Object({
			path: Type.String({ description: "Path to the file to write (relative or absolute)" }),
			content: Type.String({ description: "Content to write to the file" }),
		}),
		constrainedSampling: JSON_SCHEMA_PREFERRED,
	}),
	grep: () => ({
		description: `Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or ${KB}KB (whichever is hit first). Long lines are truncated to ${GREP_MAX_LINE_LENGTH} chars.`,
		promptSnippet: "Search file contents for patterns (respects .gitignore)",
		parameters: Type.Object({
			pattern: Type.String({ description: "Search pattern (regex or literal string)" }),
			path: Type.Optional(Type.String({ description: "Directory or file to search (default: current directory)" })),
			glob: Type.Optional(
				Type.String({
					description:
						"Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth",
				}),
			),
			ignoreCase: Type.Optional(Type.Boolean({ description: "Case-insensitive search (default: false)" })),
			literal: Type.Optional(
				Type.Boolean({ description: "Treat pattern as literal string instead of regex (default: false)" }),
			),
			context: Type.Optional(
				Type.Number({ description: "Number of lines to show before and after each match (default: 0)" }),
			),
			limit: Type.Optional(Type.Number({ description: "Maximum number of matches to return (default: 100)" })),
		}),
	}),
	find: () => ({
		description: `Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or ${KB}KB (whichever is hit first).`,
		promptSnippet: "Find files by glob pattern (respects .gitignore)",
		parameters: Type.Object({
			pattern: Type.String({
				description:
					"Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth",
			}),
			path: Type.Optional(Type.String({ description: "Directory to search in (default: current directory)" })),
			limit: Type.Optional(Type.Number({ description: "Maximum number of results (default: 1000)" })),
		}),
	}),
	ls: () => ({
		description: `List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or ${KB}KB (whichever is hit first).`,
		promptSnippet: "List directory contents",
		parameters: Type.Object({
			path: Type.Optional(Type.String({ description: "Directory to list (default: current directory)" })),
			limit: Type.Optional(Type.Number({ description: "Maximum number of entries to return (default: 500)" })),
		}),
	}),
};

const isSingleEdit = (value) =>
	Boolean(value) &&
	typeof value === "object" &&
	!Array.isArray(value) &&
	typeof value.oldText === "string" &&
	typeof value.newText === "string";

/** Accepts the shapes models send besides `edits: [...]`: a JSON string, one edit, or legacy fields. */
function prepareEditArguments(input) {
	if (!input || typeof input !== "object") return input;
	const args = input;
	if (typeof args.edits === "string") {
		try {
			const parsed = JSON.parse(args.edits);
			if (Array.isArray(parsed)) args.edits = parsed;
			else if (isSingleEdit(parsed)) args.edits = [parsed];
		} catch {}
	} else if (isSingleEdit(args.edits)) {
		args.edits = [args.edits];
	}
	if (typeof args.oldText !== "string" || typeof args.newText !== "string") return args;
	const edits = Array.isArray(args.edits) ? [...args.edits] : [];
	edits.push({ oldText: args.oldText, newText: args.newText });
	const { oldText: _o, newText: _n, ...rest } = args;
	return { ...rest, edits };
}

/** Pi's getShellEnv(): this process's environment with `<agentDir>/bin` first on PATH. */
function shellEnv() {
	const env = { ...process.env };
	const binDir = path.join(host.config.agentDir ?? "", "bin");
	const pathKey = Object.keys(env).find((key) => key.toLowerCase() === "path") ?? "PATH";
	const current = env[pathKey] ?? "";
	if (host.config.agentDir && !current.split(path.delimiter).filter(Boolean).includes(binDir)) {
		env[pathKey] = [binDir, current].filter(Boolean).join(path.delimiter);
	}
	return env;
}

/** The bash spawn context an extension's spawnHook may rewrite (command, cwd, env). */
function spawnContext(command, cwd, options, ctx) {
	const env = shellEnv();
	for (const key of ["PI_EXT_HOST", "PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL"]) {
		delete env[key];
	}
	if ((options?.exposeSessionEnvironment ?? true) && ctx) {
		env.PI_SESSION_ID = ctx.sessionManager.getSessionId();
		const file = ctx.sessionManager.getSessionFile();
		if (file) env.PI_SESSION_FILE = file;
		if (ctx.model) {
			env.PI_PROVIDER = ctx.model.provider;
			env.PI_MODEL = ctx.model.id;
		}
		if (ctx.thinkingLevel) env.PI_REASONING_LEVEL = ctx.thinkingLevel;
	}
	return options.spawnHook({ command, cwd, env });
}

// The onUpdate callbacks of built-in tool runs in progress, by the id pi reports progress under.
const builtinUpdates = new Map();
let nextUpdateId = 1;

/** pi's `builtin_update` notification: progress of a built-in tool run, for its onUpdate. */
export function handleBuiltinUpdate({ updateId, partialResult }) {
	builtinUpdates.get(updateId)?.(partialResult);
}

// Custom `operations` of built-in tool runs in progress: pi's tool asks the host to run each one
// (`builtin_op`), by the id it got with `run_builtin_tool`.
const runOperations = new Map();
let nextOperationsId = 1;
// AbortControllers of commands running through operations, for pi's `op_abort`.
const execControllers = new Map();

/** What an operation threw, as pi reports it to the tool: message, code (if any), String(error). */
function thrown(error) {
	const message = error instanceof Error ? error.message : String(error);
	const code = error && typeof error === "object" && "code" in error && error.code != null ? String(error.code) : undefined;
	return { error: { message, code, text: String(error) } };
}

// Operations a user_bash handler returned: they serve one command, then they are dropped.
const singleCommandOperations = new Set();

/** Keeps `ops` for a user_bash command run through them; returns the id pi refers to them by. */
export function registerCommandOperations(ops) {
	const id = nextOperationsId++;
	runOperations.set(id, ops);
	singleCommandOperations.add(id);
	return id;
}

/** pi's `builtin_op` request: one operation of a tool running with custom operations. */
export async function runBuiltinOperation(msg) {
	const ops = runOperations.get(msg.operationsId);
	if (!ops) throw new Error("The tool's operations are gone");
	if (msg.op === "exec" && singleCommandOperations.delete(msg.operationsId)) {
		runOperations.delete(msg.operationsId);
	}
	try {
		switch (msg.op) {
			case "access":
				await ops.access(msg.path);
				return { value: null };
			case "readFile": {
				const data = await ops.readFile(msg.path);
				return { value: Buffer.from(data).toString("base64") };
			}
			case "detectImageMimeType":
				return { value: ops.detectImageMimeType ? ((await ops.detectImageMimeType(msg.path)) ?? null) : null };
			case "writeFile":
				await ops.writeFile(msg.path, msg.content);
				return { value: null };
			case "mkdir":
				await ops.mkdir(msg.path);
				return { value: null };
			case "exec": {
				const controller = new AbortController();
				execControllers.set(msg.execId, controller);
				try {
					const result = await ops.exec(msg.command, msg.cwd, {
						onData: (chunk) =>
							host.channel.notify("op_data", { execId: msg.execId, data: Buffer.from(chunk).toString("base64") }),
						signal: controller.signal,
						timeout: msg.timeout ?? undefined,
						env: msg.env,
					});
					return { value: { exitCode: result?.exitCode ?? null } };
				} finally {
					execControllers.delete(msg.execId);
				}
			}
			default:
				throw new Error(`Unknown operation: ${msg.op}`);
		}
	} catch (error) {
		return thrown(error);
	}
}

/** pi's `op_abort`: the tool running a command through operations was aborted. */
export function abortBuiltinOperation({ execId }) {
	execControllers.get(execId)?.abort();
}

function createExecute(name, cwd, options) {
	return async (toolCallId, params, signal, onUpdate, ctx) => {
		if (signal?.aborted) throw new Error("Operation aborted");
		let args = params;
		let runCwd = ctx?.cwd || cwd;
		let env;
		if (name === "bash" || name === "powershell") {
			let command = options?.commandPrefix ? `${options.commandPrefix}\n${params.command}` : params.command;
			if (typeof options?.spawnHook === "function") {
				const hooked = spawnContext(command, runCwd, options, ctx);
				command = hooked.command;
				runCwd = hooked.cwd;
				env = hooked.env;
			}
			args = { ...params, command };
		}
		const request = { name, cwd: runCwd, params: args, toolCallId, env };
		const operationsId = options?.operations ? nextOperationsId++ : undefined;
		if (operationsId !== undefined) {
			runOperations.set(operationsId, options.operations);
			request.operationsId = operationsId;
		}
		const updateId = typeof onUpdate === "function" ? nextUpdateId++ : undefined;
		if (updateId !== undefined) {
			builtinUpdates.set(updateId, onUpdate);
			request.updateId = updateId;
		}
		try {
			return await callAsync("run_builtin_tool", request);
		} finally {
			if (updateId !== undefined) builtinUpdates.delete(updateId);
			if (operationsId !== undefined) runOperations.delete(operationsId);
		}
	};
}

export function createBuiltinToolDefinition(name, cwd = host.config.cwd, options) {
	const spec = SPECS[name](options);
	const definition = { name, label: name, description: spec.description, promptSnippet: spec.promptSnippet };
	if (spec.promptGuidelines) definition.promptGuidelines = [...spec.promptGuidelines];
	definition.parameters = spec.parameters;
	if (spec.outputSchema) definition.outputSchema = spec.outputSchema;
	if (spec.constrainedSampling) definition.constrainedSampling = spec.constrainedSampling;
	if (spec.prepareArguments) definition.prepareArguments = spec.prepareArguments;
	definition.execute = createExecute(name, path.resolve(cwd ?? process.cwd()), options);
	return definition;
}

/** The AgentTool form: no ctx, so the factory's cwd applies. bash also carries its prompt metadata. */
export function createBuiltinTool(name, cwd, options) {
	const definition = createBuiltinToolDefinition(name, cwd, options);
	const tool = {
		name: definition.name,
		label: definition.label,
		description: definition.description,
		parameters: definition.parameters,
		outputSchema: definition.outputSchema,
		constrainedSampling: definition.constrainedSampling,
		prepareArguments: definition.prepareArguments,
		executionMode: definition.executionMode,
		execute: (toolCallId, params, signal, onUpdate, ctx) => definition.execute(toolCallId, params, signal, onUpdate, ctx),
	};
	if (name === "bash" || name === "powershell") {
		tool.promptSnippet = definition.promptSnippet;
		tool.promptGuidelines = definition.promptGuidelines;
	}
	return tool;
}

export const BUILTIN_TOOL_NAMES = Object.keys(SPECS);

// Serialises mutations per file (by real path) across everything in this process. Registration
// is itself queued so calls keep their order even when realpath() lookups finish out of order.
const fileQueues = new Map();
let registrations = Promise.resolve();

async function queueKey(filePath) {
	const resolved = path.resolve(filePath);
	try {
		return await realpath(resolved);
	} catch (error) {
		if (error?.code === "ENOENT" || error?.code === "ENOTDIR") return resolved;
		throw error;
	}
}

export async function withFileMutationQueue(filePath, fn) {
	const registration = registrations.then(async () => {
		const key = await queueKey(filePath);
		const previous = fileQueues.get(key) ?? Promise.resolve();
		let release;
		const gate = new Promise((resolve) => {
			release = resolve;
		});
		const tail = previous.then(() => gate);
		fileQueues.set(key, tail);
		return { key, previous, tail, release };
	});
	registrations = registration.then(
		() => undefined,
		() => undefined,
	);
	const { key, previous, tail, release } = await registration;
	await previous;
	try {
		return await fn();
	} finally {
		release();
		if (fileQueues.get(key) === tail) fileQueues.delete(key);
	}
}
