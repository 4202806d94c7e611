// `provider_stream`: a model whose api belongs to an extension provider with a JS streamSimple.
// The request runs here; its events go to pi as `stream_event` notifications. The provider hooks
// (payload, response, raw stream events) dispatch the matching extension events in the host.
import { emitEvent, emitLocal } from "./dispatch.mjs";
import { requireChannel } from "./state.mjs";

const running = new Map();

export function abortProviderStream(streamId) {
	running.get(streamId)?.abort();
}

export async function runProviderStream(runtime, request) {
	const { streamId, api, model, context } = request;
	const provider = runtime.findStreamProvider(api);
	if (!provider) throw new Error(`No extension provider streams api "${api}"`);
	const controller = new AbortController();
	running.set(streamId, controller);
	const options = {
		...(request.options ?? {}),
		signal: controller.signal,
		onPayload: async (payload) => {
			if (!runtime.hasHandlers("before_provider_request")) return payload;
			const result = await emitEvent(runtime, "before_provider_request", { payload });
			return result ? result.payload : payload;
		},
		onResponse: async (response) => {
			if (!runtime.hasHandlers("after_provider_response")) return;
			await emitLocal(runtime, { type: "after_provider_response", status: response?.status, headers: response?.headers });
		},
		onProviderStreamEvent: async (data, eventModel = model) => {
			if (!runtime.hasHandlers("provider_stream_event")) return;
			await emitLocal(runtime, {
				data,
				type: "provider_stream_event",
				provider: eventModel?.provider,
				api: eventModel?.api,
				model: eventModel?.id,
			});
		},
	};
	const channel = requireChannel();
	try {
		const stream = await provider.streamSimple(model, context, options);
		for await (const event of stream) channel.notify("stream_event", { streamId, event });
	} finally {
		running.delete(streamId);
	}
	return null;
}
