// Lenient JSON for streamed tool arguments: close what is still open, drop a dangling key or
// separator, and parse. A value that still fails to parse becomes {} (streaming) or throws.

/** Completes a JSON prefix: closes an open string, arrays and objects, drops trailing garbage. */
export function repairJson(text) {
	const stack = [];
	let inString = false;
	let escaped = false;
	let out = "";
	for (const ch of String(text)) {
		out += ch;
		if (inString) {
			if (escaped) escaped = false;
			else if (ch === "\\") escaped = true;
			else if (ch === '"') inString = false;
			continue;
		}
		if (ch === '"') inString = true;
		else if (ch === "{" || ch === "[") stack.push(ch === "{" ? "}" : "]");
		else if (ch === "}" || ch === "]") stack.pop();
	}
	if (inString) {
		if (escaped) out = out.slice(0, -1);
		out += '"';
	}
	// A trailing comma, colon or a key without a value cannot be closed as is.
	out = out.replace(/,\s*$/, "").replace(/,?\s*"(?:[^"\\]|\\.)*"\s*:\s*$/, "").replace(/:\s*$/, "");
	if (stack.at(-1) === "}") out = out.replace(/([{,])\s*"(?:[^"\\]|\\.)*"\s*$/, "$1");
	out = out.replace(/,\s*$/, "");
	return out + stack.reverse().join("");
}

export function parseJsonWithRepair(text) {
	try {
		return JSON.parse(text);
	} catch {
		return JSON.parse(repairJson(text));
	}
}

export function parseStreamingJson(text) {
	if (!text || String(text).trim() === "") return {};
	try {
		return parseJsonWithRepair(text);
	} catch {
		return {};
	}
}
