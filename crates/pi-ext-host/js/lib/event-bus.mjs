// The pi.events bus: emit calls every subscriber synchronously; async handlers are not awaited.

export function createEventBus() {
	const channels = new Map();
	return {
		emit(channel, data) {
			const handlers = channels.get(channel);
			if (!handlers) return;
			for (const handler of [...handlers]) handler(data);
		},
		on(channel, handler) {
			// Handlers start before emit() returns, as in Pi; their errors never escape into emit().
			const invoke = (data) => {
				try {
					const result = handler(data);
					if (result && typeof result.then === "function") {
						result.then(undefined, (error) => console.error(`Event handler error (${channel}):`, error));
					}
				} catch (error) {
					console.error(`Event handler error (${channel}):`, error);
				}
			};
			let set = channels.get(channel);
			if (!set) channels.set(channel, (set = new Set()));
			set.add(invoke);
			return () => {
				set.delete(invoke);
				if (set.size === 0) channels.delete(channel);
			};
		},
		clear() {
			channels.clear();
		},
	};
}
