// `process.env` changes extensions make, reported to pi: in Pi extensions share the agent's
// process, so a variable they set reaches the bash tool and credential lookups. The host's own
// variables (PI_EXT_HOST_*) stay here.
const own = (name) => name.startsWith("PI_EXT_HOST_");

function snapshot() {
	return { ...process.env };
}

let known = snapshot();

/** What changed since the last report, or undefined. */
export function envChanges() {
	const now = process.env;
	const set = {};
	const unset = [];
	for (const key of Object.keys(now)) {
		if (!own(key) && known[key] !== now[key]) set[key] = now[key];
	}
	for (const key of Object.keys(known)) {
		if (!own(key) && !(key in now)) unset.push(key);
	}
	if (Object.keys(set).length === 0 && unset.length === 0) return undefined;
	known = snapshot();
	return { set, unset };
}
