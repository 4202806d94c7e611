// A small reader for npm tarballs (gzip + ustar, with pax and GNU long-name headers).
// Enough for the two vendored packages; not a general-purpose tar implementation.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

function field(block, start, length) {
	const raw = block.subarray(start, start + length);
	const nul = raw.indexOf(0);
	return raw.subarray(0, nul === -1 ? raw.length : nul).toString("utf8");
}

function octal(block, start, length) {
	const text = field(block, start, length).trim();
	return text ? parseInt(text, 8) : 0;
}

function parsePax(data) {
	const out = {};
	let offset = 0;
	while (offset < data.length) {
		const space = data.indexOf(0x20, offset);
		if (space === -1) break;
		const length = parseInt(data.subarray(offset, space).toString("utf8"), 10);
		if (!length) break;
		const record = data.subarray(space + 1, offset + length - 1).toString("utf8");
		const eq = record.indexOf("=");
		if (eq !== -1) out[record.slice(0, eq)] = record.slice(eq + 1);
		offset += length;
	}
	return out;
}

/** Yields `{name, type, data}` for every entry of an uncompressed tar buffer. */
export function* tarEntries(buffer) {
	let offset = 0;
	let longName;
	let pax = {};
	while (offset + 512 <= buffer.length) {
		const header = buffer.subarray(offset, offset + 512);
		if (header.every((b) => b === 0)) break;
		const size = octal(header, 124, 12);
		const type = String.fromCharCode(header[156] || 0x30);
		const prefix = field(header, 345, 155);
		let name = field(header, 0, 100);
		if (prefix) name = `${prefix}/${name}`;
		const data = buffer.subarray(offset + 512, offset + 512 + size);
		offset += 512 + Math.ceil(size / 512) * 512;
		if (type === "x") {
			pax = parsePax(data);
			continue;
		}
		if (type === "g") continue;
		if (type === "L") {
			longName = field(data, 0, data.length);
			continue;
		}
		if (pax.path) name = pax.path;
		else if (longName) name = longName;
		longName = undefined;
		pax = {};
		yield { name, type, data };
	}
}

/**
 * Extracts an npm `.tgz` into `destDir`, dropping the leading `package/` component.
 * Refuses entries that would land outside `destDir`.
 */
export function extractTgz(tgzPath, destDir) {
	const tar = zlib.gunzipSync(fs.readFileSync(tgzPath));
	const root = path.resolve(destDir);
	fs.mkdirSync(root, { recursive: true });
	for (const entry of tarEntries(tar)) {
		const relative = entry.name.replace(/^[^/]*\//, "");
		if (!relative) continue;
		const target = path.resolve(root, relative);
		if (target !== root && !target.startsWith(root + path.sep)) {
			throw new Error(`tar entry escapes the destination: ${entry.name}`);
		}
		if (entry.type === "5") {
			fs.mkdirSync(target, { recursive: true });
		} else if (entry.type === "0" || entry.type === "\0" || entry.type === "7") {
			fs.mkdirSync(path.dirname(target), { recursive: true });
			fs.writeFileSync(target, entry.data);
		}
		// Links and devices do not occur in the vendored packages.
	}
}
