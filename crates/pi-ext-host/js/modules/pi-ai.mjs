// @earendil-works/pi-ai (and /compat) as extensions see it: TypeBox's Type, StringEnum, event
// streams, transcript helpers, and LLM calls that pi (Rust) performs for the host. API providers an
// extension registers with registerApiProvider() run here, in the host.
import { randomFillSync } from "node:crypto";
import { Type } from "typebox";
import {
	AssistantMessageEventStream,
	createAssistantMessageEventStream,
	EventStream,
	remoteComplete,
	remoteStream,
} from "../lib/llm.mjs";
import { modelsQuery } from "../lib/state.mjs";
import { collapseSystemMessages, toToolDeclaration } from "../lib/transcript.mjs";
import { unavailable } from "./inert.mjs";

export { Type, AssistantMessageEventStream, createAssistantMessageEventStream, EventStream };
export {
	AI_TELEMETRY_SCHEMA,
	calculateCost,
	clampThinkingLevel,
	getModelType,
	getSupportedThinkingLevels,
	hasApi,
	isModelType,
	ModelsError,
	modelsAreEqual,
	createModels,
	createProvider,
} from "./pi-ai-models.mjs";
export {
	collapseSystemMessages,
	contentText,
	createInitialSystemMessage,
	getCurrentSystemMessage,
	getCurrentSystemPrompt,
	getCurrentTools,
	getInitialSystemMessage,
	getSystemMessageText,
	normalizeContext,
	toToolDeclaration,
	withoutInitialSystemMessage,
} from "../lib/transcript.mjs";
export { parseJsonWithRepair, parseStreamingJson, repairJson } from "./partial-json.mjs";

export const PI_AI_VERSION = "1.6.0";
export const PI_ATTRIBUTION = Object.freeze({ name: "pi", url: "https://pi.dev", categories: ["cli-agent"] });
export const ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY";
export const ANTHROPIC_AUTH_TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN";
export const ANTHROPIC_FEDERATION_RULE_ID_ENV = "ANTHROPIC_FEDERATION_RULE_ID";
export const ANTHROPIC_IDENTITY_TOKEN_FILE_ENV = "ANTHROPIC_IDENTITY_TOKEN_FILE";
export const ANTHROPIC_OAUTH_TOKEN_ENV = "ANTHROPIC_OAUTH_TOKEN";
export const ANTHROPIC_ORGANIZATION_ID_ENV = "ANTHROPIC_ORGANIZATION_ID";
export const ANTHROPIC_SERVICE_ACCOUNT_ID_ENV = "ANTHROPIC_SERVICE_ACCOUNT_ID";
export const ANTHROPIC_WORKSPACE_ID_ENV = "ANTHROPIC_WORKSPACE_ID";
export const CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY = 0.15;
export const CACHE_WARMING_MAX_AGE_MS = 3_600_000;
export const CACHE_WARMING_MAX_IDLE_AGE_MS = 1_800_000;
export const CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS = 0.05;
export const DEFAULT_MAX_AGENT_RETRY_DELAY_MS = 60_000;

/** `{type: "string", enum}`: an enum schema that providers without anyOf/const support accept. */
export function StringEnum(values, options) {
	return Type.Unsafe({
		type: "string",
		enum: values,
		...(options?.description && { description: options.description }),
		...(options?.default && { default: options.default }),
	});
}

// ---- uuidv7: 48-bit millisecond time, then a 41-bit per-process counter seeded at random ---------
// The counter fills the bits after the version and variant fields, so ids from one process sort in
// creation order even within one millisecond.

const COUNTER_LIMIT = 2 ** 41;
let lastTime = 0;
let counter;

export function uuidv7(timestampMs) {
	const now = timestampMs ?? Math.max(Date.now(), lastTime);
	if (!Number.isInteger(now) || now < 0 || now > 2 ** 48 - 1) {
		throw new RangeError(`UUIDv7 timestamp must be an integer between 0 and ${2 ** 48 - 1}`);
	}
	if (timestampMs === undefined) lastTime = now;
	const bytes = randomFillSync(new Uint8Array(16));
	if (counter === undefined) {
		counter = (bytes[1] * 2 ** 32 + bytes[2] * 2 ** 24 + bytes[3] * 2 ** 16 + bytes[4] * 256 + bytes[5]) % 2 ** 40;
	} else {
		if (counter === COUNTER_LIMIT - 1) throw new RangeError("UUIDv7 generator sequence exhausted");
		counter++;
	}
	let t = now;
	for (let i = 5; i >= 0; i--) {
		bytes[i] = t % 256;
		t = Math.floor(t / 256);
	}
	const bits = (shift, mask) => Math.floor(counter / 2 ** shift) & mask;
	bytes[6] = 0x70 | bits(37, 0x0f);
	bytes[7] = bits(29, 0xff);
	bytes[8] = 0x80 | bits(23, 0x3f);
	bytes[9] = bits(15, 0xff);
	bytes[10] = bits(7, 0xff);
	bytes[11] = (bits(0, 0x7f) << 1) | (bytes[11] & 0x01);
	const hex = Buffer.from(bytes).toString("hex");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// ---- API providers registered in the host, else pi's own -------------------------------------

const apiProviders = new Map();

export function registerApiProvider(provider, sourceId) {
	apiProviders.set(provider.api, { ...provider, sourceId });
}

export function unregisterApiProviders(sourceId) {
	for (const [api, provider] of apiProviders) if (provider.sourceId === sourceId) apiProviders.delete(api);
}

export function resetApiProviders() {
	apiProviders.clear();
}

export function getApiProvider(api) {
	return apiProviders.get(api);
}

export function getApiProviders() {
	return [...apiProviders.values()];
}

export const registerBuiltInApiProviders = () => {};

export function stream(model, context, options) {
	const local = apiProviders.get(model?.api);
	return local?.stream ? local.stream(model, context, options) : remoteStream(model, context, options, false);
}

export function streamSimple(model, context, options) {
	const local = apiProviders.get(model?.api);
	return local?.streamSimple ? local.streamSimple(model, context, options) : remoteStream(model, context, options);
}

export async function complete(model, context, options) {
	const local = apiProviders.get(model?.api);
	if (local?.stream) return local.stream(model, context, options).result();
	return remoteComplete(model, context, options, false);
}

export async function completeSimple(model, context, options) {
	const local = apiProviders.get(model?.api);
	if (local?.streamSimple) return local.streamSimple(model, context, options).result();
	return remoteComplete(model, context, options);
}

// ---- model catalogue (pi's registry) -----------------------------------------------------------

export function getModel(provider, modelId) {
	return modelsQuery("find", { provider, id: modelId }) ?? undefined;
}

export function getModels(provider) {
	return (modelsQuery("all") ?? []).filter((m) => m.provider === provider);
}

export function getProviders() {
	const providers = modelsQuery("providers") ?? [];
	return providers.map((p) => (typeof p === "string" ? p : p.id));
}

const ENV_KEYS = {
	anthropic: [ANTHROPIC_AUTH_TOKEN_ENV, ANTHROPIC_OAUTH_TOKEN_ENV, ANTHROPIC_API_KEY_ENV],
	"github-copilot": ["COPILOT_GITHUB_TOKEN"],
	openai: ["OPENAI_API_KEY"],
	azure: ["AZURE_OPENAI_API_KEY"],
	google: ["GEMINI_API_KEY"],
	"google-vertex": ["GOOGLE_CLOUD_API_KEY"],
	groq: ["GROQ_API_KEY"],
	cerebras: ["CEREBRAS_API_KEY"],
	xai: ["XAI_API_KEY"],
	openrouter: ["OPENROUTER_API_KEY"],
	"vercel-ai-gateway": ["AI_GATEWAY_API_KEY"],
	zai: ["ZAI_API_KEY"],
	mistral: ["MISTRAL_API_KEY"],
	deepseek: ["DEEPSEEK_API_KEY"],
	minimax: ["MINIMAX_API_KEY"],
	moonshotai: ["MOONSHOT_API_KEY"],
	huggingface: ["HF_TOKEN"],
	fireworks: ["FIREWORKS_API_KEY"],
	together: ["TOGETHER_API_KEY"],
	nvidia: ["NVIDIA_API_KEY"],
	opencode: ["OPENCODE_API_KEY"],
	"kimi-coding": ["KIMI_API_KEY"],
};

export function findEnvKeys(provider, env = process.env) {
	const found = (ENV_KEYS[provider] ?? []).filter((name) => Boolean(env[name]));
	return found.length > 0 ? found : undefined;
}

export function getEnvApiKey(provider, env = process.env) {
	const key = findEnvKeys(provider, env)?.[0];
	return key ? env[key] : undefined;
}

// ---- transcript tool state -----------------------------------------------------------------------

export function declarationsEqual(left, right) {
	return JSON.stringify(toToolDeclaration(left)) === JSON.stringify(toToolDeclaration(right));
}

export function getToolStateChanges(previous, current) {
	const before = new Map(previous.map((t) => [t.name, t]));
	const after = new Map(current.map((t) => [t.name, t]));
	return {
		toolsAdded: current
			.filter((t) => !before.has(t.name) || !declarationsEqual(before.get(t.name), t))
			.map(toToolDeclaration),
		toolsRemoved: previous
			.filter((t) => !after.has(t.name) || !declarationsEqual(t, after.get(t.name)))
			.map((t) => ({ name: t.name })),
	};
}

export function getDeclaredTools(messages) {
	const tools = new Map();
	for (const m of messages) if (m.role === "system") for (const t of m.toolsAdded ?? []) tools.set(t.name, t);
	return [...tools.values()];
}

export function resolveTranscript(context, supportsMidConversationSystemMessages) {
	return supportsMidConversationSystemMessages ? context : collapseSystemMessages(context);
}

export function formatThrownValue(value) {
	return value instanceof Error ? value.message : String(value);
}

// ---- everything else of pi-ai: provider internals that only exist inside pi --------------------

export const anthropicMessagesApi = unavailable("anthropicMessagesApi");
export const azureOpenAIResponsesApi = unavailable("azureOpenAIResponsesApi");
export const bedrockConverseStreamApi = unavailable("bedrockConverseStreamApi");
export const googleGenerativeAIApi = unavailable("googleGenerativeAIApi");
export const googleVertexApi = unavailable("googleVertexApi");
export const mistralConversationsApi = unavailable("mistralConversationsApi");
export const openAICodexResponsesApi = unavailable("openAICodexResponsesApi");
export const openAICompletionsApi = unavailable("openAICompletionsApi");
export const openAIResponsesApi = unavailable("openAIResponsesApi");
export const piMessagesApi = unavailable("piMessagesApi");
// Per-provider stream functions go through pi like stream()/streamSimple().
export const streamAnthropic = stream;
export const streamAzureOpenAIResponses = stream;
export const streamGoogle = stream;
export const streamGoogleVertex = stream;
export const streamMistral = stream;
export const streamOpenAICodexResponses = stream;
export const streamOpenAICompletions = stream;
export const streamOpenAIResponses = stream;
export const streamSimpleAnthropic = streamSimple;
export const streamSimpleAzureOpenAIResponses = streamSimple;
export const streamSimpleGoogle = streamSimple;
export const streamSimpleGoogleVertex = streamSimple;
export const streamSimpleMistral = streamSimple;
export const streamSimpleOpenAICodexResponses = streamSimple;
export const streamSimpleOpenAICompletions = streamSimple;
export const streamSimpleOpenAIResponses = streamSimple;
export const generateImages = unavailable("generateImages");
export const generateImagesOpenRouter = unavailable("generateImagesOpenRouter");
export const getImageModel = unavailable("getImageModel");
export const getImageModels = () => [];
export const getImageProviders = () => [];
export const getImagesApiProvider = () => undefined;
export const registerImagesApiProvider = unavailable("registerImagesApiProvider");
export const registerBuiltInImagesApiProviders = () => {};
export const InMemoryCredentialStore = class InMemoryCredentialStore {
	#map = new Map();
	get(key) {
		return this.#map.get(key);
	}
	set(key, value) {
		this.#map.set(key, value);
	}
	delete(key) {
		this.#map.delete(key);
	}
};
export const InMemoryModelsStore = InMemoryCredentialStore;
export const lazyApi = unavailable("lazyApi");
export const lazyOAuth = unavailable("lazyOAuth");
export const lazyStream = unavailable("lazyStream");
export const createFauxCore = unavailable("createFauxCore");
export const fauxAssistantMessage = unavailable("fauxAssistantMessage");
export const fauxProvider = unavailable("fauxProvider");
export const fauxText = unavailable("fauxText");
export const fauxThinking = unavailable("fauxThinking");
export const fauxToolCall = unavailable("fauxToolCall");
export const registerFauxProvider = unavailable("registerFauxProvider");
export const setBedrockProviderLoader = () => {};
export const setBedrockProviderModule = () => {};
export const cleanupSessionResources = () => {};
export const registerSessionResourceCleanup = () => () => {};
export const defaultProviderAuthContext = unavailable("defaultProviderAuthContext");
export const envApiKeyAuth = unavailable("envApiKeyAuth");
export const getAttributionHeaders = () => ({});
export const getIdentityHeaders = () => ({});
export const getClientVersion = () => PI_AI_VERSION;
export const formatUserAgent = (name = "pi", version = PI_AI_VERSION) => `${name}/${version}`;
export const mergeClientIdentity = (a, b) => ({ ...(a ?? {}), ...(b ?? {}) });
export const withClientIdentity = (options) => options;
export const getOpenCodeSessionHeaders = () => ({});
export const getOverflowPatterns = () => [];
export const isContextOverflow = () => false;
export const isRecoverableLength = () => false;
export const isRetryableAssistantError = () => false;
export const retryAssistantCall = unavailable("retryAssistantCall");
export const retryDelayMs = unavailable("retryDelayMs");
export const getPromptCacheTtlMs = () => undefined;
export const evaluateCacheWarming = unavailable("evaluateCacheWarming");
export const getCacheWarmingDelayMs = unavailable("getCacheWarmingDelayMs");
export const getCacheWarmingRequestOptions = unavailable("getCacheWarmingRequestOptions");
export const isCacheWarmingReplayable = () => false;
export const hasNonAdditiveToolChanges = unavailable("hasNonAdditiveToolChanges");
export const hasToolRedefinitions = unavailable("hasToolRedefinitions");
export const renderSystemMessageUpdate = unavailable("renderSystemMessageUpdate");
export const resolveTranscriptTools = unavailable("resolveTranscriptTools");
export const validateToolArguments = unavailable("validateToolArguments");
export const validateToolCall = unavailable("validateToolCall");
export const parseToolCallArguments = unavailable("parseToolCallArguments");
export const appendAssistantMessageDiagnostic = unavailable("appendAssistantMessageDiagnostic");
export const createAssistantMessageDiagnostic = unavailable("createAssistantMessageDiagnostic");
export const extractDiagnosticError = unavailable("extractDiagnosticError");
export const StreamingJsonParser = unavailable("StreamingJsonParser");
export const ToolCallArgumentsStream = unavailable("ToolCallArgumentsStream");
