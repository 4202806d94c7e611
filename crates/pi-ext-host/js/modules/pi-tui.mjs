// @earendil-works/pi-tui as seen by extensions in the host: inert components, working text and
// key helpers (no terminal input ever arrives here, but the helpers give sensible answers).
import { inertClass, unavailable } from "./inert.mjs";
import {
	sliceByColumn,
	stripTerminalSequences,
	truncateToWidth,
	visibleWidth,
	wrapTextWithAnsi,
} from "./text-width.mjs";

export { sliceByColumn, stripTerminalSequences, truncateToWidth, visibleWidth, wrapTextWithAnsi };

export const CURSOR_MARKER = "\x1b_pi:c\x07";
const FAKE_CURSOR_START = "\x1b_pi:fc\x07";
const FAKE_CURSOR_END = "\x1b_pi:/fc\x07";

export function renderFakeCursor(text) {
	return `${FAKE_CURSOR_START}${text}${FAKE_CURSOR_END}`;
}

export function replaceControlCharacters(text) {
	return String(text).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => `^${String.fromCharCode(c.charCodeAt(0) ^ 0x40)}`);
}

export function hyperlink(text, url) {
	return `\x1b]8;;${url}\x07${text}\x1b]8;;\x07`;
}

export function getOsc8LinkAtColumn() {
	return undefined;
}

// ---- keys -------------------------------------------------------------------------------------

const SPECIAL = [
	"escape", "esc", "enter", "return", "tab", "space", "backspace", "delete", "insert", "clear", "home", "end",
	"pageUp", "pageDown", "up", "down", "left", "right",
	"f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12",
];
const SYMBOLS = {
	backtick: "`", hyphen: "-", equals: "=", leftbracket: "[", rightbracket: "]", backslash: "\\", semicolon: ";",
	quote: "'", comma: ",", period: ".", slash: "/", exclamation: "!", at: "@", hash: "#", dollar: "$", percent: "%",
	caret: "^", ampersand: "&", asterisk: "*", leftparen: "(", rightparen: ")", underscore: "_", plus: "+", pipe: "|",
	tilde: "~", leftbrace: "{", rightbrace: "}", colon: ":", lessthan: "<", greaterthan: ">", question: "?",
};
const modifier = (...mods) => (key) => `${mods.join("+")}+${key}`;

export const Key = {
	...Object.fromEntries(SPECIAL.map((k) => [k, k])),
	...SYMBOLS,
	ctrl: modifier("ctrl"),
	shift: modifier("shift"),
	alt: modifier("alt"),
	super: modifier("super"),
	ctrlShift: modifier("ctrl", "shift"),
	shiftCtrl: modifier("shift", "ctrl"),
	ctrlAlt: modifier("ctrl", "alt"),
	altCtrl: modifier("alt", "ctrl"),
	shiftAlt: modifier("shift", "alt"),
	altShift: modifier("alt", "shift"),
	ctrlSuper: modifier("ctrl", "super"),
	superCtrl: modifier("super", "ctrl"),
	shiftSuper: modifier("shift", "super"),
	superShift: modifier("super", "shift"),
	altSuper: modifier("alt", "super"),
	superAlt: modifier("super", "alt"),
	ctrlShiftAlt: modifier("ctrl", "shift", "alt"),
	ctrlShiftSuper: modifier("ctrl", "shift", "super"),
};

const SEQUENCES = {
	"\x1b": "escape",
	"\r": "enter",
	"\n": "enter",
	"\t": "tab",
	" ": "space",
	"\x7f": "backspace",
	"\x08": "backspace",
	"\x1b[A": "up",
	"\x1b[B": "down",
	"\x1b[C": "right",
	"\x1b[D": "left",
	"\x1b[H": "home",
	"\x1b[F": "end",
	"\x1b[3~": "delete",
	"\x1b[2~": "insert",
	"\x1b[5~": "pageUp",
	"\x1b[6~": "pageDown",
	"\x1b[Z": "shift+tab",
};

/** The key id of a raw legacy terminal sequence, e.g. "ctrl+c", "up", "a". */
export function parseKey(data) {
	if (typeof data !== "string" || data.length === 0) return undefined;
	if (SEQUENCES[data]) return SEQUENCES[data];
	if (data.length === 1) {
		const code = data.charCodeAt(0);
		if (code >= 1 && code <= 26) return `ctrl+${String.fromCharCode(code + 96)}`;
		return data.toLowerCase() === data ? data : `shift+${data.toLowerCase()}`;
	}
	if (data.length === 2 && data[0] === "\x1b") return `alt+${parseKey(data[1]) ?? data[1]}`;
	return undefined;
}

const normalizeId = (id) => {
	const parts = String(id).toLowerCase().split("+");
	const key = parts.pop();
	const aliases = { esc: "escape", return: "enter" };
	return [...parts.sort(), aliases[key] ?? key].join("+");
};

export function matchesKey(data, keyId) {
	const parsed = parseKey(data);
	return parsed !== undefined && normalizeId(parsed) === normalizeId(keyId);
}

export const isKeyRelease = () => false;
export const isKeyRepeat = () => false;
export const isKittyProtocolActive = () => false;
export const setKittyProtocolActive = () => {};
export const decodeKittyPrintable = () => undefined;

// ---- fuzzy ------------------------------------------------------------------------------------

/** Subsequence match; consecutive and early matches score better (lower is better). */
export function fuzzyMatch(query, text) {
	const q = String(query).toLowerCase();
	const t = String(text).toLowerCase();
	if (q.length === 0) return { matches: true, score: 0 };
	let score = 0;
	let last = -1;
	for (const ch of q) {
		const index = t.indexOf(ch, last + 1);
		if (index === -1) return { matches: false, score: Number.POSITIVE_INFINITY };
		score += index - last - 1;
		last = index;
	}
	return { matches: true, score };
}

export function fuzzyFilter(items, query, getText) {
	if (!String(query).trim()) return items;
	return items
		.map((item) => ({ item, match: fuzzyMatch(query, getText(item)) }))
		.filter((entry) => entry.match.matches)
		.sort((a, b) => a.match.score - b.match.score)
		.map((entry) => entry.item);
}

// ---- colours and styling (plain text: nothing is rendered) -------------------------------------

export const styleText = (text) => String(text);
export const styleTextWithAnsi = (text) => String(text);
export const getTerminalColorMode = () => "256color";
export const getCapabilities = () => ({ images: null, trueColor: false, hyperlinks: false });
export const detectCapabilities = getCapabilities;
export const resetCapabilitiesCache = () => {};
export const setCapabilities = () => {};
export const setCapabilityOverrides = () => {};
export const getKeybindings = () => undefined;
export const setKeybindings = () => {};
export const isFocusable = (component) => Boolean(component && "focused" in component);
export const TUI_KEYBINDINGS = {};

// ---- components -------------------------------------------------------------------------------

export const Box = inertClass("Box");
export const CancellableLoader = inertClass("CancellableLoader");
export const CombinedAutocompleteProvider = inertClass("CombinedAutocompleteProvider");
export const Container = inertClass("Container");
export const Editor = inertClass("Editor");
export const HStack = inertClass("HStack");
export const Image = inertClass("Image");
export const Input = inertClass("Input");
export const KeybindingsManager = inertClass("KeybindingsManager");
export const Loader = inertClass("Loader");
export const Markdown = inertClass("Markdown");
export const Marked = inertClass("Marked");
export const MouseRegion = inertClass("MouseRegion");
export const ProcessTerminal = inertClass("ProcessTerminal");
export const ScrollView = inertClass("ScrollView");
export const SelectList = inertClass("SelectList");
export const SettingsList = inertClass("SettingsList");
export const Spacer = inertClass("Spacer");
export const StdinBuffer = inertClass("StdinBuffer");
export const Text = inertClass("Text");
export const TruncatedText = inertClass("TruncatedText");
export const TuiAltScreen = inertClass("TuiAltScreen");
export const TuiMainScreen = inertClass("TuiMainScreen");
export const VStack = inertClass("VStack");

// ---- the rest of pi-tui's runtime names: terminal-only, they fail clearly when called ----------

export const allocateImageId = unavailable("allocateImageId");
export const backgroundAnsi = unavailable("backgroundAnsi");
export const calculateImageRows = unavailable("calculateImageRows");
export const colorToHex = unavailable("colorToHex");
export const colorToOkhsl = unavailable("colorToOkhsl");
export const colorToOklch = unavailable("colorToOklch");
export const colorToRgb = unavailable("colorToRgb");
export const compositeTuiLine = unavailable("compositeTuiLine");
export const deleteAllKittyImages = unavailable("deleteAllKittyImages");
export const deleteKittyImage = unavailable("deleteKittyImage");
export const encodeITerm2 = unavailable("encodeITerm2");
export const encodeKitty = unavailable("encodeKitty");
export const foregroundAnsi = unavailable("foregroundAnsi");
export const formatProgramStatus = unavailable("formatProgramStatus");
export const getCellDimensions = unavailable("getCellDimensions");
export const getGifDimensions = unavailable("getGifDimensions");
export const getImageDimensions = unavailable("getImageDimensions");
export const getJpegDimensions = unavailable("getJpegDimensions");
export const getNativeClipboard = unavailable("getNativeClipboard");
export const getPngDimensions = unavailable("getPngDimensions");
export const getSelectPageIndex = unavailable("getSelectPageIndex");
export const getWebpDimensions = unavailable("getWebpDimensions");
export const imageFallback = unavailable("imageFallback");
export const indexedColor = unavailable("indexedColor");
export const isAppleTerminalSession = () => false;
export const isViewportTUI = () => false;
export const mixColors = unavailable("mixColors");
export const okhslColor = unavailable("okhslColor");
export const oklabToOkhslLightness = unavailable("oklabToOkhslLightness");
export const oklchColor = unavailable("oklchColor");
export const parseColor = unavailable("parseColor");
export const parseTerminalColorSchemeReport = unavailable("parseTerminalColorSchemeReport");
export const renderImage = unavailable("renderImage");
export const renderLatex = unavailable("renderLatex");
export const rgbColor = unavailable("rgbColor");
export const setCellDimensions = () => {};
export const setImageTranscoder = () => {};
