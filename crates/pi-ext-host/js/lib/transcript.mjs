// Transcript helpers of pi-ai that the runner and extensions use: system messages carry the prompt
// (content + named sections) and tool declarations as deltas (toolsAdded / toolsRemoved).

export function contentText(content, separator = "\n") {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((block) => block?.type === "text")
		.map((block) => block.text)
		.join(separator);
}

/** A system message as one prompt text: its content, then its non-null sections. */
export function getSystemMessageText(message) {
	const parts = [contentText(message.content)];
	for (const text of Object.values(message.sections ?? {})) if (text !== null) parts.push(text);
	return parts.filter((part) => part.length > 0).join("\n\n");
}

const isSystem = (message) => message?.role === "system";

/** The tools in effect after replaying every system message's deltas in order. */
export function getCurrentTools(messages) {
	const tools = new Map();
	for (const message of messages) {
		if (!isSystem(message)) continue;
		for (const tool of message.toolsRemoved ?? []) tools.delete(tool.name);
		for (const tool of message.toolsAdded ?? []) tools.set(tool.name, tool);
	}
	return [...tools.values()];
}

/** All system messages folded into one: contents appended, sections patched, tools resolved. */
export function getCurrentSystemMessage(messages) {
	const content = [];
	const sections = new Map();
	let timestamp;
	for (const message of messages) {
		if (!isSystem(message)) continue;
		timestamp ??= message.timestamp;
		const text = contentText(message.content);
		if (text.length > 0) content.push(text);
		for (const [name, value] of Object.entries(message.sections ?? {})) {
			if (value === null) sections.delete(name);
			else sections.set(name, value);
		}
	}
	const tools = getCurrentTools(messages);
	if (timestamp === undefined && tools.length === 0) return undefined;
	const folded = { role: "system", content: content.join("\n\n") };
	if (sections.size > 0) folded.sections = Object.fromEntries(sections);
	if (tools.length > 0) folded.toolsAdded = tools;
	folded.timestamp = timestamp ?? 0;
	return folded;
}

export function getCurrentSystemPrompt(messages) {
	const message = getCurrentSystemMessage(messages);
	return message ? getSystemMessageText(message) : "";
}

export function getInitialSystemMessage(messages) {
	return isSystem(messages[0]) ? messages[0] : undefined;
}

export function withoutInitialSystemMessage(messages) {
	return getInitialSystemMessage(messages) ? messages.slice(1) : messages;
}

export function createInitialSystemMessage(systemPrompt, tools) {
	const hasPrompt = typeof systemPrompt === "string" && systemPrompt.length > 0;
	const hasTools = Array.isArray(tools) && tools.length > 0;
	if (!hasPrompt && !hasTools) return undefined;
	const message = { role: "system", content: systemPrompt ?? "" };
	if (hasTools) message.toolsAdded = tools;
	message.timestamp = 0;
	return message;
}

export function normalizeContext(context) {
	const initial = createInitialSystemMessage(context.systemPrompt, context.tools);
	return { messages: initial ? [initial, ...context.messages] : context.messages };
}

export function collapseSystemMessages(context) {
	const head = getCurrentSystemMessage(context.messages);
	const rest = context.messages.filter((m) => !isSystem(m));
	return { messages: head ? [head, ...rest] : rest };
}

export function toToolDeclaration(tool) {
	const declaration = {
		name: tool.name,
		description: tool.description,
		parameters: JSON.parse(JSON.stringify(tool.parameters)),
	};
	if (tool.constrainedSampling !== undefined) declaration.constrainedSampling = tool.constrainedSampling;
	return declaration;
}
