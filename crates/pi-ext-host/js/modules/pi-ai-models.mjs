// @earendil-works/pi-ai/models: model helpers that work on model objects as pi hands them out.
import { unavailable } from "./inert.mjs";

const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

export const AI_TELEMETRY_SCHEMA = Object.freeze({ version: 1, spans: {} });

export class ModelsError extends Error {
	constructor(message, options) {
		super(message, options);
		this.name = "ModelsError";
	}
}

export function getModelType(model) {
	return model.type ?? "chat";
}

export function isModelType(model, type) {
	return getModelType(model) === type;
}

export function hasApi(model, api) {
	return isModelType(model, "chat") && model.api === api;
}

export function modelsAreEqual(a, b) {
	if (!a || !b) return false;
	return getModelType(a) === getModelType(b) && a.id === b.id && a.provider === b.provider;
}

/** Fills `usage.cost` from the model's per-million rates (tiered by input size) and returns it. */
export function calculateCost(model, usage) {
	const inputTokens = usage.input + usage.cacheRead + usage.cacheWrite;
	let rates = model.cost;
	let threshold = -1;
	for (const tier of model.cost.tiers ?? []) {
		if (inputTokens > tier.inputTokensAbove && tier.inputTokensAbove > threshold) {
			rates = tier;
			threshold = tier.inputTokensAbove;
		}
	}
	// One-hour cache writes are billed at twice the base input rate.
	const longWrite = usage.cacheWrite1h ?? 0;
	const shortWrite = usage.cacheWrite - longWrite;
	usage.cost ??= {};
	usage.cost.input = (rates.input / 1_000_000) * usage.input;
	usage.cost.output = (rates.output / 1_000_000) * usage.output;
	usage.cost.cacheRead = (rates.cacheRead / 1_000_000) * usage.cacheRead;
	usage.cost.cacheWrite = (rates.cacheWrite * shortWrite + rates.input * 2 * longWrite) / 1_000_000;
	usage.cost.total = usage.cost.input + usage.cost.output + usage.cost.cacheRead + usage.cost.cacheWrite;
	usage.cost.totalFromProvider = false;
	return usage.cost;
}

export function getSupportedThinkingLevels(model) {
	if (!model.reasoning) return ["off"];
	return THINKING_LEVELS.filter((level) => {
		const mapped = model.thinkingLevelMap?.[level];
		if (mapped === null) return false;
		// The two highest levels exist only where the model maps them explicitly.
		if (level === "xhigh" || level === "max") return mapped !== undefined;
		return true;
	});
}

/** The requested level if supported, else the nearest supported one above, else below. */
export function clampThinkingLevel(model, level) {
	const available = getSupportedThinkingLevels(model);
	if (available.includes(level)) return level;
	const requested = THINKING_LEVELS.indexOf(level);
	if (requested === -1) return available[0] ?? "off";
	const above = THINKING_LEVELS.slice(requested).find((l) => available.includes(l));
	if (above) return above;
	const below = THINKING_LEVELS.slice(0, requested).reverse().find((l) => available.includes(l));
	return below ?? available[0] ?? "off";
}

export const createModels = unavailable("createModels");
export const createProvider = unavailable("createProvider");
