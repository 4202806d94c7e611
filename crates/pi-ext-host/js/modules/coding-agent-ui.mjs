// The interactive-mode exports of @earendil-works/pi-coding-agent: the host has no terminal, so
// components are inert and theme helpers return plain styling functions.
import { getTheme, Theme } from "../lib/theme.mjs";
import { inertClass } from "./inert.mjs";
import { wrapTextWithAnsi } from "./text-width.mjs";

export { Theme };

export const initTheme = () => {};

const plain = (text) => String(text);

export function getMarkdownTheme() {
	const theme = getTheme();
	const fg = (token) => (text) => theme.fg(token, text);
	return {
		heading: fg("mdHeading"),
		link: fg("mdLink"),
		linkUrl: fg("mdLinkUrl"),
		code: fg("mdCode"),
		codeBlock: fg("mdCodeBlock"),
		codeBlockBorder: fg("mdCodeBlockBorder"),
		quote: fg("mdQuote"),
		quoteBorder: fg("mdQuoteBorder"),
		hr: fg("mdHr"),
		listBullet: fg("mdListBullet"),
		bold: (text) => theme.bold(text),
		italic: (text) => theme.italic(text),
		underline: (text) => theme.underline(text),
		strikethrough: (text) => theme.strikethrough(text),
		highlightCode: (code) => String(code).split("\n"),
	};
}

export function getSelectListTheme() {
	const theme = getTheme();
	return {
		selectedPrefix: (text) => theme.fg("accent", text),
		selectedText: (text) => theme.fg("accent", text),
		description: (text) => theme.fg("muted", text),
		scrollInfo: (text) => theme.fg("dim", text),
		noMatch: (text) => theme.fg("warning", text),
	};
}

export function getSettingsListTheme() {
	const theme = getTheme();
	return {
		label: (text, selected) => (selected ? theme.fg("accent", text) : text),
		value: (text, selected) => (selected ? theme.fg("accent", text) : theme.fg("muted", text)),
		description: (text) => theme.fg("dim", text),
		cursor: theme.fg("accent", "→ "),
		hint: (text) => theme.fg("dim", text),
	};
}

export function highlightCode(code) {
	return String(code).split("\n");
}

export const keyText = (keybinding) => String(keybinding);
export const keyHint = (keybinding, description) => `${keyText(keybinding)} ${description}`;
export const rawKeyHint = (key, description) => `${key} ${description}`;
export const renderDiff = plain;

export function truncateToVisualLines(text, maxVisualLines, width, paddingX = 0, keep = "start") {
	const lines = String(text)
		.split("\n")
		.flatMap((line) => wrapTextWithAnsi(line, Math.max(1, width - paddingX * 2)));
	const truncated = lines.length > maxVisualLines;
	const kept = keep === "end" ? lines.slice(-maxVisualLines) : lines.slice(0, maxVisualLines);
	return { visualLines: kept, skippedCount: truncated ? lines.length - kept.length : 0, truncated };
}

export const ArminComponent = inertClass("ArminComponent");
export const AssistantMessageComponent = inertClass("AssistantMessageComponent");
export const BashExecutionComponent = inertClass("BashExecutionComponent");
export const BorderedLoader = inertClass("BorderedLoader");
export const BranchSummaryMessageComponent = inertClass("BranchSummaryMessageComponent");
export const CompactionSummaryMessageComponent = inertClass("CompactionSummaryMessageComponent");
export const CustomEditor = inertClass("CustomEditor");
export const CustomMessageComponent = inertClass("CustomMessageComponent");
export const DynamicBorder = inertClass("DynamicBorder");
export const ExtensionEditorComponent = inertClass("ExtensionEditorComponent");
export const ExtensionInputComponent = inertClass("ExtensionInputComponent");
export const ExtensionSelectorComponent = inertClass("ExtensionSelectorComponent");
export const FooterComponent = inertClass("FooterComponent");
export const LoginDialogComponent = inertClass("LoginDialogComponent");
export const ModelSelectorComponent = inertClass("ModelSelectorComponent");
export const OAuthSelectorComponent = inertClass("OAuthSelectorComponent");
export const SessionSelectorComponent = inertClass("SessionSelectorComponent");
export const SettingsSelectorComponent = inertClass("SettingsSelectorComponent");
export const ShowImagesSelectorComponent = inertClass("ShowImagesSelectorComponent");
export const SkillInvocationMessageComponent = inertClass("SkillInvocationMessageComponent");
export const ThemeSelectorComponent = inertClass("ThemeSelectorComponent");
export const ThinkingSelectorComponent = inertClass("ThinkingSelectorComponent");
export const ToolExecutionComponent = inertClass("ToolExecutionComponent");
export const TreeSelectorComponent = inertClass("TreeSelectorComponent");
export const UserMessageComponent = inertClass("UserMessageComponent");
export const UserMessageSelectorComponent = inertClass("UserMessageSelectorComponent");
