// Terminal text measuring helpers of pi-tui: visible width (ANSI stripped, wide characters count
// two cells, tabs three), truncation to a width, and ANSI-aware word wrapping.

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Length of the escape sequence at `i` (CSI, OSC, APC/DCS/PM/SOS, or a two-byte escape), else 0. */
function escapeLength(text, i) {
	if (text[i] !== "\x1b") return 0;
	const next = text[i + 1];
	if (next === "[") {
		let j = i + 2;
		while (j < text.length && !/[@-~]/.test(text[j])) j++;
		return j < text.length ? j - i + 1 : 0;
	}
	if (next === "]" || next === "_" || next === "P" || next === "^" || next === "X") {
		for (let j = i + 2; j < text.length; j++) {
			if (text[j] === "\x07") return j - i + 1;
			if (text[j] === "\x1b" && text[j + 1] === "\\") return j - i + 2;
		}
		return 0;
	}
	return next === undefined ? 0 : 2;
}

export function stripTerminalSequences(text) {
	let out = "";
	for (let i = 0; i < text.length; ) {
		const n = escapeLength(text, i);
		if (n > 0) i += n;
		else out += text[i++];
	}
	return out;
}

// East Asian Wide and Fullwidth ranges (the common blocks).
const WIDE_RANGES = [
	[0x1100, 0x115f], [0x231a, 0x231b], [0x2329, 0x232a], [0x23e9, 0x23ec], [0x23f0, 0x23f0], [0x23f3, 0x23f3],
	[0x25fd, 0x25fe], [0x2614, 0x2615], [0x2648, 0x2653], [0x267f, 0x267f], [0x2693, 0x2693], [0x26a1, 0x26a1],
	[0x26aa, 0x26ab], [0x26bd, 0x26be], [0x26c4, 0x26c5], [0x26ce, 0x26ce], [0x26d4, 0x26d4], [0x26ea, 0x26ea],
	[0x26f2, 0x26f3], [0x26f5, 0x26f5], [0x26fa, 0x26fa], [0x26fd, 0x26fd], [0x2705, 0x2705], [0x270a, 0x270b],
	[0x2728, 0x2728], [0x274c, 0x274c], [0x274e, 0x274e], [0x2753, 0x2755], [0x2757, 0x2757], [0x2795, 0x2797],
	[0x27b0, 0x27b0], [0x27bf, 0x27bf], [0x2b1b, 0x2b1c], [0x2b50, 0x2b50], [0x2b55, 0x2b55], [0x2e80, 0x303e],
	[0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xa000, 0xa4cf], [0xa960, 0xa97f], [0xac00, 0xd7a3],
	[0xf900, 0xfaff], [0xfe10, 0xfe19], [0xfe30, 0xfe6f], [0xff00, 0xff60], [0xffe0, 0xffe6], [0x16fe0, 0x16fe4],
	[0x17000, 0x18cff], [0x1b000, 0x1b2ff], [0x1f004, 0x1f004], [0x1f0cf, 0x1f0cf], [0x1f18e, 0x1f18e],
	[0x1f191, 0x1f19a], [0x1f200, 0x1f251], [0x1f300, 0x1f64f], [0x1f680, 0x1f6ff], [0x1f7e0, 0x1f7eb],
	[0x1f90c, 0x1f9ff], [0x1fa70, 0x1faff], [0x20000, 0x3fffd],
];

function isWide(cp) {
	let lo = 0;
	let hi = WIDE_RANGES.length - 1;
	while (lo <= hi) {
		const mid = (lo + hi) >> 1;
		const [a, b] = WIDE_RANGES[mid];
		if (cp < a) hi = mid - 1;
		else if (cp > b) lo = mid + 1;
		else return true;
	}
	return false;
}

const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}\p{Cc}]+$/u;

export function graphemeWidth(segment) {
	if (segment === "\t") return 3;
	if (ZERO_WIDTH.test(segment)) return 0;
	if (/\p{Extended_Pictographic}/u.test(segment) && (segment.includes("\ufe0f") || segment.length > 2)) return 2;
	return isWide(segment.codePointAt(0)) ? 2 : 1;
}

export function visibleWidth(text) {
	const clean = stripTerminalSequences(String(text));
	let width = 0;
	for (const { segment } of segmenter.segment(clean)) width += graphemeWidth(segment);
	return width;
}

/** Splits into escape sequences and graphemes, in order. */
function tokens(text) {
	const out = [];
	let plain = "";
	const flush = () => {
		for (const { segment } of segmenter.segment(plain)) out.push({ text: segment, width: graphemeWidth(segment) });
		plain = "";
	};
	for (let i = 0; i < text.length; ) {
		const n = escapeLength(text, i);
		if (n > 0) {
			flush();
			out.push({ text: text.slice(i, i + n), width: 0, escape: true });
			i += n;
		} else {
			plain += text[i++];
		}
	}
	flush();
	return out;
}

export function truncateToWidth(text, maxWidth, ellipsis = "...", pad = false) {
	if (maxWidth <= 0) return "";
	const padTo = (s, w) => (pad ? s + " ".repeat(Math.max(0, maxWidth - w)) : s);
	const width = visibleWidth(text);
	if (width <= maxWidth) return padTo(text, width);
	let ellipsisText = ellipsis;
	let ellipsisWidth = visibleWidth(ellipsis);
	if (ellipsisWidth > maxWidth) {
		ellipsisText = truncatePrefix(ellipsis, maxWidth).text;
		ellipsisWidth = visibleWidth(ellipsisText);
	}
	const { text: prefix, width: prefixWidth } = truncatePrefix(text, maxWidth - ellipsisWidth);
	const result = ellipsisText.length > 0 ? `${prefix}\x1b[0m${ellipsisText}\x1b[0m` : `${prefix}\x1b[0m`;
	return padTo(result, prefixWidth + ellipsisWidth);
}

/** The longest prefix within `target` cells; escapes are kept only ahead of a kept character. */
function truncatePrefix(text, target) {
	let out = "";
	let pending = "";
	let width = 0;
	for (const token of tokens(text)) {
		if (token.escape) {
			pending += token.text;
			continue;
		}
		if (width + token.width > target) break;
		out += pending + token.text;
		pending = "";
		width += token.width;
	}
	return { text: out, width };
}

export function sliceByColumn(line, startCol, length) {
	let out = "";
	let col = 0;
	for (const token of tokens(line)) {
		if (token.escape) {
			out += token.text;
			continue;
		}
		if (col >= startCol && col + token.width <= startCol + length) out += token.text;
		col += token.width;
	}
	return out;
}

/** Word-wraps to `width` cells; SGR state active at a break is re-opened on the next line. */
export function wrapTextWithAnsi(text, width) {
	const lines = [];
	const limit = Math.max(1, width);
	for (const source of String(text).split("\n")) {
		let line = "";
		let lineWidth = 0;
		let active = "";
		// Spaces at a break belong to neither line.
		const trimEnd = (text) => text.replace(/ +((?:\x1b\[[0-9;]*m)*)$/, "$1");
		const pushLine = () => {
			lines.push(trimEnd(line));
			line = active;
			lineWidth = 0;
		};
		for (const word of source.split(/( +)/)) {
			if (word === "") continue;
			const wordWidth = visibleWidth(word);
			if (lineWidth > 0 && lineWidth + wordWidth > limit) {
				if (/^ +$/.test(word)) continue;
				pushLine();
			}
			for (const token of tokens(word)) {
				if (token.escape) {
					line += token.text;
					if (token.text.endsWith("m")) active = token.text === "\x1b[0m" || token.text === "\x1b[m" ? "" : active + token.text;
					continue;
				}
				if (lineWidth + token.width > limit) pushLine();
				if (lineWidth === 0 && token.text === " ") continue;
				line += token.text;
				lineWidth += token.width;
			}
		}
		lines.push(line);
	}
	return lines;
}
