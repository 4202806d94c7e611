// Truncation helpers of @earendil-works/pi-coding-agent. Two independent limits (lines, bytes);
// whichever is hit first wins. Results have the same fields and values as Pi's.

export const DEFAULT_MAX_LINES = 2000;
export const DEFAULT_MAX_BYTES = 50 * 1024;
export const GREP_MAX_LINE_LENGTH = 500;

const byteLength = (text) => Buffer.byteLength(text, "utf8");

/** Lines as counted for limits: a trailing newline does not start another line. */
function countedLines(content) {
	if (content.length === 0) return [];
	const lines = content.split("\n");
	if (content.endsWith("\n")) lines.pop();
	return lines;
}

export function formatSize(bytes) {
	if (bytes < 1024) return `${bytes}B`;
	if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
	return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

function result(content, fields) {
	return {
		content,
		truncated: fields.truncated,
		truncatedBy: fields.truncatedBy,
		totalLines: fields.totalLines,
		totalBytes: fields.totalBytes,
		outputLines: fields.outputLines,
		outputBytes: fields.outputBytes,
		lastLinePartial: fields.lastLinePartial ?? false,
		firstLineExceedsLimit: fields.firstLineExceedsLimit ?? false,
		maxLines: fields.maxLines,
		maxBytes: fields.maxBytes,
	};
}

/** Keeps the first lines that fit; never a partial line (empty when the first line is too long). */
export function truncateHead(content, options = {}) {
	const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
	const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
	const totalBytes = byteLength(content);
	const lines = countedLines(content);
	const totalLines = lines.length;
	const base = { totalLines, totalBytes, maxLines, maxBytes };
	if (totalLines <= maxLines && totalBytes <= maxBytes) {
		return result(content, { ...base, truncated: false, truncatedBy: null, outputLines: totalLines, outputBytes: totalBytes });
	}
	if (byteLength(lines[0]) > maxBytes) {
		return result("", {
			...base,
			truncated: true,
			truncatedBy: "bytes",
			outputLines: 0,
			outputBytes: 0,
			firstLineExceedsLimit: true,
		});
	}
	const kept = [];
	let used = 0;
	let truncatedBy = "lines";
	for (let i = 0; i < lines.length && i < maxLines; i++) {
		const cost = byteLength(lines[i]) + (i > 0 ? 1 : 0);
		if (used + cost > maxBytes) {
			truncatedBy = "bytes";
			break;
		}
		kept.push(lines[i]);
		used += cost;
	}
	if (kept.length >= maxLines && used <= maxBytes) truncatedBy = "lines";
	const out = kept.join("\n");
	return result(out, { ...base, truncated: true, truncatedBy, outputLines: kept.length, outputBytes: byteLength(out) });
}

/** The last `maxBytes` bytes of `text`, starting on a character boundary. */
function tailBytes(text, maxBytes) {
	const buffer = Buffer.from(text, "utf8");
	if (buffer.length <= maxBytes) return text;
	let start = buffer.length - maxBytes;
	while (start < buffer.length && (buffer[start] & 0xc0) === 0x80) start++;
	return buffer.subarray(start).toString("utf8");
}

/** Keeps the last lines that fit; the only line kept may be partial when it alone is too long. */
export function truncateTail(content, options = {}) {
	const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
	const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
	const totalBytes = byteLength(content);
	const lines = countedLines(content);
	const totalLines = lines.length;
	const base = { totalLines, totalBytes, maxLines, maxBytes };
	if (totalLines <= maxLines && totalBytes <= maxBytes) {
		return result(content, { ...base, truncated: false, truncatedBy: null, outputLines: totalLines, outputBytes: totalBytes });
	}
	const kept = [];
	let used = 0;
	let truncatedBy = "lines";
	let lastLinePartial = false;
	for (let i = lines.length - 1; i >= 0 && kept.length < maxLines; i--) {
		const cost = byteLength(lines[i]) + (kept.length > 0 ? 1 : 0);
		if (used + cost > maxBytes) {
			truncatedBy = "bytes";
			if (kept.length === 0) {
				const partial = tailBytes(lines[i], maxBytes);
				kept.unshift(partial);
				used = byteLength(partial);
				lastLinePartial = true;
			}
			break;
		}
		kept.unshift(lines[i]);
		used += cost;
	}
	if (kept.length >= maxLines && used <= maxBytes) truncatedBy = "lines";
	const out = kept.join("\n");
	return result(out, {
		...base,
		truncated: true,
		truncatedBy,
		outputLines: kept.length,
		outputBytes: byteLength(out),
		lastLinePartial,
	});
}

const isHigh = (code) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code) => code >= 0xdc00 && code <= 0xdfff;

/** The first `maxUnits` UTF-16 units, without cutting a surrogate pair in half. */
export function sliceHead(text, maxUnits) {
	const end = Math.max(0, maxUnits);
	return isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end)) ? text.slice(0, end - 1) : text.slice(0, end);
}

/** One line cut to `maxChars` with a `... [truncated]` suffix (grep match lines). */
export function truncateLine(line, maxChars = GREP_MAX_LINE_LENGTH) {
	if (line.length <= maxChars) return { text: line, wasTruncated: false };
	return { text: `${sliceHead(line, maxChars)}... [truncated]`, wasTruncated: true };
}
