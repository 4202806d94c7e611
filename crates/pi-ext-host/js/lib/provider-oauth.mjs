// The OAuth login an extension registered with its provider: pi reads and stores the credential
// in auth.json (under its lock) and asks here to refresh it or to turn it into a key.
import { host } from "./state.mjs";

function login(provider) {
	const oauth = host.runtime?.oauthProviders.get(provider);
	if (!oauth) throw new Error(`No OAuth provider registered for ${provider}`);
	return oauth;
}

export async function refreshOAuth({ provider, credential }) {
	const oauth = login(provider);
	if (typeof oauth.refreshToken !== "function") throw new Error(`OAuth provider ${provider} cannot refresh tokens`);
	return await oauth.refreshToken(credential, new AbortController().signal);
}

export async function oauthApiKey({ provider, credential }) {
	const oauth = login(provider);
	if (typeof oauth.getApiKey !== "function") throw new Error(`OAuth provider ${provider} has no getApiKey`);
	return await oauth.getApiKey(credential);
}
