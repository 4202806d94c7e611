// ctx.ui.theme: colours come from Pi's built-in theme tables (theme-data.mjs); bold & co follow
// chalk, which Pi uses for them and which emits nothing unless FORCE_COLOR asks for colour
// (pi's stdout is a pipe in RPC mode).
import { callSync } from "./state.mjs";
import { THEMES } from "./theme-data.mjs";

function chalkLevel(env = process.env) {
	if (!("FORCE_COLOR" in env)) return 0;
	const value = env.FORCE_COLOR;
	if (value === "false" || value === "0") return 0;
	if (value === "" || value === "true") return 1;
	const n = Math.min(Number.parseInt(value, 10), 3);
	return Number.isNaN(n) ? 0 : n;
}

function modifier(open, close) {
	const openSeq = `\x1b[${open}m`;
	const closeSeq = `\x1b[${close}m`;
	return (text) => {
		const str = String(text);
		if (chalkLevel() === 0 || str === "") return str;
		// Like chalk: re-open after nested closes, and close/re-open around line breaks.
		const body = str.split(closeSeq).join(closeSeq + openSeq).replace(/\r?\n/g, (nl) => `${closeSeq}${nl}${openSeq}`);
		return openSeq + body + closeSeq;
	};
}

function detectTrueColor(env = process.env) {
	const override = env.PI_TRUE_COLOR?.toLowerCase();
	if (override === "1" || override === "true" || override === "yes" || override === "on") return true;
	if (override === "0" || override === "false" || override === "no" || override === "off") return false;
	const colorTerm = env.COLORTERM?.toLowerCase() ?? "";
	if (colorTerm === "truecolor" || colorTerm === "24bit") return true;
	const termProgram = env.TERM_PROGRAM?.toLowerCase() ?? "";
	const term = env.TERM?.toLowerCase() ?? "";
	if (env.KITTY_WINDOW_ID || env.WEZTERM_PANE || env.ITERM_SESSION_ID || env.WT_SESSION || env.GHOSTTY_RESOURCES_DIR) return true;
	if (["kitty", "ghostty", "wezterm", "iterm.app", "warpterminal", "alacritty"].includes(termProgram)) return true;
	return term.includes("ghostty") || term.startsWith("alacritty") || term.includes("truecolor") || term.includes("24bit");
}

export class Theme {
	#fg;
	#bg;
	#dim;
	#mode;

	constructor(name, tables, mode) {
		this.name = name;
		this.#fg = new Map(Object.entries(tables?.fg ?? {}));
		this.#bg = new Map(Object.entries(tables?.bg ?? {}));
		this.#dim = new Set(tables?.dim ?? []);
		this.#mode = mode ?? "256color";
		this.bold = modifier(1, 22);
		this.italic = modifier(3, 23);
		this.underline = modifier(4, 24);
		this.inverse = modifier(7, 27);
		this.strikethrough = modifier(9, 29);
	}

	#lookup(map, token) {
		const value = map.get(token);
		if (value === undefined) throw new Error(`Unknown theme color: ${token}`);
		return value;
	}

	fg(color, text) {
		const ansi = this.#lookup(this.#fg, color);
		if (this.#dim.has(color)) return `${ansi}\x1b[2m${text}\x1b[22;39m`;
		return `${ansi}${text}\x1b[39m`;
	}

	bg(color, text) {
		return `${this.#lookup(this.#bg, color)}${text}\x1b[49m`;
	}

	getFgAnsi(color) {
		const ansi = this.#lookup(this.#fg, color);
		return this.#dim.has(color) ? `${ansi}\x1b[2m` : ansi;
	}

	getBgAnsi(color) {
		return this.#lookup(this.#bg, color);
	}

	getColorMode() {
		return this.#mode;
	}

	getThinkingBorderColor(level) {
		const token =
			{
				minimal: "thinkingMinimal",
				low: "thinkingLow",
				medium: "thinkingMedium",
				high: "thinkingHigh",
				xhigh: "thinkingXhigh",
				max: "thinkingMax",
			}[level] ?? "thinkingOff";
		return (text) => this.fg(token, text);
	}

	getBashModeBorderColor() {
		return (text) => this.fg("bashMode", text);
	}

	/** A minimal `style()`: token or ANSI colours plus chalk-like modifiers. */
	style(text, options = {}) {
		let out = String(text);
		if (options.bold) out = this.bold(out);
		if (options.italic) out = this.italic(out);
		if (options.underline) out = this.underline(out);
		if (typeof options.fg === "string") out = this.fg(options.fg, out);
		if (typeof options.bg === "string") out = this.bg(options.bg, out);
		return out;
	}
}

export function createTheme(name) {
	const mode = detectTrueColor() ? "truecolor" : "256color";
	const builtin = THEMES[name];
	if (name === "dark" || name === "light") {
		return new Theme(name, builtin[mode], mode);
	}
	// The default, and Pi's fallback for themes it cannot load (custom theme files are not read here).
	return new Theme("system", THEMES.system, mode);
}

let current;

/** The theme Pi would use in RPC mode: the `theme` setting if it names a built-in, else system. */
export function getTheme() {
	if (!current) {
		let setting;
		try {
			setting = callSync("state", { what: "settings" })?.theme;
		} catch {}
		current = createTheme(typeof setting === "string" ? setting : undefined);
	}
	return current;
}

export function resetTheme() {
	current = undefined;
}
