// The 22 specifiers Pi maps for extensions (jiti `virtualModules`), pointing at the host's modules
// and the real vendored TypeBox.
import * as typebox from "typebox";
import * as typeboxCompile from "typebox/compile";
import * as typeboxValue from "typebox/value";
import * as codingAgent from "../modules/coding-agent.mjs";
import * as agentCore from "../modules/pi-agent-core.mjs";
import * as piAi from "../modules/pi-ai.mjs";
import * as piAiModels from "../modules/pi-ai-models.mjs";
import * as piAiOauth from "../modules/pi-ai-oauth.mjs";
import * as piAiProviders from "../modules/pi-ai-providers.mjs";
import * as piTui from "../modules/pi-tui.mjs";

const PI_PACKAGES = {
	"pi-coding-agent": codingAgent,
	"pi-agent-core": agentCore,
	"pi-tui": piTui,
	"pi-ai": piAi,
	"pi-ai/compat": piAi,
	"pi-ai/models": piAiModels,
	"pi-ai/oauth": piAiOauth,
	"pi-ai/providers/all": piAiProviders,
};

export const VIRTUAL_MODULES = {
	typebox,
	"typebox/compile": typeboxCompile,
	"typebox/value": typeboxValue,
	"@sinclair/typebox": typebox,
	"@sinclair/typebox/compile": typeboxCompile,
	"@sinclair/typebox/value": typeboxValue,
};
// Both scopes: @earendil-works is current, @mariozechner the former name.
for (const scope of ["@earendil-works", "@mariozechner"]) {
	for (const [name, module] of Object.entries(PI_PACKAGES)) VIRTUAL_MODULES[`${scope}/${name}`] = module;
}
