// Makes sure node_modules/jiti and node_modules/typebox exist next to main.mjs, extracted from
// the vendored tarballs. Each package is extracted into a private temp dir and renamed into place,
// so hosts starting at the same time never see a half-written package.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { extractTgz } from "./tar.mjs";

export const VENDORED = ["jiti", "typebox"];

function findTarball(vendorDir, name) {
	const pattern = new RegExp(`^${name}-(\\d+\\.\\d+\\.\\d+[^/]*)\\.tgz$`);
	for (const file of fs.readdirSync(vendorDir)) {
		const m = pattern.exec(file);
		if (m) return { file: path.join(vendorDir, file), version: m[1] };
	}
	throw new Error(`vendored package ${name} not found in ${vendorDir}`);
}

function installedVersion(dir) {
	try {
		return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
	} catch {
		return undefined;
	}
}

function removeQuietly(dir) {
	try {
		fs.rmSync(dir, { recursive: true, force: true });
	} catch {}
}

/** Extracts missing or outdated vendored packages into `<hostDir>/node_modules`. */
export function ensureVendored(hostDir, vendorDir) {
	const modulesDir = path.join(hostDir, "node_modules");
	fs.mkdirSync(modulesDir, { recursive: true });
	for (const name of VENDORED) {
		const target = path.join(modulesDir, name);
		const { file, version } = findTarball(vendorDir, name);
		const current = installedVersion(target);
		if (current === version) continue;
		const tmp = path.join(modulesDir, `.tmp-${name}-${process.pid}-${crypto.randomBytes(4).toString("hex")}`);
		extractTgz(file, tmp);
		if (current !== undefined) {
			// An outdated copy: move it aside first (rename is atomic, removal is not).
			const old = `${tmp}-old`;
			try {
				fs.renameSync(target, old);
				removeQuietly(old);
			} catch {}
		}
		try {
			fs.renameSync(tmp, target);
		} catch (error) {
			// Another host won the race; its copy is complete because it was renamed into place.
			removeQuietly(tmp);
			if (installedVersion(target) !== version) throw error;
		}
	}
}
