// `provider_typed`: a classifier or image model whose provider an extension registered with an
// implementation for the model's api (`registerProvider(id, { classifiers, images })`). The call
// runs here; what the implementation returns goes back as it is. A throw is answered as
// `{ error }`, which pi turns into Pi's error result.
import { errorMessage, jsonSafe } from "./state.mjs";

const running = new Map();

export function abortTypedCall(callId) {
	running.get(callId)?.abort();
}

export async function runTypedCall(runtime, request) {
	const { callId, provider, kind, model, context } = request;
	const group = kind === "images" ? "images" : "classifiers";
	const method = kind === "images" ? "generateImages" : "classify";
	const implementation = runtime.typedProviders.get(provider)?.[group]?.[model?.api];
	if (typeof implementation?.[method] !== "function") {
		return { error: `Provider ${provider} has no ${kind === "images" ? "image" : "classifier"} implementation for "${model?.api}"` };
	}
	const options = { ...(request.options ?? {}) };
	// Codemode calls carry the script's signal; ctx.modelRegistry calls none.
	const controller = request.signal ? new AbortController() : undefined;
	if (controller) {
		options.signal = controller.signal;
		running.set(callId, controller);
	}
	try {
		return { result: jsonSafe(await implementation[method](model, context, options)) ?? null };
	} catch (error) {
		return { error: errorMessage(error), aborted: controller?.signal.aborted === true };
	} finally {
		running.delete(callId);
	}
}
