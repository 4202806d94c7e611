// `refresh_models`: the `refreshModels` hooks of registered providers, each run once per phase pi
// asks for (first without network and with the stored credential, then with network and the
// credential pi resolved). pi applies what comes back: the last list a hook returned, and the
// last `persist` it published (`null` deletes the stored catalog).
import { errorMessage, host, jsonSafe } from "./state.mjs";

async function refreshOne(hook, request, force) {
	const out = {};
	for (const phase of request.phases ?? []) {
		const publish = async (publication) => {
			if (publication?.persist !== undefined) out.persist = publication.persist === null ? null : jsonSafe(publication.persist);
			publication?.update?.();
			return true;
		};
		const list = await hook({
			credential: phase.credential ?? undefined,
			stored: request.stored ?? undefined,
			publish,
			allowNetwork: phase.allowNetwork,
			force: phase.allowNetwork ? force : undefined,
			signal: new AbortController().signal,
			baseUrl: request.baseUrl ?? undefined,
		});
		if (Array.isArray(list)) out.models = jsonSafe(list);
	}
	return out;
}

export async function runModelRefresh({ providers, force }) {
	const hooks = host.runtime?.refreshProviders ?? new Map();
	const entries = Object.entries(providers ?? {}).filter(([id]) => hooks.has(id));
	const results = await Promise.all(
		entries.map(async ([id, request]) => {
			try {
				return [id, await refreshOne(hooks.get(id), request, force)];
			} catch (error) {
				return [id, { error: errorMessage(error) }];
			}
		}),
	);
	return Object.fromEntries(results);
}
